#!/usr/bin/env bash
# Installs what is missing, Halide 14 included (Debian: libhalide14-0-dev, the
# benchmark's peer), builds the Loom-vs-Halide benchmark and prints its table
# (see apps/bench/README.md). Environment: as for scripts/test.sh. Extra
# arguments go to the benchmark, e.g. --quick, --threads 8, --only gemm.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# Only the benchmark needs Halide, so it is added here, not in common.sh.
LOOM_PACKAGES+=(libhalide14-0-dev)
loom_install_deps
# Configuring again also picks up a Halide installed since the last configure
# (a failed find_package is retried on every configure).
loom_configure
# apps/CMakeLists.txt adds apps/bench only when it found Halide 14.
if [ ! -d "$LOOM_BUILD_DIR/apps/bench" ]; then
    echo "error: the benchmark is not configured: CMake did not find Halide 14" \
        "(libhalide14-0-dev), or LOOM_BUILD_APPS is off" >&2
    exit 1
fi
loom_build loom_vs_halide

bench="$LOOM_BUILD_DIR/apps/bench/loom_vs_halide"
loom_log "running $bench $*"
exec "$bench" "$@"
