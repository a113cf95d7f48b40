//! The IR input's contract, IR in: hand-written modules, each breaking one rule, and the
//! module each check leaves.

use super::*;
use crate::driver::{CompileError, CompileOptions, Emit};
use inkwell::memory_buffer::MemoryBuffer;

/// The documented launch sequence (NVVM IR's names), a front end's plain IR: dim3 by value,
/// no data layout.
pub(super) const LAUNCH: &str = r#"target triple = "nvptx64-nvidia-cuda"

declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)

define ptx_kernel void @child(ptr %p, i32 %n) {
  store i32 %n, ptr %p, align 4
  ret void
}

define ptx_kernel void @parent(ptr %p) {
entry:
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %slot = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 7, ptr %slot, align 4
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  br label %done
done:
  ret void
}
"#;

fn ptx_options() -> CompileOptions {
    CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() }
}

/// The codes of compiling `ir` to PTX (none when it compiles), and the PTX.
fn compile(ir: &str, options: &CompileOptions) -> (Vec<&'static str>, String) {
    match crate::driver::compile_ir(ir.as_bytes(), options) {
        Ok(c) => (c.warnings.iter().map(|d| d.code.as_str()).collect(), String::from_utf8(c.output).unwrap()),
        Err(CompileError::Diagnostics(d)) => (d.iter().map(|d| d.code.as_str()).collect(), String::new()),
        Err(other) => panic!("expected diagnostics, got {other}"),
    }
}

#[test]
fn the_documented_sequence_compiles_to_the_v2_entry_points() {
    let (codes, ptx) = compile(LAUNCH, &ptx_options());
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains(".entry parent(") && ptx.contains(".entry child("), "{ptx}");
    assert!(ptx.contains("__cudaCDP2GetParameterBufferV2") && ptx.contains("__cudaCDP2LaunchDeviceV2"), "{ptx}");
    assert!(!ptx.contains("cudaGetParameterBuffer,") && !ptx.contains("call.uni (retval0), cudaLaunchDevice,"), "{ptx}");
}

#[test]
fn the_cdp2_names_and_nvvm_annotations_are_read_as_the_documented_ones() {
    let ir = LAUNCH.replace("@cudaGetParameterBuffer", "@__cudaCDP2GetParameterBuffer").replace("@cudaLaunchDevice", "@__cudaCDP2LaunchDevice").replace("define ptx_kernel", "define");
    let ir = format!("{ir}\n!nvvm.annotations = !{{!0, !1}}\n!0 = !{{ptr @child, !\"kernel\", i32 1}}\n!1 = !{{ptr @parent, !\"kernel\", i32 1}}\n");
    let (codes, ptx) = compile(&ir, &ptx_options());
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains(".entry parent(") && ptx.contains(".entry child(") && ptx.contains("__cudaCDP2LaunchDeviceV2"), "{ptx}");
}

#[test]
fn under_v1_the_documented_sequence_is_kept() {
    let options = CompileOptions { target: crate::target::Target { launch_abi: crate::target::LaunchAbi::V1, ..Default::default() }, ..ptx_options() };
    let (codes, ptx) = compile(LAUNCH, &options);
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains("cudaGetParameterBuffer") && ptx.contains("cudaLaunchDevice") && !ptx.contains("V2"), "{ptx}");
}

#[test]
fn nvvms_data_layout_is_accepted_and_a_different_one_is_e1014() {
    let nvvm = "target datalayout = \"e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64\"\n";
    assert_eq!(compile(&format!("{nvvm}{LAUNCH}"), &ptx_options()).0, Vec::<&str>::new());
    let wrong = "target datalayout = \"e-i64:32-n16:32:64\"\n";
    assert_eq!(compile(&format!("{wrong}{LAUNCH}"), &ptx_options()).0, ["E1014"]);
    let big = "target datalayout = \"E-i64:64-n16:32:64\"\n";
    assert_eq!(compile(&format!("{big}{LAUNCH}"), &ptx_options()).0, ["E1014"]);
}

