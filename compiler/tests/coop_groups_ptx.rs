//! Cooperative groups against nvcc: the same sources compiled by cdpc and by
//! `nvcc -arch=sm_90 -rdc=true -ptx`, with CUDA 13's `cooperative_groups.h`, and compared where
//! the two compilers must agree whatever their optimisers do:
//!
//! - each kernel's warp-level operations, one kernel per member function and group kind
//!   (`coalesced_group` in a divergent branch; `thread_block_tile<N>` for every N from 1 to 32,
//!   of a block and `<N, void>`): the set of `vote.sync`, `shfl.sync`, `activemask`, `fns`,
//!   `popc`, barrier and `bar.warp.sync` instructions and `%laneid`/`%lanemask_lt` reads, with
//!   the operands that carry the header's semantics resolved to their constants where they are
//!   constants (a shuffle's `c`, which encodes the tile's width as `(32 - N) << 8 | clamp`, and
//!   the member masks of shuffles, votes and `bar.warp.sync`; nvcc moves a constant into a
//!   register first, LLVM writes it in place);
//! - the symbols of device functions taking and returning groups by value, by `const &` and by
//!   pointer (nvcc's mangled class names, `thread_block_tile<32u, void>` among them), and their
//!   parameter declarations (size and alignment, as nvcc passes each group);
//! - `sizeof` of every group, as the constants a kernel stores.
//!
//! One difference is known and left out: `__ffs` (a coalesced group's `shfl` to rank 0) is
//! `brev` + `bfind` in nvcc's PTX and a `popc`-based count of trailing zeros in LLVM's, so
//! where nvcc writes `brev`, `brev`, `bfind` and `popc` are not compared. The semantics of the
//! values (packed ballots, ranks, meta groups) are checked on a GPU by `samples/coop_groups.cdp`.
//! Skipped with a printed reason when nvcc cannot be found.

use crate::build_common::nvcc_ptx;
use cdpc::driver::{self, CompileOptions, Emit};
use std::collections::{BTreeMap, BTreeSet, HashMap};

const HEADER: &str = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n\n";

/// The tile sizes cooperative_groups.h has for one warp.
const TILE_SIZES: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// One kernel per member function: a coalesced group of the odd inputs' threads, and tiles of
/// each size, as `thread_block_tile<N>` and as what `tiled_partition` returns.
fn methods_source() -> String {
    let mut s = String::from(HEADER);
    let coalesced = [
        ("thread_rank", "out[i] = g.thread_rank();"),
        ("size", "out[i] = g.size() + g.num_threads();"),
        ("meta", "out[i] = g.meta_group_rank() + 7 * g.meta_group_size();"),
        ("sync", "out[i] = 1; g.sync(); out[i + 1] = 2; cg::sync(g);"),
        ("ballot", "out[i] = g.ballot(v > 3);"),
        ("any", "out[i] = g.any(v > 3);"),
        ("all", "out[i] = g.all(v > 3);"),
        ("shfl", "out[i] = g.shfl(v, (int)out[0]);"),
        ("shfl_rank0", "out[i] = g.shfl(v, 0);"),
        ("shfl_up", "out[i] = g.shfl_up(v, 1);"),
        ("shfl_down", "out[i] = g.shfl_down(v, 2u);"),
        ("free_functions", "out[i] = cg::thread_rank(g) + cg::group_size(g);"),
    ];
    for (name, body) in coalesced {
        s.push_str(&format!(
            "__global__ void c_{name}(unsigned *out, const int *in) {{\n    unsigned i = threadIdx.x;\n    int v = in[i];\n    if (v & 1) {{\n        cg::coalesced_group g = cg::coalesced_threads();\n        {body}\n    }}\n}}\n\n"
        ));
    }
    let tile = [
        ("thread_rank", "out[i] = t.thread_rank() + v;"),
        ("size", "out[i] = t.size() + t.num_threads() + v;"),
        ("meta", "out[i] = t.meta_group_rank() + 7 * t.meta_group_size() + v;"),
        ("sync", "out[i] = v; t.sync(); out[i + 1] = 2; cg::sync(t);"),
        ("ballot", "out[i] = t.ballot(v > 3);"),
        ("any", "out[i] = t.any(v > 3);"),
        ("all", "out[i] = t.all(v > 3);"),
        ("shfl", "out[i] = t.shfl(v, (int)out[0]);"),
        ("shfl_up", "out[i] = t.shfl_up(v, 1);"),
        ("shfl_down", "out[i] = t.shfl_down(v, 2);"),
        ("shfl_xor", "out[i] = t.shfl_xor(v, 1);"),
    ];
    for n in TILE_SIZES {
        for (parent, suffix) in [("", ""), (", cg::thread_block", "_of_block")] {
            for (name, body) in tile {
                s.push_str(&format!(
                    "__global__ void t{n}{suffix}_{name}(unsigned *out, const int *in) {{\n    unsigned i = threadIdx.x;\n    int v = in[i];\n    cg::thread_block_tile<{n}{parent}> t = cg::tiled_partition<{n}>(cg::this_thread_block());\n    {body}\n}}\n\n"
                ));
            }
        }
    }
    s.push_str(
        "__global__ void block_methods(unsigned *out) {\n    cg::thread_block b = cg::this_thread_block();\n    out[b.thread_rank()] = b.size();\n    b.sync();\n    cg::sync(b);\n}\n\n\
         __global__ void this_thread(unsigned *out) {\n    cg::thread_block_tile<1> me = cg::this_thread();\n    out[threadIdx.x] = me.thread_rank() + me.meta_group_rank() + me.meta_group_size();\n    me.sync();\n}\n",
    );
    s
}

