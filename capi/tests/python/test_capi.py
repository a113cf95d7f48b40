"""The C API from Python through ctypes: compile samples/hello.cdp to PTX (and a cubin when the
NVIDIA tools exist) and check the error paths.

Usage: python3 test_capi.py LIBRARY SAMPLES_DIR HAVE_TOOLS(0|1)."""
import ctypes
import sys

OK, INVALID_ARGUMENT, DIAGNOSTICS, TOOL, USAGE, INTERNAL = range(6)


def load(path):
    lib = ctypes.CDLL(path)
    c_char_pp = ctypes.POINTER(ctypes.c_char_p)
    lib.cdpc_options_new.restype = ctypes.c_void_p
    lib.cdpc_options_free.argtypes = [ctypes.c_void_p]
    lib.cdpc_options_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.cdpc_options_set.restype = ctypes.c_int
    lib.cdpc_compile.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.cdpc_compile.restype = ctypes.c_int
    lib.cdpc_result_status.argtypes = [ctypes.c_void_p]
    lib.cdpc_result_output.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    lib.cdpc_result_output.restype = ctypes.c_int
    for name in ("cdpc_result_message", "cdpc_result_diagnostics_text", "cdpc_result_diagnostics_json"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_void_p
    lib.cdpc_result_diagnostic_count.argtypes = [ctypes.c_void_p]
    lib.cdpc_result_diagnostic_count.restype = ctypes.c_size_t
    lib.cdpc_result_free.argtypes = [ctypes.c_void_p]
    lib.cdpc_string_free.argtypes = [ctypes.c_void_p]
    lib.cdpc_bytes_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


def take_string(lib, ptr):
    assert ptr, "expected a string"
    text = ctypes.string_at(ptr).decode()
    lib.cdpc_string_free(ptr)
    return text


def set_option(lib, options, key, value):
    error = ctypes.c_void_p()
    status = lib.cdpc_options_set(options, key.encode() if key is not None else None, value, ctypes.byref(error))
    message = take_string(lib, error.value) if error.value else None
    return status, message


def compile_source(lib, source, options):
    result = ctypes.c_void_p()
    status = lib.cdpc_compile(source, options, ctypes.byref(result))
    output = None
    if status == OK:
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        assert lib.cdpc_result_output(result, ctypes.byref(data), ctypes.byref(size)) == OK
        output = ctypes.string_at(data, size.value)
        lib.cdpc_bytes_free(data, size)
    message = take_string(lib, lib.cdpc_result_message(result))
    diagnostics = take_string(lib, lib.cdpc_result_diagnostics_text(result))
    json_lines = take_string(lib, lib.cdpc_result_diagnostics_json(result))
    # Every line is one JSON object with the same codes as the text.
    import json as json_module
    codes = [json_module.loads(line)["code"] for line in (json_lines or "").splitlines()]
    assert all(code in diagnostics for code in codes if code), (codes, diagnostics)
    count = lib.cdpc_result_diagnostic_count(result)
    lib.cdpc_result_free(result)
    return status, output, message, diagnostics, count


def main():
    lib = load(sys.argv[1])
    source = open(sys.argv[2] + "/hello.cdp", "rb").read()
    have_tools = sys.argv[3] == "1"
    options = lib.cdpc_options_new()
    assert options
    if have_tools:
        status, cubin, message, _, _ = compile_source(lib, source, options)
        assert status == OK, message
        assert cubin[:4] == b"\x7fELF", cubin[:4]
    assert set_option(lib, options, "emit", b"ptx") == (OK, None)
    assert set_option(lib, options, "launch-abi", b"v1") == (OK, None)
    status, ptx, message, _, _ = compile_source(lib, b"""
        extern "C" __global__ void child(int *data, int add) { data[threadIdx.x] += add; }
        extern "C" __global__ void parent(int *data) { child<<<1, 256>>>(data, 7); }
    """, options)
    assert status == OK, message
    assert b"cudaGetParameterBuffer" in ptx and b"cudaLaunchDevice" in ptx, ptx

    # launch aggregation, with its remarks among the diagnostics (v2: fire-and-forget)
    assert set_option(lib, options, "launch-abi", b"v2") == (OK, None)
    assert set_option(lib, options, "aggregate-launches", b"warp") == (OK, None)
    assert set_option(lib, options, "pass-remarks", b"aggregate") == (OK, None)
    status, ptx, message, diagnostics, count = compile_source(lib, b"""
        extern "C" __global__ void child(int *data) { data[threadIdx.x] += 1; }
        extern "C" __global__ void parent(int *data) {
            child<<<1, 32>>>(data + 32 * threadIdx.x);
            child<<<1, 32, 0, cudaStreamFireAndForget>>>(data);
        }
    """, options)
    assert status == OK, message
    assert b".entry child__agg(" in ptx and b"vote.sync.ballot" in ptx, ptx
    assert count == 1 and "note[R0500]" in diagnostics and "fire-and-forget" in diagnostics, diagnostics
    status, message = set_option(lib, options, "aggregate-launches", b"thread")
    assert status == INVALID_ARGUMENT and "warp, block, grid or off" in message, message
    assert set_option(lib, options, "aggregate-launches", b"off") == (OK, None)

    # thresholding: the small child runs in its launching thread, the one with a barrier stays
    # a launch, with its remark
    assert set_option(lib, options, "launch-threshold", b"128") == (OK, None)
    status, ptx, message, diagnostics, count = compile_source(lib, b"""
        extern "C" __global__ void child(int *data) { data[threadIdx.x] += 1; }
        extern "C" __global__ void tile(int *data) { __syncthreads(); data[threadIdx.x] = 0; }
        extern "C" __global__ void parent(int *data) { child<<<1, 32>>>(data); tile<<<1, 32>>>(data); }
    """, options)
    assert status == OK, message
    assert count == 1 and "note[R0502]" in diagnostics and "__syncthreads" in diagnostics, diagnostics
    status, message = set_option(lib, options, "launch-threshold", b"small")
    assert status == INVALID_ARGUMENT and "thread count" in message, message
    assert set_option(lib, options, "launch-threshold", b"0") == (OK, None)
    assert set_option(lib, options, "pass-remarks", b"none") == (OK, None)

    # the device heap's pool: device-side malloc behind cdpc's pool, shared by every object
    assert set_option(lib, options, "device-malloc-pool", b"true") == (OK, None)
    status, ptx, message, diagnostics, count = compile_source(lib, b"""
        extern "C" __global__ void take(int **out) { out[threadIdx.x] = (int *)malloc(64); }
    """, options)
    assert status == OK, message
    assert b".common .global .align 16 .b8 __cdpc_malloc_pool_v1[33554432];" in ptx, ptx
    status, message = set_option(lib, options, "device-malloc-pool", b"pool")
    assert status == INVALID_ARGUMENT, message
    assert set_option(lib, options, "device-malloc-pool", b"false") == (OK, None)

    # remarks are opt-in: a skipped host-only header is silent unless asked for
    with_header = b"#include <time.h>\n__global__ void k(int *p) { p[0] = 1; }\n"
    status, _, message, diagnostics, count = compile_source(lib, with_header, options)
    assert status == OK and count == 0, diagnostics
    assert set_option(lib, options, "remarks", b"skipped-headers") == (OK, None)
    status, _, message, diagnostics, count = compile_source(lib, with_header, options)
    assert status == OK and count == 1 and "note[R0611]" in diagnostics, diagnostics
    status, message = set_option(lib, options, "remarks", b"everything")
    assert status == INVALID_ARGUMENT and "skipped-headers, all or none" in message, message
    assert set_option(lib, options, "remarks", b"none") == (OK, None)

    status, output, message, diagnostics, count = compile_source(lib, b"__global__ void k() { nope(); }", options)
    assert status == DIAGNOSTICS and output is None and count >= 1
    assert "error[E0100]" in diagnostics, diagnostics
    assert "could not compile" in message

    status, message = set_option(lib, options, "bogus", b"1")
    assert status == INVALID_ARGUMENT and "unknown option" in message, message
    status, message = set_option(lib, options, "opt-level", b"9")
    assert status == INVALID_ARGUMENT and "0 to 3" in message, message
    status, message = set_option(lib, options, "arch", b"\xff")
    assert status == INVALID_ARGUMENT and "UTF-8" in message, message
    status, message = set_option(lib, None, "arch", b"sm_90")
    assert status == INVALID_ARGUMENT
    status, _, message, _, _ = compile_source(lib, None, options)
    assert status == INVALID_ARGUMENT and "NULL" in message, message
    # A source that is not UTF-8 is a diagnostic (E0008) at the first bad byte, like any mistake.
    status, output, message, diagnostics, count = compile_source(lib, b"int x;\n\xc3\x28", options)
    assert status == DIAGNOSTICS and output is None and count == 1, (status, message)
    assert "error[E0008]" in diagnostics and "0xC3" in diagnostics and ":2:1" in diagnostics, diagnostics
    lib.cdpc_options_free(options)
    print("test_capi.py: all checks passed")


if __name__ == "__main__":
    main()
