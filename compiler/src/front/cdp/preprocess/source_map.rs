//! The source map: from a byte range of the preprocessed text back to the file and range it
//! came from, and, for text produced by macro expansion, the chain of expansions.
//!
//! The preprocessed text is a sequence of *segments*. A verbatim segment is a run of bytes
//! copied unchanged from one file; an expanded segment is one token written by macro
//! expansion, with the place its characters were spelled (a macro body, or an argument) and the
//! innermost [`Expansion`] it came out of. Every expansion records where its macro was invoked
//! (itself spelled in a file or in an outer macro's body) and where the macro was defined, so
//! the chain can be walked out to the invocation in the file, as clang's "expanded from macro"
//! notes do.
//!
//! Sema's diagnostics carry spans in preprocessed coordinates; [`SourceMap::remap`] turns each
//! label into a span of the file it lies in (a [`SourceFile`] for every file but the main one),
//! puts a label on each step of the expansion chain, and adds an "in file included from" note
//! for each `#include` above the file. A source without directives and macros maps to itself.

use crate::diag::{Diagnostic, Label, SourceFile, Span};
use std::sync::{Arc, OnceLock};

/// An index into [`SourceMap::files`]; 0 is the main file.
pub type FileId = u32;

/// A byte range in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    /// Which file.
    pub file: FileId,
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Loc {
    /// The range as a [`Span`].
    pub fn span(self) -> Span {
        Span { start: self.start, end: self.end }
    }

    /// The smallest range covering both, when they lie in one file; `self` otherwise.
    pub fn to(self, other: Loc) -> Loc {
        if self.file == other.file && other.end >= self.start {
            Loc { file: self.file, start: self.start, end: other.end.max(self.end) }
        } else {
            self
        }
    }
}

/// One file read during preprocessing: the main file, a header (each inclusion is its own
/// entry, sharing the text), or a pseudo-file (`<built-in>`, `<command line>`).
#[derive(Debug)]
pub struct FileEntry {
    /// Name and text.
    pub file: Arc<SourceFile>,
    /// The `#include` that read it.
    pub included_from: Option<Loc>,
    line_starts: OnceLock<Vec<u32>>,
}

impl FileEntry {
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, offset: u32) -> (usize, usize) {
        let text = &self.file.text;
        let starts = self.line_starts.get_or_init(|| std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i as u32 + 1)).collect());
        let mut offset = (offset as usize).min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = starts.partition_point(|&s| s as usize <= offset) - 1;
        let column = text[starts[line] as usize..offset].chars().count() + 1;
        (line + 1, column)
    }
}

/// One macro expansion.
#[derive(Clone, Debug)]
pub struct Expansion {
    /// The macro's name.
    pub name: String,
    /// The invocation: the macro's name up to the closing parenthesis of its arguments, where
    /// they were spelled (a file, or the body of the macro [`Expansion::parent`] expanded).
    pub call: Loc,
    /// The macro's name in its `#define`.
    pub definition: Loc,
    /// The expansion whose output contained the invocation, if any.
    pub parent: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
enum Origin {
    /// Copied unchanged from `file`, starting at `start`.
    Verbatim { file: FileId, start: u32 },
    /// A token written by expansion `expansion`, spelled at `spelling`.
    Expanded { spelling: Loc, expansion: u32 },
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    out_start: u32,
    out_end: u32,
    origin: Origin,
}

/// At most this many "expanded from macro" labels are put on one diagnostic.
const MAX_CHAIN_LABELS: usize = 8;
/// At most this many "in file included from" notes are put on one diagnostic.
const MAX_INCLUDE_NOTES: usize = 10;

/// Where the preprocessed text came from (see the module documentation).
#[derive(Debug, Default)]
pub struct SourceMap {
    /// Every file read, in the order they were opened; 0 is the main file.
    pub files: Vec<FileEntry>,
    /// Every macro expansion, in the order they happened.
    pub expansions: Vec<Expansion>,
    segments: Vec<Segment>,
}

impl SourceMap {
    /// Registers a file and returns its id.
    pub fn add_file(&mut self, file: Arc<SourceFile>, included_from: Option<Loc>) -> FileId {
        self.files.push(FileEntry { file, included_from, line_starts: OnceLock::new() });
        (self.files.len() - 1) as FileId
    }

    /// Records that output bytes `out..out + len` are file `file`'s bytes from `start`.
    pub fn push_verbatim(&mut self, out: usize, len: usize, file: FileId, start: u32) {
        if len == 0 {
            return;
        }
        if let Some(last) = self.segments.last_mut() {
            if let Origin::Verbatim { file: f, start: s } = last.origin {
                if f == file && last.out_end as usize == out && s + (last.out_end - last.out_start) == start {
                    last.out_end = (out + len) as u32;
                    return;
                }
            }
        }
        self.segments.push(Segment { out_start: out as u32, out_end: (out + len) as u32, origin: Origin::Verbatim { file, start } });
    }

