//! CUDA's `__align__(N)` on structs, and `typedef struct A { ... } B;`, against nvcc's PTX of
//! the same source: the kernels' names (the typedef names the struct `A` in them), their
//! by-value parameters (`.param .align 128 .b8 [128]`, size and alignment from `__align__`)
//! and the offsets of the stores into arrays of such structs.

use crate::build_common::nvcc_ptx;
use cdpc::driver::{self, CompileOptions, Emit};

const SOURCE: &str = r#"
typedef struct __align__(128) Ring_t { volatile unsigned int head; unsigned int tail; } Ring;
struct __align__(16) Pair { int a; };
struct __align__(4) Wide { double d; char c; };
__global__ void by_value(Ring r, Pair p, Wide w, int *out) { out[0] = r.tail + p.a + w.c; }
__global__ void arrays(Ring *r, Pair *p, Wide *w) {
    r[1].tail = sizeof(Ring);
    r[2].head = 7;
    p[3].a = sizeof(Pair);
    w[1].c = sizeof(Wide);
}
"#;

/// The `.entry` lines, the `.param` lines and the global stores' addresses, in order.
fn shape(ptx: &str) -> Vec<String> {
    ptx.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter_map(|l| {
            if l.starts_with(".visible .entry") || l.starts_with(".param") {
                // LLVM marks pointer parameters `.ptr .align 1`, nvcc does not.
                Some(l.trim_end_matches(',').replace(" .ptr .align 1", "").replace(".b64", ".u64").replace(".b32", ".u32"))
            } else if l.starts_with("st.") && l.contains(".global") {
                // `st.global.u32 [%rd4+132], %r1;`: the address's offset, not the registers.
                l.split('[').nth(1).and_then(|a| a.split(']').next()).map(|a| format!("store at {}", a.split('+').nth(1).unwrap_or("0")))
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn align_and_typedef_struct_match_nvcc() {
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let compiled = driver::compile(SOURCE, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}"));
    let ours = shape(&String::from_utf8(compiled.output).unwrap());
    assert!(ours.iter().any(|l| l.contains(".align 128 .b8") && l.ends_with("[128]")), "{ours:#?}");
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    assert_eq!(ours, shape(&theirs), "cdpc (left) and nvcc (right)");
}

#[test]
fn align_must_be_a_power_of_two() {
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    match driver::compile("struct __align__(24) S { int a; };\n__global__ void k(S *s) { s[1].a = 1; }", &options) {
        Err(driver::CompileError::Diagnostics(d)) => assert!(d.iter().any(|d| d.is_error() && d.message.contains("`__align__(24)`")), "{d:?}"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("__align__(24) was accepted"),
    }
}
