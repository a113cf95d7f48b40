//! The precompiled header of Clang's CUDA wrapper (compiler/src/front/cuda/run.rs,
//! `wrapper_header`): made without the user's `-I` folders, so that one header serves projects
//! with other `-I` folders, and read only where none of a compilation's `-I` folders holds a
//! file that a lookup of the wrapper's would find (Clang does not check that itself): a file
//! the wrapper includes (`cmath`) or one it only probes (`tbb/tbb.h`, libstdc++'s
//! `__has_include`). Such a compilation reads a header of its own options, `-I` folders
//! included. Every compilation gives the PTX of one without the cache.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Four projects under one folder, each `a.cu` with `-I` of a folder of its own: `p1` and
/// `p2` (folders of other names) hold only `k.h`; `p3`'s folder also holds a `cmath` that
/// defines a macro, which its `k.h` requires (the wrapper's `#include <cmath>` reads it
/// without the cache; the source itself does not include `<cmath>`); `p4`'s holds
/// `tbb/tbb.h`, which the wrapper's headers only probe.
fn projects() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let source = "#include <cstdio>\n#include \"k.h\"\n\n__global__ void child(int *out) { out[threadIdx.x] = twice(threadIdx.x); }\n\
__global__ void parent(int *out) { child<<<1, 32>>>(out); printf(\"%d\\n\", out[0]); }\n";
    let header = "#pragma once\n__device__ inline int twice(int x) { return 2 * x; }\n";
    for (project, folder) in [("p1", "inc"), ("p2", "include"), ("p3", "inc"), ("p4", "headers")] {
        let dir = root.path().join(project).join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(root.path().join(project).join("a.cu"), source).unwrap();
        let check = if project == "p3" { "#ifndef CDPC_TEST_SHADOWED_CMATH\n#error \"the -I folder's cmath was not read\"\n#endif\n" } else { "" };
        std::fs::write(dir.join("k.h"), format!("{check}{header}")).unwrap();
    }
    std::fs::write(root.path().join("p3/inc/cmath"), "#define CDPC_TEST_SHADOWED_CMATH 1\n#include_next <cmath>\n").unwrap();
    std::fs::create_dir(root.path().join("p4/headers/tbb")).unwrap();
    std::fs::write(root.path().join("p4/headers/tbb/tbb.h"), "").unwrap();
    root
}

/// `cdpc a.cu --emit ptx -IFOLDER -v` in `project` with the cache `cache` (`""`: none), the
/// preamble off (the wrapper's header is what is looked at): the PTX and the precompiled
/// header Clang read, if any.
fn compile(root: &Path, project: &str, cache: &str) -> (String, Option<PathBuf>) {
    let dir = root.join(project);
    let folder = std::fs::read_dir(&dir).unwrap().flatten().find(|e| e.path().is_dir()).unwrap().file_name();
    let out = dir.join("a.ptx");
    let run = Command::new(env!("CARGO_BIN_EXE_cdpc"))
        .current_dir(&dir)
        .args(["a.cu", "--emit", "ptx", "-v", "-o", "a.ptx"])
        .arg(format!("-I{}", folder.to_string_lossy()))
        .env("CDPC_CACHE_DIR", cache)
        .env("CDPC_PREAMBLE", "0")
        .env_remove("CDPC_CACHE_MAX_SIZE")
        // The headers a compilation leaves for later are made in its own process, after its
        // output: each compilation leaves the cache as it says.
        .env("CDPC_CACHE_BACKGROUND", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{project}: {stderr}");
    let header = stderr.split_whitespace().skip_while(|w| *w != "-include-pch").nth(1).map(PathBuf::from);
    (std::fs::read_to_string(&out).unwrap(), header)
}

#[test]
fn one_wrapper_header_serves_other_include_folders_unless_one_holds_a_file_it_would_read() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let root = projects();
    let cache = root.path().join("cache");
    let cache = cache.to_str().unwrap();
    let reference: Vec<String> = ["p1", "p2", "p3", "p4"].iter().map(|p| compile(root.path(), p, "").0).collect();
    // p1 makes the header (after its output); p2, with another -I folder, reads it.
    let (ptx, none) = compile(root.path(), "p1", cache);
    assert_eq!((ptx.as_str(), none), (reference[0].as_str(), None));
    let (ptx, shared) = compile(root.path(), "p2", cache);
    assert_eq!(ptx, reference[1]);
    let shared = shared.expect("p2 reads the header p1 made");
    assert_eq!(compile(root.path(), "p1", cache), (reference[0].clone(), Some(shared.clone())));
    // p3 and p4 do not read it: the first compilation of each makes the header of its own
    // options, which the second reads.
    for (i, project) in [(2, "p3"), (3, "p4")] {
        let (ptx, first) = compile(root.path(), project, cache);
        assert_eq!(ptx, reference[i], "{project}");
        assert_eq!(first, None, "{project} reads no header made for another project");
        let (ptx, own) = compile(root.path(), project, cache);
        assert_eq!(ptx, reference[i], "{project}");
        let own = own.unwrap_or_else(|| panic!("{project} reads a header of its own"));
        assert_ne!(own, shared, "{project}");
    }
    let headers = std::fs::read_dir(Path::new(cache).join("pch")).unwrap().flatten().filter(|e| e.path().extension().is_some_and(|x| x == "pch")).count();
    assert_eq!(headers, 3, "one header for p1 and p2, one each for p3 and p4");
}

