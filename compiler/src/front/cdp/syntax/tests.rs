//! Parser tests: tree shapes for representative programs, and diagnostics for broken ones.

use super::ast::*;
use super::parse;
use crate::diag::{Code, Diagnostic, Span};

const TYPICAL: &str = r#"#include <cstdio>
struct Pair { int a; double b; };
extern "C" __global__ void child(int *data, double x, char c, int n) { data[threadIdx.x] += n + (int)x + c; }
extern "C" __global__ void tail(int *data) { data[threadIdx.x] += 1; }
extern "C" __global__ void parent(int *data, Pair p) {
  __shared__ int tile[256];
  extern __shared__ float dyn[];
  dim3 grid(2, 1);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (threadIdx.x == 0) {
    child<<<1, 256>>>(data, 2.5, 'a', 7);
    child<<<grid, dim3(128), 0, s>>>(data, p.b, 'b', p.a);
    tail<<<1, 256, 0, cudaStreamTailLaunch>>>(data);
    if (cudaSuccess != cudaGetLastError()) return;
  }
  for (int i = 0; i < 10; ++i) { tile[i] = i * 2; }
  printf("%d %f\n", tile[3], (float)data[0]);
}
"#;

fn ok(src: &str) -> TranslationUnit {
    let (tree, diags) = parse(src);
    assert!(diags.is_empty(), "unexpected diagnostics for {src:?}: {diags:#?}");
    tree.expect("no tree although there were no diagnostics")
}

fn errors(src: &str) -> Vec<Diagnostic> {
    let (tree, diags) = parse(src);
    assert!(tree.is_none(), "expected errors for {src:?}");
    assert!(!diags.is_empty(), "no diagnostics for {src:?}");
    diags
}

/// The body of `void f() { ... }` wrapped around `body`.
fn body(body: &str) -> Vec<Stmt> {
    let tu = ok(&format!("struct S {{ int x; }};\n__device__ void f() {{ {body} }}"));
    match tu.items.into_iter().last() {
        Some(Item::Function(FunctionDef { body: Some(b), .. })) => b.stmts,
        other => panic!("not a function: {other:?}"),
    }
}

fn expr(src: &str) -> Expr {
    match body(&format!("{src};")).remove(0) {
        Stmt::Expr(e) => e,
        other => panic!("not an expression statement: {other:?}"),
    }
}

fn decl(src: &str) -> DeclStmt {
    match body(src).remove(0) {
        Stmt::Decl(d) => d,
        other => panic!("not a declaration: {other:?}"),
    }
}

fn ident(e: &Expr) -> &str {
    match &e.kind {
        ExprKind::Ident(i) => &i.name,
        other => panic!("not an identifier: {other:?}"),
    }
}

fn int(e: &Expr) -> u64 {
    match e.kind {
        ExprKind::IntLit { value, .. } => value,
        ref other => panic!("not an integer: {other:?}"),
    }
}

fn builtin(spec: &TypeSpec) -> BaseType {
    match spec.kind {
        TypeSpecKind::Builtin(b) => b,
        ref other => panic!("not builtin: {other:?}"),
    }
}

#[test]
fn typical_program() {
    let tu = ok(TYPICAL);
    assert_eq!(tu.items.len(), 4);
    let Item::Struct(pair) = &tu.items[0] else { panic!() };
    assert_eq!(pair.name.name, "Pair");
    assert_eq!(pair.fields.len(), 2);
    let Item::Function(parent) = &tu.items[3] else { panic!() };
    assert_eq!(parent.name.name, "parent");
    assert_eq!(parent.qualifiers.iter().map(|q| q.0).collect::<Vec<_>>(), vec![FnQualifier::ExternC, FnQualifier::Global]);
    assert_eq!(parent.params.len(), 2);
    assert!(matches!(&parent.params[1].ty.kind, TypeSpecKind::Struct(i) if i.name == "Pair"));
    let stmts = &parent.body.as_ref().unwrap().stmts;
    let Stmt::Decl(tile) = &stmts[0] else { panic!() };
    assert_eq!(tile.qualifiers[0].0, VarQualifier::Shared);
    let Stmt::Decl(dynamic) = &stmts[1] else { panic!() };
    assert_eq!(dynamic.qualifiers.iter().map(|q| q.0).collect::<Vec<_>>(), vec![VarQualifier::Extern, VarQualifier::Shared]);
    assert_eq!(dynamic.declarators[0].declarator.array_dims.len(), 1);
    assert!(dynamic.declarators[0].declarator.array_dims[0].size.is_none());
    let Stmt::Decl(grid) = &stmts[2] else { panic!() };
    assert!(matches!(&grid.declarators[0].init, Some(Initializer::Ctor(args, _)) if args.len() == 2));
    assert_eq!(builtin(&grid.spec), BaseType::Dim3);
    let Item::Function(child) = &tu.items[1] else { panic!() };
    assert_eq!(child.params.len(), 4);
    assert_eq!(child.params[0].declarator.pointers.len(), 1);
    // The span of the function covers its text.
    assert_eq!(&TYPICAL[child.name.span.range()], "child");
}

#[test]
fn launches_with_two_three_and_four_config_arguments() {
    let stmts = body("k<<<1, 2>>>(a); k<<<g, b, 16>>>(); k<<<g, b, 0, s>>>(x, y);");
    let counts: Vec<(usize, usize)> = stmts
        .iter()
        .map(|s| match s {
            Stmt::Expr(Expr { kind: ExprKind::Launch { config, args, kernel, .. }, .. }) => {
                assert_eq!(kernel.name, "k");
                (config.len(), args.len())
            }
            other => panic!("not a launch: {other:?}"),
        })
        .collect();
    assert_eq!(counts, vec![(2, 1), (3, 0), (4, 2)]);
    let src = "__device__ void f() { k<<<1, 2>>>(a); }";
    let tu = ok(src);
    let Item::Function(f) = &tu.items[0] else { panic!() };
    let Stmt::Expr(Expr { kind: ExprKind::Launch { config_span, .. }, .. }) = &f.body.as_ref().unwrap().stmts[0] else { panic!() };
    assert_eq!(&src[config_span.range()], "<<<1, 2>>>");
}

