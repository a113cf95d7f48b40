//! The `cdpc` command: compile a `.cdp` file to a linked cubin (or PTX, LLVM IR, an object).
//! `cdpc run FILE.cdp ...` compiles and runs a kernel on the GPU (`run_cmd.rs`).

mod link_launcher;
mod nvcc_options;
mod plan;
mod preprocess_cmd;
mod run_cmd;
mod sccache_steps;
// `pub(crate)`: the Python package, which holds this file as its module `cli`, uses it too.
pub(crate) mod signals;

use cdpc::driver::{self, BuildError, CompileError, CompileOptions, Emit, Input, LinkOptions, WarningPolicy};
use cdpc::preprocess::{MacroOption, PreprocessOptions};
use cdpc::render::{self, Color};
use cdpc::toolchain::ToolSearch;
use cdpc::{AddressSize, Code, DefaultStream, Diagnostic, LaunchAbi, SmVersion, Target};
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
// An option given twice is taken once, the last value winning (`-dc -c`, `-O3 ... -O2`), as
// nvcc and gcc take it.
#[command(name = "cdpc", version, about = "Compile CUDA kernels with device-side launches (.cdp) to linked cubins", args_override_self = true)]
struct Cli {
    /// Source files (a subset of CUDA C), relocatable device objects (`.o`, from cdpc or
    /// `nvcc -dc`) and static archives of them (`.a`). One source alone compiles as a whole
    /// program; several inputs, an object or `-l` are compiled separately and linked
    #[arg(required_unless_present_any = ["list_gpu_arch", "list_gpu_code"], value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Output file; `-` writes PTX or LLVM IR to standard output [default: the first INPUT's
    /// name with the extension of --emit, with -dc each source's with `.o`, in the current
    /// folder or -odir's, as nvcc's]
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Compile each source to an object like `nvcc -dc`'s and stop (also spelled `-c`; cdpc's
    /// device code is always relocatable): the file's host code, its kernels' host stubs and
    /// their registration, and its relocatable device code, for nvcc's or g++'s host link and
    /// cdpc's or nvcc's device link; `--emit obj` writes the device object alone. No link:
    /// `extern` device functions and variables are left to the link step
    #[arg(long = "device-c")]
    device_c: bool,
    /// Compile each source to an object and stop (nvcc's `-c`): `-dc`'s object with
    /// `-rdc=true`, and for the kernel language and LLVM IR; for CUDA C++ without it, nvcc's
    /// whole-program object, its device code linked with libcudadevrt and registered by the
    /// object itself, for a host link with no device link
    #[arg(short = 'c', long = "compile")]
    compile: bool,
    /// nvcc's `-rdc`: relocatable device code, which `-c` then compiles as `-dc` does (cdpc's
    /// programs and `-dc` objects always have it: device-side launches need it)
    #[arg(long = "rdc", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    rdc: bool,
    /// Link only (nvcc's `-dlink`): the inputs are objects and archives (sources are compiled
    /// first), the output is one cubin linked with libcudadevrt
    #[arg(long = "device-link")]
    device_link: bool,
    /// A fat binary of the device code (nvcc's `-fatbin`): `-gencode`'s images, else `--arch`'s
    /// cubin and its PTX, as nvcc's `-arch=sm_XX` makes them; `<stem>.fatbin` in the current
    /// folder (or `-odir`'s) unless `-o` names it
    #[arg(long = "fatbin")]
    fatbin: bool,
    /// Link the device library libNAME.a (repeatable; `-lNAME` or `-l NAME`)
    #[arg(short = 'l', value_name = "NAME")]
    library: Vec<String>,
    /// Look for `-l` libraries in this folder (repeatable, in order)
    #[arg(short = 'L', value_name = "DIR")]
    library_dir: Vec<PathBuf>,
    /// nvcc's module id of the file (the contents of the file cudafe++ writes with
    /// `--gen_module_id_file`): `static` kernels and variables get nvcc's names,
    /// `__nv_static_<n>_<ID>_<name>`, for host stubs that nvcc wrote
    #[arg(long, value_name = "ID")]
    nv_module_id: Option<String>,
    /// Whether a floating-point multiply and an add may become one `fma` (nvcc's `-fmad`,
    /// true by default as in nvcc; `-fmad=false` is accepted too)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    fmad: bool,
    /// nvcc's `--use_fast_math`: `--ftz=true --prec-div=false --prec-sqrt=false` (unless given
    /// otherwise) and the fast math library: `sinf`, `expf`, `powf`, ... as `__sinf`, `__expf`,
    /// `__powf`, and every single-precision division approximate, nvcc's instructions
    #[arg(long = "use-fast-math", visible_alias = "use_fast_math")]
    use_fast_math: bool,
    /// nvcc's `-ftz`: flush single-precision denormals to zero (default false, true with
    /// `--use-fast-math`)
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    ftz: Option<bool>,
    /// nvcc's `-prec-div`: IEEE-rounded single-precision division and reciprocals (default true,
    /// false with `--use-fast-math`: `div.full`, `rcp.approx`)
    #[arg(long = "prec-div", value_name = "BOOL", action = clap::ArgAction::Set)]
    prec_div: Option<bool>,
    /// nvcc's `-prec-sqrt`: IEEE-rounded single-precision square roots (default true, false with
    /// `--use-fast-math`: `sqrt.approx`)
    #[arg(long = "prec-sqrt", value_name = "BOOL", action = clap::ArgAction::Set)]
    prec_sqrt: Option<bool>,
    /// With `--emit host-obj` or `-dc` of the kernel language (`.cdp`, `-x cdp`): also write a
    /// C header declaring each kernel's launcher (`cdpc_launch_KERNEL`) and, for nvcc, the
    /// kernels
    #[arg(long, value_name = "FILE")]
    host_header: Option<PathBuf>,
    /// Line tables in the device code (`.loc` lines in the PTX, for profilers and
    /// compute-sanitizer), the code optimised as usual (nvcc's `-lineinfo`)
    #[arg(long = "lineinfo", visible_alias = "generate-line-info")]
    lineinfo: bool,
    /// Full debug information for cuda-gdb (DWARF: lines, functions, variables) at -O0
    /// (nvcc's `-G`)
    #[arg(short = 'G', long = "device-debug")]
    device_debug: bool,
    /// Add targets to a fat binary, as nvcc: `arch=compute_90,code=sm_90` (a linked cubin),
    /// `code=compute_90` (PTX for JIT), `code=[sm_90,compute_90]` (repeatable). Writes a
    /// `.fatbin` packed by the toolkit's fatbinary; --arch is then ignored
    #[arg(long = "gencode", value_name = "arch=compute_XX,code=...", value_parser = cdpc::driver::fatbin::parse_gencode)]
    gencode: Vec<Vec<cdpc::driver::fatbin::Image>>,
    /// What to produce [default: a program (nvcc's default) when the inputs hold host code (a
    /// `.cu` file, a `.cpp`/`.c` file, a host object) and `-o` names no `.cubin`, `.ptx`,
    /// `.fatbin` or `.ll`; a cubin otherwise (the kernel language and LLVM IR have no host code)]
    #[arg(long, value_enum)]
    emit: Option<EmitArg>,
    /// Preprocess only (nvcc's and Clang's `-E`): a CUDA C++ source's preprocessed text, the
    /// device side of each architecture and then the host side, with line markers, to standard
    /// output or `-o FILE` (docs/CCACHE.md)
    #[arg(short = 'E', long = "preprocess")]
    preprocess_only: bool,
    /// The host compiler (nvcc's `-ccbin`): a C++ compiler, or its folder, for `.cpp`/`.c` files
    /// and the program's link [default: `CDPC_HOST_CXX`, else `c++`, `g++` or `clang++` on PATH]
    #[arg(long = "ccbin", value_name = "PATH")]
    ccbin: Option<PathBuf>,
    /// Pass an argument to the host linker of a program (repeatable; nvcc's `-Xlinker`)
    #[arg(long = "Xlinker", value_name = "ARG", allow_hyphen_values = true)]
    xlinker: Vec<String>,
    /// Build a shared library instead of an executable (nvcc's `-shared`)
    #[arg(long = "shared")]
    shared: bool,
    /// Build a static library (nvcc's `-lib`): each source's object as `-c` writes it (with
    /// `-rdc=true` relocatable device code), host files' and the objects given, archived with
    /// the host's `ar` [default output: `a.a`]
    #[arg(long = "lib")]
    lib: bool,
    /// Build the program, then run it (nvcc's `-run`): `./OUTPUT` with `--run-args`, standard
    /// input and output its own; cdpc exits with its status. The program stays (`a.out` unless
    /// `-o` names it), as nvcc's does
    #[arg(long = "run")]
    run: bool,
    /// The program's arguments for `--run` (nvcc's `-run-args`): a comma-separated list, each
    /// item split at spaces as nvcc's shell splits it; may be repeated
    #[arg(long = "run-args", value_name = "ARGS")]
    run_args: Vec<String>,
    /// The archiver of `--lib` (nvcc's `-arbin`) [default: `CDPC_AR`, else `ar` on PATH]
    #[arg(long = "archiver", value_name = "PATH")]
    archiver: Option<PathBuf>,
    /// Pass an argument to the archiver of `--lib` (repeatable; nvcc's `-Xarchive`)
    #[arg(long = "Xarchive", value_name = "ARG", allow_hyphen_values = true)]
    xarchive: Vec<String>,
    /// The folder of each source's object when `-o` is not given (nvcc's `-odir`), with `-dc`
    /// and `-c`; the dependency list of `-MD` names the object there
    #[arg(long = "output-directory", value_name = "DIR")]
    output_directory: Option<PathBuf>,
    /// List the architectures cdpc builds for with the toolkit it finds, as `compute_XX`
    /// lines, and stop (nvcc's `--list-gpu-arch`); with `--list-gpu-code` too, as
    /// `arch=compute_XX,code=sm_XX`
    #[arg(long = "list-gpu-arch")]
    list_gpu_arch: bool,
    /// List the architectures cdpc builds for with the toolkit it finds, as `sm_XX` lines, and
    /// stop (nvcc's `--list-gpu-code`)
    #[arg(long = "list-gpu-code")]
    list_gpu_code: bool,
    /// The CUDA runtime a program links (nvcc's `--cudart`): static (the default), shared or none
    #[arg(long = "cudart", value_name = "static|shared|none", default_value = "static", value_parser = parse_cudart)]
    cudart: driver::program::Cudart,
    /// GPU architecture (nvcc's `-arch=sm_90` is accepted too; nvcc's `-arch=all`, `all-major`
    /// and `native` build each architecture of the set, as nvcc)
    #[arg(long, default_value = "sm_90", value_name = "sm_XX")]
    arch: SmVersion,
    /// nvcc's `-arch=all`, `-arch=all-major`, `-arch=native`, as `--arch` spells them
    #[arg(long = "arch-set", hide = true, value_parser = ["all", "all-major", "native"])]
    arch_set: Option<String>,
    /// nvcc's `-dlto` (`-lto`, `code=lto_XX`): link-time optimisation of device code, which
    /// cdpc does not do; warning W0709
    #[arg(long = "no-device-lto", hide = true)]
    no_device_lto: bool,
    /// Optimisation level for LLVM and ptxas
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// Device-launch ABI: v2 is what nvcc 13 emits (all streams); v1 is the documented
    /// cudaGetParameterBuffer/cudaLaunchDevice pair (no tail launch, no fire-and-forget)
    #[arg(long, default_value = "v2", value_name = "v1|v2")]
    launch_abi: LaunchAbi,
    /// What stream 0 means in device code, as nvcc's option: per-thread defines
    /// CUDA_API_PER_THREAD_DEFAULT_STREAM and calls the runtime's `_ptsz` entry points
    #[arg(long, default_value = "legacy", value_name = "legacy|null|per-thread")]
    default_stream: DefaultStream,
    /// Pointer size of the PTX; 32-bit output is PTX or LLVM IR only
    #[arg(long, value_enum, default_value_t = AddressSizeArg::Bits64, value_name = "32|64")]
    address_size: AddressSizeArg,
    /// Pass an argument to ptxas (repeatable; nvcc's `-Xptxas -v,-O3` is two)
    #[arg(long = "Xptxas", value_name = "ARG", allow_hyphen_values = true)]
    xptxas: Vec<String>,
    /// Pass an argument to the host compiler, which for a CUDA C++ file's object (`-dc`) is
    /// the host side's Clang: `-Xcompiler -fPIC` (repeatable; nvcc's `-Xcompiler -fPIC,-Wall` is
    /// two). The device code never sees it, as with nvcc
    #[arg(long = "Xcompiler", value_name = "ARG", allow_hyphen_values = true)]
    xcompiler: Vec<String>,
    /// The C++ dialect of CUDA C++ files, as nvcc's `-std` (default: C++17 with GNU extensions,
    /// as nvcc with g++); the kernel language (`.cdp`) is C whatever this says
    #[arg(long, value_name = "c++03|c++11|c++14|c++17|c++20|c++23", value_parser = parse_std)]
    std: Option<cdpc::clang::CxxStandard>,
    /// Report no warnings (nvcc's `-w`): cdpc's, Clang's, ptxas's and nvlink's
    #[arg(short = 'w', long = "disable-warnings")]
    disable_warnings: bool,
    /// No warning for the use of a deprecated entity in CUDA C++ (nvcc's
    /// `-Wno-deprecated-declarations`)
    #[arg(long = "Wno-deprecated-declarations")]
    no_deprecation_warnings: bool,
    /// Also write a dependency list, a Make rule naming the source and every header it read
    /// (nvcc's and gcc's `-MD`), to the output's name with `.d` or `--MF`'s file
    #[arg(long = "MD")]
    dependencies: bool,
    /// `--MD` without the headers of system folders (`-isystem`, CUDA's, Clang's, the C and C++
    /// libraries'; nvcc's and gcc's `-MMD`)
    #[arg(long = "MMD")]
    user_dependencies: bool,
    /// The dependency list's file (`-MF`)
    #[arg(long = "MF", value_name = "FILE")]
    dependency_file: Option<PathBuf>,
    /// The dependency list's target (`-MT`; default: the output file)
    #[arg(long = "MT", value_name = "TARGET")]
    dependency_target: Option<String>,
    /// Compile nothing: write each source's dependency list (nvcc's `-M`), a Make rule for
    /// `<stem>.o` (`-odir`'s folder, `-MT`'s target) naming the source and every header it reads,
    /// to `-MF`'s file, else `-o`'s, else standard output
    #[arg(long = "M")]
    generate_dependencies: bool,
    /// `--M` without the headers of system folders, as `--MMD` lists them (nvcc's `-MM`)
    #[arg(long = "MM")]
    generate_user_dependencies: bool,
    /// Add an empty rule for each header to the dependency list (`-MP`), so that make does not
    /// fail when a header is removed
    #[arg(long = "MP")]
    phony_targets: bool,
    /// Pass an argument to nvlink (repeatable)
    #[arg(long = "Xnvlink", value_name = "ARG", allow_hyphen_values = true)]
    xnvlink: Vec<String>,
    /// Print each tool's command line
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Print the jobs of this command line, one line each, and run none (nvcc's `-dryrun`, Clang's `-###`)
    #[arg(long = "dry-run")]
    dry_run: bool,
    /// Directory of a CUDA toolkit or of the NVIDIA wheels (before CUDA_HOME in the search)
    #[arg(long, value_name = "DIR")]
    cuda_home: Option<PathBuf>,
    /// Treat parameter buffers over 4 KB as errors (runtimes before CUDA 12.1 refuse them)
    #[arg(long)]
    strict_param_limit: bool,
    /// Treat every warning as an error
    #[arg(long = "Werror")]
    werror: bool,
    /// Treat this warning code as an error (repeatable)
    #[arg(long, value_name = "CODE")]
    deny: Vec<String>,
    /// Do not report this warning code (repeatable)
    #[arg(long, value_name = "CODE")]
    allow: Vec<String>,
    /// Print the time of each phase to stderr (`time: PHASE SECONDS`)
    #[arg(long)]
    time: bool,
    /// Append the time of each phase to FILE as nvcc's `-time FILE` does (a CSV table; `-`: standard output)
    #[arg(long = "time-file", value_name = "FILE")]
    time_file: Option<PathBuf>,
    /// Colour in diagnostics
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
    /// Launch optimizations, on by default at -O2 and -O3: small grids run in their launching
    /// thread (thresholding at 128 threads) and the rest aggregated, per warp or per grid as
    /// each kernel's launches suit (docs/AGGREGATION.md, "By default").
    /// `-fno-launch-optimizations` turns them off; `-faggregate-launches` and
    /// `-flaunch-threshold` choose exactly instead
    #[arg(long = "flaunch-optimizations", overrides_with = "no_launch_optimizations")]
    launch_optimizations: bool,
    /// Launches as written: no thresholding, no aggregation (the build nvcc's matches)
    #[arg(long = "fno-launch-optimizations", overrides_with = "launch_optimizations")]
    no_launch_optimizations: bool,
    /// Aggregate the device launches of a parent grid, of a block, or of the threads of a warp
    /// that launch together, into one launch (`-faggregate-launches=block`; `auto` chooses per
    /// kernel between warp and grid; remarks with `-Rpass=aggregate`). Given alone, no
    /// thresholding
    #[arg(long = "faggregate-launches", value_name = "auto|warp|block|grid|off")]
    aggregate_launches: Option<cdpc::pipeline::aggregate::Granularity>,
    /// Run a launch whose grid has at most N threads in all inside the launching thread, one
    /// child thread after another, instead of launching it (`-flaunch-threshold=128`; before
    /// aggregation; 0: never). Children that need their threads together, or whose threads
    /// loop, are left alone (remarks with `-Rpass=aggregate`). Given alone, no aggregation
    #[arg(long = "flaunch-threshold", value_name = "N")]
    launch_threshold: Option<u32>,
    /// Serve device-side `malloc` and `cudaMalloc` of at most 16 KiB from a 32 MiB pool in the
    /// program's static memory, the heap when the pool is full (`-fdevice-malloc-pool`): one
    /// atomic add instead of the heap, which many threads allocating at once make slow. Every device file that frees what another
    /// allocated must be compiled with it (docs/DEVICE-MALLOC.md)
    #[arg(long = "fdevice-malloc-pool")]
    device_malloc_pool: bool,
    /// Compile CUDA C++'s warp functions of before CUDA 9 (`__shfl`, `__any`, `__ballot`, ...)
    /// as their `_sync` forms over the active lanes, with a warning (W0902), where by default
    /// they are an error as nvcc's (E0903: nvcc refuses them for sm_70 and newer)
    #[arg(long = "flegacy-warp-intrinsics")]
    legacy_warp_intrinsics: bool,
    /// Report optimisation remarks of a pass (`-Rpass=aggregate`: launches left as they are)
    #[arg(long = "Rpass", value_name = "PASS", value_parser = ["aggregate"])]
    rpass: Vec<String>,
    /// Report remarks, which are off by default as in clang: `-Rskipped-headers` names each
    /// `<...>` header skipped as host-only (R0611), `-Rall` reports every remark (with
    /// `-Rpass=aggregate`'s)
    #[arg(long = "R", value_name = "REMARK", value_parser = ["skipped-headers", "all"])]
    remarks: Vec<String>,
    /// How diagnostics are written to stderr: text for people, or JSON (one object per line)
    #[arg(long, value_enum, default_value_t = ErrorFormat::Human)]
    error_format: ErrorFormat,
    #[command(flatten)]
    preprocess: PreprocessArgs,
    /// The sources' language, whatever their extension: `cu` (CUDA C++, compiled by Clang),
    /// `cdp` (the kernel language, compiled by cdpc's own front end) or `ir` (LLVM IR or
    /// bitcode, docs/IR-INPUT.md) [default: `.cu` files are CUDA C++, `.ll` and `.bc` LLVM IR,
    /// others the kernel language]
    #[arg(short = 'x', value_name = "cu|cdp|ir", value_parser = parse_language)]
    language: Option<driver::Language>,
    /// A Clang 22 program to compile CUDA C++ as a process (before CDPC_CLANG) instead of the Clang inside cdpc
    #[arg(long, value_name = "PATH")]
    clang: Option<PathBuf>,
    /// Fail (E0702) when one run of ptxas, nvlink or Clang takes longer than this (a process is killed; the Clang inside cdpc is abandoned); 0: no limit
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = parse_time_limit)]
    tool_timeout: TimeLimit,
    /// Replace an existing output file even when it is no compiler output (E0701); the input
    /// is never replaced (E0700)
    #[arg(long)]
    overwrite: bool,
}

