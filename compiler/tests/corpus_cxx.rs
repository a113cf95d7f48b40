//! KLAP's C++ programs: the corpus files whose device code uses classes with member
//! functions, references, typedefs and constructors compile with cdpc, and their kernels get
//! nvcc's symbols.
//!
//! The corpus is read from `../shared/corpus` beside the checkout (test input only; skipped
//! with a printed reason when absent), with the `-I` folders KLAP's Makefiles use
//! (`-I<dir> -I../../include`). nvcc 13.5 is the oracle for the symbols: each file is compiled
//! with `nvcc -arch=sm_90 -rdc=true --device-c -ptx` (skipped with a reason when nvcc cannot be
//! found), and the names on `.entry` lines and on `.visible .global` variables must be the
//! same set in both PTX files.
//!
//! `volatile` and the inline `asm` of lonestargpu's `cutil_subset.h` (`get_smid`) are compiled
//! as written. [`PENDING`] lists, per file, text
//! replacements that take out what another branch implements (none today); the test compiles
//! that copy, and says how the unchanged file fares (it must compile when it has no pending
//! replacement).

use cdpc::driver::{self, CompileError, CompileOptions, Emit};
use cdpc::front::cdp::preprocess::PreprocessOptions;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target programs, under `klap/test/`.
const TARGETS: &[&str] = &["SP", "MST", "SSSP"];

/// Replacements (in every `.h` and `.cu` of a copy of the program and KLAP's include folder)
/// that take out what another branch implements.
const PENDING: &[(&str, &[(&str, &str)])] = &[];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// nvcc beside the toolchain's ptxas (`build_common::nvcc`), or why not.
fn nvcc() -> Result<PathBuf, String> {
    crate::build_common::nvcc().ok_or_else(|| "nvcc was not found beside ptxas; run `cargo xtask setup`".to_string())
}

/// Kernel symbols and visible global variables of a PTX text.
fn symbols(ptx: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in ptx.lines() {
        let at = if let Some(i) = line.find(".entry ") {
            i + 7
        } else if line.trim_start().starts_with(".visible .global") {
            match line.split_whitespace().last() {
                Some(last) => line.rfind(last).unwrap_or(0),
                None => continue,
            }
        } else {
            continue;
        };
        let name: String = line[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$').collect();
        // nvcc names a static kernel `__nv_static_<hash of the file>__<its name>`, which no
        // other compiler reproduces; cdpc gives it its plain name (see `mangle.rs`).
        let name = match (name.starts_with("__nv_static_"), name.rfind("__Z")) {
            (true, Some(i)) => name[i + 1..].to_string(),
            _ => name,
        };
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path, replace: &[(&str, &str)]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst, replace);
        } else if src.extension().is_some_and(|e| ["h", "cu", "cuh", "hpp"].contains(&e.to_str().unwrap_or(""))) {
            let mut text = std::fs::read_to_string(&src).unwrap();
            for (a, b) in replace {
                text = text.replace(a, b);
            }
            std::fs::write(dst, text).unwrap();
        }
    }
}

/// cdpc's PTX for `klap_root/test/<name>/kernel.base.cu`, or its error messages.
fn cdpc_ptx(klap_root: &Path, name: &str) -> Result<String, Vec<String>> {
    let dir = klap_root.join("test").join(name);
    let input = dir.join("kernel.base.cu");
    let source = std::fs::read_to_string(&input).unwrap();
    // nvcc gets the same define (below): CUDA 13 removed `cudaThreadSynchronize`, which the
    // host code calls, and Clang reads the host code too.
    let macros = vec![cdpc::front::cdp::preprocess::MacroOption::Define("cudaThreadSynchronize=cudaDeviceSynchronize".into())];
    let preprocess = PreprocessOptions { input: Some(input), include_dirs: vec![dir, klap_root.join("include")], macros, ..Default::default() };
    // Relocatable PTX, as nvcc's (`-rdc=true`).
    let options = CompileOptions { emit: Emit::Ptx, preprocess, separate: true, ..CompileOptions::default() };
    match driver::compile(&source, &options) {
        Ok(compiled) => Ok(String::from_utf8(compiled.output).unwrap()),
        Err(CompileError::Diagnostics(d)) => Err(d.iter().filter(|d| d.is_error()).map(|d| format!("{}: {}", d.code, d.message)).collect()),
        Err(other) => Err(vec![other.to_string()]),
    }
}

