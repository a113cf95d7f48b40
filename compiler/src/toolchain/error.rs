//! Errors from finding and running the NVIDIA tools.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use crate::diag::Code;

/// How much of a tool's stderr (and stdout) an error keeps: the last 64 KiB.
pub const CAPTURE_LIMIT: usize = 64 * 1024;

/// How to get the tools, shown with every [`ToolError::NotFound`].
pub const INSTALL_HELP: &str = "\
to install them, run `cargo xtask setup` in the cdpc checkout (puts the pinned wheels in .cuda/),
  or `python3 -m pip install nvidia-cuda-nvcc==13.5.37 nvidia-cuda-runtime==13.5.37` (in a virtual
  environment or with --user, found through python3's site folders; with --target DIR, pass DIR
  with --cuda-home or set CUDA_HOME), or set CUDA_HOME to a CUDA toolkit";

/// How a tool ended when it did not succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    /// It exited with this status code.
    Code(i32),
    /// It was killed by this signal (Unix).
    Signal(i32),
    /// Neither a code nor a signal is known.
    Unknown,
}

impl ExitKind {
    /// How a finished process ended.
    pub fn from_status(status: ExitStatus) -> ExitKind {
        if let Some(code) = status.code() {
            return ExitKind::Code(code);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                return ExitKind::Signal(sig);
            }
        }
        ExitKind::Unknown
    }
}

impl fmt::Display for ExitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitKind::Code(c) => write!(f, "exit status {c}"),
            ExitKind::Signal(s) => match signal_name(s) {
                Some(name) => write!(f, "killed by signal {s} ({name})"),
                None => write!(f, "killed by signal {s}"),
            },
            ExitKind::Unknown => f.write_str("unknown exit status"),
        }
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// Everything that can go wrong between PTX and a cubin on disk.
#[derive(Debug)]
pub enum ToolError {
    /// A tool or library was not found. `searched` lists every place looked at, in order.
    #[allow(missing_docs)]
    NotFound { what: String, searched: Vec<String> },
    /// No host compiler (for host files and a program's link): `searched` lists every place
    /// looked at, in order ([`super::HostCompiler::find`]).
    #[allow(missing_docs)]
    HostCompilerNotFound { searched: Vec<String> },
    /// No archiver for a static library: `searched` says where it was looked for
    /// ([`super::Archiver::find`]).
    #[allow(missing_docs)]
    ArchiverNotFound { searched: Vec<String> },
    /// A tool could not be started at all (not executable, vanished, ...).
    #[allow(missing_docs)]
    Spawn { tool: String, command: String, source: io::Error },
    /// A tool ran and failed. `command` is its command line (quoted for a shell), `status` how
    /// it ended; `stderr`/`stdout` hold at most the last [`CAPTURE_LIMIT`] bytes.
    #[allow(missing_docs)]
    Failed { tool: String, command: String, status: ExitKind, stderr: String, stdout: String },
    /// A work file (in the temporary work folder under `$TMPDIR`) could not be made, written
    /// or read; `action` says what we were doing ("writing the PTX for ptxas"). `E0706`.
    #[allow(missing_docs)]
    Io { action: String, path: PathBuf, source: io::Error },
    /// The output path cannot receive the result (a directory, a missing or unwritable folder).
    /// `E0704`.
    #[allow(missing_docs)]
    OutputPathInvalid { path: PathBuf, reason: String },
    /// Writing the output failed (disk full, an I/O error); `path` is the output the user
    /// named, and nothing was left there or beside it. `E0704`.
    #[allow(missing_docs)]
    OutputIo { path: PathBuf, source: io::Error },
    /// A tool ran longer than [`BuildOptions::tool_timeout`](super::BuildOptions::tool_timeout)
    /// and was killed; `stderr` is what it had printed by then (truncated). `E0702`.
    #[allow(missing_docs)]
    TimedOut { tool: String, command: String, limit: Duration, stderr: String },
    /// [`interrupt`](super::cleanup::interrupt) was called: the process is being stopped. `E0703`.
    Interrupted,
    /// The output path names an input of the compilation (the same file, also through a
    /// symbolic or hard link). `E0700`.
    #[allow(missing_docs)]
    OutputIsInput { output: PathBuf, input: PathBuf },
    /// The output path names an existing file that is not the output of a compiler, which
    /// cdpc does not replace unless asked to. `E0701`.
    #[allow(missing_docs)]
    WouldOverwrite { path: PathBuf, reason: String },
}

impl ToolError {
    /// The stable diagnostic code of the errors that have one (those about the user's files,
    /// work files and bounded time); the rest (a tool missing or failing) are reported without
    /// a code.
    pub fn code(&self) -> Option<Code> {
        Some(match self {
            ToolError::OutputIsInput { .. } => Code::OutputIsInput,
            ToolError::WouldOverwrite { .. } => Code::OutputNotCompilerOutput,
            ToolError::TimedOut { .. } => Code::ToolTimedOut,
            ToolError::Interrupted => Code::Interrupted,
            ToolError::OutputPathInvalid { .. } | ToolError::OutputIo { .. } => Code::OutputNotWritable,
            ToolError::Io { .. } => Code::WorkFileFailed,
            _ => return None,
        })
    }

