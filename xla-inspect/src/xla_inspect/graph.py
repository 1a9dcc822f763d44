"""The fusion graph of an HLO module, as Graphviz `dot` text and, with graphviz, as SVG.

`fusion_graph` draws every computation of a module: the ENTRY, while bodies and conditions,
called computations and reducers (the fused computations too with `fused=True`), each as a
cluster, and inside a computation one sub-cluster per JAX name scope (the first scope of the op
metadata's `op_name`, `jit(f)/transpose(jvp(layer_3))/...` -> `layer_3 (backward)`). A node is
one instruction; a fusion is a box naming its `query.Fusion` label (`kLoop`,
`kCustom(__ynn_fusion)`) and the opcodes it absorbed; parameters and constants are ellipses.
Every node shows its output bytes and its flops (both from shapes, see `instruction_flops`; a
caller may pass its own flops instead), and the source line of its op metadata
(`source_file`/`source_line`, or the module's stack-frame tables through `stack_frame_id`).
Edges are operands; a dashed edge goes from a caller to the computation it calls.

Large modules stay drawable: a parameter or constant used in several clusters is drawn once per
cluster, and while over a node/edge budget the graph sheds detail, largest first: computations
that reduce, sort or scatter apply (and fused computations drawn with `fused=True`) are left
out, then name-scope clusters are collapsed into one summary node each, then whole computations,
then computations are left out (never the entry); `FusionGraph.note` and the graph's title say
what went. The text is deterministic: it depends on the module text alone.

It works on text alone (no JAX). `render_svg` runs graphviz's `dot` program and raises
`GraphvizMissing` when there is none; `save_graph` writes the SVG, or the `.dot` source beside
it when graphviz is missing.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xla_inspect.errors import InspectError
from xla_inspect.model import HloInstruction, HloModule, Shape
from xla_inspect.parse import parse_hlo
from xla_inspect.query import Fusion, fused_computation_names, fusions

__all__ = [
    "DEFAULT_MAX_EDGES",
    "DEFAULT_MAX_NODES",
    "INSTALL_HINT",
    "FusionGraph",
    "GraphvizMissing",
    "fusion_graph",
    "fusion_graph_dot",
    "instruction_flops",
    "render_svg",
    "save_graph",
]

INSTALL_HINT = "install graphviz: apt-get install graphviz (macOS: brew install graphviz)"
#: Beyond these many drawn nodes or edges, clusters are collapsed: on this project's 2-core
#: machine `dot` lays out 106 nodes / 289 edges of a transformer gradient in under a second,
#: 151 / 392 in 2 s, and the whole 460 / 1,634 in 100 s.
DEFAULT_MAX_NODES = 150
DEFAULT_MAX_EDGES = 300
_PLAIN = frozenset({"parameter", "constant"})
_QUIET = frozenset({"get-tuple-element", "tuple", "bitcast"})
_MAX_SHAPE = 40
_REBUILDS = 8  # collapse one cluster at a time for this many rebuilds of the graph
_NAMED = 12  # a note names this many collapsed clusters, then says how many more
_RUN = 60  # unscoped instructions of a computation beyond this are clustered in runs of it
_DOT_TIMEOUT = 60
# bytes per element; sub-byte types round up per element count in `_bytes`
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


class GraphvizMissing(InspectError):
    """graphviz's `dot` program is not on PATH, so no SVG can be drawn."""

    def __init__(self) -> None:
        super().__init__(f"graphviz's `dot` program is not on PATH; {INSTALL_HINT}")


@dataclass(frozen=True, slots=True)
class FusionGraph:
    """A drawn module: the `dot` text and what it holds.

    - `computations`: the computations drawn, in module order, each a cluster.
    - `clusters`: the name-scope clusters drawn (`computation/scope`), collapsed ones included.
    - `collapsed`: the clusters (`computation/scope`, or a computation's name) drawn as one
      summary node because the graph was over its budget; empty when nothing was collapsed.
    - `nodes`, `edges`: how many the `dot` text has.
    - `note`: one line saying what was collapsed and why ("" when nothing was).
    """

    dot: str
    computations: tuple[str, ...]
    clusters: tuple[str, ...]
    collapsed: tuple[str, ...]
    nodes: int
    edges: int
    note: str


