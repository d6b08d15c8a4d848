#!/usr/bin/env python3
"""Applies each mutant of scripts/lib/mutants.txt alone, rebuilds, runs the suites its line names and
restores the file: a mutant is killed when a test fails, survives when they all pass. Prints each
outcome and the score (killed / mutants that build); exits 1 when a mutant's text is not found once.

Usage: mutation_test.py [MUTANTS_FILE] [--only N,M]
"""

import re
import subprocess
import sys
import time
from pathlib import Path


def parse(line):
    fields = [field.replace("\\|", "|") for field in re.split(r"(?<!\\)\|", line)]
    return fields[0], fields[1], fields[2], "|".join(fields[3:])


def run(command, timeout):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return "timeout"


def main():
    arguments = sys.argv[1:]
    only = None
    if "--only" in arguments:
        index = arguments.index("--only")
        only = {int(n) for n in arguments[index + 1].split(",")}
        del arguments[index:index + 2]
    path = Path(arguments[0] if arguments else "scripts/lib/mutants.txt")
    mutants = [parse(line) for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    killed, survived, invalid = [], [], []
    for number, (file, text, replacement, tests) in enumerate(mutants, 1):
        if only and number not in only:
            continue
        source = Path(file)
        original = source.read_text()
        if original.count(text) != 1:
            print(f"mutant {number}: the text is in {file} {original.count(text)} times, not once: {text}")
            return 1
        started = time.monotonic()
        try:
            source.write_text(original.replace(text, replacement))
            if run(["swift", "build", "--build-tests"], 1200) != 0:
                outcome = "does not build"
                invalid.append(number)
            else:
                status = run(["swift", "test", "--skip-build", "--filter", tests], 1200)
                outcome = "killed" if status != 0 else "SURVIVED"
                (killed if status != 0 else survived).append(number)
        finally:
            source.write_text(original)
        print(f"{number:3} {outcome:14} {time.monotonic() - started:5.0f} s  {file}: {text[:70]!r} -> "
              f"{replacement[:70]!r}  [{tests}]", flush=True)
    total = len(killed) + len(survived)
    print(f"{total} mutants built and ran: {len(killed)} killed, {len(survived)} survived {survived}, "
          f"{len(invalid)} did not build; score {len(killed)}/{total}"
          + (f" = {100 * len(killed) / total:.0f}%" if total else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
