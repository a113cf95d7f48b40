//! `cdpc --link-launcher LINKER ARGS...` (docs/BUILDING.md, "Link errors"): a host link cdpc
//! does not build runs unchanged, its output passed through and its exit status kept, and the
//! dynamic-parallelism link errors get `E0804` naming the objects from their symbol tables: a
//! g++ link of `-rdc` objects (loose and in an archive) without the device link, two device
//! links in one link, and the static runtime without `-ldl -lrt -lpthread`. An `nvcc` that
//! fails is first on `PATH`, as in program_build.rs. The CMake case is cmake_build.rs's
//! `the_link_launcher_names_the_object_of_a_cmake_link_without_its_device_link`.

use crate::build_common::{self, stderr};
use std::path::Path;
use std::process::{Command, Output};

const PARENT: &str = "__global__ void child(int *out);\n__global__ void parent(int *out) { child<<<1, 32>>>(out); }\nvoid run_parent(int *out) { parent<<<1, 1>>>(out); }\n";
const CHILD: &str = "__global__ void child(int *out) { out[threadIdx.x] = threadIdx.x * 2; }\n";
const MAIN: &str = "void run_parent(int *out);\nint main() { run_parent(nullptr); return 0; }\n";

struct Setup {
    dir: tempfile::TempDir,
    path: std::ffi::OsString,
    /// `-L<CUDA's lib> -lcudadevrt -lcudart_static`.
    runtime: Vec<String>,
}

