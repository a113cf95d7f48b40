//! **Where host code's mentions of device templates are collected.** nvcc instantiates a
//! device function template wherever the program names an instance of it, host code included:
//! `build_quadtree_kernel<128><<<1, 128>>>(...)` in `main`, `&k<int>` or `k<float>` passed to
//! `cudaFuncGetAttributes`. cdpc never parses host code (`split.rs`), so after `split` and
//! `templates::mark` (which makes every device template's name a [`Tok::TemplateName`], in host
//! code too) this pass reads just enough of each host declaration to find those mentions:
//!
//! - `TemplateName < ... >`: the arguments are matched by brackets (`(`/`[` nest, `>>` closes
//!   two lists, as in C++11) and parsed by the grammar's expression parser, so they are the
//!   same types and expressions device code writes; `TemplateName <<<` (a host launch whose
//!   arguments the host compiler deduces) is recorded too, to be reported.
//! - `const`/`constexpr` locals declared before a mention in the body (`const int N = 128;`,
//!   `constexpr auto M = N / 32;`, several declarators too): their initializers, converted to
//!   the declared type as a cast, with the byte where their block ends. `sema::templates`
//!   evaluates them in order, so a mention's arguments may name them, as well as file-scope
//!   constants and macros (already expanded).
//!
//! The result is [`ast::HostTemplateUses`], one per host declaration that names a device
//! template; `crate::sema::templates` instantiates each mention, and reports (`W0945`) those
//! whose arguments it cannot evaluate. Explicit instantiations (`template __global__ void
//! k<128>(P);`) are `explicit_instances.rs`'s.
//!
//! Host code is arbitrary C++, so the scan never fails and stays linear: one pass with a stack
//! of open brackets per declaration (`;`, `{` and `}` drop unclosed template-argument lists),
//! and at most [`MAX_HOST_TOKENS`] tokens parsed per mention or initializer.

use super::ast::{self, HostEvent, HostTemplateArgs};
use super::lexer::{QualKw, Spanned, Tok};
use super::split::{Chunk, Class};
use crate::diag::Span;
use std::collections::HashSet;

/// At most this many tokens are parsed as one mention or one initializer; longer ones are
/// unreadable (no real template argument list is that long, and it bounds the parse).
pub(super) const MAX_HOST_TOKENS: usize = 256;

/// The mentions of device templates in the host declarations among `chunks`.
pub(super) fn collect(tokens: &[Spanned], chunks: &[Chunk]) -> Vec<ast::HostTemplateUses> {
    let mut out = Vec::new();
    for chunk in chunks {
        let decl = &tokens[chunk.tokens.clone()];
        if !matches!(chunk.class, Class::Host(_)) || super::explicit_instances::is_explicit_instantiation(decl) {
            continue;
        }
        if !decl.iter().any(|t| matches!(t.1, Tok::TemplateName(_))) {
            continue;
        }
        let scan = scan(decl);
        if scan.mentions.is_empty() {
            continue;
        }
        let mut events: Vec<(usize, HostEvent)> = Vec::new();
        for m in &scan.mentions {
            let name = ident(&decl[m.name]);
            let span = Span::new(decl[m.name].0, m.end.map_or(decl[m.name].2, |(i, half)| if half { decl[i].0 + 1 } else { decl[i].2 }));
            events.push((m.name, HostEvent::Use(ast::HostTemplateUse { name, args: read_args(decl, m, &scan.closing_shr), span })));
        }
        for c in &scan.consts {
            let value = const_value(decl, c);
            let name = ident(&decl[c.name]);
            events.push((c.name, HostEvent::Const(ast::HostConst { name, value, scope_end: c.scope_end })));
        }
        let in_template = matches!(decl, [t, (_, Tok::Lt, _), ..] if is_word(&t.1, "template"));
        if in_template {
            // The host template's own parameters hide file-scope constants of the same name; their
            // values are known only where host code instantiates it.
            for at in template_params(decl) {
                events.push((0, HostEvent::Const(ast::HostConst { name: ident(&decl[at]), value: None, scope_end: u32::MAX })));
            }
        }
        events.sort_by_key(|(at, _)| *at);
        out.push(ast::HostTemplateUses { events: events.into_iter().map(|(_, e)| e).collect(), namespace: chunk.namespace.clone(), in_template });
    }
    out
}

/// A device template named in a declaration's tokens (indices into them).
#[derive(Debug)]
pub(super) struct Mention {
    /// The template name.
    pub name: usize,
    /// The token closing the argument list, and whether only its first `>` does (`>>`);
    /// `None` when the list never closes, or for a launch without one.
    pub end: Option<(usize, bool)>,
    /// `k<<<...>>>`: no argument list.
    pub deduced: bool,
    /// Inside the brackets of another mention's arguments.
    pub nested: bool,
}

/// A `const`/`constexpr` local: its name and where its specifiers and initializer are.
#[derive(Debug)]
struct ConstDecl {
    name: usize,
    specs: std::ops::Range<usize>,
    init: std::ops::Range<usize>,
    scope_end: u32,
}

