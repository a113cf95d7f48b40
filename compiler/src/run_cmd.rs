//! `cdpc run FILE.cdp ...`: compile to a temporary cubin and run it on the GPU in one step.
//! `main` hands over when the first argument is `run` (to compile a file named `run`, write
//! `cdpc ./run`). The host side is runtime-shim's loader: libcuda is opened at run time, so
//! without a driver this is an error, not a crash.

use super::command_line::{ErrorFormat, PreprocessArgs};
use super::report::show_tool_runs;
use cdpc::driver::{self, CompileError};
use cdpc::render::{self, Color};
use cdpc::{LaunchAbi, SmVersion};
use clap::{CommandFactory, FromArgMatches};
use runtime_shim::loader::manifest::{CliLaunch, Limits};
use runtime_shim::loader::{check_against_manifest, run_sample, LoadError, Manifest, RunOptions};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Parser, Debug)]
#[command(
    name = "cdpc run",
    about = "Compile a .cdp file and run one kernel on the GPU, printing what it printed and the buffers asked for",
    after_help = "Example:\n  cdpc run app.cdp --kernel parent --grid 1 --block 256 --buf data:i32:256:iota --arg buf:data --arg i32:5 --print data\n  cdpc run samples/recursion.cdp --manifest samples/recursion.toml"
)]
struct RunCli {
    /// The source file
    input: PathBuf,
    #[command(flatten)]
    preprocess: PreprocessArgs,
    /// Run as this sample manifest says (samples/MANIFEST.md) and check the result
    #[arg(long, value_name = "FILE", conflicts_with_all = ["kernel", "buf", "arg", "global"])]
    manifest: Option<PathBuf>,
    /// The kernel to launch from the host
    #[arg(long, value_name = "NAME")]
    kernel: Option<String>,
    /// Grid size: `4` or `4,2,1`
    #[arg(long, default_value = "1")]
    grid: String,
    /// Block size: `256` or `16,16`
    #[arg(long, default_value = "1")]
    block: String,
    /// Dynamic shared memory of the top-level launch, in bytes
    #[arg(long, value_name = "BYTES")]
    shared: Option<String>,
    /// A device buffer NAME:TYPE:LEN[:INIT], INIT = zero | iota | random:SEED | a formula in i |
    /// values `1,2,3` (repeatable; TYPE one of i8 u8 i16 u16 i32 u32 i64 u64 f32 f64)
    #[arg(long, value_name = "SPEC")]
    buf: Vec<String>,
    /// A kernel argument, in order: `buf:NAME` or TYPE:VALUE, e.g. `i32:5` (repeatable)
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    arg: Vec<String>,
    /// Read a __device__ variable back after the run: NAME:TYPE (repeatable)
    #[arg(long, value_name = "NAME:TYPE")]
    global: Vec<String>,
    /// Print this buffer after the run (repeatable) [default: every buffer, up to 64 elements]
    #[arg(long, value_name = "NAME")]
    print: Vec<String>,
    /// cudaLimitDevRuntimePendingLaunchCount
    #[arg(long, value_name = "N")]
    pending_launch_count: Option<u64>,
    /// cudaLimitMallocHeapSize in bytes
    #[arg(long, value_name = "BYTES")]
    heap_bytes: Option<u64>,
    /// cudaLimitStackSize in bytes
    #[arg(long, value_name = "BYTES")]
    stack_bytes: Option<u64>,
    /// Time the launch tree: median of N runs after 3 warm-up runs
    #[arg(long, value_name = "N", default_value_t = 0)]
    repeat: usize,
    /// GPU architecture
    #[arg(long, default_value = "sm_90", value_name = "sm_XX")]
    arch: SmVersion,
    /// Device-launch ABI (v1 or v2)
    #[arg(long, default_value = "v2", value_name = "v1|v2")]
    launch_abi: LaunchAbi,
    /// Optimisation level
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// Directory of a CUDA toolkit or of the NVIDIA wheels
    #[arg(long, value_name = "DIR")]
    cuda_home: Option<PathBuf>,
    /// Print each tool's command line
    #[arg(short = 'v', long)]
    verbose: bool,
}

