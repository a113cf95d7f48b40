//! The CUDA C++ front end: Clang 22's CUDA device compilation, from `.cu` source to LLVM
//! bitcode, which the launch pipeline ([`crate::pipeline`]) and the back end take from there.
//!
//! cdpc's own front end reads the `.cdp` kernel language (C with CUDA's qualifiers and
//! `<<<>>>`). Everything C++ (classes, templates, lambdas, CCCL's Thrust, CUB and libcu++) is
//! Clang's business. Clang runs inside cdpc ([`in_process`]: Clang's libraries are linked like
//! LLVM's, statically in the release binary and the Python wheel), with the arguments
//!
//! ```text
//! clang++ -x cuda --cuda-device-only --cuda-gpu-arch=sm_XX -fgpu-rdc --cuda-path=CUDA
//!         -resource-dir CLANG_RESOURCES -I CUDA/include/cccl -O3 -emit-llvm -c FILE.cu -o WORK/FILE.bc
//! ```
//!
//! (with `-include` of cdpc's additions, [`additions_header`], and `-idirafter` of the host
//! compiler's own include folder, [`ClangInvocation::host_include`]: docs/NVCC-DIALECT.md)
//! and its messages come back as cdpc diagnostics ([`diagnostics`]): `E1000` for its errors,
//! `W1001` for its warnings, with file, line and column; a crash is `E1004`. A host object
//! (`-dc`) runs it once more for the host side ([`ClangInvocation::host_fatbin`]):
//! `--cuda-host-only --no-offload-new-driver -fgpu-rdc -Xclang -fcuda-include-gpubinary
//! -Xclang DEVICE.fatbin`, the nvcc-style registration of the device code's relocatable fat
//! binary.
//!
//! # Which Clang
//!
//! One path by default: the Clang linked into cdpc ([`ClangEngine::InProcess`]), which needs
//! no Clang program. A Clang named explicitly, `--clang PATH` ([`ClangSearch::clang`]) or the
//! `CDPC_CLANG` environment variable (ignored when empty), runs as a bounded process instead
//! ([`ClangEngine::Process`], [`crate::toolchain::run_front_end`]): a Clang build other than
//! the linked one (a debug or patched Clang 22), and the measurement of the two
//! (BENCHMARKS.md, "CUDA C++ through Clang"). A named Clang that does not exist is `E1002`.
//!
//! # Clang's resource headers
//!
//! The linked Clang needs its resource folder at run time (`include/` with
//! `__clang_cuda_runtime_wrapper.h` and the compiler's own headers), found in the order
//! [`in_process::resource_dir_candidates`] documents: `CDPC_CLANG_RESOURCE_DIR`, `clang/`
//! beside the cdpc module (the Python package bundles it there), `../lib/clang/22` from it,
//! `LLVM_SYS_221_PREFIX`, the LLVM cdpc was built against, `/usr/lib/llvm-22`. None is
//! `E1002`, naming each place and what to install.
//!
//! # CUDA's headers
//!
//! Clang gets the CUDA folder ptxas was found in ([`crate::toolchain::Toolchain::root`]) as
//! `--cuda-path`: a toolkit, or the NVIDIA wheels' `nvidia/cu13` (cdpc's `.cuda/`). CCCL
//! (Thrust, CUB, libcu++, `<nv/target>`) lives in its `include/cccl` folder in both, which
//! nvcc searches by itself and Clang does not, so it is added with `-isystem`. Clang's CUDA
//! wrapper header includes cuRAND's device headers, which the `nvidia-curand` wheel puts in the
//! same `include/` folder. A folder without `cuda_runtime.h` or `curand_mtgp32_kernel.h` is
//! `E1003`, saying what to install.
//!
//! # Beyond those arguments
//!
//! [`ClangInvocation`] also gives, on the host side alone, the `_FORTIFY_SOURCE` the host compiler
//! defines by itself at the `-O` given (`CudaCxxOptions::host_fortify`,
//! `toolchain::host_compiler_fortify`: Ubuntu's GCC); and on the device side nvcc's unsigned
//! `atomicMax_block`/`_system` and `atomicMin_*`, which Clang 22 makes signed
//! (`unsigned_scoped_min_max`). With no precompiled header of the wrapper to read, the device side
//! parses it without its texture intrinsics ([`WITHOUT_TEXTURE_INTRINSICS`], a third of its text,
//! the same objects), and whole again where that run fails. Clang's CUDA wrapper names CUDA's
//! headers, and Clang's own `__clang_cuda_*.h`, by path through macros as long as the quoted names
//! ([`wrapper_includes`]), so that its text keeps its length for precompiled headers.
//!
//! cdpc's additions to Clang's CUDA headers (`additions.h`, [`additions_header`]; the header's
//! opening comment says why each section is there) are a file named by cdpc's version and its
//! text's hash ([`additions_file_name`]), so that two builds never share one, written under an
//! exclusive `flock` on its folder only where it does not hold that text, so that `-dc`'s two
//! sides and concurrent compilations never replace it under a header made from it.

pub mod cache;
pub mod diagnostics;
pub mod filler;
pub mod hidden_macros;
pub mod host_warnings;
pub mod in_process;
pub mod mend;
pub mod nvcc_text;
pub mod preamble;
pub(crate) mod run;
pub(crate) mod setup;
pub mod shared_storage;
pub mod vla_init;

use crate::diag::{Code, Diagnostic, Span};
use crate::target::Target;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The Clang major version cdpc is built against: Clang's IR must be readable by cdpc's LLVM.
pub const CLANG_MAJOR: u32 = 22;

/// Where to look for Clang besides the documented places.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClangSearch {
    /// An explicit Clang (`--clang`); when given and missing, nothing else is tried.
    pub clang: Option<PathBuf>,
}

/// The process environment the search reads (tests build one by hand).
#[derive(Clone, Debug, Default)]
pub struct ClangEnv {
    /// `CDPC_CLANG`.
    pub cdpc_clang: Option<OsString>,
    /// `CDPC_CLANG_RESOURCE_DIR`.
    pub resource_dir: Option<OsString>,
    /// `LLVM_SYS_221_PREFIX`.
    pub llvm_prefix: Option<OsString>,
}

impl ClangEnv {
    /// Reads the variables of this process.
    pub fn from_process() -> ClangEnv {
        ClangEnv { cdpc_clang: std::env::var_os("CDPC_CLANG"), resource_dir: std::env::var_os("CDPC_CLANG_RESOURCE_DIR"), llvm_prefix: std::env::var_os("LLVM_SYS_221_PREFIX") }
    }
}

/// Which Clang compiles CUDA C++.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClangEngine {
    /// The Clang linked into cdpc, with its resource folder (the one holding `include/`).
    InProcess {
        /// `-resource-dir`.
        resource_dir: PathBuf,
    },
    /// A Clang program named with `--clang` or `CDPC_CLANG`, run as a process.
    Process(PathBuf),
}

/// How to get Clang's resource headers, shown with `E1002`.
pub const INSTALL_HELP: &str = "Clang's resource headers (`include/__clang_cuda_runtime_wrapper.h` and the compiler's own headers) \
come with the Python package, or with `apt-get install libclang-common-22-dev` (Debian 12, Ubuntu 24.04; `cargo xtask setup` in the \
cdpc checkout installs it); or name the folder that holds their `include/` with `CDPC_CLANG_RESOURCE_DIR`";

/// The Clang that compiles CUDA C++: an explicitly named program, else the linked one with its
/// resource headers; `E1002` when the named program or the headers are missing.
pub fn find_engine(search: &ClangSearch, env: &ClangEnv) -> Result<ClangEngine, Diagnostic> {
    if let Some(clang) = find_clang(search, env)? {
        return Ok(ClangEngine::Process(clang));
    }
    match in_process::find_resource_dir(env.resource_dir.as_deref(), env.llvm_prefix.as_deref()) {
        Ok(resource_dir) => Ok(ClangEngine::InProcess { resource_dir }),
        Err(searched) => Err(not_found(format!("CUDA C++ is compiled by the Clang {CLANG_MAJOR} inside cdpc, whose resource headers were not found"), searched, INSTALL_HELP)),
    }
}

