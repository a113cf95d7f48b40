"""cdpc.compile: outputs, signatures, options."""

from __future__ import annotations

import pytest

import cdpc
from conftest import PARENT_CHILD


def test_cubin_object_and_ptx(tools: None) -> None:
    c = cdpc.compile(PARENT_CHILD)
    assert c.cubin is not None and c.cubin[:4] == b"\x7fELF"
    assert c.object is not None and c.object[:4] == b"\x7fELF"
    assert ".entry parent" in c.ptx and ".entry child" in c.ptx
    # launch ABI v2 by default, v1 on request
    assert "__cudaCDP2LaunchDeviceV2" in c.ptx
    assert "define" in c.llvm_ir
    assert [r.tool for r in c.tool_runs] == ["ptxas", "nvlink"]
    assert c.arch == "sm_90" and c.warnings == ()


def test_ptx_only_needs_no_tools() -> None:
    c = cdpc.compile(PARENT_CHILD, build_cubin=False, launch_abi="v1", arch=80)
    assert c.cubin is None and c.object is None and c.tool_runs == ()
    assert "cudaGetParameterBuffer" in c.ptx and "cudaLaunchDevice" in c.ptx
    assert ".target sm_80" in c.ptx


def test_write_cubin(tools: None, tmp_path) -> None:
    c = cdpc.compile(PARENT_CHILD)
    path = c.write_cubin(tmp_path / "k.cubin")
    assert path.read_bytes() == c.cubin
    with pytest.raises(ValueError, match="build_cubin=False"):
        cdpc.compile(PARENT_CHILD, build_cubin=False).write_cubin(tmp_path / "none.cubin")


