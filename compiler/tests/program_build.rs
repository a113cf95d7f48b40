//! Programs built as nvcc builds them, with no nvcc: `cdpc app.cu -o app`, an nvcc Makefile
//! with `NVCC=cdpc`, `-dlink` for another linker, `-c` of host files, and the link error of an
//! object no device link took in. An `nvcc` that fails (and leaves a mark) is first on `PATH`
//! in every build, so that a step that ran nvcc fails the test. Whether the programs give
//! nvcc's output is the GPU harness's business (`samples/harness/corpus-gpu.sh` with
//! `DRIVER=1`); here the executables are checked as files: ELF executables that register one
//! linked fat binary for every module.

use crate::build_common::{self, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A folder with a failing `nvcc` in `poison/` and the sources.
struct Project {
    dir: tempfile::TempDir,
}

const PARENT: &str = r#"
#include <cstdio>
__global__ void child(int *out);
__global__ void parent(int *out) { child<<<1, 32>>>(out); }
void run_parent(int *out) { parent<<<1, 1>>>(out); }
"#;

const CHILD: &str = r#"
__global__ void child(int *out) { out[threadIdx.x] = threadIdx.x * 2; }
"#;

const MAIN_CPP: &str = r#"
#include <cstdio>
#include <cuda_runtime.h>
void run_parent(int *out);
int main() {
    int *d = nullptr;
    if (cudaMalloc(&d, 32 * sizeof(int)) != cudaSuccess) { std::printf("no GPU\n"); return 0; }
    run_parent(d);
    int h[32];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    long sum = 0;
    for (int i = 0; i < 32; ++i) sum += h[i];
    std::printf("sum %ld\n", sum);
    return 0;
}
"#;

const WHOLE: &str = r#"
#include <cstdio>
__global__ void square(int *v) { v[threadIdx.x] *= v[threadIdx.x]; }
int main() {
    int h[4] = {1, 2, 3, 4}, *d;
    if (cudaMalloc(&d, sizeof h) != cudaSuccess) { std::printf("no GPU\n"); return 0; }
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    square<<<1, 4>>>(d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    std::printf("%d %d %d %d\n", h[0], h[1], h[2], h[3]);
}
"#;

impl Project {
    fn new() -> Option<Project> {
        build_common::tool_dir()?;
        if Command::new("c++").arg("--version").output().is_err() {
            println!("skipped: no host compiler (c++) on PATH");
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary folder");
        let poison = dir.path().join("poison");
        std::fs::create_dir(&poison).unwrap();
        let mark = dir.path().join("nvcc-ran");
        std::fs::write(poison.join("nvcc"), format!("#!/bin/sh\necho \"$@\" >> '{}'\necho 'nvcc must not run' >&2\nexit 99\n", mark.display())).unwrap();
        make_executable(&poison.join("nvcc"));
        for (name, text) in [("parent.cu", PARENT), ("child.cu", CHILD), ("main.cpp", MAIN_CPP), ("whole.cu", WHOLE)] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        Some(Project { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `PATH` with the failing nvcc first.
    fn search_path(&self) -> std::ffi::OsString {
        let mut paths = vec![self.path().join("poison")];
        paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        std::env::join_paths(paths).unwrap()
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program).current_dir(self.path()).env("PATH", self.search_path()).args(args).output().expect("the program runs")
    }

    fn cdpc(&self, args: &[&str]) -> Output {
        self.run(env!("CARGO_BIN_EXE_cdpc"), args)
    }

    fn assert_nvcc_never_ran(&self) {
        let mark = self.path().join("nvcc-ran");
        assert!(!mark.exists(), "nvcc ran: {}", std::fs::read_to_string(mark).unwrap_or_default());
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}{}", String::from_utf8_lossy(&out.stdout), stderr(out));
}

/// The symbols `nm` lists for `file` (`T name`, `U name`, ...).
fn symbols(file: &Path) -> Vec<String> {
    let out = Command::new("nm").arg(file).output().expect("nm runs");
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split_whitespace().rev().take(2).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" ")).collect()
}

/// An executable file with a defined registration function for every module nvlink linked:
/// each source's (named after it) and, where device code launches (`launches`), libcudadevrt's.
fn assert_program(path: &Path, sources: &[&str], launches: bool) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.starts_with(b"\x7fELF"), "{} is no ELF file", path.display());
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 3, "{}: an executable (ET_DYN, PIE)", path.display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_ne!(std::fs::metadata(path).unwrap().permissions().mode() & 0o111, 0, "{} is executable", path.display());
    }
    let symbols = symbols(path);
    let registered: Vec<&String> = symbols.iter().filter(|s| s.starts_with("T __cudaRegisterLinkedBinary_")).collect();
    for source in sources {
        let tag = format!("_{}_", source.replace('.', "_"));
        assert!(registered.iter().any(|s| s.contains(&tag)), "{}: no registration of {source} in {registered:?}", path.display());
    }
    assert_eq!(registered.iter().any(|s| s.contains("cuda_device_runtime")), launches, "libcudadevrt's module: {registered:?}");
    assert!(!symbols.iter().any(|s| s.starts_with("U __cudaRegisterLinkedBinary")), "every module registered");
}

