// CUDA C++ that cdpc compiled to PTX but could not link or run at 503fc9f, on the GPU:
// CUB's device-wide reduction called from a kernel (CUB launches its kernels from the device),
// the device runtime's typed cudaMalloc, virtual functions on objects made with `new` and
// deleted through a base pointer (no <new> included), and Thrust's device-policy sort in a
// kernel followed by a launch that checks it.
#include <cstdio>
#include <cub/cub.cuh>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>

struct Shape {
    __device__ virtual float area() const = 0;
    __device__ virtual ~Shape() {}
};
struct Square : Shape {
    float side;
    __device__ explicit Square(float s) : side(s) {}
    __device__ float area() const override { return side * side; }
};
struct Circle : Shape {
    float r;
    __device__ explicit Circle(float radius) : r(radius) {}
    __device__ float area() const override { return 3.0f * r * r; }
};

__global__ void shapes(float *out) {
    Shape *s = threadIdx.x % 2 ? static_cast<Shape *>(new Square(threadIdx.x)) : new Circle(threadIdx.x);
    out[threadIdx.x] = s ? s->area() : -1.0f;
    delete s;
}

__global__ void fill(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = (i * 7919) % 1000;
}

// Device-side CUB: query the temporary size, allocate it with the typed cudaMalloc, reduce.
__global__ void reduce_on_device(int n, int *sum, int *status) {
    int *data = nullptr;
    cudaError_t e = cudaMalloc(&data, n * sizeof(int));
    if (e != cudaSuccess) { status[0] = 100 + e; return; }
    fill<<<(n + 255) / 256, 256>>>(data, n);
    size_t bytes = 0;
    e = cub::DeviceReduce::Sum(nullptr, bytes, data, sum, n);
    void *temp = nullptr;
    if (e == cudaSuccess) e = cudaMalloc(&temp, bytes);
    if (e == cudaSuccess) e = cub::DeviceReduce::Sum(temp, bytes, data, sum, n);
    status[0] = e;
    shapes<<<1, 8>>>(reinterpret_cast<float *>(status + 8));
}

__global__ void check(const int *keys, int n, int *unsorted) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n && keys[i] > keys[i + 1]) atomicAdd(unsorted, 1);
}

__global__ void sort_on_device(int *keys, int n, int *unsorted) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        thrust::sort(thrust::device, keys, keys + n);
        check<<<(n + 127) / 128, 128>>>(keys, n, unsorted);
    }
}

int main() {
    const int n = 100000;
    int *sum, *status, *keys, *unsorted;
    cudaMallocManaged(&sum, sizeof(int));
    cudaMallocManaged(&status, 16 * sizeof(int));
    cudaMallocManaged(&keys, 4096 * sizeof(int));
    cudaMallocManaged(&unsorted, sizeof(int));
    cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 20);
    *sum = -1;
    for (int i = 0; i < 16; i++) status[i] = 0;
    for (int i = 0; i < 4096; i++) keys[i] = (i * 2654435761u) % 10007;
    *unsorted = 0;
    reduce_on_device<<<1, 1>>>(n, sum, status);
    sort_on_device<<<1, 32>>>(keys, 4096, unsorted);
    cudaError_t e = cudaDeviceSynchronize();
    printf("status %s device status %d\n", cudaGetErrorName(e), status[0]);
    long long expect = 0;
    for (int i = 0; i < n; i++) expect += (i * 7919) % 1000;
    printf("sum %d (host %lld)\n", *sum, expect);
    const float *areas = reinterpret_cast<const float *>(status + 8);
    for (int i = 0; i < 8; i++) printf("%g%c", areas[i], i + 1 < 8 ? ' ' : '\n');
    printf("unsorted %d first %d %d %d last %d\n", *unsorted, keys[0], keys[1], keys[2], keys[4095]);
    return e == cudaSuccess ? 0 : 1;
}
