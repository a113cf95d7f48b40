//! nvcc's spaced launch brackets: `kernel<< <grid, block>> >(args)`.
//!
//! nvcc accepts a kernel launch whose `<<<` and `>>>` are written with blanks inside them, as
//! Visual Studio's formatter writes them (`<< <` and `>> >`); Clang lexes `<<<` and `>>>` only as
//! three characters in a row and reports "expected expression". Measured with nvcc 13.5 (the
//! tests below hold each case): nvcc takes `<<` then blanks or a one-line `/* */` comment then
//! `<`, and the same for `>>` and `>`, but not across a line break, and not `< < <`; it keeps
//! `operator<< <T>(...)` (explicit template arguments of `operator<<`) and `A<B<C<int>> >`
//! (templates closed with a blank) as C++ has them.
//!
//! [`rewrite`] turns a source's spaced launch brackets into `<<<` and `>>>` in place, moving the
//! third bracket next to the first two and the blanks after it: the text keeps its length and
//! every line its line number, so Clang's messages, debug lines and `__LINE__` are the file's
//! own (a column after a rewritten bracket may be one more than the file's). The shim applies it
//! to every file the linked Clang reads, through the file system it gives Clang
//! ([`may_need_rewriting_c`], [`rewrite_c`]); a Clang program run as a process
//! (`--clang`) reads the files as they are.
//!
//! Only text outside comments, string and character literals is looked at. A spaced closer is
//! rewritten only after an opener (`<<<` or a spaced one) whose launch it closes: the first `>>`
//! then blanks then `>` at the opener's bracket depth, so `A<B<C<int>> >` elsewhere is left alone.
//! Code with no `<<` followed by a blank costs one scan.

/// Rewrites `text`'s spaced launch brackets in place; whether anything changed.
pub fn rewrite(text: &mut [u8]) -> bool {
    if !may_need_rewriting(text) {
        return false;
    }
    let mut changed = false;
    let mut lexer = Lexer { text, at: 0 };
    // The positions of `<<` that open a launch whose closer is still to come, with the
    // bracket depth at the opener.
    let mut open: Option<(usize, i32)> = None;
    let mut depth = 0i32;
    let mut last_word_is_operator = false;
    while let Some(at) = lexer.next_code_byte() {
        let text = &*lexer.text;
        let c = text[at];
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        if c == b'<' && text.get(at + 1) == Some(&b'<') {
            let after = at + 2;
            if text.get(after) == Some(&b'<') {
                // `<<<` as Clang lexes it; a launch whose closer may be spaced.
                if !last_word_is_operator {
                    open = Some((at, depth));
                }
                lexer.at = after + 1;
                last_word_is_operator = false;
                continue;
            }
            if text.get(after) != Some(&b'=') && !last_word_is_operator {
                if let Some(third) = blanks_then(text, after, b'<') {
                    lexer.text.copy_within(after..third, after + 1);
                    lexer.text[after] = b'<';
                    changed = true;
                    open = Some((at, depth));
                    lexer.at = third + 1;
                    last_word_is_operator = false;
                    continue;
                }
            }
            lexer.at = after;
            last_word_is_operator = false;
            continue;
        }
        if c == b'>' && text.get(at + 1) == Some(&b'>') {
            let after = at + 2;
            if matches!(open, Some((_, d)) if d == depth) {
                if text.get(after) == Some(&b'>') {
                    open = None;
                    lexer.at = after + 1;
                    continue;
                }
                if let Some(third) = blanks_then(text, after, b'>') {
                    lexer.text.copy_within(after..third, after + 1);
                    lexer.text[after] = b'>';
                    changed = true;
                    open = None;
                    lexer.at = third + 1;
                    continue;
                }
            }
            lexer.at = after;
            continue;
        }
        if c == b';' {
            // A launch ends at its statement's end at the latest.
            open = None;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let end = word_end(text, at);
            last_word_is_operator = &text[at..end] == b"operator";
            lexer.at = end;
            continue;
        }
        if !c.is_ascii_whitespace() {
            last_word_is_operator = false;
        }
    }
    changed
}

/// Whether `text` holds a spaced bracket anywhere (in code or not): the cheap test that almost
/// every file fails, so that only the others are copied and lexed.
pub fn may_need_rewriting(text: &[u8]) -> bool {
    let mut at = 0;
    while let Some(p) = text[at..].windows(2).position(|w| (w[0] == b'<' || w[0] == b'>') && w[1] == w[0]) {
        let after = at + p + 2;
        if blanks_then(text, after, text[at + p]).is_some() {
            return true;
        }
        at = at + p + 1;
    }
    false
}

