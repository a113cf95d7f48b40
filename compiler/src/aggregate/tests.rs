use super::Granularity;
use crate::diag::{Code, Severity};
use crate::driver::{self, CompileOptions, Emit};
use crate::hir::{Builtin, Expr, ExprKind, FunctionKind, GlobalSpace, SpecialReg, Stmt, WarpOp};

pub(super) fn options(granularity: Granularity, remarks: bool) -> CompileOptions {
    CompileOptions { emit: Emit::Ptx, aggregate: granularity, pass_remarks: remarks, ..CompileOptions::default() }
}

/// The remarks with `code` of a program checked with `options`: (line, label) for each.
pub(super) fn remarks_of(source: &str, options: &CompileOptions, code: Code) -> Vec<(usize, String)> {
    let checked = driver::check(source, options).unwrap_or_else(|e| panic!("{e}: {e:?}"));
    checked
        .warnings
        .iter()
        .filter(|d| d.code == code)
        .map(|d| {
            assert_eq!(d.severity, Severity::Remark);
            let line = source[..d.primary_span().start as usize].lines().count();
            (line, d.labels[0].message.clone())
        })
        .collect()
}

/// The R0500 remarks of a program: (line, label) for each.
fn remarks(source: &str, granularity: Granularity) -> Vec<(usize, String)> {
    remarks_of(source, &options(granularity, true), Code::AggregationRemark)
}

pub(super) fn ptx(source: &str, granularity: Granularity) -> String {
    let compiled = driver::compile(source, &options(granularity, false)).unwrap_or_else(|e| panic!("{e}: {e:?}"));
    String::from_utf8(compiled.output).unwrap()
}

/// The PTX of kernel `name`: from its `.entry` to the next one.
pub(super) fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("no kernel {name}"));
    let rest = &ptx[start + 1..];
    &ptx[start..start + 1 + rest.find(".entry").unwrap_or(rest.len())]
}

/// Launch calls in the PTX (V2: one `__cudaCDP2LaunchDeviceV2` call per launch site).
fn launch_calls(ptx: &str) -> usize {
    ptx.lines().filter(|l| l.contains("call") && l.contains("__cudaCDP2LaunchDeviceV2")).count()
}

/// The launches of one kernel's PTX as (the kernel launched, the entry point it is passed to),
/// in order: V2 passes it to `__cudaCDP2GetParameterBufferV2`, V1 to `cudaLaunchDevice`, each
/// as the call's first parameter (`st.param.b64 [param0], %rdN` of a `mov.b64 %rdN, kernel`).
pub(super) fn launched_kernels(ptx: &str) -> Vec<(String, String)> {
    let symbol_of = |reg: &str| {
        ptx.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("mov.b64")?.trim();
            let (r, sym) = rest.split_once(',')?;
            (r.trim() == reg).then(|| sym.trim().trim_end_matches(';').to_string())
        })
    };
    let mut out = Vec::new();
    for seq in ptx.split("{ // callseq").skip(1) {
        let seq = seq.split("} // callseq").next().unwrap_or(seq);
        let Some(callee) = seq.lines().find_map(|l| l.trim().strip_prefix("call.uni (retval0), ")).and_then(|c| c.split(',').next()) else { continue };
        if callee != "__cudaCDP2GetParameterBufferV2" && !callee.starts_with("cudaLaunchDevice") {
            continue;
        }
        let reg = seq.lines().find_map(|l| l.trim().strip_prefix("st.param.b64 \t[param0], ").or_else(|| l.trim().strip_prefix("st.param.b64 [param0], ")));
        let kernel = reg.map(|r| r.trim().trim_end_matches(';')).and_then(symbol_of).unwrap_or_else(|| "?".into());
        out.push((kernel, callee.to_string()));
    }
    out
}

pub(super) const IRREGULAR: &str = r#"
extern "C" __global__ void child(unsigned int start, unsigned int end, float *data) {
    unsigned int j = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (j < end) data[j] = 3.0f * data[j] + 1.0f;
}
extern "C" __global__ void parent(unsigned int *start, unsigned int *end, float *data, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned int len = end[i] - start[i];
    if (len > 0)
        child<<<(len + 255) / 256, 256>>>(start[i], end[i], data);
}
"#;

#[test]
fn off_changes_nothing_and_says_nothing() {
    assert_eq!(ptx(IRREGULAR, Granularity::Off), ptx(IRREGULAR, Granularity::default()));
    assert!(remarks(IRREGULAR, Granularity::Off).is_empty());
    let plain = driver::check(IRREGULAR, &options(Granularity::Off, false)).unwrap().module;
    assert_eq!(plain.functions.len(), 2);
}

