//! nvcc's command line, read into cdpc's: the options a Makefile or CMake build passes to nvcc,
//! each either translated into cdpc's own option, accepted as nvcc's without anything for cdpc
//! to do, or refused with `E0707` and what to do instead.
//!
//! nvcc spells every option two ways, `--long-name` and `-short` (`--gpu-architecture` and
//! `-arch`), and gives a value as `-opt=value` or `-opt value`; list options take values
//! separated by commas (`-Xcompiler -fPIC,-Wall`). [`translate`] rewrites the arguments it
//! knows into the long options clap parses (`Cli`, command_line.rs) and leaves every other argument
//! as it is, so cdpc's own spellings (`-O3`, `-Idir`, `-DNAME`, `-o file`) keep working.
//!
//! What cdpc accepts and ignores is listed in [`NVCC`] with the reason: options about nvcc's
//! host compiler (cdpc compiles a `.cu` file's host code with its own Clang) or about EDG's
//! front end. `--expt-relaxed-constexpr` and `--extended-lambda` define nvcc's macros, which
//! turn off cdpc's checks of the rules they relax.

use cdpc::Code;

/// What cdpc does with one nvcc option.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// cdpc's own long option (`--arch`), given the value if the option takes one.
    Same(&'static str),
    /// cdpc's own long option once for each comma-separated value (`-I a,b`).
    EachOf(&'static str),
    /// cdpc's own long option once for each word of the comma-separated values, split as a
    /// shell splits them (`-Xcompiler "-O2 -fPIC",-Wall` is three): nvcc writes a tool's
    /// options into the tool's command line unquoted (`nvcc -dryrun`), so a Makefile's
    /// `--compiler-options "-O2 -pthread -fPIC"` is three options of the host compiler.
    EachWord(&'static str),
    /// These arguments, whatever the value.
    Becomes(&'static [&'static str]),
    /// `--Xptxas=<this>=<value>`: an option nvcc hands ptxas.
    Ptxas(&'static str),
    /// Accepted, nothing to do: nvcc's own business that cdpc has no counterpart for.
    Ignored,
    /// `-Werror <kinds>`: `all-warnings` is cdpc's `--Werror`; the other kinds name EDG's
    /// warnings, which cdpc does not give.
    WerrorKinds,
    /// Accepted with one of these values, which are what cdpc does anyway (`--machine 64`,
    /// `-stdlib libstdc++`); another value is `E0707` with this help.
    Only(&'static [&'static str], &'static str),
    /// `-include FILE` for both sides of a `.cu` file and for host files (nvcc's
    /// `--pre-include`), carried as the host compiler's preprocessor options, which both
    /// sides read.
    PreInclude,
    /// A `true`/`false` option whose `true` is what cdpc does anyway: `false` becomes these
    /// arguments.
    IfFalse(&'static [&'static str]),
    /// Not in cdpc: `E0707`, with this help.
    Unsupported(&'static str),
    /// This mark, with the value after `=` if the option takes one, for a later pass to read
    /// and replace: nvcc's `-forward-unknown-to-host-compiler` (`-linker`), read by
    /// [`forward_unknown`], and `-code`, read by [`architectures`].
    Marked(&'static str),
}

/// Whether an nvcc option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    No,
    Yes,
    /// `true` or `false`, which may be left out (`-rdc` alone is `-rdc=true`): the next
    /// argument is the value only if it is one of those.
    Bool,
}

/// One nvcc option: its long and short names, whether it takes a value, and what cdpc does.
struct NvccOption {
    long: &'static str,
    short: &'static str,
    value: Value,
    action: Action,
}

const fn opt(long: &'static str, short: &'static str, value: bool, action: Action) -> NvccOption {
    NvccOption { long, short, value: if value { Value::Yes } else { Value::No }, action }
}

const fn flag(long: &'static str, short: &'static str, action: Action) -> NvccOption {
    NvccOption { long, short, value: Value::Bool, action }
}

use Action::*;

/// nvcc 13's options that cdpc reads as nvcc does (names from `nvcc --help`). Options nvcc and
/// cdpc share under one spelling that clap already parses (`-o`, `-I`, `-D`, `-U`, `-l`, `-L`,
/// `-O`, `-G`, `-x`, `-v`, `-c`, `-w`, `--std`) are here only where nvcc has another name.
const NVCC: &[NvccOption] = &[
    // What to build.
    opt("--gpu-architecture", "-arch", true, Same("--arch")),
    opt("--generate-code", "-gencode", true, Same("--gencode")),
    opt("--device-c", "-dc", false, Same("--device-c")),
    opt("--device-link", "-dlink", false, Same("--device-link")),
    opt("--ptx", "-ptx", false, Becomes(&["--emit=ptx"])),
    opt("--cubin", "-cubin", false, Becomes(&["--emit=cubin"])),
    // `-c` without `-rdc` writes a whole program's object, as nvcc's; cdpc's programs and
    // `-dc` objects are always relocatable (device-side launches need it).
    flag("--relocatable-device-code", "-rdc", Same("--rdc")),
    opt("--output-file", "-o", true, Same("-o")),
    opt("--std", "-std", true, Same("--std")),
    opt("--x", "-x", true, Same("-x")),
    opt("--optimize", "-O", true, Same("-O")),
    opt("--include-path", "-I", true, EachOf("-I")),
    opt("--system-include", "-isystem", true, EachOf("--isystem")),
    opt("--define-macro", "-D", true, EachOf("-D")),
    opt("--undefine-macro", "-U", true, EachOf("-U")),
    opt("--library", "-l", true, EachOf("-l")),
    opt("--library-path", "-L", true, EachOf("-L")),
    opt("--generate-line-info", "-lineinfo", false, Same("--lineinfo")),
    // The jobs, printed and not run (Clang's spelling too).
    opt("--dryrun", "-dryrun", false, Same("--dry-run")),
    opt("-###", "-###", false, Same("--dry-run")),
    // Dependency lists for make.
    opt("--generate-dependencies-with-compile", "-MD", false, Same("--MD")),
    opt("--generate-nonsystem-dependencies-with-compile", "-MMD", false, Same("--MMD")),
    opt("--dependency-output", "-MF", true, Same("--MF")),
    opt("--dependency-target-name", "-MT", true, Same("--MT")),
    opt("--generate-dependency-targets", "-MP", false, Same("--MP")),
    opt("--default-stream", "-default-stream", true, Same("--default-stream")),
    // Floating point.
    flag("--fmad", "-fmad", Same("--fmad")),
    flag("--ftz", "-ftz", Same("--ftz")),
    flag("--prec-div", "-prec-div", Same("--prec-div")),
    flag("--prec-sqrt", "-prec-sqrt", Same("--prec-sqrt")),
    opt("--use_fast_math", "-use_fast_math", false, Same("--use-fast-math")),
    // Tools.
    opt("--compiler-options", "-Xcompiler", true, EachWord("--Xcompiler")),
    opt("--ptxas-options", "-Xptxas", true, EachWord("--Xptxas")),
    opt("--nvlink-options", "-Xnvlink", true, EachWord("--Xnvlink")),
    opt("--maxrregcount", "-maxrregcount", true, Ptxas("--maxrregcount")),
    // With relocatable device code nvcc asks nvlink; cdpc's ptxas says it for each file.
    opt("--resource-usage", "-res-usage", false, Becomes(&["--Xptxas=-v"])),
    // Host debug information, for the host side of a `.cu` file's object.
    opt("--debug", "-g", false, Becomes(&["--Xcompiler=-g"])),
    // Warnings.
    opt("--disable-warnings", "-w", false, Same("--disable-warnings")),
    opt("--Werror", "-Werror", true, WerrorKinds),
    opt("--Wno-deprecated-gpu-targets", "-Wno-deprecated-gpu-targets", false, Ignored),
    opt("--Wno-deprecated-declarations", "-Wno-deprecated-declarations", false, Same("--Wno-deprecated-declarations")),
    opt("--Wreorder", "-Wreorder", false, Ignored),
    opt("--Wdefault-stream-launch", "-Wdefault-stream-launch", false, Ignored),
    opt("--Wmissing-launch-bounds", "-Wmissing-launch-bounds", false, Ignored),
    opt("--Wext-lambda-captures-this", "-Wext-lambda-captures-this", false, Ignored),
    // EDG's diagnostics by number: Clang's are other messages.
    opt("--diag-suppress", "-diag-suppress", true, Ignored),
    opt("--diag-warn", "-diag-warn", true, Ignored),
    opt("--diag-error", "-diag-error", true, Ignored),
    opt("--display-error-number", "-err-no", false, Ignored),
    opt("--no-display-error-number", "-no-err-no", false, Ignored),
    opt("--Xcudafe", "-Xcudafe", true, Ignored),
    // nvcc's macros, as nvcc defines them; cdpc's check of nvcc's rules (clang/shim.cpp,
    // `NvccRules`) reads them: `constexpr` host functions called from device code, lambdas
    // annotated `__device__` or `__host__`.
    opt("--expt-relaxed-constexpr", "-expt-relaxed-constexpr", false, Becomes(&["-D__CUDACC_RELAXED_CONSTEXPR__=1"])),
    opt("--extended-lambda", "-extended-lambda", false, Becomes(&["-D__CUDACC_EXTENDED_LAMBDA__=1"])),
    opt("--expt-extended-lambda", "-expt-extended-lambda", false, Becomes(&["-D__CUDACC_EXTENDED_LAMBDA__=1"])),
    // nvcc's host compiler and host link: cdpc compiles a `.cu` file's host code with its own
    // Clang and links no host program.
    opt("--compiler-bindir", "-ccbin", true, Same("--ccbin")),
    opt("--allow-unsupported-compiler", "-allow-unsupported-compiler", false, Ignored),
    // An option neither cdpc nor nvcc knows goes to the host compiler (or linker) instead of
    // being an error: [`forward_unknown`] (CMake passes the first to every CUDA compilation, and
    // `target_compile_options(... -Wall)` arrives bare).
    opt("--forward-unknown-to-host-compiler", "-forward-unknown-to-host-compiler", false, Marked(FORWARD_TO_COMPILER)),
    opt("--forward-unknown-to-host-linker", "-forward-unknown-to-host-linker", false, Marked(FORWARD_TO_LINKER)),
    opt("--linker-options", "-Xlinker", true, EachWord("--Xlinker")),
    opt("--cudart", "-cudart", true, Same("--cudart")),
    opt("--shared", "-shared", false, Same("--shared")),
    opt("--cudadevrt", "-cudadevrt", true, Ignored),
    opt("--m64", "-m64", false, Ignored),
    // How nvcc runs its own steps.
    opt("--threads", "-t", true, Ignored),
    opt("--split-compile", "-split-compile", true, Same("--split-compile")),
    opt("--keep", "-keep", false, Ignored),
    opt("--keep-dir", "-keep-dir", true, Ignored),
    opt("--save-temps", "-save-temps", false, Ignored),
    opt("--objdir-as-tempdir", "-objtemp", false, Ignored),
    // Refused, with what to do instead.
    // `-arch=compute_XX -code=sm_XX,compute_XX`: a `-gencode` of the two ([`architectures`]).
    opt("--gpu-code", "-code", true, Marked(GPU_CODE)),
    opt("--fatbin", "-fatbin", false, Same("--fatbin")),
    opt("--preprocess", "-E", false, Same("--preprocess")),
    // What a compiler cache adds to the `-E` it hashes: sccache, which takes cdpc for its host
    // compiler (docs/SCCACHE.md), asks GCC's `-P` (no line markers) when its preprocessor cache
    // mode is off, and with Clang 14 or later as the host compiler Clang's
    // `-fminimize-whitespace`. Accepted, and cdpc's `-E` keeps its line markers: they name
    // every file either side read, so the text changes when any of them is moved or renamed.
    opt("-P", "-P", false, Ignored),
    opt("-fminimize-whitespace", "-fminimize-whitespace", false, Ignored),
    opt("--generate-dependencies", "-M", false, Same("--M")),
    opt("--generate-nonsystem-dependencies", "-MM", false, Same("--MM")),
    opt("--pre-include", "-include", true, PreInclude),
    // A program is what cdpc builds when nothing else is asked, as nvcc.
    opt("--link", "-link", false, Ignored),
    opt("--run", "-run", false, Same("--run")),
    // Link-time optimisation of device code (CMake's `INTERPROCEDURAL_OPTIMIZATION` for CUDA):
    // not in cdpc, which compiles each file's device code whole and links it as without it
    // (warning `W0709`, plan.rs); `code=lto_XX` is then `code=sm_XX` ([`architectures`]).
    opt("--dlink-time-opt", "-dlto", false, Becomes(&[DEVICE_LTO])),
    opt("--lto", "-lto", false, Becomes(&[DEVICE_LTO])),
    // Static libraries, as nvcc makes them: each input's object, then the host's archiver.
    opt("--lib", "-lib", false, Same("--lib")),
    opt("--archiver-binary", "-arbin", true, Same("--archiver")),
    opt("--archive-options", "-Xarchive", true, EachWord("--Xarchive")),
    // nvcc prunes a library's device code of other architectures with nvprune; cdpc's
    // library holds the architectures asked for.
    opt("--nvprune-options", "-Xnvprune", true, Ignored),
    opt("--prune", "-prune", false, Ignored),
    // Where objects go.
    opt("--output-directory", "-odir", true, Same("--output-directory")),
    // What the toolkit can build for, nvcc's way.
    opt("--list-gpu-code", "-code-ls", false, Same("--list-gpu-code")),
    opt("--list-gpu-arch", "-arch-ls", false, Same("--list-gpu-arch")),
    opt("--verbose2", "-v2", false, Same("--verbose")),
    // The host side's C++, which cdpc's Clang compiles against the host's libstdc++ on both
    // sides (the device side reads the same headers).
    opt("--no-exceptions", "-noeh", false, Becomes(&["--Xcompiler=-fno-exceptions"])),
    opt("--stdlib", "-stdlib", true, Only(&["libstdc++"], "cdpc's Clang reads the host's libstdc++ on both sides of a file")),
    opt("--machine", "-m", true, Only(&["64"], "cdpc compiles 64-bit host code (--address-size 32 writes 32-bit PTX)")),
    opt("--target-directory", "-target-dir", true, Only(&["x86_64-linux"], "cdpc builds for x86-64 Linux")),
    // The host side's kernels and device variables: nvcc 13 makes them hidden unless `false`
    // (so does cdpc's Clang, clang/shim.cpp's HiddenDeviceEntities), and template kernels'
    // stubs internal in whole-program objects (so does cdpc, pipeline::host_names; its `false`
    // is not done).
    flag("--static-global-template-stub", "-static-global-template-stub", Ignored),
    flag("--device-entity-has-hidden-visibility", "-device-entity-has-hidden-visibility", IfFalse(&["-D__CDPC_DEVICE_ENTITY_DEFAULT_VISIBILITY__=1"])),
    flag("--device-stack-protector", "-device-stack-protector", Only(&["false"], "LLVM's NVPTX writes no stack protector")),
    // Options about how nvcc's own front end (EDG) or NVVM read and report code: Clang's
    // reading is its own (its template depth 1024, messages in full).
    opt("--ftemplate-backtrace-limit", "-ftemplate-backtrace-limit", true, Ignored),
    opt("--ftemplate-depth", "-ftemplate-depth", true, Ignored),
    opt("--fmax-errors", "-fmax-errors", true, Ignored),
    flag("--brief-diagnostics", "-brief-diag", Ignored),
    opt("--no-host-device-initializer-list", "-nohdinitlist", false, Ignored),
    opt("--no-host-device-move-forward", "-nohdmoveforward", false, Ignored),
    opt("--Wconversion", "-Wconversion", false, Ignored),
    opt("--optimization-info", "-opt-info", true, Ignored),
    // Hints to NVVM's optimiser that change no result: cdpc's LLVM optimises as it does.
    opt("--restrict", "-restrict", false, Ignored),
    opt("--extra-device-vectorization", "-extra-device-vectorization", false, Ignored),
    opt("--Ofast-compile", "-Ofc", true, Ignored),
    opt("--dopt", "-dopt", true, Ignored),
    opt("--jump-table-density", "-jtd", true, Ignored),
    // Whole-program details: cdpc's relocatable objects keep every device function.
    opt("--keep-device-functions", "-keep-device-functions", false, Ignored),
    opt("--extensible-whole-program", "-ewp", false, Ignored),
    // The PTX's comments: cdpc's PTX carries `.loc` lines with -lineinfo, not the source text.
    opt("--source-in-ptx", "-src-in-ptx", false, Ignored),
    // Fat-binary compression and nvcc's temporary names: cdpc's outputs are the same bytes on
    // every run, with no seed to give.
    opt("--no-compress", "-no-compress", false, Ignored),
    opt("--compress-mode", "-compress-mode", true, Ignored),
    opt("--frandom-seed", "-frandom-seed", true, Ignored),
    // How nvcc runs and finds its own tools, and Windows's and Cygwin's paths.
    opt("--split-compile-extended", "-split-compile-extended", true, Ignored),
    opt("--jobserver", "-jobserver", false, Ignored),
    opt("--skip-ptx-semantics-check", "-skip-ptx-semantics-check", false, Ignored),
    opt("--forward-unknown-opts", "-forward-unknown-opts", false, Ignored),
    opt("--dont-use-profile", "-noprof", false, Ignored),
    opt("--libdevice-directory", "-ldir", true, Ignored),
    opt("--use-local-env", "-use-local-env", false, Ignored),
    opt("--force-cl-env-setup", "-force-cl-env-setup", false, Ignored),
    opt("--input-drive-prefix", "-idp", true, Ignored),
    opt("--dependency-drive-prefix", "-ddp", true, Ignored),
    opt("--drive-prefix", "-dp", true, Ignored),
    opt("--utf-8", "-utf-8", false, Ignored),
    opt("--no-align-double", "--no-align-double", false, Ignored),
    // CUDA Tile is not in cdpc; compiling SIMT code only is what it does.
    opt("--simt-only", "-simt-only", false, Ignored),
    opt("--tileiras-options", "-Xtileiras", true, Ignored),
    opt("--enable-tile", "-enable-tile", false, Unsupported("CUDA Tile kernels are not in cdpc")),
    opt("--tile-preview", "-tile-preview", true, Unsupported("CUDA Tile kernels are not in cdpc")),
    opt("--tile-only", "-tile-only", false, Unsupported("CUDA Tile kernels are not in cdpc")),
    opt("--tilebc", "-tilebc", false, Unsupported("CUDA Tile kernels are not in cdpc")),
    opt("--tilecubin", "-tilecubin", false, Unsupported("CUDA Tile kernels are not in cdpc")),
    opt("--tilefatbin", "-tilefatbin", false, Unsupported("CUDA Tile kernels are not in cdpc")),
    // nvcc's `-time FILE` appends its phases' times to a file; cdpc's own `--time` (the long
    // spelling, read by clap) prints them to standard error.
    opt("-time", "-time", true, Same("--time-file")),
    // Refused, with what to do instead.
    opt("--cuda", "-cuda", false, Unsupported("cdpc writes no translated host source: -E preprocesses, -dc compiles")),
    opt("--optix-ir", "-optix-ir", false, Unsupported("cdpc writes PTX (-ptx), cubins and fat binaries, not OptiX IR")),
    opt("--ltoir", "-ltoir", false, Unsupported("cdpc writes no object of NVVM's LTO IR alone: `-dc -dlto` writes the cubin and carries cdpc's own device IR beside it")),
    opt("--gen-opt-lto", "-gen-opt-lto", false, Unsupported("cdpc's link-time optimisation is `-dlto` at the compile and the device link; it has no separate optimisation of LTO IR")),
    opt("--device-w", "-dw", false, Unsupported("compile with -dc (relocatable device code, which device-side launches need) or -c")),
    opt("--no-device-link", "-nodlink", false, Unsupported("link -dc objects with their -dlink object yourself, or let cdpc link the program")),
    opt("--relocatable-link", "-r", false, Unsupported("combine objects with the host linker's `ld -r`")),
    opt("--relocatable-ptx", "-reloc-ptx", false, Unsupported("-ptx writes the PTX of relocatable device code already")),
    opt("--host-linker-script", "-hls", true, Unsupported("pass a linker script to the host link with -Xlinker")),
    opt("--augment-host-linker-script", "-aug-hls", false, Unsupported("pass a linker script to the host link with -Xlinker")),
    opt("--profile", "-pg", false, Unsupported("profile the host code with -Xcompiler -pg and link with the host compiler's -pg")),
    opt("--fdevice-syntax-only", "-fdevice-syntax-only", false, Unsupported("compile the device side to PTX instead (-ptx -o /dev/null)")),
    opt("--fdevice-time-trace", "-fdevice-time-trace", true, Unsupported("--time prints the time of each phase")),
    opt("--fdevice-time-trace-granularity", "-fdevice-time-trace-granularity", true, Unsupported("--time prints the time of each phase")),
    opt("--fdevice-sanitize", "-fdevice-sanitize", true, Unsupported("run the program under compute-sanitizer")),
    opt("--apply-controls", "-apply-controls", true, Unsupported("nvcc's controls file is NVVM's")),
    opt("--entries", "-e", true, Unsupported("cdpc keeps every kernel of a file")),
    opt("--clean-targets", "-clean", false, Unsupported("remove the outputs with the build system's clean rule")),
    opt("--run-args", "-run-args", true, Same("--run-args")),
    opt("--concat", "-concat", false, Unsupported("give the sources to one cdpc command, which compiles and links them")),
    opt("--qpp-config", "-qpp-config", true, Unsupported("cdpc builds for x86-64 Linux")),
    opt("--compile-as-tools-patch", "-astoolspatch", false, Unsupported("it is for NVIDIA's tools")),
    opt("--safety-compatibility", "-safety-compat", false, Unsupported("cdpc is no safety-certified compiler")),
    // `--options-file` is read by `translate` itself.
];

/// What [`translate`] writes for nvcc's `-forward-unknown-to-host-compiler` and
/// `-forward-unknown-to-host-linker`, for [`forward_unknown`] to read (clap never sees them).
const FORWARD_TO_COMPILER: &str = "--forward-unknown-to-host-compiler";
const FORWARD_TO_LINKER: &str = "--forward-unknown-to-host-linker";

/// What [`translate`] writes for nvcc's `-dlto` and `-lto`, and for `code=lto_XX`: cdpc's hidden
/// flag, link-time optimisation of device code (`driver/lto.rs`).
const DEVICE_LTO: &str = "--device-lto";

/// What [`translate`] writes for nvcc's `-code` before [`architectures`] reads it.
const GPU_CODE: &str = "--gpu-code";

/// nvcc's `-arch` and `-code` as cdpc's options, once the whole command line is read (nvcc
/// takes them in either order): `-arch=compute_XX -code=LIST` is `--gencode
/// arch=compute_XX,code=[LIST]` (`-code` without a virtual `-arch` is `E0708`, nvcc's "must be a
/// virtual code architecture" and "-arch option not specified"); `-arch=all`, `all-major` and
/// `native` are `--arch-set`, which the plan makes a `-gencode` list of (`plan.rs`).
fn architectures(args: Vec<String>) -> Result<Vec<String>, Refused> {
    let codes: Vec<&str> = args.iter().filter_map(|a| a.strip_prefix(GPU_CODE).and_then(|v| v.strip_prefix('='))).collect();
    let arch = args.iter().rev().find_map(|a| a.strip_prefix("--arch="));
    let mut gencode = None;
    if !codes.is_empty() {
        let Some(arch) = arch else {
            return Err(Refused {
                code: Code::OptionInvalid,
                message: "nvcc's `-code` needs `-arch=compute_XX`, the virtual architecture its codes are built from (nvcc: \"-arch option not specified\")".into(),
            });
        };
        if !arch.starts_with("compute_") {
            return Err(Refused {
                code: Code::OptionInvalid,
                message: format!("with `-code`, `-arch` names a virtual architecture (`compute_XX`), not `{arch}`, as nvcc says (\"must be a virtual code architecture\")"),
            });
        }
        gencode = Some(format!("--gencode=arch={arch},code=[{}]", codes.join(",")));
    }
    // `code=lto_XX` (link-time optimisation's IR): a cubin of sm_XX, with the IR beside it.
    let mut lto = false;
    let mut args = args;
    for arg in args.iter_mut().chain(gencode.iter_mut()) {
        if arg.starts_with("--gencode=") && arg.contains("lto_") {
            *arg = arg.replace("lto_", "sm_");
            lto = true;
        }
    }
    if lto && !args.iter().any(|a| a == DEVICE_LTO) {
        args.push(DEVICE_LTO.to_string());
    }
    let replaced = gencode.is_some();
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        match arg.strip_prefix("--arch=") {
            Some(set @ ("all" | "all-major" | "native")) => out.push(format!("--arch-set={set}")),
            // Replaced by the `-gencode` above.
            Some(_) if replaced => {}
            _ if arg.starts_with(GPU_CODE) => {
                out.extend(gencode.take());
            }
            _ => out.push(arg),
        }
    }
    Ok(out)
}

/// nvcc's warning kinds for `-Werror` (`nvcc --help`).
const WERROR_KINDS: &[&str] = &["cross-execution-space-call", "reorder", "deprecated-declarations", "default-stream-launch", "missing-launch-bounds", "ext-lambda-captures-this", "all-warnings"];

/// An nvcc option cdpc cannot take: `E0707`, or a value missing (`E0708`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub code: Code,
    pub message: String,
}

