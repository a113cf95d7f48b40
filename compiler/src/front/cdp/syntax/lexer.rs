//! Tokens (logos).
//!
//! [`lex`] turns the source into a vector of `(start, token, end)` triples for the parser and a
//! list of diagnostics. Comments, `#include` and `#pragma` lines are dropped here; malformed
//! literals are reported here and still produce a token (with a placeholder value), so that the
//! parser does not report a second, confusing error at the same place.
//!
//! Struct names: after lexing, every identifier that follows the keyword `struct` (or `union`) anywhere in
//! the file is a *type name*, and all occurrences of that identifier become
//! [`Tok::TypeIdent`]. This keeps the grammar LR(1) without a symbol table, at the price that a
//! variable, function or field may not share its name with a struct.

use logos::{Lexer, Logos};

use super::ast::IntSuffix;
use crate::diag::{Code, Diagnostic, Span};

/// The words that name (part of) a builtin type: `unsigned long long int` is four of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeKw {
    Void,
    Bool,
    Char,
    Short,
    Int,
    Long,
    Signed,
    Unsigned,
    Float,
    Double,
    SizeT,
    Dim3,
    Stream,
    Event,
    CudaError,
}

impl TypeKw {
    pub fn as_str(self) -> &'static str {
        match self {
            TypeKw::Void => "void",
            TypeKw::Bool => "bool",
            TypeKw::Char => "char",
            TypeKw::Short => "short",
            TypeKw::Int => "int",
            TypeKw::Long => "long",
            TypeKw::Signed => "signed",
            TypeKw::Unsigned => "unsigned",
            TypeKw::Float => "float",
            TypeKw::Double => "double",
            TypeKw::SizeT => "size_t",
            TypeKw::Dim3 => "dim3",
            TypeKw::Stream => "cudaStream_t",
            TypeKw::Event => "cudaEvent_t",
            TypeKw::CudaError => "cudaError_t",
        }
    }
}

/// Function and variable qualifiers other than `extern` (which may be `extern "C"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QualKw {
    Global,
    Device,
    Host,
    Constant,
    Shared,
    Managed,
    Static,
    Inline,
    ForceInline,
    NoInline,
}

