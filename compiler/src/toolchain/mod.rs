//! Finding and running the NVIDIA tools (ptxas, nvlink) and libcudadevrt.
//!
//! [`Toolchain::discover`] finds the tools in a documented order (see [`discover`]; the NVIDIA
//! pip wheels through `python3`'s site folders, [`pip_wheels`]);
//! [`Toolchain::build_cubin`] turns PTX into a linked cubin:
//!
//! ```text
//! ptxas  -arch=sm_90 -c [-O N] [ptxas args] -o assembled.o module.ptx
//! nvlink -arch=sm_90 module.o -L<cudadevrt dir> -lcudadevrt [nvlink args] -o module.cubin
//! ```
//!
//! (`module.o` is a copy of `assembled.o`: nvlink is started while ptxas runs and waits for it,
//! [`early`]), and [`Toolchain::build_object`] stops after ptxas (`--emit obj`);
//! [`Toolchain::start_build`] starts ptxas before the PTX is made, for the driver to finish
//! with it ([`StartedBuild`]); [`Toolchain::fatbinary`]
//! packs cubins and PTX for several architectures into a fat binary. Each tool run is bounded in
//! time ([`BuildOptions::tool_timeout`]); work files are removed also when the process is
//! interrupted ([`cleanup`]); [`overwrite`] decides which existing files an output may replace. Argument lists come from the
//! pure functions [`ptxas_args`] and [`nvlink_args`]. Every failure is a [`ToolError`] whose
//! `Display` is meant to be shown to the user as is.

pub mod cleanup;
pub mod discover;
mod early;
pub mod error;
pub mod gpus;
pub mod overwrite;
pub mod pip_wheels;
mod process;
pub mod program;
pub mod register_cap;
pub mod run;

pub use discover::{
    SearchEnv, ToolSearch, ToolSource, Toolchain, CUDADEVRT, PROJECT_TOOLS_DIR, WHEEL_SUBDIR,
};
pub use error::{command_line, io_message, shell_quote, ExitKind, ToolError, CAPTURE_LIMIT, INSTALL_HELP};
pub use early::StartedBuild;
pub use cleanup::{interrupt, stale_work_dirs, WORK_DIR_PREFIX};
pub use overwrite::{OutputGuard, Overwrite, PREPROCESSED_START};
pub use program::{Archiver, DeviceLinked, HostCompiler};
pub use run::{work_dir, WorkDir, fortify_level, host_compiler_fortify, host_compiler_include, ptxas_architectures, nvlink_args, ptxas_args, run_front_end, version_output, BuildOptions, FatbinImage, FrontEndRun, OutputFile, ToolLog, ToolRun, DEFAULT_TOOL_TIMEOUT};

#[cfg(test)]
mod tests;
