//! A static pool of record tables for warp granularity, so that a warp's table costs two
//! atomics instead of a device `cudaMalloc` and `cudaFree` (measured on the H100: the
//! allocation dominated a warp-aggregated launch).
//!
//! Per child `C`: `__device__ record C$agg_pool[chunks * 32]`, one chunk of 32 records (a
//! warp's table) per bit of `__device__ unsigned C$agg_pool_used[chunks / 32]`. The leader of
//! a warp takes a free bit with `atomicOr`, starting at a word chosen by its warp, and falls
//! back to `cudaMalloc` when every chunk is taken; whoever is done with a table gives it back
//! with `atomicAnd` if it lies in the pool and with `cudaFree` otherwise.
//! The heap allocation of a table (`heap_table`) is here too, for both granularities.

use super::*;
use crate::hir::{GlobalSpace, UnaryOp};

/// Records per chunk: a warp's table.
pub(super) const CHUNK_RECORDS: u64 = 32;
/// Chunks per child at most, and the pool's size in bytes at most.
const MAX_CHUNKS: u64 = 2048;
const MAX_POOL_BYTES: u64 = 8 << 20;

/// The pool of one child's record tables.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pool {
    records: GlobalId,
    used: GlobalId,
    words: u64,
}

impl Pool {
    /// Declares the pool of `child`'s records (`record`); `None` when not even one word of
    /// chunks fits the byte budget (records over 8 KiB), so that tables come from the heap.
    pub(super) fn declare(module: &mut Module, child: FuncId, record: StructId) -> Option<Pool> {
        let rec_size = module.size_align(&Type::Struct(record)).0.max(1);
        let chunks = MAX_CHUNKS.min(MAX_POOL_BYTES / (rec_size * CHUNK_RECORDS)) / 32 * 32;
        if chunks == 0 {
            return None;
        }
        let name = module.function(child).name.clone();
        let span = module.function(child).span;
        let mut device = |name: String, ty: Type| new_global(module, name, ty, GlobalSpace::Device, span);
        let records = device(format!("{name}$agg_pool"), Type::Array { elem: Box::new(Type::Struct(record)), len: chunks * CHUNK_RECORDS });
        let used = device(format!("{name}$agg_pool_used"), Type::Array { elem: Box::new(Type::UINT), len: chunks / 32 });
        Some(Pool { records, used, words: chunks / 32 })
    }

    fn first_record(&self, module: &Module, b: &B) -> Expr {
        b.decay(b.global(self.records, &module.global(self.records).ty))
    }

    fn word(&self, module: &Module, b: &B, index: Expr) -> Expr {
        b.index(b.decay(b.global(self.used, &module.global(self.used).ty)), index)
    }

    /// Statements that set `table` (a local of type `record *`, null before) to a free chunk,
    /// if there is one: `start` (unsigned) picks the word to begin with.
    pub(super) fn take(&self, module: &Module, f: &mut Function, b: &B, table: LocalId, start: Expr) -> Vec<Stmt> {
        let u = Type::UINT;
        let rec_ptr = f.locals[table.0 as usize].ty.clone();
        let span = b.span;
        let [k, w, v, bit, old] = ["k", "w", "v", "bit", "old"].map(|n| new_local(f, &format!("agg$pool_{n}"), u.clone(), span));
        let lu = |id: LocalId| b.local(id, &u);
        let null = || b.null(&rec_ptr);
        let is_null = || b.cmp(BinaryOp::Eq, b.local(table, &rec_ptr), null());
        let mask = || b.arith(BinaryOp::Shl, b.uint(1), lu(bit));
        // the lowest clear bit of v: popc((~v & (v + 1)) - 1)
        let lowest_clear = b.arith(
            BinaryOp::BitAnd,
            b.e(ExprKind::Unary { op: UnaryOp::BitNot, operand: Box::new(lu(v)) }, u.clone()),
            b.arith(BinaryOp::Add, lu(v), b.uint(1)),
        );
        let chunk = b.arith(BinaryOp::Add, b.arith(BinaryOp::Mul, lu(w), b.uint(32)), lu(bit));
        let claim = vec![
            b.decl(bit, b.builtin(Builtin::Warp(WarpOp::PopCount), vec![b.arith(BinaryOp::Sub, lowest_clear, b.uint(1))], &u)),
            b.decl(old, b.atomic(AtomicOp::Or, b.addr_of(self.word(module, b, lu(w))), mask())),
            b.if_else(
                b.cmp(BinaryOp::Eq, b.arith(BinaryOp::BitAnd, lu(old), mask()), b.uint(0)),
                vec![
                    b.assign(
                        b.local(table, &rec_ptr),
                        b.ptr_add(self.first_record(module, b), b.arith(BinaryOp::Mul, chunk, b.uint(CHUNK_RECORDS))),
                    ),
                    Stmt::Break,
                ],
                vec![b.assign(lu(v), b.arith(BinaryOp::BitOr, lu(old), mask()))],
            ),
        ];
        let step = |id: LocalId| b.e(ExprKind::IncDec { place: Box::new(lu(id)), increment: true, prefix: true }, u.clone());
        vec![b.for_(
            vec![b.decl(k, b.uint(0))],
            b.and(b.cmp(BinaryOp::Lt, lu(k), b.uint(self.words)), is_null()),
            step(k),
            vec![
                b.decl(w, b.arith(BinaryOp::Rem, b.arith(BinaryOp::Add, start.clone(), lu(k)), b.uint(self.words))),
                b.decl(v, self.word(module, b, lu(w))),
                Stmt::Loop {
                    init: Block::default(),
                    cond: Some(b.cmp(BinaryOp::Ne, lu(v), b.uint(u32::MAX as u64))),
                    step: None,
                    body: Block { stmts: claim },
                    check_cond_first: true,
                },
            ],
        )]
    }
}

