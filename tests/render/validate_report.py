#!/usr/bin/env python3
"""Validates memstage JSON reports against reports/schema/report.schema.json.

usage: validate_report.py [--schema SCHEMA] REPORT...
Prints one line per error (FILE: JSON-PATH: message) and exits 1 when any report fails,
2 when a file cannot be read or parsed, 0 when all are valid.
"""
import argparse
import json
import pathlib
import sys

import jsonschema

DEFAULT_SCHEMA = pathlib.Path(__file__).resolve().parents[2] / "reports" / "schema" / "report.schema.json"


def json_path(error):
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", type=pathlib.Path, default=DEFAULT_SCHEMA)
    parser.add_argument("reports", nargs="+", type=pathlib.Path)
    args = parser.parse_args()

    schema = json.loads(args.schema.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    status = 0
    for report_path in args.reports:
        try:
            report = json.loads(report_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            print(f"{report_path}: cannot read: {e}")
            status = max(status, 2)
            continue
        errors = sorted(validator.iter_errors(report), key=lambda e: list(map(str, e.absolute_path)))
        for error in errors:
            message = " ".join(error.message.split())  # one line per error, whatever the value
            if len(message) > 300:
                message = message[:297] + "..."
            print(f"{report_path}: {json_path(error)}: {message}")
        if errors:
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
