//! GCC-style inline PTX assembly against nvcc: every asm statement of the programs below is
//! compiled by cdpc and by `nvcc -arch=sm_90 -rdc=true -ptx`, and each function's inline-asm
//! blocks (the text between `// begin inline asm` and `// end inline asm`, operands replaced
//! by registers) must be the same, registers compared by width rather than number (nvcc
//! writes `%f1` where LLVM writes `%r1`). That covers the template's text (`%%`, literal
//! templates without operands, concatenated literals), each constraint letter as input and
//! output, `+` operands sharing one register, `n` immediates, and a non-volatile asm whose
//! output is unused (dropped by both). Not compared: two identical non-volatile statements
//! (nvcc keeps both, LLVM merges them; see `front/cdp/codegen/asm.rs`) and asm in loops (unrolling
//! differs). Skipped with a printed reason when nvcc cannot be found.

use crate::build_common::nvcc_ptx;
use cdpc::driver::{self, CompileOptions, Emit};
use std::collections::BTreeMap;

const SOURCE: &str = r#"
struct Pair { int lo; int hi; };

__device__ unsigned highest_bit(unsigned word) {
    unsigned bit;
    asm volatile("bfind.u32 %0, %1;" : "=r"(bit) : "r"(word));
    return bit;
}

__device__ unsigned sm_id() {
    unsigned id;
    asm("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

__device__ unsigned lanes_below() {
    unsigned mask;
    __asm__("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
    return mask;
}

// A block of its own registers, `+r` read and written in one register, literals concatenated.
__device__ int inclusive_step(int value, int delta) {
    asm volatile("{\n\t"
                 ".reg .s32 tmp;\n\t"
                 ".reg .pred ok;\n\t"
                 "shfl.sync.up.b32 tmp|ok, %0, %1, 0x0, 0xffffffff;\n\t"
                 "@ok add.s32 tmp, tmp, %0;\n\t"
                 "mov.s32 %0, tmp;\n\t"
                 "}" : "+r"(value) : "r"(delta));
    return value;
}

__host__ __device__ float fused(float a, float b, float c) {
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
    return r;
}

__device__ void write_ref(int *out, int v) {
    asm("add.s32 %0, %1, 7;" : "=r"(*out) : "r"(v));
}

__global__ void widths(short *s, unsigned long long *l, float *f, double *d, char c) {
    short h;
    asm("add.s16 %0, %1, %2;" : "=h"(h) : "h"(s[0]), "h"(s[1]));
    s[2] = h;
    unsigned long long sum;
    asm("add.u64 %0, %1, %2;" : "=l"(sum) : "l"(l[0]), "n"(-3));
    l[1] = sum;
    asm("add.u64 %0, %0, %1;" : "+l"(l[2]) : "n"(0x100000000LL));
    float x;
    asm("mul.f32 %0, %1, %2;" : "=f"(x) : "f"(f[0]), "f"(f[1]));
    f[2] = fused(x, f[3], 1.5f);
    double y;
    asm("sqrt.rn.f64 %0, %1;" : "=d"(y) : "d"(d[0]));
    d[1] = y;
    asm volatile("st.global.s32 [%0], %1;" :: "l"(s + 4), "r"((int)c) : "memory");
    asm volatile("// an immediate: %0" :: "n"(4000000000u));
}

__global__ void registers(unsigned *out, Pair *pairs, int n) {
    out[0] = highest_bit(out[1]);
    out[2] = sm_id();
    out[4] = lanes_below();
    out[5] = inclusive_step(out[6], 1);
    int lo, hi;
    asm("mov.b64 {%0, %1}, %2;" : "=r"(lo), "=r"(hi) : "l"(out));
    pairs[0].lo = lo;
    pairs[0].hi = hi;
    asm("mov.b64 {%0, %1}, %2;" : "=&r"(pairs[1].lo), "=r"(pairs[1].hi) : "l"(pairs));
    unsigned *p;
    asm("cvta.to.global.u64 %0, %1;" : "=l"(p) : "l"(out + 8));
    *p = 5;
    write_ref(&pairs[2].lo, n);
    if (n > 2) {
        asm volatile("add.s32 %0, %0, %1;" : "+r"(pairs[3].lo) : "r"(n));
    }
    unsigned unused;
    asm("mov.u32 %0, %%clock;" : "=r"(unused));
}

__global__ void plain() {
    asm("membar.cta;");
    asm volatile("membar.gl;" ::: "memory");
    __asm__ __volatile__("bar.sync 0;");
    asm("// basic asm keeps %% and $ as written");
    asm volatile("// %% becomes one when there are operands: %0" :: "r"(1));
}
"#;

/// A register named by its width: `%r7` and `%f7` are `%b32`, `%rd2` and `%fd2` `%b64`.
fn normalize(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let letters = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let digits = after[letters..].bytes().take_while(u8::is_ascii_digit).count();
        let class = match &after[..letters] {
            "rs" | "h" => Some("%b16"),
            "r" | "f" => Some("%b32"),
            "rd" | "fd" => Some("%b64"),
            "p" => Some("%pred"),
            _ => None,
        };
        match class {
            Some(class) if digits > 0 => {
                out.push_str(class);
                rest = &after[letters + digits..];
            }
            _ => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

/// The name of the function a `.entry`/`.func` line declares.
fn function_name(line: &str) -> Option<String> {
    let at = line.find(".entry ").map(|i| i + 7).or_else(|| line.find(".func ").map(|i| i + 6))?;
    let mut rest = line[at..].trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    Some(rest.split(|c: char| c == '(' || c.is_whitespace()).next()?.to_string())
}

/// Each function's inline-asm blocks, normalized and sorted.
fn asm_blocks(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut function = String::new();
    let mut block: Option<Vec<String>> = None;
    for line in ptx.lines() {
        if let Some(name) = function_name(line) {
            function = name;
        } else if line.trim() == "// begin inline asm" {
            block = Some(Vec::new());
        } else if line.trim() == "// end inline asm" {
            let text = block.take().unwrap_or_default().join("\n");
            out.entry(function.clone()).or_default().push(text);
        } else if let Some(b) = &mut block {
            b.push(normalize(line));
        }
    }
    for blocks in out.values_mut() {
        blocks.sort();
    }
    out
}

#[test]
fn normalizes_registers_by_width() {
    assert_eq!(normalize("\tadd.f32 %f1, %r2, %rd3; mov.u32 %r4, %smid; %%x"), "add.f32 %b32, %b32, %b64; mov.u32 %b32, %smid; %%x");
    assert_eq!(function_name(".visible .func  (.param .b32 func_retval0) _Z5sm_idv()").as_deref(), Some("_Z5sm_idv"));
    assert_eq!(function_name(".visible .entry _Z5plainv()").as_deref(), Some("_Z5plainv"));
}

#[test]
fn inline_asm_matches_nvcc() {
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let compiled = driver::compile(SOURCE, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}"));
    let ours = String::from_utf8(compiled.output).unwrap();
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    let (ours, theirs) = (asm_blocks(&ours), asm_blocks(&theirs));
    assert!(theirs.values().map(Vec::len).sum::<usize>() >= 20, "nvcc's PTX has too few asm blocks: {theirs:#?}");
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "functions with inline asm: cdpc (left), nvcc (right)");
    for (function, blocks) in &theirs {
        assert_eq!(&ours[function], blocks, "inline asm of {function}: cdpc (left), nvcc (right)");
    }
}
