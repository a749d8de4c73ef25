"""The Python tutorial (tutorial/python/lesson_*.py) runs: each lesson checks
its own results and exits non-zero on a mismatch."""
import glob
import os
import subprocess
import sys

import pytest

import loom

TUTORIAL = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                         "tutorial", "python"))
LESSONS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(TUTORIAL, "lesson_*.py")))


def test_the_lessons_are_there():
    for name in ("lesson_01_basics.py", "lesson_03_reductions.py", "lesson_05_compute_at.py",
                 "lesson_10_rolling_update.py", "lesson_torch_custom_op.py"):
        assert name in LESSONS, f"{name} is missing from {TUTORIAL}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_runs(lesson):
    if "torch" in lesson:
        pytest.importorskip("torch")
    env = os.environ.copy()
    # The lessons import the same loom as this test, however it was found.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(loom.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    r = subprocess.run([sys.executable, os.path.join(TUTORIAL, lesson)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (f"{lesson} exited with {r.returncode}\n--- stdout\n"
                               f"{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-4000:]}")
    assert "passed." in r.stdout.splitlines()[-1], r.stdout[-2000:]
