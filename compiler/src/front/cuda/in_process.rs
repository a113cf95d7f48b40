//! Clang in cdpc's own process: `shim.cpp` (built by `build.rs`, linked with Clang's libraries
//! as LLVM is linked) runs what `clang++ ARGS` runs, Clang's driver and then its front end,
//! on a thread of its own, and hands back every message as data ([`Message`]).
//!
//! # The C ABI
//!
//! ```text
//! int cdpc_clang_run(const char *const *args, size_t nargs,
//!                    void (*on_diag)(void *user, int level, const char *file,
//!                                    unsigned line, unsigned column, const char *message),
//!                    void *user,
//!                    int (*source_test)(const char *text, size_t len),
//!                    int (*source_rewrite)(const char *text, size_t len,
//!                                          void (*take)(void *, const char *, size_t), void *));
//! ```
//!
//! `args` are `clang++`'s arguments without the program name. `level` is 0 note, 1 remark,
//! 2 warning, 3 error, 4 fatal error; `file` is null for a message without a place (the
//! driver's). The result is 0 (done: the output file is written), 1 (errors, reported through
//! `on_diag`), 2 (Clang crashed: LLVM's `CrashRecoveryContext` caught the signal) or 3 (the
//! arguments ask for something other than Clang's front end, reported through `on_diag`).
//! Every file Clang reads passes through `source_test` and, where it says so, `source_rewrite`,
//! which hands a changed text to `take` (both null: files as they are): what nvcc reads and
//! Clang does not ([`super::nvcc_text`]).
//!
//! # Crashes and time limits
//!
//! A crash (a segmentation fault, a failed assertion's abort) inside Clang returns to the shim
//! through LLVM's `CrashRecoveryContext`, which cdpc reports as `E1004` with the command line;
//! whatever Clang allocated for that compilation is leaked. LLVM's own signal handler, which
//! Clang installs for the files it writes, removes every such file of the process first: a
//! Clang compilation running at the same time on another thread (`-dc`'s other side, the
//! Python package's) loses its temporary output and runs again ([`compile`]), never leaving a
//! partial file. The argument `-DCDPC_TEST_CLANG_CRASH`
//! makes the shim abort inside the recovery context, as a failed assertion in Clang does: the
//! test of this path (compiler/tests/cuda_cxx.rs). An LLVM fatal error (`report_fatal_error`)
//! inside the run ends it the same way, its reason an error of its own ("LLVM stopped: ..."):
//! the shim's handler hands the exit to the recovery context, as Clang's driver does for an
//! in-process cc1; `-DCDPC_TEST_LLVM_FATAL` raises one for the test.
//!
//! A hang cannot be killed inside a process: Clang runs on a thread of its own, and when it
//! has not finished within `--tool-timeout` the compilation fails with `E0702` and the thread
//! is left to finish or to end with the process (the command-line program exits right after;
//! a long-lived host, the Python package, keeps one thread busy until Clang returns). A Clang
//! program named with `--clang` or `CDPC_CLANG` runs as a process, which the limit kills.
//!
//! # `-mllvm`
//!
//! `-mllvm` options set LLVM's process-wide options, which would change cdpc's own pipeline too.
//! The driver adds one for NVPTX, `-enable-memcpyopt-without-libcalls`; the shim leaves it out
//! (Clang then skips memcpyopt on the device side, as cdpc's own pipeline does: NVPTX has no
//! libcalls) and refuses any other. The one LLVM option cdpc needs on the device side,
//! libdevice's correctly rounded `sqrtf` (`-nvvm-reflect-add=__CUDA_PREC_SQRT=1`), is set for
//! the whole process by `back::nvcc_math_defaults` before Clang runs, always with that value.
//!
//! # What the shim adds to Clang's run
//!
//! `shim.cpp` puts consumers of its own in front of Clang's (its comments give the measurements):
//!
//! - `SkipLibraryBodies`, on the device side only: the bodies of the C++ standard library's host
//!   functions that the compilation parses itself are skipped, since a device compilation never
//!   emits a host function. A skipped body is only ever instantiated for the library's own and
//!   built-in types (or CUDA's and CCCL's plain structs and any enumeration); an instantiation
//!   that names anything of the program's stops the parse, and the compilation runs again with
//!   every body, its first run's messages dropped, so the PTX and the messages are those of the
//!   whole parse. Never in a precompiled header, which keeps every body;
//!   `CDPC_CLANG_SKIP_BODIES=0` turns it off.
//! - `NvccRules`: nvcc's rules that Clang lacks, checked in the program's own files: writes to
//!   `__constant__` variables, `constexpr` host functions called from device code without
//!   `__CUDACC_RELAXED_CONSTEXPR__`, lambdas annotated `__device__` without
//!   `__CUDACC_EXTENDED_LAMBDA__`.
//! - `HiddenDeviceEntities`, on the host side: nvcc 13's hidden visibility for kernels and device
//!   variables the program gave no visibility, in precompiled headers too; the option
//!   `-device-entity-has-hidden-visibility=false` arrives as the macro
//!   `__CDPC_DEVICE_ENTITY_DEFAULT_VISIBILITY__`.
//!
//! A precompiled header the linked Clang makes leaves out the system headers' deferred-diagnostic
//! roots that cannot be emitted (`PruneDeferredDiagnosticRoots`). The shim is built with
//! `back/llvm_shim.cpp` by `compiler/build.rs` and linked with Clang's static archives in
//! dependency order, as Clang's CMake package lists them (feature `llvm-static`), or else with
//! `libclang-cpp.so`; its fatal-error handler is the one `back::safely` uses.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

