//! **Where struct and union heads are read.** The grammar knows `struct Name { fields };`;
//! a top-level struct or union definition with more to it comes here first, and the parser
//! gets one plain `struct Name { fields };` (original tokens and spans) plus what the head and
//! the tail said:
//!
//! - CUDA's `__align__(N)` in the head (`struct __align__(16) V { ... };`, as `vector_types.h`
//!   writes it), into [`ast::StructDef::align`];
//! - `typedef struct [Tag] { ... } Name;`: an anonymous struct takes the typedef's name (and is
//!   marked [`ast::StructDef::tagless`], since C code names it `Name`, never `struct Name`), and a
//!   tagged one gets the typedef as a second name;
//! - an `enum { ... } member;` data member, laid out as its underlying type.
//!
//! What the kernel language does not support yet (a nested type, a `static` member, a
//! declarator after the body, `struct S { ... } s;`) makes the struct fail to parse, `E0007`,
//! reported like any tentative declaration's error only if device code uses it. C++'s class
//! bodies (member functions, bases, access specifiers) never get here: `cuda_cxx.rs` refuses
//! them first (`E0923`).

use super::ast::{self, Ident};
use super::lexer::{Spanned, Tok, TypeKw};
use crate::diag::{Code, Diagnostic, Span};

/// The text of a name token (an identifier or a type name).
pub(super) fn word(tok: &Tok) -> Option<&str> {
    match tok {
        Tok::Ident(n) | Tok::TypeIdent(n) => Some(n),
        _ => None,
    }
}

pub(super) fn span_of(t: &Spanned) -> Span {
    Span::new(t.0, t.2)
}

fn unsupported(at: Span, what: &str, note: &str) -> Diagnostic {
    Diagnostic::new(Code::UnsupportedSyntax, at, format!("{what} in a struct is not supported by the kernel language")).with_primary_message("here").with_note(note.to_string())
}

/// Whether `tokens` (one top-level declaration) is a struct or union definition with a body:
/// `[typedef] struct|union [head] { ... } [Name] ;`.
pub(super) fn is_struct_definition(tokens: &[Spanned]) -> bool {
    let key = if matches!(tokens.first().map(|t| &t.1), Some(Tok::Typedef)) { 1 } else { 0 };
    matches!(tokens.get(key).map(|t| &t.1), Some(Tok::Struct | Tok::Union)) && tokens.iter().any(|t| matches!(t.1, Tok::LBrace))
}

/// Reads the struct definition `tokens` and parses it as the grammar's plain form: the struct
/// and, for `typedef struct A { ... } B;`, the typedef `B`. The error is the first one found:
/// the struct is then left unparsed, like any tentative declaration that does not parse.
pub(super) fn parse_struct(tokens: &[Spanned], parse: impl Fn(&[Spanned]) -> Result<ast::TranslationUnit, (Diagnostic, Vec<Diagnostic>)>) -> Result<Vec<ast::Item>, Diagnostic> {
    let typedef = matches!(tokens[0].1, Tok::Typedef);
    let key = if typedef { 1 } else { 0 };
    let brace = tokens.iter().position(|t| matches!(t.1, Tok::LBrace)).expect("a struct definition has a body");
    let close = matching_brace(tokens, brace).ok_or_else(|| unsupported(span_of(&tokens[brace]), "an unclosed body", "close the struct body"))?;
    // The head: `__align__(N)`, then the name.
    let (align, head) = align_attribute(&tokens[key + 1..brace])?;
    let mut name = match head.as_slice() {
        [] => None,
        [(s, n, e)] if word(n).is_some() => Some(Ident { name: word(n).unwrap().to_string(), span: Span::new(*s, *e) }),
        _ => return Err(unsupported(span_of(&head[0]), "this head", "write `struct Name { ... };`")),
    };
    // The tail: `;` or, after `typedef`, the new name and `;`.
    let tail = &tokens[close + 1..];
    // `typedef struct A { ... } B;`: the struct is `A`, and `B` a typedef of it.
    let mut other_name: Option<Ident> = None;
    let tagless = name.is_none();
    match tail {
        [(_, Tok::Semi, _)] | [] if !typedef => {}
        [(s, n, e), (_, Tok::Semi, _)] if typedef && word(n).is_some() => {
            let alias = Ident { name: word(n).unwrap().to_string(), span: Span::new(*s, *e) };
            match &name {
                None => name = Some(alias),
                Some(n) if n.name == alias.name => {}
                Some(_) => other_name = Some(alias),
            }
        }
        _ => {
            let at = tail.first().map(span_of).unwrap_or(span_of(&tokens[close]));
            return Err(unsupported(at, "a declarator after the body", "declare the struct, then its variables"));
        }
    }
    let Some(name) = name else {
        return Err(unsupported(span_of(&tokens[key]), "an anonymous struct", "give the struct a name, or a `typedef` one"));
    };
    let mut fields: Vec<Spanned> = Vec::new();
    for member in members(&tokens[brace + 1..close]) {
        let at = span_of(&member[0]);
        match &member[0].1 {
            t if word(t) == Some("enum") => fields.extend(enum_member(member)?),
            Tok::Qual(_) => return Err(unsupported(at, "a static data member", "use a `__device__` variable at file scope")),
            Tok::Typedef => return Err(unsupported(at, "a nested type", "declare the type before the struct")),
            Tok::Struct | Tok::Union if member.iter().any(|t| matches!(t.1, Tok::LBrace)) => return Err(unsupported(at, "a nested type", "declare the type before the struct")),
            _ => fields.extend_from_slice(member),
        }
    }
    // `struct Name { fields };` (`union Name { fields };` for a union)
    let key_tok = &tokens[key];
    let mut synthetic: Vec<Spanned> = vec![key_tok.clone()];
    synthetic.push((name.span.start as usize, Tok::TypeIdent(name.name.clone()), name.span.end as usize));
    synthetic.push(tokens[brace].clone());
    synthetic.extend(fields);
    synthetic.push(tokens[close].clone());
    let semi_at = tokens.last().map(|t| (t.0, t.2)).unwrap_or((tokens[close].2, tokens[close].2));
    synthetic.push((semi_at.0, Tok::Semi, semi_at.1));
    let whole = Span::new(tokens[0].0, tokens[tokens.len() - 1].2);
    let mut items = parse(&synthetic).map_err(|(e, _)| e)?.items;
    for item in &mut items {
        if let ast::Item::Struct(s) = item {
            s.align = align;
            s.tagless = tagless;
            s.span = whole;
        }
    }
    if let Some(alias) = other_name {
        let spec = ast::TypeSpec { kind: ast::TypeSpecKind::Struct(name.clone()), is_const: false, is_volatile: false, span: name.span };
        let ty = ast::TypeName { spec, pointers: Vec::new(), span: name.span };
        items.push(ast::Item::Typedef(ast::TypedefDef { name: alias, ty, function: None, span: whole }));
    }
    Ok(items)
}