#[derive(Debug, Default)]
pub(super) struct Scan {
    pub mentions: Vec<Mention>,
    consts: Vec<ConstDecl>,
    /// `>>` tokens that close template-argument lists (read as two `>`).
    pub closing_shr: HashSet<usize>,
}

enum Frame {
    /// A template-argument list opened by the `<` after token `name`, in `Scan::mentions` at
    /// `mention` when it belongs to a device template.
    Angle { mention: Option<usize> },
    /// `(` or `[`.
    Group,
}

/// One pass over a declaration's tokens: the mentions of device templates and the `const`
/// locals.
pub(super) fn scan(decl: &[Spanned]) -> Scan {
    let mut scan = Scan::default();
    let mut stack: Vec<Frame> = Vec::new();
    // Per open brace: the constants declared directly in that block.
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut i = 0;
    while i < decl.len() {
        let tok = &decl[i].1;
        let next = decl.get(i + 1).map(|t| &t.1);
        let in_angle = matches!(stack.last(), Some(Frame::Angle { .. }));
        match tok {
            Tok::TemplateName(_) if !matches!(i.checked_sub(1).map(|p| &decl[p].1), Some(Tok::Dot | Tok::Arrow)) => match next {
                Some(Tok::Lt) => {
                    let nested = stack.iter().any(|f| matches!(f, Frame::Angle { .. }));
                    scan.mentions.push(Mention { name: i, end: None, deduced: false, nested });
                    stack.push(Frame::Angle { mention: Some(scan.mentions.len() - 1) });
                    i += 2;
                    continue;
                }
                Some(Tok::LaunchOpen) => scan.mentions.push(Mention { name: i, end: None, deduced: true, nested: false }),
                _ => {}
            },
            Tok::Ident(_) | Tok::TypeIdent(_) | Tok::ClassTemplateName(_) if in_angle && matches!(next, Some(Tok::Lt)) => {
                // Another template's arguments inside a mention's (`k<Pair<int, 2>>`, `k<Buf<int>>`).
                stack.push(Frame::Angle { mention: None });
                i += 2;
                continue;
            }
            Tok::LParen | Tok::LBracket => stack.push(Frame::Group),
            Tok::RParen | Tok::RBracket => {
                // Lists left open inside the brackets were comparisons, or unbalanced.
                while let Some(frame) = stack.pop() {
                    if matches!(frame, Frame::Group) {
                        break;
                    }
                }
            }
            Tok::Gt if in_angle => close(&mut scan, &mut stack, i, false),
            Tok::Shr if in_angle => {
                scan.closing_shr.insert(i);
                close(&mut scan, &mut stack, i, true);
                if matches!(stack.last(), Some(Frame::Angle { .. })) {
                    close(&mut scan, &mut stack, i, false);
                }
            }
            Tok::Semi | Tok::LBrace | Tok::RBrace => {
                stack.clear();
                match tok {
                    Tok::LBrace => blocks.push(Vec::new()),
                    Tok::RBrace => {
                        for c in blocks.pop().unwrap_or_default() {
                            scan.consts[c].scope_end = decl[i].0 as u32;
                        }
                    }
                    _ => {}
                }
                if !blocks.is_empty() {
                    if let Some(found) = const_decl(decl, i + 1) {
                        let first = scan.consts.len();
                        scan.consts.extend(found);
                        if let Some(block) = blocks.last_mut() {
                            block.extend(first..scan.consts.len());
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// Closes the innermost template-argument list at token `at` (`first_half`: with the first `>`
/// of a `>>`).
fn close(scan: &mut Scan, stack: &mut Vec<Frame>, at: usize, first_half: bool) {
    if let Some(Frame::Angle { mention: Some(m) }) = stack.pop() {
        scan.mentions[m].end = Some((at, first_half));
    }
}

/// The `const` or `constexpr` locals declared by the statement starting at `start`, if it is
/// such a declaration: `[static] const|constexpr TYPE NAME = INIT[, NAME = INIT]... ;`.
fn const_decl(decl: &[Spanned], start: usize) -> Option<Vec<ConstDecl>> {
    let mut i = start;
    let mut constant = false;
    while let Some((_, t, _)) = decl.get(i) {
        match t {
            Tok::Const => constant = true,
            t if is_word(t, "constexpr") => constant = true,
            Tok::Qual(QualKw::Static) | Tok::TypeKw(_) | Tok::TypeIdent(_) | Tok::Volatile => {}
            t if is_word(t, "auto") => {}
            _ => break,
        }
        i += 1;
    }
    if !constant || i == start {
        return None;
    }
    let specs = start..i;
    let mut found = Vec::new();
    loop {
        let (Some((_, Tok::Ident(_), _)), Some((_, Tok::Assign, _))) = (decl.get(i), decl.get(i + 1)) else { return None };
        let name = i;
        let init_start = i + 2;
        let mut depth = 0usize;
        let mut j = init_start;
        loop {
            match decl.get(j).map(|t| &t.1) {
                None | Some(Tok::LBrace | Tok::RBrace) => return None,
                Some(Tok::LParen | Tok::LBracket) => depth += 1,
                Some(Tok::RParen | Tok::RBracket) => depth = depth.checked_sub(1)?,
                Some(Tok::Semi | Tok::Comma) if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        if j == init_start {
            return None;
        }
        found.push(ConstDecl { name, specs: specs.clone(), init: init_start..j, scope_end: u32::MAX });
        if matches!(decl[j].1, Tok::Semi) {
            return Some(found);
        }
        i = j + 1;
    }
}

/// The names a host template's header `template <typename T, int N = 4>` declares: the
/// identifiers followed by `,`, `=` or the closing `>`, outside brackets.
fn template_params(decl: &[Spanned]) -> Vec<usize> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    for i in 2..decl.len() {
        match &decl[i].1 {
            Tok::Lt | Tok::LParen | Tok::LBracket => depth += 1,
            Tok::Gt | Tok::Shr if depth == 0 => {
                if matches!(decl[i - 1].1, Tok::Ident(_) | Tok::TypeIdent(_)) {
                    names.push(i - 1);
                }
                break;
            }
            Tok::Gt | Tok::RParen | Tok::RBracket => depth = depth.saturating_sub(1),
            Tok::Comma | Tok::Assign if depth == 0 && matches!(decl[i - 1].1, Tok::Ident(_) | Tok::TypeIdent(_)) => names.push(i - 1),
            Tok::LBrace | Tok::Semi => break,
            _ => {}
        }
    }
    names
}

/// The value a constant local is initialized with, converted to its declared type: the tokens
/// `(TYPE)(INIT)` parsed as an expression (`INIT` alone for `auto`).
fn const_value(decl: &[Spanned], c: &ConstDecl) -> Option<ast::Expr> {
    if c.init.len() > MAX_HOST_TOKENS {
        return None;
    }
    let init = &decl[c.init.clone()];
    let (start, end) = (init.first()?.0, init.last()?.2);
    let ty: Vec<Spanned> = decl[c.specs.clone()]
        .iter()
        .filter(|t| matches!(t.1, Tok::Const | Tok::Volatile | Tok::TypeKw(_) | Tok::TypeIdent(_)))
        .cloned()
        .collect();
    let mut expr: Vec<Spanned> = Vec::with_capacity(init.len() + ty.len() + 4);
    if ty.iter().any(|t| matches!(t.1, Tok::TypeKw(_) | Tok::TypeIdent(_))) {
        expr.push((start, Tok::LParen, start));
        expr.extend(ty);
        expr.push((start, Tok::RParen, start));
    }
    expr.push((start, Tok::LParen, start));
    expr.extend(init.iter().cloned());
    expr.push((end, Tok::RParen, end));
    parse_expr(expr)
}

/// The template arguments of a mention, read as device code reads them (`closing_shr`: the
/// `>>` tokens that close argument lists, [`Scan::closing_shr`]).
pub(super) fn read_args(decl: &[Spanned], m: &Mention, closing_shr: &HashSet<usize>) -> HostTemplateArgs {
    if m.deduced {
        return HostTemplateArgs::Deduced;
    }
    let Some((end, half)) = m.end else { return HostTemplateArgs::Unreadable };
    if end - m.name > MAX_HOST_TOKENS {
        return HostTemplateArgs::Unreadable;
    }
    let mut toks: Vec<Spanned> = Vec::with_capacity(end - m.name + 2);
    for (i, t) in decl.iter().enumerate().take(end + 1).skip(m.name) {
        if closing_shr.contains(&i) {
            // `>>` closing two lists is two `>`; the mention's own last one may be half of it.
            let (s, e) = (t.0, t.2);
            toks.push((s, Tok::Gt, s + 1));
            if !(i == end && half) {
                toks.push((s + 1, Tok::Gt, e));
            }
        } else {
            toks.push(t.clone());
        }
    }
    match parse_expr(toks) {
        Some(ast::Expr { kind: ast::ExprKind::TemplateId { args: Some(args), .. }, .. }) => HostTemplateArgs::Explicit(args),
        _ => HostTemplateArgs::Unreadable,
    }
}

/// Parses tokens as one expression with the grammar's `Expr`; `None` if they are not one.
fn parse_expr(tokens: Vec<Spanned>) -> Option<ast::Expr> {
    let mut diags = Vec::new();
    let mut recovered = Vec::new();
    let input = tokens.into_iter().map(Ok::<Spanned, super::lexer::LexError>);
    let parsed = super::grammar::ExprParser::new().parse(&mut diags, &mut recovered, input).ok()?;
    (recovered.is_empty() && !diags.iter().any(crate::diag::Diagnostic::is_error)).then_some(parsed)
}

fn ident(t: &Spanned) -> ast::Ident {
    let name = match &t.1 {
        Tok::Ident(n) | Tok::TypeIdent(n) | Tok::TemplateName(n) => n.clone(),
        _ => String::new(),
    };
    ast::Ident { name, span: Span::new(t.0, t.2) }
}

fn is_word(tok: &Tok, word: &str) -> bool {
    matches!(tok, Tok::Ident(name) if name == word)
}
