"""Device check: does each thread's cudaGetLastError() match whether its child ran?

Usage: python3 status.py SAMPLE CUBIN RUNS
err_launch_status: state[i] must be 1 everywhere. err_pending_limit (spin 0): ran + refused
must be 32768. Pool 32 and a 1 MiB heap, as the manifests say. Prints runs, bad runs, bad
elements in all, refused (median) and the median time of a run.
"""
import sys, statistics
import cupy as cp
rt = cp.cuda.runtime
sample, cubin, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
blocks = int(sys.argv[4]) if len(sys.argv) > 4 else 128
n = blocks * 256
rt.deviceSetLimit(0x04, 32)
rt.deviceSetLimit(0x02, 1 << 20)
mod = cp.RawModule(path=cubin)
parent = mod.get_function("parent")
bad_runs = bad = 0; refused = []; ms = []
for _ in range(runs):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    if sample == "err_launch_status":
        state = cp.zeros(n, cp.uint32); fail = cp.zeros(1, cp.uint32)
        s.record(); parent((blocks,), (256,), (state, fail)); e.record(); e.synchronize()
        wrong = int((state != 1).sum())
        refused.append(int(fail.get()[0]))
    else:
        codes = cp.zeros(n, cp.int32); fail = cp.zeros(1, cp.uint32); ran = cp.zeros(1, cp.uint32)
        s.record(); parent((blocks,), (256,), (codes, fail, ran, cp.int64(0))); e.record(); e.synchronize()
        f, r = int(fail.get()[0]), int(ran.get()[0])
        wrong = abs(f + r - n)
        refused.append(f)
    ms.append(cp.cuda.get_elapsed_time(s, e))
    bad += wrong; bad_runs += wrong > 0
print(f"RESULT {sample} {cubin} blocks={blocks} runs={runs} bad_runs={bad_runs} bad_elements={bad} "
      f"refused_median={statistics.median(refused)} [{min(refused)},{max(refused)}] ms_median={statistics.median(ms):.4f}")