#[test]
fn one_command_builds_a_program_from_sources() {
    let Some(p) = Project::new() else { return };
    ok(&p.cdpc(&["-rdc=true", "parent.cu", "child.cu", "main.cpp", "-o", "app"]), "cdpc parent.cu child.cu main.cpp -o app");
    assert_program(&p.path().join("app"), &["parent.cu", "child.cu"], true);
    // nvcc's default output name, and a whole program.
    ok(&p.cdpc(&["whole.cu"]), "cdpc whole.cu");
    assert_program(&p.path().join("a.out"), &["whole.cu"], false);
    p.assert_nvcc_never_ran();
    // No work file is left beside the sources.
    let mut left: Vec<String> = std::fs::read_dir(p.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["a.out", "app", "child.cu", "main.cpp", "parent.cu", "poison", "whole.cu"]);
}

#[test]
fn an_nvcc_makefile_builds_with_nvcc_set_to_cdpc() {
    let Some(p) = Project::new() else { return };
    if Command::new("make").arg("--version").output().is_err() {
        println!("skipped: no make");
        return;
    }
    // The shape of nvcc Makefiles: relocatable objects, a host file through nvcc, the link
    // with -lcudadevrt, and a whole program in one command.
    let makefile = "\
NVCC ?= nvcc
ARCH = -gencode arch=compute_90,code=sm_90
all: app whole
%.o: %.cu
\t$(NVCC) $(ARCH) -rdc=true -Xcompiler -fPIC -O2 -c $< -o $@
main.o: main.cpp
\t$(NVCC) -O2 -c main.cpp -o main.o
app: parent.o child.o main.o
\t$(NVCC) $(ARCH) -rdc=true parent.o child.o main.o -o app -lcudadevrt
whole: whole.cu
\t$(NVCC) $(ARCH) whole.cu -o whole
";
    std::fs::write(p.path().join("Makefile"), makefile).unwrap();
    let out = p.run("make", &[&format!("NVCC={}", env!("CARGO_BIN_EXE_cdpc")), "-j2"]);
    ok(&out, "make NVCC=cdpc");
    assert_program(&p.path().join("app"), &["parent.cu", "child.cu"], true);
    assert_program(&p.path().join("whole"), &["whole.cu"], false);
    // main.o is the host compiler's object: no device code, no registration.
    assert!(!symbols(&p.path().join("main.o")).iter().any(|s| s.contains("__cudaRegisterLinkedBinary")));
    p.assert_nvcc_never_ran();
}

