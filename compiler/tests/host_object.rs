//! `--emit host-obj`: the x86-64 object that host programs link like one of `nvcc -dc`'s. Its
//! sections and symbols are compared with nvcc's object of the same file; an unchanged host
//! program compiled by nvcc (declaring the kernels, launching with `<<<>>>`) and one compiled
//! by g++ (including the header cdpc writes, calling the launcher) must link with it. There is
//! no GPU here: the programs are linked, not run. Cases skip with a printed reason without the
//! NVIDIA tools, nvcc, g++ or readelf/nm.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::build_common::{cdpc, have, run, stderr, tool_dir};

const KERNELS: &str = r#"
extern "C" __global__ void child(int *p) { p[threadIdx.x] += 1; }
extern "C" __global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }
__global__ void scale(float *p, float s, dim3 shape, unsigned char flag) { p[threadIdx.x] *= s + shape.x + flag; }
"#;

const NVCC_MAIN: &str = r#"
extern "C" __global__ void parent(int *);
__global__ void scale(float *p, float s, dim3 shape, unsigned char flag);
int main() {
    int *p; float *f;
    cudaMalloc(&p, 128); cudaMalloc(&f, 128);
    parent<<<1, 1>>>(p);
    scale<<<1, 32>>>(f, 2.0f, dim3(1, 2, 3), 1);
    return (int)cudaDeviceSynchronize();
}
"#;

const GXX_MAIN: &str = r#"
#include "kernels.h"
int main() {
    int *p = 0;
    cudaMalloc((void **)&p, 128);
    cudaError_t e = cdpc_launch_parent(dim3(1), dim3(1), 0, 0, p);
    return e == cudaSuccess ? (int)cudaDeviceSynchronize() : (int)e;
}
"#;

/// The project: the kernels compiled to `kernels.o` with its header.
fn project() -> Option<tempfile::TempDir> {
    tool_dir()?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kernels.cu"), KERNELS).unwrap();
    let out = cdpc(dir.path(), &["kernels.cu", "--emit", "host-obj", "-o", "kernels.o", "--host-header", "kernels.h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    Some(dir)
}

/// `nm` of an object: (kind letter, name) of the global symbols.
fn globals(object: &Path) -> BTreeSet<(char, String)> {
    let out = Command::new("nm").arg(object).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().rev();
            let name = w.next()?.to_string();
            let kind = w.next()?.chars().next()?;
            kind.is_ascii_uppercase().then_some((kind, name))
        })
        .collect()
}

fn sections(object: &Path) -> BTreeSet<String> {
    let out = Command::new("readelf").arg("-SW").arg(object).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(']').nth(1)?.split_whitespace().next().map(str::to_string))
        .filter(|s| s.starts_with("__nv") || s.starts_with(".nv") || s == ".init_array")
        .collect()
}

#[test]
fn the_object_has_nvcc_dc_sections_registration_and_a_stub_per_kernel() {
    let Some(dir) = project() else { return };
    if !have("nm") || !have("readelf") {
        return;
    }
    let ours = dir.path().join("kernels.o");
    let bytes = std::fs::read(&ours).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 62, "an x86-64 object");
    let symbols = globals(&ours);
    let id = symbols.iter().find_map(|(_, n)| n.strip_prefix("__fatbinwrap")).expect("a __fatbinwrap symbol").to_string();
    for expected in [('T', "child".to_string()), ('T', "parent".to_string()), ('T', "_Z5scalePff4dim3h".to_string()), ('D', format!("__fatbinwrap{id}")), ('U', format!("__cudaRegisterLinkedBinary{id}")), ('T', "cdpc_launch_parent".to_string())] {
        assert!(symbols.contains(&expected), "{expected:?} missing from {symbols:?}");
    }
    // nvcc -dc's object of the same file: the same sections, the same kernel stubs.
    let nvcc = tool_dir().unwrap().join("nvcc");
    if !nvcc.is_file() || !have("g++") {
        println!("skipped: the comparison with nvcc -dc needs nvcc and g++");
        return;
    }
    run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "kernels.cu", "-o", "nvcc.o"]);
    let theirs = dir.path().join("nvcc.o");
    assert_eq!(sections(&ours), sections(&theirs).into_iter().filter(|s| !s.starts_with(".nvHR")).collect());
    let kernels = |s: &BTreeSet<(char, String)>| -> BTreeSet<String> {
        s.iter().filter(|(k, n)| *k == 'T' && !n.contains("device_stub") && !n.starts_with("cdpc_launch_")).map(|(_, n)| n.clone()).collect()
    };
    assert_eq!(kernels(&symbols), kernels(&globals(&theirs)));
}

