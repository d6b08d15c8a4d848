# Shared setup for the scripts: system packages and the Swift toolchain.

# System packages SeedSync builds against: SQLite (GRDB), libcurl (URLSession on Linux), zlib (gzip).
SEEDSYNC_PACKAGES=(libsqlite3-dev libcurl4-openssl-dev zlib1g-dev sqlite3)

ensure_system_packages() {
    local missing=()
    for package in "${SEEDSYNC_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    install_packages "${missing[@]}"
}

# install_packages PACKAGE...: installs the Debian packages named, with apt-get when root; otherwise
# says how and fails. Nothing named, nothing done.
install_packages() {
    [ $# -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "installing $*" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    else
        echo "missing system packages: $*; install them with: sudo apt-get install $*" >&2
        return 1
    fi
}

ensure_swift() {
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || { echo "swift not found: install Swift 6.2 or newer" >&2; return 1; }
}

# built_products BIN CONFIGURATION PRODUCT...: prints BIN when it is given (binaries built elsewhere);
# otherwise builds the PRODUCTs in CONFIGURATION (debug or release) and prints the folder they are in.
built_products() {
    local bin=$1 configuration=$2 product
    shift 2
    if [ -n "$bin" ]; then
        echo "$bin"
        return
    fi
    ensure_swift
    for product in "$@"; do swift build -c "$configuration" --product "$product" >&2; done
    swift build -c "$configuration" --show-bin-path
}

# await_start NAME PID LOG CHECK...: waits until CHECK succeeds (every 0.1 s, at most 30 s); when the
# process PID ends first or the time runs out, prints LOG and fails. How scripts wait for the servers
# they start (seed-server, PostgreSQL, nginx).
await_start() {
    local name=$1 pid=$2 log=$3 waited=0
    shift 3
    until "$@" 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null || [ "$waited" -ge 300 ]; then
            echo "$name did not start:" >&2
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}
