# Shared by scripts/suites/openapi-check.sh and scripts/suites/schemathesis.sh: a Python environment with pinned
# tools, and a seed-server with a read, a write and an admin token over a small schema that has
# integer and text keys and every value type. Needs scripts/lib/server.sh (and setup.sh) sourced.

# The virtual environment the tools go into (it sees the system's packages; pinned versions that
# are missing or differ are installed into it).
OPENAPI_VENV=${OPENAPI_VENV:-.build/openapi-venv}

# ensure_python_tools NAME==VERSION...: makes OPENAPI_VENV if missing, installs each pinned package
# whose installed version differs (quietly, from PyPI), and sets PYTHON to the environment's python3.
ensure_python_tools() {
    command -v python3 >/dev/null 2>&1 || install_packages python3 python3-venv
    # A venv made without python3-venv's ensurepip has no pip: made again.
    if [ -x "$OPENAPI_VENV/bin/python3" ] && ! "$OPENAPI_VENV/bin/python3" -m pip --version >/dev/null 2>&1; then
        rm -rf "$OPENAPI_VENV"
    fi
    if [ ! -x "$OPENAPI_VENV/bin/python3" ]; then
        python3 -m venv --system-site-packages "$OPENAPI_VENV" 2>/dev/null || {
            install_packages python3-venv
            python3 -m venv --clear --system-site-packages "$OPENAPI_VENV"
        }
    fi
    PYTHON=$OPENAPI_VENV/bin/python3
    local missing=() requirement
    for requirement in "$@"; do
        "$PYTHON" - "${requirement%%==*}" "${requirement##*==}" <<'PY' || missing+=("$requirement")
import importlib.metadata, sys
try:
    sys.exit(importlib.metadata.version(sys.argv[1]) != sys.argv[2])
except importlib.metadata.PackageNotFoundError:
    sys.exit(1)
PY
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing ${missing[*]} into $OPENAPI_VENV" >&2
    "$PYTHON" -m pip install --quiet --disable-pip-version-check "${missing[@]}" >&2
}

# start_openapi_server BIN WORK_DIR [SERVE_OPTION...]: creates WORK_DIR/server.sqlite (the schema
# below, revision 0), writes one token each to WORK_DIR/tokens/read, write and admin, and starts the
# server on loopback with the options given (SERVER_PID, SERVER_URL; stop it with stop_server).
start_openapi_server() {
    local bin=$1 work=$2
    shift 2
    cat >"$work/schema.json" <<'JSON'
{"dataset": "openapi-check", "schemaVersion": 1, "types": [
  {"name": "locations", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
    {"name": "name", "type": "text"}, {"name": "city", "type": "text"},
    {"name": "latitude", "type": "real"}, {"name": "longitude", "type": "real"}]},
  {"name": "events", "primaryKey": {"name": "id", "type": "integer"}, "fields": [
    {"name": "title", "type": "text"}, {"name": "starts_at", "type": "timestamp"},
    {"name": "ends_at", "type": "timestamp", "nullable": true},
    {"name": "location_id", "type": "integer", "nullable": true, "references": "locations"},
    {"name": "capacity", "type": "integer"}, {"name": "cancelled", "type": "boolean"},
    {"name": "description", "type": "text", "nullable": true}]},
  {"name": "tags", "primaryKey": {"name": "code", "type": "text"}, "fields": [
    {"name": "label", "type": "text"}, {"name": "icon", "type": "blob", "nullable": true},
    {"name": "location_id", "type": "integer", "nullable": true, "references": "locations"}]}]}
JSON
    "$bin/seed-server" init --database "$work/server.sqlite" --schema "$work/schema.json" >/dev/null
    mkdir -p "$work/tokens"
    local role
    for role in read write admin; do new_token "$work/tokens/$role"; done
    start_server "$bin" "$work/server.sqlite" "$work/tokens/read" "$work" "$work/tokens/write" "$work/tokens/admin" "$@"
}