/// `--tool-timeout`: `None` is no limit.
#[derive(Clone, Copy, Debug)]
struct TimeLimit(Option<std::time::Duration>);

/// `-x cu` / `-x cuda` / `-x cdp` / `-x ir` / `-x llvm-ir`.
fn parse_language(text: &str) -> Result<driver::Language, String> {
    match text {
        "cu" | "cuda" => Ok(driver::Language::Cuda),
        "cdp" => Ok(driver::Language::Cdp),
        "ir" | "llvm-ir" => Ok(driver::Language::Ir),
        _ => Err(format!("`{text}` is no language cdpc reads: `cu` (CUDA C++), `cdp` (the kernel language) or `ir` (LLVM IR or bitcode)")),
    }
}

/// The CUDA release of the tools cdpc found (ptxas's `Cuda compilation tools, release 13.5,
/// V13.5.37`): `(13, 5, 37)`.
fn cuda_release(tools: &cdpc::toolchain::Toolchain) -> Option<(u32, u32, u32)> {
    let text = cdpc::toolchain::version_output(&tools.ptxas)?;
    let line = text.lines().find(|l| l.starts_with("Cuda compilation tools"))?;
    let v = line.rsplit_once(", V")?.1.trim();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// `--version`: cdpc's, then what CMake reads of nvcc's (`nvcc: NVIDIA (R) Cuda compiler
/// driver` and the release of the CUDA tools cdpc uses): cdpc presents itself to CMake's CUDA
/// language as nvcc-compatible (docs/CMAKE.md).
fn version_text() -> String {
    let tools = cdpc::toolchain::Toolchain::discover(&ToolSearch::default()).ok();
    let release = tools.as_ref().and_then(cuda_release);
    let mut text = format!("cdpc {}\nan nvcc-compatible CUDA compiler driver (Clang 22 and LLVM 22 inside)\n", env!("CARGO_PKG_VERSION"));
    text.push_str("nvcc: NVIDIA (R) Cuda compiler driver (compatible: cdpc runs no nvcc)\n");
    match (&tools, release) {
        (Some(tools), Some((major, minor, build))) => {
            text.push_str(&format!("CUDA tools: {}\n", tools.ptxas.parent().map(|p| p.display().to_string()).unwrap_or_default()));
            text.push_str(&format!("Cuda compilation tools, release {major}.{minor}, V{major}.{minor}.{build}\n"));
        }
        _ => text.push_str("CUDA tools: not found (--cuda-home, CUDA_HOME, CUDA_PATH, the checkout's .cuda/, python3's NVIDIA pip wheels, PATH, /usr/local/cuda; SETUP.md)\n"),
    }
    text
}

/// What `-v` prints first, as nvcc's `#$ NAME=value` lines, which CMake's CUDA language reads
/// (docs/CMAKE.md): the toolkit's folders, the include and library folders a host compiler
/// gets, and each architecture of the build (`archs`) as `-arch compute_XX`.
/// nvcc's `-v` lines, for a program's build and for an input that is no file (CMake's
/// `cdpc -v __cmake_determine_cuda`): what CMake reads of them, docs/CMAKE.md; for each
/// architecture of the build, `-gencode`'s, else `--arch`'s.
fn verbose_header(cli: &Cli) -> String {
    let mut archs: Vec<SmVersion> = cli.gencode.concat().iter().map(|i| i.sm()).collect();
    archs.dedup();
    if archs.is_empty() {
        archs.push(cli.arch);
    }
    nvcc_verbose_header(&archs)
}

fn nvcc_verbose_header(archs: &[SmVersion]) -> String {
    let Ok(tools) = cdpc::toolchain::Toolchain::discover(&ToolSearch::default()) else { return String::new() };
    let Some(top) = tools.ptxas.parent().and_then(|b| b.parent()).map(std::path::Path::to_path_buf) else { return String::new() };
    let lib = tools.cuda_lib_dir().display().to_string();
    let mut text = format!("#$ TOP={}\n", top.display());
    let libdevice = tools.libdevice.as_ref().and_then(|l| l.parent()).map(std::path::Path::to_path_buf).unwrap_or_else(|| top.join("nvvm/libdevice"));
    text.push_str(&format!("#$ NVVMIR_LIBRARY_DIR={}\n", libdevice.display()));
    if let Ok(host) = cdpc::toolchain::HostCompiler::find(None) {
        if let Some(dir) = host.program.parent() {
            text.push_str(&format!("#$ PATH={}:{}\n", dir.display(), std::env::var("PATH").unwrap_or_default()));
        }
    }
    text.push_str(&format!("#$ INCLUDES=\"-I{}\"\n", top.join("include").display()));
    text.push_str(&format!("#$ SYSTEM_INCLUDES=\"-isystem\" \"{}\"\n", top.join("include/cccl").display()));
    text.push_str(&format!("#$ LIBRARIES=  \"-L{lib}\"\n"));
    for sm in archs {
        text.push_str(&format!("#$ _CDPC_DEVICE_ARCH_= -arch compute_{}\n", sm.code()));
    }
    text
}

/// `--cudart static|shared|none`.
fn parse_cudart(text: &str) -> Result<driver::program::Cudart, String> {
    driver::program::Cudart::parse(text).ok_or_else(|| format!("`{text}` is not one of nvcc's runtimes: static, shared or none"))
}

/// `--std c++20`: nvcc's dialects.
fn parse_std(text: &str) -> Result<cdpc::clang::CxxStandard, String> {
    cdpc::clang::CxxStandard::parse(text).ok_or_else(|| format!("`{text}` is not one of nvcc's dialects: c++03, c++11, c++14, c++17, c++20 or c++23"))
}

fn parse_time_limit(text: &str) -> Result<TimeLimit, String> {
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
    /// The options for `input`, with `-D` and `-U` in the order they were written (clap keeps
    /// each option's values apart; their indices in `matches` give the order).
    pub(crate) fn options(&self, matches: &ArgMatches, input: &std::path::Path) -> PreprocessOptions {
        let mut ordered: Vec<(usize, MacroOption)> = Vec::new();
        let indices = |id: &str| matches.indices_of(id).map(|i| i.collect::<Vec<_>>()).unwrap_or_default();
        ordered.extend(indices("define").into_iter().zip(&self.define).map(|(i, v)| (i, MacroOption::Define(v.clone()))));
        ordered.extend(indices("undefine").into_iter().zip(&self.undefine).map(|(i, v)| (i, MacroOption::Undefine(v.clone()))));
        ordered.sort_by_key(|(i, _)| *i);
        PreprocessOptions {
            input: Some(input.to_path_buf()),
            macros: ordered.into_iter().map(|(_, m)| m).collect(),
            include_dirs: self.include.clone(),
            system_include_dirs: self.system_include.clone(),
            ..PreprocessOptions::default()
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum EmitArg {
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
enum AddressSizeArg {
    #[value(name = "32")]
    Bits32,
    #[value(name = "64")]
    Bits64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

/// The diagnostics' format the arguments ask for, read before they are parsed (a command line
/// clap refuses is reported in it too).
fn requested_format(args: &[String]) -> ErrorFormat {
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

/// A command line clap cannot read: `E0708` with clap's message and tip (help and version
/// requests are clap's to print).
fn option_error(format: ErrorFormat, e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
        e.exit();
    }
    let rendered = e.render().to_string();
    // clap's text: `error: <message>`, a blank line, tips, then usage and a pointer to `--help`,
    // which are left out.
    let text = rendered.trim_start_matches("error: ");
    // clap's tips ("to pass '-x' as a value, use '-- -x'") are about its own syntax, not a
    // compiler's: left out, and an unknown option says where the known ones are listed.
    let message: Vec<&str> =
        text.lines().take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information")).filter(|l| !l.trim_start().starts_with("tip:")).map(str::trim_end).collect();
    let mut message = message.join("\n").trim_end().to_string();
    if e.kind() == ErrorKind::UnknownArgument {
        message.push_str("\n  = help: `cdpc --help` lists cdpc's options; nvcc's are read too (docs/BUILDING.md, \"nvcc's options\")");
    }
    fail_with_code(format, "<command line>", Some(Code::OptionInvalid), &message);
    ExitCode::from(2)
}

fn parse_codes(names: &[String]) -> Result<Vec<Code>, String> {
    names.iter().map(|n| Code::parse(n).ok_or_else(|| format!("unknown diagnostic code `{n}`"))).collect()
}

fn main() -> ExitCode {
    signals::install();
    // The cache's headers a compilation misses are made after it (`fill_cache`).
    cdpc::clang::cache::set_deferred(true);
    cdpc::driver::crash::install();
    let args: Vec<String> = std::env::args().collect();
    let status = match std::panic::catch_unwind(|| main_with_args(args.clone())) {
        Ok(status) => status,
        Err(_) => report_crash(&args),
    };
    fill_cache();
    signals::settle();
    status
}

/// The options that make a compiler describe itself and compile nothing.
const HOST_QUERIES: &[&str] = &["--version", "-dumpversion", "-dumpfullversion", "-dumpmachine"];

/// `cdpc FILE -Xcompiler --version` (or `-dumpversion`, `-dumpfullversion`, `-dumpmachine`):
/// nvcc hands a host file and `-Xcompiler`'s options to its host compiler, which then prints
/// what it is and compiles nothing, so build systems ask nvcc for its host compiler so (ggml's
/// CMake reads `nvcc .c -Xcompiler --version` and `-Xcompiler "-dumpfullversion -dumpversion"`,
/// the file need not exist). cdpc runs its host compiler ([`cdpc::toolchain::HostCompiler`],
/// `-ccbin`) with those options alone, its output as it is; `None` when none is asked.
fn host_compiler_query(cli: &Cli, format: ErrorFormat) -> Option<ExitCode> {
    let asked: Vec<&str> = cli.xcompiler.iter().flat_map(|a| a.split([',', ' '])).filter(|a| HOST_QUERIES.contains(a)).collect();
    if asked.is_empty() {
        return None;
    }
    let host = match cdpc::toolchain::HostCompiler::find(cli.ccbin.as_deref()) {
        Ok(host) => host,
        Err(e) => {
            fail(format, "<command line>", &e.to_string());
            return Some(ExitCode::FAILURE);
        }
    };
    match std::process::Command::new(&host.program).args(&asked).status() {
        Ok(status) => Some(ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8)),
        Err(e) => {
            fail(format, "<command line>", &format!("cannot run the host compiler `{}`: {e}", host.program.display()));
            Some(ExitCode::FAILURE)
        }
    }
}

/// Reports a panic of cdpc's as `E1025`, naming the input and where cdpc failed, with the
/// folder of its reproducer (`driver::crash`). The exit status is 70 (`EX_SOFTWARE`, an
/// internal error), never Rust's 101.
fn report_crash(args: &[String]) -> ExitCode {
    let format = requested_format(args);
    let crash = cdpc::driver::crash::Crash::take();
    let (message, location, input) = match &crash {
        Some(c) => (c.message.clone(), c.location.clone(), c.input.clone()),
        None => ("an unknown failure".to_string(), String::new(), None),
    };
    let file_name = input.clone().unwrap_or_else(|| "<command line>".to_string());
    let mut text = format!("internal compiler error: {message}");
    if !location.is_empty() {
        text.push_str(&format!(" (at {location})"));
    }
    text.push_str(&format!("; this is a bug in cdpc {}, not in the input", env!("CARGO_PKG_VERSION")));
    if let Some(input) = &input {
        text.push_str(&format!(", seen while compiling `{input}`"));
    }
    match crash.as_ref().and_then(|c| c.write_reproducer(args)) {
        Some(dir) => text.push_str(&format!(". A reproducer is in `{}` (the input as cdpc read it, `command.txt`, `message.txt`): please attach it to a bug report", dir.display())),
        None => text.push_str(". Please report it with the command line and the input"),
    }
    fail_with_code(format, &file_name, Some(Code::InternalError), &text);
    ExitCode::from(70)
}

/// Makes the cache's headers that this process's compilations left for later
/// (`cdpc::clang::cache::Fill`), once its outputs are written and its messages said, whatever
/// its status (a file with errors keeps its preamble): cdpc again, with this process's
/// arguments and `CDPC_CACHE_FILL` (which makes Clang make the headers and compile nothing,
/// writes no output and says nothing, its output nowhere), detached from the terminal (`setsid`) at the
/// lowest priority (the idle scheduling policy, nice 19, and nice 19 for its autogroup),
/// holding the cache's fill lock until it ends; by default not waited for,
/// with `CDPC_CACHE_BACKGROUND=0` waited for. A filler that cannot start leaves them to the next
/// compilation, which notes them again.
pub(crate) fn fill_cache() {
    use cdpc::clang::cache;
    if cache::filling() != 0 {
        return;
    }
    let Some((what, dir)) = cache::take_wanted() else { return };
    let Ok(exe) = std::env::current_exe() else { return };
    // Held by the filler (an inherited descriptor) until it ends; this process's copy closes
    // when this returns.
    let Some(_lock) = cache::fill_lock(&dir) else { return };
    let mut filler = std::process::Command::new(exe);
    filler.args(std::env::args_os().skip(1)).env("CDPC_CACHE_FILL", what.to_string()).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // SAFETY: setsid, setpriority, sched_setscheduler, open, write and close are
    // async-signal-safe system calls; they touch no memory of the parent (the path and the
    // bytes are static).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut filler, || {
            libc::setsid();
            // The lowest priority there is: the idle policy, below nice 19.
            let idle = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle);
            libc::setpriority(libc::PRIO_PROCESS, 0, 19);
            // With autogroup scheduling (Linux's default where enabled), setsid put the filler
            // in a scheduling group of its own, and groups share the CPU by the group's nice,
            // not their tasks': a filler took half of a 2-core machine from `make -j2`'s
            // compilations (bench/dc/make_j.py). The group's nice is raised too.
            let fd = libc::open(c"/proc/self/autogroup".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, b"19".as_ptr().cast(), 2);
                libc::close(fd);
            }
            Ok(())
        });
    }
    match filler.spawn() {
        Ok(mut child) if !cache::in_background() => {
            let _ = child.wait();
        }
        // Not waited for: it outlives this process (its parent becomes init).
        _ => {}
    }
}

