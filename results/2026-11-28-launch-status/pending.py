"""err_pending_limit with equal and unequal work: one process per (build, pool, spin).

Usage: python3 pending.py CUBIN POOL SPIN RUNS
Prints one line: median ms over RUNS runs (events around launch and sync), refused and ran
medians with their ranges, and whether ran + refused == 32768 in every run.
"""
import sys, statistics
import cupy as cp
rt = cp.cuda.runtime
cubin, pool, spin, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rt.deviceSetLimit(0x04, pool)          # cudaLimitDevRuntimePendingLaunchCount
rt.deviceSetLimit(0x02, 1 << 20 if pool <= 32 else 256 << 20)  # cudaLimitMallocHeapSize
mod = cp.RawModule(path=cubin)
parent = mod.get_function("parent")
rows = []
for i in range(runs + 2):
    codes = cp.zeros(32768, cp.int32); fail = cp.zeros(1, cp.uint32); ran = cp.zeros(1, cp.uint32)
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record(); parent((128,), (256,), (codes, fail, ran, cp.int64(spin))); e.record(); e.synchronize()
    if i >= 2:
        rows.append((cp.cuda.get_elapsed_time(s, e), int(fail.get()[0]), int(ran.get()[0])))
ms = [r[0] for r in rows]; f = [r[1] for r in rows]; r = [r[2] for r in rows]
ok = all(a + b == 32768 for _, a, b in rows)
print(f"RESULT {cubin} pool={pool} spin={spin} ms={statistics.median(ms):.4f} min={min(ms):.4f} "
      f"refused={statistics.median(f)}[{min(f)},{max(f)}] ran={statistics.median(r)}[{min(r)},{max(r)}] sum_ok={ok}")