#[test]
fn block_aggregation_adds_a_clone_and_moves_the_launch_to_the_end() {
    assert!(remarks(IRREGULAR, Granularity::Block).is_empty());
    let module = driver::check(IRREGULAR, &options(Granularity::Block, false)).unwrap().module;
    let names: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["child", "parent", "child__agg"]);
    let agg = &module.functions[2];
    assert_eq!(agg.kind, FunctionKind::Kernel);
    assert_eq!(agg.params.len(), 2, "records and count");
    // The clone's body reads no blockIdx/threadIdx/blockDim/gridDim of its own except to find
    // its record: the original body (the last statement) reads none.
    let Some(Stmt::Block(original)) = agg.body.as_ref().unwrap().stmts.last() else { panic!("no cloned body") };
    let mut reads = 0;
    super::visit_block(original, &mut |e| {
        if let ExprKind::Builtin { builtin: Builtin::SpecialReg(r), .. } = &e.kind {
            if *r != SpecialReg::WarpSize {
                reads += 1;
            }
        }
    });
    assert_eq!(reads, 0, "special registers left in the cloned body");
    // Shared record state for the one site.
    let shared: Vec<&str> = module.globals.iter().map(|g| g.name.as_str()).filter(|n| n.contains("$agg0$")).collect();
    assert_eq!(shared.len(), 5, "{shared:?}");

    let out = ptx(IRREGULAR, Granularity::Block);
    assert!(out.contains(".entry child__agg("), "{out}");
    // parent: the direct launch (fallback at the site), the aggregated launch and the
    // per-record fallback at the end (which LLVM may duplicate when it rotates the loop).
    assert!(launch_calls(&out) >= 3);
    assert!(out.contains("mov.b64 \t%rd") && out.lines().any(|l| l.trim_start().starts_with("mov.b64") && l.ends_with("child__agg;")), "the aggregated kernel is launched");
    assert!(out.contains("atom.shared.add.u64"));
    assert!(out.contains("__cudaCDP2Malloc") && out.contains("__cudaCDP2Free"));
}

#[test]
fn both_abis_and_32_bit_compile() {
    for granularity in [Granularity::Block, Granularity::Warp] {
        for abi in [crate::LaunchAbi::V1, crate::LaunchAbi::V2] {
            for size in [crate::AddressSize::Bits64, crate::AddressSize::Bits32] {
                let mut o = options(granularity, false);
                o.target.launch_abi = abi;
                o.target.address_size = size;
                let out = String::from_utf8(driver::compile(IRREGULAR, &o).unwrap().output).unwrap();
                assert!(out.contains(".entry child__agg("), "{granularity:?} {abi:?} {size:?}");
                if granularity == Granularity::Warp {
                    // one shuffle per 32-bit half of the table's address, one for the verdict
                    let shuffles = out.matches("shfl.sync.idx.b32").count();
                    assert_eq!(shuffles, if size == crate::AddressSize::Bits64 { 3 } else { 2 }, "{abi:?} {size:?}");
                }
            }
        }
    }
}

const LEFT_ALONE: &str = r#"
extern "C" __global__ void leaf(int *p) { p[threadIdx.x] = 1; }
extern "C" __global__ void uses_ids(int *p);
extern "C" __device__ int lane() { return threadIdx.x % 32; }
extern "C" __global__ void indirect(int *p) { p[lane()] = 2; }
extern "C" __global__ void k_loop(int *p) {
    for (int i = 0; i < 2; i++)
        leaf<<<1, 32>>>(p);
}
extern "C" __global__ void k_streams(int *p) {
    leaf<<<1, 32, 0, cudaStreamTailLaunch>>>(p);
    leaf<<<1, 32, 0, cudaStreamFireAndForget>>>(p);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    leaf<<<1, 32, 0, s>>>(p);
    leaf<<<1, 32, 4 * threadIdx.x>>>(p);
}
extern "C" __global__ void k_self(int *p, int depth) {
    if (depth > 0)
        k_self<<<1, 32>>>(p, depth - 1);
}
extern "C" __global__ void k_indirect(int *p) {
    indirect<<<1, 32>>>(p);
}
extern "C" __device__ void helper(int *p) { leaf<<<1, 32>>>(p); }
extern "C" __global__ void k_sync(int *p) {
    if (threadIdx.x > 5)
        return;
    __syncthreads();
    leaf<<<1, 32>>>(p);
}
extern "C" __global__ void k_ok(int *p) {
    if (threadIdx.x == 3)
        leaf<<<1, 32>>>(p);
}
"#;

#[test]
fn remarks_name_exactly_the_launches_left_alone() {
    let got = remarks(LEFT_ALONE, Granularity::Block);
    let lines: Vec<usize> = got.iter().map(|(l, _)| *l).collect();
    // k_ok's launch (line 34) and k_indirect's (line 23: its child's helper reads threadIdx,
    // and gets a clone that takes the remapped values, `callees.rs`) have no remark.
    // k_self's launch of itself (line 20) is aggregated, and so are its clone's; k_sync's
    // (line 30), which returns early and calls `__syncthreads`, ends its blocks with its last
    // thread (`block::BlockEnd::LastThread`)
    assert_eq!(lines, [8, 11, 12, 15, 16, 25], "{got:#?}");
    let why: Vec<&str> = got.iter().map(|(_, w)| w.as_str()).collect();
    assert!(why[0].contains("inside a loop"));
    assert!(why[1].contains("tail launch"));
    assert!(why[2].contains("fire-and-forget"));
    assert!(why[3].contains("NULL stream"));
    assert!(why[4].contains("dynamic shared memory"));
    assert!(why[5].contains("device function `helper`"));
    let module = driver::check(LEFT_ALONE, &options(Granularity::Block, false)).unwrap().module;
    let aggs: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).filter(|n| n.ends_with("__agg")).collect();
    assert_eq!(aggs, ["leaf__agg", "indirect__agg", "k_self__agg"]);
    // it all still compiles
    assert!(ptx(LEFT_ALONE, Granularity::Block).contains(".entry leaf__agg("));
}

