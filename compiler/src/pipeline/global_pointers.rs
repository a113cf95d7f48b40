//! Pointers that CUDA promises point to global memory, marked so after the launch passes.
//!
//! A kernel's parameters point to global memory: CUDA allows no other pointer in a launch,
//! and LLVM's NVPTX back end (`NVPTXLowerArgs`) marks a kernel's pointer parameters, and the
//! pointers it loads from its `byval` parameters, as global (an `addrspacecast` to
//! `addrspace(1)` and back), so that its address-space inference makes their loads, stores
//! and atomics `ld.global`, `st.global`, `atom.global` instead of generic ones. The launch
//! passes move a child's arguments where that rule cannot see them:
//!
//! - a kernel with a thresholded or aggregated launch ([`super::threshold`],
//!   [`super::aggregate`]) copies its `byval` arguments word by word ([`super::copies`]):
//!   the pointer a child's serial copy uses is an `inttoptr` of an `i64` loaded from the
//!   parameter, whose other use stores it into a record or a launch buffer, and LLVM marks
//!   only a loaded `i64` whose every use is an `inttoptr`;
//! - `C__agg` reads its launch's arguments out of a record of its table (its first
//!   parameter), where the child read them from its parameters;
//! - a warp's record table is shuffled from its leader as two 32-bit halves (from the
//!   child's static pool or the device heap: global memory either way).
//!
//! [`mark_global_pointers`] marks exactly those, after the clean-up's LLVM passes (which
//! would fold the two casts away): in each kernel the passes marked [`KERNEL`], every
//! `inttoptr` of an `i64` loaded from a `byval` parameter; in each kernel marked [`RECORDS`]
//! (`C__agg`), every pointer loaded from its first parameter (at any offset, through
//! `getelementptr`s and casts) and every `inttoptr` of an `i64` loaded there (the records'
//! headers hold 32-bit integers only); and every instruction the passes gave [`GLOBAL`]
//! metadata (the shuffled table). The markers are removed.
//!
//! Markers in the input are removed before the passes ([`clear_markers`], from
//! [`super::run`]). Invariant: afterwards no function carries a marker; each marked pointer `p` is used only
//! through `addrspacecast (addrspacecast p to ptr addrspace(1)) to ptr`, which NVPTX emits
//! as `cvta.to.global` and its address-space inference folds into global accesses; a module
//! without markers is untouched (so a build without thresholding or aggregation is).

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, BasicValue, FunctionValue, InstructionOpcode, InstructionValue, PointerValue};
use inkwell::AddressSpace;

/// Function attribute: a kernel the launch passes rewrote (or that reaches a rewritten site).
pub const KERNEL: &str = "cdpc.launch-rewritten";
/// Function attribute: `C__agg`, whose first parameter is its table of records.
pub const RECORDS: &str = "cdpc.records";
/// Instruction metadata: a pointer the passes know to point to global memory.
pub const GLOBAL: &str = "cdpc.global";

/// Removes every marker from the module: run before the passes, so that only theirs count
/// (an input's IR is not trusted to say which of its pointers are global).
pub fn clear_markers(module: &Module<'_>) {
    let kind = module.get_context().get_kind_id(GLOBAL);
    for f in module.get_functions() {
        for key in [KERNEL, RECORDS] {
            f.remove_string_attribute(AttributeLoc::Function, key);
        }
        for block in f.get_basic_blocks() {
            for inst in block.get_instructions() {
                if inst.get_metadata(kind).is_some() {
                    // SAFETY: a live instruction; a null node removes the metadata.
                    unsafe { LLVMSetMetadata(inst.as_value_ref(), kind, std::ptr::null_mut()) };
                }
            }
        }
    }
}

/// Whether the module still carries a marker (none after [`mark_global_pointers`]).
pub fn has_markers(module: &Module<'_>) -> bool {
    let kind = module.get_context().get_kind_id(GLOBAL);
    module.get_functions().any(|f| {
        [KERNEL, RECORDS].iter().any(|k| f.get_string_attribute(AttributeLoc::Function, k).is_some()) || f.get_basic_blocks().iter().flat_map(|b| b.get_instructions()).any(|i| i.get_metadata(kind).is_some())
    })
}

/// Marks `f` with the function attribute `kind` ([`KERNEL`], [`RECORDS`]).
pub(super) fn mark_function(f: FunctionValue<'_>, kind: &str) {
    if f.get_string_attribute(AttributeLoc::Function, kind).is_none() {
        f.add_attribute(AttributeLoc::Function, f.get_type().get_context().create_string_attribute(kind, ""));
    }
}

/// Gives `inst` the [`GLOBAL`] metadata.
pub(super) fn mark_instruction(module: &Module<'_>, inst: InstructionValue<'_>) {
    let ctx = module.get_context();
    let kind = ctx.get_kind_id(GLOBAL);
    inst.set_metadata(ctx.metadata_node(&[]), kind).expect("an instruction takes metadata");
}

