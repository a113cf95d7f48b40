//! Sample manifests (`samples/NAME.toml`, format in `samples/MANIFEST.md`): parsing, formula
//! evaluation, buffer contents and kernel-argument bytes. Pure host code: no CUDA here.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// A manifest error: what is wrong, where.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestError(pub String);

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ManifestError {}

type Result<T> = std::result::Result<T, ManifestError>;

fn err<T>(message: impl Into<String>) -> Result<T> {
    Err(ManifestError(message.into()))
}

// ---------------------------------------------------------------------------------------------
// element types and values

/// An element or scalar type: `i8 u8 i16 u16 i32 u32 i64 u64 f32 f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemType {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl ElemType {
    pub const ALL: [ElemType; 10] = [ElemType::I8, ElemType::U8, ElemType::I16, ElemType::U16, ElemType::I32, ElemType::U32, ElemType::I64, ElemType::U64, ElemType::F32, ElemType::F64];

    pub fn parse(name: &str) -> Result<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| ManifestError(format!("unknown type `{name}` (one of i8 u8 i16 u16 i32 u32 i64 u64 f32 f64)")))
    }

    pub fn name(self) -> &'static str {
        match self {
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I16 => "i16",
            ElemType::U16 => "u16",
            ElemType::I32 => "i32",
            ElemType::U32 => "u32",
            ElemType::I64 => "i64",
            ElemType::U64 => "u64",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    pub fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::I16 | ElemType::U16 => 2,
            ElemType::I32 | ElemType::U32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::U64 | ElemType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }

    fn int_range(self) -> (i128, i128) {
        match self {
            ElemType::I8 => (i8::MIN.into(), i8::MAX.into()),
            ElemType::U8 => (0, u8::MAX.into()),
            ElemType::I16 => (i16::MIN.into(), i16::MAX.into()),
            ElemType::U16 => (0, u16::MAX.into()),
            ElemType::I32 => (i32::MIN.into(), i32::MAX.into()),
            ElemType::U32 => (0, u32::MAX.into()),
            ElemType::I64 => (i64::MIN.into(), i64::MAX.into()),
            ElemType::U64 => (0, u64::MAX.into()),
            ElemType::F32 | ElemType::F64 => (i128::MIN, i128::MAX),
        }
    }

    /// The little-endian bytes of `value` as this type. Integers must fit; a float stored into
    /// an integer type must be integral; an integer stored into a float type is converted.
    pub fn encode(self, value: Num) -> Result<Vec<u8>> {
        let int = |v: Num| -> Result<i128> {
            let i = match v {
                Num::Int(i) => i,
                Num::Float(f) if f.fract() == 0.0 && f.abs() < 1.8e19 => f as i128,
                Num::Float(f) => return err(format!("{f} is not an integer, but the type is {}", self.name())),
            };
            let (lo, hi) = self.int_range();
            if i < lo || i > hi {
                return err(format!("{i} does not fit in {}", self.name()));
            }
            Ok(i)
        };
        Ok(match self {
            ElemType::I8 => (int(value)? as i8).to_le_bytes().to_vec(),
            ElemType::U8 => (int(value)? as u8).to_le_bytes().to_vec(),
            ElemType::I16 => (int(value)? as i16).to_le_bytes().to_vec(),
            ElemType::U16 => (int(value)? as u16).to_le_bytes().to_vec(),
            ElemType::I32 => (int(value)? as i32).to_le_bytes().to_vec(),
            ElemType::U32 => (int(value)? as u32).to_le_bytes().to_vec(),
            ElemType::I64 => (int(value)? as i64).to_le_bytes().to_vec(),
            ElemType::U64 => (int(value)? as u64).to_le_bytes().to_vec(),
            ElemType::F32 => (value.as_f64() as f32).to_le_bytes().to_vec(),
            ElemType::F64 => value.as_f64().to_le_bytes().to_vec(),
        })
    }

    /// Reads one element from exactly `self.size()` little-endian bytes.
    pub fn decode(self, bytes: &[u8]) -> Num {
        fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
            b[..N].try_into().expect("element bytes")
        }
        match self {
            ElemType::I8 => Num::Int(i8::from_le_bytes(arr(bytes)).into()),
            ElemType::U8 => Num::Int(u8::from_le_bytes(arr(bytes)).into()),
            ElemType::I16 => Num::Int(i16::from_le_bytes(arr(bytes)).into()),
            ElemType::U16 => Num::Int(u16::from_le_bytes(arr(bytes)).into()),
            ElemType::I32 => Num::Int(i32::from_le_bytes(arr(bytes)).into()),
            ElemType::U32 => Num::Int(u32::from_le_bytes(arr(bytes)).into()),
            ElemType::I64 => Num::Int(i64::from_le_bytes(arr(bytes)).into()),
            ElemType::U64 => Num::Int(u64::from_le_bytes(arr(bytes)).into()),
            ElemType::F32 => Num::Float(f32::from_le_bytes(arr(bytes)).into()),
            ElemType::F64 => Num::Float(f64::from_le_bytes(arr(bytes))),
        }
    }

    /// Decodes a whole buffer.
    pub fn decode_all(self, bytes: &[u8]) -> Vec<Num> {
        bytes.chunks_exact(self.size()).map(|c| self.decode(c)).collect()
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A number from a manifest or a buffer: integers up to u64/i64 exactly, or a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Parses `5`, `-3`, `0xAA`, `18446744073709551615`, `1.5`, `3.0e300`, `inf`, `nan`.
    pub fn parse(text: &str) -> Option<Num> {
        let t = text.trim();
        let (neg, digits) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            let v = i128::from_str_radix(hex, 16).ok()?;
            return Some(Num::Int(if neg { -v } else { v }));
        }
        if let Ok(v) = t.parse::<i128>() {
            return Some(Num::Int(v));
        }
        t.parse::<f64>().ok().map(Num::Float)
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(x) => write!(f, "{x:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// formulas

/// A formula in the element index `i` and the manifest's `[vars]` (evalexpr syntax), parsed once.
pub struct Formula {
    text: String,
    tree: evalexpr::Node,
    context: evalexpr::HashMapContext,
}

impl Formula {
    pub fn new(text: &str, vars: &BTreeMap<String, i64>) -> Result<Formula> {
        use evalexpr::ContextWithMutableVariables;
        let tree = evalexpr::build_operator_tree(text).map_err(|e| ManifestError(format!("formula `{text}`: {e}")))?;
        let mut context = evalexpr::HashMapContext::new();
        for (name, value) in vars {
            context.set_value(name.clone(), evalexpr::Value::Int(*value)).map_err(|e| ManifestError(format!("variable `{name}`: {e}")))?;
        }
        Ok(Formula { text: text.to_string(), tree, context })
    }

    /// The value at element `i` (or with `i` unset when `None`).
    pub fn eval(&mut self, i: Option<i64>) -> Result<Num> {
        use evalexpr::ContextWithMutableVariables;
        if let Some(i) = i {
            self.context.set_value("i".into(), evalexpr::Value::Int(i)).map_err(|e| ManifestError(e.to_string()))?;
        }
        match self.tree.eval_with_context(&self.context) {
            Ok(evalexpr::Value::Int(v)) => Ok(Num::Int(v.into())),
            Ok(evalexpr::Value::Float(v)) => Ok(Num::Float(v)),
            Ok(evalexpr::Value::Boolean(b)) => Ok(Num::Int(b.into())),
            Ok(other) => err(format!("formula `{}` gives {other}, not a number", self.text)),
            Err(e) => err(format!("formula `{}`{}: {e}", self.text, i.map(|i| format!(" at i = {i}")).unwrap_or_default())),
        }
    }
}

/// Evaluates a formula without `i` (lengths, grid sizes, scalar arguments).
pub fn eval_constant(text: &str, vars: &BTreeMap<String, i64>) -> Result<Num> {
    if let Some(n) = Num::parse(text) {
        return Ok(n);
    }
    Formula::new(text, vars)?.eval(None)
}

fn eval_count(value: &toml::Value, what: &str, vars: &BTreeMap<String, i64>) -> Result<u64> {
    let n = match value {
        toml::Value::Integer(i) => Num::Int((*i).into()),
        toml::Value::String(s) => eval_constant(s, vars)?,
        other => return err(format!("{what}: expected an integer or a formula, found {other}")),
    };
    match n {
        Num::Int(i) if (0..=u64::MAX as i128).contains(&i) => Ok(i as u64),
        other => err(format!("{what}: {other} is not a non-negative integer")),
    }
}

// ---------------------------------------------------------------------------------------------
// the manifest as written

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    description: String,
    #[serde(default = "yes")]
    deterministic: bool,
    #[serde(default)]
    vars: BTreeMap<String, i64>,
    #[serde(default)]
    limits: Limits,
    launch: RawLaunch,
    #[serde(default)]
    buffer: Vec<RawBuffer>,
    #[serde(default)]
    global: Vec<RawGlobal>,
    #[serde(default)]
    graph: Vec<RawGraph>,
    stdout: Option<String>,
    abis: Option<Vec<String>>,
    expect_error: Option<String>,
    no_threshold: Option<String>,
    time_alone: Option<String>,
}

fn yes() -> bool {
    true
}

/// Device-runtime limits, set on the context before the module is loaded.
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub pending_launch_count: Option<u64>,
    pub heap_bytes: Option<u64>,
    pub stack_bytes: Option<u64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
/// `[launch]` (which alone may say `cooperative`), and each kernel launch in the body of a
/// conditional node.
struct RawLaunch {
    kernel: String,
    grid: toml::Value,
    block: toml::Value,
    #[serde(default)]
    shared_bytes: Option<toml::Value>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    device_updatable: Option<bool>,
    #[serde(default)]
    cooperative: Option<bool>,
}

/// A node of a `[[graph]]`: a kernel launch (`kernel = ...`, which alone may say
/// `device_updatable`), or a conditional node (`if = "HANDLE"` or `while = "HANDLE"`, with
/// `default` and `body`).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawNode {
    kernel: Option<String>,
    grid: Option<toml::Value>,
    block: Option<toml::Value>,
    #[serde(default)]
    shared_bytes: Option<toml::Value>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    device_updatable: Option<bool>,
    #[serde(rename = "if")]
    if_handle: Option<String>,
    #[serde(rename = "while")]
    while_handle: Option<String>,
    default: Option<i64>,
    body: Option<Vec<RawLaunch>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawGraph {
    name: String,
    /// "device" (the default) or "host".
    launch: Option<String>,
    nodes: Vec<RawNode>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawBuffer {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    len: toml::Value,
    init: Option<toml::Value>,
    expect: Option<toml::Value>,
    check: Option<String>,
    tolerance: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RawGlobal {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    expect: Option<toml::Value>,
}

// ---------------------------------------------------------------------------------------------
// the manifest, checked

/// A launch ABI of cdpc (`--launch-abi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    V1,
    V2,
}

impl Abi {
    pub fn parse(name: &str) -> Option<Abi> {
        match name {
            "v1" => Some(Abi::V1),
            "v2" => Some(Abi::V2),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Abi::V1 => "v1",
            Abi::V2 => "v2",
        }
    }
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// `buf:NAME`: the device pointer of buffer NAME.
    Buffer(String),
    /// `graph:NAME`: the `cudaGraphExec_t` of graph NAME, instantiated for device launch.
    Graph(String),
    /// `node:NAME.K`: the `cudaGraphDeviceNode_t` of node K (from 0) of graph NAME, which must
    /// be `device_updatable`.
    Node(String, usize),
    /// `cond:GRAPH.HANDLE`: the `cudaGraphConditionalHandle` of conditional node HANDLE of graph
    /// GRAPH, for `cudaGraphSetConditional` in a kernel of that graph.
    Cond(String, String),
    /// `TYPE:VALUE`.
    Scalar(ElemType, Num),
}

impl Arg {
    /// Parses `buf:NAME` or `TYPE:VALUE` (VALUE a number or a formula in the `[vars]`).
    pub fn parse(text: &str, vars: &BTreeMap<String, i64>) -> Result<Arg> {
        let Some((kind, value)) = text.split_once(':') else {
            return err(format!("argument `{text}`: expected `buf:NAME` or `TYPE:VALUE`"));
        };
        if kind == "buf" {
            return Ok(Arg::Buffer(value.to_string()));
        }
        if kind == "graph" {
            return Ok(Arg::Graph(value.to_string()));
        }
        if kind == "node" {
            let parsed = value.rsplit_once('.').and_then(|(g, k)| Some((g.to_string(), k.parse().ok()?)));
            let Some((graph, index)) = parsed else {
                return err(format!("argument `{text}`: expected `node:GRAPH.INDEX`"));
            };
            return Ok(Arg::Node(graph, index));
        }
        if kind == "cond" {
            let Some((graph, handle)) = value.rsplit_once('.').filter(|(g, h)| !g.is_empty() && !h.is_empty()) else {
                return err(format!("argument `{text}`: expected `cond:GRAPH.HANDLE`"));
            };
            return Ok(Arg::Cond(graph.to_string(), handle.to_string()));
        }
        let ty = ElemType::parse(kind).map_err(|e| ManifestError(format!("argument `{text}`: {e}")))?;
        let num = eval_constant(value, vars).map_err(|e| ManifestError(format!("argument `{text}`: {e}")))?;
        ty.encode(num).map_err(|e| ManifestError(format!("argument `{text}`: {e}")))?;
        Ok(Arg::Scalar(ty, num))
    }

    /// The bytes the kernel receives for this argument: a buffer's 8-byte device pointer, a
    /// graph, node or condition handle, or the scalar's little-endian bytes. `handle` resolves a
    /// buffer by its name, a graph as `graph:NAME`, a node as `node:NAME.K` and a condition
    /// handle as `cond:NAME.HANDLE`.
    pub fn bytes(&self, handle: impl Fn(&str) -> Option<u64>) -> Result<Vec<u8>> {
        let resolve = |key: &str, text: String| handle(key).map(|p| p.to_le_bytes().to_vec()).ok_or_else(|| ManifestError(format!("argument `{text}`: not found")));
        match self {
            Arg::Graph(name) => resolve(&format!("graph:{name}"), format!("graph:{name}")),
            Arg::Node(graph, k) => resolve(&format!("node:{graph}.{k}"), format!("node:{graph}.{k}")),
            Arg::Cond(graph, h) => resolve(&format!("cond:{graph}.{h}"), format!("cond:{graph}.{h}")),
            Arg::Buffer(name) => handle(name).map(|p| p.to_le_bytes().to_vec()).ok_or_else(|| ManifestError(format!("argument `buf:{name}`: no buffer named `{name}`"))),
            Arg::Scalar(ty, value) => ty.encode(*value),
        }
    }
}

/// How a buffer starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    Zero,
    Iota,
    Random(u64),
    Values(Vec<Num>),
    Formula(String),
}

/// What a buffer must hold afterwards.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    /// Every element equals this.
    All(Num),
    /// The first elements equal these.
    Prefix(Vec<Num>),
    /// Element `i` equals the formula's value.
    Formula(String),
}

