"""What an instruction's op metadata says about where it came from: its `op_name`, the first
JAX name scope in that name, and its source line (`source_file`/`source_line`, or the module's
stack-frame tables through `stack_frame_id`). The fusion graph labels its nodes with these and
the profile reports group time by them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from xla_inspect.model import HloInstruction

__all__ = ["frame_tables", "op_name", "scope", "source"]

_WRAPPER = re.compile(r"^([\w-]+)\((.*)\)$")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_SOURCE_FILE = re.compile(r'source_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"source_line=(\d+)")
_FRAME_ID = re.compile(r"stack_frame_id=(\d+)")
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_FIELD = re.compile(r"(\w+)=(\d+)")


def op_name(instruction: HloInstruction) -> str:
    """The `op_name` of the instruction's metadata, "" when there is none."""
    if "op_name=" not in instruction.attributes_text:
        return ""
    match = _OP_NAME.search(instruction.attributes_text)
    return match.group(1) if match else ""


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
