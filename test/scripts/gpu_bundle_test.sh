#!/usr/bin/env bash
# scripts/gpu-bundle.sh as a GPU session uses it: a bundle packed from the
# build in BUILD_DIR and unpacked in another place lists the same tests
# labelled gpu, names the commit it was built from, keeps no path into the
# build in CTest's files, and runs a GPU test from there (on the tests'
# stand-in driver, through libloom.so found by LD_LIBRARY_PATH).
#
#   test/scripts/gpu_bundle_test.sh BUILD_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bundle="$(mktemp -d)/bundle"
trap 'rm -rf "$(dirname "$bundle")"' EXIT

LOOM_BUILD_DIR="$build" "$root/scripts/gpu-bundle.sh" pack "$bundle"
"$root/scripts/gpu-bundle.sh" unpack "$bundle"
size=$(du -sm "$bundle" | cut -f1)
echo "bundle: ${size} MB"
if ((size > 60)); then
  echo "FAIL: the bundle is ${size} MB; with the sources it must fit 64 MiB" >&2
  exit 1
fi
# The commit it was built from, which gpu-check.sh's report names.
expected_commit="$(git -C "$root" describe --always --dirty --abbrev=7 2>/dev/null || true)"
if [[ -n "$expected_commit" && "$(cat "$bundle/.commit" 2>/dev/null)" != "$expected_commit" ]]; then
  echo "FAIL: the bundle says it was built from '$(cat "$bundle/.commit" 2>/dev/null)'," \
    "the checkout is at $expected_commit" >&2
  exit 1
fi
if grep -rl "$build/" --include='*.cmake' "$bundle"; then
  echo "FAIL: CTest's files above still name the build directory $build" >&2
  exit 1
fi
count() { (cd "$1" && ctest -N -L '^gpu$' | tail -n 1); }
if [[ "$(count "$build")" != "$(count "$bundle")" ]]; then
  echo "FAIL: the build lists $(count "$build") gpu tests, the bundle $(count "$bundle")" >&2
  exit 1
fi
cd "$bundle"
LD_LIBRARY_PATH="$bundle" ctest -L gpu_on_cpu -R '^on_cpu.GpuExecution.ElementwiseWithAScalar$' \
  --output-on-failure | tee "$bundle/run.log"
grep -q "100% tests passed, 0 tests failed out of 1" "$bundle/run.log"
echo "ok: $(count "$bundle") from the bundle"
