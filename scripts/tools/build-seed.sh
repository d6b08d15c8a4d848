#!/usr/bin/env bash
# Rebuilds the committed demo seed, Snapshots/demo.sqlite, and its manifest: the demo dataset at a
# fixed seed with a fixed mutation history, served by seed-server on loopback, built by seed-build.
# The same inputs give the same SHA-256 (with the same SQLite version); the tests check it.
#
# Usage: scripts/tools/build-seed.sh [--out DIR] [--bin DIR]
#   --out DIR  where demo.sqlite goes (default: Snapshots)
#   --bin DIR  folder with seed-server and seed-build already built (default: build them, debug)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh

# The recipe. Changing any of these changes the committed seed.
EVENTS=2000
LOCATIONS=200
DATA_SEED=7
CHANGES=300

out=Snapshots
bin=
while [ $# -gt 0 ]; do
    case $1 in
        --out) out=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: scripts/tools/build-seed.sh [--out DIR] [--bin DIR]" >&2; exit 64 ;;
    esac
done

if [ -z "$bin" ]; then
    ensure_system_packages
    ensure_swift
    for product in seed-server seed-build seed-verify; do
        swift build --product "$product" >&2
    done
    bin=$(swift build --show-bin-path)
fi

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT

"$bin/seed-server" init --database "$work/server.sqlite" --demo \
    --events "$EVENTS" --locations "$LOCATIONS" --seed "$DATA_SEED" >/dev/null
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes "$CHANGES" --seed "$DATA_SEED" >/dev/null
new_token "$work/token"
start_server "$bin" "$work/server.sqlite" "$work/token" "$work"

mkdir -p "$out"
"$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$out/demo.sqlite" --quiet
stop_server
"$bin/seed-verify" "$out/demo.sqlite" >/dev/null
sed -n 's/.*"sha256" : "\([0-9a-f]*\)".*/\1/p' "$out/demo.sqlite.manifest.json" | tail -n 1 | sed "s|^|$out/demo.sqlite sha256 |"
