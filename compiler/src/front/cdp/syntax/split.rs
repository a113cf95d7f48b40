//! **Where host code is skipped.** A `.cu` file mixes host and device code; cdpc compiles the
//! device side only, like clang's `--cuda-device-only`. Before the grammar sees anything, this
//! module cuts the token stream into top-level declarations (by balanced brackets, `;` and
//! function bodies) and sorts each into one of three classes:
//!
//! - [`Class::Device`]: `__global__`, `__device__` (without `__host__`), `__constant__`,
//!   `__shared__` and `__managed__` declarations. They are parsed, and every error in them is
//!   an error.
//! - [`Class::Tentative`]: what device code *may* use: `__host__ __device__` functions, struct,
//!   union and enum definitions, `typedef`s, and `const` variables. They are parsed; one that does not parse is skipped, and its first error is
//!   reported only if device code names it (clang's rule for code not used on the device).
//! - [`Class::Host`]: everything else (functions without device attributes, `main` included;
//!   host variables; a file-scope `asm`). Never parsed: host code is the host compiler's.
//!
//! [`constexpr_variables`] reads a `constexpr` variable as `const`. `extern "C" { ... }` blocks
//! are opened and their declarations sorted one by one, `extern "C"` remembered for the
//! functions inside. (C++ never gets here: `cuda_cxx.rs` refuses it first, `E0923`.)
//!
//! Why tokens and not text: the lexer already knows comments and string literals, so a brace
//! in a comment or a string cannot unbalance the split. Why before the grammar: the grammar
//! stays a grammar of device code, and host code never reaches it.

use super::ast::Ident;
use super::lexer::{QualKw, Spanned, Tok};
use crate::diag::Span;
use std::ops::Range;

/// How a top-level declaration is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Device,
    Tentative,
    Host(super::ast::SkippedKind),
}

/// One top-level declaration: a range of token indices and what to do with it.
#[derive(Clone, Debug)]
pub(super) struct Chunk {
    pub tokens: Range<usize>,
    pub class: Class,
    /// Inside an `extern "C" { ... }` block.
    pub extern_c: bool,
    /// The names it declares, as far as can be told without parsing it (for the diagnostic
    /// when device code names a skipped declaration).
    pub names: Vec<Ident>,
    /// The names among them that are type names: every declarator of a `typedef`, the tag of a
    /// struct, union or enum (never the variables an elaborated type declares: in
    /// `__device__ struct Line g;` only `Line` is a type).
    pub type_names: Vec<Ident>,
}

/// Makes the names that type declarations introduce type names everywhere (as the lexer does
/// for names written after `struct`), so that device code naming a struct or a `typedef` the
/// grammar cannot parse yet is told why, not given a syntax error.
pub(super) fn mark_type_names(tokens: &mut [Spanned], chunks: &[Chunk]) {
    let names: std::collections::HashSet<&str> = chunks.iter().flat_map(|c| c.type_names.iter().map(|n| n.name.as_str())).collect();
    let names: std::collections::HashSet<String> = names.into_iter().map(str::to_string).collect();
    for (_, tok, _) in tokens.iter_mut() {
        if let Tok::Ident(name) = tok {
            if names.contains(name.as_str()) {
                *tok = Tok::TypeIdent(std::mem::take(name));
            }
        }
    }
}

/// `constexpr` on a variable at file scope is read as `const`: a constexpr variable is const
/// (C23 6.7.1, C++ [dcl.constexpr]), and its initializer is a constant expression, which is what
/// device code may read of a host constant (`sema::host`). Functions and structs keep the word
/// (and so stay unparsed where they are host code).
pub(super) fn constexpr_variables(tokens: &mut [Spanned], chunks: &[Chunk]) {
    for chunk in chunks {
        let decl = &tokens[chunk.tokens.clone()];
        if matches!(chunk.class, Class::Host(_)) || is_function(decl) || super::structs::is_struct_definition(decl) {
            continue;
        }
        for (_, tok, _) in &mut tokens[chunk.tokens.clone()] {
            if is_word(tok, "constexpr") {
                *tok = Tok::Const;
            }
        }
    }
}

/// Splits `tokens` into top-level declarations.
pub(super) fn split(tokens: &[Spanned]) -> Vec<Chunk> {
    let mut splitter = Splitter { tokens, chunks: Vec::new() };
    splitter.range(0, tokens.len(), Context::default());
    splitter.chunks
}

