//! **Where function-pointer declarators are recognised.** In `int (*op)(int) = add1;` the `(`
//! after the return type opens a declarator, while in `int(x)` or `dim3(*p)` it opens a
//! functional cast's arguments: the grammar cannot tell them apart in one token of lookahead. This
//! pass finds the declarator's shape, a type word, then `(`, one or more `*`, an optional name,
//! array dimensions, `)` and a parameter list's `(`, and makes that first `(` a
//! [`Tok::FnPtrOpen`]. A `typedef` of that shape declares a type name, which becomes a
//! [`Tok::TypeIdent`] everywhere (`typedef int (*binop)(int, int);`), before `split` sorts the
//! declarations (`mark_typedef_names`); the `(`s are marked in each declaration just before the
//! grammar parses it (`mark_declarators`, from `parse_chunk`), when every type name is known,
//! so that every other pass sees a bracket that its `)` closes.
//!
//! With these tokens the grammar also reads casts to abstract function-pointer types, `(int
//! (*)(int))p`, and launches through an expression, `table[i]<<<...>>>`, `(*k)<<<...>>>`,
//! `s.k<<<...>>>`, as `ast::ExprKind::LaunchThrough`, which sema's `launch.rs` checks.

use super::lexer::{Spanned, Tok};

/// Where the declarator whose `(` is at `open` ends (the index of its parameter list's `(`)
/// and the index of its name, if it has one; `None` when `open` starts no such declarator.
fn declarator_at(tokens: &[Spanned], open: usize) -> Option<(usize, Option<usize>)> {
    let tok = |i: usize| tokens.get(i).map(|t| &t.1);
    let mut i = open + 1;
    if !matches!(tok(i), Some(Tok::Star)) {
        return None;
    }
    while matches!(tok(i), Some(Tok::Star | Tok::Const | Tok::Volatile)) {
        i += 1;
    }
    let name = matches!(tok(i), Some(Tok::Ident(_) | Tok::TypeIdent(_))).then_some(i);
    if name.is_some() {
        i += 1;
    }
    while matches!(tok(i), Some(Tok::LBracket)) {
        let mut depth = 0usize;
        loop {
            match tok(i)? {
                Tok::LBracket => depth += 1,
                Tok::RBracket => depth -= 1,
                _ => {}
            }
            i += 1;
            if depth == 0 {
                break;
            }
        }
    }
    (matches!(tok(i), Some(Tok::RParen)) && matches!(tok(i + 1), Some(Tok::LParen))).then_some((i + 1, name))
}

/// Whether the tokens before `open` end in a type (`int`, `S`, `unsigned *const`): what comes
/// before a declarator, never before an expression's `(`.
fn after_type(tokens: &[Spanned], open: usize) -> bool {
    let mut i = open;
    while i > 0 && matches!(tokens[i - 1].1, Tok::Star | Tok::Const | Tok::Volatile) {
        i -= 1;
    }
    i > 0 && matches!(tokens[i - 1].1, Tok::TypeKw(_) | Tok::TypeIdent(_))
}

/// Makes the name of each `typedef ret (*name)(params);` a type name in the whole file.
pub(super) fn mark_typedef_names(tokens: &mut [Spanned]) {
    let mut names = std::collections::HashSet::new();
    let mut in_typedef = false;
    for i in 0..tokens.len() {
        match &tokens[i].1 {
            Tok::Typedef => in_typedef = true,
            Tok::Semi | Tok::LBrace | Tok::RBrace => in_typedef = false,
            Tok::LParen if in_typedef => {
                if let Some((_, Some(name))) = declarator_at(tokens, i) {
                    if let Tok::Ident(n) = &tokens[name].1 {
                        names.insert(n.clone());
                    }
                }
            }
            _ => {}
        }
    }
    if names.is_empty() {
        return;
    }
    for (_, tok, _) in tokens.iter_mut() {
        if let Tok::Ident(name) = tok {
            if names.contains(name.as_str()) {
                *tok = Tok::TypeIdent(std::mem::take(name));
            }
        }
    }
}

/// Marks the `(` that opens each function-pointer declarator.
pub(super) fn mark_declarators(tokens: &mut [Spanned]) {
    for i in 0..tokens.len() {
        if matches!(tokens[i].1, Tok::LParen) && after_type(tokens, i) && declarator_at(tokens, i).is_some() {
            tokens[i].1 = Tok::FnPtrOpen;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(source: &str) -> Vec<Tok> {
        let (mut tokens, _) = super::super::lexer::lex(source);
        mark_typedef_names(&mut tokens);
        mark_declarators(&mut tokens);
        tokens.into_iter().map(|(_, t, _)| t).collect()
    }

    #[test]
    fn declarators_are_marked() {
        assert_eq!(marked("int (*op)(int);")[1], Tok::FnPtrOpen);
        assert_eq!(marked("int *(*ops[4])(int);")[2], Tok::FnPtrOpen);
        assert_eq!(marked("void f(int (*)(int));")[4], Tok::FnPtrOpen);
        let t = marked("typedef int (*binop)(int, int); binop b;");
        assert_eq!(t[2], Tok::FnPtrOpen);
        assert_eq!(t[4], Tok::TypeIdent("binop".into()));
        assert_eq!(t[12], Tok::TypeIdent("binop".into()));
    }

    #[test]
    fn expressions_are_left_alone() {
        // A product, a call through a dereferenced pointer, a call of a call's result.
        for source in ["x = a * (*p)(3);", "y = (*p)(3);", "f(*p)(3);", "int(x);"] {
            assert!(!marked(source).contains(&Tok::FnPtrOpen), "{source}");
        }
    }
}
