"""Where ptxas, nvlink and libcudadevrt come from, seen from Python.

The package depends on NVIDIA's wheels (``nvidia-cuda-nvcc``, ``nvidia-cuda-runtime``,
``nvidia-nvvm``), which install ``ptxas``, ``nvlink``, ``libcudadevrt.a`` and libdevice under
``site-packages/nvidia/cu13/``. That folder is found through the import system, so it works in
any virtual environment, ``--user`` or ``--target`` install, without a CUDA toolkit.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["cuda_home", "wheel_cuda_home", "cudadevrt"]

_WHEEL_SUBDIR = Path("cu13")
_NEEDED = (Path("bin/ptxas"), Path("bin/nvlink"), Path("lib/libcudadevrt.a"))


def wheel_cuda_home() -> Path | None:
    """The ``nvidia/cu13`` folder of the installed NVIDIA wheels, or ``None``.

    Every folder of the ``nvidia`` namespace package on ``sys.path`` is looked at; the first
    that holds ``bin/ptxas``, ``bin/nvlink`` and ``lib/libcudadevrt.a`` wins.
    """
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / _WHEEL_SUBDIR
        if all((folder / needed).is_file() for needed in _NEEDED):
            return folder
    return None


def cuda_home(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder cdpc takes ptxas, nvlink and libcudadevrt from, in this order:

    1. ``explicit`` (the ``cuda_home=`` argument of :func:`cdpc.compile`);
    2. the ``CUDA_HOME`` environment variable, when set and not empty (a CUDA toolkit:
       the folder of an installed toolkit, or a ``pip install --target`` folder);
    3. the NVIDIA wheels this package depends on (:func:`wheel_cuda_home`).

    ``None`` when none applies: then the library's own search runs (the project's ``.cuda/``
    folder, then ``ptxas`` on ``PATH``; see SETUP.md), and its error names what is missing.
    """
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get("CUDA_HOME")
    if from_env:
        return Path(from_env)
    return wheel_cuda_home()


def cudadevrt(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The path of ``libcudadevrt.a`` in the folder :func:`cuda_home` picks (for linkers that
    take the device runtime as a file, such as numba-cuda's)."""
    home = cuda_home(explicit)
    if home is None:
        raise FileNotFoundError(
            "libcudadevrt.a not found: install the NVIDIA wheels (pip install nvidia-cuda-runtime) "
            "or set CUDA_HOME to a CUDA toolkit"
        )
    for candidate in ("lib64/libcudadevrt.a", "lib/libcudadevrt.a", "lib/x86_64-linux-gnu/libcudadevrt.a",
                      "nvidia/cu13/lib/libcudadevrt.a"):
        path = home / candidate
        if path.is_file():
            return path
    raise FileNotFoundError(f"libcudadevrt.a not found under {home} (looked in lib64/, lib/ and nvidia/cu13/lib/)")
