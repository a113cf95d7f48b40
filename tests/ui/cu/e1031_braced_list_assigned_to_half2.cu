// A braced list assigned to `__half2` or `__nv_bfloat162`: in device code cdpc takes the copy
// assignment, as nvcc's front end does (the kernel compiles); in host code nvcc's host compiler
// refuses it as ambiguous, and so does Clang, with the spelling both compilers take.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void clear(half2 *h, __nv_bfloat162 *b) {
  half2 x;
  x = {};
  h[0] = x;
  __nv_bfloat162 y;
  y = {};
  b[0] = y;
}
__nv_bfloat162 pair(__nv_bfloat16 v) {
  __nv_bfloat162 y;
  y = {v, v};
  return y;
}
