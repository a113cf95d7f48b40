//! `-lineinfo` and `-G` of the kernel language's front end (the files here are `.cu` for nvcc
//! and compiled with `-x cdp`; CUDA C++'s debug information is Clang's, and
//! `cuda_cxx.rs` checks its `-lineinfo` lines): the PTX's `.file` and `.loc` lines name the user's files and lines
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
    let out = cdpc(dir, &["-x", "cdp", "lines.cu", flag, "--emit", "ptx", "-o", "-"]);
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
    let out = Command::new(&nvcc).current_dir(dir.path()).env("PATH", path).args(["-lineinfo", "-rdc=true", "-arch=sm_90", "-ptx", "lines.cu", "-o", "nvcc.ptx"]).output().unwrap();
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
    std::fs::write(dir.path().join("types.cu"), "__global__ void k(int *data, unsigned n, const float *f) {\n    char c = 'a';\n    long long big = n;\n    data[0] = c + (int)big + (int)f[0];\n}\n")
        .unwrap();
    let out = cdpc(dir.path(), &["-x", "cdp", "types.cu", "-G", "--emit", "llvm-ir", "-o", "types.ll"]);
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

/// The bytes of one DWARF section of a PTX text (`.section .debug_info { .b8 ... }`): numbers
/// little-endian in their directive's width, labels (relocations) as zeros.
fn dwarf_section(ptx: &str, name: &str) -> Vec<u8> {
    let Some(start) = ptx.find(&format!(".section\t{name}")) else { return Vec::new() };
    let body = &ptx[start..];
    let body = &body[body.find('{').map_or(0, |i| i + 1)..body.find('}').unwrap_or(body.len())];
    let mut bytes = Vec::new();
    for line in body.lines().map(|l| l.split("//").next().unwrap_or("").trim()) {
        let Some((directive, values)) = line.split_once(char::is_whitespace) else { continue };
        let width = match directive {
            ".b8" => 1,
            ".b16" => 2,
            ".b32" => 4,
            ".b64" => 8,
            _ => continue,
        };
        for value in values.split(',').map(str::trim) {
            let n = value.parse::<u64>().unwrap_or(0);
            bytes.extend_from_slice(&n.to_le_bytes()[..width]);
        }
    }
    bytes
}

fn uleb(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut value, mut shift) = (0u64, 0);
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        value |= ((b & 0x7f) as u64) << shift.min(63);
        shift += 7;
        if b < 0x80 {
            break;
        }
    }
    value
}

/// The DIEs of a `-G` PTX text's first compile unit: (tag, [(attribute, value)]), a value
/// being the number of a constant form (0 for others).
fn dies(ptx: &str) -> Vec<(u64, Vec<(u64, u64)>)> {
    let abbrev = dwarf_section(ptx, ".debug_abbrev");
    let mut table = std::collections::HashMap::new();
    let mut at = 0;
    loop {
        let code = uleb(&abbrev, &mut at);
        if code == 0 || at >= abbrev.len() {
            break;
        }
        let tag = uleb(&abbrev, &mut at);
        at += 1; // has children
        let mut attrs = Vec::new();
        loop {
            let (attr, form) = (uleb(&abbrev, &mut at), uleb(&abbrev, &mut at));
            if attr == 0 && form == 0 {
                break;
            }
            attrs.push((attr, form));
        }
        table.insert(code, (tag, attrs));
    }
    let info = dwarf_section(ptx, ".debug_info");
    let version = u16::from_le_bytes([info[4], info[5]]);
    let mut at = if version >= 5 { 12 } else { 11 };
    let mut found = Vec::new();
    while at < info.len() {
        let code = uleb(&info, &mut at);
        if code == 0 {
            continue;
        }
        let Some((tag, attrs)) = table.get(&code) else { panic!("abbreviation {code} is not in .debug_abbrev") };
        let mut values = Vec::new();
        for &(attr, form) in attrs {
            let fixed = |n: usize, at: &mut usize| {
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(&info[*at..*at + n]);
                *at += n;
                u64::from_le_bytes(b)
            };
            let value = match form {
                0x01 | 0x07 => fixed(8, &mut at),
                0x05 => fixed(2, &mut at),
                0x06 | 0x10 | 0x13 | 0x17 | 0x0e => fixed(4, &mut at),
                0x0b | 0x0c | 0x11 => fixed(1, &mut at),
                0x08 => {
                    at += info[at..].iter().position(|&b| b == 0).unwrap() + 1;
                    0
                }
                0x0a => {
                    at += 1 + info[at] as usize;
                    0
                }
                0x09 | 0x18 => {
                    let n = uleb(&info, &mut at) as usize;
                    at += n;
                    0
                }
                0x0d | 0x0f => uleb(&info, &mut at),
                0x19 => 1,
                other => panic!("DWARF form {other:#x} is not read by this test"),
            };
            values.push((attr, value));
        }
        found.push((*tag, values));
    }
    found
}

