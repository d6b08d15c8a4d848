#!/usr/bin/env bash
# The change log and snapshot pages through a real HTTP cache: nginx (scripts/lib/nginx.sh: proxy_cache, auth_request to
# GET /v1/auth) in front of a seed-server on SQLite holding 2,500 revisions in blocks of 500. Checks:
# - with --shared-cache, 1,000 apps catching up from one seed (scripts/bench/catchup_load.py) get no
#   error, no answer that differs from the origin's, all reach the server's revision, and the origin
#   answers under 1 % of their reads;
# - a request without a token is refused by the cache (401), and a conditional one is answered 304 from
#   the cache's store;
# - with --shared-cache, 200 reads of one snapshot page cost the origin one, and a seed built through
#   the cache after commits (from pages kept before them) equals one built from the origin;
# - without --shared-cache (answers `private`), the cache keeps nothing: every read reaches the origin;
# - live reads through the cache (check_live): 1,500 apps follow commits, none skipping a revision, with a
#   couple of requests held at the origin;
# - an nginx that alters the change log answers it passes on (sub_filter) in front of a server that signs
#   them (--answer-key): seed-import --trust-answers refuses the first altered answer and applies nothing
#   of it, and the same import straight from the origin catches up.
#
# Usage: scripts/suites/cache-check.sh [--bin DIR]   (default: a debug build)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/postgres.sh
source scripts/lib/nginx.sh

