//! Calls of CUDA's built-in device functions and of the device runtime API.
//!
//! The atomic functions carry their scope, `_block` or `_system` (`hir::AtomicScope`), which
//! `front/cdp/codegen/builtins.rs` writes as nvcc's instruction of that scope (`scoped_atomic`).

use super::expr::{make, plural};
use super::Context;
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, AtomicOp, AtomicScope, Builtin, ExprKind, MathFn, RuntimeFn};
use crate::front::cdp::syntax::ast;
use crate::types::{FloatKind, IntKind, Type};
use runtime_shim::entry_points::CType;

/// Every built-in function name, for "did you mean" suggestions.
pub(super) const BUILTIN_NAMES: &[&str] = &[
    "__syncthreads",
    "__threadfence",
    "__threadfence_block",
    "atomicAdd",
    "atomicSub",
    "atomicExch",
    "atomicMin",
    "atomicMax",
    "atomicInc",
    "atomicDec",
    "atomicCAS",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
    "printf",
    "__isGlobal",
    "clock64",
    "min",
    "max",
    "abs",
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaStreamCreateWithFlags",
    "cudaStreamDestroy",
    "cudaEventCreateWithFlags",
    "cudaEventRecord",
    "cudaStreamWaitEvent",
    "cudaEventDestroy",
    "cudaMalloc",
    "cudaFree",
    "cudaGetDevice",
    "cudaDeviceGetAttribute",
    "cudaGetErrorString",
    "cudaGetErrorName",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "cudaGraphLaunch",
    "sqrtf",
    "expf",
    "logf",
    "sinf",
    "cosf",
    "powf",
    "malloc",
    "free",
];

/// CUDA's floating-point intrinsics (the programming guide's "Intrinsic Functions"), as the
/// libdevice function each is (`__nv_<name>`), its arity and whether it is `float` (else
/// `double`): the rounding-mode arithmetic and the fast approximations nvcc writes for them.
const FLOAT_INTRINSICS: &[(&str, &str, usize, bool)] = &[
    ("__fadd_rd", "fadd_rd", 2, true),
    ("__fadd_rn", "fadd_rn", 2, true),
    ("__fadd_ru", "fadd_ru", 2, true),
    ("__fadd_rz", "fadd_rz", 2, true),
    ("__fsub_rd", "fsub_rd", 2, true),
    ("__fsub_rn", "fsub_rn", 2, true),
    ("__fsub_ru", "fsub_ru", 2, true),
    ("__fsub_rz", "fsub_rz", 2, true),
    ("__fmul_rd", "fmul_rd", 2, true),
    ("__fmul_rn", "fmul_rn", 2, true),
    ("__fmul_ru", "fmul_ru", 2, true),
    ("__fmul_rz", "fmul_rz", 2, true),
    ("__fdiv_rd", "fdiv_rd", 2, true),
    ("__fdiv_rn", "fdiv_rn", 2, true),
    ("__fdiv_ru", "fdiv_ru", 2, true),
    ("__fdiv_rz", "fdiv_rz", 2, true),
    ("__fmaf_rd", "fmaf_rd", 3, true),
    ("__fmaf_rn", "fmaf_rn", 3, true),
    ("__fmaf_ru", "fmaf_ru", 3, true),
    ("__fmaf_rz", "fmaf_rz", 3, true),
    ("__frcp_rd", "frcp_rd", 1, true),
    ("__frcp_rn", "frcp_rn", 1, true),
    ("__frcp_ru", "frcp_ru", 1, true),
    ("__frcp_rz", "frcp_rz", 1, true),
    ("__fsqrt_rd", "fsqrt_rd", 1, true),
    ("__fsqrt_rn", "fsqrt_rn", 1, true),
    ("__fsqrt_ru", "fsqrt_ru", 1, true),
    ("__fsqrt_rz", "fsqrt_rz", 1, true),
    ("__frsqrt_rn", "frsqrt_rn", 1, true),
    ("__saturatef", "saturatef", 1, true),
    ("__fdividef", "fast_fdividef", 2, true),
    ("__expf", "fast_expf", 1, true),
    ("__exp10f", "fast_exp10f", 1, true),
    ("__logf", "fast_logf", 1, true),
    ("__log2f", "fast_log2f", 1, true),
    ("__log10f", "fast_log10f", 1, true),
    ("__sinf", "fast_sinf", 1, true),
    ("__cosf", "fast_cosf", 1, true),
    ("__tanf", "fast_tanf", 1, true),
    ("__powf", "fast_powf", 2, true),
    ("__dadd_rd", "dadd_rd", 2, false),
    ("__dadd_rn", "dadd_rn", 2, false),
    ("__dadd_ru", "dadd_ru", 2, false),
    ("__dadd_rz", "dadd_rz", 2, false),
    ("__dsub_rd", "dsub_rd", 2, false),
    ("__dsub_rn", "dsub_rn", 2, false),
    ("__dsub_ru", "dsub_ru", 2, false),
    ("__dsub_rz", "dsub_rz", 2, false),
    ("__dmul_rd", "dmul_rd", 2, false),
    ("__dmul_rn", "dmul_rn", 2, false),
    ("__dmul_ru", "dmul_ru", 2, false),
    ("__dmul_rz", "dmul_rz", 2, false),
    ("__ddiv_rd", "ddiv_rd", 2, false),
    ("__ddiv_rn", "ddiv_rn", 2, false),
    ("__ddiv_ru", "ddiv_ru", 2, false),
    ("__ddiv_rz", "ddiv_rz", 2, false),
    ("__fma_rd", "fma_rd", 3, false),
    ("__fma_rn", "fma_rn", 3, false),
    ("__fma_ru", "fma_ru", 3, false),
    ("__fma_rz", "fma_rz", 3, false),
    ("__drcp_rd", "drcp_rd", 1, false),
    ("__drcp_rn", "drcp_rn", 1, false),
    ("__drcp_ru", "drcp_ru", 1, false),
    ("__drcp_rz", "drcp_rz", 1, false),
    ("__dsqrt_rd", "dsqrt_rd", 1, false),
    ("__dsqrt_rn", "dsqrt_rn", 1, false),
    ("__dsqrt_ru", "dsqrt_ru", 1, false),
    ("__dsqrt_rz", "dsqrt_rz", 1, false),
];

