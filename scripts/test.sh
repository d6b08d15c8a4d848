#!/usr/bin/env bash
# Runs the test suite: installs missing system packages (as root), starts a throwaway PostgreSQL
# (the PostgreSQL store's tests need one; stopped at the end, also on failure), checks the sources'
# format (`swift format lint`, .swift-format) and that the articles' examples are current in
# Tests/ArticleExampleTests (scripts/tools/article-examples.py), builds once in release mode, tests
# included (which type-checks the examples; the tests reach internals through `package` access, not
# `@testable`, so the release build needs no testability and scripts/pipeline.sh reuses it), runs
# `swift test`. Without a PostgreSQL those tests fail: they are never skipped. Then the checks that
# need the build: the public API against api/, the install with man pages and completions
# (scripts/tools/install.sh, which scripts/pipeline.sh leaves to --install), the DocC documentation
# without warnings, real answers against docs/openapi.yaml, 30 seconds of schemathesis, the hostile
# client matrix on both stores (scripts/suites/hostile-clients.sh), the scope line on both stores (scripts/suites/scope-line.sh: a
# reader granted some scope values reads nothing of the others), the hostile server matrix against seed-build and seed-import
# (scripts/suites/hostile-servers.sh), the change log and live reads through a real nginx
# (scripts/suites/cache-check.sh), the Grafana dashboard's queries against a real Prometheus
# (scripts/suites/dashboard-check.sh, beside the DocC build), a short
# crash campaign (scripts/suites/crash-test.sh, 10 kills per target and store), 60 simulated power losses
# (scripts/suites/power-loss.sh), short soaks on both stores
# (scripts/suites/soak.sh), and 15 seconds of each libFuzzer target (scripts/suites/fuzz.sh, built beside the
# steps from the API check on, at the lowest priority). The tests have 15
# minutes (SEEDSYNC_TEST_SECONDS): a run that hangs fails with the tests that did not end and the test
# process's stacks (scripts/lib/watchdog.sh).
#
# At the end, also on failure, it prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh
source scripts/lib/postgres.sh
source scripts/lib/watchdog.sh

ensure_system_packages
ensure_swift
command -v gdb >/dev/null 2>&1 || install_packages gdb
# Installed before any step runs beside another (two apt-gets at once would fight over dpkg's lock);
# Debian's package starts a Prometheus of its own, which is not wanted.
if ! command -v prometheus >/dev/null 2>&1; then
    install_packages prometheus
    service prometheus stop >/dev/null 2>&1 || true
fi
trap 'print_times; stop_postgres' EXIT
start_postgres
# Every PostgreSQL test runs here: without a server they fail, never skip (a developer's plain
# `swift test` without SEEDSYNC_POSTGRES_URL skips them, saying so).
export SEEDSYNC_REQUIRE_POSTGRES=1

timed "format" swift format lint --strict --recursive Sources Tests Package.swift
python3 scripts/tools/article-examples.py --check
timed "release build, tests included" swift build -c release --build-tests
bin=$(swift build -c release --show-bin-path)
# At most 24 tests at a time (Swift Testing starts every test at once otherwise): on two cores, 550 tests
# starting together made the first seconds a storm of servers, stores and databases (timing tests
# failed in it, and each hang of the suite seen so far was in a test that started in it); 24 at a time
# also ends sooner (227 s against about 250 s).
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-24}
timed "swift test" run_bounded "${SEEDSYNC_TEST_SECONDS:-900}" swift test -c release --skip-build "$@"
timed "API check" bash scripts/tools/api-check.sh -c release
# The fuzzer's own build (sanitizers, .build-fuzz) takes the idle core time of the steps below, which
# mostly wait on servers and clients: at the lowest priority, so their timings do not feel it.
beside "fuzz build" run_bounded 1500 nice -n 19 bash scripts/suites/fuzz.sh --build-only
install_check() {
    local prefix
    prefix=$(mktemp -d)
    bash scripts/tools/install.sh --prefix "$prefix" && rm -rf "$prefix"
}
timed "install with man pages" install_check
openapi() { bash scripts/suites/openapi-check.sh "$bin" && bash scripts/suites/schemathesis.sh "$bin" --seconds 30; }
timed "OpenAPI and schemathesis" openapi
# The reliability suites (docs/RELIABILITY.md), short settings; each bounded, so a hang fails in minutes.
# DocC runs on one core, mostly: beside the hostile matrices, which mostly wait on their clients.
beside "DocC" run_bounded 600 bash scripts/tools/docs.sh -c release
beside "dashboard check" run_bounded 300 bash scripts/suites/dashboard-check.sh --bin "$bin"
timed "hostile clients" run_bounded 600 bash scripts/suites/hostile-clients.sh --bin "$bin"
timed "scope line" run_bounded 420 bash scripts/suites/scope-line.sh --bin "$bin"
timed "hostile servers" run_bounded 600 bash scripts/suites/hostile-servers.sh --bin "$bin"
joined "DocC"
joined "dashboard check"
timed "cache check" run_bounded 300 bash scripts/suites/cache-check.sh --bin "$bin"
timed "crash campaign" run_bounded 600 bash scripts/suites/crash-test.sh --iterations 10 --events 3000 --changes 300 --bin "$bin"
timed "power loss" run_bounded 300 bash scripts/suites/power-loss.sh --cuts 10 --bin "$bin"
soaks() {
    run_bounded 300 bash scripts/suites/soak.sh --seconds 30 --backend sqlite --bin "$bin" \
        && run_bounded 300 bash scripts/suites/soak.sh --seconds 45 --backend postgres --bin "$bin"
}
timed "soaks" soaks
joined "fuzz build"
timed "fuzzing" run_bounded 900 bash scripts/suites/fuzz.sh --seconds 15
