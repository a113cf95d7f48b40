//! C++ overloading against nvcc: programs of overloaded free functions, member functions,
//! constructors, kernels and operators compile with cdpc (CUDA C++, through Clang: overloads
//! are not the kernel language's),
//! every function gets nvcc's symbol (operator names included: `_ZplRK1VS1_`, `_ZN1VixEi`),
//! and each call site calls the overload nvcc's calls. The functions are `__noinline__`, so
//! both PTX files keep their calls; the multiset of functions called from each kernel must be
//! the same (each overload is a distinct symbol, so this says which overload every call
//! resolved to). Skipped with a printed reason when nvcc cannot be found.

use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::toolchain::{ToolSearch, Toolchain};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

fn nvcc() -> Result<PathBuf, String> {
    let tools = Toolchain::discover(&ToolSearch::default()).map_err(|e| format!("the NVIDIA tools were not found, run `cargo xtask setup`:\n{e}"))?;
    let bin = tools.ptxas.parent().ok_or("ptxas has no folder")?.to_path_buf();
    let nvcc = bin.join(format!("nvcc{}", std::env::consts::EXE_SUFFIX));
    nvcc.is_file().then_some(nvcc).ok_or_else(|| format!("nvcc is not next to ptxas in {}", bin.display()))
}

/// The `.func`/`.entry` symbols, and for each the sorted symbols it calls.
fn functions_and_calls(ptx: &str) -> (BTreeSet<String>, BTreeMap<String, Vec<String>>) {
    // nvcc also writes local clones of a `__noinline__` function (`_Z4picki$1`) and calls
    // those: a clone is its function.
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut defined = BTreeSet::new();
    let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    let mut pending = false;
    for line in ptx.lines() {
        let t = line.trim();
        let declares = t.split_whitespace().take_while(|w| w.starts_with('.')).any(|w| w == ".func" || w == ".entry");
        if declares && !line.starts_with(char::is_whitespace) {
            if let Some(at) = t.find("_Z") {
                current = ident(&t[at..]);
                defined.insert(current.clone());
            }
        } else if t.starts_with("call") || pending {
            // nvcc writes the callee on the line after `call.uni`.
            pending = t.starts_with("call") && !t.contains("_Z");
            if let Some(at) = t.find("_Z") {
                calls.entry(current.clone()).or_default().push(ident(&t[at..]));
            }
        }
    }
    for v in calls.values_mut() {
        v.sort();
    }
    (defined, calls)
}

