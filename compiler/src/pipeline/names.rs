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
//! variables are kept in `@llvm.used` (host code finds them by name).
//!
//! With nvcc's module id `<ID>` the names are nvcc's in full ([`nvcc_symbol`], measured with
//! nvcc 13.5): the anonymous namespace is `_GLOBAL__N_<ID>` wherever a symbol names it (Clang
//! writes `_GLOBAL__N_1`); a variable of a namespace gets the enclosing namespace
//! `_INTERNAL<ID>`; and what Clang makes internal only for a type in its parameters or its
//! own type (`__global__ void vis(S s)` with `S` of the anonymous namespace) stays external
//! under its plain symbol, as nvcc keeps it.

use inkwell::llvm_sys::comdat::LLVMSetComdat;
use inkwell::llvm_sys::core::{LLVMGetNumOperands, LLVMGetOperand};
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, BasicValue, GlobalValue, PointerValue};
use inkwell::AddressSpace;

use super::itanium::{self, nv_static_symbol};

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
    let Some(unmarked) = itanium::without_static_marker(mangled) else { return mangled.to_string() };
    if is_function {
        return unmarked;
    }
    itanium::file_scope_identifier(mangled).map_or_else(|| mangled.to_string(), str::to_string)
}

/// What a symbol names, for nvcc's scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `__global__` function.
    Kernel,
    /// A `__device__`, `__constant__`, `__shared__` or managed variable.
    Variable,
}

/// How nvcc links a kernel or variable that Clang made internal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvccLinkage {
    /// Internal, under a `__nv_static_` name.
    Internal,
    /// External (`.visible`).
    Strong,
    /// External and weak (`.weak`), a template's instance that another file may make too.
    Weak,
}

/// nvcc's symbol for the kernel or variable that Clang made internal and calls `plain` (its
/// suffix removed), under nvcc's module id `id`, and how nvcc links it.
///
/// nvcc makes internal what is declared `static` (Itanium's `L`, which it does not write) or
/// named in an anonymous namespace, a template instance's arguments included, and gives it the
/// name `__nv_static_<n>_<id>_<symbol>`; a variable of a namespace is wrapped in the namespace
/// `_INTERNAL<id>`, one of file scope is called by its identifier. The anonymous namespace is
/// `_GLOBAL__N_<id>` throughout. What Clang made internal for a type alone (a parameter's, a
/// variable's) is external for nvcc, under its plain symbol, weak for a template's instance. A
/// symbol whose name [`itanium::entity`] does not read keeps Clang's linkage.
pub fn nvcc_symbol(plain: &str, kind: Kind, id: &str) -> (String, NvccLinkage) {
    let edg = itanium::edg_spelling(plain);
    let plain = edg.as_deref().unwrap_or(plain);
    let anonymous = format!("{}_GLOBAL__N_{id}", "_GLOBAL__N_".len() + id.len());
    if !itanium::is_mangled(plain) {
        // A name of C's kind: internal in Clang only for its type (`static` would be `_ZL`).
        return (plain.to_string(), NvccLinkage::Strong);
    }
    let Some(entity) = itanium::entity(plain) else {
        return (nv_static_symbol(id, &nvcc_static_name(&plain.replace(itanium::ANONYMOUS_NAMESPACE, &anonymous), kind == Kind::Kernel)), NvccLinkage::Internal);
    };
    // Clang's spelling without its `L` markers and with nvcc's anonymous namespace (in a part
    // not read, wherever its text appears).
    let mut symbol = String::with_capacity(plain.len() + 2 * id.len());
    let mut at = 0;
    while at < plain.len() {
        if entity.internal_markers.contains(&at) {
            at += 1;
        } else if entity.anonymous.contains(&at) || !entity.whole && at >= entity.name_end && plain[at..].starts_with(itanium::ANONYMOUS_NAMESPACE) {
            symbol.push_str(&anonymous);
            at += itanium::ANONYMOUS_NAMESPACE.len();
        } else {
            let next = plain[at..].chars().next().expect("inside the symbol");
            symbol.push(next);
            at += next.len_utf8();
        }
    }
    if !entity.named_internal() {
        return (symbol, if entity.instance { NvccLinkage::Weak } else { NvccLinkage::Strong });
    }
    let symbol = match kind {
        Kind::Kernel => symbol,
        Kind::Variable => match (itanium::file_scope_identifier(&symbol), itanium::in_outer_namespace(&symbol, &format!("_INTERNAL{id}"))) {
            (Some(name), _) => name.to_string(),
            (None, Some(internal)) if !entity.substitutions => internal,
            _ => symbol,
        },
    };
    (nv_static_symbol(id, &symbol), NvccLinkage::Internal)
}