/// Groups passed to and returned from device functions, and their sizes.
const FUNCTIONS: &str = r#"
__device__ __noinline__ unsigned by_value(cg::coalesced_group g, int p) { return g.ballot(p) + g.thread_rank(); }
__device__ __noinline__ unsigned by_ref(const cg::coalesced_group &g, int v) { return g.shfl(v, 1); }
__device__ __noinline__ unsigned by_pointer(const cg::coalesced_group *g, int v) { return g->shfl_down(v, 1u) + g->size(); }
__device__ __noinline__ unsigned tile_value(cg::thread_block_tile<8> t, int v) { return t.shfl_xor(v, 1) + t.meta_group_rank(); }
__device__ __noinline__ unsigned tile_ref(const cg::thread_block_tile<16> &t, int v) { return t.shfl_down(v, 2) + t.meta_group_size(); }
__device__ __noinline__ unsigned tile_of_block(cg::thread_block_tile<4, cg::thread_block> t, cg::thread_block b) { return t.meta_group_rank() + b.thread_rank(); }
__device__ __noinline__ unsigned two_tiles(cg::thread_block_tile<32> a, cg::thread_block_tile<16> b, cg::thread_block_tile<32> c) { return a.ballot(1) + b.ballot(1) + c.thread_rank(); }
__device__ __noinline__ unsigned mixed(cg::thread_block b, cg::thread_block_tile<2, cg::thread_block> t, cg::thread_block_tile<2, cg::thread_block> *p) { return t.thread_rank() + p->thread_rank() + b.size(); }
__device__ __noinline__ cg::coalesced_group active() { return cg::coalesced_threads(); }
__device__ __noinline__ cg::thread_block_tile<32> warp_of(const cg::thread_block &b) { return cg::tiled_partition<32>(b); }

__global__ void callers(unsigned *out, const int *in) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<4, cg::thread_block> four = cg::tiled_partition<4>(block);
    unsigned i = block.thread_rank();
    int v = in[i];
    out[i] = tile_value(cg::tiled_partition<8>(block), v) + tile_ref(cg::tiled_partition<16>(block), v) + tile_of_block(four, block);
    out[i] += two_tiles(warp_of(block), cg::tiled_partition<16>(block), cg::tiled_partition<32>(block)) + mixed(block, cg::tiled_partition<2>(block), 0);
    if (v & 1) {
        cg::coalesced_group g = active();
        out[i] += by_value(g, v > 2) + by_ref(g, v) + by_pointer(&g, v);
    }
}

__global__ void kernel_parameters(cg::thread_block_tile<32> t, cg::coalesced_group g, cg::thread_block_tile<8, cg::thread_block> e, unsigned *out) {
    out[0] = t.meta_group_rank() + g.size() + e.thread_rank();
}

__global__ void sizes(unsigned *out) {
    out[0] = sizeof(cg::thread_block);
    out[1] = sizeof(cg::coalesced_group);
    out[2] = sizeof(cg::thread_block_tile<32>);
    out[3] = sizeof(cg::thread_block_tile<1>);
    out[4] = sizeof(cg::thread_block_tile<4, cg::thread_block>);
    out[5] = sizeof(cg::thread_block_tile<32, cg::thread_block>);
}
"#;

