; Host code's triple: cdpc compiles device code for NVPTX.
target triple = "x86_64-unknown-linux-gnu"

define void @k(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}
