//! Templates and cooperative groups against nvcc, the oracle: CUDA C++, compiled by cdpc
//! through Clang (templates are not the kernel language's).
//!
//! `template_instances_are_named_as_nvcc_names_them`: a program of function and kernel
//! templates (type and non-type parameters, explicit and deduced arguments, `T`, `T *`,
//! `const T *`, `T **`, structs, classes in namespaces, recursion) is compiled by nvcc
//! (`-arch=sm_90 -rdc=true -ptx`) and by cdpc; every `.entry` and `.func` symbol must be the
//! same, and so must their `.weak`/`.visible` linkage.
//!
//! `corpus_targets_compile_or_fail_only_on_other_features`: the corpus programs that use
//! templates and cooperative groups (cuda-samples' cdpAdvancedQuicksort, cdpBitonicSort,
//! cdpQuadtree), with the `-I` folders their Makefiles use, compile through Clang (they are
//! `.cu` files), and their PTX names the same entries and functions as nvcc's (when nvcc can
//! compile the file here; skipped with the reason printed otherwise).
//!
//! Both skip with a printed reason when nvcc or the corpus (`../shared/corpus` beside the
//! checkout) is absent.

use cdpc::driver::{self, CompileOptions, Emit};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// nvcc beside the toolchain's ptxas (`build_common::nvcc`), or why not.
fn nvcc() -> Result<PathBuf, String> {
    crate::build_common::nvcc().ok_or_else(|| "nvcc was not found beside ptxas; run `cargo xtask setup`".to_string())
}

/// nvcc's PTX for the file at `cu`, or why it could not make it.
fn nvcc_ptx(nvcc: &Path, cu: &Path, include_dirs: &[PathBuf]) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let ptx = dir.path().join("out.ptx");
    let bin = nvcc.parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    let mut command = Command::new(nvcc);
    command.args(["-x", "cu", "-arch=sm_90", "-rdc=true", "-ptx"]).arg(cu).arg("-o").arg(&ptx).env("PATH", path);
    for d in include_dirs {
        command.arg(format!("-I{}", d.display()));
    }
    let out = command.output().map_err(|e| format!("nvcc did not run: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(stderr.lines().find(|l| l.contains("error")).unwrap_or(&stderr).to_string());
    }
    Ok(std::fs::read_to_string(&ptx).unwrap())
}

/// Every function a PTX file defines or declares: (linkage word, symbol), for `.entry` and
/// `.func` lines of the module's own functions (the device runtime's `.extern` ones left out).
fn functions(ptx: &str) -> BTreeSet<(String, String)> {
    ptx.lines()
        .filter(|l| (l.contains(".entry") || l.contains(".func")) && !l.trim_start().starts_with(".extern"))
        .filter_map(|l| {
            let linkage = l.split_whitespace().next()?.to_string();
            let before_paren = l.split('(').find(|part| part.trim_end().rsplit(' ').next().is_some_and(|w| w.starts_with("_Z") || !w.starts_with('.')))?;
            let name = before_paren.trim_end().rsplit(' ').next()?.to_string();
            (!name.is_empty() && !name.starts_with('.') && !name.contains('[')).then_some((linkage, name))
        })
        .collect()
}

/// nvcc's functions without those of CUB and Thrust (cdpAdvancedQuicksort's
/// `cub::...::EmptyKernel<void>`), which come from host-only headers that cdpc skips (R0611).
fn program_functions(ptx: &str) -> BTreeSet<(String, String)> {
    let library = ["_ZN3cub", "_ZN6thrust", "_ZN4cuda"];
    functions(ptx).into_iter().filter(|(_, name)| !library.iter().any(|prefix| name.starts_with(prefix))).collect()
}

