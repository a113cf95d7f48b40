//! The `cdpc` command: compile a `.cdp` file to a linked cubin (or PTX, LLVM IR, an object).
//! `cdpc run FILE.cdp ...` compiles and runs a kernel on the GPU (`run_cmd.rs`).

mod run_cmd;
mod signals;

use cdpc::driver::{self, CompileError, CompileOptions, Emit, WarningPolicy};
use cdpc::render::{self, Color};
use cdpc::toolchain::ToolSearch;
use cdpc::{AddressSize, Code, Diagnostic, LaunchAbi, SmVersion, Target};
use cdpc::preprocess::{MacroOption, PreprocessOptions};
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "cdpc", version, about = "Compile CUDA kernels with device-side launches (.cdp) to linked cubins")]
struct Cli {
    /// The source file (a subset of CUDA C)
    input: PathBuf,
    /// Output file; `-` writes PTX or LLVM IR to standard output [default: INPUT with the
    /// extension of --emit]
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// What to produce
    #[arg(long, value_enum, default_value_t = EmitArg::Cubin)]
    emit: EmitArg,
    /// GPU architecture (nvcc's `-arch=sm_90` is accepted too)
    #[arg(long, default_value = "sm_90", value_name = "sm_XX")]
    arch: SmVersion,
    /// Optimisation level for LLVM and ptxas
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// Device-launch ABI: v2 is what nvcc 13 emits (all streams); v1 is the documented
    /// cudaGetParameterBuffer/cudaLaunchDevice pair (no tail launch, no fire-and-forget)
    #[arg(long, default_value = "v2", value_name = "v1|v2")]
    launch_abi: LaunchAbi,
    /// Pointer size of the PTX; 32-bit output is PTX or LLVM IR only
    #[arg(long, value_enum, default_value_t = AddressSizeArg::Bits64, value_name = "32|64")]
    address_size: AddressSizeArg,
    /// Pass an argument to ptxas (repeatable)
    #[arg(long = "Xptxas", value_name = "ARG", allow_hyphen_values = true)]
    xptxas: Vec<String>,
    /// Pass an argument to nvlink (repeatable)
    #[arg(long = "Xnvlink", value_name = "ARG", allow_hyphen_values = true)]
    xnvlink: Vec<String>,
    /// Print each tool's command line
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Directory of a CUDA toolkit or of the NVIDIA wheels (before CUDA_HOME in the search)
    #[arg(long, value_name = "DIR")]
    cuda_home: Option<PathBuf>,
    /// Treat parameter buffers over 4 KB as errors (runtimes before CUDA 12.1 refuse them)
    #[arg(long)]
    strict_param_limit: bool,
    /// Treat every warning as an error
    #[arg(long = "Werror")]
    werror: bool,
    /// Treat this warning code as an error (repeatable)
    #[arg(long, value_name = "CODE")]
    deny: Vec<String>,
    /// Do not report this warning code (repeatable)
    #[arg(long, value_name = "CODE")]
    allow: Vec<String>,
    /// Print the time of each phase to stderr (`time: PHASE SECONDS`), like nvcc --time
    #[arg(long)]
    time: bool,
    /// Colour in diagnostics
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
    /// Aggregate the device launches of a block, or of the threads of a warp that launch
    /// together, into one launch (`-faggregate-launches=block`; remarks with `-Rpass=aggregate`)
    #[arg(long = "faggregate-launches", value_name = "warp|block|off", default_value = "off")]
    aggregate_launches: cdpc::aggregate::Granularity,
    /// Report optimisation remarks of a pass (`-Rpass=aggregate`: launches left as they are)
    #[arg(long = "Rpass", value_name = "PASS", value_parser = ["aggregate"])]
    rpass: Vec<String>,
    /// How diagnostics are written to stderr: text for people, or JSON (one object per line)
    #[arg(long, value_enum, default_value_t = ErrorFormat::Human)]
    error_format: ErrorFormat,
    #[command(flatten)]
    preprocess: PreprocessArgs,
    /// Kill ptxas or nvlink and fail (E0702) when one run takes longer than this; 0: no limit
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = parse_time_limit)]
    tool_timeout: TimeLimit,
    /// Replace an existing output file even when it is no compiler output (E0701); the input
    /// is never replaced (E0700)
    #[arg(long)]
    overwrite: bool,
}

