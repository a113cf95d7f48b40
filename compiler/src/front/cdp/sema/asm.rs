//! GCC-style inline PTX assembly, as NVIDIA's "Inline PTX Assembly in CUDA" describes it and
//! nvcc accepts it: `asm volatile("bfind.u32 %0, %1;" : "=r"(ret) : "r"(word));`.
//!
//! - The template is the concatenation of its string literals. With operands, `%N` names
//!   operand N (outputs first, then inputs) and `%%` is a `%`; a `%` before a letter that is
//!   not followed by a digit is kept, as nvcc keeps it. Without operands the template is taken
//!   literally, `%%` included, as nvcc takes it.
//! - Constraints: `=` (written) or `+` (read and written) on outputs, optionally `&`
//!   (early clobber), then one letter: `h` (16-bit integer), `r` (32-bit), `l` (64-bit,
//!   pointers too), `f` (`float`), `d` (`double`), and on inputs `n` (an integer constant).
//!   Like nvcc, an operand must have exactly the constraint's size and kind: nothing is
//!   converted (a `char` for `r` is an error in nvcc too; write `(int)c`).
//! - The only clobber is `"memory"`.
//!
//! Codes: `E0960` unknown or malformed constraint letter, `E0961` `%N` past the operands,
//! `E0962` an output that is not a modifiable place, `E0963` an `n` operand that is not a
//! constant, `E0964` an operand whose type does not fit its constraint, `E0965` `=`/`+` missing
//! on an output or given on an input, `E0966` a clobber other than `"memory"`, `E0967` a
//! template `%` that is not an operand reference (`%` at the end, modifiers such as `%r1`,
//! `%[name]`, `%=`).
//!
//! Code generation lowers the checked statement in `front/cdp/codegen/asm.rs`.

use super::consteval::{self, Const};
use super::expr::int_const;
use super::Context;
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{AsmConstraint, AsmInput, AsmOutput, AsmPiece, InlineAsm, Stmt};
use crate::front::cdp::syntax::ast;
use crate::types::Type;

/// What a constraint letter asks for, in messages.
fn describe(c: AsmConstraint) -> &'static str {
    match c {
        AsmConstraint::H => "a 16-bit integer register",
        AsmConstraint::R => "a 32-bit integer register",
        AsmConstraint::L => "a 64-bit integer register",
        AsmConstraint::F => "a `float` register",
        AsmConstraint::D => "a `double` register",
        AsmConstraint::N => "an integer constant",
    }
}

const LETTERS_NOTE: &str =
    "the constraint letters are `h` (16-bit integer), `r` (32-bit integer), `l` (64-bit integer or pointer), `f` (`float`), `d` (`double`) and, for inputs, `n` (integer constant)";

/// A constraint string read: the letter, `+`, `&`.
#[derive(Debug, PartialEq)]
struct Constraint {
    letter: AsmConstraint,
    read_write: bool,
    early_clobber: bool,
}

/// A problem with a constraint string: code, message, note.
type ConstraintError = (Code, String, Option<String>);

