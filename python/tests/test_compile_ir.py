"""cdpc.compile_ir: LLVM IR text or bitcode from another front end (docs/IR-INPUT.md)."""

from __future__ import annotations

import pytest

import cdpc

# A parent that launches a child through the documented NVVM IR sequence.
LAUNCH_IR = """target triple = "nvptx64-nvidia-cuda"
declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
define ptx_kernel void @child(ptr %p, i32 %n) {
  store i32 %n, ptr %p, align 4
  ret void
}
define ptx_kernel void @parent(ptr %p) {
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 12)
  store ptr %p, ptr %buf, align 8
  %n = getelementptr inbounds i8, ptr %buf, i64 8
  store i32 7, ptr %n, align 4
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 32, i32 1, i32 1 }, i32 0, ptr null)
  ret void
}
"""


def test_text_ir_to_ptx_needs_no_tools() -> None:
    c = cdpc.compile_ir(LAUNCH_IR, build_cubin=False)
    assert ".entry parent" in c.ptx and ".entry child" in c.ptx
    assert "__cudaCDP2GetParameterBufferV2" in c.ptx and "__cudaCDP2LaunchDeviceV2" in c.ptx
    assert c.cubin is None and c.signatures == () and c.warnings == ()


def test_bytes_and_a_cubin(tools: None) -> None:
    c = cdpc.compile_ir(LAUNCH_IR.encode())
    assert c.cubin is not None and c.cubin[:4] == b"\x7fELF"
    assert [r.tool for r in c.tool_runs] == ["ptxas", "nvlink"]


def test_v1_keeps_the_documented_sequence() -> None:
    c = cdpc.compile_ir(LAUNCH_IR, build_cubin=False, launch_abi="v1")
    assert "cudaLaunchDevice" in c.ptx and "V2" not in c.ptx


def test_contract_errors_are_coded_at_their_line() -> None:
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile_ir(LAUNCH_IR.replace("store i32 7", "stor i32 7"), build_cubin=False, filename="k.ll")
    assert [d.code for d in e.value.diagnostics] == ["E1011"]
    assert "k.ll:12:3" in str(e.value)
    late = LAUNCH_IR.replace("i32 0, ptr null)\n", "i32 0, ptr null)\n  store i32 8, ptr %n, align 4\n")
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile_ir(late, build_cubin=False)
    assert [d.code for d in e.value.diagnostics] == ["E1015"]
    with pytest.raises(cdpc.CompileError) as e:
        cdpc.compile_ir(b"BC\xc0\xde\x01", build_cubin=False)
    assert [d.code for d in e.value.diagnostics] == ["E1011"]


def test_ir_must_be_text_or_bytes() -> None:
    with pytest.raises(TypeError):
        cdpc.compile_ir(42)  # type: ignore[arg-type]
