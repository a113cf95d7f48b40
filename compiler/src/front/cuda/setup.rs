//! One compilation's Clang set-up ([`ClangSetup`]): which Clang, CUDA's and the user's
//! include folders, the `-D`/`-U` options as Clang is given them, cdpc's additions header and
//! the files that hide the command line's macros from headers nvcc does not read, the libdevice
//! copy `-prec-sqrt=false` and fast math make, and the cache. [`ClangSetup::run`] runs Clang over
//! a source with all of them: reading the source's preamble or the wrapper's precompiled header
//! where the cache has one (made on a miss, or left to a filler), running again without them
//! where Clang refuses one or a cached file was damaged meanwhile, and once more with the
//! declarations nvcc accepts and Clang refuses rewritten ([`super::mend`]); its output is the
//! bitcode, the warnings and the headers read. [`ClangSetup::preprocess`] is `-E` of one side.
//!
//! The set-up reads a compilation's options as [`Request`] gives them, the driver's options seen
//! from this front end, and reports through [`CompileError`], the one error of every phase.

use super::cache::{self, Cache, CacheEnv, FileIdentity};
use super::run::{ensure_preamble, run_clang, with_replay, wrapper_header, Failure, Said};
use super::{in_process, ClangEngine, ClangEnv, ClangInvocation, ClangSearch, CudaCxxOptions};
use crate::back::{self, BackendError, DebugLevel};
use crate::diag::{Code, Diagnostic, Span, WarningPolicy};
use crate::error::CompileError;
use crate::front::cuda;
use crate::target::Target;
use crate::toolchain::{BuildOptions, HeaderList, ToolError, Toolchain, WorkDir};
use inkwell::module::Module;
use inkwell::values::BasicValue;
use std::path::{Path, PathBuf};

/// What one compilation asks of Clang: the driver's options as this front end reads them.
#[derive(Clone)]
pub(crate) struct Request<'a> {
    /// The architecture (the device side's `--cuda-gpu-arch`), address size and launch ABI.
    pub target: Target,
    /// The optimisation level Clang runs at.
    pub opt_level: u8,
    /// `-lineinfo` or `-G`.
    pub debug: Option<DebugLevel>,
    /// nvcc's `-fmad`.
    pub fmad: back::Fmad,
    /// nvcc's `-ftz`, `-prec-div`, `-prec-sqrt`, `--use_fast_math` (libdevice's copy).
    pub float_math: back::FloatMath,
    /// `-std` and the host compiler's options.
    pub cxx: &'a CudaCxxOptions,
    /// Where to look for Clang.
    pub clang: &'a ClangSearch,
    /// The input's path, where it has one: Clang reads the file itself when the source is its
    /// text, and its folder is searched for `#include "..."` otherwise.
    pub input: Option<&'a Path>,
    /// `-I`, in order.
    pub include_dirs: &'a [PathBuf],
    /// `-isystem`, in order, before CUDA's own.
    pub system_include_dirs: &'a [PathBuf],
    /// `-D`/`-U` as Clang is given them, in order ([`cuda::macro_for_clang`]).
    pub macros: Vec<String>,
    /// Which headers to collect (`-MD`, `-MMD`).
    pub list_headers: HeaderList,
    /// Which warnings are errors or silenced.
    pub warnings: &'a WarningPolicy,
}

/// The file Clang should read: the input itself when `source` is its text (so that its
/// `#include "..."` and `__FILE__` are the user's), else `None` (written to the work folder).
/// A file that is not UTF-8 is read by Clang as it is when `source` is its shown text
/// (`driver::read_source_as`); the flag says so (its bytes are not `source`'s).
fn input_on_disk(source: &str, input: Option<&Path>) -> Option<(PathBuf, bool)> {
    let input = input?;
    let on_disk = std::fs::read(input).ok()?;
    if on_disk == source.as_bytes() {
        return Some((input.to_path_buf(), false));
    }
    crate::error::decode_source(on_disk).err().is_some_and(|e| e.shown == source).then(|| (input.to_path_buf(), true))
}

/// The functions the module calls (or otherwise uses) that it does not define and that no
/// library defines at link time either: a `__device__` function of another file (`-dc`), or a
/// function that does not exist on the device. Kernels (another file's, launched from this
/// one: the link's to find), LLVM's intrinsics, libdevice's `__nv_*`, the device runtime's
/// entry points (`cuda*`, `__cuda*`) and [`crate::target::DEVICE_LIBRARY`] are not among them.
pub(crate) fn unresolved_functions<'c>(module: &Module<'c>) -> impl Iterator<Item = inkwell::values::FunctionValue<'c>> {
    module.get_functions().filter(|f| {
        let name = f.get_name().to_string_lossy();
        let kernel = f.get_call_conventions() == crate::back::device_launch::PTX_KERNEL_CALL_CONV;
        f.count_basic_blocks() == 0
            && !kernel
            && f.as_global_value().as_pointer_value().get_first_use().is_some()
            && !name.starts_with("llvm.")
            && !name.starts_with("__nv")
            && !name.starts_with("__cuda")
            && !name.starts_with("cuda")
            && !crate::target::DEVICE_LIBRARY.contains(&name.as_ref())
    })
}