/// An invariant of a buffer's final contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Sorted,
    Permutation,
    Nonzero,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub name: String,
    pub ty: ElemType,
    pub len: usize,
    pub init: Init,
    pub expect: Option<Expect>,
    pub check: Option<Check>,
    /// Absolute tolerance for float comparisons (an extension; exact when absent).
    pub tolerance: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub name: String,
    pub ty: ElemType,
    pub expect: Option<Num>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<Arg>,
    /// `cooperative = true` (the top-level `[launch]` only): launched with
    /// `cuLaunchCooperativeKernel` (or, as a graph node, with `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`),
    /// so that the grid's blocks are co-resident and grid-wide synchronisation works.
    pub cooperative: bool,
}

/// Who launches a `[[graph]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphLaunch {
    /// Instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH` and uploaded; device code
    /// that receives it (`graph:NAME`) launches it with `cudaGraphLaunch`.
    Device,
    /// Instantiated for the host; the runner launches it (`cuGraphLaunch`) on the top-level
    /// launch's stream right after that launch, in the order of the tables, in every run.
    Host,
}

/// A graph the runner builds on the host before the launch: its nodes run one after the other.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub name: String,
    pub launch: GraphLaunch,
    pub nodes: Vec<Node>,
}

impl Graph {
    /// Every kernel launch of the graph, those in conditional bodies included.
    pub fn kernels(&self) -> Vec<&Launch> {
        let mut out = Vec::new();
        for n in &self.nodes {
            match n {
                Node::Kernel(k) => out.push(&k.launch),
                Node::Conditional(c) => out.extend(c.body.iter()),
            }
        }
        out
    }

