//! A filler and its cache folder's removal: a filler ([`super::cache::Fill`], a detached
//! `cdpc` process making headers after a compilation) stops at once when the folder it fills
//! is removed or replaced (`rm -rf ~/.cache/cdpc`, a test's temporary folder going away), and
//! never makes the folder again, so that the removal succeeds and nothing is left.
//!
//! [`watch`] notes the folder's identity (device and inode) as the filler starts (a folder
//! already gone stops it there) and starts a thread that waits on inotify for the signs of a
//! removal: the folder or one of its kinds' folders removed or moved, one of the lock files
//! (which only a removal deletes) removed, or an entry's file removed while no trimmer holds
//! `trim.lock` (a trimmer removes entries under it; everything else that removes one is a
//! removal, or a compilation giving up a damaged header, after which stopping costs nothing).
//! It also looks at the folder's identity every [`POLL`], for file systems without inotify.
//! Stopping is [`crate::toolchain::interrupt`] (the filler's work folders and the temporary
//! files it was writing into the cache, all recorded there, removed) and `_exit(0)`: the filler
//! writes nothing and nobody reads its status.
//!
//! While it runs, the filler creates folders only below the cache folder, one level at a time
//! ([`make_dir`]), so that a removal that wins the race is not undone.

use super::cache::{Cache, FILL_LOCK, KINDS, MAKE_LOCK, TRIM_LOCK};
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// How often the watching thread looks at the folder's identity besides inotify's events.
pub const POLL: Duration = Duration::from_millis(50);

/// The folders of the cache that hold files: its kinds' and `include/`.
const FOLDERS: [&str; 3] = [KINDS[0], KINDS[1], "include"];

/// The filler's cache folder and its identity (device, inode), set by [`watch`].
static WATCHED: OnceLock<(PathBuf, u64, u64)> = OnceLock::new();

/// In a filler (`CDPC_CACHE_FILL` set), watches `cache`'s folder for the rest of the process
/// and stops it when the folder is removed; stops it at once when the folder is gone already.
/// Nothing in any other process. Called once the compilation knows its cache.
pub fn watch(cache: &Cache) {
    if super::cache::filling() == 0 || WATCHED.get().is_some() {
        return;
    }
    let Ok(meta) = std::fs::metadata(&cache.dir) else { stop() };
    if WATCHED.set((cache.dir.clone(), meta.dev(), meta.ino())).is_err() {
        return;
    }
    let dir = cache.dir.clone();
    let _ = std::thread::Builder::new().name("cdpc-fill-watch".into()).spawn(move || watch_thread(&dir));
}

/// Whether this process is a filler whose cache folder is gone or is another folder now.
pub fn folder_gone() -> bool {
    WATCHED.get().is_some_and(|(dir, dev, ino)| !std::fs::metadata(dir).is_ok_and(|m| m.dev() == *dev && m.ino() == *ino))
}

