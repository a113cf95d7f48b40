//! HIR types to LLVM types.
//!
//! Every value has a memory type (how it is stored, passed and returned) and a register type
//! (how it lives in SSA form); they differ only for `bool`, which is `i1` in registers and `i8`
//! in memory, as in clang. Pointers are opaque generic `ptr` (address space 0).

use super::{internal, BackendError, R};
use crate::front::cdp::hir;
use crate::types::{round_up, FloatKind, IntKind, Type};
use inkwell::context::Context;
use inkwell::targets::TargetData;
use inkwell::types::{BasicType, BasicTypeEnum, IntType, StructType};
use inkwell::AddressSpace;

/// How a struct's HIR fields map onto the LLVM struct's elements.
pub(crate) struct StructInfo<'ctx> {
    pub ty: StructType<'ctx>,
    /// LLVM element index of each HIR field (padding elements are skipped).
    pub field_slots: Vec<u32>,
    /// Each LLVM element: `None` for a HIR field, `Some(ty)` for a filler of type `ty` (an
    /// `[n x i8]` of padding, or the `[0 x <A x i8>]` that gives an over-aligned struct its
    /// alignment `A`).
    pub elements: Vec<Option<BasicTypeEnum<'ctx>>>,
    /// A union: only its first field has a slot (the others are read and written through the
    /// union's address, where every member starts).
    pub union: bool,
}

pub(crate) struct Types<'ctx> {
    ctx: &'ctx Context,
    pointer_bytes: u64,
    long_bytes: u64,
    pub structs: Vec<StructInfo<'ctx>>,
}

/// Whether C's natural layout of `fields` (each at the next multiple of its alignment, size
/// rounded up to the largest alignment) gives exactly the offsets and size sema computed. When
/// it does, a plain (non-packed) LLVM struct has the same layout, because the NVPTX data
/// layout aligns every scalar like C does.
pub(crate) fn struct_layout_is_natural(def: &hir::StructDef, hir_module: &hir::Module) -> bool {
    !has_bit_fields(def) && natural_end_and_align(def, hir_module).is_some_and(|(end, max_align)| max_align == def.align && round_up(end, max_align) == def.size)
}

/// Where `def`'s last field ends and its fields' largest alignment, when every field sits at the
/// next multiple of its alignment (C's natural placement); `None` when one does not.
fn natural_end_and_align(def: &hir::StructDef, hir_module: &hir::Module) -> Option<(u64, u64)> {
    let mut end = 0u64;
    let mut max_align = 1u64;
    for field in &def.fields {
        let (size, align) = hir_module.size_align(&field.ty);
        if round_up(end, align) != field.offset {
            return None;
        }
        end = field.offset + size;
        max_align = max_align.max(align);
    }
    Some((end, max_align))
}

/// Whether `def` is laid out naturally but for an alignment above its fields' (CUDA's
/// `float2` is two floats aligned to 8, `double2` two doubles aligned to 16): then an LLVM
/// struct with a leading `[0 x <A x i8>]`, which takes no room but is A-aligned (NVPTX aligns
/// vectors to their size), has sema's layout and alignment, in memory and as a parameter.
fn over_aligned_but_natural(def: &hir::StructDef, hir_module: &hir::Module) -> bool {
    !has_bit_fields(def)
        && natural_end_and_align(def, hir_module).is_some_and(|(end, max_align)| def.align > max_align && def.align.is_power_of_two() && def.align <= 256 && round_up(end, def.align) == def.size)
}

/// A struct with bit-fields is laid out packed, its bit-fields' bytes as fillers of bytes
/// (`bit_fields.rs` reads and writes them; `globals.rs` fills them in constants).
fn has_bit_fields(def: &hir::StructDef) -> bool {
    def.fields.iter().any(|f| f.bits.is_some())
}

/// The slot of a bit-field, which has no LLVM element of its own.
pub(crate) const NO_SLOT: u32 = u32::MAX;