/// The Clang program named with `--clang` or `CDPC_CLANG`, if one is; `E1002` when it does not
/// exist (nothing else is tried then).
pub fn find_clang(search: &ClangSearch, env: &ClangEnv) -> Result<Option<PathBuf>, Diagnostic> {
    let (clang, what) = match (&search.clang, env.cdpc_clang.as_ref().filter(|c| !c.is_empty())) {
        (Some(clang), _) => (clang.clone(), "--clang"),
        (None, Some(clang)) => (PathBuf::from(clang), "CDPC_CLANG"),
        (None, None) => return Ok(None),
    };
    if is_file(&clang) {
        return Ok(Some(clang));
    }
    Err(not_found(
        format!("CUDA C++ is compiled by Clang {CLANG_MAJOR}, which was not found"),
        vec![format!("{what}: `{}` does not exist", clang.display())],
        "name an existing Clang 22 program, or leave `--clang` and `CDPC_CLANG` unset to use the Clang inside cdpc",
    ))
}

fn not_found(message: String, searched: Vec<String>, help: &str) -> Diagnostic {
    let mut d = Diagnostic::new(Code::ClangNotFound, Span::new(0, 0), message).with_primary_message("this file is CUDA C++ (`.cu`)");
    for s in searched {
        d = d.with_note(format!("looked at {s}"));
    }
    d.with_note(help).with_note("a file in the kernel language (C with CUDA's qualifiers and `<<<>>>`) compiles without Clang: name it `.cdp`, or pass `-x cdp`")
}

fn is_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// The CUDA headers Clang needs from a CUDA folder, or `E1003` saying what is missing.
pub fn cuda_include_dirs(cuda_root: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let include = cuda_root.join("include");
    let missing = |file: &str, install: &str| {
        Diagnostic::new(Code::CudaHeadersNotFound, Span::new(0, 0), format!("CUDA's headers are incomplete: no `{file}` in `{}`", include.display()))
            .with_primary_message("this file is CUDA C++ (`.cu`), which Clang compiles with CUDA's headers")
            .with_note(install.to_string())
    };
    if !include.join("cuda_runtime.h").is_file() {
        return Err(missing(
            "cuda_runtime.h",
            "install the CUDA runtime's headers: `cargo xtask setup` in the cdpc checkout, or `pip install nvidia-cuda-runtime==13.5.37` into the folder given with --cuda-home, or use a CUDA toolkit",
        ));
    }
    // Clang's CUDA wrapper header includes cuRAND's device headers.
    if !include.join("curand_mtgp32_kernel.h").is_file() {
        return Err(missing(
            "curand_mtgp32_kernel.h",
            "Clang's CUDA wrapper header includes cuRAND's device headers: `cargo xtask setup` in the cdpc checkout installs them, or `pip install nvidia-curand==10.4.5.25` into the folder given with --cuda-home",
        ));
    }
    let cccl = include.join("cccl");
    Ok(if cccl.is_dir() { vec![cccl] } else { Vec::new() })
}

/// nvcc's `-std`: the C++ dialect of a CUDA C++ file (nvcc 13's values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CxxStandard {
    /// `c++03`: C++03.
    Cxx03,
    /// `c++11`: C++11.
    Cxx11,
    /// `c++14`: C++14.
    Cxx14,
    /// `c++17`: C++17.
    Cxx17,
    /// `c++20`: C++20.
    Cxx20,
    /// `c++23`: C++23.
    Cxx23,
}

impl CxxStandard {
    /// nvcc's spelling, which Clang reads too: `c++17`.
    pub fn as_str(self) -> &'static str {
        match self {
            CxxStandard::Cxx03 => "c++03",
            CxxStandard::Cxx11 => "c++11",
            CxxStandard::Cxx14 => "c++14",
            CxxStandard::Cxx17 => "c++17",
            CxxStandard::Cxx20 => "c++20",
            CxxStandard::Cxx23 => "c++23",
        }
    }

    /// The dialect nvcc's spelling names, if it is one of nvcc's.
    pub fn parse(text: &str) -> Option<CxxStandard> {
        [CxxStandard::Cxx03, CxxStandard::Cxx11, CxxStandard::Cxx14, CxxStandard::Cxx17, CxxStandard::Cxx20, CxxStandard::Cxx23].into_iter().find(|s| s.as_str() == text)
    }
}

/// What only the CUDA C++ front end reads, from nvcc's options of the same meaning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaCxxOptions {
    /// `-std=c++20`; `None`: Clang's default for CUDA, C++17 with GNU extensions (nvcc's
    /// default is C++17 with its host compiler's, g++'s, which are GNU's).
    pub std: Option<CxxStandard>,
    /// nvcc's `-Xcompiler`: options for the host compiler, which for cdpc is the host side of a
    /// `.cu` file's object (`-dc`): `-fPIC`, `-g`, `-Wall`, read by Clang as g++'s. The device
    /// side gets those of the preprocessor ([`CudaCxxOptions::preprocessor_args`]).
    pub host_args: Vec<String>,
    /// Clang's warning options that nvcc's `-W` options name, for both sides
    /// (`-Wno-deprecated-declarations`).
    pub warning_args: Vec<String>,
    /// `_FORTIFY_SOURCE` for the host side alone: the level nvcc's host compiler would define
    /// by itself at the host optimisation level nvcc passes it (Ubuntu's GCC when optimising;
    /// `toolchain::host_compiler_fortify`). nvcc's device pass preprocesses without `-O`, so
    /// the device side never gets it.
    pub host_fortify: Option<u32>,
}

impl CudaCxxOptions {
    /// The preprocessor's options among [`CudaCxxOptions::host_args`] (`-D`, `-U`, `-I`,
    /// `-isystem`, `-iquote`, `-include`, joined to their values or followed by them). nvcc
    /// preprocesses its device pass with the host compiler and these options (measured with
    /// nvcc 13.5: `-Xcompiler -DX` defines `X` in device code too), so the device side of a
    /// `.cu` file gets them; code generation's options (`-fPIC`, `-O2`, `-march=...`) stay on
    /// the host side. With `-fopenmp` the device side also gets `_OPENMP` (nvcc preprocesses
    /// its device pass with `-fopenmp` too), with nvcc's device pass's value ([`openmp_macro`]).
    pub fn preprocessor_args(&self) -> Vec<String> {
        const SEPARATE: [&str; 7] = ["-D", "-U", "-I", "-isystem", "-iquote", "-idirafter", "-include"];
        let mut out = Vec::new();
        let mut args = self.host_args.iter();
        while let Some(arg) = args.next() {
            if SEPARATE.contains(&arg.as_str()) {
                out.push(arg.clone());
                out.extend(args.next().cloned());
            } else if ["-D", "-U", "-I"].iter().any(|p| arg.len() > 2 && arg.starts_with(p)) {
                out.push(arg.clone());
            }
        }
        out.extend(openmp_macro(&self.host_args));
        out
    }

    /// Whether a side's options ask for warnings in system headers (`-Wsystem-headers`, the
    /// last of it and `-Wno-system-headers`): the host side's from [`CudaCxxOptions::host_args`]
    /// and both sides' from [`CudaCxxOptions::warning_args`]. A precompiled header keeps no
    /// warning its headers gave while it was made, so such a side reads none (the preamble
    /// replays its making's messages, the wrapper's header none): it parses every header, as
    /// the compilation with an empty cache does.
    pub fn system_header_warnings(&self, host: bool) -> bool {
        let host_args = if host { self.host_args.as_slice() } else { &[] };
        self.warning_args
            .iter()
            .chain(host_args)
            .rev()
            .find_map(|a| match a.as_str() {
                "-Wsystem-headers" => Some(true),
                "-Wno-system-headers" => Some(false),
                _ => None,
            })
            .unwrap_or(false)
    }
}

/// `args` without their `-D` and `-U` options (`-DX`, `-D X`).
fn without_macro_options(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-D" | "-U" => {
                args.next();
            }
            a if a.starts_with("-D") || a.starts_with("-U") => {}
            _ => out.push(arg),
        }
    }
    out
}

/// `-D_OPENMP=201511` for the device side where the host side's options ask for OpenMP
/// (`-fopenmp`, `-fopenmp=<runtime>`; not `-fopenmp-simd`, which defines nothing): the value
/// nvcc's device pass has, its host compiler's (g++ 12: OpenMP 4.5). The host side's is Clang's
/// own (202011 for its default OpenMP 5.1). Not Clang's value on the device side: LLVM's `omp.h`
/// (libomp-22-dev puts it among Clang's headers, before GCC's) declares `omp_is_initial_device`
/// in OpenMP 5.0's `declare variant` blocks from 201811 on, which a side without OpenMP reads as
/// two definitions (measured: "static declaration of 'omp_is_initial_device' follows
/// non-static declaration").
pub fn openmp_macro(host_args: &[String]) -> Option<String> {
    host_args.iter().any(|a| a == "-fopenmp" || a.starts_with("-fopenmp=")).then(|| "-D_OPENMP=201511".to_string())
}

