//! The syntax tree the parser produces: what the user wrote, with spans, before any name or
//! type is resolved. Semantic analysis (`crate::front::cdp::sema`) turns it into the typed `crate::front::cdp::hir`.

use crate::diag::Span;
pub use crate::types::LaunchBounds;
use crate::types::Quals;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct TranslationUnit {
    pub items: Vec<Item>,
    /// Top-level declarations left to the host compiler (`front::split` decides which), kept so
    /// that device code naming one gets a diagnostic that says why it cannot use it.
    pub skipped: Vec<Skipped>,
}

/// What kind of declaration was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkippedKind {
    /// A function without `__device__` or `__global__` (`main` included).
    Function,
    /// A file-scope variable without `__device__`, `__constant__` or `__shared__`.
    Variable,
    /// Other host declarations: a file-scope `asm("...");`.
    Other,
    /// A declaration device code may use (a type, a `__host__ __device__` function, a `const`
    /// variable) that does not parse as device code; its first error is in [`Skipped::error`].
    Unparsed,
}

/// A top-level declaration the front end did not hand to sema.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub kind: SkippedKind,
    /// The names it declares, with the span of each.
    pub names: Vec<Ident>,
    /// The whole declaration.
    pub span: Span,
    /// For [`SkippedKind::Unparsed`]: the first error found in it.
    pub error: Option<Box<crate::diag::Diagnostic>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Function(FunctionDef),
    Struct(StructDef),
    /// A declaration at file scope: `__device__ int x = 3;`, `__constant__ float k[4];`,
    /// `extern __shared__ float buf[];`.
    Global(DeclStmt),
    /// `typedef unsigned foru;`: a second name for a type.
    Typedef(TypedefDef),
    /// `enum Mode { Fast, Slow = 5 };`, `enum Dir : unsigned char { Up, Down };`
    /// (`front::enums`).
    Enum(EnumDef),
}

/// `enum Name [: base] { A, B = 5 };`
#[derive(Clone, Debug, PartialEq)]
pub struct EnumDef {
    /// `None` for an anonymous enum (its enumerators only).
    pub name: Option<Ident>,
    /// `typedef enum Tag { ... } Alias;`: a second name for it.
    pub alias: Option<Ident>,
    /// `typedef enum { ... } Name;`: no tag; `name` is the typedef's.
    pub tagless: bool,
    /// The underlying type as written after `:`.
    pub base: Option<TypeSpec>,
    pub enumerators: Vec<Enumerator>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Enumerator {
    pub name: Ident,
    /// `= value`; without it, one more than the previous (0 for the first).
    pub value: Option<Expr>,
}

/// `typedef T name;`
#[derive(Clone, Debug, PartialEq)]
pub struct TypedefDef {
    pub name: Ident,
    pub ty: TypeName,
    /// `typedef int (*binop)(int, int);`: the name is a pointer to a function returning `ty`.
    pub function: Option<Box<FunctionDeclarator>>,
    pub span: Span,
}

/// `__global__`, `__device__`, `__host__` and the other words that may precede a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnQualifier {
    Global,
    Device,
    Host,
    /// `extern "C"` (accepted so that a file stays valid CUDA C++; it changes nothing here).
    ExternC,
    Static,
    Inline,
    ForceInline,
    NoInline,
    /// `__launch_bounds__(max_threads[, min_blocks[, max_blocks_per_cluster]])`.
    LaunchBounds(LaunchBounds),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    pub qualifiers: Vec<(FnQualifier, Span)>,
    pub return_type: TypeName,
    pub name: Ident,
    pub params: Vec<Param>,
    /// `None` for a prototype (`__device__ int f(int);`), which lets functions call each other
    /// before their definitions.
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub ty: TypeSpec,
    pub declarator: Declarator,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StructDef {
    pub name: Ident,
    pub fields: Vec<DeclStmt>,
    /// CUDA's `struct __align__(N) Name { ... }`: at least this alignment, with its span.
    pub align: Option<(u64, Span)>,
    /// `union Name { ... }`: every member at offset 0.
    pub union: bool,
    /// `typedef struct { ... } Name;`: no tag; `Name` is the typedef's.
    pub tagless: bool,
    pub span: Span,
}

/// Storage and space qualifiers of a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarQualifier {
    Device,
    Constant,
    Shared,
    /// `__managed__`: a `__device__` variable in unified memory (implies `__device__`).
    Managed,
    Extern,
    Static,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseType {
    Void,
    Bool,
    Char,
    SignedChar,
    UnsignedChar,
    Short,
    UnsignedShort,
    Int,
    UnsignedInt,
    Long,
    UnsignedLong,
    LongLong,
    UnsignedLongLong,
    Float,
    Double,
    SizeT,
    Dim3,
    Stream,
    Event,
    CudaError,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeSpecKind {
    Builtin(BaseType),
    /// `struct S` or, as C++ allows, plain `S` after `struct S { ... };`.
    Struct(Ident),
}

/// The declaration specifiers: a base type and its qualifiers.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeSpec {
    pub kind: TypeSpecKind,
    pub is_const: bool,
    pub is_volatile: bool,
    pub span: Span,
}

impl TypeSpec {
    pub fn quals(&self) -> Quals {
        Quals { is_const: self.is_const, is_volatile: self.is_volatile }
    }
}

/// One `*` of a declarator, and the qualifiers of the pointer itself (`int *const p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerLevel {
    pub is_const: bool,
    pub is_volatile: bool,
    pub span: Span,
}

