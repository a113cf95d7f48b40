//! The tools of a program's build besides ptxas: the device link that registers its modules
//! (nvlink's `--register-link-binaries`), the linked fat binary (`fatbinary -link`), and the
//! host compiler that compiles `.cpp`/`.c` files and links the program.
//!
//! nvcc 13.5's own steps, measured with `nvcc -rdc=true a.cu -o a -dryrun`:
//!
//! ```text
//! nvlink -m64 --arch=sm_90 --register-link-binaries=a_dlink.reg.c -L<lib> -cpu-arch=X86_64 a.o -lcudadevrt -o a_dlink.sm_90.cubin
//! fatbinary -64 -link --image3=kind=elf,sm=90,file=a_dlink.sm_90.cubin --embedded-fatbin=a_dlink.fatbin.c
//! gcc -c -x c++ -DFATBINFILE=... -DREGISTERLINKBINARYFILE=... crt/link.stub -o a_dlink.o
//! g++ -m64 -Wl,--start-group a_dlink.o a.o -L<lib> -lcudadevrt -lcudart_static -lrt -lpthread -ldl -Wl,--end-group -o a
//! ```
//!
//! cdpc runs the same nvlink and fatbinary; the registration object nvcc compiles from
//! `crt/link.stub` cdpc writes with LLVM ([`crate::back::link_stub`]), so no C compiler is
//! needed for it; the last line is the host compiler's, found by [`HostCompiler::find`].

use super::discover::Toolchain;
use super::error::ToolError;
use super::run::{read, run_tool, work_dir, BuildOptions};
use crate::target::SmVersion;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a device link of host objects gives: the linked cubin and the module ids nvlink found
/// in the objects it linked, each of whose `__cudaRegisterLinkedBinary_<id>` the registration
/// object defines.
#[derive(Clone, Debug)]
pub struct DeviceLinked {
    /// The linked cubin.
    pub cubin: Vec<u8>,
    /// The module ids, in nvlink's order (libcudadevrt's among them).
    pub module_ids: Vec<String>,
}

/// Reads the file nvlink's `--register-link-binaries` writes: `#define NUM_PRELINKED_OBJECTS n`
/// and one `DEFINE_REGISTER_FUNC(<id>)` line per module. `None` when a line is of another shape
/// or the count disagrees, so that a format nvlink changed is an error, not a wrong program.
pub fn parse_register_list(text: &str) -> Option<Vec<String>> {
    let mut count = None;
    let mut ids = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(n) = line.strip_prefix("#define NUM_PRELINKED_OBJECTS") {
            count = Some(n.trim().parse::<usize>().ok()?);
        } else if let Some(id) = line.strip_prefix("DEFINE_REGISTER_FUNC(").and_then(|r| r.strip_suffix(')')) {
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            ids.push(id.to_string());
        } else {
            return None;
        }
    }
    (count? == ids.len()).then_some(ids)
}

impl Toolchain {
    /// PTX of a whole program to a cubin by ptxas alone, without `-c` (nvcc's build without
    /// `-rdc`): ptxas sees every function, and no nvlink runs. For PTX that declares nothing
    /// `.extern` (no device-runtime call, no other file's symbol).
    pub fn assemble_whole(&self, ptx: &str, opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        let work = work_dir(opts)?;
        let input = work.path().join("module.ptx");
        let output = work.path().join("module.cubin");
        std::fs::write(&input, ptx).map_err(|e| ToolError::io("writing the PTX for ptxas", &input, e))?;
        let mut args: Vec<OsString> = vec![format!("-arch={}", opts.arch).into()];
        if let Some(level) = opts.opt_level {
            args.push(format!("-O{level}").into());
        }
        args.extend(opts.ptxas_args.iter().cloned());
        args.extend(["-o".into(), output.clone().into(), input.into()]);
        run_tool("ptxas", &self.ptxas, &args, opts)?;
        read(&output, "reading the cubin ptxas wrote")
    }

    /// The folder of the CUDA runtime's libraries: libcudadevrt's, where the wheels and a
    /// toolkit keep `libcudart_static.a` too.
    pub fn cuda_lib_dir(&self) -> &Path {
        &self.cudadevrt_dir
    }

    /// The toolkit's or wheels' `include` folder beside the tools' `bin`, where `cuda_runtime.h`
    /// is, for host files (`-I`, as nvcc gives it to its host compiler).
    pub fn cuda_include_dir(&self) -> Option<PathBuf> {
        let include = self.ptxas.parent()?.parent()?.join("include");
        include.join("cuda_runtime.h").is_file().then_some(include)
    }

