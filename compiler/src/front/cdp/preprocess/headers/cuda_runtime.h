/* cdpc's cuda_runtime.h (also cuda.h, cuda_runtime_api.h, device_launch_parameters.h, ...).
 * cdpc knows the device runtime API, dim3, threadIdx and friends as built-ins, so this header
 * declares nothing; it exists so that the #include of real programs succeeds. */
#ifndef __CDPC_CUDA_RUNTIME_H__
#define __CDPC_CUDA_RUNTIME_H__
/* CUDA 13.5's cuda_runtime.h and cuda_runtime_api.h include builtin_types.h, whose
 * driver_types.h includes <limits.h>, and nvcc includes cuda_runtime.h in every .cu file:
 * programs use UINT_MAX and friends without including <limits.h> (KLAP's BFS does). */
#include <limits.h>
#define CUDART_VERSION 13050
#define __CUDART_API_VERSION 13050
#endif
