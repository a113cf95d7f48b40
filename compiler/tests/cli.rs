//! The `cdpc` binary: options, outputs and exit codes. Cases that need ptxas and nvlink skip
//! with a printed reason when `cargo xtask setup` has not installed them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HELLO: &str = r#"
extern "C" __global__ void child(int *data) { data[threadIdx.x] += 1; }
extern "C" __global__ void parent(int *data) {
    if (threadIdx.x == 0) child<<<1, 32>>>(data);
}
"#;

fn cdpc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir).args(args).output().expect("cdpc runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.cdp");
    std::fs::write(&file, HELLO).unwrap();
    (dir, file)
}

fn tools_available() -> bool {
    let found = cdpc::toolchain::Toolchain::discover(&Default::default()).is_ok();
    if !found {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
    }
    found
}

#[test]
fn ptx_to_stdout_with_nvcc_style_arch() {
    let (dir, _) = workspace();
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-arch=sm_80", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptx = String::from_utf8(out.stdout).unwrap();
    assert!(ptx.contains(".target sm_80"), "{ptx}");
    assert!(ptx.contains("__cudaCDP2LaunchDeviceV2"));
    assert!(!dir.path().join("app.ptx").exists());
}

#[test]
fn default_output_name_follows_emit() {
    let (dir, _) = workspace();
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "llvm-ir", "--launch-abi", "v1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ir = std::fs::read_to_string(dir.path().join("app.ll")).unwrap();
    assert!(ir.contains("@cudaLaunchDevice"), "{ir}");
}

#[test]
fn errors_leave_no_output_file_and_fail() {
    let (dir, file) = workspace();
    std::fs::write(&file, "__global__ void k() { undefined_name = 1; }").unwrap();
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "out.ptx"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("error[E0100]") && err.contains("app.cdp:1:"), "{err}");
    assert!(!dir.path().join("out.ptx").exists());
}

#[test]
fn thirty_two_bit_cubins_are_refused() {
    let (dir, _) = workspace();
    let out = cdpc(dir.path(), &["app.cdp", "--address-size", "32"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("32-bit output is PTX only"), "{}", stderr(&out));
    let ptx = cdpc(dir.path(), &["app.cdp", "--address-size", "32", "--launch-abi", "v1", "--emit", "ptx", "-o", "-"]);
    assert!(ptx.status.success(), "{}", stderr(&ptx));
    assert!(String::from_utf8_lossy(&ptx.stdout).contains(".address_size 32"));
}

#[test]
fn missing_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = cdpc(dir.path(), &["nope.cdp"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nope.cdp"), "{}", stderr(&out));
}

#[test]
fn warnings_can_be_denied_and_allowed() {
    let (dir, file) = workspace();
    std::fs::write(&file, "__device__ int f(int x) { if (x) return 1; }\n__global__ void k(int *p) { p[0] = f(p[1]); }").unwrap();
    let warn = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "-"]);
    assert!(warn.status.success() && stderr(&warn).contains("warning[W0209]"), "{}", stderr(&warn));
    let deny = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "-", "-Werror"]);
    assert!(!deny.status.success() && stderr(&deny).contains("error[W0209]"), "{}", stderr(&deny));
    let allow = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "-", "--allow", "W0209"]);
    assert!(allow.status.success() && stderr(&allow).is_empty(), "{}", stderr(&allow));
}

#[test]
fn cubin_and_object_with_verbose_tool_lines() {
    if !tools_available() {
        return;
    }
    let (dir, _) = workspace();
    let out = cdpc(dir.path(), &["app.cdp", "-v", "-Xptxas", "-v"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("ptxas") && err.contains("-c") && err.contains("nvlink") && err.contains("-lcudadevrt"), "{err}");
    let cubin = std::fs::read(dir.path().join("app.cubin")).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
    let obj = cdpc(dir.path(), &["app.cdp", "--emit", "obj"]);
    assert!(obj.status.success(), "{}", stderr(&obj));
    assert_eq!(&std::fs::read(dir.path().join("app.o")).unwrap()[..4], b"\x7fELF");
    // No work files are left next to the output.
    let mut names: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["app.cdp", "app.cubin", "app.o"]);
}

