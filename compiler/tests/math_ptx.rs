//! libdevice's square roots correctly rounded, as nvcc's default build has them
//! (`-prec-sqrt=true`). libdevice's `sqrtf`, `hypotf`, `normf`, `norm3df`, `norm4df`
//! and `jnf` ask `__nvvm_reflect("__CUDA_PREC_SQRT")` whether to use `sqrt.rn.f32`; LLVM 22
//! answers 0 unless told, so both front ends wrote `sqrt.approx.f32` (KLAP's BT takes its
//! curvature's length with `sqrtf`), and `back::nvcc_math_defaults` tells it 1. `rsqrtf` is an
//! approximation in nvcc's build too. nvcc's PTX of the same source is the oracle.

use crate::build_common::{cdpc_ptx as ours, nvcc_ptx};

fn count(ptx: &str, op: &str) -> usize {
    ptx.lines().filter(|l| l.split_whitespace().next() == Some(op)).count()
}

#[test]
fn sqrtf_is_correctly_rounded_through_both_front_ends_as_in_nvcc() {
    let source = "extern \"C\" __global__ void roots(float *f, double *d)\n{\n    f[0] = sqrtf(f[1]);\n    f[2] = rsqrtf(f[3]);\n    d[0] = sqrt(d[1]);\n}\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    // The oracle says something: sqrtf rounded to nearest, rsqrtf approximated.
    assert_eq!((count(&theirs, "sqrt.rn.f32"), count(&theirs, "sqrt.approx.f32"), count(&theirs, "rsqrt.approx.f32")), (1, 0, 1), "nvcc:\n{theirs}");
    for file in ["roots.cdp", "roots.cu"] {
        let ptx = ours(file, source);
        assert_eq!((count(&ptx, "sqrt.rn.f32"), count(&ptx, "sqrt.approx.f32"), count(&ptx, "rsqrt.approx.f32")), (1, 0, 1), "{file}:\n{ptx}");
        assert_eq!(count(&ptx, "sqrt.rn.f64"), count(&theirs, "sqrt.rn.f64"), "{file}:\n{ptx}");
    }
}

#[test]
fn libdevices_other_roots_are_correctly_rounded_as_in_nvcc() {
    let source = "__global__ void norms(float *f, int n)\n{\n    f[0] = hypotf(f[1], f[2]);\n    f[3] = normf(n, f + 4);\n    f[5] = norm3df(f[6], f[7], f[8]);\n    f[9] = norm4df(f[10], f[11], f[12], f[13]);\n}\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    assert!(count(&theirs, "sqrt.rn.f32") >= 4 && count(&theirs, "sqrt.approx.f32") == 0, "nvcc:\n{theirs}");
    let ptx = ours("norms.cu", source);
    assert_eq!(count(&ptx, "sqrt.approx.f32"), 0, "{ptx}");
    assert!(count(&ptx, "sqrt.rn.f32") >= 4, "{ptx}");
}

/// The instructions an intrinsic chooses: a rounding mode other than the default, an
/// approximation, a saturation, or the IEEE division, root and reciprocal, sorted (the plain
/// `mul.rn`/`add.rn` of ordinary arithmetic and the contraction rule's `fma.rn` left out).
fn chosen(ptx: &str) -> Vec<String> {
    let mut found: Vec<String> = ptx
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| [".rz.", ".rm.", ".rp.", ".approx."].iter().any(|m| op.contains(m)) || ["div.rn.", "sqrt.rn.", "rcp.rn.", "cvt.sat."].iter().any(|p| op.starts_with(p)) || op.ends_with(".rn.f64"))
        .map(str::to_string)
        .collect();
    found.sort();
    found
}

/// CUDA's floating-point intrinsics in the kernel language (`__fadd_rd`, `__fdividef`,
/// `__expf`, `__dsqrt_ru`, ...; E0100 before 75c4a17): the libdevice functions Clang also
/// calls for them, so the instructions nvcc writes.
#[test]
fn the_kernel_languages_float_intrinsics_are_nvccs_instructions() {
    let source = r#"
extern "C" __global__ void fi(float *f, double *d)
{
    f[0] = __fadd_rd(f[1], f[2]);
    f[1] = __fsub_ru(f[2], f[3]);
    f[2] = __fmul_rz(f[3], f[4]);
    f[3] = __fdiv_rn(f[4], f[5]);
    f[4] = __fmaf_ru(f[5], f[6], f[7]);
    f[5] = __frcp_rd(f[6]);
    f[6] = __fsqrt_rn(f[7]);
    f[7] = __frsqrt_rn(f[8]);
    f[8] = __saturatef(f[9]);
    f[9] = __fdividef(f[10], f[11]);
    f[10] = __expf(f[11]);
    f[11] = __exp10f(f[12]);
    f[12] = __logf(f[13]);
    f[13] = __log2f(f[14]);
    f[14] = __log10f(f[15]);
    f[15] = __sinf(f[16]);
    f[16] = __cosf(f[17]);
    f[17] = __tanf(f[18]);
    f[18] = __powf(f[19], f[20]);
    d[0] = __dadd_rn(d[1], d[2]);
    d[1] = __dsub_rz(d[2], d[3]);
    d[2] = __dmul_ru(d[3], d[4]);
    d[3] = __ddiv_rd(d[4], d[5]);
    d[4] = __fma_rz(d[5], d[6], d[7]);
    d[5] = __drcp_rn(d[6]);
    d[6] = __dsqrt_ru(d[7]);
}
"#;
    let Some(theirs) = nvcc_ptx(source) else { return };
    let expected = chosen(&theirs);
    // The oracle says something: every call chose its instruction (30 of them).
    assert_eq!(expected.len(), 30, "nvcc:\n{theirs}");
    let ptx = ours("fi.cdp", source);
    assert_eq!(chosen(&ptx), expected, "{ptx}");
}

