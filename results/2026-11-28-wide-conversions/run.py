"""Runs conv.cu's kernel from cdpc's cubin and nvcc's on the same inputs and compares every
output byte for byte, and checks every output of both (and half.ll's, which nvcc has no
counterpart of) against Python's integers: conversions to floating point rounded once to
nearest even, conversions to integers truncated.
Then sat.ll's saturating conversions (Rust's `as`) against Python's: NaN 0, values past the
range their nearest bound, the rest truncated.
Usage: python3 run.py cdpc-conv.cubin nvcc-conv.cubin cdpc-half.cubin [cdpc-sat.cubin]"""
import sys
from fractions import Fraction
import numpy as np
import cupy as cp

ours_path, theirs_path, half_path = sys.argv[1:4]
rng = np.random.default_rng(20261128)
M128 = (1 << 128) - 1

def special_ints():
    out = [0, 1, 2, 3, (1 << 64) - 1, 1 << 64, (1 << 64) + 1, (1 << 127) - 1, 1 << 127, M128]
    # Halfway and near-halfway cases for 53, 24, 11 and 8 significant bits at many magnitudes.
    for p in (53, 24, 11, 8):
        for top in (p + 1, p + 2, 64, 65, 66, 90, 127, 128):
            base = 1 << (top - 1)
            ulp = 1 << (top - p)
            for d in (ulp // 2, ulp // 2 - 1, ulp // 2 + 1, ulp + ulp // 2, 0, ulp - 1):
                out.append((base + d) & M128)
                out.append((base | (1 << (top - p)) | d) & M128)
    return out

def random_ints(n):
    out = []
    for _ in range(n):
        bits = int(rng.integers(0, 129))
        v = int(rng.integers(0, 1 << 62)) << 66 | int(rng.integers(0, 1 << 62)) << 4 | int(rng.integers(0, 16))
        out.append(v >> (128 - bits) if bits else 0)
    return out

ints = special_ints()
ints += random_ints(65536 - len(ints))
N = len(ints)

def words(values):
    a = np.zeros(2 * len(values), dtype=np.uint64)
    for i, v in enumerate(values):
        v &= M128
        a[2 * i], a[2 * i + 1] = v & 0xFFFFFFFFFFFFFFFF, v >> 64
    return a

def from_words(a, signed):
    out = []
    for lo, hi in a.reshape(-1, 2):
        v = int(lo) | (int(hi) << 64)
        out.append(v - (1 << 128) if signed and v >> 127 else v)
    return out

def signed(v):
    return v - (1 << 128) if v >> 127 else v

def round_to(v, p, emax):
    """|v| rounded to nearest even with p significant bits; None past the largest finite."""
    m = abs(v)
    if m == 0:
        return 0
    shift = m.bit_length() - p
    if shift > 0:
        q, r = m >> shift, m & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        m = q << shift
    if m >= 1 << (emax + 1):
        return None
    return m if v > 0 else -m

def expect_float(v, dtype):
    p, emax = {np.float64: (53, 1023), np.float32: (24, 127), np.float16: (11, 15), "bf16": (8, 127)}[dtype]
    r = round_to(v, p, emax)
    if r is None:
        f = float("inf") if v > 0 else float("-inf")
    else:
        f = float(r)  # exact: r has at most 53 significant bits
    if dtype == "bf16":
        return int(np.array(f, dtype=np.float32).view(np.uint32)) >> 16
    return np.array(f, dtype=dtype).view({np.float64: np.uint64, np.float32: np.uint32, np.float16: np.uint16}[dtype]).item()

# Floating-point inputs: every magnitude below 2^127 and small values, both signs.
exps = rng.integers(-4, 127, N)
d = (rng.uniform(1, 2, N) * np.exp2(exps.astype(np.float64)) * rng.choice([-1.0, 1.0], N)).astype(np.float64)
d[:8] = [0.0, -0.0, 0.5, -0.99, 2.0**64, 2.0**64 + 4096.0, -(2.0**127), 2.0**127 - 2.0**74]
f = d.astype(np.float32)
f = np.where(np.abs(f) >= np.float32(2.0**127), np.float32(2.0**126), f).astype(np.float32)

def run_conv(path):
    k = cp.RawModule(path=path).get_function("conv")
    a = cp.asarray(words([signed(v) for v in ints]))
    u = cp.asarray(words(ints))
    od = cp.zeros(2 * N, dtype=np.float64)
    of = cp.zeros(2 * N, dtype=np.float32)
    oa = cp.zeros(4 * N, dtype=np.uint64)
    ou = cp.zeros(4 * N, dtype=np.uint64)
    k(((N + 255) // 256,), (256,), (a, u, cp.asarray(d), cp.asarray(f), od, of, oa, ou, np.int32(N)))
    cp.cuda.Device().synchronize()
    return {"double": od.get(), "float": of.get(), "int128": oa.get(), "uint128": ou.get()}

ok = True
ours, theirs = run_conv(ours_path), run_conv(theirs_path)
for key in ours:
    same = ours[key].tobytes() == theirs[key].tobytes()
    ok &= same
    differ = "" if same else f": {int(np.count_nonzero(ours[key] != theirs[key]))} values differ"
    print(f"conv {key}: {'cdpc and nvcc byte for byte the same' if same else 'DIFFER'}{differ}")
for label, got in (("cdpc", ours), ("nvcc", theirs)):
    bad = 0
    od, of = got["double"].view(np.uint64), got["float"].view(np.uint32)
    for i, v in enumerate(ints):
        bad += od[2 * i] != expect_float(signed(v), np.float64)
        bad += od[2 * i + 1] != expect_float(v, np.float64)
        bad += of[2 * i] != expect_float(signed(v), np.float32)
        bad += of[2 * i + 1] != expect_float(v, np.float32)
    ia, iu = from_words(got["int128"], True), from_words(got["uint128"], False)
    for i in range(N):
        bad += ia[2 * i] != int(Fraction(float(d[i])))  # truncation toward zero
        bad += ia[2 * i + 1] != int(Fraction(float(f[i])))
        bad += iu[2 * i] != int(Fraction(abs(float(d[i]))))
        bad += iu[2 * i + 1] != int(Fraction(abs(float(f[i]))))
    ok &= bad == 0
    print(f"conv from {label}: {'every output as Python rounds or truncates it' if bad == 0 else f'{bad} outputs NOT as Python computes them'} ({8 * N} outputs)")

# half and bfloat (cdpc only; the oracle is Python's).
hbits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)[:N]
h = hbits.view(np.float16)
h = np.where(np.isfinite(h), h, np.float16(0)).astype(np.float16)
bf = (np.clip(d, -(2.0**126), 2.0**126).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
k = cp.RawModule(path=half_path).get_function("half_conv")
oh, obf, oi = cp.zeros(2 * N, dtype=np.uint16), cp.zeros(2 * N, dtype=np.uint16), cp.zeros(4 * N, dtype=np.uint64)
k(((N + 255) // 256,), (256,), (cp.asarray(words([signed(v) for v in ints])), cp.asarray(h.view(np.uint16)), cp.asarray(bf), oh, obf, oi, np.int32(N)))
cp.cuda.Device().synchronize()
oh, obf, oi = oh.get(), obf.get(), from_words(oi.get(), True)
bad = 0
for i, v in enumerate(ints):
    bad += oh[2 * i] != expect_float(signed(v), np.float16)
    bad += oh[2 * i + 1] != expect_float(v, np.float16)
    bad += obf[2 * i] != expect_float(signed(v), "bf16")
    bad += obf[2 * i + 1] != expect_float(v, "bf16")
    bad += oi[2 * i] != int(Fraction(float(h[i])))
    bad += oi[2 * i + 1] != int(Fraction(float((np.uint32(bf[i]) << 16).view(np.float32))))
ok &= bad == 0
print(f"half and bfloat: {'every output as Python rounds or truncates it' if bad == 0 else f'{bad} outputs NOT as Python computes them'} ({6 * N} outputs)")
# Saturating conversions (cdpc only; the oracle is Python's).
if len(sys.argv) > 4:
    sd = np.concatenate([np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, -0.5, -1.0, 0.99, 2.0**127, -(2.0**127), 2.0**128, -(2.0**128), 2.0**127 - 2.0**74, 2.0**128 - 2.0**75, -(2.0**127) - 2.0**75, 1e300, -1e300, 2.0**64]), d])[:N]
    sf = sd.astype(np.float32)
    k = cp.RawModule(path=sys.argv[4]).get_function("sat")
    out = cp.zeros(8 * N, dtype=np.uint64)
    k(((N + 255) // 256,), (256,), (cp.asarray(sd), cp.asarray(sf), out, np.int32(N)))
    cp.cuda.Device().synchronize()
    words_out = out.get().reshape(N, 8)
    def saturate(x, is_signed):
        lo, hi = (-(1 << 127), (1 << 127) - 1) if is_signed else (0, M128)
        if x != x:
            return 0
        if x in (float("inf"), float("-inf")):
            return hi if x > 0 else lo
        return max(lo, min(hi, int(Fraction(float(x)))))
    bad = 0
    for i in range(N):
        got = from_words(words_out[i][0:2], True) + from_words(words_out[i][2:4], False) + from_words(words_out[i][4:6], True) + from_words(words_out[i][6:8], False)
        want = [saturate(float(sd[i]), True), saturate(float(sd[i]), False), saturate(float(sf[i]), True), saturate(float(sf[i]), False)]
        bad += sum(g != w for g, w in zip(got, want))
    ok &= bad == 0
    print(f"saturating: {'every output as Python saturates and truncates it' if bad == 0 else f'{bad} outputs NOT as Python computes them'} ({4 * N} outputs)")
print("ALL SAME" if ok else "SOME DIFFER")
sys.exit(0 if ok else 1)
