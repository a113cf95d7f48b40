//! docs/BUILDING.md's Makefile and CMake project (`docs/build-example/`) are run in a copy of
//! the example: the device objects, the linked cubin and the fat binary need cdpc and the
//! NVIDIA tools; the host programs need nvcc and g++ too (linked only: there is no GPU here).
//! Each part skips with a printed reason when what it needs is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn the_guide_shows_the_makefile_that_is_tested() {
    let guide = std::fs::read_to_string(root().join("docs/BUILDING.md")).unwrap();
    let makefile = std::fs::read_to_string(root().join("docs/build-example/Makefile")).unwrap();
    assert!(guide.contains(&format!("```make\n{makefile}```")), "docs/BUILDING.md does not show docs/build-example/Makefile as it is");
}

#[test]
fn the_guide_shows_the_cmake_project_that_is_tested() {
    let guide = std::fs::read_to_string(root().join("docs/BUILDING.md")).unwrap();
    let cmake = std::fs::read_to_string(root().join("docs/build-example/CMakeLists.txt")).unwrap();
    assert!(guide.contains(&format!("```cmake\n{cmake}```")), "docs/BUILDING.md does not show docs/build-example/CMakeLists.txt as it is");
}

/// A copy of the example in a fresh folder.
fn example() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(root().join("docs/build-example")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn have(program: &str) -> bool {
    let found = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        println!("skipped: `{program}` is not available");
    }
    found
}

/// `cmake` in `dir` with the NVIDIA tools' folder on PATH, or its output as the panic.
fn cmake(dir: &Path, path: &str, args: &[String]) -> std::process::Output {
    let out = Command::new("cmake").current_dir(dir).env("PATH", path).env_remove("CUDA_HOME").args(args).output().unwrap();
    assert!(out.status.success(), "cmake {args:?} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// Whether a GPU with its driver is here to run a host program, with the reason when not.
fn gpu() -> bool {
    let found = Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
    if !found {
        println!("skipped: running the host program: no GPU here (`nvidia-smi -L` lists none)");
    }
    found
}

/// docs/build-example/CMakeLists.txt through cmake/FindCdpc.cmake: configured, built (the cubin,
/// the host objects and headers, nvcc's device link, the g++ program), and run where a GPU is.
#[test]
fn the_example_cmake_project_builds_with_the_find_module() {
    let Ok(tools) = cdpc::toolchain::Toolchain::discover(&Default::default()) else {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    };
    let bin = tools.ptxas.parent().unwrap().to_path_buf();
    if !have("cmake") || !have("g++") {
        return;
    }
    if !bin.join("nvcc").is_file() {
        println!("skipped: nvcc (the device link of the host objects) is not beside ptxas");
        return;
    }
    let dir = example();
    // A header scale.cu reads: changing it must rebuild the objects of scale.cu (DEPFILE).
    std::fs::write(dir.path().join("tweak.h"), "// nothing yet\n").unwrap();
    let scale = std::fs::read_to_string(dir.path().join("scale.cu")).unwrap();
    std::fs::write(dir.path().join("scale.cu"), format!("#include \"tweak.h\"\n{scale}")).unwrap();
    let cuda = bin.parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let configure = cmake(
        dir.path(),
        &path,
        &[
            "-S".into(),
            ".".into(),
            "-B".into(),
            "build".into(),
            format!("-DCMAKE_MODULE_PATH={}", root().join("cmake").display()),
            format!("-DCDPC_EXECUTABLE={}", env!("CARGO_BIN_EXE_cdpc")),
            format!("-DCDPC_CUDA_HOME={}", cuda.display()),
        ],
    );
    let text = String::from_utf8_lossy(&configure.stdout);
    assert!(text.contains(&format!("Found Cdpc: {} (found suitable version \"0.1.0\"", env!("CARGO_BIN_EXE_cdpc"))), "{text}");
    cmake(dir.path(), &path, &["--build".into(), "build".into()]);
    let build = dir.path().join("build");
    for target in ["app.cubin", "app-gxx", "app-dlink", "kernels.cdpc/launch.h", "kernels.cdpc/scale.host.o", "kernels.cdpc/dlink.o", "kernels_dc.cdpc/launch.host.o", "app_cubin.cdpc/scale.o"] {
        assert!(build.join(target).is_file(), "{target} was not built");
    }
    // cdpc_add_cubin links device objects; cdpc_add_cuda_library's are nvcc -dc's kind.
    assert!(cdpc::driver::archive::is_device_object(&std::fs::read(build.join("app_cubin.cdpc/scale.o")).unwrap()));
    assert!(!build.join("kernels_dc.cdpc/launch.h").exists(), "no launcher header without LAUNCHERS");
    let cubin = std::fs::read(build.join("app.cubin")).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF", "app.cubin is no ELF file");
    // A second build has nothing to do.
    let again = cmake(dir.path(), &path, &["--build".into(), "build".into()]);
    assert!(!String::from_utf8_lossy(&again.stdout).contains("cdpc"), "{}", String::from_utf8_lossy(&again.stdout));
    // After the header changes, scale.cu's objects are compiled again, and launch.cu's are not.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(dir.path().join("tweak.h"), "// changed\n").unwrap();
    let rebuilt = cmake(dir.path(), &path, &["--build".into(), "build".into()]);
    let said = String::from_utf8_lossy(&rebuilt.stdout);
    assert!(said.contains("cdpc -dc scale") && !said.contains("cdpc -dc launch"), "{said}");
    if gpu() {
        let expected: Vec<String> = (0..32).map(|i| (i * 3 + 3).to_string()).collect();
        for program in ["app-gxx", "app-dlink"] {
            let run = Command::new(build.join(program)).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&run.stdout), format!("parent: cudaSuccess\n{}\n", expected.join(" ")), "{program}");
        }
    }
}

