#!/usr/bin/env bash
# Runs the test suite: installs missing system packages (as root), builds once, runs `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

ensure_system_packages
ensure_swift

swift build --build-tests
swift test --skip-build "$@"
