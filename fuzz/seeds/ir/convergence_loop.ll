; Convergence control with a loop token: `llvm.experimental.convergence.loop` is itself a call
; with a `convergencectrl` bundle (the entry's token), and a call in the loop uses the loop's
; token. Dropping the bundles replaces the loop intrinsic's call, which is then erased as a token.
target triple = "nvptx64-nvidia-cuda"
declare token @llvm.experimental.convergence.entry()
declare token @llvm.experimental.convergence.anchor()
declare token @llvm.experimental.convergence.loop()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)

define ptx_kernel void @k(ptr %p, i32 %n) convergent {
entry:
  %t = call token @llvm.experimental.convergence.entry()
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x() [ "convergencectrl"(token %t) ]
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %l = call token @llvm.experimental.convergence.loop() [ "convergencectrl"(token %t) ]
  %odd = icmp ult i32 %i, %x
  %b = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %odd) [ "convergencectrl"(token %l) ]
  %next = add i32 %i, %b
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  %a = call token @llvm.experimental.convergence.anchor()
  %y = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 true) [ "convergencectrl"(token %a) ]
  %s = add i32 %next, %y
  store i32 %s, ptr %p, align 4
  ret void
}
