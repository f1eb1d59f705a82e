#!/usr/bin/env python3
"""Layering check: every #include "..." under src/ and include/tzero/ must point down.

The layers, lowest first (docs/ARCHITECTURE.md). A file may include headers of its own layer or
of a lower one; a header of a higher layer is an error. Folders on the same rank (kernels and
tokenizer; chat, model and ops; the tools) are independent of each other.

    base -> format -> kernels, tokenizer -> chat, grammar, model, ops (registry) -> backend
         -> trace, distributed (MPI ranks) -> runtime -> batch
         -> tools (server, probe, audit, lock, hub, demo, convert, check_op) -> cli

Usage: check_layers.py [ROOT]        check the tree at ROOT (default: the repository of this script)
       check_layers.py --self-test   show that a planted upward include is caught
Exit status 0 when every include points down, 1 otherwise (each violation is printed as
FILE:LINE: ...), 2 for a file or folder the script has no layer for.
"""
import fnmatch
import pathlib
import re
import shutil
import sys
import tempfile

# Folder under src/ -> rank (the first path component: src/kernels/x86/ is kernels).
RANKS = {
    "base": 0,
    "format": 1,
    "kernels": 2,
    "tokenizer": 2,
    "chat": 3,
    "grammar": 3,
    "model": 3,
    "ops": 3,
    "backend": 4,
    "trace": 5,
    "distributed": 5,  # pipeline parallelism over MPI ranks: backends made on every rank
    "runtime": 6,
    "batch": 7,
    "server": 8,
    "probe": 8,
    "audit": 8,
    "demo": 8,
    "convert": 8,
    "check_op": 8,
    "lock": 8,
    "hub": 8,
    "cli": 9,
    "python": 9,  # the Python package's extension module (src/python/), beside the CLI
}

# Public headers (include/tzero/) -> the folder whose rank they take.
PUBLIC = {
    "tzero/ops.h": "kernels",  # the custom-op kernel signatures and registry
    "tzero/engine.h": "batch",  # tzero::Engine (src/batch/)
    "tzero/check_op.h": "check_op",  # tzero::check_op (src/check_op/, the tools library)
    "tzero/types.h": "base",  # the engine's enums (Mode, StopReason, ...): value types only
    "tzero/sampling.h": "base",  # SamplingParams, TokenLogprob: value types only
    "tzero/request.h": "base",  # RequestParams, RequestError: value types only
}

# Allowed upward includes: (file glob, include glob).
ALLOWED = [
    # Exceptions to the rule, each with its reason. None today: model/forward no longer calls a
    # backend (backends are handed in), and runtime/sampler.h takes SamplingParams from
    # tzero/sampling.h.
]

# Folders a layer may not reach even though they are below it: the command line opens a
# session (runtime/session.h) instead of building a forward pass, so it reaches neither the
# model, the backends nor the kernels. (layer, forbidden include folders).
SKIPPED = {
    "cli": ("model", "backend", "kernels"),
    "python": ("model", "backend", "kernels"),
}

