//! LLVM's own NVPTX code-generation tests (`llvm/test/CodeGen/NVPTX/*.ll` of llvm-project) as
//! cdpc's input: real device IR written by LLVM's developers to reach every corner of the
//! back end (calls and kernels, inline assembly, atomics of every width, vectors, `i128`,
//! `half` and `bfloat`, barriers, texture and surface handles, variadic functions, aliases,
//! global constructors, debug information, the `.err.ll` files LLVM itself refuses).
//!
//! Each file goes through the `cdpc` binary as LLVM IR input (docs/IR-INPUT.md), as it is,
//! under several option sets, and once more with its triple made the one cdpc compiles
//! (`nvptx64-nvidia-cuda`, or `nvptx-nvidia-cuda` with `--address-size 32`), so that the files
//! written for `nvptx64-unknown-unknown` reach the launch pipeline and NVPTX too. Whatever the
//! file, cdpc must answer, never crash:
//! - no panic (exit status 101), no internal error (`E1025`, exit status 70), no signal;
//! - a failure is reported only through coded diagnostics: under `--error-format json` every
//!   line on stderr is a diagnostic, and each error has a code (`E` and four digits), so no
//!   message of LLVM's or of a tool reaches the user unexplained;
//! - a failure leaves no output file behind; a success writes one.
//!
//! The files are LLVM's, not cdpc's, and are not kept in this repository: the test reads them
//! from `CDPC_LLVM_NVPTX_DIR`, else from `../shared/corpus/llvm-nvptx` beside the checkout,
//! and is skipped with a printed reason when neither holds any `.ll` file. With ptxas (`cargo
//! xtask setup`) the cubin and `-dc` object builds run as well.
//!
//! The runs go in parallel, one compilation per core: 142 files, 1,168 compilations (ptxas
//! present; 727 compile, the others are coded refusals), took 56 s on a 2-core machine shared
//! with other builds, in a debug build; every pass in process, 2 s.

use crate::build_common::tool_dir;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The triple cdpc compiles at 64 bits, and the one it takes at 32 bits (PTX only).
const TRIPLE_64: &str = "nvptx64-nvidia-cuda";
const TRIPLE_32: &str = "nvptx-nvidia-cuda";

/// The folder of LLVM's NVPTX test inputs, or `None` with the reason printed.
fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("CDPC_LLVM_NVPTX_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/llvm-nvptx"),
    };
    let has_ll = std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "ll"))));
    if !has_ll {
        println!("skipped: no LLVM NVPTX test inputs at {} (set CDPC_LLVM_NVPTX_DIR)", dir.display());
        return None;
    }
    Some(dir)
}

/// The triple a module names in its `target triple = "..."` line, if it names one.
fn triple(text: &str) -> Option<&str> {
    let line = text.lines().find(|l| l.trim_start().starts_with("target triple"))?;
    let start = line.find('"')? + 1;
    let end = start + line[start..].find('"')?;
    Some(&line[start..end])
}

/// `text` with its triple replaced by the one cdpc compiles for its pointer width, or `None`
/// when it already names that triple or none.
fn with_cuda_triple(text: &str) -> Option<(String, bool)> {
    let old = triple(text)?;
    let wide = old.starts_with("nvptx64");
    let new = if wide { TRIPLE_64 } else { TRIPLE_32 };
    (old != new).then(|| (text.replacen(&format!("\"{old}\""), &format!("\"{new}\""), 1), wide))
}

/// One compilation: the input file's name, the options, and the output's extension.
struct Job {
    input: PathBuf,
    label: String,
    options: Vec<&'static str>,
    output: &'static str,
}

