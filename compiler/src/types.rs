//! The types of the kernel language and their sizes and alignments.
//!
//! Sizes follow nvcc on Linux: LP64 for 64-bit output (long is 8 bytes), ILP32 for 32-bit PTX.
//!
//! Besides the scalar and aggregate types: `Type::FnPtr`, a pointer to a device function with its
//! `FnSig`; CUDA's vector types as data (`VectorType`: element, length, `vector_types.h`'s
//! alignment); and the plain values the syntax tree and the HIR share (`LaunchBounds`), kept here
//! in the lower layer.

use crate::target::Target;
use std::fmt;

/// Index of a struct in the HIR module's `structs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StructId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntKind {
    Bool,
    /// Plain `char`, signed on every platform nvcc targets.
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    LongLong,
    ULongLong,
}

impl IntKind {
    pub fn is_signed(self, _target: &Target) -> bool {
        matches!(self, IntKind::Char | IntKind::SChar | IntKind::Short | IntKind::Int | IntKind::Long | IntKind::LongLong)
    }

    pub fn bytes(self, target: &Target) -> u64 {
        match self {
            IntKind::Bool | IntKind::Char | IntKind::SChar | IntKind::UChar => 1,
            IntKind::Short | IntKind::UShort => 2,
            IntKind::Int | IntKind::UInt => 4,
            IntKind::Long | IntKind::ULong => target.long_bytes(),
            IntKind::LongLong | IntKind::ULongLong => 8,
        }
    }

    pub fn bits(self, target: &Target) -> u32 {
        if self == IntKind::Bool {
            1
        } else {
            (self.bytes(target) * 8) as u32
        }
    }

    /// C's integer conversion rank, used by the usual arithmetic conversions.
    pub fn rank(self) -> u32 {
        match self {
            IntKind::Bool => 0,
            IntKind::Char | IntKind::SChar | IntKind::UChar => 1,
            IntKind::Short | IntKind::UShort => 2,
            IntKind::Int | IntKind::UInt => 3,
            IntKind::Long | IntKind::ULong => 4,
            IntKind::LongLong | IntKind::ULongLong => 5,
        }
    }

    pub fn to_unsigned(self) -> IntKind {
        match self {
            IntKind::Char | IntKind::SChar => IntKind::UChar,
            IntKind::Short => IntKind::UShort,
            IntKind::Int => IntKind::UInt,
            IntKind::Long => IntKind::ULong,
            IntKind::LongLong => IntKind::ULongLong,
            other => other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IntKind::Bool => "bool",
            IntKind::Char => "char",
            IntKind::SChar => "signed char",
            IntKind::UChar => "unsigned char",
            IntKind::Short => "short",
            IntKind::UShort => "unsigned short",
            IntKind::Int => "int",
            IntKind::UInt => "unsigned int",
            IntKind::Long => "long",
            IntKind::ULong => "unsigned long",
            IntKind::LongLong => "long long",
            IntKind::ULongLong => "unsigned long long",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatKind {
    Float,
    Double,
}

impl FloatKind {
    pub fn bytes(self) -> u64 {
        match self {
            FloatKind::Float => 4,
            FloatKind::Double => 8,
        }
    }
}

/// C's type qualifiers, as they qualify what a pointer points to or an object (a variable, a
/// struct member): `const` forbids stores, `volatile` makes every load and store happen, in
/// order, as written (PTX `ld.volatile`/`st.volatile`, as nvcc emits them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Quals {
    pub is_const: bool,
    pub is_volatile: bool,
}

impl Quals {
    pub const NONE: Quals = Quals { is_const: false, is_volatile: false };
    pub const CONST: Quals = Quals { is_const: true, is_volatile: false };

    /// The qualifiers of `self` that `other` lacks: what a conversion to `other` would drop.
    pub fn without(self, other: Quals) -> Quals {
        Quals { is_const: self.is_const && !other.is_const, is_volatile: self.is_volatile && !other.is_volatile }
    }

    /// Whether `self` has every qualifier of `other`.
    pub fn contains(self, other: Quals) -> bool {
        (self.is_const || !other.is_const) && (self.is_volatile || !other.is_volatile)
    }

    /// As written before a type: `""`, `"const "`, `"volatile "`, `"const volatile "`.
    pub fn prefix(self) -> &'static str {
        match (self.is_const, self.is_volatile) {
            (false, false) => "",
            (true, false) => "const ",
            (false, true) => "volatile ",
            (true, true) => "const volatile ",
        }
    }
}

/// A user enum: its index in the module's enums (`hir::Module::enums`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EnumId(pub u32);

/// A language type. Cheap to clone and compared structurally; struct types compare by id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Void,
    Int(IntKind),
    Float(FloatKind),
    /// A pointer, with the qualifiers of what it points to (`const volatile int *`).
    Pointer {
        pointee: Box<Type>,
        pointee_const: bool,
        pointee_volatile: bool,
    },
    Array {
        elem: Box<Type>,
        len: u64,
    },
    Struct(StructId),
    /// CUDA's `dim3`: three `unsigned int`s, 12 bytes, 4-aligned.
    Dim3,
    /// `cudaStream_t`, an opaque pointer.
    Stream,
    /// `cudaEvent_t`, an opaque pointer.
    Event,
    /// `cudaError_t`, an enum of `int` size that converts to integers but not back.
    CudaError,
    /// A user enum (`enum Mode { ... }`): its underlying integer type for values, layout and
    /// arithmetic (after promotion), its name for symbols (`4Mode`, as nvcc mangles it).
    Enum {
        id: EnumId,
        underlying: IntKind,
    },
    /// A pointer to a device function, `int (*)(int)`: its return and parameter types. Held
    /// like a pointer, called indirectly; no arithmetic.
    FnPtr(Box<FnSig>),
}

