//! The record every granularity writes and `C__agg` reads, and the helpers the granularities
//! write their IR with: below [`super::child`], [`super::block`], [`super::warp`],
//! [`super::grid`] and the pass ([`super`]), importing none of them.
//!
//! A record is [`HEADER`] bytes (its first block, the count of its blocks done, its grid's and
//! its block's dims, at [`OFF_DONE`], [`OFF_GRID`] and [`OFF_BLOCK`]), then the child's
//! arguments as laid out for its parameter buffer; records lie in tables aligned to
//! [`RECORD_ALIGN`], each a multiple of 16 bytes long. [`SiteState`] is what a kernel's launch
//! site keeps in `__shared__` memory at block and grid granularity (its table of records, their
//! count, the block sizes); [`Emit`], [`byte_gep`], [`dims_value`], [`device`] and [`read64`]
//! are how the granularities read and write them.
//!
//! Invariant: nothing here changes a module by itself; each helper writes at the builder's
//! position, or declares the global it is asked for.

use super::super::emit::{intrinsic, ok};
use super::super::launch::Launch;
use super::super::sites::ARGS_ALIGN;
use inkwell::builder::Builder;
use inkwell::module::{Linkage, Module};
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, AtomicOrdering, IntPredicate};

/// The most records a block keeps for one launch site.
pub const RECORD_CAP: u64 = 256;
/// Shared memory the record tables of one kernel may take, in bytes.
pub const SHARED_BUDGET: u64 = 24 * 1024;
/// A recorded grid has at most this many blocks (bigger ones are launched directly), so that
/// `RECORD_CAP` records never overflow the 32-bit block counter or `gridDim.x`.
pub const MAX_BLOCKS_PER_RECORD: u64 = 1 << 22;

/// Bytes of a record before the arguments: first block, done count, grid, block.
pub(super) const HEADER: u64 = 32;
/// Where a record starts: every table is aligned to 16 bytes (the pool, `__shared__` tables,
/// the grid's arena, `malloc`'s blocks) and a record's size is a multiple of 16
/// ([`super::block::record_stride`]); its arguments, at [`HEADER`], are as aligned. Copies
/// and loads of arguments say so, so that they move words, not bytes
/// ([`super::super::copies`]).
pub(super) const RECORD_ALIGN: u32 = ARGS_ALIGN;
pub(super) const OFF_DONE: u64 = 4;
pub(super) const OFF_GRID: u64 = 8;
pub(super) const OFF_BLOCK: u64 = 20;

/// The largest aggregated grid (`gridDim.x`).
pub(super) const MAX_GRID_X: u64 = (1 << 31) - 1;

/// The address `offset` bytes past `base`.
pub(super) fn byte_gep<'ctx>(b: &inkwell::builder::Builder<'ctx>, base: PointerValue<'ctx>, offset: IntValue<'ctx>, name: &str) -> PointerValue<'ctx> {
    let i8t = base.get_type().get_context().i8_type();
    // SAFETY: offsets inside a record of a table sized for them.
    unsafe { ok(b.build_gep(i8t, base, &[offset], name)) }
}

/// The dims `v` at `b`'s position in `f`, as a launch takes them: a `{ i32, i32, i32 }`
/// value, or `by_pointer` the address of one (an alloca in `f`'s entry block).
pub(super) fn dims_value<'ctx>(module: &Module<'ctx>, b: &inkwell::builder::Builder<'ctx>, f: FunctionValue<'ctx>, v: [IntValue<'ctx>; 3], by_pointer: bool, name: &str) -> BasicValueEnum<'ctx> {
    let ctx = module.get_context();
    let i32t = ctx.i32_type();
    let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
    let mut agg = dim3.get_poison();
    for (k, e) in v.into_iter().enumerate() {
        agg = ok(b.build_insert_value(agg, e, k as u32, name)).into_struct_value();
    }
    if !by_pointer {
        return agg.into();
    }
    // In the entry block, as allocas belong (the helpers are inlined into loops).
    let at_entry = ctx.create_builder();
    let entry = f.get_first_basic_block().expect("a function with a body");
    super::super::clone::position_at_start(&at_entry, entry);
    let slot = ok(at_entry.build_alloca(dim3, &format!("{name}.slot")));
    ok(b.build_store(slot, agg));
    slot.into()
}

/// The shared state of one site of a kernel.
pub(super) struct SiteState<'ctx> {
    pub launch: Launch<'ctx>,
    /// Index of the site's child in the children.
    pub child: usize,
    pub cap: u64,
    /// `__shared__`: the 64-bit counter (records high, blocks low), the smallest and largest
    /// block size, the table, the global copy's address. Generic pointers to them.
    pub counter: PointerValue<'ctx>,
    pub min_threads: PointerValue<'ctx>,
    pub max_threads: PointerValue<'ctx>,
    pub table: PointerValue<'ctx>,
    pub buffer: PointerValue<'ctx>,
    /// `K__agg<n>_record` and `K__agg<n>_direct`.
    pub record: FunctionValue<'ctx>,
    pub direct: FunctionValue<'ctx>,
}

