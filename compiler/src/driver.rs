//! Runs the phases in order for one source file: the entry point of the `cdpc` binary and of
//! programs that embed the compiler.

use crate::back::{self, BackendError, CodegenOptions};
use crate::diag::{Code, Diagnostic, Severity};
use crate::hir;
use crate::sema::{self, SemaOptions};
use crate::target::{AddressSize, Target};
use crate::toolchain::{BuildOptions, ToolError, ToolLog, ToolSearch, Toolchain};
use std::fmt;
use std::path::{Path, PathBuf};

/// What the compiler writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    LlvmIr,
    Ptx,
    /// A relocatable device object (`ptxas -c`), for linking with other device code.
    Object,
    /// A cubin linked with libcudadevrt, ready for `cuModuleLoad`.
    Cubin,
}

impl Emit {
    pub fn extension(self) -> &'static str {
        match self {
            Emit::LlvmIr => "ll",
            Emit::Ptx => "ptx",
            Emit::Object => "o",
            Emit::Cubin => "cubin",
        }
    }

    fn needs_nvidia_tools(self) -> bool {
        matches!(self, Emit::Object | Emit::Cubin)
    }
}

/// How warnings are treated: `-Werror`, `--deny CODE`, `--allow CODE`.
#[derive(Clone, Debug, Default)]
pub struct WarningPolicy {
    /// Every warning becomes an error.
    pub deny_all: bool,
    /// These warnings become errors.
    pub deny: Vec<Code>,
    /// These warnings are not reported.
    pub allow: Vec<Code>,
}

impl WarningPolicy {
    /// Applies the policy: silenced warnings disappear, denied ones become errors.
    pub fn apply(&self, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Error || !self.allow.contains(&d.code))
            .map(|mut d| {
                if d.severity == Severity::Warning && (self.deny_all || self.deny.contains(&d.code)) {
                    d.severity = Severity::Error;
                }
                d
            })
            .collect()
    }
}

#[derive(Clone, Debug)]
pub struct CompileOptions {
    pub target: Target,
    /// 0 to 3, for LLVM and ptxas alike.
    pub opt_level: u8,
    pub emit: Emit,
    /// Extra arguments for ptxas (`-Xptxas`) and nvlink (`-Xnvlink`).
    pub ptxas_args: Vec<String>,
    pub nvlink_args: Vec<String>,
    /// Whether the caller shows each tool's command line (`-v`). The library never prints:
    /// the command lines are in [`Compiled::tool_log`] either way.
    pub verbose: bool,
    pub warnings: WarningPolicy,
    /// Where to look for ptxas, nvlink and libcudadevrt.
    pub tools: ToolSearch,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            target: Target::default(),
            opt_level: 3,
            emit: Emit::Cubin,
            ptxas_args: Vec::new(),
            nvlink_args: Vec::new(),
            verbose: false,
            warnings: WarningPolicy::default(),
            tools: ToolSearch::default(),
        }
    }
}

/// Why a compilation produced no output.
#[derive(Debug)]
pub enum CompileError {
    /// The source has errors; the list holds every diagnostic, warnings included.
    Diagnostics(Vec<Diagnostic>),
    /// The options ask for something impossible (a cubin at 32 bits, say).
    Usage(String),
    /// LLVM failed on valid input: a bug in cdpc.
    Backend(BackendError),
    /// ptxas or nvlink is missing or failed.
    Tool(ToolError),
    /// Reading the source or writing the output failed.
    Io { path: PathBuf, action: &'static str, error: std::io::Error },
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Diagnostics(d) => {
                let errors = d.iter().filter(|d| d.is_error()).count();
                write!(f, "could not compile: {errors} error{}", if errors == 1 { "" } else { "s" })
            }
            CompileError::Usage(message) => f.write_str(message),
            CompileError::Backend(e) => write!(f, "internal compiler error in code generation: {e}"),
            CompileError::Tool(e) => write!(f, "{e}"),
            CompileError::Io { path, action, error } => write!(f, "{action} `{}`: {error}", path.display()),
        }
    }
}

impl std::error::Error for CompileError {}

impl From<ToolError> for CompileError {
    fn from(e: ToolError) -> CompileError {
        CompileError::Tool(e)
    }
}

impl From<BackendError> for CompileError {
    fn from(e: BackendError) -> CompileError {
        CompileError::Backend(e)
    }
}

/// A checked program, ready for code generation, with the warnings found on the way.
pub struct Checked {
    pub module: hir::Module,
    pub warnings: Vec<Diagnostic>,
}

/// The stack the phases run on. Sema and code generation recurse over the tree, which the front
/// end lets grow [`crate::front::MAX_TREE_DEPTH`] deep; an unoptimised build needs about 10 KiB
/// a level, more than the 2 MiB a test thread (or any spawned thread) has by default.
pub const STACK_BYTES: usize = 64 << 20;

/// Runs `f` on a thread with a [`STACK_BYTES`] stack and returns its result; a panic in `f`
/// is resumed on the caller's thread. Runs `f` in place if no thread can be started.
pub fn on_large_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let f = std::sync::Mutex::new(Some(f));
    let run = || f.lock().unwrap_or_else(|e| e.into_inner()).take().map(|f| f());
    std::thread::scope(|scope| {
        match std::thread::Builder::new().name("cdpc".into()).stack_size(STACK_BYTES).spawn_scoped(scope, run) {
            Ok(handle) => match handle.join() {
                Ok(result) => result.expect("the compilation closure runs once"),
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => run().expect("the compilation closure runs once"),
        }
    })
}

