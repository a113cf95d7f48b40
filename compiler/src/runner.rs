//! Runs the plan's tasks ([`run_task`]): each source's compile, a link, a fat binary, a
//! library, a program and `-run`, each reporting what it says. What runs, and with what, the
//! plan decided before (`plan.rs`).

use super::command_line::Cli;
use super::outputs::{dependency_rule, dependency_target, make_escaped, runnable};
use super::plan::Task;
use super::preprocess_cmd;
use super::report::{fail, fail_with_code, read_input, report_build, report_built, report_errors, report_warnings, show_timings, show_tool_runs, write_stdout};
use super::toolkit::verbose_header;
use cdpc::driver::{self, BuildError, CompileError, CompileOptions, Emit, Input, LinkOptions};
use cdpc::render::Color;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs one task of the plan's (`plan::plan`), reporting what it says; its exit status.
pub(crate) fn run_task(cli: &Cli, task: Task, program: &driver::program::ProgramOptions, options: &CompileOptions, color: Color) -> ExitCode {
    match task {
        Task::Preprocess { listing } => {
            let status = preprocess_cmd::run(&preprocess_cmd::request(cli), program, options, color);
            // `-E -MD`: the dependency list too, once the text was written.
            match listing {
                Some(compile) if status == ExitCode::SUCCESS => preprocess_cmd::write_header_list(cli, program, &compile, color),
                _ => status,
            }
        }
        Task::ListDependencies { sources, output, emit } => generate_dependencies(cli, &sources, &output, emit, program, options, color),
        Task::Library { inputs, output, archiver, archive_args, options } => {
            let result = driver::program::build_library(&inputs, &output, program, archiver.as_deref(), &archive_args, &options);
            report_built(cli, &output, result, color)
        }
        Task::DeviceLink { inputs, output, options } => {
            let result = driver::program::device_link_to_file(&inputs, &output, program, &options);
            report_built(cli, &output, result, color)
        }
        Task::Program { inputs, output, options } => {
            if cli.verbose {
                eprint!("{}", verbose_header(cli));
            }
            let result = driver::program::build_program(&inputs, &output, program, &options);
            report_built(cli, &output, result, color)
        }
        Task::Run { program, args } => run_program(cli, &program, &args),
        Task::HostCompile { source, output, dependencies } => {
            let result = driver::program::compile_host_file(&source, &output, program, options).and_then(|(built, headers)| {
                if let Some(path) = &dependencies {
                    write_dependencies(cli, &source, Some(&output), path, &headers, options.overwrite)?;
                }
                Ok(built)
            });
            report_built(cli, &output, result, color)
        }
        Task::Compile { source, output, dependencies, header, options } => compile_one(cli, &source, &output, dependencies.as_deref(), header.as_deref(), &options, color),
        Task::Fatbin { inputs, images, link, output, dependencies, options } => build_fatbin(cli, &inputs, &link, &images, &output, dependencies.as_deref(), &options, color),
        Task::Link { inputs, link, output } => link_inputs(cli, &inputs, &link, &output, options, color),
    }
}

