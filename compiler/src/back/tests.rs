//! Tests of the NVPTX end's own steps on hand-written LLVM IR.

/// A loop's convergence token (`llvm.experimental.convergence.loop`) is itself a call with a
/// `convergencectrl` bundle: the bundle is dropped (a new call) and then the token, the new
/// call, erased; the module verifies and names no convergence intrinsic any more. (Erasing the
/// old call twice crashed the process.)
#[test]
fn a_loop_convergence_token_is_dropped_with_its_bundle() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\n\
declare token @llvm.experimental.convergence.entry()\n\
declare token @llvm.experimental.convergence.loop()\n\
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n\
define ptx_kernel void @k(ptr %p) convergent {\n\
entry:\n\
  %t = call token @llvm.experimental.convergence.entry()\n\
  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x() [ \"convergencectrl\"(token %t) ]\n\
  br label %loop\n\
loop:\n\
  %i = phi i32 [ 0, %entry ], [ %n, %loop ]\n\
  %l = call token @llvm.experimental.convergence.loop() [ \"convergencectrl\"(token %t) ]\n\
  %y = call i32 @llvm.nvvm.read.ptx.sreg.tid.x() [ \"convergencectrl\"(token %l) ]\n\
  %n = add i32 %i, %y\n\
  %c = icmp slt i32 %n, %x\n\
  br i1 %c, label %loop, label %done\n\
done:\n\
  store i32 %n, ptr %p\n\
  ret void\n\
}\n";
    let context = inkwell::context::Context::create();
    let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "loop.ll");
    let module = context.create_module_from_ir(buffer).expect("the module parses");
    // Three bundles and two tokens.
    assert_eq!(super::drop_convergence_control(&module), 5);
    module.verify().unwrap_or_else(|e| panic!("{e}"));
    let text = module.print_to_string().to_string();
    assert!(!text.contains("call token") && !text.contains("convergencectrl"), "{text}");
    assert_eq!(super::drop_convergence_control(&module), 0);
}
