//! Struct copies through local memory as word copies, so that SROA can take the local apart.
//!
//! The launch rewrites gather a launch's arguments in a local block of bytes (`launch.args`,
//! `agg.args`, `PREFIX.args`, `byval.copy`) that is filled and emptied with `llvm.memcpy`: a
//! by-value struct copied in whole, the whole block copied out to the runtime's buffer or a
//! record. SROA splits an alloca at the loads and stores it sees, but a memcpy that covers
//! several of its slices keeps them together, and then NVPTX's back end expands every memcpy
//! of more than 128 bytes to a byte loop (`NVPTXLowerAggrCopies`), which pins the alloca in
//! local memory: 240-byte stack frames in KLAP's MST parents where nvcc has none.
//!
//! [`expand_local_copies`] rewrites each `llvm.memcpy` of a constant size of at most
//! [`MAX_BYTES`] (the kernel parameter space's classic limit; no launch block is larger) whose
//! destination or source lies at a constant offset in an `alloca` or a `byval` parameter into
//! loads and stores of the widest integer both sides' alignments allow (up to 8 bytes), in
//! address order. Volatile copies, copies of unknown size and copies between two places that
//! are neither local are left as they are.
//!
//! Invariant: afterwards no non-volatile `llvm.memcpy` of a constant size up to [`MAX_BYTES`]
//! reads or writes a function's local memory (an alloca or a `byval` parameter, at a constant
//! offset); the bytes moved, their order within the copy and the pointers' alignments are the
//! memcpy's. A module without such a copy is untouched. Run before SROA (in
//! [`super::cleanup`], after the helpers are inlined).

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::builder::Builder;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, BasicValue, CallSiteValue, FunctionValue, InstructionOpcode, InstructionValue, PointerValue};

/// The largest copy expanded, in bytes.
pub const MAX_BYTES: u64 = 4096;
/// The widest word a copy moves at once.
const WORD: u64 = 8;

/// Rewrites the module's local struct copies as word copies (module docs). Returns how many
/// copies it rewrote.
pub fn expand_local_copies(module: &Module<'_>) -> usize {
    let mut copies = Vec::new();
    for f in module.get_functions() {
        for block in f.get_basic_blocks() {
            for inst in block.get_instructions() {
                if let Some(c) = local_copy(inst) {
                    copies.push(c);
                }
            }
        }
    }
    let n = copies.len();
    for c in copies {
        expand(module, c);
    }
    n
}

/// One copy to expand: the call, its pointers and their alignments, its size.
struct Copy<'ctx> {
    call: InstructionValue<'ctx>,
    dst: LLVMValueRef,
    src: LLVMValueRef,
    dst_align: u64,
    src_align: u64,
    size: u64,
}