impl<'ctx> Types<'ctx> {
    /// Builds every struct type of the module and checks LLVM's layout against sema's.
    pub fn new(ctx: &'ctx Context, hir_module: &hir::Module, td: &TargetData) -> R<Self> {
        let mut types = Types { ctx, pointer_bytes: hir_module.target.address_size.pointer_bytes(), long_bytes: hir_module.target.long_bytes(), structs: Vec::new() };
        // Named opaque types first, so that fields may name any struct.
        for def in &hir_module.structs {
            let ty = ctx.opaque_struct_type(&format!("struct.{}", def.name));
            types.structs.push(StructInfo { ty, field_slots: Vec::new(), elements: Vec::new(), union: def.union });
        }
        for (index, def) in hir_module.structs.iter().enumerate() {
            if def.union {
                types.union_body(index, def, hir_module)?;
                continue;
            }
            // A struct with bit-fields: its fields at sema's offsets, bytes between them, and
            // in front the filler that gives it its alignment (not packed, so that it keeps it).
            let bit_fields = has_bit_fields(def) && def.align > 1;
            let over_aligned = bit_fields || over_aligned_but_natural(def, hir_module);
            let natural = !has_bit_fields(def) && (over_aligned || struct_layout_is_natural(def, hir_module));
            let mut elements: Vec<BasicTypeEnum<'ctx>> = Vec::new();
            let mut kinds = Vec::new();
            let mut slots = Vec::new();
            let mut end = 0u64;
            if over_aligned {
                let filler = ctx.i8_type().vec_type(def.align as u32).array_type(0).into();
                elements.push(filler);
                kinds.push(Some(filler));
            }
            for field in &def.fields {
                if field.bits.is_some() {
                    slots.push(NO_SLOT);
                    continue;
                }
                if !natural && field.offset > end {
                    let pad = ctx.i8_type().array_type(to_u32(field.offset - end)?).into();
                    elements.push(pad);
                    kinds.push(Some(pad));
                }
                slots.push(elements.len() as u32);
                elements.push(types.mem(&field.ty)?);
                kinds.push(None);
                end = field.offset + hir_module.size_align(&field.ty).0;
            }
            if !natural && def.size > end {
                let pad = ctx.i8_type().array_type(to_u32(def.size - end)?).into();
                elements.push(pad);
                kinds.push(Some(pad));
            }
            types.structs[index].ty.set_body(&elements, !natural && !has_bit_fields(def));
            types.structs[index].field_slots = slots;
            types.structs[index].elements = kinds;
        }
        // The contract: LLVM must place every field where sema's layout says.
        for (index, def) in hir_module.structs.iter().enumerate() {
            let info = &types.structs[index];
            if td.get_abi_size(&info.ty) != def.size {
                return internal(format!("struct {}: LLVM size {} differs from sema's {}", def.name, td.get_abi_size(&info.ty), def.size));
            }
            if def.size > 0 && natural_alignment(td, info) != def.align && struct_layout_is_natural(def, hir_module) | over_aligned_but_natural(def, hir_module) | has_bit_fields(def) {
                return internal(format!("struct {}: LLVM alignment {} differs from sema's {}", def.name, natural_alignment(td, info), def.align));
            }
            for (field, slot) in def.fields.iter().zip(&info.field_slots).filter(|(_, slot)| **slot != NO_SLOT) {
                if td.offset_of_element(&info.ty, *slot) != Some(field.offset) {
                    return internal(format!("struct {}: field {} is not at offset {}", def.name, field.name, field.offset));
                }
            }
        }
        Ok(types)
    }

    /// A union as clang lays one out: its first member, then bytes up to its size, and in front
    /// a `[0 x <A x i8>]` that takes no room and gives it the alignment `A` of its most aligned
    /// member, so that a constant initializer of the first member is an ordinary struct value.
    fn union_body(&mut self, index: usize, def: &hir::StructDef, hir_module: &hir::Module) -> R<()> {
        let mut elements: Vec<BasicTypeEnum<'ctx>> = Vec::new();
        let mut kinds = Vec::new();
        let mut slots = Vec::new();
        // A bit-field first has no element: its bits are the filler's (`globals.rs`).
        let first = def.fields.first().filter(|f| f.bits.is_none());
        let first_align = first.map_or(1, |f| hir_module.size_align(&f.ty).1);
        if def.align > first_align {
            let filler = self.ctx.i8_type().vec_type(def.align as u32).array_type(0).into();
            elements.push(filler);
            kinds.push(Some(filler));
        }
        let mut end = 0;
        if let Some(field) = first {
            slots.push(elements.len() as u32);
            elements.push(self.mem(&field.ty)?);
            kinds.push(None);
            end = hir_module.size_align(&field.ty).0;
        }
        if def.size > end {
            let pad = self.ctx.i8_type().array_type(to_u32(def.size - end)?).into();
            elements.push(pad);
            kinds.push(Some(pad));
        }
        let info = &mut self.structs[index];
        info.ty.set_body(&elements, false);
        info.field_slots = slots;
        info.elements = kinds;
        Ok(())
    }

    /// Whether `ty` is a union (its members are reached through its address, not by index).
    pub fn is_union(&self, ty: &Type) -> bool {
        matches!(ty, Type::Struct(id) if self.structs.get(id.0 as usize).is_some_and(|s| s.union))
    }

