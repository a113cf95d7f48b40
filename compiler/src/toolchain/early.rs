//! ptxas and nvlink started before their input exists, so that their own start-up runs while
//! cdpc is still making the PTX, and nvlink's while ptxas assembles it.
//!
//! On a small module both tools spend half their time or more before they open their input:
//! ptxas loading and relocating its 50 MB binary and running its static initialisation,
//! nvlink that and reading libcudadevrt.a (with a free core, a sixth less wall-clock time on the
//! samples: 2-core development machine, 2026-11-24). cdpc makes
//! the input file empty under a **write lease** (`fcntl(F_SETLEASE, F_WRLCK)`, Linux) and
//! starts the tool; the tool's `open` of that file then waits in the kernel until cdpc has
//! written the whole input and released the lease ([`LeasedInput::release`]). The tool reads
//! an ordinary file, so what it makes is byte for byte what it makes when started afterwards.
//!
//! The kernel breaks a lease that is not released within `/proc/sys/fs/lease-break-time`
//! seconds (45 by default) of the `open`, and the tool would then read a file not yet whole.
//! So the lease is released only if the input was written within that time, less a second,
//! of the tool's start (its `open` comes later); otherwise the tool is killed and run again
//! once the input is whole. The lease's signal to its holder is turned off (`F_SETOWN` 0):
//! no signal reaches the process, whose handling of SIGIO belongs to its embedder. Where a
//! lease cannot be taken (another system, a file system without leases, leases turned off) or
//! no pidfd is had, the tool runs after its input is written, as before; so it runs again when
//! the early run fails, and that run's failure is the one reported.
//!
//! [`StartedBuild`] is the one user: [`Toolchain::start_build`] before the PTX is made,
//! [`StartedBuild::finish`] with it. A tool started early is killed and reaped if the build is
//! dropped without finishing (the compilation failed), and by [`super::cleanup::interrupt`].
//! Each tool's time limit and its time in the log (`--time`) count from the moment its input
//! is whole.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::discover::Toolchain;
use super::error::{command_line, ToolError};
use super::process::{self, Started};
use super::ptx_parts;
use super::register_cap;
use super::run::{at_once, nvlink_args, ptxas_args, read, record, run_tool, work_dir, BuildOptions, WorkDir};

const PTX_NAME: &str = "module.ptx";
/// The PTX of ptxas's second run, with the register caps a kernel needs ([`StartedBuild::recap`]).
const CAPPED_PTX_NAME: &str = "capped.ptx";
/// What ptxas writes when nvlink follows: nvlink reads [`OBJECT_NAME`], a copy made under a
/// lease (ptxas's own `open` of a leased file would wait for the lease too).
const ASSEMBLED_NAME: &str = "assembled.o";
const OBJECT_NAME: &str = "module.o";
const CUBIN_NAME: &str = "module.cubin";
/// The relocatable object `nvlink -r` makes of a module's parts.
const JOINED_NAME: &str = "joined.o";

/// A file that a tool started now will open: created empty under a write lease, so that the
/// tool's `open` waits until [`LeasedInput::release`].
#[derive(Debug)]
pub(super) struct LeasedInput {
    file: File,
}

impl LeasedInput {
    /// Creates `path`, which must not exist, empty and under a write lease; an error where no
    /// lease can be taken.
    #[cfg(target_os = "linux")]
    pub(super) fn create(path: &Path) -> io::Result<LeasedInput> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(path)?;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns, with integer arguments.
        if unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::c_int::from(libc::F_WRLCK)) } != 0 {
            let error = io::Error::last_os_error();
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(error);
        }
        // No owner: the lease's break sends no signal (SIGIO would end a process that does not
        // handle it). Nobody can have opened the file yet, so no break has begun.
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETOWN, 0) } != 0 {
            let error = io::Error::last_os_error();
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(error);
        }
        Ok(LeasedInput { file })
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn create(_path: &Path) -> io::Result<LeasedInput> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "file leases are Linux's"))
    }

    /// Writes `bytes` (the whole input) and releases the lease, letting the tool started at
    /// `tool_started` open the file. `Ok(false)` when the kernel may have broken the lease
    /// already (the tool may have read the file before it was whole): the lease is not
    /// released, and the caller kills the tool and runs it again.
    pub(super) fn release(mut self, bytes: &[u8], tool_started: Instant) -> io::Result<bool> {
        self.file.write_all(bytes)?;
        if !written_in_time(tool_started.elapsed(), lease_break_time()) {
            return Ok(false);
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: fcntl on the descriptor `self` owns. Closing the file releases the lease
            // too; this only makes it explicit.
            unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETLEASE, libc::c_int::from(libc::F_UNLCK)) };
        }
        Ok(true)
    }
}

