//! LLVM's math intrinsics that NVPTX cannot select, as calls of libdevice's functions.
//!
//! Front ends other than Clang's CUDA headers write math as LLVM's intrinsics (`llvm.sin.f64`,
//! `llvm.pow.f32`, `llvm.exp.v2f32`): Julia, Numba, Rust and Clang's own `__builtin_tan` do.
//! LLVM 22's NVPTX back end selects some of them (`sqrt`, `fabs`, `floor`, `fma`, `minnum`,
//! `ldexp`, `frexp`, `exp2` of `float`; `sin`, `cos`, `tanh` below `double` as PTX's
//! approximations where the call allows them, `afn`, and `exp2` of `half` and `bfloat` as
//! approximations even where it does not, which this pass takes too) and stops on the rest: "Cannot select"
//! (a fatal error, `E1023`) or "no libcall available" (an error LLVM printed before ending the
//! process), since the target has no math library of its own. nvcc compiles CUDA's math
//! functions as calls of libdevice (`sin(x)` is `__nv_sin(x)`), and so does this pass for the
//! intrinsics NVPTX cannot select ([`needs_libdevice`], measured with LLVM 22.1 on every
//! intrinsic, type and `afn`): `half` and `bfloat` through the `float` function (extended,
//! then rounded back, as LLVM's own legalisation of those types does), vectors lane by lane,
//! `sincos` and `modf` through a local for each result, `lround`/`llround`/`lrint`/`llrint`
//! through libdevice's 64-bit `__nv_llround`/`__nv_llrint`. Other types (`fp128`) are left as
//! they are.
//!
//! Invariant: afterwards no call of an intrinsic of [`TABLE`] remains that [`needs_libdevice`]
//! says NVPTX cannot select, but for types libdevice has no function for; the driver links
//! libdevice when the module then calls it (`driver::ir::link_libdevice`).

use crate::llvm::operand;
use inkwell::builder::Builder;
use inkwell::llvm_sys::core::{LLVMGetTypeKind, LLVMReplaceAllUsesWith};
use inkwell::llvm_sys::LLVMTypeKind;
use inkwell::module::Module;
use inkwell::types::{AsTypeRef, BasicMetadataTypeEnum, BasicTypeEnum, FloatType};
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue};

use super::clone::{callee, position_at_start, users};
use super::emit::{builder_at, element_type, lane_by_lane, ok};

/// What an intrinsic takes and gives, and how libdevice's function does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `T f(T)`.
    Unary,
    /// `T f(T, T)`.
    Binary,
    /// `llvm.powi`: `T f(T, i32)`.
    Powi,
    /// `llvm.sincos`: `{T, T} f(T)`; libdevice's `void f(T, T*, T*)`.
    Sincos,
    /// `llvm.modf`: `{T, T} f(T)` (fraction, integral part); libdevice's `T f(T, T*)`.
    Modf,
    /// `llvm.lround` and the rest: `iN f(T)`; libdevice's `i64 f(T)`.
    ToInteger,
}

/// Where NVPTX (LLVM 22.1) selects an intrinsic itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Selects {
    /// Never: every type needs libdevice.
    Never,
    /// Below `double`, where the call allows approximate functions (`afn`: PTX's `sin.approx`).
    BelowDoubleWithAfn,
    /// For `float` (`ex2.approx.f32`, the instruction libdevice's `__nv_exp2f` is); for `half`
    /// and `bfloat` where the call allows approximate functions: NVPTX's `ex2.approx.f16` and
    /// `.bf16` are a unit in the last place off for 39% and 33% of their inputs, where
    /// `__nv_exp2f` rounded to the type is not (measured on an H200).
    FloatOrWithAfn,
}

