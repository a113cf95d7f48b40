//! The host-linkable object: an x86-64 ELF object, built by LLVM's X86 back end, that holds a
//! relocatable fat binary and what `nvcc -dc` puts beside it, so that `nvcc -dlink` and the
//! host linker treat it as one of nvcc's own objects:
//!
//! - the fat binary in section `__nv_relfatbin` and the module id (a C identifier) in
//!   `__nv_module_id`, which nvlink reads to write `__cudaRegisterLinkedBinary<ID>` into the
//!   device-link object;
//! - `__fatbinwrap<ID>` in `.nvFatBinSegment`: `{ 0x466243b1, 1, &fatbin, 0 }`;
//! - a constructor (in `.init_array`) calling `__cudaRegisterLinkedBinary<ID>(callback,
//!   &__fatbinwrap<ID>, &module_id, dummy)`; the callback registers each kernel's host stub with
//!   `__cudaRegisterFunction`;
//! - per kernel, the host stub under the kernel's own symbol (what a host program's `<<<>>>`
//!   calls after `__cudaPushCallConfiguration`): it pops the configuration and calls
//!   `cudaLaunchKernel` (nvcc's `__NV_LEGACY_LAUNCH` form), and a launcher
//!   `cdpc_launch_<symbol>(grid, block, shared_mem, stream, args...)` for host code that is no
//!   CUDA (g++ with the header the driver writes). A `static` kernel's stub is internal and it
//!   has no launcher, as nvcc's host code has no visible symbol for it.
//!
//! Parameters follow the System V x86-64 ABI (its section 3.2.3), as g++ and nvcc's host
//! compiler pass them: scalars and pointers in registers, and a struct by value (`dim3`
//! among them) classified eightbyte by eightbyte ([`Aggregate::classify`]): an eightbyte of
//! `float`s and `double`s only is passed in an SSE register, any other in a general one, and a
//! struct over 16 bytes, or one for whose eightbytes too few registers are left, in memory
//! (`byval`), as clang lowers them.

use super::{BackendError, R};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine, TargetTriple};
use inkwell::types::{AnyType, BasicMetadataTypeEnum, BasicType, BasicTypeEnum, StructType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, PointerValue, ValueKind};
use inkwell::{AddressSpace, IntPredicate, OptimizationLevel};
use std::sync::Once;

/// How a kernel parameter reaches the host stub.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostParam {
    /// An integer of this many bytes (1, 2, 4, 8; `bool` is 1).
    Int(u32),
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// A pointer or a stream or event handle.
    Pointer,
    /// `dim3`: 12 bytes in two registers.
    Dim3,
    /// A struct by value.
    Aggregate(Aggregate),
}

/// A scalar inside a struct, for its classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// An integer or pointer of this many bytes.
    Int(u8),
    /// `float`.
    F32,
    /// `double`.
    F64,
}

/// How one eightbyte of a struct is passed in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eightbyte {
    /// In a general register, as an integer of this many bytes (the last eightbyte's may be
    /// fewer than 8).
    Integer(u8),
    /// In an SSE register: one `float`,
    F32,
    /// two `float`s,
    F32x2,
    /// or one `double`.
    F64,
}

/// A struct by value as the System V x86-64 ABI passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aggregate {
    /// `sizeof`.
    pub size: u32,
    /// `alignof`.
    pub align: u32,
    /// Its eightbytes in registers (the second absent for a struct of at most 8 bytes, or
    /// one whose second eightbyte is padding); `None` for the MEMORY class.
    pub eightbytes: Option<(Eightbyte, Option<Eightbyte>)>,
}

