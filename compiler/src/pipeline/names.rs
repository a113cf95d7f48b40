//! nvcc's symbols for `static` kernels and variables.
//!
//! With `-fgpu-rdc`, Clang makes a `static` kernel or variable visible under its symbol with a
//! suffix from the file's id: `_ZL6schildf__intern__55bb7e955a6468e8` (kernels) or
//! `_ZL7counter__static__b04fd23c98500190` (variables that host code names), and may leave an
//! external declaration under the plain symbol that code still refers to. nvcc calls the same
//! kernel `__nv_static_<n>_<module id>__ZL6schildf` when the module id is known (its host code
//! registers that name), and cdpc's own front end keeps the plain symbol with internal linkage
//! otherwise. This pass gives IR from any front end the same names: afterwards no symbol has
//! Clang's suffix, every reference reaches the definition, and the renamed kernels and
//! variables are internal and kept in `@llvm.used` (host code finds them by name).

use inkwell::llvm_sys::comdat::LLVMSetComdat;
use inkwell::llvm_sys::core::{LLVMGetNumOperands, LLVMGetOperand};
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, BasicValue, GlobalValue, PointerValue};
use inkwell::AddressSpace;

use crate::hir::mangle::nv_static_symbol;

/// The symbol without Clang's `__intern__<hex>` or `__static__<hex>` suffix, if it has one.
pub fn unsuffixed(symbol: &str) -> Option<&str> {
    for marker in ["__intern__", "__static__"] {
        if let Some(at) = symbol.rfind(marker) {
            let hash = &symbol[at + marker.len()..];
            if at > 0 && !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Some(&symbol[..at]);
            }
        }
    }
    None
}

/// nvcc's own symbol of a `static` kernel or variable whose Itanium symbol is `mangled`:
/// nvcc mangles a file-scope `static` kernel without Itanium's `L` (`_Z2skPi`, where Clang
/// writes `_ZL2skPi`) and names a file-scope `static` variable by its identifier (`counter`,
/// not `_ZL7counter`); anything else keeps its symbol.
pub fn nvcc_static_name(mangled: &str, is_function: bool) -> String {
    let Some(rest) = mangled.strip_prefix("_ZL") else { return mangled.to_string() };
    if is_function {
        return format!("_Z{rest}");
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[..digits].parse::<usize>() {
        Ok(len) if digits > 0 && rest.len() == digits + len => rest[digits..].to_string(),
        _ => mangled.to_string(),
    }
}

/// Gives `static` kernels and variables nvcc's names (module docs).
pub fn externalised_statics(module: &Module<'_>, nv_module_id: Option<&str>) {
    let mut kept: Vec<PointerValue<'_>> = Vec::new();
    let new_name = |plain: &str, is_function: bool| {
        let own = nvcc_static_name(plain, is_function);
        nv_module_id.map_or_else(|| own.clone(), |id| nv_static_symbol(id, &own))
    };
    for function in module.get_functions() {
        if function.count_basic_blocks() == 0 || function.get_call_conventions() != crate::back::device_launch::PTX_KERNEL_CALL_CONV {
            continue;
        }
        let name = function.get_name().to_string_lossy().into_owned();
        let global = function.as_global_value();
        match unsuffixed(&name) {
            Some(plain) => {
                if let Some(declared) = module.get_function(plain).filter(|d| d.count_basic_blocks() == 0) {
                    declared.as_global_value().as_pointer_value().replace_all_uses_with(global.as_pointer_value());
                    // SAFETY: the declaration has no uses left.
                    unsafe { declared.delete() };
                }
                make_internal(global, &new_name(plain, true));
            }
            None if name.starts_with("_ZL") && function.get_linkage() == Linkage::Internal => make_internal(global, &new_name(&name, true)),
            None => continue,
        }
        // Host code finds kernels by name; nothing in the device code may refer to them.
        kept.push(global.as_pointer_value());
    }
    for global in module.get_globals() {
        if global.get_initializer().is_none() {
            continue;
        }
        let name = global.get_name().to_string_lossy().into_owned();
        match unsuffixed(&name) {
            Some(plain) => {
                if let Some(declared) = module.get_global(plain).filter(|d| d.get_initializer().is_none()) {
                    declared.as_pointer_value().replace_all_uses_with(global.as_pointer_value());
                    // SAFETY: the declaration has no uses left.
                    unsafe { declared.delete() };
                }
                make_internal(global, &new_name(plain, false));
                // Host code names it (that is why Clang made it visible).
                kept.push(global.as_pointer_value());
            }
            None if name.starts_with("_ZL") && global.get_linkage() == Linkage::Internal => make_internal(global, &new_name(&name, false)),
            None => {}
        }
    }
    append_used(module, &kept);
}

fn make_internal(global: GlobalValue<'_>, name: &str) {
    // SAFETY: detaching a comdat is always valid; an internal symbol needs none.
    unsafe { LLVMSetComdat(global.as_value_ref(), std::ptr::null_mut()) };
    global.set_name(name);
    global.set_linkage(Linkage::Internal);
}

/// Adds `values` to `@llvm.used` (made when missing), keeping what it held.
pub(crate) fn append_used<'ctx>(module: &Module<'ctx>, values: &[PointerValue<'ctx>]) {
    if values.is_empty() {
        return;
    }
    let mut elements = take_used_list(module, "llvm.used");
    elements.extend(values.iter().copied());
    set_used_list(module, "llvm.used", &elements);
}

/// Clang's `@__clang_gpu_used_external` lists the kernels of other files this one launches,
/// for Clang's own host compilation; in device code it is an unused array that the PTX would
/// carry as a variable nvcc's has not. Removed, with its entry in `@llvm.compiler.used`.
pub fn drop_clang_host_list(module: &Module<'_>) {
    let Some(list) = module.get_global("__clang_gpu_used_external") else { return };
    let keep: Vec<PointerValue<'_>> =
        take_used_list(module, "llvm.compiler.used").into_iter().filter(|p| p.as_value_ref() != list.as_pointer_value().as_value_ref()).collect();
    set_used_list(module, "llvm.compiler.used", &keep);
    if list.as_pointer_value().get_first_use().is_none() {
        // SAFETY: nothing refers to it any more.
        unsafe { list.delete() };
    }
}

/// The elements of an appending `@llvm.used`-like list, which is removed.
fn take_used_list<'ctx>(module: &Module<'ctx>, name: &str) -> Vec<PointerValue<'ctx>> {
    let mut elements = Vec::new();
    if let Some(old) = module.get_global(name) {
        if let Some(init) = old.get_initializer() {
            // SAFETY: the list's initializer is a constant array of pointers.
            unsafe {
                let array = init.as_value_ref();
                for i in 0..LLVMGetNumOperands(array) {
                    elements.push(PointerValue::new(LLVMGetOperand(array, i as u32)));
                }
            }
        }
        // SAFETY: the list has no uses besides being there.
        unsafe { old.delete() };
    }
    elements
}

