//! CUDA C++ sources (`.cu`): Clang's device compilation to LLVM bitcode ([`crate::front::cuda`]),
//! the launch pipeline on the IR ([`crate::pipeline`]), then PTX, as for `.cdp` sources.

use super::{CompileError, CompileOptions, HeaderList, Phase, Timings};
use crate::back::{self, BackendError, DebugLevel};
use crate::diag::{Code, Diagnostic, Span};
use crate::front::cdp::preprocess::MacroOption;
use crate::front::cuda;
use crate::front::cuda::setup::{precompiled_header_may_hide_errors, unresolved_functions, work_folder, ClangOutput, ClangSetup, Request};
use crate::pipeline::{self, SourceText};
use crate::toolchain::{BuildOptions, ToolRun, Toolchain};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::values::BasicValue;
use std::path::PathBuf;
use std::time::Instant;

/// What the Clang path produced, before the NVIDIA tools.
pub(crate) struct Generated {
    pub llvm_ir: Option<String>,
    pub ptx: Option<String>,
    pub warnings: Vec<Diagnostic>,
    pub timings: Timings,
    /// The headers Clang read, as [`CompileOptions::list_headers`] asks.
    pub headers: Vec<PathBuf>,
    /// Clang's device bitcode as it came, for a `-dc -dlto` object to carry
    /// ([`super::lto::carried`]); `None` otherwise.
    pub device_ir: Option<Vec<u8>>,
}

/// `-D`/`-U` as Clang spells them, in order, each named as Clang is given it
/// ([`cuda::macro_for_clang`]).
fn macro_args(options: &CompileOptions) -> Vec<String> {
    options
        .preprocess
        .macros
        .iter()
        .map(|m| match m {
            MacroOption::Define(d) => format!("-D{}", cuda::macro_for_clang(d)),
            MacroOption::Undefine(u) => format!("-U{}", cuda::macro_for_clang(u)),
        })
        .collect()
}

/// What `options` ask of Clang, as the CUDA C++ front end reads them.
fn request(options: &CompileOptions) -> Request<'_> {
    Request {
        target: options.target,
        opt_level: super::opt_level(options),
        debug: options.debug,
        fmad: options.fmad,
        float_math: options.float_math,
        cxx: &options.cuda_cxx,
        clang: &options.clang,
        input: options.preprocess.input.as_deref(),
        include_dirs: &options.preprocess.include_dirs,
        system_include_dirs: &options.preprocess.system_include_dirs,
        macros: macro_args(options),
        list_headers: options.list_headers,
        warnings: &options.warnings,
    }
}