/// The `_FORTIFY_SOURCE` level nvcc's host compiler would define by itself for a `.cu` file's
/// host side (`toolchain::host_compiler_fortify`): at the host optimisation level nvcc passes it,
/// the last of an explicit `-O<n>` and `-Xcompiler -O<n>` (none: no `-O`, so none), and only
/// where the command line neither defines nor undefines `_FORTIFY_SOURCE` itself (`-D`, `-U`,
/// or an `-Xcompiler` option naming it; Ubuntu's GCC defines it under
/// the same condition).
fn host_fortify(cli: &Cli, matches: &clap::ArgMatches, preprocess: &PreprocessOptions) -> Option<u32> {
    let explicit = (matches.value_source("opt_level") == Some(clap::parser::ValueSource::CommandLine)).then_some(cli.opt_level);
    let passed = cli.xcompiler.iter().rev().find_map(|a| match a.strip_prefix("-O")? {
        "" => Some(1),
        "0" => Some(0),
        "s" | "z" | "g" | "fast" => Some(2),
        n => n.parse::<u8>().ok().map(|n| n.min(3)),
    });
    let level = passed.or(explicit)?;
    let named = |text: &str| text == "_FORTIFY_SOURCE" || text.starts_with("_FORTIFY_SOURCE=");
    let own = preprocess.macros.iter().any(|m| match m {
        MacroOption::Define(d) | MacroOption::Undefine(d) => named(d),
    }) || cli.xcompiler.iter().any(|a| a.contains("_FORTIFY_SOURCE"));
    if level == 0 || own {
        return None;
    }
    let compiler = cdpc::toolchain::HostCompiler::find(cli.ccbin.as_deref()).ok()?;
    cdpc::toolchain::host_compiler_fortify(&compiler.program, level)
}