/// The intrinsics the pass rewrites: LLVM's name, libdevice's stem (`__nv_<stem>` for
/// `double`, `__nv_<stem>f` for `float`), the shape, where NVPTX selects it.
const TABLE: &[(&str, &str, Shape, Selects)] = &[
    ("sin", "sin", Shape::Unary, Selects::BelowDoubleWithAfn),
    ("cos", "cos", Shape::Unary, Selects::BelowDoubleWithAfn),
    ("tan", "tan", Shape::Unary, Selects::Never),
    ("asin", "asin", Shape::Unary, Selects::Never),
    ("acos", "acos", Shape::Unary, Selects::Never),
    ("atan", "atan", Shape::Unary, Selects::Never),
    ("sinh", "sinh", Shape::Unary, Selects::Never),
    ("cosh", "cosh", Shape::Unary, Selects::Never),
    ("tanh", "tanh", Shape::Unary, Selects::BelowDoubleWithAfn),
    ("exp", "exp", Shape::Unary, Selects::Never),
    ("exp2", "exp2", Shape::Unary, Selects::FloatOrWithAfn),
    ("exp10", "exp10", Shape::Unary, Selects::Never),
    ("log", "log", Shape::Unary, Selects::Never),
    ("log2", "log2", Shape::Unary, Selects::Never),
    ("log10", "log10", Shape::Unary, Selects::Never),
    ("pow", "pow", Shape::Binary, Selects::Never),
    ("atan2", "atan2", Shape::Binary, Selects::Never),
    ("powi", "powi", Shape::Powi, Selects::Never),
    ("sincos", "sincos", Shape::Sincos, Selects::BelowDoubleWithAfn),
    ("modf", "modf", Shape::Modf, Selects::Never),
    ("lround", "llround", Shape::ToInteger, Selects::Never),
    ("llround", "llround", Shape::ToInteger, Selects::Never),
    ("lrint", "llrint", Shape::ToInteger, Selects::Never),
    ("llrint", "llrint", Shape::ToInteger, Selects::Never),
];

/// A floating-point type libdevice has functions for, directly or through `float`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Half,
    BFloat,
    Float,
    Double,
}

fn kind_of(t: BasicTypeEnum<'_>) -> Option<Kind> {
    // SAFETY: a query of a live type.
    match unsafe { LLVMGetTypeKind(element_type(t).as_type_ref()) } {
        LLVMTypeKind::LLVMHalfTypeKind => Some(Kind::Half),
        LLVMTypeKind::LLVMBFloatTypeKind => Some(Kind::BFloat),
        LLVMTypeKind::LLVMFloatTypeKind => Some(Kind::Float),
        LLVMTypeKind::LLVMDoubleTypeKind => Some(Kind::Double),
        _ => None,
    }
}

/// Whether NVPTX cannot select a call of `llvm.<name>` on `kind` (`afn`: the call allows
/// approximate functions).
fn needs_libdevice(selects: Selects, kind: Kind, afn: bool) -> bool {
    match selects {
        Selects::Never => true,
        Selects::BelowDoubleWithAfn => kind == Kind::Double || !afn,
        Selects::FloatOrWithAfn => kind == Kind::Double || (kind != Kind::Float && !afn),
    }
}

/// The intrinsic `f` is, if the pass rewrites it: its row of [`TABLE`] and the floating-point
/// type it computes on (its first parameter's, a vector's element's).
fn row_of(f: FunctionValue<'_>) -> Option<(&'static (&'static str, &'static str, Shape, Selects), Kind)> {
    let name = f.get_name().to_str().ok()?;
    let op = name.strip_prefix("llvm.")?.split('.').next()?;
    let row = TABLE.iter().find(|r| r.0 == op)?;
    let first = f.get_nth_param(0)?.get_type();
    Some((row, kind_of(first)?))
}

