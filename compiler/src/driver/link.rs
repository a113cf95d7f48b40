//! The link step of separate compilation: several sources, relocatable device objects (cdpc's
//! `-dc`, nvcc's `-dc`/`-rdc`), static archives of them and `-l` libraries become one cubin,
//! linked by nvlink with libcudadevrt (always, last).
//!
//! Each source is compiled on its own, as `-dc` would (declared but undefined device functions
//! and `extern` variables are left to the link); then [`super::symbols::check`] compares the
//! sources' symbols so that a duplicate or missing one is reported with both files' lines
//! (E0800, E0801) before nvlink runs. What only nvlink can see (symbols of objects and
//! archives) comes back from its messages as the same codes, naming the inputs. An archive of
//! bare device objects, which nvlink skips, is opened here ([`super::archive`]): all its
//! members are linked.

use super::archive;
use super::symbols::{self, Unit};
use super::{build_options, check_here, codegen_options, validate, CompileError, CompileOptions, Emit, Timings};
use crate::back;
use crate::diag::{Code, Diagnostic, SourceFile, Span};
use crate::toolchain::run::at_once;
use crate::toolchain::{OutputFile, OutputGuard, ToolError, ToolRun, Toolchain};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How an input file takes part in a build, by its extension, as nvcc decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A source to compile (`.cdp`, `.cu`, LLVM IR `.ll` and `.bc`, and anything not below).
    Source(PathBuf),
    /// A relocatable device object (`.o`, `.obj`, `.cubin`) or a static archive of them
    /// (`.a`, `.lib`), handed to nvlink as it is.
    Object(PathBuf),
}

impl Input {
    /// Classifies `path` by its extension (a shared library, versioned too, is an object:
    /// [`super::program::is_shared_library`]).
    pub fn classify(path: &Path) -> Input {
        let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
        if super::program::is_shared_library(path) {
            return Input::Object(path.to_path_buf());
        }
        match ext.as_deref() {
            Some("o" | "obj" | "a" | "lib" | "cubin") => Input::Object(path.to_path_buf()),
            _ => Input::Source(path.to_path_buf()),
        }
    }

    /// The path.
    pub fn path(&self) -> &Path {
        match self {
            Input::Source(p) | Input::Object(p) => p,
        }
    }
}

/// What a link takes besides its inputs: `-l NAME` and `-L DIR`, as nvcc and the C compilers
/// spell them. libcudadevrt is always linked, after everything else.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkOptions {
    /// `-l NAME`: `libNAME.a` from the first `-L` folder that has it.
    pub libraries: Vec<String>,
    /// `-L DIR`, searched in order.
    pub library_dirs: Vec<PathBuf>,
}

impl LinkOptions {
    /// The archive `-l name` means: `libname.a` in the first folder of [`LinkOptions::library_dirs`]
    /// that has it (then the current folder), or E0802.
    pub fn find_library(&self, name: &str) -> Result<PathBuf, Diagnostic> {
        let file = format!("lib{name}.a");
        let dirs: Vec<PathBuf> = self.library_dirs.iter().cloned().chain([PathBuf::from(".")]).collect();
        if let Some(found) = dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file()) {
            return Ok(found);
        }
        let searched: Vec<String> = dirs.iter().map(|d| format!("`{}`", d.display())).collect();
        let mut d = Diagnostic::new(Code::LibraryNotFound, Span::default(), format!("cannot find the device library `-l{name}`: no `{file}`"))
            .with_note(format!("searched {}", searched.join(", ")))
            .with_note("give its folder with `-L DIR`, or name the archive as an input");
        d.labels.clear();
        Err(d)
    }
}

