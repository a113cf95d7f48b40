//! The NULL stream's order under thresholding (`stream_order.rs`), IR in, IR out: a small grid
//! runs in place only where its block has marked no launch into the NULL stream.

use super::tests::function;
use super::threshold_tests::{at_site, launch, piped, program, thresholded, CHILD, HEAD};
use crate::target::Target;

const LAUNCHED: &str = "ptr addrspacecast (ptr addrspace(3) @__cdpc_null_launched to ptr)";
const OWNER: &str = "ptr addrspacecast (ptr addrspace(3) @__cdpc_null_owner to ptr)";

/// The basic block of `f` that holds `needle`.
fn block_of<'a>(f: &'a str, needle: &str) -> &'a str {
    let at = f.find(needle).unwrap_or_else(|| panic!("{needle}\n{f}"));
    let start = f[..at].rfind("\n\n").map_or(0, |i| i + 2);
    let end = at + f[at..].find("\n\n").unwrap_or(f.len() - at);
    &f[start..end]
}

/// The text of `f` from the line holding `from` to the line holding `to` (both included).
fn between<'a>(f: &'a str, from: &str, to: &str) -> &'a str {
    let start = f.find(from).unwrap_or_else(|| panic!("{from}\n{f}"));
    let end = start + f[start..].find(to).unwrap_or_else(|| panic!("{to}\n{f}"));
    &f[start..end + to.len()]
}

