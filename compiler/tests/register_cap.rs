//! The launch passes' register cap (`.maxnreg 64`, `pipeline::aggregate::REGISTER_CAP`) is kept
//! only where ptxas needs it (`toolchain::register_cap`): the PTX cdpc writes keeps every cap,
//! marked as the passes', and the cubin has a marked kernel capped only when ptxas gives it
//! more than 64 registers without the cap. ptxas and `cuobjdump -res-usage` are the oracle.

use crate::build_common::{cdpc, run, stderr, tool_dir};
use cdpc::toolchain::register_cap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples").join(name)
}

/// Each function's registers in `file` (an object or cubin), as `cuobjdump -res-usage` gives them.
fn res_usage(tools: &Path, file: &Path) -> HashMap<String, u32> {
    let out = run(&tools.join("cuobjdump"), Path::new("."), &["-res-usage", file.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut counts = HashMap::new();
    let mut function = None;
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix("Function ") {
            function = Some(name.trim_end_matches(':').to_string());
        } else if let (Some(f), Some(at)) = (function.take(), line.find("REG:")) {
            counts.insert(f, line[at + 4..].split_whitespace().next().unwrap().parse().unwrap());
        }
    }
    counts
}

/// ptxas's object of `ptx` (as cdpc runs it: `-arch=sm_90 -c`), its registers by cuobjdump,
/// checked against what `register_cap::register_counts` reads from the same object.
fn assembled(tools: &Path, dir: &Path, name: &str, ptx: &str) -> HashMap<String, u32> {
    let input = dir.join(format!("{name}.ptx"));
    let object = dir.join(format!("{name}.o"));
    std::fs::write(&input, ptx).unwrap();
    run(&tools.join("ptxas"), dir, &["-arch=sm_90", "-c", "-o", object.to_str().unwrap(), input.to_str().unwrap()]);
    let counts = res_usage(tools, &object);
    assert_eq!(register_cap::register_counts(&std::fs::read(&object).unwrap()).unwrap(), counts, "the object's counts as cuobjdump reads them");
    counts
}

/// cdpc's PTX and cubin of a sample with `flags`, the cubin's registers and the number of ptxas runs.
fn build(tools: &Path, dir: &Path, sample_name: &str, flags: &[&str]) -> (String, HashMap<String, u32>, usize) {
    build_file(tools, dir, &sample(sample_name), flags)
}

/// [`build`] of any source file.
fn build_file(tools: &Path, dir: &Path, source: &Path, flags: &[&str]) -> (String, HashMap<String, u32>, usize) {
    let ptx_path = dir.join("out.ptx");
    let cubin = dir.join("out.cubin");
    // The toolkit named explicitly: the one whose ptxas runs are counted and whose cuobjdump
    // reads the cubin, wherever the binary was built and whatever `PATH` holds (with
    // CARGO_TARGET_DIR outside the checkout and another toolkit on PATH, cdpc would find that one).
    let home = tools.parent().expect("a toolkit's bin folder").to_str().unwrap().to_string();
    let mut args = vec![source.to_str().unwrap(), "--cuda-home", home.as_str()];
    args.extend_from_slice(flags);
    let out = cdpc(dir, &[&args[..], &["--emit", "ptx", "-o", ptx_path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir, &[&args[..], &["-v", "-o", cubin.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let ptxas = tools.join("ptxas").display().to_string();
    let runs = stderr(&out).lines().filter(|l| l.trim_start().starts_with(&ptxas)).count();
    (std::fs::read_to_string(&ptx_path).unwrap(), res_usage(tools, &cubin), runs)
}

/// The entry of `kernel` in `ptx`, from `.entry` to its body's `{`.
fn header<'a>(ptx: &'a str, kernel: &str) -> &'a str {
    let at = ptx.find(&format!(".entry {kernel}(")).unwrap_or_else(|| panic!("{kernel}:\n{ptx}"));
    &ptx[at..at + ptx[at..].find("\n{").unwrap()]
}

/// A child whose body uses its `n` `double` arguments all at once: its aggregated copy reads
/// them from the record together, `2 n` registers at least.
fn wide_child(n: usize) -> String {
    let params: Vec<String> = (0..n).map(|i| format!("double a{i}")).collect();
    let products: Vec<String> = (0..n).map(|i| format!("a{i} * a{}", (i * 7 + 3) % n)).collect();
    let differences: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    format!(
        "extern \"C\" __global__ void child(double *out, {})\n{{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    double x = out[i];\n    out[i] = {} + x * ({});\n}}\n\n\
         extern \"C\" __global__ void parent(double *out, double s)\n{{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    child<<<1, 32>>>(out + 32 * i, {});\n}}\n",
        params.join(", "),
        products.join(" + "),
        differences.join(" - "),
        vec!["s"; n].join(", ")
    )
}

/// An aggregated child that reads 32 `double` arguments from its record at once: ptxas gives
/// `child__agg` more than 64 registers without the cap, so it keeps it (a second ptxas run);
/// its parent needs fewer and is assembled without it, with what ptxas gives it uncapped.
/// (Until f73ea71 this was param_layout's child, 56 bytes of mixed arguments, which needs
/// 59 registers since `C__agg` counts its block after its body.)
#[test]
fn the_cap_stays_only_on_a_kernel_that_needs_more_than_64_registers() {
    let Some(tools) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("wide.cdp");
    std::fs::write(&source, wide_child(32)).unwrap();
    let (ptx, cubin, runs) = build_file(&tools, dir.path(), &source, &["-faggregate-launches=warp"]);
    for kernel in ["parent", "child__agg"] {
        assert!(header(&ptx, kernel).contains(".maxnreg 64"), "the PTX keeps every cap:\n{ptx}");
        assert_eq!(register_cap::marks(&ptx).get(kernel), Some(&64), "{ptx}");
    }
    assert!(!header(&ptx, "child").contains(".maxnreg"), "the child itself is not the passes' to cap");
    let uncapped = assembled(&tools, dir.path(), "uncapped", &register_cap::uncapped(&ptx).unwrap());
    assert!(uncapped["child__agg"] > 64 && uncapped["parent"] <= 64, "the premise: {uncapped:?}");
    assert_eq!(runs, 2, "assembled without the caps, then with child__agg's");
    assert_eq!((cubin["child__agg"], cubin["parent"]), (64, uncapped["parent"]), "{cubin:?}");
}

/// padded_struct_args' parent under warp aggregation needs fewer than 64 registers: one ptxas run, no
/// cap, and fewer registers than ptxas gives it under `.maxnreg 64`. The plain build has no mark.
#[test]
fn a_kernel_that_fits_is_assembled_once_without_the_cap() {
    let Some(tools) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (ptx, cubin, runs) = build(&tools, dir.path(), "padded_struct_args.cdp", &["-faggregate-launches=warp"]);
    assert!(header(&ptx, "parent").contains(".maxnreg 64"), "{ptx}");
    let capped = assembled(&tools, dir.path(), "capped", &ptx);
    let uncapped = assembled(&tools, dir.path(), "uncapped", &register_cap::uncapped(&ptx).unwrap());
    assert!(uncapped["parent"] < capped["parent"], "the cap's own cost: {uncapped:?} {capped:?}");
    assert_eq!(runs, 1);
    assert_eq!(cubin["parent"], uncapped["parent"]);
    let (plain, _, runs) = build(&tools, dir.path(), "padded_struct_args.cdp", &["-fno-launch-optimizations"]);
    assert!(!plain.contains(register_cap::MARK) && !plain.contains(".maxnreg") && runs == 1, "{plain}");
}

/// A kernel that reads no thread or block index (devrt_pdl's `parent<<<1, 1>>>`) keeps its
/// launches as written at a forced granularity too: no helper, no cap, the plain build's PTX.
#[test]
fn a_driver_of_one_thread_is_left_as_the_plain_build_at_every_granularity() {
    let Some(tools) = tool_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (plain, _, _) = build(&tools, dir.path(), "devrt_pdl.cdp", &["-fno-launch-optimizations"]);
    for granularity in ["warp", "block", "grid"] {
        let (ptx, _, runs) = build(&tools, dir.path(), "devrt_pdl.cdp", &[&format!("-faggregate-launches={granularity}")]);
        assert!(!ptx.contains("__agg") && !ptx.contains(".maxnreg") && runs == 1, "{granularity}: {ptx}");
        assert_eq!(ptx, plain, "{granularity}");
    }
}
