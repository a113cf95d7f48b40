//! cdpc as sccache's nvcc: the steps `cdpc --dryrun --keep` prints in nvcc's form, and the
//! internal commands those steps run (docs/SCCACHE.md).
//!
//! sccache 0.16 takes a compiler whose `-E` of a C file defines `__NVCC__` for nvcc (cdpc's
//! does, as nvcc's). For nvcc it never caches the whole command line: it runs `COMPILER ARGS
//! --dryrun --keep` (once as it is, once with `--keep-dir TMP`), reads the `#$ ` lines of
//! standard error, and runs each step itself, choosing by the step's program name: a program
//! named `cicc` is a compiler of its own whose cache key is its input file's bytes, its options
//! and its program's bytes, and which sccache-dist can run on a build server (its input file
//! shipped, its output fetched back); a host compiler's `-E` step writing `*.cpp1.ii` runs
//! first, uncached, on the client. So a compilation of one CUDA source prints two steps:
//!
//! ```text
//! #$ PATH=...
//! #$ /path/to/cdpc --step-bundle -D__CUDACC__ -E -o TMP/k.cpp1.ii ARGS
//! #$ /path/to/cdpc-steps/cicc --step-compile k.cpp1.ii -o /abs/k.o
//! ```
//!
//! The first writes a bundle ([`write_bundle`]): the folder the compilation runs in, its
//! arguments, and the path and bytes of every file its preprocessing reads (the files the line
//! markers of `cdpc -E` name, each side's, and those Clang's `-MD` beside it lists) and of its
//! options files (`--options-file`). The second ([`compile_bundle`]) compiles it:
//! where a file of the bundle is missing (a build server's sandbox), it is written at its path
//! first, existing files are never touched; then `cdpc ARGS -o OUT` runs in that folder. The
//! object is cdpc's own compilation of the same files with the same arguments at the same
//! paths, so the same bytes wherever it runs, and the bundle is a key that changes with any of
//! them (host-only and device-only code alike). `cdpc-steps/cicc` is a link to cdpc made beside
//! it ([`step_program`]): sccache recognises the step by that name. Any other command line
//! (a program, several sources, a host file) prints one step that runs it whole, uncached
//! (`--step-whole`).

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use super::command_line::{requested_format, ErrorFormat};
use super::report::fail_with_code;
use cdpc::driver::jobs::{Action, Job, Output};
use cdpc::Code;

/// The step that writes a compilation's bundle.
const STEP_BUNDLE: &str = "--step-bundle";
/// The step that compiles a bundle.
const STEP_COMPILE: &str = "--step-compile";
/// The step that runs a command line whole.
const STEP_WHOLE: &str = "--step-whole";
/// What sccache needs on a host compiler's step to take it for one: a macro nvcc defines
/// (`-D__CUDACC__`, which Clang defines the same way for CUDA) and `-E`.
const HOST_STEP_MARKS: [&str; 2] = ["-D__CUDACC__", "-E"];
/// The first line of a bundle file.
const BUNDLE_MAGIC: &[u8] = b"cdpc-bundle 1\n";

/// nvcc's spellings of a dry run, and of keeping intermediate files.
const DRY_RUN: [&str; 4] = ["--dryrun", "-dryrun", "--dry-run", "-###"];
const KEEP: [&str; 2] = ["--keep", "-keep"];
const KEEP_DIR: [&str; 2] = ["--keep-dir", "-keep-dir"];
const OUTPUT: [&str; 2] = ["-o", "--output-file"];

