//! A short, deterministic fuzz run inside the normal test suite (stable Rust, no cargo-fuzz):
//! the seed corpus (samples/*.cdp, tests/ui/*.cdp, fuzz/regressions/*, the hand-written seeds
//! of fuzz/seeds/text) and thousands of
//! mutations of it (bit flips, truncations, splices, token swaps, inserted troublemakers) go
//! through the lexer, the parser, sema and rendering, and the ones that pass the checks through
//! LLVM code generation, each under `catch_unwind`. The oracles are `cdpc::fuzzing`'s, the same
//! the cargo-fuzz targets use.
//!
//! `CDPC_FUZZ_SEED=N` picks another seed (the seed is printed), `CDPC_FUZZ_ITERS=N` another
//! number of mutations.

use cdpc::driver::CompileOptions;
use cdpc::pipeline::aggregate::Granularity;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

/// xorshift64*: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for dir in ["samples", "tests/ui", "fuzz/regressions", "fuzz/seeds/text"] {
        let Ok(entries) = std::fs::read_dir(repo_root().join(dir)) else { continue };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
        paths.sort();
        for path in paths {
            if dir != "fuzz/regressions" && path.extension().is_none_or(|e| e != "cdp") {
                continue;
            }
            // The seeds made from samples/ and tests/ui/ are read there; the hand-written ones
            // (inline asm, cooperative groups, ...) only here.
            let file_name = path.file_name().unwrap().to_string_lossy();
            if dir == "fuzz/seeds/text" && (file_name.starts_with("sample_") || file_name.starts_with("ui_") || file_name.starts_with("grid_")) {
                continue;
            }
            files.push((format!("{dir}/{}", path.file_name().unwrap().to_string_lossy()), std::fs::read(&path).unwrap()));
        }
    }
    assert!(files.len() > 20, "the seed corpus is missing");
    files
}

