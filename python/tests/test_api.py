"""The package's public names are its API: ``__all__`` of ``cdpc`` and of its public submodules
lists every name without a leading underscore, and every name it lists exists. A module-level
import that is not API is imported under a private name (``import os as _os``)."""

from __future__ import annotations

import importlib
import types

import pytest

import cdpc

# The public submodules: `import cdpc.cupy` binds `cupy` in the package, so they may show up
# in dir(cdpc) beside __all__ (neither is imported by `import cdpc` itself).
SUBMODULES = ("cupy", "numba")


def _public(module: types.ModuleType) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_")}


def _modules() -> list[types.ModuleType]:
    return [cdpc] + [importlib.import_module(f"cdpc.{name}") for name in SUBMODULES]


def test_the_package_public_names_are_all_and_its_submodules() -> None:
    for name in SUBMODULES:
        importlib.import_module(f"cdpc.{name}")
    extra = _public(cdpc) - set(cdpc.__all__) - set(SUBMODULES)
    assert not extra, f"public names of cdpc outside __all__: {sorted(extra)}"
    api = {name for name in cdpc.__all__ if not name.startswith("_")}
    assert _public(cdpc) == api | set(SUBMODULES)


@pytest.mark.parametrize("name", SUBMODULES)
def test_submodule_public_names_are_its_all(name: str) -> None:
    module = importlib.import_module(f"cdpc.{name}")
    extra = _public(module) - set(module.__all__)
    assert not extra, f"public names of cdpc.{name} outside __all__: {sorted(extra)}"


def test_every_name_in_all_exists() -> None:
    for module in _modules():
        assert len(module.__all__) == len(set(module.__all__)), f"{module.__name__}.__all__ has duplicates"
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert not missing, f"{module.__name__}.__all__ names what it lacks: {missing}"


def test_star_import_gives_the_api() -> None:
    namespace: dict[str, object] = {}
    exec("from cdpc import *", namespace)  # noqa: S102 (the import under test)
    assert set(namespace) - {"__builtins__"} == set(cdpc.__all__)