    pub(crate) fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: io::Error) -> ToolError {
        ToolError::Io { action: action.into(), path: path.into(), source }
    }
}

/// "WHAT not found", the places searched in order, and what to do.
fn not_found(f: &mut fmt::Formatter<'_>, what: &str, searched: &[String], help: &str) -> fmt::Result {
    writeln!(f, "{what} not found")?;
    writeln!(f, "  searched, in order:")?;
    for place in searched {
        writeln!(f, "    - {place}")?;
    }
    write!(f, "  {help}")
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::NotFound { what, searched } => {
                writeln!(f, "{what} not found")?;
                if searched.is_empty() {
                    writeln!(f, "  searched: nowhere (no CUDA_HOME, no .cuda/ folder, no python3 or ptxas on PATH)")?;
                } else {
                    writeln!(f, "  searched, in order:")?;
                    for place in searched {
                        writeln!(f, "    - {place}")?;
                    }
                }
                write!(f, "  {INSTALL_HELP}")
            }
            ToolError::HostCompilerNotFound { searched } => {
                not_found(f, "the host compiler (a C++ compiler, for host files and the program's link)", searched, "install one (`apt-get install g++`), or name it with -ccbin or CDPC_HOST_CXX")
            }
            ToolError::ArchiverNotFound { searched } => {
                not_found(f, "the archiver (`ar`, for a static library)", searched, "install one (`apt-get install binutils`), or name it with --archiver (nvcc's -arbin) or CDPC_AR")
            }
            ToolError::Spawn { tool, command, source } => {
                write!(f, "{tool} could not be started: {source}\n  command: {command}")
            }
            ToolError::Failed { tool, command, status, stderr, stdout } => {
                write!(f, "{tool} failed ({status})\n  command: {command}")?;
                let stderr = stderr.trim_end();
                let stdout = stdout.trim_end();
                if !stderr.is_empty() {
                    write!(f, "\n  stderr:\n{}", indent(stderr))?;
                }
                if !stdout.is_empty() {
                    write!(f, "\n  stdout:\n{}", indent(stdout))?;
                }
                if stderr.is_empty() && stdout.is_empty() {
                    write!(f, "\n  (no output)")?;
                }
                Ok(())
            }
            ToolError::Io { action, path, source } => {
                write!(f, "a work file failed: {action} `{}`: {}", path.display(), io_message(source))?;
                write!(f, "\n  = help: work files go to $TMPDIR (else /tmp): point it at a writable folder with free space")
            }
            ToolError::OutputPathInvalid { path, reason } => {
                write!(f, "cannot write the output `{}`: {reason}", path.display())
            }
            ToolError::OutputIo { path, source } => {
                write!(f, "cannot write the output `{}`: {}", path.display(), io_message(source))?;
                write!(f, "\n  = note: nothing was written: the file is as it was before")
            }
            ToolError::TimedOut { tool, command, limit, stderr } => {
                write!(f, "{tool} did not finish within {} and was killed\n  command: {command}", seconds(*limit))?;
                let stderr = stderr.trim_end();
                if !stderr.is_empty() {
                    write!(f, "\n  stderr so far:\n{}", indent(stderr))?;
                }
                write!(f, "\n  = help: --tool-timeout SECONDS sets the limit (0: none)")
            }
            ToolError::Interrupted => f.write_str("interrupted: the compilation was stopped and its work files removed"),
            ToolError::OutputIsInput { output, input } => {
                write!(f, "the output `{}` is the input `{}`: writing it would destroy the source", output.display(), input.display())?;
                write!(f, "\n  = help: name another output file with -o")
            }
            ToolError::WouldOverwrite { path, reason } => {
                write!(f, "refusing to overwrite `{}`: {reason}", path.display())?;
                write!(f, "\n  = help: cdpc replaces only files that are compiler outputs (ELF, PTX, LLVM IR) or empty; pass --overwrite to replace it anyway")
            }
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolError::Spawn { source, .. } | ToolError::Io { source, .. } | ToolError::OutputIo { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The operating system's message for `e` without Rust's " (os error 28)" suffix: the
/// diagnostic says "error" once, in its head.
pub fn io_message(e: &io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(at)) => text[..at].to_string(),
        _ => text,
    }
}

/// A limit as people write it: `600 s`, `0.5 s`.
fn seconds(limit: Duration) -> String {
    format!("{} s", limit.as_secs_f64())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// Keeps the last `limit` bytes of a tool's output, cut at a character boundary, decoded lossily.
pub fn truncate_output(bytes: &[u8], limit: usize) -> String {
    if bytes.len() <= limit {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut start = bytes.len() - limit;
    // Do not start in the middle of a UTF-8 sequence.
    while start < bytes.len() && (bytes[start] & 0xC0) == 0x80 {
        start += 1;
    }
    format!("[... {} bytes omitted ...]\n{}", start, String::from_utf8_lossy(&bytes[start..]))
}

/// Quotes one argument for display the way a POSIX shell would read it back.
pub fn shell_quote(arg: &OsStr) -> String {
    let s = arg.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A whole command line, program first, quoted for display.
pub fn command_line(program: &OsStr, args: &[OsString]) -> String {
    std::iter::once(program).chain(args.iter().map(|a| a.as_os_str())).map(shell_quote).collect::<Vec<_>>().join(" ")
}
