"""Red-team wrong answers for phase 11, written from the contract only.

Round 4: each answer agrees with a careful reading on the recordings, the hand-written modules
of programs.py and the drawn collective modules as far as the contract lets us see them, and is
wrong on a valid input they lack (named in each `why`).
"""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt4_COLLECTIVES = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)
_rt4_NO_WORK = ("get-tuple-element", "bitcast", "tuple", "parameter", "constant")
_rt4_MOVES = (
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call",
)  # fmt: skip

# ---- shared readers (the careful parts; each answer below breaks one clause) ----------------


def _rt4_bits(dtype: str) -> float:
    if dtype == "pred":
        return 8
    digits = re.search(r"\d+", dtype)
    return int(digits.group()) if digits else 8


def _rt4_async_kind(module, inst):
    """The collective an ENTRY start instruction starts, else None."""
    op = inst.opcode
    if op == "fusion" and inst.attribute("kind") == "kCustom":
        comps = reachable(module, inst.called_computations)
        body = [i for c in comps for i in c.instructions]
        if any(
            i.opcode == "custom-call" and "AsyncCollectiveStart" in i.attributes_text for i in body
        ):
            for i in body:
                if i.opcode in _rt4_COLLECTIVES:
                    return i.opcode
        return None
    if op == "async-start":
        comps = reachable(module, inst.called_computations)
        for c in comps:
            for i in c.instructions:
                if i.opcode in _rt4_COLLECTIVES:
                    return i.opcode
        return None
    if op.endswith("-start") and op.removesuffix("-start") in _rt4_COLLECTIVES:
        return op.removesuffix("-start")
    return None


def _rt4_channel_of_fusion(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c.instructions:
            if i.opcode in _rt4_COLLECTIVES:
                return i.attribute("channel_id")
    return None


def _rt4_holds_done(module, inst):
    comps = reachable(module, inst.called_computations)
    return any(
        i.opcode == "custom-call" and "AsyncCollectiveDone" in i.attributes_text
        for c in comps
        for i in c.instructions
    )


def _rt4_starts(module, comps=None):
    found = {}
    for comp in comps if comps is not None else (module.entry,):
        for inst in comp.instructions:
            kind = _rt4_async_kind(module, inst)
            if kind is not None:
                found[inst.name] = kind
    return found


def _rt4_done_index(module, entry, k, start):
    insts = entry.instructions
    if start.opcode == "fusion":
        channel = _rt4_channel_of_fusion(module, start)
        for j in range(k + 1, len(insts)):
            other = insts[j]
            if (
                other.opcode == "fusion"
                and _rt4_holds_done(module, other)
                and _rt4_channel_of_fusion(module, other) == channel
            ):
                return j
        return None
    for j in range(k + 1, len(insts)):
        if insts[j].opcode.endswith("-done") and start.name in insts[j].operands:
            return j
    return None


def _rt4_overlap(hlo_text, skip=_rt4_NO_WORK, pair=None):
    module = parse_hlo(hlo_text)
    entry = module.entry
    insts = entry.instructions
    starts = _rt4_starts(module)
    out = {}
    for k, inst in enumerate(insts):
        if inst.name not in starts:
            continue
        j = (pair or _rt4_done_index)(module, entry, k, inst)
        if j is None:
            continue
        out[inst.name] = [i.name for i in insts[k + 1 : j] if i.opcode not in skip]
    return out


def _rt4_bytes_of(shape: Shape, skip_scalars=False, bits=_rt4_bits) -> float:
    if shape.is_tuple:
        return sum(_rt4_bytes_of(e, skip_scalars, bits) for e in shape.elements)
    if skip_scalars and not shape.dims:
        return 0
    return math.prod(shape.dims) * bits(shape.dtype) / 8


def _rt4_group_spelling(text: str, devices: int):
    text = text.strip()
    if text in ("{}", ""):
        return [list(range(devices))]
    if text.startswith("{"):
        return [
            [int(x) for x in g.split(",") if x.strip()]
            for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])
        ]
    if text.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        g, s = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = arr.transpose([int(p) for p in m.group(4).split(",")])
        return arr.reshape(g, s).tolist()
    m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
    axes = [(a, int(n)) for a, n in re.findall(r"'(\w+)'=(\d+)", m.group(1))]
    names = [a for a in re.findall(r"'(\w+)'", m.group(2))]
    order = [a for a, _ in axes]
    arr = np.arange(math.prod(n for _, n in axes)).reshape([n for _, n in axes])
    rest = [order.index(a) for a in order if a not in names]
    named = [order.index(a) for a in names]
    arr = arr.transpose(rest + named)
    size = math.prod(axes[i][1] for i in named)
    return arr.reshape(-1, size).tolist()


