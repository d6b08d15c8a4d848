# A throwaway PostgreSQL for the scripts: initdb into a temporary folder as the unprivileged
# `postgres` user (the server refuses to run as root), password authentication, loopback only, a
# free port, stopped by its pid at the end (the caller's EXIT trap calls stop_postgres).

# ensure_postgres_binaries: installs PostgreSQL's server packages when initdb is missing; sets PG_BIN.
ensure_postgres_binaries() {
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
        install_packages postgresql postgresql-client
        PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    fi
    command -v psql >/dev/null 2>&1 || install_packages postgresql-client
    command -v python3 >/dev/null 2>&1 || install_packages python3
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
}

# free_port: prints a free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# as_postgres COMMAND...: runs COMMAND as the postgres user when root, as the caller otherwise.
as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# run_postgres PORT: starts the server of POSTGRES_DIR in the background and sets POSTGRES_PID;
# without durability (fsync off: a test database) unless POSTGRES_DURABLE=1 (benchmarks). A
# command, not a function, carries the redirection: bash would hand a function's saved file
# descriptors (the caller's stdout) on to the server, which would hold a caller's pipe open.
run_postgres() {
    local user=()
    [ "$(id -u)" -eq 0 ] && user=(runuser -u postgres --)
    # The test suite runs many stores at once, each with a pool of up to 20 connections and, when
    # served, one more that listens for new revisions (live sync).
    local settings=(-c max_connections=600)
    [ "${POSTGRES_DURABLE:-0}" = 1 ] || settings+=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
    "${user[@]}" "$PG_BIN/postgres" -D "$POSTGRES_DIR/data" -h 127.0.0.1 -p "$1" -k "$POSTGRES_DIR" "${settings[@]}" \
        >>"$POSTGRES_DIR/server.log" 2>&1 </dev/null &
    POSTGRES_PID=$!
}

# start_postgres: starts the throwaway server and exports SEEDSYNC_POSTGRES_URL
# (postgres://seedsync@127.0.0.1:PORT/seedsync) and PGPASSWORD; sets POSTGRES_PID and POSTGRES_DIR.
# Fails, printing the server log, when it does not accept connections within 30 s.
start_postgres() {
    ensure_postgres_binaries
    POSTGRES_DIR=$(mktemp -d /tmp/seedsync-postgres.XXXXXX)
    chmod 755 "$POSTGRES_DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres "$POSTGRES_DIR"
    local password port
    password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
    port=$(free_port)
    (umask 077 && printf '%s\n' "$password" >"$POSTGRES_DIR/password")
    [ "$(id -u)" -eq 0 ] && chown postgres "$POSTGRES_DIR/password"
    as_postgres "$PG_BIN/initdb" --pgdata "$POSTGRES_DIR/data" --username seedsync --pwfile "$POSTGRES_DIR/password" \
        --auth scram-sha-256 --encoding UTF8 --locale C >"$POSTGRES_DIR/initdb.log" 2>&1 \
        || { cat "$POSTGRES_DIR/initdb.log" >&2; return 1; }
    run_postgres "$port"

    export PGPASSWORD=$password
    await_start PostgreSQL "$POSTGRES_PID" "$POSTGRES_DIR/server.log" "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port"
    PGHOST=127.0.0.1 PGPORT=$port PGUSER=seedsync psql -q -d postgres -c 'CREATE DATABASE seedsync' >/dev/null
    export SEEDSYNC_POSTGRES_URL="postgres://seedsync@127.0.0.1:$port/seedsync"
}

# stop_postgres: stops the server started by start_postgres, by its pid, and removes its folder.
stop_postgres() {
    if [ -n "${POSTGRES_PID:-}" ] && kill -0 "$POSTGRES_PID" 2>/dev/null; then
        # The postmaster's own pid (POSTGRES_PID may be runuser's): SIGINT is a fast shutdown.
        local postmaster
        postmaster=$(head -n 1 "$POSTGRES_DIR/data/postmaster.pid" 2>/dev/null || echo "$POSTGRES_PID")
        kill -INT "$postmaster" 2>/dev/null || true
        wait "$POSTGRES_PID" 2>/dev/null || true
    fi
    POSTGRES_PID=
    [ -n "${POSTGRES_DIR:-}" ] && rm -rf "$POSTGRES_DIR"
    POSTGRES_DIR=
}