# Files still reaching a SKIPPED folder, each with its reason (to shrink, never to grow).
SKIP_ALLOWED = [
    # tzero chat keeps one KV cache across turns and evaluates only the new tokens.
    ("src/cli/cmd_chat.cpp", "model/*"),
    ("src/cli/cmd_chat.cpp", "backend/backend.h"),
    # tzero bench times raw forward passes at a depth (not requests).
    ("src/cli/cmd_bench.cpp", "model/*"),
    ("src/cli/cmd_bench.cpp", "backend/backend.h"),
    # tzero info prints the file's keys and the KV bytes per position; device and fingerprint
    # describe the CUDA device.
    ("src/cli/cmd_info.cpp", "model/*"),
    ("src/cli/cmd_device.cpp", "backend/backend.h"),
    ("src/cli/cmd_fingerprint.cpp", "backend/backend.h"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}


def layer_of_file(rel):
    """The layer name of a file path relative to the root, or None."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) >= 3:
        return parts[1] if parts[1] in RANKS else None
    if parts[0] == "include":
        return PUBLIC.get("/".join(parts[1:]))
    return None


def layer_of_include(target):
    if target in PUBLIC:
        return PUBLIC[target]
    first = target.split("/")[0]
    if "/" in target and first in RANKS:
        return first
    return None


def allowed(rel, target):
    return any(fnmatch.fnmatch(rel, f) and fnmatch.fnmatch(target, i) for f, i in ALLOWED)


def check(root):
    root = pathlib.Path(root)
    files = [p for p in sorted((root / "src").rglob("*")) if p.suffix in SOURCE_SUFFIXES]
    files += [p for p in sorted((root / "include" / "tzero").glob("*")) if p.is_file()]
    violations, unknown = [], []
    for path in files:
        rel = path.relative_to(root).as_posix()
        layer = layer_of_file(rel)
        if layer is None:
            unknown.append(f"{rel}: no layer for this file (add its folder to RANKS or PUBLIC "
                           "in scripts/check_layers.py)")
            continue
        public = rel.startswith("include/")
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if public and not target.startswith("tzero/"):
                violations.append(f"{rel}:{n}: public header includes \"{target}\": include/tzero/ "
                                  "headers may include only tzero/ headers (src/ is not installed)")
                continue
            inc_layer = layer_of_include(target)
            if inc_layer is None:
                unknown.append(f"{rel}:{n}: \"{target}\" is in no layer (includes name their "
                               "folder: \"base/error.h\", \"tzero/engine.h\")")
                continue
            if target.split("/")[0] in SKIPPED.get(layer, ()) and not any(
                    fnmatch.fnmatch(rel, f) and fnmatch.fnmatch(target, i)
                    for f, i in SKIP_ALLOWED):
                violations.append(
                    f"{rel}:{n}: {layer} includes \"{target}\": {layer}/ reaches neither "
                    f"{', '.join(SKIPPED[layer])} (open a session: runtime/session.h)")
                continue
            if RANKS[inc_layer] > RANKS[layer] and not allowed(rel, target):
                violations.append(
                    f"{rel}:{n}: {layer} (rank {RANKS[layer]}) includes \"{target}\" of the higher "
                    f"layer {inc_layer} (rank {RANKS[inc_layer]})")
    for v in violations + unknown:
        print(v)
    if violations or unknown:
        print(f"check_layers: {len(violations)} upward include(s), {len(unknown)} without a layer, "
              f"in {len(files)} files")
        return 1 if violations else 2
    print(f"check_layers: {len(files)} files, every include points down "
          f"({len(ALLOWED)} allow-listed exception(s))")
    return 0


def self_test(root):
    """Copies the tree, plants `#include "server/x.h"` into a kernels file, expects a failure;
    then `#include "model/forward.h"` into a command (cli/ reaches no model/), the same."""
    root = pathlib.Path(root)
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp)
        shutil.copytree(root / "src", copy / "src")
        shutil.copytree(root / "include", copy / "include")
        if check(copy) != 0:
            print("self-test: the unmodified tree does not pass")
            return 1
        victim = copy / "src" / "kernels" / "math.h"
        victim.write_text(victim.read_text() + '#include "server/x.h"\n')
        print("self-test: planted #include \"server/x.h\" in src/kernels/math.h:")
        if check(copy) != 1:
            print("self-test: the planted upward include was NOT caught")
            return 1
        victim.write_text(victim.read_text().replace('#include "server/x.h"\n', ""))
        cli = copy / "src" / "cli" / "cmd_run.cpp"
        cli.write_text(cli.read_text() + '#include "model/forward.h"\n')
        print("self-test: planted #include \"model/forward.h\" in src/cli/cmd_run.cpp:")
        if check(copy) != 1:
            print("self-test: the command line reaching model/ was NOT caught")
            return 1
    print("self-test: caught, as it must be")
    return 0


if __name__ == "__main__":
    here = pathlib.Path(__file__).resolve().parent.parent
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        sys.exit(self_test(sys.argv[2] if len(sys.argv) > 2 else here))
    sys.exit(check(sys.argv[1] if len(sys.argv) > 1 else here))
