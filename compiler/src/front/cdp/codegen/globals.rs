//! Module-scope variables: one LLVM global per HIR global, in the NVPTX address space of its
//! CUDA memory space, with constant initializers built from `ConstInit`.

use super::{internal, Codegen, R};
use crate::front::cdp::hir::{ConstInit, GlobalId, GlobalSpace};
use crate::types::{FloatKind, Type};
use inkwell::module::Linkage;
use inkwell::types::{AsTypeRef, BasicTypeEnum};
use inkwell::values::{AsValueRef, BasicValueEnum, PointerValue};
use inkwell::AddressSpace;

/// NVPTX address spaces.
pub(crate) const GLOBAL_AS: u16 = 1;
pub(crate) const SHARED_AS: u16 = 3;
pub(crate) const CONST_AS: u16 = 4;

impl<'ctx> Codegen<'ctx, '_> {
    pub(crate) fn declare_globals(&mut self) -> R<()> {
        for global in &self.hir.globals {
            let (space, align) = match global.space {
                GlobalSpace::Device => (GLOBAL_AS, None),
                GlobalSpace::Constant | GlobalSpace::StringLiteral => (CONST_AS, None),
                GlobalSpace::Shared => (SHARED_AS, None),
                // Dynamic shared memory starts at the base of the block's shared window,
                // which is 16-aligned; every extern declaration is an alias of that base.
                GlobalSpace::ExternShared => (SHARED_AS, Some(16)),
            };
            let ty = self.types.mem(&global.ty)?;
            let g = self.module.add_global(ty, Some(AddressSpace::from(space)), &global.symbol(self.hir));
            let natural = self.hir.size_align(&global.ty).1 as u32;
            g.set_alignment(align.unwrap_or(natural).max(1));
            match global.space {
                // Defined by another translation unit: a declaration (`.extern` in the PTX).
                GlobalSpace::Device | GlobalSpace::Constant if global.external => g.set_linkage(Linkage::External),
                // A function's `static` local: internal, and no host code can name it.
                GlobalSpace::Device if global.local.is_some() => g.set_linkage(Linkage::Internal),
                GlobalSpace::Device | GlobalSpace::Constant => {
                    // Visible so that the host can find the symbol (a `static` one is internal,
                    // but its file's host code still finds it by name); the host may also write
                    // it (cudaMemcpyToSymbol), so the optimiser must not assume the initial value.
                    if global.internal {
                        g.set_linkage(Linkage::Internal);
                        self.used.push(g.as_pointer_value());
                    } else {
                        g.set_linkage(Linkage::External);
                    }
                    g.set_externally_initialized(true);
                }
                GlobalSpace::StringLiteral => {
                    g.set_linkage(Linkage::Internal);
                    g.set_constant(true);
                    g.set_unnamed_addr(true);
                }
                GlobalSpace::Shared => {
                    // Shared memory cannot be initialised; undef is what NVPTX expects.
                    g.set_linkage(Linkage::Internal);
                    g.set_initializer(&undef(ty));
                }
                GlobalSpace::ExternShared => g.set_linkage(Linkage::External),
            }
            if global.managed {
                crate::back::annotate_managed(&self.module, g);
            }
            self.globals.push(g);
        }
        Ok(())
    }

    /// Initializers come after all declarations, as they may take other globals' addresses.
    pub(crate) fn define_global_initializers(&mut self) -> R<()> {
        for (index, global) in self.hir.globals.iter().enumerate() {
            if global.external || matches!(global.space, GlobalSpace::Shared | GlobalSpace::ExternShared) {
                continue;
            }
            let value = match &global.init {
                Some(init) => self.const_init(init, &global.ty)?,
                None => self.types.mem(&global.ty)?.const_zero(),
            };
            self.globals[index].set_initializer(&value);
        }
        Ok(())
    }

    /// A global's address as a generic pointer (a constant `addrspacecast`).
    pub(crate) fn global_ptr(&self, id: GlobalId) -> R<PointerValue<'ctx>> {
        match self.globals.get(id.0 as usize) {
            Some(g) => Ok(g.as_pointer_value().const_address_space_cast(self.types.ptr())),
            None => internal(format!("unknown global {}", id.0)),
        }
    }

    /// A constant of `ty`'s memory type.
    fn const_init(&self, init: &ConstInit, ty: &Type) -> R<BasicValueEnum<'ctx>> {
        let llvm_ty = self.types.mem(ty)?;
        Ok(match (init, ty) {
            (ConstInit::Zero, _) => llvm_ty.const_zero(),
            (ConstInit::Int(v), Type::Int(_) | Type::CudaError) => llvm_ty.into_int_type().const_int(*v as u64, false).into(),
            (ConstInit::Int(v), Type::Float(_)) => llvm_ty.into_float_type().const_float(*v as f64).into(),
            (ConstInit::Float(v), Type::Float(FloatKind::Float)) => llvm_ty.into_float_type().const_float(*v as f32 as f64).into(),
            (ConstInit::Float(v), Type::Float(FloatKind::Double)) => llvm_ty.into_float_type().const_float(*v).into(),
            (ConstInit::Float(v), Type::Int(_)) => llvm_ty.into_int_type().const_int(*v as i64 as u64, false).into(),
            (ConstInit::Int(0), t) if t.is_pointer_like() => llvm_ty.const_zero(),
            (ConstInit::Int(v), t) if t.is_pointer_like() => self.types.intptr().const_int(*v as u64, false).const_to_pointer(self.types.ptr()).into(),
            (ConstInit::GlobalAddress(g), t) if t.is_pointer_like() => self.global_ptr(*g)?.into(),
            (ConstInit::FunctionAddress(f), Type::FnPtr(_)) => match self.functions.get(f.0 as usize) {
                Some(f) => f.as_global_value().as_pointer_value().into(),
                None => return internal(format!("unknown function {}", f.0)),
            },
            (ConstInit::GlobalAddress(g), Type::Int(_)) => self.global_ptr(*g)?.const_to_int(llvm_ty.into_int_type()).into(),
            (ConstInit::Array(elems), Type::Array { elem, len }) => {
                let elem_ty = self.types.mem(elem)?;
                let mut values = Vec::with_capacity(*len as usize);
                for i in 0..*len as usize {
                    values.push(match elems.get(i) {
                        Some(e) => self.const_init(e, elem)?,
                        None => elem_ty.const_zero(),
                    });
                }
                const_array(elem_ty, &values)
            }
            (ConstInit::Struct(fields), Type::Struct(id)) => {
                let def = self.hir.struct_def(*id);
                let info = &self.types.structs[id.0 as usize];
                let mut values = Vec::with_capacity(info.elements.len());
                let mut field = 0usize;
                // The bytes of the bit-fields, which sit in the struct's fillers (`types.rs`).
                let image = self.bit_field_image(def, fields)?;
                let mut at = 0usize;
                for element in &info.elements {
                    match element {
                        Some(filler) => {
                            let array = filler.into_array_type();
                            let bytes = if array.get_element_type().is_int_type() { array.len() as usize } else { 0 };
                            values.push(match image.get(at..at + bytes) {
                                Some(part) if bytes > 0 && part.iter().any(|b| *b != 0) => {
                                    let i8 = self.ctx.i8_type();
                                    let part: Vec<BasicValueEnum> = part.iter().map(|b| i8.const_int(u64::from(*b), false).into()).collect();
                                    const_array(i8.into(), &part)
                                }
                                _ => filler.const_zero(),
                            });
                            at += bytes;
                        }
                        None => {
                            while def.fields.get(field).is_some_and(|f| f.bits.is_some()) {
                                field += 1;
                            }
                            let Some(f) = def.fields.get(field) else { return internal(format!("struct {} has fewer fields than elements", def.name)) };
                            at = (f.offset + self.hir.size_align(&f.ty).0) as usize;
                            let fty = &def.fields[field].ty;
                            values.push(match fields.get(field) {
                                Some(f) => self.const_init(f, fty)?,
                                None => self.types.mem(fty)?.const_zero(),
                            });
                            field += 1;
                        }
                    }
                }
                info.ty.const_named_struct(&values).into()
            }
            (ConstInit::Struct(fields), Type::Dim3) => {
                let i32 = self.ctx.i32_type();
                let mut values: Vec<BasicValueEnum> = Vec::new();
                for i in 0..3 {
                    values.push(match fields.get(i) {
                        Some(f) => self.const_init(f, &Type::UINT)?,
                        None => i32.const_int(1, false).into(),
                    });
                }
                self.types.dim3().const_named_struct(&values).into()
            }
            (other, ty) => return internal(format!("initializer {other:?} does not fit type {ty:?}")),
        })
    }
}