/// The `DW_AT_address_class` of every pointer type in a `-G` PTX text.
fn pointer_address_classes(ptx: &str) -> BTreeSet<u64> {
    const DW_TAG_POINTER_TYPE: u64 = 0x0f;
    const DW_AT_ADDRESS_CLASS: u64 = 0x33;
    dies(ptx).into_iter().filter(|(tag, _)| *tag == DW_TAG_POINTER_TYPE).flat_map(|(_, v)| v.into_iter().filter(|(a, _)| *a == DW_AT_ADDRESS_CLASS).map(|(_, v)| v)).collect()
}

/// cuda-gdb reads a pointer's address class from its DWARF type: nvcc marks every pointer
/// type generic, and cdpc's must say the same (measured on the H100 before: cdpc's `int *`
/// showed as `int * @local` where nvcc's is `@generic int *`).
#[test]
fn g_pointer_types_have_nvccs_address_class() {
    let source = "__global__ void k(int *data, const float *f) {\n    int *p = data + 1;\n    *p = (int)f[0];\n}\n";
    let Some(theirs) = crate::build_common::nvcc_ptx_with(source, &["-G"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["-x", "cdp", "p.cu", "-G", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = String::from_utf8(out.stdout).unwrap();
    let expected = pointer_address_classes(&theirs);
    assert!(!expected.is_empty(), "nvcc's PTX has no pointer type with an address class:\n{theirs}");
    assert_eq!(pointer_address_classes(&ours), expected);
}

/// `-lineinfo` adds lines to the code and changes nothing else, as nvcc's does: with its
/// `.file`, `.loc` and function and line labels taken out, each sample's PTX is the build's
/// without it. Before, the launch machinery that sites of one child share (one `C__warp`
/// helper) was kept apart per site when the sites' calls carried lines: `launch_sites.cdp`
/// was 1,885 lines of PTX with `-lineinfo` against 1,053 without. The samples: those whose
/// sites share a helper, from both front ends.
#[test]
fn lineinfo_changes_no_code() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let code = |file: &str, extra: &[&str]| {
        let out = cdpc(&samples, &[&[file, "--emit", "ptx", "-o", "-"][..], extra].concat());
        assert!(out.status.success(), "{file} {extra:?}: {}", stderr(&out));
        let is_line = |l: &str| {
            let t = l.trim();
            t.starts_with(".loc") || t.starts_with(".file") || ["$L__tmp", "$L__func_begin", "$L__func_end"].iter().any(|p| t.starts_with(p) && t.ends_with(':'))
        };
        String::from_utf8(out.stdout).unwrap().lines().filter(|l| !is_line(l)).collect::<Vec<_>>().join("\n")
    };
    for file in ["launch_sites.cdp", "lane_sites.cdp", "named_stream_order.cdp", "cxx_graph.cu", "coop_groups.cu"] {
        let plain = code(file, &[]);
        let lined = code(file, &["-lineinfo"]);
        assert!(plain.lines().count() > 100, "{file}: {plain}");
        if plain != lined {
            let first = plain.lines().zip(lined.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{file}: -lineinfo changed the code from line {first} of {} (without) against {} (with):\n{}",
                plain.lines().count(),
                lined.lines().count(),
                lined.lines().skip(first.saturating_sub(3)).take(12).collect::<Vec<_>>().join("\n")
            );
        }
    }
}