/// The images of nvcc's `-arch=all`, `-arch=all-major` or `-arch=native` (`set`) with the
/// toolkit cdpc finds: every architecture of its ptxas that LLVM 22 writes, as
/// [`list_gpus`] lists them ([`cdpc::driver::fatbin::all_images`]); for `native` the GPUs'
/// (`cdpc::toolchain::gpus`). Where no GPU is found (or none the toolkit builds for), nvcc
/// warns and builds its default architecture; so does cdpc: `Err` with `W0709`'s message, and
/// `--arch`'s architecture is built.
fn architecture_set(cli: &Cli, set: &str) -> Result<Result<Vec<cdpc::driver::fatbin::Image>, String>, String> {
    let tools = cdpc::toolchain::Toolchain::discover(&ToolSearch { cuda_home: cli.cuda_home.clone(), ..Default::default() }).map_err(|e| e.to_string())?;
    let supported = cdpc::toolchain::ptxas_architectures(&tools.ptxas).ok_or_else(|| format!("`{} --help` did not answer with its architectures", tools.ptxas.display()))?;
    if set != "native" {
        return Ok(Ok(cdpc::driver::fatbin::all_images(&supported, set == "all-major")));
    }
    let gpus = cdpc::toolchain::gpus::visible_architectures().unwrap_or_default();
    let images = cdpc::driver::fatbin::native_images(&supported, &gpus);
    if !images.is_empty() {
        return Ok(Ok(images));
    }
    let found = if gpus.is_empty() {
        "no GPU was found".to_string()
    } else {
        format!("the GPUs' architectures ({}) are not among the toolkit's", gpus.iter().map(|n| format!("sm_{n}")).collect::<Vec<_>>().join(", "))
    };
    Ok(Err(format!("`-arch=native`: {found}, so the default architecture, {}, is built (as nvcc warns \"Cannot find valid GPU for '-arch=native', default arch is used\")", cli.arch)))
}

