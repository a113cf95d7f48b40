//! Sema's typing rules on small programs: each case states the C type an expression must have.
//! Diagnostics are covered by the ui tests in tests/ui.

use super::{analyze, SemaOptions};
use crate::front::cdp::hir::{self, Expr, ExprKind, Stmt};
use crate::types::{DisplayType, Type};

/// The type sema gives `expr`, evaluated in a device function with the given parameters.
fn type_of(params: &str, expr: &str) -> String {
    let source = format!("__device__ void probe({params}) {{ {expr}; }}");
    let (unit, diagnostics) = crate::front::cdp::syntax::parse(&source);
    let unit = unit.unwrap_or_else(|| panic!("{source}: {diagnostics:?}"));
    let (module, diagnostics) = analyze(&unit, &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{source}: {diagnostics:?}"));
    let body = module.functions[0].body.as_ref().unwrap();
    let Some(Stmt::Expr(e)) = body.stmts.last() else { panic!("{source}: no expression statement") };
    DisplayType { ty: &e.ty, structs: &module }.to_string()
}

fn check(params: &str, expr: &str, expected: &str) {
    assert_eq!(type_of(params, expr), expected, "type of `{expr}` with ({params})");
}

#[test]
fn integer_literals_take_the_first_type_that_holds_them() {
    check("", "2147483647", "int");
    check("", "2147483648", "long");
    check("", "0x7fffffff", "int");
    check("", "0xffffffff", "unsigned int");
    check("", "0xffffffffffffffff", "unsigned long");
    check("", "1u", "unsigned int");
    check("", "1ll", "long long");
    check("", "1ull", "unsigned long long");
    check("", "'a'", "char");
    check("", "1.5f", "float");
    check("", "1.5", "double");
}

#[test]
fn usual_arithmetic_conversions() {
    check("char a, char b", "a + b", "int");
    check("unsigned short a, short b", "a * b", "int");
    check("unsigned a, int b", "a + b", "unsigned int");
    check("long a, unsigned b", "a + b", "long");
    check("long long a, unsigned long b", "a - b", "unsigned long long");
    check("int a, float b", "a + b", "float");
    check("float a, double b", "a / b", "double");
    check("bool a, bool b", "a & b", "int");
    check("unsigned a, long long b", "a << b", "unsigned int");
    check("int a, int b", "a < b", "int");
    check("int a, int b", "a && b", "int");
}

#[test]
fn pointers_arrays_and_members() {
    check("int *p, int i", "p + i", "int *");
    check("int *p, int *q", "p - q", "long");
    check("const float *p", "p[3]", "float");
    check("int *p", "&p[2]", "int *");
    check("dim3 d", "d.y", "unsigned int");
    check("", "threadIdx.x", "unsigned int");
    check("", "blockDim", "dim3");
    check("", "sizeof(double)", "unsigned long");
    check("int *p", "sizeof p", "unsigned long");
    check("int c", "c ? 1 : 2.0f", "float");
    check("int *p", "p ? p : 0", "int *");
    check("", "cudaGetLastError()", "cudaError_t");
    check("float x", "sqrtf(x)", "float");
    check("double x", "sqrt(x)", "double");
    check("float x", "sqrt(x)", "float");
    check("int *p", "atomicAdd(p, 1)", "int");
    check("int a, unsigned b", "max(a, b)", "unsigned int");
}

#[test]
fn struct_layout_follows_c() {
    let source = "struct S { char c; double d; short s; }; struct T { char a; struct S s; char b; };";
    let (unit, _) = crate::front::cdp::syntax::parse(source);
    let (module, diagnostics) = analyze(&unit.unwrap(), &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let s = &module.structs[0];
    assert_eq!((s.size, s.align), (24, 8));
    assert_eq!(s.fields.iter().map(|f| f.offset).collect::<Vec<_>>(), [0, 8, 16]);
    let t = &module.structs[1];
    assert_eq!((t.size, t.align), (40, 8));
    assert_eq!(t.fields.iter().map(|f| f.offset).collect::<Vec<_>>(), [0, 8, 32]);
}

#[test]
fn launch_carries_converted_arguments_and_layout() {
    let source = "__global__ void child(double x, char c, int *p) {}
                  __global__ void parent(int *p) { child<<<2, dim3(4, 4)>>>(1, 300, p); }";
    let (unit, _) = crate::front::cdp::syntax::parse(source);
    let (module, diagnostics) = analyze(&unit.unwrap(), &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let body = module.functions[1].body.as_ref().unwrap();
    let Some(Stmt::Expr(e)) = body.stmts.first() else { panic!() };
    let ExprKind::Launch(launch) = &e.kind else { panic!("{e:?}") };
    assert_eq!(launch.layout.offsets, [0, 8, 16]);
    assert_eq!((launch.layout.size, launch.layout.align), (24, 8));
    assert_eq!(launch.args[0].ty, Type::DOUBLE);
    // 300 converted to char at compile time, as C does.
    assert!(matches!(launch.args[1].kind, ExprKind::IntConst(44)), "{:?}", launch.args[1]);
    assert_eq!(launch.grid.ty, Type::Dim3);
    assert!(matches!(launch.stream.kind, ExprKind::PointerConst(0)));
}

/// Diagnostic codes of a whole program (empty when it compiles).
fn codes(source: &str) -> Vec<&'static str> {
    let (unit, diagnostics) = crate::front::cdp::syntax::parse(source);
    let Some(unit) = unit else { return diagnostics.iter().map(|d| d.code.as_str()).collect() };
    let (_, diagnostics) = analyze(&unit, &SemaOptions::default());
    diagnostics.iter().map(|d| d.code.as_str()).collect()
}

#[test]
fn host_device_functions_are_checked_only_when_device_code_calls_them() {
    let hd = "__host__ __device__ int hd(int x) { return x + undeclared; }\n";
    assert_eq!(codes(hd), Vec::<&str>::new(), "unused: its errors are the host compiler's");
    assert_eq!(codes(&format!("{hd}__global__ void k(int *p) {{ p[0] = hd(1); }}")), ["E0100"]);
    // Reached through another `__host__ __device__` function.
    let chain = format!("{hd}__host__ __device__ int outer(int x) {{ return hd(x); }}\n__device__ int d() {{ return outer(1); }}");
    assert_eq!(codes(&chain), ["E0100"]);
}

#[test]
fn unused_host_device_functions_are_not_compiled() {
    let source = "__host__ __device__ int used(int x) { return x; }\n__host__ __device__ int unused(int x) { return x; }\n__global__ void k(int *p) { p[0] = used(1); }";
    let (unit, _) = crate::front::cdp::syntax::parse(source);
    let (module, diagnostics) = analyze(&unit.unwrap(), &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let body = |name: &str| module.functions.iter().find(|f| f.name == name).unwrap().body.is_some();
    assert!(body("used"));
    assert!(!body("unused"));
}

#[test]
fn device_code_naming_host_code_is_told_why() {
    assert_eq!(codes("int h(int x) { return x; }\n__device__ int d() { return h(1); }"), ["E0900"]);
    assert_eq!(codes("int counter;\n__device__ int d() { return counter; }"), ["E0900"]);
    assert_eq!(codes("void launch_host();\n__global__ void k() { launch_host<<<1, 1>>>(); }"), ["E0900"]);
    assert_eq!(codes("typedef struct { int n; jmp_buf env; } G;\n__global__ void k(G *g) {}"), ["E0901"]);
}

#[test]
fn integer_and_warp_intrinsics_have_cudas_types() {
    check("unsigned m", "__popc(m)", "int");
    check("long long x", "__popcll(x)", "int");
    check("int x", "__clz(x)", "int");
    check("long long x", "__ffsll(x)", "int");
    check("unsigned m", "__brev(m)", "unsigned int");
    check("long long x", "__brevll(x)", "unsigned long long");
    check("unsigned m, int x", "__fns(m, 0, x)", "unsigned int");
    check("", "__activemask()", "unsigned int");
    check("unsigned m, int x", "__ballot_sync(m, x > 0)", "unsigned int");
    check("unsigned m, int x", "__any_sync(m, x)", "int");
    check("unsigned m, float f", "__shfl_sync(m, f, 0)", "float");
    check("unsigned m, short s", "__shfl_xor_sync(m, s, 1, 16)", "int");
    check("unsigned m, unsigned u", "__shfl_down_sync(m, u, 1)", "unsigned int");
    check("int x", "__shfl_up(x, 1)", "int");
    check("int x", "__all(x)", "int");
}

#[test]
fn shuffles_of_64_bit_values_are_refused_with_a_hint() {
    assert_eq!(codes("__device__ double f(double d) { return __shfl_sync(0xffffffff, d, 0); }"), ["E0200"]);
}

/// The value sema gives a host `const` variable read by device code.
fn host_constant(decls: &str, expr: &str) -> ExprKind {
    let source = format!("{decls}\n__device__ void probe() {{ {expr}; }}");
    let (unit, diagnostics) = crate::front::cdp::syntax::parse(&source);
    let unit = unit.unwrap_or_else(|| panic!("{source}: {diagnostics:?}"));
    let (module, diagnostics) = analyze(&unit, &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{source}: {diagnostics:?}"));
    let body = module.functions[0].body.as_ref().unwrap();
    let Some(Stmt::Expr(e)) = body.stmts.last() else { panic!("{source}: no expression statement") };
    e.kind.clone()
}

#[test]
fn vector_types_are_structs_of_x_y_z_w() {
    check("float2 v", "v.x", "float");
    check("float2 *p", "p->y", "float");
    check("char4 c", "c.w", "signed char");
    check("uint3 u", "u.z", "unsigned int");
    check("double4_32a d", "d.w", "double");
    check("", "make_float4(1, 2, 3, 4)", "struct float4");
    check("", "make_uchar2(1, 2).y", "unsigned char");
    check("const float4 *p", "__ldg(p)", "struct float4");
    check("const long *p", "__ldg(p)", "long");
    check("float2 v", "v.x = 1", "float");
}

#[test]
fn vector_type_misuse_is_diagnosed() {
    assert_eq!(codes("__global__ void k(float2 v) { v.z = 1; }"), ["E0100"]);
    assert_eq!(codes("__global__ void k(float *p) { p[0] = make_float2(1).x; }"), ["E0203"]);
    assert_eq!(codes("__global__ void k(const bool *p) { __ldg(p); }"), ["E0200"]);
    assert_eq!(codes("__global__ void k(const long3 *p) { __ldg(p); }"), ["E0200"]);
    assert_eq!(codes("__global__ void k(long4 *p) {}"), ["W0910"]);
    assert_eq!(codes("__global__ void k(long4_16a *p) {}"), Vec::<&str>::new());
}

#[test]
fn launch_bounds_belong_to_kernels() {
    assert_eq!(codes("__global__ void __launch_bounds__(256, 2) k(int *p) {}"), Vec::<&str>::new());
    assert_eq!(codes("__global__ __launch_bounds__(64 * 2) void k(int *p) {}"), Vec::<&str>::new());
    assert_eq!(codes("__device__ int __launch_bounds__(64) d(int x) { return x; }"), ["E0911"]);
    assert_eq!(codes("__global__ void __launch_bounds__(1, 2, 3, 4) k() {}"), ["E0911"]);
}

#[test]
fn host_constants_are_values_in_device_code() {
    assert!(matches!(host_constant("const int N = 4;", "N"), ExprKind::IntConst(4)));
    assert!(matches!(host_constant("const long G = 4096;\nconst int S = G / (4 * 2);", "S"), ExprKind::IntConst(512)));
    assert!(matches!(host_constant("const float D = 0.5;", "D"), ExprKind::FloatConst(f) if f == 0.5));
    assert_eq!(codes("const int N = 4;\n__global__ void k(const int **p) { *p = &N; }"), ["E0910"]);
    // Not const, or not a constant: a host variable, E0900 where device code uses it.
    assert_eq!(codes("int n = 4;\n__global__ void k(int *p) { p[0] = n; }"), ["E0900"]);
    assert_eq!(codes("const int t[2] = {1, 2};\n__global__ void k(int *p) { p[0] = t[0]; }"), ["E0900"]);
    // A local of the same name hides it.
    assert_eq!(codes("const int N = 4;\n__global__ void k(int *p) { int N = 1; p[0] = *&N; }"), Vec::<&str>::new());
}

#[test]
fn a_prototype_of_an_intrinsic_declares_the_intrinsic() {
    // KLAP's QT declares `__shfl_up` as CUDA's old headers did; the call is the intrinsic (with
    // the old form's W0902), not a function that is never defined (E0104).
    let source = "__device__ int __shfl_up(int var, unsigned int delta, int width);\n\
                  __global__ void k(int *p) { p[0] = __shfl_up(p[0], 1, 32) + __popc(p[1]); }\n\
                  __device__ int __popc(unsigned int x);";
    assert_eq!(codes(source), ["W0902"]);
    // A prototype of a function of the program's own, never defined, is still E0104.
    assert_eq!(codes("__device__ int twice(int x);\n__global__ void k(int *p) { p[0] = twice(1); }"), ["E0104"]);
}

/// Bit-fields placed as nvcc places them. The expected bits are g++'s on x86-64 (the same
/// Itanium layout), found by setting each member alone and reading the object's bytes.
#[test]
fn bit_fields_are_placed_as_the_itanium_abi_places_them() {
    let source = "struct B { unsigned a : 3; int b : 5; unsigned c : 32; long long w : 40; unsigned long long u : 20; bool f : 1; char ch; int : 0; short z : 4; };";
    let (unit, _) = crate::front::cdp::syntax::parse(source);
    let (module, diagnostics) = analyze(&unit.unwrap(), &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let b = &module.structs[0];
    assert_eq!((b.size, b.align), (24, 8));
    let bits: Vec<(&str, u64, u32)> = b.fields.iter().map(|f| (f.name.as_str(), f.offset * 8 + u64::from(f.bits.map_or(0, |b| b.shift)), f.bits.map_or(8, |b| b.width))).collect();
    assert_eq!(bits, [("a", 0, 3), ("b", 3, 5), ("c", 32, 32), ("w", 64, 40), ("u", 104, 20), ("f", 124, 1), ("ch", 128, 8), ("z", 160, 4)]);
}

/// A bit-field's value promotes as C++'s [conv.prom] says: to `int` when `int` holds every value
/// of its width, else `unsigned int` when that does, else it keeps its type (g++ and nvcc 13.5
/// agree: `static_assert(std::is_same<decltype(+s.u), int>::value)` for each of these).
#[test]
fn bit_fields_promote_by_their_width() {
    let source = "struct B { unsigned a : 3; unsigned c : 32; int i : 32; long long w : 40; unsigned long long u : 20; bool f : 1; };
__device__ void probe(struct B s) { s.a; s.c; s.i; s.w; s.u; s.f; s.a - 5; }";
    assert_eq!(statement_types(source), ["int", "unsigned int", "int", "long long", "int", "bool", "int"]);
}

/// The types of the expression statements of `source`'s first function, as C code writes them.
fn statement_types(source: &str) -> Vec<String> {
    let (unit, diagnostics) = crate::front::cdp::syntax::parse(source);
    let unit = unit.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let (module, diagnostics) = analyze(&unit, &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let body = module.functions[0].body.as_ref().unwrap();
    body.stmts.iter().filter_map(|s| if let Stmt::Expr(e) = s { Some(DisplayType { ty: &e.ty, structs: &module }.to_string()) } else { None }).collect()
}

/// A struct type is written as C names it (the host header and signatures write these): a
/// union with `union`, a tagless struct or union by its typedef name alone, a tagged one with
/// its keyword and tag even when a typedef gives it another name.
#[test]
fn structs_are_written_with_their_keyword_or_typedef_name() {
    let source = "typedef struct { int a; } Pair; union U { int i; float f; }; typedef union { int i; } W;
typedef struct T { int b; } TT; struct S { int c; }; typedef struct R { int d; } R;
__device__ void probe(Pair p, U u, W w, TT t, S s, R r, Pair *q, W *x) { p; u; w; t; s; r; q; x; }";
    assert_eq!(statement_types(source), ["Pair", "union U", "W", "struct T", "struct S", "struct R", "Pair *", "W *"]);
    let source = "typedef enum { A } Mode; enum Color { R }; typedef enum Tag { B } Alias;
__device__ void probe(Mode m, Color c, Alias a, Mode *p) { m; c; a; p; }";
    assert_eq!(statement_types(source), ["Mode", "enum Color", "enum Tag", "Mode *"]);
}

/// Members that point to functions are data members, called through: `o.f(x)`, `p->g(x)`.
#[test]
fn members_that_point_to_functions_are_called_through() {
    let source = "typedef int (*binop)(int, int);
__device__ int add(int a, int b) { return a + b; }
__device__ int inc(int x) { return x + 1; }
struct Ops { binop f; int (*g)(int); int n; };
__device__ void probe(struct Ops o, struct Ops *p) { o.f(1, 2); p->g(4); (*o.g)(1); }";
    let (unit, diagnostics) = crate::front::cdp::syntax::parse(source);
    let unit = unit.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let (module, diagnostics) = analyze(&unit, &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let ops = &module.structs[0];
    assert_eq!(ops.fields.iter().map(|f| (f.name.as_str(), f.offset)).collect::<Vec<_>>(), [("f", 0), ("g", 8), ("n", 16)]);
    let probe = module.functions.iter().find(|f| f.name == "probe").unwrap();
    let calls = probe.body.as_ref().unwrap().stmts.iter().filter(|s| matches!(s, Stmt::Expr(e) if matches!(e.kind, ExprKind::CallIndirect { .. }) && e.ty == Type::INT)).count();
    assert_eq!(calls, 3);
}

/// A launch through a pointer keeps the pointer's value as its target and takes its layout
/// from the pointer's type, as nvcc's parameter buffer does; the address of a kernel written
/// as such is folded into a launch of that kernel.
#[test]
fn launches_through_pointers_take_the_pointer_type_s_layout() {
    let source = "struct S { int a; double b; };
                  __global__ void child(struct S s, int *p) { p[0] = s.a; }
                  __device__ void (*table[1])(struct S, int *) = { child };
                  __global__ void parent(int *p, int i) { struct S s; s.a = 1; s.b = 2.0; table[i]<<<1, 1>>>(s, p); (&child)<<<1, 1>>>(s, p); }";
    let (unit, _) = crate::front::cdp::syntax::parse(source);
    let (module, diagnostics) = analyze(&unit.unwrap(), &SemaOptions::default());
    let module = module.unwrap_or_else(|| panic!("{diagnostics:?}"));
    let body = module.functions[1].body.as_ref().unwrap();
    let launches: Vec<&hir::Launch> = body
        .stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Expr(Expr { kind: ExprKind::Launch(l), .. }) => Some(&**l),
            _ => None,
        })
        .collect();
    assert_eq!(launches.len(), 2);
    let hir::LaunchTarget::Pointer(target) = &launches[0].target else { panic!("{:?}", launches[0].target) };
    assert!(matches!(target.ty, Type::FnPtr(_)), "{:?}", target.ty);
    assert_eq!(launches[0].layout.offsets, [0, 16]);
    assert_eq!((launches[0].layout.size, launches[0].layout.align), (24, 8));
    assert_eq!(launches[1].kernel(), Some(hir::FuncId(0)));
}

/// The kernel language is C: one function a name. A second with other parameters is C++'s
/// overloading (`E0923`); with the same parameters it must agree with the first (`E0101`),
/// and a prototype before its definition is fine.
#[test]
fn a_name_is_one_function() {
    assert_eq!(codes("__device__ int f(int x) { return x; }\n__device__ int f(float x) { return 1; }"), ["E0923"]);
    assert_eq!(codes("__device__ int f(int x);\n__device__ float f(int x) { return 1.0f; }"), ["E0101"]);
    assert_eq!(codes("__device__ int f(int x);\n__device__ int f(int y) { return y; }\n__global__ void k(int *p) { p[0] = f(1); }"), Vec::<&str>::new());
    assert_eq!(codes("__device__ int f(int x) { return x; }\n__device__ int f(int x) { return 2; }"), ["E0101"]);
}

/// A program's function with the name of a built-in does not hide the built-in from calls
/// its parameters do not take (a header's `fminf(float2, float2)` beside CUDA's `fminf`).
#[test]
fn a_built_in_stays_callable_beside_a_function_of_its_name() {
    let source = "__device__ float2 fminf(float2 a, float2 b) { return make_float2(a.x < b.x ? a.x : b.x, a.y < b.y ? a.y : b.y); }
                  __global__ void k(float *p, float2 *q) { p[0] = fminf(p[1], p[2]); q[0] = fminf(q[1], q[2]); }";
    assert_eq!(codes(source), Vec::<&str>::new());
    // neither takes these: the program's function's error
    assert_eq!(codes(&source.replace("fminf(p[1], p[2])", "fminf(p, p)")), ["E0200", "E0200"]);
}

/// A struct has data members only: a call through a member calls the function it points to,
/// and a member that points to none is no function.
#[test]
fn members_are_called_only_through_pointers() {
    let source = "struct S { int (*op)(int); int n; };
                  __device__ int twice(int x) { return 2 * x; }
                  __global__ void k(struct S *s, int *p) { p[0] = s->op(3); p[1] = (*s).op(p[2]); }";
    assert_eq!(codes(source), Vec::<&str>::new());
    assert_eq!(codes(&source.replace("s->op(3)", "s->n(3)")), ["E0204"]);
    assert_eq!(codes(&source.replace("s->op(3)", "s->m(3)")), ["E0100"]);
}

/// An enum's value past its fixed underlying type is an error (nvcc's too, `E0103`); past 32
/// bits without a fixed type, C++ would widen the type, which the kernel language does not yet
/// (`E0007`). Either way the enum is left unparsed and named only by device code that uses it.
#[test]
fn enum_values_fit_their_type() {
    let uses = "__global__ void k(int *p) { p[0] = A; }";
    assert_eq!(codes(&format!("enum E : unsigned char {{ A = 300 }};\n{uses}")), ["E0901"]);
    assert_eq!(codes(&format!("enum E {{ A = 0x100000000 }};\n{uses}")), ["E0901"]);
    let error = |source: &str| {
        let (unit, _) = crate::front::cdp::syntax::parse(source);
        let (_, diagnostics) = analyze(&unit.unwrap(), &SemaOptions::default());
        diagnostics.into_iter().next().and_then(|d| d.notes.iter().find(|n| n.contains("E0")).cloned()).unwrap_or_default()
    };
    assert!(error(&format!("enum E : unsigned char {{ A = 300 }};\n{uses}")).contains("E0103"));
    assert!(error(&format!("enum E {{ A = 0x100000000 }};\n{uses}")).contains("E0007"));
}

/// A struct whose definition the kernel language cannot read (a declarator after its body)
/// is left unparsed with an `E0007`, reported where device code uses it.
#[test]
fn struct_definitions_the_front_end_cannot_read() {
    assert_eq!(codes("struct S { int a; } s;"), Vec::<&str>::new());
    assert_eq!(codes("struct S { int a; } s;\n__global__ void k(struct S *p) { p->a = 1; }"), ["E0901"]);
}

/// C has casts and `= value`; a functional cast, a constructor call and direct-initialization
/// are C++ (`E0923`), but for CUDA's `dim3(x)` and `dim3 g(2, 1)`.
#[test]
fn functional_casts_and_direct_initialization_are_cxx_but_for_dim3() {
    let k = |body: &str| codes(&format!("struct S {{ int a; }};\n__global__ void k(float *p, int x) {{ {body} }}"));
    assert_eq!(k("dim3 g(2, 1); dim3 h = dim3(x); p[0] = g.x + h.y + (float)x;"), Vec::<&str>::new());
    assert_eq!(k("p[0] = float(x);"), ["E0923"]);
    assert_eq!(k("struct S s = S(1);"), ["E0923"]);
    assert_eq!(k("int n(3); p[0] = n;"), ["E0923"]);
}
