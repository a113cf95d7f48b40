//! The registration object of a device link: what nvcc compiles from the toolkit's
//! `crt/link.stub` after `nvlink --register-link-binaries`, written here as LLVM IR for the X86
//! back end, so that a program's device link needs no C compiler and no CUDA header.
//!
//! Every `-dc` object's constructor calls `__cudaRegisterLinkedBinary_<module id>` with its
//! callback (which registers its kernels and variables) and its own fat binary's wrapper
//! (`__fatbinwrap_<module id>`). This object defines those functions, one per module nvlink
//! linked, with link.stub's behaviour (CUDA 13.5's, read from the wheel's `crt/link.stub`):
//!
//! - each writes its module's `def <id>` string (section `__nv_module_id`) through the
//!   `dummy_ref` it is given, and records its wrapper's data and its callback;
//! - the call that completes the count registers the linked fat binary (`__fatDeviceText`,
//!   section `.nvFatBinSegment`: magic `0x466243b1`, version 2, the data in `.nv_fatbin`, the
//!   recorded prelinked fat binaries, null-terminated), registers its unregistration with
//!   `atexit`, calls every callback with the handle, and ends with `__cudaRegisterFatBinaryEnd`.

use super::host_object::emit_object;
use super::{BackendError, R};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use std::fmt::Write;

/// `__fatBinC_Wrapper_t`'s magic.
const WRAPPER_MAGIC: u32 = 0x466243b1;

/// The IR of the registration object for `module_ids` (nvlink's order) around a fat binary of
/// `fatbin_len` bytes, whose contents [`object`] puts in `@fatbinData`.
fn ir(module_ids: &[String], fatbin_len: usize) -> String {
    let n = module_ids.len();
    let slots = n + 1;
    let mut s = String::new();
    let _ = writeln!(s, "target triple = \"x86_64-unknown-linux-gnu\"");
    let _ = writeln!(s, "%wrapper = type {{ i32, i32, ptr, ptr }}");
    let _ = writeln!(s, "@handle = internal global ptr null, align 8");
    let _ = writeln!(s, "@prelinked = internal global [{slots} x ptr] zeroinitializer, align 16");
    let _ = writeln!(s, "@callbacks = internal global [{slots} x ptr] zeroinitializer, align 16");
    let _ = writeln!(s, "@count = internal global i32 0, align 4");
    let _ = writeln!(s, "@fatbinData = internal constant [{fatbin_len} x i8] zeroinitializer, section \".nv_fatbin\", align 8");
    let _ = writeln!(s, "@__fatDeviceText = internal constant %wrapper {{ i32 {WRAPPER_MAGIC}, i32 2, ptr @fatbinData, ptr @prelinked }}, section \".nvFatBinSegment\", align 8");
    let _ = writeln!(s, "@llvm.used = appending global [1 x ptr] [ptr @__fatDeviceText], section \"llvm.metadata\"");
    let _ = writeln!(s, "declare ptr @__cudaRegisterFatBinary(ptr)");
    let _ = writeln!(s, "declare void @__cudaRegisterFatBinaryEnd(ptr)");
    let _ = writeln!(s, "declare void @__cudaUnregisterFatBinary(ptr)");
    let _ = writeln!(s, "declare i32 @atexit(ptr)");
    s.push_str("define internal void @unregister() {\n  %h = load ptr, ptr @handle, align 8\n  call void @__cudaUnregisterFatBinary(ptr %h)\n  ret void\n}\n");
    // link.stub's static __cudaRegisterLinkedBinary.
    let _ = write!(
        s,
        "define internal void @register(ptr %wrapper, ptr %callback) {{
entry:
  %i = load i32, ptr @count, align 4
  %index = sext i32 %i to i64
  %data_slot = getelementptr inbounds %wrapper, ptr %wrapper, i32 0, i32 2
  %data = load ptr, ptr %data_slot, align 8
  %fatbin_slot = getelementptr inbounds [{slots} x ptr], ptr @prelinked, i64 0, i64 %index
  store ptr %data, ptr %fatbin_slot, align 8
  %callback_slot = getelementptr inbounds [{slots} x ptr], ptr @callbacks, i64 0, i64 %index
  store ptr %callback, ptr %callback_slot, align 8
  %next = add i32 %i, 1
  store i32 %next, ptr @count, align 4
  %complete = icmp eq i32 %next, {n}
  br i1 %complete, label %all, label %done
all:
  %end_slot = getelementptr inbounds [{slots} x ptr], ptr @prelinked, i64 0, i64 {n}
  store ptr null, ptr %end_slot, align 8
  %h = call ptr @__cudaRegisterFatBinary(ptr @__fatDeviceText)
  store ptr %h, ptr @handle, align 8
  %ignored = call i32 @atexit(ptr @unregister)
  br label %call
call:
  %j = phi i64 [ 0, %all ], [ %j_next, %call ]
  %slot = getelementptr inbounds [{slots} x ptr], ptr @callbacks, i64 0, i64 %j
  %f = load ptr, ptr %slot, align 8
  call void %f(ptr %h)
  %j_next = add i64 %j, 1
  %more = icmp ult i64 %j_next, {n}
  br i1 %more, label %call, label %end
end:
  call void @__cudaRegisterFatBinaryEnd(ptr %h)
  br label %done
done:
  ret void
}}
"
    );
    for id in module_ids {
        let text_len = "def ".len() + id.len() + 1;
        let _ = writeln!(s, "@\"def_module_id_str{id}\" = internal constant [{text_len} x i8] c\"def {id}\\00\", section \"__nv_module_id\", align 1");
        let _ = writeln!(s, "@\"__fatbinwrap{id}\" = external constant %wrapper");
        let _ = writeln!(s, "@\"p{id}\" = internal global ptr null, align 8");
        let _ = write!(
            s,
            "define void @\"__cudaRegisterLinkedBinary{id}\"(ptr %callback, ptr %prelinked, ptr %unused, ptr %dummy_ref) {{
  store volatile ptr @\"def_module_id_str{id}\", ptr @\"p{id}\", align 8
  call void %dummy_ref(ptr @\"p{id}\")
  call void @register(ptr @\"__fatbinwrap{id}\", ptr %callback)
  ret void
}}
"
        );
    }
    s
}

