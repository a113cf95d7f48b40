; A kernel that calls an `llvm.` function LLVM 22 has no intrinsic for (a newer LLVM's):
; LLVM's verifier lets it pass, and NVPTX wrote it as an external function whose name ptxas
; could not parse ("Parsing error near '.nvvm'").
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.test.anytype.i16(i16)

define ptx_kernel void @k(ptr %p) {
  %v = call i32 @llvm.nvvm.test.anytype.i16(i16 7)
  store i32 %v, ptr %p, align 4
  ret void
}