impl Aggregate {
    /// Classifies a struct of `size` bytes at `align` from its scalars at their offsets.
    pub fn classify(size: u64, align: u64, leaves: &[(u64, Leaf)]) -> Aggregate {
        let memory = Aggregate { size: size as u32, align: align as u32, eightbytes: None };
        let leaf_size = |l: Leaf| match l {
            Leaf::Int(n) => n as u64,
            Leaf::F32 => 4,
            Leaf::F64 => 8,
        };
        if size > 16 || size == 0 || leaves.iter().any(|&(off, l)| off % leaf_size(l) != 0) {
            return memory;
        }
        let eightbyte = |i: u64| -> Option<Eightbyte> {
            let inside: Vec<(u64, Leaf)> = leaves.iter().copied().filter(|&(off, _)| off / 8 == i).collect();
            if inside.is_empty() {
                return None;
            }
            if inside.iter().all(|&(_, l)| matches!(l, Leaf::F32 | Leaf::F64)) {
                if inside.iter().any(|&(_, l)| l == Leaf::F64) {
                    return Some(Eightbyte::F64);
                }
                return Some(if inside.iter().any(|&(off, _)| off % 8 == 4) { Eightbyte::F32x2 } else { Eightbyte::F32 });
            }
            Some(Eightbyte::Integer((size - 8 * i).min(8) as u8))
        };
        match (eightbyte(0), if size > 8 { eightbyte(1) } else { None }) {
            (Some(lo), hi) => Aggregate { eightbytes: Some((lo, hi)), ..memory },
            // a struct that begins with padding cannot be written in C
            (None, _) => memory,
        }
    }

    /// `dim3`: three `unsigned int`s.
    pub const DIM3: Aggregate = Aggregate { size: 12, align: 4, eightbytes: Some((Eightbyte::Integer(8), Some(Eightbyte::Integer(4)))) };
}

/// How one parameter arrives, once registers are counted.
#[derive(Clone, Debug)]
enum Lowered<'ctx> {
    /// As one value of this type (a scalar or pointer).
    Scalar(BasicTypeEnum<'ctx>),
    /// As the values of its eightbytes, stored at offsets 0 and 8 of a struct of `size` bytes.
    Pieces { types: Vec<BasicTypeEnum<'ctx>>, size: u32, align: u32 },
    /// In memory: a pointer to the caller's copy (`byval`).
    Memory { size: u32, align: u32 },
}

/// One kernel with a host stub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKernel {
    /// Its symbol (the host stub's name and the name `__cudaRegisterFunction` registers).
    pub symbol: String,
    /// Its parameters.
    pub params: Vec<HostParam>,
    /// A `static` kernel: as nvcc makes it, its stub has internal linkage (no other object
    /// can launch it, and two objects may each have their own) and it gets no launcher.
    pub internal: bool,
}

/// What the host object holds.
#[derive(Clone, Debug)]
pub struct HostObjectSpec<'a> {
    /// The module id: a C identifier unique to this object.
    pub module_id: &'a str,
    /// The relocatable fat binary (`fatbinary --device-c`).
    pub fatbin: &'a [u8],
    /// The kernels to register and give host stubs.
    pub kernels: &'a [HostKernel],
    /// What the device code says to the device link's pool ([`mark_pool`]).
    pub pool: PoolMark,
}

/// The magic and version of `__fatBinC_Wrapper_t`.
const FATBIN_WRAPPER_MAGIC: u64 = 0x466243b1;

static INIT_X86: Once = Once::new();

fn x86_machine() -> R<TargetMachine> {
    INIT_X86.call_once(|| LlvmTarget::initialize_x86(&InitializationConfig::default()));
    let triple = TargetTriple::create("x86_64-unknown-linux-gnu");
    let target = LlvmTarget::from_triple(&triple).map_err(|e| BackendError::Target(format!("x86-64: {e}")))?;
    let machine = target
        .create_target_machine(&triple, "x86-64", "", OptimizationLevel::Default, RelocMode::PIC, CodeModel::Default)
        .ok_or_else(|| BackendError::Target("cannot create an x86-64 target machine".into()))?;
    super::use_init_array(&machine);
    Ok(machine)
}

