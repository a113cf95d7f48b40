//! The front end: source text to syntax tree. Never spawns processes, never touches LLVM.
//!
//! [`parse`] lexes the source with the logos lexer in `lexer.rs`, checks the size limits below,
//! leaves host code out (`split.rs`), and runs the lalrpop parser generated from
//! `grammar.lalrpop` (by `compiler/build.rs`) on each device declaration. The parser recovers from
//! syntax errors at statement and item level, so one run reports several of them.
//!
//! # Limits
//!
//! - A source larger than [`MAX_SOURCE_BYTES`] (64 MiB) is rejected with `E0401`
//!   (`SourceTooLarge`) before it is lexed.
//! - Brackets (`(`, `[`, `{`, `<<<`, counted together) may nest at most [`MAX_NESTING`] (256)
//!   deep; deeper input is rejected with `E0400` (`NestingTooDeep`) before parsing. The check is
//!   made on the token stream because the syntax tree is dropped recursively, and the later
//!   passes walk it recursively: a 10,000-deep input would overflow the stack.
//! - For the same reason, one statement may contain at most [`MAX_OPERATORS`] operators
//!   (an unbracketed `1 + 1 + ... + 1` nests as deeply as it is long), and after parsing the
//!   tree of statements and expressions may be at most [`MAX_TREE_DEPTH`] deep (long
//!   `else if` chains, long operator chains); both give `E0400`.
//! - Sema and code generation recurse over the tree, about 10 KiB of stack a level in an
//!   unoptimised build; [`crate::driver`] therefore runs them on a thread with a 64 MiB stack
//!   ([`crate::driver::STACK_BYTES`]), so the deepest accepted tree compiles wherever the caller
//!   runs (a 2 MiB test thread included). Embedders calling `sema` or `codegen` directly should do
//!   the same ([`crate::driver::on_large_stack`]).
//! - Nothing else is limited: a line may be megabytes long, a function may hold any number of
//!   statements and launches, a kernel any number of parameters (the launch's parameter buffer
//!   is limited instead, `E0304`). The lexer, the limit checks, the depth check and the
//!   dropping of rejected trees never recurse, so 10,000-deep input is refused, not a crash.
//! - Each phase reports at most [`crate::diag::MAX_DIAGNOSTICS`] (200) diagnostics; a note on
//!   the last one counts the rest, so a file of a million bad characters stays cheap.
//! - Source text is UTF-8: [`crate::driver::decode_source`] refuses other bytes with `E0008`
//!   at the first bad one. A NUL byte, or a run of them, is one `E0001`.
//!
//! `compiler/tests/hostile.rs` tests each limit and the extreme inputs around them; `fuzz/`
//! fuzzes the lexer, the parser, sema and code generation.
//!
//! # Other limitations
//!
//! - Struct names are found by a lexer pre-pass (every identifier written after `struct`), and
//!   the names of skipped type declarations (structs, typedefs) by `split`, so a variable,
//!   field or function may not share its name with a type.
//! - C++ is refused before any of this (`cuda_cxx.rs`, E0923): the kernel language is C.
//! - Host code is never parsed: `split` sorts the top-level declarations first, and only
//!   device declarations (and tentatively, types and `__host__ __device__` functions) reach the
//!   grammar, each parsed on its own.
//! - The front end reads preprocessed text (`crate::front::cdp::preprocess` runs first): `#pragma` lines
//!   are ignored here; an `#include` or other directive only reaches the lexer when `parse` is
//!   called on text that was not preprocessed, and then `#include` is ignored and any other
//!   directive is reported (`E0007`).

mod asm;
pub mod ast;
mod cuda_cxx;
mod enums;
mod fn_pointers;
mod lexer;
mod split;
mod structs;
mod syntax;
#[cfg(test)]
mod tests;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, unused_parens, unused_imports, dead_code)]
    grammar,
    "/front/cdp/syntax/grammar.rs"
);

use lalrpop_util::{ErrorRecovery, ParseError};

use crate::diag::{Code, Diagnostic, Span};
use lexer::{LexError, Spanned, Tok};

/// The error for a construct of CUDA C++ in a `.cdp` file (`E0923`, "rename the file `.cu`"),
/// for sema's finds too (a second function of one name: overloading).
pub(crate) use cuda_cxx::error as cuda_cxx_error;

