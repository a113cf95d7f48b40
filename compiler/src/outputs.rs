//! The names the command line gives what it writes and runs: where an output goes that `-o`
//! does not name, the Make rules of dependency lists, and `-run`'s program and arguments. The
//! plan prints them as jobs (`-###`) and the runner writes them, so both name the same files.

use super::command_line::Cli;
use std::path::PathBuf;

/// The extension of the file `-o` names.
pub(crate) fn output_extension(cli: &Cli) -> Option<&str> {
    cli.output.as_deref().and_then(std::path::Path::extension).and_then(std::ffi::OsStr::to_str)
}

/// Where an output goes that `-o` does not name, as nvcc (and gcc) put it: `input`'s name with
/// `extension`, in the current folder or `-odir`'s, not beside the input.
pub(crate) fn default_output(cli: &Cli, input: &std::path::Path, extension: &str) -> PathBuf {
    cli.output_directory.clone().unwrap_or_default().join(PathBuf::from(input.file_name().unwrap_or_default()).with_extension(extension))
}

/// Where `-MD`'s list of `input`'s compilation goes: `-MF`'s file, or the output's name with `.d`
/// (the input's, in the current folder, for output to stdout).
pub(crate) fn dependency_path(cli: &Cli, input: &std::path::Path, output: Option<&std::path::Path>) -> PathBuf {
    match (&cli.dependency_file, output) {
        (Some(file), _) => file.clone(),
        (None, Some(output)) => output.with_extension("d"),
        (None, None) => PathBuf::from(input.file_name().unwrap_or_default()).with_extension("d"),
    }
}

/// `-M`'s target for `source`: `-MT`'s, else `<stem>.o` in `-odir`'s folder, as nvcc's.
pub(crate) fn dependency_target(cli: &Cli, source: &std::path::Path) -> String {
    let object = cli.output_directory.clone().unwrap_or_default().join(PathBuf::from(source.file_name().unwrap_or_default()).with_extension("o"));
    cli.dependency_target.clone().unwrap_or_else(|| make_escaped(&object.display().to_string()))
}

/// One Make rule: `target` depending on `input` and `headers`, as nvcc writes it
/// (`target : source \`, the headers indented below), with `-MP` an empty rule for each header.
pub(crate) fn dependency_rule(cli: &Cli, target: &str, input: &std::path::Path, headers: &[PathBuf]) -> String {
    let mut text = format!("{target} : {}", make_escaped(&input.display().to_string()));
    for header in headers {
        text.push_str(&format!(" \\\n    {}", make_escaped(&header.display().to_string())));
    }
    text.push('\n');
    if cli.phony_targets {
        for header in headers {
            text.push_str(&format!("\n{}:\n", make_escaped(&header.display().to_string())));
        }
    }
    text
}

/// A path as a Make rule needs it: spaces and `#` escaped with `\`, `$` doubled (gcc's).
pub(crate) fn make_escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            ' ' => out.push_str("\\ "),
            '#' => out.push_str("\\#"),
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

/// `-run`'s program as it is started: `./PROGRAM` where the path has no folder.
pub(crate) fn runnable(program: &std::path::Path) -> PathBuf {
    if program.components().count() > 1 {
        program.to_path_buf()
    } else {
        std::path::Path::new(".").join(program)
    }
}

/// `--run-args`' words: each value split at commas and white space, as nvcc splits them.
pub(crate) fn run_arguments(cli: &Cli) -> Vec<String> {
    cli.run_args.iter().flat_map(|list| list.split(',')).flat_map(str::split_whitespace).map(String::from).collect()
}