/// Whether a precompiled header may have hidden Clang's error about a call of `module`: one
/// of its [`unresolved_functions`] is used outside the code of `main` (the file Clang
/// compiled), or where the debug information does not say (a list of symbols to keep is no
/// use, nor a kernel passed to the device runtime).
///
/// Clang reports a `__host__ __device__` function's use of a host function ("reference to
/// __host__ function") only when device code reaches it, from diagnostics it keeps aside while
/// parsing the function's body (`Sema::DeviceDeferredDiags`). A precompiled header keeps the
/// functions and the list of places to start the check from (`DECLS_TO_CHECK_FOR_DEFERRED_DIAGS`)
/// but not those diagnostics (Clang 22's ASTWriter), so a header function parsed into one
/// reaches the IR with the unresolved call and no message. The main file's own functions are
/// parsed in every compilation, never in a precompiled header (a preamble holds directives
/// only, [`preamble::bounds`]): an unresolved call there is another file's function (`-dc`),
/// which Clang had no reason to report.
pub(crate) fn precompiled_header_may_hide_errors(module: &Module<'_>, main: &Path) -> bool {
    use crate::pipeline::{called_function, innermost_file, value_name};
    use inkwell::llvm_sys::core::{LLVMGetFirstUse, LLVMGetNextUse, LLVMGetUser, LLVMIsAConstantArray, LLVMIsAGlobalVariable};
    use inkwell::llvm_sys::prelude::LLVMValueRef;
    use inkwell::values::AsValueRef;
    let main_canonical = main.canonicalize().ok();
    // A call's user is an instruction, which inkwell types by its result (`IntValue` for a
    // call that returns an `int`); the innermost scope is the function whose body holds the
    // call, before inlining.
    let in_main = |user: LLVMValueRef| {
        let Some(file) = innermost_file(user).map(PathBuf::from) else { return false };
        file == main || (main_canonical.is_some() && file.canonicalize().ok() == main_canonical)
    };
    // Lists of symbols to keep, not uses in the source: Clang's `__clang_gpu_used_external`
    // names the kernels and device variables of other files that host code uses.
    // SAFETY: a plain query of a live value's kind.
    let keep_list = |global: LLVMValueRef| {
        let variable = unsafe { !LLVMIsAGlobalVariable(global).is_null() };
        variable && ["__clang_gpu_used_external", "llvm.used", "llvm.compiler.used"].contains(&value_name(global).as_str())
    };
    // The function is an element of the list's initializer, a constant array used by the list.
    // SAFETY: plain queries of live values' kinds and uses.
    let a_keep_list = |user: LLVMValueRef| unsafe {
        if LLVMIsAConstantArray(user).is_null() {
            return false;
        }
        let mut next = LLVMGetFirstUse(user);
        let mut any = false;
        while !next.is_null() {
            if !keep_list(LLVMGetUser(next)) {
                return false;
            }
            any = true;
            next = LLVMGetNextUse(next);
        }
        any
    };
    // Another file's kernel, launched: an argument of the device runtime's entry points
    // (`__cudaCDP2LaunchDevice`, through the inline wrappers of CUDA's headers, whose debug
    // location is theirs).
    let a_launch = |user: LLVMValueRef, f: inkwell::values::FunctionValue<'_>| {
        called_function(user).is_some_and(|callee| {
            callee != f.as_value_ref() && {
                let name = value_name(callee);
                name.starts_with("__cuda") || name.starts_with("cuda")
            }
        })
    };
    unresolved_functions(module).any(|f| {
        let mut next = f.as_global_value().as_pointer_value().get_first_use();
        while let Some(u) = next {
            // SAFETY: a query of a live use; the user is read as a plain value, of any type.
            let user = unsafe { LLVMGetUser(u.as_mut_ptr()) };
            if !in_main(user) && !a_keep_list(user) && !a_launch(user, f) {
                return true;
            }
            next = u.get_next_use();
        }
        false
    })
}

/// The compilation's error of a failed Clang run: Clang's messages as diagnostics where it gave
/// any.
pub(crate) fn failure_error(failure: Failure, main: &Path, main_text: &str, warnings: &WarningPolicy, cxx: &CudaCxxOptions) -> CompileError {
    let diagnostics = |said: &Said| warnings.apply(said.diagnostics(main, main_text, cxx));
    match failure {
        Failure::Program { said, error } => {
            let found = diagnostics(&said);
            if found.iter().any(Diagnostic::is_error) {
                return CompileError::Diagnostics(found);
            }
            // No message Clang could give: a crash, which the error reports with its command.
            error.into()
        }
        Failure::Errors { said, command } => {
            let mut found = diagnostics(&said);
            if !found.iter().any(Diagnostic::is_error) {
                found.push(Diagnostic::new(Code::ClangError, Span::new(0, 0), "Clang failed without saying why").with_note(format!("command: {command}")));
            }
            CompileError::Diagnostics(found)
        }
        Failure::Crashed { said, command } => {
            let mut found = diagnostics(&said);
            found.push(
                Diagnostic::new(Code::ClangCrashed, Span::new(0, 0), "Clang crashed while compiling this file")
                    .with_primary_message("Clang's CUDA compilation of this file stopped here")
                    .with_note(format!("command: {command}"))
                    .with_note("the crash was caught and nothing was written; it is a bug in Clang or in the code cdpc gave it: please report it with the file")
                    .with_note("the same arguments reproduce it with a Clang 22 program (`clang++-22 ARGS`); `CDPC_CLANG=clang++-22` compiles through that program instead"),
            );
            CompileError::Diagnostics(found)
        }
        Failure::TimedOut { command, limit } => CompileError::Diagnostics(vec![Diagnostic::new(Code::ToolTimedOut, Span::new(0, 0), format!("Clang did not finish within {} s", limit.as_secs_f64()))
            .with_primary_message("Clang's CUDA compilation of this file")
            .with_note(format!("command: {command}"))
            .with_note("Clang runs inside cdpc, where it cannot be killed: the compilation stops here, and Clang's thread goes on until it returns or the process ends")
            .with_note("--tool-timeout SECONDS sets the limit (0: none); `CDPC_CLANG=clang++-22` runs Clang as a process, which the limit kills")]),
        Failure::Tool(e) => e.into(),
    }
}