/// The largest source accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 64 << 20;
/// How deep brackets may nest.
pub const MAX_NESTING: usize = 256;
/// How many operators one statement may contain.
pub const MAX_OPERATORS: usize = 4096;
/// How deep the tree of statements and expressions may be.
pub const MAX_TREE_DEPTH: usize = 512;
/// At most this many syntax errors are reported; the rest are likely consequences.
const MAX_SYNTAX_ERRORS: usize = 30;

/// Runs only the lexer: the byte range of every token formed, and the lexical diagnostics.
/// An entry point for the fuzz targets and robustness tests (the lexer itself is private);
/// not a stable API.
#[doc(hidden)]
pub fn lex_only(source: &str) -> (Vec<std::ops::Range<usize>>, Vec<Diagnostic>) {
    let (tokens, diags) = lexer::lex(source);
    (tokens.into_iter().map(|(start, _, end)| start..end).collect(), diags)
}

/// Parses a whole `.cdp` file. Returns the tree when there was no syntax error, and every
/// diagnostic found (the parser recovers where it can, so one run reports several errors).
pub fn parse(source: &str) -> (Option<ast::TranslationUnit>, Vec<Diagnostic>) {
    if source.len() > MAX_SOURCE_BYTES {
        let diag = Diagnostic::new(Code::SourceTooLarge, Span::new(0, 0), "source file is too large").with_primary_message("the file starts here").with_note(format!(
            "the file has {} bytes; the limit is {} bytes (64 MiB)",
            source.len(),
            MAX_SOURCE_BYTES
        ));
        return (None, vec![diag]);
    }
    let (mut tokens, mut diags) = lexer::lex(source);
    if let Some(diag) = check_limits(&tokens) {
        diags.push(diag);
        return (None, diags);
    }
    if let Some(diag) = cuda_cxx::find(&tokens) {
        diags.push(diag);
        return (None, diags);
    }
    asm::mark_volatile(&mut tokens);
    fn_pointers::mark_typedef_names(&mut tokens);
    let lex_diags_all = diags.clone();

    let chunks = split::split(&tokens);
    split::mark_type_names(&mut tokens, &chunks);
    split::constexpr_variables(&mut tokens, &chunks);
    let mut diags = keep_lexical(diags, &chunks, &tokens);

    let lex_error_spans: Vec<Span> = diags.iter().map(Diagnostic::primary_span).collect();
    let mut action_diags = Vec::new();
    let mut parse_errors: Vec<ParseError<usize, Tok, LexError>> = Vec::new();
    let mut unit = ast::TranslationUnit::default();
    let mut complete = true;
    for chunk in &chunks {
        let span = chunk_span(&tokens, chunk);
        match chunk.class {
            split::Class::Host(kind) => unit.skipped.push(ast::Skipped { kind, names: chunk.names.clone(), span, error: None }),
            split::Class::Device => {
                let parsed = parse_chunk(&tokens[chunk.tokens.clone()]);
                action_diags.extend(parsed.diags);
                parse_errors.extend(parsed.errors);
                match parsed.unit {
                    Some(part) => unit.items.extend(with_linkage(part.items, chunk.extern_c)),
                    None => complete = false,
                }
            }
            split::Class::Tentative if enums::is_enum_definition(&tokens[chunk.tokens.clone()]) => {
                let toks = &tokens[chunk.tokens.clone()];
                let parse = |part: &[Spanned]| parse_strict(part, &tokens, source.len(), span);
                match lex_diags_in(&lex_diags_all, span).into_iter().next().map(Err).unwrap_or_else(|| enums::parse_enum(toks, parse)) {
                    Ok(def) => unit.items.push(ast::Item::Enum(def)),
                    Err(error) => unit.skipped.push(ast::Skipped { kind: ast::SkippedKind::Unparsed, names: chunk.names.clone(), span, error: Some(Box::new(error)) }),
                }
            }
            split::Class::Tentative if structs::is_struct_definition(&tokens[chunk.tokens.clone()]) => {
                let toks = &tokens[chunk.tokens.clone()];
                let parse = |part: &[Spanned]| parse_strict(part, &tokens, source.len(), span);
                let lexical = lex_diags_in(&lex_diags_all, span).into_iter().next();
                match lexical.map(Err).unwrap_or_else(|| structs::parse_struct(toks, parse)) {
                    Ok(items) => unit.items.extend(items),
                    Err(error) => unit.skipped.push(ast::Skipped { kind: ast::SkippedKind::Unparsed, names: chunk.names.clone(), span, error: Some(Box::new(error)) }),
                }
            }
            split::Class::Tentative => {
                let parsed = parse_chunk(&tokens[chunk.tokens.clone()]);
                let lexical = lex_diags_in(&lex_diags_all, span);
                let first_error =
                    parsed.errors.first().map(|e| syntax_error(e, &tokens, source.len())).or_else(|| parsed.diags.iter().find(|d| d.is_error()).cloned()).or_else(|| lexical.into_iter().next());
                match (first_error, parsed.unit) {
                    (None, Some(part)) => {
                        action_diags.extend(parsed.diags);
                        unit.items.extend(with_linkage(part.items, chunk.extern_c));
                    }
                    (error, _) => {
                        let error = error.unwrap_or_else(|| Diagnostic::new(Code::SyntaxError, span, "this declaration does not parse as device code"));
                        unit.skipped.push(ast::Skipped { kind: ast::SkippedKind::Unparsed, names: chunk.names.clone(), span, error: Some(Box::new(error)) });
                    }
                }
            }
        }
    }
    let tree = if complete {
        Some(unit)
    } else {
        dismantle(unit);
        None
    };

    let mut reported = 0;
    let mut last: Option<(u32, usize)> = None;
    for error in &parse_errors {
        let diag = syntax_error(error, &tokens, source.len());
        let at = diag.primary_span();
        let index = tokens.partition_point(|(s, _, _)| (*s as u32) < at.start);
        // After a recovered error, the next one counts only if a statement or block ended in
        // between; otherwise it is most likely a consequence of the first.
        let independent = match last {
            None => true,
            Some((end, last_index)) => at.start >= end && tokens[last_index.min(tokens.len())..index.min(tokens.len())].iter().any(|(_, t, _)| matches!(t, Tok::Semi | Tok::RBrace)),
        };
        if independent && !follows_lex_error(at, &tokens, &lex_error_spans) && reported < MAX_SYNTAX_ERRORS {
            last = Some((at.end.max(at.start + 1), index));
            diags.push(diag);
            reported += 1;
        }
    }
    diags.extend(action_diags);
    diags.sort_by_key(|d| d.primary_span().start);
    crate::diag::cap(&mut diags, 0);

    let tree = tree.and_then(|tree| match too_deep(&tree) {
        Some(at) => {
            diags.push(
                Diagnostic::new(Code::NestingTooDeep, at, "program nested too deeply")
                    .with_primary_message(format!("statements and expressions nest more than {MAX_TREE_DEPTH} levels deep here"))
                    .with_note("split long operator chains or `else if` chains into several statements"),
            );
            dismantle(tree);
            None
        }
        None => Some(tree),
    });

    if diags.iter().any(Diagnostic::is_error) {
        if let Some(tree) = tree {
            dismantle(tree);
        }
        return (None, diags);
    }
    (tree, diags)
}

