//! A panic anywhere in cdpc as an internal error with a reproducer, as Clang's driver answers
//! its own crashes: never a Rust backtrace, always `E1025` naming the input and a folder the
//! user can attach to a bug report.
//!
//! Each compilation notes what would reproduce it on its own thread ([`note`]) as it goes:
//! the device IR Clang handed the launch pipeline, the LLVM IR given as input, or the kernel
//! language's source. The panic hook ([`install`]) runs on the panicking thread, before
//! unwinding: it takes the message, where it was raised and that thread's note, and prints
//! nothing. The binary's `main` catches the unwinding ([`Crash::take`]) and reports it; the
//! work folders and partial outputs are removed by their guards on the way up.
//!
//! A crash outside Rust (a signal raised in LLVM or Clang code that runs outside the
//! `CrashRecoveryContext`s of `back::llvm_shim.cpp` and `clang::shim.cpp`, which report theirs
//! as coded errors) cannot unwind. [`catch_fatal_signals`] turns it into the same report: the
//! handler, on the crashing thread, only passes the signal and that thread's note through a
//! pipe (async-signal-safe calls only) and waits; a reporter thread started beforehand, on a
//! stack of its own, records the [`Crash`], runs the binary's report (the diagnostic, the
//! reproducer, removing the work files) and ends the process with its status.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What reproduces a compilation, as cdpc's own input.
#[derive(Clone, Debug)]
pub enum Reproducer {
    /// LLVM bitcode: the device IR Clang gave for a CUDA C++ file (`cdpc FILE.bc` runs the
    /// same launch pipeline), or a `.bc` input.
    Bitcode(Vec<u8>),
    /// Text to save with the extension given: a `.ll` input, or a kernel-language source.
    Text {
        /// The text.
        text: String,
        /// The file's extension, without the dot (`ll`, `cdp`).
        extension: &'static str,
    },
}

/// A noted compilation: its input's name and what reproduces it.
#[derive(Clone, Debug)]
struct Note {
    input: String,
    reproducer: Reproducer,
}

thread_local! {
    static NOTE: RefCell<Option<Note>> = const { RefCell::new(None) };
    /// The address of this thread's [`NOTE`] once it holds a note, 0 before: what the signal
    /// handler reads (a `Cell` of an integer needs no destructor, so reading it registers
    /// nothing and allocates nothing, unlike a first use of `NOTE`).
    static NOTE_ADDRESS: Cell<usize> = const { Cell::new(0) };
}

/// The last panic's report, set by the hook.
static LAST: Mutex<Option<Crash>> = Mutex::new(None);

/// Notes, for this thread, that the compilation of `input` is reproduced by `reproducer`
/// until the next note. With `CDPC_DEBUG_CRASH=1` in the environment cdpc then panics on
/// purpose, as Clang does at `#pragma clang __debug crash`: how the tests reach this path.
///
/// `CDPC_DEBUG_CRASH=segv` and `CDPC_DEBUG_CRASH=abort` raise SIGSEGV and SIGABRT instead, as a
/// crash in LLVM's or Clang's code outside a recovery context would ([`catch_fatal_signals`]).
pub fn note(input: &str, reproducer: Reproducer) {
    NOTE.with(|n| {
        *n.borrow_mut() = Some(Note { input: input.to_string(), reproducer });
        NOTE_ADDRESS.with(|a| a.set(n as *const RefCell<Option<Note>> as usize));
    });
    match std::env::var_os("CDPC_DEBUG_CRASH").as_deref().and_then(|v| v.to_str()) {
        Some("1") => panic!("CDPC_DEBUG_CRASH=1 asked for a crash"),
        // SAFETY: raise has no preconditions; the signal's handler (or its default action)
        // decides what follows.
        Some("segv") => unsafe {
            libc::raise(libc::SIGSEGV);
        },
        Some("abort") => std::process::abort(),
        _ => {}
    }
}

/// A panic, as the hook saw it.
#[derive(Clone, Debug)]
pub struct Crash {
    /// The panic's message.
    pub message: String,
    /// Where in cdpc's source it was raised (`file:line:column`).
    pub location: String,
    /// The input being compiled on the thread that panicked, if one was noted.
    pub input: Option<String>,
    reproducer: Option<Reproducer>,
}

