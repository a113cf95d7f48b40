//! Programs, as nvcc builds them: `cdpc app.cu -o app`, `cdpc -rdc=true a.o b.o main.o -o app`,
//! `cdpc -dlink a.o b.o -o dlink.o`. One command line becomes these jobs (`-v` prints each):
//!
//! ```text
//! a.cu    ── cdpc's CUDA C++ compile (-dc) ──▶ a.o ─┐
//! b.cdp   ── cdpc's kernel-language compile ──▶ b.o ─┤
//! main.cpp ── host compiler -c ──────────────▶ main.o ┤
//! x.o, libx.a ───────────────────────────────────────┤
//!                 nvlink --register-link-binaries (each architecture, libcudadevrt)
//!                 fatbinary -link; the registration object (back::link_stub)  ──▶ dlink.o
//!                 host compiler: dlink.o a.o b.o main.o x.o -lcudadevrt -lcudart_static -lrt -lpthread -ldl ──▶ app
//! ```
//!
//! A CUDA C++ source compiles as nvcc's `-c` compiles it, a whole program whose device code is
//! linked already, unless `-rdc=true` ([`ProgramOptions::relocatable`]); the kernel language's
//! and LLVM IR's device code is relocatable. The device link runs where relocatable device code
//! takes part, as nvcc's. The intermediate files live in a work folder removed in every case;
//! the output appears only when the whole build succeeded. A build is planned into [`Step`]s
//! first, every decision taken there (which objects each link takes, whether the device link
//! runs), and then runs them in order; `cdpc -###` prints the same steps without running them
//! ([`program_jobs`], [`library_jobs`]).

use super::archive;
use super::jobs::{self, Action, Job, Output};
use super::link::{BuildError, SourceWarnings};
use super::{build_options, fatbin, pool, symbols, CompileError, CompileOptions, Emit, HeaderList, InputFile, Language, MallocPool, Timings};
use crate::diag::{Code, Diagnostic, SourceFile, Span};
use crate::front::cdp::preprocess::MacroOption;
use crate::target::{SmVersion, Target};
use crate::toolchain::run::at_once;
use crate::toolchain::{work_dir, BuildOptions, FatbinImage, HostCompiler, OutputFile, OutputGuard, ToolError, ToolRun, Toolchain};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How an input takes part in a program, by its extension (as nvcc decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramInput {
    /// A file cdpc compiles: CUDA C++, the kernel language, LLVM IR.
    Source(PathBuf),
    /// A host file the host compiler compiles: C++ (`.cpp`, `.cc`, `.cxx`, `.c++`, `.C`, and
    /// `.ii`, preprocessed) or C (`.c`, and `.i`, preprocessed), as nvcc 13.5 takes them.
    Host(PathBuf),
    /// An object or a static archive, host or device (`.o`, `.a`, `.so`, ...), for the links.
    Object(PathBuf),
}

/// Whether `path` names a shared library: `libx.so`, or with its version as the host linker
/// takes it, `libx.so.1` or `libx.so.1.2.3` (CMake's names for a library with a `SOVERSION`,
/// which nvcc refuses: "Don't know what to do with").
pub fn is_shared_library(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Some(at) = name.rfind(".so") else { return false };
    let rest = &name[at + 3..];
    at > 0 && (rest.is_empty() || rest.split('.').skip(1).all(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())) && rest.starts_with('.'))
}

impl ProgramInput {
    /// Classifies `path` by its extension; with `-x` every file but an object is a source.
    pub fn classify(path: &Path, language_given: bool) -> ProgramInput {
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
        if is_shared_library(path) {
            return ProgramInput::Object(path.to_path_buf());
        }
        match ext.as_str() {
            "o" | "obj" | "a" | "lib" => ProgramInput::Object(path.to_path_buf()),
            _ if language_given => ProgramInput::Source(path.to_path_buf()),
            "cpp" | "cc" | "cxx" | "c++" | "cp" | "CPP" | "C" | "c" | "ii" | "i" => ProgramInput::Host(path.to_path_buf()),
            _ => ProgramInput::Source(path.to_path_buf()),
        }
    }

    /// Whether `path` is a file the host compiler compiles (a `.cpp` or `.c` file).
    pub fn is_host_file(path: &Path) -> bool {
        matches!(ProgramInput::classify(path, false), ProgramInput::Host(_))
    }

    /// The path.
    pub fn path(&self) -> &Path {
        match self {
            ProgramInput::Source(p) | ProgramInput::Host(p) | ProgramInput::Object(p) => p,
        }
    }
}

/// Which CUDA runtime a program links (nvcc's `--cudart`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cudart {
    /// `libcudart_static.a` with `-lrt -lpthread -ldl` (nvcc's default).
    #[default]
    Static,
    /// `libcudart.so`, found through an `rpath` to the runtime's folder.
    Shared,
    /// None: the program links its own.
    None,
}

impl Cudart {
    /// nvcc's spellings: `static`, `shared`, `none`.
    pub fn parse(text: &str) -> Option<Cudart> {
        match text {
            "static" => Some(Cudart::Static),
            "shared" => Some(Cudart::Shared),
            "none" => Some(Cudart::None),
            _ => None,
        }
    }
}

/// What a program's build takes besides the compile options.
#[derive(Clone, Debug, Default)]
pub struct ProgramOptions {
    /// nvcc's `-ccbin`: the host compiler, or its folder ([`HostCompiler::find`]).
    pub host_compiler: Option<PathBuf>,
    /// `-l NAME`, for the host link (and nvlink, for a static device library found in
    /// `library_dirs`).
    pub libraries: Vec<String>,
    /// `-L DIR`, for both links.
    pub library_dirs: Vec<PathBuf>,
    /// `-Xlinker ARG`, to the host linker (`-Wl,ARG`).
    pub linker_args: Vec<String>,
    /// `-shared`: a shared library instead of an executable.
    pub shared: bool,
    /// `--cudart`.
    pub cudart: Cudart,
    /// `-O` as given (the host compiler's level, as nvcc passes it); `None`: not given.
    pub host_opt_level: Option<u8>,
    /// nvcc's `-rdc=true`: every CUDA C++ source's device code relocatable, one device link for
    /// the program. Without it (nvcc's default) each CUDA C++ source is a whole program of its
    /// own ([`CompileOptions::whole_program`]), and the device link runs only for the inputs
    /// that carry relocatable device code (`-dc` objects, kernel-language files, archives).
    pub relocatable: bool,
}

/// A finished program build or device link.
pub struct Built {
    /// Each source's warnings, in input order.
    pub warnings: Vec<SourceWarnings>,
    /// Every tool run, in order.
    pub tool_runs: Vec<ToolRun>,
    /// Phase times, summed over the sources.
    pub timings: Timings,
}

/// The device link's architectures: each cubin image of `-gencode`
/// ([`CompileOptions::host_object_images`]), else the target's.
fn link_archs(options: &CompileOptions) -> Vec<SmVersion> {
    let cubins: Vec<SmVersion> = options.host_object_images.iter().filter_map(|i| if let fatbin::Image::Cubin(sm) = i { Some(*sm) } else { None }).collect();
    if cubins.is_empty() {
        vec![options.target.sm]
    } else {
        cubins
    }
}

/// The file CMake compiles to identify a CUDA compiler, whose `INFO:compiler[...]` strings
/// come from `__NVCC__` and `__CUDACC_VER_*__`.
const CMAKE_ID_SOURCE: &str = "CMakeCUDACompilerId.cu";

/// Whether `source` is CMake's identification file, the one file that gets [`identity_macros`].
pub fn is_cmake_identification(source: &Path) -> bool {
    source.file_name().is_some_and(|n| n == CMAKE_ID_SOURCE)
}

/// nvcc's identity macros for CMake's identification file only (docs/CMAKE.md), for the CUDA
/// release `(major, minor, build)` of the tools cdpc found: cdpc presents itself to CMake as
/// nvcc-compatible, and defines `__NVCC__` nowhere else, since CCCL and other libraries take it
/// to mean nvcc's own front end.
pub fn identity_macros((major, minor, build): (u32, u32, u32)) -> Vec<String> {
    vec!["-D__NVCC__".into(), format!("-D__CUDACC_VER_MAJOR__={major}"), format!("-D__CUDACC_VER_MINOR__={minor}"), format!("-D__CUDACC_VER_BUILD__={build}")]
}

/// Compiles one source with `options` (its [`source_options`]) to its object at `object`
/// (`-dc`'s host object; for LLVM IR, which has no host code, the device object).
fn compile_source(path: &Path, options: &CompileOptions, object: &Path) -> Result<(SourceWarnings, Vec<ToolRun>, Timings), BuildError> {
    let name = path.display().to_string();
    let file = match InputFile::read(path, options) {
        Ok(file) => file,
        Err(CompileError::NotUtf8(e)) => return Err(BuildError::Source { name, text: e.shown.clone(), error: CompileError::NotUtf8(e) }),
        Err(error) => return Err(BuildError::Source { name, text: String::new(), error }),
    };
    let compiled = file.compile(options).map_err(|error| BuildError::Source { name: name.clone(), text: file.shown.clone(), error })?;
    std::fs::write(object, &compiled.output).map_err(|e| CompileError::from(ToolError::io("writing an object of the program", object, e)))?;
    Ok((SourceWarnings { name, text: file.shown, warnings: compiled.warnings }, compiled.tool_runs, compiled.timings))
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|s| super::host::identifier_chars(&s.to_string_lossy())).unwrap_or_default()
}

