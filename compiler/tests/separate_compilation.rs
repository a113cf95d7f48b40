//! Separate compilation and the link step of the `cdpc` binary: several inputs in one command,
//! `-dc` objects, `-l`/`-L` and archives, `extern __device__` across files, E0800-E0802, and
//! interoperation with nvcc both ways (nvcc's `-dc` objects linked by cdpc; cdpc's objects
//! linked by `nvcc -dlink`). The linked cubins are compared with what nvlink makes of nvcc's
//! own objects of the same files. Cases that need the NVIDIA tools (or nvcc, or readelf) skip
//! with a printed reason.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::build_common::{cdpc, nvcc, run, stderr, tool_dir};

/// Uses a function and a variable that the other file defines.
const USER: &str = r#"
extern __device__ int helper(int x);
extern __device__ int counter;
extern "C" __global__ void child(int *p) { p[threadIdx.x] = helper(p[threadIdx.x]) + counter; }
extern "C" __global__ void parent(int *p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }
"#;

/// Defines them.
const LIBRARY: &str = "__device__ int counter = 5;\n__device__ int helper(int x) { return x * 2; }\n";

/// The symbols the two files share or define, as they appear in a cubin.
const SYMBOLS: [&str; 4] = ["parent", "child", "_Z6helperi", "counter"];

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("user.cu"), USER).unwrap();
    std::fs::write(dir.path().join("lib.cu"), LIBRARY).unwrap();
    dir
}

