//! The `tool-timeout` option of the C API: a ptxas that never returns is killed and the compile
//! fails with a message naming the tool, its command and the limit.

use cdpc_capi::*;
use std::ffi::{c_char, CStr, CString};

fn set(options: *mut CdpcOptions, key: &str, value: &str) -> CdpcStatus {
    let (key, value) = (CString::new(key).unwrap(), CString::new(value).unwrap());
    // SAFETY: live options and NUL-terminated strings; no error string asked for.
    unsafe { cdpc_options_set(options, key.as_ptr(), value.as_ptr(), std::ptr::null_mut()) }
}

fn take(s: *mut c_char) -> String {
    // SAFETY: a string from the library, freed once.
    unsafe {
        let text = CStr::from_ptr(s).to_string_lossy().into_owned();
        cdpc_string_free(s);
        text
    }
}

#[cfg(unix)]
#[test]
fn a_hung_ptxas_is_killed_after_the_time_limit() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cuda = dir.path().join("cuda");
    std::fs::create_dir_all(cuda.join("bin")).unwrap();
    std::fs::create_dir_all(cuda.join("lib64")).unwrap();
    std::fs::write(cuda.join("lib64/libcudadevrt.a"), b"!<arch>\n").unwrap();
    for tool in ["ptxas", "nvlink"] {
        let path = cuda.join("bin").join(tool);
        std::fs::write(&path, "#!/bin/sh\nexec sleep 60\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let options = cdpc_options_new();
    assert_eq!(set(options, "cuda-home", cuda.to_str().unwrap()), CdpcStatus::Ok);
    for bad in ["-1", "soon", "inf"] {
        assert_eq!(set(options, "tool-timeout", bad), CdpcStatus::InvalidArgument, "{bad}");
    }
    assert_eq!(set(options, "tool-timeout", "0.25"), CdpcStatus::Ok);
    let source = CString::new("__global__ void k(int *p) { p[0] = 1; }").unwrap();
    let mut result = std::ptr::null_mut();
    let started = std::time::Instant::now();
    // SAFETY: NUL-terminated source, live options, writable result pointer.
    let status = unsafe { cdpc_compile(source.as_ptr(), options, &mut result) };
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(status, CdpcStatus::Tool);
    // SAFETY: the result from cdpc_compile, freed once.
    let message = take(unsafe { cdpc_result_message(result) });
    assert!(message.starts_with("ptxas did not finish within 0.25 s and was killed\n  command: "), "{message}");
    assert!(message.contains(&cuda.join("bin/ptxas").display().to_string()), "{message}");
    unsafe {
        cdpc_result_free(result);
        cdpc_options_free(options);
    }
}
