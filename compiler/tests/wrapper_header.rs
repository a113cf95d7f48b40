//! The precompiled header of Clang's CUDA wrapper (compiler/src/driver/cuda.rs,
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