/// What one Clang device compilation is asked for.
#[derive(Clone, Debug)]
pub struct ClangInvocation<'a> {
    /// The source file Clang reads.
    pub source: &'a Path,
    /// The bitcode file it writes.
    pub output: &'a Path,
    /// Architecture and default stream.
    pub target: Target,
    /// `-O0` .. `-O3`.
    pub opt_level: u8,
    /// The CUDA folder (`--cuda-path`).
    pub cuda_root: &'a Path,
    /// More `-isystem` folders (CCCL's).
    pub system_includes: &'a [PathBuf],
    /// The host compiler's own include folder ([`crate::toolchain::host_compiler_include`]),
    /// searched after every other (`-idirafter`), as nvcc's host compiler searches it: GCC's
    /// `<omp.h>` is found there. Clang's own headers of the same names (`<stddef.h>`, `<float.h>`,
    /// ...) come first and stay the ones read.
    pub host_include: Option<&'a Path>,
    /// `-I` folders, in order.
    pub includes: &'a [PathBuf],
    /// `-D`/`-U`, in order, as `-DNAME=V` / `-UNAME`.
    pub macros: &'a [String],
    /// Full debug information (`-G`): `-g -O0`. Otherwise line tables, which the launch
    /// pipeline reads for its diagnostics' lines and strips unless `-lineinfo` keeps them.
    pub full_debug: bool,
    /// nvcc's `-fmad`: `false` is `-ffp-contract=off`.
    pub fmad: bool,
    /// Clang's `-cuid`: names the `static` kernels and variables of this file.
    pub cuid: Option<&'a str>,
    /// A precompiled header of Clang's CUDA wrapper made with these same options
    /// ([`pch_path`], [`ClangInvocation::pch_args`]): `-include-pch`.
    pub pch: Option<&'a Path>,
    /// A precompiled preamble of the source ([`preamble`]) and its length in bytes: `-include-pch`
    /// and `-Xclang -preamble-bytes=N,1` (in place of [`ClangInvocation::pch`]).
    pub preamble: Option<(&'a Path, usize)>,
    /// The linked Clang's resource folder (`-resource-dir`); `None` for a Clang program, which
    /// finds its own.
    pub resource_dir: Option<&'a Path>,
    /// Compile the host side instead (`--cuda-host-only`, with Clang's nvcc-style
    /// registration: `--no-offload-new-driver`), embedding this relocatable fat binary
    /// (`-fcuda-include-gpubinary`): the file's host code, its kernels' stubs and their
    /// registration, for an object like `nvcc -dc`'s.
    pub host_fatbin: Option<&'a Path>,
    /// cdpc's additions to Clang's CUDA headers ([`additions_header`]: the cache-hint loads
    /// and stores they lack, nvcc's `__managed__`), included after Clang's CUDA wrapper on
    /// both sides.
    pub additions: Option<&'a Path>,
    /// `-std`, the host compiler's options and nvcc's warning options.
    pub cxx: &'a CudaCxxOptions,
    /// Where Clang lists the headers it reads (`-MD -MF`, with `true`; `-MMD -MF`, the user's
    /// only, with `false`).
    pub depfile: Option<(&'a Path, bool)>,
    /// libdevice in place of the toolkit's (`-nocudalib` and `-mlink-builtin-bitcode`, on the
    /// device side): `back::precision::libdevice_variant`'s copy, with the toolkit's version as
    /// Clang gives it ([`sdk_version`], read once for the compilation).
    pub libdevice: Option<(&'a Path, Option<&'a str>)>,
    /// nvcc's `-ftz=true`: `-fgpu-flush-denormals-to-zero` (`.ftz` instructions, libdevice's
    /// `__CUDA_FTZ` 1).
    pub ftz: bool,
    /// `-E`: preprocess only, this side ([`Side::Device`] for [`ClangInvocation::target`]'s
    /// architecture), writing the preprocessed source to the output instead of bitcode.
    pub preprocess: Option<Side>,
    /// The source is cdpc's own `-E` output ([`crate::toolchain::PREPROCESSED_START`]), which
    /// holds Clang's CUDA wrapper and cdpc's additions already: `-nocudainc`, and no additions.
    pub preprocessed_input: bool,
}

/// One side of a CUDA C++ compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `--cuda-device-only`, `__CUDA_ARCH__` defined.
    Device,
    /// `--cuda-host-only`.
    Host,
}

/// The `-cuid` of a compilation that names none ([`ClangInvocation::cuid`]): a hash of the
/// source's file name and text, the same on both sides and in every run. Without it Clang's
/// driver hashes the input with every argument, among them the output in this run's work folder
/// (`/tmp/cdpc-work-PID-XXXXXX/device.bc`), so that a `static` kernel's Clang name
/// (`_ZL2skPi__intern__<hash>`), which cdpc renames nvcc's way in the code but which `-G`'s
/// debug information keeps as its linkage name, changed from run to run, and with it the
/// object: ccache's and a reproducible build's byte-identical objects need it fixed. `None`
/// when the source cannot be read (Clang then reports that).
fn default_cuid(source: &Path) -> Option<String> {
    let text = std::fs::read(source).ok()?;
    let name = source.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default();
    // FNV-1a, 64 bits: stable across Rust releases, unlike `DefaultHasher`.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in name.iter().chain([0u8].iter()).chain(&text) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    Some(format!("{hash:016x}"))
}

/// How every precompiled header (the wrapper's, a preamble) is made, beyond the compilation's own
/// options. `-fpch-instantiate-templates` performs the header's pending template instantiations
/// while making it instead of at the end of every compilation that uses it: the CUDA wrapper
/// leaves libstdc++'s `<cmath>` special functions (`std::__detail::__hyperg<float>`, ...) pending,
/// about 70 ms of each `.cu` compilation here (`-ftime-trace`: `PerformPendingInstantiations`).
/// The bitcode is the same (compared on the samples and the corpus); the options are part of
/// [`ClangInvocation::identity`], so headers made without them are not used.
///
/// The device side's only: on the host side they change the order in which Clang emits some of
/// a file's functions and string constants (cdpSimpleQuicksort's host object: the same code,
/// other bytes), where a header made without them gives the object of the compilation without
/// one, byte for byte (compared on the corpus).
const PCH_OPTIONS: [&str; 2] = ["-Xclang", "-fpch-instantiate-templates"];

/// What the device side of a compilation that parses Clang's CUDA wrapper itself (no
/// precompiled header of it yet: the first `.cu` file compiled with a set of options) defines
/// to leave out the wrapper's `__clang_cuda_texture_intrinsics.h`: its include guard. That
/// header is the implementation of CUDA's texture and surface functions (the
/// `__nv_tex_surf_handler` their templates call) and a third of the wrapper's text after
/// preprocessing; measured on KLAP's BT (2-core development machine), the device side's parse
/// took 0.30-0.35 s without it against 0.51-0.76 s with it, which with no header to read is the
/// compilation's critical path. Its functions are templates, instantiated only where a program
/// calls them, so a device side that compiles without it writes the bitcode it writes with it
/// (the driver's tests compare the corpus's and the samples' objects); one that calls a
/// texture or surface function fails without it ("use of undeclared identifier
/// '__nv_tex_surf_handler'"), and the driver then compiles it again with the whole wrapper, as
/// it does any failure of such a run (`driver::cuda`). Headers made for the cache always hold
/// the whole wrapper.
pub const WITHOUT_TEXTURE_INTRINSICS: &str = "-D__CLANG_CUDA_TEXTURE_INTRINSICS_H__";

/// The file [`WITHOUT_TEXTURE_INTRINSICS`] leaves out, in the resource folder's `include`.
pub const TEXTURE_INTRINSICS: &str = "__clang_cuda_texture_intrinsics.h";

/// Clang's arguments that list the files it read in `depfile`: every file (`-MD`), or with
/// `all` false the system headers left out (`-MMD`).
fn push_depfile(args: &mut Vec<OsString>, depfile: &Path, all: bool) {
    args.push(if all { "-MD" } else { "-MMD" }.into());
    args.push("-MF".into());
    args.push(depfile.as_os_str().to_owned());
}

