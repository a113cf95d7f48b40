//! `cdpc --link-launcher LINKER ARGS...`: runs a host link that cdpc does not build itself
//! (g++'s, CMake's `CMAKE_CXX_LINKER_LAUNCHER`/`CMAKE_CUDA_LINKER_LAUNCHER`, a Makefile's)
//! unchanged, passes its output through, and when it fails with one of the dynamic-parallelism
//! link errors (a missing or doubled device link, the static runtime's system libraries),
//! adds `E0804` naming the objects from their symbol tables and what to change
//! (`driver::program::foreign_link_failure`). The exit status is the linker's.

use super::command_line::ErrorFormat;
use super::report::fail_with_code;
use cdpc::render::{self, Color};
use cdpc::Code;
use std::io::{IsTerminal, Read, Write};
use std::process::{ExitCode, Stdio};

/// `args`: cdpc's own name, `--link-launcher`, the linker, its arguments.
pub(crate) fn main(args: Vec<String>) -> ExitCode {
    let Some(linker) = args.get(2) else {
        fail_with_code(ErrorFormat::Human, "<command line>", Some(Code::OptionInvalid), "`--link-launcher` needs the link command after it: `cdpc --link-launcher c++ a.o b.o -o app`");
        return ExitCode::from(2);
    };
    let link_args = &args[3..];
    // The linker's standard output goes straight through; its messages are read, then written
    // unchanged, then explained.
    let child = std::process::Command::new(linker).args(link_args).stdin(Stdio::inherit()).stdout(Stdio::inherit()).stderr(Stdio::piped()).spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            fail_with_code(ErrorFormat::Human, linker, Some(Code::ForeignLinkFailed), &format!("cannot run the linker `{linker}`: {e}"));
            return ExitCode::from(127);
        }
    };
    let mut said = Vec::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_end(&mut said);
    }
    let status = match child.wait() {
        Ok(status) => status,
        Err(e) => {
            fail_with_code(ErrorFormat::Human, linker, Some(Code::ForeignLinkFailed), &format!("waiting for the linker `{linker}`: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let _ = std::io::stderr().write_all(&said);
    let code = match status.code() {
        Some(code) => code,
        None => {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        }
    };
    if code != 0 {
        let cwd = std::env::current_dir().unwrap_or_default();
        if let Some(d) = cdpc::driver::program::foreign_link_failure(&String::from_utf8_lossy(&said), link_args, &cwd) {
            let color = if std::io::stderr().is_terminal() { Color::Always } else { Color::Never };
            eprint!("{}", render::human(std::slice::from_ref(&d), "<link>", "", color));
        }
    }
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
