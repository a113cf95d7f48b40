; One side of a link: a parent in IR that launches `child`, defined in link_child.cdp.
target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
declare void @child(ptr)

define ptx_kernel void @parent(ptr %p) {
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)
  store ptr %p, ptr %buf, align 8
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  ret void
}