/// The member declarations of a body: each up to its `;` at the top level (brackets balanced).
fn members(body: &[Spanned]) -> impl Iterator<Item = &[Spanned]> {
    let mut depth = 0usize;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, t) in body.iter().enumerate() {
        match t.1 {
            Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace => depth = depth.saturating_sub(1),
            Tok::Semi if depth == 0 => {
                out.push(&body[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < body.len() {
        out.push(&body[start..]);
    }
    out.into_iter()
}

/// CUDA's `__align__(N)` in a struct head (`typedef struct __align__(128) Name { ... }`, as
/// `vector_types.h` and the samples write it): N, an integer literal after preprocessing, and
/// the head without it. Sema checks that N is a power of two.
fn align_attribute(head: &[Spanned]) -> Result<(Option<(u64, Span)>, Vec<Spanned>), Diagnostic> {
    let Some(at) = head.iter().position(|t| word(&t.1) == Some("__align__")) else { return Ok((None, head.to_vec())) };
    match &head[at + 1..] {
        [(_, Tok::LParen, _), (_, Tok::Int(lit), _), (_, Tok::RParen, e), ..] => {
            let span = Span::new(head[at].0, *e);
            let rest: Vec<Spanned> = head[..at].iter().chain(&head[at + 4..]).cloned().collect();
            Ok((Some((lit.value, span)), rest))
        }
        _ => Err(unsupported(span_of(&head[at]), "an `__align__` without an integer literal", "write `__align__(16)`, a power of two")),
    }
}

fn matching_brace(tokens: &[Spanned], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        match t.1 {
            Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `enum { A, B } memory;` as a data member: its enumerators are not visible to device code
/// yet, but the member is laid out as the enum's underlying type, which for an enum without a
/// fixed type whose enumerators fit is `unsigned int` (no negative enumerator) or `int`, as
/// clang and nvcc choose it (4 bytes either way).
fn enum_member(toks: &[Spanned]) -> Result<Vec<Spanned>, Diagnostic> {
    let open = toks.iter().position(|t| matches!(t.1, Tok::LBrace));
    let close = open.and_then(|o| matching_brace(toks, o));
    let (Some(open), Some(close)) = (open, close) else {
        return Err(unsupported(span_of(&toks[0]), "this enum member", "declare the enum before the struct"));
    };
    let signed = toks[open..close].iter().any(|t| matches!(t.1, Tok::Minus));
    let at = (toks[0].0, toks[open - 1].2);
    let mut out = Vec::new();
    if !signed {
        out.push((at.0, Tok::TypeKw(TypeKw::Unsigned), at.1));
    }
    out.push((at.0, Tok::TypeKw(TypeKw::Int), at.1));
    if toks.get(close + 1).is_none_or(|t| word(&t.1).is_none()) {
        return Err(unsupported(span_of(&toks[0]), "an enum without a member name", "declare the enum before the struct"));
    }
    out.extend_from_slice(&toks[close + 1..]);
    Ok(out)
}
