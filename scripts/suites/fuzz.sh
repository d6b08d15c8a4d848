#!/usr/bin/env bash
# Fuzzes SeedSync's readers of untrusted bytes with libFuzzer and AddressSanitizer: builds seed-fuzz
# with `--sanitize=fuzzer --sanitize=address` (its own build folder, .build-fuzz), writes each
# target's seed corpus with SeedSync's own writers, then runs each target for S seconds, one target
# per core at a time. A crash, a sanitizer report, a failed round-trip check, a leak, an input
# slower than 10 s or a process over 2 GiB fails the run; libFuzzer keeps the input in
# .build-fuzz/crashes/. Every Swift object of SeedSync must carry both instrumentations, or the run
# stops before fuzzing. Prints the executions per target and the coverage counters the binary
# holds. The targets are documented in Sources/seed-fuzz/FuzzTarget.swift.
#
# With --build-only it builds and checks the instrumentation alone (scripts/test.sh builds beside other
# steps, then fuzzes: the second build finds nothing to do).
#
# Usage: scripts/suites/fuzz.sh [--seconds S] [--targets json,wire,...] [--build-only]   (defaults: 60, every target)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/setup.sh

seconds=60
targets=json,wire,commit,apply,push,seed,manifest,gzip
build_only=0
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) seconds=$2; shift 2 ;;
        --targets) targets=$2; shift 2 ;;
        --build-only) build_only=1; shift ;;
        *) echo "usage: scripts/suites/fuzz.sh [--seconds S] [--targets json,wire,...] [--build-only]" >&2; exit 64 ;;
    esac
done

ensure_system_packages
ensure_swift
# SwiftPM writes its two sanitizer flags in a random order (a set), and swiftc keeps only the last
# `-sanitize=`: one build had coverage without AddressSanitizer, the next AddressSanitizer without
# coverage. The combined flag, written after SwiftPM's, gives every Swift module both.
build=(--product seed-fuzz --scratch-path .build-fuzz --sanitize=fuzzer --sanitize=address
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DSEEDSYNC_FUZZ)
swift build "${build[@]}" 2>&1 | grep -v "^/usr/bin/ld.gold: warning: Cannot export local symbol" >&2
bin_path=$(swift build "${build[@]}" --show-bin-path)
fuzzer=$bin_path/seed-fuzz
# Fuzzing without either is no error of the targets but finds far less: refuse it.
objects=$(find "$bin_path"/SeedSync*.build "$bin_path"/seed_fuzz.build -name '*.swift.o')
[ -n "$objects" ] || { echo "fuzz: no object files under $bin_path" >&2; exit 1; }
for object in $objects; do
    symbols=$(nm "$object")
    if ! grep -q __sanitizer_cov <<<"$symbols" || ! grep -q __asan <<<"$symbols"; then
        echo "fuzz: $object lacks coverage or AddressSanitizer instrumentation; delete .build-fuzz and run again" >&2
        exit 1
    fi
done
[ "$build_only" = 0 ] || exit 0
mkdir -p .build-fuzz/crashes .build-fuzz/logs
export LSAN_OPTIONS=suppressions=$PWD/scripts/lib/lsan.supp
# A trap is reported by libFuzzer with its input; Swift's own crash handler would trip AddressSanitizer.
export SWIFT_BACKTRACE=enable=no

# fuzz_target TARGET: writes TARGET's corpus, fuzzes it, and writes its result line (and, when it
# failed, the report) to .build-fuzz/logs/TARGET.result; fails as the target failed.
fuzz_target() {
    local target=$1 corpus=.build-fuzz/corpus/$1 log=.build-fuzz/logs/$1.log result=.build-fuzz/logs/$1.result
    SEEDSYNC_FUZZ_TARGET=$target SEEDSYNC_FUZZ_WRITE_CORPUS=$corpus "$fuzzer" >/dev/null 2>&1 || {
        echo "$target: cannot write its corpus" >"$result"; return 1
    }
    local status=0
    SEEDSYNC_FUZZ_TARGET=$target "$fuzzer" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix=".build-fuzz/crashes/$target-" >"$log" 2>&1 || status=$?
    local counters executions speed size outcome
    counters=$(sed -n 's/^INFO: Loaded 1 modules *(\([0-9]*\) inline.*/\1/p' "$log" | head -n 1)
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    size=$(find "$corpus" -type f | wc -l)
    if [ "$status" -eq 0 ]; then outcome=passed; else outcome="FAILED (status $status, see $log)"; fi
    printf '%-9s %12s %9s %7s %9s  %s\n' "$target" "${executions:-?}" "${speed:-?}" "$size" "${counters:-?}" "$outcome" >"$result"
    # The sanitizer's or libFuzzer's report, else the log's end (a target that could not start says why there).
    if [ "$status" -ne 0 ]; then
        grep -E "ERROR|Fatal error|Test unit written|SUMMARY" "$log" | head -20 >>"$result" || tail -n 20 "$log" >>"$result"
    fi
    return "$status"
}

# One target per core at a time (libFuzzer runs on one); results printed in the targets' order.
cores=$(nproc)
list=(${targets//,/ })
failed=0
printf '%-9s %12s %9s %7s %9s  %s\n' target executions "exec/s" corpus counters result
for ((first = 0; first < ${#list[@]}; first += cores)); do
    pids=()
    for target in "${list[@]:first:cores}"; do
        fuzz_target "$target" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    for target in "${list[@]:first:cores}"; do cat ".build-fuzz/logs/$target.result"; done
done
exit $failed
