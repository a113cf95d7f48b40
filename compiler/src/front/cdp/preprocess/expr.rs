//! The `#if` and `#elif` condition (C11 6.10.1): `defined`, `__has_include`, macro expansion,
//! then integer arithmetic in `intmax_t`/`uintmax_t` (64 bits) with C's usual conversions.
//! Identifiers left after expansion are 0, `true` is 1 (C++). Division by zero in a branch that
//! is evaluated is an error (`E0605`), as are a malformed expression and a floating-point or
//! string literal. Parentheses and unary operators nest at most [`MAX_DEPTH`] deep.

use super::lexer::Kind;
use super::macros::Tok;
use super::source_map::{FileId, Loc};
use super::{Fatal, Preprocessor};
use crate::diag::{Code, Diagnostic};
use std::rc::Rc;

/// How deep parentheses and unary operators may nest in one condition.
pub const MAX_DEPTH: usize = 256;

/// A value: 64 bits, and whether C says it is unsigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    /// The bits.
    pub bits: u64,
    /// `uintmax_t` rather than `intmax_t`.
    pub unsigned: bool,
}

impl Value {
    fn signed(v: i64) -> Value {
        Value { bits: v as u64, unsigned: false }
    }
    fn truth(b: bool) -> Value {
        Value::signed(b as i64)
    }
    fn is_true(self) -> bool {
        self.bits != 0
    }
}

/// A failure: the message and the token it is about (`None`: the end of the line).
struct Error(String, Option<Tok>);

struct Parser<'t> {
    toks: &'t [Tok],
    pos: usize,
    depth: usize,
}

impl Preprocessor<'_> {
    /// Evaluates the condition of `#if`/`#elif`; `at` is the directive's name. An error is
    /// reported and counts as false.
    pub(super) fn condition(&mut self, file: FileId, text: &str, args: &[super::lexer::RawToken], at: Loc) -> Result<bool, Fatal> {
        let raw: Vec<Tok> = args.iter().map(|t| Tok::from_raw(t, text, file, &self.no_hide)).collect();
        self.site = at;
        let replaced = self.replace_defined(raw, file);
        let expanded = self.expand(replaced, None, 0)?;
        let finished: Vec<Tok> = self.replace_defined(expanded, file).into_iter().map(|t| if t.kind == Kind::Ident { number(&t, if &*t.text == "true" { "1" } else { "0" }) } else { t }).collect();
        if finished.is_empty() {
            let d = Diagnostic::new(Code::InvalidIfExpression, at.span(), "`#if` with no expression").with_primary_message("expected a condition after this");
            let d = self.map.located(d, at);
            self.report(d);
            return Ok(false);
        }
        let mut p = Parser { toks: &finished, pos: 0, depth: 0 };
        let result = p.conditional(true).and_then(|v| match p.toks.get(p.pos) {
            None => Ok(v),
            Some(t) => Err(Error(format!("unexpected `{}` in the condition", t.text), Some(t.clone()))),
        });
        match result {
            Ok(v) => Ok(v.is_true()),
            Err(Error(message, tok)) => {
                let d = Diagnostic::new(Code::InvalidIfExpression, at.span(), message).with_primary_message("in this condition");
                match tok {
                    Some(t) => self.report_at_tok(d.with_primary_message("here"), &t),
                    None => {
                        let d = self.map.located(d, at);
                        self.report(d);
                    }
                }
                Ok(false)
            }
        }
    }

    /// Replaces `defined X`, `defined(X)`, `__has_include(...)` and the `__has_*` feature
    /// tests by `1` or `0`.
    fn replace_defined(&mut self, toks: Vec<Tok>, file: FileId) -> Vec<Tok> {
        let mut out = Vec::with_capacity(toks.len());
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            let word = if t.kind == Kind::Ident { &*t.text } else { "" };
            match word {
                "defined" => {
                    let (name, next) = if toks.get(i + 1).is_some_and(|t| t.is("(")) {
                        match (toks.get(i + 2), toks.get(i + 3)) {
                            (Some(n), Some(c)) if n.kind == Kind::Ident && c.is(")") => (Some(n), i + 4),
                            _ => (None, i + 1),
                        }
                    } else {
                        (toks.get(i + 1).filter(|n| n.kind == Kind::Ident), i + 2)
                    };
                    match name {
                        Some(n) => {
                            out.push(number(t, if self.macros.is_defined(&n.text) { "1" } else { "0" }));
                            i = next;
                        }
                        None => {
                            // Left as an identifier: the parser reports it.
                            out.push(Tok { kind: Kind::Punct, text: Rc::from("defined"), ..t.clone() });
                            i += 1;
                        }
                    }
                }
                "__has_include" | "__has_include_next" | "__has_attribute" | "__has_cpp_attribute" | "__has_builtin" | "__has_feature" | "__has_extension"
                    if toks.get(i + 1).is_some_and(|t| t.is("(")) =>
                {
                    let mut depth = 0;
                    let mut j = i + 1;
                    while j < toks.len() {
                        if toks[j].is("(") {
                            depth += 1;
                        } else if toks[j].is(")") {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        j += 1;
                    }
                    let inner = &toks[(i + 2).min(j)..j.min(toks.len())];
                    let found = word.starts_with("__has_include") && self.has_include(inner, file);
                    out.push(number(t, if found { "1" } else { "0" }));
                    i = j + 1;
                }
                _ => {
                    out.push(t.clone());
                    i += 1;
                }
            }
        }
        out
    }
}