/// Functions and variables of the source that the module uses but no file defines: in a
/// whole-program compilation (one source, no `-dc`) that is `E0104`, as for `.cdp` sources.
/// The device runtime's entry points and the C library nvcc provides on the device
/// ([`unresolved_functions`]) are the runtime's to define; a symbol whose source name the file
/// never mentions is a header's, left to nvlink.
fn undefined_user_symbols(module: &Module<'_>, source: &str) -> Vec<Diagnostic> {
    let mut symbols = super::symbols::PtxSymbols::default();
    symbols.undefined.extend(unresolved_functions(module).map(|f| f.get_name().to_string_lossy().into_owned()));
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

/// `cdpc -E`'s output: the preprocessed source and what was said making it.
pub struct Preprocessed {
    /// The text: [`crate::toolchain::PREPROCESSED_START`], then each side in a conditional.
    pub text: String,
    /// Clang's warnings (`#warning`, ...), each side's once.
    pub warnings: Vec<Diagnostic>,
    /// Every Clang run.
    pub tool_runs: Vec<ToolRun>,
    /// With [`CompileOptions::list_headers`], the headers both sides read, from Clang's own
    /// lists of its preprocessing: what a compilation's `-MD` lists, without compiling.
    pub headers: Vec<PathBuf>,
}

/// `-E` of CUDA C++ `source`, as nvcc's `-E` serves a compiler cache: Clang's preprocessed
/// source of the device side for each of `archs` (`__CUDA_ARCH__` and the architecture's
/// feature macros as Clang defines them) and of the host side, with line markers naming every
/// file read (cdpc's additions to Clang's headers among them), each in an `#if` on
/// `__CUDA_ARCH__`. The text changes whenever anything either side's compilation reads or
/// defines changes; cdpc compiles it again as a `.cu` file gives the same code (the wrapper and
/// additions are in it: `-nocudainc`). nvcc's `-E` writes the host side's text only (with
/// `__CUDA_ARCH__` undefined): docs/CCACHE.md.
pub fn preprocess_cuda(source: &str, options: &CompileOptions, archs: &[crate::target::SmVersion]) -> Result<Preprocessed, CompileError> {
    let tools = Toolchain::discover(&options.tools)?;
    let build = super::build_options(options);
    let request = request(options);
    let setup = ClangSetup::new(source, &request, &tools)?;
    let mut archs: Vec<crate::target::SmVersion> = archs.to_vec();
    archs.dedup();
    if archs.is_empty() {
        archs.push(options.target.sm);
    }
    let names: Vec<String> = archs.iter().map(|a| a.to_string()).collect();
    // Clang's lists of the headers each side read, in a folder of their own (a Clang
    // program's work folder is gone before its files could be read).
    let listing = match options.list_headers {
        HeaderList::None => None,
        list => Some((work_folder()?, list == HeaderList::All)),
    };
    let depfile = |i: usize| listing.as_ref().map(|(dir, all)| (dir.path().join(format!("side-{i}.d")), *all));
    let mut headers: Vec<PathBuf> = Vec::new();
    let mut add_headers = |read: Vec<PathBuf>| {
        for path in read {
            if !headers.contains(&path) {
                headers.push(path);
            }
        }
    };
    let mut text = format!("{} (cdpc {}): CUDA C++ for {}, then its host side\n", crate::toolchain::PREPROCESSED_START, env!("CARGO_PKG_VERSION"), names.join(", "));
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let add_warnings = |found: Vec<Diagnostic>, warnings: &mut Vec<Diagnostic>| {
        for d in found {
            if !warnings.iter().any(|w| w.code == d.code && w.message == d.message && w.labels.first().map(|l| l.span) == d.labels.first().map(|l| l.span)) {
                warnings.push(d);
            }
        }
    };
    for (i, arch) in archs.iter().enumerate() {
        let arch_request = Request { target: crate::target::Target { sm: *arch, ..request.target }, ..request.clone() };
        let template = setup.template(&arch_request);
        let listed = depfile(i);
        let (side, found, read) = setup.preprocess(&template, cuda::Side::Device, source, &arch_request, &build, listed.as_ref().map(|(p, all)| (p.as_path(), *all)))?;
        add_warnings(found, &mut warnings);
        add_headers(read);
        // `sm_90a` defines `__CUDA_ARCH_FEAT_SM90_ALL`, `sm_90` does not: the two are told apart.
        let feature = format!("__CUDA_ARCH_FEAT_SM{}_ALL", arch.number);
        let feature = if arch.arch_specific { format!("defined({feature})") } else { format!("!defined({feature})") };
        text.push_str(&format!("#{} defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {} && {feature}\n", if i == 0 { "if" } else { "elif" }, arch.number * 10));
        text.push_str(&side);
        if !side.ends_with('\n') {
            text.push('\n');
        }
    }
    let listed = depfile(archs.len());
    let (host, found, read) = setup.preprocess(&setup.template(&request), cuda::Side::Host, source, &request, &build, listed.as_ref().map(|(p, all)| (p.as_path(), *all)))?;
    add_warnings(found, &mut warnings);
    add_headers(read);
    text.push_str("#elif !defined(__CUDA_ARCH__)\n");
    text.push_str(&host);
    if !host.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("#else\n#error \"preprocessed by cdpc -E for {} only\"\n#endif\n", names.join(", ")));
    Ok(Preprocessed { text, warnings, tool_runs: build.log.take(), headers: super::tidy_headers(headers) })
}

