//! cdpc's cache folder and its bound: where the precompiled headers of Clang's CUDA wrapper
//! (`pch/`) and the precompiled preambles of `.cu` files (`preamble/`, [`super::preamble`])
//! are kept, how large the folder may grow, and how it is trimmed.
//!
//! # The folder and its bound
//!
//! [`Cache::from_env`]: `CDPC_CACHE_DIR` (empty: no cache), else `$XDG_CACHE_HOME/cdpc`, else
//! `$HOME/.cache/cdpc`; at most `CDPC_CACHE_MAX_SIZE` bytes ([`parse_size`]: `500M`, `2G`, ...;
//! empty or unset: [`DEFAULT_MAX_SIZE`], 2 GiB; `0`: no entry is kept, so the cache is not
//! used, as with `CDPC_CACHE_DIR=`). A malformed size is `E1005`.
//!
//! # Entries
//!
//! An entry is the files `<kind>/<stem>.{cu,pch,json,seen}` of one stem, `<16 hex digits of the
//! key>-<cdpc's version>+<fingerprint>` ([`stem`]; the fingerprint is 8 digits of
//! `super::front_end_fingerprint`, the hash of this folder's sources, which is also in every
//! header's key, so that another build's headers are never taken). Its `.seen` mark is its anchor:
//! every compilation that reads or writes the entry first holds a shared `flock` on it
//! ([`InUse`]), a hit (or the entry's making) sets its modification time (the entry's last use:
//! access times are not reliable under `noatime`/`relatime`), and it holds the size of a header
//! too large for the bound, so that it is not made again and again ([`InUse::too_large`]).
//!
//! # Trimming
//!
//! After a compilation that wrote an entry (hits do not trim, to stay cheap), [`trim`] brings
//! the folder down to the bound, one trimmer at a time (an exclusive `flock` on `trim.lock`,
//! waited for at most [`TRIM_PATIENCE`], after which the holder is left to trim): first the
//! entries of other cdpc versions (their keys can never match again), then the
//! others from the least recently used on. An entry goes whole, its header first and its mark
//! last, under an exclusive lock on its mark taken without waiting: an entry another
//! compilation is reading or writing right now is left alone, and a compilation that finds an
//! entry being removed (its mark locked, or gone from under its lock) takes it as a miss. Marks
//! without a header (`.seen` of a preamble seen once) and temporary files (`.tmp*`, a write
//! cut short) older than [`STALE_AFTER`] are removed in any case. Files that are not cdpc's are
//! neither counted nor touched.
//!
//! # Damaged entries
//!
//! A file of an entry may be truncated, overwritten or removed behind cdpc's back (a full disk,
//! a killed writer of another tool, a person). Nothing in the cache is ever the reason a
//! compilation fails: a compilation that finds a header Clang refuses (the driver tells it by
//! Clang's message naming the header, `setup.rs`) runs again without it, and gives the
//! entry up with [`InUse::discard`], which removes the header only under the exclusive lock,
//! when no other compilation holds the entry, and only if it is still the file this compilation
//! found ([`InUse::found`]): a file another compilation may have open, or is about to open, is
//! never removed from under it (without that, 16 concurrent compilations of eight corpus
//! files: with the wrapper's headers truncated to nothing, 3 of 16 failed, "unable to read PCH
//! file: No such file or directory" after another removed the header; truncated to 4 KiB, all
//! 16, "malformed block record in PCH file", a message the retry did not know). A header that other compilations hold stays for the last of them, or the
//! next compilation, to find refused and remove; files are only ever replaced by a rename, whole.
//!
//! # A read-only cache, a full disk
//!
//! Every write to the cache may fail (a folder this user cannot write, a read-only mount, no
//! space left, a path under a regular file); a failed write is a miss, never a message: the
//! compilation goes on as without a cache, reading what entries it can. A missing header is not
//! made where it could not be kept ([`InUse::too_large`]: a read-only file system or folder,
//! less than [`MIN_ROOM`] free), so such a compilation costs what one without the cache does
//! (otherwise 2.5 s on a full tmpfs, against 0.8 s without the cache, each compilation
//! making the wrapper's header and the preamble and failing to write them). The libdevice
//! copies that the cache's `include/` cannot take go to a folder of the process
//! (`back::precision::libdevice_variant`; in the cache, `--use_fast_math` on a full disk would fail
//! with "No space left on device"). `compiler/tests/cache_faults.rs` checks both, and fuzzes the
//! folder under concurrent compilations.
//!
//! # Headers are made off the critical path
//!
//! The `cdpc` program's compilations make no header before compiling ([`Fill`]): they compile
//! without the missing one and note it, and once the output is written `main.rs`'s `fill_cache`
//! starts cdpc again with the same arguments and `CDPC_CACHE_FILL`, a process detached from the
//! terminal at the lowest priority (the idle scheduling policy, nice 19, and nice 19 for its
//! autogroup, which otherwise takes an equal share of the CPU from the build) that makes the
//! headers and writes nothing else. Fillers hold `fill.lock` shared (an exclusive lock waits for
//! every filler: the bench and the tests) and make headers one filler at a time (`make.lock`,
//! `one_maker`: a parallel build's fillers find the wrapper's header the first one made); they are
//! not waited for unless `CDPC_CACHE_BACKGROUND=0`. A library caller makes the headers first.
//! A filler whose cache folder is removed stops at once and never makes the folder again
//! ([`super::filler`]); [`super::filler::running`] lists the fillers of a folder.
//!
//! # Locks
//!
//! Every lock is released by an unlock, not by closing its descriptor, which a child process
//! forked meanwhile shares until its `exec` (`Locked`). No lock of the folder is waited for
//! without a bound (`Locked::take_within`: `trim.lock` 5 s, `make.lock` a minute), since a damaged
//! folder may put a lock this very process holds under another's name.
//!
//! # What every use checks
//!
//! A header's manifest (a preamble's `.json`, and the wrapper's, which holds this alone) names its
//! size, a hash of its bytes and the file written (device, inode, change time: `HeaderStamp`), so
//! another file in its place, or one written over in place with its size and time kept, is a miss;
//! a copy of the cache (`cp -a`, `tar`) is another file with the same bytes, a hit whose bytes are
//! hashed on each use. A header whose source (the wrapper's empty `.cu`, the preamble's copy)
//! changed while Clang read it is not kept. In `include/`, which is never trimmed, the additions
//! header is compared with cdpc's text on every compilation and replaced whole where it differs,
//! and a libdevice copy whose bytes do not match the sum beside it is made again. Those files are
//! checked as a compilation starts, not while Clang reads them: each one's identity
//! (`FileIdentity`: device, inode, size, change time) is taken before its bytes are compared with
//! what it should hold, and again after Clang's run; where Clang's failure names one, or one is
//! gone or no longer that file, the compilation runs again with copies of its own and without
//! precompiled headers (`setup.rs`, `ClangSetup::own_includes`, `includes_unchanged`), and
//! gives up a header it made meanwhile. `compiler/tests/cache_stress.rs` runs many cdpc processes
//! over one folder.