/// Rewrites every call of an intrinsic NVPTX cannot select as libdevice's function. Returns
/// whether it wrote a call of libdevice.
pub fn intrinsics_as_libdevice(module: &Module<'_>) -> bool {
    let mut wrote = false;
    let intrinsics: Vec<FunctionValue<'_>> = module.get_functions().filter(|f| f.count_basic_blocks() == 0 && row_of(*f).is_some()).collect();
    for f in intrinsics {
        let Some((&(_, stem, shape, selects), kind)) = row_of(f) else { continue };
        for user in users(f.as_value_ref()).instructions {
            // SAFETY: an instruction of the module.
            let call = unsafe { InstructionValue::new(user) };
            if call.get_opcode() != InstructionOpcode::Call || callee(call) != Some(f) {
                continue;
            }
            let afn = call.get_fast_math_flags().is_ok_and(|flags| flags.contains(inkwell::values::FastMathFlags::ApproxFunc));
            if needs_libdevice(selects, kind, afn) && rewrite(module, call, stem, shape, kind) {
                wrote = true;
            }
        }
        if f.as_global_value().as_pointer_value().get_first_use().is_none() {
            // SAFETY: a declaration nothing uses any more.
            unsafe { f.delete() };
        }
    }
    wrote
}

/// Rewrites every `llvm.canonicalize` NVPTX cannot select (LLVM 22.1: of `bfloat` at every
/// architecture, of vectors of `half` or `bfloat`; "Cannot select: fcanonicalize", `E1023`) as
/// what it selects: a vector lane by lane, `bfloat` through `float` (extended exactly, the
/// `float` canonicalized, rounded back exactly: a canonical `bfloat`, NaNs quieted as
/// `mul.rn.bf16` quiets them). `half` and `float` are left to NVPTX (`mul.rn` by one).
/// Returns whether it rewrote a call.
pub fn canonicalize_as_selected<'ctx>(module: &Module<'ctx>) -> bool {
    let ctx = module.get_context();
    let mut wrote = false;
    let calls: Vec<(FunctionValue<'ctx>, InstructionValue<'ctx>)> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() == 0 && f.get_name().to_str().is_ok_and(|n| n.starts_with("llvm.canonicalize.")))
        .flat_map(|f| users(f.as_value_ref()).instructions.into_iter().map(move |u| (f, u)))
        // SAFETY: an instruction of the module.
        .map(|(f, u)| (f, unsafe { InstructionValue::new(u) }))
        .filter(|&(f, call)| call.get_opcode() == InstructionOpcode::Call && callee(call) == Some(f))
        .collect();
    for (f, call) in calls {
        let Some(x) = operand(call, 0) else { continue };
        let kind = kind_of(x.get_type());
        if !matches!((x.get_type().is_vector_type(), kind), (true, Some(Kind::Half | Kind::BFloat)) | (false, Some(Kind::BFloat))) {
            continue;
        }
        let b = builder_at(call);
        let f32t = ctx.f32_type();
        let selected = |t: FloatType<'ctx>| -> FunctionValue<'ctx> {
            let name = if kind == Some(Kind::Half) { "llvm.canonicalize.f16" } else { "llvm.canonicalize.f32" };
            module.get_function(name).unwrap_or_else(|| module.add_function(name, t.fn_type(&[t.into()], false), None))
        };
        let one = |v: BasicValueEnum<'ctx>| -> BasicValueEnum<'ctx> {
            match kind {
                Some(Kind::Half) => call_value(&b, selected(v.get_type().into_float_type()), &[v.into()]),
                _ => {
                    let wide = ok(b.build_float_ext(v.into_float_value(), f32t, ""));
                    let c = call_value(&b, selected(f32t), &[wide.into()]);
                    ok(b.build_float_trunc(c.into_float_value(), v.get_type().into_float_type(), "")).into()
                }
            }
        };
        let result: BasicValueEnum<'ctx> = match x {
            BasicValueEnum::VectorValue(v) => lane_by_lane(&b, v, v.get_type(), one).into(),
            _ => one(x),
        };
        // SAFETY: the call and its replacement are live values of the same type.
        unsafe { LLVMReplaceAllUsesWith(call.as_value_ref(), result.as_value_ref()) };
        call.erase_from_basic_block();
        wrote = true;
        if f.as_global_value().as_pointer_value().get_first_use().is_none() {
            // SAFETY: a declaration nothing uses any more.
            unsafe { f.delete() };
        }
    }
    wrote
}