impl ClangInvocation<'_> {
    /// Whether this is the host side (`-dc`'s host object, or its `-E`).
    fn host_side(&self) -> bool {
        self.host_fatbin.is_some() || self.preprocess == Some(Side::Host)
    }

    /// [`PCH_OPTIONS`] where they apply: the device side's.
    fn pch_options(&self) -> &'static [&'static str] {
        if self.host_side() {
            &[]
        } else {
            &PCH_OPTIONS
        }
    }

    /// The arguments after the program name.
    pub fn args(&self) -> Vec<OsString> {
        let mut a = self.options();
        if self.cuid.is_none() {
            if let Some(cuid) = default_cuid(self.source) {
                a.push(format!("-cuid={cuid}").into());
            }
        }
        if let Some(fatbin) = self.host_fatbin {
            for s in ["-Xclang", "-fcuda-include-gpubinary", "-Xclang"] {
                a.push(s.into());
            }
            a.push(fatbin.as_os_str().to_owned());
        }
        if let Some((pch, bytes)) = self.preamble {
            a.push("-include-pch".into());
            a.push(pch.as_os_str().to_owned());
            a.push("-Xclang".into());
            a.push(format!("-preamble-bytes={bytes},1").into());
        } else if let Some(pch) = self.pch {
            a.push("-include-pch".into());
            a.push(pch.as_os_str().to_owned());
        }
        if let Some((depfile, all)) = self.depfile {
            push_depfile(&mut a, depfile, all);
        }
        a.push("-o".into());
        a.push(self.output.as_os_str().to_owned());
        a.push(self.source.as_os_str().to_owned());
        a
    }

    /// The arguments that write a precompiled header of Clang's CUDA wrapper (what every
    /// file's compilation parses first, most of a small file's time) to `output`, from an
    /// empty `empty` source, with every option of this compilation.
    /// With `depfile` set, Clang also lists the files it read there ([`push_depfile`]).
    pub fn pch_args(&self, empty: &Path, output: &Path) -> Vec<OsString> {
        let mut a = self.options();
        if let Some((depfile, all)) = self.depfile {
            push_depfile(&mut a, depfile, all);
        }
        for s in self.pch_options().iter().chain(&["-Xclang", "-emit-pch", "-o"]) {
            a.push(s.into());
        }
        a.push(output.as_os_str().to_owned());
        a.push(empty.as_os_str().to_owned());
        a
    }

    /// The arguments that precompile a preamble ([`preamble`]): its copy `copy` to `output`,
    /// with every option of this compilation, `-iquote quote_dir` (the source's folder as
    /// [`preamble::quote_dir`] spells it, so that `#include "..."` finds what it finds beside
    /// the source, under the same name) and the list of the files it read in `depfile`.
    pub fn preamble_args(&self, copy: &Path, quote_dir: &Path, output: &Path, depfile: &Path) -> Vec<OsString> {
        let mut a = self.options();
        a.push("-iquote".into());
        a.push(quote_dir.as_os_str().to_owned());
        push_depfile(&mut a, depfile, true);
        for s in self.pch_options().iter().chain(&["-Xclang", "-emit-pch", "-o"]) {
            a.push(s.into());
        }
        a.push(output.as_os_str().to_owned());
        a.push(copy.as_os_str().to_owned());
        a
    }

    /// What a cached header for these options depends on besides its sources: Clang (a Clang
    /// program, or the resource folder's CUDA wrapper for the linked one: its path, size and
    /// time), CUDA's `cuda.h` (size and time), cdpc's version and every option (among them the
    /// path of cdpc's additions to Clang's headers, which names their text's hash).
    pub fn identity(&self, clang: &Path) -> Vec<String> {
        let stamp = |p: &Path| format!("{}: {:?}", p.display(), std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok())));
        let mut out = vec![stamp(clang), stamp(&self.cuda_root.join("include/cuda.h")), env!("CARGO_PKG_VERSION").to_string(), front_end_fingerprint().to_string()];
        out.extend(self.pch_options().iter().map(|o| o.to_string()));
        // The linked Clang's headers prune their deferred-diagnostic roots (shim.cpp): headers
        // made before that are made again.
        out.push("pruned deferred-diagnostic roots".to_string());
        out.extend(self.options().into_iter().map(|o| o.to_string_lossy().into_owned()));
        out
    }

    /// Everything but the input, the output and the precompiled header.
    fn options(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |s: String| a.push(s.into());
        let host = self.host_side();
        let side: &[&str] = if host { &["--cuda-host-only", "--no-offload-new-driver"] } else { &["--cuda-device-only"] };
        let action: &[&str] = if self.preprocess.is_some() { &["-E"] } else { &["-emit-llvm", "-c"] };
        for s in ["-x", "cuda"].iter().chain(side).chain(&["-fgpu-rdc"]).chain(action) {
            push(s.to_string());
        }
        if self.preprocessed_input {
            push("-nocudainc".into());
        }
        if let Some(std) = self.cxx.std {
            push(format!("-std={}", std.as_str()));
        }
        // nvcc's (EDG's) Itanium names for template instances: without the template-parameter
        // declarations Clang 18 and later write where a parameter's type is deduced or
        // dependent (`template <auto V>`, `template <class T, T V>`), without a constrained
        // template's requirements (C++20), and without a template template parameter's list,
        // all of which nvcc 13.5 leaves out (measured); host code registers and calls kernels by
        // these names. The other changes of Clang 18 to 21 it reverts (ABIVersions.def): the
        // mangling of lambdas in members of local classes, of construction vtables and of
        // member-like friend templates, and on x86-64 the return of C++ records of AVX vectors
        // in registers (docs/CUDA-CXX.md, "Not yet through Clang").
        push("-fclang-abi-compat=17".into());
        push(format!("--cuda-gpu-arch={}", self.target.sm));
        push(format!("--cuda-path={}", self.cuda_root.display()));
        if let Some(dir) = self.resource_dir {
            push("-resource-dir".into());
            push(dir.display().to_string());
        }
        // cdpc accepts the newest CUDA; Clang 22 knows CUDA up to 12.9 and says so.
        push("-Wno-unknown-cuda-version".into());
        // From CUDA 12.9 on Clang 22 writes PTX ISA 8.8, too old for sm_88 and sm_110 (9.0):
        // its own optimisation then stops with a fatal error in NVPTX. The architectures
        // after sm_90 get the oldest PTX ISA NVPTX takes for them as a feature beside Clang's,
        // and NVPTX writes the newer of the two (`SmVersion::min_ptx`); the others are left
        // as they were.
        let min_ptx = self.target.sm.min_ptx();
        if !host && min_ptx >= 86 {
            for s in ["-Xclang", "-target-feature", "-Xclang"] {
                push(s.into());
            }
            push(format!("+ptx{min_ptx}"));
        }
        // "loop not unrolled: the optimizer was unable to perform the requested transformation"
        // is the optimiser's note on a `#pragma unroll` it did not honour (CUB's radix sort has
        // several, so `thrust::sort` in device code warned twice); nvcc says nothing of the kind,
        // and a clean file prints nothing.
        push("-Wno-pass-failed".into());
        // `static_cast<float>(rand()) / RAND_MAX`, in the host code of many CUDA programs, is
        // Clang's default warning "implicit conversion from 'int' to 'float' changes value";
        // neither nvcc's front end nor its host compiler (GCC) gives it by default.
        push("-Wno-implicit-const-int-float-conversion".into());
        // `register` from C++17 on: Clang's default is an error, where g++, nvcc's host
        // compiler, warns (`-Wregister`) and nvcc's device side says nothing (nvcc 13.5,
        // `-std=c++17` and `c++20`; NVIDIA's cuda-vmm blog sample).
        push(if host { "-Wno-error=register" } else { "-Wno-register" }.into());
        // A narrowing conversion in a braced initializer (`int y[2] = {0.0, 1.5};`) in device
        // code: nvcc warns ("invalid narrowing conversion", #2361-D) and compiles, where
        // Clang's default is an error (SHOC's neural-network benchmark). The host side keeps
        // the error for host code, where g++ refuses a constant that narrows, and makes the
        // rest warnings (clang/shim.cpp, Forward's `forgive_host_calls`).
        if !host {
            push("-Wno-error=c++11-narrowing".into());
        }
        // A byte that is not UTF-8 in a string or character literal: nvcc refuses it on both
        // sides ("invalid multibyte character sequence", nvcc 13.5), where Clang warns and
        // keeps the byte; in a comment both take it (a Latin-1 source, Rodinia's myocyte).
        push("-Werror=invalid-source-encoding".into());
        // nvcc defines it with -rdc=true, and cdpc's device code is always relocatable:
        // without it CUDA's headers replace the device runtime's calls (cudaMalloc,
        // cudaDeviceGetAttribute, cudaGetDevice, ...) by stubs that fail (measured on the H100:
        // samples/devrt_queries.cdp read 0s and -1s). Clang's -fgpu-rdc does not define it.
        push("-D__CUDACC_RDC__".into());
        // Messages as plain lines: `file:line:col: error: message [-Wflag]`.
        // A crash must leave nothing behind: no reproducer files in the temporary folder.
        for s in ["-fno-color-diagnostics", "-fno-caret-diagnostics", "-fdiagnostics-absolute-paths", "-fmessage-length=0", "-fno-crash-diagnostics"] {
            push(s.into());
        }
        if self.full_debug {
            push("-O0".into());
            push("-g".into());
        } else {
            push(format!("-O{}", self.opt_level.min(3)));
            push("-gline-tables-only".into());
        }
        if !self.fmad {
            push("-ffp-contract=off".into());
        }
        if self.ftz && !host {
            push("-fgpu-flush-denormals-to-zero".into());
        }
        if let (Some((libdevice, sdk_version)), false) = (self.libdevice, host) {
            // `-nocudalib` also drops the toolkit's version, which Clang's CUDA headers read (a
            // host launch needs it: `cudaConfigureCall` otherwise) and which the module records:
            // given back as Clang gives it, the IR is that of Clang's own link of libdevice
            // (compared with clang++-22).
            push("-nocudalib".into());
            let mut cc1 = vec!["-mlink-builtin-bitcode".to_string(), libdevice.display().to_string()];
            if let Some(version) = sdk_version {
                cc1.push(format!("-target-sdk-version={version}"));
            }
            for arg in cc1 {
                push("-Xclang".into());
                push(arg);
            }
        }
        // nvcc's `--default-stream per-thread` defines this macro, with which CUDA's device
        // runtime header calls the `_ptsz` launch entry points (Clang's
        // `-fgpu-default-stream=per-thread` is about host code: unused in a device compilation).
        if self.target.default_stream == crate::target::DefaultStream::PerThread {
            push("-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1".into());
        }
        if let Some(cuid) = self.cuid {
            push(format!("-cuid={cuid}"));
        }
        if let Some(header) = self.additions {
            push("-include".into());
            push(header.display().to_string());
        }
        if !host {
            for m in unsigned_scoped_min_max(self.target.address_size) {
                push(m);
            }
            // nvcc's correctly rounded `sqrtf`: in process cdpc sets this LLVM option for the
            // whole process (`back::nvcc_math_defaults`); a Clang program gets it here.
            if self.resource_dir.is_none() {
                push("-mllvm".into());
                push(crate::target::PREC_SQRT_REFLECT.into());
            }
        }
        for m in self.macros {
            push(m.clone());
        }
        for dir in self.includes {
            push(format!("-I{}", dir.display()));
        }
        for dir in self.system_includes {
            push("-isystem".into());
            push(dir.display().to_string());
        }
        for arg in &self.cxx.warning_args {
            push(arg.clone());
        }
        // Last of cdpc's folders, before any `-idirafter` of the user's (`-Xcompiler`), which GCC
        // also searches after its own.
        if let Some(dir) = self.host_include {
            push("-idirafter".into());
            push(dir.display().to_string());
        }
        if let (true, Some(level)) = (host, self.cxx.host_fortify) {
            push(format!("-D_FORTIFY_SOURCE={level}"));
        }
        let mut host_compiler = if host { self.cxx.host_args.clone() } else { self.cxx.preprocessor_args() };
        if self.preprocessed_input {
            // Its macros were applied when it was preprocessed (the driver's `macro_args` are
            // left out too): `-D`/`-U` again would expand what `-E` kept from them.
            host_compiler = without_macro_options(host_compiler);
        }
        // The host compiler's `-Werror` is the driver's (`host_warnings::werror_promotes`),
        // after the warnings inside device code, which nvcc's g++ never sees, are dropped: Clang
        // would make them errors first.
        for arg in host_compiler.into_iter().filter(|a| !(host && a == host_warnings::WERROR)) {
            push(arg);
        }
        a
    }
}

