// The shape of a standalone kernel benchmark (one .cu file, its own main, no device-side
// launch): three kernels timed with CUDA events, built by nvcc and by cdpc with and without
// -rdc (bench/programs/run.sh). Prints one line per kernel: `name milliseconds checksum`.
#include <cstdio>
#include <cstdlib>
#include <vector>

#define TILE 32

__global__ void matmul(const float *a, const float *b, float *c, int n) {
    __shared__ float as[TILE][TILE], bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        as[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = sum;
}

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__global__ void reduce(const float *x, float *out, int n) {
    __shared__ float partial[32];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
        v = warp_sum(v);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}

__global__ void stencil(const float *in, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
    float s = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) s += in[(y + dy) * w + x + dx] * (dx == 0 && dy == 0 ? 0.5f : 0.0625f);
    out[y * w + x] = s;
}

static double checksum(const float *d, size_t n) {
    std::vector<float> h(n);
    cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += h[i] * (1.0 + (i % 7));
    return s;
}

template <class Launch>
static float timed(Launch launch, int reps) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    launch();
    cudaEventRecord(start);
    for (int r = 0; r < reps; ++r) launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    return ms / reps;
}

int main() {
    const int n = 1024, w = 4096, h = 4096, count = 1 << 24;
    float *a, *b, *c, *x, *out, *img, *res;
    cudaMalloc(&a, n * n * sizeof(float));
    cudaMalloc(&b, n * n * sizeof(float));
    cudaMalloc(&c, n * n * sizeof(float));
    cudaMalloc(&x, count * sizeof(float));
    cudaMalloc(&out, sizeof(float));
    cudaMalloc(&img, (size_t)w * h * sizeof(float));
    cudaMalloc(&res, (size_t)w * h * sizeof(float));
    std::vector<float> init((size_t)w * h);
    for (size_t i = 0; i < init.size(); ++i) init[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    cudaMemcpy(a, init.data(), n * n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(b, init.data() + 7, n * n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(x, init.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(img, init.data(), (size_t)w * h * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(res, 0, (size_t)w * h * sizeof(float));
    float t = timed([&] { matmul<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(a, b, c, n); }, 20);
    printf("matmul %.4f %.6e\n", t, checksum(c, n * n));
    t = timed([&] { cudaMemsetAsync(out, 0, sizeof(float)); reduce<<<1024, 256>>>(x, out, count); }, 50);
    float sum;
    cudaMemcpy(&sum, out, sizeof sum, cudaMemcpyDeviceToHost);
    printf("reduce %.4f %.3e\n", t, sum);
    t = timed([&] { stencil<<<dim3(w / 32, h / 8), dim3(32, 8)>>>(img, res, w, h); }, 50);
    printf("stencil %.4f %.6e\n", t, checksum(res, (size_t)w * h));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
    return 0;
}
