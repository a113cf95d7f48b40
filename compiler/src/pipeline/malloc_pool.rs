//! The device heap's pool (`-fdevice-malloc-pool`, off by default): small device-side
//! allocations from a pool in the program's static memory instead of the CUDA heap.
//!
//! On the device, `cudaMalloc` and `cudaFree` are the heap's `malloc` and `free` (the CUDA
//! programming guide, "Memory Allocation and Lifetime"), and the heap is slow when many
//! threads allocate: KLAP's BT, one `cudaMalloc` of at most 256 bytes in each of 25,600
//! threads, spends 5.4 ms of its 5.5 at thresholding's rule in them, and takes 0.036 ms with
//! a pool (on the H100). With the pass each call of `malloc`, `free`, `cudaMalloc` or
//! `cudaFree` (also under CUDA 12's names, `__cudaCDP2Malloc` and `__cudaCDP2Free`) calls a
//! wrapper of the same type instead:
//!
//! - an allocation of 1 to [`LARGEST`] bytes takes 16-byte-aligned blocks from the pool with
//!   one atomic add (`malloc_pool.ll`), and asks the heap as before when the pool has no room
//!   or the size is 0 or larger;
//! - a free of a pointer into the pool gives its allocation back (when none is left live the
//!   pool is empty again and is reused from its start); any other pointer goes to the heap's
//!   `free` as before.
//!
//! The pool is [`CAPACITY`] bytes of `common` static memory, shared by every object compiled
//! with the pass: a pointer one file allocated may be freed in another. It is not the heap's
//! memory: `cudaLimitMallocHeapSize` does not bound it, and allocations the pool serves leave
//! the heap to the others. A pool pointer freed by code compiled without the pass (nvcc's, or
//! cdpc's without the option) reaches the heap's `free`, which does not know it: every device
//! file of a program that frees what another allocated is compiled with the option (docs).
//!
//! The pass runs after thresholding and aggregation, so that their own allocations (grid
//! aggregation's heap nodes) are pooled too. A function of those names that the module
//! defines, or declares with another type, is not the runtime's: the module is then left
//! untouched, with `W1022`, since pooling some allocations of a program and not the frees
//! that go with them would hand pool pointers to the heap.
//!
//! The pool can also be left to the device link ([`MallocPool::AtLink`], the default of
//! relocatable code): the wrappers are the same, but the two functions they try first,
//! `__cdpc_pool_take_v1` and `__cdpc_pool_give_v1`, are `weak` and serve nothing (the heap,
//! as without the pass). When the device link sees that every device object of the program
//! hands its frees to such wrappers, it adds [`link_object_ir`]'s module, whose strong
//! definitions of the two are the pool's (`driver/pool.rs`); otherwise the weak ones stay, and
//! nvcc's link of the same objects keeps them too.
//!
//! Invariant afterwards: every use of the runtime's allocation functions is a wrapper's,
//! whose fallback call is then the only one; a module that calls none of them, or that was
//! pooled or routed before, is untouched.

use crate::diag::{Code, Diagnostic, Span};
use inkwell::llvm_sys::core::{LLVMGetBasicBlockParent, LLVMGetInstructionParent, LLVMReplaceAllUsesWith};
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetData;
use inkwell::values::{AsValueRef, BasicValue};

/// The pool's size in bytes (32 MiB), the same in every object so that they share one pool.
pub const CAPACITY: u64 = 32 << 20;
/// The largest allocation the pool serves (16 KiB); larger ones go to the heap.
pub const LARGEST: u64 = 16 << 10;
/// The pool's block: every allocation is a whole number of them, 16-byte-aligned as the heap's.
const BLOCK: u64 = 16;
/// The pool's helpers; the wrappers follow them.
const HELPERS: &str = include_str!("malloc_pool.ll");
/// The pool's state, which every pooled module keeps (its helpers may be inlined away): a
/// module that has it was pooled already.
pub const STATE: &str = "__cdpc_malloc_state_v1";
/// The function a wrapper asks for a block first: the pool's, or (weak) none.
pub const TAKE: &str = "__cdpc_pool_take_v1";
/// The function a wrapper hands a pointer to first: the pool's, or (weak) "not the pool's".
pub const GIVE: &str = "__cdpc_pool_give_v1";
/// The names under which device code frees what the runtime allocated.
pub const FREES: &[&str] = &["free", "cudaFree", "__cudaCDP2Free"];