/// Clang's CUDA module constructor (`__cuda_module_ctor`, which registers the file's kernels
/// and variables) first in `module`'s `llvm.global_ctors`, before the file's static
/// initializers, as nvcc's object runs its `__sti____cudaRegisterAll` first (measured: its
/// `.init_array` lists it before `_GLOBAL__sub_I_*`). Clang lists it last, so a static object
/// whose constructor launches one of the file's kernels launched it unregistered:
/// cms-patatrack's test-dynamic-parallelism, a library whose global object launches a kernel
/// when the library is loaded, failed with "invalid resource handle". Entries keep their
/// priorities; the linker orders by priority, then by this list. Returns whether it moved one.
pub fn registration_first(module: &Module<'_>) -> bool {
    use inkwell::llvm_sys::core::{LLVMConstArray2, LLVMGetAggregateElement, LLVMGetInitializer, LLVMGetNumOperands, LLVMGetValueName2, LLVMSetInitializer, LLVMTypeOf};
    use inkwell::values::AsValueRef;
    let Some(ctors) = module.get_global("llvm.global_ctors") else { return false };
    // SAFETY: reads of the live module's constant initializer and its elements, and the
    // initializer replaced by an array of the same elements and type.
    unsafe {
        let init = LLVMGetInitializer(ctors.as_value_ref());
        if init.is_null() {
            return false;
        }
        let count = LLVMGetNumOperands(init).max(0) as u32;
        let elements: Vec<_> = (0..count).map(|i| LLVMGetAggregateElement(init, i)).collect();
        if elements.iter().any(|e| e.is_null()) {
            return false;
        }
        let is_registration = |element: inkwell::llvm_sys::prelude::LLVMValueRef| {
            let function = LLVMGetAggregateElement(element, 1);
            if function.is_null() {
                return false;
            }
            let mut length = 0;
            let name = LLVMGetValueName2(function, &mut length);
            !name.is_null() && std::slice::from_raw_parts(name.cast::<u8>(), length) == b"__cuda_module_ctor"
        };
        let (mut first, rest): (Vec<_>, Vec<_>) = elements.iter().partition(|e| is_registration(**e));
        if first.is_empty() || elements.first().is_some_and(|e| is_registration(*e)) {
            return false;
        }
        first.extend(rest);
        let element_type = LLVMTypeOf(elements[0]);
        LLVMSetInitializer(ctors.as_value_ref(), LLVMConstArray2(element_type, first.as_mut_ptr(), first.len() as u64));
        true
    }
}

/// An x86-64 object of `module`, host IR another front end wrote (Clang's host side of a
/// CUDA C++ file), already optimised: only code generation runs here.
pub fn emit_object(module: &Module<'_>) -> R<Vec<u8>> {
    let tm = x86_machine()?;
    module.verify().map_err(|e| BackendError::Verify(format!("host object: {e}")))?;
    super::safely::emit(module, &tm, FileType::Object)
}

/// The section of a host object whose device code frees nothing the device link's pool could
/// have given but through the pool's wrappers (`driver/pool.rs` reads it).
pub const POOL_SAFE_SECTION: &str = "__cdpc_pool_safe";
/// The section of a host object whose device code also allocates through the pool's wrappers:
/// what the device link adds the pool for.
pub const POOL_USED_SECTION: &str = "__cdpc_pool_used";

/// What a host object's device code says to the device link's pool ([`mark_pool`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PoolMark {
    /// It may free outside the pool's wrappers: no mark.
    #[default]
    None,
    /// It frees only through the wrappers (or not at all) and allocates nothing through them.
    Safe,
    /// It frees only through the wrappers and allocates through them.
    Used,
}