impl Setup {
    /// The `-dc` objects `parent.o` and `child.o`, `main.o`, and the poisoned `nvcc`.
    fn new() -> Option<Setup> {
        build_common::tool_dir()?;
        if !build_common::have("c++") {
            println!("skipped: no host compiler (c++) on PATH");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let poison = dir.path().join("poison");
        std::fs::create_dir(&poison).unwrap();
        write_executable(&poison.join("nvcc"), "#!/bin/sh\necho 'nvcc must not run' >&2\nexit 99\n");
        let path = std::env::join_paths(std::iter::once(poison).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
        for (name, text) in [("parent.cu", PARENT), ("child.cu", CHILD), ("main.cpp", MAIN)] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let lib = cdpc::toolchain::Toolchain::discover(&Default::default()).unwrap().cuda_lib_dir().to_path_buf();
        let setup = Setup { dir, path, runtime: vec![format!("-L{}", lib.display()), "-lcudadevrt".into(), "-lcudart_static".into()] };
        for args in [&["-dc", "parent.cu"][..], &["-dc", "child.cu"], &["-c", "main.cpp", "-o", "main.o"]] {
            let out = setup.cdpc(args);
            assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        }
        Some(setup)
    }

    fn cdpc(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(self.dir.path()).env("PATH", &self.path).args(args).output().expect("cdpc runs")
    }

    /// `cdpc --link-launcher LINKER args`.
    fn launch(&self, linker: &str, args: &[&str]) -> Output {
        let all: Vec<&str> = ["--link-launcher", linker].into_iter().chain(args.iter().copied()).collect();
        self.cdpc(&all)
    }

    /// `args` then the runtime with its system libraries.
    fn link_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = args.to_vec();
        all.extend(self.runtime.iter().map(String::as_str));
        all.extend(["-lrt", "-lpthread", "-ldl"]);
        all
    }
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The E0804 block of the launcher's stderr (after the linker's own lines).
fn e0804(out: &Output) -> String {
    let text = stderr(out);
    let at = text.find("error[E0804]").unwrap_or_else(|| panic!("no E0804 in:\n{text}"));
    text[at..].to_string()
}

#[test]
fn a_link_of_rdc_objects_without_the_device_link_names_the_objects() {
    let Some(s) = Setup::new() else { return };
    let args = s.link_args(&["parent.o", "child.o", "main.o", "-o", "app"]);
    let plain = Command::new("c++").current_dir(s.dir.path()).args(&args).output().unwrap();
    let out = s.launch("c++", &args);
    // The linker's status and its own message, unchanged.
    assert!(!out.status.success());
    assert_eq!(out.status.code(), plain.status.code());
    assert!(stderr(&out).starts_with(&stderr(&plain)), "the linker's message is not passed through first:\n{}", stderr(&out));
    let d = e0804(&out);
    assert!(d.contains("`parent.o`") && d.contains("`child.o`"), "{d}");
    assert!(d.contains("cdpc -dlink parent.o child.o -o dlink.o"), "{d}");
    assert!(!s.dir.path().join("app").exists());
    // In an archive: the member is named.
    let ar = Command::new("ar").current_dir(s.dir.path()).args(["rcs", "libdp.a", "parent.o", "child.o"]).output().unwrap();
    assert!(ar.status.success());
    let out = s.launch("c++", &s.link_args(&["main.o", "-L.", "-ldp", "-o", "app"]));
    let d = e0804(&out);
    assert!(d.contains("libdp.a(parent.o)"), "{d}");
    // With the device link the same launcher links, silently.
    let dlink = s.cdpc(&["-dlink", "parent.o", "child.o", "-o", "dlink.o"]);
    assert!(dlink.status.success(), "{}", stderr(&dlink));
    let out = s.launch("c++", &s.link_args(&["dlink.o", "parent.o", "child.o", "main.o", "-o", "app"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("E0804"));
    assert!(s.dir.path().join("app").is_file());
}

#[test]
fn two_device_links_in_one_link_name_both_objects() {
    let Some(s) = Setup::new() else { return };
    for output in ["dlink.o", "again.o"] {
        let out = s.cdpc(&["-dlink", "parent.o", "child.o", "-o", output]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = s.launch("c++", &s.link_args(&["dlink.o", "again.o", "parent.o", "child.o", "main.o", "-o", "app"]));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("multiple definition"), "{}", stderr(&out));
    let d = e0804(&out);
    assert!(d.contains("two device links") && d.contains("`dlink.o`") && d.contains("`again.o`"), "{d}");
}

/// glibc 2.34 and later hold `dlopen`, `shm_open` and `clock_gettime` in libc itself, so a link
/// without `-ldl -lrt -lpthread` succeeds there; a linker that prints GNU ld's message for an
/// older C library stands in for it, and the real link is checked to succeed or give E0804.
#[test]
fn the_static_runtime_without_its_system_libraries_says_which_to_add() {
    let Some(s) = Setup::new() else { return };
    let old_ld = s.dir.path().join("old-ld");
    write_executable(
        &old_ld,
        "#!/bin/sh\necho \"/usr/bin/ld: libcudart_static.a(libcudart_static.o): in function \\`cudart::x()':\" >&2\necho \"(.text+0x2b): undefined reference to \\`dlopen'\" >&2\necho \"(.text+0x4f): undefined reference to \\`shm_open'\" >&2\necho 'collect2: error: ld returned 1 exit status' >&2\nexit 1\n",
    );
    let out = s.launch(&old_ld.display().to_string(), &["dlink.o", "main.o", "-lcudart_static", "-o", "app"]);
    assert_eq!(out.status.code(), Some(1));
    let d = e0804(&out);
    assert!(d.contains("`dlopen`") && d.contains("`-ldl`") && d.contains("`-lrt`"), "{d}");
    let dlink = s.cdpc(&["-dlink", "parent.o", "child.o", "-o", "dlink.o"]);
    assert!(dlink.status.success());
    let mut args = vec!["dlink.o", "parent.o", "child.o", "main.o", "-o", "app"];
    args.extend(s.runtime.iter().map(String::as_str));
    let out = s.launch("c++", &args);
    assert!(out.status.success() || e0804(&out).contains("-ldl"), "{}", stderr(&out));
}

#[test]
fn other_failures_keep_the_linkers_status_and_say_nothing_more() {
    let Some(s) = Setup::new() else { return };
    let other = s.dir.path().join("other-ld");
    write_executable(&other, "#!/bin/sh\necho out\necho 'ld: cannot find -lnothing' >&2\nexit 3\n");
    let out = s.launch(&other.display().to_string(), &["main.o"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(stderr(&out), "ld: cannot find -lnothing\n");
    // No linker, or one that does not exist: coded.
    let out = s.cdpc(&["--link-launcher"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("error[E0708]"), "{}", stderr(&out));
    let out = s.launch("/no/such/linker", &["main.o"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(stderr(&out).contains("error[E0804]"), "{}", stderr(&out));
}
