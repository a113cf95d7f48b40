//! Code generation through LLVM's NVPTX target (inkwell): HIR to LLVM IR and PTX.
