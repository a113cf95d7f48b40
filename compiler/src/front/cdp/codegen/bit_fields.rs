//! Bit-fields in memory: a bit-field's value is read from, and written into, the bytes that
//! hold its bits (`hir::BitField::bytes` of them from the field's offset), loaded as one integer
//! of that many bytes, shifted and masked. Only those bytes are touched, so a neighbouring
//! member is never written; a write is a read-modify-write of them, as nvcc's is.

use super::{internal, Codegen, R};
use crate::front::cdp::hir::{BitField, Expr, ExprKind};
use crate::types::Type;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::IntPredicate;

type BV<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Codegen<'ctx, '_> {
    /// The bit-field the place `e` names, if it is one.
    pub(crate) fn bit_field(&self, e: &Expr) -> Option<BitField> {
        let ExprKind::Member { base, index } = &e.kind else { return None };
        let Type::Struct(id) = &base.ty else { return None };
        self.hir.structs.get(id.0 as usize)?.fields.get(*index as usize)?.bits
    }

    /// Field `index` of the struct type `ty`, when it is a bit-field: its bits and value type.
    pub(crate) fn hir_bit_field(&self, ty: &Type, index: usize) -> Option<(BitField, Type)> {
        let Type::Struct(id) = ty else { return None };
        let field = self.hir.structs.get(id.0 as usize)?.fields.get(index)?;
        Some((field.bits?, field.value_type()))
    }

    /// The address of the first byte of field `index` of the struct at `base` (`i8` steps).
    pub(crate) fn field_byte_ptr(&self, base: PointerValue<'ctx>, ty: &Type, index: u32) -> R<PointerValue<'ctx>> {
        let Type::Struct(id) = ty else { return internal(format!("bit-field of a non-struct {ty:?}")) };
        let offset = self.hir.struct_def(*id).fields.get(index as usize).map(|f| f.offset);
        let Some(offset) = offset else { return internal(format!("struct {} has no field {index}", id.0)) };
        let at = self.types.intptr().const_int(offset, false);
        // SAFETY: the field's bytes lie inside the struct (sema placed them there).
        Ok(unsafe { self.builder.build_in_bounds_gep(self.ctx.i8_type(), base, &[at], "bitfield.bytes")? })
    }

    /// The integer type of `bits` bits (1 to 64).
    fn int_of(&self, bits: u32) -> R<inkwell::types::IntType<'ctx>> {
        let bits = std::num::NonZeroU32::new(bits).ok_or_else(|| super::BackendError::Internal("a bit-field of width 0".into()))?;
        self.ctx.custom_width_int_type(bits).map_err(|e| super::BackendError::Internal(e.to_string()))
    }

    /// The integer holding the bytes of `bf` at `ptr`, and its type.
    fn storage(&self, ptr: PointerValue<'ctx>, bf: BitField, volatile: bool) -> R<IntValue<'ctx>> {
        let ty = self.int_of(bf.bytes() * 8)?;
        let v = self.builder.build_load(ty, ptr, "bitfield.load")?;
        if let Some(inst) = inkwell::values::BasicValue::as_instruction_value(&v) {
            inst.set_alignment(1).map_err(|e| super::BackendError::Internal(e.to_string()))?;
            if volatile {
                inst.set_volatile(true).map_err(|e| super::BackendError::Internal(e.to_string()))?;
            }
        }
        Ok(v.into_int_value())
    }

    /// `bits` (an integer of `bf.width` bits) as a value of type `ty`: sign- or zero-extended as
    /// the declared type is signed or not; a `bool` is whether any bit is set.
    fn widen(&self, bits: IntValue<'ctx>, bf: BitField, ty: &Type) -> R<BV<'ctx>> {
        if *ty == Type::BOOL {
            let zero = bits.get_type().const_zero();
            return Ok(self.builder.build_int_compare(IntPredicate::NE, bits, zero, "bitfield.bool")?.into());
        }
        let to = self.types.reg(ty)?.into_int_type();
        Ok(match to.get_bit_width().cmp(&bf.width) {
            std::cmp::Ordering::Equal => bits.into(),
            std::cmp::Ordering::Less => self.builder.build_int_truncate(bits, to, "bitfield.val")?.into(),
            std::cmp::Ordering::Greater if bf.signed => self.builder.build_int_s_extend(bits, to, "bitfield.val")?.into(),
            std::cmp::Ordering::Greater => self.builder.build_int_z_extend(bits, to, "bitfield.val")?.into(),
        })
    }

    /// `v` of type `ty` cut to `bf.width` bits.
    fn narrow(&self, v: BV<'ctx>, bf: BitField, ty: &Type) -> R<IntValue<'ctx>> {
        let v = v.into_int_value();
        let to = self.int_of(bf.width)?;
        if *ty == Type::BOOL || v.get_type().get_bit_width() < bf.width {
            return Ok(self.builder.build_int_z_extend(v, to, "bitfield.bits")?);
        }
        Ok(self.builder.build_int_truncate_or_bit_cast(v, to, "bitfield.bits")?)
    }

    /// Reads the bit-field `bf` whose first byte is at `ptr`, as a value of type `ty`.
    pub(crate) fn load_bit_field(&self, ptr: PointerValue<'ctx>, bf: BitField, ty: &Type, volatile: bool) -> R<BV<'ctx>> {
        let raw = self.storage(ptr, bf, volatile)?;
        let shift = raw.get_type().const_int(u64::from(bf.shift), false);
        let shifted = self.builder.build_right_shift(raw, shift, false, "bitfield.shr")?;
        let bits = self.builder.build_int_truncate_or_bit_cast(shifted, self.int_of(bf.width)?, "bitfield.bits")?;
        self.widen(bits, bf, ty)
    }

    /// Writes `v` (of type `ty`) into the bit-field `bf` whose first byte is at `ptr`; the
    /// value the bit-field then holds, as C++'s assignment yields it.
    pub(crate) fn store_bit_field(&self, ptr: PointerValue<'ctx>, bf: BitField, v: BV<'ctx>, ty: &Type, volatile: bool) -> R<BV<'ctx>> {
        let bits = self.narrow(v, bf, ty)?;
        let raw = self.storage(ptr, bf, volatile)?;
        let storage = raw.get_type();
        let total = storage.get_bit_width();
        let ones = if bf.width >= 64 { u64::MAX } else { (1u64 << bf.width) - 1 };
        let keep = storage.const_int(!(ones << bf.shift), false);
        let wide = if total == bf.width { bits } else { self.builder.build_int_z_extend(bits, storage, "bitfield.wide")? };
        let placed = self.builder.build_left_shift(wide, storage.const_int(u64::from(bf.shift), false), "bitfield.shl")?;
        let kept = self.builder.build_and(raw, keep, "bitfield.keep")?;
        let merged = self.builder.build_or(kept, placed, "bitfield.merge")?;
        let store = self.builder.build_store(ptr, merged)?;
        store.set_alignment(1).map_err(|e| super::BackendError::Internal(e.to_string()))?;
        if volatile {
            store.set_volatile(true).map_err(|e| super::BackendError::Internal(e.to_string()))?;
        }
        self.widen(bits, bf, ty)
    }
}
