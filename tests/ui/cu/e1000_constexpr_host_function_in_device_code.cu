// A `constexpr` function without `__device__` called from device code: nvcc refuses it without
// `--expt-relaxed-constexpr` (Clang made it `__host__ __device__` and compiled it); from a
// `__host__ __device__` function, nvcc's warning. So does a lambda annotated `__device__`
// without `--extended-lambda`.
#include <algorithm>

constexpr int twice(int x) { return 2 * x; }

__host__ __device__ int both(int x) { return twice(x); }

__global__ void scale(int *v)
{
    v[threadIdx.x] = std::max(twice(v[threadIdx.x]), both(1));
}

void launch(int *v)
{
    auto f = [] __device__ (int x) { return x; };
    (void)f;
    scale<<<1, 32>>>(v);
}
