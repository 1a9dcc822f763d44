"""What capturing a function and capturing a compiled executable or IR file share: the capture
error, the dump options, the memory-analysis fields kept, and recognising JAX's stage objects
(and the wrappers flax.nnx and equinox keep them in). JAX is imported only when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xla_inspect.errors import InspectError

__all__ = ["CaptureError", "dump_options", "kind", "memory_dict", "stage"]

_MEMORY_FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
    "host_generated_code_size_in_bytes",
    "peak_memory_in_bytes",
    "total_allocation_bytes",
    "indefinite_allocations",
)


class CaptureError(InspectError):
    """Lowering or compiling a function failed, or capture was called with bad options."""


def dump_options(dump_dir: str | Path, *, passes: bool = False) -> dict[str, Any]:
    """Compiler options that make XLA dump HLO text into `dump_dir` (one file per pass if asked).

    These go through `compile(compiler_options=...)`, never through the `XLA_FLAGS` environment
    variable, so they affect only the one compilation.
    """
    options: dict[str, Any] = {"xla_dump_to": str(dump_dir), "xla_dump_hlo_as_text": True}
    if passes:
        options["xla_dump_hlo_pass_re"] = ".*"
    return options


def memory_dict(stats: Any) -> dict[str, int]:
    """The memory-analysis fields `stats` has, as ints ({} for None)."""
    if stats is None:
        return {}
    return {f: int(getattr(stats, f)) for f in _MEMORY_FIELDS if hasattr(stats, f)}


def stage(obj: Any, name: str) -> Any:
    """`obj` if it is JAX's stage `name` (lowered/traced/compiled), or the one a wrapper keeps
    in its attribute `name` (flax.nnx and equinox stage objects); else None."""
    import jax.stages

    wanted = {
        "lowered": jax.stages.Lowered,
        "traced": jax.stages.Traced,
        "compiled": jax.stages.Compiled,
    }[name]
    if isinstance(obj, wanted):
        return obj
    inner = getattr(obj, name, None) if not isinstance(obj, type) else None
    return inner if isinstance(inner, wanted) else None


def kind(obj: Any) -> str:
    """`a module.Class` of `obj`, for messages."""
    cls = type(obj)
    return f"a {cls.__module__}.{cls.__qualname__}"
