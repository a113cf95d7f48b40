//! Warp aggregation on LLVM IR, IR in, IR out: the modules of `threshold_tests`, through
//! [`aggregate::warp`] alone and through the whole pipeline.

use super::aggregate::Granularity;
use super::tests::function;
use super::threshold_tests::{launch, parse, program, CHILD, HEAD};
use super::*;
use inkwell::context::Context;

/// The module after warp aggregation alone, and the remarks as `code: message: label`.
pub(super) fn aggregated(ir: &str, asked: Granularity) -> (String, Vec<String>) {
    let context = Context::create();
    let module = parse(&context, ir);
    let source = SourceText::default();
    let readers = aggregate::index_readers(&module);
    let remarks = aggregate::aggregate_with(&module, &launch::Sites::of(&module, &source), asked, &source, &readers);
    module.verify().unwrap_or_else(|e| panic!("aggregation left an invalid module: {e}\n{}", module.print_to_string()));
    (module.print_to_string().to_string(), remarks.iter().map(|d| format!("{}: {}: {}", d.code.as_str(), d.message, d.labels[0].message)).collect())
}

#[test]
fn off_or_with_nothing_to_take_the_module_is_untouched() {
    let printed = |ir: &str| parse(&Context::create(), ir).print_to_string().to_string();
    let (after, remarks) = aggregated(&program(), Granularity::Off);
    assert_eq!(after, printed(&program()));
    assert!(remarks.is_empty());
    // The per-thread stream, a constant that is neither the NULL stream nor a named one.
    let per_thread = format!("{HEAD}{CHILD}{}", launch("child", "inttoptr (i64 2 to ptr)", "0"));
    let (after, remarks) = aggregated(&per_thread, Granularity::Warp);
    assert_eq!(after, printed(&per_thread));
    assert_eq!(remarks, ["R0500: launch of `child` not aggregated: only launches into the NULL stream or a named stream are aggregated"]);
}

/// A launch into a named stream (a value the thread holds) is aggregated at its site at every
/// granularity: the lanes whose stream is the first valid lane's make one launch of `C__agg`
/// into that stream, the others (and every lane where the group falls back) their own launch
/// into theirs, so that the stream orders each with the thread's other work in it.
#[test]
fn a_warps_launches_into_a_named_stream_become_one_launch_into_that_stream() {
    let ir = format!("{HEAD}{CHILD}{}", launch("child", "%s", "0"));
    for asked in [Granularity::Warp, Granularity::Auto, Granularity::Block, Granularity::Grid] {
        let (after, remarks) = aggregated(&ir, asked);
        let expected: Vec<String> = match asked {
            Granularity::Block | Granularity::Grid => vec!["R0501: launch of `child` aggregated per warp, at its site: a launch into a named stream is aggregated at its site, into its stream, which orders it with the thread's other launches there".into()],
            _ => Vec::new(),
        };
        assert_eq!(remarks, expected, "{asked:?}");
        let parent = function(&after, "parent");
        assert!(parent.contains("call i32 @child__warp(ptr %agg.args, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, ptr %s)"), "{asked:?}: {parent}");
        assert!(!after.contains("parent__agg_end"), "{asked:?}: nothing waits for the end of the block or grid: {after}");
        let helper = function(&after, "child__warp");
        assert!(helper.starts_with("define internal i32 @child__warp(ptr %args, ptr byval(%struct.dim3) align 4 %grid.dim, ptr byval(%struct.dim3) align 4 %block.dim, ptr %0)"), "{helper}");
        // The group: valid lanes whose stream's two words are the first valid lane's.
        assert!(helper.contains("%first = call i32 @llvm.cttz.i32(i32 %valid.lanes, i1 false)"), "{helper}");
        assert_eq!(helper.matches("call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %mask, i32 %stream.").count(), 2, "{helper}");
        assert!(helper.contains("%group = call i32 @llvm.nvvm.vote.ballot.sync(i32 %mask, i1 %valid.same)"), "{helper}");
        // Both launches, the aggregated kernel's and the lane's own, go into the stream.
        let launches: Vec<&str> = helper.lines().filter(|l| l.contains("call i32 @__cudaCDP2LaunchDevice(")).collect();
        assert_eq!(launches.len(), 2, "{helper}");
        assert!(launches[0].contains("(ptr @child__agg,") && launches[1].contains("(ptr @child,"), "{launches:?}");
        assert!(launches.iter().all(|l| l.contains("i32 0, ptr %0)")), "{launches:?}");
    }
    // The NULL stream's helper compares no streams.
    let (null, _) = aggregated(&program(), Granularity::Warp);
    assert!(!function(&null, "child__warp").contains("stream"), "{null}");
}

