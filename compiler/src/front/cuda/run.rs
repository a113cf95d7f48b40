//! Clang's runs over CUDA C++, in process or as a program, each recorded in the tool log, and
//! the precompiled headers a run reads from the cache: the CUDA wrapper's ([`wrapper_header`],
//! [`ensure_pch`]) and a source's preamble ([`ensure_preamble`]), made on a miss (written whole,
//! then renamed into place) or left for a filler ([`cache::Fill`]). What a failed run said is
//! [`Failure`]; the driver turns it into the compilation's error.

use super::cache::{self, Cache, InUse};
use super::in_process::{self, NotRun, Outcome};
use super::{preamble, ClangEngine, ClangInvocation, CudaCxxOptions};
use crate::diag::Diagnostic;
use crate::toolchain::{command_line, run_front_end, BuildOptions, ToolError, ToolRun};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What Clang said: a Clang program's stderr, or the linked Clang's messages.
pub(crate) enum Said {
    /// A Clang program's standard error.
    Text(String),
    /// The linked Clang's messages.
    Messages(Vec<in_process::Message>),
}

impl Said {
    /// Its messages as diagnostics: `main` is the file Clang compiled, with `main_text`; the
    /// warnings nvcc's build would not give under `cxx`'s options are `W1035`
    /// ([`super::host_warnings::as_nvcc`]).
    pub(crate) fn diagnostics(&self, main: &Path, main_text: &str, cxx: &CudaCxxOptions) -> Vec<Diagnostic> {
        let said = match self {
            Said::Text(stderr) => super::diagnostics::parse(stderr, main, main_text),
            Said::Messages(messages) => super::diagnostics::from_messages(messages, main, main_text),
        };
        super::host_warnings::as_nvcc(said, cxx)
    }

    /// Whether a message (or the file it names) holds `word`.
    pub(crate) fn mentions(&self, word: &str) -> bool {
        match self {
            Said::Text(stderr) => stderr.contains(word),
            Said::Messages(messages) => messages.iter().any(|m| m.text.contains(word) || m.place.as_ref().is_some_and(|(file, _, _)| file.contains(word))),
        }
    }
}

/// How a Clang run failed.
pub(crate) enum Failure {
    /// The Clang program failed: its messages, and the tool's error for a failure without one.
    Program { said: Said, error: ToolError },
    /// The linked Clang reported errors (or arguments it cannot run).
    Errors { said: Said, command: String },
    /// The linked Clang crashed; the crash was caught.
    Crashed { said: Said, command: String },
    /// The linked Clang did not finish within `--tool-timeout`.
    TimedOut { command: String, limit: Duration },
    /// Anything else (work files, a program that could not start, a time limit, an interrupt).
    Tool(ToolError),
}

impl Failure {
    /// Whether a message (or the file it names) holds `word`.
    pub(crate) fn mentions(&self, word: &str) -> bool {
        match self {
            Failure::Program { said, .. } | Failure::Errors { said, .. } | Failure::Crashed { said, .. } => said.mentions(word),
            Failure::TimedOut { .. } | Failure::Tool(_) => false,
        }
    }
}

/// Runs Clang as `engine` says, in a work folder of its own removed in every case: `args` gets
/// the folder and returns the arguments (after the program name) and the output file. Returns
/// the output's bytes and what Clang said. Recorded in the tool log as `clang`.
pub(crate) fn run_clang(engine: &ClangEngine, args: impl FnOnce(&Path) -> Result<(Vec<OsString>, PathBuf), ToolError>, build: &BuildOptions) -> Result<(Vec<u8>, Said), Failure> {
    run_clang_with(engine, |work| args(work).map(|(a, o)| (a, o, None)), build).map(|(bytes, _, said)| (bytes, said))
}

