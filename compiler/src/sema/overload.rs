//! **Where overloads are resolved**: C++'s overload resolution ([over.match]) for calls of
//! overloaded functions, member functions, constructors and kernels.
//!
//! An *overload set* is every function declared under one qualified name
//! (`scope::CxxNames::overloads`; name lookup, `scope.rs`, finds the name). Resolution is
//! the standard's, in a documented subset:
//!
//! 1. **Viable functions**: the number of arguments fits the parameters, counting default
//!    arguments, and each argument has an implicit conversion sequence to its parameter.
//! 2. **Implicit conversion sequences** are ranked *exact match* (identity, lvalue-to-rvalue,
//!    array-to-pointer, qualification adjustment, reference binding to an lvalue of the type),
//!    *promotion* (integral promotion to `int`, `float` to `double`), *conversion* (the other
//!    arithmetic conversions, null pointer, pointer to `void *` or to a base class, pointer to
//!    `bool`, derived-to-base reference binding) and *user-defined* (an integer to `dim3`).
//!    Within a rank, [over.ics.rank]'s tie-breakers that device code meets are kept: identity
//!    beats a qualification adjustment, binding `T &` beats binding `const T &` to a modifiable
//!    lvalue, a conversion to a nearer base beats one to a farther base, and those beat a
//!    conversion to `void *`, which beats a conversion to `bool`.
//! 3. **Best viable function**: the one whose every sequence is no worse than any other's and
//!    one better. Several left: the
//!    call is ambiguous (`E0971`, the tied candidates as labels); none viable: `E0970`, each
//!    candidate with why it is not.
//!
//! A member candidate's implicit object parameter is its first operand (`const Class &` for a
//! `const` member function); a static member's matches any object. A built-in function
//! (`sqrtf`, `make_float2(x, y)`) stays callable beside a header's overloads of its name: when
//! no declared overload is viable, the built-in is tried. What is not done: function templates
//! in an overload set with plain functions (`templates.rs` refuses a plain function named like
//! a template, so the "non-template beats template" rule never has to apply), user-defined conversion
//! functions and converting constructors (classes convert to nothing but their bases),
//! list-initialisation sequences, ref-qualifiers, `operator()`, and overloads that differ only
//! in top-level `const` of a parameter (the same function, as in C++).

use super::Context;
use crate::diag::{Code, Span};
use crate::hir::{self, FuncId};
use crate::types::{DisplayType, FloatKind, IntKind, Type};

/// The rank of an implicit conversion sequence, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rank {
    Exact,
    Promotion,
    Conversion,
    UserDefined,
}

/// An implicit conversion sequence: its rank and a tie-breaker within the rank (lower better).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Ics {
    pub rank: Rank,
    pub detail: u8,
}

const fn ics(rank: Rank, detail: u8) -> Ics {
    Ics { rank, detail }
}

/// A parameter as overload resolution sees it.
#[derive(Clone, Debug)]
struct Param {
    /// The HIR type (a reference's is the pointer that carries it).
    ty: Type,
    is_ref: bool,
}

/// One candidate's result.
enum Outcome {
    Viable(Vec<Ics>),
    NotViable(String),
}

/// The operands of a call as checked expressions; with `object`, the first is the object a
/// member candidate is called on (a free candidate takes all of them as arguments).
pub(super) struct Operands<'a> {
    pub exprs: &'a [hir::Expr],
    pub object: bool,
}

impl Context {
    /// Picks the best of `candidates` for `operands`, or reports why none is (`E0970`,
    /// `E0971`). `what` names the call in messages (`f`, `operator+`).
    pub(super) fn resolve_overload(&mut self, what: &str, candidates: &[FuncId], operands: Operands, span: Span) -> Option<FuncId> {
        match self.best_overload(candidates, &operands) {
            Ok(id) => Some(id),
            Err(outcomes) => {
                self.report_resolution(what, candidates, &operands, outcomes, span);
                None
            }
        }
    }

    /// The best viable candidate without reporting anything, and whether all its conversion
    /// sequences are exact matches.
    pub(super) fn quiet_overload(&self, candidates: &[FuncId], operands: &Operands) -> Option<(FuncId, bool)> {
        let outcomes: Vec<Outcome> = candidates.iter().map(|id| self.try_candidate(*id, operands)).collect();
        let best = best_of(&outcomes)?;
        let Outcome::Viable(seqs) = &outcomes[best] else { return None };
        Some((candidates[best], seqs.iter().all(|s| s.rank == Rank::Exact)))
    }

