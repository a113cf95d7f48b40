//! The launch pipeline, IR in, IR out: hand-written modules in the documented NVVM IR shape
//! (what Clang emits, and what another front end may hand cdpc), through the passes.

use super::*;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;

const HEAD: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.dim3 = type { i32, i32, i32 }
declare ptr @__cudaCDP2GetParameterBuffer(i64, i64)
declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32, ptr)
define ptx_kernel void @child(ptr %p, i32 %n) { ret void }
"#;

/// A launch as Clang writes it: buffer, null test, stores, dim3 in allocas, launch.
const LAUNCH: &str = r#"
define ptx_kernel void @parent(ptr %p, ptr %stream) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %slot = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 7, ptr %slot, align 4
  store i32 4, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 32, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
  %st = call i32 @__cudaCDP2LaunchDevice(ptr @child, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr %stream)
  br label %done
done:
  ret void
}
"#;

fn run_text(ir: &str, target: Target) -> (String, Result<Vec<Diagnostic>, Vec<Diagnostic>>) {
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test");
    let module = context.create_module_from_ir(buffer).expect("the test IR parses");
    let result = run(&module, &PipelineOptions { target, nv_module_id: Some("_id".into()), ..PipelineOptions::default() }, &SourceText::default());
    if result.is_ok() {
        let tm = crate::back::target_machine(&target, 3).unwrap();
        cleanup(&module, &tm, true).unwrap();
        module.verify().unwrap();
    }
    (module.print_to_string().to_string(), result)
}

fn codes(result: &Result<Vec<Diagnostic>, Vec<Diagnostic>>) -> Vec<&'static str> {
    match result {
        Ok(d) | Err(d) => d.iter().map(|d| d.code.as_str()).collect(),
    }
}

/// The definition of `@name` in printed IR.
pub(super) fn function<'a>(ir: &'a str, name: &str) -> &'a str {
    let line = ir.lines().find(|l| l.starts_with("define ") && l.contains(&format!(" @{name}("))).expect("the function is defined");
    let start = ir.find(line).unwrap();
    &ir[start..start + ir[start..].find("\n}\n").unwrap() + 2]
}

