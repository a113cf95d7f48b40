//! **Where class templates are cut apart.** `template <typename T, int N = 4> struct Buf { T
//! data[N]; __device__ T sum() const; };` reaches the grammar in pieces, as a class does
//! (`members.rs`): the header's parameters (parsed as the header of a function template, whose
//! grammar has the defaults), then the class body through `members::parse_class` (its data
//! members as one synthetic struct, its member functions named `Buf::f`). The result is an
//! [`ast::ClassTemplateDef`], kept as syntax: `crate::sema::class_templates` makes a concrete
//! struct and member functions for each argument list used.
//!
//! A member defined outside its class, `template <class T> __device__ T Buf<T>::f() { ... }`,
//! becomes an [`ast::ClassTemplateMember`]: `Buf<T>::f` is one name `Buf::f`, the arguments
//! written after `Buf` are kept (they must be the header's parameters), and the function
//! parses as an ordinary one.
//!
//! `templates.rs` has already marked the tokens: `template`, the type parameters (type names
//! in the declaration), the class's name (a class template name where arguments follow, a type
//! name alone inside its own declarations, C++'s injected class name).

use super::ast;
use super::lexer::{Spanned, Tok, TypeKw};
use super::members::{self, span_of};
use crate::diag::{Code, Diagnostic, Span};

type Parse<'a> = &'a dyn Fn(&[Spanned]) -> Result<ast::TranslationUnit, (Diagnostic, Vec<Diagnostic>)>;

fn unsupported(at: Span, what: &str, note: &str) -> Diagnostic {
    Diagnostic::new(Code::CxxUnsupported, at, format!("{what} in a class template is not supported yet"))
        .with_primary_message("here")
        .with_note(note.to_string())
}

/// Whether `tokens` (one top-level declaration, marked) defines a class template.
pub(super) fn is_class_template(tokens: &[Spanned]) -> bool {
    matches!(tokens.first().map(|t| &t.1), Some(Tok::Template)) && super::templates::class_template_name(tokens).is_some()
}

/// The header `template <...>`'s parameters; `close` is the index of its `>`.
fn header_params(tokens: &[Spanned], close: usize, parse: Parse) -> Result<Vec<ast::TemplateParam>, Diagnostic> {
    let end = tokens[close].2;
    let mut synthetic: Vec<Spanned> = tokens[..=close].to_vec();
    synthetic.push((end, Tok::TypeKw(TypeKw::Void), end));
    synthetic.push((end, Tok::TemplateName(String::new()), end));
    synthetic.push((end, Tok::LParen, end));
    synthetic.push((end, Tok::RParen, end));
    synthetic.push((end, Tok::Semi, end));
    let unit = parse(&synthetic).map_err(|(e, _)| e)?;
    match unit.items.into_iter().next() {
        Some(ast::Item::Template(def)) => Ok(def.params),
        _ => Err(Diagnostic::new(Code::SyntaxError, span_of(&tokens[0]), "this template header does not parse").with_primary_message("here")),
    }
}

/// Parses a class template definition (`is_class_template`).
pub(super) fn parse_class_template(tokens: &[Spanned], parse: Parse) -> Result<(ast::ClassTemplateDef, members::Class), Diagnostic> {
    let close = super::templates::header_end(tokens, 1, tokens.len());
    let params = header_params(tokens, close, parse)?;
    let mut class = members::parse_class(&tokens[close + 1..], parse)?;
    let mut def: Option<ast::StructDef> = None;
    let mut methods = Vec::new();
    for item in std::mem::take(&mut class.items) {
        match item {
            ast::Item::Struct(s) if def.is_none() => def = Some(s),
            ast::Item::Function(f) => methods.push(f),
            ast::Item::Typedef(t) => return Err(unsupported(t.span, "a typedef name", "write `template <...> struct Name { ... };`")),
            other => {
                let at = match &other {
                    ast::Item::Template(t) => t.span,
                    _ => span_of(&tokens[0]),
                };
                return Err(unsupported(at, "this member", "declare it outside the class template"));
            }
        }
    }
    let Some(mut def) = def else {
        return Err(unsupported(span_of(&tokens[0]), "this class", "write `template <...> struct Name { ... };`"));
    };
    let span = Span::new(tokens[0].0, tokens[tokens.len() - 1].2);
    def.span = span;
    let statics = std::mem::take(&mut class.statics);
    Ok((ast::ClassTemplateDef { params, class: def, methods, statics, span }, class))
}

