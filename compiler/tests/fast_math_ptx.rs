//! nvcc's single-precision options (`-ftz`, `-prec-div`, `-prec-sqrt`, `--use_fast_math`)
//! through both front ends, against nvcc's PTX of the same source under the same option
//! (`back::precision`): nvcc's divisions, roots, reciprocals and transcendental approximations,
//! instruction for instruction, and `.ftz` on every single-precision instruction exactly when
//! nvcc has it. (Ordinary arithmetic is compared elsewhere: cdpc writes `add.rn` where nvcc
//! writes `add`, docs/FLOATING-POINT.md.) On a GPU the same options give every
//! result bit for bit nvcc's.

use crate::build_common::{cdpc_ptx_with, nvcc_ptx_with};

/// Every operation the options change, but `x / 4.0f`: under `--use_fast_math` nvcc divides
/// (`div.approx.ftz`) where LLVM has already made it the exact `x * 0.25f` (the same bits: the
/// GPU check compares them).
const CUDA_CXX: &str = r#"
__global__ void k(float *o, const float *a) {
    float x = a[0], y = a[1], z = a[2];
    o[0] = x / y;
    o[1] = 1.0f / y;
    o[2] = 2.0f / y;
    o[3] = x / 3.0f;
    o[4] = -1.0f / y;
    o[5] = __fdiv_rn(x, y);
    o[6] = __frcp_rn(y);
    o[7] = sqrtf(x);
    o[8] = 1.0f / sqrtf(x);
    o[9] = __fsqrt_rn(x);
    o[10] = hypotf(x, y);
    o[11] = sinf(x) + cosf(y) + tanf(z);
    o[12] = expf(x) + exp2f(y) + exp10f(z);
    o[13] = logf(x) + log2f(y) + log10f(z);
    o[14] = powf(x, y) + tanhf(z);
    float s, c;
    sincosf(x, &s, &c);
    o[15] = s * c + x * y;
    o[16] = fdividef(x, y) + __fdividef(y, z) + rsqrtf(z);
}
"#;

/// What the kernel language reads of the same operations.
const KERNEL_LANGUAGE: &str = r#"
__global__ void k(float *o, const float *a) {
    float x = a[0], y = a[1], z = a[2];
    o[0] = x / y;
    o[1] = 1.0f / y;
    o[2] = 2.0f / y;
    o[3] = x / 3.0f;
    o[4] = -1.0f / y;
    o[7] = sqrtf(x);
    o[8] = 1.0f / sqrtf(x);
    o[11] = sinf(x) + cosf(y) + tanf(z);
    o[12] = expf(x) + exp2f(y);
    o[13] = logf(x) + log2f(y) + log10f(z);
    o[14] = powf(x, y);
    o[16] = __fdividef(y, z) + rsqrtf(z);
}
"#;

const OPTIONS: [&[&str]; 8] = [
    &[],
    &["-ftz=true"],
    &["-prec-div=false"],
    &["-prec-sqrt=false"],
    &["-prec-div=false", "-ftz=true"],
    &["-prec-div=false", "-prec-sqrt=false"],
    &["--use_fast_math"],
    &["--use_fast_math", "-ftz=false", "-prec-sqrt=true"],
];

/// The `.f32` instructions of `ptx`, sorted, those `keep` accepts.
fn f32_instructions(ptx: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found: Vec<String> = ptx.lines().filter_map(|l| l.split_whitespace().next()).filter(|op| op.ends_with(".f32") && keep(op)).map(str::to_string).collect();
    found.sort();
    found
}

/// Divisions, roots, reciprocals and the transcendental approximations.
fn chosen(op: &str) -> bool {
    ["div.", "sqrt.", "rsqrt.", "rcp.", "sin.", "cos.", "ex2.", "lg2.", "tanh."].iter().any(|p| op.starts_with(p))
}

fn ours(file: &str, source: &str, options: &[&str]) -> String {
    cdpc_ptx_with(file, source, options)
}

/// cdpc's PTX of `source` as `file` against nvcc's under each of [`OPTIONS`]: the same
/// divisions, roots, reciprocals and approximations, and `.ftz` on all single-precision
/// arithmetic exactly when nvcc has it.
fn compare(file: &str, source: &str) {
    for options in OPTIONS {
        let Some(theirs) = nvcc_ptx_with(source, options) else { return };
        let ptx = ours(file, source, options);
        assert_eq!(f32_instructions(&ptx, chosen), f32_instructions(&theirs, chosen), "{file} {options:?}: cdpc (left), nvcc (right)");
        // The approximations that have no other form (`ex2.approx.ftz`, `tanh.approx`) are
        // counted above.
        let flushes = |ptx: &str| {
            let arithmetic = f32_instructions(ptx, |op| ["add.", "sub.", "mul.", "fma.", "min.", "max.", "abs.", "neg."].iter().any(|p| op.starts_with(p)));
            (arithmetic.iter().filter(|op| op.contains(".ftz.")).count(), arithmetic.len())
        };
        let (theirs_ftz, theirs_all) = flushes(&theirs);
        let (ours_ftz, ours_all) = flushes(&ptx);
        assert!(theirs_all > 0 && (theirs_ftz == 0 || theirs_ftz == theirs_all), "{options:?}: nvcc {theirs_ftz} of {theirs_all}");
        assert_eq!((ours_ftz == 0, ours_ftz == ours_all), (theirs_ftz == 0, theirs_ftz == theirs_all), "{file} {options:?}: cdpc flushes {ours_ftz} of {ours_all}, nvcc {theirs_ftz} of {theirs_all}");
    }
}

#[test]
fn cuda_cxx_has_nvccs_single_precision_instructions_under_each_option() {
    compare("k.cu", CUDA_CXX);
}

#[test]
fn the_kernel_language_has_nvccs_single_precision_instructions_under_each_option() {
    compare("k.cdp", KERNEL_LANGUAGE);
}

/// The options change what they should, and nothing when they are nvcc's defaults: the tests
/// above would pass for an option cdpc ignored if nvcc ignored it too.
#[test]
fn the_oracle_differs_between_options_and_defaults_change_nothing() {
    let Some(default) = nvcc_ptx_with(CUDA_CXX, &[]) else { return };
    let Some(fast) = nvcc_ptx_with(CUDA_CXX, &["--use_fast_math"]) else { return };
    assert_eq!(f32_instructions(&fast, |op| op == "sin.approx.ftz.f32").len(), 2, "sinf and sincosf's sine");
    assert_eq!(f32_instructions(&default, |op| op.starts_with("sin.approx")).len(), 0);
    let plain = ours("k.cu", CUDA_CXX, &[]);
    let explicit = ours("k.cu", CUDA_CXX, &["-ftz=false", "-prec-div=true", "-prec-sqrt=true"]);
    assert_eq!(explicit, plain);
}
