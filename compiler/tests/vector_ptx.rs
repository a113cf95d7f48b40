//! CUDA's vector types, `__ldg` and `__launch_bounds__` in PTX, against nvcc's PTX of the same
//! source (`nvcc -arch=sm_90 -rdc=true -ptx`): each kernel's `.param` declarations (vector
//! parameters are `.align 8 .b8 [8]` for `float2`, ...), its performance directives
//! (`.maxntid`, `.minnctapersm`, `.maxclusterrank`) and, for `__ldg`, the non-coherent load.
//! Skipped with a printed reason when nvcc cannot be found.

use crate::build_common::nvcc_ptx;
use cdpc::driver::{self, CompileOptions, Emit};

const SOURCE: &str = r#"
struct Line { char tag; float2 cp[3]; double2 weight; float3 normal; };

__global__ void __launch_bounds__(256, 2, 4) child(float2 a, float4 b, Line l, double2 d, int3 i, uchar4 u, short3 s) {}

__global__ __launch_bounds__(128) void ldg_float4(float4 *out, const float4 *in) { out[threadIdx.x] = __ldg(in + threadIdx.x); }

__global__ void ldg_int(int *out, const int *in) { out[0] = __ldg(in); }

__global__ void parent(Line *lines, float2 *out, int n) {
    float2 p = make_float2(1.0f, 2);
    p.x += lines[n].cp[1].y;
    lines[n].cp[2] = p;
    out[n] = p;
    child<<<1, 32>>>(p, make_float4(1, 2, 3, 4), lines[n], make_double2(1, 2), make_int3(1, 2, 3), make_uchar4(1, 2, 3, 4), make_short3(1, 2, 3));
}
"#;

/// Each `.entry`'s header: its parameter declarations and directives, whitespace normalized.
fn entries(ptx: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut inside = false;
    for line in ptx.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")) {
        if line.starts_with(".visible .entry") {
            out.push(vec![line]);
            inside = true;
        } else if inside && line == "{" {
            inside = false;
        } else if inside && (line.starts_with(".param") || line.starts_with(".max") || line.starts_with(".min")) {
            // LLVM marks pointer parameters `.ptr .align 1`, nvcc does not: the same parameter.
            out.last_mut().unwrap().push(line.trim_end_matches(',').replace(" .ptr .align 1", ""));
        }
    }
    out.sort();
    out
}

/// The lines of the function `name` (an `.entry`) that load through the non-coherent cache.
fn nc_loads(ptx: &str, name: &str) -> usize {
    let Some(start) = ptx.find(&format!(".entry {name}")).or_else(|| ptx.find(&format!("{name}("))) else { return 0 };
    let body = &ptx[start..];
    let end = body.find("\n}").unwrap_or(body.len());
    body[..end].lines().filter(|l| l.contains("ld.global.nc")).count()
}

#[test]
fn vector_types_ldg_and_launch_bounds_match_nvcc() {
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let compiled = driver::compile(SOURCE, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}"));
    let ours = String::from_utf8(compiled.output).unwrap();
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };

    assert_eq!(entries(&ours), entries(&theirs), "kernel headers: cdpc (left), nvcc (right)");
    for kernel in ["_Z10ldg_float4P6float4PKS_", "_Z7ldg_intPiPKi"] {
        assert!(nc_loads(&theirs, kernel) > 0, "nvcc's {kernel} has no ld.global.nc");
        assert!(nc_loads(&ours, kernel) > 0, "cdpc's {kernel} has no ld.global.nc:\n{ours}");
    }
}
