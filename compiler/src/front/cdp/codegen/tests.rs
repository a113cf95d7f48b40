//! Tests of code generation on hand-built HIR modules: properties of the PTX, and ptxas accepting it.

use super::{emit_llvm_ir, emit_ptx, BackendError, CodegenOptions};
use crate::diag::Span;
use crate::front::cdp::hir::*;
use crate::layout::param_layout;
use crate::target::{LaunchAbi, SmVersion, Target};
use crate::toolchain::{ToolSearch, Toolchain};
use crate::types::{IntKind, StructId, Type};
use std::path::Path;
use std::sync::OnceLock;

/// The NVIDIA tools found the way `cdpc` finds them (`CUDA_HOME`, the checkout's `.cuda/`, `PATH`:
/// SETUP.md), or `None` when `cargo xtask setup` has not been run.
fn tools() -> Option<&'static Toolchain> {
    static TOOLS: OnceLock<Option<Toolchain>> = OnceLock::new();
    TOOLS.get_or_init(|| Toolchain::discover(&ToolSearch::default()).ok()).as_ref()
}

/// libdevice, when the tools were found with it.
fn libdevice() -> Option<&'static Path> {
    tools().and_then(|t| t.libdevice.as_deref())
}

// ------------------------------------------------------------------ a terse HIR builder

fn e(kind: ExprKind, ty: Type) -> Expr {
    Expr { kind, ty, span: Span::default() }
}
fn int(v: i64) -> Expr {
    e(ExprKind::IntConst(v), Type::INT)
}
fn uint(v: i64) -> Expr {
    e(ExprKind::IntConst(v), Type::UINT)
}
fn b(x: Expr) -> Box<Expr> {
    Box::new(x)
}
fn local(id: LocalId, ty: Type) -> Expr {
    e(ExprKind::Local(id), ty)
}
fn deref(p: Expr) -> Expr {
    let ty = p.ty.pointee().cloned().expect("test: deref of a pointer");
    e(ExprKind::Deref(b(p)), ty)
}
fn assign(place: Expr, value: Expr) -> Stmt {
    let ty = place.ty.clone();
    Stmt::Expr(e(ExprKind::Assign { place: b(place), value: b(value) }, ty))
}
fn binary(op: BinaryOp, lhs: Expr, rhs: Expr, ty: Type) -> Expr {
    e(ExprKind::Binary { op, lhs: b(lhs), rhs: b(rhs) }, ty)
}
fn builtin(builtin: Builtin, args: Vec<Expr>, ty: Type) -> Expr {
    e(ExprKind::Builtin { builtin, args }, ty)
}
fn tid_x() -> Expr {
    builtin(Builtin::SpecialReg(SpecialReg::ThreadIdx(Axis::X)), vec![], Type::UINT)
}
fn dim3(x: u32) -> Expr {
    e(ExprKind::Dim3 { x: b(uint(x as i64)), y: b(uint(1)), z: b(uint(1)) }, Type::Dim3)
}
fn int_ptr() -> Type {
    Type::pointer_to(Type::INT)
}

/// A function under construction: parameters first, then locals.
struct F {
    f: Function,
}

impl F {
    fn new(name: &str, kind: FunctionKind, ret: Type) -> F {
        F {
            f: Function {
                name: name.into(),
                kind,
                linkage: crate::front::cdp::hir::Linkage::C,
                return_type: ret,
                params: vec![],
                locals: vec![],
                body: None,
                span: Span::default(),
                attrs: Default::default(),
                internal: false,
            },
        }
    }
    fn kernel(name: &str) -> F {
        F::new(name, FunctionKind::Kernel, Type::Void)
    }
    fn param(&mut self, name: &str, ty: Type) -> Expr {
        let id = self.local_id(name, ty.clone());
        self.f.params.push(id);
        local(id, ty)
    }
    fn local_id(&mut self, name: &str, ty: Type) -> LocalId {
        self.f.locals.push(Local { name: name.into(), ty, span: Span::default(), volatile: false });
        LocalId(self.f.locals.len() as u32 - 1)
    }
    fn body(mut self, stmts: Vec<Stmt>) -> Function {
        self.f.body = Some(Block { stmts });
        self.f
    }
}

fn module(target: Target) -> Module {
    Module { target, structs: vec![], globals: vec![], functions: vec![], enums: vec![], nv_module_id: None }
}

fn string_literal(m: &mut Module, text: &str) -> Expr {
    let mut bytes: Vec<ConstInit> = text.bytes().map(|c| ConstInit::Int(c as i64)).collect();
    bytes.push(ConstInit::Int(0));
    let ty = Type::Array { elem: Box::new(Type::CHAR), len: bytes.len() as u64 };
    m.globals.push(Global {
        name: format!("$str{}", m.globals.len()),
        ty: ty.clone(),
        space: GlobalSpace::StringLiteral,
        init: Some(ConstInit::Array(bytes)),
        span: Span::default(),
        external: false,
        volatile: false,
        internal: false,
        managed: false,
        local: None,
    });
    let g = e(ExprKind::Global(GlobalId(m.globals.len() as u32 - 1)), ty);
    e(ExprKind::Decay(b(g)), Type::const_pointer_to(Type::CHAR))
}

fn launch_stmt(m: &Module, kernel: FuncId, grid: Expr, block: Expr, stream: u64, args: Vec<Expr>) -> Stmt {
    let layout = param_layout(m.function(kernel).param_types(), m, &m.target);
    Stmt::Expr(e(
        ExprKind::Launch(Box::new(Launch {
            target: LaunchTarget::Kernel(kernel),
            grid,
            block,
            shared_mem: uint(0),
            stream: e(ExprKind::PointerConst(stream), Type::Stream),
            args,
            layout,
            span: Span::default(),
        })),
        Type::Void,
    ))
}