/// `cudaMalloc(&allocation, count * sizeof(record))`, a `cudaError_t`: a table from the heap
/// (`allocation` is a `void *` local; `count` an `unsigned int`).
pub(super) fn heap_table(module: &Module, b: &B, allocation: LocalId, count: Expr, record: StructId) -> Expr {
    let size_t = Type::size_t();
    let record_bytes = b.e(ExprKind::IntConst(module.size_align(&Type::Struct(record)).0 as i64), size_t.clone());
    let bytes = b.arith(BinaryOp::Mul, b.cast(count, &size_t), record_bytes);
    let place = b.addr_of(b.local(allocation, &Type::pointer_to(Type::Void)));
    b.builtin(Builtin::Runtime(RuntimeFn::Malloc), vec![place, bytes], &Type::CudaError)
}

/// Gives `table` (a `record *` expression) back: to the pool when it lies in it, to its owner
/// when it is the arena of grid granularity (`arena.rs`), to the heap otherwise.
pub(super) fn give_back(module: &Module, b: &B, pool: Option<&Pool>, arena: Option<&super::arena::Arena>, table: Expr) -> Stmt {
    let void_ptr = Type::pointer_to(Type::Void);
    let mut free = Stmt::Expr(b.builtin(Builtin::Runtime(RuntimeFn::Free), vec![b.cast(table.clone(), &void_ptr)], &Type::CudaError));
    if let Some(arena) = arena {
        free = b.if_else(arena.contains(module, b, table.clone()), arena.release(module, b), vec![free]);
    }
    let Some(pool) = pool else { return free };
    let u = Type::UINT;
    let first = pool.first_record(module, b);
    let end = b.ptr_add(first.clone(), b.uint(pool.words * 32 * CHUNK_RECORDS));
    let in_pool = b.and(b.cmp(BinaryOp::Ge, table.clone(), first.clone()), b.cmp(BinaryOp::Lt, table.clone(), end));
    let long = Type::Int(b.ptr_int);
    let offset = b.e(ExprKind::Binary { op: BinaryOp::PtrDiff, lhs: Box::new(table), rhs: Box::new(first) }, long.clone());
    let chunk = b.cast(b.arith(BinaryOp::Div, offset, b.e(ExprKind::IntConst(CHUNK_RECORDS as i64), long)), &u);
    let bit = b.arith(BinaryOp::Shl, b.uint(1), b.arith(BinaryOp::Rem, chunk.clone(), b.uint(32)));
    let clear = b.atomic(
        AtomicOp::And,
        b.addr_of(pool.word(module, b, b.arith(BinaryOp::Div, chunk, b.uint(32)))),
        b.e(ExprKind::Unary { op: UnaryOp::BitNot, operand: Box::new(bit) }, u),
    );
    b.if_else(in_pool, vec![Stmt::Expr(clear)], vec![free])
}