#[test]
fn time_prints_each_phase_in_order() {
    let (dir, _) = workspace();
    let started = std::time::Instant::now();
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "-", "--time"]);
    let wall = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", stderr(&out));
    let times: Vec<(String, f64)> = stderr(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("time: "))
        .map(|l| {
            let (phase, seconds) = l.split_once(' ').expect("`time: PHASE SECONDS`");
            let seconds = seconds.parse::<f64>().unwrap_or(-1.0);
            assert!(seconds >= 0.0, "{l}");
            (phase.to_string(), seconds)
        })
        .collect();
    let phases: Vec<&str> = times.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(phases, ["read", "preprocess", "parse", "sema", "llvm-ir", "llvm-opt-ptx", "total"]);
    // The total is the run's wall-clock time: at least each phase, at most the process's life.
    let (total, longest) = (times[times.len() - 1].1, times[..times.len() - 1].iter().map(|t| t.1).fold(0.0, f64::max));
    assert!(longest <= total && total <= wall, "phases up to {longest} s, total {total} s, the process {wall} s");
}

/// `-D`, `-U` and `-I` (both spellings) reach the preprocessor, `-D`/`-U` in the order written,
/// and `"..."` headers are found beside the input from another working directory.
#[test]
fn preprocessor_options_apply_in_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/inc")).unwrap();
    std::fs::create_dir_all(dir.path().join("extra")).unwrap();
    std::fs::write(dir.path().join("src/local.h"), "#define LOCAL 1\n").unwrap();
    std::fs::write(dir.path().join("src/inc/width.h"), "#define WIDTH 32\n").unwrap();
    std::fs::write(dir.path().join("extra/depth.h"), "#define DEPTH 2\n").unwrap();
    let program = "#include \"local.h\"\n#include <width.h>\n#include <depth.h>\n\
                   #if N != 8 || !LOCAL || defined(GONE)\n#error wrong macros\n#endif\n\
                   extern \"C\" __global__ void k(int *p) { p[threadIdx.x % WIDTH] = N * DEPTH; }\n";
    std::fs::write(dir.path().join("src/app.cdp"), program).unwrap();
    let args = ["src/app.cdp", "--emit", "ptx", "-o", "-", "-D", "N=4", "-U", "N", "-DN=8", "-DGONE", "-UGONE", "-Isrc/inc", "-I", "extra"];
    let out = cdpc(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    // With the -U last, N is undefined (0 in #if) and the #error fires.
    let out = cdpc(dir.path(), &["src/app.cdp", "--emit", "ptx", "-o", "-", "-DN=8", "-UN", "-Isrc/inc", "-Iextra"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("error[E0603]: #error: wrong macros"), "{}", stderr(&out));
    assert!(stderr(&out).contains("src/app.cdp:5:1"), "{}", stderr(&out));
}

#[test]
fn a_source_that_is_not_utf8_is_a_diagnostic_in_both_formats() {
    let (dir, file) = workspace();
    // Latin-1 `é` (0xE9) in a comment on line 2.
    std::fs::write(&file, b"// ok\n// caf\xe9\n__global__ void k() {}\n").unwrap();
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(text.contains("error[E0008]: the source is not valid UTF-8 (first bad byte at offset 12)"), "{text}");
    assert!(text.contains("app.cdp:2:7") && text.contains("byte 0xE9 is not UTF-8"), "{text}");
    assert!(!dir.path().join("app.ptx").exists());

    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let json = stderr(&out);
    assert_eq!(json.lines().count(), 1, "{json}");
    assert!(json.starts_with(r#"{"code":"E0008","severity":"error""#), "{json}");
    assert!(json.contains(r#""byte_start":12,"byte_end":13,"line_start":2,"column_start":7"#), "{json}");
}

#[test]
fn the_input_is_never_the_output() {
    let (dir, file) = workspace();
    let refused = |args: &[&str]| {
        let out = cdpc(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("error[E0700]: the output `"), "{args:?}: {}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), HELLO, "{args:?}: the source is intact");
    };
    refused(&["app.cdp", "-o", "app.cdp"]);
    refused(&["app.cdp", "-o", "./app.cdp", "--emit", "ptx", "--overwrite"]);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("app.cdp", dir.path().join("link.cubin")).unwrap();
        refused(&["app.cdp", "-o", "link.cubin", "--emit", "ptx"]);
        std::fs::hard_link(&file, dir.path().join("hard.ptx")).unwrap();
        refused(&["app.cdp", "-o", "hard.ptx", "--emit", "ptx"]);
    }
    // The default output name can be the input too: `app.ptx --emit ptx`.
    std::fs::copy(&file, dir.path().join("k.ptx")).unwrap();
    let out = cdpc(dir.path(), &["k.ptx", "--emit", "ptx"]);
    assert!(stderr(&out).starts_with("error[E0700]"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("k.ptx")).unwrap(), HELLO);
    // In JSON, the code is on the line.
    let out = cdpc(dir.path(), &["app.cdp", "-o", "app.cdp", "--error-format", "json"]);
    let v: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(v["code"], "E0700", "{v}");
}

#[test]
fn existing_files_are_replaced_only_when_they_are_compiler_outputs_or_asked_for() {
    let (dir, _) = workspace();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes").unwrap();
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "notes.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error[E0701]: refusing to overwrite `notes.txt`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--overwrite"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");

    let out = cdpc(dir.path(), &["app.cdp", "--emit", "ptx", "-o", "notes.txt", "--overwrite"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&notes).unwrap().contains(".entry parent"));

    // A previous output is replaced without asking, whatever kind it was.
    let out = cdpc(dir.path(), &["app.cdp", "--emit", "llvm-ir", "-o", "notes.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&notes).unwrap().contains("define"));
    let mut names: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["app.cdp", "notes.txt"], "no temporary output is left");
}

/// Remarks are opt-in, as clang's `-R...`: a clean kernel-language file (CUDA C++ goes through
/// Clang, which reads every header) that includes headers cdpc does not ship compiles in silence; `-Rskipped-headers` (or `-Rall`) names each skipped header (R0611), and
/// an unknown name that such a header would have declared says so in its error, remarks or not.
#[test]
fn skipped_headers_are_remarks_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let clean = "#include <time.h>\n#include <setjmp.h>\n#include <unistd.h>\n__global__ void k(int *p) { p[threadIdx.x] = 1; }\n";
    std::fs::write(dir.path().join("clean.cdp"), clean).unwrap();
    let out = cdpc(dir.path(), &["clean.cdp", "--emit", "ptx", "-o", "clean.ptx"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "a clean file prints nothing");
    for flag in ["-Rskipped-headers", "-Rall"] {
        let out = cdpc(dir.path(), &["clean.cdp", "--emit", "ptx", "-o", "clean.ptx", flag]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stderr(&out);
        assert_eq!(text.matches("note[R0611]").count(), 3, "{flag}: {text}");
        assert!(text.contains("<setjmp.h>"), "{text}");
    }
    let out = cdpc(dir.path(), &["clean.cdp", "--emit", "ptx", "-o", "clean.ptx", "-Rnonsense"]);
    assert_eq!(out.status.code(), Some(2), "an unknown remark is a usage error: {}", stderr(&out));
    // Used: the error names the skipped header, without the remark.
    std::fs::write(dir.path().join("used.cdp"), "#include <time.h>\n__global__ void k(long *p) { p[0] = time(0); }\n").unwrap();
    let out = cdpc(dir.path(), &["used.cdp", "--emit", "ptx", "-o", "used.ptx"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(text.contains("error[E0100]") && text.contains("<time.h> was skipped as host-only"), "{text}");
    assert!(!text.contains("note[R0611]"), "{text}");
    assert!(!dir.path().join("used.ptx").exists());
}

/// The names in `dir`, sorted: what a failed command left behind.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// I/O failures are coded diagnostics naming the path, in text and in JSON, and leave nothing
/// behind: E0704 (the output cannot be written), E0705 (an input cannot be read), E0706 (a work
/// file under $TMPDIR failed). A full disk behind a file is `OutputFile::commit_with`'s unit
/// test (toolchain/tests.rs); here, behind stdout, `/dev/full`.
#[test]
fn io_failures_are_coded_and_leave_nothing_behind() {
    let (dir, _) = workspace();
    let expect = |args: &[&str], code: &str, path: &str| {
        let out = cdpc(dir.path(), args);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(text.starts_with(&format!("error[{code}]: ")), "{args:?}: {text}");
        assert!(text.contains(&format!("`{path}`")), "{args:?} names {path}: {text}");
        assert_eq!(text.matches("error").count(), 1, "{args:?}: one `error`: {text}");
        let json = cdpc(dir.path(), &[args, &["--error-format", "json"]].concat());
        let v: serde_json::Value = serde_json::from_str(stderr(&json).trim()).unwrap();
        assert_eq!(v["code"], code, "{v}");
        assert!(v["message"].as_str().unwrap().contains(path), "{v}");
    };
    std::fs::create_dir(dir.path().join("out.ptx")).unwrap();
    expect(&["app.cdp", "--emit", "ptx", "-o", "out.ptx"], "E0704", "out.ptx");
    expect(&["app.cdp", "--emit", "ptx", "-o", "app.cdp/x.ptx"], "E0704", "app.cdp/x.ptx");
    expect(&["app.cdp", "--emit", "ptx", "-o", "missing/x.ptx"], "E0704", "missing/x.ptx");
    expect(&["nope.cdp", "--emit", "ptx"], "E0705", "nope.cdp");
    expect(&["out.ptx", "--emit", "llvm-ir", "-o", "x.ll"], "E0705", "out.ptx");
    expect(&["app.cdp", "nope.cdp", "-o", "x.cubin"], "E0705", "nope.cdp");
    assert_eq!(names_in(dir.path()), ["app.cdp", "out.ptx"], "nothing left behind");

    // A full disk behind stdout.
    #[cfg(target_os = "linux")]
    {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).args(["app.cdp", "--emit", "ptx", "-o", "-"]).stdout(full).output().unwrap();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.starts_with("error[E0704]: cannot write the output `<stdout>`: No space left on device"), "{text}");
    }

    // Work files: $TMPDIR under a regular file.
    if tools_available() {
        let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).env("TMPDIR", dir.path().join("app.cdp/tmp")).args(["app.cdp", "-o", "app.cubin"]).output().unwrap();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.starts_with("error[E0706]: a work file failed: creating a temporary work folder in `"), "{text}");
        assert!(text.contains("app.cdp/tmp`") && text.contains("$TMPDIR"), "{text}");
        assert_eq!(names_in(dir.path()), ["app.cdp", "out.ptx"], "nothing left behind");
    }
}

/// On Linux the `cdpc` binary is a position-dependent executable (`compiler/build.rs`): its
/// start-up applies no relative relocations to LLVM's and Clang's tables. The ELF header's
/// `e_type` says so: 2 (`ET_EXEC`), where a PIE is 3 (`ET_DYN`).
#[cfg(target_os = "linux")]
#[test]
fn the_binary_is_linked_position_dependent() {
    let binary = std::fs::read(env!("CARGO_BIN_EXE_cdpc")).unwrap();
    assert_eq!(&binary[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([binary[16], binary[17]]), 2, "e_type: not ET_EXEC");
}

/// Launch optimizations by default (driver::LaunchOptimizations): an optimising build with no
/// option is the build `-flaunch-threshold=128 -faggregate-launches=auto` asks for; `-O1`, `-G`
/// and `-fno-launch-optimizations` are the plain build; either explicit option chooses
/// exactly (the other off), and the last of the two switches wins.
#[test]
fn launch_optimizations_are_on_by_default_in_optimising_builds() {
    const DENSE: &str = r#"
extern "C" __global__ void child(int *data, int i) { data[i * blockDim.x + threadIdx.x] += i; }
extern "C" __global__ void parent(int *data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) child<<<1, 256>>>(data, i);
}
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.cdp"), DENSE).unwrap();
    let ptx = |extra: &[&str]| {
        let out = cdpc(dir.path(), &[&["d.cdp", "--emit", "ptx", "-o", "-"], extra].concat());
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // PTX is long: a failed comparison says which options, not the text.
    let same = |a: &[&str], b: &[&str]| assert!(ptx(a) == ptx(b), "{a:?} and {b:?} differ");
    let default = ptx(&[]);
    same(&[], &["-flaunch-threshold=128", "-faggregate-launches=auto"]);
    same(&[], &["-fno-launch-optimizations", "-flaunch-optimizations"]);
    same(&["-O2"], &["-O2", "-flaunch-optimizations"]);
    same(&["-O1", "-flaunch-optimizations"], &["-O1", "-flaunch-threshold=128", "-faggregate-launches=auto"]);
    // Every thread below `n` launches a child that launches nothing: the grid's end.
    assert!(default.contains("parent__agg_grid_ids") && default.contains(".entry child__agg("), "the default build is not aggregated per grid");
    let plain = ptx(&["-fno-launch-optimizations"]);
    assert!(!plain.contains("__agg") && plain.contains("LaunchDeviceV2"), "the plain build is aggregated");
    same(&["-fno-launch-optimizations"], &["-flaunch-optimizations", "-fno-launch-optimizations"]);
    same(&["-fno-launch-optimizations"], &["-faggregate-launches=off"]);
    same(&["-O1"], &["-O1", "-fno-launch-optimizations"]);
    same(&["-G"], &["-G", "-fno-launch-optimizations"]);
    same(&["-faggregate-launches=warp"], &["-faggregate-launches=warp", "-flaunch-threshold=0"]);
    same(&["-flaunch-threshold=128"], &["-flaunch-threshold=128", "-faggregate-launches=off"]);
    // The remark says which launches `auto` gave to the grid.
    let out = cdpc(dir.path(), &["d.cdp", "--emit", "ptx", "-o", "-", "-Rpass=aggregate"]);
    assert!(stderr(&out).contains("R0503") && stderr(&out).contains("launch of `child` aggregated for the whole grid"), "{}", stderr(&out));
}

/// `-o /dev/null`, as configure scripts and build checks ask of nvcc and gcc: a compilation
/// whose output nobody keeps. Every kind of output succeeds, and the null device stays the
/// device it was, with its mode (a rename over it, or the program's executable bits, would
/// change it for the whole machine when cdpc runs as root).
#[test]
fn outputs_to_the_null_device_succeed_and_leave_it_as_it_was() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let null = Path::new("/dev/null");
    let Ok(before) = std::fs::metadata(null) else { return println!("skipped: no /dev/null") };
    if !before.file_type().is_char_device() {
        return println!("skipped: /dev/null is no character device here");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cdp"), "__global__ void child(int *p) { p[threadIdx.x] = 1; }\n__global__ void parent(int *p) { child<<<1, 32>>>(p); }\n").unwrap();
    let mut kinds: Vec<Vec<&str>> = vec![vec!["k.cdp", "--emit", "ptx"], vec!["k.cdp"], vec!["-dc", "k.cdp", "--emit", "obj"]];
    if crate::cuda_cxx::tools_ready() {
        std::fs::write(dir.path().join("k.cu"), "__global__ void child(int *p) { p[threadIdx.x] = 1; }\n__global__ void parent(int *p) { child<<<1, 32>>>(p); }\nint main() { return 0; }\n").unwrap();
        kinds.extend([vec!["-dc", "k.cu"], vec!["-c", "k.cu"], vec!["-rdc=true", "k.cu"], vec!["-E", "k.cu"]]);
    }
    for mut args in kinds {
        args.extend(["-o", "/dev/null"]);
        let out = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let after = std::fs::metadata(null).unwrap();
        assert!(after.file_type().is_char_device() && after.rdev() == before.rdev() && after.mode() == before.mode(), "{args:?}: /dev/null became {:o}", after.mode());
    }
}

/// `cdpc .c -Xcompiler --version` and `-Xcompiler "-dumpfullversion -dumpversion"`, as ggml's
/// CMake asks nvcc for its host compiler (the file need not exist): the host compiler's own
/// answer, nvcc's bytes for the version number.
#[test]
fn xcompiler_version_queries_answer_with_the_host_compilers_version() {
    let dir = tempfile::tempdir().unwrap();
    let run = |program: &std::path::Path, args: &[&str]| std::process::Command::new(program).current_dir(dir.path()).args(args).output().unwrap();
    let cdpc = std::path::Path::new(env!("CARGO_BIN_EXE_cdpc"));
    let version = run(cdpc, &[".c", "-Xcompiler", "-dumpfullversion -dumpversion"]);
    assert!(version.status.success(), "{}", String::from_utf8_lossy(&version.stderr));
    let number = String::from_utf8_lossy(&version.stdout).trim().to_string();
    assert!(!number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.'), "{number:?}");
    let long = run(cdpc, &[".c", "-Xcompiler", "--version"]);
    assert!(long.status.success() && String::from_utf8_lossy(&long.stdout).lines().next().is_some_and(|l| l.contains(&number)), "{}", String::from_utf8_lossy(&long.stdout));
    assert!(!dir.path().join(".o").exists() && !dir.path().join("a.out").exists());
    if let Some(nvcc) = crate::build_common::nvcc() {
        let path = format!("{}:{}", nvcc.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
        let theirs = std::process::Command::new(&nvcc).current_dir(dir.path()).env("PATH", path).args([".c", "-Xcompiler", "-dumpfullversion -dumpversion"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&theirs.stdout).trim(), number, "nvcc's host compiler is another");
    }
}
