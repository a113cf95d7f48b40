//! **Where template names are marked.** C++ needs to know that a name is a template before it
//! can tell `f<int>(x)` from `f < int`; clang looks the name up while parsing. cdpc's grammar
//! has no symbol table, so this pass does the look-up on the tokens, after `split` has cut
//! them into declarations and before the grammar sees them (the same trick as the lexer's
//! struct names, `lexer::mark_struct_names`):
//!
//! - the word `template` at the head of a device declaration becomes [`Tok::Template`];
//! - the names of its type parameters (`typename T`, `class T`) become type names inside that
//!   declaration, so that `T *p` and `(T *)q` parse as declarations and casts;
//! - the name of the function it declares becomes [`Tok::TemplateName`] everywhere in the file,
//!   also as the last component of a qualified name (`N::f`, inside a namespace the template's
//!   name is qualified by `front::in_namespace`), so that `f<` opens template arguments (`f<int, 4>(p)`, `k<128><<<g, b>>>(p)`).
//!
//! - a class template (`template <typename T, int N> struct Buf { ... };`, a tentative
//!   declaration): `template` and its type parameters likewise, and its name becomes
//!   [`Tok::ClassTemplateName`] wherever template arguments follow it (`Buf<int, 4>`), or a type
//!   name alone inside its own declarations (C++'s injected class name, `const Buf &o`); an
//!   out-of-class member `template <...> R Buf<T, N>::f(...)` is marked the same way and is no
//!   function template (`class_templates.rs` parses both);
//! - before the split, a `>>` that closes two template argument lists after a class template's
//!   name (`Buf<Buf<int, 2>>`) becomes two `>` ([`split_closing_shifts`]), and the argument
//!   lists count toward the bracket nesting limit ([`check_argument_nesting`]).
//!
//! The names are marked in host code too: `host_mentions.rs` finds host code's mentions of
//! device templates (`k<128><<<...>>>` in `main`) by them, and `explicit_instances.rs` the
//! explicit instantiations.
//!
//! The grammar's productions for templates are grouped under "Templates" in `grammar.lalrpop`;
//! instantiation is sema's (`crate::sema::templates`).

use super::lexer::{Spanned, Tok};
use super::split::{Chunk, Class};
use std::collections::HashSet;

/// Marks the tokens of device function templates and of class templates as described in the
/// module docs.
pub(super) fn mark(tokens: &mut [Spanned], chunks: &[Chunk]) {
    let mut names: HashSet<String> = HashSet::new();
    // Class templates first: an out-of-class member (`Buf<T>::f`) is no function template.
    let classes: HashSet<String> = chunks
        .iter()
        .filter(|c| c.class == Class::Tentative)
        .filter_map(|c| class_template_name(&tokens[c.tokens.clone()]))
        .collect();
    let mut own_chunks = Vec::new();
    for chunk in chunks {
        let range = chunk.tokens.clone();
        if matches!(chunk.class, Class::Host(_)) {
            continue;
        }
        if range.len() < 2 || !is_word(&tokens[range.start].1, "template") {
            continue;
        }
        if !matches!(tokens[range.start + 1].1, Tok::Lt) {
            continue; // not a template head the grammar knows; it reports the syntax error
        }
        let class = chunk.class == Class::Tentative && class_template_name(&tokens[range.clone()]).is_some();
        let member = chunk.class == Class::Device && member_of_class_template(&tokens[range.clone()], &classes).is_some();
        if chunk.class != Class::Device && !class {
            continue;
        }
        tokens[range.start].1 = Tok::Template;
        let close = header_end(tokens, range.start + 1, range.end);
        let params = type_params(&tokens[range.start + 2..close]);
        for (_, tok, _) in &mut tokens[range.clone()] {
            if let Tok::Ident(name) | Tok::TypeIdent(name) = tok {
                if params.contains(name.as_str()) {
                    *tok = Tok::TypeIdent(std::mem::take(name));
                }
            }
        }
        if class || member {
            own_chunks.push(range);
        } else {
            names.extend(chunk.names.iter().map(|n| n.name.clone()));
        }
    }
    if names.is_empty() && classes.is_empty() {
        return;
    }
    for i in 0..tokens.len() {
        let (is_ident, name) = match &tokens[i].1 {
            Tok::Ident(name) => (true, name),
            Tok::TypeIdent(name) => (false, name),
            _ => continue,
        };
        // A qualified name (`N::f`, `alias::f`, joined by `qualified::join`) is marked by its
        // last component: which namespace it names is sema's look-up.
        let last = name.rsplit("::").next().unwrap_or(name);
        if is_ident && names.contains(last) {
            tokens[i].1 = Tok::TemplateName(name.clone());
        } else if classes.contains(last) {
            let name = name.clone();
            // Inside the class template's own declarations, its bare name (not followed by
            // arguments) is the instance being made, C++'s injected class name: a type name.
            let injected = !matches!(tokens.get(i + 1).map(|t| &t.1), Some(Tok::Lt)) && own_chunks.iter().any(|r| r.contains(&i));
            tokens[i].1 = if injected { Tok::TypeIdent(name) } else { Tok::ClassTemplateName(name) };
        }
    }
}