#[test]
fn a_direct_null_stream_launch_keeps_the_others_in_order() {
    let source = r#"
extern "C" __global__ void a(int *p) { p[0] = 1; }
extern "C" __global__ void b(int *p) { p[1] = 1; }
extern "C" __global__ void k(int *p) {
    a<<<1, 1>>>(p);
    for (int i = 0; i < 2; i++)
        b<<<1, 1>>>(p);
}
"#;
    let got = remarks(source, Granularity::Block);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(got[0].0, 7);
    assert!(got[0].1.contains("inside a loop"));
    assert_eq!(got[1].0, 5);
    assert!(got[1].1.contains("without aggregation"), "{}", got[1].1);
}

#[test]
fn remarks_need_the_flag() {
    let checked = driver::check(LEFT_ALONE, &options(Granularity::Block, false)).unwrap();
    assert!(checked.warnings.is_empty());
}

/// The warp primitives of a function body, in pre-order.
fn warp_ops(f: &crate::hir::Function) -> Vec<WarpOp> {
    let mut ops = Vec::new();
    super::visit_block(f.body.as_ref().unwrap(), &mut |e| {
        if let ExprKind::Builtin { builtin: Builtin::Warp(op), .. } = &e.kind {
            ops.push(*op);
        }
    });
    ops
}

#[test]
fn warp_aggregation_rewrites_the_launch_where_it_is() {
    assert!(remarks(IRREGULAR, Granularity::Warp).is_empty());
    let module = driver::check(IRREGULAR, &options(Granularity::Warp, false)).unwrap().module;
    let names: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["child", "parent", "child__agg"]);
    let ops = warp_ops(&module.functions[1]);
    // the group, its size, rank and lowest lane, the table's address in two halves, the
    // barrier before the leader reads the records, and the leader's verdict
    for op in [WarpOp::ActiveMask, WarpOp::Ballot, WarpOp::LaneMaskLt, WarpOp::SyncWarp] {
        assert_eq!(ops.iter().filter(|o| **o == op).count(), 1, "{op:?} in {ops:?}");
    }
    assert_eq!(ops.iter().filter(|o| **o == WarpOp::Shuffle).count(), 3, "{ops:?}");
    // the leader reads the aggregated launch's status
    let mut statuses = 0;
    super::visit_block(module.functions[1].body.as_ref().unwrap(), &mut |e| {
        if let ExprKind::Launch(l) = &e.kind {
            if e.ty == crate::types::Type::CudaError {
                assert_eq!(l.kernel().map(|k| k.0), Some(2), "only the aggregated launch is checked");
                statuses += 1;
            }
        }
    });
    assert_eq!(statuses, 1);
    // no shared tables at warp granularity: a pool of tables in global memory, a bit per table
    let globals: Vec<(&str, GlobalSpace)> = module.globals.iter().map(|g| (g.name.as_str(), g.space)).collect();
    assert_eq!(globals, [("child$agg_pool", GlobalSpace::Device), ("child$agg_pool_used", GlobalSpace::Device)]);

    let out = ptx(IRREGULAR, Granularity::Warp);
    let parent = entry(&out, "parent");
    // a table from the pool (atom.or), else from the heap; given back to the pool in the clone
    assert!(entry(&out, "child__agg").contains("atom.global.and.b32"));
    for needle in ["activemask.b32", "vote.sync.ballot.b32", "shfl.sync.idx.b32", "bar.warp.sync", "atom.global.or.b32", "__cudaCDP2Malloc"] {
        assert!(parent.contains(needle), "{needle} missing from parent:\n{parent}");
    }
    assert!(!parent.contains("bar.sync") && !parent.contains("barrier.sync"), "no block barrier in parent:\n{parent}");
    assert!(parent.lines().any(|l| l.trim_start().starts_with("mov.b64") && l.ends_with("child__agg;")), "the aggregated kernel is launched");
    // The aggregated launch through the documented V1 entry points (its lanes wait for it),
    // the threads' own launch as they were through V2, the module's ABI.
    let launched = launched_kernels(parent);
    let pairs: Vec<(&str, &str)> = launched.iter().map(|(k, e)| (k.as_str(), e.as_str())).collect();
    assert_eq!(pairs, [("child", "__cudaCDP2GetParameterBufferV2"), ("child__agg", "cudaLaunchDevice")], "{parent}");
    assert_eq!(launch_calls(parent), 1, "the direct launch alone is V2:\n{parent}");
    assert_eq!(parent.matches("call.uni (retval0), cudaGetParameterBuffer,").count(), 1, "{parent}");
}