    fn best_overload(&self, candidates: &[FuncId], operands: &Operands) -> Result<FuncId, Vec<Outcome>> {
        let outcomes: Vec<Outcome> = candidates.iter().map(|id| self.try_candidate(*id, operands)).collect();
        match best_of(&outcomes) {
            Some(i) => Ok(candidates[i]),
            None => Err(outcomes),
        }
    }

    fn report_resolution(&mut self, what: &str, candidates: &[FuncId], operands: &Operands, outcomes: Vec<Outcome>, span: Span) {
        let shown: Vec<String> = operands.exprs.iter().map(|e| DisplayType { ty: &e.ty, structs: self }.to_string()).collect();
        let viable: Vec<usize> = (0..outcomes.len()).filter(|i| matches!(outcomes[*i], Outcome::Viable(_))).collect();
        let limit = 8;
        if viable.is_empty() {
            let mut labels = Vec::new();
            for (id, outcome) in candidates.iter().zip(&outcomes).take(limit) {
                if let Outcome::NotViable(why) = outcome {
                    labels.push((self.name_span(*id), format!("candidate `{}` is not viable: {why}", self.signature(*id))));
                }
            }
            let mut b = self.error(Code::NoViableOverload, span, format!("no matching function for call to `{what}` with arguments ({})", shown.join(", ")))
                .primary(format!("{} candidate{} considered, none viable", candidates.len(), super::expr::plural(candidates.len())));
            for (s, m) in labels {
                b = b.label(s, m);
            }
            if candidates.len() > limit {
                b = b.note(format!("and {} more candidates", candidates.len() - limit));
            }
            b.emit();
        } else {
            let tied: Vec<usize> = tied_best(&outcomes);
            let labels: Vec<(Span, String)> =
                tied.iter().take(limit).map(|i| (self.name_span(candidates[*i]), format!("candidate `{}`", self.signature(candidates[*i])))).collect();
            let mut b = self.error(Code::AmbiguousOverload, span, format!("call to `{what}` with arguments ({}) is ambiguous", shown.join(", ")))
                .primary(format!("{} candidates match equally well", tied.len()));
            for (s, m) in labels {
                b = b.label(s, m);
            }
            b.note("no candidate's conversions are all at least as good as every other's; cast an argument to pick one").emit();
        }
    }

    /// Where a function's name is declared (its definition's span when unknown).
    pub(super) fn name_span(&self, id: FuncId) -> Span {
        self.cxx.name_spans.get(&id).copied().unwrap_or(self.functions[id.0 as usize].span)
    }

    /// `float2 operator+(float2, const float2 &)`, for messages.
    pub(super) fn signature(&self, id: FuncId) -> String {
        let f = &self.functions[id.0 as usize];
        let show = |ty: &Type| DisplayType { ty, structs: self }.to_string();
        let params: Vec<String> = self
            .params_of(id)
            .iter()
            .map(|p| match (&p.ty, p.is_ref) {
                (Type::Pointer { pointee, .. }, true) => format!("{}{} &", p.ty.pointee_quals().prefix(), show(pointee)),
                (ty, _) => show(ty),
            })
            .collect();
        let mut name = f.cxx.scope.clone();
        name.push(f.name.clone());
        let ret = if f.cxx.ctor {
            String::new()
        } else if f.cxx.returns_ref {
            format!("{} &", show(f.return_type.pointee().unwrap_or(&f.return_type)))
        } else {
            show(&f.return_type)
        };
        let konst = if f.cxx.const_method { " const" } else { "" };
        format!("{}{}{}({}){konst}", ret, if ret.is_empty() { "" } else { " " }, name.join("::"), params.join(", "))
    }

    /// The parameters after `this`.
    fn params_of(&self, id: FuncId) -> Vec<Param> {
        let f = &self.functions[id.0 as usize];
        f.param_types()
            .skip(f.cxx.has_this as usize)
            .enumerate()
            .map(|(i, ty)| Param { ty: ty.clone(), is_ref: f.cxx.ref_params.get(i).copied().unwrap_or(false) })
            .collect()
    }

