#!/usr/bin/env bash
# The hostile server matrix: seed-build and seed-import (debug or given binaries) against a proxy
# (scripts/lib/hostile_server.py) that forwards to a real seed-server and misbehaves once, or from one
# request on: broken or lying JSON, revision gaps and regressions, unknown types and fields,
# SQL-looking names, statuses (401, 403, 404, 410, 429 and 503 with Retry-After, 500 once and always),
# cut, reset, stalled and dripping answers, huge and gzip-bombed bodies, push results that do not match
# what was pushed; and a fresh app downloading a published seed (seed-import --seed-url) through it: cut,
# stalled, shortened or altered files, statuses, longer bodies. Each behaviour has its documented outcome (the table below: the exit status and a
# phrase of the message); after a failure the previous seed is untouched or the app's database is sound
# with its local edits still queued, and a run against the real server then ends equal to the
# server's tables.
#
# Usage: scripts/suites/hostile-servers.sh [--bin DIR]   (default: a debug build)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/compare.sh

bin=
while [ $# -gt 0 ]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: scripts/suites/hostile-servers.sh [--bin DIR]" >&2; exit 64 ;;
    esac
done
work=$(mktemp -d)
proxy_pid=
stop_proxy() {
    if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; fi
    proxy_pid=
}
trap 'stop_proxy; stop_server; rm -rf "$work"' EXIT
ensure_system_packages
bin=$(built_products "$bin" debug seed-server seed-build seed-import)

# A server, a seed of it, an app installed from the seed, then 300 more changes to catch up with.
"$bin/seed-server" init --database "$work/server.sqlite" --demo --events 2000 --locations 50 >/dev/null
new_token "$work/token"
# Blocks of 50 revisions: the catch-up of 300 changes reads the log in several answers.
mkdir -p "$work/published"
start_server "$bin" "$work/server.sqlite" "$work/token" "$work" "$work/token" "" --changes-block-size 50 \
    --seeds "$work/published"
"$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$work/seed.sqlite" --quiet
# The same seed, published: `download` installs a fresh app from its address through the proxy.
cp "$work/seed.sqlite" "$work/seed.sqlite.manifest.json" "$work/published/"
seed_path=/v1/seeds/$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sha256"])' \
    "$work/seed.sqlite.manifest.json")/seed.sqlite
"$bin/seed-import" --seed "$work/seed.sqlite" --database "$work/installed.sqlite" --server "$SERVER_URL" \
    --token-file "$work/token" --quiet
"$bin/seed-server" mutate --database "$work/server.sqlite" --changes 300 --seed 5 >/dev/null
seed_sha=$(sha256sum <"$work/seed.sqlite")
cat >"$work/edit.json" <<'JSON'
[{"types": ["locations"], "locations": {"create": [-1],
  "attributes": {"-1": {"name": "Pushed hall", "city": "Bergen", "latitude": 60.4, "longitude": 5.3}}}}]
JSON

start_proxy() { # BEHAVIOUR ROUTE NTH [--always]
    # The last proxy's line must be gone first: the background shell may truncate the file after the wait starts.
    rm -f "$work/proxy.out"
    python3 scripts/lib/hostile_server.py "$SERVER_URL" "$1" --route "$2" --nth "$3" --token-file "$work/token" ${4:-} \
        >"$work/proxy.out" 2>"$work/proxy.err" &
    proxy_pid=$!
    until grep -q '^listening on ' "$work/proxy.out" 2>/dev/null; do sleep 0.05; done
    PROXY_URL=$(sed -n 's/^listening on //p' "$work/proxy.out")
}

# The matrix: tool, behaviour, route, nth request, always (1) or once (0), expected exit (ok / fail),
# a phrase the message must hold (fail only). `build` writes over a good seed; `sync` catches up an
# installed app, which reads the log with GET /v1/changes (a server without it, 404, is synced with
# POST /v1/sync); `push` does so with a local edit queued; `download` installs a fresh app from the published
# seed's address on the proxy (request 1 is the manifest, 2 the seed file), the rest from the server.
cases=$(cat <<'TABLE'
build|malformed_json|/v1/snapshot/|2|0|fail|not JSON
build|not_json|/v1/snapshot/|2|0|fail|not JSON
build|snapshot_wrong_types|/v1/snapshot/|2|0|fail|snapshot
build|snapshot_unknown_column|/v1/snapshot/|2|0|fail|columns
build|snapshot_sql_type|/v1/snapshot/|2|0|fail|a page of
build|status_401|/v1/snapshot/|2|0|fail|401
build|status_403|/v1/snapshot/|2|0|fail|403
build|status_404|/v1/snapshot/|2|0|fail|404
build|status_500|/v1/snapshot/|2|0|ok|
build|status_500|/v1/snapshot/|2|1|fail|500
build|status_503_retry_after|/v1/snapshot/|2|0|ok|
build|status_429_retry_after|/v1/snapshot/|2|0|ok|
build|cut_mid_body|/v1/snapshot/|2|0|ok|
build|reset_mid_body|/v1/snapshot/|2|0|ok|
build|stall|/v1/snapshot/|2|0|ok|
build|slow_drip|/v1/snapshot/|2|0|ok|
build|huge_declared_body|/v1/snapshot/|2|0|fail|larger
build|huge_body|/v1/snapshot/|2|0|fail|larger
build|gzip_bomb|/v1/snapshot/|2|0|fail|larger
sync|malformed_json|/v1/changes|2|0|fail|not JSON
sync|not_json|/v1/changes|2|0|fail|not JSON
sync|wrong_types|/v1/changes|2|0|fail|maxRevision
sync|revision_gap|/v1/changes|2|0|fail|revision
sync|revision_regression|/v1/changes|2|0|fail|revision
sync|unknown_type|/v1/changes|2|0|fail|ghosts
sync|sql_identifier|/v1/changes|2|0|fail|unknown type
sync|unknown_field|/v1/changes|2|0|fail|colour
sync|status_401|/v1/changes|2|0|fail|401
sync|status_403|/v1/changes|2|0|fail|403
sync|status_500|/v1/changes|2|0|ok|
sync|status_500|/v1/changes|2|1|fail|500
sync|status_503_retry_after|/v1/changes|2|0|ok|
sync|status_429_retry_after|/v1/changes|2|0|ok|
sync|history_expired|/v1/changes|2|0|ok|
sync|cut_mid_body|/v1/changes|2|0|ok|
sync|reset_mid_body|/v1/changes|2|0|ok|
sync|stall|/v1/changes|2|0|ok|
sync|slow_drip|/v1/changes|2|0|ok|
sync|huge_declared_body|/v1/changes|2|0|fail|larger
sync|huge_body|/v1/changes|2|0|fail|larger
sync|gzip_bomb|/v1/changes|2|0|fail|larger
sync|status_404|/v1/changes|1|1|ok|
push|results_for_other_ids|/v1/sync|1|0|fail|result
push|results_missing|/v1/sync|1|0|fail|result
push|key_map_naming_unknown_keys|/v1/sync|1|0|fail|maps the temporary keys
push|conflict_for_rows_the_app_lacks|/v1/sync|1|0|ok|
download|cut_mid_body|/v1/seeds/|2|0|ok|
download|reset_mid_body|/v1/seeds/|2|0|ok|
download|stall|/v1/seeds/|2|0|ok|
download|slow_drip|/v1/seeds/|2|0|ok|
download|malformed_json|/v1/seeds/|2|0|ok|
download|not_json|/v1/seeds/|2|0|ok|
download|status_500|/v1/seeds/|2|0|ok|
download|status_500|/v1/seeds/|2|1|fail|500
download|status_503_retry_after|/v1/seeds/|2|0|ok|
download|status_429_retry_after|/v1/seeds/|2|0|ok|
download|status_401|/v1/seeds/|2|0|fail|401
download|status_403|/v1/seeds/|2|0|fail|403
download|status_404|/v1/seeds/|2|0|fail|nothing is published
download|status_404|/v1/seeds/|1|0|fail|nothing is published
download|malformed_json|/v1/seeds/|1|0|fail|not a valid seed manifest
download|huge_declared_body|/v1/seeds/|2|0|fail|longer
download|huge_body|/v1/seeds/|2|0|fail|longer
download|gzip_bomb|/v1/seeds/|2|0|ok|
download|flip_byte|/v1/seeds/|2|0|fail|does not match its manifest
TABLE
)

run_tool() { # TOOL URL OUT_OR_DATABASE
    if [ "$1" = build ]; then
        "$bin/seed-build" --server "$2" --token-file "$work/token" --out "$3" --page-size 500 --timeout 1 --quiet
    elif [ "$1" = download ]; then  # the seed's address on URL, the server itself for the rest
        # 3 s: the proxy builds a huge body before it answers, and a stall must still outlast the timeout.
        "$bin/seed-import" --seed-url "$2$seed_path" --database "$3" --server "$SERVER_URL" \
            --token-file "$work/token" --sync-limit 50 --timeout 3 --quiet
    else
        "$bin/seed-import" --seed "$work/seed.sqlite" --database "$3" --server "$2" --token-file "$work/token" \
            --sync-limit 50 --timeout 1 --quiet
    fi
}

failures=0 count=0
while IFS='|' read -r tool behaviour route nth always expected phrase; do
    count=$((count + 1))
    name="$tool $behaviour${always/1/ (always)}"
    name=${name/%0/}
    dir=$work/case-$count && mkdir -p "$dir"
    target=$dir/app.sqlite
    if [ "$tool" = build ]; then
        target=$dir/seed.sqlite && cp "$work/seed.sqlite" "$target"
    elif [ "$tool" = download ]; then
        :  # a fresh app: no database yet
    else
        cp "$work/installed.sqlite" "$target"
        [ "$tool" = push ] && "$bin/seed-import" write --database "$target" --file "$work/edit.json" >/dev/null
    fi
    start_proxy "$behaviour" "$route" "$nth" "$([ "$always" = 1 ] && echo --always)"
    started=$(date +%s%N)
    status=0
    run_tool "$tool" "$PROXY_URL" "$target" >"$dir/out" 2>"$dir/err" || status=$?
    elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
    stop_proxy
    problem=
    message=$(tr '\n' ' ' <"$dir/err" | cut -c1-220)
    refusal=$(tr '\n' ' ' <"$dir/err" | cut -c1-150)
    if [ "$expected" = ok ] && [ "$status" -ne 0 ]; then
        problem="expected success, exit $status: $message"
    elif [ "$expected" = fail ] && [ "$status" -eq 0 ]; then
        problem="expected a failure, it succeeded"
    elif [ "$expected" = fail ] && ! grep -qi -- "$phrase" "$dir/err"; then
        problem="the message lacks '$phrase': $message"
    fi
    # What is left must be sound: the previous seed untouched, or the database checked and its edit queued.
    if [ -z "$problem" ] && [ "$tool" = build ] && [ "$status" -ne 0 ] && [ "$(sha256sum <"$target")" != "$seed_sha" ]; then
        problem="the previous seed was changed"
    fi
    if [ -z "$problem" ] && [ "$tool" = download ] && [ "$status" -ne 0 ] && [ -e "$target" ]; then
        problem="a failed download left a database"
    elif [ -z "$problem" ] && [ "$tool" != build ] && [ -e "$target" ]; then
        check=$(sqlite3 "$target" "PRAGMA quick_check")
        [ "$check" = ok ] || problem="quick_check: $check"
        if [ "$tool" = push ] && [ "$status" -ne 0 ] && [ "$(sqlite3 "$target" "SELECT count(*) FROM _seedsync_outbox")" != 1 ]; then
            problem="the local edit is no longer queued"
        fi
    fi
    # A behaviour the tools get past must leave the same result as a good server.
    if [ -z "$problem" ] && [ "$status" -eq 0 ] && ! compare_tables "$work/server.sqlite" "$target" >"$dir/compare"; then
        problem="after the hostile run, not equal to the server's tables: $(grep DIFFERS "$dir/compare" | tr '\n' ' ')"
    fi
    # Then, against the real server, everything ends equal to the server's tables.
    if [ -z "$problem" ]; then
        if ! run_tool "$tool" "$SERVER_URL" "$target" >"$dir/out" 2>"$dir/err"; then
            problem="the run against the real server failed: $(tr '\n' ' ' <"$dir/err" | cut -c1-200)"
        elif ! compare_tables "$work/server.sqlite" "$target" >"$dir/compare"; then
            problem="not equal to the server's tables: $(grep DIFFERS "$dir/compare" | tr '\n' ' ')"
        elif [ "$tool" = push ] && [ "$(sqlite3 "$target" "SELECT count(*) FROM _seedsync_outbox")" != 0 ]; then
            problem="the local edit was not pushed by the next run"
        fi
    fi
    if [ -n "$problem" ]; then
        failures=$((failures + 1))
        printf '  FAIL %-48s %6d ms  %s\n' "$name" "$elapsed" "$problem"
    else
        printf '  ok   %-48s %6d ms  %s\n' "$name" "$elapsed" "$([ "$status" -eq 0 ] && echo "succeeded" || echo "refused: $refusal")"
    fi
    rm -rf "$dir"
done <<<"$cases"
echo "$count behaviours, $failures failures"
[ "$failures" -eq 0 ]
