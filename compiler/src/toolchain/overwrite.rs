//! What an output file may replace.
//!
//! The rule (docs/BUILDING.md, "Output files, interrupts and hung tools"): cdpc never writes over
//!
//! 1. an input of the compilation, also when the output path reaches it through a symbolic or
//!    a hard link (`E0700`, like gcc's "input file is the same as output file"; nothing turns
//!    this off), nor over anything that is not a regular file (a device, a pipe, a socket:
//!    `E0701`) but the null device: `-o /dev/null` compiles and writes the output nowhere
//!    (`OutputFile` discards it and never renames over the device);
//! 2. an existing regular file that is not empty and does not look like the output of a
//!    compiler: an ELF file (cubin, object), a fatbinary, LLVM bitcode, LLVM IR text or PTX
//!    text (`E0701`), unless the user asks with `--overwrite` ([`Overwrite::Any`]).
//!
//! Rule 2 goes beyond gcc, which overwrites anything: a mistyped `-o notes.txt` or
//! `-o kernel.h` must not destroy a file that no compiler wrote. Previous builds, nvcc's
//! outputs included, are replaced as before. The check runs before any work and again just
//! before the finished output is renamed into place.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::ToolError;

/// Which existing files an output may replace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overwrite {
    /// Empty files and files that look like a compiler's output (the default).
    #[default]
    CompilerOutputs,
    /// Any regular file but an input (`--overwrite`).
    Any,
}

/// What an output must not replace: the compilation's inputs, and what [`Overwrite`] forbids.
#[derive(Clone, Debug, Default)]
pub struct OutputGuard {
    /// Files the compilation reads (the source; included files).
    pub inputs: Vec<PathBuf>,
    /// Which other existing files may be replaced.
    pub overwrite: Overwrite,
}

/// How much of an existing file is read to recognise a compiler output.
const HEAD_BYTES: usize = 4096;

impl OutputGuard {
    /// Checks that writing `output` destroys nothing it must not. A missing output (or one
    /// whose folder is missing) passes: other checks report those.
    pub fn check(&self, output: &Path) -> Result<(), ToolError> {
        let Ok(meta) = std::fs::metadata(output) else { return Ok(()) };
        if let Some(input) = self.inputs.iter().find(|input| same_file(output, &meta, input)) {
            return Err(ToolError::OutputIsInput { output: output.to_path_buf(), input: input.clone() });
        }
        let refuse = |reason: &str| Err(ToolError::WouldOverwrite { path: output.to_path_buf(), reason: reason.into() });
        if meta.is_dir() {
            return Ok(()); // "it is a directory", from OutputFile::prepare
        }
        if is_null_device(&meta) {
            return Ok(()); // written to nowhere: `OutputFile` discards it, never renames over it
        }
        if !meta.is_file() {
            return refuse("it is not a regular file (a device, a pipe or a socket); `-o -` writes text to standard output");
        }
        if self.overwrite == Overwrite::Any {
            return Ok(());
        }
        let mut head = Vec::with_capacity(HEAD_BYTES);
        let read = std::fs::File::open(output).and_then(|f| f.take(HEAD_BYTES as u64).read_to_end(&mut head));
        match read {
            Ok(_) if head.is_empty() || looks_like_compiler_output(&head) => Ok(()),
            Ok(_) => refuse("it exists and is not a compiler output"),
            // Unreadable: we cannot tell what it is, so leave it alone.
            Err(e) => refuse(&format!("it exists and cannot be read to tell what it is ({e})")),
        }
    }
}

/// Whether `meta` is the null device's (`/dev/null`, the character device 1,3 wherever its
/// node is): `-o /dev/null`, as configure scripts and build checks ask of nvcc and gcc, is a
/// compilation whose output nobody keeps.
pub fn is_null_device(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let null = std::fs::metadata("/dev/null").ok().filter(|m| m.file_type().is_char_device());
        meta.file_type().is_char_device() && null.is_some_and(|null| null.rdev() == meta.rdev())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Whether `output` (with metadata `meta`) and `input` are one file.
fn same_file(output: &Path, meta: &std::fs::Metadata, input: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = output;
        std::fs::metadata(input).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        matches!((std::fs::canonicalize(output), std::fs::canonicalize(input)), (Ok(a), Ok(b)) if a == b)
    }
}