type DiagFn = extern "C" fn(*mut c_void, c_int, *const c_char, c_uint, c_uint, *const c_char);
type SourceTestFn = unsafe extern "C" fn(*const u8, usize) -> c_int;
type SourceRewriteFn = unsafe extern "C" fn(*const u8, usize, super::nvcc_text::TakeFn, *mut c_void) -> c_int;

extern "C" {
    fn cdpc_clang_run(args: *const *const c_char, nargs: usize, on_diag: DiagFn, user: *mut c_void, source_test: SourceTestFn, source_rewrite: SourceRewriteFn) -> c_int;
}

/// How serious a [`Message`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Belongs to the message before it.
    Note,
    /// `-R` remarks.
    Remark,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// An error that stopped Clang.
    Fatal,
}

/// One message of Clang's, as its text printer would show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// How serious.
    pub level: Level,
    /// File (as Clang names it), line and column (1-based, bytes), when it has a place.
    pub place: Option<(String, usize, usize)>,
    /// The text, with `[-Wflag]` for a warning that has a flag.
    pub text: String,
}

/// How a compilation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The output file is written.
    Finished,
    /// Clang reported errors.
    Errors,
    /// Clang crashed; the crash was caught.
    Crashed,
    /// The arguments ask for more than Clang's front end (reported in the messages).
    Unsupported,
}

/// What a compilation left.
#[derive(Clone, Debug)]
pub struct Run {
    /// How it ended.
    pub outcome: Outcome,
    /// Every message, in order.
    pub messages: Vec<Message>,
}

/// Why no [`Run`] came back.
#[derive(Debug)]
pub enum NotRun {
    /// Clang did not finish within the limit; its thread is abandoned.
    TimedOut(Duration),
    /// The thread could not be started.
    Spawn(std::io::Error),
}

/// The stack of Clang's thread: Clang's own driver runs its front end with 8 MiB and
/// deep templates recurse far; twice that leaves room.
const STACK: usize = 16 << 20;

extern "C" fn collect(user: *mut c_void, level: c_int, file: *const c_char, line: c_uint, column: c_uint, text: *const c_char) {
    // SAFETY: `user` is the `Vec<Message>` that `compile_on_this_thread` passed, alive and
    // borrowed by nothing else during the call; the strings are NUL-terminated or null.
    let messages = unsafe { &mut *(user as *mut Vec<Message>) };
    let string = |p: *const c_char| if p.is_null() { None } else { Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()) };
    let level = match level {
        0 => Level::Note,
        1 => Level::Remark,
        2 => Level::Warning,
        3 => Level::Error,
        _ => Level::Fatal,
    };
    let place = string(file).map(|f| (f, line as usize, column as usize));
    messages.push(Message { level, place, text: string(text).unwrap_or_default() });
}

