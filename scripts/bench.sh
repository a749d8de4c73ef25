#!/usr/bin/env bash
# Installs what is missing, Halide 14 included (Debian: libhalide14-0-dev, the
# benchmarks' peer), builds a benchmark of apps/bench and prints its tables
# (see apps/bench/README.md). Environment: as for scripts/test.sh.
#
#   scripts/bench.sh [BENCH] [ARGS...]
#
# BENCH is loom_vs_halide (the default) or attention_fusion_bench (fused vs
# materialized attention); the other arguments go to the benchmark, e.g.
# scripts/bench.sh --quick, scripts/bench.sh --only gemm,
# scripts/bench.sh attention_fusion_bench --only decode.
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
bench_name=loom_vs_halide
case "${1:-}" in
loom_vs_halide | attention_fusion_bench)
    bench_name="$1"
    shift
    ;;
esac
loom_build "$bench_name"

bench="$LOOM_BUILD_DIR/apps/bench/$bench_name"
loom_log "running $bench $*"
exec "$bench" "$@"
