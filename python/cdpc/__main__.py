"""The ``cdpc`` command (the console script, and ``python -m cdpc``): the same program as the
``cdpc`` binary, compiled into the extension. When neither ``--cuda-home`` nor ``CUDA_HOME``
is given, it uses the NVIDIA wheels this package depends on."""

from __future__ import annotations

import os
import sys

from . import _cdpc
from ._toolkit import wheel_cuda_home


def main(argv: list[str] | None = None) -> int:
    """Runs ``cdpc`` with ``argv`` (``sys.argv[1:]`` by default) and returns its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    saved = os.environ.get("CUDA_HOME")
    home = None if saved else wheel_cuda_home()
    if home is not None:
        # the command reads CUDA_HOME after --cuda-home, so an explicit --cuda-home still wins
        os.environ["CUDA_HOME"] = str(home)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        return _cdpc.main(["cdpc", *args])
    finally:
        if home is not None:
            if saved is None:
                os.environ.pop("CUDA_HOME", None)
            else:
                os.environ["CUDA_HOME"] = saved

if __name__ == "__main__":
    sys.exit(main())
