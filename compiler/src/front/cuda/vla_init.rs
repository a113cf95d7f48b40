//! An initialised array whose size is no constant expression (`T a[n] = {0};` with `n` a
//! variable), compiled as nvcc's host compiler compiles it.
//!
//! g++ accepts the initialiser as an extension (the elements given, the rest value-initialised),
//! so nvcc compiles such a declaration in host code (NVIDIA's `cudaNvSciBufMultiplanar` sample:
//! `cudaSurfaceObject_t surfObject[numPlanes] = {0};`). Clang refuses it in C++ ("variable-sized
//! object may not be initialized", no option relaxes it). Where that is Clang's only error,
//! [`super::mend`] compiles the files again with each such declaration rewritten, by insertions
//! only, into the array left uninitialised and a second declarator of the same declaration whose
//! initialiser fills it:
//!
//! ```text
//! T a[n] = {0};
//! T a[n], *__cdpc_vla_a __attribute__((unused)) = (::__cdpc_vla_init(a, sizeof a / sizeof *a)({0}), nullptr);
//! ```
//!
//! `__cdpc_vla_init` (cdpc's additions header, section 14) gives a filler whose call takes the list
//! as an array of the element type and assigns its elements in order and value-initialised ones
//! after them, up to the array's length: g++'s result. The second
//! declarator is a pointer of the declaration's own type, so any element type works, and it is
//! declared after `a`, so the fill runs where the initialiser would have. What this module does
//! not read (an array of arrays, of `const` elements, an initialiser not in braces, a declaration
//! it cannot find the end of) stays as it is: Clang's error and its help note.

use super::mend::{balanced_end, words, Word};

/// Clang's error that this module mends.
pub const REFUSED: &str = "variable-sized object may not be initialized";

/// The filling declarator's name: this prefix, then the array's name.
const PREFIX: &str = "__cdpc_vla_";

/// Insertions that make the initialised variable-length arrays whose bounds Clang placed at
/// `bounds` (byte offsets of the size expression, Clang's caret) uninitialised arrays filled by
/// a second declarator (module docs): `(offset, text)` in order. `None` when any of them cannot
/// be read.
pub fn insertions(text: &[u8], bounds: &[usize]) -> Option<Vec<(usize, String)>> {
    let words = words(text);
    let mut out = Vec::new();
    for &bound in bounds {
        let inside = words.iter().position(|w| w.start() >= bound)?;
        // The `[` that opens the bound: back over balanced brackets, within the declaration.
        let mut depth = 0usize;
        let mut open = inside;
        loop {
            open = open.checked_sub(1)?;
            match words[open] {
                Word::Punct(_, b')' | b']') => depth += 1,
                Word::Punct(_, b'(') => depth = depth.checked_sub(1)?,
                Word::Punct(_, b'[') if depth == 0 => break,
                Word::Punct(_, b'[') => depth -= 1,
                Word::Punct(_, b';' | b'{' | b'}') | Word::Directive(_) => return None,
                _ => {}
            }
        }
        // One dimension, after the declarator's name.
        let Word::Name(name_start, name_end) = words[open.checked_sub(1)?] else { return None };
        let name = std::str::from_utf8(&text[name_start..name_end]).ok()?;
        // The declaration's words before the name: a type at least. Elements of a `const` type
        // (a `const` with no `*` after it) cannot be left uninitialised and filled (Clang:
        // "default initialization of an object of const type").
        let start = words[..open].iter().rposition(|w| matches!(w, Word::Punct(_, b';' | b'{' | b'}') | Word::Directive(_))).map_or(0, |i| i + 1);
        let before = &words[start..open - 1];
        let last_star = before.iter().rposition(|w| matches!(w, Word::Punct(_, b'*')));
        let const_elements = before.iter().enumerate().any(|(i, w)| w.is(text, "constexpr") || (w.is(text, "const") && last_star.is_none_or(|s| s < i)));
        if before.is_empty() || const_elements {
            return None;
        }
        let after = balanced_end(&words, open, b'[', b']')?;
        // `= { ... }`, then the next declarator or the declaration's end.
        let Some(Word::Punct(equals, b'=')) = words.get(after).copied() else { return None };
        let Some(Word::Punct(brace, b'{')) = words.get(after + 1).copied() else { return None };
        let close = brace_end(&words, after + 1)?;
        if !matches!(words.get(close + 1), Some(Word::Punct(_, b',' | b';'))) {
            return None;
        }
        out.push((equals, format!(", *{PREFIX}{name} __attribute__((unused)) ")));
        out.push((brace, format!("(::__cdpc_vla_init({name}, sizeof {name} / sizeof *{name})(")));
        out.push((words[close].end(), "), nullptr)".to_string()));
    }
    out.sort_by_key(|(at, _)| *at);
    Some(out)
}

/// The index of the `}` that closes the `{` at `open`; `None` at a `;` outside nested braces
/// (the list never ended) or the text's end.
fn brace_end(words: &[Word], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, w) in words.iter().enumerate().skip(open) {
        match w {
            Word::Punct(_, b'{') => depth += 1,
            Word::Punct(_, b'}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            Word::Punct(_, b';') if depth == 1 => return None,
            Word::Directive(_) => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::cuda::mend::apply;

    /// `text` rewritten at the bound that starts at the first `[`'s next byte.
    fn rewritten(text: &str) -> Option<String> {
        let at = text.find('[')? + 1;
        let ins = insertions(text.as_bytes(), &[at])?;
        Some(String::from_utf8(apply(text.as_bytes(), &ins)).unwrap())
    }

    #[test]
    fn an_initialised_variable_length_array_is_filled_by_a_second_declarator() {
        assert_eq!(
            rewritten("    cudaSurfaceObject_t surfObject[numPlanes] = {0};\n").unwrap(),
            "    cudaSurfaceObject_t surfObject[numPlanes] , *__cdpc_vla_surfObject __attribute__((unused)) = (::__cdpc_vla_init(surfObject, sizeof surfObject / sizeof *surfObject)({0}), nullptr);\n"
        );
        assert_eq!(rewritten("int a[n + f(m[1])]={}, b = 2;").unwrap(), "int a[n + f(m[1])], *__cdpc_vla_a __attribute__((unused)) =(::__cdpc_vla_init(a, sizeof a / sizeof *a)({}), nullptr), b = 2;");
        assert!(rewritten("const char *names[n] = {0};").is_some());
        assert_eq!(
            rewritten("char *names[n] = { \"a\", /* } */ \"b\" };").unwrap(),
            "char *names[n] , *__cdpc_vla_names __attribute__((unused)) = (::__cdpc_vla_init(names, sizeof names / sizeof *names)({ \"a\", /* } */ \"b\" }), nullptr);"
        );
    }

    #[test]
    fn declarations_it_cannot_read_are_left_alone() {
        for text in [
            "const int a[n] = {0};",
            "x; char *const p[n] = {0};",
            "const int *const p[n] = {0};",
            "int a[n][m] = {0};",
            "int a[n] = f();",
            "int a[n] = {0}",
            "int a[n] = {0; int b;",
            "int [n] = {0};",
            "x = y[n];",
        ] {
            assert_eq!(rewritten(text), None, "{text}");
        }
    }

    #[test]
    fn lines_and_earlier_columns_stay_the_files() {
        let text = "a;\n  int v[n] =\n  { 1,\n 2 };\nb;\n";
        let out = rewritten(text).unwrap();
        assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        assert!(out.starts_with("a;\n  int v[n] ") && out.ends_with("\nb;\n"));
    }
}
