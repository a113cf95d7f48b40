use super::Granularity;
use crate::diag::{Code, Severity};
use crate::driver::{self, CompileOptions, Emit};
use crate::hir::{Builtin, ExprKind, FunctionKind, SpecialReg, Stmt};

fn options(granularity: Granularity, remarks: bool) -> CompileOptions {
    CompileOptions { emit: Emit::Ptx, aggregate: granularity, pass_remarks: remarks, ..CompileOptions::default() }
}

/// The remarks of a program: (line, message, label) for each.
fn remarks(source: &str, granularity: Granularity) -> Vec<(usize, String)> {
    let checked = driver::check(source, &options(granularity, true)).unwrap_or_else(|e| panic!("{e}: {e:?}"));
    checked
        .warnings
        .iter()
        .filter(|d| d.code == Code::AggregationRemark)
        .map(|d| {
            assert_eq!(d.severity, Severity::Remark);
            let line = source[..d.primary_span().start as usize].lines().count();
            (line, d.labels[0].message.clone())
        })
        .collect()
}

fn ptx(source: &str, granularity: Granularity) -> String {
    let compiled = driver::compile(source, &options(granularity, false)).unwrap_or_else(|e| panic!("{e}: {e:?}"));
    String::from_utf8(compiled.output).unwrap()
}

/// Launch calls in the PTX (V2: one `__cudaCDP2LaunchDeviceV2` call per launch site).
fn launch_calls(ptx: &str) -> usize {
    ptx.lines().filter(|l| l.contains("call") && l.contains("__cudaCDP2LaunchDeviceV2")).count()
}

const IRREGULAR: &str = r#"
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
    for abi in [crate::LaunchAbi::V1, crate::LaunchAbi::V2] {
        for size in [crate::AddressSize::Bits64, crate::AddressSize::Bits32] {
            let mut o = options(Granularity::Block, false);
            o.target.launch_abi = abi;
            o.target.address_size = size;
            let out = String::from_utf8(driver::compile(IRREGULAR, &o).unwrap().output).unwrap();
            assert!(out.contains(".entry child__agg("), "{abi:?} {size:?}");
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
    leaf<<<1, 32, 64>>>(p);
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
    // k_ok's launch (line 34) is aggregated and the only one without a remark.
    assert_eq!(lines, [8, 11, 12, 15, 16, 20, 23, 25, 30], "{got:#?}");
    let why: Vec<&str> = got.iter().map(|(_, w)| w.as_str()).collect();
    assert!(why[0].contains("inside a loop"));
    assert!(why[1].contains("tail launch"));
    assert!(why[2].contains("fire-and-forget"));
    assert!(why[3].contains("NULL stream"));
    assert!(why[4].contains("dynamic shared memory"));
    assert!(why[5].contains("launches itself"));
    assert!(why[6].contains("device function that reads threadIdx"));
    assert!(why[7].contains("device function `helper`"));
    assert!(why[8].contains("returns early and calls `__syncthreads`"));
    let module = driver::check(LEFT_ALONE, &options(Granularity::Block, false)).unwrap().module;
    let aggs: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).filter(|n| n.ends_with("__agg")).collect();
    assert_eq!(aggs, ["leaf__agg"]);
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

#[test]
fn warp_granularity_is_reported_as_not_implemented() {
    let got = remarks(IRREGULAR, Granularity::Warp);
    assert_eq!(got.len(), 1);
    assert!(got[0].1.contains("not implemented"));
    assert_eq!(ptx(IRREGULAR, Granularity::Warp), ptx(IRREGULAR, Granularity::Off));
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

#[test]
fn children_with_barriers_are_aggregated_with_the_equal_size_check() {
    let source = r#"
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
    assert!(remarks(source, Granularity::Block).is_empty());
    let out = ptx(source, Granularity::Block);
    assert!(out.contains(".entry reduce__agg("));
}