impl PointerLevel {
    pub fn quals(&self) -> Quals {
        Quals { is_const: self.is_const, is_volatile: self.is_volatile }
    }
}

/// The part of a declaration that names one variable: `*const *p[3][4]`.
/// Array dimensions may be empty (`[]`) for `extern __shared__` arrays and parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Declarator {
    pub pointers: Vec<PointerLevel>,
    pub name: Ident,
    pub array_dims: Vec<ArrayDim>,
    /// `name : width` in a struct: a bit-field (an unnamed one, `int : 0;`, has an empty name).
    pub bit_width: Option<Box<Expr>>,
    /// `ret (*name[N])(params)`: `name` is a pointer to a function (or an array of them, the
    /// dimensions being `array_dims`); `pointers` are then the return type's.
    pub function: Option<Box<FunctionDeclarator>>,
    pub span: Span,
}

/// The part of a function-pointer declarator `(*name)(params)` that is not a name: the
/// pointer levels inside the parentheses (`(**pp)` is a pointer to a pointer to a function)
/// and the parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDeclarator {
    pub pointers: Vec<PointerLevel>,
    pub params: Vec<Param>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDim {
    pub size: Option<Expr>,
    pub span: Span,
}

/// A type written without a name, as in casts, `sizeof` and return types: `const int *`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeName {
    pub spec: TypeSpec,
    pub pointers: Vec<PointerLevel>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeclStmt {
    pub qualifiers: Vec<(VarQualifier, Span)>,
    pub spec: TypeSpec,
    pub declarators: Vec<InitDeclarator>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct InitDeclarator {
    pub declarator: Declarator,
    pub init: Option<Initializer>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Initializer {
    /// `= expr`
    Expr(Expr),
    /// `= { a, b, { c } }`
    List(Vec<Initializer>, Span),
    /// Constructor syntax: `dim3 grid(4, 2);` (of any other type C++, sema's `E0923`)
    Ctor(Vec<Expr>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Decl(DeclStmt),
    Expr(Expr),
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
        span: Span,
    },
    While {
        cond: Expr,
        body: Box<Stmt>,
        span: Span,
    },
    DoWhile {
        body: Box<Stmt>,
        cond: Expr,
        span: Span,
    },
    /// `init` is a declaration or an expression statement (or `None` for `for (;;)`).
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        step: Option<Expr>,
        body: Box<Stmt>,
        span: Span,
    },
    Break(Span),
    Continue(Span),
    Return(Option<Expr>, Span),
    Block(Block),
    Empty(Span),
    /// GCC-style inline assembly, `asm volatile("..." : outputs : inputs : clobbers);`.
    Asm(Box<AsmStmt>),
    /// `switch (cond) body`; its `case` and `default` labels are statements of the body.
    /// `head` covers `switch (cond)`.
    Switch {
        cond: Expr,
        body: Box<Stmt>,
        head: Span,
        span: Span,
    },
    /// `case value: stmt`, or GNU's `case low ... high: stmt` (refused by sema) with `high`.
    /// `span` covers `case value:`.
    Case {
        value: Expr,
        high: Option<Expr>,
        stmt: Box<Stmt>,
        span: Span,
    },
    /// `default: stmt`; `span` covers `default:`.
    Default {
        stmt: Box<Stmt>,
        span: Span,
    },
    /// `name: stmt`, the target of a `goto`.
    Label {
        name: Ident,
        stmt: Box<Stmt>,
    },
    /// `goto name;`
    Goto(Ident, Span),
}

/// An `asm` statement as written (`sema::asm` checks it). The template is kept as its string
/// literals, each with its span, so that a message can point into the literal it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct AsmStmt {
    /// `volatile`/`__volatile__` after `asm`.
    pub volatile: bool,
    /// The adjacent string literals of the template, unescaped, each with its span.
    pub template: Vec<(Vec<u8>, Span)>,
    pub outputs: Vec<AsmOperand>,
    pub inputs: Vec<AsmOperand>,
    pub clobbers: Vec<(Vec<u8>, Span)>,
    pub span: Span,
}