impl QualKw {
    pub fn as_str(self) -> &'static str {
        match self {
            QualKw::Global => "__global__",
            QualKw::Device => "__device__",
            QualKw::Host => "__host__",
            QualKw::Constant => "__constant__",
            QualKw::Shared => "__shared__",
            QualKw::Managed => "__managed__",
            QualKw::Static => "static",
            QualKw::Inline => "inline",
            QualKw::ForceInline => "__forceinline__",
            QualKw::NoInline => "__noinline__",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntLit {
    pub value: u64,
    pub suffix: IntSuffix,
    pub decimal: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatLit {
    pub value: f64,
    pub is_float: bool,
}

/// The lexer's error: a character that starts no token. Everything else (bad literals,
/// unterminated comments) is reported through the extras so that lexing can go on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LexError;

#[derive(Logos, Clone, Debug, PartialEq)]
#[logos(extras = Vec<Diagnostic>)]
#[logos(error = LexError)]
pub enum Tok {
    #[regex("[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Ident(String),
    /// An identifier declared as a struct name somewhere in the file (see the module docs).
    TypeIdent(String),

    #[token("void", |_| TypeKw::Void)]
    #[token("bool", |_| TypeKw::Bool)]
    #[token("char", |_| TypeKw::Char)]
    #[token("short", |_| TypeKw::Short)]
    #[token("int", |_| TypeKw::Int)]
    #[token("long", |_| TypeKw::Long)]
    #[token("signed", |_| TypeKw::Signed)]
    #[token("unsigned", |_| TypeKw::Unsigned)]
    #[token("float", |_| TypeKw::Float)]
    #[token("double", |_| TypeKw::Double)]
    #[token("size_t", |_| TypeKw::SizeT)]
    #[token("dim3", |_| TypeKw::Dim3)]
    #[token("cudaStream_t", |_| TypeKw::Stream)]
    #[token("cudaEvent_t", |_| TypeKw::Event)]
    #[token("cudaError_t", |_| TypeKw::CudaError)]
    TypeKw(TypeKw),

    #[token("__global__", |_| QualKw::Global)]
    #[token("__device__", |_| QualKw::Device)]
    #[token("__host__", |_| QualKw::Host)]
    #[token("__constant__", |_| QualKw::Constant)]
    #[token("__shared__", |_| QualKw::Shared)]
    #[token("__managed__", |_| QualKw::Managed)]
    #[token("static", |_| QualKw::Static)]
    #[token("inline", |_| QualKw::Inline)]
    #[token("__forceinline__", |_| QualKw::ForceInline)]
    #[token("__noinline__", |_| QualKw::NoInline)]
    Qual(QualKw),

    #[token("extern")]
    Extern,
    #[token("struct")]
    Struct,
    #[token("const")]
    Const,
    /// `volatile`, and GCC's `__volatile__`/`__volatile` that headers and `asm` statements use
    /// (after `asm`, `front::asm` makes it [`Tok::AsmVolatile`]).
    #[token("volatile")]
    #[token("__volatile__")]
    #[token("__volatile")]
    Volatile,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("while")]
    While,
    #[token("do")]
    Do,
    #[token("for")]
    For,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("return")]
    Return,
    // ---- C's other statements and unions (`switch`, labels, `goto`) ----
    #[token("switch")]
    Switch,
    #[token("case")]
    Case,
    #[token("default")]
    Default,
    #[token("goto")]
    Goto,
    /// `union`: laid out by sema with every member at offset 0.
    #[token("union")]
    Union,
    #[token("sizeof")]
    Sizeof,
    #[token("true")]
    True,
    #[token("false")]
    False,

    /// Numbers are matched as C "preprocessing numbers" and then checked, so that `08`,
    /// `1.2.3` or `12abc` give one clear error instead of several tokens.
    Int(IntLit),
    Float(FloatLit),
    Char(u8),
    Str(Vec<u8>),
    /// Never produced: the callbacks return [`Tok::Int`], [`Tok::Float`], [`Tok::Char`] or
    /// [`Tok::Str`].
    // `'` between digits is C++14's digit separator (`1'000'000`).
    #[regex(r"\.?[0-9]([0-9A-Za-z_.]|[eEpP][+-]|'[0-9A-Za-z])*", lex_number)]
    #[token("'", lex_char)]
    #[token("\"", lex_string)]
    Literal,

    /// Whitespace, comments and accepted directives: [`lex`] drops these. They are tokens rather
    /// than logos skips because logos restarts itself recursively after a skip, so a long run
    /// of comment lines would overflow the stack (found by the hostile-source tests).
    #[regex(r"[ \t\r\n\x0B\x0C]+")]
    #[token("/*", block_comment)]
    #[regex("//[^\n]*")]
    #[token("#", directive)]
    // `__restrict__` is only an optimisation hint; it is accepted and ignored.
    #[token("__restrict__")]
    #[token("__restrict")]
    Skipped,

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(";")]
    Semi,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    /// `...`: only GNU's `case low ... high:` range (refused by sema) uses it in device code.
    #[token("...")]
    Ellipsis,
    #[token("->")]
    Arrow,
    #[token("++")]
    PlusPlus,
    #[token("--")]
    MinusMinus,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("&")]
    Amp,
    #[token("^")]
    Caret,
    #[token("|")]
    Pipe,
    #[token("&&")]
    AmpAmp,
    #[token("||")]
    PipePipe,
    #[token("!")]
    Bang,
    #[token("~")]
    Tilde,
    #[token("?")]
    Question,
    #[token(":")]
    Colon,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token("%=")]
    PercentAssign,
    #[token("<<=")]
    ShlAssign,
    #[token(">>=")]
    ShrAssign,
    #[token("&=")]
    AmpAssign,
    #[token("^=")]
    CaretAssign,
    #[token("|=")]
    PipeAssign,
    /// `__launch_bounds__`, followed by its parenthesised arguments.
    #[token("__launch_bounds__")]
    LaunchBounds,
    #[token("<<<")]
    LaunchOpen,
    #[token(">>>")]
    LaunchClose,

    // ---- `::` and `typedef` ----
    /// `::`: a qualified name, C++ (`front::cuda_cxx`, E0923), or between an `asm` statement's
    /// operand lists.
    #[token("::")]
    ColonColon,
    #[token("typedef")]
    Typedef,

    // ---- GCC-style inline assembly (`sema::asm`) ----
    #[token("asm")]
    #[token("__asm__")]
    #[token("__asm")]
    Asm,
    /// `volatile` (or `__volatile__`, `__volatile`) right after `asm`: the asm statement's
    /// qualifier, not C's; no spelling of its own, `front::asm` marks it.
    AsmVolatile,
    /// The `(` of a function-pointer declarator, `int (*op)(int)`; no spelling of its own,
    /// `front::fn_pointers` marks it.
    FnPtrOpen,
}

