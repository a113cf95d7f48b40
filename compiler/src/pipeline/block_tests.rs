//! Block and grid aggregation on LLVM IR, IR in, IR out: the modules of `threshold_tests` and
//! hand-written kernels, through [`aggregate::aggregate`] alone and through the whole pipeline.

use super::aggregate::Granularity;
use super::aggregate_tests::{aggregated, guarded, optimised_at};
use super::tests::function;
use super::threshold_tests::{launch, parse, program, CHILD, HEAD};
use super::*;
use inkwell::context::Context;

/// The module after the whole pipeline (thresholding at `threshold`) and its clean-up.
fn piped(ir: &str, asked: Granularity, threshold: u32) -> String {
    let context = Context::create();
    let module = parse(&context, ir);
    let target = Target::default();
    let options = PipelineOptions { target, launch_threshold: threshold, aggregate: asked, pass_remarks: true, ..PipelineOptions::default() };
    run(&module, &options, &SourceText::default()).expect("the pipeline accepts the module");
    cleanup(&module, &crate::back::target_machine(&target, 3).unwrap(), true).unwrap();
    module.verify().unwrap();
    module.print_to_string().to_string()
}

/// `tree<<<2, 32>>>(p, depth - 1)` while `depth > 0`: a kernel that launches itself.
const TREE: &str = r#"
define ptx_kernel void @tree(ptr %p, i32 %depth) {
entry:
  %grid = alloca %struct.dim3, align 4
  %block = alloca %struct.dim3, align 4
  %more = icmp sgt i32 %depth, 0
  br i1 %more, label %launch, label %done
launch:
  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 16)
  %null = icmp eq ptr %buf, null
  br i1 %null, label %done, label %fill
fill:
  store ptr %p, ptr %buf, align 64
  %d = getelementptr inbounds i8, ptr %buf, i64 8
  %less = sub i32 %depth, 1
  store i32 %less, ptr %d, align 8
  store i32 2, ptr %grid, align 4
  %gy = getelementptr inbounds i8, ptr %grid, i64 4
  store i32 1, ptr %gy, align 4
  %gz = getelementptr inbounds i8, ptr %grid, i64 8
  store i32 1, ptr %gz, align 4
  store i32 32, ptr %block, align 4
  %by = getelementptr inbounds i8, ptr %block, i64 4
  store i32 1, ptr %by, align 4
  %bz = getelementptr inbounds i8, ptr %block, i64 8
  store i32 1, ptr %bz, align 4
  %st = call i32 @__cudaCDP2LaunchDevice(ptr @tree, ptr %buf, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr null)
  br label %done
done:
  ret void
}
"#;

#[test]
fn a_kernels_launches_become_records_launched_at_the_end_of_the_block() {
    let (ir, remarks) = aggregated(&program(), Granularity::Block);
    assert!(remarks.is_empty(), "{remarks:?}");
    // The site records; every thread begins and ends the block in the helpers; one `ret`.
    let parent = function(&ir, "parent");
    assert!(parent.contains("call i32 @parent__agg0_record(ptr %agg.args,") && !parent.contains("GetParameterBuffer"), "{parent}");
    assert!(parent.contains("  %block = alloca %struct.dim3, align 4\n  call void @parent__agg_begin()\n"), "{parent}");
    assert_eq!(parent.matches("ret void").count(), 1, "{parent}");
    assert!(parent.contains("agg.end:") && parent.contains("  call void @parent__agg_end()\n  ret void\n}"), "{parent}");
    // 80-byte records, 24 KiB / 80 = 307 of them: the cap of 256.
    assert!(ir.contains("@parent__agg0_table = internal addrspace(3) global [20480 x i8] undef, align 16"), "{ir}");
    insta::assert_snapshot!("block_record", function(&ir, "parent__agg0_record"));
    insta::assert_snapshot!("block_end", function(&ir, "parent__agg_end"));
    // A block's global copy comes from the child's pool (the heap beyond a chunk), not from `malloc` directly.
    let end = function(&ir, "parent__agg_end");
    assert!(ir.contains("@child__agg_pool = internal addrspace(1) global") && end.contains("%table = call ptr @child__agg_table(i64 %bytes)") && !end.contains("@malloc"), "{end}");
    assert!(function(&ir, "parent").starts_with("define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) #") && ir.contains("\"nvvm.maxnreg\"=\"64\""), "{ir}");
}