/// What one Clang run over a source gave: its bitcode, its warnings, the path it compiled, and
/// whether a precompiled header (the preamble's or the CUDA wrapper's) stood in for part of it.
pub(crate) struct ClangOutput {
    pub bitcode: Vec<u8>,
    pub warnings: Vec<Diagnostic>,
    pub compiled_path: PathBuf,
    pub precompiled: bool,
    /// The headers it read, as [`Request::list_headers`] asks.
    pub headers: Vec<PathBuf>,
}

/// A folder of this compilation's own in the temporary folder: a work folder
/// ([`crate::toolchain::work_dir_in`]), removed when dropped, on an interrupt, or, after a
/// SIGKILL, by a later compilation's sweep.
pub(crate) fn work_folder() -> Result<WorkDir, CompileError> {
    crate::toolchain::work_dir_in(&std::env::temp_dir()).map_err(CompileError::from)
}

/// What every Clang run over one source shares: Clang, CUDA's folders, the source's folder,
/// the `-D`/`-U`/`-I` options and the cache.
#[derive(Clone)]
pub(crate) struct ClangSetup {
    engine: ClangEngine,
    cache: Option<Cache>,
    /// cdpc's additions to Clang's CUDA headers ([`cuda::additions_header`]): in the cache's
    /// `include/`, or in `additions_dir`, a folder of this compilation removed with the last
    /// clone of the setup.
    additions: PathBuf,
    /// Held for its drop (the folder's removal); `headers_read` leaves its files out.
    _additions_dir: Option<std::sync::Arc<WorkDir>>,
    root: PathBuf,
    system_includes: Vec<PathBuf>,
    /// The host compiler's own include folder ([`crate::toolchain::host_compiler_include`]).
    host_include: Option<PathBuf>,
    on_disk: Option<PathBuf>,
    /// The file on disk is not UTF-8 and `source` its shown text: no preamble is made of it
    /// (its key and its copy are made of `source`, whose `?`s are not the file's bytes).
    on_disk_not_utf8: bool,
    macros: Vec<String>,
    includes: Vec<PathBuf>,
    /// libdevice as the compilation's single-precision options make it
    /// ([`back::precision::libdevice_variant`]), in place of the toolkit's, and the toolkit's
    /// version as Clang gives it ([`cuda::sdk_version`]); `None` for nvcc's defaults.
    libdevice: Option<(PathBuf, Option<String>)>,
    /// The toolkit's libdevice and the options its copy is made for, to make the copy again
    /// ([`ClangSetup::own_includes`]).
    libdevice_source: Option<(PathBuf, back::FloatMath)>,
    /// Texts Clang reads in place of files' own: the CUDA wrapper's includes of CUDA's
    /// headers by path ([`cuda::wrapper_includes`]).
    replacements: std::sync::Arc<cuda::nvcc_text::Replacements>,
    /// The files that keep the command line's macros out of the headers nvcc does not read
    /// ([`cuda::hidden_macros`]), beside `additions`, with their texts (the toggle first, then
    /// the headers' stand-ins, which name the toggle beside them and the headers by path, so
    /// that the texts serve in any folder); none where no macro is to be hidden.
    hiding: Vec<(PathBuf, String)>,
    /// Held for its drop: the folder of [`ClangSetup::hiding`]'s files where the cache's could
    /// not take them.
    _hiding_dir: Option<std::sync::Arc<WorkDir>>,
    /// The source is cdpc's own `-E` output ([`crate::toolchain::PREPROCESSED_START`]): Clang's
    /// CUDA wrapper and cdpc's additions are in it already, and no precompiled header stands in.
    preprocessed: bool,
}