    /// Links the device code of host objects and archives (`nvcc -dc`'s or cdpc's) for `arch`
    /// with libcudadevrt, as `nvcc -dlink` does: the cubin and the modules to register.
    pub fn device_link(&self, objects: &[PathBuf], arch: SmVersion, opts: &BuildOptions) -> Result<DeviceLinked, ToolError> {
        let work = work_dir(opts)?;
        let cubin = work.path().join("dlink.cubin");
        let list = work.path().join("dlink.reg.c");
        let mut args: Vec<OsString> = vec!["-m64".into(), format!("--arch={arch}").into()];
        let mut register = OsString::from("--register-link-binaries=");
        register.push(&list);
        args.push(register);
        let mut lib_dir = OsString::from("-L");
        lib_dir.push(&self.cudadevrt_dir);
        args.push(lib_dir);
        args.push("-cpu-arch=X86_64".into());
        args.extend(objects.iter().map(OsString::from));
        args.extend(opts.link_libraries.iter().map(OsString::from));
        args.push("-lcudadevrt".into());
        args.extend(opts.nvlink_args.iter().cloned());
        args.push("-o".into());
        args.push(cubin.clone().into());
        run_tool("nvlink", &self.nvlink, &args, opts)?;
        let text = String::from_utf8_lossy(&read(&list, "reading the list of modules nvlink wrote")?).into_owned();
        let module_ids = parse_register_list(&text).ok_or_else(|| ToolError::Failed {
            tool: "nvlink".into(),
            command: super::error::command_line(self.nvlink.as_os_str(), &args),
            status: super::error::ExitKind::Code(0),
            stderr: format!("its list of modules to register is not what cdpc reads:\n{text}"),
            stdout: String::new(),
        })?;
        Ok(DeviceLinked { cubin: read(&cubin, "reading the cubin nvlink wrote")?, module_ids })
    }
}

/// The host compiler: what compiles a program's `.cpp` and `.c` files and links the program,
/// as nvcc's `gcc`/`g++`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCompiler {
    /// The compiler driver (`/usr/bin/c++`).
    pub program: PathBuf,
}

/// `name` itself when it is a path (`/usr/bin/ar`, `bin/ar`), else the first file of that name
/// in the folders of `path` (`PATH`'s value).
fn program_named(name: &Path, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return name.is_file().then(|| name.to_path_buf());
    }
    std::env::split_paths(path?).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// The names looked for, in order, in a `-ccbin` folder and on `PATH`.
pub const HOST_COMPILERS: &[&str] = &["c++", "g++", "clang++"];

impl HostCompiler {
    /// Finds the host compiler, in this order:
    /// 1. `ccbin` (nvcc's `-ccbin`): a compiler, or a folder holding one of [`HOST_COMPILERS`];
    /// 2. `CDPC_HOST_CXX`, a compiler's path or name;
    /// 3. the first of [`HOST_COMPILERS`] on `PATH`.
    pub fn find(ccbin: Option<&Path>) -> Result<HostCompiler, ToolError> {
        Self::find_in(ccbin, std::env::var_os("CDPC_HOST_CXX").map(PathBuf::from), std::env::var_os("PATH"))
    }

    /// [`HostCompiler::find`] with the environment given.
    pub fn find_in(ccbin: Option<&Path>, env: Option<PathBuf>, path: Option<OsString>) -> Result<HostCompiler, ToolError> {
        let mut searched = Vec::new();
        let on_path = |name: &Path| program_named(name, path.as_deref());
        if let Some(ccbin) = ccbin {
            if ccbin.is_dir() {
                if let Some(found) = HOST_COMPILERS.iter().map(|n| ccbin.join(n)).find(|p| p.is_file()) {
                    return Ok(HostCompiler { program: found });
                }
                searched.push(format!("-ccbin `{}`: a folder without {}", ccbin.display(), HOST_COMPILERS.join(", ")));
            } else if let Some(found) = on_path(ccbin) {
                // nvcc's `-ccbin gcc` names the C compiler; a program's link needs C++'s.
                let name = found.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                let cxx = match name {
                    "gcc" => Some("g++"),
                    "clang" => Some("clang++"),
                    "cc" => Some("c++"),
                    _ => None,
                }
                .map(|n| found.with_file_name(n))
                .filter(|p| p.is_file());
                return Ok(HostCompiler { program: cxx.unwrap_or(found) });
            } else {
                searched.push(format!("-ccbin `{}`: no such compiler", ccbin.display()));
            }
            return Err(ToolError::HostCompilerNotFound { searched });
        }
        if let Some(env) = env {
            if let Some(found) = on_path(&env) {
                return Ok(HostCompiler { program: found });
            }
            searched.push(format!("CDPC_HOST_CXX `{}`: no such compiler", env.display()));
            return Err(ToolError::HostCompilerNotFound { searched });
        }
        for name in HOST_COMPILERS {
            if let Some(found) = on_path(Path::new(name)) {
                return Ok(HostCompiler { program: found });
            }
        }
        searched.push(format!("PATH: no {}", HOST_COMPILERS.join(", no ")));
        Err(ToolError::HostCompilerNotFound { searched })
    }