/// Compiles CUDA C++ `source` to LLVM IR and/or PTX, as `outputs` asks.
pub(crate) fn generate(source: &str, options: &CompileOptions, tools: Option<&Toolchain>, build: &BuildOptions, outputs: back::Outputs) -> Result<Generated, CompileError> {
    let started = Instant::now();
    // Before the linked Clang's pipeline resolves libdevice's `__nvvm_reflect` calls.
    back::nvcc_math_defaults();
    let mut timings = Timings::default();
    let tools = match tools {
        Some(t) => t.clone(),
        None => Toolchain::discover(&options.tools)?,
    };
    let request = request(options);
    let setup = ClangSetup::new(source, &request, &tools)?;
    let mut clang = setup.run(&setup.template(&request), source, &request, build, None)?;
    let context = Context::create();
    let parse = |bitcode: &[u8]| {
        let buffer = MemoryBuffer::create_from_memory_range_copy(bitcode, "clang");
        Module::parse_bitcode_from_buffer(&buffer, &context).map_err(|e| BackendError::Internal(format!("reading Clang's bitcode: {e}")))
    };
    let noted = |clang: &ClangOutput| super::crash::note(&clang.compiled_path.display().to_string(), super::crash::Reproducer::Bitcode(clang.bitcode.clone()));
    noted(&clang);
    let mut module = parse(&clang.bitcode)?;
    if clang.precompiled && precompiled_header_may_hide_errors(&module, &clang.compiled_path) {
        // Clang's deferred CUDA diagnostics of a header's function do not survive a precompiled
        // header: the same compilation without one (and without touching the cache) gives them,
        // or, with no error, is the compilation (another file's functions, `-dc`).
        let bare = setup.without_cache();
        clang = bare.run(&bare.template(&request), source, &request, build, None)?;
        noted(&clang);
        module = parse(&clang.bitcode)?;
    }
    let device_ir = super::lto::carried(options).then(|| clang.bitcode.clone());
    let ClangOutput { warnings: clang_warnings, compiled_path, headers, .. } = clang;
    let front = timings.record(Phase::Parse, started);

    let shown = SourceText { path: Some(compiled_path.clone()), text: source.to_string() };
    let link = |module: &_| {
        let tm = back::target_machine(&options.target, super::opt_level(options))?;
        super::ir::link_libdevice(&context, module, options, Some(&tools), &tm)
    };
    let front = Front { warnings: clang_warnings, timings, since: front, origin: pipeline::Origin::Clang };
    let refused_at = |refused: &[pipeline::qualifiers::Refused]| refused.iter().map(|r| qualifier_refused(source, &compiled_path, r)).collect();
    let generated = lower(&module, options, &shown, front, outputs, link, refused_at)?;
    Ok(Generated { headers, device_ir, ..generated })
}

/// What a front end hands [`lower`]: its warnings, the phases it timed, when it finished, and
/// which front end it is ([`pipeline::Origin`]: what the schedule runs around the launch
/// passes).
pub(crate) struct Front {
    pub warnings: Vec<Diagnostic>,
    pub timings: Timings,
    pub since: Instant,
    pub origin: pipeline::Origin,
}

/// The back half of every front end that writes LLVM IR (Clang's bitcode, IR input): the
/// pipeline's schedule ([`pipeline::lower`], with `link` linking libdevice where it needs it and
/// `refused_at` placing refused kernel qualifiers), the whole-program `E0104` check, debug
/// information as asked, then LLVM IR and/or PTX. `shown` is the text diagnostics are placed in.
pub(crate) fn lower<'ctx>(
    module: &Module<'ctx>,
    options: &CompileOptions,
    shown: &SourceText,
    front: Front,
    outputs: back::Outputs,
    link: impl FnOnce(&Module<'ctx>) -> Result<(), CompileError>,
    refused_at: impl FnOnce(&[pipeline::qualifiers::Refused]) -> Vec<Diagnostic>,
) -> Result<Generated, CompileError> {
    let Front { warnings: front_warnings, mut timings, since, origin } = front;
    let mut all = options.warnings.apply(front_warnings);
    let stopped = |mut all: Vec<Diagnostic>, more: Vec<Diagnostic>| {
        all.extend(more);
        CompileError::Diagnostics(all)
    };
    let lowered = match pipeline::lower(module, origin, &super::pipeline_options(options, origin == pipeline::Origin::Clang), shown, None, link) {
        Ok(lowered) => lowered,
        Err(pipeline::Stop::Diagnostics(found)) => return Err(stopped(all, found)),
        Err(pipeline::Stop::Qualifiers(refused)) => return Err(stopped(all, options.warnings.apply(refused_at(&refused)))),
        Err(pipeline::Stop::Backend(e)) => return Err(e.into()),
        Err(pipeline::Stop::Link(e)) => return Err(e),
    };
    let front_refused = all.iter().any(Diagnostic::is_error);
    all.extend(lowered.warnings);
    if front_refused {
        return Err(CompileError::Diagnostics(all));
    }
    let warnings = all;
    let Some(tm) = lowered.machine else { return Err(BackendError::Internal("the pipeline made no target machine".into()).into()) };
    if !options.separate {
        let missing = undefined_user_symbols(module, &shown.text);
        if !missing.is_empty() {
            let mut all = warnings;
            all.extend(missing);
            return Err(CompileError::Diagnostics(all));
        }
    }
    match options.debug {
        None => {
            module.strip_debug_info();
        }
        Some(DebugLevel::LineTables) => pipeline::collapse_wrapper_lines(module),
        Some(DebugLevel::Full) => {}
    }
    module.verify().map_err(|e| BackendError::Verify(e.to_string()))?;
    let lowered = timings.record(Phase::LlvmIr, since);
    let llvm_ir = outputs.llvm_ir.then(|| module.print_to_string().to_string());
    let mut ptx = if outputs.ptx { Some(back::write_ptx(module, &tm)?) } else { None };
    if options.debug == Some(DebugLevel::LineTables) {
        ptx = ptx.map(|p| back::lineinfo_ptx(&p));
    }
    timings.record(Phase::LlvmOptPtx, lowered);
    Ok(Generated { llvm_ir, ptx, warnings, timings, headers: Vec::new(), device_ir: None })
}

