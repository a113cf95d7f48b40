//! The CUDA C++ front end: Clang 22's CUDA device compilation, from `.cu` source to LLVM
//! bitcode, which the launch pipeline ([`crate::pipeline`]) and the back end take from there.
//!
//! cdpc's own front end reads the `.cdp` kernel language (C with CUDA's qualifiers and
//! `<<<>>>`). Everything C++ (classes, templates, lambdas, CCCL's Thrust, CUB and libcu++) is
//! Clang's business: Clang runs as a bounded process ([`crate::toolchain::Toolchain::run_clang`])
//! with
//!
//! ```text
//! clang++-22 -x cuda --cuda-device-only --cuda-gpu-arch=sm_XX -fgpu-rdc --cuda-path=CUDA
//!            -I CUDA/include/cccl -O3 -emit-llvm -c FILE.cu -o WORK/FILE.bc
//! ```
//!
//! and its messages come back as cdpc diagnostics ([`diagnostics`]): `E1000` for its errors,
//! `W1001` for its warnings, with file, line and column. A host object (`-dc`) runs it once
//! more for the host side ([`ClangInvocation::host_fatbin`]): `--cuda-host-only
//! --no-offload-new-driver -fgpu-rdc -Xclang -fcuda-include-gpubinary -Xclang DEVICE.fatbin`,
//! the nvcc-style registration of the device code's relocatable fat binary.
//!
//! # Finding Clang
//!
//! In this order; the first that exists wins:
//!
//! 1. [`ClangSearch::clang`] (`--clang PATH`);
//! 2. the `CDPC_CLANG` environment variable (ignored when empty);
//! 3. `clang++-22` on `PATH` (Debian's and Ubuntu's package `clang-22`);
//! 4. `clang++` in `LLVM_SYS_221_PREFIX/bin` (the LLVM cdpc is built against);
//! 5. `clang++` on `PATH`, if `clang++ --version` says version 22.
//!
//! None found is `E1002`, naming each place looked at and how to install Clang.
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

pub mod diagnostics;

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
    /// `LLVM_SYS_221_PREFIX`.
    pub llvm_prefix: Option<OsString>,
    /// `PATH`.
    pub path: Option<OsString>,
}

impl ClangEnv {
    /// Reads the variables of this process.
    pub fn from_process() -> ClangEnv {
        ClangEnv {
            cdpc_clang: std::env::var_os("CDPC_CLANG"),
            llvm_prefix: std::env::var_os("LLVM_SYS_221_PREFIX"),
            path: std::env::var_os("PATH"),
        }
    }
}

/// How to install Clang, shown with `E1002`.
pub const INSTALL_HELP: &str = "install Clang 22 (the LLVM cdpc is built on): `apt-get install clang-22` on Debian 12 or \
Ubuntu 24.04, or run `cargo xtask setup` in the cdpc checkout; or name a Clang 22 with `--clang PATH` or `CDPC_CLANG`";

/// Finds Clang in the documented order, or says where it looked (`E1002`).
pub fn find_clang(search: &ClangSearch, env: &ClangEnv) -> Result<PathBuf, Diagnostic> {
    let mut searched = Vec::new();
    if let Some(clang) = &search.clang {
        if is_file(clang) {
            return Ok(clang.clone());
        }
        return Err(not_found(vec![format!("--clang: `{}` does not exist", clang.display())]));
    }
    if let Some(clang) = env.cdpc_clang.as_ref().filter(|c| !c.is_empty()) {
        let clang = PathBuf::from(clang);
        if is_file(&clang) {
            return Ok(clang);
        }
        return Err(not_found(vec![format!("CDPC_CLANG: `{}` does not exist", clang.display())]));
    }
    let on_path = |name: &str| -> Option<PathBuf> {
        std::env::split_paths(env.path.as_ref()?).map(|dir| dir.join(name)).find(|p| is_file(p))
    };
    let versioned = format!("clang++-{CLANG_MAJOR}");
    match on_path(&versioned) {
        Some(p) => return Ok(p),
        None => searched.push(format!("PATH: no `{versioned}`")),
    }
    match env.llvm_prefix.as_ref().filter(|p| !p.is_empty()) {
        Some(prefix) => {
            let clang = Path::new(prefix).join("bin").join("clang++");
            if is_file(&clang) {
                return Ok(clang);
            }
            searched.push(format!("LLVM_SYS_221_PREFIX: no `{}`", clang.display()));
        }
        None => searched.push("LLVM_SYS_221_PREFIX: not set".into()),
    }
    match on_path("clang++") {
        Some(p) => match clang_major(&p) {
            Some(CLANG_MAJOR) => return Ok(p),
            Some(other) => searched.push(format!("PATH: `{}` is Clang {other}, not {CLANG_MAJOR}", p.display())),
            None => searched.push(format!("PATH: `{}` did not say its version", p.display())),
        },
        None => searched.push("PATH: no `clang++`".into()),
    }
    Err(not_found(searched))
}

fn not_found(searched: Vec<String>) -> Diagnostic {
    let mut d = Diagnostic::new(Code::ClangNotFound, Span::new(0, 0), format!("CUDA C++ is compiled by Clang {CLANG_MAJOR}, which was not found"))
        .with_primary_message("this file is CUDA C++ (`.cu`)");
    for s in searched {
        d = d.with_note(format!("looked at {s}"));
    }
    d.with_note(INSTALL_HELP)
        .with_note("a file in the kernel language (C with CUDA's qualifiers and `<<<>>>`) compiles without Clang: name it `.cdp`, or pass `-x cdp`")
}

