//! `-fmad` against nvcc: by default a float multiply feeding an add becomes one `fma.rn` where
//! nvcc contracts it, and only there, so that results are the same bits (KLAP's BT compares its
//! kernels' float2 results with `!=` against a kernel nvcc compiled: without contraction every
//! point differed in its last bits on the H100; a Mandelbrot image differed in 0.2% of its
//! pixels while cdpc fused more than nvcc). `-fmad=false` rounds each operation, in both
//! compilers. For each function, the fused multiply-adds, multiplies and adds of the SASS that
//! ptxas makes must be nvcc's. The shapes are those of docs/FLOATING-POINT.md: a product used
//! only by adds and subtracts of its block is fused into each (across variables, compound
//! assignment, inlined functions, `const &` parameters, struct temporaries and members); one
//! that is also stored, compared, multiplied or used in another block is not.

use crate::build_common::{cdpc, nvcc, run, stderr};
use std::collections::BTreeMap;

const SOURCE: &str = r#"
struct P { float x, y; };
__device__ __noinline__ P lerp3(P a, P b, P c, float u) {
    float v = 1.0f - u;
    P r;
    r.x = v * v * a.x + 2.0f * v * u * b.x + u * u * c.x;
    r.y = v * v * a.y + 2.0f * v * u * b.y + u * u * c.y;
    return r;
}
__global__ void bezier(P *out, const P *cp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lerp3(cp[0], cp[1], cp[2], (float)i / (float)(n - 1));
}
__global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void dot3(double *out, const double *a, const double *b) {
    double s = a[0] * b[0];
    s += a[1] * b[1];
    s -= a[2] * b[2];
    out[0] = s;
}
__global__ void shared_product(float *out, const float *a, float b, float c) {
    float p = a[0] * b;
    out[0] = p + c;
    out[1] = p;
}
struct complex {
    float re, im;
    __host__ __device__ complex(float a, float b) : re(a), im(b) {}
};
__host__ __device__ inline complex operator*(const complex &a, const complex &b) {
    return complex(a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im);
}
__host__ __device__ inline complex operator+(const complex &a, const complex &b) {
    return complex(a.re + b.re, a.im + b.im);
}
__host__ __device__ inline float abs2(const complex &a) { return a.re * a.re + a.im * a.im; }
__device__ inline float mul_by_value(float a, float b) { return a * b; }
__device__ inline float mul_by_ref(const float &a, const float &b) { return a * b; }
__device__ inline float add_by_value(float a, float b) { return a + b; }
struct Prod { float p; };
__device__ inline Prod make_prod(float a, float b) { Prod s; s.p = a * b; return s; }
__global__ void one_expression(float *o, const float *x) { o[0] = x[0] * x[1] + x[2]; }
__global__ void next_statement(float *o, const float *x) { float p = x[0] * x[1]; o[0] = p + x[2]; }
__global__ void compound(float *o, const float *x) { float s = x[2]; s += x[0] * x[1]; o[0] = s; }
__global__ void inline_value(float *o, const float *x) { o[0] = mul_by_value(x[0], x[1]) + x[2]; }
__global__ void inline_const_ref(float *o, const float *x) { o[0] = mul_by_ref(x[0], x[1]) + x[2]; }
__global__ void inline_add(float *o, const float *x) { o[0] = add_by_value(x[0] * x[1], x[2]); }
__global__ void struct_member(float *o, const float *x) { o[0] = make_prod(x[0], x[1]).p + x[2]; }
__global__ void minus_c(float *o, const float *x) { o[0] = x[0] * x[1] - x[2]; }
__global__ void c_minus(float *o, const float *x) { o[0] = x[2] - x[0] * x[1]; }
__global__ void negated(float *o, const float *x) { o[0] = -(x[0] * x[1]) + x[2]; }
__global__ void negated_minus(float *o, const float *x) { o[0] = -(x[0] * x[1]) - x[2]; }
__global__ void in_double(double *o, const double *x) { double p = x[0] * x[1]; o[0] = p + x[2]; }
__global__ void two_adds(float *o, const float *x) { float p = x[0] * x[1]; o[0] = p + x[2]; o[1] = p + x[3]; }
__global__ void add_and_sub(float *o, const float *x) { float p = x[0] * x[1]; o[0] = p + x[2]; o[1] = p - x[3]; }
__global__ void stored_too(float *o, const float *x) { float p = x[0] * x[1]; o[0] = p + x[2]; o[1] = p; }
__global__ void compared_too(float *o, const float *x) { float p = x[0] * x[1]; o[0] = p + x[2]; if (p > 1.0f) o[1] = 0.0f; }
__global__ void multiplied_too(float *o, const float *x) { float p = x[0] * x[1]; o[0] = p + x[2]; o[1] = p * x[3]; }
__global__ void other_block(float *o, const float *x) { float p = x[0] * x[1]; if (x[4] > 0.0f) o[0] = p + x[2]; else o[0] = p - x[3]; }
__global__ void squares(float *o, const float *x) { float a = x[0], b = x[1]; o[0] = a * a + b * b; o[1] = a * a - b * b; }
__global__ void two_products(float *o, const float *x) { o[0] = x[0] * x[1] + x[2] * x[3]; }
__global__ void complex_product(complex *o, const complex *x) { o[0] = x[0] * x[1]; }
__global__ void complex_square_plus(complex *o, const complex *x) { o[0] = x[0] * x[0] + x[1]; }
__global__ void mandelbrot(int *o, const complex *x, int n) {
    complex z = x[0], c = x[1];
    int i = 0;
    for (; i < n; i++) {
        if (abs2(z) >= 4.0f) break;
        z = z * z + c;
    }
    o[0] = i;
}
"#;