/// A launch into a stream each thread made into a local of its own is left alone with `R0500`:
/// no two lanes launch into one stream. Also where thresholding's helper holds the launch of a
/// grid too large to run in place, its stream a parameter of the helper.
#[test]
fn a_launch_into_a_stream_each_thread_made_is_left_alone() {
    let own = format!("{HEAD}{CHILD}{}", launch("child", "%own", "0"))
        .replace(
            "  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
            "  %own.at = alloca ptr, align 8\n  %made = call i32 @cudaStreamCreateWithFlags(ptr %own.at, i32 1)\n  %own = load ptr, ptr %own.at, align 8\n  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
        )
        + "declare i32 @cudaStreamCreateWithFlags(ptr, i32)\n";
    let why = "R0500: launch of `child` not aggregated: each thread launches into a stream it made into a local of its own (`cudaStreamCreateWithFlags`): no two lanes of a warp launch into one stream, so aggregation has nothing to gather";
    for asked in [Granularity::Warp, Granularity::Auto, Granularity::Grid] {
        let (after, remarks) = aggregated(&own, asked);
        assert_eq!(remarks, [why], "{asked:?}");
        assert!(!after.contains("@child__warp") && !after.contains("@child__agg"), "{asked:?}: {after}");
    }
    // Through thresholding: the grid of `n` threads may be too large to run in place, and its
    // launch in `child__threshold` goes into the helper's stream parameter.
    let context = Context::create();
    let module = parse(&context, &own);
    let options = PipelineOptions { aggregate: Granularity::Warp, launch_threshold: 128, pass_remarks: true, ..PipelineOptions::default() };
    let remarks = run(&module, &options, &SourceText::default()).expect("the pipeline accepts the module");
    let aggregation: Vec<String> = remarks.iter().filter(|d| d.code == crate::diag::Code::AggregationRemark).map(|d| d.labels[0].message.clone()).collect();
    assert_eq!(aggregation.len(), 1, "{aggregation:?}");
    assert!(aggregation[0].starts_with("each thread launches into a stream it made"), "{aggregation:?}");
    let out = module.print_to_string().to_string();
    assert!(out.contains("@child__threshold") && !out.contains("@child__warp"), "{out}");
    // A stream the block shares (loaded from `__shared__` memory) is aggregated as before.
    let shared = format!("{HEAD}{CHILD}{}", launch("child", "%blk", "0")).replace(
        "  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
        "  %blk = load ptr, ptr addrspace(3) @block.stream, align 8\n  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
    ) + "@block.stream = internal addrspace(3) global ptr undef, align 8\n";
    let (after, remarks) = aggregated(&shared, Granularity::Warp);
    assert!(remarks.is_empty() && after.contains("@child__warp"), "{remarks:?}");
}

#[test]
fn a_warps_launches_become_records_and_one_launch_of_the_aggregated_clone() {
    let (ir, remarks) = aggregated(&program(), Granularity::Warp);
    assert!(remarks.is_empty(), "{remarks:?}");
    // The site calls the helper with the local argument block; the helper meets the warp.
    let parent = function(&ir, "parent");
    assert!(parent.contains("%agg.args = alloca [40 x i8], align 64") && parent.contains("call i32 @child__warp(ptr %agg.args,") && !parent.contains("GetParameterBuffer"), "{parent}");
    insta::assert_snapshot!("warp_helper", function(&ir, "child__warp"));
    // The aggregated kernel: a record per block, then the copy with the launch's built-ins.
    let agg = function(&ir, "child__agg");
    // Thread 0 counts the block done after its body, with a release fence of the device's
    // scope, not a sequentially consistent one before the body.
    let body = agg.find("call void @child__aggregated(").expect("the body");
    let count = agg.find("atomicrmw add ptr %done, i32 1 syncscope(\"device\") monotonic").expect("the count");
    assert!(body < count && agg[..count].contains("fence syncscope(\"device\") release") && !agg.contains("membar"), "{agg}");
    insta::assert_snapshot!("agg_kernel", agg);
    let copy = function(&ir, "child__aggregated");
    assert!(copy.contains("call i32 @index__aggregated(i32 %tid.x,") && !copy.contains("sreg"), "{copy}");
    assert!(ir.contains("\"nvvm.maxnreg\"=\"64\""), "{ir}");
}

/// The leader reads its last error before the launch of `child__agg` and, where that launch
/// failed, after it (`warp.rs`, "A thread's last error"): through the module's declarations of
/// the two functions, whichever of their names (C's or libcudadevrt's `__cudaCDP2` symbol) it
/// uses, new ones by the C names where it has none, and a declaration of another type (IR from
/// elsewhere) called as the function it names rather than refused.
#[test]
fn the_leader_reads_back_the_error_of_a_failed_aggregated_launch() {
    let (ir, _) = aggregated(&program(), Granularity::Warp);
    let helper = function(&ir, "child__warp");
    let lead = helper.split("\nlead:").nth(1).expect("the leader's block");
    assert!(lead.contains("%prior.error = call i32 @cudaPeekAtLastError()") && lead.contains("br i1 %no.prior.error, label %count, label %launched"), "{helper}");
    let clear = helper.split("\nclear.error:").nth(1).expect("the block that reads the error back");
    assert!(clear.trim_start().starts_with("; preds = %agg.launched") && clear.contains("call i32 @cudaGetLastError()"), "{helper}");
    assert!(helper.contains("%fallback = phi i1 [ false, %agg.launched ], [ true, %clear.error ], [ true, %lead ]"), "{helper}");
    assert!(ir.contains("declare i32 @cudaPeekAtLastError()") && ir.contains("declare i32 @cudaGetLastError()"), "{ir}");

    let cdp2 = format!("{}\ndeclare i32 @__cudaCDP2GetLastError()\ndeclare i32 @__cudaCDP2PeekAtLastError()\n", program());
    let (ir, _) = aggregated(&cdp2, Granularity::Warp);
    let helper = function(&ir, "child__warp");
    assert!(helper.contains("call i32 @__cudaCDP2PeekAtLastError()") && helper.contains("call i32 @__cudaCDP2GetLastError()") && !ir.contains("@cudaGetLastError"), "{ir}");

    let other_type = format!("{}\ndeclare void @cudaGetLastError(i32)\n", program());
    let (ir, _) = aggregated(&other_type, Granularity::Warp);
    assert!(function(&ir, "child__warp").contains("call i32 @cudaGetLastError()"), "{ir}");
}