/// The host side's bitcode of a CUDA C++ source ([`host_bitcode`]), before the device side's
/// fat binary is in it.
pub(crate) struct HostBitcode {
    bitcode: Vec<u8>,
    warnings: Vec<Diagnostic>,
    headers: Vec<PathBuf>,
    /// Whether Clang embedded [`FATBIN_PLACEHOLDER`] (else the real fat binary).
    placeholder: bool,
}

/// What the host side embeds while the device side's fat binary is not made yet: Clang writes
/// a file's bytes as they are into one constant of the section [`FATBIN_SECTION`], which nothing
/// else reads (the wrapper points at it, the module id is the wrapper's name's hash), and
/// [`host_object`] puts the fat binary's bytes in its place ([`back::replace_section_bytes`]),
/// so the object is the one Clang writes with the fat binary.
const FATBIN_PLACEHOLDER: &[u8] = b"cdpc: the device side's fat binary goes here\0";

/// The section of Clang's constant that holds the embedded fat binary (`CGNVCUDARuntime`: a
/// relocatable one's, `-fgpu-rdc`, which cdpc always passes).
const FATBIN_SECTION: &str = "__nv_relfatbin";

/// Clang's host side of CUDA C++ `source` (`--cuda-host-only`, the nvcc-style registration),
/// with [`FATBIN_PLACEHOLDER`] for the device side's fat binary when `fatbin` is `None`: it
/// needs nothing of the device side, so it runs while that side compiles (`driver::cuda_host_object`).
pub(crate) fn host_bitcode(source: &str, options: &CompileOptions, tools: &Toolchain, build: &BuildOptions, fatbin: Option<&[u8]>) -> Result<HostBitcode, CompileError> {
    let serial = serial_openmp(options);
    let options = serial.as_ref().map_or(options, |(o, _)| o);
    let request = request(options);
    let setup = ClangSetup::new(source, &request, tools)?;
    let ClangOutput { bitcode, mut warnings, headers, .. } = setup.run(&setup.template(&request), source, &request, build, Some(fatbin.unwrap_or(FATBIN_PLACEHOLDER)))?;
    warnings.extend(serial.map(|(_, w)| w));
    Ok(HostBitcode { bitcode, warnings, headers, placeholder: fatbin.is_none() })
}

