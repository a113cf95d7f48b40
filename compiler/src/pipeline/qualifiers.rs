//! Kernel qualifiers that Clang 22 drops for NVPTX, as nvcc writes them.
//!
//! - `__cluster_dims__(x, y, z)`: nvcc gives the kernel `.explicitcluster` and
//!   `.reqnctapercluster x, y, z` (a missing dimension is 1), so that every launch of it, a
//!   host's `<<<>>>` included, forms clusters of that shape (measured with nvcc 13.5). CUDA's
//!   host_defines.h spells the macro as the `cluster_dims` attribute, which Clang 22 accepts
//!   and drops for NVPTX without a word: the kernel ran without clusters,
//!   `cg::this_cluster().block_rank()` 0 in every block. Below sm_90 cdpc's header refuses the
//!   macro itself with nvcc's message.
//! - `__maxnreg__(n)`: nvcc's `.maxnreg n`; Clang 22 warns that it does not know the
//!   `maxnreg` attribute and drops it, so the kernel got as many registers as ptxas chose (and
//!   aggregation's cap of 64 where a kernel of the user's own bound keeps it). nvcc refuses it
//!   beside `__launch_bounds__` and with a number that is not positive: `E1021` here.
//!
//! cdpc's additions to Clang's headers (`clang/additions.h`, section 8) define both macros as
//! annotations (`annotate("cdpc.cluster_dims", x, y, z)`, `annotate("cdpc.maxnreg", n)`),
//! which Clang keeps with their evaluated arguments (templates' included) in
//! `@llvm.global.annotations`; [`apply`] gives each annotated kernel NVPTX's function attribute
//! (`"nvvm.cluster_dim"="x,y,z"`, `"nvvm.maxnreg"="n"`), which NVPTX writes as nvcc's
//! directives, and removes the annotations with their strings, file names and arguments (NVPTX
//! would otherwise write them into the PTX as data).
//!
//! Invariant afterwards: no annotation of the module is one of cdpc's ([`CLUSTER_DIMS`],
//! [`MAXNREG`]); a module without one is untouched, and other annotations stay as they were.

use inkwell::attributes::AttributeLoc;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, FunctionValue};

/// The annotation cdpc's `__cluster_dims__` writes (compiler/src/clang/additions.h).
pub const CLUSTER_DIMS: &str = "cdpc.cluster_dims";

/// The annotation cdpc's `__maxnreg__` writes.
pub const MAXNREG: &str = "cdpc.maxnreg";

/// A qualifier nvcc refuses (`E1021`): the kernel's symbol, the file and line Clang recorded
/// for its declaration, and nvcc's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The kernel's symbol.
    pub kernel: String,
    /// The file Clang named for the declaration, as it names it.
    pub file: String,
    /// The declaration's line there (1-based; 0 if Clang gave none).
    pub line: u32,
    /// nvcc's words.
    pub message: &'static str,
}

