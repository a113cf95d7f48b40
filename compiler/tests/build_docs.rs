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

#[test]
fn the_example_cmake_project_builds() {
    let Ok(tools) = cdpc::toolchain::Toolchain::discover(&Default::default()) else {
        println!("skipped: ptxas/nvlink not found; run `cargo xtask setup`");
        return;
    };
    let bin = tools.ptxas.parent().unwrap().to_path_buf();
    let nvcc = bin.join("nvcc");
    if !have("cmake") || !have("g++") || !nvcc.is_file() {
        return;
    }
    let dir = example();
    let cuda = bin.parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let step = |args: &[String]| {
        let out = Command::new("cmake").current_dir(dir.path()).env("PATH", &path).args(args).output().unwrap();
        assert!(out.status.success(), "cmake {args:?} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    };
    step(&[
        "-S".into(),
        ".".into(),
        "-B".into(),
        "build".into(),
        format!("-DCDPC={}", env!("CARGO_BIN_EXE_cdpc")),
        format!("-DNVCC={}", nvcc.display()),
        format!("-DCUDA={}", cuda.display()),
    ]);
    step(&["--build".into(), "build".into()]);
    let build = dir.path().join("build");
    for target in ["app.cubin", "app-gxx", "launch.h", "scale.host.o"] {
        assert!(build.join(target).is_file(), "{target} was not built");
    }
    let cubin = std::fs::read(build.join("app.cubin")).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF", "app.cubin is no ELF file");
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
        targets.extend(["app-nvcc", "app-gxx"]);
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
    for object in ["launch.o", "scale.o"] {
        let bytes = std::fs::read(dir.path().join(object)).unwrap();
        assert!(cdpc::driver::archive::is_device_object(&bytes), "{object} is no device object");
    }
}
