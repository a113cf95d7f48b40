//! The typed intermediate representation between semantic analysis and code generation.
//!
//! Everything here is resolved and explicit: names are handles, every expression carries its
//! type, implicit conversions are [`ExprKind::Cast`] nodes, array-to-pointer decay is
//! [`ExprKind::Decay`], `sizeof` is folded, launches carry their parameter-buffer layout.
//! Code generation trusts it and reports no user errors.
//!
//! What the representation chooses: a launch's target is a kernel or a pointer's value known at
//! run time only (`LaunchTarget`); `switch` is a jump to labels (`Stmt::Switch`, `Label`, `Goto`,
//! with a `LabelId` per function); a union is a struct whose fields all sit at 0
//! (`StructDef::union`); a struct keeps its spelling in C (`StructDef::tagless` for `typedef
//! struct { ... } Name;`, `StructDef::keyword`: `struct`, `union` or none, which
//! `types::DisplayType` writes through `StructLayouts::struct_keyword`; `EnumDef::tagless`
//! likewise, `enum_tagless`); a bit-field is a field with `bits` (`BitField`: the shift into the
//! byte at the field's offset, the width, the signedness; `Field::value_type` is the C++-promoted
//! type of its values); pointers to device functions are `ExprKind::FuncAddr` and `CallIndirect`,
//! and `ConstInit::FunctionAddress` in globals.
//!
//! **Where an access is decided volatile**: `is_volatile_place` (a `volatile` variable or member,
//! or a place reached through a pointer to volatile), which sema and code generation (`codegen`) both ask.

use crate::diag::Span;
use crate::layout::ParamLayout;
pub use crate::types::LaunchBounds;
use crate::types::{size_align, StructId, StructLayouts, Type};

pub mod mangle;
pub mod visit;
use crate::target::Target;
pub use runtime_shim::entry_points::RuntimeFn;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);
/// A point in a function that `goto` or `switch` jumps to (`Stmt::Label`); numbered per function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelId(pub u32);

#[derive(Clone, Debug)]
pub struct Module {
    pub target: Target,
    pub structs: Vec<StructDef>,
    pub globals: Vec<Global>,
    pub functions: Vec<Function>,
    /// The user enums, by `EnumId`.
    pub enums: Vec<EnumDef>,
    /// nvcc's module id of this translation unit (`--nv-module-id`), which prefixes the symbols
    /// of its internal kernels and variables as nvcc's do (`Function::symbol`).
    pub nv_module_id: Option<String>,
}

impl Module {
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id.0 as usize]
    }
    pub fn global(&self, id: GlobalId) -> &Global {
        &self.globals[id.0 as usize]
    }
    pub fn struct_def(&self, id: StructId) -> &StructDef {
        &self.structs[id.0 as usize]
    }
    pub fn size_align(&self, ty: &Type) -> (u64, u64) {
        size_align(ty, self, &self.target)
    }
}

impl StructLayouts for Module {
    fn struct_size_align(&self, id: StructId) -> (u64, u64) {
        let s = self.struct_def(id);
        (s.size, s.align)
    }
    fn struct_name(&self, id: StructId) -> &str {
        &self.struct_def(id).name
    }
    fn struct_keyword(&self, id: StructId) -> Option<&'static str> {
        self.struct_def(id).keyword()
    }
    fn enum_name(&self, id: crate::types::EnumId) -> &str {
        &self.enums[id.0 as usize].name
    }
    fn enum_tagless(&self, id: crate::types::EnumId) -> bool {
        self.enums[id.0 as usize].tagless
    }
}

/// A user enum (`sema::enums`): its name and underlying type.
#[derive(Clone, Debug)]
pub struct EnumDef {
    pub name: String,
    pub underlying: crate::types::IntKind,
    pub span: Span,
    /// `typedef enum { ... } Name;`: no tag, and `name` is the typedef's, which C code writes
    /// alone (`enum Name` would be another type).
    pub tagless: bool,
}

