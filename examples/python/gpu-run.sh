#!/bin/sh
# The Python and Rust ways in, on a GPU machine: the cdpc wheel installed into a fresh virtual
# environment, the CuPy and Numba examples, and the Rust example through cudarc. Each checks
# its result. Writes $OUT/python-gpu.md (or ./python-gpu.md) for results/.
#
# Usage, from the repository root: sh examples/python/gpu-run.sh DIR
# DIR holds what was built on a machine with Rust (docs/PYTHON.md, "GPU run"):
#   cdpc-*.whl                  cargo xtask wheel
#   cffi-*.whl, pycparser-*.whl numba's ffi.from_buffer, for numba_children.py
#   cdpc-example-cudarc         cargo build --release -p cdpc-example-cudarc
#   numpy-*.whl (optional)      a NumPy that the machine's numba-cuda works with: on the H100
#                               image (2026-11), numba-cuda 0.30.4 fails to import under its
#                               NumPy 2.5 (np.row_stack is gone); NumPy 2.2.6 is carried
# CuPy, numba-cuda and numpy come from that Python's own packages;
# ptxas, nvlink and libcudadevrt from its CUDA toolkit (CUDA_HOME, default /usr/local/cuda):
# the NVIDIA wheels are over 100 MB, more than can be carried.
set -u
DIR=${1:?usage: sh examples/python/gpu-run.sh DIR}
DIR=$(cd "$DIR" && pwd)
ROOT=$(pwd)
REPORT=${OUT:-.}/python-gpu.md
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The Python that has CuPy and numba-cuda (PYTHON; on the GPU machine the one of its PyTorch
# environment): the wheel is installed with pip --target into a folder of its own on PYTHONPATH,
# since a venv made from that environment would not see its packages.
PY=${PYTHON:-python3}
SITE=$WORK/site
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PYTHONUNBUFFERED=1

"$PY" -m pip install -q --no-index --no-deps --no-cache-dir --target "$SITE" "$DIR"/cdpc-*.whl "$DIR"/cffi-*.whl "$DIR"/pycparser-*.whl $(ls "$DIR"/numpy-*.whl 2>/dev/null) || exit 1
export PYTHONPATH=$SITE

failed=0
{
    echo "# The Python package and the Rust build crate on a GPU"
    echo
    echo "Run by \`sh examples/python/gpu-run.sh\` on $(date -u +%Y-%m-%d)."
    echo
    echo "- device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    echo "- driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
    echo "- CUDA_HOME: $CUDA_HOME ($("$CUDA_HOME/bin/ptxas" --version | tail -1))"
    echo "- Python: $("$PY" --version), cdpc wheel $(cd "$DIR" && ls cdpc-*.whl), installed with --no-deps into a folder of its own (pip --target)"
    echo "- $("$PY" -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -1), $("$PY" -c 'import numba_cuda; print("numba-cuda", numba_cuda.__version__)' 2>&1 | tail -1)"
    echo
    echo "| step | result | output |"
    echo "|---|---|---|"
} > "$REPORT"

step() { # name, command...: runs outside the checkout, so nothing is found in it
    name=$1; shift
    log=$(cd /tmp && "$@" 2>&1); status=$?
    printf '%s\n%s\n\n' "== $name (exit $status)" "$log"
    if [ $status -eq 0 ]; then result=pass; else result="FAIL (exit $status)"; failed=1; fi
    printf '| %s | %s | %s |\n' "$name" "$result" "$(printf '%s' "$log" | tail -3 | tr '\n|' '  ')" >> "$REPORT"
}

step "import, compile a cubin (installed package)" "$PY" -c "import cdpc; c = cdpc.compile(open('$ROOT/examples/python/children.cdp').read()); print(cdpc.__file__, cdpc.cuda_home(), len(c.cubin), 'bytes of cubin')"
step "cdpc console script" "$SITE/bin/cdpc" "$ROOT/samples/recursion.cdp" -o "$WORK/recursion.cubin" -v
step "CuPy: parent kernel, 64 child grids" "$PY" "$ROOT/examples/python/cupy_children.py"
step "Numba: numba kernel calls a cdpc __device__ function that launches" "$PY" "$ROOT/examples/python/numba_children.py"
step "Rust: typed cudarc launcher from cdpc-build" "$DIR/cdpc-example-cudarc"

echo "report: $REPORT"
cat "$REPORT"
exit $failed
