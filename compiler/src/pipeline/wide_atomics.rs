//! Atomic operations on 128 bits: PTX has them (`atom.cas.b128`, `atom.exch.b128`) from sm_90
//! on, and NVPTX writes them from PTX ISA 8.3 on, with the `.sys` scope that ptxas takes from
//! 8.4 on. Below sm_90 NVPTX stopped on them ("unsupported cmpxchg", `E1023`); from sm_90 a
//! module that holds one is written as PTX ISA 8.4 at least (where NVPTX's oldest for the
//! architecture is older). Both front ends ask here: LLVM IR from another one (Rust's
//! `AtomicU128`) and CUDA C++ (`__atomic_compare_exchange_n` of 16 bytes, which nvcc refuses
//! below sm_90 too, "calling a __host__ function ... __atomic_compare_exchange_16"); CUDA's
//! 128-bit `atomicCAS` is inline PTX (`front/cuda/additions.h`), declared from sm_90 on only.
//!
//! Changes nothing but the PTX version ([`require_ptx`]); [`refused`] is the diagnostic.

use inkwell::llvm_sys::core::{LLVMGetOperand, LLVMGetOrdering, LLVMTypeOf};
use inkwell::llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic;
use inkwell::module::Module;
use inkwell::types::AnyTypeEnum;
use inkwell::values::{AsValueRef, FunctionValue, InstructionOpcode, InstructionValue};

use super::SourceText;
use crate::diag::{Code, Diagnostic, Span};
use crate::target::SmVersion;

/// The PTX ISA version of 128-bit atomics as NVPTX writes them, as ten times the version:
/// ptxas 13.5 refuses `.b128` with `.sys` below 8.4 ("Feature '.b128 with .sys' requires PTX ISA
/// .version 8.4 or later").
pub const PTX: u32 = 84;

/// The first atomic operation on more than 64 bits in `module` (`cmpxchg`, `atomicrmw`, an
/// atomic `load` or `store` of `i128` or `fp128`; NVPTX makes the other read-modify-writes,
/// the loads and the stores loops of `atom.cas.b128` or an `atom.exch.b128`): its function and
/// instruction.
pub fn first<'ctx>(module: &Module<'ctx>) -> Option<(FunctionValue<'ctx>, InstructionValue<'ctx>)> {
    // SAFETY: the type of a live value.
    let wide = |v| match unsafe { AnyTypeEnum::new(LLVMTypeOf(v)) } {
        AnyTypeEnum::IntType(t) => t.get_bit_width() > 64,
        AnyTypeEnum::FloatType(t) => t == module.get_context().f128_type(),
        _ => false,
    };
    for f in module.get_functions() {
        for inst in f.get_basic_blocks().into_iter().flat_map(|b| b.get_instructions()) {
            let opcode = inst.get_opcode();
            let at = inst.as_value_ref();
            // SAFETY: the operands and ordering of a live instruction of the opcode matched.
            let (value, atomic) = unsafe {
                match opcode {
                    InstructionOpcode::AtomicCmpXchg | InstructionOpcode::AtomicRMW => (LLVMGetOperand(at, 1), true),
                    InstructionOpcode::Store => (LLVMGetOperand(at, 0), LLVMGetOrdering(at) != LLVMAtomicOrderingNotAtomic),
                    InstructionOpcode::Load => (at, LLVMGetOrdering(at) != LLVMAtomicOrderingNotAtomic),
                    _ => continue,
                }
            };
            if atomic && wide(value) {
                return Some((f, inst));
            }
        }
    }
    None
}

/// Makes a module with a 128-bit atomic operation PTX ISA [`PTX`] at least, where the oldest
/// PTX NVPTX writes for `sm` is older (sm_90, sm_90a). Returns whether it did.
pub fn require_ptx(module: &Module<'_>, sm: SmVersion) -> bool {
    if sm.number < 90 || sm.min_ptx() >= PTX || first(module).is_none() {
        return false;
    }
    super::qualifiers::require_ptx_version(module, PTX);
    true
}

/// `E1024` at the first 128-bit atomic operation of `module` when `sm` is older than sm_90.
pub fn refused(module: &Module<'_>, sm: SmVersion, shown: &SourceText) -> Option<Diagnostic> {
    if sm.number >= 90 {
        return None;
    }
    let (f, inst) = first(module)?;
    let what = match inst.get_opcode() {
        InstructionOpcode::AtomicCmpXchg => "a compare-and-swap",
        InstructionOpcode::AtomicRMW => "an atomic read-modify-write",
        InstructionOpcode::Load => "an atomic load",
        _ => "an atomic store",
    };
    let d = Diagnostic::new(Code::ArchitectureLacksOperation, Span::default(), format!("{what} of 128 bits needs sm_90 or later; the target is {sm}"))
        .with_primary_message("this operation")
        .with_note("PTX has 128-bit atomic operations (`atom.cas.b128`, `atom.exch.b128`) from sm_90 on, as CUDA's 128-bit `atomicCAS` and `atomicExch`; compile for `-arch=sm_90` or later, or make the operation 64 bits wide");
    Some(shown.place(d, inst, &f.get_name().to_string_lossy()))
}
