#!/usr/bin/env bash
# The GPU check, on a machine with an NVIDIA GPU: runs the tests labelled
# `gpu` (kernels against the reference interpreter), then runs them once more
# under compute-sanitizer (memcheck), then the GPU benchmarks that are built
# and the comparison with PyTorch eager and torch.compile
# (apps/bench/torch_compare.py, with python3 or $LOOM_PYTHON), and writes a
# report.
#
#   scripts/gpu-check.sh [--only PHASES] [report-file]
#
# PHASES, comma-separated (default: all of them, in this order): tests,
# sanitizer, bench, torch, python (the Python tests, CUDA ones included, and
# python_bindings/bench/torch_attention_compare.py: Loom's attention called
# through the bindings on CUDA tensors, next to PyTorch's SDPA;
# gemm_bench.py: the tensor-core GEMM next to cuBLAS; and attention_bench.py
# --quick, then --suite neptune: FlashAttention on tensor cores next to
# SDPA's named backends and FlexAttention). Each phase fits one call of a
# lent machine (ten minutes); run them in separate calls where the whole
# does not. The report
# goes to report-file (default: $LOOM_BUILD_DIR/gpu-check-report.txt), or,
# with --only, to gpu-check-<phases>.txt there.
#
# Builds Loom first (scripts/common.sh) unless LOOM_BUILD_DIR already holds a
# build. On a GPU machine without LLVM, build elsewhere and bring what the
# check needs: scripts/gpu-bundle.sh packs it into .gpu-bundle (about 50 MB;
# libloom.so carries LLVM inside it, so nothing needs libLLVM at run time),
# and `scripts/gpu-bundle.sh unpack` there makes it a build directory again.
# Exits non-zero if a test or the sanitizer fails.
#
# LOOM_GPU_CHECK_PHASE_SECONDS stops each phase's command after that many
# seconds (default: no limit), so that a phase that would outlast a
# machine's time still leaves its part of the report: the report is
# written phase by phase, and a stopped phase says so and counts as failed.
#
# LOOM_GPU_CHECK_BENCHES (default: every GPU benchmark built) names the
# benchmarks the bench phase runs, space-separated (gpu_memory_bound_bench
# alone, say); LOOM_GPU_CHECK_MEMORY_BOUND_ONLY is passed to
# gpu_memory_bound_bench as its --only ('registers|aligned': those kernels).
#
# LOOM_GPU_CHECK_ATTENTION_SECONDS (default: 300) is the time the python
# phase gives attention_bench.py, 55% to its default set and 45% to
# Neptune's operators, as each run's --budget: a run starts no row after
# its budget (a row may take some 20 s more, mostly FlexAttention's
# compile) and lists what it skipped.
#
# LOOM_GPU_CHECK_JOBS (default: 4) is how many processes share the GPU: the
# tests run that many at a time (ctest -j), and the sanitizer splits the
# test binary into that many shards (GoogleTest's GTEST_TOTAL_SHARDS), one
# compute-sanitizer each, side by side. Memcheck slows every kernel and
# every allocation; one process at a time leaves most of the machine idle.
set -uo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

phases="tests,sanitizer,bench,torch,python"
if [[ "${1:-}" == "--only" ]]; then
  phases="${2:?--only needs a comma-separated list: tests,sanitizer,bench,torch,python}"
  shift 2
  for p in ${phases//,/ }; do
    case "$p" in
    tests | sanitizer | bench | torch | python) ;;
    *)
      echo "gpu-check: unknown phase '$p'; the phases are tests, sanitizer, bench, torch, python" >&2
      exit 2
      ;;
    esac
  done
fi
runs() { [[ ",$phases," == *",$1,"* ]]; }

phase_seconds="${LOOM_GPU_CHECK_PHASE_SECONDS:-0}"
jobs="${LOOM_GPU_CHECK_JOBS:-4}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || {
  echo "gpu-check: LOOM_GPU_CHECK_JOBS must be a positive number, not '$jobs'" >&2
  exit 2
}
attention_seconds="${LOOM_GPU_CHECK_ATTENTION_SECONDS:-300}"
[[ "$attention_seconds" =~ ^[1-9][0-9]*$ ]] || {
  echo "gpu-check: LOOM_GPU_CHECK_ATTENTION_SECONDS must be a positive number, not '$attention_seconds'" >&2
  exit 2
}
# Runs a phase's command within the phase's time (timeout signals the whole
# process group, so ctest's and the sanitizer's children stop too).
limited() {
  timeout --kill-after=10 "$phase_seconds" "$@"
  local rc=$?
  if [[ $rc == 124 || $rc == 137 ]]; then
    echo "(stopped after ${phase_seconds} s: LOOM_GPU_CHECK_PHASE_SECONDS)"
  fi
  return $rc
}

