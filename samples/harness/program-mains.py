"""The samples' CUDA C++ files as whole programs: for each samples/NAME.cu with a manifest
(samples/NAME.toml), a NAME_main.cu that includes the sample and adds a host `main` doing what
the manifest says (the buffers made and initialised, the launch, every buffer and global
printed), then built by nvcc and by cdpc alone, each with `-rdc=true -arch=sm_90`.

    python3 samples/harness/program-mains.py --cdpc target/release/cdpc --out DIR   # here
    sh DIR/run.sh > DIR/compare.txt                                                 # GPU machine

run.sh runs both builds of every sample and compares their outputs byte for byte (a sample the
manifest calls non-deterministic is run but not compared). Building needs nvcc for the
oracle's build only; cdpc's build runs with an `nvcc` that fails first on PATH.
"""
import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

C_TYPES = {"i32": ("int", "%d", "int"), "u32": ("unsigned", "%u", "unsigned"), "i64": ("long long", "%lld", "long long"),
           "u64": ("unsigned long long", "%llu", "unsigned long long"), "f32": ("float", "%.9g", "double"), "f64": ("double", "%.17g", "double")}


def c_expression(text, variables):
    """A manifest's init expression (`(7 * i + 3) % 11`, `if(c, a, b)`) as C over `i`."""
    if text == "zero":
        return "0"
    return re.sub(r"\bif\(", "cdpc_if(", text)


def main_source(name, sample, manifest):
    launch = manifest["launch"]
    buffers = manifest.get("buffer", [])
    variables = manifest.get("vars", {})
    lines = [f'#include "{sample}"', "#include <cstdio>", "#include <vector>", "#define cdpc_if(c, a, b) ((c) ? (a) : (b))",
             "// A buffer passed as whatever pointer the kernel takes (the manifest's i64 is a kernel's unsigned long long).",
             "template <class T> struct Buffer { T *p; template <class U> operator U *() const { return reinterpret_cast<U *>(p); } };"]
    lines.append("int main() {")
    for var, value in variables.items():
        lines.append(f"    const long long {var} = {value};")
    for b in buffers:
        ctype = C_TYPES[b["type"]][0]
        lines.append(f"    std::vector<{ctype}> h_{b['name']}({b['len']});")
        lines.append(f"    for (long long i = 0; i < {b['len']}; ++i) h_{b['name']}[i] = ({ctype})({c_expression(str(b.get('init', 'zero')), variables)});")
        lines.append(f"    {ctype} *d_{b['name']} = nullptr;")
        lines.append(f"    cudaMalloc(&d_{b['name']}, {b['len']} * sizeof({ctype}));")
        lines.append(f"    cudaMemcpy(d_{b['name']}, h_{b['name']}.data(), {b['len']} * sizeof({ctype}), cudaMemcpyHostToDevice);")
    args = []
    for arg in launch["args"]:
        kind, value = arg.split(":", 1)
        if kind == "buf":
            ctype = C_TYPES[next(b["type"] for b in buffers if b["name"] == value)][0]
            args.append(f"Buffer<{ctype}>{{d_{value}}}")
        else:
            args.append(f"({C_TYPES[kind][0]})({value})")
    lines.append(f"    {launch['kernel']}<<<{launch.get('grid', 1)}, {launch.get('block', 1)}>>>({', '.join(args)});")
    lines.append("    cudaError_t status = cudaDeviceSynchronize();")
    lines.append('    printf("status %s\\n", cudaGetErrorName(status));')
    for b in buffers:
        ctype, fmt, cast = C_TYPES[b["type"]]
        lines.append(f"    cudaMemcpy(h_{b['name']}.data(), d_{b['name']}, {b['len']} * sizeof({ctype}), cudaMemcpyDeviceToHost);")
        lines.append(f'    for (long long i = 0; i < {b["len"]}; ++i) printf("{b["name"]}[%lld] {fmt}\\n", i, ({cast})h_{b["name"]}[i]);')
    for g in manifest.get("global", []):
        ctype, fmt, cast = C_TYPES[g["type"]]
        lines.append(f"    {{ {ctype} value = 0; cudaMemcpyFromSymbol(&value, {g['name']}, sizeof value); printf(\"{g['name']} {fmt}\\n\", ({cast})value); }}")
    lines.append("    return status == cudaSuccess ? 0 : 1;")
    lines.append("}")
    return "\n".join(lines) + "\n"