/// ELF (cubins, objects), a fatbinary, LLVM bitcode; text with a PTX `.version`/`.target`
/// directive or LLVM IR's `; ModuleID`/`target triple` at the start of a line; a dependency
/// list ([`looks_like_dependency_list`]); cdpc's launcher header.
pub fn looks_like_compiler_output(head: &[u8]) -> bool {
    const MAGICS: [&[u8]; 3] = [b"\x7fELF", b"\x50\xed\x55\xba", b"BC\xc0\xde"];
    if MAGICS.iter().any(|m| head.starts_with(m)) {
        return true;
    }
    let text = String::from_utf8_lossy(head);
    text.lines().any(|line| [".version ", ".target ", "; ModuleID", "target triple", "target datalayout"].iter().any(|p| line.starts_with(p)))
        || looks_like_dependency_list(&text)
        // The launcher header of `--host-header`, written again by every rebuild of its object.
        || text.starts_with(LAUNCHER_HEADER_START)
        // `-E`'s preprocessed source.
        || text.starts_with(PREPROCESSED_START)
}

/// How `cdpc -E`'s preprocessed source begins (`driver::preprocess_cuda`): what tells it from a
/// source nobody generated, and a compilation of it from one of a `.cu` file.
pub const PREPROCESSED_START: &str = "// Preprocessed by cdpc -E";

/// How cdpc's launcher header (`driver::host::header`) begins, which tells it from a header
/// nobody generated.
pub const LAUNCHER_HEADER_START: &str = "/* Generated by cdpc from ";

