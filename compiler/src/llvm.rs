//! Reading LLVM IR without inkwell's panics: what every part of cdpc that walks a module
//! (`back`, `pipeline`, `driver`) reads instructions' operands, types and users with.
//!
//! inkwell turns an operand, a type or a user into its Rust enums by the LLVM type's kind, and
//! panics on the kinds those enums lack: metadata (`llvm.experimental.noalias.scope.decl`'s
//! scope list, which inlining a function with `__restrict__` parameters leaves, `llvm.dbg.*`'s
//! operands, constrained floating point's rounding mode), tokens (convergence control,
//! `llvm.call.preallocated.*`), labels and target extension types. Device IR from Clang, from
//! any other front end, or after LLVM's own passes has all of them. The functions here answer
//! `None` for what has no basic type, so a pass that looks for values of a kind it handles skips
//! the rest, as it must.
//!
//! Invariant: nothing here panics on any instruction, operand, use or type of a valid module.

use inkwell::basic_block::BasicBlock;
use inkwell::llvm_sys::core::{LLVMGetNumOperands, LLVMGetOperand, LLVMGetTypeKind, LLVMGetUser, LLVMIsAInstruction, LLVMTypeOf, LLVMValueAsBasicBlock, LLVMValueIsBasicBlock};
use inkwell::llvm_sys::prelude::{LLVMTypeRef, LLVMValueRef};
use inkwell::llvm_sys::LLVMTypeKind;
use inkwell::types::{AnyTypeEnum, BasicTypeEnum};
use inkwell::values::{AnyValue, AsValueRef, BasicValueEnum, BasicValueUse, InstructionValue};

/// Whether a value of a type of this kind is one of inkwell's basic values (and its type one of
/// its basic types): integers, floating point, pointers, arrays, structs and vectors.
fn is_basic(kind: LLVMTypeKind) -> bool {
    use LLVMTypeKind::*;
    matches!(
        kind,
        LLVMHalfTypeKind
            | LLVMBFloatTypeKind
            | LLVMFloatTypeKind
            | LLVMDoubleTypeKind
            | LLVMX86_FP80TypeKind
            | LLVMFP128TypeKind
            | LLVMPPC_FP128TypeKind
            | LLVMIntegerTypeKind
            | LLVMPointerTypeKind
            | LLVMArrayTypeKind
            | LLVMStructTypeKind
            | LLVMVectorTypeKind
            | LLVMScalableVectorTypeKind
    )
}

/// The kind of the type `t`.
fn kind(t: LLVMTypeRef) -> LLVMTypeKind {
    // SAFETY: a query of a live type.
    unsafe { LLVMGetTypeKind(t) }
}

/// `v` as a basic value, if its type is a basic type.
fn basic_value<'ctx>(v: LLVMValueRef) -> Option<BasicValueEnum<'ctx>> {
    if v.is_null() {
        return None;
    }
    // SAFETY: `v` is a live value; `BasicValueEnum::new` is given only the type kinds it knows.
    unsafe {
        if LLVMValueIsBasicBlock(v) != 0 || !is_basic(kind(LLVMTypeOf(v))) {
            return None;
        }
        Some(BasicValueEnum::new(v))
    }
}

/// The `i`th operand of `inst` as a value, if it is one of a basic type: `None` past the last
/// operand and for a block, metadata, a token or a label.
pub fn operand<'ctx>(inst: InstructionValue<'ctx>, i: u32) -> Option<BasicValueEnum<'ctx>> {
    // SAFETY: queries of a live instruction; the index is checked against the operand count.
    let v = unsafe {
        let n = LLVMGetNumOperands(inst.as_value_ref());
        if n < 0 || i >= n as u32 {
            return None;
        }
        LLVMGetOperand(inst.as_value_ref(), i)
    };
    basic_value(v)
}

/// The `i`th operand of `inst` if it is a basic block (a branch's, a switch's targets).
pub fn block_operand<'ctx>(inst: InstructionValue<'ctx>, i: u32) -> Option<BasicBlock<'ctx>> {
    // SAFETY: queries of a live instruction; the index is checked against the operand count.
    unsafe {
        let n = LLVMGetNumOperands(inst.as_value_ref());
        if n < 0 || i >= n as u32 {
            return None;
        }
        let v = LLVMGetOperand(inst.as_value_ref(), i);
        if v.is_null() || LLVMValueIsBasicBlock(v) == 0 {
            return None;
        }
        BasicBlock::new(LLVMValueAsBasicBlock(v))
    }
}

/// The type of `inst`'s result, if it is a basic type: `None` for `void`, tokens, labels,
/// metadata and target extension types.
pub fn result_type<'ctx>(inst: InstructionValue<'ctx>) -> Option<BasicTypeEnum<'ctx>> {
    // SAFETY: a query of a live instruction; `AnyTypeEnum::new` is given only basic kinds.
    unsafe {
        let t = LLVMTypeOf(inst.as_value_ref());
        if !is_basic(kind(t)) {
            return None;
        }
        BasicTypeEnum::try_from(AnyTypeEnum::new(t)).ok()
    }
}

/// The instruction that is the user of `u`, if the user is one (a constant expression or a
/// global's initializer is not).
pub fn user_instruction<'ctx>(u: BasicValueUse<'ctx>) -> Option<InstructionValue<'ctx>> {
    // SAFETY: a query of a live use; the user is checked to be an instruction before it is
    // wrapped, and `InstructionValue` takes an instruction of any type.
    unsafe {
        let user = LLVMGetUser(u.as_mut_ptr());
        if user.is_null() || LLVMIsAInstruction(user).is_null() {
            return None;
        }
        Some(InstructionValue::new(user))
    }
}

/// Whether `v`'s type is a basic type, so that inkwell's conversions of it do not panic.
pub fn has_basic_type<'ctx>(v: &impl AnyValue<'ctx>) -> bool {
    // SAFETY: a query of a live value.
    is_basic(kind(unsafe { LLVMTypeOf(v.as_value_ref()) }))
}
