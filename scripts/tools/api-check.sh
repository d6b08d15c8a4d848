#!/usr/bin/env bash
# Checks that the public API of the library products has not changed by accident: dumps the symbol
# graphs of their modules (public symbols only), writes one declaration a line, and compares with
# the lists committed in api/. A difference fails with the diff; when the change is intended, run
# `scripts/tools/api-check.sh --update` and commit api/ with it (and say so in CHANGELOG.md).
#
# Usage: scripts/tools/api-check.sh [-c debug|release] [--update]
#   -c CONFIG   the build configuration whose modules are read (default debug; scripts/test.sh
#               passes release, the build it made)
set -euo pipefail
cd "$(dirname "$0")/../.."

configuration=debug
update=false
while [ $# -gt 0 ]; do
    case $1 in
        -c) configuration=$2; shift 2 ;;
        --update) update=true; shift ;;
        *) echo "usage: scripts/tools/api-check.sh [-c debug|release] [--update]" >&2; exit 64 ;;
    esac
done

modules=(SeedSyncModel SeedSyncStore SeedSyncSQLiteStore SeedSyncPostgres SeedSyncServer SeedSyncDemo SeedSyncClient SeedSyncSeed SeedSyncBuild SeedSyncImport)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

swift package -c "$configuration" dump-symbol-graph --minimum-access-level public >"$work/dump.log" 2>&1 || { cat "$work/dump.log" >&2; exit 1; }
graphs=$(sed -n 's/^Files written to //p' "$work/dump.log" | tail -n 1)
[ -d "$graphs" ] || { echo "api-check: no symbol graphs found" >&2; cat "$work/dump.log" >&2; exit 1; }
python3 scripts/lib/public_api.py "$graphs" "$work/api" "${modules[@]}"

if $update; then
    rm -rf api && cp -r "$work/api" api
    echo "api-check: api/ updated ($(cat api/*.txt | wc -l) public declarations)"
    exit 0
fi
if ! diff -ru api "$work/api" >"$work/diff"; then
    echo "api-check: the public API differs from api/ (- committed, + now):" >&2
    cat "$work/diff" >&2
    echo "api-check: if the change is intended, run scripts/tools/api-check.sh --update and commit api/" >&2
    exit 1
fi
echo "api-check: the public API matches api/ ($(cat api/*.txt | wc -l) declarations in ${#modules[@]} modules)"