#[test]
fn warp_granularity_takes_loops_device_functions_recursion_and_early_returns() {
    let got = remarks(LEFT_ALONE, Granularity::Warp);
    let lines: Vec<usize> = got.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [11, 12, 15, 16], "{got:#?}");
    let why: Vec<&str> = got.iter().map(|(_, w)| w.as_str()).collect();
    assert!(why[0].contains("tail launch"));
    assert!(why[1].contains("fire-and-forget"));
    assert!(why[2].contains("NULL stream"));
    assert!(why[3].contains("dynamic shared memory"));
    let module = driver::check(LEFT_ALONE, &options(Granularity::Warp, false)).unwrap().module;
    let aggs: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).filter(|n| n.ends_with("__agg")).collect();
    assert_eq!(aggs, ["leaf__agg", "indirect__agg", "k_self__agg"]);
    for name in ["k_loop", "k_self", "helper", "k_sync", "k_ok"] {
        let f = module.functions.iter().find(|f| f.name == name).unwrap();
        assert!(warp_ops(f).contains(&WarpOp::Ballot), "{name} is not aggregated");
    }
    let out = ptx(LEFT_ALONE, Granularity::Warp);
    assert!(out.contains(".entry leaf__agg(") && out.contains(".entry k_self__agg("));
}

#[test]
fn a_clone_aggregates_its_own_launches() {
    // k_self launches itself: its clone is made from the rewritten kernel, so the clone's
    // launch is aggregated too and goes to the clone.
    let module = driver::check(LEFT_ALONE, &options(Granularity::Warp, false)).unwrap().module;
    let id = module.functions.iter().position(|f| f.name == "k_self__agg").unwrap();
    let clone = &module.functions[id];
    assert!(warp_ops(clone).contains(&WarpOp::Ballot));
    let mut launched = Vec::new();
    super::visit_block(clone.body.as_ref().unwrap(), &mut |e| {
        if let ExprKind::Launch(l) = &e.kind {
            launched.push(l.kernel().map_or_else(|| "through a pointer".into(), |k| module.function(k).name.clone()));
        }
    });
    assert_eq!(launched, ["k_self__agg", "k_self"], "the aggregated launch and the direct one");
}

#[test]
fn returns_inside_loops_leave_through_the_flag() {
    let source = r#"
extern "C" __global__ void leaf(int *p) { p[blockIdx.y] = 1; }
extern "C" __global__ void k(int *p, int n) {
    for (int i = 0; i < n; i++) {
        while (p[i] > 0) {
            if (p[i] == 7)
                return;
            p[i]--;
        }
    }
    if (threadIdx.x < 4)
        leaf<<<dim3(1, 2), dim3(8, 4)>>>(p);
}
"#;
    assert!(remarks(source, Granularity::Block).is_empty());
    let module = driver::check(source, &options(Granularity::Block, false)).unwrap().module;
    let k = module.functions.iter().find(|f| f.name == "k").unwrap();
    // No `return` is left in k: every one became a jump to the end.
    fn returns(b: &crate::hir::Block) -> usize {
        b.stmts
            .iter()
            .map(|s| match s {
                Stmt::Return(_) => 1,
                Stmt::If { then, otherwise, .. } => returns(then) + otherwise.as_ref().map_or(0, returns),
                Stmt::Loop { init, body, .. } => returns(init) + returns(body),
                Stmt::Block(b) => returns(b),
                _ => 0,
            })
            .sum()
    }
    assert_eq!(returns(k.body.as_ref().unwrap()), 0);
    assert!(ptx(source, Granularity::Block).contains(".entry leaf__agg("));
}

/// A `return` inside a `switch` leaves the switch with the flag set and then the kernel's
/// `do { } while (0)`: after the rewrite, every `Break` that stood for it is followed, outside
/// the switch, by a flag test that breaks again.
#[test]
fn returns_inside_a_switch_leave_through_the_flag_and_launches_in_cases_are_aggregated() {
    let source = r#"
extern "C" __global__ void leaf(int *p) { p[threadIdx.x] = 1; }
extern "C" __global__ void k(int *p, int n) {
    switch (n) {
    case 0:
        return;
    case 1:
        leaf<<<1, 32>>>(p);
        break;
    default:
        break;
    }
    p[64] = 2;
}
"#;
    assert!(remarks(source, Granularity::Block).is_empty(), "{:?}", remarks(source, Granularity::Block));
    let module = driver::check(source, &options(Granularity::Block, false)).unwrap().module;
    let k = module.functions.iter().find(|f| f.name == "k").unwrap();
    let mut switches = 0;
    let mut flag_tests_after_switch = 0;
    super::walk::visit_stmts(k.body.as_ref().unwrap(), &mut |s| {
        if let Stmt::Block(b) | Stmt::Loop { body: b, .. } = s {
            for pair in b.stmts.windows(2) {
                if let (Stmt::Switch { .. }, Stmt::If { then, .. }) = (&pair[0], &pair[1]) {
                    flag_tests_after_switch += matches!(then.stmts.as_slice(), [Stmt::Break]) as usize;
                }
            }
        }
        switches += matches!(s, Stmt::Switch { .. }) as usize;
    });
    assert_eq!(switches, 1);
    assert_eq!(flag_tests_after_switch, 1, "the switch's return must leave the kernel's loop too");
    assert!(ptx(source, Granularity::Block).contains(".entry leaf__agg("));
}

/// A launch that a backward `goto` may repeat is in a loop: block granularity leaves it alone.
#[test]
fn a_backward_goto_makes_a_loop_for_block_granularity() {
    let source = r#"
extern "C" __global__ void leaf(int *p) { p[threadIdx.x] = 1; }
extern "C" __global__ void k(int *p, int n) {
    int i = 0;
again:
    leaf<<<1, 32>>>(p + 32 * i);
    i++;
    if (i < n)
        goto again;
}
"#;
    let r = remarks(source, Granularity::Block);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].1.contains("inside a loop"), "{r:?}");
    assert!(remarks(source, Granularity::Warp).is_empty());
}

