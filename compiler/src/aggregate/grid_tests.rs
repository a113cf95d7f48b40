//! Grid granularity at the IR level: the HIR the pass makes and the PTX it becomes.

use super::grid::SLOTS;
use super::Granularity;
use crate::diag::Code;
use super::tests::{entry, options, ptx, BARRIERS, IRREGULAR};
use crate::driver;
use crate::hir::{Builtin, ExprKind, GlobalSpace, SpecialReg};
use crate::types::Type;

fn grid_id_reads(f: &crate::hir::Function) -> usize {
    let mut n = 0;
    super::visit_block(f.body.as_ref().unwrap(), &mut |e| {
        if let ExprKind::Builtin { builtin: Builtin::SpecialReg(SpecialReg::GridId), .. } = &e.kind {
            n += 1;
        }
    });
    n
}

#[test]
fn grid_state_is_keyed_by_the_grid_and_the_clone_is_block_granularitys() {
    let checked = driver::check(IRREGULAR, &options(Granularity::Grid, true)).unwrap();
    assert!(checked.warnings.is_empty(), "{:#?}", checked.warnings);
    let m = &checked.module;
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["child", "parent", "child__agg"]);
    // the clone is the one block granularity makes, but that its last block gives a table in
    // the child's arena back to the arena (`arena.rs`) rather than to the heap
    let block = driver::check(IRREGULAR, &options(Granularity::Block, false)).unwrap().module;
    assert_eq!(format!("{:?}", m.functions[2].locals), format!("{:?}", block.functions[2].locals));
    assert_eq!(format!("{:?}", m.functions[0]), format!("{:?}", block.functions[0]));
    let globals_used = |m: &crate::hir::Module, f: usize| {
        let mut names = std::collections::BTreeSet::new();
        super::visit_block(m.functions[f].body.as_ref().unwrap(), &mut |e| {
            if let ExprKind::Global(g) = e.kind {
                names.insert(m.globals[g.0 as usize].name.clone());
            }
        });
        names
    };
    assert!(globals_used(&block, 2).is_empty());
    assert_eq!(globals_used(m, 2), ["child$agg_arena", "child$agg_arena_cursor", "child$agg_arena_max_threads", "child$agg_arena_min_threads", "child$agg_arena_owner"].map(String::from).into());
    // per-grid state in __device__ tables of SLOTS entries, one lock per kernel
    let global = |name: &str| m.globals.iter().find(|g| g.name == name).unwrap_or_else(|| panic!("no global {name}"));
    let table = |elem: Type| Type::Array { elem: Box::new(elem), len: SLOTS };
    for (name, ty) in [
        ("parent$agg_grid_ids", table(Type::ULONGLONG)),
        ("parent$agg_grid_done", table(Type::UINT)),
        ("parent$agg0$grid_heads", table(Type::ULONGLONG)),
        ("parent$agg_grid_lock", Type::UINT),
    ] {
        let g = global(name);
        assert_eq!((g.space, &g.ty), (GlobalSpace::Device, &ty), "{name}");
    }
    // the block's own table stays in shared memory, as at block granularity
    assert_eq!(global("parent$agg0$table").space, GlobalSpace::Shared);
    assert_eq!(global("parent$agg_grid_last").space, GlobalSpace::Shared);
    // %gridid is read once, by the parent, to find its grid's entry; the child never sees it
    assert_eq!(grid_id_reads(&m.functions[1]), 1);
    assert_eq!(grid_id_reads(&m.functions[2]), 0);
    // the node header is padded to the record's alignment, so that the records follow it
    let node = m.structs.iter().find(|s| s.name == "parent$agg0$grid_node").expect("node struct");
    let record = m.structs.iter().find(|s| s.name == "child$agg_record").expect("record struct");
    assert_eq!(node.size % record.align, 0);
    assert_eq!(node.fields.iter().map(|f| (f.name.as_str(), f.offset)).collect::<Vec<_>>(), [
        ("next", 0),
        ("count", 8),
        ("blocks", 12),
        ("min_threads", 16),
        ("max_threads", 20)
    ]);
    assert_eq!(node.size, 24);
}

