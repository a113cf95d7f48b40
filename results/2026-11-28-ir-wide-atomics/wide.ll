; 128-bit atomics as another front end writes them (Rust's AtomicU128, std::atomic<__int128>):
; every thread i of the grid adds vals[i] into acc[0], takes the maximum into acc[1] and the
; exclusive or into acc[2] (read-modify-writes NVPTX makes loops of atom.cas.b128), then on its
; own slot: a compare-and-swap that succeeds where slots[i] == vals[i] (the host made the even
; slots so), an atomic load, and an exchange through a generic pointer of load + 1 (the old
; value into olds2[i]), then an atomic store of that plus one more.
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @wide(ptr addrspace(1) %acc, ptr addrspace(1) %vals, ptr addrspace(1) %slots, ptr addrspace(1) %olds, ptr addrspace(1) %olds2, ptr addrspace(1) %ok) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %bn = mul i32 %b, %n
  %i32 = add i32 %bn, %t
  %i = zext i32 %i32 to i64
  %vp = getelementptr i128, ptr addrspace(1) %vals, i64 %i
  %v = load i128, ptr addrspace(1) %vp, align 16
  %a0 = atomicrmw add ptr addrspace(1) %acc, i128 %v monotonic, align 16
  %accmax = getelementptr i128, ptr addrspace(1) %acc, i64 1
  %a1 = atomicrmw umax ptr addrspace(1) %accmax, i128 %v monotonic, align 16
  %accxor = getelementptr i128, ptr addrspace(1) %acc, i64 2
  %a2 = atomicrmw xor ptr addrspace(1) %accxor, i128 %v syncscope("device") acq_rel, align 16
  %sp = getelementptr i128, ptr addrspace(1) %slots, i64 %i
  %nv = xor i128 %v, -1
  %r = cmpxchg ptr addrspace(1) %sp, i128 %v, i128 %nv seq_cst seq_cst, align 16
  %old = extractvalue { i128, i1 } %r, 0
  %succ = extractvalue { i128, i1 } %r, 1
  %op = getelementptr i128, ptr addrspace(1) %olds, i64 %i
  store i128 %old, ptr addrspace(1) %op, align 16
  %s32 = zext i1 %succ to i32
  %okp = getelementptr i32, ptr addrspace(1) %ok, i64 %i
  store i32 %s32, ptr addrspace(1) %okp, align 4
  %l = load atomic i128, ptr addrspace(1) %sp acquire, align 16
  %l1 = add i128 %l, 1
  %g = addrspacecast ptr addrspace(1) %sp to ptr
  %prev = atomicrmw xchg ptr %g, i128 %l1 acq_rel, align 16
  %o2 = getelementptr i128, ptr addrspace(1) %olds2, i64 %i
  store i128 %prev, ptr addrspace(1) %o2, align 16
  %l2 = add i128 %l1, 1
  store atomic i128 %l2, ptr addrspace(1) %sp release, align 16
  ret void
}
