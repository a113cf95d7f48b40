//! The kernel language's code generation: its checked HIR to an LLVM module for the NVPTX end
//! (`crate::back`), which the launch pipeline's schedule then lowers and optimises and the back
//! end prints.
//!
//! The work is split by concern: `types` maps HIR types to LLVM types, `globals` builds
//! module-scope variables, `function` lowers statements and expressions, `launch` lowers
//! `<<<>>>` as the documented V1 sequence whatever ABI is asked for (the launch pipeline
//! lowers it to the ABI asked for), `builtins` and `intrinsics` the CUDA built-ins,
//! `runtime_api` the device-runtime calls, `asm` inline assembly and `debug` the DWARF of
//! `-lineinfo` and `-G`.
//!
//! Whole programs go through [`generate`] (or [`emit_llvm_ir`] and [`emit_ptx`]), which take a
//! checked [`hir::Module`] (from [`crate::driver::check`]); the driver's build runs the launch
//! pipeline's schedule, which optimises the module too, in [`generate_lowered`]'s `lower`,
//! between building the module and printing it.
//!
//! `types.rs` lays a union out as its first member and bytes, behind a zero-length filler of its
//! alignment, and a struct with bit-fields as its other fields at sema's offsets with the
//! bit-fields' bytes as fillers; `bit_fields.rs` reads and writes a bit-field through only the
//! bytes that hold its bits. Calls through pointers are LLVM indirect calls. `function.rs`
//! writes `switch` as LLVM's and labels as blocks; `asm.rs` writes `hir::InlineAsm` as an LLVM
//! inline-asm call (`%N` as `${N}`, constraints in LLVM's form such as `=r,r,0,~{memory}`,
//! `volatile` as `sideeffect`).
//!
//! **Where structs are copied**: `function.rs`'s `copy_memory` copies an assignment or
//! initialisation from a place in `<A x i8>` chunks of the type's alignment, as nvcc does, and
//! struct values are loaded and stored element by element (`back::split`).

mod asm;
mod bit_fields;
mod builtins;
mod debug;
mod function;
mod globals;
mod intrinsics;
mod launch;
mod runtime_api;
mod types;
pub use launch::INLINE_LAUNCHES;

#[cfg(test)]
mod tests;

use crate::back::{
    configure_module, device_launch, internal, link_libdevice, opt_level, optimize_built, safely, split, target_machine_with_features, write_ptx, BackendError, BackendTimings, CodegenOptions,
    DebugLevel, Fmad, Generated, Outputs, R,
};
use crate::front::cdp::hir;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::{FlagBehavior, Linkage, Module};
use inkwell::targets::{TargetData, TargetMachine};
use inkwell::values::{FunctionValue, GlobalValue};
use std::collections::HashSet;

/// Generates code once and returns the texts `outputs` asks for; the IR is the optimised
/// module that PTX is emitted from.
///
/// Launches are written as the documented V1 sequence and left so: a caller that wants
/// another ABI lowers them in [`generate_lowered`]'s `lower` (the driver runs the launch
/// pipeline's schedule there). The module is optimised as the schedule optimises it
/// ([`crate::back::optimize_built`]).
pub fn generate(module: &hir::Module, options: &CodegenOptions, outputs: Outputs) -> Result<Generated, BackendError> {
    generate_lowered(module, options, outputs, |module, tm| optimize_built(module, tm, opt_level(options), options.math, options.fmad))
}

