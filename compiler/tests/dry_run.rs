//! `cdpc -###` (nvcc's `-dryrun`, cdpc's `--dry-run`): the jobs of a command line, printed one
//! line each to standard error, none run, nothing written. The jobs are the build's: the files
//! they name outside the work folder are the files the same command line writes, and a
//! program's device link is printed exactly where the build runs nvlink's
//! `--register-link-binaries`. A command line the build refuses is refused the same way.

use crate::build_common::{self, stderr};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

const KERNELS_CU: &str = "__global__ void child(int *p) { p[threadIdx.x] = 1; }\n__global__ void parent(int *p) { child<<<1, 32>>>(p); }\n";
const APP_CU: &str = "#include <cstdio>\n__global__ void k(int *p) { *p = 1; }\nint main() { k<<<1, 1>>>(nullptr); std::printf(\"done\\n\"); return 0; }\n";
const MAIN_CPP: &str = "int main() { return 0; }\n";
const KERNEL_CDP: &str = "extern \"C\" __global__ void child(int *p) { p[threadIdx.x] = 2; }\nextern \"C\" __global__ void parent(int *p) { child<<<1, 32>>>(p); }\n";
const OTHER_CDP: &str = "extern \"C\" __global__ void other(int *p) { p[0] = 3; }\n";

/// A folder with the sources.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (name, text) in [("kernels.cu", KERNELS_CU), ("app.cu", APP_CU), ("main.cpp", MAIN_CPP), ("kernel.cdp", KERNEL_CDP), ("other.cdp", OTHER_CDP)] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn cdpc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).args(args).output().expect("cdpc runs")
}

fn with_dry_run<'a>(flag: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    std::iter::once(flag).chain(args.iter().copied()).collect()
}

/// Every file under `dir`, relative to it.
fn files(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// The printed jobs' lines.
fn jobs(dir: &Path, args: &[&str]) -> Vec<String> {
    let out = cdpc(dir, &with_dry_run("-###", args));
    assert!(out.status.success(), "cdpc -### {args:?}: {}", stderr(&out));
    assert!(out.stdout.is_empty(), "cdpc -### {args:?} wrote to stdout: {}", String::from_utf8_lossy(&out.stdout));
    let text = stderr(&out);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| l.starts_with("# \"")), "cdpc -### {args:?}:\n{text}");
    lines
}

/// The files the printed jobs write outside the work folder: each `output: "..."` and
/// `also: [...]` path (the test's paths hold no quotes, commas or brackets).
fn written(lines: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in lines {
        if let Some(rest) = line.split_once("output: \"").map(|(_, rest)| rest) {
            out.insert(rest[..rest.find('"').expect("a closing quote")].to_string());
        }
        if let Some(rest) = line.split_once("also: [").map(|(_, rest)| rest) {
            out.extend(rest[..rest.find(']').expect("a closing bracket")].split(", ").map(|q| q.trim_matches('"').to_string()));
        }
    }
    out.retain(|p| !p.starts_with("$WORK"));
    out
}

