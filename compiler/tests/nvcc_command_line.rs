//! nvcc's command line, as Makefiles and CMake builds write it, given to cdpc: the options
//! cdpc takes as nvcc's (`-std`, `-Xcompiler`, `-isystem`, `-w`, `-maxrregcount`,
//! `-res-usage`), the ones it accepts with nothing to do, and the coded refusals (`E0707` for
//! an nvcc option cdpc does not have, `E0708` for a command line it cannot read). nvcc is the
//! oracle where one is needed: the names of the kernels a `-dc` object defines, and that nvcc's
//! host link takes the object. Cases that need the NVIDIA tools, nvcc, g++ or nm skip with a
//! printed reason.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::build_common::{cdpc, have, json_lines, nvcc, run, stderr, tool_dir};

/// Kernels whose Itanium names Clang 22 spells otherwise by default (a `template <class T, T V>`
/// instance, a constrained template), and code on both sides that needs `-Xcompiler`'s macro
/// (nvcc's device pass is preprocessed by the host compiler with its options).
const KERNELS: &str = r#"
static_assert(__cplusplus == 202002L, "-std=c++20 reaches both sides");
template <class T> concept Small = sizeof(T) <= 4;
template <class T, T V> __global__ void fill(T *p) { p[threadIdx.x] = V; }
template <class T> requires Small<T> __global__ void twice(T *p) { p[threadIdx.x] *= 2; }
template __global__ void fill<int, 5>(int *);
template __global__ void twice<int>(int *);
#ifndef FROM_XCOMPILER
#error "nvcc preprocesses both sides with the host compiler's options"
#endif
int host_side() { return FROM_XCOMPILER; }
"#;

/// nvcc's host code launching the kernels of [`KERNELS`] by their declarations: it links only
/// if the object's stubs have nvcc's names.
const MAIN: &str = r#"
template <class T> concept Small = sizeof(T) <= 4;
template <class T, T V> __global__ void fill(T *p);
template <class T> requires Small<T> __global__ void twice(T *p);
int host_side();
int main() {
    int *p;
    cudaMalloc(&p, 128);
    fill<int, 5><<<1, 32>>>(p);
    twice<int><<<1, 32>>>(p);
    return (int)cudaDeviceSynchronize() + host_side() - 1;
}
"#;

/// A Makefile's nvcc line, unchanged but for the compiler's name.
const MAKEFILE_FLAGS: &[&str] = &[
    "-std=c++20",
    "-O3",
    "-arch=sm_90",
    "-rdc=true",
    "--expt-relaxed-constexpr",
    "--extended-lambda",
    "-lineinfo",
    "-Xcompiler",
    "-fPIC,-DFROM_XCOMPILER=1",
    "-ccbin",
    "g++",
    "-m64",
    "-Wno-deprecated-gpu-targets",
    "-t",
    "2",
    "-Xcudafe",
    "--diag_suppress=177",
    "-dc",
    // KLAP's Makefiles give both (`-dc` in their flags, `-c` in the rule).
    "-c",
];

/// The weak text symbols of an object whose names start with `_Z` (a `-dc` object's kernel stubs).
fn stubs(dir: &Path, object: &str) -> BTreeSet<String> {
    let out = Command::new("nm").current_dir(dir).args(["--defined-only", object]).output().expect("nm runs");
    assert!(out.status.success(), "nm {object}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "W", name] if name.starts_with("_Z") => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_makefiles_nvcc_line_builds_an_object_that_nvccs_host_link_takes() {
    if tool_dir().is_none() || !have("nm") || !have("g++") {
        return;
    }
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernels.cu"), KERNELS).unwrap();
    std::fs::write(dir.path().join("main.cu"), MAIN).unwrap();
    let mut args = MAKEFILE_FLAGS.to_vec();
    args.extend(["kernels.cu", "-o", "ours.o"]);
    let out = cdpc(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut theirs = MAKEFILE_FLAGS.to_vec();
    theirs.extend(["kernels.cu", "-o", "theirs.o"]);
    run(&nvcc, dir.path(), &theirs);
    // nvcc's names (Clang 22's default would be `_Z4fillIiTnT_Li5EEvPS0_` and
    // `_Z5twiceIiQ5SmallIT_EEvPS0_`).
    let ours = stubs(dir.path(), "ours.o");
    assert_eq!(ours, BTreeSet::from(["_Z4fillIiLi5EEvPT_".to_string(), "_Z5twiceIiEvPT_".to_string()]));
    assert!(ours.is_subset(&stubs(dir.path(), "theirs.o")), "cdpc {ours:?}");
    // nvcc's host code launches them by name; `-fPIC` reached the host side's code.
    run(&nvcc, dir.path(), &["-std=c++20", "-arch=sm_90", "-rdc=true", "main.cu", "ours.o", "-o", "app", "-lcudadevrt"]);
    run(Path::new("g++"), dir.path(), &["-shared", "ours.o", "-o", "libours.so"]);
}

#[test]
fn without_std_cxx20_the_dialect_is_cxx17() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "static_assert(__cplusplus == 201703L);\n__global__ void k(int *p) { *p = 1; }\n").unwrap();
    let out = cdpc(dir.path(), &["k.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["k.cu", "--emit", "ptx", "-o", "-", "-std", "c++14"]);
    assert!(!out.status.success() && stderr(&out).contains("static assertion failed"), "{}", stderr(&out));
}

#[test]
fn nvcc_options_cdpc_lacks_are_e0707_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) { *p = 1; }\n").unwrap();
    let out = cdpc(dir.path(), &["-cuda", "k.cu"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error[E0707]: nvcc's option `--cuda` is not in cdpc: cdpc writes no translated host source"), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["k.cu", "--error-format", "json", "-dw"]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!((&lines[0]["code"], &lines[0]["severity"]), (&serde_json::json!("E0707"), &serde_json::json!("error")));
    assert!(!dir.path().join("k.o").exists() && !dir.path().join("k.cubin").exists());
}

/// nvcc's `-fatbin` (CMake's `CUDA_FATBIN_COMPILATION`) and where outputs go that `-o` does
/// not name: the current folder or `-odir`'s, as nvcc 13.5 puts `-ptx`, `-cubin` and `-fatbin`'s
/// (measured), never beside the source. The fat binary holds `-arch`'s cubin and PTX, as
/// nvcc's (`cuobjdump --list-elf --list-ptx`), and `-gencode`'s images where given.
#[test]
fn fatbin_and_default_outputs_as_nvccs() {
    let Some(tools) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("src/k.cu"), "__global__ void child(int *p) { *p = 1; }\n__global__ void parent(int *p) { child<<<1, 1>>>(p); }\n").unwrap();
    let ok = |args: &[&str]| {
        let out = cdpc(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    };
    ok(&["-ptx", "src/k.cu"]);
    ok(&["-cubin", "-arch=sm_90", "src/k.cu"]);
    ok(&["-fatbin", "-arch=sm_90", "src/k.cu"]);
    ok(&["-fatbin", "-arch=sm_80", "src/k.cu", "-odir", "out"]);
    ok(&["-fatbin", "src/k.cu", "-gencode", "arch=compute_90,code=sm_90", "-o", "only-cubin.fatbin"]);
    for made in ["k.ptx", "k.cubin", "k.fatbin", "out/k.fatbin", "only-cubin.fatbin"] {
        assert!(dir.path().join(made).is_file(), "{made}");
    }
    for absent in ["src/k.ptx", "src/k.cubin", "src/k.fatbin", "a.out", "k"] {
        assert!(!dir.path().join(absent).exists(), "{absent} was written");
    }
    let cuobjdump = tools.join("cuobjdump");
    if !cuobjdump.is_file() {
        println!("skipped the images' check: no cuobjdump beside ptxas");
        return;
    }
    let images = |file: &str| {
        let out = Command::new(&cuobjdump).current_dir(dir.path()).args(["--list-elf", "--list-ptx", file]).output().expect("cuobjdump runs");
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.rsplit('.').nth(1).map(|arch| format!("{arch}.{}", l.rsplit('.').next().unwrap_or("")))).collect::<Vec<_>>()
    };
    assert_eq!(images("k.fatbin"), ["sm_90.cubin", "sm_90.ptx"]);
    assert_eq!(images("out/k.fatbin"), ["sm_80.cubin", "sm_80.ptx"]);
    assert_eq!(images("only-cubin.fatbin"), ["sm_90.cubin"]);
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-fatbin", "-rdc=true", "-arch=sm_90", "src/k.cu", "-o", "theirs.fatbin"]);
        assert_eq!(images("theirs.fatbin"), images("k.fatbin"));
    }
    // -fatbin writes device code, not an object
    let out = cdpc(dir.path(), &["-fatbin", "-dc", "src/k.cu"]);
    assert!(out.status.code() == Some(2) && stderr(&out).contains("`-fatbin` writes a fat binary of device code"), "{}", stderr(&out));
}