    /// Records that output bytes `out..out + len` are a token spelled at `spelling` and written
    /// by `expansion` (`None`: an argument token from a file, mapped like verbatim text).
    pub fn push_token(&mut self, out: usize, len: usize, spelling: Loc, expansion: Option<u32>) {
        match expansion {
            None => self.push_verbatim(out, len, spelling.file, spelling.start),
            Some(expansion) if len > 0 => self.segments.push(Segment { out_start: out as u32, out_end: (out + len) as u32, origin: Origin::Expanded { spelling, expansion } }),
            Some(_) => {}
        }
    }

    /// Drops every segment (the prelude's output is discarded).
    pub fn clear_segments(&mut self) {
        self.segments.clear();
    }

    /// The outermost expansion of a chain: the one invoked from a file.
    pub fn outermost(&self, mut id: u32) -> &Expansion {
        let mut steps = 0;
        while let Some(parent) = self.expansions[id as usize].parent {
            id = parent;
            steps += 1;
            if steps > self.expansions.len() {
                break;
            }
        }
        &self.expansions[id as usize]
    }

    /// The segment holding output byte `pos`, or the last one before it.
    fn segment_at(&self, pos: u32) -> Option<&Segment> {
        let i = self.segments.partition_point(|s| s.out_start <= pos);
        self.segments.get(i.checked_sub(1)?)
    }

    /// Where output byte `pos` is in a file: the byte itself for verbatim text, the invocation
    /// for expanded text (its start, or its end when `end` is set).
    fn file_pos(&self, pos: u32, end: bool) -> (FileId, u32) {
        let Some(seg) = self.segment_at(pos) else { return (0, 0) };
        match seg.origin {
            Origin::Verbatim { file, start } => {
                let offset = pos.min(seg.out_end.saturating_sub(1)) - seg.out_start;
                let at = start + offset + end as u32;
                let len = self.files[file as usize].file.text.len() as u32;
                (file, at.min(len))
            }
            Origin::Expanded { expansion, .. } => {
                let call = self.outermost(expansion).call;
                (call.file, if end { call.end } else { call.start })
            }
        }
    }

    /// Where output byte `pos` is: a file and a byte offset in it (for expanded text, the
    /// outermost invocation of its macro). A map without segments is the identity on the
    /// main file.
    pub fn file_position(&self, pos: u32) -> (FileId, u32) {
        if self.segments.is_empty() {
            return (0, pos);
        }
        self.file_pos(pos, false)
    }

    /// The file range of an output span.
    pub fn map_span(&self, span: Span) -> Loc {
        let (file, start) = self.file_pos(span.start, false);
        if span.end <= span.start {
            // An empty span (a position): keep it empty in the file. A position at the end of
            // a verbatim segment maps to its last byte, which may be inside a multi-byte
            // character: move back to the character's start.
            let text = self.files.get(file as usize).map(|f| f.file.text.as_str()).unwrap_or("");
            let mut start = (start as usize).min(text.len());
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let start = start as u32;
            return Loc { file, start, end: start };
        }
        let (end_file, end) = self.file_pos(span.end - 1, true);
        if end_file == file && end >= start {
            Loc { file, start, end }
        } else {
            let (_, own_end) = match self.segment_at(span.start).map(|s| s.origin) {
                Some(Origin::Expanded { expansion, .. }) => (file, self.outermost(expansion).call.end),
                _ => (file, start),
            };
            Loc { file, start, end: own_end.max(start) }
        }
    }

    /// The "expanded from macro" steps of output byte `pos`, innermost first: where the token
    /// was spelled, then each invocation inside an outer macro's body.
    pub fn expansion_chain(&self, pos: u32) -> Vec<(Loc, String)> {
        let Some(Origin::Expanded { spelling, expansion }) = self.segment_at(pos).filter(|s| s.out_end > pos).map(|s| s.origin) else {
            return Vec::new();
        };
        let mut chain = vec![(spelling, self.expansions[expansion as usize].name.clone())];
        let mut e = &self.expansions[expansion as usize];
        while let Some(parent) = e.parent {
            let outer = &self.expansions[parent as usize];
            chain.push((e.call, outer.name.clone()));
            e = outer;
            if chain.len() > self.expansions.len() {
                break;
            }
        }
        chain
    }

    /// The `#include`s above `file`, nearest first, as clang's notes say them.
    pub fn include_notes(&self, file: FileId) -> Vec<String> {
        let mut notes = Vec::new();
        let mut at = self.files.get(file as usize).and_then(|f| f.included_from);
        while let Some(loc) = at {
            let entry = &self.files[loc.file as usize];
            let (line, column) = entry.line_column(loc.start);
            notes.push(format!("in file included from {}:{line}:{column}", entry.file.name));
            at = entry.included_from;
            if notes.len() > self.files.len() {
                break;
            }
        }
        if notes.len() > MAX_INCLUDE_NOTES {
            // The nearest includes and the main file's; the middle of a deep chain says little.
            let last = notes.pop().expect("more than the maximum");
            let hidden = notes.len() - (MAX_INCLUDE_NOTES - 2);
            notes.truncate(MAX_INCLUDE_NOTES - 2);
            notes.push(format!("... {hidden} more `#include` levels not shown"));
            notes.push(last);
        }
        notes
    }

