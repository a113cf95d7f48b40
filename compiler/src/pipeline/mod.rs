//! The launch pipeline on LLVM IR: what happens to a module between a front end that wrote
//! LLVM IR (Clang for CUDA C++, see [`crate::front::cuda`]; cdpc's own `.cdp` code generation,
//! [`crate::back`], whose launches it lowers to the ABI asked for; another front end's IR)
//! and the NVPTX back end.
//!
//! Each pass does one job and states its invariant; all of them leave a module that has none
//! of their work to do untouched.
//!
//! 0. Convergence made implicit ([`crate::back::drop_convergence_control`]): the
//!    `convergencectrl` bundles and `llvm.experimental.convergence.*` tokens some front ends
//!    write are removed (NVPTX reads neither; the passes below add convergent calls of their
//!    own, which the verifier refuses beside controlled ones); afterwards no function has
//!    controlled convergence.
//! 1. [`names`]: `static` kernels and variables get nvcc's names (Clang's `-fgpu-rdc` gives
//!    them a `__intern__<hash>` or `__static__<hash>` suffix), and template instances nvcc's
//!    spelling of their arguments (no `TnDa` before an `auto` parameter's); afterwards every
//!    symbol is the one nvcc's host code and nvlink expect.
//!    [`managed`]: a variable cdpc's `__managed__` marked (a section) gets NVVM's `managed`
//!    annotation, nvcc's `.attribute(.managed)`; afterwards no global is in the marker section.
//!    [`bounded`]: a kernel with a register bound of its own (`__launch_bounds__`' minimum
//!    blocks, `__maxnreg__`) gets its callees marked `alwaysinline`, as nvcc inlines them
//!    (ptxas refuses a bounded kernel calling a function that needs more registers); afterwards
//!    no such callee is left to the inliner's cost model.
//! 2. [`warp`]: the warp shuffles and votes of CUDA before 9.0 (`__shfl_up`, `__any`, ...),
//!    which sm_70 and newer lack, become their `_sync` forms over the active mask, with
//!    `W0902`; afterwards no legacy warp intrinsic is left.
//!    [`devrt_missing`] and [`param_buffer`] only look: calls of runtime functions that
//!    libcudadevrt lacks are `W0316` (of `cudaDeviceSynchronize`, `E0308`), launches whose
//!    parameter buffer is over 4 KB `W0305` (over the target's limit `E0304`), those that pass a
//!    pointer to the parent's local or shared memory `E0307`, as the kernel language's sema
//!    says them.
//! 3. [`uniform`] (with thresholding or aggregation): a launch's shared memory size or kernel
//!    pointer that is one constant on every run becomes that constant.
//! 4. [`threshold`] (`-flaunch-threshold=N`, off by default): each launch in the documented
//!    shape whose grid has at most N threads, of a child whose threads need not run together,
//!    runs its child's threads one after another in the launching thread when the grid is
//!    that small, and launches as before otherwise (into a stream only its thread holds, only
//!    where the thread launched nothing into it before, [`own_stream`]); the others get
//!    `R0502`. From sm_80 a
//!    lane's small grid may be kept for the kernel's end and run there by its whole warp
//!    ([`defer`]). With N = 0 the module is untouched; afterwards every launch is still in the
//!    documented shape.
//! 5. [`aggregate`] (`-faggregate-launches=`, off by default): the launches into the NULL
//!    stream that the threads of a warp, a block or a whole grid make become one launch of
//!    `C__agg` (at the site, at the end of the block, at the end of the grid's last block),
//!    those into a named stream one launch per warp into that stream, at the site; the others
//!    get `R0500`, those of a kernel that reads launch errors are aggregated per warp with
//!    `R0501`. Off, the module is untouched; afterwards every launch is still in the
//!    documented shape.
//! 6. [`malloc_pool`] (`-fdevice-malloc-pool`; by default for relocatable code, left to the
//!    device link): every call of the device runtime's `malloc`, `free`, `cudaMalloc` and
//!    `cudaFree` calls a wrapper that serves small allocations from a pool in the program's
//!    static memory (or, left to the link, from what the link gives its `weak` pool
//!    functions) and the rest from the heap as before; a function of those names that is not
//!    the runtime's leaves the module untouched (with `W1022` where the pool was asked for).
//!    Off, the module is untouched; afterwards no call of the runtime's allocation functions
//!    is left but the wrappers' own.
//! 7. [`launch`]: every device-side launch in the documented NVVM IR shape (a parameter
//!    buffer from `cudaGetParameterBuffer`, stores into it, `cudaLaunchDevice`) is recognised
//!    and lowered to the launch ABI asked for: V2 (nvcc 13's entry points, which alone take
//!    tail launch and fire-and-forget streams) or V1 (kept as written). Afterwards every
//!    launch calls the target ABI's entry points, but a call marked `!cdpc.launch.v1` (a
//!    warp's aggregated launch, [`launch::KEEP_V1`]), which stays V1; a shape it cannot prove
//!    safe is `E1010`.
//! 8. [`names::nvcc_data_names`]: the compiler's data get nvcc's names; in a whole program's
//!    device code (CUDA C++ without `-rdc`), [`names::whole_program_linkage`] then makes every
//!    definition but the kernels internal, its variables kept; afterwards only kernels are
//!    visible outside such a module.
//!
//! Then [`cleanup`] runs the few LLVM passes that fold what the rewrites left (the launch
//! helper inlined, the local argument block split into stores into the runtime's buffer),
//! with [`copies`] between them: every constant-size `llvm.memcpy` of up to 4 KB that touches
//! an alloca or a `byval` parameter becomes word copies, so that SROA takes the argument
//! blocks and `byval` copies apart and no by-value struct stays in local memory for it
//! (NVPTX makes a memcpy above 128 bytes a byte loop that pins its alloca there).
//!
//! Before them, in Clang's device IR alone, [`atomics`] gives CUDA's `atomicCAS` nvcc's
//! order and scope (relaxed, device): Clang writes it sequentially consistent in the system
//! scope, which NVPTX fences. Another front end's IR keeps the order its author wrote.
//!
//! On the host side of a CUDA C++ file (`-dc`, `--emit host-obj`), [`managed::host`] makes
//! each managed variable nvcc's pointer, registered with the runtime and read after the module
//! is loaded, and [`host_names`] gives Clang's host IR nvcc's stub, registration and module-id
//! names.
//!
//! # Invariants and helpers
//!
//! The launch sites are recognised by [`run`] into one table, [`launch::Sites`], that the passes
//! read (the parameter-buffer checks, `uniform`, `threshold`, `aggregate`, `launch`'s
//! lowering), recognised again only after a pass that rewrote sites; no pass recognises them
//! itself but thresholding's stream marks, which read the sites its own rewrite made
//! (`compiler/tests/layers.rs` keeps this).
//!
//! Each pass states its invariant afterwards: no Clang suffix on a symbol (`names`), no global in
//! the `cdpc.managed` section (`managed`, on both sides), no legacy warp intrinsic (`warp`), no
//! sequentially consistent system-scope `cmpxchg` in Clang's IR (`atomics`), no annotation of
//! cdpc's kernel qualifiers (`qualifiers`), no use of the runtime's allocation functions but their
//! pool wrappers' (`malloc_pool`, when asked or left to the link), no thresholded site that may run in place after a
//! NULL-stream launch of its block that is ordered before it (`threshold` with `stream_order`), no
//! constant naming an undefined C++ ABI placeholder (`cxx_abi`), every launch calling the target
//! ABI's entry points, but a warp's aggregated launch marked `!cdpc.launch.v1`, which calls V1's,
//! or an `E1010` (`launch`), and no device-runtime entry point taking a `dim3` through a pointer
//! (`launch::dims_by_value`, after the lowering: Clang's `byval` dims went through a local-memory
//! frame in PTX).
//!
//! [`lower`] is the schedule: the steps a front end's IR needs before the launch passes
//! (`atomics`, `cxx_abi`, `qualifiers`, `wide_atomics`, `math`, libdevice), [`run`] (the launch
//! passes above), then `cleanup` and what NVPTX needs after optimisation (`math`,
//! `wide_conversions`, nvcc's divisions and contraction); every front end that writes IR goes
//! through it, its optimisation included (the kernel language's is `back::optimize_built`, which
//! code generation's API without the pipeline runs alone). On
//! the host side, `managed::host` and `host_names` are run by the driver's host compile
//! (`driver/cuda.rs`). Below the passes, `compiler/tests/layers.rs` (`PIPELINE_LAYERS`) keeps
//! the order of imports: `emit` (how the passes write IR), `location` (a `.cdp` launch's
//! `!cdpc.span`, else debug locations, else the instruction's text, as a diagnostic's
//! labels), `itanium` (reading
//! Itanium symbols), `clone` (function copies, and what the passes ask of a value, `users`),
//! `copies`, `callgraph`, `sites` (what the passes that rewrite a launch site share) and
//! `in_place` (the thresholding helper). `promote_locals` runs before the passes for `.cdp`'s
//! unoptimised IR when thresholding in an optimising build; `cleanup` runs after them.

