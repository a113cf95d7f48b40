//! `__shared__` variables of a type whose construction or destruction does something
//! (`__shared__ cuda::barrier<cuda::thread_scope_block> bar;`, the form every TMA and
//! `memcpy_async` kernel writes), compiled as nvcc compiles them.
//!
//! nvcc leaves a `__shared__` variable's constructor and destructor out (shared memory is not
//! initialised; the program calls `init(&bar, n)`), with a warning that
//! `#pragma nv_diag_suppress static_var_with_dynamic_init` silences. Clang 22 refuses the
//! declaration ("initialization is not supported for __shared__ variables": only an empty
//! constructor and destructor are allowed, and Clang has no option to relax it). So where the
//! linked Clang refuses exactly such declarations and nothing else, the compilation runs once
//! more over the same files with each of those declarations rewritten ([`rewrite`]) into raw
//! storage of the same size and alignment and a reference of the variable's name to it:
//!
//! ```text
//! __shared__ barrier bar[2];
//! __shared__ __cdpc_shared_storage< barrier> __cdpc_shared_bar[2]; auto &bar = __cdpc_shared_ref(__cdpc_shared_bar);
//! ```
//!
//! `__cdpc_shared_storage<T>` (cdpc's additions header, section 13) is a union of one `T` with
//! an empty constructor and destructor, which Clang accepts as nvcc's rule does; the reference
//! is the variable for every use (`&bar`, `bar.arrive()`, `bar[i]`, `sizeof bar`). What differs
//! from nvcc: the variable's symbol in the PTX (`__cdpc_shared_bar`, a name no other object
//! file sees), and `decltype(bar)`, a reference.
//!
//! Only text is inserted, never a line break: the file only grows, and every line and the
//! columns before each insertion stay the file's. A declaration this module cannot read
//! (several declarators, an initialiser, `extern`, a type split by an attribute) is left as it
//! is, and the compilation reports Clang's error with its help note.

use super::mend::{balanced_end, words, Word};

/// Clang's error that this module mends.
pub const REFUSED: &str = "initialization is not supported for __shared__ variables";

/// The start of the warning at each declaration rewritten, as nvcc warns (`diag::Code::SharedConstructionLeftOut`).
pub const LEFT_OUT: &str = "this `__shared__` variable is not constructed or destroyed";

/// The storage's name for a variable: this prefix, then the variable's name.
const PREFIX: &str = "__cdpc_shared_";

/// Insertions that make the declarations whose names start at `names` (byte offsets) raw
/// storage and a reference (module docs): `(offset, text)` in order. `None` when any of them
/// cannot be read.
pub fn insertions(text: &[u8], names: &[usize]) -> Option<Vec<(usize, String)>> {
    let words = words(text);
    let mut out = Vec::new();
    for &name_at in names {
        let index = words.iter().position(|w| matches!(w, Word::Name(s, _) if *s == name_at))?;
        let Word::Name(_, name_end) = words[index] else { return None };
        let name = std::str::from_utf8(&text[name_at..name_end]).ok()?;
        // The declaration's start: after the previous `;`, `{`, `}`, directive or label's `:`.
        let mut first = index;
        while first > 0 {
            let w = words[first - 1];
            let boundary = match w {
                Word::Punct(_, b';' | b'{' | b'}') | Word::Directive(_) => true,
                Word::Punct(p, b':') => !(p > 0 && text[p - 1] == b':') && text.get(p + 1) != Some(&b':'),
                _ => false,
            };
            if boundary {
                break;
            }
            first -= 1;
        }
        // Specifiers that stay on the storage, and the type between them (one run of words).
        let mut shared = false;
        let mut type_words: Vec<(usize, usize)> = Vec::new();
        let mut i = first;
        while i < index {
            let w = words[i];
            if w.is(text, "__shared__") {
                shared = true;
            } else if ["static", "__device__", "__restrict__"].iter().any(|n| w.is(text, n)) {
                if !type_words.is_empty() && i + 1 < index {
                    return None;
                }
            } else if ["extern", "__constant__", "__managed__", "typedef", "using", "return"].iter().any(|n| w.is(text, n)) {
                return None;
            } else if ["__align__", "alignas", "__attribute__", "__declspec"].iter().any(|n| w.is(text, n)) {
                // Its parenthesised argument.
                if !type_words.is_empty() {
                    return None;
                }
                i = balanced_end(&words, i + 1, b'(', b')')?;
                continue;
            } else if matches!(w, Word::Punct(_, b'[')) && matches!(words.get(i + 1), Some(Word::Punct(_, b'['))) {
                if !type_words.is_empty() {
                    return None;
                }
                i = balanced_end(&words, i, b'[', b']')?;
                continue;
            } else {
                if matches!(w, Word::Punct(_, b'(' | b')' | b'=' | b',' | b'*' | b'&')) && !inside_angles(&words, i) {
                    return None;
                }
                type_words.push((w.start(), w.end()));
            }
            i += 1;
        }
        if !shared || type_words.is_empty() {
            return None;
        }
        // The declarator after the name: array bounds, then `;`.
        let mut j = index + 1;
        while matches!(words.get(j), Some(Word::Punct(_, b'['))) {
            j = balanced_end(&words, j, b'[', b']')?;
        }
        let Some(Word::Punct(semicolon, b';')) = words.get(j).copied() else { return None };
        out.push((type_words[0].0, "__cdpc_shared_storage< ".to_string()));
        out.push((type_words.last()?.1, ">".to_string()));
        out.push((name_at, PREFIX.to_string()));
        out.push((semicolon + 1, format!(" auto &{name} = __cdpc_shared_ref({PREFIX}{name});")));
    }
    out.sort_by_key(|(at, _)| *at);
    Some(out)
}