/// The internal steps ([`STEP_BUNDLE`], [`STEP_COMPILE`], [`STEP_WHOLE`]): `Some` with the
/// status when `args` is one of them. `whole` is the whole command (`main_with_args`), which
/// [`STEP_WHOLE`] runs on the command line after its marks.
pub(crate) fn intercept(args: &[String], whole: impl FnOnce(Vec<String>) -> ExitCode) -> Option<ExitCode> {
    let format = requested_format(args);
    match args.get(1).map(String::as_str) {
        Some(STEP_BUNDLE) => Some(write_bundle(args, format)),
        Some(STEP_COMPILE) => Some(compile_bundle(args, format)),
        Some(STEP_WHOLE) => {
            let Some(rest) = args.get(2..).and_then(|rest| rest.strip_prefix(&HOST_STEP_MARKS.map(String::from)[..])) else {
                return Some(malformed(format, STEP_WHOLE));
            };
            let command: Vec<String> = std::iter::once(args[0].clone()).chain(rest.iter().cloned()).collect();
            Some(whole(command))
        }
        _ => None,
    }
}

/// Whether a command line asks for nvcc's steps: a dry run with `-keep`, as sccache runs it.
pub(crate) fn wants_steps(args: &[String]) -> bool {
    args.iter().any(|a| DRY_RUN.contains(&a.as_str())) && args.iter().any(|a| KEEP.contains(&a.as_str()))
}

/// A command line without the dry run, `-keep`, `-keep-dir` and (when `drop_output`) `-o`:
/// what the steps run. Returns it, `-keep-dir`'s folder and `-o`'s file.
fn split(args: &[String], drop_output: bool) -> (Vec<String>, Option<PathBuf>, Option<PathBuf>) {
    let mut rest = Vec::new();
    let mut keep_dir = None;
    let mut output = None;
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        let joined = |names: &[&str]| names.iter().find_map(|n| a.strip_prefix(n).and_then(|v| v.strip_prefix('=')).map(PathBuf::from));
        if DRY_RUN.contains(&a) || KEEP.contains(&a) {
        } else if KEEP_DIR.contains(&a) {
            keep_dir = args.get(i + 1).map(PathBuf::from);
            i += 1;
        } else if let Some(dir) = joined(&KEEP_DIR) {
            keep_dir = Some(dir);
        } else if OUTPUT.contains(&a) && drop_output {
            output = args.get(i + 1).map(PathBuf::from);
            i += 1;
        } else if let Some(file) = joined(&OUTPUT).filter(|_| drop_output) {
            output = Some(file);
        } else {
            rest.push(args[i].clone());
        }
        i += 1;
    }
    (rest, keep_dir, output)
}

/// A word as sccache splits a step's line (POSIX shell words): quoted where it has to be.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_=+./:,@%".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn step_line(program: &Path, args: &[String]) -> String {
    let mut line = format!("#$ {}", shell_word(&program.to_string_lossy()));
    for a in args {
        line.push(' ');
        line.push_str(&shell_word(a));
    }
    line
}

/// cdpc's program, which the steps run: this executable, or where that is Python (the wheel's
/// console script runs cdpc inside it), the script the command line named.
fn own_program() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    if !exe.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python")) {
        return Ok(exe);
    }
    let script = std::env::args_os().next().map(PathBuf::from).unwrap_or_default();
    let found = if script.components().count() > 1 { Some(script) } else { std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(&script)).find(|p| p.is_file())) };
    found.ok_or_else(|| std::io::Error::other("the console script that runs cdpc is not on PATH"))?.canonicalize()
}