fn local_copy(inst: InstructionValue<'_>) -> Option<Copy<'_>> {
    if inst.get_opcode() != InstructionOpcode::Call {
        return None;
    }
    let call = CallSiteValue::try_from(inst).ok()?;
    let callee = call.get_called_fn_value()?;
    let name = callee.get_name().to_bytes();
    if !name.starts_with(b"llvm.memcpy.") || inst.get_num_operands() != 5 {
        return None;
    }
    let operand = |i: u32| -> LLVMValueRef {
        // SAFETY: operand `i` (< 4) of a live call of five operands.
        unsafe { LLVMGetOperand(inst.as_value_ref(), i) }
    };
    let (dst, src, len, volatile) = (operand(0), operand(1), operand(2), operand(3));
    let size = constant(len)?;
    if constant(volatile) != Some(0) || size == 0 || size > MAX_BYTES {
        return None;
    }
    if !is_local(dst) && !is_local(src) {
        return None;
    }
    let align = |i: u32| call.get_enum_attribute(AttributeLoc::Param(i), Attribute::get_named_enum_kind_id("align")).map(|a| a.get_enum_value()).filter(|a| a.is_power_of_two()).unwrap_or(1);
    Some(Copy { call: inst, dst, src, dst_align: align(0), src_align: align(1), size })
}

fn constant(v: LLVMValueRef) -> Option<u64> {
    // SAFETY: queries of a live value.
    unsafe { (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetZExtValue(v)) }
}

/// Whether `p` points at a constant offset into an alloca or a `byval` parameter.
fn is_local(mut p: LLVMValueRef) -> bool {
    // SAFETY: queries of live values; the operands of a GEP or a cast are values.
    unsafe {
        for _ in 0..64 {
            if !LLVMIsAAllocaInst(p).is_null() {
                return true;
            }
            if !LLVMIsAArgument(p).is_null() {
                let f = FunctionValue::new(LLVMGetParamParent(p)).expect("a parameter's function");
                let index = (0..f.count_params()).find(|&i| f.get_nth_param(i).is_some_and(|q| q.as_value_ref() == p));
                return index.is_some_and(|i| f.get_enum_attribute(AttributeLoc::Param(i), Attribute::get_named_enum_kind_id("byval")).is_some());
            }
            let gep = !LLVMIsAGetElementPtrInst(p).is_null() || (!LLVMIsAConstantExpr(p).is_null() && LLVMGetConstOpcode(p) == inkwell::llvm_sys::LLVMOpcode::LLVMGetElementPtr);
            let cast = !LLVMIsABitCastInst(p).is_null() || !LLVMIsAAddrSpaceCastInst(p).is_null();
            if gep {
                let constant_indices = (1..LLVMGetNumOperands(p) as u32).all(|i| !LLVMIsAConstantInt(LLVMGetOperand(p, i)).is_null());
                if !constant_indices {
                    return false;
                }
            } else if !cast {
                return false;
            }
            p = LLVMGetOperand(p, 0);
        }
    }
    false
}

/// The alignment of `base + offset` when `base` is aligned to `align`.
pub(super) fn aligned_at(align: u64, offset: u64) -> u64 {
    if offset == 0 {
        align
    } else {
        align.min(1 << offset.trailing_zeros())
    }
}

fn expand<'ctx>(module: &Module<'ctx>, c: Copy<'ctx>) {
    let b = module.get_context().create_builder();
    b.position_before(&c.call);
    // SAFETY: the pointers are live values of pointer type (the memcpy's operands).
    let (dst, src) = unsafe { (PointerValue::new(c.dst), PointerValue::new(c.src)) };
    let location = c.call.get_debug_location();
    for (load, store) in word_copy(&b, (dst, c.dst_align), (src, c.src_align), c.size) {
        load.set_debug_location(location);
        store.set_debug_location(location);
    }
    c.call.erase_from_basic_block();
}

/// Copies `size` bytes from `src` to `dst` (each with its alignment) at the builder's
/// position as loads and stores of the widest integer both alignments allow (up to 8 bytes),
/// in address order: what a constant-size `llvm.memcpy` of more than 128 bytes would be a
/// byte loop for in NVPTX. Returns each word's load and store.
pub(super) fn word_copy<'ctx>(
    b: &Builder<'ctx>,
    (dst, dst_align): (PointerValue<'ctx>, u64),
    (src, src_align): (PointerValue<'ctx>, u64),
    size: u64,
) -> Vec<(InstructionValue<'ctx>, InstructionValue<'ctx>)> {
    let ctx = dst.get_type().get_context();
    let i8t = ctx.i8_type();
    let i64t = ctx.i64_type();
    let word = WORD.min(dst_align).min(src_align).max(1);
    let mut words = Vec::new();
    let mut offset = 0;
    while offset < size {
        let mut width = word;
        while width > size - offset {
            width /= 2;
        }
        let ty = match width {
            8 => i64t,
            4 => ctx.i32_type(),
            2 => ctx.i16_type(),
            _ => i8t,
        };
        let at = |base: PointerValue<'ctx>, name: &str| {
            if offset == 0 {
                return base;
            }
            // SAFETY: an offset inside the copy's bytes, which both pointers cover.
            unsafe { b.build_in_bounds_gep(i8t, base, &[i64t.const_int(offset, false)], name).expect("a builder positioned in a block") }
        };
        let (from, to) = (at(src, "copy.src"), at(dst, "copy.dst"));
        let value = b.build_load(ty, from, "copy.word").expect("a builder positioned in a block");
        let load = value.as_instruction_value().expect("a load");
        let store = b.build_store(to, value).expect("a builder positioned in a block");
        let _ = load.set_alignment(aligned_at(src_align, offset) as u32);
        let _ = store.set_alignment(aligned_at(dst_align, offset) as u32);
        words.push((load, store));
        offset += width;
    }
    words
}

#[cfg(test)]
mod tests;
