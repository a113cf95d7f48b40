//! CUDA C++ through Clang: everyday constructs that the kernel language's front end never read
//! (`switch`, `goto`, lambdas, `auto`, range-`for`, `constexpr`, unions, `typedef struct`,
//! `new`/`delete`, variadic and defaulted templates, `<cmath>`, `__half`, `grid_group`,
//! `cuda::std::numeric_limits`, CUB's `WarpReduce`, Thrust's `complex` as a kernel parameter,
//! host-only headers, anonymous namespaces, extended lambdas, managed variables, virtual
//! functions), each a file of
//! `compiler/tests/cuda_cxx/` with a device-side launch.
//!
//! Each must compile with no diagnostic at all (a clean file prints nothing), launch through
//! the V2 entry points, link to a cubin (ptxas, nvlink with libcudadevrt: nothing left
//! undefined), and name its kernels and device variables, with their linkage (local,
//! `.visible` or `.weak`), as nvcc 13.5 does
//! (`nvcc -arch=sm_90 -rdc=true -ptx` is the oracle; nvcc's module id is given to cdpc, so
//! `static` kernels and variables get the same `__nv_static_` names). Skipped with a printed
//! reason where Clang 22 or the NVIDIA tools are missing.

use cdpc::driver::{self, CompileOptions, Emit};
use cdpc::front::cdp::preprocess::PreprocessOptions;
use cdpc::front::cuda::{find_engine, ClangEnv, ClangSearch};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn inputs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda_cxx");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "cu")).collect();
    files.sort();
    files
}

/// Why the Clang path cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    if let Err(d) = find_engine(&ClangSearch::default(), &ClangEnv::from_process()) {
        return Some(format!("no Clang 22: {}", d.message));
    }
    if crate::build_common::nvcc().is_none() {
        return Some("no nvcc beside ptxas: run `cargo xtask setup`".into());
    }
    None
}

/// Whether the Clang path can run here; prints why not when it cannot.
pub(crate) fn tools_ready() -> bool {
    match missing_tools() {
        Some(why) => {
            println!("skipped: {why}");
            false
        }
        None => true,
    }
}

/// The kernels (`.entry`) and defined device variables (`.global` and `.const`, string
/// literals aside), each as `KIND LINKAGE NAME`: `entry` or `variable`, then `.visible`,
/// `.weak` or `local` (a name only this file knows), and `managed` for a variable with
/// `.attribute(.managed)`.
fn symbols(ptx: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in ptx.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.contains(&".extern") || line.starts_with("//") {
            continue;
        }
        let linkage = [".visible", ".weak"].into_iter().find(|l| words.first() == Some(l)).unwrap_or("local");
        if let Some(at) = words.iter().position(|w| *w == ".entry") {
            // `name(` before parameters, `name()` without any (LLVM's spelling).
            out.insert(format!("entry {linkage} {}", words[at + 1].split('(').next().unwrap_or("")));
        } else if words.contains(&".global") || words.contains(&".const") {
            let decl = line.split(['=', ';']).next().unwrap_or("");
            let name = decl.split_whitespace().last().unwrap_or("").split('[').next().unwrap_or("");
            // String literals and the initializers of local aggregates (`$str`, Clang's
            // `.str` and `__const.f.x` as NVPTX spells them) are the compiler's own.
            if !name.contains('$') {
                // A managed variable is nvcc's `.attribute(.managed)` one.
                let managed = if words.contains(&".attribute(.managed)") { " managed" } else { "" };
                out.insert(format!("variable {linkage}{managed} {name}"));
            }
        }
    }
    out
}

/// nvcc's module id, from its name of a `static` kernel or variable, if it has one
/// (`__nv_static_<n>_<id>_<name>`).
fn module_id(symbols: &BTreeSet<String>) -> Option<String> {
    symbols.iter().find_map(|s| {
        let (len, tail) = s.rsplit(' ').next()?.strip_prefix("__nv_static_")?.split_once('_')?;
        let n: usize = len.parse().ok()?;
        tail.get(..n).map(str::to_string)
    })
}

/// A variable of libcu++, Thrust or CUB (possibly in the file's internal namespace, as nvcc
/// names those): nvcc keeps these unused constants (`cuda::std::ranges::__cpo::begin`,
/// `thrust::placeholders::_1`), Clang does not emit what nothing uses.
fn library_variable(symbol: &str) -> bool {
    symbol.starts_with("variable ") && ["4cuda3std", "6thrust", "3cub", "_ZZN4cuda"].iter().any(|ns| symbol.contains(ns))
}

/// A class's virtual table that nvcc keeps weak though nothing uses it (an abstract base's,
/// whose only user, its destructor, was inlined away): Clang leaves out what nothing uses, and
/// host code never looks a virtual table up by name.
fn unused_virtual_table(symbol: &str) -> bool {
    symbol.starts_with("variable .weak _ZTV")
}

/// Relocatable PTX of `file` (as nvcc's, `-rdc=true`), read from where it lies, and nvcc's
/// macro of `--extended-lambda` (the option nvcc compiles these files with: `nvcc_ptx`).
fn ptx_options(file: &Path) -> CompileOptions {
    let macros = vec![cdpc::front::cdp::preprocess::MacroOption::Define("__CUDACC_EXTENDED_LAMBDA__=1".into())];
    CompileOptions { emit: Emit::Ptx, preprocess: PreprocessOptions { input: Some(file.to_path_buf()), macros, ..Default::default() }, separate: true, ..CompileOptions::default() }
}

