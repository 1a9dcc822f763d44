"""Export a JAX function as StableHLO and compile it with IREE (the `iree` dependency group).

    text = flow_listing(f, *args)                # the flow listing (read it with iree.read_flow)
    vmfb = compile_vmfb(export(f, *args).mlir_module())

IREE is imported when a function here is called, never at import: without the group each call
raises one `IreeMissingError` naming the install command. The CPU target defaults to `generic`
(any x86-64; on the machine these were written on, `host` forms the same dispatches), so a flow
listing does not depend on which CPU compiled it. Locations keep JAX's operation names but no
file or line (`jax_traceback_in_locations_limit=0` while exporting), so a listing does not change
when the source file moves.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from xla_inspect.errors import InspectError

if TYPE_CHECKING:
    import jax

__all__ = [
    "INSTALL",
    "IreeCompileError",
    "IreeMissingError",
    "compile_vmfb",
    "export",
    "flow_listing",
    "flow_listing_of",
    "versions",
]

INSTALL = "uv sync --group iree"
CPU = "generic"


class IreeMissingError(InspectError):
    """IREE's compiler or runtime is not installed."""


class IreeCompileError(InspectError):
    """IREE refused the module; the message holds the compiler's first error lines."""


def _compiler() -> Any:
    try:
        import iree.compiler  # pyright: ignore[reportMissingImports]  (the iree group)
    except ImportError as exc:
        raise IreeMissingError(f"IREE's compiler is not installed: {INSTALL}") from exc
    return iree.compiler


@contextmanager
def _name_only_locations() -> Iterator[None]:
    import jax

    before = jax.config.jax_traceback_in_locations_limit
    jax.config.update("jax_traceback_in_locations_limit", 0)
    try:
        yield
    finally:
        jax.config.update("jax_traceback_in_locations_limit", before)


def export(f: Callable[..., Any], *args: Any, **options: Any) -> jax.export.Exported:
    """`jax.export.export(jax.jit(f), **options)(*args)`, its locations naming operations
    only (no files or lines); `args` may be arrays or ShapeDtypeStructs."""
    import jax

    with _name_only_locations():
        return jax.export.export(jax.jit(f), **options)(*args)


def compile_vmfb(module: str | bytes, *, cpu: str = CPU, extra_args: Sequence[str] = ()) -> bytes:
    """IREE's compile of a StableHLO module (text, or the portable bytecode of
    `Exported.mlir_module_serialized`) for its `llvm-cpu` backend: the `.vmfb` bytes, or the
    text of an earlier stage when `extra_args` holds `--compile-to=<stage>`."""
    if not isinstance(module, str | bytes):
        raise IreeCompileError(
            f"expected StableHLO text or bytecode, got {type(module).__name__}: pass "
            "exported.mlir_module() or exported.mlir_module_serialized"
        )
    compiler = _compiler()
    args = [f"--iree-llvmcpu-target-cpu={cpu}", *extra_args]
    try:
        return compiler.compile_str(
            module, target_backends=["llvm-cpu"], input_type="stablehlo", extra_args=args
        )
    except compiler.CompilerToolError as exc:
        raise IreeCompileError(f"IREE refused the module: {_first_errors(str(exc))}") from exc


def flow_listing(f: Callable[..., Any], *args: Any, cpu: str = CPU) -> str:
    """The flow listing (`--compile-to=flow`) of `f` exported for `args`."""
    return flow_listing_of(export(f, *args).mlir_module(), cpu=cpu)


def flow_listing_of(module: str | bytes, *, cpu: str = CPU) -> str:
    """The flow listing (`--compile-to=flow`) of a StableHLO module (text or bytecode)."""
    listing = compile_vmfb(module, cpu=cpu, extra_args=["--compile-to=flow"])
    return listing.decode() if isinstance(listing, bytes) else listing


def versions() -> str:
    """The package versions a flow listing depends on (a recording's key)."""
    packages = ("iree-base-compiler", "iree-base-runtime", "jax", "jaxlib")
    found = []
    for package in packages:
        try:
            found.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{package} (not installed)")
    return ", ".join(found)


def _first_errors(message: str, limit: int = 3) -> str:
    """The compiler's `error:` lines (at most `limit`, each cut to 300 characters)."""
    lines = [line.strip() for line in message.splitlines() if "error:" in line]
    shown = [line if len(line) <= 300 else line[:297] + "..." for line in lines[:limit]]
    return " | ".join(shown) if shown else message.strip()[:300]