fn add(m: &mut Module, f: Function) -> FuncId {
    m.functions.push(f);
    FuncId(m.functions.len() as u32 - 1)
}

/// PTX of `m` as the driver makes it of `.cdp` code: its launches, which code generation
/// writes as the documented V1 sequence, lowered by the launch pipeline to `m`'s ABI.
fn ptx(m: &Module, opt_level: u8) -> String {
    let options = CodegenOptions { opt_level, libdevice: libdevice().map(Path::to_path_buf), ..Default::default() };
    let pipeline = crate::pipeline::PipelineOptions { target: m.target, ..Default::default() };
    let lowered = super::generate_lowered(m, &options, super::Outputs { llvm_ir: false, ptx: true }, |module, tm| {
        let result = crate::pipeline::run(module, &pipeline, &crate::pipeline::SourceText::default());
        crate::pipeline::strip_cdp_spans(module);
        result.map(drop).map_err(|e| BackendError::Internal(format!("{e:?}")))?;
        crate::back::optimize_built(module, tm, opt_level, options.math, options.fmad)
    });
    match lowered {
        Ok(p) => p.ptx.expect("asked for PTX"),
        Err(err) => panic!("code generation failed: {err}"),
    }
}

/// The module of the nvcc reference (shared/reference/nvcc-13.5-hello.ptx): a child with four
/// parameters, a tail kernel, and a parent that launches both (the tail kernel into
/// `cudaStreamTailLaunch` with the V2 ABI, which alone takes it).
fn hello(target: Target) -> Module {
    let mut m = module(target);
    let mut child = F::kernel("child");
    let data = child.param("data", int_ptr());
    let x = child.param("x", Type::DOUBLE);
    let c = child.param("c", Type::CHAR);
    let n = child.param("n", Type::INT);
    let slot = deref(binary(BinaryOp::PtrAdd, data, e(ExprKind::Cast(b(tid_x())), Type::Int(IntKind::Long)), int_ptr()));
    let sum = binary(BinaryOp::Add, binary(BinaryOp::Add, e(ExprKind::Cast(b(c)), Type::INT), n, Type::INT), e(ExprKind::Cast(b(x)), Type::INT), Type::INT);
    let child = add(&mut m, child.body(vec![assign(slot, sum)]));

    let mut tail = F::kernel("tail");
    let p = tail.param("p", int_ptr());
    let tail = add(&mut m, tail.body(vec![assign(deref(p), int(1))]));

    let mut parent = F::kernel("parent");
    let p = parent.param("p", int_ptr());
    let args = vec![p.clone(), e(ExprKind::FloatConst(2.5), Type::DOUBLE), e(ExprKind::IntConst(97), Type::CHAR), int(7)];
    let stmts = vec![
        launch_stmt(&m, child, dim3(1), dim3(256), 0, args),
        // V1 refuses the tail-launch stream (`E0306`): the NULL stream there.
        launch_stmt(&m, tail, dim3(1), dim3(256), if target.launch_abi == LaunchAbi::V2 { runtime_shim::streams::TAIL_LAUNCH } else { 0 }, vec![p]),
    ];
    add(&mut m, parent.body(stmts));
    m
}

fn v1() -> Target {
    Target { launch_abi: LaunchAbi::V1, ..Target::default() }
}

fn bits32() -> Target {
    Target { sm: SmVersion(90), address_size: crate::target::AddressSize::Bits32, launch_abi: LaunchAbi::V1, ..Default::default() }
}

/// The text of `name`'s body in the PTX.
fn body_of<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start =
        ptx.find(&format!(".entry {name}(")).or_else(|| ptx.find(&format!(".func {name}("))).or_else(|| ptx.find(&format!(" {name}("))).unwrap_or_else(|| panic!("no function {name} in\n{ptx}"));
    let rest = &ptx[start..];
    let end = rest.find("\n}\n").map(|i| i + 3).unwrap_or(rest.len());
    &rest[..end]
}

/// Position of each needle in order, failing if one is missing or out of order.
fn assert_in_order(text: &str, needles: &[&str]) {
    let mut at = 0;
    for needle in needles {
        match text[at..].find(needle) {
            Some(i) => at += i + needle.len(),
            None => panic!("`{needle}` missing (or out of order) after byte {at} in\n{text}"),
        }
    }
}