/// One of `compiler/tests/cuda_cxx/`'s files and its text.
/// `source` saved as `name` in a folder of its own and compiled to PTX; it must compile.
fn compiled_ptx(name: &str, source: &str) -> driver::Compiled {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, source).unwrap();
    driver::compile(source, &ptx_options(&file)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn sample(name: &str) -> (PathBuf, String) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda_cxx").join(name);
    let text = std::fs::read_to_string(&file).unwrap();
    (file, text)
}

fn nvcc_ptx(nvcc: &Path, file: &Path) -> String {
    let out = tempfile::tempdir().unwrap();
    let ptx = out.path().join("out.ptx");
    let status = Command::new(nvcc).args(["-arch=sm_90", "-rdc=true", "-ptx", "-w", "--extended-lambda"]).arg(file).arg("-o").arg(&ptx).output().expect("nvcc runs");
    assert!(status.status.success(), "nvcc failed on {}: {}", file.display(), String::from_utf8_lossy(&status.stderr));
    std::fs::read_to_string(ptx).unwrap()
}

#[test]
fn everyday_constructs_compile_with_nvcc_names() {
    if !tools_ready() {
        return;
    }
    let nvcc = crate::build_common::nvcc().unwrap();
    let mut failures = Vec::new();
    for file in inputs() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let theirs = symbols(&nvcc_ptx(&nvcc, &file));
        let source = std::fs::read_to_string(&file).unwrap();
        let options = CompileOptions { nv_module_id: module_id(&theirs), ..ptx_options(&file) };
        match driver::compile(&source, &options) {
            Ok(compiled) => {
                let ptx = String::from_utf8(compiled.output).unwrap();
                let ours = symbols(&ptx);
                if !compiled.warnings.is_empty() {
                    failures.push(format!("{name}: a clean file gave diagnostics: {:?}", compiled.warnings.iter().map(|d| &d.message).collect::<Vec<_>>()));
                } else if !ours.is_subset(&theirs) || theirs.difference(&ours).any(|s| !library_variable(s) && !unused_virtual_table(s)) {
                    failures.push(format!("{name}: symbols {ours:?}, nvcc's {theirs:?}"));
                } else if !ptx.contains("__cudaCDP2LaunchDeviceV2") || ptx.contains("__cudaCDP2GetParameterBuffer\n") {
                    failures.push(format!("{name}: launches are not V2"));
                } else if let Err(e) = driver::compile(&source, &CompileOptions { emit: Emit::Cubin, ..options.clone() }) {
                    // A linked cubin: nothing the file uses is left undefined (`new` is
                    // `operator new`, which must be defined for the device).
                    failures.push(format!("{name}: no linked cubin: {e}: {e:?}"));
                } else {
                    println!("{name}: {} symbols, as nvcc's", ours.len());
                }
            }
            Err(e) => failures.push(format!("{name}: {e}: {e:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The Clang path ends in a linked cubin like the `.cdp` path: ptxas and nvlink with
/// libcudadevrt, tail launch and fire-and-forget included (V2).
#[test]
fn a_cuda_cxx_file_links_to_a_cubin() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("tail_launch.cu");
    let options = CompileOptions { emit: Emit::Cubin, ..ptx_options(&file) };
    let cubin = driver::compile(&source, &options).unwrap().output;
    assert_eq!(&cubin[..4], b"\x7fELF");
    let runs: Vec<_> = driver::compile(&source, &options).unwrap().tool_runs.into_iter().map(|r| r.tool).collect();
    assert_eq!(runs, ["clang", "ptxas", "nvlink"]);
}

/// Clang's errors come back as E1000 at the file, line and column, with its notes.
#[test]
fn clang_errors_are_diagnostics_at_their_line() {
    if !tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.cu");
    let source = "__global__ void child(int *p) {}\n__global__ void parent() { child<<<1, 1>>>(1.5); }\n";
    std::fs::write(&file, source).unwrap();
    let options = ptx_options(&file);
    match driver::compile(source, &options) {
        Err(driver::CompileError::Diagnostics(d)) => {
            assert_eq!(d[0].code.as_str(), "E1000", "{d:?}");
            // Clang points at the argument that does not convert, on line 2.
            let at = d[0].labels[0].span.start as usize;
            assert_eq!(source[..at].lines().count(), 2, "{d:?}");
            assert!(source[at..].starts_with("1.5"), "{d:?}");
            assert!(d[0].message.contains("int *"), "{d:?}");
        }
        other => panic!("expected E1000, got {:?}", other.map(|c| c.warnings)),
    }
    // Nothing is left in the temporary folder but the file itself.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// Pre-CUDA-9 warp intrinsics (KLAP's QT) are E0903 by default, as nvcc refuses them for
/// sm_70 and newer; with `-flegacy-warp-intrinsics` they compile to their `_sync` forms, with
/// W0902. Either way at the user's line, not inside Clang's header.
#[test]
fn legacy_warp_intrinsics_warn_at_the_users_line() {
    if !tools_ready() {
        return;
    }
    let source = "__global__ void k(int *p) {\n    p[threadIdx.x] = __shfl_up(p[threadIdx.x], 1) + __any(p[0]);\n}\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("old.cu");
    std::fs::write(&file, source).unwrap();
    match driver::compile(source, &ptx_options(&file)) {
        Err(driver::CompileError::Diagnostics(d)) => {
            let refused: Vec<&str> = d.iter().filter(|d| d.code.as_str() == "E0903").map(|d| &source[d.labels[0].span.range()]).collect();
            assert_eq!(refused.len(), 2, "{d:?}");
            assert!(refused.contains(&"__shfl_up") && refused.contains(&"__any"), "{refused:?}");
        }
        other => panic!("expected E0903, got {:?}", other.map(|c| c.warnings)),
    }
    let options = driver::CompileOptions { legacy_warp_intrinsics: true, ..ptx_options(&file) };
    let compiled = driver::compile(source, &options).unwrap_or_else(|e| panic!("{e}"));
    let ptx = String::from_utf8(compiled.output).unwrap();
    assert!(ptx.contains("shfl.sync.up") && ptx.contains("vote.sync.any"), "{ptx}");
    let shown: Vec<&str> = compiled.warnings.iter().map(|d| &source[d.labels[0].span.range()]).collect();
    assert_eq!(compiled.warnings.iter().filter(|d| d.code.as_str() == "W0902").count(), 2);
    assert!(shown.contains(&"__shfl_up") && shown.contains(&"__any"), "{shown:?}");
}

/// A device-runtime function CUDA 13.5's libcudadevrt lacks (declared by its header, so Clang
/// accepts the call) is W0316 at the call through Clang, as the kernel language's sema says it
/// (rather than a link that fails with nvlink's raw message and no place in the source).
#[test]
fn a_runtime_function_libcudadevrt_lacks_is_w0316_at_the_call() {
    if !tools_ready() {
        return;
    }
    let source = "__global__ void child() {}\n__global__ void parent() {\n    cudaEvent_t e;\n    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);\n    cudaEventRecordWithFlags(e, 0, 0);\n    child<<<1, 1>>>();\n}\n";
    let compiled = compiled_ptx("event.cu", source);
    let w: Vec<_> = compiled.warnings.iter().filter(|d| d.code.as_str() == "W0316").collect();
    assert_eq!(w.len(), 1, "{:?}", compiled.warnings);
    assert_eq!(&source[w[0].labels[0].span.range()], "cudaEventRecordWithFlags", "{:?}", w[0]);
    assert!(w[0].message.contains("__cudaCDP2EventRecordWithFlags"), "{}", w[0].message);
    // The calls libcudadevrt has are no warning.
    assert!(!compiled.warnings.iter().any(|d| d.message.contains("EventCreateWithFlags")), "{:?}", compiled.warnings);
}

/// The V1 ABI keeps Clang's documented sequence and refuses what V1 cannot launch.
#[test]
fn tail_launch_under_v1_is_e0306() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("tail_launch.cu");
    let mut options = ptx_options(&file);
    options.target.launch_abi = cdpc::LaunchAbi::V1;
    match driver::compile(&source, &options) {
        Err(driver::CompileError::Diagnostics(d)) => {
            let codes: Vec<&str> = d.iter().map(|d| d.code.as_str()).collect();
            assert_eq!(codes, ["E0306", "E0306"]);
            assert_eq!(&source[d[0].labels[0].span.range()], "work");
        }
        other => panic!("expected E0306, got {:?}", other.map(|c| c.warnings)),
    }
}

/// `-lineinfo` through Clang names the user's lines only: what Clang's CUDA headers and the
/// device runtime's launch wrappers contribute is moved to the line that used them.
#[test]
fn lineinfo_names_the_users_lines() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("switch.cu");
    let options = CompileOptions { debug: Some(driver::DebugLevel::LineTables), ..ptx_options(&file) };
    let ptx = String::from_utf8(driver::compile(&source, &options).unwrap().output).unwrap();
    let files: Vec<&str> = ptx.lines().filter(|l| l.trim_start().starts_with(".file")).collect();
    assert!(!files.is_empty() && files.iter().all(|f| f.contains("switch.cu")), "{files:?}");
    assert!(!ptx.contains(".section"), "-lineinfo is directives only");
}

/// `--default-stream per-thread` (KLAP's Makefiles use it): launches into stream 0 go through
/// the per-thread stream's entry point, as nvcc's do.
#[test]
fn per_thread_default_stream_launches_through_ptsz() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("switch.cu");
    let mut options = ptx_options(&file);
    options.target.default_stream = cdpc::DefaultStream::PerThread;
    let compiled = driver::compile(&source, &options).unwrap();
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    let ptx = String::from_utf8(compiled.output).unwrap();
    assert!(ptx.contains("call.uni (retval0), __cudaCDP2LaunchDeviceV2_ptsz,") && !ptx.contains("__cudaCDP2LaunchDeviceV2,"), "{ptx}");
}

/// `-flaunch-threshold` applies to CUDA C++: a child whose threads can run in the launching
/// thread gets a serial copy called in place (and its parent a register cap), one with a
/// barrier is launched as before with `R0502` at its line (`-Rpass=aggregate`); off, nothing.
#[test]
fn thresholding_runs_small_children_in_place_with_remarks_at_their_lines() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("small_children.cu");
    let options = CompileOptions { launch_threshold: 128, pass_remarks: true, ..ptx_options(&file) };
    let compiled = driver::compile(&source, &options).unwrap();
    let remarks: Vec<(&str, &str, String)> = compiled.warnings.iter().map(|d| (d.code.as_str(), &source[d.labels[0].span.range()], d.labels[0].message.clone())).collect();
    assert_eq!(remarks, [("R0502", "with_barrier", "`with_barrier` calls `__syncthreads`: its threads cannot run one after another in the launching thread".to_string())]);
    let line = source[..compiled.warnings[0].labels[0].span.start as usize].lines().count();
    assert_eq!(source.lines().nth(line - 1).unwrap().trim(), "with_barrier<<<1, 32>>>(out);");
    let ptx = String::from_utf8(compiled.output).unwrap();
    let parent = &ptx[ptx.find(".entry _Z6parentPii(").expect("the parent")..];
    assert!(parent.contains(".maxnreg 64"), "{parent}");
    // `fill`'s serial copy is inlined into the parent's loop over its threads; `scale` is
    // `__noinline__`, and so is its copy, which that loop calls.
    assert!(!ptx.contains("_Z4fillPii__serial") && ptx.contains(".func  (.param .b32 func_retval0) _Z5scalei__serial("), "{ptx}");
    assert!(parent.contains("call.uni (retval0), _Z5scalei__serial,"), "{parent}");
    assert_eq!(ptx.matches("__cudaCDP2LaunchDeviceV2,").count(), 2, "both sites still launch when the grid is larger");
    // Off: the module is what it was without the option.
    let plain = driver::compile(&source, &ptx_options(&file)).unwrap();
    assert!(plain.warnings.is_empty());
    assert!(!String::from_utf8(plain.output).unwrap().contains("__serial"));
}