#[test]
fn a_v1_launch_becomes_v2_with_the_arguments_stored_into_the_runtimes_buffer() {
    let (ir, result) = run_text(&format!("{HEAD}{LAUNCH}"), Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(!ir.contains("call ptr @__cudaCDP2GetParameterBuffer(") && !ir.contains("@__cudaCDP2LaunchDevice("), "{ir}");
    insta::assert_snapshot!(function(&ir, "parent"));
}

#[test]
fn under_v1_the_sequence_stays_and_tail_launch_is_e0306() {
    let target = Target { launch_abi: crate::target::LaunchAbi::V1, ..Target::default() };
    let (ir, result) = run_text(&format!("{HEAD}{LAUNCH}"), target);
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(ir.contains("call i32 @__cudaCDP2LaunchDevice(") && ir.contains("@child,") && !ir.contains("V2"), "{ir}");
    let tail = LAUNCH.replace("ptr %stream)\n  br", "ptr inttoptr (i64 3 to ptr))\n  br");
    let (_, result) = run_text(&format!("{HEAD}{tail}"), target);
    assert_eq!(codes(&result), ["E0306"]);
}

/// Clang passes a launch's `dim3`s as `byval` pointers; what stays V1 takes them by value
/// afterwards (the same PTX parameter, stored into the parameter space without a local copy),
/// its marker and debug location kept.
#[test]
fn a_v1_launch_takes_its_dims_by_value_and_keeps_its_marker() {
    let target = Target { launch_abi: crate::target::LaunchAbi::V1, ..Target::default() };
    let (ir, result) = run_text(&format!("{HEAD}{LAUNCH}"), target);
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(ir.contains("declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)"), "{ir}");
    // The declaration's other attributes stay, those of the dims' parameters go.
    let attributed = HEAD.replace("align 4, i32, ptr)\n", "align 4, i32 noundef, ptr) #7\nattributes #7 = { convergent nounwind }\n");
    assert_ne!(attributed, HEAD);
    let (with, _) = run_text(&format!("{attributed}{LAUNCH}"), target);
    let declaration = with.lines().find(|l| l.starts_with("declare i32 @__cudaCDP2LaunchDevice(")).expect("declared");
    assert!(declaration.starts_with("declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32 noundef, ptr) #"), "{with}");
    let group = declaration.rsplit(' ').next().unwrap();
    assert!(with.lines().any(|l| l.starts_with(&format!("attributes {group} = {{ convergent nounwind"))), "{with}");
    assert!(!ir.contains("byval") && !function(&ir, "parent").contains("alloca"), "{ir}");
    insta::assert_snapshot!(function(&ir, "parent"));
    // At V2 a launch marked to stay V1 is rewritten the same way and stays marked.
    let marked = LAUNCH.replace("ptr %stream)\n  br", "ptr %stream), !cdpc.launch.v1 !0\n  br");
    let (ir, result) = run_text(&format!("{HEAD}{marked}!0 = !{{}}\n"), Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(ir.contains("i32 0, ptr %stream), !cdpc.launch.v1 !"), "{ir}");
    assert!(!ir.contains("byval") && !function(&ir, "parent").contains("alloca"), "{ir}");
}

/// A program that asks for V2's parameter buffer itself (Clang's declaration: `byval` dims).
#[test]
fn v2s_buffer_called_by_the_program_takes_its_dims_by_value() {
    let v2 = r#"
declare ptr @__cudaCDP2GetParameterBufferV2(ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32)
declare i32 @__cudaCDP2LaunchDeviceV2(ptr, ptr)
define ptx_kernel void @own(ptr %p) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  store %struct.dim3 { i32 2, i32 1, i32 1 }, ptr %grid, align 4
  store %struct.dim3 { i32 64, i32 1, i32 1 }, ptr %block, align 4
  %buf = call ptr @__cudaCDP2GetParameterBufferV2(ptr @child, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %st = call i32 @__cudaCDP2LaunchDeviceV2(ptr %buf, ptr null)
  br label %done
done:
  ret void
}
"#;
    let (ir, result) = run_text(&format!("{HEAD}{v2}{LAUNCH}"), Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(ir.contains("declare ptr @__cudaCDP2GetParameterBufferV2(ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32)"), "{ir}");
    assert!(
        function(&ir, "own").contains("call ptr @__cudaCDP2GetParameterBufferV2(ptr nonnull @child, { i32, i32, i32 } { i32 2, i32 1, i32 1 }, { i32, i32, i32 } { i32 64, i32 1, i32 1 }, i32 0)"),
        "{ir}"
    );
    assert!(!ir.contains("byval") && !function(&ir, "own").contains("alloca") && !function(&ir, "parent").contains("alloca"), "{ir}");
}

#[test]
fn a_buffer_that_escapes_is_e1010() {
    let escaping = LAUNCH.replace("  store ptr %p, ptr %buf, align 8\n", "  store ptr %buf, ptr %p, align 8\n");
    let (_, result) = run_text(&format!("{HEAD}{escaping}"), Target::default());
    assert_eq!(codes(&result), ["E1010"]);
    assert!(result.unwrap_err()[0].message.contains("escapes"));
}

#[test]
fn a_buffer_of_unknown_size_is_e1010() {
    let sized =
        LAUNCH.replace("define ptx_kernel void @parent(ptr %p, ptr %stream)", "define ptx_kernel void @parent(ptr %p, ptr %stream, i64 %size)").replace("(i64 64, i64 12)", "(i64 64, i64 %size)");
    let (_, result) = run_text(&format!("{HEAD}{sized}"), Target::default());
    assert_eq!(codes(&result), ["E1010"]);
}

/// A buffer over 4096 bytes is the kernel language's `W0305` at the launch, over the target's
/// limit `E0304`, the launch lowered as before (the module is unchanged by the check); a `.cdp`
/// launch (`!cdpc.span`), which its sema checked, gets none from the pipeline.
#[test]
fn a_buffer_over_4k_is_w0305_and_over_the_limit_e0304() {
    let sized = |n: u64| LAUNCH.replace("(i64 64, i64 12)", &format!("(i64 64, i64 {n})"));
    let (ir, result) = run_text(&format!("{HEAD}{}", sized(4096)), Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new(), "{ir}");
    let (ir, result) = run_text(&format!("{HEAD}{}", sized(4408)), Target::default());
    assert_eq!(codes(&result), ["W0305"]);
    let warning = &result.as_ref().unwrap()[0];
    assert_eq!(warning.message, "the parameters of `child` need 4408 bytes, more than 4096");
    assert!(!ir.contains("@__cudaCDP2LaunchDevice("), "{ir}");
    let (_, result) = run_text(&format!("{HEAD}{}", sized(32768)), Target::default());
    assert_eq!(codes(&result), ["E0304"]);
    assert!(result.unwrap_err()[0].message.contains("32768 bytes, more than the 32764 a launch can pass"));
    // 32-bit addresses: 4 KB is all a launch can pass.
    let bits32 = Target { address_size: crate::target::AddressSize::Bits32, ..Target::default() };
    let (_, result) = run_text(&format!("{HEAD}{}", sized(4408)).replace("nvptx64-nvidia-cuda", "nvptx-nvidia-cuda"), bits32);
    assert!(codes(&result).contains(&"E0304"), "{:?}", codes(&result));
    let marked = sized(4408).replace("ptr %stream)\n  br label %done", "ptr %stream), !cdpc.span !0\n  br label %done") + "!0 = !{i64 1, i64 2}\n";
    let (_, result) = run_text(&format!("{HEAD}{marked}"), Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
}

#[test]
fn legacy_shuffles_become_sync_forms_with_w0902() {
    let ir = format!(
        "{HEAD}declare i32 @llvm.nvvm.shfl.up.i32(i32, i32, i32)\ndefine ptx_kernel void @k(ptr %p) {{\n  %v = load i32, ptr %p\n  %s = call i32 @llvm.nvvm.shfl.up.i32(i32 %v, i32 1, i32 0)\n  store i32 %s, ptr %p\n  ret void\n}}\n"
    );
    let (out, result) = run_text(&ir, Target::default());
    assert_eq!(codes(&result), ["W0902"]);
    assert!(out.contains("@llvm.nvvm.shfl.sync.up.i32(i32 %") && out.contains("@llvm.nvvm.activemask()") && !out.contains("@llvm.nvvm.shfl.up.i32("), "{out}");
}

#[test]
fn static_kernels_and_variables_get_nvccs_names() {
    let ir = format!(
        "{HEAD}@_ZL7counter = internal addrspace(1) global i32 0\ndefine weak_odr ptx_kernel void @_ZL2skPi__intern__0123456789abcdef(ptr %p) {{\n  %v = load i32, ptr addrspace(1) @_ZL7counter\n  store i32 %v, ptr %p\n  store i32 1, ptr addrspace(1) @_ZL7counter\n  ret void\n}}\n"
    );
    let (out, result) = run_text(&ir, Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(out.contains("define internal ptx_kernel void @__nv_static_3__id__Z2skPi("), "{out}");
    assert!(out.contains("@__nv_static_3__id_counter = internal addrspace(1) global i32"), "{out}");
    assert!(out.contains("@llvm.used = appending global [1 x ptr] [ptr @__nv_static_3__id__Z2skPi]"), "{out}");
}

/// A front end's own named `%dim3`, passed by value to NVVM IR's documented entry points, with
/// a grid computed at run time.
const NAMED_DIM3: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%dim3 = type { i32, i32, i32 }
declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, %dim3, %dim3, i32, ptr)
define ptx_kernel void @child(ptr %p, i32 %n) { ret void }
define ptx_kernel void @parent(ptr %p, i32 %n) {
entry:
  %buf = call ptr @cudaGetParameterBuffer(i64 64, i64 12)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 8
  %slot = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 %n, ptr %slot, align 4
  %g0 = insertvalue %dim3 poison, i32 %n, 0
  %g1 = insertvalue %dim3 %g0, i32 1, 1
  %grid = insertvalue %dim3 %g1, i32 1, 2
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, %dim3 %grid, %dim3 { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  br label %done
done:
  ret void
}
"#;

#[test]
fn a_named_dim3_by_value_is_lowered_as_the_literal_one() {
    let (ir, result) = run_text(NAMED_DIM3, Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
    let parent = function(&ir, "parent");
    assert!(!parent.contains("%dim3") && !ir.contains("@cudaLaunchDevice(") && !ir.contains("@cudaGetParameterBuffer("), "{ir}");
    insta::assert_snapshot!(parent);
    // Under V1 the launch stays, now of the literal type.
    let target = Target { launch_abi: crate::target::LaunchAbi::V1, ..Target::default() };
    let (ir, result) = run_text(NAMED_DIM3, target);
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(ir.contains("declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)") && !ir.contains("%dim3 %"), "{ir}");
    // A launch marked to stay V1 keeps its mark through the rewrite of its dims (it was lost).
    let marked = NAMED_DIM3.replace("i32 0, ptr null)", "i32 0, ptr null), !cdpc.launch.v1 !0") + "!0 = !{}\n";
    assert_ne!(marked, NAMED_DIM3);
    let (ir, result) = run_text(&marked, Target::default());
    assert_eq!(codes(&result), Vec::<&str>::new());
    assert!(ir.contains("call i32 @cudaLaunchDevice(") && ir.contains("!cdpc.launch.v1") && !ir.contains("LaunchDeviceV2"), "{ir}");
}

#[test]
fn a_named_dim3_by_value_goes_through_thresholding_and_warp_aggregation() {
    // A parent that reads its thread's index: one that reads none is left alone by aggregation.
    let indexed = NAMED_DIM3.replace("entry:\n", "entry:\n  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n") + "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n";
    for (threshold, aggregate) in [(128, super::aggregate::Granularity::Off), (0, super::aggregate::Granularity::Warp)] {
        let context = Context::create();
        let buffer = MemoryBuffer::create_from_memory_range_copy(indexed.as_bytes(), "test");
        let module = context.create_module_from_ir(buffer).expect("the test IR parses");
        let options = PipelineOptions { launch_threshold: threshold, aggregate, pass_remarks: true, ..PipelineOptions::default() };
        let result = run(&module, &options, &SourceText::default());
        assert!(result.as_ref().is_ok_and(|d| d.iter().all(|d| !d.is_error())), "{:?}", codes(&result));
        module.verify().unwrap_or_else(|e| panic!("{e}\n{}", module.print_to_string()));
        let ir = module.print_to_string().to_string();
        // Only warp aggregation's helper keeps its launches V1, marked so: the aggregated
        // kernel's and the threads' own where the group falls back.
        let v1: Vec<&str> = ir.lines().filter(|l| l.contains("call i32 @cudaLaunchDevice(")).collect();
        let warp = aggregate == super::aggregate::Granularity::Warp;
        assert!(v1.len() == 2 * usize::from(warp) && v1.iter().all(|l| l.contains("!cdpc.launch.v1")), "{ir}");
        assert!(!warp || (v1.iter().any(|l| l.contains("@child__agg,")) && v1.iter().any(|l| l.contains("@child,"))), "{ir}");
        // The 32-thread child is run in place by thresholding: kept for the warp's end, the
        // kernel making no launch after it (defer.rs).
        assert_eq!(ir.contains("call i32 @child__keep(") && ir.contains("call i32 @child__end("), threshold == 128, "{ir}");
    }
}

/// `__cluster_dims__` as cdpc's header writes it (an annotation with its evaluated arguments)
/// becomes NVPTX's `nvvm.cluster_dim` (nvcc's `.reqnctapercluster`); another annotation stays,
/// and nothing of cdpc's annotation is left for NVPTX to write as data.
#[test]
fn cluster_dims_annotations_become_nvptxs_attribute() {
    let ir = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
@.str = private unnamed_addr constant [18 x i8] c"cdpc.cluster_dims\00", section "llvm.metadata"
@.file = private unnamed_addr constant [5 x i8] c"k.cu\00", section "llvm.metadata"
@.mine = private unnamed_addr constant [5 x i8] c"mine\00", section "llvm.metadata"
@.args = private unnamed_addr constant { i32 } { i32 2 }, section "llvm.metadata"
@.args3 = private unnamed_addr constant { i32, i32, i32 } { i32 1, i32 2, i32 4 }, section "llvm.metadata"
@llvm.global.annotations = appending global [3 x { ptr, ptr, ptr, i32, ptr }] [{ ptr, ptr, ptr, i32, ptr } { ptr @a, ptr @.str, ptr @.file, i32 2, ptr @.args }, { ptr, ptr, ptr, i32, ptr } { ptr @helper, ptr @.mine, ptr @.file, i32 3, ptr null }, { ptr, ptr, ptr, i32, ptr } { ptr @c, ptr @.str, ptr @.file, i32 4, ptr @.args3 }], section "llvm.metadata"
define ptx_kernel void @a(ptr %p) { store i32 1, ptr %p
  ret void }
define void @helper() { ret void }
define ptx_kernel void @c(ptr %p) "nvvm.maxntid"="128" { store i32 2, ptr %p
  ret void }
"#;
    let context = Context::create();
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test")).unwrap();
    assert_eq!(qualifiers::apply(&module), Ok(2));
    module.verify().unwrap();
    let text = module.print_to_string().to_string();
    let attribute =
        |f: &str| module.get_function(f).unwrap().get_string_attribute(inkwell::attributes::AttributeLoc::Function, "nvvm.cluster_dim").map(|a| a.get_string_value().to_str().unwrap().to_string());
    assert_eq!(attribute("a").as_deref(), Some("2,1,1"), "{text}");
    assert_eq!(attribute("c").as_deref(), Some("1,2,4"), "{text}");
    assert_eq!(attribute("helper"), None);
    assert!(!text.contains("cdpc.cluster_dims") && !text.contains("@.args"), "{text}");
    assert!(text.contains("[1 x { ptr, ptr, ptr, i32, ptr }] [{ ptr, ptr, ptr, i32, ptr } { ptr @helper, ptr @.mine, ptr @.file, i32 3, ptr null }]"), "{text}");
    // Once more: nothing left to do, nothing touched.
    assert_eq!(qualifiers::apply(&module), Ok(0));
    assert_eq!(module.print_to_string().to_string(), text);
    // The PTX: nvcc's directives, and no annotation as data.
    let tm = crate::back::target_machine(&Target::default(), 3).unwrap();
    let ptx = String::from_utf8(tm.write_to_memory_buffer(&module, inkwell::targets::FileType::Assembly).unwrap().as_slice().to_vec()).unwrap();
    assert!(ptx.contains(".explicitcluster\n.reqnctapercluster 2, 1, 1"), "{ptx}");
    assert!(ptx.contains(".reqnctapercluster 1, 2, 4"), "{ptx}");
}

/// `__maxnreg__` as cdpc's header writes it becomes NVPTX's `nvvm.maxnreg`; beside a launch
/// bound (`nvvm.maxntid`) or not positive (`{ i32 0 }` is `zeroinitializer`) it is refused, and
/// the module is left as it was.
#[test]
fn maxnreg_annotations_become_nvptxs_attribute_or_are_refused() {
    let module_with = |kernel_attrs: &str, args: &str| {
        format!(
            r#"
target triple = "nvptx64-nvidia-cuda"
@.str = private unnamed_addr constant [13 x i8] c"cdpc.maxnreg\00", section "llvm.metadata"
@.file = private unnamed_addr constant [5 x i8] c"k.cu\00", section "llvm.metadata"
@.args = private unnamed_addr constant {{ i32 }} {args}, section "llvm.metadata"
@llvm.global.annotations = appending global [1 x {{ ptr, ptr, ptr, i32, ptr }}] [{{ ptr, ptr, ptr, i32, ptr }} {{ ptr @k, ptr @.str, ptr @.file, i32 7, ptr @.args }}], section "llvm.metadata"
define ptx_kernel void @k(ptr %p) {kernel_attrs} {{ store i32 1, ptr %p
  ret void }}
"#
        )
    };
    let context = Context::create();
    let parse = |ir: String| context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test")).unwrap();
    let module = parse(module_with("", "{ i32 40 }"));
    assert_eq!(qualifiers::apply(&module), Ok(1));
    let k = module.get_function("k").unwrap();
    assert_eq!(k.get_string_attribute(inkwell::attributes::AttributeLoc::Function, "nvvm.maxnreg").unwrap().get_string_value().to_str(), Ok("40"));
    assert!(module.get_global("llvm.global.annotations").is_none() && module.get_global(".args").is_none());
    for (attrs, args, message) in [
        (r#""nvvm.maxntid"="128""#, "{ i32 40 }", "The __launch_bounds__ and __maxnreg__ qualifiers cannot be applied to the same kernel"),
        ("", "zeroinitializer", "The maximum number of registers that can be allocated per thread must be positive"),
    ] {
        let module = parse(module_with(attrs, args));
        let before = module.print_to_string().to_string();
        let refused = qualifiers::apply(&module).unwrap_err();
        assert_eq!(refused, [qualifiers::Refused { kernel: "k".into(), file: "k.cu".into(), line: 7, qualifier: "__maxnreg__", message }]);
        assert_eq!(module.print_to_string().to_string(), before);
    }
}

/// Annotation tables the pass does not read as cdpc's (no arguments, arguments that are not
/// integers, too many, a variable annotated instead of a function, another name) are left
/// exactly as they were.
#[test]
fn odd_annotation_tables_are_left_alone() {
    let ir = r#"
target triple = "nvptx64-nvidia-cuda"
@.cd = private unnamed_addr constant [18 x i8] c"cdpc.cluster_dims\00", section "llvm.metadata"
@.mr = private unnamed_addr constant [13 x i8] c"cdpc.maxnreg\00", section "llvm.metadata"
@.file = private unnamed_addr constant [5 x i8] c"k.cu\00", section "llvm.metadata"
@.float = private unnamed_addr constant { float } { float 2.0 }, section "llvm.metadata"
@.four = private unnamed_addr constant { i32, i32, i32, i32 } { i32 1, i32 1, i32 1, i32 1 }, section "llvm.metadata"
@.two = private unnamed_addr constant { i32, i32 } { i32 8, i32 8 }, section "llvm.metadata"
@g = global i32 0
@llvm.global.annotations = appending global [5 x { ptr, ptr, ptr, i32, ptr }] [
  { ptr, ptr, ptr, i32, ptr } { ptr @k, ptr @.cd, ptr @.file, i32 1, ptr null },
  { ptr, ptr, ptr, i32, ptr } { ptr @k, ptr @.cd, ptr @.file, i32 2, ptr @.float },
  { ptr, ptr, ptr, i32, ptr } { ptr @k, ptr @.cd, ptr @.file, i32 3, ptr @.four },
  { ptr, ptr, ptr, i32, ptr } { ptr @g, ptr @.cd, ptr @.file, i32 4, ptr @.two },
  { ptr, ptr, ptr, i32, ptr } { ptr @k, ptr @.mr, ptr @.file, i32 5, ptr @.two }], section "llvm.metadata"
define ptx_kernel void @k(ptr %p) { store i32 1, ptr %p
  ret void }
"#;
    let context = Context::create();
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test")).unwrap();
    let before = module.print_to_string().to_string();
    assert_eq!(qualifiers::apply(&module), Ok(0));
    assert_eq!(module.print_to_string().to_string(), before);
}

/// `__block_size__` as cdpc's header writes it (two annotations, the block's shape and the
/// cluster's) becomes NVPTX's blocks as clusters: `nvvm.reqntid` in place of a launch bound's
/// `nvvm.maxntid` (its `nvvm.minctasm` kept), `nvvm.blocksareclusters`, the cluster's shape or
/// 1,1,1, and every function's PTX feature raised to 9.0, which NVPTX needs for the directive.
#[test]
fn block_size_annotations_become_blocks_as_clusters() {
    let ir = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
@.bs = private unnamed_addr constant [16 x i8] c"cdpc.block_size\00", section "llvm.metadata"
@.bc = private unnamed_addr constant [19 x i8] c"cdpc.block_cluster\00", section "llvm.metadata"
@.file = private unnamed_addr constant [5 x i8] c"k.cu\00", section "llvm.metadata"
@.b = private unnamed_addr constant { i32, i32, i32 } { i32 128, i32 1, i32 1 }, section "llvm.metadata"
@.c = private unnamed_addr constant { i32, i32, i32 } { i32 2, i32 1, i32 1 }, section "llvm.metadata"
@llvm.global.annotations = appending global [3 x { ptr, ptr, ptr, i32, ptr }] [
  { ptr, ptr, ptr, i32, ptr } { ptr @a, ptr @.bs, ptr @.file, i32 1, ptr @.b },
  { ptr, ptr, ptr, i32, ptr } { ptr @a, ptr @.bc, ptr @.file, i32 1, ptr @.c },
  { ptr, ptr, ptr, i32, ptr } { ptr @bounded, ptr @.bs, ptr @.file, i32 2, ptr @.b }], section "llvm.metadata"
define ptx_kernel void @a(ptr %p) #0 { store i32 1, ptr %p
  ret void }
define ptx_kernel void @bounded(ptr %p) #1 { store i32 2, ptr %p
  ret void }
define void @helper() #0 { ret void }
attributes #0 = { "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #1 = { "nvvm.maxntid"="128" "nvvm.minctasm"="2" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
"#;
    let context = Context::create();
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test")).unwrap();
    assert_eq!(qualifiers::apply(&module), Ok(3));
    module.verify().unwrap();
    let attr = |f: &str, k: &str| module.get_function(f).unwrap().get_string_attribute(inkwell::attributes::AttributeLoc::Function, k).map(|a| a.get_string_value().to_str().unwrap().to_string());
    assert_eq!((attr("a", "nvvm.reqntid").as_deref(), attr("a", "nvvm.cluster_dim").as_deref()), (Some("128,1,1"), Some("2,1,1")));
    assert_eq!(attr("a", "nvvm.blocksareclusters").as_deref(), Some(""));
    assert_eq!((attr("bounded", "nvvm.maxntid"), attr("bounded", "nvvm.minctasm").as_deref()), (None, Some("2")));
    assert_eq!(attr("bounded", "nvvm.cluster_dim").as_deref(), Some("1,1,1"));
    for f in ["a", "bounded", "helper"] {
        assert_eq!(attr(f, "target-features").as_deref(), Some("+ptx90,+sm_90"), "{f}");
    }
    let tm = crate::back::target_machine_with_features(&Target::default(), 3, "+ptx90").unwrap();
    let ptx = String::from_utf8(tm.write_to_memory_buffer(&module, inkwell::targets::FileType::Assembly).unwrap().as_slice().to_vec()).unwrap();
    assert!(ptx.contains(".version 9.0") && ptx.contains(".blocksareclusters") && ptx.contains(".reqntid 128, 1, 1"), "{ptx}");
    assert!(!ptx.contains(".maxntid"), "{ptx}");
}

/// A vtable's pure and deleted slots, which Clang fills with the C++ runtime's placeholders,
/// become null as nvcc writes them; a placeholder called by name is left alone.
#[test]
fn pure_virtual_slots_become_null() {
    let ir = r#"
target triple = "nvptx64-nvidia-cuda"
@_ZTV4Base = linkonce_odr unnamed_addr constant { [5 x ptr] } { [5 x ptr] [ptr null, ptr null, ptr @__cxa_pure_virtual, ptr @__cxa_deleted_virtual, ptr @f] }
declare void @__cxa_pure_virtual()
declare void @__cxa_deleted_virtual()
define void @f() { ret void }
define ptx_kernel void @k(ptr %p) { store ptr @_ZTV4Base, ptr %p
  ret void }
"#;
    let context = Context::create();
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test")).unwrap();
    assert_eq!(cxx_abi::null_slots(&module), 2);
    module.verify().unwrap();
    let text = module.print_to_string().to_string();
    assert!(text.contains("[ptr null, ptr null, ptr null, ptr null, ptr @f]") && !text.contains("__cxa_"), "{text}");
    assert_eq!(cxx_abi::null_slots(&module), 0);

    let called = "target triple = \"nvptx64-nvidia-cuda\"\ndeclare void @__cxa_pure_virtual()\ndefine void @g() {\n  call void @__cxa_pure_virtual()\n  ret void\n}\n";
    let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(called.as_bytes(), "called")).unwrap();
    let before = module.print_to_string().to_string();
    assert_eq!(cxx_abi::null_slots(&module), 0);
    assert_eq!(module.print_to_string().to_string(), before);
}
