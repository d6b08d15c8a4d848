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

# report_hang LOG SECONDS SESSION: the Swift Testing tests the log shows started and not ended, the
# processes of SESSION, and the stack of every thread of its test and seed-* processes (with gdb;
# a suspended Swift task is on no thread's stack, so the tests' names are the surer lead).
report_hang() {
    local log=$1 limit=$2 session=$3
    echo "::error:: still running after $limit s, stopped; what was running:" >&2
    comm -23 \
        <(sed -n 's/^◇ Test \(.*\) started\.$/\1/p' "$log" | grep -v '^case \|^run$' | sort -u) \
        <(sed -n 's/^\(✔\|✘\) Test //p' "$log" | sed 's/ \(passed\|failed\|with [0-9]* test\).*$//' | sort -u) \
        | sed 's/^/  test: /' >&2
    ps -o pid,etimes,args -s "$session" | sed 's/^/  /' >&2 || true
    command -v gdb >/dev/null 2>&1 || return 0
    local pid
    for pid in $(pgrep -s "$session" -f '\.xctest|seed-(server|import|build|verify)'); do
        echo "the threads of process $pid:" >&2
        gdb -p "$pid" -batch -ex 'thread apply all bt 30' 2>/dev/null | grep -E '^(Thread|#)' \
            | swift demangle --simplified >&2 || true
    done
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