use crate::diag::{Code, Diagnostic, Span};
use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The bound without `CDPC_CACHE_MAX_SIZE`: 2 GiB, about 200 headers of Clang's CUDA wrapper
/// (9.6 MB each) or 40 Thrust preambles (48 MB each), a fifth of ccache's default.
pub const DEFAULT_MAX_SIZE: u64 = 2 << 30;

/// How old a mark without a header, or a temporary file, must be to be removed.
pub const STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// The kinds of entries, each a folder of the cache.
pub const KINDS: [&str; 2] = ["pch", "preamble"];

/// The free space the cache's file system must have for a compilation to make a header
/// there ([`InUse::too_large`]): a few of Clang's CUDA wrapper (11 MB each) or a large preamble.
/// A disk with less is full for the cache: making a header costs about a compilation, and its
/// write would fail.
pub const MIN_ROOM: u64 = 32 << 20;

/// The file one trimmer at a time holds (exclusively) in the cache folder.
pub const TRIM_LOCK: &str = "trim.lock";

/// How long [`trim`] waits for [`TRIM_LOCK`] before it leaves the trimming to whoever holds it.
pub const TRIM_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// The file every filler holds (shared) in the cache folder while it makes entries
/// ([`Fill`]); taken exclusively, it waits for all of them: what `cargo xtask bench-compile`
/// and the cache's tests do between compilations whose cache state they name.
pub const FILL_LOCK: &str = "fill.lock";

/// The headers a compilation left for later ([`Fill`]), as bits: the CUDA wrapper's
/// ([`Fill::WRAPPER`]) and the file's preamble ([`Fill::PREAMBLE`]).
///
/// # Headers are made after the output, off the critical path
///
/// A compilation never makes a header before compiling: making one costs more than the parse it
/// saves in that compilation (corpus, `-dc`, per side: BFS's wrapper 0.68 s of CPU to make
/// against 0.56 s for the whole compilation without it; its preamble 0.77 s), so a file's first
/// and second compilations were no faster than nvcc's. A compilation whose cache misses a header
/// it would use compiles without it (the wrapper's header where only the preamble is missing)
/// and notes the miss here: the CUDA wrapper's header at once, the preamble on its second sight
/// (as before: a file compiled once never pays for one). Once its output is written, cdpc
/// (`main.rs`) makes what was noted, by default in a process of its own that the compilation
/// does not wait for: `cdpc` again with the same arguments and `CDPC_CACHE_FILL` set to the
/// bits, detached from the terminal (`setsid`) at the lowest priority, holding [`FILL_LOCK`] shared, writing
/// nothing but the cache's entries ([`filling`]: Clang makes the headers and compiles nothing).
/// `CDPC_CACHE_BACKGROUND=0` makes them in the compilation's own process instead, after its
/// output is written (the process ends after them). Every compilation thus costs what one
/// without the cache costs, or less; the headers are the same files as before, made the same
/// way, under the same locks ([`InUse`]): a filler is one more concurrent compilation. With
/// debug information (`-G`, `-lineinfo`), where a compilation with a precompiled header writes
/// other bytes than one without (docs/CCACHE.md), compilations make their headers first, as
/// before, so that each cache state gives the object it gave.
pub struct Fill;

impl Fill {
    /// Clang's CUDA wrapper's header for the compilation's options.
    pub const WRAPPER: u8 = 1;
    /// The file's preamble (seen before).
    pub const PREAMBLE: u8 = 2;
}

/// What this process's compilations left for later ([`Fill`]) and the cache folder of it.
static WANTED: std::sync::Mutex<Option<(u8, PathBuf)>> = std::sync::Mutex::new(None);