/// Pieces of text likely to upset a compiler.
const TROUBLE: &[&str] = &[
    "<<<",
    ">>>",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "struct",
    "struct S",
    "__global__",
    "__device__",
    "extern \"C\"",
    "/*",
    "*/",
    "//",
    "\"",
    "'",
    "'\\",
    "\\",
    "#define X",
    "#include",
    "0x",
    "0xffffffffffffffffff",
    "18446744073709551616",
    "1e999",
    "0.",
    "1.f",
    "sizeof",
    "sizeof(",
    "->",
    ".",
    "&",
    "*",
    "?",
    ":",
    "=",
    "+=",
    "<<=",
    "return",
    "if (",
    "else",
    "for (;;)",
    "while (1)",
    "do",
    "break;",
    "continue;",
    "int",
    "void",
    "unsigned long long",
    "dim3",
    "cudaStream_t",
    "cudaStreamTailLaunch",
    "threadIdx.x",
    "\0",
    "\u{feff}",
    "é",
    "\u{10ffff}",
    "\r\n",
    "\t",
    "-2147483648",
    "1 / 0",
    "1 % 0",
    "1 << 64",
    "[0]",
    "[-1]",
    "[1 << 40]",
    // Host code, which the front end skips (front/split.rs).
    "__host__",
    "__host__ __device__",
    "typedef",
    "extern \"C\" {",
    "int main() {",
    "printf(\"%d\\n\", x);",
    "enum { A, B } e;",
    "typedef struct S {",
    "} S;",
    "bool b = true",
    "dim3 g(2, 1);",
    // C++, which the kernel language refuses as CUDA C++ (front/cuda_cxx.rs, E0923), in device
    // and host code alike.
    "class",
    "class C {",
    "public:",
    "namespace N {",
    "::",
    "using namespace std;",
    "template <typename T>",
    "struct D : S {",
    "int &r = ",
    "const S &",
    "this->",
    "S() : a(1) {}",
    "__device__ int f() const;",
    "operator+",
    "enum class E {",
    "enum struct",
    "new int",
    "cooperative_groups::",
    "[&](int x) { return x; }",
    "(int x, int n = 4)",
    "__device__ int f(int); __device__ int f(float);",
    "float(x)",
    "int n(3);",
    "S(1, 2)",
    // Qualifiers: `volatile` objects, pointers, members and references (hir::is_volatile_place).
    "volatile",
    "volatile int *",
    "int *volatile ",
    "const volatile ",
    "__volatile__",
    "(volatile int *)",
    "struct V { volatile unsigned n; };",
    "__shared__ volatile int s[4];",
    // CUDA's integer and warp intrinsics, old and new (sema/intrinsics.rs).
    "__popc(",
    "__brevll(",
    "__ffs(0)",
    "__activemask()",
    "__ballot_sync(",
    "__shfl_down_sync(0xffffffff, ",
    "__any(",
    "__shfl(",
    "1'000",
    // CUDA's vector types and host constants (sema/vector.rs, sema/host.rs).
    "float2",
    "double4_32a",
    "make_float4(",
    "make_char1(",
    ".w",
    "__ldg(",
    "long4",
    "const int N = 4;",
    "&N",
    "__launch_bounds__(",
    "__launch_bounds__(256, 2, 4)",
    "__forceinline__",
    "__noinline__",
    // Inline PTX assembly (front/asm.rs, sema/asm.rs, front/cdp/codegen/asm.rs).
    "asm(",
    "asm volatile(",
    "__asm__ __volatile__(",
    "asm(\"mov.u32 %0, %%smid;\" : \"=r\"(x));",
    " : \"=r\"(",
    " : \"+l\"(",
    " :: \"n\"(4)",
    " ::: \"memory\"",
    "\"%0 %1 %%\"",
    "\"%\"",
    "\"%9\"",
    "\"=h\"",
    "\"d\"",
    "\"f\"(1.0f)",
    "\"rn\"",
    "\"cc\"",
    "%[x]",
    // The preprocessor's.
    "\n#define F(x, ...) x ## __VA_ARGS__ #x\n",
    "\n#define A A B\n#define B A\n",
    "\n#if ",
    "\n#elif 1\n",
    "\n#else\n",
    "\n#endif\n",
    "\n#ifdef A\n",
    "\n#undef A\n",
    "\n#include <cstdio>\n",
    "\n#include \"x.h\"\n",
    "\n#include <thrust/x.h>\n",
    "\n#pragma once\n",
    "\n#error e\n",
    "\\\n",
    "##",
    "#",
    "__VA_ARGS__",
    "__LINE__",
    "__FILE__",
    "defined(",
    "F(",
    "A",
    "__has_include(",
    "R\"x(",
    ")x\"",
    "'\\377'",
    // The device-runtime API's types, handles and inline functions.
    "cudaExtent",
    "cudaPitchedPtr",
    "cudaMemcpy3DParms",
    "cudaFuncAttributes",
    "cudaGraphExec_t",
    "cudaGraphDeviceNode_t",
    "cudaGraphKernelNodeUpdate",
    "cudaLimit",
    "cudaStreamGraphTailLaunch",
    "cudaGraphLaunch(",
    "cudaGetCurrentGraphExec()",
    "cudaGridDependencySynchronize()",
    "cudaGetErrorString(",
    // Separate compilation: declarations that another file defines.
    "extern __device__ int counter;",
    "extern __constant__ float table[4];",
    "__device__ int helper(int);",
    "extern",
    // C's jumps and unions (sema/jumps.rs, front/cdp/codegen/types.rs's unions).
    "switch (x) {",
    "case 1:",
    "case 1 ... 3:",
    "case N:",
    "default:",
    "default: break;",
    "goto L;",
    "L:",
    "L: ;",
    "goto",
    "case",
    "union",
    "union U { int i; float f; };",
    "typedef struct { int a; } T;",
    "typedef union {",
    "...",
    "int y = 1; L:",
    "switch (i) { case 0: k<<<1, 1>>>(p); break; }",
    // Bit-fields (sema/bit_fields.rs, front/cdp/codegen/bit_fields.rs) and pointers to functions
    // (front/fn_pointers.rs, sema/fn_pointers.rs).
    "unsigned a : 3;",
    "int : 0;",
    "int b : 40;",
    "long long w : 40;",
    ": 2;",
    "bool f : 1;",
    "float g : 3;",
    "struct B { unsigned a : 3; int b : 5; } ;",
    "&s.a",
    "sizeof(s.a)",
    "s.a += 9",
    "s.a++",
    "__device__ struct B gb = {1, 2};",
    "int (*op)(int) = f;",
    "int (*ops[2])(int)",
    "typedef int (*binop)(int, int);",
    "binop",
    "(*op)(3)",
    "op(3)",
    "ops[1](2, 3)",
    "(*op)<<<1, 1>>>()",
    "op<<<1, 1>>>(p)",
    "int (*)(int)",
    "int (**pp)(int)",
    "&f",
    "void (*k2)(int *) = k;",
    "__device__ union V gv = {7};",
    "__device__ struct S gs = {1, 2};",
    // Pointers to kernels and launches through them (sema/launch.rs's `launch_through`,
    // back/device_launch.rs's `build_launch_through`), casts to abstract function-pointer types.
    "void (*kp)(int *) = k;",
    "__device__ void (*kt[2])(int *) = {k, k};",
    "kt[i]<<<1, 1>>>(p);",
    "(*kt[1])<<<1, 1>>>(p)",
    "s.k<<<1, 1>>>(p);",
    "s->k<<<2, 32, 0, cudaStreamTailLaunch>>>(p)",
    "(&k)<<<1, 1>>>(p)",
    "(&k)(p)",
    "kp == k",
    "kp != 0",
    "(void (*)(int *))",
    "(int (*)(int))",
    "(void *)k",
    "((void (*)(int *))v)<<<1, 1>>>(p);",
    "typedef void (*kernel_fn)(int *);",
    "kernel_fn",
    "struct J { kernel_fn k; int n; };",
    "__device__ void via(kernel_fn f, int *p) { f<<<1, 1>>>(p); }",
];

