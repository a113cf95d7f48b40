//! **Where qualified names are formed.** C++ names a member of a class or namespace as
//! `Graph::getOutDegree` or `N::M::f`. Before `split` and the grammar see the tokens, each run
//! `name :: name (:: name)*` becomes one name token whose text is the whole qualified name and
//! whose span covers it. The grammar then needs no productions for nested names: a qualified
//! function definition is a definition whose name contains `::`, a qualified call is a call of
//! such a name, and sema (`sema::scope`) resolves the components.
//!
//! A leading `::` names the global scope: `::x` and `::N::f` become one name token each, with
//! the `::` kept (`sema::scope` looks such a name up at file scope only). A `::` after a name
//! or a closing `>` that does not start a name of its own (`A::~A`, `A<int>::f`) is left alone;
//! the grammar has no use for it, so in device code it is a syntax error, while host code,
//! which is never parsed, may use it freely.

use super::lexer::{Spanned, Tok};
use super::members::word;

/// Joins qualified names in place.
pub(super) fn join(tokens: &mut Vec<Spanned>) {
    if !tokens.iter().any(|t| matches!(t.1, Tok::ColonColon)) {
        return;
    }
    let old = std::mem::take(tokens);
    let mut out: Vec<Spanned> = Vec::with_capacity(old.len());
    let mut i = 0;
    while i < old.len() {
        let (start, tok, mut end) = old[i].clone();
        // `::name` at the start of a name: after neither a name nor a template's `>`.
        let global = matches!(tok, Tok::ColonColon)
            && old.get(i + 1).is_some_and(|t| word(&t.1).is_some())
            && !out.last().is_some_and(|t| word(&t.1).is_some() || matches!(t.1, Tok::Gt | Tok::Shr));
        let (mut text, mut last_is_type, mut j) = if global {
            let next = &old[i + 1];
            end = next.2;
            (format!("::{}", word(&next.1).unwrap_or_default()), matches!(next.1, Tok::TypeIdent(_)), i + 2)
        } else {
            let Some(first) = word(&tok) else {
                out.push((start, tok, end));
                i += 1;
                continue;
            };
            (first.to_string(), false, i + 1)
        };
        while j + 1 < old.len() && matches!(old[j].1, Tok::ColonColon) {
            let Some(next) = word(&old[j + 1].1) else { break };
            text.push_str("::");
            text.push_str(next);
            last_is_type = matches!(old[j + 1].1, Tok::TypeIdent(_));
            end = old[j + 1].2;
            j += 2;
        }
        if j == i + 1 && !global {
            out.push((start, tok, end));
        } else if last_is_type {
            out.push((start, Tok::TypeIdent(text), end));
        } else {
            out.push((start, Tok::Ident(text), end));
        }
        i = j;
    }
    *tokens = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        let (mut tokens, _) = super::super::lexer::lex(source);
        join(&mut tokens);
        tokens.iter().map(|(s, _, e)| source[*s..*e].to_string()).collect()
    }

    #[test]
    fn joins_nested_names() {
        assert_eq!(texts("N::M::f(x)"), ["N::M::f", "(", "x", ")"]);
        assert_eq!(texts("unsigned Graph::deg()"), ["unsigned", "Graph::deg", "(", ")"]);
    }

    #[test]
    fn leaves_other_colons() {
        assert_eq!(texts("a ? b : c"), ["a", "?", "b", ":", "c"]);
        assert_eq!(texts("A::~A"), ["A", "::", "~", "A"]);
        assert_eq!(texts("A<int>::f"), ["A", "<", "int", ">", "::", "f"]);
    }

    #[test]
    fn joins_names_of_the_global_scope() {
        assert_eq!(texts("::f(); a ? ::b : ::N::c"), ["::f", "(", ")", ";", "a", "?", "::b", ":", "::N::c"]);
        assert_eq!(texts("x = ::y;"), ["x", "=", "::y", ";"]);
    }
}
