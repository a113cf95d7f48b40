//! The corpus (`../shared/corpus`: NVIDIA's dynamic-parallelism samples and the KLAP benchmark
//! programs, which this project did not write) compiled unchanged, and the symbols of what
//! compiles compared with nvcc's.
//!
//! [`PROGRAMS`] (`tests/corpus-programs.txt`) lists the 13 device-code files with the `-I`, `-D`
//! and `--default-stream` options their Makefiles give nvcc. [`COMPILES`] is the ledger of the files cdpc compiles with
//! zero errors today: a listed file that fails, or an unlisted one that compiles, fails
//! `corpus_compiles_as_the_ledger_says`, so the ledger (and `docs/CORPUS.md`) stays true.
//!
//! `corpus_symbols_match_nvcc`: for every file in the ledger, the kernels (`.entry`) and the
//! device variables (`.global` definitions) in cdpc's PTX must be nvcc 13.5's (`nvcc -ptx
//! -rdc=true`, the wheels), name for name, so that host code written for nvcc's build finds
//! them. Both skip with a printed reason when the corpus or nvcc is absent.

use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::front::cdp::preprocess::{MacroOption, PreprocessOptions};
use cdpc::toolchain::{ToolSearch, Toolchain};
use cdpc::{DefaultStream, Target};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One device-code file of the corpus and its Makefile's options (a line of
/// `tests/corpus-programs.txt`, which `cargo xtask bench-compile` reads too).
struct Program {
    name: String,
    /// Under the corpus folder.
    file: String,
    /// `-I` folders under the corpus folder; the file's own folder comes first (`-I.`).
    includes: Vec<String>,
    /// KLAP's Makefiles compile with `--default-stream per-thread`.
    per_thread: bool,
    /// cdpc's own `-flegacy-warp-intrinsics` (QT's pre-CUDA-9 warp functions, E0903 without it).
    legacy_warp: bool,
}

static PROGRAMS: std::sync::LazyLock<Vec<Program>> = std::sync::LazyLock::new(|| {
    let table = include_str!("corpus-programs.txt");
    let programs: Vec<Program> = table
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert!(w.len() >= 3 && matches!(w[2], "legacy" | "per-thread"), "corpus-programs.txt: {l}");
            let (options, includes): (Vec<&str>, Vec<&str>) = w[3..].iter().partition(|w| w.starts_with('-'));
            assert!(options.iter().all(|o| *o == "-flegacy-warp-intrinsics"), "corpus-programs.txt: an option this test does not read: {l}");
            Program { name: w[0].into(), file: w[1].into(), includes: includes.iter().map(|s| s.to_string()).collect(), per_thread: w[2] == "per-thread", legacy_warp: !options.is_empty() }
        })
        .collect();
    assert_eq!(programs.len(), 13, "the corpus has 13 device-code files");
    programs
});
/// The ledger: the files cdpc compiles unchanged with zero errors (keep docs/CORPUS.md in step).
const COMPILES: &[&str] = &["cdpSimplePrint", "cdpSimpleQuicksort", "cdpAdvancedQuicksort", "cdpBitonicSort", "cdpBezierTessellation", "cdpQuadtree", "BFS", "BT", "GC", "MST", "QT", "SP", "SSSP"];

/// Files in the ledger whose kernels are not all nvcc's yet, each with why (docs/CORPUS.md): the
/// names test says so instead of comparing, and fails once the file's names do match.
const NAMES_DIFFER: &[(&str, &str)] = &[];

/// What nvcc is given instead of a file it cannot build unchanged: KLAP's QT calls the warp
/// votes and shuffle of before CUDA 9 (`__any`, `__ballot`, `__shfl_up`), which nvcc's ptxas
/// refuses for sm_70 and newer (even `nvcc -ptx` runs it). nvcc compiles a copy with each call
/// rewritten to its `_sync` form over `__activemask()`, what cdpc compiles the original to
/// (W0902), as `samples/harness/corpus-gpu.sh` does for the GPU run; the names do not depend
/// on the calls.
const NVCC_REWRITES: &[(&str, &[(&str, &str)])] =
    &[("QT", &[("__any(", "__any_sync(__activemask(), "), ("__ballot(", "__ballot_sync(__activemask(), "), ("__shfl_up(", "__shfl_up_sync(__activemask(), ")])];

/// KLAP's host code calls `cudaThreadSynchronize`, gone from CUDA 13; nvcc needs this define to
/// build the programs, and both compilers get it.
const COMPAT_DEFINE: (&str, &str) = ("cudaThreadSynchronize", "cudaDeviceSynchronize");

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    if dir.is_dir() {
        Some(dir.canonicalize().unwrap())
    } else {
        println!("skipped: no corpus at {}", dir.display());
        None
    }
}