/// Parses a declaration that must parse whole (a struct's plain form): its first error.
fn parse_strict(part: &[Spanned], tokens: &[Spanned], len: usize, span: Span) -> Result<ast::TranslationUnit, (Diagnostic, Vec<Diagnostic>)> {
    let parsed = parse_chunk(part);
    let first = parsed.errors.first().map(|e| syntax_error(e, tokens, len)).or_else(|| parsed.diags.iter().find(|d| d.is_error()).cloned());
    match (first, parsed.unit) {
        (None, Some(unit)) => Ok(unit),
        (e, _) => Err((e.unwrap_or_else(|| Diagnostic::new(Code::SyntaxError, span, "this struct does not parse as device code")), parsed.diags)),
    }
}

/// What parsing one top-level declaration gave.
struct ParsedChunk {
    unit: Option<ast::TranslationUnit>,
    errors: Vec<ParseError<usize, Tok, LexError>>,
    diags: Vec<Diagnostic>,
}

/// Parses the tokens of one top-level declaration (see `split`).
fn parse_chunk(tokens: &[Spanned]) -> ParsedChunk {
    let mut diags = Vec::new();
    let mut recovered: Vec<ErrorRecovery<usize, Tok, LexError>> = Vec::new();
    // Function-pointer declarators are marked only here, for the grammar: every other pass
    // sees their `(` as the bracket it is.
    let mut marked = tokens.to_vec();
    fn_pointers::mark_declarators(&mut marked);
    let input = marked.into_iter().map(Ok::<Spanned, LexError>);
    let result = grammar::TranslationUnitParser::new().parse(&mut diags, &mut recovered, input);
    let mut errors: Vec<ParseError<usize, Tok, LexError>> = recovered.into_iter().map(|r| r.error).collect();
    let unit = match result {
        Ok(unit) => Some(unit),
        Err(error) => {
            errors.push(error);
            None
        }
    };
    ParsedChunk { unit, errors, diags }
}

