; flags: --arch sm_80
; A compare-and-swap of 128 bits (Rust's `AtomicU128`, C++'s `std::atomic<__int128>` in another
; front end's IR): PTX's `atom.cas.b128` is sm_90's, and below it NVPTX stopped ("unsupported
; cmpxchg", E1023).
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @swap(ptr addrspace(1) %p, i128 %expected, i128 %desired) {
  %r = cmpxchg ptr addrspace(1) %p, i128 %expected, i128 %desired seq_cst seq_cst
  %old = extractvalue { i128, i1 } %r, 0
  %next = getelementptr i128, ptr addrspace(1) %p, i64 1
  store i128 %old, ptr addrspace(1) %next, align 16
  ret void
}
