//! CUDA C++ sources (`.cu`): Clang's device compilation to LLVM bitcode ([`crate::clang`]),
//! the launch pipeline on the IR ([`crate::pipeline`]), then PTX, as for `.cdp` sources.

use super::{CompileError, CompileOptions, Phase, Timings};
use crate::back::{self, BackendError, DebugLevel};
use crate::clang::{self, ClangEnv, ClangInvocation};
use crate::diag::Diagnostic;
use crate::pipeline::{self, PipelineOptions, SourceText};
use crate::preprocess::MacroOption;
use crate::toolchain::{run_front_end, BuildOptions, ToolError, Toolchain};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::values::BasicValue;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the Clang path produced, before the NVIDIA tools.
pub(crate) struct Generated {
    pub llvm_ir: Option<String>,
    pub ptx: Option<String>,
    pub warnings: Vec<Diagnostic>,
    pub timings: Timings,
}

/// The file Clang should read: the input itself when `source` is its text (so that its
/// `#include "..."` and `__FILE__` are the user's), else `None` (written to the work folder).
fn input_on_disk(source: &str, options: &CompileOptions) -> Option<PathBuf> {
    let input = options.preprocess.input.as_ref()?;
    let on_disk = std::fs::read(input).ok()?;
    (on_disk == source.as_bytes()).then(|| input.clone())
}

/// `-D`/`-U` as Clang spells them, in order.
fn macro_args(options: &CompileOptions) -> Vec<String> {
    options
        .preprocess
        .macros
        .iter()
        .map(|m| match m {
            MacroOption::Define(d) => format!("-D{d}"),
            MacroOption::Undefine(u) => format!("-U{u}"),
        })
        .collect()
}

/// Functions and variables of the source that the module uses but no file defines: in a
/// whole-program compilation (one source, no `-dc`) that is `E0104`, as for `.cdp` sources.
/// The device runtime's entry points and the C library nvcc provides on the device
/// (`printf`'s `vprintf`, `malloc`, `free`, `__assertfail`) are the runtime's to define; a
/// symbol whose source name the file never mentions is a header's, left to nvlink.
fn undefined_user_symbols(module: &Module<'_>, source: &str) -> Vec<Diagnostic> {
    const PROVIDED: &[&str] = &["vprintf", "malloc", "free", "__assertfail", "memcpy", "memset"];
    let mut symbols = super::symbols::PtxSymbols::default();
    for f in module.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        // A kernel of another file that this one launches is the link's to find (nvcc's
        // `-rdc` compiles such a file on its own too); a device function it calls is not.
        let kernel = f.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV;
        if f.count_basic_blocks() == 0 && !kernel && f.as_global_value().as_pointer_value().get_first_use().is_some() && !name.starts_with("llvm.") && !name.starts_with("__nv") && !name.starts_with("__cuda") && !name.starts_with("cuda") && !PROVIDED.contains(&name.as_str()) {
            symbols.undefined.push(name);
        }
    }
    for g in module.get_globals() {
        let name = g.get_name().to_string_lossy().into_owned();
        // `extern __shared__` arrays are dynamic shared memory, sized at the launch.
        let shared = g.as_pointer_value().get_type().get_address_space() == inkwell::AddressSpace::from(3u16);
        if g.get_initializer().is_none() && !shared && !name.starts_with("llvm.") && !name.starts_with("__") && g.as_pointer_value().get_first_use().is_some() {
            symbols.undefined.push(name);
        }
    }
    let places = super::symbols::text_places(&symbols, source);
    symbols
        .undefined
        .iter()
        .filter_map(|symbol| {
            let label = places.get(symbol)?;
            let what = if module.get_function(symbol).is_some() { "is called but never defined" } else { "is declared `extern` but never defined" };
            Some(
                Diagnostic::new(crate::diag::Code::MissingDefinition, label.span, format!("`{}` {what}", label.message))
                    .with_note("this compilation links one file; define it in it, or compile each file with `-dc` and link them together"),
            )
        })
        .collect()
}