/// The bytes a declaration covers.
fn chunk_span(tokens: &[Spanned], chunk: &split::Chunk) -> Span {
    let first = &tokens[chunk.tokens.start];
    let last = &tokens[chunk.tokens.end - 1];
    Span::new(first.0, last.2)
}

/// Functions declared inside an `extern "C" { ... }` block get the linkage written on them.
fn with_linkage(items: Vec<ast::Item>, extern_c: bool) -> impl Iterator<Item = ast::Item> {
    items.into_iter().map(move |mut item| {
        if let ast::Item::Function(f) = &mut item {
            if extern_c && !f.qualifiers.iter().any(|(q, _)| *q == ast::FnQualifier::ExternC) {
                f.qualifiers.push((ast::FnQualifier::ExternC, f.name.span));
            }
        }
        item
    })
}

fn lex_diags_in(diags: &[Diagnostic], span: Span) -> Vec<Diagnostic> {
    diags.iter().filter(|d| d.is_error() && span.start <= d.primary_span().start && d.primary_span().start < span.end).cloned().collect()
}

/// The lexical diagnostics that stand: those in host or tentative declarations are dropped
/// (a host compiler may accept what cdpc's lexer does not; a tentative declaration's errors are
/// reported only if device code uses it), except an unterminated comment, which swallows
/// everything after it.
fn keep_lexical(diags: Vec<Diagnostic>, chunks: &[split::Chunk], tokens: &[Spanned]) -> Vec<Diagnostic> {
    let skipped: Vec<Span> = chunks.iter().filter(|c| c.class != split::Class::Device).map(|c| chunk_span(tokens, c)).collect();
    diags
        .into_iter()
        .filter(|d| {
            let at = d.primary_span().start;
            d.code == Code::UnterminatedComment || !skipped.iter().any(|s| s.start <= at && at < s.end)
        })
        .collect()
}

/// The token-stream limits: bracket depth and operators per statement.
fn check_limits(tokens: &[Spanned]) -> Option<Diagnostic> {
    let mut stack: Vec<&Tok> = Vec::new();
    let mut operators = 0usize;
    let mut statement_start = 0usize;
    for (start, tok, end) in tokens {
        match tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace | Tok::LaunchOpen => {
                stack.push(tok);
                // Casts and postfix chains nest without nesting brackets: `(int)(int)x`, `a[0][0]`.
                if !matches!(tok, Tok::LBrace) {
                    operators += 1;
                }
                if stack.len() > MAX_NESTING {
                    return Some(
                        Diagnostic::new(Code::NestingTooDeep, Span::new(*start, *end), "nesting too deep")
                            .with_primary_message(format!("brackets nest more than {MAX_NESTING} levels deep here"))
                            .with_note("parentheses, brackets and braces together may nest at most 256 deep"),
                    );
                }
                if matches!(tok, Tok::LBrace) {
                    operators = 0;
                    statement_start = *start;
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace | Tok::LaunchClose => {
                stack.pop();
                if matches!(tok, Tok::RBrace) {
                    operators = 0;
                    statement_start = *end;
                }
            }
            Tok::Semi => {
                operators = 0;
                statement_start = *end;
            }
            Tok::Comma => {
                if !matches!(stack.last(), Some(Tok::LBrace)) {
                    operators += 1;
                }
            }
            _ => {
                if tok.text().is_some_and(|t| !t.starts_with(|c: char| c.is_ascii_alphabetic())) || matches!(tok, Tok::Sizeof) {
                    operators += 1;
                }
            }
        }
        if operators > MAX_OPERATORS {
            return Some(
                Diagnostic::new(Code::NestingTooDeep, Span::new(statement_start, *end), "statement too complex")
                    .with_primary_message(format!("this statement has more than {MAX_OPERATORS} operators"))
                    .with_note("split the expression into several statements"),
            );
        }
    }
    None
}

/// Whether a syntax error at `at` is probably a consequence of a lexical error just before it
/// (an invalid character was dropped, an unterminated comment swallowed the rest).
fn follows_lex_error(at: Span, tokens: &[Spanned], lex_errors: &[Span]) -> bool {
    let idx = tokens.partition_point(|(s, _, _)| (*s as u32) < at.start);
    let prev_end = if idx == 0 { 0 } else { tokens[idx - 1].2 as u32 };
    lex_errors.iter().any(|e| e.start >= prev_end && e.start <= at.end.max(at.start))
}

/// Terminals the grammar names in expected-token lists, grouped for readable messages.
const EXPR_START: &[&str] = &["Ident", "IntLit", "FloatLit", "CharLit", "StrLit", "true", "false", "(", "-", "+", "!", "~", "*", "&", "++", "--", "sizeof", "TypeKw", "TypeIdent"];
const OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|", "&&", "||", "?", "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "[", "(", ".", "->",
    "++", "--", "<<<",
];
const STMT_START: &[&str] = &[
    "if",
    "while",
    "do",
    "for",
    "break",
    "continue",
    "asm",
    "return",
    "switch",
    "case",
    "default",
    "goto",
    "union",
    "{",
    ";",
    "const",
    "volatile",
    "struct",
    "TypeIdent",
    "Qual",
    "__launch_bounds__",
    "extern",
];
const TYPE_START: &[&str] = &["TypeKw", "TypeIdent", "const", "volatile", "struct", "union"];

