//! Managed variables, IR in, IR out: the device side's annotation and PTX, the host side's
//! pointer, registration and loads. The oracle is nvcc 13.5: `nvcc -rdc=true -arch=sm_90 -ptx`
//! writes `.visible .global .attribute(.managed) .align 4 .u32 mv;` for `__managed__ int mv;`
//! and `.extern .global .attribute(.managed) .align 4 .u32 mv;` for its `extern` declaration;
//! `nvcc -cuda` writes the host side as `int *mv = 0;` (hidden, in `__nv_managed_data__`),
//! `__cudaRegisterManagedVar(handle, (void **)&mv, "mv", "mv", 0, 4, 0, 0)` and every host use
//! as `*(__nv_init_managed_rt(), mv)`.

use super::managed::{self, HostError};
use super::tests::function;
use super::*;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;

fn parse<'c>(context: &'c Context, ir: &str) -> Module<'c> {
    context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test")).expect("the test IR parses")
}

const DEVICE: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
@mv = dso_local addrspace(1) externally_initialized global i32 0, section "cdpc.managed", align 4
@scale = dso_local addrspace(1) externally_initialized global [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0], section "cdpc.managed", align 4
@ext = external dso_local addrspace(1) global i32, section "cdpc.managed", align 4
@plain = dso_local addrspace(1) externally_initialized global i32 0, align 4
define ptx_kernel void @k(ptr %out) {
  %a = load i32, ptr addrspacecast (ptr addrspace(1) @mv to ptr), align 4
  %b = load i32, ptr addrspacecast (ptr addrspace(1) @ext to ptr), align 4
  %f = load float, ptr addrspacecast (ptr addrspace(1) getelementptr inbounds (i8, ptr addrspace(1) @scale, i64 4) to ptr), align 4
  %i = fptosi float %f to i32
  %c = load i32, ptr addrspacecast (ptr addrspace(1) @plain to ptr), align 4
  %s1 = add i32 %a, %b
  %s2 = add i32 %s1, %c
  %s3 = add i32 %s2, %i
  store i32 %s3, ptr %out, align 4
  store i32 1, ptr addrspacecast (ptr addrspace(1) @mv to ptr), align 4
  ret void
}
"#;

/// The PTX lines declaring `name`.
fn declaration<'a>(ptx: &'a str, name: &str) -> Vec<&'a str> {
    ptx.lines().map(str::trim).filter(|l| (l.contains(".global") || l.contains(".extern")) && l.split(['[', ';', ' ']).any(|w| w == name)).collect()
}

#[test]
fn device_side_managed_variables_are_nvccs_in_ptx() {
    let context = Context::create();
    let module = parse(&context, DEVICE);
    let result = run(&module, &PipelineOptions::default(), &SourceText::default());
    assert!(result.is_ok(), "{result:?}");
    module.verify().unwrap();
    let ir = module.print_to_string().to_string();
    assert!(!ir.contains("cdpc.managed"), "{ir}");
    let tm = crate::back::target_machine(&crate::target::Target::default(), 3).unwrap();
    let ptx = crate::back::write_ptx(&module, &tm).unwrap();
    // nvcc 13.5's lines for the same declarations (the initializer as nvcc writes a float array).
    assert_eq!(declaration(&ptx, "mv"), [".visible .global .attribute(.managed) .align 4 .u32 mv;"], "{ptx}");
    assert_eq!(declaration(&ptx, "ext"), [".extern .global .attribute(.managed) .align 4 .u32 ext;"], "{ptx}");
    assert_eq!(declaration(&ptx, "scale"), [".visible .global .attribute(.managed) .align 4 .b8 scale[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};"], "{ptx}");
    // A plain device variable keeps nvcc's plain declaration.
    assert_eq!(declaration(&ptx, "plain"), [".visible .global .align 4 .u32 plain;"], "{ptx}");
}

#[test]
fn a_module_without_managed_variables_is_untouched() {
    let context = Context::create();
    let plain = DEVICE.replace(", section \"cdpc.managed\"", "");
    let module = parse(&context, &plain);
    let before = module.print_to_string().to_string();
    assert_eq!(managed::device(&module), 0);
    assert_eq!(managed::host(&module).map_err(|e| format!("{e:?}")), Ok(()));
    assert_eq!(module.print_to_string().to_string(), before);
}