impl Tok {
    /// How the token reads in a message: "`;`", "identifier `x`", "keyword `while`".
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("identifier `{name}`"),
            Tok::TypeIdent(name) => format!("struct name `{name}`"),
            Tok::TypeKw(kw) => format!("type `{}`", kw.as_str()),
            Tok::Qual(q) => format!("qualifier `{}`", q.as_str()),
            Tok::Int(_) => "integer literal".to_string(),
            Tok::Float(_) => "floating-point literal".to_string(),
            Tok::Char(_) => "character literal".to_string(),
            Tok::Str(_) => "string literal".to_string(),
            other => match other.text() {
                Some(text) if text.chars().all(|c| c.is_ascii_alphabetic()) => {
                    format!("keyword `{text}`")
                }
                Some(text) => format!("`{text}`"),
                None => "token".to_string(),
            },
        }
    }

    /// The spelling of a fixed token.
    pub fn text(&self) -> Option<&'static str> {
        Some(match self {
            Tok::Extern => "extern",
            Tok::Struct => "struct",
            Tok::Const => "const",
            Tok::Volatile => "volatile",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::While => "while",
            Tok::Do => "do",
            Tok::For => "for",
            Tok::Break => "break",
            Tok::Continue => "continue",
            Tok::Return => "return",
            Tok::Switch => "switch",
            Tok::Case => "case",
            Tok::Default => "default",
            Tok::Goto => "goto",
            Tok::Union => "union",
            Tok::Sizeof => "sizeof",
            Tok::True => "true",
            Tok::False => "false",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Semi => ";",
            Tok::Comma => ",",
            Tok::Dot => ".",
            Tok::Ellipsis => "...",
            Tok::Arrow => "->",
            Tok::PlusPlus => "++",
            Tok::MinusMinus => "--",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Le => "<=",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::Amp => "&",
            Tok::Caret => "^",
            Tok::Pipe => "|",
            Tok::AmpAmp => "&&",
            Tok::PipePipe => "||",
            Tok::Bang => "!",
            Tok::Tilde => "~",
            Tok::Question => "?",
            Tok::Colon => ":",
            Tok::Assign => "=",
            Tok::PlusAssign => "+=",
            Tok::MinusAssign => "-=",
            Tok::StarAssign => "*=",
            Tok::SlashAssign => "/=",
            Tok::PercentAssign => "%=",
            Tok::ShlAssign => "<<=",
            Tok::ShrAssign => ">>=",
            Tok::AmpAssign => "&=",
            Tok::CaretAssign => "^=",
            Tok::PipeAssign => "|=",
            Tok::LaunchOpen => "<<<",
            Tok::LaunchBounds => "__launch_bounds__",
            Tok::LaunchClose => ">>>",
            Tok::ColonColon => "::",
            Tok::Typedef => "typedef",
            Tok::Asm => "asm",
            Tok::AsmVolatile => "volatile",
            Tok::FnPtrOpen => "(",
            _ => return None,
        })
    }
}

