//! `cdpc -E` over the corpus's CUDA C++ files (`../shared/corpus` beside the checkout; skipped
//! with a printed reason when absent, or when the NVIDIA tools are): it never panics (a refusal
//! is a coded diagnostic), it gives the same text twice, and where the file compiles, its
//! output compiles to the same PTX (`cdpc -E x.cu > y.cu`, `--emit ptx` of both compared).
//! Preprocessing is an input path of its own: the same check as the fuzz targets' "no panic".

use crate::build_common::{stderr, tool_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cu_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            cu_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "cu") {
            out.push(path);
        }
    }
}

fn cdpc(dir: &Path, args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).args(args).output().expect("cdpc runs")
}

/// A run that failed did so with a coded diagnostic, never a panic or a signal.
fn assert_coded(out: &Output, what: &str) {
    let text = stderr(out);
    assert!(out.status.code().is_some_and(|c| c == 1 || c == 2), "{what}: exit {:?}\n{text}", out.status);
    assert!(!text.contains("panicked"), "{what} panicked:\n{text}");
    assert!(text.contains("error[E"), "{what} failed without a code:\n{text}");
}

#[test]
fn corpus_preprocesses_and_compiles_to_the_same_ptx() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    if !corpus.is_dir() {
        return println!("skipped: no corpus at {}", corpus.display());
    }
    if tool_dir().is_none() {
        return;
    }
    let mut files = Vec::new();
    cu_files(&corpus, &mut files);
    assert!(!files.is_empty(), "no .cu file in the corpus");
    let scratch = tempfile::tempdir().unwrap();
    let (mut same, mut refused, mut not_compiled) = (0, 0, 0);
    for (i, file) in files.iter().enumerate() {
        let dir = file.parent().unwrap();
        let name = file.file_name().unwrap();
        // The Makefiles' folders: KLAP's `-I. -I../../include`, cuda-samples' `-I../Common`.
        let include = if file.components().any(|c| c.as_os_str() == "klap") { "-I../../include" } else { "-I../Common" };
        let cdpc = |dir: &Path, args: &[&std::ffi::OsStr]| {
            let with: Vec<&std::ffi::OsStr> = args.iter().copied().chain([include.as_ref(), "-I.".as_ref()]).collect();
            cdpc(dir, &with)
        };
        let pre = scratch.path().join(format!("{i}.cu"));
        let out = cdpc(dir, &["-E".as_ref(), name, "-o".as_ref(), pre.as_os_str()]);
        if !out.status.success() {
            assert_coded(&out, &format!("cdpc -E {}", file.display()));
            assert!(!pre.exists(), "{}: a failed -E left its output", file.display());
            refused += 1;
            continue;
        }
        let again = cdpc(dir, &["-E".as_ref(), name]);
        assert!(again.status.success(), "{}", stderr(&again));
        assert!(again.stdout == std::fs::read(&pre).unwrap(), "{}: -E gave another text the second time (or on stdout)", file.display());
        let original = scratch.path().join(format!("{i}.orig.ptx"));
        let out = cdpc(dir, &[name, "--emit".as_ref(), "ptx".as_ref(), "-o".as_ref(), original.as_os_str()]);
        if !out.status.success() {
            assert_coded(&out, &format!("cdpc --emit ptx {}", file.display()));
            not_compiled += 1;
            continue;
        }
        let round = scratch.path().join(format!("{i}.pre.ptx"));
        let out = cdpc(dir, &[pre.as_os_str(), "--emit".as_ref(), "ptx".as_ref(), "-o".as_ref(), round.as_os_str()]);
        assert!(out.status.success(), "{}'s -E output does not compile: {}", file.display(), stderr(&out));
        assert!(std::fs::read(&original).unwrap() == std::fs::read(&round).unwrap(), "{}: the -E output's PTX differs from the file's", file.display());
        same += 1;
    }
    println!("{} files: {same} the same PTX through -E, {not_compiled} not compiling as they are, {refused} refused by -E", files.len());
    assert!(same > 0, "no corpus file went through -E and compiled");
}
