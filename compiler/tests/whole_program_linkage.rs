//! A CUDA C++ file compiled without `-rdc` (`-c`, `-ptx`, a program) is a whole program's device
//! code: as nvcc writes it, only its kernels are visible; every other function and every
//! `__device__`, `__constant__` and `__managed__` variable is internal to it (PTX without
//! `.visible` or `.weak`, LOCAL symbols in the cubin), the variables all kept, used or not,
//! since host code finds them by name. Functions nothing calls go (`pipeline::names::
//! whole_program_linkage`). With `-rdc=true` every symbol stays visible to the device link.

use std::collections::BTreeSet;
use std::process::Command;

use crate::build_common::{cdpc, nvcc, run, stderr};

/// Every kind of device variable, a function only inlined, one never called, one called
/// through a pointer, a template's instance; the host reads and writes the variables by name.
const SOURCE: &str = r#"#include <cstdio>
__device__ int g;
__device__ int arr[4] = {1, 2, 3, 4};
__constant__ float c[2];
static __device__ int s;
__managed__ int m = 5;
template <class T> __device__ T tv = T(7);
__device__ int unused_var = 9;
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ int unused_fn(int x) { return x + 1; }
__device__ int (*fp)(int) = twice;
template <class T> __device__ T add(T a, T b) { return a + b; }
__global__ void k(int *out) { out[0] = add(g + arr[1] + (int)c[1] + s + m, tv<int> + fp(3)); m = 11; }
int main() {
  int v = 10, sv = 1000, u = 0, a[4], r = 0;
  float cf[2] = {0, 100};
  cudaMemcpyToSymbol(g, &v, sizeof v);
  cudaMemcpyToSymbol(c, cf, sizeof cf);
  cudaMemcpyToSymbol(s, &sv, sizeof sv);
  int *out;
  cudaMalloc(&out, sizeof(int));
  k<<<1, 1>>>(out);
  cudaMemcpy(&r, out, sizeof r, cudaMemcpyDeviceToHost);
  cudaMemcpyFromSymbol(a, arr, sizeof a);
  cudaMemcpyFromSymbol(&u, unused_var, sizeof u);
  void *p = nullptr;
  cudaGetSymbolAddress(&p, g);
  printf("%d %d %d %d %d %s\n", r, m, a[3], u, (int)cudaGetLastError(), p ? "found" : "missing");
  return 0;
}
"#;

/// nvcc 13.5's whole-program PTX (`nvcc -arch=sm_90 -std=c++17 -ptx`), each definition as
/// `LINKAGE KIND NAME` (`-` for none): the kernel alone visible, every variable kept.
const NVCC_WHOLE: &[&str] =
    &["- const c", "- func _Z5twicei", "- global _Z2tvIiE", "- global arr", "- global fp", "- global g", "- global m", "- global s", "- global unused_var", ".visible entry _Z1kPi"];

/// The definitions of a PTX text as `LINKAGE KIND NAME`: top-level `.entry`, `.func` (not
/// a prototype), `.global` and `.const` lines; `.extern` ones left out.
fn definitions(ptx: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in ptx.lines().filter(|l| l.starts_with('.')) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (linkage, rest) = match words.first() {
            Some(&l @ (".visible" | ".weak")) => (l, &words[1..]),
            Some(&".extern") | None => continue,
            Some(_) => ("-", &words[..]),
        };
        let Some(kind) = rest.first().and_then(|k| k.strip_prefix('.')).filter(|k| ["entry", "func", "global", "const"].contains(k)) else { continue };
        let name = if kind == "entry" || kind == "func" {
            // `.func (.param ...) NAME(`: a definition opens its parameters on the line.
            let Some(head) = line.strip_suffix('(') else { continue };
            head.rsplit(|c: char| c.is_whitespace() || c == ')').next().unwrap_or("")
        } else {
            // `.global .align 4 .b8 NAME[16] = {...};`: the last word before the initializer.
            let declared = line.split('=').next().unwrap_or(line).trim_end().trim_end_matches(';');
            let last = declared.split_whitespace().last().unwrap_or("");
            last.split('[').next().unwrap_or(last)
        };
        found.insert(format!("{linkage} {kind} {name}"));
    }
    found
}

#[test]
fn whole_program_device_code_has_only_its_kernels_visible_as_nvccs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("vars.cu"), SOURCE).unwrap();
    let out = cdpc(d, &["-arch=sm_90", "-std=c++17", "-ptx", "vars.cu", "-o", "whole.ptx"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptx = std::fs::read_to_string(d.join("whole.ptx")).unwrap();
    let nvccs: BTreeSet<String> = NVCC_WHOLE.iter().map(|s| s.to_string()).collect();
    assert_eq!(definitions(&ptx), nvccs, "{ptx}");

    // Relocatable device code keeps every definition for the device link.
    let out = cdpc(d, &["-arch=sm_90", "-std=c++17", "-rdc=true", "-ptx", "vars.cu", "-o", "rdc.ptx"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rdc = definitions(&std::fs::read_to_string(d.join("rdc.ptx")).unwrap());
    for name in ["global g", "global arr", "const c", "global m", "global unused_var", "func _Z5twicei", "func _Z9unused_fni", "entry _Z1kPi"] {
        assert!(rdc.contains(&format!(".visible {name}")), "`{name}` is visible with -rdc=true: {rdc:?}");
    }

    // The program: the host reaches every variable by name in the linked cubin.
    let out = cdpc(d, &["-arch=sm_90", "-std=c++17", "vars.cu", "-o", "vars"]);
    assert!(out.status.success(), "{}", stderr(&out));

    if let Some(nvcc) = nvcc() {
        run(&nvcc, d, &["-arch=sm_90", "-std=c++17", "-ptx", "vars.cu", "-o", "nvcc.ptx"]);
        assert_eq!(definitions(&std::fs::read_to_string(d.join("nvcc.ptx")).unwrap()), nvccs, "nvcc's PTX");
    }
    let gpu = Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !gpu {
        println!("skipped: running the program: no GPU here (`nvidia-smi -L` lists none)");
        return;
    }
    // nvcc 13.0's build of the same file prints the same line (H200, driver 580.159.04).
    let ran = Command::new(d.join("vars")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "1130 11 4 9 0 found\n", "{}", stderr(&ran));
}

#[test]
fn definitions_reads_ptx_lines() {
    let ptx = ".extern .func (.param .b64 func_retval0) vprintf\n.func  (.param .b32 func_retval0) _Z5twicei\n.func  (.param .b32 func_retval0) _Z5twicei(\n.visible .entry _Z1kPi(\n.global .align 4 .b8 arr[16] = {1, 0};\n.visible .const .align 4 .b8 c[8];\n.weak .global .align 8 .u64 fp = _Z5twicei;\n\t.global .u32 inner;\n";
    let expected: BTreeSet<String> = ["- func _Z5twicei", ".visible entry _Z1kPi", "- global arr", ".visible const c", ".weak global fp"].iter().map(|s| s.to_string()).collect();
    assert_eq!(definitions(ptx), expected);
}
