//! A thread's own streams under thresholding: a small grid launched into a stream that only its
//! thread can put work into runs in place where the thread has made no launch into that stream
//! since creating it.
//!
//! A stream is the thread's own ([`own_stream`]) when a function creates it into a local
//! (`cudaStreamCreateWithFlags(&s, ...)`, which a device stream must be made with) and the
//! local's address goes nowhere else: every use of the local is a creation into it, a load, or
//! a lifetime marker, and every loaded handle is the stream of a launch or the argument of
//! `cudaStreamDestroy`. No other thread, and no other function, then holds the handle, so the
//! stream's work is this function's launches into it, in the order the thread makes them. (A
//! stream in `__shared__` memory, a handle stored, passed to a function, or used with events
//! is not one.)
//!
//! The order is kept by a flag per such local ([`instrument`]): an `i1` local, false at the
//! function's entry and after each creation into the stream's local, set before every launch
//! into the stream that thresholding does not take and by a taken site's helper when it
//! launches. The helper runs the grid in place only where the flag is false: no launch into
//! the stream may be in flight before it. Grids run in place leave it false: they are done.
//!
//! Invariant: a module without a taken launch into an own stream is untouched; afterwards
//! every launch into an own stream that thresholding did not take is preceded by a store of
//! `true` into that stream's flag.

use super::clone::{called_function, users, value_name};
use super::emit::ok;
use super::launch::{self, Launch};
use crate::llvm::operand;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, InstructionValue, PointerValue};
use std::collections::HashMap;

/// Whether `name` creates a device stream (`cudaStreamCreateWithFlags`, libcudadevrt's
/// `__cudaCDP2StreamCreateWithFlags`, and their kin).
fn creates_stream(name: &str) -> bool {
    name.contains("StreamCreate")
}

/// Whether `name` destroys a device stream.
fn destroys_stream(name: &str) -> bool {
    name.contains("StreamDestroy")
}

/// The name of the function `call` calls directly; empty for anything else.
fn callee_name(call: LLVMValueRef) -> String {
    called_function(call).map(value_name).unwrap_or_default()
}

/// The instructions that use `v`; `None` where anything else does (a constant cannot use an
/// instruction, so none should).
fn instruction_users(v: LLVMValueRef) -> Option<Vec<LLVMValueRef>> {
    let found = users(v);
    (!found.other && found.globals.is_empty()).then_some(found.instructions)
}

/// Whether `call` passes `v` as argument `index` and as no other operand.
///
/// # Safety
/// `call` is a live call instruction.
unsafe fn passes_only_at(call: LLVMValueRef, v: LLVMValueRef, index: u32) -> bool {
    let args = LLVMGetNumArgOperands(call);
    index < args && (0..LLVMGetNumOperands(call) as u32).all(|i| (LLVMGetOperand(call, i) == v) == (i == index))
}

/// Whether `stream` is a handle its thread made: a load of a local that a stream-creation call
/// writes (each thread's local, so no two threads hold the same stream through it), whatever
/// else the handle is used for. Aggregation reads it: a warp's lanes never launch into one
/// such stream together.
pub(super) fn made_by_its_thread(stream: LLVMValueRef) -> bool {
    // SAFETY: queries of live values.
    unsafe {
        if LLVMIsALoadInst(stream).is_null() {
            return false;
        }
        let local = LLVMGetOperand(stream, 0);
        !LLVMIsAAllocaInst(local).is_null() && users(local).instructions.into_iter().any(|u| creation_into(u, local))
    }
}

/// Whether `call` creates a stream into `local`, its first argument and no other operand.
fn creation_into(call: LLVMValueRef, local: LLVMValueRef) -> bool {
    // SAFETY: queries of a live call; `passes_only_at` reads it only where it is one.
    creates_stream(&callee_name(call)) && unsafe { passes_only_at(call, local, 0) }
}

/// The local that holds the stream of the launch `l` when the stream is its thread's own
/// (module docs); `None` otherwise.
pub(super) fn own_stream(l: &Launch<'_>) -> Option<LLVMValueRef> {
    let stream = operand(l.call, 5)?.as_value_ref();
    if !made_by_its_thread(stream) {
        return None;
    }
    // SAFETY: queries of live values and their uses: `stream` is a load of a local.
    unsafe {
        let local = LLVMGetOperand(stream, 0);
        if LLVMGetBasicBlockParent(LLVMGetInstructionParent(local)) != l.function.as_value_ref() {
            return None;
        }
        for user in instruction_users(local)? {
            match LLVMGetInstructionOpcode(user) {
                LLVMOpcode::LLVMLoad => {
                    for handle_user in instruction_users(user)? {
                        if LLVMIsACallInst(handle_user).is_null() {
                            return None;
                        }
                        let name = callee_name(handle_user);
                        let fits = if launch::is_launch_entry(&name) { passes_only_at(handle_user, user, 5) } else { destroys_stream(&name) && passes_only_at(handle_user, user, 0) };
                        if !fits {
                            return None;
                        }
                    }
                }
                LLVMOpcode::LLVMCall if creation_into(user, local) || callee_name(user).starts_with("llvm.lifetime.") => {}
                _ => return None,
            }
        }
        Some(local)
    }
}

/// Gives each own stream of the taken launches `taken` its flag (module docs): a store of
/// `false` at its function's entry and after each creation, a store of `true` before every
/// launch of `all` into it that is not taken. Returns each taken launch's flag, by its call.
pub(super) fn instrument<'ctx>(module: &Module<'ctx>, all: &[Launch<'ctx>], taken: &[Launch<'ctx>]) -> HashMap<InstructionValue<'ctx>, PointerValue<'ctx>> {
    let ctx = module.get_context();
    let bool_type = ctx.bool_type();
    let b = ctx.create_builder();
    let mut flags: HashMap<LLVMValueRef, PointerValue<'ctx>> = HashMap::new();
    let mut out = HashMap::new();
    for l in taken {
        let (Some(local), Some(entry)) = (own_stream(l), l.function.get_first_basic_block()) else { continue };
        let flag = *flags.entry(local).or_insert_with(|| {
            super::clone::position_at_start(&b, entry);
            let flag = ok(b.build_alloca(bool_type, "own.stream.launched"));
            ok(b.build_store(flag, bool_type.const_zero()));
            // SAFETY: positions after live calls.
            unsafe {
                for user in users(local).instructions {
                    if creation_into(user, local) {
                        let next = LLVMGetNextInstruction(user);
                        if next.is_null() {
                            continue; // a call ends no block
                        }
                        LLVMPositionBuilderBefore(b.as_mut_ptr(), next);
                        ok(b.build_store(flag, bool_type.const_zero()));
                    }
                }
            }
            flag
        });
        out.insert(l.call, flag);
    }
    for l in all {
        if out.contains_key(&l.call) {
            continue;
        }
        if let Some(flag) = own_stream(l).and_then(|local| flags.get(&local)) {
            b.position_before(&l.call);
            ok(b.build_store(*flag, bool_type.const_all_ones()));
        }
    }
    out
}
