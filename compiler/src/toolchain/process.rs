//! One run of a tool: start it, drain its output, bound its time, kill it when the time is up
//! or the process is interrupted ([`super::cleanup::interrupt`]).
//!
//! The standard library waits for a child without a limit, so the run waits in slices of at most
//! 20 ms, looking at the deadline and the interrupt flag between them, while two threads read
//! its stdout and stderr, which must be drained or a chatty tool would block on a full pipe.
//! On Linux a slice is a `poll` of the child's pidfd, which returns the moment the child exits:
//! the run's end is seen at once, not at the next wake-up of a sleep (sleeping slices of 1, 2,
//! 4, 8, 16, then 20 ms added 10 ms on average to each ptxas and nvlink run, a sixth of a small
//! sample's whole compile). Where no pidfd can be had (other systems, kernels before 5.3) the
//! slices are sleeps that start at a millisecond and double up to 20 ms.
//!
//! [`run`] starts a tool and waits for it; [`start_early`] starts one whose input is not
//! written yet ([`super::early`]), waited for later ([`Started::wait`]).
//!
//! Each tool runs with glibc malloc tunables that give its heap transparent huge pages
//! ([`MALLOC_TUNABLES`]; a `GLIBC_TUNABLES` of the user's own is left alone): a quarter less
//! CPU time for ptxas and nvlink on small inputs, the same output. Only the child itself is
//! killed; a grandchild that keeps its output open (a wrapper script's) is not waited for past
//! the deadline.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::cleanup::{self, RunningTool};

/// How a run ended.
pub(crate) enum Ended {
    /// The tool exited (or died) by itself.
    Exited { status: ExitStatus, stdout: Vec<u8>, stderr: Vec<u8> },
    /// The time limit passed and the tool was killed; what it had printed to stderr so far.
    TimedOut { stderr: Vec<u8> },
    /// The process was interrupted and the tool was killed.
    Interrupted,
}

/// After a kill, how long to wait for the output pipes to close.
const PIPE_GRACE: Duration = Duration::from_secs(1);
const MAX_POLL: Duration = Duration::from_millis(20);

/// Runs `program args` with stdin closed, for at most `limit` (no limit for `None`).
pub(crate) fn run(program: &Path, args: &[OsString], limit: Option<Duration>) -> io::Result<Ended> {
    let Ok(running) = RunningTool::start() else { return Ok(Ended::Interrupted) };
    let started = Started::spawn(program, args, Watch::Counted(running))?;
    started.wait(limit)
}

/// Starts `program args` now, to be waited for later ([`Started::wait`]): a tool whose input
/// is not written yet ([`super::early`]). Until then no thread looks at it, so it is not
/// counted as running: [`cleanup::interrupt`] kills it itself, through its pidfd. `None` where
/// no pidfd can be had (other systems, Linux before 5.3): the caller runs the tool later.
pub(crate) fn start_early(program: &Path, args: &[OsString]) -> io::Result<Option<Started>> {
    // Counted while it is being started and registered (locals drop last to first: after the
    // tool itself when this fails), so that an interrupt in between waits for this thread to
    // kill it instead of exiting with it still running.
    let Ok(_starting) = RunningTool::start() else { return Ok(None) };
    let mut started = Started::spawn(program, args, Watch::None)?;
    match started.exit.raw_pidfd().map(cleanup::KillOnInterrupt::register) {
        Some(Ok(registered)) => {
            started.watch = Watch::Registered(registered);
            Ok(Some(started))
        }
        // Interrupted since the spawn, or no pidfd: the started tool is killed as it drops.
        Some(Err(_)) | None => Ok(None),
    }
}

