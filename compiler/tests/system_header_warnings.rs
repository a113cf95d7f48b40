//! Quiet like nvcc: no warnings from system headers. Clang 18 and later report a deprecated
//! declaration used inside a system header's template when the instantiation began in the
//! program (`std::stable_sort` warned that libstdc++'s `get_temporary_buffer` is deprecated),
//! which neither nvcc nor its host compiler does; cdpc's Clang drops such warnings (shim.cpp,
//! `Forward::from_system_header`) on both sides. The program's own warnings stay, and so do a
//! system header's `#warning` and everything with `-Wsystem-headers`.

use crate::build_common::{cdpc, stderr};
use std::path::Path;

const LIBRARY: &str = r#"#include <algorithm>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

__global__ void add_one(int *a) { a[threadIdx.x] += 1; }

int sorted_first(int n) {
  std::vector<int> v(n);
  std::mt19937 g(1);
  for (auto &x : v) x = static_cast<int>(g() % 1000);
  std::stable_sort(v.begin(), v.end());
  std::stable_sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
  std::vector<bool> seen(n, false);
  std::thread t([&] { seen[0] = true; });
  t.join();
  std::cout << v[0] << seen[0] << "\n";
  return v[0];
}
"#;

/// The program's own warnings: a deprecated function of its own, an unused variable (`-Wall`).
const OWN: &str = r#"#include <algorithm>
#include <vector>

[[deprecated("use twice")]] int old_twice(int x) { return 2 * x; }

__global__ void add_one(int *a) { a[threadIdx.x] += 1; }

int first(std::vector<int> &v) {
  std::stable_sort(v.begin(), v.end());
  int unused_here = 3;
  return old_twice(v[0]);
}
"#;

/// A header of the program's, found through `-isystem` or `-I`: its `#warning`, and a deprecated
/// class used inside its template, instantiated by the program.
const HEADER: &str = r#"#warning "sys.h says hello"
template <class T> struct [[deprecated]] Old {};
template <class T> int use_old() { Old<T> o; (void)o; return 0; }
"#;

const USES_HEADER: &str = r#"#include <sys.h>
__global__ void add_one(int *a) { a[threadIdx.x] += 1; }
int h() { return use_old<int>(); }
"#;

/// cdpc's warnings (`warning[W1001]: MESSAGE`) in `out`'s stderr, one line each.
fn warnings(out: &std::process::Output) -> Vec<String> {
    stderr(out).lines().filter(|l| l.starts_with("warning")).map(str::to_string).collect()
}

/// Compiles `file` in `dir` device side only (`--emit ptx`) and both sides (`-dc`), with `more`:
/// the warnings of each, which must succeed.
fn both_sides(dir: &Path, file: &str, more: &[&str]) -> [Vec<String>; 2] {
    let device = cdpc(dir, &[&[file, "--emit", "ptx", "-o", "out.ptx"][..], more].concat());
    assert!(device.status.success(), "{file} --emit ptx {more:?}: {}", stderr(&device));
    let object = cdpc(dir, &[&["-dc", file, "-o", "out.o"][..], more].concat());
    assert!(object.status.success(), "-dc {file} {more:?}: {}", stderr(&object));
    [warnings(&device), warnings(&object)]
}

#[test]
fn the_standard_library_warns_nothing_on_either_side() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("library.cu"), LIBRARY).unwrap();
    for more in [&[][..], &["-Xcompiler", "-Wall"][..], &["-std=c++20"][..]] {
        let [device, object] = both_sides(dir.path(), "library.cu", more);
        assert!(device.is_empty(), "--emit ptx {more:?}: {device:?}");
        assert!(object.is_empty(), "-dc {more:?}: {object:?}");
    }
}

#[test]
fn the_programs_own_warnings_stay() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("own.cu"), OWN).unwrap();
    let [device, object] = both_sides(dir.path(), "own.cu", &["-Xcompiler", "-Wall"]);
    for (side, found) in [("--emit ptx", &device), ("-dc", &object)] {
        assert!(found.iter().any(|w| w.contains("'old_twice' is deprecated: use twice")), "{side}: {found:?}");
        assert!(found.iter().all(|w| !w.contains("get_temporary_buffer")), "{side}: {found:?}");
    }
    // `-Xcompiler -Wall` is the host side's.
    assert!(object.iter().any(|w| w.contains("unused variable 'unused_here'")), "{object:?}");
}

#[test]
fn a_system_headers_own_warning_stays_and_its_instantiations_warn_as_a_users_header() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inc")).unwrap();
    std::fs::write(dir.path().join("inc/sys.h"), HEADER).unwrap();
    std::fs::write(dir.path().join("uses.cu"), USES_HEADER).unwrap();
    // Through `-isystem`: the `#warning` (Clang shows it in system headers, as GCC does), not
    // the deprecated class inside the header's template.
    let [device, object] = both_sides(dir.path(), "uses.cu", &["-Xcompiler", "-isystem", "-Xcompiler", "inc"]);
    for (side, found) in [("--emit ptx", &device), ("-dc", &object)] {
        assert!(found.iter().any(|w| w.contains("sys.h says hello")), "{side}: {found:?}");
        assert!(found.iter().all(|w| !w.contains("'Old<int>' is deprecated")), "{side}: {found:?}");
    }
    // Through `-I` the header is the program's: both.
    let [device, object] = both_sides(dir.path(), "uses.cu", &["-Iinc"]);
    for (side, found) in [("--emit ptx", &device), ("-dc", &object)] {
        assert!(found.iter().any(|w| w.contains("sys.h says hello")), "{side}: {found:?}");
        assert!(found.iter().any(|w| w.contains("'Old<int>' is deprecated")), "{side}: {found:?}");
    }
}

#[test]
fn wsystem_headers_asks_for_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("library.cu"), LIBRARY).unwrap();
    let out = cdpc(dir.path(), &["-dc", "library.cu", "-o", "out.o", "-Xcompiler", "-Wsystem-headers"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Clang's warnings about CUDA's, Clang's and the C library's headers (redefined built-in
    // macros, ...), and libstdc++'s deprecated `get_temporary_buffer` where it is one.
    assert!(!warnings(&out).is_empty(), "{}", stderr(&out));
}