#[test]
fn grid_granularity_hands_each_blocks_records_to_the_grids_last_block() {
    let (ir, remarks) = aggregated(&program(), Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    for global in [
        "@parent__agg_grid_ids = internal addrspace(1) global [512 x i64] zeroinitializer, align 8",
        "@parent__agg_grid_done = internal addrspace(1) global [512 x i32] zeroinitializer, align 4",
        "@parent__agg_grid_lock = internal addrspace(1) global i32 0, align 4",
        "@parent__agg0_grid_heads = internal addrspace(1) global [512 x i64] zeroinitializer, align 8",
        // 8 MiB / 80 bytes: 104857 records
        "@child__agg_arena = internal addrspace(1) global [8388560 x i8] zeroinitializer, align 16",
    ] {
        assert!(ir.contains(global), "{global}\n{ir}");
    }
    let end = function(&ir, "parent__agg_end");
    // The entry is keyed by %gridid; the arena is claimed with a compare-and-swap.
    assert!(end.contains("call i32 @llvm.nvvm.read.ptx.sreg.gridid()") && end.contains("%key = add i64 %gridid64, 1"), "{end}");
    assert!(end.contains("cmpxchg ptr addrspacecast (ptr addrspace(1) @child__agg_arena_owner to ptr), i64 0, i64 %arena.key"), "{end}");
    assert!(end.contains("@parent__agg_grid_done to ptr), i64 %entry.at") && end.contains(", i32 1 monotonic") && end.contains("%last.block = icmp eq i32 %"), "{end}");
    // Room in the arena is taken with one add on its cursor (records from bit 40, blocks
    // below), not a compare-and-swap loop; the first add that finds none keeps where it was,
    // and the last block launches the records before it.
    assert!(
        end.contains("atomicrmw add ptr addrspacecast (ptr addrspace(1) @child__agg_arena_cursor to ptr), i64 %add monotonic")
            && !end.contains("cmpxchg ptr addrspacecast (ptr addrspace(1) @child__agg_arena_cursor"),
        "{end}"
    );
    assert!(
        end.contains("atomicrmw umax ptr addrspacecast (ptr addrspace(1) @child__agg_arena_overflow to ptr), i64 %overflow.kept")
            && end.contains("%arena.end = select i1 %overflowed, i64 %overflow.at,"),
        "{end}"
    );
    // A grid of one block ends as at block granularity: the branch on the grid's block count
    // comes before the grid's entry is looked for, and only its other side does that.
    let one_block = end.find("%one.block = icmp eq i32 %nblocks, 1").expect("the one-block test");
    assert!(one_block < end.find("call i32 @llvm.nvvm.read.ptx.sreg.gridid()").expect("the entry's key"), "{end}");
    insta::assert_snapshot!("grid_end", end);
    // `C__agg`'s last block releases the arena when its table is the arena.
    let give_back = function(&ir, "child__agg_give_back");
    assert!(
        give_back.contains("%in.arena = icmp ult i64 %arena.offset, 8388560") && give_back.contains("atomicrmw xchg ptr addrspacecast (ptr addrspace(1) @child__agg_arena_owner to ptr), i64 0"),
        "{give_back}"
    );
}

/// The machinery's fallbacks hold no copies of a site's launch as it was, and its loops stay
/// rolled: at grid granularity, after LLVM's `-O3`, the parent launches `child` itself in one
/// place alone (its record helper's, for a launch that cannot wait), every fallback (the end
/// of a one-block grid, the grid's last block over the arena, the nodes and the flat table)
/// calling `parent__agg0_direct`, and no loop of the parent's is unrolled or peeled.
#[test]
fn the_fallbacks_share_one_launch_as_it_was_and_their_loops_stay_rolled() {
    let ir = optimised_at(&program(), Granularity::Grid);
    let launches_of_child = |f: &str| f.matches("GetParameterBufferV2(ptr nonnull @child,").count();
    let parent = function(&ir, "parent");
    assert_eq!(launches_of_child(parent), 1, "{parent}");
    assert_eq!(parent.matches("call fastcc void @parent__agg0_direct(").count(), 4, "{parent}");
    assert_eq!(launches_of_child(function(&ir, "parent__agg0_direct")), 1, "{ir}");
    assert!(!parent.contains(".epil") && !parent.contains("unr-lcssa") && !parent.contains(".peel"), "{parent}");
}

#[test]
fn loops_device_functions_and_other_null_stream_launches_are_left_alone_with_r0500() {
    let hint = "(-faggregate-launches=warp would aggregate it)";
    // In a loop.
    let looped = program().replace("done:\n  ret void", "done:\n  %again = icmp sgt i32 %n, 7\n  br i1 %again, label %entry.loop, label %out\nout:\n  ret void").replace(
        "entry:\n  %grid = alloca %struct.dim3, align 4\n  %block = alloca %struct.dim3, align 4\n",
        "entry:\n  %grid = alloca %struct.dim3, align 4\n  %block = alloca %struct.dim3, align 4\n  br label %entry.loop\nentry.loop:\n",
    );
    let (ir, remarks) = aggregated(&looped, Granularity::Block);
    assert_eq!(remarks, [format!("R0500: launch of `child` not aggregated: the launch is inside a loop: a thread may launch more than once {hint}")]);
    assert!(!ir.contains("__agg_end") && !ir.contains("@child__agg("), "{ir}");
    // In a device function.
    let device = program().replace("define ptx_kernel void @parent", "define void @parent");
    let (_, remarks) = aggregated(&device, Granularity::Grid);
    assert_eq!(remarks, [format!("R0500: launch of `child` not aggregated: the launch is in the device function `parent`; only launches in kernels are aggregated {hint}")]);
    // A kernel that also makes a NULL-stream launch it does not aggregate.
    // (the second launch is in an always-inline helper called once: it counts as the kernel's)
    let second = launch("child", "null", "0").replace("@parent", "@second").replace("ret void", "call void @third(ptr %p, i32 %n, ptr %s)\n  ret void");
    let third = launch("child", "null", "%n").replace("define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s)", "define internal void @third(ptr %p, i32 %n, ptr %s) alwaysinline");
    let both = format!("{HEAD}{CHILD}{second}{third}");
    let (_, remarks) = aggregated(&both, Granularity::Block);
    assert!(
        remarks.contains(&"R0500: launch of `child` not aggregated: `second` also launches `child` into the NULL stream without aggregation; delaying this launch would reorder them".to_string()),
        "{remarks:?}"
    );
    // A launch in a loop of a helper that counts as the kernel's is in a loop too.
    let helper_loop = looped.replace("define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s)", "define internal void @helper(ptr %p, i32 %n, ptr %s) alwaysinline");
    let caller = "define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) {\n  call void @helper(ptr %p, i32 %n, ptr %s)\n  ret void\n}\n";
    let (_, remarks) = aggregated(&format!("{helper_loop}{caller}"), Granularity::Block);
    assert_eq!(remarks, [format!("R0500: launch of `child` not aggregated: the launch is inside a loop: a thread may launch more than once {hint}")]);
    // A kernel whose threads may `exit`: they would never reach the end of the block.
    let exiting = program().replace("done:\n  ret void", "done:\n  call void asm sideeffect \"exit;\", \"\"()\n  ret void");
    let (_, remarks) = aggregated(&exiting, Granularity::Block);
    assert_eq!(remarks, ["R0500: launch of `child` not aggregated: `parent` may end a thread with `exit`, which would never reach the end of the block the others wait at"]);
}

#[test]
fn a_kernel_that_reads_launch_errors_is_aggregated_per_warp_with_r0501() {
    let errors = format!("{}\ndeclare i32 @cudaGetLastError()\n", program().replace("done:\n  ret void", "done:\n  %e = call i32 @cudaGetLastError()\n  ret void"));
    for asked in [Granularity::Block, Granularity::Grid] {
        let (ir, remarks) = aggregated(&errors, asked);
        assert_eq!(remarks, ["R0501: launch of `child` aggregated per warp, at its site: `parent` reads launch errors (cudaGetLastError or cudaPeekAtLastError): made here, each thread's error stays its own launch's"]);
        assert!(function(&ir, "parent").contains("call i32 @child__warp(") && !ir.contains("__agg_end"), "{ir}");
    }
}

#[test]
fn a_kernel_that_may_leave_a_barrier_behind_ends_with_its_last_thread() {
    // A barrier on one path only: a thread that skipped it must leave, not wait at the end.
    let skipping = program().replace("fill:\n", "fill:\n  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n");
    let (ir, remarks) = aggregated(&skipping, Granularity::Block);
    assert!(remarks.is_empty(), "{remarks:?}");
    let end = function(&ir, "parent__agg_end");
    assert!(ir.contains("@parent__agg_arrived = internal addrspace(3) global i32 undef"), "{ir}");
    assert!(end.contains("atomicrmw add ptr addrspacecast (ptr addrspace(3) @parent__agg_arrived to ptr), i32 1") && !end.contains("barrier"), "{end}");
    // Per grid too: the last thread places the block's records and counts the block, with
    // no barrier on the way (KLAP's QT's shape).
    let (ir, remarks) = aggregated(&skipping, Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    let end = function(&ir, "parent__agg_end");
    assert!(ir.contains("@parent__agg_arrived = internal addrspace(3) global i32 undef"), "{ir}");
    assert!(end.contains("@parent__agg_grid_done") && !end.contains("barrier"), "{end}");
    // A barrier every thread passes once: the block meets at barriers.
    let everyone = program().replace(
        "  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)\n",
        "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n  %buf = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)\n",
    );
    let (ir, _) = aggregated(&everyone, Granularity::Block);
    assert!(!ir.contains("agg_arrived") && function(&ir, "parent__agg_end").contains("call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)"), "{ir}");
}

#[test]
fn a_kernel_that_launches_itself_records_in_its_aggregated_clone_too() {
    // A tree whose kernel reads an index (one that reads none is a driver, left alone).
    let tree = format!("{HEAD}{TREE}").replace("entry:\n  %grid", "entry:\n  %tree.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %grid");
    for asked in [Granularity::Block, Granularity::Grid] {
        let (ir, remarks) = aggregated(&tree, asked);
        assert!(remarks.is_empty(), "{remarks:?}");
        // The clone's blocks stand for the kernel's: they begin and end as the kernel's do.
        let agg = function(&ir, "tree__agg");
        assert!(agg.contains("call void @tree__agg_begin()") && agg.contains("call void @tree__agg_end()") && agg.matches("ret void").count() == 1, "{agg}");
        // Its record helper reads the block's size (a block of one thread launches at the
        // site): the clone calls the helper's copy that reads the block it stands for.
        let copy = function(&ir, "tree__aggregated");
        assert!(copy.contains("call i32 @tree__agg0_record__aggregated(ptr %agg.args,") && copy.contains("i32 %ntid.x, i32 %ntid.y, i32 %ntid.z"), "{copy}");
        // Per grid, a level reads one bank of the arena while its blocks fill the other.
        assert_eq!(ir.contains("@tree__agg_arena1 = internal addrspace(1) global"), asked == Granularity::Grid, "{ir}");
        if asked == Granularity::Grid {
            // One bank per grid: its first block to place records chooses it in the grid's
            // entry, the others take that choice, and the grid's last block clears it.
            assert!(ir.contains("@tree__agg0_grid_bank = internal addrspace(1) global [512 x i32] zeroinitializer"), "{ir}");
            let end = function(&ir, "tree__agg_end");
            assert!(end.contains("load atomic i32") && end.contains("%bank.wanted = select i1 %want.second, i32 2, i32 1"), "{end}");
            assert!(end.contains("cmpxchg ptr") && end.contains(", i32 0, i32 %bank.wanted monotonic monotonic"), "{end}");
            assert!(end.contains("%take.second = icmp eq i32 %bank, 2"), "{end}");
            let cleared = end.lines().filter(|l| l.contains("atomicrmw xchg") && l.contains("i32 0 monotonic")).count();
            assert!(cleared >= 2, "the done count and the bank choice cleared: {end}");
        }
    }
    // A child that does not launch itself has one bank, and chooses none.
    let (ir, _) = aggregated(&program(), Granularity::Grid);
    assert!(ir.contains("@child__agg_arena = internal addrspace(1) global") && !ir.contains("arena1"), "{ir}");
    assert!(!function(&ir, "parent__agg_end").contains("bank.wanted"), "{ir}");
}

#[test]
fn through_the_pipeline_every_launch_is_lowered_to_v2_and_thresholding_comes_first() {
    for asked in [Granularity::Block, Granularity::Grid] {
        for threshold in [0, 128] {
            let ir = piped(&program(), asked, threshold);
            let parent = function(&ir, "parent");
            assert!(!ir.contains("@__cudaCDP2LaunchDevice(") && !ir.contains("__agg_end(") && !ir.contains("__agg0_record("), "{ir}");
            assert!(parent.contains("@__cudaCDP2GetParameterBufferV2(ptr nonnull @child__agg,") && parent.contains("@__cudaCDP2GetParameterBufferV2(ptr nonnull @child,"), "{parent}");
            // Thresholding's serial copy is inlined by the clean-up: its thread loop is there.
            assert!(!ir.contains("@child__serial("), "{ir}");
            assert_eq!(parent.contains("\nthread.i"), threshold > 0, "{parent}");
        }
    }
    // Thresholding's helper, called once, is where the launch left for large grids is: it is
    // recorded in the kernel that calls it.
    let context = Context::create();
    let module = parse(&context, &super::threshold_tests::at_site(&program()));
    let options = PipelineOptions { target: Target::default(), launch_threshold: 128, aggregate: Granularity::Block, pass_remarks: true, ..PipelineOptions::default() };
    assert!(run(&module, &options, &SourceText::default()).unwrap().is_empty());
    let ir = module.print_to_string().to_string();
    assert!(function(&ir, "child__threshold").contains("call i32 @parent__agg0_record(ptr"), "{ir}");
}

#[test]
fn a_child_that_calls_through_a_pointer_a_reader_of_built_ins_may_reach_is_left_alone() {
    let indirect = format!("{}@table = global ptr @index\n", program().replace("  %i = call i32 @index()\n", "  %fp = load ptr, ptr @table, align 8\n  %i = call i32 %fp()\n"));
    for asked in [Granularity::Warp, Granularity::Block, Granularity::Grid] {
        let (ir, remarks) = aggregated(&indirect, asked);
        assert_eq!(remarks, ["R0500: launch of `child` not aggregated: `child` calls a function through a pointer, and a function whose address is taken reads threadIdx, blockIdx, blockDim or gridDim, which would see the aggregated launch's"]);
        assert!(!ir.contains("@child__agg("), "{ir}");
    }
}

/// A call through a pointer calls a function whose address is taken: a kernel whose pointer
/// calls reach no barrier ends its blocks at barriers; one whose may, on some path, ends them
/// with its last thread, per block and per grid.
#[test]
fn a_call_through_a_pointer_may_reach_only_the_functions_whose_address_is_taken() {
    let calling = |step: &str| {
        let parent = program().replace("fill:\n", "fill:\n  %fp = load ptr, ptr @ftable, align 8\n  call void %fp(ptr %p)\n");
        format!("{parent}\n@ftable = global ptr @step\ndefine void @step(ptr %q) {{\n{step}  store i32 1, ptr %q, align 4\n  ret void\n}}\n")
    };
    let plain = calling("");
    let (ir, remarks) = aggregated(&plain, Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(ir.contains("@child__agg("), "{ir}");
    let (ir, remarks) = aggregated(&plain, Granularity::Block);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(!ir.contains("agg_arrived"), "{ir}");
    let syncing = calling("  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n");
    for asked in [Granularity::Block, Granularity::Grid] {
        let (ir, remarks) = aggregated(&syncing, asked);
        assert!(remarks.is_empty(), "{remarks:?}");
        assert!(ir.contains("agg_arrived"), "{ir}");
    }
}

/// `parent` making `child<<<n, 32, SHMEM>>>(p, 'a', s)` at one site per entry of `shmem`, one
/// after another (no loop: every site is taken per grid), as [`launch`] writes one.
fn sites(shmem: &[&str]) -> String {
    let mut body = String::from("define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) {\nentry:\n  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  br label %site0\n");
    for (k, bytes) in shmem.iter().enumerate() {
        body.push_str(&format!(
            r#"site{k}:
  %grid{k} = alloca %struct.dim3, align 4
  %block{k} = alloca %struct.dim3, align 4
  %buf{k} = call ptr @__cudaCDP2GetParameterBuffer(i64 64, i64 40)
  %null{k} = icmp eq ptr %buf{k}, null
  br i1 %null{k}, label %site{next}, label %fill{k}
fill{k}:
  store ptr %p, ptr %buf{k}, align 64
  %c{k} = getelementptr inbounds i8, ptr %buf{k}, i64 8
  store i8 97, ptr %c{k}, align 8
  %sp{k} = getelementptr inbounds i8, ptr %buf{k}, i64 16
  call void @llvm.memcpy.p0.p0.i64(ptr %sp{k}, ptr %s, i64 24, i1 false)
  store i32 %n, ptr %grid{k}, align 4
  %gy{k} = getelementptr inbounds i8, ptr %grid{k}, i64 4
  store i32 1, ptr %gy{k}, align 4
  %gz{k} = getelementptr inbounds i8, ptr %grid{k}, i64 8
  store i32 1, ptr %gz{k}, align 4
  store i32 32, ptr %block{k}, align 4
  %by{k} = getelementptr inbounds i8, ptr %block{k}, i64 4
  store i32 1, ptr %by{k}, align 4
  %bz{k} = getelementptr inbounds i8, ptr %block{k}, i64 8
  store i32 1, ptr %bz{k}, align 4
  %st{k} = call i32 @__cudaCDP2LaunchDevice(ptr @child, ptr %buf{k}, ptr byval(%struct.dim3) align 4 %grid{k}, ptr byval(%struct.dim3) align 4 %block{k}, i32 {bytes}, ptr null)
  br label %site{next}
"#,
            next = k + 1
        ));
    }
    body.push_str(&format!("site{}:\n  ret void\n}}\n", shmem.len()));
    format!("{HEAD}{CHILD}{body}")
}

/// The arena keys `parent__agg_end` claims `child`'s arena with, in site order (`g + 1`, `g`
/// the first site of the group), and how many launches of an arena bank its last block has
/// (one per group and bank, each made where the bank is the group's).
fn arena_keys(ir: &str) -> (Vec<u64>, usize) {
    let end = function(ir, "parent__agg_end");
    let keys = end
        .lines()
        .filter_map(|l| l.trim().strip_prefix("%arena.key").filter(|_| l.contains("= add i64 %key.sites")))
        .map(|l| l.rsplit(", ").next().and_then(|k| k.parse().ok()).expect("a constant key"))
        .collect();
    let launches = end.lines().filter(|l| l.trim_start().starts_with("%arena.ours")).count();
    (keys, launches)
}

/// Sites that launch one child the same way share its arena at grid granularity (one key, their
/// records in it together, one launch of `C__agg` by the grid's last block): with each site keyed
/// alone, all but one would fall back to device-heap nodes and the last block would make one
/// launch per site.
#[test]
fn a_childs_sites_launched_alike_share_its_arena_and_one_launch_per_grid() {
    let (ir, remarks) = aggregated(&branch_sites(&["0", "0", "0"]), Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(function(&ir, "parent").matches("call i32 @parent__agg").count() == 3, "{ir}");
    assert_eq!(arena_keys(&ir), (vec![1, 1, 1, 1], 1), "{}", function(&ir, "parent__agg_end"));
    assert!(!ir.contains("@child__agg_arena1"), "one group, one bank: {ir}");
    // A site with another dynamic shared memory size needs a launch of its own: its own key,
    // and a bank of its own, so that its blocks need no heap.
    let (ir, remarks) = aggregated(&branch_sites(&["0", "128", "0"]), Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert_eq!(arena_keys(&ir), (vec![1, 2, 1, 1, 2], 2 * 2), "{}", function(&ir, "parent__agg_end"));
    assert!(ir.contains("@child__agg_arena1 = internal addrspace(1) global"), "{ir}");
}

/// Sites one thread passes one after the other are launched one after the other, each under
/// its own key, as the NULL stream orders a thread's launches: one launch of all their
/// records ran a consumer with its producer (`samples/null_stream_order.cdp`, whose loop Clang
/// unrolls into two sites of one child, read the producer's output before it was written).
#[test]
fn a_childs_sites_one_after_the_other_keep_their_order() {
    let (ir, remarks) = aggregated(&sites(&["0", "0", "0"]), Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    assert_eq!(arena_keys(&ir), (vec![1, 2, 3, 1, 2, 3], 3 * 2), "{}", function(&ir, "parent__agg_end"));
    // Two banks: the first two groups of a grid each fill one (the third's blocks take heap
    // nodes), where the second group's blocks all took heap nodes with one bank.
    let end = function(&ir, "parent__agg_end");
    assert!(ir.contains("@child__agg_arena1 = internal addrspace(1) global") && end.contains("%bank.wanted = select i1 %want.second, i32 2, i32 1"), "{ir}");
}

/// [`sites`] made exclusive: `parent` makes one of them, chosen by `n`.
fn branch_sites(shmem: &[&str]) -> String {
    let last = shmem.len();
    let mut out = sites(shmem);
    for k in 0..last {
        out = out.replace(&format!("label %site{}\n", k + 1), &format!("label %site{last}\n")).replace(&format!("label %site{}, label %fill{k}", k + 1), &format!("label %site{last}, label %fill{k}"));
    }
    let cases: Vec<String> = (1..last).map(|k| format!("i32 {k}, label %site{k}")).collect();
    out.replace(
        "entry:\n  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  br label %site0\n",
        &format!("entry:\n  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  switch i32 %n, label %site0 [ {} ]\n", cases.join(" ")),
    )
}

/// At grid granularity, a kernel whose every site one thread of a block makes launches at the
/// site when its grid has one block (nothing to gather: `samples/memory_visibility.cdp`'s
/// thread 0 read 1.15x nvcc's time with its launch recorded); with several blocks the records
/// are gathered as before. A site that any thread may make launches at the site only in a grid
/// of one thread.
#[test]
fn a_one_block_grid_launches_at_the_site_what_one_thread_of_a_block_makes() {
    let guard = "  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %first = icmp eq i32 %tx, 0\n";
    let (ir, remarks) = aggregated(&guarded(guard, true), Granularity::Grid);
    assert!(remarks.is_empty(), "{remarks:?}");
    let record = function(&ir, "parent__agg0_record");
    assert!(record.contains("%one.block = icmp eq i32 %nblocks, 1") && !record.contains("%one.thread"), "{record}");
    assert!(record.contains("%others = xor i1 %one.block, true") && record.contains("br i1 %valid.gathered, label %take, label %direct"), "{record}");
    let (ir, _) = aggregated(&program(), Granularity::Grid);
    let record = function(&ir, "parent__agg0_record");
    assert!(record.contains("%one.thread.grid = and i1 %one.block, %one.thread") && record.contains("%others = xor i1 %one.thread.grid, true"), "{record}");
}

/// At block granularity, a block of one thread (`parent<<<1, 1>>>`, a recursion's driver)
/// launches at the site: `samples/devrt_pdl.cdp`'s two launches read 1.09-1.11x nvcc's time
/// recorded and made at the end of the block. Larger blocks record.
#[test]
fn a_block_of_one_thread_launches_at_the_site() {
    let (ir, remarks) = aggregated(&program(), Granularity::Block);
    assert!(remarks.is_empty(), "{remarks:?}");
    let record = function(&ir, "parent__agg0_record");
    assert!(record.contains("%one.thread = icmp eq i32 %nthreads, 1") && !record.contains("%one.block"), "{record}");
    assert!(record.contains("%others = xor i1 %one.thread, true") && record.contains("br i1 %valid.gathered, label %take, label %direct"), "{record}");
    let direct = record.split("\ndirect:").nth(1).expect("a direct block");
    assert!(direct.contains("@__cudaCDP2LaunchDevice") || direct.contains("call i32 @parent__agg0_direct"), "{record}");
}

/// `-faggregate-launches=auto` (`aggregate/choose.rs`): a kernel's launches go to the end of
/// the grid where only bounds on indices, parameters and constants decide whether a thread
/// makes them and the child launches nothing; per warp otherwise. Each case against the module
/// of the granularity it chose.
#[test]
fn auto_gives_the_grid_dense_launches_of_leaf_children_and_the_warp_the_rest() {
    let grid_state = "@parent__agg_grid_ids";
    let chose_grid = |ir: &str| {
        let (after, remarks) = aggregated(ir, Granularity::Auto);
        assert_eq!(after, aggregated(ir, Granularity::Grid).0, "auto chose the grid: the grid's module");
        assert!(
            after.contains(grid_state) && remarks.len() == 1 && remarks[0].starts_with("R0503: launch of `child` aggregated for the whole grid: most threads of `parent` may make it"),
            "{remarks:?}"
        );
    };
    let chose_warp = |ir: &str| {
        let (after, remarks) = aggregated(ir, Granularity::Auto);
        assert_eq!((after.as_str(), &remarks), (aggregated(ir, Granularity::Warp).0.as_str(), &aggregated(ir, Granularity::Warp).1), "auto chose the warp: the warp's module and remarks");
        assert!(!after.contains("__agg_grid_ids"), "{after}");
    };
    // The threads whose global index is below a parameter (KLAP's graph colouring), also
    // through a local only its declaration stores (the `.cdp` front end).
    let index = "  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n  %base = mul i32 %nx, %bx\n  %i = add i32 %tx, %base\n";
    chose_grid(&guarded(&format!("{index}  %first = icmp slt i32 %i, %n\n"), true));
    chose_grid(&guarded(&format!("  %i.addr = alloca i32, align 4\n{index}  store i32 %i, ptr %i.addr, align 4\n  %ld = load i32, ptr %i.addr, align 4\n  %first = icmp slt i32 %ld, %n\n"), true));
    // A value loaded from memory decides (BFS's frontier); an equality (one thread of a block
    // or of the grid: nothing to gather, left alone as per warp); a child that launches (the
    // quadtree's levels would each wait for the whole level above: a kernel that launches itself).
    chose_warp(&guarded(&format!("{index}  %at = getelementptr inbounds i32, ptr %p, i32 %i\n  %v = load i32, ptr %at, align 4\n  %first = icmp sgt i32 %v, 0\n"), true));
    chose_warp(&guarded(&format!("{index}  %first = icmp eq i32 %i, 0\n"), true));
    chose_warp(&guarded("  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %first = icmp eq i32 %tx, 0\n", true));
    let tree = format!("{HEAD}{TREE}").replace("  %more = icmp sgt i32 %depth, 0\n", "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %more = icmp slt i32 %t, %depth\n");
    chose_warp(&tree);
    // The same tree whose kernel reads no index: left alone (a driver, below).
    let (after, remarks) = aggregated(&format!("{HEAD}{TREE}"), Granularity::Auto);
    assert!(
        !after.contains("__agg")
            && remarks == ["R0500: launch of `tree` not aggregated: `tree` reads no thread or block index: a kernel launched with one thread, whose launches have nothing to gather"],
        "{remarks:?}"
    );
    // Every thread launches, in a kernel that reads no index: a driver of one thread
    // (`parent<<<1, 1>>>`), nothing to gather: left alone. Also through the whole pipeline,
    // where thresholding's tags and helpers read the block's index before aggregation runs.
    // At every granularity: a forced one has nothing to gather there either.
    let driver = program().replace("  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n", "");
    assert_ne!(driver, program());
    for asked in [Granularity::Auto, Granularity::Warp, Granularity::Block, Granularity::Grid] {
        let (after, remarks) = aggregated(&driver, asked);
        assert!(!after.contains("__agg") && remarks.len() == 1 && remarks[0].contains("`parent` reads no thread or block index"), "{asked:?}: {remarks:?}");
        assert!(!piped(&driver, asked, 128).contains("__agg"), "{asked:?}");
    }
    assert!(piped(&guarded(&format!("{index}  %first = icmp slt i32 %i, %n\n"), true), Granularity::Auto, 128).contains(grid_state));
}