fn check_against_nvcc(name: &str, source: &str) {
    let nvcc = match nvcc() {
        Ok(n) => n,
        Err(why) => return println!("skipped: {why}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join(format!("{name}.cu"));
    let ptx = dir.path().join(format!("{name}.ptx"));
    std::fs::write(&cu, source).unwrap();
    let out = Command::new(&nvcc).args(["-arch=sm_90", "-rdc=true", "-ptx"]).arg(&cu).arg("-o").arg(&ptx).output().unwrap();
    assert!(out.status.success(), "nvcc failed: {}", String::from_utf8_lossy(&out.stderr));
    let expected = functions_and_calls(&std::fs::read_to_string(&ptx).unwrap());
    let options = CompileOptions { emit: Emit::Ptx, language: Some(driver::Language::Cuda), separate: true, ..CompileOptions::default() };
    let compiled = driver::compile(source, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}"));
    let mut got = functions_and_calls(&String::from_utf8(compiled.output).unwrap());
    // A constructor's base-object variant (`C2`), which Clang writes beside the complete one
    // and nvcc leaves out here: not compared.
    got.0.retain(|s| !s.contains("C2E"));
    got.1.retain(|f, _| !f.contains("C1E") && !f.contains("C2E"));
    let mut expected = expected;
    expected.0.retain(|s| !s.contains("C2E"));
    expected.1.retain(|f, _| !f.contains("C1E") && !f.contains("C2E"));
    assert!(!expected.0.is_empty() && !expected.1.is_empty(), "nvcc's PTX should define and call functions");
    assert_eq!(got.0, expected.0, "{name}: the functions' symbols differ from nvcc's");
    assert_eq!(got.1, expected.1, "{name}: the overloads called differ from nvcc's");
}

/// Free functions: exact match, promotion, conversion, qualification, references, defaults.
/// Each has a side effect, so that no compiler folds a call away.
const FREE: &str = r#"
__device__ int sink;
__device__ __noinline__ int pick(int x) { sink++; return 1; }
__device__ __noinline__ int pick(float x) { sink++; return 2; }
__device__ __noinline__ int pick(double x) { sink++; return 3; }
__device__ __noinline__ int pick(int *p) { sink++; return 4; }
__device__ __noinline__ int pick(const int *p) { sink++; return 5; }
__device__ __noinline__ int pick(void *p) { sink++; return 6; }
__device__ __noinline__ int ref(int &x) { sink++; return 7; }
__device__ __noinline__ int ref(const int &x) { sink++; return 8; }
__device__ __noinline__ int two(int a, int b = 0) { sink++; return 9; }
__device__ __noinline__ int two(long a) { sink++; return 10; }
__device__ __noinline__ int promo(long x) { sink++; return 11; }
__device__ __noinline__ int promo(int x) { sink++; return 12; }
__device__ int proto(int x, int y);
__device__ __noinline__ int proto(int x) { sink++; return 13; }
__device__ __noinline__ int proto(int x, int y) { sink++; return 14; }
__global__ void k(int *out, float *f) {
    const int c = 3;
    short s = 2;
    out[0] = pick(1) + pick(1.0f) + pick(1.0) + pick('c') + pick(s) + pick(out);
    const int *q = out;
    out[1] = pick(q) + pick((void *)f) + pick(f[0] * 2.0f);
    out[2] = ref(out[0]) + ref(c) + ref(4);
    out[3] = two(1) + two(1L) + two(1, 2);
    out[4] = promo(s) + promo(1L) + proto(1) + proto(1, 2);
}
"#;

/// Member functions, constructors and kernels: const and non-const overloads, by arity and
/// type, and an overloaded kernel launched from the device.
const MEMBERS: &str = r#"
struct Acc {
    int v;
    __device__ __noinline__ Acc(int x) : v(x) {}
    __device__ __noinline__ Acc(float x) : v(2) {}
    __device__ __noinline__ Acc(int x, int y) : v(x + y) {}
    __device__ __noinline__ int get() const;
    __device__ __noinline__ int get();
    __device__ __noinline__ int add(int x);
    __device__ __noinline__ int add(double x);
};
__device__ int Acc::get() const { return v; }
__device__ int Acc::get() { return v + 1; }
__device__ int Acc::add(int x) { return v + x; }
__device__ int Acc::add(double x) { return v + 100; }
__global__ void child(int *p, int n);
__global__ void child(int *p, int off, int n) { p[off] = n; }
__global__ void child(float *p, int n) { p[0] = n; }
__global__ void k(int *out, float *f) {
    Acc a(1);
    Acc b(1.0f);
    Acc c(1, 2);
    const Acc d(4);
    out[0] = a.get() + d.get() + b.add(1) + c.add(1.5) + a.add('x');
    child<<<1, 1>>>(out, 1, 2);
    child<<<1, 1>>>(f, 2);
}
"#;

/// Operators on a class and on CUDA's `float2`: free and member, binary, unary, compound
/// assignment, comparison, subscript, prefix and postfix increment, mixed operand types.
const OPERATORS: &str = r#"
struct V {
    float x, y;
    __device__ __noinline__ float operator[](int i) const { return i ? y : x; }
    __device__ __noinline__ V &operator-=(const V &o) { x -= o.x; y -= o.y; return *this; }
    __device__ __noinline__ V operator*(float s) const { V r; r.x = x * s; r.y = y * s; return r; }
    __device__ __noinline__ V &operator++() { x += 1.0f; return *this; }
    __device__ __noinline__ V operator++(int) { V old = *this; y += 1.0f; return old; }
};
__device__ __noinline__ V operator+(const V &a, const V &b) { V r; r.x = a.x + b.x; r.y = a.y + b.y; return r; }
__device__ __noinline__ V operator+(const V &a, float s) { V r; r.x = a.x + s; r.y = a.y + s; return r; }
__device__ __noinline__ V operator-(const V &a) { V r; r.x = -a.x; r.y = -a.y; return r; }
__device__ __noinline__ V &operator+=(V &a, const V &b) { a.x += b.x; a.y += b.y; return a; }
__device__ __noinline__ bool operator==(const V &a, const V &b) { return a.x == b.x && a.y == b.y; }
__device__ __noinline__ bool operator<(const V &a, const V &b) { return a.x < b.x; }
__device__ __noinline__ float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __noinline__ float2 operator*(float s, float2 a) { return make_float2(s * a.x, s * a.y); }
__device__ __noinline__ float2 operator-(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__device__ __noinline__ void operator*=(float2 &a, float s) { a.x *= s; a.y *= s; }
__global__ void k(V *v, float2 *w, float *out, int n) {
    V a = v[0], b = v[1];
    V c = a + b + 2.0f;
    c += -a;
    c -= b * 3.0f;
    ++c;
    c++;
    out[0] = c[0] + c[1] + (a == b) + (a < b) + n * 2;
    w[0] = 0.5f * (w[1] - w[2]) + w[3];
    w[4] *= 2.0f;
    v[2] = c;
}
"#;

#[test]
fn overloaded_free_functions_match_nvcc() {
    check_against_nvcc("free", FREE);
}

#[test]
fn overloaded_members_constructors_and_kernels_match_nvcc() {
    check_against_nvcc("members", MEMBERS);
}

#[test]
fn overloaded_operators_match_nvcc() {
    check_against_nvcc("operators", OPERATORS);
}

/// helper_math.h declares hundreds of `inline __host__ __device__` overloads of built-in names
/// (`make_float2(float)`, `fminf(float2, float2)`) and operators: all are accepted, the built-ins
/// stay callable beside them, and the kernel gets nvcc's symbol.
#[test]
fn helper_math_is_accepted() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/cuda-samples/Common");
    if !corpus.join("helper_math.h").is_file() {
        return println!("skipped: the corpus is not beside the checkout ({})", corpus.display());
    }
    let source = r#"#include <helper_math.h>
__global__ void k(float2 *p, float3 *q, int2 *r, float *s) {
    float2 a = p[0], b = p[1];
    p[2] = a + b; p[3] = a * 2.0f; p[4] = 2.0f * a; p[5] = -a; a += b;
    s[0] = dot(a, b) + length(b) + fminf(s[1], s[2]); p[7] = normalize(a);
    p[8] = make_float2(1.0f); p[9] = make_float2(1.0f, 2.0f); p[10] = fminf(a, b);
    p[11] = lerp(a, b, 0.5f); p[12] = clamp(a, 0.0f, 1.0f); q[0] = cross(q[1], q[2]); r[0] = make_int2(p[0]);
}
"#;
    let mut options = CompileOptions { emit: Emit::Ptx, language: Some(driver::Language::Cuda), separate: true, ..CompileOptions::default() };
    options.preprocess.include_dirs.push(corpus);
    let compiled = driver::compile(source, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}"));
    let ptx = String::from_utf8(compiled.output).unwrap();
    assert!(ptx.contains(".entry _Z1kP6float2P6float3P4int2Pf("), "{ptx}");
}
