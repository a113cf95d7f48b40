//! [`CompileOptions`] from name/value pairs of text: the one reading of options that the `cdpc`
//! command line, the C API (`cdpc_options_set`), the Python bindings and the `cdpc-build` crate
//! share, so that a key means the same thing, takes the same values and is refused with the same
//! message in each. The command line turns what clap read into pairs in an order of its own
//! (`compile_pairs` in `plan.rs`): nvcc's rules between options, where one wins whatever the
//! order written (`-G` over `-lineinfo`, an explicit `-ftz` over `--use_fast_math`), are that
//! order, the winner's pair last.
//!
//! The keys and values are spelled as the `cdpc` command line spells them:
//!
//! | key | values |
//! |---|---|
//! | `arch` | `sm_90`, `90`, `compute_90` |
//! | `launch-abi` | `v1`, `v2` |
//! | `default-stream` | `legacy` (or `null`), `per-thread` |
//! | `address-size` | `32`, `64` |
//! | `opt-level` | `0` to `3` (`-O3` too) |
//! | `emit` | `cubin`, `obj` (or `object`), `ptx`, `llvm-ir`, `host-obj` |
//! | `language` | `cdp`, `cu` (or `cuda`), `ir` (or `llvm-ir`), as `-x` |
//! | `cuda-home` | a CUDA toolkit or `pip install --target` folder |
//! | `ptxas-arg`, `nvlink-arg` | one extra argument (repeatable) |
//! | `werror`, `strict-param-limit` | a boolean |
//! | `aggregate-launches` | `off`, `warp`, `block`, `grid` (`-faggregate-launches=`) |
//! | `launch-threshold` | a thread count (`-flaunch-threshold=`) |
//! | `device-malloc-pool`, `legacy-warp-intrinsics` | a boolean (`-fdevice-malloc-pool`, `-flegacy-warp-intrinsics`) |
//! | `pass-remarks` | `aggregate` (`-Rpass=aggregate`), `none` |
//! | `remarks` | `skipped-headers` (`-Rskipped-headers`), `all` (`-Rall`), `none` |
//! | `deny`, `allow` | diagnostic codes, comma-separated (repeatable) |
//! | `file-name` | the name diagnostics and `__FILE__` show for the source |
//! | `input-path` | the source's path: `#include "..."` looks beside it |
//! | `define`, `undefine` | `NAME` or `NAME=VALUE`, `NAME`, like `-D` and `-U` (repeatable, in order) |
//! | `include-dir` | a folder for `#include`, like `-I` (repeatable, in order) |
//! | `system-include-dir` | a folder for `#include`, like `-isystem` (repeatable, in order) |
//! | `tool-timeout` | seconds one ptxas or nvlink run may take, `0` for no limit |
//! | `lineinfo` | a boolean: line tables (`-lineinfo`) |
//! | `device-debug` | a boolean: full DWARF at -O0 (`-G`) |
//! | `separate` | a boolean: one of several files (`-dc`) |
//! | `use-fast-math` | a boolean: nvcc's `--use_fast_math` (sets the three below and the fast library) |
//! | `ftz`, `prec-div`, `prec-sqrt` | a boolean: nvcc's `-ftz`, `-prec-div`, `-prec-sqrt` |
//! | `fmad` | a boolean: nvcc's `-fmad` (contract multiplies and adds; on by default) |
//! | `std` | CUDA C++'s dialect, as nvcc's `-std`: `c++03` to `c++23` |
//! | `host-arg` | one argument for the host compiler, as `-Xcompiler` (repeatable) |
//! | `deprecation-warnings` | a boolean: `false` is nvcc's `-Wno-deprecated-declarations` |
//! | `disable-warnings` | a boolean: nvcc's `-w`, no warnings, ptxas's and nvlink's included |
//! | `clang` | a Clang 22 program to compile CUDA C++ with, as `--clang` |
//! | `nv-module-id` | nvcc's module id of the translation unit (`--nv-module-id`) |
//! | `list-headers` | `none`, `user` (`-MMD`), `all` (`-MD`): the headers a compilation lists |
//! | `overwrite` | `compiler-outputs` (the default), `any` (`--overwrite`) |
//!
//! A boolean is `true`, `1`, `yes` or `on`, or `false`, `0`, `no` or `off`. Repeatable keys add
//! to what is there; the others replace it, so the last pair of a key wins. `lineinfo` and
//! `device-debug` both set the debug level: `true` sets theirs, `false` sets none.
//!
//! ```
//! use cdpc::driver::{option_pairs, Emit};
//!
//! let options = option_pairs::from_pairs([("emit", "ptx"), ("arch", "sm_80"), ("define", "N=4")]).unwrap();
//! assert_eq!(options.emit, Emit::Ptx);
//! assert!(option_pairs::from_pairs([("opt-level", "4")]).is_err());
//! ```

