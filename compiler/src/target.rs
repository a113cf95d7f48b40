//! What we compile for: the GPU architecture, the address size and the launch ABI.
//!
//! The architecture is an `SmVersion`: its number and the architecture-specific `a` of `sm_90a`.
//! The target also says the parameter-size limit (`param_buffer_limit`) and where parameters start
//! in the constant bank (`param_bank_base`), which `layout.rs` uses.

use std::fmt;
use std::str::FromStr;

/// The functions device code may call that no input defines, besides the device runtime's
/// `cuda*` entry points (libcudadevrt's): the C library nvcc provides on the device
/// (`printf`'s `vprintf`, `malloc`, `free`, `assert`'s `__assertfail`, resolved by the driver
/// when the module is loaded) and what LLVM's NVPTX back end lowers itself (`memcpy`,
/// `memset`). Thresholding runs a child that calls them in place, and the link check never
/// asks an input to define them.
pub const DEVICE_LIBRARY: &[&str] = &["vprintf", "malloc", "free", "__assertfail", "memcpy", "memset"];

/// `sm_XX`: the compute capability times ten (sm_90 is 90), and whether the target is the
/// architecture-specific one (`sm_90a`: its own instructions, such as `wgmma` and `setmaxnreg`,
/// and code for that architecture alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SmVersion {
    /// 90 for sm_90 and sm_90a.
    pub number: u32,
    /// The `a` of `sm_90a`.
    pub arch_specific: bool,
}

/// The plain architecture `sm_<number>` (`SmVersion(90)` is sm_90), as the type was written
/// when it had no suffix.
#[allow(non_snake_case)]
pub const fn SmVersion(number: u32) -> SmVersion {
    SmVersion { number, arch_specific: false }
}

/// The architectures from sm_35 on that LLVM 22's NVPTX writes code for (`llc -mcpu=help`,
/// LLVM 22.1), in order: an architecture it does not know, such as CUDA 13's sm_107, makes it
/// ignore the processor and then stop on the first instruction it cannot select, so
/// [`SmVersion::from_str`] refuses it first. The family-specific `f` targets it also knows
/// are refused there because Clang 22 does not take them.
pub const LLVM_ARCHITECTURES: &[SmVersion] = &[
    SmVersion(35),
    SmVersion(37),
    SmVersion(50),
    SmVersion(52),
    SmVersion(53),
    SmVersion(60),
    SmVersion(61),
    SmVersion(62),
    SmVersion(70),
    SmVersion(72),
    SmVersion(75),
    SmVersion(80),
    SmVersion(86),
    SmVersion(87),
    SmVersion(88),
    SmVersion(89),
    SmVersion(90),
    SmVersion::specific(90),
    SmVersion(100),
    SmVersion::specific(100),
    SmVersion(101),
    SmVersion::specific(101),
    SmVersion(103),
    SmVersion::specific(103),
    SmVersion(110),
    SmVersion::specific(110),
    SmVersion(120),
    SmVersion::specific(120),
    SmVersion(121),
    SmVersion::specific(121),
];

impl SmVersion {
    /// The architecture-specific `sm_<number>a`.
    pub const fn specific(number: u32) -> SmVersion {
        SmVersion { number, arch_specific: true }
    }

    /// The oldest PTX ISA version LLVM 22's NVPTX accepts for this architecture, as ten times
    /// the version (90 is PTX ISA 9.0): what `llc -mcpu=sm_XX` writes with no `+ptx` feature
    /// (measured with LLVM 22.1). Clang 22 marks a CUDA 13 module's functions `+ptx88`, which
    /// NVPTX refuses for sm_88 and sm_110 with a fatal error (Clang itself stops there), so Clang
    /// gets this as a feature of its own (`clang::ClangInvocation`), and another front end's IR
    /// is raised to it (`pipeline::qualifiers::raise_ptx_version`). 0 for the older ones: no
    /// floor.
    pub fn min_ptx(self) -> u32 {
        match (self.number, self.arch_specific) {
            (88 | 110, _) => 90,
            (103 | 121, _) => 88,
            (120, _) => 87,
            (100 | 101, _) => 86,
            (90, true) => 80,
            (89 | 90, false) => 78,
            (87, _) => 74,
            (86, _) => 71,
            (80, _) => 70,
            (75, _) => 63,
            _ => 0,
        }
    }

    /// The oldest architecture with dynamic parallelism (compute capability 3.5).
    pub const MIN_CDP: SmVersion = SmVersion(35);
    /// CUDA 12.1 raised the kernel-parameter limit to 32764 bytes from this architecture on.
    pub const LARGE_PARAMS: SmVersion = SmVersion(70);

    /// The number and suffix as fatbinary and nvcc's `compute_` names write them: `90`, `90a`.
    pub fn code(self) -> String {
        format!("{}{}", self.number, if self.arch_specific { "a" } else { "" })
    }
}

impl fmt::Display for SmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.code())
    }
}

