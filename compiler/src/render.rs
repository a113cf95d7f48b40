//! Turning diagnostics into text for people, with codespan-reporting. The only module that
//! knows about codespan: every phase reports plain [`Diagnostic`] data.

use crate::diag::{Diagnostic, Severity};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
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
/// the message, the source lines with labels underneath, then the notes.
pub fn human(diagnostics: &[Diagnostic], file_name: &str, source: &str, color: Color) -> String {
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

fn emit_all(writer: &mut dyn termcolor::WriteColor, diagnostics: &[Diagnostic], file_name: &str, source: &str) {
    let file = SimpleFile::new(file_name, source);
    let config = term::Config::default();
    for d in diagnostics {
        if term::emit(writer, &config, &file, &to_codespan(d, source.len())).is_err() {
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

fn to_codespan(d: &Diagnostic, source_len: usize) -> cs::Diagnostic<()> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        // codespan has no remark: rendered as `note[R0500]`, like clang's remarks next to notes
        Severity::Remark => cs::Severity::Note,
    };
    let clamp = |r: std::ops::Range<usize>| r.start.min(source_len)..r.end.min(source_len).max(r.start.min(source_len));
    let labels = d
        .labels
        .iter()
        .map(|l| {
            let style = if l.primary { cs::LabelStyle::Primary } else { cs::LabelStyle::Secondary };
            cs::Label::new(style, (), clamp(l.span.range())).with_message(l.message.clone())
        })
        .collect();
    cs::Diagnostic::new(severity)
        .with_code(d.code.as_str())
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.iter().map(|n| format!("note: {n}")).collect())
}
