//! CMake's CUDA language with cdpc as `CMAKE_CUDA_COMPILER` (docs/CMAKE.md, "What CMake asks of
//! the compiler"): `tests/cmake_project/` configured and built out of tree, CMake taking cdpc
//! for NVIDIA's nvcc. The project has a static library of two `-rdc` files whose parent kernel
//! launches the other file's child kernel on the device, a C++ program linking it and
//! libcudadevrt (CMake's device link), a whole-program `.cu` executable, and (`X_SHARED`) the
//! library as a shared library.
//!
//! nvcc must not run: the first folder on `PATH` holds a poisoned `nvcc` that logs its call and
//! exits 99, and `CUDA_HOME` is a copy of the CUDA folder made of links whose `bin/nvcc` is the
//! same poison (CMake's toolkit root is what cdpc names, and CMake finds `nvcc` under it).
//! Runs the `cmake` on `PATH` (Debian's 3.25) and, when `CDPC_TEST_CMAKE` names one, that one too
//! (`pip install cmake` for the newest). Without the NVIDIA tools, `cmake` or `c++` a case skips
//! with a printed reason; the programs run only where a GPU is.
//!
//! With docs/CCACHE.md's launcher (`CMAKE_CUDA_COMPILER_LAUNCHER` running ccache in depend mode
//! with `compiler_type = nvcc`) and a cache of the test's own, a build, `--target clean` and a
//! second build: the second build's CUDA compilations are all cache hits and its objects
//! byte-identical to the first's (skipped, with the reason printed, without ccache).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::build_common::{ccache_stats, have, objects, tool_dir};

/// The CMake project, built where it lies in the source tree (out of tree, in a temporary folder).
fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cmake_project")
}

/// What each step printed, for a failure's message.
fn printed(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The folder of the test: the poisoned `nvcc` first on `PATH`, the CUDA folder whose `nvcc` is
/// poisoned, and the log each poisoned `nvcc` appends its call to.
struct Poisoned {
    dir: tempfile::TempDir,
}

impl Poisoned {
    /// `cuda` is the CUDA folder cdpc would use (the one holding `bin/ptxas`).
    fn new(cuda: &Path) -> Poisoned {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let poison = dir.path().join("poison");
        std::fs::create_dir(&poison).unwrap();
        let log = dir.path().join("nvcc-ran.log");
        let script = format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\necho \"poisoned nvcc: nvcc must not run in a build with cdpc ($0 $*)\" >&2\nexit 99\n", log.display());
        write_executable(&poison.join("nvcc"), &script);
        // CUDA_HOME: every entry of the CUDA folder linked, bin/ entry by entry with nvcc poisoned.
        let home = dir.path().join("cuda");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        for entry in std::fs::read_dir(cuda).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name() != "bin" {
                std::os::unix::fs::symlink(entry.path(), home.join(entry.file_name())).unwrap();
            }
        }
        for entry in std::fs::read_dir(cuda.join("bin")).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name() != "nvcc" {
                std::os::unix::fs::symlink(entry.path(), home.join("bin").join(entry.file_name())).unwrap();
            }
        }
        write_executable(&home.join("bin/nvcc"), &script);
        Poisoned { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("cuda")
    }

    /// `PATH`: the poisoned `nvcc`'s folder, then `first` (the folder of the `cmake` under test,
    /// where pip puts `ninja` too), then the test's own `PATH`.
    fn path(&self, first: Option<&Path>) -> OsString {
        let mut dirs = vec![self.dir.path().join("poison")];
        dirs.extend(first.map(Path::to_path_buf));
        dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        std::env::join_paths(dirs).expect("a PATH")
    }

    /// The calls of a poisoned `nvcc`, one a line (none: empty).
    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("nvcc-ran.log")).unwrap_or_default()
    }
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `cmake` with the poisoned environment: nothing from the caller's environment that would
/// choose another CUDA compiler, toolkit, architecture, launcher or generator.
fn cmake(cmake: &Path, poisoned: &Poisoned, dir: &Path, args: &[&str]) -> Output {
    let mut command = cmake_command(cmake, poisoned, dir, args);
    command.output().unwrap_or_else(|e| panic!("{} runs: {e}", cmake.display()))
}

