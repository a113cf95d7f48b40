; A 32-bit module in a 64-bit compilation: it needs `--address-size 32`.
target triple = "nvptx-nvidia-cuda"

define ptx_kernel void @k(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