/// Runs ptxas on the PTX; `false` (with a printed reason) when ptxas is absent.
fn assemble(ptx: &str, name: &str) -> bool {
    let Some(tools) = tools() else {
        eprintln!("SKIPPED ptxas check: no ptxas found (CUDA_HOME, .cuda/, PATH; run `cargo xtask setup`)");
        return false;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join(format!("{name}.ptx"));
    std::fs::write(&src, ptx).expect("write ptx");
    let out = std::process::Command::new(&tools.ptxas).args(["-arch=sm_90", "-c"]).arg(&src).arg("-o").arg(dir.path().join(format!("{name}.o"))).output().expect("run ptxas");
    assert!(out.status.success(), "ptxas rejected the PTX:\n{}\n{ptx}", String::from_utf8_lossy(&out.stderr));
    true
}

// ------------------------------------------------------------------ tests

#[test]
fn kernels_are_entries_and_device_functions_are_funcs() {
    let mut m = module(Target::default());
    let mut dev = F::new("plus_one", FunctionKind::Device, Type::INT);
    let x = dev.param("x", Type::INT);
    let dev = add(&mut m, dev.body(vec![Stmt::Return(Some(binary(BinaryOp::Add, x, int(1), Type::INT)))]));
    let mut k = F::kernel("k");
    let p = k.param("p", int_ptr());
    add(&mut m, k.body(vec![assign(deref(p), e(ExprKind::Call { func: dev, args: vec![int(3)] }, Type::INT))]));
    for level in [0, 2] {
        let ptx = ptx(&m, level);
        assert!(ptx.contains(".visible .entry k("), "{ptx}");
        assert!(ptx.contains(".func  (.param .b32 func_retval0) plus_one(") || ptx.contains(".func (.param .b32 func_retval0) plus_one("), "{ptx}");
        assert!(!ptx.contains(".entry plus_one"), "{ptx}");
    }
}

/// Code generation alone writes every launch as the documented V1 sequence, whatever ABI is
/// asked for, each launch call marked with its span for the launch pipeline (which lowers it
/// to the ABI: `v2_launch_matches_nvcc`).
#[test]
fn launches_are_written_as_the_documented_v1_sequence_with_their_spans() {
    let ir = emit_llvm_ir(&hello(Target::default()), &CodegenOptions::default()).expect("IR");
    assert_eq!(ir.matches("call ptr @cudaGetParameterBuffer(").count(), 2, "{ir}");
    assert_eq!(ir.matches("call i32 @cudaLaunchDevice(").count(), 2, "{ir}");
    // The V2 entry points are only declared (for the pipeline's lowering), never called.
    assert!(!ir.contains("call i32 @__cudaCDP2") && !ir.contains("call ptr @__cudaCDP2"), "{ir}");
    let marked = ir.lines().filter(|l| l.contains("call i32 @cudaLaunchDevice(") && l.contains(&format!("!{} !", crate::pipeline::SPAN_METADATA))).count();
    assert_eq!(marked, 2, "{ir}");
}

#[test]
fn v2_launch_matches_nvcc() {
    let ptx = ptx(&hello(Target::default()), 2);
    assert!(ptx.contains(".extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2"), "{ptx}");
    assert!(ptx.contains(".param .align 4 .b8 __cudaCDP2GetParameterBufferV2_param_1[12]"), "{ptx}");
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2"), "{ptx}");
    assert_eq!(ptx.matches(".extern .func  (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2").count(), 1);
    let parent = body_of(&ptx, "parent");
    assert_in_order(
        parent,
        &[
            "mov.b64 \t%rd",
            "child;",
            "__cudaCDP2GetParameterBufferV2",
            "setp.eq.b64",
            "], %rd",
            "+8], ",
            "+16], ",
            "+20], ",
            "__cudaCDP2LaunchDeviceV2",
            "tail;",
            "__cudaCDP2GetParameterBufferV2",
            "setp.eq.b64",
            "__cudaCDP2LaunchDeviceV2",
        ],
    );
    // The tail launch passes cudaStreamTailLaunch (3) as the stream.
    assert!(parent.contains("[param1], 3;") || parent.contains("[param1+0], 3;"), "{parent}");
    assemble(&ptx, "v2");
}

#[test]
fn v2_requests_a_buffer_even_without_parameters() {
    let mut m = module(Target::default());
    let child = add(&mut m, F::kernel("noargs").body(vec![]));
    let stmts = vec![launch_stmt(&m, child, dim3(2), dim3(32), 0, vec![])];
    add(&mut m, F::kernel("parent").body(stmts));
    let ptx = ptx(&m, 0);
    assert_in_order(body_of(&ptx, "parent"), &["__cudaCDP2GetParameterBufferV2", "setp.eq", "__cudaCDP2LaunchDeviceV2"]);
}

#[test]
fn v1_launch_uses_the_documented_entry_points() {
    let mut m = hello(v1());
    let noargs = add(&mut m, F::kernel("noargs").body(vec![]));
    let stmts = vec![launch_stmt(&m, noargs, dim3(1), dim3(1), 0, vec![])];
    add(&mut m, F::kernel("parent0").body(stmts));
    let ptx = ptx(&m, 2);
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) cudaLaunchDevice"), "{ptx}");
    assert!(ptx.contains(".param .align 4 .b8 cudaLaunchDevice_param_2[12]"), "{ptx}");
    assert!(ptx.contains(".param .align 4 .b8 cudaLaunchDevice_param_3[12]"), "{ptx}");
    assert!(ptx.contains(".param .b32 cudaLaunchDevice_param_4"), "{ptx}");
    assert!(ptx.contains(".param .b64 cudaLaunchDevice_param_5"), "{ptx}");
    assert!(ptx.contains(".extern .func  (.param .b64 func_retval0) cudaGetParameterBuffer"), "{ptx}");
    assert!(!ptx.contains("__cudaCDP2"), "{ptx}");
    assert_in_order(body_of(&ptx, "parent"), &["cudaGetParameterBuffer", "setp.eq", "+8], ", "+16], ", "+20], ", "cudaLaunchDevice"]);
    let parent0 = body_of(&ptx, "parent0");
    assert!(!parent0.contains("cudaGetParameterBuffer"), "{parent0}");
    assert!(parent0.contains("cudaLaunchDevice"), "{parent0}");
    assemble(&ptx, "v1");
}