/// The command [`cmake`] runs, for a caller that adds to its environment.
fn cmake_command(cmake: &Path, poisoned: &Poisoned, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(cmake);
    command
        .current_dir(dir)
        .env("PATH", poisoned.path(cmake.parent().filter(|p| !p.as_os_str().is_empty())))
        .env("CUDA_HOME", poisoned.home())
        .env_remove("CUDACXX")
        .env_remove("CUDAHOSTCXX")
        .env_remove("CUDAARCHS")
        .env_remove("CUDA_PATH")
        .env_remove("CUDAToolkit_ROOT")
        .env_remove("CMAKE_CUDA_COMPILER_LAUNCHER")
        .env_remove("CMAKE_GENERATOR")
        .env_remove("CMAKE_BUILD_TYPE")
        .args(args);
    command
}

/// Whether `path` is an x86-64 ELF file of type `wanted` (2 an executable, 3 a shared object or
/// a position-independent executable) and, for an executable, has a program interpreter or
/// type 2 (`file` says "pie executable" for the former).
fn elf(path: &Path, executable: bool) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || u16_at(18) != 62 {
        return Err(format!("{} is not an x86-64 ELF file", path.display()));
    }
    let kind = u16_at(16);
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54) as usize, u16_at(56) as usize);
    let interp = (0..phnum).any(|i| phoff + i * phentsize + 4 <= bytes.len() && u32_at(phoff + i * phentsize) == 3);
    match (executable, kind) {
        (true, 2) | (true, 3) if kind == 2 || interp => Ok(()),
        (false, 3) if !interp => Ok(()),
        _ => Err(format!("{}: ELF type {kind}, interpreter {interp}: not {}", path.display(), if executable { "an executable" } else { "a shared library" })),
    }
}

/// Whether a GPU with its driver is here to run the programs, with the reason when not.
fn gpu() -> bool {
    let found = Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !found {
        println!("skipped: running the programs: no GPU here (`nvidia-smi -L` lists none)");
    }
    found
}