/// Marks `module`'s object as `mark` says: private constants in [`POOL_SAFE_SECTION`] and
/// [`POOL_USED_SECTION`], each a line for someone who finds it in an object. Code generation
/// keeps them (nothing removes unused globals there); the host linker merges the sections of
/// several objects.
pub fn mark_pool(module: &Module<'_>, mark: PoolMark) {
    let sections: &[(&str, &str)] = match mark {
        PoolMark::None => &[],
        PoolMark::Safe => &[(POOL_SAFE_SECTION, "cdpc: this object's device code frees device-side allocations only through cdpc's pool wrappers (v1)")],
        PoolMark::Used => &[
            (POOL_SAFE_SECTION, "cdpc: this object's device code frees device-side allocations only through cdpc's pool wrappers (v1)"),
            (POOL_USED_SECTION, "cdpc: this object's device code allocates through cdpc's pool wrappers (v1)"),
        ],
    };
    for (section, line) in sections {
        add_section(module, section, format!("{line}\0").as_bytes());
    }
}

/// Adds `bytes` to `module`'s object as the section `section`: a private constant, which code
/// generation keeps (nothing removes unused globals there).
pub fn add_section(module: &Module<'_>, section: &str, bytes: &[u8]) {
    let data = module.get_context().const_string(bytes, false);
    let global = module.add_global(data.get_type(), None, &format!("{section}_data"));
    global.set_initializer(&data);
    global.set_linkage(Linkage::Private);
    global.set_constant(true);
    global.set_section(Some(section));
}

/// Builds the object's bytes.
pub fn host_object(spec: &HostObjectSpec<'_>) -> R<Vec<u8>> {
    let tm = x86_machine()?;
    let ctx = Context::create();
    let module = ctx.create_module("cdpc_host");
    super::configure_module(&module, &tm);
    let b = Builder::new(&ctx, &module);
    b.build(spec)?;
    mark_pool(&module, spec.pool);
    module.verify().map_err(|e| BackendError::Verify(format!("host object: {e}")))?;
    super::safely::emit(&module, &tm, FileType::Object)
}

struct Builder<'a, 'ctx> {
    ctx: &'ctx Context,
    module: &'a Module<'ctx>,
    ptr: inkwell::types::PointerType<'ctx>,
    dim3: StructType<'ctx>,
}

impl<'a, 'ctx> Builder<'a, 'ctx> {
    fn new(ctx: &'ctx Context, module: &'a Module<'ctx>) -> Self {
        let i32 = ctx.i32_type();
        Builder { ctx, module, ptr: ctx.ptr_type(AddressSpace::default()), dim3: ctx.struct_type(&[i32.into(), i32.into(), i32.into()], false) }
    }

