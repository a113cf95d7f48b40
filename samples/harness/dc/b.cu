// The other file: the device function a.cu calls, a `static` kernel of the same name as a.cu's,
// a kernel template that its host code instantiates.
__device__ int scale(int x) { return 3 * x; }
static __global__ void step(int *p) { p[threadIdx.x] = -scale(p[threadIdx.x]); }
template <typename T> __global__ void fill(T *p, T v) { p[threadIdx.x] = v + threadIdx.x; }
void run_b(int *d) { fill<<<1, 32>>>(d, 4); step<<<1, 32>>>(d); }