def _quote(text: str) -> str:
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


# elementwise opcodes XLA's cost analysis counts as one flop per output element (transcendental
# ones, exponential, tanh..., it counts apart, as transcendentals)
_ELEMENTWISE_FLOP = frozenset(
    "add subtract multiply divide maximum minimum negate abs compare select and or xor not"
    " remainder sign floor ceil round-nearest-afz round-nearest-even clamp atan2 power".split()
)
_DIGITS = re.compile(r"[0-9]+")


def _elements(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_elements(element) for element in shape.elements)
    return math.prod(d or 0 for d in shape.dims)


def instruction_flops(module: HloModule) -> dict[str, float]:
    """Flops of each instruction outside fused computations, from shapes, counted as XLA's
    cost analysis counts them: a dot 2 x output elements x the contracted size; a
    convolution 2 x output elements x the kernel's size per output feature (padding not
    taken off, so an upper bound); an elementwise arithmetic op or compare one per output
    element; a reduce one per input element; a fusion what its fused computation holds.
    Transcendental ops (exponential, tanh...) count 0, as in XLA's `flops`. Keyed by
    instruction name (names are unique per computation; a later computation's wins)."""
    totals: dict[str, float] = {}

    def computation_flops(name: str) -> float:
        if name not in totals:
            totals[name] = 0.0  # a cycle (never in valid HLO) counts nothing
            computation = module.computation(name)
            if computation is not None:
                totals[name] = sum(one(i, computation) for i in computation)
        return totals[name]

    def operand_shape(instruction: HloInstruction, computation, k: int) -> Shape | None:
        if len(instruction.operands) <= k:
            return None
        defining = computation.instruction(instruction.operands[k])
        return defining.shape_info if defining is not None else None

    def one(instruction: HloInstruction, computation) -> float:
        opcode = instruction.opcode
        if opcode == "fusion":
            return computation_flops((instruction.attribute("calls") or "").removeprefix("%"))
        if opcode in _ELEMENTWISE_FLOP:
            return _elements(instruction.shape_info)
        if opcode == "reduce":
            source = operand_shape(instruction, computation, 0)
            return _elements(source) if source is not None else 0
        if opcode == "dot":
            lhs = operand_shape(instruction, computation, 0)
            if lhs is None:
                return 0
            contracted = _DIGITS.findall(instruction.attribute("lhs_contracting_dims") or "")
            size = math.prod(lhs.dims[int(d)] or 0 for d in contracted if int(d) < len(lhs.dims))
            return 2 * _elements(instruction.shape_info) * size
        if opcode == "convolution":
            kernel = operand_shape(instruction, computation, 1)
            labels = (instruction.attribute("dim_labels") or "").partition("_")[2]
            if kernel is None or "o" not in labels or len(kernel.dims) <= labels.index("o"):
                return 0
            per_output = math.prod(d or 0 for d in kernel.dims) // max(
                kernel.dims[labels.index("o")] or 1, 1
            )
            return 2 * _elements(instruction.shape_info) * per_output
        return 0

    fused = fused_computation_names(module)
    return {
        instruction.name: one(instruction, computation)
        for computation in module.computations
        if computation.name not in fused
        for instruction in computation
    }


def _scope(op_name: str) -> str:
    """The first JAX name scope of an `op_name`, "" when there is none.

    `jit(f)/transpose(jvp(layer_3))/mul` -> `layer_3 (backward)`; `jit(f)/jvp(layer_0)/dot`
    -> `layer_0`; `jit(f)/transpose(jvp())/bqhd,bkhd->bhqk/dot_general` -> `bqhd,bkhd->bhqk
    (backward)`; `jit(f)/mul` and `jit(f)/jvp()/mul` -> "".
    """
    parts = op_name.split("/")
    if parts and parts[0].startswith(("jit(", "pjit(")):
        parts = parts[1:]
    backward = False
    for scope in parts[:-1]:  # the last part is the primitive
        while match := _WRAPPER.match(scope):
            backward = backward or match.group(1) == "transpose"
            scope = match.group(2)
        if scope:
            return f"{scope} (backward)" if backward else scope
    return ""