#[derive(Clone, Copy, Debug, Default)]
struct Context {
    extern_c: bool,
}

struct Splitter<'t> {
    tokens: &'t [Spanned],
    chunks: Vec<Chunk>,
}

fn ident(tok: &Tok) -> Option<&str> {
    match tok {
        Tok::Ident(name) | Tok::TypeIdent(name) => Some(name),
        _ => None,
    }
}

fn is_word(tok: &Tok, word: &str) -> bool {
    ident(tok) == Some(word) || (word == "typedef" && matches!(tok, Tok::Typedef))
}

fn opens(tok: &Tok) -> bool {
    matches!(tok, Tok::LParen | Tok::LBracket | Tok::LBrace)
}

fn closes(tok: &Tok) -> bool {
    matches!(tok, Tok::RParen | Tok::RBracket | Tok::RBrace)
}

/// Words whose parenthesised argument is an attribute, not a parameter list.
const ATTRIBUTE_WORDS: &[&str] = &["__align__", "__attribute__", "__launch_bounds__", "__declspec"];

/// A word whose parenthesised argument is an attribute (`__launch_bounds__` is a token of its own).
fn is_attribute(tok: &Tok) -> bool {
    matches!(tok, Tok::LaunchBounds) || ATTRIBUTE_WORDS.iter().any(|w| is_word(tok, w))
}

fn is_type_key(tok: &Tok) -> bool {
    matches!(tok, Tok::Struct | Tok::Union) || is_word(tok, "enum")
}

