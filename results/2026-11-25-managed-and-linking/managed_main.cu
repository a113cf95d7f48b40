// The main half: nvcc's host code names the managed variables the library defines.
#include <cstdio>
extern __managed__ int counter;
extern __managed__ int scores[4];
__global__ void bump(int k);
int main() {
    counter = 5;
    for (int i = 0; i < 4; i++) scores[i] = 10 * i;
    bump<<<1, 1>>>(3);
    cudaError_t status = cudaDeviceSynchronize();
    counter += 100;
    printf("status %s counter %d scores %d %d %d %d\n", cudaGetErrorName(status), counter, scores[0], scores[1], scores[2], scores[3]);
    return status == cudaSuccess ? 0 : 1;
}
