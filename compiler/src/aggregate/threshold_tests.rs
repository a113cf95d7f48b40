//! IR-level tests of thresholding (`threshold.rs`): what a rewritten site and the serial clone
//! look like, and which launches are left alone with which remark. Whether the rewritten
//! program gives nvcc's results is checked on the GPU (`samples/small_children.cdp`,
//! `launch_shapes.cdp`).

use crate::diag::Code;
use crate::driver::{self, CompileOptions, Emit};
use crate::hir::{Builtin, Expr, ExprKind, FunctionKind, Module, SpecialReg, Stmt};

fn options(threshold: u32) -> CompileOptions {
    CompileOptions { emit: Emit::Ptx, launch_threshold: threshold, pass_remarks: true, ..CompileOptions::default() }
}

fn module(source: &str, threshold: u32) -> Module {
    driver::check(source, &options(threshold)).unwrap_or_else(|e| panic!("{e}: {e:?}")).module
}

/// The R0502 remarks of a program: (line, label) for each.
fn remarks(source: &str, threshold: u32) -> Vec<(usize, String)> {
    super::tests::remarks_of(source, &options(threshold), Code::ThresholdRemark)
}

fn exprs(module: &Module, name: &str) -> Vec<Expr> {
    let f = module.functions.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no function {name}"));
    let mut out = Vec::new();
    super::visit_block(f.body.as_ref().unwrap(), &mut |e| out.push(e.clone()));
    out
}

const SMALL: &str = r#"
__device__ unsigned flat() { return blockIdx.x * blockDim.x + threadIdx.x + gridDim.z * 0; }
extern "C" __global__ void child(int *out, int n) {
    unsigned i = flat();
    if (i >= (unsigned)n) return;
    out[i] = threadIdx.y + 2 * blockIdx.z;
}
extern "C" __global__ void parent(int *out, int *len) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    child<<<(len[k] + 31) / 32, 32>>>(out + 512 * k, len[k]);
}
"#;

#[test]
fn zero_changes_nothing() {
    let plain = driver::compile(SMALL, &CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() }).unwrap().output;
    let zero = driver::compile(SMALL, &options(0)).unwrap().output;
    assert_eq!(plain, zero);
    assert!(remarks(SMALL, 0).is_empty());
}

#[test]
fn a_site_becomes_a_loop_of_serial_calls_or_the_launch() {
    let m = module(SMALL, 128);
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["flat", "child", "parent", "child__serial", "flat__agg_ids"]);
    assert!(remarks(SMALL, 128).is_empty());
    // The serial clone: an internal device function taking the child's parameters, then
    // threadIdx, blockIdx (by axis), blockDim, gridDim; reading no built-in itself, and calling
    // the helper's clone, which takes them too.
    let serial = &m.functions[3];
    assert_eq!(serial.kind, FunctionKind::Device);
    assert!(serial.internal);
    assert!(serial.attrs.launch_bounds.is_none());
    assert_eq!(serial.params.len(), 2 + 8);
    for name in ["child__serial", "flat__agg_ids"] {
        let reads: Vec<SpecialReg> = exprs(&m, name)
            .iter()
            .filter_map(|e| match e.kind {
                ExprKind::Builtin { builtin: Builtin::SpecialReg(r), .. } if r != SpecialReg::WarpSize => Some(r),
                _ => None,
            })
            .collect();
        assert!(reads.is_empty(), "{name} reads {reads:?}");
    }
    let calls_in_serial: Vec<u32> = exprs(&m, "child__serial").iter().filter_map(|e| if let ExprKind::Call { func, args } = &e.kind { Some((func.0, args.len())) } else { None }).map(|(f, n)| {
        assert_eq!(n, 8, "the helper's clone takes the 8 built-ins");
        f
    }).collect();
    assert_eq!(calls_in_serial, [4]);
    // The parent: one call of the clone (in the loops) and the launch, kept for grids over the
    // threshold; the threshold is compared against.
    let parent = exprs(&m, "parent");
    let calls: Vec<u32> = parent.iter().filter_map(|e| if let ExprKind::Call { func, .. } = &e.kind { Some(func.0) } else { None }).collect();
    assert_eq!(calls, [3]);
    assert_eq!(parent.iter().filter(|e| matches!(e.kind, ExprKind::Launch(_))).count(), 1);
    assert!(parent.iter().any(|e| matches!(e.kind, ExprKind::IntConst(128))), "no comparison with the threshold");
    // The call sits in two nested loops, inside an `if` whose `else` launches.
    let body = &m.functions[2].body.as_ref().unwrap().stmts;
    let Some(Stmt::Block(site)) = body.last() else { panic!("the site is not a block: {body:?}") };
    let Some(Stmt::If { then, otherwise: Some(otherwise), .. }) = site.stmts.last() else { panic!("no if/else at the site") };
    let Some(Stmt::Loop { body: blocks, .. }) = then.stmts.first() else { panic!("no loop over blocks") };
    assert!(matches!(blocks.stmts.last(), Some(Stmt::Loop { .. })), "no loop over threads");
    assert!(matches!(otherwise.stmts.as_slice(), [Stmt::Expr(Expr { kind: ExprKind::Launch(_), .. })]));
    // A parent that ran 1024-thread blocks still can.
    assert_eq!(m.functions[2].attrs.max_registers, Some(super::REGISTER_CAP));
}