/// What an annotation asks for: NVPTX's attribute and its value, or nvcc's refusal.
fn attribute(name: &str, args: &[i64], function: FunctionValue<'_>) -> Option<Result<(&'static str, String), &'static str>> {
    let bounded = ["nvvm.maxntid", "nvvm.minctasm", "nvvm.reqntid"].iter().any(|k| function.get_string_attribute(AttributeLoc::Function, k).is_some());
    match (name, args) {
        (CLUSTER_DIMS, [x, rest @ ..]) if rest.len() <= 2 && args.iter().all(|&d| d > 0) => {
            Some(Ok(("nvvm.cluster_dim", format!("{x},{},{}", rest.first().copied().unwrap_or(1), rest.get(1).copied().unwrap_or(1)))))
        }
        (MAXNREG, [_]) if bounded => Some(Err("The __launch_bounds__ and __maxnreg__ qualifiers cannot be applied to the same kernel")),
        (MAXNREG, [n]) if *n <= 0 => Some(Err("The maximum number of registers that can be allocated per thread must be positive")),
        (MAXNREG, [n]) => Some(Ok(("nvvm.maxnreg", n.to_string()))),
        _ => None,
    }
}

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
        if init.is_null() {
            return None;
        }
        // `{ i32 0 }` is written `zeroinitializer`.
        if !LLVMIsAConstantAggregateZero(init).is_null() {
            let ty = LLVMTypeOf(init);
            let fields = LLVMCountStructElementTypes(ty);
            let all_integers = (0..fields).all(|i| LLVMGetTypeKind(LLVMStructGetTypeAtIndex(ty, i)) == inkwell::llvm_sys::LLVMTypeKind::LLVMIntegerTypeKind);
            return (LLVMGetTypeKind(ty) == inkwell::llvm_sys::LLVMTypeKind::LLVMStructTypeKind && all_integers).then(|| vec![0; fields as usize]);
        }
        if LLVMIsAConstantStruct(init).is_null() {
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

/// Gives every kernel annotated by cdpc's macros NVPTX's attribute (module docs); returns how
/// many annotations it applied, or what nvcc refuses (then the module is left as it was). An
/// annotation of cdpc's name whose arguments are not integers of the macro's count is left
/// alone (cdpc's macros write no other).
pub fn apply(module: &Module<'_>) -> Result<usize, Vec<Refused>> {
    let Some(annotations) = module.get_global("llvm.global.annotations") else { return Ok(0) };
    let context = module.get_context();
    let table = annotations.as_value_ref();
    let mut kept: Vec<LLVMValueRef> = Vec::new();
    let mut dropped: Vec<LLVMValueRef> = Vec::new();
    let mut changes: Vec<(FunctionValue<'_>, &'static str, String)> = Vec::new();
    let mut refused: Vec<Refused> = Vec::new();
    let applied;
    // SAFETY: `table` is the module's annotation table, an array of `{ ptr, ptr, ptr, i32, ptr }`
    // structs (LLVM's layout of `llvm.global.annotations`); each operand read is checked for
    // the kind it must be before use.
    unsafe {
        let init = LLVMGetInitializer(table);
        if init.is_null() || LLVMIsAConstantArray(init).is_null() {
            return Ok(0);
        }
        for i in 0..LLVMGetNumOperands(init) as u32 {
            let entry = LLVMGetOperand(init, i);
            let ours = (LLVMGetNumOperands(entry) == 5).then(|| {
                let (function, name, file, args) = (LLVMGetOperand(entry, 0), LLVMGetOperand(entry, 1), LLVMGetOperand(entry, 2), LLVMGetOperand(entry, 4));
                if LLVMIsAFunction(function).is_null() {
                    return None;
                }
                let function = FunctionValue::new(function)?;
                let name = c_string(name)?;
                let asked = attribute(&name, &integers(args)?, function)?;
                let line = LLVMGetOperand(entry, 3);
                let line = if LLVMIsAConstantInt(line).is_null() { 0 } else { LLVMConstIntGetZExtValue(line) as u32 };
                Some((function, asked, c_string(file).unwrap_or_default(), line, [LLVMGetOperand(entry, 1), file, args]))
            });
            match ours.flatten() {
                Some((function, Ok((key, value)), _, _, parts)) => {
                    changes.push((function, key, value));
                    dropped.extend(parts);
                }
                Some((function, Err(message), file, line, _)) => {
                    refused.push(Refused { kernel: function.get_name().to_string_lossy().into_owned(), file, line, message });
                }
                None => kept.push(entry),
            }
        }
        if !refused.is_empty() {
            return Err(refused);
        }
        if changes.is_empty() {
            return Ok(0);
        }
        applied = changes.len();
        for (function, key, value) in changes {
            function.add_attribute(AttributeLoc::Function, context.create_string_attribute(key, &value));
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
    Ok(applied)
}
