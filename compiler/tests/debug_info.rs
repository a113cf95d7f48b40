//! `-lineinfo` and `-G`: the PTX's `.file` and `.loc` lines name the user's files and lines
//! (through macro expansions and headers), ptxas accepts the result, and the lines are among
//! those nvcc's own `-lineinfo` PTX of the same file has. Cases that need the NVIDIA tools or
//! nvcc skip with a printed reason.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build_common::{cdpc, stderr};

const HEADER: &str = "#define TWICE(x) ((x) * 2)\n__device__ inline int header_fn(int v) { return v + 1; }\n";

const MAIN: &str = r#"#include "lines.h"
extern "C" __global__ void child(int *p) {
    int i = threadIdx.x;
    p[i] = TWICE(p[i]);
    p[i] += header_fn(i);
}
extern "C" __global__ void parent(int *p) {
    if (threadIdx.x == 0)
        child<<<1, 32>>>(p);
}
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lines.h"), HEADER).unwrap();
    std::fs::write(dir.path().join("lines.cu"), MAIN).unwrap();
    dir
}

fn tools() -> Option<cdpc::toolchain::Toolchain> {
    let found = cdpc::toolchain::Toolchain::discover(&Default::default()).ok();
    if found.is_none() {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
    }
    found
}

/// The (file name, line) of every `.loc` of a PTX text, line 0 (no line) left out.
fn loc_lines(ptx: &str) -> BTreeSet<(String, u32)> {
    let mut files = std::collections::HashMap::new();
    for line in ptx.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix(".file") {
            let mut parts = rest.trim().splitn(2, char::is_whitespace);
            let (Some(n), Some(name)) = (parts.next(), parts.next()) else { continue };
            let name = name.trim().trim_matches('"');
            files.insert(n.to_string(), name.rsplit('/').next().unwrap().to_string());
        }
    }
    ptx.lines()
        .filter_map(|l| l.trim().strip_prefix(".loc"))
        .filter_map(|rest| {
            let mut w = rest.split_whitespace();
            let (file, line) = (w.next()?, w.next()?.parse::<u32>().ok()?);
            (line > 0).then(|| (files.get(file).cloned().unwrap_or_default(), line))
        })
        .collect()
}

