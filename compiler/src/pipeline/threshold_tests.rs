//! Thresholding on LLVM IR, IR in, IR out: hand-written modules in the documented NVVM IR
//! shape (as Clang writes them at `-O3`), through [`threshold::threshold`] alone and through
//! the whole pipeline.

use super::tests::function;
use super::*;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;

pub(super) const HEAD: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
%struct.dim3 = type { i32, i32, i32 }
%struct.S = type { i8, double, i32 }
declare ptr @__cudaCDP2GetParameterBuffer(i64, i64)
declare i32 @__cudaCDP2LaunchDevice(ptr, ptr, ptr byval(%struct.dim3) align 4, ptr byval(%struct.dim3) align 4, i32, ptr)
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
"#;

/// `p[index()] = c + s.i`, where `index` reads `threadIdx.x + blockIdx.x * blockDim.x` and
/// `gridDim.y`: a child with an `i8`, a `byval` struct and a helper that reads built-ins.
pub(super) const CHILD: &str = r#"
define i32 @index() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %gy = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
  %bn = mul i32 %b, %n
  %i = add i32 %t, %bn
  %j = mul i32 %i, %gy
  ret i32 %j
}
define ptx_kernel void @child(ptr %p, i8 %c, ptr byval(%struct.S) align 8 %s) {
  %i = call i32 @index()
  %f = getelementptr inbounds i8, ptr %s, i64 16
  %v = load i32, ptr %f, align 8
  %cw = sext i8 %c to i32
  %sum = add i32 %v, %cw
  %at = getelementptr inbounds i32, ptr %p, i32 %i
  store i32 %sum, ptr %at, align 4
  ret void
}
"#;

/// The stores of a launch's dims `<<<n, 32>>>` into the allocas `%grid` and `%block`, as
/// Clang writes them.
const DIMS: &str = "  store i32 %n, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 32, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
";

/// `child<<<n, 32, 0, STREAM>>>(p, 'a', s)` as Clang writes it: the buffer (8 + 1, padded to
/// 16, + 24 = 40 bytes), a null test, the stores, the dims in allocas, the launch.
pub(super) fn launch(child: &str, stream: &str, shmem: &str) -> String {
    format!(
        r#"
define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) {{
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 64
  %c = getelementptr inbounds i8, ptr %buf, i64 8
  store i8 97, ptr %c, align 8
  %sp = getelementptr inbounds i8, ptr %buf, i64 16
  call void @llvm.memcpy.p0.p0.i64(ptr %sp, ptr %s, i64 24, i1 false)
{DIMS}  %st = call i32 @__cudaCDP2LaunchDevice(ptr @{child}, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 {shmem}, ptr {stream})
  br label %done
done:
  ret void
}}
"#
    )
}

pub(super) fn parse<'ctx>(context: &'ctx Context, ir: &str) -> inkwell::module::Module<'ctx> {
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test");
    let module = context.create_module_from_ir(buffer).expect("the test IR parses");
    module.verify().expect("the test IR is valid");
    module
}

/// The module after thresholding alone, and the remarks' messages.
pub(super) fn thresholded(ir: &str, n: u32, target: Target) -> (String, Vec<String>) {
    let context = Context::create();
    let module = parse(&context, ir);
    let remarks = threshold::threshold(&module, &launch::Sites::of(&module, &SourceText::default()), n, &target, &SourceText::default());
    module.verify().unwrap_or_else(|e| panic!("thresholding left an invalid module: {e}\n{}", module.print_to_string()));
    assert!(remarks.iter().all(|d| d.code == crate::diag::Code::ThresholdRemark));
    (module.print_to_string().to_string(), remarks.iter().map(|d| format!("{}: {}", d.message, d.labels[0].message)).collect())
}

/// The module after the whole pipeline and its clean-up, with thresholding at `n`.
pub(super) fn piped(ir: &str, n: u32, target: Target) -> String {
    let context = Context::create();
    let module = parse(&context, ir);
    let options = PipelineOptions { target, nv_module_id: None, launch_threshold: n, pass_remarks: true, ..PipelineOptions::default() };
    run(&module, &options, &SourceText::default()).expect("the pipeline accepts the module");
    let tm = crate::back::target_machine(&target, 3).unwrap();
    cleanup(&module, &tm, true).unwrap();
    module.verify().unwrap();
    module.print_to_string().to_string()
}

pub(super) fn program() -> String {
    format!("{HEAD}{CHILD}{}", launch("child", "null", "0"))
}

