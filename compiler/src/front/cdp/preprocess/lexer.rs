//! Preprocessing tokens (C11 6.4, C++17 [lex.pptoken]) of one file.
//!
//! [`lex`] splits a whole file into [`RawToken`]s: byte ranges with a kind and two flags, which
//! say whether white space comes before the token and whether it is the first token of a line
//! (a `#` there starts a directive). Comments count as white space; a backslash-newline joins
//! lines anywhere (such a token's text is [`RawToken::text`] with the splices removed). The
//! lexer never fails: an unterminated literal runs to the end of its line and an unterminated
//! block comment to the end of the file; the C lexer after this phase reports both when they are
//! in code that is compiled, and in a skipped `#if 0` group they are harmless, as in gcc.

use std::borrow::Cow;

/// What a preprocessing token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or keyword.
    Ident,
    /// A pp-number: `1`, `0x1fULL`, `1.5e-3f`, `1'000`.
    Number,
    /// A character literal, with its prefix.
    Char,
    /// A string literal, with its prefix (raw strings included).
    Str,
    /// An operator or punctuator.
    Punct,
    /// Any other character (`\`, `@`, `` ` ``, non-ASCII).
    Other,
}

/// One token of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawToken {
    /// What it is.
    pub kind: Kind,
    /// Byte range in the file, splices included.
    pub start: u32,
    /// End of the range, exclusive.
    pub end: u32,
    /// White space or a comment comes before it on its line.
    pub space_before: bool,
    /// It is the first token of a logical line.
    pub line_start: bool,
    /// A backslash-newline lies inside it.
    pub spliced: bool,
}

impl RawToken {
    /// The token's text with line splices removed.
    pub fn text<'a>(&self, source: &'a str) -> Cow<'a, str> {
        let raw = &source[self.start as usize..self.end as usize];
        if self.spliced {
            Cow::Owned(raw.replace("\\\r\n", "").replace("\\\n", ""))
        } else {
            Cow::Borrowed(raw)
        }
    }

    /// The byte range as `usize`s.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// Punctuators, longest first within each leading character (maximal munch).
const PUNCTUATORS: &[&str] = &[
    "%:%:", "...", "<<=", ">>=", "->*", "<=>", "##", "<:", ":>", "<%", "%>", "%:", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=",
    "::", ".*", "[", "]", "(", ")", "{", "}", ".", "&", "*", "+", "-", "~", "!", "/", "%", "<", ">", "^", "|", "?", ":", ";", "=", ",", "#",
];

/// A cursor over the bytes of a file that steps over backslash-newlines.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    spliced: bool,
}

impl<'a> Cursor<'a> {
    /// The length of a splice (`\` newline) at `at`, or 0.
    fn splice_at(&self, at: usize) -> usize {
        match self.bytes.get(at..) {
            Some([b'\\', b'\n', ..]) => 2,
            Some([b'\\', b'\r', b'\n', ..]) => 3,
            _ => 0,
        }
    }

