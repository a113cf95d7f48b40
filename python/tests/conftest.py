"""Shared fixtures. The suite needs no GPU; tests that run ptxas and nvlink skip, with the
reason, when no NVIDIA tools are found (neither CUDA_HOME nor the NVIDIA wheels)."""

from __future__ import annotations

import pytest

import cdpc

PARENT_CHILD = """\
extern "C" __global__ void child(int *data, int add) { data[threadIdx.x] += add; }
extern "C" __global__ void parent(int *data) { child<<<1, 32>>>(data, 7); }
"""


@pytest.fixture
def tools() -> None:
    if cdpc.cuda_home() is None:
        pytest.skip("no NVIDIA tools: set CUDA_HOME or pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-nvvm")
