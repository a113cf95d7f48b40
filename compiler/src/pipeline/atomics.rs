//! CUDA's `atomicCAS` in Clang's IR, as nvcc compiles it.
//!
//! CUDA documents its atomic functions as relaxed read-modify-writes of device scope: they
//! "do not act as memory fences and do not imply synchronization or ordering constraints"
//! (the programming guide's atomic functions); `atomicCAS_block` and `atomicCAS_system` are
//! the other scopes. nvcc writes `atom.global.cas.b32`, whose PTX defaults are `.relaxed`
//! and `.gpu`.
//!
//! Clang's CUDA headers lower `atomicCAS` (`__iAtomicCAS`, `__uAtomicCAS`, `__ullAtomicCAS`,
//! `__usAtomicCAS`) through the builtins `__nvvm_atom_cas_gen_{i,ll,us}`, which Clang emits
//! as `cmpxchg ... seq_cst seq_cst` in the system scope; LLVM 22's NVPTX honours that order:
//! `fence.sc.sys` before an `atom.acquire.sys.cas` (a 16-bit one also a `fence.acquire.sys`
//! after its loop). Measured on the H100: `samples/bfs.cdp` through Clang at
//! `-flaunch-threshold=128`, whose serial copy of a child makes 128 `atomicCAS` in a row,
//! read 7.1x nvcc's time against 1.8x through the `.cdp` front end, whose code generation
//! writes `syncscope("device") monotonic` (on the H100). The `_block` and
//! `_system` forms reach the IR as intrinsics (`llvm.nvvm.atomic.cas.gen.i.cta`, `.sys`),
//! not as `cmpxchg`, and the other atomic functions as `atomicrmw`, which NVPTX writes as a
//! plain `atom` whatever its order (nvcc's instruction): neither is touched.
//!
//! So, in the device IR of a CUDA C++ file (Clang's, never another front end's IR input,
//! whose order is its author's), each `cmpxchg` ordered `seq_cst` on success and failure in
//! the system scope becomes `monotonic` in the `"device"` scope, the `.cdp` front end's IR
//! for `atomicCAS` and nvcc's PTX. The only other way Clang writes that instruction in device
//! code is GCC's `__sync_val_compare_and_swap` or `__atomic_compare_exchange_n` with
//! `__ATOMIC_SEQ_CST`, which nvcc refuses in device code ("calling a __host__ function
//! (\"__atomic_compare_exchange_4\") from a __global__ function", measured with nvcc 13.5):
//! no program nvcc compiles changes meaning. Order and scope are the only changes: the
//! operands, volatility, weakness and alignment stay.
//!
//! The other atomic functions (`atomicAdd`, `atomicExch`, `atomicMin`, ...) reach the IR as
//! `atomicrmw ... seq_cst` in the system scope, and LLVM 22's NVPTX writes every `atomicrmw` as
//! a plain `atom` whatever its order and scope (measured: `seq_cst` of the system scope and
//! `monotonic` of the device scope give the same `atom.global.add.u32`, `.exch.b32`,
//! `.add.f32`, `.add.f64`, `.min.u32`, `atom.shared.add.u32`): nvcc's relaxed instruction. So
//! they are given the order they have, `monotonic` in the `"device"` scope, which changes no
//! instruction but tells the passes that read orders the truth: `pipeline/defer.rs` keeps no
//! small grid past an atomic that orders, and `samples/bfs.cdp` through Clang, whose
//! `atomicAdd` after its launch read as `seq_cst`, ran its hubs' 128 visits alone at the site
//! instead of with its warp: 2.0x nvcc's time at the default against 0.69 through the `.cdp`
//! front end.
//!
//! Invariant afterwards: no `cmpxchg` or `atomicrmw` of the module is sequentially consistent
//! in the system scope; a module without one is untouched.

use inkwell::context::ContextRef;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::LLVMAtomicOrdering;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, InstructionOpcode};

/// LLVM's id of the system scope, the default one (`SyncScope::System`).
const SYSTEM_SCOPE: u32 = 1;

/// LLVM's id of the synchronisation scope `name` in `ctx` (NVPTX's `"block"`, `"device"`, ...).
pub(crate) fn sync_scope(ctx: &ContextRef<'_>, name: &str) -> u32 {
    // SAFETY: the name is a byte slice of the length given; the context outlives the call.
    unsafe { LLVMGetSyncScopeID(ctx.raw(), name.as_ptr().cast(), name.len()) }
}

/// Puts `atomic` (an atomic load, store, `atomicrmw` or `cmpxchg` just built in `ctx`) in the
/// synchronisation scope `name`.
pub(crate) fn set_scope(ctx: &ContextRef<'_>, atomic: inkwell::values::InstructionValue<'_>, name: &str) {
    let scope = sync_scope(ctx, name);
    // SAFETY: `atomic` is a live atomic instruction; the scope id is its context's.
    unsafe { LLVMSetAtomicSyncScopeID(atomic.as_value_ref(), scope) };
}

