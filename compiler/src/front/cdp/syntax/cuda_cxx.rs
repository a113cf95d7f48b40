//! Where CUDA C++ is told apart from the kernel language (`E0923`).
//!
//! The kernel language is C with CUDA's qualifiers, built-ins, intrinsics, the device runtime,
//! `extern "C"` and `<<<>>>` (docs/KERNEL-LANGUAGE.md). What needs C++ is CUDA C++, which
//! Clang reads (`.cu`, `-x cu`): [`find`] scans the lexed file, host code included (nvcc
//! compiles all of a `.cdp` file, and so must Clang once it is renamed), for the first such
//! construct, before anything is parsed. One pass over the tokens, no recursion.
//!
//! Found here: the C++ keywords of classes, namespaces, templates, operators and `new`/`delete`
//! (`class`, in `enum class` too, `namespace`, `using`, `template`, `typename`, `operator`,
//! `this`, `new`, `delete`, `virtual`, `friend`, `public`/`private`/`protected`, the casts), a
//! qualified name (`::`, except between an `asm` statement's colons), a struct with a base
//! (`struct D : B {`) and a member function or constructor in a struct or union body (a name
//! followed by `(` that does not open a pointer declarator, as `int (*op)(int)` does). A
//! reference declarator and a default argument are found by the grammar (`RefMark`,
//! `DefaultArgument`), which knows a declarator from the `&` operator and a parameter's `=` from
//! an assignment; a second function of one name (overloading) by sema (`decls.rs`), which knows
//! the parameters' types.
//!
//! A functional cast or constructor call (`float(x)`, `S(a, b)`) and a direct-initialization (`int
//! x(3);`) are sema's to refuse, also as `E0923` (`front/cdp/sema/expr.rs`, `front/cdp/sema/stmt.rs`): `dim3`'s are
//! the ones the kernel language keeps. Every such error's note says to rename the file `.cu` or to
//! compile it with `-x cu`.

use super::lexer::{Spanned, Tok};
use crate::diag::{Code, Diagnostic, Span};

/// Words that only C++ has, with what each one is for.
const CXX_WORDS: &[(&str, &str)] = &[
    ("class", "a class"),
    ("namespace", "a namespace"),
    ("using", "a `using` declaration"),
    ("template", "a template"),
    ("typename", "a template"),
    ("operator", "an operator function"),
    ("this", "a member function's `this`"),
    ("new", "`new`"),
    ("delete", "`delete`"),
    ("virtual", "a virtual function"),
    ("friend", "a friend declaration"),
    ("public", "an access specifier"),
    ("private", "an access specifier"),
    ("protected", "an access specifier"),
    ("static_cast", "a C++ cast"),
    ("reinterpret_cast", "a C++ cast"),
    ("const_cast", "a C++ cast"),
    ("dynamic_cast", "a C++ cast"),
];

/// The error for a construct of CUDA C++ (`what`, at `at`) in a `.cdp` file.
pub(crate) fn error(at: Span, what: &str) -> Diagnostic {
    Diagnostic::new(Code::CudaCxxInKernelLanguage, at, format!("{what} is CUDA C++, not the kernel language"))
        .with_primary_message("C++")
        .with_note("this is CUDA C++: rename the file `.cu` or compile with `-x cu` (Clang reads it, with nvcc's names)")
        .with_note("the kernel language (`.cdp`) is C with CUDA's qualifiers, built-ins and `<<<>>>`: docs/KERNEL-LANGUAGE.md")
}

fn word(tok: &Tok) -> Option<&str> {
    match tok {
        Tok::Ident(n) | Tok::TypeIdent(n) => Some(n),
        _ => None,
    }
}

fn span_of(t: &Spanned) -> Span {
    Span::new(t.0, t.2)
}

