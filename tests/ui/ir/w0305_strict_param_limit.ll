; flags: --strict-param-limit
; A launch whose parameter buffer is over the documented 4096 bytes (a 4400-byte table and a
; pointer): CUDA 12.1 and newer take it on sm_70+, older runtimes refuse it. The kernel
; language's W0305, at the launch, with the kernel's `define` line as where its parameters are.
target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)

define ptx_kernel void @child(ptr byval([1100 x i32]) align 4 %table, ptr %out) {
  %first = load i32, ptr %table, align 4
  store i32 %first, ptr %out, align 4
  ret void
}

define ptx_kernel void @parent(ptr %out) {
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 4408)
  store i32 7, ptr %buf, align 8
  %slot = getelementptr inbounds i8, ptr %buf, i64 4400
  store ptr %out, ptr %slot, align 8
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, i32 0, ptr null)
  ret void
}
