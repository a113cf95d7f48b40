; Every kind of operand an instruction can have, in a child, its caller and a launching parent:
; metadata (noalias scopes, constrained floating point, registers), blocks (br, switch),
; operand bundles, i128 conversions, vectors, freeze, atomics and inline assembly.
target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.experimental.noalias.scope.decl(metadata)
declare float @llvm.experimental.constrained.fadd.f32(float, float, metadata, metadata)
declare void @llvm.assume(i1)
declare i32 @llvm.read_register.i32(metadata)

define internal void @add(ptr noalias %a, ptr noalias %b, i32 %i) #1 {
  call void @llvm.experimental.noalias.scope.decl(metadata !2)
  %x = sext i32 %i to i64
  %pa = getelementptr inbounds float, ptr %a, i64 %x
  %pb = getelementptr inbounds float, ptr %b, i64 %x
  %vb = load float, ptr %pb, align 4, !alias.scope !2
  %va = load float, ptr %pa, align 4, !noalias !2
  %s = call float @llvm.experimental.constrained.fadd.f32(float %va, float %vb, metadata !"round.tonearest", metadata !"fpexcept.ignore") #1
  store float %s, ptr %pa, align 4, !noalias !2
  ret void
}

define ptx_kernel void @child(ptr %p, i32 %n) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  call void @llvm.experimental.noalias.scope.decl(metadata !2)
  call void @llvm.assume(i1 true) [ "align"(ptr %p, i64 16) ]
  %w = zext i32 %n to i128
  %f = uitofp i128 %w to double
  %back = fptosi double %f to i128
  %low = trunc i128 %back to i32
  %fr = freeze i32 %low
  switch i32 %t, label %other [ i32 0, label %zero
                                i32 1, label %one ]
zero:
  call void @add(ptr %p, ptr %p, i32 %fr)
  br label %other
one:
  %v = insertelement <2 x i32> poison, i32 %t, i32 0
  %e = extractelement <2 x i32> %v, i32 0
  %old = atomicrmw add ptr %p, i32 %e monotonic, align 4
  %r = call i32 asm sideeffect "mov.u32 $0, %laneid;", "=r"()
  store i32 %r, ptr %p, align 4
  br label %other
other:
  ret void
}

define ptx_kernel void @parent(ptr %p) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  call void @llvm.experimental.noalias.scope.decl(metadata !5)
  %first = icmp eq i32 %t, 0
  br i1 %first, label %launch, label %done
launch:
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %n = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 7, ptr %n, align 4
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 2, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  br label %done
done:
  call void @add(ptr %p, ptr %p, i32 %t)
  ret void
}

attributes #1 = { strictfp }

!0 = distinct !{!0, !"domain"}
!1 = distinct !{!1, !0, !"scope a"}
!2 = !{!1}
!3 = distinct !{!3, !"domain2"}
!4 = distinct !{!4, !3, !"scope b"}
!5 = !{!4}