/// `-faggregate-launches=warp` applies to CUDA C++: each child gets an aggregated kernel
/// `C__agg` that the warp's leader launches; at `=block` the parent's threads record their
/// launches in shared memory and one thread launches them at the end of the block, at `=grid`
/// the grid's last block does, after finding its grid's entry by `%gridid`.
#[test]
fn warp_aggregation_gives_each_child_an_aggregated_kernel() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("small_children.cu");
    let options = CompileOptions { aggregate: cdpc::pipeline::aggregate::Granularity::Warp, pass_remarks: true, ..ptx_options(&file) };
    let compiled = driver::compile(&source, &options).unwrap();
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    let ptx = String::from_utf8(compiled.output).unwrap();
    for kernel in ["_Z4fillPii__agg", "_Z12with_barrierPi__agg"] {
        assert!(ptx.contains(&format!(".entry {kernel}(")), "{kernel}:\n{ptx}");
    }
    assert!(ptx[ptx.find(".entry _Z6parentPii(").unwrap()..].contains(".maxnreg 64"), "{ptx}");
    assert!(ptx.contains("vote.sync.ballot.b32") && ptx.contains("shfl.sync.idx.b32"), "{ptx}");
    // At V2 (the default) each site's two launches stay in the documented V1 sequence: the
    // leader's launch of `C__agg` (its lanes wait for it) and the threads' own where the group
    // falls back (V2 there hung: docs/AGGREGATION.md, "Why the warp's launches are V1").
    let parent = &ptx[ptx.find(".entry _Z6parentPii(").unwrap()..];
    let parent = &parent[..parent.find("\n}\n").unwrap()];
    let calls = |entry: &str| parent.matches(&format!("call.uni (retval0), {entry}, (")).count();
    assert_eq!((calls("__cudaCDP2GetParameterBuffer"), calls("__cudaCDP2LaunchDevice")), (4, 4), "{parent}");
    assert_eq!((calls("__cudaCDP2GetParameterBufferV2"), calls("__cudaCDP2LaunchDeviceV2")), (0, 0), "{parent}");
    for kernel in ["_Z4fillPii__agg", "_Z12with_barrierPi__agg"] {
        assert!(parent.lines().any(|l| l.trim_start().starts_with("mov.b64") && l.ends_with(&format!(" {kernel};"))), "{kernel} launched:\n{parent}");
    }
    let cubin = driver::compile(&source, &CompileOptions { emit: Emit::Cubin, ..options.clone() }).unwrap();
    assert_eq!(&cubin.output[..4], b"\x7fELF");
    assert_eq!(cubin.tool_runs.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(), ["clang", "ptxas", "nvlink"]);
    for granularity in [cdpc::pipeline::aggregate::Granularity::Block, cdpc::pipeline::aggregate::Granularity::Grid] {
        let options = CompileOptions { aggregate: granularity, ..options.clone() };
        let compiled = driver::compile(&source, &options).unwrap();
        assert!(compiled.warnings.is_empty(), "{granularity:?}: {:?}", compiled.warnings);
        let ptx = String::from_utf8(compiled.output).unwrap();
        let parent = &ptx[ptx.find(".entry _Z6parentPii(").expect("the parent")..];
        let parent = &parent[..parent.find("\n}\n").unwrap()];
        // Both sites record into shared tables; the block meets at barriers; no warp vote.
        assert!(ptx.contains(".shared .align 16 .b8 _Z6parentPii__agg0_table[") && ptx.contains("_Z6parentPii__agg1_table["), "{ptx}");
        assert!(parent.contains("bar.sync") && !parent.contains("vote.sync.ballot"), "{parent}");
        assert_eq!(parent.contains("%gridid"), granularity == cdpc::pipeline::aggregate::Granularity::Grid, "{parent}");
        for kernel in ["_Z4fillPii__agg", "_Z12with_barrierPi__agg"] {
            assert!(ptx.contains(&format!(".entry {kernel}(")), "{kernel}:\n{ptx}");
        }
    }
}