/// A token with its byte range.
pub type Spanned = (usize, Tok, usize);

/// Lexes the whole source. Lexical errors are returned as diagnostics; the token vector holds
/// every token that could be formed.
pub fn lex(source: &str) -> (Vec<Spanned>, Vec<Diagnostic>) {
    let mut lexer = Tok::lexer(source);
    let mut tokens = Vec::new();
    // Invalid characters are collected separately so that a run of them is one diagnostic.
    let mut invalid: Vec<(usize, usize)> = Vec::new();
    let mut invalid_dropped = 0;
    while let Some(result) = lexer.next() {
        let span = lexer.span();
        match result {
            Ok(Tok::Skipped) => {}
            Ok(tok) => tokens.push((span.start, tok, span.end)),
            // A run of NUL bytes, or of other invalid characters, is one diagnostic.
            Err(LexError) => match (invalid.len() > crate::diag::MAX_DIAGNOSTICS, invalid.last_mut()) {
                (_, Some(last)) if last.1 == span.start && is_nul(source, last.0) == is_nul(source, span.start) => last.1 = span.end,
                (true, _) => invalid_dropped += 1,
                _ => invalid.push((span.start, span.end)),
            },
        }
    }
    let mut diags = std::mem::take(&mut lexer.extras);
    for (start, end) in invalid {
        let text = source.get(start..end).unwrap_or("");
        let diag = if text.len() > 1 && text.starts_with('\0') {
            Diagnostic::new(Code::InvalidToken, Span::new(start, end), format!("{} NUL bytes in source", text.len())).with_primary_message("NUL bytes are not allowed here")
        } else if text.starts_with('\0') {
            Diagnostic::new(Code::InvalidToken, Span::new(start, end), "NUL byte in source").with_primary_message("a NUL byte is not allowed here")
        } else if text.chars().count() == 1 {
            Diagnostic::new(Code::InvalidToken, Span::new(start, end), format!("unknown character `{}`", text.escape_debug())).with_primary_message("this character does not start any token")
        } else {
            Diagnostic::new(Code::InvalidToken, Span::new(start, end), format!("unknown characters `{}`", text.escape_debug())).with_primary_message("these characters do not start any token")
        };
        diags.push(diag);
    }
    diags.sort_by_key(|d| d.primary_span().start);
    crate::diag::cap(&mut diags, invalid_dropped);
    mark_struct_names(&mut tokens);
    (tokens, diags)
}

fn is_nul(source: &str, at: usize) -> bool {
    source.as_bytes().get(at) == Some(&0)
}

/// The pre-pass described in the module docs: identifiers named after `struct` are type names,
/// and so are the CUDA types of the device-runtime API (`cudaExtent`, `cudaGraphExec_t`, ...;
/// `runtime_shim::types`) and CUDA's vector types (`float2`, ...; `types::VectorType`), which
/// nvcc's implicit headers declare in every file.
fn mark_struct_names(tokens: &mut [Spanned]) {
    let mut names: std::collections::HashSet<String> = runtime_shim::types::type_names().map(str::to_string).collect();
    names.extend(crate::types::VectorType::names().map(str::to_string));
    for pair in tokens.windows(2) {
        if let (Tok::Struct | Tok::Union, Tok::Ident(name)) = (&pair[0].1, &pair[1].1) {
            names.insert(name.clone());
        }
    }
    for (_, tok, _) in tokens.iter_mut() {
        if let Tok::Ident(name) = tok {
            if names.contains(name.as_str()) {
                *tok = Tok::TypeIdent(std::mem::take(name));
            }
        }
    }
}

/// Records a lexical diagnostic. Past the cap they are dropped here (their number is not
/// known to the note `lex` adds), so that a file of bad literals cannot take unbounded memory.
fn push(lex: &mut Lexer<Tok>, diag: Diagnostic) {
    if lex.extras.len() <= crate::diag::MAX_DIAGNOSTICS {
        lex.extras.push(diag);
    }
}