/// Past a struct head's name and attributes (`__align__(8)`, `__attribute__((...))`), from `i`:
/// the index of what follows them.
fn head_end(tokens: &[Spanned], mut i: usize) -> usize {
    while let Some(t) = tokens.get(i) {
        match word(&t.1) {
            Some(w) if w.starts_with("__") && matches!(tokens.get(i + 1).map(|n| &n.1), Some(Tok::LParen)) => {
                // skip the balanced parentheses of the attribute
                let mut depth = 0usize;
                i += 1;
                while let Some(t) = tokens.get(i) {
                    match t.1 {
                        Tok::LParen => depth += 1,
                        Tok::RParen => depth -= 1,
                        _ => {}
                    }
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            Some(_) => i += 1,
            None => return i,
        }
    }
    i
}

/// The first construct of CUDA C++ in the file's tokens, if any.
pub(crate) fn find(tokens: &[Spanned]) -> Option<Diagnostic> {
    // Brace depths at which a struct or union body is open.
    let mut bodies: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    // The index of the `{` that opens the body of the last `struct`/`union` head.
    let mut body_at: Option<usize> = None;
    // The paren depth of an open `asm ( ... )`, where `::` separates operand lists.
    let mut asm_parens: Option<usize> = None;
    let mut parens = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| &tokens[p].1);
        let next = tokens.get(i + 1).map(|n| &n.1);
        match &t.1 {
            Tok::Asm => asm_parens = Some(parens),
            Tok::LParen => parens += 1,
            Tok::RParen => {
                parens = parens.saturating_sub(1);
                if asm_parens == Some(parens) {
                    asm_parens = None;
                }
            }
            Tok::ColonColon if asm_parens.is_none() => return Some(error(span_of(t), "a qualified name (`::`)")),
            Tok::Struct if prev.and_then(word) == Some("enum") => return Some(error(span_of(t), "a scoped enum")),
            Tok::Struct | Tok::Union => {
                let after = head_end(tokens, i + 1);
                match tokens.get(after).map(|n| &n.1) {
                    Some(Tok::LBrace) => body_at = Some(after),
                    Some(Tok::Colon) if after > i + 1 => return Some(error(span_of(&tokens[after]), "a base class")),
                    _ => {}
                }
            }
            Tok::LBrace => {
                braces += 1;
                if body_at == Some(i) {
                    bodies.push(braces);
                }
            }
            Tok::RBrace => {
                if bodies.last() == Some(&braces) {
                    bodies.pop();
                }
                braces = braces.saturating_sub(1);
            }
            tok => {
                if let Some(w) = word(tok) {
                    if let Some((_, what)) = CXX_WORDS.iter().find(|(k, _)| *k == w) {
                        let what = if w == "class" && prev.and_then(word) == Some("enum") { "a scoped enum" } else { what };
                        return Some(error(span_of(t), what));
                    }
                    let in_body = bodies.last() == Some(&braces) && parens == 0;
                    let opens_declarator = matches!(tokens.get(i + 2).map(|n| &n.1), Some(Tok::Star | Tok::Caret));
                    if in_body && matches!(next, Some(Tok::LParen)) && !opens_declarator && !w.starts_with("__") {
                        return Some(error(span_of(t), "a member function"));
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(source: &str) -> Option<String> {
        let (tokens, _) = super::super::lexer::lex(source);
        find(&tokens).map(|d| source[d.primary_span().range()].to_string())
    }

    #[test]
    fn c_is_not_cxx() {
        for source in [
            "struct S { int a; int (*op)(int); unsigned b : 3; }; __global__ void k(struct S *s) { s->a = 1 & 2; }",
            "enum E : int { A }; union U { int i; float f; };",
            "__device__ int f(int x) { int r; asm(\"mov.b32 %0, %1;\" : \"=r\"(r) : \"r\"(x)); asm volatile(\"membar.gl;\" ::: \"memory\"); return r; }",
            "typedef struct { int a; } T; __device__ int g(int c) { return c ? sizeof(struct S) : 0; }",
        ] {
            assert_eq!(found(source), None, "{source}");
        }
    }

    #[test]
    fn cxx_is_found_where_it_is() {
        for (source, at) in [
            ("namespace n { __device__ int f(); }", "namespace"),
            ("__device__ int f() { return n::g(); }", "::"),
            ("template <typename T> __device__ T f(T x) { return x; }", "template"),
            ("struct P { int x; __device__ int get() const { return x; } };", "get"),
            ("struct P { int x; __device__ P() : x(0) {} };", "P"),
            ("struct D : B { int y; };", ":"),
            ("class C { int x; };", "class"),
            ("enum class E { A };", "class"),
            ("__device__ V operator+(V a, V b);", "operator"),
        ] {
            assert_eq!(found(source).as_deref(), Some(at), "{source}");
        }
    }
}
