//! **Where operator function names are formed.** C++ names an operator function
//! `operator+`, `operator+=`, `operator[]`: the word `operator` and the operator's token(s).
//! Before `qualified::join` and the grammar see the tokens, each such run becomes one name
//! token whose text is `operator` and the operator's spelling without blanks (`operator[]`),
//! so that `float2 operator+(float2 a, float2 b)` is a function definition like any other
//! and `A::operator+=` a qualified name. Sema resolves `a + b` to it (`sema::overload`).
//!
//! Only the operators cdpc overloads are joined: the arithmetic, bitwise, shift, comparison,
//! logical, assignment and compound-assignment operators, `++`, `--` and `[]`. `operator()`,
//! conversion functions (`operator int`), `new`/`delete`, `->`, `->*` and `,` are left alone:
//! in device code they stay a syntax error, and host code, never parsed, may use them freely.

use super::lexer::{Spanned, Tok};

/// The spelling of an operator token cdpc overloads (the lexer's, `Tok::text`).
fn spelling(tok: &Tok) -> Option<&'static str> {
    let overloaded = matches!(
        tok,
        Tok::Plus
            | Tok::Minus
            | Tok::Star
            | Tok::Slash
            | Tok::Percent
            | Tok::Amp
            | Tok::Pipe
            | Tok::Caret
            | Tok::Tilde
            | Tok::Bang
            | Tok::Shl
            | Tok::Shr
            | Tok::Lt
            | Tok::Gt
            | Tok::Le
            | Tok::Ge
            | Tok::EqEq
            | Tok::Ne
            | Tok::AmpAmp
            | Tok::PipePipe
            | Tok::Assign
            | Tok::PlusAssign
            | Tok::MinusAssign
            | Tok::StarAssign
            | Tok::SlashAssign
            | Tok::PercentAssign
            | Tok::ShlAssign
            | Tok::ShrAssign
            | Tok::AmpAssign
            | Tok::CaretAssign
            | Tok::PipeAssign
            | Tok::PlusPlus
            | Tok::MinusMinus
    );
    if overloaded {
        tok.text()
    } else {
        None
    }
}

/// Joins `operator` and its operator into one name token, in place.
pub(super) fn join(tokens: &mut Vec<Spanned>) {
    if !tokens.iter().any(|t| matches!(&t.1, Tok::Ident(n) if n == "operator")) {
        return;
    }
    let old = std::mem::take(tokens);
    let mut out: Vec<Spanned> = Vec::with_capacity(old.len());
    let mut i = 0;
    while i < old.len() {
        let (start, tok, end) = old[i].clone();
        if matches!(&tok, Tok::Ident(n) if n == "operator") {
            if let Some((_, next, next_end)) = old.get(i + 1) {
                if let Some(op) = spelling(next) {
                    out.push((start, Tok::Ident(format!("operator{op}")), *next_end));
                    i += 2;
                    continue;
                }
                if matches!(next, Tok::LBracket) && matches!(old.get(i + 2), Some((_, Tok::RBracket, _))) {
                    out.push((start, Tok::Ident("operator[]".into()), old[i + 2].2));
                    i += 3;
                    continue;
                }
            }
        }
        out.push((start, tok, end));
        i += 1;
    }
    *tokens = out;
}


#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        let (mut tokens, _) = super::super::lexer::lex(source);
        join(&mut tokens);
        super::super::qualified::join(&mut tokens);
        tokens
            .iter()
            .map(|(s, t, e)| match t {
                Tok::Ident(n) => n.clone(),
                _ => source[*s..*e].to_string(),
            })
            .collect()
    }

    #[test]
    fn joins_operator_names() {
        assert_eq!(texts("float2 operator+(float2 a)"), ["float2", "operator+", "(", "float2", "a", ")"]);
        assert_eq!(texts("A::operator += (int)"), ["A::operator+=", "(", "int", ")"]);
        assert_eq!(texts("x operator [ ] (int i)"), ["x", "operator[]", "(", "int", "i", ")"]);
        assert_eq!(texts("operator<<="), ["operator<<="]);
    }

    #[test]
    fn leaves_other_operators() {
        assert_eq!(texts("operator()()"), ["operator", "(", ")", "(", ")"]);
        assert_eq!(texts("operator int"), ["operator", "int"]);
    }
}