impl FromStr for SmVersion {
    type Err = String;
    /// Accepts `sm_90`, `90` and nvcc's `compute_90`, each also with the architecture-specific
    /// `a` (`sm_90a`), among [`LLVM_ARCHITECTURES`]. The family-specific `f` (`sm_100f`, CUDA
    /// 12.9) is refused: Clang 22 does not take those targets.
    fn from_str(s: &str) -> Result<SmVersion, String> {
        let name = s.strip_prefix("sm_").or_else(|| s.strip_prefix("compute_")).unwrap_or(s);
        let (digits, arch_specific) = match name.strip_suffix('a') {
            Some(digits) => (digits, true),
            None => (name, false),
        };
        if let Some(family) = name.strip_suffix('f').filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
            return Err(format!("`{s}` is a family-specific target, which Clang 22 does not take: use sm_{family} or sm_{family}a"));
        }
        match digits.parse::<u32>() {
            Ok(n) if (SmVersion::MIN_CDP.number..1000).contains(&n) => {
                let sm = SmVersion { number: n, arch_specific };
                if !LLVM_ARCHITECTURES.contains(&sm) {
                    let known: Vec<String> = LLVM_ARCHITECTURES.iter().map(|a| a.to_string()).collect();
                    return Err(format!("`{s}` is not an architecture LLVM 22's NVPTX writes code for (it would stop on it); it writes {}", known.join(", ")));
                }
                Ok(sm)
            }
            Ok(n) => Err(format!("sm_{n} cannot launch kernels from the device: dynamic parallelism needs sm_35 or newer")),
            Err(_) => Err(format!("`{s}` is not an architecture; expected a name like sm_90 or sm_90a")),
        }
    }
}

/// The PTX address size: `nvptx-nvidia-cuda` or `nvptx64-nvidia-cuda`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressSize {
    /// 32-bit pointers (PTX only: ptxas 13 refuses to assemble it).
    Bits32,
    /// 64-bit pointers, the default.
    Bits64,
}

impl AddressSize {
    /// 4 or 8.
    pub fn pointer_bytes(self) -> u64 {
        match self {
            AddressSize::Bits32 => 4,
            AddressSize::Bits64 => 8,
        }
    }
}

/// Which device-runtime entry points a `<<<>>>` launch lowers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaunchAbi {
    /// The documented `cudaGetParameterBuffer` + `cudaLaunchDevice` pair. The runtime refuses
    /// tail launch and fire-and-forget through it (measured on sm_90, ABI-NOTES.md).
    V1,
    /// `__cudaCDP2GetParameterBufferV2` + `__cudaCDP2LaunchDeviceV2`, what nvcc 13 emits.
    V2,
}

impl FromStr for LaunchAbi {
    type Err = String;
    fn from_str(s: &str) -> Result<LaunchAbi, String> {
        match s {
            "v1" | "V1" => Ok(LaunchAbi::V1),
            "v2" | "V2" => Ok(LaunchAbi::V2),
            _ => Err(format!("unknown launch ABI `{s}`; expected v1 or v2")),
        }
    }
}

/// Which stream a device-runtime call or launch means by stream 0 (nvcc's `--default-stream`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DefaultStream {
    /// The legacy NULL stream (nvcc's default; `legacy`, or `null`).
    #[default]
    Legacy,
    /// Per-thread default streams (`per-thread`): `CUDA_API_PER_THREAD_DEFAULT_STREAM` is
    /// defined and device-runtime calls that have a `_ptsz` entry point (launches, memcpy and
    /// memset, event record, stream wait) call it, as nvcc's device code does.
    PerThread,
}

impl FromStr for DefaultStream {
    type Err = String;
    fn from_str(s: &str) -> Result<DefaultStream, String> {
        match s {
            "legacy" | "null" => Ok(DefaultStream::Legacy),
            "per-thread" => Ok(DefaultStream::PerThread),
            _ => Err(format!("unknown default stream `{s}`; expected legacy, null or per-thread")),
        }
    }
}

impl fmt::Display for DefaultStream {
    /// As `--default-stream` and [`FromStr`] spell it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DefaultStream::Legacy => "legacy",
            DefaultStream::PerThread => "per-thread",
        })
    }
}

impl fmt::Display for AddressSize {
    /// The bits, as `--address-size` spells it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressSize::Bits32 => "32",
            AddressSize::Bits64 => "64",
        })
    }
}

impl fmt::Display for LaunchAbi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LaunchAbi::V1 => "v1",
            LaunchAbi::V2 => "v2",
        })
    }
}

/// What code is generated for. The default is sm_90, 64-bit, launch ABI v2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// The GPU architecture (`-arch`).
    pub sm: SmVersion,
    /// 32- or 64-bit addresses.
    pub address_size: AddressSize,
    /// Which device-runtime entry points launches call.
    pub launch_abi: LaunchAbi,
    /// What stream 0 means (`--default-stream`).
    pub default_stream: DefaultStream,
}

