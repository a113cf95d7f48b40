//! The NULL stream's order under thresholding: a small grid runs in the launching thread only
//! where no NULL-stream launch of the thread's block may be in flight before it.
//!
//! The device runtime's NULL stream is one per block: a grid a thread launches into it runs
//! after every grid launched into it before by any thread of the block, and a program may rely
//! on that (a thread launches a large producer, then a small consumer that reads what the
//! producer wrote). A small grid run in place runs at once, so it may only run where its block
//! has launched nothing into the NULL stream before, as far as the thread can know:
//!
//! - a launch (or a grid recorded for aggregation, which stays before the site) into the NULL
//!   stream or the per-thread stream (where the stream is known at run time only, where its
//!   handle is one of those), a call through a pointer, a call of a function without a definition here that may launch, and a call of a
//!   definition the linker may replace (`linkonce`, `weak`) that may launch first write the
//!   block's tag into `__cdpc_null_launched`, a `__shared__` word ([`mark`]);
//! - a thresholding helper runs a grid in place (or keeps it for the warp's end) only where that
//!   word is not the block's tag ([`may_run_in_place`]).
//!
//! A launch into a named stream marks nothing: device code must create its streams with
//! `cudaStreamNonBlocking`, so "work launched into the NULL stream will not insert an implicit
//! dependency on pending work in any other streams" (the CUDA 5 dynamic parallelism guide,
//! "The Implicit (NULL) Stream"), and a small grid may run in place after one.
//!
//! The tag is `%gridid + (block's linear index) * 0x9E3779B97F4A7C15`: different for every
//! block of a grid, so no clearing is needed, and so no barrier: the word is the block's tag
//! from the first write of it on, since only the block's threads write it and only with the
//! tag. What another grid left in that shared memory can equal the tag only by chance, and
//! then a small grid is launched where it could have run in place: slower, never wrong.
//! Another thread's write that the thread does not see yet is a launch not ordered before the
//! site (nothing synchronised the two threads), which the stream may order either way.
//!
//! A function that code outside the module may call (external linkage, not a kernel) may run
//! in a kernel that never writes the tag for this module's word, since another module's code
//! launches without it. A site in such a function, or in one it calls, runs in place only
//! where the block's kernel is one of this module's that reaches it: those kernels write the
//! tag into `__cdpc_null_owner` at their entry ([`own`]), and the helper asks for it too.
//!
//! In the aggregated copy of a kernel ([`super::aggregate`]) the block index is the record's,
//! a parameter: the copy's words are tagged per original block, as the runtime's NULL stream
//! is; the owner word is written by the copy's own entry, cloned with it.
//!
//! Invariant: a module without a thresholded site is untouched; afterwards no taken site may
//! run in place after a NULL-stream launch of its thread, or of a thread of its block that
//! synchronised with it after launching.

use super::callgraph::{callees, calls, is_kernel};
use super::clone::{as_function, callee, is_inline_asm};
use super::emit::{intrinsic, ok};
use super::launch::{self, Launch};
use crate::llvm::operand;
use inkwell::builder::Builder;
use inkwell::module::{Linkage, Module};
use inkwell::values::BasicValue;
use inkwell::values::{AsValueRef, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue, IntValue, PointerValue};
use inkwell::AddressSpace;
use std::collections::{HashMap, HashSet};

/// The block's word: its tag once it has launched into the NULL stream.
pub const LAUNCHED: &str = "__cdpc_null_launched";
/// Where a mark of a launch into a stream other than the NULL stream goes.
const SINK: &str = "__cdpc_null_sink";
/// The block's word: its tag when its kernel is one of this module's that writes the tag.
pub const OWNER: &str = "__cdpc_null_owner";

/// The multiplier of the block's linear index in the tag (odd: one tag per block of a grid).
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

