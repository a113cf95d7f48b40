/* cdpc's cuda_runtime.h (also cuda.h, cuda_runtime_api.h, device_launch_parameters.h, ...).
 * cdpc knows the device runtime API, dim3, threadIdx and friends as built-ins, so this header
 * declares nothing; it exists so that the #include of real programs succeeds. */
#ifndef __CDPC_CUDA_RUNTIME_H__
#define __CDPC_CUDA_RUNTIME_H__
#define CUDART_VERSION 13050
#define __CUDART_API_VERSION 13050
#endif
