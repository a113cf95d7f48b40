//! The CUDA types of the device-runtime API as language types: `cudaFuncAttributes`,
//! `cudaPitchedPtr`, `cudaExtent`, `cudaPos` and `cudaMemcpy3DParms` are built-in structs with
//! nvcc's layout; `cudaGraphExec_t`, `cudaGraphDeviceNode_t` and `cudaArray_t` point to
//! undefined structs, as in `driver_types.h`; the enums (`cudaLimit`, `cudaFuncCache`, ...) are
//! `int`; `cudaGraphConditionalHandle` is `unsigned long long`.
//!
//! A built-in struct enters the module the first time a program names it, so a program that
//! uses none has exactly the structs it declares. A struct the program defines itself under
//! one of these names wins (it is registered before any type is resolved).

use super::Context;
use crate::front::cdp::hir;
use crate::target::Target;
use crate::types::{round_up, StructId, Type, VectorType};
use runtime_shim::entry_points::CType;
use runtime_shim::types::{CEnum, CHandle, CStruct, FieldType, GRAPH_CONDITIONAL_HANDLE};

impl Context {
    /// The type a built-in CUDA type name stands for, if `name` is one.
    pub(super) fn cuda_type(&mut self, name: &str) -> Option<Type> {
        if let Some(s) = CStruct::from_c_name(name) {
            return Some(self.cuda_struct(s));
        }
        if let Some(h) = CHandle::from_c_name(name) {
            return Some(self.handle_type(h));
        }
        if CEnum::from_c_name(name).is_some() {
            return Some(Type::INT);
        }
        if let Some(v) = VectorType::from_name(name) {
            return Some(self.vector_struct(v));
        }
        (name == GRAPH_CONDITIONAL_HANDLE).then_some(Type::ULONGLONG)
    }

    /// A built-in struct, registered on first use (with its fields' structs before it).
    pub(super) fn cuda_struct(&mut self, s: CStruct) -> Type {
        if let Some(id) = self.struct_names.get(s.c_name()) {
            return Type::Struct(*id);
        }
        let Some(fields) = s.fields() else {
            return Type::Struct(self.opaque_struct(s.c_name()));
        };
        let mut hir_fields = Vec::with_capacity(fields.len());
        let (mut offset, mut align) = (0u64, 1u64);
        for (name, field) in fields {
            let ty = self.field_type(*field);
            let (size, field_align) = self.size_align(&ty);
            offset = round_up(offset, field_align);
            hir_fields.push(hir::Field { name: (*name).to_string(), ty, offset, volatile: false, bits: None });
            offset += size;
            align = align.max(field_align);
        }
        let def = hir::StructDef { name: s.c_name().to_string(), fields: hir_fields, size: round_up(offset, align), align, span: Default::default(), union: false, tagless: false };
        Type::Struct(self.add_builtin_struct(def, true))
    }

    /// A vector type (`float2`, ...), a built-in struct of fields `x` to `w` registered on
    /// first use with `vector_types.h`'s alignment.
    pub(super) fn vector_struct(&mut self, v: VectorType) -> Type {
        if let Some(id) = self.struct_names.get(v.name) {
            return Type::Struct(*id);
        }
        let elem = v.elem_type();
        let (size, _) = self.size_align(&elem);
        let fields = v.field_names().iter().zip(0u64..).map(|(name, i)| hir::Field { name: (*name).to_string(), ty: elem.clone(), offset: i * size, volatile: false, bits: None }).collect();
        let align = v.align(&self.target);
        let def = hir::StructDef { name: v.name.to_string(), fields, size: round_up(size * u64::from(v.len), align), align, span: Default::default(), union: false, tagless: false };
        Type::Struct(self.add_builtin_struct(def, true))
    }

    /// `T *` for a handle typedef `typedef struct T *name;`.
    fn handle_type(&mut self, h: CHandle) -> Type {
        Type::pointer_to(Type::Struct(self.opaque_struct(h.struct_name())))
    }

    /// A struct that is named but never defined (incomplete: usable only through pointers).
    fn opaque_struct(&mut self, name: &str) -> StructId {
        if let Some(id) = self.struct_names.get(name) {
            return *id;
        }
        let def = hir::StructDef { name: name.to_string(), fields: Vec::new(), size: 0, align: 1, span: Default::default(), union: false, tagless: false };
        self.add_builtin_struct(def, false)
    }

    fn add_builtin_struct(&mut self, def: hir::StructDef, complete: bool) -> StructId {
        let id = StructId(self.structs.len() as u32);
        self.struct_names.insert(def.name.clone(), id);
        self.structs.push(def);
        self.complete.push(complete);
        id
    }

    fn field_type(&mut self, field: FieldType) -> Type {
        match field {
            FieldType::Int | FieldType::Enum(_) => Type::INT,
            FieldType::SizeT => Type::size_t(),
            FieldType::VoidPtr => Type::pointer_to(Type::Void),
            FieldType::Struct(s) => self.cuda_struct(s),
            FieldType::Handle(h) => self.handle_type(h),
            FieldType::IntArray(n) => Type::Array { elem: Box::new(Type::INT), len: u64::from(n) },
        }
    }

    /// The kernel-language type of a device-runtime C type.
    pub(super) fn c_type(&mut self, ctype: CType) -> Type {
        let void_ptr = Type::pointer_to(Type::Void);
        match ctype {
            CType::Int | CType::Enum(_) => Type::INT,
            CType::UInt => Type::UINT,
            CType::Bool => Type::BOOL,
            CType::SizeT => Type::size_t(),
            CType::ULongLong => Type::ULONGLONG,
            CType::Error => Type::CudaError,
            CType::VoidPtr => void_ptr,
            CType::ConstVoidPtr => Type::const_pointer_to(Type::Void),
            CType::ConstCharPtr => Type::const_pointer_to(Type::CHAR),
            CType::VoidPtrPtr => Type::pointer_to(void_ptr),
            CType::IntPtr | CType::EnumPtr(_) => Type::pointer_to(Type::INT),
            CType::UIntPtr => Type::pointer_to(Type::UINT),
            CType::SizeTPtr => Type::pointer_to(Type::size_t()),
            CType::Stream => Type::Stream,
            CType::StreamPtr => Type::pointer_to(Type::Stream),
            CType::Event => Type::Event,
            CType::EventPtr => Type::pointer_to(Type::Event),
            CType::Dim3 => Type::Dim3,
            CType::Struct(s) => self.cuda_struct(s),
            CType::StructPtr(s) => Type::pointer_to(self.cuda_struct(s)),
            CType::ConstStructPtr(s) => Type::const_pointer_to(self.cuda_struct(s)),
            CType::Handle(h) => self.handle_type(h),
        }
    }
}

/// The layout sema gives a built-in struct: size, alignment and each field's offset. Public so
/// that the nvcc oracle test can compare it with what nvcc computes.
pub fn builtin_struct_layout(s: CStruct, target: Target) -> Option<(u64, u64, Vec<(String, u64)>)> {
    let mut cx = Context::new(target);
    let Type::Struct(id) = cx.cuda_struct(s) else { return None };
    let def = &cx.structs[id.0 as usize];
    cx.complete[id.0 as usize].then(|| (def.size, def.align, def.fields.iter().map(|f| (f.name.clone(), f.offset)).collect()))
}