#[test]
fn grid_ptx_pushes_counts_and_launches_from_the_last_block() {
    let out = ptx(IRREGULAR, Granularity::Grid);
    let parent = entry(&out, "parent");
    for needle in [
        "%gridid",                 // the grid's key
        "global.cas.b32",          // the table's lock (atom.relaxed.gpu.global.cas.b32)
        "atom.global.exch.b64",    // a node pushed onto the grid's list (and the list taken)
        "atom.global.add.u32",     // the block counted done
        "atom.global.or.b64",      // the keys read atomically (atomicAdd of 0, which LLVM makes an or)
        "atom.shared.add.u64",     // the block's own records, as at block granularity
        "global.cas.b64",          // the child's arena claimed, room in it taken (arena.rs)
        "__cudaCDP2Malloc",        // nodes and the flat table, where the arena is taken or full
        "__cudaCDP2Free",          // the nodes
        "child__agg",              // the one aggregated launch
    ] {
        assert!(parent.contains(needle), "parent has no {needle}");
    }
    assert!(parent.contains("fence.sc.gpu") || parent.contains("membar.gl"), "no device-wide fence");
    assert!(!entry(&out, "child__agg").contains("%gridid"));
    // block granularity never reads the grid's key
    assert!(!ptx(IRREGULAR, Granularity::Block).contains("%gridid"));
}

#[test]
fn grid_leaves_alone_what_block_leaves_alone_and_says_why() {
    let source = r#"
extern "C" __global__ void leaf(int *p) { p[threadIdx.x] = 1; }
extern "C" __global__ void k_loop(int *p) {
    for (int i = 0; i < 2; i++)
        leaf<<<1, 32>>>(p);
}
extern "C" __global__ void k_self(int *p, int depth) {
    if (depth > 0)
        k_self<<<1, 32>>>(p, depth - 1);
}
extern "C" __global__ void k_stream(int *p) {
    leaf<<<1, 32, 0, cudaStreamFireAndForget>>>(p);
}
extern "C" __global__ void k_errors(int *p, int *e) {
    leaf<<<1, 32>>>(p);
    *e = cudaGetLastError();
}
extern "C" __global__ void k_ok(int *p) {
    if (threadIdx.x == 3)
        leaf<<<1, 32>>>(p);
}
"#;
    let said = |g| {
        let checked = driver::check(source, &options(g, true)).unwrap();
        checked
            .warnings
            .iter()
            .map(|d| (source[..d.primary_span().start as usize].lines().count(), d.code, d.labels[0].message.clone()))
            .collect::<Vec<_>>()
    };
    let grid = said(Granularity::Grid);
    assert_eq!(grid, said(Granularity::Block));
    let codes: Vec<(usize, Code)> = grid.iter().map(|(l, c, _)| (*l, *c)).collect();
    // k_self's launch of itself (line 9) is aggregated: its clone's launches are too
    assert_eq!(codes, [(5, Code::AggregationRemark), (12, Code::AggregationRemark), (15, Code::AggregatedPerWarp)]);
    assert!(grid[0].2.contains("inside a loop"));
    assert!(grid[1].2.contains("fire-and-forget"));
    let m = driver::check(source, &options(Granularity::Grid, false)).unwrap().module;
    // k_ok, k_self and k_self's clone get grid state; k_errors is aggregated per warp, at its site
    let grid_kernels: Vec<&str> =
        m.globals.iter().filter_map(|g| g.name.strip_suffix("$agg_grid_ids")).collect();
    assert_eq!(grid_kernels, ["k_self", "k_ok", "k_self__agg"]);
}

