//! `--emit host-obj` of the kernel language: what `nvcc -dc` writes for a `.cu` file, so that
//! host programs launch cdpc's kernels the ordinary way (CUDA C++'s host object is Clang's host
//! side, `cuda::host_object`). The device code is assembled (`ptxas -c`), packed with its
//! PTX into a relocatable fat binary (`fatbinary --device-c`), and wrapped by the back end's
//! x86-64 object ([`crate::back::host_object`]) with its registration and a host stub per
//! kernel. [`header`] writes the C header that declares the launchers for a host compiler
//! that is no nvcc, and the kernels for one that is.

use crate::back::host_object::{self, Aggregate, HostKernel, HostObjectSpec, HostParam, Leaf};
use crate::diag::{Code, Diagnostic, Label};
use crate::front::cdp::hir;
use crate::signature::{self, Scalar, ValueKind};
use crate::toolchain::{BuildOptions, FatbinImage, Toolchain};
use crate::types::{FloatKind, Type};
use std::collections::HashMap;

use super::CompileError;

/// A kernel of `module`: its symbol, signature, parameter types, and whether it is `static`.
struct Kernel {
    symbol: String,
    sig: signature::Signature,
    types: Vec<Type>,
    internal: bool,
}

/// The kernels of `module`.
fn kernels(module: &hir::Module) -> Vec<Kernel> {
    let defined = module.functions.iter().filter(|f| f.body.is_some());
    defined
        .zip(signature::signatures(module))
        .filter(|(_, s)| s.kind == signature::FunctionKind::Kernel)
        .map(|(f, sig)| Kernel { symbol: f.symbol(module), sig, types: f.param_types().cloned().collect(), internal: f.internal })
        .collect()
}

/// How a parameter of type `ty` is passed to the host stub.
fn host_param(module: &hir::Module, kind: &ValueKind, ty: &Type, size: u64) -> HostParam {
    match kind {
        ValueKind::Scalar(Scalar::F32) => HostParam::F32,
        ValueKind::Scalar(Scalar::F64) => HostParam::F64,
        ValueKind::Scalar(_) => HostParam::Int(size as u32),
        ValueKind::Pointer { .. } | ValueKind::Handle => HostParam::Pointer,
        ValueKind::Dim3 => HostParam::Dim3,
        ValueKind::Void | ValueKind::Aggregate => {
            let (size, align) = module.size_align(ty);
            let mut leaves = Vec::new();
            scalars(module, ty, 0, &mut leaves);
            HostParam::Aggregate(Aggregate::classify(size, align, &leaves))
        }
    }
}

/// The scalars of a value of type `ty` at `offset`, for the ABI's classification (at most
/// 17 are looked at: a struct with more is over 16 bytes, passed in memory anyway).
fn scalars(module: &hir::Module, ty: &Type, offset: u64, out: &mut Vec<(u64, Leaf)>) {
    if out.len() > 16 {
        return;
    }
    match ty {
        Type::Float(FloatKind::Float) => out.push((offset, Leaf::F32)),
        Type::Float(FloatKind::Double) => out.push((offset, Leaf::F64)),
        Type::Struct(id) => {
            for field in &module.struct_def(*id).fields {
                scalars(module, &field.ty, offset + field.offset, out);
            }
        }
        Type::Array { elem, len } => {
            let step = module.size_align(elem).0;
            for i in 0..(*len).min(17) {
                scalars(module, elem, offset + i * step, out);
            }
        }
        Type::Dim3 => (0..3).for_each(|i| out.push((offset + 4 * i, Leaf::Int(4)))),
        Type::Void => {}
        other => out.push((offset, Leaf::Int(module.size_align(other).0 as u8))),
    }
}

