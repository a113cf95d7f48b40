// nvcc's side of wide.ll and canonicalize.ll: the same operations in CUDA C++ (sm_90), the
// read-modify-writes as 128-bit atomicCAS loops, canonicalize as a multiplication by one
// (what NVPTX selects for half and float, and PTX's mul.rn.bf16 quiets NaNs to 0x7fff too).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef unsigned __int128 u128;

template <class F> __device__ u128 rmw(u128 *p, F f)
{
    u128 seen = *p;
    for (;;) {
        u128 old = atomicCAS(p, seen, f(seen));
        if (old == seen)
            return old;
        seen = old;
    }
}

extern "C" __global__ void wide(u128 *acc, const u128 *vals, u128 *slots, u128 *olds, u128 *olds2, int *ok)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    u128 v = vals[i];
    rmw(&acc[0], [=](u128 a) { return a + v; });
    rmw(&acc[1], [=](u128 a) { return a > v ? a : v; });
    rmw(&acc[2], [=](u128 a) { return a ^ v; });
    u128 old = atomicCAS(&slots[i], v, ~v);
    olds[i] = old;
    ok[i] = old == v;
    u128 l = atomicCAS(&slots[i], (u128)0, (u128)0);
    olds2[i] = atomicExch(&slots[i], l + 1);
    atomicExch(&slots[i], l + 2);
}

extern "C" __global__ void canon_bf16(const __nv_bfloat16 *in, __nv_bfloat16 *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __hmul_rn(in[i], __float2bfloat16(1.0f));
}

extern "C" __global__ void canon_v2f16(const __half2 *in, __half2 *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __hmul2_rn(in[i], __float2half2_rn(1.0f));
}

extern "C" __global__ void canon_v2bf16(const __nv_bfloat162 *in, __nv_bfloat162 *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __hmul2_rn(in[i], __float2bfloat162_rn(1.0f));
}
