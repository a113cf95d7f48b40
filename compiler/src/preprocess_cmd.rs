//! `cdpc -E` (nvcc's and Clang's preprocess-only mode): a CUDA C++ source's preprocessed text,
//! each device architecture's side and then the host side (`driver::preprocess_cuda`), or a
//! host file's from the host compiler, as nvcc's `-E` (`driver::program::preprocess_host_file`),
//! to standard output or `-o FILE`; with `-MD` or `-MMD` also the dependency list a compilation
//! of the source writes, as GCC's `-E -MD` does ([`write_header_list`]). ccache's preprocessor
//! mode runs it and hashes the text (docs/CCACHE.md); sccache runs it on a C file to tell what
//! compiler cdpc is, and on each source to hash it (docs/SCCACHE.md).

use super::command_line::{Cli, ErrorFormat};
use super::outputs::{dependency_rule, dependency_target};
use super::report::{fail, fail_with_code, read_input, report_build, report_errors, show_tool_runs, write_stdout};
use super::toolkit::cuda_release;
use cdpc::driver::{self, CompileError, CompileOptions, Language};
use cdpc::render::{self, Color};
use cdpc::Code;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `-E` is asked for besides the compile options.
pub(crate) struct Request<'a> {
    pub inputs: &'a [std::path::PathBuf],
    pub output: Option<&'a Path>,
    pub language: Option<Language>,
    /// `-gencode`'s images: the device side of each of their architectures.
    pub images: Vec<driver::fatbin::Image>,
    pub format: ErrorFormat,
    pub verbose: bool,
}

/// `-E`'s request, from the command line.
pub(crate) fn request(cli: &Cli) -> Request<'_> {
    Request { inputs: &cli.inputs, output: cli.output.as_deref(), language: cli.language, images: cli.gencode.concat(), format: cli.error_format, verbose: cli.verbose }
}

impl Request<'_> {
    /// Whether the one input is a host file (`.c`, `.cpp`, ...), which the host compiler
    /// preprocesses, as nvcc's `-E` has it.
    fn host_file(&self) -> bool {
        self.language.is_none() && self.inputs.first().is_some_and(|i| driver::program::ProgramInput::is_host_file(i))
    }
}

/// Refuses what `-E` cannot do (reported; the status to exit with): the command line's plan
/// (`plan.rs`) asks before anything runs, and [`run`] again.
pub(crate) fn check(request: &Request<'_>, _options: &CompileOptions) -> Result<(), ExitCode> {
    let format = request.format;
    let first = request.inputs.first().map(|p| p.display().to_string()).unwrap_or_default();
    let usage = |message: &str| {
        fail(format, &first, message);
        ExitCode::from(2)
    };
    let [input] = request.inputs else {
        return Err(usage("`-E` preprocesses one source: give one file (each its own `cdpc -E`)"));
    };
    if request.host_file() {
        return Ok(());
    }
    let language = request.language.unwrap_or_else(|| Language::of_path(input));
    if language != Language::Cuda {
        let what = if language == Language::Ir { "LLVM IR, which has no preprocessor" } else { "the kernel language, whose preprocessor keeps its source map instead of line markers" };
        fail_with_code(
            format,
            &first,
            Some(Code::OptionUnsupported),
            &format!("`-E` writes CUDA C++'s preprocessed source (`.cu`, `-x cu`), and `{first}` is {what}; with ccache, use depend mode and `-MD` (docs/CCACHE.md)"),
        );
        return Err(ExitCode::from(2));
    }
    Ok(())
}