/// Whether word `i` is inside a template's angle brackets that open after the declaration's
/// start (a `(` or `,` of `cuda::barrier<cuda::thread_scope_block>`-like arguments).
fn inside_angles(words: &[Word], i: usize) -> bool {
    let mut depth = 0i32;
    for w in words[..i].iter().rev() {
        match w {
            Word::Punct(_, b'>') => depth += 1,
            Word::Punct(_, b'<') => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            Word::Punct(_, b';' | b'{' | b'}') | Word::Directive(_) => return false,
            _ => {}
        }
    }
    false
}

/// Whether nvcc would say nothing of the declaration at `name_at`: a `#pragma nv_diag_suppress`
/// of `static_var_with_dynamic_init` (or its number, 20054) comes before it in the file.
pub fn warning_suppressed(text: &[u8], name_at: usize) -> bool {
    let before = String::from_utf8_lossy(&text[..name_at.min(text.len())]);
    before.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#') && l.contains("nv_diag_suppress") && (l.contains("static_var_with_dynamic_init") || l.contains("20054"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::cuda::mend::apply;

    fn rewritten(text: &str, name: &str) -> Option<String> {
        // The name as a whole word after a blank.
        let at = text.match_indices(&format!(" {name}")).map(|(p, _)| p + 1).find(|&p| !text[p + name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))?;
        let ins = insertions(text.as_bytes(), &[at])?;
        Some(String::from_utf8(apply(text.as_bytes(), &ins)).unwrap())
    }

    #[test]
    fn a_shared_barrier_becomes_storage_and_a_reference() {
        assert_eq!(rewritten("  __shared__ barrier bar;\n", "bar").unwrap(), "  __shared__ __cdpc_shared_storage< barrier> __cdpc_shared_bar; auto &bar = __cdpc_shared_ref(__cdpc_shared_bar);\n");
        assert_eq!(
            rewritten("#pragma nv_diag_suppress static_var_with_dynamic_init\n__shared__ cuda::barrier<cuda::thread_scope_block> bar_a[STAGES];\n", "bar_a").unwrap(),
            "#pragma nv_diag_suppress static_var_with_dynamic_init\n__shared__ __cdpc_shared_storage< cuda::barrier<cuda::thread_scope_block>> __cdpc_shared_bar_a[STAGES]; auto &bar_a = __cdpc_shared_ref(__cdpc_shared_bar_a);\n"
        );
        assert_eq!(
            rewritten("{ static __shared__ __align__(8) ::cuda::barrier<S, F<1, 2>> b[2][3]; }", "b").unwrap(),
            "{ static __shared__ __align__(8) __cdpc_shared_storage< ::cuda::barrier<S, F<1, 2>>> __cdpc_shared_b[2][3]; auto &b = __cdpc_shared_ref(__cdpc_shared_b); }"
        );
        assert_eq!(
            rewritten("x = 1; /* { */ __shared__ /* ; */ T v; // }\n", "v").unwrap(),
            "x = 1; /* { */ __shared__ /* ; */ __cdpc_shared_storage< T> __cdpc_shared_v; auto &v = __cdpc_shared_ref(__cdpc_shared_v); // }\n"
        );
    }

    #[test]
    fn declarations_it_cannot_read_are_left_alone() {
        for (text, name) in [
            ("__shared__ barrier a, b;", "a"),
            ("__shared__ int v = 1;", "v"),
            ("extern __shared__ barrier bar;", "bar"),
            ("barrier bar;", "bar"),
            ("__shared__ T (*fp)(int);", "fp"),
            ("__shared__ barrier bar", "bar"),
        ] {
            assert_eq!(rewritten(text, name), None, "{text}");
        }
    }

    #[test]
    fn lines_and_earlier_columns_stay_the_files() {
        let text = "a;\n  __shared__ barrier\n    bar;\nb;\n";
        let out = rewritten(text, "bar").unwrap();
        assert_eq!(out.matches('\n').count(), text.matches('\n').count());
        assert!(out.ends_with("\nb;\n") && out.starts_with("a;\n  __shared__ "));
    }

    #[test]
    fn nvccs_pragma_silences_its_warning() {
        let text = b"#pragma nv_diag_suppress static_var_with_dynamic_init\n__shared__ barrier bar;";
        assert!(warning_suppressed(text, text.len() - 4));
        assert!(!warning_suppressed(b"__shared__ barrier bar;", 19));
    }
}
