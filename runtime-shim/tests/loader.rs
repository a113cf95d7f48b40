//! The host loader without a GPU: manifests of every sample, formulas, argument bytes, result
//! comparison, the no-driver error path and the runner's link line.

use runtime_shim::loader::compare::{check_against_manifest, compare_outputs, median, RunOutput};
use runtime_shim::loader::diff::{self, Cell, Label, SampleResult};
use runtime_shim::loader::manifest::{Arg, CondKind, ElemType, GraphLaunch, Init, Node, Num};
use runtime_shim::loader::{run_sample, CudaError, LoadError, Manifest, RunOptions, SoakChecks};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples")
}

fn sample_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(samples_dir())
        .unwrap()
        .filter_map(|e| {
            let file = e.ok()?.file_name().into_string().ok()?;
            // The kernel language's samples and the CUDA C++ ones (built through Clang).
            file.strip_suffix(".cdp").or_else(|| file.strip_suffix(".cu")).map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

fn manifest(name: &str) -> Manifest {
    Manifest::load(&samples_dir().join(format!("{name}.toml"))).unwrap_or_else(|e| panic!("{e}"))
}

/// A successful run whose buffers hold exactly what the manifest expects (where it says).
fn perfect_output(m: &Manifest) -> RunOutput {
    let mut out = RunOutput::default();
    for b in &m.buffers {
        let mut initial = b.initial_values(&m.vars).unwrap();
        if b.check == Some(runtime_shim::loader::manifest::Check::Sorted) {
            // A correct sort: the initial values in order (a permutation of them, too).
            initial.sort_by(|x, y| x.as_f64().total_cmp(&y.as_f64()));
        }
        let want = b.expected_values(&m.vars).unwrap();
        let mut bytes = Vec::new();
        for (i, v) in initial.iter().enumerate() {
            // A "nonzero" check without expected values: any nonzero value passes.
            let fallback = if b.check == Some(runtime_shim::loader::manifest::Check::Nonzero) { Num::Int(1) } else { *v };
            bytes.extend(b.ty.encode(want[i].unwrap_or(fallback)).unwrap());
        }
        out.buffers.push((b.name.clone(), bytes));
    }
    for g in &m.globals {
        out.globals.push((g.name.clone(), g.ty.encode(g.expect.unwrap_or(Num::Int(0))).unwrap()));
    }
    out.stdout = m.stdout.clone().unwrap_or_default().into_bytes();
    if let Some(wanted) = &m.expect_error {
        let code = runtime_shim::errors::NAMED_ERRORS.iter().find(|(n, _)| n == wanted).map(|(_, c)| *c).expect("a known error name");
        out.error = Some(CudaError::new(code, "CUDA_ERROR", "expected by the manifest", "cuCtxSynchronize"));
    }
    out
}

#[test]
fn every_sample_has_a_manifest_that_names_its_kernel_buffers_and_globals() {
    let names = sample_names();
    assert!(names.len() >= 8, "samples lost: {names:?}");
    for name in &names {
        let m = manifest(name);
        let source = std::fs::read_to_string(samples_dir().join(format!("{name}.cdp"))).or_else(|_| std::fs::read_to_string(samples_dir().join(format!("{name}.cu")))).unwrap();
        let kernel = format!("__global__ void {}(", m.launch.kernel);
        assert!(source.contains(&kernel), "{name}: no kernel `{}` in the .cdp", m.launch.kernel);
        for launch in m.graphs.iter().flat_map(|g| g.kernels()) {
            let kernel = format!("__global__ void {}(", launch.kernel);
            assert!(source.contains(&kernel), "{name}: no graph-node kernel `{}` in the .cdp", launch.kernel);
        }
        for g in &m.globals {
            assert!(source.lines().any(|l| l.contains("__device__") && l.contains(&format!(" {} ", g.name)) && !l.contains('(')), "{name}: no __device__ variable `{}`", g.name);
        }
        assert!(!m.abis.is_empty(), "{name}: no ABI builds it");
        if source.contains("cudaStreamTailLaunch") || source.contains("cudaStreamFireAndForget") {
            assert_eq!(m.abis, vec![runtime_shim::loader::Abi::V2], "{name}: v1 refuses tail launch and fire-and-forget");
        }
        // every expectation evaluates and a correct run passes its own checks
        let perfect = perfect_output(&m);
        assert_eq!(check_against_manifest(&m, &perfect), Vec::<String>::new(), "{name}");
    }
}

/// bench/gpu/VARIANT_N.toml (written by `cargo xtask gpu-bench-bundle`): VARIANT.cdp exists and
/// has the kernel, the grid launches N threads (N launches in all, about 5N / 6 for lane_sites),
/// the pending-launch limit covers them, and a correct run (counter == N * 32, lane_sites' own
/// sum) passes.
#[test]
fn gpu_bench_manifests_launch_n_children() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/gpu");
    let manifests = diff::load_manifests(&dir).unwrap();
    let variants = std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "cdp")).count();
    assert_eq!(variants, 8, "null_stream, named_stream, own_stream, fire_and_forget, launch_sites, padded_structs, branch_sites, lane_sites");
    assert_eq!(manifests.len(), variants * 4, "every variant at 4 sizes");
    for m in &manifests {
        let (variant, n) = m.name.rsplit_once('_').unwrap();
        let n: u64 = n.parse().unwrap();
        let source = std::fs::read_to_string(dir.join(format!("{variant}.cdp"))).unwrap();
        assert!(source.contains(&format!("__global__ void {}(", m.launch.kernel)), "{}", m.name);
        let threads: u64 = m.launch.grid.iter().chain(&m.launch.block).map(|&x| u64::from(x)).product();
        assert_eq!(threads, n, "{}", m.name);
        assert!(m.limits.pending_launch_count.unwrap() >= n, "{}", m.name);
        let want = m.buffers[0].expected_values(&m.vars).unwrap();
        let counter = if variant == "lane_sites" {
            // the program's own rule, thread by thread: t % 4 launches of 2 threads for
            // t % 3 == 0, one of 4 threads for t % 3 == 1
            (0..n).filter(|t| t % 3 == 0).map(|t| 2 * (t % 4)).sum::<u64>() + 4 * (0..n).filter(|t| t % 3 == 1).count() as u64
        } else {
            n * 32
        };
        assert_eq!(want[0], Some(Num::Int(i128::from(counter))), "{}", m.name);
        assert_eq!(check_against_manifest(m, &perfect_output(m)), Vec::<String>::new(), "{}", m.name);
        let v2_only = source.contains("cudaStreamFireAndForget");
        assert_eq!(m.abis.len(), if v2_only { 1 } else { 2 }, "{}", m.name);
    }
}