/// The macro nvcc's `--extended-lambda` defines, and the name Clang is given it by
/// ([`macro_for_clang`]).
pub const EXTENDED_LAMBDA: (&str, &str) = ("__CUDACC_EXTENDED_LAMBDA__", "__CDPC_EXTENDED_LAMBDA__");

/// A `-D`/`-U` operand (`NAME`, `NAME=value`) as Clang is given it: `__CUDACC_EXTENDED_LAMBDA__`
/// under another name ([`EXTENDED_LAMBDA`]), which cdpc's additions define it as, any other as
/// it is. With the macro defined, CUDA's `cuda_runtime.h` includes `<functional>`, and through
/// it Clang's wrapper of `<new>`, whose device `operator new` calls `::malloc`: inside Clang's
/// CUDA wrapper, which includes `cuda_runtime.h` before it declares device code's `malloc`, that
/// was the host's, and every `new` in device code was "reference to __host__ function 'malloc'
/// in __device__ function", where nvcc's `malloc` is declared for both sides from the start
/// (measured with nvcc 13.5 and Clang 22). The additions, read after the wrapper, define the
/// macro and include the two headers as `cuda_runtime.h` would, before the program's first line.
pub fn macro_for_clang(operand: &str) -> std::borrow::Cow<'_, str> {
    let (nvccs, ours) = EXTENDED_LAMBDA;
    match operand.strip_prefix(nvccs) {
        Some(rest) if rest.is_empty() || rest.starts_with('=') => format!("{ours}{rest}").into(),
        _ => operand.into(),
    }
}

/// cdpc's additions to Clang 22's CUDA headers, where nvcc's headers and front end accept what
/// Clang's do not; the header's opening comment says why each is there, section by section:
/// `__managed__` (a device variable in the section [`crate::pipeline::managed::MARKER`], which
/// the pipeline makes nvcc's managed variable), `new`/`delete` without `<new>`, the device
/// runtime's typed calls, host code's `min`/`max`, CUDA's cache-hint loads and stores, CUDA
/// 12.8's `__nv_atomic_*`, cooperative groups' clusters, the kernel qualifiers Clang drops
/// (annotations for [`crate::pipeline::qualifiers`]), nvcc's hints, and nvcc's built-ins behind
/// NVIDIA's headers with `__nv_aligned_device_malloc` and device `nan`, and the C library's
/// headers that nvcc's cuda_runtime.h includes and Clang's wrapper does not (`<math.h>` and
/// `<time.h>`; `<stdio.h>` and `<assert.h>` on the device side).
pub const ADDITIONS: &str = include_str!("additions.h");

/// [`ADDITIONS`] as a file in `dir` (the cache folder's `include/`, or a compilation's own
/// folder when there is no cache): its path. Written only when the file is missing or differs,
/// whole and renamed into place, so that the precompiled headers that read it stay valid
/// (Clang checks every input file's size and time).
///
/// The writers take turns (an exclusive `flock` on the folder, across threads and processes)
/// and write only where the file is still not [`ADDITIONS`]: of the callers that find it
/// missing at once (two compilations, or `-dc`'s two sides, which call this on two threads of
/// one process), the first writes it and the others take that file, never replacing it under a
/// header made from it; each writes a temporary file of its own. One temporary name per process
/// (as before) let one side's write truncate the file the other side was renaming, the other
/// side's rename fail, and that side take a folder of its own, whose path is in its headers'
/// keys: its preamble was then never seen twice (`preamble_cache`'s warning test, under load).
pub fn additions_header(dir: &Path) -> std::io::Result<PathBuf> {
    generated_header(dir, &additions_file_name(), ADDITIONS)
}

/// A header of cdpc's, `text`, as the file `name` in `dir`, written as [`additions_header`]
/// writes its own (whole, renamed into place, only where missing or other, the writers taking
/// turns): its path.
pub fn generated_header(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let ours = || std::fs::read(&path).is_ok_and(|b| b == text.as_bytes());
    if ours() {
        return Ok(path);
    }
    filler::make_dir(dir)?;
    // Where the folder cannot be locked (a file system without `flock`), the writes are whole
    // and renamed into place all the same.
    let folder = std::fs::File::open(dir).ok();
    // SAFETY: flock on a descriptor this `File` owns, released when it is closed.
    let _locked = folder.as_ref().is_some_and(|f| unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(f), libc::LOCK_EX) } == 0);
    if ours() {
        return Ok(path);
    }
    // A temporary file renamed into place, recorded while it exists: a stopped filler leaves
    // none (`cache::write_atomic`).
    cache::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// Clang's CUDA wrapper (`__clang_cuda_runtime_wrapper.h` and the `__clang_cuda_*.h` it