fn number(like: &Tok, text: &str) -> Tok {
    Tok { kind: Kind::Number, text: Rc::from(text), ..like.clone() }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.peek().is_some_and(|t| t.is(p)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn deeper(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error(format!("the condition nests more than {MAX_DEPTH} levels deep"), self.peek().cloned()));
        }
        Ok(())
    }

    /// `a ? b : c` (right-associative), and the comma operator below it.
    fn conditional(&mut self, eval: bool) -> Result<Value, Error> {
        self.deeper()?;
        let mut v = self.binary(0, eval)?;
        if self.eat("?") {
            let then = self.conditional(eval && v.is_true())?;
            if !self.eat(":") {
                return Err(Error("expected `:` in the conditional expression".into(), self.peek().cloned()));
            }
            let otherwise = self.conditional(eval && !v.is_true())?;
            let unsigned = then.unsigned || otherwise.unsigned;
            v = Value { bits: if v.is_true() { then.bits } else { otherwise.bits }, unsigned };
        }
        while self.eat(",") {
            v = self.conditional(eval)?;
        }
        self.depth -= 1;
        Ok(v)
    }

    /// Binary operators by precedence climbing; `min` is the lowest precedence accepted.
    fn binary(&mut self, min: u8, eval: bool) -> Result<Value, Error> {
        let mut lhs = self.unary(eval)?;
        while let Some(op) = self.peek().filter(|t| t.kind == Kind::Punct).map(|t| t.text.clone()) {
            let Some(prec) = precedence(&op) else { break };
            if prec < min {
                break;
            }
            let op_tok = self.peek().cloned();
            self.pos += 1;
            let short = match &*op {
                "&&" => eval && lhs.is_true(),
                "||" => eval && !lhs.is_true(),
                _ => eval,
            };
            let rhs = self.binary(prec + 1, short)?;
            lhs = apply(&op, lhs, rhs, eval).map_err(|m| Error(m, op_tok))?;
        }
        Ok(lhs)
    }

    fn unary(&mut self, eval: bool) -> Result<Value, Error> {
        let Some(t) = self.peek().cloned() else {
            return Err(Error("the condition ends where a value was expected".into(), None));
        };
        self.pos += 1;
        match (t.kind, &*t.text) {
            (Kind::Punct, "(") => {
                self.deeper()?;
                let v = self.conditional(eval)?;
                if !self.eat(")") {
                    return Err(Error("expected `)`".into(), self.peek().cloned()));
                }
                self.depth -= 1;
                Ok(v)
            }
            (Kind::Punct, op @ ("+" | "-" | "~" | "!")) => {
                self.deeper()?;
                let v = self.unary(eval)?;
                self.depth -= 1;
                Ok(match op {
                    "+" => v,
                    "-" => Value { bits: v.bits.wrapping_neg(), unsigned: v.unsigned },
                    "~" => Value { bits: !v.bits, unsigned: v.unsigned },
                    _ => Value::truth(!v.is_true()),
                })
            }
            (Kind::Number, text) => parse_number(text).map_err(|m| Error(m, Some(t.clone()))),
            (Kind::Char, text) => parse_char(text).map_err(|m| Error(m, Some(t.clone()))),
            (Kind::Punct, "defined") => Err(Error("`defined` needs a macro name".into(), Some(t.clone()))),
            _ => Err(Error(format!("`{}` cannot be used in a preprocessor condition", t.text), Some(t.clone()))),
        }
    }
}

