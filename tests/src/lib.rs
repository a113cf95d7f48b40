//! Helpers shared by the integration tests: where things are, and how a test file states the
//! compiler flags it needs.

use cdpc::driver::CompileOptions;
use cdpc::{AddressSize, Code, LaunchAbi};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// The `.cdp` files of a folder, sorted by name.
pub fn cdp_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cdp"))
        .collect();
    files.sort();
    files
}

/// Compiler options from a `// flags: ...` first line, as a test file writes them:
/// `--launch-abi v1|v2`, `--address-size 32|64`, `--arch sm_XX`, `--strict-param-limit`,
/// `-faggregate-launches=warp|block|off`, `-Rpass=aggregate`, `-Rskipped-headers`,
/// `-fdevice-malloc-pool`; in LLVM IR, `; flags: ...`.
pub fn options_from_header(source: &str) -> CompileOptions {
    let mut options = CompileOptions::default();
    let Some(flags) = source.lines().next().and_then(|l| l.strip_prefix("// flags:").or_else(|| l.strip_prefix("; flags:"))) else { return options };
    let mut words = flags.split_whitespace();
    while let Some(flag) = words.next() {
        let mut value = || words.next().unwrap_or_else(|| panic!("`{flag}` needs a value"));
        match flag {
            "--launch-abi" => options.target.launch_abi = value().parse::<LaunchAbi>().expect("v1 or v2"),
            "--address-size" => options.target.address_size = if value() == "32" { AddressSize::Bits32 } else { AddressSize::Bits64 },
            "--arch" => options.target.sm = value().parse().expect("an architecture"),
            "--strict-param-limit" => options.warnings.deny.push(Code::ParamBufferOver4K),
            "-Werror" => options.warnings.deny_all = true,
            "-Rpass=aggregate" => options.pass_remarks = true,
            "-Rskipped-headers" => options.header_remarks = true,
            "-fdevice-malloc-pool" => options.malloc_pool = cdpc::driver::MallocPool::On,
            // nvcc's option, as `cdpc` reads it: its macro.
            "--extended-lambda" => options.preprocess.macros.push(cdpc::front::cdp::preprocess::MacroOption::Define("__CUDACC_EXTENDED_LAMBDA__=1".into())),
            _ if flag.starts_with("-faggregate-launches=") => options.aggregate = flag["-faggregate-launches=".len()..].parse().expect("warp, block or off"),
            _ if flag.starts_with("-flaunch-threshold=") => options.launch_threshold = flag["-flaunch-threshold=".len()..].parse().expect("a thread count"),
            other => panic!("unknown flag `{other}` in a test header"),
        }
    }
    options
}

/// nvcc and cuobjdump, the oracle tests' tools: nvcc next to the ptxas that cdpc's tool search
/// finds (the pip package nvidia-cuda-nvcc beside nvidia-cuda-nvcc's ptxas), cuobjdump as that
/// search finds it.
pub struct NvidiaTools {
    pub nvcc: PathBuf,
    pub cuobjdump: PathBuf,
    /// The folder of ptxas and nvcc, put first on nvcc's `PATH`.
    pub bin: PathBuf,
}

impl NvidiaTools {
    /// The tools, or why a test that needs them cannot run (it prints that and skips).
    pub fn find() -> Result<NvidiaTools, String> {
        use cdpc::toolchain::{ToolSearch, Toolchain};
        let tools = Toolchain::discover(&ToolSearch::default()).map_err(|e| format!("the NVIDIA tools were not found, run `cargo xtask setup`:\n{e}"))?;
        let bin = tools.ptxas.parent().ok_or("ptxas has no folder")?.to_path_buf();
        let nvcc = bin.join(format!("nvcc{}", std::env::consts::EXE_SUFFIX));
        if !nvcc.is_file() {
            return Err(format!("nvcc is not next to ptxas in {} (pip package nvidia-cuda-nvcc)", bin.display()));
        }
        let cuobjdump = tools.cuobjdump.ok_or("cuobjdump not found (pip package nvidia-cuda-cuobjdump)")?;
        Ok(NvidiaTools { nvcc, cuobjdump, bin })
    }

    /// `nvcc -x cu -arch=sm_90 -cubin -rdc=true CU -o CUBIN`, its output returned as it is.
    pub fn nvcc_cubin(&self, cu: &Path, cubin: &Path) -> std::process::Output {
        let path = match std::env::var_os("PATH") {
            Some(p) => std::env::join_paths(std::iter::once(self.bin.clone()).chain(std::env::split_paths(&p))).unwrap(),
            None => self.bin.clone().into_os_string(),
        };
        Command::new(&self.nvcc)
            .args(["-x", "cu", "-arch=sm_90", "-cubin", "-rdc=true"])
            .arg(cu)
            .arg("-o")
            .arg(cubin)
            .env("PATH", path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.nvcc.display()))
    }
}