/// Small control-flow helpers for the end of the block.
pub(super) struct Emit<'a, 'ctx> {
    pub module: &'a Module<'ctx>,
    pub f: FunctionValue<'ctx>,
    pub b: &'a Builder<'ctx>,
}

impl<'ctx> Emit<'_, 'ctx> {
    pub fn c32(&self, v: u64) -> IntValue<'ctx> {
        self.module.get_context().i32_type().const_int(v, false)
    }
    pub fn c64(&self, v: u64) -> IntValue<'ctx> {
        self.module.get_context().i64_type().const_int(v, false)
    }
    pub fn call(&self, name: &str, args: &[BasicMetadataValueEnum<'ctx>]) -> Option<BasicValueEnum<'ctx>> {
        ok(self.b.build_call(intrinsic(self.module, name, &[]), args, "")).try_as_basic_value().basic()
    }
    pub fn sreg(&self, name: &str) -> IntValue<'ctx> {
        self.call(&format!("llvm.nvvm.read.ptx.sreg.{name}"), &[]).expect("a register").into_int_value()
    }
    /// The parent grid's block count, `gridDim.x * gridDim.y * gridDim.z`.
    pub fn blocks_in_grid(&self) -> IntValue<'ctx> {
        let (gx, gy, gz) = (self.sreg("nctaid.x"), self.sreg("nctaid.y"), self.sreg("nctaid.z"));
        ok(self.b.build_int_mul(ok(self.b.build_int_mul(gx, gy, "gxy")), gz, "nblocks"))
    }
    pub fn barrier(&self) {
        self.call("llvm.nvvm.barrier.cta.sync.aligned.all", &[self.c32(0).into()]);
    }
    pub fn fence(&self) {
        self.call("llvm.nvvm.membar.gl", &[]);
    }
    /// A release fence in the block's scope (`fence.acq_rel.cta`): what a thread wrote before
    /// it is seen by a thread of its block that acquires after reading what it writes after it
    /// (a count), and, fences being cumulative, by whoever that thread then releases to.
    pub fn fence_block_release(&self) {
        self.fence_in("block", inkwell::llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingRelease);
    }
    /// A fence of `ordering` in the synchronisation scope `scope` (`"block"`, `"device"`).
    pub fn fence_in(&self, scope: &str, ordering: inkwell::llvm_sys::LLVMAtomicOrdering) {
        let scope = super::super::atomics::sync_scope(&self.module.get_context(), scope);
        // SAFETY: the builder is positioned in a function of the module's context.
        unsafe { inkwell::llvm_sys::core::LLVMBuildFenceSyncScope(self.b.as_mut_ptr(), ordering, scope, c"".as_ptr()) };
    }
    /// The block's size, `blockDim.x * blockDim.y * blockDim.z`.
    pub fn threads_in_block(&self) -> IntValue<'ctx> {
        let [nx, ny, nz] = ["ntid.x", "ntid.y", "ntid.z"].map(|r| self.sreg(r));
        ok(self.b.build_int_mul(ok(self.b.build_int_mul(nx, ny, "nxy")), nz, "nthreads"))
    }
    /// The block's barrier, or for a block of one thread a fence among its memory.
    pub fn meet(&self, barriers: bool) {
        if barriers {
            self.barrier();
        } else {
            self.call("llvm.nvvm.membar.cta", &[]);
        }
    }
    /// A local of `ty`: an alloca in `f`'s entry block.
    pub fn slot(&self, ty: inkwell::types::BasicTypeEnum<'ctx>, name: &str) -> PointerValue<'ctx> {
        let at_entry = self.module.get_context().create_builder();
        let entry = self.f.get_first_basic_block().expect("a function with a body");
        super::super::clone::position_at_start(&at_entry, entry);
        ok(at_entry.build_alloca(ty, name))
    }
    pub fn load32(&self, p: PointerValue<'ctx>, name: &str) -> IntValue<'ctx> {
        ok(self.b.build_load(self.module.get_context().i32_type(), p, name)).into_int_value()
    }
    pub fn load64(&self, p: PointerValue<'ctx>, name: &str) -> IntValue<'ctx> {
        ok(self.b.build_load(self.module.get_context().i64_type(), p, name)).into_int_value()
    }
    pub fn load_ptr(&self, p: PointerValue<'ctx>, name: &str) -> PointerValue<'ctx> {
        ok(self.b.build_load(self.module.get_context().ptr_type(AddressSpace::default()), p, name)).into_pointer_value()
    }
    /// `if (cond) { then(); }`, the builder after it.
    pub fn if_then(&self, cond: IntValue<'ctx>, then: impl FnOnce()) {
        let ctx = self.module.get_context();
        let (body, join) = (ctx.append_basic_block(self.f, "then"), ctx.append_basic_block(self.f, "endif"));
        ok(self.b.build_conditional_branch(cond, body, join));
        self.b.position_at_end(body);
        then();
        ok(self.b.build_unconditional_branch(join));
        self.b.position_at_end(join);
    }
    /// `if (cond) { then(); } else { otherwise(); }`, the builder after it.
    pub fn if_then_else(&self, cond: IntValue<'ctx>, then: impl FnOnce(), otherwise: impl FnOnce()) {
        let ctx = self.module.get_context();
        let (yes, no, join) = (ctx.append_basic_block(self.f, "then"), ctx.append_basic_block(self.f, "else"), ctx.append_basic_block(self.f, "endif"));
        ok(self.b.build_conditional_branch(cond, yes, no));
        self.b.position_at_end(yes);
        then();
        ok(self.b.build_unconditional_branch(join));
        self.b.position_at_end(no);
        otherwise();
        ok(self.b.build_unconditional_branch(join));
        self.b.position_at_end(join);
    }
    /// `for (i = start; i < end; i += step) body(i);` on `i32`, the builder after it.
    pub fn for_loop(&self, start: IntValue<'ctx>, end: IntValue<'ctx>, step: IntValue<'ctx>, body: impl FnOnce(IntValue<'ctx>)) {
        let ctx = self.module.get_context();
        let before = self.b.get_insert_block().expect("positioned");
        let (head, inner, exit) = (ctx.append_basic_block(self.f, "loop"), ctx.append_basic_block(self.f, "loop.body"), ctx.append_basic_block(self.f, "loop.end"));
        ok(self.b.build_unconditional_branch(head));
        self.b.position_at_end(head);
        let i = ok(self.b.build_phi(ctx.i32_type(), "i"));
        let iv = i.as_basic_value().into_int_value();
        ok(self.b.build_conditional_branch(ok(self.b.build_int_compare(IntPredicate::ULT, iv, end, "more")), inner, exit));
        self.b.position_at_end(inner);
        body(iv);
        let next = ok(self.b.build_int_add(iv, step, "i.next"));
        let latch = self.b.get_insert_block().expect("positioned");
        let back = ok(self.b.build_unconditional_branch(head));
        no_unrolling(back);
        i.add_incoming(&[(&start, before), (&next, latch)]);
        self.b.position_at_end(exit);
    }
    /// The number of records of site `s`: `min(counter >> 32, cap)`.
    pub fn count(&self, s: &SiteState<'ctx>) -> IntValue<'ctx> {
        let b = self.b;
        let counter = self.load64(s.counter, "counter");
        let hi = ok(b.build_int_truncate(ok(b.build_right_shift(counter, self.c64(32), false, "hi")), self.module.get_context().i32_type(), "records"));
        ok(b.build_call(intrinsic(self.module, "llvm.umin", &[self.module.get_context().i32_type().into()]), &[hi.into(), self.c32(s.cap).into()], "count"))
            .try_as_basic_value()
            .basic()
            .expect("a min")
            .into_int_value()
    }
    /// Record `i` of the table at `table` (records of `stride` bytes).
    pub fn record(&self, table: PointerValue<'ctx>, i: IntValue<'ctx>, stride: u64) -> PointerValue<'ctx> {
        let i64t = self.module.get_context().i64_type();
        byte_gep(self.b, table, ok(self.b.build_int_mul(ok(self.b.build_int_z_extend(i, i64t, "i.wide")), self.c64(stride), "at")), "rec")
    }
    /// The dims at `offset` of a record, as `like` (a launch's dims operand) takes them.
    pub fn dims(&self, rec: PointerValue<'ctx>, offset: u64, like: BasicValueEnum<'ctx>, name: &str) -> BasicValueEnum<'ctx> {
        let v = [0, 1, 2].map(|k| self.load32(byte_gep(self.b, rec, self.c64(offset + 4 * k), "dim.at"), name));
        dims_value(self.module, self.b, self.f, v, like.is_pointer_value(), name)
    }
}

/// A `__device__` variable of `ty`, zeroed, as a generic pointer.
pub(super) fn device<'ctx>(module: &Module<'ctx>, name: &str, ty: inkwell::types::BasicTypeEnum<'ctx>, align: u32) -> PointerValue<'ctx> {
    let g = module.add_global(ty, Some(AddressSpace::from(1u16)), name);
    g.set_linkage(Linkage::Internal);
    g.set_initializer(&zero_of(ty));
    g.set_alignment(align);
    g.as_pointer_value().const_address_space_cast(module.get_context().ptr_type(AddressSpace::default()))
}

fn zero_of(ty: inkwell::types::BasicTypeEnum<'_>) -> inkwell::values::BasicValueEnum<'_> {
    use inkwell::types::BasicTypeEnum as T;
    match ty {
        T::ArrayType(t) => t.const_zero().into(),
        T::IntType(t) => t.const_zero().into(),
        T::PointerType(t) => t.const_zero().into(),
        T::StructType(t) => t.const_zero().into(),
        T::FloatType(t) => t.const_zero().into(),
        T::VectorType(t) => t.const_zero().into(),
        T::ScalableVectorType(t) => t.const_zero().into(),
    }
}

/// A relaxed read of a shared `i64` in the device's scope (`ld.relaxed.gpu`): a plain load,
/// where a read-modify-write of 0 (`atom.add`) would queue behind every other atomic on the
/// same word (every block of a level of QT reads its grid's entry of the table at once).
pub(super) fn read64<'ctx>(e: &Emit<'_, 'ctx>, p: PointerValue<'ctx>) -> IntValue<'ctx> {
    relaxed_read(e, p, e.module.get_context().i64_type())
}

