//! GCC-style inline PTX (`hir::InlineAsm`, checked in `front/cdp/sema/asm.rs`) as an LLVM inline-asm
//! call, the way clang lowers it and NVPTX prints it between `// begin inline asm` and
//! `// end inline asm`:
//!
//! - the template's `%N` becomes `${N}` and a literal `$` becomes `$$` (LLVM's syntax);
//! - constraints are `=r` for each output (`=&r` early clobber), then each input's letter, then
//!   for each `+` output an input tied to it (`0`, its number), then `~{memory}`;
//! - one output is the call's value, several are fields of a returned struct, stored in order;
//! - `volatile` (or no outputs) is `sideeffect`; otherwise LLVM treats the statement as a pure
//!   function of its inputs, as GCC's documentation allows: like nvcc it drops one whose
//!   outputs are unused and hoists one out of a loop, but unlike nvcc it also merges two
//!   identical ones (two non-volatile reads of `%clock` become one; write `asm volatile`, as
//!   timing code must for any compiler).
//!
//! Operands already have the constraint's width (sema's rule, nvcc's); pointers travel as
//! 64-bit integers.

use super::{internal, Codegen, R};
use crate::front::cdp::hir::{AsmConstraint, AsmPiece, InlineAsm};
use crate::types::Type;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, ValueKind};

type BV<'ctx> = BasicValueEnum<'ctx>;

/// The template in LLVM's inline-asm syntax.
pub(crate) fn llvm_template(pieces: &[AsmPiece]) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            AsmPiece::Text(t) => out.push_str(&t.replace('$', "$$")),
            AsmPiece::Operand(n) => out.push_str(&format!("${{{n}}}")),
        }
    }
    out
}

/// The constraint string: outputs, inputs, tied inputs of `+` outputs, clobbers.
pub(crate) fn llvm_constraints(a: &InlineAsm) -> String {
    let mut parts: Vec<String> = Vec::new();
    for o in &a.outputs {
        parts.push(format!("={}{}", if o.early_clobber { "&" } else { "" }, o.constraint.letter()));
    }
    parts.extend(a.inputs.iter().map(|i| i.constraint.letter().to_string()));
    parts.extend(a.outputs.iter().enumerate().filter(|(_, o)| o.read_write).map(|(n, _)| n.to_string()));
    if a.clobbers_memory {
        parts.push("~{memory}".to_string());
    }
    parts.join(",")
}

impl<'ctx> Codegen<'ctx, '_> {
    fn asm_type(&self, c: AsmConstraint, ty: &Type) -> BasicTypeEnum<'ctx> {
        match c {
            AsmConstraint::H => self.ctx.i16_type().into(),
            AsmConstraint::R => self.ctx.i32_type().into(),
            AsmConstraint::L => self.ctx.i64_type().into(),
            AsmConstraint::F => self.ctx.f32_type().into(),
            AsmConstraint::D => self.ctx.f64_type().into(),
            AsmConstraint::N if self.hir.size_align(ty).0 == 8 => self.ctx.i64_type().into(),
            AsmConstraint::N => self.ctx.i32_type().into(),
        }
    }

    /// A register value as the operand of its constraint: pointers become integers.
    fn to_operand(&self, v: BV<'ctx>, c: AsmConstraint, ty: &Type) -> R<BV<'ctx>> {
        let want = self.asm_type(c, ty);
        match v {
            BasicValueEnum::PointerValue(p) => Ok(self.builder.build_ptr_to_int(p, want.into_int_type(), "asm.in")?.into()),
            BasicValueEnum::IntValue(i) if want.is_int_type() && i.get_type() != want.into_int_type() => Ok(self.builder.build_int_cast(i, want.into_int_type(), "asm.in")?.into()),
            other => Ok(other),
        }
    }

    /// An asm result as a register value of the place's type.
    fn operand_to_place(&self, v: BV<'ctx>, ty: &Type) -> R<BV<'ctx>> {
        let want = self.types.reg(ty)?;
        match (v, want) {
            (BasicValueEnum::IntValue(i), BasicTypeEnum::PointerType(p)) => Ok(self.builder.build_int_to_ptr(i, p, "asm.out")?.into()),
            (BasicValueEnum::IntValue(i), BasicTypeEnum::IntType(t)) if i.get_type() != t => Ok(self.builder.build_int_cast(i, t, "asm.out")?.into()),
            (other, _) => Ok(other),
        }
    }

    pub(crate) fn inline_asm(&mut self, a: &InlineAsm) -> R<()> {
        let mut places = Vec::with_capacity(a.outputs.len());
        for o in &a.outputs {
            places.push(self.place(&o.place)?);
        }
        let mut args: Vec<BasicMetadataValueEnum<'ctx>> = Vec::new();
        for i in &a.inputs {
            let v = self.value(&i.value)?;
            args.push(self.to_operand(v, i.constraint, &i.value.ty)?.into());
        }
        for (o, place) in a.outputs.iter().zip(&places) {
            if o.read_write {
                let v = self.load_access(*place, &o.place.ty, self.is_volatile(&o.place)?)?;
                args.push(self.to_operand(v, o.constraint, &o.place.ty)?.into());
            }
        }
        let arg_types: Vec<BasicMetadataTypeEnum<'ctx>> = args
            .iter()
            .map(|a| match a {
                BasicMetadataValueEnum::IntValue(v) => Ok(v.get_type().into()),
                BasicMetadataValueEnum::FloatValue(v) => Ok(v.get_type().into()),
                _ => internal("an asm operand that is neither an integer nor a float"),
            })
            .collect::<R<_>>()?;
        let results: Vec<BasicTypeEnum<'ctx>> = a.outputs.iter().map(|o| self.asm_type(o.constraint, &o.place.ty)).collect();
        let fn_type = match results.as_slice() {
            [] => self.ctx.void_type().fn_type(&arg_types, false),
            [one] => one.fn_type(&arg_types, false),
            many => self.ctx.struct_type(many, false).fn_type(&arg_types, false),
        };
        let asm = self.ctx.create_inline_asm(fn_type, llvm_template(&a.template), llvm_constraints(a), a.side_effects, false, None, false);
        let call = self.builder.build_indirect_call(fn_type, asm, &args, "")?;
        if a.outputs.is_empty() {
            return Ok(());
        }
        let ValueKind::Basic(result) = call.try_as_basic_value() else { return internal("inline asm returned no value") };
        for (n, (o, place)) in a.outputs.iter().zip(&places).enumerate() {
            let v = if a.outputs.len() == 1 { result } else { self.builder.build_extract_value(result.into_struct_value(), n as u32, "asm.out")? };
            let v = self.operand_to_place(v, &o.place.ty)?;
            self.store_access(*place, v, &o.place.ty, self.is_volatile(&o.place)?)?;
        }
        Ok(())
    }
}
