#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or with sudo; the Python
# packages with pip), builds Loom and runs the whole test suite: ctest, then
# the Python tests with pytest. Exits non-zero if either fails. Tests
# labelled `gpu` run too and report themselves skipped where no GPU is
# present. Environment: LOOM_BUILD_DIR, LOOM_BUILD_TYPE, LOOM_JOBS,
# LOOM_CMAKE_ARGS, LOOM_NO_INSTALL, LOOM_NO_TORCH (see scripts/common.sh).
# Extra arguments go to ctest.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

loom_install_deps
loom_install_python_deps
loom_configure
loom_build

loom_log "running tests"
status=0
(cd "$LOOM_BUILD_DIR" && ctest --output-on-failure --parallel "$LOOM_JOBS" "$@") || status=$?

if [ -d "$LOOM_BUILD_DIR/python_bindings/loom" ]; then
    loom_log "running the Python tests"
    # LOOM_GEN: the C++ generator driver, which the Python generator's
    # output is compared with; LOOM_FAKE_CUDA_DRIVER: the stand-in CUDA
    # driver, on which the Python GPU tests run here.
    PYTHONPATH="$LOOM_BUILD_DIR/python_bindings${PYTHONPATH:+:$PYTHONPATH}" \
        LOOM_GEN="$LOOM_BUILD_DIR/tools/loom-gen/loom-gen" \
        LOOM_FAKE_CUDA_DRIVER="$LOOM_BUILD_DIR/test/libfake_cuda_driver.so" \
        python3 -m pytest -q -p no:cacheprovider "$LOOM_ROOT/python_bindings/test" || status=$?
else
    loom_log "the Python bindings were not built (no nanobind?): no Python tests"
    status=1
fi
exit "$status"