    fn build(&self, spec: &HostObjectSpec<'_>) -> R<()> {
        let (ctx, i32) = (self.ctx, self.ctx.i32_type());
        // The fat binary and the module id, in the sections nvlink reads.
        let data = ctx.const_string(spec.fatbin, false);
        let fatbin = self.module.add_global(data.get_type(), None, "fatbinData");
        fatbin.set_initializer(&data);
        fatbin.set_linkage(Linkage::Internal);
        fatbin.set_constant(true);
        fatbin.set_section(Some("__nv_relfatbin"));
        fatbin.set_alignment(8);
        let id = ctx.const_string(spec.module_id.as_bytes(), true);
        let module_id = self.module.add_global(id.get_type(), None, "__module_id_str");
        module_id.set_initializer(&id);
        module_id.set_linkage(Linkage::Internal);
        module_id.set_constant(true);
        module_id.set_section(Some("__nv_module_id"));
        let wrapper_ty = ctx.struct_type(&[i32.into(), i32.into(), self.ptr.into(), self.ptr.into()], false);
        let wrapper = self.module.add_global(wrapper_ty, None, &format!("__fatbinwrap{}", spec.module_id));
        wrapper.set_initializer(&wrapper_ty.const_named_struct(&[
            i32.const_int(FATBIN_WRAPPER_MAGIC, false).into(),
            i32.const_int(1, false).into(),
            fatbin.as_pointer_value().into(),
            self.ptr.const_null().into(),
        ]));
        wrapper.set_section(Some(".nvFatBinSegment"));
        wrapper.set_alignment(8);
        wrapper.set_constant(true);

        // Host stubs and launchers.
        let mut stubs = Vec::new();
        for kernel in spec.kernels {
            let stub = self.stub(kernel)?;
            if kernel.internal {
                stub.set_linkage(Linkage::Internal);
            } else {
                self.launcher(kernel, stub)?;
            }
            stubs.push((kernel, stub));
        }

        // The callback that registers each stub, and the constructor that hands it over.
        let void = ctx.void_type();
        let register_function = self.module.add_function(
            "__cudaRegisterFunction",
            void.fn_type(&[self.ptr.into(), self.ptr.into(), self.ptr.into(), self.ptr.into(), i32.into(), self.ptr.into(), self.ptr.into(), self.ptr.into(), self.ptr.into(), self.ptr.into()], false),
            Some(Linkage::External),
        );
        let callback = self.module.add_function("__nv_cudaEntityRegisterCallback", void.fn_type(&[self.ptr.into()], false), Some(Linkage::Internal));
        let b = ctx.create_builder();
        b.position_at_end(ctx.append_basic_block(callback, "entry"));
        let handle = param(callback, 0)?;
        for (kernel, stub) in &stubs {
            let name = b.build_global_string_ptr(&kernel.symbol, "kernel_name")?.as_pointer_value();
            let null = self.ptr.const_null();
            b.build_call(
                register_function,
                &[
                    handle.into(),
                    stub.as_global_value().as_pointer_value().into(),
                    name.into(),
                    name.into(),
                    i32.const_all_ones().into(),
                    null.into(),
                    null.into(),
                    null.into(),
                    null.into(),
                    null.into(),
                ],
                "",
            )?;
        }
        b.build_return(None)?;
        let dummy = self.module.add_function("__nv_dummy_param_ref", void.fn_type(&[self.ptr.into()], false), Some(Linkage::Internal));
        b.position_at_end(ctx.append_basic_block(dummy, "entry"));
        b.build_return(None)?;
        let register_linked = self.module.add_function(
            &format!("__cudaRegisterLinkedBinary{}", spec.module_id),
            void.fn_type(&[self.ptr.into(), self.ptr.into(), self.ptr.into(), self.ptr.into()], false),
            Some(Linkage::External),
        );
        let ctor = self.module.add_function("__sti____cudaRegisterAll", void.fn_type(&[], false), Some(Linkage::Internal));
        b.position_at_end(ctx.append_basic_block(ctor, "entry"));
        b.build_call(
            register_linked,
            &[callback.as_global_value().as_pointer_value().into(), wrapper.as_pointer_value().into(), module_id.as_pointer_value().into(), dummy.as_global_value().as_pointer_value().into()],
            "",
        )?;
        b.build_return(None)?;
        // The constructor's address in `.init_array`, as gcc puts it (written as a section of
        // its own, which predates `use_init_array`; `llvm.global_ctors` would now give the
        // same `.init_array` entry).
        let init = self.module.add_global(self.ptr.array_type(1), None, "__cdpc_init_array");
        init.set_initializer(&self.ptr.const_array(&[ctor.as_global_value().as_pointer_value()]));
        init.set_linkage(Linkage::Internal);
        init.set_section(Some(".init_array"));
        init.set_alignment(8);
        let used = self.module.add_global(self.ptr.array_type(1), None, "llvm.compiler.used");
        used.set_linkage(Linkage::Appending);
        used.set_section(Some("llvm.metadata"));
        used.set_initializer(&self.ptr.const_array(&[init.as_pointer_value()]));
        Ok(())
    }

