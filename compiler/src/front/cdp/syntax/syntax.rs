//! Helpers for the grammar's actions: normalising type-specifier words, sorting qualifiers
//! into function and variable ones, and building expression nodes.

use super::ast::*;
use super::lexer::{QualKw, TypeKw};
use crate::diag::{Code, Diagnostic, Span};

/// One word of a declaration's specifiers, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecWord {
    Kw(TypeKw, Span),
    Struct(Ident),
    Const,
    Volatile,
}

/// One qualifier, as written; `extern "C"` is [`Qual::ExternC`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qual {
    Kw(QualKw),
    Extern,
    ExternC,
    LaunchBounds(LaunchBounds),
}

impl Qual {
    fn text(self) -> &'static str {
        match self {
            Qual::Kw(q) => q.as_str(),
            Qual::Extern => "extern",
            Qual::ExternC => "extern \"C\"",
            Qual::LaunchBounds(_) => "__launch_bounds__",
        }
    }
}

pub fn span(l: usize, r: usize) -> Span {
    Span::new(l, r)
}

pub fn expr(kind: ExprKind, l: usize, r: usize) -> Expr {
    Expr { kind, span: Span::new(l, r) }
}

pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr, l: usize, r: usize) -> Expr {
    expr(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, l, r)
}

pub fn unary(op: UnaryOp, operand: Expr, l: usize, r: usize) -> Expr {
    expr(ExprKind::Unary { op, operand: Box::new(operand) }, l, r)
}

/// Turns the specifier words into a [`TypeSpec`], reporting impossible combinations such as
/// `long float` or `signed unsigned`.
pub fn type_spec(words: Vec<SpecWord>, l: usize, r: usize, diags: &mut Vec<Diagnostic>) -> TypeSpec {
    let whole = Span::new(l, r);
    let mut is_const = false;
    let mut is_volatile = false;
    let mut kws: Vec<(TypeKw, Span)> = Vec::new();
    let mut structs: Vec<TypeSpecKind> = Vec::new();
    for w in words {
        match w {
            SpecWord::Const => is_const = true,
            SpecWord::Volatile => is_volatile = true,
            SpecWord::Kw(k, s) => kws.push((k, s)),
            SpecWord::Struct(id) => structs.push(TypeSpecKind::Struct(id)),
        }
    }
    let fallback = TypeSpec { kind: TypeSpecKind::Builtin(BaseType::Int), is_const, is_volatile, span: whole };
    if let Some(first) = structs.first() {
        if structs.len() > 1 || !kws.is_empty() {
            diags.push(Diagnostic::new(Code::SyntaxError, whole, "two types in one declaration").with_primary_message("a declaration names exactly one type"));
            return fallback;
        }
        return TypeSpec { kind: first.clone(), is_const, is_volatile, span: whole };
    }
    if kws.is_empty() {
        diags.push(Diagnostic::new(Code::SyntaxError, whole, "missing type").with_primary_message("`const` needs a type, as in `const int`"));
        return fallback;
    }
    match base_type(&kws) {
        Ok(base) => TypeSpec { kind: TypeSpecKind::Builtin(base), is_const, is_volatile, span: whole },
        Err(message) => {
            let written: Vec<&str> = kws.iter().map(|(k, _)| k.as_str()).collect();
            diags.push(Diagnostic::new(Code::SyntaxError, whole, format!("invalid type `{}`", written.join(" "))).with_primary_message(message));
            fallback
        }
    }
}

fn base_type(kws: &[(TypeKw, Span)]) -> Result<BaseType, String> {
    let count = |k: TypeKw| kws.iter().filter(|(w, _)| *w == k).count();
    let (signed, unsigned) = (count(TypeKw::Signed), count(TypeKw::Unsigned));
    let (short, long, int, char_) = (count(TypeKw::Short), count(TypeKw::Long), count(TypeKw::Int), count(TypeKw::Char));
    let standalone = [
        (TypeKw::Void, BaseType::Void),
        (TypeKw::Bool, BaseType::Bool),
        (TypeKw::Float, BaseType::Float),
        (TypeKw::Double, BaseType::Double),
        (TypeKw::SizeT, BaseType::SizeT),
        (TypeKw::Dim3, BaseType::Dim3),
        (TypeKw::Stream, BaseType::Stream),
        (TypeKw::Event, BaseType::Event),
        (TypeKw::CudaError, BaseType::CudaError),
    ];
    for (kw, base) in standalone {
        if count(kw) > 0 {
            if kws.len() == 1 {
                return Ok(base);
            }
            if kw == TypeKw::Double && long == 1 && kws.len() == 2 {
                return Err("`long double` is not supported".into());
            }
            return Err(format!("`{}` cannot be combined with other type words", kw.as_str()));
        }
    }
    if signed > 0 && unsigned > 0 {
        return Err("a type cannot be both `signed` and `unsigned`".into());
    }
    if signed > 1 || unsigned > 1 || short > 1 || int > 1 || char_ > 1 || long > 2 {
        return Err("a type word is repeated".into());
    }
    if char_ == 1 {
        if short + long + int > 0 {
            return Err("`char` cannot be combined with `short`, `long` or `int`".into());
        }
        return Ok(if signed == 1 {
            BaseType::SignedChar
        } else if unsigned == 1 {
            BaseType::UnsignedChar
        } else {
            BaseType::Char
        });
    }
    if short == 1 {
        if long > 0 {
            return Err("a type cannot be both `short` and `long`".into());
        }
        return Ok(if unsigned == 1 { BaseType::UnsignedShort } else { BaseType::Short });
    }
    Ok(match (long, unsigned == 1) {
        (0, false) => BaseType::Int,
        (0, true) => BaseType::UnsignedInt,
        (1, false) => BaseType::Long,
        (1, true) => BaseType::UnsignedLong,
        (_, false) => BaseType::LongLong,
        (_, true) => BaseType::UnsignedLongLong,
    })
}

