"""The wheel as pip and an older Linux see it: tagged manylinux_2_28, accepted by pip for a
glibc 2.28 machine (RHEL 8, Debian 10, Ubuntu 20.04) and refused for an older one, its extension
needing no glibc symbol newer than 2.28 and no libstdc++, and installable into a clean venv
where it compiles a kernel. `cargo xtask test` sets CDPC_WHEEL to the wheel it built and
CDPC_NVIDIA_WHEELS to the folder holding the NVIDIA wheels (`.cuda/`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import PARENT_CHILD

WHEEL = os.environ.get("CDPC_WHEEL")
pytestmark = pytest.mark.skipif(not WHEEL, reason="CDPC_WHEEL names no wheel (cargo xtask test sets it to the wheel it built)")
TAG = "cp39-abi3-manylinux_2_28_x86_64"


def pip_accepts(platform: str, target: Path) -> subprocess.CompletedProcess[str]:
    """pip's own compatibility check of the wheel for a machine of `platform`."""
    args = ["install", "--dry-run", "--no-deps", "--no-index", "--only-binary=:all:", "--platform", platform]
    args += ["--python-version", "3.9", "--target", str(target), str(WHEEL)]
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True, text=True, check=False)


def test_the_wheel_is_tagged_manylinux_2_28() -> None:
    assert Path(WHEEL).name.endswith(f"-{TAG}.whl")
    with zipfile.ZipFile(WHEEL) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        assert f"Tag: {TAG}" in z.read(meta).decode()


def test_pip_installs_it_on_glibc_2_28_and_not_older(tmp_path: Path) -> None:
    ok = pip_accepts("manylinux_2_28_x86_64", tmp_path / "a")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    old = pip_accepts("manylinux_2_27_x86_64", tmp_path / "b")
    assert old.returncode != 0 and "is not a supported wheel" in old.stdout + old.stderr


def test_the_extension_needs_nothing_newer_than_glibc_2_28(tmp_path: Path) -> None:
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed")
    with zipfile.ZipFile(WHEEL) as z:
        names = [n for n in z.namelist() if n.endswith(".so") or ".so." in n]
        assert [n for n in names if n.startswith("cdpc/_cdpc")] == names, f"bundled libraries: {names}"
        so = Path(z.extract(names[0], tmp_path))
    table = subprocess.run(["objdump", "-T", str(so)], capture_output=True, text=True, check=True).stdout
    glibc = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", table)}
    assert glibc and max(glibc) <= (2, 28), f"needs GLIBC_{'.'.join(map(str, max(glibc)))}"
    assert "GLIBCXX_" not in table and "CXXABI_" not in table, "libstdc++ is linked statically"
    needed = re.findall(r"NEEDED\s+(\S+)", subprocess.run(["objdump", "-p", str(so)], capture_output=True, text=True, check=True).stdout)
    assert set(needed) <= {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2"}, needed


def test_a_clean_venv_installs_it_and_compiles_a_kernel(tmp_path: Path) -> None:
    nvidia = os.environ.get("CDPC_NVIDIA_WHEELS")
    if not nvidia or not (Path(nvidia) / "nvidia" / "cu13" / "bin" / "ptxas").is_file():
        pytest.skip("CDPC_NVIDIA_WHEELS names no folder with the NVIDIA wheels (cargo xtask setup installs them in .cuda/)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_ROOT_USER_ACTION"] = "ignore"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-index", str(WHEEL)], env=env, capture_output=True, text=True, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    # The NVIDIA wheels cdpc depends on, already installed once: in site-packages/nvidia, where
    # pip puts them (a link to them).
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "nvidia").symlink_to(Path(nvidia) / "nvidia", target_is_directory=True)
    code = f"import cdpc; c = cdpc.compile({PARENT_CHILD!r}); print(c.cubin[:4].hex())"
    run = subprocess.run([str(py), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "7f454c46"
    # The C API through ctypes, without `import cdpc` and without CUDA_HOME: the library finds
    # the NVIDIA wheels beside itself, as the Python package does.
    script = Path(__file__).parent / "c" / "embed_ctypes.py"
    run = subprocess.run([str(py), str(script), "1"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "all checks passed" in run.stdout, run.stdout + run.stderr