/// What is wrong with cdpc's answer to `job` (exit status, stderr, whether the output file
/// exists), or `None` when it is an answer: a success with its output, or a coded refusal with
/// none. The code of each error is added to `codes`.
fn judge(job: &Job, status: Option<i32>, stderr: &str, output_exists: bool, codes: &mut Vec<String>) -> Option<String> {
    let what = &job.label;
    match status {
        None => return Some(format!("{what}: ended by a signal: {stderr}")),
        Some(101) => return Some(format!("{what}: panicked (exit status 101): {stderr}")),
        Some(70) => return Some(format!("{what}: internal error (exit status 70): {stderr}")),
        _ => {}
    }
    if stderr.contains("E1025") || stderr.contains("panicked") {
        return Some(format!("{what}: internal error: {stderr}"));
    }
    let mut errors = 0;
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(diagnostic) = serde_json::from_str::<serde_json::Value>(line) else {
            return Some(format!("{what}: a line on stderr that is no diagnostic: {line}"));
        };
        if diagnostic["severity"] != "error" {
            continue;
        }
        errors += 1;
        let code = diagnostic["code"].as_str().unwrap_or("");
        let coded = code.len() == 5 && code.starts_with('E') && code[1..].bytes().all(|b| b.is_ascii_digit());
        if !coded {
            return Some(format!("{what}: an error without a code: {line}"));
        }
        codes.push(code.to_string());
    }
    match (status == Some(0), errors, output_exists) {
        (true, 0, true) => None,
        (true, _, false) => Some(format!("{what}: succeeded without writing its output: {stderr}")),
        (true, _, true) => Some(format!("{what}: succeeded with errors: {stderr}")),
        (false, 0, _) => Some(format!("{what}: failed (exit status {status:?}) without an error: {stderr}")),
        (false, _, true) => Some(format!("{what}: failed but left its output behind: {stderr}")),
        (false, _, false) => None,
    }
}

#[test]
fn llvm_nvptx_tests_never_crash_cdpc() {
    let Some(dir) = corpus() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "ll")).collect();
    files.sort();
    let scratch = tempfile::tempdir().unwrap();
    let ptxas = tool_dir().is_some();
    let mut jobs = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        let mut sets: Vec<(Vec<&'static str>, &'static str)> = vec![
            (vec!["--emit", "ptx"], "ptx"),
            (vec!["-O0", "--emit", "ptx"], "ptx"),
            (vec!["-fno-launch-optimizations", "--emit", "ptx"], "ptx"),
            (vec!["-faggregate-launches=grid", "--emit", "ptx"], "ptx"),
            (vec!["--launch-abi=v1", "--emit", "ptx"], "ptx"),
            (vec!["-G", "--emit", "ptx"], "ptx"),
        ];
        if ptxas {
            sets.push((vec!["-cubin"], "cubin"));
            sets.push((vec!["-dc"], "o"));
        }
        for (options, output) in sets {
            jobs.push(Job { input: file.clone(), label: format!("{name} {options:?}"), options, output });
        }
        // The same module with the triple cdpc compiles, so that it reaches the pipeline.
        if let Some((fixed, wide)) = with_cuda_triple(&text) {
            let copy = scratch.path().join(&name);
            std::fs::write(&copy, fixed).unwrap();
            let options = if wide { vec!["--emit", "ptx"] } else { vec!["--address-size", "32", "--emit", "ptx"] };
            jobs.push(Job { input: copy.clone(), label: format!("{name} (CUDA's triple) {options:?}"), options, output: "ptx" });
            if wide && ptxas {
                jobs.push(Job { input: copy, label: format!("{name} (CUDA's triple) [\"-cubin\"]"), options: vec!["-cubin"], output: "cubin" });
            }
        }
    }
    let started = std::time::Instant::now();
    let next = AtomicUsize::new(0);
    let problems = Mutex::new(Vec::new());
    let codes = Mutex::new(Vec::new());
    let compiled = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (jobs, next, problems, codes, compiled) = (&jobs, &next, &problems, &codes, &compiled);
            let out_dir = scratch.path().join(format!("out{worker}"));
            std::fs::create_dir(&out_dir).unwrap();
            scope.spawn(move || {
                while let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let output = out_dir.join(format!("out.{}", job.output));
                    let _ = std::fs::remove_file(&output);
                    let out = Command::new(env!("CARGO_BIN_EXE_cdpc"))
                        .current_dir(&out_dir)
                        .args(["-arch=sm_90", "--error-format", "json", "-o"])
                        .arg(&output)
                        .arg(&job.input)
                        .args(&job.options)
                        .output()
                        .expect("cdpc runs");
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let mut found = Vec::new();
                    if let Some(problem) = judge(job, out.status.code(), &stderr, output.exists(), &mut found) {
                        problems.lock().unwrap().push(problem);
                    }
                    if out.status.success() {
                        compiled.fetch_add(1, Ordering::Relaxed);
                    }
                    codes.lock().unwrap().extend(found);
                }
            });
        }
    });
    let mut codes = codes.into_inner().unwrap();
    codes.sort();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for code in codes {
        match counts.last_mut() {
            Some((last, n)) if *last == code => *n += 1,
            _ => counts.push((code, 1)),
        }
    }
    println!("{} files, {} compilations in {:.1} s: {} compiled; errors by code: {counts:?}", files.len(), jobs.len(), started.elapsed().as_secs_f64(), compiled.load(Ordering::Relaxed));
    let problems = problems.into_inner().unwrap();
    assert!(problems.is_empty(), "{} of {} compilations were no answer:\n{}", problems.len(), jobs.len(), problems.join("\n"));
}

