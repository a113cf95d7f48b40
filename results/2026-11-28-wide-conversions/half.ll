; Conversions between i128 and half and bfloat, as another front end writes them (Julia's
; Float16(::Int128)); nvcc's CUDA has no such conversion, so run.py checks them against
; Python's exactly rounded integers.
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @half_conv(ptr addrspace(1) %a, ptr addrspace(1) %h, ptr addrspace(1) %bf, ptr addrspace(1) %oh, ptr addrspace(1) %obf, ptr addrspace(1) %oi, i32 %n) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %w = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %bw = mul i32 %b, %w
  %i32 = add i32 %bw, %t
  %in = icmp slt i32 %i32, %n
  br i1 %in, label %body, label %done
body:
  %i = zext i32 %i32 to i64
  %i2 = shl i64 %i, 1
  %i2b = or i64 %i2, 1
  %ap = getelementptr i128, ptr addrspace(1) %a, i64 %i
  %x = load i128, ptr addrspace(1) %ap, align 16
  %sh = sitofp i128 %x to half
  %uh = uitofp i128 %x to half
  %sb = sitofp i128 %x to bfloat
  %ub = uitofp i128 %x to bfloat
  %oh0 = getelementptr half, ptr addrspace(1) %oh, i64 %i2
  store half %sh, ptr addrspace(1) %oh0
  %oh1 = getelementptr half, ptr addrspace(1) %oh, i64 %i2b
  store half %uh, ptr addrspace(1) %oh1
  %ob0 = getelementptr bfloat, ptr addrspace(1) %obf, i64 %i2
  store bfloat %sb, ptr addrspace(1) %ob0
  %ob1 = getelementptr bfloat, ptr addrspace(1) %obf, i64 %i2b
  store bfloat %ub, ptr addrspace(1) %ob1
  %hp = getelementptr half, ptr addrspace(1) %h, i64 %i
  %hv = load half, ptr addrspace(1) %hp
  %bp = getelementptr bfloat, ptr addrspace(1) %bf, i64 %i
  %bv = load bfloat, ptr addrspace(1) %bp
  %hi = fptosi half %hv to i128
  %bi = fptosi bfloat %bv to i128
  %oi0 = getelementptr i128, ptr addrspace(1) %oi, i64 %i2
  store i128 %hi, ptr addrspace(1) %oi0, align 16
  %oi1 = getelementptr i128, ptr addrspace(1) %oi, i64 %i2b
  store i128 %bi, ptr addrspace(1) %oi1, align 16
  br label %done
done:
  ret void
}