#[derive(Clone, Debug)]
pub struct StructDef {
    pub name: String,
    pub fields: Vec<Field>,
    /// Computed by sema with C's rules; code generation must lay the LLVM struct out the same.
    pub size: u64,
    pub align: u64,
    pub span: Span,
    /// A `union`: every field at offset 0, the size the largest field's rounded up to the
    /// largest alignment (code generation gives it an opaque body of bytes).
    pub union: bool,
    /// `typedef struct { ... } Name;`: the struct has no tag, and `name` is the typedef's. C
    /// and C++ code names it `Name`; `struct Name` would be another type.
    pub tagless: bool,
}

impl StructDef {
    /// How C code spells the type after its keyword (`struct`, `union`), or `None` for a
    /// tagless one, which is spelled by its typedef name alone.
    pub fn keyword(&self) -> Option<&'static str> {
        match (self.tagless, self.union) {
            (true, _) => None,
            (false, true) => Some("union"),
            (false, false) => Some("struct"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub offset: u64,
    /// A `volatile` member: every load and store of it is volatile.
    pub volatile: bool,
    /// A bit-field: its bits start `bits.shift` bits into the byte at `offset` (which holds its
    /// first bit). `ty` is the declared type; values have [`Field::value_type`].
    pub bits: Option<BitField>,
}

/// Where a bit-field's bits are: `width` bits from bit `shift` of the byte at the field's
/// offset, laid out as nvcc (the Itanium ABI) places them; `signed` from the declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitField {
    pub shift: u32,
    pub width: u32,
    pub signed: bool,
}

impl BitField {
    /// How many bytes from the field's offset hold its bits (at most 8: a bit-field never
    /// crosses a unit of its declared type's alignment).
    pub fn bytes(self) -> u32 {
        (self.shift + self.width).div_ceil(8)
    }
}

impl Field {
    /// The type of the field's value in an expression: a bit-field promotes as C++ says
    /// (`[conv.prom]`): to `int` when `int` holds every value of its width, else to `unsigned
    /// int` when that does, else it keeps its declared type; `bool` stays `bool`.
    pub fn value_type(&self) -> Type {
        match (&self.ty, self.bits) {
            (Type::Int(crate::types::IntKind::Bool), _) | (_, None) => self.ty.clone(),
            (_, Some(b)) if b.width < 32 || (b.width == 32 && b.signed) => Type::INT,
            (_, Some(b)) if b.width == 32 => Type::UINT,
            _ => self.ty.clone(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalSpace {
    /// `__device__`: global memory, visible to every grid.
    Device,
    /// `__constant__`: constant memory.
    Constant,
    /// `__shared__` (at file scope or hoisted out of a function body): one copy per block.
    Shared,
    /// `extern __shared__ T name[];`: the dynamic shared memory sized by a launch's `Ns`.
    /// All such declarations alias the same memory, as in CUDA.
    ExternShared,
    /// The bytes of a string literal (constant, read-only global memory).
    StringLiteral,
}

#[derive(Clone, Debug)]
pub struct Global {
    /// The name: unique among the module's globals (a variable hoisted out of a function body
    /// is `function__name` here, its symbol nvcc's, [`LocalStatic`]).
    pub name: String,
    pub ty: Type,
    pub space: GlobalSpace,
    pub init: Option<ConstInit>,
    pub span: Span,
    /// `extern __device__ T x;` (or `__constant__`) without an initializer: declared here,
    /// defined in another translation unit that the link step brings in (`.extern` in PTX).
    pub external: bool,
    /// A `volatile` variable (`volatile __shared__ int flag;`): its loads and stores are volatile.
    pub volatile: bool,
    /// `static` at file scope: internal linkage, a symbol no other file sees.
    pub internal: bool,
    /// `__managed__` (a `__device__` variable): the driver places it in unified memory when
    /// it loads the module, and host code reaches it by name (`.attribute(.managed)`).
    pub managed: bool,
    /// A `static` or `__shared__` variable of a function body, which sema hoists here.
    pub local: Option<LocalStatic>,
}

/// Where a hoisted `static` or `__shared__` local was declared: nvcc names it as C++ names a
/// local entity and gives it internal linkage, whatever the module id (measured with nvcc
/// 13.5): `_ZZ<function>E<name>`, the function's encoding without `_Z` (`_ZZ2k2PiiE1a`;
/// `_ZZ2ckE5count` in an `extern "C"` kernel), and the n-th such variable of one name in one
/// function, `__shared__` ones counted too, with `_<n - 2>` after it (`_ZZ2k2PiiE1a_0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalStatic {
    pub function: FuncId,
    /// The name as written.
    pub name: String,
    /// How many of the same name came before it in the function.
    pub earlier: u32,
}

impl Global {
    /// The symbol in PTX and in the cubin: the name (C++ mangles no variable at file scope),
    /// with nvcc's prefix for an internal variable when the module id is known
    /// (`__nv_static_23__79fa1adf_4_v_cu__Z1kPi_sv`); a function's hoisted local as
    /// [`LocalStatic`] says.
    pub fn symbol(&self, module: &Module) -> String {
        match &self.local {
            Some(local) => {
                let f = &module.functions[local.function.0 as usize];
                let encoding = match f.linkage {
                    Linkage::C => format!("{}{}", f.name.len(), f.name),
                    Linkage::Cxx => f.mangled(module).trim_start_matches("_Z").to_string(),
                };
                let discriminator = match local.earlier {
                    0 => String::new(),
                    n => format!("_{}", n - 1),
                };
                format!("_ZZ{encoding}E{}{}{discriminator}", local.name.len(), local.name)
            }
            None => internal_symbol(self.internal, &self.name, module),
        }
    }
}

/// nvcc's name for an internal kernel or variable, `__nv_static_<n>_<module id>_<name>` with `n`
/// the id's length (measured with nvcc 13.5); the name itself without a module id.
fn internal_symbol(internal: bool, name: &str, module: &Module) -> String {
    match &module.nv_module_id {
        Some(id) if internal => crate::pipeline::itanium::nv_static_symbol(id, name),
        _ => name.to_string(),
    }
}

/// A compile-time initializer of a global. Integer values hold the bits of the value
/// (sign-extended into the `i64`), already converted to the element type by sema.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstInit {
    Int(i64),
    Float(f64),
    /// Elements in order; a shorter list than the array is zero-filled.
    Array(Vec<ConstInit>),
    /// Fields in order; missing trailing fields are zero.
    Struct(Vec<ConstInit>),
    /// Address of another global (string literals, `&g`); sema refuses offsets from it.
    GlobalAddress(GlobalId),
    /// Address of a device function (`__device__ binop table[2] = {add, mul};`).
    FunctionAddress(FuncId),
    Zero,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// `__global__`: an entry point (`.entry`), launchable from the host and the device.
    Kernel,
    /// `__device__`: a device function (`.func`).
    Device,
    /// `__host__ __device__`: compiled for the device like `Device`.
    HostDevice,
}

#[derive(Clone, Debug)]
pub struct Function {
    /// The name as written; [`Function::linkage`] says how it becomes a symbol.
    pub name: String,
    pub kind: FunctionKind,
    pub linkage: Linkage,
    pub return_type: Type,
    /// Each parameter is also a local (a parameter can be assigned and have its address taken).
    pub params: Vec<LocalId>,
    pub locals: Vec<Local>,
    /// `None` for a prototype without a definition (a link-time error under nvlink if it is
    /// called; sema reports it first).
    pub body: Option<Block>,
    pub span: Span,
    /// `__forceinline__`, `__noinline__` and `__launch_bounds__`.
    pub attrs: FnAttrs,
    /// `static`: internal linkage, a symbol no other file sees (two files may
    /// each have their own `static __device__ int helper()`).
    pub internal: bool,
}

/// What a function's qualifiers ask of code generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FnAttrs {
    /// `Some(true)` for `__forceinline__` (LLVM `alwaysinline`), `Some(false)` for
    /// `__noinline__` (`noinline`).
    pub inline: Option<bool>,
    /// C++'s inline: the `inline` keyword or `__forceinline__`. Its definition may appear in every file that uses it, so it is emitted
    /// `linkonce_odr`: no `.func` where every call is inlined, a `.weak` one otherwise, as nvcc.
    pub odr_inline: bool,
    /// A kernel's `__launch_bounds__`: `.maxntid`, `.minnctapersm`, `.maxclusterrank` in PTX.
    pub launch_bounds: Option<LaunchBounds>,
}

/// How a function's name becomes its symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// `extern "C"`: the symbol is the name.
    C,
    /// C++: the symbol is the Itanium-mangled name, as nvcc writes it (`crate::front::cdp::hir::mangle`).
    Cxx,
}

impl Function {
    /// The symbol in PTX and in the cubin: the mangled name (`crate::front::cdp::hir::mangle`), with nvcc's
    /// prefix for an internal kernel when the module id is known. (nvcc leaves the names of
    /// internal `__device__` functions alone: only kernels and variables are found by name.)
    pub fn symbol(&self, module: &Module) -> String {
        internal_symbol(self.internal && self.kind == FunctionKind::Kernel, &self.mangled(module), module)
    }

