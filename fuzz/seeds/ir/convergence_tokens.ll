; Convergence control: token-typed calls and operand bundles in a parent that launches and in its child.
target triple = "nvptx64-nvidia-cuda"
declare token @llvm.experimental.convergence.entry()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)

define ptx_kernel void @child(ptr %p) convergent {
  %tok = call token @llvm.experimental.convergence.entry()
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x() [ "convergencectrl"(token %tok) ]
  store i32 %t, ptr %p, align 4
  ret void
}
define ptx_kernel void @parent(ptr %p) convergent {
entry:
  %tok = call token @llvm.experimental.convergence.entry()
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 2, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  br label %done
done:
  ret void
}