#[test]
fn launch_bounds_keep_their_registers() {
    let bounded = SMALL.replace("extern \"C\" __global__ void parent", "extern \"C\" __global__ void __launch_bounds__(256) parent");
    let m = module(&bounded, 128);
    assert_eq!(m.functions[2].attrs.max_registers, None);
}

#[test]
fn every_child_gets_one_clone_and_every_site_its_own_loop() {
    let two = SMALL.replace("len[k]);\n}", "len[k]);\n    child<<<1, 8>>>(out, 8);\n    for (int r = 0; r < k; r++) child<<<r, 4>>>(out, r);\n}");
    let m = module(&two, 64);
    assert_eq!(m.functions.iter().filter(|f| f.name.starts_with("child__serial")).count(), 1);
    let parent = exprs(&m, "parent");
    assert_eq!(parent.iter().filter(|e| matches!(e.kind, ExprKind::Call { .. })).count(), 3);
    assert_eq!(parent.iter().filter(|e| matches!(e.kind, ExprKind::Launch(_))).count(), 3);
}

#[test]
fn children_that_need_their_threads_together_are_left_alone_with_a_remark() {
    let source = r#"
__device__ void wait() { __syncthreads(); }
extern "C" __global__ void syncs(int *p) { p[threadIdx.x] = 1; __syncthreads(); }
extern "C" __global__ void shares(int *p) { __shared__ int s[32]; s[threadIdx.x] = 1; p[0] = s[31]; }
extern "C" __global__ void dynamic(int *p) { extern __shared__ int d[]; p[0] = d[0]; }
extern "C" __global__ void votes(int *p) { p[0] = __ballot_sync(0xffffffff, p[1]); }
extern "C" __global__ void shuffles(int *p) { p[0] = __shfl_sync(0xffffffff, p[1], 0); }
extern "C" __global__ void launches(int *p) { syncs<<<1, 1>>>(p); }
extern "C" __global__ void calls(int *p) { wait(); }
extern "C" __global__ void assembles(int *p) { asm volatile("membar.gl;"); }
extern "C" __global__ void fine(int *p) { p[threadIdx.x] = 1; } extern "C" __global__ void tail_only(int *p) { p[0] = 1; }
extern "C" __global__ void parent(int *p, cudaStream_t s) {
    syncs<<<1, 32>>>(p);
    shares<<<1, 32>>>(p);
    dynamic<<<1, 32>>>(p);
    votes<<<1, 32>>>(p);
    shuffles<<<1, 32>>>(p);
    launches<<<1, 32>>>(p);
    calls<<<1, 32>>>(p);
    assembles<<<1, 32>>>(p);
    fine<<<1, 32, 0, cudaStreamTailLaunch>>>(p);
    fine<<<1, 32, 0, s>>>(p);
    fine<<<1, 32, 16>>>(p);
    fine<<<1, 32, 0, cudaStreamFireAndForget>>>(p);
    fine<<<1, 32>>>(p);
    tail_only<<<1, 32, 0, cudaStreamTailLaunch>>>(p);
}
"#;
    let got = remarks(source, 128);
    let expected: [(usize, &str); 13] = [
        (8, "`syncs` calls `__syncthreads`"),
        (13, "`syncs` calls `__syncthreads`"),
        (14, "`shares` uses shared memory"),
        (15, "`dynamic` uses shared memory"),
        (16, "`votes` uses warp-level primitives"),
        (17, "`shuffles` uses warp-level primitives"),
        (18, "`launches` launches kernels"),
        (19, "`calls`: `wait`, which it calls, calls `__syncthreads`"),
        (20, "`assembles` contains inline assembly"),
        (21, "a tail launch sees the whole parent grid's writes"),
        (22, "a launch into a named stream"),
        (23, "the launch asks for dynamic shared memory"),
        (26, "a tail launch sees the whole parent grid's writes"),
    ];
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for ((line, label), (want_line, want)) in got.iter().zip(expected) {
        assert_eq!(*line, want_line, "{label}");
        assert!(label.starts_with(want), "line {line}: {label}");
    }
    // The fire-and-forget and the NULL-stream launch of `fine` are taken, and `fine` is the
    // only child with a serial clone (`tail_only` could run in place, but no site of it does).
    let m = module(source, 128);
    assert_eq!(exprs(&m, "parent").iter().filter(|e| matches!(e.kind, ExprKind::Call { .. })).count(), 2);
    let serial: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).filter(|n| n.ends_with("__serial")).collect();
    assert_eq!(serial, ["fine__serial"]);
}