fn tokens(text: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in text.iter().enumerate() {
        if b.is_ascii_whitespace() || b"(){}[];,".contains(b) {
            if start < i {
                out.push(&text[start..i]);
            }
            out.push(&text[i..i + 1]);
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn mutate(rng: &mut Rng, corpus: &[(String, Vec<u8>)], input: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let len = data.len();
        match rng.below(8) {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 => data.truncate(rng.below(len + 1)),
            2 => {
                let (_, other) = &corpus[rng.below(corpus.len())];
                let (a, b) = (rng.below(len + 1), rng.below(other.len() + 1));
                data.truncate(a);
                data.extend_from_slice(&other[b..]);
            }
            3 => {
                let mut toks: Vec<Vec<u8>> = tokens(&data).into_iter().map(<[u8]>::to_vec).collect();
                if toks.len() > 1 {
                    let (a, b) = (rng.below(toks.len()), rng.below(toks.len()));
                    toks.swap(a, b);
                }
                data = toks.concat();
            }
            4 => {
                let mut toks: Vec<Vec<u8>> = tokens(&data).into_iter().map(<[u8]>::to_vec).collect();
                if !toks.is_empty() {
                    let at = rng.below(toks.len());
                    if rng.below(2) == 0 {
                        toks.remove(at);
                    } else {
                        let copy = toks[rng.below(toks.len())].clone();
                        toks.insert(at, copy);
                    }
                }
                data = toks.concat();
            }
            5 => {
                let at = rng.below(len + 1);
                let piece = TROUBLE[rng.below(TROUBLE.len())].as_bytes();
                data.splice(at..at, piece.iter().copied());
            }
            6 if len > 0 => {
                // Repeat a slice: long runs, deep nesting.
                let a = rng.below(len);
                let b = (a + 1 + rng.below(16)).min(len);
                let piece = data[a..b].to_vec();
                for _ in 0..rng.below(64) {
                    data.splice(a..a, piece.iter().copied());
                }
            }
            _ if len > 0 => {
                let at = rng.below(len);
                data[at] = rng.next() as u8;
            }
            _ => {}
        }
    }
    data
}

/// Launch aggregation for the `i`th run through code generation: off, block, warp and grid in
/// turn (with remarks, so that they are rendered too).
fn aggregation(i: usize) -> (Granularity, bool) {
    [(Granularity::Off, false), (Granularity::Block, true), (Granularity::Warp, true), (Granularity::Grid, true)][i % 4]
}

fn run_one(source: &str, codegen: bool, opt_level: u8, (aggregate, pass_remarks): (Granularity, bool)) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| {
        cdpc::fuzzing::preprocess(source);
        cdpc::fuzzing::lex(source);
        cdpc::fuzzing::parse(source);
        if codegen {
            // Every third run is separate compilation (-dc), with -lineinfo or -G in turn.
            let (separate, debug) = match opt_level {
                1 => (true, Some(cdpc::driver::DebugLevel::LineTables)),
                3 => (true, Some(cdpc::driver::DebugLevel::Full)),
                _ => (false, None),
            };
            let options = CompileOptions { opt_level, aggregate, pass_remarks, separate, debug, ..CompileOptions::default() };
            cdpc::fuzzing::codegen(source, &options);
        } else {
            cdpc::fuzzing::check(source);
        }
    }))
    .map_err(|payload| payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "a panic".into()))
}