#[test]
fn a_host_triple_is_e1013_and_the_32_bit_one_needs_address_size_32() {
    let x86 = LAUNCH.replace("nvptx64-nvidia-cuda", "x86_64-unknown-linux-gnu");
    assert_eq!(compile(&x86, &ptx_options()).0, ["E1013"]);
    let ptr32 = LAUNCH
        .replace("nvptx64-nvidia-cuda", "nvptx-nvidia-cuda")
        .replace("i64 8, i64 12", "i32 4, i32 8")
        .replace("ptr @cudaGetParameterBuffer(i64, i64)", "ptr @cudaGetParameterBuffer(i32, i32)")
        .replace("i64 8\n", "i32 4\n")
        .replace("store ptr %p, ptr %buf, align 8", "store ptr %p, ptr %buf, align 4");
    assert_eq!(compile(&ptr32, &ptx_options()).0, ["E1013"]);
    let options = CompileOptions { target: crate::target::Target { address_size: AddressSize::Bits32, ..Default::default() }, ..ptx_options() };
    let (codes, ptx) = compile(&ptr32, &options);
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains(".address_size 32"), "{ptx}");
}

#[test]
fn a_module_without_triple_or_layout_gets_nvptxs() {
    let ir = LAUNCH.replace("target triple = \"nvptx64-nvidia-cuda\"\n", "");
    let (codes, ptx) = compile(&ir, &ptx_options());
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains(".address_size 64") && ptx.contains(".entry parent("), "{ptx}");
}

#[test]
fn a_store_after_the_launch_is_e1015_and_one_in_a_fresh_buffer_is_not() {
    let after = LAUNCH.replace("  br label %done\ndone:", "  store i32 8, ptr %slot, align 4\n  br label %done\ndone:");
    assert_eq!(compile(&after, &ptx_options()).0, ["E1015"]);
    let memset = LAUNCH
        .replace("declare ptr @cudaGetParameterBuffer", "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\ndeclare ptr @cudaGetParameterBuffer")
        .replace("  br label %done\ndone:", "  call void @llvm.memset.p0.i64(ptr %buf, i8 0, i64 12, i1 false)\n  br label %done\ndone:");
    assert_eq!(compile(&memset, &ptx_options()).0, ["E1015"]);
    // A loop that gets a new buffer each time round writes each before its own launch.
    let looped = r#"target triple = "nvptx64-nvidia-cuda"
declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
define ptx_kernel void @child(i32 %n) { ret void }
define ptx_kernel void @parent(i32 %count) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %buf = call ptr @cudaGetParameterBuffer(i64 4, i64 4)
  store i32 %i, ptr %buf, align 4
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, i32 0, ptr null)
  %next = add i32 %i, 1
  %more = icmp slt i32 %next, %count
  br i1 %more, label %loop, label %done
done:
  ret void
}
"#;
    assert_eq!(compile(looped, &ptx_options()).0, Vec::<&str>::new());
}

#[test]
fn the_launch_is_labelled_beside_the_late_write() {
    let after = LAUNCH.replace("  br label %done\ndone:", "  store i32 8, ptr %slot, align 4\n  br label %done\ndone:");
    let Err(CompileError::Diagnostics(d)) = crate::driver::compile_ir(after.as_bytes(), &ptx_options()) else { panic!("E1015 expected") };
    let spans: Vec<&str> = d[0].labels.iter().map(|l| &after[l.span.range()]).collect();
    assert_eq!(spans[0], "store i32 8, ptr %slot, align 4");
    assert!(spans[1].starts_with("%st = call i32 @cudaLaunchDevice("), "{spans:?}");
}

#[test]
fn entry_points_of_other_types_or_not_called_are_e1010() {
    let typed = LAUNCH.replace("i32 0, ptr null)", "i64 0, ptr null)").replace("{ i32, i32, i32 }, i32, ptr)", "{ i32, i32, i32 }, i64, ptr)");
    assert_eq!(compile(&typed, &ptx_options()).0, ["E1010"]);
    let stored = LAUNCH.replace("  store ptr %p, ptr %buf, align 8\n", "  store ptr %p, ptr %buf, align 8\n  store ptr @cudaLaunchDevice, ptr %p, align 8\n");
    assert_eq!(compile(&stored, &ptx_options()).0, ["E1010"]);
    // What the pipeline checks stays its own: a buffer that escapes.
    let escapes = LAUNCH.replace("  store ptr %p, ptr %buf, align 8\n", "  store ptr %buf, ptr %p, align 8\n");
    assert_eq!(compile(&escapes, &ptx_options()).0, ["E1010"]);
}

