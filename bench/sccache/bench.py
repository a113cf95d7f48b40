#!/usr/bin/env python3
"""cdpc, and nvcc beside it, under sccache (BENCHMARKS.md, "Under sccache"): the `.cu` files of
../shared/corpus and samples/ that each compiler compiles with `-arch=sm_90 -rdc=true -c`, one
after another, each from its folder and named by its absolute path (as CMake names them), built

  plain      the compiler alone (cdpc's own cache warm: a build of every file runs first,
             untimed, which also finds the files each compiler compiles)
  cold       sccache COMPILER, sccache's cache empty
  warm       sccache COMPILER again, the objects removed: every compilation a hit
  dist       sccache COMPILER with an empty cache and an sccache-dist scheduler and one build
             server on the loopback (docs/SCCACHE.md's cluster)

Each mode builds cdpc, then nvcc, so that the machine's load falls on both alike; each compiler
has a cache of its own. A file either compiler refuses is left out of both (and listed).

cdpc's objects of every sccache build must be its plain build's, byte for byte. nvcc's are
compared with nvcc's plain build and reported: identical bytes, or the same ELF sections and
symbols but for the name of the `FILE` symbol (the host compiler's input file, a temporary file
whose name nvcc makes of its process id, `tmpxft_<pid>_00000000-6_k.cudafe1.cpp`, and sccache
renames, `x_0.cudafe1.cpp`), or other differences (the sections named). nvcc's untimed build is
compared with its plain build the same way: two plain nvcc builds of one file differ already.

    bench/sccache/bench.py CDPC [SCCACHE_BIN_DIR] [--nvcc NVCC] [--limit N] [--keep]

SCCACHE_BIN_DIR holds `sccache` and `sccache-dist` (default: the checkout's .sccache/bin).
--limit N takes the first N candidate files only (a quick check of the script); --keep keeps
the scratch folder (the logs, the configurations, each build's objects) and prints its path.
The dist mode needs root and bubblewrap (`bwrap`) and is left out without them. For cdpc the
client sends scripts/sccache-dist-toolchain.py's archive; for nvcc, sccache packs the toolchain
of each step it distributes itself. The distributed builds log at sccache's `info` level into
the scratch folder; where a build has `dist_errors`, the script prints the log's distinct
reasons.
"""

import argparse
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.normpath(os.path.join(ROOT, "..", "shared", "corpus"))
FLAGS = ["-arch=sm_90", "-rdc=true"]


def sources():
    """(folder, file, include options) of each candidate."""
    found = []
    for base, includes in [(os.path.join(CORPUS, "klap"), ["-I../../include", "-I."]), (os.path.join(CORPUS, "cuda-samples"), ["-I../Common", "-I."]), (os.path.join(ROOT, "samples"), ["-I."])]:
        for folder, _, files in sorted(os.walk(base)):
            for name in sorted(files):
                if name.endswith(".cu"):
                    found.append((folder, os.path.join(folder, name), includes))
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compile_one(command, folder, path, includes, obj, env):
    return subprocess.run(command + FLAGS + includes + ["-c", path, "-o", obj], cwd=folder, env=env, capture_output=True)


def build(command, files, out, env):
    """Compiles each file into `out`; the seconds it took, and the objects."""
    start = time.monotonic()
    objects = {}
    for i, (folder, path, includes) in enumerate(files):
        obj = os.path.join(out, f"o{i}.o")
        res = compile_one(command, folder, path, includes, obj, env)
        if res.returncode != 0:
            sys.exit(f"{' '.join(command)} {path} failed:\n{res.stderr.decode()}")
        with open(obj, "rb") as f:
            objects[path] = f.read()
        os.remove(obj)
    return time.monotonic() - start, objects