/// Math functions by name: the C name gives the double version, `f` the float one.
const MATH: &[(&str, MathFn, usize)] = &[
    ("sqrt", MathFn::Sqrt, 1),
    ("rsqrt", MathFn::Rsqrt, 1),
    ("fabs", MathFn::Fabs, 1),
    ("floor", MathFn::Floor, 1),
    ("ceil", MathFn::Ceil, 1),
    ("trunc", MathFn::Trunc, 1),
    ("round", MathFn::Round, 1),
    ("exp", MathFn::Exp, 1),
    ("exp2", MathFn::Exp2, 1),
    ("log", MathFn::Log, 1),
    ("log2", MathFn::Log2, 1),
    ("log10", MathFn::Log10, 1),
    ("sin", MathFn::Sin, 1),
    ("cos", MathFn::Cos, 1),
    ("tan", MathFn::Tan, 1),
    ("pow", MathFn::Pow, 2),
    ("fmin", MathFn::Fmin, 2),
    ("fmax", MathFn::Fmax, 2),
    ("fma", MathFn::Fma, 3),
    ("fmod", MathFn::Fmod, 2),
    ("atan2", MathFn::Atan2, 2),
];

/// The value types CUDA declares each atomic for (sm_60 and newer).
fn atomic_types(op: AtomicOp) -> &'static [Type] {
    use IntKind::*;
    const I: Type = Type::Int(Int);
    const U: Type = Type::Int(UInt);
    const ULL: Type = Type::Int(ULongLong);
    const LL: Type = Type::Int(LongLong);
    const F: Type = Type::Float(FloatKind::Float);
    const D: Type = Type::Float(FloatKind::Double);
    match op {
        AtomicOp::Add => &[I, U, ULL, F, D],
        AtomicOp::Sub => &[I, U],
        AtomicOp::Exch => &[I, U, ULL, F],
        AtomicOp::Min | AtomicOp::Max => &[I, U, LL, ULL],
        AtomicOp::Inc | AtomicOp::Dec => &[U],
        AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => &[I, U, ULL],
        AtomicOp::Cas => &[I, U, ULL],
    }
}