pub mod aggregate;
pub mod atomics;
pub mod bounded;
mod callgraph;
mod clone;
pub mod copies;
pub mod cxx_abi;
mod defer;
pub mod devrt_args;
pub mod devrt_missing;
mod emit;
pub mod host_names;
mod in_place;
pub mod itanium;
pub mod launch;
pub(crate) mod location;
pub mod malloc_pool;
pub mod managed;
pub mod math;
pub mod names;
mod own_stream;
pub mod param_buffer;
pub mod qualifiers;
mod sites;
mod stream_order;
pub mod threshold;
pub mod uniform;
pub mod warp;
pub mod wide_atomics;
pub mod wide_conversions;

use crate::back::{safely, BackendError, FloatMath, Fmad};
use crate::diag::{Diagnostic, WarningPolicy};
use crate::target::Target;
use inkwell::module::Module;
use inkwell::targets::TargetMachine;

pub(crate) use clone::{called_function, value_name};
pub(crate) use location::innermost_file;
pub use location::{collapse_wrapper_lines, strip_cdp_spans, SourceText, OWN_METADATA, SPAN_METADATA};

/// What the pipeline is asked for.
#[derive(Clone, Debug, Default)]
pub struct PipelineOptions {
    /// Architecture, address size, launch ABI, default stream.
    pub target: Target,
    /// nvcc's module id of the file: `static` kernels and variables are then called
    /// `__nv_static_<n>_<id>_<name>`, as nvcc's host code calls them.
    pub nv_module_id: Option<String>,
    /// Launches of grids of at most this many threads run in the launching thread
    /// (`-flaunch-threshold=N`, [`threshold`]); 0: none.
    pub launch_threshold: u32,
    /// Launch aggregation (`-faggregate-launches=`, [`aggregate`]) at warp, block or grid
    /// granularity.
    pub aggregate: aggregate::Granularity,
    /// The remarks of the launches left alone are among the diagnostics (`-Rpass=aggregate`).
    pub pass_remarks: bool,
    /// Small device-side allocations from a static pool (`-fdevice-malloc-pool`), or through
    /// wrappers the device link may give the pool ([`malloc_pool`]).
    pub malloc_pool: malloc_pool::MallocPool,
    /// CUDA 8's warp functions without `_sync` are `E0903`, as nvcc refuses them for sm_70 and
    /// newer, instead of `W0902` and their `_sync` forms ([`warp`]): CUDA C++ without
    /// `-flegacy-warp-intrinsics`. Either way none is left.
    pub refuse_legacy_warp: bool,
    /// The module is CUDA C++ (nvcc's dialect): a pointer to the parent's local or shared
    /// memory passed to a child is `W0317`, a warning as nvcc's, not the kernel language's
    /// `E0307` ([`param_buffer`]).
    pub nvcc_dialect: bool,
    /// The module is a whole program's device code (CUDA C++ without `-rdc`): every definition
    /// but the kernels internal to it, as nvcc writes it ([`names::whole_program_linkage`]).
    pub whole_program: bool,
    /// LLVM's optimisation level, 0 to 3 ([`lower`]: locals promoted, the launch helpers
    /// inlined by cost, another front end's IR optimised).
    pub opt_level: u8,
    /// nvcc's `-fmad`: with [`Fmad::Contract`], Clang's operations and libdevice's contracted
    /// by nvcc's rule ([`lower`]).
    pub fmad: Fmad,
    /// nvcc's `-ftz`, `-prec-div`, `-prec-sqrt` and fast library ([`lower`]).
    pub float_math: FloatMath,
    /// Which warnings are silenced or made errors (`-w`, `-Werror`, `--allow`, `--deny`),
    /// applied to the launch passes' diagnostics ([`lower`]).
    pub warnings: WarningPolicy,
}