/// [`run_clang`], which also reads a second file Clang writes in the work folder (a dependency
/// list), when `args` names one: its text (a failure when Clang finished without it; empty
/// from a Clang program, whose work folder is gone).
pub(crate) fn run_clang_with(
    engine: &ClangEngine,
    args: impl FnOnce(&Path) -> Result<(Vec<OsString>, PathBuf, Option<PathBuf>), ToolError>,
    build: &BuildOptions,
) -> Result<(Vec<u8>, String, Said), Failure> {
    let resource_dir = match engine {
        ClangEngine::Process(clang) => {
            let started = Instant::now();
            let also = std::cell::RefCell::new(None);
            let ran = run_front_end(
                "clang",
                clang,
                |work| {
                    let (a, o, extra) = args(work)?;
                    *also.borrow_mut() = extra;
                    Ok((a, o))
                },
                build,
            );
            // A Clang program's second file is not read (its work folder is gone): the
            // preamble, which needs it, is the linked Clang's alone.
            return match ran {
                Ok(run) => Ok((run.output, String::new(), Said::Text(run.stderr))),
                Err(ToolError::Failed { tool, command, status, stderr, stdout }) => {
                    build.log.push(failed_run(&command, &format!("Clang failed ({status})"), started));
                    Err(Failure::Program { said: Said::Text(stderr.clone()), error: ToolError::Failed { tool, command, status, stderr, stdout } })
                }
                Err(e) => Err(Failure::Tool(e)),
            };
        }
        ClangEngine::InProcess { resource_dir } => resource_dir,
    };
    let ran = crate::toolchain::run::in_work_dir(build, |work| {
        let (args, output, extra) = args(work)?;
        let command = format!("{} (Clang inside cdpc, resources in {})", command_line(std::ffi::OsStr::new("clang++"), &args), resource_dir.display());
        let started = Instant::now();
        let run = match in_process::compile(&args, build.tool_timeout) {
            Ok(run) => run,
            Err(NotRun::TimedOut(limit)) => return Ok(Err(Failure::TimedOut { command, limit })),
            Err(NotRun::Spawn(source)) => return Err(ToolError::Spawn { tool: "clang".into(), command, source }),
        };
        let said = Said::Messages(run.messages);
        match run.outcome {
            Outcome::Finished => {
                let bytes = std::fs::read(&output).map_err(|e| ToolError::io("reading what Clang wrote", &output, e))?;
                // One Clang should have written and did not (another's crash removes the files
                // of the process, a full disk): no list, rather than an empty one, which would
                // make a preamble that depends on nothing.
                let extra = match extra {
                    Some(path) => std::fs::read_to_string(&path).map_err(|e| ToolError::io("reading Clang's list of the files it read", &path, e))?,
                    None => String::new(),
                };
                build.log.push(ToolRun { tool: "clang".into(), command, stdout: String::new(), stderr: String::new(), elapsed: started.elapsed() });
                Ok(Ok((bytes, extra, said)))
            }
            Outcome::Errors | Outcome::Unsupported => {
                build.log.push(failed_run(&command, "Clang ended with errors", started));
                Ok(Err(Failure::Errors { said, command }))
            }
            Outcome::Crashed => {
                build.log.push(failed_run(&command, "Clang crashed", started));
                Ok(Err(Failure::Crashed { said, command }))
            }
        }
    });
    ran.unwrap_or_else(|e| Err(Failure::Tool(e)))
}

/// A run of Clang that failed, as the tool log records it (`-v` shows it, `--time` counts it):
/// its command, then a comment saying how it ended. Its messages are not in the record: where
/// the compilation runs Clang again (without a precompiled header it refused, or with the
/// texture intrinsics it left out) the run after it says what is so, else the compilation's
/// error reports them.
fn failed_run(command: &str, how: &str, started: Instant) -> ToolRun {
    ToolRun { tool: "clang".into(), command: format!("{command}\n# {how}: nothing it wrote is used"), stdout: String::new(), stderr: String::new(), elapsed: started.elapsed() }
}

