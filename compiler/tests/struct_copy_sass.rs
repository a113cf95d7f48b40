//! Copies of padded structs against nvcc's SASS: the memory instructions of a struct
//! assignment and of a launch's parameter-buffer stores, by opcode and width.
//!
//! LLVM keeps a whole-struct load or store of a struct with padding as one access; NVPTX then
//! makes a copy of 128 bytes or more a loop of single bytes (an aggregated launch's 144-byte
//! record would cost 144 one-byte loads and stores, in the block's and the grid's copies alike) and
//! stored an `int4` member into the parameter buffer as four 4-byte stores where nvcc writes one
//! 16-byte store. `front/cdp/codegen/function.rs` copies a struct from place to place in chunks of its
//! alignment, as nvcc does, and `back/split.rs` loads and stores struct values element by
//! element, so that LLVM's load-store vectorizer merges them. The oracle is nvcc's SASS of the
//! same source; aggregated code, which nvcc has no counterpart of, must have no byte-copy loop.

use crate::build_common::{cdpc, nvcc, run, stderr};
use std::collections::BTreeMap;
use std::path::Path;

const SOURCE: &str = r#"
struct Mixed { char c; double d; short s; int4 v; };
struct Rec { unsigned first, count; Mixed a, b; unsigned *p; char tail; };

extern "C" __global__ void copy_rec(Rec *dst, const Rec *src) { *dst = *src; }

extern "C" __global__ void init_copy(Rec *dst, const Rec *src)
{
    Rec r = *src;
    r.count += 1u;
    *dst = r;
}

extern "C" __global__ void child(Mixed a, Mixed b, unsigned int *counter)
{
    atomicAdd(counter, (unsigned)(a.c + b.s + a.v.x + b.v.w + (int)b.d));
}

extern "C" __global__ void parent(unsigned int *counter)
{
    Mixed a;
    a.c = 1; a.d = 2.0; a.s = 3; a.v = make_int4(4, 5, 6, (int)threadIdx.x);
    Mixed b = a;
    b.c = 7;
    child<<<1, 32>>>(a, b, counter);
}
"#;

/// One function's SASS: `(address, instruction)` without predicates' effect on the opcode.
type Listing = Vec<(u64, String)>;

fn listings(cuobjdump: &Path, cubin: &Path) -> BTreeMap<String, Listing> {
    let out = std::process::Command::new(cuobjdump).arg("-sass").arg(cubin).output().expect("cuobjdump runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut functions: BTreeMap<String, Listing> = BTreeMap::new();
    let mut current = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            current = name.trim().to_string();
            continue;
        }
        // `        /*0050*/                   @!P0 LDG.E.U8 R4, desc[UR4][R2.64] ;`
        let Some((addr, code)) = line.trim().strip_prefix("/*").and_then(|l| l.split_once("*/")) else { continue };
        let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
        let code = code.split("/*").next().unwrap_or("").trim().trim_end_matches(';').trim();
        if !code.is_empty() {
            functions.entry(current.clone()).or_default().push((addr, code.to_string()));
        }
    }
    functions
}

/// The opcode of an instruction, a predicate skipped: `LDG.E.128`.
fn opcode(code: &str) -> &str {
    code.split_whitespace().find(|w| !w.starts_with('@')).unwrap_or("")
}

fn is_memory(op: &str) -> bool {
    ["LD.", "LDG.", "LDS.", "LDL.", "ST.", "STG.", "STS.", "STL."].iter().any(|p| op.starts_with(p)) || ["LDS", "STS", "LDL", "STL"].contains(&op)
}

/// How many loads and stores of each kind (`STG.E.128`) a function has.
fn memory_ops(listing: &Listing) -> BTreeMap<String, usize> {
    let mut ops = BTreeMap::new();
    for (_, code) in listing {
        let op = opcode(code);
        if is_memory(op) {
            *ops.entry(op.to_string()).or_default() += 1;
        }
    }
    ops
}

fn count(ops: &BTreeMap<String, usize>, pred: impl Fn(&str) -> bool) -> usize {
    ops.iter().filter(|(op, _)| pred(op)).map(|(_, n)| n).sum()
}

