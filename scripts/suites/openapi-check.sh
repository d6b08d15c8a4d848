#!/usr/bin/env bash
# Checks docs/openapi.yaml against a real seed-server: validates the document as OpenAPI 3.1, starts
# the server on loopback (a temporary database with integer and text keys; a read, a write and an
# admin token), sends requests covering every route (/metrics too) and every status that can be
# produced from outside (success, 400, 401, 403, 404, 408, 409, 410, 413, 415, 422, gzip both ways,
# paging, pushes that are applied, conflict and rejected, compaction), and validates each answer's
# status, content type, headers and body against the document (scripts/lib/openapi_check.py). Any
# mismatch fails it.
#
# Usage: scripts/suites/openapi-check.sh BIN_DIR   (BIN_DIR holds a built seed-server and seed-build, e.g. .build/debug)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh
source scripts/lib/server.sh
source scripts/lib/openapi.sh

[ $# -eq 1 ] || { echo "usage: scripts/suites/openapi-check.sh BIN_DIR" >&2; exit 64; }
bin=$(cd "$1" && pwd)
[ -x "$bin/seed-server" ] || { echo "no seed-server in $bin: build it first (swift build --product seed-server)" >&2; exit 64; }

ensure_python_tools openapi-spec-validator==0.9.0 openapi-schema-validator==0.9.0 jsonschema==4.26.0 \
    referencing==0.37.0 PyYAML==6.0.3 requests==2.34.2

work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT

# A body time limit of 2 s instead of 30 makes 408 cheap to produce; a live sync wait of 1 s and one
# held request at most make a held answer and 503 `too_many_waiting` cheap too.
# A seeds folder, which the check publishes a seed into (GET /v1/seeds/SHA256/FILE).
mkdir -p "$work/server.sqlite.seeds"
start_openapi_server "$bin" "$work" --body-timeout 2 --max-wait 1 --max-waiting-requests 1 --seeds "$work/server.sqlite.seeds"
timeout 100 "$PYTHON" scripts/lib/openapi_check.py docs/openapi.yaml "$SERVER_URL" \
    --tokens "$work/tokens" --bin "$bin" --database "$work/server.sqlite"
