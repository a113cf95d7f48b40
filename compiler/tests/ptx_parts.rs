//! A linked cubin's PTX assembled in parts at the same time (`toolchain::ptx_parts`,
//! `--split-compile`, nvcc's option): one ptxas run a part, nvlink linking the parts, the cubin
//! holding the same functions as the module assembled whole; a part the tools refuse leaves the
//! whole module's build and its errors. ptxas, nvlink and cuobjdump are the oracle.

use crate::build_common::{cdpc, run, stderr, tool_dir};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples").join(name)
}

/// The NVIDIA tools' folder, or `None` with the reason printed.
fn tools() -> Option<PathBuf> {
    let found = tool_dir();
    if found.is_none() {
        eprintln!("skipped: ptxas, nvlink and cuobjdump are not installed");
    }
    found
}

/// The functions of a cubin as `cuobjdump -elf` lists its code sections (`.text.<name>`).
fn functions(tools: &Path, cubin: &Path) -> BTreeSet<String> {
    let out = run(&tools.join("cuobjdump"), Path::new("."), &["-elf", cubin.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().filter_map(|w| w.strip_prefix(".text.")).map(str::to_string).collect()
}

/// `source` built to a cubin with `flags`: its functions, ptxas's runs and nvlink's objects
/// (from `-v`).
fn build(tools: &Path, dir: &Path, source: &Path, flags: &[&str], name: &str) -> (BTreeSet<String>, usize, usize) {
    let home = tools.parent().expect("a toolkit's bin folder").to_str().unwrap().to_string();
    let cubin = dir.join(format!("{name}.cubin"));
    let mut args = vec![source.to_str().unwrap(), "--cuda-home", home.as_str(), "-v", "-o", cubin.to_str().unwrap()];
    args.extend_from_slice(flags);
    let out = cdpc(dir, &args);
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    let log = stderr(&out);
    let ptxas = tools.join("ptxas").display().to_string();
    let nvlink = tools.join("nvlink").display().to_string();
    let runs = log.lines().filter(|l| l.trim_start().starts_with(&ptxas)).count();
    let objects = log.lines().filter(|l| l.trim_start().starts_with(&nvlink)).map(|l| l.split_whitespace().filter(|w| w.ends_with(".o")).count()).max().unwrap_or(0);
    (functions(tools, &cubin), runs, objects)
}

#[test]
fn a_module_assembled_in_parts_links_to_the_same_functions_as_the_whole() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The kernel language's launches, aggregated (the samples' largest module that is not one
    // group), and CUDA C++ with libdevice's functions.
    for source in [sample("launch_patterns.cdp"), sample("math_functions.cu")] {
        let name = source.file_stem().unwrap().to_str().unwrap().to_string();
        let (whole, whole_runs, whole_objects) = build(&tools, dir.path(), &source, &["--split-compile", "1"], &format!("{name}-whole"));
        assert_eq!((whole_runs, whole_objects), (1, 1), "{name}: `--split-compile 1` assembles the module whole");
        let (parts, runs, objects) = build(&tools, dir.path(), &source, &["--split-compile", "3"], &format!("{name}-parts"));
        assert!(runs >= 2 && runs <= 3, "{name}: one ptxas run a part, {runs}");
        assert_eq!(objects, runs, "{name}: nvlink links every part");
        assert_eq!(parts, whole, "{name}: the same functions");
        assert!(whole.len() >= 3, "{name}: {whole:?}");
    }
}

#[test]
fn nvccs_spelling_and_a_debug_build_and_a_small_module_by_default() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = sample("launch_patterns.cdp");
    let (_, runs, _) = build(&tools, dir.path(), &source, &["-split-compile=2"], "nvcc");
    assert_eq!(runs, 2, "nvcc's `-split-compile=2`");
    let (_, runs, _) = build(&tools, dir.path(), &source, &["--split-compile", "2", "-lineinfo"], "lines");
    assert_eq!(runs, 1, "PTX with line tables is assembled whole");
    let (_, runs, _) = build(&tools, dir.path(), &sample("hello.cdp"), &[], "hello");
    assert_eq!(runs, 1, "a small module is assembled whole when cdpc decides");
}

#[test]
fn a_part_the_tools_refuse_leaves_the_whole_modules_build_and_its_errors() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("asm.cu");
    std::fs::write(
        &source,
        "__global__ void scale(int *p, int k)\n{\n    int x = p[threadIdx.x];\n    asm volatile(\"bogus.instr.u32 %0, %0;\" : \"+r\"(x));\n    p[threadIdx.x] = x * k;\n}\n\n\
         __global__ void other(int *p)\n{\n    p[threadIdx.x] += 1;\n}\n",
    )
    .unwrap();
    let home = tools.parent().unwrap().to_str().unwrap().to_string();
    let refusal = |flags: &[&str]| {
        let out = cdpc(dir.path(), &[&["asm.cu", "--cuda-home", home.as_str(), "--emit", "cubin", "-o", "asm.cubin"][..], flags].concat());
        assert!(!out.status.success());
        assert!(!dir.path().join("asm.cubin").exists(), "no partial output");
        stderr(&out)
    };
    let whole = refusal(&["--split-compile", "1"]);
    assert!(whole.contains("E0968"), "{whole}");
    assert_eq!(refusal(&["--split-compile", "2"]), whole, "the same errors as the module whole");
}