/// A child that calls `__syncthreads`, launched by every thread of `k`.
pub(super) const BARRIERS: &str = r#"
extern "C" __global__ void reduce(const float *x, float *out) {
    __shared__ float part[256];
    part[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, part[0]);
}
extern "C" __global__ void k(const float *x, float *out, int n) {
    if (threadIdx.x < n)
        reduce<<<2, 256>>>(x + 512 * threadIdx.x, out + threadIdx.x);
}
"#;

#[test]
fn children_with_barriers_are_aggregated_with_the_equal_size_check() {
    let source = BARRIERS;
    for granularity in [Granularity::Block, Granularity::Warp] {
        assert!(remarks(source, granularity).is_empty());
        let out = ptx(source, granularity);
        assert!(out.contains(".entry reduce__agg("));
        // with block sizes that differ, the records are launched as they were: at warp
        // granularity the table is allocated before the sizes are known, and freed then
        let k = entry(&out, "k");
        assert_eq!(k.contains("__cudaCDP2Free"), granularity == Granularity::Warp, "{granularity:?}");
    }
}

#[test]
fn at_block_granularity_a_kernel_that_reads_launch_errors_aggregates_per_warp() {
    let source = r#"
extern "C" __global__ void leaf(int *p) { p[threadIdx.x] = 1; }
extern "C" __device__ int failed() { return cudaPeekAtLastError() != cudaSuccess; }
extern "C" __global__ void checks(int *p, int *errors) {
    leaf<<<1, 32>>>(p);
    if (cudaGetLastError() != cudaSuccess)
        atomicAdd(errors, 1);
}
extern "C" __global__ void checks_in_a_callee(int *p, int *errors, int n) {
    for (int i = 0; i < n; i++)
        leaf<<<1, 32>>>(p + 32 * i);
    errors[threadIdx.x] = failed();
}
extern "C" __global__ void ignores(int *p) {
    leaf<<<1, 32>>>(p);
}
"#;
    let checked = driver::check(source, &options(Granularity::Block, true)).unwrap();
    let notes: Vec<(usize, &str)> = checked
        .warnings
        .iter()
        .map(|d| (source[..d.primary_span().start as usize].lines().count(), d.code.as_str()))
        .collect();
    // the two launches of the kernels that read errors, the loop's included; none for `ignores`
    assert_eq!(notes, [(5, "R0501"), (11, "R0501")], "{:#?}", checked.warnings);
    assert!(checked.warnings[0].labels[0].message.contains("`checks` reads launch errors"));
    let m = &checked.module;
    let f = |name: &str| m.functions.iter().find(|f| f.name == name).unwrap();
    assert!(warp_ops(f("checks")).contains(&WarpOp::Ballot));
    assert!(warp_ops(f("checks_in_a_callee")).contains(&WarpOp::Ballot));
    assert!(warp_ops(f("ignores")).is_empty(), "block-wide, with shared tables");
    assert!(m.globals.iter().any(|g| g.name.starts_with("ignores$agg0$")));
    assert!(!m.globals.iter().any(|g| g.name.starts_with("checks")));
    // one clone serves both kinds of site
    assert_eq!(m.functions.iter().filter(|f| f.name.ends_with("__agg")).count(), 1);
    assert!(ptx(source, Granularity::Block).contains(".entry leaf__agg("));
}

/// A child whose helper reads the built-ins: the helper gets a clone taking the remapped
/// values, which the aggregated kernel calls; the original stays for the child itself.
#[test]
fn a_childs_helpers_that_read_the_builtins_get_clones_with_the_launchs_values() {
    let source = r#"
__device__ int lane_of(int k) { return (threadIdx.x + blockIdx.y * blockDim.x + gridDim.z + k) % 32; }
__device__ int twice(int k) { return 2 * lane_of(k); }
extern "C" __global__ void child(int *p) { p[threadIdx.x] = twice(1); }
extern "C" __global__ void parent(int *p) { if (threadIdx.x == 0) child<<<2, 64>>>(p); }
"#;
    let module = driver::check(source, &options(Granularity::Block, false)).unwrap().module;
    let by_name = |n: &str| module.functions.iter().position(|f| f.name == n).unwrap_or_else(|| panic!("no {n}"));
    let (child, agg) = (by_name("child"), by_name("child__agg"));
    let (lane, twice) = (by_name("lane_of__agg_ids"), by_name("twice__agg_ids"));
    let calls = |f: usize| {
        let mut out = Vec::new();
        super::visit_block(module.functions[f].body.as_ref().unwrap(), &mut |e| {
            if let ExprKind::Call { func, args } = &e.kind {
                out.push((module.functions[func.0 as usize].name.clone(), args.len()));
            }
        });
        out
    };
    assert_eq!(calls(child), [("twice".to_string(), 1)]);
    assert_eq!(calls(agg), [("twice__agg_ids".to_string(), 9)]);
    assert_eq!(calls(twice), [("lane_of__agg_ids".to_string(), 9)]);
    // the clones read no built-in: threadIdx.x, blockIdx.y, blockDim.x and gridDim.z are parameters
    for f in [lane, twice] {
        let func = &module.functions[f];
        assert!(func.internal && func.params.len() == 9, "{}", func.name);
        super::visit_block(func.body.as_ref().unwrap(), &mut |e| {
            assert!(!matches!(&e.kind, ExprKind::Builtin { builtin: crate::hir::Builtin::SpecialReg(_), .. }), "{} reads a built-in", func.name);
        });
    }
    let out = ptx(source, Granularity::Block);
    // blockIdx.y and gridDim.z come from the record in the aggregated kernel (the clones may
    // be inlined), and from the hardware in the child itself
    let agg_ptx = entry(&out, "child__agg");
    assert!(!agg_ptx.contains("%ctaid.y") && !agg_ptx.contains("%nctaid.z"), "{agg_ptx}");
    let child_ptx = entry(&out, "child");
    assert!(child_ptx.contains("%ctaid.y") && child_ptx.contains("%nctaid.z"), "{child_ptx}");
}

