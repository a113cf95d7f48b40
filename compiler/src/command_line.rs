//! The `cdpc` command line as clap reads it ([`Cli`]), the parsers of its values, and the
//! diagnostics' format it asks for, read before clap parses it ([`requested_format`]).

use cdpc::driver;
use cdpc::{DefaultStream, LaunchAbi, SmVersion};
use clap::{ArgMatches, Parser, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
// An option given twice is taken once, the last value winning (`-dc -c`, `-O3 ... -O2`), as
// nvcc and gcc take it.
#[command(name = "cdpc", version, about = "Compile CUDA kernels with device-side launches (.cdp) to linked cubins", args_override_self = true)]
pub(crate) struct Cli {
    /// Source files (a subset of CUDA C), relocatable device objects (`.o`, from cdpc or
    /// `nvcc -dc`) and static archives of them (`.a`). One source alone compiles as a whole
    /// program; several inputs, an object or `-l` are compiled separately and linked
    #[arg(required_unless_present_any = ["list_gpu_arch", "list_gpu_code", "cache_status"], value_name = "INPUT")]
    pub(crate) inputs: Vec<PathBuf>,
    /// Output file; `-` writes PTX or LLVM IR to standard output [default: the first INPUT's
    /// name with the extension of --emit, with -dc each source's with `.o`, in the current
    /// folder or -odir's, as nvcc's]
    #[arg(short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Compile each source to an object like `nvcc -dc`'s and stop (also spelled `-c`; cdpc's
    /// device code is always relocatable): the file's host code, its kernels' host stubs and
    /// their registration, and its relocatable device code, for nvcc's or g++'s host link and
    /// cdpc's or nvcc's device link; `--emit obj` writes the device object alone. No link:
    /// `extern` device functions and variables are left to the link step
    #[arg(long = "device-c")]
    pub(crate) device_c: bool,
    /// Compile each source to an object and stop (nvcc's `-c`): `-dc`'s object with
    /// `-rdc=true`, and for the kernel language and LLVM IR; for CUDA C++ without it, nvcc's
    /// whole-program object, its device code linked with libcudadevrt and registered by the
    /// object itself, for a host link with no device link
    #[arg(short = 'c', long = "compile")]
    pub(crate) compile: bool,
    /// nvcc's `-rdc`: relocatable device code, which `-c` then compiles as `-dc` does (cdpc's
    /// programs and `-dc` objects always have it: device-side launches need it)
    #[arg(long = "rdc", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    pub(crate) rdc: bool,
    /// Link only (nvcc's `-dlink`): the inputs are objects and archives (sources are compiled
    /// first), the output is one cubin linked with libcudadevrt
    #[arg(long = "device-link")]
    pub(crate) device_link: bool,
    /// A fat binary of the device code (nvcc's `-fatbin`): `-gencode`'s images, else `--arch`'s
    /// cubin and its PTX, as nvcc's `-arch=sm_XX` makes them; `<stem>.fatbin` in the current
    /// folder (or `-odir`'s) unless `-o` names it
    #[arg(long = "fatbin")]
    pub(crate) fatbin: bool,
    /// Link the device library libNAME.a (repeatable; `-lNAME` or `-l NAME`)
    #[arg(short = 'l', value_name = "NAME")]
    pub(crate) library: Vec<String>,
    /// Look for `-l` libraries in this folder (repeatable, in order)
    #[arg(short = 'L', value_name = "DIR")]
    pub(crate) library_dir: Vec<PathBuf>,
    /// nvcc's module id of the file (the contents of the file cudafe++ writes with
    /// `--gen_module_id_file`): `static` kernels and variables get nvcc's names,
    /// `__nv_static_<n>_<ID>_<name>`, for host stubs that nvcc wrote
    #[arg(long, value_name = "ID")]
    pub(crate) nv_module_id: Option<String>,
    /// Whether a floating-point multiply and an add may become one `fma` (nvcc's `-fmad`,
    /// true by default as in nvcc; `-fmad=false` is accepted too)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) fmad: bool,
    /// nvcc's `--use_fast_math`: `--ftz=true --prec-div=false --prec-sqrt=false` (unless given
    /// otherwise) and the fast math library: `sinf`, `expf`, `powf`, ... as `__sinf`, `__expf`,
    /// `__powf`, and every single-precision division approximate, nvcc's instructions
    #[arg(long = "use-fast-math", visible_alias = "use_fast_math")]
    pub(crate) use_fast_math: bool,
    /// nvcc's `-ftz`: flush single-precision denormals to zero (default false, true with
    /// `--use-fast-math`)
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub(crate) ftz: Option<bool>,
    /// nvcc's `-prec-div`: IEEE-rounded single-precision division and reciprocals (default true,
    /// false with `--use-fast-math`: `div.full`, `rcp.approx`)
    #[arg(long = "prec-div", value_name = "BOOL", action = clap::ArgAction::Set)]
    pub(crate) prec_div: Option<bool>,
    /// nvcc's `-prec-sqrt`: IEEE-rounded single-precision square roots (default true, false with
    /// `--use-fast-math`: `sqrt.approx`)
    #[arg(long = "prec-sqrt", value_name = "BOOL", action = clap::ArgAction::Set)]
    pub(crate) prec_sqrt: Option<bool>,
    /// With `--emit host-obj` or `-dc` of the kernel language (`.cdp`, `-x cdp`): also write a
    /// C header declaring each kernel's launcher (`cdpc_launch_KERNEL`) and, for nvcc, the
    /// kernels
    #[arg(long, value_name = "FILE")]
    pub(crate) host_header: Option<PathBuf>,
    /// Line tables in the device code (`.loc` lines in the PTX, for profilers and
    /// compute-sanitizer), the code optimised as usual (nvcc's `-lineinfo`)
    #[arg(long = "lineinfo", visible_alias = "generate-line-info")]
    pub(crate) lineinfo: bool,
    /// Full debug information for cuda-gdb (DWARF: lines, functions, variables) at -O0
    /// (nvcc's `-G`)
    #[arg(short = 'G', long = "device-debug")]
    pub(crate) device_debug: bool,
    /// Add targets to a fat binary, as nvcc: `arch=compute_90,code=sm_90` (a linked cubin),
    /// `code=compute_90` (PTX for JIT), `code=[sm_90,compute_90]` (repeatable). Writes a
    /// `.fatbin` packed by the toolkit's fatbinary; --arch is then ignored
    #[arg(long = "gencode", value_name = "arch=compute_XX,code=...", value_parser = cdpc::driver::fatbin::parse_gencode)]
    pub(crate) gencode: Vec<Vec<cdpc::driver::fatbin::Image>>,
    /// What to produce [default: a program (nvcc's default) when the inputs hold host code (a
    /// `.cu` file, a `.cpp`/`.c` file, a host object) and `-o` names no `.cubin`, `.ptx`,
    /// `.fatbin` or `.ll`; a cubin otherwise (the kernel language and LLVM IR have no host code)]
    #[arg(long, value_enum)]
    pub(crate) emit: Option<EmitArg>,
    /// Preprocess only (nvcc's and Clang's `-E`): a CUDA C++ source's preprocessed text, the
    /// device side of each architecture and then the host side, with line markers, to standard
    /// output or `-o FILE` (docs/CCACHE.md)
    #[arg(short = 'E', long = "preprocess")]
    pub(crate) preprocess_only: bool,
    /// The host compiler (nvcc's `-ccbin`): a C++ compiler, or its folder, for `.cpp`/`.c` files
    /// and the program's link [default: `CDPC_HOST_CXX`, else `c++`, `g++` or `clang++` on PATH]
    #[arg(long = "ccbin", value_name = "PATH")]
    pub(crate) ccbin: Option<PathBuf>,
    /// Pass an argument to the host linker of a program (repeatable; nvcc's `-Xlinker`)
    #[arg(long = "Xlinker", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) xlinker: Vec<String>,
    /// Build a shared library instead of an executable (nvcc's `-shared`)
    #[arg(long = "shared")]
    pub(crate) shared: bool,
    /// Build a static library (nvcc's `-lib`): each source's object as `-c` writes it (with
    /// `-rdc=true` relocatable device code), host files' and the objects given, archived with
    /// the host's `ar` [default output: `a.a`]
    #[arg(long = "lib")]
    pub(crate) lib: bool,
    /// Build the program, then run it (nvcc's `-run`): `./OUTPUT` with `--run-args`, standard
    /// input and output its own; cdpc exits with its status. The program stays (`a.out` unless
    /// `-o` names it), as nvcc's does
    #[arg(long = "run")]
    pub(crate) run: bool,
    /// The program's arguments for `--run` (nvcc's `-run-args`): a comma-separated list, each
    /// item split at spaces as nvcc's shell splits it; may be repeated
    #[arg(long = "run-args", value_name = "ARGS")]
    pub(crate) run_args: Vec<String>,
    /// The archiver of `--lib` (nvcc's `-arbin`) [default: `CDPC_AR`, else `ar` on PATH]
    #[arg(long = "archiver", value_name = "PATH")]
    pub(crate) archiver: Option<PathBuf>,
    /// Pass an argument to the archiver of `--lib` (repeatable; nvcc's `-Xarchive`)
    #[arg(long = "Xarchive", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) xarchive: Vec<String>,
    /// The folder of each source's object when `-o` is not given (nvcc's `-odir`), with `-dc`
    /// and `-c`; the dependency list of `-MD` names the object there
    #[arg(long = "output-directory", value_name = "DIR")]
    pub(crate) output_directory: Option<PathBuf>,
    /// List the architectures cdpc builds for with the toolkit it finds, as `compute_XX`
    /// lines, and stop (nvcc's `--list-gpu-arch`); with `--list-gpu-code` too, as
    /// `arch=compute_XX,code=sm_XX`
    #[arg(long = "list-gpu-arch")]
    pub(crate) list_gpu_arch: bool,
    /// List the architectures cdpc builds for with the toolkit it finds, as `sm_XX` lines, and
    /// stop (nvcc's `--list-gpu-code`)
    #[arg(long = "list-gpu-code")]
    pub(crate) list_gpu_code: bool,
    /// Print where cdpc's cache folder is (`CDPC_CACHE_DIR`), what it holds against its bound
    /// (`CDPC_CACHE_MAX_SIZE`) and the fillers making headers in it now, and stop
    #[arg(long = "cache-status")]
    pub(crate) cache_status: bool,
    /// The CUDA runtime a program links (nvcc's `--cudart`): static (the default), shared or none
    #[arg(long = "cudart", value_name = "static|shared|none", default_value = "static", value_parser = parse_cudart)]
    pub(crate) cudart: driver::program::Cudart,
    /// GPU architecture (nvcc's `-arch=sm_90` is accepted too; nvcc's `-arch=all`, `all-major`
    /// and `native` build each architecture of the set, as nvcc)
    #[arg(long, default_value = "sm_90", value_name = "sm_XX")]
    pub(crate) arch: SmVersion,
    /// nvcc's `-arch=all`, `-arch=all-major`, `-arch=native`, as `--arch` spells them
    #[arg(long = "arch-set", hide = true, value_parser = ["all", "all-major", "native"])]
    pub(crate) arch_set: Option<String>,
    /// nvcc's `-dlto` (`-lto`, `code=lto_XX`): link-time optimisation of device code
    /// (`driver/lto.rs`): `-dc` objects of CUDA C++ carry their device IR beside the cubin, and
    /// the device link compiles the IR of all of them together
    #[arg(long = "device-lto", hide = true)]
    pub(crate) device_lto: bool,
    /// Optimisation level for LLVM and ptxas
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub(crate) opt_level: u8,
    /// Device-launch ABI: v2 is what nvcc 13 emits (all streams); v1 is the documented
    /// cudaGetParameterBuffer/cudaLaunchDevice pair (no tail launch, no fire-and-forget)
    #[arg(long, default_value = "v2", value_name = "v1|v2")]
    pub(crate) launch_abi: LaunchAbi,
    /// What stream 0 means in device code, as nvcc's option: per-thread defines
    /// CUDA_API_PER_THREAD_DEFAULT_STREAM and calls the runtime's `_ptsz` entry points
    #[arg(long, default_value = "legacy", value_name = "legacy|null|per-thread")]
    pub(crate) default_stream: DefaultStream,
    /// Pointer size of the PTX; 32-bit output is PTX or LLVM IR only
    #[arg(long, value_enum, default_value_t = AddressSizeArg::Bits64, value_name = "32|64")]
    pub(crate) address_size: AddressSizeArg,
    /// Pass an argument to ptxas (repeatable; nvcc's `-Xptxas -v,-O3` is two)
    #[arg(long = "Xptxas", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) xptxas: Vec<String>,
    /// Pass an argument to the host compiler, which for a CUDA C++ file's object (`-dc`) is
    /// the host side's Clang: `-Xcompiler -fPIC` (repeatable; nvcc's `-Xcompiler -fPIC,-Wall` is
    /// two). The device code never sees it, as with nvcc
    #[arg(long = "Xcompiler", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) xcompiler: Vec<String>,
    /// The C++ dialect of CUDA C++ files, as nvcc's `-std` (default: C++17 with GNU extensions,
    /// as nvcc with g++); the kernel language (`.cdp`) is C whatever this says
    #[arg(long, value_name = "c++03|c++11|c++14|c++17|c++20|c++23", value_parser = parse_std)]
    pub(crate) std: Option<cdpc::front::cuda::CxxStandard>,
    /// Report no warnings (nvcc's `-w`): cdpc's, Clang's, ptxas's and nvlink's
    #[arg(short = 'w', long = "disable-warnings")]
    pub(crate) disable_warnings: bool,
    /// No warning for the use of a deprecated entity in CUDA C++ (nvcc's
    /// `-Wno-deprecated-declarations`)
    #[arg(long = "Wno-deprecated-declarations")]
    pub(crate) no_deprecation_warnings: bool,
    /// Also write a dependency list, a Make rule naming the source and every header it read
    /// (nvcc's and gcc's `-MD`), to the output's name with `.d` or `--MF`'s file
    #[arg(long = "MD")]
    pub(crate) dependencies: bool,
    /// `--MD` without the headers of system folders (`-isystem`, CUDA's, Clang's, the C and C++
    /// libraries'; nvcc's and gcc's `-MMD`)
    #[arg(long = "MMD")]
    pub(crate) user_dependencies: bool,
    /// The dependency list's file (`-MF`)
    #[arg(long = "MF", value_name = "FILE")]
    pub(crate) dependency_file: Option<PathBuf>,
    /// The dependency list's target (`-MT`; default: the output file)
    #[arg(long = "MT", value_name = "TARGET")]
    pub(crate) dependency_target: Option<String>,
    /// Compile nothing: write each source's dependency list (nvcc's `-M`), a Make rule for
    /// `<stem>.o` (`-odir`'s folder, `-MT`'s target) naming the source and every header it reads,
    /// to `-MF`'s file, else `-o`'s, else standard output
    #[arg(long = "M")]
    pub(crate) generate_dependencies: bool,
    /// `--M` without the headers of system folders, as `--MMD` lists them (nvcc's `-MM`)
    #[arg(long = "MM")]
    pub(crate) generate_user_dependencies: bool,
    /// Add an empty rule for each header to the dependency list (`-MP`), so that make does not
    /// fail when a header is removed
    #[arg(long = "MP")]
    pub(crate) phony_targets: bool,
    /// Pass an argument to nvlink (repeatable)
    #[arg(long = "Xnvlink", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) xnvlink: Vec<String>,
    /// Print each tool's command line
    #[arg(short = 'v', long)]
    pub(crate) verbose: bool,
    /// Print the jobs of this command line, one line each, and run none (nvcc's `-dryrun`, Clang's `-###`)
    #[arg(long = "dry-run")]
    pub(crate) dry_run: bool,
    /// Directory of a CUDA toolkit or of the NVIDIA wheels (before CUDA_HOME in the search)
    #[arg(long, value_name = "DIR")]
    pub(crate) cuda_home: Option<PathBuf>,
    /// Treat parameter buffers over 4 KB as errors (runtimes before CUDA 12.1 refuse them)
    #[arg(long)]
    pub(crate) strict_param_limit: bool,
    /// Treat every warning as an error
    #[arg(long = "Werror")]
    pub(crate) werror: bool,
    /// Treat this warning code as an error (repeatable)
    #[arg(long, value_name = "CODE")]
    pub(crate) deny: Vec<String>,
    /// Do not report this warning code (repeatable)
    #[arg(long, value_name = "CODE")]
    pub(crate) allow: Vec<String>,
    /// Print the time of each phase to stderr (`time: PHASE SECONDS`)
    #[arg(long)]
    pub(crate) time: bool,
    /// Append the time of each phase to FILE as nvcc's `-time FILE` does (a CSV table; `-`: standard output)
    #[arg(long = "time-file", value_name = "FILE")]
    pub(crate) time_file: Option<PathBuf>,
    /// Colour in diagnostics
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub(crate) color: ColorArg,
    /// Launch optimizations, on by default at -O2 and -O3: small grids run in their launching
    /// thread (thresholding at 128 threads) and the rest aggregated, per warp or per grid as
    /// each kernel's launches suit (docs/AGGREGATION.md, "By default").
    /// `-fno-launch-optimizations` turns them off; `-faggregate-launches` and
    /// `-flaunch-threshold` choose exactly instead
    #[arg(long = "flaunch-optimizations", overrides_with = "no_launch_optimizations")]
    pub(crate) launch_optimizations: bool,
    /// Launches as written: no thresholding, no aggregation (the build nvcc's matches)
    #[arg(long = "fno-launch-optimizations", overrides_with = "launch_optimizations")]
    pub(crate) no_launch_optimizations: bool,
    /// Aggregate the device launches of a parent grid, of a block, or of the threads of a warp
    /// that launch together, into one launch (`-faggregate-launches=block`; `auto` chooses per
    /// kernel between warp and grid; remarks with `-Rpass=aggregate`). Given alone, no
    /// thresholding
    #[arg(long = "faggregate-launches", value_name = "auto|warp|block|grid|off")]
    pub(crate) aggregate_launches: Option<cdpc::pipeline::aggregate::Granularity>,
    /// Run a launch whose grid has at most N threads in all inside the launching thread, one
    /// child thread after another, instead of launching it (`-flaunch-threshold=128`; before
    /// aggregation; 0: never). Children that need their threads together, or whose threads
    /// loop, are left alone (remarks with `-Rpass=aggregate`). Given alone, no aggregation
    #[arg(long = "flaunch-threshold", value_name = "N")]
    pub(crate) launch_threshold: Option<u32>,
    /// Serve device-side `malloc` and `cudaMalloc` of at most 16 KiB from a 32 MiB pool in the
    /// program's static memory, the heap when the pool is full (`-fdevice-malloc-pool`): one
    /// atomic add instead of the heap, which many threads allocating at once make slow. Every
    /// device file that frees what another allocated must be compiled with it. Without either
    /// option the device link of relocatable code decides: the pool where every device object
    /// of the program is cdpc's and frees through it (docs/DEVICE-MALLOC.md)
    #[arg(long = "fdevice-malloc-pool", overrides_with = "no_device_malloc_pool")]
    pub(crate) device_malloc_pool: bool,
    /// The heap for every device-side allocation, as written: no pool, also not at the link
    #[arg(long = "fno-device-malloc-pool", overrides_with = "device_malloc_pool")]
    pub(crate) no_device_malloc_pool: bool,
    /// Compile CUDA C++'s warp functions of before CUDA 9 (`__shfl`, `__any`, `__ballot`, ...)
    /// as their `_sync` forms over the active lanes, with a warning (W0902), where by default
    /// they are an error as nvcc's (E0903: nvcc refuses them for sm_70 and newer)
    #[arg(long = "flegacy-warp-intrinsics")]
    pub(crate) legacy_warp_intrinsics: bool,
    /// Report optimisation remarks of a pass (`-Rpass=aggregate`: launches left as they are;
    /// `-Rpass=malloc-pool`: whether the device link pools device-side allocations, and why)
    #[arg(long = "Rpass", value_name = "PASS", value_parser = ["aggregate", "malloc-pool"])]
    pub(crate) rpass: Vec<String>,
    /// Report remarks, which are off by default as in clang: `-Rskipped-headers` names each
    /// `<...>` header skipped as host-only (R0611), `-Rall` reports every remark (with
    /// `-Rpass=aggregate`'s)
    #[arg(long = "R", value_name = "REMARK", value_parser = ["skipped-headers", "all"])]
    pub(crate) remarks: Vec<String>,
    /// How diagnostics are written to stderr: text for people, or JSON (one object per line)
    #[arg(long, value_enum, default_value_t = ErrorFormat::Human)]
    pub(crate) error_format: ErrorFormat,
    #[command(flatten)]
    pub(crate) preprocess: PreprocessArgs,
    /// The sources' language, whatever their extension: `cu` (CUDA C++, compiled by Clang),
    /// `cdp` (the kernel language, compiled by cdpc's own front end) or `ir` (LLVM IR or
    /// bitcode, docs/IR-INPUT.md) [default: `.cu` files are CUDA C++, `.ll` and `.bc` LLVM IR,
    /// others the kernel language]
    #[arg(short = 'x', value_name = "cu|cdp|ir", value_parser = parse_language)]
    pub(crate) language: Option<driver::Language>,
    /// A Clang 22 program to compile CUDA C++ as a process (before CDPC_CLANG) instead of the Clang inside cdpc
    #[arg(long, value_name = "PATH")]
    pub(crate) clang: Option<PathBuf>,
    /// Fail (E0702) when one run of ptxas, nvlink or Clang takes longer than this (a process is killed; the Clang inside cdpc is abandoned); 0: no limit
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = parse_time_limit)]
    pub(crate) tool_timeout: TimeLimit,
    /// Assemble a module's PTX in at most N parts at the same time, one ptxas each, joined by nvlink (`-r` for an object; nvcc's option; 0: one part per core, 1: never) [default: a large module in up to 4 parts, each of 400 lines of PTX or more, the same on every machine]
    #[arg(long, value_name = "N")]
    pub(crate) split_compile: Option<usize>,
    /// Replace an existing output file even when it is no compiler output (E0701); the input
    /// is never replaced (E0700)
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// `--tool-timeout`: `None` is no limit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimeLimit(pub(crate) Option<std::time::Duration>);