/// Through the pipeline at V2: both launches of the warp's helper stay in the documented V1
/// sequence, marked `!cdpc.launch.v1`: the leader's launch of `child__agg` (its lanes wait for
/// it at a shuffle, which could hang the V2 entry point) and the threads' own launch of `child`
/// where the group falls back (at V2 they hung the grid: docs/AGGREGATION.md, "Why the warp's
/// launches are V1"). At V1 both are V1 too.
#[test]
fn through_the_pipeline_both_of_the_warps_launches_stay_v1() {
    for abi in [crate::target::LaunchAbi::V2, crate::target::LaunchAbi::V1] {
        let context = Context::create();
        let module = parse(&context, &program());
        let target = Target { launch_abi: abi, ..Target::default() };
        let options = PipelineOptions { target, launch_threshold: 0, aggregate: Granularity::Warp, pass_remarks: true, ..PipelineOptions::default() };
        assert!(run(&module, &options, &SourceText::default()).unwrap().is_empty());
        cleanup(&module, &crate::back::target_machine(&target, 3).unwrap(), true).unwrap();
        module.verify().unwrap();
        let ir = module.print_to_string().to_string();
        let parent = function(&ir, "parent");
        let v1_of = |kernel: &str| parent.lines().any(|l| l.contains("call i32 @__cudaCDP2LaunchDevice(ptr nonnull @") && l.contains(&format!("@{kernel},")));
        let v2_of = |kernel: &str| parent.contains(&format!("@__cudaCDP2GetParameterBufferV2(ptr nonnull @{kernel},"));
        assert!(v1_of("child__agg") && !v2_of("child__agg"), "{abi}: {parent}");
        assert!(v1_of("child") && !v2_of("child") && !parent.contains("LaunchDeviceV2"), "{abi}: {parent}");
        // The aggregated launch's buffer is the V1 one, 12 bytes aligned to 64; both launch
        // calls are the ones marked.
        assert!(parent.contains("call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 12)"), "{parent}");
        let marked: Vec<&str> = parent.lines().filter(|l| l.contains("!cdpc.launch.v1")).collect();
        assert!(marked.len() == 2 && marked.iter().any(|l| l.contains("@child__agg,")) && marked.iter().any(|l| l.contains("@child,")), "{abi}: {marked:?}\n{parent}");
        assert!(!ir.contains("@child__warp("), "{ir}");
    }
}

#[test]
fn a_child_with_a_barrier_is_aggregated_only_with_equal_block_sizes() {
    let barrier = program().replace("  %i = call i32 @index()\n", "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n  %i = call i32 @index()\n");
    let (ir, _) = aggregated(&barrier, Granularity::Warp);
    assert!(function(&ir, "child__warp").contains("%sizes.differ = icmp ne i32 %min.threads, %max.threads"), "{ir}");
    let (ir, _) = aggregated(&program(), Granularity::Warp);
    assert!(!function(&ir, "child__warp").contains("sizes.differ"), "{ir}");
}

#[test]
fn streams_and_dynamic_sizes_are_left_with_r0500() {
    let cases = [
        ("inttoptr (i64 3 to ptr)", "0", "tail launches (cudaStreamTailLaunch) are not aggregated"),
        ("inttoptr (i64 4 to ptr)", "0", "fire-and-forget launches (cudaStreamFireAndForget) are not aggregated"),
        ("null", "%n", "the launch's dynamic shared memory is not the same for every thread (a constant, `warpSize`, or a local only its declaration stores): the aggregated grid's blocks would each need their own"),
    ];
    for (stream, shmem, why) in cases {
        let (_, remarks) = aggregated(&format!("{HEAD}{CHILD}{}", launch("child", stream, shmem)), Granularity::Warp);
        assert_eq!(remarks, [format!("R0500: launch of `child` not aggregated: {why}")]);
    }
    // A constant dynamic size is taken, and the aggregated launch asks for it.
    let (ir, remarks) = aggregated(&format!("{HEAD}{CHILD}{}", launch("child", "null", "256")), Granularity::Warp);
    assert!(
        remarks.is_empty()
            && function(&ir, "child__warp")
                .contains("ptr @child__agg, ptr %agg.buf, ptr byval(%struct.dim3) align 4 %agg.grid.slot, ptr byval(%struct.dim3) align 4 %agg.block.slot, i32 256, ptr null)"),
        "{ir}"
    );
    // Block and grid granularity take the launch at the end of the block (`block_tests`).
    for asked in [Granularity::Block, Granularity::Grid] {
        let (ir, remarks) = aggregated(&program(), asked);
        assert!(remarks.is_empty() && !ir.contains("@child__warp(") && ir.contains("call void @parent__agg_end()"), "{remarks:?}\n{ir}");
    }
}

#[test]
fn thresholding_then_aggregation_aggregates_the_launch_left_for_large_grids() {
    let context = Context::create();
    let module = parse(&context, &super::threshold_tests::at_site(&program()));
    let options = PipelineOptions { target: Target::default(), launch_threshold: 128, aggregate: Granularity::Warp, pass_remarks: true, ..PipelineOptions::default() };
    assert!(run(&module, &options, &SourceText::default()).unwrap().is_empty());
    module.verify().unwrap();
    let ir = module.print_to_string().to_string();
    assert!(function(&ir, "child__threshold").contains("call i32 @child__warp(ptr"), "{ir}");
}

