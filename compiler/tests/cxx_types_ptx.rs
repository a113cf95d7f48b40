//! C++ types against nvcc, the oracle: structs, classes and typedefs declared in namespaces
//! (named `n::P`, from inside the namespace, through `using namespace` and namespace aliases),
//! their member functions, and class templates' instances (`Buf<int, 4>`).
//!
//! Each case is compiled by nvcc (`-arch=sm_90 -rdc=true -ptx`) and by cdpc (the C++ cases
//! through Clang, as CUDA C++; enums and arrays by the kernel language); the `.entry` and
//! `.func` symbols (with their linkage) must be the same, nvcc's must include the symbols the
//! case is about (so that the comparison proves something), and every kernel's `.param` list
//! (each parameter's alignment and size, which is the struct layout a launch stores) must be
//! the same. Skipped with a printed reason when nvcc is absent.

use crate::build_common::{nvcc_ptx, ptx_functions as functions};
use cdpc::driver::{self, CompileOptions, Emit, Language};
use std::collections::BTreeMap;

/// Every kernel's parameter list: its `.param` lines without the pointer annotations
/// (`.ptr .align 1`, which cdpc writes and nvcc does not).
fn kernel_params(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut lines = ptx.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(rest) = line.split(".entry ").nth(1) else { continue };
        let name = rest.trim_end_matches('(').to_string();
        let mut params = Vec::new();
        for p in lines.by_ref() {
            if !p.starts_with(".param") {
                break;
            }
            let words: Vec<&str> = p.trim_end_matches(',').split_whitespace().collect();
            let mut kept = Vec::new();
            let mut i = 0;
            while i < words.len() {
                match words[i] {
                    ".ptr" => i += 1,
                    ".global" | ".shared" | ".const" | ".local" if kept.last() != Some(&".param".to_string()) => i += 1,
                    ".align" if words.get(i + 2).is_some_and(|w| !w.starts_with(".b8")) && kept.len() >= 2 => i += 2,
                    w => {
                        kept.push(w.to_string());
                        i += 1;
                    }
                }
            }
            params.push(kept.join(" "));
        }
        out.insert(name, params);
    }
    out
}

/// CUDA C++ through Clang: the C++ cases.
fn cdpc_ptx(source: &str) -> String {
    cdpc_ptx_as(Language::Cuda, source)
}

/// The kernel language's cases (enums, arrays) go through cdpc's own front end. Relocatable
/// PTX (`separate`), as nvcc's oracle is (`-rdc=true`): every definition stays visible.
fn cdpc_ptx_as(language: Language, source: &str) -> String {
    let options = CompileOptions { emit: Emit::Ptx, language: Some(language), separate: true, ..CompileOptions::default() };
    match driver::compile(source, &options) {
        Ok(compiled) => String::from_utf8(compiled.output).unwrap(),
        Err(e) => panic!("cdpc failed: {e}\n{source}"),
    }
}

/// Compiles `source` with both compilers and compares symbols and kernel parameters.
fn compare(what: &str, source: &str, expected: &[&str]) -> bool {
    compare_as(Language::Cuda, what, source, expected)
}

fn compare_as(language: Language, what: &str, source: &str, expected: &[&str]) -> bool {
    let Some(nvcc) = nvcc_ptx(source) else { return false };
    let ours = cdpc_ptx_as(language, source);
    let (mut theirs, mut mine) = (functions(&nvcc), functions(&ours));
    // The base-object constructor (`C2`), which Clang writes and nvcc may leave out, and nvcc's
    // clones of its own (`_Z3useP3BufIiLi4EE$1`, a local copy of a visible function).
    theirs.retain(|(_, s)| !s.contains("C2E") && !s.contains('$'));
    mine.retain(|(_, s)| !s.contains("C2E"));
    for symbol in expected {
        assert!(theirs.iter().any(|(_, s)| s == symbol), "{what}: nvcc does not define `{symbol}`: {theirs:?}");
    }
    assert_eq!(mine, theirs, "{what}: the functions differ (left cdpc, right nvcc)\n{source}");
    assert_eq!(kernel_params(&ours), kernel_params(&nvcc), "{what}: kernel parameters differ (left cdpc, right nvcc)\n{source}");
    true
}

/// [`compare`] on each case, stopping at the first that cannot run (no nvcc).
fn compare_cases(cases: &[(&str, &str, &[&str])]) {
    for (what, source, expected) in cases {
        if !compare(what, source, expected) {
            return;
        }
    }
}

