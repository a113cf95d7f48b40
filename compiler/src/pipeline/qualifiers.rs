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
//! - `__block_size__((x, y, z)[, (cx, cy, cz)])` (CUDA 12.9's blocks as clusters): nvcc writes
//!   `.blocksareclusters`, `.reqntid x, y, z` in place of a launch bound's `.maxntid` (its
//!   `.minnctapersm` kept), and `.reqnctapercluster` of the second tuple, of `__cluster_dims__`,
//!   or 1, 1, 1; a second tuple beside `__cluster_dims__`, or a number that is not positive, it
//!   refuses (`E1021`). Clang 22 warns that it does not know `block_size` and drops it (and
//!   reads each tuple as a comma expression). NVPTX writes `.blocksareclusters` from PTX ISA 9.0
//!   only, so a module with one has every function's `+ptx` feature raised to 9.0, which
//!   CUDA 13's ptxas reads.
//!
//! cdpc's additions to Clang's headers (`front/cuda/additions.h`, section 8) define the macros as
//! annotations (`annotate("cdpc.cluster_dims", x, y, z)`, `annotate("cdpc.maxnreg", n)`,
//! `annotate("cdpc.block_size", x, y, z)` and `annotate("cdpc.block_cluster", cx, cy, cz)`),
//! which Clang keeps with their evaluated arguments (templates' included) in
//! `@llvm.global.annotations`; [`apply`] gives each annotated kernel NVPTX's function attributes
//! (`"nvvm.cluster_dim"="x,y,z"`, `"nvvm.maxnreg"="n"`, `"nvvm.reqntid"`,
//! `"nvvm.blocksareclusters"`), which NVPTX writes as nvcc's directives, and removes the
//! annotations with their strings, file names and arguments (NVPTX would otherwise write them
//! into the PTX as data).
//!
//! Invariant afterwards: no annotation of the module is one of cdpc's ([`CLUSTER_DIMS`],
//! [`MAXNREG`], [`BLOCK_SIZE`], [`BLOCK_CLUSTER`]); a module without one is untouched, and
//! other annotations stay as they were.

use crate::back::c_string;
use inkwell::attributes::AttributeLoc;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::LLVMValueRef;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, FunctionValue};

/// The annotation cdpc's `__cluster_dims__` writes (compiler/src/front/cuda/additions.h).
pub const CLUSTER_DIMS: &str = "cdpc.cluster_dims";

/// The annotation cdpc's `__maxnreg__` writes.
pub const MAXNREG: &str = "cdpc.maxnreg";

/// The annotations cdpc's `__block_size__` writes: the block's shape, and the cluster's from its
/// second tuple.
pub const BLOCK_SIZE: &str = "cdpc.block_size";
/// See [`BLOCK_SIZE`].
pub const BLOCK_CLUSTER: &str = "cdpc.block_cluster";

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
    /// The qualifier refused, as the source spells it (`__maxnreg__`).
    pub qualifier: &'static str,
    /// nvcc's words.
    pub message: &'static str,
}

/// What one kernel's annotations ask for, with the place of the last one read.
#[derive(Default)]
struct Asked {
    cluster: Option<[i64; 3]>,
    block: Option<[i64; 3]>,
    block_cluster: Option<[i64; 3]>,
    maxnreg: Option<i64>,
    file: String,
    line: u32,
}

impl Asked {
    /// Records annotation `name` with `args`, if it is one of cdpc's of its macro's shape.
    fn read(&mut self, name: &str, args: &[i64]) -> bool {
        let three = |a: &[i64]| <[i64; 3]>::try_from(a).ok();
        match (name, args.len()) {
            (CLUSTER_DIMS, 1..=3) if args.iter().all(|&d| d > 0) => {
                self.cluster = Some([args[0], args.get(1).copied().unwrap_or(1), args.get(2).copied().unwrap_or(1)]);
            }
            (BLOCK_SIZE, 3) => self.block = three(args),
            (BLOCK_CLUSTER, 3) => self.block_cluster = three(args),
            (MAXNREG, 1) => self.maxnreg = Some(args[0]),
            _ => return false,
        }
        true
    }

