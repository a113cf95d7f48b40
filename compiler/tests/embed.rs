//! The library API: compiling from several threads at once, all outputs of one compilation, and
//! tool runs returned as data.

use cdpc::driver::{compile, compile_artifacts, CompileOptions, Emit};
use cdpc::toolchain::{ToolSearch, Toolchain};
use cdpc::LaunchAbi;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn samples() -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root().join("samples")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "cdp")).collect();
    files.sort();
    assert!(!files.is_empty());
    files.iter().map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap())).collect()
}

fn tools_available() -> bool {
    match Toolchain::discover(&ToolSearch::default()) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("SKIPPED (NVIDIA tools): {e}");
            false
        }
    }
}

#[test]
fn samples_compile_the_same_on_many_threads_at_once() {
    let samples = samples();
    let options = CompileOptions { emit: Emit::Ptx, ..CompileOptions::default() };
    let v1 = CompileOptions { target: cdpc::Target { launch_abi: LaunchAbi::V1, ..Default::default() }, ..options.clone() };
    let run = |opts: &CompileOptions| -> Vec<Vec<u8>> { samples.iter().map(|(_, s)| compile(s, opts).map(|c| c.output).unwrap_or_default()).collect() };
    let (expected, expected_v1) = (run(&options), run(&v1));
    let with_tools = tools_available();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|thread| {
                let (samples, expected, expected_v1, options) = (&samples, &expected, &expected_v1, &options);
                scope.spawn(move || {
                    for round in 0..2 {
                        for (i, (name, source)) in samples.iter().enumerate() {
                            // Every thread also flips the ABI now and then: contexts are per call.
                            let mut opts = options.clone();
                            let mut want = &expected[i];
                            if (thread + round + i) % 3 == 0 {
                                opts.target.launch_abi = LaunchAbi::V1;
                                want = &expected_v1[i];
                            }
                            let got = compile(source, &opts).map(|c| c.output).unwrap_or_default();
                            assert!(&got == want, "{name} differs on thread {thread}");
                            if with_tools && thread % 2 == 0 && i % 3 == 0 {
                                let cubin = compile(source, &CompileOptions::default());
                                if let Ok(cubin) = cubin {
                                    assert_eq!(&cubin.output[..4], b"\x7fELF", "{name}");
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a compiling thread panicked");
        }
    });
}

#[test]
fn artifacts_hold_every_output_and_the_tool_runs() {
    let source = std::fs::read_to_string(repo_root().join("samples/hello.cdp")).unwrap();
    let text_only = compile_artifacts(&source, &CompileOptions::default(), false).unwrap();
    assert!(text_only.llvm_ir.contains("define") && text_only.ptx.contains(".entry"));
    assert!(text_only.object.is_none() && text_only.cubin.is_none() && text_only.tool_runs.is_empty());
    if !tools_available() {
        return;
    }
    let all = compile_artifacts(&source, &CompileOptions::default(), true).unwrap();
    assert_eq!(all.ptx, text_only.ptx);
    assert_eq!(&all.object.as_ref().unwrap()[..4], b"\x7fELF");
    assert_eq!(&all.cubin.as_ref().unwrap()[..4], b"\x7fELF");
    let tools: Vec<&str> = all.tool_runs.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["ptxas", "nvlink"]);
    assert!(all.tool_runs[1].command.contains("-lcudadevrt"), "{:?}", all.tool_runs);
    // compile() records the same runs instead of printing them.
    let compiled = compile(&source, &CompileOptions::default()).unwrap();
    assert_eq!(compiled.tool_runs.len(), 2);
    assert!(compiled.tool_runs[0].command.contains("-arch=sm_90"));
}

#[test]
fn several_objects_link_into_one_cubin() {
    if !tools_available() {
        return;
    }
    let tools = Toolchain::discover(&ToolSearch::default()).unwrap();
    // Two modules: the parent launches a child defined in the other one (extern, -rdc style).
    let child = "extern \"C\" __global__ void child(int *p) { p[threadIdx.x] += 1; }";
    let opts = CompileOptions { emit: Emit::Object, ..CompileOptions::default() };
    let child_obj = compile(child, &opts).unwrap().output;
    let parent = compile("extern \"C\" __global__ void other(int *p) { p[0] = 2; }", &opts).unwrap().output;
    let build = cdpc::toolchain::BuildOptions::new(cdpc::SmVersion(90));
    let cubin = tools.link_objects(&[&child_obj, &parent], &build).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    let has = |needle: &[u8]| cubin.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"child") && has(b"other"));
    // An extra library: the child's object given as a link library.
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("child.o");
    std::fs::write(&lib, &child_obj).unwrap();
    let mut with_lib = cdpc::toolchain::BuildOptions::new(cdpc::SmVersion(90));
    with_lib.link_libraries.push(lib);
    let cubin = tools.link_objects(&[&parent], &with_lib).unwrap();
    assert!(cubin.windows(5).any(|w| w == b"child"));
    assert!(with_lib.log.runs()[0].command.contains("child.o"));
}