fn is_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// `clang++ --version`'s major version (only for an unversioned `clang++`).
fn clang_major(clang: &Path) -> Option<u32> {
    let text = crate::toolchain::version_output(clang)?;
    let rest = &text[text.find("clang version ")? + "clang version ".len()..];
    rest.split('.').next()?.trim().parse().ok()
}

/// The CUDA headers Clang needs from a CUDA folder, or `E1003` saying what is missing.
pub fn cuda_include_dirs(cuda_root: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let include = cuda_root.join("include");
    let missing = |file: &str, install: &str| {
        Diagnostic::new(
            Code::CudaHeadersNotFound,
            Span::new(0, 0),
            format!("CUDA's headers are incomplete: no `{file}` in `{}`", include.display()),
        )
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
    /// Compile the host side instead (`--cuda-host-only`, with Clang's nvcc-style
    /// registration: `--no-offload-new-driver`), embedding this relocatable fat binary
    /// (`-fcuda-include-gpubinary`): the file's host code, its kernels' stubs and their
    /// registration, for an object like `nvcc -dc`'s.
    pub host_fatbin: Option<&'a Path>,
}

impl ClangInvocation<'_> {
    /// The arguments after the program name.
    pub fn args(&self) -> Vec<OsString> {
        let mut a = self.options();
        if let Some(fatbin) = self.host_fatbin {
            for s in ["-Xclang", "-fcuda-include-gpubinary", "-Xclang"] {
                a.push(s.into());
            }
            a.push(fatbin.as_os_str().to_owned());
        }
        if let Some(pch) = self.pch {
            a.push("-include-pch".into());
            a.push(pch.as_os_str().to_owned());
        }
        a.push("-o".into());
        a.push(self.output.as_os_str().to_owned());
        a.push(self.source.as_os_str().to_owned());
        a
    }

    /// The arguments that write a precompiled header of Clang's CUDA wrapper (what every
    /// file's compilation parses first, most of a small file's time) to `output`, from an
    /// empty `empty` source, with every option of this compilation.
    pub fn pch_args(&self, empty: &Path, output: &Path) -> Vec<OsString> {
        let mut a = self.options();
        for s in ["-Xclang", "-emit-pch", "-o"] {
            a.push(s.into());
        }
        a.push(output.as_os_str().to_owned());
        a.push(empty.as_os_str().to_owned());
        a
    }

    /// Everything but the input, the output and the precompiled header.
    fn options(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |s: String| a.push(s.into());
        let side: &[&str] = if self.host_fatbin.is_some() { &["--cuda-host-only", "--no-offload-new-driver"] } else { &["--cuda-device-only"] };
        for s in ["-x", "cuda"].iter().chain(side).chain(&["-fgpu-rdc", "-emit-llvm", "-c"]) {
            push(s.to_string());
        }
        push(format!("--cuda-gpu-arch={}", self.target.sm));
        push(format!("--cuda-path={}", self.cuda_root.display()));
        // cdpc accepts the newest CUDA; Clang 22 knows CUDA up to 12.9 and says so.
        push("-Wno-unknown-cuda-version".into());
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
        // nvcc's `--default-stream per-thread` defines this macro, with which CUDA's device
        // runtime header calls the `_ptsz` launch entry points (Clang's
        // `-fgpu-default-stream=per-thread` is about host code: unused in a device compilation).
        if self.target.default_stream == crate::target::DefaultStream::PerThread {
            push("-DCUDA_API_PER_THREAD_DEFAULT_STREAM=1".into());
        }
        if let Some(cuid) = self.cuid {
            push(format!("-cuid={cuid}"));
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
        a
    }
}

/// Where the precompiled header for `invocation` is kept, when precompiled headers are in use:
/// `CDPC_CACHE_DIR` (empty: none), else `$XDG_CACHE_HOME/cdpc`, else `$HOME/.cache/cdpc`, in
/// `pch/<key>.pch`. The key hashes Clang (its path, size and time), CUDA's `cuda.h` (size and
/// time) and every option of the compilation, so that a header is used only by compilations
/// it was made for; Clang also checks the options it records and refuses a header that does
/// not fit, which makes the compilation run without one.
pub fn pch_path(clang: &Path, invocation: &ClangInvocation<'_>) -> Option<PathBuf> {
    use std::hash::{Hash, Hasher};
    let dir = match std::env::var_os("CDPC_CACHE_DIR") {
        Some(d) if d.is_empty() => return None,
        Some(d) => PathBuf::from(d),
        None => match (std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()), std::env::var_os("HOME").filter(|d| !d.is_empty())) {
            (Some(xdg), _) => PathBuf::from(xdg).join("cdpc"),
            (None, Some(home)) => PathBuf::from(home).join(".cache/cdpc"),
            (None, None) => return None,
        },
    };
    let stamp = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().ok()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (clang, stamp(clang), stamp(&invocation.cuda_root.join("include/cuda.h")), invocation.options(), env!("CARGO_PKG_VERSION")).hash(&mut hasher);
    Some(dir.join("pch").join(format!("{:016x}.pch", hasher.finish())))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let env = ClangEnv { path: std::env::var_os("PATH"), ..Default::default() };
        let d = find_clang(&search, &env).unwrap_err();
        assert_eq!(d.code, Code::ClangNotFound);
        assert!(d.notes.iter().any(|n| n.contains("/nonexistent/clang++")), "{d:?}");
        let nowhere = ClangEnv { path: Some("/nonexistent".into()), ..Default::default() };
        let d = find_clang(&ClangSearch::default(), &nowhere).unwrap_err();
        assert!(d.notes.iter().any(|n| n.contains("clang++-22")), "{d:?}");
    }
}
