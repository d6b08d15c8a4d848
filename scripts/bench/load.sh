#!/usr/bin/env bash
# Load test on loopback: wrk against POST /v1/sync (clients 100 revisions behind),
# GET /v1/snapshot/events?limit=1000&notBefore=0 (one page: the crowd of a snapshot download, answered
# from the page the server keeps, --snapshot-max-age) and the same with a random `after` (every request a page
# read from the store), 64 connections, bounded in time, for each store and for two servers on
# one PostgreSQL; live sync latency (scripts/bench/live_latency.py: 1, 100 and 10,000 clients
# holding `"wait"` requests, the time from a commit until each has the new revision, and the
# server's memory per held request, and the time until an app's SyncEngine observer sees the row:
# seed-bench observe, one more waiting client), with admin writes and, on PostgreSQL, psql writes; then, on
# PostgreSQL, the write rate of 8 concurrent writers (pgbench) on an attached table against the
# same table without capture in the same run; and, on PostgreSQL, apps catching up from one seed
# through a real nginx (proxy_cache, auth_request: scripts/lib/nginx.sh) in front of two servers
# started with --shared-cache, against the same apps reading the origin alone
# (scripts/bench/catchup_load.py): the origin's share of the reads, the cache's hit ratio, requests/s
# and p99, stale answers and apps that did not reach the server's revision; on SQLite, live reads through
# nginx (scripts/bench/live_cache_load.py: 1,000, 10,000 and 19,000 apps waiting with live reads, a
# commit every second for 30 s with a 25-second pause in the middle, in front of one server with
# --shared-cache: commit-to-app p50/p99, apps that missed a revision, the origin's held requests, reads,
# CPU and memory); and, on SQLite,
# requests/s with ES256 JWTs (one cached, or a new one each request) against static tokens. Prints requests/s, p50,
# p99 and errors per case, and writes them to .build/load/load.json. The SQLite store's two wrk cases are
# checked against issue 25's targets (sync: 8,000 requests/s, p99 under 25 ms; snapshot: 3,000, p99
# under 50 ms, for the one page and for distinct pages) and say met or missed; the script fails only when something fails to run. Changes
# nothing in the repository.
#
# Usage: scripts/bench/load.sh [--backend sqlite|postgres|all] [--seconds S] [--events N] [--live-clients "1 100 10000"] [--apps N]
#                              [--live-cache-clients "1000 10000 19000"]
#   --backend B        which store(s) to load (default all)
#   --seconds S        length of each wrk and pgbench run (default 15)
#   --events N         demo events in the served database (default 100000; 2000 locations)
#   --live-clients L   the numbers of waiting clients of the live sync cases (default "1 100 10000")
#   --apps N           apps catching up through the cache (default 10000; the origin alone is read by
#                      N / 50 of them, at least 20)
#   --live-cache-clients L  the numbers of apps of the live-reads-through-nginx cases (default
#                      "1000 10000 19000": one process may hold 20,000 files here, see docs/SCALING.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/postgres.sh
source scripts/lib/nginx.sh

backend=all
seconds=15
events=100000
live_clients="1 100 10000"
apps=10000
live_cache_clients="1000 10000 19000"
# JWTs minted for the JWT cases: more than the requests of one run, so each is verified once.
jwt_count=200000
while [ $# -gt 0 ]; do
    case $1 in
        --backend) backend=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --events) events=$2; shift 2 ;;
        --live-clients) live_clients=$2; shift 2 ;;
        --apps) apps=$2; shift 2 ;;
        --live-cache-clients) live_cache_clients=$2; shift 2 ;;
        *) echo "usage: scripts/bench/load.sh [--backend sqlite|postgres|all] [--seconds S] [--events N] [--live-clients L] [--apps N]" >&2; exit 64 ;;
    esac
done
case $backend in sqlite | postgres | all) ;; *) echo "--backend must be sqlite, postgres or all" >&2; exit 64 ;; esac

