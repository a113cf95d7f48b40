"""Type stubs of the extension module (python/src/lib.rs). Use the ``cdpc`` package instead."""

from typing import Any

__version__: str

def compile(
    source: str | bytes,
    *,
    ir: bool,
    file_name: str,
    arch: str,
    opt_level: int,
    launch_abi: str,
    default_stream: str,
    address_size: int,
    aggregate_launches: str,
    launch_threshold: int,
    device_malloc_pool: bool,
    pass_remarks: bool,
    warnings_as_errors: bool,
    deny: list[str],
    allow: list[str],
    ptxas_args: list[str],
    nvlink_args: list[str],
    cuda_home: str | None,
    build_cubin: bool,
    defines: list[tuple[str, str | None]],
    include_dirs: list[str],
    tool_timeout: float | None,
    debug: str,
    separate: bool,
    use_fast_math: bool,
    std: str | None,
    legacy_warp_intrinsics: bool,
) -> dict[str, Any]: ...
def link(
    paths: list[str],
    *,
    arch: str,
    opt_level: int,
    debug: str,
    libraries: list[str],
    library_dirs: list[str],
    cuda_home: str | None,
    defines: list[tuple[str, str | None]],
    include_dirs: list[str],
    tool_timeout: float | None,
    launch_abi: str,
    aggregate_launches: str,
    launch_threshold: int,
    device_malloc_pool: bool,
    use_fast_math: bool,
    std: str | None,
    legacy_warp_intrinsics: bool,
) -> dict[str, Any]: ...
def main(argv: list[str]) -> int: ...
