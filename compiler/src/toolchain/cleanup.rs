//! Work files that must not outlive the process, and what happens when it is interrupted.
//!
//! Every work folder and temporary output file the toolchain makes is recorded here for as long
//! as it exists, and every running ptxas or nvlink is counted. [`interrupt`] is what a signal
//! handler calls: from then on no new work file or tool run starts (they fail with
//! [`ToolError::Interrupted`](super::ToolError::Interrupted)), running tools are killed by the
//! threads that started them (a tool started before its input exists, which no thread waits
//! for yet, by `interrupt` itself: [`KillOnInterrupt`]), and every recorded file and folder is
//! removed. The `cdpc` binary
//! calls it from its signal thread on SIGINT, SIGTERM and SIGHUP, then dies of the signal.
//!
//! This is the one piece of process-wide state in the library: a signal concerns the process,
//! not one compilation. An embedding program that wants the same guarantee calls [`interrupt`]
//! from its own signal handling (a thread that waits for signals, as `signal-hook`'s iterator
//! gives, never an async-signal handler: it takes a lock and deletes files), then exits.
//! SIGKILL cannot be caught; the work folders it leaves are named
//! `cdpc-work-<pid>-<random>` so that [`stale_work_dirs`] (or `ls $TMPDIR/cdpc-work-*`) finds
//! the ones whose process is gone, and the next cdpc process to make a work folder in the same
//! place removes them ([`sweep_stale_work_dirs`]: one listing of the folder per process). A later
//! compile never trips over them: each compile makes a new folder with a random name.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::error::ToolError;

/// The prefix of every work folder: `cdpc-work-<pid>-`, then random characters.
pub const WORK_DIR_PREFIX: &str = "cdpc-work-";

/// How old a work folder must be to be stale although a process of its number runs: that
/// process is another one with the number reused (a compilation's folder lives for minutes).
pub const STALE_WORK_DIR_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// How long [`interrupt`] waits for running tools to be killed and reaped before it removes
/// the files anyway. The threads that run tools look at the flag every few milliseconds.
const KILL_GRACE: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    next_id: u64,
    paths: Vec<(u64, PathBuf)>,
    running_tools: usize,
    /// The pidfds of tools started before their input was written ([`KillOnInterrupt`]).
    early_tools: Vec<(u64, i32)>,
}

static STATE: Mutex<State> = Mutex::new(State { next_id: 0, paths: Vec::new(), running_tools: 0, early_tools: Vec::new() });
static TOOLS_DONE: Condvar = Condvar::new();
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether [`interrupt`] has been called in this process.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Stops every compilation of the process for good and removes their work files: sets the flag
/// that makes new work files and tool runs fail with `ToolError::Interrupted`, waits (at most
/// two seconds) until the threads running ptxas or nvlink have killed them, then deletes every
/// recorded work folder and temporary output file. Returns how many paths it removed.
///
/// Call it from a normal thread (a signal-waiting thread, say), then exit; compilations still
/// running in other threads fail instead of producing output.
pub fn interrupt() -> usize {
    let mut s = state();
    INTERRUPTED.store(true, Ordering::SeqCst);
    for &(_, pidfd) in &s.early_tools {
        kill_by_pidfd(pidfd);
    }
    let deadline = Instant::now() + KILL_GRACE;
    while s.running_tools > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        s = TOOLS_DONE.wait_timeout(s, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
    }
    let paths = std::mem::take(&mut s.paths);
    drop(s);
    paths.iter().filter(|(_, path)| remove_path(path)).count()
}

/// How long [`interrupt`] tries to remove a work folder that other threads of the process are
/// still writing files into.
const REMOVE_GRACE: Duration = Duration::from_secs(2);

/// Removes a file or a folder with its contents; another thread may be removing it at the same
/// time, so a vanished entry is not a failure. True when something was there.
///
/// A folder is removed again until it is gone (for at most [`REMOVE_GRACE`]): a thread that
/// was compiling when the interrupt came may still write a file into it between the listing of
/// its files and the removal of the emptied folder, which then fails ("Directory not empty").
/// Once the folder is gone, no thread makes it again (a new work folder is refused after the
/// interrupt), and their writes fail.
fn remove_path(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return false };
    if meta.is_dir() {
        let deadline = Instant::now() + REMOVE_GRACE;
        while std::fs::remove_dir_all(path).is_err() && path.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    } else {
        let _ = std::fs::remove_file(path);
    }
    true
}

