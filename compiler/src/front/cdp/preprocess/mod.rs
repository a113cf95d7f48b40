//! The C preprocessor: the phase before the lexer. Source text and [`PreprocessOptions`] in,
//! preprocessed text and a [`SourceMap`] out.
//!
//! # Where things are
//!
//! | module | job |
//! |---|---|
//! | `lexer.rs` | preprocessing tokens of one file (comments, splices, literals, punctuators) |
//! | `directives.rs` | the walk over a file: text runs, directives, the `#if` stack |
//! | `macros.rs` | **where macros are expanded**: the macro table, `#`, `##`, `__VA_ARGS__`, hide sets |
//! | `expr.rs` | the `#if` expression evaluator (`defined`, `__has_include`, C's integer arithmetic) |
//! | `include.rs` | `#include` search, reading files, the host-only headers that are skipped |
//! | `headers.rs` and `headers/` | the headers cdpc ships for device code (`cuda_runtime.h`, `cstdio`, ...) |
//! | `predefined.rs` | the predefined macros and the `-D`/`-U` options, as text |
//! | `source_map.rs` | from preprocessed byte ranges back to files, with the macro expansion chain |
//!
//! # What comes out
//!
//! Text that the lexer and parser read unchanged. Text lines outside macro invocations are
//! copied byte for byte, with their comments; a directive line becomes nothing (its newline
//! stays), an `#include` becomes the included text, a skipped `#if` group disappears, and a
//! macro invocation becomes its expansion, its tokens separated by single spaces. A source
//! without directives and macros comes out byte-identical, with an identity map, so spans,
//! snapshots and PTX do not change.
//!
//! `#pragma` lines other than `#pragma once` and `#pragma message` are kept as they are (the
//! lexer ignores them, so a later grammar may read `#pragma unroll`); `_Pragma("...")` is not
//! interpreted. `#line` and `#ident` are accepted and ignored: diagnostics always name the real
//! file and line. `#warning` is `W0610`, `#error` is `E0603`, `#pragma message` the remark
//! `R1034` (as nvcc says it, and CUDA C++ through Clang).
//!
//! # Predefined macros
//!
//! As nvcc's device compilation (`nvcc --dryrun` shows the gcc and cicc command lines of the
//! device pass; cdpc always compiles relocatable device code, like `nvcc -rdc=true`):
//! `__CUDACC__`, `__NVCC__`, `__CUDACC_RDC__`, `__CUDA_ARCH__` (10 times the `-arch` number:
//! 900 for sm_90), `__CUDA_ARCH_LIST__` (the same), `__CUDACC_VER_MAJOR__` 13,
//! `__CUDACC_VER_MINOR__` 5, `__CUDACC_VER_BUILD__` 37, `__CUDA_API_VER_MAJOR__` 13,
//! `__CUDA_API_VER_MINOR__` 5 (cdpc claims to be the nvcc 13.5.37 whose device runtime ABI it
//! implements and whose wheels it is tested against), `__CUDACC_DEVICE_ATOMIC_BUILTINS__` 1,
//! `__NVCC_DIAG_PRAGMA_SUPPORT__` 1, `CUDA_DOUBLE_MATH_FUNCTIONS`; `__cplusplus` 201703L (nvcc's
//! default dialect, C++17), `__STDC__` 1, `__STDC_HOSTED__` 1; for 64-bit output `__LP64__`,
//! `_LP64`, `__x86_64__`, `__x86_64`, `__amd64__`, `__amd64`, and always `__linux__`,
//! `__linux`, `__unix__`, `__unix`, `__gnu_linux__`, `__ELF__`, `__CHAR_BIT__` 8,
//! `__SIZEOF_INT__` 4, `__SIZEOF_LONG__` (8 or 4), `__SIZEOF_POINTER__` (8 or 4),
//! `__SIZEOF_LONG_LONG__` 8 (as gcc, nvcc's host compiler, defines them on x86-64 Linux);
//! `__CDPC__` 1 and `__CDPC_VERSION__` (the crate version as a string, `"0.1.0"`), and the
//! integer `__CDPC_VERSION_NUM__` (major·10000 + minor·100 + patch). `__FILE__`, `__LINE__`
//! and `__COUNTER__` are computed at each use; `__DATE__` and `__TIME__` are fixed at
//! `"Jan  1 1970"` and `"00:00:00"` so that builds are reproducible (as `SOURCE_DATE_EPOCH=0`
//! makes gcc's). With `--default-stream per-thread` (`Target::default_stream`),
//! `CUDA_API_PER_THREAD_DEFAULT_STREAM` 1, as nvcc defines it. `__GNUC__` is not defined: cdpc is no GNU compiler, and headers that test it
//! would expect GNU built-ins.
//!
//! Then `-D NAME`, `-D NAME=VALUE` and `-U NAME` apply in command-line order (as a
//! `<command line>` file of `#define` and `#undef` lines).
//!
//! # Headers
//!
//! `#include "name"` looks beside the including file, then in the `-I` folders, then as `<name>`.
//! `#include <name>` looks in the `-I` folders, then among the headers cdpc ships (named
//! `<cdpc>/name` in diagnostics). A `<...>` header found in neither is host-only
//! (`<iostream>`, `<thrust/sort.h>`): it is skipped with remark `R0611` (which the driver shows
//! only under `-Rskipped-headers`), and an unknown name in
//! the program (`E0100`) gets a note naming the skipped headers. A `"..."` header found nowhere
//! is `E0602`. Include guards and `#pragma once` work as usual; a file is read from disk once.
//!
//! # Limits
//!
//! Each is a diagnostic, in bounded time and memory (`compiler/tests/hostile.rs`):
//! `#include` nesting at most [`include::MAX_INCLUDE_DEPTH`] (200, like gcc) deep and at most
//! [`include::MAX_INCLUDES`] inclusions in all, so that a cycle without guards ends
//! (`E0608`); at most [`macros::MAX_EXPANSION_TOKENS`] tokens made by macro expansion and
//! [`MAX_OUTPUT_BYTES`] of output (`E0608`); macro invocations at most
//! [`macros::MAX_ARGUMENT_DEPTH`] deep inside arguments (`E0608`); `#if` expressions at most
//! [`expr::MAX_DEPTH`] deep (`E0605`). `#if` groups may nest to any depth (the stack is a
//! vector: 10,000 levels cost nothing). Recursive macros stop expanding (hide sets), which is
//! no error. A limit stops the phase; other errors let it go on to the end of the file.
//! Memory: a file with neither `#` nor a macro name is copied without keeping its tokens (a
//! 50 MB file costs its text); otherwise its tokens take 12 bytes each while it is read
//! (`hostile.rs` runs 50 MB of `(` after a `#define` under a 4 GiB address-space limit).