/// Without cdpc, `find_package(Cdpc REQUIRED)` stops the configuration and says what it looked for.
#[test]
fn the_find_module_reports_a_missing_cdpc() {
    if !Command::new("cmake").arg("--version").output().is_ok_and(|o| o.status.success()) {
        println!("skipped: `cmake` is not available");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("CMakeLists.txt"), "cmake_minimum_required(VERSION 3.19)\nproject(p NONE)\nfind_package(Cdpc REQUIRED)\n").unwrap();
    // PATH without cdpc: only cmake's own folder, named by cmake's full path.
    let cmake = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join("cmake")).find(|p| p.is_file()).unwrap();
    assert!(!cmake.with_file_name("cdpc").exists(), "a cdpc beside cmake would be found");
    let out = Command::new(&cmake)
        .current_dir(dir.path())
        .env("PATH", cmake.parent().unwrap())
        .env_remove("CDPC_ROOT")
        .args(["-S", ".", "-B", "build", &format!("-DCMAKE_MODULE_PATH={}", root().join("cmake").display())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Could NOT find Cdpc (missing: CDPC_EXECUTABLE)"), "{text}");
}

#[test]
fn the_example_makefile_builds() {
    let Ok(tools) = cdpc::toolchain::Toolchain::discover(&Default::default()) else {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    };
    if !Command::new("make").arg("--version").output().is_ok_and(|o| o.status.success()) {
        println!("skipped: `make` is not available");
        return;
    }
    let dir = example();
    let bin = tools.ptxas.parent().unwrap().to_path_buf();
    let nvcc = bin.join("nvcc");
    let cuda = bin.parent().unwrap();
    let have_gxx = Command::new("g++").arg("--version").output().is_ok_and(|o| o.status.success());
    let mut targets = vec!["app.cubin", "app.fatbin"];
    if nvcc.is_file() && have_gxx {
        targets.extend(["app-nvcc", "app-dlink", "app-gxx"]);
    } else {
        println!("skipped: the host programs need nvcc and g++");
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("make")
        .current_dir(dir.path())
        .env("PATH", path)
        .arg(format!("CDPC={}", env!("CARGO_BIN_EXE_cdpc")))
        .arg(format!("NVCC={}", nvcc.display()))
        .arg(format!("CUDA={}", cuda.display()))
        .args(&targets)
        .output()
        .unwrap();
    assert!(out.status.success(), "make failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for target in targets {
        assert!(dir.path().join(target).is_file(), "{target} was not built");
    }
    // -dc's objects are nvcc -dc's kind: x86-64, the device code in a relocatable fat binary.
    for object in ["launch.o", "scale.o"] {
        let bytes = std::fs::read(dir.path().join(object)).unwrap();
        assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 62, "{object} is no x86-64 object");
        assert!(bytes.windows(14).any(|w| w == b"__nv_relfatbin"), "{object} carries no fat binary");
    }
}
