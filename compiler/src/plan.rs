//! The command line's plan: every decision about what it asks for, made before anything runs
//! ([`plan`], which reports every usage error): the architectures built, the compile options
//! and a list of tasks, which `main` then runs in order (`runner.rs`) or, with `-###` (nvcc's
//! `-dryrun`), prints as their jobs ([`Task::jobs`], `cdpc::driver::jobs`). The plan runs no
//! task: the runner imports it, never the other way round.

use super::command_line::{AddressSizeArg, Cli, ColorArg, EmitArg, ErrorFormat};
use super::outputs::{default_output, dependency_path, dependency_target, output_extension, run_arguments, runnable};
use super::preprocess_cmd;
use super::report::{fail, fail_with_code};
use super::toolkit::{architecture_set, cuda_release, host_fortify, verbose_header};
use cdpc::driver::{self, CompileOptions, Emit, Input, LinkOptions};
use cdpc::front::cdp::preprocess::PreprocessOptions;
use cdpc::render::{self, Color};
use cdpc::{AddressSize, Code};
use clap::ArgMatches;
use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// One task of a command line ([`plan`]): what `main` runs, in order, or with `--dry-run`
/// (`-###`, `-dryrun`) prints as its jobs ([`Task::jobs`]). A task holds everything its run and
/// its jobs read (inputs as classified, outputs, images, link and archive options): both take
/// the task alone, never the command line again, so what is printed is what runs.
pub(crate) enum Task {
    /// `-E`: one source preprocessed (`preprocess_cmd`); with `-MD` or `-MMD` also its
    /// dependency list, from a compilation with these options: those `-c` of the same command
    /// line compiles with.
    Preprocess { listing: Option<CompileOptions> },
    /// `-M`, `-MM`: every source's headers, one Make rule each, all to `output`.
    ListDependencies { sources: Vec<PathBuf>, output: driver::jobs::Output, emit: Emit },
    /// `-lib`: a static library of the inputs, made by `archiver` (the host's `ar` when `None`)
    /// with `archive_args` (`-Xarchive`).
    Library { inputs: Vec<driver::program::ProgramInput>, output: PathBuf, archiver: Option<PathBuf>, archive_args: Vec<String>, options: CompileOptions },
    /// `-dlink`: the device link's registration object of the objects `inputs`.
    DeviceLink { inputs: Vec<PathBuf>, output: PathBuf, options: CompileOptions },
    /// nvcc's default: a program (or with `-shared` a shared library).
    Program { inputs: Vec<driver::program::ProgramInput>, output: PathBuf, options: CompileOptions },
    /// `-run`: a program run with `--run-args`' words.
    Run { program: PathBuf, args: Vec<String> },
    /// `-c` of a host file: the host compiler's object, and with `-MD` its dependency list.
    HostCompile { source: PathBuf, output: PathBuf, dependencies: Option<PathBuf> },
    /// One source compiled on its own: each source of `-dc`, and a single source's whole
    /// compile, to a file or standard output; with `-MD` its dependency list, with
    /// `--host-header` the header of its launchers.
    Compile { source: PathBuf, output: driver::jobs::Output, dependencies: Option<PathBuf>, header: Option<PathBuf>, options: CompileOptions },
    /// `-gencode`, `-fatbin`: a fat binary of `images` of the inputs; with `-MD` and one input
    /// its dependency list.
    Fatbin { inputs: Vec<Input>, images: Vec<cdpc::driver::fatbin::Image>, link: LinkOptions, output: PathBuf, dependencies: Option<PathBuf>, options: CompileOptions },
    /// Several inputs, objects or libraries: one linked cubin.
    Link { inputs: Vec<Input>, link: LinkOptions, output: PathBuf },
}

/// What a program's, library's and device link's build takes besides the compile options.
fn program_options(cli: &Cli, matches: &ArgMatches) -> driver::program::ProgramOptions {
    driver::program::ProgramOptions {
        host_compiler: cli.ccbin.clone(),
        libraries: cli.library.clone(),
        library_dirs: cli.library_dir.clone(),
        linker_args: cli.xlinker.clone(),
        shared: cli.shared,
        cudart: cli.cudart,
        host_opt_level: (matches.value_source("opt_level") == Some(clap::parser::ValueSource::CommandLine)).then_some(cli.opt_level),
        relocatable: cli.rdc,
    }
}

/// The command line's inputs as a program's or a library's build takes them: sources (of the
/// language `-x` names, or their extension's), host files and objects.
fn program_inputs(cli: &Cli) -> Vec<driver::program::ProgramInput> {
    cli.inputs.iter().map(|p| driver::program::ProgramInput::classify(p, cli.language.is_some())).collect()
}

/// `-l` and `-L` as a link of device code takes them.
fn link_options(cli: &Cli) -> LinkOptions {
    LinkOptions { libraries: cli.library.clone(), library_dirs: cli.library_dir.clone() }
}

/// The command line's plan ([`plan`]): its tasks in the order they run, and what every task
/// runs with.
pub(crate) struct Plan {
    pub tasks: Vec<Task>,
    pub options: CompileOptions,
    pub program: driver::program::ProgramOptions,
    pub color: Color,
}

