; Text LLVM cannot parse: an instruction that does not exist.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %p) {
  stor i32 1, ptr %p, align 4
  ret void
}
