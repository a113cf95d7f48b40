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
//!
//! # The files
//!
//! `discover.rs` searches in a documented order: `--cuda-home`, `CUDA_HOME`, `CUDA_PATH`, the
//! checkout's `.cuda/`, the NVIDIA pip wheels of `python3`'s site folders (told from files by
//! `pip_wheels.rs`), `PATH`, the standard toolkit folder (`SearchEnv::STANDARD_TOOLKIT`).
//! `process.rs` is one bounded, killable run of a tool, waited for on its pidfd and started with
//! glibc malloc tunables for huge-page heaps.
//! **Where ptxas and nvlink start before their inputs exist** is `early.rs`: each input made empty
//! under a file lease, so that the tool's `open` waits in the kernel until cdpc has written it
//! whole (ptxas started by the driver before a `.cdp` program's code generation,
//! `Toolchain::start_build`, nvlink while ptxas runs); with no lease or no pidfd, or an input
//! written later than the kernel's lease-break time, the tool runs afterwards, as before.
//!
//! **Where the launch passes' register caps are kept or left out** is `register_cap.rs`: the PTX's
//! `// cdpc.register-cap 64 <kernel>` marks (written by `pipeline::sites::cap_kernel`) make
//! `StartedBuild::finish` assemble without the marked `.maxnreg` lines, and again with those of
//! the kernels whose `EIATTR_REGCOUNT` then exceeds the cap; a cap without a mark, the user's, is
//! never touched. **Where a large module is assembled in parts** is `ptx_parts.rs`: its PTX
//! cut into parts of whole functions (a `.shared` variable with its users), one ptxas each at
//! the same time, nvlink joining them into the cubin or, `-r`, one relocatable object
//! (`StartedBuild::finish`; the module whole again if the tools refuse a part). `overwrite.rs` says what an output may replace (E0700/E0701); `cleanup.rs` is
//! the process-wide record of live work files, which `interrupt()` removes on a signal, and of
//! early-started tools, which it kills through their pidfds.
//!
//! `program.rs` holds a program's other tools: `Toolchain::device_link` (nvlink with
//! `--register-link-binaries`, the module list read back, `parse_register_list`), the host
//! compiler, found in a documented order (`HostCompiler::find`: `-ccbin`, `CDPC_HOST_CXX`,
//! `c++`/`g++`/`clang++` on `PATH`), and the archiver of `--lib` (`Archiver::find`:
//! `--archiver`/`-arbin`, `CDPC_AR`, `ar` on `PATH`). `run.rs` also has `fatbinary_linked` and
//! `ptxas_architectures`, what `--list-gpu-arch` and `--list-gpu-code` list and what `-arch=all`
//! and `all-major` build (`driver::fatbin::all_images`). `gpus.rs` finds the visible GPUs' compute
//! capabilities for `-arch=native`, from the CUDA driver loaded at run time.

pub mod cleanup;
pub mod discover;
mod early;
pub mod error;
pub mod gpus;
pub mod overwrite;
pub mod pip_wheels;
mod process;
pub mod program;
pub mod ptx_parts;
pub mod register_cap;
pub mod run;

pub use cleanup::{interrupt, stale_work_dirs, WORK_DIR_PREFIX};
pub use discover::{SearchEnv, ToolSearch, ToolSource, Toolchain, CUDADEVRT, PROJECT_TOOLS_DIR, WHEEL_SUBDIR};
pub use early::StartedBuild;
pub use error::{command_line, io_message, shell_quote, ExitKind, ToolError, CAPTURE_LIMIT, INSTALL_HELP};
pub use overwrite::{OutputGuard, Overwrite, PREPROCESSED_START};
pub use program::{Archiver, DeviceLinked, HostCompiler};
pub use run::{
    fortify_level, host_compiler_fortify, host_compiler_include, nvlink_args, ptxas_architectures, ptxas_args, run_front_end, version_output, work_dir, work_dir_in, BuildOptions, FatbinImage,
    FrontEndRun, OutputFile, ToolLog, ToolRun, WorkDir, DEFAULT_TOOL_TIMEOUT,
};

/// Which headers a compilation lists for a build system's dependency file, as nvcc's and gcc's
/// `-MD` and `-MMD` do (every front end collects them: Clang's list, the kernel language's
/// preprocessor's; the host compiler's for host files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeaderList {
    /// None (nothing is collected).
    #[default]
    None,
    /// The user's: not those found in system folders (`-isystem`, CUDA's, Clang's, the C and
    /// C++ libraries'), as `-MMD`.
    User,
    /// Every header read from disk, as `-MD`.
    All,
}

#[cfg(test)]
mod tests;