/// `ir` with an empty inline `asm` before the parent's `ret`: a kernel with inline assembly
/// keeps no small grid for its warp's end (`defer.rs`), so that the site's own helper,
/// `C__threshold`, is what a test sees.
pub(super) fn at_site(ir: &str) -> String {
    let out = ir.replace("done:\n  ret void", "done:\n  call void asm sideeffect \"\", \"\"()\n  ret void");
    assert_ne!(out, ir, "a parent whose last block is `done: ret void`");
    out
}

#[test]
fn off_or_with_nothing_to_take_the_module_is_untouched() {
    let printed = |ir: &str| parse(&Context::create(), ir).print_to_string().to_string();
    let before = printed(&program());
    let (after, remarks) = thresholded(&program(), 0, Target::default());
    assert_eq!(after, before);
    assert!(remarks.is_empty());
    // A child with a barrier: nothing to take, a remark, no change.
    let barrier = program().replace("  %i = call i32 @index()\n", "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n  %i = call i32 @index()\n");
    let before = printed(&barrier);
    let (after, remarks) = thresholded(&barrier, 1024, Target::default());
    assert_eq!(after, before);
    assert_eq!(remarks, ["launch of `child` not run in the launching thread when small: `child` calls `__syncthreads`: its threads cannot run one after another in the launching thread"]);
}