/// The work folder's name for the object of a program's `index`th input.
fn object_name(index: usize, path: &Path) -> String {
    format!("{index}-{}.o", stem(path))
}

/// The options a program's or library's source compiles with ([`compile_source`]): `-dc`'s
/// host object (LLVM IR's device object), a whole program's unless `relocatable` or the
/// kernel language, for the first image's architecture.
fn source_options(path: &Path, options: &CompileOptions, relocatable: bool) -> CompileOptions {
    let mut options = options.clone();
    options.separate = true;
    options.preprocess.input = Some(path.to_path_buf());
    options.emit = if Language::of(&options) == Language::Ir { Emit::Object } else { Emit::HostObject };
    options.whole_program = !relocatable && Language::of(&options) == Language::Cuda;
    if let Some(image) = options.host_object_images.first() {
        options.target.sm = image.sm();
    }
    options
}

/// What an object given to a program holds, read once.
struct Object {
    /// A bare device object (`EM_CUDA`), which only nvlink takes.
    device_only: bool,
    /// Relocatable device code, which needs the device link.
    relocatable: bool,
}

impl Object {
    fn of(bytes: &[u8]) -> Object {
        Object { device_only: archive::is_device_object(bytes), relocatable: holds_relocatable_device_code(bytes) }
    }
}

/// The host compiler's arguments for a host file of `options` (nvcc's: the CUDA headers'
/// folder after the user's `-I`, the macros, `-std`, `-Xcompiler`).
pub fn host_compile_args(input: &Path, output: &Path, options: &CompileOptions, program: &ProgramOptions, cuda_include: Option<&Path>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["-c".into()];
    // nvcc's: `-x c` for `.c` and `.i`, `-x c++` for `.ii` (whose text the host compiler then
    // reads as C++ to preprocess, not as its preprocessed output), and for `.i` and `.ii` no
    // `-D`/`-U`, their macros applied already (nvcc 13.5's `-dryrun`)
    let extension = input.extension().and_then(|e| e.to_str()).unwrap_or("");
    let preprocessed = extension == "i" || extension == "ii";
    if extension == "c" || extension == "i" {
        args.extend(["-x".into(), "c".into()]);
    } else {
        if extension == "ii" {
            args.extend(["-x".into(), "c++".into()]);
        }
        if let Some(std) = options.cuda_cxx.std {
            args.push(format!("-std={}", std.as_str()).into());
        }
    }
    for m in options.preprocess.macros.iter().filter(|_| !preprocessed) {
        args.push(match m {
            MacroOption::Define(d) => format!("-D{d}").into(),
            MacroOption::Undefine(u) => format!("-U{u}").into(),
        });
    }
    for dir in &options.preprocess.include_dirs {
        args.push(concat("-I", dir));
    }
    for dir in &options.preprocess.system_include_dirs {
        args.extend(["-isystem".into(), dir.into()]);
    }
    if let Some(include) = cuda_include {
        args.push(concat("-I", include));
    }
    if let Some(level) = program.host_opt_level {
        args.push(format!("-O{level}").into());
    }
    args.extend(options.cuda_cxx.host_args.iter().map(OsString::from));
    args.push(input.into());
    args.push("-o".into());
    args.push(output.into());
    args
}

fn concat(flag: &str, path: &Path) -> OsString {
    let mut s = OsString::from(flag);
    s.push(path);
    s
}

/// The device link of `objects` (host objects and archives of `-dc` code, device objects):
/// nvlink for each architecture (with the pool's object where `pool`, `driver/pool.rs`; with
/// `lto`, the link's options under `-dlto`, the object of the IR the objects carry in place of
/// their cubins, `driver/lto.rs`), `fatbinary -link`, and the registration object's bytes,
/// with what the link-time compile said.
fn device_link_object(
    tools: &Toolchain,
    objects: &[PathBuf],
    archs: &[SmVersion],
    build: &BuildOptions,
    pool: Option<&Target>,
    lto: Option<&CompileOptions>,
) -> Result<(Vec<u8>, Vec<Diagnostic>), CompileError> {
    // Each architecture's link at the same time (its link-time compile above all); the first
    // architecture's error is the one reported, as when they ran one after another.
    let linked = at_once(archs, build, archs.len() >= 2, |&arch, build| device_link_arch(tools, objects, arch, build, pool, lto));
    let mut images = Vec::new();
    let mut module_ids: Option<Vec<String>> = None;
    let mut said: Vec<Diagnostic> = Vec::new();
    for (arch, linked) in archs.iter().zip(linked) {
        let (cubin, ids, arch_said) = linked?;
        // Each architecture's compile says the same of the same launches: once.
        for d in arch_said {
            if !said.contains(&d) {
                said.push(d);
            }
        }
        match &module_ids {
            None => module_ids = Some(ids),
            Some(known) if *known == ids => {}
            Some(_) => return Err(CompileError::Usage("the device links of the architectures registered different modules; link each architecture separately".into())),
        }
        images.push(FatbinImage { ptx: false, sm: *arch, bytes: cubin });
    }
    let fatbin = tools.fatbinary_linked(&images, build)?;
    Ok((crate::back::link_stub::object(&module_ids.unwrap_or_default(), &fatbin)?, said))
}

/// [`device_link_object`]'s link for `arch`: the linked cubin, the module ids to register (as
/// a set, sorted) and what the link-time compile said.
fn device_link_arch(
    tools: &Toolchain,
    objects: &[PathBuf],
    arch: SmVersion,
    build: &BuildOptions,
    pool: Option<&Target>,
    lto: Option<&CompileOptions>,
) -> Result<(Vec<u8>, Vec<String>, Vec<Diagnostic>), CompileError> {
    let mut said = Vec::new();
    let mut arch_build = build.clone();
    arch_build.arch = arch;
    // The pool's object in a work folder of its own, removed after the link.
    let pool_work = pool.map(|_| work_dir(build)).transpose()?;
    let mut inputs = objects.to_vec();
    // The link-time object, in a work folder of its own too; the ids it registers.
    let lto_work = lto.map(|_| work_dir(build)).transpose()?;
    let lto_file = format!("cdpc-lto-{arch}.o");
    let mut lto_ids = None;
    if let (Some(link), Some(work)) = (lto, &lto_work) {
        match super::lto::compile(objects, arch, link, tools, &arch_build) {
            Ok(done) => {
                let path = work.path().join(&lto_file);
                std::fs::write(&path, &done.object).map_err(|e| ToolError::io("writing the link-time object", &path, e))?;
                let at = inputs.iter().position(|o| done.replaced.contains(o)).unwrap_or(0);
                inputs.retain(|o| !done.replaced.contains(o));
                arch_build.link_libraries.retain(|l| !done.replaced.contains(l));
                inputs.insert(at.min(inputs.len()), path);
                lto_ids = Some(done.module_ids);
                said.extend(done.remarks);
            }
            Err(Some(why)) => said.push(super::lto::unchanged_warning(&why)),
            Err(None) => {}
        }
    }
    let pool_file = format!("cdpc-malloc-pool-v1-{arch}.o");
    if let (Some(target), Some(work)) = (pool, &pool_work) {
        let path = work.path().join(&pool_file);
        let object = pool::object(tools, target, arch, &arch_build)?;
        std::fs::write(&path, object).map_err(|e| ToolError::io("writing the device allocation pool's object", &path, e))?;
        inputs.push(path);
    }
    let mut linked = tools.device_link(&inputs, arch, &arch_build)?;
    // nvlink's note that the pool's object has no host code: no host code refers to it.
    arch_build.log.drop_lines_about("nvlink", &pool_file);
    // The link-time object's: the objects it replaced register its code under their ids.
    if let Some(ids) = lto_ids {
        arch_build.log.drop_lines_about("nvlink", &lto_file);
        let lto_id = bare_object_id(&lto_file);
        linked.module_ids.retain(|id| !id.ends_with(&lto_id));
        linked.module_ids.extend(ids);
    }
    // As a set: an architecture compiled at the link lists its modules in another order than
    // one whose cubins nvlink linked (an architecture whose objects do not all carry IR).
    linked.module_ids.sort();
    linked.module_ids.dedup();
    // No host object registers the pool's object, and the registration waits for every
    // module listed: it is not one.
    let pool_id = bare_object_id(&pool_file);
    linked.module_ids.retain(|id| pool.is_none() || !id.ends_with(&pool_id));
    Ok((linked.cubin, linked.module_ids, said))
}