mod directives;
pub mod expr;
mod headers;
pub mod include;
mod lexer;
pub mod macros;
mod predefined;
pub mod source_map;
#[cfg(test)]
mod tests;

use crate::diag::{Diagnostic, Diagnostics, SourceFile};
use crate::target::Target;
use macros::{Macros, Tok};
pub use source_map::{FileId, Loc, SourceMap};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

/// The largest preprocessed text, in bytes: the front end's own limit on a source.
pub const MAX_OUTPUT_BYTES: usize = crate::front::cdp::syntax::MAX_SOURCE_BYTES;

/// `-D` or `-U`, in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MacroOption {
    /// `-D NAME` (value 1) or `-D NAME=VALUE`: the text after `-D`.
    Define(String),
    /// `-U NAME`.
    Undefine(String),
}

/// Whether `#include` may read files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// Headers are read from disk, and the shipped headers are available.
    #[default]
    Disk,
    /// Only the shipped headers exist (fuzzing, or sources that must not read files).
    ShippedOnly,
}

/// How to preprocess. The default: no input path, no `-D`/`-U`/`-I`, files may be read.
#[derive(Clone, Debug, Default)]
pub struct PreprocessOptions {
    /// The input file: `"..."` headers are looked up beside it. Without it they are looked
    /// up in the current folder (as gcc does for standard input).
    pub input: Option<PathBuf>,
    /// The input's name in `__FILE__` and in the names of headers found beside it; by
    /// default `input` as given, or `<input>`.
    pub input_name: Option<String>,
    /// `-D` and `-U`, in order.
    pub macros: Vec<MacroOption>,
    /// `-I` folders, in order.
    pub include_dirs: Vec<PathBuf>,
    /// `-isystem` folders, in order, looked in after the `-I` folders (gcc's order; for CUDA
    /// C++, Clang's warnings in their headers are not given, as gcc's and nvcc's are not).
    pub system_include_dirs: Vec<PathBuf>,
    /// Whether headers may be read from disk.
    pub files: FileAccess,
}

