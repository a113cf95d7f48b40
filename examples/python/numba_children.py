"""Numba: a numba-cuda kernel calls a cdpc-compiled __device__ function that launches a child
grid, linked through numba-cuda's external-code support (cdpc's object and libcudadevrt).

Run on a machine with a GPU, numba-cuda, cffi and the cdpc package: python3 numba_children.py
Exits 0 when every element holds what its child wrote.
"""

from pathlib import Path

import numpy as np
from cffi import FFI
from numba import cuda

import cdpc
import cdpc.numba

ROWS, WIDTH = 64, 1000
ffi = FFI()

major, minor = cuda.get_current_device().compute_capability
compiled = cdpc.compile((Path(__file__).parent / "children.cdp").read_text(), arch=f"sm_{major}{minor}", filename="children.cdp")
# int launch_fill_row(int *result, int *data, int row, int width), numba's ABI: int32(CPointer(int32), int32, int32)
launch_fill_row = cdpc.numba.declare_device(compiled, "launch_fill_row")


@cuda.jit
def parent(data, rows, width, errors):
    row = cuda.grid(1)
    if row < rows:
        # launches fill_row<<<...>>>(data, row, width) from this numba thread
        errors[row] = launch_fill_row(ffi.from_buffer(data), row, width)


data = cuda.to_device(np.full(ROWS * WIDTH, -1, dtype=np.int32))
errors = cuda.to_device(np.full(ROWS, -1, dtype=np.int32))
parent[1, ROWS](data, ROWS, WIDTH, errors)
cuda.synchronize()

expected = (np.arange(ROWS)[:, None] * 1000 + np.arange(WIDTH)[None, :]).ravel()
got = data.copy_to_host()
launch_errors = errors.copy_to_host()
bad = int((got != expected).sum())
print(f"numba: {ROWS} child grids launched from a numba kernel, {got.size} elements, {bad} wrong, "
      f"launch errors {sorted(set(launch_errors.tolist()))}")
raise SystemExit(1 if bad or launch_errors.any() else 0)