    /// The name under its linkage, before nvcc's prefix for an internal kernel: as written for
    /// `extern "C"`, else the Itanium name of its parameter types.
    fn mangled(&self, module: &Module) -> String {
        match self.linkage {
            Linkage::C => self.name.clone(),
            Linkage::Cxx => mangle::mangle_function(&self.name, &self.param_types().collect::<Vec<_>>(), module),
        }
    }

    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }
    pub fn param_types(&self) -> impl Iterator<Item = &Type> + '_ {
        self.params.iter().map(|p| &self.local(*p).ty)
    }
}

/// Whether loads and stores of the place `e` are volatile: a `volatile` variable, a place
/// reached through a pointer to `volatile`, a `volatile` member, or any member of those.
pub fn is_volatile_place(e: &Expr, locals: &[Local], globals: &[Global], structs: &[StructDef]) -> bool {
    match &e.kind {
        ExprKind::Local(id) => locals.get(id.0 as usize).is_some_and(|l| l.volatile),
        ExprKind::Global(id) => globals.get(id.0 as usize).is_some_and(|g| g.volatile),
        ExprKind::Deref(pointer) => pointer.ty.pointee_quals().is_volatile,
        ExprKind::Member { base, index } => {
            let member = match &base.ty {
                Type::Struct(id) => structs.get(id.0 as usize).and_then(|s| s.fields.get(*index as usize)).is_some_and(|f| f.volatile),
                _ => false,
            };
            member || is_volatile_place(base, locals, globals, structs)
        }
        _ => false,
    }
}

