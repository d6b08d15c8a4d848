#!/usr/bin/env bash
# Crash test of seed-import with the release binaries: a real seed-server on loopback, a seed built from
# it, then more change sets; each iteration starts seed-import, kills it with SIGKILL at a random moment
# (during the install or the sync), checks that the destination holds no database or a sound one
# (PRAGMA quick_check), restarts seed-import to completion and proves the database equals the server's
# tables row by row. Stops at the first failure with a non-zero status.
#
# Usage: scripts/crash-test.sh [ITERATIONS] [--events N] [--changes N]   (defaults: 50, 20000, 3000)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/compare.sh

iterations=50
events=20000
changes=3000
while [ $# -gt 0 ]; do
    case $1 in
        --events) events=$2; shift 2 ;;
        --changes) changes=$2; shift 2 ;;
        [0-9]*) iterations=$1; shift ;;
        *) echo "usage: scripts/crash-test.sh [ITERATIONS] [--events N] [--changes N]" >&2; exit 64 ;;
    esac
done

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT

ensure_system_packages
ensure_swift
for product in seed-server seed-build seed-import; do
    swift build -c release --product "$product" >&2
done
bin=$(swift build -c release --show-bin-path)

"$bin/seed-server" init --database "$work/server.sqlite" --demo --events "$events" --locations 500 >/dev/null
new_token "$work/token"
start_server "$bin" "$work/server.sqlite" "$work/token" "$work"
export SEED_TOKEN
SEED_TOKEN=$(cat "$work/token")
"$bin/seed-build" --server "$SERVER_URL" --out "$work/seed.sqlite" --quiet
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes "$changes" --seed 9 >/dev/null

import() { "$bin/seed-import" --seed "$work/seed.sqlite" --database "$1" --server "$SERVER_URL" --sync-limit 100 --quiet; }

# A clean run sets the window the kills fall in.
started=$(date +%s%N)
import "$work/reference/app.sqlite"
window_ms=$(( ($(date +%s%N) - started) / 1000000 + 20 ))
echo "a full import takes about $window_ms ms; $iterations iterations"

declare -A outcomes=()
for ((i = 0; i < iterations; i++)); do
    app="$work/run-$i/app.sqlite"
    # Even iterations start from an installed seed (a copy switched to WAL, as an install leaves
    # it), so the kill lands in the sync.
    if ((i % 2 == 0)); then
        mkdir -p "$work/run-$i" && cp "$work/seed.sqlite" "$app"
        sqlite3 "$app" "PRAGMA journal_mode = WAL" >/dev/null
    fi
    (exec "$bin/seed-import" --seed "$work/seed.sqlite" --database "$app" --server "$SERVER_URL" --sync-limit 100 --quiet) &
    pid=$!
    sleep "$(awk -v ms=$((RANDOM % window_ms)) 'BEGIN { printf "%.3f", ms / 1000 }')"
    if kill -KILL "$pid" 2>/dev/null; then outcome=killed; else outcome=finished; fi
    wait "$pid" 2>/dev/null || true
    if [ -f "$app" ]; then
        check=$(sqlite3 "$app" "PRAGMA quick_check" 2>&1 || true)
        if [ "$check" != ok ]; then
            echo "iteration $i: the database after SIGKILL fails quick_check: $check" >&2
            exit 1
        fi
        outcome="$outcome, database at revision $(sqlite3 "$app" "SELECT value FROM _seedsync_seed WHERE key = 'revision'")"
    else
        outcome="$outcome, no database yet"
    fi
    import "$app"
    if ! compare_tables "$work/server.sqlite" "$app" >"$work/compare.txt"; then
        cat "$work/compare.txt" >&2
        echo "iteration $i: after the restart the database differs from the server" >&2
        exit 1
    fi
    echo "iteration $i: $outcome; restart caught up, equal to the server"
    outcomes[${outcome%%,*}]=$(( ${outcomes[${outcome%%,*}]:-0} + 1 ))
done
echo "crash test passed: $iterations iterations (killed: ${outcomes[killed]:-0}, finished before the kill: ${outcomes[finished]:-0})"