/// Block and grid granularity on Clang's IR: a kernel that launches itself after some threads
/// returned and the rest met at a barrier ends its blocks with its last thread at `=block` and
/// `=grid` (and its aggregated clone too); a launch in a loop is left alone at both, with a
/// remark at its launch's line.
#[test]
fn block_and_grid_aggregation_take_what_the_hir_passes_take() {
    if !tools_ready() {
        return;
    }
    let (file, source) = sample("block_grid.cu");
    let line_of = |d: &cdpc::diag::Diagnostic| {
        let line = source[..d.labels[0].span.start as usize].lines().count();
        source.lines().nth(line - 1).unwrap().trim().to_string()
    };
    let hint = "(-faggregate-launches=warp would aggregate it)";
    let looped = ("R0500", "leaf<<<1, 32>>>(out, i);".to_string(), format!("the launch is inside a loop: a thread may launch more than once {hint}"));
    let block = CompileOptions { aggregate: cdpc::pipeline::aggregate::Granularity::Block, pass_remarks: true, ..ptx_options(&file) };
    let compiled = driver::compile(&source, &block).unwrap();
    let remarks: Vec<(&str, String, String)> = compiled.warnings.iter().map(|d| (d.code.as_str(), line_of(d), d.labels[0].message.clone())).collect();
    assert_eq!(remarks, std::slice::from_ref(&looped));
    let ptx = String::from_utf8(compiled.output).unwrap();
    for kernel in ["_Z4treePii(", "_Z4treePii__agg("] {
        let body = &ptx[ptx.find(&format!(".entry {kernel}")).expect(kernel)..];
        let body = &body[..body.find("\n}\n").unwrap()];
        assert!(body.contains("_Z4treePii__agg_arrived") && body.contains("atom.shared.add.u32"), "{kernel}: {body}");
    }
    // Per grid too, since 92824c4: the self-launching `tree`, which returns early and calls
    // `__syncthreads`, ends its blocks with its last thread, and its records alternate between
    // its arena's two banks.
    let grid = CompileOptions { aggregate: cdpc::pipeline::aggregate::Granularity::Grid, ..block };
    let compiled = driver::compile(&source, &grid).unwrap();
    let remarks: Vec<(&str, String, String)> = compiled.warnings.iter().map(|d| (d.code.as_str(), line_of(d), d.labels[0].message.clone())).collect();
    assert_eq!(remarks, [looped]);
    let ptx = String::from_utf8(compiled.output).unwrap();
    assert!(ptx.contains(".global .align 16 .b8 _Z4treePii__agg_arena1["), "{ptx}");
    for kernel in ["_Z4treePii(", "_Z4treePii__agg("] {
        let body = &ptx[ptx.find(&format!(".entry {kernel}")).expect(kernel)..];
        let body = &body[..body.find("\n}\n").unwrap()];
        assert!(body.contains("_Z4treePii__agg_arrived") && body.contains("_Z4treePii__agg_grid_done"), "{kernel}: {body}");
    }
}

