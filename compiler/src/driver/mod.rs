//! Runs the phases in order for one source file: the entry point of the `cdpc` binary and of
//! programs that embed the compiler.
//!
//! [`compile`] takes source text and [`CompileOptions`] and returns the bytes [`Emit`] asks for
//! and the warnings; [`compile_artifacts`] returns LLVM IR, PTX, the object and the cubin of one
//! compilation at once. Neither prints, exits or keeps global state: diagnostics come back as
//! data ([`Diagnostic`], rendered by [`crate::render`]), each tool run as a
//! [`ToolRun`], and calls on several threads at once are independent (each has its own LLVM
//! context and temporary folder).
//!
//! ```
//! use cdpc::driver::{compile, CompileError, CompileOptions, Emit};
//!
//! let source = r#"
//!     extern "C" __global__ void child(int *p) { p[threadIdx.x] += 1; }
//!     extern "C" __global__ void parent(int *p) { child<<<1, 32>>>(p); }
//! "#;
//! let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
//! let ptx = String::from_utf8(compile(source, &options).unwrap().output).unwrap();
//! assert!(ptx.contains("__cudaCDP2LaunchDeviceV2"));
//!
//! // Mistakes are diagnostics with stable codes, not output on stderr.
//! match compile("__global__ void k() { undefined(); }", &options) {
//!     Err(CompileError::Diagnostics(d)) => assert_eq!(d[0].code.as_str(), "E0100"),
//!     _ => unreachable!(),
//! }
//! ```
//!
//! # The files
//!
//! `mod.rs` runs one source to IR, PTX, an object, a cubin or a host object; `generate_cdp` takes
//! a `.cdp` program's IR through `pipeline::run` with its marked launches and maps the pipeline's
//! diagnostics through the source map. `cuda.rs` is the Clang path: the compilation's options
//! as the CUDA C++ front end reads them (`front::cuda::setup::Request`), its Clang set-up
//! (`front::cuda::setup::ClangSetup`, shared by both sides) run, its bitcode read, and the file
//! compiled again without precompiled headers when its device IR calls a function nothing
//! defines from outside the file's own code (`precompiled_header_may_hide_errors`: Clang's
//! deferred CUDA diagnostics do not survive a precompiled header). It also makes the host object
//! of `-dc`/`--emit host-obj`: Clang's host side (`host_bitcode`, run by `cuda_host_object` on a
//! thread of its own while the device side compiles, with a placeholder for the fat binary), then
//! `host_object`: the device side's relocatable fat binary put in the placeholder's place
//! (`back::replace_section_bytes`), `pipeline::host_names`, `back::host_object::emit_object`; host
//! warnings the device side gave already are dropped. `cuda::lower` is the back half of every
//! front end that writes IR: `pipeline::run` (its options mapped once, `pipeline_options`),
//! whole-program `E0104` for undefined symbols, the target machine with the module's PTX features,
//! then PTX.
//!
//! `ir.rs` reads LLVM IR input; `link.rs` links several inputs, with `symbols.rs`'s E0800/E0801
//! check (nvlink's messages read as the same codes) and `archive.rs` for archives of bare device
//! objects; `program.rs` builds programs as nvcc does; `fatbin.rs` packs `-gencode`'s fat
//! binaries; `host.rs` writes the kernel language's host object and its header; `ptxas_asm.rs`
//! places ptxas's errors in inline assembly (`E0968`); `debug.rs` is the source map as debug
//! information sees it. An undefined runtime function that libcudadevrt lacks
//! (`symbols::runtime_missing`) is `E0801` at the calls its `W0316` warnings placed, for every
//! path that links (a cubin, `-c`'s whole program, a link of sources, a program's device link),
//! and an object's without a place.
//!
//! `-MD`/`-MMD`: `Compiled::headers` lists the headers a compilation read when
//! `CompileOptions::list_headers` asks: Clang's own list (`-MD -MF` in a folder of the
//! compilation, cdpc's files left out, `cuda.rs`) or the kernel language's preprocessor's
//! (`preprocess::Header`), tidied by `tidy_headers`; a host file's is its host compiler's
//! (`program::compile_host_file`, `program::host_file_headers` for `-M`). The `cdpc` program
//! writes the dependency file from it (`runner.rs`, `write_dependencies`).

pub use crate::back::DebugLevel;
use crate::back::{self, BackendError, CodegenOptions};
pub use crate::diag::WarningPolicy;
use crate::diag::{Code, Diagnostic};
pub use crate::error::{decode_source, CompileError, NotUtf8};
use crate::front::cdp::hir;
use crate::front::cdp::preprocess::{self, PreprocessOptions};
use crate::front::cdp::sema::{self, SemaOptions};
use crate::pipeline::aggregate::Granularity;
pub use crate::pipeline::malloc_pool::MallocPool;
use crate::target::{AddressSize, SmVersion, Target};
use crate::toolchain::run::at_once;
use crate::toolchain::{BuildOptions, FatbinImage, OutputFile, OutputGuard, ToolRun, ToolSearch, Toolchain};
pub use crate::toolchain::{HeaderList, Overwrite, DEFAULT_TOOL_TIMEOUT};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod archive;
pub mod crash;
mod cuda;
mod debug;
pub mod fatbin;
pub mod host;
pub mod ir;
pub mod jobs;
pub mod link;
mod lto;
pub mod option_pairs;
pub mod pool;
pub mod program;
mod ptxas_asm;
pub mod symbols;

pub use cuda::{preprocess_cuda, Preprocessed};
pub use link::{link, link_files, BuildError, Input, LinkOptions, Linked, SourceWarnings};

/// What the compiler writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Textual LLVM IR after optimisation (`.ll`).
    LlvmIr,
    /// PTX assembly (`.ptx`).
    Ptx,
    /// A relocatable device object (`ptxas -c`), for linking with other device code.
    Object,
    /// A cubin linked with libcudadevrt, ready for `cuModuleLoad`.
    Cubin,
    /// An x86-64 object like `nvcc -dc` writes (`-dc`'s default): the relocatable fat binary,
    /// its registration and a host stub per kernel, for `nvcc -dlink` and the host linker; for
    /// CUDA C++ with the file's own host code (Clang's host side, `cuda::host_object`), for the
    /// kernel language with a launcher per kernel ([`host`]).
    HostObject,
}

impl Emit {
    /// The usual file extension of this output, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Emit::LlvmIr => "ll",
            Emit::Ptx => "ptx",
            Emit::Object => "o",
            Emit::Cubin => "cubin",
            Emit::HostObject => "o",
        }
    }

    fn needs_nvidia_tools(self) -> bool {
        matches!(self, Emit::Object | Emit::Cubin | Emit::HostObject)
    }
}

/// Which front end reads a source: the kernel language's own (`.cdp`), Clang (CUDA C++), or
/// none (LLVM IR or bitcode another front end wrote, [`ir`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// The kernel language: C with CUDA's qualifiers and `<<<>>>`, read by cdpc's own front end.
    Cdp,
    /// CUDA C++, read by Clang ([`crate::front::cuda`]).
    Cuda,
    /// LLVM IR, textual (`.ll`) or bitcode (`.bc`), under the contract of docs/IR-INPUT.md
    /// ([`ir`]).
    Ir,
}

impl Language {
    /// A file's language by its extension, as nvcc decides: `.cu` is CUDA C++, `.ll` and `.bc`
    /// LLVM IR, everything else the kernel language.
    pub fn of_path(path: &Path) -> Language {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("cu") => Language::Cuda,
            Some(e) if e.eq_ignore_ascii_case("ll") || e.eq_ignore_ascii_case("bc") => Language::Ir,
            _ => Language::Cdp,
        }
    }

    /// The name `-x` gives it: `cdp`, `cu` or `ir`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Cdp => "cdp",
            Language::Cuda => "cu",
            Language::Ir => "ir",
        }
    }

    /// The language of the source `options` describe: [`CompileOptions::language`] when set
    /// (`-x`), else by the input's extension, else the kernel language.
    pub fn of(options: &CompileOptions) -> Language {
        let by_name = || options.preprocess.input.as_deref().map(Language::of_path);
        options.language.or_else(by_name).unwrap_or(Language::Cdp)
    }
}

/// The launch optimizations of a build: thresholding and aggregation, the launch pipeline's
/// passes (`pipeline/threshold.rs`, `pipeline/aggregate/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchOptimizations {
    /// Grids of at most this many threads run in their launching thread; 0: none.
    pub threshold: u32,
    /// How the launches left are aggregated.
    pub aggregate: Granularity,
}

