//! Running ptxas and nvlink: PTX to a relocatable object, objects to a linked cubin.
//!
//! Work files live in a temporary folder that is removed in every case. The result is written to
//! a temporary file in the output's folder and renamed over the output only when every step
//! succeeded, so a failed build never leaves a partial or stale-looking output behind.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::{NamedTempFile, TempDir};

use super::discover::Toolchain;
use super::error::{command_line, truncate_output, ExitKind, ToolError, CAPTURE_LIMIT};
use crate::target::SmVersion;

/// Options for [`Toolchain::assemble`], [`Toolchain::link`], [`Toolchain::build_object`] and
/// [`Toolchain::build_cubin`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOptions {
    /// `-arch=sm_XX` for ptxas and nvlink.
    pub arch: SmVersion,
    /// ptxas `-O N` (0 to 3); `None` leaves ptxas's default (3).
    pub opt_level: Option<u8>,
    /// Extra ptxas arguments (`-Xptxas`), appended after ours.
    pub ptxas_args: Vec<OsString>,
    /// Extra nvlink arguments (`-Xnvlink`), appended after ours.
    pub nvlink_args: Vec<OsString>,
    /// Where the temporary work folder is made; `None` is the system's temp folder.
    pub temp_root: Option<PathBuf>,
}

impl BuildOptions {
    pub fn new(arch: SmVersion) -> BuildOptions {
        BuildOptions {
            arch,
            opt_level: None,
            ptxas_args: Vec::new(),
            nvlink_args: Vec::new(),
            temp_root: None,
        }
    }
}

impl Default for BuildOptions {
    /// sm_90, ptxas's default optimisation, no extra arguments.
    fn default() -> BuildOptions {
        BuildOptions::new(SmVersion(90))
    }
}

/// ptxas's arguments: `-arch=sm_XX -c [-O N] [extra...] -o OUTPUT INPUT`.
/// `-c` makes relocatable device code (nvcc's `-rdc`), which device-side launches need.
pub fn ptxas_args(opts: &BuildOptions, input: &Path, output: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![format!("-arch={}", opts.arch).into(), "-c".into()];
    if let Some(level) = opts.opt_level {
        args.push(format!("-O{level}").into());
    }
    args.extend(opts.ptxas_args.iter().cloned());
    args.push("-o".into());
    args.push(output.into());
    args.push(input.into());
    args
}

/// nvlink's arguments: `-arch=sm_XX OBJECTS... -L<cudadevrt_dir> -lcudadevrt [extra...] -o OUTPUT`.
pub fn nvlink_args(
    opts: &BuildOptions,
    objects: &[&Path],
    cudadevrt_dir: &Path,
    output: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![format!("-arch={}", opts.arch).into()];
    args.extend(objects.iter().map(OsString::from));
    let mut lib_dir = OsString::from("-L");
    lib_dir.push(cudadevrt_dir);
    args.push(lib_dir);
    args.push("-lcudadevrt".into());
    args.extend(opts.nvlink_args.iter().cloned());
    args.push("-o".into());
    args.push(output.into());
    args
}

const PTX_NAME: &str = "module.ptx";
const OBJECT_NAME: &str = "module.o";
const CUBIN_NAME: &str = "module.cubin";

/// What the tools said while succeeding, for the caller to show: the library never prints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolLog {
    /// Each command line run, in order, quoted for display (what `-v` shows).
    pub commands: Vec<String>,
    /// Everything the tools wrote to stderr while succeeding (their warnings), in order.
    pub stderr: String,
}

impl Toolchain {
    /// Assembles PTX into a relocatable device object (`ptxas -c`) and returns its bytes.
    pub fn assemble(&self, ptx: &str, opts: &BuildOptions) -> Result<(Vec<u8>, ToolLog), ToolError> {
        let mut log = ToolLog::default();
        let work = work_dir(opts)?;
        let object = self.assemble_in(work.path(), ptx, opts, &mut log)?;
        Ok((read(&object, "reading the object ptxas wrote")?, log))
    }

    /// Links relocatable device objects with libcudadevrt into `output` (a cubin).
    pub fn link(
        &self,
        objects: &[&Path],
        opts: &BuildOptions,
        output: &Path,
    ) -> Result<ToolLog, ToolError> {
        let mut log = ToolLog::default();
        let out = OutputFile::prepare(output)?;
        let work = work_dir(opts)?;
        let cubin = self.link_in(work.path(), objects, opts, &mut log)?;
        out.commit(&read(&cubin, "reading the cubin nvlink wrote")?)?;
        Ok(log)
    }

    /// PTX to a relocatable device object at `output` (`--emit obj`).
    pub fn build_object(
        &self,
        ptx: &str,
        opts: &BuildOptions,
        output: &Path,
    ) -> Result<ToolLog, ToolError> {
        let out = OutputFile::prepare(output)?;
        let (bytes, log) = self.assemble(ptx, opts)?;
        out.commit(&bytes)?;
        Ok(log)
    }

    /// PTX to a linked cubin at `output`: ptxas, then nvlink with libcudadevrt.
    pub fn build_cubin(
        &self,
        ptx: &str,
        opts: &BuildOptions,
        output: &Path,
    ) -> Result<ToolLog, ToolError> {
        let mut log = ToolLog::default();
        let out = OutputFile::prepare(output)?;
        let work = work_dir(opts)?;
        let object = self.assemble_in(work.path(), ptx, opts, &mut log)?;
        let cubin = self.link_in(work.path(), &[object.as_path()], opts, &mut log)?;
        out.commit(&read(&cubin, "reading the cubin nvlink wrote")?)?;
        Ok(log)
    }