#[derive(Clone, Debug)]
pub struct Local {
    pub name: String,
    pub ty: Type,
    pub span: Span,
    /// A `volatile` variable: its loads and stores are volatile.
    pub volatile: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    /// Storage for the local comes into being; `init` stores its first value.
    Decl {
        local: LocalId,
        init: Option<Init>,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Block,
        otherwise: Option<Block>,
    },
    /// Covers `while`, `do`/`while` and `for`: `init` runs once, then (unless
    /// `check_cond_first` is false on the first iteration) `cond`, `body`, `step` repeat.
    /// `continue` jumps to `step`. A missing `cond` is true.
    Loop {
        init: Block,
        cond: Option<Expr>,
        step: Option<Expr>,
        body: Block,
        check_cond_first: bool,
    },
    Break,
    Continue,
    Return(Option<Expr>),
    Block(Block),
    /// GCC-style inline PTX (`sema::asm` checks it, `codegen::asm` lowers it).
    Asm(Box<InlineAsm>),
    /// C's `switch`: jumps to the label of the case whose value equals `cond` (an integer,
    /// promoted; the values are its bits, distinct), else to `default`, else past `body`. Its
    /// labels are `Stmt::Label`s somewhere in `body`; a `Break` in `body` outside a nested loop
    /// or switch leaves the switch (a `Continue` still goes to the enclosing loop's step).
    Switch {
        cond: Expr,
        body: Block,
        cases: Vec<(i64, LabelId)>,
        default: Option<LabelId>,
    },
    /// Where a `case`, `default` or named label stands. Each label of a function appears once.
    Label(LabelId),
    /// `goto`: a jump to a label of the same function (sema checked that it exists and that
    /// the jump skips no initialised declaration into its scope).
    Goto(LabelId),
}