/// The module built from the HIR, then `lower` run on it with the target machine PTX is
/// emitted by, then the IR and PTX `outputs` asks for: `lower` is everything between the
/// module's building and its emission, the driver's launch pipeline's schedule on LLVM IR
/// (`pipeline::lower`, which code generation does not know: the launch passes, then LLVM's
/// optimisation), or [`generate`]'s optimisation alone.
pub fn generate_lowered<E: From<BackendError>>(
    module: &hir::Module,
    options: &CodegenOptions,
    outputs: Outputs,
    lower: impl FnOnce(&Module<'_>, &TargetMachine) -> Result<(), E>,
) -> Result<Generated, E> {
    let started = std::time::Instant::now();
    let context = Context::create();
    let tm = target_machine_with_features(&module.target, options.opt_level, ptx_features(module))?;
    let llvm = build_ir(&context, &tm, module, options)?;
    let built = std::time::Instant::now();
    lower(&llvm, &tm)?;
    let llvm_ir = outputs.llvm_ir.then(|| llvm.print_to_string().to_string());
    let mut ptx = if outputs.ptx { Some(write_ptx(&llvm, &tm)?) } else { None };
    if options.debug.as_ref().is_some_and(|d| d.level == DebugLevel::LineTables) {
        ptx = ptx.map(|ptx| crate::back::lineinfo_ptx(&ptx));
    }
    let timings = BackendTimings { llvm_ir: built - started, optimize_and_emit: built.elapsed() };
    Ok(Generated { llvm_ir, ptx, timings })
}

/// The textual LLVM IR of the module, after the same pipeline that [`emit_ptx`] runs.
pub fn emit_llvm_ir(module: &hir::Module, options: &CodegenOptions) -> Result<String, BackendError> {
    let generated = generate(module, options, Outputs { llvm_ir: true, ptx: false })?;
    Ok(generated.llvm_ir.expect("asked for the IR"))
}

/// PTX assembly for the module.
pub fn emit_ptx(module: &hir::Module, options: &CodegenOptions) -> Result<String, BackendError> {
    let generated = generate(module, options, Outputs { llvm_ir: false, ptx: true })?;
    Ok(generated.ptx.expect("asked for PTX"))
}

/// The PTX ISA features a module needs beyond LLVM's default for its architecture (7.8 for
/// sm_90): `cudaGetCurrentGraphExec` reads `%current_graph_exec`, new in PTX ISA 8.0, so a
/// module that calls it is emitted as PTX 8.0 (and only such a module, so every other PTX
/// stays as it was).
fn ptx_features(module: &hir::Module) -> &'static str {
    let mut uses = false;
    for f in &module.functions {
        if let Some(body) = &f.body {
            hir::visit::visit_exprs(body, &mut |e| {
                uses |= matches!(e.kind, hir::ExprKind::Builtin { builtin: hir::Builtin::Runtime(hir::RuntimeFn::GetCurrentGraphExec), .. });
            });
        }
    }
    if uses {
        "+ptx80"
    } else {
        ""
    }
}

/// Lowers the HIR, links libdevice if needed, verifies and optimises.
fn build_ir<'ctx>(context: &'ctx Context, tm: &TargetMachine, hir_module: &hir::Module, options: &CodegenOptions) -> R<Module<'ctx>> {
    let module = context.create_module("cdpc");
    configure_module(&module, tm);
    let td = tm.get_target_data();

    let mut cg = Codegen::new(context, module, hir_module, &td)?;
    cg.fmad = options.fmad;
    cg.dbg = options.debug.as_ref().map(|info| debug::Dbg::new(&cg.module, context, info, opt_level(options) > 0));
    cg.declare_globals()?;
    cg.declare_functions()?;
    cg.define_global_initializers()?;
    for index in 0..hir_module.functions.len() {
        cg.define_function(index)?;
    }
    if let Some(dbg) = &cg.dbg {
        dbg.finalize();
    }
    let uses_math = cg.uses_math;
    let ours: HashSet<String> = hir_module.functions.iter().map(|f| f.symbol(hir_module)).chain(hir_module.globals.iter().map(|g| g.symbol(hir_module))).collect();
    let module = cg.finish();

    module.verify().map_err(|e| BackendError::Verify(e.to_string()))?;

    if uses_math {
        link_libdevice(context, &module, options, &ours)?;
        // Only the libdevice functions the program calls, and theirs, stay: the optimisation
        // pipeline then works on those alone (on KLAP's MST, a quarter of LLVM's time went to
        // the hundreds of functions it drops anyway; default<O0> would keep them all).
        safely::run_passes(&module, "globaldce", tm)?;
    }
    // libdevice consults `__nvvm_reflect("__CUDA_FTZ")`; 0 keeps denormals, as nvcc does by
    // default, 1 flushes them (`-ftz=true`).
    module.add_basic_value_flag("nvvm-reflect-ftz", FlagBehavior::Override, context.i32_type().const_int(u64::from(options.math.ftz), false));
    Ok(module)
}

