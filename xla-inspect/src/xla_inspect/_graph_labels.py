"""What the fusion graph writes: node labels, collapsed-cluster summaries, name scopes, source
lines and `dot` quoting.

A node's label holds its opcode (a fusion: its `query.Fusion` label and the opcodes it
absorbed), its shape, output bytes, flops and the source line of its op metadata
(`source_file`/`source_line`, or the module's stack-frame tables through `stack_frame_id`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

from xla_inspect.model import HloInstruction, Shape
from xla_inspect.query import Fusion

__all__ = [
    "PLAIN",
    "frame_tables",
    "label",
    "listed",
    "op_name",
    "quote",
    "scope",
    "source",
    "summary",
]

PLAIN = frozenset({"parameter", "constant"})  # drawn as ellipses, once per cluster using them
_QUIET = frozenset({"get-tuple-element", "tuple", "bitcast"})
_MAX_SHAPE = 40
_NAMED = 12  # a note names this many collapsed clusters, then says how many more
# bits per element; sub-byte types round up per element count in `_bytes`
_BITS = {
    "pred": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "f16": 16,
    "bf16": 16,
    "s32": 32,
    "u32": 32,
    "f32": 32,
    "s64": 64,
    "u64": 64,
    "f64": 64,
    "c64": 64,
    "c128": 128,
}
_WRAPPER = re.compile(r"^([\w-]+)\((.*)\)$")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_SOURCE_FILE = re.compile(r'source_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"source_line=(\d+)")
_FRAME_ID = re.compile(r"stack_frame_id=(\d+)")
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_FIELD = re.compile(r"(\w+)=(\d+)")


def quote(text: str) -> str:
    """`text` as a `dot` string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _bytes(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_bytes(element) for element in shape.elements)
    bits = _BITS.get(shape.dtype or "", 8 if (shape.dtype or "").startswith("f8") else 0)
    count = math.prod(d or 0 for d in shape.dims)
    return (count * bits + 7) // 8


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _flops(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}flop"
    return f"{n:.0f} flop"


def scope(op_name: str) -> str:
    """The first JAX name scope of an `op_name`, "" when there is none.

    `jit(f)/transpose(jvp(layer_3))/mul` -> `layer_3 (backward)`; `jit(f)/jvp(layer_0)/dot`
    -> `layer_0`; `jit(f)/transpose(jvp())/bqhd,bkhd->bhqk/dot_general` -> `bqhd,bkhd->bhqk
    (backward)`; `jit(f)/mul` and `jit(f)/jvp()/mul` -> "".
    """
    parts = op_name.split("/")
    if parts and parts[0].startswith(("jit(", "pjit(")):
        parts = parts[1:]
    backward = False
    for part in parts[:-1]:  # the last part is the primitive
        while match := _WRAPPER.match(part):
            backward = backward or match.group(1) == "transpose"
            part = match.group(2)
        if part:
            return f"{part} (backward)" if backward else part
    return ""


def frame_tables(text: str) -> dict[int, str]:
    """stack_frame_id -> `file.py:LINE` from the module's FileNames/FileLocations/StackFrames."""
    tables: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in text[: text.find("\n%") if "\n%" in text else len(text)].splitlines():
        stripped = line.strip()
        if stripped in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(stripped, {})
        elif current is not None and (row := _TABLE_ROW.match(line)):
            current[int(row.group(1))] = row.group(2)
        elif stripped:
            current = None
    files = {k: v.strip('"').rsplit("/", 1)[-1] for k, v in tables.get("FileNames", {}).items()}
    locations: dict[int, str] = {}
    for key, row in tables.get("FileLocations", {}).items():
        fields = {name: int(value) for name, value in _FIELD.findall(row)}
        if "file_name_id" in fields and "line" in fields:
            locations[key] = f"{files.get(fields['file_name_id'], '?')}:{fields['line']}"
    frames: dict[int, str] = {}
    for key, row in tables.get("StackFrames", {}).items():
        fields = {name: int(value) for name, value in _FIELD.findall(row)}
        location = locations.get(fields.get("file_location_id", 0))
        if location:
            frames[key] = location
    return frames


def source(instruction: HloInstruction, frames: Mapping[int, str]) -> str:
    """`file.py:LINE` of the instruction's op metadata, "" when it records none."""
    metadata = instruction.attributes_text
    if "source_file=" in metadata:
        file = _SOURCE_FILE.search(metadata)
        line = _SOURCE_LINE.search(metadata)
        if file and line:
            return f"{file.group(1).rsplit('/', 1)[-1]}:{line.group(1)}"
    frame = _FRAME_ID.search(metadata) if "stack_frame_id=" in metadata else None
    return frames.get(int(frame.group(1)), "") if frame else ""


def op_name(instruction: HloInstruction) -> str:
    """The `op_name` of the instruction's metadata, "" when there is none."""
    if "op_name=" not in instruction.attributes_text:
        return ""
    match = _OP_NAME.search(instruction.attributes_text)
    return match.group(1) if match else ""


def label(
    instruction: HloInstruction,
    fusion: Fusion | None,
    flops: Mapping[str, float],
    source: str,
) -> tuple[str, str]:
    """A node's label text and its `dot` style."""
    shape = instruction.shape
    if len(shape) > _MAX_SHAPE:
        shape = shape[: _MAX_SHAPE - 3] + "..."
    facts = [_size(_bytes(instruction.shape_info))]
    if flops.get(instruction.name):
        facts.append(_flops(flops[instruction.name]))
    if source:
        facts.append(source)
    tail = f"{shape}\n{', '.join(facts)}"
    if fusion is not None:
        absorbed = ", ".join(
            f"{op} x{n}" if n > 1 else op for op, n in sorted(fusion.absorbed.items())
        )
        style = 'shape=box, style="rounded,filled", fillcolor="#f3d9fa", color="#862e9c"'
        return f"fusion {fusion.label}\n{absorbed}\n{tail}", style
    if instruction.opcode in PLAIN:
        payload = (instruction.payload or "")[:24]
        return f"{instruction.opcode} {payload}\n{tail}", 'shape=ellipse, color="#868e96"'
    color = "#adb5bd" if instruction.opcode in _QUIET else "#1971c2"
    return f"{instruction.opcode}\n{tail}", f'shape=box, color="{color}"'


def listed(names: list[str]) -> str:
    """The first names of a note's list, then how many more."""
    more = len(names) - _NAMED
    return ", ".join(names[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def summary(name: str, members: list[HloInstruction]) -> str:
    """The label of a collapsed cluster: its instructions by opcode and their output bytes."""
    opcodes = Counter(i.opcode for i in members)
    top = ", ".join(f"{op} x{n}" for op, n in sorted(opcodes.items(), key=lambda o: (-o[1], o[0])))
    total = sum(_bytes(i.shape_info) for i in members)
    return f"{name} (collapsed)\n{len(members)} instructions: {top}\n{_size(total)} out"