impl Stmt {
    /// Whether the statement is or holds a label (a `case`, `default` or named one) at any
    /// depth: when it follows a `return` or `goto`, it may still be reached.
    pub fn has_label(&self) -> bool {
        match self {
            Stmt::Label(_) => true,
            Stmt::If { then, otherwise, .. } => then.has_label() || otherwise.as_ref().is_some_and(Block::has_label),
            Stmt::Loop { init, body, .. } => init.has_label() || body.has_label(),
            Stmt::Block(b) | Stmt::Switch { body: b, .. } => b.has_label(),
            _ => false,
        }
    }
}

impl Block {
    /// Whether a statement of the block holds a label ([`Stmt::has_label`]).
    pub fn has_label(&self) -> bool {
        self.stmts.iter().any(Stmt::has_label)
    }
}

/// An `asm` statement after checking: every operand fits its constraint, every `%N` names an
/// operand.
#[derive(Clone, Debug)]
pub struct InlineAsm {
    /// The template: text and operand references, numbered as GCC numbers them (outputs
    /// first, then inputs). A statement without operands is one `Text`, taken literally.
    pub template: Vec<AsmPiece>,
    pub outputs: Vec<AsmOutput>,
    pub inputs: Vec<AsmInput>,
    /// `volatile`, or no outputs (GCC's rule): the statement is kept and not moved.
    pub side_effects: bool,
    /// The `"memory"` clobber.
    pub clobbers_memory: bool,
    pub span: crate::diag::Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsmPiece {
    Text(String),
    Operand(u32),
}

/// The register class of an operand: `h` (16-bit), `r` (32), `l` (64), `f` (f32), `d` (f64),
/// or `n` (an immediate integer, inputs only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsmConstraint {
    H,
    R,
    L,
    F,
    D,
    N,
}

impl AsmConstraint {
    pub fn letter(self) -> char {
        match self {
            AsmConstraint::H => 'h',
            AsmConstraint::R => 'r',
            AsmConstraint::L => 'l',
            AsmConstraint::F => 'f',
            AsmConstraint::D => 'd',
            AsmConstraint::N => 'n',
        }
    }

    pub fn from_letter(c: char) -> Option<AsmConstraint> {
        Some(match c {
            'h' => AsmConstraint::H,
            'r' => AsmConstraint::R,
            'l' => AsmConstraint::L,
            'f' => AsmConstraint::F,
            'd' => AsmConstraint::D,
            'n' => AsmConstraint::N,
            _ => return None,
        })
    }
}

/// An output operand: the place written, of a type that fits the constraint.
#[derive(Clone, Debug)]
pub struct AsmOutput {
    pub place: Expr,
    pub constraint: AsmConstraint,
    /// `+`: also read, through an input tied to this output.
    pub read_write: bool,
    /// `&`: written before the inputs are read.
    pub early_clobber: bool,
}

