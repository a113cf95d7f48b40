#!/usr/bin/env python3
"""nvcc with cdpc as its device compiler: `nvcc -c` of one .cu file, except that the device
code in the object comes from cdpc.

nvcc compiles a .cu file in steps that `nvcc -dryrun` lists: cudafe++ splits host from device
code and writes the host stubs, cicc and ptxas compile the device side to a relocatable cubin,
fatbinary wraps it, and gcc compiles the host side with the fat binary embedded. This script
runs those steps with two changes: cdpc compiles the .cu file to the relocatable object in
place of ptxas (`cdpc FILE --emit obj`, with the same -I, -D, -U, -arch and --default-stream),
and the fat binary holds that object only (no PTX for JIT). cicc still runs, since it writes
the host stubs (`.cudafe1.stub.c`); its PTX is not used. Everything
host-side stays nvcc's, so the program's own host code launches cdpc's kernels through nvcc's
stubs, which find them by name: this works exactly when cdpc's kernel and device-variable
symbols are nvcc's (docs/CORPUS.md). Link the objects with nvcc as
usual (`nvcc -arch=sm_90 -rdc=true a.o b.o -lcudadevrt`): its device link takes cdpc's code
from the fat binaries.

With --library-device-code, nvcc's own relocatable cubin of the file is kept too and merged
with cdpc's by a relocatable device link (`nvlink -r`, cdpc's object first): the object then
also holds the kernels that host code instantiates from host-only headers (Thrust's, CUB's),
which cdpc, compiling device code only, leaves out. Kernels both define are template instances
(weak in both objects); which one the link keeps is checked by the caller
(`corpus-gpu.sh` compares the kernels' code in the executable with cdpc's object, which is
left beside the output as OUTPUT.cdpc.cubin). nvlink keeps the smaller of the two whatever
their order (measured, docs/AGGREGATION.md): an aggregated instance, larger than nvcc's, loses.

Usage: nvcc-cdpc.py --cdpc CDPC [--nvcc NVCC] [--cuda-home DIR] [--cdpc-arg ARG]... [--library-device-code] -- NVCC_ARGS...
NVCC_ARGS: an `nvcc -c` (or `-dc`) command line for one .cu file, as a Makefile writes it.
Exits with cdpc's or the failing step's status; prints the diagnostics. Device code that
nvcc's own front end (cicc) refuses cannot be built this way.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile


def cdpc_args(nvcc_args: list[str]) -> tuple[str, list[str]]:
    """The source file of an nvcc command line and the options cdpc shares with nvcc."""
    sources = [a for a in nvcc_args if a.endswith(".cu")]
    if len(sources) != 1:
        raise SystemExit(f"nvcc-cdpc: expected one .cu file among the arguments, found {sources or 'none'}")
    out: list[str] = []
    i = 0
    while i < len(nvcc_args):
        a = nvcc_args[i]
        nxt = nvcc_args[i + 1] if i + 1 < len(nvcc_args) else None
        if a in ("-I", "-D", "-U") and nxt is not None:
            out += [a, nxt]
            i += 1
        elif a[:2] in ("-I", "-D", "-U") and len(a) > 2:
            out.append(a)
        elif a.startswith("-arch="):
            out.append("--arch=" + a.split("=", 1)[1].replace("compute_", "sm_"))
        elif a in ("-arch", "--gpu-architecture") and nxt is not None:
            out += ["--arch", nxt.replace("compute_", "sm_")]
            i += 1
        elif a in ("--default-stream", "-default-stream") and nxt is not None:
            out += ["--default-stream", nxt]
            i += 1
        elif a.startswith("--default-stream="):
            out.append(a)
        i += 1
    return sources[0], out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cdpc", required=True)
    parser.add_argument("--nvcc", default="nvcc")
    parser.add_argument("--cuda-home")
    parser.add_argument("--cdpc-arg", action="append", default=[], help="an extra argument for cdpc (repeatable), e.g. -faggregate-launches=block")
    parser.add_argument("--library-device-code", action="store_true", help="also keep nvcc's device code of the file, for the library kernels host code instantiates")
    parser.add_argument("nvcc_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    nvcc_args = args.nvcc_args[1:] if args.nvcc_args[:1] == ["--"] else args.nvcc_args
    source, shared = cdpc_args(nvcc_args)

    dry = subprocess.run([args.nvcc, "-dryrun", *nvcc_args], capture_output=True, text=True)
    if dry.returncode != 0:
        sys.stderr.write(dry.stdout + dry.stderr)
        return dry.returncode
    steps = [line[3:] for line in dry.stderr.splitlines() if line.startswith("#$ ")]
    script: list[str] = []
    replaced = False
    # cudafe++ writes the file's module id (`--gen_module_id_file --module_id_file_name F`)
    # before ptxas would run: cdpc names `static` kernels and variables with it, as the host
    # stubs nvcc writes expect (`__nv_static_<n>_<id>_<name>`).
    module_id_file = None
    for step in steps:
        words = shlex.split(step, posix=True) if not step.partition("=")[0].isidentifier() else []
        if "--module_id_file_name" in words:
            module_id_file = words[words.index("--module_id_file_name") + 1]
    for step in steps:
        name, _, value = step.partition("=")
        if name.isidentifier():
            # nvcc's settings (`PATH=...`, `INCLUDES="-I..."  `) are not all valid shell: keep
            # each value as written, as one word.
            script.append(f"export {name}={shlex.quote(value.strip())}")
            continue
        words = shlex.split(step, posix=True)
        program = os.path.basename(words[0]) if words else ""
        if program == "ptxas":
            cubin = words[words.index("-o") + 1]
            target = cubin
            if args.library_device_code:
                # nvcc's relocatable cubin beside cdpc's, then both merged into `cubin` (nvlink
                # knows its inputs by their extension: both end in .cubin)
                stem = cubin.removesuffix(".cubin")
                nvcc_cubin, target = stem + ".nvcc.cubin", stem + ".cdpc.cubin"
                script.append(shlex.join([*words[: words.index("-o")], "-o", nvcc_cubin, *words[words.index("-o") + 2 :]]))
            cdpc = [args.cdpc, source, "--emit", "obj", *shared, *args.cdpc_arg, "-o", target]
            if args.cuda_home:
                cdpc += ["--cuda-home", args.cuda_home]
            line = shlex.join(cdpc)
            if module_id_file:
                line += f' --nv-module-id "$(cat {shlex.quote(module_id_file)})"'
            script.append(line)
            if args.library_device_code:
                arch = next((w.split("=", 1)[1] for w in words if w.startswith("-arch=")), None)
                if arch is None and "-arch" in words:
                    arch = words[words.index("-arch") + 1]
                nvlink = os.path.join(os.path.dirname(words[0]), "nvlink")
                script.append(shlex.join([nvlink, "-r", f"-arch={arch}", target, nvcc_cubin, "-o", cubin]))
                # cdpc's own object stays beside the output, for the caller's check
                output = nvcc_args[nvcc_args.index("-o") + 1] if "-o" in nvcc_args else None
                if output:
                    script.append(shlex.join(["cp", target, output + ".cdpc.cubin"]))
                script.append(shlex.join(["rm", "-f", target, nvcc_cubin]))
            replaced = True
            continue
        if program == "fatbinary":
            kept = [w for w in words if not w.startswith("--image3=kind=ptx")]
            script.append(shlex.join(kept))
            continue
        if program == "rm":
            script.append(shlex.join(["rm", "-f", *words[1:]]))  # nvcc ignores a missing file
            continue
        script.append(step)
    if not replaced:
        sys.stderr.write("nvcc-cdpc: nvcc's steps have no ptxas run to replace (is -c and an sm_ architecture given?)\n")
        return 2
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write("set -e\n" + "\n".join(script) + "\n")
        path = f.name
    try:
        return subprocess.run(["bash", path]).returncode
    finally:
        os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
