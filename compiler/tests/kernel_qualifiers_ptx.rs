//! Kernel qualifiers through Clang, nvcc's PTX of the same source the oracle: thread-block
//! clusters (`__cluster_dims__`, cooperative groups' cluster group), `__maxnreg__` and
//! `__block_size__`. Clang 22 dropped `__cluster_dims__` for NVPTX without a word (the kernel
//! ran without clusters) and the other two with a warning, and CUDA's cooperative_groups.h
//! offered `this_cluster()` to nvcc alone; cdpc's header writes the qualifiers as annotations
//! that `pipeline::qualifiers` makes nvcc's directives, and lets the cluster group use the
//! cluster intrinsics Clang's headers define.

use crate::build_common::{cdpc, cdpc_errors, nvcc, nvcc_errors, nvcc_ptx, nvcc_refusal, stderr};
use std::collections::BTreeMap;

const SOURCE: &str = r#"#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void __cluster_dims__(2) one(int *p) { p[cg::this_cluster().block_rank()] = 1; cg::this_cluster().sync(); }
__global__ void __cluster_dims__(2, 2) two(int *p) { p[0] = (int)cg::this_cluster().num_blocks(); }
__global__ void __cluster_dims__(1, 2, 4) __launch_bounds__(128) three(int *p) { p[0] = 3; }
template <int N> __global__ void __cluster_dims__(N, 1, 1) templated(int *p) { p[0] = N; }
template __global__ void templated<4>(int *);
constexpr int W = 2;
__global__ void __cluster_dims__(W * 4) folded(int *p) { p[0] = W; }
__device__ __attribute__((annotate("kept"))) int helper(int x) { return x + 1; }
__global__ void plain(int *p) { p[0] = helper(p[1]); }
__global__ void shared_ranks(int *out) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    mine = (int)cluster.block_rank();
    cluster.sync();
    int *theirs = cluster.map_shared_rank(&mine, (cluster.block_rank() + 1) % cluster.num_blocks());
    out[blockIdx.x] = *theirs;
    cluster.sync();
}
"#;