/// A class template's argument lists (`Buf<Buf<...>>`) nest like brackets, which
/// `check_limits` counts before template names are known: here, in the declarations that are
/// parsed, they count together with the brackets, at most [`super::MAX_NESTING`] deep
/// (`E0400`), since the type they make is walked recursively. (Host code is never parsed.)
pub(super) fn check_argument_nesting(tokens: &[Spanned], chunks: &[Chunk]) -> Option<crate::diag::Diagnostic> {
    chunks.iter().filter(|c| !matches!(c.class, Class::Host(_))).find_map(|c| nesting_in(&tokens[c.tokens.clone()]))
}

fn nesting_in(tokens: &[Spanned]) -> Option<crate::diag::Diagnostic> {
    use crate::diag::{Code, Diagnostic, Span};
    let mut depth = 0usize;
    // The depth at which each open template argument list started.
    let mut lists: Vec<usize> = Vec::new();
    for (i, (s, tok, e)) in tokens.iter().enumerate() {
        let after_name = i > 0 && matches!(tokens[i - 1].1, Tok::ClassTemplateName(_));
        match tok {
            Tok::Lt if after_name => {
                depth += 1;
                lists.push(depth);
            }
            Tok::Gt if lists.last() == Some(&depth) => {
                lists.pop();
                depth -= 1;
            }
            Tok::LParen | Tok::LBracket | Tok::LBrace | Tok::LaunchOpen => depth += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace | Tok::LaunchClose => {
                while lists.last() == Some(&depth) {
                    lists.pop();
                    depth -= 1;
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Semi => {
                depth -= lists.len().min(depth);
                lists.clear();
            }
            _ => {}
        }
        if depth > super::MAX_NESTING {
            return Some(
                Diagnostic::new(Code::NestingTooDeep, Span::new(*s, *e), "nesting too deep")
                    .with_primary_message(format!("brackets and template arguments nest more than {} levels deep here", super::MAX_NESTING))
                    .with_note("parentheses, brackets, braces and template argument lists together may nest at most 256 deep"),
            );
        }
    }
    None
}

/// The name of the class template `tokens` define: `template <...> struct|class Name [: base] {`.
pub(super) fn class_template_name(tokens: &[Spanned]) -> Option<String> {
    if tokens.len() < 2 || !(is_word(&tokens[0].1, "template") || matches!(tokens[0].1, Tok::Template)) || !matches!(tokens[1].1, Tok::Lt) {
        return None;
    }
    let close = header_end(tokens, 1, tokens.len());
    let key = tokens.get(close + 1)?;
    if !(matches!(key.1, Tok::Struct) || is_word(&key.1, "class")) {
        return None;
    }
    let name = match &tokens.get(close + 2)?.1 {
        Tok::Ident(n) | Tok::TypeIdent(n) | Tok::ClassTemplateName(n) if !n.contains("::") => n.clone(),
        _ => return None,
    };
    tokens[close + 3..].iter().any(|t| matches!(t.1, Tok::LBrace)).then_some(name)
}

/// Where the class name of an out-of-class member of a class template stands in `tokens`
/// (`template <class T> __device__ T Buf<T>::f() { ... }`): the index of `Buf`.
pub(super) fn member_of_class_template(tokens: &[Spanned], classes: &HashSet<String>) -> Option<usize> {
    let close = header_end(tokens, 1, tokens.len());
    let paren = tokens.iter().position(|t| matches!(t.1, Tok::LParen))?;
    (close + 1..paren).find(|&i| {
        let named = match &tokens[i].1 {
            Tok::Ident(n) | Tok::TypeIdent(n) | Tok::ClassTemplateName(n) => classes.contains(n.as_str()),
            _ => false,
        };
        named && matches!(tokens.get(i + 1).map(|t| &t.1), Some(Tok::Lt)) && {
            let end = header_end(tokens, i + 1, paren);
            matches!(tokens.get(end + 1).map(|t| &t.1), Some(Tok::ColonColon))
        }
    })
}

/// C++11's `>>` closing two template argument lists (`Buf<Buf<int, 2>>`): after the name of a
/// class template (written after `template <...> struct|class`, found by a scan of the tokens
/// before `split` sorts them) an argument list opens, and a `>>` while one is innermost becomes
/// two `>` tokens (and the lexer's `>>>` three). A shift inside parentheses (`Buf<(8 >> 1)>`) stays a shift.
pub(super) fn split_closing_shifts(tokens: &mut Vec<Spanned>) {
    if !tokens.iter().any(|t| matches!(t.1, Tok::Shr | Tok::LaunchClose)) {
        return;
    }
    let mut classes: HashSet<String> = HashSet::new();
    for i in 0..tokens.len() {
        if is_word(&tokens[i].1, "template") {
            let end = tokens.len().min(i + 4096);
            if let Some(name) = class_template_name(&tokens[i..end]) {
                classes.insert(name);
            }
        }
    }
    if classes.is_empty() {
        return;
    }
    let old = std::mem::take(tokens);
    let mut out = Vec::with_capacity(old.len());
    // true: a template argument list; false: a bracket.
    let mut stack: Vec<bool> = Vec::new();
    for (i, (s, tok, e)) in old.iter().cloned().enumerate() {
        match &tok {
            Tok::Lt if i > 0 && matches!(&old[i - 1].1, Tok::Ident(n) | Tok::TypeIdent(n) if classes.contains(n.rsplit("::").next().unwrap_or(n))) => stack.push(true),
            Tok::LParen | Tok::LBracket | Tok::LBrace => stack.push(false),
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                while stack.pop() == Some(true) {}
            }
            Tok::Gt if stack.last() == Some(&true) => {
                stack.pop();
            }
            Tok::Shr if stack.last() == Some(&true) => {
                stack.pop();
                if stack.last() == Some(&true) {
                    stack.pop();
                }
                out.push((s, Tok::Gt, s + 1));
                out.push((s + 1, Tok::Gt, e));
                continue;
            }
            // `Buf<Buf<Buf<int>>>`: the lexer's `>>>` closes three lists.
            Tok::LaunchClose if stack.last() == Some(&true) => {
                for k in 0..3 {
                    if stack.last() == Some(&true) {
                        stack.pop();
                    }
                    out.push((s + k, Tok::Gt, (s + k + 1).min(e)));
                }
                continue;
            }
            Tok::Semi => stack.clear(),
            _ => {}
        }
        out.push((s, tok, e));
    }
    *tokens = out;
}

fn is_word(tok: &Tok, word: &str) -> bool {
    matches!(tok, Tok::Ident(name) if name == word)
}

/// The index of the `>` closing the template header opened at `open` (or `end`).
pub(super) fn header_end(tokens: &[Spanned], open: usize, end: usize) -> usize {
    let mut depth = 0usize;
    for (i, (_, tok, _)) in tokens.iter().enumerate().take(end).skip(open) {
        match tok {
            Tok::Lt | Tok::LParen | Tok::LBracket => depth += 1,
            Tok::Gt | Tok::RParen | Tok::RBracket => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i;
                }
            }
            Tok::Shr if depth <= 2 => return i,
            Tok::LBrace | Tok::Semi => return i,
            _ => {}
        }
    }
    end
}

/// The names declared by `typename X` and `class X` in a template header's tokens.
fn type_params(header: &[Spanned]) -> HashSet<String> {
    header
        .windows(2)
        .filter_map(|pair| match (&pair[0].1, &pair[1].1) {
            (key, Tok::Ident(name) | Tok::TypeIdent(name)) if is_word(key, "typename") || is_word(key, "class") => Some(name.clone()),
            _ => None,
        })
        .collect()
}
