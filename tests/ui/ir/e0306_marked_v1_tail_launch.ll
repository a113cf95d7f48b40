; A tail launch whose call is marked `!cdpc.launch.v1`: the marker keeps it in the V1
; sequence under the default V2 ABI, and the V1 entry points refuse cudaStreamTailLaunch.
target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)

define ptx_kernel void @child(ptr %p) {
  ret void
}

define ptx_kernel void @parent(ptr %p) {
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)
  store ptr %p, ptr %buf, align 8
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr inttoptr (i64 3 to ptr)), !cdpc.launch.v1 !0
  ret void
}

!0 = !{}
