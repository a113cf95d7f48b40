//! `__managed__` in the kernel language against nvcc: each managed variable is declared as
//! nvcc declares it (`.visible .global .attribute(.managed)`, `.extern` for an `extern` one,
//! an initialised array's bytes), a plain `__device__` one as before; the same file is a `.cdp`
//! for cdpc and a `.cu` for nvcc. Then what nvcc refuses, cdpc refuses: a managed variable
//! that is `__shared__` or `__constant__`, or a function's automatic variable (a `static` one
//! is taken, as nvcc takes it).

use crate::build_common::{cdpc, nvcc_ptx, stderr};

const SOURCE: &str = r#"
__managed__ int launches;
__device__ __managed__ float weights[4] = {0.5f, 1.0f, 1.5f, 2.0f};
extern __managed__ int elsewhere;
__device__ int plain;
__global__ void child(int *out) {
    atomicAdd(&launches, 1);
    out[threadIdx.x] = (int)weights[threadIdx.x % 4] + elsewhere + plain;
}
__global__ void parent(int *out) { child<<<1, 32>>>(out); }
"#;

/// The declarations of the variables, in order: every `.global` line but the string literals'.
fn declarations(ptx: &str) -> Vec<String> {
    ptx.lines().map(str::trim).filter(|l| l.starts_with('.') && l.contains(".global") && !l.contains("$str")).map(str::to_string).collect()
}

#[test]
fn managed_variables_are_declared_as_nvcc_declares_them() {
    // `-dc`: `elsewhere` is another file's, as for nvcc's `-rdc=true`.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("managed.cdp"), SOURCE).unwrap();
    // Launches as nvcc writes them: the default's aggregation adds its own state.
    let out = cdpc(dir.path(), &["-dc", "managed.cdp", "--emit", "ptx", "-o", "-", "-fno-launch-optimizations"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = declarations(&String::from_utf8_lossy(&out.stdout));
    assert!(ours.contains(&".visible .global .attribute(.managed) .align 4 .u32 launches;".to_string()), "{ours:?}");
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let mut theirs = declarations(&theirs);
    let mut ours = ours;
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "cdpc (left) and nvcc (right)");
}

#[test]
fn managed_variables_are_static_variables_of_global_memory() {
    let dir = tempfile::tempdir().unwrap();
    let source = "__managed__ __shared__ int a;\n__managed__ __constant__ int b;\n__global__ void k() { __managed__ int c; static __managed__ int d; d = 1; }\n";
    std::fs::write(dir.path().join("bad.cdp"), source).unwrap();
    let out = cdpc(dir.path(), &["bad.cdp", "--emit", "ptx", "-o", "bad.ptx"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert_eq!(text.matches("error[E0103]").count(), 3, "{text}");
    assert!(text.contains("a `__managed__` variable cannot be `__shared__`") && text.contains("cannot be `__constant__`"), "{text}");
    assert!(text.contains("a `__managed__` variable in a function must be `static`"), "{text}");
    assert!(!dir.path().join("bad.ptx").exists());
    // The `static` one alone compiles, a managed variable of global memory.
    std::fs::write(dir.path().join("ok.cdp"), "__global__ void k(int *p) { static __managed__ int d; d += 1; *p = d; }\n").unwrap();
    let out = cdpc(dir.path(), &["ok.cdp", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptx = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(ptx.lines().any(|l| l.contains(".global .attribute(.managed) .align 4 .u32 ")), "{ptx}");
}
