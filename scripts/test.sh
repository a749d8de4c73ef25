#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or with sudo), builds Loom and
# runs the whole test suite with ctest; exits with ctest's status. Tests
# labelled `gpu` run too and report themselves skipped where no GPU is present.
# Environment: LOOM_BUILD_DIR, LOOM_BUILD_TYPE, LOOM_JOBS, LOOM_CMAKE_ARGS,
# LOOM_NO_INSTALL (see scripts/common.sh). Extra arguments go to ctest.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

loom_install_deps
loom_configure
loom_build

loom_log "running tests"
cd "$LOOM_BUILD_DIR"
exec ctest --output-on-failure --parallel "$LOOM_JOBS" "$@"
