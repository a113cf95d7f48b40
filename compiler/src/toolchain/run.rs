//! Running ptxas and nvlink: PTX to a relocatable object, objects to a linked cubin.
//!
//! Work files live in a temporary folder (`cdpc-work-<pid>-<random>`) that is removed in every
//! case, also when the process is interrupted ([`super::cleanup`]). The result is written to a
//! temporary file in the output's folder and renamed over the output only when every step
//! succeeded, so a failed build never leaves a partial or stale-looking output behind. Each tool
//! run is bounded by [`BuildOptions::tool_timeout`].

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tempfile::{NamedTempFile, TempDir};

use super::cleanup::{self, Tracked};
use super::discover::Toolchain;
use super::error::{command_line, truncate_output, ExitKind, ToolError, CAPTURE_LIMIT};
use super::overwrite::OutputGuard;
use super::process::{self, Ended};
use crate::target::SmVersion;

/// Options for [`Toolchain::assemble`], [`Toolchain::link`], [`Toolchain::build_object`] and
/// [`Toolchain::build_cubin`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOptions {
    /// `-arch=sm_XX` for ptxas and nvlink.
    pub arch: SmVersion,
    /// ptxas `-O N` (0 to 3); `None` leaves ptxas's default (3).
    pub opt_level: Option<u8>,
    /// Extra ptxas arguments (`-Xptxas`), appended after ours.
    pub ptxas_args: Vec<OsString>,
    /// Extra nvlink arguments (`-Xnvlink`), appended after ours.
    pub nvlink_args: Vec<OsString>,
    /// Where the temporary work folder is made; `None` is the system's temp folder.
    pub temp_root: Option<PathBuf>,
    /// Static libraries or relocatable objects (paths) that nvlink links after the objects and
    /// before libcudadevrt, for device code compiled elsewhere.
    pub link_libraries: Vec<PathBuf>,
    /// Every successful tool run is recorded here (a failed one is in its [`ToolError`]).
    pub log: ToolLog,
    /// How long one run of ptxas or nvlink may take before it is killed and the build fails
    /// with [`ToolError::TimedOut`]; `None` waits for ever. [`DEFAULT_TOOL_TIMEOUT`] by default.
    pub tool_timeout: Option<Duration>,
    /// How a module's PTX may be cut for ptxas runs at the same time
    /// ([`super::ptx_parts`]); [`Parts::WHOLE`](super::ptx_parts::Parts::WHOLE) by default.
    pub ptxas_parts: super::ptx_parts::Parts,
}

/// The default bound on one tool run: 10 minutes. The largest kernels measured (BENCHMARKS.md,
/// "Launches per kernel") take ptxas well under a minute, so a run past this is a hung or
/// pathological tool, and a build system learns of it instead of waiting for ever.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);

/// One successful run of ptxas or nvlink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolRun {
    /// `ptxas` or `nvlink`.
    pub tool: String,
    /// The command line, quoted for a POSIX shell.
    pub command: String,
    /// What the tool wrote to stdout (`ptxas -v` resource usage, for instance), truncated.
    pub stdout: String,
    /// What the tool wrote to stderr (warnings), truncated.
    pub stderr: String,
    /// How long the process ran (`cdpc --time`).
    pub elapsed: std::time::Duration,
}

/// A record of the tool runs of a build, shared by the clones of one [`BuildOptions`] and safe
/// to use from several threads. It is not part of the options' value: any two logs compare
/// equal.
#[derive(Clone, Debug, Default)]
pub struct ToolLog(Arc<Mutex<Vec<ToolRun>>>);

impl ToolLog {
    /// An empty log.
    pub fn new() -> ToolLog {
        ToolLog::default()
    }