#[test]
fn launch_with_one_or_five_config_arguments_parses() {
    let stmts = body("k<<<1>>>(); k<<<1, 2, 3, 4, 5>>>();");
    assert_eq!(stmts.len(), 2);
}

#[test]
fn precedence_and_associativity() {
    let e = expr("a + b * c");
    let ExprKind::Binary { op: BinaryOp::Add, lhs, rhs } = &e.kind else { panic!("{e:?}") };
    assert_eq!(ident(lhs), "a");
    assert!(matches!(rhs.kind, ExprKind::Binary { op: BinaryOp::Mul, .. }));

    let e = expr("a - b - c");
    let ExprKind::Binary { op: BinaryOp::Sub, lhs, rhs } = &e.kind else { panic!() };
    assert!(matches!(lhs.kind, ExprKind::Binary { op: BinaryOp::Sub, .. }));
    assert_eq!(ident(rhs), "c");

    let e = expr("a = b = c");
    let ExprKind::Assign { op: None, lhs, rhs } = &e.kind else { panic!() };
    assert_eq!(ident(lhs), "a");
    assert!(matches!(rhs.kind, ExprKind::Assign { op: None, .. }));

    let e = expr("x <<= a || b && c | d ^ e & f == g < h << i");
    let ExprKind::Assign { op: Some(BinaryOp::Shl), rhs, .. } = &e.kind else { panic!() };
    assert!(matches!(rhs.kind, ExprKind::Binary { op: BinaryOp::LogOr, .. }));

    let e = expr("c ? a : b ? d : e");
    let ExprKind::Conditional { otherwise, .. } = &e.kind else { panic!() };
    assert!(matches!(otherwise.kind, ExprKind::Conditional { .. }));

    let e = expr("a, b = 1");
    assert!(matches!(e.kind, ExprKind::Comma { .. }));

    let e = expr("-a * !b");
    let ExprKind::Binary { op: BinaryOp::Mul, lhs, rhs } = &e.kind else { panic!() };
    assert!(matches!(lhs.kind, ExprKind::Unary { op: UnaryOp::Neg, .. }));
    assert!(matches!(rhs.kind, ExprKind::Unary { op: UnaryOp::Not, .. }));
}

#[test]
fn casts_and_parentheses() {
    let e = expr("(int)x + 1");
    let ExprKind::Binary { lhs, .. } = &e.kind else { panic!() };
    let ExprKind::Cast { ty, operand, .. } = &lhs.kind else { panic!("{lhs:?}") };
    assert_eq!(builtin(&ty.spec), BaseType::Int);
    assert_eq!(ident(operand), "x");

    let e = expr("(x) + 1");
    let ExprKind::Binary { lhs, .. } = &e.kind else { panic!() };
    assert_eq!(ident(lhs), "x");

    let e = expr("(const unsigned char *)p");
    let ExprKind::Cast { ty, .. } = &e.kind else { panic!() };
    assert!(ty.spec.is_const);
    assert_eq!(builtin(&ty.spec), BaseType::UnsignedChar);
    assert_eq!(ty.pointers.len(), 1);

    let e = expr("(struct S *)p");
    let ExprKind::Cast { ty, .. } = &e.kind else { panic!() };
    assert!(matches!(&ty.spec.kind, TypeSpecKind::Struct(i) if i.name == "S"));

    let e = expr("(S *)p");
    assert!(matches!(e.kind, ExprKind::Cast { .. }));

    let e = expr("(a + b) * c");
    let ExprKind::Binary { op: BinaryOp::Mul, lhs, .. } = &e.kind else { panic!() };
    assert!(matches!(lhs.kind, ExprKind::Binary { op: BinaryOp::Add, .. }));

    let e = expr("(float)(int)x");
    let ExprKind::Cast { operand, .. } = &e.kind else { panic!() };
    assert!(matches!(operand.kind, ExprKind::Cast { .. }));

    let e = expr("dim3(x, y)");
    let ExprKind::Construct { ty, args } = &e.kind else { panic!("{e:?}") };
    assert_eq!(builtin(&ty.spec), BaseType::Dim3);
    assert_eq!(args.len(), 2);

    let e = expr("(float(x))");
    assert!(matches!(e.kind, ExprKind::Construct { .. }));
}

#[test]
fn sizeof_forms() {
    assert!(matches!(expr("sizeof(int)").kind, ExprKind::SizeofType(_)));
    assert!(matches!(expr("sizeof(struct S)").kind, ExprKind::SizeofType(_)));
    assert!(matches!(expr("sizeof(S *)").kind, ExprKind::SizeofType(_)));
    assert!(matches!(expr("sizeof x").kind, ExprKind::SizeofExpr(_)));
    assert!(matches!(expr("sizeof(x)").kind, ExprKind::SizeofExpr(_)));
    let e = expr("sizeof x + 1");
    assert!(matches!(e.kind, ExprKind::Binary { op: BinaryOp::Add, .. }));
}

