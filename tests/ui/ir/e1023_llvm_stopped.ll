; `frem` of `fp128`: NVPTX has no instruction nor library call for it, and LLVM 22's code
; generation stops on it ("unsupported library call operation"), which ended the process.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %p) {
  %a = load fp128, ptr %p, align 16
  %b = frem fp128 %a, %a
  store fp128 %b, ptr %p, align 16
  ret void
}
