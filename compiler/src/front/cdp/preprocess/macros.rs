//! **Where macros are expanded.** The macro table and the expansion algorithm.
//!
//! Expansion follows the standard (C11 6.10.3, C++17 [cpp.replace]) with Prosser's hide sets:
//! every token carries the set of macros whose expansion produced it, and a macro name whose
//! own macro is in its token's hide set is never expanded again ("painted blue"). So `#define A A`
//! and mutually recursive macros simply stop expanding, as in every C compiler; they are not an
//! error. Arguments are fully expanded before substitution except next to `#` and `##`; `#`
//! makes a string, `##` pastes two tokens into one (an invalid result is `E0607`); `...` and
//! `__VA_ARGS__` (or a named `args...`) take the rest of the arguments, and GNU's
//! `, ## __VA_ARGS__` drops the comma when they are empty.
//!
//! The expander works on an explicit stack of pending tokens, not by recursion over the
//! rescanned text; it recurses only to pre-expand an argument, at most [`MAX_ARGUMENT_DEPTH`]
//! deep. All the tokens it makes count against [`MAX_EXPANSION_TOKENS`], so exponential
//! macros (`#define B A A`, `#define C B B`, ...) end in `E0608` within a bounded time.

use super::lexer::{self, Kind, RawToken};
use super::source_map::{Expansion, FileId, Loc};
use super::{Fatal, Preprocessor};
use crate::diag::{Code, Diagnostic};
use std::collections::HashMap;
use std::rc::Rc;

/// How deep macro invocations may nest inside the arguments of other invocations.
pub const MAX_ARGUMENT_DEPTH: usize = 200;
/// How much macro expansion one translation unit may do: each expansion counts one plus the
/// tokens it produces (rescans included). Two million keeps the tokens and the source map's
/// expansion records of the worst case within a few hundred megabytes and seconds.
pub const MAX_EXPANSION_TOKENS: u64 = 2 << 20;

/// A token during expansion: its text, where it was spelled, and the macros that produced it.
#[derive(Clone, Debug)]
pub struct Tok {
    /// What it is; a placemarker (an empty argument next to `##`) is `Other` with empty text.
    pub kind: Kind,
    /// The text, line splices removed.
    pub text: Rc<str>,
    /// White space came before it.
    pub space: bool,
    /// Where its characters were spelled.
    pub loc: Loc,
    /// The innermost expansion that produced it; `None` for a token of a file.
    pub origin: Option<u32>,
    /// The macros it may no longer expand (ids of [`Macros`]).
    pub hide: Rc<[u32]>,
}

impl Tok {
    /// A token of file `file`.
    pub fn from_raw(raw: &RawToken, text: &str, file: FileId, no_hide: &Rc<[u32]>) -> Tok {
        Tok { kind: raw.kind, text: Rc::from(raw.text(text).as_ref()), space: raw.space_before, loc: Loc { file, start: raw.start, end: raw.end }, origin: None, hide: no_hide.clone() }
    }

    /// Whether it is the punctuator `p`.
    pub fn is(&self, p: &str) -> bool {
        self.kind == Kind::Punct && &*self.text == p
    }

    fn is_placemarker(&self) -> bool {
        self.kind == Kind::Other && self.text.is_empty()
    }
}

/// A macro whose expansion is computed at each use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dynamic {
    /// `__FILE__`: the name of the file being read.
    File,
    /// `__LINE__`: the line of the invocation.
    Line,
    /// `__COUNTER__`: 0, 1, 2, ... in order of use.
    Counter,
}

/// One `#define`.
#[derive(Clone, Debug)]
pub struct Macro {
    /// Parameter names of a function-like macro (`__VA_ARGS__` last when variadic); `None` for
    /// an object-like one.
    pub params: Option<Vec<Rc<str>>>,
    /// The last parameter takes the remaining arguments.
    pub variadic: bool,
    /// The replacement list.
    pub body: Vec<Tok>,
    /// The name in the `#define`.
    pub loc: Loc,
    /// Set for `__FILE__`, `__LINE__` and `__COUNTER__`.
    pub dynamic: Option<Dynamic>,
}

impl Macro {
    fn param_index(&self, t: &Tok) -> Option<usize> {
        if t.kind != Kind::Ident {
            return None;
        }
        self.params.as_ref()?.iter().position(|p| **p == *t.text)
    }

    /// Whether two definitions are the same (C11 6.10.3p2): then a redefinition is allowed.
    pub fn same_as(&self, other: &Macro) -> bool {
        self.params == other.params
            && self.variadic == other.variadic
            && self.body.len() == other.body.len()
            && self.body.iter().zip(&other.body).enumerate().all(|(i, (a, b))| a.text == b.text && (i == 0 || a.space == b.space))
    }
}