/// The kernel's `lease-break-time`, `None` if it cannot be read.
fn lease_break_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/sys/fs/lease-break-time").ok()?;
    text.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Whether an input written `elapsed` after its reader started is certainly whole when read:
/// the kernel holds the reader's `open` for `break_time` at most, counted from the `open`
/// (after the start); a second of margin for the kernel's clock ticks.
fn written_in_time(elapsed: Duration, break_time: Option<Duration>) -> bool {
    break_time.is_some_and(|limit| elapsed + Duration::from_secs(1) < limit)
}

/// A tool started before its input was written.
struct EarlyTool {
    tool: &'static str,
    program: PathBuf,
    args: Vec<std::ffi::OsString>,
    input: LeasedInput,
    started: Started,
    at: Instant,
}

impl EarlyTool {
    /// Starts `program args` with `input` made under a lease; `None` (and `input` not made)
    /// where that cannot be done: the caller runs the tool after writing its input.
    fn start(tool: &'static str, program: &Path, args: Vec<std::ffi::OsString>, input: &Path) -> Option<EarlyTool> {
        let leased = LeasedInput::create(input).ok()?;
        let at = Instant::now();
        match process::start_early(program, &args) {
            Ok(Some(started)) => Some(EarlyTool { tool, program: program.to_path_buf(), args, input: leased, started, at }),
            // No pidfd, interrupted, or the spawn failed: the later run reports what it finds.
            Ok(None) | Err(_) => {
                drop(leased);
                let _ = std::fs::remove_file(input);
                None
            }
        }
    }

    /// Writes the input, lets the tool read it and waits for the tool, as a run of it started
    /// now would ([`run_tool`]).
    fn finish(self, bytes: &[u8], what: &str, input: &Path, opts: &BuildOptions) -> Result<(), ToolError> {
        self.finish_then(bytes, what, input, opts, || ())
    }

    /// [`EarlyTool::finish`], calling `released` as soon as the tool may read its input
    /// (or, when it is run again, before that run).
    fn finish_then(self, bytes: &[u8], what: &str, input: &Path, opts: &BuildOptions, released: impl FnOnce()) -> Result<(), ToolError> {
        let EarlyTool { tool, program, args, input: leased, started, at } = self;
        let ready = Instant::now();
        let in_time = leased.release(bytes, at).map_err(|e| ToolError::io(what, input, e))?;
        released();
        if !in_time {
            // Too late for the lease: the input is whole now, the early tool goes.
            drop(started);
            return run_tool(tool, &program, &args, opts);
        }
        let command = command_line(program.as_os_str(), &args);
        let ended = started.wait(opts.tool_timeout).map_err(|source| ToolError::Spawn { tool: tool.to_string(), command: command.clone(), source })?;
        match record(tool, command, ended, ready, opts) {
            // A tool that cannot read a leased file (one that opened it without blocking, say)
            // fails where a run after its input succeeds: the failure reported is that run's.
            Err(ToolError::Failed { .. }) => run_tool(tool, &program, &args, opts),
            other => other,
        }
    }
}

/// A build whose tools may already be starting: [`Toolchain::start_build`], then
/// [`StartedBuild::finish`] with the PTX. Dropped unfinished, it kills what it started and
/// removes its work folder.
pub struct StartedBuild<'a> {
    tools: &'a Toolchain,
    opts: &'a BuildOptions,
    link: bool,
    // Fields drop in order: the tool before its work folder.
    ptxas: Option<EarlyTool>,
    work: WorkDir,
}

impl Toolchain {
    /// Starts a build of PTX not made yet: ptxas now, waiting for its input (module docs),
    /// where the system allows. `link`: a linked cubin (ptxas, then nvlink with libcudadevrt),
    /// else the relocatable object ptxas writes.
    pub fn start_build<'a>(&'a self, opts: &'a BuildOptions, link: bool) -> Result<StartedBuild<'a>, ToolError> {
        Self::start_build_with(self, opts, link, true)
    }

