//! nvcc's names in Clang's host-side IR of a CUDA C++ file compiled with `-fgpu-rdc`
//! (`--cuda-host-only --no-offload-new-driver -fcuda-include-gpubinary FATBIN`), so that its
//! object links like one of `nvcc -dc`'s.
//!
//! Clang's host code already has nvcc's shape (measured with Clang 22 and nvcc 13.5): the fat
//! binary in `__nv_relfatbin`, the module id in `__nv_module_id`, `__fatbinwrap<ID>`, a
//! constructor calling `__cudaRegisterLinkedBinary<ID>` (which `nvcc -dlink` writes for every
//! `__nv_module_id` it reads) and a callback registering each kernel's stub. Three names
//! differ, and this pass gives them nvcc's:
//!
//! - a kernel's host stub: Clang calls it `_Z20__device_stub__childPi`, nvcc `_Z5childPi`
//!   (the kernel's own symbol, which host code compiled by nvcc calls for `child<<<...>>>`);
//!   defined stubs and the stubs of kernels of other files alike;
//! - the device name a `static` kernel or variable (or one of an anonymous namespace, or of
//!   such a type) is registered under: Clang's `_ZL2skPi__intern__<hash>`, nvcc's
//!   `__nv_static_<n>_<id>__Z2skPi`, the name the device side gets from
//!   [`super::names::nvcc_symbol`] with the same module id;
//! - the module id: Clang's `__nv_<guid>` becomes the id the device side was named under,
//!   so that the object has one id, as nvcc's has;
//! - a template instance's arguments in a stub's name and a registered name, spelled as nvcc
//!   spells them ([`super::names::edg_symbol`]: no `TnDa` before an `auto` parameter's), as
//!   the device side's are.
//!
//! Afterwards no symbol contains `__device_stub__` and every registered name is the device
//! code's.

use super::itanium;
use super::names::{nvcc_symbol, unsuffixed, Kind};
use crate::back::c_string;
use crate::llvm::operand;
use inkwell::llvm_sys::comdat::LLVMSetComdat;
use inkwell::llvm_sys::core::{LLVMGetNamedGlobalAlias, LLVMSetValueName2};
use inkwell::module::{Linkage, Module};
use inkwell::values::{AsValueRef, BasicValueEnum, GlobalValue, InstructionOpcode, InstructionValue};

const STUB: &str = "__device_stub__";

/// The symbol nvcc gives the host stub Clang calls `stub`, or `None` if `stub` is no stub.
/// `__device_stub__k` (C linkage) is `k`; in a mangled name the source name
/// `<n>__device_stub__<id>` becomes `<n - 15><id>`: of the lengths the digits before the
/// marker can be read as, the shortest whose identifier fits the symbol.
pub fn stub_symbol(stub: &str) -> Option<String> {
    if let Some(plain) = stub.strip_prefix(STUB) {
        return (!plain.is_empty()).then(|| plain.to_string());
    }
    itanium::without_identifier_prefix(stub, STUB)
}

/// Gives Clang's host IR nvcc's names (module docs) under module id `id`. `Err` says what in
/// the module was not as Clang writes it.
pub fn nvcc_host_names(module: &Module<'_>, id: &str) -> Result<(), String> {
    rename_stubs(module);
    rename_registered_statics(module, id);
    replace_module_id(module, id)
}

/// The calls of the runtime's registration functions in Clang's host IR, each with whether it
/// registers a kernel (`__cudaRegisterFunction`) rather than a variable.
fn registrations<'ctx>(module: &Module<'ctx>) -> Vec<(InstructionValue<'ctx>, bool)> {
    let mut found = Vec::new();
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            for inst in block.get_instructions() {
                if inst.get_opcode() != InstructionOpcode::Call {
                    continue;
                }
                let Some(last) = inst.get_num_operands().checked_sub(1) else { continue };
                let Some(callee) = operand(inst, last) else { continue };
                let callee = callee.as_value_ref();
                let Some(f) = module.get_functions().find(|f| f.as_value_ref() == callee) else { continue };
                match f.get_name().to_bytes() {
                    b"__cudaRegisterFunction" => found.push((inst, true)),
                    b"__cudaRegisterVar" | b"__cudaRegisterManagedVar" | b"__cudaRegisterSurface" | b"__cudaRegisterTexture" => found.push((inst, false)),
                    _ => {}
                }
            }
        }
    }
    found
}

