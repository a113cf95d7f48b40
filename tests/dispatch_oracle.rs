//! The order in which a warp divided by one value's `if`/`else if` chain or `switch` takes its
//! cases, cdpc's build against nvcc's: the compares and branches before a kernel's first call,
//! in the SASS of both cubins (`cuobjdump -sass`), must be the same, registers aside. The
//! oracle is nvcc's cubin and nothing else; both of cdpc's front ends are checked.
//!
//! Why it matters: with launches on the cases' sides, the order of the sides is the order of
//! the launches, and another order made the launch-site shape (`samples/lane_sites.cdp`) slower
//! on the H100. LLVM lets another case fall through than nvcc does
//! unless the back end lays the blocks out for it (`back::write_ptx`, `nvcc_case_order`).
//! Sequential `if`s on one value that LLVM merges into a `switch` (samples/null_stream_order.cdp)
//! are not nvcc's order either way and are not checked here.
//!
//! Skips, printing why, when nvcc or cuobjdump cannot be found (`cargo xtask setup` installs
//! both).

use cdpc::driver::{self, CompileOptions};
use cdpc::pipeline::aggregate::Granularity;
use cdpc_tests::NvidiaTools;
use std::path::Path;
use std::process::Command;

/// Kernels whose lanes split by `t % N` and launch on each side, in the kernel language (which
/// nvcc compiles as CUDA C++).
const SOURCE: &str = r#"
extern "C" __global__ void mark(int *out, int base, int count)
{
    int i = threadIdx.x;
    if (i < count)
        out[base + i] = base + i + 1;
}

__device__ void four(int *out, int base)
{
    mark<<<1, 4>>>(out, base, 4);
}

// an if / else if chain in ascending order, straight sides
extern "C" __global__ void ascending(int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t % 3 == 0)
        mark<<<1, 2>>>(out, t, 2);
    else if (t % 3 == 1)
        four(out, t);
}

// the same chain written the other way round, a loop on one side
extern "C" __global__ void descending(int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t % 3 == 1) {
        four(out, t);
    } else if (t % 3 == 0) {
        for (int r = 0; r < t % 4; ++r)
            mark<<<1, 2>>>(out, t + 2 * r, 2);
    }
}

// a switch statement
extern "C" __global__ void switched(int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    switch (t % 3) {
    case 0:
        mark<<<1, 2>>>(out, t, 2);
        break;
    case 1:
        four(out, t);
        break;
    }
}

// samples/lane_sites.cdp's parent: a per-lane loop of launches, a device function's launch
extern "C" __global__ void lanes(int *out)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int base = 8 * t;
    if (t % 3 == 0) {
        for (int r = 0; r < t % 4; ++r)
            mark<<<1, 2>>>(out, base + 2 * r, 2);
    } else if (t % 3 == 1) {
        four(out, base);
    }
}
"#;

/// Three cases (`t % 4 == 0`, `== 1`, `== 2`) are left out: nvcc tests `t % 4 == 0` as a mask
/// (`LOP3`), which these compares do not read; by hand (cuobjdump, 2026-11-27, CUDA 13.5) both
/// builds test 0, 1 and 2 in that order and let the third fall through.
const KERNELS: &[&str] = &["ascending", "descending", "switched", "lanes"];

/// The compares and branches of `kernel` before its first call: each `ISETP` against a
/// constant and the predicated `BRA` or `EXIT` after it, registers and branch targets left
/// out, `.U32` dropped (cdpc's compares of a remainder are unsigned where nvcc's are signed:
/// the same test for the values compared).
fn dispatch(tools: &NvidiaTools, cubin: &Path, kernel: &str) -> Vec<String> {
    let out = Command::new(&tools.cuobjdump).args(["-sass", "-fun", kernel]).arg(cubin).output().expect("cuobjdump runs");
    assert!(out.status.success(), "cuobjdump -sass -fun {kernel} {}: {}", cubin.display(), String::from_utf8_lossy(&out.stderr));
    let sass = String::from_utf8_lossy(&out.stdout);
    let normal = |instruction: &str| -> String {
        instruction
            .replace(".U32", "")
            .split_whitespace()
            .map(|w| {
                let bare = w.trim_end_matches(',');
                if bare.len() > 1 && bare.starts_with('R') && bare[1..].chars().all(|c| c.is_ascii_digit()) {
                    "R,".to_string()
                } else {
                    w.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Each compare of a register with a constant (a case value, a trip count: `0x..` or `RZ`)
    // and the predicated branch or exit that follows it; a loop's compare of two registers is
    // the loop's form, not the dispatch.
    let mut seen = Vec::new();
    let mut compared = false;
    for line in sass.lines() {
        let Some(instruction) = line.split("*/").nth(1).and_then(|s| s.split(';').next()).map(str::trim) else { continue };
        if instruction.starts_with("CALL") {
            break;
        }
        if instruction.starts_with("ISETP") {
            compared = instruction.contains("0x") || instruction.contains("RZ");
            if compared {
                seen.push(normal(instruction));
            }
        } else if compared && instruction.starts_with('@') && (instruction.contains(" BRA") || instruction.contains(" EXIT")) {
            seen.push(instruction.split_whitespace().take(2).collect::<Vec<_>>().join(" "));
            compared = false;
        }
    }
    assert!(!seen.is_empty(), "no compares in {kernel}'s SASS:\n{sass}");
    seen
}

#[test]
fn a_split_by_one_value_takes_its_cases_in_nvccs_order() {
    let tools = match NvidiaTools::find() {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("split.cdp");
    std::fs::write(&source, SOURCE).unwrap();
    let nvcc_cubin = dir.path().join("nvcc.cubin");
    let nvcc = tools.nvcc_cubin(&source, &nvcc_cubin);
    assert!(nvcc.status.success(), "nvcc: {}", String::from_utf8_lossy(&nvcc.stderr));
    // The plain build: the launches as written (the default would run these small children in
    // their launching threads).
    let options = CompileOptions { launch_threshold: 0, aggregate: Granularity::Off, ..CompileOptions::default() };
    // Both front ends: the kernel language's, and Clang's (the same text as CUDA C++).
    let as_cu = dir.path().join("split.cu");
    std::fs::write(&as_cu, SOURCE).unwrap();
    let expected: Vec<Vec<String>> = KERNELS.iter().map(|kernel| dispatch(&tools, &nvcc_cubin, kernel)).collect();
    for input in [&source, &as_cu] {
        let cdpc_cubin = dir.path().join("cdpc.cubin");
        driver::compile_file(input, &cdpc_cubin, &options).unwrap_or_else(|e| panic!("cdpc {}: {e:?}", input.display()));
        for (kernel, nvccs) in KERNELS.iter().zip(&expected) {
            assert_eq!(&dispatch(&tools, &cdpc_cubin, kernel), nvccs, "{kernel} of {}: cdpc's compares and branches (left) against nvcc's (right)", input.display());
        }
    }
}