impl Codegen<'_, '_> {
    /// The bytes of a struct constant that its bit-fields' values set (empty without
    /// bit-fields); each value is cut to its width, as a store would.
    fn bit_field_image(&self, def: &crate::front::cdp::hir::StructDef, inits: &[ConstInit]) -> R<Vec<u8>> {
        if def.fields.iter().all(|f| f.bits.is_none()) {
            return Ok(Vec::new());
        }
        let mut image = vec![0u8; def.size as usize];
        for (field, init) in def.fields.iter().zip(inits) {
            let Some(bf) = field.bits else { continue };
            let value = match init {
                ConstInit::Int(v) => *v,
                ConstInit::Float(v) => *v as i64,
                ConstInit::Zero => 0,
                other => return internal(format!("bit-field {} initialised by {other:?}", field.name)),
            };
            for bit in 0..bf.width {
                if (value >> bit.min(63)) & 1 == 1 {
                    let at = field.offset as usize * 8 + (bf.shift + bit) as usize;
                    if let Some(byte) = image.get_mut(at / 8) {
                        *byte |= 1 << (at % 8);
                    }
                }
            }
        }
        Ok(image)
    }
}

/// `undef` of any first-class type (inkwell only offers it per type kind).
pub(crate) fn undef<'ctx>(ty: BasicTypeEnum<'ctx>) -> BasicValueEnum<'ctx> {
    // SAFETY: LLVMGetUndef returns a valid constant of the given valid type.
    unsafe { BasicValueEnum::new(inkwell::llvm_sys::core::LLVMGetUndef(ty.as_type_ref())) }
}

/// `poison` of any first-class type.
pub(crate) fn poison<'ctx>(ty: BasicTypeEnum<'ctx>) -> BasicValueEnum<'ctx> {
    // SAFETY: LLVMGetPoison returns a valid constant of the given valid type.
    unsafe { BasicValueEnum::new(inkwell::llvm_sys::core::LLVMGetPoison(ty.as_type_ref())) }
}

/// A constant array of any element type (inkwell's is split by element kind).
fn const_array<'ctx>(elem: BasicTypeEnum<'ctx>, values: &[BasicValueEnum<'ctx>]) -> BasicValueEnum<'ctx> {
    let mut refs: Vec<_> = values.iter().map(|v| v.as_value_ref()).collect();
    // SAFETY: every value is a constant of type `elem` (built by const_init for that type).
    unsafe { BasicValueEnum::new(inkwell::llvm_sys::core::LLVMConstArray2(elem.as_type_ref(), refs.as_mut_ptr(), refs.len() as u64)) }
}
