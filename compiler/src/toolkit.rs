//! What the CUDA toolkit and the host compiler that cdpc finds say, as the command line asks:
//! the tools' CUDA release (`--version`, nvcc's identity macros), nvcc's `-v` lines, the
//! architectures of `-arch=all`, `all-major` and `native` and of `--list-gpu-arch`, and the
//! host compiler's answers (`-Xcompiler --version`, its `_FORTIFY_SOURCE`).

use super::command_line::{Cli, ErrorFormat};
use super::report::{fail, fail_with_code};
use cdpc::front::cdp::preprocess::{MacroOption, PreprocessOptions};
use cdpc::toolchain::ToolSearch;
use cdpc::SmVersion;
use std::process::ExitCode;

/// The CUDA release of the tools cdpc found (ptxas's `Cuda compilation tools, release 13.5,
/// V13.5.37`): `(13, 5, 37)`.
pub(crate) fn cuda_release(tools: &cdpc::toolchain::Toolchain) -> Option<(u32, u32, u32)> {
    let text = cdpc::toolchain::version_output(&tools.ptxas)?;
    let line = text.lines().find(|l| l.starts_with("Cuda compilation tools"))?;
    let v = line.rsplit_once(", V")?.1.trim();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// `--version`: cdpc's, then what CMake reads of nvcc's (`nvcc: NVIDIA (R) Cuda compiler
/// driver` and the release of the CUDA tools cdpc uses): cdpc presents itself to CMake's CUDA
/// language as nvcc-compatible (docs/CMAKE.md).
pub(crate) fn version_text() -> String {
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

/// nvcc's `-v` lines, for a program's build and for an input that is no file (CMake's
/// `cdpc -v __cmake_determine_cuda`): what CMake reads of them, docs/CMAKE.md; for each
/// architecture of the build, `-gencode`'s, else `--arch`'s.
pub(crate) fn verbose_header(cli: &Cli) -> String {
    let mut archs: Vec<SmVersion> = cli.gencode.concat().iter().map(|i| i.sm()).collect();
    archs.dedup();
    if archs.is_empty() {
        archs.push(cli.arch);
    }
    nvcc_verbose_header(&archs)
}

/// What `-v` prints first, as nvcc's `#$ NAME=value` lines, which CMake's CUDA language reads
/// (docs/CMAKE.md): the toolkit's folders, the include and library folders a host compiler
/// gets, and each architecture of the build (`archs`) as `-arch compute_XX`.
pub(crate) fn nvcc_verbose_header(archs: &[SmVersion]) -> String {
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

/// The options that make a compiler describe itself and compile nothing.
pub(crate) const HOST_QUERIES: &[&str] = &["--version", "-dumpversion", "-dumpfullversion", "-dumpmachine"];

/// `cdpc FILE -Xcompiler --version` (or `-dumpversion`, `-dumpfullversion`, `-dumpmachine`):
/// nvcc hands a host file and `-Xcompiler`'s options to its host compiler, which then prints
/// what it is and compiles nothing, so build systems ask nvcc for its host compiler so (ggml's
/// CMake reads `nvcc .c -Xcompiler --version` and `-Xcompiler "-dumpfullversion -dumpversion"`,
/// the file need not exist). cdpc runs its host compiler ([`cdpc::toolchain::HostCompiler`],
/// `-ccbin`) with those options alone, its output as it is; `None` when none is asked.
pub(crate) fn host_compiler_query(cli: &Cli, format: ErrorFormat) -> Option<ExitCode> {
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

/// The `_FORTIFY_SOURCE` level nvcc's host compiler would define by itself for a `.cu` file's
/// host side (`toolchain::host_compiler_fortify`): at the host optimisation level nvcc passes it,
/// the last of an explicit `-O<n>` and `-Xcompiler -O<n>` (none: no `-O`, so none), and only
/// where the command line neither defines nor undefines `_FORTIFY_SOURCE` itself (`-D`, `-U`,
/// or an `-Xcompiler` option naming it; Ubuntu's GCC defines it under
/// the same condition).
pub(crate) fn host_fortify(cli: &Cli, matches: &clap::ArgMatches, preprocess: &PreprocessOptions) -> Option<u32> {
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
pub(crate) fn architecture_set(cli: &Cli, set: &str) -> Result<Result<Vec<cdpc::driver::fatbin::Image>, String>, String> {
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
pub(crate) fn list_gpus(cli: &Cli, format: ErrorFormat) -> ExitCode {
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