/// Clang 22's host IR of a file with managed variables (`fuzz/seeds/host-ir/clang-host-managed.ll`,
/// its source in its first lines): defined, initialised, `static` in a namespace, `extern`;
/// read and written by host code directly, through a constant `getelementptr` and in a loop.
#[test]
fn host_side_managed_variables_are_nvccs_pointers_registered_and_loaded() {
    let context = Context::create();
    let module = parse(&context, include_str!("../../../fuzz/seeds/host-ir/clang-host-managed.ll"));
    managed::host(&module).unwrap();
    host_names::nvcc_host_names(&module, "_ab12_9_managed_cu_cdpc").unwrap();
    module.verify().unwrap();
    let ir = module.print_to_string().to_string();
    assert!(!ir.contains("cdpc.managed") && !ir.contains(".cdpc.shadow"), "{ir}");
    // nvcc's pointers, under the variables' names.
    for line in [
        "@counter = hidden global ptr null, section \"__nv_managed_data__\", align 8",
        "@scale = hidden global ptr null, section \"__nv_managed_data__\", align 8",
        "@_ZN2nsL6hiddenE = internal global ptr null, section \"__nv_managed_data__\", align 8",
        "@elsewhere = external hidden global ptr, section \"__nv_managed_data__\", align 8",
    ] {
        assert!(ir.lines().any(|l| l == line), "no `{line}`:\n{ir}");
    }
    // Registered as managed, under the device code's names (the static one's nvcc's).
    let register = function(&ir, "__cuda_register_globals");
    assert!(!register.contains("@__cudaRegisterVar("), "{register}");
    assert!(register.contains("store ptr %0, ptr @__cdpc_managed_handle"), "{register}");
    for (pointer, size) in [("@counter", 4), ("@scale", 16), ("@_ZN2nsL6hiddenE", 4)] {
        let call = register.lines().find(|l| l.contains("@__cudaRegisterManagedVar(") && l.contains(&format!("ptr {pointer},"))).unwrap_or_else(|| panic!("{pointer} is not registered:\n{register}"));
        assert!(call.contains(&format!("i32 0, i64 {size}, i32 0, i32 0)")), "{call}");
    }
    assert!(ir.contains("c\"__nv_static_23__ab12_9_managed_cu_cdpc__ZN32_INTERNAL_ab12_9_managed_cu_cdpc2ns6hiddenE\\00\""), "{ir}");
    // The first use loads the module with the kept handle.
    let init = function(&ir, "__cdpc_init_managed_rt");
    assert!(init.contains("load ptr, ptr @__cdpc_managed_handle") && init.contains("call i8 @__cudaInitModule(ptr"), "{init}");
    // Every host use reads the pointer after that call; nothing uses a variable's address.
    let run = function(&ir, "_Z3runPii");
    let lines: Vec<&str> = run.lines().collect();
    let mut loads = 0;
    for (i, line) in lines.iter().enumerate() {
        for pointer in ["@counter", "@scale", "@_ZN2nsL6hiddenE", "@elsewhere"] {
            if line.contains(&format!("{pointer},")) || line.contains(&format!("{pointer})")) || line.ends_with(pointer) {
                assert!(line.contains(&format!("= load ptr, ptr {pointer}, align 8")), "a use of {pointer} that is no load of the pointer: {line}\n{run}");
                assert!(lines[i - 1].trim() == "call void @__cdpc_init_managed_rt()", "no init before {line}\n{run}");
                loads += 1;
            }
        }
    }
    // counter twice, scale four times (the constant offset and three loop reads), hidden and
    // elsewhere once each.
    assert_eq!(loads, 8, "{run}");
    assert!(run.contains("getelementptr inbounds nuw i8, ptr %managed"), "the constant offset into `scale`: {run}");
}

const HOST_HEAD: &str = r#"
target triple = "x86_64-pc-linux-gnu"
@mv = dso_local global i32 undef, section "cdpc.managed", align 4
@name = private unnamed_addr constant [3 x i8] c"mv\00", align 1
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @ctor, ptr null }]
define internal void @register(ptr %h) {
  tail call void @__cudaRegisterVar(ptr %h, ptr nonnull @mv, ptr nonnull @name, ptr nonnull @name, i32 0, i64 4, i32 0, i32 0)
  ret void
}
declare void @__cudaRegisterVar(ptr, ptr, ptr, ptr, i32, i64, i32, i32)
define internal void @ctor() {
  tail call void @__cudaRegisterLinkedBinary_x(ptr nonnull @register, ptr null, ptr null, ptr null)
  ret void
}
declare void @__cudaRegisterLinkedBinary_x(ptr, ptr, ptr, ptr)
"#;