#[test]
fn tables_come_from_a_static_pool_then_the_heap() {
    let (ir, _) = aggregated(&program(), Granularity::Warp);
    // 80-byte records, 32 to a chunk: 2048 chunks fit 8 MiB, one bit each in 64 words.
    assert!(ir.contains("@child__agg_pool = internal addrspace(1) global [5242880 x i8] zeroinitializer, align 16"), "{ir}");
    assert!(ir.contains("@child__agg_pool_used = internal addrspace(1) global [64 x i32] zeroinitializer, align 4"), "{ir}");
    let table = function(&ir, "child__agg_table");
    // A table larger than a chunk (32 x 80 bytes, a block's copy of more records) is the heap's.
    assert!(table.contains("%fits = icmp ule i64 %bytes, 2560") && table.contains("br i1 %fits, label %look, label %heap"), "{table}");
    insta::assert_snapshot!("pool_table", table);
    let give_back = function(&ir, "child__agg_give_back");
    assert!(give_back.contains("%in.pool = icmp ult i64 %offset, 5242880") && give_back.contains("atomicrmw and ptr %word") && give_back.contains("call void @free(ptr %table)"), "{give_back}");
}

/// Sites of one child launched alike (two kernels' launches of `child`, no shared memory)
/// call one helper, kept a function (`noinline`): one copy of the warp's machinery; a site that
/// launches it otherwise (16 bytes of shared memory) keeps its own, always-inline. Through
/// LLVM's optimisation the shared helper stays one function that both kernels call.
#[test]
fn sites_of_one_child_launched_alike_share_one_helper() {
    let ir = format!("{HEAD}{CHILD}{}{}{}", launch("child", "null", "0"), launch("child", "null", "0").replace("@parent(", "@twin("), launch("child", "null", "16").replace("@parent(", "@other("));
    let (after, remarks) = aggregated(&ir, Granularity::Warp);
    assert!(remarks.is_empty(), "{remarks:?}");
    let callee = |kernel: &str| {
        let body = function(&after, kernel);
        let at = body.find("call i32 @child__warp").unwrap_or_else(|| panic!("{body}")) + "call i32 @".len();
        body[at..].split('(').next().unwrap().to_string()
    };
    assert_eq!(callee("parent"), "child__warp");
    assert_eq!(callee("twin"), "child__warp");
    assert_ne!(callee("other"), "child__warp");
    let attributes = |f: &str| {
        let define = function(&after, f).lines().next().unwrap();
        let group = define.rsplit('#').next().unwrap().trim_end_matches(" {").to_string();
        after.lines().find(|l| l.starts_with(&format!("attributes #{group} = "))).unwrap_or_else(|| panic!("{define}")).to_string()
    };
    let shared = attributes("child__warp");
    assert!(shared.contains("noinline") && !shared.contains("alwaysinline"), "{shared}");
    let own = attributes(&callee("other"));
    assert!(own.contains("alwaysinline") && !own.contains("noinline"), "{own}");
    assert_eq!(after.matches("define internal i32 @child__warp").count(), 2, "{after}");

    let optimised = optimised_at(&ir, Granularity::Warp);
    for kernel in ["parent", "twin"] {
        let body = function(&optimised, kernel);
        assert!(body.contains("@child__warp(") && !body.contains("ballot"), "{body}");
    }
    assert!(function(&optimised, "other").contains("ballot"), "{optimised}");
}

/// Sites whose launches pass more than 64 bytes of arguments keep their own helpers, always
/// inline: a shared one would take the arguments through its callers' stack frames (KLAP's
/// 136-byte structs: `tests/struct_args_stack.rs`).
#[test]
fn sites_with_large_arguments_keep_their_own_helpers() {
    let large = |ir: String| ir.replace("@__cudaCDP2GetParameterBuffer(i64 64, i64 40)", "@__cudaCDP2GetParameterBuffer(i64 64, i64 136)");
    let ir = format!("{HEAD}{CHILD}{}{}", large(launch("child", "null", "0")), large(launch("child", "null", "0").replace("@parent(", "@twin(")));
    let (after, remarks) = aggregated(&ir, Granularity::Warp);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert_eq!(after.matches("define internal i32 @child__warp").count(), 2, "{after}");
    for line in after.lines().filter(|l| l.starts_with("define internal i32 @child__warp")) {
        let group = line.rsplit('#').next().unwrap().trim_end_matches(" {");
        let attributes = after.lines().find(|l| l.starts_with(&format!("attributes #{group} = "))).unwrap();
        assert!(attributes.contains("alwaysinline") && !attributes.contains("noinline"), "{attributes}");
    }
}