/// `-x cu` / `-x cuda` / `-x cdp` / `-x ir` / `-x llvm-ir`.
pub(crate) fn parse_language(text: &str) -> Result<driver::Language, String> {
    match text {
        "cu" | "cuda" => Ok(driver::Language::Cuda),
        "cdp" => Ok(driver::Language::Cdp),
        "ir" | "llvm-ir" => Ok(driver::Language::Ir),
        _ => Err(format!("`{text}` is no language cdpc reads: `cu` (CUDA C++), `cdp` (the kernel language) or `ir` (LLVM IR or bitcode)")),
    }
}

/// `--cudart static|shared|none`.
pub(crate) fn parse_cudart(text: &str) -> Result<driver::program::Cudart, String> {
    driver::program::Cudart::parse(text).ok_or_else(|| format!("`{text}` is not one of nvcc's runtimes: static, shared or none"))
}

/// `--std c++20`: nvcc's dialects.
pub(crate) fn parse_std(text: &str) -> Result<cdpc::front::cuda::CxxStandard, String> {
    cdpc::front::cuda::CxxStandard::parse(text).ok_or_else(|| format!("`{text}` is not one of nvcc's dialects: c++03, c++11, c++14, c++17, c++20 or c++23"))
}

pub(crate) fn parse_time_limit(text: &str) -> Result<TimeLimit, String> {
    driver::parse_tool_timeout(text).map(TimeLimit)
}

