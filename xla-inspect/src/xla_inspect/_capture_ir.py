"""The stages a compiled executable or an IR file holds: `capture_ir` of a `jax.stages.Compiled`,
a `.hlo`/`.txt` file of HLO text, or a `.mlir` file of StableHLO (compiled here). JAX is
imported only when a `.mlir` file is compiled or a stage object is recognised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from xla_inspect._capture_common import CaptureError, dump_options, kind, memory_dict, stage

__all__ = ["IrCapture", "capture_ir"]


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
    compiled = stage(source, "compiled")
    if compiled is not None:
        return IrCapture(
            source="Compiled",
            stablehlo_text=None,
            hlo_text=None,
            optimized_hlo_text=compiled.as_text(),
            cost_analysis=dict(compiled.cost_analysis() or {}),
            memory_analysis=memory_dict(compiled.memory_analysis()),
        )
    if not isinstance(source, (str, PathLike)):
        raise CaptureError(f"capture_ir takes a Compiled or a file path, not {kind(source)}")
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
        memory_analysis=memory_dict(executable.get_compiled_memory_stats()),
    )
