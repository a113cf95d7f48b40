// flags: -Werror
// A `#pragma message` is a remark, as nvcc's (`remark #20200-D`): shown without asking, and
// the file compiles under `-Werror` too.
#pragma message ("child kernels launched into cudaStreamFireAndForget")
__global__ void child(int *p) { *p = 1; }
__global__ void parent(int *p) { child<<<1, 1>>>(p); }
