//! Turning diagnostics into text: for people with codespan-reporting ([`human`]), for machines
//! as JSON lines ([`json`]). The only module that formats diagnostics: every phase reports
//! plain [`Diagnostic`] data.

use crate::diag::{Diagnostic, Label, Severity, SourceFile};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor};

/// Whether rendered text carries ANSI colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// Plain text, for files, pipes and snapshots.
    Never,
    /// ANSI escape codes, for terminals.
    Always,
}

/// Renders `diagnostics` against `source` (named `file_name`) the way rustc does: the code,
/// the message, the source lines with labels underneath, then the notes. Labels in other files
/// (headers, macro definitions: [`Label::file`](crate::diag::Label::file)) are shown in those
/// files, with their own names.
pub fn human(diagnostics: &[Diagnostic], file_name: &str, source: &str, color: Color) -> String {
    // What the input holds that a terminal would act on is shown, never sent (module docs of
    // `visible`): the diagnostics and sources are escaped first where they hold any.
    let escaped = visible::diagnostics(diagnostics, file_name, source);
    let (diagnostics, file_name, source) = match &escaped {
        Some((d, name, text)) => (d.as_slice(), name.as_str(), text.as_str()),
        None => (diagnostics, file_name, source),
    };
    let bytes = match color {
        Color::Never => {
            let mut writer = termcolor::NoColor::new(Vec::new());
            emit_all(&mut writer, diagnostics, file_name, source);
            writer.into_inner()
        }
        Color::Always => {
            let mut writer = termcolor::Ansi::new(Vec::new());
            emit_all(&mut writer, diagnostics, file_name, source);
            writer.into_inner()
        }
    };
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Control characters from the input, shown as rustc shows them: a terminal must never receive
/// the escape sequences a source (or a binary file read as one) holds. C0 controls but tab,
/// newline become their Unicode control pictures (ESC is `␛`; a carriage return too where no
/// newline follows it), DEL `␡`, C1 controls `�`; the labels' byte offsets move with the text, so that carets stay under the
/// characters they point at.
mod visible {
    use crate::diag::{Diagnostic, SourceFile};
    use std::sync::Arc;

    /// What `c` is shown as, if it is not shown as itself.
    pub(super) fn picture(c: char) -> Option<char> {
        match c {
            '\t' | '\n' | '\r' => None,
            '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32),
            '\u{7f}' => Some('\u{2421}'),
            '\u{80}'..='\u{9f}' => Some('\u{fffd}'),
            _ => None,
        }
    }

    /// Each character of `text` with its byte offset and what it is shown as, if not itself: a
    /// carriage return too where no newline follows it (it would return the cursor).
    fn shown(text: &str) -> impl Iterator<Item = (usize, char, Option<char>)> + '_ {
        let mut chars = text.char_indices().peekable();
        std::iter::from_fn(move || {
            let (i, c) = chars.next()?;
            let lone_return = c == '\r' && chars.peek().is_none_or(|(_, n)| *n != '\n');
            Some((i, c, if lone_return { Some('\u{240d}') } else { picture(c) }))
        })
    }

    fn has_control(text: &str) -> bool {
        shown(text).any(|(_, _, p)| p.is_some())
    }

    /// `text` with its control characters shown.
    pub(super) fn escape(text: &str) -> String {
        shown(text).map(|(_, c, p)| p.unwrap_or(c)).collect()
    }

    /// Where byte `offset` of `text` is in [`escape`]`(text)`.
    fn moved(text: &str, offset: usize) -> usize {
        let extra: usize = shown(text).take_while(|(i, _, _)| *i < offset).filter_map(|(_, c, p)| p.map(|p| p.len_utf8() - c.len_utf8())).sum();
        offset + extra
    }

    /// The diagnostics, the main file's name and its text with every control character shown
    /// and the labels moved with them; `None` where there is none to show.
    pub(super) fn diagnostics(diagnostics: &[Diagnostic], file_name: &str, source: &str) -> Option<(Vec<Diagnostic>, String, String)> {
        let strings = |d: &Diagnostic| std::iter::once(&d.message).chain(d.notes.iter()).chain(d.labels.iter().map(|l| &l.message)).any(|t| has_control(t));
        let files = |d: &Diagnostic| d.labels.iter().filter_map(|l| l.file.as_deref()).any(|f| has_control(&f.text) || has_control(&f.name));
        if !has_control(source) && !has_control(file_name) && !diagnostics.iter().any(|d| strings(d) || files(d)) {
            return None;
        }
        let mut escaped_files: Vec<(Arc<SourceFile>, Arc<SourceFile>)> = Vec::new();
        let out = diagnostics
            .iter()
            .map(|d| {
                let mut d = d.clone();
                d.message = escape(&d.message);
                d.notes = d.notes.iter().map(|n| escape(n)).collect();
                for l in &mut d.labels {
                    l.message = escape(&l.message);
                    let text = l.file.as_deref().map_or(source, |f| f.text.as_str());
                    let (start, end) = (moved(text, l.span.start as usize), moved(text, l.span.end as usize));
                    l.span.start = start as _;
                    l.span.end = end as _;
                    if let Some(file) = l.file.take() {
                        let shown = match escaped_files.iter().find(|(from, _)| Arc::ptr_eq(from, &file) || **from == *file) {
                            Some((_, to)) => to.clone(),
                            None => {
                                let to = Arc::new(SourceFile { name: escape(&file.name), text: escape(&file.text) });
                                escaped_files.push((file, to.clone()));
                                to
                            }
                        };
                        l.file = Some(shown);
                    }
                }
                d
            })
            .collect();
        Some((out, escape(file_name), escape(source)))
    }
}