/// The option `arg` names, with the value written after `=` in it.
fn lookup(arg: &str) -> Option<(&'static NvccOption, Option<&str>)> {
    let (name, value) = match arg.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (arg, None),
    };
    NVCC.iter().find(|o| o.long == name || o.short == name).filter(|o| o.value != Value::No || value.is_none()).map(|o| (o, value))
}

/// Rewrites nvcc's options among `args` (the program's name first) into cdpc's; other
/// arguments are kept as they are, after `--` all of them.
/// The arguments with each `--options-file FILE` (`-optf FILE`, `--options-file=FILE`) replaced
/// by the file's arguments, as nvcc reads them: separated by white space, `"..."` and `'...'`
/// quoting, `\` escaping the next character (CMake writes its include folders and device-link
/// objects so).
fn expand_options_files(args: Vec<String>) -> Result<Vec<String>, Refused> {
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let file = match arg.as_str() {
            "--options-file" | "-optf" => Some(args.next().ok_or_else(|| Refused { code: Code::OptionInvalid, message: format!("`{arg}` needs a file") })?),
            _ => arg.strip_prefix("--options-file=").or_else(|| arg.strip_prefix("-optf=")).map(str::to_string),
        };
        let Some(file) = file else {
            out.push(arg);
            continue;
        };
        for name in file.split(',').filter(|n| !n.is_empty()) {
            let text = std::fs::read_to_string(name).map_err(|e| Refused { code: Code::OptionInvalid, message: format!("cannot read the options file `{name}`: {e}") })?;
            out.extend(split_options(&text));
        }
    }
    Ok(out)
}