/// nvcc 13's `-static-global-template-stub` (on by default), for a whole-program object's host
/// IR: a template kernel's instance there is this file's own device program's, so its host
/// stub has internal linkage, not the weak linkage Clang gives an instance. With a weak stub
/// the host linker keeps one file's, and a launch from another file registers and runs the
/// first file's device program's instance (its `static` device variables, its macros). Every
/// function `__cudaRegisterFunction` registers whose linkage lets the linker pick one of
/// several (weak or linkonce) becomes internal, out of its comdat. (`-dc` objects, one device
/// program, keep them weak, as nvcc's.)
pub fn internal_template_stubs(module: &Module<'_>) {
    for (inst, is_function) in registrations(module) {
        let Some(BasicValueEnum::PointerValue(p)) = operand(inst, 1).filter(|_| is_function) else { continue };
        let Some(stub) = module.get_functions().find(|f| f.as_global_value().as_pointer_value() == p) else { continue };
        if matches!(stub.get_linkage(), Linkage::WeakODR | Linkage::WeakAny | Linkage::LinkOnceODR | Linkage::LinkOnceAny) {
            stub.set_linkage(Linkage::Internal);
            // SAFETY: the function is live; a null comdat takes it out of its group.
            unsafe { LLVMSetComdat(stub.as_value_ref(), std::ptr::null_mut()) };
        }
    }
}

fn rename_stubs(module: &Module<'_>) {
    for function in module.get_functions() {
        let name = function.get_name().to_string_lossy().into_owned();
        // A `static` kernel's stub is internal: no other file names it.
        if function.get_linkage() == Linkage::Internal {
            continue;
        }
        if let Some(nvcc) = stub_symbol(&name) {
            let nvcc = super::names::edg_symbol(&nvcc).unwrap_or(nvcc);
            if module.get_function(&nvcc).is_none() {
                // A template instance's stub is alone in a COMDAT group of its name.
                super::names::rename_with_comdat(module, function.as_global_value(), &nvcc);
            }
        }
    }
}

