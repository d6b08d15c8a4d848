#!/usr/bin/env bash
# Builds the DocC documentation of the library products (swift-docc-plugin) and fails on any DocC
# warning: an unresolved link, an undocumented parameter, an article that hides a symbol. The
# archives land in .build/plugins/Swift-DocC/outputs/TARGET.doccarchive.
#
# Usage: scripts/tools/docs.sh [-c debug|release]
#   -c CONFIG   the build configuration the symbol graphs come from (default debug; scripts/test.sh
#               passes release, the build it made)
set -euo pipefail
cd "$(dirname "$0")/../.."

configuration=debug
case "${1:-}" in
    -c) configuration=$2 ;;
    "") ;;
    *) echo "usage: scripts/tools/docs.sh [-c debug|release]" >&2; exit 64 ;;
esac

targets=(SeedSyncModel SeedSyncStore SeedSyncSQLiteStore SeedSyncPostgres SeedSyncServer SeedSyncDemo SeedSyncClient SeedSyncSeed SeedSyncBuild SeedSyncImport)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
arguments=()
for target in "${targets[@]}"; do arguments+=(--target "$target"); done
swift package -c "$configuration" generate-documentation "${arguments[@]}" --warnings-as-errors >"$log" 2>&1 || {
    grep -E -A8 "^(warning|error): " "$log" | grep -v "swift-distributed-tracing" >&2 || cat "$log" >&2
    echo "docs: DocC failed (above); fix the documentation comments or articles" >&2
    exit 1
}
echo "docs: ${#targets[@]} DocC archives built without warnings"