/// Creates the folder `dir` and those above it that are missing, as `create_dir_all`, except
/// in a filler for a folder inside its cache folder: there the cache folder must still be the
/// one the filler started with, and the folders below it are made one level at a time, so that
/// a cache folder removed meanwhile makes this fail instead of coming back. Once the process is
/// interrupted it makes nothing ([`crate::toolchain::cleanup::make_dirs`]).
pub fn make_dir(dir: &Path) -> std::io::Result<()> {
    let Some((root, ..)) = WATCHED.get() else { return crate::toolchain::cleanup::make_dirs(dir) };
    let Ok(below) = dir.strip_prefix(root) else { return crate::toolchain::cleanup::make_dirs(dir) };
    if crate::toolchain::cleanup::interrupted() {
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the compilation was interrupted"));
    }
    if folder_gone() {
        return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "the cache folder was removed"));
    }
    let mut path = root.clone();
    for part in below.components() {
        path.push(part);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Ends the filler: its work folders and the temporary files it was writing removed, then
/// `_exit(0)`.
fn stop() -> ! {
    crate::toolchain::interrupt();
    // SAFETY: ends the process without running anything more of it (the thread that makes the
    // headers may be inside Clang; nothing of it is wanted).
    unsafe { libc::_exit(0) }
}

/// The watching thread, for the rest of the process: inotify's events on `dir` and its
/// folders, and the folder's identity every [`POLL`] (alone where inotify is unavailable).
fn watch_thread(dir: &Path) {
    // SAFETY: inotify_init1 takes flags and returns a descriptor or -1.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    let add = |path: &Path, mask: u32| -> i32 {
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return -1 };
        // SAFETY: a descriptor of ours and a NUL-terminated path.
        unsafe { libc::inotify_add_watch(fd, c.as_ptr(), mask) }
    };
    let removed = libc::IN_DELETE_SELF | libc::IN_MOVE_SELF;
    let top = if fd >= 0 { add(dir, removed | libc::IN_DELETE | libc::IN_MOVED_FROM) } else { -1 };
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        if folder_gone() {
            stop();
        }
        if fd < 0 || top < 0 {
            std::thread::sleep(POLL);
            continue;
        }
        // The kinds' folders made since (adding a watch again returns the same one). In
        // `include/` compilations remove and make files again themselves (a damaged copy), so
        // only the folder's own removal counts there.
        for folder in FOLDERS {
            let entries = if folder == "include" { 0 } else { libc::IN_DELETE | libc::IN_MOVED_FROM };
            add(&dir.join(folder), removed | entries);
        }
        let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd of ours.
        if unsafe { libc::poll(&mut poll, 1, POLL.as_millis() as i32) } <= 0 {
            continue;
        }
        // SAFETY: reads into the buffer, which outlives the call.
        let n = unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) };
        if n <= 0 {
            continue;
        }
        let mut at = 0usize;
        let header = std::mem::size_of::<libc::inotify_event>();
        while at + header <= n as usize {
            // SAFETY: the kernel wrote whole events; read_unaligned copes with the buffer's
            // alignment.
            let event: libc::inotify_event = unsafe { std::ptr::read_unaligned(buffer[at..].as_ptr().cast()) };
            let name_bytes = &buffer[at + header..(at + header + event.len as usize).min(n as usize)];
            let name = CStr::from_bytes_until_nul(name_bytes).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            if removal(dir, event.wd == top, event.mask, &name) {
                stop();
            }
            at += header + event.len as usize;
        }
    }
}

/// Whether an inotify event (`mask`, on the cache folder itself when `on_top`, else on one of
/// its folders, about the file `name`) means the folder is being removed.
fn removal(dir: &Path, on_top: bool, mask: u32, name: &str) -> bool {
    if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
        return true;
    }
    if mask & (libc::IN_DELETE | libc::IN_MOVED_FROM) == 0 {
        return false;
    }
    if on_top {
        // Only a removal deletes the lock files or the folders; other files there are not cdpc's.
        return [FILL_LOCK, MAKE_LOCK, TRIM_LOCK].contains(&name) || FOLDERS.contains(&name);
    }
    // A temporary file renamed into place, or one a trimmer removes as stale.
    if name.starts_with(".tmp") {
        return false;
    }
    !trimming(dir)
}

/// Whether a trimmer holds `dir`'s `trim.lock` now (a shared lock cannot be taken at once).
fn trimming(dir: &Path) -> bool {
    let Ok(file) = std::fs::File::open(dir.join(TRIM_LOCK)) else { return false };
    let fd = std::os::unix::io::AsRawFd::as_raw_fd(&file);
    // SAFETY: flock on a descriptor this `File` owns; released before it is closed.
    unsafe {
        if libc::flock(fd, libc::LOCK_SH | libc::LOCK_NB) == 0 {
            libc::flock(fd, libc::LOCK_UN);
            false
        } else {
            true
        }
    }
}

/// A filler running now ([`running`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    /// Its process.
    pub pid: u32,
    /// What it makes ([`super::cache::Fill`]'s bits).
    pub making: u8,
    /// How long it has run.
    pub age: Duration,
    /// Its command line: the compilation's, whose headers it makes.
    pub command: Vec<String>,
}

