//! Variables declared with an elaborated type, `struct Line` or `union U` written with its key
//! (`__device__ struct Line g[1024];`, uninitialised, `__constant__`, `extern`, pointers,
//! `volatile`), against nvcc's PTX of the same source: the kernel language once made the
//! variable's name a type name (`E0006`), where nvcc takes every one of them.
//!
//! Compared: every variable line of the module's state spaces (`.global`, `.const`, `.extern`:
//! linkage, space, alignment, size, so the struct's layout) and every kernel's `.param` list
//! and `.shared` arrays' sizes. Skipped with a printed reason when nvcc is absent.

use crate::build_common::nvcc_ptx;
use cdpc::driver::{self, CompileOptions, Emit, Language};

const SOURCE: &str = r#"
struct Line { int cp[3]; int count; int *dst; };
union U { int i; double d; char c[12]; };
struct Line;

__device__ struct Line g_lines[1024];
__device__ struct Line g_one;
__device__ struct Line g_init = {{1, 2, 3}, 4, 0};
__device__ volatile struct Line g_volatile;
__device__ const struct Line *g_ptr;
__device__ struct Line *g_ptrs[4];
__device__ union U g_union;
__device__ union U g_unions[5];
__constant__ struct Line c_lines[2];
__constant__ union U c_union = {7};
extern __device__ struct Line x_lines[3];

__device__ int sum(struct Line *p, struct Line l, union U u)
{
    struct Line local = *p;
    struct Line *q = &local;
    return q->count + l.cp[1] + u.i;
}

__global__ void k(struct Line l, union U u, int *out)
{
    __shared__ struct Line s_lines[4];
    __shared__ union U s_union;
    s_lines[threadIdx.x % 4] = g_lines[threadIdx.x];
    s_union = g_union;
    __syncthreads();
    out[0] = sum(&s_lines[1], l, u) + s_union.i + c_lines[1].count + c_union.c[3] + g_one.count
        + g_init.cp[2] + g_volatile.count + g_ptr->count + g_ptrs[2]->count + g_unions[4].i + x_lines[2].count;
}
"#;

/// The variables (`.global`, `.const`, `.extern` lines at the top level) and, for each kernel,
/// its `.param` and `.shared` lines, each with its words alone (cdpc's `.ptr .align 1`
/// annotations and the `.shared` arrays' names left out, which LLVM and nvcc name apart).
fn shape(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in ptx.lines() {
        let l = line.trim().trim_end_matches(',');
        let top = !line.starts_with(char::is_whitespace);
        if top && (l.starts_with(".visible .global") || l.starts_with(".visible .const") || l.starts_with(".extern .global") || l.starts_with(".global") || l.starts_with(".const"))
            || l.starts_with(".visible .entry")
        {
            out.push(l.to_string());
        } else if l.starts_with(".param") {
            let words: Vec<&str> = l.split_whitespace().filter(|w| *w != ".ptr").collect();
            let mut kept = Vec::new();
            let mut i = 0;
            while i < words.len() {
                // `.ptr .align 1` after `.u64` is cdpc's pointer annotation.
                if words[i] == ".align" && kept.last().is_some_and(|w: &&str| *w == ".u64") {
                    i += 2;
                    continue;
                }
                kept.push(words[i]);
                i += 1;
            }
            out.push(kept.join(" "));
        } else if l.starts_with(".shared") {
            // `.shared .align 8 .b8 _ZZ1kE7s_lines[96];`: space, alignment and size.
            let size = l.rsplit('[').next().unwrap_or_default();
            let head: Vec<&str> = l.split_whitespace().take(4).collect();
            out.push(format!("{} [{size}", head.join(" ")));
        }
    }
    out
}

#[test]
fn elaborated_struct_and_union_variables_match_nvcc() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let options = CompileOptions { emit: Emit::Ptx, language: Some(Language::Cdp), separate: true, ..CompileOptions::default() };
    let ours = match driver::compile(SOURCE, &options) {
        Ok(compiled) => String::from_utf8(compiled.output).unwrap(),
        Err(e) => panic!("cdpc refused what nvcc takes: {e}"),
    };
    let (theirs, ours) = (shape(&theirs), shape(&ours));
    // The comparison is about these lines: nvcc has them (sizes 24 * 1024, 24, 16 * 5, ...).
    for expected in [
        ".visible .global .align 8 .b8 g_lines[24576];",
        ".visible .global .align 8 .b8 g_one[24];",
        ".visible .global .align 8 .b8 g_unions[80];",
        ".visible .const .align 8 .b8 c_lines[48];",
        ".extern .global .align 8 .b8 x_lines[72];",
    ] {
        assert!(theirs.iter().any(|l| l == expected), "nvcc has no `{expected}`: {theirs:#?}");
    }
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(sorted(ours), sorted(theirs), "left cdpc, right nvcc");
}