/// The global symbols a cubin defines (not `UND`), among [`SYMBOLS`], by `readelf -sW`.
fn defined(cubin: &Path) -> Option<BTreeSet<String>> {
    let out = Command::new("readelf").arg("-sW").arg(cubin).output().ok();
    let Some(out) = out.filter(|o| o.status.success()) else {
        println!("skipped: readelf is not available");
        return None;
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let names = text.lines().filter(|l| l.contains(" GLOBAL ") && !l.contains(" UND ")).filter_map(|l| l.split_whitespace().last()).filter(|n| SYMBOLS.contains(n)).map(str::to_string).collect();
    Some(names)
}

fn all_symbols() -> BTreeSet<String> {
    SYMBOLS.iter().map(|s| s.to_string()).collect()
}

/// What nvlink makes of nvcc's own `-dc` objects of the two files: the oracle.
fn nvcc_link(dir: &Path, nvcc: &Path) -> BTreeSet<String> {
    std::fs::copy(dir.join("user.cu"), dir.join("nv_user.cu")).unwrap();
    std::fs::copy(dir.join("lib.cu"), dir.join("nv_lib.cu")).unwrap();
    run(nvcc, dir, &["-dc", "-arch=sm_90", "nv_user.cu", "nv_lib.cu"]);
    let nvlink = nvcc.with_file_name("nvlink");
    let devrt = cdpc::toolchain::Toolchain::discover(&Default::default()).unwrap().cudadevrt_dir;
    run(&nvlink, dir, &["-arch=sm_90", "nv_user.o", "nv_lib.o", &format!("-L{}", devrt.display()), "-lcudadevrt", "-o", "nv.cubin"]);
    defined(&dir.join("nv.cubin")).unwrap()
}

#[test]
fn two_sources_sharing_a_device_function_and_variable_link_in_one_command() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    let out = cdpc(dir.path(), &["user.cu", "lib.cu", "-o", "app.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(ours) = defined(&dir.path().join("app.cubin")) else { return };
    assert_eq!(ours, all_symbols());
    if let Some(nvcc) = nvcc() {
        assert_eq!(ours, nvcc_link(dir.path(), &nvcc), "nvcc's objects of the same files define other symbols");
    }
}

#[test]
fn dc_writes_one_object_per_source_in_the_current_folder_and_they_link() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    let out = cdpc(dir.path(), &["-dc", "user.cu", "lib.cu", "-arch=sm_90"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Host objects, as nvcc -dc writes: x86-64, the device code in a relocatable fat binary.
    for object in ["user.o", "lib.o"] {
        let bytes = std::fs::read(dir.path().join(object)).unwrap();
        assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 62, "{object} is no x86-64 object");
        assert!(bytes.windows(14).any(|w| w == b"__nv_relfatbin"), "{object} carries no fat binary");
    }
    // `-c` is the same, and `-o` names the object of one source.
    let out = cdpc(dir.path(), &["-rdc=true", "-c", "lib.cu", "-o", "other.o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(dir.path().join("other.o")).unwrap(), std::fs::read(dir.path().join("lib.o")).unwrap());
    // cdpc's device link takes them, as it takes nvcc's.
    let out = cdpc(dir.path(), &["-dlink", "user.o", "lib.o", "-o", "app.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(ours) = defined(&dir.path().join("app.cubin")) else { return };
    assert_eq!(ours, all_symbols());
    // `--emit obj`: the device object alone, which links the same.
    let out = cdpc(dir.path(), &["-dc", "--emit", "obj", "user.cu", "lib.cu", "-arch=sm_90"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for object in ["user.o", "lib.o"] {
        let bytes = std::fs::read(dir.path().join(object)).unwrap();
        assert!(cdpc::driver::archive::is_device_object(&bytes), "{object} is no device object");
    }
    let out = cdpc(dir.path(), &["-dlink", "user.o", "lib.o", "-o", "app2.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(defined(&dir.path().join("app2.cubin")), Some(all_symbols()));
}

#[test]
fn dc_refuses_o_with_several_sources_and_objects() {
    let dir = project();
    let out = cdpc(dir.path(), &["-dc", "user.cu", "lib.cu", "-o", "x.o"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`-o` with `-dc` names one object"), "{}", stderr(&out));
    std::fs::write(dir.path().join("x.o"), b"").unwrap();
    let out = cdpc(dir.path(), &["-dc", "x.o"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is an object"), "{}", stderr(&out));
    // A device object alone is for one architecture (an object with several is
    // nvcc_command_line.rs's `dc_with_several_gencode_targets_is_one_object_as_nvccs`).
    let out = cdpc(dir.path(), &["-dc", "--emit", "obj", "lib.cu", "-gencode", "arch=compute_90,code=sm_90"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("a device object is for one architecture"), "{}", stderr(&out));
    assert!(!dir.path().join("lib.o").exists());
}

#[test]
fn a_duplicate_definition_names_both_files_and_lines() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    std::fs::write(dir.path().join("again.cu"), "// another definition\n__device__ int counter = 7;\n").unwrap();
    let out = cdpc(dir.path(), &["user.cu", "lib.cu", "again.cu", "-o", "app.cubin"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("error[E0800]: device symbol `counter` is defined in both `lib.cu` and `again.cu`"), "{err}");
    assert!(err.contains("again.cu:2:16") && err.contains("lib.cu:1:16"), "{err}");
    assert!(!dir.path().join("app.cubin").exists());
}

#[test]
fn a_missing_definition_names_the_file_that_uses_it() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    std::fs::write(dir.path().join("half.cu"), "__device__ int counter = 1;\n").unwrap();
    let out = cdpc(dir.path(), &["user.cu", "half.cu", "-o", "app.cubin", "--error-format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(r#""code":"E0801""#) && err.contains("device symbol `helper` (symbol `_Z6helperi`), used in `user.cu`"), "{err}");
    assert!(err.contains(r#""file":"user.cu""#), "{err}");
}

#[test]
fn duplicates_among_objects_come_from_nvlink_with_the_objects_names() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    std::fs::write(dir.path().join("again.cu"), "extern \"C\" __global__ void child(int *p) { p[0] = 0; }\n").unwrap();
    assert!(cdpc(dir.path(), &["-dc", "user.cu", "again.cu"]).status.success());
    let out = cdpc(dir.path(), &["user.o", "again.o", "lib.cu", "-o", "app.cubin"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("error[E0800]: device symbol `child` is defined in both `user.o` and `again.o`"), "{err}");
}

#[test]
fn libraries_from_l_and_archives_of_device_objects() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    assert!(cdpc(dir.path(), &["-dc", "--emit", "obj", "lib.cu"]).status.success());
    std::fs::create_dir(dir.path().join("libs")).unwrap();
    let ar = Command::new("ar").current_dir(dir.path()).args(["rcs", "libs/libshared.a", "lib.o"]).output();
    if !ar.is_ok_and(|o| o.status.success()) {
        println!("skipped: `ar` is not available");
        return;
    }
    let out = cdpc(dir.path(), &["user.cu", "-Llibs", "-lshared", "-o", "app.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(ours) = defined(&dir.path().join("app.cubin")) else { return };
    assert_eq!(ours, all_symbols());
    let out = cdpc(dir.path(), &["user.cu", "libs/libshared.a", "-o", "app2.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Without the folder the library is not found: E0802, nothing written.
    let out = cdpc(dir.path(), &["user.cu", "-lshared", "-o", "app3.cubin"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("error[E0802]: cannot find the device library `-lshared`: no `libshared.a`"), "{err}");
    assert!(!dir.path().join("app3.cubin").exists());
    // With the library, the missing function is no longer cdpc's to judge: nvlink reports it.
    std::fs::write(dir.path().join("empty.cu"), "__device__ int unrelated;\n").unwrap();
    assert!(cdpc(dir.path(), &["-dc", "--emit", "obj", "empty.cu"]).status.success());
    let out = cdpc(dir.path(), &["user.cu", "empty.o", "-o", "app4.cubin"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error[E0801]: device symbol `_Z6helperi`, used in `user.cu`"), "{}", stderr(&out));
}

#[test]
fn a_single_source_with_extern_declarations_is_still_a_whole_program() {
    let dir = project();
    let out = cdpc(dir.path(), &["user.cu", "--emit", "ptx", "-o", "-"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error[E0104]"), "{}", stderr(&out));
    // With -dc, the declarations are `.extern` in the PTX.
    let out = cdpc(dir.path(), &["-dc", "user.cu", "--emit", "ptx", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ptx = String::from_utf8(out.stdout).unwrap();
    assert!(ptx.contains(".extern .global .align 4 .u32 counter;"), "{ptx}");
    assert!(ptx.contains(".extern .func  (.param .b32 func_retval0) _Z6helperi"), "{ptx}");
}

#[test]
fn cdpc_links_nvcc_dc_objects_and_archives() {
    let Some(nvcc) = nvcc() else { return };
    let dir = project();
    run(&nvcc, dir.path(), &["-dc", "-arch=sm_90", "lib.cu", "-o", "nvlib.o"]);
    run(&nvcc, dir.path(), &["-lib", "nvlib.o", "-o", "libnv.a"]);
    let out = cdpc(dir.path(), &["user.cu", "nvlib.o", "-o", "app.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(dir.path(), &["user.cu", "-L.", "-lnv", "-o", "app2.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for cubin in ["app.cubin", "app2.cubin"] {
        let Some(ours) = defined(&dir.path().join(cubin)) else { return };
        assert_eq!(ours, nvcc_link(dir.path(), &nvcc), "{cubin}");
    }
}

#[test]
fn nvcc_dlink_links_cdpc_objects() {
    let Some(nvcc) = nvcc() else { return };
    let dir = project();
    assert!(cdpc(dir.path(), &["-dc", "user.cu", "lib.cu"]).status.success());
    // A host object holding the linked device code, as nvcc -dlink writes for the host link.
    run(&nvcc, dir.path(), &["-dlink", "-arch=sm_90", "user.o", "lib.o", "-o", "dlink.o"]);
    let bytes = std::fs::read(dir.path().join("dlink.o")).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 62, "dlink.o is an x86-64 object");
    // And its cubin form, compared with cdpc's own link.
    run(&nvcc, dir.path(), &["-dlink", "-cubin", "-arch=sm_90", "user.o", "lib.o", "-o", "dlink.cubin"]);
    let Some(theirs) = defined(&dir.path().join("dlink.cubin")) else { return };
    assert_eq!(theirs, all_symbols());
}

/// `cuobjdump --list-elf --list-ptx` of a file, or `None` (with the reason printed).
fn list_images(file: &Path) -> Option<String> {
    let tools = cdpc::toolchain::Toolchain::discover(&Default::default()).ok()?;
    let Some(cuobjdump) = tools.cuobjdump else {
        println!("skipped: cuobjdump not found");
        return None;
    };
    let out = Command::new(cuobjdump).args(["--list-elf", "--list-ptx"]).arg(file).output().unwrap();
    assert!(out.status.success(), "cuobjdump: {}", stderr(&out));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn gencode_packs_a_linked_cubin_per_architecture_and_ptx_into_a_fat_binary() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    let gencode = ["-gencode", "arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90", "-gencode", "arch=compute_100,code=sm_100", "-gencode", "arch=compute_120,code=sm_120"];
    let mut args = vec!["user.cu", "lib.cu", "-o", "app.fatbin"];
    args.extend(gencode);
    let out = cdpc(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(list) = list_images(&dir.path().join("app.fatbin")) else { return };
    let elves: Vec<&str> = list.lines().filter(|l| l.starts_with("ELF file")).collect();
    assert_eq!(elves.len(), 4, "{list}");
    for (line, sm) in elves.iter().zip(["sm_80", "sm_90", "sm_100", "sm_120"]) {
        assert!(line.ends_with(&format!("{sm}.cubin")), "{list}");
    }
    assert!(!list.contains("PTX file"), "{list}");
    // One source: PTX for JIT beside the cubin, with nvcc's list syntax.
    let out = cdpc(dir.path(), &["lib.cu", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-o", "lib.fatbin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = list_images(&dir.path().join("lib.fatbin")).unwrap();
    assert!(list.contains("ELF file    1: lib.1.sm_90.cubin") && list.contains("PTX file    1: lib.1.sm_90.ptx"), "{list}");
    // Several sources with `code=[sm_90,compute_90]` (docs/BUILDING.md's examples): the linked cubins only,
    // as `nvcc -dlink` writes them, and W0801 saying why there is no PTX and what to do.
    let readme = ["user.cu", "lib.cu", "-o", "two.fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"];
    let out = cdpc(dir.path(), &readme);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("warning[W0801]: `code=compute_90` adds no PTX"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--emit ptx"), "{}", stderr(&out));
    let list = list_images(&dir.path().join("two.fatbin")).unwrap();
    assert!(list.contains("ELF file    1: two.1.sm_80.cubin") && list.contains("ELF file    2: two.2.sm_90.cubin") && !list.contains("PTX file"), "{list}");
    let json = cdpc(dir.path(), &[&readme[..], &["--error-format", "json"]].concat());
    assert!(json.status.success());
    let v: serde_json::Value = serde_json::from_str(stderr(&json).trim()).unwrap();
    assert_eq!((v["code"].as_str(), v["severity"].as_str()), (Some("W0801"), Some("warning")), "{v}");
    std::fs::remove_file(dir.path().join("two.fatbin")).unwrap();
    let out = cdpc(dir.path(), &[&readme[..], &["-Werror"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error[W0801]"), "{}", stderr(&out));
    assert!(!dir.path().join("two.fatbin").exists());
    // PTX alone of a link of several sources does not exist: a usage error, nothing written.
    let out = cdpc(dir.path(), &["user.cu", "lib.cu", "-gencode", "arch=compute_90,code=compute_90", "-o", "x.fatbin"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has no PTX"), "{}", stderr(&out));
    assert!(!dir.path().join("x.fatbin").exists());
    // -gencode writes a fat binary: another --emit is a usage error, not a fat binary under the
    // name of an object.
    let out = cdpc(dir.path(), &["lib.cu", "--emit", "host-obj", "-gencode", "arch=compute_90,code=compute_90", "-o", "lib.host.o"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("`--emit` other than cubin"), "{}", stderr(&out));
    assert!(!dir.path().join("lib.host.o").exists());
    // A malformed target is refused by the option parser.
    let out = cdpc(dir.path(), &["lib.cu", "-gencode", "arch=sm_90,code=sm_90"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("virtual architecture"), "{}", stderr(&out));
}

/// Two files with the same-named `static` function, kernel and variable: C's internal linkage
/// makes each its file's own, so the link succeeds (it was E0800) and nvlink keeps both
/// kernels, host code's to launch by name, though no device code launches them.
#[test]
fn static_functions_kernels_and_variables_are_each_files_own() {
    let dir = tempfile::tempdir().unwrap();
    for (file, value) in [("a.cu", 1), ("b.cu", 2)] {
        let stem = &file[..1];
        std::fs::write(
            dir.path().join(file),
            format!(
                "static __device__ int base = {value};\nstatic __device__ int helper(int x) {{ return x + base; }}\n\
                 static __global__ void init(int *p) {{ p[0] = {value}; }}\n\
                 __global__ void run_{stem}(int *p) {{ p[{value}] = helper(p[{value}]); }}\n"
            ),
        )
        .unwrap();
    }
    let out = cdpc(dir.path(), &["a.cu", "b.cu", "-o", "ab.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let Ok(elf) = Command::new("readelf").arg("-sW").arg(dir.path().join("ab.cubin")).output() else {
        return println!("skipped: readelf is not available");
    };
    let symbols = String::from_utf8_lossy(&elf.stdout);
    let local_inits = symbols.lines().filter(|l| l.contains(" LOCAL ") && l.trim_end().ends_with(" _Z4initPi")).count();
    assert_eq!(local_inits, 2, "each file's static kernel is in the cubin, local:\n{symbols}");
    assert!(!symbols.lines().any(|l| l.contains(" GLOBAL ") && l.contains("_Z4initPi")), "{symbols}");
}

/// With nvcc's module id of a file (`--nv-module-id`, as samples/harness/nvcc-cdpc.py passes
/// it), its static kernels and variables get nvcc's own names, `__nv_static_<n>_<id>_<name>`,
/// which nvcc's host stubs register: the id is read back from nvcc's PTX of the same file.
#[test]
fn with_nvccs_module_id_static_kernels_and_variables_get_nvccs_names() {
    // The host writes `limit`: Clang keeps a static device variable that host code names, as
    // nvcc keeps every one (an unused one Clang does not emit at all).
    let source = "static __device__ int limit = 3;\nstatic __global__ void hidden(int *p) { p[0] = limit; }\n\
                  __global__ void shown(int *p) { hidden<<<1, 1>>>(p); }\n\
                  void set_limit(int v) { cudaMemcpyToSymbol(limit, &v, sizeof v); }\n";
    let Some(theirs) = crate::build_common::nvcc_ptx(source) else { return };
    let names = |ptx: &str| -> BTreeSet<String> {
        ptx.lines()
            .filter(|l| l.contains(".entry ") || (l.starts_with(".global") || l.starts_with(".visible .global")))
            .filter_map(|l| l.split(['(', ' ', '=', ';']).filter(|w| !w.is_empty()).find(|w| w.starts_with("_Z") || w.starts_with("__nv_static_")).map(str::to_string))
            .collect()
    };
    let theirs = names(&theirs);
    let hidden = theirs.iter().find(|n| n.starts_with("__nv_static_") && n.ends_with("__Z6hiddenPi")).expect("nvcc names the static kernel with its module id");
    // `__nv_static_<n>_<id>_<name>`: the id is the <n> characters after the length's `_`.
    let (len, tail) = hidden["__nv_static_".len()..].split_once('_').unwrap();
    let id = &tail[..len.parse::<usize>().unwrap()];
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.cu"), source).unwrap();
    // Launches as nvcc writes them: the default's aggregation adds kernels and state of its own.
    let out = cdpc(dir.path(), &["s.cu", "--emit", "ptx", "-o", "s.ptx", "--nv-module-id", id, "-fno-launch-optimizations"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = names(&std::fs::read_to_string(dir.path().join("s.ptx")).unwrap());
    assert_eq!(ours, theirs, "cdpc (left) and nvcc (right)");
}

/// Two CUDA C++ files with host code of their own, a `static` kernel of one name each, a
/// static `__device__` variable that host code writes, and a kernel that launches another file's
/// (`samples/harness/dc/`, which `dc-gpu.sh` runs on the GPU).
const HOST_A: &str = include_str!("../../samples/harness/dc/a.cu");
const HOST_B: &str = include_str!("../../samples/harness/dc/b.cu");
/// nvcc's host program: it launches `parent` of a.cu itself and calls the files' host code.
const HOST_MAIN: &str = include_str!("../../samples/harness/dc/main.cu");
/// g++'s host program: it calls the files' host code.
const HOST_GXX_MAIN: &str = include_str!("../../samples/harness/dc/main-host.cpp");

/// The global symbols an x86-64 object defines (`nm --defined-only -g`), weak ones aside.
fn host_defined(dir: &Path, object: &str) -> Option<BTreeSet<String>> {
    let out = Command::new("nm").current_dir(dir).args(["--defined-only", "-g", object]).output().ok().filter(|o| o.status.success());
    let Some(out) = out else {
        println!("skipped: nm is not available");
        return None;
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(
        text.lines()
            .filter_map(|l| l.split_whitespace().collect::<Vec<_>>().get(1..3).map(|k| (k[0].to_string(), k[1].to_string())))
            .filter(|(kind, _)| kind == "T" || kind == "D")
            .map(|(_, name)| name)
            .collect(),
    )
}

/// The default `-dc` object of a CUDA C++ file links like nvcc's `-dc` object of it: in nvcc's
/// host link with several such objects and with an archive of them, in `nvcc -dlink` plus
/// g++'s host link, and in cdpc's own device link. Its kernels' host stubs, its host functions
/// and the names its `static` kernels are registered under are nvcc's and the device code's.
#[test]
fn dc_objects_link_like_nvccs_in_nvccs_and_gxxs_host_links() {
    let Some(nvcc) = nvcc() else { return };
    if !crate::build_common::have("g++") || !crate::build_common::have("ar") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, text) in [("a.cu", HOST_A), ("b.cu", HOST_B), ("main.cu", HOST_MAIN)] {
        std::fs::write(d.join(name), text).unwrap();
    }
    for file in ["a", "b"] {
        let out = cdpc(d, &["-dc", "-arch=sm_90", &format!("{file}.cu"), "-o", &format!("{file}.o")]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // nvcc's host link: the objects, then an archive of them.
    run(&nvcc, d, &["-arch=sm_90", "-rdc=true", "main.cu", "a.o", "b.o", "-o", "app"]);
    let ar = Command::new("ar").current_dir(d).args(["rcs", "libab.a", "a.o", "b.o"]).output().unwrap();
    assert!(ar.status.success(), "{}", stderr(&ar));
    run(&nvcc, d, &["-arch=sm_90", "-rdc=true", "main.cu", "-L.", "-lab", "-o", "app_ar"]);
    // nvcc -dlink registers each object under its module id; g++ links the host side.
    run(&nvcc, d, &["-dc", "-arch=sm_90", "main.cu", "-o", "main.o"]);
    run(&nvcc, d, &["-dlink", "-arch=sm_90", "main.o", "a.o", "b.o", "-o", "dlink.o"]);
    let registered = host_defined(d, "dlink.o").unwrap_or_default();
    for file in ["a", "b"] {
        // The module id: what the object's `__fatbinwrap<ID>` and its constructor's
        // `__cudaRegisterLinkedBinary<ID>` name, read by nvlink from `__nv_module_id`.
        let ours = host_defined(d, &format!("{file}.o")).unwrap();
        let id = ours.iter().find_map(|n| n.strip_prefix("__fatbinwrap")).expect("a fat binary wrapper");
        assert!(id.ends_with(&format!("_{file}_cu_cdpc")), "{id}");
        assert!(registered.contains(&format!("__cudaRegisterLinkedBinary{id}")), "{file}.o's module id `{id}` is not registered: {registered:?}");
    }
    let cuda = tool_dir().unwrap().parent().unwrap().to_path_buf();
    let lib = |name: &str| cuda.join("lib").join(name).display().to_string();
    run(Path::new("g++"), d, &["main.o", "a.o", "b.o", "dlink.o", &lib("libcudadevrt.a"), &lib("libcudart_static.a"), "-ldl", "-lpthread", "-lrt", "-o", "app_gxx"]);
    // A host program compiled by g++ that calls the files' host code.
    std::fs::write(d.join("main-host.cpp"), HOST_GXX_MAIN).unwrap();
    let include = format!("-I{}", cuda.join("include").display());
    run(Path::new("g++"), d, &["-c", &include, "main-host.cpp", "-o", "main-host.o"]);
    run(&nvcc, d, &["-dlink", "-arch=sm_90", "a.o", "b.o", "-o", "dlink-ab.o"]);
    run(Path::new("g++"), d, &["main-host.o", "a.o", "b.o", "dlink-ab.o", &lib("libcudadevrt.a"), &lib("libcudart_static.a"), "-ldl", "-lpthread", "-lrt", "-o", "app_host"]);
    // cdpc's own device link of the same objects, and of the archive.
    let out = cdpc(d, &["a.o", "b.o", "-o", "ab.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cdpc(d, &["libab.a", "-o", "ab2.cubin"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // The host symbols are nvcc's -dc object's: kernel stubs under the kernels' own symbols
    // and the files' host functions; aside are nvcc's extra `__device_stub__` helpers and the
    // host body cudafe++ writes for a `__device__` function (`_Z5scalei`), which host code
    // cannot call.
    for file in ["a", "b"] {
        run(&nvcc, d, &["-dc", "-arch=sm_90", &format!("{file}.cu"), "-o", &format!("nv_{file}.o")]);
        let ours = host_defined(d, &format!("{file}.o")).unwrap();
        let theirs = host_defined(d, &format!("nv_{file}.o")).unwrap();
        let comparable = |set: BTreeSet<String>| -> BTreeSet<String> { set.into_iter().filter(|n| !n.contains("__device_stub__") && !n.starts_with("__fatbinwrap") && n != "_Z5scalei").collect() };
        assert_eq!(comparable(ours.clone()), comparable(theirs), "{file}.o: cdpc (left) and nvcc -dc (right)");
        assert!(ours.iter().any(|n| n.starts_with("__fatbinwrap_")), "{ours:?}");
    }
    // The static kernels and variable: registered under the device code's names.
    let Some(symbols) = list_symbols(&d.join("ab.cubin")) else { return };
    for file in ["a", "b"] {
        let object = String::from_utf8_lossy(&std::fs::read(d.join(format!("{file}.o"))).unwrap()).into_owned();
        let step =
            symbols.iter().find(|s| s.starts_with("__nv_static_") && s.contains(&format!("_{file}_cu_cdpc__Z4stepPi"))).unwrap_or_else(|| panic!("no static `step` of {file}.cu in {symbols:?}"));
        assert!(object.contains(step.as_str()), "{file}.o does not register `{step}`");
    }
    let bias = symbols.iter().find(|s| s.starts_with("__nv_static_") && s.ends_with("_a_cu_cdpc_bias")).expect("a.cu's static variable");
    assert!(String::from_utf8_lossy(&std::fs::read(d.join("a.o")).unwrap()).contains(bias.as_str()));
}

/// Every symbol name of a cubin (`readelf -sW`), or `None` (with the reason printed).
fn list_symbols(cubin: &Path) -> Option<Vec<String>> {
    let out = Command::new("readelf").arg("-sW").arg(cubin).output().ok().filter(|o| o.status.success());
    let Some(out) = out else {
        println!("skipped: readelf is not available");
        return None;
    };
    // `NUM: VALUE SIZE TYPE BIND VIS [<other>] NDX NAME`: the name is last.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(text.lines().filter(|l| l.trim_start().split(':').next().is_some_and(|n| n.parse::<u32>().is_ok())).filter_map(|l| l.split_whitespace().last().map(str::to_string)).collect())
}

/// CUDA C++ sources that call the device's C library (`malloc`, `free`) link: CUDA's headers
/// declare them and the sources name them, but the driver defines them when the module is
/// loaded, as for nvcc's link, so the check before nvlink asks no input for them (it did:
/// E0801 for `malloc` and `free`, found on 2026-11-26). With `-fdevice-malloc-pool` too.
#[test]
fn sources_that_call_malloc_and_free_link() {
    if tool_dir().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("take.cu"), "__global__ void take(int **out) { out[threadIdx.x] = (int *)malloc(64); }\n").unwrap();
    std::fs::write(d.join("give.cu"), "__global__ void give(int **out) { free(out[threadIdx.x]); }\n").unwrap();
    for extra in [&[][..], &["-fdevice-malloc-pool"][..]] {
        let mut args = vec!["take.cu", "give.cu", "-o", "both.cubin"];
        args.extend_from_slice(extra);
        let out = cdpc(d, &args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    }
}

/// The images `nvcc ARGS -dryrun -c FILE` asks fatbinary for, `("elf" | "ptx", sm)`, in its
/// order, those of architectures cdpc builds for only (`cdpc --list-gpu-code`).
fn nvcc_images(nvcc: &Path, dir: &Path, args: &[&str], cdpc_archs: &[String]) -> Vec<(String, String)> {
    let out = Command::new(nvcc).current_dir(dir).args(args).args(["-dryrun", "-o", "nvcc.o"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = said.lines().find(|l| l.contains("fatbinary")).unwrap_or_else(|| panic!("nvcc {args:?} -dryrun ran no fatbinary:\n{said}"));
    line.split("--image3=kind=")
        .skip(1)
        .filter_map(|image| {
            let (kind, rest) = image.split_once(",sm=")?;
            let sm: String = rest.chars().take_while(char::is_ascii_digit).collect();
            cdpc_archs.contains(&format!("sm_{sm}")).then(|| (kind.to_string(), sm))
        })
        .collect()
}

/// The images of a fat binary cdpc wrote, as [`nvcc_images`] gives nvcc's, sorted.
fn cdpc_images(list: &str) -> Vec<(String, String)> {
    let mut images: Vec<(String, String)> = list
        .lines()
        .filter_map(|l| {
            let kind = if l.starts_with("ELF file") {
                "elf"
            } else if l.starts_with("PTX file") {
                "ptx"
            } else {
                return None;
            };
            let sm = l.rsplit(".sm_").next()?.split('.').next()?;
            Some((kind.to_string(), sm.to_string()))
        })
        .collect();
    images.sort();
    images
}

/// nvcc's `-arch=all-major` and `-arch=all` (CMake's `CUDA_ARCHITECTURES` `all-major` and `all`),
/// and `-arch=compute_XX -code=...`: the same images as nvcc asks fatbinary for (`nvcc -dryrun`,
/// the oracle), but for architectures LLVM 22 does not write (CUDA 13's sm_107). `-arch=native`
/// builds the GPUs' architectures; with none, nvcc's default (warning W0709, an error with
/// `-Werror`).
#[test]
fn architecture_sets_and_code_lists_build_nvccs_images() {
    let Some(_) = tool_dir() else { return };
    let dir = project();
    let listed = cdpc(dir.path(), &["--list-gpu-code"]);
    let archs: Vec<String> = String::from_utf8_lossy(&listed.stdout).lines().map(str::to_string).collect();
    assert!(archs.contains(&"sm_90".to_string()), "{archs:?}");
    // A whole program's object (`-c` without `-rdc`, CMake's default): nvcc embeds its PTX too.
    std::fs::write(dir.path().join("plain.cu"), "__global__ void k(int *p) { p[threadIdx.x] = 2 * threadIdx.x; }\n").unwrap();
    let relocatable = ["-rdc=true", "-c", "lib.cu"];
    let whole = ["-c", "plain.cu"];
    for (i, args) in [
        [&relocatable[..], &["-arch=all-major"]].concat(),
        [&relocatable[..], &["-arch=all"]].concat(),
        [&relocatable[..], &["-arch=compute_80", "-code=sm_80,sm_90"]].concat(),
        [&relocatable[..], &["-arch", "compute_90", "-code", "compute_90,sm_100"]].concat(),
        [&whole[..], &["-arch=all-major"]].concat(),
        [&whole[..], &["-gencode", "arch=compute_90,code=[sm_90,compute_90]"]].concat(),
    ]
    .iter()
    .enumerate()
    {
        let output = format!("set{i}.o");
        let mut command = vec!["-o", &output];
        command.extend_from_slice(args);
        let out = cdpc(dir.path(), &command);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let Some(list) = list_images(&dir.path().join(&output)) else { return };
        let ours = cdpc_images(&list);
        assert!(ours.len() >= 2, "{args:?}: {list}");
        if let Some(nvcc) = nvcc() {
            let mut theirs = nvcc_images(&nvcc, dir.path(), args, &archs);
            theirs.sort();
            assert_eq!(ours, theirs, "{args:?}");
        }
    }
    // The GPUs this machine shows.
    let out = cdpc(dir.path(), &["-rdc=true", "-c", "lib.cu", "-o", "native.o", "-arch=native"]);
    assert!(out.status.success(), "{}", stderr(&out));
    if let (Some(list), Some(numbers)) = (list_images(&dir.path().join("native.o")), cdpc::toolchain::gpus::visible_architectures()) {
        let expected: Vec<(String, String)> = numbers.iter().filter(|n| archs.contains(&format!("sm_{n}"))).map(|n| ("elf".to_string(), n.to_string())).collect();
        assert_eq!(cdpc_images(&list), expected, "{list}");
    }
    // None (`CUDA_VISIBLE_DEVICES=` hides every GPU from the driver, where there is one).
    let hidden = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).env("CUDA_VISIBLE_DEVICES", "").args(args).output().unwrap();
    let out = hidden(&["-rdc=true", "-c", "lib.cu", "-o", "none.o", "-arch=native"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("warning[W0709]: `-arch=native`: no GPU was found, so the default architecture, sm_90, is built"), "{}", stderr(&out));
    let list = list_images(&dir.path().join("none.o")).unwrap();
    assert!(cdpc_images(&list).contains(&("elf".into(), "90".into())), "{list}");
    let out = hidden(&["-rdc=true", "-c", "lib.cu", "-o", "none2.o", "-arch=native", "-Werror"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error[W0709]"), "{}", stderr(&out));
    assert!(!dir.path().join("none2.o").exists());
}

/// `-ptx -rdc=true` of a kernel calling a device function another file defines (CMake's
/// `CUDA_PTX_COMPILATION` with separable compilation): relocatable PTX with the function
/// `.extern`, as nvcc writes it; without `-rdc` the one file is the whole program, `E0104`.
#[test]
fn relocatable_ptx_leaves_another_files_function_extern() {
    let source = "extern __device__ float helper(float x);\n__global__ void k(float *p) { p[threadIdx.x] = helper(p[threadIdx.x]); }\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), source).unwrap();
    let out = cdpc(dir.path(), &["-ptx", "-rdc=true", "-arch=sm_90", "k.cu", "-o", "k.ptx"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ptx = std::fs::read_to_string(dir.path().join("k.ptx")).unwrap();
    assert!(ptx.lines().any(|l| l.starts_with(".extern .func") && l.contains("_Z6helperf")), "{ptx}");
    let out = cdpc(dir.path(), &["-ptx", "-arch=sm_90", "k.cu", "-o", "whole.ptx"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("E0104") && !dir.path().join("whole.ptx").exists(), "{}", String::from_utf8_lossy(&out.stderr));
    if let Some(nvcc) = nvcc() {
        run(&nvcc, dir.path(), &["-ptx", "-rdc=true", "-arch=sm_90", "k.cu", "-o", "nvcc.ptx"]);
        let theirs = std::fs::read_to_string(dir.path().join("nvcc.ptx")).unwrap();
        assert!(theirs.lines().any(|l| l.starts_with(".extern .func") && l.contains("_Z6helperf")), "{theirs}");
    }
}
