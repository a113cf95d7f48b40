//! Kernels with a register bound of their own take their callees inline, as nvcc's are.
//!
//! A kernel's `__launch_bounds__(threads, min_blocks)` or `__maxnreg__(n)` bounds its registers
//! (`.minnctapersm`, `.maxnreg`), and ptxas refuses a bounded kernel that calls a function
//! compiled with more registers than the bound: "Entry function '...' with max regcount of 64
//! calls function '...' with regcount of 93". nvcc's NVVM inlines such callees (measured with
//! nvcc 13.5 on Rodinia's dwt2d, whose bounded kernels call a template's `run` and `transform`:
//! nvcc's PTX has no `.func` at all, Clang's kept both as calls and ptxas refused four of the
//! 452 files of bench/acceptance that nvcc compiles). LLVM's inliner weighs each call by size,
//! as it should elsewhere; here the call is not a cost but an error.
//!
//! [`inline_into_bounded_kernels`] marks `alwaysinline` every function with a body that a
//! bounded kernel reaches through direct calls, except those the program marked `noinline`
//! (`__noinline__`: nvcc keeps them, and ptxas then refuses them under nvcc too) and those on a
//! cycle of calls (recursion cannot be inlined). The cleanup's inliner then inlines them. Kernels
//! without a bound of their own are left to the inliner's cost model; so are the register caps
//! the launch passes give kernels (`sites::cap_kernel`), which the build takes off where ptxas
//! needs more.

use super::callgraph::{callees, is_kernel};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::Module;
use inkwell::values::FunctionValue;

/// The attributes of a kernel's own register bound: `__launch_bounds__`'s minimum blocks and
/// `__maxnreg__`.
const BOUNDS: [&str; 2] = ["nvvm.minctasm", "nvvm.maxnreg"];

/// Whether `f` is a kernel with a register bound of its own.
fn bounded(f: FunctionValue<'_>) -> bool {
    is_kernel(f) && BOUNDS.iter().any(|k| f.get_string_attribute(AttributeLoc::Function, k).is_some())
}

/// Marks `alwaysinline` what the bounded kernels of `module` call (module docs); how many
/// functions were marked. Run before the cleanup's inliner, with the module as the front end
/// left it (the launch passes' own caps come later and are not bounds of the program's).
pub fn inline_into_bounded_kernels(module: &Module<'_>) -> usize {
    let ctx = module.get_context();
    let kind = |name: &str| Attribute::get_named_enum_kind_id(name);
    let (always, never) = (kind("alwaysinline"), kind("noinline"));
    let mut marked = 0;
    for kernel in module.get_functions().filter(|f| bounded(*f)) {
        for f in callees(kernel).0 {
            let recursive = callees(f).0.contains(&f);
            if is_kernel(f) || recursive || f.get_enum_attribute(AttributeLoc::Function, never).is_some() {
                continue;
            }
            if f.get_enum_attribute(AttributeLoc::Function, always).is_none() {
                f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(always, 0));
                marked += 1;
            }
        }
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::inline_into_bounded_kernels;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    const IR: &str = r#"
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @bounded(ptr %p) #0 {
  call void @big(ptr %p)
  call void @kept(ptr %p)
  call void @rec(ptr %p, i32 3)
  ret void
}
define ptx_kernel void @free(ptr %p) {
  call void @other(ptr %p)
  ret void
}
define linkonce_odr void @big(ptr %p) {
  call void @deeper(ptr %p)
  ret void
}
define internal void @deeper(ptr %p) {
  store i32 1, ptr %p
  ret void
}
define void @kept(ptr %p) noinline {
  store i32 2, ptr %p
  ret void
}
define void @rec(ptr %p, i32 %n) {
  %c = icmp eq i32 %n, 0
  br i1 %c, label %done, label %again
again:
  %m = sub i32 %n, 1
  call void @rec(ptr %p, i32 %m)
  br label %done
done:
  ret void
}
define void @other(ptr %p) {
  store i32 3, ptr %p
  ret void
}
attributes #0 = { "nvvm.maxntid"="192" "nvvm.minctasm"="5" }
"#;

    #[test]
    fn a_bounded_kernels_callees_are_inlined_except_noinline_and_recursion() {
        let ctx = Context::create();
        let module = ctx.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(IR.as_bytes(), "m")).unwrap();
        assert_eq!(inline_into_bounded_kernels(&module), 2);
        let always = |name: &str| {
            module.get_function(name).unwrap().get_enum_attribute(inkwell::attributes::AttributeLoc::Function, inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline")).is_some()
        };
        assert!(always("big") && always("deeper"));
        assert!(!always("kept") && !always("rec") && !always("other"));
        // A second run finds nothing more to mark.
        assert_eq!(inline_into_bounded_kernels(&module), 0);
    }
}