/// Make rules as a compiler's `-MD` writes them (`out.o : a.cu \\`, indented continuations,
/// `h.h:` targets): every line blank, indented, or a rule whose target holds nothing of C's
/// (`(`, `;`, `{`, `"`, `#` at its start) and whose prerequisites are paths, and at least one
/// rule. Source and header text has lines of code, and notes have words: none of these.
pub fn looks_like_dependency_list(text: &str) -> bool {
    let mut rules = 0;
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((target, deps)) = line.split_once(':') else { return false };
        if target.trim().is_empty() || target.starts_with('#') || target.contains(['(', ';', '{', '"']) {
            return false;
        }
        // Its prerequisites are files: each a path with a folder or an extension.
        if deps.split_whitespace().any(|d| d != "\\" && !d.contains(['.', '/'])) {
            return false;
        }
        rules += 1;
    }
    rules > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn guard(inputs: &[&Path], overwrite: Overwrite) -> OutputGuard {
        OutputGuard { inputs: inputs.iter().map(|p| p.to_path_buf()).collect(), overwrite }
    }

    #[test]
    fn compiler_outputs_are_recognised() {
        assert!(looks_like_compiler_output(b"\x7fELF\x02\x01\x01"));
        assert!(looks_like_compiler_output(b"//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 7.8\n.target sm_90\n"));
        assert!(looks_like_compiler_output(b"; ModuleID = 'app'\nsource_filename = \"app\"\n"));
        assert!(looks_like_compiler_output(b"BC\xc0\xde\x35\x14"));
        assert!(!looks_like_compiler_output(b"extern \"C\" __global__ void k() {}\n"));
        assert!(looks_like_compiler_output(b"out/a.o : a.cu \\\n    inc/v.h\n\ninc/v.h:\n"));
        assert!(!looks_like_compiler_output(b"#pragma once\nstruct S {\npublic:\n  int x;\n};\n"));
        assert!(!looks_like_compiler_output(b"notes: remember the milk\nand the bread\n"));
        assert!(!looks_like_compiler_output(b"notes: remember the milk\n"));
        assert!(looks_like_compiler_output(b"/* Generated by cdpc from scale.cu: host launchers of its kernels. */\n#ifndef CDPC_SCALE_CU_H\n"));
        assert!(!looks_like_compiler_output(b"#pragma once\n// .version is mentioned here\n"));
        assert!(!looks_like_compiler_output(b"\x89PNG\r\n"));
    }

    #[test]
    fn the_input_is_refused_also_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("app.cdp");
        fs::write(&src, "__global__ void k() {}").unwrap();
        let err = guard(&[&src], Overwrite::Any).check(&src).unwrap_err();
        assert!(matches!(err, ToolError::OutputIsInput { .. }), "{err:?}");
        assert_eq!(err.code().map(|c| c.as_str()), Some("E0700"));
        #[cfg(unix)]
        {
            let sym = dir.path().join("sym.cubin");
            std::os::unix::fs::symlink(&src, &sym).unwrap();
            assert!(matches!(guard(&[&src], Overwrite::Any).check(&sym), Err(ToolError::OutputIsInput { .. })));
            let hard = dir.path().join("hard.cubin");
            fs::hard_link(&src, &hard).unwrap();
            assert!(matches!(guard(&[&src], Overwrite::Any).check(&hard), Err(ToolError::OutputIsInput { .. })));
        }
        // Another file with the same text is not the input; a missing output passes.
        let copy = dir.path().join("copy.cdp");
        fs::copy(&src, &copy).unwrap();
        assert!(guard(&[&src], Overwrite::Any).check(&copy).is_ok());
        assert!(guard(&[&src], Overwrite::CompilerOutputs).check(&dir.path().join("new.cubin")).is_ok());
        assert_eq!(fs::read_to_string(&src).unwrap(), "__global__ void k() {}");
    }

    #[test]
    fn other_files_are_replaced_only_when_they_are_outputs_or_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.txt");
        fs::write(&notes, "my notes").unwrap();
        let err = guard(&[], Overwrite::CompilerOutputs).check(&notes).unwrap_err();
        assert!(matches!(err, ToolError::WouldOverwrite { .. }), "{err:?}");
        assert_eq!(err.code().map(|c| c.as_str()), Some("E0701"));
        assert!(err.to_string().contains("--overwrite"), "{err}");
        assert!(guard(&[], Overwrite::Any).check(&notes).is_ok());

        let cubin = dir.path().join("old.cubin");
        fs::write(&cubin, b"\x7fELF old build").unwrap();
        assert!(guard(&[], Overwrite::CompilerOutputs).check(&cubin).is_ok());
        let empty = dir.path().join("empty.ptx");
        fs::write(&empty, b"").unwrap();
        assert!(guard(&[], Overwrite::CompilerOutputs).check(&empty).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_pipes_are_never_replaced() {
        // A pipe made here is refused; the null device (a root process that renamed a file over
        // it would turn it into a regular file) passes the check, and an output file for it
        // writes beside nothing and leaves the device a device.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.cubin");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()), "mkfifo");
        for overwrite in [Overwrite::CompilerOutputs, Overwrite::Any] {
            let err = guard(&[], overwrite).check(&fifo).unwrap_err();
            assert!(err.to_string().contains("not a regular file"), "{}: {err}", fifo.display());
        }
        let null = Path::new("/dev/null");
        if !std::fs::metadata(null).is_ok_and(|m| is_null_device(&m)) {
            return println!("skipped: /dev/null is no character device here");
        }
        assert!(guard(&[], Overwrite::CompilerOutputs).check(null).is_ok());
        let out = crate::toolchain::OutputFile::prepare_guarded(null, guard(&[], Overwrite::CompilerOutputs)).unwrap();
        out.commit(b"\x7fELF discarded").unwrap();
        assert!(std::fs::metadata(null).is_ok_and(|m| is_null_device(&m)), "/dev/null is still the device");
        assert!(!is_null_device(&std::fs::metadata(&fifo).unwrap()));
    }
}