/// Sites of one child in kernels with line tables (`-lineinfo`: each launch's calls carry its
/// own `!dbg` line) share one helper as well, and the shared helper carries no line at all: it
/// is no one site's, and a function of its own has no `DISubprogram` for the kernels' lines to
/// belong to. The module verifies after aggregation and after LLVM's optimisation.
#[test]
fn sites_with_their_own_lines_share_a_helper_that_has_none() {
    let with_line = |ir: String, kernel: &str, line: u32| {
        let ir = ir.replacen(&format!("@{kernel}(ptr %p, i32 %n, ptr %s) {{"), &format!("@{kernel}(ptr %p, i32 %n, ptr %s) !dbg !{line}0 {{"), 1);
        let ir = ir.replacen("@__cudaCDP2GetParameterBuffer(i64 64, i64 40)\n", &format!("@__cudaCDP2GetParameterBuffer(i64 64, i64 40), !dbg !{line}1\n"), 1);
        let at = ir.find("%st = call i32 @__cudaCDP2LaunchDevice").expect("a launch");
        let end = at + ir[at..].find('\n').unwrap();
        format!("{}, !dbg !{line}1{}", &ir[..end], &ir[end..])
    };
    let debug_info = r#"
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2}
!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "app.cu", directory: "/src")
!2 = !{i32 2, !"Debug Info Version", i32 3}
!3 = !DISubroutineType(types: !{})
!40 = distinct !DISubprogram(name: "parent", scope: !1, file: !1, line: 4, type: !3, unit: !0, spFlags: DISPFlagDefinition)
!41 = !DILocation(line: 6, column: 5, scope: !40)
!90 = distinct !DISubprogram(name: "twin", scope: !1, file: !1, line: 9, type: !3, unit: !0, spFlags: DISPFlagDefinition)
!91 = !DILocation(line: 11, column: 5, scope: !90)
"#;
    let parent = with_line(launch("child", "null", "0"), "parent", 4);
    let twin = with_line(launch("child", "null", "0").replace("@parent(", "@twin("), "twin", 9);
    let ir = format!("{HEAD}{CHILD}{parent}{twin}{debug_info}");
    assert_eq!(ir.matches(", !dbg !").count(), 4, "{ir}");
    let (after, remarks) = aggregated(&ir, Granularity::Warp);
    assert!(remarks.is_empty(), "{remarks:?}");
    for kernel in ["parent", "twin"] {
        assert!(function(&after, kernel).contains("call i32 @child__warp("), "{after}");
    }
    assert_eq!(after.matches("define internal i32 @child__warp").count(), 1, "{after}");
    let helper = function(&after, "child__warp");
    assert!(!helper.contains("!dbg"), "{helper}");
    let optimised = optimised_at(&ir, Granularity::Warp);
    for kernel in ["parent", "twin"] {
        assert!(function(&optimised, kernel).contains("@child__warp("), "{optimised}");
    }
}

/// Through LLVM's optimisation, the warp's loops (the leader's count of its records, the
/// pool's search for a free chunk) stay loops, as written: each unrolled copy is PTX that LLVM
/// and ptxas compile in every module with a warp-aggregated site (about 85 lines a site).
#[test]
fn the_warps_loops_stay_rolled_through_the_optimiser() {
    let ir = optimised_at(&program(), Granularity::Warp);
    let parent = function(&ir, "parent");
    // The helper inlined into the parent, its loops there once each.
    assert!(parent.contains("ballot") && parent.contains("atomicrmw or"), "{parent}");
    for unrolled in [".epil", "unr-lcssa", ".peel", "claim.i.1", "next.word.i.1"] {
        assert!(!parent.contains(unrolled), "{unrolled}: {parent}");
    }
    assert!(parent.matches("!llvm.loop").count() >= 3, "{parent}");
}

/// The module `ir` after the whole pipeline aggregating at `asked`, the clean-up and LLVM's
/// `-O3`, as the compile runs them.
pub(super) fn optimised_at(ir: &str, asked: Granularity) -> String {
    let context = Context::create();
    let module = parse(&context, ir);
    let target = Target::default();
    let options = PipelineOptions { target, aggregate: asked, ..PipelineOptions::default() };
    run(&module, &options, &SourceText::default()).expect("the pipeline accepts the module");
    let tm = crate::back::target_machine(&target, 3).unwrap();
    cleanup(&module, &tm, true).unwrap();
    crate::back::optimize(&module, &tm, 3).unwrap();
    module.verify().unwrap();
    module.print_to_string().to_string()
}

/// The module after the whole pipeline (no clean-up) aggregating at `asked`, and the remarks
/// as [`aggregated`] gives them.
fn through_pipeline(ir: &str, asked: Granularity, threshold: u32) -> (String, Vec<String>) {
    let context = Context::create();
    let module = parse(&context, ir);
    let options = PipelineOptions { target: Target::default(), launch_threshold: threshold, aggregate: asked, pass_remarks: true, ..PipelineOptions::default() };
    let remarks = run(&module, &options, &SourceText::default()).expect("the pipeline accepts the module");
    module.verify().unwrap();
    (module.print_to_string().to_string(), remarks.iter().map(|d| format!("{}: {}: {}", d.code.as_str(), d.message, d.labels[0].message)).collect())
}

/// A dynamic shared memory size every run agrees on (`const int warps = 128 / warpSize`, kept
/// in a local as unoptimised code keeps it) is taken as the constant it is; one a thread may
/// see otherwise is not.
#[test]
fn a_uniform_dynamic_shared_memory_size_is_taken_as_its_constant() {
    let with_shmem = |body: &str| {
        let parent = launch("child", "null", "%sh").replace("entry:\n", &format!("entry:\n  %wslot = alloca i32, align 4\n{body}  %wl = load i32, ptr %wslot, align 4\n  %sh = mul i32 %wl, 64\n"));
        format!("{HEAD}declare i32 @llvm.nvvm.read.ptx.sreg.warpsize()\n{CHILD}{parent}")
    };
    let uniform = with_shmem("  %ws = call i32 @llvm.nvvm.read.ptx.sreg.warpsize()\n  %warps = udiv i32 128, %ws\n  store i32 %warps, ptr %wslot, align 4\n");
    for asked in [Granularity::Warp, Granularity::Block, Granularity::Grid] {
        let (ir, remarks) = through_pipeline(&uniform, asked, 0);
        assert!(remarks.is_empty(), "{asked:?}: {remarks:?}");
        assert!(ir.contains("@child__agg("), "{ir}");
    }
    let (ir, _) = through_pipeline(&uniform, Granularity::Warp, 0);
    assert!(function(&ir, "child__warp").contains("i32 256"), "{ir}");
    // Stored twice, or from the thread's index: not one value.
    let twice = with_shmem("  store i32 4, ptr %wslot, align 4\n  store i32 %n, ptr %wslot, align 4\n");
    let per_thread = with_shmem("  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  store i32 %t, ptr %wslot, align 4\n");
    for ir in [twice, per_thread] {
        let (_, remarks) = through_pipeline(&ir, Granularity::Warp, 0);
        assert_eq!(remarks, ["R0500: launch of `child` not aggregated: the launch's dynamic shared memory is not the same for every thread (a constant, `warpSize`, or a local only its declaration stores): the aggregated grid's blocks would each need their own"]);
    }
}