/// KLAP's QT asks for `4 * NUM_WARPS_PER_BLOCK * sizeof(int)` bytes of dynamic shared memory,
/// with `const int NUM_WARPS_PER_BLOCK = NUM_THREADS_PER_BLOCK / warpSize`.
const UNIFORM_SHARED: &str = r#"
extern "C" __global__ void child(int *p) {
    extern __shared__ int s[];
    s[threadIdx.x] = p[threadIdx.x];
    p[threadIdx.x] = s[threadIdx.x] + 1;
}
extern "C" __global__ void parent(int *p) {
    const int warps = 128 / warpSize;
    if (threadIdx.x == 0)
        child<<<1, 32, 4 * warps * sizeof(int)>>>(p + 32 * blockIdx.x);
}
extern "C" __global__ void literal(int *p) {
    child<<<1, 32, 96>>>(p);
}
extern "C" __global__ void reassigned(int *p) {
    int bytes = 64;
    if (p[0] > 0) bytes = 128;
    child<<<1, 32, bytes>>>(p);
}
"#;

#[test]
fn dynamic_shared_memory_the_same_for_every_thread_is_aggregated_with_the_largest() {
    for granularity in [Granularity::Block, Granularity::Warp, Granularity::Grid] {
        let got = remarks(UNIFORM_SHARED, granularity);
        // only `reassigned`'s launch, whose size depends on the data, is left alone
        assert_eq!(got.iter().map(|(l, _)| *l).collect::<Vec<_>>(), [18], "{granularity:?}: {got:#?}");
        assert!(got[0].1.contains("dynamic shared memory is not the same for every thread"), "{got:#?}");
        // the aggregated launch (and a record's own launch when it falls back) asks for the
        // largest of its sites: 96 bytes (`literal`), not `parent`'s 64
        let module = driver::check(UNIFORM_SHARED, &options(granularity, false)).unwrap().module;
        let agg = module.functions.iter().position(|f| f.name == "child__agg").expect("child__agg");
        let mut sizes = Vec::new();
        for f in &module.functions {
            let Some(body) = &f.body else { continue };
            super::walk::root_exprs(body, &mut |e| {
                super::walk::visit_expr(e, &mut |e| {
                    if let ExprKind::Launch(l) = &e.kind {
                        if l.kernel().is_some_and(|k| k.0 as usize == agg) {
                            sizes.push(match l.shared_mem.kind {
                                ExprKind::IntConst(n) => n,
                                _ => -1,
                            });
                        }
                    }
                })
            });
        }
        assert!(!sizes.is_empty() && sizes.iter().all(|&n| n == 96), "{granularity:?}: {sizes:?}");
    }
}

/// The launches of a function as (kernel launched, whether it is an aggregated launch of a
/// clone, that is, takes a record table and a count).
fn launches_in(module: &crate::hir::Module, f: &crate::hir::Function) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(body) = &f.body {
        super::walk::root_exprs(body, &mut |e| {
            super::walk::visit_expr(e, &mut |e| {
                if let ExprKind::Launch(l) = &e.kind {
                    found.push(l.kernel().map_or_else(|| "through a pointer".into(), |k| module.function(k).name.clone()));
                }
            })
        });
    }
    found
}

#[test]
fn a_kernel_that_launches_itself_is_aggregated_at_every_level_of_its_recursion() {
    for granularity in [Granularity::Block, Granularity::Grid] {
        let module = driver::check(LEFT_ALONE, &options(granularity, false)).unwrap().module;
        let f = |name: &str| module.functions.iter().find(|f| f.name == name).unwrap();
        // the kernel and its clone both launch the clone, over their blocks' records, and
        // launch `k_self` itself only as a record's own launch when the aggregated one is
        // not wanted (a lone record) or fails
        for name in ["k_self", "k_self__agg"] {
            let launched = launches_in(&module, f(name));
            assert!(launched.contains(&"k_self__agg".to_string()), "{granularity:?}: {name} launches {launched:?}");
        }
        let out = ptx(LEFT_ALONE, granularity);
        assert!(entry(&out, "k_self__agg").contains("k_self__agg"), "{granularity:?}: the clone does not launch itself");
    }
}