#[test]
fn unreadable_text_is_e1011_at_llvms_line_and_column() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\ndefine ptx_kernel void @k() {\n  frobnicate void\n}\n";
    let Err(CompileError::Diagnostics(d)) = crate::driver::compile_ir(ir.as_bytes(), &ptx_options()) else { panic!("E1011 expected") };
    assert_eq!(d[0].code, Code::IrUnreadable);
    let at = d[0].primary_span().start as usize;
    assert_eq!(&ir[at..at + 10], "frobnicate", "{d:?}");
    assert!(d[0].message.contains("expected instruction opcode"), "{}", d[0].message);
}

#[test]
fn bad_bitcode_is_e1011_at_its_start_and_good_bitcode_compiles() {
    let Err(CompileError::Diagnostics(d)) = crate::driver::compile_ir(b"BC\xC0\xDE\x01\x02\x03", &ptx_options()) else { panic!("E1011 expected") };
    assert_eq!((d[0].code, d[0].primary_span()), (Code::IrUnreadable, Span::default()), "{d:?}");
    let context = Context::create();
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(LAUNCH.as_bytes(), "t")).unwrap();
    let bitcode = module.write_bitcode_to_memory();
    assert!(is_bitcode(bitcode.as_slice()));
    let compiled = crate::driver::compile_ir(bitcode.as_slice(), &ptx_options()).unwrap();
    assert!(String::from_utf8(compiled.output).unwrap().contains("__cudaCDP2LaunchDeviceV2"));
}

#[test]
fn ir_the_verifier_refuses_is_e1012() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\ndefine ptx_kernel void @k(ptr %p) {\nentry:\n  %a = add i32 %b, 1\n  %b = add i32 %a, 1\n  store i32 %a, ptr %p\n  ret void\n}\n";
    assert_eq!(compile(ir, &ptx_options()).0, ["E1012"]);
}

/// An `llvm.*` name LLVM 22 has no intrinsic for (a newer LLVM's test intrinsic) passes LLVM's
/// verifier, and NVPTX wrote it as an external function that ptxas could not parse: refused
/// before code generation. A known one (`llvm.nvvm.read.ptx.sreg.tid.x`) and an unused unknown
/// declaration compile.
#[test]
fn a_call_of_an_intrinsic_llvm_does_not_know_is_e1012() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\ndeclare i32 @llvm.nvvm.test.anytype.i8(i8)\ndeclare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\ndefine ptx_kernel void @k(ptr %p) {\n  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %u = call i32 @llvm.nvvm.test.anytype.i8(i8 1)\n  %s = add i32 %t, %u\n  store i32 %s, ptr %p\n  ret void\n}\n";
    assert_eq!(compile(ir, &ptx_options()).0, ["E1012"]);
    let unused = ir.replace("  %u = call i32 @llvm.nvvm.test.anytype.i8(i8 1)\n  %s = add i32 %t, %u\n", "  %s = add i32 %t, 1\n");
    let (codes, ptx) = compile(&unused, &ptx_options());
    assert!(codes.is_empty() && ptx.contains("%tid.x"), "{codes:?}\n{ptx}");
}

/// A call that passes a struct `byval` to a function declared with a plain pointer parameter
/// passes LLVM's verifier, and NVPTX made PTX of it that ptxas refused: refused at the call.
/// The same call of a function declared `byval` of that type compiles.
#[test]
fn a_byval_argument_for_a_plain_pointer_parameter_is_e1012() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\n%s = type { [2 x i64] }\n@g = external addrspace(1) constant %s\ndeclare void @bar(ptr)\ndefine ptx_kernel void @k() {\n  %p = addrspacecast ptr addrspace(1) @g to ptr\n  call void @bar(ptr byval(%s) %p)\n  ret void\n}\n";
    let diagnostics = match crate::driver::compile_ir(ir.as_bytes(), &ptx_options()) {
        Err(CompileError::Diagnostics(d)) => d,
        other => panic!("expected diagnostics, got {:?}", other.map(|c| c.warnings)),
    };
    assert_eq!(diagnostics.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(), ["E1012"]);
    assert!(diagnostics[0].message.contains("argument 1 of this call of `@bar` is passed as `byval(%s)`, but `@bar` takes it as a plain pointer"), "{}", diagnostics[0].message);
    let start = diagnostics[0].labels[0].span.start as usize;
    assert!(ir[start..].starts_with("call void @bar(ptr byval(%s) %p)"), "{:?}", &ir[start..]);
    // `@bar` and `@g` are another input's: a relocatable compilation.
    let agreed = ir.replace("declare void @bar(ptr)", "declare void @bar(ptr byval(%s))");
    let options = CompileOptions { separate: true, ..ptx_options() };
    assert_eq!(compile(&agreed, &options).0, Vec::<&str>::new());
}

