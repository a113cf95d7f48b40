"""Type stubs of the extension module (python/src/lib.rs). Use the ``cdpc`` package instead.

``options`` are ``(keyword, key, value)``: a name/value pair of the compiler's options
(``cdpc::driver::option_pairs``, the C API's ``cdpc_options_set`` keys) and the keyword argument
of the ``cdpc`` package it comes from, which a ValueError names."""

from typing import Any

__version__: str

def compile(
    source: str | bytes,
    *,
    ir: bool,
    file_name: str,
    build_cubin: bool,
    options: list[tuple[str, str, str]],
) -> dict[str, Any]: ...
def link(
    paths: list[str],
    *,
    libraries: list[str],
    library_dirs: list[str],
    options: list[tuple[str, str, str]],
) -> dict[str, Any]: ...
def main(argv: list[str]) -> int: ...