    /// [`Toolchain::start_build`]; `early` false runs each tool after its input is written
    /// (what happens where no lease can be had).
    pub(super) fn start_build_with<'a>(&'a self, opts: &'a BuildOptions, link: bool, early: bool) -> Result<StartedBuild<'a>, ToolError> {
        let work = work_dir(opts)?;
        let (input, object) = StartedBuild::ptxas_files(work.path(), link);
        let ptxas = early.then(|| EarlyTool::start("ptxas", &self.ptxas, ptxas_args(opts, &input, &object), &input)).flatten();
        Ok(StartedBuild { tools: self, opts, link, ptxas, work })
    }
}

impl StartedBuild<'_> {
    /// ptxas's input and output in `work`.
    fn ptxas_files(work: &Path, link: bool) -> (PathBuf, PathBuf) {
        (work.join(PTX_NAME), work.join(if link { ASSEMBLED_NAME } else { OBJECT_NAME }))
    }

    /// Assembles `ptx` (and links it) and returns the object's (or the cubin's) bytes. The
    /// launch passes' marked register caps are left out, and kept only for the kernels that
    /// need more registers without them (a second ptxas run; [`super::register_cap`]).
    ///
    /// PTX that [`ptx_parts::split`] cuts is assembled in parts at the same time and linked
    /// from them (into a cubin, or by `nvlink -r` into one relocatable object); if the tools
    /// refuse a part, the module is built whole, and that build's result (its errors) is the
    /// one returned.
    pub fn finish(mut self, ptx: &str) -> Result<Vec<u8>, ToolError> {
        if let Some(parts) = ptx_parts::split(ptx, self.opts.ptxas_parts, !self.link) {
            // The parts' runs are logged only if they built the module: after a refusal the
            // whole build's runs are the ones `-v` lists.
            let own = BuildOptions { log: super::ToolLog::new(), ..self.opts.clone() };
            if let Ok(output) = self.finish_parts(&parts, &own) {
                own.log.take().into_iter().for_each(|run| self.opts.log.push(run));
                return Ok(output);
            }
        }
        let work = self.work.path().to_path_buf();
        let opts = self.opts;
        let (input, object) = Self::ptxas_files(&work, self.link);
        let what = "writing the PTX for ptxas";
        let uncapped = register_cap::uncapped(ptx);
        let first = uncapped.as_deref().unwrap_or(ptx);
        let ptxas = self.ptxas.take();
        if ptxas.is_none() {
            std::fs::write(&input, first).map_err(|e| ToolError::io(what, &input, e))?;
        }
        if !self.link {
            match ptxas {
                Some(ptxas) => ptxas.finish(first.as_bytes(), what, &input, opts)?,
                None => run_tool("ptxas", &self.tools.ptxas, &ptxas_args(opts, &input, &object), opts)?,
            }
            return self.recap(ptx, uncapped.is_some(), &object);
        }
        // nvlink starts as ptxas's input is released, its own input a copy of ptxas's output.
        let linked = work.join(OBJECT_NAME);
        let cubin = work.join(CUBIN_NAME);
        let nvlink_args = nvlink_args(opts, &[linked.as_path()], &self.tools.cudadevrt_dir, &cubin);
        let mut nvlink = None;
        match ptxas {
            Some(ptxas) => {
                let released = ptxas.finish_then(first.as_bytes(), what, &input, opts, || {
                    nvlink = EarlyTool::start("nvlink", &self.tools.nvlink, nvlink_args.clone(), &linked);
                });
                released?;
            }
            None => {
                nvlink = EarlyTool::start("nvlink", &self.tools.nvlink, nvlink_args.clone(), &linked);
                run_tool("ptxas", &self.tools.ptxas, &ptxas_args(opts, &input, &object), opts)?;
            }
        }
        let assembled = self.recap(ptx, uncapped.is_some(), &object)?;
        match nvlink {
            Some(nvlink) => nvlink.finish(&assembled, "writing the object for nvlink", &linked, opts)?,
            None => {
                std::fs::write(&linked, &assembled).map_err(|e| ToolError::io("writing the object for nvlink", &linked, e))?;
                run_tool("nvlink", &self.tools.nvlink, &nvlink_args, opts)?;
            }
        }
        read(&cubin, "reading the cubin nvlink wrote")
    }

    /// The object ptxas wrote at `object`; when `uncapped` (it assembled `ptx` without its
    /// marked caps) and a marked kernel needed more registers than its cap, ptxas's object of
    /// `ptx` with those kernels' caps alone, assembled again into `object`.
    fn recap(&self, ptx: &str, uncapped: bool, object: &Path) -> Result<Vec<u8>, ToolError> {
        recap(self.tools, ptx, uncapped, object, &self.work.path().join(CAPPED_PTX_NAME), self.opts)
    }

    /// The cubin (or relocatable object) of a module's `parts`: each assembled by a ptxas of
    /// its own, all at the same time ([`at_once`]; the first by the ptxas started early, if
    /// any), then linked by nvlink (with libcudadevrt, or `-r`).
    fn finish_parts(&mut self, parts: &[String], opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
        let work = self.work.path();
        let files = |i: usize| {
            let (input, object) = Self::ptxas_files(work, self.link);
            if i == 0 {
                (input, object, work.join(CAPPED_PTX_NAME))
            } else {
                (work.join(format!("part{i}.ptx")), work.join(format!("part{i}.o")), work.join(format!("capped{i}.ptx")))
            }
        };
        let early = Mutex::new(self.ptxas.take());
        let tools = self.tools;
        let indices: Vec<usize> = (0..parts.len()).collect();
        let assembled = at_once(&indices, opts, true, |&i, own| {
            let (input, object, capped) = files(i);
            let early = if i == 0 { early.lock().ok().and_then(|mut e| e.take()) } else { None };
            assemble_part(tools, &parts[i], &input, &object, &capped, early, own)
        });
        assembled.into_iter().collect::<Result<Vec<()>, ToolError>>()?;
        let objects: Vec<PathBuf> = indices.iter().map(|&i| files(i).1).collect();
        let objects: Vec<&Path> = objects.iter().map(PathBuf::as_path).collect();
        if !self.link {
            let joined = work.join(JOINED_NAME);
            let mut args: Vec<std::ffi::OsString> = vec![format!("-arch={}", opts.arch).into(), "-r".into()];
            args.extend(objects.iter().map(std::ffi::OsString::from));
            args.extend(["-o".into(), joined.clone().into()]);
            run_tool("nvlink", &tools.nvlink, &args, opts)?;
            return read(&joined, "reading the object nvlink wrote");
        }
        let cubin = work.join(CUBIN_NAME);
        run_tool("nvlink", &tools.nvlink, &nvlink_args(opts, &objects, &tools.cudadevrt_dir, &cubin), opts)?;
        read(&cubin, "reading the cubin nvlink wrote")
    }
}

