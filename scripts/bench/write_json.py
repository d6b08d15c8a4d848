#!/usr/bin/env python3
"""Writes OUT/bench.json for scripts/bench/bench.py from the tab-separated files it wrote in OUT.

Usage: write_json.py OUT

  runs.tsv     every measured run: case, contender, run, wall seconds, /usr/bin/time %e, %M (KiB), stdout file;
               a stdout that is one JSON object (a seed-build or seed-import --json report) is included
  results.tsv  the rows of the printed table: case, contender, label, median wall s, median peak MB,
               measure, value, op, target, outcome (met / missed)
  facts.tsv    section, key, value: machine, parameters and the figures of each case (a dotted key nests)
  notes.txt    one note a line
Numbers become JSON numbers; empty cells become null.
"""
import json
import os
import re
import sys

INTEGER = re.compile(r"-?[0-9]+")
DECIMAL = re.compile(r"-?[0-9]+\.[0-9]*(e[-+]?[0-9]+)?")


def value(text):
    if text == "":
        return None
    if INTEGER.fullmatch(text):
        return int(text)
    if DECIMAL.fullmatch(text):
        return float(text)
    return text


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n").split("\t") for line in file if line.strip()]


def report(path):
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read().strip()
        parsed = json.loads(text)
        return parsed if isinstance(parsed, dict) else None
    except (OSError, ValueError):
        return None


def main(argv):
    if len(argv) != 1:
        print("usage: write_json.py OUT", file=sys.stderr)
        return 64
    out = argv[0]
    document = {}
    for section, key, text in rows(os.path.join(out, "facts.tsv")):
        # A dotted key nests: seconds.download -> {"seconds": {"download": ...}}.
        *parents, last = key.split(".")
        place = document.setdefault(section, {})
        for parent in parents:
            place = place.setdefault(parent, {})
        place[last] = value(text)
    document["runs"] = [
        {
            "case": value(case),
            "contender": contender,
            "run": value(run),
            "wallSeconds": value(wall),
            "timeElapsedSeconds": value(elapsed),
            "peakRssKiB": value(rss),
            "report": report(stdout),
        }
        for case, contender, run, wall, elapsed, rss, stdout in rows(os.path.join(out, "runs.tsv"))
    ]
    document["results"] = [
        {
            "case": case,
            "contender": value(contender),
            "label": label,
            "medianWallSeconds": value(wall),
            "medianPeakMB": value(mb),
            "measure": value(measure),
            "value": value(number),
            "op": value(op),
            "target": value(target),
            "outcome": value(outcome),
        }
        for case, contender, label, wall, mb, measure, number, op, target, outcome in rows(
            os.path.join(out, "results.tsv")
        )
    ]
    notes = os.path.join(out, "notes.txt")
    if os.path.exists(notes):
        with open(notes, encoding="utf-8") as file:
            document["notes"] = [line.rstrip("\n") for line in file if line.strip()]
    with open(os.path.join(out, "bench.json"), "w", encoding="utf-8") as file:
        json.dump(document, file, indent=2)
        file.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