/// KLAP's MST, SP and SSSP include `"cub/cub/cub.cuh"`, KLAP's own copy of CUB, which the corpus
/// does not carry: a folder with a one-line header of ours that includes the toolkit's CUB
/// (CCCL) instead. cdpc skips `<cub/cub.cuh>` as a host-only header (R0611).
fn cub_shim() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("cub/cub")).unwrap();
    std::fs::write(dir.path().join("cub/cub/cub.cuh"), "#include <cub/cub.cuh>\n").unwrap();
    dir
}

fn include_dirs(program: &Program, corpus: &Path, shim: &Path) -> Vec<PathBuf> {
    let path = corpus.join(&program.file);
    let mut dirs = vec![path.parent().unwrap().to_path_buf()];
    dirs.extend(program.includes.iter().map(|d| corpus.join(d)));
    dirs.push(shim.to_path_buf());
    dirs
}

/// cdpc's PTX of `program`, or its rendered errors.
fn cdpc_ptx(program: &Program, corpus: &Path, shim: &Path, nv_module_id: Option<String>) -> Result<String, String> {
    cdpc_compile(program, corpus, shim, nv_module_id).map_err(|e| match e {
        driver::CompileError::Diagnostics(diagnostics) => {
            let errors = diagnostics.iter().filter(|d| d.is_error());
            errors.take(4).map(|d| format!("  {}: {}", d.code, d.message)).collect::<Vec<_>>().join("\n")
        }
        other => other.to_string(),
    })
}

/// cdpc's PTX of `program`, with its Makefile's options.
fn cdpc_compile(program: &Program, corpus: &Path, shim: &Path, nv_module_id: Option<String>) -> Result<String, driver::CompileError> {
    let path = corpus.join(&program.file);
    let source = std::fs::read_to_string(&path).unwrap();
    let target = Target { default_stream: if program.per_thread { DefaultStream::PerThread } else { DefaultStream::Legacy }, ..Target::default() };
    let preprocess = PreprocessOptions {
        input: Some(path.clone()),
        include_dirs: include_dirs(program, corpus, shim),
        macros: vec![MacroOption::Define(format!("{}={}", COMPAT_DEFINE.0, COMPAT_DEFINE.1))],
        ..Default::default()
    };
    // Relocatable PTX, as nvcc's below (`-rdc=true`).
    let options = CompileOptions { emit: Emit::Ptx, target, preprocess, nv_module_id, legacy_warp_intrinsics: program.legacy_warp, separate: true, ..CompileOptions::default() };
    driver::compile(&source, &options).map(|c| String::from_utf8(c.output).unwrap())
}

fn nvcc() -> Option<PathBuf> {
    let tools = match Toolchain::discover(&ToolSearch::default()) {
        Ok(t) => t,
        Err(e) => {
            println!("skipped: the NVIDIA tools were not found, run `cargo xtask setup`: {e}");
            return None;
        }
    };
    let nvcc = tools.ptxas.parent()?.join("nvcc");
    if nvcc.is_file() {
        Some(nvcc)
    } else {
        println!("skipped: nvcc is not next to ptxas (pip package nvidia-cuda-nvcc)");
        None
    }
}

/// nvcc's PTX of `program` with the same options, or why it failed.
fn nvcc_ptx(nvcc: &Path, program: &Program, corpus: &Path, shim: &Path) -> Result<String, String> {
    let out_dir = tempfile::tempdir().unwrap();
    let ptx = out_dir.path().join("out.ptx");
    let mut command = Command::new(nvcc);
    command.args(["-arch=sm_90", "-rdc=true", "-ptx", "-w"]);
    let mut dirs = include_dirs(program, corpus, shim);
    let mut file = corpus.join(&program.file);
    if let Some((_, rewrites)) = NVCC_REWRITES.iter().find(|(name, _)| *name == program.name) {
        // the file's folder copied (its own headers are found beside it), the file rewritten
        let copy = out_dir.path().join("src");
        std::fs::create_dir(&copy).unwrap();
        for entry in std::fs::read_dir(&dirs[0]).unwrap().flatten().filter(|e| e.path().is_file()) {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        file = copy.join(file.file_name().unwrap());
        let text = rewrites.iter().fold(std::fs::read_to_string(&file).unwrap(), |t, (from, to)| t.replace(from, to));
        std::fs::write(&file, text).unwrap();
        dirs[0] = copy;
    }
    for dir in dirs {
        command.arg(format!("-I{}", dir.display()));
    }
    command.arg(format!("-D{}={}", COMPAT_DEFINE.0, COMPAT_DEFINE.1));
    if program.per_thread {
        command.args(["--default-stream", "per-thread"]);
    }
    let mut path = vec![nvcc.parent().unwrap().to_path_buf()];
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    command.env("PATH", std::env::join_paths(path).unwrap());
    let output = command.arg(&file).arg("-o").arg(&ptx).output().expect("nvcc runs");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).lines().take(3).collect::<Vec<_>>().join("\n"));
    }
    Ok(std::fs::read_to_string(&ptx).unwrap())
}

