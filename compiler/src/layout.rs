//! Where each argument goes in a child launch's parameter buffer.
//!
//! The device runtime forbids reordering: parameters are placed in declaration order, each at
//! the next offset that is a multiple of its alignment. The buffer's alignment is the largest
//! parameter alignment (what the documented ABI passes to `cudaGetParameterBuffer`), and its
//! size is the end of the last parameter, not rounded up: the total nvcc records in the cubin
//! (`EIATTR_CBANK_PARAM_SIZE`) and ptxas's "uses too much parameter space" figure. (nvcc's front
//! end, in "Formal parameter space overflowed (N bytes required ...)", counts N without padding.)
//! `tests/layout_oracle.rs` checks all of this against nvcc.
//!
//! On sm_90 a parameter aligned past 16 bytes is placed as ptxas places it, from the constant
//! bank's 0x210 (`Target::param_bank_base`, `layout_params_at`); the others are aligned from the
//! buffer's start.

use crate::target::Target;
use crate::types::{round_up, size_align, StructLayouts, Type};
use runtime_shim::limits::PARAM_BUFFER_DOCUMENTED_MAX_BYTES;

/// The layout of one launch's parameter buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    /// Byte offset of each parameter, in declaration order.
    pub offsets: Vec<u64>,
    /// Bytes the buffer must hold.
    pub size: u64,
    /// Largest alignment of any parameter; 1 for a kernel without parameters.
    pub align: u64,
}

/// The size and alignment of one kernel parameter, in bytes: the input of
/// [`layout_params`] for front ends that have their own type system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamSpec {
    /// `sizeof` the parameter's type.
    pub size: u64,
    /// `alignof` the parameter's type (a power of two; 0 is taken as 1).
    pub align: u64,
}

impl ParamSpec {
    /// A parameter of `size` bytes aligned to `align` bytes.
    pub fn new(size: u64, align: u64) -> ParamSpec {
        ParamSpec { size, align }
    }
}

/// Lays out parameters given as sizes and alignments, in declaration order. This is the one
/// place the layout rule lives: [`param_layout`] (the `.cdp` front end's entry point) calls it.
///
/// ```
/// use cdpc::layout::{layout_params, ParamSpec};
/// // child(int *data, double x, char c, int n) at 64 bits: nvcc stores at 0, 8, 16, 20.
/// let layout = layout_params(&[ParamSpec::new(8, 8), ParamSpec::new(8, 8), ParamSpec::new(1, 1), ParamSpec::new(4, 4)]);
/// assert_eq!(layout.offsets, [0, 8, 16, 20]);
/// assert_eq!((layout.size, layout.align), (24, 8));
/// ```
pub fn layout_params<'a>(params: impl IntoIterator<Item = &'a ParamSpec>) -> ParamLayout {
    layout_params_at(params, 0)
}

/// [`layout_params`] for parameters that ptxas places at `base` bytes into the constant bank:
/// a parameter aligned to more than 16 bytes (CUDA 13's `double4_32a`, a struct with one)
/// gets an offset whose address `base + offset` is aligned, as nvcc's cubins show
/// ([`Target::param_bank_base`]); the others are aligned from the buffer's start.
pub fn layout_params_at<'a>(params: impl IntoIterator<Item = &'a ParamSpec>, base: u64) -> ParamLayout {
    let mut offsets = Vec::new();
    let mut end = 0u64;
    let mut max_align = 1u64;
    for spec in params {
        let align = spec.align.max(1);
        let offset = if align > 16 { round_up(end + base, align) - base } else { round_up(end, align) };
        offsets.push(offset);
        end = offset.saturating_add(spec.size);
        max_align = max_align.max(align);
    }
    ParamLayout { offsets, size: end, align: max_align }
}