    /// NVPTX's attributes for what was asked (`None`: the attribute removed), or nvcc's refusal.
    fn attributes(&self, function: FunctionValue<'_>) -> Result<Vec<(&'static str, Option<String>)>, (&'static str, &'static str)> {
        let has = |k: &str| function.get_string_attribute(AttributeLoc::Function, k).is_some();
        let dims = |d: [i64; 3]| format!("{},{},{}", d[0], d[1], d[2]);
        let mut out = Vec::new();
        if let Some(n) = self.maxnreg {
            if ["nvvm.maxntid", "nvvm.minctasm", "nvvm.reqntid"].iter().any(|k| has(k)) {
                return Err(("__maxnreg__", "The __launch_bounds__ and __maxnreg__ qualifiers cannot be applied to the same kernel"));
            }
            if n <= 0 {
                return Err(("__maxnreg__", "The maximum number of registers that can be allocated per thread must be positive"));
            }
            out.push(("nvvm.maxnreg", Some(n.to_string())));
        }
        if let Some(block) = self.block {
            if block.iter().chain(self.block_cluster.iter().flatten()).any(|&d| d <= 0) {
                return Err(("__block_size__", "__block_size__ arguments must be positive integers"));
            }
            if self.block_cluster.is_some() && self.cluster.is_some() {
                return Err(("__block_size__", "cannot specify the second tuple in __block_size__ while __cluster_dims__ is present"));
            }
            out.push(("nvvm.maxntid", None));
            out.push(("nvvm.reqntid", Some(dims(block))));
            out.push(("nvvm.blocksareclusters", Some(String::new())));
            out.push(("nvvm.cluster_dim", Some(dims(self.cluster.or(self.block_cluster).unwrap_or([1, 1, 1])))));
        } else if let Some(cluster) = self.cluster {
            out.push(("nvvm.cluster_dim", Some(dims(cluster))));
        }
        Ok(out)
    }
}

/// The PTX ISA version `.blocksareclusters` needs (LLVM 22's NVPTX refuses it below).
const BLOCKS_ARE_CLUSTERS_PTX: u32 = 90;

/// Raises every function's `+ptxNN` target feature below `at_least` (ten times the PTX ISA
/// version: 90 is 9.0) to it; a function without one keeps NVPTX's default for its
/// architecture. Used here for [`BLOCKS_ARE_CLUSTERS_PTX`], and by the driver for the oldest
/// version NVPTX takes for the target (`SmVersion::min_ptx`), which a front end's `+ptx` may
/// be below (Clang 22's `+ptx88` for sm_110).
pub fn raise_ptx_version(module: &Module<'_>, at_least: u32) {
    let context = module.get_context();
    for function in module.get_functions() {
        let Some(features) = function.get_string_attribute(AttributeLoc::Function, "target-features") else { continue };
        let features = features.get_string_value().to_string_lossy().into_owned();
        let raised: Vec<String> = features
            .split(',')
            .map(|f| match f.strip_prefix("+ptx").and_then(|v| v.parse::<u32>().ok()) {
                Some(v) if v < at_least => format!("+ptx{at_least}"),
                _ => f.to_string(),
            })
            .collect();
        let raised = raised.join(",");
        if raised != features {
            function.remove_string_attribute(AttributeLoc::Function, "target-features");
            function.add_attribute(AttributeLoc::Function, context.create_string_attribute("target-features", &raised));
        }
    }
}

/// Makes every function's PTX ISA version at least `at_least`: [`raise_ptx_version`], and
/// `+ptx{at_least}` added to the target features of a function that has no `+ptx` feature
/// (NVPTX's default for the architecture may be below it). For what a module needs of a newer
/// PTX ISA, whatever its front end wrote.
pub fn require_ptx_version(module: &Module<'_>, at_least: u32) {
    raise_ptx_version(module, at_least);
    let context = module.get_context();
    for function in module.get_functions() {
        let features = function.get_string_attribute(AttributeLoc::Function, "target-features").map(|a| a.get_string_value().to_string_lossy().into_owned()).unwrap_or_default();
        if features.split(',').any(|f| f.starts_with("+ptx")) {
            continue;
        }
        let features = if features.is_empty() { format!("+ptx{at_least}") } else { format!("{features},+ptx{at_least}") };
        function.remove_string_attribute(AttributeLoc::Function, "target-features");
        function.add_attribute(AttributeLoc::Function, context.create_string_attribute("target-features", &features));
    }
}

