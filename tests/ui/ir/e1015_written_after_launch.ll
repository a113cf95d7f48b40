; The second argument is stored after the launch: the child would never see it.
target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)

define ptx_kernel void @child(ptr %p, i32 %n) {
  store i32 %n, ptr %p, align 4
  ret void
}

define ptx_kernel void @parent(ptr %p) {
entry:
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  %n = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 7, ptr %n, align 4
  br label %done
done:
  ret void
}
