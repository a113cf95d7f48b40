//! **Where class bodies are cut apart.** A C++ class (`struct` or `class`) holds data members
//! and member functions, host and device ones mixed, with access specifiers between them. The
//! grammar only knows C's `struct S { fields };`, so this module takes a class definition's
//! tokens and gives the parser:
//!
//! - one synthetic `struct Name { data members };` (original tokens and spans; `class`
//!   becomes `struct`, `public:`/`private:`/`protected:` are dropped, the base class is
//!   remembered in [`ast::StructDef::base`]);
//! - each member function on its own, sorted by `split`'s rules as if it stood at file scope:
//!   host-only members (no `__device__`) are skipped unparsed, like host functions, and named
//!   `Class::member` for the diagnostic when device code calls one; `__device__` and
//!   `__host__ __device__` members are parsed and renamed `Class::member`
//!   ([`ast::FunctionDef::in_class`] set).
//!
//! Access specifiers are not enforced (nvcc does enforce them: cdpc accepts a program that
//! reads a private member where nvcc would refuse it). What is not supported yet (nested types,
//! static data members, several or virtual bases, virtual functions, device destructors) makes
//! the class fail to parse, so like any tentative declaration it is reported (`E0920`, through
//! `E0901`) only if device code uses it.

use super::ast::{self, Ident};
use super::lexer::{Spanned, Tok, TypeKw};
use super::split;
use crate::diag::{Code, Diagnostic, Span};

/// A class definition, parsed.
pub(super) struct Class {
    pub items: Vec<ast::Item>,
    /// Host-only members, named `Class::member`.
    pub skipped: Vec<ast::Skipped>,
    /// Warnings and other non-error diagnostics of the parsed parts.
    pub diags: Vec<Diagnostic>,
    /// `static const int size = 4;` (`static constexpr`, read as `const` in a class template):
    /// constant data members, which only class templates take (`refuse_statics`).
    pub statics: Vec<ast::DeclStmt>,
}

/// A class other than a class template's may not have static data members yet.
pub(super) fn refuse_statics(class: Class) -> Result<Class, Diagnostic> {
    match class.statics.first() {
        Some(decl) => Err(unsupported(decl.span, "a static data member", "use a `__device__` variable at file scope")),
        None => Ok(class),
    }
}

/// The text of a name token (an identifier or a type name).
pub(super) fn word(tok: &Tok) -> Option<&str> {
    match tok {
        Tok::Ident(n) | Tok::TypeIdent(n) => Some(n),
        _ => None,
    }
}

fn is_access(tok: &Tok) -> bool {
    matches!(word(tok), Some("public" | "private" | "protected"))
}

pub(super) fn span_of(t: &Spanned) -> Span {
    Span::new(t.0, t.2)
}

fn unsupported(at: Span, what: &str, note: &str) -> Diagnostic {
    Diagnostic::new(Code::CxxUnsupported, at, format!("{what} in a class is not supported yet"))
        .with_primary_message("here")
        .with_note(note.to_string())
}

/// Whether `tokens` (one top-level declaration) is a class definition with a body that this
/// module handles: `[typedef] struct|class [Name] [: base] { ... } [Name] ;`.
pub(super) fn is_class_definition(tokens: &[Spanned]) -> bool {
    let mut i = 0;
    if matches!(tokens.first().map(|t| &t.1), Some(Tok::Typedef)) {
        i = 1;
    }
    let key = tokens.get(i).map(|t| &t.1);
    (matches!(key, Some(Tok::Struct | Tok::Union)) || key.and_then(word) == Some("class"))
        && tokens.iter().any(|t| matches!(t.1, Tok::LBrace))
}