#[test]
fn corpus_and_mutations_never_panic() {
    let seed: u64 = std::env::var("CDPC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_CD9C);
    let iterations: usize = std::env::var("CDPC_FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    println!("fuzz smoke: seed {seed} (CDPC_FUZZ_SEED), {iterations} mutations (CDPC_FUZZ_ITERS)");
    let corpus = corpus();
    let mut rng = Rng(seed | 1);
    let mut failures = Vec::new();
    let started = std::time::Instant::now();
    for (name, bytes) in &corpus {
        let source = String::from_utf8_lossy(bytes);
        for k in 0..4 {
            if let Err(e) = run_one(&source, true, 2, aggregation(k)) {
                failures.push(format!("seed file {name} ({:?}): {e}", aggregation(k).0));
            }
        }
    }
    let mut generated = 0;
    for i in 0..iterations {
        let (name, bytes) = &corpus[rng.below(corpus.len())];
        let data = mutate(&mut rng, &corpus, bytes);
        let source = String::from_utf8_lossy(&data);
        // Code generation is the slow part: every eighth mutant that passes the checks.
        let codegen = i % 8 == 0;
        generated += codegen as usize;
        if let Err(e) = run_one(&source, codegen, (i % 4) as u8, aggregation(i / 8)) {
            let file = std::env::temp_dir().join(format!("cdpc-fuzz-{seed}-{i}.cdp"));
            let _ = std::fs::write(&file, &data);
            failures.push(format!("mutation {i} of {name} (seed {seed}), saved to {}: {e}", file.display()));
        }
    }
    println!("fuzz smoke: {} seed files and {iterations} mutations ({generated} through codegen) in {:.1} s", corpus.len(), started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} inputs panicked:\n{}", failures.len(), failures.join("\n"));
}

/// The preprocessor alone, on many more mutations than the whole compiler gets: it is the
/// phase that reads every byte first. `CDPC_FUZZ_PP_ITERS=N` sets the count (1,000,000 for
/// the run in fuzz/RESULTS.md, in release mode).
#[test]
fn preprocessor_mutations_never_panic() {
    let seed: u64 = std::env::var("CDPC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0CC0);
    let iterations: usize = std::env::var("CDPC_FUZZ_PP_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(5000);
    let corpus = corpus();
    let mut rng = Rng(seed | 1);
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    for i in 0..iterations {
        let (name, bytes) = &corpus[rng.below(corpus.len())];
        let data = mutate(&mut rng, &corpus, bytes);
        let source = String::from_utf8_lossy(&data);
        let outcome = catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::preprocess(&source)));
        if outcome.is_err() {
            let file = std::env::temp_dir().join(format!("cdpc-fuzz-pp-{seed}-{i}.cdp"));
            let _ = std::fs::write(&file, &data);
            failures.push(format!("mutation {i} of {name} (seed {seed}), saved to {}", file.display()));
        }
    }
    println!("fuzz smoke (preprocessor): seed {seed}, {iterations} mutations in {:.1} s", started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} inputs panicked:\n{}", failures.len(), failures.join("\n"));
}

/// The launch pipeline on LLVM IR, thresholding off and on: the IR seeds (`fuzz/seeds/ir/`:
/// the documented V1 sequence, Clang's output for launches, tail launch, static kernels and
/// small children run in place) and line-level mutations of them (lines dropped, repeated,
/// swapped, numbers changed), each through every pass under `catch_unwind`;
/// `cdpc::fuzzing::ir_pipeline` is the oracle.
#[test]
fn ir_pipeline_mutations_never_panic() {
    ir_mutations_never_panic("fuzz/seeds/ir", |text| cdpc::fuzzing::ir_pipeline(text.as_bytes()));
}

/// nvcc's names for Clang's host-side IR (`pipeline/host_names.rs`): the host-IR seeds
/// (`fuzz/seeds/host-ir/`: Clang 22's host side of a file with every kind of kernel and a
/// registered `static` variable) and line-level mutations of them; `cdpc::fuzzing::host_ir` is
/// the oracle.
#[test]
fn host_ir_mutations_never_panic() {
    ir_mutations_never_panic("fuzz/seeds/host-ir", cdpc::fuzzing::host_ir);
}

/// The IR seeds of `folder` and line-level mutations of them (lines dropped, repeated,
/// swapped, numbers changed), each through `oracle` under `catch_unwind`.
fn ir_mutations_never_panic(folder: &str, oracle: fn(&str)) {
    let dir = repo_root().join(folder);
    let mut seeds: Vec<String> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| std::fs::read_to_string(e.path()).unwrap()).collect();
    seeds.sort();
    assert!(!seeds.is_empty());
    let seed = std::env::var("CDPC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x1f00_2bad_5eed_u64);
    println!("seed {seed}");
    let mut rng = Rng(seed | 1);
    let iterations = std::env::var("CDPC_FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    let mut failures = Vec::new();
    for i in 0..iterations + seeds.len() {
        let text = if i < seeds.len() {
            seeds[i].clone()
        } else {
            let mut lines: Vec<String> = seeds[rng.below(seeds.len())].lines().map(str::to_string).collect();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(lines.len());
                match rng.below(4) {
                    0 => {
                        lines.remove(at);
                    }
                    1 => {
                        let line = lines[at].clone();
                        lines.insert(rng.below(lines.len()), line);
                    }
                    2 => {
                        let other = rng.below(lines.len());
                        lines.swap(at, other);
                    }
                    _ => {
                        let digits = ["0", "1", "3", "4", "64", "-1", "4096", "99999999999"];
                        lines[at] = lines[at].replacen(|c: char| c.is_ascii_digit(), digits[rng.below(digits.len())], 1);
                    }
                }
                if lines.is_empty() {
                    break;
                }
            }
            lines.join("\n")
        };
        if catch_unwind(AssertUnwindSafe(|| oracle(&text))).is_err() {
            failures.push(text);
        }
    }
    assert!(failures.is_empty(), "{} inputs panicked; the first:\n{}", failures.len(), failures[0]);
}

/// LLVM IR and bitcode as input (docs/IR-INPUT.md): random valid modules with launches
/// (`cdpc::fuzzing::launch_module`: every launch made through the V2 entry points, or `E1015`
/// for a buffer written after its launch), then byte-level mutations of the bitcode and text of
/// such modules, of the IR ui tests and of the cargo-fuzz target's seeds (`fuzz/seeds/ir_input/`:
/// 128-bit atomics and conversions, `canonicalize`) (bit flips, truncations, spliced and
/// repeated slices), each under `catch_unwind` through `cdpc::fuzzing::ir_input`: no panic,
/// every failure coded.
/// `CDPC_FUZZ_IR_ITERS=N` sets the number of each.
#[test]
fn ir_input_generated_and_mutated_never_panic() {
    let seed = std::env::var("CDPC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x1f00_2bad_5eed_u64);
    println!("seed {seed}");
    let mut rng = Rng(seed | 1);
    let iterations = std::env::var("CDPC_FUZZ_IR_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut failures = Vec::new();
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for _ in 0..iterations {
        let entropy: Vec<u8> = (0..48).map(|_| rng.next() as u8).collect();
        if catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::ir_generated(&entropy))).is_err() {
            failures.push(format!("generated from {entropy:?}"));
        }
        if inputs.len() < 16 {
            inputs.push(cdpc::fuzzing::launch_module(&entropy).ir.into_bytes());
        }
    }
    let ui = repo_root().join("tests/ui/ir");
    inputs.extend(std::fs::read_dir(&ui).unwrap().flatten().map(|e| std::fs::read(e.path()).unwrap()));
    // The cargo-fuzz target's seeds whose first byte is even: the rest is an input.
    let seeds = repo_root().join("fuzz/seeds/ir_input");
    let mut seeded: Vec<_> =
        std::fs::read_dir(&seeds).unwrap().flatten().map(|e| std::fs::read(e.path()).unwrap()).filter(|b| b.first().is_some_and(|f| f % 2 == 0)).map(|b| b[1..].to_vec()).collect();
    seeded.sort();
    inputs.extend(seeded);
    // Each text seed also as LLVM's bitcode.
    let bitcode: Vec<Vec<u8>> = inputs
        .iter()
        .filter_map(|text| {
            let context = inkwell::context::Context::create();
            let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(text, "seed");
            let module = context.create_module_from_ir(buffer).ok()?;
            Some(module.write_bitcode_to_memory().as_slice().to_vec())
        })
        .collect();
    assert!(bitcode.len() > 8);
    inputs.extend(bitcode);
    for i in 0..iterations {
        let mut bytes = inputs[rng.below(inputs.len())].clone();
        for _ in 0..1 + rng.below(4) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes.truncate(at.max(4)),
                2 => {
                    let end = (at + 1 + rng.below(64)).min(bytes.len());
                    let slice = bytes[at..end].to_vec();
                    let to = rng.below(bytes.len());
                    bytes.splice(to..to, slice);
                }
                _ => bytes[at] = rng.next() as u8,
            }
        }
        if catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::ir_input(&bytes))).is_err() {
            let file = std::env::temp_dir().join(format!("cdpc-ir-fuzz-{seed}-{i}"));
            let _ = std::fs::write(&file, &bytes);
            failures.push(format!("mutation {i}, saved to {}", file.display()));
        }
    }
    assert!(failures.is_empty(), "{} inputs failed:\n{}", failures.len(), failures.join("\n"));
}