#[test]
fn kernel_params_reads_alignment_and_size() {
    let ptx = ".visible .entry _Z1kPi(\n\t.param .align 8 .b8 _Z1kPi_param_0[16],\n\t.param .u64 .ptr .align 1 _Z1kPi_param_1\n)\n";
    let params = kernel_params(ptx);
    assert_eq!(params["_Z1kPi"], [".param .align 8 .b8 _Z1kPi_param_0[16]", ".param .u64 _Z1kPi_param_1"]);
}

#[test]
fn types_in_namespaces() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("a struct in a namespace, by qualified name", "namespace n { struct P { int x; }; }\n__global__ void k(n::P p, int *o) { n::P q = p; *o = q.x; }\n", &["_Z1kN1n1PEPi"]),
        (
            "nested namespaces, typedefs, unqualified names inside, member functions",
            r#"
namespace n {
struct P { int x; float y; };
typedef P PT;
struct Q : P { int z; __device__ int get() const { return x + z; } __device__ void set(P p); __device__ void f(); };
__device__ void Q::set(P p) { x = p.x; }
namespace m { struct R { P p; double d; char c; }; }
__device__ int use(P p, m::R *r) { Q q; q.set(p); q.f(); return q.get() + r->p.x; }
}
__device__ void n::Q::f() { z = 0; }
namespace al = n;
using namespace n;
__global__ void k(n::P p, int *o) { n::P q = p; *o = q.x; }
__global__ void k2(al::m::R r, PT t, Q *q, int *o) { *o = n::use(t, &r) + q->get(); }
__global__ void k3(n::m::R r, n::m::R *s, P p, n::Q q) { s->p = p; }
"#,
            &["_ZN1n1Q3setENS_1PE", "_ZN1n1Q1fEv", "_ZN1n3useENS_1PEPNS_1m1RE", "_Z2k2N1n1m1RENS_1PEPNS_1QEPi", "_Z2k3N1n1m1REPS1_NS_1PENS_1QE"],
        ),
        (
            "a class with a constructor in a namespace, two namespaces with the same class name",
            r#"
namespace a {
class V { public: int v[3]; __device__ V(int x); __device__ int sum() const; };
__device__ V::V(int x) { v[0] = x; v[1] = x; v[2] = x; }
}
__device__ int a::V::sum() const { return v[0] + v[1] + v[2]; }
namespace b { struct V { char c; double d; }; __device__ int g(V v, a::V w) { return v.c + w.sum(); } }
__global__ void k(a::V v, b::V w, int *o) { a::V x(3); *o = x.sum() + b::g(w, v); }
"#,
            &["_ZN1a1VC1Ei", "_ZNK1a1V3sumEv", "_ZN1b1gENS_1VEN1a1VE", "_Z1kN1a1VEN1b1VEPi"],
        ),
    ];
    compare_cases(cases);
}

#[test]
fn class_templates() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "instances as kernel parameters (by value, pointer, reference), nested with `>>`, defaults, members in and out of class",
            r#"