/// How [`cleanup::interrupt`] reaches a started tool.
enum Watch {
    /// Counted as running: the thread waiting for it kills it.
    Counted(#[allow(dead_code)] RunningTool),
    /// Killed by `interrupt` itself through its pidfd.
    Registered(#[allow(dead_code)] cleanup::KillOnInterrupt),
    /// Not yet either (only inside [`start_early`]).
    None,
}

/// A started tool: its output pipes being drained, its exit watched. Dropped without
/// [`Started::wait`], it is killed and reaped.
pub(crate) struct Started {
    // Fields drop in order: the registration (which names the pidfd) before the pidfd.
    watch: Watch,
    exit: ExitWatch,
    child: Option<Child>,
    stdout: mpsc::Receiver<Vec<u8>>,
    stderr: mpsc::Receiver<Vec<u8>>,
}

impl Started {
    fn spawn(program: &Path, args: &[OsString], watch: Watch) -> io::Result<Started> {
        let mut child = spawn(program, args)?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let exit = ExitWatch::new(&child);
        Ok(Started { watch, exit, child: Some(child), stdout, stderr })
    }

    /// Waits for the tool's end, for at most `limit` from now (no limit for `None`): killed at
    /// the limit or when the process is interrupted.
    pub(crate) fn wait(mut self, limit: Option<Duration>) -> io::Result<Ended> {
        let Some(mut child) = self.child.take() else { return Ok(Ended::Interrupted) };
        let started = Instant::now();
        let deadline = limit.map(|l| started + l);
        let mut pause = Duration::from_millis(1);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            let now = Instant::now();
            if cleanup::interrupted() || deadline.is_some_and(|d| now >= d) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            let left = deadline.map_or(MAX_POLL, |d| d - now);
            if !self.exit.wait(MAX_POLL.min(left)) {
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(MAX_POLL);
            }
        };
        if cleanup::interrupted() {
            return Ok(Ended::Interrupted);
        }
        // A finished tool's pipes close at once, unless a grandchild holds them: then wait no
        // longer than the deadline allows.
        let pipes_by = match status {
            Some(_) => deadline.map(|d| d.max(Instant::now())),
            None => Some(Instant::now() + PIPE_GRACE),
        };
        let (stdout, stderr) = (collect(&self.stdout, pipes_by), collect(&self.stderr, pipes_by));
        Ok(match status {
            Some(status) => Ended::Exited { status, stdout, stderr },
            None => Ended::TimedOut { stderr },
        })
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A way to sleep until a child exits: its pidfd on Linux, nothing elsewhere.
struct ExitWatch {
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl ExitWatch {
    #[cfg(target_os = "linux")]
    fn new(child: &Child) -> ExitWatch {
        use std::os::fd::{FromRawFd, OwnedFd};
        let Ok(pid) = libc::pid_t::try_from(child.id()) else { return ExitWatch { pidfd: None } };
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; the
        // child is not reaped yet (only this thread waits for it), so the pid is still its.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = i32::try_from(fd).ok().filter(|&fd| fd >= 0).map(|fd| {
            // SAFETY: `fd` was just returned by pidfd_open and nothing else owns it.
            unsafe { OwnedFd::from_raw_fd(fd) }
        });
        ExitWatch { pidfd }
    }

    #[cfg(not(target_os = "linux"))]
    fn new(_child: &Child) -> ExitWatch {
        ExitWatch {}
    }

    /// The child's pidfd, if there is one.
    #[cfg(target_os = "linux")]
    fn raw_pidfd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.pidfd.as_ref().map(AsRawFd::as_raw_fd)
    }

    #[cfg(not(target_os = "linux"))]
    fn raw_pidfd(&self) -> Option<i32> {
        None
    }

    /// Waits until the child exits or `limit` passes; false when there is nothing to wait on
    /// (the caller sleeps instead).
    #[cfg(target_os = "linux")]
    fn wait(&self, limit: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let Some(pidfd) = &self.pidfd else { return false };
        let mut fds = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // Rounded up, so that a wait never returns before `limit` with nothing to report.
        let ms = limit.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, and the count says one. EINTR or any error just ends the
        // slice; the caller looks at the child again.
        unsafe { libc::poll(&mut fds, 1, ms) };
        true
    }

    #[cfg(not(target_os = "linux"))]
    fn wait(&self, _limit: Duration) -> bool {
        false
    }
}

/// The environment variable through which glibc reads its tunables.
const TUNABLES_VAR: &str = "GLIBC_TUNABLES";

/// glibc's malloc settings for the tools: transparent huge pages for the heap (`hugetlb=1`
/// asks with `madvise`, so it matters where the system's THP mode is `madvise`, as on the
/// development machine and Ubuntu's kernels, and changes nothing under `always` or `never`) and a heap that grows
/// 64 MiB at a time (`top_pad`), so that its pieces are large enough for huge pages. ptxas and
/// nvlink touch a few MB of fresh heap on every run, one 4 KiB page fault at a time: measured
/// on the samples (2-core development machine, 2026-11-24), ptxas on hello.cdp's PTX takes 3,918
/// page faults and 28.6 ms of CPU without these settings, 1,186 and 20.5 ms with them; on
/// quicksort.cdp's, 5,362 and 88.7 ms against 1,304 and 78.9 ms; nvlink 2,126 and 14.4 ms
/// against 779 and 10.0 ms. The tools' output is the same byte for byte (only where malloc
/// gets its memory changes). Unknown tunables are ignored by glibc before 2.35.
const MALLOC_TUNABLES: &str = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864";

/// What a tool's `GLIBC_TUNABLES` is set to: [`MALLOC_TUNABLES`], unless the user set the
/// variable (`existing`), whose choice is kept as it is (`None`: the child inherits it).
fn malloc_tunables(existing: Option<&std::ffi::OsStr>) -> Option<&'static str> {
    match existing {
        Some(_) => None,
        None => Some(MALLOC_TUNABLES),
    }
}

