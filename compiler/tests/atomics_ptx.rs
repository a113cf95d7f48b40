//! `atomicCAS` as nvcc compiles it: relaxed, of device scope, no fence (issue 28). Clang's
//! CUDA headers write it as a sequentially consistent `cmpxchg` in the system scope, which
//! LLVM 22's NVPTX gives a `fence.sc.sys` and an `atom.acquire.sys.cas` (7.1x nvcc's time on
//! `samples/bfs.cdp` thresholded, whose serial copy makes them in a row);
//! `pipeline::atomics` gives Clang's IR nvcc's order and scope. nvcc's PTX of the same source
//! is the oracle, for both front ends.

use crate::build_common::{cdpc, nvcc_ptx, stderr};

/// Every compare-and-swap of the kernel language's atomic functions: 32 and 64 bits, global
/// and shared memory, a result used as a value and one compared (LLVM then reads the
/// instruction's success bit).
const COMMON: &str = r#"
extern "C" __global__ void cas_kinds(int *i, unsigned int *u, unsigned long long *ull, int *out)
{
    __shared__ int word;
    int t = threadIdx.x;
    if (t == 0)
        word = 0;
    __syncthreads();
    out[0] = atomicCAS(i, t, t + 1);
    out[1] = (int)atomicCAS(u, (unsigned int)t, t + 1u);
    out[2] = (int)atomicCAS(ull, (unsigned long long)t, t + 1ull);
    out[3] = atomicCAS(&word, t, t + 1);
    if (atomicCAS(i, -1, t) == -1)
        atomicAdd(u, 1u);
}
"#;

/// CUDA C++'s scoped forms beside them, which Clang writes as intrinsics of their own scope.
const SCOPED: &str = r#"
extern "C" __global__ void cas_scopes(int *i, int *out)
{
    int t = threadIdx.x;
    out[0] = atomicCAS_block(i, t, 3);
    out[1] = atomicCAS_system(i, t, 4);
    out[2] = atomicCAS(i, t, 5);
}
"#;

/// The compare-and-swaps of a PTX text as (scope, semantics, width), PTX's defaults written
/// out (`atom.global.cas.b32` is `.relaxed` and `.gpu`), sorted; the state space left out
/// (LLVM writes a generic address where it cannot prove the global one).
fn exchanges(ptx: &str) -> Vec<(String, String, String)> {
    let mut found: Vec<_> = ptx
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| op.starts_with("atom.") && op.split('.').any(|q| q == "cas"))
        .map(|op| {
            let q: Vec<&str> = op.split('.').collect();
            let pick = |set: &[&str], default: &str| q.iter().find(|x| set.contains(x)).map_or(default, |x| *x).to_string();
            (pick(&["cta", "cluster", "gpu", "sys"], "gpu"), pick(&["relaxed", "acquire", "release", "acq_rel"], "relaxed"), q.last().unwrap().to_string())
        })
        .collect();
    found.sort();
    found
}

fn fences(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter(|l| l.starts_with("fence") || l.starts_with("membar")).collect()
}

fn ours(file: &str, source: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), source).unwrap();
    let out = cdpc(dir.path(), &[file, "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{file}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn atomic_cas_is_relaxed_and_of_device_scope_as_nvccs_through_both_front_ends() {
    let Some(theirs) = nvcc_ptx(COMMON) else { return };
    let expected = exchanges(&theirs);
    // The oracle says something: five exchanges, none fenced, all relaxed of device scope.
    assert_eq!(expected.len(), 5, "nvcc:\n{theirs}");
    assert!(expected.iter().all(|(scope, sem, _)| scope == "gpu" && sem == "relaxed"), "{expected:?}");
    assert!(fences(&theirs).is_empty(), "nvcc:\n{theirs}");
    for file in ["cas.cdp", "cas.cu"] {
        let ptx = ours(file, COMMON);
        assert_eq!(exchanges(&ptx), expected, "{file}:\n{ptx}");
        assert_eq!(fences(&ptx), Vec::<&str>::new(), "{file}:\n{ptx}");
    }
}

#[test]
fn the_block_and_system_forms_keep_their_scope_as_in_nvcc() {
    let Some(theirs) = nvcc_ptx(SCOPED) else { return };
    let expected = exchanges(&theirs);
    let scopes: Vec<&str> = expected.iter().map(|(scope, _, _)| scope.as_str()).collect();
    assert_eq!(scopes, ["cta", "gpu", "sys"], "nvcc:\n{theirs}");
    let ptx = ours("scopes.cu", SCOPED);
    assert_eq!(exchanges(&ptx), expected, "{ptx}");
    assert_eq!(fences(&ptx), Vec::<&str>::new(), "{ptx}");
}

#[test]
fn a_16_bit_atomic_cas_has_no_fence_as_in_nvcc() {
    // LLVM's NVPTX makes a 16-bit exchange a loop of 32-bit ones (nvcc has `atom.cas.b16`,
    // README, "CUDA C++ through Clang"); its order is nvcc's all the same.
    let source = "__global__ void half_word(unsigned short *p, unsigned short *out) { out[0] = atomicCAS(p, (unsigned short)threadIdx.x, (unsigned short)7); }\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    assert!(fences(&theirs).is_empty(), "nvcc:\n{theirs}");
    let ptx = ours("half.cu", source);
    assert_eq!(fences(&ptx), Vec::<&str>::new(), "{ptx}");
    assert!(exchanges(&ptx).iter().all(|(scope, sem, _)| scope == "gpu" && sem == "relaxed"), "{ptx}");
}
