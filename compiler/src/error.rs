//! The one error a compilation returns, [`CompileError`], for every front end and the driver
//! alike, and the reading of source bytes as text ([`decode_source`], [`NotUtf8`]): below the
//! front ends, which report through it, and above the NVPTX end and the toolchain, whose
//! failures it carries.

use crate::back::BackendError;
use crate::diag::{Code, Diagnostic};
use crate::toolchain::ToolError;
use std::fmt;
use std::path::PathBuf;

/// Why a compilation produced no output.
#[derive(Debug)]
pub enum CompileError {
    /// The source has errors; the list holds every diagnostic, warnings included.
    Diagnostics(Vec<Diagnostic>),
    /// The options ask for something impossible (a cubin at 32 bits, say).
    Usage(String),
    /// LLVM failed on valid input: a bug in cdpc.
    Backend(BackendError),
    /// ptxas or nvlink is missing or failed; the error carries the command line and stderr.
    Tool(ToolError),
    /// The source is not UTF-8: an `E0008` diagnostic and the text to render it against.
    NotUtf8(Box<NotUtf8>),
    /// Reading the source or writing the output failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done, for the message ("cannot read").
        action: &'static str,
        /// The operating system's error.
        error: std::io::Error,
    },
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Diagnostics(d) => {
                let errors = d.iter().filter(|d| d.is_error()).count();
                write!(f, "could not compile: {errors} error{}", if errors == 1 { "" } else { "s" })
            }
            CompileError::Usage(message) => f.write_str(message),
            CompileError::Backend(e) => write!(f, "internal compiler error in code generation: {e}"),
            CompileError::Tool(e) => write!(f, "{e}"),
            CompileError::NotUtf8(e) => f.write_str(&e.diagnostic.message),
            CompileError::Io { path, action, error } => write!(f, "{action} `{}`: {}", path.display(), crate::toolchain::io_message(error)),
        }
    }
}

impl std::error::Error for CompileError {}

impl CompileError {
    /// The stable code of an error that is no source diagnostic, where it has one: `E0700`
    /// (the output is an input), `E0701` (the output would replace a file that is no compiler
    /// output), `E0702` (a tool timed out), `E0703` (interrupted), `E0704` (the output cannot
    /// be written), `E0705` (an input cannot be read), `E0706` (a work file failed).
    pub fn code(&self) -> Option<Code> {
        match self {
            CompileError::Tool(e) => e.code(),
            CompileError::Io { .. } => Some(Code::InputNotReadable),
            _ => None,
        }
    }
}

impl From<ToolError> for CompileError {
    fn from(e: ToolError) -> CompileError {
        CompileError::Tool(e)
    }
}

impl From<BackendError> for CompileError {
    fn from(e: BackendError) -> CompileError {
        match e {
            // The input's own text, not the back end's doing: a diagnostic (`E1018`).
            BackendError::PtxNotText(line) => CompileError::Diagnostics(vec![Diagnostic::new(Code::PtxNotText, crate::diag::Span::default(), "the PTX would hold bytes that are not UTF-8 text")
                .with_primary_message("from this input")
                .with_note(format!("the PTX line, each such byte shown as the replacement character: {line}"))
                .with_note("PTX is text: inline assembly (`module asm`, `asm` calls) and the file names of debug information go into it as written; write them as UTF-8 (ptxas reads ASCII)")]),
            // An operation of the input LLVM cannot compile, or LLVM's own failure (`E1023`).
            BackendError::Stopped(reason) => CompileError::Diagnostics(vec![Diagnostic::new(Code::LlvmStopped, crate::diag::Span::default(), format!("LLVM stopped compiling this input: {reason}"))
                .with_primary_message("in code made from this input")
                .with_note("LLVM ends its work on an operation its back end has no instructions for (for NVPTX, arithmetic on `fp128` such as `frem`), or on a failure of its own; cdpc stopped it before it ended the process")
                .with_note("in LLVM IR from another front end, write the operation another way or leave it to the host side; from CUDA C++ or the kernel language, this is a bug of cdpc: please report it with the input")]),
            e => CompileError::Backend(e),
        }
    }
}

/// A source that is not UTF-8, from [`decode_source`].
#[derive(Clone, Debug)]
pub struct NotUtf8 {
    /// The source as it can be shown: each byte that is not part of a UTF-8 character is `?`,
    /// so every offset is the file's own. Render [`NotUtf8::diagnostic`] against this text.
    pub shown: String,
    /// `E0008`, spanning the first invalid byte sequence.
    pub diagnostic: Diagnostic,
}

/// Source bytes as text. Sources are UTF-8 (the lexer, the spans and every rendering rely on
/// it); anything else is refused with an `E0008` diagnostic whose span covers the first invalid
/// byte sequence, rather than guessed at.
pub fn decode_source(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e.into_bytes(),
    };
    let mut shown = String::with_capacity(bytes.len());
    let mut first_bad: Option<(usize, &[u8])> = None;
    let mut bad_bytes = 0;
    for chunk in bytes.utf8_chunks() {
        shown.push_str(chunk.valid());
        let invalid = chunk.invalid();
        if !invalid.is_empty() {
            first_bad.get_or_insert((shown.len(), invalid));
            bad_bytes += invalid.len();
            shown.extend(std::iter::repeat_n('?', invalid.len()));
        }
    }
    let (offset, invalid) = first_bad.expect("from_utf8 failed, so some bytes are invalid");
    let hex: Vec<String> = invalid.iter().map(|b| format!("0x{b:02X}")).collect();
    let label = if invalid.len() == 1 { format!("byte {} is not UTF-8", hex[0]) } else { format!("bytes {} are not a UTF-8 character", hex.join(" ")) };
    let mut diagnostic = Diagnostic::new(Code::InvalidUtf8, crate::diag::Span::new(offset, offset + invalid.len()), format!("the source is not valid UTF-8 (first bad byte at offset {offset})"))
        .with_primary_message(label)
        .with_note("cdpc reads sources as UTF-8; convert the file, e.g. `iconv -f LATIN1 -t UTF-8 in.cu > out.cu` for a Latin-1 file");
    let more = bad_bytes - invalid.len();
    if more > 0 {
        diagnostic = diagnostic.with_note(format!("{more} more byte{} further on {} not UTF-8 (shown as `?`)", if more == 1 { "" } else { "s" }, if more == 1 { "is" } else { "are" }));
    }
    Err(NotUtf8 { shown, diagnostic })
}