# The builds: nvcc's (the oracle), cdpc's as nvcc's, cdpc's without -rdc (a whole program with
# the device runtime linked in, which nvcc refuses for device-side launches), and cdpc's with
# thresholding and warp aggregation.
BUILDS = [
    ("nvcc", "nvcc", ["-rdc=true", "-arch=sm_90", "-O3"]),
    ("cdpc", "cdpc", ["-rdc=true", "-arch=sm_90", "-O3"]),
    ("cdpc-whole", "cdpc", ["-arch=sm_90", "-O3"]),
    ("cdpc-fast", "cdpc", ["-rdc=true", "-arch=sm_90", "-O3", "-flaunch-threshold=128", "-faggregate-launches=warp"]),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cdpc", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--nvcc", default=None)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[2]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cuda = Path(os.environ.get("CUDA_HOME", root / ".cuda/nvidia/cu13"))
    nvcc = args.nvcc or str(cuda / "bin/nvcc")
    cdpc = str(Path(args.cdpc).resolve())
    poison = out / "poison"
    poison.mkdir(exist_ok=True)
    (poison / "nvcc").write_text("#!/bin/sh\necho 'nvcc was run' >&2\nexit 99\n")
    (poison / "nvcc").chmod(0o755)
    names = []
    for sample in sorted((root / "samples").glob("*.cu")):
        manifest_path = sample.with_suffix(".toml")
        if not manifest_path.is_file():
            continue
        manifest = tomllib.loads(manifest_path.read_text())
        name = sample.stem
        source = out / f"{name}_main.cu"
        source.write_text(main_source(name, sample, manifest))
        built = {}
        for kind, compiler, flags in BUILDS:
            env = None if kind == "nvcc" else dict(os.environ, PATH=f"{poison}:{os.environ['PATH']}")
            result = subprocess.run([nvcc if kind == "nvcc" else cdpc, *flags, str(source), "-o", str(out / f"{name}.{kind}")], capture_output=True, text=True, env=env)
            if result.returncode != 0:
                print(f"{name}: {kind} build failed:\n{result.stderr[-2000:]}", file=sys.stderr)
            built[kind] = result.returncode == 0
        names.append((name, manifest.get("deterministic", False), built))
        print(f"{name}: " + ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in built.items()))
    kinds = [k for k, _, _ in BUILDS]
    run = ["#!/bin/sh", "# Written by samples/harness/program-mains.py: every build of each sample, outputs compared with nvcc's.", 'cd "$(dirname "$0")"',
           'echo "| sample | ' + " | ".join(kinds) + ' |"', 'echo "|' + "---|" * (len(kinds) + 1) + '"']
    for name, deterministic, built in names:
        cells = []
        for kind in kinds:
            if not built[kind]:
                cells.append("not built")
                continue
            run.append(f"timeout 60 ./{name}.{kind} > {name}.{kind}.out 2>&1; s_{kind.replace('-', '_')}=$?")
            if kind == "nvcc":
                cells.append(f"exit $s_nvcc")
            elif deterministic:
                cells.append(f"exit $s_{kind.replace('-', '_')}, $(cmp -s {name}.nvcc.out {name}.{kind}.out && echo same || echo DIFFERENT)")
            else:
                cells.append(f"exit $s_{kind.replace('-', '_')} (not compared)")
        run.append(f'echo "| {name} | ' + " | ".join(cells) + ' |"')
    (out / "run.sh").write_text("\n".join(run) + "\n")
    (out / "run.sh").chmod(0o755)


if __name__ == "__main__":
    main()
