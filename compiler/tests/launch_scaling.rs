//! Kernels with many launches: past `front::cdp::codegen::INLINE_LAUNCHES` sites in one function, the
//! launch sequence lives once in a shared helper per child kernel, so that ptxas's time and
//! memory stay near linear (BENCHMARKS.md, "Launches per kernel"). Fewer sites are unchanged.

use cdpc::driver::{compile, CompileOptions, Emit};
use cdpc::front::cdp::codegen::INLINE_LAUNCHES;
use cdpc::{LaunchAbi, Target};

/// A parent with `n` launches of `child` (on the fire-and-forget stream under V2) and `m` of
/// `other`, each with its own arguments.
fn program(n: usize, m: usize, abi: LaunchAbi) -> String {
    let stream = if abi == LaunchAbi::V2 { "cudaStreamFireAndForget" } else { "0" };
    let mut s = String::from(
        "struct P { int a; double b; };\n\
         extern \"C\" __global__ void child(int *p, int i, float f, struct P s) { p[i] += (int)f + s.a; }\n\
         extern \"C\" __global__ void other(int *p) { p[0] = 1; }\n\
         extern \"C\" __global__ void parent(int *p, int n) {\n    struct P s; s.a = n; s.b = 0.5;\n",
    );
    for i in 0..n {
        s.push_str(&format!("    child<<<{}, 32, 0, {stream}>>>(p, {i}, n * 0.5f, s);\n", 1 + i % 3));
    }
    for _ in 0..m {
        s.push_str("    other<<<1, 1>>>(p);\n");
    }
    s.push_str("}\n");
    s
}

fn ptx(source: &str, abi: LaunchAbi, opt_level: u8) -> String {
    let options = CompileOptions { emit: Emit::Ptx, opt_level, target: Target { launch_abi: abi, ..Target::default() }, ..CompileOptions::default() };
    String::from_utf8(compile(source, &options).unwrap().output).unwrap()
}

/// Call sites of the entry point that gets the parameter buffer (V2) or launches (V1).
fn runtime_calls(ptx: &str, abi: LaunchAbi) -> usize {
    let entry = if abi == LaunchAbi::V2 { "__cudaCDP2GetParameterBufferV2, " } else { "cudaLaunchDevice, " };
    ptx.matches(entry).count()
}

#[test]
fn launches_past_the_bound_share_one_helper_per_child() {
    for abi in [LaunchAbi::V2, LaunchAbi::V1] {
        for opt_level in [0, 3] {
            let text = ptx(&program(INLINE_LAUNCHES + 136, 10, abi), abi, opt_level);
            // LLVM drops the unread status (and constant operands) of the helper at -O3.
            assert!(text.contains(".func __cdpc_launch_child") || text.contains(") __cdpc_launch_child("), "{abi:?} -O{opt_level}");
            // 64 sites in place, then one sequence in each of the two helpers.
            assert_eq!(runtime_calls(&text, abi), INLINE_LAUNCHES + 2, "{abi:?} -O{opt_level}");
            assert_eq!(text.matches(" __cdpc_launch_child, (").count(), 136, "{abi:?} -O{opt_level}");
            assert_eq!(text.matches(" __cdpc_launch_other, (").count(), 10, "{abi:?} -O{opt_level}");
        }
    }
}

#[test]
fn kernels_within_the_bound_are_unchanged() {
    let text = ptx(&program(INLINE_LAUNCHES, 0, LaunchAbi::V2), LaunchAbi::V2, 3);
    assert!(!text.contains("__cdpc_launch_"));
    assert_eq!(runtime_calls(&text, LaunchAbi::V2), INLINE_LAUNCHES);
}

#[test]
fn a_kernel_with_helpers_assembles_and_links() {
    if cdpc::toolchain::Toolchain::discover(&Default::default()).is_err() {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    }
    for abi in [LaunchAbi::V2, LaunchAbi::V1] {
        let options = CompileOptions { target: Target { launch_abi: abi, ..Target::default() }, ..CompileOptions::default() };
        let cubin = compile(&program(200, 3, abi), &options).unwrap_or_else(|e| panic!("{abi:?}: {e}")).output;
        assert_eq!(&cubin[..4], b"\x7fELF", "{abi:?}");
    }
}

/// Identical launches in three branches stay three call sites, as in nvcc's PTX: the launch
/// entry points are `nomerge`, so LLVM's -O3 does not sink them into one call that the whole
/// warp reaches (which measured a fifth slower on the H100).
#[test]
fn identical_launches_in_branches_stay_separate_call_sites() {
    let source = "extern \"C\" __global__ void child(unsigned *c) { atomicAdd(c, 1u); }\n\
                  extern \"C\" __global__ void parent(unsigned *c) {\n\
                  \x20   unsigned lane = threadIdx.x % 4;\n\
                  \x20   if (lane < 2) { child<<<1, 32>>>(c); } else if (lane == 2) { child<<<1, 32>>>(c); } else { child<<<1, 32>>>(c); }\n}\n";
    for abi in [LaunchAbi::V2, LaunchAbi::V1] {
        assert_eq!(runtime_calls(&ptx(source, abi, 3), abi), 3, "{abi:?}");
    }
    if let Some(nvcc) = crate::build_common::nvcc_ptx(source) {
        assert_eq!(runtime_calls(&nvcc, LaunchAbi::V2), 3, "nvcc's PTX:\n{nvcc}");
    }
}