/// The templates whose instances are compared (nvcc drops functions without effects, so every
/// function stores to `sink`).
const TEMPLATES: &str = r#"
struct S { int a; };
namespace cooperative_groups { namespace __v1 { struct thread_block { unsigned long long d[2]; void *t; }; } using namespace __v1; }
__device__ int sink;
template <typename T> __device__ __noinline__ T *ra(S *r, T *x, T *y) { sink = 1; return x + r->a; }
template <typename T, int N> __device__ __noinline__ void g(const T *a, T b) { sink = N; }
template <typename T> __device__ __noinline__ void h(T a, T b, const T *c, T **d) { sink = 3; }
template <class A, class B> __device__ __noinline__ B conv(A a) { sink = 4; return (B)a; }
template <typename T> __device__ __noinline__ void two(T *a, T *b) { sink = 5; }
template <typename T> __device__ __noinline__ void grouped(T *a, cooperative_groups::thread_block b) { sink = 6; }
template <unsigned N> __device__ __noinline__ unsigned down(unsigned x) { sink = 7; return x == 0 ? N : down<N>(x - 1); }
template <int N> __global__ void k(int *p) { p[0] = N; }
template <unsigned N> __global__ void ku(int *p) { p[0] = N; }
template <typename T> __global__ void kt(T *p, T v) { p[0] = v; }
template <long long N, bool B, char C> __global__ void kv(int *p) { p[0] = (int)N + B + C; }
__device__ __noinline__ void plain(cooperative_groups::thread_block b, cooperative_groups::thread_block *c) { sink = 8; }
__global__ void top(int *p, S *s, float *f, unsigned long long *u, cooperative_groups::thread_block *grp) {
    p[3] = (int)(long)ra<S>(s, s, s); p[4] = *ra(s, p, p);
    g<int, 4>(p, 3); g<S, -2>(s, *s);
    h(1.0f, 2.0f, f, &f);
    h<S>(*s, *s, s, &s);
    p[5] = conv<int, float>(3);
    two(u, u); two<S *>(&s, &s);
    grouped(p, *grp); grouped(grp, *grp);
    p[6] = down<3u>(p[7]);
    plain(*grp, grp);
    k<128><<<1, 1>>>(p);
    ku<5u><<<1, 1>>>(p);
    kt<<<1, 1>>>(f, 2.0f);
    kt<S><<<1, 1>>>(s, *s);
    kv<-5000000000, true, 'x'><<<1, 1>>>(p);
}
"#;

#[test]
fn template_instances_are_named_as_nvcc_names_them() {
    let nvcc = match nvcc() {
        Ok(n) => n,
        Err(why) => return println!("skipped: {why}"),
    };
    // nvcc cannot read the real cooperative_groups.h here (no libcu++ in the wheels): a class of
    // the same name and size in the same namespaces stands in for it on nvcc's side.
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("templates.cu");
    std::fs::write(&cu, TEMPLATES).unwrap();
    let expected = functions(&nvcc_ptx(&nvcc, &cu, &[]).unwrap_or_else(|e| panic!("nvcc failed: {e}")));
    assert_eq!(expected.len(), 19, "nvcc's PTX should name every instance and function: {expected:#?}");

    let cdpc_source = TEMPLATES.to_string();
    let options = CompileOptions { emit: Emit::Ptx, language: Some(driver::Language::Cuda), separate: true, ..CompileOptions::default() };
    let compiled = driver::compile(&cdpc_source, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}\n{cdpc_source}"));
    let got = functions(&String::from_utf8(compiled.output).unwrap());
    let missing: Vec<_> = expected.difference(&got).collect();
    let extra: Vec<_> = got.difference(&expected).collect();
    assert!(missing.is_empty() && extra.is_empty(), "nvcc only: {missing:#?}\ncdpc only: {extra:#?}");
}

/// Templates together with C++ scopes: function and kernel templates in nested namespaces
/// (named `_ZN1N1fIiEEvT_`), called qualified, unqualified from inside the namespace and from a
/// class's const member function, next to `cooperative_groups` through its alias.
const SCOPED_TEMPLATES: &str = r#"
struct S { int a; };
namespace cooperative_groups { namespace __v1 { struct thread_block { unsigned long long d[2]; void *t; }; } using namespace __v1; }
namespace cg = cooperative_groups;
__device__ int sink;
namespace N {
template <typename T> __device__ __noinline__ void f(T a) { sink = 1; }
namespace M { template <typename T, int K> __device__ __noinline__ T *pick(T *p, T *q) { sink = K; return q; } }
template <int K> __global__ void kk(int *p) { p[0] = K; }
__device__ __noinline__ void plain(int *p) { f(p[0]); f<float>(1.0f); }
}
class Box {
    int v;
public:
    __device__ int get() const;
};
__device__ __noinline__ int Box::get() const { N::f(v); sink = v; return v; }
__device__ __noinline__ void grp(cg::thread_block b) { sink = 9; }
__global__ void top(int *p, S *s, Box *b, cg::thread_block *g) {
    N::f(3u); N::f<S>(*s);
    p[2] = *N::M::pick<int, 2>(p, p);
    p[1] = b->get();
    N::plain(p);
    grp(*g);
    N::kk<4><<<1, 1>>>(p);
}
"#;