/// Creates `dir` and the folders above it that are missing, as `create_dir_all`, unless the
/// process is interrupted, under the lock [`interrupt`] takes: a thread still writing into a
/// work folder when the interrupt removed it must not make that folder again, which nothing
/// would then remove (headers written into a folder of the compilation's own recreated it
/// this way, seen as a work folder left after SIGTERM).
pub(crate) fn make_dirs(dir: &Path) -> std::io::Result<()> {
    let _s = state();
    if interrupted() {
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the compilation was interrupted"));
    }
    std::fs::create_dir_all(dir)
}

/// A recorded work path; dropping it forgets the path (after the owner removed it).
#[derive(Debug)]
pub(crate) struct Tracked(u64);

impl Drop for Tracked {
    fn drop(&mut self) {
        state().paths.retain(|(id, _)| *id != self.0);
    }
}

/// Creates something on disk with `create` and records the path `path_of` gives, both under the
/// lock [`interrupt`] takes, so that nothing is created after an interrupt has cleaned up.
pub(crate) fn tracked<T>(create: impl FnOnce() -> Result<T, ToolError>, path_of: impl FnOnce(&T) -> PathBuf) -> Result<(T, Tracked), ToolError> {
    let mut s = state();
    if interrupted() {
        return Err(ToolError::Interrupted);
    }
    let value = create()?;
    let id = s.next_id;
    s.next_id += 1;
    s.paths.push((id, path_of(&value)));
    Ok((value, Tracked(id)))
}

/// A running tool, counted until dropped, so that [`interrupt`] can wait for it to be killed.
#[derive(Debug)]
pub(crate) struct RunningTool(());

impl RunningTool {
    /// Counts a tool about to be started; fails once the process is interrupted.
    pub(crate) fn start() -> Result<RunningTool, ToolError> {
        let mut s = state();
        if interrupted() {
            return Err(ToolError::Interrupted);
        }
        s.running_tools += 1;
        Ok(RunningTool(()))
    }
}

impl Drop for RunningTool {
    fn drop(&mut self) {
        let mut s = state();
        s.running_tools = s.running_tools.saturating_sub(1);
        TOOLS_DONE.notify_all();
    }
}

/// A tool started before its input exists ([`super::early`]), which no thread watches until
/// that input is written: [`interrupt`] kills it itself, through its pidfd (race-free: a pidfd
/// names the process, never a reused pid). Registered until dropped; the owner drops this
/// before it closes the pidfd.
#[derive(Debug)]
pub(crate) struct KillOnInterrupt(u64);

impl KillOnInterrupt {
    /// Registers the tool whose pidfd is `pidfd`; fails once the process is interrupted.
    pub(crate) fn register(pidfd: i32) -> Result<KillOnInterrupt, ToolError> {
        let mut s = state();
        if interrupted() {
            return Err(ToolError::Interrupted);
        }
        let id = s.next_id;
        s.next_id += 1;
        s.early_tools.push((id, pidfd));
        Ok(KillOnInterrupt(id))
    }
}

impl Drop for KillOnInterrupt {
    fn drop(&mut self) {
        state().early_tools.retain(|(id, _)| *id != self.0);
    }
}

#[cfg(target_os = "linux")]
fn kill_by_pidfd(pidfd: i32) {
    // SAFETY: pidfd_send_signal takes a descriptor, a signal, a null siginfo and flags 0; the
    // descriptor stays open while it is registered (the registry's lock is held here).
    unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd, libc::SIGKILL, std::ptr::null::<libc::siginfo_t>(), 0) };
}

#[cfg(not(target_os = "linux"))]
fn kill_by_pidfd(_pidfd: i32) {}

/// The prefix of this process's work folders: `cdpc-work-<pid>-`.
pub(crate) fn work_dir_prefix() -> String {
    format!("{WORK_DIR_PREFIX}{}-", std::process::id())
}

