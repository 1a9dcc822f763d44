"""Red team, phase 11, round 17: wrong answers written from the contract only.

Kinds of mistakes not tried in rounds 1-16: an accumulator shared across loop iterations,
name and channel matching by substring of printed text, the classic round-up off-by-one,
an all-to-all charged without the device's own chunk, the small-dot rule tested on the whole
array instead of the device's block, a parameter identified by its shape, a missing channel_id
read as channel 0, the marker's operand taken for the collective, and a unit hidden slice
believed to need no all-reduce.
"""

from __future__ import annotations

import math

from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt17_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt17_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_rt17_MOVERS = {
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call", *_rt17_KINDS,
}  # fmt: skip
_rt17_BITS = {
    "pred": 8, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16,
    "f16": 16, "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64,
    "c64": 64, "c128": 128, "f8e4m3fn": 8, "f8e5m2": 8, "f8e4m3fnuz": 8, "f8e5m2fnuz": 8,
    "f8e4m3b11fnuz": 8, "f8e4m3": 8, "f8e3m4": 8, "f4e2m1fn": 4, "f8e8m0fnu": 8,
}  # fmt: skip


def _rt17_bits(dtype):
    return _rt17_BITS[dtype]


def _rt17_logical_bits(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt17_logical_bits(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt17_bits(shape.dtype)


def _rt17_tpu_kind(module, inst, target):
    """The collective opcode of a kCustom fusion whose bodies hold the `target` marker."""
    if inst.opcode != "fusion" or (inst.attribute("kind") or "") != "kCustom":
        return None
    comps = reachable(module, inst.called_computations)
    marked = any(
        i.opcode == "custom-call" and (i.attribute("custom_call_target") or "").strip('"') == target
        for c in comps
        for i in c
    )
    if not marked:
        return None
    for c in comps:
        for i in c:
            if i.opcode in _rt17_KINDS:
                return i
    return None


def _rt17_channels(module, inst):
    out = set()
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt17_KINDS and i.attribute("channel_id") is not None:
                out.add(i.attribute("channel_id"))
    return out


def _rt17_body_text(module, inst):
    return "\n".join(
        f"{i.name} = {i.opcode} {i.attributes_text}"
        for c in reachable(module, inst.called_computations)
        for i in c
    )


# ---------------------------------------------------------------- async_collectives


@wrong(
    "async_collectives",
    why="Clause 'whose called computations, nested ones included, hold it and a custom-call ... "
    "AsyncCollectiveStart, root or not': takes the collective to be the custom-call's first "
    "operand (the marker wraps what it starts), looked up in the marker's own computation; "
    "when the marker takes a tuple or get-tuple-element of the collective (or the collective "
    "sits in a nested computation) the start is left out. Wrong on programs.HANDWRITTEN_TPU_"
    "SAME_KIND with %mark.1 written custom-call(%a.0, %perm.1) (the marker taking the buffer "
    "and the collective, as the start tuple holds both): {send.q} instead of {send.p, send.q}",
)
def _rt17_async_collectives_marker_operand(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out: dict[str, str] = {}
    for inst in module.entry:
        if inst.opcode == "fusion" and (inst.attribute("kind") or "") == "kCustom":
            for comp in reachable(module, inst.called_computations):
                for i in comp:
                    target = (i.attribute("custom_call_target") or "").strip('"')
                    if i.opcode == "custom-call" and target == "AsyncCollectiveStart":
                        src = comp.instruction(i.operands[0].lstrip("%")) if i.operands else None
                        if src is not None and src.opcode in _rt17_KINDS:
                            out[inst.name] = src.opcode
        elif inst.opcode.endswith("-start") and inst.opcode[: -len("-start")] in _rt17_KINDS:
            out[inst.name] = inst.opcode[: -len("-start")]
        elif inst.opcode == "async-start":
            for comp in reachable(module, inst.called_computations):
                for i in comp:
                    if i.opcode in _rt17_KINDS:
                        out[inst.name] = i.opcode
    return out


# ---------------------------------------------------------------- overlapped_work


def _rt17_windows(hlo_text, pair_done):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    res: dict[str, list[str]] = {}
    for s_idx, s in enumerate(entry):
        tpu = _rt17_tpu_kind(module, s, "AsyncCollectiveStart")
        is_op = s.opcode.endswith("-start") and s.opcode[:-6] in _rt17_KINDS
        is_async = s.opcode == "async-start"
        if not (tpu is not None or is_op or is_async):
            continue
        d_idx = pair_done(module, entry, s_idx, s, tpu)
        if d_idx is None:
            continue
        res[s.name] = [i.name for i in entry[s_idx + 1 : d_idx] if i.opcode not in _rt17_NOWORK]
    return res


def _rt17_done_by_channel_substring(module, entry, s_idx, s, tpu):
    if tpu is not None:
        chan = tpu.attribute("channel_id")
        for j in range(s_idx + 1, len(entry)):
            d = entry[j]
            if _rt17_tpu_kind(module, d, "AsyncCollectiveDone") is None:
                continue
            if f"channel_id={chan}" in _rt17_body_text(module, d):
                return j
        return None
    want = s.opcode[:-6] + "-done" if s.opcode != "async-start" else "async-done"
    for j in range(s_idx + 1, len(entry)):
        d = entry[j]
        if d.opcode == want and s.name in [o.lstrip("%") for o in d.operands]:
            return j
    return None


@wrong(
    "overlapped_work",
    why="Clause 'the done of a TPU start is the kCustom fusion whose body holds "
    "AsyncCollectiveDone and the same collective (the same channel_id)': tests the channel by "
    "the substring f'channel_id={c}' in the done's printed body, so channel 2 matches a done "
    "of channel 21. Wrong on programs.HANDWRITTEN_TPU_SAME_KIND with channel 21 renumbered 2 "
    "and 22 renumbered 21: send.p's window closes at recv.q, [early, middle] instead of "
    "[early, middle, late]",
)
def _rt17_overlapped_work_channel_substring(hlo_text: str) -> dict[str, list[str]]:
    return _rt17_windows(hlo_text, _rt17_done_by_channel_substring)


def _rt17_done_by_name_substring(module, entry, s_idx, s, tpu):
    if tpu is not None:
        chan = tpu.attribute("channel_id")
        for j in range(s_idx + 1, len(entry)):
            d = entry[j]
            if _rt17_tpu_kind(module, d, "AsyncCollectiveDone") is None:
                continue
            if chan in _rt17_channels(module, d):
                return j
        return None
    want = s.opcode[:-6] + "-done" if s.opcode != "async-start" else "async-done"
    for j in range(s_idx + 1, len(entry)):
        d = entry[j]
        if d.opcode == want and s.name in str(d.operands):
            return j
    return None


@wrong(
    "overlapped_work",
    why="Clause 'the done of an X-start op is the X-done op that takes it as operand': checks "
    "`start.name in str(done.operands)`, a substring test on the printed operand list, so "
    "start %n1 takes the done of %n17. Wrong on programs.HANDWRITTEN_ASYNC with a second "
    "all-gather-start: starts n1 and n17, n17's done scheduled first: n1's window stops "
    "at n17's done",
)
def _rt17_overlapped_work_name_substring(hlo_text: str) -> dict[str, list[str]]:
    return _rt17_windows(hlo_text, _rt17_done_by_name_substring)


# ---------------------------------------------------------------- matmul_fusions


@wrong(
    "matmul_fusions",
    why="Clause 'For every ENTRY fusion ...: {fusion name: sorted distinct opcodes of the other "
    "work in those computations}': collects the opcodes into one set made before the loop over "
    "the fusions, so each fusion also gets the opcodes of the fusions before it. Wrong on "
    "programs.fused_collectives_module(): layer1 gets [add, tanh] instead of [add], layer4 "
    "[abs, add, sqrt, tanh] instead of [abs]",
)
def _rt17_matmul_fusions_shared_set(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out: dict[str, list[str]] = {}
    ops: set[str] = set()
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        if not any(i.opcode == "convolution" for c in comps for i in c):
            continue
        for c in comps:
            for i in c:
                if i.opcode != "convolution" and i.opcode not in _rt17_MOVERS:
                    ops.add(i.opcode)
        out[inst.name] = sorted(ops)
    return out


# ---------------------------------------------------------------- device_groups


def _rt17_groups(spec, n):
    import re

    import numpy as np

    spec = spec.strip()
    if spec == "{}":
        return [list(range(n))]
    m = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
    if m:
        g, s = int(m.group(1)), int(m.group(2))
        dims = [int(v) for v in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = arr.transpose([int(v) for v in m.group(4).split(",")])
        return arr.reshape(g, s).tolist()
    m = re.fullmatch(r"mesh\[(.*)\]\s*\{(.*)\}", spec)
    if m:
        axes = re.findall(r"'(\w+)'=(\d+)", m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(v) for _, v in axes]
        named = re.findall(r"'(\w+)'", m.group(2))
        arr = np.arange(math.prod(sizes)).reshape(sizes)
        rest = [names.index(a) for a in names if a not in named]
        order = rest + [names.index(a) for a in named]
        size = math.prod(sizes[names.index(a)] for a in named)
        return arr.transpose(order).reshape(-1, size).tolist()
    inner = re.findall(r"\{([\d,]*)\}", spec[1:-1])
    return [[int(v) for v in grp.split(",") if v] for grp in inner]


@wrong(
    "device_groups",
    why="Clause 'A collective copied into several computations keeps its channel_id: one entry' "
    "and 'without a channel_id ... leave it out': keys the dict with int(channel_id or 0), so a "
    "cross-replica collective lands under key 0 instead of being left out. Wrong on "
    "programs.CROSS_REPLICA: {5: [[0,1,2,3]], 0: [[0,1,2,3]]} instead of {5: [[0,1,2,3]]}",
)
def _rt17_device_groups_channel_zero(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    rc = int(module.attributes.get("replica_count", 1) or 1)
    npart = int(module.attributes.get("num_partitions", 1) or 1)
    out: dict[int, list[list[int]]] = {}
    for comp in module:
        for inst in comp:
            spec = inst.attribute("replica_groups")
            if spec is None:
                continue
            out[int(inst.attribute("channel_id") or 0)] = _rt17_groups(spec, rc * npart)
    return out


# ---------------------------------------------------------------- collective_bytes


@wrong(
    "collective_bytes",
    why="Clause 'Its bytes are those of its result on one device': an all-to-all is charged its "
    "result minus the chunk the device keeps for itself ((g-1)/g of it, g the replica group's "
    "size), as bandwidth models count it. Wrong on "
    "programs.fused_collectives_module() (all-to-all f32[16,16] in a group of 4): 768 "
    "instead of 1024",
)
def _rt17_collective_bytes_all_to_all_own_chunk(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    npart = int(module.attributes.get("num_partitions", 1) or 1)
    rc = int(module.attributes.get("replica_count", 1) or 1)
    seen: set[str] = set()
    bits: dict[str, int] = {}
    for comp in module:
        for inst in comp:
            if inst.opcode not in _rt17_KINDS:
                continue
            chan = inst.attribute("channel_id")
            if chan is not None:
                if chan in seen:
                    continue
                seen.add(chan)
            b = _rt17_logical_bits(inst.shape)
            if inst.opcode == "all-to-all":
                spec = inst.attribute("replica_groups") or "{}"
                g = len(_rt17_groups(spec, npart * rc)[0]) or 1
                b = b * (g - 1) // g
            bits[inst.opcode] = bits.get(inst.opcode, 0) + b
    return {k: v // 8 for k, v in bits.items()}


# ---------------------------------------------------------------- padded_bytes


@wrong(
    "padded_bytes",
    why="Clause 'each of them ... is padded up to a multiple of its tile size': rounds up with "
    "(d // t + 1) * t, which adds a whole tile to a dimension that is already a multiple. Right on "
    "odd shapes (bf16[1,1000]{1,0:T(2,128)(2,1)}: 4096), wrong on f32[8,128]{1,0:T(8,128)}: "
    "16384 instead of 4096",
)
def _rt17_padded_bytes_round_up_off_by_one(shape_text: str) -> int:
    import re

    shape = Shape(shape_text)
    dims = list(shape.dims)
    bits = _rt17_bits(shape.dtype)
    layout = shape.layout or ""
    m = re.search(r"T\(([\d,]+)\)", layout)
    if not m or not dims:
        return math.prod(dims) * bits // 8
    tile = [int(v) for v in m.group(1).split(",")]
    m2m = list(shape.minor_to_major)
    for pos, t in enumerate(reversed(tile)):
        if pos < len(m2m):
            d = m2m[pos]
            dims[d] = (dims[d] // t + 1) * t
    return math.prod(dims) * bits // 8


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="Clause 'whose operand is a parameter': recognises the parameter by the operand's "
    "printed shape (an ENTRY parameter is the instruction whose shape equals the operand's), "
    "and numbers it by the first ENTRY parameter of that shape. Wrong on "
    "programs.HANDWRITTEN_PREFETCH, whose parameters 0, 1, 3, 4 share f32[8,128]{1,0:T(8,128)}: "
    "the copy of parameter(0) and the copy-start of parameter(3) are both filed under "
    "parameter 1: {2: cross-program prefetch, 1: prefetch} instead of {2: cross-program "
    "prefetch, 0: copy, 3: prefetch}",
)
def _rt17_prefetched_parameters_by_shape(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    params = [i for i in entry if i.opcode == "parameter"]
    out: dict[int, str] = {}
    for inst in entry:
        if inst.opcode not in ("copy", "copy-start") or not inst.operands:
            continue
        src = entry.instruction(inst.operands[0].lstrip("%"))
        if src is None or src.opcode != "parameter":
            continue
        first = next(p for p in params if p.shape == src.shape)
        num = int(first.payload)
        shape = Shape(inst.shape)
        dest = shape.elements[0] if (inst.opcode == "copy-start" and shape.is_tuple) else shape
        if "S(1)" not in (dest.layout or ""):
            continue
        if inst.opcode == "copy":
            out[num] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[num] = "cross-program prefetch"
        else:
            out[num] = "prefetch"
    return out


# ---------------------------------------------------------------- predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="Clause 'a multiply and a reduce over k when the block is a single row or a single "
    "column': tests the whole x and w (m == 1 or n == 1) rather than the device's block "
    "(m // data, n // model). Wrong on m=2, k=8, n=8, data=2, model=2 (the README's case): "
    "72 instead of 68",
)
def _rt17_predict_layer_flops_whole_array(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    if k == 1:
        return rows * cols * 3
    if m == 1 or n == 1:
        return rows * cols * (2 * k + 1)
    return rows * cols * (2 * k + 2)


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="Clause '0 when the program needs no all-reduce': believes the partitioner skips the "
    "all-reduce when each device's hidden slice is a single unit (hidden == model: each "
    "device's second matmul is then an outer product, 'nothing to contract'), else the output "
    "block. Wrong on batch=64, width=128, hidden=4, data=1, model=4, itemsize=4: 0 instead of "
    "32768",
)
def _rt17_predict_allreduce_bytes_unit_hidden(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1 or hidden == model:
        return 0
    return (batch // data) * width * itemsize