/// Where a module's device-side allocations are served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MallocPool {
    /// By the heap, as the program wrote them (`-fno-device-malloc-pool`; the launch
    /// pipeline's default, where the driver decides).
    #[default]
    Off,
    /// Through wrappers whose pool the device link adds where it proves it safe (the driver's
    /// default for relocatable code): `weak` functions that serve nothing until then.
    AtLink,
    /// From the pool, linked into the module (`-fdevice-malloc-pool`).
    On,
    /// The module is all of its program's device code (a program built from one CUDA C++
    /// source without `-rdc`, `cdpc app.cu -o app`: no other module can free what it
    /// allocates): the pool linked into it where it allocates through the wrappers, as the
    /// device link decides for relocatable code; the heap, without a warning, where it
    /// allocates nothing or a function of a runtime name is its own. The driver's choice,
    /// never an option's.
    Program,
}

impl std::fmt::Display for MallocPool {
    /// The option pairs' spelling: `false`, `link`, `true`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MallocPool::Off => "false",
            MallocPool::AtLink | MallocPool::Program => "link",
            MallocPool::On => "true",
        })
    }
}

/// What a runtime function does, which says its type and its wrapper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// `void *malloc(size_t)`.
    Malloc,
    /// `void free(void *)`.
    Free,
    /// `cudaError_t cudaMalloc(void **, size_t)`.
    CudaMalloc,
    /// `cudaError_t cudaFree(void *)`.
    CudaFree,
}

/// The device runtime's allocation functions, under every name device code calls them.
const RUNTIME: &[(&str, Role)] =
    &[("malloc", Role::Malloc), ("free", Role::Free), ("cudaMalloc", Role::CudaMalloc), ("__cudaCDP2Malloc", Role::CudaMalloc), ("cudaFree", Role::CudaFree), ("__cudaCDP2Free", Role::CudaFree)];