if [[ ! -x "$LOOM_BUILD_DIR/test/loom_test_gpu" ]]; then
  loom_install_deps
  loom_configure
  loom_build
fi
# A carried build keeps the RUNPATH of where it was built.
export LD_LIBRARY_PATH="$LOOM_BUILD_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
default_report="$LOOM_BUILD_DIR/gpu-check-report.txt"
[[ "$phases" == "tests,sanitizer,bench,torch,python" ]] ||
  default_report="$LOOM_BUILD_DIR/gpu-check-${phases//,/-}.txt"
report="${1:-$default_report}"
report="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
cd "$LOOM_BUILD_DIR" || exit 1
status=0

{
  # A carried build (scripts/gpu-bundle.sh) says which commit it was built
  # from; otherwise the build is this checkout's.
  commit="$(cat "$LOOM_BUILD_DIR/.commit" 2>/dev/null ||
    git -C "$LOOM_ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo '?')"
  echo "# Loom GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), built from commit $commit"
  echo
  echo "## Device"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>&1 \
    || echo "nvidia-smi failed: no GPU or no driver"
} >"$report"

if runs tests; then
  loom_log "gpu tests"
  {
    echo
    echo "## Tests (ctest -L '^gpu$')"
    # The label exactly: gpu_on_cpu (the same tests on the CPU stand-in) runs
    # in every test run already.
    limited ctest -L '^gpu$' -j "$jobs" --output-on-failure 2>&1 | tail -n 40
  } >>"$report"
  grep -q "100% tests passed" "$report" || status=1
  if grep -q "(Skipped)" "$report"; then
    echo "(tests were skipped: this machine has no usable GPU)" >>"$report"
    status=1
  fi
fi

if runs sanitizer; then
  loom_log "compute-sanitizer"
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  {
    echo
    echo "## compute-sanitizer --tool memcheck test/loom_test_gpu ($jobs shards side by side)"
    if [[ -x "$sanitizer" ]]; then
      # Each shard's output goes to its own log; the report takes each
      # one's tail, and the phase's status is the worst of theirs.
      logs="$(mktemp -d)"
      for ((shard = 0; shard < jobs; shard++)); do
        GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$shard \
          limited "$sanitizer" --tool memcheck --error-exitcode 99 ./test/loom_test_gpu \
          >"$logs/$shard.log" 2>&1 &
      done
      worst=0
      for ((shard = 0; shard < jobs; shard++)); do
        wait -n
        rc=$?
        ((rc > worst)) && worst=$rc
      done
      for ((shard = 0; shard < jobs; shard++)); do
        echo "### shard $shard of $jobs"
        tail -n 12 "$logs/$shard.log"
      done
      rm -rf "$logs"
      echo "exit status: $worst"
    else
      echo "compute-sanitizer not found"
    fi
  } >>"$report"
  grep -q "^exit status: 0$" "$report" || status=1
fi

if runs bench; then
  loom_log "GPU benchmarks"
  {
    echo
    echo "## Benchmarks"
    found=0
    linebuffered=()
    command -v stdbuf >/dev/null && linebuffered=(stdbuf -oL)
    for bench in apps/bench/*gpu*; do
      [[ -x "$bench" ]] || continue
      name="${bench##*/}"
      if [[ -n "${LOOM_GPU_CHECK_BENCHES:-}" && " $LOOM_GPU_CHECK_BENCHES " != *" $name "* ]]; then
        continue
      fi
      found=1
      args=()
      if [[ "$name" == gpu_memory_bound_bench && -n "${LOOM_GPU_CHECK_MEMORY_BOUND_ONLY:-}" ]]; then
        args=(--only "$LOOM_GPU_CHECK_MEMORY_BOUND_ONLY")
      fi
      echo "### $bench ${args[*]+"${args[*]}"}"
      # Line-buffered, so that a benchmark stopped at the phase's limit
      # keeps the lines it printed. (gpu_memory_bound_bench prints about
      # 90: each kernel's check and timing on one line, and its summary.)
      limited ${linebuffered[@]+"${linebuffered[@]}"} "$bench" ${args[@]+"${args[@]}"} 2>&1 |
        tail -n 150
    done
    [[ $found == 1 ]] || echo "(no GPU benchmark is built, or LOOM_GPU_CHECK_BENCHES names none)"
  } >>"$report"
