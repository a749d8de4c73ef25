#!/usr/bin/env bash
# Builds libloom and the tests with AddressSanitizer and UndefinedBehavior-
# Sanitizer in a build directory of their own (build-sanitize) and runs the
# tests there: out-of-bounds accesses, use after free and undefined behaviour
# in the compiler and its runtime then fail the test that reaches them. Code
# Loom compiles (the JIT's, NVRTC's) is not instrumented. The apps and the
# tutorials are left out, and so is the install test, whose consumer project
# is not built with the sanitizers. Leaks are not reported: LLVM and the CUDA
# driver keep allocations for the life of the process.
#
# A full build takes about 15 minutes on 2 cores, the tests about 12.
# Environment: as scripts/test.sh (LOOM_BUILD_DIR defaults to build-sanitize).
# Extra arguments go to ctest.
set -euo pipefail
export LOOM_BUILD_DIR="${LOOM_BUILD_DIR:-build-sanitize}"
export LOOM_BUILD_TYPE="${LOOM_BUILD_TYPE:-RelWithDebInfo}"
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# CMake takes these as the flags of a build directory's first configure.
export CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
export CXXFLAGS="$CFLAGS" LDFLAGS="-fsanitize=address,undefined"
LOOM_CMAKE_ARGS="${LOOM_CMAKE_ARGS:-} -DLOOM_BUILD_APPS=OFF -DLOOM_BUILD_TUTORIALS=OFF"

loom_install_deps
loom_configure
loom_build

loom_log "running tests under the sanitizers"
cd "$LOOM_BUILD_DIR"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec ctest --output-on-failure --parallel "$LOOM_JOBS" -E '^generator\.install_consumer$' "$@"