impl Context {
    pub(super) fn builtin_call(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let n = name.name.as_str();
        let simple = |builtin: Builtin| Some((builtin, Type::Void));
        let (builtin, ty) = match n {
            "__syncthreads" => simple(Builtin::SyncThreads)?,
            "__threadfence" => simple(Builtin::ThreadFence)?,
            "__threadfence_block" => simple(Builtin::ThreadFenceBlock)?,
            "clock64" => (Builtin::Clock64, Type::LONGLONG),
            "printf" => return self.printf(args, span),
            "malloc" => {
                self.expect_arity(name, args, 1, span)?;
                let size = self.expr(&args[0])?;
                let size = self.coerce(size, &Type::size_t(), Code::TypeMismatch, "`malloc` takes a size")?;
                return Some(make(ExprKind::Builtin { builtin: Builtin::Malloc, args: vec![size] }, Type::pointer_to(Type::Void), span));
            }
            "free" => {
                self.expect_arity(name, args, 1, span)?;
                let p = self.expr(&args[0])?;
                let p = self.rvalue(p);
                let p = self.coerce(p, &Type::pointer_to(Type::Void), Code::TypeMismatch, "`free` takes a pointer")?;
                return Some(make(ExprKind::Builtin { builtin: Builtin::Free, args: vec![p] }, Type::Void, span));
            }
            "__isGlobal" => {
                self.expect_arity(name, args, 1, span)?;
                let p = self.expr(&args[0])?;
                let p = self.rvalue(p);
                let p = self.coerce(p, &Type::const_pointer_to(Type::Void), Code::TypeMismatch, "`__isGlobal` takes a pointer")?;
                return Some(make(ExprKind::Builtin { builtin: Builtin::IsGlobal, args: vec![p] }, Type::UINT, span));
            }
            "min" | "max" => return self.min_max(name, args, span),
            "abs" => {
                self.expect_arity(name, args, 1, span)?;
                let v = self.expr(&args[0])?;
                let v = self.rvalue(v);
                if !v.ty.is_arithmetic() {
                    let message = format!("`abs` takes a number, found {}", self.show(&v.ty));
                    self.error(Code::TypeMismatch, v.span, message).emit();
                    return None;
                }
                let ty = self.promote(&v.ty);
                let v = self.cast(v, &ty);
                return Some(make(ExprKind::Builtin { builtin: Builtin::Abs, args: vec![v] }, ty, span));
            }
            "cudaDeviceSynchronize" => {
                // The same words as CUDA C++'s (clang/diagnostics.rs).
                use crate::diag::words;
                self.error(Code::DeviceSynchronizeRemoved, span, words::DEVICE_SYNCHRONIZE).primary(words::DEVICE_SYNCHRONIZE_LABEL).note(words::DEVICE_SYNCHRONIZE_NOTE).emit();
                return None;
            }
            _ => {
                if let Some((op, scope)) = atomic_op(n) {
                    return self.atomic(name, op, scope, args, span);
                }
                if let Some(f) = RuntimeFn::from_c_name(n) {
                    // `--default-stream per-thread`: the header's `__CUDART_API_PTSZ` renaming.
                    let f = match self.target.default_stream {
                        crate::target::DefaultStream::PerThread => f.per_thread_variant().unwrap_or(f),
                        crate::target::DefaultStream::Legacy => f,
                    };
                    return self.runtime_call(f, name, args, span);
                }
                if let Some(e) = self.math_call(name, args, span) {
                    return e;
                }
                if let Some(e) = self.intrinsic_call(name, args, span) {
                    return e;
                }
                if let Some(e) = self.vector_call(name, args, span) {
                    return e;
                }
                if self.skipped_use(n, name.span) {
                    return None;
                }
                let mut builder = self.error(Code::UnknownName, name.span, format!("cannot find function `{n}`")).primary("not declared");
                if let Some(similar) = BUILTIN_NAMES.iter().find(|b| b.eq_ignore_ascii_case(n)) {
                    builder = builder.note(format!("did you mean `{similar}`?"));
                }
                builder.emit();
                return None;
            }
        };
        self.expect_arity(name, args, 0, span)?;
        Some(make(ExprKind::Builtin { builtin, args: vec![] }, ty, span))
    }

