//! The host compiler's warning options (`-Xcompiler -Wall -Wextra`) warn where nvcc's host
//! compiler would: on host and `__host__ __device__` code, never inside a `__global__` or
//! `__device__` function, which nvcc's g++ never sees (cudafe++ leaves it a kernel's stub).
//! Clang's host side parses those bodies too; cdpc drops its warnings there (shim.cpp,
//! `HostWarningsInDeviceCode`). ggml, built with its own `-Xcompiler "-Wall -Wextra ..."`,
//! printed 2,432 such warnings with cdpc and none with nvcc.

use crate::build_common::{cdpc, nvcc, run, stderr};

/// Each kind of device code with the same three mistakes (an unused parameter, an unused
/// variable, a signed/unsigned comparison), and the host and `__host__ __device__` code that
/// has them too.
const SOURCE: &str = r#"#define LESS(a, b) ((a) < (b))
__device__ int dev(int a, int unused) { int x; unsigned u = 3; return a < u ? a : 0; }
__global__ void kernel(int *p, int n) { int y; unsigned u = n; for (int i = 0; i < u; i++) p[i] = dev(i, 0); }
template <typename T> __device__ T dev_template(T a, int unused) { int x; unsigned u = 3; return LESS(a, u) ? a : 0; }
__global__ void kernel2(int *p) { p[0] = dev_template(p[1], 0); }
struct S {
  __device__ int member(int a, int unused) { int x; unsigned u = 3; return a < u; }
  __host__ __device__ int both(int a, int unused_both) { unsigned u = 3; return a < u; }
};
__global__ void kernel3(S s, int *p) { p[0] = s.member(p[1], 0) + s.both(p[2], 0); }
__host__ __device__ int hd(int a, int unused_hd) { unsigned u = 3; return a < u; }
int host(int a, int unused_host) { unsigned u = 3; int z; return LESS(a, u); }
int main() {
  kernel<<<1, 1>>>(nullptr, 0);
  auto lambda = [] __device__ (int a, int unused_lambda) { unsigned u = 3; return a < u; };
  (void)lambda;
  return host(1, 2) + hd(1, 2);
}
"#;

/// nvcc 13.5's host compiler's warnings (g++ 12, `nvcc -arch=sm_90 -extended-lambda -c
/// -Xcompiler -Wall,-Wextra`), as (line, flag), sorted: those of `S::both`, `hd` and `host`.
const NVCC: &[(usize, &str)] = &[(8, "-Wsign-compare"), (8, "-Wunused-parameter"), (11, "-Wsign-compare"), (11, "-Wunused-parameter"), (12, "-Wsign-compare"), (12, "-Wunused-parameter")];

/// cdpc's: nvcc's, and `host`'s unused `z`, which nvcc's own front end reports instead of g++
/// ("variable "z" was declared but never referenced", #177-D, as for every unused variable,
/// device code's too, with or without options).
const CDPC: &[(usize, &str)] =
    &[(8, "-Wsign-compare"), (8, "-Wunused-parameter"), (11, "-Wsign-compare"), (11, "-Wunused-parameter"), (12, "-Wsign-compare"), (12, "-Wunused-parameter"), (12, "-Wunused-variable")];

/// The `[-Wflag]` at the end of a message.
fn flag(message: &str) -> Option<&str> {
    Some(message.strip_suffix(']')?.rsplit_once("[")?.1)
}