def _frame_tables(text: str) -> dict[int, str]:
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


def _source(instruction: HloInstruction, frames: Mapping[int, str]) -> str:
    metadata = instruction.attributes_text
    if "source_file=" in metadata:
        file = _SOURCE_FILE.search(metadata)
        line = _SOURCE_LINE.search(metadata)
        if file and line:
            return f"{file.group(1).rsplit('/', 1)[-1]}:{line.group(1)}"
    frame = _FRAME_ID.search(metadata) if "stack_frame_id=" in metadata else None
    return frames.get(int(frame.group(1)), "") if frame else ""


def _op_name(instruction: HloInstruction) -> str:
    if "op_name=" not in instruction.attributes_text:
        return ""
    match = _OP_NAME.search(instruction.attributes_text)
    return match.group(1) if match else ""


def _label(
    instruction: HloInstruction,
    fusion: Fusion | None,
    flops: Mapping[str, float],
    source: str,
) -> tuple[str, str]:
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
    if instruction.opcode in _PLAIN:
        payload = (instruction.payload or "")[:24]
        return f"{instruction.opcode} {payload}\n{tail}", 'shape=ellipse, color="#868e96"'
    color = "#adb5bd" if instruction.opcode in _QUIET else "#1971c2"
    return f"{instruction.opcode}\n{tail}", f'shape=box, color="{color}"'