/// Source lines longer than this are not shown under a diagnostic: codespan prints (and
/// measures) whole lines, so 200 diagnostics on a 10 MB line would print 2 GB.
pub const MAX_SHOWN_LINE_BYTES: usize = 1024;

/// The files the labels of some diagnostics point into: the main file first (id 0), then each
/// other file once.
struct Sources<'a> {
    files: SimpleFiles<&'a str, &'a str>,
    lines: Vec<LineIndex<'a>>,
    names: Vec<&'a str>,
    others: Vec<&'a SourceFile>,
}

impl<'a> Sources<'a> {
    fn new(diagnostics: &'a [Diagnostic], file_name: &'a str, source: &'a str) -> Sources<'a> {
        let mut sources = Sources { files: SimpleFiles::new(), lines: Vec::new(), names: Vec::new(), others: Vec::new() };
        sources.add(file_name, source);
        for label in diagnostics.iter().flat_map(|d| &d.labels) {
            if let Some(file) = label.file.as_deref() {
                if !sources.others.iter().any(|f| std::ptr::eq(*f, file) || *f == file) {
                    sources.others.push(file);
                    sources.add(&file.name, &file.text);
                }
            }
        }
        sources
    }

    fn add(&mut self, name: &'a str, text: &'a str) {
        self.files.add(name, text);
        self.lines.push(LineIndex::new(text));
        self.names.push(name);
    }

    /// The id of the file a label is in.
    fn id(&self, label: &Label) -> usize {
        match label.file.as_deref() {
            None => 0,
            Some(file) => self.others.iter().position(|f| std::ptr::eq(*f, file) || *f == file).map_or(0, |i| i + 1),
        }
    }
}

fn emit_all(writer: &mut dyn termcolor::WriteColor, diagnostics: &[Diagnostic], file_name: &str, source: &str) {
    let sources = Sources::new(diagnostics, file_name, source);
    let config = term::Config::default();
    for d in diagnostics {
        let mut shown = to_codespan(d, &sources);
        let long = d.labels.iter().filter_map(|l| sources.lines[sources.id(l)].longest_line_of(l)).max();
        if let Some(long) = long {
            // Labels become notes with their positions; the line itself is left out.
            let mut notes: Vec<String> = d
                .labels
                .iter()
                .map(|l| {
                    let id = sources.id(l);
                    let lines = &sources.lines[id];
                    let (line, column) = lines.position(lines.clamp(l.span.start as usize));
                    let text = if l.message.is_empty() { "here" } else { l.message.as_str() };
                    format!("{}:{line}:{column}: {text}", sources.names[id])
                })
                .collect();
            notes.push(format!("(the source line is {long} bytes long and is not shown)"));
            notes.extend(shown.notes);
            shown = cs::Diagnostic::new(shown.severity).with_code(d.code.as_str()).with_message(d.message.clone()).with_notes(notes);
        }
        if term::emit(writer, &config, &sources.files, &shown).is_err() {
            // Only a span outside the file could fail; print the message rather than nothing.
            let _ = writeln!(writer, "{}[{}]: {}", severity_word(d.severity), d.code, d.message);
        }
    }
}

fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Remark => "remark",
    }
}

fn to_codespan(d: &Diagnostic, sources: &Sources) -> cs::Diagnostic<usize> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        // codespan has no remark: rendered as `note[R0500]`, like clang's remarks next to notes
        Severity::Remark => cs::Severity::Note,
    };
    let labels = d
        .labels
        .iter()
        .map(|l| {
            let style = if l.primary { cs::LabelStyle::Primary } else { cs::LabelStyle::Secondary };
            let id = sources.id(l);
            let lines = &sources.lines[id];
            let start = lines.clamp(l.span.start as usize);
            let end = lines.clamp(l.span.end as usize).max(start);
            cs::Label::new(style, id, start..end).with_message(l.message.clone())
        })
        .collect();
    cs::Diagnostic::new(severity).with_code(d.code.as_str()).with_message(d.message.clone()).with_labels(labels).with_notes(d.notes.iter().map(|n| format!("note: {n}")).collect())
}

