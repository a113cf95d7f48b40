//! Device function templates that host code names, against nvcc, the oracle.
//!
//! nvcc instantiates a kernel template wherever the program names an instance, host code
//! included (`k<128><<<1, 128>>>(p)` in `main`, `&k<int>` passed to a runtime call), and for an
//! explicit instantiation (`template __global__ void k<3>(P);`); so does Clang, which reads
//! the host code too (CUDA C++, `.cu`: templates are not the kernel language's). Each case
//! below is compiled by nvcc (`-arch=sm_90 -rdc=true -ptx`) and by cdpc through Clang (nvcc
//! makes no device code for a `__device__` or `__host__ __device__` template that only host
//! code names, and neither does cdpc); the `.entry` and `.func` symbols, with their linkage,
//! must be the same, and nvcc's must include the instances the case is about (so that the
//! comparison proves something).
//!
//! Skipped with a printed reason when nvcc is absent.

use crate::build_common::{nvcc_ptx, ptx_functions as functions};
use cdpc::driver::{self, CompileOptions, Emit};
use std::collections::BTreeSet;

fn cdpc_compile(source: &str) -> (BTreeSet<(String, String)>, Vec<cdpc::Diagnostic>) {
    let options = CompileOptions { emit: Emit::Ptx, language: Some(driver::Language::Cuda), separate: true, ..CompileOptions::default() };
    match driver::compile(source, &options) {
        Ok(compiled) => (functions(&String::from_utf8(compiled.output).unwrap()), compiled.warnings),
        Err(e) => panic!("cdpc failed: {e:?}\n{source}"),
    }
}

/// The kernel templates every case uses.
const TEMPLATES: &str = r#"
struct P { int a; float b; };
__device__ int sink;
template <int N> __global__ void k(int *p) { p[0] = N; }
template <typename T> __global__ void kt(T *p) { p[0] = p[1]; }
template <unsigned N, typename T> __global__ void kmix(T *p) { p[0] = (T)N; }
"#;

