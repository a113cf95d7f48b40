//! Runs on a GPU: one parent thread per row launches a child grid that fills its row, through
//! the typed launcher cdpc-build generated; then checks every element. Exits 1 on a mismatch.

use cdpc_example_cudarc::kernels::children::Module;
use cudarc::driver::{CudaContext, LaunchConfig};

const ROWS: usize = 64;
const WIDTH: usize = 1000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = Module::load(&ctx)?;
    let mut data = stream.clone_htod(&vec![-1i32; ROWS * WIDTH])?;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (ROWS as u32, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: fill_rows writes data[row * WIDTH + i] for row < ROWS and i < WIDTH: inside `data`.
    unsafe { module.fill_rows(&stream, cfg, &mut data, ROWS as i32, WIDTH as i32) }?;
    let got = stream.clone_dtoh(&data)?;
    let wrong = (0..ROWS * WIDTH).filter(|&k| got[k] != ((k / WIDTH) * 1000 + k % WIDTH) as i32).count();
    println!("rust/cudarc: {ROWS} child grids from one parent kernel, {} elements, {wrong} wrong", got.len());
    if wrong != 0 {
        std::process::exit(1);
    }
    Ok(())
}