#[test]
fn thirty_two_bit_output() {
    let ptx = ptx(&hello(bits32()), 2);
    assert!(ptx.contains(".address_size 32"), "{ptx}");
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) cudaGetParameterBuffer"), "{ptx}");
    assert!(ptx.contains(".param .b32 cudaGetParameterBuffer_param_0"), "{ptx}");
    assert!(ptx.contains(".param .b32 cudaLaunchDevice_param_0"), "{ptx}");
    assert!(ptx.contains(".param .b32 cudaLaunchDevice_param_5"), "{ptx}");
    assert!(ptx.contains(".param .align 4 .b8 cudaLaunchDevice_param_2[12]"), "{ptx}");
    let ptx = self::ptx(&hello(Target { launch_abi: LaunchAbi::V2, ..bits32() }), 0);
    assert!(ptx.contains(".address_size 32"), "{ptx}");
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) __cudaCDP2GetParameterBufferV2"), "{ptx}");
    assert!(ptx.contains(".param .b32 __cudaCDP2LaunchDeviceV2_param_1"), "{ptx}");
}

fn printf_module() -> Module {
    let mut m = module(Target::default());
    let fmt = string_literal(&mut m, "tid %d x %f\n");
    let none = string_literal(&mut m, "hello\n");
    let mut k = F::kernel("say");
    let x = k.param("x", Type::FLOAT);
    let args = vec![fmt, e(ExprKind::Cast(b(tid_x())), Type::INT), e(ExprKind::Cast(b(x)), Type::DOUBLE)];
    let stmts = vec![Stmt::Expr(builtin(Builtin::Printf, args, Type::INT)), Stmt::Expr(builtin(Builtin::Printf, vec![none], Type::INT))];
    add(&mut m, k.body(stmts));
    m
}

#[test]
fn printf_calls_vprintf() {
    let ptx = ptx(&printf_module(), 0);
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) vprintf"), "{ptx}");
    assert_eq!(body_of(&ptx, "say").matches("vprintf,").count(), 2, "{ptx}");
}

fn math_module() -> Module {
    let mut m = module(Target::default());
    let mut k = F::kernel("trig");
    let p = k.param("p", Type::pointer_to(Type::FLOAT));
    let q = k.param("q", Type::pointer_to(Type::DOUBLE));
    let sinf = builtin(Builtin::Math(MathFn::Sin), vec![deref(p.clone())], Type::FLOAT);
    let pow = builtin(Builtin::Math(MathFn::Pow), vec![deref(q.clone()), e(ExprKind::FloatConst(2.0), Type::DOUBLE)], Type::DOUBLE);
    add(&mut m, k.body(vec![assign(deref(p), sinf), assign(deref(q), pow)]));
    m
}

#[test]
fn math_links_libdevice() {
    if libdevice().is_none() {
        eprintln!("SKIPPED: no libdevice found beside the NVIDIA tools (install the nvidia-nvvm wheel: `cargo xtask setup`)");
        return;
    }
    for level in [0, 3] {
        let ptx = ptx(&math_module(), level);
        // Linked and internal: no undefined or exported libdevice symbol.
        for line in ptx.lines().filter(|l| l.contains("__nv_")) {
            assert!(!line.contains(".extern") && !line.contains(".visible"), "{line}\n{ptx}");
        }
        // Only what we call survives: libdevice has hundreds of functions.
        assert!(ptx.matches(".func ").count() < 10, "{ptx}");
        assert!(!ptx.contains("__nv_lgamma"), "{ptx}");
        assemble(&ptx, &format!("math{level}"));
    }
}

#[test]
fn math_without_libdevice_is_an_error() {
    let err = emit_ptx(&math_module(), &CodegenOptions { opt_level: 0, libdevice: None, ..Default::default() }).unwrap_err();
    assert!(matches!(err, BackendError::Libdevice(_)), "{err}");
    assert!(err.to_string().contains("nvidia-nvvm"), "{err}");
}

fn memory_spaces_module() -> Module {
    let mut m = module(Target::default());
    let arr = |len| Type::Array { elem: Box::new(Type::FLOAT), len };
    let global =
        |name: &str, ty: Type, space, init| Global { name: name.into(), ty, space, init, span: Span::default(), external: false, volatile: false, internal: false, managed: false, local: None };
    m.globals.push(global("tile", arr(64), GlobalSpace::Shared, None));
    m.globals.push(global("coeffs", arr(4), GlobalSpace::Constant, Some(ConstInit::Array(vec![ConstInit::Float(1.5)]))));
    m.globals.push(global("dyn", arr(0), GlobalSpace::ExternShared, None));
    m.globals.push(global("counter", Type::INT, GlobalSpace::Device, Some(ConstInit::Int(5))));
    let g = |i: u32, ty: Type| e(ExprKind::Global(GlobalId(i)), ty);
    let elem = |i: u32, len: u64, idx: Expr| {
        let base = e(ExprKind::Decay(b(g(i, arr(len)))), Type::pointer_to(Type::FLOAT));
        deref(binary(BinaryOp::PtrAdd, base, idx, Type::pointer_to(Type::FLOAT)))
    };
    let t = || e(ExprKind::Cast(b(tid_x())), Type::Int(IntKind::Long));
    let long = |v| e(ExprKind::IntConst(v), Type::Int(IntKind::Long));
    let mut k = F::kernel("spaces");
    let out = k.param("out", Type::pointer_to(Type::FLOAT));
    let sum = binary(BinaryOp::Add, elem(0, 64, t()), elem(1, 4, long(1)), Type::FLOAT);
    let sum = binary(BinaryOp::Add, sum, elem(2, 0, t()), Type::FLOAT);
    let counter = g(3, Type::INT);
    let stmts = vec![
        assign(elem(0, 64, t()), e(ExprKind::FloatConst(1.0), Type::FLOAT)),
        Stmt::Expr(builtin(Builtin::SyncThreads, vec![], Type::Void)),
        assign(deref(out), sum),
        Stmt::Expr(builtin(Builtin::Atomic(AtomicOp::Add, crate::front::cdp::hir::AtomicScope::Device), vec![e(ExprKind::AddrOf(b(counter)), int_ptr()), int(1)], Type::INT)),
        Stmt::Expr(builtin(Builtin::ThreadFence, vec![], Type::Void)),
    ];
    add(&mut m, k.body(stmts));
    m
}