fn block_comment(lex: &mut Lexer<Tok>) {
    let rest = lex.remainder();
    match rest.find("*/") {
        Some(pos) => lex.bump(pos + 2),
        None => {
            let start = lex.span().start;
            let len = rest.len();
            push(
                lex,
                Diagnostic::new(Code::UnterminatedComment, Span::new(start, start + 2), "unterminated block comment")
                    .with_primary_message("the comment starts here and is never closed")
                    .with_note("a block comment ends with `*/`"),
            );
            lex.bump(len);
        }
    }
}

/// Length of the rest of the logical line (backslash-newline continues it), excluding the
/// newline itself.
fn line_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') => i += 3,
            b'\n' => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// `#` at the start of a line: `#include` and `#pragma` are ignored, other directives are
/// reported; a `#` elsewhere is an invalid token.
fn directive(lex: &mut Lexer<Tok>) {
    let start = lex.span().start;
    let source = lex.source();
    let line_start = source[..start].rfind('\n').map_or(0, |p| p + 1);
    let at_line_start = source[line_start..start].bytes().all(|b| b == b' ' || b == b'\t');
    let rest = lex.remainder();
    let len = line_len(rest);
    if !at_line_start {
        push(lex, Diagnostic::new(Code::InvalidToken, Span::new(start, start + 1), "unexpected `#`").with_primary_message("`#` may only start a preprocessor line"));
        return;
    }
    let line = &rest[..len];
    let trimmed = line.trim_start_matches([' ', '\t']);
    let name_offset = line.len() - trimmed.len();
    let name_len = trimmed.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let name = &trimmed[..name_len];
    if !(name.is_empty() && trimmed.trim().is_empty()) && name != "include" && name != "pragma" {
        let end = start + 1 + name_offset + name_len.max(trimmed.chars().next().map_or(0, char::len_utf8));
        let shown = if name.is_empty() { "#".to_string() } else { format!("#{name}") };
        push(
            lex,
            Diagnostic::new(Code::UnsupportedSyntax, Span::new(start, end), format!("preprocessor directive `{shown}` is not supported"))
                .with_primary_message("the preprocessor is not supported")
                .with_note(
                    "cdpc does not run the C preprocessor; only `#include` and `#pragma` lines are \
                 accepted, and they are ignored",
                ),
        );
    }
    lex.bump(len);
}

fn lex_number(lex: &mut Lexer<Tok>) -> Tok {
    let start = lex.span().start;
    let text = lex.slice();
    // Digit separators carry no value. (Offsets in errors then count without them; the
    // literal's whole span is right either way.)
    let stripped;
    let text = if text.contains('\'') {
        stripped = text.replace('\'', "");
        stripped.as_str()
    } else {
        text
    };
    match parse_number(text) {
        Ok(tok) => tok,
        Err((code, rel, message, label)) => {
            let span = match rel {
                Some((a, b)) => Span::new(start + a, start + b),
                None => Span::new(start, start + text.len()),
            };
            push(lex, Diagnostic::new(code, span, message).with_primary_message(label));
            Tok::Int(IntLit { value: 0, suffix: IntSuffix::default(), decimal: true })
        }
    }
}

type NumberError = (Code, Option<(usize, usize)>, String, String);

