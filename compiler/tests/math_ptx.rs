//! libdevice's square roots correctly rounded, as nvcc's default build has them
//! (`-prec-sqrt=true`; issue 28). libdevice's `sqrtf`, `hypotf`, `normf`, `norm3df`, `norm4df`
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
