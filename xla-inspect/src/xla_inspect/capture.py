"""Capture every IR stage of a JAX function: jaxpr, StableHLO, HLO, optimized HLO; this module
compiles a `Lowered` and collects its stages.

This module and its parts are the only ones in `xla_inspect` that call JAX's lowering and
compile APIs: `_capture_trace` (from a function or stage object to a `Lowered`), `_capture_ir`
(`capture_ir`: the stages a `Compiled` or an IR file holds) and `_capture_common` (what they
share). Everything downstream (normalize, parse, query, diff, passes) works on the text captured
here. JAX is imported when `capture` runs, not when this module is imported, so
`import xla_inspect` stays light.

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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xla_inspect._capture_common import CaptureError, dump_options, kind, memory_dict, stage
from xla_inspect._capture_ir import IrCapture, capture_ir
from xla_inspect._capture_trace import on_target, trace_and_lower

if TYPE_CHECKING:
    import jax.stages
    from jax.extend.core import Jaxpr
    from jaxlib.mlir.ir import Module

__all__ = [
    "Capture",
    "CaptureError",
    "IrCapture",
    "capture",
    "capture_ir",
    "capture_lowered",
    "dump_options",
]

# `module_0002.jit_f.cpu_after_optimizations.txt` (the platform part differs on GPU).
_AFTER_OPTIMIZATIONS = re.compile(r"(?P<prefix>module_\d+\..+)\.(?:\w+_)?after_optimizations\.txt")


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


def capture(
    fn: Any,
    /,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    donate_argnames: str | Sequence[str] = (),
    compiler_options: Mapping[str, Any] | None = None,
    dump_dir: str | Path | None = None,
    dump_passes: bool = False,
    target: str | None = None,
    **kwargs: Any,
) -> Capture:
    """Trace, lower and compile `fn(*args, **kwargs)` and return every stage.

    `args` and `kwargs` are arrays or `jax.ShapeDtypeStruct` pytrees (dicts, dataclasses, flax
    structs, NamedTuples); static arguments are plain Python values. What `fn` may be, and how
    each is recognised (in this order):

    - a `jax.stages.Lowered` (or a wrapper keeping one in `.lowered`, as flax.nnx's and
      equinox's `Lowered` do): compiled as is; no args; `jaxpr` is None.
    - a `jax.stages.Traced` (or a wrapper keeping one in `.traced`, as flax.nnx's `Traced`):
      lowered and compiled; no args.
    - a `jax.stages.Wrapped`, i.e. anything with `trace` and `lower` (`jax.jit`, `flax.nnx.jit`):
      its own `trace(*args, **kwargs)` and the lowering of that trace; never jitted again.
    - anything else with its own `lower` but no `trace` (`equinox.filter_jit`): its own
      `lower(*args, **kwargs)`; `jaxpr` is None, as nothing public exposes that trace. equinox
      traces only real arrays (anything else is static), so `ShapeDtypeStruct` leaves are
      made zero arrays first: that allocates their size in memory.
    - any other callable: `jax.jit(fn, static_argnums=..., static_argnames=...,
      donate_argnums=..., donate_argnames=...)`. The jit options are refused for the forms
      above (they were fixed when the object was made).

    A keyword argument of `fn` named like one of the options here (`dump_dir`...) cannot be
    passed this way: capture `jax.jit(fn).lower(...)` instead. A `jax.stages.Compiled` and
    `.hlo`/`.mlir` files hold fewer stages: see `capture_ir`.
    With `dump_dir`, XLA writes its HLO dumps there (with `dump_passes`, one file per
    optimization pass), and the persistent compilation cache is off for that compile.

    With `target` (a name from `xla_inspect.targets`, e.g. ``"tpu-v5e:2x2"``), every array
    argument that is not already sharded over that target's devices is placed on its first
    device, so XLA compiles for that chip without the hardware (see `xla_inspect.targets`).
    """
    import jax.stages  # here, not at module level: reading HLO never needs JAX

    if isinstance(fn, (str, PathLike, jax.stages.Compiled)) or stage(fn, "compiled") is not None:
        raise CaptureError(f"{kind(fn)} holds no lowering to capture: use capture_ir")
    jit_options = {
        "static_argnums": static_argnums,
        "static_argnames": static_argnames,
        "donate_argnums": donate_argnums,
        "donate_argnames": donate_argnames,
    }
    given = [name for name, value in jit_options.items() if value not in ((), "", [])]
    if target is not None:
        args, kwargs = on_target(target, fn, args, kwargs)
    jaxpr, lowered = trace_and_lower(fn, args, kwargs, jit_options, given)
    return capture_lowered(
        lowered,
        jaxpr=jaxpr,
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
    """Compile an existing `jax.stages.Lowered` and return every stage it can give.

    With `dump_dir`, the persistent compilation cache is off for this compile: JAX leaves the
    dump options out of its cache key, so a cache hit would compile nothing and dump nothing.
    """
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
        with persistent_cache_off(dump_path is not None):
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
        memory_analysis=memory_dict(compiled.memory_analysis()),
        dump_dir=dump_path,
        dump_module=None if dump_path is None else _new_dump_module(dump_path, before),
        lowered=lowered,
        compiled=compiled,
    )


@contextmanager
def persistent_cache_off(off: bool) -> Iterator[None]:
    """Turn JAX's persistent compilation cache off inside the block (when `off`).

    JAX decides once per process whether the cache is used, so the flag alone would not do:
    `reset_cache` makes it decide again, inside the block and again after it.
    """
    if not off:
        yield
        return
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    enabled = bool(jax.config.jax_enable_compilation_cache)
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", enabled)
        compilation_cache.reset_cache()


def _new_dump_module(dump_dir: Path, before: set[str]) -> str | None:
    """The `module_<id>.<name>` prefix of the after-optimizations file this compile wrote."""
    for path in sorted(dump_dir.iterdir()):
        match = _AFTER_OPTIMIZATIONS.fullmatch(path.name)
        if match and path.name not in before:
            return match["prefix"]
    return None