fn compile_on_this_thread(args: &[CString]) -> Run {
    let pointers: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let mut messages: Vec<Message> = Vec::new();
    // SAFETY: `pointers` holds NUL-terminated strings that outlive the call; `collect` gets
    // `messages` back as its `user` pointer and is the only user of it during the call.
    let status =
        unsafe { cdpc_clang_run(pointers.as_ptr(), pointers.len(), collect, &mut messages as *mut Vec<Message> as *mut c_void, super::nvcc_text::may_need_rewriting_c, super::nvcc_text::rewrite_c) };
    let outcome = match status {
        0 => Outcome::Finished,
        1 => Outcome::Errors,
        2 => Outcome::Crashed,
        _ => Outcome::Unsupported,
    };
    Run { outcome, messages }
}

/// Clang's crashes in this process so far, counted as each returns to its recovery context.
///
/// LLVM's signal handler removes every output file Clang has registered in the process before
/// a crash returns (see "Crashes and time limits"), the temporary outputs of compilations on
/// other threads included: `-dc` runs its two sides at once, and a crash of one (a damaged
/// precompiled header, a bug of Clang's) made the other fail with "unable to rename temporary
/// ... No such file or directory" (measured: `compiler/tests/cache_stress.rs`, 1 of 9 runs with
/// three at a time). Such a compilation runs again ([`compile`]).
static CRASHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The message of Clang's that says its finished output vanished before it was put in place.
const OUTPUT_REMOVED: &str = "unable to rename temporary";

/// How many times one compilation runs at most when crashes of other compilations took its
/// output away.
const RUNS_OVER_CRASHES: usize = 3;

/// Whether `run` failed because another compilation's crash removed its output: Clang's
/// errors, with a crash in the process since it started (`crashes_before`) or the message of
/// a temporary output gone (the crash may still be on its way back to be counted).
fn lost_to_a_crash(run: &Run, crashes_before: usize) -> bool {
    run.outcome == Outcome::Errors && (CRASHES.load(std::sync::atomic::Ordering::SeqCst) != crashes_before || run.messages.iter().any(|m| m.text.contains(OUTPUT_REMOVED)))
}

/// Runs `clang++ args` in this process, on a thread of its own, waiting at most `timeout`
/// (over every run). A run whose output another compilation's crash removed runs again, up to
/// [`RUNS_OVER_CRASHES`] runs in all ([`CRASHES`]).
pub fn compile(args: &[OsString], timeout: Option<Duration>) -> Result<Run, NotRun> {
    let mut c_args = Vec::with_capacity(args.len());
    for a in args {
        match CString::new(a.as_bytes()) {
            Ok(c) => c_args.push(c),
            Err(_) => {
                let text = format!("an argument for Clang holds a NUL byte: {:?}", a);
                return Ok(Run { outcome: Outcome::Errors, messages: vec![Message { level: Level::Fatal, place: None, text }] });
            }
        }
    }
    let c_args = std::sync::Arc::new(c_args);
    let deadline = timeout.map(|limit| (std::time::Instant::now() + limit, limit));
    let mut runs = 0;
    loop {
        let crashes_before = CRASHES.load(std::sync::atomic::Ordering::SeqCst);
        let left = deadline.map(|(at, limit)| (at.saturating_duration_since(std::time::Instant::now()), limit));
        let run = compile_once(c_args.clone(), left)?;
        runs += 1;
        if runs == RUNS_OVER_CRASHES || !lost_to_a_crash(&run, crashes_before) {
            return Ok(run);
        }
    }
}