/// A `__shared__` 64-bit word of the module, declared on first use, as a generic pointer.
fn word<'ctx>(module: &Module<'ctx>, name: &str) -> PointerValue<'ctx> {
    let ctx = module.get_context();
    let i64t = ctx.i64_type();
    let g = module.get_global(name).unwrap_or_else(|| {
        let g = module.add_global(i64t, Some(AddressSpace::from(3u16)), name);
        g.set_linkage(Linkage::Internal);
        // NVPTX takes no initializer for `__shared__` variables: `undef`, as Clang writes them.
        g.set_initializer(&i64t.get_undef());
        g.set_alignment(8);
        g
    });
    g.as_pointer_value().const_address_space_cast(ctx.ptr_type(AddressSpace::default()))
}

/// At `b`'s position: the block's tag (module docs).
fn tag<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>) -> IntValue<'ctx> {
    let ctx = module.get_context();
    let i64t = ctx.i64_type();
    // Each special register as a 64-bit value (`%gridid` is 32 bits or 64 as LLVM declares it).
    let read = |reg: &str| -> IntValue<'ctx> {
        let f = intrinsic(module, &format!("llvm.nvvm.read.ptx.sreg.{reg}"), &[]);
        let v = ok(b.build_call(f, &[], reg)).try_as_basic_value().basic().expect("a special register").into_int_value();
        if v.get_type() == i64t {
            v
        } else {
            ok(b.build_int_z_extend(v, i64t, reg))
        }
    };
    let grid = read("gridid");
    let [x, y, z] = ["ctaid.x", "ctaid.y", "ctaid.z"].map(read);
    let [nx, ny] = ["nctaid.x", "nctaid.y"].map(read);
    let yz = ok(b.build_int_add(y, ok(b.build_int_mul(ny, z, "z.rows")), "yz"));
    let linear = ok(b.build_int_add(x, ok(b.build_int_mul(nx, yz, "yz.blocks")), "block.linear"));
    let spread = ok(b.build_int_mul(linear, i64t.const_int(SPREAD, false), "block.spread"));
    ok(b.build_int_add(grid, spread, "block.tag"))
}

/// At `b`'s position in a thresholding helper: whether a small grid may run in place (or be
/// kept), that is whether the block has written no NULL-stream launch's mark, and with
/// `owned`, whether the block's kernel is one of this module's that writes the marks.
pub(super) fn may_run_in_place<'ctx>(module: &Module<'ctx>, b: &Builder<'ctx>, owned: bool) -> IntValue<'ctx> {
    let i64t = module.get_context().i64_type();
    let t = tag(module, b);
    let load = |name: &str, label: &str| {
        let v = ok(b.build_load(i64t, word(module, name), label));
        v.into_int_value().as_instruction_value().expect("a load").set_volatile(true).expect("a load can be volatile");
        v.into_int_value()
    };
    let launched = load(LAUNCHED, "null.launched");
    let quiet = ok(b.build_int_compare(inkwell::IntPredicate::NE, launched, t, "null.quiet"));
    if !owned {
        return quiet;
    }
    let owner = load(OWNER, "null.owner");
    let ours = ok(b.build_int_compare(inkwell::IntPredicate::EQ, owner, t, "null.ours"));
    ok(b.build_and(quiet, ours, "null.in_place"))
}

/// Writes the block's tag into `name`'s word before `at`; with `into_word`, only where that is
/// true (else into the sink, so that the store needs no branch).
fn write_tag<'ctx>(module: &Module<'ctx>, at: InstructionValue<'ctx>, name: &str, into_word: Option<IntValue<'ctx>>) {
    let b = module.get_context().create_builder();
    b.position_before(&at);
    let t = tag(module, &b);
    let to = match into_word {
        None => word(module, name),
        Some(c) => ok(b.build_select(c, word(module, name), word(module, SINK), "null.mark.at")).into_pointer_value(),
    };
    ok(b.build_store(to, t)).set_volatile(true).expect("a store can be volatile");
}