/// Where `Buf < args > :: f` stands in an out-of-class member definition: the index of `Buf`
/// and of `::`.
pub(super) fn out_of_class_member(tokens: &[Spanned]) -> Option<(usize, usize)> {
    if !matches!(tokens.first().map(|t| &t.1), Some(Tok::Template)) {
        return None;
    }
    let close = super::templates::header_end(tokens, 1, tokens.len());
    let paren = tokens.iter().position(|t| matches!(t.1, Tok::LParen))?;
    (close + 1..paren).find_map(|i| {
        if !matches!(tokens[i].1, Tok::ClassTemplateName(_)) || !matches!(tokens.get(i + 1).map(|t| &t.1), Some(Tok::Lt)) {
            return None;
        }
        let end = super::templates::header_end(tokens, i + 1, paren);
        matches!(tokens.get(end + 1).map(|t| &t.1), Some(Tok::ColonColon)).then_some((i, end + 1))
    })
}

/// Parses `template <...> R Buf<args>::f(...) { ... }` (`out_of_class_member` found it).
pub(super) fn parse_member(tokens: &[Spanned], at: (usize, usize), parse: Parse) -> Result<ast::ClassTemplateMember, Diagnostic> {
    let (class_at, colons) = at;
    let close = super::templates::header_end(tokens, 1, tokens.len());
    let params = header_params(tokens, close, parse)?;
    let Tok::ClassTemplateName(class) = &tokens[class_at].1 else { unreachable!("out_of_class_member found a class template name") };
    let member = tokens.get(colons + 1).filter(|t| matches!(t.1, Tok::Ident(_) | Tok::TypeIdent(_)));
    let Some((_, member_tok, member_end)) = member else {
        return Err(unsupported(span_of(&tokens[colons]), "this member definition", "define member functions as `template <...> R Name<...>::f(...) { ... }`"));
    };
    let (Tok::Ident(member) | Tok::TypeIdent(member)) = member_tok else { unreachable!("checked above") };
    // The arguments after the class's name, parsed as the type of a variable.
    let end = tokens[colons].0;
    let mut declaration: Vec<Spanned> = tokens[class_at..colons].to_vec();
    declaration.push((end, Tok::Ident("x".into()), end));
    declaration.push((end, Tok::Semi, end));
    let unit = parse(&declaration).map_err(|(e, _)| e)?;
    let class_args = match unit.items.into_iter().next() {
        Some(ast::Item::Global(ast::DeclStmt { spec: ast::TypeSpec { kind: ast::TypeSpecKind::Instance(_, args), .. }, .. })) => args,
        _ => return Err(unsupported(span_of(&tokens[class_at]), "this member definition", "name the class as `Name<T, ...>::f`")),
    };
    // The function, named `Buf::f` (a constructor `Buf::Buf` keeps its type-name token).
    let name = format!("{class}::{member}");
    let joined = if member == class.rsplit("::").next().unwrap_or(class) { Tok::TypeIdent(name) } else { Tok::Ident(name) };
    let mut function: Vec<Spanned> = tokens[close + 1..class_at].to_vec();
    function.push((tokens[class_at].0, joined, *member_end));
    function.extend_from_slice(&tokens[colons + 2..]);
    let unit = parse(&function).map_err(|(e, _)| e)?;
    match unit.items.into_iter().next() {
        Some(ast::Item::Function(function)) => {
            let span = Span::new(tokens[0].0, tokens[tokens.len() - 1].2);
            Ok(ast::ClassTemplateMember { params, class_args, function, span })
        }
        _ => Err(unsupported(span_of(&tokens[class_at]), "this member definition", "define member functions as `template <...> R Name<...>::f(...) { ... }`")),
    }
}