/// Where `want` is after blanks and one-line block comments from `at` (at least one of them),
/// on the same line.
fn blanks_then(text: &[u8], mut at: usize, want: u8) -> Option<usize> {
    let start = at;
    loop {
        match text.get(at)? {
            b' ' | b'\t' | b'\x0b' | b'\x0c' => at += 1,
            b'/' if text.get(at + 1) == Some(&b'*') => {
                let close = text[at + 2..].windows(2).position(|w| w == b"*/")? + at + 2;
                if text[at..close].contains(&b'\n') {
                    return None;
                }
                at = close + 2;
            }
            &c if c == want && at > start => return Some(at),
            _ => return None,
        }
    }
}

fn word_end(text: &[u8], mut at: usize) -> usize {
    while at < text.len() && (text[at].is_ascii_alphanumeric() || text[at] == b'_') {
        at += 1;
    }
    at
}

/// Walks a C++ source's bytes, stepping over comments and literals.
struct Lexer<'a> {
    text: &'a mut [u8],
    at: usize,
}

impl Lexer<'_> {
    /// The position of the next byte of code (not in a comment or literal), the lexer then
    /// standing after it.
    fn next_code_byte(&mut self) -> Option<usize> {
        loop {
            let text = &*self.text;
            let at = self.at;
            let c = *text.get(at)?;
            let next = text.get(at + 1).copied();
            match c {
                b'/' if next == Some(b'/') => self.at = line_end(text, at),
                b'/' if next == Some(b'*') => {
                    self.at = text[at + 2..].windows(2).position(|w| w == b"*/").map_or(text.len(), |p| at + 2 + p + 2);
                }
                b'"' => {
                    self.at = if raw_string_prefix(text, at) { raw_string_end(text, at) } else { quoted_end(text, at, b'"') };
                }
                b'\'' if !digit_separator(text, at) => self.at = quoted_end(text, at, b'\''),
                b'0'..=b'9' => {
                    // A number, with its digit separators and suffixes.
                    let mut end = at + 1;
                    while end < text.len() && (text[end].is_ascii_alphanumeric() || text[end] == b'.' || text[end] == b'_' || (text[end] == b'\'' && end + 1 < text.len() && text[end + 1].is_ascii_alphanumeric())) {
                        end += 1;
                    }
                    self.at = end;
                }
                _ => {
                    self.at = at + 1;
                    return Some(at);
                }
            }
        }
    }
}

/// The end of a `//` comment: its newline, unless a backslash continues it.
fn line_end(text: &[u8], mut at: usize) -> usize {
    while at < text.len() {
        if text[at] == b'\n' {
            let mut back = at;
            if back > 0 && text[back - 1] == b'\r' {
                back -= 1;
            }
            if back == 0 || text[back - 1] != b'\\' {
                return at;
            }
        }
        at += 1;
    }
    text.len()
}