/// Marks the pointers of the module docs as global and removes the markers; returns how
/// many pointers it marked.
pub fn mark_global_pointers(module: &Module<'_>) -> usize {
    let ctx = module.get_context();
    let global_kind = ctx.get_kind_id(GLOBAL);
    let mut marked = Vec::new();
    for f in module.get_functions() {
        let kernel = f.get_string_attribute(AttributeLoc::Function, KERNEL).is_some();
        let records = f.get_string_attribute(AttributeLoc::Function, RECORDS).is_some();
        let table = if records { f.get_first_param().map(|p| p.as_value_ref()) } else { None };
        let byval = Attribute::get_named_enum_kind_id("byval");
        let byval_params: Vec<LLVMValueRef> = (0..f.count_params()).filter(|&i| f.get_enum_attribute(AttributeLoc::Param(i), byval).is_some()).filter_map(|i| f.get_nth_param(i)).map(|p| p.as_value_ref()).collect();
        for block in f.get_basic_blocks() {
            for inst in block.get_instructions() {
                if inst.get_metadata(global_kind).is_some() {
                    // SAFETY: a live instruction; metadata kind 0 clears nothing else.
                    unsafe { LLVMSetMetadata(inst.as_value_ref(), global_kind, std::ptr::null_mut()) };
                    if is_pointer(inst) {
                        marked.push(inst);
                    }
                    continue;
                }
                if !kernel && !records {
                    continue;
                }
                let loaded_from = |v: LLVMValueRef| loaded_from(v).and_then(root);
                let from_byval = |v| loaded_from(v).is_some_and(|r| byval_params.contains(&r));
                let from_table = |v| table.is_some() && loaded_from(v) == table;
                match inst.get_opcode() {
                    InstructionOpcode::IntToPtr => {
                        // SAFETY: operand 0 of a live `inttoptr`.
                        let word = unsafe { LLVMGetOperand(inst.as_value_ref(), 0) };
                        if from_table(word) || (kernel && from_byval(word)) {
                            marked.push(inst);
                        }
                    }
                    InstructionOpcode::Load if is_pointer(inst) && from_table(inst.as_value_ref()) => marked.push(inst),
                    _ => {}
                }
            }
        }
        for kind in [KERNEL, RECORDS] {
            f.remove_string_attribute(AttributeLoc::Function, kind);
        }
    }
    let n = marked.len();
    for p in marked {
        as_global(module, p);
    }
    n
}

/// Whether `inst` yields a generic pointer.
fn is_pointer(inst: InstructionValue<'_>) -> bool {
    // SAFETY: the type of a live instruction.
    unsafe {
        let ty = LLVMTypeOf(inst.as_value_ref());
        LLVMGetTypeKind(ty) == inkwell::llvm_sys::LLVMTypeKind::LLVMPointerTypeKind && LLVMGetPointerAddressSpace(ty) == 0
    }
}

/// The address `v` was loaded from, when `v` is a load.
fn loaded_from(v: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: queries of a live value; operand 0 of a load is its address.
    unsafe { (!LLVMIsALoadInst(v).is_null()).then(|| LLVMGetOperand(v, 0)) }
}

/// The parameter `p` is an address into, through `getelementptr`s and casts, if it is one.
fn root(mut p: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: queries of live values; the first operand of a GEP or a cast is a value.
    unsafe {
        for _ in 0..64 {
            if !LLVMIsAArgument(p).is_null() {
                return Some(p);
            }
            let expr = !LLVMIsAConstantExpr(p).is_null();
            let opcode = if expr { Some(LLVMGetConstOpcode(p)) } else { (!LLVMIsAInstruction(p).is_null()).then(|| LLVMGetInstructionOpcode(p)) };
            match opcode {
                Some(LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast) => p = LLVMGetOperand(p, 0),
                _ => return None,
            }
        }
    }
    None
}

/// Replaces the uses of the pointer `p` by `addrspacecast (addrspacecast p to global) to
/// generic`, inserted after it.
fn as_global<'ctx>(module: &Module<'ctx>, p: InstructionValue<'ctx>) {
    let ctx = module.get_context();
    let b = ctx.create_builder();
    match p.get_next_instruction() {
        Some(next) => b.position_before(&next),
        None => return,
    }
    // A load or an `inttoptr` is neither a PHI nor a terminator: the casts go right after it.
    // SAFETY: `p` is a live value of the generic pointer type (checked by the caller).
    let value = unsafe { PointerValue::new(p.as_value_ref()) };
    let global = b.build_address_space_cast(value, ctx.ptr_type(AddressSpace::from(1u16)), "global").expect("a positioned builder");
    let generic = b.build_address_space_cast(global, ctx.ptr_type(AddressSpace::default()), "generic").expect("a positioned builder");
    p.replace_all_uses_with(&generic.as_instruction_value().expect("a cast"));
    // The first cast's operand, which the replacement changed too, is `p` again.
    global.as_instruction_value().expect("a cast").set_operand(0, value);
}

#[cfg(test)]
mod tests;