    /// The conditional nodes' handle names.
    pub fn handles(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                Node::Conditional(c) => Some(c.handle.as_str()),
                Node::Kernel(_) => None,
            })
            .collect()
    }
}

/// One node of a graph; `node:GRAPH.K` counts them from 0.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Kernel(GraphNode),
    Conditional(Conditional),
}

#[derive(Clone, Debug, PartialEq)]
pub struct GraphNode {
    pub launch: Launch,
    /// Created with `CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE`, so that device code can
    /// update it through the handle `node:GRAPH.K` passes.
    pub device_updatable: bool,
}

/// IF runs its body once when the condition is non-zero; WHILE runs it as long as the
/// condition is non-zero, tested before each pass (`CUgraphConditionalNodeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondKind {
    If,
    While,
}

/// A conditional node (`{ if = "H", default = 0, body = [...] }` or `{ while = "H", ... }`):
/// its handle is made with `cuGraphConditionalHandleCreate(default, CU_GRAPH_COND_ASSIGN_DEFAULT)`,
/// so that every launch of the graph starts from `default`; a kernel of the graph that gets the
/// handle (`cond:GRAPH.H`) sets it with `cudaGraphSetConditional`. The body's kernel nodes run
/// one after the other.
#[derive(Clone, Debug, PartialEq)]
pub struct Conditional {
    pub kind: CondKind,
    pub handle: String,
    pub default: u32,
    pub body: Vec<Launch>,
}