/// Cuts the class definition `tokens` apart and parses its pieces. The error is the first one
/// found: the class is then left unparsed, like any tentative declaration that does not parse.
pub(super) fn parse_class(tokens: &[Spanned], parse: impl Fn(&[Spanned]) -> Result<ast::TranslationUnit, (Diagnostic, Vec<Diagnostic>)>) -> Result<Class, Diagnostic> {
    let typedef = matches!(tokens[0].1, Tok::Typedef);
    let key = if typedef { 1 } else { 0 };
    let brace = tokens.iter().position(|t| matches!(t.1, Tok::LBrace)).expect("a class definition has a body");
    let close = matching_brace(tokens, brace).ok_or_else(|| unsupported(span_of(&tokens[brace]), "an unclosed body", "close the class body"))?;
    // The head: `__align__(N)`, then name and base.
    let (align, head) = align_attribute(&tokens[key + 1..brace])?;
    let head = &head[..];
    let (mut name, base) = match head {
        [] => (None, None),
        [(s, n, e)] if word(n).is_some() => (Some(Ident { name: word(n).unwrap().to_string(), span: Span::new(*s, *e) }), None),
        [(s, n, e), (_, Tok::Colon, _), rest @ ..] if word(n).is_some() => {
            let bases: Vec<&Spanned> = rest.iter().filter(|t| !matches!(word(&t.1), Some("public" | "private" | "protected" | "virtual"))).collect();
            match bases.as_slice() {
                [(bs, b, be)] if word(b).is_some() => (
                    Some(Ident { name: word(n).unwrap().to_string(), span: Span::new(*s, *e) }),
                    Some(Ident { name: word(b).unwrap().to_string(), span: Span::new(*bs, *be) }),
                ),
                _ => return Err(unsupported(span_of(&head[1]), "more than one base class, or a virtual one,", "derive from one class")),
            }
        }
        _ => return Err(unsupported(span_of(&head[0]), "this class head", "write `struct Name { ... };` or `struct Name : Base { ... };`")),
    };
    // The tail: `;` or, after `typedef`, the new name and `;`.
    let tail = &tokens[close + 1..];
    // `typedef struct A { ... } B;`: the class is `A`, and `B` a typedef of it.
    let mut other_name: Option<Ident> = None;
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
            return Err(unsupported(at, "a declarator after a class body", "declare the class, then its variables"));
        }
    }
    let Some(name) = name else {
        return Err(unsupported(span_of(&tokens[key]), "an anonymous class", "give the class a name"));
    };
    // The body without access specifiers.
    let mut body: Vec<Spanned> = Vec::new();
    let inner = &tokens[brace + 1..close];
    let mut i = 0;
    while i < inner.len() {
        if is_access(&inner[i].1) && matches!(inner.get(i + 1).map(|t| &t.1), Some(Tok::Colon)) {
            i += 2;
            continue;
        }
        body.push(inner[i].clone());
        i += 1;
    }
    let (chunks, _) = split::split(&body);
    let mut fields: Vec<Spanned> = Vec::new();
    let mut class = Class { items: Vec::new(), skipped: Vec::new(), diags: Vec::new(), statics: Vec::new() };
    for chunk in &chunks {
        let toks = &body[chunk.tokens.clone()];
        let at = span_of(&toks[0]);
        let whole = Span::new(toks[0].0, toks[toks.len() - 1].2);
        if let Some(v) = toks.iter().find(|t| word(&t.1) == Some("virtual")) {
            // A virtual function puts a vtable pointer in every object: a layout cdpc does not make.
            return Err(unsupported(span_of(v), "a virtual member function", "device code can use classes without virtual functions"));
        }
        if split::is_function(toks) {
            let declared = split::function_name(toks);
            let is_ctor = declared.as_deref() == Some(name.name.as_str()) || toks.iter().any(|t| matches!(t.1, Tok::Tilde));
            if let split::Class::Host(kind) = chunk.class {
                let names = chunk.names.iter().map(|n| Ident { name: format!("{}::{}", name.name, n.name), span: n.span }).collect();
                class.skipped.push(ast::Skipped { kind, names, span: whole, error: None });
                continue;
            }
            if is_ctor && toks.iter().any(|t| matches!(t.1, Tok::Tilde)) {
                // Run at the end of every object's life: refuse the class rather than skip it.
                return Err(unsupported(at, "a device destructor", "release what the object holds in device code explicitly"));
            }
            let unit = parse(toks).map_err(|(e, _)| e)?;
            for mut item in unit.items {
                if let ast::Item::Function(f) = &mut item {
                    f.name.name = format!("{}::{}", name.name, f.name.name);
                    f.in_class = true;
                }
                class.items.push(item);
            }
            continue;
        }
        // A data member.
        match toks.first().map(|t| &t.1) {
            Some(t) if word(t) == Some("enum") => fields.extend(enum_member(toks)?),
            Some(Tok::Qual(_)) if toks.iter().any(|t| matches!(t.1, Tok::Const)) && toks.iter().any(|t| matches!(t.1, Tok::Assign)) => {
                let unit = parse(toks).map_err(|(e, _)| e)?;
                match unit.items.into_iter().next() {
                    Some(ast::Item::Global(decl)) if decl.qualifiers.iter().any(|(q, _)| *q == ast::VarQualifier::Static) => class.statics.push(decl),
                    _ => return Err(unsupported(at, "this static data member", "write `static constexpr int name = value;`")),
                }
            }
            Some(Tok::Qual(_)) => return Err(unsupported(at, "a static data member", "use a `__device__` variable at file scope")),
            Some(Tok::Typedef) => return Err(unsupported(at, "a nested type", "declare the type before the class")),
            Some(Tok::Struct | Tok::Union) if toks.iter().any(|t| matches!(t.1, Tok::LBrace)) => {
                return Err(unsupported(at, "a nested type", "declare the type before the class"))
            }
            Some(t) if matches!(word(t), Some("class" | "using" | "template" | "friend")) => {
                return Err(unsupported(at, "this member", "declare it outside the class"))
            }
            _ => fields.extend_from_slice(toks),
        }
    }
    // `struct Name { fields };` (`union Name { fields };` for a union)
    let key_tok = &tokens[key];
    let key_kind = if matches!(key_tok.1, Tok::Union) { Tok::Union } else { Tok::Struct };
    let mut synthetic: Vec<Spanned> = vec![(key_tok.0, key_kind, key_tok.2)];
    synthetic.push((name.span.start as usize, Tok::TypeIdent(name.name.clone()), name.span.end as usize));
    synthetic.push(tokens[brace].clone());
    synthetic.extend(fields);
    synthetic.push(tokens[close].clone());
    let semi_at = tokens.last().map(|t| (t.0, t.2)).unwrap_or((tokens[close].2, tokens[close].2));
    synthetic.push((semi_at.0, Tok::Semi, semi_at.1));
    let unit = parse(&synthetic).map_err(|(e, _)| e)?;
    for mut item in unit.items {
        if let ast::Item::Struct(s) = &mut item {
            s.base = base.clone();
            s.align = align;
            s.span = Span::new(tokens[0].0, tokens[tokens.len() - 1].2);
        }
        class.items.insert(0, item);
    }
    if let Some(alias) = other_name {
        let spec = ast::TypeSpec { kind: ast::TypeSpecKind::Struct(name.clone()), is_const: false, is_volatile: false, span: name.span };
        let whole = Span::new(tokens[0].0, tokens[tokens.len() - 1].2);
        let ty = ast::TypeName { spec, pointers: Vec::new(), span: name.span };
        class.items.insert(1, ast::Item::Typedef(ast::TypedefDef { name: alias, ty, function: None, span: whole }));
    }
    Ok(class)
}

/// CUDA's `__align__(N)` in a class head (`typedef struct __align__(128) Name { ... }`, as
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
        return Err(unsupported(span_of(&toks[0]), "this enum member", "declare the enum before the class"));
    };
    let signed = toks[open..close].iter().any(|t| matches!(t.1, Tok::Minus));
    let at = (toks[0].0, toks[open - 1].2);
    let mut out = Vec::new();
    if !signed {
        out.push((at.0, Tok::TypeKw(TypeKw::Unsigned), at.1));
    }
    out.push((at.0, Tok::TypeKw(TypeKw::Int), at.1));
    if !toks.get(close + 1).is_some_and(|t| word(&t.1).is_some()) {
        return Err(unsupported(span_of(&toks[0]), "an enum without a member name", "declare the enum before the class"));
    }
    out.extend_from_slice(&toks[close + 1..]);
    Ok(out)
}
