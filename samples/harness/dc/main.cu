// nvcc's host program: it launches `parent` of a.cu itself and calls the files' host code.
#include <cstdio>
__global__ void parent(int *p);
void run_a(int *d); void run_b(int *d); int host_helper(int);
int main() {
    int *d; cudaMalloc(&d, 32 * sizeof(int)); cudaMemset(d, 0, 32 * sizeof(int));
    parent<<<1, 1>>>(d); run_b(d); run_a(d);
    cudaError_t status = cudaDeviceSynchronize();
    int h[32] = {0}; cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 32; i++)
        printf("%d%c", h[i], i + 1 < 32 ? ' ' : '\n');
    printf("%d %s\n", host_helper(21), cudaGetErrorName(status));
    return status == cudaSuccess ? 0 : 1;
}
