; Device-side allocation for pipeline::malloc_pool (-fdevice-malloc-pool, on in every other
; round of fuzzing::ir_pipeline): cudaMalloc under CUDA 13's name, malloc, free and cudaFree,
; the allocated block passed to a child by the documented V1 launch, and free's address stored.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.dim3 = type { i32, i32, i32 }
declare ptr @__cudaCDP2GetParameterBuffer(i64, i64)
declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32, ptr)
declare i32 @__cudaCDP2Malloc(ptr, i64)
declare i32 @__cudaCDP2Free(ptr)
declare noalias ptr @malloc(i64)
declare void @free(ptr allocptr captures(none))

define ptx_kernel void @fill(ptr %p, i32 %n) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %in = icmp slt i32 %t, %n
  br i1 %in, label %write, label %done
write:
  %i = zext i32 %t to i64
  %slot = getelementptr inbounds i32, ptr %p, i64 %i
  store i32 %t, ptr %slot, align 4
  br label %done
done:
  ret void
}

define ptx_kernel void @take(ptr %blocks, i32 %n) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %t to i64
  %out = getelementptr inbounds ptr, ptr %blocks, i64 %i
  %bytes = shl i64 %i, 4
  %even = and i32 %t, 1
  %odd = icmp ne i32 %even, 0
  br i1 %odd, label %heap, label %cuda
cuda:
  %status = call i32 @__cudaCDP2Malloc(ptr %out, i64 %bytes)
  br label %launch
heap:
  %p = call noalias ptr @malloc(i64 %bytes)
  store ptr %p, ptr %out, align 8
  br label %launch
launch:
  %q = load ptr, ptr %out, align 8
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %q, ptr %buf, align 8
  %arg = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 %n, ptr %arg, align 4
  store i32 1, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 32, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
  %st = call i32 @__cudaCDP2LaunchDevice(ptr @fill, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr null)
  br label %done
done:
  ret void
}

define ptx_kernel void @give(ptr %blocks, ptr %deleter) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %t to i64
  %slot = getelementptr inbounds ptr, ptr %blocks, i64 %i
  %p = load ptr, ptr %slot, align 8
  %third = urem i32 %t, 3
  %cuda = icmp eq i32 %third, 0
  br i1 %cuda, label %cudafree, label %plain
cudafree:
  %s = call i32 @__cudaCDP2Free(ptr %p)
  br label %done
plain:
  call void @free(ptr %p)
  br label %done
done:
  store ptr @free, ptr %deleter, align 8
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
