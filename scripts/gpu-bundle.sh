#!/usr/bin/env bash
# Takes a Loom build to a GPU machine that cannot build it (no LLVM there):
# packs what the GPU check needs into a small folder, and, on the GPU
# machine, makes that folder a build directory again.
#
#   scripts/gpu-bundle.sh pack [BUNDLE]     (here; default BUNDLE: .gpu-bundle)
#   scripts/gpu-bundle.sh unpack [BUNDLE]   (there, in the repository's root)
#   LOOM_BUILD_DIR=BUNDLE scripts/gpu-check.sh
#
# pack copies, from $LOOM_BUILD_DIR (default: build), libloom.so (stripped:
# it holds LLVM, so nothing needs libLLVM at run time), the binaries that
# the tests labelled `gpu` and the GPU benchmarks run, and CTest's test
# files, keeping their places: about 50 MB, against the 64 MiB that a lent
# machine takes along with the sources. CTest's files name the build and
# source directories by absolute path; unpack rewrites them to where the
# bundle and the sources are on the GPU machine. The binaries find
# libloom.so there through LD_LIBRARY_PATH, which gpu-check.sh sets.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

die() {
  echo "gpu-bundle: $*" >&2
  exit 1
}

action="${1:-}"
bundle="${2:-.gpu-bundle}"
case "$bundle" in
/*) ;;
*) bundle="$LOOM_ROOT/$bundle" ;;
esac

# What the GPU check runs, relative to the build directory.
gpu_files=(
  libloom.so
  test/loom_test_gpu
  test/libfake_cuda_driver.so
  apps/bench/gpu_memory_bound_bench
  apps/bench/gpu_attention_bench
  apps/bench/libloom_torch_kernels.so
)

pack() {
  local build="$LOOM_BUILD_DIR" f
  for f in "${gpu_files[@]}"; do
    [[ -e "$build/$f" ]] || die "$build/$f is missing: build Loom first (scripts/test.sh)"
  done
  rm -rf "$bundle"
  mkdir -p "$bundle"
  # (A bundle inside the build directory is not part of what it copies.)
  local inside="${bundle#"$build"/}"
  [[ "$inside" != "$bundle" ]] || inside="/nothing"
  (cd "$build" && find . -path "./$inside" -prune -o \( -name CTestTestfile.cmake \
    -o -name '*_include.cmake' -o -name '*_tests.cmake' \) -print0 |
    xargs -0 cp --parents -t "$bundle")
  (cd "$build" && cp --parents -t "$bundle" "${gpu_files[@]}")
  # The Python package (extension and modules), for gpu-check's python phase.
  if [[ -d "$build/python_bindings/loom" ]]; then
    (cd "$build" && cp -r --parents -t "$bundle" python_bindings/loom)
  fi
  strip --strip-unneeded "$bundle/libloom.so"
  # Where the paths in CTest's files point now, for unpack to rewrite.
  printf '%s\n%s\n' "$build" "$LOOM_ROOT" >"$bundle/.origin"
  # The commit the build was made from (gpu-check.sh reports it): the GPU
  # machine's copy of the repository need not be at the same one.
  git -C "$LOOM_ROOT" describe --always --dirty --abbrev=7 >"$bundle/.commit" 2>/dev/null ||
    rm -f "$bundle/.commit"
  loom_log "packed $(du -sh "$bundle" | cut -f1) into $bundle (origin: $build)"
  if git -C "$LOOM_ROOT" check-ignore -q "$bundle" 2>/dev/null; then :; else
    loom_log "note: $bundle is not ignored by git; add it to .git/info/exclude to carry it"
  fi
}

unpack() {
  [[ -f "$bundle/.origin" ]] || die "$bundle has no .origin: make it with '$0 pack'"
  local old_build old_root
  old_build="$(sed -n 1p "$bundle/.origin")"
  old_root="$(sed -n 2p "$bundle/.origin")"
  # The build directory first: it usually lies inside the old root.
  find "$bundle" -name '*.cmake' -print0 |
    xargs -0 sed -i -e "s|$old_build|$bundle|g" -e "s|$old_root|$LOOM_ROOT|g"
  printf '%s\n%s\n' "$bundle" "$LOOM_ROOT" >"$bundle/.origin"
  loom_log "unpacked: run LOOM_BUILD_DIR=$bundle scripts/gpu-check.sh"
}

case "$action" in
pack) pack ;;
unpack) unpack ;;
*)
  echo "usage: $0 pack|unpack [BUNDLE]" >&2
  exit 2
  ;;
esac