/// nvcc's `--list-gpu-arch` and `--list-gpu-code` (`-arch-ls`, `-code-ls`): the architectures
/// cdpc builds for with the toolkit it finds (`--cuda-home`, else the usual search), those of
/// LLVM 22's NVPTX that the toolkit's ptxas takes, a line each as nvcc writes them:
/// `compute_90`, `sm_90`, or with both options `arch=compute_90,code=sm_90`. Build scripts
/// ask nvcc so (PyTorch extensions' `setup.py`, FFmpeg's `configure`).
fn list_gpus(cli: &Cli, format: ErrorFormat) -> ExitCode {
    let tools = match cdpc::toolchain::Toolchain::discover(&ToolSearch { cuda_home: cli.cuda_home.clone(), ..Default::default() }) {
        Ok(tools) => tools,
        Err(e) => {
            fail_with_code(format, "<command line>", e.code(), &e.to_string());
            return ExitCode::from(1);
        }
    };
    let Some(archs) = cdpc::toolchain::ptxas_architectures(&tools.ptxas) else {
        fail(format, "<command line>", &format!("`{} --help` did not answer with its architectures", tools.ptxas.display()));
        return ExitCode::from(1);
    };
    for sm in archs {
        let number = sm.code();
        match (cli.list_gpu_arch, cli.list_gpu_code) {
            (true, true) => println!("arch=compute_{number},code=sm_{number}"),
            (true, false) => println!("compute_{number}"),
            _ => println!("sm_{number}"),
        }
    }
    ExitCode::SUCCESS
}