/// `"=r"(x)`: a constraint string and the operand's expression.
#[derive(Clone, Debug, PartialEq)]
pub struct AsmOperand {
    pub constraint: Vec<u8>,
    pub constraint_span: Span,
    pub expr: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    BitNot,
    Deref,
    AddrOf,
    PreInc,
    PreDec,
    PostInc,
    PostDec,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    LogAnd,
    LogOr,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Rem => "%",
            Add => "+",
            Sub => "-",
            Shl => "<<",
            Shr => ">>",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            LogAnd => "&&",
            LogOr => "||",
        }
    }
}

/// The suffix of an integer literal (`u`, `l`, `ll` and combinations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IntSuffix {
    pub unsigned: bool,
    /// 0 for none, 1 for `l`, 2 for `ll`.
    pub long: u8,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// `decimal` matters: C gives hex and octal literals unsigned types where decimal ones
    /// would not fit a signed type.
    IntLit {
        value: u64,
        suffix: IntSuffix,
        decimal: bool,
    },
    /// `is_float` for the `f`/`F` suffix.
    FloatLit {
        value: f64,
        is_float: bool,
    },
    CharLit(u8),
    StringLit(Vec<u8>),
    BoolLit(bool),
    Ident(Ident),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `lhs = rhs` (op `None`) or `lhs op= rhs`.
    Assign {
        op: Option<BinaryOp>,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Conditional {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Comma {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `(T)e`; with `function`, `(T (*)(params))e`, a cast to a pointer to a function that
    /// returns `T` (`ty`).
    Cast {
        ty: TypeName,
        function: Option<Box<FunctionDeclarator>>,
        operand: Box<Expr>,
    },
    SizeofType(TypeName),
    SizeofExpr(Box<Expr>),
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `kernel<<<config...>>>(args)`; `config` holds 2 to 4 expressions as written (the parser
    /// accepts any count so that sema can report a wrong one with a good message).
    Launch {
        kernel: Ident,
        config: Vec<Expr>,
        config_span: Span,
        args: Vec<Expr>,
    },
    /// `(*k)<<<config...>>>(args)`, `table[i]<<<...>>>(...)`, `s.k<<<...>>>(...)`: a launch through
    /// a pointer to a kernel given by an expression other than a name (a name is a `Launch`,
    /// which sema resolves to a kernel or to a variable holding a pointer).
    LaunchThrough {
        target: Box<Expr>,
        config: Vec<Expr>,
        config_span: Span,
        args: Vec<Expr>,
    },
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    Member {
        base: Box<Expr>,
        field: Ident,
        arrow: bool,
    },
    /// `dim3(4, 2)`, CUDA's construction of a `dim3`; the same form of any other type, a
    /// functional cast or constructor call (`float(x)`), is C++ (sema, `E0923`).
    Construct {
        ty: TypeName,
        args: Vec<Expr>,
    },
}
