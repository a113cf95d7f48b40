//! The built-ins of nvcc's front end that NVIDIA's headers call where Clang's do not replace
//! them (`__dp4a`, `__dp2a_lo`/`_hi`, `__nv_bswap16/32/64`, `__isGridConstant`, the grid
//! constant's `__cvta_*`), `__nv_aligned_device_malloc`, which Clang's wrapper leaves out, and
//! device `nan`/`nanf`, which Clang's math headers declare and never define: through cdpc they
//! were calls of undefined functions (nvlink's "Undefined reference", or E0104). nvcc's PTX of
//! the same source is the oracle: the same instructions, no undefined function but the
//! runtime's system call, and a linked cubin. And the C++ ABI's placeholder for a pure virtual
//! function, which Clang writes into device vtables and the device has no runtime to define:
//! nvcc's null slots (`pipeline::cxx_abi`).

use crate::build_common::{cdpc, nvcc_ptx, stderr};

const SOURCE: &str = r#"#include <cmath>
__global__ void builtins(int *p, unsigned *u, unsigned long long *q, void **v, const __grid_constant__ int4 g) {
    p[0] = __dp4a(p[1], p[2], 1) + __dp4a(u[3], u[4], 2u) + __dp4a(make_char4(1, 2, 3, 4), make_char4(5, 6, 7, p[5]), 3);
    p[6] = __dp2a_lo(p[7], p[8], 1) + __dp2a_lo(u[5], u[6], 1u) + __dp2a_hi(p[9], p[10], 1) + __dp2a_hi(u[7], u[8], 1u);
    u[0] = __nv_bswap16((unsigned short)u[1]) + __nv_bswap32(u[2]);
    q[0] = __nv_bswap64(q[1]);
    size_t a = __cvta_generic_to_grid_constant(&g);
    v[0] = __cvta_grid_constant_to_generic(a + p[11]);
    p[12] = __isGridConstant(p) + g.x;
}
__global__ void allocates(void **v, double *d, float *f, const char *tag) {
    v[0] = __nv_aligned_device_malloc(256, 128);
    d[0] = nan(tag);
    f[0] = nanf(tag);
    d[1] = std::nan("7");
}
"#;

/// The instructions of interest in a PTX text, as (opcode, count), sorted; statements inside an
/// assembly block's braces count.
fn instructions(ptx: &str) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for statement in ptx.lines().flat_map(|l| l.trim().trim_matches(|c| c == '{' || c == '}').split(';')) {
        let Some(op) = statement.split_whitespace().next() else { continue };
        if ["dp4a.", "dp2a.", "cvta.param", "cvta.to.param", "isspacep.param"].iter().any(|p| op.starts_with(p)) {
            *counts.entry(op.to_string()).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}

/// The functions a PTX text calls without defining them.
fn undefined(ptx: &str) -> Vec<String> {
    let mut out: Vec<String> = ptx.lines().filter(|l| l.starts_with(".extern .func")).filter_map(|l| l.split_whitespace().last().map(|s| s.trim_end_matches('(').to_string())).collect();
    out.sort();
    out
}

#[test]
fn nvccs_builtins_are_its_instructions_and_link() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let expected = instructions(&theirs);
    // The oracle says something: the dot products and the grid constant's conversions.
    assert!(expected.iter().any(|(op, _)| op == "dp4a.s32.s32") && expected.iter().any(|(op, _)| op == "cvta.to.param.u64"), "nvcc:\n{theirs}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.cu"), SOURCE).unwrap();
    let out = cdpc(dir.path(), &["b.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    // nvcc folds the grid constant's test (its argument is a parameter's address); cdpc asks.
    let ours_without_test: Vec<_> = instructions(&ours).into_iter().filter(|(op, _)| !op.starts_with("isspacep")).collect();
    assert_eq!(ours_without_test, expected, "cdpc:\n{ours}");
    assert_eq!(undefined(&ours), undefined(&theirs), "cdpc:\n{ours}");
    assert_eq!(undefined(&ours), ["__cuda_syscall_aligned_malloc"]);
    let out = cdpc(dir.path(), &["b.cu", "-o", "b.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["-dc", "b.cu", "-o", "b.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// An abstract class's vtable in device code: nvcc writes its pure slots as 0 (the device has
/// no C++ runtime to define `__cxa_pure_virtual`); so does cdpc, and the program links.
#[test]
fn pure_virtual_slots_are_nvccs_null() {
    let source = r#"__device__ __noinline__ void touch(const void *p) { asm volatile("" ::"l"(p) : "memory"); }
template <class T> struct Store {
    __device__ virtual ~Store() { touch(this); }
    __device__ virtual void put(T v) = 0;
    __device__ virtual T take() = 0;
};
template <class T> struct Stack : Store<T> {
    T items[8];
    int n = 0;
    __device__ void put(T v) override { items[n++ % 8] = v; }
    __device__ T take() override { return n > 0 ? items[--n % 8] : T(); }
};
__device__ Store<int> *store;
__global__ void make() { store = new Stack<int>(); }
__global__ void use(int *out) { store->put(3); out[0] = store->take(); delete store; }
"#;
    let Some(theirs) = nvcc_ptx(source) else { return };
    let vtables = |ptx: &str| {
        let mut v: Vec<String> = ptx.lines().filter(|l| l.contains(" _ZTV") && l.contains(" = {")).map(str::to_string).collect();
        v.sort();
        v
    };
    let expected = vtables(&theirs);
    assert!(expected.iter().any(|l| l.contains("_ZTV5StoreIiE[6] = {0, 0, _ZN5StoreIiED1Ev, _ZN5StoreIiED0Ev, 0, 0}")), "nvcc:\n{theirs}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["v.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(vtables(&ours), expected, "cdpc:\n{ours}");
    assert_eq!(undefined(&ours), undefined(&theirs), "only the device heap's system calls");
    let out = cdpc(dir.path(), &["v.cu", "-o", "v.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
