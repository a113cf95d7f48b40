#!/usr/bin/env python3
"""cdpc under sccache (BENCHMARKS.md, "Under sccache"): the `.cu` files of ../shared/corpus and
samples/ that cdpc compiles with `-arch=sm_90 -rdc=true -c`, one after another, each from its
folder and named by its absolute path (as CMake names them), built

  plain      cdpc alone (its own cache warm: a plain build runs first, untimed)
  cold       sccache cdpc, sccache's cache empty
  warm       sccache cdpc again, the objects removed: every compilation a hit
  dist       sccache cdpc with an empty cache and an sccache-dist scheduler and one build server
             on the loopback (docs/SCCACHE.md's cluster), every compilation on the server

and checks that every object is the plain build's, byte for byte.

    bench/sccache/bench.py CDPC [SCCACHE_BIN_DIR]

SCCACHE_BIN_DIR holds `sccache` and `sccache-dist` (default: the checkout's .sccache/bin).
The dist mode needs root and bubblewrap (`bwrap`) and is left out without them.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.normpath(os.path.join(ROOT, "..", "shared", "corpus"))


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


def build(command, files, out, env):
    """Compiles each file into `out`; the seconds it took, and the objects."""
    start = time.monotonic()
    objects = {}
    for i, (folder, path, includes) in enumerate(files):
        obj = os.path.join(out, f"o{i}.o")
        res = subprocess.run(command + ["-arch=sm_90", "-rdc=true"] + includes + ["-c", path, "-o", obj], cwd=folder, env=env, capture_output=True)
        if res.returncode != 0:
            sys.exit(f"{' '.join(command)} {path} failed:\n{res.stderr.decode()}")
        with open(obj, "rb") as f:
            objects[path] = f.read()
        os.remove(obj)
    return time.monotonic() - start, objects


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cdpc = os.path.abspath(sys.argv[1])
    bindir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(ROOT, ".sccache", "bin")
    sccache, dist = os.path.join(bindir, "sccache"), os.path.join(bindir, "sccache-dist")
    work = tempfile.mkdtemp(prefix="sccache-bench-")
    out = os.path.join(work, "out")
    os.makedirs(out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCCACHE_")}
    # The files cdpc compiles so, its own cache warmed by the same build.
    files = []
    for folder, path, includes in sources():
        res = subprocess.run([cdpc, "-arch=sm_90", "-rdc=true"] + includes + ["-c", path, "-o", os.path.join(out, "probe.o")], cwd=folder, env=env, capture_output=True)
        if res.returncode == 0:
            files.append((folder, path, includes))
    print(f"{len(files)} files", flush=True)
    results = {}
    seconds, plain = build([cdpc], files, out, env)
    results["plain"] = seconds

    def server_env(name, conf):
        e = dict(env, SCCACHE_DIR=os.path.join(work, name), SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_CONF=conf, SCCACHE_IDLE_TIMEOUT="0")
        subprocess.run([sccache, "--start-server"], env=e, check=True, capture_output=True)
        return e

    def stats(e):
        return json.loads(subprocess.run([sccache, "--show-stats", "--stats-format=json"], env=e, check=True, capture_output=True).stdout)["stats"]

    local = server_env("cache", os.path.join(work, "none.toml"))
    for mode in ["cold", "warm"]:
        seconds, objects = build([sccache, cdpc], files, out, local)
        results[mode] = seconds
        assert objects == plain, f"{mode}: objects other than cdpc's"
    s = stats(local)
    print(f"local: hits {s['cache_hits']['counts']}, misses {s['cache_misses']['counts']}", flush=True)
    subprocess.run([sccache, "--stop-server"], env=local, capture_output=True)

    bwrap = shutil.which("bwrap")
    if os.geteuid() == 0 and bwrap and os.path.exists(dist):
        sp, vp = free_port(), free_port()
        with open(os.path.join(work, "scheduler.conf"), "w") as f:
            f.write(f'public_addr = "127.0.0.1:{sp}"\n[client_auth]\ntype = "token"\ntoken = "c"\n[server_auth]\ntype = "token"\ntoken = "s"\n')
        with open(os.path.join(work, "server.conf"), "w") as f:
            f.write(f'cache_dir = "{work}/tc"\npublic_addr = "127.0.0.1:{vp}"\nscheduler_url = "http://127.0.0.1:{sp}"\n[builder]\ntype = "overlay"\nbuild_dir = "{work}/builds"\nbwrap_path = "{bwrap}"\n[scheduler_auth]\ntype = "token"\ntoken = "s"\n')
        procs = [subprocess.Popen([dist, role, "--config", os.path.join(work, f"{role}.conf")], env=dict(env, SCCACHE_NO_DAEMON="1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for role in ["scheduler", "server"]]
        try:
            archive = os.path.join(work, "toolchain.tar.gz")
            toolchain = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "sccache-dist-toolchain.py"), cdpc, archive], check=True, capture_output=True, text=True).stdout
            conf = os.path.join(work, "client.toml")
            with open(conf, "w") as f:
                f.write(f'[dist]\nscheduler_url = "http://127.0.0.1:{sp}"\ncache_dir = "{work}/client-tc"\ntoolchain_cache_size = 4294967296\n{toolchain}[dist.auth]\ntype = "token"\ntoken = "c"\n')
            remote = server_env("dist-cache", conf)
            for _ in range(240):
                status = subprocess.run([sccache, "--dist-status"], env=remote, capture_output=True, text=True).stdout
                if '"num_servers":1' in status:
                    break
                time.sleep(0.25)
            # The toolchain sent once before timing (with a probe file), as a cluster in use has it.
            with open(os.path.join(work, "probe.cu"), "w") as f:
                f.write("__global__ void probe() {}\n")
            build([sccache, cdpc], [(work, os.path.join(work, "probe.cu"), [])], out, remote)
            subprocess.run([sccache, "--zero-stats"], env=remote, capture_output=True)
            seconds, objects = build([sccache, cdpc], files, out, remote)
            results["dist"] = seconds
            assert objects == plain, "dist: objects other than cdpc's"
            s = stats(remote)
            print(f"dist: dist_compiles {s['dist_compiles']}, dist_errors {s['dist_errors']}", flush=True)
            subprocess.run([sccache, "--stop-server"], env=remote, capture_output=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    for mode, seconds in results.items():
        print(f"{mode}: {seconds:.1f} s")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