fn cdpc_ptx(source: &str) -> String {
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let compiled = driver::compile(source, &options).unwrap_or_else(|e| panic!("cdpc failed: {e}\n{source}"));
    String::from_utf8(compiled.output).expect("PTX is text")
}

/// The name of the function a `.entry`/`.func` line declares (after a `(.param ...)` result).
fn function_name(line: &str) -> Option<String> {
    let at = line.find(".entry ").map(|i| i + 7).or_else(|| line.find(".func ").map(|i| i + 6))?;
    let mut rest = line[at..].trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    Some(rest.split(|c: char| c == '(' || c == ';' || c.is_whitespace()).next()?.to_string())
}

/// The functions of a PTX module with the lines of their bodies (prototypes of callees, which
/// end in `;`, and nvcc's local copies `name$N` are not functions of the program).
fn functions(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in ptx.lines() {
        if let Some(name) = function_name(line) {
            let prototype = line.trim_end().ends_with(';');
            current = (!prototype && !name.contains('$')).then_some(name);
            if let Some(name) = &current {
                out.entry(name.clone()).or_default();
            }
        } else if let Some(name) = &current {
            out.get_mut(name).expect("entered above").push(line.trim().to_string());
        }
    }
    out
}

/// An integer operand as a number: `-1`, `6175`, `0xffffffff` (as a 32-bit signed value).
fn immediate(operand: &str) -> Option<i64> {
    let o = operand.trim();
    let v = if let Some(hex) = o.strip_prefix("0x").or_else(|| o.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else {
        o.parse::<i64>().ok()?
    };
    Some(v as u32 as i32 as i64)
}

/// The warp-level operations of a function body, each with its semantic operands resolved
/// through the function's `mov` of constants into registers.
fn warp_ops(body: &[String]) -> BTreeSet<String> {
    let mut constants: HashMap<String, i64> = HashMap::new();
    let mut ops = BTreeSet::new();
    for line in body {
        if line.starts_with("//") {
            continue;
        }
        let line = line.trim_end_matches(';');
        let line = if line.starts_with('@') { line.split_once(char::is_whitespace).map_or("", |(_, rest)| rest.trim()) } else { line };
        let (mnemonic, operands) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let operands: Vec<&str> = operands.split(',').map(str::trim).collect();
        if mnemonic.starts_with("mov.") && operands.len() == 2 {
            if let Some(v) = immediate(operands[1]) {
                constants.insert(operands[0].to_string(), v);
            }
        }
        let resolve = |o: &str| immediate(o).or_else(|| constants.get(o).copied()).map_or("reg".to_string(), |v| v.to_string());
        let last = operands.last().copied().unwrap_or("");
        let described = if mnemonic.starts_with("shfl.sync.") && operands.len() == 5 {
            Some(format!("{mnemonic} c={} mask={}", resolve(operands[3]), resolve(last)))
        } else if mnemonic.starts_with("vote.sync.") || mnemonic == "bar.warp.sync" {
            Some(format!("{mnemonic} mask={}", resolve(last)))
        } else if mnemonic == "barrier.sync" || mnemonic == "bar.sync" {
            Some(format!("{mnemonic} {last}"))
        } else if ["activemask.b32", "fns.b32", "popc.b32", "brev.b32", "bfind.u32", "bfind.shiftamt.u32"].contains(&mnemonic) {
            Some(mnemonic.to_string())
        } else {
            None
        };
        ops.extend(described);
        for register in ["%laneid", "%lanemask_lt"] {
            if line.contains(register) {
                ops.insert(register.to_string());
            }
        }
    }
    ops
}

/// A function's warp operations in cdpc's PTX and in nvcc's, as they are compared: where nvcc
/// computes an `__ffs` (`brev`, then `bfind`), LLVM counts trailing zeros with `popc`, so
/// then neither side's `brev`, `bfind` or `popc` is compared (see the module docs).
fn comparable(ours: &[String], theirs: &[String]) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut ours, mut theirs) = (warp_ops(ours), warp_ops(theirs));
    if theirs.contains("brev.b32") {
        for ops in [&mut ours, &mut theirs] {
            ops.retain(|o| !["brev.b32", "bfind.u32", "bfind.shiftamt.u32", "popc.b32"].contains(&o.as_str()));
        }
    }
    (ours, theirs)
}