/// The plan of the command line, or its usage error (reported, with the status to exit with):
/// every decision about what the command line asks for, made before anything runs, so that
/// `--dry-run` prints what a run would do and refuses what it would refuse. `cli` is rewritten
/// into what is built: nvcc's `-arch=all`, `all-major` and `native` become `--arch` and
/// `-gencode`'s images, `-fatbin` without `-gencode` gets `--arch`'s, and `-ptx` or `-cubin`
/// with `-gencode` the one architecture they name. `format` is the diagnostics' format the
/// arguments asked for ([`super::command_line::requested_format`]).
pub(crate) fn plan(cli: &mut Cli, matches: &ArgMatches, format: ErrorFormat) -> Result<Plan, ExitCode> {
    let mut fallbacks: Vec<String> = Vec::new();
    if let Some(set) = cli.arch_set.clone() {
        match architecture_set(cli, &set) {
            Ok(Err(fallback)) => fallbacks.push(fallback),
            // One GPU's architecture (`native`): that `--arch`, as `-arch=sm_XX` builds it.
            Ok(Ok(images)) if images.len() == 1 && matches!(images[0], cdpc::driver::fatbin::Image::Cubin(_)) => {
                if let cdpc::driver::fatbin::Image::Cubin(sm) = images[0] {
                    cli.arch = sm;
                }
            }
            Ok(Ok(images)) => {
                if let Some(image) = images.first() {
                    cli.arch = image.sm();
                }
                cli.gencode.push(images);
            }
            Err(message) => {
                fail(format, "<command line>", &message);
                return Err(ExitCode::from(1));
            }
        }
    }
    // W0709: what an option asked for that cdpc does otherwise, as nvcc's warning says of
    // `-arch=native`; an error with `-Werror`, nothing with `-w`.
    for fallback in &fallbacks {
        match cli.error_format {
            _ if cli.werror => {
                fail_with_code(format, "<command line>", Some(Code::OptionFallback), fallback);
                return Err(ExitCode::from(1));
            }
            ErrorFormat::Json => eprint!("{}", render::json_warning_with_code(Code::OptionFallback, "<command line>", fallback)),
            ErrorFormat::Human if !cli.disable_warnings => eprintln!("warning[{}]: {fallback}", Code::OptionFallback),
            ErrorFormat::Human => {}
        }
    }
    // nvcc's `-fatbin` without `-gencode`: `--arch`'s cubin and its PTX, what nvcc's
    // `-arch=sm_XX` stands for.
    if cli.fatbin && cli.gencode.is_empty() {
        cli.gencode.push(vec![cdpc::driver::fatbin::Image::Cubin(cli.arch), cdpc::driver::fatbin::Image::Ptx(cli.arch)]);
    }
    let fatbin_named = output_extension(cli) == Some("fatbin");
    // nvcc's `-ptx` and `-cubin` with `-gencode` (CMake's CUDA_PTX_COMPILATION and
    // CUDA_CUBIN_COMPILATION): one architecture's PTX, one image's cubin, as nvcc 13.5 allows;
    // more is nvcc's error too. (`--emit cubin` into a `.fatbin` stays a fat binary.)
    if !cli.gencode.is_empty() && !cli.fatbin && !fatbin_named && !cli.device_c && !cli.device_link && matches!(cli.emit, Some(EmitArg::Ptx | EmitArg::Cubin)) {
        let images = cli.gencode.concat();
        let archs = cdpc::driver::fatbin::architectures(&images);
        let one = match (cli.emit, images.as_slice()) {
            (Some(EmitArg::Ptx), _) if archs.len() == 1 => Some(archs[0]),
            (Some(EmitArg::Cubin), [cdpc::driver::fatbin::Image::Cubin(sm)]) => Some(*sm),
            _ => None,
        };
        let Some(sm) = one else {
            let message = if matches!(cli.emit, Some(EmitArg::Ptx)) {
                "`-ptx` writes the PTX of one architecture, and these `-gencode` options name several (nvcc refuses them too): compile once per architecture, or write a fat binary (`-fatbin`)"
            } else {
                "`-cubin` writes one cubin, and these `-gencode` options name several images (nvcc refuses them too): give one `code=sm_XX`, or write a fat binary (`-fatbin`)"
            };
            fail(format, &cli.inputs[0].display().to_string(), message);
            return Err(ExitCode::from(2));
        };
        cli.arch = sm;
        cli.gencode.clear();
    }
    // nvcc's `-v` lines for an input that is no file (CMake's `cdpc -v __cmake_determine_cuda`).
    if cli.verbose && cli.inputs.iter().any(|i| !i.exists()) {
        eprint!("{}", verbose_header(cli));
    }
    let color = match cli.color {
        ColorArg::Always => Color::Always,
        ColorArg::Never => Color::Never,
        ColorArg::Auto if std::io::stderr().is_terminal() => Color::Always,
        ColorArg::Auto => Color::Never,
    };
    let mut options = match driver::option_pairs::from_os_pairs(compile_pairs(cli, matches)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(2));
        }
    };
    if cli.inputs.iter().any(|i| driver::program::is_cmake_identification(i)) {
        let release = cdpc::toolchain::Toolchain::discover(&options.tools).ok().as_ref().and_then(cuda_release);
        options.cuda_cxx.host_args.extend(release.map(driver::program::identity_macros).unwrap_or_default());
    }
    options.cuda_cxx.host_fortify = host_fortify(cli, matches, &options.preprocess);
    options.device_lto = cli.device_lto;
    let tasks = tasks(cli, &options)?;
    let program = program_options(cli, matches);
    Ok(Plan { tasks, options, program, color })
}

