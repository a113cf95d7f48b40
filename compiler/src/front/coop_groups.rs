//! **Where `cooperative_groups` names are read.** CUDA's `cooperative_groups` is a namespace
//! that no source file declares (its header is not parsed), usually named through an alias
//! (`namespace cg = cooperative_groups;`). This pass, run on the tokens before
//! `qualified::join` (which forms every other qualified name) and before `split`, finds
//! the aliases of that namespace and joins each qualified name `cg::thread_block` (or
//! `cooperative_groups::thread_block`) into one identifier, `cooperative_groups::thread_block`,
//! spanning the whole name. Simple template arguments stay part of the name
//! (`cg::tiled_partition<32>`, `cg::thread_block_tile<32, cg::thread_block>` as
//! `cooperative_groups::thread_block_tile<32, cooperative_groups::thread_block>`). The group
//! types become type names; sema gives every such name its meaning (`crate::sema::coop_groups`).
//!
//! This is deliberately narrow: the namespace is built in rather than declared by a parsed
//! `cooperative_groups.h`, so its names never reach `sema::scope`'s namespace look-up; the
//! alias declaration itself is parsed like any other (`split`) and sema accepts an alias of
//! this namespace without a declaration of it.

use super::lexer::{Spanned, Tok};
use std::collections::HashSet;

/// The namespace, as device code names it after this pass (`cooperative_groups::NAME`).
pub const NAMESPACE: &str = "cooperative_groups";

/// Whether `name` is a name of the namespace as this pass writes it (`cooperative_groups::NAME`).
pub fn is_qualified(name: &str) -> bool {
    name.strip_prefix(NAMESPACE).is_some_and(|rest| rest.starts_with("::"))
}

/// The group types of the namespace: type names after this pass.
pub const TYPES: &[&str] = &["thread_block", "thread_group", "grid_group", "coalesced_group", "thread_block_tile", "cluster_group"];

/// Joins qualified names of `cooperative_groups` as the module docs describe.
pub(super) fn join_qualified_names(tokens: &mut Vec<Spanned>) {
    if !tokens.iter().any(|(_, t, _)| matches!(t, Tok::Ident(n) if n == NAMESPACE)) {
        return;
    }
    let mut spellings: HashSet<String> = HashSet::from([NAMESPACE.to_string()]);
    // `namespace ALIAS = cooperative_groups;`
    for w in tokens.windows(5) {
        if let [(_, Tok::Ident(ns), _), (_, Tok::Ident(alias), _), (_, Tok::Assign, _), (_, Tok::Ident(target), _), (_, Tok::Semi, _)] = w {
            if ns == "namespace" && target == NAMESPACE {
                spellings.insert(alias.clone());
            }
        }
    }
    let old = std::mem::take(tokens);
    let mut i = 0;
    while i < old.len() {
        if let Some((joined, next)) = qualified_at(&old, i, &spellings) {
            tokens.push(joined);
            i = next;
        } else {
            tokens.push(old[i].clone());
            i += 1;
        }
    }
}

/// The joined token of a qualified name starting at `i`, and the index after it.
fn qualified_at(tokens: &[Spanned], i: usize, spellings: &HashSet<String>) -> Option<(Spanned, usize)> {
    let (start, Tok::Ident(first), _) = &tokens[i] else { return None };
    if !spellings.contains(first) {
        return None;
    }
    let (_, Tok::ColonColon, _) = tokens.get(i + 1)? else { return None };
    let (_, Tok::Ident(name) | Tok::TypeIdent(name), end) = tokens.get(i + 2)? else { return None };
    let mut joined = format!("{NAMESPACE}::{name}");
    let (mut end, mut next) = (*end, i + 3);
    // `thread_block_tile<32>`, `tiled_partition<32>`: simple template arguments stay part of
    // the name, so that sema can say the name is not supported instead of a syntax error.
    if let Some((args, close_end, after)) = simple_template_args(tokens, next, spellings) {
        joined.push_str(&args);
        (end, next) = (close_end, after);
    }
    let tok = if TYPES.contains(&name.as_str()) { Tok::TypeIdent(joined) } else { Tok::Ident(joined) };
    Some(((*start, tok, end), next))
}

/// `<32>`, `<T, 4>` or `<32, cg::thread_block>` at `i`: its text, where it ends, and the index
/// after it. Only names (qualified ones with the namespace's spellings written
/// `cooperative_groups::`) and integers, so that a comparison `cg::x < y` is never taken for
/// arguments.
fn simple_template_args(tokens: &[Spanned], i: usize, spellings: &HashSet<String>) -> Option<(String, usize, usize)> {
    let (_, Tok::Lt, _) = tokens.get(i)? else { return None };
    let mut text = String::from("<");
    let mut j = i + 1;
    loop {
        let (_, tok, end) = tokens.get(j)?;
        match tok {
            Tok::Int(v) => text.push_str(&v.value.to_string()),
            Tok::Ident(n) | Tok::TypeIdent(n) => {
                let qualifies = matches!(tokens.get(j + 1), Some((_, Tok::ColonColon, _)));
                text.push_str(if qualifies && spellings.contains(n) { NAMESPACE } else { n });
            }
            Tok::TypeKw(k) => text.push_str(k.as_str()),
            Tok::ColonColon if j > i + 1 => text.push_str("::"),
            Tok::Comma => text.push_str(", "),
            Tok::Gt if j > i + 1 => {
                text.push('>');
                return Some((text, *end, j + 1));
            }
            _ => return None,
        }
        j += 1;
    }
}
