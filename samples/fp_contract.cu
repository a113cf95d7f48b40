// fp_contract.cu -- floating-point contraction across inlined operators, bit for bit.
//
// Demonstrates: a parent kernel launches a child grid that iterates z = z * z + c with a
// `complex` struct whose operator* and operator+ are inline __host__ __device__ functions taking
// `const complex &` (the style of NVIDIA's dynamic-parallelism Mandelbrot post), and writes the
// raw floats it ends with. Which multiplies the compiler fuses into adds (FFMA, rounded once)
// decides the last bits of every value, and the escape test decides how many steps run: nvcc
// fuses a product only when every use of it is an add or subtract of its block
// (docs/FLOATING-POINT.md); `re * re` and `im * im` here are also used by the loop's next
// step, so nvcc keeps them as multiplies, where LLVM's own contraction fused them.
//
// Seed: docs/FLOATING-POINT.md; the arithmetic is the blog post's pixel_dwell.
//
// Host launch: fp_parent<<<1, 1>>>(out, 64, 64) with out: float[3 * 64 * 64], zeroed.
// Expected result: for pixel p = y * 64 + x of the view [-1.5, 0.5] x [-1, 1]:
//   out[3p] = z.re, out[3p + 1] = z.im after the last step, out[3p + 2] = the step count;
//   launch_errors == 0. The floats are not known without a GPU: the differential run compares
//   cdpc's bytes with nvcc's (`deterministic = true`), which is the point of the sample.

#define MAX_DWELL 256

__device__ unsigned int launch_errors = 0;

struct complex {
    __host__ __device__ complex(float re, float im = 0) { this->re = re; this->im = im; }
    float re, im;
};

inline __host__ __device__ complex operator+(const complex &a, const complex &b) {
    return complex(a.re + b.re, a.im + b.im);
}
inline __host__ __device__ complex operator-(const complex &a, const complex &b) {
    return complex(a.re - b.re, a.im - b.im);
}
inline __host__ __device__ complex operator*(const complex &a, const complex &b) {
    return complex(a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im);
}
inline __host__ __device__ float abs2(const complex &a) { return a.re * a.re + a.im * a.im; }

extern "C" __global__ void fp_render(float *out, int w, int h, complex cmin, complex cmax)
{
    int x = threadIdx.x + blockDim.x * blockIdx.x;
    int y = threadIdx.y + blockDim.y * blockIdx.y;
    if (x >= w || y >= h)
        return;
    complex dc = cmax - cmin;
    float fx = (float)x / w, fy = (float)y / h;
    complex c = cmin + complex(fx * dc.re, fy * dc.im);
    complex z = c;
    int dwell = 0;
    while (dwell < MAX_DWELL && abs2(z) < 2 * 2) {
        z = z * z + c;
        dwell++;
    }
    int p = y * w + x;
    out[3 * p] = z.re;
    out[3 * p + 1] = z.im;
    out[3 * p + 2] = (float)dwell;
}

extern "C" __global__ void fp_parent(float *out, int w, int h)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        dim3 block(16, 16);
        dim3 grid((w + 15) / 16, (h + 15) / 16);
        fp_render<<<grid, block>>>(out, w, h, complex(-1.5f, -1.0f), complex(0.5f, 1.0f));
        if (cudaGetLastError() != cudaSuccess)
            atomicAdd(&launch_errors, 1u);
    }
}