#[test]
fn a_small_grid_runs_in_place_only_where_its_block_marked_no_null_stream_launch() {
    let (ir, remarks) = thresholded(&at_site(&program()), 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    assert!(ir.contains("@__cdpc_null_launched = internal addrspace(3) global i64 undef, align 8"), "{ir}");
    let helper = function(&ir, "child__threshold");
    // The check: the block's word read (volatile) and compared with the block's tag, among the
    // conditions of running in place.
    for needle in [
        "%gridid = call i32 @llvm.nvvm.read.ptx.sreg.gridid()",
        "%block.spread = mul i64 %block.linear, -7046029254386353131",
        &format!("%null.launched = load volatile i64, {LAUNCHED}, align 8"),
        "%null.quiet = icmp ne i64 %null.launched, %block.tag",
    ] {
        assert!(helper.contains(needle), "{needle}\n{helper}");
    }
    assert!(!helper.contains("__cdpc_null_owner"), "a site in a kernel needs no owner word\n{helper}");
    // The mark: the tag stored into the word just before the launch (the site's own stream,
    // the NULL stream), on the launching path only.
    let launch_path = block_of(helper, "@__cudaCDP2LaunchDevice(");
    assert!(launch_path.contains(&format!("store volatile i64 %block.tag154, {LAUNCHED}")), "{launch_path}");
    assert_eq!(helper.matches("store volatile").count(), 1, "{helper}");
    // Through the pipeline with the NULL stream the mark goes to the block's word, unconditionally.
    let piped_ir = piped(&at_site(&program()), 128, Target::default());
    let parent = function(&piped_ir, "parent");
    assert!(parent.lines().any(|l| l.contains("store volatile i64 %") && l.ends_with(&format!("{LAUNCHED}, align 8"))), "{parent}");
    assert!(!parent.contains("__cdpc_null_sink"), "{parent}");
}

#[test]
fn a_fire_and_forget_launch_marks_nothing_the_null_stream_orders() {
    let ff = format!("{HEAD}{CHILD}{}", launch("child", "inttoptr (i64 4 to ptr)", "0"));
    let piped_ir = piped(&at_site(&ff), 128, Target::default());
    let parent = function(&piped_ir, "parent");
    assert!(parent.contains("@__cudaCDP2LaunchDeviceV2("), "{parent}");
    // Its own check stays (earlier launches into the NULL stream are not its business, but a
    // grid run in place still must not pass them: the check is the same for every site).
    assert!(parent.contains("load volatile i64") && !parent.contains(&format!("store volatile i64 %block.tag, {LAUNCHED}")), "{parent}");
}

#[test]
fn calls_that_may_launch_are_marked_and_calls_that_cannot_are_not() {
    // `elsewhere` has no body here: it may launch into the NULL stream. `llvm.*`, libdevice and
    // the C library's functions do not.
    let ir = format!(
        "{}declare void @elsewhere()\ndeclare i32 @vprintf(ptr, ptr)\ndeclare float @__nv_sinf(float)\n",
        at_site(&program()).replace("entry:\n", "entry:\n  call void @elsewhere()\n  %pr = call i32 @vprintf(ptr null, ptr null)\n  %sn = call float @__nv_sinf(float 1.0)\n")
    );
    let (ir, _) = thresholded(&ir, 128, Target::default());
    let parent = function(&ir, "parent");
    let before_elsewhere = between(parent, "entry:", "call void @elsewhere()");
    assert!(before_elsewhere.contains(&format!("store volatile i64 %block.tag, {LAUNCHED}")), "{parent}");
    assert_eq!(parent.matches("store volatile i64").count(), 1, "{parent}");
    // A definition the linker may replace by another module's, which may launch unmarked.
    let weak = format!(
        "{}define linkonce_odr void @maybe() {{\n  call void @launches_elsewhere()\n  ret void\n}}\ndeclare void @launches_elsewhere()\ndefine void @strong(ptr %q) {{\n  store i32 1, ptr %q, align 4\n  ret void\n}}\n",
        at_site(&program()).replace("entry:\n", "entry:\n  call void @maybe()\n  call void @strong(ptr %p)\n")
    );
    let weak_ir = thresholded(&weak, 128, Target::default()).0;
    let parent = function(&weak_ir, "parent");
    assert!(between(parent, "entry:", "call void @maybe()").contains("store volatile i64"), "{parent}");
    assert_eq!(parent.matches("store volatile i64").count(), 1, "{parent}");
}

#[test]
fn a_kernel_that_reaches_no_check_is_not_marked() {
    let other = "define ptx_kernel void @other(ptr %q) {\n  call void @elsewhere()\n  store i32 1, ptr %q, align 4\n  ret void\n}\ndeclare void @elsewhere()\n";
    let (ir, _) = thresholded(&format!("{}{other}", at_site(&program())), 128, Target::default());
    let other = function(&ir, "other");
    assert!(!other.contains("__cdpc_null"), "{other}");
}

#[test]
fn a_site_that_another_modules_code_may_reach_also_asks_whether_the_kernel_is_ours() {
    // The launch in an external device function, called by the module's kernel.
    let ir = program().replace("define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s)", "define void @launcher(ptr %p, i32 %n, ptr %s)");
    let ir = format!("{ir}define ptx_kernel void @parent(ptr %p, i32 %n, ptr %s) {{\n  call void @launcher(ptr %p, i32 %n, ptr %s)\n  call void asm sideeffect \"\", \"\"()\n  ret void\n}}\n");
    let (out, remarks) = thresholded(&ir, 128, Target::default());
    assert!(remarks.is_empty(), "{remarks:?}");
    let helper = function(&out, "child__threshold");
    assert!(helper.contains(&format!("%null.owner = load volatile i64, {OWNER}")) && helper.contains("%null.in_place = and i1 %null.quiet, %null.ours"), "{helper}");
    // The kernel that reaches it writes its tag into the owner word at its entry.
    let parent = function(&out, "parent");
    assert!(between(parent, "define", "call void @launcher(").contains(&format!("store volatile i64 %block.tag, {OWNER}")), "{parent}");
    // The same launch as `internal`: only the module's kernels reach it.
    let internal = ir.replace("define void @launcher(", "define internal void @launcher(");
    let (out, _) = thresholded(&internal, 128, Target::default());
    assert!(!out.contains("__cdpc_null_owner"), "{out}");
}

#[test]
fn a_site_is_not_kept_for_the_warps_end_where_its_thread_may_synchronise_after_it() {
    let kept = |ir: &str| thresholded(ir, 128, Target::default()).0.contains("@child__keep(");
    assert!(kept(&program()));
    // After the site: a fence, or an atomic that orders (another thread may then launch into
    // the NULL stream after this one's kept grid, as far as the program knows).
    let fence = program().replace("done:\n  ret void", "done:\n  fence syncscope(\"device\") seq_cst\n  ret void");
    assert!(!kept(&fence));
    let release = program().replace("done:\n  ret void", "done:\n  %o = atomicrmw add ptr %p, i32 1 syncscope(\"device\") release, align 4\n  ret void");
    assert!(!kept(&release));
    let membar = format!("{}declare void @llvm.nvvm.membar.gl()\n", program().replace("done:\n  ret void", "done:\n  call void @llvm.nvvm.membar.gl()\n  ret void"));
    assert!(!kept(&membar));
    // A relaxed atomic orders nothing: no obstacle. Neither is a fence before the site.
    let relaxed = program().replace("done:\n  ret void", "done:\n  %o = atomicrmw add ptr %p, i32 1 syncscope(\"device\") monotonic, align 4\n  ret void");
    assert!(kept(&relaxed));
    let before = program().replace("entry:\n", "entry:\n  fence syncscope(\"device\") seq_cst\n");
    assert!(kept(&before));
    // The kept site's helper checks the block's word too.
    let kept_ir = thresholded(&program(), 128, Target::default()).0;
    let keep = function(&kept_ir, "child__keep");
    assert!(keep.contains("%null.quiet = icmp ne i64 %null.launched, %block.tag"), "{keep}");
}

#[test]
fn a_launch_into_a_named_stream_marks_only_where_its_handle_is_the_null_streams() {
    // Before the site: `child<<<n, 32, 0, s>>>` with `s` known at run time only.
    let ir = at_site(&program()).replace(
        "  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
        "  %parent.tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %early = call i32 @__cudaCDP2LaunchDevice(ptr @child, ptr null, ptr byval(%struct.dim3) align 4 %grid, ptr byval(%struct.dim3) align 4 %block, i32 0, ptr %s)\n",
    );
    let (ir, _) = thresholded(&ir, 128, Target::default());
    let parent = function(&ir, "parent");
    // A named stream, which device code must create non-blocking, is not ordered with the NULL
    // stream: the tag goes to the block's word only where the handle is the NULL stream's
    // (0), `cudaStreamLegacy` (1) or `cudaStreamPerThread` (2), into the sink otherwise.
    let mark = between(parent, "%stream = ptrtoint ptr %s to i64", "%early = call");
    for needle in [
        "%stream.ordered = icmp ule i64 %stream, 2",
        &format!("%null.mark.at = select i1 %stream.ordered, {LAUNCHED}, ptr addrspacecast (ptr addrspace(3) @__cdpc_null_sink to ptr)"),
        "store volatile i64 %block.tag, ptr %null.mark.at, align 8",
    ] {
        assert!(mark.contains(needle), "{needle}\n{parent}");
    }
    assert_eq!(parent.matches("store volatile i64").count(), 1, "{parent}");
}