#[test]
fn a_small_launch_runs_the_childs_threads_in_place_and_launches_otherwise() {
    let (ir, remarks) = thresholded(&at_site(&program()), 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    // The child is copied with the built-ins as parameters; its helper too; the originals stay.
    let serial = function(&ir, "child__serial");
    assert!(serial.starts_with("define internal void @child__serial(ptr %p, i8 %c, ptr byval(%struct.S) align 8 %s, i32 %tid.x, i32 %tid.y, i32 %tid.z, i32 %ctaid.x, i32 %ctaid.y, i32 %ctaid.z, i32 %ntid.x, i32 %ntid.y, i32 %ntid.z, i32 %nctaid.x, i32 %nctaid.y, i32 %nctaid.z)"), "{serial}");
    assert!(
        serial.contains(
            "call i32 @index__serial(i32 %tid.x, i32 %tid.y, i32 %tid.z, i32 %ctaid.x, i32 %ctaid.y, i32 %ctaid.z, i32 %ntid.x, i32 %ntid.y, i32 %ntid.z, i32 %nctaid.x, i32 %nctaid.y, i32 %nctaid.z)"
        ),
        "{serial}"
    );
    let helper = function(&ir, "index__serial");
    assert!(!helper.contains("sreg") && helper.contains("mul i32 %ctaid.x, %ntid.x") && helper.contains("mul i32 %i, %nctaid.y"), "{helper}");
    assert!(function(&ir, "index").contains("@llvm.nvvm.read.ptx.sreg.tid.x()") && function(&ir, "child").contains("call i32 @index()"), "{ir}");
    // The site: the arguments into a local block, then the helper; the launch is in it.
    let parent = function(&ir, "parent");
    assert!(parent.contains("%thr.args = alloca [40 x i8], align 64") && !parent.contains("GetParameterBuffer"), "{parent}");
    assert!(ir.contains("attributes #") && ir.contains("\"nvvm.maxnreg\"=\"64\""), "{ir}");
    insta::assert_snapshot!(function(&ir, "child__threshold"));
}

#[test]
fn through_the_pipeline_the_launch_left_is_lowered_to_v2_and_the_helper_inlined() {
    let ir = piped(&program(), 128, Target::default());
    let parent = function(&ir, "parent");
    // The serial copy, called once, is inlined by the clean-up's inliner: the child's threads
    // are the loop's body (its store to `p`), not a call per thread.
    assert!(!ir.contains("@child__serial(") && !ir.contains("@index__serial("), "{ir}");
    assert!(parent.contains("thread.i:") && parent.contains("getelementptr inbounds i32, ptr %p"), "{parent}");
    assert!(parent.contains("@__cudaCDP2GetParameterBufferV2(ptr nonnull @child") && parent.contains("@__cudaCDP2LaunchDeviceV2("), "{parent}");
    assert!(!ir.contains("@child__threshold(") && !ir.contains("@__cudaCDP2LaunchDevice("), "{ir}");
    // Under V1 the documented sequence stays, inside the same test.
    let v1 = Target { launch_abi: crate::target::LaunchAbi::V1, ..Target::default() };
    let ir = piped(&program(), 128, v1);
    let parent = function(&ir, "parent");
    assert!(parent.contains("call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)") && parent.contains("call i32 @__cudaCDP2LaunchDevice(ptr nonnull @child"), "{parent}");
}

#[test]
fn sites_the_runtime_orders_or_sizes_are_left_with_r0502() {
    let cases = [
        ("%s", "0", "a launch into a named stream that other threads or functions may hold runs after the stream's earlier work, which the thread cannot wait for"),
        ("inttoptr (i64 3 to ptr)", "0", "a tail launch sees the whole parent grid's writes; run in place it would not"),
        ("null", "16", "the launch asks for dynamic shared memory"),
    ];
    for (stream, shmem, why) in cases {
        let ir = format!("{HEAD}{CHILD}{}", launch("child", stream, shmem));
        let (_, remarks) = thresholded(&ir, 1024, Target::default());
        assert_eq!(remarks, [format!("launch of `child` not run in the launching thread when small: {why}")]);
    }
    // Fire-and-forget runs in place under V2; V1 refuses it (E0306 from the launch pass).
    let ff = format!("{HEAD}{CHILD}{}", launch("child", "inttoptr (i64 4 to ptr)", "0"));
    assert!(thresholded(&ff, 1024, Target::default()).1.is_empty());
    let v1 = Target { launch_abi: crate::target::LaunchAbi::V1, ..Target::default() };
    assert_eq!(thresholded(&ff, 1024, v1).1, ["launch of `child` not run in the launching thread when small: a fire-and-forget launch under the V1 ABI, which refuses it"]);
}

/// A parent that creates a stream of its own into `%sp` and launches `leaf<<<n, 32, 0, own>>>()`
/// twice, the second time with 16 bytes of dynamic shared memory (never run in place), then
/// destroys it; `escape` goes before the `ret` (a use of `%own` that shares the handle).
fn own_stream_parent(escape: &str) -> String {
    format!(
        r#"{HEAD}
@kept = addrspace(1) global ptr null
declare i32 @cudaStreamCreateWithFlags(ptr, i32)
declare i32 @cudaStreamDestroy(ptr)
define ptx_kernel void @leaf() {{
  ret void
}}
define ptx_kernel void @parent(i32 %n) {{
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %sp = alloca ptr, align 8
  %made = call i32 @cudaStreamCreateWithFlags(ptr %sp, i32 1)
  %own = load ptr, ptr %sp, align 8
{DIMS}  %small = call i32 @__cudaCDP2LaunchDevice(ptr @leaf, ptr null, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr %own)
  %shared = call i32 @__cudaCDP2LaunchDevice(ptr @leaf, ptr null, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 16, ptr %own)
  %gone = call i32 @cudaStreamDestroy(ptr %own)
{escape}  ret void
}}
"#
    )
}

/// A stream only its thread holds (created into a local whose handle goes only to launches
/// and `cudaStreamDestroy`): a small grid launched into it runs in place where the thread has
/// launched nothing into it since its creation. The stream's flag is cleared at the function's
/// entry and after the creation, set before the launch thresholding leaves and by the helper
/// where it launches; the helper launches into the stream.
#[test]
fn a_small_grid_in_a_threads_own_stream_runs_in_place_while_the_stream_is_idle() {
    let (ir, remarks) = thresholded(&own_stream_parent(""), 1024, Target::default());
    assert_eq!(remarks, ["launch of `leaf` not run in the launching thread when small: the launch asks for dynamic shared memory"]);
    let parent = function(&ir, "parent");
    let lines: Vec<&str> = parent.lines().map(str::trim).collect();
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` in {parent}"));
    assert!(lines[at("%own.stream.launched = alloca i1") + 1] == "store i1 false, ptr %own.stream.launched, align 1", "{parent}");
    assert_eq!(lines[at("%made = call i32 @cudaStreamCreateWithFlags") + 1], "store i1 false, ptr %own.stream.launched, align 1", "{parent}");
    let (helper_call, shared) = (at("%thr.status = call i32 @leaf__threshold("), at("%shared = call i32 @__cudaCDP2LaunchDevice"));
    assert!(lines[helper_call..shared].contains(&"store i1 true, ptr %own.stream.launched, align 1"), "set before the launch left: {parent}");
    assert!(parent.contains("call i32 @leaf__threshold(ptr null, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, ptr %own, ptr %own.stream.launched)"), "{parent}");
    let helper = function(&ir, "leaf__threshold");
    assert!(helper.contains("= load i1, ptr %stream.launched"), "the helper reads the flag: {helper}");
    let launch = helper.lines().position(|l| l.contains("call i32 @__cudaCDP2LaunchDevice(ptr @leaf")).unwrap_or_else(|| panic!("{helper}"));
    assert!(helper.lines().nth(launch).unwrap().trim_end().ends_with("i32 0, ptr %stream)"), "into the stream: {helper}");
    assert!(helper.lines().take(launch).any(|l| l.trim() == "store i1 true, ptr %stream.launched, align 1"), "the flag set before the launch: {helper}");
    // A handle that leaves the function's launches: another thread may put work into the
    // stream, which the thread cannot wait for.
    let (ir, remarks) = thresholded(
        &own_stream_parent(
            "  store ptr %own, ptr addrspace(1) @kept, align 8
",
        ),
        1024,
        Target::default(),
    );
    assert_eq!(remarks[0], "launch of `leaf` not run in the launching thread when small: a launch into a named stream that other threads or functions may hold runs after the stream's earlier work, which the thread cannot wait for");
    assert!(!ir.contains("own.stream") && !ir.contains("@leaf__threshold"), "{ir}");
}

/// A child whose body is the loop `for (i = START; i PRED END; i += STEP) p[i] += 1`, as
/// Clang rotates it (the test in the latch, on the next value).
fn looping(start: i32, pred: &str, end: &str, step: i32) -> String {
    let child = format!(
        r#"
define ptx_kernel void @child(ptr %p, i8 %c, ptr byval(%struct.S) align 8 %s) {{
entry:
  br label %body
body:
  %i = phi i32 [ {start}, %entry ], [ %next, %body ]
  %at = getelementptr inbounds i32, ptr %p, i32 %i
  %v = load i32, ptr %at
  %w = add i32 %v, 1
  store i32 %w, ptr %at
  %next = add nsw i32 %i, {step}
  %more = icmp {pred} i32 %next, {end}
  br i1 %more, label %body, label %done
done:
  ret void
}}
"#
    );
    format!("{HEAD}{child}{}", launch("child", "null", "0"))
}

#[test]
fn counted_loops_of_at_most_64_iterations_are_taken_and_others_are_not() {
    let taken = |ir: &str| thresholded(ir, 1024, Target::default()).1.is_empty();
    assert!(taken(&looping(0, "slt", "64", 1)));
    assert!(taken(&looping(10, "sgt", "0", -1)));
    assert!(taken(&looping(0, "ne", "64", 2)));
    assert!(!taken(&looping(0, "ne", "256", 4)), "64 trips of a loop Clang unrolled by 4 are 256 iterations");
    assert!(!taken(&looping(0, "slt", "65", 1)));
    assert!(!taken(&looping(0, "ne", "7", 2)), "never lands on 7: runs until the counter wraps");
    assert!(!taken(&looping(0, "slt", "%w", 1)), "a bound the data gives");
    let (_, remarks) = thresholded(&looping(0, "ult", "1000", 1), 1024, Target::default());
    assert_eq!(remarks.len(), 1);
    assert!(remarks[0].contains("`child` runs a loop that is not a counted loop of at most 64 iterations"), "{remarks:?}");
}

/// A child whose body is `for (int k = 0; k < 3; k++) p[k] += 1;` as `.cdp`'s `back` writes it
/// before any optimisation: the counter in an alloca, the test C's `int` compared with 0.
const CHILD_AS_BACK_WRITES_IT: &str = r#"
define ptx_kernel void @child(ptr %p, i8 %c, ptr byval(%struct.S) align 8 %s) {
entry:
  %k = alloca i32, align 4
  br label %start
start:
  store i32 0, ptr %k, align 4
  br label %loop.cond
loop.cond:
  %load = load i32, ptr %k, align 4
  %icmp = icmp slt i32 %load, 3
  %bool.int = zext i1 %icmp to i32
  %tobool = icmp ne i32 %bool.int, 0
  br i1 %tobool, label %loop.body, label %loop.end
loop.body:
  %kk = load i32, ptr %k, align 4
  %conv = sext i32 %kk to i64
  %at = getelementptr i32, ptr %p, i64 %conv
  %v = load i32, ptr %at, align 4
  %w = add i32 %v, 1
  store i32 %w, ptr %at, align 4
  br label %loop.step
loop.step:
  %ks = load i32, ptr %k, align 4
  %inc = add i32 %ks, 1
  store i32 %inc, ptr %k, align 4
  br label %loop.cond
loop.end:
  ret void
}
"#;

#[test]
fn a_loop_as_the_kernel_languages_back_writes_it_is_counted_once_its_locals_are_promoted() {
    // As `back` leaves it, the counter is in memory and the branch tests `zext` against 0:
    // no counted loop, which was `.cdp`'s R0502 where Clang's IR of the same source was taken.
    let ir = format!("{HEAD}{CHILD_AS_BACK_WRITES_IT}{}", launch("child", "null", "0"));
    let (_, remarks) = thresholded(&ir, 128, Target::default());
    assert_eq!(remarks.len(), 1, "{remarks:?}");
    assert!(remarks[0].contains("`child` runs a loop that is not a counted loop"), "{remarks:?}");
    // What the driver runs before the pipeline for `.cdp` (`promote_locals`): the counter a
    // `phi` of its header, the branch on the `icmp` itself; the blocks and calls as they were.
    let context = Context::create();
    let module = parse(&context, &ir);
    promote_locals(&module, &crate::back::target_machine(&Target::default(), 3).unwrap()).unwrap();
    let promoted = module.print_to_string().to_string();
    let child = function(&promoted, "child");
    assert!(child.contains("phi i32 [ 0, %start ], [ %inc, %loop.step ]") && child.contains("br i1 %icmp, label %loop.body, label %loop.end"), "{child}");
    assert!(!child.contains("alloca") && !child.contains("zext"), "{child}");
    for block in ["start:", "loop.cond:", "loop.body:", "loop.step:", "loop.end:"] {
        assert!(child.contains(block), "{block} kept: {child}");
    }
    assert!(function(&promoted, "parent").contains("call i32 @__cudaCDP2LaunchDevice("), "the launch is where it was");
    let (after, remarks) = thresholded(&promoted, 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(after.contains("define internal void @child__serial(") && after.contains("call void @child__serial("), "{after}");
}

#[test]
fn what_the_child_calls_is_looked_at_too() {
    let with = |extra: &str, body: &str| {
        let ir = format!("{HEAD}{extra}{}{}", CHILD.replace("  %i = call i32 @index()\n", &format!("{body}  %i = call i32 @index()\n")), launch("child", "null", "0"));
        thresholded(&ir, 1024, Target::default()).1
    };
    let why = |w: &str| vec![format!("launch of `child` not run in the launching thread when small: {w}")];
    assert_eq!(
        with("@sh = addrspace(3) global i32 0\ndefine void @g() {\n  store i32 1, ptr addrspace(3) @sh\n  ret void\n}\n", "  call void @g()\n"),
        why("`child`: `g`, which it calls, uses shared memory: its threads cannot run one after another in the launching thread")
    );
    assert_eq!(with("declare void @_Z8externalv()\n", "  call void @_Z8externalv()\n"), why("`child` calls `external`, which has no definition here"));
    assert_eq!(with("", "  call void asm sideeffect \"nanosleep.u32 1;\", \"\"()\n"), why("`child` contains inline assembly: its threads cannot run one after another in the launching thread"));
    assert_eq!(
        with("declare i32 @llvm.nvvm.read.ptx.sreg.laneid()\n", "  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"),
        why("`child` reads its lane or grid id: its threads cannot run one after another in the launching thread")
    );
    assert_eq!(with("declare i32 @vprintf(ptr, ptr)\n", "  %pr = call i32 @vprintf(ptr null, ptr null)\n"), Vec::<String>::new());
}

#[test]
fn launch_bounds_keep_their_registers() {
    let bounded =
        program().replace("define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) {", "define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) #9 {") + "attributes #9 = { \"nvvm.maxntid\"=\"256\" }\n";
    let (ir, _) = thresholded(&bounded, 128, Target::default());
    assert!(!ir.contains("nvvm.maxnreg"), "{ir}");
}

#[test]
fn kernel_names_read_as_the_source_writes_them() {
    assert_eq!(super::sites::source_name("_Z5childPic1Sd"), "child");
    assert_eq!(super::sites::source_name("_ZN2ns5childEv"), "ns::child");
    assert_eq!(super::sites::source_name("child"), "child");
    assert_eq!(super::sites::source_name("_Z99x"), "_Z99x");
}

/// A launch through a pointer is named so in its remark: which kernel it launches is known at
/// run time only.
#[test]
fn a_launch_through_a_pointer_is_named_so() {
    let through = program().replace("ptr @child, ptr %buf", "ptr %s, ptr %buf");
    assert_ne!(through, program());
    let (_, remarks) = thresholded(&through, 1024, Target::default());
    assert_eq!(remarks.len(), 1, "{remarks:?}");
    assert!(remarks[0].starts_with("launch of a kernel through a pointer not run in the launching thread"), "{remarks:?}");
}

#[test]
fn from_sm_80_the_warp_chooses_between_running_small_grids_together_and_alone() {
    let (ir, _) = thresholded(&at_site(&program()), 128, Target::default());
    let helper = function(&ir, "child__threshold");
    // The choice: rounds together (the sum over the lanes' grids of their threads over the
    // team, a grid counted as one more) at most half those alone (the largest grid), among the
    // lanes that reach the site together, and some grid to run.
    for needle in [
        "%mask = call i32 @llvm.nvvm.activemask()",
        "%want = call i32 @llvm.nvvm.vote.ballot.sync(i32 %mask, i1 %small",
        "%rounds = udiv i32 %up, %team",
        "%rounds.together = call i32 @llvm.nvvm.redux.sync.add(i32 %rounds, i32 %mask)",
        "%rounds.alone = call i32 @llvm.nvvm.redux.sync.umax(i32 %mine, i32 %mask)",
        "%grids = call i32 @llvm.ctpop.i32(i32 %want)",
        "%cost.rounds = add i32 %rounds.together, %grids",
        "%cost = shl i32 %cost.rounds, 1",
        "%cheaper = icmp ule i32 %cost, %rounds.alone",
        "%some = icmp ne i32 %rounds.alone, 0",
        "%together = and i1 %cheaper, %some",
        "call void @llvm.nvvm.bar.warp.sync(i32 %mask)",
    ] {
        assert!(helper.contains(needle), "{needle}\n{helper}");
    }
    // Each grid's six dims and its 40 bytes of arguments (ten words) from its lane.
    assert_eq!(helper.matches("@llvm.nvvm.shfl.sync.idx.i32(i32 %mask").count(), 6 + 10, "{helper}");
    assert!(helper.contains("%team.args = alloca [40 x i8], align 16"), "{helper}");
    // Each lane alone keeps the loops over blocks and threads.
    assert!(helper.contains("alone:") && helper.contains("more.blocks") && helper.contains("more.threads"), "{helper}");
    // Before sm_80 (no `redux.sync`) only the lane alone.
    let sm70 = Target { sm: crate::target::SmVersion(70), ..Target::default() };
    let (ir, _) = thresholded(&at_site(&program()), 128, sm70);
    let helper = function(&ir, "child__threshold");
    assert!(!helper.contains("activemask") && !helper.contains("redux") && !helper.contains("shfl") && helper.contains("more.threads"), "{helper}");
}

#[test]
fn a_grid_whose_arguments_end_inside_a_word_shares_the_last_bytes_one_by_one() {
    // `tiny<<<n, 32>>>(7, 8, 9)`: three `char`s, three bytes of arguments.
    let ir = format!(
        r#"{HEAD}
define ptx_kernel void @tiny(i8 %c, i8 %d, i8 %e) {{
  ret void
}}
define ptx_kernel void @parent(i32 %n) {{
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 4)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store i8 7, ptr %buf, align 64
  %dp = getelementptr inbounds i8, ptr %buf, i64 1
  store i8 8, ptr %dp, align 1
  %ep = getelementptr inbounds i8, ptr %buf, i64 2
  store i8 9, ptr %ep, align 2
{DIMS}  %st = call i32 @__cudaCDP2LaunchDevice(ptr @tiny, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr null)
  br label %done
done:
  ret void
}}
"#
    );
    let ir = at_site(&ir);
    // A buffer of 4 bytes: one whole word.
    let (out, remarks) = thresholded(&ir, 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    let helper = function(&out, "tiny__threshold");
    assert_eq!(helper.matches("%word.shared = ").count(), 1, "{helper}");
    // A buffer of 3 bytes (as a front end may ask for): the word is built from them.
    let (out, remarks) = thresholded(&ir.replace("(i64 64, i64 4)", "(i64 64, i64 3)"), 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    let helper = function(&out, "tiny__threshold");
    assert_eq!(helper.matches("= load i8, ptr %byte.at").count(), 3, "{helper}");
    assert!(!helper.contains("load i32, ptr %word.at"), "{helper}");
    assert!(helper.contains("%team.args = alloca [4 x i8], align 16") && helper.matches("%word.shared = ").count() == 1, "{helper}");
    // Through the pipeline the module is valid and the child's body is the loop's.
    let piped_ir = piped(&ir.replace("(i64 64, i64 4)", "(i64 64, i64 3)"), 128, Target::default());
    assert!(piped_ir.contains("@llvm.nvvm.redux.sync.add"), "{piped_ir}");
}

#[test]
fn the_clean_up_folds_a_teams_shuffles_of_constants_and_no_others() {
    // `child<<<n, 32>>>`: the block's dims are constants once the helper is inlined, and
    // the team's shuffles of them go; the grid's `x` (`n`) is shuffled.
    let ir = piped(&at_site(&program()), 128, Target::default());
    let parent = function(&ir, "parent");
    let values: Vec<&str> = parent.split("@llvm.nvvm.shfl.sync.idx.i32(i32 %mask.i, i32 ").skip(1).map(|rest| rest.split(',').next().unwrap_or("")).collect();
    assert!(!values.is_empty() && values.iter().all(|v| v.starts_with('%')), "{values:?}\n{parent}");
    assert!(parent.contains("@llvm.nvvm.shfl.sync.idx.i32(i32 %mask.i, i32 %n,"), "{parent}");
    // A program's own shuffle of a constant stays: it also waits for its mask's lanes.
    let own = format!(
        "{HEAD}declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)\ndefine ptx_kernel void @k(ptr %p) {{\n  %v = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 7, i32 0, i32 31)\n  store i32 %v, ptr %p, align 4\n  ret void\n}}\n"
    );
    let context = Context::create();
    let module = parse(&context, &own);
    threshold::fold_team_shuffles(&module);
    assert!(module.print_to_string().to_string().contains("call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 7, i32 0, i32 31)"));
}

#[test]
fn a_small_grid_is_kept_for_the_warps_end_where_nothing_launched_later_could_pass_it() {
    let (ir, remarks) = thresholded(&program(), 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    let parent = function(&ir, "parent");
    // The entry: the warp's lanes, and each site's slots, nothing kept yet.
    for needle in [
        "%entry.mask = call i32 @llvm.nvvm.activemask()",
        "store i1 false, ptr %kept, align 1",
        "store { i32, i32, i32 } { i32 1, i32 1, i32 1 }, ptr %kept.grid",
        "= call i32 @child__keep(ptr %thr.args, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, ptr %kept, ptr %kept.grid, ptr %kept.block)",
        // The one end: the warp meets, then runs what its lanes kept.
        "kept.end:",
        "call void @llvm.nvvm.bar.warp.sync(i32 %entry.mask)",
        "%kept.now = load i1, ptr %kept, align 1",
        "call i32 @child__end(ptr %thr.args, ptr %kept.grid, ptr %kept.block, i1 %kept.now)",
    ] {
        assert!(parent.contains(needle), "{needle}\n{parent}");
    }
    assert_eq!(parent.matches("ret void").count(), 1, "{parent}");
    assert!(parent.contains("br label %kept.end") && !parent.contains("GetParameterBuffer") && !parent.contains("LaunchDevice"), "{parent}");
    // At the site: a small grid's dims into the slots and the flag set, else the launch.
    let keep = function(&ir, "child__keep");
    assert!(keep.contains(", label %keep, label %launch") && !keep.contains("in_place") && keep.contains("store i1 true, ptr %kept"), "{keep}");
    assert_eq!(keep.matches("store i32 %").count(), 6, "{keep}");
    assert!(keep.contains("@__cudaCDP2GetParameterBuffer(i64 64, i64 40)") && keep.contains("@__cudaCDP2LaunchDevice(ptr @child"), "{keep}");
    // At the end: the team over the warp, the kept flag its `small`; nothing launched.
    let end = function(&ir, "child__end");
    for needle in ["%want = call i32 @llvm.nvvm.vote.ballot.sync(i32 %mask, i1 %kept)", "@llvm.nvvm.redux.sync.add", "br i1 %kept, label %in_place, label %launch"] {
        assert!(end.contains(needle), "{needle}\n{end}");
    }
    assert!(!end.contains("GetParameterBuffer") && !end.contains("LaunchDevice"), "{end}");
    insta::assert_snapshot!("kept_end", end);
    // Through the pipeline: valid, the helpers inlined, the launch for large grids lowered.
    let ir = piped(&program(), 128, Target::default());
    assert!(!ir.contains("@child__keep(") && !ir.contains("@child__end(") && ir.contains("@__cudaCDP2LaunchDeviceV2("), "{ir}");
}

#[test]
fn a_site_is_not_kept_after_which_a_launch_may_come_in_a_loop_a_device_function_before_sm_80_or_where_a_lane_may_be_held() {
    let kept = |ir: &str, target: Target| thresholded(ir, 128, target).0.contains("@child__keep(");
    assert!(kept(&program(), Target::default()));
    // Two launches in a row: the first is followed by one and stays at its site; the second
    // is kept.
    let twice = program().replace("  br label %done\ndone:", "  br label %again\nagain:\n  %buf2 = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)\n  store ptr %p, ptr %buf2, align 64\n  %st2 = call i32 @__cudaCDP2LaunchDevice(ptr @child, ptr %buf2, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr null)\n  br label %done\ndone:");
    let (ir, _) = thresholded(&twice, 128, Target::default());
    let parent = function(&ir, "parent");
    assert_eq!((parent.matches("call i32 @child__threshold(").count(), parent.matches("call i32 @child__keep(").count()), (1, 1), "{parent}");
    // A call of a function that may launch, after the site.
    let later = format!(
        "{}define void @launcher() {{\n  %b = call ptr @__cudaCDP2GetParameterBuffer(i64 8, i64 0)\n  ret void\n}}\n",
        program().replace("done:\n  ret void", "done:\n  call void @launcher()\n  ret void")
    );
    assert!(!kept(&later, Target::default()));
    // A call of a function that does not launch is no obstacle.
    let harmless =
        format!("{}define void @harmless(ptr %q) {{\n  store i32 1, ptr %q, align 4\n  ret void\n}}\n", program().replace("done:\n  ret void", "done:\n  call void @harmless(ptr %p)\n  ret void"));
    assert!(kept(&harmless, Target::default()));
    // In a loop: reached more than once by a thread.
    let looped = program().replace("  br label %done\ndone:", "  %again = icmp ne i32 %n, 0\n  br i1 %again, label %fill, label %done\ndone:");
    assert!(!kept(&looped, Target::default()));
    // In a device function: its caller's end is not its own.
    assert!(!kept(&program().replace("define ptx_kernel void @parent", "define void @parent"), Target::default()));
    // Before sm_80 (no team) and with inline assembly.
    assert!(!kept(&program(), Target { sm: crate::target::SmVersion(70), ..Target::default() }));
    assert!(!kept(&at_site(&program()), Target::default()));
    // A block's barrier anywhere in the kernel (after some threads returned, a lane waiting at
    // the end would hold it), or in a function it calls; a warp's `__syncwarp` is no obstacle.
    let barrier = program().replace("entry:\n", "entry:\n  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n");
    assert!(!kept(&barrier, Target::default()));
    let called = format!("{}define void @sync() {{\n  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n  ret void\n}}\n", program().replace("entry:\n", "entry:\n  call void @sync()\n"));
    assert!(!kept(&called, Target::default()));
    let warp = format!("{}declare void @llvm.nvvm.bar.warp.sync(i32)\n", program().replace("entry:\n", "entry:\n  call void @llvm.nvvm.bar.warp.sync(i32 -1)\n"));
    assert!(kept(&warp, Target::default()));
    // A function without a body here may wait for anything.
    let unknown = format!("{}declare void @elsewhere()\n", program().replace("entry:\n", "entry:\n  call void @elsewhere()\n"));
    assert!(!kept(&unknown, Target::default()));
}

/// A launch whose blocks alone have more threads than the threshold is never small: it is left
/// as it is with `R0502`, no helper and no tag (KLAP's graph colouring launches blocks of 256
/// threads). Clang's form (the block's `dim3` in a local through constant stores, one of them
/// an `i64` of two fields) and by value (the `.cdp` front end's); a block written by a call
/// (a `memcpy` into it) or of 32 threads stays a candidate.
#[test]
fn a_launch_whose_blocks_alone_are_too_large_is_never_run_in_place() {
    let printed = |ir: &str| parse(&Context::create(), ir).print_to_string().to_string();
    let never = "R0502: launch of `child` not run in the launching thread when small: its blocks alone have 256 threads, more than 128: it is never that small";
    let wide = program().replace("store i32 32, ptr %block, align 4", "store i32 256, ptr %block, align 4");
    let (after, remarks) = thresholded(&wide, 128, Target::default());
    assert_eq!((after, remarks.iter().map(|r| format!("R0502: {r}")).collect::<Vec<_>>()), (printed(&wide), vec![never.to_string()]));
    let merged = program()
        .replace("  store i32 32, ptr %block, align 4\n  %by = getelementptr inbounds i8, ptr %block, i64 4\n  store i32 1, ptr %by, align 4\n", "  store i64 4294967552, ptr %block, align 4\n");
    assert_ne!(merged, program());
    assert_eq!(thresholded(&merged, 128, Target::default()).1.len(), 1);
    // At 1024 the same launch may be small; so may a block of 32 threads, or one a call writes.
    assert!(thresholded(&wide, 1024, Target::default()).1.is_empty());
    assert!(thresholded(&program(), 128, Target::default()).1.is_empty());
    let copied = format!(
        "{}declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n",
        wide.replace("store i32 256, ptr %block, align 4", "store i32 256, ptr %block, align 4\n  call void @llvm.memcpy.p0.p0.i64(ptr %block, ptr %s, i64 4, i1 false)")
    );
    assert!(thresholded(&copied, 128, Target::default()).1.is_empty());
}