/// One diagnostic as a JSON object (see [`json`]).
#[derive(serde::Serialize)]
struct JsonDiagnostic<'a> {
    /// `None` (JSON `null`) for failures that are not diagnostics of the source.
    code: Option<&'static str>,
    severity: &'static str,
    message: &'a str,
    file: &'a str,
    labels: Vec<JsonLabel<'a>>,
    notes: &'a [String],
}

#[derive(serde::Serialize)]
struct JsonLabel<'a> {
    /// The file the label is in: the main file, or a header.
    file: &'a str,
    /// Byte offsets into the file, end exclusive.
    byte_start: usize,
    byte_end: usize,
    /// 1-based; columns count characters (Unicode scalar values), not bytes.
    line_start: usize,
    column_start: usize,
    line_end: usize,
    column_end: usize,
    message: &'a str,
    primary: bool,
}

/// Renders `diagnostics` as JSON lines: one object per diagnostic, each on its own line, with
/// `code`, `severity` (`"error"`, `"warning"` or `"remark"`), `message`, `file` (the main
/// file), `labels` (each with its `file`, byte offsets, 1-based line and column of both ends,
/// message, `primary`) and `notes`.
pub fn json(diagnostics: &[Diagnostic], file_name: &str, source: &str) -> String {
    let sources = Sources::new(diagnostics, file_name, source);
    let mut out = String::new();
    for d in diagnostics {
        let labels = d
            .labels
            .iter()
            .map(|l| {
                let id = sources.id(l);
                let lines = &sources.lines[id];
                let start = lines.clamp(l.span.start as usize);
                let end = lines.clamp(l.span.end as usize).max(start);
                let (line_start, column_start) = lines.position(start);
                let (line_end, column_end) = lines.position(end);
                JsonLabel { file: sources.names[id], byte_start: start, byte_end: end, line_start, column_start, line_end, column_end, message: &l.message, primary: l.primary }
            })
            .collect();
        let object = JsonDiagnostic { code: Some(d.code.as_str()), severity: severity_word(d.severity), message: &d.message, file: file_name, labels, notes: &d.notes };
        out.push_str(&serde_json::to_string(&object).expect("diagnostics serialise"));
        out.push('\n');
    }
    out
}

/// A failure that is no diagnostic of the source (a tool failed, a file cannot be read) as one
/// JSON line in the same shape: `code` is `null` and there are no labels.
pub fn json_failure(file_name: &str, message: &str) -> String {
    json_message(Severity::Error, file_name, message)
}

/// Like [`json_failure`] for a failure with a stable code (`E0700`: the output is the input),
/// which the line carries in `code`.
pub fn json_failure_with_code(code: Option<crate::Code>, file_name: &str, message: &str) -> String {
    json_line(code, Severity::Error, file_name, message)
}

/// A message that is no diagnostic of the source (a failure, or what ptxas printed while
/// succeeding, as a warning) as one JSON line with a `null` code and no labels.
pub fn json_message(severity: Severity, file_name: &str, message: &str) -> String {
    json_line(None, severity, file_name, message)
}

/// Like [`json_message`] for a warning with a stable code (`W0709`).
pub fn json_warning_with_code(code: crate::Code, file_name: &str, message: &str) -> String {
    json_line(Some(code), Severity::Warning, file_name, message)
}

fn json_line(code: Option<crate::Code>, severity: Severity, file_name: &str, message: &str) -> String {
    let object = JsonDiagnostic { code: code.map(crate::Code::as_str), severity: severity_word(severity), message, file: file_name, labels: Vec::new(), notes: &[] };
    format!("{}\n", serde_json::to_string(&object).expect("diagnostics serialise"))
}

/// Byte offsets to 1-based lines and columns.
struct LineIndex<'a> {
    source: &'a str,
    starts: Vec<usize>,
    /// The last offset asked for and its column.
    cursor: std::cell::Cell<(usize, usize)>,
}

