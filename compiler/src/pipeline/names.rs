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

/// `__nv_static_<n>_<module id>_<name>`: nvcc's symbol of an internal kernel or variable whose
/// own symbol is `name`, in the file whose module id is `id`, `n` the id's length (measured
/// with nvcc 13.5).
pub fn nv_static_symbol(id: &str, name: &str) -> String {
    format!("__nv_static_{}_{id}_{name}", id.len())
}

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

/// Renames Clang's externalised `static` kernels and variables (module docs).
pub fn externalised_statics(module: &Module<'_>, nv_module_id: Option<&str>) {
    let mut kept: Vec<PointerValue<'_>> = Vec::new();
    let new_name = |plain: &str| nv_module_id.map_or_else(|| plain.to_string(), |id| nv_static_symbol(id, plain));
    for function in module.get_functions() {
        let name = function.get_name().to_string_lossy().into_owned();
        let Some(plain) = unsuffixed(&name) else { continue };
        if function.count_basic_blocks() == 0 {
            continue;
        }
        let global = function.as_global_value();
        if let Some(declared) = module.get_function(plain).filter(|d| d.count_basic_blocks() == 0) {
            declared.as_global_value().as_pointer_value().replace_all_uses_with(global.as_pointer_value());
            // SAFETY: the declaration has no uses left.
            unsafe { declared.delete() };
        }
        make_internal(global, &new_name(plain));
        kept.push(global.as_pointer_value());
    }
    for global in module.get_globals() {
        let name = global.get_name().to_string_lossy().into_owned();
        let Some(plain) = unsuffixed(&name) else { continue };
        if global.get_initializer().is_none() {
            continue;
        }
        if let Some(declared) = module.get_global(plain).filter(|d| d.get_initializer().is_none()) {
            declared.as_pointer_value().replace_all_uses_with(global.as_pointer_value());
            // SAFETY: the declaration has no uses left.
            unsafe { declared.delete() };
        }
        make_internal(global, &new_name(plain));
        kept.push(global.as_pointer_value());
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
    let ctx = module.get_context();
    let ptr = ctx.ptr_type(AddressSpace::default());
    let mut elements: Vec<PointerValue<'ctx>> = Vec::new();
    if let Some(old) = module.get_global("llvm.used") {
        if let Some(init) = old.get_initializer() {
            // SAFETY: `@llvm.used`'s initializer is a constant array of pointers.
            unsafe {
                let array = init.as_value_ref();
                for i in 0..LLVMGetNumOperands(array) {
                    elements.push(PointerValue::new(LLVMGetOperand(array, i as u32)));
                }
            }
        }
        // SAFETY: `@llvm.used` has no uses besides being there.
        unsafe { old.delete() };
    }
    elements.extend(values.iter().map(|p| if p.get_type() == ptr { *p } else { p.const_address_space_cast(ptr) }));
    let used = module.add_global(ptr.array_type(elements.len() as u32), None, "llvm.used");
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
}
