"""The Python demo runs and checks its own result (small size)."""
import subprocess
import sys


def test_demo_quick():
    r = subprocess.run([sys.executable, "-m", "loom.demo", "--quick"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fused / materialized time" in r.stdout and "repair" in r.stdout
