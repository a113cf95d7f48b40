//! The NVIDIA tools' refusals of what the program wrote, as coded diagnostics at the program's
//! line rather than a tool's stderr about a work file, along every path the driver
//! runs ptxas and nvlink on:
//!
//! - invalid inline PTX in `asm("...")`: `E0968` at the `asm` statement, ptxas's message the
//!   diagnostic's (`driver::ptxas_asm`), for CUDA C++ and the kernel language, with and
//!   without `-lineinfo`, alone and in a link of several sources; in IR without debug
//!   locations, at the input's start with the function and ptxas's command as notes;
//! - a device-runtime function CUDA 13.5's libcudadevrt lacks (`cudaEventRecordWithFlags`):
//!   `E0801` at the call (`driver::symbols::runtime_missing`) for a cubin, `-c`'s whole
//!   program, a link of sources and a program's device link; a `-dc` object's device link
//!   names the object (an object holds no lines).
//!
//! Skipped with a printed reason where Clang or the NVIDIA tools are missing.

use std::path::Path;
use std::process::Command;

const BAD_ASM: &str = "__global__ void scale(int *p, int k)\n{\n    int x = p[threadIdx.x];\n    asm(\"mul.lo.u32 %0, %0, %1;\" : \"+r\"(x) : \"r\"(k));\n    asm volatile(\"bogus.instr.u32 %0, %0;\" : \"+r\"(x));\n    p[threadIdx.x] = x;\n}\n";

const EVENT: &str = "#include <cuda_runtime.h>\n__global__ void child(int *p) { p[0] = 1; }\n__global__ void parent(int *p)\n{\n    cudaEvent_t e;\n    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);\n    child<<<1, 1>>>(p);\n    cudaEventRecordWithFlags(e, 0, 0);\n}\n";

const OTHER: &str = "__device__ int other(int x) { return x + 1; }\n";

fn cdpc(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).args(args).env("CDPC_CACHE_DIR", "").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Fails unless `stderr` holds `code` at `place` (`file:line:col`) and no tool's raw failure.
fn assert_placed(what: &str, stderr: &str, code: &str, place: &str) {
    assert!(stderr.contains(&format!("error[{code}]")), "{what}: no {code}:\n{stderr}");
    assert!(stderr.contains(&format!("┌─ {place}")), "{what}: {code} is not at {place}:\n{stderr}");
    assert!(!stderr.contains("failed (exit status"), "{what}: a tool's raw failure:\n{stderr}");
}

#[test]
fn inline_ptx_that_ptxas_refuses_is_e0968_at_the_asm_statement() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("bad.cu"), BAD_ASM).unwrap();
    std::fs::write(d.join("bad.cdp"), BAD_ASM).unwrap();
    std::fs::write(d.join("other.cu"), OTHER).unwrap();
    for (what, args) in [
        ("a .cu cubin", vec!["bad.cu", "-o", "bad.cubin"]),
        ("a .cu cubin with -lineinfo", vec!["bad.cu", "--lineinfo", "-o", "bad.cubin"]),
        ("a .cu device object", vec!["bad.cu", "--emit", "obj", "-o", "bad.o"]),
        ("a .cu -dc object", vec!["-dc", "bad.cu", "-o", "bad.o"]),
        ("a .cu in a link of sources", vec!["bad.cu", "other.cu", "-o", "both.cubin"]),
        ("a .cdp cubin", vec!["bad.cdp", "-o", "bad.cubin"]),
    ] {
        let (ok, stderr) = cdpc(d, &args);
        assert!(!ok, "{what}: compiled");
        let file = args.iter().find(|a| a.starts_with("bad.")).unwrap();
        assert_placed(what, &stderr, "E0968", &format!("{file}:5:5"));
        // ptxas's own words, and the PTX it refused.
        assert!(stderr.contains("Not a name of any known instruction: 'bogus'"), "{what}:\n{stderr}");
        assert!(stderr.contains("bogus.instr.u32 %r"), "{what}:\n{stderr}");
        // The good statement on line 4 is not blamed.
        assert!(!stderr.contains(":4:5"), "{what}:\n{stderr}");
    }
    for out in ["bad.cubin", "bad.o", "both.cubin"] {
        assert!(!d.join(out).exists(), "{out} was written");
    }
}