/// Clang's messages: lines in its format with places inside, at and past the end of the file,
/// in headers that do not exist, with and without notes, and random bytes.
#[test]
fn clang_message_parsing_never_panics() {
    let mut rng = Rng(0x5eed_c1a9 | 1);
    let kinds = ["error", "warning", "note", "fatal error", "remark", "errr"];
    let files = ["/nonexistent/fuzz.cu", "/nonexistent/h.cuh", "clang++-22", "a:b:c.cu", ""];
    let main = "int é = 1;\n__global__ void k() {}\n\n";
    for _ in 0..3000 {
        let mut stderr = String::new();
        for _ in 0..1 + rng.below(4) {
            let file = files[rng.below(files.len())];
            let (line, col) = (rng.below(6), rng.below(40));
            let kind = kinds[rng.below(kinds.len())];
            match rng.below(3) {
                0 => stderr.push_str(&format!("{file}:{line}:{col}: {kind}: message [-Wx]\n")),
                1 => stderr.push_str(&format!("{file}: {kind}: no place\n")),
                _ => stderr.extend((0..rng.below(30)).map(|_| char::from(b' ' + rng.below(95) as u8))),
            }
        }
        let result = catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::clang_messages(&stderr, main)));
        assert!(result.is_ok(), "panicked on:\n{stderr}");
    }
    // The same messages as the Clang inside cdpc hands them over: any level, file, line and
    // column (up to u32's), a note first.
    use cdpc::front::cuda::in_process::{Level, Message};
    let levels = [Level::Note, Level::Remark, Level::Warning, Level::Error, Level::Fatal];
    for _ in 0..3000 {
        let messages: Vec<Message> = (0..1 + rng.below(4))
            .map(|_| {
                let file = files[rng.below(files.len())].to_string();
                let big = |rng: &mut Rng| if rng.below(4) == 0 { u32::MAX as usize - rng.below(3) } else { rng.below(8) };
                let (line, col) = (big(&mut rng), big(&mut rng));
                let place = (rng.below(3) != 0).then_some((file, line, col));
                Message { level: levels[rng.below(levels.len())], place, text: "message [-Wx]".into() }
            })
            .collect();
        let result = catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::clang_message_data(&messages, main)));
        assert!(result.is_ok(), "panicked on: {messages:?}");
    }
}

