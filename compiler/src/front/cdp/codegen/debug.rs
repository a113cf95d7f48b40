//! The kernel language's DWARF, through LLVM's debug-info builder for NVPTX: `-lineinfo`'s line
//! tables and `-G`'s functions, parameters and locals of scalar and pointer type, at the
//! positions [`DebugInfo::locate`] gives the HIR's spans.

use super::Codegen;
use crate::back::{DebugInfo, DebugLevel};
use crate::diag::Span;
use crate::front::cdp::hir;
use crate::types::{FloatKind, IntKind, Type};
use inkwell::debug_info::{AsDIScope, DIFile, DIFlags, DIFlagsConstants, DISubprogram, DIType, DWARFEmissionKind, DWARFSourceLanguage, DebugInfoBuilder};
use inkwell::module::FlagBehavior;
use inkwell::values::FunctionValue;
use inkwell::AddressSpace;

/// The DWARF builder of one module and the function being defined.
pub(crate) struct Dbg<'ctx> {
    builder: DebugInfoBuilder<'ctx>,
    files: Vec<DIFile<'ctx>>,
    info: DebugInfo,
    optimized: bool,
    scope: Option<DISubprogram<'ctx>>,
}

/// `DW_ATE_*` encodings.
const DW_ATE_BOOLEAN: u32 = 0x02;
const DW_ATE_FLOAT: u32 = 0x04;
const DW_ATE_SIGNED: u32 = 0x05;
const DW_ATE_SIGNED_CHAR: u32 = 0x06;
const DW_ATE_UNSIGNED: u32 = 0x07;
const DW_ATE_UNSIGNED_CHAR: u32 = 0x08;

impl<'ctx> Dbg<'ctx> {
    /// The compile unit of `module` for the main file, and the module flags that make LLVM keep
    /// and emit it (DWARF 2, as clang and nvcc use for NVPTX).
    pub(crate) fn new(module: &inkwell::module::Module<'ctx>, ctx: &'ctx inkwell::context::Context, info: &DebugInfo, optimized: bool) -> Dbg<'ctx> {
        let (name, dir) = info.files.first().cloned().unwrap_or_else(|| ("<input>".into(), ".".into()));
        let kind = match info.level {
            DebugLevel::LineTables => DWARFEmissionKind::LineTablesOnly,
            DebugLevel::Full => DWARFEmissionKind::Full,
        };
        let (builder, _unit) =
            module.create_debug_info_builder(true, DWARFSourceLanguage::CPlusPlus, &name, &dir, concat!("cdpc ", env!("CARGO_PKG_VERSION")), optimized, "", 0, "", kind, 0, false, false, "", "");
        let i32 = ctx.i32_type();
        module.add_basic_value_flag("Dwarf Version", FlagBehavior::Warning, i32.const_int(2, false));
        module.add_basic_value_flag("Debug Info Version", FlagBehavior::Warning, i32.const_int(3, false));
        let files = info.files.iter().map(|(name, dir)| builder.create_file(name, dir)).collect();
        Dbg { builder, files, info: info.clone(), optimized, scope: None }
    }

    fn file(&self, index: usize) -> DIFile<'ctx> {
        self.files.get(index).copied().unwrap_or(self.files[0])
    }

    /// Resolves the remaining references; call once, before verifying the module.
    pub(crate) fn finalize(&self) {
        self.builder.finalize();
    }
}

