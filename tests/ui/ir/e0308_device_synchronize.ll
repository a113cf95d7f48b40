; `cudaDeviceSynchronize` called from device code: CUDA 12 removed it from the device runtime
; (libcudadevrt has no such symbol, ptxas refuses it for sm_90). The kernel language's E0308.
target triple = "nvptx64-nvidia-cuda"

declare i32 @cudaDeviceSynchronize()

define ptx_kernel void @parent(ptr %status) {
  %st = call i32 @cudaDeviceSynchronize()
  store i32 %st, ptr %status, align 4
  ret void
}