#[test]
fn the_jobs_are_printed_and_nothing_runs() {
    let dir = project();
    let before = files(dir.path());
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["kernels.cu", "main.cpp", "-o", "app"],
            &[
                // The program's one source: its device code is all the program's, which may pool.
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"$WORK/0-kernels.o\" (CUDA C++ to a host object for sm_90, whole-program device code (linked, with cdpc's allocation pool where it allocates))",
                "# \"host compile\", inputs: [\"main.cpp\"], output: \"$WORK/1-main.o\" (the host compiler's object)",
                "# \"host link\", inputs: [\"$WORK/0-kernels.o\", \"$WORK/1-main.o\"], output: \"app\" (the host compiler as linker: a program)",
            ],
        ),
        (
            &["-rdc=true", "kernels.cu", "kernel.cdp", "-o", "app", "-arch=sm_80"],
            &[
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"$WORK/0-kernels.o\" (CUDA C++ to a host object for sm_80, relocatable device code)",
                "# \"compile\", inputs: [\"kernel.cdp\"], output: \"$WORK/1-kernel.o\" (the kernel language to a host object for sm_80, relocatable device code)",
                "# \"device link\", inputs: [\"$WORK/0-kernels.o\", \"$WORK/1-kernel.o\"], output: \"$WORK/dlink.o\" (nvlink for sm_80 with libcudadevrt and, where every object frees through it, cdpc's allocation pool, and the registration object)",
                "# \"host link\", inputs: [\"$WORK/dlink.o\", \"$WORK/0-kernels.o\", \"$WORK/1-kernel.o\"], output: \"app\" (the host compiler as linker: a program)",
            ],
        ),
        (
            // Link-time optimisation: each object carries its IR, which the device link compiles together.
            &["-rdc=true", "-dlto", "kernels.cu", "-o", "app", "-arch=sm_80"],
            &[
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"$WORK/0-kernels.o\" (CUDA C++ to a host object for sm_80, relocatable device code and its IR (-dlto))",
                "# \"device link\", inputs: [\"$WORK/0-kernels.o\"], output: \"$WORK/dlink.o\" (nvlink for sm_80 with libcudadevrt and, where every object frees through it, cdpc's allocation pool, the device IR the objects and static libraries carry compiled together first (-dlto), and the registration object)",
                "# \"host link\", inputs: [\"$WORK/dlink.o\", \"$WORK/0-kernels.o\"], output: \"app\" (the host compiler as linker: a program)",
            ],
        ),
        (
            // Two relocatable CUDA C++ sources built here: the device link compiles their IR together by default.
            &["-rdc=true", "kernels.cu", "app.cu", "-o", "app", "-arch=sm_80"],
            &[
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"$WORK/0-kernels.o\" (CUDA C++ to a host object for sm_80, relocatable device code and its IR (-dlto))",
                "# \"compile\", inputs: [\"app.cu\"], output: \"$WORK/1-app.o\" (CUDA C++ to a host object for sm_80, relocatable device code and its IR (-dlto))",
                "# \"device link\", inputs: [\"$WORK/0-kernels.o\", \"$WORK/1-app.o\"], output: \"$WORK/dlink.o\" (nvlink for sm_80 with libcudadevrt and, where every object frees through it, cdpc's allocation pool, the device IR the objects and static libraries carry compiled together first (-dlto), and the registration object)",
                "# \"host link\", inputs: [\"$WORK/dlink.o\", \"$WORK/0-kernels.o\", \"$WORK/1-app.o\"], output: \"app\" (the host compiler as linker: a program)",
            ],
        ),
        (
            // Without launch optimizations the device link keeps the heap: no pool to add.
            &["-rdc=true", "kernels.cu", "kernel.cdp", "-o", "app", "-arch=sm_80", "-fno-launch-optimizations"],
            &[
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"$WORK/0-kernels.o\" (CUDA C++ to a host object for sm_80, relocatable device code)",
                "# \"compile\", inputs: [\"kernel.cdp\"], output: \"$WORK/1-kernel.o\" (the kernel language to a host object for sm_80, relocatable device code)",
                "# \"device link\", inputs: [\"$WORK/0-kernels.o\", \"$WORK/1-kernel.o\"], output: \"$WORK/dlink.o\" (nvlink for sm_80 with libcudadevrt, and the registration object)",
                "# \"host link\", inputs: [\"$WORK/dlink.o\", \"$WORK/0-kernels.o\", \"$WORK/1-kernel.o\"], output: \"app\" (the host compiler as linker: a program)",
            ],
        ),
        (
            &["-dc", "-MD", "kernels.cu", "main.cpp", "-odir", "obj"],
            &[
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"obj/kernels.o\", also: [\"obj/kernels.d\"] (CUDA C++ to a host object for sm_90, relocatable device code)",
                "# \"host compile\", inputs: [\"main.cpp\"], output: \"obj/main.o\", also: [\"obj/main.d\"] (the host compiler's object)",
            ],
        ),
        (
            &["-c", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", "kernels.cu"],
            &["# \"compile\", inputs: [\"kernels.cu\"], output: \"kernels.o\" (CUDA C++ to a host object for sm_80, sm_90, compute_90, whole-program device code (linked))"],
        ),
        (
            &["-lib", "kernels.cu", "main.cpp", "-o", "libk.a"],
            &[
                "# \"compile\", inputs: [\"kernels.cu\"], output: \"$WORK/members/kernels.o\" (CUDA C++ to a host object for sm_90, whole-program device code (linked))",
                "# \"host compile\", inputs: [\"main.cpp\"], output: \"$WORK/members/main.o\" (the host compiler's object)",
                "# \"archive\", inputs: [\"$WORK/members/kernels.o\", \"$WORK/members/main.o\"], output: \"libk.a\" (the archiver's `cr`: a static library)",
            ],
        ),
        (&["-ptx", "kernel.cdp", "-o", "-"], &["# \"compile\", inputs: [\"kernel.cdp\"], output: <stdout> (the kernel language to PTX for sm_90)"]),
        (
            &["kernel.cdp", "other.cdp", "-o", "both.cubin"],
            &["# \"link\", inputs: [\"kernel.cdp\", \"other.cdp\"], output: \"both.cubin\" (each source compiled to a device object, then nvlink with libcudadevrt: a cubin for sm_90)"],
        ),
        (&["-E", "kernels.cu"], &["# \"preprocess\", inputs: [\"kernels.cu\"], output: <stdout> (CUDA C++: each device side, then the host side)"]),
        (
            &["app.cu", "-run", "-run-args", "a,b"],
            &[
                "# \"compile\", inputs: [\"app.cu\"], output: \"$WORK/0-app.o\" (CUDA C++ to a host object for sm_90, whole-program device code (linked, with cdpc's allocation pool where it allocates))",
                "# \"host link\", inputs: [\"$WORK/0-app.o\"], output: \"a.out\" (the host compiler as linker: a program)",
                "# \"run\", inputs: [\"./a.out\"] (arguments: a b)",
            ],
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(jobs(dir.path(), args), *expected, "cdpc -### {args:?}");
    }
    assert_eq!(files(dir.path()), before, "a dry run wrote files");
}

