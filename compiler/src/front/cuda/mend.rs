//! Constructs nvcc compiles and Clang refuses with an error that a rewrite of the source can
//! mend: where the linked Clang's only errors are such refusals, the compilation runs once more
//! over the same files with each refused declaration rewritten ([`plan`]), and Clang's errors
//! stand where a declaration cannot be read or the second run fails too.
//!
//! Each construct is a module of its own that turns Clang's places into insertions:
//! [`super::shared_storage`] (`__shared__` variables whose type constructs, which nvcc leaves
//! unconstructed) and [`super::vla_init`] (an initialised array whose size is no constant
//! expression, g++'s extension). This module holds what they share: the words of a source, the
//! places of Clang's messages, the insertions applied.
//!
//! Invariants of every rewrite: only text is inserted, never a line break, so the file only grows
//! and every line, and the columns before each insertion, stay the file's (Clang's later messages
//! and `__LINE__` are the file's own); a file with no refused declaration is not touched.

use super::in_process::{Level, Message};
use super::nvcc_text::{next_token, Replacements, Token};
use std::path::{Path, PathBuf};

/// What Clang refused at one place, and so which module rewrites it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Refusal {
    SharedStorage,
    VlaInit,
}

impl Refusal {
    fn of(message: &Message) -> Option<Refusal> {
        if message.text.starts_with(super::shared_storage::REFUSED) {
            Some(Refusal::SharedStorage)
        } else if message.text.starts_with(super::vla_init::REFUSED) {
            Some(Refusal::VlaInit)
        } else {
            None
        }
    }
}

/// What a second run needs: the files' texts with their declarations rewritten, and where
/// those declarations are (for nvcc's warnings).
pub struct Plan {
    /// For [`super::nvcc_text::replace_texts`].
    pub replacements: Replacements,
    /// Each `__shared__` declaration made storage: the file as Clang named it (`None`: the
    /// compiled file), line, column, and whether nvcc would warn.
    shared: Vec<(Option<String>, usize, usize, bool)>,
}

impl Plan {
    /// The warnings nvcc gives at the declarations rewritten (those of `__shared__` storage that
    /// nvcc's pragma does not silence; g++ says nothing of an initialised variable-length array),
    /// as Clang's messages; the compiled file is now `main`.
    pub fn warnings(&self, main: &Path) -> Vec<Message> {
        self.shared
            .iter()
            .filter(|p| p.3)
            .map(|(file, line, column, _)| Message {
                level: Level::Warning,
                place: Some((file.clone().unwrap_or_else(|| main.to_string_lossy().into_owned()), *line, *column)),
                text: format!("{}: nvcc leaves them out (its warning \"dynamic initialization is not supported\"), and so does cdpc; `init` it in code", super::shared_storage::LEFT_OUT),
            })
            .collect()
    }
}

/// The second run's [`Plan`] when Clang's only errors in `messages` are refusals this module's
/// rewrites mend, at declarations they can read; `main` is the file Clang compiled and
/// `main_text` its bytes where that file is gone (a copy in a work folder).
pub fn plan(messages: &[Message], main: &Path, main_text: &[u8]) -> Option<Plan> {
    let errors: Vec<&Message> = messages.iter().filter(|m| matches!(m.level, Level::Error | Level::Fatal)).collect();
    if errors.is_empty() || !errors.iter().all(|m| Refusal::of(m).is_some() && m.place.is_some()) {
        return None;
    }
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let main_canon = canon(main);
    // Per file: its name as Clang gave it, and Clang's places in it with what was refused.
    let mut files: Vec<(Option<String>, PathBuf, Vec<(usize, usize, Refusal)>)> = Vec::new();
    for m in errors {
        let (file, line, column) = m.place.as_ref()?;
        let refusal = Refusal::of(m)?;
        let path = Path::new(file);
        let is_main = canon(path) == main_canon || !path.exists();
        let key = if is_main { main_canon.clone() } else { canon(path) };
        match files.iter_mut().find(|f| f.1 == key) {
            Some(f) => f.2.push((*line, *column, refusal)),
            None => files.push(((!is_main).then(|| file.clone()), key, vec![(*line, *column, refusal)])),
        }
    }
    let mut replacements = Replacements::default();
    let mut shared = Vec::new();
    for (file, path, mut at) in files {
        at.sort_unstable_by_key(|&(l, c, _)| (l, c));
        at.dedup();
        let bytes = match &file {
            Some(_) => std::fs::read(&path).ok()?,
            None => std::fs::read(&path).unwrap_or_else(|_| main_text.to_vec()),
        };
        // Clang's places are in the text it read: the file after nvcc_text's rules.
        let seen = super::nvcc_text::rewrite(&bytes).unwrap_or_else(|| bytes.clone());
        let mut inserted = Vec::new();
        for refusal in [Refusal::SharedStorage, Refusal::VlaInit] {
            let places: Vec<(usize, usize)> = at.iter().filter(|p| p.2 == refusal).map(|&(l, c, _)| (l, c)).collect();
            if places.is_empty() {
                continue;
            }
            let offsets: Vec<usize> = places.iter().map(|&(l, c)| offset_of(&seen, l, c)).collect::<Option<_>>()?;
            match refusal {
                Refusal::SharedStorage => {
                    inserted.extend(super::shared_storage::insertions(&seen, &offsets)?);
                    for (&(line, column), &offset) in places.iter().zip(&offsets) {
                        shared.push((file.clone(), line, column, !super::shared_storage::warning_suppressed(&seen, offset)));
                    }
                }
                Refusal::VlaInit => inserted.extend(super::vla_init::insertions(&seen, &offsets)?),
            }
        }
        // A stable sort: insertions at one offset keep each module's order.
        inserted.sort_by_key(|(at, _)| *at);
        replacements.insert(&bytes, apply(&seen, &inserted));
    }
    Some(Plan { replacements, shared })
}

