//! The walk over one file: runs of text lines (copied, with macro invocations expanded),
//! directives, and the stack of open `#if` groups.
//!
//! The `#if` stack is a vector shared by all files (each group remembers its file, so an
//! `#endif` cannot close a group of another file); nesting costs no recursion, so 10,000 nested
//! groups are as cheap as one. In a skipped group only the conditional directives are read.

use super::lexer::{self, Kind, RawToken};
use super::macros::{Dynamic, Macro, Source, Tok};
use super::source_map::{FileId, Loc};
use super::{Fatal, Preprocessor, MAX_OUTPUT_BYTES};
use crate::diag::{Code, Diagnostic};
use std::rc::Rc;

/// One open `#if` group.
#[derive(Clone, Copy, Debug)]
pub struct Cond {
    /// The `#if`, `#ifdef` or `#ifndef`.
    pub loc: Loc,
    /// Lines around the group are compiled.
    pub parent_active: bool,
    /// The current branch is compiled.
    pub active: bool,
    /// Some branch was (or, inside a skipped group, counts as) taken.
    pub taken: bool,
    /// `#else` was seen.
    pub seen_else: bool,
}

fn is_hash(t: &RawToken, text: &str) -> bool {
    t.kind == Kind::Punct && matches!(&text[t.range()], "#" | "%:")
}