/// CMake's lines for one file's device code (`CUDA_PTX_COMPILATION`, and from 3.27
/// `CUDA_CUBIN_COMPILATION` and `CUDA_FATBIN_COMPILATION`): `-ptx`, `-cubin` or `-fatbin` with the
/// architectures' `--generate-code` and `-MD -MT -MF`. `-ptx` takes the images of one
/// architecture, `-cubin` one image, as nvcc 13.5 does (more is its error and cdpc's); each
/// writes its dependency list, a fat binary of cubins alone too.
#[test]
fn device_outputs_take_cmakes_generate_code_and_dependency_lists() {
    let Some(_) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.h"), "#define N 1\n").unwrap();
    std::fs::write(dir.path().join("k.cu"), "#include \"k.h\"\n__global__ void child(int *p) { *p = N; }\n__global__ void parent(int *p) { child<<<1, 1>>>(p); }\n").unwrap();
    let both = "--generate-code=arch=compute_90,code=[compute_90,sm_90]";
    let real = "--generate-code=arch=compute_90,code=[sm_90]";
    let other = "--generate-code=arch=compute_80,code=[compute_80,sm_80]";
    let built = |args: &[&str], output: &str| {
        let out = cdpc(dir.path(), &[args, &["-MD", "-MT", output, "-MF", &format!("{output}.d"), "-x", "cu", "k.cu", "-o", output][..]].concat());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let list = std::fs::read_to_string(dir.path().join(format!("{output}.d"))).unwrap();
        assert!(list.starts_with(&format!("{output} : k.cu \\\n")) && prerequisites(&list).iter().any(|p| p == "k.h"), "{args:?}: {list}");
        std::fs::read(dir.path().join(output)).unwrap()
    };
    let ptx = String::from_utf8(built(&["-ptx", both], "k.ptx")).unwrap();
    assert!(ptx.contains(".target sm_90") && ptx.contains(".entry"), "{ptx}");
    let cubin = built(&["-cubin", real], "k.cubin");
    assert!(cubin.starts_with(b"\x7fELF") && cubin.get(18..20) == Some(&[190, 0][..]), "not a CUDA ELF");
    let fatbin = built(&["-fatbin", both], "k.fatbin");
    assert!(fatbin.starts_with(&[0x50, 0xed, 0x55, 0xba]), "not a fat binary");
    // Cubins alone: the list comes from the cubins' own compilation (CUDA C++ and the kernel
    // language).
    let fatbin = built(&["-fatbin", real], "real.fatbin");
    assert!(fatbin.starts_with(&[0x50, 0xed, 0x55, 0xba]), "not a fat binary");
    std::fs::write(dir.path().join("k.cdp"), "#include \"k.h\"\nextern \"C\" __global__ void child(int *p) { *p = N; }\n").unwrap();
    let out = cdpc(dir.path(), &["-fatbin", real, "-MD", "k.cdp", "-o", "cdp.fatbin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = std::fs::read_to_string(dir.path().join("cdp.d")).unwrap();
    assert!(list.starts_with("cdp.fatbin : k.cdp \\\n") && prerequisites(&list).iter().any(|p| p == "k.h"), "{list}");
    for (args, says) in [(&["-ptx", both, other][..], "`-ptx` writes the PTX of one architecture"), (&["-cubin", both], "`-cubin` writes one cubin")] {
        let out = cdpc(dir.path(), &[args, &["k.cu", "-o", "no.out"][..]].concat());
        assert!(out.status.code() == Some(2) && stderr(&out).contains(says) && !dir.path().join("no.out").exists(), "{args:?}: {}", stderr(&out));
    }
}

/// nvcc's `-run`: the program built (`a.out`, or `-o`'s, left in place), then run with
/// `-run-args` (comma-separated, each item split at spaces as nvcc's shell does), cdpc's exit
/// status the program's; a program already built runs without compiling; with `-c` and the
/// like a usage error. The program touches no GPU, so the outputs and statuses are nvcc's
/// for the same command lines wherever nvcc is found.
#[test]
fn run_builds_the_program_and_runs_it_as_nvccs() {
    let (Some(tools), true) = (tool_dir(), have("c++")) else {
        println!("skipped: no CUDA toolkit or no host compiler `c++`");
        return;
    };
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.cu"), "#include <cstdio>\nint main(int argc, char **argv) { for (int i = 1; i < argc; i++) printf(\"[%s]\", argv[i]); printf(\" %d\\n\", argc); return 3; }\n")
        .unwrap();
    let ran = |program: &Path, args: &[&str]| {
        let out = Command::new(program).current_dir(dir.path()).env("PATH", &path).args(args).output().expect("the compiler runs");
        (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code())
    };
    let cdpc_program = Path::new(env!("CARGO_BIN_EXE_cdpc"));
    let lines: [&[&str]; 3] = [&["-run", "h.cu", "-run-args", "x,y"], &["-run", "h.cu", "-o", "prog", "--run-args", "a b", "--run-args", "c"], &["-run", "./prog", "-run-args", "z"]];
    let ours: Vec<_> = lines.iter().map(|args| ran(cdpc_program, args)).collect();
    assert_eq!(ours, [("[x][y] 3\n".to_string(), Some(3)), ("[a][b][c] 4\n".to_string(), Some(3)), ("[z] 2\n".to_string(), Some(3))]);
    assert!(dir.path().join("a.out").is_file() && dir.path().join("prog").is_file());
    let out = cdpc(dir.path(), &["-run", "-c", "h.cu"]);
    assert!(out.status.code() == Some(2) && stderr(&out).contains("`-run` builds a program and runs it") && !dir.path().join("h.o").exists(), "{}", stderr(&out));
    let Some(nvcc) = nvcc() else { return };
    let theirs: Vec<_> = lines.iter().map(|args| ran(&nvcc, args)).collect();
    assert_eq!(ours, theirs);
}

/// nvcc's `-time FILE`: the phases' times appended to the file as a table, its heading (nvcc
/// 13.5's, measured) only where the file was empty, every row of nvcc's eight columns; `-`
/// writes it to standard output, and a file that cannot be written fails the command, as nvcc's
/// (`Cannot open file`).
#[test]
fn time_appends_nvccs_table() {
    let Some(_) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) { *p = 1; }\n").unwrap();
    const HEADING: &str = "source file name , phase name , phase input files , phase output file , arch , tool, metric , unit";
    for args in [&["-time", "t.csv", "-ptx", "k.cu"][..], &["-time", "t.csv", "-dc", "k.cu"], &["-time", "t.csv", "-cubin", "k.cu", "-o", "k.cubin"]] {
        let out = cdpc(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let table = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows[0], HEADING);
    assert_eq!(rows.iter().filter(|r| **r == HEADING).count(), 1, "{table}");
    assert!(rows.iter().all(|r| r.split(',').count() == 8), "{table}");
    assert_eq!(rows.iter().filter(|r| r.starts_with(" , cdpc (total) ,")).count(), 3, "{table}");
    assert!(rows.iter().any(|r| r.starts_with("k.cu , ptxas , k.cu  , k.o , sm_90 , cdpc , ") && r.ends_with(" , ms")), "{table}");
    let out = cdpc(dir.path(), &["-time", "-", "-ptx", "k.cu", "-o", "k.ptx"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && text.starts_with(HEADING) && text.contains("k.cu , llvm-opt-ptx , k.cu  , k.ptx , sm_90 , cdpc , "), "{text}{}", stderr(&out));
    let out = cdpc(dir.path(), &["-time", "no/such/folder/t.csv", "-ptx", "k.cu"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no/such/folder/t.csv"), "{}", stderr(&out));
    if let Some(nvcc) = nvcc() {
        let out = run(&nvcc, dir.path(), &["-time", "n.csv", "-ptx", "k.cu", "-o", "n.ptx"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let theirs = std::fs::read_to_string(dir.path().join("n.csv")).unwrap();
        assert_eq!(theirs.lines().next(), Some(HEADING));
        assert!(theirs.lines().all(|r| r.split(',').count() == 8), "{theirs}");
    }
}

#[test]
fn command_lines_cdpc_cannot_read_are_e0708() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["k.cu", "--no-such-option"][..], "unknown option `--no-such-option`"),
        // Named whole, where clap named `-W`.
        (&["k.cu", "-Wall"], "unknown option `-Wall`: neither cdpc nor nvcc has it"),
        (&["k.cu", "-std=c++99"], "`c++99` is not one of nvcc's dialects"),
        (&["k.cu", "-ccbin"], "`-ccbin` needs a value"),
    ] {
        let out = cdpc(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let text = stderr(&out);
        assert!(text.starts_with("error[E0708]: ") && text.contains(says), "{args:?}: {text}");
        assert!(!text.contains("Usage:") && !text.contains("tip:"), "{text}");
    }
    // An unknown option says where the known ones are.
    let text = stderr(&cdpc(dir.path(), &["k.cu", "--no-such-option"]));
    assert!(text.contains("`cdpc --help` lists cdpc's options, and nvcc's are read too"), "{text}");
    let out = cdpc(dir.path(), &["--error-format=json", "k.cu", "--no-such-option"]);
    assert_eq!(json_lines(&out)[0]["code"], serde_json::json!("E0708"));
    // Help is not an error.
    let out = cdpc(dir.path(), &["--help"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--Xcompiler"));
}

#[test]
fn disable_warnings_silences_clang_and_cdpc() {
    let dir = tempfile::tempdir().unwrap();
    // Clang's warning (a double constant made an int) and cdpc's own (W0209, no return value).
    std::fs::write(dir.path().join("w.cu"), "__global__ void k(int *p) { int x = 1.5; *p = x; }\n").unwrap();
    std::fs::write(dir.path().join("w.cdp"), "__device__ int f(int x) { if (x) return 1; }\n__global__ void k(int *p) { *p = f(*p); }\n").unwrap();
    for file in ["w.cu", "w.cdp"] {
        let loud = cdpc(dir.path(), &[file, "--emit", "ptx", "-o", "-"]);
        assert!(loud.status.success() && stderr(&loud).contains("warning"), "{file}: {}", stderr(&loud));
        let quiet = cdpc(dir.path(), &[file, "--emit", "ptx", "-o", "-", "-w"]);
        assert!(quiet.status.success() && stderr(&quiet).is_empty(), "{file}: {}", stderr(&quiet));
        assert_eq!(quiet.stdout, loud.stdout, "{file}: -w changes no code");
    }
}

#[test]
fn deprecation_warnings_can_be_turned_off_as_with_nvcc() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.cu"), "[[deprecated(\"use g\")]] __device__ int f(int x) { return x; }\n__global__ void k(int *p) { *p = f(*p); }\n").unwrap();
    let loud = cdpc(dir.path(), &["d.cu", "--emit", "ptx", "-o", "-"]);
    assert!(loud.status.success() && stderr(&loud).contains("'f' is deprecated: use g"), "{}", stderr(&loud));
    let quiet = cdpc(dir.path(), &["d.cu", "--emit", "ptx", "-o", "-", "-Wno-deprecated-declarations"]);
    assert!(quiet.status.success() && stderr(&quiet).is_empty(), "{}", stderr(&quiet));
}

#[test]
fn isystem_folders_are_searched_after_the_include_folders() {
    let dir = tempfile::tempdir().unwrap();
    for (folder, value) in [("sys", 1), ("inc", 2)] {
        std::fs::create_dir(dir.path().join(folder)).unwrap();
        std::fs::write(dir.path().join(folder).join("value.h"), format!("#define VALUE {value}\n")).unwrap();
    }
    let source = "#include <value.h>\n__global__ void k(int *p) { *p = VALUE + 40; }\n";
    for file in ["k.cu", "k.cdp"] {
        std::fs::write(dir.path().join(file), source).unwrap();
        let ptx = |args: &[&str]| {
            let mut all = vec![file, "--emit", "ptx", "-o", "-"];
            all.extend_from_slice(args);
            let out = cdpc(dir.path(), &all);
            assert!(out.status.success(), "{file} {args:?}: {}", stderr(&out));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        assert!(ptx(&["-isystem", "sys"]).contains(", 41;"), "{file}: the system folder's header");
        assert!(ptx(&["--system-include=sys", "-I", "inc"]).contains(", 42;"), "{file}: -I before -isystem");
    }
}

#[test]
fn register_limits_and_resource_usage_reach_ptxas() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Sixteen running sums that stay live across the loop.
    let mut source = String::from("__global__ void k(const float *in, float *out, int n) {\n");
    for i in 0..16 {
        source.push_str(&format!("    float s{i} = in[{i}];\n"));
    }
    source.push_str("    for (int j = 0; j < n; ++j) {\n        float x = in[j + threadIdx.x];\n");
    for i in 0..16 {
        source.push_str(&format!("        s{i} = s{i} * x + {i}.5f;\n"));
    }
    source.push_str("    }\n");
    for i in 0..16 {
        source.push_str(&format!("    out[{i}] = s{i};\n"));
    }
    source.push_str("}\n");
    std::fs::write(dir.path().join("r.cu"), source).unwrap();
    let registers = |args: &[&str]| -> u32 {
        let mut all = vec!["r.cu", "-o", "r.cubin", "-res-usage"];
        all.extend_from_slice(args);
        let out = cdpc(dir.path(), &all);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stderr(&out);
        let used = text.split("Used ").nth(1).unwrap_or_else(|| panic!("ptxas's resource usage: {text}"));
        used.split_whitespace().next().unwrap().parse().unwrap()
    };
    let free = registers(&[]);
    assert!(free > 24, "{free} registers without a limit");
    assert!(registers(&["-maxrregcount=24"]) <= 24);
    assert!(registers(&["--maxrregcount", "24"]) <= 24);
}

/// A source with a header beside it, one on the `-I` path and one on the `-isystem` path.
fn sources_with_headers(dir: &Path, file: &str) {
    for folder in ["inc", "sys"] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
    }
    std::fs::write(dir.join("local.h"), "#define LOCAL 1\n").unwrap();
    std::fs::write(dir.join("inc/v.h"), "#define V 2\n").unwrap();
    std::fs::write(dir.join("sys/s.h"), "#define S 3\n").unwrap();
    std::fs::write(dir.join(file), "#include \"local.h\"\n#include <v.h>\n#include <s.h>\n__global__ void k(int *p) { *p = LOCAL + V + S; }\n").unwrap();
}

/// The paths of a Make rule's prerequisites, as `cdpc::front::cuda::preamble::parse_depfile` reads them.
fn prerequisites(text: &str) -> Vec<String> {
    cdpc::front::cuda::preamble::parse_depfile(text).iter().map(|p| p.display().to_string()).collect()
}

#[test]
fn dependency_lists_name_the_headers_nvcc_names() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    for file in ["a.cu", "b.cdp"] {
        sources_with_headers(dir.path(), file);
        let out = cdpc(dir.path(), &["-dc", "-MMD", "-MP", file, "-Iinc", "-isystem", "sys", "-o", "out/x.o"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        let list = std::fs::read_to_string(dir.path().join("out/x.d")).unwrap();
        assert_eq!(list, format!("out/x.o : {file} \\\n    local.h \\\n    inc/v.h\n\nlocal.h:\n\ninc/v.h:\n"), "{file}");
    }
    // nvcc's list of the same compilation names the same headers of the user's (its own -MMD
    // also lists the toolkit's headers, which cdpc's, like gcc's, counts as the system's).
    let Some(nvcc) = nvcc() else { return };
    run(&nvcc, dir.path(), &["-dc", "-MMD", "a.cu", "-Iinc", "-isystem", "sys", "-o", "out/n.o"]);
    let theirs = prerequisites(&std::fs::read_to_string(dir.path().join("out/n.d")).unwrap());
    let cuda = tool_dir().unwrap().parent().unwrap().display().to_string();
    let users: Vec<&String> = theirs.iter().filter(|p| !p.contains(&cuda) && !p.starts_with("/usr/")).collect();
    assert_eq!(users, ["a.cu", "local.h", "inc/v.h"]);
}

#[test]
fn every_header_of_md_exists_under_the_name_it_is_given() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    sources_with_headers(dir.path(), "a.cu");
    std::fs::write(dir.path().join("a.cu"), format!("#include <vector>\n{}", std::fs::read_to_string(dir.path().join("a.cu")).unwrap())).unwrap();
    let out = cdpc(dir.path(), &["a.cu", "--emit", "ptx", "-MD", "-Iinc", "-isystem", "sys", "-MT", "my target"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = std::fs::read_to_string(dir.path().join("a.d")).unwrap();
    assert!(list.starts_with("my target : a.cu \\\n"), "{list}");
    let files = prerequisites(&list);
    for wanted in ["local.h", "inc/v.h", "sys/s.h"] {
        assert!(files.iter().any(|f| f == wanted), "{wanted} in {files:?}");
    }
    assert!(files.iter().any(|f| f.ends_with("/vector")) && files.iter().any(|f| f.ends_with("__clang_cuda_runtime_wrapper.h")), "{files:?}");
    // make and CMake drop `..` steps as text: no file is named through one.
    for file in &files {
        assert!(!file.contains("/../") && dir.path().join(file).exists(), "{file} does not exist");
    }
}

#[test]
fn make_rebuilds_an_object_when_its_header_changes() {
    if tool_dir().is_none() || !have("make") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    sources_with_headers(dir.path(), "a.cu");
    let makefile = format!("a.o: a.cu\n\t{} -dc -MMD -MP -Iinc -isystem sys a.cu -o a.o\n-include a.d\n", env!("CARGO_BIN_EXE_cdpc"));
    std::fs::write(dir.path().join("Makefile"), makefile).unwrap();
    let make = || {
        let out = Command::new("make").current_dir(dir.path()).output().expect("make runs");
        assert!(out.status.success(), "make: {}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(make().contains("-dc -MMD"));
    assert!(make().contains("up to date"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(dir.path().join("inc/v.h"), "#define V 5\n").unwrap();
    assert!(make().contains("-dc -MMD"), "a changed header rebuilds");
    // A header removed with its #include: -MP's empty rules keep make from failing.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(dir.path().join("a.cu"), "#include \"local.h\"\n__global__ void k(int *p) { *p = LOCAL; }\n").unwrap();
    std::fs::remove_file(dir.path().join("inc/v.h")).unwrap();
    assert!(make().contains("-dc -MMD"));
}

/// nvcc's `-M` and `-MM` (older Makefiles' `depend` rules): nothing compiled to a file, a rule
/// per source for `<stem>.o` (`-odir`'s, `-MT`'s) as nvcc 13.5 writes it, to standard output,
/// `-o`'s or `-MF`'s file; `-M` lists what `-dc -MD` lists, `-MM` what `-dc -MMD` does; a
/// source that does not preprocess writes nothing, and one with an error only a compilation
/// finds is listed, as nvcc's `-M` lists it.
#[test]
fn dependency_rules_alone_as_nvccs_m_and_mm() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    sources_with_headers(dir.path(), "a.cu");
    std::fs::copy(dir.path().join("a.cu"), dir.path().join("b.cu")).unwrap();
    let text = |out: &std::process::Output| {
        assert!(out.status.success(), "{}", stderr(out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    fn with<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["-Iinc", "-isystem", "sys"][..]].concat()
    }
    // -MM: the user's headers, one rule per source, -odir's folder, -MP's empty rules
    let two = text(&cdpc(dir.path(), &with(&["-MM", "a.cu", "b.cu", "-odir", "obj", "-MP"])));
    assert_eq!(two, "obj/a.o : a.cu \\\n    local.h \\\n    inc/v.h\n\nlocal.h:\n\ninc/v.h:\nobj/b.o : b.cu \\\n    local.h \\\n    inc/v.h\n\nlocal.h:\n\ninc/v.h:\n");
    // -M: every header, the list of `-dc -MD`'s compilation (cdpc's cache off: a compilation
    // through its precompiled CUDA wrapper does not list GCC's `stddef.h` and `stdarg.h`, which
    // Clang's own look for, docs/BUILDING.md)
    let no_cache = [("CDPC_CACHE_DIR", "")];
    let all = text(&crate::build_common::cdpc_env(dir.path(), &with(&["-M", "a.cu"]), &no_cache));
    assert!(all.starts_with("a.o : a.cu \\\n"), "{all}");
    let out = crate::build_common::cdpc_env(dir.path(), &with(&["-dc", "-MD", "a.cu", "-o", "md.o"]), &no_cache);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(prerequisites(&all), prerequisites(&std::fs::read_to_string(dir.path().join("md.d")).unwrap()));
    assert!(prerequisites(&all).iter().any(|f| f == "sys/s.h"), "{all}");
    // to -o's file, to -MF's (over -o's), with -MT's target; nothing else written
    assert!(text(&cdpc(dir.path(), &with(&["-MM", "a.cu", "-o", "deps.d"]))).is_empty());
    assert_eq!(std::fs::read_to_string(dir.path().join("deps.d")).unwrap(), "a.o : a.cu \\\n    local.h \\\n    inc/v.h\n");
    assert!(text(&cdpc(dir.path(), &with(&["-MM", "-MF", "mf.d", "-MT", "my target", "a.cu", "-o", "other.d"]))).is_empty());
    assert_eq!(std::fs::read_to_string(dir.path().join("mf.d")).unwrap(), "my target : a.cu \\\n    local.h \\\n    inc/v.h\n");
    for absent in ["a.o", "b.o", "obj", "other.d", "a.d"] {
        assert!(!dir.path().join(absent).exists(), "{absent} was written");
    }
    // a source that does not preprocess: its error, and no list
    std::fs::write(dir.path().join("bad.cu"), "#include \"missing.h\"\n__global__ void k() {}\n").unwrap();
    let out = cdpc(dir.path(), &with(&["-M", "a.cu", "bad.cu", "-o", "bad.d"]));
    assert!(!out.status.success() && stderr(&out).contains("missing.h") && !dir.path().join("bad.d").exists(), "{}", stderr(&out));
    // an error only a compilation finds: the list all the same, as nvcc's `-M` (its
    // preprocessor's) gives it
    std::fs::write(dir.path().join("semantic.cu"), "__global__ void k() { undeclared_name; }\n").unwrap();
    let out = cdpc(dir.path(), &with(&["-M", "semantic.cu", "-o", "semantic.d"]));
    assert!(out.status.success() && std::fs::read_to_string(dir.path().join("semantic.d")).unwrap().starts_with("semantic.o : semantic.cu"), "{}", stderr(&out));
    // nvcc's rules for the same command lines: the same targets and the same headers of the user's
    let Some(nvcc) = nvcc() else { return };
    run(&nvcc, dir.path(), &with(&["-M", "semantic.cu", "-o", "semantic-nvcc.d"]));
    let theirs = run(&nvcc, dir.path(), &with(&["-MM", "a.cu", "b.cu", "-odir", "obj"]));
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let cuda = tool_dir().unwrap().parent().unwrap().display().to_string();
    let rules = |t: &str| t.lines().filter(|l| !l.starts_with(' ') && !l.is_empty()).map(String::from).collect::<Vec<_>>();
    assert_eq!(rules(&theirs), ["obj/a.o : a.cu \\", "obj/b.o : b.cu \\"], "{theirs}");
    // each rule's prerequisites, the toolkit's and the system's left out
    let users: Vec<Vec<String>> = theirs
        .replace("\\\n", " ")
        .lines()
        .filter_map(|rule| rule.split_once(" : "))
        .map(|(_, prerequisites)| prerequisites.split_whitespace().filter(|p| !p.contains(&cuda) && !p.starts_with("/usr/")).map(String::from).collect())
        .collect();
    assert_eq!(users, [["a.cu", "local.h", "inc/v.h"], ["b.cu", "local.h", "inc/v.h"]], "{theirs}");
}

/// Preprocessed host files, as nvcc 13.5 takes them (measured with `-dryrun`): `.ii` is C++
/// and `.i` is C, compiled by the host compiler (`-x c++`, `-x c`) without the command line's
/// macros, applied already; device code in one is the host compiler's error, as nvcc's. The
/// objects define the symbols nvcc's define.
#[test]
fn preprocessed_host_files_are_the_host_compilers() {
    if tool_dir().is_none() || !have("nm") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // `V` defined in the file: the command line's `-DV=2` does not reach it (a redefinition)
    std::fs::write(dir.path().join("f.ii"), "#define V 1\nint f(int x) { return x + V; }\n").unwrap();
    std::fs::write(dir.path().join("g.i"), "#define V 1\nint g(int x) { return x + V; }\n").unwrap();
    std::fs::write(dir.path().join("k.ii"), "__global__ void k() {}\n").unwrap();
    let defined = |object: &str| {
        let out = Command::new("nm").current_dir(dir.path()).args(["--defined-only", object]).output().expect("nm runs");
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().last().map(String::from)).collect::<BTreeSet<String>>()
    };
    for (file, symbol) in [("f.ii", "_Z1fi"), ("g.i", "g")] {
        let out = cdpc(dir.path(), &["-c", "-DV=2", file, "-o", "ours.o"]);
        assert!(out.status.success() && !stderr(&out).contains("redefined"), "{file}: {}", stderr(&out));
        assert_eq!(defined("ours.o"), BTreeSet::from([symbol.to_string()]), "{file}");
        if let Some(nvcc) = nvcc() {
            run(&nvcc, dir.path(), &["-c", "-DV=2", file, "-o", "theirs.o"]);
            assert_eq!(defined("theirs.o"), defined("ours.o"), "{file}");
        }
    }
    let out = cdpc(dir.path(), &["-c", "k.ii", "-o", "k.o"]);
    assert!(!out.status.success() && stderr(&out).contains("host compiler") && !dir.path().join("k.o").exists(), "{}", stderr(&out));
}

/// A host file's dependency list is its host compiler's, as nvcc's (nvcc 13.5 runs `gcc -E -M`
/// for `-M` and passes `-MD` to `gcc -c`): `-M`/`-MM` alone, `-c -MD`/`-MMD` beside the object,
/// the same text as nvcc's for the same command lines; nothing written where the host compiler
/// fails.
#[test]
fn host_files_list_their_headers_as_nvccs() {
    if tool_dir().is_none() {
        eprintln!("skipped: no CUDA toolkit found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inc")).unwrap();
    std::fs::write(dir.path().join("inc/x.h"), "#define X 1\n").unwrap();
    std::fs::write(dir.path().join("g.cpp"), "#include <x.h>\n#include <cstdio>\nint f() { return X; }\n").unwrap();
    std::fs::write(dir.path().join("bad.cpp"), "#include \"missing.h\"\n").unwrap();
    let text = |out: &std::process::Output| {
        assert!(out.status.success(), "{}", stderr(out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let read = |file: &str| std::fs::read_to_string(dir.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    // -MM: the user's header alone; -M: the C++ library's too
    assert_eq!(text(&cdpc(dir.path(), &["-MM", "-Iinc", "g.cpp"])), "g.o : g.cpp \\\n    inc/x.h\n");
    let all = text(&cdpc(dir.path(), &["-M", "-Iinc", "g.cpp", "-odir", "obj"]));
    assert!(all.starts_with("obj/g.o : g.cpp \\\n") && prerequisites(&all).iter().any(|p| p.ends_with("/cstdio")), "{all}");
    assert!(prerequisites(&all).contains(&"inc/x.h".to_string()), "{all}");
    // beside the object: -MD's name from -o's, -MMD's the user's headers
    assert!(text(&cdpc(dir.path(), &["-c", "-MD", "-Iinc", "g.cpp"])).is_empty());
    assert!(dir.path().join("g.o").is_file());
    assert_eq!(prerequisites(&read("g.d")), prerequisites(&all.replace("obj/g.o", "g.o")));
    text(&cdpc(dir.path(), &["-c", "-MMD", "-Iinc", "g.cpp", "-o", "obj.o"]));
    assert_eq!(read("obj.d"), "obj.o : g.cpp \\\n    inc/x.h\n");
    // the host compiler's error: no list, no object
    for args in [&["-M", "bad.cpp", "-o", "bad.d"][..], &["-c", "-MD", "bad.cpp"]] {
        let out = cdpc(dir.path(), args);
        assert!(!out.status.success() && stderr(&out).contains("missing.h"), "{args:?}: {}", stderr(&out));
        assert!(!dir.path().join("bad.d").exists() && !dir.path().join("bad.o").exists(), "{args:?}");
    }
    // nvcc's lists for the same command lines, text for text
    let Some(nvcc) = nvcc() else { return };
    for (args, file) in [
        (&["-M", "-Iinc", "g.cpp", "-o", "m.d"][..], "m.d"),
        (&["-MM", "-Iinc", "g.cpp", "-o", "m.d"], "m.d"),
        (&["-c", "-MD", "-Iinc", "g.cpp"], "g.d"),
        (&["-c", "-MMD", "-Iinc", "g.cpp", "-o", "obj.o"], "obj.d"),
    ] {
        run(&nvcc, dir.path(), args);
        let theirs = read(file);
        text(&cdpc(dir.path(), args));
        assert_eq!(read(file), theirs, "{args:?}");
    }
}

#[test]
fn dependency_options_outside_one_compilation_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["-dc", "-MD", "-MF", "x.d", "a.cu", "b.cu"][..], "`-MF` names the dependency list of one source"),
        (&["-MD", "a.o", "b.o", "-o", "app.cubin"], "`-MD` lists the headers of one compilation"),
        (&["-MF", "x.d", "a.cu"], "`-MF`, `-MT` and `-MP` shape the dependency list"),
    ] {
        let out = cdpc(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// A kernel that uses sm_90a's own instruction where nvcc's mark of the target says it may,
/// launched from the device.
const ARCH_SPECIFIC: &str = r#"
__global__ void child(int *p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    p[threadIdx.x] = 90;
#else
    p[threadIdx.x] = 1;
#endif
}
__global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 128>>>(p); }
"#;

#[test]
fn architecture_specific_targets_are_nvccs() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.cu"), ARCH_SPECIFIC).unwrap();
    std::fs::write(dir.path().join("a.cdp"), ARCH_SPECIFIC).unwrap();
    run(&nvcc, dir.path(), &["-arch=sm_90a", "-rdc=true", "-ptx", "a.cu", "-o", "nvcc.ptx"]);
    let theirs = std::fs::read_to_string(dir.path().join("nvcc.ptx")).unwrap();
    let marks = |ptx: &str| (ptx.lines().find(|l| l.starts_with(".target")).map(str::to_string), ptx.contains("setmaxnreg.inc.sync.aligned.u32 240;"));
    assert_eq!(marks(&theirs), (Some(".target sm_90a".to_string()), true));
    for file in ["a.cu", "a.cdp"] {
        let out = cdpc(dir.path(), &[file, "-arch=sm_90a", "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        assert_eq!(marks(&String::from_utf8_lossy(&out.stdout)), marks(&theirs), "{file}");
        // Without the suffix the mark is not there, as with nvcc.
        let plain = cdpc(dir.path(), &[file, "-arch=sm_90", "--emit", "ptx", "-o", "-"]);
        assert_eq!(marks(&String::from_utf8_lossy(&plain.stdout)), (Some(".target sm_90".to_string()), false), "{file}");
    }
    // A linked cubin, a -dc object nvcc's host link takes, a fat binary of both targets.
    for args in [
        &["a.cu", "-arch=sm_90a", "-o", "a.cubin"][..],
        &["-dc", "a.cu", "-arch=sm_90a", "-o", "a.o"],
        &["a.cu", "-o", "a.fatbin", "-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_90,code=sm_90"],
    ] {
        let out = cdpc(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    std::fs::write(dir.path().join("main.cu"), "__global__ void parent(int *);\nint main() { parent<<<1, 1>>>(nullptr); return 0; }\n").unwrap();
    run(&nvcc, dir.path(), &["-arch=sm_90a", "-rdc=true", "main.cu", "a.o", "-o", "app", "-lcudadevrt"]);
    let listed = Command::new(tool_dir().unwrap().join("cuobjdump")).current_dir(dir.path()).args(["-lelf", "a.fatbin"]).output();
    if let Ok(listed) = listed {
        let text = String::from_utf8_lossy(&listed.stdout);
        assert!(text.contains("sm_90a") && text.contains("sm_90."), "{text}");
    }
    // What nvcc refuses or cdpc cannot write.
    let out = cdpc(dir.path(), &["a.cu", "-o", "x.fatbin", "-gencode", "arch=compute_90,code=sm_90a"]);
    assert!(stderr(&out).contains("`sm_90a` cannot be built from `compute_90`"), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["a.cu", "-arch=sm_100f"]);
    assert!(stderr(&out).starts_with("error[E0708]") && stderr(&out).contains("family-specific"), "{}", stderr(&out));
}

/// A child whose code differs by architecture, a parent that launches it, and a host function.
const PER_ARCHITECTURE: &str = r#"
__global__ void child(int *p) {
#if __CUDA_ARCH__ >= 900
    p[threadIdx.x] = 90;
#else
    p[threadIdx.x] = 80;
#endif
}
__global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }
int run(int *p) { parent<<<1, 1>>>(p); return (int)cudaDeviceSynchronize(); }
"#;

/// What `cuobjdump -lelf -lptx` lists of an object, without the object's own name.
fn images(dir: &Path, object: &str) -> Vec<String> {
    let out = Command::new(tool_dir().unwrap().join("cuobjdump")).current_dir(dir).args(["-lelf", "-lptx", object]).output().expect("cuobjdump runs");
    assert!(out.status.success(), "cuobjdump {object}: {}", stderr(&out));
    let stem = object.trim_end_matches(".o");
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.replace(stem, "OBJECT")).collect()
}

#[test]
fn dc_with_several_gencode_targets_is_one_object_as_nvccs() {
    let Some(nvcc) = nvcc() else { return };
    if !tool_dir().unwrap().join("cuobjdump").is_file() {
        return println!("skipped: no cuobjdump beside ptxas");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), PER_ARCHITECTURE).unwrap();
    std::fs::write(dir.path().join("main.cu"), "int run(int *);\nint main() { int *p; cudaMalloc(&p, 128); return run(p); }\n").unwrap();
    // CMake's spelling of CMAKE_CUDA_ARCHITECTURES="80;90".
    let gencode = ["--generate-code=arch=compute_80,code=[sm_80]", "--generate-code=arch=compute_90,code=[compute_90,sm_90]"];
    let mut args = vec!["-dc", "k.cu", "-o", "ours.o"];
    args.extend(gencode);
    let out = cdpc(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    // The architectures' ptxas runs at the same time; `-v` lists them in the images' order,
    // and the object is the same bytes every time.
    let mut verbose = vec!["-v", "-dc", "k.cu", "-o", "again.o"];
    verbose.extend(gencode);
    let out = cdpc(dir.path(), &verbose);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptxas: Vec<String> = stderr(&out).lines().filter(|l| l.contains("ptxas")).filter_map(|l| l.split_whitespace().find(|w| w.starts_with("-arch=")).map(str::to_string)).collect();
    assert_eq!(ptxas, ["-arch=sm_80", "-arch=sm_90"], "{}", stderr(&out));
    assert_eq!(std::fs::read(dir.path().join("ours.o")).unwrap(), std::fs::read(dir.path().join("again.o")).unwrap());
    let mut theirs = vec!["-dc", "k.cu", "-o", "theirs.o"];
    theirs.extend(gencode);
    run(&nvcc, dir.path(), &theirs);
    assert_eq!(images(dir.path(), "ours.o"), images(dir.path(), "theirs.o"));
    // Each cubin is its architecture's code: the child stores 80 on sm_80 and 90 on sm_90.
    let sass = |arch: &str| {
        let out = Command::new(tool_dir().unwrap().join("cuobjdump")).current_dir(dir.path()).args(["-sass", "-arch", arch, "ours.o"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(sass("sm_80").contains("0x50 ") && !sass("sm_80").contains("0x5a"), "{}", sass("sm_80"));
    assert!(sass("sm_90").contains("0x0000005a") && !sass("sm_90").contains("0x50 "), "{}", sass("sm_90"));
    // nvcc's host link takes it for either architecture.
    for arch in ["-arch=sm_80", "-arch=sm_90"] {
        run(&nvcc, dir.path(), &[arch, "-rdc=true", "main.cu", "ours.o", "-o", "app", "-lcudadevrt"]);
    }
    // A device object (`--emit obj`) and the kernel language take one architecture.
    std::fs::write(dir.path().join("k.cdp"), "__global__ void k(int *p) { *p = 1; }\n").unwrap();
    for (args, says) in [
        (&["-dc", "--emit", "obj", "k.cu", "-gencode", "arch=compute_90,code=sm_90"][..], "a device object is for one architecture"),
        (&["-dc", "k.cdp", "-gencode", "arch=compute_90,code=sm_90"], "is for CUDA C++"),
    ] {
        let out = cdpc(dir.path(), args);
        assert!(!out.status.success() && stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// Every architecture the toolkit's nvcc lists (`--list-gpu-code`, the oracle) either compiles
/// through both front ends to a cubin whose `.target` is that architecture, or is refused on the
/// command line with `E0708` where LLVM 22 does not know it (CUDA 13's sm_107): never a stop
/// inside LLVM. sm_88 and sm_110, whose oldest PTX ISA (9.0) is newer than what Clang 22
/// writes for CUDA 13 (8.8), made NVPTX stop in Clang's optimisation and in cdpc's back end.
#[test]
fn every_architecture_nvcc_lists_compiles_or_is_refused_with_a_code() {
    let Some(nvcc) = nvcc() else { return };
    let listed = Command::new(&nvcc).arg("--list-gpu-code").output().expect("nvcc runs");
    let archs: Vec<String> = String::from_utf8_lossy(&listed.stdout).split_whitespace().filter(|a| a.starts_with("sm_")).map(str::to_string).collect();
    assert!(archs.iter().any(|a| a == "sm_90"), "nvcc --list-gpu-code: {archs:?}");
    let dir = tempfile::tempdir().unwrap();
    let kernel = "__global__ void child(int *p) { p[threadIdx.x] = 1; }\n__global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }\n";
    std::fs::write(dir.path().join("k.cu"), kernel).unwrap();
    std::fs::write(dir.path().join("k.cdp"), kernel).unwrap();
    let mut compiled = Vec::new();
    for arch in archs.iter().chain(["sm_110a".to_string(), "sm_88".to_string()].iter()) {
        let known = cdpc::target::LLVM_ARCHITECTURES.iter().any(|a| a.to_string() == *arch);
        for file in ["k.cu", "k.cdp"] {
            let out = cdpc(dir.path(), &[file, &format!("-arch={arch}"), "-o", "k.cubin"]);
            if !known {
                assert_eq!(out.status.code(), Some(2), "{arch} {file}: {}", stderr(&out));
                assert!(stderr(&out).starts_with("error[E0708]") && stderr(&out).contains("LLVM 22"), "{arch} {file}: {}", stderr(&out));
                continue;
            }
            assert!(out.status.success(), "{arch} {file}: {}", stderr(&out));
            let ptx = cdpc(dir.path(), &[file, &format!("-arch={arch}"), "--emit", "ptx", "-o", "-"]);
            let text = String::from_utf8_lossy(&ptx.stdout).to_string();
            assert!(text.lines().any(|l| l == format!(".target {arch}")), "{arch} {file}: {text}");
            if arch.starts_with("sm_88") || arch.starts_with("sm_110") {
                assert!(text.lines().any(|l| l == ".version 9.0"), "{arch} {file}: {text}");
            }
            compiled.push(arch.clone());
        }
    }
    assert!(compiled.iter().any(|a| a == "sm_110") && compiled.iter().any(|a| a == "sm_88"), "{compiled:?}");
}

/// A value for an nvcc option, from the value `nvcc --help` shows for it (`<arch>`,
/// `{true|false}`, `[default,size,...]`), that cdpc takes where it takes the option.
fn nvcc_value(spec: &str, long: &str, dir: &Path) -> String {
    let spec = spec.trim();
    if let Some(alternatives) = spec.strip_prefix('{').and_then(|r| r.split('}').next()) {
        let alternatives: Vec<&str> = alternatives.split('|').collect();
        let preferred = ["true", "static", "cu", "c++17", "64", "libstdc++", "legacy"];
        return preferred.iter().find(|p| alternatives.contains(p)).map_or(alternatives[0], |p| p).to_string();
    }
    if spec.starts_with('[') {
        return "default".into();
    }
    let file = dir.join("empty.h").display().to_string();
    let folder = dir.display().to_string();
    match long {
        "--gpu-architecture" | "--gpu-code" => "sm_90".into(),
        "--generate-code" => "arch=compute_90,code=sm_90".into(),
        "--optimize" => "3".into(),
        "--Werror" => "all-warnings".into(),
        "--optimization-info" => "inline".into(),
        "--target-directory" => "x86_64-linux".into(),
        "--fdevice-sanitize" => "memcheck".into(),
        "--compiler-bindir" => "c++".into(),
        "--library" => "m".into(),
        "--define-macro" | "--undefine-macro" => "NVCC_OPTION_TEST".into(),
        "--compiler-options" | "--linker-options" | "--archive-options" | "--ptxas-options" | "--nvlink-options" | "--nvprune-options" | "--tileiras-options" => "-Wall".into(),
        _ if spec.contains("file") => file,
        _ if spec.contains("directory") || spec.contains("path") => folder,
        _ => "1".into(),
    }
}

/// Every option `nvcc --help` lists (the toolkit's nvcc, the oracle), in both spellings, is
/// one cdpc reads: taken as nvcc's, accepted with nothing to do, or refused with `E0707` and
/// what to do instead; never clap's "unexpected argument", which a Makefile's nvcc line met
/// with `--source-in-ptx`.
#[test]
fn every_option_nvcc_lists_is_read_or_refused_with_a_code() {
    let Some(nvcc) = nvcc() else { return };
    let help = Command::new(&nvcc).arg("--help").output().expect("nvcc runs");
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) { p[0] = 1; }\n").unwrap();
    std::fs::write(dir.path().join("empty.h"), "").unwrap();
    let mut checked = 0;
    for line in help.lines().filter(|l| l.starts_with("--")) {
        // `--long-name <value>   (-short)`, or a long name alone.
        let (head, short) = match line.rfind('(') {
            Some(open) if line.trim_end().ends_with(')') => (&line[..open], Some(line[open + 1..].trim_end().trim_end_matches(')'))),
            _ => (line, None),
        };
        let mut words = head.split_whitespace();
        let long = words.next().unwrap();
        let spec: String = words.collect::<Vec<_>>().join(" ");
        if matches!(long, "--output-file" | "--help" | "--version") {
            continue;
        }
        let value = (!spec.is_empty()).then(|| nvcc_value(&spec, long, dir.path()));
        for spelling in std::iter::once(long).chain(short) {
            let mut args = vec![spelling.to_string()];
            args.extend(value.clone());
            // `-code` names what to build from `-arch`'s virtual architecture: alone it is
            // nvcc's "-arch option not specified" too.
            if long == "--gpu-code" {
                args.push("-arch=compute_90".into());
            }
            args.extend(["-E", "k.cu", "-o", "out.txt"].map(String::from));
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = cdpc(dir.path(), &argv);
            let said = stderr(&out);
            assert!(!said.contains("unexpected argument") && !said.contains("E0708"), "{args:?}: {said}");
            if out.status.code() == Some(2) {
                assert!(said.starts_with("error[E0707]") || said.starts_with("error: "), "{args:?}: {said}");
            }
            checked += 1;
        }
    }
    assert!(checked > 250, "{checked} spellings of nvcc's options checked");
}

/// `-lib` makes nvcc's static library: each source's object (`-rdc=true`: relocatable device
/// code) archived by `ar` as `a.a`, which nvcc's own link takes (the oracle: its device link
/// finds the kernels in it) and cdpc's too; `-odir` puts `-dc`'s objects and their dependency
/// lists in a folder, the lists naming the objects there, as nvcc's.
#[test]
fn static_libraries_and_object_folders_are_nvccs() {
    let Some(nvcc) = nvcc() else { return };
    if !have("ar") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void child(int *p) { p[threadIdx.x] = 1; }\n__global__ void parent(int *p) { child<<<1, 32>>>(p); }\n").unwrap();
    std::fs::write(dir.path().join("o.cu"), "__device__ int g(int x) { return x + 1; }\n__global__ void other(int *p) { p[0] = g(1); }\n").unwrap();
    std::fs::write(dir.path().join("main.cu"), "__global__ void parent(int *);\n__global__ void other(int *);\nint main() { parent<<<1, 1>>>(nullptr); other<<<1, 1>>>(nullptr); return 0; }\n")
        .unwrap();
    let out = cdpc(dir.path(), &["-lib", "-rdc=true", "-arch=sm_90", "k.cu", "o.cu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let members = Command::new("ar").current_dir(dir.path()).args(["t", "a.a"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&members.stdout), "k.o\no.o\n");
    run(&nvcc, dir.path(), &["-rdc=true", "-arch=sm_90", "main.cu", "a.a", "-o", "app_nvcc"]);
    let out = cdpc(dir.path(), &["-rdc=true", "-arch=sm_90", "main.cu", "a.a", "-o", "app_cdpc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The archiver as nvcc's `-arbin` names it, and one that is not there.
    let out = cdpc(dir.path(), &["-lib", "-arbin", "/no/such/ar", "k.cu", "-o", "libk.a"]);
    assert!(!out.status.success() && stderr(&out).contains("the archiver (`ar`, for a static library) not found"), "{}", stderr(&out));
    assert!(!dir.path().join("libk.a").exists());
    std::fs::create_dir(dir.path().join("obj")).unwrap();
    let out = cdpc(dir.path(), &["-dc", "-odir", "obj", "-MD", "k.cu", "o.cu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ["k.o", "o.o", "k.d", "o.d"] {
        assert!(dir.path().join("obj").join(name).is_file(), "{name}");
    }
    let list = std::fs::read_to_string(dir.path().join("obj/k.d")).unwrap();
    assert!(list.starts_with("obj/k.o :") || list.starts_with("obj/k.o:"), "{list}");
}

/// `--list-gpu-arch` and `--list-gpu-code` list what nvcc's list (the oracle) and LLVM 22 share,
/// in nvcc's spellings, and both together nvcc's `-gencode` values.
#[test]
fn architecture_lists_are_nvccs_less_what_llvm_lacks() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let lines = |out: std::process::Output| -> Vec<String> {
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    };
    for (option, prefix) in [("--list-gpu-arch", "compute_"), ("--list-gpu-code", "sm_")] {
        let theirs = lines(run(&nvcc, dir.path(), &[option]));
        let ours = lines(cdpc(dir.path(), &[option]));
        let expected: Vec<String> =
            theirs.iter().filter(|a| cdpc::target::LLVM_ARCHITECTURES.iter().any(|l| format!("{prefix}{}", l.code()) == **a)).cloned().collect::<BTreeSet<_>>().into_iter().collect();
        let mut sorted = ours.clone();
        sorted.sort();
        assert_eq!(sorted, expected, "{option}");
        assert!(ours.iter().any(|a| *a == format!("{prefix}90")), "{option}: {ours:?}");
    }
    let both = lines(cdpc(dir.path(), &["-arch-ls", "-code-ls"]));
    assert!(both.iter().any(|l| l == "arch=compute_90,code=sm_90"), "{both:?}");
}

/// nvcc's device link-time optimisation (`-dlto`, `code=lto_XX`; CMake's
/// `INTERPROCEDURAL_OPTIMIZATION` for CUDA): the object is `-dc`'s, a cubin of `sm_XX` for
/// `lto_XX`, with the device IR beside it (`compiler/tests/device_lto.rs` links such objects);
/// no warning, and `-Werror` has nothing to refuse.
#[test]
fn device_link_time_optimisation_compiles_the_cubin_and_carries_the_ir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) { p[0] = 1; }\n").unwrap();
    for (args, object) in [(&["-dc", "-dlto", "-gencode", "arch=compute_90,code=lto_90", "k.cu", "-o", "k.o"][..], "k.o"), (&["-dc", "-dlto", "-Werror", "k.cu", "-o", "e.o"][..], "e.o")] {
        let out = cdpc(dir.path(), args);
        assert!(out.status.success() && stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
        let sections = std::process::Command::new("readelf").arg("-SW").arg(dir.path().join(object)).output().unwrap();
        let sections = String::from_utf8_lossy(&sections.stdout).into_owned();
        assert!(sections.contains("__cdpc_device_ir") && sections.contains("__nv_relfatbin"), "{sections}");
    }
}