/// An input operand: a value of a type that fits the constraint (for `n`, an integer constant).
#[derive(Clone, Debug)]
pub struct AsmInput {
    pub value: Expr,
    pub constraint: AsmConstraint,
}

/// The initial value of a local.
#[derive(Clone, Debug)]
pub enum Init {
    /// An expression already converted to the local's type.
    Expr(Expr),
    /// Brace-enclosed list for arrays and structs: elements in order, the rest zero.
    List(Vec<Init>),
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
    Z,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialReg {
    ThreadIdx(Axis),
    BlockIdx(Axis),
    BlockDim(Axis),
    GridDim(Axis),
    WarpSize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// Arithmetic negation on an integer or float of the expression's type.
    Neg,
    /// Bitwise complement.
    BitNot,
    /// Logical not: the operand is a scalar compared with zero; the result is `int` 0 or 1.
    Not,
}

/// Binary operators after the usual arithmetic conversions. For arithmetic and bitwise
/// operators both operands have the expression's type; shifts keep the left operand's
/// (promoted) type and convert the right to it; comparisons take two operands of one common
/// type (arithmetic or pointer) and yield `int`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    /// Pointer plus a signed integer of pointer width, scaled by the pointee size.
    PtrAdd,
    /// Pointer minus pointer: the element distance, as `long` (ptrdiff_t).
    PtrDiff,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Sub,
    Exch,
    Min,
    Max,
    /// `atomicInc(p, limit)`: ((old >= limit) ? 0 : old + 1).
    Inc,
    /// `atomicDec(p, limit)`: ((old == 0 || old > limit) ? limit : old - 1).
    Dec,
    And,
    Or,
    Xor,
    /// `atomicCAS(p, compare, value)`.
    Cas,
}

/// Which threads an atomic function is atomic for: `atomicAdd` the device's (`.gpu`),
/// `atomicAdd_block` its block's (`.cta`), `atomicAdd_system` the system's, host and peers
/// included (`.sys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicScope {
    Device,
    Block,
    System,
}

/// Float math functions; the argument and result type are the expression's float type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    Sqrt,
    Rsqrt,
    Fabs,
    Floor,
    Ceil,
    Trunc,
    Round,
    Exp,
    Exp2,
    Log,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Pow,
    Fmin,
    Fmax,
    Fma,
    Fmod,
    Atan2,
}