/// Which front end wrote the module: the steps of [`lower`] before and after the launch
/// passes depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// cdpc's code generation of a `.cdp` program ([`crate::back`]): unoptimised IR whose
    /// launches are the documented V1 sequence, each with its `!cdpc.span`. LLVM's
    /// optimisation follows [`lower`], in `back`.
    KernelLanguage,
    /// Clang's device IR of CUDA C++, optimised by Clang's pipeline.
    Clang,
    /// IR another front end wrote, checked against its contract (`front::ir`); LLVM's
    /// optimisation pipeline runs on it after the launch passes.
    Ir,
}

/// Why [`lower`] stopped.
#[derive(Debug)]
pub enum Stop<E> {
    /// Diagnostics with an error among them (the warnings found with it included), as the
    /// warning policy left them.
    Diagnostics(Vec<Diagnostic>),
    /// Kernel qualifiers that NVPTX cannot take ([`qualifiers::apply`]), for the front end to
    /// place in its source.
    Qualifiers(Vec<qualifiers::Refused>),
    /// An LLVM pass or the target machine failed.
    Backend(BackendError),
    /// Linking libdevice failed.
    Link(E),
}

impl<E> From<BackendError> for Stop<E> {
    fn from(e: BackendError) -> Stop<E> {
        Stop::Backend(e)
    }
}