impl Splitter<'_> {
    fn tok(&self, i: usize) -> &Tok {
        &self.tokens[i].1
    }

    fn span(&self, i: usize) -> Span {
        Span::new(self.tokens[i].0, self.tokens[i].2)
    }

    /// The index just past the bracket group opened at `open` (or `end` when unbalanced).
    fn skip_group(&self, open: usize, end: usize) -> usize {
        self.group_end(open, end).unwrap_or(end)
    }

    /// The index just past the bracket group opened at `open`, if it closes before `end`.
    fn group_end(&self, open: usize, end: usize) -> Option<usize> {
        let mut depth = 0usize;
        for i in open..end {
            let t = self.tok(i);
            if opens(t) {
                depth += 1;
            } else if closes(t) {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
        }
        None
    }

    /// Whether every bracket opened in `start..end` is closed there.
    fn balanced(&self, start: usize, end: usize) -> bool {
        let mut depth = 0isize;
        for i in start..end {
            let t = self.tok(i);
            depth += opens(t) as isize - closes(t) as isize;
            if depth < 0 {
                return false;
            }
        }
        depth == 0
    }

    fn range(&mut self, mut i: usize, end: usize, cx: Context) {
        while i < end {
            i = self.declaration(i, end, cx);
        }
    }

    /// Sorts the declaration starting at `start`; returns where the next one starts.
    fn declaration(&mut self, start: usize, end: usize, cx: Context) -> usize {
        // A stray closing bracket is a chunk of its own, left to the parser to report.
        if closes(self.tok(start)) {
            self.push(start..start + 1, Class::Device, cx, Vec::new());
            return start + 1;
        }
        if matches!(self.tok(start), Tok::Semi) {
            return start + 1; // an empty declaration
        }
        let mut saw_eq = false;
        let mut saw_params = false;
        let mut i = start;
        while i < end {
            let t = self.tok(i);
            match t {
                Tok::Semi => return self.finish(start, i + 1, cx),
                Tok::Assign => saw_eq = true,
                Tok::LParen | Tok::LBracket => {
                    let attribute = i > start && is_attribute(self.tok(i - 1));
                    if matches!(t, Tok::LParen) && !attribute && !saw_eq {
                        saw_params = true;
                    }
                    i = self.skip_group(i, end);
                    continue;
                }
                Tok::LBrace => {
                    if self.opens_extern_c(start, i) {
                        let Some(close) = self.group_end(i, end) else {
                            // Never closed: the parser says so.
                            self.push(start..end, Class::Device, cx, Vec::new());
                            return end;
                        };
                        self.range(i + 1, close - 1, Context { extern_c: true });
                        return close;
                    }
                    let after = self.skip_group(i, end);
                    if saw_params && !saw_eq && !self.type_key_head(start, i) {
                        return self.finish(start, after, cx); // a function body ends the definition
                    }
                    i = after;
                    continue;
                }
                _ if closes(t) => {
                    // Unbalanced: end the declaration before it.
                    return self.finish(start, i, cx);
                }
                _ => {}
            }
            i += 1;
        }
        self.finish(start, end, cx)
    }

    /// Whether the tokens before the brace at `brace` open an `extern "C"` block.
    fn opens_extern_c(&self, start: usize, brace: usize) -> bool {
        brace == start + 2 && matches!((self.tok(start), self.tok(start + 1)), (Tok::Extern, Tok::Str(_)))
    }

    /// Whether the declaration is a struct, union or enum definition: a type key comes before
    /// the brace, with no parameter list between them.
    fn type_key_head(&self, start: usize, brace: usize) -> bool {
        // Only a key outside brackets: `f(struct Graph &g) {` is a function, not a class.
        let mut depth = 0usize;
        let Some(key) = (start..brace).find(|&i| {
            let t = self.tok(i);
            let top = depth == 0;
            if opens(t) {
                depth += 1;
            } else if closes(t) {
                depth = depth.saturating_sub(1);
            }
            top && is_type_key(t)
        }) else {
            return false;
        };
        let mut i = key + 1;
        while i < brace {
            // A parameter list, or `=` (`struct S g = {1, 2};` initialises a variable).
            if matches!(self.tok(i), Tok::Assign) || matches!(self.tok(i), Tok::LParen) && !is_attribute(self.tok(i - 1)) {
                return false;
            }
            if matches!(self.tok(i), Tok::LParen) {
                i = self.skip_group(i, brace);
                continue;
            }
            i += 1;
        }
        true
    }

    /// Classifies the declaration `start..end` and records it.
    fn finish(&mut self, start: usize, end: usize, cx: Context) -> usize {
        let end = end.max(start + 1);
        let (mut class, names, type_names) = self.classify(start, end);
        if !self.balanced(start, end) {
            // A declaration that never closes is a mistake on either side: report it.
            class = Class::Device;
        }
        self.chunks.push(Chunk { tokens: start..end, class, extern_c: cx.extern_c, names, type_names });
        end
    }

    fn push(&mut self, tokens: Range<usize>, class: Class, cx: Context, names: Vec<Ident>) {
        self.chunks.push(Chunk { tokens, class, extern_c: cx.extern_c, names, type_names: Vec::new() });
    }

    /// The class of a declaration and the names it declares.
    fn classify(&self, start: usize, end: usize) -> (Class, Vec<Ident>, Vec<Ident>) {
        use super::ast::SkippedKind;
        // The head: the tokens outside brackets, before the first brace.
        // `top`: every token outside brackets (a bracket group counts as its opening token).
        let mut top: Vec<usize> = Vec::new();
        let mut i = start;
        while i < end {
            top.push(i);
            i = if opens(self.tok(i)) { self.skip_group(i, end) } else { i + 1 };
        }
        let head: Vec<usize> = top.iter().copied().take_while(|&i| !matches!(self.tok(i), Tok::LBrace)).collect();
        let has = |q: QualKw| head.iter().any(|&i| matches!(self.tok(i), Tok::Qual(k) if *k == q));
        let device = has(QualKw::Global) || has(QualKw::Device) || has(QualKw::Constant) || has(QualKw::Shared) || has(QualKw::Managed);
        let first = self.tok(start);
        let params = head.iter().position(|&i| matches!(self.tok(i), Tok::LParen) && i > start && !is_attribute(self.tok(i - 1)));
        let eq = head.iter().position(|&i| matches!(self.tok(i), Tok::Assign));
        let function = match (params, eq) {
            (Some(p), Some(e)) => p < e,
            (Some(_), None) => true,
            _ => false,
        };
        let brace = (start..end).find(|&i| matches!(self.tok(i), Tok::LBrace)).unwrap_or(end);
        let names = self.declared_names(if function { &head } else { &top }, function);
        let type_head = !function && self.type_key_head(start, brace);
        let type_names = if is_word(first, "typedef") {
            names.clone()
        } else if type_head {
            // Only the tag: a variable of an elaborated type (`struct Line g;`, `struct P { ... }
            // *p;`) stays a variable, as does one after a body.
            let tag_end = self.tag_end(start, end);
            names.iter().filter(|n| self.span(tag_end.saturating_sub(1)).end >= n.span.end).cloned().collect()
        } else {
            Vec::new()
        };
        let class = if matches!(first, Tok::Asm) {
            // A file-scope `asm("...");` is the host compiler's, as it was before `asm` became
            // a keyword (inline asm is compiled inside device functions only).
            Class::Host(SkippedKind::Other)
        } else if !(type_head && brace < end) && head.iter().all(|&i| !matches!(self.tok(i), Tok::Ident(_) | Tok::TypeIdent(_) | Tok::TypeKw(_))) {
            // (`typedef struct { ... } T;` names its type after the body.)
            // No name at all (stray tokens): let the parser say what is wrong.
            Class::Device
        } else if is_word(first, "typedef") || (type_head && brace < end) || (type_head && type_names.len() == names.len()) {
            // (A forward declaration, `struct Line;`, declares its tag alone.)
            Class::Tentative
        } else if function {
            if device && has(QualKw::Host) && !has(QualKw::Global) {
                Class::Tentative
            } else if device {
                Class::Device
            } else {
                Class::Host(SkippedKind::Function)
            }
        } else if device {
            Class::Device
        } else if head.iter().any(|&i| matches!(self.tok(i), Tok::Const) || is_word(self.tok(i), "constexpr")) {
            Class::Tentative
        } else {
            Class::Host(SkippedKind::Variable)
        };
        (class, names, type_names)
    }

    /// The index just past the tag of the type-key declaration `start..end`: the first name
    /// after the key that is no attribute word, the attributes' groups skipped (`struct
    /// __align__(16) V`); the declarators come after it. `end` when there is none.
    fn tag_end(&self, start: usize, end: usize) -> usize {
        let Some(key) = (start..end).find(|&i| is_type_key(self.tok(i))) else { return end };
        let mut i = key + 1;
        while i < end {
            let t = self.tok(i);
            if is_attribute(t) {
                i = if matches!(self.tokens.get(i + 1).map(|t| &t.1), Some(Tok::LParen)) { self.skip_group(i + 1, end) } else { i + 1 };
            } else if ident(t).is_some() {
                return i + 1;
            } else {
                return end;
            }
        }
        end
    }

    /// The names a declaration introduces: the identifier before the parameter list of a
    /// function; the type's name after a type key; the declarator names of variables and
    /// typedefs (identifiers just before `=`, `;`, `,`, `[` or `:` at the top level).
    fn declared_names(&self, head: &[usize], function: bool) -> Vec<Ident> {
        let mut names = Vec::new();
        for (k, &i) in head.iter().enumerate() {
            let Some(name) = ident(self.tok(i)) else { continue };
            let next = head.get(k + 1).map(|&j| self.tok(j));
            let prev = k.checked_sub(1).map(|p| self.tok(head[p]));
            let declares = if function {
                matches!(next, Some(Tok::LParen)) && !ATTRIBUTE_WORDS.contains(&name)
            } else {
                prev.is_some_and(is_type_key) || matches!(next, None | Some(Tok::Assign | Tok::Semi | Tok::Comma | Tok::LBracket | Tok::LBrace | Tok::Colon))
            };
            if declares && !names.iter().any(|n: &Ident| n.name == name) {
                names.push(Ident { name: name.to_string(), span: self.span(i) });
            }
        }
        names
    }
}

/// Whether the declaration `tokens` declares a function: a parameter list (not an attribute's
/// arguments, nor a function-pointer declarator `(*f)(int)`) comes before any `=` at the top level.
pub(super) fn is_function(tokens: &[Spanned]) -> bool {
    function_params(tokens).is_some()
}

/// The index of the parameter list of a function declaration.
fn function_params(tokens: &[Spanned]) -> Option<usize> {
    let mut depth = 0usize;
    for (i, (_, t, _)) in tokens.iter().enumerate() {
        match t {
            Tok::LParen if depth == 0 => {
                let attribute = i > 0 && ATTRIBUTE_WORDS.iter().any(|w| is_word(&tokens[i - 1].1, w));
                if !attribute && i > 0 && !matches!(tokens[i - 1].1, Tok::RParen) && !matches!(tokens.get(i + 1).map(|t| &t.1), Some(Tok::Star)) {
                    return Some(i);
                }
                depth += 1;
            }
            Tok::Assign | Tok::LBrace if depth == 0 => return None,
            _ if opens(t) => depth += 1,
            _ if closes(t) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}
