"""The installed package on its own: outside the checkout, with no CUDA_HOME, it finds ptxas,
nvlink and libcudadevrt in the NVIDIA wheels (site-packages/nvidia/cu13), and the `cdpc`
console script works. `cargo xtask test` runs this against the wheel installed in a venv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import cdpc
from conftest import PARENT_CHILD


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "PYTHONPATH")}
    return env


def python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=clean_env(), capture_output=True, text=True, check=False)


def console_script() -> Path:
    return Path(sysconfig.get_path("scripts")) / "cdpc"


@pytest.mark.skipif(os.environ.get("CDPC_EXPECT_INSTALLED") != "1", reason="not run against an installed wheel (cargo xtask test sets CDPC_EXPECT_INSTALLED=1)")
def test_imported_from_site_packages() -> None:
    assert Path(cdpc.__file__).parent.parent == Path(sysconfig.get_path("purelib"))
    assert console_script().is_file()


def test_compiles_a_cubin_with_the_wheels_outside_the_checkout(tmp_path: Path) -> None:
    if cdpc.wheel_cuda_home() is None:
        pytest.skip("the NVIDIA wheels (nvidia-cuda-nvcc, nvidia-cuda-runtime) are not importable here")
    code = f"""
import json, cdpc
c = cdpc.compile({PARENT_CHILD!r})
print(json.dumps({{"home": str(cdpc.cuda_home()), "wheel": str(cdpc.wheel_cuda_home()),
                  "magic": c.cubin[:4].hex(), "ptxas": c.tool_runs[0].command.split()[0]}}))
"""
    out = python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["home"] == result["wheel"] and result["home"].endswith(os.path.join("nvidia", "cu13"))
    assert result["magic"] == "7f454c46"
    assert result["ptxas"] == os.path.join(result["wheel"], "bin", "ptxas")


def test_cuda_home_wins_over_the_wheels(tmp_path: Path) -> None:
    out = python("import cdpc; print(cdpc.cuda_home())", tmp_path)
    env_home = tmp_path / "toolkit"
    code = f"import os; os.environ['CUDA_HOME'] = {str(env_home)!r}; import cdpc; print(cdpc.cuda_home())"
    assert python(code, tmp_path).stdout.strip() == str(env_home)
    assert out.returncode == 0


def test_console_script(tools: None, tmp_path: Path) -> None:
    script = console_script()
    if not script.is_file():
        pytest.skip(f"no console script at {script} (the package is not installed in this environment)")
    (tmp_path / "app.cdp").write_text(PARENT_CHILD)
    (tmp_path / "bad.cdp").write_text("__global__ void k() { undefined(); }\n")
    env = clean_env()
    ok = subprocess.run([str(script), "app.cdp", "-o", "app.cubin"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "app.cubin").read_bytes()[:4] == b"\x7fELF"
    ptx = subprocess.run([str(script), "app.cdp", "--emit", "ptx", "-o", "-"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert ptx.returncode == 0 and ".entry parent" in ptx.stdout
    bad = subprocess.run([str(script), "bad.cdp", "--error-format", "json"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    assert json.loads(bad.stderr.splitlines()[0])["code"] == "E0100"
    assert not (tmp_path / "bad.cubin").exists()
    version = subprocess.run([str(script), "--version"], env=env, capture_output=True, text=True)
    # cdpc's own line first, then what CMake reads of nvcc's (docs/CMAKE.md).
    assert version.returncode == 0 and version.stdout.splitlines()[0] == f"cdpc {cdpc.__version__}"
    assert "nvcc: NVIDIA (R) Cuda compiler driver" in version.stdout
    # A panic of cdpc's is E1025 with a reproducer and exit status 70, as from the binary.
    crashes = tmp_path / "crashes"
    crashes.mkdir()
    crash_env = {**env, "CDPC_DEBUG_CRASH": "1", "CDPC_CRASH_DIR": str(crashes)}
    crash = subprocess.run([str(script), "app.cdp", "-o", "crash.cubin"], cwd=tmp_path, env=crash_env, capture_output=True, text=True)
    assert crash.returncode == 70, crash.stderr
    assert crash.stderr.startswith("error[E1025]: internal compiler error: CDPC_DEBUG_CRASH=1 asked for a crash"), crash.stderr
    assert "Traceback" not in crash.stderr and "panicked" not in crash.stderr
    assert [p.name.startswith("cdpc-crash-app-") for p in crashes.iterdir()] == [True]
    assert not (tmp_path / "crash.cubin").exists()


def test_main_returns_the_exit_status(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from cdpc.__main__ import main

    source = tmp_path / "bad.cdp"
    source.write_text("__global__ void k() { undefined(); }\n")
    assert main([str(source), "--emit", "ptx", "--error-format", "json"]) == 1
    assert '"code":"E0100"' in capfd.readouterr().err


CUDA_CXX = """\
#include <cuda_fp16.h>
template <typename T> __global__ void child(T *data, T add) { data[threadIdx.x] += add; }
__global__ void parent(float *data) { child<<<1, 32>>>(data, __half2float(__float2half(7.0f))); }
"""


def test_compiles_cuda_cxx_without_a_clang_program(tmp_path: Path) -> None:
    """CUDA C++ goes through the Clang linked into the extension, with the resource headers the
    wheel bundles: no clang on PATH, no CDPC_CLANG."""
    if cdpc.wheel_cuda_home() is None and cdpc.cuda_home() is None:
        pytest.skip("no NVIDIA tools (nvidia-cuda-nvcc, nvidia-cuda-runtime) here")
    if os.environ.get("CDPC_EXPECT_INSTALLED") == "1":
        bundled = Path(cdpc.__file__).parent / "clang" / "include" / "__clang_cuda_runtime_wrapper.h"
        assert bundled.is_file(), "the wheel bundles Clang's resource headers"
    env = clean_env()
    env.pop("CDPC_CLANG", None)
    # Every PATH folder that holds a clang program is left out.
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep) if d and not any(p.name.startswith("clang") for p in Path(d).glob("clang*")))
    code = f"""
import json, cdpc
c = cdpc.compile({CUDA_CXX!r}, filename="launch.cu")
print(json.dumps({{"tools": [r.tool for r in c.tool_runs], "ptx": c.ptx, "magic": c.cubin[:4].hex()}}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["tools"][0] == "clang" and "ptxas" in result["tools"]
    assert result["magic"] == "7f454c46"
    # The launch Clang lowered, lowered again by cdpc to nvcc 13's V2 entry points.
    assert "__cudaCDP2LaunchDeviceV2" in result["ptx"]
    assert ".entry _Z6parentPf" in result["ptx"] and ".entry _Z5childIfEvPT_S0_" in result["ptx"]