/// The position after a literal opened by `quote` at `at` (its end of line if unclosed).
fn quoted_end(text: &[u8], at: usize, quote: u8) -> usize {
    let mut i = at + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// Whether the `'` at `at` separates digits (`1'000`): it follows a digit or a number's letter.
fn digit_separator(text: &[u8], at: usize) -> bool {
    if at == 0 || !text[at - 1].is_ascii_alphanumeric() {
        return false;
    }
    // Walk back over the word: a number starts with a digit; `u8'c'` or `L'c'` is a literal.
    let mut start = at;
    while start > 0 && (text[start - 1].is_ascii_alphanumeric() || text[start - 1] == b'_' || text[start - 1] == b'\'') {
        start -= 1;
    }
    text[start].is_ascii_digit()
}

/// Whether the `"` at `at` opens a raw string (`R"`, `u8R"`, `LR"`, ...).
fn raw_string_prefix(text: &[u8], at: usize) -> bool {
    if at == 0 || text[at - 1] != b'R' {
        return false;
    }
    let start = word_start(text, at - 1);
    matches!(&text[start..at], b"R" | b"u8R" | b"uR" | b"UR" | b"LR")
}

fn word_start(text: &[u8], mut at: usize) -> usize {
    while at > 0 && (text[at - 1].is_ascii_alphanumeric() || text[at - 1] == b'_') {
        at -= 1;
    }
    at
}

/// The position after the raw string opened at `at` (`"delim( ... )delim"`).
fn raw_string_end(text: &[u8], at: usize) -> usize {
    let Some(open) = text[at + 1..].iter().take(17).position(|&c| c == b'(') else {
        return quoted_end(text, at, b'"');
    };
    let delim = &text[at + 1..at + 1 + open];
    let mut close = Vec::with_capacity(delim.len() + 2);
    close.push(b')');
    close.extend_from_slice(delim);
    close.push(b'"');
    let body = at + 1 + open + 1;
    text[body..].windows(close.len()).position(|w| w == close.as_slice()).map_or(text.len(), |p| body + p + close.len())
}

/// The shim's test before copying a file: [`may_need_rewriting`] of the `len` bytes at `text`.
///
/// # Safety
/// `text` points at `len` readable bytes.
pub unsafe extern "C" fn may_need_rewriting_c(text: *const u8, len: usize) -> std::ffi::c_int {
    if text.is_null() || len == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    std::panic::catch_unwind(|| may_need_rewriting(bytes)).unwrap_or(false) as std::ffi::c_int
}

/// The shim's rewrite of a file's copy: [`rewrite`] of the `len` bytes at `text`, in place; 1
/// if anything changed.
///
/// # Safety
/// `text` points at `len` writable bytes that nothing else uses during the call.
pub unsafe extern "C" fn rewrite_c(text: *mut u8, len: usize) -> std::ffi::c_int {
    if text.is_null() || len == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts_mut(text, len) };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rewrite(bytes))).unwrap_or(false) as std::ffi::c_int
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    fn after(source: &str) -> String {
        let mut bytes = source.as_bytes().to_vec();
        rewrite(&mut bytes);
        assert_eq!(bytes.len(), source.len());
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn spaced_brackets_that_nvcc_takes_become_three_in_a_row() {
        // Each accepted by `nvcc -dc -arch=sm_90` 13.5.
        assert_eq!(after("k<< <1, 1>> >(p);"), "k<<< 1, 1>>> (p);");
        assert_eq!(after("k<<<1, 1>> >(p);"), "k<<<1, 1>>> (p);");
        assert_eq!(after("k<< <1, 1>>>(p);"), "k<<< 1, 1>>>(p);");
        assert_eq!(after("k<< /*c*/ <1, 1>> >(p);"), "k<<< /*c*/ 1, 1>>> (p);");
        assert_eq!(after("k<< <1, (4>>1)>> >(p);"), "k<<< 1, (4>>1)>>> (p);");
        assert_eq!(after("kt<1><< <g, b>>  >(p);"), "kt<1><<< g, b>>>  (p);");
        assert_eq!(after("s << <GRID_SIZE, TB_SIZE >> > (d_v, d_v_r);"), "s <<< GRID_SIZE, TB_SIZE >>>  (d_v, d_v_r);");
    }

    #[test]
    fn what_nvcc_refuses_or_cpp_means_stays() {
        // nvcc refuses these two ("expected an expression").
        assert_eq!(after("k< < <1, 1> > >(p);"), "k< < <1, 1> > >(p);");
        assert_eq!(after("k<<\n<1, 1>>\n>(p);"), "k<<\n<1, 1>>\n>(p);");
        // C++ that nvcc compiles as C++.
        assert_eq!(after("operator<< <S>(o, S());"), "operator<< <S>(o, S());");
        assert_eq!(after("A<A<A<int>> > x; a << b;"), "A<A<A<int>> > x; a << b;");
        assert_eq!(after("x <<= 1; y << 2 << (3 >> 1) > z;"), "x <<= 1; y << 2 << (3 >> 1) > z;");
        // A closer with no opener before it.
        assert_eq!(after("f(a << b); A<B<int>> > c;"), "f(a << b); A<B<int>> > c;");
    }

    #[test]
    fn comments_and_literals_are_not_code() {
        let source = "// k<< <1, 1>> >(p);\n/* k<< <1,1>> >() */ \"k<< <1>> >\" 'a' R\"x(<< <)x\" 1'000 << 2;";
        assert_eq!(after(source), source);
        assert_eq!(after("s = \"<< <\"; k<< <1, 1>> >(p);"), "s = \"<< <\"; k<<< 1, 1>>> (p);");
    }

    #[test]
    fn a_template_closed_with_a_blank_inside_the_launch_is_left_as_written() {
        // The closer is the first `>> >` at the opener's bracket depth.
        assert_eq!(after("k<< <f(A<B<int>> >()), 1>> >(p);"), "k<<< f(A<B<int>> >()), 1>>> (p);");
    }

    #[test]
    fn arbitrary_bytes_keep_their_length_and_do_not_panic() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let len = (state % 64) as usize;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push(b"<> /*\"'\nR(x)1;"[(state % 14) as usize]);
            }
            let before = bytes.len();
            rewrite(&mut bytes);
            assert_eq!(bytes.len(), before);
        }
    }
}