/// Whether a symbol is declared in the namespace of a library that only host-only headers
/// bring (`cub`, `thrust`, libcu++'s `cuda`), possibly inside the file's internal namespace:
/// the first components of its nested name (`_ZN3cub...`, `_ZZN4cuda...`, nvcc's
/// `__nv_static_<n>_<id>__ZN54_INTERNAL_<...>4cuda3std...`).
fn library_symbol(name: &str) -> bool {
    let mangled = match name.strip_prefix("__nv_static_") {
        Some(rest) => rest.find("__Z").map_or(rest, |at| &rest[at + 1..]),
        None => name,
    };
    let Some(mut rest) = mangled.strip_prefix("_ZZN").or_else(|| mangled.strip_prefix("_ZN")) else { return false };
    for _ in 0..2 {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Ok(len) = rest[..digits].parse::<usize>() else { return false };
        let Some(component) = rest.get(digits..digits + len) else { return false };
        if ["cub", "thrust", "cuda"].contains(&component) {
            return true;
        }
        if !component.starts_with("_INTERNAL_") {
            return false;
        }
        rest = &rest[digits + len..];
    }
    false
}

/// The kernels and the defined device variables of a PTX text.
/// The module id in nvcc's name of an internal kernel or variable, `__nv_static_<n>_<id>_<name>`
/// with `<n>` the id's length (`__nv_static_23__02c4de4f_4_s_cu__Z1kPi__Z2skPi`: the id is
/// `_02c4de4f_4_s_cu__Z1kPi`).
fn module_id_of(name: &str) -> Option<String> {
    let (len, tail) = name.strip_prefix("__nv_static_")?.split_once('_')?;
    let n: usize = len.parse().ok()?;
    (tail.len() > n && tail.as_bytes()[n] == b'_').then(|| tail[..n].to_string())
}

fn symbols(ptx: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut kernels = BTreeSet::new();
    let mut variables = BTreeSet::new();
    for line in ptx.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(at) = words.iter().position(|w| *w == ".entry") {
            if let Some(name) = words.get(at + 1) {
                kernels.insert(name.trim_end_matches('(').to_string());
            }
        } else if words.first().is_some_and(|w| *w == ".global" || *w == ".visible" || *w == ".weak") && words.contains(&".global") && !words.contains(&".extern") {
            // `.visible .global .align 4 .b32 name[4] = {...};`: the word before `=`, `;` or `[`.
            let decl = line.split(['=', ';']).next().unwrap_or("");
            // String literals (`$str`, `$str$1`, ... in nvcc's PTX and cdpc's) are the
            // compiler's own, not the program's variables.
            if let Some(name) = decl.split_whitespace().last().map(|w| w.split('[').next().unwrap()) {
                if !name.starts_with('$') {
                    variables.insert(name.to_string());
                }
            }
        }
    }
    (kernels, variables)
}