/// `args` is the whole command line: `cdpc run ...`.
pub fn main(args: Vec<String>) -> ExitCode {
    let argv: Vec<String> = std::iter::once("cdpc run".to_string()).chain(args.into_iter().skip(2)).collect();
    let matches = RunCli::command().get_matches_from(argv);
    let cli = RunCli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The launch first: a mistake in it should not wait for a compilation.
    let manifest = match &cli.manifest {
        Some(path) => Manifest::load(path),
        None => {
            let launch = CliLaunch {
                kernel: cli.kernel.clone().unwrap_or_default(),
                grid: cli.grid.clone(),
                block: cli.block.clone(),
                shared_bytes: cli.shared.clone(),
                buffers: cli.buf.clone(),
                args: cli.arg.clone(),
                globals: cli.global.clone(),
                limits: Limits { pending_launch_count: cli.pending_launch_count, heap_bytes: cli.heap_bytes, stack_bytes: cli.stack_bytes },
            };
            let stem = cli.input.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Manifest::from_cli(&stem, &launch)
        }
    };
    let mut manifest = match manifest {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.manifest.is_some() {
        // the manifest's limits, unless given on the command line
        let l = &mut manifest.limits;
        l.pending_launch_count = cli.pending_launch_count.or(l.pending_launch_count);
        l.heap_bytes = cli.heap_bytes.or(l.heap_bytes);
        l.stack_bytes = cli.stack_bytes.or(l.stack_bytes);
    }
    for name in &cli.print {
        if manifest.buffer(name).is_none() {
            eprintln!("error: --print {name}: there is no buffer `{name}`");
            return ExitCode::from(2);
        }
    }

    let file_name = cli.input.display().to_string();
    let color = if std::io::stderr().is_terminal() { Color::Always } else { Color::Never };
    // The compile options as name/value pairs, read as every other caller's are.
    let mut pairs: Vec<(&str, std::ffi::OsString)> =
        vec![("arch", cli.arch.to_string().into()), ("launch-abi", cli.launch_abi.to_string().into()), ("opt-level", cli.opt_level.to_string().into()), ("emit", "cubin".into())];
    pairs.extend(cli.cuda_home.iter().map(|home| ("cuda-home", home.as_os_str().to_os_string())));
    pairs.extend(cli.preprocess.pairs(&matches, Some(&cli.input)));
    let options = match driver::option_pairs::from_os_pairs(pairs) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let input = match driver::InputFile::read(&cli.input, &options) {
        Ok(input) => input,
        Err(CompileError::NotUtf8(e)) => {
            eprint!("{}", render::human(&[e.diagnostic], &file_name, &e.shown, color));
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The cubin stays in memory: the loader takes bytes.
    let source = &input.shown;
    let cubin = match input.compile(&options) {
        Ok(compiled) => {
            show_tool_runs(&compiled.tool_runs, cli.verbose, ErrorFormat::Human, &file_name);
            if !compiled.warnings.is_empty() {
                eprint!("{}", render::human(&compiled.warnings, &file_name, source, color));
            }
            compiled.output
        }
        Err(CompileError::Diagnostics(d)) => {
            eprint!("{}", render::human(&d, &file_name, source, color));
            eprintln!("error: could not compile `{file_name}`");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let run_options = RunOptions { warmup: if cli.repeat > 0 { 3 } else { 0 }, repeat: cli.repeat, capture_stdout: true };
    let output = match run_sample(&cubin, &manifest, &run_options) {
        Ok(o) => o,
        Err(e @ LoadError::NoDriver(_)) => {
            eprintln!("error: compiled `{file_name}`, but cannot run it: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", String::from_utf8_lossy(&output.stdout));
    if let Some(e) = &output.error {
        if manifest.expect_error.is_none() {
            eprintln!("error: the launch tree failed: {e}");
            return ExitCode::FAILURE;
        }
    }
    let printing: Vec<&str> = if cli.print.is_empty() && cli.manifest.is_none() { manifest.buffers.iter().map(|b| b.name.as_str()).collect() } else { cli.print.iter().map(String::as_str).collect() };
    let limit = if cli.print.is_empty() { 64 } else { usize::MAX };
    for name in printing {
        let (Some(b), Some((_, bytes))) = (manifest.buffer(name), output.buffers.iter().find(|(n, _)| n == name)) else { continue };
        let values = b.ty.decode_all(bytes);
        let shown: Vec<String> = values.iter().take(limit).map(ToString::to_string).collect();
        let more = if values.len() > limit { format!(" ... ({} more)", values.len() - limit) } else { String::new() };
        println!("{name} ({}[{}]): {}{more}", b.ty, b.len, shown.join(" "));
    }
    for (g, (_, bytes)) in manifest.globals.iter().zip(&output.globals) {
        println!("{} ({}) = {}", g.name, g.ty, g.ty.decode(bytes));
    }
    if let Some(t) = output.median_ms() {
        println!("time: median {t:.3} ms of {} runs (launch tree, CUDA events)", output.times_ms.len());
    }
    if let Some(manifest_path) = &cli.manifest {
        let reasons = check_against_manifest(&manifest, &output);
        if reasons.is_empty() {
            println!("ok: the result matches {}", manifest_path.display());
        } else {
            for r in &reasons {
                println!("FAIL: {r}");
            }
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
