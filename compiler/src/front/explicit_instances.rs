//! **Where explicit instantiations are read.** `template __global__ void k<128>(Params);` (an
//! explicit instantiation definition, C++ [temp.explicit]) is how a CUDA program asks for an
//! instance that no code names: nvcc compiles `k<128>` for it. `split` sorts such a
//! declaration with the others (device with `__global__`/`__device__`, host without); when it
//! names a device function template ([`Tok::TemplateName`], marked by `templates::mark`) it
//! becomes an [`ast::ExplicitInstance`] instead of being parsed or skipped, and
//! `crate::sema::templates` instantiates it. The parameter list is not read: the template
//! arguments say which instance it is. The arguments are read as host mentions read theirs
//! (`host_mentions::read_args`).

use super::ast::{self, HostTemplateArgs};
use super::lexer::{QualKw, Spanned, Tok};
use crate::diag::Span;

/// `template` not followed by `<`: an explicit instantiation (or something no compiler takes).
pub(super) fn is_explicit_instantiation(decl: &[Spanned]) -> bool {
    matches!(decl, [(_, Tok::Ident(t), _), next, ..] if t == "template" && !matches!(next.1, Tok::Lt))
}

/// The explicit instantiation of a device function template that `decl` is, if it is one.
pub(super) fn read(decl: &[Spanned], namespace: &[String]) -> Option<ast::ExplicitInstance> {
    if !is_explicit_instantiation(decl) {
        return None;
    }
    let scan = super::host_mentions::scan(decl);
    let mention = scan.mentions.iter().find(|m| !m.nested && !m.deduced);
    // `template __global__ void k(int *);`: the name, with no arguments (`k` followed by `(`).
    let bare = decl.iter().position(|t| matches!(t.1, Tok::TemplateName(_)));
    let at = mention.map(|m| m.name).or(bare)?;
    let head = &decl[..at];
    let has = |q: QualKw| head.iter().any(|t| matches!(t.1, Tok::Qual(k) if k == q));
    let name = match &decl[at].1 {
        Tok::TemplateName(n) => ast::Ident { name: n.clone(), span: Span::new(decl[at].0, decl[at].2) },
        _ => return None,
    };
    let args = mention.and_then(|m| match super::host_mentions::read_args(decl, m, &scan.closing_shr) {
        HostTemplateArgs::Explicit(args) => Some(args),
        _ => None,
    });
    let span = Span::new(decl[0].0, decl[decl.len() - 1].2);
    Some(ast::ExplicitInstance { name, args, global: has(QualKw::Global), device: has(QualKw::Device), namespace: namespace.to_vec(), span })
}
