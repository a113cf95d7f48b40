#!/usr/bin/env python3
"""lane_sites' parent in seven builds, each assembled and linked by the same ptxas and nvlink
(CUDA 13.0's, nvcc's reference on the H100), so that only the PTX differs between them.

    python3 lane-variants.py CUDA_13_0_DIR CDPC_PTX NVCC_PTX OUT_DIR

CDPC_PTX: `cdpc samples/lane_sites.cdp -fno-launch-optimizations --emit ptx -o cdpc.ptx`;
NVCC_PTX: `nvcc -arch=sm_90 -rdc=true -ptx -x cu samples/lane_sites.cdp -o nvcc.ptx` with
CUDA 13.0's nvcc. CUDA_13_0_DIR: a toolkit or the PyPI wheels' nvidia/cu13 folder
(nvidia-cuda-nvcc, -runtime, -crt, nvidia-nvvm 13.0). Writes OUT_DIR/LABEL/lane_sites.cubin:

  nvcc130-ptx       nvcc's PTX
  cdpc-ptx          cdpc's PTX
  cdpc-nvparent     cdpc's PTX with nvcc's `parent`
  nvcc-cdpparent    nvcc's PTX with cdpc's `parent`
  cdpc-split        cdpc's PTX, the vector store into the parameter buffer as two 32-bit stores
  cdpc-order        cdpc's PTX, the three-way split in nvcc's order: `t % 3 == 0` jumps to the
                    loop, `== 1` falls through to the device function's launch
  cdpc-order-split  both
"""
import os
import re
import subprocess
import sys

cuda, cdpc_ptx, nvcc_ptx, out = sys.argv[1:5]
cd = open(cdpc_ptx).read()
nv = open(nvcc_ptx).read()


def parent(text: str) -> re.Match:
    return re.search(r"\.visible \.entry parent\(.*?\n}\n", text, re.S)


def with_parent(dst: str, src: str) -> str:
    a, b = parent(dst), parent(src)
    return dst[: a.start()] + b.group(0) + dst[a.end():]


def split(text: str) -> str:
    return re.sub(r"st\.v2\.b32 \t\[(%rd\d+)\+8\], \{(%r\d+), (\d+)\};", r"st.b32 \t[\1+8], \2;\n\tst.b32 \t[\1+12], \3;", text)


# cdpc's parent tests `== 1` first (LLVM made the if-else chain a switch, whose lowering lets
# the block laid out next, the loop, fall through); nvcc's tests `== 0` first and falls through
# to the `== 1` branch.
p = parent(cd).group(0)
dispatch = "\tsetp.eq.b32 \t%p1, %r2, 1;\n\t@%p1 bra \t$L__BB2_7;\n\tsetp.ne.b32 \t%p2, %r2, 0;\n\t@%p2 bra \t$L__BB2_9;\n"
head, rest = p.split(dispatch)
loop, tail = rest.split("$L__BB2_7:\n")
four, ret = tail.split("$L__BB2_9:\n")
reordered = (
    head
    + "\tsetp.eq.b32 \t%p1, %r2, 0;\n\t@%p1 bra \t$L__LOOP;\n\tsetp.ne.b32 \t%p2, %r2, 1;\n\t@%p2 bra \t$L__BB2_9;\n"
    + four
    + "\tbra.uni \t$L__BB2_9;\n$L__LOOP:\n"
    + loop
    + "$L__BB2_9:\n"
    + ret
)
order = cd.replace(p, reordered)
variants = {
    "nvcc130-ptx": nv,
    "cdpc-ptx": cd,
    "cdpc-nvparent": with_parent(cd, nv),
    "nvcc-cdpparent": with_parent(nv, cd),
    "cdpc-split": split(cd),
    "cdpc-order": order,
    "cdpc-order-split": split(order),
}
for label, text in variants.items():
    d = os.path.join(out, label)
    os.makedirs(d, exist_ok=True)
    ptx, obj = os.path.join(d, "lane_sites.ptx"), os.path.join(d, "lane_sites.o")
    open(ptx, "w").write(text)
    subprocess.run([os.path.join(cuda, "bin", "ptxas"), "-arch=sm_90", "-c", "-O3", "-o", obj, ptx], check=True)
    subprocess.run([os.path.join(cuda, "bin", "nvlink"), "-arch=sm_90", obj, "-L" + os.path.join(cuda, "lib"), "-lcudadevrt", "-o", os.path.join(d, "lane_sites.cubin")], check=True)
    print("ok", label)