#[test]
fn host_warning_options_warn_on_host_code_as_nvccs_host_compiler() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("w.cu"), SOURCE).unwrap();
    let args = ["-arch=sm_90", "-extended-lambda", "-c", "w.cu", "-o", "w.o", "-Xcompiler", "-Wall,-Wextra"];
    let out = cdpc(d, &[&args[..], &["--error-format", "json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let mut ours: Vec<(usize, String)> = stderr(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["severity"] == "warning")
        .map(|v| (v["labels"][0]["line_start"].as_u64().unwrap_or(0) as usize, flag(v["message"].as_str().unwrap_or("")).unwrap_or("").to_string()))
        .collect();
    ours.sort();
    ours.dedup();
    let pairs = |list: &[(usize, &str)]| list.iter().map(|(l, f)| (*l, f.to_string())).collect::<Vec<_>>();
    assert_eq!(ours, pairs(CDPC), "{}", stderr(&out));

    // Without the options, neither side warns of these.
    let quiet = cdpc(d, &args[..6]);
    assert!(quiet.status.success() && !stderr(&quiet).contains("warning"), "{}", stderr(&quiet));

    // The oracle, where nvcc and its host compiler are here.
    let Some(nvcc) = nvcc() else { return };
    if !crate::build_common::have("g++") {
        return;
    }
    let theirs = run(&nvcc, d, &args);
    let mut gcc: Vec<(usize, String)> = stderr(&theirs)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("w.cu:")?;
            let (line, rest) = rest.split_once(':')?;
            rest.contains(": warning: ").then_some(())?;
            Some((line.parse().ok()?, flag(rest)?.to_string()))
        })
        .collect();
    gcc.sort();
    gcc.dedup();
    assert_eq!(gcc, pairs(NVCC), "nvcc: {}", stderr(&theirs));
}

/// Host functions with one mistake each that Clang warns about, and whether nvcc 13.5 (g++
/// 12.2 its host compiler) fails on each under `-Xcompiler -Werror`, `-Xcompiler -Wall,-Werror`
/// and `-Werror all-warnings` (measured 2026-12-01; checked again below where nvcc is here).
const WERROR_PROBES: &[(&str, &str, [bool; 3])] = &[
    // EDG's #174-D, and g++'s -Wunused-value under -Wall.
    ("unused_value", "int f(int a) { 255 - 194 * a; return a; }", [false, true, true]),
    // g++'s -Wformat under -Wall; EDG says nothing.
    ("format", "int f(int a) { printf(\"%s\\n\", a); return 0; }", [false, true, false]),
    // Neither: cudafe++ writes the braces out.
    ("dangling_else", "int f(int a, int b) { if (a) if (b) return 1; else return 2; return 0; }", [false, false, false]),
    // Neither: no warning of g++'s or EDG's.
    ("literal_conversion", "int f() { int x = 3.5; return x; }", [false, false, false]),
    // g++ without options, and EDG's #940-D.
    ("return_type", "int f(int a) { if (a) return 1; }", [true, true, true]),
    // g++'s -Wswitch under -Wall.
    ("switch", "enum E { A, B }; int f(E e) { switch (e) { case A: return 1; } return 0; }", [false, true, false]),
];

/// What each `-Werror` asks for, as nvcc is given it.
const WERRORS: [&[&str]; 3] = [&["-Xcompiler", "-Werror"], &["-Xcompiler", "-Wall,-Werror"], &["-Werror", "all-warnings"]];

/// Under each `-Werror`, cdpc fails on a host-code warning where nvcc's build fails and builds
/// where nvcc's builds (`front::cuda::host_warnings`): Clang warns about more than nvcc's
/// front end and g++ do, and by default about more than g++ without options.
#[test]
fn werror_fails_a_build_where_nvccs_fails_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let oracle = nvcc().filter(|_| crate::build_common::have("g++"));
    for (name, code, fails) in WERROR_PROBES {
        let file = format!("{name}.cu");
        std::fs::write(d.join(&file), format!("#include <cstdio>\n__global__ void k(int *p) {{ p[0] = 1; }}\n{code}\nint main() {{ k<<<1, 1>>>(nullptr); return 0; }}\n")).unwrap();
        for (werror, &fails) in WERRORS.iter().zip(fails) {
            let args = [&["-arch=sm_90", "-c", file.as_str(), "-o", "x.o"][..], werror].concat();
            let out = cdpc(d, &args);
            assert_eq!(!out.status.success(), fails, "cdpc {}: {}", args.join(" "), stderr(&out));
            if let Some(nvcc) = &oracle {
                let theirs = nvcc_status(nvcc, d, &args);
                assert_eq!(!theirs.status.success(), fails, "nvcc {}: {}", args.join(" "), stderr(&theirs));
            }
        }
    }
}

/// nvcc's run in `dir`, failed or not, with the NVIDIA tools on `PATH`.
fn nvcc_status(nvcc: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let tools = crate::build_common::tool_dir().expect("the NVIDIA tools");
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    std::process::Command::new(nvcc).current_dir(dir).env("PATH", path).args(args).output().expect("nvcc runs")
}
