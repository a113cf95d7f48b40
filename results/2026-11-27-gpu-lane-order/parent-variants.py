"""The builds of call 10: devrt_pdl and c_statements with a forced granularity, and the same
modules with the plain build's `parent` put back (every helper kernel, pool and declaration of
the aggregated module kept), so that the timing tells the parent's code from the module around it.

Run from the repository root after `cargo build --release -p cdpc`, with ptxas and nvlink on PATH
(the checkout's .cuda/nvidia/cu13/bin); writes build/var/LABEL/SAMPLE.cubin and the PTX beside.
"""
import os, pathlib, subprocess

CDPC = "target/release/cdpc"
OUT = pathlib.Path("build/var")
LIB = next(pathlib.Path(".cuda").rglob("libcudadevrt.a")).parent

def ptx(flags, source):
    return subprocess.run([CDPC, *flags, "--emit", "ptx", source, "-o", "-"], check=True, capture_output=True, text=True).stdout

def entry(text, name):
    """Where `.visible .entry NAME(...) { ... }` starts and ends in `text`."""
    start = text.index(f".visible .entry {name}(")
    depth, k = 0, text.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return start, k + 1
        k += 1

def with_plain_parent(module, plain):
    a, b = entry(module, "parent")
    c, d = entry(plain, "parent")
    return module[:a] + plain[c:d] + module[b:]

def build(label, sample, text):
    folder = OUT / label
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sample}.ptx").write_text(text)
    obj, cubin = folder / f"{sample}.o", folder / f"{sample}.cubin"
    subprocess.run(["ptxas", "-arch=sm_90", "-c", "-O3", folder / f"{sample}.ptx", "-o", obj], check=True)
    subprocess.run(["nvlink", "-arch=sm_90", obj, f"-L{LIB}", "-lcudadevrt", "-o", cubin], check=True)
    os.remove(obj)

pdl = "samples/devrt_pdl.cdp"
plain, warp, grid = (ptx(f, pdl) for f in (["-fno-launch-optimizations"], ["-faggregate-launches=warp"], ["-faggregate-launches=grid"]))
build("pdl-plain", "devrt_pdl", plain)
build("pdl-warp", "devrt_pdl", warp)
build("pdl-grid", "devrt_pdl", grid)
build("pdl-warp-nomaxnreg", "devrt_pdl", warp.replace(".maxnreg 64\n", ""))
build("pdl-warp-plainparent", "devrt_pdl", with_plain_parent(warp, plain))
build("pdl-grid-plainparent", "devrt_pdl", with_plain_parent(grid, plain))
cs = "samples/c_statements.cdp"
plain, grid = (ptx(["-x", "cu", *f], cs) for f in (["-fno-launch-optimizations"], ["-faggregate-launches=grid"]))
build("cs-plain", "c_statements", plain)
build("cs-grid", "c_statements", grid)
build("cs-grid-plainparent", "c_statements", with_plain_parent(grid, plain))