/// One source, compiled on its own to what `options.emit` names: the whole-program compile,
/// and each file of `-dc`; its dependency list to `dependencies` and its launchers' header to
/// `header` (the plan's paths, those `-###` prints).
pub(crate) fn compile_one(
    cli: &Cli,
    input: &std::path::Path,
    output: &driver::jobs::Output,
    dependencies: Option<&std::path::Path>,
    header: Option<&std::path::Path>,
    options: &CompileOptions,
    color: Color,
) -> ExitCode {
    let file_name = input.display().to_string();
    let format = cli.error_format;
    let read_started = std::time::Instant::now();
    let file = match read_input(input, options, format, &file_name, color) {
        Ok(file) => file,
        Err(code) => return code,
    };
    let source = file.shown.as_str();
    let read_time = read_started.elapsed();
    // The output's path as a dependency list's target names it (what `make` builds).
    let output_path = match output {
        driver::jobs::Output::File(path) => Some(path.as_path()),
        _ => None,
    };
    // `plan` refused binary output to stdout.
    let result = match output_path {
        None => file.compile(options).and_then(|compiled| {
            write_stdout(&compiled.output)?;
            Ok(compiled)
        }),
        Some(path) => file.compile_to_file(&[input], path, options),
    };
    let result = result.and_then(|compiled| match (header, &compiled.header) {
        (Some(path), Some(header)) => {
            let guard = cdpc::toolchain::OutputGuard { inputs: vec![input.to_path_buf()], overwrite: options.overwrite };
            let file = cdpc::toolchain::OutputFile::prepare_guarded(path, guard)?;
            file.commit(header.as_bytes())?;
            Ok(compiled)
        }
        _ => Ok(compiled),
    });
    let result = result.and_then(|compiled| {
        if let Some(path) = dependencies {
            write_dependencies(cli, input, output_path, path, &compiled.headers, options.overwrite)?;
        }
        Ok(compiled)
    });
    let result = result.and_then(|mut compiled| {
        show_tool_runs(&compiled.tool_runs, cli.verbose, format, &file_name);
        compiled.timings.0.insert(0, (driver::Phase::Read, read_time));
        show_timings(cli, &compiled.timings, Some(input), output_path)?;
        Ok(compiled.warnings)
    });
    match result {
        Ok(warnings) => {
            report_warnings(format, &file_name, source, &warnings, color);
            ExitCode::SUCCESS
        }
        Err(CompileError::Diagnostics(diagnostics)) => report_errors(format, &file_name, source, &diagnostics, color),
        Err(e) => {
            fail_with_code(format, &file_name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Writes the dependency list of `input`'s compilation (`-MD`) to `path` (the plan's,
/// `outputs::dependency_path`): [`dependency_rule`] for `-MT`'s target or the output.
pub(crate) fn write_dependencies(
    cli: &Cli,
    input: &std::path::Path,
    output: Option<&std::path::Path>,
    path: &std::path::Path,
    headers: &[PathBuf],
    overwrite: driver::Overwrite,
) -> Result<(), CompileError> {
    let target = match (&cli.dependency_target, output) {
        (Some(target), _) => target.clone(),
        (None, Some(output)) => make_escaped(&output.display().to_string()),
        (None, None) => make_escaped(&input.display().to_string()),
    };
    let text = dependency_rule(cli, &target, input, headers);
    let guard = cdpc::toolchain::OutputGuard { inputs: vec![input.to_path_buf()], overwrite };
    let file = cdpc::toolchain::OutputFile::prepare_guarded(path, guard)?;
    file.commit(text.as_bytes())?;
    Ok(())
}

/// nvcc's `-M` and `-MM`: the headers each source's `-dc` reads (CUDA C++'s from Clang's lists of
/// its preprocessing of both sides, no compilation; the kernel language and LLVM IR compiled,
/// written nowhere; `-MM` leaves out system folders' as `-MMD` does,
/// where nvcc's `-MM` keeps CUDA's), a host file's from its host compiler's `-M` or `-MM`, as
/// nvcc's; one rule each, for `<stem>.o` in `-odir`'s folder (nvcc's target, measured with nvcc
/// 13.5) or `-MT`'s, all of them to `-MF`'s file, else `-o`'s, else standard output, written
/// only when every source compiled (`output`, the plan's).
/// `plan` refused objects and libraries among `sources`.
pub(crate) fn generate_dependencies(
    cli: &Cli,
    sources: &[PathBuf],
    output: &driver::jobs::Output,
    dc_emit: Emit,
    program: &driver::program::ProgramOptions,
    options: &CompileOptions,
    color: Color,
) -> ExitCode {
    let format = cli.error_format;
    let mut text = String::new();
    for source in sources {
        let file_name = source.display().to_string();
        let target = dependency_target(cli, source);
        if cli.language.is_none() && driver::program::ProgramInput::is_host_file(source) {
            match driver::program::host_file_headers(source, options.list_headers, program, options) {
                Ok((headers, tool_runs)) => {
                    show_tool_runs(&tool_runs, cli.verbose, format, &file_name);
                    text.push_str(&dependency_rule(cli, &target, source, &headers));
                    continue;
                }
                Err(e) => return report_build(cli, source, Err(e), color),
            }
        }
        let language = cli.language.unwrap_or_else(|| driver::Language::of_path(source));
        let emit = if language == driver::Language::Ir && dc_emit == Emit::HostObject { Emit::Object } else { dc_emit };
        let options = CompileOptions { emit, separate: true, ..options.clone() };
        let file = match read_input(source, &options, format, &file_name, color) {
            Ok(file) => file,
            Err(code) => return code,
        };
        // CUDA C++'s list from Clang's preprocessing of each side, no compilation.
        if language == driver::Language::Cuda {
            match preprocess_cmd::cuda_headers(&file.shown, &options) {
                Ok(done) => {
                    show_tool_runs(&done.tool_runs, cli.verbose, format, &file_name);
                    report_warnings(format, &file_name, &file.shown, &done.warnings, color);
                    text.push_str(&dependency_rule(cli, &target, source, &done.headers));
                    continue;
                }
                Err(CompileError::Diagnostics(diagnostics)) => return report_errors(format, &file_name, &file.shown, &diagnostics, color),
                Err(e) => {
                    fail_with_code(format, &file_name, e.code(), &e.to_string());
                    return ExitCode::FAILURE;
                }
            }
        }
        match file.compile_to_file(&[source], std::path::Path::new("/dev/null"), &options) {
            Ok(compiled) => {
                show_tool_runs(&compiled.tool_runs, cli.verbose, format, &file_name);
                report_warnings(format, &file_name, &file.shown, &compiled.warnings, color);
                text.push_str(&dependency_rule(cli, &target, source, &compiled.headers));
            }
            Err(CompileError::Diagnostics(diagnostics)) => return report_errors(format, &file_name, &file.shown, &diagnostics, color),
            Err(e) => {
                fail_with_code(format, &file_name, e.code(), &e.to_string());
                return ExitCode::FAILURE;
            }
        }
    }
    let written = match output {
        driver::jobs::Output::File(path) => {
            let guard = cdpc::toolchain::OutputGuard { inputs: sources.to_vec(), overwrite: options.overwrite };
            cdpc::toolchain::OutputFile::prepare_guarded(path, guard).and_then(|file| file.commit(text.as_bytes())).map_err(|e| (path.display().to_string(), e))
        }
        _ => write_stdout(text.as_bytes()).map_err(|e| ("<stdout>".to_string(), e)),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err((name, e)) => {
            let e = CompileError::Tool(e);
            fail_with_code(format, &name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Several inputs, objects or libraries: each source compiled on its own, then one link.
pub(crate) fn link_inputs(cli: &Cli, inputs: &[Input], link: &LinkOptions, output: &std::path::Path, options: &CompileOptions, color: Color) -> ExitCode {
    let result = driver::link_files(inputs, link, output, options).and_then(|linked| {
        show_timings(cli, &linked.timings, None, Some(output)).map_err(|e| BuildError::Other(e.into()))?;
        Ok((linked.tool_runs, linked.warnings))
    });
    report_build(cli, output, result, color)
}

/// `-gencode`: a fat binary of the inputs, written to `output` only when it is complete.
pub(crate) fn build_fatbin(
    cli: &Cli,
    inputs: &[Input],
    link: &LinkOptions,
    images: &[cdpc::driver::fatbin::Image],
    output: &std::path::Path,
    dependencies: Option<&std::path::Path>,
    options: &CompileOptions,
    color: Color,
) -> ExitCode {
    let guard = cdpc::toolchain::OutputGuard { inputs: inputs.iter().map(|i| i.path().to_path_buf()).collect(), overwrite: options.overwrite };
    let result = cdpc::toolchain::OutputFile::prepare_guarded(output, guard).map_err(|e| BuildError::Other(e.into())).and_then(|file| {
        let fatbin = cdpc::driver::fatbin::fatbin(inputs, link, images, options)?;
        file.commit(&fatbin.bytes).map_err(|e| BuildError::Other(e.into()))?;
        if let (Some(path), [input]) = (dependencies, inputs) {
            write_dependencies(cli, input.path(), Some(output), path, &fatbin.headers, options.overwrite)?;
        }
        Ok((fatbin.tool_runs, fatbin.warnings))
    });
    report_build(cli, output, result, color)
}

/// nvcc's `-run`: the program just built, run as `./PROGRAM` (the path as given where it has a
/// folder) with `args` (`--run-args`' words); its exit status is cdpc's (128 + the signal that
/// ended it).
pub(crate) fn run_program(cli: &Cli, program: &std::path::Path, args: &[String]) -> ExitCode {
    let path = runnable(program);
    match std::process::Command::new(&path).args(args).status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            let code = status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            fail(cli.error_format, &path.display().to_string(), &format!("the program could not be started: {e}"));
            ExitCode::FAILURE
        }
    }
}
