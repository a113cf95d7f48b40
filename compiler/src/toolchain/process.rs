//! One run of a tool: start it, drain its output, bound its time, kill it when the time is up
//! or the process is interrupted ([`super::cleanup::interrupt`]).
//!
//! The standard library waits for a child without a limit, so the child is polled with
//! `try_wait` (every millisecond at first, every 20 ms after a while: a launch-heavy ptxas run
//! takes seconds, a small one milliseconds) while two threads read its stdout and stderr, which
//! must be drained or a chatty tool would block on a full pipe. Only the child itself is
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
    let Ok(_running) = RunningTool::start() else { return Ok(Ended::Interrupted) };
    let started = Instant::now();
    let deadline = limit.map(|l| started + l);
    let mut child = spawn(program, args)?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
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
        let left = deadline.map_or(pause, |d| d - now);
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(MAX_POLL);
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
    let (stdout, stderr) = (collect(&stdout, pipes_by), collect(&stderr, pipes_by));
    Ok(match status {
        Some(status) => Ended::Exited { status, stdout, stderr },
        None => Ended::TimedOut { stderr },
    })
}

fn spawn(program: &Path, args: &[OsString]) -> io::Result<Child> {
    // A script written moments ago can be briefly "busy" (ETXTBSY) while another thread's fork
    // still holds its write descriptor; retry that case a few times.
    let mut tries = 0;
    loop {
        let result = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
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