/// Parses and checks `source`. The front half of the compiler: no LLVM, no processes.
pub fn check(source: &str, options: &CompileOptions) -> Result<Checked, CompileError> {
    on_large_stack(|| check_here(source, options))
}

fn check_here(source: &str, options: &CompileOptions) -> Result<Checked, CompileError> {
    let (unit, mut diagnostics) = crate::front::parse(source);
    let mut module = None;
    if let Some(unit) = unit {
        let (checked, more) = sema::analyze(&unit, &SemaOptions { target: options.target });
        diagnostics.extend(more);
        module = checked;
    }
    let diagnostics = options.warnings.apply(diagnostics);
    match module {
        Some(module) if !diagnostics.iter().any(Diagnostic::is_error) => Ok(Checked { module, warnings: diagnostics }),
        _ => Err(CompileError::Diagnostics(diagnostics)),
    }
}

/// The bytes of a compilation's output and the warnings it produced.
pub struct Compiled {
    pub warnings: Vec<Diagnostic>,
    /// The ptxas and nvlink command lines run and what they printed (empty for text output).
    pub tool_log: ToolLog,
}

fn validate(options: &CompileOptions) -> Result<(), CompileError> {
    if options.emit.needs_nvidia_tools() && options.target.address_size == AddressSize::Bits32 {
        return Err(CompileError::Usage(
            "32-bit output is PTX only: ptxas 13 refuses the 32-bit ABI; use `--emit ptx` or `--emit llvm-ir` with `--address-size 32`".into(),
        ));
    }
    if options.opt_level > 3 {
        return Err(CompileError::Usage(format!("optimisation level {} does not exist; use -O0 to -O3", options.opt_level)));
    }
    Ok(())
}

/// Compiles `source` to LLVM IR or PTX text.
pub fn compile_to_text(source: &str, options: &CompileOptions) -> Result<(String, Vec<Diagnostic>), CompileError> {
    on_large_stack(|| compile_to_text_here(source, options))
}

fn compile_to_text_here(source: &str, options: &CompileOptions) -> Result<(String, Vec<Diagnostic>), CompileError> {
    validate(options)?;
    let checked = check_here(source, options)?;
    let tools = Toolchain::discover(&options.tools).ok();
    let codegen = CodegenOptions { opt_level: options.opt_level, libdevice: tools.and_then(|t| t.libdevice) };
    let text = match options.emit {
        Emit::LlvmIr => back::emit_llvm_ir(&checked.module, &codegen)?,
        _ => back::emit_ptx(&checked.module, &codegen)?,
    };
    Ok((text, checked.warnings))
}

/// Compiles the file at `input` and writes the result to `output`. The output file appears
/// only when everything succeeded; work files never outlive the call.
pub fn compile_file(input: &Path, output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    let source = read_source(input)?;
    compile_source(&source, output, options)
}

/// Like [`compile_file`] for source text already in memory.
pub fn compile_source(source: &str, output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    on_large_stack(|| compile_source_here(source, output, options))
}

fn compile_source_here(source: &str, output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    validate(options)?;
    let checked = check_here(source, options)?;
    let codegen_text_only = !options.emit.needs_nvidia_tools();
    let tools = if codegen_text_only { Toolchain::discover(&options.tools).ok() } else { Some(Toolchain::discover(&options.tools)?) };
    let codegen = CodegenOptions { opt_level: options.opt_level, libdevice: tools.as_ref().and_then(|t| t.libdevice.clone()) };
    let mut tool_log = ToolLog::default();
    match options.emit {
        Emit::LlvmIr => write_output(output, back::emit_llvm_ir(&checked.module, &codegen)?.as_bytes())?,
        Emit::Ptx => write_output(output, back::emit_ptx(&checked.module, &codegen)?.as_bytes())?,
        Emit::Object | Emit::Cubin => {
            let ptx = back::emit_ptx(&checked.module, &codegen)?;
            let tools = tools.expect("discovered above for object output");
            let mut build = BuildOptions::new(options.target.sm);
            build.opt_level = Some(options.opt_level);
            build.ptxas_args = options.ptxas_args.iter().map(Into::into).collect();
            build.nvlink_args = options.nvlink_args.iter().map(Into::into).collect();
            tool_log = if options.emit == Emit::Object {
                tools.build_object(&ptx, &build, output)?
            } else {
                tools.build_cubin(&ptx, &build, output)?
            };
        }
    }
    Ok(Compiled { warnings: checked.warnings, tool_log })
}

/// Reads a source file; invalid UTF-8 is reported with the offset of the first bad byte.
pub fn read_source(path: &Path) -> Result<String, CompileError> {
    let bytes = std::fs::read(path).map_err(|error| CompileError::Io { path: path.to_path_buf(), action: "cannot read", error })?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        CompileError::Io {
            path: path.to_path_buf(),
            action: "cannot read",
            error: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("the file is not valid UTF-8 (first bad byte at offset {offset})")),
        }
    })
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so that a reader
/// never sees a partial file and a failure leaves no file behind.
fn write_output(path: &Path, bytes: &[u8]) -> Result<(), CompileError> {
    crate::toolchain::OutputFile::prepare(path)?.commit(bytes)?;
    Ok(())
}
