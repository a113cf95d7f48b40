//! Thread-block clusters through Clang: `__cluster_dims__` and cooperative groups' cluster
//! group, nvcc's PTX of the same source the oracle. Clang 22 dropped `__cluster_dims__` for
//! NVPTX without a word (the kernel ran without clusters) and CUDA's cooperative_groups.h
//! offered `this_cluster()` to nvcc alone; cdpc's header writes the first as an annotation that
//! `pipeline::cluster` makes nvcc's `.explicitcluster`/`.reqnctapercluster`, and lets the
//! second use the cluster intrinsics Clang's headers define.

use crate::build_common::{cdpc, nvcc, nvcc_ptx, stderr};
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

/// Each kernel's cluster directives (`.explicitcluster`, `.reqnctapercluster x, y, z`, and
/// `.maxclusterrank`), by symbol.
fn cluster_directives(ptx: &str) -> BTreeMap<String, Vec<String>> {
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
            if [".explicitcluster", ".reqnctapercluster", ".maxclusterrank"].iter().any(|d| line.starts_with(d)) {
                out.get_mut(name).unwrap().push(line.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
    }
    out
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

/// Below sm_90 nvcc refuses `__cluster_dims__` with its message at the kernel; so does cdpc.
#[test]
fn cluster_dims_below_sm_90_is_nvccs_error() {
    let Some(nvcc) = nvcc() else { return };
    let source = "__global__ void plain(int *p) { p[0] = 1; }\n__global__ void __cluster_dims__(2) k(int *p) { p[0] = 2; }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.cu"), source).unwrap();
    let theirs = std::process::Command::new(&nvcc)
        .current_dir(dir.path())
        .env("PATH", format!("{}:{}", nvcc.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default()))
        .args(["-arch=sm_80", "-rdc=true", "-ptx", "c.cu", "-o", "c.ptx"])
        .output()
        .unwrap();
    let theirs = stderr(&theirs);
    let message = "__cluster_dims__ is not supported for this GPU architecture";
    assert!(theirs.contains(&format!("c.cu(2): error: {message}")), "nvcc: {theirs}");
    let out = cdpc(dir.path(), &["c.cu", "-arch", "sm_80", "--emit", "ptx", "-o", "-", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let d: serde_json::Value = serde_json::from_str(stderr(&out).lines().next().unwrap()).unwrap();
    assert_eq!((d["code"].as_str(), d["message"].as_str()), (Some("E1000"), Some(message)), "{d}");
    assert_eq!(d["labels"][0]["line_start"], 2, "{d}");
}