/// A `phi` of the variable's address reads the pointer at the end of the incoming block; an
/// address turned into an integer becomes a `ptrtoint` of the loaded pointer.
#[test]
fn phis_and_integer_addresses_read_the_pointer() {
    let context = Context::create();
    let ir = format!(
        "{HOST_HEAD}
define i64 @pick(i1 %c, ptr %other) {{
entry:
  br i1 %c, label %a, label %b
a:
  br label %b
b:
  %p = phi ptr [ @mv, %a ], [ %other, %entry ]
  store i32 1, ptr %p, align 4
  ret i64 add (i64 ptrtoint (ptr @mv to i64), i64 4)
}}
"
    );
    let module = parse(&context, &ir);
    managed::host(&module).unwrap();
    module.verify().unwrap();
    let ir = module.print_to_string().to_string();
    let pick = function(&ir, "pick");
    let a = &pick[pick.find("\na:").unwrap()..pick.find("\nb:").unwrap()];
    assert!(a.contains("call void @__cdpc_init_managed_rt()") && a.contains("%managed = load ptr, ptr @mv, align 8"), "{pick}");
    assert!(pick.contains("phi ptr [ %managed, %a ], [ %other, %entry ]"), "{pick}");
    assert!(pick.contains("ptrtoint ptr %managed1 to i64") && pick.contains("add i64"), "{pick}");
}

/// A host variable initialised with a managed variable's address: `E1020`'s case (the driver
/// places it), the module left for the error.
#[test]
fn a_managed_address_in_a_host_initializer_is_refused() {
    let context = Context::create();
    let module = parse(&context, &format!("{HOST_HEAD}@hp = dso_local global ptr @mv, align 8\n"));
    match managed::host(&module) {
        Err(HostError::AddressInInitializer { holder, variable }) => assert_eq!((holder.as_str(), variable.as_str()), ("hp", "mv")),
        other => panic!("expected the initializer's error, got {other:?}"),
    }
}

/// IR that is not Clang's shape (no registration callback) is an internal error, not a panic.
#[test]
fn host_ir_without_a_registration_callback_is_an_internal_error() {
    let context = Context::create();
    let module = parse(&context, "@mv = global i32 0, section \"cdpc.managed\"\ndefine void @f() {\n  store i32 1, ptr @mv\n  ret void\n}\n");
    assert!(matches!(managed::host(&module), Err(HostError::Internal(_))));
}

/// Clang aligns the host shadow of a 16-byte array to 16 and derives its accesses' alignment
/// from it; the managed memory has the device variable's (4 for `float[4]`, nvcc's `.align
/// 4`), so the accesses through the pointer assume at most the type's natural alignment, as
/// host code compiled by nvcc does through its `float (*)[4]`.
#[test]
fn accesses_through_the_pointer_assume_the_natural_alignment() {
    let context = Context::create();
    let ir = HOST_HEAD.replace("@mv = dso_local global i32 undef, section \"cdpc.managed\", align 4", "@mv = dso_local global [4 x float] undef, section \"cdpc.managed\", align 16")
        + "define <4 x float> @all(ptr %to) {\n  %v = load <4 x float>, ptr @mv, align 16\n  store <4 x float> %v, ptr getelementptr inbounds (i8, ptr @mv, i64 0), align 16\n  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %to, ptr align 16 @mv, i64 16, i1 false)\n  ret <4 x float> %v\n}\ndeclare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n";
    let module = parse(&context, &ir);
    managed::host(&module).unwrap();
    module.verify().unwrap();
    let text = module.print_to_string().to_string();
    let all = function(&text, "all");
    let line = |start: &str| all.lines().map(str::trim).find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no `{start}`:\n{all}"));
    assert!(line("%v = load <4 x float>, ptr %managed").ends_with(", align 4"), "{all}");
    assert!(line("store <4 x float> %v, ptr %managed").ends_with(", align 4"), "{all}");
    let copy = line("call void @llvm.memcpy");
    assert!(copy.contains("(ptr align 16 %to, ptr %managed"), "{all}");
}

/// A constant expression that holds the variable through shared operands (a DAG of 2^60
/// paths) is rewritten in time linear in its size: each constant looked at once.
#[test]
fn shared_constant_operands_are_rewritten_once() {
    let context = Context::create();
    let module = parse(&context, &format!("{HOST_HEAD}define i64 @deep() {{\n  ret i64 0\n}}\n"));
    let mv = module.get_global("mv").unwrap().as_pointer_value();
    let mut c = mv.const_to_int(context.i64_type());
    for _ in 0..60 {
        c = c.const_add(c);
    }
    let ret = module.get_function("deep").unwrap().get_first_basic_block().unwrap().get_terminator().unwrap();
    assert!(ret.set_operand(0, c));
    managed::host(&module).unwrap();
    module.verify().unwrap();
    let deep = function(&module.print_to_string().to_string(), "deep").to_string();
    // One load, one ptrtoint and sixty adds.
    assert_eq!(deep.matches("load ptr, ptr @mv").count(), 1, "{deep}");
    assert_eq!(deep.matches(" = add i64 ").count(), 60, "{deep}");
}