use super::{parse_tool_timeout, CompileOptions, DebugLevel, Emit, Language, MallocPool};
use crate::front::cdp::preprocess::MacroOption;
use crate::{AddressSize, Code, DefaultStream, LaunchAbi};
use std::ffi::OsStr;
use std::path::PathBuf;

/// Every key [`set`] reads, in the order its message for an unknown key lists them.
pub const KEYS: &[&str] = &[
    "arch",
    "launch-abi",
    "default-stream",
    "address-size",
    "opt-level",
    "emit",
    "cuda-home",
    "language",
    "ptxas-arg",
    "nvlink-arg",
    "werror",
    "strict-param-limit",
    "aggregate-launches",
    "launch-threshold",
    "device-malloc-pool",
    "legacy-warp-intrinsics",
    "pass-remarks",
    "remarks",
    "deny",
    "allow",
    "file-name",
    "input-path",
    "define",
    "undefine",
    "include-dir",
    "system-include-dir",
    "tool-timeout",
    "lineinfo",
    "device-debug",
    "separate",
    "use-fast-math",
    "ftz",
    "prec-div",
    "prec-sqrt",
    "fmad",
    "std",
    "host-arg",
    "deprecation-warnings",
    "disable-warnings",
    "clang",
    "nv-module-id",
    "list-headers",
    "overwrite",
];

/// The argument ptxas and nvlink take for nvcc's `-w`.
const TOOLS_QUIET: &str = "--disable-warnings";

/// The host compiler's argument for `deprecation-warnings=false`.
const NO_DEPRECATION_WARNINGS: &str = "-Wno-deprecated-declarations";

/// Sets the option `key` of `options` from `value` (the keys of the module's table). On an
/// unknown key or a value the key does not take, returns the message for the user and leaves
/// `options` as it was.
pub fn set(options: &mut CompileOptions, key: &str, value: &str) -> Result<(), String> {
    set_os(options, key, OsStr::new(value))
}

/// [`set`] with a value that need not be UTF-8: a path's (`cuda-home`, `input-path`,
/// `include-dir`, `system-include-dir`, `clang`) is taken as it is, as the command line's
/// paths are; every other key's value must be text.
pub fn set_os(options: &mut CompileOptions, key: &str, value: &OsStr) -> Result<(), String> {
    let path = || PathBuf::from(value);
    match key {
        "cuda-home" => options.tools.cuda_home = Some(path()),
        "input-path" => options.preprocess.input = Some(path()),
        "include-dir" => options.preprocess.include_dirs.push(path()),
        "system-include-dir" => options.preprocess.system_include_dirs.push(path()),
        "clang" => options.clang.clang = Some(path()),
        _ => {
            let Some(text) = value.to_str() else { return Err(format!("`{key}` takes text, and `{}` is not UTF-8", value.to_string_lossy())) };
            return set_text(options, key, text);
        }
    }
    Ok(())
}