/// Whether `symbol` can be a source entity's symbol (a C identifier or an Itanium name: letters,
/// digits, `_` and `$`), rather than a name the compiler made for its own data (Clang's
/// `__PRETTY_FUNCTION__._Z1kv`, `.str`).
fn is_symbol_of_source(symbol: &str) -> bool {
    !symbol.is_empty() && symbol.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

/// `symbol` (with Clang's suffix or not) as nvcc spells a template instance's arguments
/// ([`itanium::edg_spelling`]), if that differs.
pub fn edg_symbol(symbol: &str) -> Option<String> {
    match unsuffixed(symbol) {
        Some(plain) => itanium::edg_spelling(plain).map(|edg| format!("{edg}{}", &symbol[plain.len()..])),
        None => itanium::edg_spelling(symbol),
    }
}

/// Gives every function and global variable whose symbol has Clang's template-parameter
/// declarations nvcc's spelling ([`edg_symbol`]): kernels and device variables, which nvcc's
/// host code registers and launches by name, and device functions, which another file's code
/// compiled by nvcc calls by name. A declaration whose new name a definition in the module
/// has already is replaced by it.
pub fn edg_spellings(module: &Module<'_>) {
    let globals: Vec<GlobalValue<'_>> = module.get_functions().map(|f| f.as_global_value()).chain(module.get_globals()).collect();
    for global in globals {
        let name = global.get_name().to_string_lossy().into_owned();
        let Some(edg) = edg_symbol(&name) else { continue };
        let existing = module.get_function(&edg).map(|f| f.as_global_value()).or_else(|| module.get_global(&edg));
        match existing {
            None => rename_with_comdat(module, global, &edg),
            // Both spellings in one module: the same entity, named twice (a declaration under
            // one spelling, the definition under the other); the declaration gives way.
            Some(other) if global.is_declaration() && other.as_pointer_value().get_type() == global.as_pointer_value().get_type() => {
                global.as_pointer_value().replace_all_uses_with(other.as_pointer_value());
                // SAFETY: nothing refers to the declaration any more; a function is deleted as
                // one, a variable as one.
                match module.get_function(&name) {
                    Some(f) => unsafe { f.delete() },
                    None => unsafe { global.delete() },
                }
            }
            Some(_) => {}
        }
    }
}

/// Renames `global` to `name`; a template instance alone in a COMDAT group of its own name
/// takes the group along under the new name (as nvcc's group of `_Z4fillIiEvPT_S0_` is
/// called), with the old group's selection kind.
pub(crate) fn rename_with_comdat<'ctx>(module: &Module<'ctx>, global: GlobalValue<'ctx>, name: &str) {
    global.set_name(name);
    if let Some(old) = global.get_comdat() {
        let comdat = module.get_or_insert_comdat(name);
        comdat.set_selection_kind(old.get_selection_kind());
        global.set_comdat(comdat);
    }
}

