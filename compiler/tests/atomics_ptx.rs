//! CUDA's atomic functions as nvcc compiles them, nvcc's PTX of the same source the
//! oracle. `atomicCAS`: relaxed, of device scope, no fence, through both front ends; Clang's
//! CUDA headers write it as a sequentially consistent `cmpxchg` in the system scope, which
//! LLVM 22's NVPTX gives a `fence.sc.sys` and an `atom.acquire.sys.cas` (7.1x nvcc's time on
//! `samples/bfs.cdp` thresholded, whose serial copy makes them in a row), and
//! `pipeline::atomics` gives Clang's IR nvcc's order and scope. The unsigned `_block` and
//! `_system` minimum and maximum: unsigned comparisons, which Clang 22 made signed
//! (`clang::unsigned_scoped_min_max`).

use crate::build_common::{cdpc_ptx as ours, nvcc_ptx};

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
    // docs/CUDA-CXX.md, "nvcc's atomics"); its order is nvcc's all the same.
    let source = "__global__ void half_word(unsigned short *p, unsigned short *out) { out[0] = atomicCAS(p, (unsigned short)threadIdx.x, (unsigned short)7); }\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    assert!(fences(&theirs).is_empty(), "nvcc:\n{theirs}");
    let ptx = ours("half.cu", source);
    assert_eq!(fences(&ptx), Vec::<&str>::new(), "{ptx}");
    assert!(exchanges(&ptx).iter().all(|(scope, sem, _)| scope == "gpu" && sem == "relaxed"), "{ptx}");
}

/// The minimum and maximum instructions of a PTX text as (scope, operation, type), PTX's
/// default scope written out, in order; the state space left out.
fn min_max(ptx: &str) -> Vec<(String, String, String)> {
    ptx.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| op.starts_with("atom.") && op.split('.').any(|q| q == "min" || q == "max"))
        .map(|op| {
            let q: Vec<&str> = op.split('.').collect();
            let scope = q.iter().find(|x| ["cta", "cluster", "gpu", "sys"].contains(x)).map_or("gpu", |x| *x);
            let what = q.iter().find(|x| **x == "min" || **x == "max").unwrap();
            (scope.to_string(), what.to_string(), q.last().unwrap().to_string())
        })
        .collect()
}

#[test]
fn unsigned_scoped_minimum_and_maximum_compare_unsigned_as_in_nvcc() {
    let source = r#"
__global__ void scoped(unsigned *u, unsigned long long *ull, int *i, long long *ll)
{
    u[1] = atomicMax_block(u, 5u);
    u[2] = atomicMax_system(u, 5u);
    u[3] = atomicMin_block(u, 5u);
    u[4] = atomicMin_system(u, 5u);
    ull[1] = atomicMax_block(ull, 5ull);
    ull[2] = atomicMax_system(ull, 5ull);
    ull[3] = atomicMin_block(ull, 5ull);
    ull[4] = atomicMin_system(ull, 5ull);
    i[1] = atomicMax_block(i, 5);
    ll[1] = atomicMin_system(ll, 5ll);
    u[5] = atomicMax(u, 5u);
    ull[5] = atomicMin(ull, 5ull);
}
"#;
    let Some(theirs) = nvcc_ptx(source) else { return };
    let expected = min_max(&theirs);
    // The oracle says something: eight unsigned scoped ones, two signed, two unscoped.
    assert_eq!(expected.len(), 12, "nvcc:\n{theirs}");
    assert_eq!(expected.iter().filter(|(scope, _, ty)| scope != "gpu" && ty.starts_with('u')).count(), 8, "{expected:?}");
    let ptx = ours("scoped.cu", source);
    assert_eq!(min_max(&ptx), expected, "{ptx}");
    assert_eq!(fences(&ptx), Vec::<&str>::new(), "{ptx}");
}

/// Every atomic instruction of a PTX text, in order, the state space and PTX's default
/// `.relaxed` left out (`atom.global.cta.add.u32` is `atom.cta.add.u32`).
fn atoms(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| op.starts_with("atom."))
        .map(|op| op.split('.').filter(|q| !["global", "shared", "relaxed"].contains(q)).collect::<Vec<_>>().join("."))
        .collect()
}