#[test]
fn grid_compiles_for_both_abis_32_bit_and_children_with_barriers() {
    let barriers = BARRIERS;
    for source in [IRREGULAR, barriers] {
        for abi in [crate::LaunchAbi::V1, crate::LaunchAbi::V2] {
            for size in [crate::AddressSize::Bits64, crate::AddressSize::Bits32] {
                let mut o = options(Granularity::Grid, false);
                o.target.launch_abi = abi;
                o.target.address_size = size;
                let out = String::from_utf8(driver::compile(source, &o).unwrap().output).unwrap();
                assert!(out.contains("__agg("), "{abi:?} {size:?}");
                assert!(out.contains("%gridid"), "{abi:?} {size:?}");
            }
        }
    }
    // a child with barriers: the last block compares the smallest and largest block size of
    // all nodes before it launches the clone
    let m = driver::check(barriers, &options(Granularity::Grid, false)).unwrap().module;
    let k = m.functions.iter().find(|f| f.name == "k").unwrap();
    let mut reads_min = false;
    super::visit_block(k.body.as_ref().unwrap(), &mut |e| {
        if let ExprKind::Global(g) = e.kind {
            reads_min |= m.global(g).name == "k$agg0$grid_min_threads";
        }
    });
    assert!(reads_min);
}

/// A device-launched parent: `top` launches `mid` from every thread (aggregated itself), and
/// `mid` launches `leaf`. Every grid of `mid` keys its own state, so the rewritten `mid`
/// (launched directly where `top`'s launch is not aggregated) and the host-launched one
/// share one code path; the clone of `mid` is made from `mid` before the rewrite, as at block
/// granularity.
#[test]
fn device_launched_parents_compile_to_the_same_keyed_path() {
    let source = r#"
extern "C" __global__ void leaf(int *p) { atomicAdd(p, 1); }
extern "C" __global__ void mid(int *p) { leaf<<<1, 32>>>(p); }
extern "C" __global__ void top(int *p, int n) {
    for (int i = 0; i < n; i++)
        mid<<<2, 64>>>(p);
}
"#;
    let m = driver::check(source, &options(Granularity::Grid, false)).unwrap().module;
    let f = |name: &str| m.functions.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(grid_id_reads(f("mid")), 1);
    assert_eq!(grid_id_reads(f("top")), 0, "top's launch is in a loop: left alone");
    assert!(m.globals.iter().any(|g| g.name == "mid$agg_grid_ids"));
    let out = ptx(source, Granularity::Grid);
    assert!(entry(&out, "mid").contains("%gridid"));
}

/// A node's block count is where its last record's blocks end, not the block counter's low
/// half: launches made at their site when the table was full count there too, and would
/// leave blocks of the aggregated grid that no record covers.
#[test]
fn a_nodes_blocks_end_with_its_last_record() {
    let m = driver::check(IRREGULAR, &options(Granularity::Grid, false)).unwrap().module;
    let parent = m.functions.iter().find(|f| f.name == "parent").unwrap();
    let node = crate::types::StructId(m.structs.iter().position(|s| s.name == "parent$agg0$grid_node").unwrap() as u32);
    let node_ptr = Type::pointer_to(Type::Struct(node));
    let mut values = Vec::new();
    super::visit_block(parent.body.as_ref().unwrap(), &mut |e| {
        if let ExprKind::Assign { place, value } = &e.kind {
            if let ExprKind::Member { base, index: 2 } = &place.kind {
                if matches!(&base.kind, ExprKind::Deref(p) if p.ty == node_ptr) {
                    values.push((**value).clone());
                }
            }
        }
    });
    assert_eq!(values.len(), 1, "one store of a node's block count");
    let mut globals = Vec::new();
    super::walk::visit_expr(&values[0], &mut |e| {
        if let ExprKind::Global(g) = e.kind {
            globals.push(m.global(g).name.clone());
        }
    });
    assert!(globals.iter().all(|g| g == "parent$agg0$table"), "{globals:?}");
    assert!(!globals.is_empty());
}