fi

if runs torch; then
  loom_log "PyTorch comparison"
  {
    echo
    echo "## Loom vs PyTorch eager and torch.compile (apps/bench/torch_compare.py)"
    lib="apps/bench/libloom_torch_kernels.so"
    if [[ -f "$lib" ]]; then
      limited "${LOOM_PYTHON:-python3}" "$LOOM_ROOT/apps/bench/torch_compare.py" --lib "$lib" --device cuda \
        2>&1 | grep -v "Warning\|warn(" | tail -n 100
      echo "torch_compare exit status: ${PIPESTATUS[0]}"
    else
      echo "(libloom_torch_kernels.so is not built)"
    fi
  } >>"$report"
  grep -q "^torch_compare exit status: [1-9]" "$report" && status=1
fi

if runs python; then
  loom_log "Python tests and the bindings' PyTorch comparison"
  {
    echo
    echo "## Python: pytest python_bindings/test, then torch_attention_compare.py"
    # (and gemm_bench.py and attention_bench.py below)
    py="${LOOM_PYTHON:-python3}"
    if PYTHONPATH="python_bindings" "$py" -c "import loom" 2>/dev/null; then
      PYTHONPATH="python_bindings" limited "$py" -m pytest -q -p no:cacheprovider \
        "$LOOM_ROOT/python_bindings/test" 2>&1 | tail -n 40
      echo "pytest exit status: ${PIPESTATUS[0]}"
      PYTHONPATH="python_bindings" limited "$py" \
        "$LOOM_ROOT/python_bindings/bench/torch_attention_compare.py" --device cuda 2>&1 |
        grep -v "Warning\|warn(" | tail -n 40
      echo "torch_attention_compare exit status: ${PIPESTATUS[0]}"
      echo
      echo "## The tensor-core GEMM against cuBLAS: gemm_bench.py"
      PYTHONPATH="python_bindings" limited "$py" \
        "$LOOM_ROOT/python_bindings/bench/gemm_bench.py" 2>&1 | grep -v "Warning\|warn(" | tail -n 40
      echo "gemm_bench exit status: ${PIPESTATUS[0]}"
      echo
      echo "## FlashAttention on tensor cores against SDPA and FlexAttention: attention_bench.py --quick"
      PYTHONPATH="python_bindings" limited "$py" "$LOOM_ROOT/python_bindings/bench/attention_bench.py" \
        --quick --budget $((attention_seconds * 55 / 100)) 2>&1 | grep -v "Warning\|warn(" | tail -n 200
      echo "attention_bench exit status: ${PIPESTATUS[0]}"
      echo
      echo "## Neptune's ten attention operators: attention_bench.py --suite neptune"
      PYTHONPATH="python_bindings" limited "$py" "$LOOM_ROOT/python_bindings/bench/attention_bench.py" \
        --suite neptune --budget $((attention_seconds * 45 / 100)) 2>&1 |
        grep -v "Warning\|warn(" | tail -n 100
      echo "attention_bench_neptune exit status: ${PIPESTATUS[0]}"
    else
      echo "(the Python package does not import here: built for another Python, or not built)"
    fi
  } >>"$report"
  grep -q "^pytest exit status: [1-9]" "$report" && status=1
  grep -q "^torch_attention_compare exit status: [1-9][0-9]*$" "$report" &&
    ! grep -q "^torch_attention_compare exit status: 77$" "$report" && status=1
  grep -q "^gemm_bench exit status: [1-9][0-9]*$" "$report" &&
    ! grep -q "^gemm_bench exit status: 77$" "$report" && status=1
  for name in attention_bench attention_bench_neptune; do
    grep -q "^$name exit status: [1-9][0-9]*$" "$report" &&
      ! grep -q "^$name exit status: 77$" "$report" && status=1
  done
fi

cat "$report"
loom_log "report: $report"
exit $status
