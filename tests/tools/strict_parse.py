#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Strict parsers for what the exporter serves, for the integration tests.

  strict_parse.py utf8 FILE         the whole file is valid UTF-8
  strict_parse.py openmetrics FILE  valid UTF-8 and OpenMetrics 1.0.0 (prometheus_client's
                                    parser); prints each sample as name{k="v",...} value
  strict_parse.py jsonl FILE        valid UTF-8, and every line that starts with '{' is one
                                    JSON object (lines of a log in between are skipped); prints
                                    the number of objects
  strict_parse.py json FILE         valid UTF-8 and one JSON value

Exit status 1 with the reason on stderr when the input is not what it should be.
"""
import json
import sys


def text(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        sys.exit(f"{path}: not UTF-8 at byte {e.start}: {data[max(0, e.start - 20):e.end + 20]!r}")


def strict_json(s):
    # Python's parser accepts NaN and Infinity and lone surrogate escapes: JSON has none of them.
    def no_constants(name):
        raise ValueError(f"not JSON: {name}")

    value = json.loads(s, parse_constant=no_constants)

    def walk(v):
        if isinstance(v, str):
            v.encode("utf-8", errors="strict")
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)

    walk(value)
    return value


def main():
    mode, path = sys.argv[1], sys.argv[2]
    s = text(path)
    if mode == "utf8":
        return
    if mode == "openmetrics":
        from prometheus_client.openmetrics.parser import text_string_to_metric_families

        try:
            for family in text_string_to_metric_families(s):
                for sample in family.samples:
                    labels = ",".join(f'{k}="{v}"' for k, v in sample.labels.items())
                    print(f"{sample.name}{{{labels}}} {sample.value}")
        except Exception as e:  # the parser raises ValueError and others on bad input
            sys.exit(f"{path}: not OpenMetrics: {e}")
        return
    if mode == "jsonl":
        n = 0
        for i, line in enumerate(s.splitlines(), 1):
            if not line.startswith("{"):
                continue
            try:
                if not isinstance(strict_json(line), dict):
                    raise ValueError("not an object")
            except (ValueError, UnicodeEncodeError) as e:
                sys.exit(f"{path}:{i}: not a JSON object: {e}: {line[:200]!r}")
            n += 1
        print(n)
        return
    if mode == "json":
        try:
            strict_json(s)
        except (ValueError, UnicodeEncodeError) as e:
            sys.exit(f"{path}: not JSON: {e}")
        return
    sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