/// Why a build of several files failed.
#[derive(Debug)]
pub enum BuildError {
    /// A source could not be compiled: its name and text (to render the diagnostics against)
    /// and the error.
    Source {
        /// The file as named on the command line.
        name: String,
        /// Its text (empty when it could not be read).
        text: String,
        /// What went wrong.
        error: CompileError,
    },
    /// The link found duplicate or missing symbols or a missing library (E0800-E0802); each
    /// label carries its file.
    Link(Vec<Diagnostic>),
    /// Anything else: a tool, the output file, the options.
    Other(CompileError),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Source { name, error, .. } => write!(f, "{name}: {error}"),
            BuildError::Link(d) => write!(f, "the link failed: {}", d.first().map_or("", |d| d.message.as_str())),
            BuildError::Other(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<CompileError> for BuildError {
    fn from(e: CompileError) -> BuildError {
        BuildError::Other(e)
    }
}

/// The warnings of one source of a link.
#[derive(Clone, Debug)]
pub struct SourceWarnings {
    /// The file as named on the command line.
    pub name: String,
    /// Its text, to render them against.
    pub text: String,
    /// Warnings after the policy (may be empty).
    pub warnings: Vec<Diagnostic>,
}

/// A finished link.
pub struct Linked {
    /// The cubin.
    pub cubin: Vec<u8>,
    /// Each source's warnings, in input order.
    pub warnings: Vec<SourceWarnings>,
    /// ptxas and nvlink runs, in order.
    pub tool_runs: Vec<ToolRun>,
    /// Phase times, summed over the sources.
    pub timings: Timings,
    /// The headers the sources read, as [`CompileOptions::list_headers`] asks, in input order,
    /// each once.
    pub headers: Vec<PathBuf>,
}

/// One source compiled to PTX for the link.
struct Compiled {
    unit: Unit,
    ptx: String,
    warnings: SourceWarnings,
    timings: Timings,
    headers: Vec<PathBuf>,
}

fn compile_source(path: &Path, tools: Option<&Toolchain>, options: &CompileOptions) -> Result<Compiled, BuildError> {
    let name = path.display().to_string();
    let mut options = options.clone();
    options.separate = true;
    options.preprocess.input = Some(path.to_path_buf());
    if super::Language::of(&options) == super::Language::Ir {
        let ir = super::read_ir(path).map_err(|error| BuildError::Source { name: name.clone(), text: String::new(), error })?;
        let text = crate::front::ir::shown_text(&ir);
        let generated = super::ir::generate(&ir, &options, tools, back::Outputs { llvm_ir: false, ptx: true }).map_err(|error| BuildError::Source { name: name.clone(), text: text.clone(), error })?;
        return Ok(from_ptx(name, text, generated));
    }
    let text = match super::read_source_as(path, super::Language::of(&options)) {
        Ok(text) => text,
        Err(CompileError::NotUtf8(e)) => return Err(BuildError::Source { name, text: e.shown.clone(), error: CompileError::NotUtf8(e) }),
        Err(error) => return Err(BuildError::Source { name, text: String::new(), error }),
    };
    let failed = |error: CompileError, text: &str| BuildError::Source { name: name.clone(), text: text.to_string(), error };
    if super::Language::of(&options) == super::Language::Cuda {
        let build = build_options(&options);
        let generated = super::cuda::generate(&text, &options, tools, &build, back::Outputs { llvm_ir: false, ptx: true }).map_err(|e| failed(e, &text))?;
        return Ok(from_ptx(name, text, generated));
    }
    let checked = check_here(&text, &options).map_err(|e| failed(e, &text))?;
    let (generated, warnings) = super::generate_cdp(&checked, &options, &codegen_options(&options, tools, &checked), back::Outputs { llvm_ir: false, ptx: true }).map_err(|e| failed(e, &text))?;
    let ptx = generated.ptx.expect("asked for PTX");
    let mut timings = checked.timings;
    timings.0.push((super::Phase::LlvmIr, generated.timings.llvm_ir));
    timings.0.push((super::Phase::LlvmOptPtx, generated.timings.optimize_and_emit));
    let file = Arc::new(SourceFile { name: name.clone(), text: text.clone() });
    let headers = super::listed_headers(options.list_headers, &checked.headers);
    Ok(Compiled { unit: Unit { file, symbols: symbols::ptx_symbols(&ptx), places: checked.places }, ptx, warnings: SourceWarnings { name, text, warnings }, timings, headers })
}

/// A source compiled to PTX through LLVM IR (CUDA C++, IR input): its symbols from the PTX,
/// placed at their first mention in its text, since no HIR describes them.
fn from_ptx(name: String, text: String, generated: super::cuda::Generated) -> Compiled {
    let ptx = generated.ptx.expect("asked for PTX");
    let file = Arc::new(SourceFile { name: name.clone(), text: text.clone() });
    let found = symbols::ptx_symbols(&ptx);
    let places = symbols::text_places(&found, &text);
    Compiled {
        unit: Unit { file, symbols: found, places },
        ptx,
        warnings: SourceWarnings { name, text, warnings: generated.warnings },
        timings: generated.timings,
        headers: super::tidy_headers(generated.headers),
    }
}

/// The front half of a link, which needs no NVIDIA tool: every source compiled to PTX, the
/// `-l` libraries found, and the sources' symbols checked against each other.
struct Prepared {
    compiled: Vec<Compiled>,
    libraries: Vec<PathBuf>,
}

fn prepare(inputs: &[Input], link: &LinkOptions, options: &CompileOptions, tools: Option<&Toolchain>) -> Result<Prepared, BuildError> {
    if options.emit != Emit::Cubin {
        return Err(CompileError::Usage(format!(
            "a link writes a cubin; for `--emit {}` of each source, compile them with `-dc`",
            match options.emit {
                Emit::Ptx => "ptx",
                Emit::LlvmIr => "llvm-ir",
                _ => "obj",
            }
        ))
        .into());
    }
    validate(options)?;
    if inputs.is_empty() {
        return Err(CompileError::Usage("nothing to link: give at least one source or object".into()).into());
    }
    let libraries = link.libraries.iter().map(|name| link.find_library(name)).collect::<Result<Vec<_>, _>>().map_err(|d| BuildError::Link(vec![d]))?;
    let mut compiled = Vec::new();
    for input in inputs {
        if let Input::Source(path) = input {
            compiled.push(compile_source(path, tools, options)?);
        }
    }
    let units: Vec<Unit> = compiled.iter().map(|c| c.unit.clone()).collect();
    let closed = libraries.is_empty() && inputs.iter().all(|i| matches!(i, Input::Source(_)));
    let problems = symbols::check(&units, closed);
    if !problems.is_empty() {
        return Err(BuildError::Link(problems));
    }
    Ok(Prepared { compiled, libraries })
}

/// Everything [`link`] checks before ptxas and nvlink run: each source compiles, the `-l`
/// libraries exist, and no symbol is defined twice or (when only sources take part) missing.
/// Needs no NVIDIA tool; returns each source's warnings.
pub fn check(inputs: &[Input], link: &LinkOptions, options: &CompileOptions) -> Result<Vec<SourceWarnings>, BuildError> {
    super::on_large_stack(|| {
        let tools = Toolchain::discover(&options.tools).ok();
        let prepared = prepare(inputs, link, options, tools.as_ref())?;
        Ok(prepared.compiled.into_iter().map(|c| c.warnings).collect())
    })
}

/// Compiles the sources among `inputs` separately and links them with the other inputs,
/// `link`'s libraries and libcudadevrt into one cubin. Prints nothing, like
/// [`super::compile`]; `options.emit` must be [`Emit::Cubin`].
pub fn link(inputs: &[Input], link: &LinkOptions, options: &CompileOptions) -> Result<Linked, BuildError> {
    super::on_large_stack(|| link_here(inputs, link, options))
}

fn link_here(inputs: &[Input], link: &LinkOptions, options: &CompileOptions) -> Result<Linked, BuildError> {
    let tools = Toolchain::discover(&options.tools).map_err(CompileError::from)?;
    let Prepared { compiled, libraries } = prepare(inputs, link, options, Some(&tools))?;
    let mut build = build_options(options);
    let mut in_memory: Vec<(String, Vec<u8>)> = Vec::new();
    // Each file's ptxas at the same time (the modules are independent); the first file's error
    // is the one reported, as when they ran one after another.
    let objects = at_once(&compiled, &build, compiled.len() >= 2, |c, build| tools.assemble(&c.ptx, build));
    for (c, object) in compiled.iter().zip(objects) {
        let object = object.map_err(|e| {
            // ptxas's errors in the source's inline assembly, placed at its `asm` statements.
            let path = PathBuf::from(&c.warnings.name);
            let shown = crate::pipeline::SourceText { path: Some(path.clone()), text: c.warnings.text.clone() };
            let error = super::ptxas_asm::placed(e.into(), options, &shown, |again| {
                compile_source(&path, Some(&tools), again).map(|c| c.ptx).map_err(|e| match e {
                    BuildError::Source { error, .. } | BuildError::Other(error) => error,
                    BuildError::Link(d) => CompileError::Diagnostics(d),
                })
            });
            BuildError::Source { name: c.warnings.name.clone(), text: c.warnings.text.clone(), error }
        })?;
        in_memory.push((c.unit.file.name.clone(), object));
    }
    // nvlink sees cdpc's objects and the members of archives of bare device objects as work
    // files `input0.o`, `input1.o`, ... and the other objects and archives where they are.
    let mut others: Vec<PathBuf> = inputs.iter().filter(|&i| matches!(i, Input::Object(_))).map(|i| i.path().to_path_buf()).chain(libraries).collect();
    // `-dlto`: the IR the objects carry, compiled together, in place of their cubins (`driver/lto.rs`).
    let mut said = Vec::new();
    if options.device_lto {
        match super::lto::compile(&others, options.target.sm, options, &tools, &build) {
            Ok(done) => {
                others.retain(|o| !done.replaced.contains(o));
                in_memory.push(("the objects' device IR, compiled together (-dlto)".into(), done.object));
                said.extend(done.remarks);
            }
            Err(Some(why)) => said.push(super::lto::unchanged_warning(&why)),
            Err(None) => {}
        }
    }
    for path in others {
        let bytes = std::fs::read(&path).map_err(|error| CompileError::Io { path: path.clone(), action: "cannot read", error })?;
        match archive::device_members(&bytes) {
            Some(members) => in_memory.extend(members.into_iter().map(|m| (format!("{}({})", path.display(), m.name), m.bytes))),
            None => build.link_libraries.push(path),
        }
    }
    // The device allocation pool where every input frees through it (`driver/pool.rs`).
    let inputs = in_memory.iter().map(|(name, bytes)| (name.clone(), super::pool::Input::Bytes(bytes)));
    let files = build.link_libraries.iter().map(|path| (path.display().to_string(), super::pool::Input::File(path)));
    let (pool, remark) = super::program::pool_decision_of(inputs.chain(files), options);
    if pool {
        in_memory.push(("cdpc's device allocation pool".into(), super::pool::object(&tools, &options.target, options.target.sm, &build)?));
    }
    let names: Vec<(String, String)> = in_memory.iter().enumerate().map(|(index, (name, _))| (format!("input{index}.o"), name.clone())).collect();
    let objects: Vec<&[u8]> = in_memory.iter().map(|(_, bytes)| bytes.as_slice()).collect();
    let cubin = match tools.link_objects(&objects, &build) {
        Ok(cubin) => cubin,
        Err(ToolError::Failed { ref tool, ref stderr, .. }) if tool == "nvlink" && !symbols::from_nvlink(stderr, &names).is_empty() => {
            // A runtime function libcudadevrt lacks: at its calls in the sources (W0316's places).
            let sources: Vec<(Option<Arc<SourceFile>>, &[Diagnostic])> = compiled.iter().map(|c| (Some(c.unit.file.clone()), c.warnings.warnings.as_slice())).collect();
            let (mut found, covered) = symbols::runtime_missing(stderr, &sources, &names);
            found.extend(symbols::from_nvlink(stderr, &names).into_iter().filter(|d| !covered.iter().any(|s| d.message.contains(&format!("`{s}`")))));
            return Err(BuildError::Link(found));
        }
        Err(e) => return Err(CompileError::from(e).into()),
    };
    let mut timings = Timings::default();
    let mut warnings = Vec::new();
    let mut headers: Vec<PathBuf> = Vec::new();
    warnings.extend(super::program::link_remark(remark));
    warnings.extend(super::program::link_said(options.warnings.apply(said)));
    for c in compiled {
        timings.0.extend(c.timings.0);
        warnings.push(c.warnings);
        for header in c.headers {
            if !headers.contains(&header) {
                headers.push(header);
            }
        }
    }
    let tool_runs = build.log.take();
    timings.add_tool_runs(&tool_runs);
    Ok(Linked { cubin, warnings, tool_runs, timings, headers })
}

/// [`link`], writing the cubin to `output`: it appears only when the link succeeded, and never
/// replaces an input (E0700) or, unless `options.overwrite` allows it, a file that is no
/// compiler output (E0701).
pub fn link_files(inputs: &[Input], link_options: &LinkOptions, output: &Path, options: &CompileOptions) -> Result<Linked, BuildError> {
    let guard = OutputGuard { inputs: inputs.iter().map(|i| i.path().to_path_buf()).collect(), overwrite: options.overwrite };
    let file = OutputFile::prepare_guarded(output, guard).map_err(CompileError::from)?;
    let linked = link(inputs, link_options, options)?;
    file.commit(&linked.cubin).map_err(CompileError::from)?;
    Ok(linked)
}
