#!/usr/bin/env bash
# The scope line (scripts/lib/scope_line.py) against a real seed-server on loopback: a dataset split by a
# scope (PROTOCOL.md §10, the `clubs` schema: teams, shared venues, events and tickets of a team), a history
# committed through the admin endpoint, then JWTs granting team 1, team 2, ["1"] and [] read every endpoint
# and push across the line; each answer is what the grant reads, and nothing of another team shows. On the
# SQLite store, on the PostgreSQL store (a throwaway PostgreSQL this script starts and stops), or both.
#
# Usage: scripts/suites/scope-line.sh [--backend sqlite|postgres|both] [--bin DIR]   (defaults: both, a debug build)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/postgres.sh
source scripts/lib/nginx.sh

backend=both
bin=
while [ $# -gt 0 ]; do
    case $1 in
        --backend) backend=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: scripts/suites/scope-line.sh [--backend sqlite|postgres|both] [--bin DIR]" >&2; exit 64 ;;
    esac
done
case $backend in
    sqlite) backends=(sqlite) ;;
    postgres) backends=(postgres) ;;
    both) backends=(sqlite postgres) ;;
    *) echo "--backend must be sqlite, postgres or both" >&2; exit 64 ;;
esac

work=$(mktemp -d)
trap 'stop_nginx; stop_server; stop_postgres; rm -rf "$work"' EXIT
ensure_system_packages
bin=$(built_products "$bin" debug seed-server seed-build seed-verify)
for token in read admin; do new_token "$work/$token"; done
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet cryptography
python3 scripts/lib/jwt_keys.py --key "$work/jwt-key.pem" --jwks "$work/jwks.json" --kid k1
python3 scripts/lib/scope_line.py --write-schema "$work/schema.json"

# One store: init, serve behind nginx, run the line, cut a seed per team.
scope_line() {
    local store=$1 database
    if [ "$store" = sqlite ]; then
        database=$work/server.sqlite
    else
        [ -n "${POSTGRES_PID:-}" ] || start_postgres
        database=$SEEDSYNC_POSTGRES_URL
    fi
    "$bin/seed-server" init --database "$database" --schema "$work/schema.json" >/dev/null
    # --shared-cache: answers every reader may share say `public`, so a `private` answer to a scoped reader
    # shows. Log blocks of 4 revisions: the log reads cross blocks, and some answers show a team nothing.
    start_server "$bin" "$database" "$work/read" "$work" "" "$work/admin" --shared-cache \
        --changes-block-size 4 --jwks-file "$work/jwks.json" --jwt-scope-claim teams --jwt-role-claim role
    # nginx in front (proxy_cache, auth_request to GET /v1/auth): the suite's last cases read through it.
    # (a cache of its own per store: no answer kept from the other store's server).
    start_nginx "$work/$store" "$SERVER_URL"
    echo "== $store store: seed-server pid $SERVER_PID at $SERVER_URL, nginx at $NGINX_URL"
    python3 scripts/lib/scope_line.py "$SERVER_URL" --read-token "$(cat "$work/read")" \
        --admin-token "$(cat "$work/admin")" --jwt-key "$work/jwt-key.pem" --cache "$NGINX_URL" || failed=1
    # One build with the static token cuts a seed per team (seed-build --every-scope); each verifies, says its
    # team, and holds that team's events alone.
    echo "== $store store: seed-build --every-scope"
    rm -rf "$work/seeds"
    if "$bin/seed-build" --server "$SERVER_URL" --token-file "$work/read" --out "$work/seeds/clubs.sqlite" \
        --every-scope --quiet; then
        for team in 1 2; do
            seed="$work/seeds/clubs.team-$team.sqlite"
            if "$bin/seed-verify" "$seed" >/dev/null \
                && python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["scopes"] != [int(sys.argv[2])])' \
                    "$seed.manifest.json" "$team" \
                && [ "$(sqlite3 "$seed" "SELECT count(*) FROM events WHERE team_id <> $team")" = 0 ] \
                && [ "$(sqlite3 "$seed" "SELECT count(*) FROM events")" -gt 0 ]; then
                echo "ok: clubs.team-$team.sqlite verifies and holds team $team's events alone"
            else
                echo "FAILED: clubs.team-$team.sqlite" >&2
                failed=1
            fi
        done
    else
        echo "FAILED: seed-build --every-scope" >&2
        failed=1
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "seed-server exited during the suite:" >&2
        cat "$work/server.err" >&2
        failed=1
    fi
    stop_nginx
    stop_server
}

failed=0
for store in "${backends[@]}"; do scope_line "$store"; done
exit $failed