/// A launch through a local that holds one kernel's address on every run is a launch of that
/// kernel, for thresholding and aggregation alike; a local stored twice is a launch through a
/// pointer.
#[test]
fn a_kernel_pointer_that_holds_one_kernel_is_that_kernel() {
    let through = |body: &str| {
        let parent = launch("child", "null", "0")
            .replace("entry:\n", &format!("entry:\n  %kslot = alloca ptr, align 8\n{body}  %k = load ptr, ptr %kslot, align 8\n"))
            .replace("ptr @child, ptr %buf", "ptr %k, ptr %buf");
        format!("{HEAD}{CHILD}{parent}")
    };
    let one = through("  store ptr @child, ptr %kslot, align 8\n");
    let (ir, remarks) = through_pipeline(&one, Granularity::Warp, 0);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(ir.contains("@child__agg("), "{ir}");
    let (ir, remarks) = through_pipeline(&one, Granularity::Off, 128);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(ir.contains("@child__serial"), "{ir}");
    let two = through("  store ptr @child, ptr %kslot, align 8\n  store ptr @parent, ptr %kslot, align 8\n");
    let (_, remarks) = through_pipeline(&two, Granularity::Warp, 0);
    assert_eq!(remarks.len(), 1, "{remarks:?}");
    assert!(remarks[0].starts_with("R0500: launch of a kernel through a pointer not aggregated"), "{remarks:?}");
}

/// `program()` with its launch behind `guard` (instructions that compute `%first`), the
/// launch made where `%first` is `launch_if`.
pub(super) fn guarded(guard: &str, launch_if: bool) -> String {
    let (go, skip) = if launch_if { ("go", "done") } else { ("done", "go") };
    program().replace(
        "  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)\n",
        &format!("{guard}  br i1 %first, label %{go}, label %{skip}\ngo:\n  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)\n"),
    ) + "declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()\n"
}

/// A launch made only where the thread's index in its block equals a constant (one lane of
/// a warp) is left alone at warp granularity, with `R0500`: nothing to gather, and the helper
/// cost `mandelbrot_block` 62 registers against 40. In both the optimised form and the front
/// ends' (the index in a local, `(int)(t == 0) != 0`).
#[test]
fn a_launch_of_one_lane_per_warp_is_left_alone() {
    let linear = "  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()\n  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n  %m = mul i32 %ty, %nx\n  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %t = add i32 %m, %tx\n";
    let optimised = format!("{linear}  %first = icmp eq i32 %t, 0\n");
    let front_end = format!("  %t.addr = alloca i32, align 4\n{linear}  store i32 %t, ptr %t.addr, align 4\n  %ld = load i32, ptr %t.addr, align 4\n  %is0 = icmp eq i32 %ld, 0\n  %wide = zext i1 %is0 to i32\n  %first = icmp ne i32 %wide, 0\n");
    let why = "R0500: launch of `child` not aggregated: the launch is made only where `threadIdx.y * blockDim.x + threadIdx.x` equals a constant: no two lanes of a warp make it together in blocks of one or two dimensions, so aggregation per warp has nothing to gather";
    for guard in [&optimised, &front_end] {
        let ir = guarded(guard, true);
        let (after, remarks) = aggregated(&ir, Granularity::Warp);
        assert_eq!(remarks, [why]);
        assert_eq!(after, parse(&Context::create(), &ir).print_to_string().to_string(), "left alone, the module is untouched");
    }
    // `threadIdx.x != 0` false, and the global index.
    let tx = "  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n";
    let (_, remarks) = aggregated(&guarded(&format!("{tx}  %first = icmp ne i32 %tx, 0\n"), false), Granularity::Warp);
    assert!(remarks.len() == 1 && remarks[0].contains("only where `threadIdx.x` equals a constant"), "{remarks:?}");
    let global = "  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n  %base = mul i32 %nx, %bx\n  %i = add i32 %tx, %base\n  %first = icmp eq i32 %i, 5\n";
    let (_, remarks) = aggregated(&guarded(&format!("{tx}{global}"), true), Granularity::Warp);
    assert!(remarks.len() == 1 && remarks[0].contains("only where `blockIdx.x * blockDim.x + threadIdx.x` equals a constant"), "{remarks:?}");
    // Lanes that may launch together are aggregated as before: all but one lane (`t != 0`),
    // the first sixteen, a value loaded from memory, and `threadIdx.y` alone.
    for (guard, launch_if) in [
        (optimised.clone(), false),
        (format!("{tx}  %first = icmp ult i32 %tx, 16\n"), true),
        ("  %v = load i32, ptr %p, align 4\n  %first = icmp eq i32 %v, 0\n".to_string(), true),
        ("  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()\n  %first = icmp eq i32 %ty, 0\n".to_string(), true),
    ] {
        let (ir, remarks) = aggregated(&guarded(&guard, launch_if), Granularity::Warp);
        assert!(remarks.is_empty() && function(&ir, "parent").contains("call i32 @child__warp("), "{guard}\n{remarks:?}\n{ir}");
    }
}

