//! The copy expansion, IR in, IR out.

use super::*;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;

const HEAD: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.Graph = type { [17 x i64] }
declare void @llvm.memcpy.p0.p0.i64(ptr noalias writeonly, ptr noalias readonly, i64, i1 immarg)
declare void @use(ptr)
"#;

/// The module's text after the pass, with the number of copies it rewrote.
fn expanded(body: &str) -> (String, usize) {
    let context = Context::create();
    let text = format!("{HEAD}{body}");
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "test");
    let module = context.create_module_from_ir(buffer).expect("the test IR parses");
    let n = expand_local_copies(&module);
    module.verify().expect("the expanded module verifies");
    let ir = module.print_to_string().to_string();
    (ir[ir.find("define").expect("a definition")..].to_string(), n)
}

/// A by-value struct of 136 bytes into a launch block and the block out to a global buffer:
/// both copies become 17 word copies (the block's alignment 64, the parameter's 8).
#[test]
fn copies_into_and_out_of_a_local_block_become_word_copies() {
    let (ir, n) = expanded(
        r#"
define ptx_kernel void @parent(ptr byval(%struct.Graph) align 8 %g, ptr %buf) {
  %args = alloca [136 x i8], align 64
  call void @llvm.memcpy.p0.p0.i64(ptr align 64 %args, ptr align 8 %g, i64 136, i1 false)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %buf, ptr align 64 %args, i64 136, i1 false)
  ret void
}
"#,
    );
    assert_eq!(n, 2);
    assert!(!ir.contains("llvm.memcpy"), "{ir}");
    assert_eq!(ir.matches("load i64").count(), 34, "{ir}");
    assert_eq!(ir.matches("store i64").count(), 34, "{ir}");
    insta::assert_snapshot!(ir);
}

/// Alignments and sizes that are not multiples of a word: the widest word the alignment at
/// each offset allows, then the tail in halves; a copy at an offset into the local keeps the
/// offset's alignment.
#[test]
fn odd_sizes_and_small_alignments_copy_in_the_widest_words_they_allow() {
    let (ir, n) = expanded(
        r#"
define void @f(ptr %from) {
  %local = alloca [40 x i8], align 16
  %at = getelementptr inbounds i8, ptr %local, i64 4
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %at, ptr align 4 %from, i64 15, i1 false)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %local, ptr align 1 %from, i64 3, i1 false)
  call void @use(ptr %local)
  ret void
}
"#,
    );
    assert_eq!(n, 2);
    insta::assert_snapshot!(ir);
}

/// What the pass leaves alone: volatile copies, copies of a size not known or larger than
/// `MAX_BYTES`, copies between places that are not local, a local at a variable offset.
#[test]
fn copies_it_cannot_or_need_not_expand_are_left_as_they_are() {
    let body = r#"
define void @f(ptr %a, ptr %b, i64 %n, i64 %i) {
  %local = alloca [8192 x i8], align 16
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %local, ptr align 16 %a, i64 64, i1 true)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %local, ptr align 16 %a, i64 %n, i1 false)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %local, ptr align 16 %a, i64 4097, i1 false)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %b, ptr align 16 %a, i64 64, i1 false)
  %at = getelementptr inbounds i8, ptr %local, i64 %i
  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %at, ptr align 16 %a, i64 64, i1 false)
  call void @use(ptr %local)
  ret void
}
"#;
    let (ir, n) = expanded(body);
    assert_eq!(n, 0);
    assert_eq!(ir.matches("call void @llvm.memcpy").count(), 5, "{ir}");
}

/// The largest copy the pass takes, 4 KB, out of a `byval` parameter: 512 word copies.
#[test]
fn a_copy_of_four_kilobytes_out_of_a_byval_parameter_is_expanded() {
    let (ir, n) = expanded(
        r#"
define ptx_kernel void @k(ptr byval([4096 x i8]) align 16 %p, ptr %out) {
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %out, ptr align 16 %p, i64 4096, i1 false)
  ret void
}
"#,
    );
    assert_eq!(n, 1);
    assert_eq!(ir.matches("load i64").count(), 512);
    assert_eq!(ir.matches("store i64").count(), 512);
}

/// The bytes moved are the memcpy's: the expanded function, run on LLVM's interpreter-free
/// constant folder, gives the same result as the memcpy (folded by instcombine and SROA).
#[test]
fn the_expanded_copy_moves_the_same_bytes() {
    let context = Context::create();
    let text = format!(
        "{HEAD}{}",
        r#"
define i64 @f() {
  %a = alloca [24 x i8], align 8
  %b = alloca [24 x i8], align 8
  store i64 81985529216486895, ptr %a, align 8
  %a1 = getelementptr inbounds i8, ptr %a, i64 8
  store i64 -1167088121787636991, ptr %a1, align 8
  %a2 = getelementptr inbounds i8, ptr %a, i64 16
  store i64 42, ptr %a2, align 8
  %b3 = getelementptr inbounds i8, ptr %b, i64 3
  %a3 = getelementptr inbounds i8, ptr %a, i64 3
  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %b3, ptr align 1 %a3, i64 17, i1 false)
  %r = getelementptr inbounds i8, ptr %b, i64 8
  %v = load i64, ptr %r, align 8
  ret i64 %v
}
"#
    );
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "test");
    let module = context.create_module_from_ir(buffer).expect("the test IR parses");
    assert_eq!(expand_local_copies(&module), 1);
    let tm = crate::back::target_machine(&crate::target::Target::default(), 3).unwrap();
    module.run_passes("function(sroa,instcombine,early-cse)", &tm, inkwell::passes::PassBuilderOptions::create()).unwrap();
    let ir = module.print_to_string().to_string();
    // Bytes 8..16 of `b` are bytes 8..16 of `a`.
    assert!(ir.contains("ret i64 -1167088121787636991"), "{ir}");
}