/// The preprocessor's options, shared by `cdpc` and `cdpc run`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PreprocessArgs {
    /// Define a macro: `-D NAME` (as 1) or `-D NAME=VALUE` (repeatable; -D and -U apply in order)
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    define: Vec<String>,
    /// Undefine a macro, a predefined one included (repeatable)
    #[arg(short = 'U', value_name = "NAME")]
    undefine: Vec<String>,
    /// Look for #include headers in this folder (repeatable, in order; `-Idir` or `-I dir`)
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Look for #include headers in this system folder, after the -I folders (repeatable, in
    /// order; nvcc's and gcc's `-isystem DIR`)
    #[arg(long = "isystem", value_name = "DIR")]
    system_include: Vec<PathBuf>,
}

impl PreprocessArgs {
    /// The options for `input` (none with `--list-gpu-arch` and the like) as name/value pairs
    /// (`cdpc::driver::option_pairs`), with `-D` and `-U` in the order they were written (clap
    /// keeps each option's values apart; their indices in `matches` give the order).
    pub(crate) fn pairs(&self, matches: &ArgMatches, input: Option<&std::path::Path>) -> Vec<(&'static str, std::ffi::OsString)> {
        let mut ordered: Vec<(usize, &'static str, &String)> = Vec::new();
        let indices = |id: &str| matches.indices_of(id).map(|i| i.collect::<Vec<_>>()).unwrap_or_default();
        ordered.extend(indices("define").into_iter().zip(&self.define).map(|(i, v)| (i, "define", v)));
        ordered.extend(indices("undefine").into_iter().zip(&self.undefine).map(|(i, v)| (i, "undefine", v)));
        ordered.sort_by_key(|(i, _, _)| *i);
        let mut pairs: Vec<(&'static str, std::ffi::OsString)> = input.map(|input| ("input-path", input.as_os_str().to_os_string())).into_iter().collect();
        pairs.extend(ordered.into_iter().map(|(_, key, value)| (key, value.into())));
        pairs.extend(self.include.iter().map(|dir| ("include-dir", dir.as_os_str().to_os_string())));
        pairs.extend(self.system_include.iter().map(|dir| ("system-include-dir", dir.as_os_str().to_os_string())));
        pairs
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum EmitArg {
    Cubin,
    Obj,
    /// An x86-64 object like `nvcc -dc` writes, for `nvcc -dlink` and the host linker
    HostObj,
    Ptx,
    LlvmIr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ErrorFormat {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum AddressSizeArg {
    #[value(name = "32")]
    Bits32,
    #[value(name = "64")]
    Bits64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ColorArg {
    Auto,
    Always,
    Never,
}

/// The diagnostics' format the arguments ask for, read before they are parsed (a command line
/// clap refuses is reported in it too).
pub(crate) fn requested_format(args: &[String]) -> ErrorFormat {
    let mut format = ErrorFormat::Human;
    for (i, arg) in args.iter().enumerate() {
        let value = match arg.strip_prefix("--error-format") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        };
        match value {
            Some("json") => format = ErrorFormat::Json,
            Some("human") => format = ErrorFormat::Human,
            _ => {}
        }
    }
    format
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_states_the_library_default_time_limit() {
        use clap::Parser;
        let cli = super::Cli::parse_from(["cdpc", "a.cdp"]);
        assert_eq!(cli.inputs, [std::path::PathBuf::from("a.cdp")]);
        assert_eq!(cli.tool_timeout.0, Some(cdpc::driver::DEFAULT_TOOL_TIMEOUT));
        assert_eq!(super::Cli::parse_from(["cdpc", "a.cdp", "--tool-timeout", "0"]).tool_timeout.0, None);
    }
}
