"""Launching cdpc's kernels with CuPy arrays.

One call compiles nothing and loads and launches::

    import cupy as cp, cdpc, cdpc.cupy
    compiled = cdpc.compile(source)
    data = cp.zeros(128, dtype=cp.int32)
    cdpc.cupy.launch(compiled, "parent", grid=1, block=4, args=(data, 32))

For repeated launches load once: ``module = cdpc.cupy.load(compiled)``, then
``module.launch("parent", grid, block, args)`` or ``module["parent"](grid, block, args)``.
``module.raw`` is the ``cupy.RawModule`` (CuPy's own documented way to load a cubin:
``cupy.RawModule(path=...)``), for anything else CuPy does with one.

Unlike a bare ``RawKernel`` call, the arguments are checked against the kernel's signature
before the launch: an array for each pointer (of the pointer's element type), and each scalar
converted to the parameter's exact type (CuPy would pass a Python ``int`` as 64 bits to an
``int`` parameter). A mismatch is a ``TypeError`` naming the parameter.
"""

from __future__ import annotations

# Public names are the API (``__all__``); the rest is imported under private names.
import tempfile as _tempfile
from collections.abc import Sequence as _Sequence
from pathlib import Path as _Path
from typing import Any as _Any
from typing import Union as _Union

import numpy as _numpy

from . import Compiled as _Compiled
from . import Param as _Param
from . import Signature as _Signature

# The future import binds `annotations` (a __future__._Feature) as a module global.
del annotations

__all__ = ["Module", "Kernel", "load", "launch", "marshal_args", "Dim"]

Dim = _Union[int, tuple[int, ...]]


def _dim(value: Dim) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(int(d) < 1 for d in dims):
        raise ValueError(f"a grid or block is 1 to 3 positive sizes, not {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def marshal_args(signature: _Signature, args: _Sequence[_Any], is_array: _Any = None) -> tuple[_Any, ...]:
    """Checks ``args`` against ``signature`` and converts them for ``RawKernel.__call__``:
    arrays (objects with ``dtype``, ``data.ptr`` or ``__cuda_array_interface__``) pass as
    pointers, scalars become NumPy scalars of the parameter's dtype. ``TypeError`` names the
    first argument that does not fit."""
    if len(args) != len(signature.params):
        raise TypeError(f"{signature.name}() takes {len(signature.params)} arguments ({_params(signature)}), {len(args)} given")
    out = []
    for index, (param, arg) in enumerate(zip(signature.params, args)):
        out.append(_marshal(signature, index, param, arg, is_array or _is_device_array))
    return tuple(out)


def _params(signature: _Signature) -> str:
    return ", ".join(f"{p.c_type} {p.name}" for p in signature.params)


def _is_device_array(value: _Any) -> bool:
    return hasattr(value, "__cuda_array_interface__")


def _marshal(signature: _Signature, index: int, param: _Param, arg: _Any, is_array: _Any) -> _Any:
    where = f"argument {index + 1} of {signature.name}() (`{param.c_type} {param.name}`)"
    if param.kind == "pointer":
        if is_array(arg):
            if param.dtype is not None and _numpy.dtype(arg.dtype) != _numpy.dtype(param.dtype):
                raise TypeError(f"{where} points to {param.dtype}, but the array holds {_numpy.dtype(arg.dtype)}")
            return arg
        if isinstance(arg, int) and not isinstance(arg, bool):
            return _numpy.uint64(arg)  # a raw device address
        raise TypeError(f"{where} is a pointer: pass a device array (or an address as int), not {type(arg).__name__}")
    if param.kind == "scalar":
        assert param.dtype is not None
        dtype = _numpy.dtype(param.dtype)
        if is_array(arg) or isinstance(arg, (str, bytes)):
            raise TypeError(f"{where} is a {param.dtype} scalar, not {type(arg).__name__}")
        if dtype.kind in "iu" and isinstance(arg, float):
            raise TypeError(f"{where} is an integer ({param.dtype}), not a float")
        if dtype.kind in "iu":
            info = _numpy.iinfo(dtype)
            if not info.min <= int(arg) <= info.max:
                raise TypeError(f"{where} is {param.dtype}: {arg} is out of range")
        return dtype.type(arg)
    if param.kind == "handle":
        return _numpy.uint64(0 if arg is None else int(getattr(arg, "ptr", arg)))
    raise TypeError(f"{where} is passed as {param.kind}, which cdpc.cupy cannot pass yet; use module.raw")


class Kernel:
    """A kernel of a loaded module: ``kernel(grid, block, args, shared_mem=0, stream=None)``."""

    def __init__(self, function: _Any, signature: _Signature) -> None:
        self.function = function
        """The ``cupy.RawKernel``."""
        self.signature = signature

    def __call__(self, grid: Dim, block: Dim, args: _Sequence[_Any], shared_mem: int = 0, stream: _Any = None) -> None:
        self.function(_dim(grid), _dim(block), marshal_args(self.signature, args), shared_mem=shared_mem, stream=stream)


class Module:
    """A :class:`cdpc.Compiled` loaded into CuPy (on the current device)."""

    def __init__(self, compiled: _Compiled) -> None:
        import cupy

        if compiled.cubin is None:
            raise ValueError("compiled with build_cubin=False: there is no cubin to load")
        self.compiled = compiled
        # CuPy loads a cubin from a file (RawModule(path=...)); the file lives as long as the
        # module (CuPy may load it again for another device) and is removed with it.
        self._folder = _tempfile.TemporaryDirectory(prefix="cdpc-")
        path = _Path(self._folder.name) / "module.cubin"
        path.write_bytes(compiled.cubin)
        self.raw = cupy.RawModule(path=str(path))
        self._kernels: dict[str, Kernel] = {}

    def __getitem__(self, name: str) -> Kernel:
        kernel = self._kernels.get(name)
        if kernel is None:
            signature = self.compiled.kernels.get(name)
            if signature is None:
                raise KeyError(f"no kernel `{name}`; the kernels are: {', '.join(self.compiled.kernels) or 'none'}")
            kernel = self._kernels[name] = Kernel(self.raw.get_function(name), signature)
        return kernel

    def launch(self, name: str, grid: Dim, block: Dim, args: _Sequence[_Any] = (), shared_mem: int = 0, stream: _Any = None) -> None:
        """Launches kernel ``name`` (asynchronously, on ``stream`` or CuPy's current stream)."""
        self[name](grid, block, args, shared_mem=shared_mem, stream=stream)

    def close(self) -> None:
        """Removes the temporary cubin file now (it also goes when the module is collected)."""
        self._folder.cleanup()


def load(compiled: _Compiled) -> Module:
    """Loads ``compiled``'s cubin into CuPy."""
    return Module(compiled)


def launch(
    compiled: _Compiled | Module,
    name: str,
    grid: Dim,
    block: Dim,
    args: _Sequence[_Any] = (),
    shared_mem: int = 0,
    stream: _Any = None,
) -> Module:
    """Loads ``compiled`` (unless it is already a :class:`Module`) and launches kernel ``name``
    with CuPy arrays and scalars, checked against its signature. Returns the module, to launch
    again without loading."""
    module = compiled if isinstance(compiled, Module) else Module(compiled)
    module.launch(name, grid, block, args, shared_mem=shared_mem, stream=stream)
    return module
