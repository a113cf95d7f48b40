//! The ELF visibility of a `.cu` file's kernels and device variables on the host side, which
//! nvcc 13 makes hidden (`--device-entity-has-hidden-visibility`, on by default): a shared
//! library does not export them, so two libraries' kernels of one name cannot interpose. The
//! oracle is nvcc 13.5's `-dc` object of the same source (`readelf -s`, 2026-11-28): the
//! expected table below is what it gave, and where the toolkit's nvcc is 13 or later the test
//! compares with it too. Cases that need readelf or nvcc skip with a printed reason.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::build_common::{cdpc, cdpc_env, have, nvcc, run, stderr, tool_dir};

/// Every kind of entity the rule names and every exception nvcc makes: a kernel, one declared
/// before its definition, a template kernel's instances (one with an argument of default
/// visibility), device, constant and managed variables, a variable template; a visibility the
/// program gave (`default` on the kernel or its namespace, `protected`, `default` on a
/// redeclaration); internal linkage (`static`, an anonymous namespace).
const SOURCE: &str = r#"
__device__ int dvar;
__constant__ int cvar;
__managed__ int mvar;
template <class T> __device__ T tvar;
template __device__ float tvar<float>;
__global__ void k(int *p) { p[0] = dvar + cvar + mvar; }
__global__ void later(int *p);
__global__ void later(int *p) { p[0] = 4; }
template <class T> __global__ void tk(T *p) { p[0] = T(); }
struct __attribute__((visibility("default"))) Pub { int a; };
template __global__ void tk<Pub>(Pub *);
template __global__ void tk<int>(int *);
__attribute__((visibility("default"))) __global__ void exported(int *p) { p[0] = 1; }
__attribute__((visibility("protected"))) __global__ void prot(int *p) { p[0] = 1; }
namespace __attribute__((visibility("default"))) api {
__global__ void nk(int *p) { p[0] = 1; }
__device__ int nv;
}
__global__ void redeclared(int *p);
__attribute__((visibility("default"))) __global__ void redeclared(int *p) { p[0] = 4; }
static __global__ void sk(int *p) { p[0] = 2; }
namespace { __global__ void ak(int *p) { p[0] = 3; } }
void host(int *p) { later<<<1, 1>>>(p); sk<<<1, 1>>>(p); ak<<<1, 1>>>(p); }
"#;

/// nvcc 13.5's `-dc` object of [`SOURCE`]: the visibility of each symbol the rule is about
/// (the bindings are the host compilers': g++ makes the variable template's instance
/// `UNIQUE`, Clang `WEAK`).
const NVCC_13: &[(&str, &str)] = &[
    ("_Z1kPi", "HIDDEN"),
    ("_Z5laterPi", "HIDDEN"),
    ("_Z2tkI3PubEvPT_", "HIDDEN"),
    ("_Z2tkIiEvPT_", "HIDDEN"),
    ("_Z8exportedPi", "DEFAULT"),
    ("_Z4protPi", "PROTECTED"),
    ("_ZN3api2nkEPi", "DEFAULT"),
    ("_ZN3api2nvE", "DEFAULT"),
    ("_Z10redeclaredPi", "DEFAULT"),
    ("dvar", "HIDDEN"),
    ("cvar", "HIDDEN"),
    ("mvar", "HIDDEN"),
    ("_Z4tvarIfE", "HIDDEN"),
];

/// The visibility of the defined global symbols of `object` named in [`NVCC_13`].
fn visibility(dir: &Path, object: &str) -> BTreeMap<String, String> {
    let out = Command::new("readelf").current_dir(dir).args(["-sW", object]).output().expect("readelf runs");
    assert!(out.status.success(), "readelf {object}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [_, _, _, _, bind, vis, index, name] if bind != "LOCAL" && index != "UND" && NVCC_13.iter().any(|(n, _)| *n == name) => Some((name.to_string(), vis.to_string())),
            _ => None,
        })
        .collect()
}

fn expected(all_default: bool) -> BTreeMap<String, String> {
    NVCC_13
        .iter()
        .map(|(name, what)| {
            // Clang's host side makes a managed variable's shadow hidden itself (nvcc's
            // `false` leaves `mvar` default: the one difference, docs/BUILDING.md).
            let what = if all_default && *name != "mvar" { what.replace("HIDDEN", "DEFAULT") } else { what.to_string() };
            (name.to_string(), what)
        })
        .collect()
}