impl LaunchOptimizations {
    /// What an optimising build gets: grids of at most 128 threads in their launching thread
    /// (at most four warps, one per warp scheduler of an SM: too little to repay a launch when
    /// each child thread does a few loads and stores; BENCHMARKS.md, "Which options"), the rest
    /// aggregated per warp or per grid as each kernel's launches suit ([`Granularity::Auto`]).
    pub const DEFAULT: LaunchOptimizations = LaunchOptimizations { threshold: 128, aggregate: Granularity::Auto };
    /// Launches as written.
    pub const OFF: LaunchOptimizations = LaunchOptimizations { threshold: 0, aggregate: Granularity::Off };

    /// The command line's rule: `-flaunch-threshold` or `-faggregate-launches` given chooses
    /// exactly (the other off unless also given); else `-fno-launch-optimizations` /
    /// `-flaunch-optimizations` (the last of them) turns them off or on; else they are on in
    /// optimising builds (`-O2`, `-O3`, cdpc's default, and not `-G`) and off otherwise.
    pub fn resolve(opt_level: u8, device_debug: bool, switch: Option<bool>, threshold: Option<u32>, aggregate: Option<Granularity>) -> LaunchOptimizations {
        if threshold.is_some() || aggregate.is_some() {
            return LaunchOptimizations { threshold: threshold.unwrap_or(0), aggregate: aggregate.unwrap_or(Granularity::Off) };
        }
        match switch {
            Some(true) => Self::DEFAULT,
            Some(false) => Self::OFF,
            None if opt_level >= 2 && !device_debug => Self::DEFAULT,
            None => Self::OFF,
        }
    }
}

/// What and how to compile. `CompileOptions::default()` is `cdpc`'s default: a cubin for sm_90,
/// 64-bit, launch ABI v2, `-O3`.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Architecture, address size and launch ABI.
    pub target: Target,
    /// 0 to 3, for LLVM and ptxas alike.
    pub opt_level: u8,
    /// What [`compile`] returns ([`compile_artifacts`] ignores it).
    pub emit: Emit,
    /// Extra arguments for ptxas (`-Xptxas`).
    pub ptxas_args: Vec<String>,
    /// Extra arguments for nvlink (`-Xnvlink`).
    pub nvlink_args: Vec<String>,
    /// Which warnings are errors or silenced.
    pub warnings: WarningPolicy,
    /// Where to look for ptxas, nvlink and libcudadevrt.
    pub tools: ToolSearch,
    /// Launch aggregation (`-faggregate-launches=`), a pass of the launch pipeline on LLVM IR
    /// (`pipeline/aggregate/`).
    pub aggregate: Granularity,
    /// Launches of at most this many threads in all run in the launching thread
    /// (`-flaunch-threshold=N`, `pipeline/threshold.rs`), before aggregation; 0: none.
    pub launch_threshold: u32,
    /// Report why launches were left alone (`-Rpass=aggregate`): remarks among the warnings.
    pub pass_remarks: bool,
    /// Say whether the device link serves device-side allocations from the pool, and why
    /// (`-Rpass=malloc-pool`, `R0504`).
    pub pool_remarks: bool,
    /// Small device-side allocations (`malloc`, `cudaMalloc`) from a pool in the program's
    /// static memory (`pipeline/malloc_pool.rs`): in every compile (`-fdevice-malloc-pool`,
    /// [`MallocPool::On`]), never (`-fno-device-malloc-pool`), or, by default, where the device
    /// link proves that every device object of the program frees through it
    /// ([`MallocPool::AtLink`], `driver/pool.rs`; relocatable code only).
    pub malloc_pool: MallocPool,
    /// CUDA C++'s warp functions of before CUDA 9 (`__shfl`, `__any`, ...) compiled as their
    /// `_sync` forms with `W0902` (`-flegacy-warp-intrinsics`), where by default they are
    /// `E0903` as nvcc refuses them; the kernel language and LLVM IR always rewrite them.
    pub legacy_warp_intrinsics: bool,
    /// Report each `<...>` header skipped as host-only (`R0611`, `-Rskipped-headers`). Off by
    /// default, as clang's remarks are: a skipped header matters only when device code uses a
    /// name it declares, and that error says so whatever this is.
    pub header_remarks: bool,
    /// How long one run of ptxas or nvlink may take before it is killed and the compilation
    /// fails (`E0702`); `None` waits for ever (`--tool-timeout`, [`DEFAULT_TOOL_TIMEOUT`]).
    pub tool_timeout: Option<Duration>,
    /// How a module's PTX is cut for ptxas runs at the same time
    /// ([`crate::toolchain::ptx_parts`]): `None` as cdpc decides (a large module in up to 4
    /// parts, the same on every machine); nvcc's `--split-compile N`: at most `N` parts, `0`
    /// one a core, `1` the module whole.
    pub split_compile: Option<usize>,
    /// Which existing files [`compile_file`] and its siblings may replace (`--overwrite`);
    /// an input never.
    pub overwrite: Overwrite,
    /// The preprocessor: the input's path, `-D`, `-U`, `-I`.
    pub preprocess: PreprocessOptions,
    /// Debug information: `-lineinfo` (line tables, the code optimised as usual) or `-G` (full
    /// DWARF; LLVM and ptxas then run at -O0 whatever `opt_level` says).
    pub debug: Option<DebugLevel>,
    /// Separate compilation (`-dc`, or one of several inputs): device functions and `extern`
    /// variables declared but not defined are left to the link step ([`link`]) instead of
    /// being E0104.
    pub separate: bool,
    /// nvcc's module id for this translation unit (what cudafe++ writes with
    /// `--gen_module_id_file`): internal (`static`) kernels and variables are then named as
    /// nvcc names them, `__nv_static_<n>_<id>_<name>`, so that host stubs nvcc wrote find them.
    /// `None`: they keep their own names (with internal linkage either way).
    pub nv_module_id: Option<String>,
    /// nvcc's `-fmad`: contract a float multiply and add into `fma` (the default, as nvcc).
    pub fmad: crate::back::Fmad,
    /// nvcc's `-ftz`, `-prec-div`, `-prec-sqrt` and `--use_fast_math`'s library
    /// ([`crate::back::precision`]); the default is nvcc's.
    pub float_math: crate::back::FloatMath,
    /// The source's language (`-x cu`, `-x cdp`, `-x ir`); `None`: by the input's extension
    /// ([`Language::of`]).
    pub language: Option<Language>,
    /// Where to look for Clang, which compiles CUDA C++ ([`crate::front::cuda::find_engine`]).
    pub clang: crate::front::cuda::ClangSearch,
    /// What only the CUDA C++ front end reads: `-std`, the host compiler's options.
    pub cuda_cxx: crate::front::cuda::CudaCxxOptions,
    /// Which headers to list in [`Compiled::headers`] (`-MD`, `-MMD`).
    pub list_headers: HeaderList,
    /// The images of a CUDA C++ host object's fat binary (`-dc` with nvcc's `-gencode`: a
    /// relocatable cubin for each `code=sm_XX`, PTX for each `code=compute_XX`); empty: the
    /// target's cubin and PTX, as `-dc -arch=sm_XX`.
    pub host_object_images: Vec<fatbin::Image>,
    /// A CUDA C++ host object whose device code is already linked (nvcc's `-c` without
    /// `-rdc`): each cubin of its fat binary linked with libcudadevrt, and the object
    /// registering it itself, so that the host linker alone makes a program of it and no
    /// device link takes its code in again ([`crate::back::link_stub::register_whole`]).
    pub whole_program: bool,
    /// The [`CompileOptions::whole_program`] source's device code is all of its program's (a
    /// program built from it and inputs without device code, `cdpc app.cu -o app`): by
    /// default its device-side allocations come from the pool where it allocates
    /// ([`MallocPool::Program`]), since no other module can free them. Set by the program's
    /// build (`driver/program.rs`), never by an option.
    pub sole_device_source: bool,
    /// Link-time optimisation of device code (nvcc's `-dlto`, `driver/lto.rs`): a `-dc`
    /// object of CUDA C++ carries its device IR beside its cubin, and a device link that
    /// cdpc runs compiles the IR its objects carry as one module, so that the launch
    /// optimizations see launches of another file's kernels. Never by default.
    pub device_lto: bool,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            target: Target::default(),
            opt_level: 3,
            emit: Emit::Cubin,
            ptxas_args: Vec::new(),
            nvlink_args: Vec::new(),
            warnings: WarningPolicy::default(),
            tools: ToolSearch::default(),
            aggregate: Granularity::Off,
            launch_threshold: 0,
            pass_remarks: false,
            pool_remarks: false,
            malloc_pool: MallocPool::AtLink,
            legacy_warp_intrinsics: false,
            header_remarks: false,
            tool_timeout: Some(DEFAULT_TOOL_TIMEOUT),
            split_compile: None,
            overwrite: Overwrite::CompilerOutputs,
            preprocess: PreprocessOptions::default(),
            debug: None,
            separate: false,
            nv_module_id: None,
            fmad: crate::back::Fmad::Contract,
            float_math: crate::back::FloatMath::default(),
            language: None,
            clang: crate::front::cuda::ClangSearch::default(),
            cuda_cxx: crate::front::cuda::CudaCxxOptions::default(),
            list_headers: HeaderList::None,
            host_object_images: Vec::new(),
            whole_program: false,
            sole_device_source: false,
            device_lto: false,
        }
    }
}