/// Makes the module's device-side allocations go through the pool's wrappers (module docs):
/// with `mode` [`MallocPool::On`] the pool is linked in, with [`MallocPool::AtLink`] its
/// `weak` stand-ins, with [`MallocPool::Program`] the pool where the module allocates, and
/// [`MallocPool::Off`] changes nothing. Returns how many runtime
/// functions now go through a wrapper, and `W1022` when a function of a runtime name is not
/// the runtime's (the module is then untouched; the warning only where the pool was asked
/// for); `Err` when LLVM refused the helpers (a defect of cdpc).
pub fn pool(module: &Module<'_>, mode: MallocPool, source: &crate::pipeline::SourceText) -> Result<(usize, Vec<Diagnostic>), String> {
    if mode == MallocPool::Off || module.get_global(STATE).is_some() || module.get_function(GIVE).is_some() || module.get_function(TAKE).is_some() {
        return Ok((0, Vec::new()));
    }
    let size_bits = TargetData::create(&module.get_data_layout().as_str().to_string_lossy()).get_pointer_byte_size(None) * 8;
    let mut used = Vec::new();
    // The first function that is not the runtime's: what it is, and its line in textual IR.
    let mut foreign = None;
    for &(name, role) in RUNTIME {
        let Some(function) = module.get_function(name) else { continue };
        let expected = signature(role, size_bits);
        let actual = function.get_type().print_to_string().to_string();
        if function.count_basic_blocks() > 0 {
            foreign.get_or_insert((
                format!("the module defines `{name}`"),
                format!("the program's own `{name}`, not the device runtime's"),
                crate::pipeline::location::define_line(&source.text, name),
            ));
        } else if actual != expected {
            foreign.get_or_insert((
                format!("`{name}` is declared as `{actual}`, not `{expected}`"),
                format!("not the device runtime's `{name}`, which is `{expected}`"),
                crate::pipeline::location::declare_line(&source.text, name),
            ));
        } else if function.as_global_value().as_pointer_value().get_first_use().is_some() {
            used.push((name, role, function));
        }
    }
    if used.is_empty() {
        return Ok((0, Vec::new()));
    }
    let allocates = used.iter().any(|&(_, role, _)| matches!(role, Role::Malloc | Role::CudaMalloc));
    if mode == MallocPool::Program && !allocates {
        // Nothing for the pool to serve: the heap, as the link's `Unused` decision.
        return Ok((0, Vec::new()));
    }
    if let Some((what, label, line)) = foreign {
        if matches!(mode, MallocPool::AtLink | MallocPool::Program) {
            // Not asked for: the module's object tells the link it frees outside the pool.
            return Ok((0, Vec::new()));
        }
        let warning = Diagnostic::new(Code::MallocPoolNotUsed, line.unwrap_or(Span::new(0, 0)), format!("device allocations not pooled: {what}"))
            .with_primary_message(label)
            .with_note("-fdevice-malloc-pool pools the device runtime's `malloc`, `free`, `cudaMalloc` and `cudaFree`; a function of one of those names that is not the runtime's could be handed a pool pointer, so no allocation of this file is pooled");
        return Ok((0, vec![warning]));
    }
    let wrapper = |name: &str| format!("__cdpc_pool.{name}");
    let mut text = match mode {
        MallocPool::On | MallocPool::Program => helpers("internal"),
        // Only the stand-ins the wrappers call: a weak definition stays in the object, and the
        // link reads `take`'s as "allocates through the pool" (`driver/pool.rs`).
        _ => {
            let frees = used.iter().any(|&(_, role, _)| matches!(role, Role::Free | Role::CudaFree));
            let take = format!("\ndefine weak ptr @{TAKE}(i64 %size) {{\n  ret ptr null\n}}\n");
            let give = format!("\ndefine weak i1 @{GIVE}(ptr %pointer) {{\n  ret i1 false\n}}\n");
            format!("{}{}", if allocates { take.as_str() } else { "" }, if frees { give.as_str() } else { "" })
        }
    };
    for &(name, role, _) in &used {
        text.push_str(&wrapper_ir(&wrapper(name), name, role, size_bits));
    }
    // Every use of a runtime function becomes one of its wrapper's declaration, before the
    // wrappers, whose own calls of it are the only ones afterwards, are linked in.
    for &(name, _, function) in &used {
        let declared = module.add_function(&wrapper(name), function.get_type(), Some(Linkage::External));
        // SAFETY: both are live functions of this module of one type.
        unsafe { LLVMReplaceAllUsesWith(function.as_value_ref(), declared.as_value_ref()) };
    }
    let context = module.get_context();
    let helpers = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "cdpc-malloc-pool")).map_err(|e| e.to_string())?;
    helpers.set_triple(&module.get_triple());
    helpers.set_data_layout(&module.get_data_layout());
    module.link_in_module(helpers).map_err(|e| e.to_string())?;
    for &(name, ..) in &used {
        if let Some(f) = module.get_function(&wrapper(name)) {
            f.set_linkage(Linkage::Internal);
        }
    }
    Ok((used.len(), Vec::new()))
}

/// The pool's helpers, `take` and `give` of `linkage` (LLVM's word; empty: external).
fn helpers(linkage: &str) -> String {
    HELPERS.replace("{capacity}", &CAPACITY.to_string()).replace("{units}", &(CAPACITY / BLOCK).to_string()).replace("{largest}", &LARGEST.to_string()).replace("{linkage}", linkage)
}

/// The module the device link adds to pool a program whose objects were compiled with
/// [`MallocPool::AtLink`]: the pool, its state, and external `take` and `give`, which take the
/// place of the objects' `weak` ones. Target-independent IR: the caller gives it NVPTX's triple
/// and data layout.
pub fn link_object_ir() -> String {
    format!("; cdpc's device allocation pool, added by the device link (pipeline::malloc_pool)\n{}", helpers(""))
}

/// The uses of the runtime's allocation functions outside the pool's wrappers: none after
/// [`pool`] pooled the module (its invariant), one per call before (a function's uses other
/// than instructions, a global's initializer, count once).
pub fn unpooled_uses(module: &Module<'_>) -> usize {
    RUNTIME
        .iter()
        .filter_map(|&(name, _)| module.get_function(name))
        .map(|function| {
            let users = crate::pipeline::clone::users(function.as_value_ref());
            // SAFETY: each user is a live instruction of this module.
            let outside =
                users.instructions.iter().filter(|&&user| !unsafe { crate::pipeline::value_name(LLVMGetBasicBlockParent(LLVMGetInstructionParent(user))) }.starts_with("__cdpc_pool.")).count();
            outside + usize::from(users.other)
        })
        .sum()
}

