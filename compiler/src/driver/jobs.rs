//! The jobs of one command line, said before any of them runs: what `cdpc -###` (nvcc's
//! `-dryrun`) prints, one line a job, in the order they run, and then runs none of them.
//!
//! The `cdpc` program plans its command line into tasks first (`compiler/src/plan.rs`),
//! every usage error found there, and then runs the tasks one after the other or prints their
//! jobs; a task that builds a program or a library prints the steps its build runs
//! ([`super::program::program_jobs`], [`super::program::library_jobs`]: the names of its
//! intermediate files, which inputs the host compiler compiles, whether a device link runs),
//! planned once for both. Clang's compilations and LLVM run inside
//! cdpc, so a job is a step of cdpc's (a source compiled, a device link, a host link), not one
//! tool's command line; `-v` prints the command lines of the tools each job runs, as it runs
//! them.
//!
//! A job's intermediate files live in the build's work folder, made when the build runs and
//! removed after it: printed as [`WORK`] (nvcc's `-dryrun` prints its `/tmp/tmpxft_*` names).

use super::{CompileOptions, Emit, Language};
use std::fmt;
use std::path::{Path, PathBuf};

/// The work folder's place in a printed job's paths.
pub const WORK: &str = "$WORK";

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `-E`: CUDA C++ preprocessed, each device side and the host side.
    Preprocess,
    /// `-M`, `-MM`: the headers a source reads, as a Make rule.
    ListHeaders,
    /// A source compiled by cdpc (the kernel language, CUDA C++ or LLVM IR).
    Compile,
    /// A host file (`.cpp`, `.c`, ...) compiled by the host compiler.
    HostCompile,
    /// nvlink over relocatable device code, and the registration object of its cubins.
    DeviceLink,
    /// Device code linked into one cubin (several inputs, `-dlink --emit cubin`).
    Link,
    /// A fat binary of several images (`-gencode`, `-fatbin`).
    Fatbin,
    /// A static library (`-lib`).
    Archive,
    /// The host linker: a program or a shared library.
    HostLink,
    /// A program run (`-run`).
    Run,
}

impl Action {
    /// The name a printed job carries.
    pub fn name(self) -> &'static str {
        match self {
            Action::Preprocess => "preprocess",
            Action::ListHeaders => "list headers",
            Action::Compile => "compile",
            Action::HostCompile => "host compile",
            Action::DeviceLink => "device link",
            Action::Link => "link",
            Action::Fatbin => "fat binary",
            Action::Archive => "archive",
            Action::HostLink => "host link",
            Action::Run => "run",
        }
    }
}

/// Where a job's output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A file (in the work folder where it starts with [`WORK`]).
    File(PathBuf),
    /// Standard output (`-o -`, `-E` and `-M` without a file).
    Stdout,
    /// Nothing written (a run).
    Nothing,
}

/// One job: its action, its inputs and its output, and what it makes, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// What it does.
    pub action: Action,
    /// The files it reads, in order.
    pub inputs: Vec<PathBuf>,
    /// Where its output goes.
    pub output: Output,
    /// The other files it writes: `-MD`'s dependency list, `--host-header`'s header.
    pub also: Vec<PathBuf>,
    /// What the output is (`CUDA C++ to a host object for sm_90`), or the run's arguments.
    pub note: String,
}

impl Job {
    /// A job of `action` over `inputs`.
    pub fn new(action: Action, inputs: Vec<PathBuf>, output: Output, note: impl Into<String>) -> Job {
        Job { action, inputs, output, also: Vec::new(), note: note.into() }
    }

    /// A compilation of `source` to `output` with `options`: the note says its language, what it
    /// writes and for which architecture.
    pub fn compile(source: &Path, output: Output, options: &CompileOptions) -> Job {
        let mut options = options.clone();
        options.preprocess.input = Some(source.to_path_buf());
        Job::new(Action::Compile, vec![source.to_path_buf()], output, compile_note(&options))
    }
}