/// A function's parameter declarations without their names, types by width:
/// `.param .align 8 .b8 [16]`, `.param .b64`.
fn parameters(header: &str) -> Vec<String> {
    header
        .split(".param")
        .skip(1)
        .map(|p| {
            let words: Vec<&str> = p.split(|c: char| c.is_whitespace() || c == ',' || c == ')' || c == '(').filter(|w| !w.is_empty()).collect();
            let mut out = Vec::new();
            let mut i = 0;
            while i < words.len() {
                let w = words[i];
                match w {
                    // LLVM's pointer attributes on kernel parameters are not layout.
                    ".ptr" => {}
                    ".align" if i > 0 && words[i - 1] == ".ptr" => i += 1,
                    ".align" => {
                        out.push(format!(".align {}", words.get(i + 1).unwrap_or(&"?")));
                        i += 1;
                    }
                    ".u64" | ".s64" | ".b64" => out.push(".b64".into()),
                    ".u32" | ".s32" | ".b32" => out.push(".b32".into()),
                    ".b8" => out.push(".b8".into()),
                    _ => {
                        if let Some(size) = w.find('[').map(|at| &w[at..]) {
                            out.push(size.to_string());
                        }
                        break;
                    }
                }
                i += 1;
            }
            out.join(" ")
        })
        .collect()
}

/// Each function's parameter declarations (its result first, when it returns through a
/// parameter): from the `.entry`/`.func` line to the `{` of its body.
fn signatures(ptx: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = ptx.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = function_name(line) else { continue };
        if name.contains('$') || line.trim_end().ends_with(';') {
            continue;
        }
        let header: String = lines[i..].iter().take_while(|l| l.trim() != "{").copied().collect::<Vec<_>>().join(" ");
        out.insert(name, parameters(&header));
    }
    out
}

/// The constants a kernel stores to global memory, by offset.
fn stored_constants(body: &[String]) -> BTreeMap<u64, i64> {
    let mut constants: HashMap<String, i64> = HashMap::new();
    let mut out = BTreeMap::new();
    for line in body {
        let line = line.trim_end_matches(';');
        let (mnemonic, operands) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let operands: Vec<&str> = operands.split(',').map(str::trim).collect();
        if mnemonic.starts_with("mov.") && operands.len() == 2 {
            if let Some(v) = immediate(operands[1]) {
                constants.insert(operands[0].to_string(), v);
            }
        }
        if mnemonic.starts_with("st.global.") && operands.len() == 2 {
            let address = operands[0].trim_matches(|c| c == '[' || c == ']');
            let offset = address.split_once('+').map_or(Some(0), |(_, o)| o.parse().ok()).unwrap_or(u64::MAX);
            let value = immediate(operands[1]).or_else(|| constants.get(operands[1]).copied());
            out.insert(offset, value.unwrap_or(i64::MIN));
        }
    }
    out
}

#[test]
fn operand_parsing() {
    assert_eq!(immediate("0xffffffff"), Some(-1));
    assert_eq!(immediate(" 6175"), Some(6175));
    let body: Vec<String> = ["mov.u32 \t%r8, 6175;", "@%p1 shfl.sync.idx.b32 \t%r9|%p1, %r3, %r4, %r8, %r7;", "vote.sync.ballot.b32 %r1, %p2, -1;", "mov.u32 %r1, %laneid;"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let ops: Vec<String> = warp_ops(&body).into_iter().collect();
    assert_eq!(ops, ["%laneid", "shfl.sync.idx.b32 c=6175 mask=reg", "vote.sync.ballot.b32 mask=-1"]);
    assert_eq!(
        parameters(".visible .entry _Z1kPj( .param .u64 .ptr .align 1 _Z1kPj_param_0, .param .align 8 .b8 _Z1kPj_param_1[16] )"),
        [".b64", ".align 8 .b8 [16]"]
    );
    assert_eq!(function_name(".visible .func  (.param .align 8 .b8 func_retval0[16]) _Z6activev()").as_deref(), Some("_Z6activev"));
}

#[test]
fn every_member_function_uses_the_warp_operations_nvcc_uses() {
    let source = methods_source();
    let ours = functions(&cdpc_ptx(&source));
    let Some(theirs) = nvcc_ptx(&source) else { return };
    let theirs = functions(&theirs);
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "kernels: cdpc (left), nvcc (right)");
    assert!(theirs.len() >= 140, "too few kernels: {}", theirs.len());
    let mut differ = Vec::new();
    for (name, body) in &theirs {
        let (mine, nvcc) = comparable(&ours[name], body);
        let collective = ["sync", "ballot", "any", "all", "shfl"].iter().any(|m| name.contains(&format!("_{m}")));
        assert!(!collective || !nvcc.is_empty(), "{name}: nvcc's PTX has no warp operation");
        if mine != nvcc {
            differ.push(format!("{name}:\n  cdpc: {mine:?}\n  nvcc: {nvcc:?}"));
        }
    }
    assert!(differ.is_empty(), "warp operations differ from nvcc's:\n{}", differ.join("\n"));
}