/// What [`lower`] leaves: the launch passes' warnings, and the target machine it made for a
/// module whose caller gave none (from the module's PTX features), which writes its PTX.
pub struct Lowered {
    /// The launch passes' warnings and remarks, through the warning policy.
    pub warnings: Vec<Diagnostic>,
    /// The target machine made from the module's PTX features when none was given.
    pub machine: Option<TargetMachine>,
}

/// The schedule: every pass between a front end's IR and NVPTX, in order, for the module's
/// `origin`. The one place the passes are called from.
///
/// 1. What the front end's IR needs first. Clang's: CUDA's `atomicCAS` in nvcc's order and
///    scope ([`atomics`]), pure virtual functions' vtable slots null ([`cxx_abi`]), the
///    kernel qualifiers Clang drops as NVPTX's attributes ([`qualifiers::apply`], or
///    [`Stop::Qualifiers`]), 128-bit atomics refused below sm_90 and given PTX ISA 8.4 from it
///    ([`wide_atomics`]), every function marked contractable under `-fmad=true`, LLVM's math
///    intrinsics that NVPTX cannot select as libdevice's functions ([`math`]), then
///    `link_libdevice` when some were. Another front end's IR: its PTX version raised to what
///    the architecture takes, 128-bit atomics' PTX ISA, the math intrinsics as libdevice's,
///    `link_libdevice` (which links it where the module calls it), `-ftz=true`'s denormal
///    mode on every function. The kernel language's: none.
/// 2. The target machine: `machine`, else one with the module's PTX features (Clang gives each
///    function the version it needs; NVPTX writes the `.version` of the machine's features).
/// 3. The kernel language's locals promoted in an optimising build ([`promote_locals`]): its
///    locals are allocas until LLVM's optimisation, and thresholding reads a child's loops as
///    an optimising front end writes them (a counter in a `phi`). Every optimising build does
///    it, launch optimisations on or off, so that a function the passes leave alone reaches
///    LLVM's optimisation as the same IR and comes out as the same PTX in the plain build and
///    the default one.
/// 4. The launch passes ([`run`]), their diagnostics through the warning policy; an error
///    stops here ([`Stop::Diagnostics`]). The kernel language's `!cdpc.span`s are then
///    dropped ([`strip_cdp_spans`]).
/// 5. [`cleanup`] (for the kernel language only where a launch pass may have rewritten or the
///    build optimises: at `-O0` its launches are lowered in place, LLVM's pipeline at every
///    level inlines the always-inline launch helper, and the rest of cleanup would change
///    `-O0`'s code; with rewrites, cleanup takes their argument blocks and record copies apart,
///    which NVPTX would copy a byte at a time from 128 bytes). For the kernel language, then its
///    optimisation tail ([`crate::back::optimize_built`]: `-ftz=true`'s denormal mode, LLVM's
///    pipeline, divisions, contraction). For Clang's IR and another front end's: LLVM's
///    optimisation pipeline (another front end's IR only), the math intrinsics in the forms
///    NVPTX selects ([`math::canonicalize_as_selected`], after the optimisation, which would
///    make vectors of lanes again), 128-bit conversions ([`wide_conversions`]),
///    single-precision division as nvcc writes it under `float_math`, and nvcc's contraction
///    rule under `-fmad=true` (no `contract` flag left for NVPTX to fuse more).
///
/// Step 1 and what only the module's own file can say (its `static` names, [`normalize`]) are
/// [`prepare`]; the rest is [`lower_prepared`], which the device link's link-time compile
/// (`driver/lto.rs`) runs once on the prepared modules of a program's files linked together.
pub fn lower<'ctx, E>(
    module: &Module<'ctx>,
    origin: Origin,
    options: &PipelineOptions,
    source: &SourceText,
    machine: Option<&TargetMachine>,
    link_libdevice: impl FnOnce(&Module<'ctx>) -> Result<(), E>,
) -> Result<Lowered, Stop<E>> {
    prepare(module, origin, options, source, link_libdevice)?;
    lower_prepared(module, origin, options, source, machine)
}