template <typename T, int N = 4> struct Buf { T data[N]; __device__ __noinline__ T sum() const { T s = 0; for (int i = 0; i < N; i++) s += data[i]; return s; } __device__ void fill(T v); __device__ void add(const Buf &o); };
template <typename T, int N> __device__ __noinline__ void Buf<T, N>::fill(T v) { for (int i = 0; i < N; i++) data[i] = v; }
template <typename T, int N> __device__ __noinline__ void Buf<T, N>::add(const Buf &o) { for (int i = 0; i < N; i++) data[i] += o.data[i]; }
struct P { char c; double d; };
namespace n { template <class T> struct W { T v; char tag; }; struct Q { int q; }; }
__device__ __noinline__ int use(Buf<int, 4> *b) { b->fill(1); b->add(*b); return b->sum(); }
__global__ void k(Buf<int, 4> b, int *o) { *o = b.sum() + use(&b); }
__global__ void k2(Buf<Buf<int, 2>, 3> b, Buf<int> c, Buf<int, 2> d, Buf<char, 3> e) { }
__global__ void k3(n::W<P> w, n::W<n::Q> *x, n::W<n::W<short>> y, Buf<P, 1> z, Buf<int, 4> &r) { }
__global__ void k5(Buf<unsigned, 3u> a, Buf<long, -2 + 5> b, Buf<bool, 1> c, Buf<int *, 2> d, Buf<const int *, 2> e) {}
"#,
            &[
                "_Z1k3BufIiLi4EEPi",
                "_ZNK3BufIiLi4EE3sumEv",
                "_ZN3BufIiLi4EE4fillEi",
                "_ZN3BufIiLi4EE3addERKS0_",
                "_Z2k23BufIS_IiLi2EELi3EES_IiLi4EES0_S_IcLi3EE",
                "_Z2k3N1n1WI1PEEPNS0_INS_1QEEENS0_INS0_IsEEEE3BufIS1_Li1EERS8_IiLi4EE",
                "_Z2k53BufIjLi3EES_IlLi3EES_IbLi1EES_IPiLi2EES_IPKiLi2EE",
            ],
        ),
        (
            "instances in function templates' signatures: explicit and deduced arguments, defaults, non-type parameters",
            r#"
template <typename T, int N = 4> struct Buf { T data[N]; __device__ T first() const { return data[0]; } };
template <class T> __global__ void kt(Buf<T, 2> b, T *out) { *out = b.data[0]; }
template <class T, int M> __global__ void kt2(Buf<T, M> b, Buf<T, M> *c) { }
template <class T> __device__ __noinline__ T get(const Buf<T> *b, Buf<Buf<T, 1>, 2> *e) { return b->first(); }
__device__ Buf<char, 5> gc;
__global__ void launcher(float *f) { Buf<float, 2> b; b.data[0] = 1; kt<float><<<1, 1>>>(b, f); kt<<<1,1>>>(b, f); kt2<<<1,1>>>(gc, &gc); Buf<int> d; f[1] = get(&d, (Buf<Buf<int, 1>, 2> *)0); }
"#,
            &["_Z2ktIfEv3BufIT_Li2EEPS1_", "_Z3kt2IcLi5EEv3BufIT_XT0_EEPS2_", "_Z3getIiET_PK3BufIS0_Li4EEPS1_IS1_IS0_Li1EELi2EE"],
        ),
        (
            "a class template in a namespace: constructors, static and const members, a member returning the instance, locals and temporaries",
            r#"
namespace ns {
template <typename T, int N = 2> class Vec {
public:
    T v[N];
    __device__ Vec(T x) { for (int i = 0; i < N; i++) v[i] = x; }
    __device__ __noinline__ T dot(const Vec &o) const { T s = 0; for (int i = 0; i < N; i++) s += v[i] * o.v[i]; return s; }
    __device__ static __noinline__ int size() { return N; }
    __device__ Vec scaled(T k) const;
};
template <typename T, int N> __device__ __noinline__ Vec<T, N> Vec<T, N>::scaled(T k) const { Vec r(0); for (int i = 0; i < N; i++) r.v[i] = v[i] * k; return r; }
__device__ __noinline__ float norm2(Vec<float, 3> a) { return a.dot(a); }
}
using namespace ns;
__global__ void k(Vec<float, 3> a, ns::Vec<double> b, float *out) {
    Vec<float, 3> c(2.0f);
    Vec<float, 3> d = c.scaled(3.0f);
    out[0] = d.dot(a) + norm2(c);
    Vec<int, 3> e(1);
    out[2] = e.dot(Vec<int, 3>(2));
    out[1] = (float)b.dot(b);
}
"#,
            &["_Z1kN2ns3VecIfLi3EEENS0_IdLi2EEEPf", "_ZNK2ns3VecIfLi3EE6scaledEf", "_ZNK2ns3VecIfLi3EE3dotERKS1_", "_ZN2ns5norm2ENS_3VecIfLi3EEE", "_ZNK2ns3VecIdLi2EE3dotERKS1_"],
        ),
        (
            "an instance as a field, static members through an object, explicit and deduced non-type arguments of launched kernel templates",
            r#"
template <typename T, int N = 2> struct Buf { T data[N]; __device__ static int size() { return N; } __device__ T sum() const { T s = 0; for (int i = 0; i < N; i++) s += data[i]; return s; } };
struct Holder { Buf<float> b; int tag; };
template <class T, int M> __global__ void kt(Buf<T, M> b, T *out) { *out = b.sum() + b.size(); }
__device__ float *gf;
__global__ void k(Holder h, Buf<float, 3> *p, float *out) { Buf<float, 2> b = h.b; out[0] = b.sum() + p->sum() + b.size(); kt<float, 2><<<1, 1>>>(b, gf); kt<<<1, 1>>>(*p, gf); }
"#,
            &["_Z1k6HolderP3BufIfLi3EEPf", "_Z2ktIfLi2EEv3BufIT_XT0_EEPS1_", "_Z2ktIfLi3EEv3BufIT_XT0_EEPS1_"],
        ),
        (
            "instances nested three deep, closed by `>>` and `>>>`, a shift inside parentheses as an argument",
            r#"
template <typename T, int N = 1> struct Buf { T x[N]; };
__global__ void k(Buf<Buf<Buf<int>>> a, Buf<Buf<Buf<Buf<char, 3>>, 2>> *b, Buf<Buf<Buf<short, 2>, (8 >> 2)>> c) { }
"#,
            &["_Z1k3BufIS_IS_IiLi1EELi1EELi1EEPS_IS_IS_IS_IcLi3EELi1EELi2EELi1EES_IS_IS_IsLi2EELi2EELi1EE"],
        ),
        (
            "static constexpr members in the layout and in constants, static member functions named through the instance",
            r#"
template <typename T, int N = 2> struct Buf {
    static constexpr int size = N * 2;
    static const int twice = size * 2;
    T data[size];
    __device__ static __noinline__ int count(int x) { return x * size + twice; }
    __device__ __noinline__ T last() const { return data[size - 1]; }
};
__global__ void k(Buf<float, 3> b, float *out) {
    out[0] = b.last() + Buf<int, 4>::count((int)out[2]) + Buf<float, 3>::size;
    int a[Buf<char>::twice];
    a[0] = 1;
    out[1] = a[0] + b.size;
}
"#,
            &["_Z1k3BufIfLi3EEPf", "_ZN3BufIiLi4EE5countEi", "_ZNK3BufIfLi3EE4lastEv"],
        ),
        (
            "kernel templates instantiated for instances by host code and by an explicit instantiation",
            r#"
template <typename T, int N = 2> struct Buf { T data[N]; };
template <class T> __global__ void kt(Buf<T, 2> b, T *out) { *out = b.data[0]; }
template <class B> __global__ void kb(B *b, int *out) { *out = sizeof(B); }
template __global__ void kt<double>(Buf<double, 2>, double *);
int main() {
    Buf<float, 2> b;
    kt<float><<<1, 1>>>(b, (float *)0);
    kb<Buf<Buf<char, 3>>><<<1, 1>>>(0, 0);
    return 0;
}
"#,
            &["_Z2ktIdEv3BufIT_Li2EEPS1_", "_Z2ktIfEv3BufIT_Li2EEPS1_", "_Z2kbI3BufIS0_IcLi3EELi2EEEvPT_Pi"],
        ),
        (
            "function templates with reference parameters, of instances and of their own parameters",
            r#"
template <typename T, int N = 4> struct Buf { T data[N]; };
template <class T> __device__ __noinline__ T first(const Buf<T> &b) { return b.data[0]; }
template <class T> __device__ __noinline__ void inc(T &x, const T &by) { x += by; }
template <class T, int M> __device__ __noinline__ void fill(Buf<T, M> &b, T v) { for (int i = 0; i < M; i++) b.data[i] = v; }
__global__ void k(Buf<int> b, float *out) {
    Buf<float, 3> f;
    fill(f, 2.0f);
    float x = first(b) + f.data[1];
    inc(x, 1.5f);
    int *p = &b.data[0];
    int d = 1;
    inc(d, 2);
    p[1] = d;
    out[0] = x + *p;
}
"#,
            &["_Z4fillIfLi3EEvR3BufIT_XT0_EES1_", "_Z5firstIiET_RK3BufIS0_Li4EE", "_Z3incIfEvRT_RKS0_", "_Z3incIiEvRT_RKS0_"],
        ),
    ];
    compare_cases(cases);
}