/// A crash inside the Clang that cdpc links (here the shim's own abort, which
/// `-DCDPC_TEST_CLANG_CRASH` asks for, as a failed assertion in Clang aborts) is caught: E1004
/// with the command line, exit status 1 rather than death by a signal, no output and no work
/// files. (In a process of its own, for its exit status; what a crash does to other Clang runs
/// of the process: `a_crash_beside_a_compilation_does_not_fail_it`.)
#[test]
fn a_clang_crash_is_e1004_and_leaves_nothing() {
    let Some((code, stderr)) = stopped_inside_clang("-DCDPC_TEST_CLANG_CRASH") else { return };
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("error[E1004]: Clang crashed while compiling this file"), "{stderr}");
    assert!(stderr.contains("command: clang++ ") && stderr.contains("-DCDPC_TEST_CLANG_CRASH"), "{stderr}");
}

/// An LLVM fatal error inside the Clang that cdpc links (`report_fatal_error`, here the shim's
/// own, which `-DCDPC_TEST_LLVM_FATAL` asks for; NVPTX's "PTX version 8.8 does not support
/// target 'sm_110'" was one) ends that compilation as a crash does, with LLVM's reason: E1000
/// "LLVM stopped: ..." and E1004, exit status 1, no output and no work files. It ended the
/// whole process before, printing "LLVM ERROR" and leaving its work files.
#[test]
fn an_llvm_fatal_error_in_clang_is_e1004_with_the_reason_and_leaves_nothing() {
    let Some((code, stderr)) = stopped_inside_clang("-DCDPC_TEST_LLVM_FATAL") else { return };
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("LLVM stopped: cdpc's test of LLVM's fatal errors") && stderr.contains("error[E1004]"), "{stderr}");
    assert!(!stderr.contains("LLVM ERROR"), "{stderr}");
}

