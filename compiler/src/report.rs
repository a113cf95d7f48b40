//! How the command reports: diagnostics rendered for people or as JSON lines, failures with and
//! without a stable code, the tools' runs (`-v`) and warnings, the phases' times (`--time`,
//! nvcc's `-time`), and what goes to standard output.

use super::command_line::{Cli, ErrorFormat};
use cdpc::driver::{self, BuildError, CompileError, CompileOptions};
use cdpc::render::{self, Color};
use cdpc::{Code, Diagnostic, SmVersion};
use std::io::Write;
use std::process::ExitCode;

/// Reports a failure that is not about the source text (a tool, a file, the options).
pub(crate) fn fail(format: ErrorFormat, file_name: &str, message: &str) {
    fail_with_code(format, file_name, None, message)
}

/// [`fail`] for a failure with a stable code: `error[E0700]: ...`, or `"code":"E0700"` in JSON.
pub(crate) fn fail_with_code(format: ErrorFormat, file_name: &str, code: Option<Code>, message: &str) {
    match (format, code) {
        (ErrorFormat::Human, Some(code)) => eprintln!("error[{code}]: {message}"),
        (ErrorFormat::Human, None) => eprintln!("error: {message}"),
        (ErrorFormat::Json, _) => eprint!("{}", render::json_failure_with_code(code, file_name, message)),
    }
}

