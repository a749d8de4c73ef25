"""The bindings' PyTorch comparison checks its kernels on the CPU (--quick):
the same script times them on a GPU in scripts/gpu-check.sh."""
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                      "torch_attention_compare.py")


def test_torch_attention_compare_checks_on_cpu():
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--quick"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("(ok)") == 2, r.stdout
