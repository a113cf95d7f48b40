"""cdpc: compile CUDA kernels with device-side launches (dynamic parallelism) from Python.

>>> import cdpc
>>> compiled = cdpc.compile('''
...     extern "C" __global__ void child(int *data) { data[threadIdx.x] = threadIdx.x; }
...     extern "C" __global__ void parent(int *data) { child<<<1, 32>>>(data); }
... ''')                                                                  # doctest: +SKIP
>>> compiled.cubin[:4]                                                    # doctest: +SKIP
b'\\x7fELF'
>>> [p.c_type for p in compiled.kernels["parent"].params]                 # doctest: +SKIP
['int *']

:func:`compile` returns a :class:`Compiled` (the cubin, the relocatable object, PTX, LLVM IR,
the kernels' and device functions' signatures, the warnings); a source with errors raises
:class:`CompileError`, whose text is the rendered diagnostics and whose ``diagnostics`` are
:class:`Diagnostic` objects. ptxas, nvlink and libcudadevrt come from the NVIDIA wheels this
package depends on (see :func:`cuda_home`). :mod:`cdpc.cupy` launches the result with CuPy
arrays, :mod:`cdpc.numba` lets numba-cuda kernels call cdpc's ``__device__`` functions.
"""

from __future__ import annotations

# The module's public names are its API (``__all__``): what it uses besides is imported under
# private names (tests/test_api.py checks).
import json as _json
import os as _os
from collections.abc import Callable as _Callable
from collections.abc import Iterable as _Iterable
from collections.abc import Mapping as _Mapping
from collections.abc import Sequence as _Sequence
from dataclasses import dataclass as _dataclass
from dataclasses import field as _field
from pathlib import Path as _Path
from typing import Any as _Any
from typing import Literal as _Literal
from typing import Union as _Union

from . import _cdpc
from ._toolkit import cuda_home, cudadevrt, wheel_cuda_home

# The future import binds `annotations` (a __future__._Feature) as a module global.
del annotations

__all__ = [
    "compile",
    "compile_ir",
    "link",
    "Compiled",
    "CompileError",
    "Diagnostic",
    "Label",
    "Signature",
    "Param",
    "ToolRun",
    "cuda_home",
    "cudadevrt",
    "wheel_cuda_home",
    "get_include",
    "get_library",
    "Defines",
    "ValueKindName",
    "__version__",
]

__version__: str = _cdpc.__version__


def get_include() -> str:
    """The folder holding ``cdpc.h``, the header of cdpc's C API, for a C compiler's ``-I``.

    The wheel ships the C API for programs in any language (docs/EMBEDDING.md): the header
    here, the library at :func:`get_library`, and a pkg-config file in ``lib/pkgconfig`` beside
    this folder (``PKG_CONFIG_PATH=<package>/lib/pkgconfig pkg-config --cflags --libs cdpc``).
    """
    return str(_Path(__file__).resolve().parent / "include")


def get_library() -> str:
    """The path of the shared library that exports cdpc's C API (the functions of ``cdpc.h``).

    It is this package's extension module (``cdpc/_cdpc.abi3.so``), which holds the whole
    compiler once: C programs link it by path or with ``-l:_cdpc.abi3.so`` and an rpath to its
    folder, foreign-function interfaces (``ctypes.CDLL``, Julia's ``ccall``) load it by path.
    It needs no Python when loaded outside one.
    """
    return str(_Path(_cdpc.__file__).resolve())

Defines = _Union[_Mapping[str, _Union[str, int, None]], _Iterable[str]]
"""``{"N": 4, "DEBUG": None}`` or ``["N=4", "DEBUG"]``, like ``-DN=4 -DDEBUG``."""


@_dataclass(frozen=True)
class Label:
    """A span of the source with an explanation. ``file`` is the file it is in (the source's
    name, or a header it includes); offsets are bytes of that file (end exclusive); lines and
    columns are 1-based, columns counting characters."""

    file: str
    byte_start: int
    byte_end: int
    line_start: int
    column_start: int
    line_end: int
    column_end: int
    message: str
    primary: bool