/// Gives `static` kernels and variables nvcc's names (module docs).
pub fn externalised_statics(module: &Module<'_>, nv_module_id: Option<&str>) {
    let mut kept: Vec<PointerValue<'_>> = Vec::new();
    let new_name = |plain: &str, kind: Kind| match nv_module_id {
        Some(id) => nvcc_symbol(plain, kind, id),
        None => (nvcc_static_name(plain, kind == Kind::Kernel), NvccLinkage::Internal),
    };
    let rename = |global: GlobalValue<'_>, (symbol, linkage): (String, NvccLinkage)| match linkage {
        NvccLinkage::Internal => relink(global, &symbol, Linkage::Internal),
        NvccLinkage::Strong => relink(global, &symbol, Linkage::External),
        NvccLinkage::Weak => relink(global, &symbol, Linkage::WeakODR),
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
                rename(global, new_name(plain, Kind::Kernel));
            }
            None if itanium::without_static_marker(&name).is_some() && function.get_linkage() == Linkage::Internal => rename(global, new_name(&name, Kind::Kernel)),
            None => continue,
        }
        // Host code finds kernels by name; nothing in the device code may refer to them.
        kept.push(global.as_pointer_value());
    }
    let mut externalised = Vec::new();
    for global in module.get_globals() {
        if global.get_initializer().is_none() {
            continue;
        }
        let name = global.get_name().to_string_lossy().into_owned();
        // A `static` variable of a `static` function: Clang marks the function internal in the
        // name (`_ZZL2skPiE1c`), nvcc does not (`_ZZ2skPiE1c`, measured with nvcc 13.5).
        let local_of_internal = itanium::local_without_static_marker(&name).filter(|n| module.get_global(n).is_none());
        let internal = global.get_linkage() == Linkage::Internal;
        match (unsuffixed(&name), local_of_internal) {
            (Some(plain), _) => {
                if let Some(declared) = module.get_global(plain).filter(|d| d.get_initializer().is_none()) {
                    declared.as_pointer_value().replace_all_uses_with(global.as_pointer_value());
                    // SAFETY: the declaration has no uses left.
                    unsafe { declared.delete() };
                }
                if !is_symbol_of_source(plain) {
                    // A variable the compiler made (`__PRETTY_FUNCTION__.<function>`, `__func__.`
                    // of a `static` or template kernel): no host code names it, and nvcc keeps
                    // it internal (`__unnamed_<n>`). Internal, NVPTX makes its name a valid PTX
                    // identifier (`__PRETTY_FUNCTION___$_...`); an external one keeps the `.`
                    // that ptxas refuses.
                    relink(global, plain, Linkage::Internal);
                    continue;
                }
                rename(global, new_name(plain, Kind::Variable));
                externalised.push(global);
            }
            (None, Some(nvcc)) if internal => global.set_name(&nvcc),
            (None, _) if internal && (itanium::without_static_marker(&name).is_some() || nv_module_id.is_some() && itanium::entity(&name).is_some_and(|e| e.named_internal())) => {
                rename(global, new_name(&name, Kind::Variable))
            }
            (None, _) => {}
        }
    }
    // Clang emits these in the order of a map keyed by addresses, which changes from run to run
    // (with two `static __device__` variables, either may come first in the PTX): by name
    // instead, after every other global.
    externalised.sort_by_key(|g| g.get_name().to_bytes().to_vec());
    for global in externalised {
        crate::back::move_global_to_end(global);
        // Host code names it (that is why Clang made it visible).
        kept.push(global.as_pointer_value());
    }
    append_used(module, &kept);
}

