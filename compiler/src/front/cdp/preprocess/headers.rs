//! The headers cdpc ships: a virtual include folder searched after the `-I` folders. Device
//! code's declarations (printf, the device runtime API, dim3, atomics, the math functions) are
//! built into sema, so most headers are empty or define macros only (`NULL`, `INT_MAX`,
//! `FLT_MAX`, `PRIu64`, `M_PI`, `assert`); they are there so that real programs' includes
//! succeed. The files are in `headers/`, compiled into the binary.

const CUDA_RUNTIME: &str = include_str!("headers/cuda_runtime.h");
const EMPTY: &str = include_str!("headers/empty.h");

/// Every shipped header: the name an `#include` writes, and its text.
const SHIPPED: &[(&str, &str)] = &[
    ("cuda_runtime.h", CUDA_RUNTIME),
    ("cuda_runtime_api.h", CUDA_RUNTIME),
    ("cuda.h", CUDA_RUNTIME),
    ("device_launch_parameters.h", CUDA_RUNTIME),
    ("cuda_device_runtime_api.h", CUDA_RUNTIME),
    ("device_functions.h", EMPTY),
    ("device_atomic_functions.h", EMPTY),
    ("sm_20_atomic_functions.h", EMPTY),
    ("sm_32_intrinsics.h", EMPTY),
    ("sm_35_intrinsics.h", EMPTY),
    ("math_functions.h", EMPTY),
    ("vector_types.h", EMPTY),
    ("cooperative_groups.h", include_str!("headers/cooperative_groups.h")),
    ("stdio.h", include_str!("headers/stdio.h")),
    ("cstdio", include_str!("headers/stdio.h")),
    ("stdlib.h", include_str!("headers/stdlib.h")),
    ("cstdlib", include_str!("headers/stdlib.h")),
    ("stddef.h", include_str!("headers/stddef.h")),
    ("cstddef", include_str!("headers/stddef.h")),
    ("assert.h", include_str!("headers/assert.h")),
    ("cassert", include_str!("headers/assert.h")),
    ("limits.h", include_str!("headers/limits.h")),
    ("climits", include_str!("headers/limits.h")),
    ("float.h", include_str!("headers/float.h")),
    ("cfloat", include_str!("headers/float.h")),
    ("math.h", include_str!("headers/math.h")),
    ("cmath", include_str!("headers/math.h")),
    ("stdint.h", include_str!("headers/stdint.h")),
    ("cstdint", include_str!("headers/stdint.h")),
    ("inttypes.h", include_str!("headers/inttypes.h")),
    ("cinttypes", include_str!("headers/inttypes.h")),
    ("string.h", EMPTY),
    ("cstring", EMPTY),
    ("stdbool.h", EMPTY),
];

/// The shipped header `name`, as its canonical name and text.
pub fn shipped(name: &str) -> Option<(&'static str, &'static str)> {
    SHIPPED.iter().find(|(n, _)| *n == name).map(|&(n, t)| (n, t))
}

/// The names of every shipped header, for tests.
#[cfg(test)]
pub fn names() -> impl Iterator<Item = &'static str> {
    SHIPPED.iter().map(|(n, _)| *n)
}
