"""The peak heap of a profiled run and the buffers live at it, by HLO instruction, read with
XProf's memory viewer (the `profile` dependency group: `uv sync --group profile`).

    view = capture_memory(step, params, batch)             # run once under the profiler
    view = memory_view("run/plugins/profile/<when>/vm.xplane.pb")   # a jax.profiler.trace(dir)
    view.peak_bytes, view.top(5)                           # PeakBuffer rows, largest first

The trace of a JAX program holds the optimized module of every loaded executable with its
buffer assignment; XProf's converter (`xprof.convert.raw_to_tool_data`, no server) turns that
into the memory viewer: the heap over the program's steps, its peak, and each buffer live at
the peak with its instruction, opcode, shape, `op_name` and source line. On CPU the peak heap
is what `compiled.memory_analysis()` reports as arguments + temporaries + outputs (the tests
measure the agreement). Each buffer is joined to the optimized module: its instruction must be
there (else a `ProfileError`), and a fusion's kind comes from it. XProf lumps buffers under
16 KiB into one row; `small_bytes` is their sum and they have no instruction.

Everything else of `xla_inspect.profile` reads JAX's own trace without XProf. XProf is imported
only when a function here runs; without it each raises `XprofMissingError` naming the group.
It converts in a private temporary directory (a copy of the trace), because it writes
`<module>.hlo_proto.pb` files beside the trace, and its C++ log lines (`E0000 ...`) go to a
captured stderr that a failure message quotes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xla_inspect.profile import ProfileError, normalize_module_name
from xla_inspect.profile_query import instruction_info

__all__ = [
    "INSTALL",
    "MemoryView",
    "PeakBuffer",
    "XprofMissingError",
    "capture_memory",
    "memory_view",
    "xprof_missing",
]

INSTALL = "uv sync --group profile"
_MIB = 1 << 20
_PROTO = ".hlo_proto.pb"


class XprofMissingError(ProfileError):
    """XProf is not installed; the message names the group that brings it."""


@dataclass(frozen=True, slots=True)
class PeakBuffer:
    """One buffer live at the peak heap. `instruction` is None for XProf's row of small buffers
    (each under 16 KiB); then `opcode`, `shape` and the rest are ''."""

    instruction: str | None
    opcode: str
    kind: str | None  # a fusion's kind (kLoop, kCustom...) from the optimized module, else None
    shape: str
    size_bytes: int
    group: str  # XProf's category: Parameter, Output, Temporary...
    op_name: str  # the instruction's metadata op_name, '' when absent
    source: str  # `file.py:LINE`, '' when absent


@dataclass(frozen=True, slots=True)
class MemoryView:
    """The memory viewer of one module: its peak heap and the buffers live at the peak."""

    module: str  # as XProf names it, with its program id: `jit_step(3)`
    peak_bytes: int  # the most bytes live at once
    allocated_bytes: int  # all buffer allocations: parameters, temporaries, outputs, constants
    buffers: tuple[PeakBuffer, ...]  # live at the peak; largest first, then by instruction name
    small_bytes: int  # the buffers XProf lumps together as small, summed

    def top(self, count: int) -> tuple[PeakBuffer, ...]:
        """The `count` largest buffers that have an instruction."""
        return tuple(b for b in self.buffers if b.instruction is not None)[:count]

    def to_dict(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "peak_bytes": self.peak_bytes,
            "allocated_bytes": self.allocated_bytes,
            "small_bytes": self.small_bytes,
            "buffers": [
                {slot: getattr(b, slot) for slot in PeakBuffer.__slots__} for b in self.buffers
            ],
        }


def xprof_missing() -> str | None:
    """Why the memory view cannot run here (one line naming the group), or None."""
    try:
        import xprof.convert.raw_to_tool_data  # noqa: F401  # pyright: ignore[reportMissingImports]
    except ImportError as exc:
        return f"the memory view needs xprof ({exc.name or 'xprof'} is missing): {INSTALL}"
    return None


def _converter() -> Any:
    missing = xprof_missing()
    if missing is not None:
        raise XprofMissingError(missing)
    from xprof.convert import raw_to_tool_data  # pyright: ignore[reportMissingImports]

    return raw_to_tool_data


@contextmanager
def _quiet_stderr(log: list[str]) -> Iterator[None]:
    """Send file descriptor 2 (where XProf's C++ logs) to a file; append what it got to `log`."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            log.append(sink.read().decode(errors="replace"))


def _said(log: list[str]) -> str:
    errors = [line for text in log for line in text.splitlines() if line.startswith("E0000")]
    return f"; xprof said: {errors[-1].split('] ', 1)[-1]}" if errors else ""


def _executed_modules(xplane: Path) -> list[str]:
    """The module of every instruction event of the trace's host plane, named as XProf names
    it: `hlo_module` (without the program-id suffix it sometimes has) and `(program_id)`."""
    import jax

    try:
        data = jax.profiler.ProfileData.from_file(str(xplane))
    except Exception as exc:  # the reader raises whatever the bytes provoke
        raise ProfileError(f"{xplane}: not a trace jax.profiler.trace wrote ({exc})") from exc
    found: dict[str, None] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "event_stats has no __module__"
        for plane in data.planes:
            if plane.name != "/host:CPU":
                continue
            for line in plane.lines:
                for event in line.events:
                    stats = dict(event.stats)
                    name, program = stats.get("hlo_module"), stats.get("program_id")
                    if isinstance(name, str) and isinstance(program, int):
                        found.setdefault(f"{normalize_module_name(name)}({program})")
    return list(found)


def _choose(stored: list[str], executed: list[str], module: str | None, where: Path) -> str:
    """The one module to view: executed in the trace, stored in it (XProf found its HLO), and
    named `module` (with or without its program id) when given."""
    if not executed:
        raise ProfileError(f"{where}: no XLA program ran inside this trace")
    ran = [m for m in executed if m in stored]
    if module is not None:
        ran = [m for m in ran if module in (m, normalize_module_name(m))]
    if len(ran) == 1:
        return ran[0]
    if not ran:
        wanted = f"no module {module!r}" if module else "no module"
        raise ProfileError(f"{where}: {wanted} ran in the trace (these ran: {', '.join(executed)})")
    raise ProfileError(
        f"{where}: several modules ran ({', '.join(ran)}); pass module= one of these names"
    )


def _tool(convert: Any, path: Path, tool: str, params: Mapping[str, Any]) -> Any:
    log: list[str] = []
    try:
        with _quiet_stderr(log):
            data, _content_type = convert.xspace_to_tool_data([str(path)], tool, dict(params))
    except Exception as exc:  # xprof raises ValueError and others on traces it cannot use
        raise ProfileError(f"xprof's {tool} failed: {exc}{_said(log)}") from exc
    if data is None:
        raise ProfileError(f"xprof produced no {tool} from the trace{_said(log)}")
    return data


def _size(mib: Any) -> int:
    return round(float(mib) * _MIB)


def _source(info: Mapping[str, Any] | None) -> str:
    if not info or "fileName" not in info or "lineNumber" not in info:
        return ""
    return f"{str(info['fileName']).rsplit('/', 1)[-1]}:{info['lineNumber']}"


def _view(data: Mapping[str, Any], module: str, hlo_text: str, where: str) -> MemoryView:
    """A MemoryView from the memory viewer's JSON, its buffers joined to `hlo_text`."""
    known = instruction_info(hlo_text)
    buffers: list[PeakBuffer] = []
    small = 0
    for row in data.get("maxHeap", []):
        size = _size(row.get("logicalBufferSizeMib", 0))
        name = row.get("instructionName")
        if not name:
            small += size
            buffers.append(PeakBuffer(None, "", None, "", size, "", "", ""))
            continue
        info = known.get(name)
        if info is None:
            raise ProfileError(
                f"{where}: buffer of instruction {name!r} is not in the given optimized module:"
                " is it the module that ran?"
            )
        buffers.append(
            PeakBuffer(
                name,
                info.opcode,
                info.kind,
                str(row.get("shapeString", "")),
                size,
                str(row.get("groupName", "")),
                info.op_name or str(row.get("tfOpName", "")),
                info.source or _source(row.get("sourceInfo")),
            )
        )
    buffers.sort(key=lambda b: (-b.size_bytes, b.instruction or ""))
    peak = _size(data.get("peakHeapMib", 0))
    allocated = _size(data.get("totalBufferAllocationMib", 0))
    return MemoryView(module, peak, allocated, tuple(buffers), small)


def memory_view(
    xplane: str | Path, *, module: str | None = None, hlo_text: str | None = None
) -> MemoryView:
    """The memory view of one module of the trace at `xplane` (a `.xplane.pb` that
    `jax.profiler.trace(dir)` wrote under `dir/plugins/profile/<when>/`).

    `module` names it (`jit_step`, or `jit_step(3)` with its program id) when several ran.
    `hlo_text` is the optimized module to join the buffers to (`compiled.as_text()`); without
    it, the module XProf keeps in the trace (names and opcodes, no metadata).
    """
    path = Path(xplane)
    if not path.is_file():
        raise ProfileError(f"{path}: no such trace file; pass the .xplane.pb jax.profiler wrote")
    convert = _converter()
    executed = _executed_modules(path)
    log: list[str] = []
    with tempfile.TemporaryDirectory(prefix="xla-inspect-memory-") as tmp:
        copy = Path(tmp) / "vm.xplane.pb"
        shutil.copyfile(path, copy)
        try:
            with _quiet_stderr(log):
                convert.xspace_to_tool_names([str(copy)])  # writes <module>.hlo_proto.pb
        except Exception as exc:  # xprof raises ValueError and others on traces it cannot use
            raise ProfileError(f"xprof cannot read {path}: {exc}{_said(log)}") from exc
        stored = sorted(p.name[: -len(_PROTO)] for p in Path(tmp).glob(f"?*{_PROTO}"))
        chosen = _choose(stored, executed, module, path)
        raw = _tool(convert, copy, "memory_viewer", {"module_name": chosen})
        if hlo_text is None:
            options = {"graph_viewer_options": {"type": "long_txt", "module_name": chosen}}
            text = _tool(convert, copy, "graph_viewer", options)
            hlo_text = text.decode() if isinstance(text, bytes) else str(text)
    try:
        data = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise ProfileError(f"xprof's memory viewer is not JSON ({exc})") from exc
    if not isinstance(data, dict) or "peakHeapMib" not in data:
        raise ProfileError(f"xprof's memory viewer has no peak heap for {chosen}")
    return _view(data, chosen, hlo_text, str(path))


def capture_memory(
    fn: Any, /, *args: Any, compiler_options: Mapping[str, Any] | None = None
) -> MemoryView:
    """Compile `jax.jit(fn)` for `args` (arrays), run it once, then once more under
    `jax.profiler.trace`, and return the memory view of the executable that ran, joined to its
    `compiled.as_text()`. `fn` may already be jitted."""
    _converter()  # before any compile: without XProf, say so at once
    import jax

    jitted: Any = fn if hasattr(fn, "lower") else jax.jit(fn)
    try:
        compiled = jitted.lower(*args).compile(compiler_options=dict(compiler_options or {}))
    except Exception as exc:  # JAX raises many kinds; one readable message
        raise ProfileError(f"cannot compile the function to profile: {exc}") from exc
    jax.block_until_ready(compiled(*args))
    text = compiled.as_text()
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory(prefix="xla-inspect-trace-") as tmp:
        with jax.profiler.trace(tmp, profiler_options=options):
            jax.block_until_ready(compiled(*args))
        found = sorted(Path(tmp).rglob("*.xplane.pb"))
        if not found:
            raise ProfileError("jax.profiler.trace wrote no .xplane.pb: is the profiler usable?")
        name = text.split(None, 2)[1].rstrip(",") if text.startswith("HloModule") else None
        return memory_view(found[-1], module=name, hlo_text=text)
