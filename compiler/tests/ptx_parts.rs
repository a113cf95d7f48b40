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
        assert!((2..=3).contains(&runs), "{name}: one ptxas run a part, {runs}");
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

/// A `-dc` file with a `static` kernel and variable (host code names them), a `static` device
/// function two kernels call, and kernels that name none of them.
const RELOCATABLE: &str = "static __device__ int bias = 3;\n\
__device__ __noinline__ static int helper(int a) { return a * 2 + bias; }\n\
static __global__ void hidden(int *p) { p[threadIdx.x] += helper(1); }\n\
__global__ void one(int *p) { p[threadIdx.x] = helper(p[threadIdx.x]); }\n\
__global__ void two(int *p) { p[threadIdx.x] = helper(p[threadIdx.x]) + 1; hidden<<<1, 4>>>(p); }\n\
__global__ void three(int *p) { for (int i = 0; i < 4; i++) p[i] += i; }\n\
__global__ void four(int *p) { p[threadIdx.x] *= 3; }\n\
void run_a(int *p) { one<<<1, 4>>>(p); two<<<1, 4>>>(p); three<<<1, 1>>>(p); four<<<1, 4>>>(p); hidden<<<1, 4>>>(p);\n\
    int b = 5; cudaMemcpyToSymbol(bias, &b, sizeof b); one<<<1, 4>>>(p); }\n";

#[test]
fn a_relocatable_object_in_parts_links_as_the_whole_one_does() {
    let Some(tools) = tools() else { return };
    let home = tools.parent().unwrap().to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.cu"), RELOCATABLE).unwrap();
    std::fs::write(
        dir.path().join("b.cu"),
        "#include <cstdio>\nvoid run_a(int *p);\nint main() { int *p; cudaMallocManaged(&p, 16); for (int i = 0; i < 4; i++) p[i] = i;\n\
         run_a(p); cudaDeviceSynchronize(); for (int i = 0; i < 4; i++) printf(\"%d\\n\", p[i]); return 0; }\n",
    )
    .unwrap();
    let cdpc_ok = |args: &[&str]| {
        let out = cdpc(dir.path(), &[&["--cuda-home", home.as_str()][..], args].concat());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stderr(&out)
    };
    cdpc_ok(&["-dc", "b.cu", "-o", "b.o"]);
    let mut functions_of = Vec::new();
    for (name, parts) in [("whole", "1"), ("parts", "3")] {
        let object = format!("a-{name}.o");
        let log = cdpc_ok(&["-dc", "a.cu", "--split-compile", parts, "-v", "-o", &object]);
        let ptxas = log.lines().filter(|l| l.contains("ptxas") && l.contains("-arch=sm_")).count();
        let joined = log.lines().any(|l| l.contains("nvlink") && l.split_whitespace().any(|w| w == "-r"));
        if name == "whole" {
            assert_eq!((ptxas, joined), (1, false), "{log}");
        } else {
            assert!(ptxas >= 2 && joined, "one ptxas a part, joined by `nvlink -r`:\n{log}");
        }
        let app = format!("app-{name}");
        cdpc_ok(&[object.as_str(), "b.o", "-o", &app]);
        // The renamed internal device function, named as it was.
        let found: BTreeSet<String> = functions(&tools, &dir.path().join(&app)).into_iter().map(|f| f.split("__cdpc_part_").next().unwrap().to_string()).collect();
        functions_of.push(found);
        if let Some(nvcc) = crate::build_common::nvcc() {
            let out = run(&nvcc, dir.path(), &["-dlink", "-arch=sm_90", object.as_str(), "b.o", "-o", &format!("dlink-{name}.o")]);
            assert!(out.status.success(), "nvcc -dlink of the {name} object: {}", stderr(&out));
        }
    }
    assert_eq!(functions_of[0], functions_of[1], "the same functions in the program");
    assert!(functions_of[0].iter().any(|f| f.ends_with("hiddenPi")) && functions_of[0].contains("_Z4fourPi"), "{:?}", functions_of[0]);
}