/// A checked manifest: everything the loader needs to run a sample and judge its output.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub name: String,
    pub description: String,
    pub deterministic: bool,
    pub vars: BTreeMap<String, i64>,
    pub limits: Limits,
    pub launch: Launch,
    pub buffers: Vec<Buffer>,
    pub globals: Vec<Global>,
    /// Device graphs (`[[graph]]`); when there are any, the top-level launch itself runs as a
    /// one-node graph, since device graphs may only be launched from a kernel in a graph.
    pub graphs: Vec<Graph>,
    pub stdout: Option<String>,
    pub abis: Vec<Abi>,
    pub expect_error: Option<String>,
    /// Why the sample means nothing when small launches run in their launching thread
    /// (`-flaunch-threshold`): builds with it are "not built" rather than failures.
    pub no_threshold: Option<String>,
    /// Why each compiler's cubin is timed in a process of its own (`cdpc-run diff`), one after
    /// another, instead of all of them interleaved in one process: err_pending_limit's
    /// interleaved timing stops making progress after many runs.
    pub time_alone: Option<String>,
}

fn dims(value: &toml::Value, what: &str, vars: &BTreeMap<String, i64>) -> Result<[u32; 3]> {
    let items: Vec<toml::Value> = match value {
        toml::Value::Array(a) if (1..=3).contains(&a.len()) => a.clone(),
        toml::Value::Array(_) => return err(format!("{what}: expected 1 to 3 dimensions")),
        other => vec![other.clone()],
    };
    let mut out = [1u32; 3];
    for (k, item) in items.iter().enumerate() {
        let n = eval_count(item, what, vars)?;
        if n == 0 || n > u32::MAX as u64 {
            return err(format!("{what}: dimension {k} is {n}; it must be 1 to {}", u32::MAX));
        }
        out[k] = n as u32;
    }
    Ok(out)
}

