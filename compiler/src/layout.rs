//! Where each argument goes in a child launch's parameter buffer.
//!
//! The device runtime forbids reordering: parameters are placed in declaration order, each at
//! the next offset that is a multiple of its alignment. The buffer's alignment is the largest
//! parameter alignment (what the documented ABI passes to `cudaGetParameterBuffer`), and its
//! size is the end of the last parameter, not rounded up: the total nvcc records in the cubin
//! (`EIATTR_CBANK_PARAM_SIZE`) and ptxas's "uses too much parameter space" figure. (nvcc's front
//! end, in "Formal parameter space overflowed (N bytes required ...)", counts N without padding.)
//! `tests/layout_oracle.rs` checks all of this against nvcc.

use crate::target::Target;
use crate::types::{round_up, size_align, StructLayouts, Type};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    /// Byte offset of each parameter, in declaration order.
    pub offsets: Vec<u64>,
    /// Bytes the buffer must hold.
    pub size: u64,
    /// Largest alignment of any parameter; 1 for a kernel without parameters.
    pub align: u64,
}

/// Lays out `params` (the kernel's parameter types, in order).
pub fn param_layout<'a>(
    params: impl IntoIterator<Item = &'a Type>,
    structs: &dyn StructLayouts,
    target: &Target,
) -> ParamLayout {
    let mut offsets = Vec::new();
    let mut end = 0u64;
    let mut max_align = 1u64;
    for ty in params {
        let (size, align) = size_align(ty, structs, target);
        let offset = round_up(end, align);
        offsets.push(offset);
        end = offset.saturating_add(size);
        max_align = max_align.max(align);
    }
    ParamLayout { offsets, size: end, align: max_align }
}

#[cfg(test)]
mod tests {
    //! Hand-computed layouts. The nvcc-derived oracle over thousands of random signatures is a
    //! separate test (issue 3); these pin the rules on cases small enough to check by eye.
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
        Target { sm: SmVersion(90), address_size: AddressSize::Bits32, launch_abi: LaunchAbi::V1 }
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
    fn streams_are_pointers() {
        check(&[Type::INT, Type::Stream], target64(), &[0, 8], 16, 8);
    }
}
