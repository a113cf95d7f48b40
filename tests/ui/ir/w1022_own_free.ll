; flags: -fdevice-malloc-pool
; The program's own `free` beside the runtime's `malloc`: pooling the allocation would hand a
; pool pointer to a `free` that does not know it, so nothing is pooled.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %out) {
  %p = call ptr @malloc(i64 16)
  store ptr %p, ptr %out, align 8
  call void @free(ptr %p)
  ret void
}

define void @free(ptr %p) {
  ret void
}

declare ptr @malloc(i64)