/// `text` split as a shell splits words: white space, quotes, backslashes.
fn split_options(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

pub(crate) fn translate(args: impl IntoIterator<Item = String>) -> Result<Vec<String>, Refused> {
    let args = expand_options_files(args.into_iter().collect())?;
    let mut args = args.into_iter().peekable();
    let mut out: Vec<String> = args.next().into_iter().collect();
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args.by_ref());
            break;
        }
        // Names match whole, so cdpc's short options with their values attached (`-O3`,
        // `-Idir`, `-lfoo`) are not nvcc's `-O`, `-I`, `-l` here: clap reads them.
        let Some((option, inline)) = lookup(&arg) else {
            out.push(legacy(arg));
            continue;
        };
        let value = match (option.value, inline) {
            (Value::No, _) => None,
            (_, Some(v)) => Some(v.to_string()),
            (Value::Bool, None) => match args.peek() {
                Some(next) if next == "true" || next == "false" => args.next(),
                _ => Some("true".to_string()),
            },
            (Value::Yes, None) => {
                // `-Werror` alone is cdpc's own flag: every warning an error.
                if matches!(option.action, WerrorKinds) {
                    match args.peek() {
                        Some(next) if next.split(',').all(|k| WERROR_KINDS.contains(&k)) => args.next(),
                        _ => {
                            out.push("--Werror".into());
                            continue;
                        }
                    }
                } else {
                    Some(args.next().ok_or_else(|| Refused { code: Code::OptionInvalid, message: format!("`{arg}` needs a value (nvcc's `{} <value>`)", option.long) })?)
                }
            }
        };
        match option.action {
            Same(cdpc) => out.extend(with_value(cdpc, value.as_deref())),
            EachOf(cdpc) => {
                for part in value.as_deref().unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
                    out.extend(with_value(cdpc, Some(part)));
                }
            }
            EachWord(cdpc) => {
                for part in value.as_deref().unwrap_or_default().split(',') {
                    for word in split_options(part) {
                        out.extend(with_value(cdpc, Some(&word)));
                    }
                }
            }
            Becomes(these) => out.extend(these.iter().map(|s| s.to_string())),
            Marked(mark) => out.extend(with_value(mark, value.as_deref())),
            Ptxas(name) => out.push(format!("--Xptxas={name}={}", value.unwrap_or_default())),
            Ignored => {}
            IfFalse(these) => match value.as_deref().unwrap_or("true") {
                "true" => {}
                "false" => out.extend(these.iter().map(|s| s.to_string())),
                other => return Err(Refused { code: Code::OptionInvalid, message: format!("nvcc's `{}` takes `true` or `false`, not `{other}`", option.long) }),
            },
            PreInclude => {
                for file in value.as_deref().unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
                    out.push("--Xcompiler=-include".into());
                    out.push(format!("--Xcompiler={file}"));
                }
            }
            WerrorKinds => {
                if value.as_deref().unwrap_or_default().split(',').any(|k| k == "all-warnings") {
                    out.push("--Werror".into());
                }
            }
            Only(values, help) => {
                let given = value.as_deref().unwrap_or_default();
                if !values.contains(&given) {
                    return Err(Refused { code: Code::OptionUnsupported, message: format!("nvcc's `{} {given}` is not in cdpc, which takes {} only: {help}", option.long, values.join(" or ")) });
                }
            }
            Unsupported(help) => {
                return Err(Refused { code: Code::OptionUnsupported, message: format!("nvcc's option `{}` is not in cdpc: {help}", option.long) });
            }
        }
    }
    architectures(out)
}

