; A kernel with prologue data that names the kernel itself: PTX has no place for it, and LLVM
; 22's NVPTX printer recursed without end on it (found by the IR fuzz smoke test).
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %p) prologue ptr @k {
  store i32 1, ptr %p, align 4
  ret void
}