bin=
while [ $# -gt 0 ]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: scripts/suites/cache-check.sh [--bin DIR]" >&2; exit 64 ;;
    esac
done
work=$(mktemp -d)
# held_pid: the first server while check_pages runs a second one.
held_pid=
trap 'stop_nginx; stop_server; [ -z "$held_pid" ] || kill "$held_pid" 2>/dev/null; rm -rf "$work"' EXIT
ensure_system_packages
bin=$(built_products "$bin" debug seed-server seed-build seed-import)

"$bin/seed-server" init --database "$work/server.sqlite" --demo --events 2000 --locations 50 >/dev/null
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes 2500 --seed 3 >/dev/null
new_token "$work/token"
new_token "$work/admin-token"
token=$(cat "$work/token")
failures=0
fail() { echo "cache-check: FAIL $*" >&2; failures=$((failures + 1)); }

# catch_up APPS CONCURRENCY: the apps' run through the cache, as JSON, with what the origin answered of it.
catch_up() {
    local revision
    revision=$(curl -sf -H "Authorization: Bearer $token" "$SERVER_URL/v1/schema" | python3 -c 'import json, sys; print(json.load(sys.stdin)["revision"])')
    python3 scripts/bench/catchup_load.py --url "$NGINX_URL" --origin "$SERVER_URL" --tokens "$work/token" \
        --apps "$1" --concurrency "$2" --start 1 --expect-revision "$revision" \
        --count-at "$SERVER_URL" --admin-token "$work/admin-token"
}

# origin_pages: the snapshot pages the origin has answered (its /metrics).
origin_pages() {
    curl -sf -H "Authorization: Bearer $(cat "$work/admin-token")" "$SERVER_URL/metrics" |
        awk '/^seedsync_http_requests_total\{.*route="\/v1\/snapshot\/\{type\}"/ { sum += $NF } END { print sum + 0 }'
}

# build_seed URL NAME: seed-build from URL into $work/shared/NAME; prints its --json report.
build_seed() {
    "$bin/seed-build" --server "$1" --token-file "$work/token" --out "$work/shared/$2" --page-size 500 --json
}

# check_pages: snapshot pages through the cache (shared mode). A crowd asking for one page costs the
# origin one read. A build through the cache after commits gets the pages kept from the build before
# (older than the server's revision), catches up from them, and equals a build from the origin, byte
# for byte.
check_pages() {
    local before after
    before=$(origin_pages)
    seq 200 | xargs -P 32 -I{} curl -sf -o /dev/null -H "Authorization: Bearer $token" "$NGINX_URL/v1/snapshot/events?limit=500&notBefore=0" ||
        fail "snapshot pages: a read of the first page through the cache failed"
    after=$(origin_pages)
    [ $((after - before)) -le 1 ] || fail "snapshot pages: 200 reads of one page through the cache cost the origin $((after - before)) reads"
    build_seed "$NGINX_URL" first.sqlite >/dev/null
    "$bin/seed-server" mutate --database "$work/server.sqlite" --changes 50 --seed 4 >/dev/null
    # The head of the change log is kept one second: past it, the catch-up reaches the newest revision.
    sleep 2
    before=$(origin_pages)
    build_seed "$NGINX_URL" cached.sqlite >"$work/shared/cached.json"
    after=$(origin_pages)
    # The reference: a second server on the same database that keeps no pages.
    held_pid=$SERVER_PID held_url=$SERVER_URL
    mkdir -p "$work/fresh"
    start_server "$bin" "$work/server.sqlite" "$work/token" "$work/fresh" "" "" --snapshot-max-age 0
    build_seed "$SERVER_URL" origin.sqlite >"$work/shared/origin.json"
    stop_server
    SERVER_PID=$held_pid SERVER_URL=$held_url held_pid=
    python3 - "$work/shared/cached.json" "$work/shared/origin.json" "$((after - before))" <<'PY' || failures=$((failures + 1))
import json, sys
cached, origin, origin_pages = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
problems = []
if cached["manifest"]["sha256"] != origin["manifest"]["sha256"]:
    problems.append(f"the build through the cache (revision {cached['manifest']['revision']}) differs from the origin's ({origin['manifest']['revision']})")
if origin_pages:
    problems.append(f"the build through the cache read {origin_pages} pages at the origin, not the kept ones")
if cached["changeSets"] < 50:
    problems.append(f"the build through the cache caught up {cached['changeSets']} change sets, not the 50 after its kept pages")
for problem in problems:
    print(f"cache-check: FAIL snapshot pages: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}

# check_altered: a cache that changes what it passes on, in front of a server that signs its log answers.
check_altered() {
    local revision refused
    mkdir -p "$work/altered/keys"
    "$bin/seed-build" keygen --out "$work/altered/keys/answers.pem" >/dev/null
    start_server "$bin" "$work/server.sqlite" "$work/token" "$work/altered" "" "" --shared-cache \
        --answer-key "$work/altered/keys/answers.pem"
    NGINX_CACHE_EXTRA='            proxy_set_header Accept-Encoding "";
            sub_filter_types application/json;
            sub_filter "\"cancelled\":false" "\"cancelled\":true";' start_nginx "$work/altered" "$SERVER_URL"
    "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$work/altered/seed.sqlite" --quiet
    revision=$(app_revision "$work/altered/seed.sqlite")
    "$bin/seed-server" mutate --database "$work/server.sqlite" --changes 40 --seed 5 >/dev/null
    if "$bin/seed-import" --seed "$work/altered/seed.sqlite" --database "$work/altered/app.sqlite" --server "$NGINX_URL" \
        --token-file "$work/token" --trust-answers "$work/altered/keys/answers.pub.pem" --quiet 2>"$work/altered/refused.err"; then
        fail "altered answers: seed-import through the altering cache succeeded"
    fi
    refused=$(cat "$work/altered/refused.err")
    case $refused in
        *"altered or replaced the answer"*) ;;
        *) fail "altered answers: seed-import failed, but not for the altered answer: $refused" ;;
    esac
    [ "$(app_revision "$work/altered/app.sqlite")" = "$revision" ] ||
        fail "altered answers: the app moved from the seed's revision $revision to $(app_revision "$work/altered/app.sqlite")"
    "$bin/seed-import" --seed "$work/altered/seed.sqlite" --database "$work/altered/app.sqlite" --server "$SERVER_URL" \
        --token-file "$work/token" --trust-answers "$work/altered/keys/answers.pub.pem" --quiet ||
        fail "altered answers: the import straight from the origin failed"
    [ "$(app_revision "$work/altered/app.sqlite")" -gt "$revision" ] || fail "altered answers: the origin's import did not catch up"
    echo "  altered: refused ($(printf '%s' "$refused" | head -c 160)…)" >&2
    stop_nginx
    stop_server
}

# check_live: live reads through the cache (--shared-cache, a live wait of 2 s). 1,500 apps wait at the
# head and follow 6 commits, a second apart with a pause of 5 s in the middle (the origin's wait ends
# twice: the apps follow the empty answers' cursors). Every app must see every revision in order, and
# the origin must hold a handful of requests, not one per app: nginx passes one request per address on,
# and one more for every 1,024 requests waiting for it (its cache node counts uses in 10 bits), so 2 an
# address here; around a commit the next address's requests arrive while the last one's are still
# counted, and on a loaded machine (the fuzzer built beside, scripts/test.sh) 4 were seen: 8 at most.
check_live() {
    local row
    mkdir -p "$work/live"
    start_server "$bin" "$work/server.sqlite" "$work/token" "$work/live" "" "$work/admin-token" --shared-cache --live-wait 2
    start_nginx "$work/live" "$SERVER_URL"
    row=$(python3 scripts/bench/live_cache_load.py --url "$NGINX_URL" --origin "$SERVER_URL" --token "$work/token" \
        --admin-token "$work/admin-token" --pid "$SERVER_PID" --clients 1500 --seconds 6 --gap 5)
    echo "  live: $row" >&2
    python3 - "$row" <<'PY' || failures=$((failures + 1))
import json, sys
row = json.loads(sys.argv[1])
problems = [f"{name} {row[name]}" for name in ("missing", "bad_answers", "errors", "lost_connections") if row[name]]
if row["deliveries"] != row["expected_deliveries"]:
    problems.append(f"{row['deliveries']} commits reached apps, not {row['expected_deliveries']}")
if not row["cursor_hops"]:
    problems.append("no app followed the cursor of an empty answer: the pause did not end a live wait")
if row["origin_held_max"] > 8:
    problems.append(f"the origin held {row['origin_held_max']} requests at once for 1,500 apps")
if row["origin_reads_per_commit"] > 4:
    problems.append(f"the origin answered {row['origin_reads_per_commit']} live reads per commit")
for problem in problems:
    print(f"cache-check: FAIL live: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
    stop_nginx
    stop_server
}

# app_revision FILE: the revision in a seed-format database's metadata.
app_revision() {
    python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT value FROM _seedsync_seed WHERE key = ?", ("revision",)).fetchone()[0])' "$1"
}

check_altered
for mode in shared private; do
    extra=()
    [ "$mode" = shared ] && extra=(--shared-cache)
    mkdir -p "$work/$mode"
    start_server "$bin" "$work/server.sqlite" "$work/token" "$work/$mode" "" "$work/admin-token" --changes-block-size 500 "${extra[@]}"
    start_nginx "$work/$mode" "$SERVER_URL"
    # Reads of one address that nginx cannot keep wait for each other (proxy_cache_lock, in steps of
    # half a second): the private case runs its apps one at a time.
    if [ "$mode" = shared ]; then row=$(catch_up 1000 64); else row=$(catch_up 20 1); fi
    echo "  $mode: $row" >&2
    python3 - "$mode" "$row" <<'PY' || failures=$((failures + 1))
import json, sys
mode, row = sys.argv[1], json.loads(sys.argv[2])
problems = [f"{name} {row[name]}" for name in ("errors", "stale", "incomplete") if row[name]]
if mode == "shared" and row["origin_reads"] * 100 >= row["requests"]:
    problems.append(f"the origin answered {row['origin_reads']} of {row['requests']} reads (1 % or more)")
if mode == "private" and row["origin_reads"] != row["requests"]:
    problems.append(f"answers marked private were kept: the origin answered {row['origin_reads']} of {row['requests']} reads")
for problem in problems:
    print(f"cache-check: FAIL {mode}: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
    address="$NGINX_URL/v1/changes?after=1&schemaVersion=1"
    status=$(curl -s -o /dev/null -w '%{http_code}' "$address")
    [ "$status" = 401 ] || fail "$mode: a read without a token through the cache answered $status, not 401"
    # nginx answers a conditional read from its store; one it must pass on, it sends without the condition.
    if [ "$mode" = shared ]; then
        tag=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $token" -H "Accept-Encoding: gzip" "$address" | sed -n 's/^[Ee][Tt]ag: *//p' | tr -d '\r')
        status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" -H "Accept-Encoding: gzip" -H "If-None-Match: $tag" "$address")
        [ "$status" = 304 ] || fail "$mode: a conditional read ($tag) through the cache answered $status, not 304"
    fi
    [ "$mode" = shared ] && check_pages
    stop_nginx
    stop_server
done
check_live
[ "$failures" -eq 0 ] && echo "cache-check: the change log and snapshot pages through nginx: ok" || exit 1
