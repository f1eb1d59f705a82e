#!/usr/bin/env python3
"""Print why each skipped test was skipped, from a CTest log (Testing/Temporary/LastTest.log).

CTest reports a skipped test as "Skipped" and drops its output; the reason (a GTEST_SKIP()
message, or the line a script test prints before it exits with its skip pattern) is only in the
log. `make test` runs this after ctest so that every skip says why, as docs/TESTING.md promises.

Usage: report_skips.py LOG   (prints nothing when no test was skipped; exit 0, or 2 without LOG)
"""
import re
import sys

SECTION = re.compile(r"^\d+/\d+ Test: (\S+)$")
GTEST_SKIPPED_AT = re.compile(r"^.*:\d+: Skipped$")
GTEST_SKIPPED_END = re.compile(r"^\[  SKIPPED \] \S+ \(\d+ ms\)$")


def skip_reason(output):
    """The reason in one test's output: the GTEST_SKIP() message, else the first line that says
    SKIPPED or skipped, else an empty string."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if GTEST_SKIPPED_AT.match(line):
            message = []
            for later in lines[i + 1:]:
                if GTEST_SKIPPED_END.match(later):
                    break
                message.append(later.strip())
            return " ".join(m for m in message if m)
    for line in lines:
        if "SKIPPED" in line or "skipped" in line.lower():
            if not line.startswith("[  SKIPPED ]"):
                return line.strip()
    return ""


def skipped_tests(log):
    """(name, reason) for every test of the log that CTest counted as skipped."""
    out = []
    name, output, in_output = None, [], False
    for line in log.splitlines():
        m = SECTION.match(line)
        if m:
            name, output, in_output = m.group(1), [], False
            continue
        if name is None:
            continue
        if line == "Output:":
            in_output = True
            continue
        if line == "<end of output>":
            in_output = False
            continue
        if in_output:
            if not line.startswith("-" * 20):
                output.append(line)
        elif line.startswith("Skip regular expression found in output") or line.startswith(
                "Test Skipped"):
            out.append((name, skip_reason("\n".join(output))))
            name = None
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
            log = f.read()
    except OSError as e:
        print(f"report_skips: {e}", file=sys.stderr)
        return 2
    skips = skipped_tests(log)
    if skips:
        print(f"{len(skips)} test(s) skipped:")
        for name, reason in skips:
            print(f"  {name}: {reason or '(no reason printed)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
