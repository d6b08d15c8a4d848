# An nginx on loopback in front of seed-servers, as a CDN or a team's reverse proxy would be: it
# keeps `GET /v1/changes` answers and snapshot pages in a proxy_cache for as long as their
# Cache-Control says (one origin read per address at a time: proxy_cache_lock), asks the origin's
# `GET /v1/auth` about the address before answering from the cache (auth_request with X-Original-URI,
# the verdict kept 60 s per token, path and `scopes`, one check at a time for each), and passes every
# other request through. Needs setup.sh and
# postgres.sh (free_port) sourced; started and stopped by the script that uses it (stop_nginx, also
# on failure).

NGINX_PID=

# start_nginx WORK URL...: nginx on a free port with the servers at URL... as its origin; sets
# NGINX_URL. Installs Debian's nginx-light when missing. NGINX_CACHE_EXTRA, when set, is added to the
# block that answers the change log and snapshot pages (a cache that misbehaves on purpose);
# NGINX_WORKERS sets its worker processes (2 by default) and NGINX_CONNECTIONS the connections each
# may hold (20,000 by default).
#
# Live reads (GET /v1/changes with live=) are held by the origin up to its --live-wait (20 s): the
# requests that wait for another's answer to the same address (proxy_cache_lock) must wait longer
# than that (proxy_cache_lock_timeout), and no second request may go to the origin while the first
# is held (proxy_cache_lock_age: 5 s by default, which would send one more every 5 s). One more request
# per address reaches the origin for every 1,024 that wait for it: nginx's cache node counts its uses
# in 10 bits, and the request that finds the count wrapped to 0 is passed on uncached.
start_nginx() {
    local work=$1 port servers="" extra=${NGINX_CACHE_EXTRA:-} connections=${NGINX_CONNECTIONS:-20000} workers=${NGINX_WORKERS:-2}
    shift
    if ! command -v nginx >/dev/null 2>&1; then
        install_packages nginx-light
        # Debian's package starts its own nginx on port 80; this one is not wanted.
        service nginx stop >/dev/null 2>&1 || true
    fi
    for url in "$@"; do servers+="        server ${url#http://};"$'\n'; done
    port=$(free_port)
    mkdir -p "$work/nginx/cache" "$work/nginx/auth"
    cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
user root;
worker_processes $workers;
worker_rlimit_nofile $(nofile_limit "$connections");
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections $connections; }
http {
    access_log off;
    keepalive_requests 100000;
    proxy_temp_path $work/nginx/temp;
    client_body_temp_path $work/nginx/body;
    proxy_cache_path $work/nginx/cache levels=1:2 keys_zone=changes:16m max_size=4g inactive=1h use_temp_path=off;
    proxy_cache_path $work/nginx/auth keys_zone=auth:4m inactive=10m;
    # A verdict of GET /v1/auth holds for the token, the path and the scope values the address names
    # (PROTOCOL.md §10): the same for every block of the log, one check per token for each.
    map \$request_uri \$auth_address {
        "~^(?<address_path>[^?]*)\?(?:.*&)?(?<address_scopes>scopes=[^&]*)" "\$address_path?\$address_scopes";
        "~^(?<address_path>[^?]*)" "\$address_path";
    }
    upstream origin {
$servers        keepalive 64;
    }
    server {
        listen 127.0.0.1:$port;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_read_timeout 120s;
        location ~ ^/v1/(changes|snapshot/) {
            auth_request /_auth;
            proxy_pass http://origin;
            proxy_cache changes;
            proxy_cache_key \$request_uri;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 60s;
            proxy_cache_lock_age 60s;
            # An expired entry (the head of the log, a live read's answer) is refreshed by one request
            # while the others get the old answer: it is true, only not the newest, and a client goes on
            # from it (a live read's empty answer leads, by its cursor, to an address not yet stored).
            # proxy_cache_lock alone holds requests for addresses never stored, not for expired ones.
            proxy_cache_use_stale updating;
            add_header X-Cache-Status \$upstream_cache_status always;
$extra
        }
        location = /_auth {
            internal;
            proxy_pass http://origin/v1/auth;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI \$request_uri;
            proxy_cache auth;
            proxy_cache_key "\$http_authorization \$auth_address";
            proxy_cache_lock on;
            proxy_cache_valid 204 60s;
        }
        location / {
            proxy_pass http://origin;
        }
    }
}
CONF
    nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
    NGINX_PID=$!
    await_start nginx "$NGINX_PID" "$work/nginx/error.log" curl -sf -o /dev/null "http://127.0.0.1:$port/health"
    NGINX_URL=http://127.0.0.1:$port
}

# nofile_limit CONNECTIONS: the file descriptors an nginx worker asks for: a client's and an upstream
# connection each at most, within the hard limit of this shell (a container may cap it below).
nofile_limit() {
    local wanted=$(($1 * 2 + 1000)) hard
    hard=$(ulimit -Hn)
    [ "$hard" = unlimited ] || [ "$wanted" -le "$hard" ] || wanted=$hard
    echo "$wanted"
}

# stop_nginx: stops the nginx of start_nginx, by its pid.
stop_nginx() {
    if [ -n "$NGINX_PID" ]; then
        kill "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    NGINX_PID=
}