/// The LLVM type of a runtime function, as `print_to_string` writes it.
fn signature(role: Role, size_bits: u32) -> String {
    match role {
        Role::Malloc => format!("ptr (i{size_bits})"),
        Role::Free => "void (ptr)".to_string(),
        Role::CudaMalloc => format!("i32 (ptr, i{size_bits})"),
        Role::CudaFree => "i32 (ptr)".to_string(),
    }
}

/// `wrapper`, of `runtime`'s type: the pool first, `runtime` when the pool cannot serve.
fn wrapper_ir(wrapper: &str, runtime: &str, role: Role, size_bits: u32) -> String {
    let size = format!("i{size_bits}");
    let align = size_bits / 8;
    let widen = if size_bits == 64 { "add i64 %size, 0".to_string() } else { format!("zext {size} %size to i64") };
    match role {
        Role::Malloc => format!(
            "\ndefine ptr @\"{wrapper}\"({size} %size) {{\nentry:\n  %bytes = {widen}\n  %block = call ptr @__cdpc_pool_take_v1(i64 %bytes)\n  %pooled = icmp ne ptr %block, null\n  br i1 %pooled, label %done, label %heap\n\nheap:\n  %other = call ptr @{runtime}({size} %size)\n  br label %done\n\ndone:\n  %result = phi ptr [ %block, %entry ], [ %other, %heap ]\n  ret ptr %result\n}}\n\ndeclare ptr @{runtime}({size})\n"
        ),
        Role::CudaMalloc => format!(
            "\ndefine i32 @\"{wrapper}\"(ptr %out, {size} %size) {{\nentry:\n  %bytes = {widen}\n  %block = call ptr @__cdpc_pool_take_v1(i64 %bytes)\n  %pooled = icmp ne ptr %block, null\n  br i1 %pooled, label %store, label %heap\n\nstore:\n  store ptr %block, ptr %out, align {align}\n  ret i32 0\n\nheap:\n  %status = call i32 @{runtime}(ptr %out, {size} %size)\n  ret i32 %status\n}}\n\ndeclare i32 @{runtime}(ptr, {size})\n"
        ),
        Role::Free => format!(
            "\ndefine void @\"{wrapper}\"(ptr %pointer) {{\nentry:\n  %pooled = call i1 @__cdpc_pool_give_v1(ptr %pointer)\n  br i1 %pooled, label %done, label %heap\n\nheap:\n  call void @{runtime}(ptr %pointer)\n  br label %done\n\ndone:\n  ret void\n}}\n\ndeclare void @{runtime}(ptr)\n"
        ),
        Role::CudaFree => format!(
            "\ndefine i32 @\"{wrapper}\"(ptr %pointer) {{\nentry:\n  %pooled = call i1 @__cdpc_pool_give_v1(ptr %pointer)\n  br i1 %pooled, label %done, label %heap\n\nheap:\n  %status = call i32 @{runtime}(ptr %pointer)\n  ret i32 %status\n\ndone:\n  ret i32 0\n}}\n\ndeclare i32 @{runtime}(ptr)\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::tests::function;
    use crate::pipeline::SourceText;
    use inkwell::context::Context;

    /// What the two front ends write for the runtime's allocation functions (Clang's CUDA 13
    /// headers: `__cudaCDP2Malloc`, `__cudaCDP2Free`; the kernel language and older headers:
    /// `cudaMalloc`, `cudaFree`; both: `malloc`, `free`), a function that stores `free`'s
    /// address, and a kernel that allocates nothing.
    const IR: &str = r#"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @take(ptr %out, i64 %n) {
  %a = call i32 @__cudaCDP2Malloc(ptr %out, i64 %n)
  %p = call noalias ptr @malloc(i64 %n)
  %slot = getelementptr ptr, ptr %out, i64 1
  store ptr %p, ptr %slot, align 8
  %b = call i32 @cudaMalloc(ptr %slot, i64 16)
  ret void
}

define ptx_kernel void @give(ptr %p, ptr %q, ptr %r) {
  %a = call i32 @__cudaCDP2Free(ptr %p)
  call void @free(ptr %q)
  %b = call i32 @cudaFree(ptr %r)
  ret void
}

define void @deleter(ptr %slot) {
  store ptr @free, ptr %slot, align 8
  ret void
}

define ptx_kernel void @other(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}

declare i32 @__cudaCDP2Malloc(ptr, i64)
declare i32 @__cudaCDP2Free(ptr)
declare i32 @cudaMalloc(ptr, i64)
declare i32 @cudaFree(ptr)
declare noalias ptr @malloc(i64)
declare void @free(ptr allocptr captures(none))
"#;

    fn module<'c>(context: &'c Context, ir: &str) -> Module<'c> {
        context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "pool")).unwrap()
    }

    fn text(module: &Module<'_>) -> String {
        module.print_to_string().to_string()
    }

    #[test]
    fn every_runtime_allocation_call_goes_through_a_wrapper_that_tries_the_pool_first() {
        let context = Context::create();
        let module = module(&context, IR);
        assert_eq!(unpooled_uses(&module), 7);
        let (wrapped, warnings) = pool(&module, MallocPool::On, &SourceText::default()).unwrap();
        assert_eq!((wrapped, warnings.len()), (6, 0));
        module.verify().unwrap();
        assert_eq!(unpooled_uses(&module), 0);
        let ir = text(&module);
        // The kernels call the wrappers, `free`'s stored address is its wrapper's.
        insta::assert_snapshot!("pooled_kernels", [function(&ir, "take"), function(&ir, "give"), function(&ir, "deleter"), function(&ir, "other")].join("\n"));
        // Each wrapper: the pool, then the runtime function it stands for.
        insta::assert_snapshot!("wrappers", ["__cdpc_pool.malloc", "__cdpc_pool.__cudaCDP2Malloc", "__cdpc_pool.free", "__cdpc_pool.cudaFree"].map(|w| function(&ir, w)).join("\n"));
        // One pool and one state word, shared by every object of the program.
        assert!(ir.contains(&format!("@__cdpc_malloc_pool_v1 = common addrspace(1) global [{CAPACITY} x i8] zeroinitializer, align 16")), "{ir}");
        assert!(ir.contains("@__cdpc_malloc_state_v1 = common addrspace(1) global i64 0, align 8"), "{ir}");
        for wrapper in ["malloc", "free", "cudaMalloc", "cudaFree", "__cudaCDP2Malloc", "__cudaCDP2Free"] {
            assert_eq!(module.get_function(&format!("__cdpc_pool.{wrapper}")).unwrap().get_linkage(), Linkage::Internal);
        }
        // Pooled once: a second run finds the pool's state and changes nothing, also after the
        // clean-up has inlined the wrappers and helpers and removed them.
        let before = text(&module);
        assert_eq!(pool(&module, MallocPool::On, &SourceText::default()).unwrap().0, 0);
        assert_eq!(text(&module), before);
        let tm = crate::back::target_machine(&crate::Target::default(), 3).unwrap();
        crate::pipeline::cleanup(&module, &tm, true).unwrap();
        assert!(module.get_function("__cdpc_pool_take_v1").is_none(), "{}", text(&module));
        let cleaned = text(&module);
        assert_eq!(pool(&module, MallocPool::On, &SourceText::default()).unwrap().0, 0);
        assert_eq!(text(&module), cleaned);
    }

    #[test]
    fn the_pool_serves_one_to_16_kib_and_gives_back_only_its_own_blocks() {
        let context = Context::create();
        let module = module(&context, IR);
        pool(&module, MallocPool::On, &SourceText::default()).unwrap();
        let ir = text(&module);
        // The bounds the wrappers rely on: sizes 1 to LARGEST (size - 1 < LARGEST, unsigned),
        // blocks of 16 bytes up to CAPACITY / 16, pointers in [pool, pool + CAPACITY).
        insta::assert_snapshot!("helpers", ["__cdpc_pool_take_v1", "__cdpc_pool_drop", "__cdpc_pool_give_v1"].map(|f| function(&ir, f)).join("\n"));
        let take = function(&ir, "__cdpc_pool_take_v1");
        assert!(take.contains(&format!("icmp ult i64 %less, {LARGEST}")) && take.contains(&format!("icmp ule i64 %end, {}", CAPACITY / 16)), "{take}");
        assert!(function(&ir, "__cdpc_pool_give_v1").contains(&format!("icmp ult i64 %offset, {CAPACITY}")));
    }

    #[test]
    fn left_to_the_link_the_wrappers_ask_weak_functions_that_serve_nothing() {
        let context = Context::create();
        let module = module(&context, IR);
        let (wrapped, warnings) = pool(&module, MallocPool::AtLink, &SourceText::default()).unwrap();
        assert_eq!((wrapped, warnings.len()), (6, 0));
        module.verify().unwrap();
        assert_eq!(unpooled_uses(&module), 0);
        let ir = text(&module);
        // No pool in the object: the link adds it, or the weak functions stay.
        assert!(!ir.contains("__cdpc_malloc_pool_v1") && !ir.contains(STATE), "{ir}");
        assert_eq!(function(&ir, TAKE), "define weak ptr @__cdpc_pool_take_v1(i64 %size) {\n  ret ptr null\n}");
        assert_eq!(function(&ir, GIVE), "define weak i1 @__cdpc_pool_give_v1(ptr %pointer) {\n  ret i1 false\n}");
        // The same wrappers as the pool's own.
        assert!(function(&ir, "__cdpc_pool.free").contains("call i1 @__cdpc_pool_give_v1(ptr %pointer)"));
        // The optimiser keeps the calls: a weak function may be replaced at the link.
        let tm = crate::back::target_machine(&crate::Target::default(), 3).unwrap();
        crate::pipeline::cleanup(&module, &tm, true).unwrap();
        let cleaned = text(&module);
        assert!(function(&cleaned, "give").contains("call i1 @__cdpc_pool_give_v1"), "{cleaned}");
        assert!(function(&cleaned, "take").contains("call ptr @__cdpc_pool_take_v1"), "{cleaned}");
        // Routed once: a second run changes nothing, also asked for the pool itself.
        assert_eq!(pool(&module, MallocPool::On, &SourceText::default()).unwrap().0, 0);
        assert_eq!(text(&module), cleaned);
    }

    #[test]
    fn left_to_the_link_a_foreign_free_leaves_the_module_alone_without_a_warning() {
        let context = Context::create();
        let module = module(&context, &IR.replace("declare void @free(ptr allocptr captures(none))", "define void @free(ptr %p) {\n  ret void\n}"));
        let before = text(&module);
        assert_eq!(pool(&module, MallocPool::AtLink, &SourceText::default()).unwrap(), (0, Vec::new()));
        assert_eq!(text(&module), before);
        assert_eq!(pool(&module, MallocPool::Off, &SourceText::default()).unwrap(), (0, Vec::new()));
    }

    #[test]
    fn a_programs_only_module_gets_the_pool_where_it_allocates_and_the_heap_silently_otherwise() {
        let context = Context::create();
        // It allocates: the pool linked in, as `-fdevice-malloc-pool` links it.
        let module = module(&context, IR);
        assert_eq!(pool(&module, MallocPool::Program, &SourceText::default()).unwrap(), (6, Vec::new()));
        module.verify().unwrap();
        assert_eq!(unpooled_uses(&module), 0);
        let ir = text(&module);
        assert!(ir.contains(STATE) && !ir.contains("define weak"), "{ir}");
        assert!(function(&ir, TAKE).starts_with("define internal ptr @__cdpc_pool_take_v1"), "{ir}");
        // It only frees: nothing for a pool to serve, the module untouched (no 32 MiB for nothing).
        let frees =
            "define ptx_kernel void @give(ptr %p, ptr %q) {\n  call void @free(ptr %p)\n  %s = call i32 @cudaFree(ptr %q)\n  ret void\n}\n\ndeclare void @free(ptr)\ndeclare i32 @cudaFree(ptr)\n";
        let module = self::module(&context, frees);
        let before = text(&module);
        assert_eq!(pool(&module, MallocPool::Program, &SourceText::default()).unwrap(), (0, Vec::new()));
        assert_eq!(text(&module), before);
        // Its own `free`: untouched, and no warning, which only an asked-for pool gives.
        let module = self::module(&context, &IR.replace("declare void @free(ptr allocptr captures(none))", "define void @free(ptr %p) {\n  ret void\n}"));
        let before = text(&module);
        assert_eq!(pool(&module, MallocPool::Program, &SourceText::default()).unwrap(), (0, Vec::new()));
        assert_eq!(text(&module), before);
    }

    #[test]
    fn the_links_pool_defines_take_and_give_strongly_over_the_shared_pool() {
        let context = Context::create();
        let module = module(&context, &format!("target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n{}", link_object_ir()));
        module.verify().unwrap();
        for name in [TAKE, GIVE] {
            assert_eq!(module.get_function(name).unwrap().get_linkage(), Linkage::External, "{name}");
        }
        let ir = text(&module);
        assert!(ir.contains(&format!("@__cdpc_malloc_pool_v1 = common addrspace(1) global [{CAPACITY} x i8] zeroinitializer, align 16")), "{ir}");
        assert!(ir.contains("@__cdpc_malloc_state_v1 = common addrspace(1) global i64 0, align 8"), "{ir}");
    }

    #[test]
    fn a_32_bit_module_gets_32_bit_sizes() {
        let context = Context::create();
        let ir = IR
            .replace("target triple = \"nvptx64-nvidia-cuda\"", "target triple = \"nvptx-nvidia-cuda\"")
            .replace("target datalayout = \"e-", "target datalayout = \"e-p:32:32-")
            .replace("i64 %n", "i32 %n")
            .replace("i64 16", "i32 16")
            .replace("(ptr, i64)", "(ptr, i32)")
            .replace("@malloc(i64)", "@malloc(i32)")
            .replace("getelementptr ptr, ptr %out, i64 1", "getelementptr ptr, ptr %out, i32 1")
            .replace("align 8", "align 4");
        let module = module(&context, &ir);
        assert_eq!(pool(&module, MallocPool::On, &SourceText::default()).unwrap(), (6, Vec::new()));
        module.verify().unwrap();
        let ir = text(&module);
        let wrapper = function(&ir, "__cdpc_pool.cudaMalloc");
        assert!(wrapper.contains("zext i32 %size to i64") && wrapper.contains("store ptr %block, ptr %out, align 4"), "{wrapper}");
    }

    #[test]
    fn a_module_that_allocates_nothing_is_untouched() {
        let context = Context::create();
        let ir: String = IR
            .split("\ndefine ")
            .filter(|f| !f.starts_with("ptx_kernel void @take") && !f.starts_with("ptx_kernel void @give") && !f.starts_with("void @deleter"))
            .collect::<Vec<_>>()
            .join("\ndefine ");
        let module = module(&context, &ir);
        let before = text(&module);
        assert_eq!(pool(&module, MallocPool::On, &SourceText::default()).unwrap(), (0, Vec::new()));
        assert_eq!(text(&module), before);
    }

    #[test]
    fn a_function_of_a_runtime_name_that_is_not_the_runtimes_leaves_the_module_alone_with_w1022() {
        for (changed, expected) in [
            // the program's own `free`
            ("declare void @free(ptr allocptr captures(none))", "define void @free(ptr %p) {\n  ret void\n}"),
            // `malloc` of another type
            ("declare noalias ptr @malloc(i64)", "declare noalias ptr @malloc(i32)"),
        ] {
            let context = Context::create();
            let ir = IR
                .replace(changed, expected)
                .replace("call noalias ptr @malloc(i64 %n)", if expected.contains("i32") { "call noalias ptr @malloc(i32 7)" } else { "call noalias ptr @malloc(i64 %n)" });
            let module = module(&context, &ir);
            let before = text(&module);
            let (wrapped, warnings) = pool(&module, MallocPool::On, &SourceText::default()).unwrap();
            assert_eq!(wrapped, 0);
            assert_eq!(warnings.iter().map(|w| w.code.as_str()).collect::<Vec<_>>(), ["W1022"]);
            assert!(
                warnings[0].message.contains(if expected.contains("i32") { "`malloc` is declared as `ptr (i32)`, not `ptr (i64)`" } else { "the module defines `free`" }),
                "{}",
                warnings[0].message
            );
            assert_eq!(text(&module), before);
        }
    }
}