/// `inline` on a definition alone makes the function inline, as on any declaration
/// ([dcl.inline]): lonestargpu (KLAP's MST, SP, SSSP) declares `Graph`'s members in the class
/// and defines them out of it as `inline __device__`; nvcc emits none that nothing calls.
#[test]
fn inline_on_the_definition_alone() {
    let source = r#"
struct G { int n; __device__ void a(); __device__ int b() { return n; } };
inline __device__ void G::a() { n = 1; }
__device__ int g(int x);
inline __device__ int g(int x) { return x * 2; }
__global__ void k(G *p) { p->n = 2; }
"#;
    compare("inline on the definition alone", source, &["_Z1kP1G"]);
}

/// The variables a PTX text defines: each `.global` or `.const` declaration at file scope, as
/// `linkage space symbol` (`.visible .global _ZN3cfg5tableE`).
fn ptx_variables(ptx: &str) -> std::collections::BTreeSet<String> {
    ptx.lines()
        .filter(|l| (l.starts_with(".visible") || l.starts_with(".global") || l.starts_with(".const")) && (l.contains(" .global ") || l.contains(" .const ") || !l.starts_with(".visible")))
        .filter(|l| !l.contains(".entry") && !l.contains(".func"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let space = words.iter().find(|w| **w == ".global" || **w == ".const")?;
            let symbol = words.iter().find(|w| w.starts_with("_Z") || (!w.starts_with('.') && !w.chars().next().unwrap_or('0').is_ascii_digit() && **w != "="))?;
            let symbol = symbol.split(['[', ';']).next()?;
            Some(format!("{} {space} {symbol}", words[0]))
        })
        .collect()
}

