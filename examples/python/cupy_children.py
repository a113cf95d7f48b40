"""CuPy: a parent kernel compiled by cdpc launches one child grid per row; CuPy owns the memory.

Run on a machine with a GPU, CuPy and the cdpc package: python3 cupy_children.py
Exits 0 when every element holds what its child wrote.
"""

from pathlib import Path

import cupy as cp
import numpy as np

import cdpc
import cdpc.cupy

ROWS, WIDTH = 64, 1000

compiled = cdpc.compile((Path(__file__).parent / "children.cdp").read_text(), filename="children.cdp")
data = cp.full(ROWS * WIDTH, -1, dtype=cp.int32)

# The one call: load the cubin into CuPy and launch, arguments checked against the signature.
module = cdpc.cupy.launch(compiled, "fill_rows", grid=1, block=ROWS, args=(data, ROWS, WIDTH))
cp.cuda.Device().synchronize()

expected = (np.arange(ROWS)[:, None] * 1000 + np.arange(WIDTH)[None, :]).ravel()
got = data.get()
bad = int((got != expected).sum())
print(f"cupy: {ROWS} child grids from one parent kernel, {got.size} elements, {bad} wrong")

# A wrong argument type is caught before the launch, naming the parameter.
try:
    module.launch("fill_rows", 1, ROWS, (data.astype(cp.float32), ROWS, WIDTH))
    print("cupy: a float32 array for `int *data` was NOT refused")
    bad += 1
except TypeError as e:
    print(f"cupy: refused as expected: {e}")
module.close()
raise SystemExit(1 if bad else 0)
