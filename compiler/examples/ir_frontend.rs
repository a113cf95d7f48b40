//! A front end that writes plain textual LLVM IR and hands it to cdpc (docs/IR-INPUT.md): no
//! inkwell, no cdpc API but `compile_ir`. Its "language" is a pipeline of element-wise stages
//! over an `int` array; each stage becomes a child kernel, and a parent kernel launches them in
//! order from the device through the documented NVVM IR sequence (`cudaGetParameterBuffer`,
//! stores of the arguments, `cudaLaunchDevice`). cdpc lowers the launches to nvcc 13's V2
//! entry points, runs NVPTX, ptxas and nvlink with libcudadevrt.
//!
//! The program it writes for `[Add(7), Mul(2)]`, in CUDA terms:
//!
//! ```c
//! extern "C" __global__ void stage0(int *data, int k) { data[threadIdx.x] += k; }
//! extern "C" __global__ void stage1(int *data, int k) { data[threadIdx.x] *= k; }
//! extern "C" __global__ void parent(int *data) {
//!     stage0<<<1, 256>>>(data, 7);   // the NULL stream of the block runs them in order
//!     stage1<<<1, 256>>>(data, 2);
//! }
//! ```
//!
//! Run with `cargo run -p cdpc --example ir_frontend [OUTPUT]`: `OUTPUT.ll` is the IR it
//! writes, `OUTPUT.cubin` what cdpc makes of it (default `build/ir_frontend`);
//! `ir_frontend.toml` beside this file says how to run the cubin on a GPU and what it must
//! produce (data[i] = (i + 7) * 2 from data[i] = i).

use cdpc::driver::{compile_ir, CompileError, CompileOptions, Emit};
use std::fmt::Write;

/// One stage of the pipeline: `data[i] = data[i] op k`.
#[derive(Clone, Copy)]
pub enum Stage {
    /// `data[i] += k`
    Add(i32),
    /// `data[i] *= k`
    Mul(i32),
}

/// The threads of each stage's launch, one per element.
pub const THREADS: u32 = 256;

/// The module of `stages`, as text.
pub fn emit_ir(stages: &[Stage]) -> String {
    let mut ir = String::from(
        "target triple = \"nvptx64-nvidia-cuda\"\n\n\
         declare ptr @cudaGetParameterBuffer(i64, i64)\n\
         declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)\n\
         declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
    );
    for (n, stage) in stages.iter().enumerate() {
        let op = match stage {
            Stage::Add(_) => "add",
            Stage::Mul(_) => "mul",
        };
        // A kernel is a function of the `ptx_kernel` calling convention.
        let _ = write!(
            ir,
            "\ndefine ptx_kernel void @stage{n}(ptr %data, i32 %k) {{\n  \
             %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  \
             %i = zext i32 %t to i64\n  \
             %at = getelementptr inbounds i32, ptr %data, i64 %i\n  \
             %v = load i32, ptr %at, align 4\n  \
             %r = {op} i32 %v, %k\n  \
             store i32 %r, ptr %at, align 4\n  \
             ret void\n}}\n"
        );
    }
    ir.push_str("\ndefine ptx_kernel void @parent(ptr %data) {\nentry:\n");
    for (n, stage) in stages.iter().enumerate() {
        let k = match stage {
            Stage::Add(k) | Stage::Mul(k) => k,
        };
        // The parameter buffer of (int *data, int k): the pointer at 0, the int at 8, 12 bytes
        // aligned to 8; a null buffer (the runtime is out of them) skips the launch.
        let _ = write!(
            ir,
            "  %buf{n} = call ptr @cudaGetParameterBuffer(i64 8, i64 12)\n  \
             %null{n} = icmp eq ptr %buf{n}, null\n  \
             br i1 %null{n}, label %next{n}, label %fill{n}\n\
             fill{n}:\n  \
             store ptr %data, ptr %buf{n}, align 8\n  \
             %k{n} = getelementptr inbounds i8, ptr %buf{n}, i64 8\n  \
             store i32 {k}, ptr %k{n}, align 4\n  \
             %status{n} = call i32 @cudaLaunchDevice(ptr @stage{n}, ptr %buf{n}, \
             {{ i32, i32, i32 }} {{ i32 1, i32 1, i32 1 }}, {{ i32, i32, i32 }} {{ i32 {THREADS}, i32 1, i32 1 }}, i32 0, ptr null)\n  \
             br label %next{n}\n\
             next{n}:\n"
        );
    }
    ir.push_str("  ret void\n}\n");
    ir
}

/// `stages` compiled by cdpc to what `emit` names (a cubin needs the NVIDIA tools).
pub fn build(stages: &[Stage], emit: Emit) -> Result<Vec<u8>, CompileError> {
    let ir = emit_ir(stages);
    let options = CompileOptions { emit, ..CompileOptions::default() };
    Ok(compile_ir(ir.as_bytes(), &options)?.output)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stem = std::env::args().nth(1).unwrap_or_else(|| "build/ir_frontend".into());
    let stages = [Stage::Add(7), Stage::Mul(2)];
    if let Some(dir) = std::path::Path::new(&stem).parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(format!("{stem}.ll"), emit_ir(&stages))?;
    match build(&stages, Emit::Cubin) {
        Ok(cubin) => {
            std::fs::write(format!("{stem}.cubin"), cubin)?;
            println!("wrote {stem}.ll and {stem}.cubin");
            Ok(())
        }
        Err(CompileError::Diagnostics(d)) => {
            let text = emit_ir(&stages);
            eprint!("{}", cdpc::render::human(&d, &format!("{stem}.ll"), &text, cdpc::render::Color::Never));
            Err("the IR breaks cdpc's contract".into())
        }
        Err(e) => Err(e.into()),
    }
}
