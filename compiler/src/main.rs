//! The `cdpc` command: compile a `.cdp` file to a linked cubin (or PTX, LLVM IR, an object).
//! `cdpc run FILE.cdp ...` compiles and runs a kernel on the GPU (`run_cmd.rs`).
//!
//! This file is the entry: it reads the arguments, installs the signal and crash handlers, has
//! the command line planned (`plan.rs`) and runs the plan (`runner.rs`), and returns the exit
//! status. The modules it declares import each other without a cycle, and none imports from
//! this file (ARCHITECTURE.md, "Layers").

mod cache_cmd;
mod command_line;
mod link_launcher;
mod nvcc_options;
mod outputs;
mod plan;
mod preprocess_cmd;
mod report;
mod run_cmd;
mod runner;
mod sccache_steps;
mod signals;
mod toolkit;

use cdpc::Code;
use clap::{CommandFactory, FromArgMatches};
use command_line::{requested_format, Cli, ErrorFormat};
use report::fail_with_code;
use std::process::ExitCode;

fn main() -> ExitCode {
    run_program(std::env::args().collect())
}

/// The `cdpc` program with `args` (its name first), as a process of its own runs it: signals
/// handled, panics and crashes reported as `E1025`, the cache's headers made after the output.
/// The binary's `main`, and the release archive's `bin/cdpc` (python/src/lib.rs, `cdpc_main`).
pub(crate) fn run_program(args: Vec<String>) -> ExitCode {
    report::mark_start();
    signals::install();
    // The cache's headers a compilation misses are made after it (`fill_cache`).
    cdpc::front::cuda::cache::set_deferred(true);
    cdpc::driver::crash::install();
    // A crash by a signal in LLVM's or Clang's code outside their recovery contexts: reported
    // as a panic is, then the work files removed; the process ends with the report's status.
    let crash_args = args.clone();
    cdpc::driver::crash::catch_fatal_signals(Box::new(move || {
        report_crash(&crash_args);
        cdpc::toolchain::interrupt();
        70
    }));
    let status = match std::panic::catch_unwind(|| main_with_args(args.clone())) {
        Ok(status) => status,
        Err(_) => report_crash(&args),
    };
    fill_cache();
    signals::settle();
    status
}

/// A command line clap cannot read: `E0708` with clap's message and tip (help and version
/// requests are clap's to print).
fn option_error(format: ErrorFormat, e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
        e.exit();
    }
    let rendered = e.render().to_string();
    // clap's text: `error: <message>`, a blank line, tips, then usage and a pointer to `--help`,
    // which are left out.
    let text = rendered.trim_start_matches("error: ");
    // clap's tips ("to pass '-x' as a value, use '-- -x'") are about its own syntax, not a
    // compiler's: left out, and an unknown option says where the known ones are listed.
    let message: Vec<&str> =
        text.lines().take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information")).filter(|l| !l.trim_start().starts_with("tip:")).map(str::trim_end).collect();
    let mut message = message.join("\n").trim_end().to_string();
    if e.kind() == ErrorKind::UnknownArgument {
        message.push_str("\n  = help: `cdpc --help` lists cdpc's options; nvcc's are read too (docs/BUILDING.md, \"nvcc's options\")");
    }
    fail_with_code(format, "<command line>", Some(Code::OptionInvalid), &message);
    ExitCode::from(2)
}

/// Reports a panic of cdpc's as `E1025`, naming the input and where cdpc failed, with the
/// folder of its reproducer (`driver::crash`). The exit status is 70 (`EX_SOFTWARE`, an
/// internal error), never Rust's 101.
pub(crate) fn report_crash(args: &[String]) -> ExitCode {
    let format = requested_format(args);
    let crash = cdpc::driver::crash::Crash::take();
    let (message, location, input) = match &crash {
        Some(c) => (c.message.clone(), c.location.clone(), c.input.clone()),
        None => ("an unknown failure".to_string(), String::new(), None),
    };
    let file_name = input.clone().unwrap_or_else(|| "<command line>".to_string());
    let mut text = format!("internal compiler error: {message}");
    if !location.is_empty() {
        text.push_str(&format!(" (at {location})"));
    }
    text.push_str(&format!("; this is a bug in cdpc {}, not in the input", env!("CARGO_PKG_VERSION")));
    if let Some(input) = &input {
        text.push_str(&format!(", seen while compiling `{input}`"));
    }
    match crash.as_ref().and_then(|c| c.write_reproducer(args)) {
        Some(dir) => text.push_str(&format!(". A reproducer is in `{}` (the input as cdpc read it, `command.txt`, `message.txt`): please attach it to a bug report", dir.display())),
        None => text.push_str(". Please report it with the command line and the input"),
    }
    fail_with_code(format, &file_name, Some(Code::InternalError), &text);
    ExitCode::from(70)
}

