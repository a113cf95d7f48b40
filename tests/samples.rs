//! Every sample compiles: PTX snapshots of the kernel language's samples (`.cdp`) for both
//! launch ABIs and for 32-bit addresses, and for every sample (`.cu` ones through Clang too) a
//! linked cubin whose ELF lists the sample's kernels and the device-runtime code linked in.
//!
//! Warp-aggregated V2 cubins are linked too, with both launch ABIs' entry points.

use cdpc::driver::{self, CompileError, CompileOptions, Emit};
use cdpc::render::{self, Color};
use cdpc::toolchain::{ToolSearch, Toolchain};
use cdpc::{AddressSize, LaunchAbi};
use cdpc_tests::{cdp_files, repo_root};
use std::path::Path;
use std::process::Command;

fn samples() -> Vec<(String, String)> {
    let files = cdp_files(&repo_root().join("samples"));
    assert!(files.len() >= 6, "the samples folder lost files: {files:?}");
    files.iter().map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(p).unwrap())).collect()
}

/// The CUDA C++ samples (`samples/NAME.cu`, compiled through Clang and the launch pipeline):
/// no PTX snapshots (Clang's PTX is Clang's), but linked cubins like the kernel language's.
fn cuda_cxx_samples() -> Vec<(String, String)> {
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("samples")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "cu")).collect();
    files.sort();
    files.iter().map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(p).unwrap())).collect()
}

/// The PTX, or the rendered diagnostics where the options refuse the program (v1 and tail
/// launch), so that the snapshot records which it was.
fn ptx_or_diagnostics(name: &str, source: &str, options: &CompileOptions) -> String {
    match driver::compile(source, options) {
        Ok(compiled) => {
            assert!(compiled.warnings.is_empty(), "{name}: unexpected warnings {:?}", compiled.warnings);
            String::from_utf8(compiled.output).expect("PTX is text")
        }
        Err(CompileError::Diagnostics(d)) => render::human(&d, &format!("samples/{name}.cdp"), source, Color::Never),
        Err(other) => panic!("{name}: {other}"),
    }
}

/// Compares `text` with `tests/snapshots/ptx/NAME.snap`.
fn snapshot(name: &str, text: &str) {
    let snapshot_dir = repo_root().join("tests/snapshots/ptx");
    insta::with_settings!({ snapshot_path => snapshot_dir, prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name.to_string(), text);
    });
}

fn snapshot_all(suffix: &str, options: CompileOptions) {
    for (name, source) in samples() {
        let text = ptx_or_diagnostics(&name, &source, &options);
        snapshot(&format!("{name}.{suffix}"), &text);
    }
}

/// An option set made from the plain options, named by its snapshot suffix.
type Variant<'a> = (&'a str, &'a dyn Fn(CompileOptions) -> CompileOptions);

/// Every sample with each of `variants` (`pass` names what they turn on): it compiles with both
/// launch ABIs exactly when it does without them, and the v2 PTX of the samples in
/// `snapshotted` is snapshotted as `NAME.v2-SUFFIX`.
fn check_variants(pass: &str, snapshotted: &[&str], variants: &[Variant]) {
    for (name, source) in samples() {
        for abi in [LaunchAbi::V2, LaunchAbi::V1] {
            let plain = ptx_options(abi, AddressSize::Bits64);
            let refused = driver::compile(&source, &plain).is_err();
            for (suffix, make) in variants {
                let text = ptx_or_diagnostics(&name, &source, &make(plain.clone()));
                assert_eq!(text.starts_with("error"), refused, "{name} {abi:?} {suffix}: {pass} changed whether it compiles");
                if abi == LaunchAbi::V2 && snapshotted.contains(&name.as_str()) {
                    snapshot(&format!("{name}.v2-{suffix}"), &text);
                }
            }
        }
    }
}

fn ptx_options(launch_abi: LaunchAbi, address_size: AddressSize) -> CompileOptions {
    let mut options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    options.target.launch_abi = launch_abi;
    options.target.address_size = address_size;
    options
}

