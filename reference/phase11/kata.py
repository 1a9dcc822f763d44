"""Phase 11 reference: reading the HLO XLA:TPU makes, compiled without the chip."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from xla_inspect import parse_hlo
from xla_inspect.model import HloComputation, HloInstruction, HloModule, Shape
from xla_inspect.query import reachable

COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_VIEWS = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _body(module: HloModule, instruction: HloInstruction) -> list[HloComputation]:
    return reachable(module, instruction.called_computations)


def _custom_targets(module: HloModule, instruction: HloInstruction) -> set[str]:
    return {
        (i.attribute("custom_call_target") or "").strip('"')
        for c in _body(module, instruction)
        for i in c
        if i.opcode == "custom-call"
    }


def _wrapped_collective(module: HloModule, instruction: HloInstruction) -> HloInstruction:
    return next(i for c in _body(module, instruction) for i in c if i.opcode in COLLECTIVES)


def _async_pairs(hlo_text: str) -> list[tuple[HloInstruction, HloInstruction, str]]:
    """(start, done, collective opcode) for every async collective of the ENTRY computation."""
    module = parse_hlo(hlo_text)
    entry = module.entry
    pairs = []
    for start in entry:
        if start.opcode == "fusion" and "AsyncCollectiveStart" in _custom_targets(module, start):
            # TPU: kCustom fusions; the done's body holds the same collective (same channel)
            inner = _wrapped_collective(module, start)
            done = next(
                d
                for d in entry
                if d.opcode == "fusion"
                and "AsyncCollectiveDone" in _custom_targets(module, d)
                and _wrapped_collective(module, d).attribute("channel_id")
                == inner.attribute("channel_id")
            )
            pairs.append((start, done, inner.opcode))
        elif start.opcode.removesuffix("-start") in COLLECTIVES and start.opcode.endswith("-start"):
            # the generic spelling: the done op takes the start as its operand
            base = start.opcode.removesuffix("-start")
            done = next(d for d in entry if d.opcode == base + "-done" and start.name in d.operands)
            pairs.append((start, done, base))
        elif start.opcode == "async-start":
            # the generic wrapper: the collective is the root of the computation it calls
            wrapped = module.computation(start.called_computations[0].lstrip("%"))
            root = wrapped.root if wrapped is not None else start
            if root.opcode in COLLECTIVES:
                done = next(
                    d for d in entry if d.opcode == "async-done" and start.name in d.operands
                )
                pairs.append((start, done, root.opcode))
    return pairs


def async_collectives(hlo_text: str) -> dict[str, str]:
    # A start op or a kCustom AsyncCollectiveStart fusion begins a collective that runs while
    # the schedule goes on; an async copy-start is a DMA, not a collective.
    return {start.name: opcode for start, _, opcode in _async_pairs(hlo_text)}


def overlapped_work(hlo_text: str) -> dict[str, list[str]]:
    # The ENTRY of a scheduled module is printed in schedule order: what sits between start and
    # done runs while the collective is in flight.
    names = [i.name for i in parse_hlo(hlo_text).entry]
    opcodes = {i.name: i.opcode for i in parse_hlo(hlo_text).entry}
    found = {}
    for start, done, _ in _async_pairs(hlo_text):
        between = names[names.index(start.name) + 1 : names.index(done.name)]
        found[start.name] = [n for n in between if opcodes[n] not in _VIEWS]
    return found


# Opcodes that move, view or wrap data rather than compute on it.
_PLUMBING = {
    "parameter",
    "constant",
    "bitcast",
    "broadcast",
    "reshape",
    "transpose",
    "copy",
    "convert",
    "fusion",
    "tuple",
    "get-tuple-element",
    "custom-call",
    *COLLECTIVES,
}


def matmul_fusions(hlo_text: str) -> dict[str, list[str]]:
    # XLA:TPU prints a dot as a convolution, and fuses the epilogue into the same kOutput
    # fusion, sometimes through a nested fusion: look at everything the fusion calls.
    module = parse_hlo(hlo_text)
    found = {}
    for i in module.entry:
        if i.opcode != "fusion":
            continue
        opcodes = {x.opcode for c in _body(module, i) for x in c}
        if "convolution" in opcodes:
            found[i.name] = sorted(opcodes - _PLUMBING - {"convolution"})
    return found


_IOTA = re.compile(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH = re.compile(r"mesh\[([^\]]*)\]\s*\{([^}]*)\}")


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def _groups(spelling: str, devices: int) -> list[list[int]]:
    spelling = spelling.strip()
    if spelling == "{}":
        return [list(range(devices))]  # no groups printed: one group of every device
    iota = _IOTA.fullmatch(spelling)
    if iota:
        # iota(N) reshaped to dims, transposed by the permutation, read as [groups, size]
        ids = np.arange(math.prod(_ints(iota.group(2)))).reshape(_ints(iota.group(2)))
        if iota.group(3):
            ids = ids.transpose(_ints(iota.group(3)))
        return ids.reshape(_ints(iota.group(1))).tolist()
    mesh = _MESH.fullmatch(spelling)
    if mesh:
        # devices laid out row-major over the mesh; a group varies the listed axes only
        axes = [
            (a.split("=")[0].strip(" '"), int(a.split("=")[1])) for a in mesh.group(1).split(",")
        ]
        names = [name for name, _ in axes]
        # no axis named: along none of them, every device is a group of its own
        over = [names.index(a.strip(" '")) for a in mesh.group(2).split(",") if a.strip()]
        ids = np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])
        kept = [d for d in range(len(axes)) if d not in over]
        size = math.prod(axes[d][1] for d in over)
        return ids.transpose(kept + over).reshape(-1, size).tolist()
    return [_ints(g) for g in re.findall(r"\{([\d,]*)\}", spelling[1:-1])]


def device_groups(hlo_text: str) -> dict[int, list[list[int]]]:
    # A collective appears once per body it is copied into (TPU async wrappers): its channel_id
    # names it once. `{}` is every device of the module: replicas times partitions.
    module = parse_hlo(hlo_text)
    devices = int(module.attributes.get("replica_count", "1")) * int(
        module.attributes.get("num_partitions", "1")
    )
    found = {}
    for computation in module:
        for i in computation:
            groups = i.attribute("replica_groups")
            channel = i.attribute("channel_id")
            if groups is not None and channel is not None:
                found[int(channel)] = _groups(groups, devices)
    return found


def _logical_bytes(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_logical_bytes(e) for e in shape.elements)
    dtype = shape.dtype or ""
    width = re.search(r"\d+", dtype)
    bits = int(width.group()) if width else 8  # pred: one byte
    return math.prod(d or 0 for d in shape.dims) * bits // 8


def collective_bytes(hlo_text: str) -> dict[str, int]:
    # Each collective once (by channel), however many async wrappers copy it; one without a
    # channel_id is a collective of its own. Bytes of the logical result, not of padded tiles.
    seen: dict[int | tuple[str, str], tuple[str, int]] = {}
    for computation in parse_hlo(hlo_text):
        for i in computation:
            if i.opcode in COLLECTIVES:
                channel = i.attribute("channel_id")
                key = int(channel) if channel is not None else (computation.name, i.name)
                seen[key] = (i.opcode, _logical_bytes(i.shape_info))
    totals: dict[str, int] = {}
    for opcode, size in seen.values():
        totals[opcode] = totals.get(opcode, 0) + size
    return totals


_TILE = re.compile(r"T\(([\d,]+)\)")


def padded_bytes(shape_text: str) -> int:
    # The first tile pads the most minor dimensions (in layout order) up to multiples of the
    # tile; the later tiles split that tile into smaller ones and pad nothing more here.
    shape = Shape(shape_text)
    dims = [d or 0 for d in shape.dims]
    order = shape.minor_to_major or tuple(reversed(range(len(dims))))
    layout = shape.layout or ""
    tile = _TILE.search(layout)
    if tile:
        sizes = _ints(tile.group(1))
        minor_first = list(order[: len(sizes)])
        for dim, size in zip(minor_first, reversed(sizes), strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    width = re.search(r"\d+", shape.dtype or "")
    bits = int(width.group()) if width else 8
    return math.prod(dims) * bits // 8


def prefetched_parameters(hlo_text: str) -> dict[int, str]:
    # Memory-space assignment moves hot parameters into S(1): the one cross-program prefetch
    # starts before the program does, other copy-starts overlap compute, a copy blocks.
    entry = parse_hlo(hlo_text).entry
    numbers = {i.name: int(i.payload or 0) for i in entry if i.opcode == "parameter"}
    found = {}
    for i in entry:
        if i.opcode not in ("copy-start", "copy") or i.operands[0] not in numbers:
            continue
        moved = i.shape_info.elements[0] if i.shape_info.is_tuple else i.shape_info
        if "S(1)" not in (moved.layout or ""):
            continue
        if i.opcode == "copy":
            how = "copy"
        elif i.attribute("cross_program_prefetch_index") is not None:
            how = "cross-program prefetch"
        else:
            how = "prefetch"
        found[numbers[i.operands[0]]] = how
    return found


def predict_layer_flops(m: int, k: int, n: int, data: int, model: int) -> int:
    # Each device multiplies its rows of x by its columns of w (the whole k), then adds the
    # bias and takes the max once per element of its output block. libtpu counts a matmul as
    # k multiplies and k adds per element; a dot with k = 1 it makes a multiply, and one whose
    # block is a single row or column a multiply and a reduce over k (k - 1 adds).
    rows, cols = m // data, n // model
    if k == 1:
        dot = 1
    elif rows == 1 or cols == 1:
        dot = 2 * k - 1
    else:
        dot = 2 * k
    return rows * cols * (dot + 2)


def predict_allreduce_bytes(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    # Each device's hidden slice yields a partial [batch/data, width] output; summing the
    # partials over 'model' is the one all-reduce. With one device along 'model' nothing is summed.
    if model == 1:
        return 0
    return batch // data * width * itemsize


def gather_free_specs() -> tuple[P, P]:
    # Split w1 by columns and w2 by rows: each device's hidden slice feeds its own rows of w2,
    # and the partial products meet in one all-reduce; nothing is gathered.
    return P(None, "model"), P("model", None)


def step_donation() -> tuple[int, ...]:
    # The new params and momentum have the old ones' shapes, so their buffers can be reused;
    # the batch has no output to become, and the caller still needs it.
    return (0, 1)