/// The type of the functions a [`Type::FnPtr`] points to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FnSig {
    pub ret: Type,
    pub params: Vec<Type>,
}

impl Type {
    pub const INT: Type = Type::Int(IntKind::Int);
    pub const UINT: Type = Type::Int(IntKind::UInt);
    pub const BOOL: Type = Type::Int(IntKind::Bool);
    pub const CHAR: Type = Type::Int(IntKind::Char);
    pub const ULONGLONG: Type = Type::Int(IntKind::ULongLong);
    pub const LONGLONG: Type = Type::Int(IntKind::LongLong);
    pub const FLOAT: Type = Type::Float(FloatKind::Float);
    pub const DOUBLE: Type = Type::Float(FloatKind::Double);

    pub fn pointer_to(pointee: Type) -> Type {
        Type::qualified_pointer_to(pointee, Quals::NONE)
    }

    pub fn const_pointer_to(pointee: Type) -> Type {
        Type::qualified_pointer_to(pointee, Quals::CONST)
    }

    pub fn qualified_pointer_to(pointee: Type, quals: Quals) -> Type {
        Type::Pointer { pointee: Box::new(pointee), pointee_const: quals.is_const, pointee_volatile: quals.is_volatile }
    }

    /// The qualifiers of a pointer's pointee; none for other types.
    pub fn pointee_quals(&self) -> Quals {
        match self {
            Type::Pointer { pointee_const, pointee_volatile, .. } => Quals { is_const: *pointee_const, is_volatile: *pointee_volatile },
            _ => Quals::NONE,
        }
    }

    /// `size_t` is `unsigned long`: 8 bytes at 64 bits and 4 at 32, like the host's.
    pub fn size_t() -> Type {
        Type::Int(IntKind::ULong)
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, Type::Int(_) | Type::CudaError | Type::Enum { .. })
    }

    pub fn is_arithmetic(&self) -> bool {
        matches!(self, Type::Int(_) | Type::Float(_) | Type::CudaError | Type::Enum { .. })
    }

    pub fn is_scalar(&self) -> bool {
        self.is_arithmetic() || self.is_pointer_like()
    }

    pub fn is_fn_ptr(&self) -> bool {
        matches!(self, Type::FnPtr(_))
    }

    pub fn is_pointer(&self) -> bool {
        matches!(self, Type::Pointer { .. })
    }

    /// Pointers, the opaque handles that are pointers underneath, and pointers to functions.
    pub fn is_pointer_like(&self) -> bool {
        matches!(self, Type::Pointer { .. } | Type::Stream | Type::Event | Type::FnPtr(_))
    }

    pub fn is_void(&self) -> bool {
        matches!(self, Type::Void)
    }

    pub fn pointee(&self) -> Option<&Type> {
        match self {
            Type::Pointer { pointee, .. } => Some(pointee),
            _ => None,
        }
    }

    pub fn is_complete_object(&self) -> bool {
        !matches!(self, Type::Void | Type::Array { len: 0, .. })
    }
}