fn ptx(dir: &Path, flag: &str) -> String {
    let out = cdpc(dir, &["lines.cu", flag, "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn lineinfo_names_the_files_and_lines_through_macros_and_headers() {
    let dir = project();
    let text = ptx(dir.path(), "-lineinfo");
    // nvcc's -lineinfo form: directives only, no DWARF sections, no `debug` target.
    assert!(text.contains(".target sm_90\n"), "{text}");
    assert!(!text.contains(".section"), "{text}");
    let cwd = dir.path().canonicalize().unwrap();
    assert!(text.contains(&format!(".file\t1 \"{}/lines.h\"", cwd.display())) || text.contains(&format!("\"{}/lines.h\"", dir.path().display())), "{text}");
    let lines = loc_lines(&text);
    let l = |file: &str, n: u32| (file.to_string(), n);
    // TWICE(...) is on line 4 of lines.cu, where it is invoked; header_fn's body is in lines.h.
    for expected in [l("lines.cu", 3), l("lines.cu", 4), l("lines.cu", 5), l("lines.cu", 9), l("lines.h", 2)] {
        assert!(lines.contains(&expected), "{expected:?} missing from {lines:?}\n{text}");
    }
    // Without the flag, no line information at all.
    assert!(!ptx(dir.path(), "-O3").contains(".loc"));
}

#[test]
fn lineinfo_lines_are_among_nvccs() {
    let Some(tools) = tools() else { return };
    let nvcc: PathBuf = tools.ptxas.with_file_name("nvcc");
    if !nvcc.is_file() {
        println!("skipped: no nvcc beside ptxas");
        return;
    }
    let dir = project();
    let path = format!("{}:{}", nvcc.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(&nvcc)
        .current_dir(dir.path())
        .env("PATH", path)
        .args(["-lineinfo", "-rdc=true", "-arch=sm_90", "-ptx", "lines.cu", "-o", "nvcc.ptx"])
        .output()
        .unwrap();
    assert!(out.status.success(), "nvcc: {}", stderr(&out));
    let theirs = loc_lines(&std::fs::read_to_string(dir.path().join("nvcc.ptx")).unwrap());
    let ours = loc_lines(&ptx(dir.path(), "-lineinfo"));
    assert!(ours.is_subset(&theirs), "cdpc's lines {ours:?} are not all among nvcc's {theirs:?}");
}

#[test]
fn ptxas_and_nvlink_accept_lineinfo_and_g_and_the_cubin_has_the_sections() {
    let Some(_) = tools() else { return };
    let dir = project();
    for (flag, sections) in [("-lineinfo", &[".debug_line", ".nv_debug_line_sass"][..]), ("-G", &[".debug_line", ".debug_info", ".nv_debug_info_reg_sass"][..])] {
        let out = cdpc(dir.path(), &["lines.cu", flag, "-o", "lines.cubin"]);
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        let Ok(readelf) = Command::new("readelf").arg("-SW").arg(dir.path().join("lines.cubin")).output() else {
            println!("skipped: readelf is not available");
            return;
        };
        let listing = String::from_utf8_lossy(&readelf.stdout);
        for section in sections {
            assert!(listing.contains(&format!(" {section} ")), "{flag}: no {section} in\n{listing}");
        }
        if flag == "-lineinfo" {
            assert!(!listing.contains(" .debug_info "), "-lineinfo wrote full DWARF");
        } else {
            // -G describes the parameters and locals: `p` of both kernels, `i` of child,
            // `v` of the header's function.
            let info = Command::new("readelf").arg("--debug-dump=info").arg(dir.path().join("lines.cubin")).output().unwrap();
            let info = String::from_utf8_lossy(&info.stdout);
            let names: std::collections::BTreeSet<&str> = info.lines().filter_map(|l| l.split("DW_AT_name").nth(1)).map(|n| n.trim_start_matches([' ', ':']).trim()).collect();
            for variable in ["p", "i", "v", "child", "parent"] {
                assert!(names.contains(variable), "-G: no DWARF name `{variable}` in {names:?}");
            }
        }
    }
    // -G in a link of several files, and with -dc.
    let out = cdpc(dir.path(), &["-dc", "-G", "lines.cu"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn g_is_full_dwarf_at_o0() {
    let dir = project();
    let text = ptx(dir.path(), "-G");
    assert!(text.contains(".target sm_90, debug"), "{text}");
    assert!(text.contains(".section\t.debug_info"), "{text}");
    // -O0: the local `i` keeps its own stack slot, as the variable DWARF describes.
    assert!(text.contains("__local_depot"), "{text}");
}

/// -G's variable types as the DWARF standard encodes them and as nvcc names them, so that
/// cuda-gdb shows `int *data` as a pointer to int (measured on the H100: with pointers to an
/// 8-bit "void" of `DW_ATE_unsigned_char`, it printed the memory as a string, `data=0x... ""`).
#[test]
fn g_describes_scalars_and_pointers_by_their_c_types() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("types.cu"),
        "__global__ void k(int *data, unsigned n, const float *f) {\n    char c = 'a';\n    long long big = n;\n    data[0] = c + (int)big + (int)f[0];\n}\n",
    )
    .unwrap();
    let out = cdpc(dir.path(), &["types.cu", "-G", "--emit", "llvm-ir", "-o", "types.ll"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ir = std::fs::read_to_string(dir.path().join("types.ll")).unwrap();
    for expected in [
        r#"!DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)"#,
        r#"!DIBasicType(name: "unsigned int", size: 32, encoding: DW_ATE_unsigned)"#,
        r#"!DIBasicType(name: "char", size: 8, encoding: DW_ATE_signed_char)"#,
        r#"!DIBasicType(name: "long long", size: 64, encoding: DW_ATE_signed)"#,
        r#"!DIDerivedType(tag: DW_TAG_pointer_type, name: "int *""#,
        r#"!DIDerivedType(tag: DW_TAG_pointer_type, name: "const float *""#,
    ] {
        assert!(ir.contains(expected), "{expected} is not in the IR:\n{ir}");
    }
}