fn nvcc_ptx(nvcc: &Path, klap_root: &Path, name: &str, out: &Path) -> String {
    let dir = klap_root.join("test").join(name);
    let bin = nvcc.parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    let ptx = out.join(format!("{name}.ptx"));
    let run = Command::new(nvcc)
        // CUDA 13 removed `cudaThreadSynchronize`, which lonestargpu's host code calls.
        .args(["-arch=sm_90", "-rdc=true", "--device-c", "-ptx", "-DcudaThreadSynchronize=cudaDeviceSynchronize"])
        .arg(format!("-I{}", dir.display()))
        .arg(format!("-I{}", klap_root.join("include").display()))
        .arg(dir.join("kernel.base.cu"))
        .arg("-o")
        .arg(&ptx)
        .env("PATH", path)
        .output()
        .expect("nvcc runs");
    assert!(run.status.success(), "nvcc failed on {name}:\n{}", String::from_utf8_lossy(&run.stderr));
    std::fs::read_to_string(ptx).unwrap()
}

#[test]
fn klap_cxx_programs_compile_with_nvcc_symbols() {
    let klap = repo_root().join("../shared/corpus/klap");
    if !klap.is_dir() {
        return println!("skipped: no corpus at {}", klap.display());
    }
    let nvcc = nvcc();
    if let Err(why) = &nvcc {
        println!("symbols not compared with nvcc: {why}");
    }
    let work = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for name in TARGETS {
        let pending = PENDING.iter().find(|(n, _)| n == name).map_or(&[][..], |(_, r)| *r);
        let unchanged = cdpc_ptx(&klap, name);
        let ptx = if pending.is_empty() {
            unchanged
        } else {
            match &unchanged {
                Ok(_) => println!("{name}: compiles unchanged; its PENDING entry can go"),
                Err(errors) => println!("{name}: unchanged, {} error(s) from pending features, first: {}", errors.len(), errors[0]),
            }
            let copy = work.path().join(name).join("klap");
            copy_tree(&klap.join("include"), &copy.join("include"), pending);
            copy_tree(&klap.join("test").join(name), &copy.join("test").join(name), pending);
            cdpc_ptx(&copy, name)
        };
        let ptx = match ptx {
            Ok(ptx) => ptx,
            Err(errors) => {
                failures.push(format!("{name}: {} error(s):\n  {}", errors.len(), errors.join("\n  ")));
                continue;
            }
        };
        let got = symbols(&ptx);
        assert!(!got.is_empty(), "{name}: no kernel in cdpc's PTX");
        if let Ok(nvcc) = &nvcc {
            let expected = symbols(&nvcc_ptx(nvcc, &klap, name, work.path()));
            if got != expected {
                failures.push(format!("{name}: symbols differ\n  nvcc: {expected:?}\n  cdpc: {got:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Member functions (const, static, constructors), namespaces (nested, aliased, `using`),
/// references and a derived class, all defined out of their class so that nvcc writes every one.
const CXX_SOURCE: &str = r#"
struct Graph {
    unsigned n;
    unsigned *d;
    __device__ Graph(unsigned *data, unsigned count);
    __device__ unsigned get(unsigned i) const;
    __device__ unsigned deg(unsigned i);
    __device__ static int st(int x);
    __device__ void set(unsigned i, unsigned v);
    __device__ bool same(const Graph &other, Graph *also) const;
};
__device__ Graph::Graph(unsigned *data, unsigned count) : n(count), d(data) {}
__device__ unsigned Graph::get(unsigned i) const { return d[i]; }
__device__ unsigned Graph::deg(unsigned i) { return get(i) + n; }
__device__ int Graph::st(int x) { return x + 1; }
__device__ void Graph::set(unsigned i, unsigned v) { d[i] = v; this->n = v; }
__device__ bool Graph::same(const Graph &other, Graph *also) const { return other.n == n && also->n == n; }
struct Derived : Graph {
    int extra;
    __device__ int f(const Graph &g, Derived &self);
};
__device__ int Derived::f(const Graph &g, Derived &self) { return g.get(0) + extra + self.deg(1); }
namespace N {
namespace M {
__device__ int h(int x, Graph &g) { return x + g.n; }
}
__device__ int k(const int &a, int &b, Graph *p, Graph &q) { b = a; return a + M::h(a, q) + p->st(1); }
}
namespace cg = N;
using namespace N::M;
__device__ int &pick(int *a) { return a[0]; }
__device__ int use(Graph &g, Derived &dd, int q, bool twice = false) {
    int &r = pick(&q);
    r = 3;
    const Graph &cg2 = g;
    Graph local(g.d, 4);
    return g.get(1) + g.deg(2) + Graph::st(3) + N::M::h(1, g) + h(2, g) + cg::k(1, q, &g, g) + dd.f(g, dd) + dd.get(0) + cg2.same(g, &g) + local.n + twice;
}
__global__ void kern(Graph g, Derived d, int *o) { g.set(0, 1); o[0] = use(g, d, 2); }
__global__ void kref(int &x) { x = 1; }
namespace kernels {
__global__ void fill(int *p) { p[threadIdx.x] = N::k(1, p[0], 0, *(Graph *)0); }
}
"#;

/// Every `.entry` and `.func` symbol of a PTX text.
fn functions(ptx: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in ptx.lines() {
        let Some(at) = line.find(".entry ").map(|i| i + 7).or_else(|| line.contains(".func").then(|| line.rfind(' ').map_or(0, |i| i + 1))) else {
            continue;
        };
        let name: String = line[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.starts_with("_Z") {
            out.insert(name);
        }
    }
    out
}

/// Members, namespaces and references: CUDA C++, through Clang.
#[test]
fn cxx_member_namespace_and_reference_symbols_are_nvccs() {
    // Relocatable PTX, as nvcc's below (`-rdc=true`): every device function stays.
    let options = CompileOptions { emit: Emit::Ptx, language: Some(driver::Language::Cuda), separate: true, ..CompileOptions::default() };
    let ptx = match driver::compile(CXX_SOURCE, &options) {
        Ok(c) => String::from_utf8(c.output).unwrap(),
        Err(CompileError::Diagnostics(d)) => panic!("cdpc failed: {:#?}", d.iter().filter(|d| d.is_error()).collect::<Vec<_>>()),
        Err(e) => panic!("cdpc failed: {e}"),
    };
    let got = functions(&ptx);
    // Names worked out by hand from the Itanium ABI, and checked against nvcc below.
    for name in ["_ZNK5Graph3getEj", "_ZN5Graph2stEi", "_ZN5GraphC1EPjj", "_ZN1N1kERKiRiP5GraphRS3_", "_Z3useR5GraphR7Derivedib", "_Z4krefRi", "_ZN7kernels4fillEPi"] {
        assert!(got.contains(name), "{name} missing from {got:?}");
    }
    let nvcc = match nvcc() {
        Ok(n) => n,
        Err(why) => return println!("skipped the comparison with nvcc: {why}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let (cu, out) = (dir.path().join("cxx.cu"), dir.path().join("cxx.ptx"));
    std::fs::write(&cu, CXX_SOURCE).unwrap();
    let run = Command::new(&nvcc).args(["-x", "cu", "-arch=sm_90", "-rdc=true", "-ptx"]).arg(&cu).arg("-o").arg(&out).output().expect("nvcc runs");
    assert!(run.status.success(), "nvcc failed:\n{}", String::from_utf8_lossy(&run.stderr));
    let expected = functions(&std::fs::read_to_string(&out).unwrap());
    // Each constructor's base-object variant (`C2`): written by both, kept by one or the other
    // as their optimisers decide; not compared.
    let expected: BTreeSet<String> = expected.into_iter().filter(|s| !s.contains("C2E")).collect();
    let got: BTreeSet<String> = got.into_iter().filter(|s| !s.contains("C2E")).collect();
    assert_eq!(got, expected, "cdpc's functions (left) and nvcc's (right) differ");
}
