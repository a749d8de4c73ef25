"""The bindings' benchmarks check their kernels without a GPU: the PyTorch
attention comparison on the CPU (--quick), the tensor-core GEMM bench on the
stand-in driver (--standin, which runs the kernels' CUDA on the CPU). The
same scripts time them on a GPU in scripts/gpu-check.sh."""
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench")
DRIVER = os.environ.get("LOOM_FAKE_CUDA_DRIVER", "")


def test_torch_attention_compare_checks_on_cpu():
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, os.path.join(BENCH, "torch_attention_compare.py"),
                        "--device", "cpu", "--quick", "--kv-heads", "4"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("(ok)") == 2, r.stdout
    assert "decode 16 query heads over 4" in r.stdout, r.stdout


@pytest.mark.skipif(not DRIVER, reason="LOOM_FAKE_CUDA_DRIVER (the stand-in driver) not given")
def test_gemm_bench_checks_on_the_stand_in():
    env = dict(os.environ, LOOM_CUDA_DRIVER=DRIVER, LOOM_FAKE_CUDA_RUN_KERNELS="1")
    r = subprocess.run([sys.executable, os.path.join(BENCH, "gemm_bench.py"), "--standin"],
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("max error") == 4, r.stdout