fn parse_constraint(bytes: &[u8], output: bool) -> Result<Constraint, ConstraintError> {
    let text = String::from_utf8_lossy(bytes);
    let (modifier, rest) = match bytes.first() {
        Some(b'=') => (Some(false), &bytes[1..]),
        Some(b'+') => (Some(true), &bytes[1..]),
        _ => (None, bytes),
    };
    match (output, modifier) {
        (true, None) => {
            return Err((
                Code::AsmConstraintModifier,
                format!("the output constraint `{text}` has no `=` or `+`"),
                Some("an output's constraint starts with `=` (written) or `+` (read and written), as in `\"=r\"(x)`".into()),
            ))
        }
        (false, Some(rw)) => {
            return Err((
                Code::AsmConstraintModifier,
                format!("an input constraint cannot start with `{}`", if rw { '+' } else { '=' }),
                Some("operands that are written go before the second `:`, among the outputs".into()),
            ))
        }
        _ => {}
    }
    let (early_clobber, rest) = match rest.first() {
        Some(b'&') if output => (true, &rest[1..]),
        _ => (false, rest),
    };
    let letters = String::from_utf8_lossy(rest);
    let mut chars = letters.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        let message = if rest.is_empty() { format!("the constraint `{text}` has no constraint letter") } else { format!("the constraint `{text}` has more than one constraint letter") };
        return Err((Code::AsmUnknownConstraint, message, Some(format!("in device code an operand takes exactly one letter; {LETTERS_NOTE}"))));
    };
    let Some(letter) = AsmConstraint::from_letter(c) else {
        return Err((Code::AsmUnknownConstraint, format!("unknown constraint letter `{}`", c.escape_debug()), Some(LETTERS_NOTE.into())));
    };
    if output && letter == AsmConstraint::N {
        return Err((Code::AsmUnknownConstraint, "`n` (an immediate constant) cannot be an output".into(), Some("outputs take `h`, `r`, `l`, `f` or `d`".into())));
    }
    Ok(Constraint { letter, read_write: modifier == Some(true), early_clobber })
}

/// Where bytes `a..b` of the concatenated template are in the source: inside the literal when
/// it was written without escapes (its span is then its bytes and two quotes), else the whole
/// literal(s).
fn template_span(pieces: &[(Vec<u8>, Span)], a: usize, b: usize) -> Span {
    let mut start = 0;
    let mut found: Option<Span> = None;
    for (bytes, span) in pieces {
        let end = start + bytes.len();
        if a < end && b > start {
            let exact = span.end.saturating_sub(span.start) as usize == bytes.len() + 2;
            let here = if exact && a >= start && b <= end {
                let base = span.start as usize + 1;
                Span::new(base + a - start, base + b - start)
            } else {
                *span
            };
            found = Some(found.map_or(here, |f| f.to(here)));
        }
        start = end;
    }
    found.or_else(|| pieces.last().map(|p| p.1)).unwrap_or_default()
}

/// A problem in the template: code, where (bytes of the concatenation), message, label, note.
#[derive(Debug, PartialEq)]
struct TemplateError {
    code: Code,
    at: (usize, usize),
    message: String,
    label: String,
    note: Option<String>,
}

