; A data layout that aligns i64 to 4 bytes: the front end's structs would not be NVPTX's.
target datalayout = "e-i64:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %p) {
  store i64 1, ptr %p, align 8
  ret void
}