/// The command line's compile options as name/value pairs ([`driver::option_pairs`], the reading
/// the C API, the Python package and `cdpc-build` share), for the first input where there is
/// one. Where nvcc has one option win over another whatever their order, the winner's pair
/// comes last: `-G` after `-lineinfo`, an explicit `-ftz`, `-prec-div` or `-prec-sqrt` after
/// `--use_fast_math`, `-w`'s ptxas and nvlink argument after `-Xptxas` and `-Xnvlink`'s. The
/// launch optimizations are resolved here (`driver::LaunchOptimizations::resolve`: on in
/// optimising builds).
pub(crate) fn compile_pairs(cli: &Cli, matches: &ArgMatches) -> Vec<(&'static str, OsString)> {
    let mut pairs: Vec<(&'static str, OsString)> = Vec::new();
    let mut add = |key: &'static str, value: &dyn AsRef<OsStr>| pairs.push((key, value.as_ref().to_os_string()));
    let address_size = match cli.address_size {
        AddressSizeArg::Bits32 => AddressSize::Bits32,
        AddressSizeArg::Bits64 => AddressSize::Bits64,
    };
    add("arch", &cli.arch.to_string());
    add("address-size", &address_size.to_string());
    add("launch-abi", &cli.launch_abi.to_string());
    add("default-stream", &cli.default_stream.to_string());
    add("opt-level", &cli.opt_level.to_string());
    let emit = match cli.emit.unwrap_or(EmitArg::Cubin) {
        EmitArg::Cubin => "cubin",
        EmitArg::Obj => "obj",
        EmitArg::HostObj => "host-obj",
        EmitArg::Ptx => "ptx",
        EmitArg::LlvmIr => "llvm-ir",
    };
    add("emit", &emit);
    for arg in &cli.xptxas {
        add("ptxas-arg", arg);
    }
    for arg in &cli.xnvlink {
        add("nvlink-arg", arg);
    }
    if cli.disable_warnings {
        add("disable-warnings", &"true");
    }
    if cli.werror {
        add("werror", &"true");
    }
    for code in &cli.deny {
        add("deny", code);
    }
    for code in &cli.allow {
        add("allow", code);
    }
    if cli.strict_param_limit {
        add("strict-param-limit", &"true");
    }
    if let Some(home) = &cli.cuda_home {
        add("cuda-home", home);
    }
    if cli.device_malloc_pool {
        add("device-malloc-pool", &"true");
    }
    if cli.no_device_malloc_pool {
        add("device-malloc-pool", &"false");
    }
    if cli.legacy_warp_intrinsics {
        add("legacy-warp-intrinsics", &"true");
    }
    for pass in &cli.rpass {
        add("pass-remarks", pass);
    }
    for group in &cli.remarks {
        add("remarks", group);
    }
    add("tool-timeout", &cli.tool_timeout.0.map_or("0".to_string(), |limit| limit.as_secs_f64().to_string()));
    if let Some(parts) = cli.split_compile {
        add("split-compile", &parts.to_string());
    }
    if cli.overwrite {
        add("overwrite", &"any");
    }
    for (key, value) in cli.preprocess.pairs(matches, cli.inputs.first().map(PathBuf::as_path)) {
        add(key, &value);
    }
    if cli.lineinfo {
        add("lineinfo", &"true");
    }
    if cli.device_debug {
        add("device-debug", &"true");
    }
    // Relocatable device code written as text or a device object (`-ptx -rdc=true`, as CMake's
    // `CUDA_PTX_COMPILATION` with separable compilation asks): another file's functions are
    // `.extern`, left to the link, as nvcc leaves them.
    if cli.rdc && matches!(emit, "ptx" | "llvm-ir" | "obj") {
        add("separate", &"true");
    }
    if let Some(id) = &cli.nv_module_id {
        add("nv-module-id", id);
    }
    if !cli.fmad {
        add("fmad", &"false");
    }
    if cli.use_fast_math {
        add("use-fast-math", &"true");
    }
    for (key, value) in [("ftz", cli.ftz), ("prec-div", cli.prec_div), ("prec-sqrt", cli.prec_sqrt)] {
        if let Some(value) = value {
            add(key, &value.to_string());
        }
    }
    if let Some(language) = cli.language {
        add("language", &language.name());
    }
    if let Some(clang) = &cli.clang {
        add("clang", clang);
    }
    if let Some(std) = cli.std {
        add("std", &std.as_str());
    }
    for arg in &cli.xcompiler {
        add("host-arg", arg);
    }
    if cli.no_deprecation_warnings {
        add("deprecation-warnings", &"false");
    }
    let list = if cli.dependencies || cli.generate_dependencies {
        "all"
    } else if cli.user_dependencies || cli.generate_user_dependencies {
        "user"
    } else {
        "none"
    };
    add("list-headers", &list);
    let switch = if cli.launch_optimizations {
        Some(true)
    } else if cli.no_launch_optimizations {
        Some(false)
    } else {
        None
    };
    let launches = driver::LaunchOptimizations::resolve(cli.opt_level, cli.device_debug, switch, cli.launch_threshold, cli.aggregate_launches);
    add("aggregate-launches", &launches.aggregate.to_string());
    add("launch-threshold", &launches.threshold.to_string());
    pairs
}

/// The preprocessor's options of `options` with `input` the source: one of a command line's
/// several inputs.
fn for_input(options: &CompileOptions, input: &std::path::Path) -> PreprocessOptions {
    PreprocessOptions { input: Some(input.to_path_buf()), ..options.preprocess.clone() }
}

/// The tasks of the command line, in the order they run, or its usage error (reported, with
/// the status to exit with).
fn tasks(cli: &Cli, options: &CompileOptions) -> Result<Vec<Task>, ExitCode> {
    let format = cli.error_format;
    let usage = |message: &str| {
        fail(format, &cli.inputs[0].display().to_string(), message);
        ExitCode::from(2)
    };
    let emit = options.emit;
    let images: Vec<cdpc::driver::fatbin::Image> = cli.gencode.concat();
    // nvcc's `-c` compiles each source as `-dc` does (without `-rdc`, a whole program's object).
    let device_c = cli.device_c || cli.compile;
    // `-dc` writes what `nvcc -dc` writes: a host object (`--emit obj`: the device object alone).
    let dc_emit = if emit == Emit::Cubin { Emit::HostObject } else { emit };
    if cli.preprocess_only {
        preprocess_cmd::check(&preprocess_cmd::request(cli), options)?;
        let listing = (options.list_headers != driver::HeaderList::None).then(|| {
            // The compilation `-c` makes of the source (a compiler cache keeps `-E -MD`'s list
            // for a cached `-c`): nvcc's `-c` is a whole program's unless `-rdc=true`.
            let source = &cli.inputs[0];
            let whole_program = !cli.rdc && !cli.device_c && dc_emit == Emit::HostObject && cli.language.unwrap_or_else(|| driver::Language::of_path(source)) == driver::Language::Cuda;
            let mut compile = CompileOptions { emit: dc_emit, separate: true, preprocess: for_input(options, source), host_object_images: images.clone(), whole_program, ..options.clone() };
            if let Some(image) = images.first() {
                compile.target.sm = image.sm();
            }
            compile
        });
        return Ok(vec![Task::Preprocess { listing }]);
    }
    if cli.host_header.is_some() && !(emit == Emit::HostObject || device_c && dc_emit == Emit::HostObject) {
        return Err(usage("`--host-header` describes the launchers of a host object (`-dc` or `--emit host-obj`)"));
    }
    if let Some(cu) = cli.host_header.as_ref().and_then(|_| cli.inputs.iter().find(|i| cli.language.unwrap_or_else(|| driver::Language::of_path(i)) == driver::Language::Cuda)) {
        fail(
            format,
            &cu.display().to_string(),
            "`--host-header` declares launchers made from the kernel language's signatures, and this file is CUDA C++: its host object holds its own host code, which host programs call; add `-x cdp` to read it as the kernel language and get the launchers",
        );
        return Err(ExitCode::from(2));
    }
    let inputs: Vec<Input> = cli.inputs.iter().map(|p| Input::classify(p)).collect();
    let sources: Vec<&std::path::Path> = inputs.iter().filter(|i| matches!(i, Input::Source(_))).map(Input::path).collect();
    // The output `-o` names, by its extension: device code whatever the inputs (`.cubin`, ...).
    let device_named = matches!(output_extension(cli), Some("cubin" | "ptx" | "fatbin" | "ll" | "bc"));
    if cli.run && (device_c || cli.device_link || cli.lib || cli.fatbin || cli.emit.is_some() || device_named) {
        return Err(usage("`-run` builds a program and runs it: give the program's sources and objects, without `-c`, `-dc`, `-dlink`, `-lib` or a device output"));
    }
    if cli.fatbin && (device_c || cli.device_link || cli.lib) {
        return Err(usage("`-fatbin` writes a fat binary of device code; `-c`, `-dc`, `-dlink` and `-lib` write objects and libraries: give one of them"));
    }
    if cli.generate_dependencies || cli.generate_user_dependencies {
        if let Some(object) = inputs.iter().find(|i| !matches!(i, Input::Source(_))) {
            fail(format, &object.path().display().to_string(), "`-M` lists the headers a source reads; an object or a library reads none");
            return Err(ExitCode::from(2));
        }
        let output = cli.dependency_file.as_deref().or(cli.output.as_deref()).map_or(driver::jobs::Output::Stdout, output_at);
        return Ok(vec![Task::ListDependencies { sources: cli.inputs.clone(), output, emit: dc_emit }]);
    }
    let lists = options.list_headers != driver::HeaderList::None;
    if !lists && (cli.dependency_file.is_some() || cli.dependency_target.is_some() || cli.phony_targets) {
        return Err(usage("`-MF`, `-MT` and `-MP` shape the dependency list that `-MD` or `-MMD` asks for"));
    }
    if lists && cli.dependency_file.is_some() && sources.len() > 1 {
        return Err(usage("`-MF` names the dependency list of one source: give one source, or leave `-MF` out to write each beside its output"));
    }
    if lists && !device_c && (cli.device_link || inputs.len() > 1 || sources.len() != inputs.len() || !cli.library.is_empty()) {
        return Err(usage("`-MD` lists the headers of one compilation: compile each source with `-dc -MD` (or alone), then link"));
    }
    let with_images = || CompileOptions { host_object_images: images.clone(), ..options.clone() };
    if cli.lib {
        // nvcc's `-lib`: a static library of the inputs' objects.
        let output = cli.output.clone().unwrap_or_else(|| PathBuf::from("a.a"));
        if output == std::path::Path::new("-") {
            return Err(usage("`-o -` writes text; a library is an archive, which needs a file name"));
        }
        return Ok(vec![Task::Library { inputs: program_inputs(cli), output, archiver: cli.archiver.clone(), archive_args: cli.xarchive.clone(), options: with_images() }]);
    }
    // `-o x.cubin` (`.ptx`, `.fatbin`, `.ll`) asks for device code, whatever the inputs.
    let device_output = cli.fatbin || device_named;
    if cli.device_link && cli.emit.is_none() && !device_output {
        // nvcc's `-dlink`: the device link's registration object, for the host linker.
        if let Some(source) = sources.first() {
            return Err(usage(&format!("`{}` is a source: `-dlink` links objects; compile it with `-dc` first", source.display())));
        }
        let output = cli.output.clone().unwrap_or_else(|| PathBuf::from("a_dlink.o"));
        if output == std::path::Path::new("-") {
            return Err(usage("`-o -` writes text; a device link writes an object, which needs a file name"));
        }
        return Ok(vec![Task::DeviceLink { inputs: cli.inputs.clone(), output, options: with_images() }]);
    }
    // nvcc's `-run` of a program already built: run, nothing compiled (nor read as an object).
    if let (true, [only]) = (cli.run, cli.inputs.as_slice()) {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        let built = only.extension().is_none() && std::fs::metadata(only).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        let mut head = [0u8; 4];
        if built && std::fs::File::open(only).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == *b"\x7fELF" {
            return Ok(vec![Task::Run { program: only.clone(), args: run_arguments(cli) }]);
        }
    }
    let inputs_of_program = program_inputs(cli);
    let holds_host_code = inputs_of_program.iter().any(|i| match i {
        driver::program::ProgramInput::Source(p) => cli.language.unwrap_or_else(|| driver::Language::of_path(p)) == driver::Language::Cuda,
        driver::program::ProgramInput::Host(_) => true,
        driver::program::ProgramInput::Object(p) => driver::program::holds_host_code(p),
    });
    if !device_c && !cli.device_link && cli.emit.is_none() && !device_output && holds_host_code {
        // nvcc's default: a program.
        let output = cli.output.clone().unwrap_or_else(|| PathBuf::from("a.out"));
        if output == std::path::Path::new("-") {
            return Err(usage("`-o -` writes text; a program needs a file name"));
        }
        let mut tasks = vec![Task::Program { inputs: inputs_of_program, output: output.clone(), options: with_images() }];
        if cli.run {
            tasks.push(Task::Run { program: output, args: run_arguments(cli) });
        }
        return Ok(tasks);
    }
    if device_c {
        return compile_each(cli, &inputs, dc_emit, options);
    }
    if !cli.gencode.is_empty() {
        if emit != Emit::Cubin {
            // The fat binary is the output; another --emit would be silently ignored.
            return Err(usage("`-gencode` writes a fat binary; `--emit` other than cubin takes one `--arch` instead"));
        }
        let output = cli.output.clone().unwrap_or_else(|| default_output(cli, &cli.inputs[0], "fatbin"));
        let dependencies = match cli.inputs.as_slice() {
            [input] => dependency_file(cli, options, input, Some(&output)),
            _ => None,
        };
        let options = CompileOptions { emit: Emit::Cubin, ..options.clone() };
        return Ok(vec![Task::Fatbin { inputs, images, link: link_options(cli), output, dependencies, options }]);
    }
    if cli.device_link || inputs.len() > 1 || sources.len() != inputs.len() || !cli.library.is_empty() {
        if cli.output.as_deref() == Some(std::path::Path::new("-")) {
            return Err(usage("`-o -` writes text; a link writes a cubin, which needs a file name"));
        }
        let output = cli.output.clone().unwrap_or_else(|| default_output(cli, &cli.inputs[0], Emit::Cubin.extension()));
        return Ok(vec![Task::Link { inputs, link: link_options(cli), output }]);
    }
    if cli.output.as_deref() == Some(std::path::Path::new("-")) && matches!(emit, Emit::Cubin | Emit::Object | Emit::HostObject) {
        return Err(usage("`-o -` writes text; binary output needs a file name"));
    }
    let source = cli.inputs[0].clone();
    let path = cli.output.clone().unwrap_or_else(|| default_output(cli, &source, options.emit.extension()));
    Ok(vec![compile_task(cli, source, path, options.clone())])
}

/// Where a task writes what `-o` (or `-MF`) names: standard output for `-`, else the file.
fn output_at(path: &std::path::Path) -> driver::jobs::Output {
    if path == std::path::Path::new("-") {
        driver::jobs::Output::Stdout
    } else {
        driver::jobs::Output::File(path.to_path_buf())
    }
}

/// The task that compiles `source` to `path` (`-`: standard output), with the dependency list
/// `options` asks for beside it.
fn compile_task(cli: &Cli, source: PathBuf, path: PathBuf, options: CompileOptions) -> Task {
    let output = output_at(&path);
    let dependencies = dependency_file(cli, &options, &source, matches!(output, driver::jobs::Output::File(_)).then_some(path.as_path()));
    Task::Compile { source, output, dependencies, header: cli.host_header.clone(), options }
}

/// Where `-MD`'s (`-MMD`'s) dependency list of `source`'s compilation to `output` goes, when
/// `options` asks for one ([`dependency_path`]).
fn dependency_file(cli: &Cli, options: &CompileOptions, source: &std::path::Path, output: Option<&std::path::Path>) -> Option<PathBuf> {
    (options.list_headers != driver::HeaderList::None).then(|| dependency_path(cli, source, output))
}

/// `-dc` (and `-c`): each source on its own, as one of several translation units; a host
/// file by the host compiler.
fn compile_each(cli: &Cli, inputs: &[Input], dc_emit: Emit, options: &CompileOptions) -> Result<Vec<Task>, ExitCode> {
    let usage = |message: &str| {
        fail(cli.error_format, &cli.inputs[0].display().to_string(), message);
        ExitCode::from(2)
    };
    let images: Vec<cdpc::driver::fatbin::Image> = cli.gencode.concat();
    let sources: Vec<&std::path::Path> = inputs.iter().filter(|i| matches!(i, Input::Source(_))).map(Input::path).collect();
    if let Some(object) = inputs.iter().find(|i| matches!(i, Input::Object(_))) {
        return Err(usage(&format!("`{}` is an object: `-dc` compiles sources; link objects without `-dc`", object.path().display())));
    }
    // `-dc -gencode ...`: one object whose fat binary holds each architecture's code, as
    // nvcc's, for CUDA C++ (the kernel language's host object takes one `--arch`).
    if !images.is_empty() {
        if dc_emit != Emit::HostObject {
            return Err(usage("`-gencode` with `-dc --emit obj`: a device object is for one architecture; give one `--arch`, or leave `--emit obj` out for an object with each architecture's code"));
        }
        if let Some(other) = sources
            .iter()
            .find(|s| cli.language.unwrap_or_else(|| driver::Language::of_path(s)) != driver::Language::Cuda && !(cli.language.is_none() && driver::program::ProgramInput::is_host_file(s)))
        {
            return Err(usage(&format!("`{}`: `-dc` with several `-gencode` targets is for CUDA C++; compile the kernel language once per `--arch`", other.display())));
        }
    }
    if cli.output.is_some() && sources.len() > 1 {
        return Err(usage("`-o` with `-dc` names one object: give one source, or leave `-o` out to write each source's object in the current folder (or `-odir`'s)"));
    }
    // nvcc's `-c` without `-rdc`: a whole program's object (of CUDA C++); otherwise `-dc`.
    let whole_compile = cli.compile && !cli.device_c && !cli.rdc;
    let mut tasks = Vec::new();
    for source in sources {
        if cli.language.is_none() && driver::program::ProgramInput::is_host_file(source) {
            // nvcc's `-c main.cpp`: the host compiler's object.
            // Without `-o`, each object goes to `-odir`'s folder (`default_output`).
            let output = cli.output.clone().unwrap_or_else(|| default_output(cli, source, "o"));
            let dependencies = dependency_file(cli, options, source, Some(&output));
            tasks.push(Task::HostCompile { source: source.to_path_buf(), output, dependencies });
            continue;
        }
        // LLVM IR for the device has no host code: its `-dc` object is the device object.
        let language = cli.language.unwrap_or_else(|| driver::Language::of_path(source));
        let emit = if language == driver::Language::Ir && dc_emit == Emit::HostObject { Emit::Object } else { dc_emit };
        let output = cli.output.clone().unwrap_or_else(|| default_output(cli, source, emit.extension()));
        let whole_program = whole_compile && emit == Emit::HostObject && language == driver::Language::Cuda;
        let mut options = CompileOptions { emit, separate: true, preprocess: for_input(options, source), host_object_images: images.clone(), whole_program, ..options.clone() };
        // The first image's architecture compiles the host side and that image.
        if let Some(image) = images.first() {
            options.target.sm = image.sm();
        }
        if output == std::path::Path::new("-") && emit != Emit::Ptx && emit != Emit::LlvmIr {
            return Err(usage("`-o -` writes text; binary output needs a file name"));
        }
        tasks.push(compile_task(cli, source.to_path_buf(), output, options));
    }
    Ok(tasks)
}

impl Task {
    /// The jobs this task runs, as `--dry-run` prints them ([`driver::jobs`]): read from the
    /// task alone, as its run is (`runner::run_task`). `cli` is read for `-E`, whose plan is its
    /// command line (`preprocess_cmd::request`), and for how `-M`'s rules are named and compiled
    /// (`-MT`, `-x`), as the runner reads them.
    pub(crate) fn jobs(&self, cli: &Cli, program: &driver::program::ProgramOptions, options: &CompileOptions) -> Vec<driver::jobs::Job> {
        use driver::jobs::{Action, Job, Output};
        let paths = |inputs: &[Input]| inputs.iter().map(|i| i.path().to_path_buf()).collect::<Vec<_>>();
        let archs = |options: &CompileOptions| {
            let mut archs: Vec<String> = cdpc::driver::fatbin::architectures(&options.host_object_images).iter().map(ToString::to_string).collect();
            if archs.is_empty() {
                archs.push(options.target.sm.to_string());
            }
            archs.join(", ")
        };
        match self {
            Task::Preprocess { .. } => {
                let output = cli.output.as_deref().map_or(Output::Stdout, output_at);
                let host = cli.language.is_none() && cli.inputs.first().is_some_and(|i| driver::program::ProgramInput::is_host_file(i));
                let mut job = Job::new(Action::Preprocess, cli.inputs.clone(), output, if host { "the host compiler's `-E`" } else { "CUDA C++: each device side, then the host side" });
                if options.list_headers != driver::HeaderList::None {
                    job.also.push(preprocess_cmd::header_list_path(cli));
                }
                vec![job]
            }
            Task::ListDependencies { sources, output, emit } => sources
                .iter()
                .map(|source| {
                    let how = if cli.language.is_none() && driver::program::ProgramInput::is_host_file(source) {
                        "the host compiler's `-M`".to_string()
                    } else {
                        let preprocess = PreprocessOptions { input: Some(source.clone()), ..options.preprocess.clone() };
                        driver::jobs::compile_note(&CompileOptions { emit: *emit, separate: true, preprocess, ..options.clone() })
                    };
                    let note = format!("the Make rule of {:?}, compiled as {how} and written nowhere", dependency_target(cli, source));
                    Job::new(Action::ListHeaders, vec![source.clone()], output.clone(), note)
                })
                .collect(),
            Task::Library { inputs, output, options, .. } => driver::program::library_jobs(inputs, output, program, options),
            Task::DeviceLink { inputs, output, options } => {
                vec![Job::new(Action::DeviceLink, inputs.clone(), Output::File(output.clone()), driver::program::device_link_note(&archs(options), options))]
            }
            Task::Program { inputs, output, options } => driver::program::program_jobs(inputs, output, program, options),
            Task::Run { program, args } => {
                vec![Job::new(Action::Run, vec![runnable(program)], Output::Nothing, if args.is_empty() { String::new() } else { format!("arguments: {}", args.join(" ")) })]
            }
            Task::HostCompile { source, output, dependencies } => {
                let mut job = Job::new(Action::HostCompile, vec![source.clone()], Output::File(output.clone()), "the host compiler's object");
                job.also.extend(dependencies.clone());
                vec![job]
            }
            Task::Compile { source, output, dependencies, header, options } => {
                let mut job = driver::jobs::Job::compile(source, output.clone(), options);
                job.also.extend(dependencies.clone());
                job.also.extend(header.clone());
                vec![job]
            }
            Task::Fatbin { inputs, images, output, dependencies, .. } => {
                let images: Vec<String> = images.iter().map(ToString::to_string).collect();
                let mut job = Job::new(Action::Fatbin, paths(inputs), Output::File(output.clone()), format!("each input compiled and linked for each image: {}", images.join(", ")));
                job.also.extend(dependencies.clone());
                vec![job]
            }
            Task::Link { inputs, output, .. } => vec![Job::new(
                Action::Link,
                paths(inputs),
                Output::File(output.clone()),
                format!("each source compiled to a device object, then nvlink with libcudadevrt: a cubin for {}", options.target.sm),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdpc::back::{FloatMath, Fmad};
    use cdpc::front::cdp::preprocess::MacroOption;
    use cdpc::pipeline::aggregate::Granularity;
    use cdpc::Target;
    use clap::{CommandFactory, FromArgMatches};
    use std::time::Duration;

    /// The compile options of a `cdpc` command line (cdpc's own spellings), read through the
    /// pairs as `plan` reads them.
    fn options_of(args: &[&str]) -> CompileOptions {
        let matches = Cli::command().try_get_matches_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let cli = Cli::from_arg_matches(&matches).unwrap();
        driver::option_pairs::from_os_pairs(compile_pairs(&cli, &matches)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn a_plain_command_line_gets_nvccs_defaults_and_the_launch_optimizations() {
        let o = options_of(&["cdpc", "a.cu"]);
        assert_eq!(o.target, Target::default());
        assert_eq!((o.opt_level, o.emit), (3, Emit::Cubin));
        assert_eq!((o.aggregate, o.launch_threshold), (Granularity::Auto, 128));
        assert_eq!(o.fmad, Fmad::Contract);
        assert_eq!(o.float_math, FloatMath::default());
        assert_eq!(o.tool_timeout, Some(Duration::from_secs(600)));
        assert_eq!(o.preprocess.input.as_deref(), Some(std::path::Path::new("a.cu")));
        assert_eq!((o.debug, o.list_headers, o.language, o.separate), (None, driver::HeaderList::None, None, false));
        assert!(o.ptxas_args.is_empty() && o.nvlink_args.is_empty() && o.cuda_cxx.host_args.is_empty());
        assert!(!o.warnings.silence_all && !o.warnings.deny_all && !o.pass_remarks && !o.header_remarks);
    }

    /// Where nvcc has one option win whatever the order, it wins on either side.
    #[test]
    fn nvccs_winners_win_in_either_order() {
        for args in [["cdpc", "a.cu", "-G", "--lineinfo"], ["cdpc", "a.cu", "--lineinfo", "-G"]] {
            let o = options_of(&args);
            assert_eq!(o.debug, Some(cdpc::back::DebugLevel::Full), "{args:?}");
            // `-G` builds are not optimising builds: no launch optimizations
            assert_eq!((o.aggregate, o.launch_threshold), (Granularity::Off, 0), "{args:?}");
        }
        let fast_but_exact_division = FloatMath { ftz: true, prec_div: true, prec_sqrt: false, fast_library: true };
        for args in [["cdpc", "a.cu", "--prec-div", "true", "--use-fast-math"], ["cdpc", "a.cu", "--use-fast-math", "--prec-div", "true"]] {
            assert_eq!(options_of(&args).float_math, fast_but_exact_division, "{args:?}");
        }
        // `-w` quiets ptxas and nvlink after their own arguments, whatever the order written
        let o = options_of(&["cdpc", "a.cu", "-w", "--Xptxas", "-v", "--Xnvlink", "--verbose"]);
        assert!(o.warnings.silence_all);
        assert_eq!(o.ptxas_args, ["-v", "--disable-warnings"]);
        assert_eq!(o.nvlink_args, ["--verbose", "--disable-warnings"]);
    }

    /// Random command lines of cdpc's own options: every one clap takes becomes pairs that the
    /// pairs' reading takes, and what clap read arrives (the target, the level, the output,
    /// the debug level, the single-precision options, the folders).
    #[test]
    fn random_command_lines_arrive_through_the_pairs() {
        const CHOICES: &[&[&str]] = &[
            &["--arch", "sm_80", "sm_90a", "sm_100", "75"],
            &["-O", "0", "1", "2", "3"],
            &["--emit", "cubin", "obj", "host-obj", "ptx", "llvm-ir"],
            &["--address-size", "32", "64"],
            &["--launch-abi", "v1", "v2"],
            &["--default-stream", "legacy", "null", "per-thread"],
            &["--ftz", "true", "false"],
            &["--prec-div", "true", "false"],
            &["--prec-sqrt", "true", "false"],
            &["--fmad", "true", "false"],
            &["--std", "c++11", "c++17", "c++23"],
            &["-x", "cu", "cdp", "ir"],
            &["--faggregate-launches", "auto", "warp", "block", "grid", "off"],
            &["--flaunch-threshold", "0", "64", "4096"],
            &["--tool-timeout", "0", "0.25", "600"],
            &["--deny", "W0209", "W0305"],
            &["--Xptxas", "-v", "--warn-on-spills"],
            &["--Xcompiler", "-fPIC", "-O2"],
            &["-D", "N=4", "A", "B=x y"],
            &["-U", "N", "B"],
            &["-I", "inc", "more/inc"],
            &["--isystem", "sys"],
        ];
        const FLAGS: &[&str] = &[
            "--use-fast-math",
            "--lineinfo",
            "-G",
            "-w",
            "--Werror",
            "--strict-param-limit",
            "--fdevice-malloc-pool",
            "--fno-device-malloc-pool",
            "--flegacy-warp-intrinsics",
            "--MD",
            "--MMD",
            "--overwrite",
            "--Wno-deprecated-declarations",
            "--flaunch-optimizations",
            "--fno-launch-optimizations",
            "--rdc",
        ];
        let mut seed: u64 = 0x0c0f_fee5;
        let mut next = move |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..2000 {
            let mut args: Vec<String> = vec!["cdpc".into(), "k.cu".into()];
            for _ in 0..next(10) {
                if next(3) == 0 {
                    args.push(FLAGS[next(FLAGS.len())].into());
                } else {
                    let choice = CHOICES[next(CHOICES.len())];
                    args.push(choice[0].into());
                    args.push(choice[1 + next(choice.len() - 1)].into());
                }
            }
            let Ok(matches) = Cli::command().try_get_matches_from(&args) else { continue };
            let cli = Cli::from_arg_matches(&matches).unwrap();
            let o = driver::option_pairs::from_os_pairs(compile_pairs(&cli, &matches)).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!((o.target.sm, o.target.launch_abi, o.target.default_stream), (cli.arch, cli.launch_abi, cli.default_stream), "{args:?}");
            assert_eq!(o.target.address_size == AddressSize::Bits32, matches!(cli.address_size, AddressSizeArg::Bits32), "{args:?}");
            assert_eq!(o.opt_level, cli.opt_level, "{args:?}");
            assert_eq!(o.language, cli.language, "{args:?}");
            let debug = if cli.device_debug { Some(cdpc::back::DebugLevel::Full) } else { cli.lineinfo.then_some(cdpc::back::DebugLevel::LineTables) };
            assert_eq!(o.debug, debug, "{args:?}");
            assert_eq!(o.float_math.ftz, cli.ftz.unwrap_or(cli.use_fast_math), "{args:?}");
            assert_eq!(o.float_math.prec_div, cli.prec_div.unwrap_or(!cli.use_fast_math), "{args:?}");
            assert_eq!(o.float_math.prec_sqrt, cli.prec_sqrt.unwrap_or(!cli.use_fast_math), "{args:?}");
            assert_eq!(o.float_math.fast_library, cli.use_fast_math, "{args:?}");
            assert_eq!(o.fmad == Fmad::Contract, cli.fmad, "{args:?}");
            assert_eq!(o.cuda_cxx.std, cli.std, "{args:?}");
            assert_eq!(o.tool_timeout, cli.tool_timeout.0, "{args:?}");
            assert_eq!(o.preprocess.system_include_dirs.len() + o.preprocess.include_dirs.len(), args.iter().filter(|a| *a == "-I" || *a == "--isystem").count(), "{args:?}");
            assert_eq!(o.preprocess.macros.len(), args.iter().filter(|a| *a == "-D" || *a == "-U").count(), "{args:?}");
            assert_eq!(o.cuda_cxx.host_args, cli.xcompiler, "{args:?}");
            let pool = if cli.device_malloc_pool {
                driver::MallocPool::On
            } else if cli.no_device_malloc_pool {
                driver::MallocPool::Off
            } else {
                driver::MallocPool::AtLink
            };
            assert_eq!(o.malloc_pool, pool, "{args:?}");
            assert_eq!(o.warnings.silence_all, cli.disable_warnings, "{args:?}");
        }
    }

    #[test]
    fn every_option_reaches_the_compile_options() {
        let o = options_of(&[
            "cdpc",
            "k.cu",
            "--arch",
            "sm_80",
            "--address-size",
            "32",
            "--launch-abi",
            "v1",
            "--default-stream",
            "per-thread",
            "-O",
            "2",
            "--emit",
            "ptx",
            "--rdc",
            "-D",
            "A=1",
            "-U",
            "B",
            "-D",
            "C",
            "-I",
            "inc",
            "--isystem",
            "sys",
            "--fmad",
            "false",
            "--ftz",
            "true",
            "-x",
            "cu",
            "--clang",
            "/opt/clang++",
            "--std",
            "c++20",
            "--Xcompiler",
            "-fPIC",
            "--Wno-deprecated-declarations",
            "--MMD",
            "--nv-module-id",
            "id_1",
            "--overwrite",
            "--tool-timeout",
            "2.5",
            "--Werror",
            "--deny",
            "W0209",
            "--allow",
            "W0316",
            "--strict-param-limit",
            "--cuda-home",
            "/srv/toolkit",
            "--fdevice-malloc-pool",
            "--flegacy-warp-intrinsics",
            "--Rpass",
            "aggregate",
            "--R",
            "skipped-headers",
            "--faggregate-launches",
            "warp",
        ]);
        assert_eq!(o.target, Target { sm: "sm_80".parse().unwrap(), address_size: AddressSize::Bits32, launch_abi: cdpc::LaunchAbi::V1, default_stream: cdpc::DefaultStream::PerThread });
        assert_eq!((o.opt_level, o.emit, o.separate), (2, Emit::Ptx, true));
        assert_eq!(o.preprocess.macros, [MacroOption::Define("A=1".into()), MacroOption::Undefine("B".into()), MacroOption::Define("C".into())]);
        assert_eq!((o.preprocess.include_dirs.clone(), o.preprocess.system_include_dirs.clone()), (vec![PathBuf::from("inc")], vec![PathBuf::from("sys")]));
        assert_eq!(o.fmad, Fmad::Separate);
        assert_eq!(o.float_math, FloatMath { ftz: true, ..FloatMath::default() });
        assert_eq!(o.language, Some(driver::Language::Cuda));
        assert_eq!(o.clang.clang, Some(PathBuf::from("/opt/clang++")));
        assert_eq!(o.cuda_cxx.std, Some(cdpc::front::cuda::CxxStandard::Cxx20));
        assert_eq!(o.cuda_cxx.host_args, ["-fPIC"]);
        assert_eq!(o.cuda_cxx.warning_args, ["-Wno-deprecated-declarations"]);
        assert_eq!(o.list_headers, driver::HeaderList::User);
        assert_eq!(o.nv_module_id.as_deref(), Some("id_1"));
        assert_eq!(o.overwrite, driver::Overwrite::Any);
        assert_eq!(o.tool_timeout, Some(Duration::from_millis(2500)));
        assert!(o.warnings.deny_all);
        assert_eq!(o.warnings.deny, [Code::parse("W0209").unwrap(), Code::ParamBufferOver4K]);
        assert_eq!(o.warnings.allow, [Code::parse("W0316").unwrap()]);
        assert_eq!(o.tools.cuda_home, Some(PathBuf::from("/srv/toolkit")));
        assert!(o.malloc_pool == driver::MallocPool::On && o.legacy_warp_intrinsics && o.pass_remarks && o.header_remarks);
        assert_eq!(options_of(&["cdpc", "k.cu"]).malloc_pool, driver::MallocPool::AtLink);
        assert_eq!(options_of(&["cdpc", "k.cu", "--fdevice-malloc-pool", "--fno-device-malloc-pool"]).malloc_pool, driver::MallocPool::Off);
        assert_eq!(options_of(&["cdpc", "k.cu", "--fno-device-malloc-pool", "--fdevice-malloc-pool"]).malloc_pool, driver::MallocPool::On);
        // an explicit aggregation chooses exactly: no threshold unless given too
        assert_eq!((o.aggregate, o.launch_threshold), (Granularity::Warp, 0));
        assert_eq!(options_of(&["cdpc", "k.cu", "--MD"]).list_headers, driver::HeaderList::All);
        assert_eq!(options_of(&["cdpc", "k.cu", "--tool-timeout", "0"]).tool_timeout, None);
    }
}