/// The preamble scan (compiler/src/front/cuda/preamble.rs) on random lines of directives, comments,
/// literals and code: never a panic, and a preamble ends at a line start and is its own
/// preamble. Depfile parsing on random bytes never panics.
#[test]
fn preamble_bounds_never_panic_and_end_at_a_line() {
    use cdpc::front::cuda::preamble::{bounds, parse_depfile};
    let mut rng = Rng(0x9e3b_1e55 | 1);
    let pieces = [
        "#include <a.h>\n",
        "#include \"b/*.h\"\n",
        "#define M(x) \\\n (x)\n",
        "#if A\n",
        "#ifdef B\n",
        "#else\n",
        "#elif C\n",
        "#endif\n",
        "#pragma once\n",
        "#line 3\n",
        "/* open\n",
        "*/\n",
        "// c\n",
        "\n",
        "  \t\r\n",
        "int x;\n",
        "#define S \"\\\"\"\n",
        "#define R R\"(x)\"\n",
        "'\n",
        "\"\n",
        "é\n",
        "\u{feff}",
        "#\n",
        "# include <c.h>\n",
        "\\\n",
        "#undef M\n",
    ];
    for _ in 0..5000 {
        let text: String = (0..rng.below(12)).map(|_| pieces[rng.below(pieces.len())]).collect();
        let found = catch_unwind(AssertUnwindSafe(|| bounds(&text)));
        let Ok(found) = found else { panic!("panicked on {text:?}") };
        if let Some(n) = found {
            assert!(n <= text.len() && text.is_char_boundary(n) && text.as_bytes()[n - 1] == b'\n', "{text:?}: {n}");
            assert_eq!(bounds(&text[..n]), Some(n), "{text:?}");
        }
        let bytes: Vec<u8> = (0..rng.below(40)).map(|_| [b':', b' ', b'\\', b'\n', b'a', b'\r'][rng.below(6)]).collect();
        let depfile = String::from_utf8_lossy(&bytes);
        assert!(catch_unwind(AssertUnwindSafe(|| parse_depfile(&depfile))).is_ok(), "{depfile:?}");
    }
}

/// The size of cdpc's cache (`CDPC_CACHE_MAX_SIZE`, compiler/src/front/cuda/cache.rs) on random
/// strings of digits, units, signs and spaces: never a panic, an accepted size starts with a
/// digit and reads back the same in bytes, a refusal says why.
#[test]
fn cache_sizes_never_panic() {
    use cdpc::front::cuda::cache::parse_size;
    let mut rng = Rng(0x5eed_ca5e | 1);
    let pieces = ["0", "1", "9", "99999999999", "k", "M", "g", "T", "B", "iB", "i", " ", "\t", ".", "-", "+", "é", "x", "\u{0}"];
    let mut accepted = 0;
    for _ in 0..5000 {
        let text: String = (0..rng.below(6)).map(|_| pieces[rng.below(pieces.len())]).collect();
        let Ok(parsed) = catch_unwind(AssertUnwindSafe(|| parse_size(&text))) else { panic!("panicked on {text:?}") };
        match parsed {
            Ok(size) => {
                accepted += 1;
                assert!(text.trim_start().starts_with(|c: char| c.is_ascii_digit()), "{text:?}");
                assert_eq!(parse_size(&size.to_string()), Ok(size), "{text:?}");
            }
            Err(why) => assert!(!why.is_empty(), "{text:?}"),
        }
    }
    assert!(accepted > 100, "the generator makes sizes too: {accepted}");
}