/// Every kernel's host stub, and an E0239 for each that takes a pointer to a function (at its
/// definition).
fn host_kernels(module: &hir::Module, places: &HashMap<String, Label>) -> (Vec<HostKernel>, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for Kernel { symbol, sig, types, internal } in kernels(module) {
        let params = sig.params.iter().zip(&types).map(|(p, ty)| host_param(module, &p.kind, ty, p.size)).collect();
        // E0239: host code has no device address of a function to pass (nvcc 13.5 accepts
        // `k<<<1, 1>>>(add1)` and `k<<<1, 1>>>(child)` in host code, and passes the host's
        // address: of nothing for a device function, of the host stub for a kernel).
        let pointers: Vec<&str> = sig.params.iter().zip(&types).filter(|(_, ty)| ty.is_fn_ptr()).map(|(p, _)| p.name.as_str()).collect();
        if !pointers.is_empty() {
            let mut d = Diagnostic::new(Code::FunctionPointerFromHost, Default::default(), format!("kernel `{}` takes a pointer to a function (`{}`), which host code cannot pass", sig.name, pointers.join("`, `")))
                .with_note("the address of a device function, or of a kernel that device code launches through, exists only on the device (a kernel's name in host code is its host stub's address): launch this kernel from device code, or give it an index into a `__device__` table of pointers");
            d.labels = places.get(&symbol).cloned().map(|l| Label { message: "defined here".into(), ..l }).into_iter().collect();
            warnings.push(d);
        }
        found.push(HostKernel { symbol, params, internal });
    }
    (found, warnings)
}

/// The diagnostics `--emit host-obj` adds for a checked program: an E0239 for each kernel that
/// takes a pointer to a function.
pub fn stub_warnings(checked: &super::Checked) -> Vec<Diagnostic> {
    host_kernels(&checked.module, &checked.places).1
}

/// A module id as nvcc makes them (`_<hash>_<length>_<file name>`): a C identifier unique to
/// the object, from its file name and its device code.
pub fn module_id(name: &str, fatbin: &[u8]) -> String {
    let mut hash: u32 = 0x811c9dc5;
    for &byte in name.as_bytes().iter().chain(fatbin) {
        hash = (hash ^ byte as u32).wrapping_mul(0x01000193);
    }
    let file = std::path::Path::new(name).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let clean = identifier_chars(&file);
    format!("_{hash:08x}_{}_{clean}_cdpc", clean.len())
}

