; Parses, but the verifier refuses it: %a is used before it is defined.
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr %p) {
  %b = add i32 %a, 1
  %a = add i32 %b, 1
  store i32 %a, ptr %p, align 4
  ret void
}
