//! The C++ ABI's placeholders for pure and deleted virtual functions, as nvcc writes them.
//!
//! A vtable's slot of a pure virtual function points, under the Itanium ABI, at
//! `__cxa_pure_virtual` (a deleted one at `__cxa_deleted_virtual`), which the C++ runtime
//! defines and which reports the call. Clang's device IR keeps that ABI, but the device has no
//! C++ runtime: such a vtable (NVIDIA's `newdelete` sample has two) was an undefined
//! `__cxa_pure_virtual` that nvlink refused. nvcc writes 0 in those slots (measured with nvcc
//! 13.5: `_ZTV9ContainerIiE[6] = {0, 0, ..., 0, 0}`). [`null_slots`] does the same: every use
//! of the undefined placeholder in a constant (a vtable's initializer) becomes a null pointer,
//! and the declaration goes once nothing uses it. A call of the placeholder by its name, which
//! only hand-written code makes, is left as it is (and is nvlink's error, as it is nvcc's).
//!
//! Invariant afterwards: no constant of the module names an undefined `__cxa_pure_virtual` or
//! `__cxa_deleted_virtual`; a module without one is untouched.

use inkwell::llvm_sys::core::*;
use inkwell::module::Module;
use inkwell::values::AsValueRef;

/// The placeholders of the Itanium C++ ABI's vtables.
pub const PLACEHOLDERS: [&str; 2] = ["__cxa_pure_virtual", "__cxa_deleted_virtual"];

/// Makes every vtable slot holding an undefined placeholder null, as nvcc does (module docs);
/// returns how many uses it replaced.
pub fn null_slots(module: &Module<'_>) -> usize {
    let mut replaced = 0;
    for name in PLACEHOLDERS {
        let Some(function) = module.get_function(name) else { continue };
        if function.count_basic_blocks() > 0 {
            continue;
        }
        let f = function.as_value_ref();
        // SAFETY: `f` is a live function declaration of this module; its use list is read
        // before any use is changed (the uses are collected first), and each user is checked to
        // be a constant that is not a global value before `LLVMReplaceAllUsesWith`-like edits.
        unsafe {
            let mut users = Vec::new();
            let mut u = LLVMGetFirstUse(f);
            while !u.is_null() {
                users.push(LLVMGetUser(u));
                u = LLVMGetNextUse(u);
            }
            let only_constants = users.iter().all(|&user| !LLVMIsAConstant(user).is_null() && LLVMIsAGlobalValue(user).is_null());
            if !only_constants || users.is_empty() {
                continue;
            }
            replaced += users.len();
            LLVMReplaceAllUsesWith(f, LLVMConstPointerNull(LLVMTypeOf(f)));
            LLVMDeleteFunction(f);
        }
    }
    replaced
}
