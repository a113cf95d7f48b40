//! The call graph as the passes see it, below every pass that asks (`stream_order`,
//! `aggregate`): which functions are kernels, which a function reaches through its calls, and
//! which a call through a pointer may reach. Imports only `clone`.

use super::clone::{as_function, called_function, is_inline_asm};
use inkwell::values::{AsValueRef, FunctionValue, InstructionOpcode, InstructionValue};
use std::collections::HashSet;

/// Whether `f` is a kernel (PTX's `.entry`).
pub(super) fn is_kernel(f: FunctionValue<'_>) -> bool {
    f.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV
}

/// Whether a function of that name without a body here is LLVM's (an intrinsic), libdevice's
/// (`__nv_*`) or the device C library's: code that neither launches, waits for other threads
/// nor is unknown.
pub(super) fn is_library(name: &str) -> bool {
    name.starts_with("llvm.") || name.starts_with("__nv_") || crate::target::DEVICE_LIBRARY.contains(&name)
}

/// The calls `f` makes, in order.
pub(super) fn calls<'ctx>(f: FunctionValue<'ctx>) -> Vec<InstructionValue<'ctx>> {
    f.get_basic_blocks().iter().flat_map(|bb| bb.get_instructions()).filter(|i| i.get_opcode() == InstructionOpcode::Call).collect()
}

/// The defined functions `f` calls, at any depth (not `f` itself unless it is recursive), and
/// whether it calls through a pointer somewhere.
pub(super) fn callees<'ctx>(f: FunctionValue<'ctx>) -> (Vec<FunctionValue<'ctx>>, bool) {
    let mut seen = HashSet::new();
    let mut order = Vec::new();
    let mut indirect = false;
    let mut stack = vec![f];
    while let Some(g) = stack.pop() {
        for inst in g.get_basic_blocks().iter().flat_map(|b| b.get_instructions()) {
            if inst.get_opcode() != InstructionOpcode::Call {
                continue;
            }
            // A call through a pointer calls any function whose address is taken.
            let targets = match called_function(inst.as_value_ref()).and_then(as_function) {
                Some(t) => vec![t],
                None if is_inline_asm(inst) => Vec::new(),
                None => {
                    indirect = true;
                    pointer_targets(f)
                }
            };
            for t in targets.into_iter().filter(|t| t.count_basic_blocks() > 0) {
                if seen.insert(t) {
                    order.push(t);
                    stack.push(t);
                }
            }
        }
    }
    (order, indirect)
}

/// The functions a call through a pointer in `f`'s module may reach: those defined there whose
/// address is taken (a use other than as a call's callee), kernels aside (calling one is an
/// error). Within the module: a whole program in one module, which `-dc` does not promise.
pub(super) fn pointer_targets<'ctx>(f: FunctionValue<'ctx>) -> Vec<FunctionValue<'ctx>> {
    use inkwell::llvm_sys::core::{LLVMGetFirstFunction, LLVMGetFirstUse, LLVMGetGlobalParent, LLVMGetNextFunction, LLVMGetNextUse, LLVMGetUser, LLVMIsACallInst};
    let mut out = Vec::new();
    // SAFETY: walks of the live module's function list and of each function's use list.
    unsafe {
        let module = LLVMGetGlobalParent(f.as_value_ref());
        let mut raw = LLVMGetFirstFunction(module);
        while !raw.is_null() {
            if let Some(g) = as_function(raw).filter(|g| g.count_basic_blocks() > 0 && !is_kernel(*g)) {
                let mut u = LLVMGetFirstUse(raw);
                while !u.is_null() {
                    let user = LLVMGetUser(u);
                    let called = !LLVMIsACallInst(user).is_null() && inkwell::llvm_sys::core::LLVMGetCalledValue(user) == raw;
                    if !called {
                        out.push(g);
                        break;
                    }
                    u = LLVMGetNextUse(u);
                }
            }
            raw = LLVMGetNextFunction(raw);
        }
    }
    out
}