/// [`read64`] of an `i32`.
pub(super) fn read32<'ctx>(e: &Emit<'_, 'ctx>, p: PointerValue<'ctx>) -> IntValue<'ctx> {
    relaxed_read(e, p, e.module.get_context().i32_type())
}

fn relaxed_read<'ctx>(e: &Emit<'_, 'ctx>, p: PointerValue<'ctx>, ty: inkwell::types::IntType<'ctx>) -> IntValue<'ctx> {
    let value = ok(e.b.build_load(ty, p, "read")).into_int_value();
    let load = value.as_instruction_value().expect("a load");
    load.set_alignment(ty.get_bit_width() / 8).expect("a power of two");
    load.set_atomic_ordering(AtomicOrdering::Monotonic).expect("an atomic load");
    super::super::atomics::set_scope(&e.module.get_context(), load, "device");
    value
}

/// Marks the loop whose back edge is `back` not to be unrolled (`llvm.loop.unroll.disable`):
/// the launch machinery's loops run on its cold paths or copy memory, and each unrolled copy
/// of a launch costs LLVM's and ptxas's time in every module that carries it.
pub(super) fn no_unrolling(back: inkwell::values::InstructionValue<'_>) {
    use inkwell::llvm_sys::core::{LLVMGetMDKindIDInContext, LLVMGetTypeContext, LLVMMDNodeInContext2, LLVMMDStringInContext2, LLVMMetadataAsValue, LLVMSetMetadata, LLVMTypeOf};
    use inkwell::llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
    use inkwell::values::AsValueRef;
    const DISABLE: &str = "llvm.loop.unroll.disable";
    const KIND: &str = "llvm.loop";
    // SAFETY: metadata made in the instruction's context: `!{!self, !{!"llvm.loop.unroll.disable"}}`,
    // its first operand the node itself (LLVM's loop ids), through a temporary node replaced once.
    unsafe {
        let ctx = LLVMGetTypeContext(LLVMTypeOf(back.as_value_ref()));
        let name = LLVMMDStringInContext2(ctx, DISABLE.as_ptr().cast(), DISABLE.len());
        let mut inner = [name];
        let disable = LLVMMDNodeInContext2(ctx, inner.as_mut_ptr(), 1);
        let temp = LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
        let mut ops = [temp, disable];
        let id = LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), 2);
        LLVMMetadataReplaceAllUsesWith(temp, id);
        let kind = LLVMGetMDKindIDInContext(ctx, KIND.as_ptr().cast(), KIND.len() as u32);
        LLVMSetMetadata(back.as_value_ref(), kind, LLVMMetadataAsValue(ctx, id));
    }
}
