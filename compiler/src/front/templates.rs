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
//! The names are marked in host code too: `host_mentions.rs` finds host code's mentions of
//! device templates (`k<128><<<...>>>` in `main`) by them, and `explicit_instances.rs` the
//! explicit instantiations.
//!
//! The grammar's productions for templates are grouped under "Templates" in `grammar.lalrpop`;
//! instantiation is sema's (`crate::sema::templates`).

use super::lexer::{Spanned, Tok};
use super::split::{Chunk, Class};
use std::collections::HashSet;

/// Marks the tokens of device function templates as described in the module docs.
pub(super) fn mark(tokens: &mut [Spanned], chunks: &[Chunk]) {
    let mut names: HashSet<String> = HashSet::new();
    for chunk in chunks {
        let range = chunk.tokens.clone();
        if chunk.class != Class::Device || range.len() < 2 || !is_word(&tokens[range.start].1, "template") {
            continue;
        }
        if !matches!(tokens[range.start + 1].1, Tok::Lt) {
            continue; // not a template head the grammar knows; it reports the syntax error
        }
        tokens[range.start].1 = Tok::Template;
        let close = header_end(tokens, range.start + 1, range.end);
        let params = type_params(&tokens[range.start + 2..close]);
        for (_, tok, _) in &mut tokens[range.clone()] {
            if let Tok::Ident(name) = tok {
                if params.contains(name.as_str()) {
                    *tok = Tok::TypeIdent(std::mem::take(name));
                }
            }
        }
        names.extend(chunk.names.iter().map(|n| n.name.clone()));
    }
    if names.is_empty() {
        return;
    }
    for (_, tok, _) in tokens.iter_mut() {
        if let Tok::Ident(name) = tok {
            // A qualified name (`N::f`, `alias::f`, joined by `qualified::join`) is marked by its
            // last component: which namespace it names is sema's look-up.
            let last = name.rsplit("::").next().unwrap_or(name);
            if names.contains(last) {
                *tok = Tok::TemplateName(std::mem::take(name));
            }
        }
    }
}

fn is_word(tok: &Tok, word: &str) -> bool {
    matches!(tok, Tok::Ident(name) if name == word)
}

/// The index of the `>` closing the template header opened at `open` (or `end`).
fn header_end(tokens: &[Spanned], open: usize, end: usize) -> usize {
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