#[test]
fn an_unchanged_nvcc_host_program_links_with_it() {
    let Some(dir) = project() else { return };
    let nvcc = tool_dir().unwrap().join("nvcc");
    if !nvcc.is_file() || !have("g++") {
        return;
    }
    std::fs::write(dir.path().join("main.cu"), NVCC_MAIN).unwrap();
    // Separately: nvcc -dc, nvcc -dlink, the host link by nvcc; and all in one nvcc command.
    run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "main.cu", "-o", "main.o"]);
    run(&nvcc, dir.path(), &["-dlink", "-arch=sm_90", "main.o", "kernels.o", "-o", "dlink.o"]);
    run(&nvcc, dir.path(), &["-arch=sm_90", "main.o", "kernels.o", "dlink.o", "-o", "app"]);
    run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "main.cu", "kernels.o", "-o", "app2"]);
    for app in ["app", "app2"] {
        assert!(dir.path().join(app).is_file());
        // The program's <<<>>> calls cdpc's stubs.
        let calls = Command::new("objdump").args(["-d", "--no-show-raw-insn"]).arg(dir.path().join(app)).output();
        if let Ok(calls) = calls {
            let text = String::from_utf8_lossy(&calls.stdout);
            assert!(text.contains("call") && text.contains("<parent>") && text.contains("<_Z5scalePff4dim3h>"), "{app} calls no stub");
        }
    }
}

#[test]
fn a_gxx_program_with_the_header_links_with_it() {
    let Some(dir) = project() else { return };
    let tools = tool_dir().unwrap();
    let nvcc = tools.join("nvcc");
    if !nvcc.is_file() || !have("g++") {
        return;
    }
    let header = std::fs::read_to_string(dir.path().join("kernels.h")).unwrap();
    assert!(header.contains("cudaError_t cdpc_launch_parent(dim3 grid, dim3 block, size_t shared_mem, cudaStream_t stream, int * p);"), "{header}");
    assert!(header.contains("extern \"C\" __global__ void parent(int * p);") && header.contains("__global__ void scale(float * p, float s, dim3 shape, unsigned char flag);"), "{header}");
    std::fs::write(dir.path().join("main.cpp"), GXX_MAIN).unwrap();
    let root = tools.parent().unwrap();
    let include = format!("-I{}", root.join("include").display());
    run(Path::new("g++"), dir.path(), &["-c", &include, "main.cpp", "-o", "main.o"]);
    run(&nvcc, dir.path(), &["-dlink", "-arch=sm_90", "kernels.o", "-o", "dlink.o"]);
    let lib = root.join("lib");
    let (devrt, cudart) = (lib.join("libcudadevrt.a"), lib.join("libcudart_static.a"));
    run(Path::new("g++"), dir.path(), &["main.o", "kernels.o", "dlink.o", devrt.to_str().unwrap(), cudart.to_str().unwrap(), "-ldl", "-lpthread", "-lrt", "-o", "app"]);
    assert!(dir.path().join("app").is_file());
}

#[test]
fn a_kernel_taking_a_struct_by_value_gets_no_stub_and_a_warning() {
    let Some(_) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.cu"), "struct P { int a; double b; };\nextern \"C\" __global__ void k(P p, int *out) { *out = p.a; }\nextern \"C\" __global__ void ok(int *out) { *out = 1; }\n").unwrap();
    let out = cdpc(dir.path(), &["s.cu", "--emit", "host-obj", "--host-header", "s.h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning[W0800]: kernel `k` gets no host stub: it takes `p` by value"), "{err}");
    assert!(err.contains("s.cu:2:"), "{err}");
    let header = std::fs::read_to_string(dir.path().join("s.h")).unwrap();
    assert!(header.contains("cdpc_launch_ok") && !header.contains("cdpc_launch_k("), "{header}");
    let out = cdpc(dir.path(), &["s.cu", "--emit", "host-obj", "--deny", "W0800", "-o", "denied.o"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("denied.o").exists());
}