/// The precompiled header of Clang's CUDA wrapper for `template`'s options at `path`, made
/// there first if it is missing (written whole, then renamed into place, so that a
/// concurrent compilation never reads half of one). `None` when it cannot be made: the
/// compilation then parses the wrapper itself, as without a cache.
fn ensure_pch(clang: &Path, template: &ClangInvocation<'_>, path: &Path, build: &BuildOptions) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    // The header records its source, which must stay where it was: an empty file beside it.
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let empty = path.with_extension("cu");
    if !empty.is_file() {
        std::fs::write(&empty, "").ok()?;
    }
    let made = run_front_end(
        "clang",
        clang,
        |work| {
            let output = work.join("cuda-wrapper.pch");
            Ok((template.pch_args(&empty, &output), output))
        },
        build,
    )
    .ok()?;
    let mut file = tempfile::NamedTempFile::new_in(dir).ok()?;
    std::io::Write::write_all(&mut file, &made.output).ok()?;
    file.persist(path).ok()?;
    Some(path.to_path_buf())
}

/// Compiles CUDA C++ `source` to LLVM IR and/or PTX, as `outputs` asks.
pub(crate) fn generate(source: &str, options: &CompileOptions, tools: Option<&Toolchain>, build: &BuildOptions, outputs: back::Outputs) -> Result<Generated, CompileError> {
    let started = Instant::now();
    let mut timings = Timings::default();
    let tools = match tools {
        Some(t) => t.clone(),
        None => Toolchain::discover(&options.tools)?,
    };
    let clang = clang::find_clang(&options.clang, &ClangEnv::from_process()).map_err(|d| CompileError::Diagnostics(vec![d]))?;
    let root = tools.root();
    let system_includes = clang::cuda_include_dirs(&root).map_err(|d| CompileError::Diagnostics(vec![d]))?;
    let on_disk = input_on_disk(source, options);
    let macros = macro_args(options);
    // Headers beside the input are found as if Clang read it where it lies.
    let mut includes: Vec<PathBuf> = Vec::new();
    if on_disk.is_none() {
        if let Some(dir) = options.preprocess.input.as_deref().and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
            includes.push(dir.to_path_buf());
        }
    }
    includes.extend(options.preprocess.include_dirs.iter().cloned());
    let debug = options.debug;
    // The options of this compilation; the input and output are set per run below.
    let template = ClangInvocation {
        source: Path::new(""),
        output: Path::new(""),
        target: options.target,
        opt_level: super::opt_level(options),
        cuda_root: &root,
        system_includes: &system_includes,
        includes: &includes,
        macros: &macros,
        full_debug: debug == Some(DebugLevel::Full),
        fmad: options.fmad == back::Fmad::Contract,
        cuid: None,
        pch: None,
    };
    let pch = clang::pch_path(&clang, &template).and_then(|path| ensure_pch(&clang, &template, &path, build));
    let compiled_path = std::cell::RefCell::new(PathBuf::new());
    let run = |pch: Option<&Path>| {
        run_front_end(
            "clang",
            &clang,
            |work| {
                let file = match &on_disk {
                    Some(path) => path.clone(),
                    None => {
                        let name = options.preprocess.input.as_deref().and_then(Path::file_name).map_or_else(|| "input.cu".into(), |n| n.to_os_string());
                        let path = work.join(name);
                        std::fs::write(&path, source).map_err(|e| ToolError::io("writing the source for Clang", &path, e))?;
                        path
                    }
                };
                let output = work.join("device.bc");
                let args = ClangInvocation { source: &file, output: &output, pch, ..template.clone() }.args();
                *compiled_path.borrow_mut() = file;
                Ok((args, output))
            },
            build,
        )
    };
    let mut run_result = run(pch.as_deref());
    if let (Some(path), Err(ToolError::Failed { stderr, .. })) = (&pch, &run_result) {
        if stderr.contains("precompiled") {
            // A header that does not fit after all (Clang says so): without it, and not again.
            let _ = std::fs::remove_file(path);
            run_result = run(None);
        }
    }
    let run = run_result;
    let compiled_path = compiled_path.into_inner();
    let (bitcode, clang_warnings) = match run {
        Ok(run) => (run.output, clang::diagnostics::parse(&run.stderr, &compiled_path, source)),
        Err(ToolError::Failed { tool, command, status, stderr, stdout }) => {
            let found = clang::diagnostics::parse(&stderr, &compiled_path, source);
            if found.iter().any(Diagnostic::is_error) {
                return Err(CompileError::Diagnostics(options.warnings.apply(found)));
            }
            // No message Clang could give: a crash, which the error reports with its command.
            return Err(ToolError::Failed { tool, command, status, stderr, stdout }.into());
        }
        Err(e) => return Err(e.into()),
    };
    let front = timings.record(Phase::Parse, started);

    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(&bitcode, "clang");
    let module = Module::parse_bitcode_from_buffer(&buffer, &context).map_err(|e| BackendError::Internal(format!("reading Clang's bitcode: {e}")))?;
    let shown = SourceText { path: Some(compiled_path.clone()), text: source.to_string() };
    let pipeline_options = PipelineOptions { target: options.target, nv_module_id: options.nv_module_id.clone(), launch_threshold: options.launch_threshold, aggregate: options.aggregate, pass_remarks: options.pass_remarks };
    let mut warnings = clang_warnings;
    match pipeline::run(&module, &pipeline_options, &shown) {
        Ok(more) => warnings.extend(more),
        Err(errors) => {
            warnings.extend(errors);
            return Err(CompileError::Diagnostics(options.warnings.apply(warnings)));
        }
    }
    let warnings = options.warnings.apply(warnings);
    if warnings.iter().any(Diagnostic::is_error) {
        return Err(CompileError::Diagnostics(warnings));
    }
    // Clang gives each function the PTX version it needs (`+ptx87`); NVPTX writes the
    // `.version` of the target machine's features, so it gets the module's.
    let features = module
        .get_functions()
        .find_map(|f| f.get_string_attribute(inkwell::attributes::AttributeLoc::Function, "target-features"))
        .map(|a| a.get_string_value().to_string_lossy().into_owned())
        .unwrap_or_default();
    let tm = back::target_machine_with_features(&options.target, super::opt_level(options), &features)?;
    pipeline::cleanup(&module, &tm).map_err(BackendError::Target)?;
    if options.fmad == back::Fmad::Contract {
        // Clang marks every float operation `contract` (-ffp-contract=fast, its CUDA
        // default); nvcc's rule decides which pairs become `fma` (back/contract.rs), and no
        // flag is left for NVPTX to fuse more.
        back::contract_as_nvcc(&module)?;
    }
    if !options.separate {
        let missing = undefined_user_symbols(&module, source);
        if !missing.is_empty() {
            let mut all = warnings;
            all.extend(missing);
            return Err(CompileError::Diagnostics(all));
        }
    }
    match debug {
        None => {
            module.strip_debug_info();
        }
        Some(DebugLevel::LineTables) => pipeline::collapse_wrapper_lines(&module),
        Some(DebugLevel::Full) => {}
    }
    module.verify().map_err(|e| BackendError::Verify(e.to_string()))?;
    let lowered = timings.record(Phase::LlvmIr, front);
    let llvm_ir = outputs.llvm_ir.then(|| module.print_to_string().to_string());
    let mut ptx = if outputs.ptx { Some(back::write_ptx(&module, &tm)?) } else { None };
    if debug == Some(DebugLevel::LineTables) {
        ptx = ptx.map(|p| back::lineinfo_ptx(&p));
    }
    timings.record(Phase::LlvmOptPtx, lowered);
    Ok(Generated { llvm_ir, ptx, warnings, timings })
}
