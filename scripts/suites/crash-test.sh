#!/usr/bin/env bash
# Crash campaign: kills SeedSync's programs with SIGKILL at random moments, restarts them and checks
# that nothing acknowledged was lost and nothing half-done was left. Targets:
#   import  seed-import during the install and the sync (a real seed-server on loopback): after each
#           kill the destination holds no database or one that passes PRAGMA quick_check; a restart
#           catches up and the database equals the server's tables row by row.
#   build   seed-build writing over a good seed (download, finish, publish): after each kill the seed
#           at --out is the previous one or a new one seed-verify passes; a rerun (with --resume when
#           OUT.partial is there) ends with a seed equal to the server's tables.
#   server  seed-server on each store while a client pushes and an admin writes
#           (scripts/lib/server_crash.py): every answered push is answered the same after the restart,
#           every acknowledged commit is there once, nothing is written twice, revisions have no gap;
#           the SQLite file passes quick_check. The PostgreSQL store runs on a throwaway PostgreSQL.
# Prints a line per kill and, per target, the kills and where they landed. Stops at the first failure
# with a non-zero status.
#
# Usage: scripts/suites/crash-test.sh [--iterations N] [--target import|build|server|all] [--backend sqlite|postgres|both]
#                              [--bin DIR] [--events N] [--changes N]
#   (defaults: 200 per target and store, all, both, a release build, 20000 events, 3000 changes)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/postgres.sh
source scripts/lib/compare.sh

iterations=200
target=all
backend=both
bin=
events=20000
changes=3000
usage="usage: scripts/suites/crash-test.sh [--iterations N] [--target import|build|server|all] [--backend sqlite|postgres|both] [--bin DIR] [--events N] [--changes N]"
while [ $# -gt 0 ]; do
    case $1 in
        --iterations) iterations=$2; shift 2 ;;
        --target) target=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --events) events=$2; shift 2 ;;
        --changes) changes=$2; shift 2 ;;
        [0-9]*) iterations=$1; shift ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
done
case $target in import | build | server | all) ;; *) echo "$usage" >&2; exit 64 ;; esac
case $backend in sqlite | postgres | both) ;; *) echo "$usage" >&2; exit 64 ;; esac

work=$(mktemp -d)
trap 'stop_server; stop_postgres; rm -rf "$work"' EXIT

ensure_system_packages
bin=$(built_products "$bin" release seed-server seed-build seed-import seed-verify)
random_sleep() { sleep "$(awk -v ms=$((RANDOM * 32768 + RANDOM)) -v window="$1" 'BEGIN { printf "%.3f", (ms % window) / 1000 }')"; }

"$bin/seed-server" init --database "$work/server.sqlite" --demo --events "$events" --locations 500 >/dev/null
new_token "$work/token"
start_server "$bin" "$work/server.sqlite" "$work/token" "$work"
export SEED_TOKEN
SEED_TOKEN=$(cat "$work/token")
"$bin/seed-build" --server "$SERVER_URL" --out "$work/seed.sqlite" --quiet
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes "$changes" --seed 9 >/dev/null

crash_import() {
    import() { "$bin/seed-import" --seed "$work/seed.sqlite" --database "$1" --server "$SERVER_URL" --sync-limit 100 --rows-per-transaction 500 --quiet; }

    # A clean run sets the window the kills fall in.
    started=$(date +%s%N)
    import "$work/reference/app.sqlite"
    window_ms=$(( ($(date +%s%N) - started) / 1000000 + 20 ))
    echo "import: a full import takes about $window_ms ms; $iterations iterations"

    declare -A outcomes=() landed=()
    for ((i = 0; i < iterations; i++)); do
        app="$work/run-$i/app.sqlite"
        # Even iterations start from an installed seed (a copy switched to WAL, as an install leaves
        # it), so the kill lands in the sync.
        if ((i % 2 == 0)); then
            mkdir -p "$work/run-$i" && cp "$work/seed.sqlite" "$app"
            sqlite3 "$app" "PRAGMA journal_mode = WAL" >/dev/null
        fi
        (exec "$bin/seed-import" --seed "$work/seed.sqlite" --database "$app" --server "$SERVER_URL" --sync-limit 100 --rows-per-transaction 500 --quiet) &
        pid=$!
        random_sleep "$window_ms"
        if kill -KILL "$pid" 2>/dev/null; then outcome=killed; else outcome=finished; fi
        wait "$pid" 2>/dev/null || true
        if [ -f "$app" ]; then
            check=$(sqlite3 "$app" "PRAGMA quick_check" 2>&1 || true)
            if [ "$check" != ok ]; then
                echo "iteration $i: the database after SIGKILL fails quick_check: $check" >&2
                exit 1
            fi
            outcome="$outcome, database at revision $(sqlite3 "$app" "SELECT value FROM _seedsync_seed WHERE key = 'revision'")"
            [ "${outcome%%,*}" = killed ] && landed[sync]=$(( ${landed[sync]:-0} + 1 ))
        else
            outcome="$outcome, no database yet"
            [ "${outcome%%,*}" = killed ] && landed[install]=$(( ${landed[install]:-0} + 1 ))
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
    echo "import: $iterations iterations; killed ${outcomes[killed]:-0}, finished before the kill ${outcomes[finished]:-0}; landed: ${landed[install]:-0} in the install, ${landed[sync]:-0} in the sync"
}

