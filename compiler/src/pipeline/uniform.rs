//! Values every thread of every launch agrees on, on LLVM IR, made constants before
//! thresholding and aggregation decide (the rules of docs/AGGREGATION.md):
//!
//! - a launch's dynamic shared memory that is no constant in the IR but is one on every run
//!   (KLAP's QT asks for `4 * NUM_WARPS_PER_BLOCK * sizeof(int)` with `const int
//!   NUM_WARPS_PER_BLOCK = NUM_THREADS_PER_BLOCK / warpSize`) becomes that constant, so that
//!   one aggregated launch can ask for it for all;
//! - a launch through a pointer that holds one kernel's address on every run
//!   (`void *raw = (void *)k; ((kernel_fn)raw)<<<...>>>`) becomes a launch of that kernel.
//!
//! A uniform value is an integer constant; `warpSize` (`llvm.nvvm.read.ptx.sreg.warpsize`),
//! which is 32 on every NVIDIA GPU; a load from a local (`alloca`) whose one store is of a
//! uniform value and whose other uses are loads (a `const` local at `-O0`, or cdpc's code
//! before optimisation); and integer arithmetic and conversions of those, at most
//! [`MAX_DEPTH`] deep. A kernel's address is a function, or such a load of one.
//!
//! Invariant: only launch operands change, each to the value it has on every run; a module
//! with no launch is untouched.

use super::launch::{self, Launch};
use crate::llvm::{operand, user_instruction};
use inkwell::llvm_sys::core::{LLVMConstIntGetZExtValue, LLVMGetCalledValue, LLVMGetValueName2, LLVMIsAConstantInt};
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue};

/// The width of a warp on every NVIDIA GPU.
const WARP_SIZE: u64 = 32;

/// How many instructions deep a value is followed.
const MAX_DEPTH: u32 = 16;

/// Folds the shared memory sizes and kernel pointers of `launches` that are uniform (module
/// docs) into constants.
pub fn fold_launches(launches: &[Launch<'_>]) {
    for l in launches {
        let operand = |i: u32| operand(l.call, i);
        if let Some(BasicValueEnum::IntValue(v)) = operand(4).filter(|v| launch::constant_u64(*v).is_none()) {
            if let Some(c) = value(v.into()) {
                l.call.set_operand(4, v.get_type().const_int(c, false));
            }
        }
        if let Some(kernel) = operand(0).and_then(|k| kernel_address(k, 0)) {
            l.call.set_operand(0, kernel.as_global_value().as_pointer_value());
        }
    }
}

/// The value of integer `v` when it is uniform (module docs), zero-extended from its width.
fn value(v: BasicValueEnum<'_>) -> Option<u64> {
    fold(v, 0)
}

/// The kernel whose address `v` is on every run, when `v` is a load of a local that holds one
/// (a function itself is left as it is: `None`).
fn kernel_address<'ctx>(v: BasicValueEnum<'ctx>, depth: u32) -> Option<FunctionValue<'ctx>> {
    let inst = v.as_instruction_value().filter(|_| depth <= MAX_DEPTH)?;
    if inst.get_opcode() != InstructionOpcode::Load {
        return None;
    }
    let stored = single_store(inst)?;
    match super::clone::as_function(stored.as_value_ref()) {
        Some(f) => Some(f).filter(|f| f.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV),
        None => kernel_address(stored, depth + 1),
    }
}

fn width(v: BasicValueEnum<'_>) -> Option<u32> {
    match v {
        BasicValueEnum::IntValue(i) => Some(i.get_type().get_bit_width()),
        _ => None,
    }
}

fn mask(x: u64, bits: u32) -> u64 {
    if bits >= 64 {
        x
    } else {
        x & ((1u64 << bits) - 1)
    }
}

/// `x` of `bits` bits as a signed number.
fn signed(x: u64, bits: u32) -> i64 {
    if bits == 0 || bits >= 64 {
        x as i64
    } else {
        let shift = 64 - bits;
        ((x << shift) as i64) >> shift
    }
}