work=$(mktemp -d)
out=.build/load
second_pid=
trap 'stop_nginx; stop_server; [ -n "$second_pid" ] && kill "$second_pid" 2>/dev/null; stop_postgres; rm -rf "$work"' EXIT
mkdir -p "$out"
results=()

ensure_system_packages
command -v wrk >/dev/null 2>&1 || install_packages wrk
ensure_swift
echo "==> release build" >&2
swift build -c release --product seed-server >&2
swift build -c release --product seed-build >&2
swift build -c release --product seed-bench >&2
bin=$(swift build -c release --show-bin-path)
new_token "$work/token"
token=$(cat "$work/token")
new_token "$work/admin-token"
# 10,000 held requests need as many descriptors in the server and in the clients.
ulimit -n "$(ulimit -Hn)"

# wrk_run NAME URL... : wrk with 64 connections split over the URLs, for S seconds; records the
# requests/s (summed), the worst p50 and p99 (ms) and the errors (socket errors and non-2xx).
wrk_run() {
    local name=$1 path=$2 lua=$3
    shift 3
    local connections=$((64 / $#)) pids=() index=0
    for base in "$@"; do
        wrk -t 2 -c "$connections" -d "${seconds}s" --latency -s "$lua" "$base$path" >"$work/wrk-$index.txt" 2>&1 &
        pids+=($!)
        index=$((index + 1))
    done
    wait "${pids[@]}"
    python3 - "$name" "$work"/wrk-*.txt <<'PY' | tee -a "$work/results.jsonl" >/dev/null
import json, re, sys
name, files = sys.argv[1], sys.argv[2:]
def ms(text):
    found = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not found:
        sys.exit(f"cannot read the latency {text!r} in wrk's output")
    value, unit = found.groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]
total = {"case": name, "requests_per_second": 0.0, "p50_ms": 0.0, "p99_ms": 0.0, "errors": 0, "requests": 0}
for path in files:
    text = open(path).read()
    if "Requests/sec" not in text:
        sys.exit(f"wrk failed:\n{text}")
    total["requests_per_second"] += float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    total["requests"] += int(re.search(r"(\d+) requests in", text).group(1))
    total["p50_ms"] = max(total["p50_ms"], ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1)))
    total["p99_ms"] = max(total["p99_ms"], ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1)))
    for pattern in (r"Non-2xx or 3xx responses: (\d+)", r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)"):
        found = re.search(pattern, text)
        if found:
            total["errors"] += sum(int(group) for group in found.groups())
total["requests_per_second"] = round(total["requests_per_second"])
print(json.dumps(total))
PY
    rm -f "$work"/wrk-*.txt
    tail -n 1 "$work/results.jsonl" >&2
}

# lua FILE METHOD BODY: a wrk script sending METHOD with the token and BODY.
lua() {
    cat >"$1" <<LUA
wrk.method = "$2"
wrk.headers["Authorization"] = "Bearer $token"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$3'
LUA
}

