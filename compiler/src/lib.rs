#![warn(missing_docs)]
//! cdpc: an nvcc-compatible compiler for CUDA dynamic parallelism.
//!
//! The modules in the order a source goes through them: [`driver`] runs a compilation's phases,
//! for the `cdpc` binary and for embedders; a front end of [`front`] makes an LLVM module of
//! the input (the kernel language `.cdp`, CUDA C++ through Clang, or LLVM IR another compiler
//! wrote); [`pipeline`], the launch pipeline on LLVM IR, lowers, thresholds and aggregates
//! device-side launches and optimises the module; [`back`], the NVPTX end, writes PTX; and
//! [`toolchain`] runs ptxas and nvlink to a linked cubin. Every phase reports failure through
//! one type, [`error::CompileError`]. ARCHITECTURE.md has the code map and the invariants.
//!
//! # Embedding cdpc: three levels
//!
//! Nothing in this crate prints, exits the
//! process or keeps global state beyond LLVM's once-only target initialisation; every function
//! below may be called from several threads at once.
//!
//! ## 1. Source level: `.cdp` text to bytes
//!
//! [`driver::compile`] turns source held in memory into LLVM IR, PTX, an object or a linked
//! cubin ([`driver::Emit`]); [`driver::compile_artifacts`] returns all of them from one
//! compilation. Problems come back as [`Diagnostic`] values with stable codes; [`render`]
//! turns them into text.
//!
//! ```
//! use cdpc::driver::{compile, CompileOptions, Emit};
//! use cdpc::{LaunchAbi, Target};
//!
//! let source = r#"
//!     extern "C" __global__ void child(int *data, int add) { data[threadIdx.x] += add; }
//!     extern "C" __global__ void parent(int *data) { child<<<1, 256>>>(data, 7); }
//! "#;
//! let options = CompileOptions {
//!     target: Target { launch_abi: LaunchAbi::V1, ..Target::default() },
//!     emit: Emit::Ptx,
//!     ..CompileOptions::default()
//! };
//! let compiled = compile(source, &options).expect("no diagnostics");
//! let ptx = String::from_utf8(compiled.output).unwrap();
//! assert!(ptx.contains("cudaGetParameterBuffer") && ptx.contains("cudaLaunchDevice"));
//! ```
//!
//! ## 2. Backend level: your own front end, built with inkwell
//!
//! [`back::device_launch`] is the launch lowering the `.cdp` front end uses:
//! [`back::device_launch::DeviceRuntime`] declares the device-runtime entry points (either ABI,
//! 32 or 64 bits), [`layout::layout_params`] and [`layout::ParamLayout::check_size`] lay out the
//! parameter buffer and check it against the target, and
//! [`back::device_launch::build_device_launch`] emits the launch and returns its
//! `cudaError_t`. [`back::target_machine`], [`back::configure_module`], [`back::optimize`] and
//! [`back::write_ptx`] turn the module into PTX. The example in [`back::device_launch`] builds a
//! parent kernel that launches a child; `compiler/examples/inkwell_frontend.rs` is a complete
//! program.
//!
//! ## 3. Toolchain level: PTX to a cubin
//!
//! [`toolchain::Toolchain::discover`] finds ptxas, nvlink and libcudadevrt (in the order
//! [`toolchain::discover`] documents); [`toolchain::Toolchain::assemble`] makes a relocatable
//! object of PTX, [`toolchain::Toolchain::link_objects`] links any number of objects with
//! [`toolchain::BuildOptions::link_libraries`] and libcudadevrt into a cubin. A failure is a
//! [`toolchain::ToolError`] that carries the command line and the tool's stderr; successful
//! runs are recorded in [`toolchain::BuildOptions::log`].
//!
//! ```no_run
//! use cdpc::toolchain::{BuildOptions, ToolSearch, Toolchain};
//! use cdpc::SmVersion;
//!
//! # fn main() -> Result<(), cdpc::toolchain::ToolError> {
//! # let (ptx_a, ptx_b) = (String::new(), String::new());
//! let tools = Toolchain::discover(&ToolSearch::default())?;
//! let options = BuildOptions::new(SmVersion(90));
//! let a = tools.assemble(&ptx_a, &options)?;
//! let b = tools.assemble(&ptx_b, &options)?;
//! let cubin = tools.link_objects(&[&a, &b], &options)?;
//! for run in options.log.runs() {
//!     println!("{}", run.command);
//! }
//! # let _ = cubin; Ok(()) }
//! ```
//!
//! `docs/EMBEDDING.md` shows the same three levels, and the C API (`capi/`) wraps level 1.

pub mod back;
pub mod diag;
pub mod driver;
pub mod error;
pub mod front;
#[doc(hidden)]
pub mod fuzzing;
pub mod layout;
pub mod llvm;
pub mod pipeline;
pub mod render;
pub mod signature;
pub mod target;
pub mod toolchain;
#[allow(missing_docs)]
pub mod types;

pub use diag::{Code, Diagnostic, Severity, Span};
pub use target::{AddressSize, DefaultStream, LaunchAbi, SmVersion, Target};