/// Whether this process's compilations leave missing headers for later ([`Fill`]): set by the
/// `cdpc` program, which makes them once its output is written. A library caller (the Python
/// package's `compile`, the C API) has no such moment: its compilations make them first, as
/// before.
static DEFERRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process's compilations leave missing headers for later ([`Fill`]).
pub fn set_deferred(deferred: bool) {
    DEFERRED.store(deferred, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a compilation makes a missing header itself, before compiling: in a filler, and in a
/// process that did not [`set_deferred`].
pub fn makes_headers_now() -> bool {
    filling() != 0 || !DEFERRED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Notes that a compilation over `cache` left `what` ([`Fill`]) for later.
pub fn want(cache: &Cache, what: u8) {
    let mut wanted = WANTED.lock().unwrap_or_else(|e| e.into_inner());
    let bits = wanted.as_ref().map_or(0, |(b, _)| *b) | what;
    *wanted = Some((bits, cache.dir.clone()));
}

/// What this process's compilations left for later, and the cache folder; cleared.
pub fn take_wanted() -> Option<(u8, PathBuf)> {
    WANTED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The headers this process makes instead of compiling ([`Fill`]); 0 for a compilation.
pub fn filling() -> u8 {
    crate::toolchain::run::cache_fill_bits() & (Fill::WRAPPER | Fill::PREAMBLE)
}

/// Whether the headers are made in a process of their own (`CDPC_CACHE_BACKGROUND` is not `0`).
pub fn in_background() -> bool {
    std::env::var_os("CDPC_CACHE_BACKGROUND").is_none_or(|v| v != "0")
}

/// A shared lock on `dir`'s [`FILL_LOCK`], on a descriptor that a child process inherits (no
/// close-on-exec): the filler holds it until it ends, so that a waiter ([`wait_for_fillers`])
/// cannot miss one that has not started yet. `None` where the file cannot be opened or locked.
pub fn fill_lock(dir: &Path) -> Option<File> {
    std::fs::create_dir_all(dir).ok()?;
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join(FILL_LOCK)).ok()?;
    if !flock(&file, libc::LOCK_SH) {
        return None;
    }
    // SAFETY: fcntl on a descriptor this `File` owns; only its flags change.
    let inheritable = unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFD);
        flags >= 0 && libc::fcntl(file.as_raw_fd(), libc::F_SETFD, flags & !libc::FD_CLOEXEC) == 0
    };
    inheritable.then_some(file)
}

/// The file a filler holds exclusively in the cache folder while it makes headers
/// ([`one_maker`]).
pub const MAKE_LOCK: &str = "make.lock";

/// Waits for the other fillers of `cache` to finish making headers, and holds them off until
/// dropped: fillers make one side's headers at a time, so that those of many compilations of
/// one set of options (a parallel build's) find the wrapper's header the first one made
/// instead of each making it again, and the fillers of a build take one core at most. `None`
/// where the lock cannot be taken: made all the same.
pub fn one_maker(cache: &Cache) -> Option<impl Drop> {
    super::filler::make_dir(&cache.dir).ok()?;
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(cache.dir.join(MAKE_LOCK)).ok()?;
    // Waited for at most a minute (another filler makes a header meanwhile), then made all the
    // same ([`Locked::take_within`]).
    Locked::take_within(file, std::time::Duration::from_secs(60))
}

/// Waits until no filler of `dir` runs (an exclusive lock on its [`FILL_LOCK`], released at once).
pub fn wait_for_fillers(dir: &Path) {
    if let Ok(file) = File::open(dir.join(FILL_LOCK)) {
        drop(Locked::take(file, libc::LOCK_EX));
    }
}

/// The extensions of an entry's files, the header first and the mark last: the order in
/// which [`trim`] removes them.
const EXTENSIONS: [&str; 4] = ["pch", "json", "cu", "seen"];

/// The environment the cache settings are read from (tests build one by hand).
#[derive(Clone, Debug, Default)]
pub struct CacheEnv {
    /// `CDPC_CACHE_DIR`.
    pub cache_dir: Option<OsString>,
    /// `XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<OsString>,
    /// `HOME`.
    pub home: Option<OsString>,
    /// `CDPC_CACHE_MAX_SIZE`.
    pub max_size: Option<OsString>,
}

impl CacheEnv {
    /// Reads the variables of this process.
    pub fn from_process() -> CacheEnv {
        CacheEnv {
            cache_dir: std::env::var_os("CDPC_CACHE_DIR"),
            xdg_cache_home: std::env::var_os("XDG_CACHE_HOME"),
            home: std::env::var_os("HOME"),
            max_size: std::env::var_os("CDPC_CACHE_MAX_SIZE"),
        }
    }
}

/// The cache in use: its folder and its bound in bytes (never 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    /// The folder (holding `pch/` and `preamble/`).
    pub dir: PathBuf,
    /// The most bytes its entries may take after a compilation that wrote one.
    pub max_size: u64,
}

impl Cache {
    /// The cache `env` describes; `None` when there is none (`CDPC_CACHE_DIR=`, no home, or a
    /// bound of 0); `E1005` when `CDPC_CACHE_MAX_SIZE` is not a size.
    pub fn from_env(env: &CacheEnv) -> Result<Option<Cache>, Diagnostic> {
        let max_size = match env.max_size.as_ref().filter(|v| !v.is_empty()) {
            None => DEFAULT_MAX_SIZE,
            Some(value) => {
                let text = value.to_string_lossy();
                parse_size(&text).map_err(|why| {
                    Diagnostic::new(Code::CacheSizeInvalid, Span::new(0, 0), format!("`CDPC_CACHE_MAX_SIZE={text}` is not a size: {why}"))
                        .with_primary_message("this file is CUDA C++ (`.cu`), whose precompiled headers are cached")
                        .with_note("write a number of bytes with an optional K, M, G or T (powers of 1024, `B` or `iB` may follow): `500M`, `2G`; `0` keeps nothing; unset: 2G")
                })?
            }
        };
        let dir = match &env.cache_dir {
            Some(d) if d.is_empty() => None,
            Some(d) => Some(PathBuf::from(d)),
            None => match (env.xdg_cache_home.as_ref().filter(|d| !d.is_empty()), env.home.as_ref().filter(|d| !d.is_empty())) {
                (Some(xdg), _) => Some(PathBuf::from(xdg).join("cdpc")),
                (None, Some(home)) => Some(PathBuf::from(home).join(".cache/cdpc")),
                (None, None) => None,
            },
        };
        Ok(dir.filter(|_| max_size > 0).map(|dir| Cache { dir, max_size }))
    }

    /// The folder of entries of `kind` (one of [`KINDS`]).
    pub fn kind_dir(&self, kind: &str) -> PathBuf {
        self.dir.join(kind)
    }
}

/// A size as `CDPC_CACHE_MAX_SIZE` writes it: digits, then optionally `K`, `M`, `G` or `T`
/// (any case; powers of 1024) and `B` or `iB`; spaces around are ignored. `500M`, `2G`,
/// `2GiB`, `1048576`, `0`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err("it does not start with a number".into());
    }
    let number: u64 = text[..digits].parse().map_err(|_| "the number is too large".to_string())?;
    let unit = text[digits..].trim_start().to_ascii_lowercase();
    let shift = match unit.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("`{}` is not a unit (K, M, G or T)", &text[digits..].trim_start())),
    };
    number.checked_mul(1 << shift).ok_or_else(|| "the size is too large".to_string())
}

/// cdpc's version as it ends the stems of entries, with the first 8 digits of the front end's
/// fingerprint (`0.1.0+1a2b3c4d`, `super::front_end_fingerprint`): its letters, digits, `.`,
/// `_` and `+` (a `-` would end the key). Entries of another build are trimmed first.
pub fn version_tag() -> String {
    let version: String = env!("CARGO_PKG_VERSION").chars().map(|c| if c.is_ascii_alphanumeric() || ".+_".contains(c) { c } else { '_' }).collect();
    format!("{version}+{}", &super::front_end_fingerprint()[..8])
}

pub use crate::toolchain::cleanup::write_atomic;

