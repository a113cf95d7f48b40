"""cdpc's C API from the wheel (docs/EMBEDDING.md): the extension module exports it, the
package ships its header and a pkg-config file, and `cdpc.get_include()` and
`cdpc.get_library()` say where they are. A C program built only against those (no source
tree) and a ctypes script that never imports `cdpc` compile device-side launches to cubins
and read diagnostics. Skipped, with the reason, without a C compiler; without the NVIDIA tools
they compile to PTX only."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import cdpc

HERE = Path(__file__).parent


def env_with_tools() -> tuple[dict[str, str], str]:
    """The environment of a C program run outside the checkout and whether the NVIDIA tools
    are there: CUDA_HOME names them when the Python package finds them (the library finds the
    NVIDIA wheels beside itself on its own; in `cargo xtask test` they are elsewhere)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "PYTHONPATH", "LD_LIBRARY_PATH")}
    home = cdpc.cuda_home()
    if home is None:
        print("NVIDIA tools not found: the C API's cubin checks compile to PTX instead")
        return env, "0"
    env["CUDA_HOME"] = str(home)
    return env, "1"


def test_the_package_ships_the_c_api() -> None:
    include, library = Path(cdpc.get_include()), Path(cdpc.get_library())
    assert (include / "cdpc.h").is_file(), f"no cdpc.h in {include}"
    assert "cdpc_abi_version" in (include / "cdpc.h").read_text()
    assert library.is_file() and library.name.startswith("_cdpc") and library.suffix == ".so"
    assert (include.parent / "lib" / "pkgconfig" / "cdpc.pc").is_file()
    lib = ctypes.CDLL(str(library))
    lib.cdpc_abi_version.restype = ctypes.c_uint32
    lib.cdpc_version.restype = ctypes.c_char_p
    assert lib.cdpc_abi_version() == 1
    assert lib.cdpc_version().decode() == cdpc.__version__


def test_the_wheel_holds_the_header_and_pkg_config_file() -> None:
    wheel = os.environ.get("CDPC_WHEEL")
    if not wheel:
        pytest.skip("CDPC_WHEEL names no wheel (cargo xtask test sets it to the wheel it built)")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert {"cdpc/include/cdpc.h", "cdpc/lib/pkgconfig/cdpc.pc"} <= names, sorted(n for n in names if "clang" not in n)
        pc = z.read("cdpc/lib/pkgconfig/cdpc.pc").decode()
    assert "prefix=${pcfiledir}/../.." in pc and f"Version: {cdpc.__version__}" in pc


def c_flags() -> tuple[list[str], str]:
    """How the C program is compiled and linked: pkg-config's answer for the package's cdpc.pc,
    or the same from get_include() and get_library() where pkg-config is missing."""
    pkg_config = shutil.which("pkg-config")
    if pkg_config:
        env = dict(os.environ, PKG_CONFIG_PATH=str(Path(cdpc.get_include()).parent / "lib" / "pkgconfig"))
        out = subprocess.run([pkg_config, "--cflags", "--libs", "cdpc"], env=env, capture_output=True, text=True, check=True)
        return out.stdout.split(), "pkg-config"
    library = Path(cdpc.get_library())
    return [f"-I{cdpc.get_include()}", str(library), f"-Wl,-rpath,{library.parent}"], "get_include/get_library"


def test_a_c_program_built_against_the_wheel_compiles_device_side_launches(tmp_path: Path) -> None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc, gcc or $CC)")
    flags, how = c_flags()
    exe = tmp_path / "embed"
    build = subprocess.run([cc, "-std=c99", "-Wall", "-Werror", str(HERE / "c" / "embed.c"), "-o", str(exe), *flags], capture_output=True, text=True, check=False)
    assert build.returncode == 0, f"{cc} {' '.join(flags)} ({how}):\n{build.stderr}"
    if how == "pkg-config" and shutil.which("readelf"):
        # Linked by its SONAME (`-l:_cdpc.abi3.so`), found through the rpath cdpc.pc adds.
        dynamic = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True, check=True).stdout
        assert "Shared library: [_cdpc.abi3.so]" in dynamic and ("RUNPATH" in dynamic or "RPATH" in dynamic), dynamic
    env, have_tools = env_with_tools()
    run = subprocess.run([str(exe), have_tools], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "all checks passed" in run.stdout, run.stdout + run.stderr


def test_ctypes_uses_the_library_without_importing_cdpc(tmp_path: Path) -> None:
    env, have_tools = env_with_tools()
    run = subprocess.run([sys.executable, str(HERE / "c" / "embed_ctypes.py"), have_tools], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "all checks passed" in run.stdout, run.stdout + run.stderr