/// Makes the cache's headers that this process's compilations left for later
/// (`cdpc::front::cuda::cache::Fill`), once its outputs are written and its messages said, whatever
/// its status (a file with errors keeps its preamble): cdpc again, with this process's
/// arguments and `CDPC_CACHE_FILL` (which makes Clang make the headers and compile nothing,
/// writes no output and says nothing, its output nowhere), detached from the terminal (`setsid`) at the
/// lowest priority (the idle scheduling policy, nice 19, and nice 19 for its autogroup),
/// holding the cache's fill lock until it ends; by default not waited for,
/// with `CDPC_CACHE_BACKGROUND=0` waited for. A filler that cannot start leaves them to the next
/// compilation, which notes them again.
pub(crate) fn fill_cache() {
    use cdpc::front::cuda::cache;
    if cache::filling() != 0 {
        return;
    }
    let Some((what, dir)) = cache::take_wanted() else { return };
    let Ok(exe) = std::env::current_exe() else { return };
    // Held by the filler (an inherited descriptor) until it ends; this process's copy closes
    // when this returns.
    let Some(_lock) = cache::fill_lock(&dir) else { return };
    let mut filler = std::process::Command::new(exe);
    filler.args(std::env::args_os().skip(1)).env("CDPC_CACHE_FILL", what.to_string()).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    // SAFETY: setsid, setpriority, sched_setscheduler, open, write and close are
    // async-signal-safe system calls; they touch no memory of the parent (the path and the
    // bytes are static).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut filler, || {
            libc::setsid();
            // The lowest priority there is: the idle policy, below nice 19.
            let idle = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle);
            libc::setpriority(libc::PRIO_PROCESS, 0, 19);
            // With autogroup scheduling (Linux's default where enabled), setsid put the filler
            // in a scheduling group of its own, and groups share the CPU by the group's nice,
            // not their tasks': a filler took half of a 2-core machine from `make -j2`'s
            // compilations (bench/dc/make_j.py). The group's nice is raised too.
            let fd = libc::open(c"/proc/self/autogroup".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, b"19".as_ptr().cast(), 2);
                libc::close(fd);
            }
            Ok(())
        });
    }
    match filler.spawn() {
        Ok(mut child) if !cache::in_background() => {
            let _ = child.wait();
        }
        // Not waited for: it outlives this process (its parent becomes init).
        _ => {}
    }
}

/// The whole command for an argument list (program name first): `main`'s body, and what the
/// Python package's `cdpc` console script runs (`python/src/lib.rs` includes this file).
pub(crate) fn main_with_args(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    // `cdpc --link-launcher LINKER ...`: the rest is another program's command line.
    if args.get(1).map(String::as_str) == Some("--link-launcher") {
        return link_launcher::main(args);
    }
    // The steps `--dryrun --keep` prints for sccache run cdpc with these.
    if let Some(status) = sccache_steps::intercept(&args, main_with_args) {
        return status;
    }
    let steps = sccache_steps::wants_steps(&args).then(|| args.clone());
    let format = requested_format(&args);
    let args = match nvcc_options::translate(args) {
        Ok(args) => args,
        Err(refused) => {
            fail_with_code(format, "<command line>", Some(refused.code), &refused.message);
            return ExitCode::from(2);
        }
    };
    if args.get(1).map(String::as_str) == Some("run") {
        return run_cmd::main(args);
    }
    let args = match nvcc_options::forward_unknown(args, Cli::command()) {
        Ok(args) => args,
        Err(refused) => {
            fail_with_code(format, "<command line>", Some(refused.code), &refused.message);
            return ExitCode::from(2);
        }
    };
    if args.iter().skip(1).any(|a| a == "--version" || a == "-V") {
        print!("{}", toolkit::version_text());
        return ExitCode::SUCCESS;
    }
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return option_error(format, e),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return option_error(format, e),
    };
    if cli.list_gpu_arch || cli.list_gpu_code {
        return toolkit::list_gpus(&cli, format);
    }
    if cli.cache_status {
        return match cache_cmd::status(&cdpc::front::cuda::cache::CacheEnv::from_process()) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(message) => {
                fail_with_code(format, "<environment>", Some(Code::CacheSizeInvalid), &message);
                ExitCode::FAILURE
            }
        };
    }
    if let Some(status) = toolkit::host_compiler_query(&cli, format) {
        return status;
    }
    let plan = match plan::plan(&mut cli, &matches, format) {
        Ok(plan) => plan,
        Err(status) => return status,
    };
    if cli.dry_run {
        if let Some(raw) = steps {
            let jobs: Vec<_> = plan.tasks.iter().flat_map(|task| task.jobs(&cli, &plan.program, &plan.options)).collect();
            return sccache_steps::print_steps(&raw, &jobs, format);
        }
        for task in &plan.tasks {
            for job in task.jobs(&cli, &plan.program, &plan.options) {
                eprintln!("{job}");
            }
        }
        return ExitCode::SUCCESS;
    }
    for task in plan.tasks {
        let status = runner::run_task(&cli, task, &plan.program, &plan.options, plan.color);
        if status != ExitCode::SUCCESS {
            return status;
        }
    }
    ExitCode::SUCCESS
}