/// The whole command for an argument list (program name first): `main`'s body, and what the
/// Python package's `cdpc` console script runs (`python/src/lib.rs` includes this file).
pub(crate) fn main_with_args(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    // `cdpc --link-launcher LINKER ...`: the rest is another program's command line.
    if args.get(1).map(String::as_str) == Some("--link-launcher") {
        return link_launcher::main(args);
    }
    // The steps `--dryrun --keep` prints for sccache run cdpc with these.
    if let Some(status) = sccache_steps::intercept(&args) {
        return status;
    }
    let steps = sccache_steps::wants_steps(&args).then(|| args.clone());
    let format = requested_format(&args);
    let args = match nvcc_options::translate(args) {
        Ok(args) => args,
        Err(refused) => {
            fail_with_code(format, "<command line>", Some(refused.code), &refused.message);
            return ExitCode::from(2);
        }
    };
    if args.get(1).map(String::as_str) == Some("run") {
        return run_cmd::main(args);
    }
    let args = match nvcc_options::forward_unknown(args, Cli::command()) {
        Ok(args) => args,
        Err(refused) => {
            fail_with_code(format, "<command line>", Some(refused.code), &refused.message);
            return ExitCode::from(2);
        }
    };
    if args.iter().skip(1).any(|a| a == "--version" || a == "-V") {
        print!("{}", version_text());
        return ExitCode::SUCCESS;
    }
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return option_error(format, e),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return option_error(format, e),
    };
    if cli.list_gpu_arch || cli.list_gpu_code {
        return list_gpus(&cli, format);
    }
    if let Some(status) = host_compiler_query(&cli, format) {
        return status;
    }
    let mut fallbacks: Vec<String> = Vec::new();
    if cli.no_device_lto {
        fallbacks.push("link-time optimisation of device code (nvcc's `-dlto`, `code=lto_XX`) is not in cdpc: each file's device code is compiled whole to a cubin and linked as without it (the program is the same; `code=lto_XX` is `code=sm_XX`)".into());
    }
    if let Some(set) = cli.arch_set.clone() {
        match architecture_set(&cli, &set) {
            Ok(Err(fallback)) => fallbacks.push(fallback),
            // One GPU's architecture (`native`): that `--arch`, as `-arch=sm_XX` builds it.
            Ok(Ok(images)) if images.len() == 1 && matches!(images[0], cdpc::driver::fatbin::Image::Cubin(_)) => {
                if let cdpc::driver::fatbin::Image::Cubin(sm) = images[0] {
                    cli.arch = sm;
                }
            }
            Ok(Ok(images)) => {
                if let Some(image) = images.first() {
                    cli.arch = image.sm();
                }
                cli.gencode.push(images);
            }
            Err(message) => {
                fail(format, "<command line>", &message);
                return ExitCode::from(1);
            }
        }
    }
    // W0709: what an option asked for that cdpc does otherwise, as nvcc's warning says of
    // `-arch=native`; an error with `-Werror`, nothing with `-w`.
    for fallback in &fallbacks {
        match cli.error_format {
            _ if cli.werror => {
                fail_with_code(format, "<command line>", Some(Code::OptionFallback), fallback);
                return ExitCode::from(1);
            }
            ErrorFormat::Json => eprint!("{}", render::json_warning_with_code(Code::OptionFallback, "<command line>", fallback)),
            ErrorFormat::Human if !cli.disable_warnings => eprintln!("warning[{}]: {fallback}", Code::OptionFallback),
            ErrorFormat::Human => {}
        }
    }
    // nvcc's `-fatbin` without `-gencode`: `--arch`'s cubin and its PTX, what nvcc's
    // `-arch=sm_XX` stands for.
    if cli.fatbin && cli.gencode.is_empty() {
        cli.gencode.push(vec![cdpc::driver::fatbin::Image::Cubin(cli.arch), cdpc::driver::fatbin::Image::Ptx(cli.arch)]);
    }
    let fatbin_named = output_extension(&cli) == Some("fatbin");
    // nvcc's `-ptx` and `-cubin` with `-gencode` (CMake's CUDA_PTX_COMPILATION and
    // CUDA_CUBIN_COMPILATION): one architecture's PTX, one image's cubin, as nvcc 13.5 allows;
    // more is nvcc's error too. (`--emit cubin` into a `.fatbin` stays a fat binary.)
    if !cli.gencode.is_empty() && !cli.fatbin && !fatbin_named && !cli.device_c && !cli.device_link && matches!(cli.emit, Some(EmitArg::Ptx | EmitArg::Cubin)) {
        let images = cli.gencode.concat();
        let archs = cdpc::driver::fatbin::architectures(&images);
        let one = match (cli.emit, images.as_slice()) {
            (Some(EmitArg::Ptx), _) if archs.len() == 1 => Some(archs[0]),
            (Some(EmitArg::Cubin), [cdpc::driver::fatbin::Image::Cubin(sm)]) => Some(*sm),
            _ => None,
        };
        let Some(sm) = one else {
            let message = if matches!(cli.emit, Some(EmitArg::Ptx)) {
                "`-ptx` writes the PTX of one architecture, and these `-gencode` options name several (nvcc refuses them too): compile once per architecture, or write a fat binary (`-fatbin`)"
            } else {
                "`-cubin` writes one cubin, and these `-gencode` options name several images (nvcc refuses them too): give one `code=sm_XX`, or write a fat binary (`-fatbin`)"
            };
            fail(format, &cli.inputs[0].display().to_string(), message);
            return ExitCode::from(2);
        };
        cli.arch = sm;
        cli.gencode.clear();
    }
    // nvcc's `-v` lines for an input that is no file (CMake's `cdpc -v __cmake_determine_cuda`).
    if cli.verbose && cli.inputs.iter().any(|i| !i.exists()) {
        eprint!("{}", verbose_header(&cli));
    }
    let color = match cli.color {
        ColorArg::Always => Color::Always,
        ColorArg::Never => Color::Never,
        ColorArg::Auto if std::io::stderr().is_terminal() => Color::Always,
        ColorArg::Auto => Color::Never,
    };
    let mut warnings = WarningPolicy { deny_all: cli.werror, silence_all: cli.disable_warnings, ..Default::default() };
    match (parse_codes(&cli.deny), parse_codes(&cli.allow)) {
        (Ok(deny), Ok(allow)) => {
            warnings.deny = deny;
            warnings.allow = allow;
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    if cli.strict_param_limit {
        warnings.deny.push(Code::ParamBufferOver4K);
    }
    let emit = match cli.emit.unwrap_or(EmitArg::Cubin) {
        EmitArg::Cubin => Emit::Cubin,
        EmitArg::Obj => Emit::Object,
        EmitArg::HostObj => Emit::HostObject,
        EmitArg::Ptx => Emit::Ptx,
        EmitArg::LlvmIr => Emit::LlvmIr,
    };
    let address_size = match cli.address_size {
        AddressSizeArg::Bits32 => AddressSize::Bits32,
        AddressSizeArg::Bits64 => AddressSize::Bits64,
    };
    let switch = if cli.launch_optimizations {
        Some(true)
    } else if cli.no_launch_optimizations {
        Some(false)
    } else {
        None
    };
    let launches = driver::LaunchOptimizations::resolve(cli.opt_level, cli.device_debug, switch, cli.launch_threshold, cli.aggregate_launches);
    let options = CompileOptions {
        aggregate: launches.aggregate,
        launch_threshold: launches.threshold,
        target: Target { sm: cli.arch, address_size, launch_abi: cli.launch_abi, default_stream: cli.default_stream },
        opt_level: cli.opt_level,
        emit,
        // nvcc's `-w` silences ptxas and nvlink too.
        ptxas_args: cli.xptxas.iter().cloned().chain(cli.disable_warnings.then(|| "--disable-warnings".to_string())).collect(),
        nvlink_args: cli.xnvlink.iter().cloned().chain(cli.disable_warnings.then(|| "--disable-warnings".to_string())).collect(),
        warnings,
        tools: ToolSearch { cuda_home: cli.cuda_home.clone(), ..Default::default() },
        malloc_pool: cli.device_malloc_pool,
        legacy_warp_intrinsics: cli.legacy_warp_intrinsics,
        pass_remarks: !cli.rpass.is_empty() || cli.remarks.iter().any(|r| r == "all"),
        header_remarks: !cli.remarks.is_empty(),
        tool_timeout: cli.tool_timeout.0,
        overwrite: if cli.overwrite { driver::Overwrite::Any } else { driver::Overwrite::CompilerOutputs },
        preprocess: cli.preprocess.options(&matches, &cli.inputs[0]),
        debug: if cli.device_debug {
            Some(driver::DebugLevel::Full)
        } else if cli.lineinfo {
            Some(driver::DebugLevel::LineTables)
        } else {
            None
        },
        // Relocatable device code written as text or a device object (`-ptx -rdc=true`, as
        // CMake's `CUDA_PTX_COMPILATION` with separable compilation asks): another file's
        // functions are `.extern`, left to the link, as nvcc leaves them.
        separate: cli.rdc && matches!(emit, Emit::Ptx | Emit::LlvmIr | Emit::Object),
        nv_module_id: cli.nv_module_id.clone(),
        fmad: if cli.fmad { cdpc::back::Fmad::Contract } else { cdpc::back::Fmad::Separate },
        // nvcc's rule, measured: an explicit `-ftz`, `-prec-div` or `-prec-sqrt` wins over
        // `--use_fast_math`'s, on either side of it.
        float_math: cdpc::back::FloatMath {
            ftz: cli.ftz.unwrap_or(cli.use_fast_math),
            prec_div: cli.prec_div.unwrap_or(!cli.use_fast_math),
            prec_sqrt: cli.prec_sqrt.unwrap_or(!cli.use_fast_math),
            fast_library: cli.use_fast_math,
        },
        language: cli.language,
        clang: cdpc::clang::ClangSearch { clang: cli.clang.clone() },
        cuda_cxx: cdpc::clang::CudaCxxOptions {
            std: cli.std,
            host_args: cli.xcompiler.clone(),
            warning_args: cli.no_deprecation_warnings.then(|| "-Wno-deprecated-declarations".to_string()).into_iter().collect(),
            host_fortify: None,
        },
        host_object_images: Vec::new(),
        whole_program: false,
        list_headers: if cli.dependencies || cli.generate_dependencies {
            driver::HeaderList::All
        } else if cli.user_dependencies || cli.generate_user_dependencies {
            driver::HeaderList::User
        } else {
            driver::HeaderList::None
        },
    };
    let mut options = options;
    if cli.inputs.iter().any(|i| driver::program::is_cmake_identification(i)) {
        let release = cdpc::toolchain::Toolchain::discover(&options.tools).ok().as_ref().and_then(cuda_release);
        options.cuda_cxx.host_args.extend(release.map(driver::program::identity_macros).unwrap_or_default());
    }
    options.cuda_cxx.host_fortify = host_fortify(&cli, &matches, &options.preprocess);
    let tasks = match plan::plan(&cli, &matches, &options) {
        Ok(tasks) => tasks,
        Err(status) => return status,
    };
    let program = plan::program_options(&cli, &matches);
    if cli.dry_run {
        if let Some(raw) = steps {
            let jobs: Vec<_> = tasks.iter().flat_map(|task| task.jobs(&cli, &program, &options)).collect();
            return sccache_steps::print_steps(&raw, &jobs, format);
        }
        for task in &tasks {
            for job in task.jobs(&cli, &program, &options) {
                eprintln!("{job}");
            }
        }
        return ExitCode::SUCCESS;
    }
    for task in tasks {
        let status = plan::run_task(&cli, task, &program, &options, color);
        if status != ExitCode::SUCCESS {
            return status;
        }
    }
    ExitCode::SUCCESS
}

/// The extension of the file `-o` names.
fn output_extension(cli: &Cli) -> Option<&str> {
    cli.output.as_deref().and_then(std::path::Path::extension).and_then(std::ffi::OsStr::to_str)
}

/// nvcc's `-run`: the program just built, run as `./PROGRAM` (the path as given where it has a
/// folder) with `--run-args`' words; its exit status is cdpc's (128 + the signal that ended it).
fn run_program(cli: &Cli, program: &std::path::Path) -> ExitCode {
    let path = runnable(program);
    let args = run_arguments(cli);
    match std::process::Command::new(&path).args(&args).status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            let code = status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            fail(cli.error_format, &path.display().to_string(), &format!("the program could not be started: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// Where an output goes that `-o` does not name, as nvcc (and gcc) put it: `input`'s name with
/// `extension`, in the current folder or `-odir`'s, not beside the input.
/// `-run`'s program as it is started: `./PROGRAM` where the path has no folder.
fn runnable(program: &std::path::Path) -> PathBuf {
    if program.components().count() > 1 {
        program.to_path_buf()
    } else {
        std::path::Path::new(".").join(program)
    }
}

/// `--run-args`' words: each value split at commas and white space, as nvcc splits them.
fn run_arguments(cli: &Cli) -> Vec<&str> {
    cli.run_args.iter().flat_map(|list| list.split(',')).flat_map(str::split_whitespace).collect()
}

fn default_output(cli: &Cli, input: &std::path::Path, extension: &str) -> PathBuf {
    cli.output_directory.clone().unwrap_or_default().join(PathBuf::from(input.file_name().unwrap_or_default()).with_extension(extension))
}

/// One source, compiled on its own to what `options.emit` names: the whole-program compile,
/// and each file of `-dc`.
fn compile_one(cli: &Cli, input: &std::path::Path, output: Option<PathBuf>, options: &CompileOptions, color: Color) -> ExitCode {
    let emit = options.emit;
    let file_name = input.display().to_string();
    let format = cli.error_format;
    let read_started = std::time::Instant::now();
    let file = match read_input(input, options, format, &file_name, color) {
        Ok(file) => file,
        Err(code) => return code,
    };
    let source = file.shown.as_str();
    let read_time = read_started.elapsed();
    let to_stdout = output.as_deref() == Some(std::path::Path::new("-"));
    // The output's path as a dependency list's target names it (what `make` builds).
    let output_path = match &output {
        Some(_) if to_stdout => None,
        Some(o) => Some(o.clone()),
        None => Some(default_output(cli, input, emit.extension())),
    };
    // `plan` refused binary output to stdout.
    let result = if to_stdout {
        file.compile(options).and_then(|compiled| {
            write_stdout(&compiled.output)?;
            Ok(compiled)
        })
    } else {
        let output = output.unwrap_or_else(|| default_output(cli, input, emit.extension()));
        file.compile_to_file(&[input], &output, options)
    };
    let result = result.and_then(|compiled| match (&cli.host_header, &compiled.header) {
        (Some(path), Some(header)) => {
            let guard = cdpc::toolchain::OutputGuard { inputs: vec![input.to_path_buf()], overwrite: options.overwrite };
            let file = cdpc::toolchain::OutputFile::prepare_guarded(path, guard)?;
            file.commit(header.as_bytes())?;
            Ok(compiled)
        }
        _ => Ok(compiled),
    });
    let result = result.and_then(|compiled| {
        if options.list_headers != driver::HeaderList::None {
            write_dependencies(cli, input, output_path.as_deref(), &compiled.headers, options.overwrite)?;
        }
        Ok(compiled)
    });
    let result = result.and_then(|mut compiled| {
        show_tool_runs(&compiled.tool_runs, cli.verbose, format, &file_name);
        compiled.timings.0.insert(0, (driver::Phase::Read, read_time));
        show_timings(cli, &compiled.timings, Some(input), output_path.as_deref())?;
        Ok(compiled.warnings)
    });
    match result {
        Ok(warnings) => {
            report_warnings(format, &file_name, source, &warnings, color);
            ExitCode::SUCCESS
        }
        Err(CompileError::Diagnostics(diagnostics)) => report_errors(format, &file_name, source, &diagnostics, color),
        Err(e) => {
            fail_with_code(format, &file_name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Writes the dependency list of `input`'s compilation (`-MD`): [`dependency_rule`] for
/// `-MT`'s target or the output; to `-MF`'s file, or the output's name with `.d` (the input's,
/// in the current folder, for output to stdout).
fn write_dependencies(cli: &Cli, input: &std::path::Path, output: Option<&std::path::Path>, headers: &[PathBuf], overwrite: driver::Overwrite) -> Result<(), CompileError> {
    let path = dependency_path(cli, input, output);
    let target = match (&cli.dependency_target, output) {
        (Some(target), _) => target.clone(),
        (None, Some(output)) => make_escaped(&output.display().to_string()),
        (None, None) => make_escaped(&input.display().to_string()),
    };
    let text = dependency_rule(cli, &target, input, headers);
    let guard = cdpc::toolchain::OutputGuard { inputs: vec![input.to_path_buf()], overwrite };
    let file = cdpc::toolchain::OutputFile::prepare_guarded(&path, guard)?;
    file.commit(text.as_bytes())?;
    Ok(())
}

/// Where `-MD`'s list of `input`'s compilation goes: `-MF`'s file, or the output's name with `.d`
/// (the input's, in the current folder, for output to stdout).
fn dependency_path(cli: &Cli, input: &std::path::Path, output: Option<&std::path::Path>) -> PathBuf {
    match (&cli.dependency_file, output) {
        (Some(file), _) => file.clone(),
        (None, Some(output)) => output.with_extension("d"),
        (None, None) => PathBuf::from(input.file_name().unwrap_or_default()).with_extension("d"),
    }
}

/// `-M`'s target for `source`: `-MT`'s, else `<stem>.o` in `-odir`'s folder, as nvcc's.
fn dependency_target(cli: &Cli, source: &std::path::Path) -> String {
    let object = cli.output_directory.clone().unwrap_or_default().join(PathBuf::from(source.file_name().unwrap_or_default()).with_extension("o"));
    cli.dependency_target.clone().unwrap_or_else(|| make_escaped(&object.display().to_string()))
}

/// One Make rule: `target` depending on `input` and `headers`, as nvcc writes it
/// (`target : source \`, the headers indented below), with `-MP` an empty rule for each header.
fn dependency_rule(cli: &Cli, target: &str, input: &std::path::Path, headers: &[PathBuf]) -> String {
    let mut text = format!("{target} : {}", make_escaped(&input.display().to_string()));
    for header in headers {
        text.push_str(&format!(" \\\n    {}", make_escaped(&header.display().to_string())));
    }
    text.push('\n');
    if cli.phony_targets {
        for header in headers {
            text.push_str(&format!("\n{}:\n", make_escaped(&header.display().to_string())));
        }
    }
    text
}

/// nvcc's `-M` and `-MM`: the headers each source's `-dc` reads (CUDA C++'s from Clang's lists of
/// its preprocessing of both sides, no compilation; the kernel language and LLVM IR compiled,
/// written nowhere; `-MM` leaves out system folders' as `-MMD` does,
/// where nvcc's `-MM` keeps CUDA's), a host file's from its host compiler's `-M` or `-MM`, as
/// nvcc's; one rule each, for `<stem>.o` in `-odir`'s folder (nvcc's target, measured with nvcc
/// 13.5) or `-MT`'s, all of them to `-MF`'s file, else `-o`'s, else standard output, written
/// only when every source compiled.
/// `plan` refused objects and libraries among `sources`.
fn generate_dependencies(cli: &Cli, sources: &[PathBuf], dc_emit: Emit, program: &driver::program::ProgramOptions, options: &CompileOptions, color: Color) -> ExitCode {
    let format = cli.error_format;
    let mut text = String::new();
    for source in sources {
        let file_name = source.display().to_string();
        let target = dependency_target(cli, source);
        if cli.language.is_none() && driver::program::ProgramInput::is_host_file(source) {
            match driver::program::host_file_headers(source, options.list_headers, program, options) {
                Ok((headers, tool_runs)) => {
                    show_tool_runs(&tool_runs, cli.verbose, format, &file_name);
                    text.push_str(&dependency_rule(cli, &target, source, &headers));
                    continue;
                }
                Err(e) => return report_build(cli, source, Err(e), color),
            }
        }
        let language = cli.language.unwrap_or_else(|| driver::Language::of_path(source));
        let emit = if language == driver::Language::Ir && dc_emit == Emit::HostObject { Emit::Object } else { dc_emit };
        let options = CompileOptions { emit, separate: true, ..options.clone() };
        let file = match read_input(source, &options, format, &file_name, color) {
            Ok(file) => file,
            Err(code) => return code,
        };
        // CUDA C++'s list from Clang's preprocessing of each side, no compilation.
        if language == driver::Language::Cuda {
            match preprocess_cmd::cuda_headers(&file.shown, &options) {
                Ok(done) => {
                    show_tool_runs(&done.tool_runs, cli.verbose, format, &file_name);
                    report_warnings(format, &file_name, &file.shown, &done.warnings, color);
                    text.push_str(&dependency_rule(cli, &target, source, &done.headers));
                    continue;
                }
                Err(CompileError::Diagnostics(diagnostics)) => return report_errors(format, &file_name, &file.shown, &diagnostics, color),
                Err(e) => {
                    fail_with_code(format, &file_name, e.code(), &e.to_string());
                    return ExitCode::FAILURE;
                }
            }
        }
        match file.compile_to_file(&[source], std::path::Path::new("/dev/null"), &options) {
            Ok(compiled) => {
                show_tool_runs(&compiled.tool_runs, cli.verbose, format, &file_name);
                report_warnings(format, &file_name, &file.shown, &compiled.warnings, color);
                text.push_str(&dependency_rule(cli, &target, source, &compiled.headers));
            }
            Err(CompileError::Diagnostics(diagnostics)) => return report_errors(format, &file_name, &file.shown, &diagnostics, color),
            Err(e) => {
                fail_with_code(format, &file_name, e.code(), &e.to_string());
                return ExitCode::FAILURE;
            }
        }
    }
    let written = match cli.dependency_file.as_ref().or(cli.output.as_ref()).filter(|p| p.as_path() != std::path::Path::new("-")) {
        Some(path) => {
            let guard = cdpc::toolchain::OutputGuard { inputs: cli.inputs.clone(), overwrite: options.overwrite };
            cdpc::toolchain::OutputFile::prepare_guarded(path, guard).and_then(|file| file.commit(text.as_bytes())).map_err(|e| (path.display().to_string(), e))
        }
        None => write_stdout(text.as_bytes()).map_err(|e| ("<stdout>".to_string(), e)),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err((name, e)) => {
            let e = CompileError::Tool(e);
            fail_with_code(format, &name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// A file's warnings (or, as JSON, its empty list), rendered to standard error.
fn report_warnings(format: ErrorFormat, file_name: &str, source: &str, diagnostics: &[Diagnostic], color: Color) {
    match format {
        ErrorFormat::Json => eprint!("{}", render::json(diagnostics, file_name, source)),
        ErrorFormat::Human if !diagnostics.is_empty() => eprint!("{}", render::human(diagnostics, file_name, source, color)),
        ErrorFormat::Human => {}
    }
}

/// `bytes` to standard output. A closed pipe or a full disk behind it is the output failing, as
/// a file's would; a reader that stopped early (`| head`) is not.
fn write_stdout(bytes: &[u8]) -> Result<(), cdpc::toolchain::ToolError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(cdpc::toolchain::ToolError::OutputIo { path: "<stdout>".into(), source }),
    }
}

/// A path as a Make rule needs it: spaces and `#` escaped with `\`, `$` doubled (gcc's).
fn make_escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            ' ' => out.push_str("\\ "),
            '#' => out.push_str("\\#"),
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

/// Several inputs, objects or libraries: each source compiled on its own, then one link.
fn link_inputs(cli: &Cli, inputs: &[Input], link: &LinkOptions, output: &std::path::Path, options: &CompileOptions, color: Color) -> ExitCode {
    let result = driver::link_files(inputs, link, output, options).and_then(|linked| {
        show_timings(cli, &linked.timings, None, Some(output)).map_err(|e| BuildError::Other(e.into()))?;
        Ok((linked.tool_runs, linked.warnings))
    });
    report_build(cli, output, result, color)
}

/// `-gencode`: a fat binary of the inputs, written to `output` only when it is complete.
fn build_fatbin(cli: &Cli, inputs: &[Input], link: &LinkOptions, images: &[cdpc::driver::fatbin::Image], output: &std::path::Path, options: &CompileOptions, color: Color) -> ExitCode {
    let guard = cdpc::toolchain::OutputGuard { inputs: cli.inputs.clone(), overwrite: options.overwrite };
    let result = cdpc::toolchain::OutputFile::prepare_guarded(output, guard).map_err(|e| BuildError::Other(e.into())).and_then(|file| {
        let fatbin = cdpc::driver::fatbin::fatbin(inputs, link, images, options)?;
        file.commit(&fatbin.bytes).map_err(|e| BuildError::Other(e.into()))?;
        if let (true, [input]) = (options.list_headers != driver::HeaderList::None, inputs) {
            write_dependencies(cli, input.path(), Some(output), &fatbin.headers, options.overwrite)?;
        }
        Ok((fatbin.tool_runs, fatbin.warnings))
    });
    report_build(cli, output, result, color)
}

/// Reports a build of several files: tool runs and warnings, or what failed.
/// [`report_build`] of a program's build, a device link or a host file's compile, with its
/// phase times under `--time`.
fn report_built(cli: &Cli, output: &std::path::Path, result: Result<driver::program::Built, BuildError>, color: Color) -> ExitCode {
    let result = result.and_then(|built| {
        show_timings(cli, &built.timings, None, Some(output)).map_err(|e| BuildError::Other(e.into()))?;
        Ok((built.tool_runs, built.warnings))
    });
    report_build(cli, output, result, color)
}

fn report_build(cli: &Cli, output: &std::path::Path, result: Result<(Vec<cdpc::toolchain::ToolRun>, Vec<driver::SourceWarnings>), BuildError>, color: Color) -> ExitCode {
    let format = cli.error_format;
    let output_name = output.display().to_string();
    match result {
        Ok((tool_runs, warnings)) => {
            show_tool_runs(&tool_runs, cli.verbose, format, &output_name);
            for unit in &warnings {
                match format {
                    ErrorFormat::Json => eprint!("{}", render::json(&unit.warnings, &unit.name, &unit.text)),
                    ErrorFormat::Human if !unit.warnings.is_empty() => eprint!("{}", render::human(&unit.warnings, &unit.name, &unit.text, color)),
                    ErrorFormat::Human => {}
                }
            }
            ExitCode::SUCCESS
        }
        Err(BuildError::Source { name, text, error: CompileError::Diagnostics(d) }) => report_errors(format, &name, &text, &d, color),
        Err(BuildError::Source { name, text, error: CompileError::NotUtf8(e) }) => report_errors(format, &name, &text, &[e.diagnostic], color),
        Err(BuildError::Source { name, error, .. }) => {
            fail_with_code(format, &name, error.code(), &error.to_string());
            ExitCode::FAILURE
        }
        Err(BuildError::Link(diagnostics)) => {
            for d in &diagnostics {
                // Render against the file of the first label that has one: each label says its file.
                let file = d.labels.iter().find_map(|l| l.file.clone());
                let (name, text) = file.as_deref().map_or(("<link>", ""), |f| (f.name.as_str(), f.text.as_str()));
                match format {
                    ErrorFormat::Json => eprint!("{}", render::json(std::slice::from_ref(d), name, text)),
                    ErrorFormat::Human => eprint!("{}", render::human(std::slice::from_ref(d), name, text, color)),
                }
            }
            if format == ErrorFormat::Human {
                let errors = diagnostics.len();
                eprintln!("error: could not link `{output_name}` due to {errors} previous error{}", if errors == 1 { "" } else { "s" });
            }
            ExitCode::FAILURE
        }
        Err(BuildError::Other(e)) => {
            fail_with_code(format, &output_name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Reports the diagnostics of a failed compilation, rendered against `source`, and for people
/// the summary line after them.
/// The input file read as the driver reads it; a file that is not UTF-8 or cannot be read is
/// reported (under `file_name`) and its exit status returned.
fn read_input(input: &std::path::Path, options: &CompileOptions, format: ErrorFormat, file_name: &str, color: Color) -> Result<driver::InputFile, ExitCode> {
    match driver::InputFile::read(input, options) {
        Ok(file) => Ok(file),
        Err(CompileError::NotUtf8(e)) => Err(report_errors(format, file_name, &e.shown, &[e.diagnostic], color)),
        Err(e) => {
            fail_with_code(format, file_name, e.code(), &e.to_string());
            Err(ExitCode::FAILURE)
        }
    }
}

fn report_errors(format: ErrorFormat, file_name: &str, source: &str, diagnostics: &[Diagnostic], color: Color) -> ExitCode {
    match format {
        ErrorFormat::Json => eprint!("{}", render::json(diagnostics, file_name, source)),
        ErrorFormat::Human => {
            eprint!("{}", render::human(diagnostics, file_name, source, color));
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            eprintln!("error: could not compile `{file_name}` due to {errors} previous error{}", if errors == 1 { "" } else { "s" });
        }
    }
    ExitCode::FAILURE
}

/// Reports a failure that is not about the source text (a tool, a file, the options).
fn fail(format: ErrorFormat, file_name: &str, message: &str) {
    fail_with_code(format, file_name, None, message)
}

/// [`fail`] for a failure with a stable code: `error[E0700]: ...`, or `"code":"E0700"` in JSON.
fn fail_with_code(format: ErrorFormat, file_name: &str, code: Option<Code>, message: &str) {
    match (format, code) {
        (ErrorFormat::Human, Some(code)) => eprintln!("error[{code}]: {message}"),
        (ErrorFormat::Human, None) => eprintln!("error: {message}"),
        (ErrorFormat::Json, _) => eprint!("{}", render::json_failure_with_code(code, file_name, message)),
    }
}

/// The phases' times, as the command line asks: `--time`, one line a phase to standard error,
/// then the total, in seconds; nvcc's `-time FILE` ([`time_table`]), appended to the file.
fn show_timings(cli: &Cli, timings: &driver::Timings, source: Option<&std::path::Path>, output: Option<&std::path::Path>) -> Result<(), cdpc::toolchain::ToolError> {
    if cli.time {
        for (phase, duration) in &timings.0 {
            eprintln!("time: {} {:.6}", phase.name(), duration.as_secs_f64());
        }
        eprintln!("time: total {:.6}", timings.total().as_secs_f64());
    }
    let Some(file) = &cli.time_file else { return Ok(()) };
    if file == std::path::Path::new("-") {
        return write_stdout(time_table(timings, source, output, cli.arch, true).as_bytes());
    }
    use std::io::Write;
    let failed = |source| cdpc::toolchain::ToolError::OutputIo { path: file.clone(), source };
    let mut table = std::fs::OpenOptions::new().create(true).append(true).open(file).map_err(failed)?;
    let empty = table.metadata().map_err(failed)?.len() == 0;
    // One write, so that the rows of compilations appending at once (`make -j`) do not mix.
    table.write_all(time_table(timings, source, output, cli.arch, empty).as_bytes()).map_err(failed)
}

/// nvcc's `-time` table of a compilation (nvcc 13.5's columns and separators, measured): a row
/// per phase, `source , phase , inputs , output , arch , tool , milliseconds , ms`, the tool
/// `cdpc`, then the whole's row (nvcc's last row is its driver's, `nvcc (driver)`); with
/// `heading`, the column names first, as nvcc writes them into an empty file.
fn time_table(timings: &driver::Timings, source: Option<&std::path::Path>, output: Option<&std::path::Path>, arch: SmVersion, heading: bool) -> String {
    let source = source.map(|p| p.display().to_string()).unwrap_or_default();
    let output = output.map(|p| p.display().to_string()).unwrap_or_default();
    let mut table = String::new();
    if heading {
        table.push_str("source file name , phase name , phase input files , phase output file , arch , tool, metric , unit\n");
    }
    for (phase, duration) in &timings.0 {
        table.push_str(&format!("{source} , {} , {source}  , {output} , {arch} , cdpc , {:.4} , ms\n", phase.name(), duration.as_secs_f64() * 1e3));
    }
    table.push_str(&format!(" , cdpc (total) ,  , {output} ,  , cdpc , {:.4} , ms\n", timings.total().as_secs_f64() * 1e3));
    table
}

/// What ptxas and nvlink said: their warnings always (in JSON mode, one warning line), and in
/// text mode with `-v` each command line and what the tool printed to stdout (`-Xptxas -v`).
pub(crate) fn show_tool_runs(runs: &[cdpc::toolchain::ToolRun], verbose: bool, format: ErrorFormat, file_name: &str) {
    if format == ErrorFormat::Json {
        let warnings: String = runs.iter().map(|r| r.stderr.as_str()).collect();
        if !warnings.trim().is_empty() {
            eprint!("{}", render::json_message(cdpc::Severity::Warning, file_name, warnings.trim_end()));
        }
        return;
    }
    for run in runs {
        if verbose {
            eprintln!("{}", run.command);
            eprint!("{}", run.stdout);
        }
        eprint!("{}", run.stderr);
    }
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
