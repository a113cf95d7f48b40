//! Clang's messages as cdpc diagnostics.
//!
//! The Clang inside cdpc hands its messages over as data ([`from_messages`]); a Clang program
//! (`--clang`, `CDPC_CLANG`) prints them ([`parse`]). Both become the same diagnostics. The
//! program runs with `-fno-caret-diagnostics -fdiagnostics-absolute-paths`, so each message is
//! one line, `FILE:LINE:COL: error: MESSAGE [-Wflag]`, or, for the driver's own messages,
//! `clang++-22: error: MESSAGE`. Errors become `E1000` and warnings `W1001`, with a span at
//! the line and column (the word there, or one character). A `note:` belongs to the message
//! before it and becomes a label (same file) or a note. A message in another file than the
//! main one (a header) carries that file on its label, as the preprocessor's do. Context
//! lines (`In file included from ...`) and the closing count (`2 errors generated.`) are
//! dropped: the labels say where.
//!
//! Clang's error at `cudaDeviceSynchronize` in device code (only the host's is declared since
//! CUDA 12) is the kernel language's `E0308`, in its words ([`crate::diag::words`]), at the call.

use crate::diag::{span_at, Code, Diagnostic, Label, Severity, SourceFile, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One parsed line of Clang's output.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line<'a> {
    place: Option<(&'a str, usize, usize)>,
    kind: &'a str,
    message: &'a str,
}

fn parse_line(line: &str) -> Option<Line<'_>> {
    for kind in ["fatal error", "error", "warning", "note", "remark"] {
        let marker = format!(": {kind}: ");
        let Some(at) = line.find(&marker) else { continue };
        let (head, message) = (&line[..at], &line[at + marker.len()..]);
        // `file:line:col` (the file may itself hold colons), or a program name.
        let mut parts = head.rsplitn(3, ':');
        let place = match (parts.next(), parts.next(), parts.next()) {
            (Some(col), Some(row), Some(file)) => match (row.parse::<usize>(), col.parse::<usize>()) {
                (Ok(row), Ok(col)) => Some((file, row, col)),
                _ => None,
            },
            _ => None,
        };
        return Some(Line { place, kind, message });
    }
    None
}

/// Reads Clang's stderr. `main` is the file Clang compiled (as Clang names it) and `main_text`
/// its text; labels in it carry no file, labels elsewhere carry theirs (read from disk once).
/// `shown_name` is how the main file is called in notes about other lines.
pub fn parse(stderr: &str, main: &Path, main_text: &str) -> Vec<Diagnostic> {
    convert(stderr.lines().filter_map(parse_line), main, main_text)
}

/// The messages of the Clang inside cdpc ([`super::in_process`]), as [`parse`] reads a Clang
/// program's.
pub fn from_messages(messages: &[super::in_process::Message], main: &Path, main_text: &str) -> Vec<Diagnostic> {
    use super::in_process::Level;
    let lines = messages.iter().map(|m| Line {
        place: m.place.as_ref().map(|(file, row, col)| (file.as_str(), *row, *col)),
        kind: match m.level {
            Level::Note => "note",
            Level::Remark => "remark",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Fatal => "fatal error",
        },
        message: &m.text,
    });
    convert(lines, main, main_text)
}

/// What to do about a Clang message whose cause is Clang's CUDA support rather than the
/// program (nvcc accepts the same code), if it is one.
fn help_for(message: &str) -> Option<&'static str> {
    if message.starts_with("'managed' attribute ignored") {
        // cdpc's `__managed__` (clang/additions.h) is no attribute: only a spelled-out one gets here.
        return Some(
            "Clang 22 ignores the `managed` attribute in CUDA (nvcc does not), so the variable is a host \
             variable here; write `__managed__`, which cdpc makes a managed variable as nvcc does",
        );
    }
    if message.starts_with("illegal character encoding in string literal") || message.starts_with("illegal character encoding in character literal") {
        return Some(
            "the file is not UTF-8 here (a Latin-1 byte?): nvcc refuses such a byte in a literal too \
             (\"invalid multibyte character sequence\"), though not in a comment; write it as an escape, \
             `\\xE9`, or convert the file (`iconv -f LATIN1 -t UTF-8`)",
        );
    }
    if message.starts_with("variable-sized object may not be initialized") {
        return Some(
            "nvcc's host compiler, g++, accepts an initialiser for an array whose size is no constant \
             expression (a GNU extension) and Clang does not; give the size as a constant expression \
             (`constexpr`), or leave the array uninitialised and fill it (`memset(a, 0, sizeof a)`, \
             `std::fill`)",
        );
    }
    if message.starts_with("initialization is not supported for __shared__ variables") {
        return Some(
            "inside a function nvcc leaves a `__shared__` variable's construction and destruction out (and \
             cdpc compiles such a declaration as nvcc does, W1030), but not this one: at namespace scope nvcc \
             refuses it too, and a declaration of several variables or with attributes inside its type cdpc \
             does not rewrite; keep the storage raw and name it through a reference, \
             `__shared__ alignas(T) unsigned char raw[sizeof(T)]; T &name = *reinterpret_cast<T *>(raw);`, \
             and initialise it in code (`init(&bar, n)` for a barrier)",
        );
    }
    None
}