/// `cdpc -dc FILE ARGS -v -MD` in `dir` with the cache `cache` (`""`: none), the preamble off
/// (the wrapper's header is what is looked at), the headers a compilation leaves for later made
/// in its own process after its output: the object's bytes, the set of files `-MD` lists, and
/// `-v`'s output.
fn dc(dir: &Path, cache: &Path, file: &Path, args: &[String]) -> (Vec<u8>, std::collections::BTreeSet<String>, String) {
    let (out, depfile) = (dir.join("a.o"), dir.join("a.d"));
    let run = Command::new(env!("CARGO_BIN_EXE_cdpc"))
        .current_dir(dir)
        .args(["-dc", "-arch=sm_90", "-v", "-MD", "-MF"])
        .arg(&depfile)
        .arg(file)
        .args(args)
        .arg("-o")
        .arg(&out)
        .env("CDPC_CACHE_DIR", cache)
        .env("CDPC_PREAMBLE", "0")
        .env_remove("CDPC_CACHE_MAX_SIZE")
        .env("CDPC_CACHE_BACKGROUND", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{}: {stderr}", file.display());
    let listed = std::fs::read_to_string(&depfile).unwrap().replace("\\\n", " ").split_whitespace().skip(2).map(String::from).collect();
    (std::fs::read(&out).unwrap(), listed, stderr)
}

/// How many of Clang's runs `-v` shows defining the texture intrinsics' include guard.
fn lean_runs(verbose: &str) -> usize {
    verbose.matches("-D__CLANG_CUDA_TEXTURE_INTRINSICS_H__").count()
}

/// A file's compilation with no cache (no precompiled header of the wrapper, as a file's first
/// with a set of options) and one with the whole wrapper's header from `cache`: the first's
/// device side leaves out the texture intrinsics, and the objects are the same; `-MD`'s list
/// is the one of a compilation of the whole wrapper without a header (with `-lineinfo`, which
/// reads it whole: a header's list lacks two of GCC's headers a compilation without one names).
fn compare_with_and_without_the_header(work: &Path, cache: &Path, file: &Path, args: &[String]) {
    let (lean, lean_listed, said) = dc(work, Path::new(""), file, args);
    assert_eq!(lean_runs(&said), 1, "{}: the device side without the texture intrinsics\n{said}", file.display());
    // the first compilation of a set of options makes the header after its output, as does one
    // whose -I folder holds a file the wrapper looks up (a header of its own options): the
    // second reads one
    let (mut whole, _, mut said) = dc(work, cache, file, args);
    if !said.contains("-include-pch") {
        (whole, _, said) = dc(work, cache, file, args);
    }
    assert!(said.contains("-include-pch") && lean_runs(&said) == 0, "{}: the wrapper's header\n{said}", file.display());
    assert!(lean == whole, "{}: the object differs without the texture intrinsics", file.display());
    let with_lines: Vec<String> = args.iter().cloned().chain(["-lineinfo".to_string()]).collect();
    let (_, whole_listed, said) = dc(work, Path::new(""), file, &with_lines);
    assert_eq!(lean_runs(&said), 0, "{}: -lineinfo reads the whole wrapper\n{said}", file.display());
    assert_eq!(lean_listed, whole_listed, "{}: -MD's list", file.display());
    assert!(lean_listed.iter().any(|f| f.ends_with("/__clang_cuda_texture_intrinsics.h")), "{}: {lean_listed:?}", file.display());
}

/// With no precompiled header of the wrapper (the first `.cu` file compiled with a set of
/// options), the device side parses the wrapper without its texture intrinsics, about a third
/// of its text, and writes the object a compilation with the whole wrapper's header writes:
/// every corpus program (`tests/corpus-programs.txt`, with its Makefile's options) and every
/// CUDA C++ sample, `-dc` objects compared byte for byte, and `-MD`'s lists. Skipped with a
/// printed reason when the corpus (`../shared/corpus`) is absent (the samples still are).
#[test]
fn without_a_header_the_device_side_leaves_out_the_texture_intrinsics_and_writes_the_same_objects() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let work = tempfile::tempdir().unwrap();
    let mut files: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for entry in std::fs::read_dir(repo.join("samples")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "cu") {
            files.push((entry.path(), Vec::new()));
        }
    }
    let corpus = repo.join("../shared/corpus");
    if corpus.is_dir() {
        // KLAP's own copy of CUB, which the corpus does not carry, as tests/corpus.rs reads it
        std::fs::create_dir_all(work.path().join("shim/cub/cub")).unwrap();
        std::fs::write(work.path().join("shim/cub/cub/cub.cuh"), "#include <cub/cub.cuh>\n").unwrap();
        let table = std::fs::read_to_string(repo.join("tests/corpus-programs.txt")).unwrap();
        for line in table.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            let w: Vec<&str> = line.split_whitespace().collect();
            let file = corpus.join(w[1]);
            let mut args = vec![format!("-I{}", file.parent().unwrap().display())];
            for word in &w[3..] {
                args.push(if word.starts_with('-') { word.to_string() } else { format!("-I{}", corpus.join(word).display()) });
            }
            args.push(format!("-I{}", work.path().join("shim").display()));
            args.push("-DcudaThreadSynchronize=cudaDeviceSynchronize".into());
            if w[2] == "per-thread" {
                args.extend(["--default-stream".into(), "per-thread".into()]);
            }
            files.push((file, args));
        }
    } else {
        println!("skipped the corpus: no {} (the samples are compared)", corpus.display());
    }
    let cache = work.path().join("cache");
    for (file, args) in &files {
        compare_with_and_without_the_header(work.path(), &cache, file, args);
    }
}

