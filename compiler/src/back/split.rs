//! Struct and array values loaded and stored one element at a time.
//!
//! LLVM keeps a load or store of a whole struct that has padding as one aggregate access: its
//! InstCombine splits only padding-free structs. The NVPTX back end then handles that access
//! badly in two ways that made launches of padded structs slow:
//!
//! - a load of 128 bytes or more whose only use is a store (a struct assignment) becomes a
//!   memcpy loop of **single bytes** (`NVPTXLowerAggrCopies`, whose loop type is `i8`): a
//!   144-byte launch record copied into the grid's table cost 144 `ld.u8`/`st.u8` pairs;
//! - a smaller one is split only in instruction selection, after the load-store vectorizer has
//!   run, so the four `i32`s of an `int4` are four `st.u32` where nvcc writes one `st.v4.u32`.
//!
//! Element by element, every access is a scalar one in the IR, at the element's own offset and
//! with the alignment the aggregate's gives it there; the load-store vectorizer merges
//! neighbours into vector accesses as far as that alignment allows, as nvcc's code does.
//! Padding between elements is neither read nor written (instruction selection's split of an
//! aggregate access does the same). An array of bytes (a filler) is one access, a zero-length
//! array none, and an aggregate of more than [`MAX_ACCESSES`] scalars stays one access.

use super::R;
use inkwell::builder::Builder;
use inkwell::targets::TargetData;
use inkwell::types::{AnyType, BasicTypeEnum};
use inkwell::values::{AggregateValueEnum, BasicValue, BasicValueEnum, PointerValue};

/// The most scalar accesses that replace one aggregate access.
pub(crate) const MAX_ACCESSES: u64 = 64;

/// The scalar accesses of `ty` element by element (an array of bytes counts once).
fn accesses(ty: BasicTypeEnum<'_>) -> u64 {
    match ty {
        BasicTypeEnum::StructType(s) => s.get_field_types().into_iter().map(accesses).fold(0, u64::saturating_add),
        BasicTypeEnum::ArrayType(a) if a.is_empty() => 0,
        BasicTypeEnum::ArrayType(a) if is_byte(a.get_element_type()) => 1,
        BasicTypeEnum::ArrayType(a) => u64::from(a.len()).saturating_mul(accesses(a.get_element_type())),
        _ => 1,
    }
}

fn is_byte(ty: BasicTypeEnum<'_>) -> bool {
    matches!(ty, BasicTypeEnum::IntType(i) if i.get_bit_width() == 8)
}

/// Whether an access of type `ty` is split: a struct or an array of other than bytes, of at
/// most [`MAX_ACCESSES`] scalars.
pub(crate) fn splits(ty: BasicTypeEnum<'_>) -> bool {
    let aggregate = match ty {
        BasicTypeEnum::StructType(_) => true,
        BasicTypeEnum::ArrayType(a) => !is_byte(a.get_element_type()),
        _ => false,
    };
    aggregate && accesses(ty) <= MAX_ACCESSES
}

/// The alignment known at `offset` bytes into an object aligned to `align`.
fn align_at(align: u32, offset: u64) -> u32 {
    if offset == 0 {
        return align.max(1);
    }
    let low = 1u64 << offset.trailing_zeros().min(31);
    u64::from(align.max(1)).min(low) as u32
}

/// The byte offset of each element of the aggregate `ty` and its type.
fn elements<'ctx>(td: &TargetData, ty: BasicTypeEnum<'ctx>) -> Vec<(u32, u64, BasicTypeEnum<'ctx>)> {
    match ty {
        BasicTypeEnum::StructType(s) => (0..s.count_fields()).filter_map(|i| Some((i, td.offset_of_element(&s, i)?, s.get_field_type_at_index(i)?))).collect(),
        BasicTypeEnum::ArrayType(a) => {
            let elem = a.get_element_type();
            let stride = td.get_abi_size(&elem.as_any_type_enum());
            (0..a.len()).map(|i| (i, u64::from(i) * stride, elem)).collect()
        }
        _ => Vec::new(),
    }
}

/// A pointer to element `index` of the aggregate of type `ty` at `ptr`.
fn element_ptr<'ctx>(builder: &Builder<'ctx>, ty: BasicTypeEnum<'ctx>, ptr: PointerValue<'ctx>, index: u32) -> R<PointerValue<'ctx>> {
    Ok(match ty {
        BasicTypeEnum::StructType(s) => builder.build_struct_gep(s, ptr, index, "elem")?,
        _ => {
            let i32 = ptr.get_type().get_context().i32_type();
            // SAFETY: `index` is below the array's length (`elements`).
            unsafe { builder.build_in_bounds_gep(ty, ptr, &[i32.const_zero(), i32.const_int(u64::from(index), false)], "elem")? }
        }
    })
}

