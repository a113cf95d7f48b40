//! **Where `asm volatile` is recognised.** To the lexer `volatile` (and `__volatile__`,
//! `__volatile`) is C's qualifier, [`Tok::Volatile`]; right after `asm`/`__asm__` it says that
//! the statement has side effects instead, and this pass turns it into [`Tok::AsmVolatile`], so
//! that the grammar tells the two apart. Runs before `split`, on the whole token stream; host
//! code is marked too, harmlessly.

use super::lexer::{Spanned, Tok};

fn is_volatile(tok: &Tok) -> bool {
    matches!(tok, Tok::Volatile)
}

/// Marks each `volatile` that directly follows `asm` (or another asm qualifier).
pub(super) fn mark_volatile(tokens: &mut [Spanned]) {
    for i in 1..tokens.len() {
        if matches!(tokens[i - 1].1, Tok::Asm | Tok::AsmVolatile) && is_volatile(&tokens[i].1) {
            tokens[i].1 = Tok::AsmVolatile;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(source: &str) -> Vec<Tok> {
        let (mut tokens, _) = super::super::lexer::lex(source);
        mark_volatile(&mut tokens);
        tokens.into_iter().map(|(_, t, _)| t).collect()
    }

    #[test]
    fn volatile_after_asm_is_the_asm_qualifier() {
        assert_eq!(kinds("asm volatile")[1], Tok::AsmVolatile);
        assert_eq!(kinds("__asm__ __volatile__")[1], Tok::AsmVolatile);
        assert_eq!(kinds("__asm volatile")[0], Tok::Asm);
    }

    #[test]
    fn other_volatile_is_left_alone() {
        assert_eq!(kinds("volatile int x")[0], Tok::Volatile);
        assert_eq!(kinds("int volatile")[1], Tok::Volatile);
    }
}
