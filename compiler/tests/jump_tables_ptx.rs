//! No jump tables, as nvcc: a dense `switch` and a chain of `if`s on the lane, the
//! divergent launch sites of `bench/gpu/launch_sites.cdp`, become compares and branches in
//! nvcc's PTX; LLVM would make them a `brx.idx` through a table in the constant bank, which a
//! divergent warp takes one target at a time anyway. `back::write_ptx` turns jump tables off for
//! both front ends; nvcc's PTX of the same source is the oracle.

use crate::build_common::{cdpc, nvcc_ptx, stderr};

const SOURCE: &str = r#"
extern "C" __global__ void dense_switch(int *o, int k)
{
    switch (threadIdx.x % 8) {
    case 0: o[0] = k; break;
    case 1: o[3] = k * 2; break;
    case 2: o[7] = k + 9; break;
    case 3: o[1] = 5; break;
    case 4: o[9] = k - 1; break;
    case 5: o[11] = k * k; break;
    case 6: o[2] = 3; break;
    default: o[5] = 1;
    }
}

extern "C" __global__ void child(unsigned int *counter)
{
    atomicAdd(counter, 1u);
}

extern "C" __global__ void lane_chain(unsigned int *counter)
{
    unsigned int lane = threadIdx.x % 4;
    if (lane == 0)
        child<<<1, 32>>>(counter);
    else if (lane == 1)
        child<<<2, 32>>>(counter);
    else if (lane == 2)
        child<<<1, 64>>>(counter);
    else
        child<<<4, 32>>>(counter);
}
"#;

#[test]
fn switches_and_if_chains_have_no_jump_table_as_in_nvcc() {
    let Some(theirs) = nvcc_ptx(SOURCE) else { return };
    // The oracle says something: nvcc branches without a table, and the source is one that
    // LLVM would give a table (with jump tables on, cdpc's PTX has two `brx.idx`).
    assert!(!theirs.contains("brx.idx"), "nvcc:\n{theirs}");
    let dir = tempfile::tempdir().unwrap();
    for file in ["sites.cdp", "sites.cu"] {
        std::fs::write(dir.path().join(file), SOURCE).unwrap();
        let out = cdpc(dir.path(), &[file, "--emit", "ptx", "-o", "-"]);
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        let ours = String::from_utf8_lossy(&out.stdout);
        assert!(ours.contains(".entry lane_chain"), "{file}:\n{ours}");
        assert!(!ours.contains("brx.idx") && !ours.contains(".branchtargets"), "{file}: a jump table in\n{ours}");
    }
}
