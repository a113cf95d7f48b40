//! `kernel<<<grid, block, shared_mem, stream>>>(args)`: the checks a device-side launch needs
//! and the parameter-buffer layout it carries into code generation.
//!
//! A launch through a pointer to a kernel (the front end's `LaunchThrough`) is checked here too:
//! its target is `hir::LaunchTarget::Pointer`, with the parameters and layout of the pointer's
//! type; a kernel's address written as such is folded to `LaunchTarget::Kernel`, and a device
//! function's is `E0300`.

use super::expr::{int_const, make, plural};
use super::{Binding, Context, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::cdp::hir::{self, ExprKind, FunctionKind};
use crate::front::cdp::syntax::ast;
use crate::layout::param_layout;
use crate::types::Type;

impl Context {
    pub(super) fn launch(&mut self, kernel: &ast::Ident, config: &[ast::Expr], config_span: Span, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        // `k<<<...>>>(...)` where `k` is a variable: a launch through the pointer it holds.
        if matches!(self.lookup(&kernel.name), Some(Binding::Local(_) | Binding::Global(_))) {
            let target = ast::Expr { kind: ast::ExprKind::Ident(kernel.clone()), span: kernel.span };
            return self.launch_through(&target, config, config_span, args, span);
        }
        let kernel_id = self.launched_kernel(kernel)?;
        let k = &self.functions[kernel_id.0 as usize];
        let launched = Launched { target: hir::LaunchTarget::Kernel(kernel_id), params: k.param_types().cloned().collect(), name: format!("`{}`", kernel.name), defined: Some(k.span) };
        self.finish_launch(launched, config, config_span, args, span)
    }

    /// `target<<<...>>>(...)` where `target` is an expression that gives a pointer to a kernel
    /// (`k`, `table[i]`, `(*k)`, `s.k`): its type, `void (*)(params)`, gives the parameters and
    /// the buffer's layout, as nvcc's does. The address of a kernel, written as such, is
    /// folded into a launch of that kernel; the address of a device function is refused (nvcc
    /// refuses it too: "a function that is not __global__ cannot be launched").
    pub(super) fn launch_through(&mut self, target: &ast::Expr, config: &[ast::Expr], config_span: Span, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let value = self.expr(target)?;
        let value = self.rvalue(value);
        let Type::FnPtr(sig) = value.ty.clone() else {
            let found = self.show(&value.ty);
            self.error(Code::LaunchOfNonKernel, value.span, format!("only kernels and pointers to kernels can be launched; found {found}"))
                .primary("launched here")
                .note("a launch through a pointer needs a `void (*)(...)` that holds a kernel's address, such as `void (*k)(int *) = child;`")
                .emit();
            return None;
        };
        if !sig.ret.is_void() {
            let shown = self.show(&value.ty);
            self.error(Code::LaunchOfNonKernel, value.span, format!("a pointer of type {shown} cannot point to a kernel"))
                .primary("launched here")
                .note("kernels return `void`: a pointer to a kernel has type `void (*)(...)`")
                .emit();
            return None;
        }
        let target = match value.kind {
            ExprKind::FuncAddr(id) if self.functions[id.0 as usize].kind != FunctionKind::Kernel => {
                let f = &self.functions[id.0 as usize];
                let (name, f_span) = (f.name.clone(), f.span);
                self.error(Code::LaunchOfNonKernel, value.span, format!("`{name}` is not a kernel"))
                    .primary("a pointer to this device function is launched here")
                    .label(f_span, "declared without `__global__`")
                    .note("only `__global__` functions can be launched with `<<<...>>>`; call device functions directly")
                    .emit();
                return None;
            }
            ExprKind::FuncAddr(id) => hir::LaunchTarget::Kernel(id),
            _ => hir::LaunchTarget::Pointer(Box::new(value.clone())),
        };
        let (name, defined) = match &target {
            hir::LaunchTarget::Kernel(id) => (format!("`{}`", self.functions[id.0 as usize].name), Some(self.functions[id.0 as usize].span)),
            hir::LaunchTarget::Pointer(_) => (format!("a kernel of type {}", self.show(&value.ty)), None),
        };
        self.finish_launch(Launched { target, params: sig.params.clone(), name, defined }, config, config_span, args, span)
    }

    /// The checks every launch gets, by name or through a pointer, and its HIR.
    fn finish_launch(&mut self, launched: Launched, config: &[ast::Expr], config_span: Span, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        if self.state().kind == FunctionKind::HostDevice {
            let function = self.current_function_name();
            self.error(Code::LaunchInHostDevice, span, format!("kernel launch inside `__host__ __device__` function `{function}`"))
                .note("a launch from a function compiled for both sides needs the host runtime too; make the function `__device__` or `__global__`")
                .emit();
        }
        let configuration = self.launch_config(config, config_span);
        let Launched { target, params, name, defined } = launched;
        if args.len() != params.len() {
            let launched = if defined.is_some() { format!("kernel {name}") } else { name.clone() };
            let mut builder = self.error(Code::LaunchArity, span, format!("{launched} takes {} argument{}, but {} were given", params.len(), plural(params.len()), args.len()));
            if let Some(defined) = defined {
                builder = builder.label(defined, "kernel defined here");
            }
            builder.emit();
            return None;
        }
        let args = self.convert_args(args, &params, Code::LaunchArgumentType, "launch argument has the wrong type");
        let args = args?;
        self.check_child_visible_pointers(&args);
        let (grid, block, shared_mem, stream) = configuration?;
        let layout = param_layout(&params, self, &self.target);
        self.check_buffer_size(&layout, &name, defined, span)?;
        let launch = hir::Launch { target, grid, block, shared_mem, stream, args, layout, span };
        Some(make(ExprKind::Launch(Box::new(launch)), Type::Void, span))
    }

    fn launched_kernel(&mut self, kernel: &ast::Ident) -> Option<hir::FuncId> {
        match self.resolve_symbol(&kernel.name) {
            Some(GlobalSymbol::Function(id)) if self.functions[id.0 as usize].kind == FunctionKind::Kernel => Some(id),
            Some(GlobalSymbol::Function(id)) => {
                let f_span = self.functions[id.0 as usize].span;
                self.error(Code::LaunchOfNonKernel, kernel.span, format!("`{}` is not a kernel", kernel.name))
                    .primary("launched here")
                    .label(f_span, "declared without `__global__`")
                    .note("only `__global__` functions can be launched with `<<<...>>>`; call device functions directly")
                    .emit();
                None
            }
            Some(GlobalSymbol::Global(_)) => {
                self.error(Code::LaunchOfNonKernel, kernel.span, format!("`{}` is a variable, not a kernel", kernel.name)).emit();
                None
            }
            None if self.skipped_use(&kernel.name, kernel.span) => None,
            None => {
                self.error(Code::UnknownName, kernel.span, format!("cannot find kernel `{}`", kernel.name)).primary("not declared").emit();
                None
            }
        }
    }

    /// Grid and block (integers or dim3), dynamic shared memory bytes, and stream.
    fn launch_config(&mut self, config: &[ast::Expr], config_span: Span) -> Option<(hir::Expr, hir::Expr, hir::Expr, hir::Expr)> {
        if !(2..=4).contains(&config.len()) {
            self.error(Code::LaunchConfigType, config_span, format!("a launch configuration has 2 to 4 values, found {}", config.len()))
                .note("write `<<<grid, block>>>`, `<<<grid, block, shared_bytes>>>` or `<<<grid, block, shared_bytes, stream>>>`")
                .emit();
            return None;
        }
        let grid = self.dim3_config(&config[0], "grid");
        let block = self.dim3_config(&config[1], "block");
        let shared_mem = match config.get(2) {
            Some(e) => self.expr(e).and_then(|e| {
                let e = self.rvalue(e);
                if !e.ty.is_integer() {
                    let message = format!("the shared-memory size must be an integer number of bytes, found {}", self.show(&e.ty));
                    self.error(Code::LaunchConfigType, e.span, message).emit();
                    return None;
                }
                Some(self.cast(e, &Type::UINT))
            }),
            None => Some(int_const(0, Type::UINT, config_span)),
        };
        let stream = match config.get(3) {
            Some(e) => self.expr(e).and_then(|e| {
                let e = self.rvalue(e);
                if e.ty != Type::Stream && !self.is_null_constant(&e) {
                    let message = format!("the stream of a launch must be a `cudaStream_t`, found {}", self.show(&e.ty));
                    self.error(Code::LaunchConfigType, e.span, message).emit();
                    return None;
                }
                Some(self.convert_checked(e, &Type::Stream))
            }),
            None => Some(make(ExprKind::PointerConst(runtime_shim::streams::NULL_STREAM), Type::Stream, config_span)),
        };
        if let Some(s) = &stream {
            if let Some(handle) = super::builtins::stream_constant(s).filter(|h| runtime_shim::streams::is_graph_stream(*h)) {
                self.graph_stream_misuse(s.span, handle, "a `<<<>>>` launch");
                return None;
            }
            // A stream the V1 entry points refuse is `E0306` of the launch pipeline on LLVM IR
            // (`pipeline::launch`), for every front end.
        }
        Some((grid?, block?, shared_mem?, stream?))
    }

    fn dim3_config(&mut self, e: &ast::Expr, what: &str) -> Option<hir::Expr> {
        let value = self.expr(e)?;
        let value = self.rvalue(value);
        match &value.ty {
            Type::Dim3 => Some(value),
            // dim3's converting constructor takes `unsigned int`: any number converts to it
            // first (a standard conversion, then the user-defined one), as nvcc accepts.
            t if t.is_arithmetic() && *t != Type::CudaError => Some(self.dim3_from(value)),
            other => {
                let message = format!("the {what} size must be a number or a `dim3`, found {}", self.show(other));
                self.error(Code::LaunchConfigType, value.span, message).emit();
                None
            }
        }
    }

    /// A child grid cannot see its parent's local or shared memory.
    fn check_child_visible_pointers(&mut self, args: &[hir::Expr]) {
        for arg in args {
            let origin = self.func.as_ref().and_then(|s| s.provenance.origin(arg, &self.globals));
            let Some(origin) = origin else { continue };
            let space = origin.space.describe();
            let mut builder = self.error(Code::LocalPointerToChild, arg.span, format!("a pointer to {space} is passed to a child kernel")).primary(format!("this points into the parent's {space}"));
            if !(arg.span.start <= origin.span.start && origin.span.end <= arg.span.end) {
                builder = builder.label(origin.span, format!("this is in {space}"));
            }
            builder.note("child grids cannot access their parent's local or shared memory").note("use global memory: a `__device__` variable, or memory from `cudaMalloc`").emit();
        }
    }

    /// More than the documented 4 KB is a warning. A kernel's buffer over the target's limit
    /// was reported where the kernel is defined, as nvcc does; a pointer's, here. The rule is
    /// [`ParamLayout::check_size`](crate::layout::ParamLayout::check_size), shared with embedders.
    fn check_buffer_size(&mut self, layout: &crate::layout::ParamLayout, name: &str, defined: Option<Span>, span: Span) -> Option<()> {
        // The same words as the launch pipeline's for CUDA C++ and LLVM IR (pipeline/param_buffer.rs).
        use crate::diag::words;
        match layout.check_size(&self.target) {
            Err(e) if defined.is_none() => {
                let note = words::too_large_note(&self.target.sm, self.target.address_size.pointer_bytes() as u32 * 8, e.limit);
                self.error(Code::ParamBufferTooLarge, span, words::too_large(name, e.size, e.limit)).note(note).emit();
                None
            }
            Err(_) => None,
            Ok(Some(over)) => {
                let mut builder = self.error(Code::ParamBufferOver4K, span, words::over_4k(name, over.size));
                if let Some(defined) = defined {
                    builder = builder.label(defined, words::OVER_4K_DECLARED);
                }
                let [first, second] = words::OVER_4K_NOTES;
                builder.note(first).note(second).emit();
                Some(())
            }
            Ok(None) => Some(()),
        }
    }
}

/// What a launch launches, as sema checks it: the HIR target, the parameters its arguments
/// convert to, how messages name it, and where the kernel is defined when it is known.
struct Launched {
    target: hir::LaunchTarget,
    params: Vec<Type>,
    name: String,
    defined: Option<Span>,
}