crash_build() {
    build() { "$bin/seed-build" --server "$SERVER_URL" --out "$1" --page-size 2000 --quiet "${@:2}"; }
    started=$(date +%s%N)
    build "$work/built.sqlite"
    window_ms=$(( ($(date +%s%N) - started) / 1000000 + 20 ))
    local good_sha
    good_sha=$(sha256sum <"$work/seed.sqlite")
    echo "build: a full build takes about $window_ms ms; $iterations iterations over the previous seed"
    declare -A landed=()
    for ((i = 0; i < iterations; i++)); do
        mkdir -p "$work/build-$i"
        out=$work/build-$i/seed.sqlite
        cp "$work/seed.sqlite" "$out" && cp "$work/seed.sqlite.manifest.json" "$out.manifest.json"
        (exec "$bin/seed-build" --server "$SERVER_URL" --out "$out" --page-size 2000 --quiet) &
        pid=$!
        random_sleep "$window_ms"
        if ! kill -KILL "$pid" 2>/dev/null; then
            where="finished before the kill"
        elif [ -f "$out.partial" ]; then
            where="download or finish"
        elif [ "$(sha256sum <"$out")" = "$good_sha" ]; then
            where="start or publish"
        else
            where="after the publish"
        fi
        wait "$pid" 2>/dev/null || true
        # The seed at OUT is the previous one or a whole new one.
        if [ "$(sha256sum <"$out")" != "$good_sha" ] && ! "$bin/seed-verify" "$out" >"$work/verify.txt" 2>&1; then
            cat "$work/verify.txt" >&2
            echo "iteration $i (landed: $where): the seed at --out is neither the previous one nor a sound new one" >&2
            exit 1
        fi
        # A kill may leave OUT.partial (for --resume) and the .new files of a publish; the rerun
        # must leave nothing but the seed and its manifest.
        if [ -f "$out.partial" ]; then build "$out" --resume; else build "$out"; fi
        stray=$(find "$work/build-$i" -type f ! -name seed.sqlite ! -name seed.sqlite.manifest.json)
        if [ -n "$stray" ]; then
            echo "iteration $i (landed: $where): after the rerun, files left beside the seed: $stray" >&2
            exit 1
        fi
        "$bin/seed-verify" "$out" >/dev/null
        if ! compare_tables "$work/server.sqlite" "$out" >"$work/compare.txt"; then
            cat "$work/compare.txt" >&2
            echo "iteration $i (landed: $where): the rebuilt seed differs from the server" >&2
            exit 1
        fi
        echo "iteration $i: landed: $where; the seed at --out was sound, the rerun equals the server"
        landed[$where]=$(( ${landed[$where]:-0} + 1 ))
        rm -rf "$work/build-$i"
    done
    local summary="" key
    for key in "${!landed[@]}"; do summary+="${summary:+, }${landed[$key]} $key"; done
    echo "build: $iterations iterations; landed: $summary"
}

crash_server() { # STORE
    local database
    if [ "$1" = sqlite ]; then
        database=$work/crash-server.sqlite
    else
        [ -n "${POSTGRES_PID:-}" ] || start_postgres
        database=$SEEDSYNC_POSTGRES_URL
    fi
    "$bin/seed-server" init --database "$database" --demo --events 500 --locations 50 >/dev/null
    echo "server ($1 store): $iterations iterations"
    python3 scripts/lib/server_crash.py "$bin" "$database" "$work" "$iterations" | sed "s/^/  /"
    [ "${PIPESTATUS[0]}" -eq 0 ]
}

[ "$target" = import ] || [ "$target" = all ] && crash_import
[ "$target" = build ] || [ "$target" = all ] && crash_build
if [ "$target" = server ] || [ "$target" = all ]; then
    stop_server
    [ "$backend" = postgres ] || crash_server sqlite
    [ "$backend" = sqlite ] || crash_server postgres
fi
echo "crash test passed"