/// The precompiled header of Clang's CUDA wrapper that a compilation with `template`'s options
/// reads, held ([`InUse`]) until it is over, and its path; `None` when there is none to read
/// (the compilation then parses the wrapper itself, as without a cache).
///
/// With the linked Clang, the header is made without the user's `-I` folders (the key of the
/// same options without them), so that one header serves every project with the same macros
/// and options: such a header is read where none of this compilation's `-I` folders holds a
/// file that a lookup of the wrapper's could find ([`super::shadowing_file`]: Clang itself
/// does not check, measured with clang++-22: a `-I` folder holding its own `vector` was
/// ignored in favour of the header's). Where one does, the header of every option, `-I`
/// folders included, is read instead (made by the next compilation where this one made the
/// other). A Clang program's header is always of every option.
#[allow(clippy::too_many_arguments)]
pub(crate) fn wrapper_header(engine: &ClangEngine, template: &ClangInvocation<'_>, cache: &Cache, identity: &Path, build: &BuildOptions, make: bool, wrote: &mut bool) -> Option<(PathBuf, InUse)> {
    let mut make_all = make;
    if matches!(engine, ClangEngine::InProcess { .. }) && !template.includes.is_empty() {
        let shared = ClangInvocation { includes: &[], ..template.clone() };
        let path = super::pch_path(cache, identity, &shared);
        let made_before = *wrote;
        match ensure_pch(engine, &shared, cache, &path, build, make, wrote) {
            Some((held, manifest)) => match manifest.names.as_deref().map(|names| super::shadowing_file(names, template.includes)) {
                Some(None) => return Some((path, held)),
                // Shadowed: this compilation's header is the other; made now only if this
                // compilation has not just made one.
                _ => make_all = make && *wrote == made_before,
            },
            None => return None,
        }
    }
    let path = super::pch_path(cache, identity, template);
    ensure_pch(engine, template, cache, &path, build, make_all, wrote).map(|(held, _)| (path, held))
}

/// The precompiled header of Clang's CUDA wrapper for `template`'s options at `path` in
/// `cache`, held ([`InUse`]) until the compilation is over, with its manifest. If it is
/// missing: with `make`, made there (written whole, then renamed into place, so that a
/// concurrent compilation never reads half of one; `wrote` says so), else left for a filler
/// ([`cache::Fill`]). `None` when it is missing and not made here, or cannot be made or is
/// larger than the cache's bound.
#[allow(clippy::too_many_arguments)]
fn ensure_pch(engine: &ClangEngine, template: &ClangInvocation<'_>, cache: &Cache, path: &Path, build: &BuildOptions, make: bool, wrote: &mut bool) -> Option<(InUse, cache::WrapperManifest)> {
    let mut held = InUse::hold(&path.with_extension("seen"))?;
    // The header its manifest names (else another file in its place: made again, renamed over).
    let manifest_path = path.with_extension("json");
    let manifest = std::fs::read(&manifest_path).ok().and_then(|text| serde_json::from_slice::<cache::WrapperManifest>(&text).ok());
    if let Some(manifest) = manifest.filter(|m| held.found(path) && m.header.matches(path)) {
        held.touch();
        return Some((held, manifest));
    }
    if held.too_large(cache.max_size) {
        return None;
    }
    if !make {
        cache::want(cache, cache::Fill::WRAPPER);
        return None;
    }
    // The header records its source, which must stay where it was: an empty file beside it,
    // made only where there is none (never truncated again: its time is in the headers made
    // from it), replaced whole where something else is there (a damaged cache: the header
    // would hold its text).
    let empty = path.with_extension("cu");
    match std::fs::metadata(&empty) {
        Ok(m) if m.is_file() && m.len() == 0 => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::OpenOptions::new().write(true).create_new(true).open(&empty) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        },
        _ => cache::write_atomic(&empty, b"").ok()?,
    }
    // The linked Clang lists the files it read, whose names the manifest keeps.
    let listed = matches!(engine, ClangEngine::InProcess { .. });
    let made = run_clang_with(
        engine,
        |work| {
            let (output, depfile) = (work.join("cuda-wrapper.pch"), work.join("cuda-wrapper.d"));
            let listing = ClangInvocation { depfile: listed.then_some((depfile.as_path(), true)), ..template.clone() };
            Ok((listing.pch_args(&empty, &output), output, listed.then_some(depfile.clone())))
        },
        build,
    );
    let (made, depfile) = match made {
        Ok((made, depfile, _)) => (made, depfile),
        Err(failure) => {
            if failure.mentions(HOST_DEFERRED_DIAGNOSTICS) {
                held.mark_not_made();
            }
            return None;
        }
    };
    // Its source damaged while Clang read it: a header of something else, not kept.
    if !std::fs::metadata(&empty).is_ok_and(|m| m.is_file() && m.len() == 0) {
        return None;
    }
    if made.len() as u64 > cache.max_size {
        held.mark_too_large(made.len() as u64);
        return None;
    }
    let names = if listed {
        let mut names = std::collections::BTreeSet::new();
        for file in preamble::parse_depfile(&depfile) {
            // A file gone or unreadable since: its names unknown, the header not kept.
            super::header_names(&String::from_utf8_lossy(&std::fs::read(&file).ok()?), &mut names);
        }
        Some(names.into_iter().collect())
    } else {
        None
    };
    cache::write_atomic(path, &made).ok()?;
    // A header kept without its manifest (the manifest's write failed) is a miss, made again.
    let manifest = cache::WrapperManifest { header: cache::HeaderStamp::written(&made, path)?, names };
    cache::write_atomic(&manifest_path, &serde_json::to_vec(&manifest).ok()?).ok()?;
    *wrote = true;
    held.found(path);
    held.touch();
    Some((held, manifest))
}