/// Configures and builds the project with `cmake_program` and `generator`, cdpc as the CUDA
/// compiler; `architectures` is `CMAKE_CUDA_ARCHITECTURES` (`None`: CMake takes cdpc's default).
fn build(cmake_program: &Path, generator: &str, architectures: Option<&str>) {
    let Some(tools) = tool_dir() else { return };
    let cuda = tools.parent().expect("the CUDA folder above bin/").to_path_buf();
    let poisoned = Poisoned::new(&cuda);
    let dir = poisoned.dir.path();
    let cdpc = env!("CARGO_BIN_EXE_cdpc");
    let label = format!("{} -G {generator:?}", cmake_program.display());

    let source = project();
    let mut configure: Vec<String> = vec![
        "-S".into(),
        source.display().to_string(),
        "-B".into(),
        "build".into(),
        "-G".into(),
        generator.into(),
        format!("-DCMAKE_CUDA_COMPILER={cdpc}"),
        "-DX_SHARED=ON".into(),
        "-DX_DEVICE_OUTPUTS=ON".into(),
    ];
    configure.extend(architectures.map(|a| format!("-DCMAKE_CUDA_ARCHITECTURES={a}")));
    let configure: Vec<&str> = configure.iter().map(String::as_str).collect();
    let out = cmake(cmake_program, &poisoned, dir, &configure);
    assert!(out.status.success(), "{label}: configuring failed:\n{}\nnvcc ran: {}", printed(&out), poisoned.calls());
    assert!(printed(&out).contains("The CUDA compiler identification is NVIDIA"), "{label}: cdpc not taken for nvcc:\n{}", printed(&out));

    // What CMake learnt of the compiler: the toolkit is the CUDA folder cdpc uses.
    let build = dir.join("build");
    let compiler =
        std::fs::read_dir(build.join("CMakeFiles")).unwrap().map(|e| e.unwrap().path().join("CMakeCUDACompiler.cmake")).find(|p| p.is_file()).expect("CMakeFiles/<version>/CMakeCUDACompiler.cmake");
    let learnt = std::fs::read_to_string(&compiler).unwrap();
    for line in [format!("set(CMAKE_CUDA_COMPILER \"{cdpc}\")"), "set(CMAKE_CUDA_COMPILER_ID \"NVIDIA\")".into(), "set(CMAKE_CUDA_RUNTIME_LIBRARY_DEFAULT \"STATIC\")".into()] {
        assert!(learnt.contains(&line), "{label}: {} lacks {line}:\n{learnt}", compiler.display());
    }
    let cache = std::fs::read_to_string(build.join("CMakeCache.txt")).unwrap();
    let archs = cache.lines().find_map(|l| l.strip_prefix("CMAKE_CUDA_ARCHITECTURES:")).and_then(|l| l.split_once('=')).map(|(_, v)| v.to_string());
    let expected = architectures.map(str::to_string);
    match (&archs, &expected) {
        (Some(got), Some(want)) => assert_eq!(got, want, "{label}: CMAKE_CUDA_ARCHITECTURES"),
        (Some(got), None) => assert!(!got.is_empty() && got.chars().all(|c| c.is_ascii_digit()), "{label}: cdpc's default architecture for CMake: {got:?}"),
        (None, _) => panic!("{label}: no CMAKE_CUDA_ARCHITECTURES in the cache"),
    }

    let out = cmake(cmake_program, &poisoned, dir, &["--build", "build", "--verbose"]);
    assert!(out.status.success(), "{label}: building failed:\n{}\nnvcc ran: {}", printed(&out), poisoned.calls());

    for program in ["app", "whole", "app_shared"] {
        elf(&build.join(program), true).unwrap_or_else(|e| panic!("{label}: {e}"));
    }
    elf(&build.join("libdp_shared.so"), false).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(build.join("libdp.a").is_file(), "{label}: no libdp.a");
    // One file's device code: the PTX always, the cubin and the fat binary from CMake 3.27
    let device_output = |target: &str, extension: &str| build.join(format!("CMakeFiles/{target}.dir/child.{extension}"));
    let ptx = std::fs::read_to_string(device_output("child_ptx", "ptx")).unwrap_or_else(|e| panic!("{label}: child_ptx: {e}"));
    assert!(ptx.contains(".target sm_90") && ptx.contains(".entry"), "{label}: child_ptx's PTX");
    let version = |key: &str| cache.lines().find_map(|l| l.strip_prefix(key)).and_then(|l| l.split_once('=')).and_then(|(_, v)| v.parse::<u32>().ok()).unwrap_or(0);
    let cubin = device_output("child_cubin", "cubin");
    if (version("CMAKE_CACHE_MAJOR_VERSION:"), version("CMAKE_CACHE_MINOR_VERSION:")) >= (3, 27) {
        let bytes = std::fs::read(&cubin).unwrap();
        assert!(bytes.starts_with(b"\x7fELF") && bytes.get(18..20) == Some(&[190, 0][..]), "{label}: child_cubin is no CUDA ELF");
        let fatbin = std::fs::read(device_output("child_fatbin", "fatbin")).unwrap_or_else(|e| panic!("{label}: child_fatbin: {e}"));
        assert!(fatbin.starts_with(&[0x50, 0xed, 0x55, 0xba]), "{label}: child_fatbin is no fat binary");
    }
    assert_eq!(poisoned.calls(), "", "{label}: nvcc ran");

    if gpu() {
        for program in ["app", "whole", "app_shared"] {
            let out = Command::new(build.join(program)).current_dir(&build).output().unwrap();
            let text = printed(&out);
            assert!(out.status.success(), "{label}: {program} failed:\n{text}");
            let line = text.lines().find(|l| l.starts_with("checksum ")).unwrap_or_else(|| panic!("{label}: {program} printed no checksum:\n{text}"));
            let numbers: Vec<&str> = line.split(|c: char| !c.is_ascii_digit() && c != '-').filter(|w| !w.is_empty()).collect();
            assert_eq!(numbers.len(), 2, "{label}: {program}: {line}");
            assert_eq!(numbers[0], numbers[1], "{label}: {program}: {line}");
        }
    }
}

