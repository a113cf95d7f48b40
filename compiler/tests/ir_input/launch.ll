; launch.cu as a front end would write it: the documented NVVM IR launch sequence, dim3 by
; value, no data layout.
target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define ptx_kernel void @child(ptr %p, i32 %n) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %t to i64
  %slot = getelementptr inbounds i32, ptr %p, i64 %i
  store i32 %n, ptr %slot, align 4
  ret void
}

define ptx_kernel void @parent(ptr %p) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
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
  ret void
}