    pub(super) fn expect_arity(&mut self, name: &ast::Ident, args: &[ast::Expr], n: usize, span: Span) -> Option<()> {
        if args.len() == n {
            return Some(());
        }
        self.error(Code::CallArity, span, format!("`{}` takes {n} argument{}, but {} were given", name.name, plural(n), args.len())).emit();
        None
    }

    /// printf: a format string, then C's default argument promotions (float to double, small
    /// integers to int), which is what vprintf's argument buffer expects.
    fn printf(&mut self, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let Some(format) = args.first() else {
            self.error(Code::CallArity, span, "`printf` needs a format string").emit();
            return None;
        };
        let mut checked = Vec::new();
        let f = self.expr(format)?;
        let f = self.rvalue(f);
        if !matches!(&f.ty, Type::Pointer { pointee, .. } if matches!(**pointee, Type::Int(IntKind::Char))) {
            let message = format!("the first argument of `printf` must be a format string, found {}", self.show(&f.ty));
            self.error(Code::TypeMismatch, f.span, message).emit();
            return None;
        }
        checked.push(self.cast(f, &Type::const_pointer_to(Type::CHAR)));
        let mut failed = false;
        for a in &args[1..] {
            let Some(e) = self.expr(a) else {
                failed = true;
                continue;
            };
            let e = self.rvalue(e);
            let promoted = match &e.ty {
                Type::Float(_) => Type::DOUBLE,
                t if t.is_integer() => self.promote(t),
                t if t.is_pointer_like() => t.clone(),
                other => {
                    let message = format!("`printf` cannot print a value of type {}", self.show(other));
                    self.error(Code::TypeMismatch, e.span, message).emit();
                    failed = true;
                    continue;
                }
            };
            checked.push(self.cast(e, &promoted));
        }
        if failed {
            return None;
        }
        Some(make(ExprKind::Builtin { builtin: Builtin::Printf, args: checked }, Type::INT, span))
    }

    fn min_max(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        self.expect_arity(name, args, 2, span)?;
        let (a, b) = (self.expr(&args[0]), self.expr(&args[1]));
        let (a, b) = (self.rvalue(a?), self.rvalue(b?));
        if !a.ty.is_arithmetic() || !b.ty.is_arithmetic() {
            let message = format!("`{}` takes two numbers, found {} and {}", name.name, self.show(&a.ty), self.show(&b.ty));
            self.error(Code::TypeMismatch, span, message).emit();
            return None;
        }
        let ty = self.usual_arithmetic(&a.ty, &b.ty);
        let (a, b) = (self.cast(a, &ty), self.cast(b, &ty));
        let builtin = if name.name == "min" { Builtin::Min } else { Builtin::Max };
        Some(make(ExprKind::Builtin { builtin, args: vec![a, b] }, ty, span))
    }

    fn atomic(&mut self, name: &ast::Ident, op: AtomicOp, scope: AtomicScope, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let arity = if op == AtomicOp::Cas { 3 } else { 2 };
        self.expect_arity(name, args, arity, span)?;
        let p = self.expr(&args[0])?;
        let p = self.rvalue(p);
        let allowed = atomic_types(op);
        let value_type = match &p.ty {
            Type::Pointer { pointee, pointee_const: false, pointee_volatile: false } if allowed.contains(pointee) => (**pointee).clone(),
            other => {
                let names: Vec<String> = allowed.iter().map(|t| self.show(t)).collect();
                let message = format!("`{}` does not take {}", name.name, self.show(other));
                self.error(Code::TypeMismatch, p.span, message).note(format!("`{}` takes a pointer to one of: {}", name.name, names.join(", "))).emit();
                return None;
            }
        };
        let mut checked = vec![p];
        for a in &args[1..] {
            let v = self.expr(a)?;
            checked.push(self.coerce(v, &value_type, Code::TypeMismatch, "atomic operand has the wrong type")?);
        }
        Some(make(ExprKind::Builtin { builtin: Builtin::Atomic(op, scope), args: checked }, value_type, span))
    }