/// docs/CCACHE.md's launcher for CMake: ccache in depend mode, told that cdpc takes nvcc's
/// options (it then reads the `--options-file` of include folders CMake 3.25's Makefiles give
/// every compilation), scoped to the CUDA compilations.
const CCACHE_LAUNCHER: &str = "env;CCACHE_DEPEND=1;CCACHE_COMPILERTYPE=nvcc;ccache";

/// The CUDA compilations of the project with `X_SHARED`: `parent.cu` and `child.cu` for `dp`
/// and for `dp_shared`, and `whole.cu`.
const CUDA_COMPILATIONS: u64 = 5;

/// ccache's counters of what became of each call (`ccache --print-stats`, `name<TAB>value`
/// lines), the nonzero ones: the hits, `cache_miss` and the reasons a call was not cached, not
/// the storage's counters, the cache's size or the sub-counters of a miss.
fn ccache_outcomes(cache: &Path) -> std::collections::BTreeMap<String, u64> {
    let bookkeeping = |name: &str| {
        ["local_storage_", "remote_storage_", "stats_"].iter().any(|p| name.starts_with(p))
            || ["files_in_cache", "cache_size_kibibyte", "cleanups_performed", "direct_cache_miss", "preprocessed_cache_miss"].contains(&name)
    };
    ccache_stats(cache).into_iter().filter(|(name, value)| !bookkeeping(name) && *value != 0).collect()
}

/// Zeroes ccache's counters (`ccache -z`).
fn ccache_zero(cache: &Path) {
    let out = Command::new("ccache").env("CCACHE_DIR", cache).env("CCACHE_CONFIGPATH", cache.join("ccache.conf")).arg("-z").output().expect("ccache runs");
    assert!(out.status.success(), "ccache -z: {}", printed(&out));
}