/// includes, in the resource folder `resource_dir`) with each `#include "X"` of a header that
/// is CUDA's (in `cuda_root`'s `include`, not beside the wrapper) naming CUDA's file by its path,
/// as [`nvcc_text::Replacements`] of the files that have any, and the `-D` options they need.
/// Clang looks for `"cuda.h"` beside the wrapper, then in the `-I` folders, then in CUDA's: a
/// program's own `cuda.h` (or `driver_types.h`, ...) in an `-I` folder was taken for CUDA's and
/// the wrapper failed ("cuda.h did not define CUDA_VERSION"), where nvcc's headers, which include
/// each other beside themselves, always get CUDA's. The program's own `#include "cuda.h"` still
/// gets its own.
///
/// The wrapper is in every precompiled header, whose places are offsets in the text it was made
/// from, checked against the file's size and time only: its text must keep its length. So
/// `"cuda.h"` becomes a macro name of the same length, `__C00___`, which a `-D` option makes
/// CUDA's path (`#include MACRO` takes the path the macro expands to). The includes of Clang's
/// own `__clang_cuda_*.h` go through such macros too (`__H04____...`), each Clang's file's
/// path: where the command line's macros are to be kept out of the headers nvcc does not read,
/// [`hidden_macros`] points these macros, and those of CUDA's headers nvcc does not read, at
/// files that hide them around the header.
pub fn wrapper_includes(resource_dir: &Path, cuda_root: &Path) -> (nvcc_text::Replacements, Vec<String>) {
    let mut out = nvcc_text::Replacements::default();
    let mut macros: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let (ours, theirs) = (resource_dir.join("include"), cuda_root.join("include"));
    let Ok(entries) = std::fs::read_dir(&ours) else { return (out, macros) };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("__clang_cuda_"))).collect();
    files.sort();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let mut changed = false;
        let mut new = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let found = match included_header(line) {
                // Clang's own headers, `<__clang_cuda_math.h>` or `"__clang_cuda_builtin_vars.h"`.
                Some((header, spelled)) if header.starts_with("__clang_cuda_") && ours.join(header).is_file() => Some((ours.join(header), spelled, 'H')),
                Some((header, spelled)) if spelled.starts_with('"') && !ours.join(header).exists() && theirs.join(header).is_file() => Some((theirs.join(header), spelled, 'C')),
                _ => None,
            };
            match found {
                Some((file, quoted, letter)) => {
                    let header = file.to_string_lossy().into_owned();
                    let index = names.iter().position(|n| *n == header).unwrap_or_else(|| {
                        names.push(header.clone());
                        names.len() - 1
                    });
                    // `__C` (CUDA's) or `__H` (Clang's) and two digits, `_` up to the quoted
                    // name's length (8 at least).
                    let mut name = format!("__{letter}{index:02}");
                    while name.len() < quoted.len() {
                        name.push('_');
                    }
                    if name.len() != quoted.len() {
                        new.push_str(line);
                        continue;
                    }
                    let define = format!("-D{name}=\"{}\"", define_value(&file));
                    if !macros.contains(&define) {
                        macros.push(define);
                    }
                    new.push_str(&line.replacen(&quoted, &name, 1));
                    changed = true;
                }
                _ => new.push_str(line),
            }
        }
        if let Some(rewritten) = std_allocation_as_using(&new) {
            new = rewritten;
            changed = true;
        }
        if changed {
            debug_assert_eq!(new.len(), text.len());
            let new = new.into_bytes();
            let new = nvcc_text::rewrite(&new).unwrap_or(new);
            out.insert(text.as_bytes(), new);
        }
    }
    (out, macros)
}

/// The header a line includes and how it is spelled there: `("cuda.h", "\"cuda.h\"")` for
/// `#include "cuda.h"`, `("limits", "<limits>")` for `# include <limits>`.
pub(crate) fn included_header(line: &str) -> Option<(&str, String)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim_start();
    let (open, close) = match rest.chars().next()? {
        '"' => ('"', '"'),
        '<' => ('<', '>'),
        _ => return None,
    };
    let (name, _) = rest[1..].split_once(close)?;
    Some((name, format!("{open}{name}{close}")))
}

/// `path` as the value of a `-D NAME="..."` option: `\` and `"` escaped, as a string literal
/// needs them (`#include NAME` takes the path the literal spells).
pub(crate) fn define_value(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "\\\\").replace('"', "\\\"")
}

/// Clang's wrapper's device-side `std::free` and `std::malloc`, functions of their own that
/// call `::free` and `::malloc`, as using-declarations of those (`using ::malloc;`), which name
/// the same functions, host's and device's, as nvcc's headers do (`<cstdlib>`'s `std::malloc`
/// is `::malloc`): with `using namespace std;`, common in CUDA programs, device code's
/// `malloc(n)` found both `::malloc` and the wrapper's `std::malloc` and was ambiguous under
/// Clang where nvcc compiles it (NPSLab's show-me-dynamic-parallelism, bfs-rec). Each line
/// keeps its length (padded with spaces), so the text keeps its lines and its length, as
/// precompiled headers need ([`wrapper_includes`]). `None` where the text has no such block
/// (another Clang's wrapper).
fn std_allocation_as_using(text: &str) -> Option<String> {
    const BLOCK: [&str; 4] =
        ["__device__ static inline void free(void *__ptr) { ::free(__ptr); }\n", "__device__ static inline void *malloc(size_t __size) {\n", "  return ::malloc(__size);\n", "}\n"];
    const USING: [&str; 4] = ["using ::free;", "using ::malloc;", "", ""];
    let original: String = BLOCK.concat();
    let at = text.find(&format!("namespace std {{\n{original}"))? + "namespace std {\n".len();
    let replaced: String = BLOCK.iter().zip(USING).map(|(line, using)| format!("{using:<width$}\n", width = line.len() - 1)).collect();
    debug_assert_eq!(replaced.len(), original.len());
    Some(format!("{}{replaced}{}", &text[..at], &text[at + original.len()..]))
}

/// The text of every file of the CUDA C++ front end (this folder), whose hash is
/// [`front_end_fingerprint`]: what decides how Clang reads a file and what the cache's
/// precompiled headers hold (the wrapper's and the file's rewrites, `additions.h`, the options,
/// the shim). A test checks that every file of the folder is here.
pub const FRONT_END_SOURCES: &[(&str, &str)] = &[
    ("additions.h", include_str!("additions.h")),
    ("cache.rs", include_str!("cache.rs")),
    ("diagnostics.rs", include_str!("diagnostics.rs")),
    ("filler.rs", include_str!("filler.rs")),
    ("hidden_macros.rs", include_str!("hidden_macros.rs")),
    ("host_warnings.rs", include_str!("host_warnings.rs")),
    ("in_process.rs", include_str!("in_process.rs")),
    ("mend.rs", include_str!("mend.rs")),
    ("mod.rs", include_str!("mod.rs")),
    ("nvcc_text.rs", include_str!("nvcc_text.rs")),
    ("preamble.rs", include_str!("preamble.rs")),
    ("run.rs", include_str!("run.rs")),
    ("setup.rs", include_str!("setup.rs")),
    ("shared_storage.rs", include_str!("shared_storage.rs")),
    ("shim.cpp", include_str!("shim.cpp")),
    ("vla_init.rs", include_str!("vla_init.rs")),
];

/// The hash of [`FRONT_END_SOURCES`], 16 hexadecimal digits, in every cached header's key and
/// in the cache's version tag (`cache::version_tag`): a build of cdpc whose front end reads
/// files otherwise never takes another build's headers, although both say version 0.1.0 (a
/// header made before the wrapper's `std::malloc` became a using-declaration kept it
/// ambiguous, measured). Computed once per process (about 400 KB of text).
pub fn front_end_fingerprint() -> &'static str {
    static FINGERPRINT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FINGERPRINT.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        FRONT_END_SOURCES.hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    })
}

/// The newest CUDA Clang 22 knows: a newer toolkit is taken as this one.
const CLANG_LATEST_CUDA: (u32, u32) = (12, 9);

/// The CUDA version Clang's driver gives the front end for the toolkit in `cuda_root`
/// (`-target-sdk-version`): `CUDA_VERSION` of its `cuda.h` (13050 is 13.5), at most
/// [`CLANG_LATEST_CUDA`].
pub fn sdk_version(cuda_root: &Path) -> Option<String> {
    let header = std::fs::read_to_string(cuda_root.join("include/cuda.h")).ok()?;
    let number: u32 = header.lines().find_map(|l| l.strip_prefix("#define CUDA_VERSION "))?.trim().parse().ok()?;
    let (major, minor) = (number / 1000, number % 1000 / 10).min(CLANG_LATEST_CUDA);
    Some(format!("{major}.{minor}"))
}

/// The name of [`additions_header`]'s file: cdpc's version and the hash of [`ADDITIONS`], so that
/// two builds of one version whose additions differ (a development build beside a test build,
/// measured: each rewrote the other's file between its write and Clang's read, and a compilation
/// read the other's text) never share one file, nor the precompiled headers made from it (their
/// key holds the path).
pub fn additions_file_name() -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    ADDITIONS.hash(&mut hasher);
    format!("cdpc-{}-{:016x}-additions.h", env!("CARGO_PKG_VERSION"), hasher.finish())
}