/// [`lower`]'s step 1 for the module's `origin`, then [`normalize`]: what each file's module
/// needs on its own, before the launch passes see it alone or linked with others.
pub fn prepare<'ctx, E>(module: &Module<'ctx>, origin: Origin, options: &PipelineOptions, source: &SourceText, link_libdevice: impl FnOnce(&Module<'ctx>) -> Result<(), E>) -> Result<(), Stop<E>> {
    let sm = options.target.sm;
    match origin {
        Origin::KernelLanguage => {}
        Origin::Clang => {
            atomics::atomics_as_nvcc(module);
            cxx_abi::null_slots(module);
            qualifiers::apply(module).map_err(Stop::Qualifiers)?;
            if let Some(refused) = wide_atomics::refused(module, sm, source) {
                return Err(Stop::Diagnostics(options.warnings.apply(vec![refused])));
            }
            wide_atomics::require_ptx(module, sm);
            // libdevice's operations, which Clang linked and inlined without `contract`, are
            // contracted by nvcc's rule as the program's are: nvcc's `-fmad=true` covers both.
            if options.fmad == Fmad::Contract {
                module.get_functions().for_each(crate::back::mark_contractable);
            }
            if math::intrinsics_as_libdevice(module) {
                link_libdevice(module).map_err(Stop::Link)?;
            }
        }
        Origin::Ir => {
            qualifiers::raise_ptx_version(module, sm.min_ptx());
            wide_atomics::require_ptx(module, sm);
            math::intrinsics_as_libdevice(module);
            link_libdevice(module).map_err(Stop::Link)?;
            if options.float_math.ftz {
                crate::back::precision::flush_denormals(module);
            }
        }
    }
    normalize(module, options);
    Ok(())
}

/// [`lower`] after [`prepare`]: steps 2 to 5 on a prepared module, or on several linked.
pub fn lower_prepared<E>(module: &Module<'_>, origin: Origin, options: &PipelineOptions, source: &SourceText, machine: Option<&TargetMachine>) -> Result<Lowered, Stop<E>> {
    let mut made = None;
    let tm: &TargetMachine = match machine {
        Some(tm) => tm,
        None => made.insert(crate::back::target_machine_with_features(&options.target, options.opt_level, &ptx_features(module))?),
    };
    if origin == Origin::KernelLanguage && options.opt_level > 0 {
        promote_locals(module, tm)?;
    }
    let found = launch_passes(module, options, source);
    if origin == Origin::KernelLanguage {
        strip_cdp_spans(module);
    }
    let warnings = options.warnings.apply(found.unwrap_or_else(|errors| errors));
    if warnings.iter().any(Diagnostic::is_error) {
        return Err(Stop::Diagnostics(warnings));
    }
    let optimize = options.opt_level > 0;
    if origin == Origin::KernelLanguage {
        let rewrites = options.launch_threshold > 0 || options.aggregate != aggregate::Granularity::Off;
        if rewrites || optimize {
            cleanup(module, tm, optimize)?;
        }
        crate::back::optimize_built(module, tm, options.opt_level, options.float_math, options.fmad)?;
        return Ok(Lowered { warnings, machine: made });
    }
    cleanup(module, tm, optimize)?;
    if origin == Origin::Ir {
        crate::back::optimize(module, tm, options.opt_level)?;
    }
    math::canonicalize_as_selected(module);
    // `__int128` and `double`, `u128 as f64`: NVPTX has neither instructions nor a library.
    wide_conversions::wide_conversions(module);
    crate::back::precision::divisions_as_nvcc(module, options.float_math);
    if options.fmad == Fmad::Contract {
        crate::back::contract_as_nvcc(module)?;
    }
    Ok(Lowered { warnings, machine: made })
}