/// The macros defined so far. Names are interned to small ids, which the hide sets hold.
#[derive(Debug, Default)]
pub struct Macros {
    ids: HashMap<Rc<str>, u32>,
    defs: Vec<Option<Rc<Macro>>>,
}

impl Macros {
    /// The id of a name (made on first use).
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.defs.len() as u32;
        self.ids.insert(Rc::from(name), id);
        self.defs.push(None);
        id
    }

    /// The macro named `name`, with its id.
    pub fn get(&self, name: &str) -> Option<(u32, &Rc<Macro>)> {
        let id = *self.ids.get(name)?;
        self.defs[id as usize].as_ref().map(|m| (id, m))
    }

    /// Defines (or redefines) a macro; returns the previous definition.
    pub fn define(&mut self, name: &str, m: Macro) -> Option<Rc<Macro>> {
        let id = self.id(name);
        self.defs[id as usize].replace(Rc::new(m))
    }

    /// Removes a definition.
    pub fn undefine(&mut self, name: &str) {
        if let Some(&id) = self.ids.get(name) {
            self.defs[id as usize] = None;
        }
    }

    /// Whether `name` is defined.
    pub fn is_defined(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// Where the expander takes tokens once its pending list is empty: the rest of a run of text
/// lines of a file, up to the next directive.
pub struct Source<'s> {
    /// The file.
    pub file: FileId,
    /// Its text.
    pub text: &'s str,
    /// Its tokens.
    pub toks: &'s [RawToken],
    /// The next token to take.
    pub pos: usize,
    /// Where the run ends (the `#` of the next directive, or the end of the file).
    pub end: usize,
}

fn union(a: &Rc<[u32]>, b: &Rc<[u32]>) -> Rc<[u32]> {
    if a.is_empty() {
        return b.clone();
    }
    if b.iter().all(|x| a.contains(x)) {
        return a.clone();
    }
    let mut v: Vec<u32> = a.to_vec();
    v.extend(b.iter().filter(|x| !a.contains(x)));
    Rc::from(v)
}