/// libdevice's function `name` of type `ty`, declared where the module has none; `None` where
/// the module has one of another type (its own function of that name: left alone).
fn libdevice_function<'ctx>(module: &Module<'ctx>, name: &str, ty: inkwell::types::FunctionType<'ctx>) -> Option<FunctionValue<'ctx>> {
    match module.get_function(name) {
        Some(existing) => (existing.get_type() == ty).then_some(existing),
        None => Some(module.add_function(name, ty, None)),
    }
}

/// One call's rewrite at the call; false where the module holds another function of
/// libdevice's name (the call is left as it is).
fn rewrite<'ctx>(module: &Module<'ctx>, call: InstructionValue<'ctx>, stem: &str, shape: Shape, kind: Kind) -> bool {
    let ctx = module.get_context();
    let (compute, name) = match kind {
        Kind::Double => (ctx.f64_type(), format!("__nv_{stem}")),
        _ => (ctx.f32_type(), format!("__nv_{stem}f")),
    };
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let i32t = ctx.i32_type();
    let i64t = ctx.i64_type();
    let c: BasicMetadataTypeEnum = compute.into();
    let ty = match shape {
        Shape::Unary => compute.fn_type(&[c], false),
        Shape::Binary => compute.fn_type(&[c, c], false),
        Shape::Powi => compute.fn_type(&[c, i32t.into()], false),
        Shape::Sincos => ctx.void_type().fn_type(&[c, ptr.into(), ptr.into()], false),
        Shape::Modf => compute.fn_type(&[c, ptr.into()], false),
        Shape::ToInteger => i64t.fn_type(&[c], false),
    };
    let Some(function) = libdevice_function(module, &name, ty) else { return false };
    let b = builder_at(call);
    // A call's operands are its arguments, then the callee.
    let args: Vec<BasicValueEnum<'ctx>> = (0..call.get_num_operands() - 1).map(|i| operand(call, i).expect("an argument")).collect();
    let lanes = match args[0].get_type() {
        BasicTypeEnum::VectorType(v) => Some(v.get_size()),
        _ => None,
    };
    // What the intrinsic returns: the argument's type, a pair of it, or integers.
    let returned = call.get_type();
    let scalar = |v: BasicValueEnum<'ctx>, lane: Option<u32>| match lane {
        Some(l) => ok(b.build_extract_element(v.into_vector_value(), i32t.const_int(u64::from(l), false), "")),
        None => v,
    };
    let entry = call.get_parent().and_then(|bb| bb.get_parent()).and_then(|f| f.get_first_basic_block()).expect("a call in a function");
    // libdevice's results through memory: sincos's two, modf's integral part.
    let locals = (shape == Shape::Sincos || shape == Shape::Modf).then(|| {
        let at = ctx.create_builder();
        position_at_start(&at, entry);
        (ok(at.build_alloca(compute, "")), (shape == Shape::Sincos).then(|| ok(at.build_alloca(compute, ""))))
    });
    let one_lane = |lane: Option<u32>| -> (BasicValueEnum<'ctx>, Option<BasicValueEnum<'ctx>>) {
        let x = widen(&b, scalar(args[0], lane), kind, compute);
        let results: (BasicValueEnum<'ctx>, Option<BasicValueEnum<'ctx>>) = match shape {
            Shape::Unary => (call_value(&b, function, &[x.into()]), None),
            Shape::Binary => (call_value(&b, function, &[x.into(), widen(&b, scalar(args[1], lane), kind, compute).into()]), None),
            Shape::Powi => (call_value(&b, function, &[x.into(), args[1].into()]), None),
            Shape::Sincos => {
                let (s, c) = locals.expect("locals for sincos");
                let c = c.expect("a second local for sincos");
                ok(b.build_call(function, &[x.into(), s.into(), c.into()], ""));
                (ok(b.build_load(compute, s, "")), Some(ok(b.build_load(compute, c, ""))))
            }
            Shape::Modf => {
                let (i, _) = locals.expect("a local for modf");
                let fraction = call_value(&b, function, &[x.into(), i.into()]);
                (fraction, Some(ok(b.build_load(compute, i, ""))))
            }
            Shape::ToInteger => (call_value(&b, function, &[x.into()]), None),
        };
        match shape {
            Shape::ToInteger => {
                let element = match returned {
                    inkwell::types::AnyTypeEnum::VectorType(v) => v.get_element_type().into_int_type(),
                    other => other.into_int_type(),
                };
                let wide = results.0.into_int_value();
                let value = match element.get_bit_width().cmp(&64) {
                    std::cmp::Ordering::Less => ok(b.build_int_truncate(wide, element, "")),
                    std::cmp::Ordering::Greater => ok(b.build_int_s_extend(wide, element, "")),
                    std::cmp::Ordering::Equal => wide,
                };
                (value.into(), None)
            }
            _ => (narrow(&b, results.0, kind, args[0].get_type()), results.1.map(|r| narrow(&b, r, kind, args[0].get_type()))),
        }
    };
    let (first, second) = match lanes {
        None => one_lane(None),
        Some(n) => {
            let element_of = |t: inkwell::types::AnyTypeEnum<'ctx>| -> inkwell::types::VectorType<'ctx> {
                match t {
                    inkwell::types::AnyTypeEnum::VectorType(v) => v,
                    inkwell::types::AnyTypeEnum::StructType(s) => s.get_field_type_at_index(0).expect("a field").into_vector_type(),
                    _ => unreachable!("a vector intrinsic returns vectors"),
                }
            };
            let vector = element_of(returned);
            let mut a = vector.get_undef();
            let mut second = (shape == Shape::Sincos || shape == Shape::Modf).then(|| vector.get_undef());
            for lane in 0..n {
                let index = i32t.const_int(u64::from(lane), false);
                let (x, y) = one_lane(Some(lane));
                a = ok(b.build_insert_element(a, x, index, ""));
                if let (Some(s), Some(y)) = (second, y) {
                    second = Some(ok(b.build_insert_element(s, y, index, "")));
                }
            }
            (a.into(), second.map(Into::into))
        }
    };
    let result: BasicValueEnum<'ctx> = match second {
        None => first,
        Some(second) => {
            let pair = returned.into_struct_type();
            let with_first = ok(b.build_insert_value(pair.get_undef(), first, 0, ""));
            ok(b.build_insert_value(with_first, second, 1, "")).into_struct_value().into()
        }
    };
    // SAFETY: the call and its replacement are live values of the same type.
    unsafe { LLVMReplaceAllUsesWith(call.as_value_ref(), result.as_value_ref()) };
    call.erase_from_basic_block();
    true
}