#[test]
fn no_kernel_is_w1016_unless_separate() {
    let ir = "target triple = \"nvptx64-nvidia-cuda\"\ndefine void @f(ptr %p) {\n  store i32 1, ptr %p\n  ret void\n}\n";
    assert_eq!(compile(ir, &ptx_options()).0, ["W1016"]);
    let options = CompileOptions { separate: true, ..ptx_options() };
    assert_eq!(compile(ir, &options).0, Vec::<&str>::new());
}

#[test]
fn a_dim3_by_value_of_a_named_struct_type_is_lowered() {
    let named = LAUNCH.replace("declare ptr", "%dim3 = type { i32, i32, i32 }\ndeclare ptr").replace("{ i32, i32, i32 }", "%dim3").replace("%dim3 = type %dim3", "%dim3 = type { i32, i32, i32 }");
    assert!(named.contains("(ptr, ptr, %dim3, %dim3, i32, ptr)"), "{named}");
    let (codes, ptx) = compile(&named, &ptx_options());
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains("__cudaCDP2GetParameterBufferV2") && ptx.contains("__cudaCDP2LaunchDeviceV2"), "{ptx}");
    // A named struct of other fields is still no dim3.
    let other = named
        .replace("%dim3 = type { i32, i32, i32 }", "%dim3 = type { i32, i64, i32 }")
        .replace("%dim3 { i32 1, i32 1, i32 1 }", "%dim3 { i32 1, i64 1, i32 1 }")
        .replace("%dim3 { i32 32, i32 1, i32 1 }", "%dim3 { i32 32, i64 1, i32 1 }");
    assert_eq!(compile(&other, &ptx_options()).0, ["E1010"]);
}

/// A kernel calling libdevice's `sinf` and `pow`, as a front end that leaves math to libdevice
/// writes it.
const MATH: &str = r#"target triple = "nvptx64-nvidia-cuda"
declare float @__nv_sinf(float)
declare double @__nv_pow(double, double)
define ptx_kernel void @k(ptr %p, ptr %q) {
  %v = load float, ptr %p, align 4
  %s = call float @__nv_sinf(float %v)
  store float %s, ptr %p, align 4
  %d = load double, ptr %q, align 8
  %e = call double @__nv_pow(double %d, double %d)
  store double %e, ptr %q, align 8
  ret void
}
"#;

#[test]
fn libdevice_is_linked_when_the_module_calls_it() {
    for separate in [false, true] {
        let options = CompileOptions { separate, ..ptx_options() };
        let (codes, ptx) = compile(MATH, &options);
        assert!(codes.is_empty(), "{codes:?}");
        // Defined here, not left to a link that has no libdevice: no call of `__nv_*`, and
        // nothing of libdevice exported (nvcc's PTX keeps pow's helper as a `.func` too).
        assert!(ptx.contains(".visible .entry k(") && !ptx.contains("__nv_") && !ptx.contains(".extern"), "{ptx}");
        assert!(ptx.contains(".func  (.param .b64 func_retval0) __internal_accurate_pow(") && !ptx.contains(".visible .func"), "{ptx}");
    }
    // The module's own functions keep their linkage; what no one calls of libdevice is gone.
    let ir = MATH.replace("define ptx_kernel void @k(", "define float @mine(float %x) {\n  %y = call float @__nv_sinf(float %x)\n  ret float %y\n}\ndefine ptx_kernel void @k(");
    let (codes, ptx) = compile(&ir, &CompileOptions { separate: true, ..ptx_options() });
    assert!(codes.is_empty(), "{codes:?}");
    assert!(ptx.contains(".visible .func  (.param .b32 func_retval0) mine(") && !ptx.contains("__nv_cosf"), "{ptx}");
}