/// Host OpenMP on a machine without LLVM's runtime: Clang's OpenMP code calls libomp
/// (`__kmpc_*`), which GCC's libgomp, the runtime of nvcc's g++, does not provide. Where
/// `-Xcompiler -fopenmp` is asked and [`super::program::libomp_dir`] finds no libomp, the host
/// side is compiled without OpenMP's code generation (`_OPENMP` still defined, `omp.h`'s
/// functions still called, from libgomp, which the host compiler's `-fopenmp` links) and its
/// parallel regions run on one thread, with `W0807`. The options to compile with and the
/// warning, or `None` where nothing changes.
fn serial_openmp(options: &CompileOptions) -> Option<(CompileOptions, Diagnostic)> {
    let host_args = &options.cuda_cxx.host_args;
    let asked = |a: &String| a == "-fopenmp" || a.starts_with("-fopenmp=");
    if !host_args.iter().any(asked) || super::program::libomp_dir().is_ok() {
        return None;
    }
    let mut serial = options.clone();
    serial.cuda_cxx.host_args = host_args.iter().filter(|a| !asked(a)).cloned().chain(cuda::openmp_macro(host_args)).collect();
    let mut warning = Diagnostic::new(
        Code::OpenMpRegionsSerial,
        Span::default(),
        "the host code asks for OpenMP (`-Xcompiler -fopenmp`) and LLVM's OpenMP runtime, libomp, is not installed: its parallel regions run on one thread",
    )
    .with_note("cdpc compiles host code with Clang, whose parallel regions call libomp (`__kmpc_*`), not GCC's libgomp; `omp.h`'s functions still come from libgomp")
    .with_note("for parallel regions install libomp (Debian, Ubuntu: `apt-get install libomp-22-dev`) or name its folder with `CDPC_LIBOMP_DIR`");
    warning.labels.clear();
    Some((serial, warning))
}

/// What [`host_object`] made.
pub(crate) struct HostObject {
    pub object: Vec<u8>,
    /// The host side's warnings the device side did not give.
    pub warnings: Vec<Diagnostic>,
    /// The host side's warnings that are errors under the host compiler's `-Werror`.
    pub werror: Vec<Diagnostic>,
    /// The headers the host side read.
    pub headers: Vec<PathBuf>,
}

/// The host object of a CUDA C++ source, like `nvcc -dc`'s: `fatbin` (the device side,
/// compiled with `options.nv_module_id` = `id`, assembled and packed into a relocatable fat
/// binary) in place of the placeholder in `host` ([`host_bitcode`]), with the file's host code,
/// its kernels' stubs and their registration; then nvcc's names ([`pipeline::host_names`])
/// under module id `id`, and x86-64 code, marked for the device link's pool as `pool` says
/// (`driver/pool.rs`). Returns the object, the host side's warnings that the device side
/// did not give already, and the host side's warnings that the host compiler's `-Werror` makes
/// errors ([`cuda::host_warnings::werror_promotes`]: the device side's copy of one is too).
#[allow(clippy::too_many_arguments)]
pub(crate) fn host_object(
    source: &str,
    options: &CompileOptions,
    tools: &Toolchain,
    build: &BuildOptions,
    host: HostBitcode,
    fatbin: &[u8],
    id: &str,
    device_warnings: &[Diagnostic],
    pool: back::host_object::PoolMark,
    device_ir: &[(crate::target::SmVersion, Vec<u8>)],
) -> Result<HostObject, CompileError> {
    let HostBitcode { bitcode, warnings, headers, placeholder } = host;
    let warnings = options.warnings.apply(warnings);
    let werror: Vec<Diagnostic> = warnings.iter().filter(|d| cuda::host_warnings::werror_promotes(d, &options.cuda_cxx)).cloned().collect();
    // Code both sides compile (`__host__ __device__`, headers) warns twice: once is enough.
    let warnings: Vec<Diagnostic> = warnings.into_iter().filter(|w| !device_warnings.contains(w)).collect();
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(&bitcode, "clang-host");
    let module = Module::parse_bitcode_from_buffer(&buffer, &context).map_err(|e| BackendError::Internal(format!("reading Clang's host bitcode: {e}")))?;
    if placeholder && back::replace_section_bytes(&module, FATBIN_SECTION, fatbin) != 1 {
        // Not Clang's one constant to fill in: the host side again, with the fat binary.
        drop(module);
        let again = host_bitcode(source, options, tools, build, Some(fatbin))?;
        return host_object(source, options, tools, build, again, fatbin, id, device_warnings, pool, device_ir);
    }
    pipeline::managed::host(&module).map_err(|e| match e {
        pipeline::managed::HostError::Internal(what) => CompileError::from(BackendError::Internal(what)),
        pipeline::managed::HostError::AddressInInitializer { holder, variable } => CompileError::Diagnostics(vec![managed_address_in_initializer(source, &holder, &variable)]),
    })?;
    pipeline::host_names::nvcc_host_names(&module, id).map_err(BackendError::Internal)?;
    if options.whole_program {
        pipeline::host_names::internal_template_stubs(&module);
        back::link_stub::register_whole(&module, id)?;
    }
    // Host debug information is the host compiler's `-g` (`-Xcompiler -g`, nvcc's `-g`), which
    // nvcc's -G and -lineinfo leave off.
    if !options.cuda_cxx.host_args.iter().any(|a| a.starts_with("-g") && a != "-g0") {
        module.strip_debug_info();
    }
    back::host_object::mark_pool(&module, pool);
    if !device_ir.is_empty() {
        // One entry an architecture, each with its options.
        let entries = device_ir.iter().flat_map(|(sm, ir)| super::lto::section(&CompileOptions { target: crate::target::Target { sm: *sm, ..options.target }, ..options.clone() }, id, ir));
        back::host_object::add_section(&module, super::lto::SECTION, &entries.collect::<Vec<u8>>());
    }
    back::host_object::registration_first(&module);
    let object = back::host_object::emit_object(&module)?;
    Ok(HostObject { object, warnings, werror, headers })
}