/// `-E` of a host file: the host compiler's text, to `-o`'s file or standard output.
fn run_host(request: &Request<'_>, program: &driver::program::ProgramOptions, options: &CompileOptions) -> ExitCode {
    let format = request.format;
    let input = &request.inputs[0];
    let first = input.display().to_string();
    // A file that cannot be read is cdpc's `E0705`, as for a `.cu` file, not the host compiler's
    // failure.
    if let Err(e) = std::fs::File::open(input) {
        fail_with_code(format, &first, Some(Code::InputNotReadable), &format!("cannot read `{first}`: {}", cdpc::toolchain::io_message(&e)));
        return ExitCode::FAILURE;
    }
    // nvcc's identity macros, as nvcc's `-E` of a host file gives its host compiler: sccache
    // tells nvcc by them, and runs cdpc's steps as it runs nvcc's (`sccache_steps.rs`).
    let mut options = options.clone();
    let release = cdpc::toolchain::Toolchain::discover(&options.tools).ok().as_ref().and_then(cuda_release);
    let identity = release.map(driver::program::identity_macros).unwrap_or_default();
    options.preprocess.macros.splice(0..0, identity.iter().map(|m| cdpc::front::cdp::preprocess::MacroOption::Define(m.trim_start_matches("-D").to_string())));
    let options = &options;
    let result = driver::program::preprocess_host_file(input, program, options).and_then(|(text, tool_runs)| {
        match request.output.filter(|o| *o != Path::new("-")) {
            Some(path) => {
                let guard = cdpc::toolchain::OutputGuard { inputs: vec![input.clone()], overwrite: options.overwrite };
                let out = cdpc::toolchain::OutputFile::prepare_guarded(path, guard).map_err(CompileError::from)?;
                out.commit(&text).map_err(CompileError::from)?;
            }
            None => write_stdout(&text).map_err(CompileError::from)?,
        }
        Ok(tool_runs)
    });
    match result {
        Ok(tool_runs) => {
            show_tool_runs(&tool_runs, request.verbose, format, &first);
            ExitCode::SUCCESS
        }
        Err(driver::BuildError::Other(e)) | Err(driver::BuildError::Source { error: e, .. }) => {
            fail_with_code(format, &first, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
        Err(driver::BuildError::Link(_)) => ExitCode::FAILURE,
    }
}

/// Where `-E -MD` writes its dependency list: `-MF`'s file, else `<stem>.d` in the current
/// folder, as GCC's `-E -MD` without `-o`.
pub(crate) fn header_list_path(cli: &Cli) -> PathBuf {
    cli.dependency_file.clone().unwrap_or_else(|| PathBuf::from(cli.inputs[0].file_name().unwrap_or_default()).with_extension("d"))
}

/// With `-MD` or `-MMD`, `-E`'s dependency list, as GCC's `-E -MD` writes one beside its text
/// (sccache keeps the list its `-E` wrote when a compilation is a cache hit): the Make rule a
/// compilation of the source writes, for `-MT`'s target (else `<stem>.o`, nvcc's `-M`'s) at
/// `-MF`'s path (else `<stem>.d` in the current folder). Its headers are those the compilation
/// reads, found as `-M` finds them: a `.cu` file's from Clang's lists of its preprocessing of
/// each side ([`cuda_headers`]), a host file's by the host compiler's `-M`. `options` are the
/// compilation's (`plan.rs`).
pub(crate) fn write_header_list(cli: &Cli, program: &driver::program::ProgramOptions, options: &CompileOptions, color: Color) -> ExitCode {
    let format = cli.error_format;
    let source = &cli.inputs[0];
    let file_name = source.display().to_string();
    let headers = if cli.language.is_none() && driver::program::ProgramInput::is_host_file(source) {
        match driver::program::host_file_headers(source, options.list_headers, program, options) {
            Ok((headers, tool_runs)) => {
                show_tool_runs(&tool_runs, cli.verbose, format, &file_name);
                headers
            }
            Err(e) => return report_build(cli, source, Err(e), color),
        }
    } else {
        let file = match read_input(source, options, format, &file_name, color) {
            Ok(file) => file,
            Err(code) => return code,
        };
        match cuda_headers(&file.shown, options) {
            // Its warnings are `-E`'s, said already.
            Ok(done) => done.headers,
            Err(CompileError::Diagnostics(diagnostics)) => return report_errors(format, &file_name, &file.shown, &diagnostics, color),
            Err(e) => {
                fail_with_code(format, &file_name, e.code(), &e.to_string());
                return ExitCode::FAILURE;
            }
        }
    };
    let target = dependency_target(cli, source);
    let path = header_list_path(cli);
    let text = dependency_rule(cli, &target, source, &headers);
    let guard = cdpc::toolchain::OutputGuard { inputs: vec![source.clone()], overwrite: options.overwrite };
    match cdpc::toolchain::OutputFile::prepare_guarded(&path, guard).and_then(|file| file.commit(text.as_bytes())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let e = CompileError::from(e);
            fail_with_code(format, &file_name, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// `-E` of CUDA C++ `source` with the headers a compilation with `options` reads (its `-MD`
/// list, `Preprocessed::headers`), from Clang's lists of its preprocessing of each side: no
/// compilation runs. The device sides are
/// those of `options`' images (`-gencode`), else of its architecture.
pub(crate) fn cuda_headers(source: &str, options: &CompileOptions) -> Result<driver::Preprocessed, CompileError> {
    let options = CompileOptions { list_headers: if options.list_headers == driver::HeaderList::None { driver::HeaderList::All } else { options.list_headers }, ..options.clone() };
    driver::preprocess_cuda(source, &options, &driver::fatbin::architectures(&options.host_object_images))
}

/// `-E` of the one source [`check`] accepted.
pub(crate) fn run(request: &Request<'_>, program: &driver::program::ProgramOptions, options: &CompileOptions, color: Color) -> ExitCode {
    let format = request.format;
    if let Err(status) = check(request, options) {
        return status;
    }
    if request.host_file() {
        return run_host(request, program, options);
    }
    let input = &request.inputs[0];
    let first = input.display().to_string();
    let file = match read_input(input, options, format, &first, color) {
        Ok(file) => file,
        Err(code) => return code,
    };
    let archs = driver::fatbin::architectures(&request.images);
    let result = driver::preprocess_cuda(&file.shown, options, &archs).and_then(|done| {
        match request.output.filter(|o| *o != Path::new("-")) {
            Some(path) => {
                let guard = cdpc::toolchain::OutputGuard { inputs: vec![input.clone()], overwrite: options.overwrite };
                let out = cdpc::toolchain::OutputFile::prepare_guarded(path, guard)?;
                out.commit(done.text.as_bytes())?;
            }
            None => write_stdout(done.text.as_bytes())?,
        }
        Ok(done)
    });
    match result {
        Ok(done) => {
            show_tool_runs(&done.tool_runs, request.verbose, format, &first);
            match format {
                ErrorFormat::Json => eprint!("{}", render::json(&done.warnings, &first, &file.shown)),
                ErrorFormat::Human if !done.warnings.is_empty() => eprint!("{}", render::human(&done.warnings, &first, &file.shown, color)),
                ErrorFormat::Human => {}
            }
            ExitCode::SUCCESS
        }
        Err(CompileError::Diagnostics(diagnostics)) => report_errors(format, &first, &file.shown, &diagnostics, color),
        Err(e) => {
            fail_with_code(format, &first, e.code(), &e.to_string());
            ExitCode::FAILURE
        }
    }
}
