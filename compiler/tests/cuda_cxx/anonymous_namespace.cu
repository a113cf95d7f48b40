// Kernels and variables of anonymous namespaces (at file scope and inside a named namespace),
// `static` ones of a named namespace, template instances of an anonymous namespace's type,
// and kernels that only take such a type: nvcc names the namespace after the file's module
// id and keeps the last kind external, where Clang spells it `_GLOBAL__N_1` and makes it
// internal.
namespace {
struct Pair { int a, b; };
__device__ int hits[4];
__constant__ int scale[2];
__global__ void fill(int *out) { out[threadIdx.x] = threadIdx.x * scale[0] + scale[1]; }
template <typename T> __global__ void add(int *out, T p) { out[threadIdx.x] += p.a * p.b; }
namespace inner { __device__ int count; __global__ void bump() { atomicAdd(&count, 1); } }
}
namespace v2 { namespace { __global__ void tick(int *out) { out[0] += 1; } } }
namespace named {
static __device__ int total;
static __global__ void sum(const int *in) { atomicAdd(&total, in[threadIdx.x]); }
}
template <typename T> __global__ void apply(int *out, T p) { out[threadIdx.x] -= p.b; }
__global__ void takes_pair(int *out, Pair p) { out[threadIdx.x] -= p.a; atomicAdd(&hits[0], 1); }
__device__ Pair last;
__global__ void parent(int *out) {
    fill<<<1, 32>>>(out);
    add<<<1, 32>>>(out, Pair{2, 3});
    apply<<<1, 32>>>(out, Pair{1, 1});
    takes_pair<<<1, 32>>>(out, Pair{1, 0});
    inner::bump<<<1, 4>>>();
    v2::tick<<<1, 1>>>(out);
    named::sum<<<1, 32>>>(out);
    last = Pair{inner::count, hits[1]};
}
void host(int *out) {
    int s[2] = {3, 1};
    cudaMemcpyToSymbol(scale, s, sizeof s);
    cudaMemcpyToSymbol(last, s, sizeof s);
    int c = 0;
    cudaMemcpyToSymbol(inner::count, &c, sizeof c);
    cudaMemcpyToSymbol(named::total, &c, sizeof c);
    fill<<<1, 32>>>(out);
    takes_pair<<<1, 32>>>(out, Pair{5, 0});
    named::sum<<<1, 32>>>(out);
    cudaMemcpyFromSymbol(s, hits, sizeof s);
}
