//! LLVM IR and bitcode as input (`.ll`, `.bc`, `-x ir`): the module read and checked against
//! docs/IR-INPUT.md's contract by its front end ([`crate::front::ir`]), then compiled as Clang's
//! IR is: `cuda::lower` runs the pipeline's schedule for another front end's IR
//! (`pipeline::Origin::Ir`: the PTX version raised, libdevice linked ([`link_libdevice`]),
//! `-ftz`, the launch passes, LLVM's `-O` pipeline), then NVPTX, ptxas and nvlink with
//! libcudadevrt. The entry point is `driver::compile_ir`.

use super::cuda::{self, Front, Generated};
use super::{CompileError, CompileOptions, Phase, Timings};
use crate::back;
use crate::diag::Diagnostic;
use crate::front::ir::{check, is_bitcode, name_of, read, shown_text, Unread};
use crate::pipeline::SourceText;
use crate::toolchain::Toolchain;
use inkwell::context::Context;
use inkwell::module::{FlagBehavior, Module};
use inkwell::targets::TargetMachine;
use inkwell::values::BasicValue;
use std::collections::HashSet;
use std::time::Instant;

/// Reads, checks and compiles `ir` to LLVM IR and/or PTX, as `outputs` asks; `tools` give
/// libdevice.
pub(crate) fn generate(ir: &[u8], options: &CompileOptions, tools: Option<&Toolchain>, outputs: back::Outputs) -> Result<Generated, CompileError> {
    let started = Instant::now();
    let shown = SourceText { path: options.preprocess.input.clone(), text: shown_text(ir) };
    let input = options.preprocess.input.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "input.ll".into());
    let reproducer = if is_bitcode(ir) { super::crash::Reproducer::Bitcode(ir.to_vec()) } else { super::crash::Reproducer::Text { text: shown.text.clone(), extension: "ll" } };
    super::crash::note(&input, reproducer);
    let context = Context::create();
    let compiled = match read(&context, ir, &shown.text) {
        Ok(module) => Ok(compile(&context, module, options, tools, outputs, &shown, started)),
        Err(unread) => Err(unread),
    };
    match compiled {
        Ok(result) => result,
        Err(Unread { diagnostic, crashed }) => {
            if crashed {
                // LLVM's reader crashed inside its recovery context: the context may be
                // half-written, and disposing of it could crash in turn. It is leaked.
                std::mem::forget(context);
            }
            Err(CompileError::Diagnostics(vec![diagnostic]))
        }
    }
}

/// Checks and compiles the module read from the input (`generate`).
fn compile<'ctx>(
    context: &'ctx Context,
    module: Module<'ctx>,
    options: &CompileOptions,
    tools: Option<&Toolchain>,
    outputs: back::Outputs,
    shown: &SourceText,
    started: Instant,
) -> Result<Generated, CompileError> {
    let mut timings = Timings::default();
    let tm = back::target_machine(&options.target, super::opt_level(options))?;
    let warnings = options.warnings.apply(check(&module, &options.target, !options.separate, &tm, shown));
    if warnings.iter().any(Diagnostic::is_error) {
        return Err(CompileError::Diagnostics(warnings));
    }
    let since = timings.record(Phase::Parse, started);
    let link = |module: &_| link_libdevice(context, module, options, tools, &tm);
    let front = Front { warnings, timings, since, origin: crate::pipeline::Origin::Ir };
    // No kernel qualifier is refused in IR: only Clang's annotations are read.
    cuda::lower(&module, options, shown, front, outputs, link, |_| Vec::new())
}

/// Whether the module calls a libdevice function (`__nv_*` declared and used).
fn calls_libdevice(module: &Module<'_>) -> bool {
    module.get_functions().any(|f| f.count_basic_blocks() == 0 && name_of(f).starts_with("__nv_") && f.as_global_value().as_pointer_value().get_first_use().is_some())
}

/// libdevice linked into `module` when it calls libdevice's functions ([`back::link_libdevice`]:
/// every function and global of libdevice internal, the module's own kept as they are), the
/// functions nobody calls dropped, and `__nvvm_reflect("__CUDA_FTZ")` answered 0 (denormals
/// kept, nvcc's default; 1 with `-ftz=true`) unless the module says otherwise.
pub(crate) fn link_libdevice<'ctx>(context: &'ctx Context, module: &Module<'ctx>, options: &CompileOptions, tools: Option<&Toolchain>, tm: &TargetMachine) -> Result<(), CompileError> {
    if !calls_libdevice(module) {
        return Ok(());
    }
    let ours: HashSet<String> = module.get_functions().filter(|f| f.count_basic_blocks() > 0).map(name_of).chain(module.get_globals().map(|g| g.get_name().to_string_lossy().into_owned())).collect();
    let codegen = back::CodegenOptions { opt_level: super::opt_level(options), libdevice: tools.and_then(|t| t.libdevice.clone()), debug: None, fmad: options.fmad, math: options.float_math };
    back::link_libdevice(context, module, &codegen, &ours)?;
    back::safely::run_passes(module, "globaldce", tm)?;
    if module.get_flag("nvvm-reflect-ftz").is_none() {
        module.add_basic_value_flag("nvvm-reflect-ftz", FlagBehavior::Override, context.i32_type().const_int(u64::from(options.float_math.ftz), false));
    }
    Ok(())
}