#[test]
fn memory_spaces() {
    let ptx = ptx(&memory_spaces_module(), 2);
    assert!(ptx.contains(".shared .align 4 .b8 tile[256]"), "{ptx}");
    assert!(ptx.contains(".visible .const .align 4 .b8 coeffs[16]"), "{ptx}");
    assert!(ptx.contains(".extern .shared .align 16 .b8 dyn[]"), "{ptx}");
    assert!(ptx.contains(".visible .global .align 4 .u32 counter = 5;") || ptx.contains(".visible .global .align 4 .b32 counter = 5;"), "{ptx}");
    assert!(ptx.contains("bar.sync \t0;") || ptx.contains("barrier.sync"), "{ptx}");
    assert!(ptx.contains("ld.shared"), "{ptx}");
    assert!(ptx.contains("ld.const"), "{ptx}");
    assert!(ptx.contains("fence.sc.gpu"), "{ptx}");
    assemble(&ptx, "spaces");
}

fn atomics_module() -> Module {
    let mut m = module(Target::default());
    let mut k = F::kernel("atomics");
    let p = k.param("p", int_ptr());
    let u = k.param("u", Type::pointer_to(Type::UINT));
    let f = k.param("f", Type::pointer_to(Type::FLOAT));
    let at = |op, args: Vec<Expr>, ty: Type| Stmt::Expr(builtin(Builtin::Atomic(op, crate::front::cdp::hir::AtomicScope::Device), args, ty));
    let uv = |v| uint(v);
    let stmts = vec![
        at(AtomicOp::Add, vec![p.clone(), int(1)], Type::INT),
        at(AtomicOp::Sub, vec![p.clone(), int(1)], Type::INT),
        at(AtomicOp::Exch, vec![p.clone(), int(2)], Type::INT),
        at(AtomicOp::Min, vec![p.clone(), int(-3)], Type::INT),
        at(AtomicOp::Max, vec![u.clone(), uv(3)], Type::UINT),
        at(AtomicOp::Inc, vec![u.clone(), uv(10)], Type::UINT),
        at(AtomicOp::Dec, vec![u.clone(), uv(10)], Type::UINT),
        at(AtomicOp::And, vec![p.clone(), int(6)], Type::INT),
        at(AtomicOp::Or, vec![p.clone(), int(6)], Type::INT),
        at(AtomicOp::Xor, vec![p.clone(), int(6)], Type::INT),
        at(AtomicOp::Cas, vec![p.clone(), int(0), int(1)], Type::INT),
        at(AtomicOp::Add, vec![f.clone(), e(ExprKind::FloatConst(0.5), Type::FLOAT)], Type::FLOAT),
    ];
    add(&mut m, k.body(stmts));
    m
}

#[test]
fn atomics() {
    let ptx = ptx(&atomics_module(), 2);
    let body = body_of(&ptx, "atomics");
    for op in [".add.u32", ".exch.b32", ".min.s32", ".max.u32", ".inc.u32", ".dec.u32", ".and.b32", ".or.b32", ".xor.b32", ".cas.b32", ".add.f32"] {
        assert!(body.contains(op), "no atom{op} in\n{body}");
    }
    assert!(!body.contains(".sys."), "atomics must be device-scoped:\n{body}");
    assemble(&ptx, "atomics");
}

/// One module with launches of both kinds, atomics, printf and math, through ptxas.
#[test]
fn everything_assembles() {
    if libdevice().is_none() {
        eprintln!("skipping: libdevice not found (the module calls math functions); run `cargo xtask setup`");
        return;
    }
    for target in [Target::default(), v1()] {
        let mut m = hello(target);
        for extra in [printf_module(), atomics_module(), math_module(), memory_spaces_module()] {
            let base = m.globals.len() as u32;
            m.globals.extend(extra.globals);
            let shift = |f: &mut Function| remap_globals(f, base);
            for mut f in extra.functions {
                shift(&mut f);
                m.functions.push(f);
            }
        }
        for level in [0, 3] {
            let ptx = ptx(&m, level);
            assemble(&ptx, &format!("all_{}_{level}", target.launch_abi));
        }
    }
}

fn remap_globals(f: &mut Function, base: u32) {
    fn expr(x: &mut Expr, base: u32) {
        match &mut x.kind {
            ExprKind::Global(id) => id.0 += base,
            ExprKind::Deref(a) | ExprKind::AddrOf(a) | ExprKind::Decay(a) | ExprKind::Cast(a) => expr(a, base),
            ExprKind::Member { base: a, .. } | ExprKind::Unary { operand: a, .. } => expr(a, base),
            ExprKind::Binary { lhs, rhs, .. } | ExprKind::Assign { place: lhs, value: rhs } => {
                expr(lhs, base);
                expr(rhs, base)
            }
            ExprKind::Builtin { args, .. } | ExprKind::Call { args, .. } => args.iter_mut().for_each(|a| expr(a, base)),
            _ => {}
        }
    }
    if let Some(body) = &mut f.body {
        for s in &mut body.stmts {
            if let Stmt::Expr(x) = s {
                expr(x, base);
            }
        }
    }
}

