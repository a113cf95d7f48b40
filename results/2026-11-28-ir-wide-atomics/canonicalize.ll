; llvm.canonicalize of bfloat and of vectors of half and bfloat, which NVPTX cannot select:
; out[i] = canonicalize(in[i]) over every 16-bit pattern, as scalars (bf16) and pairs (v2f16,
; v2bf16).
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define internal i64 @index() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %bn = mul i32 %b, %n
  %i32 = add i32 %bn, %t
  %i = zext i32 %i32 to i64
  ret i64 %i
}

define ptx_kernel void @canon_bf16(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %i = call i64 @index()
  %p = getelementptr bfloat, ptr addrspace(1) %in, i64 %i
  %x = load bfloat, ptr addrspace(1) %p
  %c = call bfloat @llvm.canonicalize.bf16(bfloat %x)
  %q = getelementptr bfloat, ptr addrspace(1) %out, i64 %i
  store bfloat %c, ptr addrspace(1) %q
  ret void
}

define ptx_kernel void @canon_v2f16(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %i = call i64 @index()
  %p = getelementptr <2 x half>, ptr addrspace(1) %in, i64 %i
  %x = load <2 x half>, ptr addrspace(1) %p
  %c = call <2 x half> @llvm.canonicalize.v2f16(<2 x half> %x)
  %q = getelementptr <2 x half>, ptr addrspace(1) %out, i64 %i
  store <2 x half> %c, ptr addrspace(1) %q
  ret void
}

define ptx_kernel void @canon_v2bf16(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %i = call i64 @index()
  %p = getelementptr <2 x bfloat>, ptr addrspace(1) %in, i64 %i
  %x = load <2 x bfloat>, ptr addrspace(1) %p
  %c = call <2 x bfloat> @llvm.canonicalize.v2bf16(<2 x bfloat> %x)
  %q = getelementptr <2 x bfloat>, ptr addrspace(1) %out, i64 %i
  store <2 x bfloat> %c, ptr addrspace(1) %q
  ret void
}

declare bfloat @llvm.canonicalize.bf16(bfloat)
declare <2 x half> @llvm.canonicalize.v2f16(<2 x half>)
declare <2 x bfloat> @llvm.canonicalize.v2bf16(<2 x bfloat>)