/// The PTX features a module's functions ask for (the first function's that has some).
fn ptx_features(module: &Module<'_>) -> String {
    module
        .get_functions()
        .find_map(|f| f.get_string_attribute(inkwell::attributes::AttributeLoc::Function, "target-features"))
        .map(|a| a.get_string_value().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs the passes in order. Returns the warnings; `Err` holds every diagnostic when one is
/// an error. `source` places diagnostics at the lines of the debug locations.
pub fn run(module: &Module<'_>, options: &PipelineOptions, source: &SourceText) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    normalize(module, options);
    launch_passes(module, options, source)
}

/// What a module needs before the launch passes that only its own file can say: convergence
/// control tokens dropped, EDG's spellings of names, and its `static` kernels and variables
/// named under its module id (`options.nv_module_id`), so that the modules of several files
/// can be linked without two of them meeting under one name.
pub fn normalize(module: &Module<'_>, options: &PipelineOptions) {
    crate::back::drop_convergence_control(module);
    names::edg_spellings(module);
    names::externalised_statics(module, options.nv_module_id.as_deref());
}

/// [`run`] after [`normalize`]: the launch passes, on one file's module or several linked.
fn launch_passes(module: &Module<'_>, options: &PipelineOptions, source: &SourceText) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    // Before the launch passes give kernels caps of their own.
    bounded::inline_into_bounded_kernels(module);
    managed::device(module);
    launch::literal_dims(module).map_err(unrewritten("a launch's named `dim3` could not be rewritten"))?;
    let mut diagnostics = in_source_order(warp::legacy_to_sync(module, source, options.refuse_legacy_warp && options.target.sm.number >= 70));
    diagnostics.extend(devrt_missing::warn(module, source));
    diagnostics.extend(devrt_args::check(module, source));
    // The launch sites, recognised here for the passes that read them, and again after each
    // pass that rewrote some (thresholding's helpers, aggregation's records): no pass
    // recognises them itself.
    let mut sites = launch::Sites::of(module, source);
    diagnostics.extend(param_buffer::check(module, &sites, &options.target, source, options.nvcc_dialect));
    let thresholding = options.launch_threshold > 0;
    let aggregating = options.aggregate != aggregate::Granularity::Off;
    if (thresholding || aggregating) && sites.refused.is_empty() {
        uniform::fold_launches(&sites.launches);
    }
    // Which kernels read an index, as the program wrote them: before thresholding's helpers and
    // tags read them everywhere.
    let index_readers = if aggregating { aggregate::index_readers(module) } else { Default::default() };
    let mut remarks = in_source_order(threshold::threshold(module, &sites, options.launch_threshold, &options.target, source));
    if thresholding {
        sites = launch::Sites::of(module, source);
    }
    remarks.extend(in_source_order(aggregate::aggregate_with(module, &sites, options.aggregate, source, &index_readers)));
    if options.pass_remarks {
        diagnostics.extend(remarks);
    }
    let pooling = options.malloc_pool != malloc_pool::MallocPool::Off;
    if pooling {
        let (_, warnings) = malloc_pool::pool(module, options.malloc_pool, source).map_err(unrewritten("the device heap's pool could not be linked"))?;
        diagnostics.extend(warnings);
    }
    if aggregating || pooling {
        sites = launch::Sites::of(module, source);
    }
    diagnostics.extend(launch::lower(module, &sites, &options.target, source));
    launch::dims_by_value(module).map_err(unrewritten("a runtime entry point's `dim3` could not be passed by value"))?;
    names::drop_clang_host_list(module);
    names::nvcc_data_names(module);
    if options.whole_program {
        names::whole_program_linkage(module);
    }
    if diagnostics.iter().any(Diagnostic::is_error) {
        Err(diagnostics)
    } else {
        Ok(diagnostics)
    }
}

/// The form [`threshold`]'s loop test reads, for a front end whose IR is not optimised before
/// the pipeline (`.cdp`'s [`crate::back`], whose locals, loop counters included, live in
/// allocas, and whose conditions are C's `int`s tested against 0): every local that only
/// loads and stores reach becomes SSA values (`mem2reg`), and each instruction that folds to a
/// value already there is replaced by it (`instsimplify`: a branch on `icmp ne (zext i1 %c),
/// 0` branches on `%c`), as in an optimising front end's IR (Clang's at `-O1` and above). A
/// counted loop's counter is then a `phi` in its header, stepped by a constant and compared
/// with one by the branch itself. Nothing else changes: no block is merged, no call inlined or
/// removed, no launch moved. The driver runs it before [`run`] when thresholding is on in an
/// optimising build (at `-O0` Clang's functions keep their allocas, and neither front end's
/// loops are counted).
pub fn promote_locals(module: &Module<'_>, tm: &TargetMachine) -> Result<(), BackendError> {
    safely::run_passes(module, "function(mem2reg,instsimplify)", tm)
}

/// `E1010` for a redeclaration of the launch's entry points that LLVM's builder refused: `what`
/// failed, and LLVM's words.
fn unrewritten(what: &'static str) -> impl FnOnce(String) -> Vec<Diagnostic> {
    move |e| vec![Diagnostic::new(crate::diag::Code::LaunchNotRecognised, crate::diag::Span::new(0, 0), format!("{what}: {e}"))]
}

/// A pass's remarks in source order (a pass finds launches in the order of the IR's blocks):
/// each file's by position, the main file's first; one launch's remarks keep their order.
fn in_source_order(mut remarks: Vec<Diagnostic>) -> Vec<Diagnostic> {
    remarks.sort_by_cached_key(|d| d.labels.iter().find(|l| l.primary).map(|l| (l.file.as_ref().map(|f| f.name.clone()), l.span.start)));
    remarks
}

/// The LLVM passes after the rewrites: the launch helper inlined, its argument block promoted
/// into direct stores to the runtime's buffer, dead wrappers removed. The struct copies left
/// after inlining and forwarding ([`copies`]) become word copies before the last SROA, and
/// thresholding's team shuffles of values now constant are folded ([`threshold::fold_team_shuffles`]).
///
/// The passes' copies of a child (the serial copy a thresholded launch calls in a loop, the
/// body an aggregated kernel calls per thread) are made after the front end's optimisation
/// (Clang's), so they go through LLVM's inliner here, with its cost model, as they would in
/// an optimisation pipeline run after the passes: without it each of the child's threads is
/// a call with a parameter per argument and per coordinate. `optimize` false (`-O0`): only the
/// always-inline helpers are inlined, and the copies stay functions.
pub fn cleanup(module: &Module<'_>, tm: &TargetMachine, optimize: bool) -> Result<(), BackendError> {
    // Inlined and folded first, so that each copy's pointers are at their alloca with the
    // alignment instcombine can prove; then [`copies`] turns the local struct copies into
    // word copies, which SROA takes apart into registers.
    let inline = if optimize { "cgscc(inline)" } else { "always-inline" };
    safely::run_passes(module, &format!("{inline},function(sroa,early-cse,instcombine<no-verify-fixpoint>,sroa,memcpyopt,dse)"), tm)?;
    copies::expand_local_copies(module);
    threshold::fold_team_shuffles(module);
    safely::run_passes(module, "function(sroa,early-cse,memcpyopt,instcombine<no-verify-fixpoint>,simplifycfg,dse),globaldce", tm)?;
    // Arguments that those passes made constants (a byte of a word stored as a constant).
    if threshold::fold_team_shuffles(module) {
        safely::run_passes(module, "function(instcombine<no-verify-fixpoint>,simplifycfg)", tm)?;
    }
    Ok(())
}

#[cfg(test)]
mod aggregate_tests;
#[cfg(test)]
mod block_tests;
#[cfg(test)]
mod managed_tests;
#[cfg(test)]
mod stream_order_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod threshold_tests;
