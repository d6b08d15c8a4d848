#!/usr/bin/env bash
# Soak: writers, syncing clients and pushing clients (real seed-import processes) against seed-server
# for S seconds, on the SQLite store (one server) or a PostgreSQL store this script starts (two servers,
# a psql writer too); one server is killed and restarted, and PostgreSQL itself stopped and started,
# during the run. At the end every client equals the server's tables, every pushed row is there once,
# and the servers' memory is flat (scripts/lib/soak.py says exactly what is checked).
#
# Usage: scripts/suites/soak.sh [--seconds S] [--backend sqlite|postgres] [--bin DIR]   (defaults: 600, sqlite, a debug build)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/postgres.sh

seconds=600
backend=sqlite
bin=
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        *) echo "usage: scripts/suites/soak.sh [--seconds S] [--backend sqlite|postgres] [--bin DIR]" >&2; exit 64 ;;
    esac
done
case $backend in sqlite | postgres) ;; *) echo "--backend must be sqlite or postgres" >&2; exit 64 ;; esac

work=$(mktemp -d)
trap 'stop_server; stop_postgres; rm -rf "$work"' EXIT
ensure_system_packages
bin=$(built_products "$bin" debug seed-server seed-build seed-import)
if [ "$backend" = sqlite ]; then
    database=$work/server.sqlite
else
    # Durable (fsync, synchronous_commit on): the soak crashes PostgreSQL, and a commit it acknowledged
    # without flushing would be lost, revisions clients already hold taken back (docs/RELIABILITY.md).
    export POSTGRES_DURABLE=1
    start_postgres
    database=$SEEDSYNC_POSTGRES_URL
    port=${database##*:}
    export PGHOST=127.0.0.1 PGPORT=${port%%/*} PGUSER=seedsync PGDATABASE=seedsync POSTGRES_DIR PG_BIN
fi
"$bin/seed-server" init --database "$database" --demo --events 5000 --locations 200 >/dev/null
new_token "$work/token"
start_server "$bin" "$database" "$work/token" "$work"
"$bin/seed-build" --server "$SERVER_URL" --token-file "$work/token" --out "$work/seed.sqlite" --quiet
stop_server
echo "soak: $seconds s on the $backend store"
python3 scripts/lib/soak.py "$bin" "$backend" "$database" "$work/seed.sqlite" "$work" "$seconds"
