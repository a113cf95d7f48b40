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

use std::cell::RefCell;
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
}

/// The last panic's report, set by the hook.
static LAST: Mutex<Option<Crash>> = Mutex::new(None);

/// Notes, for this thread, that the compilation of `input` is reproduced by `reproducer`
/// until the next note. With `CDPC_DEBUG_CRASH=1` in the environment cdpc then panics on
/// purpose, as Clang does at `#pragma clang __debug crash`: how the tests reach this path.
pub fn note(input: &str, reproducer: Reproducer) {
    NOTE.with(|n| *n.borrow_mut() = Some(Note { input: input.to_string(), reproducer }));
    if std::env::var_os("CDPC_DEBUG_CRASH").is_some_and(|v| v == "1") {
        panic!("CDPC_DEBUG_CRASH=1 asked for a crash");
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