/// Lays out `params` (the kernel's parameter types, in order).
pub fn param_layout<'a>(params: impl IntoIterator<Item = &'a Type>, structs: &dyn StructLayouts, target: &Target) -> ParamLayout {
    let specs: Vec<ParamSpec> = params
        .into_iter()
        .map(|ty| {
            let (size, align) = size_align(ty, structs, target);
            ParamSpec { size, align }
        })
        .collect();
    layout_params_at(&specs, target.param_bank_base())
}

/// A parameter buffer larger than the target's runtime accepts: the launch cannot be compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamBufferTooLarge {
    /// Bytes the parameters need.
    pub size: u64,
    /// The largest buffer the target accepts ([`Target::param_buffer_limit`]).
    pub limit: u64,
}

impl std::fmt::Display for ParamBufferTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the parameters need {} bytes, more than the {} a launch can pass", self.size, self.limit)
    }
}

impl std::error::Error for ParamBufferTooLarge {}

/// A parameter buffer over the documented 4096 bytes that the target still accepts (sm_70+ at
/// 64 bits, CUDA 12.1 and newer): runtimes before CUDA 12.1 refuse the launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamBufferOver4K {
    /// Bytes the parameters need.
    pub size: u64,
}

impl std::fmt::Display for ParamBufferOver4K {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the parameters need {} bytes, more than 4096; runtimes before CUDA 12.1 refuse the launch", self.size)
    }
}

impl ParamLayout {
    /// The size check of the target: `Err` over [`Target::param_buffer_limit`] (the diagnostic
    /// E-code `ParamBufferTooLarge` of the `.cdp` front end), `Ok(Some(_))` over 4096 bytes where
    /// the target allows more (the warning `ParamBufferOver4K`), `Ok(None)` otherwise.
    ///
    /// ```
    /// use cdpc::layout::{layout_params, ParamSpec};
    /// use cdpc::{SmVersion, Target};
    /// let big = layout_params(&[ParamSpec::new(8000, 8)]);
    /// let sm90 = Target::default();
    /// assert_eq!(big.check_size(&sm90).unwrap().unwrap().size, 8000); // a warning
    /// let sm60 = Target { sm: SmVersion(60), ..Target::default() };
    /// assert_eq!(big.check_size(&sm60).unwrap_err().limit, 4096); // an error
    /// ```
    pub fn check_size(&self, target: &Target) -> Result<Option<ParamBufferOver4K>, ParamBufferTooLarge> {
        let limit = target.param_buffer_limit();
        if self.size > limit {
            return Err(ParamBufferTooLarge { size: self.size, limit });
        }
        if self.size > PARAM_BUFFER_DOCUMENTED_MAX_BYTES {
            return Ok(Some(ParamBufferOver4K { size: self.size }));
        }
        Ok(None)
    }
}

/// [`layout_params`] followed by [`ParamLayout::check_size`]: the layout and a possible
/// warning, or the error for a buffer the target cannot pass.
pub fn checked_layout(params: &[ParamSpec], target: &Target) -> Result<(ParamLayout, Option<ParamBufferOver4K>), ParamBufferTooLarge> {
    let layout = layout_params_at(params, target.param_bank_base());
    let warning = layout.check_size(target)?;
    Ok((layout, warning))
}

#[cfg(test)]
mod tests {
    //! Hand-computed layouts. The nvcc-derived oracle over thousands of random signatures is a
    //! separate test (tests/layout_oracle.rs); these pin the rules on cases small enough to check by eye.
    use super::*;
    use crate::target::{AddressSize, LaunchAbi, SmVersion};
    use crate::types::{FloatKind, IntKind, StructId};

    /// One struct table for the tests: S0 = { char c; double d; } (size 16, align 8),
    /// S1 = { char a, b, c; } (size 3, align 1).
    struct Table;
    impl StructLayouts for Table {
        fn struct_size_align(&self, id: StructId) -> (u64, u64) {
            [(16, 8), (3, 1)][id.0 as usize]
        }
        fn struct_name(&self, id: StructId) -> &str {
            ["S0", "S1"][id.0 as usize]
        }
    }

    fn target64() -> Target {
        Target::default()
    }

