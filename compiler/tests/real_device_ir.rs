//! Real device IR through every pass: the LLVM IR Clang makes for the device side of real
//! `.cu` files goes through `cdpc::fuzzing::ir_pipeline` in process (the passes on Clang's IR,
//! the launch pipeline with thresholding, warp, block and grid aggregation and the device
//! heap's pool off and on, the clean-up, nvcc's divisions: no panic, a valid module after each).
//!
//! The files: every `.cu` of `compiler/tests/cuda_cxx/` (the CUDA C++ constructs the suite
//! compiles: classes, templates, lambdas, virtual functions, CUB and Thrust, `__restrict__`
//! inlined, ...) and every `.cu` of the corpus beside the checkout (`../shared/corpus`:
//! cuda-samples' dynamic-parallelism programs and KLAP's, real programs nobody here wrote;
//! skipped with a printed reason when absent).
//!
//! The IR is the one cdpc's own compilation hands the pipeline: each file is compiled with
//! `CDPC_DEBUG_CRASH=1`, which stops cdpc where it notes its reproducer (driver/crash.rs), and
//! the reproducer's bitcode is read back. Every file of the suite must give its IR. A corpus
//! file may be refused, with coded errors only, as CUDA 13's nvcc refuses it too (KLAP's
//! lonestargpu headers call `cudaThreadSynchronize` and QT's `helper_cuda.h` reads
//! `cudaDeviceProp::computeMode`, which CUDA 13 removed); the run prints which were refused.

use crate::build_common::{cdpc_env, stderr, tool_dir};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The `.cu` files under `dir`, sorted, at any depth.
fn cu_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "cu") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Why a file gave no IR: refused with coded errors (the text), or anything else.
enum NoIr {
    Refused(String),
    Failed(String),
}

/// Clang's device bitcode for `file`, as cdpc hands it to the pipeline: the reproducer of a
/// forced crash, compiled with `-I` folders for the corpus's shared headers.
fn device_bitcode(file: &Path, includes: &[PathBuf], scratch: &Path) -> Result<Vec<u8>, NoIr> {
    use NoIr::*;
    let crashes = scratch.join("crashes");
    let _ = std::fs::remove_dir_all(&crashes);
    std::fs::create_dir_all(&crashes).unwrap();
    let mut args: Vec<String> = ["-arch=sm_90", "-c", "-rdc=true", "-std=c++17", "--extended-lambda"].iter().map(|s| s.to_string()).collect();
    args.push(format!("-I{}", file.parent().unwrap().display()));
    args.extend(includes.iter().map(|i| format!("-I{}", i.display())));
    args.extend([file.display().to_string(), "-o".into(), scratch.join("out.o").display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cdpc_env(scratch, &args, &[("CDPC_DEBUG_CRASH", "1"), ("CDPC_CRASH_DIR", crashes.to_str().unwrap())]);
    let text = stderr(&out);
    if out.status.code() == Some(1) && text.lines().filter(|l| l.starts_with("error")).all(|l| l.starts_with("error[E") || l.starts_with("error: could not compile")) {
        return Err(Refused(text));
    }
    if out.status.code() != Some(70) {
        return Err(Failed(format!("exit status {:?}, not the forced crash's 70: {text}", out.status.code())));
    }
    let dir = std::fs::read_dir(&crashes).unwrap().flatten().next().ok_or(Failed("no reproducer folder".into()))?.path();
    let bitcode = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "bc")).ok_or(Failed("no bitcode in the reproducer".into()))?;
    Ok(std::fs::read(bitcode).unwrap())
}

#[test]
fn real_device_ir_goes_through_every_pass() {
    if tool_dir().is_none() {
        println!("skipped: no CUDA toolkit for Clang's CUDA headers (cargo xtask setup)");
        return;
    }
    let root = repo_root();
    let corpus = root.join("../shared/corpus");
    let mut files = cu_files(&root.join("compiler/tests/cuda_cxx"));
    let suite = files.len();
    if corpus.is_dir() {
        files.extend(cu_files(&corpus));
    } else {
        println!("corpus skipped: no {} beside the checkout", corpus.display());
    }
    let includes = [corpus.join("klap/include"), corpus.join("cuda-samples/Common")];
    let started = std::time::Instant::now();
    let failures = std::sync::Mutex::new(Vec::new());
    let refused = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    // One file a core: the compilations are processes, the passes run in this one.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let scratch = tempfile::tempdir().unwrap();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    match device_bitcode(file, &includes, scratch.path()) {
                        Err(NoIr::Refused(_)) if i >= suite => refused.lock().unwrap().push(file.display().to_string()),
                        Err(NoIr::Refused(why) | NoIr::Failed(why)) => failures.lock().unwrap().push(format!("{}: {why}", file.display())),
                        Ok(bitcode) => {
                            if std::panic::catch_unwind(|| cdpc::fuzzing::ir_pipeline(&bitcode)).is_err() {
                                failures.lock().unwrap().push(format!("{}: the passes panicked", file.display()));
                            }
                        }
                    }
                }
            });
        }
    });
    let (failures, mut refused) = (failures.into_inner().unwrap(), refused.into_inner().unwrap());
    refused.sort();
    println!("{} files ({suite} of the suite) through every pass in {:.1} s; refused with coded errors: {refused:?}", files.len() - refused.len(), started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{failures:#?}");
}