/// A launch made only where the lane equals a constant (`threadIdx.x % 32`, `& 31` as LLVM
/// folds `& (warpSize - 1)`, the lane id itself: `cdpAdvancedQuicksort`'s `lane_id == 0`) is
/// one lane's per warp, left alone at warp granularity; the block's warps may still make it
/// together, so block granularity gathers it.
#[test]
fn a_launch_of_one_lane_of_each_warp_is_left_alone_per_warp_only() {
    let tx = "  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
";
    let why = "R0500: launch of `child` not aggregated: the launch is made only where the lane (`threadIdx.x % 32`) equals a constant: no two lanes of a warp make it together in blocks of one dimension, so aggregation per warp has nothing to gather";
    let lanes = [
        format!(
            "{tx}  %lane = and i32 %tx, 31
  %first = icmp eq i32 %lane, 0
"
        ),
        format!(
            "{tx}  %lane = and i32 31, %tx
  %first = icmp eq i32 %lane, 3
"
        ),
        format!(
            "{tx}  %lane = urem i32 %tx, 32
  %first = icmp eq i32 %lane, 0
"
        ),
        "  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %first = icmp eq i32 %lane, 0
"
        .to_string(),
    ];
    for guard in &lanes {
        let ir = guarded(guard, true)
            + "declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
";
        let (after, remarks) = aggregated(&ir, Granularity::Warp);
        assert_eq!(remarks, [why], "{guard}");
        assert_eq!(after, parse(&Context::create(), &ir).print_to_string().to_string(), "left alone, the module is untouched");
        let (after, remarks) = aggregated(&ir, Granularity::Block);
        assert!(remarks.is_empty() && after.contains("parent__agg_end"), "{guard}: {remarks:?}");
    }
    // Not the lane: another mask, another modulus.
    for guard in [
        format!(
            "{tx}  %lane = and i32 %tx, 15
  %first = icmp eq i32 %lane, 0
"
        ),
        format!(
            "{tx}  %lane = urem i32 %tx, 64
  %first = icmp eq i32 %lane, 0
"
        ),
    ] {
        let (ir, remarks) = aggregated(&guarded(&guard, true), Granularity::Warp);
        assert!(
            remarks.is_empty() && function(&ir, "parent").contains("call i32 @child__warp("),
            "{guard}
{remarks:?}"
        );
    }
}

/// At block granularity a kernel whose launches one thread of a block makes is left alone
/// too (`samples/memory_visibility.cdp`: thread 0 launches, 1.17x nvcc's time aggregated per
/// block); at grid granularity only where one thread of the grid makes it, since one thread of
/// each block may still launch together with the other blocks' threads.
#[test]
fn a_kernel_whose_launches_one_thread_of_a_block_makes_is_left_alone_per_block() {
    let tx = "  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n";
    let first = format!("{tx}  %first = icmp eq i32 %tx, 0\n");
    let global = format!("{tx}  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n  %base = mul i32 %nx, %bx\n  %i = add i32 %tx, %base\n  %first = icmp eq i32 %i, 5\n");
    let block_why = "R0500: launch of `child` not aggregated: the launch is made only where `threadIdx.x` equals a constant: no two threads of a block make it in blocks of one dimension, so aggregation per block has nothing to gather";
    let grid_why = "R0500: launch of `child` not aggregated: the launch is made only where `blockIdx.x * blockDim.x + threadIdx.x` equals a constant: no two threads of the grid make it in blocks of one dimension, so aggregation per grid has nothing to gather";
    for (guard, granularity, why) in [(&first, Granularity::Block, block_why), (&global, Granularity::Block, ""), (&global, Granularity::Grid, grid_why)] {
        let ir = guarded(guard, true);
        let (after, remarks) = aggregated(&ir, granularity);
        if why.is_empty() {
            assert!(remarks.len() == 1 && remarks[0].contains("aggregation per block has nothing to gather"), "{remarks:?}");
        } else {
            assert_eq!(remarks, [why]);
        }
        assert_eq!(after, parse(&Context::create(), &ir).print_to_string().to_string(), "left alone, the module is untouched");
    }
    // One thread of each block at grid granularity: the blocks' records are gathered.
    let (after, remarks) = aggregated(&guarded(&first, true), Granularity::Grid);
    assert!(remarks.is_empty() && after.contains("@child__agg"), "{remarks:?}\n{after}");
}

/// Thresholding first (`-flaunch-threshold=128`, as the documented rule) leaves a launch its
/// grid may make too large to run in place inside the helper `child__threshold`; that launch
/// is still thread 0's, judged at the helper's call, and left alone at warp and block
/// granularity as without thresholding (`samples/memory_visibility.cdp` read 1.21x nvcc's time
/// per block and 1.23x per grid, its thread 0's launch aggregated through the helper).
#[test]
fn a_launch_of_one_thread_stays_alone_behind_thresholdings_helper() {
    let tx = "  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n";
    let ir = guarded(&format!("{tx}  %first = icmp eq i32 %tx, 0\n"), true);
    for (granularity, among) in [(Granularity::Warp, "no two lanes of a warp make it together"), (Granularity::Block, "no two threads of a block make it")] {
        let (after, remarks) = through_pipeline(&ir, granularity, 128);
        assert!(after.contains("@child__serial"), "thresholding took the launch:\n{after}");
        assert_eq!(remarks.len(), 1, "{remarks:?}");
        assert!(remarks[0].starts_with("R0500: launch of `child` not aggregated") && remarks[0].contains(among), "{remarks:?}");
        assert!(!after.contains("@child__agg") && !after.contains("@child__warp"), "{after}");
    }
    // At grid granularity the kernel is aggregated per grid, and a grid of one block launches
    // at the site, as without thresholding.
    let (after, remarks) = through_pipeline(&ir, Granularity::Grid, 128);
    let (plain, _) = through_pipeline(&ir, Granularity::Grid, 0);
    assert!(remarks.is_empty() && after.contains("@child__agg"), "{remarks:?}");
    assert_eq!(after.matches("GetParameterBuffer").count(), plain.matches("GetParameterBuffer").count(), "the same direct launches:\n{after}\n{plain}");
}

