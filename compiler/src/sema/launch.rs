//! `kernel<<<grid, block, shared_mem, stream>>>(args)`: the checks a device-side launch needs
//! and the parameter-buffer layout it carries into code generation.

use super::expr::{int_const, make, plural};
use super::{Context, GlobalSymbol};
use crate::diag::{Code, Span};
use crate::front::ast;
use crate::hir::{self, ExprKind, FunctionKind};
use crate::layout::param_layout;
use crate::target::LaunchAbi;
use crate::types::Type;

impl Context {
    pub(super) fn launch(&mut self, kernel: &ast::Ident, template_args: Option<&[ast::TemplateArg]>, config: &[ast::Expr], config_span: Span, args: &[ast::Expr], span: Span) -> Option<hir::Expr> {
        let kernel_id = if self.templates.contains_key(&kernel.name) {
            self.launched_template(kernel, template_args, args)?
        } else {
            let id = self.launched_kernel(kernel)?;
            self.launched_overload(kernel, id, args)?
        };
        if self.state().kind == FunctionKind::HostDevice {
            let function = self.current_function_name();
            self.error(Code::LaunchInHostDevice, span, format!("kernel launch inside `__host__ __device__` function `{function}`"))
                .note("a launch from a function compiled for both sides needs the host runtime too; make the function `__device__` or `__global__`")
                .emit();
        }
        let configuration = self.launch_config(config, config_span);
        let (params, kernel_span) = {
            let k = &self.functions[kernel_id.0 as usize];
            (k.param_types().cloned().collect::<Vec<_>>(), k.span)
        };
        if args.len() != params.len() {
            self.error(Code::LaunchArity, span, format!("kernel `{}` takes {} argument{}, but {} were given", kernel.name, params.len(), plural(params.len()), args.len()))
                .label(kernel_span, "kernel defined here")
                .emit();
            return None;
        }
        let args = self.convert_args(args, &params, Code::LaunchArgumentType, "launch argument has the wrong type");
        let args = args?;
        self.check_child_visible_pointers(&args);
        let (grid, block, shared_mem, stream) = configuration?;
        let layout = param_layout(&params, self, &self.target);
        self.check_buffer_size(&layout, kernel, kernel_span, span)?;
        let launch = hir::Launch { kernel: kernel_id, grid, block, shared_mem, stream, args, layout, span };
        Some(make(ExprKind::Launch(Box::new(launch)), Type::Void, span))
    }

    /// The kernel an overloaded name launches, by overload resolution on the arguments
    /// (`overload.rs`); the arguments are checked again by the launch, so only a clean first
    /// check goes on (no diagnostic is reported twice).
    fn launched_overload(&mut self, kernel: &ast::Ident, id: hir::FuncId, args: &[ast::Expr]) -> Option<hir::FuncId> {
        let Some((_, key)) = self.resolve_symbol(&kernel.name) else { return Some(id) };
        let set: Vec<hir::FuncId> = self.cxx.overloads.get(&key).cloned().unwrap_or_default();
        if set.len() <= 1 {
            return Some(id);
        }
        let errors = self.diags.len();
        let checked: Vec<Option<hir::Expr>> = args.iter().map(|a| self.expr(a)).collect();
        if self.diags.len() != errors {
            return None;
        }
        let checked: Vec<hir::Expr> = checked.into_iter().collect::<Option<_>>()?;
        let kernels: Vec<hir::FuncId> = set.into_iter().filter(|f| self.functions[f.0 as usize].kind == FunctionKind::Kernel).collect();
        self.resolve_overload(&kernel.name, &kernels, super::overload::Operands { exprs: &checked, object: false }, kernel.span)
    }

    fn launched_kernel(&mut self, kernel: &ast::Ident) -> Option<hir::FuncId> {
        if self.launch_through_variable(kernel) {
            return None;
        }
        match self.resolve_symbol(&kernel.name).map(|(symbol, _)| symbol) {
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
            if let ExprKind::PointerConst(handle) = s.kind {
                if self.target.launch_abi == LaunchAbi::V1 && runtime_shim::streams::needs_v2_abi(handle) {
                    let which = if handle == runtime_shim::streams::TAIL_LAUNCH { "cudaStreamTailLaunch" } else { "cudaStreamFireAndForget" };
                    self.error(Code::StreamNeedsV2Abi, s.span, format!("`{which}` cannot be used with the v1 launch ABI"))
                        .primary("the runtime refuses this stream through `cudaLaunchDevice`")
                        .note("measured on sm_90: cudaLaunchDevice returns cudaErrorInvalidValue and the child never runs; compile with `--launch-abi v2` (the default)")
                        .emit();
                    return None;
                }
            }
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
            let mut builder = self
                .error(Code::LocalPointerToChild, arg.span, format!("a pointer to {space} is passed to a child kernel"))
                .primary(format!("this points into the parent's {space}"));
            if !(arg.span.start <= origin.span.start && origin.span.end <= arg.span.end) {
                builder = builder.label(origin.span, format!("this is in {space}"));
            }
            builder
                .note("child grids cannot access their parent's local or shared memory")
                .note("use global memory: a `__device__` variable, or memory from `cudaMalloc`")
                .emit();
        }
    }

    /// More than the documented 4 KB is a warning (the target's limit was checked where the
    /// kernel is defined). The rule is
    /// [`ParamLayout::check_size`](crate::layout::ParamLayout::check_size), shared with embedders.
    fn check_buffer_size(&mut self, layout: &crate::layout::ParamLayout, kernel: &ast::Ident, kernel_span: Span, span: Span) -> Option<()> {
        match layout.check_size(&self.target) {
            // Reported once, at the kernel's definition, as nvcc does.
            Err(_) => None,
            Ok(Some(over)) => {
                self.error(Code::ParamBufferOver4K, span, format!("the parameters of `{}` need {} bytes, more than 4096", kernel.name, over.size))
                    .label(kernel_span, "parameters declared here")
                    .note("CUDA 12.1 and newer accept up to 32764 bytes on sm_70+, but older runtimes refuse buffers over 4 KB")
                    .note("`--strict-param-limit` makes this an error")
                    .emit();
                Some(())
            }
            Ok(None) => Some(()),
        }
    }
}