fn friendly_terminal(name: &str) -> String {
    match name {
        "Ident" => "identifier".into(),
        "TypeIdent" => "struct name".into(),
        "TypeKw" => "type".into(),
        "Qual" => "qualifier".into(),
        "IntLit" => "integer literal".into(),
        "FloatLit" => "floating-point literal".into(),
        "CharLit" => "character literal".into(),
        "StrLit" => "string literal".into(),
        other => format!("`{other}`"),
    }
}

/// Turns lalrpop's list of expected terminals into readable text, folding the long lists
/// that appear at the start of an expression or after a complete one.
fn describe_expected(expected: &[String]) -> String {
    let names: Vec<&str> = expected.iter().map(|s| s.trim_matches('"')).collect();
    let has = |n: &str| names.contains(&n);
    let mut folded: Vec<&str> = Vec::new();
    let mut categories: Vec<String> = Vec::new();
    let statement = has("if") && has("while") && has("return");
    let expression = has("Ident") && has("IntLit");
    let operator = has("+") && has("*") && has("==");
    // Both type tokens also start expressions (`int(x)`, `Params(p, true)`): a type is
    // expected where a type-only word is.
    let types = has("TypeKw") && has("TypeIdent") && (has("const") || has("struct"));
    if statement {
        folded.extend(STMT_START);
        folded.extend(EXPR_START);
        categories.push("a statement".into());
    }
    if expression && !statement {
        folded.extend(EXPR_START);
        categories.push("an expression".into());
    }
    if operator {
        folded.extend(OPERATORS);
        categories.push("an operator".into());
    }
    if types && !statement {
        folded.extend(TYPE_START);
        categories.push("a type".into());
    }
    let mut items: Vec<String> = names.iter().filter(|n| !folded.contains(n)).map(|n| friendly_terminal(n)).collect();
    items.extend(categories);
    let shown = 6;
    match items.len() {
        0 => "something else".into(),
        1 => items.remove(0),
        2 => format!("{} or {}", items[0], items[1]),
        n if n <= shown => format!("one of {}, or {}", items[..n - 1].join(", "), items[n - 1]),
        n => format!("one of {}, or {} others", items[..shown].join(", "), n - shown),
    }
}