/// What an entry's manifest records of its precompiled header (a preamble's `.json`, and the
/// wrapper's, which holds this alone), so that no other file in its place is taken for it:
/// another entry's header renamed or copied over it (Clang accepts a header made for other
/// files where the options match, and compiles against the wrong declarations), a header
/// truncated, or one written over in place with its size and modification time kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeaderStamp {
    size: u64,
    /// A hash of the bytes.
    sum: u64,
    /// The file as it was written: device, inode and change time (seconds, nanoseconds).
    /// While the file at the path is that one, its bytes are the ones hashed (every write, in
    /// place or by a rename, changes the change time, which no tool can set back), and they are
    /// not read again; a copy of the cache (`cp -a`, `tar`, a CI cache restored) is another
    /// file, whose bytes are hashed on each use.
    file: (u64, u64, i64, i64),
}

impl HeaderStamp {
    /// The stamp of `bytes`, just written to `path` (whole, by [`write_atomic`]); `None` when
    /// the path is gone.
    pub fn written(bytes: &[u8], path: &Path) -> Option<HeaderStamp> {
        let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
        Some(HeaderStamp { size: bytes.len() as u64, sum: sum(bytes), file: (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec()) })
    }

    /// Whether the file at `path` is the header this stamp was made of, or holds its bytes.
    pub fn matches(&self, path: &Path) -> bool {
        let Some(meta) = std::fs::metadata(path).ok().filter(|m| m.is_file() && m.len() == self.size) else { return false };
        (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec()) == self.file || std::fs::read(path).is_ok_and(|bytes| sum(&bytes) == self.sum)
    }
}

/// The manifest of the CUDA wrapper's precompiled header (`pch/<stem>.json`): its stamp, and
/// the names the files it read may look headers up by ([`super::header_names`]), where known
/// (the linked Clang lists the files it read; a Clang program's header has `None`). A header
/// made without the user's `-I` folders serves a compilation with them only where none of
/// them holds a file of those names ([`super::shadowing_file`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WrapperManifest {
    /// The header's stamp.
    pub header: HeaderStamp,
    /// The names its files may look headers up by; `None` where not known.
    pub names: Option<Vec<String>>,
}

/// A file as it is on disk: device, inode, size and change time (seconds, nanoseconds). Two
/// equal identities of one path, taken at two moments, mean nobody wrote the file in between:
/// every write, truncation or rename into its place changes the inode or the change time, which
/// no tool can set back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity(u64, u64, u64, i64, i64);

impl FileIdentity {
    /// The identity of the regular file at `path` (through links); `None` when it is none.
    pub fn of(path: &Path) -> Option<FileIdentity> {
        std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| FileIdentity(m.dev(), m.ino(), m.len(), m.ctime(), m.ctime_nsec()))
    }
}

fn sum(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// The stem of the entry whose key hashes to `hash`, for this cdpc.
pub fn stem(hash: u64) -> String {
    format!("{hash:016x}-{}", version_tag())
}

/// An entry's stem and whether it is this cdpc's, from a file name of the cache; `None` for
/// a file that is not an entry's.
fn entry_of(name: &str) -> Option<(&str, bool)> {
    let (stem, extension) = name.rsplit_once('.')?;
    if !EXTENSIONS.contains(&extension) {
        return None;
    }
    let (key, version) = match stem.split_once('-') {
        Some((key, version)) => (key, Some(version)),
        // An entry of a cdpc from before versions were in the names.
        None => (stem, None),
    };
    if key.len() != 16 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // A version's `.` makes `rsplit_once` right: the extension is after the last one.
    Some((stem, version.is_some_and(|v| v == version_tag())))
}

fn flock(file: &File, operation: libc::c_int) -> bool {
    // SAFETY: flock on a descriptor this `File` owns; no memory is involved.
    unsafe { libc::flock(file.as_raw_fd(), operation) == 0 }
}

/// A file under a `flock` of this process, unlocked when dropped: explicitly (`LOCK_UN`), not
/// by closing the descriptor. A `flock` belongs to the open file, and a child process that
/// another thread forks shares it until its `exec` closes its copy of the descriptor; closed
/// alone, the lock would outlive its holder for that while, and a compilation would find an
/// entry it could hold being removed, a trimmer an entry no one uses in use (the unit test of
/// the refused header failed so under load: 50 of 3000 holds after a `discard`, with a thread
/// spawning `true` beside them).
#[derive(Debug)]
struct Locked(File);

impl Locked {
    /// Locks `file` with `operation` (`LOCK_SH`/`LOCK_EX`, `LOCK_NB` or not).
    fn take(file: File, operation: libc::c_int) -> std::io::Result<Locked> {
        if flock(&file, operation) {
            Ok(Locked(file))
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Locks `file` exclusively, waiting at most `patience`; `None` after that. Never an
    /// unbounded wait: a damaged folder can put another lock's file under this one's name (the
    /// cache tests rename files over each other), and `flock` locks each open file on its own,
    /// so this process may itself hold the lock it waits for through another descriptor (a
    /// filler's `make.lock`, an entry's mark it uses), or its waiting parent may
    /// (`CDPC_CACHE_BACKGROUND=0`): both seen as hangs in fresh-clone CI runs.
    fn take_within(file: File, patience: std::time::Duration) -> Option<Locked> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            match Locked::take(file.try_clone().ok()?, libc::LOCK_EX | libc::LOCK_NB) {
                Ok(held) => return Some(held),
                Err(_) if std::time::Instant::now() < deadline => std::thread::sleep(std::time::Duration::from_millis(20)),
                Err(_) => return None,
            }
        }
    }
}

impl std::ops::Deref for Locked {
    type Target = File;
    fn deref(&self) -> &File {
        &self.0
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        flock(&self.0, libc::LOCK_UN);
    }
}

/// Whether `file` is still the file at `path` (not removed, nor replaced, since it was opened).
fn still_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(there)) => held.dev() == there.dev() && held.ino() == there.ino(),
        _ => false,
    }
}

/// Opens (creating it when missing) an entry's mark: the file, and whether this call made it.
fn open_mark(path: &Path) -> Option<(File, bool)> {
    super::filler::make_dir(path.parent()?).ok()?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true);
    match options.clone().create_new(true).open(path) {
        Ok(file) => Some((file, true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match options.open(path) {
            Ok(file) => Some((file, false)),
            // A read-only cache: its entries can still be read.
            Err(_) => File::open(path).ok().map(|f| (f, false)),
        },
        Err(_) => None,
    }
}

/// A compilation's hold on one entry: a shared lock on its mark, held until dropped, while
/// which [`trim`] does not remove the entry.
#[derive(Debug)]
pub struct InUse {
    mark: Locked,
    mark_path: PathBuf,
    /// Whether the mark was made now: the entry's first sight.
    pub first_sight: bool,
    /// The entry's header as [`InUse::found`] found it: the only file [`InUse::discard`] may
    /// remove.
    header: Option<(PathBuf, FileId)>,
}

/// A file's identity (device and inode): whether a path still names the file seen earlier.
type FileId = (u64, u64);

fn file_id(path: &Path) -> Option<FileId> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| (m.dev(), m.ino()))
}