/// The type of a functional cast `int(x)`: one type word.
pub fn construct_type(kw: TypeKw, l: usize, r: usize, diags: &mut Vec<Diagnostic>) -> TypeName {
    let spec = type_spec(vec![SpecWord::Kw(kw, Span::new(l, r))], l, r, diags);
    TypeName { spec, pointers: Vec::new(), span: Span::new(l, r) }
}

pub fn fn_qualifiers(quals: Vec<(Qual, Span)>, diags: &mut Vec<Diagnostic>) -> Vec<(FnQualifier, Span)> {
    let mut out = Vec::new();
    for (q, s) in quals {
        let fq = match q {
            Qual::Kw(QualKw::Global) => FnQualifier::Global,
            Qual::Kw(QualKw::Device) => FnQualifier::Device,
            Qual::Kw(QualKw::Host) => FnQualifier::Host,
            Qual::Kw(QualKw::Static) => FnQualifier::Static,
            Qual::Kw(QualKw::Inline) => FnQualifier::Inline,
            Qual::Kw(QualKw::ForceInline) => FnQualifier::ForceInline,
            Qual::Kw(QualKw::NoInline) => FnQualifier::NoInline,
            Qual::ExternC => FnQualifier::ExternC,
            Qual::LaunchBounds(bounds) => FnQualifier::LaunchBounds(bounds),
            // A plain `extern` on a function declaration means nothing in C.
            Qual::Extern => continue,
            Qual::Kw(QualKw::Constant | QualKw::Shared | QualKw::Managed) => {
                diags.push(Diagnostic::new(Code::SyntaxError, s, format!("`{}` cannot be applied to a function", q.text())).with_primary_message("this qualifier is for variables"));
                continue;
            }
        };
        out.push((fq, s));
    }
    out
}

pub fn var_qualifiers(quals: Vec<(Qual, Span)>, diags: &mut Vec<Diagnostic>) -> Vec<(VarQualifier, Span)> {
    let mut out = Vec::new();
    for (q, s) in quals {
        let vq = match q {
            Qual::Kw(QualKw::Device) => VarQualifier::Device,
            Qual::Kw(QualKw::Constant) => VarQualifier::Constant,
            Qual::Kw(QualKw::Shared) => VarQualifier::Shared,
            Qual::Kw(QualKw::Managed) => VarQualifier::Managed,
            Qual::Kw(QualKw::Static) => VarQualifier::Static,
            Qual::Extern => VarQualifier::Extern,
            _ => {
                diags.push(Diagnostic::new(Code::SyntaxError, s, format!("`{}` cannot be applied to a variable", q.text())).with_primary_message("this qualifier is for functions"));
                continue;
            }
        };
        out.push((vq, s));
    }
    out
}

/// `f(void)` declares no parameters.
pub fn params(list: Vec<Param>) -> Vec<Param> {
    if let [p] = list.as_slice() {
        if p.ty.kind == TypeSpecKind::Builtin(BaseType::Void) && !p.ty.is_const && p.declarator.pointers.is_empty() && p.declarator.name.name.is_empty() && p.declarator.array_dims.is_empty() {
            return Vec::new();
        }
    }
    list
}

pub fn struct_def(quals: Vec<(Qual, Span)>, name: Ident, fields: Vec<DeclStmt>, l: usize, r: usize, diags: &mut Vec<Diagnostic>) -> StructDef {
    for (q, s) in quals {
        diags.push(Diagnostic::new(Code::SyntaxError, s, format!("`{}` cannot be applied to a struct definition", q.text())).with_primary_message("remove this qualifier"));
    }
    StructDef { name, fields, align: None, union: false, tagless: false, span: Span::new(l, r) }
}