/// Each kernel's directives of the given kinds (`.explicitcluster`, `.maxnreg`, ...) in order,
/// spaces normalised, by symbol.
fn directives(ptx: &str, kinds: &[&str]) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut current = None;
    for line in ptx.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix(".visible .entry ").or_else(|| line.strip_prefix(".weak .entry ")) {
            let name = rest.trim_end_matches('(').to_string();
            out.insert(name.clone(), Vec::new());
            current = Some(name);
        } else if line == "{" {
            current = None;
        } else if let Some(name) = &current {
            if kinds.iter().any(|d| line.starts_with(d)) {
                out.get_mut(name).unwrap().push(line.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
    }
    out
}

/// Each kernel's cluster directives (`.explicitcluster`, `.reqnctapercluster x, y, z`, and
/// `.maxclusterrank`), by symbol.
fn cluster_directives(ptx: &str) -> BTreeMap<String, Vec<String>> {
    directives(ptx, &[".explicitcluster", ".reqnctapercluster", ".maxclusterrank"])
}

#[test]
fn cluster_dims_and_cluster_groups_are_nvccs() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let expected = cluster_directives(&theirs);
    // The oracle says something: seven kernels, five with a cluster shape.
    assert_eq!(expected.len(), 7, "nvcc:\n{theirs}");
    assert_eq!(expected.values().filter(|d| !d.is_empty()).count(), 5, "{expected:?}");
    assert_eq!(expected["_Z5threePi"], [".explicitcluster", ".reqnctapercluster 1, 2, 4"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("clusters.cu"), SOURCE).unwrap();
    let out = cdpc(dir.path(), &["clusters.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(cluster_directives(&ours), expected, "cdpc:\n{ours}");
    // Nothing of the annotation is left as data; the program's own annotation is no cluster.
    assert!(!ours.contains("cdpc.cluster_dims") && !ours.contains("llvm.metadata"), "{ours}");
    // `-dc`: the host side compiles with the same header.
    let out = cdpc(dir.path(), &["-dc", "clusters.cu", "-o", "clusters.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Below sm_90 nvcc refuses `__cluster_dims__` and `__block_size__` with its message at the
/// kernel; so does cdpc.
#[test]
fn cluster_qualifiers_below_sm_90_are_nvccs_errors() {
    let Some(nvcc) = nvcc() else { return };
    let source = "__global__ void plain(int *p) { p[0] = 1; }\n__global__ void __cluster_dims__(2) k(int *p) { p[0] = 2; }\n__global__ void __block_size__((64, 1, 1)) b(int *p) { p[0] = 3; }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.cu"), source).unwrap();
    let theirs = nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_80", "-rdc=true", "-ptx", "c.cu", "-o", "c.ptx"]);
    let expected = nvcc_errors(&theirs);
    assert_eq!(
        expected,
        [(2, "__cluster_dims__ is not supported for this GPU architecture".to_string()), (3, "__block_size__ is not supported for this GPU architecture".to_string())],
        "nvcc: {theirs}"
    );
    let out = cdpc(dir.path(), &["c.cu", "-arch", "sm_80", "--emit", "ptx", "-o", "-", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let found = cdpc_errors(&out, "E1000");
    assert_eq!(found, expected);
}

/// Each kernel's `.maxnreg`, by symbol (`None` where it has none).
fn maxnreg(ptx: &str) -> BTreeMap<String, Option<String>> {
    directives(ptx, &[".maxnreg "]).into_iter().map(|(k, d)| (k, d.first().map(|l| l.trim_start_matches(".maxnreg ").to_string()))).collect()
}

const MAXNREG: &str = r#"__global__ void child(int *p) { p[threadIdx.x] += 1; }
__global__ void __maxnreg__(40) parent(int *p, int n) { if (threadIdx.x < n) child<<<1, 32>>>(p + 32 * threadIdx.x); }
template <int N> __global__ void __maxnreg__(N) templated(int *p) { p[0] = N; }
template __global__ void templated<32>(int *);
__global__ void __maxnreg__(64) __cluster_dims__(2) clustered(int *p) { p[0] = 1; }
"#;

/// `__maxnreg__` is nvcc's `.maxnreg`, and aggregation, which caps the kernels it changes at 64
/// registers, keeps the program's own bound.
#[test]
fn maxnreg_is_nvccs_and_aggregation_keeps_it() {
    let Some(theirs) = nvcc_ptx(MAXNREG) else { return };
    let expected = maxnreg(&theirs);
    assert_eq!(expected["_Z6parentPii"].as_deref(), Some("40"), "nvcc:\n{theirs}");
    assert_eq!(expected.values().filter(|n| n.is_some()).count(), 3, "{expected:?}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.cu"), MAXNREG).unwrap();
    let out = cdpc(dir.path(), &["m.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "no warning about an unknown attribute: {}", stderr(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(maxnreg(&ours), expected, "cdpc:\n{ours}");
    for granularity in ["warp", "block"] {
        let out = cdpc(dir.path(), &["m.cu", "--emit", "ptx", "-o", "-", &format!("-faggregate-launches={granularity}")]);
        assert!(out.status.success(), "{}", stderr(&out));
        let ptx = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(maxnreg(&ptx)["_Z6parentPii"].as_deref(), Some("40"), "{granularity}:\n{ptx}");
    }
}

const BLOCK_SIZE: &str = r#"__global__ void __block_size__((32, 4, 1)) plain(int *p) { p[threadIdx.x] = 1; }
__global__ void __block_size__((64, 1, 1), (4, 1, 1)) paired(int *p) { p[threadIdx.x] = 2; }
template <int N> __global__ void __block_size__((N, 1, 1), (2, 1, 1)) templated(int *p) { p[threadIdx.x] = N; }
template __global__ void templated<256>(int *);
__global__ void __block_size__((128, 1, 1)) __launch_bounds__(128, 2) bounded(int *p) { p[threadIdx.x] = 3; }
__global__ void __cluster_dims__(4) __block_size__((128, 1, 1)) clustered(int *p) { p[threadIdx.x] = 4; }
__global__ void __block_size__((128, 1, 1)) __maxnreg__(32) registers(int *p) { p[threadIdx.x] = 5; }
"#;

/// `__block_size__` is nvcc's `.blocksareclusters`, `.reqntid` (in place of a launch bound's
/// `.maxntid`) and `.reqnctapercluster`, in PTX of ISA 9.0 or newer (NVPTX writes the first
/// from 9.0 on); a module without it keeps Clang's version.
#[test]
fn block_size_is_nvccs_blocks_as_clusters() {
    let Some(theirs) = nvcc_ptx(BLOCK_SIZE) else { return };
    let kinds = [".blocksareclusters", ".reqntid", ".maxntid", ".minnctapersm", ".reqnctapercluster", ".explicitcluster", ".maxnreg"];
    let sorted = |ptx: &str| {
        directives(ptx, &kinds)
            .into_iter()
            .map(|(k, mut d)| {
                d.sort();
                (k, d.into_iter().map(|l| l.replace(", ", ",")).collect::<Vec<_>>())
            })
            .collect::<BTreeMap<_, _>>()
    };
    let expected = sorted(&theirs);
    assert_eq!(expected.len(), 6, "nvcc:\n{theirs}");
    assert_eq!(expected["_Z7boundedPi"], [".blocksareclusters", ".minnctapersm 2", ".reqnctapercluster 1,1,1", ".reqntid 128,1,1"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.cu"), BLOCK_SIZE).unwrap();
    let out = cdpc(dir.path(), &["b.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(sorted(&ours), expected, "cdpc:\n{ours}");
    let version = |ptx: &str| ptx.lines().find_map(|l| l.strip_prefix(".version ")).map(|v| v.replace('.', "").parse::<u32>().unwrap());
    assert!(version(&ours) >= Some(90), "{ours}");
    // Assembled and linked as nvcc's is.
    let out = cdpc(dir.path(), &["b.cu", "-o", "b.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// What nvcc refuses about `__maxnreg__` and `__block_size__`, refused at nvcc's lines with its
/// words (`E1021`).
#[test]
fn qualifiers_nvcc_refuses_are_e1021_at_their_lines() {
    let Some(nvcc) = nvcc() else { return };
    let source = "__global__ void ok(int *p) { p[0] = 1; }\n__global__ void __maxnreg__(40)\n__launch_bounds__(128) both(int *p) { p[0] = 3; }\n__global__ void __maxnreg__(0) zero(int *p) { p[0] = 5; }\n__global__ void __block_size__((0, 1, 1)) empty(int *p) { p[0] = 1; }\n__global__ void __cluster_dims__(4) __block_size__((128, 1, 1), (2, 1, 1)) twice(int *p) { p[0] = 1; }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.cu"), source).unwrap();
    let theirs = nvcc_errors(&nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-ptx", "m.cu", "-o", "m.ptx"]));
    assert_eq!(theirs.len(), 4, "{theirs:?}");
    let out = cdpc(dir.path(), &["m.cu", "--emit", "ptx", "-o", "-", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let ours: Vec<(u64, String)> = cdpc_errors(&out, "E1021").into_iter().map(|(line, m)| (line, m.split(" (kernel `").next().unwrap().to_string())).collect();
    assert_eq!(ours, theirs);
}

/// nvcc's hints `__inline_hint__` and `__nv_pure__`, which Clang does not know: no warning (an
/// error under `-Werror`), and nvcc's functions.
#[test]
fn nvccs_hints_compile_without_a_warning() {
    let source = "__device__ __inline_hint__ int f1(int x) { return x + 1; }\n__device__ __nv_pure__ int f2(int x) { return x * 3; }\n__device__ __noinline__ int f3(int x) { return x - 1; }\n__global__ void k(int *p) { p[0] = f1(p[1]) + f2(p[2]) + f3(p[3]); }\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.cu"), source).unwrap();
    // Relocatable, as nvcc's (`-rdc=true`): the device functions stay visible.
    let out = cdpc(dir.path(), &["h.cu", "-rdc=true", "--emit", "ptx", "-o", "-", "-Werror"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{}", stderr(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(crate::build_common::ptx_functions(&ours), crate::build_common::ptx_functions(&theirs));
}