def _rt4_devices(module) -> int:
    attrs = module.attributes
    return int(attrs.get("replica_count", 1)) * int(attrs.get("num_partitions", 1))


def _rt4_groups(hlo_text, devices=_rt4_devices, spelling=_rt4_group_spelling):
    module = parse_hlo(hlo_text)
    n = devices(module)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            groups = inst.attribute("replica_groups")
            channel = inst.attribute("channel_id")
            if groups is None or channel is None or int(channel) in out:
                continue
            out[int(channel)] = spelling(groups, n)
    return out


def _rt4_padded(shape_text, bits=_rt4_bits, first_tile_sizes=None, prod=math.prod):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    tiles = re.findall(r"\(([\d,]*)\)", layout.partition(":")[2].split("S(")[0])
    if "T(" in layout and tiles:
        first = [int(t) for t in tiles[0].split(",")]
        if first_tile_sizes is not None:
            first = first[-first_tile_sizes:]
        order = shape.minor_to_major
        for size, dim in zip(reversed(first), order, strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    total = prod(dims) * bits(shape.dtype)
    return int(total // 8)


# ---- task 1: async_collectives ---------------------------------------------------------------


@wrong(
    "async_collectives",
    why="the contract asks for the starts in the ENTRY computation; this walks every "
    "computation (xla_inspect.query.instructions style) and also reports starts in while "
    "bodies and called computations; wrong on a module whose while body holds an "
    "all-gather-start/all-gather-done pair (or a kCustom AsyncCollectiveStart fusion inside a "
    "called computation): that start is listed though it is not in ENTRY",
)
def _rt4_async_collectives_every_computation(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    return _rt4_starts(module, module.computations)


@wrong(
    "async_collectives",
    why="an async start must hold a collective; this reads the generic `async-start` wrapper "
    "as 'the opcode of the root of the computation it calls', so an async-start that wraps a "
    "non-collective (an async custom-call or fusion, as host offloading or async dynamic "
    "slicing print) is reported as {'s': 'custom-call'}; wrong on such a module, where {} (or "
    "only the real collectives) is right",
)
def _rt4_async_collectives_async_root(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode == "async-start":
            callee = module.computation(inst.called_computations[0])
            out[inst.name] = callee.root.opcode
            continue
        kind = _rt4_async_kind(module, inst)
        if kind is not None:
            out[inst.name] = kind
    return out


@wrong(
    "async_collectives",
    why="every start is its own entry; this collects them per channel_id (the way copies of "
    "one collective are merged in collective_bytes), so starts without a channel_id collapse: "
    "wrong on a module compiled with replica_count=2 whose ENTRY holds two all-reduce-start "
    "ops with no channel_id (only the last of them is reported)",
)
def _rt4_async_collectives_by_channel(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    by_channel = {}
    for inst in module.entry.instructions:
        kind = _rt4_async_kind(module, inst)
        if kind is None:
            continue
        if inst.opcode == "fusion":
            channel = _rt4_channel_of_fusion(module, inst)
        else:
            channel = inst.attribute("channel_id")
            if channel is None:
                for c in reachable(module, inst.called_computations):
                    for i in c.instructions:
                        if i.opcode in _rt4_COLLECTIVES:
                            channel = i.attribute("channel_id")
        by_channel[channel] = (inst.name, kind)
    return dict(by_channel.values())


# ---- task 2: overlapped_work -----------------------------------------------------------------


_rt4_CONSTANT_LIKE = ("replica-id", "iota", "opt-barrier", "after-all", "add-dependency")


@wrong(
    "overlapped_work",
    why="only get-tuple-element, bitcast, tuple, parameter and constant are left out; this "
    "also drops what it takes for per-device constants and plumbing: replica-id, iota, "
    "opt-barrier, after-all, add-dependency (it keeps partition-id, seen in a recording); "
    "wrong on a scheduled module where a `replica-id`, an `iota` or an `opt-barrier` is "
    "scheduled between a start and its done: each is an instruction that runs, not one of "
    "the five left out, and must be listed",
)
def _rt4_overlapped_work_constant_like_skipped(hlo_text: str) -> dict[str, list[str]]:
    return _rt4_overlap(hlo_text, skip=_rt4_NO_WORK + _rt4_CONSTANT_LIKE)


def _rt4_signature(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c.instructions:
            if i.opcode in _rt4_COLLECTIVES:
                attrs = re.sub(r"channel_id=\d+,?\s*", "", i.attributes_text)
                attrs = re.sub(r",?\s*(metadata|backend_config|frontend_attributes)=.*", "", attrs)
                return (i.opcode, Shape(i.shape).dims, Shape(i.shape).dtype, attrs.strip())
    return None


def _rt4_pair_by_signature(module, entry, k, start):
    insts = entry.instructions
    if start.opcode != "fusion":
        return _rt4_done_index(module, entry, k, start)
    want = _rt4_signature(module, start)
    used = set()
    for k2 in range(k):  # dones already claimed by earlier starts of the same signature
        s2 = insts[k2]
        if (
            s2.opcode == "fusion"
            and _rt4_async_kind(module, s2)
            and _rt4_signature(module, s2) == want
        ):
            j2 = _rt4_first_free(module, insts, k2, want, used)
            if j2 is not None:
                used.add(j2)
    return _rt4_first_free(module, insts, k, want, used)


def _rt4_first_free(module, insts, k, want, used):
    for j in range(k + 1, len(insts)):
        other = insts[j]
        if (
            j not in used
            and other.opcode == "fusion"
            and _rt4_holds_done(module, other)
            and _rt4_signature(module, other) == want
        ):
            return j
    return None


@wrong(
    "overlapped_work",
    why="a TPU done belongs to the start with the same channel_id; this pairs them by what "
    "the collective looks like (opcode, shape, dtype, replica groups or source_target_pairs) "
    "first-in first-out, so two identical weight gathers in flight that finish in the other "
    "order (start a, start b, done b, done a; both bf16[1024,1024] all-gathers over "
    "mesh['axis_0'=4] {'axis_0'}, channels 8 and 10) get each other's windows",
)
def _rt4_overlapped_work_paired_by_signature(hlo_text: str) -> dict[str, list[str]]:
    return _rt4_overlap(hlo_text, pair=_rt4_pair_by_signature)


def _rt4_pair_generic_by_order(module, entry, k, start):
    insts = entry.instructions
    if start.opcode in ("fusion", "async-start"):
        return _rt4_done_index(module, entry, k, start)
    done = start.opcode.removesuffix("-start") + "-done"
    # n-th start of this opcode ends with the n-th done of it
    nth = sum(1 for i in insts[:k] if i.opcode == start.opcode)
    seen = 0
    for j, i in enumerate(insts):
        if i.opcode == done:
            if seen == nth:
                return j
            seen += 1
    return None


@wrong(
    "overlapped_work",
    why="the done of an `X-start` op is the `X-done` that takes it as operand; this pairs the "
    "n-th all-gather-start with the n-th all-gather-done (the TPU fusions and async-start are "
    "paired correctly); wrong on a module with two all-gather-start ops finished in the other "
    "order (ag1-start, ag2-start, ag2-done, ag1-done)",
)
def _rt4_overlapped_work_generic_in_order(hlo_text: str) -> dict[str, list[str]]:
    return _rt4_overlap(hlo_text, pair=_rt4_pair_generic_by_order)


# ---- task 3: matmul_fusions ------------------------------------------------------------------

_rt4_EXTRA_MOVERS = ("slice", "dynamic-update-slice", "pad", "concatenate", "reverse", "iota")


def _rt4_matmuls(
    hlo_text, skip=_rt4_MOVES, entry_only=True, keep_empty=True, detect=("convolution",)
):
    module = parse_hlo(hlo_text)
    comps = (module.entry,) if entry_only else module.computations
    out = {}
    for comp in comps:
        for inst in comp.instructions:
            if inst.opcode != "fusion":
                continue
            body = [i for c in reachable(module, inst.called_computations) for i in c.instructions]
            if not any(i.opcode in detect for i in body):
                continue
            ops = sorted(
                {
                    i.opcode
                    for i in body
                    if i.opcode not in detect
                    and i.opcode not in skip
                    and i.opcode not in _rt4_COLLECTIVES
                    and i.opcode.removesuffix("-start").removesuffix("-done")
                    not in _rt4_COLLECTIVES
                }
            )
            if ops or keep_empty:
                out[inst.name] = ops
    return out


@wrong(
    "matmul_fusions",
    why="only parameter, constant, bitcast, broadcast, reshape, transpose, copy, convert, "
    "fusion, tuple, get-tuple-element, custom-call and the collectives are left out; this also "
    "drops slice, dynamic-update-slice, pad, concatenate, reverse and iota as 'data movement' "
    "(it keeps dynamic-slice, seen in a recording); wrong on a kOutput fusion whose body holds a "
    "convolution next to a dynamic-update-slice or a pad (e.g. a scan-carried matmul that "
    "writes its row into a buffer): those opcodes must be listed",
)
def _rt4_matmul_fusions_more_movers(hlo_text: str) -> dict[str, list[str]]:
    return _rt4_matmuls(hlo_text, skip=_rt4_MOVES + _rt4_EXTRA_MOVERS)


@wrong(
    "matmul_fusions",
    why="keys are the ENTRY fusions; this finds the computations holding a convolution first "
    "and maps each back to its fusion with a dict {called computation: fusion name}, so two "
    "ENTRY fusions calling the same fused computation (two identical layers sharing one body) "
    "give one key; wrong on such a module: both fusion names must be listed",
)
def _rt4_matmul_fusions_by_computation(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    owner = {}
    for inst in module.entry.instructions:
        if inst.opcode == "fusion" and inst.called_computations:
            owner[inst.called_computations[0]] = inst.name
    out = {}
    for comp_name, fusion_name in owner.items():
        body = [i for c in reachable(module, (comp_name,)) for i in c.instructions]
        if not any(i.opcode == "convolution" for i in body):
            continue
        out[fusion_name] = sorted(
            {
                i.opcode
                for i in body
                if i.opcode != "convolution"
                and i.opcode not in _rt4_MOVES
                and i.opcode not in _rt4_COLLECTIVES
                and i.opcode.removesuffix("-start").removesuffix("-done") not in _rt4_COLLECTIVES
            }
        )
    order = [i.name for i in module.entry.instructions]
    return {k: out[k] for k in sorted(out, key=order.index)}


def _rt4_two_levels(module, names):
    comps = [module.computation(n) for n in names]
    comps = [c for c in comps if c is not None]
    nested = [module.computation(n) for c in comps for n in c.calls]
    return comps + [c for c in nested if c is not None and c not in comps]


@wrong(
    "matmul_fusions",
    why="nested called computations count at any depth; this looks at the fusion's body and "
    "what that body calls directly (one level: the FSDP overlap fusion's matmul and the "
    "reducers), not deeper; wrong on a kCustom overlap fusion whose body holds a kOutput "
    "fusion whose body holds the convolution next to a kLoop fusion computing `exponential` "
    "(three levels): exponential is missed, and a convolution three levels down is not seen",
)
def _rt4_matmul_fusions_one_level(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode != "fusion":
            continue
        body = [
            i for c in _rt4_two_levels(module, inst.called_computations) for i in c.instructions
        ]
        if not any(i.opcode == "convolution" for i in body):
            continue
        out[inst.name] = sorted(
            {
                i.opcode
                for i in body
                if i.opcode != "convolution"
                and i.opcode not in _rt4_MOVES
                and i.opcode not in _rt4_COLLECTIVES
                and i.opcode.removesuffix("-start").removesuffix("-done") not in _rt4_COLLECTIVES
            }
        )
    return out


# ---- task 4: device_groups -------------------------------------------------------------------


def _rt4_devices_first_present(module) -> int:
    attrs = module.attributes
    return int(attrs.get("num_partitions") or attrs.get("replica_count") or 1)


@wrong(
    "device_groups",
    why="an empty replica_groups={} is replica_count TIMES num_partitions devices; this takes "
    "num_partitions, else replica_count (the first one printed); wrong on "
    "`HloModule m, replica_count=2, num_partitions=4` with an all-reduce "
    "channel_id=1, replica_groups={}: [[0..7]] expected, [[0,1,2,3]] given",
)
def _rt4_device_groups_first_count(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt4_groups(hlo_text, devices=_rt4_devices_first_present)


def _rt4_sorted_spelling(text, devices):
    return [sorted(g) for g in _rt4_group_spelling(text, devices)]


@wrong(
    "device_groups",
    why="each group keeps the order the spelling lists its devices (the order a gather "
    "concatenates); this sorts every group as if it were a set; wrong on explicit "
    "`replica_groups={{3,0},{2,1}}` and on `mesh['a'=2,'b'=2] {'b','a'}` ([[0,2,1,3]] "
    "expected, [[0,1,2,3]] given)",
)
def _rt4_device_groups_sorted(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt4_groups(hlo_text, spelling=_rt4_sorted_spelling)


def _rt4_mesh_order_spelling(text, devices):
    text = text.strip()
    if not text.startswith("mesh"):
        return _rt4_group_spelling(text, devices)
    m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
    axes = [a for a, _ in re.findall(r"'(\w+)'=(\d+)", m.group(1))]
    named = set(re.findall(r"'(\w+)'", m.group(2)))
    in_mesh_order = ",".join(f"'{a}'" for a in axes if a in named)
    return _rt4_group_spelling(f"mesh[{m.group(1)}] {{{in_mesh_order}}}", devices)


@wrong(
    "device_groups",
    why="mesh-axes groups list devices with the axes in the order the braces name them, the "
    "first major; this keeps the mesh's own axis order; wrong on "
    "`mesh['a'=2,'b'=4] {'b','a'}` (an all_gather over ('b','a')): [[0,4,1,5,2,6,3,7]] "
    "expected, [[0,1,2,3,4,5,6,7]] given",
)
def _rt4_device_groups_mesh_order(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt4_groups(hlo_text, spelling=_rt4_mesh_order_spelling)


# ---- task 5: collective_bytes ----------------------------------------------------------------

_rt4_WIDTHS = {
    "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32, "s64": 64, "f64": 64, "c64": 64, "c128": 128,
}  # fmt: skip


def _rt4_table_bits(dtype):
    return _rt4_WIDTHS.get(dtype, 32)


def _rt4_collective_bytes(hlo_text, key=None, skip_scalars=False, bits=_rt4_bits):
    module = parse_hlo(hlo_text)
    seen = set()
    out: dict[str, float] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode not in _rt4_COLLECTIVES:
                continue
            channel = inst.attribute("channel_id")
            k = key(inst) if key else (channel if channel is not None else ("solo", id(inst)))
            if k in seen:
                continue
            seen.add(k)
            out[inst.opcode] = out.get(inst.opcode, 0) + _rt4_bytes_of(
                Shape(inst.shape), skip_scalars, bits
            )
    return {k: int(v) for k, v in out.items()}


@wrong(
    "collective_bytes",
    why="the width comes from the dtype's bit width; this looks it up in a table of the "
    "usual 16 types and takes 4 bytes for any other; wrong on an all-gather of f8e4m3fn "
    "(1 byte), f8e5m2, u64 (8 bytes) or s2 elements",
)
def _rt4_collective_bytes_width_table(hlo_text: str) -> dict[str, int]:
    return _rt4_collective_bytes(hlo_text, bits=_rt4_table_bits)


@wrong(
    "collective_bytes",
    why="a collective without a channel_id is one of its own; this merges copies by "
    "(opcode, channel_id, shape), so two cross-replica all-reduces of the same shape count "
    "once; wrong on a replica_count=4 module with two `f32[1024]` all-reduces without "
    "channel_id (gradients of two equal biases): 8192 bytes, not 4096",
)
def _rt4_collective_bytes_channelless_by_shape(hlo_text: str) -> dict[str, int]:
    return _rt4_collective_bytes(
        hlo_text, key=lambda i: (i.opcode, i.attribute("channel_id"), Shape(i.shape).dims)
    )


@wrong(
    "collective_bytes",
    why="a result's bytes are all its elements' (a tuple: every element); this skips scalar "
    "(rank-0) results and tuple elements, taking them for the u32[] sync flags of the TPU "
    "wrappers; wrong on an all-reduce of a scalar loss `f32[] all-reduce(...)` (4 bytes) and "
    "a tuple all-reduce (f32[128], f32[])",
)
def _rt4_collective_bytes_no_scalars(hlo_text: str) -> dict[str, int]:
    return _rt4_collective_bytes(hlo_text, skip_scalars=True)


# ---- task 6: padded_bytes --------------------------------------------------------------------


@wrong(
    "padded_bytes",
    why="the first tile covers as many minor dimensions as it has sizes; this handles 1- and "
    "2-size tiles only (uses the last two sizes), so a 3-size tile leaves the third-minor "
    "dimension unpadded; wrong on `f32[3,5,7]{2,1,0:T(2,8,128)}`: 4*8*128*4 = 16384 bytes, "
    "not 12288",
)
def _rt4_padded_bytes_two_tile_sizes(shape_text: str) -> int:
    return _rt4_padded(shape_text, first_tile_sizes=2)


@wrong(
    "padded_bytes",
    why="bytes per element come from the dtype's bit width; this uses a table of the common "
    "types and 4 bytes for any other; wrong on `f8e4m3fn[9,130]{1,0:T(8,128)(4,1)}` "
    "(16*256*1 = 4096, not 16384) and `u64[7]{0:T(256)}`",
)
def _rt4_padded_bytes_width_table(shape_text: str) -> int:
    return _rt4_padded(shape_text, bits=_rt4_table_bits)


def _rt4_np_prod(dims):
    return np.prod(np.array(dims, dtype=np.int64))


@wrong(
    "padded_bytes",
    why="the size is an exact integer; this multiplies the padded dims with np.prod in int64, "
    "which wraps around for huge buffers; wrong on `f32[4294967296,4294967296]{1,0:T(8,128)}` "
    "(2**66 bytes, np.prod(dims)*32 overflows to 0)",
)
def _rt4_padded_bytes_int64(shape_text: str) -> int:
    return _rt4_padded(shape_text, prod=_rt4_np_prod)


# ---- task 7: prefetched_parameters -----------------------------------------------------------


def _rt4_moved(hlo_text, every=False, space=lambda t: "S(1)" in t, through=()):
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations if every else (module.entry,):
        for inst in comp.instructions:
            if inst.opcode not in ("copy-start", "copy") or not inst.operands:
                continue
            src = comp.instruction(inst.operands[0])
            while src is not None and src.opcode in through and src.operands:
                src = comp.instruction(src.operands[0])
            if src is None or src.opcode != "parameter":
                continue
            shape = Shape(inst.shape)
            dest = shape.elements[0] if shape.is_tuple else shape
            if not space(dest.layout or ""):
                continue
            number = (
                int(src.payload)
                if src.payload
                else int(re.search(r"\d+", src.attributes_text).group())
            )
            if inst.opcode == "copy":
                out[number] = "copy"
            elif inst.attribute("cross_program_prefetch_index") is not None:
                out[number] = "cross-program prefetch"
            else:
                out[number] = "prefetch"
    return out


@wrong(
    "prefetched_parameters",
    why="ENTRY parameters only; this scans every computation, so a `copy` of a while body's "
    "parameter(0) into S(1) (or a copy-start in a called computation) is reported as "
    "parameter 0 of the program; wrong on a module whose while body copies its loop state "
    "into S(1) while ENTRY moves nothing: {} expected",
)
def _rt4_prefetched_parameters_every_computation(hlo_text: str) -> dict[int, str]:
    return _rt4_moved(hlo_text, every=True)


@wrong(
    "prefetched_parameters",
    why="only memory space S(1) counts; this takes any memory space annotation S(n) as the "
    "fast memory; wrong on a copy-start of a parameter into host memory "
    "`f32[8,128]{1,0:T(8,128)S(5)}` (host offloading): it is not in S(1) and must be left out",
)
def _rt4_prefetched_parameters_any_space(hlo_text: str) -> dict[int, str]:
    return _rt4_moved(hlo_text, space=lambda t: re.search(r"S\(\d+\)", t) is not None)


@wrong(
    "prefetched_parameters",
    why="the operand must be a parameter; this follows bitcasts and get-tuple-elements back "
    "to a parameter, so a copy-start of `get-tuple-element(parameter(0)), index=1` of a tuple "
    "parameter, or of a bitcast of parameter(2), is reported; wrong on such a module: that "
    "copy's operand is no parameter, {} expected",
)
def _rt4_prefetched_parameters_through_views(hlo_text: str) -> dict[int, str]:
    return _rt4_moved(hlo_text, through=("bitcast", "get-tuple-element", "reshape"))


# ---- task 8: predict_layer_flops -------------------------------------------------------------


def _rt4_per_element(rows: int, k: int, cols: int) -> int:
    """libtpu 0.0.50.1, measured: a k=1 dot is a multiply (1 flop), a matrix-vector block a
    multiply and a reduce (2k-1), any other block 2k; then bias add and relu, one each."""
    if k == 1:
        return 3
    if rows == 1 or cols == 1:
        return 2 * k + 1
    return 2 * k + 2


@wrong(
    "predict_layer_flops",
    why="the contract asks for libtpu's count; this is the textbook block*(2k+2), which libtpu "
    "0.0.50.1 does not give when the block is a single row or column or k == 1 (it rewrites "
    "the dot into multiply+reduce / multiply): wrong on m=2, k=8, n=8, data=model=2 (libtpu "
    "68 flops, this 72) and on m=64, k=1, n=128, data=model=2 (libtpu 6144, this 8192). NB "
    "XLA:CPU gives 72 on the first, so the CPU fallback cannot see it",
)
def _rt4_predict_layer_flops_textbook(m: int, k: int, n: int, data: int, model: int) -> int:
    return (m // data) * (n // model) * (2 * k + 2)


@wrong(
    "predict_layer_flops",
    why="flops are an exact integer; this divides with `/` (sizes divide evenly, so it looks "
    "harmless) and rounds a float at the end: wrong once the count passes 2**53, e.g. "
    "m=k=n=999_999, data=model=1 (off by 128)",
)
def _rt4_predict_layer_flops_float(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m / data, n / model
    return int(rows * cols * _rt4_per_element(int(rows), k, int(cols)))


@wrong(
    "predict_layer_flops",
    why="exact integer; this multiplies in numpy int64, which wraps for huge layers; wrong on "
    "m=n=2**32, k=2**10, data=model=1 (2**64*2050 flops; int64 wraps)",
)
def _rt4_predict_layer_flops_int64(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    block = np.int64(rows) * np.int64(cols)
    return int(block * np.int64(_rt4_per_element(rows, k, cols)))


@wrong(
    "predict_layer_flops",
    why="knows libtpu's matrix-vector rewrite (2k-1 per element for a one-row or one-column "
    "block) but not the k == 1 one, where libtpu counts the dot as a multiply: wrong on "
    "m=64, k=1, n=128, data=model=2 (libtpu 6144 = 2048*3, this 8192)",
)
def _rt4_predict_layer_flops_no_k1(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    per = 2 * k + 1 if (rows == 1 or cols == 1) and k > 1 else 2 * k + 2
    return rows * cols * per


# ---- task 9: gather_free_specs ---------------------------------------------------------------


@wrong(
    "gather_free_specs",
    why="the budget caps argument bytes at x's plus HALF the replicated weights; replicated "
    "weights gather nothing but take all of them; wrong on the stated 2x2 mesh program "
    "(memory_analysis argument bytes: x + 2*256*1024*2 per device)",
)
def _rt4_gather_free_specs_replicated() -> tuple[P, P]:
    return P(None, None), P(None, None)


@wrong(
    "gather_free_specs",
    why="splitting the hidden units over 'data' (the axis x's rows use) leaves each device "
    "needing hidden units computed from rows it does not hold, so XLA moves x or the weights "
    "(all-gather / collective-permute); wrong on the stated program",
)
def _rt4_gather_free_specs_data_axis() -> tuple[P, P]:
    return P(None, "data"), P("data", None)


@wrong(
    "gather_free_specs",
    why="w1 split by rows and w2 by columns (the specs swapped) makes the second matmul's "
    "output columns split over 'model', and the output P('data', None) then needs an "
    "all-gather; wrong on the stated program",
)
def _rt4_gather_free_specs_swapped() -> tuple[P, P]:
    return P("model", None), P(None, "model")


# ---- task 10: predict_allreduce_bytes --------------------------------------------------------


@wrong(
    "predict_allreduce_bytes",
    why="bytes are an exact integer; this computes batch / data with float division and "
    "int() at the end: wrong past 2**53, e.g. batch=3**33, width=3**5, hidden=4, data=1, "
    "model=2, itemsize=2 (off by 178)",
)
def _rt4_predict_allreduce_bytes_float(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return int(batch / data * width * itemsize)


@wrong(
    "predict_allreduce_bytes",
    why="exact integer; np.prod in int64 wraps for huge arrays: wrong on batch=2**40, "
    "width=2**30, hidden=2, data=1, model=2, itemsize=8 (2**73 bytes)",
)
def _rt4_predict_allreduce_bytes_int64(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return int(np.prod([batch // data, width, itemsize]))


@wrong(
    "predict_allreduce_bytes",
    why="bytes are the all-reduce's result, the output block [batch/data, width]; this "
    "counts a ring all-reduce's traffic, 2*(model-1)/model of it; equal when model == 2 "
    "(every 2x2 case), wrong on model=4: batch=64, width=128, hidden=256, data=1, model=4, "
    "itemsize=4 gives 49152, not 32768",
)
def _rt4_predict_allreduce_bytes_ring(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    result = (batch // data) * width * itemsize
    return result * 2 * (model - 1) // model


# ---- task 11: step_donation ------------------------------------------------------------------


@wrong(
    "step_donation",
    why="the batch must stay valid; donating everything meets the alias/peak budget (the "
    "batch is not aliased, jax only warns) but breaks the promise: wrong on the stated "
    "sgd_step, where jax marks the batch arrays donated",
)
def _rt4_step_donation_all() -> tuple[int, ...]:
    return (0, 1, 2)


@wrong(
    "step_donation",
    why="negative numbers count from the end of (params, momentum, batch): -1 is the batch, "
    "not momentum; a learner counting 'the last two state arguments' as (-2, -1) donates "
    "momentum and the batch, and params stay undonated; wrong on the stated sgd_step",
)
def _rt4_step_donation_negative() -> tuple[int, ...]:
    return (-2, -1)


@wrong(
    "step_donation",
    why="aliased bytes must equal params AND momentum bytes; donating the params only halves "
    "the saving; wrong on the stated sgd_step (alias = 2 MiB + 1 MiB of params only)",
)
def _rt4_step_donation_params_only() -> tuple[int, ...]:
    return (0,)