/// `typedef unsigned foru;` parses as specifiers whose last word is the new name (the grammar
/// cannot tell `foru` from a type word there without a symbol table): take it off.
pub fn typedef_without_pointers(mut words: Vec<SpecWord>, l: usize, r: usize, end: usize, diags: &mut Vec<Diagnostic>) -> TypedefDef {
    let name = match words.pop() {
        Some(SpecWord::Struct(name)) if !words.is_empty() => name,
        other => {
            let at = match &other {
                Some(SpecWord::Struct(id)) => id.span,
                _ => Span::new(l, r),
            };
            diags.push(Diagnostic::new(Code::SyntaxError, at, "a `typedef` needs a type and a new name").with_primary_message("as in `typedef unsigned foru;`"));
            Ident { name: String::new(), span: at }
        }
    };
    let type_end = words
        .iter()
        .map(|w| match w {
            SpecWord::Kw(_, s) => s.end as usize,
            SpecWord::Struct(id) => id.span.end as usize,
            SpecWord::Const | SpecWord::Volatile => l,
        })
        .max()
        .unwrap_or(l);
    let spec = type_spec(words, l, type_end, diags);
    let ty = TypeName { spec, pointers: Vec::new(), span: Span::new(l, type_end) };
    TypedefDef { name, ty, function: None, span: Span::new(l, end) }
}

pub fn concat_strings(parts: Vec<Vec<u8>>) -> Vec<u8> {
    parts.concat()
}

// ---------------------------------------------------------------------------------------------
// `__launch_bounds__` (CUDA's small device qualifiers)

/// `__launch_bounds__(a[, b[, c]])`: one to three integer constant expressions (literals and
/// `+ - * / % << >>` on them, as macros expand to), each from 0 to 2^31 - 1 (`E0911`
/// otherwise, and for more than three); 0, like a bad one, asks nothing, as in nvcc.
pub fn launch_bounds(args: Vec<Expr>, at: Span, diags: &mut Vec<Diagnostic>) -> Qual {
    if args.len() > 3 {
        diags.push(
            Diagnostic::new(Code::InvalidLaunchBounds, at, "`__launch_bounds__` takes at most three arguments")
                .with_note("`__launch_bounds__(maxThreadsPerBlock, minBlocksPerMultiprocessor, maxBlocksPerCluster)`"),
        );
    }
    let mut values = [None; 3];
    for (slot, arg) in values.iter_mut().zip(&args) {
        match fold_int(arg).filter(|v| (0..=i128::from(i32::MAX)).contains(v)) {
            Some(v) => *slot = Some(v as u32),
            None => diags.push(
                Diagnostic::new(Code::InvalidLaunchBounds, arg.span, "`__launch_bounds__` arguments must be integer constants from 0 to 2147483647")
                    .with_primary_message("not an integer constant in that range that cdpc can evaluate here")
                    .with_note("cdpc folds literals and arithmetic on them; a `constexpr` variable or template parameter is not supported here"),
            ),
        }
    }
    Qual::LaunchBounds(LaunchBounds { max_threads: values[0].unwrap_or(0), min_blocks: values[1], max_blocks_per_cluster: values[2] })
}

/// An integer constant expression of literals, as the front end can see it without types.
fn fold_int(e: &Expr) -> Option<i128> {
    match &e.kind {
        ExprKind::IntLit { value, .. } => Some(i128::from(*value)),
        ExprKind::CharLit(c) => Some(i128::from(*c)),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => fold_int(operand).map(|v| -v),
        ExprKind::Unary { op: UnaryOp::Plus, operand } => fold_int(operand),
        ExprKind::Cast { operand, .. } => fold_int(operand),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (fold_int(lhs)?, fold_int(rhs)?);
            let v = match op {
                BinaryOp::Add => a.checked_add(b)?,
                BinaryOp::Sub => a.checked_sub(b)?,
                BinaryOp::Mul => a.checked_mul(b)?,
                BinaryOp::Div => a.checked_div(b)?,
                BinaryOp::Rem => a.checked_rem(b)?,
                BinaryOp::Shl if (0..64).contains(&b) => a.checked_mul(1i128 << b)?,
                BinaryOp::Shr if (0..64).contains(&b) => a >> b,
                _ => return None,
            };
            (v.abs() < 1i128 << 64).then_some(v)
        }
        _ => None,
    }
}

/// What labels a statement (the grammar's `LabelHead`).
pub enum LabelHead {
    Case(Expr, Option<Expr>, Span),
    Default(Span),
    Named(Ident),
}

/// The labeled statement `head stmt`.
pub fn labeled(head: LabelHead, stmt: Stmt) -> Stmt {
    let stmt = Box::new(stmt);
    match head {
        LabelHead::Case(value, high, span) => Stmt::Case { value, high, stmt, span },
        LabelHead::Default(span) => Stmt::Default { stmt, span },
        LabelHead::Named(name) => Stmt::Label { name, stmt },
    }
}

/// `target<<<config>>>(args)` where `target` is an expression (not a name) that should give a
/// pointer to a kernel; sema checks that it does.
pub fn launch_through(target: Expr, config: Vec<Expr>, config_span: Span, args: Vec<Expr>, l: usize, r: usize) -> Expr {
    expr(ExprKind::LaunchThrough { target: Box::new(target), config, config_span, args }, l, r)
}