fn aggregate(v: BasicValueEnum<'_>) -> Option<AggregateValueEnum<'_>> {
    match v {
        BasicValueEnum::StructValue(s) => Some(s.into()),
        BasicValueEnum::ArrayValue(a) => Some(a.into()),
        _ => None,
    }
}

/// Stores `value` at `ptr` (aligned to `align`), element by element where [`splits`] says so.
pub(crate) fn store<'ctx>(builder: &Builder<'ctx>, td: &TargetData, ptr: PointerValue<'ctx>, value: BasicValueEnum<'ctx>, align: u32) -> R<()> {
    let ty = value.get_type();
    if splits(ty) {
        store_elements(builder, td, ptr, value, align)
    } else {
        store_whole(builder, ptr, value, align)
    }
}

fn store_whole<'ctx>(builder: &Builder<'ctx>, ptr: PointerValue<'ctx>, value: BasicValueEnum<'ctx>, align: u32) -> R<()> {
    let inst = builder.build_store(ptr, value)?;
    inst.set_alignment(align.max(1)).map_err(|e| super::BackendError::Internal(e.to_string()))
}

fn store_elements<'ctx>(builder: &Builder<'ctx>, td: &TargetData, ptr: PointerValue<'ctx>, value: BasicValueEnum<'ctx>, align: u32) -> R<()> {
    let ty = value.get_type();
    let Some(agg) = aggregate(value) else {
        return store_whole(builder, ptr, value, align);
    };
    for (index, offset, elem) in elements(td, ty) {
        if accesses(elem) == 0 {
            continue;
        }
        let part = builder.build_extract_value(agg, index, "part")?;
        let at = element_ptr(builder, ty, ptr, index)?;
        if matches!(elem, BasicTypeEnum::StructType(_) | BasicTypeEnum::ArrayType(_)) && splits(elem) {
            store_elements(builder, td, at, part, align_at(align, offset))?;
        } else {
            store_whole(builder, at, part, align_at(align, offset))?;
        }
    }
    Ok(())
}

/// Loads a value of type `ty` from `ptr` (aligned to `align`), element by element where
/// [`splits`] says so. Padding elements not loaded stay `poison` in the value.
pub(crate) fn load<'ctx>(builder: &Builder<'ctx>, td: &TargetData, ptr: PointerValue<'ctx>, ty: BasicTypeEnum<'ctx>, align: u32) -> R<BasicValueEnum<'ctx>> {
    if !splits(ty) {
        return load_whole(builder, ptr, ty, align);
    }
    let mut agg: AggregateValueEnum = match ty {
        BasicTypeEnum::StructType(s) => s.get_poison().into(),
        BasicTypeEnum::ArrayType(a) => a.get_poison().into(),
        _ => return load_whole(builder, ptr, ty, align),
    };
    for (index, offset, elem) in elements(td, ty) {
        if accesses(elem) == 0 {
            continue;
        }
        let at = element_ptr(builder, ty, ptr, index)?;
        let part = load(builder, td, at, elem, align_at(align, offset))?;
        agg = builder.build_insert_value(agg, part, index, "whole")?;
    }
    Ok(match agg {
        AggregateValueEnum::StructValue(s) => s.as_basic_value_enum(),
        AggregateValueEnum::ArrayValue(a) => a.as_basic_value_enum(),
    })
}

fn load_whole<'ctx>(builder: &Builder<'ctx>, ptr: PointerValue<'ctx>, ty: BasicTypeEnum<'ctx>, align: u32) -> R<BasicValueEnum<'ctx>> {
    let v = builder.build_load(ty, ptr, "load")?;
    if let Some(inst) = v.as_instruction_value() {
        inst.set_alignment(align.max(1)).map_err(|e| super::BackendError::Internal(e.to_string()))?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_at_an_offset_is_the_lower_of_the_two() {
        assert_eq!(align_at(16, 0), 16);
        assert_eq!(align_at(16, 8), 8);
        assert_eq!(align_at(16, 32), 16);
        assert_eq!(align_at(4, 2), 2);
        assert_eq!(align_at(8, 12), 4);
        assert_eq!(align_at(0, 0), 1);
    }
}