    fn assemble_in(
        &self,
        work: &Path,
        ptx: &str,
        opts: &BuildOptions,
        log: &mut ToolLog,
    ) -> Result<PathBuf, ToolError> {
        let input = work.join(PTX_NAME);
        let object = work.join(OBJECT_NAME);
        std::fs::write(&input, ptx)
            .map_err(|e| ToolError::io("writing the PTX for ptxas", &input, e))?;
        run_tool("ptxas", &self.ptxas, &ptxas_args(opts, &input, &object), log)?;
        Ok(object)
    }

    fn link_in(
        &self,
        work: &Path,
        objects: &[&Path],
        opts: &BuildOptions,
        log: &mut ToolLog,
    ) -> Result<PathBuf, ToolError> {
        let cubin = work.join(CUBIN_NAME);
        let args = nvlink_args(opts, objects, &self.cudadevrt_dir, &cubin);
        run_tool("nvlink", &self.nvlink, &args, log)?;
        Ok(cubin)
    }
}

fn work_dir(opts: &BuildOptions) -> Result<TempDir, ToolError> {
    let root = opts.temp_root.clone().unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("cdpc-")
        .tempdir_in(&root)
        .map_err(|e| ToolError::io("creating a temporary work folder in", root, e))
}

fn read(path: &Path, action: &str) -> Result<Vec<u8>, ToolError> {
    std::fs::read(path).map_err(|e| ToolError::io(action, path, e))
}

/// Runs one tool, capturing its output. Its command line, and its stderr when it succeeds
/// (warnings), go to `log`.
fn run_tool(tool: &str, program: &Path, args: &[OsString], log: &mut ToolLog) -> Result<(), ToolError> {
    let command = command_line(program.as_os_str(), args);
    log.commands.push(command.clone());
    let output = spawn_and_wait(program, args).map_err(|source| ToolError::Spawn {
        tool: tool.to_string(),
        command: command.clone(),
        source,
    })?;
    if !output.status.success() {
        return Err(ToolError::Failed {
            tool: tool.to_string(),
            command,
            status: ExitKind::from_status(output.status),
            stderr: truncate_output(&output.stderr, CAPTURE_LIMIT),
            stdout: truncate_output(&output.stdout, CAPTURE_LIMIT),
        });
    }
    log.stderr.push_str(&truncate_output(&output.stderr, CAPTURE_LIMIT));
    Ok(())
}

fn spawn_and_wait(program: &Path, args: &[OsString]) -> io::Result<std::process::Output> {
    // A script written moments ago can be briefly "busy" (ETXTBSY) while another thread's fork
    // still holds its write descriptor; retry that case a few times.
    let mut tries = 0;
    loop {
        let result = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output();
        match result {
            Err(e) if e.raw_os_error() == Some(26) && cfg!(unix) && tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20 * tries));
            }
            other => return other,
        }
    }
}

/// The final output: a temporary file beside it, renamed over it by [`OutputFile::commit`].
/// Dropping it without committing removes the temporary file.
pub struct OutputFile {
    tmp: NamedTempFile,
    path: PathBuf,
}

impl OutputFile {
    pub fn prepare(path: &Path) -> Result<OutputFile, ToolError> {
        let invalid =
            |reason: String| ToolError::OutputPathInvalid { path: path.to_path_buf(), reason };
        if path.is_dir() {
            return Err(invalid("it is a directory".to_string()));
        }
        let name = match path.file_name() {
            Some(n) => n,
            None => return Err(invalid("it does not name a file".to_string())),
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.exists() {
            return Err(invalid(format!("the folder `{}` does not exist", dir.display())));
        }
        if !dir.is_dir() {
            return Err(invalid(format!("`{}` is not a folder", dir.display())));
        }
        let mut prefix = OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(OsStr::new(".tmp"))
            .tempfile_in(&dir)
            .map_err(|e| match e.kind() {
                io::ErrorKind::PermissionDenied => invalid(format!(
                    "cannot create files in `{}`: permission denied",
                    dir.display()
                )),
                _ => ToolError::io("creating a temporary output file in", &dir, e),
            })?;
        Ok(OutputFile { tmp, path: path.to_path_buf() })
    }

    pub fn commit(mut self, bytes: &[u8]) -> Result<(), ToolError> {
        let tmp_path = self.tmp.path().to_path_buf();
        self.tmp
            .write_all(bytes)
            .and_then(|_| self.tmp.flush())
            .map_err(|e| ToolError::io("writing the output to", &tmp_path, e))?;
        #[cfg(unix)]
        {
            // NamedTempFile is created 0600; give the result the usual file mode.
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(0o644));
        }
        let path = self.path;
        self.tmp.persist(&path).map(|_| ()).map_err(|e| {
            if path.is_dir() {
                ToolError::OutputPathInvalid {
                    path: path.clone(),
                    reason: "it is a directory".into(),
                }
            } else {
                ToolError::io("moving the finished output into place at", &path, e.error)
            }
        })
    }
}