/// The options among `args` (translated, the program's name first) that `cdpc` (the command
/// line parser of cdpc's own options) does not know, as nvcc treats options it does not know:
/// with `-forward-unknown-to-host-compiler` each becomes the host compiler's (`--Xcompiler`),
/// else with `-forward-unknown-to-host-linker` the host linker's (`--Xlinker`), else it is
/// `E0708` naming the whole option (`-Wall`, where clap would name `-W`). As nvcc's
/// documentation says, an unknown option's separate value is not forwarded with it (`-foo bar`
/// leaves `bar` an input) unless it starts with `-`, when it is an option of its own.
///
/// An argument is cdpc's when it is a long option `cdpc` names (or an alias), with its value
/// after `=` or in the next argument; or a short option `cdpc` names, with its value attached
/// or next, or a cluster of short flags (`-cv`); or an input (no leading `-`, `-` alone, or
/// anything after `--`).
pub(crate) fn forward_unknown(args: Vec<String>, mut cdpc: clap::Command) -> Result<Vec<String>, Refused> {
    cdpc.build();
    let to_compiler = args.iter().any(|a| a == FORWARD_TO_COMPILER);
    let to_linker = args.iter().any(|a| a == FORWARD_TO_LINKER);
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values() && arg.get_num_args().is_none_or(|range| range.min_values() > 0);
    let long = |name: &str| cdpc.get_arguments().find(|a| a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|aliases| aliases.contains(&name)));
    let short = |c: char| cdpc.get_arguments().find(|a| a.get_short() == Some(c) || a.get_all_short_aliases().is_some_and(|aliases| aliases.contains(&c)));
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    out.extend(args.next());
    while let Some(arg) = args.next() {
        if arg == FORWARD_TO_COMPILER || arg == FORWARD_TO_LINKER {
            continue;
        }
        if arg == "--" {
            out.push(arg);
            out.extend(args.by_ref());
            break;
        }
        // Whether `arg` is cdpc's, and whether the next argument is its value.
        let known = if let Some(name) = arg.strip_prefix("--") {
            let (name, inline) = match name.split_once('=') {
                Some((name, _)) => (name, true),
                None => (name, false),
            };
            long(name).map(|a| !inline && takes_value(a))
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            let mut chars = cluster.chars();
            let first = chars.next().and_then(short);
            let rest = chars.as_str();
            match first {
                Some(a) if takes_value(a) => Some(rest.is_empty()),
                Some(_) => rest.chars().all(|c| short(c).is_some_and(|a| !takes_value(a))).then_some(false),
                None => None,
            }
        } else {
            Some(false)
        };
        match known {
            Some(value_next) => {
                out.push(arg);
                if value_next {
                    out.extend(args.next());
                }
            }
            None if to_compiler => out.push(format!("--Xcompiler={arg}")),
            None if to_linker => out.push(format!("--Xlinker={arg}")),
            None => {
                return Err(Refused {
                    code: Code::OptionInvalid,
                    message: format!(
                        "unknown option `{arg}`: neither cdpc nor nvcc has it\n  = help: a host compiler's option goes to the host side with `-Xcompiler {arg}` (nvcc's way), or every unknown option with `-forward-unknown-to-host-compiler`; `cdpc --help` lists cdpc's options, and nvcc's are read too (docs/BUILDING.md, \"nvcc's options\")"
                    ),
                });
            }
        }
    }
    Ok(out)
}