/// `global` under `name` with `linkage` (what [`nvcc_symbol`] said), out of the COMDAT group
/// named after Clang's symbol (an internal symbol needs none; an external one nvcc keeps
/// weak or strong, not grouped).
fn relink(global: GlobalValue<'_>, name: &str, linkage: Linkage) {
    // SAFETY: detaching a comdat is always valid.
    unsafe { LLVMSetComdat(global.as_value_ref(), std::ptr::null_mut()) };
    global.set_name(name);
    global.set_linkage(linkage);
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

/// The linkage nvcc gives whole-program device code (a CUDA C++ file compiled without `-rdc`:
/// `-c`, `-ptx`, `-cubin`), which no other module links against: every function but the
/// kernels, and every `__device__`, `__constant__` and `__managed__` variable, internal to the
/// module (PTX without `.visible` or `.weak`; LOCAL symbols in the cubin), as nvcc 13.5 writes
/// them. The variables all stay, used or not, under their names (`@llvm.used`): host code finds
/// them by name (`cudaMemcpyToSymbol`, the registration of a managed variable) and nvcc keeps
/// each one. A function nothing calls any more goes with the cleanup's `globaldce`: a device
/// function inlined into its kernels is not compiled again on its own. Afterwards no definition
/// but a kernel's can be seen from another module; declarations (the device runtime's entry
/// points, `vprintf`) and `__shared__` variables are left as they are.
pub fn whole_program_linkage(module: &Module<'_>) {
    let linked_elsewhere = |g: &GlobalValue<'_>| matches!(g.get_linkage(), Linkage::External | Linkage::WeakAny | Linkage::WeakODR | Linkage::LinkOnceAny | Linkage::LinkOnceODR | Linkage::Common);
    let internalize = |global: GlobalValue<'_>| {
        // SAFETY: detaching a comdat is always valid.
        unsafe { LLVMSetComdat(global.as_value_ref(), std::ptr::null_mut()) };
        global.set_linkage(Linkage::Internal);
        global.set_visibility(inkwell::GlobalVisibility::Default);
    };
    for function in module.get_functions() {
        let kernel = function.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV;
        if !kernel && function.count_basic_blocks() > 0 && linked_elsewhere(&function.as_global_value()) {
            internalize(function.as_global_value());
        }
    }
    let mut kept = Vec::new();
    for global in module.get_globals() {
        // NVPTX's global (1) and constant (4) memory: `__device__`, `__constant__`.
        let space = global.as_pointer_value().get_type().get_address_space();
        let variable = space == AddressSpace::from(1u16) || space == AddressSpace::from(4u16);
        if variable && global.get_initializer().is_some() && !global.get_name().to_bytes().starts_with(b"llvm.") && linked_elsewhere(&global) {
            internalize(global);
            kept.push(global.as_pointer_value());
        }
    }
    append_used(module, &kept);
}

/// nvcc's names for the data the compiler makes, which ptxas reads under them (and a PTX
/// snapshot shows): Clang's string literals `.str`, `.str.1`, ... become `$str`, `$str$1`, ...,
/// and the texts of `__PRETTY_FUNCTION__`, `__func__` and `__FUNCTION__` (Clang's
/// `__PRETTY_FUNCTION__.<function>`) `__unnamed_1`, `__unnamed_2`, ..., numbered in the module's
/// order. Both keep Clang's order, which is nvcc's: of `static` and template kernels, a kernel
/// method's template and a kernel with a non-type template argument, each string literal and
/// each function's text has nvcc 13.5's name (`compiler/tests/ptx_names.rs` compares them
/// where nvcc is present). NVPTX would otherwise write them `_$_str1` and
/// `__PRETTY_FUNCTION___$_<function>`; and the literals come last, as in nvcc's PTX. Only data of this module's own (private or internal
/// linkage) is renamed; the texts are left as they are where the module holds a global without
/// a name, which NVPTX itself calls `__unnamed_<n>`.
pub fn nvcc_data_names(module: &Module<'_>) {
    let own = |g: &GlobalValue<'_>| matches!(g.get_linkage(), Linkage::Private | Linkage::Internal);
    let anonymous = module.get_globals().any(|g| g.get_name().to_bytes().is_empty()) || module.get_functions().any(|f| f.get_name().to_bytes().is_empty());
    let mut texts = 0;
    let mut literals = Vec::new();
    for global in module.get_globals().filter(own) {
        let name = global.get_name().to_string_lossy().into_owned();
        if let Some(number) = string_literal_number(&name) {
            global.set_name(&match number {
                0 => "$str".to_string(),
                n => format!("$str${n}"),
            });
            literals.push((number, global));
        } else if !anonymous && ["__PRETTY_FUNCTION__.", "__func__.", "__FUNCTION__."].iter().any(|p| name.starts_with(p)) {
            texts += 1;
            global.set_name(&format!("__unnamed_{texts}"));
        }
    }
    // nvcc writes the string literals last, in their numbers' order.
    literals.sort_by_key(|(number, _)| *number);
    for (_, global) in literals {
        crate::back::move_global_to_end(global);
    }
}