#[test]
fn builtin_type_spellings() {
    let cases = [
        ("char", BaseType::Char),
        ("signed char", BaseType::SignedChar),
        ("unsigned char", BaseType::UnsignedChar),
        ("short", BaseType::Short),
        ("short int", BaseType::Short),
        ("unsigned short int", BaseType::UnsignedShort),
        ("unsigned", BaseType::UnsignedInt),
        ("signed", BaseType::Int),
        ("long int", BaseType::Long),
        ("unsigned long", BaseType::UnsignedLong),
        ("long long", BaseType::LongLong),
        ("unsigned long long int", BaseType::UnsignedLongLong),
        ("long unsigned long", BaseType::UnsignedLongLong),
        ("size_t", BaseType::SizeT),
        ("bool", BaseType::Bool),
        ("cudaEvent_t", BaseType::Event),
        ("cudaError_t", BaseType::CudaError),
        ("int const", BaseType::Int),
    ];
    for (spelling, base) in cases {
        let d = decl(&format!("{spelling} v;"));
        assert_eq!(builtin(&d.spec), base, "{spelling}");
    }
    assert!(decl("int const v = 1;").spec.is_const);
    let diags = errors("__device__ void f() { long float x; }");
    assert_eq!(diags[0].code, Code::SyntaxError);
    assert!(diags[0].message.contains("long float"), "{}", diags[0].message);
}

#[test]
fn struct_names_and_fields() {
    let tu = ok("struct T { int x; };\nstruct S { int a; float b[4]; struct T t; T *next; };\n__device__ S make(S s, struct T t);");
    let Item::Struct(s) = &tu.items[1] else { panic!() };
    assert_eq!(s.fields.len(), 4);
    assert_eq!(s.fields[1].declarators[0].declarator.array_dims.len(), 1);
    assert!(matches!(&s.fields[2].spec.kind, TypeSpecKind::Struct(i) if i.name == "T"));
    assert_eq!(s.fields[3].declarators[0].declarator.pointers.len(), 1);
    let Item::Function(f) = &tu.items[2] else { panic!() };
    assert!(f.body.is_none());
    assert!(matches!(&f.return_type.spec.kind, TypeSpecKind::Struct(i) if i.name == "S"));
    assert_eq!(f.params.len(), 2);
}

#[test]
fn declarations_with_several_declarators() {
    let d = decl("int a = 1, *b, c[4], *const *d[2][3];");
    assert_eq!(d.declarators.len(), 4);
    assert!(matches!(d.declarators[0].init, Some(Initializer::Expr(_))));
    assert_eq!(d.declarators[1].declarator.pointers.len(), 1);
    assert_eq!(int(d.declarators[2].declarator.array_dims[0].size.as_ref().unwrap()), 4);
    let last = &d.declarators[3].declarator;
    assert_eq!(last.name.name, "d");
    assert_eq!(last.pointers.len(), 2);
    assert!(last.pointers[0].is_const);
    assert!(!last.pointers[1].is_const);
    assert_eq!(last.array_dims.len(), 2);
}

#[test]
fn initializers() {
    let d = decl("dim3 grid(4, 2), block(128);");
    assert!(matches!(&d.declarators[0].init, Some(Initializer::Ctor(a, _)) if a.len() == 2));
    assert!(matches!(&d.declarators[1].init, Some(Initializer::Ctor(a, _)) if a.len() == 1));
    let d = decl("int m[2][2] = { {1, 2}, {3, 4}, };");
    let Some(Initializer::List(rows, _)) = &d.declarators[0].init else { panic!() };
    assert_eq!(rows.len(), 2);
    assert!(matches!(&rows[1], Initializer::List(r, _) if r.len() == 2));
    let d = decl("int e[1] = {};");
    assert!(matches!(&d.declarators[0].init, Some(Initializer::List(v, _)) if v.is_empty()));
}

#[test]
fn postfix_chain() {
    let e = expr("p->x.y[3]++");
    let ExprKind::Unary { op: UnaryOp::PostInc, operand } = &e.kind else { panic!() };
    let ExprKind::Index { base, index } = &operand.kind else { panic!() };
    assert_eq!(int(index), 3);
    let ExprKind::Member { base, field, arrow: false } = &base.kind else { panic!() };
    assert_eq!(field.name, "y");
    let ExprKind::Member { base, field, arrow: true } = &base.kind else { panic!() };
    assert_eq!(field.name, "x");
    assert_eq!(ident(base), "p");
    let e = expr("*p++");
    let ExprKind::Unary { op: UnaryOp::Deref, operand } = &e.kind else { panic!() };
    assert!(matches!(operand.kind, ExprKind::Unary { op: UnaryOp::PostInc, .. }));
    let e = expr("--*&x");
    assert!(matches!(e.kind, ExprKind::Unary { op: UnaryOp::PreDec, .. }));
}

