# Starting and stopping a seed-server for the scripts: a free loopback port, a generated token.

# new_token FILE: writes a random token to FILE (mode 600).
new_token() {
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1")
}

# start_server BIN DATABASE TOKEN_FILE WORK_DIR [WRITE_TOKEN_FILE] [ADMIN_TOKEN_FILE] [SERVE_OPTION...]:
# starts `seed-server serve` on a free port in the background and sets SERVER_PID and SERVER_URL.
# Fails after 30 s without a "listening on" line. WRITE_TOKEN_FILE, when given (and not empty),
# holds a token that may also push change sets; ADMIN_TOKEN_FILE one that may also use /v1/admin/*;
# SERVE_OPTIONs go to `serve` as they are (`--body-timeout 2`).
start_server() {
    local bin=$1 database=$2 token_file=$3 work=$4 write=()
    [ -n "${5:-}" ] && write=(--write-token-file "$5")
    [ -n "${6:-}" ] && write+=(--admin-token-file "$6")
    [ $# -gt 6 ] && write+=("${@:7}")
    # A server started before in WORK_DIR left its line: the background shell may truncate the file only
    # after the wait below has read it.
    rm -f "$work/server.out"
    "$bin/seed-server" serve --database "$database" --host 127.0.0.1 --port 0 --token-file "$token_file" "${write[@]}" \
        >"$work/server.out" 2>"$work/server.err" &
    SERVER_PID=$!
    await_start seed-server "$SERVER_PID" "$work/server.err" grep -q '^listening on ' "$work/server.out"
    SERVER_URL=$(sed -n 's/^listening on //p' "$work/server.out" | head -n 1)
}

# stop_server: stops the server started by start_server, by its pid.
stop_server() {
    if [ -n "${SERVER_PID:-}" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID"
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=
}
