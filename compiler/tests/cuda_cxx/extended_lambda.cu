// A kernel template instantiated for lambdas: an extended `__device__` lambda of a host
// function (launched from host code) and a lambda of a parent kernel (launched from device
// code). nvcc names both instances after the enclosing function and keeps them weak and
// external; the `static` kernel gives nvcc's PTX its module id, so cdpc is compiled with it.
template <typename F> __global__ void apply(int *out, F f) { out[threadIdx.x] += f(threadIdx.x); }
static __global__ void clear(int *out) { out[threadIdx.x] = 0; }
__global__ void parent(int *out) {
    clear<<<1, 32>>>(out);
    apply<<<1, 32>>>(out, [] (int i) { return i + 1; });
}
void host(int *out, int k) {
    clear<<<1, 32>>>(out);
    apply<<<1, 32>>>(out, [=] __device__ (int i) { return i * k; });
}
