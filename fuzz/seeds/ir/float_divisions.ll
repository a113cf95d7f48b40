; Single-precision divisions and roots as Clang writes them, for back::precision's divisions
; pass (IEEE fdivs, a reciprocal of 1, of -1, of an approximate root, a double division).
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare float @llvm.nvvm.sqrt.approx.f(float)

define ptx_kernel void @k(ptr addrspace(1) %o, float %x, float %y, double %d) {
entry:
  %q = fdiv float %x, %y
  store float %q, ptr addrspace(1) %o, align 4
  %r = fdiv float 1.000000e+00, %y
  %p1 = getelementptr inbounds float, ptr addrspace(1) %o, i64 1
  store float %r, ptr addrspace(1) %p1, align 4
  %n = fdiv contract float -1.000000e+00, %y
  %p2 = getelementptr inbounds float, ptr addrspace(1) %o, i64 2
  store float %n, ptr addrspace(1) %p2, align 4
  %s = call float @llvm.nvvm.sqrt.approx.f(float %x)
  %rs = fdiv float 1.000000e+00, %s
  %p3 = getelementptr inbounds float, ptr addrspace(1) %o, i64 3
  store float %rs, ptr addrspace(1) %p3, align 4
  %dd = fdiv double %d, %d
  %p4 = getelementptr inbounds double, ptr addrspace(1) %o, i64 4
  store double %dd, ptr addrspace(1) %p4, align 8
  %v = fdiv <2 x float> <float 1.0, float 2.0>, <float 3.0, float 4.0>
  ret void
}
