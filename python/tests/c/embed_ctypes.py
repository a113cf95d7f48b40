"""cdpc's C API through ctypes, as a foreign-function interface sees it: the library of the
installed wheel is found on sys.path without importing the ``cdpc`` package (no Python API of
cdpc runs), loaded with ctypes.CDLL, and used to compile LLVM IR with a device-side launch and
read a diagnostic. Usage: embed_ctypes.py HAVE_TOOLS(0|1); prints "all checks passed"."""

import ctypes
import importlib.util
import sys
from pathlib import Path

spec = importlib.util.find_spec("cdpc")  # finds the package without running it
assert spec is not None and spec.submodule_search_locations, "cdpc is not installed"
package = Path(next(iter(spec.submodule_search_locations)))
library = next(package.glob("_cdpc*.so"))
lib = ctypes.CDLL(str(library))

c_void_p, c_char_p, c_size_t = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
lib.cdpc_abi_version.restype = ctypes.c_uint32
lib.cdpc_version.restype = c_char_p
lib.cdpc_options_new.restype = c_void_p
lib.cdpc_options_set.argtypes = [c_void_p, c_char_p, c_char_p, ctypes.POINTER(c_void_p)]
lib.cdpc_options_free.argtypes = [c_void_p]
lib.cdpc_compile.argtypes = [c_char_p, c_void_p, ctypes.POINTER(c_void_p)]
lib.cdpc_compile_ir.argtypes = [c_char_p, c_size_t, c_void_p, ctypes.POINTER(c_void_p)]
lib.cdpc_result_output.argtypes = [c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(c_size_t)]
lib.cdpc_result_diagnostics_json.argtypes = [c_void_p]
lib.cdpc_result_diagnostics_json.restype = c_void_p
lib.cdpc_result_diagnostics_text.argtypes = [c_void_p]
lib.cdpc_result_diagnostics_text.restype = c_void_p
lib.cdpc_result_free.argtypes = [c_void_p]
lib.cdpc_string_free.argtypes = [c_void_p]
lib.cdpc_bytes_free.argtypes = [ctypes.POINTER(ctypes.c_uint8), c_size_t]

OK, DIAGNOSTICS = 0, 2
IR = b"""target triple = "nvptx64-nvidia-cuda"
declare ptr @cudaGetParameterBuffer(i64, i64)
declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)
define ptx_kernel void @child(ptr %p) {
  ret void
}
define ptx_kernel void @parent(ptr %p) {
  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)
  store ptr %p, ptr %buf, align 8
  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, i32 0, ptr null)
  ret void
}
"""


def take_string(pointer: int) -> str:
    text = ctypes.string_at(pointer).decode()
    lib.cdpc_string_free(pointer)
    return text


def output(result: c_void_p) -> bytes:
    data, size = ctypes.POINTER(ctypes.c_uint8)(), c_size_t()
    status = lib.cdpc_result_output(result, ctypes.byref(data), ctypes.byref(size))
    assert status == OK, take_string(lib.cdpc_result_diagnostics_text(result))
    out = ctypes.string_at(data, size.value)
    lib.cdpc_bytes_free(data, size)
    return out


have_tools = sys.argv[1] == "1"
assert lib.cdpc_abi_version() == 1, lib.cdpc_abi_version()
print("cdpc", lib.cdpc_version().decode(), "from", library)
options = lib.cdpc_options_new()
assert lib.cdpc_options_set(options, b"emit", b"cubin" if have_tools else b"ptx", None) == OK
result = c_void_p()
assert lib.cdpc_compile_ir(IR, len(IR), options, ctypes.byref(result)) == OK
out = output(result)
assert out[:4] == b"\x7fELF" if have_tools else b"__cudaCDP2LaunchDeviceV2" in out, out[:200]
lib.cdpc_result_free(result)
assert lib.cdpc_options_set(options, b"file-name", b"bad.cdp", None) == OK
assert lib.cdpc_compile(b"__global__ void k() { undefined(); }\n", options, ctypes.byref(result)) == DIAGNOSTICS
json_lines = take_string(lib.cdpc_result_diagnostics_json(result))
assert '"code":"E0100"' in json_lines, json_lines
lib.cdpc_result_free(result)
lib.cdpc_options_free(options)
assert "cdpc" not in sys.modules, "the cdpc package was imported"
print("all checks passed")