/// Whether `path` is [`additions_header`]'s file (of any version).
pub(crate) fn is_additions_header(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cdpc-") && n.ends_with("-additions.h"))
}

/// nvcc's unsigned `atomicMax_block`, `atomicMin_block`, `atomicMax_system` and
/// `atomicMin_system`, as `-D` definitions of the builtins Clang's CUDA header calls for them.
///
/// Clang 22 lowers the unsigned forms (`__nvvm_atom_{cta,sys}_{max,min}_gen_{ui,ull}`) to the
/// same intrinsics as the signed ones (`llvm.nvvm.atomic.max.gen.i.cta`, ...), which NVPTX
/// writes as `atom.cta.max.s32`: a signed comparison where nvcc writes `atom.global.cta.max.u32`
/// (measured with clang++-22 and nvcc 13.5; `compiler/tests/atomics_ptx.rs`), so that
/// `atomicMax_block(&u, 0x80000000u)` leaves `u == 5` unchanged. LLVM 22 has no unsigned
/// scoped intrinsic, and NVPTX ignores the scope of an `atomicrmw umax`, so each becomes nvcc's
/// instruction in inline assembly on the generic address: relaxed, of its scope, and a barrier
/// to the compiler's own reordering of memory around it (`"memory"`), as the intrinsic is. The
/// signed forms and the unscoped ones (`atomicrmw umax`, `atom.global.max.u32`) are right as
/// Clang writes them and stay.
fn unsigned_scoped_min_max(address_size: crate::target::AddressSize) -> Vec<String> {
    let pointer = if address_size == crate::target::AddressSize::Bits64 { "l" } else { "r" };
    let mut out = Vec::new();
    for scope in ["cta", "sys"] {
        for op in ["max", "min"] {
            for (suffix, ty, bits, reg) in [("ui", "unsigned int", 32, "r"), ("ull", "unsigned long long", 64, "l")] {
                out.push(format!(
                    "-D__nvvm_atom_{scope}_{op}_gen_{suffix}(p,v)=({{ {ty} __cdpc_old; asm volatile(\"atom.{scope}.{op}.u{bits} %0, [%1], %2;\" : \"={reg}\"(__cdpc_old) : \"{pointer}\"(p), \"{reg}\"(({ty})(v)) : \"memory\"); __cdpc_old; }})"
                ));
            }
        }
    }
    out
}

/// The names a file of the CUDA wrapper's may look a header up by, for
/// [`shadowing_file`]: every `<name>` and `"name"` in `text` made of the characters of a path
/// (letters, digits, `_`, `.`, `/`, `+`, `-`), relative. A superset of what it includes,
/// `#include_next`s and probes with `__has_include`, also through macros that take the name
/// (`_CCCL_HAS_INCLUDE(<nv/target>)`), and of much else (`template <class T>` gives nothing,
/// the characters not being a path's; `<T>` gives `T`), which only ever refuses more.
pub fn header_names(text: &str, names: &mut std::collections::BTreeSet<String>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let close = match bytes[i] {
            b'<' => b'>',
            b'"' => b'"',
            _ => {
                i += 1;
                continue;
            }
        };
        let start = i + 1;
        let mut end = start;
        while end < bytes.len() && end - start <= 255 && (bytes[end].is_ascii_alphanumeric() || b"_./+-".contains(&bytes[end])) {
            end += 1;
        }
        let name = &bytes[start..end.min(bytes.len())];
        // Not a file's name: absolute (no folder is searched), a folder's (`.libs/`), or no
        // name at all (`.`, `...`, which would find every folder).
        let a_name = !name.is_empty() && name[0] != b'/' && name.last() != Some(&b'/') && name.iter().any(u8::is_ascii_alphanumeric);
        if end < bytes.len() && bytes[end] == close && a_name {
            names.insert(text[start..end].to_string());
            i = end + 1;
        } else {
            i = start;
        }
    }
}

/// A file of one of `dirs` (the user's `-I` folders, searched before every folder of the
/// wrapper's) that a lookup of one of `names` ([`header_names`]) would find, which the
/// wrapper's precompiled header made without those folders did not read: the first found.
/// A folder that does not exist shadows nothing (Clang skips it); one that cannot be listed
/// is taken to shadow.
pub fn shadowing_file(names: &[String], dirs: &[PathBuf]) -> Option<PathBuf> {
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.kind() == std::io::ErrorKind::NotADirectory => continue,
            Err(_) => return Some(dir.clone()),
        };
        let top: std::collections::HashSet<OsString> = entries.flatten().map(|e| e.file_name()).collect();
        for name in names {
            let first = name.split('/').next().unwrap_or(name);
            // `.` and `..` lead anywhere: looked at whatever they are.
            if first == "." || first == ".." || top.contains(std::ffi::OsStr::new(first)) {
                let path = dir.join(name);
                if std::fs::metadata(&path).is_ok() {
                    return Some(path);
                }
            }
        }
    }
    None
}