/// The work folders in `root` (the system's temporary folder for `None`) left by cdpc processes
/// that no longer run: named `cdpc-work-<pid>-...`, owned by this user, not this process's, and
/// with no process `<pid>` alive or older than [`STALE_WORK_DIR_AGE`]. Only Linux's `/proc`
/// tells which processes run; elsewhere the list is empty. [`sweep_stale_work_dirs`] removes
/// them.
pub fn stale_work_dirs(root: Option<&Path>) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let root = root.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    if !Path::new("/proc/self").exists() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&root) else { return Vec::new() };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let old = |meta: &std::fs::Metadata| meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age > STALE_WORK_DIR_AGE);
    let mut stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            // The name first: the folder's other entries cost nothing more than the listing.
            let Some(pid) = work_dir_pid(&e.file_name()).filter(|&pid| pid != std::process::id()) else { return false };
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else { return false };
            meta.is_dir() && meta.uid() == me && (!Path::new("/proc").join(pid.to_string()).exists() || old(&meta))
        })
        .map(|e| e.path())
        .collect();
    stale.sort();
    stale
}

/// Removes [`stale_work_dirs`] in `root`, once per process (the first work folder's place):
/// the work folders of cdpc processes killed by SIGKILL (or an embedding program's that died)
/// go with the next cdpc process, at the cost of one listing of the folder. Another process
/// removing the same folders at the same time is no failure; nothing is reported.
pub(crate) fn sweep_stale_work_dirs(root: &Path) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        for dir in stale_work_dirs(Some(root)) {
            remove_path(&dir);
        }
    });
}

/// The pid in a work folder's name `cdpc-work-<pid>-<random>`.
fn work_dir_pid(name: &OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix(WORK_DIR_PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok()
}

/// Writes `bytes` to a temporary file in `path`'s folder, then renames it to `path`: a reader
/// sees the old file, no file, or the whole new one, never part of one (an entry's files are
/// written so; a write cut short leaves a `.tmp*` file, which the cache's `trim` removes when
/// stale).
///
/// The temporary file is recorded while it exists, so that an interrupted process removes it:
/// a cache filler whose folder is removed (`front::cuda::filler`) leaves nothing in it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let create = || tempfile::NamedTempFile::new_in(dir).map_err(|source| ToolError::Io { action: "creating a temporary file in".into(), path: dir.to_path_buf(), source });
    let (mut file, _recorded) = tracked(create, |file| file.path().to_path_buf()).map_err(|e| match e {
        ToolError::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })?;
    std::io::Write::write_all(&mut file, bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_dir_names_carry_the_pid() {
        assert_eq!(work_dir_pid(OsStr::new("cdpc-work-1234-aB3xYz")), Some(1234));
        assert_eq!(work_dir_pid(OsStr::new("cdpc-work-1234-")), None);
        assert_eq!(work_dir_pid(OsStr::new("cdpc-work-x-abc")), None);
        assert_eq!(work_dir_pid(OsStr::new("cdpc-1234-abc")), None);
        assert!(work_dir_prefix().starts_with(&format!("cdpc-work-{}-", std::process::id())));
    }

    #[test]
    fn stale_work_dirs_are_those_of_dead_processes() {
        if !Path::new("/proc/self").exists() {
            println!("skipped: no /proc to tell running processes");
            return;
        }
        let root = tempfile::tempdir().unwrap();
        // Our own pid runs; pid 4194304 is above Linux's largest (2^22) and never runs.
        let live = root.path().join(format!("{}abc", work_dir_prefix()));
        let dead = root.path().join("cdpc-work-4194304-abc");
        let unrelated = root.path().join("cdpc-4194304-abc");
        for dir in [&live, &dead, &unrelated] {
            std::fs::create_dir(dir).unwrap();
        }
        std::fs::write(root.path().join("cdpc-work-4194304-file"), b"").unwrap();
        // A running process's number (pid 1's), reused: stale once older than a day.
        let reused = root.path().join("cdpc-work-1-abc");
        std::fs::create_dir(&reused).unwrap();
        assert_eq!(stale_work_dirs(Some(root.path())), vec![dead.clone()]);
        let two_days = std::time::SystemTime::now() - 2 * STALE_WORK_DIR_AGE;
        std::fs::File::open(&reused).unwrap().set_modified(two_days).unwrap();
        assert_eq!(stale_work_dirs(Some(root.path())), vec![reused, dead]);
    }
}