/// `cdpc` (a long option, `--x`) or `cdpc value` (a short one, `-o`).
fn with_value(cdpc: &str, value: Option<&str>) -> Vec<String> {
    match value {
        None => vec![cdpc.to_string()],
        Some(v) if cdpc.starts_with("--") => vec![format!("{cdpc}={v}")],
        Some(v) => vec![cdpc.to_string(), v.to_string()],
    }
}

/// cdpc's own options spelled with one dash, as cdpc has always read them
/// (`-faggregate-launches=block`, `-fdevice-malloc-pool`, `-fno-launch-optimizations`,
/// `-Rpass=aggregate`, `-Rskipped-headers`).
fn legacy(arg: String) -> String {
    const FLAGS: [&str; 5] = ["-fdevice-malloc-pool", "-fno-device-malloc-pool", "-flaunch-optimizations", "-fno-launch-optimizations", "-flegacy-warp-intrinsics"];
    if arg.starts_with("-faggregate-launches") || arg.starts_with("-flaunch-threshold") || FLAGS.contains(&arg.as_str()) || arg.starts_with("-Rpass") {
        format!("-{arg}")
    } else if let Some(remark) = arg.strip_prefix("-R").filter(|r| !r.is_empty() && !r.starts_with("pass")) {
        format!("--R={remark}")
    } else {
        arg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tr(args: &[&str]) -> Vec<String> {
        translate(std::iter::once("cdpc").chain(args.iter().copied()).map(String::from)).unwrap()[1..].to_vec()
    }

    fn refused(args: &[&str]) -> Refused {
        translate(std::iter::once("cdpc").chain(args.iter().copied()).map(String::from)).unwrap_err()
    }

    /// `args` translated, then read as [`forward_unknown`] reads them against cdpc's own options.
    fn forwarded(args: &[&str]) -> Result<Vec<String>, Refused> {
        let translated = translate(std::iter::once("cdpc").chain(args.iter().copied()).map(String::from)).unwrap();
        forward_unknown(translated, <super::super::command_line::Cli as clap::CommandFactory>::command()).map(|a| a[1..].to_vec())
    }

    #[test]
    fn unknown_options_go_to_the_host_compiler_as_nvcc_forwards_them() {
        // CMake's compilation with `target_compile_options(... -Wall)`; nvcc documents that an
        // unknown option's separate value stays an argument of its own (`bar`, an input here).
        let args = ["-forward-unknown-to-host-compiler", "-Wall", "-march=native", "-O3", "-DX=1", "-I", "inc", "-o", "-", "-x", "cu", "-c", "-cv", "-foo", "bar", "a.cu"];
        assert_eq!(forwarded(&args).unwrap(), ["--Xcompiler=-Wall", "--Xcompiler=-march=native", "-O3", "-DX=1", "-I", "inc", "-o", "-", "-x", "cu", "-c", "-cv", "--Xcompiler=-foo", "bar", "a.cu"]);
        // cdpc's own long options, with their values; `--` ends the options.
        assert_eq!(forwarded(&["--emit", "ptx", "--time", "--rdc", "a.cu", "-forward-unknown-to-host-compiler", "--", "-Wall"]).unwrap(), ["--emit", "ptx", "--time", "--rdc", "a.cu", "--", "-Wall"]);
        // The linker's, where only that one is asked for.
        assert_eq!(forwarded(&["-forward-unknown-to-host-linker", "-Wl,--as-needed", "a.cu"]).unwrap(), ["--Xlinker=-Wl,--as-needed", "a.cu"]);
    }

    #[test]
    fn an_unknown_option_is_named_whole_without_forwarding() {
        let refused = forwarded(&["-Wall", "a.cu"]).unwrap_err();
        assert_eq!(refused.code, Code::OptionInvalid);
        assert!(refused.message.starts_with("unknown option `-Wall`") && refused.message.contains("-Xcompiler -Wall"), "{}", refused.message);
        assert!(forwarded(&["--frobnicate", "a.cu"]).unwrap_err().message.starts_with("unknown option `--frobnicate`"));
        // What clap takes stays clap's: attached short values, flag clusters, `--help`.
        assert!(forwarded(&["-O2", "-lm", "-L/usr/lib", "-Iinc", "-w", "--help"]).is_ok());
    }

    #[test]
    fn arch_and_code_are_a_gencode_and_the_arch_sets_are_marked() {
        // `nvcc -arch=compute_80 -code=sm_80,sm_90 -dryrun`: two cubins, no PTX.
        assert_eq!(tr(&["-code=sm_80,sm_90", "a.cu", "-arch=compute_80"]), ["--gencode=arch=compute_80,code=[sm_80,sm_90]", "a.cu"]);
        assert_eq!(tr(&["-arch", "compute_80", "-code", "compute_80,sm_86"]), ["--gencode=arch=compute_80,code=[compute_80,sm_86]"]);
        assert!(refused(&["-arch=sm_80", "-code=sm_80"]).message.contains("virtual architecture"));
        assert!(refused(&["-code=sm_80"]).message.contains("-arch option not specified"));
        for set in ["all", "all-major", "native"] {
            assert_eq!(tr(&[&format!("-arch={set}")]), [format!("--arch-set={set}")]);
        }
        assert_eq!(tr(&["-arch=sm_80"]), ["--arch=sm_80"]);
        // Link-time optimisation's IR: a cubin, and the flag that carries the IR beside it.
        assert_eq!(tr(&["-gencode", "arch=compute_90,code=lto_90", "-dlto"]), ["--gencode=arch=compute_90,code=sm_90", "--device-lto"]);
        assert_eq!(tr(&["-arch=compute_80", "-code=lto_80"]), ["--gencode=arch=compute_80,code=[sm_80]", "--device-lto"]);
    }

    #[test]
    fn both_spellings_and_both_ways_of_giving_a_value() {
        for args in [&["-arch=sm_80"][..], &["-arch", "sm_80"], &["--gpu-architecture=sm_80"], &["--gpu-architecture", "sm_80"]] {
            assert_eq!(tr(args), ["--arch=sm_80"], "{args:?}");
        }
        assert_eq!(tr(&["-std=c++20", "--std", "c++17"]), ["--std=c++20", "--std=c++17"]);
        assert_eq!(tr(&["-dc", "-dlink", "-lineinfo", "-ptx"]), ["--device-c", "--device-link", "--lineinfo", "--emit=ptx"]);
    }

    #[test]
    fn list_options_split_at_commas() {
        assert_eq!(tr(&["-Xcompiler", "-fPIC,-Wall", "-Xptxas=-v"]), ["--Xcompiler=-fPIC", "--Xcompiler=-Wall", "--Xptxas=-v"]);
        assert_eq!(tr(&["--include-path", "a,b", "--define-macro=X=1"]), ["-I", "a", "-I", "b", "-D", "X=1"]);
        // A tool's options are words of its command line, as nvcc writes them (cms-patatrack's
        // Makefile: `--compiler-options "-O2 -pthread -fPIC"`).
        assert_eq!(
            tr(&["--compiler-options", "-O2 -pthread -fPIC", "-Xptxas", "-v -O3,-warn-spills"]),
            ["--Xcompiler=-O2", "--Xcompiler=-pthread", "--Xcompiler=-fPIC", "--Xptxas=-v", "--Xptxas=-O3", "--Xptxas=-warn-spills"]
        );
        assert_eq!(tr(&["-Xcompiler", "'-DMSG=a b' -Wall"]), ["--Xcompiler=-DMSG=a b", "--Xcompiler=-Wall"]);
    }

    #[test]
    fn cdpc_short_options_with_attached_values_are_left_to_clap() {
        assert_eq!(tr(&["-O3", "-Iinc", "-DX=1", "-lfoo", "-o", "out.o", "-c"]), ["-O3", "-Iinc", "-DX=1", "-lfoo", "-o", "out.o", "-c"]);
        // `-ccbin` is one option, not `-c -c -b -i -n`.
        assert_eq!(tr(&["-ccbin", "g++-12", "-c", "a.cu"]), ["--ccbin=g++-12", "-c", "a.cu"]);
    }

    #[test]
    fn ignored_options_take_their_values_with_them() {
        let makefile = ["-m64", "-t", "4", "-Wno-deprecated-gpu-targets", "-Xcudafe", "--diag_suppress=177", "a.cu"];
        assert_eq!(tr(&makefile), ["a.cu"]);
        // The two that relax nvcc's rules define nvcc's macros.
        assert_eq!(tr(&["--expt-relaxed-constexpr", "-extended-lambda", "a.cu"]), ["-D__CUDACC_RELAXED_CONSTEXPR__=1", "-D__CUDACC_EXTENDED_LAMBDA__=1", "a.cu"]);
        assert_eq!(tr(&["-cudart", "static", "-Xlinker", "-z,now", "a.o"]), ["--cudart=static", "--Xlinker=-z", "--Xlinker=now", "a.o"]);
    }

    #[test]
    fn options_files_are_read_as_nvcc_reads_them() {
        assert_eq!(split_options("-I/a \"-DMSG=a b\" 'x y'  c\\ d\n"), ["-I/a", "-DMSG=a b", "x y", "c d"]);
        // (No tempfile here: the Python package compiles this file's tests without it.)
        let path = std::env::temp_dir().join(format!("cdpc-options-test-{}.rsp", std::process::id()));
        std::fs::write(&path, "-I/inc -isystem=/sys\n").unwrap();
        let file = path.display().to_string();
        assert_eq!(tr(&["--options-file", &file, "a.cu"]), ["-I/inc", "--isystem=/sys", "a.cu"]);
        assert_eq!(tr(&[&format!("-optf={file}"), "a.cu"]), ["-I/inc", "--isystem=/sys", "a.cu"]);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(refused(&["--options-file", "/no/such/file"]).code, Code::OptionInvalid);
    }

    #[test]
    fn werror_is_cdpcs_flag_alone_and_nvccs_with_kinds() {
        assert_eq!(tr(&["-Werror", "a.cu"]), ["--Werror", "a.cu"]);
        assert_eq!(tr(&["-Werror", "all-warnings", "a.cu"]), ["--Werror", "a.cu"]);
        assert_eq!(tr(&["-Werror=reorder,cross-execution-space-call", "a.cu"]), ["a.cu"]);
    }

    #[test]
    fn every_option_made_cdpcs_is_one_cdpc_reads() {
        use clap::CommandFactory;
        let cli = super::super::command_line::Cli::command();
        let known = |name: &str| cli.get_arguments().any(|a| a.get_long() == name.strip_prefix("--") || a.get_short().map(|c| format!("-{c}")).as_deref() == Some(name));
        for option in NVCC {
            let names: Vec<&str> = match option.action {
                Same(cdpc) | EachOf(cdpc) | EachWord(cdpc) => vec![cdpc],
                // `-DNAME=VALUE`: the option `-D`.
                Becomes(these) => these.iter().map(|a| if a.starts_with("-D") { "-D" } else { a.split('=').next().unwrap_or(a) }).collect(),
                Ptxas(_) => vec!["--Xptxas"],
                _ => Vec::new(),
            };
            for name in names {
                assert!(known(name), "{} becomes {name}, which cdpc does not read", option.long);
            }
        }
    }

    /// Random command lines of nvcc's and cdpc's option names, values and garbage: translating
    /// them and reading the result never panics, and a refusal is always E0707 or E0708 (the
    /// command line is an input like any other; fuzz/RESULTS.md).
    #[test]
    fn random_command_lines_never_panic() {
        use clap::CommandFactory;
        let mut words: Vec<String> = NVCC.iter().flat_map(|o| [o.long.to_string(), o.short.to_string()]).collect();
        words.extend(
            ["a.cu", "b.cdp", "x.o", "--", "-", "=", "", "true", "false", "c++20", "sm_90a", "sm_100f", "all-warnings", "-fPIC,-Wall", ",", "-o", "-O9", "--emit=ptx", "--MD", "--MF", "\u{0}", "é"]
                .map(String::from),
        );
        let mut seed: u64 = 0x5eed_cdbc;
        let mut next = move |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..3000 {
            let mut args = vec!["cdpc".to_string()];
            for _ in 0..next(8) {
                let mut word = words[next(words.len())].clone();
                if next(4) == 0 {
                    word = format!("{word}={}", words[next(words.len())]);
                }
                args.push(word);
            }
            match translate(args.clone()).and_then(|translated| forward_unknown(translated, super::super::command_line::Cli::command())) {
                Ok(translated) => {
                    // What clap takes, the plan reads as pairs: every pair it writes is one the
                    // pairs' reading takes (their spellings agree), a code `--deny` names aside.
                    let Ok(matches) = super::super::command_line::Cli::command().try_get_matches_from(translated) else { continue };
                    let Ok(cli) = <super::super::command_line::Cli as clap::FromArgMatches>::from_arg_matches(&matches) else { continue };
                    if let Err(message) = cdpc::driver::option_pairs::from_os_pairs(super::super::plan::compile_pairs(&cli, &matches)) {
                        assert!(message.starts_with("unknown diagnostic code"), "{args:?}: {message}");
                    }
                }
                Err(refused) => assert!(matches!(refused.code, Code::OptionUnsupported | Code::OptionInvalid), "{args:?}: {refused:?}"),
            }
        }
    }

    #[test]
    fn register_limits_and_resource_usage_go_to_ptxas() {
        assert_eq!(tr(&["-maxrregcount=32", "-res-usage"]), ["--Xptxas=--maxrregcount=32", "--Xptxas=-v"]);
        assert_eq!(tr(&["-split-compile=4"]), ["--split-compile=4"], "nvcc's parallel assembly, cdpc's too");
        assert_eq!(tr(&["-g"]), ["--Xcompiler=-g"]);
    }

    #[test]
    fn nvcc_options_cdpc_does_not_have_are_e0707_and_missing_values_e0708() {
        let r = refused(&["a.cu", "-optix-ir"]);
        assert_eq!(r.code, Code::OptionUnsupported);
        assert!(r.message.contains("--optix-ir"), "{}", r.message);
        assert_eq!(refused(&["--machine=32"]).code, Code::OptionUnsupported);
        assert_eq!(refused(&["a.cu", "-ccbin"]).code, Code::OptionInvalid);
    }

    #[test]
    fn libraries_object_folders_and_the_architecture_lists_are_cdpcs() {
        assert_eq!(tr(&["-lib", "-arbin", "/usr/bin/ar", "-Xarchive", "-D", "a.cu"]), ["--lib", "--archiver=/usr/bin/ar", "--Xarchive=-D", "a.cu"]);
        assert_eq!(tr(&["-dc", "-odir", "obj", "a.cu"]), ["--device-c", "--output-directory=obj", "a.cu"]);
        assert_eq!(tr(&["-arch-ls", "-code-ls", "-v2"]), ["--list-gpu-arch", "--list-gpu-code", "--verbose"]);
        assert_eq!(tr(&["-noeh", "--source-in-ptx", "-restrict", "-stdlib=libstdc++", "-target-dir", "x86_64-linux", "a.cu"]), ["--Xcompiler=-fno-exceptions", "a.cu"]);
    }

    #[test]
    fn an_option_whose_value_cdpc_does_not_do_is_refused_with_the_values_it_takes() {
        let r = refused(&["-stdlib", "libc++", "a.cu"]);
        assert_eq!(r.code, Code::OptionUnsupported);
        assert!(r.message.contains("`--stdlib libc++`") && r.message.contains("libstdc++ only"), "{}", r.message);
        // A bare flag is its `true`.
        assert_eq!(refused(&["-device-stack-protector", "a.cu"]).code, Code::OptionUnsupported);
        assert_eq!(tr(&["-device-stack-protector=false", "-static-global-template-stub", "true", "a.cu"]), ["a.cu"]);
        assert_eq!(tr(&["-device-entity-has-hidden-visibility=false", "a.cu"]), ["-D__CDPC_DEVICE_ENTITY_DEFAULT_VISIBILITY__=1", "a.cu"]);
        assert_eq!(tr(&["--device-entity-has-hidden-visibility", "false", "a.cu"]), ["-D__CDPC_DEVICE_ENTITY_DEFAULT_VISIBILITY__=1", "a.cu"]);
        assert_eq!(tr(&["-device-entity-has-hidden-visibility", "a.cu"]), ["a.cu"]);
        assert_eq!(tr(&["-device-entity-has-hidden-visibility=true", "a.cu"]), ["a.cu"]);
        assert_eq!(refused(&["-device-entity-has-hidden-visibility=no", "a.cu"]).code, Code::OptionInvalid);
        // nvcc's `-time FILE`; cdpc's `--time` is its own flag.
        assert_eq!(tr(&["-time", "t.csv", "a.cu"]), ["--time-file=t.csv", "a.cu"]);
        // Clang's `-###` (which clap would read as `-#` three times) and nvcc's `-dryrun`.
        assert_eq!(tr(&["-###", "a.cu"]), ["--dry-run", "a.cu"]);
        assert_eq!(tr(&["-dryrun", "a.cu"]), ["--dry-run", "a.cu"]);
        assert_eq!(tr(&["--dryrun", "a.cu"]), ["--dry-run", "a.cu"]);
        assert_eq!(tr(&["--time", "a.cu"]), ["--time", "a.cu"]);
    }

    #[test]
    fn dependency_options_are_cdpcs() {
        assert_eq!(tr(&["-MD", "-MT", "out/a.o", "-MF=a.d", "-MMD", "-MP"]), ["--MD", "--MT=out/a.o", "--MF=a.d", "--MMD", "--MP"]);
    }

    #[test]
    fn true_or_false_may_be_left_out() {
        assert_eq!(tr(&["-rdc", "a.cu", "-fmad", "false", "-rdc=false", "--relocatable-device-code", "true"]), ["--rdc=true", "a.cu", "--fmad=false", "--rdc=false", "--rdc=true"]);
        assert_eq!(tr(&["-fmad", "a.cu"]), ["--fmad=true", "a.cu"]);
    }

    #[test]
    fn after_a_double_dash_nothing_is_read_as_an_option() {
        assert_eq!(tr(&["--", "-MD"]), ["--", "-MD"]);
    }

    #[test]
    fn cdpcs_own_one_dash_spellings_still_work() {
        assert_eq!(tr(&["-faggregate-launches=block", "-Rpass=aggregate", "-Rskipped-headers", "-R"]), ["--faggregate-launches=block", "--Rpass=aggregate", "--R=skipped-headers", "-R"]);
        assert_eq!(tr(&["-fdevice-malloc-pool", "--fdevice-malloc-pool"]), ["--fdevice-malloc-pool", "--fdevice-malloc-pool"]);
        assert_eq!(tr(&["-fno-device-malloc-pool"]), ["--fno-device-malloc-pool"]);
        assert_eq!(tr(&["-fno-launch-optimizations", "-flaunch-optimizations"]), ["--fno-launch-optimizations", "--flaunch-optimizations"]);
        assert_eq!(tr(&["-default-stream", "per-thread", "-fmad=false"]), ["--default-stream=per-thread", "--fmad=false"]);
    }
}