/// A word of the source as the rewrites read it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Word {
    /// An identifier or keyword, `start..end`.
    Name(usize, usize),
    /// One byte of punctuation at this position.
    Punct(usize, u8),
    /// A literal (string, character, number), `start..end`.
    Literal(usize, usize),
    /// A preprocessor directive, to its line's end, from its `#`.
    Directive(usize),
}

impl Word {
    pub(super) fn start(self) -> usize {
        match self {
            Word::Name(s, _) | Word::Punct(s, _) | Word::Literal(s, _) | Word::Directive(s) => s,
        }
    }
    pub(super) fn end(self) -> usize {
        match self {
            Word::Name(_, e) | Word::Literal(_, e) => e,
            Word::Punct(s, _) | Word::Directive(s) => s + 1,
        }
    }
    pub(super) fn is(self, text: &[u8], name: &str) -> bool {
        matches!(self, Word::Name(s, e) if &text[s..e] == name.as_bytes())
    }
}

/// Whether only blanks come before `at` on its line.
fn first_on_line(text: &[u8], at: usize) -> bool {
    text[..at].iter().rev().take_while(|&&b| b != b'\n').all(|b| b.is_ascii_whitespace())
}

/// The words of `text`, comments skipped.
pub(super) fn words(text: &[u8]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let before = at;
        let Some(token) = next_token(text, &mut at) else { break };
        match token {
            Token::Code(p) => {
                let c = text[p];
                if c.is_ascii_whitespace() {
                    continue;
                }
                if c == b'#' && first_on_line(text, p) {
                    // The directive runs to its line's end (backslash continuations included).
                    let mut end = p;
                    while end < text.len() && !(text[end] == b'\n' && text[end - 1] != b'\\') {
                        end += 1;
                    }
                    out.push(Word::Directive(p));
                    at = end;
                } else if c.is_ascii_alphabetic() || c == b'_' {
                    let mut end = p + 1;
                    while end < text.len() && (text[end].is_ascii_alphanumeric() || text[end] == b'_') {
                        end += 1;
                    }
                    out.push(Word::Name(p, end));
                    at = end;
                } else {
                    out.push(Word::Punct(p, c));
                }
            }
            Token::Str { start, end, .. } => out.push(Word::Literal(start, end)),
            // A character literal or a number (its start is after a comment right before it).
            Token::Other => out.push(Word::Literal(before, at)),
        }
    }
    out
}

/// The byte offset of Clang's 1-based `line` and `column` (bytes) in `text`.
pub fn offset_of(text: &[u8], line: usize, column: usize) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].iter().position(|&b| b == b'\n')? + 1;
    }
    let at = start + column.checked_sub(1)?;
    (at <= text.len() && !text[start..at].contains(&b'\n')).then_some(at)
}

/// The index after the bracket that closes the one at `open` (`words[open]` must be `left`).
pub(super) fn balanced_end(words: &[Word], open: usize, left: u8, right: u8) -> Option<usize> {
    if !matches!(words.get(open), Some(Word::Punct(_, c)) if *c == left) {
        return None;
    }
    let mut depth = 0;
    for (i, w) in words.iter().enumerate().skip(open) {
        match w {
            Word::Punct(_, c) if *c == left => depth += 1,
            Word::Punct(_, c) if *c == right => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            Word::Punct(_, b';' | b'{' | b'}') => return None,
            _ => {}
        }
    }
    None
}

/// `text` with `insertions` made.
pub fn apply(text: &[u8], insertions: &[(usize, String)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + insertions.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (at, s) in insertions {
        out.extend_from_slice(&text[from..*at]);
        out.extend_from_slice(s.as_bytes());
        from = *at;
    }
    out.extend_from_slice(&text[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clangs_places_are_offsets() {
        let text = b"ab\ncd\n";
        assert_eq!(offset_of(text, 2, 2), Some(4));
        assert_eq!(offset_of(text, 1, 4), None);
        assert_eq!(offset_of(text, 9, 1), None);
    }
}
