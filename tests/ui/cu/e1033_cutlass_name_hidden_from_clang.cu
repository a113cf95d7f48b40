// A name declared only under one of CUTLASS's SM100-and-later macros, which CUTLASS leaves
// undefined under Clang (`CUTLASS_CLANG_CUDA`) and nvcc defines, used outside that condition.
#if defined(CUTLASS_ARCH_MMA_SM120_SUPPORTED) || defined(CUTLASS_ARCH_MMA_SM121_SUPPORTED)
using ProblemShape = int;
#endif
__global__ void k(int *out) { *out = sizeof(ProblemShape); }
