#!/usr/bin/env python3
"""`-dc` of the corpus files, interleaved round by round: `nvcc -dc -arch=sm_90` against one or
more cdpc binaries, each compiling the file three times in a cache folder new each round (the
first compilation: an empty cache; the second; the third, warm), waiting after each cdpc run
for the cache's fillers (an exclusive `flock` on the folder's fill.lock, outside the time), as
`cargo xtask bench-compile` does; bench-compile's corpus options (tests/corpus-programs.txt);
files nvcc refuses are left out. Wall-clock seconds and CPU seconds (user + system of the
process and what it waited for) per run; medians of the rounds, nvcc/cdpc and its geometric
mean. Also checks that every object of a file is the same bytes, whatever the binary and the
cache state. Run from the repository root: dc-ab.py ROUNDS NAME=CDPC [NAME=CDPC ...] [-- NAMES...]"""
import os, subprocess, sys, time, resource, shutil, statistics, json, math, tempfile, filecmp
ROOT = os.getcwd(); CORPUS = os.path.join(ROOT, '../shared/corpus')
NVCC = os.path.join(ROOT, '.cuda/nvidia/cu13/bin/nvcc')
WORK = tempfile.mkdtemp(prefix='dc-ab-')
SHIM = os.path.join(WORK, 'shim')
os.makedirs(os.path.join(SHIM, 'cub/cub'))
open(os.path.join(SHIM, 'cub/cub/cub.cuh'), 'w').write('#include <cub/cub.cuh>\n')
args = sys.argv[1:]
rounds = int(args.pop(0))
bins = []; files = None
while args:
    a = args.pop(0)
    if a == '--': files = args; break
    n, b = a.split('=', 1); bins.append((n, b))
table = []
for line in open(ROOT + '/tests/corpus-programs.txt'):
    if not line.strip() or line.startswith('#'): continue
    w = line.split()
    if files and w[0] not in files: continue
    path = os.path.join(CORPUS, w[1])
    a = ['-I' + os.path.dirname(path)] + ['-I' + os.path.join(CORPUS, d) for d in w[3:]] + ['-I' + SHIM, '-DcudaThreadSynchronize=cudaDeviceSynchronize']
    if w[2] == 'per-thread': a += ['--default-stream', 'per-thread']
    table.append((w[0], path, a))
def run(cmd, env=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t; r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode: raise SystemExit(f"failed: {' '.join(cmd)}\n{p.stderr.decode()[-2000:]}")
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
def wait(cache):
    if os.path.isdir(cache):
        subprocess.run(['flock', '-x', os.path.join(cache, 'fill.lock'), 'true'])
res = {}
out = os.path.join(WORK, 'out'); os.makedirs(out)
for name, path, a in table:
    if subprocess.run([NVCC, '-dc', '-arch=sm_90'] + a + [path, '-o', f'{out}/probe.o'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
        print(f'# {name}: nvcc refuses it, skipped', flush=True); continue
    for r in range(rounds):
        w = run([NVCC, '-dc', '-arch=sm_90'] + a + [path, '-o', f'{out}/{name}-nvcc.o'])
        res.setdefault((name, 'nvcc', 'all'), []).append(w)
        for bn, b in (bins if r % 2 == 0 else bins[::-1]):
            cache = os.path.join(WORK, f'cache-{bn}'); shutil.rmtree(cache, ignore_errors=True)
            env = dict(os.environ, CDPC_CACHE_DIR=cache); env.pop('CDPC_PREAMBLE', None); env.pop('CDPC_CACHE_BACKGROUND', None)
            for st in ['first', 'second', 'warm']:
                o = f'{out}/{name}-{bn}-{st}.o'
                w = run([b, '-dc', '-arch=sm_90'] + a + [path, '-o', o], env)
                wait(cache)
                res.setdefault((name, bn, st), []).append(w)
            shutil.rmtree(cache, ignore_errors=True)
        ld = os.getloadavg()[0]
        print(f'{name} round {r}: load {ld:.1f}: ' + ' '.join(f'{k[1]}/{k[2]} {v[-1][0]:.2f}' for k, v in res.items() if k[0] == name), flush=True)
json.dump({'|'.join(k): v for k, v in res.items()}, open(os.path.join(WORK, 'times.json'), 'w'))
print(f'# times: {WORK}/times.json')
for name, _, _ in table:
    objects = [f'{out}/{name}-{bn}-{st}.o' for bn, _ in bins for st in ['first', 'second', 'warm']]
    objects = [o for o in objects if os.path.exists(o)]
    if objects:
        same = all(filecmp.cmp(objects[0], o, shallow=False) for o in objects[1:])
        print(f'# {name}: {len(objects)} objects, ' + ('all the same bytes' if same else 'DIFFERENT'))
def gm(xs): return math.exp(sum(map(math.log, xs)) / len(xs))
names = sorted({k[0] for k in res}, key=lambda n: [t[0] for t in table].index(n))
print('\nfile | nvcc | ' + ' | '.join(f'{bn} {st} (s, ratio)' for bn, _ in bins for st in ['first', 'second', 'warm']))
ratios = {}
for n in names:
    nv = statistics.median(x[0] for x in res[(n, 'nvcc', 'all')])
    row = [n, f'{nv:.3f}']
    for bn, _ in bins:
        for st in ['first', 'second', 'warm']:
            m = statistics.median(x[0] for x in res[(n, bn, st)])
            ratios.setdefault((bn, st), []).append(nv / m)
            row.append(f'{m:.3f} {nv/m:.2f}x')
    print(' | '.join(row))
for (bn, st), rs in ratios.items():
    print(f'{bn} {st}: geomean {gm(rs):.2f}x, min {min(rs):.2f}x, max {max(rs):.2f}x')
# CPU
print('\nCPU s medians')
for n in names:
    print(n, 'nvcc %.2f' % statistics.median(x[1] for x in res[(n, 'nvcc', 'all')]), ' '.join(f'{bn}/{st} %.2f' % statistics.median(x[1] for x in res[(n, bn, st)]) for bn, _ in bins for st in ['first', 'second', 'warm']))