/// The registration calls' device names of `static` kernels and variables.
fn rename_registered_statics(module: &Module<'_>, id: &str) {
    let mut strings: Vec<(GlobalValue<'_>, bool)> = Vec::new();
    for (inst, is_function) in registrations(module) {
        for i in 0..inst.get_num_operands() - 1 {
            if let Some(BasicValueEnum::PointerValue(p)) = operand(inst, i) {
                if let Some(g) = module.get_globals().find(|g| g.as_pointer_value() == p) {
                    if !strings.iter().any(|(s, _)| *s == g) {
                        strings.push((g, is_function));
                    }
                }
            }
        }
    }
    for (global, is_function) in strings {
        let Some(text) = c_string(global.as_value_ref()) else { continue };
        let renamed = match unsuffixed(&text) {
            Some(plain) => nvcc_symbol(plain, if is_function { Kind::Kernel } else { Kind::Variable }, id).0,
            // A template instance's name, spelled as the device code's (`names::edg_spellings`).
            None => match super::names::edg_symbol(&text) {
                Some(edg) => edg,
                None => continue,
            },
        };
        replace_string(module, global, &renamed);
    }
}

/// Points every use of `global` (a constant string) at a new one holding `text`, with the
/// old one's section and alignment, and removes the old one.
fn replace_string<'ctx>(module: &Module<'ctx>, global: GlobalValue<'ctx>, text: &str) -> GlobalValue<'ctx> {
    let ctx = module.get_context();
    let value = ctx.const_string(text.as_bytes(), true);
    let name = global.get_name().to_string_lossy().into_owned();
    let new = module.add_global(value.get_type(), None, &name);
    new.set_initializer(&value);
    new.set_constant(true);
    new.set_linkage(global.get_linkage());
    new.set_unnamed_addr(true);
    new.set_alignment(global.get_alignment());
    if let Some(section) = global.get_section() {
        new.set_section(Some(&section.to_string_lossy()));
    }
    global.as_pointer_value().replace_all_uses_with(new.as_pointer_value());
    // SAFETY: nothing refers to the old string any more.
    unsafe { global.delete() };
    new.set_name(&name);
    new
}

/// Clang's module id (`__nv_<guid>`) replaced by `id` everywhere it is named.
fn replace_module_id(module: &Module<'_>, id: &str) -> Result<(), String> {
    let Some(global) = module.get_globals().find(|g| g.get_section().is_some_and(|s| s.to_bytes() == b"__nv_module_id")) else {
        return Err("Clang's host code has no `__nv_module_id`".into());
    };
    let old = c_string(global.as_value_ref()).ok_or("Clang's `__nv_module_id` is no string")?;
    replace_string(module, global, id);
    let register = format!("__cudaRegisterLinkedBinary{old}");
    let function = module.get_function(&register).ok_or_else(|| format!("Clang's host code does not call `{register}`"))?;
    function.as_global_value().set_name(&format!("__cudaRegisterLinkedBinary{id}"));
    let wrapper = std::ffi::CString::new(format!("__fatbinwrap{old}")).map_err(|e| e.to_string())?;
    let renamed = format!("__fatbinwrap{id}");
    // SAFETY: the module is valid; a null result means no such alias.
    unsafe {
        let alias = LLVMGetNamedGlobalAlias(module.as_mut_ptr(), wrapper.as_ptr(), wrapper.as_bytes().len());
        if alias.is_null() {
            return Err(format!("Clang's host code has no `__fatbinwrap{old}`"));
        }
        LLVMSetValueName2(alias, renamed.as_ptr().cast(), renamed.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{nvcc_host_names, stub_symbol};
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    /// Clang 22's host IR of a file (`fuzz/seeds/host-ir/clang-host.ll`, its source in the
    /// comment below) given nvcc's names. The expected stub symbols are nvcc 13.5's for the
    /// same file (`nm` of its `-dc` object: `_Z5childPi`, `parent`, a weak
    /// `_Z4fillIiEvPT_S0_` in a COMDAT group of that name, an undefined `_ZN2v21kEPi`).
    ///
    /// ```text
    /// static __device__ int bias = 1;
    /// static __global__ void step(int *p) { p[threadIdx.x] += bias; }
    /// __global__ void child(int *p) { p[threadIdx.x] += 1; }
    /// extern "C" __global__ void parent(int *p) { child<<<1, 32>>>(p); }
    /// template <typename T> __global__ void fill(T *p, T v) { *p = v; }
    /// namespace v2 { __global__ void k(int *p); }
    /// void run(int *d) { int b = 2; cudaMemcpyToSymbol(bias, &b, sizeof b); parent<<<1, 1>>>(d);
    ///                    step<<<1, 32>>>(d); fill<<<1, 1>>>(d, 3); v2::k<<<1, 1>>>(d); }
    /// ```
    #[test]
    fn clangs_host_ir_gets_nvccs_names() {
        let ir = include_str!("../../../fuzz/seeds/host-ir/clang-host.ll");
        let context = Context::create();
        let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "host")).unwrap();
        nvcc_host_names(&module, "_ab12_6_x_cu_cdpc").unwrap();
        module.verify().unwrap();
        let text = module.print_to_string().to_string();
        for defined in ["define dso_local void @_Z5childPi(", "define dso_local void @parent(", "define linkonce_odr dso_local void @_Z4fillIiEvPT_S0_(", "declare void @_ZN2v21kEPi("] {
            assert!(text.contains(defined), "no `{defined}`:\n{text}");
        }
        assert!(text.contains("$_Z4fillIiEvPT_S0_ = comdat any") && text.contains("@_Z4fillIiEvPT_S0_(ptr noundef %0, i32 noundef %1) #0 comdat {"), "{text}");
        // Only the `static` kernel's internal stub keeps Clang's name.
        let stubs: Vec<&str> = text.lines().filter(|l| l.starts_with("define") && l.contains("__device_stub__")).collect();
        assert_eq!(stubs.len(), 1, "{stubs:?}");
        assert!(stubs[0].starts_with("define internal"), "{stubs:?}");
        // What the static kernel and variable are registered under: names.rs's names.
        assert!(text.contains("c\"__nv_static_17__ab12_6_x_cu_cdpc__Z4stepPi\\00\""), "{text}");
        assert!(text.contains("c\"__nv_static_17__ab12_6_x_cu_cdpc_bias\\00\""), "{text}");
        assert!(!text.contains("__intern__") && !text.contains("__static__"), "{text}");
        // One module id.
        assert!(text.contains("c\"_ab12_6_x_cu_cdpc\\00\", section \"__nv_module_id\""), "{text}");
        assert!(text.contains("@__fatbinwrap_ab12_6_x_cu_cdpc = alias") && text.contains("@__cudaRegisterLinkedBinary_ab12_6_x_cu_cdpc("), "{text}");
        assert!(!text.contains("__nv_6fd08f676ff6e22d"), "{text}");
    }

    #[test]
    fn stubs_get_the_kernels_own_symbols() {
        assert_eq!(stub_symbol("_Z20__device_stub__childPi").as_deref(), Some("_Z5childPi"));
        assert_eq!(stub_symbol("__device_stub__parent").as_deref(), Some("parent"));
        // a namespace whose name ends in a digit: `2v2` then the stub's `16__device_stub__k`
        assert_eq!(stub_symbol("_ZN2v216__device_stub__kEPi").as_deref(), Some("_ZN2v21kEPi"));
        assert_eq!(stub_symbol("_Z24__device_stub__kernel_v2IiEvPT_").as_deref(), Some("_Z9kernel_v2IiEvPT_"));
        assert_eq!(stub_symbol("_Z5childPi"), None);
        assert_eq!(stub_symbol("__device_stub__"), None);
        assert_eq!(stub_symbol("_Z15__device_stub__"), None);
    }
}