/// docs/CCACHE.md's CMake recipe: configures the project with [`CCACHE_LAUNCHER`] and a cache of
/// the test's own, builds it, cleans it (`--target clean`) and builds it again. The second
/// build's CUDA compilations are all cache hits (none a miss, none uncached), and every object
/// is byte-identical to the first build's.
fn cached_build(cmake_program: &Path, generator: &str) {
    let Some(tools) = tool_dir() else { return };
    let cuda = tools.parent().expect("the CUDA folder above bin/").to_path_buf();
    let poisoned = Poisoned::new(&cuda);
    let dir = poisoned.dir.path();
    let cdpc = env!("CARGO_BIN_EXE_cdpc");
    let label = format!("ccache, {} -G {generator:?}", cmake_program.display());
    let cache = dir.join("ccache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::write(cache.join("ccache.conf"), "").unwrap();
    // CMake, the build tool and ccache with the test's cache and none of the caller's settings.
    let run = |args: &[&str]| {
        let mut command = cmake_command(cmake_program, &poisoned, dir, args);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("CCACHE_") {
                command.env_remove(name);
            }
        }
        command.env("CCACHE_DIR", &cache).env("CCACHE_CONFIGPATH", cache.join("ccache.conf")).env_remove("CMAKE_CXX_COMPILER_LAUNCHER");
        command.output().unwrap_or_else(|e| panic!("{} runs: {e}", cmake_program.display()))
    };

    let source = project().display().to_string();
    let (compiler, launcher) = (format!("-DCMAKE_CUDA_COMPILER={cdpc}"), format!("-DCMAKE_CUDA_COMPILER_LAUNCHER={CCACHE_LAUNCHER}"));
    let out = run(&["-S", &source, "-B", "build", "-G", generator, &compiler, &launcher, "-DCMAKE_CUDA_ARCHITECTURES=90", "-DX_SHARED=ON"]);
    assert!(out.status.success(), "{label}: configuring failed:\n{}\nnvcc ran: {}", printed(&out), poisoned.calls());
    let build = dir.join("build");

    // The first build: every CUDA compilation through ccache, each a miss.
    ccache_zero(&cache);
    let out = run(&["--build", "build", "--verbose"]);
    let text = printed(&out);
    assert!(out.status.success(), "{label}: building failed:\n{text}\nnvcc ran: {}", poisoned.calls());
    let launched = text.lines().filter(|l| l.contains("CCACHE_COMPILERTYPE=nvcc ccache ") && l.contains(cdpc) && l.contains(" -c ")).count() as u64;
    assert_eq!(launched, CUDA_COMPILATIONS, "{label}: CUDA compilations through ccache:\n{text}");
    let first = ccache_outcomes(&cache);
    let misses = std::collections::BTreeMap::from([("cache_miss".to_string(), CUDA_COMPILATIONS)]);
    assert_eq!(first, misses, "{label}: the first build's ccache counters (each compilation a miss, none uncached)");
    let before = objects(&build);
    for object in ["dp.dir/parent.cu.o", "dp.dir/child.cu.o", "dp_shared.dir/parent.cu.o", "dp_shared.dir/child.cu.o", "whole.dir/whole.cu.o"] {
        assert!(before.contains_key(&Path::new("CMakeFiles").join(object)), "{label}: no CMakeFiles/{object} in {:?}", before.keys().collect::<Vec<_>>());
    }

    let out = run(&["--build", "build", "--target", "clean"]);
    assert!(out.status.success(), "{label}: cleaning failed:\n{}", printed(&out));
    let left = objects(&build);
    assert!(left.is_empty(), "{label}: objects left after clean: {:?}", left.keys().collect::<Vec<_>>());

    // The second build: every CUDA compilation a hit, every object the same bytes.
    ccache_zero(&cache);
    let out = run(&["--build", "build", "--verbose"]);
    assert!(out.status.success(), "{label}: building again failed:\n{}\nnvcc ran: {}", printed(&out), poisoned.calls());
    let second = ccache_outcomes(&cache);
    let hits = std::collections::BTreeMap::from([("direct_cache_hit".to_string(), CUDA_COMPILATIONS)]);
    assert_eq!(second, hits, "{label}: the second build's ccache counters (each compilation a hit)");
    let after = objects(&build);
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "{label}: the objects of the two builds");
    let differing: Vec<_> = before.iter().filter(|(path, bytes)| after[*path] != **bytes).map(|(path, _)| path).collect();
    assert!(differing.is_empty(), "{label}: objects not byte-identical to the first build's: {differing:?}");
    assert_eq!(poisoned.calls(), "", "{label}: nvcc ran");
}

#[test]
fn ccache_makes_the_second_build_after_clean_all_hits_with_the_same_objects() {
    if !have("cmake") || !have("c++") || !have("ccache") {
        return;
    }
    // Makefiles: CMake 3.25 gives each compilation its include folders in an options file
    // (`--options-file CMakeFiles/dp.dir/includes_CUDA.rsp`).
    cached_build(Path::new("cmake"), "Unix Makefiles");
    if Command::new("ninja").arg("--version").output().is_ok_and(|o| o.status.success()) {
        cached_build(Path::new("cmake"), "Ninja");
    } else {
        println!("skipped: the Ninja build with ccache: `ninja` is not available");
    }
    // The CMake named by CDPC_TEST_CMAKE (4.x: the same options file), with its Ninja too.
    let Some(other) = std::env::var_os("CDPC_TEST_CMAKE") else {
        println!("skipped: ccache with another cmake: CDPC_TEST_CMAKE names none");
        return;
    };
    let other = PathBuf::from(other);
    assert!(have(&other.to_string_lossy()), "CDPC_TEST_CMAKE={} does not run", other.display());
    cached_build(&other, "Unix Makefiles");
    if other.with_file_name("ninja").is_file() {
        cached_build(&other, "Ninja");
    }
}

