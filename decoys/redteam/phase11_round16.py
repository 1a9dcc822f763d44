"""Red team, phase 11, round 16: wrong answers written from the contract only.

Kinds of mistakes not tried in rounds 1-15: the toolkit's own notion of a fusion or a
collective taken for the contract's (query.fusions walks nested fusions, COLLECTIVE_OPCODES
holds the -start ops and collective-broadcast), a marker matched by a substring shared by the
start and the done, a seen-set that also remembers "no channel", prefix matching of opcodes,
tile sizes zipped in printed order, an index of 0 read as false, a block-size test by area,
and mesh axes taken in alphabetical order.
"""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo, query
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt16_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt16_BITS = {
    "pred": 8, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16,
    "f16": 16, "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64,
    "c64": 64, "c128": 128, "f8e4m3fn": 8, "f8e5m2": 8, "f8e4m3fnuz": 8, "f8e5m2fnuz": 8,
    "f8e4m3b11fnuz": 8, "f8e4m3": 8, "f8e3m4": 8, "f4e2m1fn": 4, "f8e8m0fnu": 8,
}  # fmt: skip
_rt16_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_rt16_MOVERS = {
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call", *_rt16_KINDS,
}  # fmt: skip


def _rt16_shape_text(inst):
    return inst.shape if isinstance(inst.shape, str) else inst.shape.text


def _rt16_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt16_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt16_BITS[shape.dtype] // 8


def _rt16_marked(module, inst, target, substring=False):
    if inst.opcode != "fusion" or "kCustom" not in (inst.attribute("kind") or ""):
        return None
    comps = reachable(module, inst.called_computations)
    found = False
    for c in comps:
        for i in c:
            if i.opcode != "custom-call":
                continue
            raw = (i.attribute("custom_call_target") or "").strip('"')
            if (target in raw) if substring else (raw == target):
                found = True
    if not found:
        return None
    for c in comps:
        for i in c:
            if i.opcode in _rt16_KINDS:
                return i.opcode
    return None


# ---------------------------------------------------------------- async_collectives