/// The x86-64 object that registers a device link's fat binary `fatbin` (`fatbinary -link`)
/// for the modules `module_ids` (nvlink's `--register-link-binaries` list).
pub fn object(module_ids: &[String], fatbin: &[u8]) -> R<Vec<u8>> {
    if module_ids.iter().any(|id| id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')) {
        return Err(BackendError::Verify("a module id of the device link is no C identifier".into()));
    }
    let ctx = Context::create();
    let text = ir(module_ids, fatbin.len());
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "cdpc_link_stub");
    let module = ctx.create_module_from_ir(buffer).map_err(|e| BackendError::Verify(format!("link stub: {e}")))?;
    let data = module.get_global("fatbinData").expect("the stub's IR defines fatbinData");
    data.set_initializer(&ctx.const_string(fatbin, false));
    emit_object(&module)
}

/// Makes Clang's host side of a `-dc` object (`module`, module id `id`) one that registers its
/// own device code, already linked (`whole_program`, nvcc's `-c` without `-rdc`): its fat
/// binary, which the caller made of linked cubins, moves from the relocatable section nvlink
/// reads (`__nv_relfatbin`) to nvcc's section of whole programs (`.nv_fatbin`), its module id
/// leaves `__nv_module_id`, and `__cudaRegisterLinkedBinary_<id>`, which its constructor calls,
/// is defined here: the fat binary registered at once (a version-1 wrapper of the same data, as
/// a whole program's), the constructor's callback called with the handle, then
/// `__cudaRegisterFatBinaryEnd`; unregistered at exit. No device link then takes the object's
/// device code in, and no host link needs one.
pub fn register_whole(module: &inkwell::module::Module<'_>, id: &str) -> R<()> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(BackendError::Verify("the module id is no C identifier".into()));
    }
    for global in module.get_globals() {
        let section = global.get_section().map(|s| s.to_string_lossy().into_owned());
        match section.as_deref() {
            Some("__nv_relfatbin") => global.set_section(Some(".nv_fatbin")),
            Some("__nv_module_id") => global.set_section(Some(".rodata.cdpc_module_id")),
            _ => {}
        }
    }
    let text = format!(
        "%wrapper = type {{ i32, i32, ptr, ptr }}
@__cdpc_whole_handle = internal global ptr null, align 8
@__cdpc_whole_wrapper = internal global %wrapper zeroinitializer, align 8
declare ptr @__cudaRegisterFatBinary(ptr)
declare void @__cudaRegisterFatBinaryEnd(ptr)
declare void @__cudaUnregisterFatBinary(ptr)
declare i32 @atexit(ptr)
define internal void @__cdpc_whole_unregister() {{
  %h = load ptr, ptr @__cdpc_whole_handle, align 8
  call void @__cudaUnregisterFatBinary(ptr %h)
  ret void
}}
define void @\"__cudaRegisterLinkedBinary{id}\"(ptr %callback, ptr %wrapper, ptr %unused, ptr %dummy_ref) {{
  %data_slot = getelementptr inbounds %wrapper, ptr %wrapper, i32 0, i32 2
  %data = load ptr, ptr %data_slot, align 8
  store i32 {WRAPPER_MAGIC}, ptr @__cdpc_whole_wrapper, align 8
  %version = getelementptr inbounds %wrapper, ptr @__cdpc_whole_wrapper, i32 0, i32 1
  store i32 1, ptr %version, align 4
  %own_data = getelementptr inbounds %wrapper, ptr @__cdpc_whole_wrapper, i32 0, i32 2
  store ptr %data, ptr %own_data, align 8
  %h = call ptr @__cudaRegisterFatBinary(ptr @__cdpc_whole_wrapper)
  store ptr %h, ptr @__cdpc_whole_handle, align 8
  %ignored = call i32 @atexit(ptr @__cdpc_whole_unregister)
  call void %callback(ptr %h)
  call void @__cudaRegisterFatBinaryEnd(ptr %h)
  ret void
}}
"
    );
    let ctx = module.get_context();
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "cdpc_whole_registration");
    let snippet = ctx.create_module_from_ir(buffer).map_err(|e| BackendError::Verify(format!("whole-program registration: {e}")))?;
    snippet.set_triple(&module.get_triple());
    snippet.set_data_layout(&module.get_data_layout());
    module.link_in_module(snippet).map_err(|e| BackendError::Verify(format!("whole-program registration: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_one_registration_per_module() {
        let ids = vec!["_37cfc621_4_a_cu_fbe442de".to_string(), "_0afad4c0_22_cuda_device_runtime_cu_f78b5b52_735892".to_string()];
        let object = object(&ids, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let text = String::from_utf8_lossy(&object);
        for id in &ids {
            assert!(text.contains(&format!("__cudaRegisterLinkedBinary{id}")));
            assert!(text.contains(&format!("__fatbinwrap{id}")));
            assert!(text.contains(&format!("def {id}")));
        }
        for name in [".nv_fatbin", ".nvFatBinSegment", "__nv_module_id", "__cudaRegisterFatBinaryEnd"] {
            assert!(text.contains(name), "{name}");
        }
    }

    #[test]
    fn refuses_an_id_that_is_no_identifier() {
        assert!(object(&["a\" b".to_string()], &[]).is_err());
    }
}
