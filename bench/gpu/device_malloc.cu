// How long device-side cudaMalloc/cudaFree take in the situation of grid-granularity launch
// aggregation: a parent grid whose threads have allocated many small buffers on
// the device heap (as KLAP's BT does), after which one thread allocates one large table, or
// every block allocates one node. Times from %globaltimer (ns), printed by the kernel.
// Build: nvcc -arch=sm_90 -rdc=true -o device_malloc device_malloc.cu -lcudadevrt
#include <cstdio>
#include <cstdlib>

__device__ unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ void *small[1 << 20];

// Every thread: one small allocation (32..256 bytes), as the parent threads of BT do.
__global__ void fill(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cudaMalloc(&small[i], 32 + 8 * (i % 29));
}

__global__ void drain(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cudaFree(small[i]);
}

// One thread: one allocation of `bytes`, timed, then its free, timed.
__global__ void one_large(size_t bytes, int repeat) {
    for (int r = 0; r < repeat; r++) {
        void *p = 0;
        unsigned long long t0 = now();
        cudaError_t e = cudaMalloc(&p, bytes);
        unsigned long long t1 = now();
        cudaFree(p);
        unsigned long long t2 = now();
        printf("large %llu bytes: malloc %s in %.3f ms, free %.3f ms\n", (unsigned long long)bytes, e == cudaSuccess ? "ok" : "FAILED", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    }
}

// Thread 0 of every block: one node of `bytes`; then block 0's thread 0 frees them one by one.
__device__ void *nodes[1 << 16];
__device__ unsigned long long node_ns;
__global__ void per_block(size_t bytes) {
    if (threadIdx.x == 0) {
        unsigned long long t0 = now();
        cudaMalloc(&nodes[blockIdx.x], bytes);
        atomicAdd(&node_ns, now() - t0);
    }
}
__global__ void free_nodes(int blocks) {
    unsigned long long t0 = now();
    for (int b = 0; b < blocks; b++) cudaFree(nodes[b]);
    printf("%d node frees by one thread: %.3f ms\n", blocks, (now() - t0) / 1e6);
}

static void check(const char *what) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        printf("%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

int main(int argc, char **argv) {
    size_t heap = argc > 1 ? strtoull(argv[1], 0, 0) : (1 << 24);
    cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap);
    int n = 25600, threads = 64, blocks = (n + threads - 1) / threads;
    printf("heap %llu bytes\n", (unsigned long long)heap);
    one_large<<<1, 1>>>(48 * n, 2);
    check("one_large");
    fill<<<blocks, threads>>>(n);
    check("fill");
    printf("after %d small allocations:\n", n);
    one_large<<<1, 1>>>(48 * n, 3);
    check("one_large after fill");
    unsigned long long zero = 0, ns = 0;
    cudaMemcpyToSymbol(node_ns, &zero, sizeof zero);
    per_block<<<blocks, threads>>>(64 * 48 + 32);
    check("per_block");
    cudaMemcpyFromSymbol(&ns, node_ns, sizeof ns);
    printf("%d node mallocs, one per block: %.3f ms summed over blocks\n", blocks, ns / 1e6);
    free_nodes<<<1, 1>>>(blocks);
    check("free_nodes");
    drain<<<blocks, threads>>>(n);
    check("drain");
    return 0;
}