impl PreprocessOptions {
    /// The name of the main file in `__FILE__` and diagnostics of headers.
    pub fn main_name(&self) -> String {
        match (&self.input_name, &self.input) {
            (Some(name), _) => name.clone(),
            (None, Some(path)) => path.display().to_string(),
            (None, None) => "<input>".into(),
        }
    }
}

/// The preprocessor's result.
#[derive(Debug)]
pub struct Preprocessed {
    /// The text for the lexer.
    pub text: String,
    /// Where each part of `text` came from; [`SourceMap::remap`] maps later diagnostics.
    pub map: SourceMap,
    /// Errors, warnings and remarks, with spans in the files they are about.
    pub diagnostics: Vec<Diagnostic>,
    /// The `<...>` headers skipped as host-only, as written (`<iostream>`), in order, once each.
    pub skipped_headers: Vec<String>,
    /// The headers read from disk, in the order first read, once each (dependency lists).
    pub headers: Vec<Header>,
}

/// A header a compilation read from disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Its path, as found (the `-I` folder or the includer's folder joined to the name).
    pub path: PathBuf,
    /// Whether it was found in a system folder (`-isystem`; CUDA's and Clang's own headers for
    /// CUDA C++): `-MMD` leaves those out.
    pub system: bool,
}

/// A limit was hit: the phase stops (the diagnostic is already reported).
#[derive(Debug)]
pub struct Fatal;

/// The preprocessor's state while it walks the files.
pub(crate) struct Preprocessor<'o> {
    options: &'o PreprocessOptions,
    macros: Macros,
    map: SourceMap,
    out: String,
    diagnostics: Diagnostics,
    /// The `#if` groups open, across files.
    conds: Vec<directives::Cond>,
    includes: include::IncludeState,
    skipped_headers: Vec<String>,
    /// Tokens made by expansion so far ([`macros::MAX_EXPANSION_TOKENS`]).
    work: u64,
    counter: u64,
    /// The invocation being expanded in the file being read: `__LINE__` and `__FILE__`.
    site: Loc,
    no_hide: Rc<[u32]>,
}

/// Preprocesses `source`, the main file, for `target` (which sets `__CUDA_ARCH__`).
pub fn preprocess(source: &str, options: &PreprocessOptions, target: &Target) -> Preprocessed {
    let mut pp = Preprocessor {
        options,
        macros: Macros::default(),
        map: SourceMap::default(),
        out: String::new(),
        diagnostics: Diagnostics::default(),
        conds: Vec::new(),
        includes: include::IncludeState::default(),
        skipped_headers: Vec::new(),
        work: 0,
        counter: 0,
        site: Loc { file: 0, start: 0, end: 0 },
        no_hide: Rc::from([]),
    };
    let main = Arc::new(SourceFile { name: options.main_name(), text: source.to_string() });
    pp.map.add_file(main, None);
    let mut run = || -> Result<(), Fatal> {
        for (name, text) in predefined::prelude(options, target) {
            let file = pp.map.add_file(Arc::new(SourceFile { name: name.into(), text }), None);
            pp.run_file(file)?;
        }
        pp.out.clear();
        pp.map.clear_segments();
        pp.run_file(0)
    };
    let finished = run().is_ok();
    if !finished {
        // A limit stopped the phase: no partial text goes on to the lexer.
        pp.out.clear();
        pp.map.clear_segments();
    }
    let headers = std::mem::take(&mut pp.includes.read);
    Preprocessed { text: pp.out, map: pp.map, diagnostics: pp.diagnostics.into_vec(), skipped_headers: pp.skipped_headers, headers }
}

impl Preprocessor<'_> {
    /// Reports a diagnostic already located in a file.
    fn report(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    /// Reports `d` at `t`: at the token itself when it comes from a file, at the invocation it
    /// came out of otherwise.
    fn report_at_tok(&mut self, d: Diagnostic, t: &Tok) {
        let loc = match t.origin {
            Some(exp) => {
                let mut e = &self.map.expansions[exp as usize];
                while let Some(p) = e.parent {
                    e = &self.map.expansions[p as usize];
                }
                e.call
            }
            None => t.loc,
        };
        let d = self.map.located(d, loc);
        self.report(d);
    }

    /// Reports `d` at `loc` and returns the marker that stops the phase.
    fn fatal(&mut self, d: Diagnostic, loc: Loc) -> Fatal {
        let d = self.map.located(d, loc);
        self.report(d);
        Fatal
    }
}
