#!/usr/bin/env bash
# Property-based test of seed-server against docs/openapi.yaml with schemathesis: starts a server on
# loopback (the temporary database of scripts/lib/openapi.sh, with an admin token, so pushes and
# admin commits run too), lets schemathesis generate valid and invalid requests for every operation
# from the document and check every answer (no 5xx, documented status, content type, headers and
# body; invalid data rejected), then stops the server. Exits non-zero on any finding.
#
# Usage: scripts/suites/schemathesis.sh BIN_DIR [--seconds N] [--examples N] [--seed N]
#   BIN_DIR       holds a built seed-server (e.g. .build/debug)
#   --seconds N   time budget of the run (default 60); the whole run is killed 60 s after it
#   --examples N  most generated requests per operation and phase (default 100)
#   --seed N      hypothesis's random seed (default 1: the same requests every run)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/openapi.sh

usage="usage: scripts/suites/schemathesis.sh BIN_DIR [--seconds N] [--examples N] [--seed N]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 64; }
bin=$(cd "$1" && pwd)
shift
seconds=60
examples=100
seed=1
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --examples) examples=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
done
[ -x "$bin/seed-server" ] || { echo "no seed-server in $bin: build it first (swift build --product seed-server)" >&2; exit 64; }

ensure_python_tools schemathesis==4.32.5

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT

# A live read at the head is held for the live wait: 1 s, under the request timeout.
start_openapi_server "$bin" "$work" --live-wait 1
# Every check but three: positive_data_acceptance (a request valid by the document may still break
# the dataset's schema: a key of the wrong key type, a row that does not exist, a gzip header on a
# plain body; those answers are the documented 400 and 422), and unsupported_method and
# allow_header_conformance (another method on a known path is 404 not_found, not 405, by
# docs/PROTOCOL.md §6). --seed makes a run repeatable; no example database is kept between runs.
# Its crash cache (.schemathesis/ by default, in the working directory) is turned off: failures are
# printed with a curl command that reproduces them.
printf '[cache]\nenabled = false\n' >"$work/schemathesis.toml"
timeout $((seconds + 60)) "$OPENAPI_VENV/bin/schemathesis" --config-file "$work/schemathesis.toml" run docs/openapi.yaml \
    --url "$SERVER_URL" \
    --header "Authorization: Bearer $(cat "$work/tokens/admin")" \
    --checks all --exclude-checks positive_data_acceptance,unsupported_method,allow_header_conformance \
    --max-examples "$examples" --max-time "$seconds" --request-timeout 10 \
    --seed "$seed" --workers 1 --no-color --generation-database none