/// [`set`] of a key whose value is text.
fn set_text(options: &mut CompileOptions, key: &str, value: &str) -> Result<(), String> {
    let flag = |v: &str| match v {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{v}` is not a boolean for `{key}`; use true or false")),
    };
    match key {
        "arch" => options.target.sm = value.parse()?,
        "launch-abi" => options.target.launch_abi = value.parse::<LaunchAbi>()?,
        "default-stream" => options.target.default_stream = value.parse::<DefaultStream>()?,
        "address-size" => {
            options.target.address_size = match value {
                "32" => AddressSize::Bits32,
                "64" => AddressSize::Bits64,
                _ => return Err(format!("address size `{value}` does not exist; use 32 or 64")),
            }
        }
        "opt-level" => {
            options.opt_level = match value.trim_start_matches("-O").parse::<u8>() {
                Ok(n) if n <= 3 => n,
                _ => return Err(format!("optimisation level `{value}` does not exist; use 0 to 3")),
            }
        }
        "emit" => {
            options.emit = match value {
                "cubin" => Emit::Cubin,
                "obj" | "object" => Emit::Object,
                "ptx" => Emit::Ptx,
                "llvm-ir" => Emit::LlvmIr,
                "host-obj" => Emit::HostObject,
                _ => return Err(format!("unknown output `{value}`; use cubin, obj, ptx, llvm-ir or host-obj")),
            }
        }
        "language" => {
            options.language = Some(match value {
                "cu" | "cuda" => Language::Cuda,
                "cdp" => Language::Cdp,
                "ir" | "llvm-ir" => Language::Ir,
                _ => return Err(format!("unknown language `{value}`; use cu, cdp or ir")),
            })
        }
        "ptxas-arg" => options.ptxas_args.push(value.to_string()),
        "nvlink-arg" => options.nvlink_args.push(value.to_string()),
        "werror" => options.warnings.deny_all = flag(value)?,
        // `false` denies nothing rather than taking back a `deny` of the code given before.
        "strict-param-limit" => {
            if flag(value)? {
                options.warnings.deny.push(Code::ParamBufferOver4K);
            }
        }
        "aggregate-launches" => options.aggregate = value.parse()?,
        "launch-threshold" => options.launch_threshold = value.parse().map_err(|_| format!("`launch-threshold` takes a thread count, not `{value}`"))?,
        "device-malloc-pool" => {
            options.malloc_pool = match value {
                "link" => MallocPool::AtLink,
                _ if flag(value)? => MallocPool::On,
                _ => MallocPool::Off,
            }
        }
        "legacy-warp-intrinsics" => options.legacy_warp_intrinsics = flag(value)?,
        "pass-remarks" => match value {
            "aggregate" => options.pass_remarks = true,
            "malloc-pool" => options.pool_remarks = true,
            "" | "none" => (options.pass_remarks, options.pool_remarks) = (false, false),
            _ => return Err(format!("no pass `{value}` reports remarks; use aggregate, malloc-pool or none")),
        },
        // `none` turns off the header remarks alone: pass remarks have their own key.
        "remarks" => match value {
            "skipped-headers" => options.header_remarks = true,
            "all" => {
                options.header_remarks = true;
                options.pass_remarks = true;
                options.pool_remarks = true;
            }
            "" | "none" => options.header_remarks = false,
            _ => return Err(format!("no remark group `{value}`; use skipped-headers, all or none")),
        },
        "deny" => options.warnings.deny.extend(codes(value)?),
        "allow" => options.warnings.allow.extend(codes(value)?),
        "file-name" => options.preprocess.input_name = Some(value.to_string()),
        "define" | "undefine" => {
            let name = value.split_once('=').map_or(value, |(n, _)| n);
            if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                return Err(format!("`{value}` does not start with a macro name"));
            }
            options.preprocess.macros.push(if key == "define" { MacroOption::Define(value.to_string()) } else { MacroOption::Undefine(value.to_string()) });
        }
        "tool-timeout" => options.tool_timeout = parse_tool_timeout(value)?,
        "split-compile" => options.split_compile = Some(value.parse().map_err(|_| format!("`{value}` is not a number of parts (0: one for each core)"))?),
        "lineinfo" => options.debug = flag(value)?.then_some(DebugLevel::LineTables),
        "device-debug" => options.debug = flag(value)?.then_some(DebugLevel::Full),
        "separate" => options.separate = flag(value)?,
        "use-fast-math" => options.float_math = if flag(value)? { crate::back::FloatMath::fast() } else { crate::back::FloatMath::default() },
        "std" => {
            let std = crate::front::cuda::CxxStandard::parse(value).ok_or_else(|| format!("std `{value}` is not one of nvcc's dialects: c++03, c++11, c++14, c++17, c++20 or c++23"))?;
            options.cuda_cxx.std = Some(std);
        }
        "ftz" => options.float_math.ftz = flag(value)?,
        "prec-div" => options.float_math.prec_div = flag(value)?,
        "prec-sqrt" => options.float_math.prec_sqrt = flag(value)?,
        "fmad" => options.fmad = if flag(value)? { crate::back::Fmad::Contract } else { crate::back::Fmad::Separate },
        "host-arg" => options.cuda_cxx.host_args.push(value.to_string()),
        "deprecation-warnings" => {
            let on = flag(value)?;
            options.cuda_cxx.warning_args.retain(|a| a != NO_DEPRECATION_WARNINGS);
            if !on {
                options.cuda_cxx.warning_args.push(NO_DEPRECATION_WARNINGS.to_string());
            }
        }
        // As nvcc's `-w`: ptxas and nvlink are told too (after the arguments given so far).
        "disable-warnings" => {
            let quiet = flag(value)?;
            options.warnings.silence_all = quiet;
            for args in [&mut options.ptxas_args, &mut options.nvlink_args] {
                args.retain(|a| a != TOOLS_QUIET);
                if quiet {
                    args.push(TOOLS_QUIET.to_string());
                }
            }
        }
        "nv-module-id" => options.nv_module_id = Some(value.to_string()),
        "list-headers" => {
            options.list_headers = match value {
                "none" => super::HeaderList::None,
                "user" => super::HeaderList::User,
                "all" => super::HeaderList::All,
                _ => return Err(format!("unknown header list `{value}`; use none, user or all")),
            }
        }
        "overwrite" => {
            options.overwrite = match value {
                "compiler-outputs" => super::Overwrite::CompilerOutputs,
                "any" => super::Overwrite::Any,
                _ => return Err(format!("`overwrite` takes compiler-outputs or any, not `{value}`")),
            }
        }
        _ => return Err(format!("unknown option `{key}`; the options are {}", KEYS.join(", "))),
    }
    Ok(())
}

/// The default options with each pair [`set`] in order; the first refused pair's message.
pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<CompileOptions, String> {
    let mut options = CompileOptions::default();
    for (key, value) in pairs {
        set(&mut options, key, value)?;
    }
    Ok(options)
}

/// [`from_pairs`] with values that need not be UTF-8 ([`set_os`]), owned or borrowed: the
/// command line's.
pub fn from_os_pairs<K: AsRef<str>, V: AsRef<OsStr>>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<CompileOptions, String> {
    let mut options = CompileOptions::default();
    for (key, value) in pairs {
        set_os(&mut options, key.as_ref(), value.as_ref())?;
    }
    Ok(options)
}

/// Diagnostic codes, comma-separated, blanks around each ignored.
fn codes(value: &str) -> Result<Vec<Code>, String> {
    value.split(',').filter(|s| !s.is_empty()).map(|c| Code::parse(c.trim()).ok_or_else(|| format!("unknown diagnostic code `{c}`"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::FloatMath;
    use crate::front::cuda::CxxStandard;
    use crate::pipeline::aggregate::Granularity;
    use crate::SmVersion;
    use std::time::Duration;

    fn with(pairs: &[(&str, &str)]) -> CompileOptions {
        from_pairs(pairs.iter().copied()).unwrap_or_else(|e| panic!("{pairs:?}: {e}"))
    }

    fn refused(key: &str, value: &str) -> String {
        let mut options = CompileOptions::default();
        let before = format!("{options:?}");
        let message = set(&mut options, key, value).expect_err(&format!("{key}={value} was taken"));
        assert_eq!(format!("{options:?}"), before, "a refused {key}={value} changed the options");
        message
    }

    #[test]
    fn target_keys() {
        let o = with(&[("arch", "sm_80"), ("launch-abi", "v1"), ("default-stream", "per-thread"), ("address-size", "32")]);
        assert_eq!(o.target.sm, "sm_80".parse::<SmVersion>().unwrap());
        assert_eq!(o.target.launch_abi, LaunchAbi::V1);
        assert_eq!(o.target.default_stream, DefaultStream::PerThread);
        assert_eq!(o.target.address_size, AddressSize::Bits32);
        // nvcc's spellings of one architecture are one architecture
        assert_eq!(with(&[("arch", "90")]).target.sm, with(&[("arch", "compute_90")]).target.sm);
        assert_eq!(with(&[("default-stream", "null")]).target.default_stream, DefaultStream::Legacy);
        assert_eq!(with(&[("address-size", "64")]).target.address_size, AddressSize::Bits64);
        assert!(refused("arch", "sm_1").contains("sm_1"));
        assert!(refused("launch-abi", "v3").contains("v3"));
        assert!(refused("default-stream", "per-block").contains("per-block"));
        assert_eq!(refused("address-size", "16"), "address size `16` does not exist; use 32 or 64");
    }

    #[test]
    fn opt_level_and_emit() {
        assert_eq!(with(&[("opt-level", "0")]).opt_level, 0);
        assert_eq!(with(&[("opt-level", "-O2")]).opt_level, 2);
        assert_eq!(refused("opt-level", "4"), "optimisation level `4` does not exist; use 0 to 3");
        assert!(refused("opt-level", "fast").contains("`fast`"));
        for (value, emit) in [("cubin", Emit::Cubin), ("obj", Emit::Object), ("object", Emit::Object), ("ptx", Emit::Ptx), ("llvm-ir", Emit::LlvmIr), ("host-obj", Emit::HostObject)] {
            assert_eq!(with(&[("emit", value)]).emit, emit, "{value}");
        }
        assert_eq!(refused("emit", "exe"), "unknown output `exe`; use cubin, obj, ptx, llvm-ir or host-obj");
    }

    #[test]
    fn language() {
        assert_eq!(with(&[("language", "cu")]).language, Some(Language::Cuda));
        assert_eq!(with(&[("language", "cuda")]).language, Some(Language::Cuda));
        assert_eq!(with(&[("language", "cdp")]).language, Some(Language::Cdp));
        assert_eq!(with(&[("language", "ir")]).language, Some(Language::Ir));
        assert_eq!(with(&[("language", "llvm-ir")]).language, Some(Language::Ir));
        assert_eq!(refused("language", "fortran"), "unknown language `fortran`; use cu, cdp or ir");
    }

    #[test]
    fn tools_and_their_arguments() {
        let o = with(&[("cuda-home", "/srv/toolkit"), ("ptxas-arg", "-v"), ("ptxas-arg", "--warn-on-spills"), ("nvlink-arg", "-w"), ("tool-timeout", "2.5")]);
        assert_eq!(o.tools.cuda_home, Some(PathBuf::from("/srv/toolkit")));
        assert_eq!(o.ptxas_args, ["-v", "--warn-on-spills"]);
        assert_eq!(o.nvlink_args, ["-w"]);
        assert_eq!(o.tool_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(with(&[("tool-timeout", "0")]).tool_timeout, None);
        assert!(refused("tool-timeout", "-1").contains("`-1` is not a time limit"));
    }

    #[test]
    fn warnings() {
        let o = with(&[("werror", "true"), ("deny", "W0209, W0305"), ("allow", "W0316")]);
        assert!(o.warnings.deny_all);
        assert_eq!(o.warnings.deny, [Code::parse("W0209").unwrap(), Code::ParamBufferOver4K]);
        assert_eq!(o.warnings.allow, [Code::parse("W0316").unwrap()]);
        assert!(!with(&[("werror", "true"), ("werror", "off")]).warnings.deny_all);
        assert_eq!(with(&[("strict-param-limit", "yes")]).warnings.deny, [Code::ParamBufferOver4K]);
        assert!(with(&[("strict-param-limit", "false")]).warnings.deny.is_empty());
        assert_eq!(refused("deny", "E9999"), "unknown diagnostic code `E9999`");
        assert_eq!(refused("werror", "maybe"), "`maybe` is not a boolean for `werror`; use true or false");
        assert_eq!(refused("strict-param-limit", "2"), "`2` is not a boolean for `strict-param-limit`; use true or false");
    }

    #[test]
    fn launch_pipeline() {
        let o = with(&[("aggregate-launches", "warp"), ("launch-threshold", "128"), ("device-malloc-pool", "1"), ("legacy-warp-intrinsics", "on")]);
        assert_eq!(o.aggregate, Granularity::Warp);
        assert_eq!(o.launch_threshold, 128);
        assert!(o.malloc_pool == MallocPool::On && o.legacy_warp_intrinsics);
        assert_eq!(with(&[("device-malloc-pool", "false")]).malloc_pool, MallocPool::Off);
        assert_eq!(with(&[("device-malloc-pool", "true"), ("device-malloc-pool", "link")]).malloc_pool, MallocPool::AtLink);
        assert_eq!(with(&[]).malloc_pool, MallocPool::AtLink);
        assert_eq!(refused("device-malloc-pool", "sometimes"), "`sometimes` is not a boolean for `device-malloc-pool`; use true or false");
        assert_eq!(with(&[("aggregate-launches", "off")]).aggregate, Granularity::Off);
        assert_eq!(with(&[("aggregate-launches", "grid")]).aggregate, Granularity::Grid);
        assert!(refused("aggregate-launches", "thread").contains("`thread`"));
        assert_eq!(refused("launch-threshold", "-1"), "`launch-threshold` takes a thread count, not `-1`");
        assert!(refused("device-malloc-pool", "big").contains("`device-malloc-pool`"));
        assert!(refused("legacy-warp-intrinsics", "2").contains("`legacy-warp-intrinsics`"));
    }

    #[test]
    fn remarks() {
        let o = with(&[("pass-remarks", "aggregate")]);
        assert!(o.pass_remarks && !o.header_remarks);
        assert!(!with(&[("pass-remarks", "aggregate"), ("pass-remarks", "none")]).pass_remarks);
        let o = with(&[("remarks", "skipped-headers")]);
        assert!(o.header_remarks && !o.pass_remarks);
        let o = with(&[("remarks", "all")]);
        assert!(o.header_remarks && o.pass_remarks && o.pool_remarks);
        let o = with(&[("pass-remarks", "malloc-pool")]);
        assert!(o.pool_remarks && !o.pass_remarks);
        let o = with(&[("pass-remarks", "malloc-pool"), ("pass-remarks", "aggregate")]);
        assert!(o.pool_remarks && o.pass_remarks);
        assert!(!with(&[("pass-remarks", "malloc-pool"), ("pass-remarks", "none")]).pool_remarks);
        // `none` is the header remarks' alone
        let o = with(&[("remarks", "all"), ("remarks", "none")]);
        assert!(!o.header_remarks && o.pass_remarks);
        assert_eq!(refused("pass-remarks", "inline"), "no pass `inline` reports remarks; use aggregate, malloc-pool or none");
        assert_eq!(refused("remarks", "some"), "no remark group `some`; use skipped-headers, all or none");
    }

    #[test]
    fn preprocessor() {
        let o = with(&[("file-name", "k.cu"), ("input-path", "src/k.cu"), ("define", "N=4"), ("undefine", "M"), ("define", "_X"), ("include-dir", "inc"), ("include-dir", "more")]);
        assert_eq!(o.preprocess.input_name.as_deref(), Some("k.cu"));
        assert_eq!(o.preprocess.input, Some(PathBuf::from("src/k.cu")));
        // the name sets no language: `language` and `input-path`'s extension do
        assert_eq!(o.language, None);
        assert_eq!(o.preprocess.macros, [MacroOption::Define("N=4".into()), MacroOption::Undefine("M".into()), MacroOption::Define("_X".into())]);
        assert_eq!(o.preprocess.include_dirs, [PathBuf::from("inc"), PathBuf::from("more")]);
        assert_eq!(refused("define", "=1"), "`=1` does not start with a macro name");
        assert_eq!(refused("undefine", "4N"), "`4N` does not start with a macro name");
    }

    #[test]
    fn debug_separate_and_cuda_cxx() {
        assert_eq!(with(&[("lineinfo", "true")]).debug, Some(DebugLevel::LineTables));
        assert_eq!(with(&[("device-debug", "true")]).debug, Some(DebugLevel::Full));
        assert_eq!(with(&[("lineinfo", "true"), ("device-debug", "true")]).debug, Some(DebugLevel::Full));
        assert_eq!(with(&[("device-debug", "true"), ("lineinfo", "false")]).debug, None);
        assert!(with(&[("separate", "true")]).separate);
        assert!(refused("separate", "").contains("`separate`"));
        assert_eq!(with(&[("use-fast-math", "true")]).float_math, FloatMath { ftz: true, prec_div: false, prec_sqrt: false, fast_library: true });
        assert_eq!(with(&[("use-fast-math", "true"), ("use-fast-math", "false")]).float_math, FloatMath { ftz: false, prec_div: true, prec_sqrt: true, fast_library: false });
        assert_eq!(with(&[("std", "c++20")]).cuda_cxx.std, Some(CxxStandard::Cxx20));
        assert_eq!(with(&[("std", "c++03")]).cuda_cxx.std, Some(CxxStandard::Cxx03));
        assert_eq!(refused("std", "c++99"), "std `c++99` is not one of nvcc's dialects: c++03, c++11, c++14, c++17, c++20 or c++23");
    }

    /// nvcc's single-precision options: `--use_fast_math` sets all of them, and an explicit
    /// `-ftz`, `-prec-div` or `-prec-sqrt` after it wins (the command line writes its pairs so).
    #[test]
    fn float_math_and_contraction() {
        let fast = FloatMath::fast();
        assert_eq!(with(&[("use-fast-math", "true"), ("ftz", "false")]).float_math, FloatMath { ftz: false, ..fast });
        assert_eq!(with(&[("use-fast-math", "true"), ("prec-div", "true"), ("prec-sqrt", "true")]).float_math, FloatMath { prec_div: true, prec_sqrt: true, ..fast });
        assert_eq!(with(&[("ftz", "true")]).float_math, FloatMath { ftz: true, ..FloatMath::default() });
        assert_eq!(with(&[("prec-sqrt", "false")]).float_math, FloatMath { prec_sqrt: false, ..FloatMath::default() });
        assert_eq!(with(&[]).fmad, crate::back::Fmad::Contract);
        assert_eq!(with(&[("fmad", "false")]).fmad, crate::back::Fmad::Separate);
        assert!(refused("ftz", "fast").contains("`ftz`"));
    }

    /// What the command line's other options become: `-isystem`, `-Xcompiler`, `-w`, `--clang`,
    /// `--nv-module-id`, `-MD`/`-MMD`, `--overwrite`.
    #[test]
    fn command_line_keys() {
        let o = with(&[("include-dir", "inc"), ("system-include-dir", "sys"), ("system-include-dir", "sys2")]);
        assert_eq!(o.preprocess.system_include_dirs, [PathBuf::from("sys"), PathBuf::from("sys2")]);
        assert_eq!(o.preprocess.include_dirs, [PathBuf::from("inc")]);
        let o = with(&[("host-arg", "-fopenmp"), ("host-arg", "-O2"), ("deprecation-warnings", "false")]);
        assert_eq!(o.cuda_cxx.host_args, ["-fopenmp", "-O2"]);
        assert_eq!(o.cuda_cxx.warning_args, ["-Wno-deprecated-declarations"]);
        assert!(with(&[("deprecation-warnings", "false"), ("deprecation-warnings", "true")]).cuda_cxx.warning_args.is_empty());
        // nvcc's `-w` quiets ptxas and nvlink too, once, after their own arguments
        let o = with(&[("ptxas-arg", "-v"), ("disable-warnings", "true"), ("disable-warnings", "yes")]);
        assert!(o.warnings.silence_all);
        assert_eq!(o.ptxas_args, ["-v", "--disable-warnings"]);
        assert_eq!(o.nvlink_args, ["--disable-warnings"]);
        let o = with(&[("disable-warnings", "true"), ("disable-warnings", "false")]);
        assert!(!o.warnings.silence_all && o.ptxas_args.is_empty() && o.nvlink_args.is_empty());
        let o = with(&[("clang", "/opt/clang/bin/clang++"), ("nv-module-id", "0a1b2c_3")]);
        assert_eq!(o.clang.clang, Some(PathBuf::from("/opt/clang/bin/clang++")));
        assert_eq!(o.nv_module_id.as_deref(), Some("0a1b2c_3"));
        assert_eq!(with(&[("list-headers", "all")]).list_headers, super::super::HeaderList::All);
        assert_eq!(with(&[("list-headers", "user")]).list_headers, super::super::HeaderList::User);
        assert_eq!(with(&[("list-headers", "user"), ("list-headers", "none")]).list_headers, super::super::HeaderList::None);
        assert_eq!(refused("list-headers", "system"), "unknown header list `system`; use none, user or all");
        assert_eq!(with(&[("overwrite", "any")]).overwrite, super::super::Overwrite::Any);
        assert_eq!(with(&[]).overwrite, super::super::Overwrite::CompilerOutputs);
        assert_eq!(refused("overwrite", "yes"), "`overwrite` takes compiler-outputs or any, not `yes`");
    }

    /// A path's value is taken as it is, not UTF-8 included; any other key's must be text.
    #[test]
    fn paths_need_not_be_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let latin1 = OsStr::from_bytes(b"/srv/caf\xe9");
        let o = from_os_pairs([("input-path", latin1), ("include-dir", latin1), ("system-include-dir", latin1), ("cuda-home", latin1), ("clang", latin1)]).unwrap();
        assert_eq!(o.preprocess.input.as_deref(), Some(std::path::Path::new(latin1)));
        assert_eq!(o.preprocess.include_dirs, [PathBuf::from(latin1)]);
        assert_eq!(o.preprocess.system_include_dirs, [PathBuf::from(latin1)]);
        assert_eq!(o.tools.cuda_home, Some(PathBuf::from(latin1)));
        assert_eq!(o.clang.clang, Some(PathBuf::from(latin1)));
        let message = from_os_pairs([("define", OsStr::from_bytes(b"N=\xe9"))]).unwrap_err();
        assert_eq!(message, "`define` takes text, and `N=\u{FFFD}` is not UTF-8");
    }

    /// Every key of [`KEYS`] is read, and an unknown key's message lists them all.
    #[test]
    fn keys() {
        let valid = [
            ("arch", "sm_90"),
            ("launch-abi", "v2"),
            ("default-stream", "legacy"),
            ("address-size", "64"),
            ("opt-level", "3"),
            ("emit", "cubin"),
            ("cuda-home", "/srv/toolkit"),
            ("language", "cdp"),
            ("ptxas-arg", "-v"),
            ("nvlink-arg", "-v"),
            ("werror", "false"),
            ("strict-param-limit", "false"),
            ("aggregate-launches", "off"),
            ("launch-threshold", "0"),
            ("device-malloc-pool", "false"),
            ("legacy-warp-intrinsics", "false"),
            ("pass-remarks", "none"),
            ("remarks", "none"),
            ("deny", ""),
            ("allow", ""),
            ("file-name", "input.cdp"),
            ("input-path", "input.cdp"),
            ("define", "N"),
            ("undefine", "N"),
            ("include-dir", "."),
            ("system-include-dir", "."),
            ("tool-timeout", "600"),
            ("lineinfo", "false"),
            ("device-debug", "false"),
            ("separate", "false"),
            ("use-fast-math", "false"),
            ("ftz", "false"),
            ("prec-div", "true"),
            ("prec-sqrt", "true"),
            ("fmad", "true"),
            ("std", "c++17"),
            ("host-arg", "-O2"),
            ("deprecation-warnings", "true"),
            ("disable-warnings", "false"),
            ("clang", "clang++-22"),
            ("nv-module-id", "abc"),
            ("list-headers", "none"),
            ("overwrite", "compiler-outputs"),
        ];
        assert_eq!(valid.map(|(k, _)| k), KEYS);
        for (key, value) in valid {
            set(&mut CompileOptions::default(), key, value).unwrap_or_else(|e| panic!("{key}={value}: {e}"));
        }
        let message = refused("optimize", "3");
        assert_eq!(
            message,
            "unknown option `optimize`; the options are arch, launch-abi, default-stream, address-size, opt-level, emit, cuda-home, language, ptxas-arg, nvlink-arg, \
             werror, strict-param-limit, aggregate-launches, launch-threshold, device-malloc-pool, legacy-warp-intrinsics, pass-remarks, remarks, deny, allow, file-name, \
             input-path, define, undefine, include-dir, system-include-dir, tool-timeout, lineinfo, device-debug, separate, use-fast-math, ftz, prec-div, prec-sqrt, fmad, \
             std, host-arg, deprecation-warnings, disable-warnings, clang, nv-module-id, list-headers, overwrite"
        );
    }
}