/// Where the precompiled header of Clang's CUDA wrapper for `invocation` is kept in `cache`
/// ([`cache`]): `pch/<stem>.pch`, beside the empty source it is made from (`<stem>.cu`) and its
/// mark (`<stem>.seen`). The stem ([`cache::stem`]) hashes Clang (a Clang program, or the
/// resource folder's CUDA wrapper for the linked one: its path, size and time), cdpc's version,
/// CUDA's `cuda.h` (size and time) and every option of the compilation, so that a header is
/// used only by compilations it was made for; Clang also checks the options it records and
/// refuses a header that does not fit, which makes the compilation run without one.
pub fn pch_path(cache: &cache::Cache, clang: &Path, invocation: &ClangInvocation<'_>) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    invocation.identity(clang).hash(&mut hasher);
    cache.kind_dir("pch").join(format!("{}.pch", cache::stem(hasher.finish())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extended_lambda_macro_reaches_clang_under_its_other_name_alone() {
        assert_eq!(macro_for_clang("__CUDACC_EXTENDED_LAMBDA__=1"), "__CDPC_EXTENDED_LAMBDA__=1");
        assert_eq!(macro_for_clang("__CUDACC_EXTENDED_LAMBDA__"), "__CDPC_EXTENDED_LAMBDA__");
        assert_eq!(macro_for_clang("__CUDACC_EXTENDED_LAMBDA__X=1"), "__CUDACC_EXTENDED_LAMBDA__X=1");
        assert_eq!(macro_for_clang("__CUDACC_RELAXED_CONSTEXPR__=1"), "__CUDACC_RELAXED_CONSTEXPR__=1");
        assert_eq!(macro_for_clang("N=1024"), "N=1024");
    }

    #[test]
    fn the_fingerprint_covers_every_file_of_the_front_end() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/front/cuda");
        let mut files: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        let listed: Vec<String> = FRONT_END_SOURCES.iter().map(|(name, _)| name.to_string()).collect();
        assert_eq!(listed, files);
        assert_eq!(front_end_fingerprint().len(), 16);
    }

    /// Clang's wrapper's `std::malloc` and `std::free` become using-declarations of the global
    /// ones, each line its old length, the text its old length and lines.
    #[test]
    fn the_wrappers_std_allocation_functions_become_using_declarations() {
        let wrapper = "} // extern \"C\"\n\n// We also need device-side std::malloc and std::free.\nnamespace std {\n__device__ static inline void free(void *__ptr) { ::free(__ptr); }\n__device__ static inline void *malloc(size_t __size) {\n  return ::malloc(__size);\n}\n} // namespace std\n";
        let rewritten = std_allocation_as_using(wrapper).unwrap();
        assert_eq!((rewritten.len(), rewritten.lines().count()), (wrapper.len(), wrapper.lines().count()));
        let code: Vec<&str> = rewritten.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
        assert_eq!(code[2..], ["namespace std {", "using ::free;", "using ::malloc;", "} // namespace std"]);
        assert_eq!(std_allocation_as_using("namespace std {\n}\n"), None);
    }

    #[test]
    fn the_device_side_gets_the_host_compilers_preprocessor_options_only() {
        let host_args = ["-fPIC", "-DA=1", "-D", "B", "-Wall", "-Iinc", "-isystem", "sys", "-O2", "-UC", "-include", "pre.h", "-march=native"];
        let cxx = CudaCxxOptions { host_args: host_args.iter().map(|s| s.to_string()).collect(), ..Default::default() };
        assert_eq!(cxx.preprocessor_args(), ["-DA=1", "-D", "B", "-Iinc", "-isystem", "sys", "-UC", "-include", "pre.h"]);
        let openmp = |args: &[&str]| CudaCxxOptions { host_args: args.iter().map(|s| s.to_string()).collect(), ..Default::default() }.preprocessor_args();
        assert_eq!(openmp(&["-fopenmp"]), ["-D_OPENMP=201511"]);
        assert_eq!(openmp(&["-fopenmp=libomp"]), ["-D_OPENMP=201511"]);
        assert_eq!(openmp(&["-fopenmp-simd"]), Vec::<String>::new());
    }

    #[test]
    fn system_header_warnings_are_the_last_word_of_a_sides_options() {
        let cxx = |host: &[&str], warning: &[&str]| CudaCxxOptions {
            host_args: host.iter().map(|s| s.to_string()).collect(),
            warning_args: warning.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        assert!(!cxx(&["-Wall"], &[]).system_header_warnings(true));
        assert!(cxx(&["-Wall", "-Wsystem-headers"], &[]).system_header_warnings(true));
        assert!(!cxx(&["-Wsystem-headers"], &[]).system_header_warnings(false), "the host compiler's options are the host side's");
        assert!(!cxx(&["-Wsystem-headers", "-Wno-system-headers"], &[]).system_header_warnings(true));
        assert!(cxx(&[], &["-Wsystem-headers"]).system_header_warnings(false));
        assert!(!cxx(&["-Wno-system-headers"], &["-Wsystem-headers"]).system_header_warnings(true), "the host compiler's come last");
    }

    #[test]
    fn header_names_are_every_path_like_name_in_angles_or_quotes() {
        let text = "#include <bits/c++config.h>\n#  include_next \"crt/host_config.h\"\n#if _CCCL_HAS_INCLUDE(<nv/target>)\n\
                    template <class T> struct S;\nconst char *s = \"%d\\n\", *d = \".\", *a = \"/usr/include/x.h\", *f = \".libs/\";\n\
                    #include \"../up.h\" // <unclosed\n";
        let mut names = std::collections::BTreeSet::new();
        header_names(text, &mut names);
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["../up.h", "bits/c++config.h", "crt/host_config.h", "nv/target"]);
    }

    #[test]
    fn a_folder_shadows_where_it_holds_a_file_of_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("inc");
        std::fs::create_dir_all(inc.join("nv")).unwrap();
        std::fs::write(dir.path().join("up.h"), "").unwrap();
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let dirs = [dir.path().join("missing"), inc.clone()];
        // A folder of the name's first part, without the file, shadows nothing.
        assert_eq!(shadowing_file(&names(&["nv/target", "cmath"]), &dirs), None);
        std::fs::write(inc.join("nv/target"), "").unwrap();
        assert_eq!(shadowing_file(&names(&["cmath", "nv/target"]), &dirs), Some(inc.join("nv/target")));
        // `..` leads out of the folder, and is looked at.
        assert_eq!(shadowing_file(&names(&["../up.h"]), &dirs), Some(inc.join("../up.h")));
        assert_eq!(shadowing_file(&names(&["nv/target"]), &[]), None);
    }

    #[test]
    fn the_additions_header_once_made_is_never_replaced_by_a_concurrent_caller() {
        // `-dc`'s two sides call this at once on a fresh cache: every caller gets the one file
        // (a failure sent a side to a folder of its own, and so to headers of their own keys),
        // and no caller replaces the file another has returned (its headers would be stale).
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        for round in 0..100 {
            let dir = root.path().join(round.to_string());
            let start = std::sync::Barrier::new(4);
            let seen: Vec<(PathBuf, u64)> = std::thread::scope(|scope| {
                let callers: Vec<_> = (0..4)
                    .map(|_| {
                        scope.spawn(|| {
                            start.wait();
                            let path = additions_header(&dir).unwrap();
                            let inode = std::fs::metadata(&path).unwrap().ino();
                            (path, inode)
                        })
                    })
                    .collect();
                callers.into_iter().map(|c| c.join().unwrap()).collect()
            });
            let path = dir.join(additions_file_name());
            let inode = std::fs::metadata(&path).unwrap().ino();
            assert!(seen.iter().all(|s| *s == (path.clone(), inode)), "round {round}: {seen:?}, finally {inode}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), ADDITIONS);
            let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, [std::ffi::OsString::from(additions_file_name())], "no temporary file left");
        }
        // A file of other bytes is replaced, and then kept.
        let dir = root.path().join("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(additions_file_name()), "#error damaged\n").unwrap();
        let path = additions_header(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), ADDITIONS);
        let inode = std::fs::metadata(&path).unwrap().ino();
        assert_eq!(std::fs::metadata(additions_header(&dir).unwrap()).unwrap().ino(), inode);
    }

    #[test]
    fn the_sdk_version_is_clangs_reading_of_cuda_h() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("include")).unwrap();
        for (defined, version) in [("12040", "12.4"), ("13050", "12.9"), ("11080", "11.8")] {
            std::fs::write(dir.path().join("include/cuda.h"), format!("#ifndef X\n#define CUDA_VERSION {defined}\n#endif\n")).unwrap();
            assert_eq!(sdk_version(dir.path()).as_deref(), Some(version));
        }
        std::fs::write(dir.path().join("include/cuda.h"), "").unwrap();
        assert_eq!(sdk_version(dir.path()), None);
    }

    #[test]
    fn a_cuda_folder_without_headers_is_e1003() {
        let dir = tempfile::tempdir().unwrap();
        let d = cuda_include_dirs(dir.path()).unwrap_err();
        assert_eq!(d.code, Code::CudaHeadersNotFound);
        assert!(d.message.contains("cuda_runtime.h") && d.notes[0].contains("nvidia-cuda-runtime"), "{d:?}");
        std::fs::create_dir_all(dir.path().join("include/cccl")).unwrap();
        std::fs::write(dir.path().join("include/cuda_runtime.h"), "").unwrap();
        let d = cuda_include_dirs(dir.path()).unwrap_err();
        assert!(d.message.contains("curand_mtgp32_kernel.h") && d.notes[0].contains("nvidia-curand"), "{d:?}");
        std::fs::write(dir.path().join("include/curand_mtgp32_kernel.h"), "").unwrap();
        assert_eq!(cuda_include_dirs(dir.path()).unwrap(), [dir.path().join("include/cccl")]);
    }

    #[test]
    fn an_explicit_clang_that_is_missing_is_e1002_and_nothing_else_is_tried() {
        let search = ClangSearch { clang: Some("/nonexistent/clang++".into()) };
        let env = ClangEnv::default();
        let d = find_engine(&search, &env).unwrap_err();
        assert_eq!(d.code, Code::ClangNotFound);
        assert!(d.notes.iter().any(|n| n.contains("/nonexistent/clang++")), "{d:?}");
        let env = ClangEnv { cdpc_clang: Some("/nonexistent/clang-from-env".into()), ..Default::default() };
        let d = find_engine(&ClangSearch::default(), &env).unwrap_err();
        assert!(d.notes.iter().any(|n| n.contains("CDPC_CLANG: `/nonexistent/clang-from-env`")), "{d:?}");
    }

    #[test]
    fn an_explicit_resource_folder_without_the_cuda_wrapper_is_e1002_and_says_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let env = ClangEnv { resource_dir: Some(dir.path().into()), ..Default::default() };
        let d = find_engine(&ClangSearch::default(), &env).unwrap_err();
        assert_eq!(d.code, Code::ClangNotFound);
        assert_eq!(d.notes.iter().filter(|n| n.starts_with("looked at")).count(), 1, "{d:?}");
        assert!(d.notes[0].contains("CDPC_CLANG_RESOURCE_DIR") && d.notes[0].contains("__clang_cuda_runtime_wrapper.h"), "{d:?}");
        assert!(d.notes.iter().any(|n| n.contains("libclang-common-22-dev")), "{d:?}");
        std::fs::create_dir_all(dir.path().join("include")).unwrap();
        std::fs::write(dir.path().join(in_process::CUDA_WRAPPER), "").unwrap();
        assert_eq!(find_engine(&ClangSearch::default(), &env).unwrap(), ClangEngine::InProcess { resource_dir: dir.path().canonicalize().unwrap() });
    }

    #[test]
    fn without_an_explicit_clang_the_linked_one_is_used_with_the_installed_resource_headers() {
        // libclang-common-22-dev (a dependency of the build's libclang-22-dev) is installed here.
        match find_engine(&ClangSearch::default(), &ClangEnv::default()).unwrap() {
            ClangEngine::InProcess { resource_dir } => assert!(resource_dir.join(in_process::CUDA_WRAPPER).is_file()),
            other => panic!("{other:?}"),
        }
    }
}
