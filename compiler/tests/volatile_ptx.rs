//! `volatile` against nvcc: each function's volatile loads and stores (`ld.volatile`,
//! `st.volatile`, by state space) and the mangled names of functions whose parameters point to
//! volatile objects must be nvcc's. Volatile accesses are never merged, removed or invented
//! by an optimizer, so their number per function is the same for any correct compiler; the
//! order of the operands of `+` is unspecified in C++, so the accesses are compared as sets
//! with their counts. Local memory is the exception noted in `volatile_accesses`.

use crate::build_common::nvcc_ptx;
use cdpc::driver::{self, CompileOptions, Emit};
use std::collections::BTreeMap;

const SOURCE: &str = r#"
struct Ring { volatile unsigned int head; unsigned int tail; volatile void *base; };
struct Outer { Ring ring; int count; };
__device__ volatile int flag;
__device__ int plain;
__device__ const volatile int *cv_cursor;

// Through pointers to volatile; members declared volatile; volatile globals; compound
// assignment and increment are a volatile load and a volatile store each.
__global__ void through_pointers(volatile int *p, int *q, Ring *r, Outer *o) {
    p[threadIdx.x] = 1;
    int a = p[0];
    q[0] = a + p[1];
    r->head = r->head + 1;
    r->tail += 2;
    o->ring.head++;
    o->count = o->ring.tail;
    flag = 3;
    plain = flag;
    volatile int *s = q;
    *s += 4;
    (*s)++;
    q[1] = *cv_cursor;
}

// A spin on a flag another block sets, as in a global barrier.
__device__ void barrier_wait(unsigned goal, volatile unsigned *in, volatile unsigned *out) {
    while (in[0] != goal) { }
    out[blockIdx.x] = goal;
}

// A volatile shared array, an array of pointers to volatile, and casts to volatile pointers.
__global__ void shared_and_casts(unsigned *a) {
    __shared__ volatile int sm[32];
    sm[threadIdx.x] = threadIdx.x;
    volatile int *ptrs[4];
    ptrs[0] = (volatile int *)&sm[0];
    a[0] = *ptrs[0];
    a[2] = sm[1];
    barrier_wait(3, a, a + 1);
}

// A pointer to a volatile element, a volatile array parameter, and functions over volatile
// pointers.
__device__ __noinline__ void bump(volatile int *r) { *r = *r + 1; }
__device__ __noinline__ int read_once(volatile int *p) { return *p; }
__device__ __noinline__ float read_once_f(volatile float *p) { return *p; }
__global__ void references(volatile int v[], int *out, volatile float *f) {
    v[0] = 5;
    bump(&v[2]);
    out[0] = read_once(v);
    out[1] = (int)read_once_f(f);
}

// A volatile local lives in memory: every access is a volatile local load or store. (No
// loop: the compilers unroll loops differently, and the accesses are counted in the text.)
__global__ void volatile_local(int *out, int n) {
    volatile int counter = 0;
    counter = counter + n;
    counter += 2;
    int twice = counter * counter;
    out[0] = counter + twice;
}
"#;

/// For each function (by symbol), its volatile accesses as "ld.global", "st.shared", ... with
/// how many of each (the operand type is left out: nvcc writes `.u32` where LLVM writes `.b32`).
fn volatile_accesses(ptx: &str) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut out: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut current = None;
    for line in ptx.lines() {
        let line = line.trim();
        let header = [".visible .entry ", ".visible .func ", ".weak .func ", ".func "].iter().find_map(|p| line.strip_prefix(p));
        if let Some(rest) = header {
            // `.func (.param .b32 retval) name(` or `.entry name(`.
            let rest = rest.rsplit(')').next().filter(|r| !r.trim().is_empty()).unwrap_or(rest);
            let name = rest.trim().split('(').next().unwrap_or("").trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let Some(op) = line.split_whitespace().next() else { continue };
        let parts: Vec<&str> = op.split('.').collect();
        if parts.len() < 2 || !(parts[0] == "ld" || parts[0] == "st") {
            continue;
        }
        // Whether a pointer is known to point to global memory is the optimizer's inference,
        // not the program's meaning: global and generic accesses count together.
        let space = parts.iter().find(|p| ["shared", "local", "const", "param"].contains(p)).copied().unwrap_or("global");
        // LLVM's NVPTX back end writes a volatile access to local memory, which no other thread
        // sees, as a plain `ld.local`/`st.local`; nvcc keeps `.volatile`. Both make every access
        // (the program here has no other local memory), so local accesses count either way.
        if parts[1] == "volatile" || space == "local" {
            if let Some(f) = &current {
                *out.get_mut(f).unwrap().entry(format!("{}.{space}", parts[0])).or_default() += 1;
            }
        }
    }
    // nvcc's internal clones of a function (`.func _Z4bumpPVi$3`) are not the program's.
    out.retain(|name, _| !name.contains('$'));
    out
}

#[test]
fn volatile_accesses_and_names_match_nvcc() {
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let compiled = driver::compile(SOURCE, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}"));
    let ours = volatile_accesses(&String::from_utf8(compiled.output).unwrap());
    // The test is about something: every function has volatile accesses.
    assert!(ours.values().all(|a| !a.is_empty()), "{ours:#?}");
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    assert_eq!(ours, volatile_accesses(&theirs), "cdpc (left) and nvcc (right)");
}