/// Per-function state of the lowering.
pub(crate) struct FnState<'ctx> {
    pub index: usize,
    pub llvm: FunctionValue<'ctx>,
    /// Generic pointer to each local's storage, by `LocalId`.
    pub locals: Vec<inkwell::values::PointerValue<'ctx>>,
    /// The entry block ends in a branch; new allocas go before it.
    pub entry: inkwell::basic_block::BasicBlock<'ctx>,
    /// (continue target, break target) of the enclosing loops and `switch`es (a `switch` has no
    /// continue target: `continue` goes to the nearest loop's).
    pub loops: Vec<(Option<inkwell::basic_block::BasicBlock<'ctx>>, inkwell::basic_block::BasicBlock<'ctx>)>,
    /// The block of each label (`case`, `default`, named), made on first mention.
    pub labels: std::collections::HashMap<crate::front::cdp::hir::LabelId, inkwell::basic_block::BasicBlock<'ctx>>,
    /// Launch sites lowered so far in this function (`launch.rs` outlines those past a bound).
    pub launches: usize,
}

/// The state of one module's lowering, shared by the files of this module.
pub(crate) struct Codegen<'ctx, 'h> {
    pub ctx: &'ctx Context,
    pub module: Module<'ctx>,
    pub builder: Builder<'ctx>,
    pub hir: &'h hir::Module,
    pub types: types::Types<'ctx>,
    pub functions: Vec<FunctionValue<'ctx>>,
    pub globals: Vec<GlobalValue<'ctx>>,
    pub uses_math: bool,
    pub fs: Option<FnState<'ctx>>,
    /// The shared launch helpers of `launch.rs`, by child kernel and operand types.
    pub launch_helpers: std::collections::HashMap<(usize, String), FunctionValue<'ctx>>,
    /// The DWARF builder, with `-lineinfo` or `-G`.
    pub(crate) dbg: Option<debug::Dbg<'ctx>>,
    /// Internal kernels and variables that host code finds by name: `@llvm.used` keeps them
    /// though no device code refers to them.
    pub used: Vec<inkwell::values::PointerValue<'ctx>>,
    /// [`CodegenOptions::fmad`].
    pub fmad: Fmad,
    /// The module's data layout, for the offsets of `split.rs`'s element-wise accesses.
    pub td: TargetData,
}

impl<'ctx, 'h> Codegen<'ctx, 'h> {
    fn new(ctx: &'ctx Context, module: Module<'ctx>, hir: &'h hir::Module, td: &TargetData) -> R<Self> {
        let types = types::Types::new(ctx, hir, td)?;
        let td = TargetData::create(&td.get_data_layout().as_str().to_string_lossy());
        Ok(Codegen {
            ctx,
            module,
            builder: ctx.create_builder(),
            hir,
            types,
            functions: Vec::new(),
            globals: Vec::new(),
            uses_math: false,
            fs: None,
            launch_helpers: Default::default(),
            dbg: None,
            used: Vec::new(),
            fmad: Fmad::default(),
            td,
        })
    }

    fn finish(self) -> Module<'ctx> {
        if !self.used.is_empty() {
            // `@llvm.used = appending global [N x ptr] [...], section "llvm.metadata"`, each
            // element cast to the generic address space as the verifier requires.
            let ptr = self.ctx.ptr_type(inkwell::AddressSpace::default());
            let elements: Vec<_> = self.used.iter().map(|p| p.const_address_space_cast(ptr)).collect();
            let used = self.module.add_global(ptr.array_type(elements.len() as u32), None, "llvm.used");
            used.set_linkage(Linkage::Appending);
            used.set_section(Some("llvm.metadata"));
            used.set_initializer(&ptr.const_array(&elements));
        }
        self.module
    }

    pub(crate) fn fs(&self) -> R<&FnState<'ctx>> {
        self.fs.as_ref().ok_or_else(|| BackendError::Internal("expression outside a function".into()))
    }

    pub(crate) fn fs_mut(&mut self) -> R<&mut FnState<'ctx>> {
        self.fs.as_mut().ok_or_else(|| BackendError::Internal("expression outside a function".into()))
    }
}