#[test]
fn corpus_compiles_as_the_ledger_says() {
    let Some(corpus) = corpus() else { return };
    let shim = cub_shim();
    let mut wrong = Vec::new();
    for program in PROGRAMS.iter() {
        let result = cdpc::driver::on_large_stack(|| cdpc_ptx(program, &corpus, shim.path(), None));
        let listed = COMPILES.contains(&program.name.as_str());
        match (&result, listed) {
            (Ok(_), true) => println!("{}: compiles", program.name),
            (Err(e), false) => println!("{}: does not compile yet:\n{e}", program.name),
            (Ok(_), false) => wrong.push(format!("{} now compiles: add it to COMPILES and docs/CORPUS.md", program.name)),
            (Err(e), true) => wrong.push(format!("{} is in COMPILES but fails:\n{e}", program.name)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn corpus_symbols_match_nvcc() {
    let Some(corpus) = corpus() else { return };
    let Some(nvcc) = nvcc() else { return };
    let shim = cub_shim();
    let mut compared = 0;
    for program in PROGRAMS.iter().filter(|p| COMPILES.contains(&p.name.as_str())) {
        let theirs = match nvcc_ptx(&nvcc, program, &corpus, shim.path()) {
            Ok(ptx) => ptx,
            Err(e) => {
                println!("{}: nvcc cannot build it, nothing to compare:\n{e}", program.name);
                continue;
            }
        };
        // Every kernel and variable, the libraries' own too (CUB's `EmptyKernel`, Thrust's
        // placeholders): Clang instantiates what the file's host code asks for, as nvcc does.
        let (their_kernels, their_variables) = symbols(&theirs);
        // nvcc names a `static __global__` kernel `__nv_static_<n>_<module id>_<mangled name>`,
        // with a module id that hashes the file's path (cudafe++ writes it); given that id, as
        // samples/harness/nvcc-cdpc.py gives it, cdpc names it the same.
        let module_id = their_kernels.iter().chain(&their_variables).find_map(|k| module_id_of(k));
        let ours = cdpc::driver::on_large_stack(|| cdpc_ptx(program, &corpus, shim.path(), module_id)).unwrap();
        let (our_kernels, our_variables) = symbols(&ours);
        assert!(!their_kernels.is_empty(), "{}: no kernel found in nvcc's PTX", program.name);
        if let Some((_, why)) = NAMES_DIFFER.iter().find(|(name, _)| *name == program.name) {
            assert_ne!((&our_kernels, &our_variables), (&their_kernels, &their_variables), "{}: its names now match nvcc's: take it out of NAMES_DIFFER", program.name);
            println!("{}: names not compared: {why}", program.name);
            continue;
        }
        assert_eq!(our_kernels, their_kernels, "{}: kernel symbols", program.name);
        // Every variable cdpc emits has nvcc's name, and so has every variable of nvcc's but
        // the libraries' unused internal constants (Thrust's placeholders, libcu++'s CPOs),
        // which nvcc keeps and Clang, finding no use, does not emit.
        let extra: Vec<_> = our_variables.difference(&their_variables).collect();
        let missing: Vec<_> = their_variables.difference(&our_variables).filter(|v| !library_symbol(v)).collect();
        assert!(extra.is_empty() && missing.is_empty(), "{}: device variables not nvcc's: {extra:?}; nvcc's missing: {missing:?}", program.name);
        println!("{}: {} kernels, {} device variables, as nvcc's", program.name, our_kernels.len(), our_variables.len());
        compared += 1;
    }
    assert!(compared > 0, "nvcc built none of the files cdpc compiles");
}

#[test]
fn library_symbols_are_told_apart() {
    assert!(library_symbol("_ZN3cub17CUB_300001_SM_9006detail11EmptyKernelIvEEvv()"));
    assert!(library_symbol("_ZZN4cuda3__414discard_memoryEPVvmE10_LINE_SIZE"));
    assert!(library_symbol("__nv_static_45__22b94195_23_cdpAdvancedQuicksort_cu_1c7c59e6__ZN54_INTERNAL_22b94195_23_cdpAdvancedQuicksort_cu_1c7c59e66thrust23THRUST_300001_SM_900_NS3seqE"));
    assert!(!library_symbol("_Z10qsort_warpPjS_jjP17qsortAtomicData_tP14qsortRingbuf_tjj"));
    assert!(!library_symbol("_ZN18cooperative_groups4__v15thingE"));
    assert!(!library_symbol("__nv_static_23__02c4de4f_4_s_cu__Z1kPi__Z2skPi"));
}

/// cdpQuadtree's one kernel is a template launched only from host code,
/// `build_quadtree_kernel<NUM_THREADS_PER_BLOCK><<<...>>>` with a `const int` local of 128:
/// cdpc must instantiate it (front/host_mentions.rs) under nvcc's name, and compile its body
/// (`cg::thread_block_tile<32>` among it).
#[test]
fn cdpquadtree_instantiates_its_host_launched_kernel_template() {
    let Some(corpus) = corpus() else { return };
    let Some(nvcc) = nvcc() else { return };
    let shim = cub_shim();
    let program = PROGRAMS.iter().find(|p| p.name == "cdpQuadtree").unwrap();
    let theirs = match nvcc_ptx(&nvcc, program, &corpus, shim.path()) {
        Ok(ptx) => symbols(&ptx).0,
        Err(e) => return println!("cdpQuadtree: nvcc cannot build it, nothing to compare:\n{e}"),
    };
    let wanted: Vec<&String> = theirs.iter().filter(|k| k.contains("build_quadtree_kernel")).collect();
    assert_eq!(wanted.len(), 1, "nvcc's kernels: {theirs:#?}");
    let ptx = cdpc::driver::on_large_stack(|| cdpc_compile(program, &corpus, shim.path(), None)).unwrap_or_else(|e| panic!("cdpQuadtree: {e}"));
    let ours = symbols(&ptx).0;
    assert!(ours.contains(wanted[0]), "cdpc's kernels {ours:#?} lack nvcc's {}", wanted[0]);
    println!("cdpQuadtree: {} as nvcc names it", wanted[0]);
}
