// A `__shared__` variable whose type's destructor does something (CCCL's barrier): nvcc leaves
// its construction and destruction out with a warning, which `#pragma nv_diag_suppress
// static_var_with_dynamic_init` silences; cdpc compiles it the same way, with W1030 where nvcc
// warns (the first kernel) and nothing where the pragma stands before it.
#include <cuda/barrier>
__global__ void warned(int *out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  bar.arrive_and_wait();
}
__global__ void silenced(int *out) {
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  bar.arrive_and_wait();
  out[threadIdx.x] = 1;
}