/// `E1021`: a kernel qualifier nvcc refuses, at the line Clang recorded for the kernel's
/// declaration (the qualifier there, else the kernel's name, else the line's first word)
/// when that is the compiled file, else at the file's start with a note naming the place.
fn qualifier_refused(source: &str, compiled: &std::path::Path, refused: &pipeline::qualifiers::Refused) -> Diagnostic {
    let same_file = std::path::Path::new(&refused.file) == compiled || std::path::Path::new(&refused.file).canonicalize().ok().is_some_and(|p| compiled.canonicalize().ok() == Some(p));
    let symbols = super::symbols::PtxSymbols { defined: vec![refused.kernel.clone()], ..Default::default() };
    let kernel = super::symbols::text_places(&symbols, source).remove(&refused.kernel).map_or(refused.kernel.clone(), |l| l.message);
    let message = format!("{} (kernel `{kernel}`)", refused.message);
    let line = refused.line as usize;
    let text_line = source.lines().nth(line.wrapping_sub(1)).filter(|_| same_file && line > 0);
    let Some(text) = text_line else {
        return Diagnostic::new(Code::KernelQualifierRefused, Span::new(0, 0), message).with_note(format!("declared at {}:{}", refused.file, refused.line));
    };
    let whole_word = |name: &str| super::symbols::first_mention(text, name).map(|s| s.start as usize);
    let column = whole_word(refused.qualifier).or_else(|| whole_word(&kernel)).or_else(|| text.find(|c: char| !c.is_whitespace())).unwrap_or(0) + 1;
    let span = crate::diag::span_at(source, line, column);
    Diagnostic::new(Code::KernelQualifierRefused, span, message)
}

/// `E1020`: the host variable `holder` initialised with the address of the managed variable
/// `variable` (symbols), at the first mention of the managed variable in `source`.
fn managed_address_in_initializer(source: &str, holder: &str, variable: &str) -> Diagnostic {
    let symbols = super::symbols::PtxSymbols { defined: vec![variable.to_string(), holder.to_string()], ..Default::default() };
    let places = super::symbols::text_places(&symbols, source);
    let name = |symbol: &str| places.get(symbol).map_or(symbol.to_string(), |l| l.message.clone());
    let span = places.get(holder).or_else(|| places.get(variable)).map_or(crate::diag::Span::new(0, 0), |l| l.span);
    let mut d = Diagnostic::new(
        crate::diag::Code::ManagedAddressInInitializer,
        span,
        format!("the host variable `{}` is initialised with the address of the managed variable `{}`", name(holder), name(variable)),
    )
    .with_note("a managed variable's memory exists once the CUDA runtime has loaded the module, after the program's static initialisers have run")
    .with_note("take its address in host code at run time, or allocate the memory with `cudaMallocManaged` and keep that pointer");
    if let Some(l) = places.get(variable) {
        d = d.with_label(l.span, "the managed variable");
    }
    d
}
