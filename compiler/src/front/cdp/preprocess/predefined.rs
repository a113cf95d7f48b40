//! The predefined macros and the command line's `-D`/`-U`, as the text of two pseudo-files
//! (`<built-in>` and `<command line>`) that go through the same directives as any file, so a
//! diagnostic about one of them points at its definition. The list and the reasons are in the
//! module documentation of [`super`].

use super::{MacroOption, PreprocessOptions};
use crate::target::{AddressSize, DefaultStream, Target};

/// The name of the pseudo-file of predefined macros.
pub const BUILT_IN: &str = "<built-in>";
/// The name of the pseudo-file of `-D` and `-U`.
pub const COMMAND_LINE: &str = "<command line>";

/// The CUDA version cdpc claims (nvcc 13.5.37, whose wheels it is tested against).
const CUDA_VERSION: (u32, u32, u32) = (13, 5, 37);

/// The pseudo-files, in the order they are read.
pub fn prelude(options: &PreprocessOptions, target: &Target) -> Vec<(&'static str, String)> {
    let arch = target.sm.number * 10;
    let (major, minor, build) = CUDA_VERSION;
    let version = env!("CARGO_PKG_VERSION");
    let number: u32 = version.split('.').take(3).fold(0, |acc, part| acc * 100 + part.parse::<u32>().unwrap_or(0));
    let mut text = format!(
        "#define __CUDACC__ 1\n#define __NVCC__ 1\n#define __CUDACC_RDC__ 1\n#define __CUDA_ARCH__ {arch}\n#define __CUDA_ARCH_LIST__ {arch}\n\
         #define __CUDACC_VER_MAJOR__ {major}\n#define __CUDACC_VER_MINOR__ {minor}\n#define __CUDACC_VER_BUILD__ {build}\n\
         #define __CUDA_API_VER_MAJOR__ {major}\n#define __CUDA_API_VER_MINOR__ {minor}\n#define __CUDACC_DEVICE_ATOMIC_BUILTINS__ 1\n\
         #define __NVCC_DIAG_PRAGMA_SUPPORT__ 1\n#define CUDA_DOUBLE_MATH_FUNCTIONS 1\n\
         #define __cplusplus 201703L\n#define __STDC__ 1\n#define __STDC_HOSTED__ 1\n\
         #define __linux__ 1\n#define __linux 1\n#define __unix__ 1\n#define __unix 1\n#define __gnu_linux__ 1\n#define __ELF__ 1\n\
         #define __CHAR_BIT__ 8\n#define __SIZEOF_INT__ 4\n#define __SIZEOF_LONG_LONG__ 8\n\
         #define __CDPC__ 1\n#define __CDPC_VERSION__ \"{version}\"\n#define __CDPC_VERSION_NUM__ {number}\n\
         #define __DATE__ \"Jan  1 1970\"\n#define __TIME__ \"00:00:00\"\n\
         #define __FILE__ __FILE__\n#define __LINE__ __LINE__\n#define __COUNTER__ __COUNTER__\n"
    );
    if target.sm.arch_specific {
        // nvcc's (and Clang's) mark of an architecture-specific target: `sm_90a` has
        // `__CUDA_ARCH_FEAT_SM90_ALL`, which code using its instructions tests.
        text.push_str(&format!("#define __CUDA_ARCH_FEAT_SM{}_ALL 1\n", target.sm.number));
    }
    if target.default_stream == DefaultStream::PerThread {
        // nvcc's `--default-stream per-thread`; the CUDA headers switch to the `_ptsz` calls on it.
        text.push_str("#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1\n");
    }
    match target.address_size {
        AddressSize::Bits64 => text.push_str(
            "#define __LP64__ 1\n#define _LP64 1\n#define __x86_64__ 1\n#define __x86_64 1\n#define __amd64__ 1\n#define __amd64 1\n\
             #define __SIZEOF_LONG__ 8\n#define __SIZEOF_POINTER__ 8\n",
        ),
        AddressSize::Bits32 => text.push_str("#define __SIZEOF_LONG__ 4\n#define __SIZEOF_POINTER__ 4\n"),
    }
    let mut command_line = String::new();
    for m in &options.macros {
        match m {
            MacroOption::Define(spec) => match spec.split_once('=') {
                Some((name, value)) => command_line.push_str(&format!("#define {name} {}\n", value.replace('\n', " "))),
                None => command_line.push_str(&format!("#define {spec} 1\n")),
            },
            MacroOption::Undefine(name) => command_line.push_str(&format!("#undef {name}\n")),
        }
    }
    vec![(BUILT_IN, text), (COMMAND_LINE, command_line)]
}