/// For each function of a cubin: how many fused multiply-adds, multiplies and adds its SASS has
/// (`cuobjdump -sass`): what runs, after ptxas, which also contracts the plain `mul`/`add` of
/// nvcc's PTX.
fn float_ops(cuobjdump: &std::path::Path, cubin: &std::path::Path) -> BTreeMap<String, BTreeMap<&'static str, usize>> {
    let out = std::process::Command::new(cuobjdump).arg("-sass").arg(cubin).output().expect("cuobjdump runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut functions: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let mut current = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            current = name.trim().to_string();
            functions.entry(current.clone()).or_default();
            continue;
        }
        // `/*0050*/  @!P0 FFMA R4, ...`: the opcode is the first word that is not a predicate.
        let code = line.split("*/").nth(1).unwrap_or("");
        let Some(op) = code.split_whitespace().find(|w| !w.starts_with('@')) else { continue };
        let kind = match op.split('.').next().unwrap_or("") {
            "FFMA" | "DFMA" => "fma",
            "FMUL" | "DMUL" => "mul",
            "FADD" | "DADD" => "add",
            _ => continue,
        };
        if let Some(f) = functions.get_mut(&current) {
            *f.entry(kind).or_default() += 1;
        }
    }
    // The division helper both compilers link in is the toolkit's, not the program's.
    functions.retain(|name, _| !name.starts_with("__cuda_"));
    functions
}

#[test]
fn fma_contraction_matches_nvcc_with_fmad_on_and_off() {
    let Some(nvcc) = nvcc() else { return };
    let cuobjdump = nvcc.with_file_name("cuobjdump");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("fmad.cu"), SOURCE).unwrap();
    for fmad in ["true", "false"] {
        let flag = format!("-fmad={fmad}");
        run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-cubin", &flag, "fmad.cu", "-o", "nvcc.cubin"]);
        let out = cdpc(dir.path(), &["fmad.cu", "--emit", "obj", &flag, "-o", "cdpc.o", "--overwrite"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let ours = float_ops(&cuobjdump, &dir.path().join("cdpc.o"));
        let theirs = float_ops(&cuobjdump, &dir.path().join("nvcc.cubin"));
        // The test is about something: the Bezier blend fuses exactly when -fmad is on. (An IEEE
        // division's expansion has fused multiply-adds either way.)
        let lerp_fused = ours.get("_Z5lerp31PS_S_f").and_then(|f| f.get("fma")).copied().unwrap_or(0);
        assert_eq!(lerp_fused > 0, fmad == "true", "-fmad={fmad}: {ours:?}");
        // The test is about something on nvcc's side too: a product with another use stays a
        // multiply (FMUL, FADD), a product used only by adds is fused into each.
        if fmad == "true" {
            let ops = |f: &str| theirs.get(f).cloned().unwrap_or_default();
            assert_eq!(ops("_Z10stored_tooPfPKf").get("fma"), None, "{theirs:?}");
            assert_eq!(ops("_Z8two_addsPfPKf").get("fma"), Some(&2), "{theirs:?}");
        }
        assert_eq!(ours, theirs, "-fmad={fmad}: cdpc (left) and nvcc (right)");
    }
}
