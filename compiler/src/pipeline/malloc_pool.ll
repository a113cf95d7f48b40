; The device heap's pool (`pipeline::malloc_pool`): what the pass links into a module whose code
; calls `malloc`, `free`, `cudaMalloc` or `cudaFree` on the device (`{linkage}` internal), and
; the pool object the device link adds when it pools a program's allocations (`{linkage}`
; empty: its `take` and `give` replace the weak ones of the objects compiled for the link to
; decide). `{capacity}`, `{units}`, `{largest}` and `{linkage}` are filled in by the pass; each
; wrapper of a runtime function is written by the pass after these.
;
; The pool is {units} blocks of 16 bytes in the program's static memory. Its state is one word:
; the high 32 bits count the blocks handed out since the pool was last empty, the low 32 bits
; the allocations still live. An allocation adds both at once; a free takes one from the count;
; the last free empties the pool (state 0), so that a program that allocates in one phase and
; frees in another reuses it. Both symbols are `common`: every object compiled with the pool
; shares one pool and one state when linked.
;
; Why the high half cannot wrap: a request is at most {largest} bytes (2^10 blocks), the count
; is at most {units} but while a request that does not fit is undone, right after it was
; added: at most one such request per resident thread. 2^32 blocks would need 2^32 / 2^10 =
; 4,194,304 threads resident at once; an H100 holds 270,336 (132 SMs x 2,048). The low half
; counts at most one allocation per block plus one per resident thread.

@__cdpc_malloc_pool_v1 = common addrspace(1) global [{capacity} x i8] zeroinitializer, align 16
@__cdpc_malloc_state_v1 = common addrspace(1) global i64 0, align 8

; A block of at least %size bytes, 16-byte aligned, or null when the pool cannot give one
; (no bytes asked for, more than {largest}, or no room left): the caller then asks the heap.
define {linkage} ptr @__cdpc_pool_take_v1(i64 %size) {
entry:
  %less = add i64 %size, -1
  %small = icmp ult i64 %less, {largest}
  br i1 %small, label %look, label %none

look:
  %rounded = add i64 %size, 15
  %units = lshr i64 %rounded, 4
  %state = load atomic i64, ptr addrspace(1) @__cdpc_malloc_state_v1 syncscope("device") monotonic, align 8
  %used = lshr i64 %state, 32
  %wanted = add i64 %used, %units
  %room = icmp ule i64 %wanted, {units}
  br i1 %room, label %claim, label %none

claim:
  %shifted = shl i64 %units, 32
  %claimed = or i64 %shifted, 1
  %before = atomicrmw add ptr addrspace(1) @__cdpc_malloc_state_v1, i64 %claimed syncscope("device") monotonic, align 8
  %start = lshr i64 %before, 32
  %end = add i64 %start, %units
  %fits = icmp ule i64 %end, {units}
  br i1 %fits, label %give, label %undo

give:
  ; What the block's last owner wrote before freeing it happens before what its new one does.
  fence syncscope("device") acquire
  %offset = shl i64 %start, 4
  %block = getelementptr inbounds i8, ptr addrspace(1) @__cdpc_malloc_pool_v1, i64 %offset
  %generic = addrspacecast ptr addrspace(1) %block to ptr
  ret ptr %generic

undo:
  call void @__cdpc_pool_drop(i64 %claimed)
  br label %none

none:
  ret ptr null
}

; Takes %amount (blocks in the high half, allocations in the low) back from the state; when no
; allocation is left live the pool is empty again, unless another thread took from it first.
define internal void @__cdpc_pool_drop(i64 %amount) {
entry:
  %minus = sub i64 0, %amount
  %before = atomicrmw add ptr addrspace(1) @__cdpc_malloc_state_v1, i64 %minus syncscope("device") monotonic, align 8
  %after = sub i64 %before, %amount
  %live = and i64 %after, 4294967295
  %none = icmp eq i64 %live, 0
  %used = icmp ne i64 %after, 0
  %idle = and i1 %none, %used
  br i1 %idle, label %empty, label %done

empty:
  %reset = cmpxchg ptr addrspace(1) @__cdpc_malloc_state_v1, i64 %after, i64 0 syncscope("device") monotonic monotonic, align 8
  br label %done

done:
  ret void
}

; Whether %pointer is one of the pool's blocks; if it is, it is given back.
define {linkage} i1 @__cdpc_pool_give_v1(ptr %pointer) {
entry:
  %address = ptrtoint ptr %pointer to i64
  %base = ptrtoint ptr addrspacecast (ptr addrspace(1) @__cdpc_malloc_pool_v1 to ptr) to i64
  %offset = sub i64 %address, %base
  %inside = icmp ult i64 %offset, {capacity}
  br i1 %inside, label %give, label %other

give:
  ; What this thread wrote to the block happens before what its next owner does.
  fence syncscope("device") release
  call void @__cdpc_pool_drop(i64 1)
  ret i1 true

other:
  ret i1 false
}