/// Clang's error at a call of `cudaDeviceSynchronize` in device code: CUDA 12 removed the
/// device runtime's (CDP2), so only the host's is declared, and overload resolution finds no
/// function the device may call. It is `E0308` when a note then says why the host's is not
/// viable ([`HOST_CANDIDATE_FROM_DEVICE`]); with another reason (arguments that do not fit) it
/// stays Clang's.
const NO_MATCHING_DEVICE_SYNCHRONIZE: &str = "no matching function for call to 'cudaDeviceSynchronize'";
/// The note that makes [`NO_MATCHING_DEVICE_SYNCHRONIZE`] `E0308`: the host's function, from
/// `__global__`, `__device__` or `__host__ __device__` code.
const HOST_CANDIDATE_FROM_DEVICE: &str = "candidate function not viable: call to __host__ function from __";

/// Clang's error at `cudaDeviceSynchronize` named in device code without overload resolution
/// (its address taken, or a call in a `__host__ __device__` function compiled for the device).
fn is_device_synchronize_reference(message: &str) -> bool {
    message.strip_prefix("reference to __host__ function 'cudaDeviceSynchronize' in __").is_some_and(|rest| rest.ends_with(" function"))
}

/// `E0308` at the place of Clang's error `d`, in the kernel language's words
/// ([`crate::diag::words`]): what `.cdp` sema says of the same call, at the call
/// (`cudaDeviceSynchronize()`, as sema's span) where Clang's place is the name of one.
fn device_synchronize_removed(d: Diagnostic, main_text: &str) -> Diagnostic {
    use crate::diag::words;
    let mut e = Diagnostic::new(Code::DeviceSynchronizeRemoved, Span::new(0, 0), words::DEVICE_SYNCHRONIZE).with_note(words::DEVICE_SYNCHRONIZE_NOTE);
    if let Some(mut primary) = d.labels.into_iter().find(|l| l.primary) {
        let text = primary.file.as_ref().map_or(main_text, |f| f.text.as_str());
        if text.get(primary.span.end as usize..).is_some_and(|rest| rest.starts_with("()")) {
            primary.span.end += 2;
        }
        primary.message = words::DEVICE_SYNCHRONIZE_LABEL.to_string();
        e.labels = vec![primary];
    }
    // A place Clang named but cdpc could not read.
    e.notes.extend(d.notes.into_iter().filter(|n| n.starts_with("at ")));
    e
}

/// The type of Clang's ambiguous assignment of a braced list (`x = {}`, `x = {a, b}`: the
/// list's type is `void` in the message) when it is `__half2` or `__nv_bfloat162`, whose
/// `operator=` for `const T &`, `const T &&` and the raw type (`__half2_raw`) Clang finds
/// equally good: in device code cdpc takes nvcc's choice (`nvcc_text`, rule 7), in host and
/// `__host__ __device__` code nvcc's host compiler refuses it too (`E1031`).
fn braced_assignment_type(message: &str) -> Option<&'static str> {
    let types = message.strip_prefix("use of overloaded operator '=' is ambiguous (with operand types '")?.strip_suffix(" and 'void')")?;
    ["__half2", "__nv_bfloat162"].into_iter().find(|t| types == format!("{t}'") || types.ends_with(&format!("(aka '{t}')")))
}