#[test]
fn a_device_link_object_links_with_the_host_compiler() {
    let Some(p) = Project::new() else { return };
    for source in ["parent.cu", "child.cu"] {
        ok(&p.cdpc(&["-dc", source]), source);
    }
    ok(&p.cdpc(&["-c", "main.cpp", "-o", "main.o"]), "cdpc -c main.cpp");
    ok(&p.cdpc(&["-dlink", "parent.o", "child.o", "-o", "dlink.o"]), "cdpc -dlink");
    let lib = cdpc::toolchain::Toolchain::discover(&Default::default()).unwrap().cuda_lib_dir().to_path_buf();
    let link = |objects: &[&str], output: &str| {
        let mut args: Vec<String> = objects.iter().map(|s| s.to_string()).collect();
        args.extend([format!("-L{}", lib.display()), "-lcudadevrt".into(), "-lcudart_static".into(), "-lrt".into(), "-lpthread".into(), "-ldl".into(), "-o".into(), output.into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        p.run("c++", &args)
    };
    ok(&link(&["dlink.o", "parent.o", "child.o", "main.o"], "app"), "c++ with the device-link object");
    assert_program(&p.path().join("app"), &["parent.cu", "child.cu"], true);
    // Without the device link, the host linker cannot find the registration: what cdpc's own
    // link says of that is E0803 (checked on the linker's message below).
    let failed = link(&["parent.o", "child.o", "main.o"], "broken");
    assert!(!failed.status.success());
    let d = cdpc::driver::program::missing_device_link(&stderr(&failed)).expect("the linker names the registration");
    assert_eq!(d.code.as_str(), "E0803");
    assert!(d.message.contains("parent_cu") || d.message.contains("child_cu"), "{}", d.message);
    p.assert_nvcc_never_ran();
}

#[test]
fn host_files_compile_with_the_host_compiler() {
    let Some(p) = Project::new() else { return };
    let out = p.cdpc(&["-c", "main.cpp", "-DEXTRA=1", "-O2", "-o", "main.o", "-v"]);
    ok(&out, "cdpc -c main.cpp");
    let log = stderr(&out);
    // The host compiler's command line, with the CUDA headers' folder for <cuda_runtime.h>.
    let line = log.lines().find(|l| l.contains("main.cpp")).unwrap_or_else(|| panic!("no host compiler line in {log}"));
    assert!(line.contains("-DEXTRA=1") && line.contains("-O2") && line.contains("/include"), "{line}");
    assert!(symbols(&p.path().join("main.o")).iter().any(|s| s == "T main"));
    // A host file's error is the host compiler's, with its command line.
    std::fs::write(p.path().join("bad.cpp"), "int main() { return missing; }\n").unwrap();
    let out = p.cdpc(&["-c", "bad.cpp"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("missing"), "{}", stderr(&out));
    assert!(!p.path().join("bad.o").exists(), "no partial output");
}

/// A file of kernels alone built as a program (nvcc's default, and cdpc's) fails in the host
/// link for want of `main`: `E0806` says so and what to write instead, the linker's message
/// kept as a note, and no program is written. What it suggests works.
#[test]
fn a_program_without_main_says_what_to_write_instead() {
    let Some(_) = build_common::tool_dir() else { return };
    if !build_common::have("c++") {
        println!("skipped: no host compiler `c++`");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void child(int *p) { p[threadIdx.x] = 1; }\n__global__ void parent(int *p) { child<<<1, 32>>>(p); }\n").unwrap();
    let out = build_common::cdpc(dir.path(), &["k.cu", "-o", "k"]);
    let said = stderr(&out);
    assert!(!out.status.success() && said.contains("error[E0806]: no `main` in the program"), "{said}");
    assert!(said.contains("`-c` writes an object") && said.contains("undefined reference to `main'"), "{said}");
    assert!(!dir.path().join("k").exists(), "no partial output");
    let out = build_common::cdpc(dir.path(), &["k.cu", "-o", "k", "--error-format", "json"]);
    assert!(stderr(&out).contains(r#""code":"E0806""#), "{}", stderr(&out));
    ok(&build_common::cdpc(dir.path(), &["-c", "k.cu"]), "cdpc -c k.cu");
    ok(&build_common::cdpc(dir.path(), &["k.cu", "-o", "k.cubin"]), "cdpc k.cu -o k.cubin");
    assert!(dir.path().join("k.o").is_file() && dir.path().join("k.cubin").is_file());
}

#[test]
fn a_kernel_language_file_alone_still_compiles_to_a_cubin() {
    let Some(_) = build_common::tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cdp"), "__global__ void k(int *p) { p[0] = 1; }\n").unwrap();
    let out = build_common::cdpc(dir.path(), &["k.cdp"]);
    ok(&out, "cdpc k.cdp");
    assert!(dir.path().join("k.cubin").is_file());
    // `-o x.cubin` asks for device code whatever the inputs are.
    std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) { p[0] = 1; }\n").unwrap();
    ok(&build_common::cdpc(dir.path(), &["k.cu", "-o", "cu.cubin"]), "cdpc k.cu -o cu.cubin");
    let bytes = std::fs::read(dir.path().join("cu.cubin")).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 190, "a CUDA ELF");
    let _: PathBuf = dir.path().to_path_buf();
}

#[test]
fn runtime_shared_library_and_host_compiler_options() {
    let Some(p) = Project::new() else { return };
    // `--cudart shared`: the runtime's shared library, found through the run path.
    ok(&p.cdpc(&["whole.cu", "--cudart", "shared", "-o", "shared-rt"]), "--cudart shared");
    let dynamic = String::from_utf8_lossy(&Command::new("readelf").args(["-d"]).arg(p.path().join("shared-rt")).output().unwrap().stdout).into_owned();
    assert!(dynamic.contains("libcudart.so") && (dynamic.contains("RUNPATH") || dynamic.contains("RPATH")), "{dynamic}");
    // `-shared`: a shared library (a Python extension's shape), its code position-independent.
    ok(&p.cdpc(&["-shared", "-Xcompiler", "-fPIC", "-rdc=true", "parent.cu", "child.cu", "-o", "libdp.so"]), "-shared");
    let bytes = std::fs::read(p.path().join("libdp.so")).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 3, "ET_DYN");
    assert!(symbols(&p.path().join("libdp.so")).iter().any(|s| s.starts_with("T ") && s.contains("run_parent")));
    // The library under the versioned name CMake gives it (`SOVERSION`), which nvcc refuses
    // ("Don't know what to do with"): an input of the host link, as the host linker takes it.
    std::fs::rename(p.path().join("libdp.so"), p.path().join("libdp.so.1")).unwrap();
    ok(&p.cdpc(&["main.cpp", "libdp.so.1", "-o", "versioned"]), "a program linked with libdp.so.1");
    let needed = String::from_utf8_lossy(&Command::new("readelf").args(["-d"]).arg(p.path().join("versioned")).output().unwrap().stdout).into_owned();
    assert!(needed.contains("libdp.so.1"), "{needed}");
    // `-ccbin` naming no compiler: where cdpc looked, and nothing written.
    let out = p.cdpc(&["whole.cu", "-ccbin", "/no/such/g++", "-o", "never"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("host compiler") && err.contains("/no/such/g++") && err.contains("-ccbin"), "{err}");
    assert!(!p.path().join("never").exists());
    p.assert_nvcc_never_ran();
}

#[test]
fn without_rdc_each_file_is_a_whole_program_and_no_device_link_runs() {
    let Some(p) = Project::new() else { return };
    let out = p.cdpc(&["whole.cu", "-o", "whole", "-v"]);
    ok(&out, "cdpc whole.cu");
    let log = stderr(&out);
    // ptxas without -c (ptxas sees the whole program), and no nvlink: nvcc's build without -rdc.
    let ptxas = log.lines().find(|l| l.contains("ptxas ")).unwrap_or_else(|| panic!("{log}"));
    assert!(!ptxas.split_whitespace().any(|a| a == "-c"), "{ptxas}");
    assert!(!log.lines().any(|l| l.contains("nvlink")), "{log}");
    // The object alone (`-c`, no -rdc) links with the host compiler and nothing else, and a
    // later device link does not take its code in again.
    ok(&p.cdpc(&["-c", "whole.cu", "-o", "whole.o"]), "cdpc -c whole.cu");
    assert!(!std::fs::read(p.path().join("whole.o")).unwrap().windows(14).any(|w| w == b"__nv_relfatbin"));
    let lib = cdpc::toolchain::Toolchain::discover(&Default::default()).unwrap().cuda_lib_dir().to_path_buf();
    let out = p.run("c++", &["whole.o", &format!("-L{}", lib.display()), "-lcudart_static", "-lrt", "-lpthread", "-ldl", "-o", "whole-by-cxx"]);
    ok(&out, "c++ whole.o");
    assert_program(&p.path().join("whole-by-cxx"), &["whole.cu"], false);
    // A device-side launch across files needs -rdc=true, as with nvcc: E0801 at the kernel's
    // declaration, saying so.
    let out = p.cdpc(&["parent.cu", "child.cu", "main.cpp", "-o", "app"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("error[E0801]: device symbol `child` is defined in no device code of this file") && err.contains("parent.cu:3:") && err.contains("-rdc=true"), "{err}");
    assert!(!p.path().join("app").exists());
    p.assert_nvcc_never_ran();
}

/// nvcc passes its host `-O` to its host compiler, and Ubuntu's GCC then defines
/// `_FORTIFY_SOURCE` by itself: a program nvcc builds with `-O2` there stops at a fortified
/// overflow (`*** buffer overflow detected ***`; measured with SourabhShenoy's string matchers).
/// cdpc's host side (Clang) gets the level the host
/// compiler defines, asked with `-dM -E -O<n>`: here a host compiler (`CDPC_HOST_CXX`) that
/// answers as Ubuntu 24.04's GCC and otherwise is `c++`. Without `-O`, with `-D_FORTIFY_SOURCE`
/// of the user's or `-U`, it gets none; the device side never does.
#[test]
fn the_host_side_is_fortified_where_nvccs_host_compiler_would_be() {
    let Some(p) = Project::new() else { return };
    let fake = p.path().join("ubuntu-g++");
    std::fs::write(&fake, "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -dM ] && { c++ \"$@\"; echo '#define _FORTIFY_SOURCE 3'; exit 0; }; done\nexec c++ \"$@\"\n").unwrap();
    make_executable(&fake);
    let overflow = "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n\
                    #if defined(__CUDA_ARCH__) && defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0\n#error the device side is fortified\n#endif\n\
                    __global__ void k() {}\n\
                    int main(int argc, char **argv) {\n    const char *text = argc > 5 ? argv[1] : \"a pattern of 23 letters\";\n    char *copy = (char *)std::malloc(std::strlen(text));\n    std::strcpy(copy, text);\n    std::printf(\"%s\\n\", copy);\n    return 0;\n}\n";
    std::fs::write(p.path().join("overflow.cu"), overflow).unwrap();
    let build = |args: &[&str], output: &str| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["overflow.cu", "-o", output]);
        let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(p.path()).env("PATH", p.search_path()).env("CDPC_HOST_CXX", &fake).args(&all).output().unwrap();
        ok(&out, &format!("cdpc {}", all.join(" ")));
        Command::new(p.path().join(output)).current_dir(p.path()).output().expect("the program runs")
    };
    // Fortified: glibc's `__strcpy_chk` stops the program before its `printf`.
    let fortified = build(&["-O2"], "fortified");
    assert!(!fortified.status.success() && stderr(&fortified).contains("buffer overflow detected"), "-O2: {fortified:?}");
    let fortified = build(&["-Xcompiler", "-O1"], "fortified-x");
    assert!(stderr(&fortified).contains("buffer overflow detected"), "-Xcompiler -O1: {fortified:?}");
    // Not fortified: the overflow goes unnoticed, as under GCC at -O0 or with the user's choice.
    for (args, name) in [(&[][..], "plain"), (&["-O0"][..], "o0"), (&["-O2", "-U_FORTIFY_SOURCE"][..], "undefined"), (&["-O2", "-Xcompiler", "-D_FORTIFY_SOURCE=0"][..], "zero")] {
        let out = build(args, name);
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("a pattern of 23 letters"), "{args:?}: {out:?}");
    }
}