impl Default for Target {
    fn default() -> Target {
        Target { sm: SmVersion(90), address_size: AddressSize::Bits64, launch_abi: LaunchAbi::V2, default_stream: DefaultStream::Legacy }
    }
}

impl Target {
    /// Where ptxas puts a kernel's parameters in the constant bank, as far as it matters to the
    /// layout: modulo 32 (`layout::layout_params_at`). sm_90's start at 0x210, 16 past a
    /// multiple of 32, so nvcc's `(char, double4_32a)` has its vector at offset 16 there and at
    /// 32 on sm_75 to sm_120 otherwise (measured with nvcc 13.5, `EIATTR_KPARAM_INFO`).
    pub fn param_bank_base(&self) -> u64 {
        if self.sm.number == 90 {
            0x210
        } else {
            0
        }
    }

    /// The largest parameter buffer the target's runtime accepts: 32764 bytes on sm_70 and newer
    /// with 64-bit addresses (CUDA 12.1+, measured), else the documented 4096.
    pub fn param_buffer_limit(&self) -> u64 {
        if self.sm >= SmVersion::LARGE_PARAMS && self.address_size == AddressSize::Bits64 {
            runtime_shim::limits::PARAM_BUFFER_MAX_BYTES_CUDA_12_1
        } else {
            runtime_shim::limits::PARAM_BUFFER_DOCUMENTED_MAX_BYTES
        }
    }

    /// `long` follows the host's data model: LP64 on 64-bit Linux, ILP32 for 32-bit PTX.
    pub fn long_bytes(&self) -> u64 {
        self.address_size.pointer_bytes()
    }
}

/// The `__nvvm_reflect` answer libdevice's `sqrtf`, `hypotf`, `normf`, `norm3df`, `norm4df`
/// and `jnf` read for nvcc's default `-prec-sqrt=true`, as the LLVM option that gives it
/// (`back::nvcc_math_defaults` sets it in cdpc's process; a Clang program run as a process gets
/// it as `-mllvm`). LLVM 22 answers 0 without it, and libdevice then takes `sqrt.approx.f32`.
pub const PREC_SQRT_REFLECT: &str = "-nvvm-reflect-add=__CUDA_PREC_SQRT=1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_read_and_write_as_nvcc_spells_them() {
        for (text, number, arch_specific, shown) in
            [("sm_90", 90, false, "sm_90"), ("compute_80", 80, false, "sm_80"), ("75", 75, false, "sm_75"), ("sm_90a", 90, true, "sm_90a"), ("compute_100a", 100, true, "sm_100a")]
        {
            let sm: SmVersion = text.parse().unwrap();
            assert_eq!((sm.number, sm.arch_specific, sm.to_string()), (number, arch_specific, shown.to_string()), "{text}");
        }
        assert_eq!("sm_90a".parse::<SmVersion>().unwrap().code(), "90a");
        assert_eq!(SmVersion(90).code(), "90");
        // sm_90a is sm_90 and more: every check of "sm_80 or newer" holds for it.
        assert!("sm_90a".parse::<SmVersion>().unwrap() > SmVersion(90) && SmVersion(90) >= SmVersion(80));
    }

    #[test]
    fn family_targets_and_old_or_unknown_names_are_refused_with_the_reason() {
        assert!("sm_100f".parse::<SmVersion>().unwrap_err().contains("family-specific"));
        assert!("sm_30".parse::<SmVersion>().unwrap_err().contains("sm_35 or newer"));
        for bad in ["sm_", "sm_a", "native", "sm_90b", "a"] {
            assert!(bad.parse::<SmVersion>().unwrap_err().contains("is not an architecture"), "{bad}");
        }
        // CUDA 13's sm_107 and an `a` LLVM has no target for: LLVM 22 would stop on them.
        for unknown in ["sm_107", "sm_107a", "sm_89a", "sm_95"] {
            assert!(unknown.parse::<SmVersion>().unwrap_err().contains("not an architecture LLVM 22's NVPTX writes code for"), "{unknown}");
        }
        for known in LLVM_ARCHITECTURES {
            assert_eq!(known.to_string().parse::<SmVersion>().as_ref(), Ok(known));
        }
    }

    /// `llc -mcpu=sm_XX` of LLVM 22.1 with no `+ptx` feature writes these `.version`s.
    #[test]
    fn the_oldest_ptx_each_architecture_takes_is_llvms() {
        for (arch, ptx) in [
            ("sm_75", 63),
            ("sm_80", 70),
            ("sm_86", 71),
            ("sm_87", 74),
            ("sm_88", 90),
            ("sm_89", 78),
            ("sm_90", 78),
            ("sm_90a", 80),
            ("sm_100", 86),
            ("sm_100a", 86),
            ("sm_101", 86),
            ("sm_103", 88),
            ("sm_110", 90),
            ("sm_110a", 90),
            ("sm_120", 87),
            ("sm_121", 88),
        ] {
            assert_eq!(arch.parse::<SmVersion>().unwrap().min_ptx(), ptx, "{arch}");
        }
    }
}