/// How a launch's stream orders it with the block's NULL stream.
enum Stream<'ctx> {
    /// The NULL stream (or the per-thread or legacy stream, taken as it): marked.
    Null,
    /// Fire-and-forget or tail launch: unordered with the NULL stream, not marked.
    Other,
    /// Known at run time only: marked where it is the NULL stream (a handle at most
    /// [`ORDERED_HANDLES`]), not where it is a named stream or fire-and-forget or tail launch.
    Unknown(BasicValueEnum<'ctx>),
}

/// The largest handle the NULL stream orders: the NULL stream (0), `cudaStreamLegacy` (1) and
/// `cudaStreamPerThread` (2). Tail launch (3) and fire-and-forget (4) are not ordered with it,
/// and a named stream is a pointer the device runtime made.
const ORDERED_HANDLES: u64 = 2;

fn stream_of<'ctx>(l: &Launch<'ctx>) -> Stream<'ctx> {
    let Some(s) = operand(l.call, 5) else { return Stream::Null };
    match launch::constant_u64(s) {
        Some(v) if v == runtime_shim::streams::TAIL_LAUNCH || v == runtime_shim::streams::FIRE_AND_FORGET => Stream::Other,
        Some(_) => Stream::Null,
        None => Stream::Unknown(s),
    }
}

/// Whether a call of `name`, a function without a body here, may launch into the NULL stream.
fn declaration_may_launch(name: &str) -> bool {
    if super::callgraph::is_library(name) {
        return false;
    }
    if launch::is_launch_entry(name) {
        // The launches themselves are marked where they are recognised.
        return false;
    }
    if name.starts_with("cuda") || name.starts_with("__cuda") {
        return name.contains("Launch") || name.contains("Graph");
    }
    true
}

/// Whether the linker may put another module's definition in place of `f`'s.
fn interposable(f: FunctionValue<'_>) -> bool {
    matches!(f.get_linkage(), Linkage::LinkOnceAny | Linkage::LinkOnceODR | Linkage::WeakAny | Linkage::WeakODR | Linkage::ExternalWeak)
}

/// The call graph facts the marks and the owner words need.
#[derive(Default)]
pub(super) struct Calls<'ctx> {
    launches: HashMap<FunctionValue<'ctx>, bool>,
}

impl<'ctx> Calls<'ctx> {
    /// Whether `f`, or what it calls, may launch.
    fn may_launch(&mut self, f: FunctionValue<'ctx>) -> bool {
        if let Some(v) = self.launches.get(&f) {
            return *v;
        }
        self.launches.insert(f, true);
        let v = calls(f).into_iter().any(|i| match callee(i) {
            None => !is_inline_asm(i),
            Some(g) if g.count_basic_blocks() == 0 => {
                let name = g.get_name().to_string_lossy();
                declaration_may_launch(&name) || launch::is_launch_entry(&name)
            }
            Some(g) => self.may_launch(g),
        });
        self.launches.insert(f, v);
        v
    }
}

/// The functions with a body that `roots` reach through their calls (a call through a pointer
/// reaches every function whose address is taken), `roots` included.
fn reach<'ctx>(roots: impl IntoIterator<Item = FunctionValue<'ctx>>) -> HashSet<FunctionValue<'ctx>> {
    let mut seen = HashSet::new();
    for root in roots.into_iter().filter(|f| f.count_basic_blocks() > 0) {
        seen.insert(root);
        seen.extend(callees(root).0);
    }
    seen
}

/// The functions of `module` that code outside it may call: the external functions with a body
/// that are not kernels, and what they reach.
pub(super) fn callable_from_outside<'ctx>(module: &Module<'ctx>) -> HashSet<FunctionValue<'ctx>> {
    let roots = module.get_functions().filter(|f| f.count_basic_blocks() > 0 && !is_kernel(*f) && !matches!(f.get_linkage(), Linkage::Internal | Linkage::Private));
    reach(roots)
}