/// What size and alignment queries need to know about struct types.
pub trait StructLayouts {
    fn struct_size_align(&self, id: StructId) -> (u64, u64);
    fn struct_name(&self, id: StructId) -> &str;
    /// The keyword C code writes before the struct's name (`struct`, `union`), or `None` when
    /// the name alone is the type (a tagless struct's typedef name).
    fn struct_keyword(&self, _id: StructId) -> Option<&'static str> {
        Some("struct")
    }
    /// A user enum's name (`Mode`), for symbols.
    fn enum_name(&self, _id: EnumId) -> &str {
        "enum"
    }
    /// Whether the enum has no tag (`typedef enum { ... } Name;`), so that C code writes its
    /// name without `enum`.
    fn enum_tagless(&self, _id: EnumId) -> bool {
        false
    }
}

/// Size and alignment in bytes, as nvcc lays the type out in memory and in a parameter buffer.
pub fn size_align(ty: &Type, structs: &dyn StructLayouts, target: &Target) -> (u64, u64) {
    match ty {
        Type::Void => (1, 1),
        Type::Int(kind) => {
            let bytes = kind.bytes(target);
            (bytes, bytes)
        }
        Type::CudaError => (4, 4),
        Type::Enum { underlying, .. } => size_align(&Type::Int(*underlying), structs, target),
        Type::Float(kind) => (kind.bytes(), kind.bytes()),
        Type::Pointer { .. } | Type::Stream | Type::Event | Type::FnPtr(_) => {
            let bytes = target.address_size.pointer_bytes();
            (bytes, bytes)
        }
        Type::Array { elem, len } => {
            let (size, align) = size_align(elem, structs, target);
            (size.saturating_mul(*len), align)
        }
        Type::Struct(id) => structs.struct_size_align(*id),
        Type::Dim3 => (12, 4),
    }
}

pub fn round_up(offset: u64, align: u64) -> u64 {
    offset.div_ceil(align.max(1)).saturating_mul(align.max(1))
}

/// Formats a type the way a C programmer writes it, for diagnostics.
pub struct DisplayType<'a> {
    pub ty: &'a Type,
    pub structs: &'a dyn StructLayouts,
}

impl fmt::Display for DisplayType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ty {
            Type::Void => f.write_str("void"),
            Type::Int(kind) => f.write_str(kind.name()),
            Type::Float(FloatKind::Float) => f.write_str("float"),
            Type::Float(FloatKind::Double) => f.write_str("double"),
            Type::Pointer { pointee, .. } => {
                let inner = DisplayType { ty: pointee, structs: self.structs };
                write!(f, "{}{inner} *", self.ty.pointee_quals().prefix())
            }
            Type::Array { elem, len } => {
                write!(f, "{}[{}]", DisplayType { ty: elem, structs: self.structs }, len)
            }
            Type::Struct(id) => match self.structs.struct_keyword(*id) {
                Some(keyword) => write!(f, "{keyword} {}", self.structs.struct_name(*id)),
                None => f.write_str(self.structs.struct_name(*id)),
            },
            Type::Dim3 => f.write_str("dim3"),
            Type::Stream => f.write_str("cudaStream_t"),
            Type::Event => f.write_str("cudaEvent_t"),
            Type::CudaError => f.write_str("cudaError_t"),
            Type::Enum { id, .. } if self.structs.enum_tagless(*id) => f.write_str(self.structs.enum_name(*id)),
            Type::Enum { id, .. } => write!(f, "enum {}", self.structs.enum_name(*id)),
            Type::FnPtr(sig) => {
                let params: Vec<String> = sig.params.iter().map(|p| DisplayType { ty: p, structs: self.structs }.to_string()).collect();
                write!(f, "{} (*)({})", DisplayType { ty: &sig.ret, structs: self.structs }, if params.is_empty() { "void".to_string() } else { params.join(", ") })
            }
        }
    }
}

/// One of CUDA's built-in vector types (`vector_types.h`): `float2`, `uchar4`, `double4_32a`...
/// Each is a struct of `len` fields `x`, `y`, `z`, `w` of the element type, aligned as nvcc's
/// header aligns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorType {
    pub name: &'static str,
    pub elem: VectorElem,
    pub len: u8,
    /// The `_16a`/`_32a` forms of CUDA 13 fix the alignment of the 4-vectors of 8-byte elements.
    pub fixed_align: Option<u64>,
}

/// The element types of the vector types (`char` vectors hold `signed char`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorElem {
    Int(IntKind),
    Float(FloatKind),
}