#[test]
fn ptx_v2_snapshots() {
    snapshot_all("v2", ptx_options(LaunchAbi::V2, AddressSize::Bits64));
}

#[test]
fn ptx_v1_snapshots() {
    snapshot_all("v1", ptx_options(LaunchAbi::V1, AddressSize::Bits64));
}

#[test]
fn ptx_32_bit_snapshots() {
    snapshot_all("v1-32bit", ptx_options(LaunchAbi::V1, AddressSize::Bits32));
}

/// Names of the kernels a sample defines (`extern "C" __global__ void NAME(`).
fn kernel_names(source: &str) -> Vec<String> {
    source
        .lines()
        // A kernel template has mangled instances, not a symbol of its own name.
        .filter(|l| !l.trim_start().starts_with("template"))
        .filter_map(|l| l.split("__global__ void ").nth(1))
        .map(|rest| rest.split('(').next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn samples_link_to_cubins_with_the_device_runtime() {
    let tools = match Toolchain::discover(&ToolSearch::default()) {
        Ok(tools) => tools,
        Err(e) => {
            println!("skipped: the NVIDIA tools were not found, run `cargo xtask setup`:\n{e}");
            return;
        }
    };
    let out = tempfile::tempdir().unwrap();
    for abi in [LaunchAbi::V2, LaunchAbi::V1] {
        for (name, source) in samples().into_iter().chain(cuda_cxx_samples()) {
            let mut options = CompileOptions::default();
            options.target.launch_abi = abi;
            // `samples/NAME.cu` is CUDA C++: the file's name sends it through Clang.
            let cu = repo_root().join(format!("samples/{name}.cu"));
            if cu.is_file() {
                options.preprocess.input = Some(cu);
            }
            let cubin = out.path().join(format!("{name}.{abi}.cubin"));
            match driver::compile_to_file(&source, &cubin, &options) {
                Ok(_) => {}
                // The v1 ABI cannot express tail launch or fire-and-forget; the ui tests cover
                // that refusal, and the snapshot records it for these samples.
                Err(CompileError::Diagnostics(d)) if abi == LaunchAbi::V1 && d.iter().all(|d| d.code == cdpc::Code::StreamNeedsV2Abi || !d.is_error()) => continue,
                Err(e) => panic!("{name} ({abi}): {e}"),
            }
            let Some(cuobjdump) = &tools.cuobjdump else {
                println!("skipped ELF check of {name}: cuobjdump not found (pip package nvidia-cuda-cuobjdump)");
                continue;
            };
            let elf = elf_listing(cuobjdump, &cubin);
            for kernel in kernel_names(&source) {
                assert!(elf.contains(&format!(".text.{kernel}")), "{name} ({abi}): kernel {kernel} missing from the cubin:\n{elf}");
            }
            // A sample that launches must have the launch entry points of its ABI linked in
            // (devrt_memory only copies and sets through the device runtime).
            if !source.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("<<<")) {
                continue;
            }
            // V1: the kernel language calls `cudaLaunchDevice`; Clang, through CUDA 13's
            // headers, the `__cudaCDP2LaunchDevice` that it names.
            let entry_points: &[&[&str]] = match abi {
                LaunchAbi::V2 => &[&["__cudaCDP2GetParameterBufferV2"], &["__cudaCDP2LaunchDeviceV2"]],
                LaunchAbi::V1 => &[&["cudaLaunchDevice", "__cudaCDP2LaunchDevice"]],
            };
            for symbols in entry_points {
                assert!(symbols.iter().any(|symbol| elf.contains(&format!(".text.{symbol}\n"))), "{name} ({abi}): none of {symbols:?} is linked in:\n{elf}");
            }
        }
    }
}

/// Warp aggregation at V2 makes its launches through the documented V1 entry points (the
/// warp's aggregated one, which its lanes wait for, and each thread's own where the group
/// falls back; docs/AGGREGATION.md) and every launch it does not take through V2: the cubins
/// of the samples that have both (a launch in a loop, into a thread's own stream, of a kernel
/// pointer, ...) link against libcudadevrt with both pairs in them.
#[test]
fn warp_aggregated_v2_cubins_link_both_launch_abis() {
    let tools = match Toolchain::discover(&ToolSearch::default()) {
        Ok(tools) => tools,
        Err(e) => {
            println!("skipped: the NVIDIA tools were not found, run `cargo xtask setup`:\n{e}");
            return;
        }
    };
    let Some(cuobjdump) = &tools.cuobjdump else {
        println!("skipped: cuobjdump not found (pip package nvidia-cuda-cuobjdump)");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let wanted = ["bfs", "kernel_pointers", "null_stream_order"];
    let chosen: Vec<(String, String)> = samples().into_iter().filter(|(n, _)| wanted.contains(&n.as_str())).collect();
    assert_eq!(chosen.len(), wanted.len(), "the samples folder lost one of {wanted:?}");
    for (name, source) in chosen {
        let options = CompileOptions { aggregate: cdpc::pipeline::aggregate::Granularity::Warp, ..CompileOptions::default() };
        assert_eq!(options.target.launch_abi, LaunchAbi::V2);
        let ptx = ptx_or_diagnostics(&name, &source, &CompileOptions { emit: Emit::Ptx, ..options.clone() });
        let v1_launches = ptx.matches("call.uni (retval0), cudaLaunchDevice, (").count();
        assert!(v1_launches > 0 && v1_launches == ptx.matches("call.uni (retval0), cudaGetParameterBuffer, (").count(), "{name}:\n{ptx}");
        let cubin = out.path().join(format!("{name}.cubin"));
        driver::compile_to_file(&source, &cubin, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        let elf = elf_listing(cuobjdump, &cubin);
        for symbol in ["cudaGetParameterBuffer", "cudaLaunchDevice", "__cudaCDP2GetParameterBufferV2", "__cudaCDP2LaunchDeviceV2"] {
            assert!(elf.contains(&format!(".text.{symbol}\n")), "{name}: {symbol} is not linked in:\n{elf}");
        }
    }
}

fn elf_listing(cuobjdump: &Path, cubin: &Path) -> String {
    let output = Command::new(cuobjdump).arg("-elf").arg(cubin).output().expect("cuobjdump runs");
    assert!(output.status.success(), "cuobjdump -elf failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `-faggregate-launches=block`, `=warp` and `=grid`: PTX snapshots of the launch-heavy samples and early_return_sync (v2),
/// and every sample still compiles with both ABIs (or is refused exactly as without
/// aggregation).
#[test]
fn aggregated_ptx_snapshots() {
    use cdpc::pipeline::aggregate::Granularity;
    let heavy = ["bfs", "c_statements", "c_types", "early_return_sync", "grid_instances", "irregular_loop", "kernel_pointers", "launch_patterns", "launch_shapes", "mandelbrot", "spmv", "tessellate"];
    let at = |aggregate: Granularity| move |o: CompileOptions| CompileOptions { aggregate, ..o };
    let (block, warp, grid) = (at(Granularity::Block), at(Granularity::Warp), at(Granularity::Grid));
    check_variants("aggregation", &heavy, &[("agg-block", &block), ("agg-warp", &warp), ("agg-grid", &grid)]);
}

/// `-flaunch-threshold=128` (alone, and with warp aggregation of what remains): every sample
/// still compiles with both ABIs (or is refused exactly as without it), and the PTX of the
/// samples whose children it runs in place is snapshotted (v2).
#[test]
fn thresholded_ptx_snapshots() {
    use cdpc::pipeline::aggregate::Granularity;
    let with = |aggregate: Granularity| move |o: CompileOptions| CompileOptions { launch_threshold: 128, aggregate, ..o };
    let (alone, warp) = (with(Granularity::Off), with(Granularity::Warp));
    check_variants("thresholding", &["bfs", "c_statements", "c_types", "kernel_pointers", "launch_shapes", "small_children", "tessellate"], &[("threshold", &alone), ("threshold-warp", &warp)]);
}

/// `-fdevice-malloc-pool`, alone and under thresholding and grid aggregation (whose heap nodes
/// it pools too): every sample still compiles with both ABIs (or is refused exactly as
/// without it), and device_heap's PTX, the sample that allocates, is snapshotted (v2): its
/// `malloc`, `free`, `__cudaCDP2Malloc` and `__cudaCDP2Free` called only where the pool cannot
/// serve, and the pool and its state `.common`.
#[test]
fn pooled_ptx_snapshots() {
    use cdpc::pipeline::aggregate::Granularity;
    let pool = |o: CompileOptions| CompileOptions { malloc_pool: cdpc::driver::MallocPool::On, ..o };
    let grid = |o: CompileOptions| CompileOptions { malloc_pool: cdpc::driver::MallocPool::On, launch_threshold: 128, aggregate: Granularity::Grid, ..o };
    check_variants("the pool", &["device_heap"], &[("pool", &pool), ("threshold-grid-pool", &grid)]);
}

/// A function the launch optimisations leave alone is the plain build's, instruction for
/// instruction: every `.entry` and `.func` of a sample's plain PTX (v2) that launches nothing
/// has the same body in the default build's (`LaunchOptimizations::DEFAULT`: thresholding at 128
/// and aggregation per kernel). Before, the kernel language's untouched kernels differed in
/// operand and block order: the default build alone promoted locals and ran the pipeline's
/// cleanup before LLVM's optimisation. One difference is allowed, with its reason: a child the
/// passes copy (its serial or aggregated copy) shares its `__shared__` variables with the copy,
/// so NVPTX keeps them at module scope where the plain build demotes them into the kernel.
/// (`cargo xtask`'s GPU harness runs both builds of every sample against nvcc's output.)
#[test]
fn functions_the_launch_optimisations_leave_alone_are_the_plain_builds() {
    let default = cdpc::driver::LaunchOptimizations::DEFAULT;
    let bodies = |ptx: &str| -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut lines = ptx.lines().peekable();
        while let Some(line) = lines.next() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| *w == ".entry" || *w == ".func") else { continue };
            // `.func (.param ...) name(` or `.entry name(`: the first word that is a name.
            let name = words[at + 1..].iter().map(|w| w.split('(').next().unwrap_or("")).find(|w| !w.is_empty() && !w.starts_with('.') && !w.ends_with(')')).unwrap_or("").to_string();
            let mut body = String::new();
            for l in lines.by_ref() {
                if l == "}" {
                    break;
                }
                // The allowed difference: a demoted `__shared__` variable, its comment and the
                // empty line in its place. And
                // NVPTX numbers call sequences across the module (`{ // callseq 4, 0`), in
                // comments: the number is left out.
                if !(l.trim().is_empty() || l.trim_start().starts_with("// demoted variable") || (l.trim_start().starts_with(".shared") && l.contains("_ZZ"))) {
                    body.push_str(l.split("// callseq").next().unwrap_or(l).trim_end());
                    body.push('\n');
                }
            }
            out.push((name, body));
        }
        out
    };
    let mut compared = 0;
    for (name, source) in samples() {
        let plain = ptx_options(LaunchAbi::V2, AddressSize::Bits64);
        let optimised = CompileOptions { launch_threshold: default.threshold, aggregate: default.aggregate, ..plain.clone() };
        let (Ok(a), Ok(b)) = (driver::compile(&source, &plain), driver::compile(&source, &optimised)) else { continue };
        let (plain_ptx, default_ptx) = (String::from_utf8(a.output).unwrap(), String::from_utf8(b.output).unwrap());
        let theirs: std::collections::HashMap<String, String> = bodies(&default_ptx).into_iter().collect();
        for (function, body) in bodies(&plain_ptx) {
            if body.contains("cudaCDP2LaunchDeviceV2") || body.contains("cudaLaunchDevice") {
                continue;
            }
            let other = theirs.get(&function).unwrap_or_else(|| panic!("{name}: {function} is not in the default build's PTX"));
            assert!(*other == body, "{name}: {function} differs from the plain build's:\n--- plain\n{body}\n--- default\n{other}");
            compared += 1;
        }
    }
    assert!(compared >= 20, "only {compared} functions compared");
}
