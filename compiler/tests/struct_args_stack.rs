//! By-value structs of 136 bytes and of 1 KB passed to a child through Clang and the IR
//! pipeline: no stack frame where nvcc's build has none, with `ptxas -v` of
//! nvcc's own build of the same source as the oracle.
//!
//! The pipeline gathers a launch's arguments in a local block filled and emptied with
//! `llvm.memcpy`; NVPTX turns every memcpy above 128 bytes into a byte loop, which kept the
//! block in local memory (240-byte frames in KLAP's MST parents, 320 in its aggregated
//! children). `pipeline/copies.rs` makes those copies word copies that SROA takes apart.

use crate::build_common::{cdpc, nvcc, run, stderr, tool_dir};
use std::collections::BTreeMap;
use std::path::Path;

const SOURCE: &str = r#"
struct Graph { unsigned nnodes, nedges; unsigned *noutgoing, *nincoming, *srcsrc, *psrc, *edgessrcdst, *edgessrcwt, *levels; int source; unsigned *a, *b, *c, *d, *e, *f; unsigned long long g; };
struct Space { unsigned n; unsigned *ele, *complen; long long tag; };
struct Kilo { int *out; long long w[127]; };

extern "C" __global__ void child136(Graph g, Space s, int *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < g.nnodes) atomicAdd(out, (int)(g.noutgoing[i] + g.nedges + s.ele[i] + (unsigned)s.tag + (unsigned)g.g + g.f[i]));
}

extern "C" __global__ void child1k(Kilo k, int n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(k.out, (int)(k.w[0] + k.w[63] + k.w[126]));
}

extern "C" __global__ void from_params(Graph g, Space s, Kilo k, int *out)
{
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < g.nnodes) {
        child136<<<(g.noutgoing[t] + 31) / 32, 32>>>(g, s, out);
        child1k<<<1, 32>>>(k, (int)g.nincoming[t]);
    }
}

extern "C" __global__ void from_locals(int *out, unsigned *data, unsigned n)
{
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    Graph g;
    g.nnodes = n; g.nedges = t; g.noutgoing = data + t; g.nincoming = data; g.srcsrc = data; g.psrc = data; g.edgessrcdst = data;
    g.edgessrcwt = data; g.levels = data; g.source = 3; g.a = g.b = g.c = g.d = g.e = g.f = data + 1; g.g = t * 7ull;
    Space s; s.n = n; s.ele = data; s.complen = data + n; s.tag = -t;
    if (t < n) child136<<<data[t] % 4 + 1, 32>>>(g, s, out);
}
"#;

/// Each function's stack frame in bytes, from `ptxas -v`'s report.
fn frames(report: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut current = None;
    for line in report.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            current = Some(name.trim().to_string());
        } else if let (Some(name), true) = (&current, line.contains("bytes stack frame")) {
            let bytes = line.split_whitespace().next().and_then(|b| b.parse().ok()).expect("a byte count");
            out.insert(name.clone(), bytes);
            current = None;
        }
    }
    out
}

fn ptxas_frames(ptxas: &Path, dir: &Path, ptx: &str) -> BTreeMap<String, u64> {
    let out = run(ptxas, dir, &["-arch=sm_90", "-c", "-v", ptx, "-o", "out.cubin"]);
    frames(&format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out)))
}

#[test]
fn struct_arguments_of_136_bytes_and_1_kb_take_no_stack_where_nvcc_takes_none() {
    let Some(nvcc) = nvcc() else { return };
    let ptxas = tool_dir().expect("the NVIDIA tools").join("ptxas");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("structs.cu"), SOURCE).unwrap();
    let out = run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-cubin", "-Xptxas", "-v", "structs.cu", "-o", "nvcc.cubin"]);
    let theirs = frames(&format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out)));
    // The oracle: nvcc keeps every one of these kernels out of local memory.
    for k in ["child136", "child1k", "from_params", "from_locals"] {
        assert_eq!(theirs.get(k), Some(&0), "nvcc's frames: {theirs:?}");
    }
    let variants: [&[&str]; 6] = [
        &["-fno-launch-optimizations"],
        &["-faggregate-launches=warp"],
        &["-faggregate-launches=block"],
        &["-faggregate-launches=grid"],
        &["-flaunch-threshold=128"],
        &["-flaunch-threshold=128", "-faggregate-launches=warp"],
    ];
    for options in variants {
        let mut args = vec!["structs.cu", "--arch", "sm_90", "--emit", "ptx", "-o", "cdpc.ptx", "--overwrite"];
        args.extend_from_slice(options);
        let out = cdpc(dir.path(), &args);
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        let ours = ptxas_frames(&ptxas, dir.path(), "cdpc.ptx");
        let frame = |k: &str| *ours.get(k).unwrap_or_else(|| panic!("{options:?}: no `{k}` in {ours:?}"));
        // The children, and the aggregated kernels that run them, which nvcc has no
        // counterpart of: no frame, as nvcc's children.
        for (k, bytes) in &ours {
            if k.starts_with("child") {
                assert_eq!(*bytes, 0, "{options:?}: `{k}` has a {bytes}-byte frame; all: {ours:?}");
            }
        }
        let aggregated = options.iter().any(|o| o.starts_with("-faggregate"));
        if aggregated {
            assert!(ours.contains_key("child136__agg"), "{options:?}: {ours:?}");
        }
        // The parents: nvcc's no frame, plainly and with thresholding (the serial copies run
        // inlined, their structs in registers), and with the structs taken straight from
        // the parameters at block and grid granularity.
        let warp = options.contains(&"-faggregate-launches=warp");
        let thresholded = options.iter().any(|o| o.starts_with("-flaunch-threshold"));
        for k in ["from_params", "from_locals"] {
            if thresholded && !aggregated && k == "from_params" {
                // `child1k<<<1, 32>>>` after `child136`'s launch is launched, not run in place,
                // where the block has launched into the NULL stream before (pipeline/
                // stream_order.rs), so the 1 KB argument copy's launch path stays beside the
                // in-place run; under the 64-register cap ptxas spills a word for it (8 bytes
                // on CUDA 13.5's ptxas, 62 registers). No struct's copy: at most two words.
                assert!(frame(k) <= 16, "{options:?}: `{k}` has a {}-byte frame; all: {ours:?}", frame(k));
            } else if !aggregated || (!warp && k == "from_params") {
                assert_eq!(frame(k), 0, "{options:?}: `{k}`; all: {ours:?}");
            } else {
                // What is left there is not a struct's copy: a warp-aggregated parent's frame
                // holds its V1 launch's `dim3`s (KLAP's BFS parent, with no struct, has 72
                // bytes), and a record re-launched one by one at block or grid granularity
                // holds the values the register cap (64) leaves over; less than one struct.
                assert!(frame(k) < 136, "{options:?}: `{k}` has a {}-byte frame; all: {ours:?}", frame(k));
            }
        }
    }
}