#[test]
fn a_module_gets_cudas_triple_for_its_width() {
    let text = "; RUN: llc\ntarget triple = \"nvptx64-unknown-unknown\"\ndefine void @f() {\n  ret void\n}\n";
    let (fixed, wide) = with_cuda_triple(text).unwrap();
    assert!(wide);
    assert!(fixed.contains("target triple = \"nvptx64-nvidia-cuda\"") && fixed.contains("define void @f()"), "{fixed}");
    let (fixed, wide) = with_cuda_triple("target triple = \"nvptx-unknown-cuda\"\n").unwrap();
    assert!(!wide);
    assert_eq!(fixed, "target triple = \"nvptx-nvidia-cuda\"\n");
    assert!(with_cuda_triple("target triple = \"nvptx64-nvidia-cuda\"\n").is_none());
    assert!(with_cuda_triple("define void @f() {\n  ret void\n}\n").is_none());
}

#[test]
fn judged_answers() {
    let job = Job { input: PathBuf::from("k.ll"), label: "k.ll".into(), options: vec![], output: "ptx" };
    let coded = r#"{"code":"E1013","severity":"error","message":"m","labels":[]}"#;
    let mut codes = Vec::new();
    assert!(judge(&job, Some(1), coded, false, &mut codes).is_none());
    assert_eq!(codes, ["E1013"]);
    assert!(judge(&job, Some(0), "", true, &mut codes).is_none());
    // A crash, a raw message of LLVM's, an uncoded error and a partial output are no answer.
    assert!(judge(&job, Some(101), "", false, &mut codes).is_some());
    assert!(judge(&job, Some(70), coded, false, &mut codes).is_some());
    assert!(judge(&job, None, "", false, &mut codes).is_some());
    assert!(judge(&job, Some(1), "LLVM ERROR: Cannot select", false, &mut codes).is_some());
    assert!(judge(&job, Some(1), r#"{"code":null,"severity":"error","message":"m"}"#, false, &mut codes).is_some());
    assert!(judge(&job, Some(1), coded, true, &mut codes).is_some());
    assert!(judge(&job, Some(1), "", false, &mut codes).is_some());
    assert!(judge(&job, Some(0), "", false, &mut codes).is_some());
}

/// Every pass of the launch pipeline, and those cdpc runs on Clang's IR of a `.cu` file
/// (nvcc's atomics, the C++ ABI's placeholders, qualifiers, the clean-up, nvcc's divisions),
/// in process on each file whatever its triple, with aggregation and thresholding off and on:
/// `cdpc::fuzzing::ir_pipeline` is the oracle (no panic; a valid module after each pass).
#[test]
fn llvm_nvptx_tests_go_through_every_pass() {
    let Some(dir) = corpus() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "ll")).collect();
    files.sort();
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        if std::panic::catch_unwind(|| cdpc::fuzzing::ir_pipeline(&bytes)).is_err() {
            failures.push(file.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    println!("{} files through every pass in {:.1} s", files.len(), started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "the passes panicked on {failures:?}");
}