@wrong(
    "async_collectives",
    why="Clause 'a custom-call with custom_call_target=\"AsyncCollectiveStart\"': recognises the "
    "TPU wrapper by the substring 'AsyncCollective' (the prefix both markers share), so the done "
    "fusions, whose bodies hold AsyncCollectiveDone, are reported as starts too; on "
    "programs.HANDWRITTEN_TPU it adds finish.a and finish.b to {launch.a, launch.b}",
)
def _rt16_async_collectives_marker_prefix(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        kind = _rt16_marked(module, inst, "AsyncCollective", substring=True)
        if kind is not None:
            out[inst.name] = kind
        elif inst.opcode.endswith("-start") and inst.opcode not in ("copy-start", "async-start"):
            out[inst.name] = inst.opcode[: -len("-start")]
        elif inst.opcode == "async-start":
            for c in reachable(module, inst.called_computations):
                hit = next((i.opcode for i in c if i.opcode in _rt16_KINDS), None)
                if hit:
                    out[inst.name] = hit
                    break
    return out


# ---------------------------------------------------------------- overlapped_work


def _rt16_channel_in(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt16_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


@wrong(
    "overlapped_work",
    why="Clause 'leaving out those that do no work: get-tuple-element, bitcast, tuple, "
    "parameter, constant': tells them by the name XLA gives them (get-tuple-element.12, "
    "bitcast.3, constant.7, param.2) instead of the opcode; names say nothing: on "
    "programs.HANDWRITTEN_TPU the window of launch.b keeps the constant %two, the parameters "
    "%x, %w and the get-tuple-elements %b.0, %b.1, %b.2, %o.1, %o.2 (expected ['overlap'])",
)
def _rt16_overlapped_work_names_as_opcodes(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    prefixes = ("get-tuple-element", "bitcast", "tuple", "param", "constant", "arg", "Arg_")
    out = {}
    for j, inst in enumerate(entry):
        done = None
        if _rt16_marked(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt16_channel_in(module, inst)
            for other in entry[j + 1 :]:
                if (
                    _rt16_marked(module, other, "AsyncCollectiveDone") is not None
                    and _rt16_channel_in(module, other) == ch
                ):
                    done = other
                    break
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            want = inst.opcode[: -len("-start")] + "-done"
            done = next(
                (o for o in entry[j + 1 :] if o.opcode == want and inst.name in o.operands), None
            )
        else:
            continue
        if done is None:
            continue
        out[inst.name] = [
            i.name for i in entry[j + 1 : pos[done.name]] if not i.name.startswith(prefixes)
        ]
    return out


# ---------------------------------------------------------------- matmul_fusions


@wrong(
    "matmul_fusions",
    why="Clause 'For every ENTRY fusion': uses xla_inspect.query.fusions(), which lists the "
    "fusions of EVERY computation, nested ones too, without filtering on Fusion.computation; "
    "a convolution fusion nested inside an ENTRY fusion (recorded/fsdp4_v5e.hlo's "
    "async_collective_fusion threads a nested kOutput convolution fusion) gets a key of its own",
)
def _rt16_matmul_fusions_query_fusions_all_levels(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for f in query.fusions(module):
        if f.opcodes.get("convolution", 0) == 0:
            continue
        out[f.name] = sorted(o for o in f.opcodes if o != "convolution" and o not in _rt16_MOVERS)
    return out


@wrong(
    "matmul_fusions",
    why="Clause 'leaving out ... custom-call and the collectives': drops the collectives by "
    "prefix (all-*, collective-*, reduce* for reduce-scatter), which also drops the reduce, "
    "reduce-window and reduce-precision fused next to a matmul; on recorded/mlp_grad_v5e.hlo "
    "fusion.18 gives ['add', 'maximum', 'multiply', 'subtract'] instead of ['add', 'maximum', "
    "'multiply', 'reduce', 'subtract'] (fusion.17 loses its 'reduce' too)",
)
def _rt16_matmul_fusions_prefix_collectives(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    movers = _rt16_MOVERS - set(_rt16_KINDS)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        ops = {i.opcode for c in reachable(module, inst.called_computations) for i in c}
        if "convolution" not in ops:
            continue
        out[inst.name] = sorted(
            o
            for o in ops
            if o != "convolution"
            and o not in movers
            and not o.startswith(("all-", "collective-", "reduce"))
        )
    return out


# ---------------------------------------------------------------- device_groups


def _rt16_groups(text, n, alphabetical=False):
    text = text.strip()
    if text.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
        axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m.group(1).split(",")]
        names = [a for a, _ in axes]
        chosen = [x.strip("' ") for x in m.group(2).split(",") if x.strip("' ")]
        if alphabetical:
            chosen = sorted(set(chosen))
        arr = np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])
        order = [k for k, a in enumerate(names) if a not in chosen] + [
            names.index(a) for a in chosen
        ]
        size = math.prod(dict(axes)[a] for a in chosen)
        return arr.transpose(order).reshape(-1, size).tolist()
    if text.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        g, s = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = arr.transpose([int(p) for p in m.group(4).split(",")])
        return arr.reshape(g, s).tolist()
    inner = text[1:-1].strip()
    if not inner:
        return [list(range(n))]
    return [[int(v) for v in p.split(",") if v.strip()] for p in re.findall(r"\{([^{}]*)\}", inner)]


@wrong(
    "device_groups",
    why="Clause 'in the order the spelling lists them (the order a gather concatenates)': keeps "
    "the named mesh axes in a set and walks it sorted, i.e. in alphabetical order, not the order "
    "the braces list them; right whenever the braces are alphabetical (every GROUP_SPELLINGS "
    "mesh case), wrong on mesh['a'=2,'b'=2] {'b','a'}: [[0,1,2,3]] instead of [[0,2,1,3]], and "
    "on mesh['y'=2,'x'=2] {'y','x'}: [[0,2,1,3]] instead of [[0,1,2,3]]",
)
def _rt16_device_groups_axes_alphabetical(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    out = {}
    for comp in module.computations:
        for inst in comp:
            rg = inst.attribute("replica_groups")
            ch = inst.attribute("channel_id")
            if rg is None or ch is None:
                continue
            out[int(ch)] = _rt16_groups(rg, n, alphabetical=True)
    return out


# ---------------------------------------------------------------- collective_bytes


@wrong(
    "collective_bytes",
    why="Clause 'one without a channel_id is a collective of its own': dedupes with one seen-set "
    "keyed by attribute('channel_id'), None included, so after the first channel-less "
    "collective every later one is taken for a copy of it; on programs.CROSS_REPLICA the "
    "all-reduce bf16[8,4] and the all-gather s32[8,3] are dropped: all-reduce 64+24*4=160 "
    "instead of 224, no all-gather at all instead of 96",
)
def _rt16_collective_bytes_none_is_a_channel(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out = {}
    seen = set()
    for comp in module.computations:
        for i in comp:
            if i.opcode not in _rt16_KINDS:
                continue
            ch = i.attribute("channel_id")
            if ch in seen:
                continue
            seen.add(ch)
            out[i.opcode] = out.get(i.opcode, 0) + _rt16_bytes_of(_rt16_shape_text(i))
    return out


@wrong(
    "collective_bytes",
    why="Clause 'Only those five opcodes count': takes the toolkit's "
    "xla_inspect.query.COLLECTIVE_OPCODES for 'the collectives', which also holds "
    "all-gather-start, all-reduce-start, collective-permute-start, collective-broadcast and "
    "ragged-all-to-all; on programs.HANDWRITTEN_ASYNC it adds keys 'all-gather-start': 2560 "
    "(its tuple) and 'collective-permute-start': 8200 to the right {'all-reduce': 4096}",
)
def _rt16_collective_bytes_toolkit_opcodes(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out = {}
    seen = set()
    for comp in module.computations:
        for i in comp:
            if i.opcode not in query.COLLECTIVE_OPCODES:
                continue
            ch = i.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            shape = Shape(_rt16_shape_text(i))
            elems = shape.elements if shape.is_tuple else (shape,)
            b = sum(_rt16_bytes_of(e.text) for e in elems if e.dtype in _rt16_BITS)
            out[i.opcode] = out.get(i.opcode, 0) + b
    return out


# ---------------------------------------------------------------- padded_bytes


@wrong(
    "padded_bytes",
    why="Clause 'T(8,128): 128 along the most minor, 8 along the next': zips the tile sizes in "
    "the order they are printed with minor_to_major, so the FIRST size pads the most minor "
    "dimension; right for square tiles and 1-D tiles, wrong on f32[1000,300]{0,1:T(8,128)}: "
    "1000*384*4 = 1536000 instead of 1024*304*4 = 1245184",
)
def _rt16_padded_bytes_tile_printed_order(shape_text: str) -> int:
    shape = Shape(shape_text)
    bits = _rt16_BITS[shape.dtype]
    dims = list(shape.dims)
    m = re.search(r":\s*T\(([\d,]+)\)", shape_text)
    if m:
        tile = [int(v) for v in m.group(1).split(",")]
        mtm = [int(v) for v in re.search(r"\{([\d,]*)", shape_text).group(1).split(",") if v]
        for t, d in zip(tile, mtm):
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * bits // 8


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="Clause 'a copy-start with a cross_program_prefetch_index is the cross-program prefetch': "
    "tests int(cross_program_prefetch_index or 0) for truth, so the one index XLA prints, 0, reads "
    "as 'no index'; on programs.HANDWRITTEN_PREFETCH parameter 2 gives 'prefetch' instead of "
    "'cross-program prefetch'",
)
def _rt16_prefetched_parameters_index_zero_false(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    params = {i.name: int(i.payload) for i in entry if i.opcode == "parameter"}
    out = {}
    for i in entry:
        if i.opcode not in ("copy-start", "copy") or not i.operands or i.operands[0] not in params:
            continue
        shape = Shape(_rt16_shape_text(i))
        moved = shape.elements[0] if shape.is_tuple else shape
        if "S(1)" not in moved.text:
            continue
        if i.opcode == "copy":
            kind = "copy"
        elif int(i.attribute("cross_program_prefetch_index") or 0):
            kind = "cross-program prefetch"
        else:
            kind = "prefetch"
        out[params[i.operands[0]]] = kind
    return out


# ---------------------------------------------------------------- predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="Clause 'a matmul when a device's output block has two or more rows and two or more "
    "columns': tests the block's AREA (rows*cols >= 4, 'at least a 2x2 block'), so a 1 x 4 or "
    "4 x 1 block is counted as a matmul; the README's own case m=2,k=8,n=8 on 2 x 2 "
    "(blocks 1 x 4) gives 72 instead of 68",
)
def _rt16_predict_layer_flops_block_area(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif r * c >= 4:
        dot = 2 * r * c * k
    else:
        dot = r * c * k + r * c * (k - 1)
    return dot + 2 * r * c


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="Clause 'x [batch, width] split P('data', None)' and 'sums over model': divides the rows "
    "by the size of the axis the all-reduce runs over (model) instead of the axis that splits "
    "them (data); right whenever data == model (every 2 x 2 case), wrong on "
    "batch=512,width=256,hidden=1024,data=2,model=4,itemsize=2: 128*256*2 = 65536 instead of "
    "256*256*2 = 131072",
)
def _rt16_predict_allreduce_bytes_rows_by_model(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch // model * width * itemsize
