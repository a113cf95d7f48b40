//! `--emit host-obj`: what `nvcc -dc` writes for a `.cu` file, so that host programs launch
//! cdpc's kernels the ordinary way. The device code is assembled (`ptxas -c`), packed with its
//! PTX into a relocatable fat binary (`fatbinary --device-c`), and wrapped by the back end's
//! x86-64 object ([`crate::back::host_object`]) with its registration and a host stub per
//! kernel. [`header`] writes the C header that declares the launchers for a host compiler
//! that is no nvcc, and the kernels for one that is.

use crate::back::host_object::{self, HostKernel, HostObjectSpec, HostParam};
use crate::diag::{Code, Diagnostic, Label};
use crate::hir;
use crate::signature::{self, Scalar, ValueKind};
use crate::toolchain::{BuildOptions, FatbinImage, Toolchain};
use std::collections::HashMap;

use super::CompileError;

/// A kernel of `module` with its symbol and signature.
fn kernels(module: &hir::Module) -> Vec<(String, signature::Signature)> {
    let symbols = module.functions.iter().filter(|f| f.body.is_some()).map(|f| f.symbol(module));
    symbols.zip(signature::signatures(module)).filter(|(_, s)| s.kind == signature::FunctionKind::Kernel).collect()
}

/// How a parameter is passed to the host stub, or `None` for a struct or array by value.
fn host_param(kind: &ValueKind, size: u64) -> Option<HostParam> {
    match kind {
        ValueKind::Scalar(Scalar::F32) => Some(HostParam::F32),
        ValueKind::Scalar(Scalar::F64) => Some(HostParam::F64),
        ValueKind::Scalar(_) => Some(HostParam::Int(size as u32)),
        ValueKind::Pointer { .. } | ValueKind::Handle => Some(HostParam::Pointer),
        ValueKind::Dim3 => Some(HostParam::Dim3),
        ValueKind::Void | ValueKind::Aggregate => None,
    }
}

/// The kernels that get host stubs, and a W0800 for each that cannot (at its definition).
fn host_kernels(module: &hir::Module, places: &HashMap<String, Label>) -> (Vec<HostKernel>, Vec<Diagnostic>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for (symbol, sig) in kernels(module) {
        let params: Option<Vec<HostParam>> = sig.params.iter().map(|p| host_param(&p.kind, p.size)).collect();
        match params {
            Some(params) => found.push(HostKernel { symbol, params }),
            None => {
                let by_value: Vec<String> = sig.params.iter().filter(|p| p.kind == ValueKind::Aggregate).map(|p| format!("`{}`", p.name)).collect();
                let mut d = Diagnostic::new(Code::NoHostStub, Default::default(), format!("kernel `{}` gets no host stub: it takes {} by value", sig.name, by_value.join(", ")))
                    .with_note("host code can launch it through the driver API (cuModuleGetFunction on the linked cubin), or pass the struct through a pointer");
                // A place's message is the name as written (see `symbols::declaration_places`).
                d.labels = places.get(&symbol).cloned().map(|l| Label { message: "defined here".into(), ..l }).into_iter().collect();
                warnings.push(d);
            }
        }
    }
    (found, warnings)
}

/// The W0800 warnings `--emit host-obj` gives a checked program: one per kernel that gets no
/// host stub.
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
    let clean: String = file.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("_{hash:08x}_{}_{clean}_cdpc", clean.len())
}

/// The host object of one compiled source: its PTX assembled, packed and wrapped. Returns the
/// object and the W0800 warnings.
pub(super) fn host_object(
    tools: &Toolchain,
    ptx: &str,
    module: &hir::Module,
    places: &HashMap<String, Label>,
    name: &str,
    build: &BuildOptions,
) -> Result<(Vec<u8>, Vec<Diagnostic>), CompileError> {
    let object = tools.assemble(ptx, build)?;
    let sm = build.arch.0;
    let images = [FatbinImage { ptx: false, sm, bytes: object }, FatbinImage { ptx: true, sm, bytes: ptx.as_bytes().to_vec() }];
    let fatbin = tools.fatbinary(&images, true, build)?;
    let id = module_id(name, &fatbin);
    let (kernels, warnings) = host_kernels(module, places);
    let bytes = host_object::host_object(&HostObjectSpec { module_id: &id, fatbin: &fatbin, kernels: &kernels })?;
    Ok((bytes, warnings))
}

/// The header for host code: `cdpc_launch_<symbol>` for every kernel with a host stub (for C
/// and C++ compilers), and under nvcc (`__CUDACC__`) the kernels themselves, so that `<<<>>>`
/// finds them.
pub fn header(module: &hir::Module, source_name: &str) -> String {
    let guard: String = std::path::Path::new(source_name)
        .file_name()
        .map(|f| f.to_string_lossy().to_ascii_uppercase())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut out = format!(
        "/* Generated by cdpc from {source_name}: host launchers of its kernels. Link with the object\n   \
         `cdpc --emit host-obj` wrote and the device link (`nvcc -dlink`) of it. */\n\
         #ifndef CDPC_{guard}_H\n#define CDPC_{guard}_H\n#include <cuda_runtime.h>\n\n"
    );
    let mut c_decls = String::new();
    let mut cuda_decls = String::new();
    for (symbol, sig) in kernels(module) {
        if !sig.params.iter().all(|p| host_param(&p.kind, p.size).is_some()) {
            continue;
        }
        let params: Vec<String> = sig.params.iter().map(|p| format!("{} {}", p.c_type, p.name)).collect();
        let params = params.join(", ");
        let sep = if params.is_empty() { "" } else { ", " };
        c_decls.push_str(&format!("/* Launches `{}` like <<<grid, block, shared_mem, stream>>>. */\ncudaError_t cdpc_launch_{symbol}(dim3 grid, dim3 block, size_t shared_mem, cudaStream_t stream{sep}{params});\n", sig.name));
        let linkage = if symbol == sig.name { "extern \"C\" " } else { "" };
        cuda_decls.push_str(&format!("{linkage}__global__ void {}({});\n", sig.name, if params.is_empty() { "void" } else { &params }));
    }
    out.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    out.push_str(&c_decls);
    out.push_str("#ifdef __cplusplus\n}\n#endif\n\n#ifdef __CUDACC__\n");
    out.push_str(&cuda_decls);
    out.push_str(&format!("#endif\n\n#endif /* CDPC_{guard}_H */\n"));
    out
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