impl InUse {
    /// Holds the entry whose mark is `mark` (made when missing); `None` when it cannot be held
    /// (the folder cannot be written and the mark is missing, or a trimmer is removing the
    /// entry right now): the compilation goes on without it.
    pub fn hold(mark: &Path) -> Option<InUse> {
        let (file, first_sight) = open_mark(mark)?;
        let file = Locked::take(file, libc::LOCK_SH | libc::LOCK_NB).ok()?;
        // Removed (by a trimmer) between the opening and the lock: not the entry's mark.
        still_at(&file, mark).then_some(InUse { mark: file, mark_path: mark.to_path_buf(), first_sight, header: None })
    }

    /// Whether the entry's header `header` is there; if it is, the file found is the one the
    /// compilation uses, and the one [`InUse::discard`] removes if Clang refuses it.
    pub fn found(&mut self, header: &Path) -> bool {
        self.header = file_id(header).map(|id| (header.to_path_buf(), id));
        self.header.is_some()
    }

    /// Gives the entry up after Clang refused its header (damaged, or not what its key says),
    /// removing `files` (the header among them) so that the next compilation makes it again,
    /// but only when no other compilation holds the entry and the header is still the file
    /// [`InUse::found`] found: the shared lock is released, then an exclusive one taken without
    /// waiting, as [`trim`] takes it. Otherwise the files stay: another compilation may have the
    /// header open, or be about to open it (it finds it refused in turn and tries the same), or
    /// has made it again since.
    pub fn discard(self, files: &[&Path]) {
        let Some((header, id)) = &self.header else { return };
        if !flock(&self.mark, libc::LOCK_UN) || !flock(&self.mark, libc::LOCK_EX | libc::LOCK_NB) {
            return;
        }
        if !still_at(&self.mark, &self.mark_path) || file_id(header) != Some(*id) {
            return;
        }
        for file in files {
            let _ = std::fs::remove_file(file);
        }
    }

    /// Marks the entry used now (its modification time), for [`trim`]'s order; a read-only
    /// cache keeps the old time.
    pub fn touch(&self) {
        let _ = self.mark.set_modified(SystemTime::now());
    }

    /// Whether the entry's header, missing, is not to be made because it could not be kept:
    /// the mark says it was too large for `max_size` when it was made
    /// ([`InUse::mark_too_large`]; then it is not made again until the mark goes stale,
    /// [`STALE_AFTER`], or the bound grows), or the folder has no room for it
    /// ([`InUse::room_for`]: a full disk, a read-only cache), so that a compilation there costs
    /// what one without the cache does, not a header made and thrown away besides.
    pub fn too_large(&self, max_size: u64) -> bool {
        let mut bytes = [0u8; 24];
        let read = self.mark.read_at(&mut bytes, 0).unwrap_or(0);
        let noted = std::str::from_utf8(&bytes[..read]).ok().and_then(|t| t.trim().parse::<u64>().ok());
        noted.is_some_and(|size| size > max_size) || !self.room_for(noted.unwrap_or(0).max(MIN_ROOM))
    }

    /// Whether the entry's folder can take a file of `bytes` bytes: its file system is not
    /// mounted read-only, has that much space free for this user, and this user may write the
    /// folder. Whatever cannot be asked counts as room (the write then says).
    fn room_for(&self, bytes: u64) -> bool {
        // SAFETY: statvfs is plain data, for which all zeroes is a value.
        let mut fs: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: fstatvfs fills the struct it is given, from a descriptor this `File` owns.
        if unsafe { libc::fstatvfs(self.mark.as_raw_fd(), &mut fs) } == 0 {
            if fs.f_flag & libc::ST_RDONLY != 0 {
                return false;
            }
            if (fs.f_bavail as u64).saturating_mul(fs.f_frsize as u64) < bytes {
                return false;
            }
        }
        let Some(dir) = self.mark_path.parent().and_then(|d| std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).ok()) else { return true };
        // SAFETY: a NUL-terminated path; access only reads it.
        unsafe { libc::access(dir.as_ptr(), libc::W_OK) == 0 }
    }

    /// Notes that the entry's header cannot be made (Clang refused to precompile it for a reason
    /// the sources and options keep): [`InUse::too_large`] for every bound from now on, until
    /// the mark goes stale ([`STALE_AFTER`]), so that no compilation tries again in vain.
    pub fn mark_not_made(&self) {
        self.mark_too_large(u64::MAX);
    }

    /// Writes the size of a header that was not kept because it is larger than the bound.
    pub fn mark_too_large(&self, size: u64) {
        // In place: the mark is what the locks are on, so it is never replaced.
        let _ = self.mark.set_len(0).and_then(|_| self.mark.write_all_at(size.to_string().as_bytes(), 0));
    }
}

/// One entry as [`trim`] finds it.
#[derive(Debug)]
struct Found {
    dir: PathBuf,
    stem: String,
    current: bool,
    size: u64,
    /// The mark's modification time: the last use.
    mark: Option<SystemTime>,
    /// The newest file's modification time: the last use of an entry without a mark.
    newest: SystemTime,
    has_header: bool,
}

impl Found {
    fn used(&self) -> SystemTime {
        self.mark.unwrap_or(self.newest)
    }
}

/// What [`trim`] did, for tests and logs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// The stems of the entries removed, in order.
    pub removed: Vec<String>,
    /// The bytes of cdpc's files in the folder after trimming.
    pub size: u64,
    /// Entries that would have gone but were in use.
    pub in_use: usize,
}