/// Clang's math builtins (`__builtin_tan`, `__builtin_powf`, ...), which Clang writes as LLVM's
/// math intrinsics and NVPTX cannot select: before `pipeline::math`, LLVM ended cdpc with
/// "no libcall available for ftan" where nvcc compiles them as CUDA's math functions. Now they
/// are libdevice's functions too: the same rounding modes and approximations as nvcc's PTX
/// (none of PTX's approximate `sin.approx`, `lg2.approx`, ... but where nvcc has them), and a
/// linked cubin. The results against nvcc's on a GPU: `samples/math_functions.cu`.
#[test]
fn clangs_math_builtins_are_libdevices_functions_as_in_nvcc() {
    let source = "extern \"C\" __global__ void builtins(double *d, float *f)\n{\n    d[0] = __builtin_tan(d[1]);\n    d[2] = __builtin_pow(d[3], d[4]);\n    d[5] = __builtin_exp(d[6]) + __builtin_log10(d[7]) + __builtin_asin(d[8]);\n    d[9] = __builtin_cos(d[10]) + __builtin_exp2(d[11]);\n    f[0] = __builtin_sinf(f[1]) + __builtin_tanhf(f[2]);\n    f[3] = __builtin_powf(f[4], f[5]);\n    f[6] = __builtin_logf(f[7]) + __builtin_exp2f(f[8]);\n}\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    let ptx = ours("builtins.cu", source);
    // Arithmetic's rounding aside: nvcc writes libdevice's adds and multiplies without `.rn`
    // (ptxas may fuse them), cdpc with it, after the same contraction (back/contract.rs).
    let approximations = |ptx: &str| chosen(ptx).into_iter().filter(|op| !["fma.rn.", "add.rn.", "sub.rn.", "mul.rn."].iter().any(|p| op.starts_with(p))).collect::<Vec<_>>();
    assert!(approximations(&theirs).iter().any(|op| op.starts_with("rcp.approx")), "nvcc:\n{theirs}");
    assert_eq!(approximations(&ptx), approximations(&theirs), "cdpc:\n{ptx}\nnvcc:\n{theirs}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("builtins.cu"), source).unwrap();
    let out = crate::build_common::cdpc(dir.path(), &["builtins.cu", "-o", "builtins.cubin"]);
    assert!(out.status.success(), "{}", crate::build_common::stderr(&out));
}

/// CUDA C++'s conversions between `__int128` and floating point in device code, which nvcc
/// compiles: Clang writes `sitofp i128` and the like, which LLVM 22's NVPTX has neither an
/// instruction nor a library call for ("unsupported library call operation", `E1023`).
/// `pipeline::wide_conversions` writes them with 64-bit conversions; nvcc's PTX is the oracle
/// that the source is CUDA (its conversions are 64-bit ones too, `cvt.rn.f64.u64`), and the GPU
/// results match nvcc's byte for byte.
#[test]
fn int128_conversions_in_device_code_compile_as_in_nvcc() {
    let source = "extern \"C\" __global__ void conv(const __int128 *a, const unsigned __int128 *u, const double *d, float *f, double *od, __int128 *oa, unsigned __int128 *ou)\n{\n    od[0] = (double)a[0];\n    od[1] = (double)u[0];\n    f[1] = (float)a[1];\n    oa[0] = (__int128)d[0];\n    ou[0] = (unsigned __int128)f[0];\n}\n";
    let Some(theirs) = nvcc_ptx(source) else { return };
    assert!(count(&theirs, "cvt.rn.f64.u64") >= 1, "nvcc:\n{theirs}");
    let ptx = ours("conv.cu", source);
    for op in ["cvt.rn.f64.u64", "cvt.rn.f32.u64", "cvt.rzi.u64.f64", "cvt.rzi.u64.f32"] {
        assert!(count(&ptx, op) >= 1, "{op}:\n{ptx}");
    }
    assert!(!ptx.contains("__float") && !ptx.contains("__fix"), "no library call:\n{ptx}");
}