#[test]
fn cmake_on_path_builds_the_project_with_cdpc_as_nvcc() {
    if !have("cmake") || !have("c++") {
        return;
    }
    let cmake = Path::new("cmake");
    build(cmake, "Unix Makefiles", Some("90"));
    // CMake 3.23's special value, which it passes as nvcc's `-arch=all-major`.
    build(cmake, "Unix Makefiles", Some("all-major"));
    // Ninja: no response files, every object and library on the command line; and the
    // architecture CMake takes from cdpc's `-v` output.
    if Command::new("ninja").arg("--version").output().is_ok_and(|o| o.status.success()) {
        build(cmake, "Ninja", None);
    } else {
        println!("skipped: the Ninja build: `ninja` is not available");
    }
}

#[test]
fn the_cmake_named_by_cdpc_test_cmake_builds_the_project_with_cdpc_as_nvcc() {
    let Some(cmake) = std::env::var_os("CDPC_TEST_CMAKE") else {
        println!("skipped: CDPC_TEST_CMAKE names no other cmake (`python3 -m venv /tmp/v && /tmp/v/bin/pip install cmake ninja`, then CDPC_TEST_CMAKE=/tmp/v/bin/cmake)");
        return;
    };
    let cmake = PathBuf::from(cmake);
    assert!(have(&cmake.to_string_lossy()), "CDPC_TEST_CMAKE={} does not run", cmake.display());
    if !have("c++") {
        return;
    }
    build(&cmake, "Unix Makefiles", Some("90"));
    let ninja = cmake.with_file_name("ninja");
    if ninja.is_file() || Command::new("ninja").arg("--version").output().is_ok_and(|o| o.status.success()) {
        build(&cmake, "Ninja", None);
    } else {
        println!("skipped: the Ninja build: no `ninja` beside {} or on PATH", cmake.display());
    }
}

/// `cdpc --link-launcher` as CMake's `CMAKE_CXX_LINKER_LAUNCHER` (CMake 3.21): a program that
/// links the static library of relocatable device code without its device link
/// (`CUDA_RESOLVE_DEVICE_SYMBOLS OFF`, the project's `X_BROKEN_LINK`) fails as without the
/// launcher, with E0804 naming the library's object; the program with the device link links
/// through the launcher as before.
#[test]
fn the_link_launcher_names_the_object_of_a_cmake_link_without_its_device_link() {
    if !have("cmake") || !have("c++") {
        return;
    }
    let Some(tools) = tool_dir() else { return };
    let poisoned = Poisoned::new(tools.parent().expect("the CUDA folder above bin/"));
    let dir = poisoned.dir.path();
    let cdpc = env!("CARGO_BIN_EXE_cdpc");
    let source = project();
    let configure = [
        "-S".to_string(),
        source.display().to_string(),
        "-B".into(),
        "build".into(),
        "-G".into(),
        "Unix Makefiles".into(),
        format!("-DCMAKE_CUDA_COMPILER={cdpc}"),
        "-DCMAKE_CUDA_ARCHITECTURES=90".into(),
        "-DX_BROKEN_LINK=ON".into(),
        format!("-DCMAKE_CXX_LINKER_LAUNCHER={cdpc};--link-launcher"),
    ];
    let configure: Vec<&str> = configure.iter().map(String::as_str).collect();
    let out = cmake(Path::new("cmake"), &poisoned, dir, &configure);
    assert!(out.status.success(), "configuring failed:\n{}", printed(&out));
    let out = cmake(Path::new("cmake"), &poisoned, dir, &["--build", "build", "--target", "app_unresolved"]);
    let text = printed(&out);
    assert!(!out.status.success(), "a link without the device link succeeded:\n{text}");
    assert!(text.contains("__cudaRegisterLinkedBinary_"), "the linker's own message is passed through:\n{text}");
    assert!(text.contains("error[E0804]"), "no E0804:\n{text}");
    assert!(text.contains("libdp.a(parent.cu.o)"), "E0804 does not name the object:\n{text}");
    assert!(text.contains("CUDA_RESOLVE_DEVICE_SYMBOLS"), "{text}");
    let out = cmake(Path::new("cmake"), &poisoned, dir, &["--build", "build", "--target", "app"]);
    assert!(out.status.success(), "the program with its device link, through the launcher:\n{}", printed(&out));
    elf(&dir.join("build/app"), true).unwrap();
    assert_eq!(poisoned.calls(), "", "nvcc ran");
}