def _names(names: list[str]) -> str:
    more = len(names) - _NAMED
    return ", ".join(names[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def _summary(name: str, members: list[HloInstruction]) -> str:
    opcodes = Counter(i.opcode for i in members)
    top = ", ".join(f"{op} x{n}" for op, n in sorted(opcodes.items(), key=lambda o: (-o[1], o[0])))
    total = sum(_bytes(i.shape_info) for i in members)
    return f"{name} (collapsed)\n{len(members)} instructions: {top}\n{_size(total)} out"


def fusion_graph(
    hlo: str | HloModule,
    *,
    title: str = "",
    fused: bool = False,
    flops: Mapping[str, float] | None = None,
    text: str = "",
    max_nodes: int = DEFAULT_MAX_NODES,
    max_edges: int = DEFAULT_MAX_EDGES,
) -> FusionGraph:
    """Draw `hlo` (HLO text or a parsed module); see the module docstring.

    `fused` draws the fused computations too; `flops` maps instruction names to the flops shown
    on their nodes (default: `instruction_flops` of the module). Source lines through
    `stack_frame_id` need the module text, for its stack-frame tables (a parsed module keeps
    none): pass it as `text` with a parsed module; `source_file`/`source_line` metadata work
    on both.
    """
    text = hlo if isinstance(hlo, str) else text
    module = parse_hlo(hlo) if isinstance(hlo, str) else hlo
    frames = _frame_tables(text) if "StackFrames" in text else {}
    flops = instruction_flops(module) if flops is None else flops
    fused_names = fused_computation_names(module)
    drawn = [c for c in module.computations if fused or c.name not in fused_names]
    by_name = {(f.computation, f.name): f for f in fusions(module)}

    # units: one per (computation, scope); instructions keyed by (computation index, index)
    units: dict[tuple[int, str], list[int]] = {}  # scope "": the computation's own level
    unit_of: dict[tuple[int, int], tuple[int, str]] = {}
    shared: set[tuple[int, int]] = set()  # parameters and constants drawn once per cluster
    copies: dict[tuple[int, str], list[int]] = {}  # the shared instructions a unit draws
    operands: list[list[list[int]]] = []  # computation -> instruction -> operand indices
    index_of = {c.name: k for k, c in enumerate(drawn)}
    calls: list[list[list[int]]] = []  # computation -> instruction -> called computations
    for c, computation in enumerate(drawn):
        index = {i.name: n for n, i in enumerate(computation.instructions)}
        operands.append([[index[o] for o in i.operands if o in index] for i in computation])
        calls.append(
            [
                [k for name in i.called_computations if (k := index_of.get(name, c)) != c]
                for i in computation
            ]
        )
        users: dict[int, list[int]] = {}
        for n, found in enumerate(operands[c]):
            for operand in found:
                users.setdefault(operand, []).append(n)
        scopes = [_scope(_op_name(i)) for i in computation.instructions]
        # no name scope (plain JAX without `jax.named_scope`): runs of instructions in text
        # order, which for a scheduled module follows the program from first layer to last
        unscoped = [n for n, i in enumerate(computation.instructions) if not scopes[n]]
        unscoped = [n for n in unscoped if computation.instructions[n].opcode not in _PLAIN]
        if len(unscoped) > _RUN:
            for start in range(0, len(unscoped), _RUN):
                run = unscoped[start : start + _RUN]
                for n in run:
                    scopes[n] = f"instructions {run[0]}-{run[-1]}"
        for n, instruction in enumerate(computation.instructions):
            scope = scopes[n]
            if instruction.opcode in _PLAIN:
                user_scopes = sorted({scopes[u] for u in users.get(n, [])})
                if len(user_scopes) == 1:
                    scope = user_scopes[0]
                elif len(user_scopes) > 1:
                    shared.add((c, n))
                    for user_scope in user_scopes:
                        copies.setdefault((c, user_scope), []).append(n)
                    scope = ""
            key = (c, scope)
            units.setdefault(key, []).append(n)
            unit_of[(c, n)] = key
    by_computation: dict[int, list[tuple[str, list[int]]]] = {}
    for (c, scope), unit in units.items():
        by_computation.setdefault(c, []).append((scope, unit))
    labels: dict[tuple[int, int], str] = {}

    def node_label(c: int, n: int) -> str:
        if (c, n) not in labels:
            instruction = drawn[c].instructions[n]
            fusion = by_name.get((drawn[c].name, instruction.name))
            label, style = _label(instruction, fusion, flops, _source(instruction, frames))
            labels[(c, n)] = f"[label={_quote(label)}, {style}];"
        return labels[(c, n)]

    # helpers: fused computations (when drawn) and what reduce, sort, scatter... apply
    applied = {
        name.removeprefix("%")
        for computation in module.computations
        for i in computation
        for key in ("to_apply", "select", "scatter")
        if (name := i.attribute(key))
    }
    helper = [
        not c.is_entry and (c.name in applied or (fused and c.name in fused_names)) for c in drawn
    ]
    omitted: set[int] = set()  # computations left out

    sizes = {key: sum((key[0], n) not in shared for n in unit) for key, unit in units.items()}
    for key, shared_here in copies.items():
        sizes[key] = sizes.get(key, 0) + len(shared_here)

    def node_count(c: int) -> int:
        """The nodes computation `c` draws now."""
        if c in omitted:
            return 0
        if (c, "") in collapsed:
            return 1
        return sum(
            1 if scope and (c, scope) in collapsed else sizes[(c, scope)]
            for scope, _ in by_computation.get(c, [])
        )

    summaries: dict[tuple[int, str], str] = {}

    def summary(c: int, scope: str) -> str:
        if (c, scope) not in summaries:
            computation = drawn[c]
            if scope:
                members = [computation.instructions[n] for n in units[(c, scope)]]
                summaries[(c, scope)] = _summary(scope, members)
            else:
                kind = "ENTRY " if computation.is_entry else ""
                members = list(computation.instructions)
                summaries[(c, scope)] = _summary(f"{kind}{computation.name}", members)
        return summaries[(c, scope)]

    def build(collapsed: frozenset[tuple[int, str]]) -> tuple[list[str], int, int]:
        lines: list[str] = []
        edges: set[tuple[str, str, str]] = set()
        nodes = 0

        def node_id(c: int, n: int, user: tuple[int, str] | None = None) -> str:
            key = unit_of[(c, n)]
            if (c, "") in collapsed:
                return f"c{c}"
            if (c, n) in shared and user is not None:
                # a parameter or constant used in several clusters: one copy per cluster
                return f"u{c}_{user[1]}" if user in collapsed else f"n{c}_{n}@{user[1]}"
            if key in collapsed:
                return f"u{c}_{key[1]}"
            return f"n{c}_{n}"

        for c, computation in enumerate(drawn):
            kind = "ENTRY " if computation.is_entry else ""
            if c in omitted:
                continue
            if (c, "") in collapsed:
                label = summary(c, "")
                lines.append(f"  {_quote(f'c{c}')} [label={_quote(label)}, shape=box3d];")
                nodes += 1
                continue
            lines.append(f"  subgraph {_quote(f'cluster_c{c}')} {{")
            lines.append(f"    label={_quote(f'{kind}{computation.name}')};")
            lines.append('    style=rounded; color="#495057";')
            for scope, unit in by_computation.get(c, []):
                indent = "    "
                if scope and (c, scope) in collapsed:
                    label = summary(c, scope)
                    ident = _quote(f"u{c}_{scope}")
                    lines.append(f"    {ident} [label={_quote(label)}, shape=box3d];")
                    nodes += 1
                    continue
                if scope:
                    lines.append(f"    subgraph {_quote(f'cluster_c{c}_{scope}')} {{")
                    lines.append(f'      label={_quote(scope)}; style=dashed; color="#868e96";')
                    indent = "      "
                for n in unit:
                    if (c, n) not in shared:
                        lines.append(f"{indent}{_quote(f'n{c}_{n}')} {node_label(c, n)}")
                        nodes += 1
                # shared parameters and constants: a copy in each cluster that uses them
                for n in copies.get((c, scope), []):
                    lines.append(f"{indent}{_quote(f'n{c}_{n}@{scope}')} {node_label(c, n)}")
                    nodes += 1
                if scope:
                    lines.append("    }")
            lines.append("  }")
        for c, computation in enumerate(drawn):
            if c in omitted:
                continue
            for n in range(len(computation.instructions)):
                user = unit_of[(c, n)]
                target = node_id(c, n)
                for operand in operands[c][n]:
                    source = node_id(c, operand, user)
                    if source != target:
                        edges.add((source, target, ""))
                for k in calls[c][n]:
                    if k not in omitted:
                        callee = node_id(k, len(drawn[k].instructions) - 1)
                        edges.add((target, callee, "call"))
        for source, target, kind in sorted(edges):
            style = " [style=dashed, constraint=false]" if kind else ""
            lines.append(f"  {_quote(source)} -> {_quote(target)}{style};")
        return lines, nodes, len(edges)

    collapsed: set[tuple[int, str]] = set()  # (computation, scope); scope "": all of it
    lines: list[str] = []
    nodes, edges = sum(node_count(c) for c in range(len(drawn))), 0
    # while over the budget: leave out helpers (largest first), collapse the largest name-scope
    # clusters, collapse whole computations, leave out computations (largest first); the
    # entry is never collapsed whole nor left out
    by_size = sorted(range(len(drawn)), key=lambda c: (-len(drawn[c].instructions), c))
    scoped = (key for key in units if key[1] and not helper[key[0]])
    others = [c for c in by_size if not helper[c] and not drawn[c].is_entry]
    helpers = [c for c in by_size if helper[c]]
    # (what grows, in what order, how many one at a time before doubling the step)
    phases: list[tuple[set[int] | set[tuple[int, str]], list[int] | list[tuple[int, str]], int]]
    phases = [
        (omitted, helpers, 0 if len(helpers) <= _REBUILDS else -1),
        (collapsed, sorted(scoped, key=lambda k: (-len(units[k]), k[0], k[1])), _REBUILDS),
        (collapsed, [(c, "") for c in others], 0),
        (omitted, others, 0),
    ]
    stale = True  # `nodes` is kept exact without a rebuild; `edges` needs one
    for chosen, order, singles in phases:
        # over the node budget: one more at a time, no rebuild; over the edge budget only: one
        # at a time for `singles` rebuilds, then twice as many each time (all at once for -1),
        # so that a module of thousands of clusters still takes a few dozen rebuilds
        done, step, rebuilds = 0, len(order) if singles < 0 else 1, 0
        while done < len(order):
            if stale and nodes <= max_nodes:
                lines, nodes, edges = build(frozenset(collapsed))
                stale = False
            if nodes <= max_nodes and edges <= max_edges:
                break
            take = 1 if nodes > max_nodes else step
            for key in order[done : done + take]:
                c = key if isinstance(key, int) else key[0]
                before = node_count(c)
                chosen.add(key)  # type: ignore[arg-type]
                nodes += node_count(c) - before
            done, stale = done + take, True
            if nodes <= max_nodes:
                rebuilds += 1
                step = step * 2 if rebuilds >= singles else 1
    if stale:
        lines, nodes, edges = build(frozenset(collapsed))

    left_out = [drawn[c].name for c in sorted(omitted)]
    names = [
        f"{drawn[c].name}/{s}" if s else drawn[c].name
        for c, s in sorted(collapsed)
        if c not in omitted
    ]
    clusters = tuple(f"{drawn[c].name}/{s}" for c, s in units if s)
    said = []
    if left_out:
        said.append(f"left out {len(left_out)} of {len(drawn)} computations: {_names(left_out)}")
    if names:
        said.append(f"collapsed {len(names)} clusters into one node each: {_names(names)}")
    note = ""
    if said:
        note = f"{'; '.join(said)} (over the budget of {max_nodes} nodes / {max_edges} edges)"
    heading = "\n".join(filter(None, [title or module.name, note]))
    header = [
        f"digraph {_quote(module.name)} {{",
        "  rankdir=TB; newrank=true; nslimit=2; nslimit1=2; mclimit=0.5;",
        '  node [fontname="Helvetica", fontsize=10];',
        f"  label={_quote(heading)}; labelloc=t;",
    ]
    return FusionGraph(
        dot="\n".join(header + lines + ["}"]) + "\n",
        computations=tuple(c.name for k, c in enumerate(drawn) if k not in omitted),
        clusters=clusters,
        collapsed=tuple(names),
        nodes=nodes,
        edges=edges,
        note=note,
    )


def fusion_graph_dot(hlo: str | HloModule, *, title: str = "", fused: bool = False) -> str:
    """The `dot` text of `fusion_graph(hlo, title=title, fused=fused)`."""
    return fusion_graph(hlo, title=title, fused=fused).dot


def render_svg(dot_text: str, path: str | Path) -> Path:
    """Draw `dot_text` into the SVG file `path` with graphviz's `dot`; return the path.

    Raises `GraphvizMissing` when `dot` is not on PATH, `InspectError` when `dot` rejects the
    text or does not finish within a minute.
    """
    program = shutil.which("dot")
    if program is None:
        raise GraphvizMissing
    svg = Path(path)
    svg.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [program, "-Tsvg", "-o", str(svg)],
            input=dot_text,
            text=True,
            check=True,
            capture_output=True,
            timeout=_DOT_TIMEOUT,
        )
    except subprocess.CalledProcessError as exc:
        reason = (exc.stderr or "").strip().splitlines()
        raise InspectError(f"dot failed ({reason[0] if reason else exc.returncode})") from exc
    except subprocess.TimeoutExpired as exc:
        raise InspectError(f"dot did not finish within {_DOT_TIMEOUT} s") from exc
    return svg


def save_graph(dot_text: str, svg_path: str | Path) -> tuple[Path, bool]:
    """The SVG at `svg_path`, or without graphviz the `.dot` source beside it.

    Returns (the path written, whether it is the SVG).
    """
    try:
        return render_svg(dot_text, svg_path), True
    except GraphvizMissing:
        dot_path = Path(svg_path).with_suffix(".dot")
        dot_path.parent.mkdir(parents=True, exist_ok=True)
        dot_path.write_text(dot_text, encoding="utf-8")
        return dot_path, False