/// Reads a tool time limit as `--tool-timeout` and the C API spell it: seconds, fractions
/// allowed, `0` for no limit (`None`). Negative, infinite or absurd (over 10^9 s) values are
/// refused with a message.
pub fn parse_tool_timeout(text: &str) -> Result<Option<Duration>, String> {
    match text.trim().parse::<f64>() {
        Ok(0.0) => Ok(None),
        Ok(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(format!("`{text}` is not a time limit: give seconds from 0 to 1e9 (0 means no limit)")),
    }
}

/// A phase of the compiler, as `cdpc --time` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading the source file.
    Read,
    /// The C preprocessor.
    Preprocess,
    /// Lexing and parsing.
    Parse,
    /// Semantic checks and lowering to HIR.
    Sema,
    /// Building the LLVM module.
    LlvmIr,
    /// LLVM's optimisation and PTX emission.
    LlvmOptPtx,
    /// `ptxas -c`.
    Ptxas,
    /// `nvlink` with libcudadevrt.
    Nvlink,
    /// `fatbinary`.
    Fatbinary,
    /// The host compiler compiling a host file.
    HostCompile,
    /// The host compiler linking a program.
    HostLink,
    /// The archiver making a library.
    Archive,
}

impl Phase {
    /// The name `cdpc --time` prints.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Read => "read",
            Phase::Preprocess => "preprocess",
            Phase::Parse => "parse",
            Phase::Sema => "sema",
            Phase::LlvmIr => "llvm-ir",
            Phase::LlvmOptPtx => "llvm-opt-ptx",
            Phase::Ptxas => "ptxas",
            Phase::Nvlink => "nvlink",
            Phase::Fatbinary => "fatbinary",
            Phase::HostCompile => "host-compile",
            Phase::HostLink => "host-link",
            Phase::Archive => "archive",
        }
    }
}

/// How long each phase of a compilation took, in the order they ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings(pub Vec<(Phase, Duration)>);

impl Timings {
    fn record(&mut self, phase: Phase, since: Instant) -> Instant {
        let now = Instant::now();
        self.0.push((phase, now - since));
        now
    }

    fn add_tool_runs(&mut self, runs: &[ToolRun]) {
        // Clang's run is the front end's time, recorded as its phase already.
        for run in runs.iter().filter(|r| r.tool != "clang") {
            let phase = match run.tool.as_str() {
                "nvlink" => Phase::Nvlink,
                "fatbinary" => Phase::Fatbinary,
                "host compiler" => Phase::HostCompile,
                "host linker" => Phase::HostLink,
                "archiver" => Phase::Archive,
                _ => Phase::Ptxas,
            };
            self.0.push((phase, run.elapsed));
        }
    }

    /// The sum of the phases.
    pub fn total(&self) -> Duration {
        self.0.iter().map(|(_, d)| *d).sum()
    }
}

/// The stack the phases run on. Sema and code generation recurse over the tree, which the front
/// end lets grow [`crate::front::cdp::syntax::MAX_TREE_DEPTH`] deep; an unoptimised build needs about 10 KiB
/// a level, more than the 2 MiB a test thread (or any spawned thread) has by default.
pub const STACK_BYTES: usize = 64 << 20;

/// Runs `f` on a thread with a [`STACK_BYTES`] stack and returns its result; a panic in `f`
/// is resumed on the caller's thread. Runs `f` in place if no thread can be started.
pub fn on_large_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let f = std::sync::Mutex::new(Some(f));
    let run = || f.lock().unwrap_or_else(|e| e.into_inner()).take().map(|f| f());
    std::thread::scope(|scope| match std::thread::Builder::new().name("cdpc".into()).stack_size(STACK_BYTES).spawn_scoped(scope, run) {
        Ok(handle) => match handle.join() {
            Ok(result) => result.expect("the compilation closure runs once"),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(_) => run().expect("the compilation closure runs once"),
    })
}

/// A checked program, ready for code generation, with the warnings found on the way.
pub struct Checked {
    /// The typed program.
    pub module: hir::Module,
    /// Warnings, after the [`WarningPolicy`].
    pub warnings: Vec<Diagnostic>,
    /// Parse and sema times.
    pub timings: Timings,
    /// Where each function and device variable was declared, by symbol, in the files' own
    /// coordinates: the link step's labels ([`symbols::declaration_places`]).
    pub places: std::collections::HashMap<String, crate::diag::Label>,
    /// With [`CompileOptions::debug`]: the files and the map from spans to their lines.
    pub debug: Option<back::DebugInfo>,
    /// The preprocessor's map from preprocessed text back to files, for the launch
    /// pipeline's diagnostics ([`generate_cdp`]); `None` for an oversized source.
    pub(crate) map: Option<std::sync::Arc<preprocess::SourceMap>>,
    /// The headers the preprocessor read from disk ([`Compiled::headers`]).
    pub headers: Vec<preprocess::Header>,
}

/// Parses and checks `source`. The front half of the compiler: no LLVM, no processes.
/// Thresholding and aggregation, and their remarks, come later, in the launch pipeline on the
/// generated LLVM IR ([`generate_cdp`]).
pub fn check(source: &str, options: &CompileOptions) -> Result<Checked, CompileError> {
    on_large_stack(|| check_here(source, options))
}

fn check_here(source: &str, options: &CompileOptions) -> Result<Checked, CompileError> {
    let input = options.preprocess.input.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "input.cdp".into());
    crash::note(&input, crash::Reproducer::Text { text: source.to_string(), extension: "cdp" });
    let mut timings = Timings::default();
    let started = Instant::now();
    // An oversized source is refused by the front end before any work (E0401).
    let pp = (source.len() <= crate::front::cdp::syntax::MAX_SOURCE_BYTES).then(|| preprocess::preprocess(source, &options.preprocess, &options.target));
    let mut diagnostics = Vec::new();
    let text = match &pp {
        Some(pp) => {
            let shown = |d: &&Diagnostic| options.header_remarks || d.code != Code::HostHeaderSkipped;
            diagnostics.extend(pp.diagnostics.iter().filter(shown).cloned());
            if diagnostics.iter().any(Diagnostic::is_error) {
                return Err(CompileError::Diagnostics(options.warnings.apply(diagnostics)));
            }
            pp.text.as_str()
        }
        None => source,
    };
    let preprocessed = timings.record(Phase::Preprocess, started);
    let (unit, mut found) = crate::front::cdp::syntax::parse(text);
    let parsed = timings.record(Phase::Parse, preprocessed);
    let mut module = None;
    if let Some(unit) = unit {
        let (checked, more) = sema::analyze(&unit, &SemaOptions { target: options.target, separate: options.separate || options.emit == Emit::HostObject });
        found.extend(more);
        module = checked;
        if let Some(m) = module.as_mut() {
            // A host object names its `static` kernels and variables as nvcc does, under its
            // own module id (made here from the source, since the fat binary comes later), so
            // that two objects' `static` kernels of one name stay apart when linked.
            let own_id = || own_module_id(source, options);
            m.nv_module_id = options.nv_module_id.clone().or_else(|| (options.emit == Emit::HostObject).then(own_id));
        }
        timings.record(Phase::Sema, parsed);
    }
    match &pp {
        Some(pp) => diagnostics.extend(found.into_iter().map(|d| explain_skipped_headers(pp.map.remap(d), &pp.skipped_headers))),
        None => diagnostics.extend(found),
    }
    let diagnostics = options.warnings.apply(diagnostics);
    match module {
        Some(module) if !diagnostics.iter().any(Diagnostic::is_error) => {
            let places = symbols::declaration_places(&module, pp.as_ref().map(|pp| &pp.map));
            let (map, headers) = match pp {
                Some(pp) => (Some(std::sync::Arc::new(pp.map)), pp.headers),
                None => (None, Vec::new()),
            };
            let debug = options.debug.zip(map.clone()).map(|(level, map)| debug::debug_info(level, map));
            Ok(Checked { module, warnings: diagnostics, timings, places, debug, map, headers })
        }
        _ => Err(CompileError::Diagnostics(diagnostics)),
    }
}