fn parse_number(text: &str) -> Result<Tok, NumberError> {
    let bytes = text.as_bytes();
    let hex = bytes.len() >= 2 && bytes[0] == b'0' && (bytes[1] == b'x' || bytes[1] == b'X');
    if hex {
        let digits = text[2..].bytes().take_while(u8::is_ascii_hexdigit).count();
        let suffix = &text[2 + digits..];
        if suffix.contains(['.', 'p', 'P']) {
            return Err((Code::UnsupportedSyntax, None, "hexadecimal floating-point literals are not supported".into(), "write this number in decimal".into()));
        }
        if digits == 0 {
            return Err((Code::InvalidToken, None, "hexadecimal literal has no digits".into(), "expected hexadecimal digits after `0x`".into()));
        }
        let value = accumulate(&text[2..2 + digits], 16)?;
        let suffix = int_suffix(suffix, 2 + digits)?;
        return Ok(Tok::Int(IntLit { value, suffix, decimal: false }));
    }
    let is_float = text.contains('.') || text.contains(['e', 'E']);
    if is_float {
        let (body, is_f) = match text.as_bytes()[text.len() - 1] {
            b'f' | b'F' => (&text[..text.len() - 1], true),
            b'l' | b'L' => return Err((Code::UnsupportedSyntax, Some((text.len() - 1, text.len())), "`long double` literals are not supported".into(), "remove this suffix".into())),
            _ => (text, false),
        };
        let valid_chars = body.bytes().all(|b| b.is_ascii_digit() || b"eE+-.".contains(&b));
        return match body.parse::<f64>() {
            Ok(value) if valid_chars => Ok(Tok::Float(FloatLit { value, is_float: is_f })),
            _ => Err((Code::InvalidToken, None, format!("invalid floating-point literal `{text}`"), "not a valid number".into())),
        };
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let suffix = int_suffix(&text[digits..], digits)?;
    let body = &text[..digits];
    if body.len() > 1 && body.starts_with('0') {
        if let Some(pos) = body.bytes().position(|b| b == b'8' || b == b'9') {
            return Err((Code::InvalidToken, Some((pos, pos + 1)), format!("invalid digit `{}` in octal literal", &body[pos..pos + 1]), "a number starting with `0` is octal".into()));
        }
        let value = accumulate(&body[1..], 8)?;
        return Ok(Tok::Int(IntLit { value, suffix, decimal: false }));
    }
    let value = accumulate(body, 10)?;
    Ok(Tok::Int(IntLit { value, suffix, decimal: true }))
}

fn accumulate(digits: &str, radix: u32) -> Result<u64, NumberError> {
    let mut value: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix).unwrap_or(0) as u64;
        value = value
            .checked_mul(radix as u64)
            .and_then(|v| v.checked_add(d))
            .ok_or_else(|| (Code::IntegerLiteralOutOfRange, None, "integer literal is too large".into(), format!("the largest integer literal is {}", u64::MAX)))?;
    }
    Ok(value)
}

fn int_suffix(suffix: &str, offset: usize) -> Result<IntSuffix, NumberError> {
    let lower = suffix.to_ascii_lowercase();
    let same_case_ll = !suffix.contains("lL") && !suffix.contains("Ll");
    let parsed = match lower.as_str() {
        "" => Some(IntSuffix { unsigned: false, long: 0 }),
        "u" => Some(IntSuffix { unsigned: true, long: 0 }),
        "l" => Some(IntSuffix { unsigned: false, long: 1 }),
        "ul" | "lu" => Some(IntSuffix { unsigned: true, long: 1 }),
        "ll" if same_case_ll => Some(IntSuffix { unsigned: false, long: 2 }),
        "ull" | "llu" if same_case_ll => Some(IntSuffix { unsigned: true, long: 2 }),
        _ => None,
    };
    parsed.ok_or_else(|| {
        (Code::InvalidToken, Some((offset, offset + suffix.len())), format!("invalid suffix `{suffix}` on integer literal"), "valid suffixes are `u`, `l`, `ll` and their combinations".into())
    })
}

fn lex_char(lex: &mut Lexer<Tok>) -> Tok {
    let start = lex.span().start;
    let (bytes, consumed, terminated) = scan_quoted(lex, b'\'');
    lex.bump(consumed);
    let end = lex.span().end;
    if terminated {
        match bytes.len() {
            0 => push(lex, Diagnostic::new(Code::InvalidToken, Span::new(start, end), "empty character literal").with_primary_message("a character literal holds exactly one character")),
            1 => {}
            _ => push(
                lex,
                Diagnostic::new(Code::InvalidToken, Span::new(start, end), "character literal may only contain one character")
                    .with_primary_message("more than one byte here")
                    .with_note("use a string literal (`\"...\"`) for several characters"),
            ),
        }
    }
    Tok::Char(bytes.first().copied().unwrap_or(0))
}

