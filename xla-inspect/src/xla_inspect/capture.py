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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xla_inspect.errors import InspectError

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

    if isinstance(fn, (str, PathLike, jax.stages.Compiled)) or _stage(fn, "compiled") is not None:
        raise CaptureError(f"{_kind(fn)} holds no lowering to capture: use capture_ir")
    jit_options = {
        "static_argnums": static_argnums,
        "static_argnames": static_argnames,
        "donate_argnums": donate_argnums,
        "donate_argnames": donate_argnames,
    }
    given = [name for name, value in jit_options.items() if value not in ((), "", [])]
    if target is not None:
        args, kwargs = _on_target(target, fn, args, kwargs)
    jaxpr, lowered = _trace_and_lower(fn, args, kwargs, jit_options, given)
    return capture_lowered(
        lowered,
        jaxpr=jaxpr,
        compiler_options=compiler_options,
        dump_dir=dump_dir,
        dump_passes=dump_passes,
    )


def _trace_and_lower(
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    jit_options: dict[str, Any],
    given: list[str],
) -> tuple[Jaxpr | None, jax.stages.Lowered]:
    """The closed jaxpr (None when `fn` does not expose it) and the JAX `Lowered` of `fn`."""
    import jax
    import jax.stages

    lowered = _stage(fn, "lowered")
    traced = _stage(fn, "traced")
    own_trace = isinstance(fn, jax.stages.Wrapped)
    own_lower = callable(getattr(fn, "lower", None))
    if lowered is not None or traced is not None:
        if args or kwargs or given:
            raise CaptureError(f"{_kind(fn)} is already traced: pass no arguments or jit options")
    elif given and (own_trace or own_lower):
        raise CaptureError(
            f"{_kind(fn)} is already jit-wrapped: pass {'/'.join(given)} to its jit instead"
        )
    if lowered is not None:
        return None, lowered
    try:
        if traced is not None:
            return traced.jaxpr, _lowering(fn.lower())
        if own_trace:
            traced_obj = fn.trace(*args, **kwargs)
            traced = _stage(traced_obj, "traced")
            if traced is None:
                raise CaptureError(f"{_kind(fn)}.trace gave {_kind(traced_obj)}, not a Traced")
            return traced.jaxpr, _lowering(traced_obj.lower())
        if own_lower:
            args, kwargs = _as_arrays((args, kwargs))
            return None, _lowering(fn.lower(*args, **kwargs))
        if not callable(fn):
            raise CaptureError(f"cannot capture {_kind(fn)}: not callable and not a JAX stage")
        try:
            jitted = jax.jit(fn, **jit_options)
        except (TypeError, ValueError) as exc:
            raise CaptureError(f"cannot jit {fn!r}: {exc}") from exc
        traced = jitted.trace(*args, **kwargs)
        return traced.jaxpr, traced.lower()
    except CaptureError:
        raise
    except Exception as exc:  # whatever the traced Python code raises; the cause stays chained
        raise CaptureError(f"tracing or lowering failed: {type(exc).__name__}: {exc}") from exc


