//! The global-pointer marking, IR in, IR out.

use super::*;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;

const HEAD: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.Graph = type { ptr, ptr, i32 }
"#;

/// The module's text after the pass, with the number of pointers it marked.
fn marked(body: &str) -> (String, usize) {
    let context = Context::create();
    let text = format!("{HEAD}{body}");
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "test");
    let module = context.create_module_from_ir(buffer).expect("the test IR parses");
    let n = mark_global_pointers(&module);
    module.verify().expect("the marked module verifies");
    let ir = module.print_to_string().to_string();
    (ir[ir.find("define").expect("a definition")..].to_string(), n)
}

/// `C__agg`'s records: a pointer argument loaded from a record and a `byval` struct's
/// pointer word loaded and converted are marked (their uses go through the casts); the
/// record's 32-bit header field and a pointer loaded from the child's data (not from the
/// table) are not; the markers are gone.
#[test]
fn pointers_read_from_an_aggregated_kernels_records_are_global() {
    let (ir, n) = marked(
        r#"
define ptx_kernel void @child__agg(ptr %records, i32 %count) #0 {
  %rec = getelementptr i8, ptr %records, i64 160
  %first = load i32, ptr %rec, align 4
  %arg.at = getelementptr i8, ptr %rec, i64 32
  %dist = load ptr, ptr %arg.at, align 8
  %word.at = getelementptr i8, ptr %rec, i64 40
  %word = load i64, ptr %word.at, align 8
  %edges = inttoptr i64 %word to ptr
  %next = load ptr, ptr %edges, align 8
  store i32 %first, ptr %dist, align 4
  store i32 %first, ptr %edges, align 4
  store i32 %first, ptr %next, align 4
  ret void
}
attributes #0 = { "cdpc.records" "cdpc.launch-rewritten" }
"#,
    );
    assert_eq!(n, 2, "{ir}");
    assert_eq!(ir.matches("addrspacecast ptr %dist to ptr addrspace(1)").count(), 1, "{ir}");
    assert_eq!(ir.matches("addrspacecast ptr %edges to ptr addrspace(1)").count(), 1, "{ir}");
    assert!(!ir.contains("addrspacecast ptr %next"), "{ir}");
    assert!(!ir.contains("cdpc."), "{ir}");
    insta::assert_snapshot!(ir);
}

/// A rewritten parent: an `i64` word of a `byval` parameter that is both converted to a
/// pointer and stored (into a record) has its `inttoptr` marked; the same in a kernel the
/// passes did not mark, a word of a parameter that is not `byval`, and an `inttoptr` of
/// arithmetic are left alone; an instruction with `!cdpc.global` is marked wherever it is.
#[test]
fn words_of_byval_parameters_and_marked_tables_are_global_in_rewritten_kernels() {
    let (ir, n) = marked(
        r#"
define ptx_kernel void @parent(ptr byval(%struct.Graph) align 8 %g, ptr %plain, ptr %record, i64 %bits) #0 {
  %word = load i64, ptr %g, align 8
  store i64 %word, ptr %record, align 8
  %edges = inttoptr i64 %word to ptr
  store i32 1, ptr %edges, align 4
  %other = load i64, ptr %plain, align 8
  %p = inttoptr i64 %other to ptr
  store i32 2, ptr %p, align 4
  %sum = add i64 %bits, 8
  %q = inttoptr i64 %sum to ptr
  store i32 3, ptr %q, align 4
  %table = inttoptr i64 %bits to ptr, !cdpc.global !0
  store i32 4, ptr %table, align 4
  ret void
}
define ptx_kernel void @untouched(ptr byval(%struct.Graph) align 8 %g, ptr %record) {
  %word = load i64, ptr %g, align 8
  store i64 %word, ptr %record, align 8
  %edges = inttoptr i64 %word to ptr
  store i32 1, ptr %edges, align 4
  ret void
}
attributes #0 = { "cdpc.launch-rewritten" }
!0 = !{}
"#,
    );
    assert_eq!(n, 2, "{ir}");
    assert_eq!(ir.matches("addrspace(1)").count(), 4, "two pointers, two casts each: {ir}");
    assert!(ir.contains("addrspacecast ptr %edges to ptr addrspace(1)") && ir.contains("addrspacecast ptr %table to ptr addrspace(1)"), "{ir}");
    assert!(!ir.contains("cdpc."), "{ir}");
    insta::assert_snapshot!(ir);
}

/// A module without markers is untouched.
#[test]
fn a_module_without_markers_is_untouched() {
    let body = r#"
define ptx_kernel void @k(ptr byval(%struct.Graph) align 8 %g, ptr %record) {
  %word = load i64, ptr %g, align 8
  store i64 %word, ptr %record, align 8
  %edges = inttoptr i64 %word to ptr
  store i32 1, ptr %edges, align 4
  ret void
}
"#;
    let context = Context::create();
    let text = format!("{HEAD}{body}");
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "test")).expect("parses");
    let before = module.print_to_string().to_string();
    assert_eq!(mark_global_pointers(&module), 0);
    assert_eq!(module.print_to_string().to_string(), before);
}

/// Markers an input brings are removed before the passes run: only theirs say what is
/// global.
#[test]
fn markers_in_the_input_are_cleared() {
    let body = r#"
define ptx_kernel void @k(ptr %records) #0 {
  %p = load ptr, ptr %records, align 8
  %q = inttoptr i64 8 to ptr, !cdpc.global !0
  store i32 1, ptr %p, align 4
  store i32 2, ptr %q, align 4
  ret void
}
attributes #0 = { "cdpc.records" "cdpc.launch-rewritten" }
!0 = !{}
"#;
    let context = Context::create();
    let text = format!("{HEAD}{body}");
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "test")).expect("parses");
    assert!(has_markers(&module));
    clear_markers(&module);
    assert!(!has_markers(&module));
    assert_eq!(mark_global_pointers(&module), 0);
    assert!(!module.print_to_string().to_string().contains("addrspace(1)"));
}