#[test]
fn literals() {
    let lit = |src: &str| expr(src).kind;
    assert_eq!(lit("42"), ExprKind::IntLit { value: 42, suffix: IntSuffix::default(), decimal: true });
    assert_eq!(lit("0x1F"), ExprKind::IntLit { value: 31, suffix: IntSuffix::default(), decimal: false });
    assert_eq!(lit("017"), ExprKind::IntLit { value: 15, suffix: IntSuffix::default(), decimal: false });
    assert_eq!(lit("0"), ExprKind::IntLit { value: 0, suffix: IntSuffix::default(), decimal: true });
    assert_eq!(lit("10uLL"), ExprKind::IntLit { value: 10, suffix: IntSuffix { unsigned: true, long: 2 }, decimal: true });
    assert_eq!(lit("7lu"), ExprKind::IntLit { value: 7, suffix: IntSuffix { unsigned: true, long: 1 }, decimal: true });
    assert_eq!(lit("18446744073709551615ULL"), ExprKind::IntLit { value: u64::MAX, suffix: IntSuffix { unsigned: true, long: 2 }, decimal: true });
    assert_eq!(lit("1.0"), ExprKind::FloatLit { value: 1.0, is_float: false });
    assert_eq!(lit(".5"), ExprKind::FloatLit { value: 0.5, is_float: false });
    assert_eq!(lit("1e-3"), ExprKind::FloatLit { value: 1e-3, is_float: false });
    assert_eq!(lit("2.5f"), ExprKind::FloatLit { value: 2.5, is_float: true });
    assert_eq!(lit("1.f"), ExprKind::FloatLit { value: 1.0, is_float: true });
    assert_eq!(lit("'\\n'"), ExprKind::CharLit(b'\n'));
    assert_eq!(lit("'\\0'"), ExprKind::CharLit(0));
    assert_eq!(lit("'\\\\'"), ExprKind::CharLit(b'\\'));
    assert_eq!(lit("'\\''"), ExprKind::CharLit(b'\''));
    assert_eq!(lit("'\\x41'"), ExprKind::CharLit(b'A'));
    assert_eq!(lit("'a'"), ExprKind::CharLit(b'a'));
    assert_eq!(lit(r#""a\tb\"" "c\x41\101""#), ExprKind::StringLit(b"a\tb\"cAA".to_vec()));
    assert_eq!(lit("true"), ExprKind::BoolLit(true));
    assert_eq!(lit("false"), ExprKind::BoolLit(false));
}

#[test]
fn statements() {
    let stmts = body(
        "if (a) if (b) x; else y; while (i < 3) i++; do { i--; } while (i); for (;;) break; \
         for (i = 0; i < 3; i++) continue; return; ; { }",
    );
    let Stmt::If { then, otherwise: None, .. } = &stmts[0] else { panic!("dangling else: {:?}", stmts[0]) };
    assert!(matches!(**then, Stmt::If { otherwise: Some(_), .. }));
    assert!(matches!(stmts[1], Stmt::While { .. }));
    assert!(matches!(stmts[2], Stmt::DoWhile { .. }));
    assert!(matches!(&stmts[3], Stmt::For { init: None, cond: None, step: None, .. }));
    assert!(matches!(&stmts[4], Stmt::For { init: Some(_), cond: Some(_), step: Some(_), .. }));
    assert!(matches!(stmts[5], Stmt::Return(None, _)));
    assert!(matches!(stmts[6], Stmt::Empty(_)));
    assert!(matches!(stmts[7], Stmt::Block(_)));
}

#[test]
fn globals_and_qualifiers() {
    let tu = ok("__device__ int counter = 0;\n__constant__ float k[4] = {1, 2, 3, 4};\nextern __shared__ float buf[];\n\
         static __device__ __forceinline__ int sq(int x) { return x * x; }\n__host__ __device__ inline void g(void);\n\
         __noinline__ __device__ const int *h(int a[], int);");
    let Item::Global(c) = &tu.items[0] else { panic!() };
    assert_eq!(c.qualifiers[0].0, VarQualifier::Device);
    let Item::Global(k) = &tu.items[1] else { panic!() };
    assert!(matches!(&k.declarators[0].init, Some(Initializer::List(v, _)) if v.len() == 4));
    let Item::Global(b) = &tu.items[2] else { panic!() };
    assert_eq!(b.qualifiers.len(), 2);
    let Item::Function(sq) = &tu.items[3] else { panic!() };
    assert_eq!(sq.qualifiers.iter().map(|q| q.0).collect::<Vec<_>>(), vec![FnQualifier::Static, FnQualifier::Device, FnQualifier::ForceInline]);
    let Item::Function(g) = &tu.items[4] else { panic!() };
    assert!(g.params.is_empty());
    assert!(g.body.is_none());
    let Item::Function(h) = &tu.items[5] else { panic!() };
    assert!(h.return_type.spec.is_const);
    assert_eq!(h.return_type.pointers.len(), 1);
    assert_eq!(h.params.len(), 2);
    assert!(h.params[1].declarator.name.name.is_empty());
}

#[test]
fn comments_and_pragmas_are_skipped() {
    ok("// line\n#pragma once\n  #include \"x.h\"\n/* block\n comment */ __device__ void f() { /* in */ }");
}

// ---------------------------------------------------------------------------------------------
// Diagnostics

fn first(src: &str) -> (Code, Span, String) {
    let diags = errors(src);
    let d = &diags[0];
    (d.code, d.primary_span(), d.message.clone())
}

#[test]
fn missing_semicolon() {
    let src = "__device__ void f() {\n  int x = 3\n  return;\n}";
    let diags = errors(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let d = &diags[0];
    assert_eq!(d.code, Code::SyntaxError);
    assert_eq!(&src[d.primary_span().range()], "return");
    assert!(d.message.starts_with("expected "), "{}", d.message);
    assert!(d.message.contains("`;`"), "{}", d.message);
    assert!(d.message.ends_with("found keyword `return`"), "{}", d.message);
    // A secondary label points just after `3`.
    assert!(d.labels.iter().any(|l| !l.primary && l.span == Span::new(33, 33)), "{d:#?}");
}

#[test]
fn several_syntax_errors_in_one_run() {
    let src = "__device__ void f() {\n  x = ;\n  y = 2;\n  z = * ;\n}\n__device__ int g( { }\n__device__ void h() { }";
    let diags = errors(src);
    assert!(diags.len() >= 3, "{diags:#?}");
    assert!(diags.iter().all(|d| d.code == Code::SyntaxError));
    assert!(diags.len() <= 4, "cascade: {diags:#?}");
}

#[test]
fn unterminated_comment() {
    let src = "__device__ void f() {}\n/* never closed\nint x;";
    let diags = errors(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, Code::UnterminatedComment);
    assert_eq!(diags[0].primary_span(), Span::new(23, 25));
}

#[test]
fn unterminated_literals() {
    let (code, span, _) = first("__device__ void f() { s = \"abc;\n}");
    assert_eq!(code, Code::UnterminatedLiteral);
    assert_eq!(span.start, 26);
    let (code, _, _) = first("__device__ void f() { c = 'a;\n}");
    assert_eq!(code, Code::UnterminatedLiteral);
}

#[test]
fn bad_token() {
    let src = "__device__ void f() { int x = 3 @ 4; }";
    let diags = errors(src);
    assert_eq!(diags[0].code, Code::InvalidToken);
    assert_eq!(diags[0].primary_span(), Span::new(32, 33));
    assert!(diags[0].message.contains('@'));
    assert_eq!(diags.len(), 1, "no cascade expected: {diags:#?}");
    let (code, _, _) = first("__device__ void f() { int é; }");
    assert_eq!(code, Code::InvalidToken);
}

#[test]
fn integer_out_of_range() {
    let src = "__device__ void f() { x = 18446744073709551616; }";
    let (code, span, _) = first(src);
    assert_eq!(code, Code::IntegerLiteralOutOfRange);
    assert_eq!(&src[span.range()], "18446744073709551616");
    let (code, _, _) = first("__device__ void f() { x = 0x1FFFFFFFFFFFFFFFF; }");
    assert_eq!(code, Code::IntegerLiteralOutOfRange);
}

#[test]
fn bad_literals() {
    assert_eq!(first("__device__ void f() { x = 09; }").0, Code::InvalidToken);
    assert_eq!(first("__device__ void f() { x = 12abc; }").0, Code::InvalidToken);
    assert_eq!(first("__device__ void f() { x = 1.2.3; }").0, Code::InvalidToken);
    assert_eq!(first("__device__ void f() { x = '\\q'; }").0, Code::InvalidEscape);
    assert_eq!(first("__device__ void f() { x = \"\\x\"; }").0, Code::InvalidEscape);
    assert_eq!(first("__device__ void f() { x = ''; }").0, Code::InvalidToken);
}

#[test]
fn preprocessor_directive() {
    let src = "#include <cuda.h>\n#define N 4\n__device__ void f() {}";
    let diags = errors(src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, Code::UnsupportedSyntax);
    assert_eq!(&src[diags[0].primary_span().range()], "#define");
    assert!(diags[0].message.contains("preprocessor") || diags[0].labels[0].message.contains("preprocessor"));
}

#[test]
fn nul_bytes_and_garbage_do_not_panic() {
    let diags = errors("__device__ void f() { int x\0 = 1; }");
    assert_eq!(diags[0].code, Code::InvalidToken);
    for src in [
        "\0",
        "\0\0\0",
        "'",
        "\"",
        "/*",
        "# define",
        "0x",
        "1e",
        "..",
        "<<<",
        ">>>(",
        "'\\x",
        "\"\\",
        "'\\",
        "__device__ void f() { k<<<",
        "struct",
        "struct {",
        "}}}}",
        "@@@@",
        "extern \"C\" {",
        "int x = ((((;",
        "\u{feff}int x;",
        "__device__ int 1x;",
        "\\\n",
        "'\\400'",
    ] {
        let (tree, _diags) = parse(src);
        assert!(tree.is_none() || src.is_empty(), "{src:?}");
    }
    // Everything printable, one byte at a time.
    let all: String = (0u8..128).map(|b| b as char).collect();
    let _ = parse(&all);
    assert!(parse("").0.is_some());
}

#[test]
fn deep_nesting_is_rejected() {
    let deep = format!("__device__ void f() {{ x = {}1{}; }}", "(".repeat(10_000), ")".repeat(10_000));
    let diags = errors(&deep);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, Code::NestingTooDeep);
    let deep_blocks = format!("__device__ void f() {}{}", "{".repeat(10_000), "}".repeat(10_000));
    assert_eq!(errors(&deep_blocks)[0].code, Code::NestingTooDeep);
    let unbalanced = "[".repeat(100_000);
    assert_eq!(errors(&unbalanced)[0].code, Code::NestingTooDeep);
    // 200 levels are fine.
    ok(&format!("__device__ void f() {{ x = {}1{}; }}", "(".repeat(200), ")".repeat(200)));
}

#[test]
fn long_chains_are_rejected_without_overflow() {
    let sum = format!("__device__ void f() {{ x = 1{}; }}", " + 1".repeat(100_000));
    assert_eq!(errors(&sum)[0].code, Code::NestingTooDeep);
    let negs = format!("__device__ void f() {{ x = {}1; }}", "-".repeat(100_000));
    assert_eq!(errors(&negs)[0].code, Code::NestingTooDeep);
    let chain = format!("__device__ void f() {{ if (a) x; {} }}", "else if (a) x; ".repeat(5_000));
    assert_eq!(errors(&chain)[0].code, Code::NestingTooDeep);
    let medium = format!("__device__ void f() {{ x = 1{}; }}", " + 1".repeat(1_000));
    assert_eq!(errors(&medium)[0].code, Code::NestingTooDeep);
    ok(&format!("__device__ void f() {{ x = 1{}; }}", " + 1".repeat(300)));
    // A large initializer list is not nesting.
    let table = format!("__constant__ int t[] = {{ {} }};", "1, ".repeat(50_000));
    ok(&table);
}

#[test]
fn qualifier_misuse() {
    let (code, _, msg) = first("__global__ int x;");
    assert_eq!(code, Code::SyntaxError);
    assert!(msg.contains("variable"), "{msg}");
    let (code, _, _) = first("__shared__ void f() {}");
    assert_eq!(code, Code::SyntaxError);
}

#[test]
fn eof_error() {
    let src = "__device__ void f() { x = 1;";
    let (code, span, msg) = first(src);
    assert_eq!(code, Code::SyntaxError);
    assert_eq!(span, Span::new(src.len(), src.len()));
    assert!(msg.contains("end of file"), "{msg}");
}

#[test]
fn no_cascade_after_recovery() {
    let diags = errors("__device__ void f() { if x > 3 { y = 1; } z = ; }");
    assert_eq!(diags.len(), 2, "{diags:#?}");
    let diags = errors("__device__ void f() { x = ; y = ; }");
    assert_eq!(diags.len(), 2, "{diags:#?}");
}

#[test]
fn restrict_is_ignored_and_casts_chains_are_limited() {
    let tu = ok("__global__ void k(float *__restrict__ out, const float *__restrict in) {}");
    let Item::Function(k) = &tu.items[0] else { panic!() };
    assert_eq!(k.params.len(), 2);
    let casts = format!("__device__ void f() {{ x = {}y; }}", "(int)".repeat(50_000));
    assert_eq!(errors(&casts)[0].code, Code::NestingTooDeep);
}

#[test]
fn oversized_source_is_rejected() {
    let big = " ".repeat(super::MAX_SOURCE_BYTES + 1);
    let (tree, diags) = parse(&big);
    assert!(tree.is_none());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, Code::SourceTooLarge);
}

#[test]
fn diagnostics_name_tokens_readably() {
    let (_, _, msg) = first("__device__ void f() { foo(1, 2; }");
    assert_eq!(msg, "expected `)` or `,`, found `;`");
    let (_, _, msg) = first("__device__ void f() { x = a +; }");
    assert_eq!(msg, "expected an expression, found `;`");
    let (_, _, msg) = first("__device__ int x");
    assert!(msg.ends_with("found end of file"), "{msg}");
}

/// Mutations of a valid program (deleted, duplicated and replaced characters) never panic, and
/// every error diagnostic has a span inside the source.
#[test]
fn mutated_programs_do_not_panic() {
    let pieces: &[&str] = &["(", ")", "{", "}", "<<<", ">>>", ";", "'", "\"", "/*", "#", "\0", "1e", "struct", "@"];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..400 {
        let mut src: Vec<u8> = TYPICAL.as_bytes().to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % (src.len() + 1);
            match next() % 3 {
                0 if at < src.len() => {
                    let len = ((next() % 8) as usize).min(src.len() - at);
                    src.drain(at..at + len);
                }
                1 => {
                    let piece = pieces[(next() as usize) % pieces.len()];
                    src.splice(at..at, piece.bytes());
                }
                _ => {
                    let from = (next() as usize) % src.len();
                    let len = ((next() % 12) as usize).min(src.len() - from);
                    let copy: Vec<u8> = src[from..from + len].to_vec();
                    src.splice(at..at, copy);
                }
            }
        }
        let src = String::from_utf8_lossy(&src).into_owned();
        let (tree, diags) = parse(&src);
        assert_eq!(tree.is_some(), !diags.iter().any(Diagnostic::is_error), "{src}");
        for d in &diags {
            assert!(d.primary_span().end as usize <= src.len(), "{src}\n{d:?}");
            assert!(d.primary_span().start <= d.primary_span().end);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Host code is skipped (split.rs)

/// A `.cdp` file with C host code around device code.
const MIXED: &str = r#"#include <cstdio>
#include <thrust/device_vector.h>
static int host_counter = 0;
int host_table[4][4];
int host_max(int a, int b) { return a > b ? a : b; }
struct Pair { int a; int b; };
__host__ __device__ int twice(int x) { return 2 * x; }
extern "C" {
__global__ void in_block(int *p) { p[0] = twice(3); }
void host_in_block() { printf("%d\n", 1'000); }
}
__device__ int g_uids = 0;
__global__ void k(Pair *p) { p->a = twice(p->b) + g_uids; }
int main(int argc, char **argv) {
    k<<<1, 1>>>(0);
    printf("done %d\n", host_max(argc, 1));
    return 0;
}
"#;

fn item_names(tu: &TranslationUnit) -> Vec<&str> {
    tu.items
        .iter()
        .map(|item| match item {
            Item::Function(f) => f.name.name.as_str(),
            Item::Struct(s) => s.name.name.as_str(),
            Item::Global(g) => g.declarators[0].declarator.name.name.as_str(),
            Item::Typedef(t) => t.name.name.as_str(),
            Item::Enum(e) => e.name.as_ref().map_or("", |n| n.name.as_str()),
        })
        .collect()
}

fn skipped<'a>(tu: &'a TranslationUnit, name: &str) -> &'a Skipped {
    tu.skipped.iter().find(|s| s.names.iter().any(|n| n.name == name)).unwrap_or_else(|| panic!("`{name}` is not among the skipped declarations: {:#?}", tu.skipped))
}

#[test]
fn host_code_is_skipped_and_device_code_kept() {
    let tu = ok(MIXED);
    assert_eq!(item_names(&tu), ["Pair", "twice", "in_block", "g_uids", "k"]);
    assert_eq!(skipped(&tu, "main").kind, SkippedKind::Function);
    assert_eq!(skipped(&tu, "host_max").kind, SkippedKind::Function);
    assert_eq!(skipped(&tu, "host_counter").kind, SkippedKind::Variable);
    assert_eq!(skipped(&tu, "host_table").kind, SkippedKind::Variable);
    assert_eq!(skipped(&tu, "host_in_block").kind, SkippedKind::Function);
    // The span of a skipped name is the name.
    let main = skipped(&tu, "main").names.iter().find(|n| n.name == "main").unwrap();
    assert_eq!(&MIXED[main.span.range()], "main");
}

#[test]
fn extern_c_blocks_give_their_functions_c_linkage() {
    let tu = ok(MIXED);
    let linkage = |name: &str| {
        tu.items.iter().any(|item| {
            matches!(item, Item::Function(f) if f.name.name == name
                && f.qualifiers.iter().any(|(q, _)| *q == FnQualifier::ExternC))
        })
    };
    assert!(linkage("in_block"));
    assert!(!linkage("k"));
}

#[test]
fn a_mistake_in_device_code_among_host_code_is_reported_at_its_place() {
    let src = MIXED.replace("p->a = twice(p->b) + g_uids;", "p->a = twice(p->b) + ;");
    let diags = errors(&src);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, Code::SyntaxError);
    let at = src.find("+ ;").unwrap() + 2;
    assert_eq!(diags[0].primary_span(), Span::new(at, at + 1));
}

#[test]
fn lexical_errors_count_only_in_device_code() {
    // `1'000` (a C++14 digit separator) and `1.0L` are host compiler business.
    ok("void host() { int x = 1'000; long double y = 1.0L; }\n__device__ int d(int x) { return x; }");
    let (code, _, _) = first("__device__ int d() { return 1.0L; }");
    assert_eq!(code, Code::UnsupportedSyntax);
}

#[test]
fn digit_separators() {
    assert!(matches!(expr("1'000'000").kind, ExprKind::IntLit { value: 1_000_000, .. }));
    assert!(matches!(expr("0x1'F").kind, ExprKind::IntLit { value: 31, .. }));
    assert!(matches!(expr("1'5.2'5f").kind, ExprKind::FloatLit { value, .. } if value == 15.25));
}

#[test]
fn what_never_closes_is_reported_even_in_host_code() {
    let diags = errors("__device__ int d(int x) { return x; }\nint main() { if (1) {\n");
    assert!(diags.iter().all(|d| d.code == Code::SyntaxError), "{diags:#?}");
    let diags = errors("extern \"C\" {\n__global__ void k() {}\n");
    assert!(!diags.is_empty());
}

#[test]
fn a_declaration_cut_short_names_the_next_token_not_the_end_of_file() {
    // The declaration ends at the stray `)`; its parse error is about that token.
    let (code, span, msg) = first("__device__ int x = 1);\n__device__ int y;");
    assert_eq!(code, Code::SyntaxError);
    assert!(!msg.contains("end of file"), "{msg}");
    assert_eq!(span, Span::new(20, 21));
}

/// Found by the fuzz smoke test (fuzz/regressions/escape_before_end_of_file.cdp): the
/// end-of-file error's position (the end of the text) was mapped back through the source map
/// to the last byte of the file, inside the multi-byte character there (the fuzzing oracle
/// panics on such a span).
#[test]
fn end_of_file_errors_fall_on_a_character_boundary() {
    for src in ["__global__ void k() {\n    printf(\"tab\\\u{FFFD}", "#include <cstdio>\n__global__ void k() {\n    printf(\"tab\\\u{FFFD}"] {
        crate::fuzzing::check(src);
    }
}

#[test]
fn asm_statements_parse_in_every_colon_form() {
    let tu = ok(r#"
asm(".global .u32 file_scope;");
__device__ void f(int x, int *p) {
    asm("membar.cta;");
    asm volatile("a" "b" : "=r"(x));
    __asm__ __volatile__("c" : "+r"(x) : "r"(x), "n"(4));
    asm("d" :: "l"(p));
    asm("e" ::: "memory");
    asm("f" : "=r"(x) :: "memory");
    asm("g" :: "r"(x) : "memory");
    asm("h" : : : );
}
"#);
    let Some(Item::Function(f)) = tu.items.first() else { panic!("no function") };
    let asms: Vec<&AsmStmt> = f.body.as_ref().unwrap().stmts.iter().filter_map(|s| if let Stmt::Asm(a) = s { Some(&**a) } else { None }).collect();
    let shape = |a: &AsmStmt| (a.volatile, a.template.len(), a.outputs.len(), a.inputs.len(), a.clobbers.len());
    let shapes: Vec<_> = asms.iter().map(|a| shape(a)).collect();
    assert_eq!(shapes, [(false, 1, 0, 0, 0), (true, 2, 1, 0, 0), (true, 1, 1, 2, 0), (false, 1, 0, 1, 0), (false, 1, 0, 0, 1), (false, 1, 1, 0, 1), (false, 1, 0, 1, 1), (false, 1, 0, 0, 0)]);
    assert_eq!(asms[2].outputs[0].constraint, b"+r");
    // The file-scope statement is the host compiler's.
    assert_eq!(tu.items.len(), 1);
}

#[test]
fn enum_definitions() {
    let tu = ok("enum A { X, Y = 3, }; enum B : unsigned char { P }; typedef enum { Q } C; typedef enum T_ { R } T; enum { U };");
    let enums: Vec<&EnumDef> = tu.items.iter().filter_map(|i| if let Item::Enum(e) = i { Some(e) } else { None }).collect();
    let names: Vec<(Option<&str>, Option<&str>)> = enums.iter().map(|e| (e.name.as_ref().map(|n| n.name.as_str()), e.alias.as_ref().map(|n| n.name.as_str()))).collect();
    assert_eq!(names, [(Some("A"), None), (Some("B"), None), (Some("C"), None), (Some("T_"), Some("T")), (None, None)]);
    let enumerators: Vec<Vec<&str>> = enums.iter().map(|e| e.enumerators.iter().map(|x| x.name.name.as_str()).collect()).collect();
    // a trailing comma is allowed
    assert_eq!(enumerators, [vec!["X", "Y"], vec!["P"], vec!["Q"], vec!["R"], vec!["U"]]);
    assert_eq!(int(enums[0].enumerators[1].value.as_ref().unwrap()), 3);
    assert!(enums[1].base.is_some() && enums[0].base.is_none());
}

#[test]
fn class_key_before_an_initialised_global_declares_a_variable() {
    // `union V gv = {7};` was read as a class definition (E0006): `=` before the brace makes
    // it a variable of the type the key names.
    let tu = ok("union V { int i; float f; };\nstruct S { int a; int b; };\n__device__ union V gv = {7};\n__device__ struct S gs = {1, 2};");
    let names: Vec<&str> = tu
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Global(g) => Some(g.declarators[0].declarator.name.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["gv", "gs"]);
}

#[test]
fn casts_to_pointers_to_functions() {
    let e = expr("(int (*)(int))p");
    let ExprKind::Cast { ty, function: Some(f), operand } = &e.kind else { panic!("{e:?}") };
    assert_eq!(builtin(&ty.spec), BaseType::Int);
    assert_eq!((f.pointers.len(), f.params.len()), (1, 1));
    assert_eq!(ident(operand), "p");
    let e = expr("(void (*)(int *, float))(void *)k");
    let ExprKind::Cast { function: Some(f), operand, .. } = &e.kind else { panic!("{e:?}") };
    assert_eq!(f.params.len(), 2);
    assert!(matches!(operand.kind, ExprKind::Cast { function: None, .. }));
}

#[test]
fn launches_through_pointers() {
    let stmts = body("k<<<1, 2>>>(p); table[i]<<<1, 2>>>(p); (*k)<<<1, 2, 0, s>>>(p); h.k<<<1, 1>>>(); h->k<<<1, 1>>>(p, q);");
    let Stmt::Expr(Expr { kind: ExprKind::Launch { kernel, .. }, .. }) = &stmts[0] else { panic!("{:?}", stmts[0]) };
    assert_eq!(kernel.name, "k");
    let targets: Vec<(&Expr, usize, usize)> = stmts[1..]
        .iter()
        .map(|s| match s {
            Stmt::Expr(Expr { kind: ExprKind::LaunchThrough { target, config, args, .. }, .. }) => (&**target, config.len(), args.len()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(matches!(targets[0].0.kind, ExprKind::Index { .. }));
    assert!(matches!(targets[1].0.kind, ExprKind::Unary { op: UnaryOp::Deref, .. }));
    assert_eq!((targets[1].1, targets[1].2), (4, 1));
    assert!(matches!(targets[2].0.kind, ExprKind::Member { arrow: false, .. }));
    assert!(matches!(targets[3].0.kind, ExprKind::Member { arrow: true, .. }));
    assert_eq!(targets[3].2, 2);
}

#[test]
fn cuda_cxx_is_refused_with_its_own_code_in_device_and_host_code() {
    for (src, at) in [
        ("namespace n { __device__ int f(); }", "namespace"),
        ("int main() { std::printf(\"x\"); }", "::"),
        ("__device__ int f(const int &x) { return x; }", "&"),
        ("template <int N> __global__ void k() {}", "template"),
    ] {
        let (code, span, msg) = first(src);
        assert_eq!(code, Code::CudaCxxInKernelLanguage, "{src}: {msg}");
        assert_eq!(&src[span.range()], at, "{src}");
    }
}

#[test]
fn a_variable_of_an_elaborated_type_stays_a_variable() {
    // `__device__ struct Line g;` (no initializer) made `g` a type name, as if the declaration
    // declared types (E0006 at the `;`, and at every use of `g`); nvcc takes every form here.
    let tu = ok("struct Line { int count; };\nunion U { int i; float f; };\nstruct Fwd;\n\
        __device__ struct Line g_lines[1024];\n__device__ struct Line g;\n__device__ volatile struct Line gv;\n\
        __device__ const struct Line *gp, *gq[2];\nstatic __device__ struct Line gs;\nextern __device__ struct Line gx[3];\n\
        __constant__ struct Line c[2];\n__device__ union U u;\n__device__ union U us[5];\n\
        __global__ void k(struct Line *p) { __shared__ struct Line s[4]; s[0] = g; p->count = g.count + g_lines[1].count + gx[2].count + u.i; }");
    let globals: Vec<(Vec<&str>, &str)> = tu
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Global(g) => {
                let TypeSpecKind::Struct(tag) = &g.spec.kind else { panic!("{g:?}") };
                Some((g.declarators.iter().map(|d| d.declarator.name.name.as_str()).collect(), tag.name.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        globals,
        [
            (vec!["g_lines"], "Line"),
            (vec!["g"], "Line"),
            (vec!["gv"], "Line"),
            (vec!["gp", "gq"], "Line"),
            (vec!["gs"], "Line"),
            (vec!["gx"], "Line"),
            (vec!["c"], "Line"),
            (vec!["u"], "U"),
            (vec!["us"], "U"),
        ]
    );
    // A tag after an attribute is a type (`V`, used without its key), as is a typedef's name.
    let tu = ok("struct __align__(16) V { int a; };\ntypedef struct __align__(8) W { int b; } W_t;\n__device__ struct V gv;\n__global__ void k(V *p, W_t *q) { p->a = gv.a + q->b; }");
    assert!(tu.items.iter().any(|i| matches!(i, Item::Global(g) if g.declarators[0].declarator.name.name == "gv")));
    // A typedef still declares its names as types, and a tag is a type after a forward declaration.
    let tu = ok("typedef struct Line Line_t;\n__device__ Line_t a;\nstruct Fwd;\n__device__ struct Fwd *f;\n__device__ Fwd *h;");
    assert_eq!(tu.items.iter().filter(|i| matches!(i, Item::Global(_))).count(), 3);
}
