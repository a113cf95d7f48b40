//! Finding and running the NVIDIA tools (ptxas, nvlink) and libcudadevrt.
