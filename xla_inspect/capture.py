"""Capture every IR stage of a JAX function: jaxpr, StableHLO, HLO, optimized HLO.

This is the only module in `xla_inspect` that calls JAX's lowering and compile APIs. Everything
downstream (normalize, parse, query, diff, passes) works on the text captured here. JAX is imported
when `capture` runs, not when this module is imported, so `import xla_inspect` stays light.

What is *not* guaranteed:

- The texts are JAX/XLA debugging output, not a stable serialization. Their exact form changes
  between jax/jaxlib versions, platforms (CPU kinds, GPU) and even the number of usable cores
  (`backend_config`). Use `normalize_hlo` and count facts rather than comparing raw text.
- `cost_analysis` is whatever XLA's cost model reports for the platform; keys whose value is
  zero are omitted by XLA, and the key set differs between backends.
- Dump file names start with a module id (`module_0002...`) that depends on how many modules the
  process compiled before; `Capture.dump_module` records the prefix of this capture's files.
- The optimized HLO is what XLA compiled in *this* process with *these* compiler options; the
  executable is not cached on disk by `capture`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xla_inspect.errors import InspectError

if TYPE_CHECKING:
    import jax.stages
    from jax.extend.core import Jaxpr
    from jaxlib.mlir.ir import Module

__all__ = ["Capture", "CaptureError", "capture", "capture_lowered", "dump_options"]

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


# `module_0002.jit_f.cpu_after_optimizations.txt` (the platform part differs on GPU).
_AFTER_OPTIMIZATIONS = re.compile(r"(?P<prefix>module_\d+\..+)\.(?:\w+_)?after_optimizations\.txt")


class CaptureError(InspectError):
    """Lowering or compiling a function failed, or capture was called with bad options."""


@dataclass(frozen=True, eq=False)
class Capture:
    """Every IR stage of one function, captured for one set of argument shapes.

    `jaxpr` (the closed jaxpr of `jax.stages.Traced.jaxpr`) is None when the capture started
    from a `Lowered` (see `capture_lowered`). `stablehlo_module` is an MLIR `ir.Module` bound to
    JAX's MLIR context: walk it, do not keep it beyond the life of the process. `lowered` and
    `compiled` are the JAX stage objects, kept for anything this class does not expose.
    `dump_dir` and `dump_module` are None unless a dump directory was asked for.
    """

    jaxpr: Jaxpr | None
    stablehlo_text: str
    stablehlo_module: Module
    hlo_text: str
    optimized_hlo_text: str
    cost_analysis: Mapping[str, float]
    memory_analysis: Mapping[str, int]
    dump_dir: Path | None
    dump_module: str | None
    lowered: jax.stages.Lowered
    compiled: jax.stages.Compiled

    def dump_files(self) -> list[Path]:
        """Files XLA dumped for this capture, sorted by name (empty without a dump directory)."""
        if self.dump_dir is None or self.dump_module is None:
            return []
        return sorted(self.dump_dir.glob(f"{self.dump_module}.*"))


def dump_options(dump_dir: str | Path, *, passes: bool = False) -> dict[str, Any]:
    """Compiler options that make XLA dump HLO text into `dump_dir` (one file per pass if asked).

    These go through `compile(compiler_options=...)`, never through the `XLA_FLAGS` environment
    variable, so they affect only the one compilation.
    """
    options: dict[str, Any] = {"xla_dump_to": str(dump_dir), "xla_dump_hlo_as_text": True}
    if passes:
        options["xla_dump_hlo_pass_re"] = ".*"
    return options


def capture(
    fn: Callable[..., Any],
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    donate_argnums: int | Sequence[int] = (),
    compiler_options: Mapping[str, Any] | None = None,
    dump_dir: str | Path | None = None,
    dump_passes: bool = False,
) -> Capture:
    """Trace, lower and compile `fn(*args)` and return every stage.

    `args` are arrays or `jax.ShapeDtypeStruct` pytrees (static arguments are passed as plain
    Python values). A function already wrapped by `jax.jit` is used as is; pass `static_argnums`
    and `donate_argnums` to `jax.jit` yourself in that case. With `dump_dir`, XLA writes its HLO
    dumps there (with `dump_passes`, one file per optimization pass).
    """
    import jax.stages  # here, not at module level: reading HLO never needs JAX

    if isinstance(fn, jax.stages.Wrapped):
        if static_argnums != () or donate_argnums != ():
            raise CaptureError(
                "fn is already jax.jit-wrapped: pass static_argnums/donate_argnums to jax.jit"
            )
        jitted = fn
    else:
        try:
            jitted = jax.jit(fn, static_argnums=static_argnums, donate_argnums=donate_argnums)
        except (TypeError, ValueError) as exc:
            raise CaptureError(f"cannot jit {fn!r}: {exc}") from exc
    try:
        traced = jitted.trace(*args)
        lowered = traced.lower()
    except Exception as exc:  # whatever the traced Python code raises; the cause stays chained
        raise CaptureError(f"tracing or lowering failed: {type(exc).__name__}: {exc}") from exc
    return capture_lowered(
        lowered,
        jaxpr=traced.jaxpr,
        compiler_options=compiler_options,
        dump_dir=dump_dir,
        dump_passes=dump_passes,
    )


def capture_lowered(
    lowered: jax.stages.Lowered,
    *,
    jaxpr: Jaxpr | None = None,
    compiler_options: Mapping[str, Any] | None = None,
    dump_dir: str | Path | None = None,
    dump_passes: bool = False,
) -> Capture:
    """Compile an existing `jax.stages.Lowered` and return every stage it can give."""
    options = dict(compiler_options or {})
    if dump_passes and dump_dir is None:
        raise CaptureError("dump_passes=True needs a dump_dir to write the per-pass files to")
    dump_path = None if dump_dir is None else Path(dump_dir)
    before: set[str] = set()
    if dump_path is not None:
        dump_path.mkdir(parents=True, exist_ok=True)
        before = {p.name for p in dump_path.iterdir()}
        options.update(dump_options(dump_path, passes=dump_passes))
    try:
        compiled = lowered.compile(compiler_options=options or None)
    except Exception as exc:  # XLA raises its own runtime error types for bad options
        raise CaptureError(f"compiling failed: {exc}") from exc
    stablehlo_module = lowered.compiler_ir("stablehlo")
    optimized_hlo_text = compiled.as_text()
    if stablehlo_module is None or optimized_hlo_text is None:
        raise CaptureError("this backend gives no StableHLO module or no optimized HLO text")
    return Capture(
        jaxpr=jaxpr,
        stablehlo_text=lowered.as_text(),
        stablehlo_module=stablehlo_module,
        hlo_text=lowered.as_text(dialect="hlo"),
        optimized_hlo_text=optimized_hlo_text,
        cost_analysis=dict(compiled.cost_analysis() or {}),
        memory_analysis=_memory_dict(compiled.memory_analysis()),
        dump_dir=dump_path,
        dump_module=None if dump_path is None else _new_dump_module(dump_path, before),
        lowered=lowered,
        compiled=compiled,
    )


def _memory_dict(stats: Any) -> dict[str, int]:
    if stats is None:
        return {}
    return {f: int(getattr(stats, f)) for f in _MEMORY_FIELDS if hasattr(stats, f)}


def _new_dump_module(dump_dir: Path, before: set[str]) -> str | None:
    """The `module_<id>.<name>` prefix of the after-optimizations file this compile wrote."""
    for path in sorted(dump_dir.iterdir()):
        match = _AFTER_OPTIMIZATIONS.fullmatch(path.name)
        if match and path.name not in before:
            return match["prefix"]
    return None
