//! `-flaunch-threshold` on the kernel language (`.cdp`) against the same source through Clang
//! (`.cu`): a child whose thread runs a constant-trip loop (`for (k = 0; k < 3; k++)`, the shape
//! of KLAP's BT child) is run in the launching thread by both front ends. The `.cdp` path once
//! gave it `R0502` ("not a counted loop"): its IR reached the pass with the counter in memory.

use cdpc::driver::{self, CompileOptions, Emit, Language};

const SOURCE: &str = r#"
struct Line { int cp[3]; int count; int *dst; };

extern "C" __global__ void point(int l, struct Line *table, int salt)
{
    int j = threadIdx.x + blockDim.x * blockIdx.x;
    if (j < table[l].count) {
        int w[3] = {(table[l].count - 1 - j) * (table[l].count - 1 - j), 2 * j, j * j};
        int sum = salt;
        for (int k = 0; k < 3; k++)
            sum += w[k] * table[l].cp[k];
        table[l].dst[j] = sum;
    }
}

extern "C" __global__ void parent(struct Line *table, int n)
{
    int l = threadIdx.x + blockDim.x * blockIdx.x;
    if (l < n)
        point<<<(table[l].count + 31) / 32, 32>>>(l, table, 3 * l + 1);
}
"#;

/// The remarks' codes and the optimised IR of `SOURCE` in `language` at `-O{opt}`.
fn thresholded(language: Language, opt: u8) -> (Vec<&'static str>, String) {
    let options = CompileOptions { emit: Emit::LlvmIr, language: Some(language), launch_threshold: 128, pass_remarks: true, opt_level: opt, ..CompileOptions::default() };
    let compiled = driver::compile(SOURCE, &options).unwrap_or_else(|e| panic!("{language:?} -O{opt}: {e}"));
    (compiled.warnings.iter().map(|d| d.code.as_str()).collect(), String::from_utf8(compiled.output).unwrap())
}

#[test]
fn a_child_with_a_constant_trip_loop_is_thresholded_from_the_kernel_language() {
    let (remarks, ir) = thresholded(Language::Cdp, 3);
    assert_eq!(remarks, Vec::<&str>::new(), "no R0502");
    // The serial copy, inlined into the parent's loop over the child's threads (its exit block
    // keeps its name), and the launch still there for larger grids.
    assert!(ir.contains("point__serial.exit"), "{ir}");
    let parent = &ir[ir.find("define ptx_kernel void @parent(").expect("the parent")..];
    assert_eq!(parent.matches("call i32 @__cudaCDP2LaunchDeviceV2(").count(), 1, "{parent}");
    // At -O0 neither front end's IR has the counter in a register: both leave the launch alone.
    let (remarks, ir) = thresholded(Language::Cdp, 0);
    assert_eq!(remarks, ["R0502"]);
    assert!(!ir.contains("__serial"), "{ir}");
}

/// The same source through Clang gives the same decisions (the toolkit's headers needed).
#[test]
fn clang_decides_the_same_for_the_same_source() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    for opt in [3, 0] {
        assert_eq!(thresholded(Language::Cuda, opt).0, thresholded(Language::Cdp, opt).0, "-O{opt}");
    }
}