/// The call's value.
fn call_value<'ctx>(b: &Builder<'ctx>, f: FunctionValue<'ctx>, args: &[inkwell::values::BasicMetadataValueEnum<'ctx>]) -> BasicValueEnum<'ctx> {
    let call: CallSiteValue<'ctx> = ok(b.build_call(f, args, ""));
    call.try_as_basic_value().basic().expect("libdevice's function returns a value")
}

/// `x` of `kind` in the type libdevice computes in (`half` and `bfloat` extended to `float`).
fn widen<'ctx>(b: &Builder<'ctx>, x: BasicValueEnum<'ctx>, kind: Kind, compute: FloatType<'ctx>) -> inkwell::values::FloatValue<'ctx> {
    match kind {
        Kind::Half | Kind::BFloat => ok(b.build_float_ext(x.into_float_value(), compute, "")),
        Kind::Float | Kind::Double => x.into_float_value(),
    }
}

/// libdevice's result `r` back in the type of the argument `like` (a vector's element).
fn narrow<'ctx>(b: &Builder<'ctx>, r: BasicValueEnum<'ctx>, kind: Kind, like: BasicTypeEnum<'ctx>) -> BasicValueEnum<'ctx> {
    match kind {
        Kind::Half | Kind::BFloat => ok(b.build_float_trunc(r.into_float_value(), element_type(like).into_float_type(), "")).into(),
        Kind::Float | Kind::Double => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    fn rewritten(ir: &str) -> (bool, String) {
        let ctx = Context::create();
        let module = ctx.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t")).unwrap();
        let wrote = intrinsics_as_libdevice(&module);
        module.verify().unwrap_or_else(|e| panic!("{e}\n{}", module.print_to_string()));
        (wrote, module.print_to_string().to_string())
    }

    fn kernel(decl: &str, body: &str) -> String {
        format!("target triple = \"nvptx64-nvidia-cuda\"\n{decl}\ndefine void @k(ptr %p) {{\n{body}\n  ret void\n}}\n")
    }

    #[test]
    fn double_and_float_call_libdevice() {
        let (wrote, ir) = rewritten(&kernel(
            "declare double @llvm.cos.f64(double)\ndeclare float @llvm.pow.f32(float, float)",
            "  %a = load double, ptr %p\n  %c = call double @llvm.cos.f64(double %a)\n  store double %c, ptr %p\n  %f = load float, ptr %p\n  %w = call float @llvm.pow.f32(float %f, float 2.0)\n  store float %w, ptr %p",
        ));
        assert!(wrote);
        assert!(ir.contains("call double @__nv_cos(double %a)") && ir.contains("call float @__nv_powf(float %f, float 2.000000e+00)"), "{ir}");
        assert!(!ir.contains("@llvm.cos") && !ir.contains("@llvm.pow"), "{ir}");
    }

    #[test]
    fn what_nvptx_selects_is_left_alone() {
        let (wrote, ir) = rewritten(&kernel(
            "declare float @llvm.sin.f32(float)\ndeclare float @llvm.exp2.f32(float)\ndeclare double @llvm.sqrt.f64(double)",
            "  %f = load float, ptr %p\n  %s = call afn float @llvm.sin.f32(float %f)\n  %e = call float @llvm.exp2.f32(float %s)\n  store float %e, ptr %p\n  %d = load double, ptr %p\n  %q = call double @llvm.sqrt.f64(double %d)\n  store double %q, ptr %p",
        ));
        assert!(!wrote, "{ir}");
        assert!(ir.contains("call afn float @llvm.sin.f32") && ir.contains("@llvm.exp2.f32") && ir.contains("@llvm.sqrt.f64"), "{ir}");
    }

    #[test]
    fn half_goes_through_float_and_vectors_lane_by_lane() {
        let (_, ir) = rewritten(&kernel(
            "declare half @llvm.log.f16(half)\ndeclare <2 x double> @llvm.tan.v2f64(<2 x double>)",
            "  %h = load half, ptr %p\n  %l = call half @llvm.log.f16(half %h)\n  store half %l, ptr %p\n  %v = load <2 x double>, ptr %p\n  %t = call <2 x double> @llvm.tan.v2f64(<2 x double> %v)\n  store <2 x double> %t, ptr %p",
        ));
        assert!(ir.contains("fpext half %h to float") && ir.contains("call float @__nv_logf(") && ir.contains("fptrunc float"), "{ir}");
        assert_eq!(ir.matches("call double @__nv_tan(").count(), 2, "{ir}");
    }

    #[test]
    fn pairs_and_integers_take_libdevices_forms() {
        let (_, ir) = rewritten(&kernel(
            "declare { double, double } @llvm.sincos.f64(double)\ndeclare { float, float } @llvm.modf.f32(float)\ndeclare i32 @llvm.lround.i32.f64(double)\ndeclare float @llvm.powi.f32.i32(float, i32)",
            "  %d = load double, ptr %p\n  %sc = call { double, double } @llvm.sincos.f64(double %d)\n  %c = extractvalue { double, double } %sc, 1\n  store double %c, ptr %p\n  %f = load float, ptr %p\n  %m = call { float, float } @llvm.modf.f32(float %f)\n  %i = extractvalue { float, float } %m, 1\n  store float %i, ptr %p\n  %r = call i32 @llvm.lround.i32.f64(double %d)\n  store i32 %r, ptr %p\n  %w = call float @llvm.powi.f32.i32(float %f, i32 3)\n  store float %w, ptr %p",
        ));
        assert!(ir.contains("call void @__nv_sincos(double %d, ptr"), "{ir}");
        assert!(ir.contains("call float @__nv_modff(float %f, ptr"), "{ir}");
        assert!(ir.contains("call i64 @__nv_llround(double %d)") && ir.contains("trunc i64"), "{ir}");
        assert!(ir.contains("call float @__nv_powif(float %f, i32 3)"), "{ir}");
    }

    #[test]
    fn types_libdevice_lacks_and_own_functions_of_its_names_are_left_alone() {
        let (wrote, ir) = rewritten(&kernel(
            "declare fp128 @llvm.sin.f128(fp128)\ndeclare double @llvm.exp.f64(double)\ndefine i32 @__nv_exp(i32 %x) {\n  ret i32 %x\n}",
            "  %q = load fp128, ptr %p\n  %s = call fp128 @llvm.sin.f128(fp128 %q)\n  store fp128 %s, ptr %p\n  %d = load double, ptr %p\n  %e = call double @llvm.exp.f64(double %d)\n  store double %e, ptr %p",
        ));
        assert!(!wrote);
        assert!(ir.contains("@llvm.sin.f128") && ir.contains("@llvm.exp.f64(double %d)"), "{ir}");
    }

    #[test]
    fn canonicalize_nvptx_cannot_select_goes_through_float_and_lane_by_lane() {
        let ctx = Context::create();
        let ir = kernel(
            "declare bfloat @llvm.canonicalize.bf16(bfloat)\ndeclare <2 x half> @llvm.canonicalize.v2f16(<2 x half>)\ndeclare half @llvm.canonicalize.f16(half)\ndeclare float @llvm.canonicalize.f32(float)",
            "  %b = load bfloat, ptr %p\n  %cb = call bfloat @llvm.canonicalize.bf16(bfloat %b)\n  store bfloat %cb, ptr %p\n  %v = load <2 x half>, ptr %p\n  %cv = call <2 x half> @llvm.canonicalize.v2f16(<2 x half> %v)\n  store <2 x half> %cv, ptr %p\n  %h = load half, ptr %p\n  %ch = call half @llvm.canonicalize.f16(half %h)\n  store half %ch, ptr %p\n  %f = load float, ptr %p\n  %cf = call float @llvm.canonicalize.f32(float %f)\n  store float %cf, ptr %p",
        );
        let module = ctx.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t")).unwrap();
        assert!(canonicalize_as_selected(&module));
        module.verify().unwrap_or_else(|e| panic!("{e}\n{}", module.print_to_string()));
        let out = module.print_to_string().to_string();
        assert!(!out.contains("@llvm.canonicalize.bf16") && !out.contains("@llvm.canonicalize.v2f16"), "{out}");
        assert!(out.contains("fpext bfloat %b to float") && out.contains("fptrunc float"), "{out}");
        // The two lanes of the vector and the scalar half: three calls of NVPTX's half form;
        // the bfloat's and the float's: two of the float form.
        assert_eq!(out.matches("call half @llvm.canonicalize.f16").count(), 3, "{out}");
        assert_eq!(out.matches("call float @llvm.canonicalize.f32").count(), 2, "{out}");
        // Nothing else to do a second time.
        assert!(!canonicalize_as_selected(&module));
    }
}