/// Random host code over the C++ standard library, compiled by the Clang inside cdpc with and
/// without its skipping of the library's host bodies on the device side
/// (`CDPC_CLANG_SKIP_BODIES=0`, shim.cpp's `SkipLibraryBodies`): the exit status, the messages
/// and the PTX must be the same. Each file takes a few library headers, kernel templates, types
/// of every kind the skipping tells apart (built-in, the library's, an enumeration, a plain
/// struct of the program, one with a member template, a class template, CUDA's `float4`) and
/// host statements that instantiate library templates with them, some launching kernels from
/// a lambda or functor the library calls, some ill-formed (`std::sort` of a type without `<`).
/// Without a cache, so that each compilation parses every header. `CDPC_FUZZ_SEED` as above;
/// `CDPC_FUZZ_LIBRARY_FILES=N` files (default 6).
#[test]
fn skipped_library_bodies_change_nothing_on_random_host_code() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let seed: u64 = std::env::var("CDPC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_CD9C);
    let files: usize = std::env::var("CDPC_FUZZ_LIBRARY_FILES").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    println!("library bodies: seed {seed}, {files} files");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut outcomes = [0usize; 2];
    for i in 0..files {
        let source = library_host_program(&mut rng);
        let file = dir.path().join(format!("lib{i}.cu"));
        std::fs::write(&file, &source).unwrap();
        let run = |skip: &str| {
            Command::new(env!("CARGO_BIN_EXE_cdpc"))
                .current_dir(dir.path())
                .env("CDPC_CACHE_DIR", "")
                .env("CDPC_CLANG_SKIP_BODIES", skip)
                .arg(&file)
                .args(["--emit", "ptx", "-o", "-"])
                .output()
                .unwrap()
        };
        let (skipped, whole) = (run("1"), run("0"));
        outcomes[whole.status.success() as usize] += 1;
        if skipped.status.code() != whole.status.code() || skipped.stderr != whole.stderr || skipped.stdout != whole.stdout {
            failures.push(format!(
                "lib{i}.cu differs (exit {:?} / {:?}):\n{source}\nskipping:\n{}\nwhole:\n{}",
                skipped.status.code(),
                whole.status.code(),
                String::from_utf8_lossy(&skipped.stderr),
                String::from_utf8_lossy(&whole.stderr)
            ));
        }
    }
    println!("library bodies: {} compiled, {} refused by both", outcomes[1], outcomes[0]);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A `.cu` file for the test above.
fn library_host_program(rng: &mut Rng) -> String {
    const HEADERS: [&str; 14] = ["algorithm", "vector", "functional", "map", "string", "iostream", "numeric", "memory", "sstream", "set", "tuple", "array", "list", "unordered_map"];
    // (spelling, has `operator<`)
    const TYPES: [(&str, bool); 9] =
        [("int", true), ("float", true), ("Plain", false), ("Color", true), ("Rich", true), ("Box<int>", false), ("float4", false), ("std::string", true), ("std::pair<int, long>", true)];
    let mut s = String::from("#include <type_traits>\n");
    for h in HEADERS {
        if rng.below(2) == 0 {
            s += &format!("#include <{h}>\n");
        }
    }
    // Every statement's headers, whatever was drawn above.
    s += "#include <algorithm>\n#include <vector>\n#include <functional>\n#include <map>\n#include <string>\n#include <memory>\n\n";
    s += "template <class T> __global__ void k0(T *p) {}\ntemplate <class T> __global__ void k1(T *p) {}\ntemplate <class T> __global__ void k2(T *p) {}\n";
    s += "struct Plain { int a; float b; };\nenum Color { Red, Green };\n";
    s += "struct Rich {\n    int v = 0;\n    template <class U> void take(U) const { k2<U><<<1, 1>>>(nullptr); }\n    bool operator<(const Rich &o) const { return v < o.v; }\n};\n";
    s += "template <class T> struct Box { T v; };\n";
    s += "struct Launcher {\n    template <class T> void operator()(T *p) const { k1<T><<<1, 1>>>(p); }\n};\n\nvoid host() {\n";
    for n in 0..1 + rng.below(5) {
        let (ty, ordered) = TYPES[rng.below(TYPES.len())];
        let k = rng.below(3);
        let statement = match rng.below(10) {
            0 => format!("std::vector<{ty}> v; v.push_back({ty}{{}}); v.resize(3);"),
            1 => format!("std::vector<{ty} *> v(2); std::for_each(v.begin(), v.end(), [](auto p) {{ k{k}<std::remove_pointer_t<decltype(p)>><<<1, 1>>>(p); }});"),
            2 => format!("std::function<void({ty} *)> f = []({ty} *p) {{ k{k}<{ty}><<<1, 1>>>(p); }}; f(nullptr);"),
            3 => format!("std::vector<{ty} *> v(2); std::for_each(v.begin(), v.end(), Launcher());"),
            4 => format!("std::map<int, {ty}> m; m[1] = {ty}{{}};"),
            // Ill-formed where the type has no `<`: both must refuse it alike.
            5 if ordered || rng.below(4) == 0 => format!("std::vector<{ty}> v(4); std::sort(v.begin(), v.end());"),
            6 => format!("std::unique_ptr<{ty}> u(new {ty}{{}}); Rich r; r.take(u.get());"),
            7 => "std::string t = std::to_string(7); t += \"x\";".to_string(),
            8 => format!("std::vector<{ty}> v(3); std::vector<{ty}> w; std::copy(v.begin(), v.end(), std::back_inserter(w));"),
            _ => format!("{ty} x{{}}; auto c = std::make_shared<{ty}>(x); (void)c;"),
        };
        s += &format!("    {{ // {n}\n        {statement}\n    }}\n");
    }
    s += "}\n\n__global__ void parent(int *p) { k0<int><<<1, 1>>>(p); }\n";
    s
}

/// nvcc's forms made Clang's (compiler/src/front/cuda/nvcc_text.rs) on random text made of brackets,
/// blanks, comments, literals, `asm` statements' pieces and line breaks: `cdpc::fuzzing::nvcc_text`'s
/// invariants (no panic, line breaks kept, only blanks, commas and `%` put in, a second rewrite
/// changes nothing).
#[test]
fn nvcc_text_rewrite_keeps_its_invariants_on_random_text() {
    let mut rng = Rng(0x1a07_c4e5 | 1);
    let pieces = [
        "<<", "<", ">>", ">", " ", "\t", "/*c*/", "/*\n*/", "//x\n", "\n", "\"", "'", "R\"(", ")\"", "1'0", "(", ")", ";", "operator", "k", "\\", "asm", "volatile", ":", "%", "%g", "%0", "__g", "_X",
        ",",
    ];
    let mut changed = 0;
    for _ in 0..60000 {
        let text: String = (0..rng.below(16)).map(|_| pieces[rng.below(pieces.len())]).collect();
        let Ok(()) = catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::nvcc_text(text.as_bytes()))) else { panic!("{text:?}") };
        changed += cdpc::front::cuda::nvcc_text::rewrite(text.as_bytes()).is_some() as usize;
    }
    assert!(changed > 100, "the generator makes spaced launches too: {changed}");
}