    /// Runs the host compiler with `args`, recorded in `opts`'s log as `tool`.
    pub fn run(&self, tool: &str, args: &[OsString], opts: &BuildOptions) -> Result<(), ToolError> {
        run_tool(tool, &self.program, args, opts)
    }
}

/// The archiver of a static library (`--lib`, nvcc's `-lib`), as nvcc's `ar`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archiver {
    /// The archiver (`/usr/bin/ar`).
    pub program: PathBuf,
}

impl Archiver {
    /// Finds the archiver, in this order:
    /// 1. `arbin` (nvcc's `-arbin`, cdpc's `--archiver`): a path, or a name on `PATH`;
    /// 2. `CDPC_AR`, the same;
    /// 3. `ar` on `PATH`.
    pub fn find(arbin: Option<&Path>) -> Result<Archiver, ToolError> {
        Self::find_in(arbin, std::env::var_os("CDPC_AR").map(PathBuf::from), std::env::var_os("PATH"))
    }

    /// [`Archiver::find`] with the environment given.
    pub fn find_in(arbin: Option<&Path>, env: Option<PathBuf>, path: Option<OsString>) -> Result<Archiver, ToolError> {
        let (given, source) = match (arbin, env.as_deref()) {
            (Some(arbin), _) => (arbin, "--archiver (nvcc's -arbin)"),
            (None, Some(env)) => (env, "CDPC_AR"),
            (None, None) => (Path::new("ar"), "PATH"),
        };
        match program_named(given, path.as_deref()) {
            Some(program) => Ok(Archiver { program }),
            None => Err(ToolError::ArchiverNotFound { searched: vec![format!("{source}: no `{}`", given.display())] }),
        }
    }

    /// Runs the archiver with `args`, recorded in `opts`'s log.
    pub fn run(&self, args: &[OsString], opts: &BuildOptions) -> Result<(), ToolError> {
        run_tool("archiver", &self.program, args, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_list_as_nvlink_writes_it() {
        let text = "#define NUM_PRELINKED_OBJECTS 2\nDEFINE_REGISTER_FUNC(_37cfc621_4_a_cu_fbe442de)\nDEFINE_REGISTER_FUNC(_0afad4c0_22_cuda_device_runtime_cu_f78b5b52_735892)\n";
        assert_eq!(parse_register_list(text).unwrap(), ["_37cfc621_4_a_cu_fbe442de", "_0afad4c0_22_cuda_device_runtime_cu_f78b5b52_735892"]);
    }

    #[test]
    fn register_list_of_another_shape_is_refused() {
        assert_eq!(parse_register_list("#define NUM_PRELINKED_OBJECTS 2\nDEFINE_REGISTER_FUNC(_a)\n"), None);
        assert_eq!(parse_register_list("#define NUM_PRELINKED_OBJECTS 1\nREGISTER(_a)\n"), None);
        assert_eq!(parse_register_list("#define NUM_PRELINKED_OBJECTS 1\nDEFINE_REGISTER_FUNC(a b)\n"), None);
        assert_eq!(parse_register_list(""), None);
    }

    #[test]
    fn host_compiler_order() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, "").unwrap();
            p
        };
        let gpp = make("g++");
        let path = Some(dir.path().as_os_str().to_owned());
        assert_eq!(HostCompiler::find_in(None, None, path.clone()).unwrap().program, gpp);
        let cxx = make("c++");
        assert_eq!(HostCompiler::find_in(None, None, path.clone()).unwrap().program, cxx);
        // -ccbin gcc means its C++ driver; CDPC_HOST_CXX comes after -ccbin.
        let gcc = make("gcc");
        assert_eq!(HostCompiler::find_in(Some(&gcc), Some(cxx.clone()), path.clone()).unwrap().program, gpp);
        assert_eq!(HostCompiler::find_in(Some(dir.path()), None, None).unwrap().program, cxx);
        assert_eq!(HostCompiler::find_in(None, Some(gpp.clone()), None).unwrap().program, gpp);
        assert!(HostCompiler::find_in(Some(&dir.path().join("none")), None, path).is_err());
        assert!(HostCompiler::find_in(None, None, None).is_err());
    }
}