/// The module id of a host object of `source` (nvcc's form, [`host::module_id`]), made from
/// the source and the target, since the fat binary comes later.
fn own_module_id(source: &str, options: &CompileOptions) -> String {
    let keyed = format!("{:?}\0{source}", options.target);
    host::module_id(&options.preprocess.main_name(), keyed.as_bytes())
}

/// An unknown name may be one that a skipped host-only header declares: say which were skipped.
fn explain_skipped_headers(d: Diagnostic, skipped: &[String]) -> Diagnostic {
    if d.code != Code::UnknownName || skipped.is_empty() {
        return d;
    }
    let (list, were) = match skipped {
        [one] => (one.clone(), "was"),
        _ => (skipped.join(", "), "were"),
    };
    d.with_note(format!("{list} {were} skipped as host-only (R0611): a name declared there cannot be used in device code"))
}

/// The output of a compilation and the warnings it produced.
pub struct Compiled {
    /// LLVM IR or PTX text, or the bytes of the object or cubin, as `CompileOptions::emit` asked.
    pub output: Vec<u8>,
    /// Warnings, after the [`WarningPolicy`].
    pub warnings: Vec<Diagnostic>,
    /// The ptxas and nvlink runs, in order, with their command lines and messages.
    pub tool_runs: Vec<ToolRun>,
    /// How long each phase took.
    pub timings: Timings,
    /// With [`Emit::HostObject`] of the kernel language: the C header declaring the kernels'
    /// launchers ([`host::header`]); `None` for CUDA C++, whose host object has none.
    pub header: Option<String>,
    /// The headers the source read, as [`CompileOptions::list_headers`] asks, the source itself
    /// not among them: what a build system's dependency list (`-MD`) names besides the source.
    pub headers: Vec<PathBuf>,
}

/// The paths of the kernel language's `headers` that `list` keeps ([`tidy_headers`]).
pub(crate) fn listed_headers(list: HeaderList, headers: &[preprocess::Header]) -> Vec<PathBuf> {
    tidy_headers(match list {
        HeaderList::None => Vec::new(),
        HeaderList::User => headers.iter().filter(|h| !h.system).map(|h| h.path.clone()).collect(),
        HeaderList::All => headers.iter().map(|h| h.path.clone()).collect(),
    })
}