/// A file that calls texture and surface functions fails without the texture intrinsics and
/// is compiled again with the whole wrapper: its object is the one a compilation with the
/// wrapper's header writes, and its PTX has the texture fetch and the surface store.
#[test]
fn a_file_that_calls_texture_functions_is_compiled_with_the_whole_wrapper() {
    if !crate::cuda_cxx::tools_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = "__global__ void fetch(cudaTextureObject_t t, float *out) { out[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x); }\n\
__global__ void store(cudaSurfaceObject_t s) { surf2Dwrite<float>(1.0f, s, 4 * threadIdx.x, 0); }\n\
__global__ void parent(cudaTextureObject_t t, float *out) { fetch<<<1, 32>>>(t, out); }\n";
    let file = dir.path().join("tex.cu");
    std::fs::write(&file, source).unwrap();
    let cache = dir.path().join("cache");
    // `-v` lists the device side's run without the texture intrinsics, given up, then the
    // whole wrapper's
    let (first, first_listed, said) = dc(dir.path(), &cache, &file, &[]);
    assert_eq!((lean_runs(&said), said.matches("--cuda-device-only").count(), said.contains("-include-pch")), (1, 2, false), "the device side's runs\n{said}");
    let given_up = said.lines().position(|l| l.contains("-D__CLANG_CUDA_TEXTURE_INTRINSICS_H__")).unwrap();
    assert_eq!(said.lines().nth(given_up + 1), Some("# Clang ended with errors: nothing it wrote is used"), "{said}");
    assert!(said.lines().skip(given_up + 2).any(|l| l.contains("--cuda-device-only") && !l.contains("-D__CLANG_CUDA_TEXTURE_INTRINSICS_H__")), "{said}");
    let (second, _, said) = dc(dir.path(), &cache, &file, &[]);
    assert!(said.contains("-include-pch"), "{said}");
    assert!(first == second, "the object of the second run is the header's");
    assert!(first_listed.iter().any(|f| f.ends_with("/__clang_cuda_texture_intrinsics.h")), "{first_listed:?}");
    let ptx = dir.path().join("tex.ptx");
    let run = Command::new(env!("CARGO_BIN_EXE_cdpc")).current_dir(dir.path()).args(["tex.cu", "-rdc=true", "--emit", "ptx", "-o"]).arg(&ptx).env("CDPC_CACHE_DIR", "").output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let ptx = std::fs::read_to_string(&ptx).unwrap();
    assert!(ptx.contains("tex.1d.v4.f32.s32") && ptx.contains("sust.b.2d"), "{ptx}");
}