/// Reports the diagnostics of a failed compilation, rendered against `source`, and for people
/// the summary line after them.
pub(crate) fn report_errors(format: ErrorFormat, file_name: &str, source: &str, diagnostics: &[Diagnostic], color: Color) -> ExitCode {
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

/// A file's warnings (or, as JSON, its empty list), rendered to standard error.
pub(crate) fn report_warnings(format: ErrorFormat, file_name: &str, source: &str, diagnostics: &[Diagnostic], color: Color) {
    match format {
        ErrorFormat::Json => eprint!("{}", render::json(diagnostics, file_name, source)),
        ErrorFormat::Human if !diagnostics.is_empty() => eprint!("{}", render::human(diagnostics, file_name, source, color)),
        ErrorFormat::Human => {}
    }
}

/// The input file read as the driver reads it; a file that is not UTF-8 or cannot be read is
/// reported (under `file_name`) and its exit status returned.
pub(crate) fn read_input(input: &std::path::Path, options: &CompileOptions, format: ErrorFormat, file_name: &str, color: Color) -> Result<driver::InputFile, ExitCode> {
    match driver::InputFile::read(input, options) {
        Ok(file) => Ok(file),
        Err(CompileError::NotUtf8(e)) => Err(report_errors(format, file_name, &e.shown, &[e.diagnostic], color)),
        Err(e) => {
            fail_with_code(format, file_name, e.code(), &e.to_string());
            Err(ExitCode::FAILURE)
        }
    }
}

/// [`report_build`] of a program's build, a device link or a host file's compile, with its
/// phase times under `--time`.
pub(crate) fn report_built(cli: &Cli, output: &std::path::Path, result: Result<driver::program::Built, BuildError>, color: Color) -> ExitCode {
    let result = result.and_then(|built| {
        show_timings(cli, &built.timings, None, Some(output)).map_err(|e| BuildError::Other(e.into()))?;
        Ok((built.tool_runs, built.warnings))
    });
    report_build(cli, output, result, color)
}

/// Reports a build of several files: tool runs and warnings, or what failed.
pub(crate) fn report_build(cli: &Cli, output: &std::path::Path, result: Result<(Vec<cdpc::toolchain::ToolRun>, Vec<driver::SourceWarnings>), BuildError>, color: Color) -> ExitCode {
    let format = cli.error_format;
    let output_name = output.display().to_string();
    match result {
        Ok((tool_runs, warnings)) => {
            show_tool_runs(&tool_runs, cli.verbose, format, &output_name);
            for unit in &warnings {
                match format {
                    ErrorFormat::Json => eprint!("{}", render::json(&unit.warnings, &unit.name, &unit.text)),
                    ErrorFormat::Human if !unit.warnings.is_empty() => eprint!("{}", render::human(&unit.warnings, &unit.name, &unit.text, color)),
                    ErrorFormat::Human => {}
                }
            }
            ExitCode::SUCCESS
        }
        Err(BuildError::Source { name, text, error: CompileError::Diagnostics(d) }) => report_errors(format, &name, &text, &d, color),
        Err(BuildError::Source { name, text, error: CompileError::NotUtf8(e) }) => report_errors(format, &name, &text, &[e.diagnostic], color),
        Err(BuildError::Source { name, error, .. }) => {
            fail_with_code(format, &name, error.code(), &error.to_string());
            ExitCode::FAILURE
        }
        Err(BuildError::Link(diagnostics)) => {
            for d in &diagnostics {
                // Render against the file of the first label that has one: each label says its file.
                let file = d.labels.iter().find_map(|l| l.file.clone());
                let (name, text) = file.as_deref().map_or(("<link>", ""), |f| (f.name.as_str(), f.text.as_str()));
                match format {
                    ErrorFormat::Json => eprint!("{}", render::json(std::slice::from_ref(d), name, text)),
                    ErrorFormat::Human => eprint!("{}", render::human(std::slice::from_ref(d), name, text, color)),
                }
            }
            if format == ErrorFormat::Human {
                let errors = diagnostics.len();
                eprintln!("error: could not link `{output_name}` due to {errors} previous error{}", if errors == 1 { "" } else { "s" });
            }
            ExitCode::FAILURE
        }
        Err(BuildError::Other(e)) => {
            fail_with_code(format, &output_name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
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

/// When this run of cdpc started ([`mark_start`]), for the total that `--time` prints.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Notes the start of this run of cdpc: `--time`'s total counts from here.
pub(crate) fn mark_start() {
    STARTED.get_or_init(std::time::Instant::now);
}

/// The whole run's wall-clock time so far, from [`mark_start`]; the phases' sum where no start
/// was noted. Not the phases' sum: the ptxas runs of a module cut in parts, of several
/// architectures or of several files run at the same time, and the tools started early wait
/// while code is generated, so the phases overlap.
fn total(timings: &driver::Timings) -> std::time::Duration {
    STARTED.get().map_or_else(|| timings.total(), |started| started.elapsed())
}

/// The phases' times, as the command line asks: `--time`, one line a phase to standard error,
/// then the total (the run's wall-clock time, [`total`]), in seconds; nvcc's `-time FILE`
/// ([`time_table`]), appended to the file.
pub(crate) fn show_timings(cli: &Cli, timings: &driver::Timings, source: Option<&std::path::Path>, output: Option<&std::path::Path>) -> Result<(), cdpc::toolchain::ToolError> {
    if cli.time {
        for (phase, duration) in &timings.0 {
            eprintln!("time: {} {:.6}", phase.name(), duration.as_secs_f64());
        }
        eprintln!("time: total {:.6}", total(timings).as_secs_f64());
    }
    let Some(file) = &cli.time_file else { return Ok(()) };
    if file == std::path::Path::new("-") {
        return write_stdout(time_table(timings, source, output, cli.arch, true).as_bytes());
    }
    use std::io::Write;
    let failed = |source| cdpc::toolchain::ToolError::OutputIo { path: file.clone(), source };
    let mut table = std::fs::OpenOptions::new().create(true).append(true).open(file).map_err(failed)?;
    let empty = table.metadata().map_err(failed)?.len() == 0;
    // One write, so that the rows of compilations appending at once (`make -j`) do not mix.
    table.write_all(time_table(timings, source, output, cli.arch, empty).as_bytes()).map_err(failed)
}

/// nvcc's `-time` table of a compilation (nvcc 13.5's columns and separators, measured): a row
/// per phase, `source , phase , inputs , output , arch , tool , milliseconds , ms`, the tool
/// `cdpc`, then the whole's row (nvcc's last row is its driver's, `nvcc (driver)`); with
/// `heading`, the column names first, as nvcc writes them into an empty file.
pub(crate) fn time_table(timings: &driver::Timings, source: Option<&std::path::Path>, output: Option<&std::path::Path>, arch: SmVersion, heading: bool) -> String {
    let source = source.map(|p| p.display().to_string()).unwrap_or_default();
    let output = output.map(|p| p.display().to_string()).unwrap_or_default();
    let mut table = String::new();
    if heading {
        table.push_str("source file name , phase name , phase input files , phase output file , arch , tool, metric , unit\n");
    }
    for (phase, duration) in &timings.0 {
        table.push_str(&format!("{source} , {} , {source}  , {output} , {arch} , cdpc , {:.4} , ms\n", phase.name(), duration.as_secs_f64() * 1e3));
    }
    table.push_str(&format!(" , cdpc (total) ,  , {output} ,  , cdpc , {:.4} , ms\n", total(timings).as_secs_f64() * 1e3));
    table
}

/// `bytes` to standard output. A closed pipe or a full disk behind it is the output failing, as
/// a file's would; a reader that stopped early (`| head`) is not.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), cdpc::toolchain::ToolError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(cdpc::toolchain::ToolError::OutputIo { path: "<stdout>".into(), source }),
    }
}