impl<'ctx> Codegen<'ctx, '_> {
    /// Gives the function being defined its subprogram and puts the builder at its first line.
    pub(crate) fn debug_begin_function(&mut self, fv: FunctionValue<'ctx>, f: &hir::Function) {
        let Some(dbg) = self.dbg.as_mut() else { return };
        let (file, line, _) = (dbg.info.locate)(f.span);
        let di_file = dbg.file(file);
        let ty = dbg.builder.create_subroutine_type(di_file, None, &[], DIFlags::ZERO);
        let linkage = fv.get_name().to_string_lossy().into_owned();
        let sp = dbg.builder.create_function(di_file.as_debug_info_scope(), &f.name, Some(&linkage), di_file, line, ty, false, true, line, DIFlags::PROTOTYPED, dbg.optimized);
        fv.set_subprogram(sp);
        dbg.scope = Some(sp);
        self.debug_at(f.span);
    }

    /// The code built from here on is at `span`'s line.
    pub(crate) fn debug_at(&self, span: Span) {
        let Some(dbg) = self.dbg.as_ref() else { return };
        let Some(scope) = dbg.scope else { return };
        let (_, line, column) = (dbg.info.locate)(span);
        let location = dbg.builder.create_debug_location(self.ctx, line, column, scope.as_debug_info_scope(), None);
        self.builder.set_current_debug_location(location);
    }

    /// Leaves the function: no location until the next one begins.
    pub(crate) fn debug_end_function(&mut self) {
        if let Some(dbg) = self.dbg.as_mut() {
            dbg.scope = None;
            self.builder.unset_current_debug_location();
        }
    }

    /// With `-G`, describes a parameter (`arg` from 1) or local (`arg` 0) stored at `storage`.
    pub(crate) fn debug_variable(&self, local: &hir::Local, arg: u32, storage: inkwell::values::PointerValue<'ctx>) {
        let Some(dbg) = self.dbg.as_ref().filter(|d| d.info.level == DebugLevel::Full) else { return };
        let (Some(scope), Some(block)) = (dbg.scope, self.builder.get_insert_block()) else { return };
        let Some(ty) = self.debug_type(&local.ty) else { return };
        let (file, line, column) = (dbg.info.locate)(local.span);
        let di_file = dbg.file(file);
        let scope = scope.as_debug_info_scope();
        let var = if arg > 0 {
            dbg.builder.create_parameter_variable(scope, &local.name, arg, di_file, line, ty, true, DIFlags::ZERO)
        } else {
            dbg.builder.create_auto_variable(scope, &local.name, di_file, line, ty, true, DIFlags::ZERO, 0)
        };
        let location = dbg.builder.create_debug_location(self.ctx, line, column, scope, None);
        let expression = dbg.builder.create_expression(Vec::new());
        // inkwell's insert_declare_at_end reads the DbgRecord LLVM 19+ returns as an instruction
        // (a debug assertion fails); the C function itself is what is wanted, its result unused.
        unsafe {
            use inkwell::values::AsValueRef;
            inkwell::llvm_sys::debuginfo::LLVMDIBuilderInsertDeclareRecordAtEnd(
                dbg.builder.as_mut_ptr(),
                storage.as_value_ref(),
                var.as_mut_ptr(),
                expression.as_mut_ptr(),
                location.as_mut_ptr(),
                block.as_mut_ptr(),
            );
        }
    }

    /// The DWARF type of a scalar or pointer; `None` for the rest (no variable is described).
    fn debug_type(&self, ty: &Type) -> Option<DIType<'ctx>> {
        let dbg = self.dbg.as_ref()?;
        let b = &dbg.builder;
        let basic = |name: &str, bits: u64, encoding: u32| b.create_basic_type(name, bits, encoding, DIFlags::ZERO).ok().map(|t| t.as_type());
        let target = &self.hir.target;
        match ty {
            Type::Int(IntKind::Bool) => basic("bool", 8, DW_ATE_BOOLEAN),
            Type::Int(kind) => {
                let bits = kind.bytes(target) * 8;
                let signed = kind.is_signed(target);
                // The C name, as nvcc's DWARF has it (`int`, `unsigned int`), which debuggers show.
                let encoding = match kind {
                    IntKind::Char | IntKind::SChar if signed => DW_ATE_SIGNED_CHAR,
                    IntKind::Char | IntKind::UChar => DW_ATE_UNSIGNED_CHAR,
                    _ if signed => DW_ATE_SIGNED,
                    _ => DW_ATE_UNSIGNED,
                };
                basic(kind.name(), bits, encoding)
            }
            Type::Float(FloatKind::Float) => basic("float", 32, DW_ATE_FLOAT),
            Type::Float(FloatKind::Double) => basic("double", 64, DW_ATE_FLOAT),
            Type::Pointer { pointee, .. } => {
                let bits = target.address_size.pointer_bytes() * 8;
                // A pointer to a scalar or pointer points to its type (so that a debugger shows
                // `int *` and does not print the memory as a string); to anything else, to bytes.
                let (target_type, name) = match self.debug_type(pointee) {
                    Some(t) => (t, crate::types::DisplayType { ty, structs: self.hir }.to_string()),
                    None => (basic("void", 8, DW_ATE_UNSIGNED)?, "void *".to_string()),
                };
                Some(b.create_pointer_type(&name, target_type, bits, bits as u32, AddressSpace::from(DWARF_ADDR_GENERIC)).as_type())
            }
            _ => None,
        }
    }
}

/// The `DW_AT_address_class` of a pointer type: a C pointer holds a generic address. nvcc
/// writes 12 on every pointer type (measured with nvcc 13.5 `-G`; cuda-gdb prints such a
/// pointer as `@generic int *`), the value of PTX's generic state space in NVIDIA's DWARF
/// address classes; LLVM writes the number it is given, 0 by default.
const DWARF_ADDR_GENERIC: u16 = 12;