/// One run of [`compile`]: `left` is the time left and the whole limit (reported on a timeout).
fn compile_once(c_args: std::sync::Arc<Vec<CString>>, left: Option<(Duration, Duration)>) -> Result<Run, NotRun> {
    let (send, receive) = std::sync::mpsc::channel();
    // Texts read in place of files' own ([`super::nvcc_text::replace_texts`]), this thread's.
    let replaced = super::nvcc_text::replacements();
    std::thread::Builder::new()
        .name("clang".into())
        .stack_size(STACK)
        .spawn(move || {
            let _replacing = super::nvcc_text::replace_texts(replaced);
            let run = compile_on_this_thread(&c_args);
            if run.outcome == Outcome::Crashed {
                CRASHES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let _ = send.send(run);
        })
        .map_err(NotRun::Spawn)?;
    let crashed = || Run { outcome: Outcome::Crashed, messages: Vec::new() };
    match left {
        // A thread that ended without sending panicked (nothing in it should): a crash.
        None => Ok(receive.recv().unwrap_or_else(|_| crashed())),
        Some((left, limit)) => match receive.recv_timeout(left) {
            Ok(run) => Ok(run),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(NotRun::TimedOut(limit)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Ok(crashed()),
        },
    }
}

/// The file of Clang's resource folder that a CUDA compilation cannot do without.
pub const CUDA_WRAPPER: &str = "include/__clang_cuda_runtime_wrapper.h";

/// The resource folder's name under an LLVM install's `lib/`.
pub const RESOURCE_SUBDIR: &str = "clang/22";

/// The LLVM library folder cdpc was built against (build.rs).
pub(crate) const BUILT_LLVM_LIBDIR: &str = env!("CDPC_LLVM_LIBDIR");

/// The file this code was loaded from: the `cdpc` program, or the Python package's extension
/// module (`cdpc/_cdpc.abi3.so`).
fn this_module() -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads the address of a function of this module and fills `info`.
    let found = unsafe { libc::dladdr(this_module as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic loader.
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes()));
    path.canonicalize().ok()
}

/// The places Clang's resource folder (the one holding `include/__clang_cuda_runtime_wrapper.h`)
/// is looked for, in order, with how each is described in `E1002`:
///
/// 1. `CDPC_CLANG_RESOURCE_DIR` (when set and not empty, the only place looked at);
/// 2. `clang/` beside the module cdpc runs from: the Python package bundles it there, beside
///    its extension module; a copy beside the `cdpc` program works the same way;
/// 3. `../lib/clang/22` from that module's folder (cdpc installed in an LLVM-style `bin/`);
/// 4. `LLVM_SYS_221_PREFIX/lib/clang/22`;
/// 5. `lib/clang/22` of the LLVM cdpc was built against;
/// 6. `/usr/lib/llvm-22/lib/clang/22` (Debian's and Ubuntu's `libclang-common-22-dev`).
pub fn resource_dir_candidates(explicit: Option<&std::ffi::OsStr>, llvm_prefix: Option<&std::ffi::OsStr>) -> Vec<(PathBuf, String)> {
    if let Some(dir) = explicit.filter(|d| !d.is_empty()) {
        return vec![(PathBuf::from(dir), "CDPC_CLANG_RESOURCE_DIR".into())];
    }
    let mut out = Vec::new();
    if let Some(dir) = this_module().as_deref().and_then(Path::parent) {
        out.push((dir.join("clang"), "beside cdpc".into()));
        out.push((dir.join("../lib").join(RESOURCE_SUBDIR), "cdpc's ../lib".into()));
    }
    if let Some(prefix) = llvm_prefix.filter(|p| !p.is_empty()) {
        out.push((Path::new(prefix).join("lib").join(RESOURCE_SUBDIR), "LLVM_SYS_221_PREFIX".into()));
    }
    out.push((Path::new(BUILT_LLVM_LIBDIR).join(RESOURCE_SUBDIR), "the LLVM cdpc was built with".into()));
    out.push((PathBuf::from("/usr/lib/llvm-22/lib").join(RESOURCE_SUBDIR), "the system's LLVM 22".into()));
    out
}

/// The first candidate that holds [`CUDA_WRAPPER`], or every place looked at.
pub fn find_resource_dir(explicit: Option<&std::ffi::OsStr>, llvm_prefix: Option<&std::ffi::OsStr>) -> Result<PathBuf, Vec<String>> {
    let mut searched = Vec::new();
    for (dir, what) in resource_dir_candidates(explicit, llvm_prefix) {
        if dir.join(CUDA_WRAPPER).is_file() {
            return Ok(dir.canonicalize().unwrap_or(dir));
        }
        searched.push(format!("{what}: no `{}`", dir.join(CUDA_WRAPPER).display()));
    }
    Err(searched)
}