#[test]
fn groups_as_parameters_and_results_match_nvcc() {
    let source = format!("{HEADER}{FUNCTIONS}");
    let ptx = cdpc_ptx(&source);
    let Some(theirs) = nvcc_ptx(&source) else { return };
    let (our_signatures, their_signatures) = (signatures(&ptx), signatures(&theirs));
    assert_eq!(our_signatures.keys().collect::<Vec<_>>(), their_signatures.keys().collect::<Vec<_>>(), "symbols: cdpc (left), nvcc (right)");
    assert!(their_signatures.contains_key("_Z9two_tilesN18cooperative_groups4__v117thread_block_tileILj32EvEENS1_ILj16EvEES2_"), "{their_signatures:#?}");
    assert_eq!(our_signatures, their_signatures, "parameter declarations: cdpc (left), nvcc (right)");
    let (ours, theirs) = (functions(&ptx), functions(&theirs));
    let sizes = "_Z5sizesPj";
    assert_eq!(stored_constants(&ours[sizes]), stored_constants(&theirs[sizes]), "sizeof the groups: cdpc (left), nvcc (right)");
    assert_eq!(stored_constants(&theirs[sizes]).values().copied().collect::<Vec<_>>(), [24, 16, 16, 16, 1, 1]);
    for (name, body) in &theirs {
        let (mine, nvcc) = comparable(&ours[name], body);
        assert_eq!(mine, nvcc, "{name}'s warp operations: cdpc (left), nvcc (right)");
    }
}

/// The corpus's own uses, as written: cdpQuadtree's tile of 32 (`tiled_partition<32>(cta)`
/// into a `thread_block_tile<32>`, `any`, `ballot`, `shfl`, `shfl_up`) and
/// cdpAdvancedQuicksort's coalesced group (`ballot`, `shfl` of a cast).
#[test]
fn the_corpus_uses_compile_as_nvcc_compiles_them() {
    let source = format!(
        "{HEADER}{}",
        r#"
__global__ void quadtree_like(int *counts, const float *xs, int begin, int end) {
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    int warp_cnt = 0;
    for (int it = begin + tile32.thread_rank(); tile32.any(it < end); it += warpSize) {
        bool active = it < end;
        int num = __popc(tile32.ballot(active && xs[it] < 0.5f));
        warp_cnt += tile32.shfl(num, 0);
    }
    for (int offset = 1; offset < 4; offset *= 2) {
        int n = tile32.shfl_up(warp_cnt, offset);
        if (tile32.thread_rank() >= offset) warp_cnt += n;
    }
    cg::sync(tile32);
    if (tile32.thread_rank() == 0) counts[blockIdx.x] = warp_cnt;
    cg::sync(cta);
}

__global__ void quicksort_like(unsigned *out, const unsigned *in, unsigned pivot) {
    unsigned data = in[threadIdx.x];
    if (data != 7) {
        cg::coalesced_group active = cg::coalesced_threads();
        unsigned greater = data > pivot;
        unsigned gt_mask = active.ballot(greater);
        if (gt_mask == 0) {
            greater = data >= pivot;
            gt_mask = active.ballot(greater);
        }
        unsigned lt_mask = active.ballot(!greater);
        unsigned lt_offset = 0;
        if ((threadIdx.x & 31) == 0) lt_offset = atomicAdd(out, __popc(lt_mask));
        lt_offset = active.shfl((int)lt_offset, 0);
        out[1 + threadIdx.x] = lt_offset + __popc(gt_mask);
    }
}
"#
    );
    let ours = functions(&cdpc_ptx(&source));
    let Some(theirs) = nvcc_ptx(&source) else { return };
    for (name, body) in &functions(&theirs) {
        let (mine, nvcc) = comparable(&ours[name], body);
        assert_eq!(mine, nvcc, "{name}'s warp operations: cdpc (left), nvcc (right)");
    }
}