/// CMake's `INTERPROCEDURAL_OPTIMIZATION` for CUDA (`check_ipo_supported` says yes for cdpc as
/// for nvcc): each object compiled for `lto_90` carries its device IR and the device link runs
/// with `-dlto`, so that the link sees the child, which a `STATIC` library holds (docs/CMAKE.md).
#[test]
fn cmakes_interprocedural_optimization_compiles_the_device_code_at_the_device_link() {
    if !have("cmake") || !have("c++") {
        return;
    }
    let Some(tools) = tool_dir() else { return };
    let poisoned = Poisoned::new(tools.parent().expect("the CUDA folder above bin/"));
    let dir = poisoned.dir.path();
    let source = dir.join("ipo");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join("child.cu"), "__global__ void child(int *out, int t) { atomicAdd(&out[t], threadIdx.x + 1); }\n").unwrap();
    std::fs::write(
        source.join("parent.cu"),
        "__global__ void child(int *out, int t);\n__global__ void parent(int *out) { int t = blockIdx.x * blockDim.x + threadIdx.x; child<<<1, 2 + t % 3>>>(out, t); }\nint main() { int *out; cudaMalloc(&out, 1024 * sizeof(int)); parent<<<8, 128>>>(out); return cudaDeviceSynchronize() != cudaSuccess; }\n",
    )
    .unwrap();
    std::fs::write(
        source.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.25)\nproject(ipo LANGUAGES CXX CUDA)\ninclude(CheckIPOSupported)\ncheck_ipo_supported(RESULT ipo OUTPUT why LANGUAGES CUDA)\nif(NOT ipo)\n  message(FATAL_ERROR \"no IPO for CUDA: ${why}\")\nendif()\nadd_library(kids STATIC child.cu)\nadd_executable(app parent.cu)\ntarget_link_libraries(app PRIVATE kids)\nset_target_properties(kids app PROPERTIES CUDA_SEPARABLE_COMPILATION ON CUDA_ARCHITECTURES 90 INTERPROCEDURAL_OPTIMIZATION ON)\n",
    )
    .unwrap();
    let cdpc = env!("CARGO_BIN_EXE_cdpc");
    let out = cmake(Path::new("cmake"), &poisoned, dir, &["-S", "ipo", "-B", "build", &format!("-DCMAKE_CUDA_COMPILER={cdpc}"), "-DCMAKE_CUDA_FLAGS=-Rpass=aggregate"]);
    assert!(out.status.success(), "configuring failed:\n{}", printed(&out));
    let out = cmake(Path::new("cmake"), &poisoned, dir, &["--build", "build", "--verbose"]);
    let text = printed(&out);
    assert!(out.status.success(), "building failed:\n{text}\nnvcc ran: {}", poisoned.calls());
    // Each compile cannot see the child; the device link, given the IR, aggregates its launch.
    assert!(text.contains("code=[compute_90,lto_90]") && text.contains(" -dlto "), "{text}");
    assert!(text.contains("has no definition to clone") && text.contains("launch of `child` aggregated"), "{text}");
    assert_eq!(poisoned.calls(), "", "nvcc ran");
}