#[test]
fn sample_launches_match_their_header_comments() {
    let hello = manifest("hello");
    assert_eq!(hello.stdout.as_deref(), Some("Hello World!\n"));
    assert_eq!((hello.launch.grid, hello.launch.block), ([1, 1, 1], [1, 1, 1]));
    let r = manifest("recursion");
    assert_eq!(r.launch.args, vec![Arg::Scalar(ElemType::I32, Num::Int(23)), Arg::Buffer("counters".into())]);
    assert_eq!(r.buffers[0].len, 24);
    let p = manifest("permute");
    assert_eq!((p.launch.grid, p.launch.block, p.launch.shared_bytes), ([1, 1, 1], [256, 1, 1], 1024));
    let il = manifest("irregular_loop");
    assert_eq!(il.launch.grid, [4, 1, 1]);
    assert_eq!(il.limits.pending_launch_count, Some(4096));
    assert_eq!(il.buffer("moreData").unwrap().len, 500_499);
}

#[test]
fn formulas_agree_with_direct_models() {
    // permute: bits 7, 5, 3, 1 flipped
    let p = manifest("permute");
    let want = p.buffers[0].expected_values(&p.vars).unwrap();
    for (i, w) in want.iter().enumerate() {
        assert_eq!(*w, Some(Num::Int((i ^ 0xAA) as i128)));
    }
    // irregular_loop: elements inside a segment become 3x+1, the others keep their value
    let il = manifest("irregular_loop");
    let n = 1000usize;
    let m = il.buffer("moreData").unwrap();
    let mut covered = vec![false; m.len];
    for i in 0..n {
        let s = i * (i + 1) / 2;
        covered[s..s + i].iter_mut().for_each(|c| *c = true);
    }
    let want = m.expected_values(&il.vars).unwrap();
    let init = m.initial_values(&il.vars).unwrap();
    for j in 0..m.len {
        let v = (j % 1000) as f64;
        assert_eq!(init[j].as_f64(), v);
        let expected = if covered[j] { 3.0 * v + 1.0 } else { v };
        assert_eq!(want[j].unwrap().as_f64(), expected, "moreData[{j}]");
    }
    // streams_events uses [vars]
    let se = manifest("streams_events");
    let out = se.buffer("out").unwrap().expected_values(&se.vars).unwrap();
    assert_eq!(out[0], Some(Num::Int(999 * 999)));
    assert_eq!(out[10], Some(Num::Int(100 + 989 * 989)));
}