/// The number of Clang's string literal `name`: 0 for `.str`, `n` for `.str.n` or `.strn`.
fn string_literal_number(name: &str) -> Option<u32> {
    match name.strip_prefix(".str")? {
        "" => Some(0),
        // `.str.1` as Clang names them, `.str1` once LLVM has made a name unique again.
        rest => Some(rest.strip_prefix('.').unwrap_or(rest)).filter(|n| !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())).and_then(|n| n.parse().ok()),
    }
}

/// Clang's `@__clang_gpu_used_external` lists the kernels of other files this one launches,
/// for Clang's own host compilation; in device code it is an unused array that the PTX would
/// carry as a variable nvcc's has not. Removed, with its entry in `@llvm.compiler.used`.
pub fn drop_clang_host_list(module: &Module<'_>) {
    let Some(list) = module.get_global("__clang_gpu_used_external") else { return };
    let keep: Vec<PointerValue<'_>> = take_used_list(module, "llvm.compiler.used").into_iter().filter(|p| p.as_value_ref() != list.as_pointer_value().as_value_ref()).collect();
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
    use crate::pipeline::threshold_tests::parse;

    /// Template instances get nvcc's spelling of their arguments, definitions and their uses
    /// alike; a declaration under Clang's spelling gives way to the definition under nvcc's.
    #[test]
    fn template_instances_are_spelled_as_nvcc_spells_them() {
        let ir = r#"
target triple = "nvptx64-nvidia-cuda"
define weak_odr ptx_kernel void @_Z2akITnDaLi5EEvPi(ptr %p) { ret void }
define weak_odr ptx_kernel void @_Z2dkILi4EEvPi(ptr %p) { ret void }
declare void @_Z2dkITnDcLi4EEvPi(ptr)
@table = global [2 x ptr] [ptr @_Z2akITnDaLi5EEvPi, ptr @_Z2dkITnDcLi4EEvPi]
"#;
        let context = inkwell::context::Context::create();
        let module = parse(&context, ir);
        edg_spellings(&module);
        module.verify().unwrap();
        let text = module.print_to_string().to_string();
        assert!(text.contains("define weak_odr ptx_kernel void @_Z2akILi5EEvPi(") && text.contains("define weak_odr ptx_kernel void @_Z2dkILi4EEvPi("), "{text}");
        assert!(text.contains("[ptr @_Z2akILi5EEvPi, ptr @_Z2dkILi4EEvPi]") && !text.contains("Tn"), "{text}");
        assert_eq!(edg_symbol("_Z2akITnDaLi5EEvPi__intern__0123abcd").as_deref(), Some("_Z2akILi5EEvPi__intern__0123abcd"));
    }

    /// A whole program's linkage, IR in, IR out: every defined function but the kernels and
    /// every defined `__device__`/`__constant__` variable internal (comdats and hidden
    /// visibility gone), the variables kept in `@llvm.used` with what it held; kernels,
    /// declarations, `__shared__` variables and LLVM's own lists as they were. A second run
    /// changes nothing.
    #[test]
    fn a_whole_programs_definitions_but_its_kernels_are_internal() {
        let ir = r#"
target triple = "nvptx64-nvidia-cuda"
$_Z3twoIiET_S0_ = comdat any
@g = addrspace(1) externally_initialized global i32 0, align 4
@c = addrspace(4) externally_initialized global [2 x float] zeroinitializer, align 4
@tv = linkonce_odr addrspace(1) global i32 7, comdat($_Z3twoIiET_S0_), align 4
@w = weak addrspace(1) global i32 1, align 4
@s = internal addrspace(1) global i32 0, align 4
@tile = addrspace(3) global [32 x i32] undef, align 4
@ext = external addrspace(1) global i32, align 4
@llvm.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(1) @s to ptr)], section "llvm.metadata"
declare i32 @vprintf(ptr, ptr)
define hidden i32 @_Z4funci(i32 %x) { ret i32 %x }
define linkonce_odr i32 @_Z3twoIiET_S0_(i32 %x) comdat { ret i32 %x }
define weak_odr ptx_kernel void @_Z1kIiEvPi(ptr %p) { ret void }
define ptx_kernel void @k(ptr %p) {
  %a = call i32 @_Z4funci(i32 1)
  %b = call i32 @_Z3twoIiET_S0_(i32 %a)
  %l = load i32, ptr addrspace(1) @ext
  store i32 %b, ptr %p
  ret void
}
"#;
        let context = inkwell::context::Context::create();
        let module = parse(&context, ir);
        whole_program_linkage(&module);
        module.verify().unwrap();
        let text = module.print_to_string().to_string();
        for line in [
            "@g = internal addrspace(1) externally_initialized global i32 0",
            "@c = internal addrspace(4) externally_initialized global [2 x float] zeroinitializer",
            "@tv = internal addrspace(1) global i32 7, align 4",
            "@w = internal addrspace(1) global i32 1",
            "@s = internal addrspace(1) global i32 0",
            "@tile = addrspace(3) global [32 x i32] undef",
            "@ext = external addrspace(1) global i32",
            "define internal i32 @_Z4funci(",
            "define internal i32 @_Z3twoIiET_S0_(",
            "define weak_odr ptx_kernel void @_Z1kIiEvPi(",
            "define ptx_kernel void @k(",
            "declare i32 @vprintf(",
        ] {
            assert!(text.contains(line), "`{line}` missing:\n{text}");
        }
        let used = text.lines().find(|l| l.starts_with("@llvm.used")).unwrap_or_default().to_string();
        for kept in ["@s to ptr", "@g to ptr", "@c to ptr", "@tv to ptr", "@w to ptr"] {
            assert!(used.contains(kept), "{kept} not kept: {used}");
        }
        assert!(!used.contains("@tile") && !used.contains("@ext"), "{used}");
        whole_program_linkage(&module);
        assert_eq!(module.print_to_string().to_string(), text, "a second run changed the module");
    }

    /// The compiler's data under nvcc's names, in nvcc's order (the literals last); the
    /// program's own variables and external data keep theirs; a module with a global without
    /// a name (NVPTX's own `__unnamed_<n>`) keeps Clang's names for the texts.
    #[test]
    fn the_compilers_data_gets_nvccs_names() {
        let ir = r#"
target triple = "nvptx64-nvidia-cuda"
@.str = private unnamed_addr constant [4 x i8] c"%d\0A\00"
@__PRETTY_FUNCTION__._Z1kIfEvPT_ = private unnamed_addr constant [2 x i8] c"k\00"
@.str.1 = private unnamed_addr constant [2 x i8] c"a\00"
@__func__._Z1kIfEvPT_ = private unnamed_addr constant [2 x i8] c"k\00"
@.str2 = internal constant [2 x i8] c"b\00"
@.str.02 = private constant [2 x i8] c"c\00"
@counter = addrspace(1) global i32 0
@.str.9 = external global [2 x i8]
"#;
        let context = inkwell::context::Context::create();
        let module = parse(&context, ir);
        nvcc_data_names(&module);
        module.verify().unwrap();
        let names: Vec<String> = module.get_globals().map(|g| g.get_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["__unnamed_1", "__unnamed_2", ".str.02", "counter", ".str.9", "$str", "$str$1", "$str$2"]);
        let anonymous = parse(&context, &format!("{ir}@0 = private constant i8 0\n"));
        nvcc_data_names(&anonymous);
        assert!(anonymous.get_global("__PRETTY_FUNCTION__._Z1kIfEvPT_").is_some() && anonymous.get_global("$str$1").is_some());
    }

    #[test]
    fn clang_suffixes_are_recognised() {
        assert_eq!(unsuffixed("_ZL6schildf__intern__55bb7e955a6468e8"), Some("_ZL6schildf"));
        assert_eq!(unsuffixed("_ZL7counter__static__b04fd23c98500190"), Some("_ZL7counter"));
        assert_eq!(unsuffixed("_Z5childPi"), None);
        assert_eq!(unsuffixed("my__intern__name"), None);
    }

    /// nvcc 13.5's names (`nvcc -rdc=true -ptx`) of the kernels and variables of a file with
    /// module id `_1d01383a_8_anon3_cu_c6f952e3_21524`, from Clang's (its suffix removed):
    /// ```text
    /// namespace { struct S { int a; }; }
    /// struct G { int a; };
    /// namespace n { static __device__ int t; static __global__ void sk(int *p); }
    /// static __global__ void sk2(S *s);
    /// namespace { namespace inner { __global__ void k4(int *p); __device__ int w; } }
    /// namespace m { namespace { __global__ void k5(G g); } }
    /// __global__ void vis(G *g, S s);
    /// template <typename T> __global__ void gk(T p);   // gk<S>
    /// static __device__ int fs[3];
    /// __device__ S gs2;
    /// ```
    #[test]
    fn symbols_are_nvccs_with_its_module_id() {
        let id = "_1d01383a_8_anon3_cu_c6f952e3_21524";
        let anon = "46_GLOBAL__N__1d01383a_8_anon3_cu_c6f952e3_21524";
        let internal = "44_INTERNAL_1d01383a_8_anon3_cu_c6f952e3_21524";
        let prefix = format!("__nv_static_35_{id}_");
        use NvccLinkage::{Internal, Strong, Weak};
        let cases = [
            ("_ZN1nL2skEPi", Kind::Kernel, format!("{prefix}_ZN1n2skEPi"), Internal),
            ("_ZL3sk2PN12_GLOBAL__N_11SE", Kind::Kernel, format!("{prefix}_Z3sk2PN{anon}1SE"), Internal),
            ("_ZN12_GLOBAL__N_15inner2k4EPi", Kind::Kernel, format!("{prefix}_ZN{anon}5inner2k4EPi"), Internal),
            ("_ZN1m12_GLOBAL__N_12k5E1G", Kind::Kernel, format!("{prefix}_ZN1m{anon}2k5E1G"), Internal),
            ("_Z2gkIN12_GLOBAL__N_11SEEvT_", Kind::Kernel, format!("{prefix}_Z2gkIN{anon}1SEEvT_"), Internal),
            // Internal for Clang for its parameter's type alone: external for nvcc.
            ("_Z3visP1GN12_GLOBAL__N_11SE", Kind::Kernel, format!("_Z3visP1GN{anon}1SE"), Strong),
            ("_ZN1nL1tE", Kind::Variable, format!("{prefix}_ZN{internal}1n1tE"), Internal),
            ("_ZN12_GLOBAL__N_15inner1wE", Kind::Variable, format!("{prefix}_ZN{internal}{anon}5inner1wE"), Internal),
            ("_ZL2fs", Kind::Variable, format!("{prefix}fs"), Internal),
            ("gs2", Kind::Variable, "gs2".to_string(), Strong),
            // A kernel template's instance for a lambda of a host function (nvcc: `.weak`).
            ("_Z5applyIZ4hostPiEUliE_EvS0_T_", Kind::Kernel, "_Z5applyIZ4hostPiEUliE_EvS0_T_".to_string(), Weak),
        ];
        for (clang, kind, nvcc, linkage) in cases {
            assert_eq!(nvcc_symbol(clang, kind, id), (nvcc, linkage), "{clang}");
        }
        // What the reader does not read keeps Clang's linkage, with nvcc's namespace.
        assert_eq!(nvcc_symbol("_Z2pkIXadL_ZL2svEEEvv", Kind::Kernel, id), (format!("{prefix}_Z2pkIXadL_ZL2svEEEvv"), Internal));
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