def elf_parts(data):
    """An ELF64 object's sections in order, as (name, type, flags, contents), with each symbol
    table's entries resolved to names: the object apart from its layout in the file. Also the
    names of its `FILE` symbols."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def contents(h):
        return b"" if h[1] == 8 else data[h[4]:h[4] + h[5]]  # SHT_NOBITS has none

    def name(table, at):
        return table[at:table.index(b"\0", at)].decode(errors="replace")

    shstr = contents(headers[shstrndx])
    parts, files = [], []
    for i, h in enumerate(headers):
        if h[1] == 3 and i != shstrndx:
            continue  # a string table: its strings are compared through the symbols naming them
        body = contents(h)
        if h[1] == 2:  # SHT_SYMTAB
            strings = contents(headers[h[6]])
            symbols = []
            for at in range(0, len(body), 24):
                st_name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", body, at)
                sym = name(strings, st_name)
                if info & 0xF == 4:  # STT_FILE
                    files.append(sym)
                    sym = "<FILE>"
                symbols.append((sym, info, other, shndx, value, size))
            body = symbols
        parts.append((name(shstr, h[0]), h[1], h[2], body))
    return parts, files


def compare(objects, reference):
    """How nvcc's `objects` differ from `reference`, counted: (identical, same but for the FILE
    symbol's name, different), an example of the FILE names, and the sections that differ."""
    same = file_only = other = 0
    example, sections = None, set()
    for path, data in objects.items():
        ref = reference[path]
        if data == ref:
            same += 1
            continue
        (a, files_a), (b, files_b) = elf_parts(data), elf_parts(ref)
        if a == b:
            file_only += 1
            example = example or (files_a, files_b)
        else:
            other += 1
            names_a, names_b = [p[0] for p in a], [p[0] for p in b]
            if names_a != names_b:
                sections.add("the list of sections")
            sections.update(pa[0] for pa, pb in zip(a, b) if pa != pb)
    return same, file_only, other, example, sorted(sections)


def report(label, counts):
    same, file_only, other, example, sections = counts
    line = f"nvcc {label}: {same} identical, {file_only} differ only in the FILE symbol's name, {other} otherwise"
    if example:
        line += f" (e.g. {example[0]} against {example[1]})"
    if sections:
        line += f"; sections that differ: {', '.join(sections)}"
    print(line, flush=True)