/// Installs the panic hook that records panics for [`Crash::take`] instead of printing them.
/// `CDPC_BACKTRACE=1` keeps Rust's own report too (for cdpc's developers).
pub fn install() {
    let keep_default = std::env::var_os("CDPC_BACKTRACE").is_some_and(|v| v == "1");
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = match (info.payload().downcast_ref::<&str>(), info.payload().downcast_ref::<String>()) {
            (Some(s), _) => s.to_string(),
            (_, Some(s)) => s.clone(),
            _ => "a panic without a message".to_string(),
        };
        let location = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())).unwrap_or_default();
        // `try_with`: a panic while the thread's locals are torn down finds none.
        let note = NOTE.try_with(|n| n.borrow().clone()).ok().flatten();
        let crash = Crash { message, location, input: note.as_ref().map(|n| n.input.clone()), reproducer: note.map(|n| n.reproducer) };
        // The first panic is the cause; one in another thread while unwinding is a consequence.
        if let Ok(mut last) = LAST.lock() {
            last.get_or_insert(crash);
        }
        if keep_default {
            default(info);
        }
    }));
}

impl Crash {
    /// The recorded panic, if there was one since the last call.
    pub fn take() -> Option<Crash> {
        LAST.lock().ok()?.take()
    }

    /// Writes the reproducer into a new folder under `parent` (the system's temporary folder
    /// unless `CDPC_CRASH_DIR` names another): the input as cdpc reads it, `command.txt` with
    /// the command line `args` (its inputs replaced by the reproducer) and `message.txt`.
    /// Returns the folder, or nothing when there is no reproducer or it cannot be written.
    pub fn write_reproducer(&self, args: &[String]) -> Option<PathBuf> {
        let reproducer = self.reproducer.as_ref()?;
        let parent = std::env::var_os("CDPC_CRASH_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let stem = self.input.as_deref().map(Path::new).and_then(|p| p.file_stem()).map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "input".into());
        let dir = tempfile::Builder::new().prefix(&format!("cdpc-crash-{stem}-")).tempdir_in(&parent).ok()?.keep();
        let (file, bytes): (String, &[u8]) = match reproducer {
            Reproducer::Bitcode(b) => (format!("{stem}.bc"), b),
            Reproducer::Text { text, extension } => (format!("{stem}.{extension}"), text.as_bytes()),
        };
        let written = (|| -> std::io::Result<()> {
            std::fs::write(dir.join(&file), bytes)?;
            let input = self.input.as_deref().unwrap_or_default();
            let command: Vec<String> = args.iter().map(|a| if !input.is_empty() && a == input { file.clone() } else { a.clone() }).collect();
            std::fs::write(dir.join("command.txt"), format!("{}\n", command.join(" ")))?;
            std::fs::write(dir.join("message.txt"), format!("{}\nat {}\ncdpc {}\n", self.message, self.location, env!("CARGO_PKG_VERSION")))
        })();
        match written {
            Ok(()) => Some(dir),
            Err(_) => {
                let _ = std::fs::remove_dir_all(&dir);
                None
            }
        }
    }
}

/// The signals that mean a crash: an invalid memory access, a bus error, an illegal or
/// trapping instruction (`llvm_unreachable`, `__builtin_trap`), an arithmetic fault, and
/// `abort` (a failed assertion; LLVM's fatal errors outside a recovery context).
const FATAL_SIGNALS: [libc::c_int; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT];

/// The write end of the reporter's pipe, -1 until [`catch_fatal_signals`] made it.
static REPORT_PIPE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Set by the first crashing thread: a second crash (in another thread, or in the report)
/// waits for the first one's report to end the process.
static CRASHING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How long a crashing thread waits for the reporter to end the process before it dies of its
/// signal after all (a reporter that cannot finish: the crash left the allocator's lock held).
const REPORT_GRACE_SECONDS: libc::time_t = 20;

/// Makes a crash by signal in this process ([`FATAL_SIGNALS`]) a [`Crash`] that `report` (the
/// binary's) tells the user about, as it does for panics: `report` runs on a thread of its
/// own, finds the crash with [`Crash::take`] and returns the exit status, with which the
/// process then ends (`_exit`: the crashed thread's state is not trusted with destructors).
///
/// For a program: install it at the start of `main`, before LLVM's crash recovery is enabled
/// (`CrashRecoveryContext::Enable` keeps the handlers it finds and hands them the signals
/// raised outside a recovery context). A library embedding cdpc keeps its own signal handling.
/// Without a pipe or a thread nothing is installed and crashes keep their default action.
pub fn catch_fatal_signals(report: Box<dyn FnOnce() -> u8 + Send>) {
    use std::sync::atomic::Ordering;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [read_end, write_end] = fds;
    let reporter = std::thread::Builder::new().name("cdpc-crash-report".into()).spawn(move || {
        let mut message = [0u8; 16];
        let mut got = 0;
        while got < message.len() {
            // SAFETY: reads into the rest of `message`, which outlives the call.
            let n = unsafe { libc::read(read_end, message[got..].as_mut_ptr().cast(), message.len() - got) };
            if n > 0 {
                got += n as usize;
            } else if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
        let signal = i32::from_ne_bytes(message[..4].try_into().unwrap_or_default());
        let note_address = usize::from_ne_bytes(message[8..].try_into().unwrap_or_default());
        // SAFETY: the address is the crashed thread's `NOTE`, alive while that thread waits in
        // the handler (it does not return before the process ends); that thread is stopped, so
        // nothing changes the note while it is read. `try_borrow`: a crash in the middle of
        // `note` finds it borrowed.
        let note = (note_address != 0).then(|| unsafe { &*(note_address as *const RefCell<Option<Note>>) }).and_then(|n| n.try_borrow().ok().and_then(|n| n.clone()));
        let crash = Crash {
            message: format!("cdpc stopped on {} outside Rust code (in LLVM or Clang)", signal_name(signal)),
            location: String::new(),
            input: note.as_ref().map(|n| n.input.clone()),
            reproducer: note.map(|n| n.reproducer),
        };
        if let Ok(mut last) = LAST.lock() {
            last.get_or_insert(crash);
        }
        let status = report();
        // SAFETY: ends the process at once, as the crashed thread cannot go on.
        unsafe { libc::_exit(i32::from(status)) }
    });
    if reporter.is_err() {
        // SAFETY: the two descriptors were just made and nothing else uses them.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return;
    }
    REPORT_PIPE.store(write_end, Ordering::SeqCst);
    for signal in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction is a valid start; the handler is an `extern "C"` function
        // that makes only async-signal-safe calls. SA_ONSTACK: a stack overflow's SIGSEGV runs
        // it on the thread's alternate stack (Rust's threads have one). SA_RESETHAND: a crash
        // in the handler itself gets the default action.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_ONSTACK | libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The handler of [`FATAL_SIGNALS`]: hands the signal and this thread's note to the reporter
/// thread and waits for it to end the process; after [`REPORT_GRACE_SECONDS`] without that,
/// dies of the signal (its default action, restored by SA_RESETHAND).
extern "C" fn on_fatal_signal(signal: libc::c_int) {
    use std::sync::atomic::Ordering;
    if !CRASHING.swap(true, Ordering::SeqCst) {
        let note_address = NOTE_ADDRESS.try_with(Cell::get).unwrap_or(0);
        let mut message = [0u8; 16];
        message[..4].copy_from_slice(&signal.to_ne_bytes());
        message[8..].copy_from_slice(&note_address.to_ne_bytes());
        // SAFETY: write(2) is async-signal-safe; 16 bytes to a pipe are written at once.
        unsafe { libc::write(REPORT_PIPE.load(Ordering::SeqCst), message.as_ptr().cast(), message.len()) };
    }
    let grace = libc::timespec { tv_sec: REPORT_GRACE_SECONDS, tv_nsec: 0 };
    // SAFETY: nanosleep and raise are async-signal-safe. The action is the default one again
    // (SA_RESETHAND), so the raise ends the process once the handler returns.
    unsafe {
        libc::nanosleep(&grace, std::ptr::null_mut());
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// A signal's name and what it means, for the report.
fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV (an invalid memory access)",
        libc::SIGBUS => "SIGBUS (a bus error)",
        libc::SIGILL => "SIGILL (an illegal instruction or a trap)",
        libc::SIGFPE => "SIGFPE (an arithmetic fault)",
        libc::SIGABRT => "SIGABRT (an abort: a failed assertion)",
        _ => "a fatal signal",
    }
}
