//! CUDA built-ins: special registers, barriers and fences, atomics, printf, math (libdevice)
//! and the device-runtime API.

use super::function::Class;
use super::{internal, BackendError, Codegen, R};
use crate::front::cdp::hir::{AtomicOp, AtomicScope, Axis, Builtin, Expr, MathFn, SpecialReg, WarpOp};
use crate::types::{FloatKind, Type};
use inkwell::intrinsics::Intrinsic;
use inkwell::llvm_sys::core::{LLVMBuildAtomicCmpXchgSyncScope, LLVMBuildAtomicRMWSyncScope, LLVMBuildFenceSyncScope, LLVMGetModuleContext, LLVMGetSyncScopeID};
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMAtomicRMWBinOp};
use inkwell::module::Linkage;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValueEnum, FunctionValue, PointerValue, ValueKind};

type BV<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Codegen<'ctx, '_> {
    pub(crate) fn intrinsic(&self, name: &str, overloads: &[BasicTypeEnum<'ctx>]) -> R<FunctionValue<'ctx>> {
        Intrinsic::find(name).and_then(|i| i.get_declaration(&self.module, overloads)).ok_or_else(|| BackendError::Internal(format!("LLVM has no intrinsic {name}")))
    }

    /// Calls `f`; `None` for a void result.
    pub(crate) fn call(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> R<Option<BV<'ctx>>> {
        let call = self.builder.build_call(f, args, "")?;
        Ok(match call.try_as_basic_value() {
            ValueKind::Basic(v) => Some(v),
            _ => None,
        })
    }

    fn call_value(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> R<BV<'ctx>> {
        self.call(f, args)?.ok_or_else(|| BackendError::Internal("call returned no value".into()))
    }

    /// An external function declared once per module.
    pub(crate) fn declare_external(&self, name: &str, ret: Option<BasicTypeEnum<'ctx>>, params: &[BasicMetadataTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
        if let Some(f) = self.module.get_function(name) {
            return f;
        }
        let ty = match ret {
            Some(r) => r.fn_type(params, false),
            None => self.ctx.void_type().fn_type(params, false),
        };
        self.module.add_function(name, ty, Some(Linkage::External))
    }

    fn sync_scope(&self, name: &str) -> u32 {
        // SAFETY: the module and its context are alive; the name is a plain byte string.
        unsafe {
            let ctx = LLVMGetModuleContext(self.module.as_mut_ptr());
            LLVMGetSyncScopeID(ctx, name.as_ptr() as *const _, name.len())
        }
    }

    /// Result of an i32/i1 builtin converted to the expression's type.
    pub(crate) fn int_result(&self, v: BV<'ctx>, from: &Type, ty: &Type) -> R<Option<BV<'ctx>>> {
        Ok(Some(self.cast(v, from, ty)?))
    }

    pub(crate) fn builtin(&mut self, builtin: &Builtin, args: &[Expr], ty: &Type) -> R<Option<BV<'ctx>>> {
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.value(a)?);
        }
        match builtin {
            Builtin::SpecialReg(reg) => {
                let axis = |a: &Axis| match a {
                    Axis::X => "x",
                    Axis::Y => "y",
                    Axis::Z => "z",
                };
                let name = match reg {
                    SpecialReg::ThreadIdx(a) => format!("llvm.nvvm.read.ptx.sreg.tid.{}", axis(a)),
                    SpecialReg::BlockIdx(a) => format!("llvm.nvvm.read.ptx.sreg.ctaid.{}", axis(a)),
                    SpecialReg::BlockDim(a) => format!("llvm.nvvm.read.ptx.sreg.ntid.{}", axis(a)),
                    SpecialReg::GridDim(a) => format!("llvm.nvvm.read.ptx.sreg.nctaid.{}", axis(a)),
                    SpecialReg::WarpSize => "llvm.nvvm.read.ptx.sreg.warpsize".to_string(),
                };
                let v = self.call_value(self.intrinsic(&name, &[])?, &[])?;
                self.int_result(v, &Type::UINT, ty)
            }
            Builtin::SyncThreads => {
                // LLVM 21 replaced llvm.nvvm.barrier0 with the explicit form `bar.sync 0`.
                match self.intrinsic("llvm.nvvm.barrier.cta.sync.aligned.all", &[]) {
                    Ok(f) => self.call(f, &[self.ctx.i32_type().const_zero().into()])?,
                    Err(_) => self.call(self.intrinsic("llvm.nvvm.barrier0", &[])?, &[])?,
                };
                Ok(None)
            }
            Builtin::ThreadFence | Builtin::ThreadFenceBlock => {
                let scope = if matches!(builtin, Builtin::ThreadFence) { "device" } else { "block" };
                let ssid = self.sync_scope(scope);
                // SAFETY: the builder is positioned (we are inside a function body).
                unsafe {
                    LLVMBuildFenceSyncScope(self.builder.as_mut_ptr(), LLVMAtomicOrdering::LLVMAtomicOrderingSequentiallyConsistent, ssid, c"".as_ptr());
                }
                Ok(None)
            }
            Builtin::Atomic(op, scope) => self.atomic(*op, *scope, &vals, args, ty).map(Some),
            Builtin::Warp(op) => self.warp(*op, &vals),
            Builtin::Intrinsic(i) => self.cuda_intrinsic(*i, &vals, ty),
            Builtin::Printf => self.printf(&vals, args).map(Some),
            Builtin::IsGlobal => {
                let f = self.intrinsic("llvm.nvvm.isspacep.global", &[])?;
                let v = self.call_value(f, &[arg(&vals, 0)?.into()])?;
                self.int_result(v, &Type::BOOL, ty)
            }
            Builtin::Malloc => {
                let ptr_ty = self.types.ptr();
                let f = self.declare_external("malloc", Some(ptr_ty.into()), &[self.types.intptr().into()]);
                Ok(Some(self.call_value(f, &[arg(&vals, 0)?.into()])?))
            }
            Builtin::Free => {
                let f = self.declare_external("free", None, &[self.types.ptr().into()]);
                self.call(f, &[arg(&vals, 0)?.into()])?;
                Ok(None)
            }
            Builtin::Clock64 => {
                let v = self.call_value(self.intrinsic("llvm.nvvm.read.ptx.sreg.clock64", &[])?, &[])?;
                self.int_result(v, &Type::LONGLONG, ty)
            }
            Builtin::Min | Builtin::Max => {
                let is_min = matches!(builtin, Builtin::Min);
                let name = match (self.class(ty), is_min) {
                    (Class::Float(_), true) => "llvm.minnum",
                    (Class::Float(_), false) => "llvm.maxnum",
                    (Class::Int { signed: true, .. }, true) => "llvm.smin",
                    (Class::Int { signed: true, .. }, false) => "llvm.smax",
                    (_, true) => "llvm.umin",
                    (_, false) => "llvm.umax",
                };
                let f = self.intrinsic(name, &[self.types.reg(ty)?])?;
                Ok(Some(self.call_value(f, &[arg(&vals, 0)?.into(), arg(&vals, 1)?.into()])?))
            }
            Builtin::Abs => match self.class(ty) {
                Class::Float(_) => {
                    let f = self.intrinsic("llvm.fabs", &[self.types.reg(ty)?])?;
                    Ok(Some(self.call_value(f, &[arg(&vals, 0)?.into()])?))
                }
                _ => {
                    let f = self.intrinsic("llvm.abs", &[self.types.reg(ty)?])?;
                    // abs(INT_MIN) is undefined in C, but nvcc's abs wraps; so do we.
                    let poison_on_min = self.ctx.bool_type().const_zero();
                    Ok(Some(self.call_value(f, &[arg(&vals, 0)?.into(), poison_on_min.into()])?))
                }
            },
            Builtin::Math(f) => self.math(*f, &vals, ty).map(Some),
            Builtin::FloatIntrinsic(name) => self.libdevice(name, &vals, ty).map(Some),
            Builtin::Runtime(f) => self.runtime_call(*f, &vals, ty),
            Builtin::MakeStruct => self.make_struct(&vals, ty).map(Some),
            Builtin::Ldg => self.ldg(arg(&vals, 0)?.into_pointer_value(), ty).map(Some),
            Builtin::KernelAddress(id) => match self.functions.get(id.0 as usize) {
                Some(kernel) => Ok(Some(kernel.as_global_value().as_pointer_value().into())),
                None => internal(format!("address of unknown kernel {}", id.0)),
            },
        }
    }

    /// Adapts an argument to an entry point's ABI type (sema already converted it to the C type,
    /// so this only bridges integer widths and pointer/integer mismatches).
    pub(crate) fn coerce(&self, v: BV<'ctx>, to: BasicMetadataTypeEnum<'ctx>) -> R<BV<'ctx>> {
        let b = &self.builder;
        Ok(match (v, to) {
            (BasicValueEnum::IntValue(i), BasicMetadataTypeEnum::IntType(t)) if i.get_type() != t => b.build_int_cast_sign_flag(i, t, false, "abi")?.into(),
            (BasicValueEnum::IntValue(i), BasicMetadataTypeEnum::PointerType(t)) => b.build_int_to_ptr(i, t, "abi")?.into(),
            (BasicValueEnum::PointerValue(p), BasicMetadataTypeEnum::IntType(t)) => b.build_ptr_to_int(p, t, "abi")?.into(),
            // A struct by value (`cudaPitchedPtr`): the program's named struct and the entry
            // point's literal one have the same elements; rebuild it element by element.
            (BasicValueEnum::StructValue(sv), BasicMetadataTypeEnum::StructType(t)) if sv.get_type() != t => {
                let mut out = t.get_undef();
                for i in 0..t.count_fields() {
                    let element = b.build_extract_value(sv, i, "abi.elt")?;
                    let element = match t.get_field_type_at_index(i) {
                        Some(BasicTypeEnum::StructType(inner)) => self.coerce(element, inner.into())?,
                        _ => element,
                    };
                    out = b.build_insert_value(out, element, i, "abi")?.into_struct_value();
                }
                out.into()
            }
            (v, _) => v,
        })
    }

    fn atomic(&mut self, op: AtomicOp, scope: AtomicScope, vals: &[BV<'ctx>], args: &[Expr], ty: &Type) -> R<BV<'ctx>> {
        use LLVMAtomicRMWBinOp::*;
        let (Some(ptr), Some(value)) = (vals.first(), vals.get(1)) else {
            return internal("atomic without pointer and value");
        };
        let ptr = ptr.into_pointer_value();
        let pointee = args.first().and_then(|a| a.ty.pointee()).cloned().unwrap_or_else(|| ty.clone());
        let class = self.class(&pointee);
        if scope != AtomicScope::Device && op != AtomicOp::Cas {
            return self.scoped_atomic(op, scope, ptr, *value, &pointee, class);
        }
        // `cmpxchg` keeps its scope in NVPTX (`atom.relaxed.cta.cas`); the system's is LLVM's
        // default one, named "".
        let device = self.sync_scope(match scope {
            AtomicScope::Device => "device",
            AtomicScope::Block => "block",
            AtomicScope::System => "",
        });
        let monotonic = LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic;
        if op == AtomicOp::Cas {
            let Some(new) = vals.get(2) else { return internal("atomicCAS needs three arguments") };
            // cmpxchg takes integers only: a float CAS compares the bits, as CUDA's does.
            let (cmp, new) = match class {
                Class::Float(k) => {
                    let it = self.types.int(if k == FloatKind::Float { 32 } else { 64 });
                    (self.builder.build_bit_cast(*value, it, "cas.cmp")?, self.builder.build_bit_cast(*new, it, "cas.new")?)
                }
                _ => (*value, *new),
            };
            // SAFETY: ptr, cmp and new are valid values of matching types; the builder is positioned.
            let pair = unsafe { BV::new(LLVMBuildAtomicCmpXchgSyncScope(self.builder.as_mut_ptr(), ptr.as_value_ref(), cmp.as_value_ref(), new.as_value_ref(), monotonic, monotonic, device)) };
            let old = self.builder.build_extract_value(pair.into_struct_value(), 0, "cas.old")?;
            return match class {
                Class::Float(_) => Ok(self.builder.build_bit_cast(old, self.types.reg(&pointee)?, "cas.old")?),
                _ => Ok(old),
            };
        }
        let float = matches!(class, Class::Float(_));
        let signed = matches!(class, Class::Int { signed: true, .. });
        let rmw = match op {
            AtomicOp::Add if float => LLVMAtomicRMWBinOpFAdd,
            AtomicOp::Add => LLVMAtomicRMWBinOpAdd,
            AtomicOp::Sub if float => LLVMAtomicRMWBinOpFSub,
            AtomicOp::Sub => LLVMAtomicRMWBinOpSub,
            AtomicOp::Exch => LLVMAtomicRMWBinOpXchg,
            AtomicOp::Min if float => LLVMAtomicRMWBinOpFMin,
            AtomicOp::Min if signed => LLVMAtomicRMWBinOpMin,
            AtomicOp::Min => LLVMAtomicRMWBinOpUMin,
            AtomicOp::Max if float => LLVMAtomicRMWBinOpFMax,
            AtomicOp::Max if signed => LLVMAtomicRMWBinOpMax,
            AtomicOp::Max => LLVMAtomicRMWBinOpUMax,
            // CUDA's atomicInc/atomicDec are exactly LLVM's wrapping increment/decrement.
            AtomicOp::Inc => LLVMAtomicRMWBinOpUIncWrap,
            AtomicOp::Dec => LLVMAtomicRMWBinOpUDecWrap,
            AtomicOp::And => LLVMAtomicRMWBinOpAnd,
            AtomicOp::Or => LLVMAtomicRMWBinOpOr,
            AtomicOp::Xor => LLVMAtomicRMWBinOpXor,
            AtomicOp::Cas => return internal("atomicCAS is lowered to cmpxchg above"),
        };
        // SAFETY: ptr and value are valid values; the builder is positioned.
        Ok(unsafe { BV::new(LLVMBuildAtomicRMWSyncScope(self.builder.as_mut_ptr(), rmw, ptr.as_value_ref(), value.as_value_ref(), monotonic, device)) })
    }

    /// `vprintf(fmt, args)`: the arguments packed in a local buffer, each aligned to its size.
    fn printf(&mut self, vals: &[BV<'ctx>], args: &[Expr]) -> R<BV<'ctx>> {
        let ptr_ty = self.types.ptr();
        let vprintf = self.declare_external("vprintf", Some(self.ctx.i32_type().into()), &[ptr_ty.into(), ptr_ty.into()]);
        let Some(fmt) = vals.first() else { return internal("printf without a format") };
        let mut offsets = Vec::new();
        let mut end = 0u64;
        let mut max_align = 1u64;
        for a in &args[1..] {
            let (size, _) = self.hir.size_align(&a.ty);
            let align = size.max(1);
            let offset = crate::types::round_up(end, align);
            offsets.push(offset);
            end = offset + size;
            max_align = max_align.max(align);
        }
        let buffer = if args.len() > 1 {
            let size = crate::types::round_up(end, max_align);
            let buf_ty = self.ctx.i8_type().array_type(size as u32);
            let buf = self.entry_alloca_raw(buf_ty.into(), max_align.max(8), "printf.args")?;
            for ((v, a), offset) in vals[1..].iter().zip(&args[1..]).zip(&offsets) {
                let idx = self.types.intptr().const_int(*offset, false);
                // SAFETY: the offset lies inside the buffer sized above.
                let p = unsafe { self.builder.build_in_bounds_gep(self.ctx.i8_type(), buf, &[idx], "printf.arg")? };
                self.store(p, *v, &a.ty)?;
            }
            buf
        } else {
            ptr_ty.const_null()
        };
        self.call_value(vprintf, &[(*fmt).into(), buffer.into()])
    }

    /// `atomicAdd_block`, `atomicMax_system`, ...: a read-modify-write of block or system
    /// scope, as nvcc writes it (`atom.cta.add.u32`, `atom.sys.max.u64`), in inline assembly on
    /// the generic address. LLVM 22's NVPTX writes every `atomicrmw` in the device scope
    /// whatever its `syncscope`, and its scoped intrinsics have no unsigned minimum or maximum
    /// (which Clang's CUDA headers get wrong, `clang::unsigned_scoped_min_max`). Like the
    /// intrinsic, the assembly reads and writes memory (`~{memory}`): nothing is moved across it.
    /// `atomicSub` adds the negated value, as nvcc does.
    fn scoped_atomic(&mut self, op: AtomicOp, scope: AtomicScope, ptr: PointerValue<'ctx>, value: BV<'ctx>, pointee: &Type, class: Class) -> R<BV<'ctx>> {
        let (bits, signed, float) = match class {
            Class::Int { bits, signed } => (bits, signed, false),
            Class::Float(k) => (if k == FloatKind::Float { 32 } else { 64 }, true, true),
            other => return internal(format!("scoped atomic on {other:?}")),
        };
        let (name, kind) = match op {
            AtomicOp::Add | AtomicOp::Sub if float => ("add", "f"),
            AtomicOp::Add | AtomicOp::Sub => ("add", "u"),
            AtomicOp::Exch => ("exch", "b"),
            AtomicOp::Min => ("min", if signed { "s" } else { "u" }),
            AtomicOp::Max => ("max", if signed { "s" } else { "u" }),
            AtomicOp::Inc => ("inc", "u"),
            AtomicOp::Dec => ("dec", "u"),
            AtomicOp::And => ("and", "b"),
            AtomicOp::Or => ("or", "b"),
            AtomicOp::Xor => ("xor", "b"),
            AtomicOp::Cas => return internal("a scoped atomicCAS is a cmpxchg"),
        };
        let scope = if scope == AtomicScope::Block { "cta" } else { "sys" };
        // The operand as the register the instruction takes: an exchange of a float moves its bits.
        let int = if bits == 32 { self.ctx.i32_type() } else { self.ctx.i64_type() };
        let (operand, reg) = match (float, kind) {
            (true, "b") => (self.builder.build_bit_cast(value, int, "atom.bits")?, if bits == 32 { "r" } else { "l" }),
            (true, _) => (value, if bits == 32 { "f" } else { "d" }),
            (false, _) => (value, if bits == 32 { "r" } else { "l" }),
        };
        let operand = if op == AtomicOp::Sub { self.builder.build_int_neg(operand.into_int_value(), "atom.neg")?.into() } else { operand };
        let address = if self.types.intptr().get_bit_width() == 64 { "l" } else { "r" };
        let fn_type = operand.get_type().fn_type(&[ptr.get_type().into(), operand.get_type().into()], false);
        let asm = self.ctx.create_inline_asm(fn_type, format!("atom.{scope}.{name}.{kind}{bits} $0, [$1], $2;"), format!("={reg},{address},{reg},~{{memory}}"), true, false, None, false);
        let old = self.builder.build_indirect_call(fn_type, asm, &[ptr.into(), operand.into()], "atom.old")?;
        let old = old.try_as_basic_value().basic().ok_or_else(|| BackendError::Internal("an atomic's assembly returns its old value".into()))?;
        if float && kind == "b" {
            return Ok(self.builder.build_bit_cast(old, self.types.reg(pointee)?, "atom.old")?);
        }
        Ok(old)
    }

    /// The libdevice function `__nv_<name>`, its arguments and result of the expression's float
    /// type (a math function, one of CUDA's floating-point intrinsics); linking happens after
    /// lowering.
    fn libdevice(&mut self, name: &str, vals: &[BV<'ctx>], ty: &Type) -> R<BV<'ctx>> {
        self.uses_math = true;
        let fty = self.types.reg(ty)?;
        let params: Vec<BasicMetadataTypeEnum> = vals.iter().map(|_| fty.into()).collect();
        let callee = self.declare_external(&format!("__nv_{name}"), Some(fty), &params);
        let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
        self.call_value(callee, &args)
    }

    /// A libdevice function (`__nv_sinf`, `__nv_sin`, ...); linking happens after lowering.
    fn math(&mut self, f: MathFn, vals: &[BV<'ctx>], ty: &Type) -> R<BV<'ctx>> {
        let (base, arity) = match f {
            MathFn::Sqrt => ("sqrt", 1),
            MathFn::Rsqrt => ("rsqrt", 1),
            MathFn::Fabs => ("fabs", 1),
            MathFn::Floor => ("floor", 1),
            MathFn::Ceil => ("ceil", 1),
            MathFn::Trunc => ("trunc", 1),
            MathFn::Round => ("round", 1),
            MathFn::Exp => ("exp", 1),
            MathFn::Exp2 => ("exp2", 1),
            MathFn::Log => ("log", 1),
            MathFn::Log2 => ("log2", 1),
            MathFn::Log10 => ("log10", 1),
            MathFn::Sin => ("sin", 1),
            MathFn::Cos => ("cos", 1),
            MathFn::Tan => ("tan", 1),
            MathFn::Pow => ("pow", 2),
            MathFn::Fmin => ("fmin", 2),
            MathFn::Fmax => ("fmax", 2),
            MathFn::Fma => ("fma", 3),
            MathFn::Fmod => ("fmod", 2),
            MathFn::Atan2 => ("atan2", 2),
        };
        let suffix = match ty {
            Type::Float(FloatKind::Float) => "f",
            Type::Float(FloatKind::Double) => "",
            other => return internal(format!("math function on {other:?}")),
        };
        if vals.len() != arity {
            return internal(format!("{base} takes {arity} arguments, got {}", vals.len()));
        }
        self.libdevice(&format!("{base}{suffix}"), vals, ty)
    }
}

/// The `i`th argument of a builtin; sema guarantees the count, so a miss is an internal error.
fn arg<'ctx>(vals: &[BV<'ctx>], i: usize) -> R<BV<'ctx>> {
    vals.get(i).copied().ok_or_else(|| BackendError::Internal(format!("builtin argument {i} missing")))
}

impl<'ctx> Codegen<'ctx, '_> {
    /// Warp primitives on `unsigned int` operands (sema converts them; a predicate is an
    /// `int` compared with zero).
    fn warp(&mut self, op: WarpOp, vals: &[BV<'ctx>]) -> R<Option<BV<'ctx>>> {
        let word = |i: usize| -> R<inkwell::values::IntValue<'ctx>> {
            match arg(vals, i)? {
                BasicValueEnum::IntValue(v) => Ok(v),
                other => internal(format!("warp primitive operand {i} is not an integer: {other:?}")),
            }
        };
        match op {
            WarpOp::ActiveMask => self.call(self.intrinsic("llvm.nvvm.activemask", &[])?, &[]),
            WarpOp::Ballot => {
                let v = word(1)?;
                let pred = self.builder.build_int_compare(inkwell::IntPredicate::NE, v, v.get_type().const_zero(), "")?;
                self.call(self.intrinsic("llvm.nvvm.vote.ballot.sync", &[])?, &[word(0)?.into(), pred.into()])
            }
            WarpOp::SyncWarp => {
                self.call(self.intrinsic("llvm.nvvm.bar.warp.sync", &[])?, &[word(0)?.into()])?;
                Ok(None)
            }
        }
    }
}

impl<'ctx> Codegen<'ctx, '_> {
    /// A struct value from its fields' values (the vector constructors `make_float2`, ...).
    fn make_struct(&self, vals: &[BV<'ctx>], ty: &Type) -> R<BV<'ctx>> {
        let st = self.types.mem(ty)?.into_struct_type();
        let mut agg: inkwell::values::AggregateValueEnum<'ctx> = st.get_undef().into();
        for (index, v) in (0u32..).zip(vals) {
            let field = self.types.field_type(self.hir, ty, index)?;
            let slot = self.types.field_slot(ty, index)?;
            agg = self.builder.build_insert_value(agg, self.reg_to_mem(*v, &field)?, slot, "make")?;
        }
        Ok(agg.into_struct_value().into())
    }

    /// `__ldg(p)`: a load from the global address space marked invariant, which NVPTX emits as
    /// `ld.global.nc` (the read-only data cache), as nvcc's `__ldg` does.
    fn ldg(&self, p: inkwell::values::PointerValue<'ctx>, ty: &Type) -> R<BV<'ctx>> {
        let global = self.ctx.ptr_type(inkwell::AddressSpace::from(1u16));
        let gp = self.builder.build_address_space_cast(p, global, "ldg.ptr")?;
        use inkwell::values::BasicValue;
        let v = self.builder.build_load(self.types.mem(ty)?, gp, "ldg")?;
        if let Some(inst) = v.as_instruction_value() {
            let align = self.hir.size_align(ty).1.max(1) as u32;
            inst.set_alignment(align).map_err(|e| super::BackendError::Internal(e.to_string()))?;
            let kind = self.ctx.get_kind_id("invariant.load");
            inst.set_metadata(self.ctx.metadata_node(&[]), kind).map_err(|e| super::BackendError::Internal(e.to_string()))?;
        }
        self.mem_to_reg(v, ty)
    }
}