/// One part of a module assembled into `object` (by `early`, a ptxas already waiting for
/// `input`, if given), its register caps kept where its kernels need them.
fn assemble_part(tools: &Toolchain, ptx: &str, input: &Path, object: &Path, capped: &Path, early: Option<EarlyTool>, opts: &BuildOptions) -> Result<(), ToolError> {
    let what = "writing the PTX for ptxas";
    let uncapped = register_cap::uncapped(ptx);
    let first = uncapped.as_deref().unwrap_or(ptx);
    match early {
        Some(ptxas) => ptxas.finish(first.as_bytes(), what, input, opts)?,
        None => {
            std::fs::write(input, first).map_err(|e| ToolError::io(what, input, e))?;
            run_tool("ptxas", &tools.ptxas, &ptxas_args(opts, input, object), opts)?;
        }
    }
    // ptxas's second run, if any, writes `object` again.
    recap(tools, ptx, uncapped.is_some(), object, capped, opts).map(drop)
}

/// [`StartedBuild::recap`] with the capped PTX written to `capped`.
fn recap(tools: &Toolchain, ptx: &str, uncapped: bool, object: &Path, capped_input: &Path, opts: &BuildOptions) -> Result<Vec<u8>, ToolError> {
    let assembled = read(object, "reading the object ptxas wrote")?;
    let Some(capped) = uncapped.then(|| register_cap::recapped(ptx, &assembled)).flatten() else {
        return Ok(assembled);
    };
    std::fs::write(capped_input, capped).map_err(|e| ToolError::io("writing the PTX for ptxas", capped_input, e))?;
    run_tool("ptxas", &tools.ptxas, &ptxas_args(opts, capped_input, object), opts)?;
    read(object, "reading the object ptxas wrote")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_written_late_is_not_trusted_to_the_lease() {
        let limit = Some(Duration::from_secs(45));
        assert!(written_in_time(Duration::from_millis(30), limit));
        assert!(written_in_time(Duration::from_secs(43), limit));
        assert!(!written_in_time(Duration::from_secs(44), limit));
        assert!(!written_in_time(Duration::from_secs(50), limit));
        assert!(!written_in_time(Duration::from_millis(1), Some(Duration::from_secs(1))));
        assert!(!written_in_time(Duration::from_millis(1), None), "no known limit: no lease trusted");
    }
}