/// `--tool-timeout`: `None` is no limit.
#[derive(Clone, Copy, Debug)]
struct TimeLimit(Option<std::time::Duration>);

fn parse_time_limit(text: &str) -> Result<TimeLimit, String> {
    driver::parse_tool_timeout(text).map(TimeLimit)
}

/// The preprocessor's options, shared by `cdpc` and `cdpc run`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PreprocessArgs {
    /// Define a macro: `-D NAME` (as 1) or `-D NAME=VALUE` (repeatable; -D and -U apply in order)
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    define: Vec<String>,
    /// Undefine a macro, a predefined one included (repeatable)
    #[arg(short = 'U', value_name = "NAME")]
    undefine: Vec<String>,
    /// Look for #include headers in this folder (repeatable, in order; `-Idir` or `-I dir`)
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
}

impl PreprocessArgs {
    /// The options for `input`, with `-D` and `-U` in the order they were written (clap keeps
    /// each option's values apart; their indices in `matches` give the order).
    pub(crate) fn options(&self, matches: &ArgMatches, input: &std::path::Path) -> PreprocessOptions {
        let mut ordered: Vec<(usize, MacroOption)> = Vec::new();
        let indices = |id: &str| matches.indices_of(id).map(|i| i.collect::<Vec<_>>()).unwrap_or_default();
        ordered.extend(indices("define").into_iter().zip(&self.define).map(|(i, v)| (i, MacroOption::Define(v.clone()))));
        ordered.extend(indices("undefine").into_iter().zip(&self.undefine).map(|(i, v)| (i, MacroOption::Undefine(v.clone()))));
        ordered.sort_by_key(|(i, _)| *i);
        PreprocessOptions {
            input: Some(input.to_path_buf()),
            macros: ordered.into_iter().map(|(_, m)| m).collect(),
            include_dirs: self.include.clone(),
            ..PreprocessOptions::default()
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum EmitArg {
    Cubin,
    Obj,
    Ptx,
    LlvmIr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ErrorFormat {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AddressSizeArg {
    #[value(name = "32")]
    Bits32,
    #[value(name = "64")]
    Bits64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

/// Rewrites nvcc-style single-dash options (`-arch=sm_90`, `-Xptxas -v`, `-Werror`) into the
/// double-dash forms clap parses, so nvcc users can keep their habits.
fn normalize_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    for arg in args {
        if let Some(value) = arg.strip_prefix("-arch=") {
            out.push(format!("--arch={value}"));
        } else if matches!(arg.as_str(), "-arch" | "-Xptxas" | "-Xnvlink" | "-Werror") {
            out.push(format!("-{arg}"));
        } else if arg.starts_with("-faggregate-launches") || arg.starts_with("-Rpass") {
            out.push(format!("-{arg}"));
        } else if let Some(rest) = arg.strip_prefix("-Xptxas=").or_else(|| arg.strip_prefix("-Xnvlink=")) {
            let tool = if arg.starts_with("-Xptxas") { "--Xptxas" } else { "--Xnvlink" };
            out.push(format!("{tool}={rest}"));
        } else {
            out.push(arg);
        }
    }
    out
}

fn parse_codes(names: &[String]) -> Result<Vec<Code>, String> {
    names.iter().map(|n| Code::from_str(n).ok_or_else(|| format!("unknown diagnostic code `{n}`"))).collect()
}

fn main() -> ExitCode {
    signals::install();
    let status = main_with_args(std::env::args());
    signals::settle();
    status
}

/// The whole command for an argument list (program name first): `main`'s body, and what the
/// Python package's `cdpc` console script runs (`python/src/lib.rs` includes this file).
pub(crate) fn main_with_args(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args = normalize_args(args);
    if args.get(1).map(String::as_str) == Some("run") {
        return run_cmd::main(args);
    }
    let matches = Cli::command().get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let color = match cli.color {
        ColorArg::Always => Color::Always,
        ColorArg::Never => Color::Never,
        ColorArg::Auto if std::io::stderr().is_terminal() => Color::Always,
        ColorArg::Auto => Color::Never,
    };
    let mut warnings = WarningPolicy { deny_all: cli.werror, ..Default::default() };
    match (parse_codes(&cli.deny), parse_codes(&cli.allow)) {
        (Ok(deny), Ok(allow)) => {
            warnings.deny = deny;
            warnings.allow = allow;
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    if cli.strict_param_limit {
        warnings.deny.push(Code::ParamBufferOver4K);
    }
    let emit = match cli.emit {
        EmitArg::Cubin => Emit::Cubin,
        EmitArg::Obj => Emit::Object,
        EmitArg::Ptx => Emit::Ptx,
        EmitArg::LlvmIr => Emit::LlvmIr,
    };
    let address_size = match cli.address_size {
        AddressSizeArg::Bits32 => AddressSize::Bits32,
        AddressSizeArg::Bits64 => AddressSize::Bits64,
    };
    let options = CompileOptions {
        target: Target { sm: cli.arch, address_size, launch_abi: cli.launch_abi },
        opt_level: cli.opt_level,
        emit,
        ptxas_args: cli.xptxas.clone(),
        nvlink_args: cli.xnvlink.clone(),
        warnings,
        tools: ToolSearch { cuda_home: cli.cuda_home.clone(), ..Default::default() },
        aggregate: cli.aggregate_launches,
        pass_remarks: !cli.rpass.is_empty(),
        tool_timeout: cli.tool_timeout.0,
        overwrite: if cli.overwrite { driver::Overwrite::Any } else { driver::Overwrite::CompilerOutputs },
        preprocess: cli.preprocess.options(&matches, &cli.input),
    };
    let file_name = cli.input.display().to_string();
    let format = cli.error_format;
    let read_started = std::time::Instant::now();
    let source = match driver::read_source(&cli.input) {
        Ok(source) => source,
        Err(CompileError::NotUtf8(e)) => return report_errors(format, &file_name, &e.shown, &[e.diagnostic], color),
        Err(e) => {
            fail(format, &file_name, &e.to_string());
            return ExitCode::FAILURE;
        }
    };
    let read_time = read_started.elapsed();
    let report = |diagnostics: &[Diagnostic]| match format {
        ErrorFormat::Json => eprint!("{}", render::json(diagnostics, &file_name, &source)),
        ErrorFormat::Human if !diagnostics.is_empty() => eprint!("{}", render::human(diagnostics, &file_name, &source, color)),
        ErrorFormat::Human => {}
    };
    let to_stdout = cli.output.as_deref() == Some(std::path::Path::new("-"));
    let result = if to_stdout {
        if matches!(emit, Emit::Cubin | Emit::Object) {
            fail(format, &file_name, "`-o -` writes text; binary output needs a file name");
            return ExitCode::from(2);
        }
        driver::compile(&source, &options).inspect(|compiled| {
            let _ = std::io::stdout().write_all(&compiled.output);
        })
    } else {
        let output = cli.output.clone().unwrap_or_else(|| cli.input.with_extension(emit.extension()));
        driver::compile_inputs_to_file(&source, &[cli.input.as_path()], &output, &options)
    };
    let result = result.map(|mut compiled| {
        show_tool_runs(&compiled.tool_runs, cli.verbose, format, &file_name);
        if cli.time {
            compiled.timings.0.insert(0, (driver::Phase::Read, read_time));
            show_timings(&compiled.timings);
        }
        compiled.warnings
    });
    match result {
        Ok(warnings) => {
            report(&warnings);
            ExitCode::SUCCESS
        }
        Err(CompileError::Diagnostics(diagnostics)) => report_errors(format, &file_name, &source, &diagnostics, color),
        Err(e) => {
            fail_with_code(format, &file_name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Reports the diagnostics of a failed compilation, rendered against `source`, and for people
/// the summary line after them.
fn report_errors(format: ErrorFormat, file_name: &str, source: &str, diagnostics: &[Diagnostic], color: Color) -> ExitCode {
    match format {
        ErrorFormat::Json => eprint!("{}", render::json(diagnostics, file_name, source)),
        ErrorFormat::Human => {
            eprint!("{}", render::human(diagnostics, file_name, source, color));
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            eprintln!("error: could not compile `{file_name}` due to {errors} previous error{}", if errors == 1 { "" } else { "s" });
        }
    }
    ExitCode::FAILURE
}

/// Reports a failure that is not about the source text (a tool, a file, the options).
fn fail(format: ErrorFormat, file_name: &str, message: &str) {
    fail_with_code(format, file_name, None, message)
}

/// [`fail`] for a failure with a stable code: `error[E0700]: ...`, or `"code":"E0700"` in JSON.
fn fail_with_code(format: ErrorFormat, file_name: &str, code: Option<Code>, message: &str) {
    match (format, code) {
        (ErrorFormat::Human, Some(code)) => eprintln!("error[{code}]: {message}"),
        (ErrorFormat::Human, None) => eprintln!("error: {message}"),
        (ErrorFormat::Json, _) => eprint!("{}", render::json_failure_with_code(code, file_name, message)),
    }
}

/// `cdpc --time`: one line a phase, then the total, in seconds.
fn show_timings(timings: &driver::Timings) {
    for (phase, duration) in &timings.0 {
        eprintln!("time: {} {:.6}", phase.name(), duration.as_secs_f64());
    }
    eprintln!("time: total {:.6}", timings.total().as_secs_f64());
}

/// What ptxas and nvlink said: their warnings always (in JSON mode, one warning line), and in
/// text mode with `-v` each command line and what the tool printed to stdout (`-Xptxas -v`).
pub(crate) fn show_tool_runs(runs: &[cdpc::toolchain::ToolRun], verbose: bool, format: ErrorFormat, file_name: &str) {
    if format == ErrorFormat::Json {
        let warnings: String = runs.iter().map(|r| r.stderr.as_str()).collect();
        if !warnings.trim().is_empty() {
            eprint!("{}", render::json_message(cdpc::Severity::Warning, file_name, warnings.trim_end()));
        }
        return;
    }
    for run in runs {
        if verbose {
            eprintln!("{}", run.command);
            eprint!("{}", run.stdout);
        }
        eprint!("{}", run.stderr);
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_args;

    #[test]
    fn the_help_states_the_library_default_time_limit() {
        use clap::Parser;
        let cli = super::Cli::parse_from(["cdpc", "a.cdp"]);
        assert_eq!(cli.tool_timeout.0, Some(cdpc::driver::DEFAULT_TOOL_TIMEOUT));
        assert_eq!(super::Cli::parse_from(["cdpc", "a.cdp", "--tool-timeout", "0"]).tool_timeout.0, None);
    }

    #[test]
    fn nvcc_spellings_become_long_options() {
        let args = ["cdpc", "-arch=sm_80", "-Xptxas", "-v", "-Werror", "a.cdp", "-arch", "sm_90"].map(String::from);
        assert_eq!(normalize_args(args), ["cdpc", "--arch=sm_80", "--Xptxas", "-v", "--Werror", "a.cdp", "--arch", "sm_90"]);
        let args = ["cdpc", "-faggregate-launches=block", "-Rpass=aggregate"].map(String::from);
        assert_eq!(normalize_args(args), ["cdpc", "--faggregate-launches=block", "--Rpass=aggregate"]);
    }
}
