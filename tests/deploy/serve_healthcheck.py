#!/usr/bin/env python3
"""Deploy.EntrypointServesWithKey: the image's two scripts around a real `tzero serve`.

  serve_healthcheck.py TZERO_BINARY SOURCE_DIR

deploy/tzero-entrypoint.sh starts the server with the key from TZERO_API_KEY_FILE (the key then
guards /v1/models and /metrics, not /health); deploy/tzero-healthcheck.sh reports it healthy;
/metrics carries the metrics the HPA and the adapter rule name; after SIGTERM, with a stream in
flight, the healthcheck reports the 503 that readiness probes rely on, and the server exits 0.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

tzero, src = sys.argv[1], sys.argv[2]
entry = os.path.join(src, "deploy/tzero-entrypoint.sh")
health = os.path.join(src, "deploy/tzero-healthcheck.sh")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def get(port, path, key=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def healthcheck(port):
    r = subprocess.run(["bash", health], env={"PATH": os.environ["PATH"],
                                              "TZERO_HEALTH_PORT": str(port)},
                       capture_output=True, text=True, timeout=20)
    return r.returncode, r.stderr.strip()


with tempfile.TemporaryDirectory() as t:
    model, keyfile = os.path.join(t, "model.gguf"), os.path.join(t, "key")
    subprocess.run([tzero, "gen-model", "--preset", "tiny", "-o", model], check=True,
                   capture_output=True)
    with open(keyfile, "w") as f:
        f.write("s3cret\n")
    env = {"PATH": os.environ["PATH"], "TZERO_BIN": tzero, "TZERO_API_KEY_FILE": keyfile}
    srv = subprocess.Popen(["sh", entry, "serve", "--host", "127.0.0.1", "--port", "0", "-m", model,
                            "--grace", "5", "-t", "1", "--ctx", "4096", "--no-access-log"],
                           env=env, stderr=subprocess.PIPE, text=True)
    port, log = None, []
    deadline = time.time() + 60
    while port is None and time.time() < deadline:
        line = srv.stderr.readline()
        if not line:
            break
        log.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        port = int(m.group(1)) if m else None
    if port is None:
        srv.kill()
        sys.exit("the server did not start:\n" + "".join(log))
    threading.Thread(target=lambda: log.extend(srv.stderr), daemon=True).start()

    rc, said = healthcheck(port)
    check(rc == 0, f"tzero-healthcheck on a running server: exit {rc} {said}")
    check(get(port, "/v1/models")[0] == 401, "/v1/models without the key: 401 (the key came "
          "from TZERO_API_KEY_FILE)")
    check(get(port, "/v1/models", "s3cret")[0] == 200, "/v1/models with the key: 200")
    status, metrics = get(port, "/metrics", "s3cret")
    for name in ("tzero_queue_depth", "tzero_running", "tzero_http_in_flight"):
        check(status == 200 and re.search(rf"^{name} ", metrics, re.M) is not None,
              f"/metrics has {name} (the HPA's and the adapter's series)")

    # A long stream in flight, then SIGTERM: /health says 503 while it finishes (readiness).
    done, started = threading.Event(), threading.Event()

    def stream():
        body = json.dumps({"prompt": "Long story", "max_tokens": 4000, "temperature": 0,
                           "ignore_eos": True, "stream": True}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer s3cret"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                for _ in r:
                    started.set()
        except (urllib.error.URLError, OSError):
            pass
        started.set()
        done.set()

    threading.Thread(target=stream, daemon=True).start()
    started.wait(30)
    srv.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    still_streaming = not done.is_set()
    rc, said = healthcheck(port)
    check(rc != 0, f"tzero-healthcheck after SIGTERM: unhealthy ({said})")
    if still_streaming and not done.is_set():
        check("503" in said, "while a stream finishes after SIGTERM, /health answers 503")
    else:
        print("note: the stream ended before the healthcheck; 503 not observed")
    try:
        code = srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
        code = "killed after 30 s"
    check(code == 0, f"the server exits 0 after SIGTERM (exit {code})")
    if failures:
        print("".join(log))
sys.exit(1 if failures else 0)
