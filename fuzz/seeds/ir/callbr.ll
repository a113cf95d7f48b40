; `callbr`: an inline-assembly call whose operands include blocks.
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr %p) {
entry:
  callbr void asm "", "!i"() to label %a [label %b]
a:
  store i32 1, ptr %p, align 4
  ret void
b:
  store i32 2, ptr %p, align 4
  ret void
}