/// After thresholding rewrote its sites: the marks before every launch and every call that may
/// launch in the functions the kernels that reach a helper's check reach, and the owner word
/// written at the entry of those kernels where a site needs it (`owned`: the helpers whose
/// check asks for the owner word). Nothing where no helper checks.
pub(super) fn mark<'ctx>(module: &Module<'ctx>, source: &super::SourceText, owned: bool) {
    if module.get_global(LAUNCHED).is_none() {
        return;
    }
    let checks: HashSet<FunctionValue> = users_in(module, LAUNCHED);
    // Each kernel's reach, once: the kernels that reach a check, and all they reach.
    let mut kernels: Vec<FunctionValue> = Vec::new();
    let mut scope: HashSet<FunctionValue> = HashSet::new();
    for k in module.get_functions().filter(|f| is_kernel(*f) && f.count_basic_blocks() > 0) {
        let reached = reach([k]);
        if reached.iter().any(|f| checks.contains(f)) {
            kernels.push(k);
            scope.extend(reached);
        }
    }
    let (launches, _) = launch::recognise(module, source);
    for l in launches.iter().filter(|l| scope.contains(&l.function)) {
        match stream_of(l) {
            Stream::Null => write_tag(module, l.call, LAUNCHED, None),
            Stream::Other => {}
            Stream::Unknown(s) => {
                let b = module.get_context().create_builder();
                b.position_before(&l.call);
                let i64t = module.get_context().i64_type();
                let handle = if s.is_pointer_value() { ok(b.build_ptr_to_int(s.into_pointer_value(), i64t, "stream")) } else { s.into_int_value() };
                let ordered = ok(b.build_int_compare(inkwell::IntPredicate::ULE, handle, handle.get_type().const_int(ORDERED_HANDLES, false), "stream.ordered"));
                write_tag(module, l.call, LAUNCHED, Some(ordered));
            }
        }
    }
    let mut facts = Calls::default();
    for f in &scope {
        for i in calls(*f) {
            let may = match callee(i) {
                None => !is_inline_asm(i),
                Some(g) if g.count_basic_blocks() == 0 => declaration_may_launch(&g.get_name().to_string_lossy()),
                Some(g) => interposable(g) && facts.may_launch(g),
            };
            if may {
                write_tag(module, i, LAUNCHED, None);
            }
        }
    }
    if owned {
        for k in &kernels {
            own(module, *k);
        }
    }
}

/// Writes the block's tag into the owner word at the entry of the kernel `k`.
fn own<'ctx>(module: &Module<'ctx>, k: FunctionValue<'ctx>) {
    let entry = k.get_first_basic_block().expect("a kernel with a body");
    // After the allocas, which stay first; the entry's terminator is there at the latest.
    let first = entry.get_instructions().find(|i| i.get_opcode() != InstructionOpcode::Alloca).expect("a block with a terminator");
    write_tag(module, first, OWNER, None);
}

/// The functions with an instruction that uses the global `name` (through its constant
/// address-space cast).
fn users_in<'ctx>(module: &Module<'ctx>, name: &str) -> HashSet<FunctionValue<'ctx>> {
    use inkwell::llvm_sys::core::*;
    let mut out = HashSet::new();
    let Some(g) = module.get_global(name) else { return out };
    let mut work = vec![g.as_value_ref()];
    while let Some(v) = work.pop() {
        // SAFETY: walks the uses of live values.
        unsafe {
            let mut u = LLVMGetFirstUse(v);
            while !u.is_null() {
                let user = LLVMGetUser(u);
                if !LLVMIsAInstruction(user).is_null() {
                    let f = LLVMGetBasicBlockParent(LLVMGetInstructionParent(user));
                    if let Some(f) = as_function(f) {
                        out.insert(f);
                    }
                } else if !LLVMIsAConstant(user).is_null() {
                    work.push(user);
                }
                u = LLVMGetNextUse(u);
            }
        }
    }
    out
}