/// Variables in namespaces (`__device__`, `__constant__`, nested namespaces) get nvcc's
/// Itanium names (`_ZN3cfg5tableE`), and device code finds them qualified, from inside the
/// namespace and through `using namespace`; a `constexpr` in a namespace is a constant there.
#[test]
fn variables_in_namespaces() {
    let source = r#"
namespace cfg {
    constexpr int N = 4;
    __device__ int table[N];
    __constant__ float scale = 2.0f;
    namespace inner { __device__ unsigned counter; }
    __device__ int get(int i) { return table[i % N] + inner::counter; }
}
__device__ int plain;
using namespace cfg;
extern "C" __global__ void k(int *out) {
    out[threadIdx.x] = cfg::get(threadIdx.x) * (int)scale + cfg::N + inner::counter + plain;
}
__global__ void k2(int *out) { out[0] = cfg::table[1] + N; }
"#;
    let Some(nvcc) = nvcc_ptx(source) else { return };
    let ours = cdpc_ptx(source);
    let theirs = ptx_variables(&nvcc);
    for expected in [".visible .global _ZN3cfg5tableE", ".visible .const _ZN3cfg5scaleE", ".visible .global _ZN3cfg5inner7counterE", ".visible .global plain"] {
        assert!(theirs.contains(expected), "nvcc does not define `{expected}`: {theirs:?}");
    }
    assert_eq!(ptx_variables(&ours), theirs, "the variables differ (left cdpc, right nvcc)");
    assert_eq!(functions(&ours), functions(&nvcc), "the functions differ (left cdpc, right nvcc)");
}

/// `::x`, `::f`, `::P` and `::n::x` name the file scope's declarations, also from inside a
/// namespace that declares the same names: the same symbols as nvcc's, and the loads of both
/// `table`s where nvcc has them.
#[test]
fn names_of_the_global_scope() {
    let source = r#"
__device__ int table[2];
__device__ int f(int x) { return x + 1; }
struct P { int v; };
namespace cfg {
    __device__ int table[4];
    __device__ int f(int x) { return x * 2; }
    __device__ int both() { return table[0] + ::table[0] + f(1) + ::f(1); }
}
extern "C" __global__ void k(int *out, P p) {
    ::P q = p;
    out[0] = cfg::both() + ::table[1] + ::cfg::table[2] + ::f(q.v) + (q.v > 0 ? ::table[0] : 0);
}
"#;
    let Some(nvcc) = nvcc_ptx(source) else { return };
    let ours = cdpc_ptx(source);
    assert_eq!(ptx_variables(&ours), ptx_variables(&nvcc), "the variables differ (left cdpc, right nvcc)");
    assert_eq!(functions(&ours), functions(&nvcc), "the functions differ (left cdpc, right nvcc)");
    // `cfg::both` reads both tables' first elements
    let both: String = ours.split("_ZN3cfg4bothEv(").nth(1).unwrap_or_default().split(".entry").next().unwrap_or_default().to_string();
    assert!(both.contains("[table]") && both.contains("[_ZN3cfg5tableE]"), "{both}");
}