/// `E1031`: Clang's refusal of a braced list assigned to `__half2` or `__nv_bfloat162` outside
/// device code, with what nvcc does and the spelling both compilers take.
fn braced_assignment(mut d: Diagnostic, ty: &str) -> Diagnostic {
    d.code = Code::BracedAssignmentAmbiguous;
    if let Some(l) = d.labels.iter_mut().find(|l| l.primary) {
        l.message = format!("a braced list assigned to `{ty}` outside device code");
    }
    let raw = if ty == "__half2" { "__half2_raw" } else { "__nv_bfloat162_raw" };
    d.with_note(format!(
        "the list converts as well to `const {ty} &` as to `const {ty} &&` and `const {raw} &`, the parameters of \
         `{ty}`'s `operator=`: in device code nvcc's front end takes the copy assignment, and so does cdpc; in host \
         and `__host__ __device__` code nvcc's host compiler, g++, refuses it as ambiguous, as Clang does (for Clang \
         a lambda without `__device__` is `__host__ __device__` code, even in a kernel)"
    ))
    .with_note(format!("name the type, `x = {ty}{{}};` or `x = {ty}{{a, b}};`, which nvcc and cdpc both take everywhere"))
}

/// Clang's error at a copy of a lambda ([`LAMBDA_COPY_FROM_DEVICE`] follows it: `E1032`).
const NO_MATCHING_LAMBDA_CONSTRUCTOR: &str = "no matching constructor for initialization of '(lambda at ";
/// The note that makes [`NO_MATCHING_LAMBDA_CONSTRUCTOR`] `E1032`: the lambda's implicit copy
/// constructor is host-only (a capture's is) and the copy is in device code.
const LAMBDA_COPY_FROM_DEVICE: &str = "candidate constructor (the implicit copy constructor) not viable: call to __host__ function from __";

/// Whether Clang's [`NO_MATCHING_LAMBDA_CONSTRUCTOR`] `message` names a lambda annotated
/// `__device__` (an extended lambda, which nvcc copies in device code): the words from the
/// lambda's place to its body's `{` hold `__device__`. An unannotated lambda is host-only for
/// nvcc, which refuses its use in device code.
fn device_lambda(message: &str, main_canon: &Path, main_text: &str) -> bool {
    let Some(place) = message.strip_prefix(NO_MATCHING_LAMBDA_CONSTRUCTOR).and_then(|rest| rest.strip_suffix(")'")) else { return false };
    let mut parts = place.rsplitn(3, ':');
    let (Some(Ok(col)), Some(Ok(row)), Some(file)) = (parts.next().map(str::parse::<usize>), parts.next().map(str::parse::<usize>), parts.next()) else { return false };
    let path = Path::new(file);
    let read;
    let text = if path.canonicalize().unwrap_or_else(|_| path.to_path_buf()) == main_canon {
        main_text
    } else {
        match std::fs::read_to_string(path) {
            Ok(t) => {
                read = t;
                read.as_str()
            }
            Err(_) => return false,
        }
    };
    let head = &text[span_at(text, row, col).start as usize..];
    head.find('{').is_some_and(|body| head[..body].contains("__device__"))
}

/// `E1032`: a `__device__` lambda copied in device code whose captures' copy constructors are
/// host-only, which nvcc copies without them.
fn lambda_copy_host_capture(d: &mut Diagnostic) {
    d.code = Code::LambdaCopyHostCapture;
    if let Some(l) = d.labels.iter_mut().find(|l| l.primary) {
        l.message = "a `__device__` lambda copied in device code".to_string();
    }
    d.notes.push(
        "nvcc copies a `__device__` lambda in device code without its captures' copy constructors (with its \
         warning #20011-D, \"calling a __host__ function from a __host__ __device__ function is not allowed\"); \
         Clang's copy of the lambda calls each capture's, and a capture's here is `__host__` only"
            .to_string(),
    );
    d.notes.push(
        "capture only what the lambda uses on the device (a pointer or a field copied into a local before \
         the lambda), or make the captured type's copy constructor `__host__ __device__` (or leave it implicit): \
         then nvcc and cdpc both compile it"
            .to_string(),
    );
}