/// `cdpc-steps/cicc` beside cdpc (else in the temporary folder), a link to cdpc made or mended
/// when it is missing or names another program: sccache tells a step's kind by its program's
/// name.
fn step_program(cdpc: &Path) -> std::io::Result<PathBuf> {
    let beside = cdpc.parent().map(|d| d.join("cdpc-steps"));
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let fallback = std::env::temp_dir().join(format!("cdpc-steps-{uid}"));
    let mut last = std::io::Error::other("no folder for cdpc's step program");
    for dir in beside.into_iter().chain([fallback]) {
        let link = dir.join("cicc");
        if std::fs::read_link(&link).is_ok_and(|target| target == cdpc) {
            return Ok(link);
        }
        let made = std::fs::create_dir_all(&dir).and_then(|()| {
            // Made under another name and renamed over the link: a concurrent build never
            // sees it half made.
            let fresh = dir.join(format!("cicc.{}", std::process::id()));
            let _ = std::fs::remove_file(&fresh);
            std::os::unix::fs::symlink(cdpc, &fresh)?;
            std::fs::rename(&fresh, &link)
        });
        match made {
            Ok(()) => return Ok(link),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// `--dryrun --keep`: nvcc's `#$ ` steps on standard error ([`self`]), for the command line
/// `args` whose jobs are `jobs`.
pub(crate) fn print_steps(args: &[String], jobs: &[Job], format: ErrorFormat) -> ExitCode {
    let (cdpc, cwd) = match (own_program(), std::env::current_dir()) {
        (Ok(cdpc), Ok(cwd)) => (cdpc, cwd),
        (Err(e), _) | (_, Err(e)) => {
            fail_with_code(format, "<command line>", Some(Code::WorkFileFailed), &format!("cannot find cdpc's program or the current folder for its steps: {e}"));
            return ExitCode::FAILURE;
        }
    };
    eprintln!("#$ PATH={}", std::env::var("PATH").unwrap_or_default());
    let (rest, keep_dir, output) = split(args, true);
    let source = match jobs {
        [Job { action: Action::Compile, inputs, output: Output::File(_), .. }] if inputs.len() == 1 => inputs.first(),
        _ => None,
    };
    let (Some(source), Some(output)) = (source, output) else {
        let (whole, _, _) = split(args, false);
        let step: Vec<String> = std::iter::once(STEP_WHOLE.to_string()).chain(HOST_STEP_MARKS.map(String::from)).chain(whole).collect();
        eprintln!("{}", step_line(&cdpc, &step));
        return ExitCode::SUCCESS;
    };
    let program = match step_program(&cdpc) {
        Ok(program) => program,
        Err(e) => {
            fail_with_code(format, "<command line>", Some(Code::WorkFileFailed), &format!("cannot make cdpc's step program `cdpc-steps/cicc`: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "source".into());
    let bundle = keep_dir.unwrap_or_default().join(format!("{stem}.cpp1.ii")).to_string_lossy().into_owned();
    let first: Vec<String> = std::iter::once(STEP_BUNDLE.to_string()).chain(HOST_STEP_MARKS.map(String::from)).chain(["-o".into(), bundle.clone()]).chain(rest).collect();
    eprintln!("{}", step_line(&cdpc, &first));
    let second = [STEP_COMPILE.to_string(), bundle, "-o".into(), cwd.join(output).to_string_lossy().into_owned()];
    eprintln!("{}", step_line(&program, &second));
    ExitCode::SUCCESS
}

fn malformed(format: ErrorFormat, step: &str) -> ExitCode {
    fail_with_code(format, "<command line>", Some(Code::OptionInvalid), &format!("`{step}` is a step of cdpc's own (`cdpc --dryrun --keep` prints it for sccache) and this one is malformed"));
    ExitCode::from(2)
}

/// The files the line markers of `cdpc -E`'s text name (`# 12 "path" 1`), each once, in order.
fn marked_files(text: &[u8]) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    let mut files = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let Some(rest) = line.strip_prefix(b"# ") else { continue };
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(quoted) = rest.get(digits..).filter(|_| digits > 0).and_then(|r| r.strip_prefix(b" \"")) else { continue };
        let mut name = Vec::new();
        let mut bytes = quoted.iter().copied();
        while let Some(b) = bytes.next() {
            match b {
                b'"' => break,
                b'\\' => {
                    // Clang escapes `\`, `"` and other bytes as three octal digits.
                    let Some(next) = bytes.next() else { break };
                    if next.is_ascii_digit() {
                        let mut value = u32::from(next - b'0');
                        for _ in 0..2 {
                            if let Some(d) = bytes.clone().next().filter(u8::is_ascii_digit) {
                                value = value * 8 + u32::from(d - b'0');
                                bytes.next();
                            }
                        }
                        name.push(value as u8);
                    } else {
                        name.push(next);
                    }
                }
                b => name.push(b),
            }
        }
        if name.is_empty() || name.starts_with(b"<") {
            continue;
        }
        let path = PathBuf::from(OsString::from_vec(name));
        if seen.insert(path.clone()) {
            files.push(path);
        }
    }
    files
}

/// The files of a Make rule as cdpc writes one (`target : source \\`, then a prerequisite a
/// line): the source and each prerequisite, Make's escapes (`\ `, `\#`, `$$`) undone.
fn rule_files(text: &str) -> Vec<PathBuf> {
    let mut lines = text.lines();
    let first = lines.next().and_then(|l| l.split_once(" : ")).map(|(_, source)| source);
    first
        .into_iter()
        .chain(lines.take_while(|l| l.starts_with(' ')))
        .map(|l| l.trim_start().trim_end_matches(" \\").replace("\\ ", " ").replace("\\#", "#").replace("$$", "$"))
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// One record of a bundle: a tag, the length of its bytes, the bytes.
fn record(out: &mut Vec<u8>, tag: &str, bytes: &[u8]) {
    out.extend_from_slice(format!("{tag} {}\n", bytes.len()).as_bytes());
    out.extend_from_slice(bytes);
    out.push(b'\n');
}

/// `cdpc --step-bundle -D__CUDACC__ -E -o BUNDLE ARGS`: `cdpc ARGS -E` run here (without cdpc's
/// cache), and the bundle of this folder, `ARGS` and every file its line markers name that is a
/// file now (the text's own work files are gone) written to `BUNDLE`.
fn write_bundle(args: &[String], format: ErrorFormat) -> ExitCode {
    let Some([o, bundle, rest @ ..]) = args.get(2..).and_then(|a| a.strip_prefix(&HOST_STEP_MARKS.map(String::from)[..])) else {
        return malformed(format, STEP_BUNDLE);
    };
    if o != "-o" {
        return malformed(format, STEP_BUNDLE);
    }
    let (cdpc, cwd) = match (own_program(), std::env::current_dir()) {
        (Ok(cdpc), Ok(cwd)) => (cdpc, cwd),
        (Err(e), _) | (_, Err(e)) => {
            fail_with_code(format, bundle, Some(Code::WorkFileFailed), &format!("cannot find cdpc's program or the current folder: {e}"));
            return ExitCode::FAILURE;
        }
    };
    // cdpc's own cache off: with it, the text names its copy of cdpc's additions in the cache's
    // folder, and a bundle must not depend on this machine's cache. With `-MD`, Clang's list of
    // the files it found beside the text: also those it looked for and did not enter (a header
    // its include guard skips, one `__has_include` found), which no line marker names.
    let listing = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            fail_with_code(format, bundle, Some(Code::WorkFileFailed), &format!("cannot make a folder for the bundle's header list: {}", cdpc::toolchain::io_message(&e)));
            return ExitCode::FAILURE;
        }
    };
    let list = listing.path().join("headers.d");
    let preprocessed = match Command::new(&cdpc).args(rest).arg("-E").arg("-MD").arg("-MF").arg(&list).env("CDPC_CACHE_DIR", "").output() {
        Ok(out) => out,
        Err(e) => {
            fail_with_code(format, bundle, Some(Code::WorkFileFailed), &format!("cannot run `{}` for the bundle's preprocessing: {e}", cdpc.display()));
            return ExitCode::FAILURE;
        }
    };
    if !preprocessed.status.success() {
        // The compilation's own messages: the step fails as the compilation would.
        let _ = std::io::stderr().write_all(&preprocessed.stderr);
        return ExitCode::from(u8::try_from(preprocessed.status.code().unwrap_or(1)).unwrap_or(1));
    }
    let mut out = BUNDLE_MAGIC.to_vec();
    record(&mut out, "cwd", cwd.as_os_str().as_bytes());
    for a in rest {
        record(&mut out, "arg", a.as_bytes());
    }
    // The options files' text is the compilation's too.
    let options_files = rest.iter().enumerate().filter_map(|(i, a)| match a.as_str() {
        "--options-file" | "-optf" => rest.get(i + 1).map(PathBuf::from),
        _ => a.strip_prefix("--options-file=").or_else(|| a.strip_prefix("-optf=")).map(PathBuf::from),
    });
    let listed = std::fs::read_to_string(&list).map(|text| rule_files(&text)).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for file in options_files.collect::<Vec<_>>().into_iter().chain(marked_files(&preprocessed.stdout)).chain(listed) {
        let path = cwd.join(&file);
        // A file once, under the first name it is met by (the list names by their real path
        // some files the line markers name through `..`).
        if !path.is_file() || !seen.insert(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone())) {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                record(&mut out, "path", path.as_os_str().as_bytes());
                record(&mut out, "bytes", &bytes);
            }
            Err(e) => {
                fail_with_code(format, bundle, Some(Code::InputNotReadable), &format!("cannot read `{}` for the bundle: {}", path.display(), cdpc::toolchain::io_message(&e)));
                return ExitCode::FAILURE;
            }
        }
    }
    if let Err(e) = std::fs::write(bundle, &out) {
        fail_with_code(format, bundle, Some(Code::WorkFileFailed), &format!("cannot write the bundle `{bundle}`: {}", cdpc::toolchain::io_message(&e)));
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// A bundle read back: the folder, the arguments, the files.
struct Bundle {
    cwd: PathBuf,
    args: Vec<OsString>,
    files: Vec<(PathBuf, Vec<u8>)>,
}

fn parse_bundle(bytes: &[u8]) -> Option<Bundle> {
    let mut rest = bytes.strip_prefix(BUNDLE_MAGIC)?;
    let mut bundle = Bundle { cwd: PathBuf::new(), args: Vec::new(), files: Vec::new() };
    let mut path = None;
    while !rest.is_empty() {
        let line_end = rest.iter().position(|&b| b == b'\n')?;
        let (tag, len) = std::str::from_utf8(&rest[..line_end]).ok()?.split_once(' ')?;
        let len: usize = len.parse().ok()?;
        let body = rest.get(line_end + 1..line_end + 1 + len)?;
        rest = rest.get(line_end + 1 + len..)?.strip_prefix(b"\n")?;
        let os = || OsString::from_vec(body.to_vec());
        match tag {
            "cwd" => bundle.cwd = PathBuf::from(os()),
            "arg" => bundle.args.push(os()),
            "path" => path = Some(PathBuf::from(os())),
            "bytes" => bundle.files.push((path.take()?, body.to_vec())),
            _ => return None,
        }
    }
    Some(bundle)
}

/// `cicc --step-compile BUNDLE -o OUT`: the bundle's files written where they are missing (a
/// build server's sandbox; an existing file is never touched), its folder made if missing,
/// and `cdpc ARGS -o OUT` run there. Where a file had to be written, cdpc's own cache is off:
/// that machine's cache is not the client's.
fn compile_bundle(args: &[String], format: ErrorFormat) -> ExitCode {
    let [_, _, bundle_path, o, output] = args else {
        return malformed(format, STEP_COMPILE);
    };
    if o != "-o" {
        return malformed(format, STEP_COMPILE);
    }
    let bundle = match std::fs::read(bundle_path) {
        Ok(bytes) => match parse_bundle(&bytes) {
            Some(bundle) => bundle,
            None => {
                fail_with_code(format, bundle_path, Some(Code::InputNotReadable), &format!("`{bundle_path}` is not a bundle of `cdpc --step-bundle`"));
                return ExitCode::FAILURE;
            }
        },
        Err(e) => {
            fail_with_code(format, bundle_path, Some(Code::InputNotReadable), &format!("cannot read `{bundle_path}`: {}", cdpc::toolchain::io_message(&e)));
            return ExitCode::FAILURE;
        }
    };
    let output = match std::env::current_dir() {
        Ok(here) => here.join(output),
        Err(e) => {
            fail_with_code(format, bundle_path, Some(Code::WorkFileFailed), &format!("cannot find the current folder: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let mut wrote = false;
    for (path, bytes) in &bundle.files {
        if std::fs::symlink_metadata(path).is_ok() {
            continue;
        }
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(path, bytes));
        if let Err(e) = written {
            fail_with_code(format, bundle_path, Some(Code::WorkFileFailed), &format!("cannot write `{}` of the bundle: {}", path.display(), cdpc::toolchain::io_message(&e)));
            return ExitCode::FAILURE;
        }
        wrote = true;
    }
    for dir in [Some(bundle.cwd.as_path()), output.parent()].into_iter().flatten() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            fail_with_code(format, bundle_path, Some(Code::WorkFileFailed), &format!("cannot make the folder `{}`: {}", dir.display(), cdpc::toolchain::io_message(&e)));
            return ExitCode::FAILURE;
        }
    }
    let cdpc = match own_program() {
        Ok(cdpc) => cdpc,
        Err(e) => {
            fail_with_code(format, bundle_path, Some(Code::WorkFileFailed), &format!("cannot find cdpc's program: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let mut command = Command::new(cdpc);
    command.args(&bundle.args).arg("-o").arg(&output).current_dir(&bundle.cwd);
    if wrote {
        command.env("CDPC_CACHE_DIR", "");
    }
    match command.status() {
        Ok(status) => ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1)),
        Err(e) => {
            fail_with_code(format, bundle_path, Some(Code::WorkFileFailed), &format!("cannot run cdpc for the bundle: {e}"));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_markers_name_files_once_with_clang_escapes() {
        let text = b"# 1 \"/a/k.cu\"\n# 1 \"<built-in>\" 1\nint x;\n# 3 \"/a/b\\\\c \\\"d\\\".h\" 1\n# 7 \"/a/k.cu\" 2\n#pragma once\n# 2 \"/a/\\303\\251.h\"\n";
        let files = marked_files(text);
        assert_eq!(files, [PathBuf::from("/a/k.cu"), PathBuf::from("/a/b\\c \"d\".h"), PathBuf::from("/a/é.h")]);
    }

    #[test]
    fn a_rules_files_are_its_source_and_prerequisites_unescaped() {
        let rule = "k.o : k.cu \\\n    a\\ b.h \\\n    /x/\\#$$.h\n";
        assert_eq!(rule_files(rule), [PathBuf::from("k.cu"), PathBuf::from("a b.h"), PathBuf::from("/x/#$.h")]);
        assert_eq!(rule_files("k.o : k.cu\n\nk.cu:\n"), [PathBuf::from("k.cu")]);
    }

    #[test]
    fn a_bundle_reads_back_as_written() {
        let mut out = BUNDLE_MAGIC.to_vec();
        record(&mut out, "cwd", b"/p");
        record(&mut out, "arg", b"-c");
        record(&mut out, "path", b"/p/k.cu");
        record(&mut out, "bytes", b"a\nb\n");
        let bundle = parse_bundle(&out).expect("a bundle");
        assert_eq!(bundle.cwd, PathBuf::from("/p"));
        assert_eq!(bundle.args, [OsString::from("-c")]);
        assert_eq!(bundle.files, [(PathBuf::from("/p/k.cu"), b"a\nb\n".to_vec())]);
        assert!(parse_bundle(&out[..out.len() - 1]).is_none());
    }

    #[test]
    fn the_steps_run_the_command_line_without_the_dry_run_and_its_output() {
        let args: Vec<String> = ["cdpc", "-o", "k.o", "-c", "--keep-dir", "/t", "k.cu", "--dryrun", "--keep"].map(String::from).to_vec();
        assert_eq!(split(&args, true), (vec!["-c".to_string(), "k.cu".into()], Some(PathBuf::from("/t")), Some(PathBuf::from("k.o"))));
        assert_eq!(split(&args, false).0, ["-o", "k.o", "-c", "k.cu"]);
        assert_eq!(shell_word("a b'c"), r"'a b'\''c'");
        assert_eq!(shell_word("-arch=sm_90"), "-arch=sm_90");
    }
}