/// Loops, conditionals, short-circuit operators, locals with initializers, structs.
#[test]
fn control_flow_and_structs() {
    let mut m = module(Target::default());
    // struct S { char c; double d; int n; }: offsets 0, 8, 16; size 24, align 8.
    m.structs.push(StructDef {
        name: "S".into(),
        fields: vec![
            Field { name: "c".into(), ty: Type::CHAR, offset: 0, volatile: false, bits: None },
            Field { name: "d".into(), ty: Type::DOUBLE, offset: 8, volatile: false, bits: None },
            Field { name: "n".into(), ty: Type::INT, offset: 16, volatile: false, bits: None },
        ],
        size: 24,
        align: 8,
        span: Span::default(),
        union: false,
        tagless: false,
    });
    let s_ty = Type::Struct(StructId(0));
    let mut k = F::kernel("loops");
    let p = k.param("p", int_ptr());
    let s = k.param("s", s_ty.clone());
    let flag = k.param("flag", Type::BOOL);
    let i = k.local_id("i", Type::INT);
    let acc = k.local_id("acc", Type::INT);
    let arr = k.local_id("arr", Type::Array { elem: Box::new(Type::INT), len: 4 });
    let iv = || local(i, Type::INT);
    let accv = || local(acc, Type::INT);
    let member = |idx, ty| e(ExprKind::Member { base: b(s.clone()), index: idx }, ty);
    let lt = binary(BinaryOp::Lt, iv(), member(2, Type::INT), Type::INT);
    let and = e(ExprKind::LogicalAnd { lhs: b(lt), rhs: b(e(ExprKind::Cast(b(flag.clone())), Type::INT)) }, Type::INT);
    let inc = e(ExprKind::IncDec { place: b(iv()), increment: true, prefix: false }, Type::INT);
    let compound = e(ExprKind::CompoundAssign { op: BinaryOp::Add, place: b(accv()), value: b(iv()), op_type: Type::INT }, Type::INT);
    let is_three = binary(BinaryOp::Eq, iv(), int(3), Type::INT);
    let is_seven = binary(BinaryOp::Eq, iv(), int(7), Type::INT);
    let body = Block {
        stmts: vec![
            Stmt::If { cond: is_three, then: Block { stmts: vec![Stmt::Continue] }, otherwise: None },
            Stmt::If { cond: is_seven, then: Block { stmts: vec![Stmt::Break, Stmt::Expr(int(0))] }, otherwise: None },
            Stmt::Expr(compound),
        ],
    };
    let cond = e(
        ExprKind::Conditional { cond: b(e(ExprKind::Cast(b(member(0, Type::CHAR))), Type::INT)), then: b(accv()), otherwise: b(e(ExprKind::Cast(b(member(1, Type::DOUBLE))), Type::INT)) },
        Type::INT,
    );
    let stmts = vec![
        Stmt::Decl { local: acc, init: Some(Init::Expr(int(0))) },
        Stmt::Decl { local: arr, init: Some(Init::List(vec![Init::Expr(int(9))])) },
        Stmt::Loop { init: Block { stmts: vec![Stmt::Decl { local: i, init: Some(Init::Expr(int(0))) }] }, cond: Some(and), step: Some(inc), body, check_cond_first: true },
        Stmt::Loop { init: Block::default(), cond: Some(int(0)), step: None, body: Block::default(), check_cond_first: false },
        assign(deref(p.clone()), cond),
        Stmt::Return(None),
        assign(deref(p), int(1)),
    ];
    add(&mut m, k.body(stmts));
    let llvm = emit_llvm_ir(&m, &CodegenOptions::default()).expect("IR");
    if std::env::var("DUMP").is_ok() {
        println!("{llvm}");
    }
    assert!(llvm.contains("%struct.S = type { i8, double, i32 }"), "{llvm}");
    for level in [0, 1, 2, 3] {
        let ptx = ptx(&m, level);
        assert!(ptx.contains(".param .align 8 .b8 loops_param_1[24]"), "{ptx}");
        assemble(&ptx, &format!("loops{level}"));
    }
}

#[test]
fn runtime_api_calls_use_cdp2_symbols() {
    let mut m = module(Target::default());
    let mut k = F::kernel("api");
    let out = k.param("out", int_ptr());
    let s = k.local_id("s", Type::Stream);
    let err = builtin(Builtin::Runtime(RuntimeFn::GetLastError), vec![], Type::CudaError);
    let create = builtin(Builtin::Runtime(RuntimeFn::StreamCreateWithFlags), vec![e(ExprKind::AddrOf(b(local(s, Type::Stream))), Type::pointer_to(Type::Stream)), uint(1)], Type::CudaError);
    let stmts = vec![
        Stmt::Expr(create),
        assign(deref(out), e(ExprKind::Cast(b(err)), Type::INT)),
        Stmt::Expr(builtin(Builtin::Runtime(RuntimeFn::StreamDestroy), vec![local(s, Type::Stream)], Type::CudaError)),
    ];
    add(&mut m, k.body(stmts));
    let ptx = ptx(&m, 2);
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) __cudaCDP2GetLastError"), "{ptx}");
    assert!(ptx.contains("__cudaCDP2StreamCreateWithFlags"), "{ptx}");
    assert!(ptx.contains("__cudaCDP2StreamDestroy"), "{ptx}");
    assemble(&ptx, "api");
}