    /// `Some(result)` when `name` is a math function.
    fn math_call(&mut self, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<Option<hir::Expr>> {
        let n = name.name.as_str();
        if let Some(&(_, libdevice, arity, single)) = FLOAT_INTRINSICS.iter().find(|(cuda, ..)| *cuda == n) {
            return Some(self.float_intrinsic_call(name, libdevice, arity, if single { Type::FLOAT } else { Type::DOUBLE }, args, span));
        }
        let (base, single_name) = match n.strip_suffix('f') {
            Some(base) if MATH.iter().any(|(m, ..)| *m == base) => (base, true),
            _ => (n, false),
        };
        let &(_, f, arity) = MATH.iter().find(|(m, ..)| *m == base)?;
        let Some(values) = self.numeric_args(name, args, arity, span) else { return Some(None) };
        // `sqrtf` is float; `sqrt` is double unless every argument is float (C++'s overloads).
        let all_float = values.iter().all(|v| v.ty == Type::FLOAT);
        let ty = if single_name || all_float { Type::FLOAT } else { Type::DOUBLE };
        let values = values.into_iter().map(|v| self.cast(v, &ty)).collect();
        Some(Some(make(ExprKind::Builtin { builtin: Builtin::Math(f), args: values }, ty, span)))
    }

    /// A floating-point intrinsic of [`FLOAT_INTRINSICS`]: its arguments converted to its type, as
    /// CUDA's declarations convert them.
    fn float_intrinsic_call(&mut self, name: &ast::Ident, libdevice: &'static str, arity: usize, ty: Type, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let values = self.numeric_args(name, args, arity, span)?;
        let values = values.into_iter().map(|v| self.cast(v, &ty)).collect();
        Some(make(ExprKind::Builtin { builtin: Builtin::FloatIntrinsic(libdevice), args: values }, ty, span))
    }

    /// The `arity` arguments of the math function or intrinsic `name` as rvalues, each a number
    /// (else a `TypeMismatch` at it).
    fn numeric_args(&mut self, name: &ast::Ident, args: &[ast::Expr], arity: usize, span: Span) -> Option<Vec<hir::Expr>> {
        self.expect_arity(name, args, arity, span)?;
        let mut values = Vec::new();
        for a in args {
            let v = self.expr(a)?;
            let v = self.rvalue(v);
            if !v.ty.is_arithmetic() {
                let message = format!("`{}` takes numbers, found {}", name.name, self.show(&v.ty));
                self.error(Code::TypeMismatch, v.span, message).emit();
                return None;
            }
            values.push(v);
        }
        Some(values)
    }

    fn runtime_call(&mut self, f: RuntimeFn, name: &ast::Ident, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let entry = f.entry_point();
        self.expect_arity(name, args, entry.params.len(), span)?;
        self.check_runtime_arch(f, span)?;
        let mut checked = Vec::new();
        for (i, (a, (param, ctype))) in args.iter().zip(entry.params).enumerate() {
            if f.kernel_param() == Some(i) {
                if let Some(kernel) = self.kernel_address(a, *ctype) {
                    checked.push(kernel);
                    continue;
                }
            }
            let e = self.expr(a)?;
            let e = self.rvalue(e);
            let e = if *ctype == CType::VoidPtrPtr {
                // cuda_runtime.h's `template <class T> cudaMalloc(T **, size_t)` takes any `T **`.
                if matches!(&e.ty, Type::Pointer { pointee, pointee_const: false, pointee_volatile: false } if pointee.is_pointer()) {
                    self.cast(e, &Type::pointer_to(Type::pointer_to(Type::Void)))
                } else {
                    let message = format!("`{}`: `{param}` must be the address of a pointer, found {}", entry.c_name, self.show(&e.ty));
                    self.error(Code::TypeMismatch, e.span, message).emit();
                    return None;
                }
            } else {
                let ty = self.c_type(*ctype);
                self.coerce(e, &ty, Code::TypeMismatch, &format!("`{}`: argument `{param}` has the wrong type", entry.c_name))?
            };
            checked.push(e);
        }
        self.check_required_flag(f, &checked, span);
        self.check_graph_streams(f, &checked, span)?;
        if f.missing_from_libcudadevrt() {
            self.error(Code::NotInDeviceRuntimeLibrary, name.span, format!("libcudadevrt does not define `{}`", entry.ptx_symbol))
                .primary("declared by cuda_device_runtime_api.h, but linking will fail")
                .note("CUDA 13.5's libcudadevrt.a has no such symbol, so nvlink reports an undefined reference (for nvcc's code as well); PTX output is unaffected")
                .emit();
        }
        let ty = match entry.ret {
            Some(ret) => self.c_type(ret),
            None => Type::Void,
        };
        Some(make(ExprKind::Builtin { builtin: Builtin::Runtime(f), args: checked }, ty, span))
    }

    /// A kernel named where the runtime takes `const void *func` (`cudaFuncGetAttributes(&a,
    /// (const void *)kernel)`, or without the cast as C++'s template overloads allow): its
    /// address. `None` when the argument is anything else, which then checks as a value.
    fn kernel_address(&mut self, arg: &ast::Expr, ctype: CType) -> Option<hir::Expr> {
        let mut e = arg;
        while let ast::ExprKind::Cast { operand, .. } = &e.kind {
            e = operand;
        }
        let ast::ExprKind::Ident(ident) = &e.kind else { return None };
        if self.lookup(&ident.name).is_some() {
            return None;
        }
        let Some(super::GlobalSymbol::Function(id)) = self.symbols.get(&ident.name).copied() else { return None };
        if self.functions[id.0 as usize].kind != hir::FunctionKind::Kernel {
            return None;
        }
        let ty = self.c_type(ctype);
        Some(make(ExprKind::Builtin { builtin: Builtin::KernelAddress(id), args: vec![] }, ty, arg.span))
    }

    /// Programmatic dependent launch is `griddepcontrol`, an sm_90 instruction.
    fn check_runtime_arch(&mut self, f: RuntimeFn, span: Span) -> Option<()> {
        let needs_sm90 = matches!(f, RuntimeFn::GridDependencySynchronize | RuntimeFn::TriggerProgrammaticLaunchCompletion);
        if needs_sm90 && self.target.sm.number < 90 {
            let sm = self.target.sm;
            self.error(Code::NeedsNewerArch, span, format!("`{}` needs sm_90 or newer", f.entry_point().c_name))
                .primary(format!("compiling for {sm}"))
                .note("programmatic dependent launch is the PTX instruction `griddepcontrol`, which exists from sm_90 on; compile with `-arch=sm_90`")
                .emit();
            return None;
        }
        Some(())
    }

    /// The graph streams (`cudaStreamGraphTailLaunch`, ...) belong to `cudaGraphLaunch` alone,
    /// and `cudaGraphLaunch` from device code takes nothing else.
    fn check_graph_streams(&mut self, f: RuntimeFn, args: &[hir::Expr], span: Span) -> Option<()> {
        let entry = f.entry_point();
        let mut ok = true;
        for (arg, (_, ctype)) in args.iter().zip(entry.params) {
            if *ctype != CType::Stream {
                continue;
            }
            let Some(handle) = stream_constant(arg) else { continue };
            let graph_stream = runtime_shim::streams::is_graph_stream(handle);
            if f == RuntimeFn::GraphLaunch && !graph_stream {
                self.error(Code::GraphLaunchStream, arg.span, "a graph launched from device code must go into a graph stream")
                    .primary(format!("this is {}", stream_name(handle)))
                    .label(span, "in this call")
                    .note("use `cudaStreamGraphTailLaunch`, `cudaStreamGraphFireAndForget` or `cudaStreamGraphFireAndForgetAsSibling`; the programming guide's \"Device Graph Launch\": device graphs cannot be launched into regular streams, only into these named ones")
                    .emit();
                ok = false;
            } else if f != RuntimeFn::GraphLaunch && graph_stream {
                self.graph_stream_misuse(arg.span, handle, &format!("`{}`", entry.c_name));
                ok = false;
            }
        }
        ok.then_some(())
    }

    /// E0313: a graph stream where only `cudaGraphLaunch` may take one.
    pub(super) fn graph_stream_misuse(&mut self, at: Span, handle: u64, what: &str) {
        self.error(Code::GraphStreamMisuse, at, format!("{} is only for `cudaGraphLaunch`", stream_name(handle)))
            .primary(format!("passed to {what}"))
            .note("graph streams name where a device-launched graph runs; kernels, copies and events need a created stream, the NULL stream, `cudaStreamTailLaunch` or `cudaStreamFireAndForget`")
            .emit();
    }

    /// Device-created streams must be non-blocking and device events must not time.
    fn check_required_flag(&mut self, f: RuntimeFn, args: &[hir::Expr], span: Span) {
        use runtime_shim::streams::{EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING};
        let (flag, flag_name, what) = match f {
            RuntimeFn::StreamCreateWithFlags => (STREAM_NON_BLOCKING, "cudaStreamNonBlocking", "a stream created in device code"),
            RuntimeFn::EventCreateWithFlags => (EVENT_DISABLE_TIMING, "cudaEventDisableTiming", "an event created in device code"),
            _ => return,
        };
        let Some(flags) = args.get(1) else { return };
        if let Some(super::consteval::Const::Int(value)) = super::consteval::eval(flags, &self.target) {
            if value as u32 & flag == 0 {
                self.error(Code::MissingRequiredFlag, flags.span, format!("{what} must be created with `{flag_name}`"))
                    .primary(format!("these flags lack `{flag_name}`"))
                    .label(span, "in this call")
                    .note("the device runtime supports only non-blocking streams and events without timing")
                    .emit();
            }
        }
    }
}

/// The atomic function `name` is, and its scope: `atomicAdd`, `atomicAdd_block` (sm_60 and
/// newer, as every target cdpc builds for) and `atomicAdd_system`, as CUDA declares them.
fn atomic_op(name: &str) -> Option<(AtomicOp, AtomicScope)> {
    let (base, scope) = if let Some(b) = name.strip_suffix("_block") {
        (b, AtomicScope::Block)
    } else if let Some(b) = name.strip_suffix("_system") {
        (b, AtomicScope::System)
    } else {
        (name, AtomicScope::Device)
    };
    Some((atomic_base(base)?, scope))
}

fn atomic_base(name: &str) -> Option<AtomicOp> {
    Some(match name {
        "atomicAdd" => AtomicOp::Add,
        "atomicSub" => AtomicOp::Sub,
        "atomicExch" => AtomicOp::Exch,
        "atomicMin" => AtomicOp::Min,
        "atomicMax" => AtomicOp::Max,
        "atomicInc" => AtomicOp::Inc,
        "atomicDec" => AtomicOp::Dec,
        "atomicAnd" => AtomicOp::And,
        "atomicOr" => AtomicOp::Or,
        "atomicXor" => AtomicOp::Xor,
        "atomicCAS" => AtomicOp::Cas,
        _ => return None,
    })
}

/// The handle a stream argument holds when it is a constant (`0`, `cudaStreamTailLaunch`, ...).
pub(super) fn stream_constant(e: &hir::Expr) -> Option<u64> {
    match &e.kind {
        ExprKind::PointerConst(handle) => Some(*handle),
        ExprKind::IntConst(value) => Some(*value as u64),
        ExprKind::Cast(inner) if inner.ty.is_integer() || inner.ty.is_pointer_like() => stream_constant(inner),
        _ => None,
    }
}

/// How a diagnostic names a stream handle.
fn stream_name(handle: u64) -> String {
    runtime_shim::streams::describe(handle)
}