fn lex_string(lex: &mut Lexer<Tok>) -> Tok {
    let (bytes, consumed, _) = scan_quoted(lex, b'"');
    lex.bump(consumed);
    Tok::Str(bytes)
}

/// Scans a quoted literal after its opening quote. Returns the bytes, how many bytes of the
/// remainder belong to the literal, and whether the closing quote was found. Bad escapes and a
/// missing closing quote are reported here.
fn scan_quoted(lex: &mut Lexer<Tok>, quote: u8) -> (Vec<u8>, usize, bool) {
    let open = lex.span().start;
    let base = lex.span().end;
    let rest = lex.remainder().as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut diags = Vec::new();
    let mut terminated = false;
    while i < rest.len() {
        let b = rest[i];
        if b == quote {
            i += 1;
            terminated = true;
            break;
        }
        if b == b'\n' || (b == b'\r' && rest.get(i + 1) == Some(&b'\n')) {
            break;
        }
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let esc_start = i;
        i += 1;
        let Some(&e) = rest.get(i) else { break };
        i += 1;
        let value = match e {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' => Some(b'\\'),
            b'\'' => Some(b'\''),
            b'"' => Some(b'"'),
            b'?' => Some(b'?'),
            b'0'..=b'7' => {
                let mut v: u32 = (e - b'0') as u32;
                let mut n = 1;
                while n < 3 && matches!(rest.get(i), Some(b'0'..=b'7')) {
                    v = v * 8 + (rest[i] - b'0') as u32;
                    i += 1;
                    n += 1;
                }
                if v > 255 {
                    diags.push(
                        Diagnostic::new(Code::InvalidEscape, Span::new(base + esc_start, base + i), "octal escape sequence out of range")
                            .with_primary_message("the value must fit in one byte (at most `\\377`)"),
                    );
                }
                Some(v as u8)
            }
            b'x' => {
                let mut v: u32 = 0;
                let mut n = 0;
                while let Some(d) = rest.get(i).and_then(|c| (*c as char).to_digit(16)) {
                    v = v.saturating_mul(16).saturating_add(d);
                    i += 1;
                    n += 1;
                }
                if n == 0 {
                    diags.push(
                        Diagnostic::new(Code::InvalidEscape, Span::new(base + esc_start, base + i), "`\\x` escape without hexadecimal digits")
                            .with_primary_message("expected hexadecimal digits after `\\x`"),
                    );
                } else if v > 255 {
                    diags.push(
                        Diagnostic::new(Code::InvalidEscape, Span::new(base + esc_start, base + i), "hexadecimal escape sequence out of range")
                            .with_primary_message("the value must fit in one byte (at most `\\xFF`)"),
                    );
                }
                Some(v as u8)
            }
            b'\n' => None, // line continuation inside a literal
            _ => {
                // Include the whole (possibly multi-byte) character in the span.
                let mut end = i;
                while end < rest.len() && (rest[end] & 0xC0) == 0x80 {
                    end += 1;
                }
                let shown = String::from_utf8_lossy(&rest[esc_start..end]).into_owned();
                diags.push(
                    Diagnostic::new(Code::InvalidEscape, Span::new(base + esc_start, base + end), format!("unknown escape sequence `{shown}`")).with_primary_message("unknown escape").with_note(
                        "valid escapes are `\\n`, `\\t`, `\\r`, `\\0`, `\\\\`, `\\'`, `\\\"`, \
                         `\\xHH` and octal `\\ooo`",
                    ),
                );
                i = end;
                Some(e)
            }
        };
        out.extend(value);
    }
    if !terminated {
        let what = if quote == b'"' { "string" } else { "character" };
        diags.push(
            Diagnostic::new(Code::UnterminatedLiteral, Span::new(open, base + i), format!("unterminated {what} literal"))
                .with_primary_message(format!("missing closing {} before the end of the line", if quote == b'"' { "`\"`" } else { "`'`" })),
        );
    }
    lex.extras.extend(diags);
    (out, i, terminated)
}
