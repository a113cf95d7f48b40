//! Thread-block clusters' compile-time size (`__cluster_dims__`), as nvcc writes it.
//!
//! nvcc gives a kernel declared `__global__ void __cluster_dims__(2, 1, 1) k(...)` the PTX
//! directives `.explicitcluster` and `.reqnctapercluster 2, 1, 1` (a missing dimension is 1),
//! so that every launch of it, a host's `<<<>>>` included, forms clusters of that shape
//! (measured with nvcc 13.5). Clang 22 accepts the `cluster_dims` attribute CUDA's
//! host_defines.h spells the macro as and drops it for NVPTX, silently: the kernel ran
//! without clusters, `cg::this_cluster().block_rank()` 0 in every block. cdpc's additions to
//! Clang's headers (`clang/additions.h`, section 8) define the macro as an annotation,
//! `annotate("cdpc.cluster_dims", x, y, z)`, which Clang keeps with its evaluated arguments
//! (templates' included) in `@llvm.global.annotations`; [`dims`] gives each annotated kernel
//! NVPTX's function attribute `"nvvm.cluster_dim"="x,y,z"`, which NVPTX writes as nvcc's two
//! directives, and removes the annotations with their strings and arguments (NVPTX would
//! otherwise write them into the PTX as data). Below sm_90 the header refuses the macro
//! itself with nvcc's message.
//!
//! Invariant afterwards: no annotation of the module is [`ANNOTATION`]; a module without one
//! is untouched, and other annotations stay as they were.

use inkwell::attributes::AttributeLoc;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, FunctionValue};

/// The annotation cdpc's `__cluster_dims__` writes (compiler/src/clang/additions.h).
pub const ANNOTATION: &str = "cdpc.cluster_dims";

/// NVPTX's function attribute for `.explicitcluster` and `.reqnctapercluster`.
const ATTRIBUTE: &str = "nvvm.cluster_dim";

/// The text of a global holding a C string (an annotation's name), without its final NUL.
fn c_string(global: LLVMValueRef) -> Option<String> {
    // SAFETY: `global` is a live global value; every call reads it only, and a null or
    // non-data initializer is checked before it is read as data.
    unsafe {
        if LLVMIsAGlobalVariable(global).is_null() {
            return None;
        }
        let init = LLVMGetInitializer(global);
        if init.is_null() || LLVMIsAConstantDataSequential(init).is_null() || LLVMIsConstantString(init) == 0 {
            return None;
        }
        let mut len = 0usize;
        let data = LLVMGetAsString(init, &mut len);
        let bytes = std::slice::from_raw_parts(data.cast::<u8>(), len);
        Some(String::from_utf8_lossy(bytes.strip_suffix(&[0]).unwrap_or(bytes)).into_owned())
    }
}

/// The integers of an annotation's argument struct (`{ i32 2, i32 1, i32 1 }`), if all are.
fn integers(args: LLVMValueRef) -> Option<Vec<i64>> {
    // SAFETY: as in `c_string`: reads of a live global and its constant initializer.
    unsafe {
        if args.is_null() || LLVMIsAGlobalVariable(args).is_null() {
            return None;
        }
        let init = LLVMGetInitializer(args);
        if init.is_null() || LLVMIsAConstantStruct(init).is_null() {
            return None;
        }
        (0..LLVMGetNumOperands(init) as u32)
            .map(|i| {
                let v = LLVMGetOperand(init, i);
                (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetSExtValue(v))
            })
            .collect()
    }
}

/// Whether every user of `value` is a constant expression or aggregate that nothing live uses
/// (the removed annotation table's entries, which LLVM keeps until a global DCE).
fn only_dead_constants_use(value: LLVMValueRef) -> bool {
    // SAFETY: walks the use list of a live value; each user is checked for its kind.
    unsafe {
        let mut u = LLVMGetFirstUse(value);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            let dead_constant = !LLVMIsAConstant(user).is_null() && LLVMIsAGlobalValue(user).is_null() && only_dead_constants_use(user);
            if !dead_constant {
                return false;
            }
            u = LLVMGetNextUse(u);
        }
        true
    }
}

/// Gives every kernel annotated [`ANNOTATION`] NVPTX's `"nvvm.cluster_dim"` (module docs);
/// returns how many. An annotation whose arguments are not one to three integers is left
/// alone (cdpc's macro writes no other).
pub fn dims(module: &Module<'_>) -> usize {
    let Some(annotations) = module.get_global("llvm.global.annotations") else { return 0 };
    let context = module.get_context();
    let table = annotations.as_value_ref();
    let mut kept: Vec<LLVMValueRef> = Vec::new();
    let mut dropped: Vec<LLVMValueRef> = Vec::new();
    let mut applied = 0;
    // SAFETY: `table` is the module's annotation table, an array of `{ ptr, ptr, ptr, i32, ptr }`
    // structs (LLVM's layout of `llvm.global.annotations`); each operand read is checked for
    // the kind it must be before use.
    unsafe {
        let init = LLVMGetInitializer(table);
        if init.is_null() || LLVMIsAConstantArray(init).is_null() {
            return 0;
        }
        for i in 0..LLVMGetNumOperands(init) as u32 {
            let entry = LLVMGetOperand(init, i);
            let ours = (LLVMGetNumOperands(entry) == 5).then(|| {
                let (function, name, args) = (LLVMGetOperand(entry, 0), LLVMGetOperand(entry, 1), LLVMGetOperand(entry, 4));
                if LLVMIsAFunction(function).is_null() || c_string(name).as_deref() != Some(ANNOTATION) {
                    return None;
                }
                let dims = integers(args).filter(|d| (1..=3).contains(&d.len()) && d.iter().all(|&x| x > 0))?;
                Some((function, dims, [name, LLVMGetOperand(entry, 2), args]))
            });
            match ours.flatten() {
                Some((function, d, parts)) => {
                    let value = format!("{},{},{}", d[0], d.get(1).copied().unwrap_or(1), d.get(2).copied().unwrap_or(1));
                    let function = FunctionValue::new(function).expect("checked to be a function");
                    function.add_attribute(AttributeLoc::Function, context.create_string_attribute(ATTRIBUTE, &value));
                    dropped.extend(parts);
                    applied += 1;
                }
                None => kept.push(entry),
            }
        }
        if applied == 0 {
            return 0;
        }
        // The table without cdpc's entries: a new global of the shorter array, or none.
        if kept.is_empty() {
            LLVMDeleteGlobal(table);
        } else {
            let element = LLVMTypeOf(kept[0]);
            let array = LLVMConstArray2(element, kept.as_mut_ptr(), kept.len() as u64);
            let replacement = LLVMAddGlobal(module.as_mut_ptr(), LLVMTypeOf(array), c"llvm.global.annotations.cdpc".as_ptr());
            LLVMSetInitializer(replacement, array);
            LLVMSetLinkage(replacement, LLVMGetLinkage(table));
            LLVMSetSection(replacement, LLVMGetSection(table));
            LLVMDeleteGlobal(table);
            let name = c"llvm.global.annotations";
            LLVMSetValueName2(replacement, name.as_ptr(), name.to_bytes().len());
        }
        // The names, files and arguments nothing else uses.
        dropped.sort();
        dropped.dedup();
        for global in dropped {
            if !LLVMIsAGlobalVariable(global).is_null() && only_dead_constants_use(global) {
                // The dead table's constants still name it: they name poison instead, then it goes.
                LLVMReplaceAllUsesWith(global, LLVMGetPoison(LLVMTypeOf(global)));
                LLVMDeleteGlobal(global);
            }
        }
    }
    applied
}