#[test]
fn kernels_and_device_variables_are_hidden_on_the_host_side_as_nvcc_13_hides_them() {
    if !have("readelf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v.cu"), SOURCE).unwrap();
    let out = cdpc(dir.path(), &["-arch=sm_90", "-dc", "v.cu", "-o", "ours.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = visibility(dir.path(), "ours.o");
    assert_eq!(ours, expected(false));
    // `false` gives every entity the visibility Clang would: default, but for the managed
    // variable (above).
    let out = cdpc(dir.path(), &["-arch=sm_90", "-dc", "--device-entity-has-hidden-visibility=false", "v.cu", "-o", "open.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(visibility(dir.path(), "open.o"), expected(true));
    // The toolkit's nvcc, where it is 13 or later (before 13 its default was `false`).
    let Some(nvcc) = nvcc() else { return };
    let version = String::from_utf8_lossy(&run(&nvcc, dir.path(), &["--version"]).stdout).into_owned();
    let major = version.split("release ").nth(1).and_then(|v| v.split('.').next()?.parse::<u32>().ok());
    if major.is_none_or(|m| m < 13) {
        return println!("skipped the comparison: nvcc before 13 ({version})");
    }
    run(&nvcc, dir.path(), &["-arch=sm_90", "-dc", "v.cu", "-o", "theirs.o"]);
    assert_eq!(ours, visibility(dir.path(), "theirs.o"));
    run(&nvcc, dir.path(), &["-arch=sm_90", "-dc", "--device-entity-has-hidden-visibility=false", "v.cu", "-o", "theirs-open.o"]);
    let mut theirs_open = visibility(dir.path(), "theirs-open.o");
    assert_eq!(theirs_open.insert("mvar".into(), "HIDDEN".into()).as_deref(), Some("DEFAULT"));
    assert_eq!(visibility(dir.path(), "open.o"), theirs_open);
}

/// A header's kernel keeps its hidden visibility when the header comes from cdpc's cache (the
/// CUDA wrapper's precompiled header, then the file's preamble): the first, second and third
/// compilations give the same symbols.
#[test]
fn a_headers_kernels_are_hidden_whatever_the_cache_holds() {
    if !have("readelf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernels.cuh"), SOURCE.replace("void host(int *p)", "inline void host(int *p)")).unwrap();
    std::fs::write(dir.path().join("v.cu"), "#include <cstdio>\n#include \"kernels.cuh\"\nvoid use(int *p) { host(p); }\n").unwrap();
    let cache = dir.path().join("cache");
    let env = [("CDPC_CACHE_DIR", cache.to_str().unwrap()), ("CDPC_CACHE_BACKGROUND", "0")];
    for round in 0..3 {
        let object = format!("v{round}.o");
        let out = cdpc_env(dir.path(), &["-arch=sm_90", "-dc", "v.cu", "-o", &object], &env);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(visibility(dir.path(), &object), expected(false), "compilation {}", round + 1);
    }
    assert!(std::fs::read_dir(cache.join("preamble")).is_ok_and(|mut d| d.any(|e| e.unwrap().path().extension().is_some_and(|x| x == "pch"))), "a preamble was made");
}

/// A shared library of cdpc's exports only the kernels and variables the program exported
/// (`default` on the kernel or its namespace, `protected`): the hidden ones are not among its
/// dynamic symbols at all, neither defined nor referenced, so another library's kernel of the
/// same name cannot take their place.
#[test]
fn a_shared_library_exports_only_what_the_program_exported() {
    if tool_dir().is_none() || !have("readelf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v.cu"), SOURCE).unwrap();
    let out = cdpc(dir.path(), &["-arch=sm_90", "--shared", "-Xcompiler", "-fPIC", "v.cu", "-o", "libv.so"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new("readelf").current_dir(dir.path()).args(["--dyn-syms", "-W", "libv.so"]).output().expect("readelf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let dynamic: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().nth(7)).collect();
    for (name, vis) in NVCC_13 {
        assert_eq!(dynamic.contains(name), *vis != "HIDDEN", "{name} ({vis}) among the dynamic symbols: {dynamic:?}");
    }
}

/// nvcc 13's `-static-global-template-stub`: in a whole-program object (`-c` without `-rdc`) a
/// template kernel's instance belongs to the file's own device program, so its host stub is
/// local (else the host linker keeps one file's weak stub and another file's launch runs the
/// first file's device program's instance); in a `-dc` object, one device program for all,
/// it stays weak. Both as nvcc 13.5's objects have it.
#[test]
fn a_whole_program_objects_template_kernel_stubs_are_its_own() {
    if tool_dir().is_none() || !have("readelf") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.cu"), "template <class T> __global__ void tk(T *p) { *p = T(1); }\nvoid run(int *p) { tk<<<1, 1>>>(p); }\n").unwrap();
    let binding = |object: &str| -> String {
        let out = Command::new("readelf").current_dir(dir.path()).args(["-sW", object]).output().expect("readelf runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text.lines().find(|l| l.split_whitespace().nth(7) == Some("_Z2tkIiEvPT_") && l.split_whitespace().nth(3) == Some("FUNC"));
        line.map_or_else(|| format!("missing in {text}"), |l| l.split_whitespace().nth(4).unwrap().to_string())
    };
    for (mode, object, expected) in [("-c", "whole.o", "LOCAL"), ("-dc", "separate.o", "WEAK")] {
        let out = cdpc(dir.path(), &["-arch=sm_90", mode, "t.cu", "-o", object]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(binding(object), expected, "{mode}");
    }
    let Some(nvcc) = nvcc() else { return };
    for (mode, object) in [("-c", "nvcc-whole.o"), ("-dc", "nvcc-separate.o")] {
        run(&nvcc, dir.path(), &["-arch=sm_90", mode, "t.cu", "-o", object]);
    }
    let version = String::from_utf8_lossy(&run(&nvcc, dir.path(), &["--version"]).stdout).into_owned();
    if version.split("release ").nth(1).and_then(|v| v.split('.').next()?.parse::<u32>().ok()).is_none_or(|m| m < 13) {
        return println!("skipped the comparison: nvcc before 13");
    }
    assert_eq!((binding("whole.o"), binding("separate.o")), (binding("nvcc-whole.o"), binding("nvcc-separate.o")));
}