/// Enums: unscoped, scoped (`enum class`) with an underlying type, anonymous, in a namespace,
/// with negative values, C's `typedef enum [Tag] { ... } Name;` (named `Name` for its symbols
/// when it has no tag), as struct fields. Their values (a `__device__` array initialised with them), the
/// symbols of functions taking them (`_Z4pick4ModeN1n4KindE`, `_Z5twice4ModeS_`) and the
/// kernels' parameters (`Dir : unsigned char` is a `.u8`) against nvcc's.
#[test]
fn enums() {
    let source = r#"
enum Mode { Fast, Slow = 5, Slower };
enum Small : unsigned char { Up, Down = 3 };
enum { Anon = -2, Anon2 };
enum Kind { A = 1 << 4, B };
enum Sign { Neg = -1, Pos = 1 };
__device__ int vals[10] = { Fast, Slow, Slower, Down, Anon, Anon2, A, B, Slow, Neg };
__device__ int pick(Mode m, Kind k) { return m == Slow ? k : (int)m; }
__device__ int twice(Mode a, Mode b) { return a + b; }
__global__ void k(int *out, Mode m, Small d, Kind kk, Sign s) {
    Mode local = Slower;
    out[0] = m == Fast ? 1 : m == Slow ? 2 : 3;
    out[1] = pick(local, kk) + twice(m, Fast) + (d == Up) + s + sizeof(Small) + sizeof(Mode);
}
extern "C" __global__ void kc(Mode *p, Sign s) { *p = (Mode)(s + 1); }
typedef enum { Red, Green = 4 } Color;
typedef enum Shape_ { Circle, Square } Shape;
struct Px { Color c; Shape s; int v; };
__device__ int vals2[4] = { Red, Green, Square, Circle };
__device__ int f(Color c, Shape s, Shape_ t, Px p) { return c + s + t + p.v + p.c; }
__global__ void k2(Px *p, Color c) { p->c = c; p->s = Circle; p->v = f(c, p->s, Square, *p); }
"#;
    let expected = ["_Z4pick4Mode4Kind", "_Z5twice4ModeS_", "_Z1kPi4Mode5Small4Kind4Sign", "_Z1f5Color6Shape_S0_2Px", "_Z2k2P2Px5Color"];
    if !compare_as(Language::Cdp, "enums", source, &expected) {
        return;
    }
    let initializers = |ptx: &str| ptx.lines().filter(|l| l.contains(" vals[") || l.contains(" vals2[")).map(str::to_string).collect::<Vec<_>>();
    let nvcc = nvcc_ptx(source).expect("nvcc ran above");
    assert_eq!(initializers(&cdpc_ptx_as(Language::Cdp, source)), initializers(&nvcc), "the enumerators' values differ (left cdpc, right nvcc)");
}

/// An enum cdpc cannot give values to (an enumerator computed by a host function) is left to
/// the host compiler like any tentative declaration: no error unless device code names it, and
/// then E0901 with the reason.
#[test]
fn an_enum_with_host_values_is_left_to_the_host() {
    let ok = "int host_fn();\nenum { N = host_fn() };\nenum Bad : float { X };\nenum Fine { F1 = 2 };\n__global__ void k(int *out) { out[0] = F1; }\n";
    assert!(driver::compile(ok, &CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() }).is_ok());
    let used = format!("{ok}__global__ void k2(int *out) {{ out[0] = N; }}\n");
    let Err(error) = driver::compile(&used, &CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() }) else { panic!("N is host code") };
    let shown = format!("{error:?}");
    assert!(shown.contains("NotCompiledForDevice") && shown.contains("`host_fn` is a host function"), "{shown}");
}

/// `__constant__ float k[] = {...}`, `__device__ char s[] = "..."` and `int g[][2] = {...}` at
/// file scope take their size from the initializer, as locals did: the declarations (sizes and
/// values) equal nvcc's.
#[test]
fn unsized_file_scope_arrays_take_the_initializers_size() {
    let source = r#"
__constant__ float coeffs[] = { 0.5f, 0.25f, 0.125f };
__device__ int table[] = { 1, 2, 3, 4, 5 };
__device__ char msg[] = "hi";
__device__ int grid2[][2] = { {1, 2}, {3, 4}, {5, 6} };
extern "C" __global__ void k(float *o) { o[0] = coeffs[2] + table[4] + msg[1] + grid2[2][1] + sizeof(table) + sizeof(grid2); }
"#;
    let Some(nvcc) = nvcc_ptx(source) else { return };
    let declarations = |ptx: &str| {
        let mut v: Vec<String> = ptx.lines().filter(|l| (l.contains(" .global ") || l.contains(" .const ")) && !l.contains(".entry")).map(str::to_string).collect();
        v.sort();
        v
    };
    let ours = declarations(&cdpc_ptx_as(Language::Cdp, source));
    assert_eq!(ours.len(), 4, "{ours:#?}");
    assert_eq!(ours, declarations(&nvcc), "the declarations differ (left cdpc, right nvcc)");
}
