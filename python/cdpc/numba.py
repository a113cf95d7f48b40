"""Calling cdpc's ``__device__`` functions, child launches included, from numba-cuda kernels.

numba-cuda cannot launch a kernel from the device itself; a numba kernel can call external
device code (``numba.cuda.declare_device(..., link=[...])``), and its linker (nvJitLink or the
driver's) links PTX, relocatable objects and static libraries. :func:`declare_device` hands
numba cdpc's PTX of the module and ``libcudadevrt.a`` (the device runtime that the child
launch calls into), both from memory::

    compiled = cdpc.compile(source)                      # defines launch_fill below
    launch_fill = cdpc.numba.declare_device(compiled, "launch_fill")

    @cuda.jit
    def parent(data, n):
        status = launch_fill(ffi.from_buffer(data), n)   # launches a child grid

PTX, not the relocatable object: measured on an H100 (numba-cuda 0.30.4, CUDA 13.0,
2026-11-23), nvJitLink refuses the object (``Undefined reference to 'launch_fill_row' in
'ltoPtx'``) with ``lto=True`` (numba's default when nvJitLink is present) and ``lto=False``
alike, and links the PTX in both modes.

With numba's default ABI (``abi="numba"``) the C function returns a status (0 for success)
and writes its result through its first parameter::

    extern "C" __device__ int launch_fill(int *result, int *data, int n) {
        fill<<<(n + 255) / 256, 256>>>(data, n);
        *result = (int)cudaGetLastError();
        return 0;
    }

and numba sees ``int32(CPointer(int32), int32)``: the result type, then the parameters
after the first. ``abi="c"`` calls a plain C function instead (in numba-cuda versions whose
``declare_device`` takes ``abi``). Needs a numba-cuda with in-memory linkable code
(``numba.cuda.PTXSource`` and ``numba.cuda.Archive``).
"""

from __future__ import annotations

# Public names are the API (``__all__``); the rest is imported under private names.
import os as _os
from typing import Any as _Any
from typing import Literal as _Literal

from . import Compiled as _Compiled
from . import Signature as _Signature
from ._toolkit import cudadevrt as _cudadevrt

# The future import binds `annotations` (a __future__._Feature) as a module global.
del annotations

__all__ = ["declare_device", "numba_signature", "link_files"]

_NUMBA_TYPES = {
    "bool": "boolean",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "uint16": "uint16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "float32": "float32",
    "float64": "float64",
}


def _numba_type(kind: str, dtype: str | None, what: str) -> str:
    if kind == "scalar" and dtype is not None:
        return _NUMBA_TYPES[dtype]
    if kind == "pointer":
        return f"CPointer({_NUMBA_TYPES[dtype]})" if dtype is not None else "voidptr"
    if kind == "handle":
        return "voidptr"
    if kind == "void":
        return "void"
    raise TypeError(f"{what} is passed as {kind}, which numba cannot pass to a foreign function")


def numba_signature(signature: _Signature, abi: _Literal["numba", "c"] = "numba") -> str:
    """The numba signature string of a cdpc ``__device__`` function.

    With ``abi="numba"`` the function must be ``int f(T *result, params...)``: the signature
    is ``T(params...)``. With ``abi="c"`` it is the C signature as it stands."""
    if signature.kind != "device":
        raise TypeError(f"`{signature.name}` is a kernel; numba kernels call __device__ functions")
    params = list(signature.params)
    if abi == "numba":
        first = params[0] if params else None
        if signature.return_dtype != "int32" or first is None or first.kind != "pointer" or first.dtype is None:
            raise TypeError(
                f"`{signature}` does not follow numba's ABI: it must return int (0 for success) and take "
                f"a pointer to its result first, `int {signature.name}(T *result, ...)`; or declare it with abi=\"c\""
            )
        result = _NUMBA_TYPES[first.dtype]
        params = params[1:]
    elif abi == "c":
        result = _numba_type(signature.return_kind, signature.return_dtype, f"the return type of `{signature.name}`")
    else:
        raise ValueError(f"abi is \"numba\" or \"c\", not {abi!r}")
    args = ", ".join(_numba_type(p.kind, p.dtype, f"parameter `{p.c_type} {p.name}` of `{signature.name}`") for p in params)
    return f"{result}({args})"


def link_files(compiled: _Compiled, cuda_home: str | _os.PathLike[str] | None = None) -> list[_Any]:
    """What numba must link for ``compiled``'s device functions, as numba-cuda linkable code
    held in memory: cdpc's PTX of the module and ``libcudadevrt.a`` (from ``cuda_home``,
    ``CUDA_HOME`` or the NVIDIA wheels, like :func:`cdpc.compile`). The PTX is for the
    architecture ``compiled`` was compiled for; nvJitLink compiles it for the device."""
    from numba import cuda

    if not (hasattr(cuda, "PTXSource") and hasattr(cuda, "Archive")):
        raise ImportError("this numba-cuda has no numba.cuda.PTXSource/Archive (linkable code in memory); upgrade numba-cuda")
    devrt = _cudadevrt(cuda_home)
    return [cuda.PTXSource(compiled.ptx.encode(), name="cdpc-module.ptx"), cuda.Archive(devrt.read_bytes(), name=devrt.name)]


def declare_device(
    compiled: _Compiled,
    name: str,
    sig: str | None = None,
    *,
    abi: _Literal["numba", "c"] = "numba",
    cuda_home: str | _os.PathLike[str] | None = None,
) -> _Any:
    """Declares cdpc ``__device__`` function ``name`` to numba-cuda and returns what numba
    kernels call. ``sig`` defaults to :func:`numba_signature` of its cdpc signature; the
    function's object and libcudadevrt are linked into every kernel that calls it."""
    from numba import cuda

    signature = compiled.device_functions.get(name)
    if signature is None:
        raise KeyError(f"no __device__ function `{name}`; the device functions are: {', '.join(compiled.device_functions) or 'none'}")
    if sig is None:
        sig = numba_signature(signature, abi)
    link = link_files(compiled, cuda_home)
    if abi == "numba":
        return cuda.declare_device(name, sig, link=link)
    return cuda.declare_device(name, sig, link=link, abi=abi)