/// How the end of nvlink's module id of the bare device object `file` reads: nvlink lists such
/// an object as a module to register, under its path with every other character than a letter
/// or digit `_`.
fn bare_object_id(file: &str) -> String {
    file.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Whether the device link of `inputs` (its objects, device libraries and the program's shared
/// libraries) serves device-side allocations from the pool ([`pool_decision_of`]). `names`
/// gives the command line's name of a work file.
fn pool_decision(inputs: &[PathBuf], options: &CompileOptions, names: &[(String, String)]) -> (bool, Option<Diagnostic>) {
    let named = inputs.iter().map(|path| {
        let shown = path.display().to_string();
        let name = names.iter().find(|(work, _)| *work == shown).map_or(shown, |(_, source)| source.clone());
        (name, pool::Input::File(path))
    });
    pool_decision_of(named, options)
}

/// Whether a device link of `inputs` serves device-side allocations from the pool: always with
/// `-fdevice-malloc-pool`, never with `-fno-device-malloc-pool` or without launch optimizations
/// ([`CompileOptions::pool_mode`]), by default where [`pool::decide`] proves it safe (reading
/// the inputs only then). Returns the decision and, asked for (`-Rpass=malloc-pool`), the
/// remark saying it.
pub(super) fn pool_decision_of<'a>(inputs: impl IntoIterator<Item = (String, pool::Input<'a>)>, options: &CompileOptions) -> (bool, Option<Diagnostic>) {
    let decision = match options.pool_mode() {
        MallocPool::Off => return (false, None),
        MallocPool::On => pool::Decision::Pool,
        MallocPool::AtLink | MallocPool::Program => pool::decide(inputs),
    };
    let remark = options.pool_remarks.then(|| {
        let mut d = Diagnostic::new(Code::MallocPoolDecision, Span::default(), decision.message());
        d.labels.clear();
        d
    });
    (decision == pool::Decision::Pool, remark)
}

/// What `-###` says a device link for `archs` (`sm_80, sm_90`) does: nvlink with libcudadevrt,
/// with cdpc's allocation pool as [`CompileOptions::pool_mode`] allows, and the registration
/// object.
pub fn device_link_note(archs: &str, options: &CompileOptions) -> String {
    let pool = match options.pool_mode() {
        MallocPool::Off => "",
        MallocPool::AtLink | MallocPool::Program => " and, where every object frees through it, cdpc's allocation pool",
        MallocPool::On => " and cdpc's allocation pool",
    };
    let lto = if options.device_lto { ", the device IR the objects and static libraries carry compiled together first (-dlto)" } else { "" };
    format!("nvlink for {archs} with libcudadevrt{pool}{lto}, and the registration object")
}

/// What the device link's link-time compile said (`-dlto`), under the name `device link`.
pub(super) fn link_said(said: Vec<Diagnostic>) -> Option<SourceWarnings> {
    (!said.is_empty()).then(|| SourceWarnings { name: "device link".into(), text: String::new(), warnings: said })
}

/// The remark of [`pool_decision`] as a build's warnings, under the name `device link`.
pub(super) fn link_remark(remark: Option<Diagnostic>) -> Option<SourceWarnings> {
    remark.map(|r| SourceWarnings { name: "device link".into(), text: String::new(), warnings: vec![r] })
}

/// The device link's failure, where nvlink's is over runtime functions libcudadevrt lacks, as
/// `E0801` at their calls in `sources` (their `W0316`s' places, [`symbols::runtime_missing`]),
/// objects named through `names`; any other as it is.
fn device_link_failure(e: CompileError, sources: &[SourceWarnings], names: &[(String, String)]) -> BuildError {
    if let CompileError::Tool(ToolError::Failed { tool, stderr, .. }) = &e {
        if tool == "nvlink" {
            let files: Vec<_> = sources.iter().map(|w| (Some(std::sync::Arc::new(SourceFile { name: w.name.clone(), text: w.text.clone() })), w.warnings.as_slice())).collect();
            let (found, _) = symbols::runtime_missing(stderr, &files, names);
            if !found.is_empty() {
                return BuildError::Link(found);
            }
        }
    }
    e.into()
}

