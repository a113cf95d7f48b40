//! The GPUs of this machine, as nvcc's `-arch=native` finds them: the CUDA driver
//! (`libcuda.so.1`, loaded at run time, so that cdpc needs no driver to run) asked for each
//! visible device's compute capability. `CUDA_VISIBLE_DEVICES` limits what it sees, as it does
//! nvcc's.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` and `_MINOR` (cuda.h).
const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// The compute capability of each visible GPU (`90` for 9.0), in device order, each once;
/// `None` where there is no driver, it does not start (`cuInit` fails: no GPU, or none visible),
/// or it names no device.
pub fn visible_architectures() -> Option<Vec<u32>> {
    // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is cast to the type cuda.h
    // declares for it and called with arguments of those types; the library stays loaded for
    // the process (no dlclose: the driver keeps threads).
    unsafe {
        let library = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if library.is_null() {
            return None;
        }
        let symbol = |name: &CStr| -> Option<*mut c_void> {
            let f = libc::dlsym(library, name.as_ptr() as *const c_char);
            (!f.is_null()).then_some(f)
        };
        let init: extern "C" fn(u32) -> c_int = std::mem::transmute(symbol(c"cuInit")?);
        let count: extern "C" fn(*mut c_int) -> c_int = std::mem::transmute(symbol(c"cuDeviceGetCount")?);
        let get: extern "C" fn(*mut c_int, c_int) -> c_int = std::mem::transmute(symbol(c"cuDeviceGet")?);
        let attribute: extern "C" fn(*mut c_int, c_int, c_int) -> c_int = std::mem::transmute(symbol(c"cuDeviceGetAttribute")?);
        if init(0) != 0 {
            return None;
        }
        let mut n: c_int = 0;
        if count(&mut n) != 0 || n <= 0 {
            return None;
        }
        let mut found = Vec::new();
        for ordinal in 0..n {
            let (mut device, mut major, mut minor): (c_int, c_int, c_int) = (0, 0, 0);
            if get(&mut device, ordinal) != 0 || attribute(&mut major, COMPUTE_CAPABILITY_MAJOR, device) != 0 || attribute(&mut minor, COMPUTE_CAPABILITY_MINOR, device) != 0 {
                continue;
            }
            let number = (major * 10 + minor) as u32;
            if !found.contains(&number) {
                found.push(number);
            }
        }
        (!found.is_empty()).then_some(found)
    }
}