/// The start of the linked Clang's error (`shim.cpp`, `PruneDeferredDiagnosticRoots`) when a
/// host side's precompiled header would hold deferred diagnostics, which a header loses: Clang's
/// `DeviceDeferredDiags` (on the host side, a `__host__ __device__` function's use of a
/// `__device__` one) are not written, and no check of the host IR finds what they would have
/// said, as the driver's check of the device side's IR does (`driver::cuda`). Such a header is
/// not made ([`InUse::mark_not_made`]): the host side parses those headers itself, and says
/// what it says without a cache.
pub(crate) const HOST_DEFERRED_DIAGNOSTICS: &str = "cdpc: not precompiled: the host side holds deferred diagnostics";

/// A precompiled preamble from the cache: its entry, held until the compilation is over, the
/// preamble's length, and the messages of its making.
pub(crate) type HeldPreamble = (preamble::Entry, InUse, usize, Vec<in_process::Message>);

/// The source's precompiled preamble for `template`'s options ([`super::preamble`]), when it
/// has one and the cache holds it, or, with `make`, when it has been seen before (then it is made
/// here, and `wrote` says so; without `make` it is left for a filler, [`cache::Fill`]). `None`:
/// compile without. Only the linked Clang makes preambles (it hands its messages back as data).
#[allow(clippy::too_many_arguments)]
pub(crate) fn ensure_preamble(
    engine: &ClangEngine,
    template: &ClangInvocation<'_>,
    cache: &Cache,
    identity: &Path,
    source_path: &Path,
    source: &str,
    build: &BuildOptions,
    make: bool,
    wrote: &mut bool,
) -> Option<HeldPreamble> {
    if !matches!(engine, ClangEngine::InProcess { .. }) || preamble::disabled() {
        return None;
    }
    let bytes = preamble::bounds(source)?;
    let source_dir = source_path.canonicalize().ok()?.parent()?.to_path_buf();
    let quote_dir = preamble::quote_dir(source_path);
    let key = preamble::Key { text: source[..bytes].to_string(), source_dir, quote_dir: quote_dir.clone(), cwd: std::env::current_dir().ok()?, compiler: template.identity(identity) };
    let entry = preamble::Entry::new(cache, key);
    match entry.lookup(cache.max_size) {
        preamble::Lookup::Hit(messages, held) => Some((entry, held, bytes, messages)),
        preamble::Lookup::FirstSight | preamble::Lookup::TooLarge | preamble::Lookup::Unusable => None,
        preamble::Lookup::Build(_) if !make => {
            cache::want(cache, cache::Fill::PREAMBLE);
            None
        }
        preamble::Lookup::Build(mut held) => {
            entry.write_copy().ok()?;
            let made = run_clang_with(
                engine,
                |work| {
                    let (output, depfile) = (work.join("preamble.pch"), work.join("preamble.d"));
                    Ok((template.preamble_args(&entry.copy, &quote_dir, &output, &depfile), output, Some(depfile)))
                },
                build,
            );
            // A preamble Clang cannot precompile (an error in a header): the compilation
            // without it reports the error. One it refuses for the host side's deferred
            // diagnostics is not tried again.
            if matches!(&made, Err(failure) if failure.mentions(HOST_DEFERRED_DIAGNOSTICS)) {
                held.mark_not_made();
            }
            let Ok((pch, depfile, Said::Messages(messages))) = made else { return None };
            if !entry.copy_intact() {
                return None;
            }
            if pch.len() as u64 > cache.max_size {
                held.mark_too_large(pch.len() as u64);
                return None;
            }
            // A header kept without its manifest (the manifest's write failed) is a miss, made
            // again (renamed over) by the next compilation, or trimmed.
            if entry.store(&pch, &depfile, &messages, source_path).is_err() {
                return None;
            }
            *wrote = true;
            held.found(&entry.pch);
            held.touch();
            let messages = entry.in_source(messages, source_path);
            Some((entry, held, bytes, messages))
        }
    }
}