#[test]
fn nvccs_and_clangs_spellings_print_the_same_jobs() {
    let dir = project();
    let args = ["-rdc=true", "kernels.cu", "main.cpp", "-o", "app"];
    let clang = cdpc(dir.path(), &with_dry_run("-###", &args));
    for flag in ["-dryrun", "--dryrun", "--dry-run"] {
        let out = cdpc(dir.path(), &with_dry_run(flag, &args));
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        assert_eq!(stderr(&out), stderr(&clang), "{flag}");
    }
}

#[test]
fn a_command_line_the_build_refuses_is_refused_by_the_dry_run() {
    let dir = project();
    std::fs::write(dir.path().join("x.o"), b"").unwrap();
    let refused: &[&[&str]] = &[
        &["-dc", "kernels.cu", "x.o"],
        &["-MF", "k.d", "kernels.cu"],
        &["-run", "-dc", "app.cu"],
        &["-o", "-", "kernel.cdp"],
        &["-dc", "-o", "-", "kernel.cdp"],
        &["-E", "kernel.cdp"],
        &["-E", "kernels.cu", "app.cu"],
        &["-M", "kernels.cu", "x.o"],
        &["-dlink", "kernels.cu"],
        &["-fatbin", "-dc", "kernels.cu"],
        &["-ptx", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90", "kernels.cu"],
    ];
    for args in refused {
        let built = cdpc(dir.path(), args);
        let dry = cdpc(dir.path(), &with_dry_run("-###", args));
        assert!(!built.status.success(), "{args:?} was accepted");
        assert_eq!(dry.status.code(), built.status.code(), "{args:?}: {}", stderr(&dry));
        assert_eq!(stderr(&dry), stderr(&built), "{args:?}");
    }
}

/// Each command line's jobs, then the command line run: the files it wrote are the ones its
/// jobs name, and a program's device link runs where its jobs say.
#[test]
fn the_printed_jobs_are_the_builds() {
    if build_common::tool_dir().is_none() {
        return;
    }
    if Command::new("c++").arg("--version").output().is_err() {
        println!("skipped: no host compiler (c++) on PATH");
        return;
    }
    let cases: &[&[&str]] = &[
        &["app.cu", "-o", "app"],
        &["kernels.cu", "main.cpp", "-o", "app"],
        &["-rdc=true", "kernels.cu", "app.cu", "-o", "app"],
        &["kernel.cdp", "app.cu", "-o", "app"],
        &["-dc", "-MD", "kernels.cu", "main.cpp", "kernel.cdp"],
        &["-c", "app.cu", "-o", "obj.o", "-MMD"],
        &["-lib", "kernels.cu", "main.cpp", "-o", "libk.a"],
        &["-ptx", "kernel.cdp"],
        &["-cubin", "kernels.cu", "-MD"],
        &["-fatbin", "kernels.cu", "-MD", "-o", "k.fatbin"],
        &["kernel.cdp", "other.cdp", "-o", "both.cubin"],
        &["-dc", "kernel.cdp", "--host-header", "kernel.h"],
        &["-M", "kernels.cu", "kernel.cdp", "-MF", "all.d"],
    ];
    for args in cases {
        let dir = project();
        let before = files(dir.path());
        let lines = jobs(dir.path(), args);
        let mut verbose = vec!["-v"];
        verbose.extend(args.iter());
        let out = cdpc(dir.path(), &verbose);
        assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
        let made: BTreeSet<String> = files(dir.path()).difference(&before).cloned().collect();
        assert_eq!(made, written(&lines), "cdpc {args:?}: the files written, against its jobs:\n{}", lines.join("\n"));
        let linked = stderr(&out).contains("--register-link-binaries");
        let planned = lines.iter().any(|l| l.starts_with("# \"device link\""));
        assert_eq!(linked, planned, "cdpc {args:?}: the device link, against its jobs:\n{}", lines.join("\n"));
    }
}

/// The runner reads of the command line only how to report (`--error-format`, `-v`), `-MT`'s
/// target and `-x`: what each task reads and writes is in the task (`compiler/src/plan.rs`,
/// `Task`), where `Task::jobs` reads it too, so the jobs `-###` prints are the runs'.
#[test]
fn the_runner_takes_what_it_runs_from_the_plan() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runner.rs")).unwrap();
    let mut read: BTreeSet<&str> = BTreeSet::new();
    for (at, _) in text.match_indices("cli.") {
        let field = text[at + 4..].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or_default();
        read.insert(field);
    }
    let allowed: BTreeSet<&str> = ["error_format", "verbose", "dependency_target", "language"].into_iter().collect();
    assert!(read.is_subset(&allowed), "runner.rs reads the command line's {:?}: put them in the plan's task", read.difference(&allowed).collect::<Vec<_>>());
}