fn num_of(value: &toml::Value, what: &str) -> Result<Num> {
    match value {
        toml::Value::Integer(i) => Ok(Num::Int((*i).into())),
        toml::Value::Float(f) => Ok(Num::Float(*f)),
        toml::Value::Boolean(b) => Ok(Num::Int((*b).into())),
        toml::Value::String(s) => Num::parse(s).ok_or_else(|| ManifestError(format!("{what}: `{s}` is not a number"))),
        other => err(format!("{what}: expected a number, found {other}")),
    }
}

fn nums_of(values: &[toml::Value], what: &str) -> Result<Vec<Num>> {
    values.iter().enumerate().map(|(k, v)| num_of(v, &format!("{what}[{k}]"))).collect()
}

impl Manifest {
    /// Reads `path`; the sample's name is the file stem.
    pub fn load(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| ManifestError(format!("cannot read `{}`: {e}", path.display())))?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Manifest::parse(&name, &text).map_err(|e| ManifestError(format!("{}: {e}", path.display())))
    }

    /// Parses and checks a manifest's text.
    pub fn parse(name: &str, text: &str) -> Result<Manifest> {
        let raw: RawManifest = toml::from_str(text).map_err(|e| {
            let message = e.to_string();
            let top_level = ["description", "deterministic", "stdout", "abis", "expect_error", "no_threshold", "time_alone"];
            if top_level.iter().any(|k| message.contains(&format!("unknown field `{k}`"))) {
                ManifestError(format!("{message}note: in TOML a key after a [table] header belongs to that table; put the top-level keys (description, deterministic, stdout, abis, expect_error, no_threshold, time_alone) before the first [table]"))
            } else {
                ManifestError(message)
            }
        })?;
        Manifest::from_raw(name, raw)
    }

    fn from_raw(name: &str, raw: RawManifest) -> Result<Manifest> {
        let vars = raw.vars;
        if vars.contains_key("i") {
            return err("[vars] may not define `i`: it is the element index");
        }
        let mut buffers = Vec::new();
        for b in raw.buffer {
            let what = format!("buffer `{}`", b.name);
            if buffers.iter().any(|x: &Buffer| x.name == b.name) {
                return err(format!("{what} is defined twice"));
            }
            let ty = ElemType::parse(&b.ty).map_err(|e| ManifestError(format!("{what}: {e}")))?;
            let len = eval_count(&b.len, &format!("{what}: len"), &vars)? as usize;
            let init = match &b.init {
                None => Init::Zero,
                Some(toml::Value::String(s)) => match s.as_str() {
                    "zero" => Init::Zero,
                    "iota" => Init::Iota,
                    s if s.starts_with("random:") => {
                        let seed = s["random:".len()..].trim().parse().map_err(|_| ManifestError(format!("{what}: bad seed in `{s}`")))?;
                        Init::Random(seed)
                    }
                    s => {
                        Formula::new(s, &vars).map_err(|e| ManifestError(format!("{what}: init: {e}")))?;
                        Init::Formula(s.to_string())
                    }
                },
                Some(toml::Value::Array(a)) => {
                    if a.len() > len {
                        return err(format!("{what}: init has {} values for {len} elements", a.len()));
                    }
                    Init::Values(nums_of(a, &format!("{what}: init"))?)
                }
                Some(other) => Init::Values(vec![num_of(other, &format!("{what}: init"))?; len]),
            };
            let expect = match &b.expect {
                None => None,
                Some(toml::Value::Array(a)) => {
                    if a.len() > len {
                        return err(format!("{what}: expect has {} values for {len} elements", a.len()));
                    }
                    Some(Expect::Prefix(nums_of(a, &format!("{what}: expect"))?))
                }
                Some(toml::Value::String(s)) => match Num::parse(s) {
                    Some(n) => Some(Expect::All(n)),
                    None => {
                        Formula::new(s, &vars).map_err(|e| ManifestError(format!("{what}: expect: {e}")))?;
                        Some(Expect::Formula(s.clone()))
                    }
                },
                Some(other) => Some(Expect::All(num_of(other, &format!("{what}: expect"))?)),
            };
            let check = match b.check.as_deref() {
                None => None,
                Some("sorted") => Some(Check::Sorted),
                Some("permutation") => Some(Check::Permutation),
                Some("nonzero") => Some(Check::Nonzero),
                Some(other) => return err(format!("{what}: unknown check `{other}` (sorted, permutation, nonzero)")),
            };
            buffers.push(Buffer { name: b.name, ty, len, init, expect, check, tolerance: b.tolerance });
        }
        let mut globals = Vec::new();
        for g in raw.global {
            let what = format!("global `{}`", g.name);
            let ty = ElemType::parse(&g.ty).map_err(|e| ManifestError(format!("{what}: {e}")))?;
            let expect = match &g.expect {
                None => None,
                Some(toml::Value::String(s)) => Some(eval_constant(s, &vars)?),
                Some(v) => Some(num_of(v, &what)?),
            };
            if let Some(e) = expect {
                ty.encode(e).map_err(|e| ManifestError(format!("{what}: expect: {e}")))?;
            }
            globals.push(Global { name: g.name, ty, expect });
        }
        let l = raw.launch;
        if l.device_updatable.is_some() {
            return err("launch.device_updatable: only a [[graph]] node can be device-updatable");
        }
        let mut launch = launch_of("launch", l.kernel, &l.grid, &l.block, l.shared_bytes.as_ref(), &l.args, &vars, &buffers)?;
        launch.cooperative = l.cooperative.unwrap_or(false);
        if let Some(Arg::Cond(g, h)) = launch.args.iter().find(|a| matches!(a, Arg::Cond(..))) {
            return err(format!("argument `cond:{g}.{h}`: a condition handle is passed to kernels of its own graph, not to [launch]"));
        }
        let mut graphs: Vec<Graph> = Vec::new();
        for g in raw.graph {
            let graph = graph_of(g, &vars, &buffers)?;
            if graphs.iter().any(|x| x.name == graph.name) {
                return err(format!("graph `{}` is defined twice", graph.name));
            }
            graphs.push(graph);
        }
        for a in &launch.args {
            match a {
                Arg::Graph(g) => match graphs.iter().find(|x| &x.name == g) {
                    None => return err(format!("argument `graph:{g}`: no [[graph]] named `{g}`")),
                    Some(x) if x.launch == GraphLaunch::Host => return err(format!("argument `graph:{g}`: graph `{g}` is `launch = \"host\"`, not instantiated for device launch")),
                    Some(_) => {}
                },
                Arg::Node(g, k) => match graphs.iter().find(|x| &x.name == g).and_then(|x| x.nodes.get(*k)) {
                    None => return err(format!("argument `node:{g}.{k}`: graph `{g}` has no node {k}")),
                    Some(Node::Kernel(node)) if node.device_updatable => {}
                    Some(_) => return err(format!("argument `node:{g}.{k}`: the node is not `device_updatable = true`")),
                },
                _ => {}
            }
        }
        let abis = match raw.abis {
            None => vec![Abi::V1, Abi::V2],
            Some(list) => list.iter().map(|a| Abi::parse(a).ok_or_else(|| ManifestError(format!("abis: unknown ABI `{a}` (v1, v2)")))).collect::<Result<Vec<_>>>()?,
        };
        Ok(Manifest {
            name: name.to_string(),
            description: raw.description,
            deterministic: raw.deterministic,
            vars,
            limits: raw.limits,
            launch,
            buffers,
            globals,
            graphs,
            stdout: raw.stdout,
            abis,
            expect_error: raw.expect_error,
            no_threshold: raw.no_threshold,
            time_alone: raw.time_alone,
        })
    }

    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// The kernel's arguments, each as the bytes `cuLaunchKernel` copies.
    pub fn arg_bytes(&self, buffer_address: impl Fn(&str) -> Option<u64>) -> Result<Vec<Vec<u8>>> {
        self.launch.args.iter().map(|a| a.bytes(&buffer_address)).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// buffer contents

/// A `[[graph]]` checked: its nodes, their handles, and who launches it.
fn graph_of(g: RawGraph, vars: &BTreeMap<String, i64>, buffers: &[Buffer]) -> Result<Graph> {
    let what = format!("graph `{}`", g.name);
    let launch = match g.launch.as_deref() {
        None | Some("device") => GraphLaunch::Device,
        Some("host") => GraphLaunch::Host,
        Some(other) => return err(format!("{what}: launch = `{other}`: expected \"device\" or \"host\"")),
    };
    if g.nodes.is_empty() {
        return err(format!("{what} has no nodes"));
    }
    let mut nodes = Vec::new();
    for (k, n) in g.nodes.into_iter().enumerate() {
        let node_what = format!("{what}, node {k}");
        let cond = match (n.if_handle, n.while_handle) {
            (Some(_), Some(_)) => return err(format!("{node_what}: a conditional node is `if` or `while`, not both")),
            (Some(h), None) => Some((CondKind::If, h)),
            (None, Some(h)) => Some((CondKind::While, h)),
            (None, None) => None,
        };
        let Some((kind, handle)) = cond else {
            if n.default.is_some() || n.body.is_some() {
                return err(format!("{node_what}: `default` and `body` belong to a conditional node (`if = \"HANDLE\"` or `while = \"HANDLE\"`)"));
            }
            let (Some(kernel), Some(grid), Some(block)) = (n.kernel, n.grid, n.block) else {
                return err(format!("{node_what}: a kernel node needs `kernel`, `grid` and `block` (or write a conditional node: `if`/`while`, `default`, `body`)"));
            };
            let launch = launch_of(&node_what, kernel, &grid, &block, n.shared_bytes.as_ref(), &n.args, vars, buffers)?;
            nodes.push(Node::Kernel(GraphNode { launch, device_updatable: n.device_updatable.unwrap_or(false) }));
            continue;
        };
        if n.kernel.is_some() || n.grid.is_some() || n.block.is_some() || n.shared_bytes.is_some() || !n.args.is_empty() || n.device_updatable.is_some() {
            return err(format!("{node_what}: a conditional node has `default` and `body`; its kernels go in `body`"));
        }
        if handle.is_empty() || handle.contains('.') {
            return err(format!("{node_what}: handle name `{handle}` must be non-empty and without `.`"));
        }
        let default = match n.default {
            None => return err(format!("{node_what}: a conditional node needs `default`, the condition's value at the start of every launch of the graph")),
            Some(d) => u32::try_from(d).map_err(|_| ManifestError(format!("{node_what}: default = {d} is not an unsigned int")))?,
        };
        let mut body = Vec::new();
        for (j, b) in n.body.unwrap_or_default().into_iter().enumerate() {
            let body_what = format!("{node_what}, body node {j}");
            if b.device_updatable.is_some() || b.cooperative.is_some() {
                return err(format!("{body_what}: a body node is a plain kernel launch (no `device_updatable`, no `cooperative`)"));
            }
            body.push(launch_of(&body_what, b.kernel, &b.grid, &b.block, b.shared_bytes.as_ref(), &b.args, vars, buffers)?);
        }
        if body.is_empty() {
            return err(format!("{node_what}: the conditional node's `body` has no kernels"));
        }
        nodes.push(Node::Conditional(Conditional { kind, handle, default, body }));
    }
    let graph = Graph { name: g.name, launch, nodes };
    let handles = graph.handles();
    for (k, h) in handles.iter().enumerate() {
        if handles[..k].contains(h) {
            return err(format!("{what}: condition handle `{h}` is defined twice"));
        }
    }
    for l in graph.kernels() {
        if l.cooperative {
            return err(format!("{what}: `cooperative` is a key of [launch] only"));
        }
        for a in &l.args {
            match a {
                Arg::Graph(_) | Arg::Node(..) => return err(format!("{what}, kernel `{}`: a node's arguments are buffers, scalars and the graph's own condition handles", l.kernel)),
                Arg::Cond(cg, h) if cg != &graph.name || !handles.contains(&h.as_str()) => {
                    return err(format!("argument `cond:{cg}.{h}`: graph `{}` has no conditional node with handle `{h}` (a kernel gets the handles of its own graph)", graph.name))
                }
                _ => {}
            }
        }
    }
    // cuda_runtime_api.h (cudaGraphInstantiate): a graph instantiated for device launch "can only
    // contain kernel nodes, memcpy nodes, memset nodes, and child graph nodes".
    if launch == GraphLaunch::Device && !handles.is_empty() {
        return err(format!("{what} has a conditional node, which a graph instantiated for device launch may not hold (only kernel, memcpy, memset and child graph nodes: cuda_runtime_api.h, cudaGraphInstantiate); write `launch = \"host\"`"));
    }
    Ok(graph)
}

/// A launch of the manifest (`[launch]` or a graph node) checked: its kernel, its
/// configuration and arguments, whose buffers must exist.
#[allow(clippy::too_many_arguments)]
fn launch_of(
    what: &str,
    kernel: String,
    grid: &toml::Value,
    block: &toml::Value,
    shared_bytes: Option<&toml::Value>,
    args: &[String],
    vars: &BTreeMap<String, i64>,
    buffers: &[Buffer],
) -> Result<Launch> {
    if kernel.is_empty() {
        return err(format!("{what}: kernel is empty"));
    }
    let shared_bytes = match shared_bytes {
        None => 0,
        Some(v) => {
            let n = eval_count(v, &format!("{what}: shared_bytes"), vars)?;
            u32::try_from(n).map_err(|_| ManifestError(format!("{what}: shared_bytes: {n} is too large")))?
        }
    };
    let args = args.iter().map(|a| Arg::parse(a, vars)).collect::<Result<Vec<_>>>()?;
    for a in &args {
        if let Arg::Buffer(n) = a {
            if !buffers.iter().any(|b| &b.name == n) {
                return err(format!("argument `buf:{n}`: no [[buffer]] named `{n}`"));
            }
        }
    }
    Ok(Launch { grid: dims(grid, &format!("{what}: grid"), vars)?, block: dims(block, &format!("{what}: block"), vars)?, kernel, shared_bytes, args, cooperative: false })
}

/// splitmix64: the generator behind `random:SEED` (documented in MANIFEST.md).
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Buffer {
    /// The buffer's initial contents as values.
    pub fn initial_values(&self, vars: &BTreeMap<String, i64>) -> Result<Vec<Num>> {
        let what = format!("buffer `{}`", self.name);
        Ok(match &self.init {
            Init::Zero => vec![Num::Int(0); self.len],
            Init::Iota => (0..self.len).map(|i| Num::Int(i as i128)).collect(),
            Init::Random(seed) => {
                let mut rng = SplitMix64::new(*seed);
                (0..self.len)
                    .map(|_| {
                        let r = rng.next();
                        if self.ty.is_float() {
                            Num::Float((r >> 11) as f64 / (1u64 << 53) as f64)
                        } else {
                            Num::Int((r % 1000) as i128)
                        }
                    })
                    .collect()
            }
            Init::Values(v) => {
                let mut v = v.clone();
                v.resize(self.len, Num::Int(0));
                v
            }
            Init::Formula(text) => {
                let mut f = Formula::new(text, vars)?;
                (0..self.len).map(|i| f.eval(Some(i as i64)).map_err(|e| ManifestError(format!("{what}: init: {e}")))).collect::<Result<_>>()?
            }
        })
    }

    /// The buffer's initial bytes.
    pub fn initial_bytes(&self, vars: &BTreeMap<String, i64>) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len * self.ty.size());
        for (i, v) in self.initial_values(vars)?.into_iter().enumerate() {
            out.extend(self.ty.encode(v).map_err(|e| ManifestError(format!("buffer `{}`: init[{i}]: {e}", self.name)))?);
        }
        Ok(out)
    }

    /// The expected values (`None` where an element is not checked).
    pub fn expected_values(&self, vars: &BTreeMap<String, i64>) -> Result<Vec<Option<Num>>> {
        Ok(match &self.expect {
            None => vec![None; self.len],
            Some(Expect::All(n)) => vec![Some(*n); self.len],
            Some(Expect::Prefix(v)) => {
                let mut out: Vec<Option<Num>> = v.iter().copied().map(Some).collect();
                out.resize(self.len, None);
                out
            }
            Some(Expect::Formula(text)) => {
                let mut f = Formula::new(text, vars)?;
                (0..self.len).map(|i| f.eval(Some(i as i64)).map(Some).map_err(|e| ManifestError(format!("buffer `{}`: expect: {e}", self.name)))).collect::<Result<_>>()?
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// a manifest from command-line options (`cdpc run`)

/// A launch written as command-line options, for `cdpc run` without a manifest file.
#[derive(Clone, Debug, Default)]
pub struct CliLaunch {
    pub kernel: String,
    /// `4`, `4,2` or `4,2,1` (each a number or a formula)
    pub grid: String,
    pub block: String,
    pub shared_bytes: Option<String>,
    /// `NAME:TYPE:LEN[:INIT]`; INIT is `zero`, `iota`, `random:SEED`, a formula in `i`, or
    /// comma-separated values (`1,2,3`).
    pub buffers: Vec<String>,
    /// `buf:NAME` or `TYPE:VALUE`.
    pub args: Vec<String>,
    /// `NAME:TYPE` of `__device__` variables to read back.
    pub globals: Vec<String>,
    pub limits: Limits,
}

fn dims_value(text: &str) -> toml::Value {
    let parts: Vec<toml::Value> = text.split([',', 'x']).map(|p| toml::Value::String(p.trim().to_string())).collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap()
    } else {
        toml::Value::Array(parts)
    }
}

impl Manifest {
    /// The manifest that `cdpc run --kernel ... --buf ... --arg ...` describes.
    pub fn from_cli(name: &str, cli: &CliLaunch) -> Result<Manifest> {
        let mut buffer = Vec::new();
        for spec in &cli.buffers {
            let parts: Vec<&str> = spec.splitn(4, ':').collect();
            if parts.len() < 3 {
                return err(format!("--buf `{spec}`: expected NAME:TYPE:LEN[:INIT], e.g. data:i32:256:iota"));
            }
            let init =
                parts.get(3).map(|i| if i.contains(',') { toml::Value::Array(i.split(',').map(|v| toml::Value::String(v.trim().to_string())).collect()) } else { toml::Value::String(i.to_string()) });
            buffer.push(RawBuffer { name: parts[0].to_string(), ty: parts[1].to_string(), len: toml::Value::String(parts[2].to_string()), init, expect: None, check: None, tolerance: None });
        }
        let mut global = Vec::new();
        for spec in &cli.globals {
            let Some((n, t)) = spec.split_once(':') else {
                return err(format!("--global `{spec}`: expected NAME:TYPE, e.g. launch_errors:u32"));
            };
            global.push(RawGlobal { name: n.to_string(), ty: t.to_string(), expect: None });
        }
        if cli.kernel.is_empty() {
            return err("name the kernel to launch: --kernel NAME (or give --manifest FILE)");
        }
        let raw = RawManifest {
            description: format!("cdpc run {}", cli.kernel),
            deterministic: true,
            vars: BTreeMap::new(),
            limits: cli.limits.clone(),
            launch: RawLaunch {
                kernel: cli.kernel.clone(),
                grid: dims_value(&cli.grid),
                block: dims_value(&cli.block),
                shared_bytes: cli.shared_bytes.clone().map(toml::Value::String),
                args: cli.args.clone(),
                device_updatable: None,
                cooperative: None,
            },
            buffer,
            global,
            graph: Vec::new(),
            stdout: None,
            abis: None,
            expect_error: None,
            no_threshold: None,
            time_alone: None,
        };
        Manifest::from_raw(name, raw)
    }
}