def test_kernel_signatures() -> None:
    source = """
    struct Pair { int a; double b; };
    extern "C" __global__ void k(const float *in, double x, char c, unsigned long long n, struct Pair p, cudaStream_t s) { }
    extern "C" __device__ int helper(int *result, long n) { *result = (int)n; return 0; }
    """
    c = cdpc.compile(source, build_cubin=False)
    assert list(c.kernels) == ["k"] and list(c.device_functions) == ["helper"]
    k = c.kernels["k"]
    assert k.kind == "kernel" and k.return_c_type == "void" and k.return_kind == "void"
    got = [(p.name, p.c_type, p.kind, p.dtype, p.is_const, p.size, p.align, p.offset) for p in k.params]
    # The C layout, by hand: pointer 0..8, double 8..16, char 16, u64 24..32, struct{int,double} 32..48, stream 48..56.
    assert got == [
        ("in", "const float *", "pointer", "float32", True, 8, 8, 0),
        ("x", "double", "scalar", "float64", False, 8, 8, 8),
        ("c", "char", "scalar", "int8", False, 1, 1, 16),
        ("n", "unsigned long long", "scalar", "uint64", False, 8, 8, 24),
        ("p", "struct Pair", "aggregate", None, False, 16, 8, 32),
        ("s", "cudaStream_t", "handle", None, False, 8, 8, 48),
    ]
    assert k.param_bytes == 56
    helper = c.device_functions["helper"]
    assert (helper.return_c_type, helper.return_kind, helper.return_dtype) == ("int", "scalar", "int32")
    assert [(p.c_type, p.dtype) for p in helper.params] == [("int *", "int32"), ("long", "int64")]
    assert str(helper) == "__device__ int helper(int *result, long n)"


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="sm_1"):
        cdpc.compile(PARENT_CHILD, arch="sm_1", build_cubin=False)
    with pytest.raises(ValueError, match="E9999"):
        cdpc.compile(PARENT_CHILD, deny=["E9999"], build_cubin=False)
    with pytest.raises(ValueError, match="v3"):
        cdpc.compile(PARENT_CHILD, launch_abi="v3", build_cubin=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str"):
        cdpc.compile(PARENT_CHILD.encode())  # type: ignore[arg-type]


def test_default_stream_per_thread_calls_the_ptsz_launch() -> None:
    legacy = cdpc.compile(PARENT_CHILD, build_cubin=False).ptx
    per_thread = cdpc.compile(PARENT_CHILD, default_stream="per-thread", build_cubin=False).ptx
    assert "__cudaCDP2LaunchDeviceV2_ptsz" in per_thread and "_ptsz" not in legacy
    with pytest.raises(ValueError, match="per-block"):
        cdpc.compile(PARENT_CHILD, default_stream="per-block", build_cubin=False)  # type: ignore[arg-type]


def test_32_bit_is_ptx_only() -> None:
    ptx = cdpc.compile(PARENT_CHILD, address_size=32, launch_abi="v1", build_cubin=False).ptx
    assert ".address_size 32" in ptx
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile(PARENT_CHILD, address_size=32, launch_abi="v1")
    assert e.value.kind == "usage" and "32-bit output is PTX only" in str(e.value)
    assert e.value.diagnostics[0].code is None


def test_missing_tools_name_the_folder(tmp_path) -> None:
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile(PARENT_CHILD, cuda_home=tmp_path)
    assert e.value.kind == "tool"
    assert str(tmp_path) in str(e.value) and "ptxas" in str(e.value)


def test_defines_and_include_dirs_reach_the_preprocessor(tmp_path) -> None:
    (tmp_path / "size.h").write_text("#define SIZE (N * 2)\n")
    source = (
        '#include "size.h"\n'
        'extern "C" __global__ void child(int *p) { p[threadIdx.x] = SIZE; }\n'
        'extern "C" __global__ void parent(int *p) { child<<<1, 32>>>(p); }\n'
    )
    ptx = cdpc.compile(source, defines={"N": 21}, include_dirs=[tmp_path], build_cubin=False).ptx
    assert "42" in ptx, ptx
    # Without the -I folder the quoted header is not found: E0602, a real diagnostic.
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile(source, defines=["N=21"], build_cubin=False)
    assert any(d.code == "E0602" for d in e.value.diagnostics), str(e.value)
    # no macros is no macros
    assert cdpc.compile(PARENT_CHILD, defines={}, include_dirs=[], build_cubin=False).ptx


def test_tool_timeout_is_checked_and_passed_on() -> None:
    with pytest.raises(ValueError, match="tool_timeout"):
        cdpc.compile(PARENT_CHILD, tool_timeout=-1, build_cubin=False)
    assert cdpc.compile(PARENT_CHILD, tool_timeout=0, build_cubin=False).ptx


def test_defines_accept_mappings_and_lists() -> None:
    from cdpc import _defines

    assert _defines({"N": 4, "DEBUG": None}) == [("N", "4"), ("DEBUG", None)]
    assert _defines(["N=4", "DEBUG", "E="]) == [("N", "4"), ("DEBUG", None), ("E", "")]
    with pytest.raises(TypeError):
        _defines("N=4")


def test_keywords_become_the_compilers_option_pairs() -> None:
    from cdpc import _option_pairs

    pairs = _option_pairs(
        {"arch": 80, "defines": {"N": 4, "D": None}, "pass_remarks": True, "deny": ["W0209"], "tool_timeout": 0.5, "lineinfo": True, "device_debug": False, "std": None}
    )
    assert pairs == [
        ("arch", "arch", "sm_80"),
        ("defines", "define", "N=4"),
        ("defines", "define", "D"),
        ("pass_remarks", "pass-remarks", "aggregate"),
        ("deny", "deny", "W0209"),
        ("tool_timeout", "tool-timeout", "0.5"),
        ("lineinfo", "lineinfo", "true"),
    ]
    # `device_debug` comes after `lineinfo`, so that it wins
    assert _option_pairs({"device_debug": True, "lineinfo": True}) == [("lineinfo", "lineinfo", "true"), ("device_debug", "device-debug", "true")]
    with pytest.raises(TypeError, match="optimise"):
        _option_pairs({"optimise": 3})


def test_every_keyword_is_a_compiler_option() -> None:
    import inspect

    from cdpc import _option_pairs

    not_options = {"source", "ir", "paths", "filename", "build_cubin", "libraries", "library_dirs"}
    for function in (cdpc.compile, cdpc.compile_ir, cdpc.link):
        defaults = {name: p.default for name, p in inspect.signature(function).parameters.items() if name not in not_options}
        _option_pairs(defaults)


def test_a_refused_value_names_its_keyword() -> None:
    with pytest.raises(ValueError, match="^opt_level: optimisation level `4` does not exist; use 0 to 3$"):
        cdpc.compile(PARENT_CHILD, opt_level=4, build_cubin=False)
    with pytest.raises(ValueError, match="^address_size: address size `16` does not exist; use 32 or 64$"):
        cdpc.compile(PARENT_CHILD, address_size=16, build_cubin=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^defines: `=1` does not start with a macro name$"):
        cdpc.compile(PARENT_CHILD, defines=["=1"], build_cubin=False)
    with pytest.raises(ValueError, match="^arch: "):
        cdpc.link([], arch="sm_1")


def test_lineinfo_and_separate_reach_the_ptx() -> None:
    source = 'extern __device__ int counter;\nextern "C" __global__ void k(int *p) {\n    p[0] = counter;\n}\n'
    c = cdpc.compile(source, build_cubin=False, lineinfo=True, separate=True)
    assert ".loc\t1 3 " in c.ptx and ".extern .global .align 4 .u32 counter;" in c.ptx
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile(source, build_cubin=False)
    assert [d.code for d in e.value.diagnostics] == ["E0104"]


def test_link_several_files(tools: None, tmp_path) -> None:
    user = tmp_path / "user.cu"
    user.write_text('extern __device__ int counter;\n__device__ int twice(int);\nextern "C" __global__ void k(int *p) { p[0] = twice(counter); }\n')
    lib = tmp_path / "lib.cu"
    lib.write_text("__device__ int counter = 2;\n__device__ int twice(int x) { return 2 * x; }\n")
    cubin = cdpc.link([user, lib], lineinfo=True)
    assert cubin[:4] == b"\x7fELF"
    again = tmp_path / "again.cu"
    again.write_text("__device__ int counter = 3;\n")
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.link([user, lib, again])
    assert [d.code for d in e.value.diagnostics] == ["E0800"]
    assert "again.cu" in str(e.value) and "lib.cu" in str(e.value)
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.link([user], libraries=["nothere"], library_dirs=[tmp_path])
    assert [d.code for d in e.value.diagnostics] == ["E0802"]


def test_link_compiles_its_sources_with_the_launch_pipelines_options(tools: None, tmp_path) -> None:
    take = tmp_path / "take.cu"
    take.write_text(
        "__global__ void fill(int *p) { p[threadIdx.x] = 1; }\n"
        "__global__ void take(int **out) { int *p = (int *)malloc(64); out[threadIdx.x] = p; fill<<<1, 16>>>(p); }\n"
    )
    give = tmp_path / "give.cu"
    give.write_text("__global__ void give(int **out) { free(out[threadIdx.x]); }\n")
    plain = cdpc.link([take, give])
    pooled = cdpc.link([take, give], device_malloc_pool=True, aggregate_launches="warp", use_fast_math=True, std="c++20")
    # one pool for both files; the launch aggregated into `fill`'s aggregated kernel
    assert b"__cdpc_malloc_pool_v1" in pooled and b"__cdpc_malloc_pool_v1" not in plain
    assert b"__agg" in pooled and b"__agg" not in plain
    with pytest.raises(ValueError):
        cdpc.link([take], std="c++99")


def test_launch_threshold_runs_small_children_in_place() -> None:
    source = """
    extern "C" __global__ void child(int *p) { p[threadIdx.x] = 1; }
    extern "C" __global__ void tile(int *p) { __shared__ int s[32]; s[threadIdx.x] = 1; p[0] = s[31]; }
    extern "C" __global__ void parent(int *p) { child<<<1, 32>>>(p); tile<<<1, 32>>>(p); }
    """
    plain = cdpc.compile(source, build_cubin=False, opt_level=0)
    assert "child__serial" not in plain.ptx
    c = cdpc.compile(source, build_cubin=False, opt_level=0, launch_threshold=128, pass_remarks=True)
    # `child` runs in the launching thread through its serial clone; `tile` needs its threads
    # together and stays a launch, with the remark that says so
    assert ".func child__serial" in c.ptx
    assert [w.code for w in c.warnings] == ["R0502"]
    assert "tile" in c.warnings[0].message


def test_device_malloc_pool_serves_small_allocations_from_cdpcs_pool() -> None:
    source = """
    extern "C" __global__ void take(int **out) { out[threadIdx.x] = (int *)malloc(64); }
    extern "C" __global__ void give(int **out) { free(out[threadIdx.x]); }
    """
    heap = cdpc.compile(source, build_cubin=False)
    assert "__cdpc_malloc_pool_v1" not in heap.ptx
    pooled = cdpc.compile(source, build_cubin=False, device_malloc_pool=True)
    # one 32 MiB pool shared by every object, `malloc` and `free` called only behind it
    assert ".common .global .align 16 .b8 __cdpc_malloc_pool_v1[33554432];" in pooled.ptx
    ir = cdpc.compile_ir(
        "target triple = \"nvptx64-nvidia-cuda\"\n"
        "define ptx_kernel void @k(ptr %o) {\n  %p = call ptr @malloc(i64 8)\n  store ptr %p, ptr %o\n  ret void\n}\n"
        "declare ptr @malloc(i64)\n",
        build_cubin=False,
        device_malloc_pool=True,
    )
    assert "__cdpc_malloc_state_v1" in ir.ptx


def test_fast_math_and_the_dialect_reach_clang(tools: None) -> None:
    source = "__global__ void k(float *p) { p[0] = sinf(p[1]) / p[2]; }\n"
    precise = cdpc.compile(source, filename="k.cu", build_cubin=False).ptx
    fast = cdpc.compile(source, filename="k.cu", build_cubin=False, use_fast_math=True).ptx
    assert "sin.approx.ftz.f32" in fast and "div.approx.ftz.f32" in fast
    assert "sin.approx" not in precise and "div.rn.f32" in precise
    concept = "template <class T> concept Small = sizeof(T) <= 4;\ntemplate <class T> requires Small<T> __global__ void k(T *p) { *p = 1; }\ntemplate __global__ void k<int>(int *);\n"
    assert ".entry _Z1kIiEvPT_" in cdpc.compile(concept, filename="c.cu", build_cubin=False, std="c++20").ptx
    with pytest.raises(cdpc.CompileError):
        cdpc.compile(concept, filename="c.cu", build_cubin=False, std="c++17")
    with pytest.raises(ValueError):
        cdpc.compile(source, filename="k.cu", build_cubin=False, std="c++99")


def test_legacy_warp_functions_are_refused_unless_asked_for() -> None:
    source = "__global__ void k(int *v) { v[threadIdx.x] = __shfl_xor(v[threadIdx.x], 1); }\n"
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile(source, filename="k.cu", build_cubin=False)
    assert [d.code for d in e.value.diagnostics] == ["E0903"], str(e.value)
    c = cdpc.compile(source, filename="k.cu", build_cubin=False, legacy_warp_intrinsics=True)
    assert [w.code for w in c.warnings] == ["W0902"]
    assert "shfl.sync.bfly" in c.ptx