/// `__shared__` declarations made raw storage (compiler/src/front/cuda/shared_storage.rs) on random
/// text of declarations' pieces, comments, directives and line breaks:
/// `cdpc::fuzzing::shared_storage`'s invariants (no panic, only text put in, no line break made,
/// the reference declared).
#[test]
fn shared_storage_rewrite_keeps_its_invariants_on_random_text() {
    let mut rng = Rng(0x5b0a_7e11 | 1);
    let pieces = [
        "__shared__",
        " ",
        "static",
        "barrier",
        "bar",
        "cuda",
        "::",
        "<",
        ">",
        ",",
        "[",
        "]",
        "2",
        ";",
        "{",
        "}",
        "(",
        ")",
        "=",
        "__align__",
        "#pragma x\n",
        "/*;*/",
        "//{\n",
        "\n",
        "\"",
        "'",
        "extern",
        "&",
        "*",
        "T",
        ":",
    ];
    let mut rewritten = 0;
    for _ in 0..30000 {
        let piece = |rng: &mut Rng, n: usize| -> String { (0..rng.below(n)).map(|_| pieces[rng.below(pieces.len())]).collect() };
        // Random text around a declaration of `bar` whose type and attributes are random too.
        let (before, type_, after) = (piece(&mut rng, 8), piece(&mut rng, 4), piece(&mut rng, 6));
        let text = format!("{before}{}__shared__ {type_} bar;{after}", ["", ";", "{", "\n"][rng.below(4)]);
        let Ok(()) = catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::shared_storage(text.as_bytes()))) else { panic!("{text:?}") };
        if let Some(at) = text.rfind(" bar;") {
            rewritten += cdpc::front::cuda::shared_storage::insertions(text.as_bytes(), &[at + 1]).is_some() as usize;
        }
    }
    assert!(rewritten > 20, "the generator makes readable declarations too: {rewritten}");
}

/// Initialised variable-length arrays filled by a second declarator
/// (compiler/src/front/cuda/vla_init.rs) on random text of declarations' pieces, comments,
/// directives and line breaks: `cdpc::fuzzing::vla_init`'s invariants (no panic, only text put
/// in, no line break made, the filler names the array).
#[test]
fn vla_init_rewrite_keeps_its_invariants_on_random_text() {
    let mut rng = Rng(0x71a1_0b57 | 1);
    let pieces = ["int", " ", "const", "char", "*", "a", "n", "[", "]", "(", ")", "{", "}", "=", ",", ";", "0", "\"x\"", "'", "#if 0\n", "/*}*/", "//;\n", "\n", "::", "<", ">", "T"];
    let mut rewritten = 0;
    for _ in 0..30000 {
        let piece = |rng: &mut Rng, n: usize| -> String { (0..rng.below(n)).map(|_| pieces[rng.below(pieces.len())]).collect() };
        // Random text around a declaration of `v` whose type, bound and list are random too.
        let (before, type_, bound, list, after) = (piece(&mut rng, 8), piece(&mut rng, 3), piece(&mut rng, 4), piece(&mut rng, 5), piece(&mut rng, 6));
        let text = format!("{before}{}{type_} v[n{bound}] = {{{list}}}{}{after}", ["", ";", "{", "\n"][rng.below(4)], [";", ",", ""][rng.below(3)]);
        let Ok(()) = catch_unwind(AssertUnwindSafe(|| cdpc::fuzzing::vla_init(text.as_bytes()))) else { panic!("{text:?}") };
        if let Some(at) = text.rfind(" v[n") {
            rewritten += cdpc::front::cuda::vla_init::insertions(text.as_bytes(), &[at + 3]).is_some() as usize;
        }
    }
    assert!(rewritten > 20, "the generator makes readable declarations too: {rewritten}");
}

/// The names a wrapper's file may look headers up by (compiler/src/front/cuda/mod.rs,
/// `header_names`) on random text of brackets, quotes, path characters, non-ASCII letters and
/// line breaks: no panic, and every name is one a `<...>` or `"..."` in the text holds, relative,
/// of path characters only, with a letter or digit.
#[test]
fn header_names_never_panic_and_are_bracketed_path_names() {
    let mut rng = Rng(0x4ead_e125 | 1);
    let pieces = ["<", ">", "\"", "/", ".", "..", "a", "bits", "c++", "-", "_", " ", "\n", "é", "名", "\\", "#include", "__has_include(", ")", "<<", "0"];
    let mut found = 0;
    for _ in 0..40000 {
        let text: String = (0..rng.below(14)).map(|_| pieces[rng.below(pieces.len())]).collect();
        let mut names = std::collections::BTreeSet::new();
        let Ok(()) = catch_unwind(AssertUnwindSafe(|| cdpc::front::cuda::header_names(&text, &mut names))) else { panic!("{text:?}") };
        for name in &names {
            let path_like = name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./+-".contains(&b));
            assert!(path_like && !name.starts_with('/') && !name.ends_with('/') && name.bytes().any(|b| b.is_ascii_alphanumeric()), "{text:?}: {name:?}");
            assert!(text.contains(&format!("<{name}>")) || text.contains(&format!("\"{name}\"")), "{text:?}: {name:?}");
        }
        found += names.len();
    }
    assert!(found > 200, "the generator makes names too: {found}");
}