/// Headers as a dependency list names them: `./` steps left out, an absolute path with `..`
/// steps resolved on disk (the C++ library's headers are `/../lib/gcc/x86_64-linux-gnu/12/
/// ../../../../include/c++/12/vector` to the Clang inside cdpc, and make and CMake drop `..`
/// steps as text, which through the `/lib` link names no file), a path inside the working
/// folder relative to it (Clang names a header read through a precompiled preamble by its
/// absolute path, and the same header read directly as it was found), each once, in order.
pub(crate) fn tidy_headers(headers: Vec<PathBuf>) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let mut out: Vec<PathBuf> = Vec::new();
    for path in headers {
        let path: PathBuf = path.components().filter(|c| *c != std::path::Component::CurDir).collect();
        let climbs = path.components().any(|c| c == std::path::Component::ParentDir);
        let path = if path.is_absolute() && climbs { std::fs::canonicalize(&path).unwrap_or(path) } else { path };
        let path = match cwd.as_deref().and_then(|cwd| path.strip_prefix(cwd).ok()) {
            Some(inside) if !inside.as_os_str().is_empty() => inside.to_path_buf(),
            _ => path,
        };
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// Every output of one compilation, from [`compile_artifacts`].
#[derive(Clone, Debug)]
pub struct Artifacts {
    /// Textual LLVM IR after optimisation.
    pub llvm_ir: String,
    /// PTX assembly.
    pub ptx: String,
    /// The relocatable device object (`ptxas -c`); `None` when the NVIDIA tools were not asked
    /// for ([`compile_artifacts`]'s `with_tools`).
    pub object: Option<Vec<u8>>,
    /// The cubin linked with libcudadevrt; `None` like `object`.
    pub cubin: Option<Vec<u8>>,
    /// Warnings, after the [`WarningPolicy`].
    pub warnings: Vec<Diagnostic>,
    /// The ptxas and nvlink runs, in order.
    pub tool_runs: Vec<ToolRun>,
    /// The signatures of the kernels and device functions defined, in source order.
    pub signatures: Vec<crate::signature::Signature>,
}

fn validate(options: &CompileOptions) -> Result<(), CompileError> {
    if options.emit.needs_nvidia_tools() && options.target.address_size == AddressSize::Bits32 {
        return Err(CompileError::Usage("32-bit output is PTX only: ptxas 13 refuses the 32-bit ABI; use `--emit ptx` or `--emit llvm-ir` with `--address-size 32`".into()));
    }
    if options.opt_level > 3 {
        return Err(CompileError::Usage(format!("optimisation level {} does not exist; use -O0 to -O3", options.opt_level)));
    }
    Ok(())
}

/// Compiles `source` held in memory to what `options.emit` names. Prints nothing (each tool's
/// command line and messages are in [`Compiled::tool_runs`]); the NVIDIA tools run in a temporary folder that is removed before this
/// returns. Safe to call from several threads at once.
pub fn compile(source: &str, options: &CompileOptions) -> Result<Compiled, CompileError> {
    on_large_stack(|| compile_here(source, options).map_err(|e| asm_refused(e, source, options)))
}

/// nvlink's failure over runtime functions libcudadevrt lacks as `E0801` at the calls
/// (`W0316`'s places in `warnings`, [`symbols::runtime_missing`]), with `warnings` but the
/// `W0316`s it replaces; any other error as it is.
fn runtime_link_error(e: crate::toolchain::ToolError, warnings: &[Diagnostic]) -> CompileError {
    match runtime_link_error_of(&e, warnings) {
        Some(all) => CompileError::Diagnostics(all),
        None => e.into(),
    }
}

/// [`runtime_link_error`]'s diagnostics, where `e` is such a failure.
fn runtime_link_error_of(e: &crate::toolchain::ToolError, warnings: &[Diagnostic]) -> Option<Vec<Diagnostic>> {
    let crate::toolchain::ToolError::Failed { tool, stderr, .. } = e else { return None };
    if tool != "nvlink" {
        return None;
    }
    let (found, covered) = symbols::runtime_missing(stderr, &[(None, warnings)], &[]);
    if found.is_empty() {
        return None;
    }
    let mut all = symbols::without_covered(warnings, &covered);
    all.extend(found);
    Some(all)
}

/// A ptxas failure over the program's inline assembly as `E0968` at its `asm` statements
/// ([`ptxas_asm`]); any other error as it is.
fn asm_refused(error: CompileError, source: &str, options: &CompileOptions) -> CompileError {
    let shown = crate::pipeline::SourceText { path: options.preprocess.input.clone(), text: source.to_string() };
    ptxas_asm::placed(error, options, &shown, |again| compile_here(source, again).map(|c| String::from_utf8_lossy(&c.output).into_owned()))
}

/// [`asm_refused`] for LLVM IR input, placed in its text ([`ir::shown_text`]) or the files its
/// debug locations name.
fn ir_asm_refused(error: CompileError, ir: &[u8], options: &CompileOptions) -> CompileError {
    let shown = crate::pipeline::SourceText { path: options.preprocess.input.clone(), text: crate::front::ir::shown_text(ir) };
    ptxas_asm::placed(error, options, &shown, |again| compile_cuda(CudaInput::Ir(ir), again).map(|c| String::from_utf8_lossy(&c.output).into_owned()))
}

fn compile_here(source: &str, options: &CompileOptions) -> Result<Compiled, CompileError> {
    validate(options)?;
    match Language::of(options) {
        Language::Cuda => return compile_cuda(CudaInput::Source(source), options),
        Language::Ir => return compile_cuda(CudaInput::Ir(source.as_bytes()), options),
        Language::Cdp => {}
    }
    let checked = check_here(source, options)?;
    // Text output needs no NVIDIA tool, but libdevice (for math functions) comes from the same place.
    let tools = match Toolchain::discover(&options.tools) {
        Ok(tools) => Some(tools),
        Err(e) if options.emit.needs_nvidia_tools() => return Err(e.into()),
        Err(_) => None,
    };
    let codegen = codegen_options(options, tools.as_ref(), &checked);
    let build = build_options(options);
    let wants_ir = options.emit == Emit::LlvmIr;
    // ptxas (and then nvlink) start now and wait for their inputs, so that their start-up
    // overlaps code generation (`toolchain::StartedBuild`); dropped on an error, they are killed.
    let started = match (&tools, options.emit) {
        (Some(tools), Emit::Object | Emit::Cubin) => Some(tools.start_build(&build, options.emit == Emit::Cubin)?),
        _ => None,
    };
    let (generated, mut warnings) = generate_cdp(&checked, options, &codegen, back::Outputs { llvm_ir: wants_ir, ptx: !wants_ir })?;
    let mut timings = checked.timings;
    timings.0.push((Phase::LlvmIr, generated.timings.llvm_ir));
    timings.0.push((Phase::LlvmOptPtx, generated.timings.optimize_and_emit));
    let mut header = None;
    let output = match (generated.llvm_ir, generated.ptx) {
        (Some(ir), _) => ir.into_bytes(),
        (None, Some(ptx)) if options.emit == Emit::Ptx => ptx.into_bytes(),
        (None, Some(ptx)) if options.emit == Emit::HostObject => {
            let tools = tools.expect("discovery succeeded for object output");
            let name = options.preprocess.main_name();
            let (object, stub_warnings) = host::host_object(&tools, &ptx, &checked.module, &checked.places, &name, &build)?;
            warnings.extend(options.warnings.apply(stub_warnings));
            if warnings.iter().any(Diagnostic::is_error) {
                return Err(CompileError::Diagnostics(warnings));
            }
            header = Some(host::header(&checked.module, &name));
            object
        }
        (None, Some(ptx)) => started.expect("discovery succeeded for object output").finish(&ptx).map_err(|e| runtime_link_error(e, &warnings))?,
        (None, None) => unreachable!("generate returns what it was asked for"),
    };
    let tool_runs = build.log.take();
    timings.add_tool_runs(&tool_runs);
    let headers = listed_headers(options.list_headers, &checked.headers);
    Ok(Compiled { output, warnings, tool_runs, timings, header, headers })
}

/// An input that reaches PTX through LLVM IR and the launch pipeline: CUDA C++ (through
/// Clang) or IR another front end wrote.
#[derive(Clone, Copy)]
enum CudaInput<'a> {
    Source(&'a str),
    Ir(&'a [u8]),
}

impl CudaInput<'_> {
    fn generate(self, options: &CompileOptions, tools: Option<&Toolchain>, build: &BuildOptions, outputs: back::Outputs) -> Result<cuda::Generated, CompileError> {
        match self {
            CudaInput::Source(source) => cuda::generate(source, options, tools, build, outputs),
            CudaInput::Ir(bytes) => ir::generate(bytes, options, tools, outputs),
        }
    }
}

/// Code generation of a checked `.cdp` program: `codegen` writes its launches as the documented
/// V1 sequence, then the pipeline's schedule ([`crate::pipeline::lower`], as for Clang's IR)
/// lowers them to the ABI asked for, before LLVM's optimisation. Returns what was generated and
/// the checked program's warnings with the pipeline's, placed in the source through the source
/// map; an error among the pipeline's is `Err` with all of them.
pub(crate) fn generate_cdp(checked: &Checked, options: &CompileOptions, codegen: &CodegenOptions, outputs: back::Outputs) -> Result<(back::Generated, Vec<Diagnostic>), CompileError> {
    use crate::pipeline::{Origin, Stop};
    let pipeline = pipeline_options(options, false);
    let mut warnings = checked.warnings.clone();
    let place = |found: Vec<Diagnostic>| -> Vec<Diagnostic> {
        found
            .into_iter()
            .map(|d| match &checked.map {
                Some(map) => map.remap(d),
                None => d,
            })
            .collect()
    };
    let generated = crate::front::cdp::codegen::generate_lowered(&checked.module, codegen, outputs, |module, tm| {
        let no_library = |_: &_| Ok::<(), CompileError>(());
        match crate::pipeline::lower(module, Origin::KernelLanguage, &pipeline, &crate::pipeline::SourceText::default(), Some(tm), no_library) {
            Ok(lowered) => {
                warnings.extend(place(lowered.warnings));
                Ok(())
            }
            Err(Stop::Diagnostics(found)) => {
                warnings.extend(place(found));
                Err(CompileError::Diagnostics(std::mem::take(&mut warnings)))
            }
            Err(Stop::Backend(e)) => Err(e.into()),
            Err(Stop::Link(e)) => Err(e),
            Err(Stop::Qualifiers(_)) => Err(BackendError::Internal("a kernel qualifier refused in the kernel language's IR".into()).into()),
        }
    })?;
    Ok((generated, warnings))
}

impl CompileOptions {
    /// Where device-side allocations are served, as [`CompileOptions::malloc_pool`] says, but
    /// [`MallocPool::AtLink`] is the heap's ([`MallocPool::Off`]) where no launch
    /// optimization is on (`-fno-launch-optimizations`, `-O0`): the pool belongs to the
    /// default build's optimizations, and the build without them is nvcc's. Measured
    /// (docs/DEVICE-MALLOC.md): KLAP's BT with its 25,600 launches as written and its
    /// allocations pooled stops in the device runtime in some runs, nvcc's build with a pool
    /// written by hand too, where the heap's slower allocations spread the launches out.
    pub fn pool_mode(&self) -> MallocPool {
        match self.malloc_pool {
            MallocPool::AtLink if !self.optimizes_launches() => MallocPool::Off,
            mode => mode,
        }
    }

    /// Whether launches are optimised: thresholding or aggregation on (`-O2`/`-O3` without
    /// `-fno-launch-optimizations`, or either asked for).
    pub fn optimizes_launches(&self) -> bool {
        self.launch_threshold > 0 || self.aggregate != Granularity::Off
    }

    /// Whether this compile decides the pool for its program itself: whole-program device
    /// code that is all of the program's ([`CompileOptions::sole_device_source`]), with the
    /// pool left to the default decision ([`MallocPool::Program`]).
    pub fn pools_its_program(&self) -> bool {
        self.whole_program && self.sole_device_source && self.pool_mode() == MallocPool::AtLink
    }
}

/// The launch pipeline's options from the compilation's: the one place they are mapped, for
/// every front end that writes IR (`cuda_cxx`: the input is CUDA C++, nvcc's dialect).
pub fn pipeline_options(options: &CompileOptions, cuda_cxx: bool) -> crate::pipeline::PipelineOptions {
    crate::pipeline::PipelineOptions {
        target: options.target,
        nv_module_id: options.nv_module_id.clone(),
        launch_threshold: options.launch_threshold,
        aggregate: options.aggregate,
        pass_remarks: options.pass_remarks,
        // Left to the link only where a device link follows: relocatable code.
        malloc_pool: match options.pool_mode() {
            MallocPool::AtLink if cuda_cxx && options.separate && options.pools_its_program() => MallocPool::Program,
            MallocPool::AtLink if !options.separate || (cuda_cxx && options.whole_program) => MallocPool::Off,
            mode => mode,
        },
        refuse_legacy_warp: cuda_cxx && !options.legacy_warp_intrinsics,
        nvcc_dialect: cuda_cxx,
        // nvcc's whole program: a `-c` object without `-rdc`, or `-ptx`/`-cubin` of one file.
        whole_program: cuda_cxx && (options.whole_program || !options.separate),
        opt_level: opt_level(options),
        fmad: options.fmad,
        float_math: options.float_math,
        warnings: options.warnings.clone(),
    }
}

/// [`compile_here`] for CUDA C++ and LLVM IR: Clang (for CUDA C++), the launch pipeline,
/// then the NVIDIA tools.
fn compile_cuda(input: CudaInput<'_>, options: &CompileOptions) -> Result<Compiled, CompileError> {
    if options.emit == Emit::HostObject && matches!(input, CudaInput::Ir(_)) {
        return Err(CompileError::Usage(
            "`--emit host-obj` needs host code, which LLVM IR for the device has not: build the host side with nvcc or Clang and link cdpc's device object (`--emit obj`, also with `-dc`)".into(),
        ));
    }
    // IR to IR or PTX needs no NVIDIA tool (Clang's path needs the toolkit's headers).
    let tools = match Toolchain::discover(&options.tools) {
        Ok(tools) => Some(tools),
        Err(e) if options.emit.needs_nvidia_tools() || matches!(input, CudaInput::Source(_)) => return Err(e.into()),
        Err(_) => None,
    };
    let build = build_options(options);
    let (output, warnings, mut timings, headers) = match (options.emit, input) {
        (Emit::HostObject, CudaInput::Source(source)) => cuda_host_object(source, options, tools.as_ref().expect("CUDA C++ needs the toolkit"), &build)?,
        _ => {
            let wants_ir = options.emit == Emit::LlvmIr;
            let generated = input.generate(options, tools.as_ref(), &build, back::Outputs { llvm_ir: wants_ir, ptx: !wants_ir })?;
            let tools = || tools.as_ref().expect("discovery succeeded for object output");
            let output = match (generated.llvm_ir, generated.ptx) {
                (Some(ir), _) => ir.into_bytes(),
                (None, Some(ptx)) if options.emit == Emit::Ptx => ptx.into_bytes(),
                (None, Some(ptx)) if options.emit == Emit::Object => tools().assemble(&ptx, &build)?,
                (None, Some(ptx)) => tools().build_cubin_bytes(&ptx, &build).map_err(|e| runtime_link_error(e, &generated.warnings))?,
                (None, None) => unreachable!("generate returns what it was asked for"),
            };
            (output, generated.warnings, generated.timings, generated.headers)
        }
    };
    let tool_runs = build.log.take();
    timings.add_tool_runs(&tool_runs);
    Ok(Compiled { output, warnings, tool_runs, timings, header: None, headers: tidy_headers(headers) })
}

/// The host object of CUDA C++ `source` (what `nvcc -dc` writes): its device side named under
/// the object's module id (its `static` kernels as nvcc names them) and relocatable (its
/// `extern` symbols are the link's), then Clang's host side with that fat binary embedded.
/// Returns the object, both sides' warnings, the device side's timings and the headers both
/// sides read (a header only the host side includes is one the object depends on).
///
/// The host side's Clang needs nothing of the device side but the fat binary, which is put in
/// its bitcode afterwards ([`cuda::host_bitcode`]): it runs on a thread of its own while the
/// device side compiles, assembles and packs. The device side's errors come first: with any,
/// the host side's result is not looked at, as when it did not run.
fn cuda_host_object(source: &str, options: &CompileOptions, tools: &Toolchain, build: &BuildOptions) -> Result<(Vec<u8>, Vec<Diagnostic>, Timings, Vec<PathBuf>), CompileError> {
    let id = options.nv_module_id.clone().unwrap_or_else(|| own_module_id(source, options));
    let device = CompileOptions { nv_module_id: Some(id.clone()), separate: true, ..options.clone() };
    let (device_side, host) = std::thread::scope(|scope| {
        let host = std::thread::Builder::new().name("cdpc-host-side".into()).spawn_scoped(scope, || cuda::host_bitcode(source, options, tools, build, None));
        let device_side = (|| {
            let mut generated = cuda::generate(source, &device, Some(tools), build, back::Outputs { llvm_ir: false, ptx: true })?;
            let ptx = generated.ptx.clone().expect("asked for PTX");
            // `-dc -arch=sm_XX` is `-gencode arch=compute_XX,code=[sm_XX,compute_XX]`.
            let sm = options.target.sm;
            let images = if options.host_object_images.is_empty() { vec![fatbin::Image::Cubin(sm), fatbin::Image::Ptx(sm)] } else { options.host_object_images.clone() };
            let (fatbin, other_ir) = multi_architecture_fatbin(source, &device, &images, tools, build, (sm, &ptx), options.whole_program, &generated.warnings)?;
            // `-dlto`: the device IR of every architecture compiled, for each one's link.
            let device_ir: Vec<(SmVersion, Vec<u8>)> = generated.device_ir.take().map(|ir| (sm, ir)).into_iter().chain(other_ir).collect();
            Ok::<_, CompileError>((generated, fatbin, device_ir))
        })();
        // A thread that could not start: the host side here, after the device side.
        let host = match host {
            Ok(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => cuda::host_bitcode(source, options, tools, build, None),
        };
        (device_side, host)
    });
    let (generated, fatbin, device_ir) = device_side?;
    let mark = generated.ptx.as_deref().map(pool::ptx_mark).unwrap_or_default();
    let cuda::HostObject { object: output, warnings: host_warnings, werror, headers: host_headers } =
        cuda::host_object(source, options, tools, build, host?, &fatbin, &id, &generated.warnings, mark, &device_ir)?;
    let mut warnings = generated.warnings;
    warnings.extend(sole_source_pool_remark(options, mark));
    warnings.extend(host_warnings);
    // The host compiler's `-Werror`: the host side's warnings that g++ would give, errors.
    for w in warnings.iter_mut().filter(|w| werror.contains(w)) {
        w.severity = crate::diag::Severity::Error;
    }
    if warnings.iter().any(Diagnostic::is_error) {
        return Err(CompileError::Diagnostics(warnings));
    }
    let mut headers = generated.headers;
    headers.extend(host_headers);
    Ok((output, warnings, generated.timings, headers))
}

/// `-Rpass=malloc-pool`'s remark (`R0504`) for whole-program device code: for a program's one
/// source ([`CompileOptions::sole_device_source`]), whose compile decides the pool as the
/// device link decides it for relocatable code, from what its device code's PTX says (`mark`);
/// for any other, that it keeps the heap.
fn sole_source_pool_remark(options: &CompileOptions, mark: crate::back::host_object::PoolMark) -> Option<Diagnostic> {
    use crate::back::host_object::PoolMark;
    if !options.pool_remarks || !options.whole_program || options.pool_mode() != MallocPool::AtLink {
        return None;
    }
    let decision = match mark {
        _ if !options.sole_device_source => {
            let mut d = Diagnostic::new(
                Code::MallocPoolDecision,
                crate::diag::Span::default(),
                "device-side allocations stay with the heap: this whole-program module (no `-rdc=true`) may not be all of its program's device code, and another module's `free` would not know the pool",
            )
            .with_note("a program built from this one source and inputs without device code gets the pool; with `-rdc=true` the device link decides it for all of the program's objects");
            d.labels.clear();
            return Some(d);
        }
        PoolMark::Used => pool::Decision::Pool,
        PoolMark::Safe => pool::Decision::Unused,
        PoolMark::None => pool::Decision::Heap {
            input: options.preprocess.input.as_ref().map_or_else(|| "the source".into(), |p| p.display().to_string()),
            why: "defines or declares a device runtime allocation function of its own",
        },
    };
    let mut d = Diagnostic::new(Code::MallocPoolDecision, crate::diag::Span::default(), decision.message());
    d.labels.clear();
    Some(d)
}

/// The relocatable fat binary of a host object of `images` (nvcc's `-dc -gencode ...`): each
/// architecture's device code compiled once under the object's module id, a relocatable cubin
/// (`ptxas -c`) for each `code=sm_XX` and the PTX for each `code=compute_XX`, packed as
/// `nvcc -dc` packs them. `compiled` is the PTX already made for `device.target`.
///
/// `whole`: each cubin linked with libcudadevrt (nvlink), no PTX (relocatable PTX cannot be
/// JIT-compiled alone), packed as a fat binary of whole programs.
///
/// The PTX of each architecture is made first, one after another (the front end); then the
/// cubins' ptxas (and nvlink) runs, which are independent of each other, run at the same time
/// ([`at_once`]), and of their errors the first image's is reported.
#[allow(clippy::too_many_arguments)]
fn multi_architecture_fatbin(
    source: &str,
    device: &CompileOptions,
    images: &[fatbin::Image],
    tools: &Toolchain,
    build: &BuildOptions,
    compiled: (SmVersion, &str),
    whole: bool,
    warnings: &[Diagnostic],
) -> Result<(Vec<u8>, Vec<(SmVersion, Vec<u8>)>), CompileError> {
    let mut ptx_of: Vec<(SmVersion, String)> = vec![(compiled.0, compiled.1.to_string())];
    let mut device_ir = Vec::new();
    let mut work: Vec<(fatbin::Image, SmVersion, String)> = Vec::new();
    for &image in images {
        let (sm, ptx) = match image {
            fatbin::Image::Cubin(sm) | fatbin::Image::Ptx(sm) => (sm, ptx_of.iter().find(|(s, _)| *s == sm).map(|(_, p)| p.clone())),
        };
        let ptx = match ptx {
            Some(ptx) => ptx,
            None => {
                let options = CompileOptions { target: Target { sm, ..device.target }, ..device.clone() };
                let generated = cuda::generate(source, &options, Some(tools), build, back::Outputs { llvm_ir: false, ptx: true })?;
                let ptx = generated.ptx.expect("asked for PTX");
                device_ir.extend(generated.device_ir.map(|ir| (sm, ir)));
                ptx_of.push((sm, ptx.clone()));
                ptx
            }
        };
        work.push((image, sm, ptx));
    }
    // One image: `None` where it is left out of the fat binary.
    let pack = |image: fatbin::Image, sm: SmVersion, ptx: &str, build: &BuildOptions| -> Result<Option<FatbinImage>, CompileError> {
        let build = BuildOptions { arch: sm, ..build.clone() };
        Ok(Some(match image {
            fatbin::Image::Cubin(_) if whole => FatbinImage { ptx: false, sm, bytes: whole_cubin(tools, source, ptx, &build, warnings)? },
            fatbin::Image::Cubin(_) => FatbinImage { ptx: false, sm, bytes: tools.assemble(ptx, &build)? },
            // A whole program's PTX for the driver to JIT, as nvcc's `-c` embeds it, where the
            // PTX stands alone: it calls nothing of the device runtime's library (a device-side
            // launch, which nvcc refuses without `-rdc` and cdpc links libcudadevrt for; the
            // driver's JIT resolves `vprintf`, `malloc` and the like itself, as for nvcc's).
            fatbin::Image::Ptx(_) if whole && needs_device_runtime(ptx) => return Ok(None),
            fatbin::Image::Ptx(_) => FatbinImage { ptx: true, sm, bytes: ptx.as_bytes().to_vec() },
        }))
    };
    let cubins = work.iter().filter(|(image, _, _)| matches!(image, fatbin::Image::Cubin(_))).count();
    let packed = at_once(&work, build, cubins >= 2, |(image, sm, ptx), build| pack(*image, *sm, ptx, build));
    let mut packed_images = Vec::new();
    for packed in packed {
        if let Some(packed) = packed? {
            if !packed_images.contains(&packed) {
                packed_images.push(packed);
            }
        }
    }
    if whole && packed_images.is_empty() {
        // `code=compute_XX` alone: the cubin of the target, linked.
        let build = BuildOptions { arch: compiled.0, ..build.clone() };
        packed_images.push(FatbinImage { ptx: false, sm: compiled.0, bytes: whole_cubin(tools, source, compiled.1, &build, warnings)? });
    }
    Ok((tools.fatbinary(&packed_images, !whole, build)?, device_ir))
}

/// Whether `ptx` declares a function of the device runtime's library (`cudaLaunchDeviceV2`,
/// `cudaGetParameterBufferV2`, `cudaStreamCreateWithFlags`, ...: `.extern` names that start
/// with `cuda`), which only a link with libcudadevrt resolves.
fn needs_device_runtime(ptx: &str) -> bool {
    ptx.lines().filter(|l| l.trim_start().starts_with(".extern")).any(|l| {
        let name = l.split(|c: char| c == '(' || c.is_whitespace()).filter(|w| !w.is_empty()).find(|w| w.starts_with("cuda") || w.starts_with("__cuda"));
        name.is_some()
    })
}

/// A whole program's cubin: by ptxas alone when the PTX declares nothing `.extern` (as nvcc's
/// build without `-rdc`), else relocatable and linked with libcudadevrt (device-side launches:
/// nvcc refuses those without `-rdc`, cdpc links the device runtime in).
///
/// A symbol no device code of the file defines is `E0801` at its first mention in `source`:
/// without `-rdc=true` another file's device code is out of reach, as with nvcc; a runtime
/// function libcudadevrt lacks is `E0801` at its calls, where `warnings` (the device side's)
/// placed them ([`runtime_link_error`]).
fn whole_cubin(tools: &Toolchain, source: &str, ptx: &str, build: &BuildOptions, warnings: &[Diagnostic]) -> Result<Vec<u8>, CompileError> {
    if !ptx.lines().any(|l| l.trim_start().starts_with(".extern")) {
        return Ok(tools.assemble_whole(ptx, build)?);
    }
    match tools.build_cubin_bytes(ptx, build) {
        Err(e) if runtime_link_error_of(&e, warnings).is_some() => Err(runtime_link_error(e, warnings)),
        Err(crate::toolchain::ToolError::Failed { tool, stderr, .. }) if tool == "nvlink" && stderr.contains("Undefined reference to") => {
            let undefined: Vec<String> = stderr.lines().filter(|l| l.contains("Undefined reference to")).filter_map(|l| l.split('\'').nth(1)).map(str::to_string).collect();
            let places = symbols::text_places(&symbols::PtxSymbols { defined: Vec::new(), undefined: undefined.clone() }, source);
            let diagnostics = undefined
                .iter()
                .map(|symbol| {
                    let name = symbols::source_name(symbol);
                    let mut d = Diagnostic::new(Code::UndefinedDeviceSymbol, crate::diag::Span::default(), format!("device symbol `{name}` is defined in no device code of this file"))
                        .with_note("without `-rdc=true` each CUDA C++ file is a whole program, as with nvcc: compile with `-rdc=true` (or `-dc`) to call or launch another file's device code");
                    d.labels = places.get(symbol).cloned().into_iter().collect();
                    d
                })
                .collect();
            Err(CompileError::Diagnostics(diagnostics))
        }
        other => Ok(other?),
    }
}

/// Compiles `source` once and returns the LLVM IR, the PTX and, when `with_tools` is true, the
/// object and the linked cubin (ptxas runs once; its object is what nvlink links).
/// `options.emit` is ignored. Like [`compile`], prints nothing and may run on several threads.
///
/// ```
/// use cdpc::driver::{compile_artifacts, CompileOptions};
/// let source = "extern \"C\" __global__ void k(int *p) { *p = 1; }";
/// let out = compile_artifacts(source, &CompileOptions::default(), false).unwrap();
/// assert!(out.llvm_ir.contains("define") && out.ptx.contains(".entry k"));
/// assert!(out.cubin.is_none());
/// ```
pub fn compile_artifacts(source: &str, options: &CompileOptions, with_tools: bool) -> Result<Artifacts, CompileError> {
    on_large_stack(|| compile_artifacts_here(source, options, with_tools).map_err(|e| asm_refused(e, source, options)))
}

fn compile_artifacts_here(source: &str, options: &CompileOptions, with_tools: bool) -> Result<Artifacts, CompileError> {
    let options = CompileOptions { emit: if with_tools { Emit::Cubin } else { Emit::Ptx }, ..options.clone() };
    validate(&options)?;
    match Language::of(&options) {
        Language::Cuda => return cuda_artifacts(CudaInput::Source(source), &options, with_tools),
        Language::Ir => return cuda_artifacts(CudaInput::Ir(source.as_bytes()), &options, with_tools),
        Language::Cdp => {}
    }
    let checked = check_here(source, &options)?;
    let tools = match Toolchain::discover(&options.tools) {
        Ok(tools) => Some(tools),
        Err(e) if with_tools => return Err(e.into()),
        Err(_) => None,
    };
    let codegen = codegen_options(&options, tools.as_ref(), &checked);
    let (generated, warnings) = generate_cdp(&checked, &options, &codegen, back::Outputs { llvm_ir: true, ptx: true })?;
    let (llvm_ir, ptx) = (generated.llvm_ir.expect("asked for IR"), generated.ptx.expect("asked for PTX"));
    let build = build_options(&options);
    let (object, cubin) = object_and_cubin(tools.filter(|_| with_tools), &ptx, &build, &warnings)?;
    let signatures = crate::signature::signatures(&checked.module);
    Ok(Artifacts { llvm_ir, ptx, object, cubin, warnings, tool_runs: build.log.take(), signatures })
}

/// The relocatable object of `ptx` and the cubin linked from it, when there are `tools`.
fn object_and_cubin(tools: Option<Toolchain>, ptx: &str, build: &BuildOptions, warnings: &[Diagnostic]) -> Result<(Option<Vec<u8>>, Option<Vec<u8>>), CompileError> {
    let Some(tools) = tools else { return Ok((None, None)) };
    let object = tools.assemble(ptx, build)?;
    let cubin = tools.link_objects(&[&object], build).map_err(|e| runtime_link_error(e, warnings))?;
    Ok((Some(object), Some(cubin)))
}

/// [`compile_artifacts_here`] for CUDA C++ and LLVM IR (no signatures: no HIR describes them).
fn cuda_artifacts(input: CudaInput<'_>, options: &CompileOptions, with_tools: bool) -> Result<Artifacts, CompileError> {
    let tools = match Toolchain::discover(&options.tools) {
        Ok(tools) => Some(tools),
        Err(e) if with_tools || matches!(input, CudaInput::Source(_)) => return Err(e.into()),
        Err(_) => None,
    };
    let build = build_options(options);
    let generated = input.generate(options, tools.as_ref(), &build, back::Outputs { llvm_ir: true, ptx: true })?;
    let (llvm_ir, ptx) = (generated.llvm_ir.expect("asked for IR"), generated.ptx.expect("asked for PTX"));
    let (object, cubin) = object_and_cubin(tools.filter(|_| with_tools), &ptx, &build, &generated.warnings)?;
    Ok(Artifacts { llvm_ir, ptx, object, cubin, warnings: generated.warnings, tool_runs: build.log.take(), signatures: Vec::new() })
}

/// Compiles LLVM IR another front end wrote, textual or bitcode (told apart by the bitcode
/// magic), to what `options.emit` names, under the contract of docs/IR-INPUT.md ([`ir`]):
/// the launch pipeline, NVPTX, then ptxas and nvlink with libcudadevrt as for any source.
/// `options.language` is ignored. Like [`compile`], prints nothing and may run on several
/// threads.
///
/// ```
/// use cdpc::driver::{compile_ir, CompileOptions, Emit};
/// let ir = r#"
///     target triple = "nvptx64-nvidia-cuda"
///     define ptx_kernel void @k(ptr %p) { store i32 1, ptr %p, align 4  ret void }
/// "#;
/// let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
/// let ptx = String::from_utf8(compile_ir(ir.as_bytes(), &options).unwrap().output).unwrap();
/// assert!(ptx.contains(".entry k("));
/// ```
pub fn compile_ir(ir: &[u8], options: &CompileOptions) -> Result<Compiled, CompileError> {
    on_large_stack(|| {
        validate(options)?;
        compile_cuda(CudaInput::Ir(ir), options).map_err(|e| ir_asm_refused(e, ir, options))
    })
}

/// [`compile_artifacts`] for LLVM IR or bitcode ([`compile_ir`]).
pub fn compile_ir_artifacts(ir: &[u8], options: &CompileOptions, with_tools: bool) -> Result<Artifacts, CompileError> {
    on_large_stack(|| {
        let options = CompileOptions { emit: if with_tools { Emit::Cubin } else { Emit::Ptx }, ..options.clone() };
        validate(&options)?;
        cuda_artifacts(CudaInput::Ir(ir), &options, with_tools).map_err(|e| ir_asm_refused(e, ir, &options))
    })
}

/// [`compile_ir`], writing the output to `output` (it appears only when everything
/// succeeded); `inputs` are the files it must never replace (`E0700`), as for
/// [`compile_inputs_to_file`].
pub fn compile_ir_to_file(ir: &[u8], inputs: &[&Path], output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    to_file(inputs, output, options, || compile_ir(ir, options))
}

fn codegen_options(options: &CompileOptions, tools: Option<&Toolchain>, checked: &Checked) -> CodegenOptions {
    CodegenOptions { opt_level: opt_level(options), libdevice: tools.and_then(|t| t.libdevice.clone()), debug: checked.debug.clone(), fmad: options.fmad, math: options.float_math }
}

/// The optimisation level of LLVM and ptxas: `-G` means -O0.
fn opt_level(options: &CompileOptions) -> u8 {
    if options.debug == Some(DebugLevel::Full) {
        0
    } else {
        options.opt_level
    }
}

fn build_options(options: &CompileOptions) -> BuildOptions {
    let mut build = BuildOptions::new(options.target.sm);
    build.opt_level = Some(opt_level(options));
    match options.debug {
        Some(DebugLevel::LineTables) => build.ptxas_args.push("-lineinfo".into()),
        Some(DebugLevel::Full) => {
            build.ptxas_args.push("-g".into());
            build.nvlink_args.push("-g".into());
        }
        None => {}
    }
    build.ptxas_args.extend(options.ptxas_args.iter().map(Into::into));
    build.nvlink_args.extend(options.nvlink_args.iter().map(Into::into));
    build.tool_timeout = options.tool_timeout;
    build.ptxas_parts = options.split_compile.map_or(crate::toolchain::ptx_parts::Parts::AUTO, crate::toolchain::ptx_parts::Parts::at_most);
    build
}

/// Compiles the file at `input` and writes the result to `output`. The output file appears
/// only when everything succeeded; work files never outlive the call.
pub fn compile_file(input: &Path, output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    let started = Instant::now();
    let mut options = options.clone();
    options.preprocess.input.get_or_insert_with(|| input.to_path_buf());
    let file = InputFile::read(input, &options)?;
    let read = started.elapsed();
    let mut compiled = file.compile_to_file(&[input], output, &options)?;
    compiled.timings.0.insert(0, (Phase::Read, read));
    Ok(compiled)
}

/// Reads an LLVM IR or bitcode input's bytes.
pub fn read_ir(path: &Path) -> Result<Vec<u8>, CompileError> {
    std::fs::read(path).map_err(|error| CompileError::Io { path: path.to_path_buf(), action: "cannot read", error })
}

/// An input file as the compiler takes it: source text, or the bytes of LLVM IR (which may be
/// bitcode) with the text its diagnostics are rendered against ([`ir::shown_text`]).
pub struct InputFile {
    /// The source text, or what IR's diagnostics are rendered against.
    pub shown: String,
    /// The IR's bytes, for an input of [`Language::Ir`].
    pub ir: Option<Vec<u8>>,
}

impl InputFile {
    /// Reads `path` as `options` say its language is ([`Language::of`]): a source that is not
    /// UTF-8 is [`CompileError::NotUtf8`]; IR is read as bytes.
    pub fn read(path: &Path, options: &CompileOptions) -> Result<InputFile, CompileError> {
        if Language::of(options) == Language::Ir {
            let ir = read_ir(path)?;
            Ok(InputFile { shown: crate::front::ir::shown_text(&ir), ir: Some(ir) })
        } else {
            Ok(InputFile { shown: read_source_as(path, Language::of(options))?, ir: None })
        }
    }

    /// [`compile`] or [`compile_ir`], as the input is.
    pub fn compile(&self, options: &CompileOptions) -> Result<Compiled, CompileError> {
        match &self.ir {
            Some(ir) => compile_ir(ir, options),
            None => compile(&self.shown, options),
        }
    }

    /// [`compile_inputs_to_file`] or [`compile_ir_to_file`], as the input is.
    pub fn compile_to_file(&self, inputs: &[&Path], output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
        to_file(inputs, output, options, || self.compile(options))
    }
}

/// Like [`compile_file`] for source text already in memory.
pub fn compile_to_file(source: &str, output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    compile_inputs_to_file(source, &[], output, options)
}

/// Like [`compile_to_file`] for source text read from `inputs` (the source file, included
/// files): the output never replaces one of them (`E0700`), nor, unless
/// [`CompileOptions::overwrite`] allows it, an existing file that is no compiler output
/// (`E0701`). The `cdpc` command calls this.
pub fn compile_inputs_to_file(source: &str, inputs: &[&Path], output: &Path, options: &CompileOptions) -> Result<Compiled, CompileError> {
    to_file(inputs, output, options, || compile(source, options))
}

/// Runs `compile` and writes its output to `output`, which is refused first (before any work)
/// when it is one of `inputs` or, unless the options allow it, no compiler output.
fn to_file(inputs: &[&Path], output: &Path, options: &CompileOptions, compile: impl FnOnce() -> Result<Compiled, CompileError>) -> Result<Compiled, CompileError> {
    let guard = OutputGuard { inputs: inputs.iter().map(|p| p.to_path_buf()).collect(), overwrite: options.overwrite };
    let file = OutputFile::prepare_guarded(output, guard)?;
    let compiled = compile()?;
    file.commit(&compiled.output)?;
    Ok(compiled)
}

/// Reads a source file. Bytes that are not UTF-8 are [`CompileError::NotUtf8`]: an `E0008`
/// diagnostic at the first bad byte (see [`decode_source`]).
pub fn read_source(path: &Path) -> Result<String, CompileError> {
    let bytes = std::fs::read(path).map_err(|error| CompileError::Io { path: path.to_path_buf(), action: "cannot read", error })?;
    decode_source(bytes).map_err(|e| CompileError::NotUtf8(Box::new(e)))
}

/// Reads a source file of `language`. The kernel language's must be UTF-8 ([`read_source`]);
/// CUDA C++ need not be, as for nvcc (a Latin-1 comment or string literal): such a file is its
/// [`NotUtf8::shown`] text, every byte that is not UTF-8 a `?` at the same offset, which
/// diagnostics are rendered against, while Clang reads the file's own bytes
/// (`cuda::input_on_disk`).
pub fn read_source_as(path: &Path, language: Language) -> Result<String, CompileError> {
    match read_source(path) {
        Err(CompileError::NotUtf8(e)) if language == Language::Cuda => Ok(e.shown),
        other => other,
    }
}
