//! The `cdpc` binary's signals: on SIGINT (Ctrl-C), SIGTERM or SIGHUP it stops compiling,
//! kills ptxas or nvlink, removes its work files ([`cdpc::toolchain::interrupt`]) and then dies
//! of the signal, so that a shell or build system sees how it ended. A signal the process
//! started with ignored (`nohup`, `trap '' HUP`) stays ignored.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Starts the thread that waits for the signals. Without it (if the handlers cannot be
/// installed) the signals keep their default action.
pub fn install() {
    let wanted: Vec<i32> = [SIGINT, SIGTERM, SIGHUP].into_iter().filter(|&s| !ignored(s)).collect();
    let Ok(mut signals) = Signals::new(&wanted) else { return };
    let _ = std::thread::Builder::new().name("cdpc-signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            cdpc::toolchain::interrupt();
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}

/// Called when `main` is done: when a signal interrupted the compilation, the signal thread is
/// still removing work files and will end the process by the signal; returning from `main`
/// now would exit first, with the wrong status and perhaps files left. So wait for it (at
/// most ten seconds, then exit as a shell reports an interrupted program).
pub fn settle() {
    if cdpc::toolchain::cleanup::interrupted() {
        std::thread::sleep(std::time::Duration::from_secs(10));
        std::process::exit(130);
    }
}

/// Whether `signal` is ignored now (as `nohup` leaves SIGHUP): a handler would undo that.
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}