/// Struct, bool and dim3 arguments go into the buffer whole, at their offsets.
#[test]
fn launch_with_struct_bool_and_dim3_arguments() {
    for target in [Target::default(), v1()] {
        let mut m = module(target);
        // struct P { char c; double d; }: size 16, align 8.
        m.structs.push(StructDef {
            name: "P".into(),
            fields: vec![Field { name: "c".into(), ty: Type::CHAR, offset: 0, volatile: false, bits: None }, Field { name: "d".into(), ty: Type::DOUBLE, offset: 8, volatile: false, bits: None }],
            size: 16,
            align: 8,
            span: Span::default(),
            union: false,
            tagless: false,
        });
        let p_ty = Type::Struct(StructId(0));
        let mut child = F::kernel("child");
        child.param("flag", Type::BOOL);
        child.param("pair", p_ty.clone());
        child.param("shape", Type::Dim3);
        let child = add(&mut m, child.body(vec![]));
        let mut parent = F::kernel("parent");
        let pair = parent.param("pair", p_ty);
        let flag = parent.param("flag", Type::BOOL);
        let stmts = vec![launch_stmt(&m, child, dim3(1), dim3(32), 0, vec![flag, pair, dim3(7)])];
        add(&mut m, parent.body(stmts));
        assert_eq!(m.function(FuncId(0)).param_types().count(), 3);
        let layout = param_layout(m.function(FuncId(0)).param_types(), &m, &m.target);
        assert_eq!(layout.offsets, vec![0, 8, 24]);
        let ptx = ptx(&m, 2);
        assert!(ptx.contains(".param .align 8 .b8 child_param_1[16]"), "{ptx}");
        assert!(ptx.contains(".param .align 4 .b8 child_param_2[12]"), "{ptx}");
        let parent = body_of(&ptx, "parent");
        assert_in_order(parent, &["setp.eq", "st.b8 \t[%rd", "+8], ", "+16], ", "+24], ", "+32], "]);
        assemble(&ptx, &format!("aggregates_{}", target.launch_abi));
    }
}

/// The remaining builtins and operators, checked by ptxas.
#[test]
fn builtins_and_operators() {
    let mut m = module(Target::default());
    let long = Type::Int(IntKind::Long);
    let mut k = F::kernel("misc");
    let p = k.param("p", int_ptr());
    let f = k.param("f", Type::pointer_to(Type::FLOAT));
    let q = k.local_id("q", int_ptr());
    let u = k.local_id("u", Type::ULONGLONG);
    let qv = || local(q, int_ptr());
    let uv = || local(u, Type::ULONGLONG);
    let at = |i: i64| deref(binary(BinaryOp::PtrAdd, p.clone(), e(ExprKind::IntConst(i), long.clone()), int_ptr()));
    let fl = |v: f64| e(ExprKind::FloatConst(v), Type::FLOAT);
    let clock = builtin(Builtin::Clock64, vec![], Type::LONGLONG);
    let is_global = builtin(Builtin::IsGlobal, vec![e(ExprKind::Cast(b(p.clone())), Type::pointer_to(Type::Void))], Type::UINT);
    let bid = builtin(Builtin::SpecialReg(SpecialReg::BlockIdx(Axis::Y)), vec![], Type::UINT);
    let bdim = builtin(Builtin::SpecialReg(SpecialReg::BlockDim(Axis::Z)), vec![], Type::UINT);
    let gdim = builtin(Builtin::SpecialReg(SpecialReg::GridDim(Axis::X)), vec![], Type::UINT);
    let warp = builtin(Builtin::SpecialReg(SpecialReg::WarpSize), vec![], Type::INT);
    let stmts = vec![
        Stmt::Decl { local: q, init: Some(Init::Expr(p.clone())) },
        Stmt::Decl { local: u, init: Some(Init::Expr(e(ExprKind::Cast(b(clock)), Type::ULONGLONG))) },
        Stmt::Expr(e(ExprKind::IncDec { place: b(qv()), increment: true, prefix: true }, int_ptr())),
        assign(at(0), e(ExprKind::Cast(b(binary(BinaryOp::PtrDiff, qv(), p.clone(), long.clone()))), Type::INT)),
        assign(at(1), e(ExprKind::Cast(b(is_global)), Type::INT)),
        assign(at(2), builtin(Builtin::Min, vec![at(2), int(-4)], Type::INT)),
        assign(at(3), builtin(Builtin::Max, vec![e(ExprKind::Cast(b(bid)), Type::INT), e(ExprKind::Cast(b(bdim)), Type::INT)], Type::INT)),
        assign(at(4), builtin(Builtin::Abs, vec![e(ExprKind::Unary { op: UnaryOp::Neg, operand: b(warp) }, Type::INT)], Type::INT)),
        assign(deref(f.clone()), builtin(Builtin::Abs, vec![builtin(Builtin::Min, vec![deref(f.clone()), fl(-1.0)], Type::FLOAT)], Type::FLOAT)),
        assign(at(5), e(ExprKind::Unary { op: UnaryOp::Not, operand: b(e(ExprKind::Cast(b(gdim)), Type::INT)) }, Type::INT)),
        assign(at(6), e(ExprKind::Unary { op: UnaryOp::BitNot, operand: b(at(6)) }, Type::INT)),
        assign(at(7), binary(BinaryOp::Shr, at(7), int(2), Type::INT)),
        assign(at(8), e(ExprKind::Cast(b(binary(BinaryOp::Div, uv(), e(ExprKind::IntConst(3), Type::ULONGLONG), Type::ULONGLONG))), Type::INT)),
        Stmt::Expr(e(ExprKind::CompoundAssign { op: BinaryOp::Mul, place: b(deref(f.clone())), value: b(fl(2.0)), op_type: Type::FLOAT }, Type::FLOAT)),
        Stmt::Expr(e(ExprKind::Cast(b(e(ExprKind::Comma { lhs: b(at(9)), rhs: b(at(10)) }, Type::INT))), Type::Void)),
        Stmt::Expr(builtin(Builtin::ThreadFenceBlock, vec![], Type::Void)),
        Stmt::Expr(e(ExprKind::LogicalOr { lhs: b(at(11)), rhs: b(e(ExprKind::Assign { place: b(at(12)), value: b(int(1)) }, Type::INT)) }, Type::INT)),
    ];
    add(&mut m, k.body(stmts));
    for level in [0, 2] {
        let ptx = ptx(&m, level);
        let body = body_of(&ptx, "misc");
        for needle in ["%clock64", "isspacep.global", "%ctaid.y", "%ntid.z", "%nctaid.x", "WARP_SZ", "fence.sc.cta", "abs.f32"] {
            // LLVM knows kernel pointer parameters are global, gridDim.x >= 1 and warpSize == 32.
            if level > 0 && ["isspacep.global", "%nctaid.x", "WARP_SZ"].contains(&needle) {
                continue;
            }
            assert!(body.contains(needle), "{needle} missing at -O{level}:\n{body}");
        }
        assemble(&ptx, &format!("misc{level}"));
    }
}