    /// A label at a file range: the main file's labels carry no file.
    pub fn label(&self, loc: Loc, message: impl Into<String>, primary: bool) -> Label {
        let file = (loc.file != 0).then(|| self.files[loc.file as usize].file.clone());
        Label { span: loc.span(), message: message.into(), primary, file }
    }

    /// Adds to `d` (whose primary label is at `loc`) a label for each "expanded from macro" step
    /// of the output position `pos` and the "included from" notes of `loc`'s file.
    fn add_context(&self, d: &mut Diagnostic, loc: Loc, pos: Option<u32>) {
        let chain = pos.map(|p| self.expansion_chain(p)).unwrap_or_default();
        let hidden = chain.len().saturating_sub(MAX_CHAIN_LABELS);
        for (at, name) in chain.into_iter().take(MAX_CHAIN_LABELS) {
            d.labels.push(self.label(at, format!("expanded from macro `{name}`"), false));
        }
        if hidden > 0 {
            d.notes.push(format!("{hidden} more macro expansion step{} not shown", if hidden == 1 { " is" } else { "s are" }));
        }
        let includes = self.include_notes(loc.file);
        d.notes.splice(0..0, includes);
    }

    /// A diagnostic made by the preprocessor at a file range, with its include notes.
    pub fn located(&self, mut d: Diagnostic, loc: Loc) -> Diagnostic {
        if let Some(label) = d.labels.iter_mut().find(|l| l.primary) {
            *label = Label { message: std::mem::take(&mut label.message), ..self.label(loc, "", true) };
        }
        self.add_context(&mut d, loc, None);
        d
    }

    /// Turns a diagnostic with spans in preprocessed coordinates into one with spans in the
    /// files (see the module documentation).
    pub fn remap(&self, mut d: Diagnostic) -> Diagnostic {
        let identity = self.files.len() <= 1 && self.expansions.is_empty();
        if identity && self.segments.len() <= 1 {
            return d;
        }
        let primary = d.labels.iter().find(|l| l.primary).map(|l| l.span);
        for label in &mut d.labels {
            let loc = self.map_span(label.span);
            *label = Label { message: std::mem::take(&mut label.message), ..self.label(loc, "", label.primary) };
        }
        if let Some(span) = primary {
            let loc = self.map_span(span);
            self.add_context(&mut d, loc, Some(span.start));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> Arc<SourceFile> {
        Arc::new(SourceFile { name: name.into(), text: text.into() })
    }

    #[test]
    fn verbatim_runs_merge_and_map_byte_for_byte() {
        let mut map = SourceMap::default();
        map.add_file(file("a.cu", "0123456789"), None);
        map.push_verbatim(0, 4, 0, 0);
        map.push_verbatim(4, 3, 0, 4);
        assert_eq!(map.segments.len(), 1);
        map.push_verbatim(7, 3, 0, 8);
        assert_eq!(map.map_span(Span::new(2, 6)), Loc { file: 0, start: 2, end: 6 });
        assert_eq!(map.map_span(Span::new(8, 9)), Loc { file: 0, start: 9, end: 10 });
    }

    #[test]
    fn expanded_tokens_map_to_the_outermost_invocation() {
        let mut map = SourceMap::default();
        map.add_file(file("a.cu", "#define F(x) G\n#define G 1\nF(2);"), None);
        map.expansions.push(Expansion { name: "F".into(), call: Loc { file: 0, start: 27, end: 31 }, definition: Loc { file: 0, start: 8, end: 9 }, parent: None });
        map.expansions.push(Expansion { name: "G".into(), call: Loc { file: 0, start: 13, end: 14 }, definition: Loc { file: 0, start: 23, end: 24 }, parent: Some(0) });
        map.push_token(0, 1, Loc { file: 0, start: 25, end: 26 }, Some(1));
        map.push_verbatim(1, 1, 0, 31);
        assert_eq!(map.map_span(Span::new(0, 1)), Loc { file: 0, start: 27, end: 31 });
        assert_eq!(map.map_span(Span::new(0, 2)), Loc { file: 0, start: 27, end: 32 });
        let chain = map.expansion_chain(0);
        assert_eq!(chain, vec![(Loc { file: 0, start: 25, end: 26 }, "G".to_string()), (Loc { file: 0, start: 13, end: 14 }, "F".to_string())]);
    }

    #[test]
    fn include_notes_name_each_includer() {
        let mut map = SourceMap::default();
        map.add_file(file("main.cu", "x\n#include \"a.h\"\n"), None);
        let a = map.add_file(file("a.h", "#include \"b.h\"\n"), Some(Loc { file: 0, start: 2, end: 16 }));
        let b = map.add_file(file("b.h", "int x;\n"), Some(Loc { file: a, start: 0, end: 14 }));
        assert_eq!(map.include_notes(b), ["in file included from a.h:1:1", "in file included from main.cu:2:1"]);
    }
}
