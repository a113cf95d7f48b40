//! `#pragma unroll` without a count, as nvcc unrolls it. Clang writes it as
//! `llvm.loop.unroll.enable`; LLVM then unrolls a loop of a known trip count completely when
//! the unrolled loop's size stays under `-pragma-unroll-threshold` (16 * 1024 of its cost
//! units), else by the largest divisor of the trip count that fits. nvcc's optimiser follows
//! the same rule with a budget and costs of its own (`docs/CUDA-CXX.md`, "`#pragma unroll`
//! without a count"): for plain arithmetic the two agree (nvcc allows somewhat more), but nvcc
//! weighs a tensor-core operation (`wmma::load_matrix_sync`, `wmma::mma_sync`) by the values its
//! fragments hold where LLVM counts it as about one instruction, and cdpc gives loops of such
//! operations nvcc's count before LLVM's unroller sees them (`front/cuda/shim.cpp`,
//! `TensorCoreUnrollCounts`). The expected counts are nvcc 13.5's, measured with `nvcc -arch=sm_90 -rdc=true
//! -ptx` on this source; where nvcc is present the test compares with it live too.
//! `#pragma unroll N` and `#pragma unroll 1` are unrolled as written by both.

use crate::build_common::{cdpc_ptx_with, nvcc_ptx};
use std::collections::BTreeMap;

const SOURCE: &str = r#"#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// WIDE multiply-adds a trip, a load each.
template <int TRIPS, int WIDE>
__device__ void multiply_add(float *out, const float *p, float b)
{
    float a[WIDE];
#pragma unroll
    for (int j = 0; j < WIDE; j++) a[j] = out[j * 32 + threadIdx.x];
#pragma unroll
    for (int i = 0; i < TRIPS; i++)
#pragma unroll
        for (int j = 0; j < WIDE; j++) a[j] = fmaf(a[j], b, p[(i * WIDE + j) * 32 + threadIdx.x]);
#pragma unroll
    for (int j = 0; j < WIDE; j++) out[j * 32 + threadIdx.x] = a[j];
}

extern "C" __global__ void wide64(float *out, const float *p, float b) { multiply_add<64, 8>(out, p, b); }

// A register tile of 8 x 8 sums over 64 steps (a GEMM's inner loops).
extern "C" __global__ void tile(float *out, const float *A, const float *B)
{
    float acc[8][8] = {};
#pragma unroll
    for (int k = 0; k < 64; k++) {
        float a[8], b[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            a[i] = A[(k * 8 + i) * 32 + threadIdx.x];
            b[i] = B[(k * 8 + i) * 32 + threadIdx.x];
        }
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) out[(i * 8 + j) * 32 + threadIdx.x] = acc[i][j];
}

// `#pragma unroll 4` and `#pragma unroll 1` as written, whatever the size.
extern "C" __global__ void counted(float *out, const float *p, float b, int n)
{
    float a = out[threadIdx.x];
#pragma unroll 4
    for (int i = 0; i < 1024; i++) a = fmaf(a, b, p[i * 32 + threadIdx.x]);
#pragma unroll 1
    for (int i = 0; i < 64; i++) a = fmaf(a, a, p[i * 32 + threadIdx.x]);
    out[threadIdx.x] = a;
}

// Tensor-core steps: a fragment of A, eight of B and eight products a trip.
template <int TRIPS>
__device__ void products(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
#pragma unroll
    for (int i = 0; i < TRIPS; i++) {
        wmma::load_matrix_sync(a, A + i * 256, 16);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            wmma::load_matrix_sync(b, B + (i * 8 + j) * 256, 16);
            wmma::mma_sync(c, a, b, c);
        }
    }
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}

extern "C" __global__ void products64(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C) { products<64>(A, B, C); }
extern "C" __global__ void products256(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C) { products<256>(A, B, C); }
"#;

/// For each kernel of a PTX text: how many `fma.rn.f32`, `wmma.mma` and branches it has.
fn counts(ptx: &str) -> BTreeMap<String, (usize, usize, usize)> {
    let mut all = BTreeMap::new();
    let mut kernel = None;
    for line in ptx.lines() {
        if let Some(rest) = line.split(".entry ").nth(1) {
            kernel = Some(rest.trim_end_matches('(').to_string());
            all.insert(kernel.clone().unwrap(), (0, 0, 0));
            continue;
        }
        let mut words = line.split_whitespace();
        let Some(mut op) = words.next() else { continue };
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        if let Some(c) = kernel.as_ref().and_then(|k| all.get_mut(k)) {
            c.0 += op.starts_with("fma.rn.f32") as usize;
            c.1 += op.starts_with("wmma.mma") as usize;
            c.2 += (op == "bra" || op.starts_with("bra.")) as usize;
        }
    }
    all
}

/// (kernel, multiply-adds, tensor-core products) as nvcc 13.5 writes them for [`SOURCE`].
const NVCC: [(&str, usize, usize); 5] = [
    // 64 trips of 8 multiply-adds: unrolled completely.
    ("wide64", 512, 0),
    // An 8 x 8 register tile over 64 steps: every loop unrolled completely.
    ("tile", 4096, 0),
    // `#pragma unroll 4` over 1024 trips and `#pragma unroll 1`: 4 + 1, both loops kept.
    ("counted", 5, 0),
    // 64 trips of 8 tensor-core products: unrolled completely.
    ("products64", 0, 512),
    // 256 trips of 8 products: nvcc unrolls by 128 (a loop is kept).
    ("products256", 0, 1024),
];

#[test]
fn pragma_unroll_unrolls_as_nvcc_does() {
    let ours = counts(&cdpc_ptx_with("unroll.cu", SOURCE, &["-arch=sm_90"]));
    let theirs = nvcc_ptx(SOURCE).map(|ptx| counts(&ptx));
    for (kernel, fma, mma) in NVCC {
        if let Some(theirs) = &theirs {
            let (f, m, _) = theirs[kernel];
            assert_eq!((f, m), (fma, mma), "nvcc's {kernel} no longer unrolls as measured");
        }
        let (f, m, branches) = ours[kernel];
        assert_eq!((f, m), (fma, mma), "{kernel}");
        if kernel == "counted" {
            assert!(branches >= 2, "both counted loops stay loops: {branches} branches");
        }
        if kernel == "products256" {
            // LLVM alone counts a tensor-core operation as about a sixth of nvcc's cost and
            // unrolled the 256 trips completely (2048 products); with nvcc's costs
            // (shim.cpp, `TensorCoreUnrollCounts`) the loop stays, unrolled by 128.
            assert!(branches >= 1, "{kernel} stays a loop: {branches} branches");
        }
    }
}