fn fold(v: BasicValueEnum<'_>, depth: u32) -> Option<u64> {
    let bits = width(v)?;
    if bits > 64 || depth > MAX_DEPTH {
        return None;
    }
    // SAFETY: a query of a live value.
    if unsafe { !LLVMIsAConstantInt(v.as_value_ref()).is_null() } {
        return Some(mask(unsafe { LLVMConstIntGetZExtValue(v.as_value_ref()) }, bits));
    }
    let inst = v.as_instruction_value()?;
    let op = |i: u32| operand(inst, i);
    let folded = |i: u32| op(i).and_then(|o| fold(o, depth + 1));
    let from = |i: u32| op(i).and_then(width);
    let result = match inst.get_opcode() {
        InstructionOpcode::Call => (called_name(inst)? == "llvm.nvvm.read.ptx.sreg.warpsize").then_some(WARP_SIZE)?,
        InstructionOpcode::Load => single_store(inst).and_then(|stored| fold(stored, depth + 1))?,
        InstructionOpcode::ZExt => folded(0)?,
        InstructionOpcode::SExt => signed(folded(0)?, from(0)?) as u64,
        InstructionOpcode::Trunc => folded(0)?,
        opcode => {
            let (a, b) = (folded(0)?, folded(1)?);
            let (sa, sb) = (signed(a, bits), signed(b, bits));
            match opcode {
                InstructionOpcode::Add => a.wrapping_add(b),
                InstructionOpcode::Sub => a.wrapping_sub(b),
                InstructionOpcode::Mul => a.wrapping_mul(b),
                InstructionOpcode::UDiv => a.checked_div(b)?,
                InstructionOpcode::URem => a.checked_rem(b)?,
                InstructionOpcode::SDiv => sa.checked_div(sb)? as u64,
                InstructionOpcode::SRem => sa.checked_rem(sb)? as u64,
                InstructionOpcode::Shl if b < u64::from(bits) => a << b,
                InstructionOpcode::LShr if b < u64::from(bits) => a >> b,
                InstructionOpcode::AShr if b < u64::from(bits) => (sa >> b) as u64,
                InstructionOpcode::And => a & b,
                InstructionOpcode::Or => a | b,
                InstructionOpcode::Xor => a ^ b,
                _ => return None,
            }
        }
    };
    Some(mask(result, bits))
}

fn called_name(call: InstructionValue<'_>) -> Option<String> {
    // SAFETY: the callee operand of a live call and its name.
    unsafe {
        let callee = LLVMGetCalledValue(call.as_value_ref());
        if callee.is_null() {
            return None;
        }
        let mut len = 0;
        let name = LLVMGetValueName2(callee, &mut len);
        (!name.is_null()).then(|| String::from_utf8_lossy(std::slice::from_raw_parts(name.cast::<u8>(), len)).into_owned())
    }
}

/// The value stored by the one store into the `alloca` that `load` reads, when every other use
/// of it is a load or a lifetime marker.
pub(super) fn single_store<'ctx>(load: InstructionValue<'ctx>) -> Option<BasicValueEnum<'ctx>> {
    let slot = operand(load, 0)?.as_instruction_value().filter(|a| a.get_opcode() == InstructionOpcode::Alloca)?;
    let mut stored = None;
    let mut next = slot.get_first_use();
    while let Some(u) = next {
        next = u.get_next_use();
        let user = user_instruction(u);
        match user.map(|i| (i, i.get_opcode())) {
            Some((_, InstructionOpcode::Load)) => {}
            Some((s, InstructionOpcode::Store)) if operand(s, 1).is_some_and(|p| p.as_value_ref() == slot.as_value_ref()) => {
                if stored.is_some() {
                    return None;
                }
                stored = operand(s, 0);
            }
            Some((c, InstructionOpcode::Call)) if called_name(c).is_some_and(|n| n.starts_with("llvm.lifetime")) => {}
            _ => return None,
        }
    }
    stored
}