/// Whether `condition` (a conditional directive's text) names one of the macros CUTLASS's
/// `cutlass/arch/config.h` defines only where `CUTLASS_CLANG_CUDA` is not set: those of SM100
/// and later, `CUTLASS_ARCH_MMA_SM1xx...`.
fn names_cutlass_sm100_macro(condition: &str) -> bool {
    condition.match_indices("CUTLASS_ARCH_MMA_SM1").any(|(at, m)| {
        let rest = &condition[at + m.len()..];
        rest.len() >= 2 && rest.as_bytes()[..2].iter().all(u8::is_ascii_digit)
    })
}

/// The first place in `text` where the word `name` stands inside a conditional group whose
/// condition names a CUTLASS SM100+ macro ([`names_cutlass_sm100_macro`]), and that condition.
fn under_cutlass_sm100_condition(text: &str, name: &str) -> Option<(Span, String)> {
    // The conditions of the open groups; `None` for an `#else` branch.
    let mut open: Vec<Option<String>> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let trimmed = line.trim_start();
        if let Some(directive) = trimmed.strip_prefix('#').map(str::trim_start) {
            let word: String = directive.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
            let rest = directive[word.len()..].trim().to_string();
            match word.as_str() {
                "if" | "ifdef" | "ifndef" => open.push(Some(rest)),
                "elif" | "elifdef" | "elifndef" => {
                    if let Some(top) = open.last_mut() {
                        *top = Some(rest);
                    }
                }
                "else" => {
                    if let Some(top) = open.last_mut() {
                        *top = None;
                    }
                }
                "endif" => {
                    open.pop();
                }
                _ => {}
            }
            continue;
        }
        let Some(condition) = open.iter().flatten().find(|c| names_cutlass_sm100_macro(c)) else { continue };
        let found = line.match_indices(name).find(|(i, _)| {
            let before = line[..*i].chars().next_back();
            let after = line[i + name.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        if let Some((i, _)) = found {
            return Some((Span::new(start + i, start + i + name.len()), condition.clone()));
        }
    }
    None
}

/// How Clang's warning of a `#pragma message` ends: its flag (`R1034`).
const PRAGMA_MESSAGE_FLAG: &str = " [-W#pragma-messages]";

/// The name of Clang's "use of undeclared identifier 'X'" or "unknown type name 'X'".
fn undeclared_name(message: &str) -> Option<&str> {
    ["use of undeclared identifier '", "unknown type name '"].iter().find_map(|p| message.strip_prefix(p)).and_then(|rest| rest.strip_suffix('\''))
}

/// `E1033`: a name the same file declares only under a CUTLASS SM100+ macro, used outside it.
fn cutlass_clang_cuda(d: &mut Diagnostic, name: &str, file: Option<Arc<SourceFile>>, declared: Span, condition: &str) {
    d.code = Code::CutlassClangCuda;
    d.labels.push(Label { span: declared, message: format!("declared only under `#if {condition}`"), primary: false, file });
    d.notes.push(format!(
        "CUTLASS's `cutlass/arch/config.h` defines its macros of SM100 and later (CUDA 12.8 on) only where \
         `CUTLASS_CLANG_CUDA` is not set, and `cutlass/platform/platform.h` sets it wherever `__clang__` and \
         `__CUDA__` are defined: under nvcc, whose passes define neither, the condition holds and `{name}` is \
         declared; cdpc's CUDA C++ front end is Clang, for which CUTLASS leaves those architectures out, as for any \
         Clang"
    ));
    d.notes.push(format!("use `{name}` only under the same condition (`#if {condition}`), so that the file compiles wherever CUTLASS leaves those architectures out"));
}

fn convert<'a>(lines: impl Iterator<Item = Line<'a>>, main: &Path, main_text: &str) -> Vec<Diagnostic> {
    let main_canon = main.canonicalize().unwrap_or_else(|_| main.to_path_buf());
    let mut files: HashMap<PathBuf, Option<Arc<SourceFile>>> = HashMap::new();
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in lines {
        // Where, as a label: in the main file (no file) or another one (its text attached).
        let label = line.place.and_then(|(file, row, col)| {
            let path = Path::new(file);
            let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            if canon == main_canon {
                return Some(Label { span: span_at(main_text, row, col), message: String::new(), primary: true, file: None });
            }
            let source = files.entry(canon).or_insert_with(|| std::fs::read_to_string(path).ok().map(|text| Arc::new(SourceFile { name: file.to_string(), text }))).clone()?;
            Some(Label { span: span_at(&source.text, row, col), message: String::new(), primary: true, file: Some(source) })
        });
        let where_text = line.place.map(|(file, row, col)| format!("{file}:{row}:{col}"));
        if line.kind == "note" {
            let Some(last) = out.last_mut() else { continue };
            // cdpc's own diagnostic says all there is: Clang's candidates and declarations in
            // CUDA's header are not the user's concern.
            if matches!(last.code, Code::DeviceSynchronizeRemoved | Code::BracedAssignmentAmbiguous) {
                continue;
            }
            if last.code == Code::ClangError && line.message.starts_with(LAMBDA_COPY_FROM_DEVICE) && device_lambda(&last.message, &main_canon, main_text) {
                lambda_copy_host_capture(last);
            }
            if last.code == Code::ClangError && last.message == NO_MATCHING_DEVICE_SYNCHRONIZE && line.message.starts_with(HOST_CANDIDATE_FROM_DEVICE) {
                *last = device_synchronize_removed(std::mem::replace(last, Diagnostic::new(Code::ClangError, Span::new(0, 0), String::new())), main_text);
                continue;
            }
            // cdpc's own checks of a call (`diagnose_if` in additions.h, nvcc's messages about
            // `__nv_atomic_*`) say all there is; the attribute's place is cdpc's header.
            if line.message.starts_with("from 'diagnose_if' attribute on") && line.place.is_some_and(|(file, _, _)| super::is_additions_header(Path::new(file))) {
                continue;
            }
            match label {
                Some(mut l) => {
                    l.primary = false;
                    l.message = line.message.to_string();
                    last.labels.push(l);
                }
                None => last.notes.push(line.message.to_string()),
            }
            continue;
        }
        // `#pragma message ("text")`: nvcc says it as `remark #20200-D: #pragma message: "text"`,
        // which `-Werror` leaves alone; Clang warns (`-W#pragma-messages`).
        if let Some(text) = (line.kind == "warning").then(|| line.message.strip_suffix(PRAGMA_MESSAGE_FLAG)).flatten() {
            let mut d = Diagnostic::new(Code::PragmaMessage, Span::new(0, 0), crate::diag::words::pragma_message(text.trim_end()));
            d.severity = Severity::Remark;
            d.labels = label.into_iter().collect();
            out.push(d);
            continue;
        }
        let (code, severity) = match line.kind {
            "warning" if line.message.starts_with(super::shared_storage::LEFT_OUT) => (Code::SharedConstructionLeftOut, Severity::Warning),
            "warning" => (Code::ClangWarning, Severity::Warning),
            "remark" => (Code::ClangWarning, Severity::Remark),
            _ => (Code::ClangError, Severity::Error),
        };
        let mut d = Diagnostic::new(code, Span::new(0, 0), line.message.to_string());
        d.severity = severity;
        if let Some(help) = help_for(line.message) {
            d = d.with_note(help);
        }
        match label {
            Some(l) => d.labels = vec![l],
            // The driver's own messages, and places in files that could not be read: at the
            // start of the main file.
            None => {
                if let Some(w) = where_text {
                    d = d.with_note(format!("at {w}"));
                }
            }
        }
        if severity == Severity::Error && is_device_synchronize_reference(line.message) {
            d = device_synchronize_removed(d, main_text);
        }
        if severity == Severity::Error {
            if let Some(ty) = braced_assignment_type(line.message) {
                d = braced_assignment(d, ty);
            }
        }
        if let (Severity::Error, Some(name)) = (severity, undeclared_name(line.message)) {
            let file = d.labels.iter().find(|l| l.primary).map(|l| l.file.clone());
            if let Some(file) = file {
                let text = file.as_ref().map_or(main_text, |f| f.text.as_str());
                if let Some((declared, condition)) = under_cutlass_sm100_condition(text, name) {
                    cutlass_clang_cuda(&mut d, name, file, declared, &condition);
                }
            }
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_places_and_without() {
        let l = parse_line("/a/b:c.cu:12:7: error: use of undeclared identifier 'x'").unwrap();
        assert_eq!(l.place, Some(("/a/b:c.cu", 12, 7)));
        assert_eq!((l.kind, l.message), ("error", "use of undeclared identifier 'x'"));
        let l = parse_line("clang++-22: error: cannot find CUDA installation").unwrap();
        assert_eq!(l.place, None);
        assert_eq!(parse_line("1 error generated."), None);
        assert_eq!(parse_line("In file included from /x.cu:1:"), None);
        let l = parse_line("/x.cu:3:1: fatal error: 'nope.h' file not found").unwrap();
        assert_eq!(l.kind, "fatal error");
    }

    #[test]
    fn spans_cover_the_word_at_the_column() {
        let text = "int a;\n  foo(bar);\n";
        assert_eq!(span_at(text, 2, 3).range(), 9..12);
        assert_eq!(span_at(text, 2, 6).range(), 12..13); // `(`
        assert_eq!(span_at(text, 9, 1).range(), text.len()..text.len());
        assert_eq!(span_at(text, 1, 99).range(), 6..6); // past the line's end: an empty span there
    }

    /// The `managed` attribute spelled out, which Clang 22 ignores in CUDA, gets a note that says
    /// so and what to write; a `__shared__` variable of a type with a constructor that does
    /// something, which nvcc takes, gets the workaround.
    #[test]
    fn clangs_cuda_gaps_say_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let (path, text) = (dir.path().join("m.cu"), "__attribute__((managed)) int mv;\n");
        std::fs::write(&path, text).unwrap();
        let m = path.display();
        let d = parse(&format!("{m}:1:1: warning: 'managed' attribute ignored [-Wignored-attributes]\n"), &path, text);
        assert_eq!(d.len(), 1);
        assert!(d[0].notes.iter().any(|n| n.contains("write `__managed__`")), "{d:?}");
        let d = parse(&format!("{m}:1:1: error: initialization is not supported for __shared__ variables\n"), &path, text);
        assert!(d[0].notes.iter().any(|n| n.contains("reinterpret_cast")), "{d:?}");
        // Another warning gets no such note.
        let d = parse(&format!("{m}:1:1: warning: 'noinline' attribute ignored\n"), &path, text);
        assert!(d[0].notes.is_empty(), "{d:?}");
    }

    #[test]
    fn notes_join_the_message_before_them() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("k.cu");
        let text = "void f();\nvoid g() { f(1); }\n";
        std::fs::write(&main, text).unwrap();
        let m = main.display();
        let stderr = format!("{m}:2:12: error: no matching function for call to 'f'\n{m}:1:6: note: candidate function not viable\n1 error generated.\n");
        let d = parse(&stderr, &main, text);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::ClangError);
        assert_eq!(&text[d[0].labels[0].span.range()], "f");
        assert_eq!(d[0].labels[1].message, "candidate function not viable");
        assert_eq!(&text[d[0].labels[1].span.range()], "f");
        assert!(!d[0].labels[1].primary);
    }

    #[test]
    fn messages_as_data_become_the_same_diagnostics_as_printed_ones() {
        use crate::front::cuda::in_process::{Level, Message};
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("k.cu");
        let text = "void f();\nvoid g() { f(1); }\n";
        std::fs::write(&main, text).unwrap();
        let m = main.display().to_string();
        let messages = [
            Message { level: Level::Error, place: Some((m.clone(), 2, 12)), text: "no matching function for call to 'f'".into() },
            Message { level: Level::Note, place: Some((m.clone(), 1, 6)), text: "candidate function not viable".into() },
            Message { level: Level::Fatal, place: None, text: "cannot find CUDA installation".into() },
        ];
        let printed = format!("{m}:2:12: error: no matching function for call to 'f'\n{m}:1:6: note: candidate function not viable\nclang++-22: fatal error: cannot find CUDA installation\n");
        let from_data = from_messages(&messages, &main, text);
        assert_eq!(from_data, parse(&printed, &main, text));
        assert_eq!(from_data.len(), 2);
        assert_eq!(&text[from_data[0].labels[0].span.range()], "f");
        assert_eq!(from_data[1].code, Code::ClangError);
        assert_eq!(from_data[1].message, "cannot find CUDA installation");
    }

    /// `cudaDeviceSynchronize` in device code is the kernel language's `E0308`, in its words, at
    /// the call (Clang's candidate in CUDA's header left out); a call Clang refuses for another
    /// reason, or in host code, stays Clang's.
    #[test]
    fn device_side_device_synchronize_is_e0308() {
        let dir = tempfile::tempdir().unwrap();
        let (main, header) = (dir.path().join("k.cu"), dir.path().join("cuda_runtime_api.h"));
        let text = "__global__ void k() {\n    cudaDeviceSynchronize();\n    auto f = &cudaDeviceSynchronize;\n}\nvoid h() { cudaDeviceSynchronize(1); }\n";
        std::fs::write(&main, text).unwrap();
        std::fs::write(&header, "extern __host__ cudaError_t cudaDeviceSynchronize(void);\n").unwrap();
        let (m, hd) = (main.display(), header.display());
        let stderr = format!(
            "{m}:2:5: error: no matching function for call to 'cudaDeviceSynchronize'\n\
             {hd}:1:29: note: candidate function not viable: call to __host__ function from __global__ function\n\
             {m}:3:15: error: reference to __host__ function 'cudaDeviceSynchronize' in __global__ function\n\
             {hd}:1:29: note: 'cudaDeviceSynchronize' declared here\n\
             {m}:5:12: error: no matching function for call to 'cudaDeviceSynchronize'\n\
             {hd}:1:29: note: candidate function not viable: requires 0 arguments, but 1 was provided\n"
        );
        let d = parse(&stderr, &main, text);
        assert_eq!(d.iter().map(|d| d.code).collect::<Vec<_>>(), [Code::DeviceSynchronizeRemoved, Code::DeviceSynchronizeRemoved, Code::ClangError]);
        assert_eq!(d[0].message, crate::diag::words::DEVICE_SYNCHRONIZE);
        assert_eq!(d[0].labels.len(), 1, "{:?}", d[0].labels);
        assert_eq!(&text[d[0].labels[0].span.range()], "cudaDeviceSynchronize()");
        assert_eq!(d[0].labels[0].message, crate::diag::words::DEVICE_SYNCHRONIZE_LABEL);
        assert_eq!(d[0].notes, [crate::diag::words::DEVICE_SYNCHRONIZE_NOTE]);
        assert_eq!((&text[d[1].labels[0].span.range()], d[1].labels.len()), ("cudaDeviceSynchronize", 1));
        assert_eq!(d[2].labels.len(), 2);
    }

    /// Clang's refusals of what nvcc's front end takes, recognised: a braced list assigned to
    /// `__half2` (not to `__half`, which nvcc refuses too), a `__device__` lambda whose copy in
    /// device code needs a capture's host-only copy constructor, and a name declared only under
    /// a CUTLASS SM100+ macro (not under another macro, nor in an `#else`).
    #[test]
    fn refusals_of_what_nvcc_takes_get_their_codes() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("k.cu");
        let text =
            "#if defined(CUTLASS_ARCH_MMA_SM120_SUPPORTED)\nusing Shape = int;\n#else\nusing Other = int;\n#endif\n#ifdef MINE\nusing Mine = int;\n#endif\nShape a; Other b; Mine c;\n  x = {};\nauto f = [=] __device__(int i) { return i; }, g = [=](int i) { return i; };\n";
        std::fs::write(&main, text).unwrap();
        let m = main.display();
        let stderr = format!(
            "{m}:10:5: error: use of overloaded operator '=' is ambiguous (with operand types 'half2' (aka '__half2') and 'void')\n\
             {m}:1:1: note: candidate function\n\
             {m}:10:5: error: use of overloaded operator '=' is ambiguous (with operand types '__half' and 'void')\n\
             {m}:10:5: error: use of overloaded operator '=' is ambiguous (with operand types '__nv_bfloat162' and 'void')\n\
             {m}:10:3: error: no matching constructor for initialization of '(lambda at {m}:11:10)'\n\
             {m}:11:10: note: candidate constructor (the implicit copy constructor) not viable: call to __host__ function from __device__ function\n\
             {m}:10:3: error: no matching constructor for initialization of '(lambda at {m}:11:51)'\n\
             {m}:11:51: note: candidate constructor (the implicit copy constructor) not viable: call to __host__ function from __device__ function\n\
             {m}:9:1: error: unknown type name 'Shape'\n\
             {m}:9:10: error: unknown type name 'Other'\n\
             {m}:9:19: error: unknown type name 'Mine'\n"
        );
        let d = parse(&stderr, &main, text);
        use Code::*;
        assert_eq!(
            d.iter().map(|d| d.code).collect::<Vec<_>>(),
            [BracedAssignmentAmbiguous, ClangError, BracedAssignmentAmbiguous, LambdaCopyHostCapture, ClangError, CutlassClangCuda, ClangError, ClangError]
        );
        assert_eq!(d[0].labels.len(), 1, "{:?}", d[0].labels);
        assert!(d[0].notes.iter().any(|n| n.contains("`x = __half2{};`")), "{:?}", d[0].notes);
        assert!(d[2].notes.iter().any(|n| n.contains("__nv_bfloat162_raw")), "{:?}", d[2].notes);
        assert!(d[3].notes.iter().any(|n| n.contains("#20011-D")) && d[3].labels.len() == 2, "{:?}", d[3]);
        let declared = d[5].labels.iter().find(|l| !l.primary).unwrap();
        assert_eq!((&text[declared.span.range()], declared.message.as_str()), ("Shape", "declared only under `#if defined(CUTLASS_ARCH_MMA_SM120_SUPPORTED)`"));
    }

    #[test]
    fn a_message_in_a_header_carries_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("k.cu");
        let header = dir.path().join("h.cuh");
        std::fs::write(&main, "#include \"h.cuh\"\n").unwrap();
        std::fs::write(&header, "int x = y;\n").unwrap();
        let stderr = format!("{}:1:9: warning: something odd [-Wodd]\n", header.display());
        let d = parse(&stderr, &main, "#include \"h.cuh\"\n");
        assert_eq!(d[0].code, Code::ClangWarning);
        assert_eq!(d[0].severity, Severity::Warning);
        let file = d[0].labels[0].file.as_ref().unwrap();
        assert_eq!(&file.text[d[0].labels[0].span.range()], "y");
        assert_eq!(d[0].message, "something odd [-Wodd]");
    }

    #[test]
    fn cdpcs_own_checks_drop_the_attributes_place_in_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("k.cu");
        let text = "void f() { g(1); }\n";
        let additions = dir.path().join("cdpc-0.1.0-additions.h");
        let other = dir.path().join("mine.h");
        std::fs::write(&additions, "void g(int) __attribute__((diagnose_if(1, \"no\", \"error\")));\n").unwrap();
        std::fs::write(&other, "void g(int) __attribute__((diagnose_if(1, \"no\", \"error\")));\n").unwrap();
        let m = main.display();
        for (header, kept) in [(&additions, 0), (&other, 1)] {
            let stderr = format!("{m}:1:12: error: no\n{}:1:28: note: from 'diagnose_if' attribute on 'g':\n", header.display());
            let d = parse(&stderr, &main, text);
            assert_eq!(d.len(), 1);
            assert_eq!(d[0].labels.len(), 1 + kept, "{}: {:?}", header.display(), d[0].labels);
        }
    }
}