/// `tail_launch.cu` to PTX with `flag` (the shim's test macro that stops Clang), in a process
/// of its own with a temporary folder of its own and no cache: its exit status and stderr,
/// having checked that it wrote no output and left no work files. `None` (skipped) without the
/// tools or with a Clang program in place of the linked one.
fn stopped_inside_clang(flag: &str) -> Option<(Option<i32>, String)> {
    if !tools_ready() || std::env::var_os("CDPC_CLANG").is_some_and(|c| !c.is_empty()) {
        return None;
    }
    let (file, _) = sample("tail_launch.cu");
    let dir = tempfile::tempdir().unwrap();
    let (tmp, output) = (dir.path().join("tmp"), dir.path().join("out.ptx"));
    std::fs::create_dir(&tmp).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_cdpc")).arg(&file).args(["--emit", "ptx", flag, "-o"]).arg(&output).env("TMPDIR", &tmp).env("CDPC_CACHE_DIR", "").output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(!output.exists(), "{flag}: an output was written");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "{flag}: work files left in {}", tmp.display());
    Some((run.status.code(), stderr))
}

/// A crash of one Clang in the process takes every other Clang's temporary output with it
/// (LLVM's signal handler removes them before the crash returns): `-dc`'s other side, running
/// at the same time, failed with "unable to rename temporary" (compiler/tests/cache_stress.rs,
/// 1 of 9 runs). A compilation that loses its output so runs again and finishes. Here the crash
/// comes while the other's temporary output is on disk, and that compilation parses for a
/// while longer (the C++ standard library).
#[test]
fn a_crash_beside_a_compilation_does_not_fail_it() {
    use cdpc::front::cuda::in_process::{compile, Outcome};
    use cdpc::front::cuda::ClangEngine;
    let Ok(ClangEngine::InProcess { resource_dir }) = find_engine(&ClangSearch::default(), &ClangEnv::from_process()) else {
        return println!("skipped: no linked Clang");
    };
    let dir = tempfile::tempdir().unwrap();
    let (source, output) = (dir.path().join("slow.cpp"), dir.path().join("slow.bc"));
    std::fs::write(&source, "#include <bits/stdc++.h>\nint f() { std::map<int, std::string> m; return m.size(); }\n").unwrap();
    let args = |extra: &[&str], file: &Path| {
        let mut args: Vec<std::ffi::OsString> = vec!["-resource-dir".into(), resource_dir.clone().into(), "-std=c++17".into()];
        args.extend(extra.iter().map(Into::into));
        args.push(file.into());
        args
    };
    let slow = args(&["-c", "-emit-llvm", "-o", output.to_str().unwrap()], &source);
    let crash = args(&["-fsyntax-only", "-DCDPC_TEST_CLANG_CRASH"], &source);
    std::thread::scope(|scope| {
        let compiling = scope.spawn(|| compile(&slow, None).unwrap());
        // Clang's temporary output (`slow-XXXXXX.bc.tmp`) is made before it parses.
        let started = std::time::Instant::now();
        let temporary = || std::fs::read_dir(dir.path()).unwrap().flatten().any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
        while !temporary() {
            assert!(started.elapsed() < std::time::Duration::from_secs(60) && !compiling.is_finished(), "Clang's temporary output never appeared");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(compile(&crash, None).unwrap().outcome, Outcome::Crashed);
        assert!(!compiling.is_finished(), "the crash came too late to test anything");
        let run = compiling.join().unwrap();
        assert_eq!(run.outcome, Outcome::Finished, "{:?}", run.messages);
    });
    assert!(std::fs::read(&output).unwrap().starts_with(b"BC\xc0\xde"), "the bitcode is written");
}

/// A Clang program named with `--clang` (`CDPC_CLANG`) runs as a process instead of the linked
/// Clang; both compile the same file to the same kernels and launches.
#[test]
fn a_named_clang_program_runs_as_a_process_with_the_same_kernels() {
    let program = Path::new("/usr/bin/clang++-22");
    if !tools_ready() || !program.is_file() {
        return println!("skipped: no {} or no NVIDIA tools", program.display());
    }
    let (file, source) = sample("tail_launch.cu");
    let linked = driver::compile(&source, &ptx_options(&file)).unwrap();
    let mut options = ptx_options(&file);
    options.clang.clang = Some(program.to_path_buf());
    let process = driver::compile(&source, &options).unwrap();
    assert!(process.tool_runs[0].command.starts_with(&*program.to_string_lossy()), "{:?}", process.tool_runs[0]);
    assert!(linked.tool_runs[0].command.contains("Clang inside cdpc"), "{:?}", linked.tool_runs[0]);
    let (linked, process) = (String::from_utf8(linked.output).unwrap(), String::from_utf8(process.output).unwrap());
    assert_eq!(symbols(&linked), symbols(&process));
    let launches = |ptx: &str| ptx.matches("__cudaCDP2LaunchDeviceV2, (").count();
    assert_eq!(launches(&linked), launches(&process));
    assert!(launches(&linked) > 0);
}

/// The device side skips the bodies of the C++ standard library's host functions (shim.cpp's
/// `SkipLibraryBodies`) and compiles again with them where an instantiation could reach the
/// program. So kernel templates that only `std::for_each`, `std::function` and
/// `std::transform` instantiate are still defined under nvcc's names, and `std::sort` of a type
/// without `operator<` is still an error, as in nvcc. Without a cache, so that the compilation
/// itself parses every header (a precompiled header holds every body).
#[test]
fn skipped_library_bodies_hide_no_kernel_and_no_error() {
    if !tools_ready() {
        return;
    }
    let nvcc = crate::build_common::nvcc().unwrap();
    let cdpc_with = |skip: &str, dir: &Path, file: &Path| {
        Command::new(env!("CARGO_BIN_EXE_cdpc"))
            .current_dir(dir)
            .env("CDPC_CACHE_DIR", "")
            .env("CDPC_CLANG_SKIP_BODIES", skip)
            .arg(file)
            .args(["--emit", "ptx", "-o", "-", "-fno-launch-optimizations"])
            .output()
            .unwrap()
    };
    let cdpc = |dir: &Path, file: &Path| cdpc_with("1", dir, file);
    let (file, _) = sample("library_callbacks.cu");
    let dir = tempfile::tempdir().unwrap();
    let run = cdpc(dir.path(), &file);
    assert!(run.status.success() && run.stderr.is_empty(), "{}", String::from_utf8_lossy(&run.stderr));
    let ours = symbols(&String::from_utf8(run.stdout).unwrap());
    let theirs = symbols(&nvcc_ptx(&nvcc, &file));
    assert_eq!(ours, theirs);
    for kernel in ["_Z4bumpIfEvPT_", "_Z4bumpIdEvPT_", "_Z5scaleIiEvPT_S0_", "_Z5clearIlEvPT_"] {
        assert!(ours.contains(&format!("entry .weak {kernel}")), "{kernel} missing: {ours:?}");
    }

    let bad = dir.path().join("sort.cu");
    std::fs::write(&bad, "#include <algorithm>\n#include <vector>\nstruct P { int x; };\nvoid order(std::vector<P> &v) { std::sort(v.begin(), v.end()); }\n__global__ void child(int *p) {}\n__global__ void parent(int *p) { child<<<1, 1>>>(p); }\n").unwrap();
    let run = cdpc(dir.path(), &bad);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("error[E1000]: invalid operands to binary expression ('P' and 'P')"), "{stderr}");
    assert!(stderr.contains("sort.cu:4:"), "the note names the user's line: {stderr}");
    // The messages of the whole parse, each said once: the first run's are dropped when the
    // compilation runs again.
    assert_eq!(run.stderr, cdpc_with("0", dir.path(), &bad).stderr);
    let nvcc_run = Command::new(&nvcc).args(["-arch=sm_90", "-rdc=true", "-ptx"]).arg(&bad).arg("-o").arg(dir.path().join("nvcc.ptx")).output().unwrap();
    assert!(!nvcc_run.status.success(), "nvcc rejects it too");
}

