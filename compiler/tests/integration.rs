//! The compiler crate's integration tests: one module per boundary, all in one test binary.
//!
//! Every test binary links LLVM statically (the crate's default feature), so each costs about
//! 100 MB of disk and a link of several seconds; CI once ran out of disk building one binary per
//! file. Modules here share the binary; [`build_common`] is what the build tests share.
//! `interrupt.rs` stays a binary of its own: an interrupt stops every later compilation of the
//! process that calls it.

mod build_common;

mod align_ptx;
mod asm_ptx;
mod atomics_ptx;
mod build_docs;
mod cache_faults;
mod cache_hints_ptx;
mod cache_stress;
mod ccache_build;
mod cli;
mod cmake_build;
mod corpus_cxx;
mod corpus_templates;
mod cuda_cxx;
mod cxx_types_ptx;
mod debug_info;
mod device_lto;
mod docs_commands;
mod dry_run;
mod elaborated_types_ptx;
mod embed;
mod fast_math_ptx;
mod fmad_sass;
mod formatting;
mod fuzz_smoke;
mod host_object;
mod host_template_launch;
mod host_visibility;
mod host_warning_options;
mod hostile;
mod inkwell_frontend;
mod ir_frontend;
mod ir_input;
mod json_cli;
mod jump_tables_ptx;
mod kernel_pointers_ptx;
mod kernel_qualifiers_ptx;
mod launch_scaling;
mod layers;
mod link_launcher;
mod llvm_nvptx_inputs;
mod local_statics_ptx;
mod malloc_pool;
mod managed_ptx;
mod math_ptx;
mod md_links;
mod no_crash;
mod no_diary;
mod nv_atomic_ptx;
mod nv_builtins_ptx;
mod nvcc_command_line;
mod nvcc_dialect;
mod overloading;
mod placed_tool_errors;
mod preamble_cache;
mod preprocess_corpus;
mod preprocess_only;
mod program_build;
mod ptx_names;
mod ptx_parts;
mod real_device_ir;
mod register_cap;
mod results_index;
mod run_cmd;
mod sccache_build;
mod separate_compilation;
mod struct_args_stack;
mod struct_copy_sass;
mod system_header_warnings;
mod threshold_cdp;
mod toolchain_faults;
mod unroll_ptx;
mod vector_ptx;
mod volatile_ptx;
mod whole_program_linkage;
mod wrapper_header;
