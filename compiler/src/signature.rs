//! The kernels' and device functions' parameter lists, as host code needs them: to launch a
//! kernel with typed arguments (the Python package's `Compiled.kernels`, the typed launchers
//! that `cdpc-build` generates for cudarc) or to declare a `__device__` function to another
//! linker (numba-cuda's `declare_device`).
//!
//! A signature is plain data taken from the checked program: the symbol (cdpc does not mangle
//! names), each parameter's C type as written, a [`ValueKind`] that says how to pass it, and its
//! size, alignment and offset in the kernel's parameter buffer (the layout of
//! [`crate::layout`], the one nvcc uses).
//!
//! ```
//! use cdpc::driver::{compile_artifacts, CompileOptions};
//! use cdpc::signature::{FunctionKind, Scalar, ValueKind};
//!
//! let source = r#"
//!     extern "C" __global__ void child(int *data, int add) { data[threadIdx.x] += add; }
//!     extern "C" __global__ void parent(const float *in, double x, char c) { }
//! "#;
//! let out = compile_artifacts(source, &CompileOptions::default(), false).unwrap();
//! let parent = out.signatures.iter().find(|s| s.name == "parent").unwrap();
//! assert_eq!(parent.kind, FunctionKind::Kernel);
//! let offsets: Vec<u64> = parent.params.iter().map(|p| p.offset).collect();
//! assert_eq!(offsets, [0, 8, 16]);
//! assert_eq!(parent.params[0].c_type, "const float *");
//! assert_eq!(parent.params[0].kind, ValueKind::Pointer { pointee: Some(Scalar::F32), is_const: true });
//! assert_eq!(parent.params[2].kind, ValueKind::Scalar(Scalar::I8));
//! ```

use crate::front::cdp::hir;
use crate::layout::param_layout;
use crate::types::{DisplayType, FloatKind, IntKind, Type};

/// Whether a function is a kernel or a device function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// `__global__`: launched with a grid.
    Kernel,
    /// `__device__` (or `__host__ __device__`): called from device code.
    Device,
}

/// A value of a C scalar type, by its machine representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `char`, `signed char`.
    I8,
    /// `unsigned char`.
    U8,
    /// `short`.
    I16,
    /// `unsigned short`.
    U16,
    /// `int`, `cudaError_t`.
    I32,
    /// `unsigned int`.
    U32,
    /// `long` (64-bit targets), `long long`.
    I64,
    /// `unsigned long` (64-bit targets), `unsigned long long`, `size_t`.
    U64,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl Scalar {
    /// NumPy's dtype name for it: `"int32"`, `"float64"`, `"bool"`.
    pub fn numpy_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "int8",
            Scalar::U8 => "uint8",
            Scalar::I16 => "int16",
            Scalar::U16 => "uint16",
            Scalar::I32 => "int32",
            Scalar::U32 => "uint32",
            Scalar::I64 => "int64",
            Scalar::U64 => "uint64",
            Scalar::F32 => "float32",
            Scalar::F64 => "float64",
        }
    }

    /// The Rust type of the same representation (`bool`, `i8`, ..., `f64`).
    pub fn rust_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
            Scalar::I16 => "i16",
            Scalar::U16 => "u16",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    fn of(ty: &Type, module: &hir::Module) -> Option<Scalar> {
        Some(match ty {
            Type::CudaError => Scalar::I32,
            Type::Float(FloatKind::Float) => Scalar::F32,
            Type::Float(FloatKind::Double) => Scalar::F64,
            Type::Int(kind) => {
                let signed = kind.is_signed(&module.target);
                match (kind, kind.bytes(&module.target), signed) {
                    (IntKind::Bool, _, _) => Scalar::Bool,
                    (_, 1, true) => Scalar::I8,
                    (_, 1, false) => Scalar::U8,
                    (_, 2, true) => Scalar::I16,
                    (_, 2, false) => Scalar::U16,
                    (_, 4, true) => Scalar::I32,
                    (_, 4, false) => Scalar::U32,
                    (_, _, true) => Scalar::I64,
                    (_, _, false) => Scalar::U64,
                }
            }
            _ => return None,
        })
    }
}

/// How a parameter (or a return value) is passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// `void` (return types only).
    Void,
    /// A scalar by value.
    Scalar(Scalar),
    /// A pointer; `pointee` is its scalar element type, `None` for `void *`, pointers to
    /// structs and pointers to pointers (pass an address-sized integer).
    Pointer {
        /// The element type when it is a scalar.
        pointee: Option<Scalar>,
        /// Whether it is `const T *`.
        is_const: bool,
    },
    /// `cudaStream_t` or `cudaEvent_t`: an opaque pointer-sized handle.
    Handle,
    /// `dim3`: three `unsigned int`s.
    Dim3,
    /// A struct or an array by value: `size` bytes at `align`.
    Aggregate,
}

/// One parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name in the source.
    pub name: String,
    /// Its C type as a C programmer writes it (`const float *`).
    pub c_type: String,
    /// How to pass it.
    pub kind: ValueKind,
    /// `sizeof`, in bytes.
    pub size: u64,
    /// `alignof`, in bytes.
    pub align: u64,
    /// Its offset in the kernel's parameter buffer (for device functions, the same rule).
    pub offset: u64,
}

/// One function's symbol and parameter list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The symbol in the PTX and the cubin (what `cuModuleGetFunction` takes).
    pub name: String,
    /// Kernel or device function.
    pub kind: FunctionKind,
    /// The return type's C spelling (`void` for kernels).
    pub return_c_type: String,
    /// How the return value is passed.
    pub return_kind: ValueKind,
    /// The parameters in order.
    pub params: Vec<Param>,
    /// Bytes of the parameter buffer (the end of the last parameter).
    pub param_bytes: u64,
}

fn kind_of(ty: &Type, module: &hir::Module) -> ValueKind {
    if let Some(s) = Scalar::of(ty, module) {
        return ValueKind::Scalar(s);
    }
    match ty {
        Type::Void => ValueKind::Void,
        Type::Pointer { pointee, pointee_const, .. } => ValueKind::Pointer { pointee: Scalar::of(pointee, module), is_const: *pointee_const },
        Type::Stream | Type::Event | Type::FnPtr(_) => ValueKind::Handle,
        Type::Dim3 => ValueKind::Dim3,
        _ => ValueKind::Aggregate,
    }
}

/// The signatures of the functions `module` defines (prototypes without a body are left out),
/// in source order. Launch aggregation's clones (`K__agg`) are kernels like any other.
pub fn signatures(module: &hir::Module) -> Vec<Signature> {
    module
        .functions
        .iter()
        .filter(|f| f.body.is_some())
        .map(|f| {
            let types: Vec<&Type> = f.param_types().collect();
            let layout = param_layout(types.iter().copied(), module, &module.target);
            let params = f
                .params
                .iter()
                .zip(&layout.offsets)
                .map(|(id, &offset)| {
                    let local = f.local(*id);
                    let (size, align) = module.size_align(&local.ty);
                    Param { name: local.name.clone(), c_type: DisplayType { ty: &local.ty, structs: module }.to_string(), kind: kind_of(&local.ty, module), size, align, offset }
                })
                .collect();
            Signature {
                name: f.name.clone(),
                kind: if f.kind == hir::FunctionKind::Kernel { FunctionKind::Kernel } else { FunctionKind::Device },
                return_c_type: DisplayType { ty: &f.return_type, structs: module }.to_string(),
                return_kind: kind_of(&f.return_type, module),
                params,
                param_bytes: layout.size,
            }
        })
        .collect()
}