/// A file compiles to the same PTX every time. Clang emits a file's `static` and anonymous
/// namespace's device variables (which `-fgpu-rdc` makes visible under a suffixed name) in an
/// order that changes from run to run, and NVPTX writes the variables that `@llvm.used` names
/// in the order of a set keyed by addresses: before cdpc ordered both, six runs of this file
/// without a cache gave five different PTX files. Separate processes, as builds are.
#[test]
fn the_same_file_gives_the_same_ptx_every_time() {
    if !tools_ready() {
        return;
    }
    let (file, _) = sample("anonymous_namespace.cu");
    let dir = tempfile::tempdir().unwrap();
    let ptx: Vec<Vec<u8>> = (0..6)
        .map(|_| {
            let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).env("CDPC_CACHE_DIR", "").arg(&file).args(["--emit", "ptx", "-o", "-"]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            out.stdout
        })
        .collect();
    assert!(ptx.iter().all(|p| *p == ptx[0]), "the PTX differs between runs");
}

/// A host variable initialised with a managed variable's address, which nvcc initialises
/// before the runtime has loaded the module: `E1020` at the host variable, the managed one
/// labelled, and no object written.
#[test]
fn a_managed_address_in_a_host_initializer_is_e1020_at_its_line() {
    if !tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = "__managed__ int counter = 7;\nint *alias = &counter;\n__global__ void k() { counter++; }\n";
    std::fs::write(dir.path().join("m.cu"), source).unwrap();
    let out = crate::build_common::cdpc(dir.path(), &["-dc", "m.cu", "-o", "m.o", "--error-format", "json"]);
    assert!(!out.status.success());
    let text = crate::build_common::stderr(&out);
    let json: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(json["code"], "E1020", "{text}");
    assert_eq!((json["labels"][0]["line_start"].as_u64(), json["labels"][0]["column_start"].as_u64()), (Some(2), Some(6)), "{text}");
    assert_eq!(json["labels"][1]["line_start"].as_u64(), Some(1), "{text}");
    assert!(!dir.path().join("m.o").exists());
}

/// `compiler/tests/cuda_cxx/NAME`'s `-dc` objects in a new folder: cdpc's `ours.o` and nvcc's
/// `theirs.o`; `None` (with the reason printed) where the tools are missing.
fn dc_objects(name: &str) -> Option<tempfile::TempDir> {
    if !tools_ready() {
        return None;
    }
    let nvcc = crate::build_common::nvcc().unwrap();
    let (file, _) = sample(name);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&file, dir.path().join(name)).unwrap();
    let out = crate::build_common::cdpc(dir.path(), &["-dc", name, "-o", "ours.o"]);
    assert!(out.status.success(), "{}", crate::build_common::stderr(&out));
    let nv = Command::new(&nvcc).current_dir(dir.path()).args(["-dc", "-arch=sm_90", name, "-o", "theirs.o"]).output().unwrap();
    assert!(nv.status.success(), "{}", String::from_utf8_lossy(&nv.stderr));
    Some(dir)
}