/// Reads a template with `operands` operands into text and operand references.
fn parse_template(bytes: &[u8], operands: usize) -> (Vec<AsmPiece>, Vec<TemplateError>) {
    let mut pieces = Vec::new();
    let mut errors = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    if operands == 0 {
        // nvcc takes a template without operands literally (`%%` stays `%%`).
        return (vec![AsmPiece::Text(String::from_utf8_lossy(bytes).into_owned())], errors);
    }
    let flush = |text: &mut Vec<u8>, pieces: &mut Vec<AsmPiece>| {
        if !text.is_empty() {
            pieces.push(AsmPiece::Text(String::from_utf8_lossy(text).into_owned()));
            text.clear();
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'%' {
            text.push(b);
            i += 1;
            continue;
        }
        let next = bytes.get(i + 1).copied();
        match next {
            Some(b'%') => {
                text.push(b'%');
                i += 2;
            }
            Some(d) if d.is_ascii_digit() => {
                let digits = bytes[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                let number = bytes[i + 1..i + 1 + digits].iter().fold(0u64, |n, c| n.saturating_mul(10).saturating_add((c - b'0') as u64));
                let end = i + 1 + digits;
                if number >= operands as u64 {
                    let shown = String::from_utf8_lossy(&bytes[i..end]).into_owned();
                    errors.push(TemplateError {
                        code: Code::AsmOperandOutOfRange,
                        at: (i, end),
                        message: format!("`{shown}` names no operand"),
                        label: format!("this asm statement has {operands} operand{}", super::expr::plural(operands)),
                        note: Some(format!("operands are numbered from `%0`, outputs first, then inputs: here `%0` to `%{}`", operands - 1)),
                    });
                } else {
                    flush(&mut text, &mut pieces);
                    pieces.push(AsmPiece::Operand(number as u32));
                }
                i = end;
            }
            Some(l) if l.is_ascii_alphabetic() && bytes.get(i + 2).is_some_and(u8::is_ascii_digit) => {
                errors.push(TemplateError {
                    code: Code::AsmTemplate,
                    at: (i, i + 2),
                    message: format!("operand modifier `%{}` is not supported", l as char),
                    label: "a `%` before a letter and a number".into(),
                    note: Some("nvcc supports no operand modifiers; a PTX register such as `%r1` is written `%%r1` when the statement has operands".into()),
                });
                i += 2;
            }
            Some(l) if l.is_ascii_alphabetic() => {
                // nvcc keeps `%x` as it is (`%smid` without the second `%`).
                text.push(b'%');
                i += 1;
            }
            None => {
                errors.push(TemplateError {
                    code: Code::AsmTemplate,
                    at: (i, i + 1),
                    message: "`%` at the end of the template".into(),
                    label: "nothing follows this `%`".into(),
                    note: Some("write `%%` for a `%` in the PTX".into()),
                });
                i += 1;
            }
            Some(other) => {
                let (message, note) = match other {
                    b'[' => ("symbolic operand names (`%[name]`) are not supported", "refer to operands by number, `%0`, `%1`, ..."),
                    b'=' => ("`%=` (a number unique to the statement) is not supported", "nvcc does not support it in device code either"),
                    _ => ("`%` must be followed by an operand number or another `%`", "write `%%` for a `%` in the PTX"),
                };
                let len = std::str::from_utf8(&bytes[i + 1..]).ok().and_then(|s| s.chars().next()).map_or(1, char::len_utf8);
                errors.push(TemplateError { code: Code::AsmTemplate, at: (i, i + 1 + len), message: message.into(), label: "not an operand reference".into(), note: Some(note.into()) });
                i += 1 + len;
            }
        }
    }
    flush(&mut text, &mut pieces);
    (pieces, errors)
}

impl Context {
    /// Checks an `asm` statement and lowers it to [`Stmt::Asm`].
    pub(super) fn asm_stmt(&mut self, stmt: &ast::AsmStmt, out: &mut Vec<Stmt>) {
        let mut ok = true;
        let mut outputs = Vec::new();
        for op in &stmt.outputs {
            match self.asm_output(op) {
                Some(o) => outputs.push(o),
                None => ok = false,
            }
        }
        let mut inputs = Vec::new();
        for op in &stmt.inputs {
            match self.asm_input(op) {
                Some(i) => inputs.push(i),
                None => ok = false,
            }
        }
        let mut clobbers_memory = false;
        for (clobber, span) in &stmt.clobbers {
            match clobber.as_slice() {
                b"memory" => clobbers_memory = true,
                b"cc" => {
                    self.error(Code::AsmClobber, *span, "the `cc` clobber is not supported in device code")
                        .note("PTX has no condition-code register; predicates are ordinary registers declared with `.reg .pred`")
                        .emit();
                    ok = false;
                }
                other => {
                    let shown = String::from_utf8_lossy(other).into_owned();
                    self.error(Code::AsmClobber, *span, format!("unknown clobber `{shown}`"))
                        .primary("not `\"memory\"`")
                        .note("PTX registers are virtual and cannot be clobbered; the one clobber is `\"memory\"`")
                        .emit();
                    ok = false;
                }
            }
        }
        let bytes: Vec<u8> = stmt.template.iter().flat_map(|(b, _)| b.iter().copied()).collect();
        let operands = stmt.outputs.len() + stmt.inputs.len();
        let (template, errors) = parse_template(&bytes, operands);
        for e in errors {
            let span = template_span(&stmt.template, e.at.0, e.at.1);
            let builder = self.error(e.code, span, e.message).primary(e.label);
            match e.note {
                Some(note) => builder.note(note).emit(),
                None => builder.emit(),
            }
            ok = false;
        }
        if ok {
            let side_effects = stmt.volatile || outputs.is_empty();
            out.push(Stmt::Asm(Box::new(InlineAsm { template, outputs, inputs, side_effects, clobbers_memory, span: stmt.span })));
        }
    }

    fn asm_constraint(&mut self, op: &ast::AsmOperand, output: bool) -> Option<Constraint> {
        match parse_constraint(&op.constraint, output) {
            Ok(c) => Some(c),
            Err((code, message, note)) => {
                let builder = self.error(code, op.constraint_span, message);
                match note {
                    Some(note) => builder.note(note).emit(),
                    None => builder.emit(),
                }
                None
            }
        }
    }

    fn asm_output(&mut self, op: &ast::AsmOperand) -> Option<AsmOutput> {
        let constraint = self.asm_constraint(op, true);
        let place = self.expr(&op.expr)?;
        let constraint = constraint?;
        let why = if !self.is_place(&place) {
            Some("not a variable, element or field")
        } else if matches!(place.ty, Type::Array { .. }) {
            Some("an array cannot be assigned")
        } else if self.is_const_place(&place) {
            Some("this location is read-only")
        } else {
            None
        };
        if let Some(why) = why {
            self.error(Code::AsmOutputNotLvalue, op.expr.span, "an asm output operand must be a modifiable place")
                .primary(why)
                .note("the asm statement stores its result there; give it a variable, an element or a field")
                .emit();
            return None;
        }
        self.check_fits(&place.ty, constraint.letter, op)?;
        Some(AsmOutput { place, constraint: constraint.letter, read_write: constraint.read_write, early_clobber: constraint.early_clobber })
    }

    fn asm_input(&mut self, op: &ast::AsmOperand) -> Option<AsmInput> {
        let constraint = self.asm_constraint(op, false);
        let value = self.expr(&op.expr)?;
        let value = self.rvalue(value);
        let constraint = constraint?;
        if constraint.letter != AsmConstraint::N {
            self.check_fits(&value.ty, constraint.letter, op)?;
            return Some(AsmInput { value, constraint: constraint.letter });
        }
        if !value.ty.is_integer() {
            self.error(Code::AsmOperandType, op.expr.span, format!("{} is not an integer, which `n` needs", self.show(&value.ty))).primary("the constraint `n` takes an integer constant").emit();
            return None;
        }
        let Some(Const::Int(v)) = consteval::eval(&value, &self.target) else {
            self.error(Code::AsmNotConstant, op.expr.span, "the operand of an `n` constraint must be an integer constant")
                .primary("not a constant expression")
                .note("`n` puts the number itself in the PTX; use `r` or `l` for a value known only at run time")
                .emit();
            return None;
        };
        // nvcc writes the constant as a signed number of 32 bits, or 64 for 64-bit types.
        let ty = if self.size_align(&value.ty).0 == 8 { Type::LONGLONG } else { Type::INT };
        let folded = int_const(consteval::truncate_int(v, &ty, &self.target), ty, value.span);
        Some(AsmInput { value: folded, constraint: AsmConstraint::N })
    }

    /// nvcc's rule: an operand has exactly the size, and the kind, of its constraint.
    fn check_fits(&mut self, ty: &Type, c: AsmConstraint, op: &ast::AsmOperand) -> Option<()> {
        let size = self.size_align(ty).0;
        let integer = matches!(ty, Type::Int(k) if *k != crate::types::IntKind::Bool) || *ty == Type::CudaError;
        let pointer = matches!(ty, Type::Pointer { .. } | Type::Stream | Type::Event);
        let fits = match c {
            AsmConstraint::H => integer && size == 2,
            AsmConstraint::R => (integer || pointer) && size == 4,
            AsmConstraint::L => (integer || pointer) && size == 8,
            AsmConstraint::F => *ty == Type::FLOAT,
            AsmConstraint::D => *ty == Type::DOUBLE,
            AsmConstraint::N => integer,
        };
        if fits {
            return Some(());
        }
        let suggestion = match c {
            AsmConstraint::H => "`(short)`",
            AsmConstraint::R => "`(int)` or `(unsigned)`",
            AsmConstraint::L => "`(long long)`",
            AsmConstraint::F => "`(float)`",
            AsmConstraint::D => "`(double)`",
            AsmConstraint::N => "an integer type",
        };
        let message = format!("{} does not fit the constraint `{}`", self.show(ty), c.letter());
        self.error(Code::AsmOperandType, op.expr.span, message)
            .primary(format!("`{}` is {}", c.letter(), describe(c)))
            .label(op.constraint_span, "the constraint")
            .note(format!("as in nvcc, an operand must have exactly the constraint's size and kind; convert it with {suggestion}, or pick the letter of its type"))
            .emit();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints() {
        let c = parse_constraint(b"+&r", true).unwrap();
        assert_eq!(c, Constraint { letter: AsmConstraint::R, read_write: true, early_clobber: true });
        assert_eq!(parse_constraint(b"n", false).unwrap().letter, AsmConstraint::N);
        assert_eq!(parse_constraint(b"r", true).unwrap_err().0, Code::AsmConstraintModifier);
        assert_eq!(parse_constraint(b"=r", false).unwrap_err().0, Code::AsmConstraintModifier);
        assert_eq!(parse_constraint(b"=x", true).unwrap_err().0, Code::AsmUnknownConstraint);
        assert_eq!(parse_constraint(b"rn", false).unwrap_err().0, Code::AsmUnknownConstraint);
        assert_eq!(parse_constraint(b"", false).unwrap_err().0, Code::AsmUnknownConstraint);
        assert_eq!(parse_constraint(b"=n", true).unwrap_err().0, Code::AsmUnknownConstraint);
        assert_eq!(parse_constraint(b"&r", false).unwrap_err().0, Code::AsmUnknownConstraint);
        assert_eq!(parse_constraint("=\u{e9}".as_bytes(), true).unwrap_err().0, Code::AsmUnknownConstraint);
    }

    #[test]
    fn templates() {
        let (p, e) = parse_template(b"mov.u32 %0, %%smid; // %x %1", 2);
        assert!(e.is_empty());
        assert_eq!(p, [AsmPiece::Text("mov.u32 ".into()), AsmPiece::Operand(0), AsmPiece::Text(", %smid; // %x ".into()), AsmPiece::Operand(1)]);
        // Without operands, literally.
        assert_eq!(parse_template(b"a %%b %0 %", 0).0, [AsmPiece::Text("a %%b %0 %".into())]);
        let codes = |t: &[u8], n| parse_template(t, n).1.into_iter().map(|e| (e.code, e.at)).collect::<Vec<_>>();
        assert_eq!(codes(b"%2", 2), [(Code::AsmOperandOutOfRange, (0, 2))]);
        assert_eq!(codes(b"x %99999999999999999999999999", 1), [(Code::AsmOperandOutOfRange, (2, 29))]);
        assert_eq!(codes(b"%r1 %", 1), [(Code::AsmTemplate, (0, 2)), (Code::AsmTemplate, (4, 5))]);
        assert_eq!(codes(b"%[x] %= % ", 1).len(), 3);
        assert_eq!(codes("%\u{e9}".as_bytes(), 1), [(Code::AsmTemplate, (0, 3))]);
        assert_eq!(parse_template(b"%00001", 2).0, [AsmPiece::Operand(1)]);
    }

    #[test]
    fn spans_point_into_plain_literals() {
        // "ab %1" at 10..17 and "\t%2" (an escape: 6 bytes of source for 3) at 18..24.
        let pieces = vec![(b"ab %1".to_vec(), Span::new(10, 17)), (b"\t%2".to_vec(), Span::new(18, 24))];
        assert_eq!(template_span(&pieces, 3, 5), Span::new(14, 16));
        assert_eq!(template_span(&pieces, 6, 8), Span::new(18, 24));
        assert_eq!(template_span(&pieces, 4, 6), Span::new(10, 24));
    }
}
