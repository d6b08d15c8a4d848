#!/usr/bin/env bash
# Mutation testing of the safety code: applies each small bug of scripts/lib/mutants.txt alone (a limit
# off by one, a check skipped, a bound loosened), rebuilds incrementally and runs the suites meant to
# catch it, with a throwaway PostgreSQL, then restores the file. Prints each mutant's outcome (killed,
# SURVIVED, does not build) and the score. It edits the sources while it runs: use a clone.
#
# Usage: scripts/suites/mutation-test.sh [--only N,M]   (about 40 minutes for the 33 mutants on this machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/postgres.sh
ensure_system_packages
ensure_swift
if ! git diff --quiet; then echo "mutation-test: commit or stash your changes first (it edits the sources)" >&2; exit 1; fi
trap 'git checkout -- Sources; stop_postgres' EXIT
start_postgres
swift build --build-tests >&2
python3 scripts/lib/mutation_test.py scripts/lib/mutants.txt "$@"