impl Preprocessor<'_> {
    fn active(&self) -> bool {
        self.conds.last().is_none_or(|c| c.active)
    }

    /// Appends `text[from..to]` of `file` to the output.
    fn copy(&mut self, file: FileId, text: &str, from: usize, to: usize) -> Result<(), Fatal> {
        if to <= from {
            return Ok(());
        }
        self.grow(to - from, Loc { file, start: from as u32, end: from as u32 })?;
        self.map.push_verbatim(self.out.len(), to - from, file, from as u32);
        self.out.push_str(&text[from..to]);
        Ok(())
    }

    /// Checks that `n` more bytes of output stay under [`MAX_OUTPUT_BYTES`].
    fn grow(&mut self, n: usize, at: Loc) -> Result<(), Fatal> {
        if self.out.len() + n > MAX_OUTPUT_BYTES {
            let d = Diagnostic::new(Code::PreprocessorLimit, at.span(), "the preprocessed source is too large")
                .with_primary_message("the output passes the limit here")
                .with_note(format!("the preprocessed text may have at most {MAX_OUTPUT_BYTES} bytes (64 MiB)"));
            return Err(self.fatal(d, at));
        }
        Ok(())
    }

    /// Writes the tokens of an expansion, each after one space.
    fn write_tokens(&mut self, toks: &[Tok]) -> Result<(), Fatal> {
        for t in toks {
            self.grow(t.text.len() + 2, self.site)?;
            if !self.out.ends_with(|c: char| c.is_ascii_whitespace()) {
                self.out.push(' ');
            }
            self.map.push_token(self.out.len(), t.text.len(), t.loc, t.origin);
            self.out.push_str(&t.text);
        }
        self.out.push(' ');
        Ok(())
    }

    /// Preprocesses file `file` into the output.
    pub(super) fn run_file(&mut self, file: FileId) -> Result<(), Fatal> {
        let entry = self.map.files[file as usize].file.clone();
        let text: &str = &entry.text;
        // Most files of a program have no directive, and a huge one should cost no token
        // vector: with no `#` and no macro name in it, the file is its own output.
        let no_directive = !text.contains('#') && !text.contains("%:");
        if no_directive && !lexer::Lexer::new(text).any(|t| t.kind == Kind::Ident && self.macros.is_defined(&t.text(text))) {
            return self.copy(file, text, 0, text.len());
        }
        let toks = lexer::lex(text);
        let directive_starts: Vec<usize> = (0..toks.len()).filter(|&i| toks[i].line_start && is_hash(&toks[i], text)).collect();
        let base = self.conds.len();
        let mut next_directive = 0;
        let mut copied = 0usize;
        let mut i = 0;
        while i < toks.len() {
            while next_directive < directive_starts.len() && directive_starts[next_directive] < i {
                next_directive += 1;
            }
            let run_end = directive_starts.get(next_directive).copied().unwrap_or(toks.len());
            if run_end == i {
                let end = directive_starts.get(next_directive + 1).copied().unwrap_or(toks.len());
                let end = (i + 1..end).find(|&k| toks[k].line_start).unwrap_or(end);
                if self.active() {
                    self.copy(file, text, copied, toks[i].start as usize)?;
                }
                copied = past_line_splices(text, toks[end - 1].end as usize);
                self.directive(file, text, &toks[i..end], base)?;
                i = end;
                continue;
            }
            if !self.active() {
                // Skip to the next directive.
                copied = toks[run_end - 1].end as usize;
                i = run_end;
                continue;
            }
            let t = &toks[i];
            let invoked = t.kind == Kind::Ident
                && match self.macros.get(&text[t.range()]) {
                    Some((_, m)) if m.params.is_some() => i + 1 < run_end && toks[i + 1].kind == Kind::Punct && &text[toks[i + 1].range()] == "(",
                    Some(_) => true,
                    None => false,
                };
            if !invoked {
                i += 1;
                continue;
            }
            self.copy(file, text, copied, t.start as usize)?;
            self.site = Loc { file, start: t.start, end: t.end };
            let first = Tok::from_raw(t, text, file, &self.no_hide);
            let mut source = Source { file, text, toks: &toks, pos: i + 1, end: run_end };
            let expanded = self.expand(vec![first], Some(&mut source), 0)?;
            self.write_tokens(&expanded)?;
            i = source.pos;
            copied = toks[i - 1].end as usize;
        }
        if self.active() {
            self.copy(file, text, copied, text.len())?;
        }
        if self.conds.len() > base {
            let open = self.conds[base].loc;
            self.conds.truncate(base);
            let d = Diagnostic::new(Code::UnbalancedConditional, open.span(), "unterminated conditional directive")
                .with_primary_message("this group has no `#endif`")
                .with_note("every `#if`, `#ifdef` and `#ifndef` needs an `#endif` in the same file");
            let d = self.map.located(d, open);
            self.report(d);
        }
        Ok(())
    }

    /// One directive line; `line[0]` is the `#`, `base` the `#if` depth at the file's start.
    fn directive(&mut self, file: FileId, text: &str, line: &[RawToken], base: usize) -> Result<(), Fatal> {
        let loc_of = |t: &RawToken| Loc { file, start: t.start, end: t.end };
        let whole = Loc { file, start: line[0].start, end: line[line.len() - 1].end };
        let Some(name_tok) = line.get(1) else { return Ok(()) };
        let name = name_tok.text(text);
        let args = &line[2..];
        let at = loc_of(name_tok);
        match &*name {
            "if" | "ifdef" | "ifndef" => {
                let value = if !self.active() {
                    false
                } else if name == "if" {
                    self.condition(file, text, args, at)?
                } else {
                    match args.first().filter(|t| t.kind == Kind::Ident) {
                        Some(t) => self.macros.is_defined(&t.text(text)) == (name == "ifdef"),
                        None => {
                            self.malformed(at, format!("`#{name}` needs a macro name"), "write the name of a macro after it");
                            false
                        }
                    }
                };
                let parent_active = self.active();
                self.conds.push(Cond { loc: whole, parent_active, active: value, taken: value || !parent_active, seen_else: false });
            }
            "elif" | "elifdef" | "elifndef" | "else" => {
                let Some(&cond) = self.conds.last().filter(|_| self.conds.len() > base) else {
                    self.unbalanced(at, format!("`#{name}` without `#if`"));
                    return Ok(());
                };
                if cond.seen_else {
                    let d = Diagnostic::new(Code::UnbalancedConditional, at.span(), format!("`#{name}` after `#else`")).with_primary_message("this comes after the group's `#else`");
                    let mut d = self.map.located(d, at);
                    d.labels.push(self.map.label(cond.loc, "the group starts here", false));
                    self.report(d);
                    return Ok(());
                }
                let value = if name == "else" {
                    !cond.taken
                } else if cond.taken {
                    false
                } else if name == "elif" {
                    self.condition(file, text, args, at)?
                } else {
                    args.first().filter(|t| t.kind == Kind::Ident).is_some_and(|t| self.macros.is_defined(&t.text(text)) == (name == "elifdef"))
                };
                let top = self.conds.last_mut().expect("checked above");
                top.active = value && top.parent_active;
                top.taken |= value;
                top.seen_else = name == "else";
            }
            "endif" => {
                if self.conds.len() > base {
                    self.conds.pop();
                } else {
                    self.unbalanced(at, "`#endif` without `#if`".into());
                }
            }
            _ if !self.active() => {}
            "define" => self.define(file, text, args, at),
            "undef" => match args.first().filter(|t| t.kind == Kind::Ident) {
                Some(t) => self.macros.undefine(&t.text(text)),
                None => self.malformed(at, "`#undef` needs a macro name".into(), "write the name of a macro after it"),
            },
            "include" | "include_next" => self.include(file, text, args, whole)?,
            "error" | "warning" => {
                let message = match (args.first(), args.last()) {
                    (Some(a), Some(b)) => text[a.start as usize..b.end as usize].to_string(),
                    _ => String::new(),
                };
                let (code, what) = if name == "error" { (Code::ErrorDirective, "#error") } else { (Code::WarningDirective, "#warning") };
                let d = Diagnostic::new(code, whole.span(), if message.is_empty() { what.to_string() } else { format!("{what}: {message}") })
                    .with_primary_message(format!("the program's `{what}` directive"));
                let d = self.map.located(d, whole);
                self.report(d);
            }
            "pragma" => {
                if args.len() == 1 && args[0].text(text) == "once" {
                    self.includes.pragma_once(file);
                } else if let Some(said) = pragma_message(text, args) {
                    // `#pragma message ("text")`: a remark, as nvcc's (`remark #20200-D`) and as
                    // CUDA C++'s through Clang (`R1034`).
                    let d = Diagnostic::new(Code::PragmaMessage, loc_of(&args[0]).span(), crate::diag::words::pragma_message(&said));
                    let d = self.map.located(d, loc_of(&args[0]));
                    self.report(d);
                } else {
                    self.copy(file, text, line[0].start as usize, whole.end as usize)?;
                }
            }
            "line" | "ident" | "sccs" => {}
            _ if name_tok.kind == Kind::Number => {} // a GNU line marker: `# 12 "file.c"`
            _ => {
                let d = Diagnostic::new(Code::UnknownDirective, whole.span(), format!("unknown preprocessor directive `#{name}`"))
                    .with_primary_message("not a directive")
                    .with_note("the directives are #define, #undef, #include, #if, #ifdef, #ifndef, #elif, #else, #endif, #error, #warning, #pragma and #line");
                let d = self.map.located(d, whole);
                self.report(d);
            }
        }
        Ok(())
    }

    fn malformed(&mut self, at: Loc, message: String, help: &str) {
        let d = Diagnostic::new(Code::MalformedDirective, at.span(), message).with_primary_message(help.to_string());
        let d = self.map.located(d, at);
        self.report(d);
    }

    fn unbalanced(&mut self, at: Loc, message: String) {
        let d = Diagnostic::new(Code::UnbalancedConditional, at.span(), message)
            .with_primary_message("no open group in this file")
            .with_note("`#elif`, `#else` and `#endif` close a group opened by `#if`, `#ifdef` or `#ifndef` in the same file");
        let d = self.map.located(d, at);
        self.report(d);
    }

    /// `#define`: checks the definition and records it.
    fn define(&mut self, file: FileId, text: &str, args: &[RawToken], at: Loc) {
        let loc_of = |t: &RawToken| Loc { file, start: t.start, end: t.end };
        let Some(name_tok) = args.first() else {
            return self.malformed(at, "`#define` needs a macro name".into(), "write the name of the macro after it");
        };
        let name = name_tok.text(text);
        if name_tok.kind != Kind::Ident {
            return self.malformed(loc_of(name_tok), format!("`{name}` cannot be a macro name"), "macro names are identifiers");
        }
        if name == "defined" || name == "__VA_ARGS__" {
            return self.malformed(loc_of(name_tok), format!("`{name}` cannot be a macro name"), "this name is reserved by the preprocessor");
        }
        let mut k = 1;
        let mut params = None;
        let mut variadic = false;
        if args.get(1).is_some_and(|t| !t.space_before && &text[t.range()] == "(") {
            let mut list: Vec<Rc<str>> = Vec::new();
            k = 2;
            let mut closed = false;
            while let Some(t) = args.get(k) {
                let s = t.text(text);
                k += 1;
                match (&*s, t.kind) {
                    (")", _) if list.is_empty() || variadic => {
                        closed = true;
                        break;
                    }
                    ("...", _) => {
                        list.push(Rc::from("__VA_ARGS__"));
                        variadic = true;
                    }
                    (_, Kind::Ident) if !variadic && s != "__VA_ARGS__" && !list.iter().any(|p| **p == *s) => {
                        list.push(Rc::from(&*s));
                        if args.get(k).is_some_and(|t| &text[t.range()] == "...") {
                            variadic = true;
                            k += 1;
                        }
                    }
                    _ => {
                        return self.malformed(loc_of(t), format!("`{s}` is not a parameter name here"), "expected a parameter name, `...` or `)`");
                    }
                }
                match args.get(k).map(|t| t.text(text)) {
                    Some(s) if s == "," && !variadic => k += 1,
                    Some(s) if s == ")" => {
                        k += 1;
                        closed = true;
                        break;
                    }
                    _ => {
                        let t = args.get(k).unwrap_or(&args[k - 1]);
                        return self.malformed(loc_of(t), "the parameter list is not closed".into(), "expected `,` or `)`");
                    }
                }
            }
            if !closed {
                return self.malformed(loc_of(&args[k - 1]), "the parameter list is not closed".into(), "expected `)`");
            }
            params = Some(list);
        }
        let mut body: Vec<Tok> = args[k..].iter().map(|t| Tok::from_raw(t, text, file, &self.no_hide)).collect();
        if let Some(first) = body.first_mut() {
            first.space = false;
        }
        let m = Macro { params, variadic, body, loc: loc_of(name_tok), dynamic: None };
        if let Some(bad) = m.body.first().filter(|t| t.is("##")).or_else(|| m.body.last().filter(|t| t.is("##"))) {
            let d = Diagnostic::new(Code::InvalidPaste, bad.loc.span(), "`##` cannot be at either end of a macro's replacement")
                .with_primary_message("nothing to paste on this side")
                .with_note("`##` joins the tokens on its two sides");
            let d = self.map.located(d, bad.loc);
            return self.report(d);
        }
        if m.params.is_some() {
            for (i, t) in m.body.iter().enumerate() {
                let next_is_param = m.body.get(i + 1).is_some_and(|n| n.kind == Kind::Ident && m.params.as_ref().is_some_and(|p| p.contains(&n.text)));
                if t.is("#") && !next_is_param {
                    let d = Diagnostic::new(Code::InvalidPaste, t.loc.span(), "`#` is not followed by a macro parameter")
                        .with_primary_message("`#` makes a string of a parameter")
                        .with_note("in a function-like macro, `#` must be followed by the name of a parameter");
                    let d = self.map.located(d, t.loc);
                    return self.report(d);
                }
            }
        }
        let m = Macro { dynamic: dynamic_kind(&name, file, &self.map), ..m };
        let previous = self.macros.define(&name, m.clone());
        if let Some(previous) = previous.filter(|p| !p.same_as(&m)) {
            let d = Diagnostic::new(Code::MacroRedefined, m.loc.span(), format!("macro `{name}` redefined"))
                .with_primary_message("this definition replaces the earlier one")
                .with_note("the last definition is the one used");
            let mut d = self.map.located(d, m.loc);
            d.labels.push(self.map.label(previous.loc, "the earlier definition", false));
            self.report(d);
        }
    }
}