/// Whether the function has a byte-copy loop: a backward branch over at most 16 instructions
/// among which are a one-byte load and a one-byte store.
fn has_byte_copy_loop(listing: &Listing) -> bool {
    listing.iter().enumerate().any(|(at, (addr, code))| {
        let op = opcode(code);
        let target = code.split_whitespace().last().and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok());
        let Some(target) = target.filter(|t| op.starts_with("BRA") && t < addr) else { return false };
        let body: Vec<&str> = listing[..=at].iter().filter(|(a, _)| *a >= target).map(|(_, c)| opcode(c)).collect();
        body.len() <= 16 && body.iter().any(|o| o.starts_with("LD") && o.ends_with(".U8")) && body.iter().any(|o| o.starts_with("ST") && o.ends_with(".U8"))
    })
}

fn compile(dir: &Path, args: &[&str]) {
    let out = cdpc(dir, args);
    assert!(out.status.success(), "cdpc {args:?}: {}", stderr(&out));
}

#[test]
fn padded_struct_copies_and_launch_stores_match_nvcc() {
    let Some(nvcc) = nvcc() else { return };
    let cuobjdump = nvcc.with_file_name("cuobjdump");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("copies.cu"), SOURCE).unwrap();
    std::fs::write(dir.path().join("copies.cdp"), SOURCE).unwrap();
    run(&nvcc, dir.path(), &["-arch=sm_90", "-rdc=true", "-cubin", "copies.cu", "-o", "nvcc.cubin"]);
    let theirs = listings(&cuobjdump, &dir.path().join("nvcc.cubin"));
    let nv = |f: &str| memory_ops(&theirs[f]);

    // The test is about something on nvcc's side: a 128-byte struct aligned to 16 is eight
    // 16-byte loads and stores, and the two `int4` members go into the parameter buffer as
    // 16-byte stores.
    assert_eq!(nv("copy_rec").get("LDG.E.128"), Some(&8), "{:?}", nv("copy_rec"));
    assert_eq!(nv("parent").get("ST.E.128"), Some(&2), "{:?}", nv("parent"));

    for abi in ["v2", "v1"] {
        // The parameter buffer as nvcc fills it: launches as written.
        compile(dir.path(), &["copies.cdp", "--launch-abi", abi, "--emit", "obj", "-o", "cdpc.o", "--overwrite", "-fno-launch-optimizations"]);
        let ours = listings(&cuobjdump, &dir.path().join("cdpc.o"));
        let us = |f: &str| memory_ops(&ours[f]);
        // A struct assignment and a copy-initialisation are nvcc's instruction for instruction.
        assert_eq!(us("copy_rec"), nv("copy_rec"), "{abi}: copy_rec, cdpc (left) and nvcc (right)");
        // A copy, a member changed and a store: nvcc copies member by member there (33 loads
        // and stores); no more than that.
        let all = |ops: &BTreeMap<String, usize>| count(ops, |_| true);
        assert!(all(&us("init_copy")) <= all(&nv("init_copy")), "{abi}: init_copy, cdpc {:?} nvcc {:?}", us("init_copy"), nv("init_copy"));
        assert!(!has_byte_copy_loop(&ours["init_copy"]), "{abi}: {:?}", ours["init_copy"]);
        // The parameter buffer: nvcc's 16-byte stores, and no more stores than nvcc's (the
        // argument of v1's launch call that goes through the stack, `STL`, not counted).
        let (p_us, p_nv) = (us("parent"), nv("parent"));
        assert_eq!(p_us.get("ST.E.128"), p_nv.get("ST.E.128"), "{abi}: parent, cdpc {p_us:?} nvcc {p_nv:?}");
        let stores = |ops: &BTreeMap<String, usize>| count(ops, |o| o.starts_with("ST."));
        assert!(stores(&p_us) <= stores(&p_nv), "{abi}: parent, cdpc {p_us:?} nvcc {p_nv:?}");
    }

    // Aggregated launches copy each 144-byte record (launch configuration and both structs)
    // once or twice: in 16-byte pieces, never a byte at a time. The one-byte accesses left are
    // the `char` members' own (a few per copy, against 144 for a byte copy).
    for granularity in ["block", "warp", "grid"] {
        let flag = format!("-faggregate-launches={granularity}");
        compile(dir.path(), &["copies.cdp", &flag, "--emit", "obj", "-o", "agg.o", "--overwrite"]);
        let ours = listings(&cuobjdump, &dir.path().join("agg.o"));
        let parent = &ours["parent"];
        assert!(!has_byte_copy_loop(parent), "{granularity}: a byte-copy loop in {parent:?}");
        let ops = memory_ops(parent);
        assert!(count(&ops, |o| o.ends_with(".U8")) < 32, "{granularity}: {ops:?}");
        assert!(count(&ops, |o| o.ends_with(".128")) >= 4, "{granularity}: {ops:?}");
    }
}
