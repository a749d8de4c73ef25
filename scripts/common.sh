# shellcheck shell=bash
# Shared by scripts/test.sh and scripts/demo.sh (sourced, not run): installs
# what a fresh Debian 12 machine lacks, then configures and builds Loom.
#
# Environment:
#   LOOM_BUILD_DIR   build directory (default: build, relative to the repo root)
#   LOOM_BUILD_TYPE  CMake build type (default: Release)
#   LOOM_JOBS        parallel build/test jobs (default: number of cores)
#   LOOM_CMAKE_ARGS  extra arguments for the CMake configure step
#   LOOM_NO_INSTALL  set to 1 to skip the package check and install

LOOM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOOM_BUILD_DIR="${LOOM_BUILD_DIR:-build}"
case "$LOOM_BUILD_DIR" in
/*) ;;
*) LOOM_BUILD_DIR="$LOOM_ROOT/$LOOM_BUILD_DIR" ;;
esac
LOOM_BUILD_TYPE="${LOOM_BUILD_TYPE:-Release}"
LOOM_JOBS="${LOOM_JOBS:-$(nproc 2>/dev/null || echo 2)}"

loom_log() { echo "==> $*" >&2; }

# Debian packages Loom needs to build and test. llvm-14-dev brings the
# libraries its static components link against (libz3-dev, libxml2-dev,
# libtinfo-dev, libffi-dev); zlib1g-dev is listed because LLVM links -lz.
LOOM_PACKAGES=(
    cmake ninja-build g++ lld llvm-14-dev
    libgtest-dev libbenchmark-dev zlib1g-dev
    python3 ccache
)

loom_pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

loom_install_deps() {
    if [ "${LOOM_NO_INSTALL:-0}" = "1" ]; then
        return 0
    fi
    if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        loom_log "not a Debian-like system: skipping the package check; install by hand: ${LOOM_PACKAGES[*]}"
        return 0
    fi
    local missing=()
    local p
    for p in "${LOOM_PACKAGES[@]}"; do
        loom_pkg_installed "$p" || missing+=("$p")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            loom_log "missing packages (${missing[*]}) and neither root nor sudo: install them by hand"
            return 1
        fi
    fi
    loom_log "installing missing packages: ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}"
}

# Python packages the bindings build with (nanobind) and their tests use.
# PyTorch (CPU is enough) is installed unless LOOM_NO_TORCH=1: the tests of
# the custom op and tensor interop are skipped without it.
loom_install_python_deps() {
    if [ "${LOOM_NO_INSTALL:-0}" = "1" ]; then
        return 0
    fi
    local wanted=(nanobind scikit-build-core numpy pytest ml_dtypes)
    if [ "${LOOM_NO_TORCH:-0}" != "1" ]; then
        wanted+=(torch)
    fi
    local missing=()
    local p
    for p in "${wanted[@]}"; do
        python3 -c "import ${p//-/_}" >/dev/null 2>&1 || missing+=("$p")
    done
    # nvdisasm, for the tests that read the SASS of tensor-core kernels.
    if ! command -v nvdisasm >/dev/null 2>&1 &&
        ! python3 -c "import glob, nvidia, sys; sys.exit(not glob.glob(nvidia.__path__[0] + '/cu*/bin/nvdisasm'))" >/dev/null 2>&1; then
        missing+=(nvidia-cuda-nvdisasm)
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        loom_log "installing missing Python packages: ${missing[*]}"
        python3 -m pip install -q "${missing[@]}"
    fi
}

loom_configure() {
    local args=(-S "$LOOM_ROOT" -B "$LOOM_BUILD_DIR" -DCMAKE_BUILD_TYPE="$LOOM_BUILD_TYPE")
    # A build directory configured earlier keeps its generator; a new one uses Ninja.
    if [ ! -f "$LOOM_BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
        args+=(-G Ninja)
    fi
    if command -v ccache >/dev/null 2>&1; then
        args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    # The bindings are built for the python3 that runs the tests.
    if command -v python3 >/dev/null 2>&1; then
        args+=(-DPython_EXECUTABLE="$(command -v python3)")
    fi
    if [ -d /usr/lib/llvm-14/lib/cmake/llvm ]; then
        args+=(-DLLVM_DIR=/usr/lib/llvm-14/lib/cmake/llvm)
    fi
    # shellcheck disable=SC2206  # word splitting of the extra arguments is intended
    args+=(${LOOM_CMAKE_ARGS:-})
    loom_log "configuring in $LOOM_BUILD_DIR"
    cmake "${args[@]}"
}

# With arguments, builds only those targets (scripts/bench.sh needs one).
loom_build() {
    loom_log "building ${*:-everything} with $LOOM_JOBS jobs"
    cmake --build "$LOOM_BUILD_DIR" --parallel "$LOOM_JOBS" ${1:+--target "$@"}
}
