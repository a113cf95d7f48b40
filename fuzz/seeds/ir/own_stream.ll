; A stream only its thread holds (pipeline/own_stream.rs): created into a local in a loop,
; small and large grids launched into it, destroyed; a second stream whose handle is stored,
; which is not the thread's own.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.dim3 = type { i32, i32, i32 }
@kept = addrspace(1) global ptr null
declare ptr @__cudaCDP2GetParameterBuffer(i64, i64)
declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32, ptr)
declare i32 @cudaStreamCreateWithFlags(ptr, i32)
declare i32 @cudaStreamDestroy(ptr)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define ptx_kernel void @leaf(ptr %p, i32 %v) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %at = getelementptr inbounds i32, ptr %p, i32 %t
  store i32 %v, ptr %at, align 4
  ret void
}

define ptx_kernel void @tick() {
  ret void
}

define ptx_kernel void @parent(ptr %p, i32 %n) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %sp = alloca ptr, align 8
  %shared = alloca ptr, align 8
  %made2 = call i32 @cudaStreamCreateWithFlags(ptr %shared, i32 1)
  %other = load ptr, ptr %shared, align 8
  store ptr %other, ptr addrspace(1) @kept, align 8
  br label %loop
loop:
  %k = phi i32 [ 0, %entry ], [ %k.next, %launch ]
  %made = call i32 @cudaStreamCreateWithFlags(ptr %sp, i32 1)
  %own = load ptr, ptr %sp, align 8
  %big = icmp eq i32 %k, 1
  %threads = select i1 %big, i32 %n, i32 32
  store i32 1, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 %threads, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 16)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %launch, label %fill
fill:
  store ptr %p, ptr %buf, align 64
  %v = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 %k, ptr %v, align 8
  %st = call i32 @__cudaCDP2LaunchDevice(ptr @leaf, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr %own)
  %st2 = call i32 @__cudaCDP2LaunchDevice(ptr @tick, ptr null, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr %other)
  br label %launch
launch:
  %gone = call i32 @cudaStreamDestroy(ptr %own)
  %k.next = add i32 %k, 1
  %more = icmp ult i32 %k.next, 3
  br i1 %more, label %loop, label %done
done:
  ret void
}