/// `CHILD`'s kernel under another name, without the `index` helper it calls (defined once).
fn child_named(name: &str) -> String {
    let at = CHILD.find("define ptx_kernel void @child(").expect("CHILD defines the kernel");
    CHILD[at..].replace("@child(", &format!("@{name}("))
}

/// Lines of `ir` other than `name`'s own definition that name the global `@name`: its callers,
/// its launches and the tables that hold its address.
fn references(ir: &str, name: &str) -> usize {
    let at = format!("@{name}");
    ir.lines().filter(|l| !l.starts_with("define ")).filter(|l| l.match_indices(&at).any(|(i, _)| !l[i + at.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.'))).count()
}

/// A child gets an aggregated kernel (`C__agg`, its record pool and its copy `C__aggregated`)
/// only where a launch of it is rewritten to launch that kernel, at every granularity: not a
/// child launched only fire-and-forget (left alone with `R0500`), nor one no launch names.
/// What the pass declares is internal to the module: a separate compilation's other files
/// launch the child itself, never its aggregated kernel. A launch in a device function that
/// nothing calls is rewritten too, and the clean-up removes its aggregated kernel with it
/// before code generation.
#[test]
fn a_child_gets_an_aggregated_kernel_only_where_a_launch_is_rewritten_to_launch_it() {
    let parent = launch("child", "null", "0");
    let forgotten = launch("forgotten", "inttoptr (i64 4 to ptr)", "0").replace("@parent(", "@parent_forgotten(");
    let unreached = launch("unreached", "null", "0").replace("define ptx_kernel void @parent(", "define internal void @never_called(");
    let ir = [HEAD, CHILD, &child_named("forgotten"), &child_named("lonely"), &child_named("unreached"), &parent, &forgotten, &unreached].concat();
    let not_aggregated = |ir: &str, child: &str| !ir.contains(&format!("@{child}__"));
    for asked in [Granularity::Warp, Granularity::Block, Granularity::Grid, Granularity::Auto] {
        let (after, remarks) = aggregated(&ir, asked);
        // Block and grid granularity take launches in kernels only.
        let in_kernels_only = matches!(asked, Granularity::Block | Granularity::Grid);
        let mut expected = vec!["R0500: launch of `forgotten` not aggregated: fire-and-forget launches (cudaStreamFireAndForget) are not aggregated".to_string()];
        if in_kernels_only {
            expected.push("R0500: launch of `unreached` not aggregated: the launch is in the device function `never_called`; only launches in kernels are aggregated (-faggregate-launches=warp would aggregate it)".into());
        }
        if asked == Granularity::Auto {
            expected.push("R0503: launch of `child` aggregated for the whole grid: most threads of `parent` may make it (only bounds on indices and parameters decide) and the child launches nothing: one launch for the grid's records, made when its last block ends".into());
        }
        assert_eq!(remarks, expected, "{asked:?}");
        assert!(after.contains("define internal ptx_kernel void @child__agg(ptr %records, i32 %count)"), "{asked:?}: {after}");
        assert!(after.contains("define internal void @child__aggregated("), "{asked:?}: {after}");
        assert!(after.contains("@child__agg_pool = internal addrspace(1) global"), "{asked:?}: {after}");
        assert!(not_aggregated(&after, "forgotten") && not_aggregated(&after, "lonely"), "{asked:?}: {after}");
        // Each taken launch is rewritten: the parent's per warp or at the end of its block or
        // grid, `never_called`'s per warp where warps take a device function's launches.
        assert!(references(&after, "child__agg") > 0, "{asked:?}: {after}");
        if in_kernels_only {
            assert!(not_aggregated(&after, "unreached"), "{asked:?}: {after}");
        } else {
            assert!(after.contains("define internal ptx_kernel void @unreached__agg(") && references(&after, "unreached__agg") > 0, "{asked:?}: {after}");
        }

        // What code generation gets: the pipeline and its clean-up.
        let context = Context::create();
        let module = parse(&context, &ir);
        let options = PipelineOptions { aggregate: asked, ..PipelineOptions::default() };
        run(&module, &options, &SourceText::default()).expect("the pipeline accepts the module");
        cleanup(&module, &crate::back::target_machine(&options.target, 3).unwrap(), true).unwrap();
        module.verify().unwrap();
        let out = module.print_to_string().to_string();
        assert!(out.contains("define internal ptx_kernel void @child__agg(") && references(&out, "child__agg") > 0, "{asked:?}: {out}");
        assert!(function(&out, "parent").contains("@child__agg") || references(&out, "parent__agg_end") > 0, "{asked:?}: {out}");
        for child in ["forgotten", "lonely", "unreached"] {
            assert!(not_aggregated(&out, child), "{asked:?}: {child}: {out}");
            assert!(out.contains(&format!("define ptx_kernel void @{child}(")), "{asked:?}: the kernel {child} itself stays: {out}");
        }
        assert!(!out.contains("@never_called"), "{asked:?}: {out}");
    }
}