/// The integers of an annotation's argument struct (`{ i32 2, i32 1, i32 1 }`), if all are.
fn integers(args: LLVMValueRef) -> Option<Vec<i64>> {
    // SAFETY: reads of a live global and its constant initializer, as `back::c_string`'s.
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

/// Gives every kernel annotated by cdpc's macros NVPTX's attributes (module docs); returns how
/// many annotations it applied, or what nvcc refuses (then the module is left as it was). An
/// annotation of cdpc's name whose arguments are not integers of the macro's count is left
/// alone (cdpc's macros write no other).
pub fn apply(module: &Module<'_>) -> Result<usize, Vec<Refused>> {
    let Some(annotations) = module.get_global("llvm.global.annotations") else { return Ok(0) };
    let context = module.get_context();
    let table = annotations.as_value_ref();
    let mut kept: Vec<LLVMValueRef> = Vec::new();
    let mut dropped: Vec<LLVMValueRef> = Vec::new();
    let mut asked: Vec<(FunctionValue<'_>, Asked)> = Vec::new();
    let mut refused: Vec<Refused> = Vec::new();
    let mut read_count = 0;
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
            let read = (LLVMGetNumOperands(entry) == 5).then(|| {
                let (function, name, file, line, args) = (LLVMGetOperand(entry, 0), LLVMGetOperand(entry, 1), LLVMGetOperand(entry, 2), LLVMGetOperand(entry, 3), LLVMGetOperand(entry, 4));
                if LLVMIsAFunction(function).is_null() {
                    return None;
                }
                let function = FunctionValue::new(function)?;
                let (name, args) = (c_string(name)?, integers(args)?);
                let at = match asked.iter().position(|(f, _)| *f == function) {
                    Some(at) => at,
                    None => {
                        asked.push((function, Asked::default()));
                        asked.len() - 1
                    }
                };
                let entry_of = &mut asked[at].1;
                if !entry_of.read(&name, &args) {
                    return None;
                }
                entry_of.file = c_string(file).unwrap_or_default();
                entry_of.line = if LLVMIsAConstantInt(line).is_null() { 0 } else { LLVMConstIntGetZExtValue(line) as u32 };
                Some([LLVMGetOperand(entry, 1), file, LLVMGetOperand(entry, 4)])
            });
            match read.flatten() {
                Some(parts) => {
                    dropped.extend(parts);
                    read_count += 1;
                }
                None => kept.push(entry),
            }
        }
        let mut changes = Vec::new();
        for (function, what) in &asked {
            match what.attributes(*function) {
                Ok(attributes) => changes.extend(attributes.into_iter().map(|(k, v)| (*function, k, v))),
                Err((qualifier, message)) => refused.push(Refused { kernel: function.get_name().to_string_lossy().into_owned(), file: what.file.clone(), line: what.line, qualifier, message }),
            }
        }
        if !refused.is_empty() {
            return Err(refused);
        }
        if dropped.is_empty() {
            return Ok(0);
        }
        let mut blocks_are_clusters = false;
        for (function, key, value) in changes {
            function.remove_string_attribute(AttributeLoc::Function, key);
            if let Some(value) = value {
                blocks_are_clusters |= key == "nvvm.blocksareclusters";
                function.add_attribute(AttributeLoc::Function, context.create_string_attribute(key, &value));
            }
        }
        if blocks_are_clusters {
            raise_ptx_version(module, BLOCKS_ARE_CLUSTERS_PTX);
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
            // Used by nothing but the removed table's constants, which LLVM keeps until a
            // global DCE.
            let left = super::clone::users(global);
            if !LLVMIsAGlobalVariable(global).is_null() && left.instructions.is_empty() && !left.other {
                // The dead table's constants still name it: they name poison instead, then it goes.
                LLVMReplaceAllUsesWith(global, LLVMGetPoison(LLVMTypeOf(global)));
                LLVMDeleteGlobal(global);
            }
        }
    }
    Ok(read_count)
}