/// Brings the cache folder down to its bound (see the module's documentation). Errors are
/// those of taking the trim lock, which is waited for at most [`TRIM_PATIENCE`] (another
/// trimmer takes milliseconds; see [`Locked::take_within`]); a file that cannot be read or
/// removed is skipped.
pub fn trim(cache: &Cache) -> std::io::Result<Trimmed> {
    super::filler::make_dir(&cache.dir)?;
    let lock = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(cache.dir.join(TRIM_LOCK))?;
    let _lock = Locked::take_within(lock, TRIM_PATIENCE).ok_or_else(|| std::io::Error::new(std::io::ErrorKind::WouldBlock, "the trim lock stayed taken"))?;
    let now = SystemTime::now();
    let stale = |time: SystemTime| now.duration_since(time).is_ok_and(|age| age > STALE_AFTER);
    let mut entries: std::collections::HashMap<(PathBuf, String), Found> = std::collections::HashMap::new();
    let mut total = 0u64;
    for kind in KINDS {
        let dir = cache.kind_dir(kind);
        let Ok(read) = std::fs::read_dir(&dir) else { continue };
        for file in read.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let Ok(meta) = file.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if name.starts_with(".tmp") {
                // A write in progress, or one cut short long ago.
                if !(stale(modified) && std::fs::remove_file(file.path()).is_ok()) {
                    total += meta.len();
                }
                continue;
            }
            let Some((stem, current)) = entry_of(&name) else { continue };
            total += meta.len();
            let e = entries.entry((dir.clone(), stem.to_string())).or_insert_with(|| Found {
                dir: dir.clone(),
                stem: stem.to_string(),
                current,
                size: 0,
                mark: None,
                newest: SystemTime::UNIX_EPOCH,
                has_header: false,
            });
            e.size += meta.len();
            e.newest = e.newest.max(modified);
            e.has_header |= name.ends_with(".pch");
            if name.ends_with(".seen") {
                e.mark = Some(modified);
            }
        }
    }
    // Other versions first, then the least recently used.
    let mut entries: Vec<Found> = entries.into_values().collect();
    entries.sort_by(|a, b| (a.current, a.used(), &a.stem).cmp(&(b.current, b.used(), &b.stem)));
    let mut trimmed = Trimmed::default();
    for e in &entries {
        let leftover = !e.has_header && stale(e.used());
        if total <= cache.max_size && !leftover {
            continue;
        }
        if remove_entry(&e.dir, &e.stem) {
            total = total.saturating_sub(e.size);
            trimmed.removed.push(e.stem.clone());
        } else {
            trimmed.in_use += 1;
        }
    }
    trimmed.size = total;
    Ok(trimmed)
}

/// What the cache folder holds, per kind ([`KINDS`]): `cdpc --cache-status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Per kind: its name, the headers of this build of cdpc, those of others (never used
    /// again; the next trim removes them first), and the bytes of all its files.
    pub kinds: Vec<(&'static str, usize, usize, u64)>,
    /// The bytes of every kind's files: what the bound ([`Cache::max_size`]) limits.
    pub total: u64,
}

/// Reads what `cache` holds (nothing where its folder does not exist); takes no lock and
/// changes nothing.
pub fn usage(cache: &Cache) -> Usage {
    let mut usage = Usage::default();
    for kind in KINDS {
        let (mut current, mut other, mut bytes) = (0, 0, 0u64);
        for file in std::fs::read_dir(cache.kind_dir(kind)).into_iter().flatten().flatten() {
            let Ok(meta) = file.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            bytes += meta.len();
            let name = file.file_name().to_string_lossy().into_owned();
            match entry_of(&name) {
                Some((_, true)) if name.ends_with(".pch") => current += 1,
                Some((_, false)) if name.ends_with(".pch") => other += 1,
                _ => {}
            }
        }
        usage.kinds.push((kind, current, other, bytes));
        usage.total += bytes;
    }
    usage
}