fn syntax_error(error: &ParseError<usize, Tok, LexError>, tokens: &[Spanned], len: usize) -> Diagnostic {
    match error {
        ParseError::UnrecognizedToken { token: (start, tok, end), expected } => {
            let span = Span::new(*start, *end);
            let mut diag = Diagnostic::new(Code::SyntaxError, span, format!("expected {}, found {}", describe_expected(expected), tok.describe())).with_primary_message("unexpected token");
            let wants_semi = expected.iter().any(|e| e == "\";\"");
            let idx = tokens.partition_point(|(s, _, _)| s < start);
            if wants_semi && idx > 0 {
                let prev_end = tokens[idx - 1].2;
                diag = diag.with_label(Span::new(prev_end, prev_end), "a `;` may be missing here");
            }
            diag
        }
        // A declaration's tokens are parsed alone (see `split`): its end is not the file's.
        ParseError::UnrecognizedEof { location, expected } if tokens.last().is_some_and(|t| t.0 >= *location) => {
            let next = tokens.partition_point(|t| t.0 < *location);
            let (start, tok, end) = &tokens[next];
            Diagnostic::new(Code::SyntaxError, Span::new(*start, *end), format!("expected {}, found {}", describe_expected(expected), tok.describe())).with_primary_message("unexpected token")
        }
        ParseError::UnrecognizedEof { location, expected } => {
            let at = (*location).min(len);
            Diagnostic::new(Code::SyntaxError, Span::new(at, at), format!("expected {}, found end of file", describe_expected(expected))).with_primary_message("the file ends here")
        }
        ParseError::ExtraToken { token: (start, tok, end) } => {
            Diagnostic::new(Code::SyntaxError, Span::new(*start, *end), format!("unexpected {}", tok.describe())).with_primary_message("unexpected token")
        }
        ParseError::InvalidToken { location } => {
            let at = (*location).min(len);
            Diagnostic::new(Code::InvalidToken, Span::new(at, at), "invalid token")
        }
        ParseError::User { .. } => Diagnostic::new(Code::SyntaxError, Span::new(0, 0), "syntax error"),
    }
}