/// The element-name stems of the vector types, in `vector_types.h`'s order.
const VECTOR_STEMS: &[(&str, VectorElem)] = &[
    ("char", VectorElem::Int(IntKind::SChar)),
    ("uchar", VectorElem::Int(IntKind::UChar)),
    ("short", VectorElem::Int(IntKind::Short)),
    ("ushort", VectorElem::Int(IntKind::UShort)),
    ("int", VectorElem::Int(IntKind::Int)),
    ("uint", VectorElem::Int(IntKind::UInt)),
    ("long", VectorElem::Int(IntKind::Long)),
    ("ulong", VectorElem::Int(IntKind::ULong)),
    ("longlong", VectorElem::Int(IntKind::LongLong)),
    ("ulonglong", VectorElem::Int(IntKind::ULongLong)),
    ("float", VectorElem::Float(FloatKind::Float)),
    ("double", VectorElem::Float(FloatKind::Double)),
];

/// The names of every vector type, `char1` to `double4_32a`.
const VECTOR_NAMES: &[&str] = &[
    "char1",
    "char2",
    "char3",
    "char4",
    "uchar1",
    "uchar2",
    "uchar3",
    "uchar4",
    "short1",
    "short2",
    "short3",
    "short4",
    "ushort1",
    "ushort2",
    "ushort3",
    "ushort4",
    "int1",
    "int2",
    "int3",
    "int4",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "long1",
    "long2",
    "long3",
    "long4",
    "ulong1",
    "ulong2",
    "ulong3",
    "ulong4",
    "longlong1",
    "longlong2",
    "longlong3",
    "longlong4",
    "ulonglong1",
    "ulonglong2",
    "ulonglong3",
    "ulonglong4",
    "float1",
    "float2",
    "float3",
    "float4",
    "double1",
    "double2",
    "double3",
    "double4",
    "long4_16a",
    "long4_32a",
    "ulong4_16a",
    "ulong4_32a",
    "longlong4_16a",
    "longlong4_32a",
    "ulonglong4_16a",
    "ulonglong4_32a",
    "double4_16a",
    "double4_32a",
];

impl VectorType {
    /// The vector type called `name`, if it is one.
    pub fn from_name(name: &str) -> Option<VectorType> {
        let name = *VECTOR_NAMES.iter().find(|n| **n == name)?;
        let (base, fixed_align) = match name.split_once('_') {
            Some((base, "16a")) => (base, Some(16)),
            Some((base, _)) => (base, Some(32)),
            None => (name, None),
        };
        let (stem, digit) = base.split_at(base.len() - 1);
        let elem = VECTOR_STEMS.iter().find(|(s, _)| *s == stem)?.1;
        Some(VectorType { name, elem, len: digit.parse().ok()?, fixed_align })
    }

    /// Every vector type's name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        VECTOR_NAMES.iter().copied()
    }

    pub fn elem_type(self) -> Type {
        match self.elem {
            VectorElem::Int(kind) => Type::Int(kind),
            VectorElem::Float(kind) => Type::Float(kind),
        }
    }

    /// The fields' names, `x` to `w`.
    pub fn field_names(self) -> &'static [&'static str] {
        &["x", "y", "z", "w"][..usize::from(self.len)]
    }

    /// The alignment `vector_types.h` gives it: 2-vectors twice the element's (`float2` 8,
    /// `double2` 16), `char4` 4, `short4` 8, the other 4-vectors 16; 1- and 3-vectors the
    /// element's (`float3` is 12 bytes, 4-aligned).
    pub fn align(self, target: &Target) -> u64 {
        let elem = match self.elem {
            VectorElem::Int(kind) => kind.bytes(target),
            VectorElem::Float(kind) => kind.bytes(),
        };
        match (self.fixed_align, self.len) {
            (Some(align), _) => align,
            (None, 2) => 2 * elem,
            (None, 4) => (4 * elem).min(16),
            _ => elem,
        }
    }

    /// `long4`, `ulong4`, `longlong4`, `ulonglong4` and `double4` are deprecated in CUDA 13 in
    /// favour of their `_16a` and `_32a` forms; the replacement nvcc's warning names.
    pub fn deprecated(self) -> Option<String> {
        let eight = matches!(self.elem, VectorElem::Int(IntKind::Long | IntKind::ULong | IntKind::LongLong | IntKind::ULongLong) | VectorElem::Float(FloatKind::Double));
        (eight && self.len == 4 && self.fixed_align.is_none()).then(|| format!("{0}_16a or {0}_32a", self.name))
    }
}

/// The arguments of `__launch_bounds__`, integer constants (the front end folds them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub max_threads: u32,
    pub min_blocks: Option<u32>,
    pub max_blocks_per_cluster: Option<u32>,
}
