// math_functions.cu -- CUDA's math functions and Clang's math builtins, bit for bit.
//
// Demonstrates: a parent kernel launches a child grid that evaluates libdevice's functions
// on 4,096 inputs, a quarter of each kind (uniform in [-10, 10] and [-1, 1], any bit pattern: NaNs,
// infinities and subnormals among them, and values from 1e-8 to 1e8) and writes the raw
// results. Each function is called twice: through CUDA's math API (`pow`, `sinf`: calls of
// libdevice in both compilers) and through the builtins (`__builtin_pow`, `__builtin_sinf`),
// which Clang writes as LLVM's math intrinsics (`llvm.pow.f64`) that NVPTX cannot select and
// cdpc turns into calls of the same libdevice functions (pipeline/math.rs). The last bits
// depend on which of libdevice's multiplies the compiler fuses into adds: nvcc fuses
// libdevice's by its `-fmad=true` rule as the program's (back/contract.rs); `pow(double)` gave
// other last bits for 11 of 1,048,576 inputs before cdpc did the same.
//
// Seed: docs/FLOATING-POINT.md.
//
// Host launch: math_parent<<<1, 1>>>(d, f, 4096) with d: double[4096 * 20], f: float[4096 * 20].
// Expected result: d[20 * i + k] and f[20 * i + k] the k-th function of input i (the list
// in math_child); launch_errors == 0. The values are not known without a GPU: the
// differential run compares cdpc's bytes with nvcc's (`deterministic = true`).

#define FUNCTIONS 20

__device__ unsigned int launch_errors = 0;

// Input i of the four kinds, from a hash of i.
__device__ double input(unsigned int i)
{
    unsigned long long h = (i + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    double unit = (double)(h >> 11) * (1.0 / 9007199254740992.0);
    switch (i % 4) {
    case 0:
        return unit * 20.0 - 10.0;
    case 1:
        return unit * 2.0 - 1.0;
    case 2:
        return __longlong_as_double(h);
    default: {
        double scale = 1e-8;
        for (int k = 0; k < (int)(h & 15); k++)
            scale *= 10.0;
        return (unit - 0.5) * scale;
    }
    }
}

extern "C" __global__ void math_child(double *d, float *f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double x = input(i), y = input(i + n);
    float xf = (float)x, yf = (float)y;
    double *o = d + FUNCTIONS * i;
    o[0] = pow(x, y);
    o[1] = sin(x);
    o[2] = cos(x);
    o[3] = tan(x);
    o[4] = exp(x);
    o[5] = log(x);
    o[6] = atan2(x, y);
    o[7] = tanh(x);
    o[8] = cbrt(x);
    o[9] = lgamma(x);
    o[10] = __builtin_pow(x, y);
    o[11] = __builtin_sin(x);
    o[12] = __builtin_cos(x);
    o[13] = __builtin_tan(x);
    o[14] = __builtin_exp(x);
    o[15] = __builtin_log(x);
    o[16] = __builtin_atan2(x, y);
    o[17] = __builtin_exp2(x);
    o[18] = __builtin_log10(x);
    o[19] = __builtin_asin(x);
    float *p = f + FUNCTIONS * i;
    p[0] = powf(xf, yf);
    p[1] = sinf(xf);
    p[2] = cosf(xf);
    p[3] = tanf(xf);
    p[4] = expf(xf);
    p[5] = logf(xf);
    p[6] = atan2f(xf, yf);
    p[7] = tanhf(xf);
    p[8] = cbrtf(xf);
    p[9] = lgammaf(xf);
    p[10] = __builtin_powf(xf, yf);
    p[11] = __builtin_sinf(xf);
    p[12] = __builtin_cosf(xf);
    p[13] = __builtin_tanf(xf);
    p[14] = __builtin_expf(xf);
    p[15] = __builtin_logf(xf);
    p[16] = __builtin_atan2f(xf, yf);
    p[17] = __builtin_exp2f(xf);
    p[18] = __builtin_log10f(xf);
    p[19] = __builtin_asinf(xf);
}

extern "C" __global__ void math_parent(double *d, float *f, int n)
{
    math_child<<<(n + 255) / 256, 256>>>(d, f, n);
    if (cudaGetLastError() != cudaSuccess)
        atomicAdd(&launch_errors, 1u);
}