#[test]
fn inline_ptx_refused_in_ir_without_debug_locations_is_e0968_with_notes() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\n\
              define ptx_kernel void @k(ptr %p) {\n  %v = call i32 asm sideeffect \"bogus.instr.u32 $0, 1;\", \"=r\"()\n  store i32 %v, ptr %p, align 4\n  ret void\n}\n";
    std::fs::write(dir.path().join("k.ll"), ir).unwrap();
    let (ok, stderr) = cdpc(dir.path(), &["k.ll", "-o", "k.cubin"]);
    assert!(!ok);
    assert!(stderr.contains("error[E0968]"), "{stderr}");
    assert!(stderr.contains("function `k`: the input has no debug location for it"), "{stderr}");
    assert!(stderr.contains("ptxas's command:"), "{stderr}");
    assert!(!stderr.contains("failed (exit status"), "{stderr}");
}

#[test]
fn runtime_functions_libcudadevrt_lacks_fail_the_link_at_the_call() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ev.cu"), EVENT).unwrap();
    std::fs::write(d.join("ev.cdp"), EVENT.replace("#include <cuda_runtime.h>\n", "")).unwrap();
    std::fs::write(d.join("other.cu"), OTHER).unwrap();
    std::fs::write(d.join("main.cu"), "__global__ void parent(int *p);\nint main() { int *p = nullptr; parent<<<1, 1>>>(p); return cudaDeviceSynchronize() != cudaSuccess; }\n").unwrap();
    let mut paths = vec![
        ("a .cu cubin", vec!["ev.cu", "-o", "ev.cubin"], "ev.cu:8:5"),
        ("a .cu whole-program object (-c)", vec!["-c", "ev.cu", "-o", "ev.o"], "ev.cu:8:5"),
        ("a .cu in a link of sources", vec!["ev.cu", "other.cu", "-o", "both.cubin"], "ev.cu:8:5"),
        ("a .cdp cubin", vec!["ev.cdp", "-o", "ev.cubin"], "ev.cdp:7:5"),
    ];
    if cdpc::toolchain::HostCompiler::find(None).is_ok() {
        paths.push(("a program's device link", vec!["-rdc=true", "ev.cu", "main.cu", "-o", "prog"], "ev.cu:8:5"));
    }
    for (what, args, place) in paths {
        let (ok, stderr) = cdpc(d, &args);
        assert!(!ok, "{what}: linked");
        assert_placed(what, &stderr, "E0801", place);
        assert!(stderr.contains("`cudaEventRecordWithFlags` (`__cudaCDP2EventRecordWithFlags`) is not defined by libcudadevrt"), "{what}:\n{stderr}");
        // The error stands in for the warning at the same call.
        assert!(!stderr.contains("warning[W0316]"), "{what}:\n{stderr}");
    }
    // A `-dc` object holds no lines: its device link names the object and the function.
    let (ok, stderr) = cdpc(d, &["-dc", "ev.cu", "-o", "ev.o"]);
    assert!(ok && stderr.contains("warning[W0316]"), "{stderr}");
    let (ok, stderr) = cdpc(d, &["--device-link", "ev.o", "-o", "linked.cubin"]);
    assert!(!ok);
    assert!(stderr.contains("error[E0801]: device-runtime function `cudaEventRecordWithFlags` (`__cudaCDP2EventRecordWithFlags`), used in `ev.o`, is not defined by libcudadevrt"), "{stderr}");
    assert!(!stderr.contains("failed (exit status"), "{stderr}");
}
