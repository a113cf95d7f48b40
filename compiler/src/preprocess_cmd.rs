//! `cdpc -E` (nvcc's and Clang's preprocess-only mode): a CUDA C++ source's preprocessed text,
//! each device architecture's side and then the host side (`driver::preprocess_cuda`), to
//! standard output or `-o FILE`. ccache's preprocessor mode runs it and hashes the text
//! (docs/CCACHE.md).

use super::{fail, fail_with_code, read_input, report_errors, show_tool_runs, ErrorFormat};
use cdpc::driver::{self, CompileError, CompileOptions, Language};
use cdpc::render::{self, Color};
use cdpc::Code;
use std::path::Path;
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

/// Refuses what `-E` cannot do (reported; the status to exit with): the command line's plan
/// (`plan.rs`) asks before anything runs, and [`run`] again.
pub(crate) fn check(request: &Request<'_>, options: &CompileOptions) -> Result<(), ExitCode> {
    let format = request.format;
    let first = request.inputs.first().map(|p| p.display().to_string()).unwrap_or_default();
    let usage = |message: &str| {
        fail(format, &first, message);
        ExitCode::from(2)
    };
    let [input] = request.inputs else {
        return Err(usage("`-E` preprocesses one source: give one file (each its own `cdpc -E`)"));
    };
    if options.list_headers != driver::HeaderList::None {
        return Err(usage("`-MD` and `-MMD` list the headers of a compilation; `-E` writes no object: leave them out (the line markers of its output name every file it read)"));
    }
    let language = request.language.unwrap_or_else(|| Language::of_path(input));
    if request.language.is_none() && driver::program::ProgramInput::is_host_file(input) {
        fail_with_code(
            format,
            &first,
            Some(Code::OptionUnsupported),
            &format!("`{first}` is a host file: preprocess it with the host compiler (`c++ -E`); cdpc's `-E` is for CUDA C++ (`.cu`, `-x cu`)"),
        );
        return Err(ExitCode::from(2));
    }
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

/// `-E` of the one source [`check`] accepted.
pub(crate) fn run(request: &Request<'_>, options: &CompileOptions, color: Color) -> ExitCode {
    let format = request.format;
    if let Err(status) = check(request, options) {
        return status;
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
            None => super::write_stdout(done.text.as_bytes())?,
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
