"""Ahead-of-time compilation from Python: static libraries a C program
links, and Python generators run by `python -m loom.gen`, which emit what
C++'s loom-gen emits for the same generator."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import loom

HERE = os.path.dirname(os.path.abspath(__file__))
CC = shutil.which("cc") or shutil.which("gcc")

C_MAIN = r"""
#include <stdio.h>
#include "brighten.h"
int main(void) {
    float in[3][5], out[3][5];
    for (int y = 0; y < 3; y++) for (int x = 0; x < 5; x++) in[y][x] = y * 10 + x;
    loom_dimension_t din[2] = {{0, 3, 5}, {0, 5, 1}}, dout[2] = {{0, 3, 5}, {0, 5, 1}};
    loom_buffer_t bin = {0}, bout = {0};
    bin.host = (uint8_t *)in; bin.type.code = loom_type_float; bin.type.bits = 32; bin.type.lanes = 1;
    bin.dimensions = 2; bin.dim = din;
    bout = bin; bout.host = (uint8_t *)out; bout.dim = dout;
    int r = brighten(&bin, 2.5f, &bout);
    if (r != 0) { printf("error %d\n", r); return 1; }
    for (int y = 0; y < 3; y++) for (int x = 0; x < 5; x++)
        if (out[y][x] != in[y][x] * 2.5f) { printf("wrong at %d %d\n", y, x); return 1; }
    printf("ok\n");
    return 0;
}
"""


def build_and_run_c(tmp_path, lib_dir):
    main = tmp_path / "main.c"
    main.write_text(C_MAIN)
    exe = tmp_path / "main"
    subprocess.run([CC, str(main), "-I", str(lib_dir), str(lib_dir / "brighten.a"), "-o", str(exe),
                    "-lpthread", "-lm", "-ldl"], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True)


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_python_generator_static_library_links_into_c(tmp_path):
    out = tmp_path / "py"
    r = subprocess.run([sys.executable, "-m", "loom.gen", os.path.join(HERE, "generators_example.py"),
                        "-g", "brighten", "-o", str(out), "-e", "static_library,stmt",
                        "vec=4", "target=host"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "brighten.a").exists() and (out / "brighten.stmt").exists()
    header = (out / "brighten.h").read_text()
    assert "int brighten(" in header
    run = build_and_run_c(tmp_path, out)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout


@pytest.mark.skipif(not os.environ.get("LOOM_GEN"), reason="LOOM_GEN (C++'s loom-gen) not given")
def test_python_generator_emits_what_cpp_loom_gen_emits(tmp_path):
    args = ["-g", "brighten", "-e", "h,stmt", "elem=uint8", "vec=16", "target=x86-64-linux-avx2"]
    cpp, py = tmp_path / "cpp", tmp_path / "py"
    r = subprocess.run([os.environ["LOOM_GEN"], *args, "-o", str(cpp)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "loom.gen", os.path.join(HERE, "generators_example.py"),
                        *args, "-o", str(py)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for f in ("brighten.h", "brighten.stmt"):
        assert (py / f).read_text() == (cpp / f).read_text(), f


def test_generator_params_and_jit(rng):
    sys.path.insert(0, HERE)
    try:
        import generators_example
    finally:
        sys.path.pop(0)
    g = generators_example.Brighten(elem="uint8", vec=16)
    k = g.compile(output_shape=0)
    names = [a.name for a in k.arguments()]
    assert names == ["input", "gain", "output"]
    v = rng.integers(0, 100, (3, 33)).astype(np.uint8)
    np.testing.assert_array_equal(k(v, 2.0), (v.astype(np.float32) * 2).astype(np.uint8))
    with pytest.raises(loom.CompileError, match="has no GeneratorParam 'bogus'"):
        generators_example.Brighten(bogus=1)
    with pytest.raises(loom.CompileError, match="outside"):
        generators_example.Brighten(vec="100")
    with pytest.raises(loom.CompileError, match="not a int"):
        generators_example.Brighten(vec="eight")


def test_driver_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "loom.gen", os.path.join(HERE, "generators_example.py"),
                        "-g", "nope", "-o", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and "no generator named 'nope'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "loom.gen", os.path.join(HERE, "generators_example.py"),
                        "-e", "bogus", "-o", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and 'Unknown emit kind "bogus"' in r.stderr


def test_pipeline_aot_methods(tmp_path):
    a = loom.BufferParam(loom.Float(32), 1, "a")
    x = loom.Var("x")
    f = loom.Func("f")
    f[x] = a[x] + 1.0
    p = loom.Pipeline(f)
    p.compile_to_static_library(str(tmp_path / "inc"), "inc")
    p.compile_to_object(str(tmp_path / "inc2.o"), "inc2")
    p.compile_to_header(str(tmp_path / "inc2.h"), "inc2")
    p.compile_to_assembly(str(tmp_path / "inc2.s"), "inc2")
    for name in ("inc.a", "inc.h", "inc2.o", "inc2.h", "inc2.s"):
        assert (tmp_path / name).stat().st_size > 0