/// (what the case shows, its host code and extra device code, symbols nvcc must name).
const CASES: &[(&str, &str, &[&str])] = &[
    (
        "literal arguments",
        r#"
int main() {
    int *p = 0;
    k<1><<<1, 1>>>(p);
    k<-7><<<1, 1>>>(p);
    kmix<3u, float><<<2, 32>>>((float *)0);
    return 0;
}
"#,
        &["_Z1kILi1EEvPi", "_Z1kILin7EEvPi", "_Z4kmixILj3EfEvPT0_"],
    ),
    (
        "host-local constants, in order and in scope",
        r#"
int main(int argc, char **argv) {
    int *p = 0;
    const int    NUM_THREADS = 128;
    const int    NUM_WARPS = NUM_THREADS / 32, unused = argc;
    constexpr unsigned long SMEM = 4 * NUM_WARPS * sizeof(int);
    k<NUM_THREADS><<<1, NUM_THREADS, SMEM>>>(p);
    k<SMEM + 1><<<1, 1>>>(p);
    {
        const int NUM_THREADS = 7;
        k<NUM_THREADS><<<1, 1>>>(p);
    }
    static const char C = 'x';
    constexpr auto SHIFTED = NUM_THREADS << 2;
    kmix<NUM_THREADS, char><<<1, 1>>>((char *)0);
    kmix<SHIFTED, int><<<1, 1>>>(p);
    k<C><<<1, 1>>>(p);
    return unused;
}
"#,
        &["_Z1kILi128EEvPi", "_Z1kILi65EEvPi", "_Z1kILi7EEvPi", "_Z4kmixILj512EiEvPT0_", "_Z4kmixILj128EcEvPT0_", "_Z1kILi120EEvPi"],
    ),
    (
        "macros",
        r#"
#define THREADS 64
#define TWICE(x) ((x) * 2)
int main() {
    int *p = 0;
    k<THREADS><<<1, THREADS>>>(p);
    k<TWICE(THREADS)><<<1, 1>>>(p);
    return 0;
}
"#,
        &["_Z1kILi64EEvPi", "_Z1kILi128EEvPi"],
    ),
    (
        "file-scope constants and constexpr",
        r#"
constexpr int kFile = 32;
static constexpr int kStatic = kFile + 1;
const int cFile = 16;
void launch(int *p) {
    k<kFile><<<1, 1>>>(p);
    k<kStatic><<<1, 1>>>(p);
    k<cFile * 2 + 1><<<1, 1>>>(p);
}
int main() { launch(0); return 0; }
"#,
        &["_Z1kILi32EEvPi", "_Z1kILi33EEvPi"],
    ),
    (
        "type arguments",
        r#"
int main() {
    kt<float><<<1, 1>>>((float *)0);
    kt<unsigned int><<<1, 1>>>((unsigned *)0);
    kt<P><<<1, 1>>>((P *)0);
    kt<double *><<<1, 1>>>((double **)0);
    kmix<1, unsigned long long><<<1, 1>>>((unsigned long long *)0);
    return 0;
}
"#,
        &["_Z2ktIfEvPT_", "_Z2ktIjEvPT_", "_Z2ktI1PEvPT_", "_Z2ktIPdEvPT_", "_Z4kmixILj1EyEvPT0_"],
    ),
    (
        "instances passed to host calls",
        r#"
int main() {
    cudaFuncAttributes attr;
    cudaFuncGetAttributes(&attr, kt<int>);
    void *fp = (void *)&kt<unsigned char>;
    int blocks = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k<256>, 256, 0);
    void *args[] = { 0 };
    cudaLaunchKernel((const void *)&kmix<2, short>, dim3(1), dim3(1), args, 0, 0);
    return fp != 0;
}
"#,
        &["_Z2ktIiEvPT_", "_Z2ktIhEvPT_", "_Z1kILi256EEvPi", "_Z4kmixILj2EsEvPT0_"],
    ),
    (
        "explicit instantiations",
        r#"
template <typename T> __device__ __noinline__ int f(T x) { sink = (int)x; return (int)x + 1; }
template <int N> __global__ void ke(P q) { sink = N + q.a; }
namespace N { template <int M> __global__ void kn(int *p) { p[0] = M; } }
template __global__ void ke<3>(P);
template __global__ void k<12>(int *);
template __device__ int f<int>(int);
template __device__ int f<float>(float);
namespace N { template __global__ void kn<2>(int *); }
template __global__ void kt<float>(float *);
template <typename T> __host__ __device__ T mymax(T a, T b) { return a > b ? a : b; }
template __host__ __device__ int mymax<int>(int, int);
template <typename T> __device__ __noinline__ T dv(T a) { sink = 2; return a; }
template __device__ float dv<float>(float);   // Clang, unlike nvcc, wants the `__device__`
"#,
        &["_Z2keILi3EEv1P", "_Z1kILi12EEvPi", "_Z1fIiEiT_", "_Z1fIfEiT_", "_ZN1N2knILi2EEEvPi", "_Z2ktIfEvPT_", "_Z5mymaxIiET_S0_S0_", "_Z2dvIfET_S0_"],
    ),
    (
        "device and host-device templates that only host code names are no device code",
        r#"
template <typename T> __host__ __device__ T mymax(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __noinline__ T dv(T a) { sink = 2; return a; }
int main() {
    int m = mymax<int>(1, 2);
    void *p = (void *)&dv<int>;
    k<3><<<1, 1>>>(0);
    return m + (p != 0);
}
"#,
        &["_Z1kILi3EEvPi"],
    ),
    (
        "host and device uses share one instance; host code in a namespace",
        r#"
__global__ void parent(int *p) { k<5><<<1, 1>>>(p); kt<int><<<1, 1>>>(p); }
namespace N {
template <int M> __global__ void kn(int *p) { p[0] = M; }
void run(int *p) { kn<4><<<1, 1>>>(p); k<5><<<1, 1>>>(p); }
}
int main() { N::run(0); kt<int><<<1, 1>>>(0); parent<<<1, 1>>>(0); N::kn<9><<<1, 1>>>(0); return 0; }
"#,
        &["_Z1kILi5EEvPi", "_Z2ktIiEvPT_", "_ZN1N2knILi4EEEvPi", "_ZN1N2knILi9EEEvPi", "_Z6parentPi"],
    ),
    (
        "a recursive kernel template launched once from host code",
        r#"
template <int DEPTH> __global__ void tree(int *p, int level) {
    if (level < 3) tree<DEPTH><<<1, DEPTH>>>(p, level + 1);
    p[level] = DEPTH;
}
int main() {
    const int D = 4;
    tree<D><<<1, D>>>(0, 0);
    return 0;
}
"#,
        &["_Z4treeILi4EEvPii"],
    ),
];

#[test]
fn host_named_instances_are_nvccs() {
    for (what, code, expected) in CASES {
        let source = format!("{TEMPLATES}{code}");
        let Some(ptx) = nvcc_ptx(&source) else { return };
        let theirs = functions(&ptx);
        for symbol in *expected {
            assert!(theirs.iter().any(|(_, name)| name == symbol), "{what}: nvcc does not name {symbol}: {theirs:#?}");
        }
        let (ours, warnings) = cdpc_compile(&source);
        assert!(warnings.is_empty(), "{what}: {warnings:#?}");
        let missing: Vec<_> = theirs.difference(&ours).collect();
        let extra: Vec<_> = ours.difference(&theirs).collect();
        assert!(missing.is_empty() && extra.is_empty(), "{what}: nvcc only: {missing:#?}\ncdpc only: {extra:#?}");
    }
}
