# Time limits for CI's long steps, so that something that never ends fails the run in minutes
# instead of holding CI until its own limit, and says where it hung.

# run_bounded SECONDS COMMAND [ARGUMENTS...]: runs COMMAND in a session of its own, line-buffered
# (output that a hang leaves in a buffer is never printed), its output on the terminal and in a
# log, and returns its status. Past SECONDS it prints what was still running (see report_hang),
# kills the session's processes (swift test puts its test process in a process group of its own),
# and fails.
run_bounded() {
    local limit=$1
    shift
    local log
    log=$(mktemp)
    setsid stdbuf -oL -eL "$@" > >(tee "$log") 2>&1 &
    local session=$! waited=0
    while kill -0 "$session" 2>/dev/null; do
        if [ "$waited" -ge "$limit" ]; then
            report_hang "$log" "$limit" "$session"
            pkill -KILL -s "$session" || true
            wait "$session" 2>/dev/null || true
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    local status=0
    wait "$session" || status=$?
    rm -f "$log"
    return "$status"
}

# report_hang LOG SECONDS SESSION: what was running, the surest lead last (CI keeps the tail of a
# long output): the stack of every thread of the session's test and seed-* processes that is not an
# idle event loop or pool thread (with gdb; a suspended Swift task is on no thread's stack), the
# sessions of the test PostgreSQL that are in a transaction or wait (a query waiting on a lock
# never ends on its own), the session's processes, the test helpers' open steps (SIGUSR1, see
# TestTrace), and the Swift Testing tests the log shows started and not ended.
report_hang() {
    local log=$1 limit=$2 session=$3 pid
    echo "::error:: still running after $limit s, stopped; what was running:" >&2
    if command -v gdb >/dev/null 2>&1; then
        for pid in $(pgrep -s "$session" -f '\.xctest|seed-(server|import|build|verify)'); do
            echo "the busy threads of process $pid:" >&2
            gdb -p "$pid" -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread|#)' \
                | swift demangle --simplified | busy_threads >&2 || true
            echo "(its other threads wait for work)" >&2
        done
    fi
    if [ -n "${SEEDSYNC_POSTGRES_URL:-}" ] && command -v psql >/dev/null 2>&1; then
        echo "PostgreSQL sessions in a transaction or waiting:" >&2
        psql "$SEEDSYNC_POSTGRES_URL" -X -q -c "SELECT pid, datname, state, wait_event_type AS wait,
            wait_event, now() - xact_start AS in_transaction, left(query, 160) AS query
            FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
            AND (xact_start IS NOT NULL OR wait_event_type = 'Lock') ORDER BY xact_start" >&2 || true
    fi
    ps -o pid,etimes,args -s "$session" | sed 's/^/  /' >&2 || true
    # The test helpers' open steps (Sources/SeedSyncTesting/TestTrace.swift), printed by the test
    # process itself into the log's stream.
    for pid in $(pgrep -s "$session" -f '\.xctest'); do
        case "$(readlink "/proc/$pid/exe" 2>/dev/null)" in
            *.xctest) kill -USR1 "$pid" && sleep 2 ;;  # the test binary, not `swift test` naming it
        esac
    done
    comm -23 \
        <(sed -n 's/^◇ Test \(.*\) started\.$/\1/p' "$log" | grep -v '^case \|^run$' | sort -u) \
        <(sed -n 's/^\(✔\|✘\) Test //p' "$log" | sed 's/ \(passed\|failed\|with [0-9]* test\).*$//' | sort -u) \
        | sed 's/^/  test: /' >&2
}

# busy_threads: of gdb's `thread apply all bt`, the threads whose stack is not an idle NIO event
# loop or thread pool, or a Dispatch worker (Swift's concurrency pool on Linux) waiting for work.
busy_threads() {
    local idle='_blockingWaitForWork|_dispatch_mgr_thread|_dispatch_sig_thread|_dispatch_sema4_timedwait'
    awk -v idle="$idle" '
        /^Thread / { if (t != "" && !quiet) printf "%s", t; t = ""; quiet = 0 }
        { t = t $0 "\n"; if ($0 ~ idle) quiet = 1 }
        END { if (t != "" && !quiet) printf "%s", t }'
}

# timed NAME COMMAND...: runs COMMAND and records how long it took, for print_times. COMMAND runs as the
# left side of `||`, so `set -e` does not stop a shell function inside it: chain its steps with `&&`.
step_times=()
timed() {
    local name=$1 started status=0
    shift
    started=$(date +%s)
    "$@" || status=$?
    step_times+=("$(printf '%-34s %5d s' "$name" "$(($(date +%s) - started))")")
    return "$status"
}
print_times() { printf '    %s\n' "${step_times[@]}" >&2; }

# beside NAME COMMAND...: starts COMMAND in the background, its output kept in a file until
# `joined NAME` waits for it, prints the output and records its time (as `timed` does) and fails as
# it failed. For a step that leaves a core idle beside the steps run meanwhile.
declare -A beside_pids beside_logs beside_started
beside() {
    local name=$1
    shift
    beside_logs[$name]=$(mktemp)
    beside_started[$name]=$(date +%s)
    "$@" >"${beside_logs[$name]}" 2>&1 &
    beside_pids[$name]=$!
}

# joined NAME: waits for the step `beside NAME` started; see `beside`.
joined() {
    local name=$1 status=0
    wait "${beside_pids[$name]}" || status=$?
    step_times+=("$(printf '%-34s %5d s' "$name (beside)" "$(($(date +%s) - beside_started[$name]))")")
    echo "==> $name (run beside the steps before):" >&2
    cat "${beside_logs[$name]}" >&2
    rm -f "${beside_logs[$name]}"
    return "$status"
}