# load_server NAME URL...: the two wrk cases against the servers at URL...
load_server() {
    local name=$1
    shift
    local revision
    revision=$(curl -sf -H "Authorization: Bearer $token" "$1/v1/schema" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
    lua "$work/sync.lua" POST "{\"maxRevision\": $((revision - 100)), \"changeSets\": []}"
    lua "$work/snapshot.lua" GET ""
    # Every request another page (a random key): each is read from the store, none is a kept page.
    lua "$work/pages.lua" GET ""
    cat >>"$work/pages.lua" <<LUA
request = function()
    return wrk.format(nil, "/v1/snapshot/events?limit=1000&notBefore=0&after=" .. math.random(1, $events))
end
LUA
    echo "==> $name: POST /v1/sync (100 revisions behind)" >&2
    wrk_run "$name sync" /v1/sync "$work/sync.lua" "$@"
    echo "==> $name: GET /v1/snapshot/events?limit=1000&notBefore=0 (one page, kept by the server)" >&2
    wrk_run "$name snapshot" "/v1/snapshot/events?limit=1000&notBefore=0" "$work/snapshot.lua" "$@"
    echo "==> $name: GET /v1/snapshot/events?limit=1000&after=random (every page read from the store)" >&2
    wrk_run "$name snapshot, distinct pages" "/v1/snapshot/events?limit=1000" "$work/pages.lua" "$@"
}

# live_cases NAME WRITER URL...: live sync latency with each number of waiting clients, spread
# over the servers at URL...; the first server (SERVER_PID) is the one whose memory is read. The
# engine (seed-bench observe) installs $work/seed.sqlite (see build_seed) and waits on the first.
live_cases() {
    local name=$1 writer=$2 clients rounds
    shift 2
    for clients in $live_clients; do
        rounds=5
        [ "$clients" -ge 1000 ] && rounds=3
        echo "==> $name: live sync, $clients waiting clients, $writer writes" >&2
        rm -f "$work/app.sqlite" "$work/app.sqlite-wal" "$work/app.sqlite-shm"
        python3 scripts/bench/live_latency.py --urls "$@" --clients "$clients" --rounds "$rounds" --writer "$writer" \
            --database "${SEEDSYNC_POSTGRES_URL:-}" --token "$token" --admin-token "$(cat "$work/admin-token")" \
            --pid "$SERVER_PID" --engine "$bin/seed-bench observe --seed $work/seed.sqlite --database $work/app.sqlite --server $1 --token-file $work/token" \
            | python3 -c 'import json, sys; row = json.load(sys.stdin); row["case"] = sys.argv[1]; print(json.dumps(row))' \
                "$name live sync, $clients clients, $writer writes" | tee -a "$work/results.jsonl" >&2
    done
}

# tokens_lua FILE METHOD BODY TOKENS: like lua, but each request carries the next token of the file
# TOKENS, each wrk thread starting at its own half of it.
tokens_lua() {
    lua "$1" "$2" "$3"
    cat >>"$1" <<LUA
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("first", threads)
end
function init(args)
    tokens = {}
    for line in io.lines("$4") do tokens[#tokens + 1] = line end
    next_token = math.floor((first - 1) * #tokens / 2)
end
function request()
    next_token = next_token % #tokens + 1
    wrk.headers["Authorization"] = "Bearer " .. tokens[next_token]
    return wrk.format()
end
LUA
}

# jwt_cases DATABASE: requests/s with JWTs (ES256, a key set file) against static tokens, on one
# server taking both: GET /v1/auth (the token check alone) with a static token, with one JWT (verified
# once, then a cached grant), and with another JWT each request (a signature check each, while
# the requests do not outnumber the tokens); then POST /v1/sync (100 revisions behind) with a static
# token and with another JWT each request.
jwt_cases() {
    local revision
    python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet cryptography >&2
    echo "==> minting $jwt_count ES256 JWTs" >&2
    python3 scripts/bench/jwt_tokens.py --jwks "$work/jwks.json" --tokens "$work/jwts.txt" --count "$jwt_count"
    head -n 1 "$work/jwts.txt" >"$work/one-jwt.txt"
    start_server "$bin" "$1" "$work/token" "$work" "" "$work/admin-token" --jwks-file "$work/jwks.json" --jwt-role write
    revision=$(curl -sf -H "Authorization: Bearer $token" "$SERVER_URL/v1/schema" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
    local sync_body="{\"maxRevision\": $((revision - 100)), \"changeSets\": []}"
    lua "$work/auth-static.lua" GET ""
    tokens_lua "$work/auth-one.lua" GET "" "$work/one-jwt.txt"
    tokens_lua "$work/auth-each.lua" GET "" "$work/jwts.txt"
    lua "$work/sync-static.lua" POST "$sync_body"
    tokens_lua "$work/sync-each.lua" POST "$sync_body" "$work/jwts.txt"
    echo "==> sqlite: GET /v1/auth and POST /v1/sync with static tokens and JWTs" >&2
    wrk_run "sqlite auth, static token" /v1/auth "$work/auth-static.lua" "$SERVER_URL"
    wrk_run "sqlite auth, one JWT (cached)" /v1/auth "$work/auth-one.lua" "$SERVER_URL"
    wrk_run "sqlite auth, a new JWT each request" /v1/auth "$work/auth-each.lua" "$SERVER_URL"
    wrk_run "sqlite sync, static token" /v1/sync "$work/sync-static.lua" "$SERVER_URL"
    wrk_run "sqlite sync, a new JWT each request" /v1/sync "$work/sync-each.lua" "$SERVER_URL"
    stop_server
}

# build_seed URL: the app's seed, from the server at URL, for the engine of the live cases.
build_seed() {
    rm -f "$work/seed.sqlite" "$work/seed.sqlite.manifest.json"
    "$bin/seed-build" --server "$1" --token-file "$work/token" --out "$work/seed.sqlite" >&2
}

# Room for the engine's own held request beside the largest number of waiting clients (the
# server's default bound is 10,000: one more is a 503).
room="--max-waiting-requests $(($(echo "$live_clients" | tr ' ' '\n' | sort -n | tail -n 1) + 100))"

# cache_cases URL...: $apps apps catch up from revision 1 (the demo load: a seed built then)
# through nginx in front of the servers at URL..., then $apps / 50 of them from the origin alone.
cache_cases() {
    local revision
    revision=$(curl -sf -H "Authorization: Bearer $token" "$1/v1/schema" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
    start_nginx "$work" "$@"
    echo "==> postgres, two servers behind nginx: $apps apps catching up from revision 1 to $revision" >&2
    python3 scripts/bench/catchup_load.py --url "$NGINX_URL" --origin "$1" --tokens "$work/token" --apps "$apps" \
        --start 1 --expect-revision "$revision" --count-at "$@" --admin-token "$work/admin-token" \
        --case "postgres, two servers behind nginx, $apps apps catching up" | tee -a "$work/results.jsonl" >&2
    stop_nginx
    local alone=$((apps / 50 < 20 ? 20 : apps / 50))
    echo "==> postgres, two servers, origin alone: $alone apps catching up" >&2
    python3 scripts/bench/catchup_load.py --url "$1" --origin "$1" --tokens "$work/token" --apps "$alone" \
        --concurrency 64 --start 1 --expect-revision "$revision" --case "postgres, origin alone, $alone apps catching up" \
        | tee -a "$work/results.jsonl" >&2
}

# live_cache_cases DATABASE: apps waiting with live reads through nginx in front of one server with
# --shared-cache, for each number of $live_cache_clients: 30 commits a second apart, with a pause of
# 25 s in the middle (the origin's 20-second live wait ends once: the apps follow the empty answer's
# cursor). nginx gets a worker per 19,000 apps (a process may hold 20,000 files here).
live_cache_cases() {
    local clients workers
    for clients in $live_cache_clients; do
        workers=$(((clients + 18999) / 19000 + 1))
        mkdir -p "$work/live-cache"
        start_server "$bin" "$1" "$work/token" "$work/live-cache" "" "$work/admin-token" --shared-cache \
            --max-waiting-requests $((clients + 100))
        NGINX_WORKERS=$workers NGINX_CONNECTIONS=19500 start_nginx "$work/live-cache" "$SERVER_URL"
        echo "==> sqlite behind nginx: $clients apps waiting with live reads, a commit a second" >&2
        python3 scripts/bench/live_cache_load.py --url "$NGINX_URL" --origin "$SERVER_URL" --token "$work/token" \
            --admin-token "$work/admin-token" --pid "$SERVER_PID" --clients "$clients" --seconds 30 --gap 25 \
            --settle 30 --case "sqlite behind nginx, $clients apps waiting with live reads" | tee -a "$work/results.jsonl" >&2
        stop_nginx
        stop_server
    done
}

# prepare DATABASE: the demo dataset, then 1,000 change sets (so clients can be 100 behind).
prepare() {
    "$bin/seed-server" init --database "$1" --demo --events "$events" --locations 2000 >&2
    "$bin/seed-server" mutate --database "$1" --changes 1000 --seed 7 >&2
}

if [ "$backend" != postgres ]; then
    echo "==> SQLite store" >&2
    prepare "$work/server.sqlite"
    start_server "$bin" "$work/server.sqlite" "$work/token" "$work" "" "$work/admin-token" $room
    load_server sqlite "$SERVER_URL"
    build_seed "$SERVER_URL"
    live_cases sqlite admin "$SERVER_URL"
    stop_server
    live_cache_cases "$work/server.sqlite"
    jwt_cases "$work/server.sqlite"
fi

if [ "$backend" != sqlite ]; then
    echo "==> PostgreSQL store" >&2
    POSTGRES_DURABLE=1 start_postgres
    prepare "$SEEDSYNC_POSTGRES_URL"
    start_server "$bin" "$SEEDSYNC_POSTGRES_URL" "$work/token" "$work" "" "$work/admin-token" $room
    load_server postgres "$SERVER_URL"
    first_pid=$SERVER_PID first_url=$SERVER_URL
    mkdir -p "$work/second"
    start_server "$bin" "$SEEDSYNC_POSTGRES_URL" "$work/token" "$work/second" "" "$work/admin-token" $room
    second_pid=$SERVER_PID second_url=$SERVER_URL
    SERVER_PID=$first_pid
    load_server "postgres, two servers" "$first_url" "$second_url"
    build_seed "$first_url"
    live_cases "postgres, two servers" admin "$first_url" "$second_url"
    live_cases "postgres, two servers" psql "$first_url" "$second_url"
    kill "$second_pid"
    second_pid=
    stop_server

    # 4,000 more change sets, so that a catch-up from the seed crosses several blocks of the log.
    "$bin/seed-server" mutate --database "$SEEDSYNC_POSTGRES_URL" --changes 4000 --seed 9 >&2
    start_server "$bin" "$SEEDSYNC_POSTGRES_URL" "$work/token" "$work" "" "$work/admin-token" --shared-cache
    first_pid=$SERVER_PID first_url=$SERVER_URL
    start_server "$bin" "$SEEDSYNC_POSTGRES_URL" "$work/token" "$work/second" "" "$work/admin-token" --shared-cache
    second_pid=$SERVER_PID
    cache_cases "$first_url" "$SERVER_URL"
    SERVER_PID=$first_pid
    kill "$second_pid"
    second_pid=

    echo "==> PostgreSQL: 8 concurrent writers (pgbench), captured against plain" >&2
    export PGHOST=127.0.0.1 PGPORT=${SEEDSYNC_POSTGRES_URL##*:} PGUSER=seedsync PGDATABASE=seedsync
    PGPORT=${PGPORT%%/*}
    psql -X -q -c "CREATE TABLE events_plain (LIKE events INCLUDING ALL)"
    for table in events events_plain; do
        cat >"$work/write-$table.sql" <<SQL
\set id random(10000000, 2000000000)
INSERT INTO $table (id, title, starts_at, capacity, cancelled) VALUES (:id, 'Load', now(), 10, false) ON CONFLICT DO NOTHING;
SQL
        "$PG_BIN/pgbench" -n -c 8 -j 2 -T "$seconds" -f "$work/write-$table.sql" >"$work/pgbench-$table.txt" 2>&1
        tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench-$table.txt" | head -n 1)
        latency=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$work/pgbench-$table.txt")
        failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench-$table.txt")
        echo "{\"case\": \"postgres writers, 8 connections, $table\", \"transactions_per_second\": $tps, \"latency_average_ms\": $latency, \"errors\": ${failed:-0}}" \
            | tee -a "$work/results.jsonl" >&2
    done
    revision=$(psql -X -At -c "SELECT revision FROM seedsync._state")
    gaps=$(psql -X -At -c "SELECT count(*) FROM generate_series((SELECT min_revision + 1 FROM seedsync._state), $revision) r WHERE NOT EXISTS (SELECT FROM seedsync._changes c WHERE c.revision = r)")
    echo "{\"case\": \"postgres change log after the writers\", \"revision\": $revision, \"revisions_without_rows\": $gaps}" | tee -a "$work/results.jsonl" >&2
    stop_server
fi

python3 - "$work/results.jsonl" "$out/load.json" "$seconds" "$events" <<'PY'
import json, platform, os, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
# Issue 25's targets for the SQLite store: requests/s at least, p99 under (ms).
TARGETS = {"sqlite sync": (8000, 25), "sqlite snapshot": (3000, 50), "sqlite snapshot, distinct pages": (3000, 50)}
for row in rows:
    if row["case"] in TARGETS:
        rate, p99 = TARGETS[row["case"]]
        row["target"] = f">= {rate} req/s, p99 < {p99} ms"
        row["outcome"] = "met" if row["requests_per_second"] >= rate and row["p99_ms"] < p99 and row["errors"] == 0 else "missed"
report = {"seconds": int(sys.argv[3]), "events": int(sys.argv[4]), "cores": os.cpu_count(), "machine": platform.platform(), "results": rows}
json.dump(report, open(sys.argv[2], "w"), indent=2)
print(f"\nSeedSync load test ({report['cores']} cores, {report['seconds']} s per run, {report['events']} events)")
for row in rows:
    if "deliveries" in row:
        print(f"  {row['case']:<58} p50 {row['p50_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f} ms  {row['commits']} commits,"
              f" missing {row['missing']}, bad answers {row['bad_answers']}, errors {row['errors']}")
        print(f"  {'  at the origin':<58} held {row['origin_held_max']} at most (mean {row['origin_held_mean']}),"
              f" {row['origin_reads_per_commit']} reads per commit, CPU {row['origin_cpu_percent_of_a_core']} % of a core,"
              f" {row['origin_rss_mib']} MiB")
    elif "apps" in row:
        print(f"  {row['case']:<58} {row['requests_per_second']:>7} req/s  p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms"
              f"  {row['requests']} reads, errors {row['errors']}, stale {row['stale']}, incomplete {row['incomplete']}")
        if "origin_reads" in row:
            print(f"  {'  at the origin':<58} {row['origin_reads']} reads ({row['origin_share_percent']} %), {row['origin_auth_checks']} token checks;"
                  f" cache hits {row['hit_ratio_percent']} %")
    elif "clients" in row:
        print(f"  {row['case']:<58} p50 {row['p50_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f} ms  errors {row['errors']}  {row['server_kib_per_held_request']} KiB per held request")
        if "engine_p50_ms" in row:
            print(f"  {'  engine observer (seed-bench observe)':<58} p50 {row['engine_p50_ms']} ms  p99 {row['engine_p99_ms']} ms  max {row['engine_max_ms']} ms  missed {row['engine_missed']}")
    elif "requests_per_second" in row:
        target = f"  target {row['target']}: {row['outcome']}" if "target" in row else ""
        print(f"  {row['case']:<48} {row['requests_per_second']:>8} req/s  p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms  errors {row['errors']}{target}")
    elif "transactions_per_second" in row:
        print(f"  {row['case']:<52} {row['transactions_per_second']:>10} tx/s  avg {row['latency_average_ms']} ms  errors {row['errors']}")
    else:
        print(f"  {row['case']}: revision {row['revision']}, revisions without rows {row['revisions_without_rows']}")
print(f"written to {sys.argv[2]}")
PY
