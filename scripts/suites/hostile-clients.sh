#!/usr/bin/env bash
# The hostile client matrix (scripts/lib/hostile_clients.py) against a real seed-server on loopback,
# on the SQLite store, on the PostgreSQL store (a throwaway PostgreSQL this script starts and stops),
# or both: bodies over the limit both ways, gzip bombs, broken framing, header floods, absurd
# parameters, path and SQL tricks, forged pushes, odd ids, NUL and unicode, 1,000 idle sockets, JWTs
# expired, forged and confused (the server takes them with a key set of its own). Each
# case gets the answer PROTOCOL.md promises and the server keeps serving; the matrix runs N times and
# fails as a leak when the server's memory grew more than 8 MiB after the second pass and still grew in
# the last (hostile_clients.py says why both).
#
# Usage: scripts/suites/hostile-clients.sh [--backend sqlite|postgres|both] [--bin DIR] [--passes N]
#   (defaults: both, a debug build, 4)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/postgres.sh
source scripts/lib/server.sh

backend=both
bin=
passes=4
while [ $# -gt 0 ]; do
    case $1 in
        --backend) backend=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --passes) passes=$2; shift 2 ;;
        *) echo "usage: scripts/suites/hostile-clients.sh [--backend sqlite|postgres|both] [--bin DIR] [--passes N]" >&2; exit 64 ;;
    esac
done
case $backend in
    sqlite) backends=(sqlite) ;;
    postgres) backends=(postgres) ;;
    both) backends=(sqlite postgres) ;;
    *) echo "--backend must be sqlite, postgres or both" >&2; exit 64 ;;
esac

work=$(mktemp -d)
trap 'stop_server; stop_postgres; rm -rf "$work"' EXIT
ensure_system_packages
bin=$(built_products "$bin" debug seed-server)
for token in read write admin; do new_token "$work/$token"; done
python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet cryptography
python3 scripts/lib/jwt_keys.py --key "$work/jwt-key.pem" --jwks "$work/jwks.json" --kid k1

failed=0
for store in "${backends[@]}"; do
    if [ "$store" = sqlite ]; then
        database=$work/server.sqlite
    else
        # A PostgreSQL of its own (the test suite's may be shared): started once, a database per run.
        [ -n "${POSTGRES_PID:-}" ] || start_postgres
        database=$SEEDSYNC_POSTGRES_URL
    fi
    "$bin/seed-server" init --database "$database" --demo --events 2000 --locations 50 >/dev/null
    start_server "$bin" "$database" "$work/read" "$work" "$work/write" "$work/admin" --body-timeout 2 \
        --jwks-file "$work/jwks.json" --jwt-issuer https://id.hostile --jwt-audience hostile --jwt-role-claim role
    echo "== $store store: seed-server pid $SERVER_PID at $SERVER_URL"
    python3 scripts/lib/hostile_clients.py "$SERVER_URL" "$SERVER_PID" --passes "$passes" --read-token "$(cat "$work/read")" \
        --write-token "$(cat "$work/write")" --admin-token "$(cat "$work/admin")" --jwt-key "$work/jwt-key.pem" || failed=1
    stop_server
done
exit $failed