/// Makes the list `name` hold `elements` (none: no list), each in the generic address space.
fn set_used_list<'ctx>(module: &Module<'ctx>, name: &str, elements: &[PointerValue<'ctx>]) {
    if elements.is_empty() {
        return;
    }
    let ptr = module.get_context().ptr_type(AddressSpace::default());
    let elements: Vec<PointerValue<'ctx>> = elements.iter().map(|p| if p.get_type() == ptr { *p } else { p.const_address_space_cast(ptr) }).collect();
    let used = module.add_global(ptr.array_type(elements.len() as u32), None, name);
    used.set_linkage(Linkage::Appending);
    used.set_section(Some("llvm.metadata"));
    used.set_initializer(&ptr.const_array(&elements).as_basic_value_enum());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clang_suffixes_are_recognised() {
        assert_eq!(unsuffixed("_ZL6schildf__intern__55bb7e955a6468e8"), Some("_ZL6schildf"));
        assert_eq!(unsuffixed("_ZL7counter__static__b04fd23c98500190"), Some("_ZL7counter"));
        assert_eq!(unsuffixed("_Z5childPi"), None);
        assert_eq!(unsuffixed("my__intern__name"), None);
    }

    /// What nvcc 13.5 names them (`nvcc -rdc=true -ptx` of a file with `static __global__ void
    /// sk(int *)` and `static __device__ int counter[4]`: `__nv_static_<n>_<id>__Z2skPi` and
    /// `__nv_static_<n>_<id>_counter`).
    #[test]
    fn statics_are_named_as_nvcc_names_them() {
        assert_eq!(nvcc_static_name("_ZL2skPi", true), "_Z2skPi");
        assert_eq!(nvcc_static_name("_ZL7counter", false), "counter");
        assert_eq!(nvcc_static_name("_ZN1n5tableE", false), "_ZN1n5tableE");
        assert_eq!(nvcc_static_name("_ZL7counterX", false), "_ZL7counterX");
    }
}
