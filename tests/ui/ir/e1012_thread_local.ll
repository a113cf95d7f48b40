; A `thread_local` global, as a front end writes one for C's `_Thread_local` or Rust's
; `#[thread_local]`: PTX has no thread-local storage, and NVPTX stopped on the variable's
; address ("Cannot select: GlobalTLSAddress", E1023 before this check).
target triple = "nvptx64-nvidia-cuda"

@counter = thread_local global i32 0

define ptx_kernel void @count(ptr %out) {
  %v = load i32, ptr @counter
  %n = add i32 %v, 1
  store i32 %n, ptr @counter
  store i32 %n, ptr %out
  ret void
}