def main():
    parser = argparse.ArgumentParser(usage="bench/sccache/bench.py CDPC [SCCACHE_BIN_DIR] [--nvcc NVCC] [--limit N] [--keep]")
    parser.add_argument("cdpc")
    parser.add_argument("bindir", nargs="?", default=os.path.join(ROOT, ".sccache", "bin"))
    parser.add_argument("--nvcc")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    compilers = [("cdpc", os.path.abspath(args.cdpc))]
    if args.nvcc:
        compilers.append(("nvcc", os.path.abspath(args.nvcc)))
    bindir = os.path.abspath(args.bindir)
    sccache, dist = os.path.join(bindir, "sccache"), os.path.join(bindir, "sccache-dist")
    work = tempfile.mkdtemp(prefix="sccache-bench-")
    out = os.path.join(work, "out")
    os.makedirs(out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCCACHE_")}
    # The files every compiler compiles so; cdpc's own cache warmed by the same build, and
    # nvcc's objects kept to compare with its plain build.
    candidates = sources()[: args.limit]
    files, untimed = [], {name: {} for name, _ in compilers}
    for folder, path, includes in candidates:
        ok = True
        for name, compiler in compilers:
            obj = os.path.join(out, "probe.o")
            res = compile_one([compiler], folder, path, includes, obj, env)
            if res.returncode != 0:
                print(f"left out: {name} refuses {os.path.relpath(path, os.path.dirname(ROOT))}: {res.stderr.decode().strip().splitlines()[-1:]}", flush=True)
                ok = False
            else:
                with open(obj, "rb") as f:
                    untimed[name][path] = f.read()
        if ok:
            files.append((folder, path, includes))
    print(f"{len(files)} files of {len(candidates)}", flush=True)
    results, plain = {}, {}
    for name, compiler in compilers:
        results[(name, "plain")], plain[name] = build([compiler], files, out, env)
    if args.nvcc:
        report("plain against its untimed build", compare(plain["nvcc"], {p: untimed["nvcc"][p] for p in plain["nvcc"]}))

    def server_env(dirname, conf, log=None):
        e = dict(env, SCCACHE_DIR=os.path.join(work, dirname), SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_CONF=conf, SCCACHE_IDLE_TIMEOUT="0")
        if log:
            e.update(SCCACHE_ERROR_LOG=log, SCCACHE_LOG="info")
        subprocess.run([sccache, "--start-server"], env=e, check=True, capture_output=True)
        return e

    def stats(e):
        return json.loads(subprocess.run([sccache, "--show-stats", "--stats-format=json"], env=e, check=True, capture_output=True).stdout)["stats"]

    def check(name, mode, objects):
        if name == "cdpc":
            assert objects == plain[name], f"{mode}: objects other than cdpc's"
        else:
            report(f"{mode} against its plain build", compare(objects, plain[name]))
        if args.keep:
            for kind, objs in [(mode, objects), ("plain", plain[name])]:
                os.makedirs(os.path.join(work, "objects", name, kind), exist_ok=True)
                for i, (_, path, _) in enumerate(files):
                    with open(os.path.join(work, "objects", name, kind, f"{i}-{os.path.basename(path)}.o"), "wb") as f:
                        f.write(objs[path])

    local = {name: server_env(f"cache-{name}", os.path.join(work, "none.toml")) for name, _ in compilers}
    cold = {}
    for mode in ["cold", "warm"]:
        for name, compiler in compilers:
            results[(name, mode)], objects = build([sccache, compiler], files, out, local[name])
            check(name, mode, objects)
            if mode == "cold":
                cold[name] = objects
            elif name == "nvcc":
                report("warm against its cold build", compare(objects, cold[name]))
    for name, _ in compilers:
        s = stats(local[name])
        print(f"{name} local: hits {s['cache_hits']['counts']}, misses {s['cache_misses']['counts']}, non-cacheable {s['non_cacheable_compilations']}", flush=True)
        subprocess.run([sccache, "--stop-server"], env=local[name], capture_output=True)

    bwrap = shutil.which("bwrap")
    if os.geteuid() == 0 and bwrap and os.path.exists(dist):
        sp, vp = free_port(), free_port()
        with open(os.path.join(work, "scheduler.conf"), "w") as f:
            f.write(f'public_addr = "127.0.0.1:{sp}"\n[client_auth]\ntype = "token"\ntoken = "c"\n[server_auth]\ntype = "token"\ntoken = "s"\n')
        with open(os.path.join(work, "server.conf"), "w") as f:
            f.write(f'cache_dir = "{work}/tc"\npublic_addr = "127.0.0.1:{vp}"\nscheduler_url = "http://127.0.0.1:{sp}"\n[builder]\ntype = "overlay"\nbuild_dir = "{work}/builds"\nbwrap_path = "{bwrap}"\n[scheduler_auth]\ntype = "token"\ntoken = "s"\n')
        procs = []
        for role in ["scheduler", "server"]:
            with open(os.path.join(work, f"{role}.log"), "w") as log:
                procs.append(subprocess.Popen([dist, role, "--config", os.path.join(work, f"{role}.conf")], env=dict(env, SCCACHE_NO_DAEMON="1", SCCACHE_LOG="info"), stdout=log, stderr=subprocess.STDOUT))
        try:
            remote, logs = {}, {}
            for name, compiler in compilers:
                toolchain = ""
                if name == "cdpc":
                    archive = os.path.join(work, "toolchain.tar.gz")
                    toolchain = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "sccache-dist-toolchain.py"), compiler, archive], check=True, capture_output=True, text=True).stdout
                conf = os.path.join(work, f"client-{name}.toml")
                with open(conf, "w") as f:
                    f.write(f'[dist]\nscheduler_url = "http://127.0.0.1:{sp}"\ncache_dir = "{work}/client-tc-{name}"\ntoolchain_cache_size = 4294967296\n{toolchain}[dist.auth]\ntype = "token"\ntoken = "c"\n')
                logs[name] = os.path.join(work, f"client-{name}.log")
                remote[name] = server_env(f"dist-cache-{name}", conf, logs[name])
                for _ in range(240):
                    status = subprocess.run([sccache, "--dist-status"], env=remote[name], capture_output=True, text=True).stdout
                    if '"num_servers":1' in status:
                        break
                    time.sleep(0.25)
                # The toolchain sent once before timing (with a probe file), as a cluster in use has it.
                with open(os.path.join(work, "probe.cu"), "w") as f:
                    f.write("__global__ void probe() {}\n")
                build([sccache, compiler], [(work, os.path.join(work, "probe.cu"), [])], out, remote[name])
                s = stats(remote[name])
                print(f"{name} dist probe: dist_compiles {s['dist_compiles']}, dist_errors {s['dist_errors']}", flush=True)
                subprocess.run([sccache, "--zero-stats"], env=remote[name], capture_output=True)
            for name, compiler in compilers:
                results[(name, "dist")], objects = build([sccache, compiler], files, out, remote[name])
                check(name, "dist", objects)
            for name, _ in compilers:
                s = stats(remote[name])
                print(f"{name} dist: dist_compiles {s['dist_compiles']}, dist_errors {s['dist_errors']}, hits {s['cache_hits']['counts']}, misses {s['cache_misses']['counts']}", flush=True)
                subprocess.run([sccache, "--stop-server"], env=remote[name], capture_output=True)
                if s["dist_errors"]:
                    with open(logs[name], errors="replace") as f:
                        reasons = sorted({re.sub(r"^\[[^]]*\] ", "", line.strip()) for line in f if re.search(r"(?i)fall|dist.*(error|fail)|could not", line)})
                    print(f"{name} dist: the client log's reasons ({logs[name]}):\n  " + "\n  ".join(reasons[:20]), flush=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    for (name, mode), seconds in results.items():
        print(f"{name} {mode}: {seconds:.1f} s")
    if args.keep:
        print(f"scratch folder kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