#[test]
fn inits_and_formula_errors() {
    let text = r#"
        description = "x"
        [vars]
        n = 4
        [launch]
        kernel = "k"
        grid = [2, "n"]
        block = "n * 8"
        args = ["buf:a", "u64:18446744073709551615", "f32:1.5", "i8:-3", "u16:n + 1"]
        [[buffer]]
        name = "a"
        type = "u8"
        len = "n"
        init = "random:7"
        [[buffer]]
        name = "b"
        type = "f64"
        len = 3
        init = [1.5, 2]
    "#;
    let m = Manifest::parse("x", text).unwrap();
    assert_eq!((m.launch.grid, m.launch.block), ([2, 4, 1], [32, 1, 1]));
    let a = m.buffer("a").unwrap();
    assert_eq!(a.init, Init::Random(7));
    let r1 = a.initial_values(&m.vars).unwrap();
    assert_eq!(r1, a.initial_values(&m.vars).unwrap(), "random:SEED is reproducible");
    assert!(r1.iter().all(|v| matches!(v, Num::Int(0..=999))));
    assert_eq!(m.buffer("b").unwrap().initial_bytes(&m.vars).unwrap(), [1.5f64.to_le_bytes(), 2f64.to_le_bytes(), 0f64.to_le_bytes()].concat());

    for (bad, why) in [
        ("args = [\"i8:300\"]", "does not fit in i8"),
        ("args = [\"buf:nope\"]", "no [[buffer]] named `nope`"),
        ("args = [\"i32:1.5\"]", "not an integer"),
        ("args = [\"q32:1\"]", "unknown type `q32`"),
        ("args = [\"i32:n +\"]", "formula"),
        ("grid = 0", "must be 1 to"),
    ] {
        let t = format!("description = \"x\"\n[launch]\nkernel = \"k\"\n{}{bad}\n", if bad.starts_with("grid") { "block = 1\n" } else { "grid = 1\nblock = 1\n" });
        let e = Manifest::parse("x", &t).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
    // a top-level key after a table is a TOML mistake the error explains
    let e = Manifest::parse("x", "description = \"x\"\n[launch]\nkernel = \"k\"\ngrid = 1\nblock = 1\nabis = [\"v2\"]\n").unwrap_err().to_string();
    assert!(e.contains("before the first"), "{e}");
}

#[test]
fn argument_bytes() {
    let vars = BTreeMap::from([("n".to_string(), 1000i64)]);
    let cases: &[(&str, &[u8])] = &[
        ("i8:-3", &[0xfd]),
        ("u8:200", &[200]),
        ("i16:-1234", &(-1234i16).to_le_bytes()),
        ("u16:65000", &65000u16.to_le_bytes()),
        ("i32:5", &[5, 0, 0, 0]),
        ("u32:n", &1000u32.to_le_bytes()),
        ("i64:-9000000000000000005", &(-9000000000000000005i64).to_le_bytes()),
        ("u64:0xFFFFFFFFFFFFFFFF", &[0xff; 8]),
        ("f32:1.5", &1.5f32.to_le_bytes()),
        ("f64:3.0e300", &3.0e300f64.to_le_bytes()),
        ("f64:2", &2.0f64.to_le_bytes()),
        ("buf:data", &0x7f00_1234_5600u64.to_le_bytes()),
    ];
    for (text, bytes) in cases {
        let arg = Arg::parse(text, &vars).unwrap();
        let got = arg.bytes(|name| (name == "data").then_some(0x7f00_1234_5600)).unwrap();
        assert_eq!(&got, bytes, "{text}");
    }
    let m = manifest("param_layout");
    let packed = m
        .arg_bytes(|name| {
            Some(match name {
                "iout" => 0x1000,
                "fout" => 0x2000,
                _ => 0x3000,
            })
        })
        .unwrap();
    assert_eq!(packed, vec![0x1000u64.to_le_bytes().to_vec(), 0x2000u64.to_le_bytes().to_vec(), 0x3000u64.to_le_bytes().to_vec(), vec![5, 0, 0, 0]]);
}

#[test]
fn checks_report_what_is_wrong() {
    let m = manifest("recursion");
    let mut out = perfect_output(&m);
    assert!(check_against_manifest(&m, &out).is_empty());
    out.buffers[0].1[4 * 5..4 * 6].copy_from_slice(&0u32.to_le_bytes());
    out.globals[0].1 = 3u32.to_le_bytes().to_vec();
    let reasons = check_against_manifest(&m, &out);
    assert_eq!(reasons, ["counters[5] = 0, expected 64", "launch_errors = 3, expected 0"]);

    let h = manifest("hello");
    let mut out = perfect_output(&h);
    out.stdout = b"World!\nHello ".to_vec();
    assert_eq!(check_against_manifest(&h, &out).len(), 1);
    out.error = Some(CudaError::new(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered", "cuCtxSynchronize"));
    let reasons = check_against_manifest(&h, &out);
    assert!(reasons[0].contains("cudaErrorIllegalAddress (CUDA_ERROR_ILLEGAL_ADDRESS = 700"), "{reasons:?}");

    // permutation check catches a duplicated element
    let p = manifest("permute");
    let mut out = perfect_output(&p);
    let first = out.buffers[0].1[0..4].to_vec();
    out.buffers[0].1[4..8].copy_from_slice(&first);
    let reasons = check_against_manifest(&p, &out);
    assert!(reasons.iter().any(|r| r.contains("not a permutation")), "{reasons:?}");

    // an expected error: matched by either spelling, and success is a failure
    let mut e = Manifest::parse("e", "description = \"e\"\nexpect_error = \"cudaErrorIllegalAddress\"\n[launch]\nkernel = \"k\"\ngrid = 1\nblock = 1\n").unwrap();
    let mut out = RunOutput::default();
    assert!(check_against_manifest(&e, &out)[0].contains("but the run succeeded"));
    out.error = Some(CudaError::new(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "", "cuCtxSynchronize"));
    assert!(check_against_manifest(&e, &out).is_empty());
    e.expect_error = Some("CUDA_ERROR_ILLEGAL_ADDRESS".into());
    assert!(check_against_manifest(&e, &out).is_empty());
}

#[test]
fn byte_for_byte_comparison() {
    let m = manifest("param_layout");
    let a = perfect_output(&m);
    let mut b = a.clone();
    assert!(compare_outputs(&m, &a, &b).is_empty());
    // -0.0 == 0.0 as numbers, but not as bytes
    b.buffers[1].1[5 * 8..6 * 8].copy_from_slice(&(-0.0f64).to_le_bytes());
    b.buffers[0].1[8..16].copy_from_slice(&7i64.to_le_bytes());
    let d = compare_outputs(&m, &a, &b);
    assert_eq!(d, ["buffer `iout`: 1 element(s) differ, first [1]: -3 against 7", "buffer `fout`: 1 element(s) differ, first [5]: 0.0 against -0.0"]);
    assert!(check_against_manifest(&m, &b).iter().any(|r| r == "iout[1] = 7, expected -3"));
    let mut c = a.clone();
    c.stdout = b"x".to_vec();
    assert_eq!(compare_outputs(&m, &a, &c).len(), 1);
}

#[test]
fn diff_table_rows_and_verdict() {
    let labels: Vec<Label> = ["nvcc=/n", "cdpc-v2=/a", "cdpc-v1=/b"].iter().map(|l| Label::parse(l).unwrap()).collect();
    assert_eq!(labels[2].abi(), Some(runtime_shim::loader::Abi::V1));
    assert_eq!(labels[0].abi(), None);
    // aggregated builds name their ABI before the granularity
    assert_eq!(Label::parse("cdpc-v1-agg-warp=/w").unwrap().abi(), Some(runtime_shim::loader::Abi::V1));
    assert_eq!(Label::parse("agg-block=/w").unwrap().abi(), None);
    let h = manifest("hello");
    let mut fast = perfect_output(&h);
    fast.times_ms = vec![0.5, 0.1, 0.2];
    let mut slow = perfect_output(&h);
    slow.times_ms = vec![0.4, 0.4];
    let ran = |o: &RunOutput| diff::judge(&h, Ok(o.clone()));
    let not_built = diff::missing_cubin(&h, &labels[2], Path::new("/b/hello.cubin"));
    assert!(matches!(not_built, Cell::NotBuilt(_)));
    let results = vec![SampleResult { manifest: h.clone(), cells: vec![ran(&fast), ran(&slow), not_built] }];
    let table = diff::table(&results, &labels, 0, 1);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows[0], "| sample | compiler | compiler output ok | nvcc output ok | identical | compiler ms (min / median / max) | nvcc ms (min / median / max) | ratio | 95% interval | verdict |");
    // nvcc {0.5, 0.1, 0.2}: median 0.2; cdpc-v2 {0.4, 0.4}: median 0.4. The resampled medians
    // of nvcc are 0.1, 0.2 or 0.5 (3 draws), so the ratios 0.4/0.5 = 0.8 to 0.4/0.1 = 4: the
    // interval holds 1 and no verdict is stated.
    assert_eq!(rows[2], "| hello | cdpc-v2 | ok | ok | yes | 0.400 / 0.400 / 0.400 | 0.100 / 0.200 / 0.500 | 2.00 | 0.80–4.00 | no difference shown |");
    assert_eq!(rows[3], "| hello | cdpc-v1 | not built (the v1 launch ABI cannot build it) | ok | – | – | 0.100 / 0.200 / 0.500 | – | – | – |");
    let summary = diff::summary(&results, &labels, 0, 1);
    assert!(summary.contains("| cdpc-v2 | 1 | 0 | 0 | 1 | 2.000 |"), "{summary}");
    assert!(summary.contains("| cdpc-v1 | 0 | 0 | 0 | 0 | – |"), "{summary}");
    assert!(diff::all_passed(&results, 0));
    // a cubin that should exist and does not fails the run; so do differing outputs
    let missing = diff::missing_cubin(&manifest("permute"), &labels[2], Path::new("/b/permute.cubin"));
    assert!(matches!(missing, Cell::Failed(_)));
    // a build with -flaunch-threshold of a sample whose manifest says it means nothing there
    // is not built; of any other sample, missing
    let threshold = Label::parse("cdpc-v2-threshold-warp=/t").unwrap();
    assert!(threshold.thresholded() && !labels[1].thresholded());
    let pending = manifest("err_pending_limit");
    assert!(matches!(diff::missing_cubin(&pending, &threshold, Path::new("/t/x.cubin")), Cell::NotBuilt(why) if why.contains("pending-launch")));
    assert!(matches!(diff::missing_cubin(&pending, &labels[1], Path::new("/a/x.cubin")), Cell::Failed(_)));
    assert!(matches!(diff::missing_cubin(&manifest("permute"), &threshold, Path::new("/t/x.cubin")), Cell::Failed(_)));
    // a build that left a `NAME.not-built` file beside the cubin's place (gpu-bundle, for a
    // CUDA C++ sample under a kernel-language label) is not built, for the reason it gives
    let folder = tempfile::tempdir().unwrap();
    let cubin = folder.path().join("permute.cubin");
    assert!(matches!(diff::missing_cubin(&manifest("permute"), &labels[1], &cubin), Cell::Failed(_)));
    std::fs::write(folder.path().join("permute.not-built"), "CUDA C++: built under the cdpc-clang-* labels\n").unwrap();
    assert!(matches!(diff::missing_cubin(&manifest("permute"), &labels[1], &cubin), Cell::NotBuilt(why) if why == "CUDA C++: built under the cdpc-clang-* labels"));
    let mut other = slow.clone();
    other.stdout = b"Hello World!\n\n".to_vec();
    let results = vec![SampleResult { manifest: h.clone(), cells: vec![ran(&fast), diff::judge(&h, Ok(other)), ran(&slow)] }];
    assert!(!diff::all_passed(&results, 0));
    assert!(diff::table(&results, &labels, 0, 1).contains("| hello | cdpc-v2 | FAIL | ok | NO |"));
    assert!(diff::details(&results, &labels, 0).contains("cdpc-v2 against nvcc: stdout"));
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(diff::civil_date(0), "1970-01-01");
    assert_eq!(diff::civil_date(20_779), "2026-11-22");
}

#[test]
fn without_a_driver_the_loader_returns_an_error() {
    let m = manifest("hello");
    match run_sample(b"not a cubin", &m, &RunOptions::default()) {
        Err(LoadError::NoDriver(why)) => {
            let text = LoadError::NoDriver(why).to_string();
            assert!(text.starts_with("no CUDA driver found"), "{text}");
        }
        Err(LoadError::Cuda(e)) => println!("skipped: a CUDA driver is present ({e}); the no-driver path is not reachable here"),
        other => println!("skipped: a CUDA driver is present; loading garbage gave {other:?}"),
    }
}

#[test]
fn the_runner_does_not_link_llvm_or_cuda() {
    let exe = env!("CARGO_BIN_EXE_cdpc-run");
    let out = match std::process::Command::new("ldd").arg(exe).output() {
        Ok(o) => o,
        Err(e) => return println!("skipped: ldd cannot run: {e}"),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let lib = line.split_whitespace().next().unwrap_or("");
        let allowed = ["linux-vdso", "libc.so", "libm.so", "libgcc_s.so", "libpthread.so", "libdl.so", "/lib64/ld-linux", "ld-linux"];
        assert!(allowed.iter().any(|a| lib.contains(a)), "cdpc-run links {lib}:\n{text}");
    }
    // and nothing LLVM-related is in its dependency tree
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = std::process::Command::new(cargo)
        .args(["tree", "--offline", "-p", "runtime-shim", "--features", "loader", "-e", "normal", "--prefix", "none"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Some(tree) = tree.ok().filter(|t| t.status.success()) {
        let deps = String::from_utf8_lossy(&tree.stdout);
        for bad in ["llvm-sys", "inkwell", "cdpc "] {
            assert!(!deps.lines().any(|l| l.starts_with(bad)), "runtime-shim --features loader depends on {bad}");
        }
    }
}

/// The differential run gives each sample its own process (a fault's sticky error would
/// poison the rest): the child's verdict must come back intact, and a child that dies without
/// a result must be an error, never a pass.
#[test]
fn runs_in_a_child_process_report_back() {
    use runtime_shim::loader::isolate::run_in_child;
    let runner = Path::new(env!("CARGO_BIN_EXE_cdpc-run"));
    let dir = tempfile::tempdir().unwrap();
    let cubin = dir.path().join("x.cubin");
    std::fs::write(&cubin, b"not a cubin").unwrap();
    let manifest = samples_dir().join("hello.toml");
    let options = RunOptions { warmup: 0, repeat: 0, capture_stdout: true };
    match run_in_child(runner, &cubin, &manifest, &options, std::time::Duration::from_secs(60)) {
        Err(LoadError::NoDriver(why)) => assert!(!why.is_empty()),
        Err(LoadError::Cuda(e)) => println!("a CUDA driver is present; the child reported {e}"),
        other => panic!("expected the child's driver error, got {other:?}"),
    }
    let dead = run_in_child(Path::new("/bin/false"), &cubin, &manifest, &options, std::time::Duration::from_secs(60));
    assert!(matches!(&dead, Err(LoadError::Isolated(m)) if m.contains("without a result")), "{dead:?}");
    // A run that never finishes (a hung grid) is stopped: a script that ignores its arguments
    // and sleeps stands in for it.
    let hang = dir.path().join("hang.sh");
    std::fs::write(&hang, "#!/bin/sh\nsleep 30\n").unwrap();
    std::fs::set_permissions(&hang, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let started = std::time::Instant::now();
    let hung = run_in_child(&hang, &cubin, &manifest, &options, std::time::Duration::from_millis(300));
    assert!(matches!(&hung, Err(LoadError::Isolated(m)) if m.contains("did not finish")), "{hung:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the hung run was not stopped");
}

#[test]
fn graph_tables_and_handle_arguments() {
    let head = "description = \"g\"\n[launch]\nkernel = \"p\"\ngrid = 1\nblock = 1\n";
    let graph = "[[buffer]]\nname = \"out\"\ntype = \"i32\"\nlen = 4\n[[graph]]\nname = \"g\"\nnodes = [{ kernel = \"k\", grid = 2, block = [32, 1, 1], args = [\"buf:out\", \"i32:7\"] }, { kernel = \"k\", grid = 1, block = 1, device_updatable = true }]\n";
    let m = Manifest::parse("g", &format!("{head}args = [\"graph:g\", \"node:g.1\"]\n{graph}")).unwrap();
    assert_eq!(m.graphs.len(), 1);
    assert_eq!(m.graphs[0].nodes.len(), 2);
    assert_eq!(m.graphs[0].launch, GraphLaunch::Device);
    let (Node::Kernel(n0), Node::Kernel(n1)) = (&m.graphs[0].nodes[0], &m.graphs[0].nodes[1]) else { panic!("kernel nodes") };
    assert_eq!(n0.launch.grid, [2, 1, 1]);
    assert_eq!(n0.launch.block, [32, 1, 1]);
    assert!(!n0.device_updatable && n1.device_updatable);
    assert_eq!(m.launch.args, vec![Arg::Graph("g".into()), Arg::Node("g".into(), 1)]);
    // Handles resolve by `graph:NAME` and `node:NAME.K`.
    let bytes = m
        .arg_bytes(|key| match key {
            "graph:g" => Some(0xa0),
            "node:g.1" => Some(0xb1),
            _ => None,
        })
        .unwrap();
    assert_eq!(bytes, vec![0xa0u64.to_le_bytes().to_vec(), 0xb1u64.to_le_bytes().to_vec()]);
    let refused = [
        ("args = [\"graph:h\"]", "no [[graph]] named `h`"),
        ("args = [\"node:g.0\"]", "not `device_updatable = true`"),
        ("args = [\"node:g.5\"]", "has no node 5"),
        ("args = [\"node:g\"]", "expected `node:GRAPH.INDEX`"),
    ];
    for (args, message) in refused {
        let e = Manifest::parse("g", &format!("{head}{args}\n{graph}")).unwrap_err().to_string();
        assert!(e.contains(message), "{args}: {e}");
    }
    let twice = format!("{head}{graph}[[graph]]\nname = \"g\"\nnodes = [{{ kernel = \"k\", grid = 1, block = 1 }}]\n");
    assert!(Manifest::parse("g", &twice).unwrap_err().to_string().contains("defined twice"));
    let nested = format!("{head}[[graph]]\nname = \"a\"\nnodes = [{{ kernel = \"k\", grid = 1, block = 1, args = [\"graph:a\"] }}]\n");
    assert!(Manifest::parse("g", &nested).unwrap_err().to_string().contains("buffers, scalars"));
}

#[test]
fn cooperative_launch_key() {
    let m = |launch_extra: &str| Manifest::parse("c", &format!("description = \"c\"\n[launch]\nkernel = \"k\"\ngrid = 4\nblock = 64\n{launch_extra}"));
    assert!(!m("").unwrap().launch.cooperative, "not cooperative unless asked");
    assert!(m("cooperative = true").unwrap().launch.cooperative);
    assert!(!m("cooperative = false").unwrap().launch.cooperative);
    assert!(m("cooperative = 1").unwrap_err().to_string().contains("cooperative"), "a boolean");
    // Only [launch] says it: not a graph node, nor a conditional body's kernel.
    let node = "description = \"c\"\n[launch]\nkernel = \"k\"\ngrid = 1\nblock = 1\n[[graph]]\nname = \"g\"\nnodes = [{ kernel = \"k\", grid = 1, block = 1, cooperative = true }]\n";
    assert!(Manifest::parse("c", node).is_err());
    let body = "description = \"c\"\n[launch]\nkernel = \"k\"\ngrid = 1\nblock = 1\n[[graph]]\nname = \"g\"\nlaunch = \"host\"\nnodes = [{ if = \"h\", default = 0, body = [{ kernel = \"k\", grid = 1, block = 1, cooperative = true }] }]\n";
    assert!(Manifest::parse("c", body).unwrap_err().to_string().contains("cooperative"));
    // The sample that needs it asks for it.
    let cg = manifest("devrt_cg");
    assert!(cg.launch.cooperative);
    assert!(cg.graphs.is_empty(), "launched with cuLaunchCooperativeKernel, not as a graph");
    // The error a too-large cooperative grid gives has its runtime name.
    assert_eq!(runtime_shim::errors::error_name(720), Some("cudaErrorCooperativeLaunchTooLarge"));
    let e = CudaError::new(720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks", "cuLaunchCooperativeKernel(`k`)");
    assert!(e.matches("cudaErrorCooperativeLaunchTooLarge") && e.matches("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"));
}

#[test]
fn conditional_nodes_and_condition_handles() {
    let head = "description = \"c\"\n[launch]\nkernel = \"p\"\ngrid = 1\nblock = 1\n[[buffer]]\nname = \"out\"\ntype = \"i32\"\nlen = 4\n";
    let graph = |launch: &str, nodes: &str| format!("{head}[[graph]]\nname = \"g\"\n{launch}nodes = [{nodes}]\n");
    let good = graph(
        "launch = \"host\"\n",
        "{ kernel = \"set\", grid = 1, block = 1, args = [\"cond:g.yes\"] }, \
         { if = \"yes\", default = 0, body = [{ kernel = \"mark\", grid = 1, block = 1, args = [\"buf:out\", \"i32:1\"] }] }, \
         { while = \"more\", default = 1, body = [{ kernel = \"step\", grid = 1, block = 1, args = [\"buf:out\", \"cond:g.more\"] }, { kernel = \"mark\", grid = 2, block = 1 }] }",
    );
    let m = Manifest::parse("c", &good).unwrap();
    let g = &m.graphs[0];
    assert_eq!(g.launch, GraphLaunch::Host);
    assert_eq!(g.handles(), vec!["yes", "more"]);
    assert_eq!(g.kernels().iter().map(|l| l.kernel.as_str()).collect::<Vec<_>>(), vec!["set", "mark", "step", "mark"]);
    let Node::Conditional(c) = &g.nodes[2] else { panic!("node 2 is the WHILE") };
    assert_eq!((c.kind, c.handle.as_str(), c.default, c.body.len()), (CondKind::While, "more", 1, 2));
    assert_eq!(c.body[0].args, vec![Arg::Buffer("out".into()), Arg::Cond("g".into(), "more".into())]);
    let Node::Conditional(c) = &g.nodes[1] else { panic!("node 1 is the IF") };
    assert_eq!((c.kind, c.default), (CondKind::If, 0));
    // A condition handle's bytes are the handle, resolved by `cond:GRAPH.HANDLE`.
    assert_eq!(Arg::Cond("g".into(), "more".into()).bytes(|k| (k == "cond:g.more").then_some(0x5e)).unwrap(), 0x5eu64.to_le_bytes().to_vec());
    assert!(Arg::Cond("g".into(), "x".into()).bytes(|_| None).unwrap_err().to_string().contains("cond:g.x"));
    assert_eq!(Arg::parse("cond:a.b.c", &BTreeMap::new()).unwrap(), Arg::Cond("a.b".into(), "c".into()));

    let body = "body = [{ kernel = \"mark\", grid = 1, block = 1 }]";
    let refused = [
        // conditional nodes only in host-launched graphs (cuda_runtime_api.h, cudaGraphInstantiate)
        (graph("", &format!("{{ if = \"h\", default = 0, {body} }}")), "device launch may not hold"),
        (graph("launch = \"device\"\n", &format!("{{ while = \"h\", default = 1, {body} }}")), "device launch may not hold"),
        (graph("launch = \"later\"\n", "{ kernel = \"k\", grid = 1, block = 1 }"), "expected \"device\" or \"host\""),
        (graph("launch = \"host\"\n", &format!("{{ if = \"h\", {body} }}")), "needs `default`"),
        (graph("launch = \"host\"\n", &format!("{{ if = \"h\", default = -1, {body} }}")), "not an unsigned int"),
        (graph("launch = \"host\"\n", "{ if = \"h\", default = 0, body = [] }"), "has no kernels"),
        (graph("launch = \"host\"\n", &format!("{{ if = \"h\", while = \"h\", default = 0, {body} }}")), "not both"),
        (graph("launch = \"host\"\n", &format!("{{ if = \"h\", default = 0, kernel = \"k\", {body} }}")), "its kernels go in `body`"),
        (graph("launch = \"host\"\n", "{ kernel = \"k\", grid = 1, block = 1, default = 1 }"), "belong to a conditional node"),
        (graph("launch = \"host\"\n", "{ kernel = \"k\", block = 1 }"), "needs `kernel`, `grid` and `block`"),
        (graph("launch = \"host\"\n", &format!("{{ if = \"h\", default = 0, {body} }}, {{ while = \"h\", default = 0, {body} }}")), "defined twice"),
        (graph("launch = \"host\"\n", &format!("{{ if = \"a.b\", default = 0, {body} }}")), "without `.`"),
        (graph("launch = \"host\"\n", "{ kernel = \"k\", grid = 1, block = 1, args = [\"cond:g.none\"] }"), "no conditional node with handle `none`"),
        (graph("launch = \"host\"\n", "{ if = \"h\", default = 0, body = [{ kernel = \"k\", grid = 1, block = 1, args = [\"cond:other.h\"] }] }"), "its own graph"),
        (graph("launch = \"host\"\n", "{ if = \"h\", default = 0, body = [{ kernel = \"k\", grid = 1, block = 1, device_updatable = true }] }"), "plain kernel launch"),
        (graph("launch = \"host\"\n", "{ kernel = \"k\", grid = 1, block = 1, args = [\"cond:g\"] }"), "expected `cond:GRAPH.HANDLE`"),
    ];
    for (text, message) in refused {
        let e = Manifest::parse("c", &text).unwrap_err().to_string();
        assert!(e.contains(message), "{text}\n=> {e}\n(wanted: {message})");
    }
    // [launch] gets no condition handle, and a host graph is no `graph:` argument.
    let hosted = graph("launch = \"host\"\n", &format!("{{ if = \"h\", default = 0, {body} }}"));
    let with_args = |args: &str| hosted.replacen("block = 1\n", &format!("block = 1\nargs = [{args}]\n"), 1);
    assert!(Manifest::parse("c", &with_args("\"cond:g.h\"")).unwrap_err().to_string().contains("not to [launch]"));
    assert!(Manifest::parse("c", &with_args("\"graph:g\"")).unwrap_err().to_string().contains("not instantiated for device launch"));
    assert!(Manifest::parse("c", &with_args("\"node:g.0\"")).unwrap_err().to_string().contains("not `device_updatable = true`"));

    // The sample: a host graph with a WHILE and two IFs.
    let s = manifest("devrt_conditional");
    assert!(s.graphs.iter().all(|g| g.launch == GraphLaunch::Host));
    let kinds: Vec<CondKind> = s.graphs.iter().flat_map(|g| &g.nodes).filter_map(|n| if let Node::Conditional(c) = n { Some(c.kind) } else { None }).collect();
    assert!(kinds.contains(&CondKind::If) && kinds.contains(&CondKind::While), "{kinds:?}");
}

/// A label folder under `root` for each `(label, samples)`, holding a stand-in `SAMPLE.cubin`
/// for each of its samples (the runner is a closure in these tests: the bytes are never loaded).
fn stand_in_labels(root: &Path, cells: &[(&str, &[&str])]) -> Vec<Label> {
    cells
        .iter()
        .map(|(name, samples)| {
            let dir = root.join(name);
            std::fs::create_dir(&dir).unwrap();
            for sample in *samples {
                std::fs::write(dir.join(format!("{sample}.cubin")), b"stand-in").unwrap();
            }
            Label { name: name.to_string(), dir }
        })
        .collect()
}

/// A manifest with `time_alone` (err_pending_limit) has each compiler's cubin timed by a call
/// of its own (`cdpc-run`: a process of its own), in the labels' order, each cell getting its
/// own call's times and problems; any other sample's cubins are timed in one call together.
/// The checked runs and the byte-for-byte comparison are the same for both.
#[test]
fn time_alone_times_each_cubin_by_itself() {
    use runtime_shim::loader::{Interleaved, LoadError};
    use std::cell::RefCell;
    let pending = manifest("err_pending_limit");
    assert!(pending.time_alone.as_deref().is_some_and(|why| why.contains("pending-launch pool")), "{:?}", pending.time_alone);
    let h = manifest("hello");
    assert_eq!(h.time_alone, None);
    let folder = tempfile::tempdir().unwrap();
    let both: &[&str] = &["hello", "err_pending_limit"];
    let labels = stand_in_labels(folder.path(), &[("nvcc", both), ("cdpc-v2", both), ("cdpc-v1", both)]);
    let calls: RefCell<Vec<(String, Vec<String>)>> = RefCell::new(Vec::new());
    let label_of = |p: &Path| p.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    // each label's runs take its position in the labels' list plus 1 ms; cdpc-v1's call by
    // itself fails, so that a failed call is seen to touch only its own cell
    let time = |m: &Manifest, cubins: &[&Path]| -> Result<Interleaved, LoadError> {
        let names: Vec<String> = cubins.iter().map(|p| label_of(p)).collect();
        calls.borrow_mut().push((m.name.clone(), names.clone()));
        if m.time_alone.is_some() && names == ["cdpc-v1"] {
            return Err(LoadError::Isolated("stopped after 180 s".into()));
        }
        let times = names.iter().map(|n| vec![labels.iter().position(|l| &l.name == n).unwrap() as f64 + 1.0; 3]).collect();
        Ok(Interleaved { times_ms: times, problems: vec![Vec::new(); names.len()] })
    };
    let run = |_: &Path, m: &Manifest| Ok(Some(perfect_output(m)));
    let mut lines = Vec::new();
    let mut done = Vec::new();
    let results =
        diff::run_all(&[h.clone(), pending.clone()], &labels, run, time, |l| lines.push(l.to_string()), |so_far| done.push(so_far.iter().map(|r| r.manifest.name.clone()).collect::<Vec<_>>()));
    // the results so far after each sample, for a run stopped early, whose file says so
    assert_eq!(done, [vec!["hello"], vec!["hello", "err_pending_limit"]]);
    assert_eq!(diff::verdict(&results[..1], 0, true, 2).1, "unfinished, 1 of 2 samples so far; all samples passed");
    assert_eq!(diff::verdict(&results, 0, true, 2).1, "some samples FAILED");
    let calls = calls.into_inner();
    let alone: Vec<Vec<String>> = calls.iter().filter(|(n, _)| n == "err_pending_limit").map(|(_, c)| c.clone()).collect();
    assert_eq!(alone, [vec!["nvcc"], vec!["cdpc-v2"], vec!["cdpc-v1"]]);
    let together: Vec<Vec<String>> = calls.iter().filter(|(n, _)| n == "hello").map(|(_, c)| c.clone()).collect();
    assert_eq!(together, [vec!["nvcc", "cdpc-v2", "cdpc-v1"]]);
    let times = |s: &SampleResult, k: usize| match &s.cells[k] {
        Cell::Ran { output, .. } => output.times_ms.clone(),
        other => panic!("{other:?}"),
    };
    for s in &results {
        assert_eq!(times(s, 0), [1.0; 3], "{}", s.manifest.name);
        assert_eq!(times(s, 1), [2.0; 3], "{}", s.manifest.name);
    }
    assert_eq!(times(&results[0], 2), [3.0; 3]);
    assert!(results[0].cells.iter().all(Cell::is_ok));
    // the failed call: cdpc-v1's cell of err_pending_limit fails with its reason, no other
    assert!(matches!(&results[1].cells[2], Cell::Ran { reasons, .. } if reasons == &["timing: stopped after 180 s"]));
    assert!(results[1].cells[..2].iter().all(Cell::is_ok));
    // and its progress line says why, as the results file would
    assert!(lines.contains(&"FAIL  err_pending_limit from cdpc-v1: timing: stopped after 180 s".to_string()), "{lines:#?}");
    let notes = diff::timing_notes(&results);
    assert!(notes.starts_with("- **err_pending_limit**: each compiler's cubin timed in a process of its own"), "{notes}");
    assert_eq!(notes.lines().count(), 1, "{notes}");
    assert_eq!(diff::timing_notes(&results[..1]), "");
}

/// `diff --no-check` (the run callback answers `Ok(None)`): every present cubin is timed, none is
/// compared; its cells read "not checked", the identical column "–", and a missing cubin still
/// fails; a wrong output would have failed the checked run, so the skip is the only difference.
#[test]
fn unchecked_cells_are_timed_and_compared_with_nothing() {
    use runtime_shim::loader::Interleaved;
    let h = manifest("hello");
    let folder = tempfile::tempdir().unwrap();
    let labels = stand_in_labels(folder.path(), &[("cdpc-v2", &["hello"]), ("cdpc-v2-agg-warp", &["hello"]), ("cdpc-v2-agg-grid", &[])]);
    let timed = std::cell::RefCell::new(Vec::new());
    let time = |_: &Manifest, cubins: &[&Path]| -> Result<Interleaved, LoadError> {
        timed.borrow_mut().push(cubins.len());
        Ok(Interleaved { times_ms: vec![vec![1.0, 2.0, 3.0]; cubins.len()], problems: vec![Vec::new(); cubins.len()] })
    };
    let results = diff::run_all(std::slice::from_ref(&h), &labels, |_, _| Ok(None), time, |_| {}, |_| {});
    assert_eq!(timed.into_inner(), [2], "the two present cubins, timed together");
    let cells = &results[0].cells;
    assert!(matches!(&cells[0], Cell::Ran { checked: false, output, .. } if output.times_ms == [1.0, 2.0, 3.0]), "{cells:?}");
    assert!(cells[0].is_ok() && cells[1].is_ok() && !cells[2].is_ok(), "{cells:?}");
    let table = diff::table(&results, &labels, 0, 1);
    let row = table.lines().find(|l| l.contains("cdpc-v2-agg-warp")).unwrap();
    assert!(row.contains("| not checked | not checked | – |"), "{row}");
    assert!(!diff::all_passed(&results, 0), "the missing cubin fails");
    assert!(diff::all_passed(&results[..0], 0));
}

/// `cdpc-run diff` over err_pending_limit end to end, through its child processes: without a
/// GPU it stops at once with the driver's reason (printed, and the test says it skipped the
/// run); with one, stand-in cubins fail their checked runs and are not timed.
#[test]
fn diff_of_a_time_alone_sample_without_a_gpu() {
    let runner = env!("CARGO_BIN_EXE_cdpc-run");
    let folder = tempfile::tempdir().unwrap();
    let manifests = folder.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::copy(samples_dir().join("err_pending_limit.toml"), manifests.join("err_pending_limit.toml")).unwrap();
    let mut labels = Vec::new();
    for name in ["nvcc", "cdpc-v2"] {
        let dir = folder.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("err_pending_limit.cubin"), b"stand-in").unwrap();
        labels.push(format!("{name}={}", dir.display()));
    }
    let out = std::process::Command::new(runner).args(["diff", "--manifests"]).arg(&manifests).arg("--cubins").args(&labels).args(["--repeat", "2", "--warmup", "0"]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if text.contains("no CUDA driver found") {
        assert_eq!(out.status.code(), Some(2), "{text}");
        println!("skipped: no GPU here, so nothing is timed; cdpc-run said: {}", text.trim());
    } else {
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains("FAIL  err_pending_limit from cdpc-v2"), "{text}");
    }
}

/// `soak` asks for its run count, and a cubin it cannot run is an error of the process (status
/// 2, which soak.sh counts as one failed run), never a run reported ok. Without a GPU the driver
/// is missing and the test says so; with one, the stand-in cubin cannot be loaded.
#[test]
fn soak_needs_a_run_count_and_reports_a_cubin_it_cannot_run() {
    let runner = env!("CARGO_BIN_EXE_cdpc-run");
    let folder = tempfile::tempdir().unwrap();
    let cubin = folder.path().join("hello.cubin");
    std::fs::write(&cubin, b"stand-in").unwrap();
    let manifest = samples_dir().join("hello.toml");
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(runner).arg("soak").arg(&cubin).arg(&manifest).args(extra).output().unwrap();
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    };
    let (code, text) = run(&[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("`soak` needs --runs N"), "{text}");
    let (code, text) = run(&["--runs", "3", "--limit", "5"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("ok ")), "{text}");
    if text.contains("no CUDA driver found") {
        println!("skipped the run itself: no GPU here; cdpc-run said: {}", text.trim());
    }
}

/// The soak's checks: a run equal to the process's first takes its verdict, a run that differs
/// is checked in full and named as different, a failing first run fails its equal followers,
/// and a sample that is not deterministic is checked each run and never compared.
#[test]
fn soak_checks_compare_runs_with_the_first_and_the_manifest() {
    let m = manifest("small_children");
    assert!(m.deterministic);
    let perfect = perfect_output(&m);
    let mut checks = SoakChecks::new(&m);
    assert_eq!(checks.check(&perfect), Vec::<String>::new());
    assert_eq!(checks.check(&perfect), Vec::<String>::new());
    // a wrong element where the manifest expects a value: the manifest's reason
    let mut wrong = perfect.clone();
    let (name, bytes) = &mut wrong.buffers[m.buffers.iter().position(|b| b.expect.is_some()).unwrap()];
    bytes[0] ^= 1;
    let name = name.clone();
    let reasons = checks.check(&wrong);
    assert!(reasons.iter().any(|r| r.starts_with(&format!("{name}[0] = "))), "{reasons:?}");
    // a difference the manifest does not see (printed output it does not fix): named as such
    let mut other = perfect.clone();
    if m.stdout.is_none() {
        other.stdout = b"something else".to_vec();
        let reasons = checks.check(&other);
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].starts_with("not this process's first run's output: "), "{reasons:?}");
    }
    // a first run that fails: an identical second run fails with the same reasons
    let mut checks = SoakChecks::new(&m);
    let first = checks.check(&wrong);
    assert!(!first.is_empty());
    assert_eq!(checks.check(&wrong), first);
    // and a right run after it differs from it: a deterministic sample that is not
    let reasons = checks.check(&perfect);
    assert!(reasons.len() == 1 && reasons[0].starts_with("not this process's first run's output: buffer `out`"), "{reasons:?}");
    // not deterministic: each run against the manifest alone
    let mut loose = m.clone();
    loose.deterministic = false;
    let mut checks = SoakChecks::new(&loose);
    assert_eq!(checks.check(&perfect), Vec::<String>::new());
    other.stdout = b"something else".to_vec();
    assert_eq!(checks.check(&other), check_against_manifest(&loose, &other));
}

/// soak.sh's row for a cell whose runner process ends before its runs: a watchdog's end
/// (status 3) counts the run in progress as hung, and a process that dies without a word (a
/// signal, status 139) counts it as failed; the runs left go on in a new process. Before, both
/// were counted as nothing: the row said every run was ok, with more processes than one (the
/// watchdog's `HUNG` line went into the run's capture of standard output). A process that
/// makes no run at all (a cubin it cannot load: status 2) still ends the cell with one failed
/// run rather than being started again. A stand-in runner answers `runs` runs a process, then
/// ends as the case says.
#[test]
fn the_soak_counts_a_runner_that_ends_early_as_a_run_hung_or_failed() {
    let script = samples_dir().join("harness/soak.sh");
    let cases = [
        (3, "exit 3", "| x | lab | 7 | 6 | 0 | 1 | 2 |"),
        (3, "kill -SEGV $$", "| x | lab | 7 | 6 | 1 | 0 | 2 |"),
        (3, "exit 0", "| x | lab | 7 | 6 | 1 | 0 | 2 |"),
        (0, "echo 'cdpc-run: error: cannot load' >&2; exit 2", "| x | lab | 1 | 0 | 1 | 0 | 1 |"),
    ];
    for (runs, ending, want) in cases {
        let folder = tempfile::tempdir().unwrap();
        let bin = folder.path().join("build/gpu/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(folder.path().join("samples")).unwrap();
        std::fs::write(folder.path().join("samples/x.toml"), "").unwrap();
        let runner = bin.join("cdpc-run");
        // `cdpc-run soak CUBIN MANIFEST --runs LEFT --limit S`: `runs` runs, then the ending
        let text = format!("#!/bin/sh\nn=0\nwhile [ $n -lt {runs} ] && [ $n -lt $5 ]; do echo \"ok $n 5\"; n=$((n + 1)); done\n[ $n -lt $5 ] && {ending}\nexit 0\n");
        std::fs::write(&runner, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new("sh")
            .arg(&script)
            .args(["--cell", "x", "lab", "/dev/null"])
            .current_dir(folder.path())
            .env("RUNS", "7")
            .env("LIMIT", "2")
            .env("DEADLINE", "600")
            .env("START", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string())
            .output()
            .unwrap();
        let row = String::from_utf8_lossy(&out.stdout);
        assert!(row.starts_with(want), "{ending}: {row}\n{}", String::from_utf8_lossy(&out.stderr));
    }
}