/// `text` with every character that may not be in a C identifier as `_` (a module id's file
/// name, a work file's name).
pub(crate) fn identifier_chars(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// What a host object carries of the device code, as `nvcc -dc`'s does: a relocatable fat
/// binary (`fatbinary --device-c`) of the relocatable object `ptxas -c` makes of `ptx`, and
/// the PTX itself.
pub(super) fn relocatable_fatbin(tools: &Toolchain, ptx: &str, build: &BuildOptions) -> Result<Vec<u8>, CompileError> {
    let object = tools.assemble(ptx, build)?;
    let sm = build.arch;
    let images = [FatbinImage { ptx: false, sm, bytes: object }, FatbinImage { ptx: true, sm, bytes: ptx.as_bytes().to_vec() }];
    Ok(tools.fatbinary(&images, true, build)?)
}

/// The host object of one compiled source: its PTX assembled, packed and wrapped. Returns the
/// object and its diagnostics (`stub_warnings`).
pub(super) fn host_object(tools: &Toolchain, ptx: &str, module: &hir::Module, places: &HashMap<String, Label>, name: &str, build: &BuildOptions) -> Result<(Vec<u8>, Vec<Diagnostic>), CompileError> {
    let fatbin = relocatable_fatbin(tools, ptx, build)?;
    // the id `check` gave the module, under which its `static` kernels are named
    let id = module.nv_module_id.clone().unwrap_or_else(|| module_id(name, &fatbin));
    let (kernels, warnings) = host_kernels(module, places);
    let pool = super::pool::ptx_mark(ptx);
    let bytes = host_object::host_object(&HostObjectSpec { module_id: &id, fatbin: &fatbin, kernels: &kernels, pool })?;
    Ok((bytes, warnings))
}

/// The header for host code: `cdpc_launch_<symbol>` for every kernel with a host stub (for C
/// and C++ compilers), and under nvcc (`__CUDACC__`) the kernels themselves, so that `<<<>>>`
/// finds them.
pub fn header(module: &hir::Module, source_name: &str) -> String {
    let guard: String =
        std::path::Path::new(source_name).file_name().map(|f| f.to_string_lossy().to_ascii_uppercase()).unwrap_or_default().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let start = crate::toolchain::overwrite::LAUNCHER_HEADER_START;
    let mut out = format!(
        "{start}{source_name}: host launchers of its kernels. Link with the object\n   \
         `cdpc --emit host-obj` wrote and the device link (`nvcc -dlink`) of it. */\n\
         #ifndef CDPC_{guard}_H\n#define CDPC_{guard}_H\n#include <cuda_runtime.h>\n\n"
    );
    let mut c_decls = String::new();
    let mut cuda_decls = String::new();
    let mut structs = std::collections::BTreeSet::new();
    let mut defined_first = std::collections::BTreeSet::new();
    for Kernel { symbol, sig, types, internal } in kernels(module) {
        // a `static` kernel has no launcher, and host code in another file cannot name it
        if internal {
            continue;
        }
        for (p, ty) in sig.params.iter().zip(&types) {
            if let (ValueKind::Aggregate, Type::Struct(id)) = (&p.kind, ty) {
                if module.struct_def(*id).keyword().is_some() {
                    structs.insert(p.c_type.clone());
                }
            }
            undeclarable(module, ty, &mut defined_first);
        }
        let params: Vec<String> = sig.params.iter().map(|p| format!("{} {}", p.c_type, p.name)).collect();
        let params = params.join(", ");
        let sep = if params.is_empty() { "" } else { ", " };
        c_decls.push_str(&format!(
            "/* Launches `{}` like <<<grid, block, shared_mem, stream>>>. */\ncudaError_t cdpc_launch_{symbol}(dim3 grid, dim3 block, size_t shared_mem, cudaStream_t stream{sep}{params});\n",
            sig.name
        ));
        let linkage = if symbol == sig.name { "extern \"C\" " } else { "" };
        cuda_decls.push_str(&format!("{linkage}__global__ void {}({});\n", sig.name, if params.is_empty() { "void" } else { &params }));
    }
    // Structs and unions by value: declared here, defined by the host program's own header (a
    // declaration may name an incomplete type; a call needs the definition). The types no
    // declaration here can stand for are named in a comment: the host program defines them.
    if !defined_first.is_empty() {
        let names: Vec<String> = defined_first.iter().map(|n| format!("`{n}`")).collect();
        out.push_str(&format!(
            "/* The host program defines {} before it includes this\n   \
             header: a tagless struct, union or enum (`typedef struct {{ ... }} Name;`) has only its\n   \
             typedef name, and an enum has no declaration without its enumerators or fixed type, so\n   \
             this header declares none of them. */\n",
            names.join(", ")
        ));
    }
    for s in &structs {
        out.push_str(&format!("{s};\n"));
    }
    if !structs.is_empty() || !defined_first.is_empty() {
        out.push('\n');
    }
    out.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    out.push_str(&c_decls);
    out.push_str("#ifdef __cplusplus\n}\n#endif\n\n#ifdef __CUDACC__\n");
    out.push_str(&cuda_decls);
    out.push_str(&format!("#endif\n\n#endif /* CDPC_{guard}_H */\n"));
    out
}

/// The types that `ty` names, by value or through pointers, arrays and pointers to
/// functions, that no declaration in the header can stand for, as C writes them: tagless
/// structs, unions and enums (`typedef struct { ... } Name;`), whose only name is the
/// typedef's, and every enum, which C++ declares only with its enumerators or its fixed type
/// (CUDA's own enums are `int` in the HIR, so these are the program's).
fn undeclarable(module: &hir::Module, ty: &Type, out: &mut std::collections::BTreeSet<String>) {
    match ty {
        Type::Struct(id) if module.struct_def(*id).keyword().is_some() => {}
        Type::Struct(_) | Type::Enum { .. } => {
            out.insert(crate::types::DisplayType { ty, structs: module }.to_string());
        }
        Type::Pointer { pointee, .. } => undeclarable(module, pointee, out),
        Type::Array { elem, .. } => undeclarable(module, elem, out),
        Type::FnPtr(sig) => {
            for t in sig.params.iter().chain(std::iter::once(&sig.ret)) {
                undeclarable(module, t, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::module_id;

    #[test]
    fn module_ids_are_identifiers_that_differ_by_file_and_code() {
        let id = module_id("dir/my-kernels.cu", b"code");
        assert!(id.starts_with('_') && id.ends_with("_13_my_kernels_cu_cdpc"), "{id}");
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        assert_ne!(id, module_id("dir/my-kernels.cu", b"other code"));
        assert_ne!(id, module_id("dir/other.cu", b"code"));
    }
}