@_dataclass(frozen=True)
class Diagnostic:
    """One problem: the JSON object of ``cdpc --error-format json``, as a Python object.

    ``code`` is the stable code (``"E0307"``), or ``None`` for a failure that is not about the
    source (a tool failed, an option is impossible)."""

    code: str | None
    severity: _Literal["error", "warning"]
    message: str
    file: str
    labels: tuple[Label, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def primary_label(self) -> Label | None:
        """The label that points at the problem, if the diagnostic has one."""
        return next((label for label in self.labels if label.primary), None)

    @staticmethod
    def _from_json_lines(text: str) -> list[Diagnostic]:
        out = []
        for line in text.splitlines():
            if not line.strip():
                continue
            d = _json.loads(line)
            out.append(
                Diagnostic(
                    code=d["code"],
                    severity=d["severity"],
                    message=d["message"],
                    file=d["file"],
                    labels=tuple(Label(**label) for label in d["labels"]),
                    notes=tuple(d["notes"]),
                )
            )
        return out


class CompileError(Exception):
    """Compilation failed. ``str(error)`` is the rendered diagnostics (rustc-style text, as the
    command line prints them); ``diagnostics`` holds them as :class:`Diagnostic` objects (the
    warnings too); ``kind`` is ``"diagnostics"`` (the source has errors), ``"tool"`` (ptxas or
    nvlink missing or failed), ``"usage"`` (impossible options) or ``"internal"`` (a bug)."""

    def __init__(self, rendered: str, diagnostics: list[Diagnostic], kind: str) -> None:
        super().__init__(rendered.rstrip("\n"))
        self.rendered = rendered
        self.diagnostics = diagnostics
        self.kind = kind

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


ValueKindName = _Literal["void", "scalar", "pointer", "handle", "dim3", "aggregate"]


@_dataclass(frozen=True)
class Param:
    """One parameter of a kernel or device function.

    ``kind`` says how it is passed: ``"scalar"`` (``dtype`` is its NumPy dtype name),
    ``"pointer"`` (``dtype`` is the element's, or ``None`` for ``void *``, pointers to structs
    and pointers to pointers; ``is_const`` for ``const T *``), ``"handle"`` (a stream or event),
    ``"dim3"`` or ``"aggregate"`` (a struct by value). ``offset`` is its place in the kernel's
    parameter buffer."""

    name: str
    c_type: str
    kind: ValueKindName
    dtype: str | None
    is_const: bool
    size: int
    align: int
    offset: int


@_dataclass(frozen=True)
class Signature:
    """A kernel's or device function's symbol (cdpc does not mangle names) and parameters."""

    name: str
    kind: _Literal["kernel", "device"]
    return_c_type: str
    return_kind: ValueKindName
    return_dtype: str | None
    params: tuple[Param, ...]
    param_bytes: int

    def __str__(self) -> str:
        qualifier = "__global__" if self.kind == "kernel" else "__device__"
        params = ", ".join(f"{p.c_type}{'' if p.c_type.endswith('*') else ' '}{p.name}" for p in self.params)
        return f"{qualifier} {self.return_c_type} {self.name}({params})"

    @staticmethod
    def _from_dict(d: dict) -> Signature:
        params = []
        for p in d["params"]:
            params.append(Param(p["name"], p["c_type"], p["kind"], p["dtype"], p["is_const"], p["size"], p["align"], p["offset"]))
        r = d["return_kind"]
        return Signature(d["name"], d["kind"], d["return_c_type"], r["kind"], r["dtype"], tuple(params), d["param_bytes"])


@_dataclass(frozen=True)
class ToolRun:
    """One run of ptxas or nvlink: its command line and what it printed."""

    tool: str
    command: str
    stdout: str
    stderr: str


@_dataclass(frozen=True)
class Compiled:
    """The outputs of one compilation.

    ``cubin`` is linked with libcudadevrt, ready for ``cuModuleLoadData``
    (``cupy.RawModule(code=...)``); ``object`` is the relocatable object of ``ptxas -c``, for
    other linkers (numba-cuda); both are ``None`` when compiled with ``build_cubin=False``."""

    ptx: str
    llvm_ir: str
    cubin: bytes | None
    object: bytes | None
    signatures: tuple[Signature, ...]
    warnings: tuple[Diagnostic, ...]
    tool_runs: tuple[ToolRun, ...]
    arch: str
    rendered_warnings: str = _field(default="", repr=False)

    @property
    def kernels(self) -> dict[str, Signature]:
        """The ``__global__`` functions by name."""
        return {s.name: s for s in self.signatures if s.kind == "kernel"}

    @property
    def device_functions(self) -> dict[str, Signature]:
        """The ``__device__`` functions by name."""
        return {s.name: s for s in self.signatures if s.kind == "device"}

    def write_cubin(self, path: str | _os.PathLike[str]) -> _Path:
        """Writes the cubin to ``path`` and returns the path."""
        if self.cubin is None:
            raise ValueError("compiled with build_cubin=False: there is no cubin")
        path = _Path(path)
        path.write_bytes(self.cubin)
        return path


def _defines(defines: Defines | None) -> list[tuple[str, str | None]]:
    if defines is None:
        return []
    if isinstance(defines, _Mapping):
        return [(str(k), None if v is None else str(v)) for k, v in defines.items()]
    if isinstance(defines, str):
        raise TypeError("defines is a mapping or a list of 'NAME' / 'NAME=VALUE' strings, not one string")
    out: list[tuple[str, str | None]] = []
    for item in defines:
        name, eq, value = str(item).partition("=")
        out.append((name, value if eq else None))
    return out


def _arch(arch: str | int) -> str:
    if isinstance(arch, int):
        return f"sm_{arch}"
    return arch.removeprefix("-arch=")


def compile(  # noqa: A001 (the natural name, like re.compile)
    source: str,
    *,
    arch: str | int = "sm_90",
    opt_level: int = 3,
    launch_abi: _Literal["v1", "v2"] = "v2",
    default_stream: _Literal["legacy", "null", "per-thread"] = "legacy",
    address_size: _Literal[32, 64] = 64,
    defines: Defines | None = None,
    include_dirs: _Sequence[str | _os.PathLike[str]] | None = None,
    aggregate_launches: _Literal["off", "block", "warp", "grid"] = "off",
    launch_threshold: int = 0,
    device_malloc_pool: bool = False,
    pass_remarks: bool = False,
    warnings_as_errors: bool = False,
    deny: _Sequence[str] = (),
    allow: _Sequence[str] = (),
    ptxas_args: _Sequence[str] = (),
    nvlink_args: _Sequence[str] = (),
    cuda_home: str | _os.PathLike[str] | None = None,
    tool_timeout: float | None = None,
    build_cubin: bool = True,
    filename: str = "input.cdp",
    lineinfo: bool = False,
    device_debug: bool = False,
    separate: bool = False,
    use_fast_math: bool = False,
    std: str | None = None,
    legacy_warp_intrinsics: bool = False,
) -> Compiled:
    """Compiles ``.cdp`` / CUDA device source held in a string.

    :param source: the program text.
    :param arch: the GPU architecture: ``"sm_90"``, ``"sm_80"``, ``90``.
    :param opt_level: 0 to 3, for LLVM and ptxas.
    :param launch_abi: ``"v2"`` (what nvcc 13 emits; all streams) or ``"v1"`` (the documented
        ``cudaGetParameterBuffer``/``cudaLaunchDevice`` pair).
    :param default_stream: what stream 0 means, as nvcc's ``--default-stream``: ``"per-thread"``
        defines ``CUDA_API_PER_THREAD_DEFAULT_STREAM`` and calls the runtime's ``_ptsz`` entry points.
    :param address_size: 64, or 32 for PTX only (then pass ``build_cubin=False``).
    :param defines: preprocessor macros, ``{"N": 4}`` or ``["N=4"]`` (``-D``).
    :param include_dirs: folders searched by ``#include "..."`` (``-I``).
    :param aggregate_launches: launch aggregation (``-faggregate-launches=``).
    :param launch_threshold: run a launch of at most this many threads in all inside the
        launching thread instead (``-flaunch-threshold=``; 0, the default: never).
    :param device_malloc_pool: serve device-side ``malloc`` and ``cudaMalloc`` of at most
        16 KiB from a 32 MiB pool in the program's static memory (``-fdevice-malloc-pool``);
        every device file that frees what another allocated must use it too
        (docs/DEVICE-MALLOC.md).
    :param pass_remarks: report why launches were left alone, as warnings (``-Rpass=aggregate``).
    :param warnings_as_errors: ``-Werror``.
    :param deny: warning codes to treat as errors (``--deny``).
    :param allow: warning codes not to report (``--allow``).
    :param ptxas_args: extra ptxas arguments (``-Xptxas``).
    :param nvlink_args: extra nvlink arguments (``-Xnvlink``).
    :param cuda_home: where ptxas, nvlink and libcudadevrt are; by default ``CUDA_HOME``, then
        the NVIDIA wheels (see :func:`cdpc.cuda_home`).
    :param tool_timeout: seconds after which a ptxas or nvlink run is stopped and the compile
        fails (``None``: cdpc's default of 600; ``0``: no limit).
    :param build_cubin: run ptxas and nvlink (``cubin`` and ``object``); ``False`` stops at PTX
        and needs no NVIDIA tool.
    :param filename: the name diagnostics show for the source; its extension gives the
        language, as for files: ``.cu`` is CUDA C++ (compiled by the Clang inside cdpc),
        anything else the kernel language.
    :param lineinfo: line tables in the PTX and cubin (``-lineinfo``).
    :param device_debug: full DWARF at -O0 (``-G``).
    :param separate: one of several files (``-dc``): device functions and ``extern`` variables
        declared but not defined are left to a link (:func:`link`).
    :param use_fast_math: nvcc's ``--use_fast_math``: denormals flushed, approximate division
        and square root, the fast versions of ``sinf``, ``expf``, ``powf``, ... (nvcc's
        instructions, docs/FLOATING-POINT.md).
    :param std: the C++ dialect of CUDA C++, as nvcc's ``-std``: ``"c++17"`` (the default),
        ``"c++20"``, ...; the kernel language is C whatever this says.
    :param legacy_warp_intrinsics: CUDA 8's warp functions without ``_sync`` (``__shfl``,
        ``__any``, ``__ballot``, ...) in CUDA C++ compiled as their ``_sync`` forms with ``W0902``,
        where by default they are ``E0903`` as nvcc refuses them for sm_70 and newer
        (``-flegacy-warp-intrinsics``).
    :raises CompileError: the source has errors, or a tool failed; ``str(error)`` is the
        rendered diagnostics.
    :raises ValueError: an option has an impossible value (an unknown architecture, say).
    """
    if not isinstance(source, str):
        raise TypeError(f"source is str, not {type(source).__name__} (decode bytes first)")
    # Every parameter but the source, by name: the options are compile_ir's too.
    return _compile(source, False, **{k: v for k, v in locals().items() if k != "source"})


def compile_ir(
    ir: str | bytes,
    *,
    arch: str | int = "sm_90",
    opt_level: int = 3,
    launch_abi: _Literal["v1", "v2"] = "v2",
    default_stream: _Literal["legacy", "null", "per-thread"] = "legacy",
    address_size: _Literal[32, 64] = 64,
    aggregate_launches: _Literal["off", "block", "warp", "grid"] = "off",
    launch_threshold: int = 0,
    device_malloc_pool: bool = False,
    pass_remarks: bool = False,
    warnings_as_errors: bool = False,
    deny: _Sequence[str] = (),
    allow: _Sequence[str] = (),
    ptxas_args: _Sequence[str] = (),
    nvlink_args: _Sequence[str] = (),
    cuda_home: str | _os.PathLike[str] | None = None,
    tool_timeout: float | None = None,
    build_cubin: bool = True,
    filename: str = "input.ll",
    lineinfo: bool = False,
    device_debug: bool = False,
    separate: bool = False,
    use_fast_math: bool = False,
) -> Compiled:
    """Compiles LLVM IR another front end wrote: textual IR (``str`` or ``bytes``) or bitcode
    (``bytes``, told apart by its magic), under the contract of docs/IR-INPUT.md. Device-side
    launches are the documented ``cudaGetParameterBuffer`` / ``cudaLaunchDevice`` sequence (or
    the CDP2 names); kernels have the ``ptx_kernel`` calling convention or an
    ``!nvvm.annotations`` entry. The options are :func:`compile`'s (``filename`` names the
    input in diagnostics); ``Compiled.signatures`` is empty, since no source describes the
    kernels.

    :raises CompileError: the IR breaks the contract (``E1010``-``E1015``), or a tool failed.
    """
    if not isinstance(ir, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"ir is str or bytes, not {type(ir).__name__}")
    source = bytes(ir) if isinstance(ir, (bytearray, memoryview)) else ir
    return _compile(source, True, **{k: v for k, v in locals().items() if k not in ("ir", "source")})


def _flag(value: object) -> str:
    return "true" if value else "false"


def _cuda_home_pairs(explicit: str | _os.PathLike[str] | None) -> list[tuple[str, str]]:
    home = _toolkit_home(explicit)
    return [] if home is None else [("cuda-home", str(home))]


# How each keyword argument of compile, compile_ir and link becomes name/value pairs of the
# compiler's options, which the extension module reads with the C API's reading
# (cdpc::driver::option_pairs). In this order: `device_debug` comes after `lineinfo` and wins.
_OPTION_PAIRS: dict[str, _Callable[[_Any], list[tuple[str, str]]]] = {
    "arch": lambda v: [("arch", _arch(v))],
    "opt_level": lambda v: [("opt-level", str(int(v)))],
    "launch_abi": lambda v: [("launch-abi", v)],
    "default_stream": lambda v: [("default-stream", v)],
    "address_size": lambda v: [("address-size", str(int(v)))],
    "defines": lambda v: [("define", name if value is None else f"{name}={value}") for name, value in _defines(v)],
    "include_dirs": lambda v: [("include-dir", _os.fspath(d)) for d in v or ()],
    "aggregate_launches": lambda v: [("aggregate-launches", v)],
    "launch_threshold": lambda v: [("launch-threshold", str(int(v)))],
    "device_malloc_pool": lambda v: [("device-malloc-pool", _flag(v))],
    "pass_remarks": lambda v: [("pass-remarks", "aggregate" if v else "none")],
    "warnings_as_errors": lambda v: [("werror", _flag(v))],
    "deny": lambda v: [("deny", code) for code in v],
    "allow": lambda v: [("allow", code) for code in v],
    "ptxas_args": lambda v: [("ptxas-arg", arg) for arg in v],
    "nvlink_args": lambda v: [("nvlink-arg", arg) for arg in v],
    "cuda_home": _cuda_home_pairs,
    "tool_timeout": lambda v: [] if v is None else [("tool-timeout", str(float(v)))],
    "lineinfo": lambda v: [("lineinfo", "true")] if v else [],
    "device_debug": lambda v: [("device-debug", "true")] if v else [],
    "separate": lambda v: [("separate", _flag(v))],
    "use_fast_math": lambda v: [("use-fast-math", _flag(v))],
    "std": lambda v: [] if v is None else [("std", v)],
    "legacy_warp_intrinsics": lambda v: [("legacy-warp-intrinsics", _flag(v))],
}


def _option_pairs(options: dict[str, _Any]) -> list[tuple[str, str, str]]:
    """The options as ``(keyword, key, value)``: the extension module's ValueError for a value
    the compiler refuses names the keyword."""
    unknown = options.keys() - _OPTION_PAIRS.keys()
    if unknown:
        raise TypeError(f"no compiler option is named {', '.join(sorted(unknown))}")
    return [(name, key, value) for name, to_pairs in _OPTION_PAIRS.items() if name in options for key, value in to_pairs(options[name])]


def _compile(source: str | bytes, ir: bool, *, filename: str, build_cubin: bool, **options: _Any) -> Compiled:
    result = _cdpc.compile(source, ir=ir, file_name=filename, build_cubin=bool(build_cubin), options=_option_pairs(options))
    diagnostics = Diagnostic._from_json_lines(result["diagnostics_json"])
    if not result["ok"]:
        raise CompileError(result["rendered"], diagnostics, result["error_kind"])
    return Compiled(
        ptx=result["ptx"],
        llvm_ir=result["llvm_ir"],
        cubin=result["cubin"],
        object=result["object"],
        signatures=tuple(Signature._from_dict(s) for s in result["signatures"]),
        warnings=tuple(diagnostics),
        tool_runs=tuple(ToolRun(**r) for r in result["tool_runs"]),
        arch=_arch(options["arch"]),
        rendered_warnings=result["rendered"],
    )


def link(
    paths: _Sequence[str | _os.PathLike[str]],
    *,
    arch: str | int = "sm_90",
    opt_level: int = 3,
    libraries: _Sequence[str] = (),
    library_dirs: _Sequence[str | _os.PathLike[str]] = (),
    defines: Defines | None = None,
    include_dirs: _Sequence[str | _os.PathLike[str]] | None = None,
    lineinfo: bool = False,
    device_debug: bool = False,
    cuda_home: str | _os.PathLike[str] | None = None,
    tool_timeout: float | None = None,
    launch_abi: _Literal["v1", "v2"] = "v2",
    aggregate_launches: _Literal["off", "block", "warp", "grid"] = "off",
    launch_threshold: int = 0,
    device_malloc_pool: bool = False,
    use_fast_math: bool = False,
    std: str | None = None,
    legacy_warp_intrinsics: bool = False,
) -> bytes:
    """Links several files into one cubin, as ``cdpc a.cu b.cu x.o -lNAME`` does.

    Sources (``.cu``, ``.cdp``) are compiled separately, so ``extern __device__`` functions and
    variables resolve across them; objects (``.o``, from ``cdpc -dc`` or ``nvcc -dc``), archives
    (``.a``) and ``libraries`` (``libNAME.a`` in ``library_dirs``) join them; libcudadevrt is
    always linked. A symbol defined twice (E0800) or defined nowhere (E0801) is reported with
    the lines of both files. The sources are compiled with ``launch_abi``,
    ``aggregate_launches``, ``launch_threshold``, ``device_malloc_pool``, ``use_fast_math``,
    ``std`` and ``legacy_warp_intrinsics`` as :func:`compile` takes them (objects keep what they were compiled with).

    :returns: the cubin's bytes.
    :raises CompileError: a source has errors, the link found duplicate or missing symbols, or
        a tool failed.
    """
    options = {k: v for k, v in locals().items() if k not in ("paths", "libraries", "library_dirs")}
    result = _cdpc.link(
        [_os.fspath(p) for p in paths],
        libraries=list(libraries),
        library_dirs=[_os.fspath(d) for d in library_dirs],
        options=_option_pairs(options),
    )
    if not result["ok"]:
        diagnostics = Diagnostic._from_json_lines(result["diagnostics_json"])
        raise CompileError(result["rendered"], diagnostics, result["error_kind"])
    return result["cubin"]


def _toolkit_home(explicit: str | _os.PathLike[str] | None) -> _Path | None:
    return cuda_home(explicit)