/// Kernels that aggregation changes or creates get `.maxnreg 64`, so that a parent that ran
/// with 1024-thread blocks still can (KLAP's MST: its aggregated find kernel took 90
/// registers and every launch of it failed with `cudaErrorLaunchOutOfResources` on the H100);
/// kernels it leaves alone, and kernels whose `__launch_bounds__` already bound ptxas, do not.
#[test]
fn changed_kernels_keep_room_for_1024_thread_blocks() {
    let source = r#"
extern "C" __global__ void child(unsigned int n, float *data) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n) data[j] += 1.0f;
}
__device__ void helper(unsigned int n, float *data) {
    if (n > 0) child<<<(n + 255) / 256, 256>>>(n, data);
}
extern "C" __global__ void parent(unsigned int *len, float *data) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (len[i] > 0) child<<<(len[i] + 255) / 256, 256>>>(len[i], data);
}
extern "C" __global__ void via_helper(unsigned int *len, float *data) {
    helper(len[threadIdx.x], data);
}
extern "C" __global__ void __launch_bounds__(256) bounded(unsigned int *len, float *data) {
    if (len[threadIdx.x] > 0) child<<<1, 256>>>(len[threadIdx.x], data);
}
extern "C" __global__ void untouched(float *data) { data[threadIdx.x] = 0.0f; }
"#;
    for granularity in [Granularity::Warp, Granularity::Block, Granularity::Grid] {
        let out = ptx(source, granularity);
        let capped = |name: &str| entry(&out, name).contains(".maxnreg 64");
        assert!(capped("parent") && capped("child__agg"), "{granularity:?}");
        assert!(!capped("untouched") && !capped("child") && !capped("bounded"), "{granularity:?}");
        assert!(entry(&out, "bounded").contains(".maxntid 256, 1, 1"), "{granularity:?}");
        // The warp-wide rewrite of `helper` reaches `via_helper` through its call.
        if granularity == Granularity::Warp {
            assert!(capped("via_helper"));
        }
    }
    assert!(!ptx(source, Granularity::Off).contains(".maxnreg"));
}


/// A kernel that returns early and calls `__syncthreads` (KLAP's QT) is aggregated at block
/// granularity with a barrier-free end: each thread counts itself in `K$agg$arrived` after a
/// fence and leaves, and the last one launches; nothing after the body waits at a barrier
/// (a thread that returned must leave, as it did, not count at the body's barriers). At grid
/// granularity it is left alone, with a remark. A kernel without early returns keeps the
/// barrier end (`k_ok`).
#[test]
fn early_return_and_barriers_end_the_block_with_its_last_thread() {
    let module = driver::check(LEFT_ALONE, &options(Granularity::Block, false)).unwrap().module;
    let arrived: Vec<&str> = module.globals.iter().filter_map(|g| g.name.strip_suffix("$agg$arrived")).collect();
    assert_eq!(arrived, ["k_sync"]);
    let k_sync = module.functions.iter().find(|f| f.name == "k_sync").unwrap();
    let body = &k_sync.body.as_ref().unwrap().stmts;
    // after the body's `do { } while (0)`: a fence, then `if (last) { ... }`, with no barrier
    let after = &body[body.iter().rposition(|s| matches!(s, Stmt::Loop { .. })).unwrap() + 1..];
    assert!(matches!(after, [Stmt::Expr(Expr { kind: ExprKind::Builtin { builtin: Builtin::ThreadFence, .. }, .. }), Stmt::If { .. }]), "{after:#?}");
    let mut barriers = 0;
    for s in after {
        super::walk::visit_stmts(&crate::hir::Block { stmts: vec![s.clone()] }, &mut |s| {
            if let Stmt::Expr(Expr { kind: ExprKind::Builtin { builtin: Builtin::SyncThreads, .. }, .. }) = s {
                barriers += 1;
            }
        });
    }
    assert_eq!(barriers, 0);
    let out = ptx(LEFT_ALONE, Granularity::Block);
    assert!(entry(&out, "k_sync").contains("atom.shared.add.u32"));
    // the barrier end of k_ok: barriers after its body
    assert!(entry(&out, "k_ok").matches("bar.sync").count() >= 3);

    let grid = remarks(LEFT_ALONE, Granularity::Grid);
    let (line, why) = grid.iter().find(|(l, _)| *l == 30).expect("k_sync's launch has a remark at grid granularity");
    assert_eq!(*line, 30);
    assert!(why.contains("returns early and calls `__syncthreads`"), "{why}");
}

/// A child that calls through a pointer to a function is aggregated while no function whose
/// address is taken reads the built-in variables (they would read the aggregated launch's);
/// once one does, every launch of a child that calls through a pointer is left alone.
#[test]
fn calls_through_pointers_keep_children_aggregated_only_without_built_ins() {
    let plain = r#"
typedef int (*binop)(int, int);
__device__ int add(int a, int b) { return a + b; }
__device__ int mul(int a, int b) { return a * b; }
__device__ binop table[2] = {add, mul};
extern "C" __global__ void child(int *p, binop f) { p[threadIdx.x] = f(p[threadIdx.x], 2); }
extern "C" __global__ void parent(int *p) {
    child<<<1, 32>>>(p, table[threadIdx.x % 2]);
}
"#;
    for granularity in [Granularity::Block, Granularity::Warp, Granularity::Grid] {
        assert_eq!(remarks(plain, granularity), [], "{granularity:?}");
        assert!(ptx(plain, granularity).contains(".entry child__agg("), "{granularity:?}");
    }
    let reading = plain.replace("return a * b;", "return a * b + threadIdx.x;");
    for granularity in [Granularity::Block, Granularity::Warp, Granularity::Grid] {
        let r = remarks(&reading, granularity);
        assert_eq!(r.len(), 1, "{granularity:?}: {r:?}");
        assert_eq!(r[0].0, 8);
        assert!(r[0].1.contains("`child` calls a function through a pointer"), "{r:?}");
        assert!(!ptx(&reading, granularity).contains("child__agg"), "{granularity:?}");
    }
}