impl Preprocessor<'_> {
    fn pull(&self, pending: &mut Vec<Tok>, source: &mut Option<&mut Source>) -> Option<Tok> {
        if let Some(t) = pending.pop() {
            return Some(t);
        }
        let s = source.as_deref_mut()?;
        if s.pos >= s.end {
            return None;
        }
        let raw = &s.toks[s.pos];
        s.pos += 1;
        Some(Tok::from_raw(raw, s.text, s.file, &self.no_hide))
    }

    fn next_is_lparen(pending: &[Tok], source: &Option<&mut Source>) -> bool {
        match pending.last() {
            Some(t) => t.is("("),
            None => match source {
                Some(s) if s.pos < s.end => {
                    let raw = &s.toks[s.pos];
                    raw.kind == Kind::Punct && &s.text[raw.range()] == "("
                }
                _ => false,
            },
        }
    }

    /// Counts `n` more tokens of expansion work; past the limit, stops the preprocessor.
    fn spend(&mut self, n: usize, at: Loc) -> Result<(), Fatal> {
        self.work += n as u64;
        if self.work > MAX_EXPANSION_TOKENS {
            let d = Diagnostic::new(Code::PreprocessorLimit, at.span(), "macro expansion is too large").with_primary_message("expanding this produces too many tokens").with_note(format!(
                "macro expansion may produce at most {MAX_EXPANSION_TOKENS} tokens in a translation unit, rescans included; a macro that doubles its text at each level grows past any limit"
            ));
            return Err(self.fatal(d, at));
        }
        Ok(())
    }

    /// Fully macro-expands `input`, taking more tokens from `source` when an invocation's
    /// arguments go on past `input` (only text lines have a source). `depth` counts the
    /// argument pre-expansions this call is inside.
    pub fn expand(&mut self, input: Vec<Tok>, mut source: Option<&mut Source>, depth: usize) -> Result<Vec<Tok>, Fatal> {
        let mut pending: Vec<Tok> = input;
        pending.reverse();
        let mut out = Vec::new();
        while let Some(t) = pending.pop() {
            let Some((id, m)) = (t.kind == Kind::Ident).then(|| self.macros.get(&t.text)).flatten() else {
                out.push(t);
                continue;
            };
            if t.hide.contains(&id) {
                out.push(t);
                continue;
            }
            let m = m.clone();
            if m.params.is_some() && !Self::next_is_lparen(&pending, &source) {
                out.push(t);
                continue;
            }
            let (args, end) = match &m.params {
                None => (Vec::new(), t.clone()),
                Some(_) => match self.collect_args(&t, &m, &mut pending, &mut source)? {
                    Some(collected) => collected,
                    None => continue,
                },
            };
            let call = t.loc.to(end.loc);
            self.map.expansions.push(Expansion { name: t.text.to_string(), call, definition: m.loc, parent: t.origin });
            let exp = (self.map.expansions.len() - 1) as u32;
            let hide = if m.params.is_some() { intersect(&t.hide, &end.hide) } else { t.hide.clone() };
            let hide = union(&hide, &Rc::from([id]));
            let mut result = match m.dynamic {
                Some(kind) => vec![self.dynamic_token(kind, &t, exp)],
                None => self.substitute(&m, &args, exp, &hide, depth)?,
            };
            self.spend(1 + result.len(), call)?;
            if let Some(first) = result.first_mut() {
                first.space = t.space;
            }
            pending.extend(result.into_iter().rev());
        }
        Ok(out)
    }

    /// Reads the arguments of a function-like macro after its name `name`; `None` after an
    /// error (reported). Returns them with the closing parenthesis.
    fn collect_args(&mut self, name: &Tok, m: &Macro, pending: &mut Vec<Tok>, source: &mut Option<&mut Source>) -> Result<Option<(Vec<Vec<Tok>>, Tok)>, Fatal> {
        let params = m.params.as_ref().map_or(0, Vec::len);
        let _open = self.pull(pending, source);
        let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut depth = 0usize;
        let close = loop {
            let Some(t) = self.pull(pending, source) else {
                let d = Diagnostic::new(Code::MacroArguments, name.loc.span(), format!("unterminated argument list invoking macro `{}`", name.text))
                    .with_primary_message("the invocation starts here")
                    .with_note("the arguments of a macro end at the next preprocessor directive or at the end of the file");
                self.report_at_tok(d, name);
                return Ok(None);
            };
            if t.is("(") {
                depth += 1;
            } else if t.is(")") {
                if depth == 0 {
                    break t;
                }
                depth -= 1;
            } else if t.is(",") && depth == 0 && !(m.variadic && args.len() >= params) {
                args.push(Vec::new());
                continue;
            }
            args.last_mut().expect("one argument at least").push(t);
        };
        let given = args.len();
        let ok = if params == 0 {
            given == 1 && args[0].is_empty()
        } else if m.variadic {
            given >= params - 1
        } else {
            given == params
        };
        if !ok {
            let expected = if m.variadic { format!("at least {}", params - 1) } else { params.to_string() };
            let given = if params == 0 && args[0].is_empty() { 0 } else { given };
            let d = Diagnostic::new(
                Code::MacroArguments,
                name.loc.to(close.loc).span(),
                format!("macro `{}` takes {expected} argument{}, but {given} {} given", name.text, if expected == "1" { "" } else { "s" }, if given == 1 { "was" } else { "were" }),
            )
            .with_primary_message("in this invocation");
            let mut d = d;
            d.labels.push(self.map.label(m.loc, "the macro is defined here", false));
            self.report_at_tok(d, name);
            return Ok(None);
        }
        while args.len() < params {
            args.push(Vec::new());
        }
        Ok(Some((args, close)))
    }

    fn dynamic_token(&mut self, kind: Dynamic, call: &Tok, exp: u32) -> Tok {
        let site = self.site;
        let (k, text) = match kind {
            Dynamic::File => (Kind::Str, format!("\"{}\"", escape(&self.map.files[site.file as usize].file.name))),
            Dynamic::Line => (Kind::Number, self.map.files[site.file as usize].line_column(site.start).0.to_string()),
            Dynamic::Counter => {
                self.counter += 1;
                (Kind::Number, (self.counter - 1).to_string())
            }
        };
        Tok { kind: k, text: Rc::from(text), space: call.space, loc: call.loc, origin: Some(exp), hide: self.no_hide.clone() }
    }

    /// The replacement list of `m` with its parameters replaced by `args` (C11 6.10.3.1-3).
    fn substitute(&mut self, m: &Macro, args: &[Vec<Tok>], exp: u32, hide: &Rc<[u32]>, depth: usize) -> Result<Vec<Tok>, Fatal> {
        let from_body = |b: &Tok| Tok { origin: Some(exp), hide: hide.clone(), ..b.clone() };
        let mut expanded: Vec<Option<Vec<Tok>>> = vec![None; args.len()];
        let mut out: Vec<Tok> = Vec::new();
        let body = &m.body;
        let variadic_index = if m.variadic { m.params.as_ref().map(|p| p.len() - 1) } else { None };
        let mut i = 0;
        while i < body.len() {
            let b = &body[i];
            let next = body.get(i + 1);
            if m.params.is_some() && b.is("#") {
                if let Some(p) = next.and_then(|n| m.param_index(n)) {
                    let mut s = stringize(&args[p], b.loc, exp, hide);
                    s.space = b.space;
                    out.push(s);
                    i += 2;
                    continue;
                }
            }
            if let Some(n) = next.filter(|_| b.is("##")) {
                let rhs: Vec<Tok> = match m.param_index(n) {
                    Some(p) => {
                        if Some(p) == variadic_index && out.last().is_some_and(|l| l.is(",")) {
                            // GNU: `, ## __VA_ARGS__` drops the comma when there are no variable arguments.
                            if args[p].is_empty() {
                                out.pop();
                            } else {
                                out.extend(args[p].iter().cloned());
                            }
                            i += 2;
                            continue;
                        }
                        args[p].clone()
                    }
                    None => vec![from_body(n)],
                };
                let mut rhs = rhs.into_iter();
                match (out.pop(), rhs.next()) {
                    (Some(lhs), Some(first)) => {
                        let pasted = self.paste(lhs, first, b.loc, exp, hide);
                        out.extend(pasted);
                    }
                    (Some(lhs), None) => out.push(lhs),
                    (None, Some(first)) => out.push(first),
                    (None, None) => {}
                }
                out.extend(rhs);
                i += 2;
                continue;
            }
            if let Some(p) = m.param_index(b) {
                let raw = next.is_some_and(|n| n.is("##"));
                let mut tokens = if raw {
                    if args[p].is_empty() {
                        vec![Tok { kind: Kind::Other, text: Rc::from(""), space: false, loc: b.loc, origin: Some(exp), hide: hide.clone() }]
                    } else {
                        args[p].clone()
                    }
                } else {
                    if expanded[p].is_none() {
                        if depth >= MAX_ARGUMENT_DEPTH {
                            let d = Diagnostic::new(Code::PreprocessorLimit, b.loc.span(), "macro invocations nest too deeply in arguments")
                                .with_note(format!("macro arguments may contain macro invocations at most {MAX_ARGUMENT_DEPTH} levels deep"));
                            return Err(self.fatal(d, self.site));
                        }
                        expanded[p] = Some(self.expand(args[p].clone(), None, depth + 1)?);
                    }
                    expanded[p].clone().expect("just expanded")
                };
                if let Some(first) = tokens.first_mut() {
                    first.space = b.space;
                }
                out.append(&mut tokens);
                i += 1;
                continue;
            }
            out.push(from_body(b));
            i += 1;
        }
        out.retain(|t| !t.is_placemarker());
        for t in &mut out {
            if t.origin != Some(exp) {
                t.hide = union(&t.hide, hide);
            }
        }
        Ok(out)
    }

    /// `lhs ## rhs`: one token, or both unchanged and `E0607` when they do not form one.
    fn paste(&mut self, lhs: Tok, rhs: Tok, op: Loc, exp: u32, hide: &Rc<[u32]>) -> Vec<Tok> {
        if lhs.is_placemarker() {
            return vec![rhs];
        }
        if rhs.is_placemarker() {
            return vec![lhs];
        }
        let text = format!("{}{}", lhs.text, rhs.text);
        let toks = lexer::lex(&text);
        match toks.as_slice() {
            [one] if one.start == 0 && one.end as usize == text.len() => {
                vec![Tok { kind: one.kind, text: Rc::from(text), space: lhs.space, loc: lhs.loc, origin: Some(exp), hide: hide.clone() }]
            }
            _ => {
                let call = self.map.outermost(exp).call;
                let d = Diagnostic::new(Code::InvalidPaste, call.span(), format!("pasting `{}` and `{}` does not give a valid token", lhs.text, rhs.text))
                    .with_primary_message("in this expansion")
                    .with_note("`##` must join two tokens into one token; leave it out to keep them apart");
                let mut d = self.map.located(d, call);
                d.labels.push(self.map.label(op, "`##` is here", false));
                self.report(d);
                vec![lhs, rhs]
            }
        }
    }
}

fn intersect(a: &Rc<[u32]>, b: &Rc<[u32]>) -> Rc<[u32]> {
    if a.is_empty() || Rc::ptr_eq(a, b) {
        return a.clone();
    }
    let v: Vec<u32> = a.iter().copied().filter(|x| b.contains(x)).collect();
    Rc::from(v)
}

/// `"` and `\` escaped, for a string literal.
pub fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// `#param`: the argument's spelling as a string literal (C11 6.10.3.2).
fn stringize(arg: &[Tok], at: Loc, exp: u32, hide: &Rc<[u32]>) -> Tok {
    let mut s = String::from("\"");
    for (k, t) in arg.iter().enumerate() {
        if k > 0 && t.space {
            s.push(' ');
        }
        if matches!(t.kind, Kind::Str | Kind::Char) {
            s.push_str(&escape(&t.text));
        } else {
            s.push_str(&t.text);
        }
    }
    s.push('"');
    Tok { kind: Kind::Str, text: Rc::from(s), space: false, loc: at, origin: Some(exp), hide: hide.clone() }
}
