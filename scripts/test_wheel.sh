#!/usr/bin/env bash
# The Python package as a user gets it: builds a wheel (`pip wheel .`),
# installs it into a fresh virtual environment, checks that the extension
# needs no libLLVM, libcuda or libnvrtc, and runs the Python tests there
# (those needing PyTorch, ml_dtypes or a GPU are skipped unless present).
# Builds with ccache when it is installed, so that a machine that built
# Loom already compiles little. Takes the directory to work in (default: a
# new temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
echo "==> building the wheel in $work" >&2
if command -v ccache >/dev/null 2>&1; then
    export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
python3 -m pip wheel -q --no-deps -w "$work/wheels" "$root"
wheel="$(ls "$work"/wheels/loom_kernels-*.whl)"
echo "==> installing $(basename "$wheel") into a fresh virtual environment" >&2
rm -rf "$work/venv"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel" pytest
cd "$work"
ext="$("$work/venv/bin/python" -c "import loom, loom._loom as m; print(m.__file__)")"
if ldd "$ext" "$(dirname "$ext")/libloom.so" | grep -E "libLLVM|libcuda|libnvrtc|not found"; then
    echo "error: the installed package needs the libraries above" >&2
    exit 1
fi
"$work/venv/bin/python" -c "
import loom, numpy as np
x = loom.Var('x'); f = loom.Func('f'); f[x] = x * 2
print('import loom from the wheel:', loom.__file__, np.asarray(f.realize([4])))"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python_bindings/test"
