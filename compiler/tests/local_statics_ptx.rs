//! A function's `static` and `__shared__` variables under nvcc's names and linkage, through
//! both front ends: C++'s name of a local entity (`_ZZ2k2PiiE1a`, `_ZZ2ckE5count` in an
//! `extern "C"` kernel, `_a_0`-style discriminators for a name used again in one function,
//! `__shared__` ones counted too), internal, whatever the kernel's own linkage. The kernel
//! language named them `k2__a` with `.visible`, so two files with such a local in functions of
//! one name could not be linked together. nvcc is the oracle.

use crate::build_common::{cdpc, nvcc_ptx, stderr};
use std::collections::BTreeSet;

const SOURCE: &str = r#"
extern "C" __global__ void ck(int *p) { static __device__ int count; count++; *p = count; }
__global__ void k2(int *p, int q) {
    { static __device__ int a; a++; p[0] = a; }
    { static __device__ int a; a += 2; p[1] = a; }
    { __shared__ int a[4]; a[threadIdx.x] = q; p[2] = a[0]; }
    static __device__ float b; b += 1; p[3] = (int)b;
    ck<<<1, 1>>>(p);
}
static __global__ void sk(int *p) { static __device__ int c; c++; *p = c; }
__global__ void launch_sk(int *p) { sk<<<1, 1>>>(p); }
"#;

/// Every `.global` and `.shared` variable a PTX text defines, as `LINKAGE SPACE NAME`.
fn variables(ptx: &str) -> BTreeSet<String> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with(".extern"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let space = words.iter().find(|w| **w == ".global" || **w == ".shared")?;
            let linkage = if words[0] == ".visible" { ".visible" } else { "local" };
            let name = words.last()?.trim_end_matches(';').split('[').next()?;
            Some(format!("{linkage} {space} {name}"))
        })
        .collect()
}

#[test]
fn local_statics_have_nvccs_names_and_linkage() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let theirs = variables(&theirs);
    // The oracle says something: five statics and one shared array, none visible.
    assert_eq!(theirs.len(), 6, "{theirs:?}");
    assert!(theirs.contains("local .shared _ZZ2k2PiiE1a_1") && theirs.contains("local .global _ZZ2ckE5count"), "{theirs:?}");
    let dir = tempfile::tempdir().unwrap();
    for file in ["locals.cdp", "locals.cu"] {
        std::fs::write(dir.path().join(file), SOURCE).unwrap();
        // Launches as nvcc writes them: the default's thresholding adds its own block words.
        let out = cdpc(dir.path(), &[file, "--emit", "ptx", "-o", "-", "-fno-launch-optimizations"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        assert_eq!(variables(&String::from_utf8_lossy(&out.stdout)), theirs, "{file}");
    }
}