/// Rewrites every sequentially consistent system-scope `cmpxchg` and `atomicrmw` of `module`
/// (module docs); returns how many.
pub fn atomics_as_nvcc(module: &Module<'_>) -> usize {
    let device_scope = sync_scope(&module.get_context(), "device");
    let mut rewritten = 0;
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            for inst in block.get_instructions() {
                let value = inst.as_value_ref();
                if inst.get_opcode() == InstructionOpcode::AtomicRMW {
                    // SAFETY: `value` is a live `atomicrmw` instruction of this module.
                    unsafe {
                        if LLVMGetOrdering(value) == LLVMAtomicOrdering::LLVMAtomicOrderingSequentiallyConsistent && LLVMGetAtomicSyncScopeID(value) == SYSTEM_SCOPE {
                            LLVMSetOrdering(value, LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic);
                            LLVMSetAtomicSyncScopeID(value, device_scope);
                            rewritten += 1;
                        }
                    }
                    continue;
                }
                if inst.get_opcode() != InstructionOpcode::AtomicCmpXchg {
                    continue;
                }
                // SAFETY: `value` is a live `cmpxchg` instruction of this module.
                unsafe {
                    let sequential = LLVMGetCmpXchgSuccessOrdering(value) == LLVMAtomicOrdering::LLVMAtomicOrderingSequentiallyConsistent
                        && LLVMGetCmpXchgFailureOrdering(value) == LLVMAtomicOrdering::LLVMAtomicOrderingSequentiallyConsistent;
                    if !sequential || LLVMGetAtomicSyncScopeID(value) != SYSTEM_SCOPE {
                        continue;
                    }
                    LLVMSetCmpXchgSuccessOrdering(value, LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic);
                    LLVMSetCmpXchgFailureOrdering(value, LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic);
                    LLVMSetAtomicSyncScopeID(value, device_scope);
                }
                rewritten += 1;
            }
        }
    }
    rewritten
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    /// What Clang 22 writes for `atomicCAS` on an `int *`, an `unsigned short *` and a
    /// `__shared__` word (`clang++-22 -x cuda --cuda-device-only -O3`, trimmed) and a weak
    /// one (rewritten, its weakness kept), beside what the pass leaves alone: a relaxed
    /// exchange of device scope, a `seq_cst` one of block scope and an `acq_rel` one; and
    /// `atomicAdd`'s `atomicrmw` (rewritten too).
    const IR: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
@word = internal addrspace(3) global i32 0, align 4

define ptx_kernel void @k(ptr %p, ptr %h, ptr %q, i32 %c, i32 %v) {
  %a = cmpxchg ptr %p, i32 %c, i32 %v seq_cst seq_cst, align 4
  %a0 = extractvalue { i32, i1 } %a, 0
  store i32 %a0, ptr %q, align 4
  %b = cmpxchg ptr %h, i16 1, i16 2 seq_cst seq_cst, align 2
  %s = cmpxchg volatile ptr addrspace(3) @word, i32 %c, i32 %v seq_cst seq_cst, align 4
  %r = cmpxchg ptr %p, i32 %c, i32 %v syncscope("device") monotonic monotonic, align 4
  %t = cmpxchg ptr %p, i32 %c, i32 %v syncscope("block") seq_cst seq_cst, align 4
  %w = cmpxchg weak ptr %p, i32 %c, i32 %v seq_cst seq_cst, align 4
  %x = cmpxchg ptr %p, i32 %c, i32 %v acq_rel acquire, align 4
  %y = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  ret void
}
"#;

    #[test]
    fn clangs_sequentially_consistent_atomics_become_relaxed_ones_of_device_scope() {
        let context = Context::create();
        let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(IR.as_bytes(), "atomics")).unwrap();
        assert_eq!(atomics_as_nvcc(&module), 3 + 1 + 1);
        module.verify().unwrap();
        let ir = module.print_to_string().to_string();
        insta::assert_snapshot!(ir.lines().filter(|l| l.contains("cmpxchg") || l.contains("atomicrmw")).collect::<Vec<_>>().join("\n"));
    }

    #[test]
    fn a_module_without_a_sequentially_consistent_system_scope_exchange_is_untouched() {
        let context = Context::create();
        let text: String = IR.lines().filter(|l| (!l.contains("seq_cst seq_cst") || l.contains("syncscope")) && !l.contains("%a") && !l.contains("atomicrmw")).map(|l| format!("{l}\n")).collect();
        let module = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "atomics")).unwrap();
        let before = module.print_to_string().to_string();
        assert!(text.contains("syncscope(\"block\") seq_cst seq_cst") && text.contains("acq_rel acquire"), "{text}");
        assert_eq!(atomics_as_nvcc(&module), 0);
        assert_eq!(module.print_to_string().to_string(), before);
    }
}