#[derive(Clone, Debug)]
pub enum Builtin {
    SpecialReg(SpecialReg),
    /// `__syncthreads()`: `bar.sync 0`, which the warp's threads reach together.
    SyncThreads,
    ThreadFence,
    ThreadFenceBlock,
    /// args: pointer, then value(s) of the pointee type (CAS: compare, value).
    /// Result: the old value (the pointee type).
    Atomic(AtomicOp, AtomicScope),
    /// One of CUDA's floating-point intrinsics (`__fadd_rn`, `__fdividef`, `__expf`, ...): the
    /// libdevice function `__nv_<name>`, taking and giving the expression's float type.
    FloatIntrinsic(&'static str),
    /// `args[0]` is the format (a `const char *`); the rest are already promoted by sema
    /// (float to double, small integers to int). Result: int.
    Printf,
    /// `__isGlobal(p)`: unsigned int 1 if p points into global memory.
    IsGlobal,
    /// `clock64()`: long long.
    Clock64,
    /// `malloc(size)` on the device heap: one `size_t` operand, result `void *`.
    Malloc,
    /// `free(p)` of what device `malloc` returned: one `void *` operand, result void.
    Free,
    /// `min`/`max` on two operands converted to the expression's (integer or float) type.
    Min,
    Max,
    /// `abs` on an integer or float of the expression's type.
    Abs,
    Math(MathFn),
    /// A device-runtime API call; args converted to the C-level signature in
    /// `runtime_shim::entry_points`. Code generation calls the entry point's PTX symbol, or
    /// emits the one instruction of an inline function (`RuntimeFn::lowering`). Its type is
    /// the C return type (`void` for `cudaGraphSetConditional`).
    Runtime(RuntimeFn),
    /// The address of a kernel, where the runtime takes one (`cudaFuncGetAttributes`'s
    /// `func`); typed `void *` or `const void *`. No operands.
    KernelAddress(FuncId),
    /// A warp-level primitive: `__activemask`, `__ballot_sync` and `__syncwarp`
    /// (`front/cdp/sema/intrinsics.rs`).
    Warp(WarpOp),
    /// CUDA's integer and warp intrinsics as programs write them (`front/cdp/sema/intrinsics.rs`).
    Intrinsic(Intrinsic),
    /// `make_float2(x, y)` and the other vector constructors: a value of the expression's
    /// struct type whose fields are the args, in order (already of the fields' types).
    MakeStruct,
    /// `__ldg(p)`: a load of `*p` through the read-only data cache (`ld.global.nc`); `p` is a
    /// pointer into global memory to a scalar or vector type. Result: the pointee type.
    Ldg,
}

/// CUDA's integer and warp intrinsics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intrinsic {
    /// `__popc`, `__clz`, `__ffs`, `__brev` on `unsigned int` (`wide`: their `ll` forms on
    /// `unsigned long long`). Result: `int`, except `__brev`'s, the operand's type.
    Bits { op: BitOp, wide: bool },
    /// `__any_sync(mask, pred)`, `__all_sync(mask, pred)`: args mask, predicate (`int`, tested
    /// against 0). Result: `int`, 1 or 0.
    Vote(Vote),
    /// `__shfl_sync` and its `_up`, `_down`, `_xor` forms: args mask, value (a 32-bit integer
    /// or `float`, the result's type), lane or delta or lane mask (`int`), width (`int`).
    Shuffle(ShuffleKind),
    /// `__fns(mask, base, offset)`: the lane of the `offset`-th set bit of `mask` counted from
    /// `base` (upwards for a positive offset, downwards for a negative one; `base` itself
    /// counts as the first when set), or `0xffffffff` when there is none (PTX's `fns.b32`).
    /// Args: mask and base (`unsigned int`), offset (`int`). Result: `unsigned int`.
    Fns,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    PopCount,
    CountLeadingZeros,
    /// One plus the index of the lowest set bit; 0 for 0.
    FindFirstSet,
    Reverse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vote {
    Any,
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShuffleKind {
    Idx,
    Up,
    Down,
    Xor,
}

/// Warp-level primitives. Masks, lanes and values are `unsigned int`; see each variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpOp {
    /// `__activemask()`: the lanes executing together now.
    ActiveMask,
    /// `__ballot_sync(mask, pred)`: args mask, predicate (int, tested against 0).
    Ballot,
    /// `__syncwarp(mask)`: a barrier and memory fence among the lanes of mask. Result: void.
    SyncWarp,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// The value's bits for the expression's integer type (bool, char, ..., cudaError_t).
    IntConst(i64),
    FloatConst(f64),
    /// The null pointer of a pointer type, and the predefined stream handles of type
    /// `cudaStream_t` (0 = NULL stream, 3 = tail launch, 4 = fire-and-forget).
    PointerConst(u64),

    // ---- Places (lvalues). Evaluated as values they are loaded. ----
    Local(LocalId),
    Global(GlobalId),
    /// `*ptr` (also the result of lowering `a[i]` to `*(a + i)`).
    Deref(Box<Expr>),
    /// `.field` of a struct place or value; `index` into `StructDef::fields`.
    /// `p->f` is lowered to `(*p).f`. dim3 fields use index 0, 1, 2 for x, y, z.
    Member {
        base: Box<Expr>,
        index: u32,
    },

    // ---- Values ----
    /// The address of a place.
    AddrOf(Box<Expr>),
    /// An array place converted to a pointer to its first element.
    Decay(Box<Expr>),
    /// Conversion of the operand to `Expr::ty`. Covers integer widening and narrowing (the
    /// operand's signedness decides sign or zero extension), int/float, float/float, pointer
    /// to pointer, integer to pointer and back, any scalar to bool (compare with zero), and
    /// `cudaError_t` to integer. A cast to `void` evaluates the operand for its effects only.
    Cast(Box<Expr>),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Short-circuit `&&` / `||` on scalars; the result is `int` 0 or 1.
    LogicalAnd {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    LogicalOr {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Both branches already have the expression's type. `cond` is a scalar tested against 0.
    Conditional {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// Evaluate `lhs` for effect, then `rhs`.
    Comma {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Store `value` (already of the place's type) and yield it.
    Assign {
        place: Box<Expr>,
        value: Box<Expr>,
    },
    /// `place op= value`: load place, convert it to `op_type`, apply `op` with `value`
    /// (already of `op_type`, or for `PtrAdd` a pointer-width integer), convert back to the
    /// place's type, store, yield the new value.
    CompoundAssign {
        op: BinaryOp,
        place: Box<Expr>,
        value: Box<Expr>,
        op_type: Type,
    },
    /// `++`/`--` on an arithmetic or pointer place; yields the new value (prefix) or the old
    /// one (postfix).
    IncDec {
        place: Box<Expr>,
        increment: bool,
        prefix: bool,
    },
    Call {
        func: FuncId,
        args: Vec<Expr>,
    },
    /// The address of a device function, of type `Type::FnPtr` (`add1` or `&add1` as a value).
    FuncAddr(FuncId),
    /// A call through a pointer to a device function (`op(x)`, `(*op)(x)`, `ops[i](x)`): the
    /// arguments converted to the `Type::FnPtr`'s parameter types.
    CallIndirect {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    Builtin {
        builtin: Builtin,
        args: Vec<Expr>,
    },
    /// `dim3(x, y, z)` with three `unsigned int` operands (missing ones are the constant 1).
    Dim3 {
        x: Box<Expr>,
        y: Box<Expr>,
        z: Box<Expr>,
    },
    /// `kernel<<<grid, block, shared_mem, stream>>>(args)`. Type: void.
    Launch(Box<Launch>),
}

#[derive(Clone, Debug)]
pub struct Launch {
    /// The kernel launched: one named, or the value of a pointer to a kernel.
    pub target: LaunchTarget,
    /// Type dim3.
    pub grid: Expr,
    /// Type dim3.
    pub block: Expr,
    /// Type unsigned int (the runtime takes 32 bits).
    pub shared_mem: Expr,
    /// Type cudaStream_t.
    pub stream: Expr,
    /// Converted to the kernel's parameter types, in order.
    pub args: Vec<Expr>,
    /// Offsets of the arguments in the parameter buffer, its size and alignment.
    pub layout: ParamLayout,
    /// The launch's error is recorded by the device runtime itself (as with nvcc, which
    /// ignores the entry point's return value), so `cudaGetLastError()` sees it; a launch
    /// expression is `void`.
    pub span: Span,
}

/// What a launch launches.
#[derive(Clone, Debug)]
pub enum LaunchTarget {
    /// `child<<<...>>>(...)`, or a launch through a constant pointer sema folded to `child`.
    Kernel(FuncId),
    /// `k<<<...>>>(...)`, `table[i]<<<...>>>(...)`, `(*k)<<<...>>>(...)`: a value of type
    /// `Type::FnPtr` whose kernel is known only at run time, evaluated before the
    /// configuration and the arguments. The parameter buffer's layout comes from the pointer's
    /// type, as nvcc's does.
    Pointer(Box<Expr>),
}

impl Launch {
    /// The kernel launched, when it is known at compile time.
    pub fn kernel(&self) -> Option<FuncId> {
        match self.target {
            LaunchTarget::Kernel(k) => Some(k),
            LaunchTarget::Pointer(_) => None,
        }
    }
}