/// Removes one entry's files, the header first and the mark last, under an exclusive lock on
/// the mark; `false` when the entry is in use (or its mark cannot be made to lock it).
fn remove_entry(dir: &Path, stem: &str) -> bool {
    let mark = dir.join(format!("{stem}.seen"));
    let Some((file, _)) = open_mark(&mark) else { return false };
    let Ok(file) = Locked::take(file, libc::LOCK_EX | libc::LOCK_NB) else { return false };
    if !still_at(&file, &mark) {
        return false;
    }
    for extension in EXTENSIONS {
        let _ = std::fs::remove_file(dir.join(format!("{stem}.{extension}")));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers of this build and of others counted apart, every file's bytes counted, files
    /// that are not cdpc's neither; a folder that does not exist holds nothing.
    #[test]
    fn usage_counts_headers_by_build_and_bytes_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().join("c"), max_size: DEFAULT_MAX_SIZE };
        assert_eq!(usage(&cache).total, 0);
        std::fs::create_dir_all(cache.kind_dir("pch")).unwrap();
        std::fs::create_dir_all(cache.kind_dir("preamble")).unwrap();
        let ours = stem(7);
        std::fs::write(cache.kind_dir("pch").join(format!("{ours}.pch")), [0u8; 100]).unwrap();
        std::fs::write(cache.kind_dir("pch").join(format!("{ours}.seen")), [0u8; 3]).unwrap();
        std::fs::write(cache.kind_dir("pch").join("00000000000000aa-0.0.1+00000000.pch"), [0u8; 10]).unwrap();
        std::fs::write(cache.kind_dir("preamble").join(format!("{ours}.seen")), []).unwrap();
        std::fs::write(cache.dir.join("notes.txt"), [0u8; 1000]).unwrap();
        let u = usage(&cache);
        assert_eq!(u.kinds, vec![("pch", 1, 1, 113), ("preamble", 0, 0, 0)]);
        assert_eq!(u.total, 113);
    }

    #[test]
    fn sizes_are_numbers_with_binary_units() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size(" 2G "), Ok(2 << 30));
        assert_eq!(parse_size("2gib"), Ok(2 << 30));
        assert_eq!(parse_size("2 GB"), Ok(2 << 30));
        assert_eq!(parse_size("3k"), Ok(3072));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("10B"), Ok(10));
        assert!(parse_size("").unwrap_err().contains("number"));
        assert!(parse_size("G2").unwrap_err().contains("number"));
        assert!(parse_size("-1").unwrap_err().contains("number"));
        assert!(parse_size("1.5G").unwrap_err().contains("`.5G` is not a unit"));
        assert!(parse_size("2X").unwrap_err().contains("`X` is not a unit"));
        assert!(parse_size("99999999999999999999").unwrap_err().contains("too large"));
        assert!(parse_size("20000000T").unwrap_err().contains("too large"));
    }

    #[test]
    fn the_settings_follow_the_environment() {
        let env =
            |dir: Option<&str>, size: Option<&str>| CacheEnv { cache_dir: dir.map(Into::into), xdg_cache_home: Some("/xdg".into()), home: Some("/home/u".into()), max_size: size.map(Into::into) };
        assert_eq!(Cache::from_env(&env(Some("/c"), None)).unwrap(), Some(Cache { dir: "/c".into(), max_size: DEFAULT_MAX_SIZE }));
        assert_eq!(Cache::from_env(&env(None, Some("500M"))).unwrap(), Some(Cache { dir: "/xdg/cdpc".into(), max_size: 500 << 20 }));
        assert_eq!(Cache::from_env(&env(None, Some(""))).unwrap().unwrap().max_size, DEFAULT_MAX_SIZE, "empty: the default");
        let home_only = CacheEnv { xdg_cache_home: None, ..env(None, None) };
        assert_eq!(Cache::from_env(&home_only).unwrap().unwrap().dir, PathBuf::from("/home/u/.cache/cdpc"));
        assert_eq!(Cache::from_env(&env(Some(""), None)).unwrap(), None, "CDPC_CACHE_DIR= turns it off");
        assert_eq!(Cache::from_env(&env(Some("/c"), Some("0"))).unwrap(), None, "0 keeps nothing");
        assert_eq!(Cache::from_env(&CacheEnv::default()).unwrap(), None, "no home");
        let d = Cache::from_env(&env(Some("/c"), Some("2 gigs"))).unwrap_err();
        assert_eq!(d.code, Code::CacheSizeInvalid);
        assert!(d.message.contains("`CDPC_CACHE_MAX_SIZE=2 gigs`") && d.message.contains("`gigs` is not a unit"), "{d:?}");
        // Even with the cache off: the setting is wrong either way.
        assert!(Cache::from_env(&env(Some(""), Some("x"))).is_err());
    }

    /// An entry of `bytes` bytes (header and mark), last used at `used`.
    fn entry(cache: &Cache, kind: &str, stem: &str, bytes: usize, used: SystemTime) {
        let dir = cache.kind_dir(kind);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{stem}.pch")), vec![0u8; bytes]).unwrap();
        std::fs::write(dir.join(format!("{stem}.cu")), "").unwrap();
        let mark = File::create(dir.join(format!("{stem}.seen"))).unwrap();
        mark.set_modified(used).unwrap();
    }

    fn files(cache: &Cache, kind: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(cache.kind_dir(kind)).map(|d| d.flatten().map(|e| e.file_name().into_string().unwrap()).collect()).unwrap_or_default();
        names.sort();
        names
    }

    fn ago(hours: u64) -> SystemTime {
        SystemTime::now() - Duration::from_secs(hours * 3600)
    }

    #[test]
    fn other_versions_go_first_then_the_least_recently_used_and_a_hit_counts_as_a_use() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().into(), max_size: 250 };
        let (a, b, c) = (stem(0xa), stem(0xb), stem(0xc));
        entry(&cache, "pch", &a, 100, ago(3));
        entry(&cache, "preamble", &b, 100, ago(2));
        entry(&cache, "pch", &c, 100, ago(1));
        // Newer than all, but of another cdpc (and of the layout without versions).
        let now = ago(0);
        entry(&cache, "preamble", "00000000000000ff-0.0.1", 10, now);
        entry(&cache, "preamble", "00000000000000fe", 10, now);
        let trimmed = trim(&cache).unwrap();
        assert_eq!(trimmed.removed, ["00000000000000fe", "00000000000000ff-0.0.1", a.as_str()]);
        assert_eq!(trimmed.size, 200);
        assert_eq!(files(&cache, "pch"), [format!("{c}.cu"), format!("{c}.pch"), format!("{c}.seen")]);
        assert_eq!(files(&cache, "preamble"), [format!("{b}.cu"), format!("{b}.pch"), format!("{b}.seen")]);
        // A hit on `b` makes `c` the least recently used.
        InUse::hold(&cache.kind_dir("preamble").join(format!("{b}.seen"))).unwrap().touch();
        let trimmed = trim(&Cache { max_size: 150, ..cache.clone() }).unwrap();
        assert_eq!(trimmed.removed, [c]);
        assert!(files(&cache, "pch").is_empty());
        // Within the bound: nothing goes.
        assert_eq!(trim(&cache).unwrap(), Trimmed { removed: vec![], size: 100, in_use: 0 });
    }

    /// A damaged folder's lock under another lock's name, held by this very process through
    /// another descriptor (a filler holds `make.lock` while it trims; the cache fuzzer renamed
    /// `make.lock` over `trim.lock`): `flock` locks each open file on its own, so a blocking
    /// `trim` waited for itself for ever (a fresh-clone CI run hung in
    /// `concurrent_compilations_survive_a_fuzzed_cache_folder`). Now it gives up after
    /// [`TRIM_PATIENCE`], and trims once the lock is its own again.
    #[test]
    fn trim_never_waits_for_a_lock_this_process_holds_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().into(), max_size: 1 };
        let a = stem(1);
        entry(&cache, "preamble", &a, 100, ago(2));
        let held = one_maker(&cache).expect("make.lock taken");
        std::fs::rename(dir.path().join(MAKE_LOCK), dir.path().join(TRIM_LOCK)).unwrap();
        let (done, wait) = std::sync::mpsc::channel();
        let trimming = cache.clone();
        std::thread::spawn(move || done.send(trim(&trimming).map_err(|e| e.kind())).unwrap());
        let result = wait.recv_timeout(TRIM_PATIENCE + Duration::from_secs(30)).expect("trim returned");
        assert_eq!(result, Err(std::io::ErrorKind::WouldBlock));
        drop(held);
        assert_eq!(trim(&cache).unwrap().removed, [a]);
    }

    #[test]
    fn an_entry_in_use_stays_and_one_being_removed_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().into(), max_size: 1 };
        let (a, b) = (stem(1), stem(2));
        entry(&cache, "preamble", &a, 100, ago(2));
        entry(&cache, "preamble", &b, 100, ago(1));
        let mark = |s: &str| cache.kind_dir("preamble").join(format!("{s}.seen"));
        let held = InUse::hold(&mark(&a)).unwrap();
        assert!(!held.first_sight);
        let trimmed = trim(&cache).unwrap();
        assert_eq!((trimmed.removed, trimmed.in_use), (vec![b.clone()], 1));
        assert!(cache.kind_dir("preamble").join(format!("{a}.pch")).is_file(), "the entry in use stays whole");
        // A trimmer holding the mark: the entry cannot be held (a miss, not an error).
        let trimmer = File::open(mark(&a)).unwrap();
        assert!(!flock(&trimmer, libc::LOCK_EX | libc::LOCK_NB), "shared lock still held");
        drop(held);
        assert!(flock(&trimmer, libc::LOCK_EX | libc::LOCK_NB));
        assert!(InUse::hold(&mark(&a)).is_none());
        // Removed under the lock: a compilation that opened the old mark does not hold it.
        std::fs::remove_file(mark(&a)).unwrap();
        drop(trimmer);
        let fresh = InUse::hold(&mark(&a)).unwrap();
        assert!(fresh.first_sight, "a new mark is a first sight");
    }

    #[test]
    fn a_refused_header_goes_only_when_no_one_else_holds_it_and_it_is_still_the_one_found() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().into(), max_size: DEFAULT_MAX_SIZE };
        let s = stem(7);
        entry(&cache, "pch", &s, 10, ago(1));
        let (mark, header) = (cache.kind_dir("pch").join(format!("{s}.seen")), cache.kind_dir("pch").join(format!("{s}.pch")));
        let hold = || {
            let mut held = InUse::hold(&mark).unwrap();
            assert!(held.found(&header));
            held
        };
        // Another compilation holds the entry (it may have the header open): it stays.
        let (mine, other) = (hold(), hold());
        mine.discard(&[&header]);
        assert!(header.is_file(), "kept for the other holder");
        // Made again (renamed over) since this compilation found it: not the refused file.
        let stale = hold();
        drop(other);
        write_atomic(&header, b"new").unwrap();
        stale.discard(&[&header]);
        assert_eq!(std::fs::read(&header).unwrap(), b"new");
        // Alone, and the file it found: removed, the mark kept (the next compilation makes it).
        hold().discard(&[&header]);
        assert!(!header.exists() && mark.is_file());
        // Nothing found: nothing to remove.
        let mut none = InUse::hold(&mark).unwrap();
        assert!(!none.found(&header));
        std::fs::write(&header, b"x").unwrap();
        none.discard(&[&header]);
        assert!(header.is_file());
    }

    /// A copy of a hold's descriptor, as a child process that another thread forks has one
    /// until its `exec`.
    fn child_copy(held: &InUse) -> std::os::fd::OwnedFd {
        use std::os::fd::FromRawFd;
        // SAFETY: dup of a descriptor the hold owns; the new one is owned by the result.
        let fd = unsafe { libc::dup(held.mark.as_raw_fd()) };
        assert!(fd >= 0);
        // SAFETY: `fd` was just made, and nothing else owns it.
        unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
    }

    #[test]
    fn a_lock_ends_with_its_hold_though_a_child_process_shares_its_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().into(), max_size: 1 };
        let s = stem(9);
        entry(&cache, "pch", &s, 10, ago(1));
        let (mark, header) = (cache.kind_dir("pch").join(format!("{s}.seen")), cache.kind_dir("pch").join(format!("{s}.pch")));
        // A discard's exclusive lock: the next compilation holds the entry, to make it again.
        let mut held = InUse::hold(&mark).unwrap();
        let _child = child_copy(&held);
        assert!(held.found(&header));
        held.discard(&[&header]);
        assert!(!header.exists());
        let held = InUse::hold(&mark).expect("the discard's lock ended with it");
        // A compilation's shared lock: a trimmer removes the entry once the compilation is done.
        std::fs::write(&header, [0u8; 10]).unwrap();
        let _child = child_copy(&held);
        drop(held);
        assert_eq!(trim(&cache).unwrap(), Trimmed { removed: vec![s], size: 0, in_use: 0 });
    }

    #[test]
    fn stale_marks_and_temporary_files_go_and_other_files_stay() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache { dir: dir.path().into(), max_size: DEFAULT_MAX_SIZE };
        let pre = cache.kind_dir("preamble");
        std::fs::create_dir_all(&pre).unwrap();
        let old_mark = pre.join(format!("{}.seen", stem(1)));
        let new_mark = pre.join(format!("{}.seen", stem(2)));
        File::create(&old_mark).unwrap().set_modified(ago(25)).unwrap();
        File::create(&new_mark).unwrap().set_modified(ago(23)).unwrap();
        let old_tmp = pre.join(".tmpAbC123");
        let new_tmp = pre.join(".tmpXyZ789");
        File::create(&old_tmp).unwrap().set_modified(ago(25)).unwrap();
        File::create(&new_tmp).unwrap();
        let foreign = pre.join("notes.txt");
        std::fs::write(&foreign, "mine").unwrap();
        // An entry with a header is not stale, however old.
        entry(&cache, "pch", &stem(3), 10, ago(1000));
        let trimmed = trim(&cache).unwrap();
        assert_eq!(trimmed.removed, [stem(1)]);
        assert!(!old_mark.exists() && !old_tmp.exists());
        assert!(new_mark.exists() && new_tmp.exists() && foreign.exists());
        assert_eq!(files(&cache, "pch").len(), 3);
    }

    #[test]
    fn too_large_marks_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let held = InUse::hold(&dir.path().join("p/x.seen")).unwrap();
        assert!(held.first_sight && !held.too_large(10));
        held.mark_too_large(11);
        assert!(held.too_large(10) && !held.too_large(11));
        held.mark_too_large(5);
        assert!(!held.too_large(10), "written over, not appended");
        // No file system has room for everything (the full disk's case: nothing is made).
        assert!(held.room_for(0) && !held.room_for(u64::MAX));
    }

    #[test]
    fn names_of_entries() {
        let v = version_tag();
        assert_eq!(stem(0xab), format!("00000000000000ab-{v}"));
        assert_eq!(entry_of(&format!("{}.pch", stem(1))), Some((stem(1).as_str(), true)));
        assert_eq!(entry_of("0123456789abcdef.json"), Some(("0123456789abcdef", false)));
        assert_eq!(entry_of("0123456789abcdef-9.9.9.seen"), Some(("0123456789abcdef-9.9.9", false)));
        for name in ["0123456789abcdef.txt", "0123456789abcde.pch", ".tmp123", "trim.lock", "xyz"] {
            assert_eq!(entry_of(name), None, "{name}");
        }
    }
}