/// The preamble's messages, but those the compilation gave again, then the compilation's.
pub(crate) fn with_replay(replay: Vec<in_process::Message>, messages: Vec<in_process::Message>) -> Vec<in_process::Message> {
    let mut all: Vec<in_process::Message> = replay.into_iter().filter(|m| !messages.contains(m)).collect();
    all.extend(messages);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of the files it read that Clang was asked for and did not write (another Clang's
    /// crash removes the files of the process) fails the run: an empty list would make a
    /// preamble that depends on nothing, used after its headers change.
    #[test]
    fn a_file_list_clang_did_not_write_fails_the_run() {
        let Ok(engine @ ClangEngine::InProcess { .. }) = crate::front::cuda::find_engine(&Default::default(), &crate::front::cuda::ClangEnv::from_process()) else {
            return println!("skipped: no linked Clang");
        };
        let ClangEngine::InProcess { resource_dir } = &engine else { unreachable!() };
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("a.cpp");
        std::fs::write(&source, "int f() { return 1; }\n").unwrap();
        let build = BuildOptions::default();
        let run = |with_list: bool| {
            run_clang_with(
                &engine,
                |work| {
                    let (output, list) = (work.join("a.bc"), work.join("a.d"));
                    let mut args: Vec<OsString> = vec!["-resource-dir".into(), resource_dir.into(), "-c".into(), "-emit-llvm".into(), "-o".into(), output.clone().into()];
                    if with_list {
                        args.extend(["-MD".into(), "-MF".into(), list.clone().into()]);
                    }
                    args.push(source.clone().into());
                    Ok((args, output, Some(list)))
                },
                &build,
            )
        };
        let Ok((bitcode, list, _)) = run(true) else { panic!("Clang failed") };
        assert!(bitcode.starts_with(b"BC\xc0\xde") && list.contains("a.cpp"), "{list}");
        assert!(matches!(run(false), Err(Failure::Tool(ToolError::Io { .. }))), "no list, a failure");
    }
}
