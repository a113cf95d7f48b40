
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.dim3 = type { i32, i32, i32 }
declare ptr @__cudaCDP2GetParameterBuffer(i64, i64)
declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32, ptr)
define ptx_kernel void @child(ptr %p, i32 %n) { ret void }

define ptx_kernel void @parent(ptr %p, ptr %stream) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %slot = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 7, ptr %slot, align 4
  store i32 4, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 32, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
  %st = call i32 @__cudaCDP2LaunchDevice(ptr @child, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr %stream)
  br label %done
done:
  ret void
}
