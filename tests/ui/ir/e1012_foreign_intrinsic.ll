; A kernel that calls an x86 intrinsic: NVPTX cannot select it, and LLVM 22 stopped the
; process on it ("Cannot select: intrinsic %llvm.x86.rdtsc", status 134).
target triple = "nvptx64-nvidia-cuda"

declare i64 @llvm.x86.rdtsc()

define ptx_kernel void @k(ptr %p) {
  %t = call i64 @llvm.x86.rdtsc()
  store i64 %t, ptr %p, align 8
  ret void
}
