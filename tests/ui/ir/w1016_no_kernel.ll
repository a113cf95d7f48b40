; A device function and no kernel: the cubin would have nothing to launch. `@k` is marked
; neither with the `ptx_kernel` calling convention nor in `!nvvm.annotations`.
target triple = "nvptx64-nvidia-cuda"

define void @k(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
