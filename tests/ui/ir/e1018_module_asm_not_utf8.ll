; Module-level inline assembly with a byte that is not UTF-8 (\E9, Latin-1 é): it would go into the PTX
; as written.
target triple = "nvptx64-nvidia-cuda"

module asm "// caf\E9"

define ptx_kernel void @k(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