enum Node<'a> {
    Stmt(&'a ast::Stmt),
    Expr(&'a ast::Expr),
    Init(&'a ast::Initializer),
    Decl(&'a ast::DeclStmt),
}

/// The span of a node nested deeper than [`MAX_TREE_DEPTH`], found without recursion.
fn too_deep(tu: &ast::TranslationUnit) -> Option<Span> {
    use ast::{ExprKind as E, Initializer as I, Stmt as S};
    let mut stack: Vec<(Node, usize)> = Vec::new();
    for item in &tu.items {
        match item {
            ast::Item::Function(f) => {
                if let Some(body) = &f.body {
                    stack.extend(body.stmts.iter().map(|s| (Node::Stmt(s), 1)));
                }
            }
            ast::Item::Struct(s) => stack.extend(s.fields.iter().map(|d| (Node::Decl(d), 1))),
            ast::Item::Global(d) => stack.push((Node::Decl(d), 1)),
            ast::Item::Typedef(_) => {}
            ast::Item::Enum(e) => stack.extend(e.enumerators.iter().filter_map(|en| en.value.as_ref()).map(|v| (Node::Expr(v), 1))),
        }
    }
    while let Some((node, depth)) = stack.pop() {
        let d = depth + 1;
        let span = match node {
            Node::Stmt(s) => {
                match s {
                    S::Decl(decl) => stack.push((Node::Decl(decl), d)),
                    S::Expr(e) => stack.push((Node::Expr(e), d)),
                    S::If { cond, then, otherwise, .. } => {
                        stack.push((Node::Expr(cond), d));
                        stack.push((Node::Stmt(then), d));
                        if let Some(o) = otherwise {
                            stack.push((Node::Stmt(o), d));
                        }
                    }
                    S::While { cond, body, .. } | S::DoWhile { body, cond, .. } => {
                        stack.push((Node::Expr(cond), d));
                        stack.push((Node::Stmt(body), d));
                    }
                    S::For { init, cond, step, body, .. } => {
                        if let Some(i) = init {
                            stack.push((Node::Stmt(i), d));
                        }
                        stack.extend(cond.iter().chain(step.iter()).map(|e| (Node::Expr(e), d)));
                        stack.push((Node::Stmt(body), d));
                    }
                    S::Return(Some(e), _) => stack.push((Node::Expr(e), d)),
                    S::Block(b) => stack.extend(b.stmts.iter().map(|s| (Node::Stmt(s), d))),
                    S::Asm(a) => stack.extend(a.outputs.iter().chain(&a.inputs).map(|o| (Node::Expr(&o.expr), d))),
                    S::Switch { cond, body, .. } => {
                        stack.push((Node::Expr(cond), d));
                        stack.push((Node::Stmt(body), d));
                    }
                    S::Case { value, high, stmt, .. } => {
                        stack.extend(std::iter::once(value).chain(high.iter()).map(|e| (Node::Expr(e), d)));
                        stack.push((Node::Stmt(stmt), d));
                    }
                    S::Default { stmt, .. } | S::Label { stmt, .. } => stack.push((Node::Stmt(stmt), d)),
                    S::Break(_) | S::Continue(_) | S::Return(None, _) | S::Empty(_) | S::Goto(..) => {}
                }
                stmt_span(s)
            }
            Node::Expr(e) => {
                match &e.kind {
                    E::Unary { operand: a, .. } | E::SizeofExpr(a) | E::Cast { operand: a, .. } => stack.push((Node::Expr(a), d)),
                    E::Binary { lhs, rhs, .. } | E::Assign { lhs, rhs, .. } | E::Comma { lhs, rhs } => {
                        stack.push((Node::Expr(lhs), d));
                        stack.push((Node::Expr(rhs), d));
                    }
                    E::Index { base, index } => {
                        stack.push((Node::Expr(base), d));
                        stack.push((Node::Expr(index), d));
                    }
                    E::Conditional { cond, then, otherwise } => {
                        stack.push((Node::Expr(cond), d));
                        stack.push((Node::Expr(then), d));
                        stack.push((Node::Expr(otherwise), d));
                    }
                    E::Call { callee, args } => {
                        stack.push((Node::Expr(callee), d));
                        stack.extend(args.iter().map(|a| (Node::Expr(a), d)));
                    }
                    E::Launch { config, args, .. } => stack.extend(config.iter().chain(args.iter()).map(|a| (Node::Expr(a), d))),
                    E::LaunchThrough { target, config, args, .. } => {
                        stack.push((Node::Expr(target), d));
                        stack.extend(config.iter().chain(args.iter()).map(|a| (Node::Expr(a), d)))
                    }
                    E::Member { base, .. } => stack.push((Node::Expr(base), d)),
                    E::Construct { args, .. } => stack.extend(args.iter().map(|a| (Node::Expr(a), d))),
                    E::IntLit { .. } | E::FloatLit { .. } | E::CharLit(_) | E::StringLit(_) | E::BoolLit(_) | E::Ident(_) | E::SizeofType(_) => {}
                }
                e.span
            }
            Node::Init(i) => match i {
                I::Expr(e) => {
                    stack.push((Node::Expr(e), d));
                    e.span
                }
                I::List(items, span) => {
                    stack.extend(items.iter().map(|i| (Node::Init(i), d)));
                    *span
                }
                I::Ctor(args, span) => {
                    stack.extend(args.iter().map(|a| (Node::Expr(a), d)));
                    *span
                }
            },
            Node::Decl(decl) => {
                for init in &decl.declarators {
                    for dim in &init.declarator.array_dims {
                        stack.extend(dim.size.iter().map(|e| (Node::Expr(e), d)));
                    }
                    stack.extend(init.init.iter().map(|i| (Node::Init(i), d)));
                }
                decl.span
            }
        };
        if depth > MAX_TREE_DEPTH {
            return Some(span);
        }
    }
    None
}

fn stmt_span(s: &ast::Stmt) -> Span {
    use ast::Stmt as S;
    match s {
        S::Decl(d) => d.span,
        S::Expr(e) => e.span,
        S::If { span, .. }
        | S::While { span, .. }
        | S::DoWhile { span, .. }
        | S::For { span, .. }
        | S::Break(span)
        | S::Continue(span)
        | S::Return(_, span)
        | S::Empty(span)
        | S::Switch { span, .. }
        | S::Case { span, .. }
        | S::Default { span, .. }
        | S::Goto(_, span) => *span,
        S::Label { name, .. } => name.span,
        S::Block(b) => b.span,
        S::Asm(a) => a.span,
    }
}

enum Owned {
    Stmt(ast::Stmt),
    Expr(ast::Expr),
    Init(ast::Initializer),
}

/// Drops a tree without recursion (the derived drop glue recurses once per level).
fn dismantle(tu: ast::TranslationUnit) {
    use ast::{ExprKind as E, Initializer as I, Stmt as S};
    let mut stack: Vec<Owned> = Vec::new();
    let decl = |d: ast::DeclStmt, stack: &mut Vec<Owned>| {
        for init in d.declarators {
            for dim in init.declarator.array_dims {
                stack.extend(dim.size.map(Owned::Expr));
            }
            stack.extend(init.init.map(Owned::Init));
        }
    };
    for item in tu.items {
        match item {
            ast::Item::Function(f) => stack.extend(f.body.into_iter().flat_map(|b| b.stmts).map(Owned::Stmt)),
            ast::Item::Struct(s) => s.fields.into_iter().for_each(|d| decl(d, &mut stack)),
            ast::Item::Global(d) => decl(d, &mut stack),
            ast::Item::Typedef(_) => {}
            ast::Item::Enum(e) => stack.extend(e.enumerators.into_iter().filter_map(|en| en.value).map(Owned::Expr)),
        }
    }
    while let Some(node) = stack.pop() {
        match node {
            Owned::Stmt(s) => match s {
                S::Decl(d) => decl(d, &mut stack),
                S::Expr(e) | S::Return(Some(e), _) => stack.push(Owned::Expr(e)),
                S::If { cond, then, otherwise, .. } => {
                    stack.push(Owned::Expr(cond));
                    stack.push(Owned::Stmt(*then));
                    stack.extend(otherwise.map(|o| Owned::Stmt(*o)));
                }
                S::While { cond, body, .. } | S::DoWhile { body, cond, .. } => {
                    stack.push(Owned::Expr(cond));
                    stack.push(Owned::Stmt(*body));
                }
                S::For { init, cond, step, body, .. } => {
                    stack.extend(init.map(|i| Owned::Stmt(*i)));
                    stack.extend(cond.into_iter().chain(step).map(Owned::Expr));
                    stack.push(Owned::Stmt(*body));
                }
                S::Block(b) => stack.extend(b.stmts.into_iter().map(Owned::Stmt)),
                S::Asm(a) => {
                    let a = *a;
                    stack.extend(a.outputs.into_iter().chain(a.inputs).map(|o| Owned::Expr(o.expr)))
                }
                S::Switch { cond, body, .. } => {
                    stack.push(Owned::Expr(cond));
                    stack.push(Owned::Stmt(*body));
                }
                S::Case { value, high, stmt, .. } => {
                    stack.extend(std::iter::once(value).chain(high).map(Owned::Expr));
                    stack.push(Owned::Stmt(*stmt));
                }
                S::Default { stmt, .. } | S::Label { stmt, .. } => stack.push(Owned::Stmt(*stmt)),
                S::Break(_) | S::Continue(_) | S::Return(None, _) | S::Empty(_) | S::Goto(..) => {}
            },
            Owned::Expr(e) => match e.kind {
                E::Unary { operand: a, .. } | E::SizeofExpr(a) | E::Cast { operand: a, .. } => stack.push(Owned::Expr(*a)),
                E::Binary { lhs, rhs, .. } | E::Assign { lhs, rhs, .. } | E::Comma { lhs, rhs } => {
                    stack.push(Owned::Expr(*lhs));
                    stack.push(Owned::Expr(*rhs));
                }
                E::Index { base, index } => {
                    stack.push(Owned::Expr(*base));
                    stack.push(Owned::Expr(*index));
                }
                E::Conditional { cond, then, otherwise } => {
                    stack.push(Owned::Expr(*cond));
                    stack.push(Owned::Expr(*then));
                    stack.push(Owned::Expr(*otherwise));
                }
                E::Call { callee, args } => {
                    stack.push(Owned::Expr(*callee));
                    stack.extend(args.into_iter().map(Owned::Expr));
                }
                E::Launch { config, args, .. } => stack.extend(config.into_iter().chain(args).map(Owned::Expr)),
                E::LaunchThrough { target, config, args, .. } => {
                    stack.push(Owned::Expr(*target));
                    stack.extend(config.into_iter().chain(args).map(Owned::Expr))
                }
                E::Member { base, .. } => stack.push(Owned::Expr(*base)),
                E::Construct { args, .. } => stack.extend(args.into_iter().map(Owned::Expr)),
                _ => {}
            },
            Owned::Init(i) => match i {
                I::Expr(e) => stack.push(Owned::Expr(e)),
                I::List(items, _) => stack.extend(items.into_iter().map(Owned::Init)),
                I::Ctor(args, _) => stack.extend(args.into_iter().map(Owned::Expr)),
            },
        }
    }
}
