#include <thrust/complex.h>
__global__ void child(thrust::complex<float> *out, thrust::complex<float> z) { out[threadIdx.x] = z * z; }
__global__ void parent(thrust::complex<float> *out) { child<<<1, 32>>>(out, thrust::complex<float>(1.0f, 2.0f)); }