fn precedence(op: &str) -> Option<u8> {
    Some(match op {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | ">" | "<=" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

fn apply(op: &str, a: Value, b: Value, eval: bool) -> Result<Value, String> {
    let unsigned = a.unsigned || b.unsigned;
    let (x, y) = (a.bits, b.bits);
    let (sx, sy) = (x as i64, y as i64);
    let cmp = |lt: bool| Ok(Value::truth(lt));
    let v = match op {
        "||" => return Ok(Value::truth(a.is_true() || b.is_true())),
        "&&" => return Ok(Value::truth(a.is_true() && b.is_true())),
        "|" => x | y,
        "^" => x ^ y,
        "&" => x & y,
        "==" => return cmp(x == y),
        "!=" => return cmp(x != y),
        "<" => return cmp(if unsigned { x < y } else { sx < sy }),
        ">" => return cmp(if unsigned { x > y } else { sx > sy }),
        "<=" => return cmp(if unsigned { x <= y } else { sx <= sy }),
        ">=" => return cmp(if unsigned { x >= y } else { sx >= sy }),
        "<<" => return Ok(Value { bits: if y >= 64 { 0 } else { x << y }, unsigned: a.unsigned }),
        ">>" => {
            let bits = if a.unsigned {
                if y >= 64 {
                    0
                } else {
                    x >> y
                }
            } else {
                (sx >> y.min(63)) as u64
            };
            return Ok(Value { bits, unsigned: a.unsigned });
        }
        "+" => x.wrapping_add(y),
        "-" => x.wrapping_sub(y),
        "*" => x.wrapping_mul(y),
        "/" | "%" => {
            if y == 0 {
                if !eval {
                    return Ok(Value { bits: 0, unsigned });
                }
                return Err(format!("division by zero in a preprocessor condition (`{op}`)"));
            }
            match (op, unsigned) {
                ("/", true) => x / y,
                ("%", true) => x % y,
                ("/", false) => sx.wrapping_div(sy) as u64,
                _ => sx.wrapping_rem(sy) as u64,
            }
        }
        _ => unreachable!("precedence() lists the operators"),
    };
    Ok(Value { bits: v, unsigned })
}

/// An integer literal: decimal, octal, hex or binary, `'` separators, `u`/`l`/`ll` suffixes.
pub fn parse_number(text: &str) -> Result<Value, String> {
    let lower = text.to_ascii_lowercase().replace('\'', "");
    let digits_end = lower.trim_end_matches(['u', 'l', 'z']).len();
    let (body, suffix) = lower.split_at(digits_end);
    let (radix, digits) = if let Some(h) = body.strip_prefix("0x") {
        (16, h)
    } else if let Some(b) = body.strip_prefix("0b") {
        (2, b)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if body.contains(['.', 'e', 'p']) && radix != 16 || body.contains('.') {
        return Err(format!("floating-point literal `{text}` in a preprocessor condition"));
    }
    let value = u64::from_str_radix(digits, radix).map_err(|_| format!("invalid integer literal `{text}`"))?;
    let unsigned = suffix.contains('u') || value > i64::MAX as u64;
    Ok(Value { bits: value, unsigned })
}

/// A character literal's value, as gcc computes it for `char` (signed) on x86-64.
fn parse_char(text: &str) -> Result<Value, String> {
    let start = text.find('\'').unwrap_or(0);
    let wide = start > 0;
    let inner = text.get(start + 1..text.len().saturating_sub(1)).filter(|_| text.len() >= start + 2 && text.ends_with('\''));
    let Some(inner) = inner.filter(|s| !s.is_empty()) else { return Err(format!("invalid character literal {text}")) };
    let mut chars = inner.chars();
    let mut values = Vec::new();
    while let Some(c) = chars.next() {
        let v = if c == '\\' {
            match chars.next() {
                Some('n') => 10,
                Some('t') => 9,
                Some('r') => 13,
                Some(d @ '0'..='7') => {
                    let mut v = d.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match chars.clone().next().and_then(|e| e.to_digit(8)) {
                            Some(e) => {
                                v = v * 8 + e;
                                chars.next();
                            }
                            None => break,
                        }
                    }
                    v
                }
                Some('x') => {
                    let hex: String = chars.clone().take_while(|c| c.is_ascii_hexdigit()).collect();
                    for _ in 0..hex.len() {
                        chars.next();
                    }
                    u32::from_str_radix(&hex, 16).map_err(|_| format!("invalid character literal {text}"))?
                }
                Some('a') => 7,
                Some('b') => 8,
                Some('f') => 12,
                Some('v') => 11,
                Some(other) => other as u32,
                None => return Err(format!("invalid character literal {text}")),
            }
        } else {
            c as u32
        };
        values.push(v);
    }
    if wide || values.len() != 1 {
        let v = values.iter().fold(0i64, |acc, &v| acc.wrapping_shl(8) | v as i64);
        return Ok(Value::signed(if wide { values[0] as i64 } else { v as i32 as i64 }));
    }
    Ok(Value::signed(values[0] as u8 as i8 as i64))
}