/// `-dlink`: the registration object of the device link of `objects`, written to `output`, as
/// `nvcc -dlink` writes it for the host linker.
pub fn device_link_to_file(objects: &[PathBuf], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Result<Built, BuildError> {
    let guard = OutputGuard { inputs: objects.to_vec(), overwrite: options.overwrite };
    let file = OutputFile::prepare_guarded(output, guard).map_err(CompileError::from)?;
    let tools = Toolchain::discover(&options.tools).map_err(CompileError::from)?;
    let mut build = build_options(options);
    add_device_libraries(program, &mut build);
    let read: Vec<PathBuf> = objects.iter().chain(&build.link_libraries).cloned().collect();
    let (pool, remark) = pool_decision(&read, options, &[]);
    let (object, said) =
        device_link_object(&tools, objects, &link_archs(options), &build, pool.then_some(&options.target), options.device_lto.then_some(options)).map_err(|e| device_link_failure(e, &[], &[]))?;
    file.commit(&object).map_err(CompileError::from)?;
    let tool_runs = build.log.take();
    let mut timings = Timings::default();
    timings.add_tool_runs(&tool_runs);
    let mut warnings: Vec<SourceWarnings> = link_remark(remark).into_iter().collect();
    warnings.extend(link_said(options.warnings.apply(said)));
    Ok(Built { warnings, tool_runs, timings })
}

/// `-l` libraries that are static archives in a `-L` folder also go to nvlink, as device
/// libraries may be among them.
fn add_device_libraries(program: &ProgramOptions, build: &mut BuildOptions) {
    build.link_libraries.extend(device_libraries(program));
}

/// The static archives of `-l` found in the `-L` folders: what nvlink takes besides the objects.
fn device_libraries(program: &ProgramOptions) -> Vec<PathBuf> {
    // The runtime's and the C library's are host code (libcudadevrt nvlink always links).
    const HOST_ONLY: &[&str] = &["cudadevrt", "cudart", "cudart_static", "rt", "pthread", "dl", "m", "c"];
    let found = |name: &String| program.library_dirs.iter().map(|d| d.join(format!("lib{name}.a"))).find(|p| p.is_file());
    program.libraries.iter().filter(|n| !HOST_ONLY.contains(&n.as_str())).filter_map(found).collect()
}

/// What one run of the host compiler over a host file needs: the compiler (`-ccbin`), the
/// build's options (its log and time limit) and a work folder.
struct HostRun {
    host: HostCompiler,
    build: BuildOptions,
    work: crate::toolchain::WorkDir,
}

impl HostRun {
    fn new(program: &ProgramOptions, options: &CompileOptions) -> Result<HostRun, BuildError> {
        let host = HostCompiler::find(program.host_compiler.as_deref()).map_err(CompileError::from)?;
        let build = build_options(options);
        let work = work_dir(&build).map_err(CompileError::from)?;
        Ok(HostRun { host, build, work })
    }

    /// [`host_compile_args`] with CUDA's headers' folder, where the toolkit has one.
    fn args(input: &Path, output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Vec<OsString> {
        let include = Toolchain::discover(&options.tools).ok().and_then(|t| t.cuda_include_dir());
        host_compile_args(input, output, options, program, include.as_deref())
    }
}

/// `-c` of a host file: the host compiler's object at `output`, and with
/// `options.list_headers` (`-MD`, `-MMD`) the headers it read, from the host compiler's own
/// list (its `-MD`/`-MMD`, as nvcc's `gcc` makes it), the file itself left out.
pub fn compile_host_file(input: &Path, output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Result<(Built, Vec<PathBuf>), BuildError> {
    let guard = OutputGuard { inputs: vec![input.to_path_buf()], overwrite: options.overwrite };
    let file = OutputFile::prepare_guarded(output, guard).map_err(CompileError::from)?;
    let HostRun { host, build, work } = HostRun::new(program, options)?;
    let object = work.path().join("host.o");
    let depfile = work.path().join("host.d");
    let mut args = HostRun::args(input, &object, program, options);
    let listed = match options.list_headers {
        HeaderList::None => None,
        HeaderList::User => Some("-MMD"),
        HeaderList::All => Some("-MD"),
    };
    if let Some(flag) = listed {
        args.splice(1..1, [flag.into(), "-MF".into(), depfile.clone().into_os_string()]);
    }
    host.run("host compiler", &args, &build).map_err(CompileError::from)?;
    let bytes = std::fs::read(&object).map_err(|e| CompileError::from(ToolError::io("reading the host compiler's object", &object, e)))?;
    let headers = match listed {
        Some(_) => host_headers(&depfile)?,
        None => Vec::new(),
    };
    file.commit(&bytes).map_err(CompileError::from)?;
    let tool_runs = build.log.take();
    let mut timings = Timings::default();
    timings.add_tool_runs(&tool_runs);
    Ok((Built { warnings: Vec::new(), tool_runs, timings }, headers))
}

/// nvcc's `-M` and `-MM` of a host file: the headers the host compiler reads compiling it as
/// [`compile_host_file`] does (every one, or with `HeaderList::User` those outside system
/// folders), from the host compiler's `-M`/`-MM` (nvcc runs `gcc -E` for it), the file itself
/// left out; nothing else is written.
pub fn host_file_headers(input: &Path, list: HeaderList, program: &ProgramOptions, options: &CompileOptions) -> Result<(Vec<PathBuf>, Vec<ToolRun>), BuildError> {
    let HostRun { host, build, work } = HostRun::new(program, options)?;
    let depfile = work.path().join("host.d");
    let mut args = HostRun::args(input, &depfile, program, options);
    // `-c` becomes `-M` (or `-MM`): the list, at `-o`'s path, in place of an object
    args[0] = if list == HeaderList::User { "-MM" } else { "-M" }.into();
    host.run("host compiler", &args, &build).map_err(CompileError::from)?;
    Ok((host_headers(&depfile)?, build.log.take()))
}

/// nvcc's `-E` of a host file: the host compiler's preprocessed text of `input`, read as
/// [`compile_host_file`] compiles it (`-E` in place of `-c`: nvcc runs `gcc -E` for it), and
/// what ran. The caller adds nvcc's identity macros ([`identity_macros`]) to `options`, as
/// nvcc gives them: sccache tells nvcc by them (docs/SCCACHE.md).
pub fn preprocess_host_file(input: &Path, program: &ProgramOptions, options: &CompileOptions) -> Result<(Vec<u8>, Vec<ToolRun>), BuildError> {
    let HostRun { host, build, work } = HostRun::new(program, options)?;
    let text = work.path().join("host.i");
    let mut args = HostRun::args(input, &text, program, options);
    args[0] = "-E".into();
    host.run("host compiler", &args, &build).map_err(CompileError::from)?;
    let bytes = std::fs::read(&text).map_err(|e| CompileError::from(ToolError::io("reading the host compiler's preprocessed text", &text, e)))?;
    Ok((bytes, build.log.take()))
}

/// The headers of the host compiler's dependency list at `depfile`, tidied as cdpc's own lists
/// are ([`super::tidy_headers`]): its prerequisites but the first, the source it compiled.
fn host_headers(depfile: &Path) -> Result<Vec<PathBuf>, BuildError> {
    let text = std::fs::read_to_string(depfile).map_err(|e| CompileError::from(ToolError::io("reading the host compiler's dependency list", depfile, e)))?;
    Ok(super::tidy_headers(crate::front::cuda::preamble::parse_depfile(&text).into_iter().skip(1).collect()))
}

/// `--lib` (nvcc's `-lib`): the static library of `inputs` at `output`, as nvcc makes one.
/// Each source is compiled as `-c` compiles it (a whole program's object, or with
/// `program.relocatable`, nvcc's `-rdc=true`, relocatable device code for a device link
/// later), each host file by the host compiler; objects are taken as they are. The archiver
/// (`Archiver::find`: `archiver`, `CDPC_AR`, `ar`) then makes the archive with `cr`, nvcc's
/// command, and `archive_args` (`-Xarchive`) before the archive's name, from members named
/// after their inputs (`kernels.o`; a name taken twice gets the input's place, `kernels-2.o`,
/// where nvcc's are its temporary files' names). The archive is made in the work folder and
/// written to `output` in one piece.
pub fn build_library(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, archiver: Option<&Path>, archive_args: &[String], options: &CompileOptions) -> Result<Built, BuildError> {
    super::on_large_stack(|| library_here(inputs, output, program, archiver, archive_args, options))
}

fn library_here(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, archiver: Option<&Path>, archive_args: &[String], options: &CompileOptions) -> Result<Built, BuildError> {
    if inputs.is_empty() {
        return Err(CompileError::Usage("nothing to archive: give a source or an object".into()).into());
    }
    let guard = OutputGuard { inputs: inputs.iter().map(|i| i.path().to_path_buf()).collect(), overwrite: options.overwrite };
    let out_file = OutputFile::prepare_guarded(output, guard).map_err(CompileError::from)?;
    let archiver = crate::toolchain::Archiver::find(archiver).map_err(CompileError::from)?;
    // CUDA's headers' folder for the host files, where a toolkit is found (a library needs it
    // for nothing else); the host compiler is looked for at the first host file.
    let tools = inputs.iter().any(|i| matches!(i, ProgramInput::Host(_))).then(|| Toolchain::discover(&options.tools).ok()).flatten();
    let mut run = StepRun::new(program, options, tools, None)?;
    let members_dir = run.work.path().join("members");
    std::fs::create_dir(&members_dir).map_err(|e| CompileError::from(ToolError::io("making the library's folder", &members_dir, e)))?;
    let archive = run.work.path().join("library.a");
    for step in library_steps(inputs, output, program, options) {
        match step {
            Step::Archive { members, .. } => {
                let mut args: Vec<OsString> = vec!["cr".into()];
                args.extend(archive_args.iter().map(OsString::from));
                args.push(archive.clone().into());
                args.extend(members.iter().map(|m| run.place(m).into_os_string()));
                archiver.run(&args, &run.build).map_err(CompileError::from)?;
            }
            step => run.run(step)?,
        }
    }
    let bytes = std::fs::read(&archive).map_err(|e| CompileError::from(ToolError::io("reading the archive", &archive, e)))?;
    out_file.commit(&bytes).map_err(CompileError::from)?;
    Ok(run.finish())
}

/// The library's member names of `inputs` ([`build_library`]): each input's stem with `.o`
/// (`input.o` for none), a name taken already with the input's place (`kernels-2.o`).
fn member_names(inputs: &[ProgramInput]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (index, input) in inputs.iter().enumerate() {
        let base = input.path().file_stem().map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty()).unwrap_or_else(|| "input".into());
        let mut name = format!("{base}.o");
        if names.contains(&name) {
            name = format!("{base}-{}.o", index + 1);
        }
        names.push(name);
    }
    names
}

/// The steps of [`build_library`]: each source compiled and each host file compiled into the
/// library's folder, each object copied there, then the archiver over the members.
fn library_steps(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut members = Vec::new();
    for (input, name) in inputs.iter().zip(member_names(inputs)) {
        let member = jobs::in_work(&format!("members/{name}"));
        steps.push(match input {
            ProgramInput::Source(path) => Step::Compile { source: path.clone(), options: source_options(path, options, program.relocatable), object: member.clone() },
            ProgramInput::Host(path) => Step::HostCompile { source: path.clone(), object: member.clone() },
            ProgramInput::Object(path) => Step::Copy { object: path.clone(), member: member.clone() },
        });
        members.push(member);
    }
    steps.push(Step::Archive { members, output: output.to_path_buf() });
    steps
}

/// The jobs of [`build_library`], for `cdpc -###`: its steps, as it runs them.
pub fn library_jobs(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Vec<Job> {
    library_steps(inputs, output, program, options).iter().map(|step| step.job(options)).collect()
}

fn host_compile_job(path: &Path, object: &Path) -> Job {
    Job::new(Action::HostCompile, vec![path.to_path_buf()], Output::File(object.to_path_buf()), "the host compiler's object")
}

/// An object given to a program's build, placed in the links it takes part in: the host link
/// unless it is a bare device object, the device link unless it is a shared library; whether it
/// holds relocatable device code. An input the linkers cannot read is theirs to report.
fn take_object(path: &Path, host_objects: &mut Vec<PathBuf>, device_objects: &mut Vec<PathBuf>) -> bool {
    let object = Object::of(&std::fs::read(path).unwrap_or_default());
    if !object.device_only {
        host_objects.push(path.to_path_buf());
    }
    if !is_shared_library(path) {
        device_objects.push(path.to_path_buf());
    }
    object.relocatable
}

/// How many of a program's compile steps compile relocatable CUDA C++ (the sources whose
/// objects can carry their device IR).
fn cuda_sources(steps: &[Step]) -> usize {
    steps.iter().filter(|s| matches!(s, Step::Compile { options, .. } if Language::of(options) == Language::Cuda && !options.whole_program)).count()
}

/// Whether the program of `inputs` (and the `-l` archives `libraries`) has one source and no
/// other input that may hold device code: its whole-program module is then all of the
/// program's device code ([`CompileOptions::sole_device_source`]). A host file (C, C++) holds
/// none; an object, archive or shared library cdpc cannot read may.
fn sole_device_source(inputs: &[ProgramInput], libraries: &[PathBuf]) -> bool {
    let sources = inputs.iter().filter(|i| matches!(i, ProgramInput::Source(_))).count();
    let objects = inputs.iter().filter_map(|i| match i {
        ProgramInput::Object(path) => Some(path),
        _ => None,
    });
    sources == 1 && !objects.chain(libraries).any(|path| pool::may_hold_device_code(path))
}

/// The steps of [`build_program`]: each source compiled and each host file compiled into the
/// work folder, the device link where relocatable device code takes part (an input that holds
/// such code, or a device library among `-l`), then the host link. Every decision of the build
/// is taken here, before anything runs.
fn program_steps(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Vec<Step> {
    let mut steps = Vec::new();
    // The objects, in input order: what the host link takes; device-only objects go to nvlink alone.
    let mut host_objects: Vec<PathBuf> = Vec::new();
    let mut device_objects: Vec<PathBuf> = Vec::new();
    // The device link, where relocatable device code takes part (nvcc's `-rdc=true` link; a
    // program of whole-program objects has none, as nvcc's).
    let mut relocatable = program.relocatable;
    for (index, input) in inputs.iter().enumerate() {
        match input {
            ProgramInput::Source(path) => {
                let object = jobs::in_work(&object_name(index, path));
                let source = source_options(path, options, program.relocatable);
                relocatable |= !source.whole_program;
                if source.emit == Emit::HostObject {
                    host_objects.push(object.clone());
                }
                device_objects.push(object.clone());
                steps.push(Step::Compile { source: path.clone(), options: source, object });
            }
            ProgramInput::Host(path) => {
                let object = jobs::in_work(&object_name(index, path));
                steps.push(Step::HostCompile { source: path.clone(), object: object.clone() });
                host_objects.push(object.clone());
                device_objects.push(object);
            }
            ProgramInput::Object(path) => relocatable |= take_object(path, &mut host_objects, &mut device_objects),
        }
    }
    let libraries = device_libraries(program);
    relocatable |= libraries.iter().any(|l| std::fs::read(l).is_ok_and(|bytes| holds_relocatable_device_code(&bytes)));
    if !relocatable && !program.shared && sole_device_source(inputs, &libraries) {
        for step in &mut steps {
            if let Step::Compile { options, .. } = step {
                options.sole_device_source = options.whole_program;
            }
        }
    }
    // Relocatable CUDA C++ sources compiled and linked here: the device link sees all of them,
    // and compiles their IR together by default (`-dlto`'s link-time compile, `driver/lto.rs`).
    let lto = options.device_lto || (relocatable && options.optimizes_launches() && cuda_sources(&steps) >= 2);
    if lto {
        for step in &mut steps {
            if let Step::Compile { options, .. } = step {
                options.device_lto = true;
            }
        }
    }
    let stub = relocatable.then(|| jobs::in_work("dlink.o"));
    if let Some(stub) = &stub {
        let shared = host_objects.iter().filter(|o| !device_objects.contains(o)).cloned().collect();
        steps.push(Step::DeviceLink { objects: device_objects, libraries, shared, archs: link_archs(options), output: stub.clone(), lto });
    }
    steps.push(Step::HostLink { stub, objects: host_objects, output: output.to_path_buf(), shared: program.shared });
    steps
}

/// The jobs of [`build_program`], for `cdpc -###`: its steps, as it runs them.
pub fn program_jobs(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Vec<Job> {
    program_steps(inputs, output, program, options).iter().map(|step| step.job(options)).collect()
}

/// Builds the program (or with `program.shared` the shared library) of `inputs` at `output`.
pub fn build_program(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Result<Built, BuildError> {
    super::on_large_stack(|| build_here(inputs, output, program, options))
}

fn build_here(inputs: &[ProgramInput], output: &Path, program: &ProgramOptions, options: &CompileOptions) -> Result<Built, BuildError> {
    if inputs.is_empty() {
        return Err(CompileError::Usage("nothing to build: give a source or an object".into()).into());
    }
    let guard = OutputGuard { inputs: inputs.iter().map(|i| i.path().to_path_buf()).collect(), overwrite: options.overwrite };
    let out_file = OutputFile::prepare_guarded(output, guard).map_err(CompileError::from)?;
    // Both links need the tools and the host compiler: looked for before anything compiles.
    let tools = Toolchain::discover(&options.tools).map_err(CompileError::from)?;
    let host = HostCompiler::find(program.host_compiler.as_deref()).map_err(CompileError::from)?;
    let mut run = StepRun::new(program, options, Some(tools), Some(host))?;
    let linked = run.work.path().join("program");
    for step in program_steps(inputs, output, program, options) {
        match step {
            Step::HostLink { stub, objects, .. } => {
                let stub = stub.map(|s| run.place(&s));
                let objects: Vec<PathBuf> = objects.iter().map(|o| run.place(o)).collect();
                let (Some(tools), Some(host)) = (&run.tools, &run.host) else { return Err(not_found()) };
                let cuda_lib = tools.cuda_lib_dir();
                let mut args = host_link_args(stub.as_deref(), &objects, &linked, program, options, cuda_lib);
                // Without libomp the host side was compiled without OpenMP's code (`W0807`), and the host
                // compiler's `-fopenmp` links its own runtime for `omp.h`'s functions.
                if let (true, Ok(dir)) = (asks_for_openmp(&options.cuda_cxx.host_args), libomp_dir()) {
                    args = with_libomp(args, &dir);
                }
                host.run("host linker", &args, &run.build).map_err(link_failure)?;
                // The link line as nvcc's `-v` shows it, which CMake reads for its implicit link folders
                // (the `LIBRARIES` value, quoted) and its host linker: the output where it went.
                let lib = format!(" -L{} ", cuda_lib.display());
                for mut logged in run.build.log.take() {
                    if logged.tool == "host linker" {
                        logged.command = logged.command.replace(&lib, &format!(" \"{}\" ", lib.trim())).replace(&format!("-o {}", linked.display()), &format!("-o \"{}\"", output.display()));
                    }
                    run.build.log.push(logged);
                }
            }
            step => run.run(step)?,
        }
    }
    let bytes = std::fs::read(&linked).map_err(|e| CompileError::from(ToolError::io("reading the linked program", &linked, e)))?;
    out_file.commit(&bytes).map_err(CompileError::from)?;
    make_executable(output).map_err(|e| CompileError::from(ToolError::OutputIo { path: output.to_path_buf(), source: e }))?;
    Ok(run.finish())
}

/// One step of a program's or a library's build, with the decisions the build takes (which
/// objects each link takes, whether a device link runs) made before anything runs: the build
/// runs these steps in order and `cdpc -###` prints them ([`Step::job`]), so what is printed is
/// what runs. Paths in the work folder are written `$WORK/...` ([`jobs::in_work`]) until the
/// build places them in its folder ([`StepRun::place`]).
// A build has a handful of steps: the size of `Compile`'s options costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum Step {
    /// A source compiled by cdpc with the options a program's sources take ([`source_options`]).
    Compile { source: PathBuf, options: CompileOptions, object: PathBuf },
    /// A host file compiled by the host compiler.
    HostCompile { source: PathBuf, object: PathBuf },
    /// An object taken into a library's folder as it is.
    Copy { object: PathBuf, member: PathBuf },
    /// nvlink over `objects` and the device libraries among `-l` for each of `archs`, then the
    /// registration object at `output`; the program's `shared` libraries are read for the
    /// pool's decision alone ([`pool_decision`]).
    /// `lto`: the objects' device IR compiled together first (`-dlto`, or by default where
    /// the build compiled two or more relocatable CUDA C++ sources itself).
    DeviceLink { objects: Vec<PathBuf>, libraries: Vec<PathBuf>, shared: Vec<PathBuf>, archs: Vec<SmVersion>, output: PathBuf, lto: bool },
    /// The host compiler as linker: the device link's object first, where there is one.
    HostLink { stub: Option<PathBuf>, objects: Vec<PathBuf>, output: PathBuf, shared: bool },
    /// The archiver's `cr` over a library's members.
    Archive { members: Vec<PathBuf>, output: PathBuf },
}

impl Step {
    /// The step as `cdpc -###` prints it, in a build of `options`.
    fn job(&self, options: &CompileOptions) -> Job {
        match self {
            Step::Compile { source, options, object } => Job::compile(source, Output::File(object.clone()), options),
            Step::HostCompile { source, object } => host_compile_job(source, object),
            Step::Copy { object, member } => Job::new(Action::Archive, vec![object.clone()], Output::File(member.clone()), "copied as it is"),
            Step::DeviceLink { objects, libraries, archs, output, lto, .. } => {
                let archs: Vec<String> = archs.iter().map(ToString::to_string).collect();
                let inputs = objects.iter().chain(libraries).cloned().collect();
                let options = CompileOptions { device_lto: *lto, ..options.clone() };
                Job::new(Action::DeviceLink, inputs, Output::File(output.clone()), device_link_note(&archs.join(", "), &options))
            }
            Step::HostLink { stub, objects, output, shared } => {
                let what = if *shared { "a shared library" } else { "a program" };
                Job::new(Action::HostLink, stub.iter().chain(objects).cloned().collect(), Output::File(output.clone()), format!("the host compiler as linker: {what}"))
            }
            Step::Archive { members, output } => Job::new(Action::Archive, members.clone(), Output::File(output.clone()), "the archiver's `cr`: a static library"),
        }
    }
}

/// What a program's build rules out by finding the tools and the host compiler first.
fn not_found() -> BuildError {
    CompileError::Usage("the NVIDIA tools or the host compiler were not found".into()).into()
}

/// A build running its [`Step`]s: its work folder, its options (the tools' log) and what the
/// steps so far said.
struct StepRun<'a> {
    program: &'a ProgramOptions,
    options: &'a CompileOptions,
    build: BuildOptions,
    work: crate::toolchain::WorkDir,
    tools: Option<Toolchain>,
    host: Option<HostCompiler>,
    warnings: Vec<SourceWarnings>,
    tool_runs: Vec<ToolRun>,
    timings: Timings,
    /// Each source's object as nvlink names it, and the source's name.
    names: Vec<(String, String)>,
}

impl<'a> StepRun<'a> {
    fn new(program: &'a ProgramOptions, options: &'a CompileOptions, tools: Option<Toolchain>, host: Option<HostCompiler>) -> Result<StepRun<'a>, BuildError> {
        let build = build_options(options);
        let work = work_dir(&build).map_err(CompileError::from)?;
        Ok(StepRun { program, options, build, work, tools, host, warnings: Vec::new(), tool_runs: Vec::new(), timings: Timings::default(), names: Vec::new() })
    }

    /// A step's path where the build puts it: `$WORK/...` in the work folder.
    fn place(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(jobs::WORK) {
            Ok(rest) => self.work.path().join(rest),
            Err(_) => path.to_path_buf(),
        }
    }

    /// The host compiler, looked for at the first host file where the build did not look for
    /// it first (a library's): the field holds it once this succeeds.
    fn find_host(&mut self) -> Result<(), BuildError> {
        if self.host.is_none() {
            self.host = Some(HostCompiler::find(self.program.host_compiler.as_deref()).map_err(CompileError::from)?);
        }
        Ok(())
    }

    /// Runs a compile, a host compile, a copy or a device link; the links' outputs are the
    /// caller's to commit.
    fn run(&mut self, step: Step) -> Result<(), BuildError> {
        match step {
            Step::Compile { source, options, object } => {
                let object = self.place(&object);
                let (warnings, runs, timings) = compile_source(&source, &options, &object)?;
                self.names.push((object.display().to_string(), warnings.name.clone()));
                self.warnings.push(warnings);
                self.tool_runs.extend(runs);
                self.timings.0.extend(timings.0);
            }
            Step::HostCompile { source, object } => {
                let object = self.place(&object);
                // CUDA's headers' folder where the toolkit has one.
                let include = self.tools.as_ref().and_then(Toolchain::cuda_include_dir);
                let args = host_compile_args(&source, &object, self.options, self.program, include.as_deref());
                self.find_host()?;
                let Some(host) = &self.host else { return Err(not_found()) };
                host.run("host compiler", &args, &self.build).map_err(CompileError::from)?;
            }
            Step::Copy { object, member } => {
                let member = self.place(&member);
                std::fs::copy(&object, &member).map_err(|e| CompileError::from(ToolError::io("reading an object for the library", &object, e)))?;
            }
            Step::DeviceLink { objects, libraries, shared, archs, output, lto } => {
                let objects: Vec<PathBuf> = objects.iter().map(|o| self.place(o)).collect();
                let output = self.place(&output);
                self.build.link_libraries.extend(libraries);
                let read: Vec<PathBuf> = objects.iter().chain(&self.build.link_libraries).chain(&shared).cloned().collect();
                let (pool, remark) = pool_decision(&read, self.options, &self.names);
                let Some(tools) = &self.tools else { return Err(not_found()) };
                let link = CompileOptions { device_lto: lto, ..self.options.clone() };
                let lto = lto.then_some(&link);
                let (stub, said) =
                    device_link_object(tools, &objects, &archs, &self.build, pool.then_some(&self.options.target), lto).map_err(|e| device_link_failure(e, &self.warnings, &self.names))?;
                self.warnings.extend(link_remark(remark));
                self.warnings.extend(link_said(self.options.warnings.apply(said)));
                std::fs::write(&output, &stub).map_err(|e| CompileError::from(ToolError::io("writing the device link's object", &output, e)))?;
            }
            Step::HostLink { .. } | Step::Archive { .. } => return Err(CompileError::Usage("a link step is run by its build, which commits the output".into()).into()),
        }
        Ok(())
    }

    /// What the build said and ran.
    fn finish(mut self) -> Built {
        let runs = self.build.log.take();
        self.timings.add_tool_runs(&runs);
        self.tool_runs.extend(runs);
        Built { warnings: self.warnings, tool_runs: self.tool_runs, timings: self.timings }
    }
}

/// Whether the object or archive at `path` holds host code: an x86-64 ELF object (`EM_X86_64`,
/// 62), or an archive whose first ELF member is one, or a shared library.
pub fn holds_host_code(path: &Path) -> bool {
    if is_shared_library(path) {
        return true;
    }
    let Ok(bytes) = std::fs::read(path) else { return false };
    let elf = if bytes.starts_with(b"!<arch>\n") { bytes.windows(4).position(|w| w == b"\x7fELF") } else { bytes.starts_with(b"\x7fELF").then_some(0) };
    elf.and_then(|at| bytes.get(at + 18..at + 20)).is_some_and(|m| u16::from_le_bytes([m[0], m[1]]) == 62)
}

/// Whether an object's or archive's `bytes` carry relocatable device code: a bare device
/// object, or a host object (or an archive member) with nvcc's relocatable fat-binary section
/// `__nv_relfatbin` (`-dc` objects, nvcc's and cdpc's).
fn holds_relocatable_device_code(bytes: &[u8]) -> bool {
    archive::is_device_object(bytes) || bytes.windows(14).any(|w| w == b"__nv_relfatbin")
}

/// The host compiler's link line, nvcc's: the registration object first, the objects, then
/// the libraries in a group (libcudadevrt's host objects are pulled in by the registration
/// object, the runtime's by everything).
pub fn host_link_args(stub: Option<&Path>, objects: &[PathBuf], output: &Path, program: &ProgramOptions, options: &CompileOptions, cuda_lib: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    if program.shared {
        args.push("-shared".into());
    }
    args.extend(options.cuda_cxx.host_args.iter().map(OsString::from));
    args.push("-Wl,--start-group".into());
    args.extend(stub.map(OsString::from));
    args.extend(objects.iter().map(OsString::from));
    for dir in &program.library_dirs {
        args.push(concat("-L", dir));
    }
    args.push(concat("-L", cuda_lib));
    for lib in &program.libraries {
        args.push(format!("-l{lib}").into());
    }
    args.push("-lcudadevrt".into());
    match program.cudart {
        Cudart::Static => args.extend(["-lcudart_static", "-lrt", "-lpthread", "-ldl"].map(OsString::from)),
        Cudart::Shared => {
            if cuda_lib.join("libcudart.so").exists() {
                args.push("-lcudart".into());
            } else {
                // The wheels ship only the versioned name.
                let versioned =
                    std::fs::read_dir(cuda_lib).ok().and_then(|d| d.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("libcudart.so.")).min());
                args.push(format!("-l:{}", versioned.unwrap_or_else(|| "libcudart.so".into())).into());
            }
            args.push(concat("-Wl,-rpath,", cuda_lib));
        }
        Cudart::None => {}
    }
    args.push("-Wl,--end-group".into());
    args.extend(program.linker_args.iter().map(|a| OsString::from(format!("-Wl,{a}"))));
    args.push("-o".into());
    args.push(output.into());
    args
}

/// Whether the host side's options (nvcc's `-Xcompiler`) ask for OpenMP: `-fopenmp` or
/// `-fopenmp=<runtime>` (`-fopenmp-simd` needs no runtime).
fn asks_for_openmp(host_args: &[String]) -> bool {
    host_args.iter().any(|a| a == "-fopenmp" || a.starts_with("-fopenmp="))
}

/// The folder of LLVM's OpenMP runtime, `libomp.so`. Clang compiles the host side of a `.cu`
/// file, and its OpenMP calls that runtime (`__kmpc_fork_call`, ...), not GCC's libgomp
/// (`GOMP_parallel`), which the host compiler's `-fopenmp` links (measured: the link fails with
/// `__kmpc_*` undefined). libomp also serves GCC's `GOMP_*` calls, so objects g++ compiled with
/// `-fopenmp` link with it too. Looked for in order, each described where none holds it:
///
/// 1. `CDPC_LIBOMP_DIR` (when set and not empty, the only place looked at);
/// 2. the LLVM of Clang's resource headers (`<llvm>/lib` of `<llvm>/lib/clang/22`);
/// 3. the LLVM cdpc was built with;
/// 4. `/usr/lib/llvm-22/lib` (Debian's and Ubuntu's `libomp-22-dev`).
pub fn libomp_dir() -> Result<PathBuf, Vec<String>> {
    let mut candidates: Vec<(PathBuf, String)> = Vec::new();
    match std::env::var_os("CDPC_LIBOMP_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => candidates.push((PathBuf::from(dir), "CDPC_LIBOMP_DIR".into())),
        None => {
            let resource = crate::front::cuda::in_process::find_resource_dir(std::env::var_os("CDPC_CLANG_RESOURCE_DIR").as_deref(), std::env::var_os("LLVM_SYS_221_PREFIX").as_deref());
            if let Some(lib) = resource.ok().as_deref().and_then(Path::parent).and_then(Path::parent) {
                candidates.push((lib.to_path_buf(), "the LLVM of Clang's resource headers".into()));
            }
            candidates.push((PathBuf::from(crate::front::cuda::in_process::BUILT_LLVM_LIBDIR), "the LLVM cdpc was built with".into()));
            candidates.push((PathBuf::from("/usr/lib/llvm-22/lib"), "the system's LLVM 22".into()));
        }
    }
    let mut searched = Vec::new();
    for (dir, what) in candidates {
        if dir.join("libomp.so").is_file() {
            return Ok(dir);
        }
        searched.push(format!("{what}: no `{}`", dir.join("libomp.so").display()));
    }
    Err(searched)
}

/// The host link with LLVM's OpenMP runtime in place of the host compiler's: `-fopenmp` (which
/// makes g++ link libgomp) out, `-pthread` and libomp from `dir` in, with a run path to it.
fn with_libomp(args: Vec<OsString>, dir: &Path) -> Vec<OsString> {
    let mut out: Vec<OsString> = args.into_iter().filter(|a| !(a == "-fopenmp" || a.to_str().is_some_and(|a| a.starts_with("-fopenmp=")))).collect();
    let at = out.iter().position(|a| a == "-Wl,--end-group").unwrap_or(out.len());
    let libomp: Vec<OsString> = vec![concat("-L", dir), "-lomp".into(), concat("-Wl,-rpath,", dir), "-pthread".into()];
    out.splice(at..at, libomp);
    out
}

/// A failed host link: the host linker's error, and where its message names the missing
/// registration of a device link, `E0803` with what to change.
fn link_failure(e: ToolError) -> BuildError {
    if let ToolError::Failed { stderr, .. } = &e {
        if let Some(mut d) = missing_device_link(stderr).or_else(|| missing_main(stderr)) {
            d.notes.push(e.to_string());
            return BuildError::Link(vec![d]);
        }
    }
    BuildError::Other(e.into())
}

/// `E0806`: the program's host link found no `main` (GNU ld's "undefined reference to
/// `main'", lld's and mold's "undefined symbol: main"), as where a file of kernels alone is
/// built as a program: what to write instead.
pub fn missing_main(stderr: &str) -> Option<Diagnostic> {
    let missing = stderr.lines().any(|l| l.contains("undefined reference to `main'") || l.trim_end().ends_with("undefined symbol: main"));
    if !missing {
        return None;
    }
    let mut d = Diagnostic::new(Code::ProgramWithoutMain, Span::default(), "no `main` in the program: without `-c`, `-dc` or a device output, cdpc builds a program, as nvcc does")
        .with_note(
            "to compile without linking: `-c` writes an object (`-dc` one with relocatable device code, for a device link later); `-o NAME.cubin` (`.ptx`, `.fatbin`) writes the device code alone",
        )
        .with_note("to build the program: name the file that defines `main` too (`cdpc kernels.cu main.cpp -o app`)");
    d.labels.clear();
    Some(d)
}

/// The symbol a device link's registration object defines for each module it linked, which the
/// module's `-dc` object references (nvcc's `crt/link.stub`).
const REGISTER: &str = "__cudaRegisterLinkedBinary_";
/// The fat binary's wrapper that a device link's object also defines per module.
const FATBINWRAP: &str = "__fatbinwrap_";

/// What a host linker's message says about device links: the registration symbol it names, the
/// module (the object's source file), and whether it is defined twice rather than missing.
struct Registration {
    symbol: String,
    module: String,
    twice: bool,
}

/// The first line of `stderr` about a missing `__cudaRegisterLinkedBinary_<id>` or a doubled
/// one (or a doubled `__fatbinwrap_<id>`: two device links' objects meet).
fn registration_problem(stderr: &str) -> Option<Registration> {
    // The error's own line, not a context line (`b.o: in function `__cudaRegisterLinkedBinary_x':`).
    let twice = |l: &str| l.contains("multiple definition") && (l.contains(REGISTER) || l.contains(FATBINWRAP));
    let missing = |l: &str| l.contains("undefined") && l.contains(REGISTER);
    let line = stderr.lines().find(|l| twice(l) || missing(l)).or_else(|| stderr.lines().find(|l| l.contains(REGISTER)))?;
    let prefix = if line.contains(REGISTER) { REGISTER } else { FATBINWRAP };
    let start = line.find(prefix)?;
    let symbol: String = line[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let module = symbol.strip_prefix(prefix.trim_end_matches('_')).unwrap_or_default().to_string();
    Some(Registration { symbol, module, twice: line.contains("multiple definition") })
}

/// What to change for a missing device link, for cdpc's own link and a foreign one.
const ADD_THE_DEVICE_LINK: &str = "link the program with cdpc (`cdpc a.o b.o -o app`), which runs the device link; or add a device link (`cdpc -dlink a.o b.o -o dlink.o`) and give its object to the host linker; with CMake, set CUDA_SEPARABLE_COMPILATION (or CUDA_RESOLVE_DEVICE_SYMBOLS) on the target that links these objects";
/// What to change for a doubled device link.
const ONE_DEVICE_LINK: &str = "each object's device code must be in exactly one device link: link the program's `-rdc` objects with one `cdpc` command (or one `cdpc -dlink`), and do not pass another library's device-link object together with its objects";

/// `E0803` for a host linker's message about `__cudaRegisterLinkedBinary_<id>` (an object whose
/// device code no device link took in) or its `multiple definition` (two device links of one
/// object), naming the module, which is the object's source file.
pub fn missing_device_link(stderr: &str) -> Option<Diagnostic> {
    let found = registration_problem(stderr)?;
    let module = &found.module;
    let (message, help) = if found.twice {
        (format!("two device links registered the module `{module}`"), ONE_DEVICE_LINK)
    } else {
        (format!("the device code of module `{module}` was compiled for separate compilation (`-rdc=true`/`-dc`) but no device link took it in"), ADD_THE_DEVICE_LINK)
    };
    let mut d = Diagnostic::new(Code::DeviceLinkMissing, Span::default(), message).with_note(help);
    d.labels.clear();
    Some(d)
}

/// The CUDA runtime's static library's own needs (`libcudart_static.a` calls them), which a
/// link without `-ldl -lrt -lpthread` misses on a C library that keeps them apart (glibc before
/// 2.34).
const RUNTIME_NEEDS: &[(&str, &str)] = &[
    ("dlopen", "-ldl"),
    ("dlsym", "-ldl"),
    ("dlclose", "-ldl"),
    ("dlerror", "-ldl"),
    ("dladdr", "-ldl"),
    ("dlvsym", "-ldl"),
    ("shm_open", "-lrt"),
    ("shm_unlink", "-lrt"),
    ("clock_gettime", "-lrt"),
    ("pthread_create", "-lpthread"),
    ("pthread_join", "-lpthread"),
    ("pthread_mutexattr_settype", "-lpthread"),
    ("pthread_key_create", "-lpthread"),
    ("pthread_once", "-lpthread"),
    ("pthread_getspecific", "-lpthread"),
    ("pthread_setspecific", "-lpthread"),
    ("sem_init", "-lpthread"),
];

/// One object of a link's command line (an archive's member as `libx.a(a.o)`) and its symbols.
struct LinkObject {
    name: String,
    /// The file as a command line names it (the archive, for a member).
    file: String,
    symbols: Vec<archive::Symbol>,
}

/// The objects and archive members a link command line names (files, `@` response files,
/// `-lNAME` found as `libNAME.a` or `libNAME.so` in its `-L` folders), read from `cwd`; what is
/// not an ELF object or archive is left out.
fn link_objects(args: &[String], cwd: &Path) -> Vec<LinkObject> {
    let mut words: Vec<String> = Vec::new();
    for arg in args {
        match arg.strip_prefix('@').map(|f| std::fs::read_to_string(cwd.join(f))) {
            Some(Ok(text)) => words.extend(text.split_whitespace().map(|w| w.trim_matches(['"', '\'']).to_string())),
            _ => words.push(arg.clone()),
        }
    }
    let dirs: Vec<PathBuf> = words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| match w.strip_prefix("-L") {
            Some("") => words.get(i + 1).map(PathBuf::from),
            Some(d) => Some(PathBuf::from(d)),
            None => None,
        })
        .collect();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut words = words.iter().peekable();
    while let Some(word) = words.next() {
        if word == "-o" || word == "-L" {
            words.next();
            continue;
        }
        let library = if word == "-l" { words.next().map(String::as_str) } else { word.strip_prefix("-l") };
        if let Some(name) = library {
            let found = dirs.iter().flat_map(|d| [d.join(format!("lib{name}.a")), d.join(format!("lib{name}.so"))]).find(|p| cwd.join(p).is_file());
            files.extend(found.map(|p| (p.display().to_string(), cwd.join(p))));
        } else if !word.starts_with('-') {
            files.push((word.clone(), cwd.join(word)));
        }
    }
    let mut out = Vec::new();
    for (name, path) in files {
        let Ok(bytes) = std::fs::read(&path) else { continue };
        if let Some(members) = archive::members(&bytes) {
            for m in members {
                if let Some(symbols) = archive::elf_symbols(&m.bytes) {
                    out.push(LinkObject { name: format!("{name}({})", m.name), file: name.clone(), symbols });
                }
            }
        } else if let Some(symbols) = archive::elf_symbols(&bytes) {
            out.push(LinkObject { file: name.clone(), name, symbols });
        }
    }
    out
}

/// `E0804`: a host link that cdpc did not run (g++, CMake's link, a Makefile's; cdpc as its
/// launcher, `cdpc --link-launcher c++ ...`) failed with one of the dynamic-parallelism link
/// errors, its `stderr` read and its command line's objects (`args`, read from `cwd`) searched
/// for who references and who defines the symbol: a missing device link (an object's
/// `__cudaRegisterLinkedBinary_<id>` undefined), two device links (the symbol or its
/// `__fatbinwrap_<id>` defined twice), or the static CUDA runtime's system libraries missing.
/// `None` for any other failure.
pub fn foreign_link_failure(stderr: &str, args: &[String], cwd: &Path) -> Option<Diagnostic> {
    let quoted = |names: &[&str]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    if let Some(found) = registration_problem(stderr) {
        let objects = link_objects(args, cwd);
        let module = &found.module;
        let with = |defined: bool, symbol: &str| objects.iter().filter(|o| o.symbols.iter().any(|s| s.name == symbol && s.defined == defined)).map(|o| o.name.as_str()).collect::<Vec<_>>();
        let mut d = if found.twice {
            let definers = with(true, &found.symbol);
            let message = match definers.as_slice() {
                [] => format!("two device links registered the module `{module}` (`{}` is defined twice)", found.symbol),
                names => format!("two device links registered the module `{module}`: {} define `{}`", quoted(names), found.symbol),
            };
            Diagnostic::new(Code::ForeignLinkFailed, Span::default(), message)
                .with_note(ONE_DEVICE_LINK)
                .with_note("drop one of the device-link objects (`-dlink`'s, or CMake's `cmake_device_link.o`); with CMake, a static library with CUDA_RESOLVE_DEVICE_SYMBOLS ON linked into a target that runs its own device link over the same objects: turn it OFF on the library")
        } else {
            let users = with(false, &found.symbol);
            // Every object of the link whose device code needs a device link that none provides.
            let defined: Vec<&str> = objects.iter().flat_map(|o| o.symbols.iter().filter(|s| s.defined && s.name.starts_with(REGISTER)).map(|s| s.name.as_str())).collect();
            // (libcudadevrt's objects reference one too: the device link always takes it in.)
            let needing: Vec<&str> = objects
                .iter()
                .filter(|o| !o.name.contains("cudadevrt"))
                .filter(|o| o.symbols.iter().any(|s| !s.defined && s.name.starts_with(REGISTER) && !defined.contains(&s.name.as_str())))
                .map(|o| o.name.as_str())
                .collect();
            let mut files: Vec<&str> = Vec::new();
            for o in objects.iter().filter(|o| needing.contains(&o.name.as_str())) {
                if !files.contains(&o.file.as_str()) {
                    files.push(&o.file);
                }
            }
            let message = match users.as_slice() {
                [] => format!("the device code of module `{module}` was compiled for separate compilation (`-rdc=true`/`-dc`) but no device link took it in"),
                names => format!("{} holds relocatable device code (`-rdc=true`/`-dc`, module `{module}`) that no device link took in", quoted(names)),
            };
            let objects_named = if files.is_empty() { "a.o b.o".to_string() } else { files.join(" ") };
            let mut d = Diagnostic::new(Code::ForeignLinkFailed, Span::default(), message)
                .with_note(format!("`{}` is what a device link's object defines for it, and nothing on this link's command line does", found.symbol));
            if needing.len() > 1 || (needing.len() == 1 && users.first() != needing.first()) {
                d = d.with_note(format!("the objects of this link whose device code needs the device link: {}", quoted(&needing)));
            }
            d.with_note(format!(
                "run the device link and add its object to this link: `cdpc -dlink {objects_named} -o dlink.o` (nvcc's `-dlink` too); or link through cdpc, which runs it (`cdpc {objects_named} main.o -o app`)"
            ))
            .with_note("with CMake: `CUDA_SEPARABLE_COMPILATION ON` on the library that compiles these files, and `CUDA_RESOLVE_DEVICE_SYMBOLS ON` on the target whose link must run the device link (a static library's objects get it where a shared library or an executable links them); or compile without `-rdc` where no file calls another's device code or launches from the device")
        };
        d.labels.clear();
        return Some(d);
    }
    let missing: Vec<(&str, &str)> = RUNTIME_NEEDS
        .iter()
        .copied()
        .filter(|(f, _)| stderr.lines().any(|l| (l.contains("undefined reference to") && l.contains(&format!("`{f}'"))) || l.contains(&format!("undefined symbol: {f}"))))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut libraries: Vec<&str> = missing.iter().map(|(_, l)| *l).collect();
    libraries.sort();
    libraries.dedup();
    let functions: Vec<&str> = missing.iter().map(|(f, _)| *f).collect();
    let mut d = Diagnostic::new(Code::ForeignLinkFailed, Span::default(), format!("the CUDA runtime's static library needs system libraries this link leaves out: {} undefined", quoted(&functions)))
        .with_note(format!(
            "add {} after `-lcudart_static` (nvcc's and cdpc's own links pass `-lcudart_static -lrt -lpthread -ldl`)",
            libraries.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(" ")
        ))
        .with_note("with CMake, link `CUDA::cudart_static` (find_package(CUDAToolkit)), which brings them; or use the shared runtime (`--cudart shared`, `CUDA::cudart`)");
    d.labels.clear();
    Some(d)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)?;
    // `-o /dev/null`: the program went nowhere, and the device keeps its mode.
    if !meta.is_file() {
        return Ok(());
    }
    let mut permissions = meta.permissions();
    // What the umask lets a new file have, readable as it is, executable where readable.
    let mode = permissions.mode();
    permissions.set_mode(mode | ((mode & 0o444) >> 2));
    std::fs::set_permissions(path, permissions)
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_by_extension_as_nvcc() {
        assert_eq!(ProgramInput::classify(Path::new("a.cu"), false), ProgramInput::Source("a.cu".into()));
        assert_eq!(ProgramInput::classify(Path::new("k.cdp"), false), ProgramInput::Source("k.cdp".into()));
        assert_eq!(ProgramInput::classify(Path::new("main.cpp"), false), ProgramInput::Host("main.cpp".into()));
        assert_eq!(ProgramInput::classify(Path::new("util.c"), false), ProgramInput::Host("util.c".into()));
        assert_eq!(ProgramInput::classify(Path::new("main.cpp"), true), ProgramInput::Source("main.cpp".into()));
        assert_eq!(ProgramInput::classify(Path::new("libx.a"), true), ProgramInput::Object("libx.a".into()));
        // Shared libraries, with the version CMake gives them too.
        for lib in ["libx.so", "libx.so.1", "lib/libzfp.so.0.5.5", "lib.sox.so"] {
            assert_eq!(ProgramInput::classify(Path::new(lib), false), ProgramInput::Object(lib.into()), "{lib}");
            assert_eq!(ProgramInput::classify(Path::new(lib), true), ProgramInput::Object(lib.into()), "{lib}");
        }
        for source in ["x.so.cu", "libx.so.1a", "libx.so.", "libx.so..1", "x.sol", ".so", "data.sorted.cu"] {
            assert_eq!(ProgramInput::classify(Path::new(source), false), ProgramInput::Source(source.into()), "{source}");
        }
    }

    #[test]
    fn missing_registration_is_named() {
        let stderr = "/usr/bin/ld: /tmp/a.o: in function `__sti____cudaRegisterAll()':\na.cu:(.text+0x2d): undefined reference to `__cudaRegisterLinkedBinary_5576f701_4_a_cu_cdpc'\ncollect2: error: ld returned 1 exit status\n";
        let d = missing_device_link(stderr).unwrap();
        assert_eq!(d.code, Code::DeviceLinkMissing);
        assert!(d.message.contains("`_5576f701_4_a_cu_cdpc`"), "{}", d.message);
        let twice = "ld: b.o: multiple definition of `__cudaRegisterLinkedBinary_x_1_a_cu'; a.o: first defined here";
        assert!(missing_device_link(twice).unwrap().message.contains("two device links"));
        assert!(missing_device_link("undefined reference to `foo'").is_none());
        // ld's context line names the symbol first; the error is the line after it.
        let context = "ld: b.o: in function `__cudaRegisterLinkedBinary_x_1_a_cu':\n(.text+0x0): multiple definition of `__cudaRegisterLinkedBinary_x_1_a_cu'; a.o:(.text+0x0): first defined here\n";
        assert!(missing_device_link(context).unwrap().message.contains("two device links"));
    }

    #[test]
    fn a_link_without_main_is_named_for_each_linker() {
        for stderr in [
            "/usr/bin/ld: /usr/lib/x86_64-linux-gnu/Scrt1.o: in function `_start':\n(.text+0x17): undefined reference to `main'\ncollect2: error: ld returned 1 exit status\n",
            "ld.lld: error: undefined symbol: main\n>>> referenced by start.S:104\n",
            "mold: error: undefined symbol: main\n",
        ] {
            assert_eq!(missing_main(stderr).map(|d| d.code), Some(Code::ProgramWithoutMain), "{stderr}");
        }
        assert!(missing_main("undefined reference to `main_loop'\nld.lld: error: undefined symbol: mainly\n").is_none());
    }

    #[test]
    fn a_foreign_link_names_what_to_add_for_the_runtimes_libraries() {
        let stderr = "(.text+0x2b): undefined reference to `dlopen'\n(.text+0x4f): undefined reference to `clock_gettime'\n";
        let d = foreign_link_failure(stderr, &[], Path::new(".")).unwrap();
        assert_eq!(d.code, Code::ForeignLinkFailed);
        assert!(d.message.contains("`dlopen`") && d.notes[0].contains("`-ldl` `-lrt`"), "{d:?}");
        assert!(foreign_link_failure("ld: cannot find -lfoo", &[], Path::new(".")).is_none());
    }
}