    fn target32() -> Target {
        Target { sm: SmVersion(90), address_size: AddressSize::Bits32, launch_abi: LaunchAbi::V1, ..Default::default() }
    }

    fn check(params: &[Type], target: Target, offsets: &[u64], size: u64, align: u64) {
        let layout = param_layout(params, &Table, &target);
        assert_eq!(layout, ParamLayout { offsets: offsets.to_vec(), size, align }, "{params:?}");
    }

    #[test]
    fn nvcc_hello_child_signature() {
        // child(int *data, double x, char c, int n): nvcc 13.5 stores at 0, 8, 16, 20
        // (reference/nvcc-13.5-hello.ptx).
        let params = [Type::pointer_to(Type::INT), Type::DOUBLE, Type::CHAR, Type::INT];
        check(&params, target64(), &[0, 8, 16, 20], 24, 8);
    }

    #[test]
    fn no_parameters() {
        check(&[], target64(), &[], 0, 1);
    }

    #[test]
    fn small_types_pack_without_padding() {
        let params = [Type::CHAR, Type::Int(IntKind::Short), Type::BOOL, Type::INT];
        check(&params, target64(), &[0, 2, 4, 8], 12, 4);
    }

    #[test]
    fn trailing_padding_is_not_counted() {
        let params = [Type::DOUBLE, Type::CHAR];
        check(&params, target64(), &[0, 8], 9, 8);
    }

    #[test]
    fn dim3_and_structs_use_their_own_alignment() {
        let params = [Type::CHAR, Type::Dim3, Type::CHAR, Type::Struct(StructId(0)), Type::Struct(StructId(1))];
        check(&params, target64(), &[0, 4, 16, 24, 40], 43, 8);
    }

    #[test]
    fn pointers_and_long_follow_the_address_size() {
        let params = [Type::CHAR, Type::pointer_to(Type::FLOAT), Type::Int(IntKind::Long), Type::Float(FloatKind::Double)];
        check(&params, target64(), &[0, 8, 16, 24], 32, 8);
        check(&params, target32(), &[0, 4, 8, 16], 24, 8);
    }

    #[test]
    fn sizes_and_alignments_entry_point_matches_types() {
        let params = [Type::CHAR, Type::Dim3, Type::DOUBLE];
        let specs: Vec<ParamSpec> = params
            .iter()
            .map(|t| {
                let (size, align) = size_align(t, &Table, &target64());
                ParamSpec::new(size, align)
            })
            .collect();
        assert_eq!(layout_params(&specs), param_layout(&params, &Table, &target64()));
        assert_eq!(layout_params(&[ParamSpec::new(3, 0)]).align, 1);
    }

    #[test]
    fn size_check_per_target() {
        let at = |size: u64| ParamLayout { offsets: vec![0], size, align: 1 };
        let sm90 = target64();
        let sm60 = Target { sm: SmVersion(60), ..target64() };
        assert_eq!(at(4096).check_size(&sm90), Ok(None));
        assert_eq!(at(4097).check_size(&sm90), Ok(Some(ParamBufferOver4K { size: 4097 })));
        assert_eq!(at(32764).check_size(&sm90), Ok(Some(ParamBufferOver4K { size: 32764 })));
        assert_eq!(at(32765).check_size(&sm90), Err(ParamBufferTooLarge { size: 32765, limit: 32764 }));
        assert_eq!(at(4097).check_size(&sm60), Err(ParamBufferTooLarge { size: 4097, limit: 4096 }));
        assert_eq!(at(4097).check_size(&target32()), Err(ParamBufferTooLarge { size: 4097, limit: 4096 }));
        let (layout, warning) = checked_layout(&[ParamSpec::new(5000, 8)], &sm90).unwrap();
        assert_eq!((layout.size, warning), (5000, Some(ParamBufferOver4K { size: 5000 })));
    }

    #[test]
    fn streams_are_pointers() {
        check(&[Type::INT, Type::Stream], target64(), &[0, 8], 16, 8);
    }
}
