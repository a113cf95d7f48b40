//! A second front end for cdpc's back end: builds a parent and two child kernels directly with
//! inkwell (no `.cdp` source), lowers their device-side launches with the same API the `.cdp`
//! front end uses, emits PTX and links a cubin.
//!
//! The program, in CUDA terms:
//!
//! ```c
//! extern "C" __global__ void child(int *data, int add) { data[threadIdx.x] += add; }
//! extern "C" __global__ void twice(int *data) { data[threadIdx.x] *= 2; }
//! extern "C" __global__ void parent(int *data) {
//!     child<<<1, 256>>>(data, 7);
//!     twice<<<1, 256, 0, cudaStreamTailLaunch>>>(data);   // after the child finishes
//! }
//! ```
//!
//! Run with `cargo run -p cdpc --example inkwell_frontend [OUTPUT.cubin]` (default
//! `build/inkwell_frontend.cubin`); `inkwell_frontend.toml` beside this file says how to run the
//! cubin and what it must produce (data[i] = (i + 7) * 2 from data[i] = i).

use cdpc::back::device_launch::{build_device_launch, mark_kernel, DeviceRuntime, LaunchArg, LaunchSite};
use cdpc::back::{configure_module, optimize, target_machine, write_ptx, BackendError};
use cdpc::layout::{checked_layout, ParamSpec};
use cdpc::toolchain::{BuildOptions, ToolError, ToolSearch, Toolchain};
use cdpc::Target;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::values::{FunctionValue, ValueKind};
use inkwell::AddressSpace;
use std::path::PathBuf;

/// Builds `data[threadIdx.x] = op(data[threadIdx.x])` as a kernel named `name` taking
/// `(int *data, extra...)`.
fn elementwise_kernel<'ctx>(ctx: &'ctx Context, module: &Module<'ctx>, name: &str, with_add: bool) -> Result<FunctionValue<'ctx>, BackendError> {
    let ptr = ctx.ptr_type(AddressSpace::default());
    let i32 = ctx.i32_type();
    let params: Vec<_> = if with_add { vec![ptr.into(), i32.into()] } else { vec![ptr.into()] };
    let f = module.add_function(name, ctx.void_type().fn_type(&params, false), None);
    mark_kernel(f);
    let b = ctx.create_builder();
    b.position_at_end(ctx.append_basic_block(f, "entry"));
    let tid_x = Intrinsic::find("llvm.nvvm.read.ptx.sreg.tid.x").and_then(|i| i.get_declaration(module, &[])).ok_or_else(|| BackendError::Internal("no tid.x intrinsic".into()))?;
    let tid = match b.build_call(tid_x, &[], "tid")?.try_as_basic_value() {
        ValueKind::Basic(v) => v.into_int_value(),
        _ => return Err(BackendError::Internal("tid.x returned nothing".into())),
    };
    let index = b.build_int_z_extend(tid, ctx.i64_type(), "index")?;
    let data = f.get_nth_param(0).unwrap().into_pointer_value();
    // SAFETY: index < 256 = the buffer's length, by the launch configuration.
    let slot = unsafe { b.build_in_bounds_gep(i32, data, &[index], "slot")? };
    let old = b.build_load(i32, slot, "old")?.into_int_value();
    let new = if with_add { b.build_int_add(old, f.get_nth_param(1).unwrap().into_int_value(), "new")? } else { b.build_int_mul(old, i32.const_int(2, false), "new")? };
    b.build_store(slot, new)?;
    b.build_return(None)?;
    Ok(f)
}

/// The example's PTX for `target` (V2 ABI: the tail launch needs it).
pub fn build_ptx(target: &Target) -> Result<String, BackendError> {
    let ctx = Context::create();
    let module = ctx.create_module("inkwell_frontend");
    let tm = target_machine(target, 3)?;
    configure_module(&module, &tm);

    let child = elementwise_kernel(&ctx, &module, "child", true)?;
    let twice = elementwise_kernel(&ctx, &module, "twice", false)?;

    let ptr = ctx.ptr_type(AddressSpace::default());
    let parent = module.add_function("parent", ctx.void_type().fn_type(&[ptr.into()], false), None);
    mark_kernel(parent);
    let b = ctx.create_builder();
    b.position_at_end(ctx.append_basic_block(parent, "entry"));
    let data = parent.get_nth_param(0).unwrap();
    let runtime = DeviceRuntime::declare(&module, target);
    let pointer = target.address_size.pointer_bytes();

    // child<<<1, 256>>>(data, 7)
    let (layout, warning) = checked_layout(&[ParamSpec::new(pointer, pointer), ParamSpec::new(4, 4)], target).map_err(|e| BackendError::Launch(e.to_string()))?;
    assert!(warning.is_none());
    let seven = ctx.i32_type().const_int(7, false);
    let args = [LaunchArg::new(data, pointer as u32), LaunchArg::new(seven, 4)];
    let site = LaunchSite {
        kernel: child,
        grid: runtime.dim3(1, 1, 1),
        block: runtime.dim3(256, 1, 1),
        shared_mem: ctx.i32_type().const_zero(),
        stream: runtime.stream_handle(runtime_shim::streams::NULL_STREAM).into(),
        args: &args,
    };
    let _status = build_device_launch(&b, &runtime, site, &layout)?;

    // twice<<<1, 256, 0, cudaStreamTailLaunch>>>(data)
    let (layout, _) = checked_layout(&[ParamSpec::new(pointer, pointer)], target).map_err(|e| BackendError::Launch(e.to_string()))?;
    let args = [LaunchArg::new(data, pointer as u32)];
    let site = LaunchSite { kernel: twice, stream: runtime.stream_handle(runtime_shim::streams::TAIL_LAUNCH).into(), args: &args, ..site };
    build_device_launch(&b, &runtime, site, &layout)?;
    b.build_return(None)?;

    module.verify().map_err(|e| BackendError::Verify(e.to_string()))?;
    optimize(&module, &tm, 3)?;
    write_ptx(&module, &tm)
}

/// Links the PTX to a cubin with libcudadevrt, or says why the NVIDIA tools are missing.
pub fn build_cubin(ptx: &str, target: &Target) -> Result<Vec<u8>, ToolError> {
    let tools = Toolchain::discover(&ToolSearch::default())?;
    let options = BuildOptions::new(target.sm);
    let object = tools.assemble(ptx, &options)?;
    tools.link_objects(&[&object], &options)
}

#[allow(dead_code)]
fn main() {
    let target = Target::default();
    let output = std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("build/inkwell_frontend.cubin"));
    let ptx = build_ptx(&target).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    let cubin = build_cubin(&ptx, &target).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).expect("output folder");
    }
    std::fs::write(&output, cubin).expect("write the cubin");
    println!("wrote {}", output.display());
}