/// `CUDA C++ to a host object for sm_90, relocatable device code`: the language, the output,
/// the architecture (each image's with `-gencode`), and for a host object whether its device
/// code is relocatable (`-dc`, `-rdc=true`) or a whole program's, linked already (nvcc's `-c`).
pub fn compile_note(options: &CompileOptions) -> String {
    let language = match Language::of(options) {
        Language::Cdp => "the kernel language",
        Language::Cuda => "CUDA C++",
        Language::Ir => "LLVM IR",
    };
    let what = match options.emit {
        Emit::LlvmIr => "LLVM IR",
        Emit::Ptx => "PTX",
        Emit::Object => "a device object",
        Emit::Cubin => "a cubin",
        Emit::HostObject => "a host object",
    };
    let archs: Vec<String> = if options.host_object_images.is_empty() || options.emit != Emit::HostObject {
        vec![options.target.sm.to_string()]
    } else {
        options.host_object_images.iter().map(ToString::to_string).collect()
    };
    let mut note = format!("{language} to {what} for {}", archs.join(", "));
    if options.emit == Emit::HostObject {
        note.push_str(match options.whole_program {
            true if options.pools_its_program() => ", whole-program device code (linked, with cdpc's allocation pool where it allocates)",
            true => ", whole-program device code (linked)",
            false if super::lto::carried(options) => ", relocatable device code and its IR (-dlto)",
            false => ", relocatable device code",
        });
    }
    note
}

/// A path as a printed job shows it: quoted, with `"` and `\` escaped.
fn quoted(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

impl fmt::Display for Job {
    /// `# "compile", inputs: ["a.cu"], output: "a.o", also: ["a.d"] (CUDA C++ to a host object ...)`,
    /// after Clang's `-ccc-print-bindings`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inputs: Vec<String> = self.inputs.iter().map(|p| quoted(p)).collect();
        write!(f, "# \"{}\", inputs: [{}]", self.action.name(), inputs.join(", "))?;
        match &self.output {
            Output::File(path) => write!(f, ", output: {}", quoted(path))?,
            Output::Stdout => write!(f, ", output: <stdout>")?,
            Output::Nothing => {}
        }
        if !self.also.is_empty() {
            let also: Vec<String> = self.also.iter().map(|p| quoted(p)).collect();
            write!(f, ", also: [{}]", also.join(", "))?;
        }
        if !self.note.is_empty() {
            write!(f, " ({})", self.note)?;
        }
        Ok(())
    }
}

/// `path` in the work folder: `$WORK/name`.
pub fn in_work(name: &str) -> PathBuf {
    Path::new(WORK).join(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::fatbin::Image;
    use crate::target::SmVersion;

    #[test]
    fn a_job_prints_as_a_binding() {
        let options = CompileOptions { emit: Emit::HostObject, ..CompileOptions::default() };
        let job = Job::compile(Path::new("src/a b.cu"), Output::File(in_work("0-a_b.o")), &options);
        assert_eq!(job.to_string(), "# \"compile\", inputs: [\"src/a b.cu\"], output: \"$WORK/0-a_b.o\" (CUDA C++ to a host object for sm_90, relocatable device code)");
        let run = Job::new(Action::Run, vec![PathBuf::from("./app")], Output::Nothing, "");
        assert_eq!(run.to_string(), "# \"run\", inputs: [\"./app\"]");
        let mut listed = Job::new(Action::HostCompile, vec![PathBuf::from("m.cpp")], Output::File(PathBuf::from("m.o")), "");
        listed.also.push(PathBuf::from("m.d"));
        assert_eq!(listed.to_string(), "# \"host compile\", inputs: [\"m.cpp\"], output: \"m.o\", also: [\"m.d\"]");
        let text = Job::new(Action::Preprocess, vec![PathBuf::from("q\"uote.cu")], Output::Stdout, "");
        assert_eq!(text.to_string(), "# \"preprocess\", inputs: [\"q\\\"uote.cu\"], output: <stdout>");
    }

    #[test]
    fn a_notes_architectures_are_the_images_of_a_host_object() {
        let sm80: SmVersion = "sm_80".parse().unwrap();
        let options = CompileOptions { emit: Emit::HostObject, whole_program: true, host_object_images: vec![Image::Cubin(sm80), Image::Ptx(sm80)], ..CompileOptions::default() };
        let mut with_name = options.clone();
        with_name.preprocess.input = Some(PathBuf::from("k.cdp"));
        assert_eq!(compile_note(&with_name), "the kernel language to a host object for sm_80, compute_80, whole-program device code (linked)");
        let ptx = CompileOptions { emit: Emit::Ptx, language: Some(Language::Ir), ..options };
        assert_eq!(compile_note(&ptx), "LLVM IR to PTX for sm_90");
    }
}
