#!/usr/bin/env python3
"""Validates generated outputs against their JSON schemas, independently of tzero.

Input: a JSONL file, one {"schema": ..., "output": "..."} per line (output: the generated
text). Each output must parse as JSON (strictly: no NaN, no duplicate keys) and validate
against its schema (Draft 2020-12, formats checked: date, time, date-time, uuid). Prints one
line per failure, "INDEX<TAB>why", and exits 0 (the caller reports); exits 2 when jsonschema
is missing.

Usage: validate_json_schema.py FILE.jsonl
"""
import datetime
import json
import re
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(2)

checker = jsonschema.FormatChecker()

# jsonschema checks date-time and time only with rfc3339_validator installed: RFC 3339 here.
_TIME = r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([zZ]|[+-](\d{2}):(\d{2}))"


def _time_ok(m):
    hh, mm, ss = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if hh > 23 or mm > 59 or ss > 60:
        return False
    if m.group(6) is not None and (int(m.group(6)) > 23 or int(m.group(7)) > 59):
        return False
    return True


@checker.checks("time")
def _is_time(s):
    if not isinstance(s, str):
        return True
    m = re.fullmatch(_TIME, s)
    return bool(m) and _time_ok(m)


@checker.checks("date-time")
def _is_date_time(s):
    if not isinstance(s, str):
        return True
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})[tT]" + _TIME, s)
    if not m:
        return False
    try:
        datetime.date.fromisoformat(m.group(1))
    except ValueError:
        return False
    return _time_ok(re.fullmatch(_TIME, s[11:]))


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def _no_constant(name):
    raise ValueError("non-JSON constant " + name)


def main():
    failures = checked = 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for i, line in enumerate(f):
            checked += 1
            item = json.loads(line)
            schema, output = item["schema"], item["output"]
            try:
                value = json.loads(output, object_pairs_hook=_no_duplicates,
                                   parse_constant=_no_constant)
            except ValueError as e:
                print(f"{i}\tnot JSON: {e}")
                failures += 1
                continue
            validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
            errors = list(validator.iter_errors(value))
            if errors:
                print(f"{i}\tinvalid: {errors[0].message} at {list(errors[0].absolute_path)}")
                failures += 1
    print(f"checked\t{checked}\tfailures\t{failures}")


if __name__ == "__main__":
    main()