impl ClangSetup {
    pub(crate) fn new(source: &str, request: &Request<'_>, tools: &Toolchain) -> Result<ClangSetup, CompileError> {
        let engine = cuda::find_engine(request.clang, &ClangEnv::from_process()).map_err(|d| CompileError::Diagnostics(vec![d]))?;
        let cache = Cache::from_env(&CacheEnv::from_process()).map_err(|d| CompileError::Diagnostics(vec![d]))?;
        // A filler stops when its cache folder is removed (and never makes it again).
        if let Some(cache) = &cache {
            cuda::filler::watch(cache);
        }
        let root = tools.root();
        // The user's `-isystem` folders before CUDA's own (CCCL's), as nvcc orders them.
        let mut system_includes = request.system_include_dirs.to_vec();
        system_includes.extend(cuda::cuda_include_dirs(&root).map_err(|d| CompileError::Diagnostics(vec![d]))?);
        let (on_disk, on_disk_not_utf8) = input_on_disk(source, request.input).map_or((None, false), |(path, not_utf8)| (Some(path), not_utf8));
        // Headers beside the input are found as if Clang read it where it lies.
        let mut includes: Vec<PathBuf> = Vec::new();
        if on_disk.is_none() {
            if let Some(dir) = request.input.and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
                includes.push(dir.to_path_buf());
            }
        }
        includes.extend(request.include_dirs.iter().cloned());
        // In the cache when there is one (precompiled headers read it at a path that lasts);
        // else, or when the cache folder cannot take it, in a folder of this compilation.
        let in_cache = cache.as_ref().and_then(|c| cuda::additions_header(&c.dir.join("include")).ok());
        let (additions, additions_dir) = match in_cache {
            Some(path) => (path, None),
            None => {
                let dir = work_folder()?;
                let path = cuda::additions_header(dir.path()).map_err(|error| CompileError::Io { path: dir.path().to_path_buf(), action: "cannot write Clang's extra header in", error })?;
                (path, Some(std::sync::Arc::new(dir)))
            }
        };
        // libdevice as nvcc's `-prec-sqrt=false` and fast math library make it, beside the
        // additions (back::precision).
        let libdevice = if request.float_math.changes_libdevice() {
            let original = tools.libdevice.as_deref().ok_or_else(|| {
                CompileError::from(BackendError::Libdevice("-prec-sqrt=false and --use_fast_math change libdevice.10.bc, which was not found: install the `nvidia-nvvm` wheel".into()))
            })?;
            let dir = additions.parent().unwrap_or(Path::new("."));
            Some((back::precision::libdevice_variant(dir, original, request.float_math).map_err(BackendError::Libdevice)?, cuda::sdk_version(&root)))
        } else {
            None
        };
        let libdevice_source = libdevice.as_ref().and(tools.libdevice.clone()).map(|original| (original, request.float_math));
        let host_include = crate::toolchain::host_compiler_include();
        let preprocessed = source.starts_with(crate::toolchain::PREPROCESSED_START);
        let cache = if preprocessed { None } else { cache };
        let (replacements, mut macros) = match &engine {
            ClangEngine::InProcess { resource_dir } if !preprocessed => cuda::wrapper_includes(resource_dir, &root),
            _ => Default::default(),
        };
        let replacements = std::sync::Arc::new(replacements);
        let user_macros: Vec<String> = request.macros.iter().cloned().chain(request.cxx.preprocessor_args()).collect();
        // The wrapper's includes go through `macros` only in process (`wrapper_includes`).
        let candidates = match &engine {
            ClangEngine::InProcess { resource_dir } if !preprocessed => cuda::hidden_macros::hidden_headers(&root.join("include"), &resource_dir.join("include")),
            _ => Vec::new(),
        };
        let plan = if candidates.is_empty() { None } else { cuda::hidden_macros::plan(&user_macros, &candidates, cuda::ADDITIONS) };
        let mut hiding_dir = None;
        let hiding = match plan {
            None => Vec::new(),
            Some(plan) => {
                let files = cuda::hidden_macros::hiding_files(&plan.names, &plan.headers);
                let dir = additions.parent().unwrap_or(Path::new(".")).to_path_buf();
                // Beside the additions; where that folder (the cache's) cannot take them, in a
                // folder of this compilation, as the additions.
                let hiding = match cuda::hidden_macros::install(&files, &plan.headers, &dir, &mut macros) {
                    Ok(hiding) => hiding,
                    Err(_) => {
                        let own = work_folder()?;
                        let hiding = cuda::hidden_macros::install(&files, &plan.headers, own.path(), &mut macros).map_err(|error| CompileError::Io {
                            path: own.path().to_path_buf(),
                            action: "cannot write Clang's extra header in",
                            error,
                        })?;
                        hiding_dir = Some(std::sync::Arc::new(own));
                        hiding
                    }
                };
                hiding
            }
        };
        // cdpc's own `-E` output has had the command line's macros applied (and kept hidden
        // from the headers nvcc does not read, whose words it holds unexpanded): defining them
        // again would expand those words now.
        if !preprocessed {
            macros.extend(request.macros.iter().cloned());
        }
        Ok(ClangSetup {
            replacements,
            engine,
            cache,
            additions,
            _additions_dir: additions_dir,
            root,
            system_includes,
            host_include,
            on_disk,
            on_disk_not_utf8,
            macros,
            includes,
            libdevice,
            libdevice_source,
            preprocessed,
            hiding,
            _hiding_dir: hiding_dir,
        })
    }

    /// The same set-up without the cache: Clang reads no precompiled header and makes none.
    pub(crate) fn without_cache(&self) -> ClangSetup {
        ClangSetup { cache: None, ..self.clone() }
    }

    /// The options of this compilation; the input and output are set per run.
    pub(crate) fn template<'a>(&'a self, request: &'a Request<'_>) -> ClangInvocation<'a> {
        ClangInvocation {
            source: Path::new(""),
            output: Path::new(""),
            target: request.target,
            opt_level: request.opt_level,
            cuda_root: &self.root,
            system_includes: &self.system_includes,
            host_include: self.host_include.as_deref(),
            includes: &self.includes,
            macros: &self.macros,
            full_debug: request.debug == Some(DebugLevel::Full),
            fmad: request.fmad == back::Fmad::Contract,
            cuid: None,
            pch: None,
            preamble: None,
            resource_dir: match &self.engine {
                ClangEngine::InProcess { resource_dir } => Some(resource_dir),
                ClangEngine::Process(_) => None,
            },
            host_fatbin: None,
            additions: (!self.preprocessed).then_some(self.additions.as_path()),
            cxx: request.cxx,
            depfile: None,
            libdevice: self.libdevice.as_ref().map(|(path, version)| (path.as_path(), version.as_deref())),
            ftz: request.float_math.ftz,
            preprocess: None,
            preprocessed_input: self.preprocessed,
        }
    }

    /// The cache's files of `include/` that this compilation's Clang reads (cdpc's additions
    /// header, the libdevice copy), where they are the cache's.
    fn cached_includes(&self) -> Vec<&Path> {
        let Some(dir) = self.cache.as_ref().map(|c| c.dir.join("include")) else { return Vec::new() };
        [Some(self.additions.as_path()), self.libdevice.as_ref().map(|(path, _)| path.as_path())]
            .into_iter()
            .flatten()
            .chain(self.hiding.iter().map(|(path, _)| path.as_path()))
            .filter(|path| path.starts_with(&dir))
            .collect()
    }

    /// The files of [`ClangSetup::cached_includes`] as they are now, checked: each one's
    /// identity (device, inode, size, change time) taken before its bytes are compared with
    /// what it should hold (cdpc's additions, the libdevice copy's sum); `None` for one that is
    /// gone or does not hold them. [`ClangSetup::includes_unchanged`] later tells whether Clang,
    /// reading them in between, read those bytes.
    fn includes_checked(&self) -> Vec<Option<FileIdentity>> {
        self.cached_includes()
            .into_iter()
            .map(|path| {
                let before = FileIdentity::of(path)?;
                let hiding = self.hiding.iter().find(|(p, _)| p == path).map(|(_, text)| text.as_bytes());
                let good = if path == self.additions {
                    std::fs::read(path).is_ok_and(|b| b == cuda::ADDITIONS.as_bytes())
                } else if let Some(text) = hiding {
                    std::fs::read(path).is_ok_and(|b| b == text)
                } else {
                    back::precision::intact(path)
                };
                good.then_some(before)
            })
            .collect()
    }

    /// Whether every file of `checked` ([`ClangSetup::includes_checked`]) was good then and is
    /// still that file, never written since: every write, in place or by a rename, a truncation
    /// included, changes a file's change time or inode, which no tool sets back.
    fn includes_unchanged(&self, checked: &[Option<FileIdentity>]) -> bool {
        let now = self.cached_includes();
        now.len() == checked.len() && now.iter().zip(checked).all(|(path, before)| before.is_some() && FileIdentity::of(path) == *before)
    }

    /// cdpc's additions header and the libdevice copy this compilation reads, made in a folder
    /// of its own (removed when the folder is dropped), for a run that cannot rely on the
    /// cache's: the folder, the two paths, and the `-D` options with the macro-hiding files
    /// ([`ClangSetup::hiding`]) made there too.
    fn own_includes(&self) -> Option<(WorkDir, PathBuf, Option<PathBuf>, Vec<String>)> {
        let dir = crate::toolchain::work_dir_in(&std::env::temp_dir()).ok()?;
        let additions = cuda::additions_header(dir.path()).ok()?;
        let mut macros = self.macros.clone();
        if !self.hiding.is_empty() {
            // The stand-ins replaced by copies in this folder.
            let files: Vec<(String, String)> = self.hiding.iter().map(|(path, text)| Some((path.file_name()?.to_string_lossy().into_owned(), text.clone()))).collect::<Option<_>>()?;
            let from: Vec<PathBuf> = self.hiding.iter().skip(1).map(|(p, _)| p.clone()).collect();
            cuda::hidden_macros::install(&files, &from, dir.path(), &mut macros).ok()?;
        }
        let libdevice = match (&self.libdevice, &self.libdevice_source) {
            (None, _) => None,
            (Some(_), Some((original, math))) => Some(back::precision::libdevice_variant(dir.path(), original, *math).ok()?),
            (Some(_), None) => return None,
        };
        Some((dir, additions, libdevice, macros))
    }

    /// The file Clang reads: the input where it is on disk, else `source` written into the work
    /// folder `work` under the input's name.
    fn source_file(&self, work: &Path, source: &str, request: &Request<'_>) -> Result<PathBuf, ToolError> {
        if let Some(path) = &self.on_disk {
            return Ok(path.clone());
        }
        let name = request.input.and_then(Path::file_name).map_or_else(|| "input.cu".into(), |n| n.to_os_string());
        let path = work.join(name);
        std::fs::write(&path, source).map_err(|e| ToolError::io("writing the source for Clang", &path, e))?;
        Ok(path)
    }

    /// `-E` of `source` for one side (the device side for `template`'s architecture): the
    /// preprocessed text and Clang's warnings. No precompiled header (its text would be missing
    /// from the output); paths in this run's work folders are written as the file names alone,
    /// so that the text is the same in every run.
    /// Clang's preprocessed text of one side, its warnings, and with `depfile` the headers it
    /// read (Clang's `-MD` beside `-E`), as a compilation's list has them ([`Self::headers_read`]).
    pub(crate) fn preprocess(
        &self,
        template: &ClangInvocation<'_>,
        side: cuda::Side,
        source: &str,
        request: &Request<'_>,
        build: &BuildOptions,
        depfile: Option<(&Path, bool)>,
    ) -> Result<(String, Vec<Diagnostic>, Vec<PathBuf>), CompileError> {
        let _replacing = cuda::nvcc_text::replace_texts(Some(self.replacements.clone()));
        let compiled_path = std::cell::RefCell::new(PathBuf::new());
        let work_dir = std::cell::RefCell::new(PathBuf::new());
        let ran = run_clang(
            &self.engine,
            |work| {
                let file = self.source_file(work, source, request)?;
                let output = work.join("preprocessed.cui");
                let args = ClangInvocation { source: &file, output: &output, preprocess: Some(side), depfile, ..template.clone() }.args();
                *compiled_path.borrow_mut() = file;
                *work_dir.borrow_mut() = work.to_path_buf();
                Ok((args, output))
            },
            build,
        );
        let compiled_path = compiled_path.into_inner();
        match ran {
            Ok((bytes, said)) => {
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                let work = work_dir.into_inner();
                for dir in [Some(work.as_path()), self._additions_dir.as_ref().map(|d| d.path())].into_iter().flatten() {
                    if !dir.as_os_str().is_empty() {
                        text = text.replace(&format!("\"{}/", dir.display()), "\"");
                    }
                }
                let headers = depfile.map(|(path, _)| self.headers_read(path, &compiled_path, &work, None)).unwrap_or_default();
                Ok((text, request.warnings.apply(said.diagnostics(&compiled_path, source, request.cxx)), headers))
            }
            Err(failure) => Err(failure_error(failure, &compiled_path, source, request.warnings, request.cxx)),
        }
    }

    /// Runs Clang over `source` as `template` says (with `host_fatbin`: the host side, that
    /// fat binary embedded), in a work folder removed in every case. Returns its bitcode, its
    /// warnings and the path it compiled; its errors are `E1000` diagnostics, a crash the
    /// tool's error with the command line.
    pub(crate) fn run(&self, template: &ClangInvocation<'_>, source: &str, request: &Request<'_>, build: &BuildOptions, host_fatbin: Option<&[u8]>) -> Result<ClangOutput, CompileError> {
        let _replacing = cuda::nvcc_text::replace_texts(Some(self.replacements.clone()));
        let compiled_path = std::cell::RefCell::new(PathBuf::new());
        // Whether the last run (the one whose result is returned) read a precompiled header.
        let precompiled = std::cell::Cell::new(false);
        // Clang's list of the headers it read, in a folder of its own (a Clang program's work
        // folder is gone before its files could be read); the last run's is the one kept.
        let listing = match request.list_headers {
            HeaderList::None => None,
            list => {
                let dir = work_folder()?;
                Some((dir, list == HeaderList::All))
            }
        };
        let depfile = listing.as_ref().map(|(dir, all)| (dir.path().join("headers.d"), *all));
        let work_dir = std::cell::RefCell::new(PathBuf::new());
        let run_as = |template: &ClangInvocation<'_>, pch: Option<&Path>, preamble: Option<(&Path, usize)>| {
            precompiled.set(pch.is_some() || preamble.is_some());
            run_clang(
                &self.engine,
                |work| {
                    let file = self.source_file(work, source, request)?;
                    let fatbin = work.join("device.fatbin");
                    if let Some(bytes) = host_fatbin {
                        std::fs::write(&fatbin, bytes).map_err(|e| ToolError::io("writing the fat binary for Clang", &fatbin, e))?;
                    }
                    let output = work.join(if host_fatbin.is_some() { "host.bc" } else { "device.bc" });
                    let depfile = depfile.as_ref().map(|(path, all)| (path.as_path(), *all));
                    let args = ClangInvocation { source: &file, output: &output, pch, preamble, host_fatbin: host_fatbin.map(|_| fatbin.as_path()), depfile, ..template.clone() }.args();
                    *compiled_path.borrow_mut() = file;
                    *work_dir.borrow_mut() = work.to_path_buf();
                    Ok((args, output))
                },
                build,
            )
        };
        let run = |pch: Option<&Path>, preamble: Option<(&Path, usize)>| run_as(template, pch, preamble);
        // The precompiled headers, of each side's own options (the host side's made with
        // `--cuda-host-only`; the fat binary's file is no option of theirs): the source's
        // preamble where it has one in the cache, else the wrapper's.
        let identity = match &self.engine {
            ClangEngine::Process(clang) => clang.clone(),
            ClangEngine::InProcess { resource_dir } => resource_dir.join(in_process::CUDA_WRAPPER),
        };
        let template = &ClangInvocation { host_fatbin: host_fatbin.map(|_| Path::new("device.fatbin")), ..template.clone() };
        // The host side's debug information (`-Xcompiler -g`) is not compared with and
        // without precompiled headers: that side parses every header itself then.
        // Nor do they serve the host side of a Clang program, which lacks the linked Clang's
        // refusal of deferred diagnostics (`HOST_DEFERRED_DIAGNOSTICS`).
        // Nor with warnings in system headers asked for ([`CudaCxxOptions::system_header_warnings`]),
        // which the lean wrapper below would leave out too.
        let system_header_warnings = request.cxx.system_header_warnings(host_fatbin.is_some());
        let precompile =
            (host_fatbin.is_none() || (matches!(self.engine, ClangEngine::InProcess { .. }) && !request.cxx.host_args.iter().any(|a| a.starts_with("-g") && a != "-g0"))) && !system_header_warnings;
        let mut wrote = false;
        // A filler ([`cache::Fill`]) makes the headers it is asked for and compiles nothing:
        // the preamble where the file has one to make, else the wrapper's.
        let filling = cache::filling();
        // With debug information (`-G`, `-lineinfo`) a compilation with a precompiled header
        // and one without write other bytes (a header's path, the types a preamble declares:
        // docs/CCACHE.md), so such compilations make their headers first, as before, and each
        // cache state gives the object it gave.
        let now = cache::makes_headers_now() || request.debug.is_some();
        let make = if filling != 0 { filling & cache::Fill::PREAMBLE != 0 } else { now };
        let _one_maker = self.cache.as_ref().filter(|_| filling != 0).and_then(cache::one_maker);
        let mut preamble = match (&self.on_disk, &self.cache, precompile) {
            (Some(path), Some(cache), true) if !self.on_disk_not_utf8 => ensure_preamble(&self.engine, template, cache, &identity, path, source, build, make, &mut wrote),
            _ => None,
        };
        if filling != 0 {
            let mut held_pch = None;
            if let (None, Some(cache), true, true) = (&preamble, &self.cache, precompile, filling & cache::Fill::WRAPPER != 0) {
                held_pch = wrapper_header(&self.engine, template, cache, &identity, build, true, &mut wrote);
            }
            drop((preamble, held_pch));
            if let (true, Some(cache)) = (wrote, &self.cache) {
                let _ = cache::trim(cache);
            }
            return Err(CompileError::Usage("the cache's headers were made; nothing was compiled (CDPC_CACHE_FILL)".into()));
        }
        // Whether Clang failed over a cached file rather than the program: its message about
        // a precompiled header it cannot read or refuses (truncated, overwritten, gone, not
        // what its key says), or naming one of `files` (the header and its source), or a crash
        // (a damaged header may crash the reader). The cache is never the reason a compilation
        // fails: such a run is done again without the header, and whatever that run says (a
        // crash or an error of the program included) is the compilation's.
        let refused = |failure: &Failure, files: &[&Path]| {
            matches!(failure, Failure::Crashed { .. }) || ["precompiled", "PCH file", "AST file"].iter().any(|w| failure.mentions(w)) || files.iter().any(|f| failure.mentions(&f.to_string_lossy()))
        };
        // The cache's `include/` files as Clang is about to read them (through the precompiled
        // headers made below too), to see afterwards whether they were damaged meanwhile.
        let includes = self.includes_checked();
        let mut with_preamble = None;
        let mut replay = Vec::new();
        let mut held_pch = None;
        // Whether the run whose output is used read the wrapper without its texture
        // intrinsics, and where they are.
        let mut left_out_texture_intrinsics = false;
        let texture_intrinsics = match &self.engine {
            ClangEngine::InProcess { resource_dir } => Some(resource_dir.join("include").join(cuda::TEXTURE_INTRINSICS)),
            ClangEngine::Process(_) => None,
        };
        if let Some((entry, _, bytes, messages)) = &preamble {
            let result = run(None, Some((&entry.pch, *bytes)));
            if !matches!(&result, Err(failure) if refused(failure, &[&entry.pch, &entry.copy])) {
                replay = messages.clone();
                with_preamble = Some(result);
            }
        }
        if with_preamble.is_none() {
            // Refused: given up (removed once no other compilation holds it, made again on
            // the next compilation), and the compilation goes on without it.
            if let Some((entry, held, _, _)) = preamble.take() {
                entry.forget(held);
            }
        }
        let run_result = match with_preamble {
            Some(result) => result,
            None => {
                let pch = match (&self.cache, precompile) {
                    (Some(cache), true) => {
                        held_pch = wrapper_header(&self.engine, template, cache, &identity, build, now, &mut wrote);
                        held_pch.as_ref().map(|(path, _)| path.clone())
                    }
                    _ => None,
                };
                // With no header to read, the device side first parses the wrapper without
                // its texture intrinsics, and again whole where that fails
                // ([`cuda::WITHOUT_TEXTURE_INTRINSICS`]). Not with debug information, whose
                // list of files would lack the header; `-MD`'s list names it as the whole
                // wrapper's does (below), where its path is known (the linked Clang's).
                let lean = pch.is_none()
                    && host_fatbin.is_none()
                    && template.preprocess.is_none()
                    && !template.preprocessed_input
                    && request.debug.is_none()
                    && !system_header_warnings
                    && (request.list_headers != HeaderList::All || texture_intrinsics.is_some());
                let mut result = if lean {
                    let macros: Vec<String> = template.macros.iter().cloned().chain([cuda::WITHOUT_TEXTURE_INTRINSICS.to_string()]).collect();
                    match run_as(&ClangInvocation { macros: &macros, ..template.clone() }, None, None) {
                        Ok(output) => {
                            left_out_texture_intrinsics = true;
                            Ok(output)
                        }
                        Err(_) => run(None, None),
                    }
                } else {
                    run(pch.as_deref(), None)
                };
                if let (Some(path), Err(failure)) = (&pch, &result) {
                    if refused(failure, &[path, &path.with_extension("cu")]) {
                        // As the preamble's: given up, and the compilation runs without it.
                        if let Some((_, held)) = held_pch.take() {
                            held.discard(&[path]);
                        }
                        result = run(None, None);
                    }
                }
                result
            }
        };
        // A file of the cache's `include/` removed or damaged (truncated, written over) while
        // Clang read it (they are checked as the compilation starts, not while Clang reads
        // them): whether Clang's failure names one, or one is not the file checked before the
        // run (its bytes then unknown, whether Clang failed or not), the compilation runs
        // again, once, with copies of its own (as where the cache cannot take them) and without
        // the precompiled headers, which read them too; a header this run made from them is
        // given up. The next compilation remakes the cache's.
        let damaged = !self.includes_unchanged(&includes);
        if damaged && wrote {
            if let Some((entry, held, _, _)) = preamble.take() {
                entry.forget(held);
            }
            if let Some((path, held)) = held_pch.take() {
                held.discard(&[&path]);
            }
        }
        // A damaged include folder runs Clang again below with the whole wrapper.
        left_out_texture_intrinsics &= !damaged;
        let mut own_includes = None;
        let names_one = |failure: &Failure| self.cached_includes().iter().any(|f| failure.mentions(&f.to_string_lossy()));
        let run_result = match run_result {
            Err(failure) if names_one(&failure) || damaged => self.own_includes().ok_or(Err(failure)),
            Ok(output) if damaged => self.own_includes().ok_or(Ok(output)),
            other => Err(other),
        };
        let run_result = match run_result {
            Ok((dir, additions, libdevice, macros)) => {
                replay.clear();
                let libdevice = libdevice.as_ref().map(|path| (path.as_path(), self.libdevice.as_ref().and_then(|(_, version)| version.as_deref())));
                let result = run_as(&ClangInvocation { additions: Some(&additions), libdevice, macros: &macros, ..template.clone() }, None, None);
                own_includes = Some(dir);
                result
            }
            Err(kept) => kept,
        };
        // The preamble's messages first (where a compilation without it gives them), those of
        // the rest after; places in the preamble's copy are the source's.
        let run_result = match (&preamble, &self.on_disk) {
            (Some((entry, _, _, _)), Some(source_path)) => {
                let search: Vec<&Path> = self.includes.iter().chain(&self.system_includes).map(PathBuf::as_path).collect();
                let placed = |m| Said::Messages(with_replay(replay, entry.in_source_read(m, source_path, &search)));
                match run_result {
                    Ok((output, Said::Messages(m))) => Ok((output, placed(m))),
                    Err(Failure::Errors { said: Said::Messages(m), command }) => Err(Failure::Errors { said: placed(m), command }),
                    other => other,
                }
            }
            _ => run_result,
        };
        // Declarations nvcc compiles and Clang refuses (a `__shared__` variable whose type
        // constructs, an initialised variable-length array): when those are Clang's only
        // errors, the compilation runs again, once, without precompiled headers, with the
        // declarations rewritten (cuda::mend); else Clang's errors stand.
        let run_result = match run_result {
            Err(Failure::Errors { said: Said::Messages(messages), command }) if matches!(self.engine, ClangEngine::InProcess { .. }) => {
                let failed_on = compiled_path.borrow().clone();
                let raw = self.on_disk.as_ref().and_then(|p| std::fs::read(p).ok()).unwrap_or_else(|| source.as_bytes().to_vec());
                match cuda::mend::plan(&messages, &failed_on, &raw) {
                    Some(plan) => {
                        let mut both = (*self.replacements).clone();
                        both.extend(&plan.replacements);
                        let replacing = cuda::nvcc_text::replace_texts(Some(std::sync::Arc::new(both)));
                        let again = run_as(template, None, None);
                        drop(replacing);
                        match again {
                            Ok((output, Said::Messages(mut said))) => {
                                said.extend(plan.warnings(&compiled_path.borrow()));
                                Ok((output, Said::Messages(said)))
                            }
                            _ => Err(Failure::Errors { said: Said::Messages(messages), command }),
                        }
                    }
                    None => Err(Failure::Errors { said: Said::Messages(messages), command }),
                }
            }
            other => other,
        };
        // Done with the cache's entries: a compilation that wrote one brings the cache down to
        // its bound (hits do not, to stay cheap), its own entries now free to go too.
        drop((preamble, held_pch));
        if let (true, Some(cache)) = (wrote, &self.cache) {
            let _ = cache::trim(cache);
        }
        let compiled_path = compiled_path.into_inner();
        match run_result {
            Ok((bitcode, said)) => {
                let warnings = said.diagnostics(&compiled_path, source, request.cxx);
                let mut headers = match &depfile {
                    Some((path, _)) => self.headers_read(path, &compiled_path, &work_dir.into_inner(), own_includes.as_ref().map(WorkDir::path)),
                    None => Vec::new(),
                };
                // The header left out is one the program's object depends on as the whole
                // wrapper's does: `-MD` lists it.
                if let (true, Some(path), Some((_, true))) = (left_out_texture_intrinsics, &texture_intrinsics, &depfile) {
                    if !headers.contains(path) {
                        headers.push(path.clone());
                    }
                }
                Ok(ClangOutput { bitcode, warnings, compiled_path, precompiled: precompiled.get(), headers })
            }
            Err(failure) => Err(failure_error(failure, &compiled_path, source, request.warnings, request.cxx)),
        }
    }

    /// The headers of Clang's list at `depfile` (`-MD`): the compiled file, cdpc's own files
    /// (its additions to Clang's headers, the work folder's, the cache's precompiled headers and
    /// the preamble's copy) left out. A precompiled header's list names the headers it read.
    fn headers_read(&self, depfile: &Path, compiled: &Path, work: &Path, own_includes: Option<&Path>) -> Vec<PathBuf> {
        let text = std::fs::read_to_string(depfile).unwrap_or_default();
        let cache = self.cache.as_ref().map(|c| c.dir.as_path());
        let mut out: Vec<PathBuf> = Vec::new();
        for path in cuda::preamble::parse_depfile(&text) {
            let ours = path == compiled
                || path == self.additions
                || (!work.as_os_str().is_empty() && path.starts_with(work))
                || cache.is_some_and(|c| path.starts_with(c))
                || self._additions_dir.as_ref().is_some_and(|d| path.starts_with(d.path()))
                || own_includes.is_some_and(|d| path.starts_with(d));
            if !ours && !out.contains(&path) {
                out.push(path);
            }
        }
        out
    }
}