    /// Whether a call of `id` with `operands` is viable, and its conversion sequences.
    fn try_candidate(&self, id: FuncId, operands: &Operands) -> Outcome {
        let f = &self.functions[id.0 as usize];
        let method = self.cxx.methods.get(&id).copied();
        let mut seqs = Vec::new();
        let mut args = operands.exprs;
        if operands.object && method.is_some() {
            let Some((object, rest)) = args.split_first() else { return Outcome::NotViable("no object".into()) };
            args = rest;
            if f.cxx.has_this {
                if self.is_const_place(object) && !f.cxx.const_method && !f.cxx.ctor {
                    return Outcome::NotViable("it is not a `const` member function, and the object is read-only".into());
                }
                let klass = method.expect("checked").class;
                match &object.ty {
                    Type::Struct(c) if self.derives_from(*c, klass) => {}
                    _ => return Outcome::NotViable(format!("the object has type {}", self.show(&object.ty))),
                }
                seqs.push(ics(Rank::Exact, (f.cxx.const_method && !self.is_const_place(object)) as u8));
            } else {
                seqs.push(ics(Rank::Exact, 0));
            }
        } else if f.cxx.has_this && !operands.object {
            return Outcome::NotViable("it is a member function and needs an object".into());
        }
        let params = self.params_of(id);
        let defaults = self.cxx.defaults.get(&id).map_or(0, |d| d.iter().rev().take_while(|d| d.is_some()).count());
        if args.len() > params.len() || args.len() + defaults < params.len() {
            let n = params.len();
            let takes = if defaults == 0 || args.len() > n { format!("{n}") } else { format!("at least {}", n - defaults) };
            return Outcome::NotViable(format!("it takes {takes} argument{}, but {} {} given", super::expr::plural(n), args.len(), if args.len() == 1 { "is" } else { "are" }));
        }
        for (i, (a, p)) in args.iter().zip(&params).enumerate() {
            match self.conversion_sequence(a, p) {
                Ok(s) => seqs.push(s),
                Err(why) => return Outcome::NotViable(format!("argument {} {why}", i + 1)),
            }
        }
        Outcome::Viable(seqs)
    }

    /// The implicit conversion sequence from `arg` to `param`, or why there is none.
    fn conversion_sequence(&self, arg: &hir::Expr, param: &Param) -> Result<Ics, String> {
        if param.is_ref {
            let Type::Pointer { pointee, pointee_const, pointee_volatile } = &param.ty else { return Err("has a parameter cdpc cannot bind".into()) };
            let base_depth = match (&arg.ty, &**pointee) {
                (Type::Struct(from), Type::Struct(to)) => self.base_depth(*from, *to),
                (from, to) => (from == to).then_some(0),
            };
            if let (true, Some(depth)) = (self.is_place(arg), base_depth) {
                if self.is_const_place(arg) && !pointee_const {
                    return Err(format!("is read-only and cannot bind to a non-const reference to {}", self.show(pointee)));
                }
                if self.is_volatile_place(arg) && !pointee_volatile {
                    return Err(format!("is volatile and cannot bind to a non-volatile reference to {}", self.show(pointee)));
                }
                // Binding adds qualifiers the object does not have: worse than binding as is.
                let detail = ((*pointee_const && !self.is_const_place(arg)) || (*pointee_volatile && !self.is_volatile_place(arg))) as u8;
                return Ok(if depth == 0 { ics(Rank::Exact, detail) } else { ics(Rank::Conversion, depth) });
            }
            if !pointee_const {
                return Err(format!("is a value of type {} and cannot bind to a non-const reference to {}", self.show(&arg.ty), self.show(pointee)));
            }
            return self.value_sequence(arg, pointee);
        }
        self.value_sequence(arg, &param.ty)
    }