#[test]
fn templates_in_namespaces_and_classes_are_named_as_nvcc_names_them() {
    let nvcc = match nvcc() {
        Ok(n) => n,
        Err(why) => return println!("skipped: {why}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let cu = dir.path().join("scoped.cu");
    std::fs::write(&cu, SCOPED_TEMPLATES).unwrap();
    // nvcc also writes a local copy of the visible member function it calls (`_ZNK3Box3getEv$1`),
    // an optimisation of its own and no symbol other code can name: left out.
    let mut expected = functions(&nvcc_ptx(&nvcc, &cu, &[]).unwrap_or_else(|e| panic!("nvcc failed: {e}")));
    expected.retain(|(_, name)| !name.contains('$'));
    // The nested template names must be among nvcc's, or the comparison proves nothing.
    for symbol in ["_ZN1N1fIiEEvT_", "_ZN1N1fIjEEvT_", "_ZN1N1M4pickIiLi2EEEPT_S3_S3_", "_ZN1N2kkILi4EEEvPi", "_ZNK3Box3getEv"] {
        assert!(expected.iter().any(|(_, name)| name == symbol), "nvcc does not name {symbol}: {expected:#?}");
    }

    let cdpc_source = SCOPED_TEMPLATES.to_string();
    let options = CompileOptions { emit: Emit::Ptx, language: Some(driver::Language::Cuda), separate: true, ..CompileOptions::default() };
    let compiled = driver::compile(&cdpc_source, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}\n{cdpc_source}"));
    let got = functions(&String::from_utf8(compiled.output).unwrap());
    let missing: Vec<_> = expected.difference(&got).collect();
    let extra: Vec<_> = got.difference(&expected).collect();
    assert!(missing.is_empty() && extra.is_empty(), "nvcc only: {missing:#?}\ncdpc only: {extra:#?}");
}

/// Files that compile but whose functions are not all nvcc's yet, with why (docs/CORPUS.md):
/// cdpc's must then be some of nvcc's, and the test fails once they are all of them.
const INCOMPLETE: &[(&str, &str)] = &[];

#[test]
fn corpus_targets_compile_or_fail_only_on_other_features() {
    let samples = repo_root().join("../shared/corpus/cuda-samples");
    if !samples.is_dir() {
        return println!("skipped: no corpus at {}", samples.display());
    }
    let nvcc = nvcc();
    for file in ["cdpAdvancedQuicksort/cdpAdvancedQuicksort.cu", "cdpAdvancedQuicksort/cdpBitonicSort.cu", "cdpQuadtree/cdpQuadtree.cu"] {
        let path = samples.join(file);
        let source = std::fs::read_to_string(&path).unwrap();
        let include_dirs = vec![path.parent().unwrap().to_path_buf(), samples.join("Common")];
        let mut options = CompileOptions { emit: Emit::Ptx, separate: true, ..CompileOptions::default() };
        options.preprocess.input = Some(path.clone());
        options.preprocess.include_dirs = include_dirs.clone();
        match driver::compile(&source, &options) {
            Ok(compiled) => {
                let got = functions(&String::from_utf8(compiled.output).unwrap());
                let nvcc = match &nvcc {
                    Ok(n) => n,
                    Err(why) => {
                        println!("{file}: compiled; nvcc comparison skipped: {why}");
                        continue;
                    }
                };
                match nvcc_ptx(nvcc, &path, &include_dirs) {
                    Ok(ptx) => match INCOMPLETE.iter().find(|(f, _)| *f == file) {
                        Some((_, why)) => {
                            let theirs = program_functions(&ptx);
                            assert!(got.is_subset(&theirs) && got != theirs, "{file}: take it out of INCOMPLETE, or fix: cdpc {got:#?}\nnvcc {theirs:#?}");
                            println!("{file}: {} of nvcc's {} functions: {why}", got.len(), theirs.len());
                        }
                        // Through Clang the libraries' kernels (CUB's `EmptyKernel`) are
                        // instantiated as nvcc instantiates them: every kernel and function of
                        // the program is compared, and every one of cdpc's must be nvcc's. nvcc
                        // also keeps the libraries' inline functions as `.weak .func` copies
                        // where it inlined them all (Thrust's `contiguous_storage`); Clang
                        // drops an inline function nothing calls.
                        None => {
                            let theirs = functions(&ptx);
                            let missing: Vec<_> = theirs.difference(&got).filter(|(linkage, name)| !(linkage == ".weak" && program_functions(&format!(".weak .func {name}(")).is_empty())).collect();
                            assert!(got.is_subset(&theirs) && missing.is_empty(), "{file}: cdpc's functions differ from nvcc's: cdpc {got:#?}\nmissing {missing:#?}");
                        }
                    },
                    Err(why) => println!("{file}: compiled; nvcc comparison skipped, nvcc cannot compile it here: {why}"),
                }
            }
            Err(e) => panic!("{file}: {e}: {e:?}"),
        }
    }
}