fn spawn(program: &Path, args: &[OsString]) -> io::Result<Child> {
    // A script written moments ago can be briefly "busy" (ETXTBSY) while another thread's fork
    // still holds its write descriptor; retry that case a few times.
    let mut tries = 0;
    loop {
        let mut command = Command::new(program);
        if let Some(tunables) = malloc_tunables(std::env::var_os(TUNABLES_VAR).as_deref()) {
            command.env(TUNABLES_VAR, tunables);
        }
        let result = command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        match result {
            Err(e) if e.raw_os_error() == Some(26) && cfg!(unix) && tries < 10 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20 * tries));
            }
            other => return other,
        }
    }
}

/// Reads a pipe to its end on a thread; the bytes arrive on the channel (none for no pipe).
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (send, receive) = mpsc::channel();
    match pipe {
        Some(mut pipe) => {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                let _ = send.send(bytes);
            });
        }
        None => {
            let _ = send.send(Vec::new());
        }
    }
    receive
}

/// What a reader collected, waiting until `by` at the latest (for ever for `None`).
fn collect(pipe: &mpsc::Receiver<Vec<u8>>, by: Option<Instant>) -> Vec<u8> {
    match by {
        None => pipe.recv().unwrap_or_default(),
        Some(by) => pipe.recv_timeout(by.saturating_duration_since(Instant::now())).unwrap_or_default(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The pidfd wait returns when the child exits, long before its limit, and the child is
    /// then ready to be reaped.
    #[test]
    fn exit_watch_wakes_when_the_child_exits() {
        let mut child = Command::new("sh").args(["-c", "sleep 0.05"]).spawn().expect("sh runs");
        let watch = ExitWatch::new(&child);
        let started = Instant::now();
        assert!(watch.wait(Duration::from_secs(30)), "Linux 5.3 or later gives a pidfd");
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(20), "woke after {waited:?}, not at the exit");
        assert!(child.try_wait().expect("try_wait").is_some(), "the child has exited");
    }

    /// A tool sees the malloc tunables unless the user set GLIBC_TUNABLES.
    #[test]
    fn tools_get_the_malloc_tunables_unless_the_user_set_some() {
        assert_eq!(malloc_tunables(None), Some(MALLOC_TUNABLES));
        assert_eq!(malloc_tunables(Some(std::ffi::OsStr::new("glibc.malloc.arena_max=1"))), None);
        assert_eq!(malloc_tunables(Some(std::ffi::OsStr::new(""))), None);
        if std::env::var_os(TUNABLES_VAR).is_some() {
            eprintln!("SKIPPED the spawned half: GLIBC_TUNABLES is set in this environment");
            return;
        }
        let ended = run(Path::new("/bin/sh"), &["-c".into(), "printf %s \"$GLIBC_TUNABLES\"".into()], Some(Duration::from_secs(60))).expect("sh runs");
        match ended {
            Ended::Exited { status, stdout, .. } => {
                assert!(status.success());
                assert_eq!(String::from_utf8_lossy(&stdout), MALLOC_TUNABLES);
            }
            _ => panic!("sh did not exit by itself"),
        }
    }
}
