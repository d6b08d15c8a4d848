#!/usr/bin/env bash
# The Grafana dashboard (docs/grafana/seedsync-server.json) against a real Prometheus scraping a real
# seed-server: starts the server (SQLite, the demo dataset) and some traffic of every kind the panels
# show (log reads and a 304, a kept snapshot page, a held live read, pushes applied and in conflict, a
# refused token), a Prometheus (Debian's package, installed when missing) scraping its /metrics every
# second with an admin token, then runs every panel's query through Prometheus's HTTP API, Grafana's
# variables set as Grafana would ($__rate_interval: 10s, $instance: every instance). A query that
# Prometheus refuses, or that names a metric the server does not export, or that gives no series, fails
# the check. Grafana itself is not run: it is not in Debian's packages (and its license keeps it out of
# the machine's mirror); the dashboard's queries are what can break, and they are Prometheus's.
#
# Usage: scripts/suites/dashboard-check.sh [--bin DIR]   (default: a debug build)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/postgres.sh

bin=
while [ $# -gt 0 ]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: scripts/suites/dashboard-check.sh [--bin DIR]" >&2; exit 64 ;;
    esac
done
work=$(mktemp -d)
prometheus_pid=
live_pid=
cleanup() {
    local pid
    for pid in $live_pid $prometheus_pid; do kill "$pid" 2>/dev/null || true; done
    [ -z "$prometheus_pid" ] || wait "$prometheus_pid" 2>/dev/null || true
    stop_server
    rm -rf "$work"
}
trap cleanup EXIT
ensure_system_packages
if ! command -v prometheus >/dev/null 2>&1; then
    install_packages prometheus
    # Debian's package starts its own Prometheus on port 9090: not this one.
    service prometheus stop >/dev/null 2>&1 || true
fi
bin=$(built_products "$bin" debug seed-server)

"$bin/seed-server" init --database "$work/server.sqlite" --demo --events 200 --locations 20 >/dev/null
new_token "$work/token"
new_token "$work/write-token"
new_token "$work/admin-token"
start_server "$bin" "$work/server.sqlite" "$work/token" "$work" "$work/write-token" "$work/admin-token" --live-wait 30
token=$(cat "$work/token")

# Traffic: log reads and a conditional one (304), a snapshot page twice (the second from the kept page),
# a held live read, a push applied and one in conflict, and a refused token.
get() { curl -s -o /dev/null -D - -H "Authorization: Bearer $1" "$SERVER_URL$2"; }
revision=$(curl -sf -H "Authorization: Bearer $token" "$SERVER_URL/v1/schema" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
log="/v1/changes?after=$revision&schemaVersion=1"
tag=$(get "$token" "$log" | sed -n 's/^[Ee][Tt]ag: *//p' | tr -d '\r')
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" -H "If-None-Match: $tag" "$SERVER_URL$log")
[ "$status" = 304 ] || { echo "dashboard-check: a conditional log read ($tag) answered $status, not 304" >&2; exit 1; }
for _ in 1 2; do get "$token" "/v1/snapshot/events?limit=50&notBefore=0" >/dev/null; done
get "not-a-token" /v1/schema >/dev/null
curl -s -o /dev/null -H "Authorization: Bearer $token" "$SERVER_URL/v1/changes?after=$revision&schemaVersion=1&live=0" &
live_pid=$!
push() {
    curl -sf -o /dev/null -H "Authorization: Bearer $(cat "$work/write-token")" -H "Content-Type: application/json" \
        -d "{\"maxRevision\": $revision, \"changeSets\": [{\"id\": \"$1\", \"types\": [\"locations\"], \"locations\": {\"update\": [1], \"attributes\": {\"1\": {\"name\": \"$2\", \"city\": \"Oslo\", \"latitude\": 59.9, \"longitude\": 10.7, \"revision\": $3}}}}]}" \
        "$SERVER_URL/v1/sync"
}
# The second push is of a row version older than the first one made: a conflict.
push dashboard-applied "Dashboard" "$revision"
push dashboard-conflict "Stale" 0

port=$(free_port)
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: seedsync
    authorization:
      type: Bearer
      credentials_file: $work/admin-token
    static_configs:
      - targets: ["${SERVER_URL#http://}"]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
    --web.listen-address="127.0.0.1:$port" >"$work/prometheus.log" 2>&1 &
prometheus_pid=$!
await_start prometheus "$prometheus_pid" "$work/prometheus.log" curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"
# A rate over 10 s needs two scrapes at least; traffic goes on meanwhile.
for _ in $(seq 12); do
    get "$token" "$log" >/dev/null
    curl -s -o /dev/null -H "Authorization: Bearer $token" -H "If-None-Match: $tag" "$SERVER_URL$log"
    sleep 1
done
python3 - "http://127.0.0.1:$port" docs/grafana/seedsync-server.json <<'PY'
import json, re, sys, urllib.parse, urllib.request
prometheus, path = sys.argv[1], sys.argv[2]
dashboard = json.load(open(path))
def ask(api, **query):
    with urllib.request.urlopen(f"{prometheus}/api/v1/{api}?{urllib.parse.urlencode(query)}", timeout=30) as answer:
        return json.load(answer)
exported = set(ask("label/__name__/values")["data"])
problems, checked = [], 0
ids = [panel["id"] for panel in dashboard["panels"]]
if len(ids) != len(set(ids)):
    problems.append("panel ids repeat")
for panel in dashboard["panels"]:
    if panel.get("datasource", {}).get("uid") != "${datasource}":
        problems.append(f"{panel['title']}: not on the dashboard's Prometheus variable")
    for target in panel["targets"]:
        expr = target["expr"].replace("$__rate_interval", "10s").replace('"$instance"', '".*"')
        names = set(re.findall(r"\bseedsync_[a-z_]+", expr))
        missing = {name for name in names if name not in exported and re.sub(r"_bucket$", "", name) + "_bucket" not in exported}
        if missing:
            problems.append(f"{panel['title']}: {target['expr']}: the server exports no {', '.join(sorted(missing))}")
            continue
        try:
            answer = ask("query", query=expr)
        except urllib.error.HTTPError as error:
            problems.append(f"{panel['title']}: {target['expr']}: Prometheus refused it: {error.read()[:300]!r}")
            continue
        checked += 1
        if answer.get("status") != "success" or not answer["data"]["result"]:
            problems.append(f"{panel['title']}: {target['expr']}: no series")
for problem in problems:
    print(f"dashboard-check: FAIL {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"dashboard-check: {checked} queries of {len(dashboard['panels'])} panels answered by a real Prometheus: ok")
PY