    /// The runs recorded so far, oldest first.
    pub fn runs(&self) -> Vec<ToolRun> {
        self.0.lock().map(|runs| runs.clone()).unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// Removes and returns the runs recorded so far.
    pub fn take(&self) -> Vec<ToolRun> {
        match self.0.lock() {
            Ok(mut runs) => std::mem::take(&mut *runs),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }

    /// Drops the lines of `tool`'s stderr that mention `needle` (a note about a work file of
    /// cdpc's own that would only puzzle).
    pub(crate) fn drop_lines_about(&self, tool: &str, needle: &str) {
        let mut runs = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for run in runs.iter_mut().filter(|r| r.tool == tool) {
            run.stderr = run.stderr.lines().filter(|l| !l.contains(needle)).map(|l| format!("{l}\n")).collect();
        }
    }

    pub(crate) fn push(&self, run: ToolRun) {
        match self.0.lock() {
            Ok(mut runs) => runs.push(run),
            Err(poisoned) => poisoned.into_inner().push(run),
        }
    }
}

impl PartialEq for ToolLog {
    fn eq(&self, _: &ToolLog) -> bool {
        true
    }
}

impl Eq for ToolLog {}

impl BuildOptions {
    /// Options for `arch` with ptxas's default optimisation and nothing extra.
    pub fn new(arch: SmVersion) -> BuildOptions {
        BuildOptions {
            arch,
            opt_level: None,
            ptxas_args: Vec::new(),
            nvlink_args: Vec::new(),
            temp_root: None,
            link_libraries: Vec::new(),
            log: ToolLog::new(),
            tool_timeout: Some(DEFAULT_TOOL_TIMEOUT),
            ptxas_parts: super::ptx_parts::Parts::WHOLE,
        }
    }
}

impl Default for BuildOptions {
    /// sm_90, ptxas's default optimisation, no extra arguments, [`DEFAULT_TOOL_TIMEOUT`].
    fn default() -> BuildOptions {
        BuildOptions::new(SmVersion(90))
    }
}

/// `job` on each of `items` and its results in the items' order: at the same time, a thread
/// each, where `parallel` (the tool runs of independent modules, such as each architecture's
/// or each file's ptxas, which a build ran one after another), else one after another here.
/// Each job gets `build` with a tool log of its own, appended to `build`'s in the items'
/// order, so that `-v` lists the runs as a sequential build does; a job whose thread could not
/// start runs here.
pub(crate) fn at_once<I: Sync, T: Send>(items: &[I], build: &BuildOptions, parallel: bool, job: impl Fn(&I, &BuildOptions) -> T + Sync) -> Vec<T> {
    if !parallel {
        return items.iter().map(|item| job(item, build)).collect();
    }
    let job = &job;
    std::thread::scope(|scope| {
        let started: Vec<_> = items
            .iter()
            .map(|item| {
                let own = BuildOptions { log: ToolLog::new(), ..build.clone() };
                let thread = std::thread::Builder::new().name("cdpc-tool".into()).spawn_scoped(scope, {
                    let own = own.clone();
                    move || job(item, &own)
                });
                (item, own, thread)
            })
            .collect();
        started
            .into_iter()
            .map(|(item, own, thread)| {
                let result = match thread {
                    Ok(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(_) => job(item, &own),
                };
                for run in own.log.take() {
                    build.log.push(run);
                }
                result
            })
            .collect()
    })
}

/// ptxas's arguments: `-arch=sm_XX -c [-O N] [extra...] -o OUTPUT INPUT`.
/// `-c` makes relocatable device code (nvcc's `-rdc`), which device-side launches need.
pub fn ptxas_args(opts: &BuildOptions, input: &Path, output: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![format!("-arch={}", opts.arch).into(), "-c".into()];
    if let Some(level) = opts.opt_level {
        args.push(format!("-O{level}").into());
    }
    args.extend(opts.ptxas_args.iter().cloned());
    args.push("-o".into());
    args.push(output.into());
    args.push(input.into());
    args
}

/// nvlink's arguments:
/// `-arch=sm_XX OBJECTS... LINK_LIBRARIES... -L<cudadevrt_dir> -lcudadevrt [extra...] -o OUTPUT`.
pub fn nvlink_args(opts: &BuildOptions, objects: &[&Path], cudadevrt_dir: &Path, output: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![format!("-arch={}", opts.arch).into()];
    args.extend(objects.iter().map(OsString::from));
    args.extend(opts.link_libraries.iter().map(OsString::from));
    let mut lib_dir = OsString::from("-L");
    lib_dir.push(cudadevrt_dir);
    args.push(lib_dir);
    args.push("-lcudadevrt".into());
    args.extend(opts.nvlink_args.iter().cloned());
    args.push("-o".into());
    args.push(output.into());
    args
}

const CUBIN_NAME: &str = "module.cubin";

impl Toolchain {
    /// Assembles PTX into a relocatable device object (`ptxas -c`) and returns its bytes.
    pub fn assemble(&self, ptx: &str, opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        self.start_build(opts, false)?.finish(ptx)
    }

    /// Links relocatable device objects (in memory, for instance from [`Toolchain::assemble`]
    /// of several PTX modules) with [`BuildOptions::link_libraries`] and libcudadevrt, and
    /// returns the cubin's bytes.
    pub fn link_objects(&self, objects: &[&[u8]], opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        let work = work_dir(opts)?;
        let mut paths = Vec::with_capacity(objects.len());
        for (index, bytes) in objects.iter().enumerate() {
            let path = work.path().join(format!("input{index}.o"));
            std::fs::write(&path, bytes).map_err(|e| ToolError::io("writing an object for nvlink", &path, e))?;
            paths.push(path);
        }
        let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let cubin = self.link_in(work.path(), &paths, opts)?;
        read(&cubin, "reading the cubin nvlink wrote")
    }

    /// Links relocatable device objects with libcudadevrt into `output` (a cubin).
    pub fn link(&self, objects: &[&Path], opts: &BuildOptions, output: &Path) -> Result<(), ToolError> {
        let out = OutputFile::prepare(output)?;
        let work = work_dir(opts)?;
        let cubin = self.link_in(work.path(), objects, opts)?;
        out.commit(&read(&cubin, "reading the cubin nvlink wrote")?)
    }

    /// PTX to a relocatable device object at `output` (`--emit obj`).
    pub fn build_object(&self, ptx: &str, opts: &BuildOptions, output: &Path) -> Result<(), ToolError> {
        let out = OutputFile::prepare(output)?;
        let bytes = self.assemble(ptx, opts)?;
        out.commit(&bytes)
    }

    /// PTX to a linked cubin at `output`: ptxas, then nvlink with libcudadevrt.
    pub fn build_cubin(&self, ptx: &str, opts: &BuildOptions, output: &Path) -> Result<(), ToolError> {
        let out = OutputFile::prepare(output)?;
        out.commit(&self.build_cubin_bytes(ptx, opts)?)
    }

    /// PTX to the bytes of a linked cubin, for callers that keep it in memory.
    /// nvlink starts while ptxas runs, waiting for its input ([`super::early`]).
    pub fn build_cubin_bytes(&self, ptx: &str, opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        self.start_build(opts, true)?.finish(ptx)
    }

    fn link_in(&self, work: &Path, objects: &[&Path], opts: &BuildOptions) -> Result<PathBuf, ToolError> {
        let cubin = work.join(CUBIN_NAME);
        let args = nvlink_args(opts, objects, &self.cudadevrt_dir, &cubin);
        run_tool("nvlink", &self.nvlink, &args, opts)?;
        Ok(cubin)
    }
}

/// One image for [`Toolchain::fatbinary`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatbinImage {
    /// PTX text (`kind=ptx`) rather than a cubin (`kind=elf`).
    pub ptx: bool,
    /// The architecture (`sm=90` for sm_90 or compute_90, `sm=90a` for sm_90a).
    pub sm: crate::target::SmVersion,
    /// The image's bytes.
    pub bytes: Vec<u8>,
}

impl Toolchain {
    /// Packs cubins and PTX into a fat binary with the `fatbinary` beside ptxas and returns its
    /// bytes: `fatbinary --create=F -64 --image3=kind=elf|ptx,sm=N,file=...`, as nvcc runs it;
    /// `relocatable` (`--device-c`) for relocatable device objects, as `nvcc -dc` embeds them.
    pub fn fatbinary(&self, images: &[FatbinImage], relocatable: bool, opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        self.fatbinary_with(images, if relocatable { Some("--device-c") } else { None }, opts)
    }

    /// The fat binary of a device link's cubins (`fatbinary -link`, as `nvcc -dlink` runs it),
    /// for the program's registration object.
    pub fn fatbinary_linked(&self, images: &[FatbinImage], opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        self.fatbinary_with(images, Some("-link"), opts)
    }

    fn fatbinary_with(&self, images: &[FatbinImage], mode: Option<&str>, opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        let work = work_dir(opts)?;
        let output = work.path().join("module.fatbin");
        let mut args: Vec<OsString> = vec![
            {
                let mut create = OsString::from("--create=");
                create.push(&output);
                create
            },
            "-64".into(),
        ];
        for (index, image) in images.iter().enumerate() {
            let file = work.path().join(format!("image{index}.{}", if image.ptx { "ptx" } else { "cubin" }));
            std::fs::write(&file, &image.bytes).map_err(|e| ToolError::io("writing an image for fatbinary", &file, e))?;
            let mut spec = OsString::from(format!("--image3=kind={},sm={},file=", if image.ptx { "ptx" } else { "elf" }, image.sm.code()));
            spec.push(&file);
            args.push(spec);
        }
        args.extend(mode.map(OsString::from));
        run_tool("fatbinary", &self.ptxas.with_file_name("fatbinary"), &args, opts)?;
        read(&output, "reading the fat binary fatbinary wrote")
    }
}

/// What `program --version` prints on stdout, if it runs within 10 seconds and succeeds.
pub fn version_output(program: &Path) -> Option<String> {
    match process::run(program, &["--version".into()], Some(Duration::from_secs(10))).ok()? {
        Ended::Exited { status, stdout, .. } if status.success() => Some(String::from_utf8_lossy(&stdout).into_owned()),
        _ => None,
    }
}

/// The plain architectures (no `a`) that both LLVM 22's NVPTX
/// ([`crate::target::LLVM_ARCHITECTURES`]) and the toolkit's `ptxas` take, in order: what
/// `cdpc --list-gpu-code` lists, as nvcc lists its own. ptxas names its architectures in its
/// `--help` (`'sm_90'`, `'compute_90'`, ...). `None` when ptxas does not answer within 10
/// seconds.
pub fn ptxas_architectures(ptxas: &Path) -> Option<Vec<crate::target::SmVersion>> {
    let help = match process::run(ptxas, &["--help".into()], Some(Duration::from_secs(10))).ok()? {
        Ended::Exited { status, stdout, .. } if status.success() => String::from_utf8_lossy(&stdout).into_owned(),
        _ => return None,
    };
    Some(crate::target::LLVM_ARCHITECTURES.iter().copied().filter(|a| !a.arch_specific && help.contains(&format!("'{a}'"))).collect())
}

/// The host compiler's own include folder, as nvcc's default host compiler `gcc` (the one on
/// `PATH`) names it: `gcc -print-file-name=include` (`/usr/lib/gcc/x86_64-linux-gnu/12/include`),
/// which holds GCC's `<omp.h>`. nvcc preprocesses both sides of a `.cu` file with `gcc`, which
/// searches this folder; Clang does not (its own resource headers take its place), so cdpc gives
/// it to Clang last (`clang::ClangInvocation::host_include`). Asked once per process (about 2 ms);
/// `None` when `gcc` does not run within 10 seconds or names no folder (GCC prints the bare
/// `include` when it has none).
pub fn host_compiler_include() -> Option<PathBuf> {
    static FOLDER: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOLDER
        .get_or_init(|| match process::run(Path::new("gcc"), &["-print-file-name=include".into()], Some(Duration::from_secs(10))).ok()? {
            Ended::Exited { status, stdout, .. } if status.success() => {
                let folder = PathBuf::from(String::from_utf8(stdout).ok()?.trim());
                (folder.is_absolute() && folder.is_dir()).then_some(folder)
            }
            _ => None,
        })
        .clone()
}

/// The `_FORTIFY_SOURCE` level the host compiler `program` (nvcc's: `gcc` on `PATH`, or
/// `-ccbin`'s) defines by itself at `-O<level>` for C++: Ubuntu's GCC defines 2 (22.04) or 3
/// (24.04) whenever it optimises, Debian's and upstream GCC none. nvcc passes its host `-O` on to
/// that compiler, so a host program nvcc builds with `-O2` on Ubuntu stops at a fortified
/// overflow (`*** buffer overflow detected ***`); cdpc's host side is Clang's, which defines
/// nothing, and is given this level instead ([`crate::front::cuda::CudaCxxOptions::host_fortify`]).
/// Asked once per process and level (`program -dM -E -O<level> -x c++ /dev/null`, about 10 ms);
/// `None` when it defines none, or does not answer within 10 seconds.
pub fn host_compiler_fortify(program: &Path, level: u8) -> Option<u32> {
    type Answers = Mutex<std::collections::HashMap<(PathBuf, u8), Option<u32>>>;
    static ASKED: std::sync::OnceLock<Answers> = std::sync::OnceLock::new();
    let asked = ASKED.get_or_init(Default::default);
    let key = (program.to_path_buf(), level);
    if let Some(answer) = asked.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return *answer;
    }
    let args: Vec<OsString> = ["-dM", "-E", &format!("-O{level}"), "-x", "c++", "/dev/null"].iter().map(OsString::from).collect();
    let answer = match process::run(program, &args, Some(Duration::from_secs(10))) {
        Ok(Ended::Exited { status, stdout, .. }) if status.success() => fortify_level(&String::from_utf8_lossy(&stdout)),
        _ => None,
    };
    asked.lock().unwrap_or_else(|e| e.into_inner()).insert(key, answer);
    answer
}

/// The value of `#define _FORTIFY_SOURCE N` among a compiler's predefined macros (`-dM -E`).
pub fn fortify_level(predefined: &str) -> Option<u32> {
    predefined.lines().find_map(|l| l.strip_prefix("#define _FORTIFY_SOURCE ")).and_then(|v| v.trim().parse().ok()).filter(|&n| n > 0)
}

/// What a front-end process (Clang) left: the file it wrote and what it said.
#[derive(Debug)]
pub struct FrontEndRun {
    /// The output file's bytes.
    pub output: Vec<u8>,
    /// Its stderr (warnings), which the caller turns into diagnostics.
    pub stderr: String,
}

/// Runs a front end (`tool`, at `program`) in a work folder of its own, removed in every case:
/// `args` gets the folder and returns the arguments and the output file the tool writes
/// there. Bounded by [`BuildOptions::tool_timeout`]; recorded in the log without its stderr
/// (the caller reports that as diagnostics). A failed run is [`ToolError::Failed`] with its
/// stderr, which holds the front end's messages.
pub fn run_front_end(tool: &str, program: &Path, args: impl FnOnce(&Path) -> Result<(Vec<OsString>, PathBuf), ToolError>, opts: &BuildOptions) -> Result<FrontEndRun, ToolError> {
    let work = work_dir(opts)?;
    let (args, output) = args(work.path())?;
    run_tool(tool, program, &args, opts)?;
    let mut runs = opts.log.0.lock().unwrap_or_else(|e| e.into_inner());
    let stderr = match runs.last_mut() {
        Some(run) if run.tool == tool => std::mem::take(&mut run.stderr),
        _ => String::new(),
    };
    drop(runs);
    Ok(FrontEndRun { output: read(&output, "reading what the front end wrote")?, stderr })
}

/// Runs `f` in a work folder of its own (the one [`run_front_end`] makes), removed in every
/// case when `f` returns: for a front end that runs inside this process
/// ([`crate::front::cuda::in_process`]).
pub(crate) fn in_work_dir<T>(opts: &BuildOptions, f: impl FnOnce(&Path) -> Result<T, ToolError>) -> Result<T, ToolError> {
    let work = work_dir(opts)?;
    f(work.path())
}

/// A work folder, recorded for [`cleanup::interrupt`] until it is removed. The folder goes
/// first (fields drop in order), then the record.
pub struct WorkDir {
    dir: TempDir,
    _tracked: Tracked,
}

impl WorkDir {
    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A new work folder under [`BuildOptions::temp_root`] (else `$TMPDIR`), removed when dropped
/// and also when the process is interrupted.
pub fn work_dir(opts: &BuildOptions) -> Result<WorkDir, ToolError> {
    work_dir_in(&opts.temp_root.clone().unwrap_or_else(std::env::temp_dir))
}

/// A new work folder in `root`, removed when dropped and also when the process is interrupted
/// (or stopped as a filler: `crate::front::cuda::filler`): every work folder of the process is made
/// here, so that a stop leaves none behind.
pub fn work_dir_in(root: &Path) -> Result<WorkDir, ToolError> {
    let root = root.to_path_buf();
    // What processes killed by SIGKILL left here goes now (once per process).
    cleanup::sweep_stale_work_dirs(&root);
    let create = || tempfile::Builder::new().prefix(&cleanup::work_dir_prefix()).tempdir_in(&root).map_err(|e| ToolError::io("creating a temporary work folder in", &root, e));
    let (dir, tracked) = cleanup::tracked(create, |dir: &TempDir| dir.path().to_path_buf())?;
    Ok(WorkDir { dir, _tracked: tracked })
}

pub(super) fn read(path: &Path, action: &str) -> Result<Vec<u8>, ToolError> {
    std::fs::read(path).map_err(|e| ToolError::io(action, path, e))
}

/// Runs one tool, capturing its output, and records it in the log. Nothing is printed: callers
/// show the log (the CLI's `-v` prints the command lines).
pub(super) fn run_tool(tool: &str, program: &Path, args: &[OsString], opts: &BuildOptions) -> Result<(), ToolError> {
    let command = command_line(program.as_os_str(), args);
    let started = std::time::Instant::now();
    let ended = process::run(program, args, opts.tool_timeout).map_err(|source| ToolError::Spawn { tool: tool.to_string(), command: command.clone(), source })?;
    record(tool, command, ended, started, opts)
}

/// How a tool's run `ended`: an error, or recorded in the log as a [`ToolRun`] whose time is
/// counted from `started`.
pub(super) fn record(tool: &str, command: String, ended: Ended, started: std::time::Instant, opts: &BuildOptions) -> Result<(), ToolError> {
    let (status, stdout, stderr) = match ended {
        Ended::Exited { status, stdout, stderr } => (status, stdout, stderr),
        Ended::Interrupted => return Err(ToolError::Interrupted),
        Ended::TimedOut { stderr, .. } => {
            return Err(ToolError::TimedOut { tool: tool.to_string(), command, limit: opts.tool_timeout.unwrap_or_default(), stderr: truncate_output(&stderr, CAPTURE_LIMIT) })
        }
    };
    if !status.success() {
        return Err(ToolError::Failed {
            tool: tool.to_string(),
            command,
            status: ExitKind::from_status(status),
            stderr: truncate_output(&stderr, CAPTURE_LIMIT),
            stdout: truncate_output(&stdout, CAPTURE_LIMIT),
        });
    }
    opts.log.push(ToolRun { tool: tool.to_string(), command, stdout: truncate_output(&stdout, CAPTURE_LIMIT), stderr: truncate_output(&stderr, CAPTURE_LIMIT), elapsed: started.elapsed() });
    Ok(())
}

/// The final output: a temporary file beside it, renamed over it by [`OutputFile::commit`].
/// Dropping it without committing removes the temporary file; so does
/// [`cleanup::interrupt`].
pub struct OutputFile {
    tmp: NamedTempFile,
    _tracked: Tracked,
    path: PathBuf,
    guard: Option<OutputGuard>,
    /// The output is the null device (`-o /dev/null`): written to the temporary file (in the
    /// temporary folder, not beside it), which is then removed, never renamed over the device.
    discard: bool,
}

impl OutputFile {
    /// Like [`OutputFile::prepare`], and first checks that the output replaces nothing `guard`
    /// protects (an input; a file that is no compiler's output), again just before the rename.
    pub fn prepare_guarded(path: &Path, guard: OutputGuard) -> Result<OutputFile, ToolError> {
        if cache_fill_bits() != 0 {
            return OutputFile::prepare(path);
        }
        guard.check(path)?;
        let mut file = OutputFile::prepare(path)?;
        file.guard = Some(guard);
        Ok(file)
    }