def _on_target(
    name: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`args` and `kwargs` with their arrays placed on the target called `name`."""
    import jax.stages

    from xla_inspect import targets

    if _stage(fn, "lowered") is not None or _stage(fn, "traced") is not None:
        raise CaptureError(
            f"{_kind(fn)} was lowered for its own devices already: lower it with arguments "
            "placed by xla_inspect.targets.get(NAME).place(...) instead of passing target="
        )
    if callable(getattr(fn, "lower", None)) and not isinstance(fn, jax.stages.Wrapped):
        raise CaptureError(
            f"{_kind(fn)} traces only concrete arrays, which cannot live on a target without "
            "its hardware: capture plain jax.jit(f) with target="
        )
    try:
        placed = targets.get(name).place_tree((args, kwargs))
    except targets.TargetError as exc:
        raise CaptureError(str(exc)) from exc
    return placed[0], placed[1]


def _as_arrays(tree: Any) -> Any:
    """`tree` with every `jax.ShapeDtypeStruct` leaf made a zero array of its shape and dtype."""
    import jax
    import jax.numpy as jnp

    def concrete(leaf: Any) -> Any:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            return jnp.zeros(leaf.shape, leaf.dtype)
        return leaf

    return jax.tree_util.tree_map(concrete, tree)


def _stage(obj: Any, name: str) -> Any:
    """`obj` if it is JAX's stage `name` (lowered/traced/compiled), or the one a wrapper keeps
    in its attribute `name` (flax.nnx and equinox stage objects); else None."""
    import jax.stages

    kind = {
        "lowered": jax.stages.Lowered,
        "traced": jax.stages.Traced,
        "compiled": jax.stages.Compiled,
    }[name]
    if isinstance(obj, kind):
        return obj
    inner = getattr(obj, name, None) if not isinstance(obj, type) else None
    return inner if isinstance(inner, kind) else None


def _lowering(obj: Any) -> jax.stages.Lowered:
    lowered = _stage(obj, "lowered")
    if lowered is None:
        raise CaptureError(f"lowering gave {_kind(obj)}, not a jax.stages.Lowered")
    return lowered


def _kind(obj: Any) -> str:
    cls = type(obj)
    return f"a {cls.__module__}.{cls.__qualname__}"


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
        with _persistent_cache_off(dump_path is not None):
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


@contextmanager
def _persistent_cache_off(off: bool) -> Iterator[None]:
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


@dataclass(frozen=True, eq=False)
class IrCapture:
    """The stages a compiled executable or an IR file holds (None: that stage is not there).

    - from a `jax.stages.Compiled` (or equinox's `Compiled`, which keeps one in `.compiled`):
      the optimized HLO, cost and memory analysis. The jaxpr, StableHLO and HLO before
      optimization are gone once compiled; nothing public gives them back.
    - from a `.hlo` (or `.txt`) file: `hlo_text`, the text as given. It is not compiled
      (jaxlib has no public entry that compiles HLO text), so whether it was optimized is
      whatever the file was.
    - from a `.mlir` file of StableHLO: compiled by the default backend through
      `jax.extend.backend` and jaxlib's `Client.compile_and_load`, one replica and partition,
      with every argument on one device. It gives `stablehlo_text` (as given), `hlo_text`
      (XLA's `before_optimizations` dump), the optimized HLO, cost and memory analysis.
      No jaxpr: the file holds no Python function.

    `source` says what was captured (`Compiled` or the file path).
    """

    source: str
    stablehlo_text: str | None
    hlo_text: str | None
    optimized_hlo_text: str | None
    cost_analysis: Mapping[str, float]
    memory_analysis: Mapping[str, int]


def capture_ir(source: Any, *, compiler_options: Mapping[str, Any] | None = None) -> IrCapture:
    """The stages held by a `jax.stages.Compiled` or a `.hlo`/`.txt`/`.mlir` file (see
    `IrCapture`); `compiler_options` go to the compile of a `.mlir` file."""
    compiled = _stage(source, "compiled")
    if compiled is not None:
        return IrCapture(
            source="Compiled",
            stablehlo_text=None,
            hlo_text=None,
            optimized_hlo_text=compiled.as_text(),
            cost_analysis=dict(compiled.cost_analysis() or {}),
            memory_analysis=_memory_dict(compiled.memory_analysis()),
        )
    if not isinstance(source, (str, PathLike)):
        raise CaptureError(f"capture_ir takes a Compiled or a file path, not {_kind(source)}")
    path = Path(source)
    if path.suffix not in (".hlo", ".txt", ".mlir"):
        raise CaptureError(f"{path}: expected a .hlo, .txt (HLO text) or .mlir (StableHLO) file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaptureError(f"{path}: cannot read ({exc})") from exc
    if path.suffix != ".mlir":
        from xla_inspect.parse import parse_hlo

        parse_hlo(text)  # refuse a file that is not HLO text (raises HloParseError)
        return IrCapture(str(path), None, text, None, {}, {})
    return _compile_stablehlo(str(path), text, dict(compiler_options or {}))


def _compile_stablehlo(source: str, text: str, options: dict[str, Any]) -> IrCapture:
    import tempfile

    import jax.extend.backend
    from jaxlib.xla_client import DeviceList

    backend = jax.extend.backend.get_backend()
    compile_options = jax.extend.backend.get_compile_options(num_replicas=1, num_partitions=1)
    with tempfile.TemporaryDirectory(prefix="xla_inspect_mlir_") as dump:
        options.update(dump_options(dump))
        compile_options.env_option_overrides = list(options.items())
        try:
            executable = backend.compile_and_load(
                text, DeviceList(tuple(backend.local_devices()[:1])), compile_options
            )
        except Exception as exc:  # jaxlib raises its own error types for bad MLIR
            raise CaptureError(f"{source}: compiling the StableHLO failed: {exc}") from exc
        before = sorted(Path(dump).glob("*.before_optimizations.txt"))
        hlo_text = before[0].read_text() if before else None
    modules = executable.hlo_modules()
    return IrCapture(
        source=source,
        stablehlo_text=text,
        hlo_text=hlo_text,
        optimized_hlo_text=modules[0].to_string() if modules else None,
        cost_analysis=dict(executable.cost_analysis() or {}),
        memory_analysis=_memory_dict(executable.get_compiled_memory_stats()),
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
