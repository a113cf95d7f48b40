
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.dim3 = type { i32, i32, i32 }
declare ptr @__cudaCDP2GetParameterBuffer(i64, i64)
declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32, ptr)
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

; A kernel that launches itself after some threads returned and the rest met at a barrier
; (block and grid aggregation's last-thread end and its clone), and a leaf launched twice.
define ptx_kernel void @leaf(ptr %p, i32 %v) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %at = getelementptr inbounds i32, ptr %p, i32 %t
  store i32 %v, ptr %at, align 4
  ret void
}

define ptx_kernel void @tree(ptr %p, i32 %depth) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %early = icmp ugt i32 %t, 31
  br i1 %early, label %done, label %meet
meet:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %more = icmp sgt i32 %depth, 0
  br i1 %more, label %launch, label %done
launch:
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 16)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 64
  %d = getelementptr inbounds i8, ptr %buf, i64 8
  %less = sub i32 %depth, 1
  store i32 %less, ptr %d, align 8
  store i32 2, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 64, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
  %st = call i32 @__cudaCDP2LaunchDevice(ptr @tree, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr null)
  %lbuf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 16)
  %lnull = icmp eq ptr %lbuf, null
  br i1 %lnull, label %done, label %lfill
lfill:
  store ptr %p, ptr %lbuf, align 64
  %lv = getelementptr inbounds i8, ptr %lbuf, i64 8
  store i32 %depth, ptr %lv, align 8
  %lst = call i32 @__cudaCDP2LaunchDevice(ptr @leaf, ptr %lbuf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr null)
  br label %done
done:
  ret void
}
