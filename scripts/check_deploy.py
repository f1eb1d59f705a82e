#!/usr/bin/env python3
"""Checks the deployment files in deploy/ (docs/DEPLOY.md) without a cluster, a daemon or a network.

  check_deploy.py [--only k8s,unit,docker,entrypoint] ROOT
                                     the checks below (all by default); exit 1 naming each
                                     failure; "SKIPPED ..." where systemd-analyze cannot run
  check_deploy.py --self-test ROOT   plants one mistake at a time in a copy of deploy/ and must
                                     see each caught (so the checks can fail)

deploy/k8s/**.yaml: parses (python3-yaml), apiVersion/kind/metadata.name, the Deployment's probes
on /health at the container port, the Service selecting the pods and targeting that port, the
Prometheus annotations, terminationGracePeriodSeconds > --grace + 2, the key from a Secret, the HPA
on the Deployment and on metrics that src/server/metrics.cpp exports.
deploy/tzero.service: `systemd-analyze verify` (skipped with a message where it cannot run),
the hardening and stop keys, `systemd-analyze security` under a threshold.
deploy/Dockerfile: multi-stage on debian:bookworm, build packages listed in the Makefile, a
non-root USER, HEALTHCHECK, EXPOSE of the served port; no secret in ENV/ARG.
deploy/tzero-entrypoint.sh: run on a stub binary (the key from the env or a file).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml  # Debian python3-yaml (Makefile DEB_PACKAGES)
except ImportError:
    sys.exit("check_deploy.py: python3-yaml is missing (apt-get install python3-yaml, or make deps)")

API_VERSIONS = {"Deployment": "apps/v1", "Service": "v1", "PersistentVolumeClaim": "v1",
                "ConfigMap": "v1", "HorizontalPodAutoscaler": "autoscaling/v2"}
GRACE_DEFAULT = 10.0  # tzero serve --grace
LAST_BYTES_S = 2.0  # after the grace, cancelled requests get up to 2 s (docs/SERVER.md)
SECURITY_THRESHOLD = 25  # systemd-analyze security --threshold: exposure 2.5 of 10


def flag(args, name, default=None):
    """The value after `name` in an argument list, else default."""
    for i, a in enumerate(args[:-1]):
        if a == name:
            return args[i + 1]
    return default


def exported_metrics(root):
    src = open(os.path.join(root, "src/server/metrics.cpp")).read()
    return set(re.findall(r'header\(out, "(tzero_[a-z_]+)"', src))


def check_k8s(root, errors, notes):
    kdir = os.path.join(root, "deploy/k8s")
    docs = []
    for d, _, files in os.walk(kdir):
        for f in sorted(files):
            if not f.endswith((".yaml", ".yml")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            try:
                loaded = [x for x in yaml.safe_load_all(open(path)) if x is not None]
            except yaml.YAMLError as e:
                errors.append(f"{rel}: does not parse: {e}")
                continue
            for doc in loaded:
                if not isinstance(doc, dict):
                    errors.append(f"{rel}: a document that is not a mapping")
                    continue
                name = (doc.get("metadata") or {}).get("name")
                kind = doc.get("kind")
                if not doc.get("apiVersion") or not kind or not isinstance(name, str) or not name:
                    errors.append(f"{rel}: apiVersion, kind and metadata.name are required")
                    continue
                want = API_VERSIONS.get(kind)
                if want and doc["apiVersion"] != want:
                    errors.append(f"{rel}: {kind} {name}: apiVersion {doc['apiVersion']}, not {want}")
                docs.append((rel, doc))
    if not docs:
        errors.append("deploy/k8s: no manifest found")
    by_kind = {}
    for rel, doc in docs:
        by_kind.setdefault(doc["kind"], []).append((rel, doc))
    metrics = exported_metrics(root)
    deployments = {}
    for rel, d in by_kind.get("Deployment", []):
        deployments[d["metadata"]["name"]] = check_deployment(rel, d, errors)
    for rel, s in by_kind.get("Service", []):
        check_service(rel, s, deployments, errors)
    for rel, h in by_kind.get("HorizontalPodAutoscaler", []):
        target = h["spec"].get("scaleTargetRef", {})
        if target.get("kind") != "Deployment" or target.get("name") not in deployments:
            errors.append(f"{rel}: scaleTargetRef {target} names no Deployment of deploy/k8s")
        for m in h["spec"].get("metrics", []):
            name = ((m.get(m.get("type", "").lower()) or {}).get("metric") or {}).get("name")
            if name and name.startswith("tzero_") and name not in metrics:
                errors.append(f"{rel}: metric {name} is not exported (src/server/metrics.cpp)")
    for rel, c in by_kind.get("ConfigMap", []):
        for key, text in (c.get("data") or {}).items():
            if key.endswith((".yaml", ".yml")):
                try:
                    yaml.safe_load(text)
                except yaml.YAMLError as e:
                    errors.append(f"{rel}: data.{key} does not parse: {e}")
    # Every tzero_* name anywhere in deploy/ (rules, comments) is a metric tzero exports.
    for d, _, files in os.walk(os.path.join(root, "deploy")):
        for f in files:
            text = open(os.path.join(d, f), errors="replace").read()
            for name in set(re.findall(r"\btzero_[a-z_]+\b", text)):
                if name not in metrics:
                    errors.append(f"{os.path.relpath(os.path.join(d, f), root)}: {name} is not a "
                                  "metric of src/server/metrics.cpp")
    notes.append(f"{len(docs)} Kubernetes documents ({', '.join(sorted(by_kind))})")


# The fields these manifests may use where a typo would pass silently (Kubernetes ignores or
# defaults a misspelt field): each object's known keys, from the Kubernetes API reference.
KNOWN_KEYS = {
    "pod": {"terminationGracePeriodSeconds", "securityContext", "containers", "volumes",
            "initContainers", "nodeSelector", "affinity", "tolerations", "serviceAccountName",
            "imagePullSecrets", "priorityClassName", "topologySpreadConstraints"},
    "container": {"name", "image", "imagePullPolicy", "command", "args", "env", "envFrom",
                  "ports", "resources", "volumeMounts", "securityContext", "startupProbe",
                  "readinessProbe", "livenessProbe", "lifecycle", "workingDir"},
    "probe": {"httpGet", "exec", "tcpSocket", "grpc", "initialDelaySeconds", "periodSeconds",
              "timeoutSeconds", "failureThreshold", "successThreshold",
              "terminationGracePeriodSeconds"},
}


def unknown_keys(where, kind, obj, errors):
    for k in sorted(set(obj or {}) - KNOWN_KEYS[kind]):
        errors.append(f"{where}: unknown {kind} field {k}")


def check_deployment(rel, d, errors):
    """Checks one Deployment; returns (pod labels, {port name or number: containerPort})."""
    name = d["metadata"]["name"]
    spec = d.get("spec", {})
    tmpl = spec.get("template", {})
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        errors.append(f"{rel}: Deployment {name}: selector.matchLabels {sel} not in the pod labels")
    pod = tmpl.get("spec", {})
    unknown_keys(f"{rel}: Deployment {name}", "pod", pod, errors)
    ports = {}
    for c in pod.get("containers", []):
        where = f"{rel}: container {c.get('name')}"
        unknown_keys(where, "container", c, errors)
        cports = {p["containerPort"]: p for p in c.get("ports", [])}
        for p in cports.values():
            ports[p["containerPort"]] = ports[p.get("name")] = p["containerPort"]
        args = [str(a) for a in c.get("args", [])]
        served = int(flag(args, "--port", 8080))
        if served not in cports:
            errors.append(f"{where}: serves --port {served}, which is no containerPort")
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            p = c.get(probe)
            unknown_keys(f"{where}: {probe}", "probe", p, errors)
            if p is None:
                if probe != "startupProbe":
                    errors.append(f"{where}: no {probe}")
                continue
            get = p.get("httpGet") or {}
            port = get.get("port")
            if get.get("path") != "/health" or ports.get(port) != served:
                errors.append(f"{where}: {probe} must GET /health on port {served}, not "
                              f"{get.get('path')} on {port}")
        if c.get("livenessProbe", {}).get("timeoutSeconds", 1) < 5:
            errors.append(f"{where}: livenessProbe timeoutSeconds under 5 s (a busy engine "
                          "answers late)")
        ann = (tmpl.get("metadata") or {}).get("annotations") or {}
        if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/path") != "/metrics":
            errors.append(f"{rel}: pod annotations need prometheus.io/scrape \"true\" and "
                          "prometheus.io/path /metrics")
        if str(ann.get("prometheus.io/port")) != str(served):
            errors.append(f"{rel}: prometheus.io/port {ann.get('prometheus.io/port')} is not the "
                          f"container port {served}")
        grace = float(flag(args, "--grace", GRACE_DEFAULT))
        tgps = pod.get("terminationGracePeriodSeconds", 30)
        if tgps <= grace + LAST_BYTES_S:
            errors.append(f"{rel}: terminationGracePeriodSeconds {tgps} must exceed --grace "
                          f"{grace:g} + {LAST_BYTES_S:g}")
        model = flag(args, "-m", flag(args, "--model", ""))
        mounts = [m["mountPath"] for m in c.get("volumeMounts", [])]
        if not any(model.startswith(m.rstrip("/") + "/") for m in mounts):
            errors.append(f"{where}: the model {model} is on no volume mount {mounts}")
        env = {e["name"]: e for e in c.get("env", [])}
        key = env.get("TZERO_API_KEY", {})
        if "value" in key or "secretKeyRef" not in (key.get("valueFrom") or {}):
            errors.append(f"{where}: TZERO_API_KEY must come from a Secret (valueFrom.secretKeyRef)")
    return labels, ports


def check_service(rel, s, deployments, errors):
    sel = s.get("spec", {}).get("selector") or {}
    match = [(labels, ports) for labels, ports in deployments.values()
             if sel and all(labels.get(k) == v for k, v in sel.items())]
    if not match:
        errors.append(f"{rel}: Service {s['metadata']['name']}: selector {sel} selects no "
                      "Deployment's pods")
        return
    for p in s["spec"].get("ports", []):
        target = p.get("targetPort", p.get("port"))
        if all(target not in ports for _, ports in match):
            errors.append(f"{rel}: Service port {p.get('name')}: targetPort {target} is no "
                          "container port")


def parse_unit(path):
    """{key: [values]} of a unit file (sections merged), backslash continuations joined."""
    keys = {}
    text = re.sub(r"\\\n\s*", " ", open(path).read())
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            k, v = line.split("=", 1)
            keys.setdefault(k.strip(), []).append(v.strip())
    return keys


def seconds(v):
    total = 0.0
    for n, unit in re.findall(r"([\d.]+)\s*(ms|s|sec|min|m|h)?", v):
        total += float(n) * {"ms": 1e-3, "min": 60, "m": 60, "h": 3600}.get(unit, 1)
    return total


def check_unit(root, errors, notes):
    path = os.path.join(root, "deploy/tzero.service")
    rel = "deploy/tzero.service"
    keys = parse_unit(path)
    one = lambda k: (keys.get(k) or [""])[-1]
    for k, want in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                    ("PrivateTmp", "yes"), ("KillSignal", "SIGTERM")):
        if one(k) != want:
            errors.append(f"{rel}: {k}={want} is required (found '{one(k)}')")
    for k in ("Restart", "EnvironmentFile", "User", "ReadOnlyPaths", "TimeoutStopSec"):
        if not one(k):
            errors.append(f"{rel}: {k}= is required")
    if one("User") in ("root", "0"):
        errors.append(f"{rel}: User= must not be root")
    args = shlex.split(one("ExecStart"))
    grace = float(flag(args, "--grace", GRACE_DEFAULT))
    if seconds(one("TimeoutStopSec")) <= grace + LAST_BYTES_S:
        errors.append(f"{rel}: TimeoutStopSec={one('TimeoutStopSec')} must exceed --grace "
                      f"{grace:g} + {LAST_BYTES_S:g} s")
    model_dir = os.path.dirname(flag(args, "-m", flag(args, "--model", "")))
    if model_dir not in " ".join(keys.get("ReadOnlyPaths", [])).split():
        errors.append(f"{rel}: ReadOnlyPaths= must hold the model's directory {model_dir}")
    verify_unit(path, args[0] if args else "", errors, notes)


def verify_unit(path, exe, errors, notes):
    tool = shutil.which("systemd-analyze")
    if not tool:
        notes.append("SKIPPED systemd-analyze verify: systemd-analyze is not installed")
        return
    with tempfile.TemporaryDirectory() as r:
        # An alternate root: the system's units (for the dependencies), a stub at the ExecStart
        # path (verify checks that it is executable) and the unit itself.
        shutil.copytree("/usr/lib/systemd/system", f"{r}/usr/lib/systemd/system", symlinks=True,
                        dirs_exist_ok=True)
        os.symlink("usr/lib", f"{r}/lib")
        os.makedirs(f"{r}/etc/systemd/system")
        for stub in {exe, "/usr/bin/tz-stub"} - {""}:
            os.makedirs(r + os.path.dirname(stub), exist_ok=True)
            with open(r + stub, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(r + stub, 0o755)
        shutil.copy(path, f"{r}/etc/systemd/system/tzero.service")
        # Can the tool run here at all? A trivial unit must verify cleanly first.
        with open(f"{r}/etc/systemd/system/tz-probe.service", "w") as f:
            f.write("[Service]\nExecStart=/usr/bin/tz-stub\n")
        probe = subprocess.run([tool, "verify", f"--root={r}", "tz-probe.service"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            notes.append("SKIPPED systemd-analyze verify: it cannot run here: "
                         + (probe.stderr or probe.stdout).strip()[:200])
            return
        res = subprocess.run([tool, "verify", f"--root={r}", "tzero.service"],
                             capture_output=True, text=True)
        said = [l for l in (res.stdout + res.stderr).splitlines() if "tzero.service" in l]
        if res.returncode != 0 or said:
            errors.append("deploy/tzero.service: systemd-analyze verify: "
                          + "; ".join(said or [f"exit {res.returncode}"]))
        else:
            notes.append("systemd-analyze verify deploy/tzero.service: clean")
        sec = subprocess.run([tool, "security", "--offline=yes", f"--root={r}",
                              f"--threshold={SECURITY_THRESHOLD}", "tzero.service"],
                             capture_output=True, text=True)
        level = re.search(r"Overall exposure level for tzero.service: ([\d.]+)", sec.stdout)
        if not level:
            notes.append("SKIPPED systemd-analyze security --offline: " + sec.stderr.strip()[:200])
        elif sec.returncode != 0:
            errors.append(f"deploy/tzero.service: systemd-analyze security: exposure "
                          f"{level.group(1)} above {SECURITY_THRESHOLD / 10:g}")
        else:
            notes.append(f"systemd-analyze security: exposure {level.group(1)} of 10")


def dockerfile_instructions(path):
    text = re.sub(r"\\\n", " ", "\n".join(l for l in open(path).read().splitlines()
                                          if not l.lstrip().startswith("#")))
    return [(l.split(None, 1)[0].upper(), (l.split(None, 1) + [""])[1].strip())
            for l in text.splitlines() if l.strip()]


def check_dockerfile(root, errors, notes):
    rel = "deploy/Dockerfile"
    ins = dockerfile_instructions(os.path.join(root, rel))
    stages, cur = [], None
    for op, arg in ins:
        if op == "FROM":
            cur = {"from": arg.split()[0], "ins": []}
            stages.append(cur)
        elif cur is not None:
            cur["ins"].append((op, arg))
    if len(stages) < 2:
        errors.append(f"{rel}: multi-stage: a build stage and a runtime stage")
    for s in stages:
        if not s["from"].startswith("debian:bookworm"):
            errors.append(f"{rel}: FROM {s['from']}: every stage is debian:bookworm")
    if not stages:
        return
    last = stages[-1]["ins"]
    get = lambda op: [a for o, a in last if o == op]
    users = get("USER")
    if not users or users[-1].split(":")[0] in ("root", "0"):
        errors.append(f"{rel}: the runtime stage needs a USER that is not root")
    health = get("HEALTHCHECK")
    if not health or health[-1].upper() == "NONE":
        errors.append(f"{rel}: the runtime stage needs a HEALTHCHECK")
    cmd = get("CMD")
    try:
        cmd_args = yaml.safe_load(cmd[-1]) if cmd else []  # a JSON array is YAML
    except yaml.YAMLError:
        cmd_args = []
    port = str(flag([str(a) for a in cmd_args or []], "--port", "8080"))
    if port not in " ".join(get("EXPOSE")).replace("/tcp", "").split():
        errors.append(f"{rel}: EXPOSE must list the served port {port}")
    if not get("ENTRYPOINT"):
        errors.append(f"{rel}: no ENTRYPOINT")
    for o, a in ins:
        if o in ("ENV", "ARG") and re.search(r"(KEY|SECRET|TOKEN|PASSWORD)\w*\s*=", a, re.I):
            errors.append(f"{rel}: {o} {a}: no secret in the image (the entry point reads the env)")
    # The build stage's packages are the Makefile's (DEB_PACKAGES), python3 aside.
    mk = re.sub(r"\\\n", " ", open(os.path.join(root, "Makefile")).read())
    listed = set(re.search(r"^DEB_PACKAGES\s*=(.*)$", mk, re.M).group(1).split())
    build_run = " ".join(a for o, a in stages[0]["ins"] if o == "RUN")
    m = re.search(r"apt-get install (.*?)(&&|$)", build_run)
    pkgs = [p for p in (m.group(1).split() if m else []) if not p.startswith("-")]
    for p in pkgs:
        if p not in listed and p != "python3":
            errors.append(f"{rel}: build package {p} is not in the Makefile's DEB_PACKAGES")
    if "cmake --install" not in build_run:
        errors.append(f"{rel}: the build stage runs cmake --install")
    for o, a in last:
        if o == "COPY" and "--from" not in a:
            src = os.path.join(root, a.split()[0])
            if not os.access(src, os.X_OK):
                errors.append(f"{rel}: COPY {a.split()[0]}: missing or not executable")
    ignore = os.path.join(root, ".dockerignore")
    lines = open(ignore).read().split() if os.path.exists(ignore) else []
    if ".git" not in lines or not any(l.startswith("build") for l in lines):
        errors.append(".dockerignore: must leave out .git and the build directories")
    notes.append(f"Dockerfile: {len(stages)} stages, USER {users[-1] if users else '?'}, "
                 f"EXPOSE {port}, {len(pkgs)} build packages in DEB_PACKAGES")


def check_entrypoint(root, errors, notes):
    script = os.path.join(root, "deploy/tzero-entrypoint.sh")
    with tempfile.TemporaryDirectory() as t:
        stub = os.path.join(t, "tzero")
        with open(stub, "w") as f:
            f.write('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\nenv | grep -c ^TZERO_API_KEY || true\n')
        os.chmod(stub, 0o755)
        keyfile = os.path.join(t, "key")
        with open(keyfile, "w") as f:
            f.write("from-file\n")

        def run(args, **env):
            e = {"PATH": os.environ["PATH"], "TZERO_BIN": stub, **env}
            r = subprocess.run(["sh", script, *args], env=e, capture_output=True, text=True)
            return r.returncode, r.stdout.split("\n")[:-1]

        serve = ["serve", "-m", "/models/model.gguf"]
        # The stub prints its arguments, then how many TZERO_API_KEY* variables it inherited.
        # With a key, serve inherits exactly one variable (TZERO_API_KEY) and no key in argv.
        cases = [("key from TZERO_API_KEY", run(serve, TZERO_API_KEY="k 1"), (0, serve + ["1"])),
                 ("key from TZERO_API_KEY_FILE", run(serve, TZERO_API_KEY_FILE=keyfile),
                  (0, serve + ["1"])),
                 ("no key", run(serve), (0, serve + ["0"])),
                 ("another subcommand", run(["info", "x"], TZERO_API_KEY="k"), (0, ["info", "x", "0"])),
                 ("both variables", run(serve, TZERO_API_KEY="k", TZERO_API_KEY_FILE=keyfile),
                  (2, []))]
        for what, got, want in cases:
            if got != want:
                errors.append(f"deploy/tzero-entrypoint.sh: {what}: ran {got}, expected {want}")
    notes.append(f"entrypoint: {len(cases)} cases on a stub binary")


CHECKS = {"k8s": check_k8s, "unit": check_unit, "docker": check_dockerfile,
          "entrypoint": check_entrypoint}


def check_all(root, parts=tuple(CHECKS)):
    errors, notes = [], []
    for check in (CHECKS[p] for p in parts):
        try:
            check(root, errors, notes)
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as e:
            errors.append(f"{check.__name__}: {type(e).__name__}: {e}")
    return errors, notes


# (file, text, replacement, a word the failure must contain): each plants one mistake.
MUTATIONS = [
    ("deploy/k8s/deployment.yaml", "readinessProbe:\n            httpGet: {path: /health",
     "readinessProbe:\n            httpGet: {path: /healthz", "readinessProbe"),
    ("deploy/k8s/deployment.yaml", "livenessProbe:\n            httpGet: {path: /health, port: http}",
     "livenessProbe:\n            httpGet: {path: /health, port: 9090}", "livenessProbe"),
    ("deploy/k8s/deployment.yaml", 'prometheus.io/port: "8080"', 'prometheus.io/port: "9100"',
     "prometheus.io/port"),
    ("deploy/k8s/deployment.yaml", "terminationGracePeriodSeconds: 40",
     "terminationGracePeriodSeconds: 15", "terminationGracePeriodSeconds"),
    ("deploy/k8s/deployment.yaml", "secretKeyRef: {name: tzero-api-key, key: api-key}",
     "configMapKeyRef: {name: tzero, key: api-key}", "Secret"),
    ("deploy/k8s/deployment.yaml", "terminationGracePeriodSeconds: 40",
     "terminationGracePeriodSecond: 40", "unknown pod field"),
    ("deploy/k8s/deployment.yaml", "timeoutSeconds: 10", "timeoutSecond: 10", "unknown probe"),
    ("deploy/k8s/service.yaml", "selector: {app.kubernetes.io/name: tzero}",
     "selector: {app.kubernetes.io/name: tzero-other}", "selector"),
    ("deploy/k8s/service.yaml", "targetPort: http", "targetPort: 9000", "targetPort"),
    ("deploy/k8s/autoscaling/hpa.yaml", "metric: {name: tzero_queue_depth}",
     "metric: {name: tzero_queue_length}", "tzero_queue_length"),
    ("deploy/k8s/pvc.yaml", "accessModes: [ReadOnlyMany]", "accessModes: [ReadOnlyMany", "parse"),
    ("deploy/Dockerfile", "USER 10001:10001", "USER root", "USER"),
    ("deploy/Dockerfile", "HEALTHCHECK ", "# HEALTHCHECK ", "HEALTHCHECK"),
    ("deploy/Dockerfile", "FROM debian:bookworm-slim AS build", "FROM ubuntu:24.04 AS build",
     "bookworm"),
    ("deploy/Dockerfile", "libgtest-dev", "libgtest-dev libfoo-dev", "libfoo-dev"),
    ("deploy/tzero.service", "TimeoutStopSec=20s", "TimeoutStopSec=5s", "TimeoutStopSec"),
    ("deploy/tzero.service", "ProtectSystem=strict", "ProtectSystem=full", "ProtectSystem"),
    ("deploy/tzero.service", "[Install]", "NoSuchHardening=yes\n\n[Install]", "systemd-analyze"),
    ("deploy/tzero-entrypoint.sh", 'TZERO_API_KEY="$key" exec "$bin" serve "$@"',
     'exec "$bin" serve --api-key "$key" "$@"', "entrypoint"),
]


def self_test(root):
    failed = 0
    analyze = any("systemd-analyze verify" in n and "SKIPPED" not in n for n in check_all(root)[1])
    for path, old, new, word in MUTATIONS:
        with tempfile.TemporaryDirectory() as t:
            for p in ("deploy", "src/server/metrics.cpp", "Makefile", ".dockerignore"):
                src, dst = os.path.join(root, p), os.path.join(t, p)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, dst)
            text = open(os.path.join(t, path)).read()
            if old not in text:
                print(f"FAIL self-test: '{old}' is no longer in {path}: update MUTATIONS")
                failed += 1
                continue
            with open(os.path.join(t, path), "w") as f:
                f.write(text.replace(old, new, 1))
            errors, _ = check_all(t)
            if word == "systemd-analyze" and not analyze:
                print(f"SKIPPED {path}: {new.split()[0]} (systemd-analyze cannot run here)")
            elif any(word in e for e in errors):
                line = next(l for l in new.splitlines() if l not in old.splitlines())
                print(f"caught  {path}: {line.strip()[:60]}")
            else:
                print(f"FAIL self-test: {path}: '{new}' not caught (errors: {errors})")
                failed += 1
    return 1 if failed else 0


def main():
    args = sys.argv[1:]
    if args[:1] == ["--self-test"]:
        sys.exit(self_test(os.path.abspath(args[1] if len(args) > 1 else ".")))
    parts = tuple(CHECKS)
    if args[:1] == ["--only"]:  # --only k8s,docker: some of the checks (ctest runs unit alone)
        parts, args = tuple(args[1].split(",")), args[2:]
    errors, notes = check_all(os.path.abspath(args[0] if args else "."), parts)
    for n in notes:
        # ctest marks Deploy.SystemdUnitVerifies Skipped on "SKIPPED ...": only when nothing failed.
        if n.startswith("SKIPPED") and errors:
            n = "not run: " + n[len("SKIPPED "):]
        print(("" if n.startswith(("SKIPPED", "not run")) else "ok: ") + n)
    for e in errors:
        print("FAIL " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