#[test]
fn only_children_whose_loops_are_short_and_counted_run_in_place() {
    let source = r#"
__device__ int walk(const int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i]; return s; }
extern "C" __global__ void three(int *p) { for (int i = 0; i < 3; i++) p[threadIdx.x] += i; }
extern "C" __global__ void down(int *p) { for (int i = 10; i > 0; i -= 2) p[threadIdx.x] += i; for (unsigned j = 0; j <= 63; ++j) p[j] = 0; }
extern "C" __global__ void data(int *p, int n) { for (int i = 0; i < n; i++) p[threadIdx.x] += i; }
extern "C" __global__ void long_loop(int *p) { for (int i = 0; i < 65; i++) p[threadIdx.x] += i; }
extern "C" __global__ void moved(int *p) { for (int i = 0; i < 3; i++) { p[threadIdx.x] += i; i += p[0]; } }
extern "C" __global__ void whiles(int *p) { int i = 0; while (i < 3) p[i++] = 0; }
extern "C" __global__ void uneven(int *p) { for (int i = 0; i != 7; i += 2) p[i] = 0; }
extern "C" __global__ void helper(int *p, int n) { p[0] = walk(p, n); }
extern "C" __global__ void parent(int *p, int n) {
    three<<<1, 32>>>(p);
    down<<<1, 32>>>(p);
    data<<<1, 32>>>(p, n);
    long_loop<<<1, 32>>>(p);
    moved<<<1, 32>>>(p);
    whiles<<<1, 32>>>(p);
    uneven<<<1, 32>>>(p);
    helper<<<1, 32>>>(p, n);
}
"#;
    let got = remarks(source, 128);
    let lines: Vec<usize> = got.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [14, 15, 16, 17, 18, 19], "{got:#?}");
    assert!(got[0].1.starts_with("`data` runs a loop that is not a counted loop of at most 64 iterations"), "{}", got[0].1);
    assert!(got[5].1.starts_with("`helper`: `walk`, which it calls, runs a loop"), "{}", got[5].1);
    let m = module(source, 128);
    let calls: Vec<String> = exprs(&m, "parent")
        .iter()
        .filter_map(|e| if let ExprKind::Call { func, .. } = &e.kind { Some(m.function(*func).name.clone()) } else { None })
        .collect();
    assert_eq!(calls, ["three__serial", "down__serial"]);
}

/// A child whose threads jump back with `goto` loops as long as the data says: left alone. One
/// that only jumps forward, and whose launch stands in a `case`, runs in place.
#[test]
fn a_backward_goto_keeps_a_child_launched_and_a_case_site_is_rewritten() {
    let source = r#"
extern "C" __global__ void looping(int *p, int n) {
    int i = 0;
again:
    p[i] += 1;
    if (++i < n)
        goto again;
}
extern "C" __global__ void forward(int *p, int n) {
    if (n < 0)
        goto done;
    p[threadIdx.x] = n;
done:
    return;
}
extern "C" __global__ void parent(int *p, int n) {
    switch (threadIdx.x) {
    case 0:
        looping<<<1, 4>>>(p, n);
        break;
    case 1:
        forward<<<1, 4>>>(p, n);
        break;
    }
}
"#;
    let r = remarks(source, 128);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].1.contains("jumps back with `goto`"), "{r:?}");
    let m = module(source, 128);
    assert!(m.functions.iter().any(|f| f.name == "forward__serial"));
    assert!(!m.functions.iter().any(|f| f.name == "looping__serial"));
}

/// A child that calls through a pointer to a function may call anything: it stays a launch.
#[test]
fn a_call_through_a_pointer_keeps_a_child_launched() {
    let source = r#"
__device__ int twice(int x) { return 2 * x; }
__device__ int (*op)(int) = twice;
extern "C" __global__ void child(int *p) { p[threadIdx.x] = op(p[threadIdx.x]); }
extern "C" __global__ void parent(int *p) { child<<<1, 4>>>(p); }
"#;
    let r = remarks(source, 128);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].1.contains("calls a function through a pointer"), "{r:?}");
    assert!(!module(source, 128).functions.iter().any(|f| f.name == "child__serial"));
}

/// A launch through a pointer has no child body to run in place: it stays a launch, with a
/// remark, while the direct launch beside it is thresholded.
#[test]
fn a_launch_through_a_pointer_stays_a_launch() {
    let source = r#"
extern "C" __global__ void child(int *p) { p[threadIdx.x] = 1; }
__device__ void (*table[1])(int *) = {child};
extern "C" __global__ void parent(int *p, int i) {
    table[i]<<<1, 4>>>(p);
    child<<<1, 4>>>(p);
}
"#;
    let r = remarks(source, 128);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].0, 5);
    assert!(r[0].1.contains("goes through a pointer"), "{r:?}");
    let m = module(source, 128);
    assert!(m.functions.iter().any(|f| f.name == "child__serial"));
}