    /// The sequence that converts the value of `arg` to `to`.
    fn value_sequence(&self, arg: &hir::Expr, to: &Type) -> Result<Ics, String> {
        let from = self.decayed_type(arg).unwrap_or_else(|| arg.ty.clone());
        if &from == to {
            return Ok(ics(Rank::Exact, 0));
        }
        let no = || format!("has type {}, which does not convert to {}", self.show(&from), self.show(to));
        if from.is_arithmetic() && to.is_arithmetic() && *to != Type::CudaError && !matches!(to, Type::Enum { .. }) {
            let promotes = match (&from, to) {
                (Type::Int(k), Type::Int(IntKind::Int)) => k.rank() < IntKind::Int.rank(),
                (Type::CudaError, Type::Int(IntKind::Int)) => true,
                (Type::Enum { .. }, t) => self.promote(&from) == *t,
                (Type::Float(FloatKind::Float), Type::Float(FloatKind::Double)) => true,
                _ => false,
            };
            return Ok(if promotes { ics(Rank::Promotion, 0) } else { ics(Rank::Conversion, 0) });
        }
        if let (Type::Pointer { pointee: pf, .. }, Type::Pointer { pointee: pt, .. }) = (&from, to) {
            let (qf, qt) = (from.pointee_quals(), to.pointee_quals());
            if !qt.contains(qf) {
                return Err(format!("has type {}, and the conversion to {} would drop `{}`", self.show(&from), self.show(to), qf.without(qt).prefix().trim_end()));
            }
            if pf == pt {
                return Ok(ics(Rank::Exact, 1));
            }
            if let (Type::Struct(d), Type::Struct(b)) = (&**pf, &**pt) {
                if let Some(depth) = self.base_depth(*d, *b) {
                    return Ok(ics(Rank::Conversion, depth));
                }
            }
        }
        match self.implicit_conversion_ok(&hir::Expr { kind: arg.kind.clone(), ty: from.clone(), span: arg.span }, to) {
            // dim3's converting constructor, a group's conversion operator.
            Ok(()) if *to == Type::Dim3 || matches!(to, Type::Struct(_)) => Ok(ics(Rank::UserDefined, 0)),
            Ok(()) if *to == Type::BOOL => Ok(ics(Rank::Conversion, 200)),
            Ok(()) if to.pointee().is_some_and(Type::is_void) => Ok(ics(Rank::Conversion, 100)),
            Ok(()) => Ok(ics(Rank::Conversion, 0)),
            Err(_) => Err(no()),
        }
    }

    /// How many derivation steps lead from `derived` to `base` (0: the same class).
    fn base_depth(&self, derived: crate::types::StructId, base: crate::types::StructId) -> Option<u8> {
        let mut c = Some(derived);
        let mut depth = 0u8;
        while let Some(id) = c {
            if id == base {
                return Some(depth);
            }
            depth = depth.saturating_add(1);
            c = self.cxx.bases.get(&id).copied();
        }
        None
    }


}

/// Whether `a` is a better set of conversion sequences than `b`: none worse, one better.
fn better(a: &[Ics], b: &[Ics]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
}

/// The index of the one viable outcome better than every other viable one.
fn best_of(outcomes: &[Outcome]) -> Option<usize> {
    let viable: Vec<(usize, &Vec<Ics>)> = outcomes.iter().enumerate().filter_map(|(i, o)| if let Outcome::Viable(s) = o { Some((i, s)) } else { None }).collect();
    viable.iter().find(|(i, s)| viable.iter().all(|(j, t)| i == j || better(s, t))).map(|(i, _)| *i)
}

/// The viable outcomes that no other is better than (the ambiguous ones).
fn tied_best(outcomes: &[Outcome]) -> Vec<usize> {
    let viable: Vec<(usize, &Vec<Ics>)> = outcomes.iter().enumerate().filter_map(|(i, o)| if let Outcome::Viable(s) = o { Some((i, s)) } else { None }).collect();
    viable.iter().filter(|(i, s)| !viable.iter().any(|(j, t)| i != j && better(t, s))).map(|(i, _)| *i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_order_sequences() {
        let exact = ics(Rank::Exact, 0);
        let qual = ics(Rank::Exact, 1);
        let promo = ics(Rank::Promotion, 0);
        let conv = ics(Rank::Conversion, 0);
        assert!(better(&[exact, conv], &[promo, conv]));
        assert!(better(&[exact], &[qual]));
        assert!(!better(&[exact, conv], &[conv, exact]));
        let outcomes = vec![Outcome::Viable(vec![exact, conv]), Outcome::Viable(vec![conv, exact])];
        assert_eq!(best_of(&outcomes), None);
        assert_eq!(tied_best(&outcomes), vec![0, 1]);
        let outcomes = vec![Outcome::NotViable("x".into()), Outcome::Viable(vec![promo]), Outcome::Viable(vec![exact])];
        assert_eq!(best_of(&outcomes), Some(2));
    }
}