impl<'a> LineIndex<'a> {
    fn new(source: &'a str) -> LineIndex<'a> {
        let starts = std::iter::once(0).chain(source.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { source, starts, cursor: std::cell::Cell::new((0, 1)) }
    }

    /// The offset moved into the source and back to the start of the character it is in.
    fn clamp(&self, offset: usize) -> usize {
        let mut at = offset.min(self.source.len());
        while !self.source.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    /// The length of the longest source line label `l` touches, if over
    /// [`MAX_SHOWN_LINE_BYTES`].
    fn longest_line_of(&self, l: &Label) -> Option<usize> {
        let line_of = |offset: usize| self.starts.partition_point(|&s| s <= self.clamp(offset)) - 1;
        let mut longest = 0;
        for line in line_of(l.span.start as usize)..=line_of(l.span.end as usize) {
            let start = self.starts[line];
            let end = self.starts.get(line + 1).copied().unwrap_or(self.source.len());
            longest = longest.max(end - start);
        }
        (longest > MAX_SHOWN_LINE_BYTES).then_some(longest)
    }

    /// 1-based line and column (in characters) of a clamped offset. Counting resumes from the
    /// previous query when it was earlier on the same line, so positions asked in source order
    /// cost one pass over a long line rather than one pass each.
    fn position(&self, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let (from, column) = match self.cursor.get() {
            (at, column) if at >= self.starts[line] && at <= offset => (at, column),
            _ => (self.starts[line], 1),
        };
        let column = column + self.source[from..offset].chars().count();
        self.cursor.set((offset, column));
        (line + 1, column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Span};

    #[test]
    fn json_positions_are_one_based_and_count_characters() {
        let source = "ab\né x\n";
        let d = Diagnostic::new(Code::UnknownName, Span::new(6, 7), "cannot find `x`").with_primary_message("here").with_label(Span::new(0, 100), "clamped").with_note("a note");
        let line = json(&[d], "a.cdp", source);
        let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v["code"], "E0100");
        assert_eq!(v["severity"], "error");
        assert_eq!(v["file"], "a.cdp");
        assert_eq!(v["notes"][0], "a note");
        let l = &v["labels"][0];
        assert_eq!((l["line_start"].as_u64(), l["column_start"].as_u64()), (Some(2), Some(3)));
        assert_eq!((l["line_end"].as_u64(), l["column_end"].as_u64()), (Some(2), Some(4)));
        assert_eq!(l["primary"], true);
        let l = &v["labels"][1];
        assert_eq!((l["byte_start"].as_u64(), l["byte_end"].as_u64()), (Some(0), Some(8)));
        assert_eq!((l["line_end"].as_u64(), l["column_end"].as_u64()), (Some(3), Some(1)));
        assert_eq!(l["primary"], false);
    }

    #[test]
    fn labels_in_other_files_are_shown_in_those_files() {
        let header = std::sync::Arc::new(SourceFile { name: "inc/k.h".into(), text: "#define BAD x\n".into() });
        let mut d = Diagnostic::new(Code::UnknownName, Span::new(4, 7), "cannot find `x`");
        d.labels.push(Label { span: Span::new(12, 13), message: "expanded from macro `BAD`".into(), primary: false, file: Some(header) });
        let text = human(std::slice::from_ref(&d), "a.cu", "int BAD;\n", Color::Never);
        assert!(text.contains("a.cu:1:5") && text.contains("inc/k.h:1:13") && text.contains("expanded from macro `BAD`"), "{text}");
        let v: serde_json::Value = serde_json::from_str(json(&[d], "a.cu", "int BAD;\n").trim_end()).unwrap();
        assert_eq!(v["file"], "a.cu");
        assert_eq!((v["labels"][0]["file"].as_str(), v["labels"][1]["file"].as_str()), (Some("a.cu"), Some("inc/k.h")));
        assert_eq!((v["labels"][1]["line_start"].as_u64(), v["labels"][1]["column_start"].as_u64()), (Some(1), Some(13)));
    }

    #[test]
    fn control_characters_from_the_input_are_shown_not_sent() {
        // A line holding an escape sequence (a binary file read as source, or a hostile one),
        // and a message quoting it.
        let source = "int a;\r\nint \u{1b}[2J\u{7}b\u{9b} = 1;\rx\n";
        let start = source.find('b').unwrap();
        let d = Diagnostic::new(Code::InvalidUtf8, Span::new(start, start + 1), "bad \u{1b}[31m token".to_string()).with_note("text \u{0}".to_string());
        let out = human(&[d], "x\u{1b}.cu", source, Color::Never);
        assert!(!out.chars().any(|c| c != '\n' && c != '\t' && (c == '\r' || visible::picture(c).is_some())), "{out:?}");
        assert!(out.contains("bad \u{241b}[31m token") && out.contains("int \u{241b}[2J\u{2407}b\u{fffd} = 1;\u{240d}x") && out.contains("text \u{2400}") && out.contains("x\u{241b}.cu"), "{out}");
        // The caret stays under `b`: as many columns in as `b` is characters into its line.
        let line = out.lines().find(|l| l.contains("[2J")).unwrap();
        let caret = out.lines().skip_while(|l| !l.contains("[2J")).nth(1).unwrap();
        assert_eq!(caret.chars().position(|c| c == '^'), line.chars().position(|c| c == 'b'), "{out}");
        // Without control characters nothing is copied.
        assert!(visible::diagnostics(&[], "x.cu", "int a;\n").is_none());
    }
}
