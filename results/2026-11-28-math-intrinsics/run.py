"""Runs k_f64, k_f32 and k_f16 of cdpc's cubin (math.ll) and nvcc's (math.cu) on the same
inputs and compares every output byte for byte. Usage: python3 run.py cdpc.cubin nvcc.cubin"""
import sys
import numpy as np
import cupy as cp

UN = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "exp2", "exp10", "log", "log2", "log10"]
NAMES = UN + ["pow", "atan2", "sincos.sin", "sincos.cos", "modf.fraction", "modf.integral", "powi"]
INTS = ["llround", "llrint"]
N = 1 << 18
import os
ROUNDS = int(os.environ.get("ROUNDS", "1"))
rng = np.random.default_rng(20261128)

def inputs(dtype, bits):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, np.pi, -np.pi, 1e-300, -1e-300, 1e300, 5e-324, 1e-40, 3.4e38, 65504.0, 6e-8, 1e-5, 100.0, 710.0, -745.0, 89.0, -104.0, 11.0, -17.0], dtype=np.float64).astype(dtype)
    k = N // 4
    parts = [
        rng.uniform(-10, 10, k).astype(dtype),
        rng.uniform(-1, 1, k).astype(dtype),
        # Random bit patterns: every exponent, NaNs and denormals among them.
        rng.integers(0, 1 << bits, k, dtype=np.uint64).astype({64: np.uint64, 32: np.uint32, 16: np.uint16}[bits]).view(dtype),
        (rng.uniform(-1, 1, k) * 10.0 ** rng.integers(-8, 9, k)).astype(dtype),
    ]
    x = np.concatenate(parts)[: N - len(special)]
    return np.concatenate([special, x]).astype(dtype)

def run(path, name, x, y):
    mod = cp.RawModule(path=path)
    k = mod.get_function(name)
    dx, dy = cp.asarray(x), cp.asarray(y)
    out = cp.zeros(len(NAMES) * N, dtype=x.dtype)
    iout = cp.zeros(len(INTS) * N, dtype=np.int64)
    k(((N + 255) // 256,), (256,), (dx, dy, out, iout, np.int32(N)))
    cp.cuda.Device().synchronize()
    return out.get().reshape(len(NAMES), N), iout.get().reshape(len(INTS), N)

ok = True
def bf16_inputs():
    # bfloat's bits are float's upper half.
    return (inputs(np.float32, 32).view(np.uint32) >> 16).astype(np.uint16)
for name, dtype, bits in [k for _ in range(ROUNDS) for k in [("k_f64", np.float64, 64), ("k_f32", np.float32, 32), ("k_f16", np.float16, 16), ("k_bf16", np.uint16, 16)]]:
    if name == "k_bf16":
        x, y = bf16_inputs(), bf16_inputs()[::-1].copy()
    else:
        x, y = inputs(dtype, bits), inputs(dtype, bits)[::-1].copy()
    ours, our_ints = run(sys.argv[1], name, x, y)
    theirs, their_ints = run(sys.argv[2], name, x, y)
    for i, f in enumerate(NAMES):
        differ = int(np.count_nonzero(ours[i].view(np.uint8).reshape(N, -1) != theirs[i].view(np.uint8).reshape(N, -1), axis=None) and np.count_nonzero((ours[i].view(np.uint8).reshape(N, -1) != theirs[i].view(np.uint8).reshape(N, -1)).any(axis=1)))
        if differ:
            ok = False
            at = np.nonzero((ours[i].view(np.uint8).reshape(N, -1) != theirs[i].view(np.uint8).reshape(N, -1)).any(axis=1))[0][:3]
            print(f"{name} {f}: {differ} of {N} differ, e.g. x={x[at]} y={y[at]}: cdpc {ours[i][at]} nvcc {theirs[i][at]}")
        else:
            print(f"{name} {f}: all {N} equal")
    for i, f in enumerate(INTS):
        differ = int(np.count_nonzero(our_ints[i] != their_ints[i]))
        ok &= differ == 0
        print(f"{name} {f}: " + (f"{differ} of {N} differ" if differ else f"all {N} equal"))
print("SAME" if ok else "DIFFERENT")
