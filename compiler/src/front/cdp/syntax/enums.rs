//! **Where enum definitions are read.** `enum Mode { Fast, Slow = 5 };`, `enum Dir : unsigned
//! char { Up, Down };` and an anonymous `enum { A, B };` at file scope become an
//! [`ast::EnumDef`]: the name, the underlying type as written and each enumerator with its
//! value's expression (a scoped `enum class` is C++, refused first by `cuda_cxx.rs`). The grammar never sees them: the
//! underlying type and each value are parsed as the type and the initializer of a synthetic
//! declaration (`base __cdpc_enum = value;`), so they are the grammar's types and expressions.
//! Sema gives the values (`sema::enums`).

use super::ast;
use super::lexer::{Spanned, Tok};
use super::structs::{span_of, word};
use crate::diag::{Code, Diagnostic, Span};

/// Whether `tokens` (one top-level declaration) define an enum: `enum ... { ... } ;`, or C's
/// `typedef enum [Tag] { ... } Name;`.
pub(super) fn is_enum_definition(tokens: &[Spanned]) -> bool {
    let typedef = matches!(tokens.first().map(|t| &t.1), Some(Tok::Typedef));
    let body_end = if typedef { 3 } else { 2 };
    tokens.get(usize::from(typedef)).and_then(|t| word(&t.1)) == Some("enum")
        && tokens.iter().any(|t| matches!(t.1, Tok::LBrace))
        && matches!(tokens.last().map(|t| &t.1), Some(Tok::Semi))
        && tokens.len() > body_end
        && matches!(tokens[tokens.len() - body_end].1, Tok::RBrace)
        && (!typedef || word(&tokens[tokens.len() - 2].1).is_some())
}

fn unsupported(at: Span, what: &str) -> Diagnostic {
    Diagnostic::new(Code::SyntaxError, at, format!("{what} does not parse as an enum definition"))
}

/// Reads the enum definition `tokens` (checked by [`is_enum_definition`]); `parse` parses a
/// token run as a translation unit.
pub(super) fn parse_enum(tokens: &[Spanned], parse: impl Fn(&[Spanned]) -> Result<ast::TranslationUnit, (Diagnostic, Vec<Diagnostic>)>) -> Result<ast::EnumDef, Diagnostic> {
    let span = Span::new(tokens[0].0, tokens[tokens.len() - 1].2);
    let open = tokens.iter().position(|t| matches!(t.1, Tok::LBrace)).expect("checked");
    // `typedef enum [Tag] { ... } Name;`: the enum is named `Tag`, or `Name` when it has no tag
    // (C++ names it by its typedef for linkage, as nvcc's symbols show), and `Name` is an alias.
    let typedef_name = matches!(tokens[0].1, Tok::Typedef).then(|| {
        let t = &tokens[tokens.len() - 2];
        ast::Ident { name: word(&t.1).unwrap_or_default().to_string(), span: span_of(t) }
    });
    let tokens = if typedef_name.is_some() { &tokens[1..tokens.len() - 1] } else { tokens };
    let open = open - usize::from(typedef_name.is_some());
    let mut i = 1;
    let name = match tokens.get(i) {
        Some(t) if i < open => match word(&t.1) {
            Some(n) => {
                i += 1;
                Some(ast::Ident { name: n.to_string(), span: span_of(t) })
            }
            None => None,
        },
        _ => None,
    };
    // `: base`
    let base = if i < open && matches!(tokens[i].1, Tok::Colon) {
        let base_tokens = &tokens[i + 1..open];
        if base_tokens.is_empty() {
            return Err(unsupported(span_of(&tokens[i]), "`:` without a type"));
        }
        let decl = synthetic(base_tokens, None, &tokens[i], &parse)?;
        Some(decl.spec)
    } else if i < open {
        return Err(unsupported(span_of(&tokens[i]), "this"));
    } else {
        None
    };
    // the `}` before `;` (or before the typedef's name, the slice's last token)
    let close = tokens.len() - 2;
    let mut enumerators = Vec::new();
    let body = &tokens[open + 1..close];
    let mut start = 0;
    let mut depth = 0usize;
    let mut pieces: Vec<&[Spanned]> = Vec::new();
    for (k, t) in body.iter().enumerate() {
        match t.1 {
            Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace => depth = depth.saturating_sub(1),
            Tok::Comma if depth == 0 => {
                pieces.push(&body[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    pieces.push(&body[start..]);
    for (n, piece) in pieces.iter().enumerate() {
        if piece.is_empty() {
            // a trailing comma
            if n + 1 == pieces.len() && n > 0 {
                continue;
            }
            return Err(unsupported(span, "an empty enumerator"));
        }
        let Some(id) = word(&piece[0].1) else {
            return Err(unsupported(span_of(&piece[0]), "this enumerator"));
        };
        let ident = ast::Ident { name: id.to_string(), span: span_of(&piece[0]) };
        let value = match piece.get(1).map(|t| &t.1) {
            None => None,
            Some(Tok::Assign) if piece.len() > 2 => {
                let int = (piece[1].0, Tok::TypeKw(super::lexer::TypeKw::Int), piece[1].2);
                let decl = synthetic(&[int], Some(&piece[2..]), &piece[1], &parse)?;
                match decl.declarators.into_iter().next().and_then(|d| d.init) {
                    Some(ast::Initializer::Expr(e)) => Some(e),
                    _ => return Err(unsupported(span_of(&piece[1]), "this value")),
                }
            }
            Some(_) => return Err(unsupported(span_of(&piece[1]), "this enumerator")),
        };
        enumerators.push(ast::Enumerator { name: ident, value });
    }
    let tagless = name.is_none() && typedef_name.is_some();
    let (name, alias) = match (name, typedef_name) {
        (None, typedef) => (typedef, None),
        (Some(tag), typedef) => (Some(tag), typedef),
    };
    Ok(ast::EnumDef { name, alias, tagless, base, enumerators, span })
}

/// Parses `spec __cdpc_enum [= value];` and gives its declaration.
fn synthetic(
    spec: &[Spanned],
    value: Option<&[Spanned]>,
    at: &Spanned,
    parse: &impl Fn(&[Spanned]) -> Result<ast::TranslationUnit, (Diagnostic, Vec<Diagnostic>)>,
) -> Result<ast::DeclStmt, Diagnostic> {
    let mut toks: Vec<Spanned> = spec.to_vec();
    toks.push((at.0, Tok::Ident("__cdpc_enum".into()), at.2));
    if let Some(value) = value {
        toks.push((at.0, Tok::Assign, at.2));
        toks.extend_from_slice(value);
    }
    toks.push((at.2, Tok::Semi, at.2));
    let unit = parse(&toks).map_err(|(d, _)| d)?;
    match unit.items.into_iter().next() {
        Some(ast::Item::Global(decl)) => Ok(decl),
        _ => Err(unsupported(span_of(at), "this")),
    }
}