#[test]
fn warp_primitives() {
    let mut m = module(Target::default());
    let mut k = F::kernel("warp_ops");
    let p = k.param("p", Type::pointer_to(Type::UINT));
    let at = |i: i64| deref(binary(BinaryOp::PtrAdd, p.clone(), e(ExprKind::IntConst(i), Type::Int(IntKind::Long)), Type::pointer_to(Type::UINT)));
    let warp = |op, args| builtin(Builtin::Warp(op), args, Type::UINT);
    let mask = k.local_id("mask", Type::UINT);
    let mv = || local(mask, Type::UINT);
    let odd = binary(BinaryOp::BitAnd, e(ExprKind::Cast(b(tid_x())), Type::INT), int(1), Type::INT);
    let stmts = vec![
        Stmt::Decl { local: mask, init: Some(Init::Expr(warp(WarpOp::ActiveMask, vec![]))) },
        assign(at(0), warp(WarpOp::Ballot, vec![mv(), odd])),
        Stmt::Expr(builtin(Builtin::Warp(WarpOp::SyncWarp), vec![mv()], Type::Void)),
    ];
    add(&mut m, k.body(stmts));
    for level in [0, 2] {
        let ptx = ptx(&m, level);
        let body = body_of(&ptx, "warp_ops");
        for needle in ["activemask.b32", "vote.sync.ballot.b32", "bar.warp.sync"] {
            assert!(body.contains(needle), "{needle} missing at -O{level}:\n{body}");
        }
        assemble(&ptx, &format!("warp_ops{level}"));
    }
}

/// CUDA's integer and warp intrinsics, from source to the PTX instructions nvcc uses for them
/// (`shfl.sync`'s third operand is CUDA's `c`: `(32 - width) << 8`, ORed with 31 except for `up`).
#[test]
fn intrinsics_become_their_ptx_instructions() {
    let source = "__global__ void k(unsigned *o, float *f, long long *l) {\n\
        unsigned m = __activemask();\n\
        o[0] = __popc(m) + __clz(m) + __ffs(m) + __brev(m) + __popcll(l[0]) + __clzll(l[1]);\n\
        l[2] = __brevll(l[2]);\n\
        o[1] = __ballot_sync(m, o[2] > 3) + __any_sync(m, o[3]) + __all_sync(m, o[4]);\n\
        f[0] = __shfl_sync(m, f[1], 0) + __shfl_up_sync(m, f[2], 1) + __shfl_down_sync(m, f[3], 2, 16);\n\
        o[5] = __shfl_xor_sync(m, o[6], 1);\n\
        __syncwarp(m);\n\
        o[7] = __any(o[8]);\n\
    }";
    let options = crate::driver::CompileOptions { emit: crate::driver::Emit::Ptx, ..Default::default() };
    let ptx = String::from_utf8(crate::driver::compile(source, &options).expect("compiles").output).unwrap();
    for instruction in [
        "activemask.b32",
        "popc.b32",
        "clz.b32",
        "brev.b32",
        "popc.b64",
        "clz.b64",
        "brev.b64",
        "vote.sync.ballot.b32",
        "vote.sync.any.pred",
        "vote.sync.all.pred",
        "shfl.sync.bfly.b32",
        "bar.warp.sync",
    ] {
        assert!(ptx.contains(instruction), "no {instruction} in\n{ptx}");
    }
    let shfl = |kind: &str| ptx.lines().find(|l| l.contains(&format!("shfl.sync.{kind}.b32"))).unwrap_or_else(|| panic!("no shfl.{kind}")).to_string();
    assert!(shfl("idx").contains(", 0, 31,"), "{}", shfl("idx"));
    assert!(shfl("up").contains(", 1, 0,"), "{}", shfl("up"));
    assert!(shfl("down").contains(", 2, 4127,"), "{}", shfl("down"));
}
