; A kernel whose name PTX cannot spell (a space and a hyphen): LLVM's NVPTX printer would stop
; the process on it.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @"my kernel-1"(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