/// `-dc` objects of a file with managed variables have nvcc's host symbols for them: the
/// variable's name a hidden pointer in `__nv_managed_data__` (`readelf -sW`), as nvcc's `-dc`
/// object of the same file has.
#[test]
fn dc_objects_define_managed_variables_as_nvccs() {
    let Some(dir) = dc_objects("managed.cu") else { return };
    // Each symbol of the variables: size, binding, visibility and section name.
    let managed = |object: &str| -> Option<BTreeSet<String>> {
        let out = Command::new("readelf").current_dir(dir.path()).args(["-sW", "-SW", object]).output().ok().filter(|o| o.status.success())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let sections: std::collections::HashMap<String, String> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let (index, rest) = l.strip_prefix('[')?.split_once(']')?;
                Some((index.trim().to_string(), rest.split_whitespace().next()?.to_string()))
            })
            .collect();
        Some(
            text.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .filter(|w| w.len() == 8 && ["launched", "weights", "_ZN5statsL5totalE"].contains(&w[7]))
                .map(|w| format!("{} {} {} {} {}", w[7], w[2], w[4], w[5], sections.get(w[6]).map_or("?", String::as_str)))
                .collect(),
        )
    };
    let Some(ours) = managed("ours.o") else { return println!("skipped: readelf is not available") };
    let theirs = managed("theirs.o").unwrap();
    assert_eq!(ours.len(), 3, "{ours:?}");
    assert_eq!(ours, theirs, "cdpc (left) and nvcc -dc (right)");
}

/// The host stubs of a `-dc` object are nvcc's `-dc` object's, template instances of `auto`
/// parameters included (`_Z2akILi5EEvPi`, where Clang's mangling has `TnDa`): another file's
/// host code compiled by nvcc launches them by those names.
#[test]
fn dc_objects_name_template_stubs_as_nvcc() {
    let Some(dir) = dc_objects("auto_template.cu") else { return };
    // The kernels' stubs: weak text symbols of the kernels' own names.
    let stubs = |object: &str| -> Option<BTreeSet<String>> {
        let out = Command::new("nm").current_dir(dir.path()).args(["--defined-only", object]).output().ok().filter(|o| o.status.success())?;
        Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().collect::<Vec<_>>().get(1..3).map(|k| (k[0].to_string(), k[1].to_string())))
                .filter(|(kind, name)| kind == "W" && (name.starts_with("_Z2") || name.starts_with("_Z6")))
                .map(|(_, name)| name)
                .collect(),
        )
    };
    let Some(ours) = stubs("ours.o") else { return println!("skipped: nm is not available") };
    let theirs = stubs("theirs.o").unwrap();
    assert!(ours.contains("_Z2akILi5EEvPi") && ours.contains("_Z6parentIL5Color1EEvPiP4Pair"), "{ours:?}");
    // nvcc also makes host stubs of what only device code launches; every stub of ours is one of nvcc's.
    assert!(ours.is_subset(&theirs), "cdpc {ours:?}, nvcc {theirs:?}");
}

/// Host code's `min` and `max` mean what they mean under nvcc: a program whose `main` prints
/// them for mixed signed and unsigned, long, float and double arguments (NaN included), built
/// as cdpc's `-dc` object and as nvcc's, prints the same (it makes no CUDA call, so it runs on a
/// machine without a GPU).
#[test]
fn host_min_and_max_are_nvccs() {
    if !tools_ready() || !crate::build_common::have("g++") {
        return;
    }
    let nvcc = crate::build_common::nvcc().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let source = r#"#include <cstdio>
#include <cmath>
__global__ void k(int *p, int n) { p[threadIdx.x] = max(p[threadIdx.x], n) + min(n, 3); }
int main() {
    int i = -5; unsigned u = 3; long l = -7; unsigned long ul = 9; long long ll = -11; unsigned long long ull = 13;
    float f = 2.5f, fn = NAN; double d = -1.25;
    printf("%u %u %u %u\n", min(i, u), max(i, u), min(u, i), max(u, i));
    printf("%d %d %ld %ld %lu %lu\n", min(i, 4), max(i, 4), min(l, -8L), max(l, 2L), min(l, ul), max(ul, l));
    printf("%lld %lld %llu %llu %llu\n", min(ll, -12LL), max(ll, 0LL), min(ll, ull), max(ull, ll), min(ull, 2ULL));
    printf("%g %g %g %g %g %g %g %g\n", min(f, 1.0f), max(f, 1.0f), min(fn, f), max(f, fn), min(d, 0.5), max(f, d), min(d, f), max(1.5, f));
    return 0;
}
"#;
    std::fs::write(dir.path().join("mm.cu"), source).unwrap();
    let out = crate::build_common::cdpc(dir.path(), &["-dc", "mm.cu", "-o", "mm.o"]);
    assert!(out.status.success(), "{}", crate::build_common::stderr(&out));
    let link = |args: &[&str]| {
        let o = Command::new(&nvcc).current_dir(dir.path()).args(["-arch=sm_90", "-rdc=true"]).args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    link(&["mm.o", "-o", "ours", "-lcudadevrt"]);
    link(&["mm.cu", "-o", "theirs"]);
    let run = |exe: &str| Command::new(dir.path().join(exe)).output().unwrap();
    let (ours, theirs) = (run("ours"), run("theirs"));
    assert!(theirs.status.success() && ours.status.success());
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&theirs.stdout));
    assert!(String::from_utf8_lossy(&theirs.stdout).starts_with("3 4294967291 3 4294967291\n"), "{}", String::from_utf8_lossy(&theirs.stdout));
}
