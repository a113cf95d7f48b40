"""The CuPy and Numba helpers' GPU-free parts: argument checks and numba signatures. The
launches themselves run on a GPU (examples/python/, docs/PYTHON.md)."""

from __future__ import annotations

import pytest

import cdpc
import cdpc.numba

SOURCE = """\
extern "C" __global__ void k(int *data, const float *in, int n, double x, unsigned char c) { }
extern "C" __device__ int launch_fill(int *result, int *data, int n) { *result = 0; return 0; }
extern "C" __device__ float scale(const float *v, float by) { return *v * by; }
extern "C" __device__ void no_abi(int n) { }
"""


@pytest.fixture(scope="module")
def compiled() -> cdpc.Compiled:
    return cdpc.compile(SOURCE, build_cubin=False)


def test_numba_signatures(compiled: cdpc.Compiled) -> None:
    devices = compiled.device_functions
    assert cdpc.numba.numba_signature(devices["launch_fill"]) == "int32(CPointer(int32), int32)"
    assert cdpc.numba.numba_signature(devices["scale"], abi="c") == "float32(CPointer(float32), float32)"
    assert cdpc.numba.numba_signature(devices["no_abi"], abi="c") == "void(int32)"
    with pytest.raises(TypeError, match="numba's ABI"):
        cdpc.numba.numba_signature(devices["no_abi"])
    with pytest.raises(TypeError, match="kernel"):
        cdpc.numba.numba_signature(compiled.kernels["k"])


class FakeDeviceArray:
    """Stands for a CuPy array: what cdpc.cupy looks at is the CUDA array interface and dtype."""

    def __init__(self, dtype: str) -> None:
        import numpy

        self.dtype = numpy.dtype(dtype)
        self.__cuda_array_interface__ = {"data": (0, False), "shape": (1,), "typestr": self.dtype.str, "version": 3}


def test_cupy_arguments_are_checked_and_converted(compiled: cdpc.Compiled) -> None:
    numpy = pytest.importorskip("numpy")
    from cdpc.cupy import marshal_args

    k = compiled.kernels["k"]
    data, inp = FakeDeviceArray("int32"), FakeDeviceArray("float32")
    out = marshal_args(k, (data, inp, 5, 2, 255))
    assert out[0] is data and out[1] is inp
    # scalars take the parameter's exact type (CuPy alone would pass Python ints as int64)
    assert [type(v) for v in out[2:]] == [numpy.int32, numpy.float64, numpy.uint8]
    assert out[2] == 5 and out[3] == 2.0 and out[4] == 255
    with pytest.raises(TypeError, match=r"argument 1 of k\(\) \(`int \* data`\) points to int32, but the array holds float32"):
        marshal_args(k, (inp, inp, 5, 2.0, 1))
    with pytest.raises(TypeError, match="takes 5 arguments"):
        marshal_args(k, (data, inp, 5))
    with pytest.raises(TypeError, match="integer"):
        marshal_args(k, (data, inp, 5.5, 2.0, 1))
    with pytest.raises(TypeError, match="out of range"):
        marshal_args(k, (data, inp, 5, 2.0, 256))
    with pytest.raises(TypeError, match="is a pointer"):
        marshal_args(k, ("data", inp, 5, 2.0, 1))


def test_numba_links_ptx_and_cudadevrt(compiled: cdpc.Compiled, tmp_path, monkeypatch) -> None:
    """What declare_device hands numba: the module's PTX (numba-cuda 0.30.4's nvJitLink refuses
    cdpc's relocatable object and links its PTX, measured on an H100: docs/PYTHON.md) and the
    bytes of the libcudadevrt.a it was told to use. A stand-in `numba.cuda` records the calls,
    since numba-cuda is not installed here."""
    import sys
    import types

    calls = []

    class Linkable:
        def __init__(self, kind: str, data: bytes, name: str) -> None:
            self.kind, self.data, self.name = kind, data, name

    cuda = types.SimpleNamespace(
        PTXSource=lambda data, name: Linkable("ptx", data, name),
        Archive=lambda data, name: Linkable("archive", data, name),
        declare_device=lambda name, sig, link: calls.append((name, sig, link)) or "declared",
    )
    numba = types.ModuleType("numba")
    numba.cuda = cuda  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "numba", numba)
    monkeypatch.setitem(sys.modules, "numba.cuda", cuda)
    home = tmp_path / "cuda"
    (home / "lib64").mkdir(parents=True)
    (home / "lib64" / "libcudadevrt.a").write_bytes(b"!<arch>\nstand-in")

    assert cdpc.numba.declare_device(compiled, "launch_fill", cuda_home=home) == "declared"
    [(name, sig, link)] = calls
    assert (name, sig) == ("launch_fill", "int32(CPointer(int32), int32)")
    assert [item.kind for item in link] == ["ptx", "archive"]
    assert link[0].data.decode() == compiled.ptx and ".visible .func" in compiled.ptx and "launch_fill" in compiled.ptx
    assert link[1].data == b"!<arch>\nstand-in" and link[1].name == "libcudadevrt.a"
    with pytest.raises(KeyError, match="no __device__ function `absent`"):
        cdpc.numba.declare_device(compiled, "absent", cuda_home=home)