    /// Skips splices at the cursor, noting that one was seen.
    fn skip_splices(&mut self) {
        loop {
            let n = self.splice_at(self.at);
            if n == 0 {
                return;
            }
            self.spliced = true;
            self.at += n;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_splices();
        self.bytes.get(self.at).copied()
    }

    /// The byte after the next one, splices skipped.
    fn peek2(&self) -> Option<u8> {
        let mut probe = Cursor { bytes: self.bytes, at: self.at, spliced: false };
        probe.skip_splices();
        probe.at += 1;
        probe.peek()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// Whether the text at the cursor starts with `s`, splices skipped.
    fn starts_with(&self, s: &str) -> bool {
        let mut probe = Cursor { bytes: self.bytes, at: self.at, spliced: false };
        s.bytes().all(|want| probe.bump() == Some(want))
    }

    fn advance(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }
}

/// Splits `source` into preprocessing tokens. Never fails and never recurses.
pub fn lex(source: &str) -> Vec<RawToken> {
    Lexer::new(source).collect()
}

/// The tokens of a file one at a time, for scans that need not keep them.
pub struct Lexer<'a> {
    source: &'a str,
    c: Cursor<'a>,
    space_before: bool,
    line_start: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `source`.
    pub fn new(source: &'a str) -> Lexer<'a> {
        Lexer { source, c: Cursor { bytes: source.as_bytes(), at: 0, spliced: false }, space_before: false, line_start: true }
    }
}

impl Iterator for Lexer<'_> {
    type Item = RawToken;

    fn next(&mut self) -> Option<RawToken> {
        let (source, c) = (self.source, &mut self.c);
        while let Some(b) = c.peek() {
            match b {
                b'\n' => {
                    c.at += 1;
                    self.line_start = true;
                    self.space_before = false;
                    continue;
                }
                b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' => {
                    c.at += 1;
                    self.space_before = true;
                    continue;
                }
                b'/' if c.peek2() == Some(b'/') => {
                    // A line comment ends at the newline (a splice continues it, as in C).
                    while let Some(b) = c.peek() {
                        if b == b'\n' {
                            break;
                        }
                        c.at += 1;
                    }
                    self.space_before = true;
                    continue;
                }
                b'/' if c.peek2() == Some(b'*') => {
                    c.advance(2);
                    match source[c.at..].find("*/") {
                        Some(end) => c.at += end + 2,
                        None => c.at = source.len(),
                    }
                    self.space_before = true;
                    continue;
                }
                _ => {}
            }
            let start = c.at;
            c.spliced = false;
            let kind = lex_token(c, source);
            // A token never ends inside a character: the cursor only stops on ASCII boundaries.
            while !source.is_char_boundary(c.at) {
                c.at += 1;
            }
            let token = RawToken { kind, start: start as u32, end: c.at as u32, space_before: self.space_before, line_start: self.line_start, spliced: c.spliced };
            self.space_before = false;
            self.line_start = false;
            return Some(token);
        }
        None
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

fn lex_token(c: &mut Cursor, source: &str) -> Kind {
    let b = c.peek().expect("called at a byte");
    // Literal prefixes: u8"", u"", U"", L"", R"()", u8R"()", and the same for characters.
    if matches!(b, b'u' | b'U' | b'L' | b'R') {
        for prefix in ["u8R\"", "uR\"", "UR\"", "LR\"", "R\"", "u8\"", "u\"", "U\"", "L\"", "u8'", "u'", "U'", "L'"] {
            if c.starts_with(prefix) {
                c.advance(prefix.len() - 1);
                return if prefix.contains('R') { raw_string(c, source) } else { quoted(c, prefix.as_bytes()[prefix.len() - 1]) };
            }
        }
    }
    if is_ident_byte(b) && !b.is_ascii_digit() {
        while c.peek().is_some_and(is_ident_byte) {
            c.at += 1;
        }
        return Kind::Ident;
    }
    if b.is_ascii_digit() || (b == b'.' && c.peek2().is_some_and(|d| d.is_ascii_digit())) {
        c.at += 1;
        while let Some(b) = c.peek() {
            if (matches!(b, b'e' | b'E' | b'p' | b'P') && matches!(c.peek2(), Some(b'+' | b'-'))) || (b == b'\'' && c.peek2().is_some_and(is_ident_byte)) {
                c.advance(2);
            } else if is_ident_byte(b) || b == b'.' {
                c.at += 1;
            } else {
                break;
            }
        }
        return Kind::Number;
    }
    if b == b'"' || b == b'\'' {
        return quoted(c, b);
    }
    if matches!(b, b'(' | b')' | b'[' | b']' | b'{' | b'}' | b';' | b',' | b'?' | b'~') {
        // Punctuators that begin no longer one: the common case, without the search below.
        c.at += 1;
        return Kind::Punct;
    }
    if b.is_ascii() {
        for p in PUNCTUATORS.iter().filter(|p| p.as_bytes()[0] == b) {
            if c.starts_with(p) {
                c.advance(p.len());
                return Kind::Punct;
            }
        }
    }
    c.at += 1;
    Kind::Other
}

/// A string or character literal whose opening quote is at the cursor; ends at the closing
/// quote or, unterminated, before the newline.
fn quoted(c: &mut Cursor, quote: u8) -> Kind {
    c.at += 1;
    while let Some(b) = c.peek() {
        match b {
            b'\n' => break,
            b'\\' => {
                c.at += 1;
                if c.peek().is_some_and(|b| b != b'\n') {
                    c.at += 1;
                }
            }
            _ => {
                c.at += 1;
                if b == quote {
                    break;
                }
            }
        }
    }
    if quote == b'"' {
        Kind::Str
    } else {
        Kind::Char
    }
}

/// A raw string `R"delim( ... )delim"` whose `"` is at the cursor. Without its closing
/// sequence it ends at the end of the line.
fn raw_string(c: &mut Cursor, source: &str) -> Kind {
    let open = c.at;
    c.at += 1;
    let delim_start = c.at;
    while c.peek().is_some_and(|b| b != b'(' && b != b'\n' && b != b'"' && c.at - delim_start <= 16) {
        c.at += 1;
    }
    if c.peek() != Some(b'(') {
        c.at = open;
        return quoted(c, b'"');
    }
    let close = format!("){}\"", &source[delim_start..c.at]);
    match source[c.at..].find(&close) {
        Some(end) => c.at += end + close.len(),
        None => {
            c.at = open;
            return quoted(c, b'"');
        }
    }
    Kind::Str
}