/// The fillers of the cache folder `dir` that run now, oldest first: the processes holding its
/// `fill.lock` (every filler inherits it from its compilation and holds it to its end) with
/// `CDPC_CACHE_FILL` in their environment, but for those whose parent is one: a process a
/// filler starts (the Python that finds the toolkit's wheels, say) inherits both, and at the
/// filler's idle priority may live for seconds on a loaded machine. Only this user's processes
/// can be seen, through Linux's `/proc`; elsewhere the list is empty.
pub fn running(dir: &Path) -> Vec<Running> {
    let lock = std::fs::canonicalize(dir.join(FILL_LOCK)).unwrap_or_else(|_| dir.join(FILL_LOCK));
    let Ok(procs) = std::fs::read_dir("/proc") else { return Vec::new() };
    let ticks = {
        // SAFETY: sysconf takes a name and returns a number.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            t as f64
        } else {
            100.0
        }
    };
    let uptime = std::fs::read_to_string("/proc/uptime").ok().and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
    let mut found = Vec::new();
    for pid in procs.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()) {
        let holds = std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == lock));
        if !holds {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let Some(making) = environ.split(|&b| b == 0).find_map(|v| std::str::from_utf8(v.strip_prefix(b"CDPC_CACHE_FILL=")?).ok()?.parse::<u8>().ok()) else { continue };
        let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default().split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        // stat(5): the start time (field 22, in clock ticks after boot) comes after the name,
        // which may hold spaces and parentheses: fields are counted from the last `)`.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let field = |n: usize| stat.rfind(')').and_then(|at| stat[at + 1..].split_whitespace().nth(n - 3));
        let parent = field(4).and_then(|p| p.parse::<u32>().ok()).unwrap_or(0);
        let started = field(22).and_then(|t| t.parse::<f64>().ok());
        let age = match (uptime, started) {
            (Some(up), Some(start)) => Duration::from_secs_f64((up - start / ticks).max(0.0)),
            _ => Duration::ZERO,
        };
        found.push((parent, Running { pid, making, age, command }));
    }
    let pids: std::collections::HashSet<u32> = found.iter().map(|(_, r)| r.pid).collect();
    let mut found: Vec<Running> = found.into_iter().filter(|(parent, _)| !pids.contains(parent)).map(|(_, r)| r).collect();
    found.sort_by(|a, b| b.age.cmp(&a.age).then(a.pid.cmp(&b.pid)));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signs_of_a_removal() {
        let dir = tempfile::tempdir().unwrap();
        assert!(removal(dir.path(), true, libc::IN_DELETE_SELF, ""));
        assert!(removal(dir.path(), false, libc::IN_MOVE_SELF, ""));
        assert!(removal(dir.path(), true, libc::IN_DELETE, FILL_LOCK));
        assert!(removal(dir.path(), true, libc::IN_DELETE | libc::IN_ISDIR, "pch"));
        assert!(!removal(dir.path(), true, libc::IN_DELETE, "notes.txt"), "not cdpc's");
        assert!(!removal(dir.path(), false, libc::IN_MOVED_FROM, ".tmpAbc123"), "renamed into place");
        // An entry's file removed: by a trimmer under trim.lock, else by a removal.
        assert!(removal(dir.path(), false, libc::IN_DELETE, "0123456789abcdef-0.1.0+1.pch"));
        let lock = std::fs::File::create(dir.path().join(TRIM_LOCK)).unwrap();
        // SAFETY: flock on a descriptor this `File` owns.
        assert_eq!(unsafe { libc::flock(std::os::unix::io::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0);
        assert!(!removal(dir.path(), false, libc::IN_DELETE, "0123456789abcdef-0.1.0+1.pch"), "a trimmer's");
    }

    /// A process holding the folder's `fill.lock` with `CDPC_CACHE_FILL` is listed; one without
    /// the variable is not, nor a process the filler started, which inherits both.
    #[test]
    fn running_fillers_are_the_holders_of_fill_lock() {
        use std::os::unix::process::CommandExt;
        if !Path::new("/proc/self/fd").exists() {
            return println!("skipped: no /proc");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILL_LOCK), "").unwrap();
        // Each holder is a process group of its own, so that its children end with it.
        let hold = |making: Option<&str>| {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", "exec 3<\"$0\"; sleep 30 & exec sleep 30"]).arg(dir.path().join(FILL_LOCK)).env_remove("CDPC_CACHE_FILL").process_group(0);
            if let Some(m) = making {
                c.env("CDPC_CACHE_FILL", m);
            }
            c.spawn().unwrap()
        };
        let mut filler = hold(Some("2"));
        let mut other = hold(None);
        // Both holders and their children started: the children hold the lock too.
        std::thread::sleep(Duration::from_millis(300));
        let start = std::time::Instant::now();
        let mut seen = running(dir.path());
        while seen.is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
            seen = running(dir.path());
        }
        for holder in [&filler, &other] {
            // SAFETY: kill takes a process group id and a signal.
            unsafe { libc::kill(-(holder.id() as i32), libc::SIGKILL) };
        }
        let _ = (filler.wait(), other.wait());
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!((seen[0].pid, seen[0].making), (filler.id(), 2));
        assert_eq!(seen[0].command.first().map(String::as_str), Some("sleep"));
        assert!(seen[0].age < Duration::from_secs(60), "{:?}", seen[0].age);
    }

    #[test]
    fn folders_are_made_as_create_dir_all_outside_a_filler() {
        let dir = tempfile::tempdir().unwrap();
        make_dir(&dir.path().join("a/b/c")).unwrap();
        assert!(dir.path().join("a/b/c").is_dir());
        assert!(!folder_gone(), "not a filler");
    }
}
