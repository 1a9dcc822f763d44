"""Red-team wrong answers for phase 11, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt5_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt5_WIDTH_BITS = {
    "pred": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "s32": 32,
    "u32": 32,
    "s64": 64,
    "u64": 64,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
}


def _rt5_bits(dtype: str) -> int:
    if dtype in _rt5_WIDTH_BITS:
        return _rt5_WIDTH_BITS[dtype]
    found = re.match(r"[a-z]+(\d+)", dtype)
    return int(found.group(1)) if found else 8


# ---------------------------------------------------------------- shared helpers (not answers)


def _rt5_tpu_start_kind(
    module,
    inst,
    *,
    kinds=_rt5_KINDS,
    root_only=False,
    operand_only=False,
    marker="AsyncCollectiveStart",
):
    if inst.opcode != "fusion" or inst.attribute("kind") != "kCustom":
        return None
    for comp in reachable(module, inst.called_computations):
        markers = [
            i
            for i in comp.instructions
            if i.opcode == "custom-call" and marker in (i.attribute("custom_call_target") or "")
        ]
        if root_only:
            markers = [i for i in markers if i.is_root]
        if not markers:
            continue
        for i in comp.instructions:
            if i.opcode in kinds:
                if operand_only and i.name not in markers[0].operands:
                    continue
                return i.opcode
    return None


def _rt5_async_starts(hlo_text, **kw):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        kind = _rt5_tpu_start_kind(module, inst, **kw)
        if kind is not None:
            out[inst.name] = kind
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            base = inst.opcode.removesuffix("-start")
            if base in kw.get("kinds", _rt5_KINDS):
                out[inst.name] = base
    return out


def _rt5_channel_in(module, inst):
    for comp in reachable(module, inst.called_computations):
        for i in comp.instructions:
            if i.opcode in _rt5_KINDS:
                return i.attribute("channel_id"), i.opcode
    return None, None


_rt5_IDLE = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt5_overlapped(hlo_text, *, pair_by="channel", idle=_rt5_IDLE, generic_by_order=False):
    module = parse_hlo(hlo_text)
    entry = list(module.entry.instructions)
    position = {i.name: n for n, i in enumerate(entry)}
    starts = _rt5_async_starts(hlo_text)
    dones = []
    for inst in entry:
        if _rt5_tpu_start_kind(module, inst, marker="AsyncCollectiveDone") is not None:
            dones.append(inst)
    used = set()
    out = {}
    for name, kind in starts.items():
        start = entry[position[name]]
        done = None
        if start.opcode == "fusion":
            channel, _ = _rt5_channel_in(module, start)
            for d in dones:
                if d.name in used or position[d.name] < position[name]:
                    continue
                d_channel, d_kind = _rt5_channel_in(module, d)
                if (pair_by == "channel" and d_channel == channel) or (
                    pair_by == "kind" and d_kind == kind
                ):
                    done = d
                    break
        else:
            want = start.opcode.removesuffix("-start") + "-done"
            for d in entry[position[name] + 1 :]:
                if (
                    d.opcode == want
                    and d.name not in used
                    and (generic_by_order or name in d.operands)
                ):
                    done = d
                    break
        if done is None:
            continue
        used.add(done.name)
        lo, hi = position[name], position[done.name]
        out[name] = [i.name for i in entry[lo + 1 : hi] if i.opcode not in idle]
    return out


_rt5_MOVERS = {
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
    "convolution",
    *_rt5_KINDS,
}


def _rt5_matmul_fusions(
    hlo_text, *, depth=None, movers=_rt5_MOVERS, matmul=("convolution",), follow=None
):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode != "fusion":
            continue
        comps, frontier, seen, level = [], list(inst.called_computations), set(), 0
        while frontier and (depth is None or level < depth):
            nxt = []
            for name in frontier:
                if name in seen or module.computation(name) is None:
                    continue
                seen.add(name)
                comp = module.computation(name)
                comps.append(comp)
                for i in comp.instructions:
                    if follow is None:
                        nxt.extend(i.called_computations)
                    else:
                        nxt.extend(re.findall(rf"\b{follow}=%?([\w.\-]+)", i.attributes_text))
            frontier, level = nxt, level + 1
        ops = [i.opcode for c in comps for i in c.instructions]
        if any(op in matmul for op in ops):
            out[inst.name] = sorted({op for op in ops if op not in movers})
    return out


def _rt5_header_devices(module, *, product=True):
    replicas = int(module.attributes.get("replica_count", 1) or 1)
    partitions = int(module.attributes.get("num_partitions", 1) or 1)
    if product:
        return replicas * partitions
    return partitions if "num_partitions" in module.attributes else replicas


def _rt5_groups(spec, devices, *, sort_members=False, mesh_order=False):
    spec = spec.strip()
    if spec in ("{}", ""):
        return [list(range(devices))]
    if spec.startswith("mesh"):
        axes = re.findall(r"'(\w+)'\s*=\s*(\d+)", spec)
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        chosen = re.findall(r"'(\w+)'", spec.split("]", 1)[1])
        if mesh_order:
            chosen = sorted(chosen, key=names.index)
        arr = np.arange(math.prod(sizes)).reshape(sizes)
        rest = [names.index(a) for a in names if a not in chosen]
        arr = arr.transpose(rest + [names.index(a) for a in chosen])
        size = math.prod(sizes[names.index(a)] for a in chosen)
        return arr.reshape(-1, size).tolist()
    if spec.startswith("["):
        found = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
        shape = [int(v) for v in found.group(1).split(",")]
        dims = [int(v) for v in found.group(2).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if found.group(3):
            arr = arr.transpose([int(v) for v in found.group(3).split(",")])
        return arr.reshape(shape[0], -1).tolist()
    groups = [
        [int(v) for v in g.split(",") if v.strip()] for g in re.findall(r"\{([\d,\s]*)\}", spec)
    ]
    return [sorted(g) for g in groups] if sort_members else groups


def _rt5_replica_spec(inst):
    text = inst.attributes_text
    at = text.find("replica_groups=")
    if at < 0:
        return None
    rest = text[at + len("replica_groups=") :]
    if rest.startswith("mesh"):
        close = rest.index("}")
        return rest[: close + 1]
    if rest.startswith("["):
        return re.match(r"\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?", rest).group(0)
    depth = 0
    for n, ch in enumerate(rest):
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            return rest[: n + 1]
    return rest


def _rt5_device_groups(hlo_text, **kw):
    module = parse_hlo(hlo_text)
    devices = _rt5_header_devices(module, product=kw.pop("product", True))
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            spec = _rt5_replica_spec(inst)
            channel = inst.attribute("channel_id")
            if spec is None or channel is None:
                continue
            out.setdefault(int(channel), _rt5_groups(spec, devices, **kw))
    return out


def _rt5_collective_bytes(hlo_text, *, bits=_rt5_bits, count=None, channelless_key=None):
    module = parse_hlo(hlo_text)
    seen, out = set(), {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode not in _rt5_KINDS:
                continue
            channel = inst.attribute("channel_id")
            if channel is not None:
                key = ("ch", channel)
            elif channelless_key is not None:
                key = channelless_key(inst)
            else:
                key = ("own", comp.name, inst.name)
            if key in seen:
                continue
            seen.add(key)
            shape = Shape(inst.shape)
            parts = shape.elements if shape.is_tuple else (shape,)
            total = 0.0
            for s in parts:
                n = count(s) if count else math.prod(s.dims)
                total += n * bits(s.dtype) / 8
            out[inst.opcode] = out.get(inst.opcode, 0) + total
    return {k: int(v) if float(v).is_integer() else v for k, v in out.items()}


def _rt5_padded(shape_text, *, bits=_rt5_bits, max_tile=None, skip_ones=False):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    tiles = re.findall(r"T\(([\d,]+)\)", layout)
    if tiles:
        first = [int(v) for v in tiles[0].split(",")]
        if max_tile is not None:
            first = first[-max_tile:]
        order = shape.minor_to_major
        for size, dim in zip(reversed(first), order):
            if skip_ones and dims[dim] == 1:
                continue
            dims[dim] = -(-dims[dim] // size) * size
    return (
        math.prod(dims) * bits(shape.dtype) // 8
        if bits(shape.dtype) >= 8
        else (math.prod(dims) * bits(shape.dtype) + 7) // 8
    )


def _rt5_prefetched(hlo_text, *, any_element=False, everywhere=False):
    module = parse_hlo(hlo_text)
    comps = module.computations if everywhere else (module.entry,)
    out = {}
    for comp in comps:
        for inst in comp.instructions:
            if inst.opcode not in ("copy-start", "copy") or not inst.operands:
                continue
            src = comp.instruction(inst.operands[0])
            if src is None or src.opcode != "parameter":
                continue
            shape = Shape(inst.shape)
            if inst.opcode == "copy-start":
                text = shape.text if any_element else shape.elements[0].text
            else:
                text = shape.text
            if "S(1)" not in text:
                continue
            if inst.opcode == "copy":
                how = "copy"
            elif inst.attribute("cross_program_prefetch_index") is not None:
                how = "cross-program prefetch"
            else:
                how = "prefetch"
            out[int(src.payload)] = how
    return out


def _rt5_layer(m, k, n, data, model, *, single_col=True):
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif r == 1 or (single_col and c == 1):
        dot = r * c * (2 * k - 1)
    else:
        dot = 2 * r * c * k
    return dot + 2 * r * c


# ---------------------------------------------------------------- 1 async_collectives


@wrong(
    "async_collectives",
    why="the TPU start's body holds the AsyncCollectiveStart custom-call "
    "'root or not'; this only accepts it as the ROOT; wrong on a start fusion whose ROOT is "
    "a tuple(custom-call, ...) or a bitcast of the marker",
)
def _rt5_async_collectives_marker_must_be_root(hlo_text: str) -> dict[str, str]:
    return _rt5_async_starts(hlo_text, root_only=True)


@wrong(
    "async_collectives",
    why="every collective kind counts (reduce-scatter, all-to-all too); "
    "this knows only the kinds of the recordings and handwritten modules; wrong on a TPU "
    "start fusion wrapping a reduce-scatter or all-to-all, or an all-to-all-start op",
)
def _rt5_async_collectives_three_kinds(hlo_text: str) -> dict[str, str]:
    return _rt5_async_starts(hlo_text, kinds=("all-gather", "all-reduce", "collective-permute"))


@wrong(
    "async_collectives",
    why="the called computation 'holds' the collective anywhere; this "
    "takes only a collective that is a direct operand of the marker custom-call; wrong when "
    "the marker takes a bitcast/copy of the all-gather, or the collective sits in a "
    "computation nested under the start's body",
)
def _rt5_async_collectives_marker_operand(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode == "fusion" and inst.attribute("kind") == "kCustom":
            for name in inst.called_computations:
                comp = module.computation(name)
                if comp is None:
                    continue
                marks = [
                    i
                    for i in comp.instructions
                    if i.opcode == "custom-call"
                    and "AsyncCollectiveStart" in (i.attribute("custom_call_target") or "")
                ]
                for mk in marks:
                    for op in mk.operands:
                        src = comp.instruction(op)
                        if src is not None and src.opcode in _rt5_KINDS:
                            out[inst.name] = src.opcode
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            out[inst.name] = inst.opcode.removesuffix("-start")
    return out


# ---------------------------------------------------------------- 2 overlapped_work


@wrong(
    "overlapped_work",
    why="the done of a TPU start is the one with the same channel_id; this "
    "pairs a start with the next done of the same collective opcode; wrong on two async "
    "all-gathers (channels 1, 2) that finish in the other order: start1, start2, done2, done1",
)
def _rt5_overlapped_work_pair_by_kind(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_overlapped(hlo_text, pair_by="kind")


@wrong(
    "overlapped_work",
    why="only get-tuple-element, bitcast, tuple, parameter, constant are "
    "left out; this also drops copy, reshape and transpose as 'views'; wrong when a layout "
    "copy (copy of a parameter into {0,1}) or a reshape is scheduled inside a window",
)
def _rt5_overlapped_work_drops_copies(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_overlapped(hlo_text, idle=_rt5_IDLE | {"copy", "reshape", "transpose"})


@wrong(
    "overlapped_work",
    why="the done of an X-start op is the X-done that takes it as operand; "
    "this takes the first X-done printed after the start; wrong on two all-gather-starts "
    "whose dones come in reverse order (ag1-start, ag2-start, ag2-done, ag1-done)",
)
def _rt5_overlapped_work_first_done(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_overlapped(hlo_text, generic_by_order=True)


# ---------------------------------------------------------------- 3 matmul_fusions


@wrong(
    "matmul_fusions",
    why="called computations 'nested ones included' at any depth; this "
    "walks two levels only (the fusion's body and what it calls); wrong on a fusion whose "
    "convolution or epilogue sits three levels down (fusion -> fusion -> call/fusion)",
)
def _rt5_matmul_fusions_two_levels(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_matmul_fusions(hlo_text, depth=2)


@wrong(
    "matmul_fusions",
    why="the exclusion list is exhaustive; this also drops slice, "
    "dynamic-update-slice, pad, concatenate, reverse, gather as 'moving data'; "
    "wrong on a matmul fusion holding a pad or slice (odd shapes padded to the tile) or a "
    "concatenate",
)
def _rt5_matmul_fusions_drop_slices(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_matmul_fusions(
        hlo_text,
        movers=_rt5_MOVERS
        | {"slice", "dynamic-update-slice", "pad", "concatenate", "reverse", "gather", "iota"},
    )


@wrong(
    "matmul_fusions",
    why="a fusion counts when it holds a convolution; this also counts a "
    "plain dot (and keeps 'dot' out of the opcodes); wrong on an ENTRY fusion holding a dot "
    "and no convolution (the handwritten generic module's %scaled, or any GPU-style module)",
)
def _rt5_matmul_fusions_dot_too(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_matmul_fusions(
        hlo_text, matmul=("convolution", "dot"), movers=_rt5_MOVERS | {"dot"}
    )


@wrong(
    "matmul_fusions",
    why="all called computations count, reducers of reduce/all-reduce "
    "included; this follows only calls= (fusions), not to_apply=; wrong on a matmul fusion "
    "with a reduce whose reducer is a maximum (the maximum opcode goes missing)",
)
def _rt5_matmul_fusions_calls_only(hlo_text: str) -> dict[str, list[str]]:
    return _rt5_matmul_fusions(hlo_text, follow="calls")


# ---------------------------------------------------------------- 4 device_groups


@wrong(
    "device_groups",
    why="each group's devices in the order the spelling lists them; this "
    "sorts each explicit group; wrong on replica_groups={{3,0},{2,1}} or {{1,0,3,2}}",
)
def _rt5_device_groups_sorted_members(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt5_device_groups(hlo_text, sort_members=True)


@wrong(
    "device_groups",
    why="empty replica_groups={} is replica_count TIMES num_partitions; this "
    "uses num_partitions when printed, else replica_count; wrong on a header with "
    "replica_count=2, num_partitions=4 (8 devices, not 4)",
)
def _rt5_device_groups_partitions_or_replicas(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt5_device_groups(hlo_text, product=False)


@wrong(
    "device_groups",
    why="mesh groups list devices along the named axes in the order the "
    "braces list them (first major); this takes them in the mesh's order; wrong on "
    "mesh['a'=2,'b'=2] {'b','a'} -> [[0,2,1,3]], not [[0,1,2,3]]",
)
def _rt5_device_groups_mesh_order(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt5_device_groups(hlo_text, mesh_order=True)


# ---------------------------------------------------------------- 5 collective_bytes


@wrong(
    "collective_bytes",
    why="bytes = element count times width; this counts a scalar "
    "(rank-0) result as 0 elements; wrong on an all-reduce of f32[] (a loss) -> 4 bytes",
)
def _rt5_collective_bytes_scalar_zero(hlo_text: str) -> dict[str, int]:
    return _rt5_collective_bytes(hlo_text, count=lambda s: math.prod(s.dims) if s.dims else 0)


@wrong(
    "collective_bytes",
    why="width in bits of the dtype, pred is one byte; this reads the "
    "width from the digits in the dtype name and gives pred 1 bit; wrong on an all-reduce "
    "of pred[64] (8 bytes not 64)",
)
def _rt5_collective_bytes_pred_bit(hlo_text: str) -> dict[str, int]:
    def bits(dtype):
        found = re.search(r"(\d+)", dtype)
        return int(found.group(1)) if found else 1

    return _rt5_collective_bytes(hlo_text, bits=bits)


@wrong(
    "collective_bytes",
    why="an s4 element is half a byte; this uses numpy/ml_dtypes "
    "itemsize (int4 -> 1 byte) for every dtype; wrong on an all-gather of s4[256] or u4 "
    "(128 bytes, not 256)",
)
def _rt5_collective_bytes_itemsize(hlo_text: str) -> dict[str, int]:
    def bits(dtype):
        return max(8, _rt5_bits(dtype))

    return _rt5_collective_bytes(hlo_text, bits=bits)


@wrong(
    "collective_bytes",
    why="one without a channel_id is a collective of its own; this "
    "dedupes channel-less collectives by (opcode, shape, replica_groups); wrong on two "
    "identical cross-replica all-reduces in ENTRY (counts once, should count twice)",
)
def _rt5_collective_bytes_channelless_dedup(hlo_text: str) -> dict[str, int]:
    return _rt5_collective_bytes(
        hlo_text,
        channelless_key=lambda i: (i.opcode, i.shape.split("{")[0], i.attribute("replica_groups")),
    )


# ---------------------------------------------------------------- 6 padded_bytes


@wrong(
    "padded_bytes",
    why="bytes per element from the bit width (s4: half a byte); this "
    "rounds sub-byte types up to one byte; wrong on s4[8,128]{1,0:T(8,128)(4,1)} (512 not "
    "1024) or u4/s2",
)
def _rt5_padded_bytes_subbyte_one_byte(shape_text: str) -> int:
    return _rt5_padded(shape_text, bits=lambda d: max(8, _rt5_bits(d)))


@wrong(
    "padded_bytes",
    why="the first tile covers as many most-minor dims as it has sizes; "
    "this only handles 1- and 2-size tiles (keeps the last two sizes); wrong on a 3-size "
    "tile such as f32[3,5,129]{2,1,0:T(2,8,128)} (dim 0 padded to 4)",
)
def _rt5_padded_bytes_two_size_tiles(shape_text: str) -> int:
    return _rt5_padded(shape_text, max_tile=2)


@wrong(
    "padded_bytes",
    why="each tiled dimension is padded up to its tile size; this leaves "
    "size-1 dims alone ('degenerate, squeezed'); wrong on f32[1,128]{1,0:T(8,128)} "
    "(4096 bytes, not 512) or bf16[1,1000]",
)
def _rt5_padded_bytes_skip_unit_dims(shape_text: str) -> int:
    return _rt5_padded(shape_text, skip_ones=True)


# ---------------------------------------------------------------- 7 prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="for copy-start only the FIRST tuple element (the "
    "destination) must be in S(1); this looks for S(1) anywhere in the tuple; wrong on a "
    "copy-start evicting a parameter that lives in S(1) back to default memory "
    "(source element S(1), destination not)",
)
def _rt5_prefetched_parameters_any_element(hlo_text: str) -> dict[int, str]:
    return _rt5_prefetched(hlo_text, any_element=True)


@wrong(
    "prefetched_parameters",
    why="ENTRY parameters only; this scans every computation; "
    "wrong on a copy-start/copy into S(1) of parameter(0) of a while body or called "
    "computation (reported as ENTRY parameter 0)",
)
def _rt5_prefetched_parameters_everywhere(hlo_text: str) -> dict[int, str]:
    return _rt5_prefetched(hlo_text, everywhere=True)


@wrong(
    "prefetched_parameters",
    why="the operand must be a parameter; this follows bitcasts and "
    "get-tuple-elements back to a parameter; wrong on copy(bitcast(parameter(2))) into S(1) "
    "or a copy-start of a get-tuple-element of a tuple parameter",
)
def _rt5_prefetched_parameters_through_views(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    comp = module.entry
    out = {}
    for inst in comp.instructions:
        if inst.opcode not in ("copy-start", "copy") or not inst.operands:
            continue
        src = comp.instruction(inst.operands[0])
        while src is not None and src.opcode in ("bitcast", "get-tuple-element", "reshape"):
            src = comp.instruction(src.operands[0])
        if src is None or src.opcode != "parameter":
            continue
        shape = Shape(inst.shape)
        text = shape.elements[0].text if inst.opcode == "copy-start" else shape.text
        if "S(1)" not in text:
            continue
        if inst.opcode == "copy":
            out[int(src.payload)] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[int(src.payload)] = "cross-program prefetch"
        else:
            out[int(src.payload)] = "prefetch"
    return out


# ---------------------------------------------------------------- 8 predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="a single-row OR single-column block is a multiply and a "
    "reduce; this only checks for a single row; wrong on m=8, k=16, n=4, data=2, model=4 "
    "(block 4 x 1: correct 4*31 + 8 = 132; this gives 136)",
)
def _rt5_predict_layer_flops_rows_only(m: int, k: int, n: int, data: int, model: int) -> int:
    return _rt5_layer(m, k, n, data, model, single_col=False)


_rt5_LISTED = {
    (512, 256, 384, 2, 2): 2 * 256 * 192 * 256 + 2 * 256 * 192,
    (96, 200, 72, 2, 2): 2 * 48 * 36 * 200 + 2 * 48 * 36,
    (64, 128, 512, 4, 1): 2 * 16 * 512 * 128 + 2 * 16 * 512,
    (40, 24, 1024, 1, 4): 2 * 40 * 256 * 24 + 2 * 40 * 256,
    (8, 8, 8, 1, 1): 2 * 8 * 8 * 8 + 2 * 64,
    (2, 8, 8, 2, 2): 68,
    (64, 1, 128, 2, 2): 6144,
}


@wrong(
    "predict_layer_flops",
    why="the small-dot rules hold for every size; this knows the "
    "listed LAYER_CASES and counts 2*k per element otherwise; wrong on any unlisted "
    "single-row block, e.g. m=4, k=16, n=8, data=4, model=2 (correct 132; this gives 136)",
)
def _rt5_predict_layer_flops_table(m: int, k: int, n: int, data: int, model: int) -> int:
    key = (m, k, n, data, model)
    if key in _rt5_LISTED:
        return _rt5_LISTED[key]
    r, c = m // data, n // model
    return 2 * r * c * k + 2 * r * c


@wrong(
    "predict_layer_flops",
    why="'sizes may be of any size: an exact int'; this computes in "
    "floats (m / data ...) and rounds; wrong for huge sizes past 2**53, e.g. m=n=k=999999 "
    "on a 1 x 1 mesh",
)
def _rt5_predict_layer_flops_float(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m / data, n / model
    if k == 1:
        dot = r * c
    elif r == 1 or c == 1:
        dot = r * c * (2 * k - 1)
    else:
        dot = 2.0 * r * c * k
    return int(dot + 2 * r * c)


# ---------------------------------------------------------------- 9 gather_free_specs


@wrong(
    "gather_free_specs",
    why="no all-gather anywhere; splitting w1 AND w2 by columns leaves "
    "each device with some hidden units but w2 needs all of them: the hidden activations "
    "(or w2) are all-gathered; wrong on the stated 2 x 2 program",
)
def _rt5_gather_free_specs_both_columns() -> tuple[P, P]:
    return P(None, "model"), P(None, "model")


@wrong(
    "gather_free_specs",
    why="no all-gather; splitting the hidden units over both axes "
    "(4 ways) means a device's rows of x meet hidden units held by devices of the other "
    "'data' row: weights or activations are gathered; wrong on the stated program",
)
def _rt5_gather_free_specs_both_axes() -> tuple[P, P]:
    return P(None, ("data", "model")), P(("data", "model"), None)


@wrong(
    "gather_free_specs",
    why="no all-gather; splitting w1 by rows (the contraction) and w2 "
    "by columns gives partial sums then an output split by columns that must be gathered "
    "to P('data', None); wrong on the stated program",
)
def _rt5_gather_free_specs_rows_then_columns() -> tuple[P, P]:
    return P("model", None), P(None, "model")


# ---------------------------------------------------------------- 10 predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="bytes of the logical result in the arrays' own dtype; "
    "this assumes 2-byte floats are summed in f32 (itemsize at least 4); wrong on f16/bf16, "
    "e.g. (512, 256, 1024, 2, 2, 2): correct 131072; this gives 262144",
)
def _rt5_predict_allreduce_bytes_f32_accumulate(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch // data * width * max(itemsize, 4)


_rt5_AR_LISTED = {
    (512, 256, 1024, 2, 2, 2): 256 * 256 * 2,
    (128, 384, 512, 2, 2, 2): 64 * 384 * 2,
    (96, 200, 400, 2, 2, 4): 48 * 200 * 4,
    (64, 128, 256, 1, 4, 4): 64 * 128 * 4,
    (1024, 512, 2048, 1, 4, 2): 1024 * 512 * 2,
    (512, 256, 1024, 4, 1, 2): 0,
}


@wrong(
    "predict_allreduce_bytes",
    why="the result is the device's rows of the output; this knows "
    "ALLREDUCE_CASES and otherwise forgets the rows are split over 'data' "
    "(batch*width*itemsize); wrong on (256, 128, 512, 4, 2, 4): correct 32768; this gives "
    "131072",
)
def _rt5_predict_allreduce_bytes_table(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    key = (batch, width, hidden, data, model, itemsize)
    if key in _rt5_AR_LISTED:
        return _rt5_AR_LISTED[key]
    if model == 1:
        return 0
    return batch * width * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="bytes received = the logical result on one device; this "
    "counts what a ring all-reduce moves, 2*(model-1)/model of it; wrong on any model > 1, "
    "e.g. (512, 256, 1024, 1, 4, 4): correct 524288; this gives 786432",
)
def _rt5_predict_allreduce_bytes_ring(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    size = batch // data * width * itemsize
    return 2 * (model - 1) * size // model


# ---------------------------------------------------------------- 11 step_donation


@wrong(
    "step_donation",
    why="aliased bytes must equal params AND momentum bytes; donating only "
    "params leaves momentum unaliased; wrong on the stated sgd_step",
)
def _rt5_step_donation_params_only() -> tuple[int, ...]:
    return (0,)


@wrong(
    "step_donation",
    why="jax must donate no array of the batch; -1 counts from the end and "
    "is the batch (argument 2), not 'nothing'; wrong on the stated sgd_step",
)
def _rt5_step_donation_minus_one() -> tuple[int, ...]:
    return (0, 1, -1)


@wrong(
    "step_donation",
    why="the momentum is an output of the same shape and must be donated "
    "too; donating the momentum and the batch (thinking params are read after the step) "
    "aliases too little and donates the batch; wrong on the stated sgd_step",
)
def _rt5_step_donation_momentum_and_batch() -> tuple[int, ...]:
    return (1, 2)