    /// Checks that `path` can be written (its folder exists, it is not a folder) and makes the
    /// temporary file beside it. Whatever file is at `path` is replaced on commit: callers
    /// that write where a user asked use [`OutputFile::prepare_guarded`]. A filler of the cache
    /// (`clang::cache::Fill`), which writes no output and runs after the compilation that
    /// started it has exited, touches nothing beside the output (a build may be removing that
    /// folder by then): its unused temporary file is in the temporary folder.
    pub fn prepare(path: &Path) -> Result<OutputFile, ToolError> {
        if cache_fill_bits() != 0 {
            let create = || tempfile::Builder::new().prefix(".cdpc-fill.").suffix(OsStr::new(".tmp")).tempfile().map_err(|e| ToolError::OutputIo { path: path.to_path_buf(), source: e });
            let (tmp, tracked) = cleanup::tracked(create, |tmp: &NamedTempFile| tmp.path().to_path_buf())?;
            return Ok(OutputFile { tmp, _tracked: tracked, path: path.to_path_buf(), guard: None, discard: false });
        }
        if std::fs::metadata(path).is_ok_and(|m| crate::toolchain::overwrite::is_null_device(&m)) {
            let create = || tempfile::Builder::new().prefix(".cdpc-null.").suffix(OsStr::new(".tmp")).tempfile().map_err(|e| ToolError::OutputIo { path: path.to_path_buf(), source: e });
            let (tmp, tracked) = cleanup::tracked(create, |tmp: &NamedTempFile| tmp.path().to_path_buf())?;
            return Ok(OutputFile { tmp, _tracked: tracked, path: path.to_path_buf(), guard: None, discard: true });
        }
        let invalid = |reason: String| ToolError::OutputPathInvalid { path: path.to_path_buf(), reason };
        if path.is_dir() {
            return Err(invalid("it is a directory".to_string()));
        }
        let name = match path.file_name() {
            Some(n) => n,
            None => return Err(invalid("it does not name a file".to_string())),
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.exists() {
            return Err(invalid(format!("the folder `{}` does not exist", dir.display())));
        }
        if !dir.is_dir() {
            return Err(invalid(format!("`{}` is not a folder", dir.display())));
        }
        let mut prefix = OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let create = || {
            tempfile::Builder::new().prefix(&prefix).suffix(OsStr::new(".tmp")).tempfile_in(&dir).map_err(|e| match e.kind() {
                io::ErrorKind::PermissionDenied => invalid(format!("cannot create files in `{}`: permission denied", dir.display())),
                _ => ToolError::OutputIo { path: path.to_path_buf(), source: e },
            })
        };
        let (tmp, tracked) = cleanup::tracked(create, |tmp: &NamedTempFile| tmp.path().to_path_buf())?;
        Ok(OutputFile { tmp, _tracked: tracked, path: path.to_path_buf(), guard: None, discard: false })
    }

    /// Writes `bytes` and renames the temporary file over the output.
    pub fn commit(self, bytes: &[u8]) -> Result<(), ToolError> {
        self.commit_with(|file| file.write_all(bytes))
    }

    /// Like [`OutputFile::commit`], with `write` writing the contents to the temporary file
    /// (which may also be a writer that fails, to test what a full disk does). A failure is
    /// `E0704` naming the output, and the temporary file is removed.
    pub fn commit_with(mut self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), ToolError> {
        // A filler of the cache (`clang::cache::Fill`) makes its headers and writes nothing else.
        if cache_fill_bits() != 0 {
            return Ok(());
        }
        let tmp_path = self.tmp.path().to_path_buf();
        let output_error = |source| ToolError::OutputIo { path: self.path.clone(), source };
        write(self.tmp.as_file_mut() as &mut dyn Write).and_then(|_| self.tmp.as_file_mut().flush()).map_err(output_error)?;
        if self.discard {
            return Ok(()); // the temporary file is removed as `self` drops
        }
        #[cfg(unix)]
        {
            // NamedTempFile is created 0600; give the result the usual file mode.
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(0o644));
        }
        if let Some(guard) = &self.guard {
            guard.check(&self.path)?;
        }
        let path = self.path;
        self.tmp.persist(&path).map(|_| ()).map_err(|e| {
            if path.is_dir() {
                ToolError::OutputPathInvalid { path: path.clone(), reason: "it is a directory".into() }
            } else {
                ToolError::OutputIo { path: path.clone(), source: e.error }
            }
        })
    }
}

/// The bits of `CDPC_CACHE_FILL`, read once: which of the cache's headers this process makes
/// instead of compiling (`clang::cache::Fill`: 1 the wrapper's, 2 the preamble), 0 for a
/// compilation. Here, below the front ends, so that an output file knows it is not written.
pub fn cache_fill_bits() -> u8 {
    static BITS: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *BITS.get_or_init(|| std::env::var("CDPC_CACHE_FILL").ok().and_then(|v| v.parse::<u8>().ok()).unwrap_or(0) & 3)
}