/// `__FILE__`, `__LINE__` and `__COUNTER__` are computed at each use when the built-in prelude
/// defines them.
fn dynamic_kind(name: &str, file: FileId, map: &super::SourceMap) -> Option<Dynamic> {
    if map.files[file as usize].file.name != super::predefined::BUILT_IN {
        return None;
    }
    match name {
        "__FILE__" => Some(Dynamic::File),
        "__LINE__" => Some(Dynamic::Line),
        "__COUNTER__" => Some(Dynamic::Counter),
        _ => None,
    }
}

/// Past the blanks and backslash-newlines that may end a directive's line after its last
/// token (`#define A x \` followed by an empty line): they belong to the directive, and
/// copied to the output the backslash would reach the lexer.
fn past_line_splices(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = at;
    loop {
        match bytes.get(at..) {
            Some([b' ' | b'\t' | b'\r', ..]) => at += 1,
            Some([b'\\', b'\n', ..]) => {
                at += 2;
                end = at;
            }
            Some([b'\\', b'\r', b'\n', ..]) => {
                at += 3;
                end = at;
            }
            _ => return end,
        }
    }
}

/// The text of `#pragma message ("text")` or `#pragma message "text"` (its literal's contents,
/// as written), given the tokens after `pragma`; `None` for any other pragma.
fn pragma_message(text: &str, args: &[RawToken]) -> Option<String> {
    let (first, rest) = args.split_first()?;
    if first.text(text) != "message" {
        return None;
    }
    let inner = match rest {
        [open, inner @ .., close] if open.text(text) == "(" && close.text(text) == ")" => inner,
        all => all,
    };
    let literals = inner.iter().map(|t| t.text(text)).map(|t| t.strip_prefix('"').and_then(|t| t.strip_suffix('"')).map(str::to_string)).collect::<Option<Vec<_>>>()?;
    (!literals.is_empty()).then(|| literals.concat())
}