    pub fn ptr(&self) -> inkwell::types::PointerType<'ctx> {
        self.ctx.ptr_type(AddressSpace::default())
    }

    /// The integer type as wide as a pointer (`size_t`, `ptrdiff_t`).
    pub fn intptr(&self) -> IntType<'ctx> {
        self.int((self.pointer_bytes * 8) as u32)
    }

    /// The integer type of `bits` bits; C's integers are 1 (bool), 8, 16, 32 or 64 bits wide.
    pub fn int(&self, bits: u32) -> IntType<'ctx> {
        match bits {
            1 => self.ctx.bool_type(),
            8 => self.ctx.i8_type(),
            16 => self.ctx.i16_type(),
            32 => self.ctx.i32_type(),
            _ => self.ctx.i64_type(),
        }
    }

    /// `dim3` is `{ i32, i32, i32 }`, which NVPTX passes as `.param .align 4 .b8 [12]`.
    pub fn dim3(&self) -> StructType<'ctx> {
        let i32 = self.ctx.i32_type().into();
        self.ctx.struct_type(&[i32, i32, i32], false)
    }

    pub fn int_bits(&self, kind: IntKind) -> u32 {
        match kind {
            IntKind::Bool => 1,
            IntKind::Char | IntKind::SChar | IntKind::UChar => 8,
            IntKind::Short | IntKind::UShort => 16,
            IntKind::Int | IntKind::UInt => 32,
            IntKind::Long | IntKind::ULong => (self.long_bytes * 8) as u32,
            IntKind::LongLong | IntKind::ULongLong => 64,
        }
    }

    /// The type of a value in memory, in parameters and in return values.
    pub fn mem(&self, ty: &Type) -> R<BasicTypeEnum<'ctx>> {
        Ok(match ty {
            Type::Int(IntKind::Bool) => self.ctx.i8_type().into(),
            _ => return self.reg(ty),
        })
    }

    /// The type of a value in an SSA register.
    pub fn reg(&self, ty: &Type) -> R<BasicTypeEnum<'ctx>> {
        Ok(match ty {
            Type::Void => return internal("void has no LLVM value type"),
            Type::Int(kind) => self.int(self.int_bits(*kind)).into(),
            Type::CudaError => self.ctx.i32_type().into(),
            Type::Enum { underlying, .. } => return self.reg(&Type::Int(*underlying)),
            Type::Float(FloatKind::Float) => self.ctx.f32_type().into(),
            Type::Float(FloatKind::Double) => self.ctx.f64_type().into(),
            Type::Pointer { .. } | Type::Stream | Type::Event | Type::FnPtr(_) => self.ptr().into(),
            Type::Array { elem, len } => self.mem(elem)?.array_type(to_u32(*len)?).into(),
            Type::Struct(id) => match self.structs.get(id.0 as usize) {
                Some(info) => info.ty.into(),
                None => return internal(format!("unknown struct id {}", id.0)),
            },
            Type::Dim3 => self.dim3().into(),
        })
    }

    /// The LLVM element index of a struct field, or the dim3 component.
    pub fn field_slot(&self, ty: &Type, index: u32) -> R<u32> {
        match ty {
            Type::Struct(id) => {
                self.structs.get(id.0 as usize).and_then(|info| info.field_slots.get(index as usize).copied()).ok_or_else(|| BackendError::Internal(format!("struct {} has no field {index}", id.0)))
            }
            Type::Dim3 if index < 3 => Ok(index),
            _ => internal(format!("member {index} of a non-struct type {ty:?}")),
        }
    }

    /// The HIR type of a struct field or dim3 component.
    pub fn field_type(&self, hir_module: &hir::Module, ty: &Type, index: u32) -> R<Type> {
        match ty {
            Type::Struct(id) => hir_module
                .structs
                .get(id.0 as usize)
                .and_then(|def| def.fields.get(index as usize))
                .map(|f| f.ty.clone())
                .ok_or_else(|| BackendError::Internal(format!("struct {} has no field {index}", id.0))),
            Type::Dim3 => Ok(Type::UINT),
            _ => internal(format!("member {index} of a non-struct type {ty:?}")),
        }
    }
}

fn natural_alignment(td: &TargetData, info: &StructInfo<'_>) -> u64 {
    u64::from(td.get_abi_alignment(&info.ty))
}

fn to_u32(n: u64) -> R<u32> {
    u32::try_from(n).map_err(|_| BackendError::Internal(format!("array of {n} elements is too large for LLVM")))
}