/// A launch through a pointer is left alone with a remark saying why (its child is known at run
/// time only); at block granularity it also keeps the kernel's direct launch into the NULL
/// stream where it is, which delaying would reorder. A kernel whose address is taken is never
/// called, so its reading `threadIdx` does not stop a child that calls through a pointer.
#[test]
fn launches_through_pointers_are_left_alone() {
    let source = r#"
typedef void (*kernel_ptr)(int *);
__device__ int twice(int x) { return 2 * x; }
__device__ int (*op)(int) = twice;
extern "C" __global__ void child(int *p) { p[threadIdx.x] = op(p[threadIdx.x]); }
extern "C" __global__ void other(int *p) { p[threadIdx.x] += 1; }
__device__ kernel_ptr table[2] = {child, other};
extern "C" __global__ void parent(int *p, int i) {
    table[i]<<<1, 32>>>(p);
    child<<<1, 32>>>(p);
}
"#;
    let through = |r: &[(usize, String)]| r.iter().filter(|(l, why)| *l == 9 && why.contains("goes through a pointer")).count();
    let warp = remarks(source, Granularity::Warp);
    assert_eq!(through(&warp), 1, "{warp:?}");
    assert_eq!(warp.len(), 1, "only the launch through the pointer is left alone: {warp:?}");
    assert!(ptx(source, Granularity::Warp).contains(".entry child__agg("));
    for granularity in [Granularity::Block, Granularity::Grid] {
        let r = remarks(source, granularity);
        assert_eq!(through(&r), 1, "{granularity:?}: {r:?}");
        let (_, why) = r.iter().find(|(l, _)| *l == 10).expect("the direct launch is left alone too");
        assert!(why.contains("also launches a kernel through a pointer into the NULL stream"), "{why}");
    }
}

/// A launch through a pointer whose value is one kernel's address on every path (a local only
/// its declaration stores, through pointer casts) is a launch of that kernel, and aggregated;
/// one whose pointer type is not the kernel's own is left alone, as is one through a local
/// stored to again.
#[test]
fn launches_through_constant_pointers_are_folded() {
    let source = r#"
typedef void (*kernel_ptr)(int *);
extern "C" __global__ void child(int *p) { p[threadIdx.x] += 1; }
extern "C" __global__ void parent(int *p, int i) {
    kernel_ptr k = child;
    void *raw = (void *)child;
    kernel_ptr again = child;
    if (i > 3)
        again = 0;
    k<<<1, 32>>>(p);
    ((kernel_ptr)raw)<<<1, 32>>>(p);
    ((void (*)(float *))raw)<<<1, 32>>>((float *)p);
    again<<<1, 32>>>(p);
}
"#;
    let r = remarks(source, Granularity::Warp);
    let lines: Vec<usize> = r.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [12, 13], "{r:?}");
    assert!(r.iter().all(|(_, why)| why.contains("goes through a pointer")), "{r:?}");
    assert!(ptx(source, Granularity::Warp).contains(".entry child__agg("));
}

/// Past `back::launch::INLINE_LAUNCHES` launches in one function, launches go through one
/// helper per child and ABI: the warp's aggregated launch through a V1 helper of its own, the
/// threads' own launches through the module's V2 one.
#[test]
fn many_warp_sites_share_one_helper_per_abi() {
    let sites = "    child<<<1, 32>>>(p);\n".repeat(40);
    let source = format!("extern \"C\" __global__ void child(int *p) {{ p[threadIdx.x] = 1; }}\nextern \"C\" __global__ void parent(int *p) {{\n{sites}}}\n");
    let out = ptx(&source, Granularity::Warp);
    let body = |name: &str| {
        // the definition (the forward declaration has its `(` on the next line)
        let start = out.find(&format!(" {name}(")).unwrap_or_else(|| panic!("no {name}:\n{out}"));
        let rest = &out[start..];
        &rest[..rest.find("\n}\n").unwrap()]
    };
    let (v1, v2) = (body("__cdpc_launch_v1_child__agg"), body("__cdpc_launch_child"));
    assert!(v1.contains("cudaLaunchDevice, (") && !v1.contains("V2"), "{v1}");
    assert!(v2.contains("__cudaCDP2LaunchDeviceV2, (") && !v2.contains("cudaLaunchDevice,"), "{v2}");
    let parent = entry(&out, "parent");
    assert!(parent.contains("__cdpc_launch_v1_child__agg, (") && parent.contains("call.uni __cdpc_launch_child, ("), "{parent}");
    assert!(!out.contains("__cdpc_launch_child__agg"), "no V2 helper of the aggregated kernel:\n{out}");
}
