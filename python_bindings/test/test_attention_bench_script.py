"""python_bindings/bench/attention_bench.py without a GPU: its --self-check
(the FlexAttention score_mod / mask_mod and SDPA arguments it times, and
Loom's CPU kernel of each variant, against the reference math of
apps/attention/variants_reference.h), its exit status 77 where there is no
CUDA device, and its messages for bad options. scripts/gpu-check.sh times it
on a GPU."""
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                      "attention_bench.py")


def run(*args, env=None):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=600, env=env)


def test_self_check_passes_on_the_cpu():
    pytest.importorskip("torch")
    r = run("--self-check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("self-check: ok"), r.stdout
    # Six variants and Neptune's two composites, at three shapes each.
    checked = [line for line in r.stdout.splitlines() if line.endswith("  ok")]
    assert len(checked) == 8 * 3, r.stdout
    # Loom's CPU kernel ran for every variant, composites too, at every shape.
    assert sum(" loom " in line for line in checked) == 8 * 3, r.stdout


def test_without_cuda_it_is_skipped():
    # Hide any GPU: this must not start the benchmark where there is one.
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    r = run("--quick", env=env)
    assert r.returncode == 77, r.stdout + r.stderr
    assert "skipped" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--suite", "nope"], "invalid choice: 'nope'"),
    (["--seqs", "1024,4k"], "--seqs: '4k' is not a valid entry"),
    (["--seqs", "0"], "--seqs: '0' is not a positive number"),
    (["--dtypes", "fp8"], "--dtypes: 'fp8' is not one of fp16, bf16"),
    (["--head-dims", "72"], "--head-dims: 72 is no multiple of 16"),
])
def test_bad_options_say_what_is_wrong(args, message):
    r = run(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