    /// An integer of `bytes` bytes (1 to 8; `i24` and the like for a struct's last eightbyte,
    /// as clang passes it).
    fn int_type(&self, bytes: u32) -> BasicTypeEnum<'ctx> {
        let bits = std::num::NonZeroU32::new(8 * bytes.clamp(1, 8)).unwrap_or(std::num::NonZeroU32::MIN);
        self.ctx.custom_width_int_type(bits).map(Into::into).unwrap_or_else(|_| self.ctx.i64_type().into())
    }

    /// The LLVM type of one eightbyte in registers.
    fn eightbyte_type(&self, e: Eightbyte) -> BasicTypeEnum<'ctx> {
        match e {
            Eightbyte::Integer(n) => self.int_type(n as u32),
            Eightbyte::F32 => self.ctx.f32_type().into(),
            Eightbyte::F32x2 => self.ctx.f32_type().vec_type(2).into(),
            Eightbyte::F64 => self.ctx.f64_type().into(),
        }
    }

    /// How each parameter of `kernel` arrives after `prefix_ints` general registers are
    /// taken: the ABI's register counting (six general, eight SSE), since a struct whose
    /// eightbytes do not all fit in the registers left goes to memory whole.
    fn lower(&self, kernel: &HostKernel, prefix_ints: u32) -> Vec<Lowered<'ctx>> {
        let ctx = self.ctx;
        let (mut ints, mut sses) = (6u32.saturating_sub(prefix_ints), 8u32);
        kernel
            .params
            .iter()
            .map(|p| {
                let aggregate = match *p {
                    HostParam::Int(n) => {
                        ints = ints.saturating_sub(1);
                        return Lowered::Scalar(self.int_type(n));
                    }
                    HostParam::Pointer => {
                        ints = ints.saturating_sub(1);
                        return Lowered::Scalar(self.ptr.into());
                    }
                    HostParam::F32 | HostParam::F64 => {
                        sses = sses.saturating_sub(1);
                        return Lowered::Scalar(if *p == HostParam::F32 { ctx.f32_type().into() } else { ctx.f64_type().into() });
                    }
                    HostParam::Dim3 => Aggregate::DIM3,
                    HostParam::Aggregate(a) => a,
                };
                let Some((lo, hi)) = aggregate.eightbytes else { return Lowered::Memory { size: aggregate.size, align: aggregate.align } };
                let parts: Vec<Eightbyte> = std::iter::once(lo).chain(hi).collect();
                let need_int = parts.iter().filter(|e| matches!(e, Eightbyte::Integer(_))).count() as u32;
                let need_sse = parts.len() as u32 - need_int;
                if need_int > ints || need_sse > sses {
                    return Lowered::Memory { size: aggregate.size, align: aggregate.align };
                }
                (ints, sses) = (ints - need_int, sses - need_sse);
                Lowered::Pieces { types: parts.into_iter().map(|e| self.eightbyte_type(e)).collect(), size: aggregate.size, align: aggregate.align }
            })
            .collect()
    }

    /// Declares a function taking `prefix` (all in general registers) then the kernel's
    /// parameters; returns it and, per parameter, its lowering and the index of its first
    /// LLVM parameter.
    fn function(&self, name: &str, ret: Option<BasicTypeEnum<'ctx>>, prefix: &[BasicTypeEnum<'ctx>], kernel: &HostKernel) -> (FunctionValue<'ctx>, Vec<(Lowered<'ctx>, u32)>) {
        let mut types: Vec<BasicMetadataTypeEnum<'ctx>> = prefix.iter().map(|t| (*t).into()).collect();
        let mut lowered = Vec::new();
        let mut byval = Vec::new();
        for l in self.lower(kernel, prefix.len() as u32) {
            let first = types.len() as u32;
            match &l {
                Lowered::Scalar(t) => types.push((*t).into()),
                Lowered::Pieces { types: parts, .. } => types.extend(parts.iter().map(|t| BasicMetadataTypeEnum::from(*t))),
                Lowered::Memory { size, align } => {
                    byval.push((first, *size, *align));
                    types.push(self.ptr.into());
                }
            }
            lowered.push((l, first));
        }
        let fn_ty = match ret {
            Some(r) => r.fn_type(&types, false),
            None => self.ctx.void_type().fn_type(&types, false),
        };
        let f = self.module.add_function(name, fn_ty, Some(Linkage::External));
        for (index, size, align) in byval {
            let kind = |name: &str| Attribute::get_named_enum_kind_id(name);
            let bytes = self.ctx.i8_type().array_type(size);
            f.add_attribute(AttributeLoc::Param(index), self.ctx.create_type_attribute(kind("byval"), bytes.as_any_type_enum()));
            // the stack slot of a MEMORY argument is 8-aligned, or 16 for a type aligned to 16
            f.add_attribute(AttributeLoc::Param(index), self.ctx.create_enum_attribute(kind("align"), align.clamp(8, 16) as u64));
        }
        (f, lowered)
    }

    /// Stores each parameter in its own slot (a parameter in memory is its own slot) and
    /// returns the array of their addresses, as `cudaLaunchKernel` takes the arguments.
    fn argument_array(&self, b: &inkwell::builder::Builder<'ctx>, f: FunctionValue<'ctx>, params: &[(Lowered<'ctx>, u32)]) -> R<PointerValue<'ctx>> {
        let n = params.len().max(1) as u32;
        let array = b.build_alloca(self.ptr.array_type(n), "args")?;
        for (i, (l, first)) in params.iter().enumerate() {
            let slot = match l {
                Lowered::Scalar(t) => {
                    let slot = b.build_alloca(*t, "arg")?;
                    b.build_store(slot, param(f, *first)?)?;
                    slot
                }
                Lowered::Pieces { types, size, align } => {
                    let bytes = self.ctx.i8_type().array_type(size.div_ceil(8) * 8);
                    let slot = b.build_alloca(bytes, "arg")?;
                    set_alignment(slot, (*align).max(8))?;
                    for k in 0..types.len() as u32 {
                        let at = unsafe { b.build_in_bounds_gep(self.ctx.i8_type(), slot, &[self.ctx.i64_type().const_int(8 * k as u64, false)], "piece")? };
                        b.build_store(at, param(f, first + k)?)?;
                    }
                    slot
                }
                Lowered::Memory { .. } => param(f, *first)?.into_pointer_value(),
            };
            let at = unsafe { b.build_in_bounds_gep(self.ptr.array_type(n), array, &[self.ctx.i32_type().const_zero(), self.ctx.i32_type().const_int(i as u64, false)], "at")? };
            b.build_store(at, slot)?;
        }
        Ok(array)
    }

    /// Loads a `dim3` kept at `ptr` as the (`i64`, `i32`) pair it is passed in.
    fn dim3_pair(&self, b: &inkwell::builder::Builder<'ctx>, ptr: PointerValue<'ctx>) -> R<[BasicMetadataValueEnum<'ctx>; 2]> {
        let low = b.build_load(self.ctx.i64_type(), ptr, "xy")?;
        let high_ptr = unsafe { b.build_in_bounds_gep(self.ctx.i8_type(), ptr, &[self.ctx.i64_type().const_int(8, false)], "zp")? };
        let high = b.build_load(self.ctx.i32_type(), high_ptr, "z")?;
        Ok([low.into(), high.into()])
    }

    fn launch_kernel(&self) -> FunctionValue<'ctx> {
        let (i32, i64) = (self.ctx.i32_type(), self.ctx.i64_type());
        self.module.get_function("cudaLaunchKernel").unwrap_or_else(|| {
            let ty = i32.fn_type(&[self.ptr.into(), i64.into(), i32.into(), i64.into(), i32.into(), self.ptr.into(), i64.into(), self.ptr.into()], false);
            self.module.add_function("cudaLaunchKernel", ty, Some(Linkage::External))
        })
    }

    /// The host stub: pops the configuration of the host's `<<<>>>` and launches.
    fn stub(&self, kernel: &HostKernel) -> R<FunctionValue<'ctx>> {
        let (ctx, i32) = (self.ctx, self.ctx.i32_type());
        let (f, params) = self.function(&kernel.symbol, None, &[], kernel);
        let b = ctx.create_builder();
        b.position_at_end(ctx.append_basic_block(f, "entry"));
        let args = self.argument_array(&b, f, &params)?;
        let (grid, block) = (b.build_alloca(self.dim3, "grid")?, b.build_alloca(self.dim3, "block")?);
        let shared = b.build_alloca(ctx.i64_type(), "shared_mem")?;
        let stream = b.build_alloca(self.ptr, "stream")?;
        let pop = self.module.get_function("__cudaPopCallConfiguration").unwrap_or_else(|| {
            let ty = i32.fn_type(&[self.ptr.into(), self.ptr.into(), self.ptr.into(), self.ptr.into()], false);
            self.module.add_function("__cudaPopCallConfiguration", ty, Some(Linkage::External))
        });
        let status = b.build_call(pop, &[grid.into(), block.into(), shared.into(), stream.into()], "popped")?;
        let ValueKind::Basic(BasicValueEnum::IntValue(status)) = status.try_as_basic_value() else { return Err(BackendError::Internal("pop returned nothing".into())) };
        let (launch, done) = (ctx.append_basic_block(f, "launch"), ctx.append_basic_block(f, "done"));
        let ok = b.build_int_compare(IntPredicate::EQ, status, i32.const_zero(), "ok")?;
        b.build_conditional_branch(ok, launch, done)?;
        b.position_at_end(launch);
        let mut operands: Vec<BasicMetadataValueEnum<'ctx>> = vec![f.as_global_value().as_pointer_value().into()];
        operands.extend(self.dim3_pair(&b, grid)?);
        operands.extend(self.dim3_pair(&b, block)?);
        operands.push(args.into());
        operands.push(b.build_load(ctx.i64_type(), shared, "shared")?.into());
        operands.push(b.build_load(self.ptr, stream, "stream")?.into());
        b.build_call(self.launch_kernel(), &operands, "")?;
        b.build_unconditional_branch(done)?;
        b.position_at_end(done);
        b.build_return(None)?;
        Ok(f)
    }

    /// `cudaError_t cdpc_launch_<symbol>(dim3 grid, dim3 block, size_t shared_mem,
    /// cudaStream_t stream, params...)`.
    fn launcher(&self, kernel: &HostKernel, stub: FunctionValue<'ctx>) -> R<()> {
        let (ctx, i32, i64) = (self.ctx, self.ctx.i32_type(), self.ctx.i64_type());
        let prefix: [BasicTypeEnum<'ctx>; 6] = [i64.into(), i32.into(), i64.into(), i32.into(), i64.into(), self.ptr.into()];
        let (f, params) = self.function(&format!("cdpc_launch_{}", kernel.symbol), Some(i32.into()), &prefix, kernel);
        let b = ctx.create_builder();
        b.position_at_end(ctx.append_basic_block(f, "entry"));
        let args = self.argument_array(&b, f, &params)?;
        let mut operands: Vec<BasicMetadataValueEnum<'ctx>> = vec![stub.as_global_value().as_pointer_value().into()];
        for i in 0..6 {
            operands.push(param(f, i)?.into());
        }
        // cudaLaunchKernel(func, grid, block, args, shared_mem, stream).
        let (shared, stream) = (operands.remove(5), operands.remove(5));
        operands.push(args.into());
        operands.push(shared);
        operands.push(stream);
        let status = b.build_call(self.launch_kernel(), &operands, "status")?;
        let ValueKind::Basic(status) = status.try_as_basic_value() else { return Err(BackendError::Internal("launch returned nothing".into())) };
        b.build_return(Some(&status))?;
        Ok(())
    }
}

fn set_alignment(slot: PointerValue<'_>, align: u32) -> R<()> {
    let Some(inst) = slot.as_instruction() else { return Err(BackendError::Internal("an alloca that is no instruction".into())) };
    inst.set_alignment(align).map_err(|e| BackendError::Internal(format!("alignment {align}: {e}")))
}

fn param(f: FunctionValue<'_>, i: u32) -> R<BasicValueEnum<'_>> {
    f.get_nth_param(i).ok_or_else(|| BackendError::Internal(format!("host stub parameter {i}")))
}