/// The kernel language's `_block` and `_system` atomics (sm_60's), each nvcc's instruction of
/// its scope: LLVM 22's NVPTX writes every `atomicrmw` in the device scope, so `back` writes
/// them as nvcc's instruction in assembly (`scoped_atomic`), and `atomicCAS`'s as a `cmpxchg`
/// of their scope.
#[test]
fn the_kernel_languages_scoped_atomics_are_nvccs_instructions() {
    let source = r#"
extern "C" __global__ void scoped(int *i, unsigned int *u, unsigned long long *ull, long long *ll, float *f, double *d, int *out)
{
    int t = threadIdx.x;
    out[0] = atomicAdd_block(i, t);
    out[1] = atomicAdd_system(i, t);
    out[2] = (int)atomicAdd_block(u, 2u);
    out[3] = (int)atomicAdd_system(ull, 3ull);
    out[4] = (int)atomicAdd_block(f, 1.5f);
    out[5] = (int)atomicAdd_system(d, 2.5);
    out[6] = atomicSub_block(i, t);
    out[7] = (int)atomicSub_system(u, 4u);
    out[8] = atomicExch_block(i, t);
    out[9] = (int)atomicExch_system(f, 3.0f);
    out[10] = (int)atomicExch_block(ull, 5ull);
    out[11] = atomicMin_block(i, t);
    out[12] = (int)atomicMax_system(u, 7u);
    out[13] = (int)atomicMin_system(ll, 9ll);
    out[14] = (int)atomicMax_block(ull, 11ull);
    out[15] = (int)atomicInc_block(u, 13u);
    out[16] = (int)atomicDec_system(u, 13u);
    out[17] = atomicAnd_block(i, t);
    out[18] = (int)atomicOr_system(ull, 6ull);
    out[19] = (int)atomicXor_block(u, 8u);
    out[20] = atomicCAS_block(i, t, 3);
    out[21] = (int)atomicCAS_system(ull, 1ull, 2ull);
    out[22] = atomicAdd(i, t);
}
"#;
    let Some(theirs) = nvcc_ptx(source) else { return };
    let expected = atoms(&theirs);
    // The oracle says something: 23 instructions, all but the last scoped, `atomicMax_system` of
    // an unsigned int unsigned.
    assert_eq!(expected.len(), 23, "nvcc:\n{theirs}");
    assert!(expected.contains(&"atom.sys.max.u32".to_string()) && expected[22] == "atom.add.u32", "{expected:?}");
    let ptx = ours("scoped.cdp", source);
    assert_eq!(atoms(&ptx), expected, "{ptx}");
}

/// CUDA's 128-bit `atomicCAS` and `atomicExch` and their `_block` and `_system` forms, of a
/// 16-byte record, from sm_90: nvcc's crt/sm_90_rt.h templates, which Clang's wrapper left out
/// ("no matching function for call to 'atomicCAS'"), in cdpc's additions header. The same
/// operations, scopes and semantics as nvcc's PTX (nvcc writes the global space it infers and
/// leaves out the default `.relaxed` and `.gpu`); below sm_90 both refuse the call.
#[test]
fn atomics_of_128_bits_are_nvccs_instructions() {
    let source = r#"
struct __align__(16) Pair { unsigned long long a, b; };
extern "C" __global__ void wide(Pair *p, Pair x, Pair y)
{
    p[1] = atomicCAS(p, x, y);
    p[2] = atomicCAS_block(p, x, y);
    p[3] = atomicCAS_system(p, x, y);
    p[4] = atomicExch(p + 5, y);
    p[6] = atomicExch_block(p + 5, x);
    p[7] = atomicExch_system(p + 5, y);
}
"#;
    // (operation, semantics, scope) of each 128-bit atomic, in order, the defaults written out.
    let atomics = |ptx: &str| -> Vec<(String, String, String)> {
        ptx.split(['\n', ';'])
            .filter_map(|s| s.trim_start().strip_prefix("atom."))
            .filter(|s| s.contains(".b128"))
            .map(|s| {
                let parts: Vec<&str> = s.split_whitespace().next().unwrap().split('.').filter(|p| !["global", "b128"].contains(p)).collect();
                let sem = parts.iter().find(|p| ["relaxed", "acquire", "release", "acq_rel"].contains(p)).unwrap_or(&"relaxed");
                let scope = parts.iter().find(|p| ["cta", "cluster", "gpu", "sys"].contains(p)).unwrap_or(&"gpu");
                let op = parts.iter().find(|p| ["cas", "exch"].contains(p)).expect("an operation");
                (op.to_string(), sem.to_string(), scope.to_string())
            })
            .collect()
    };
    let Some(theirs) = nvcc_ptx(source) else { return };
    let expected = atomics(&theirs);
    assert_eq!(expected.len(), 6, "nvcc:\n{theirs}");
    assert_eq!(atomics(&ours("wide.cu", source)), expected);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.cu"), source).unwrap();
    let nvcc = crate::build_common::nvcc().expect("nvcc, which gave the PTX above");
    let refused = crate::build_common::nvcc_refusal(&nvcc, dir.path(), &["-arch=sm_80", "-ptx", "wide.cu", "-o", "wide80.ptx"]);
    assert!(refused.contains("no instance of overloaded function \"atomicCAS\""), "{refused}");
    let out = crate::build_common::cdpc(dir.path(), &["wide.cu", "-arch=sm_80", "--emit", "ptx", "-o", "wide.ptx"]);
    assert!(!out.status.success() && crate::build_common::stderr(&out).contains("no matching function for call to 'atomicCAS'"), "{}", crate::build_common::stderr(&out));
}
