"""Red team, phase 11, round 15: wrong answers written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt15_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt15_BITS = {
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
    "f8e4m3fn": 8,
    "f8e5m2": 8,
    "f8e4m3fnuz": 8,
    "f8e5m2fnuz": 8,
    "f8e4m3b11fnuz": 8,
    "f8e4m3": 8,
    "f8e3m4": 8,
    "f4e2m1fn": 4,
    "f8e8m0fnu": 8,
}


def _rt15_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt15_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt15_BITS[shape.dtype] // 8


def _rt15_tpu_collective(module, inst, target):
    """The collective opcode inside a kCustom fusion holding custom-call `target`, or None."""
    if inst.opcode != "fusion" or "kCustom" not in (inst.attribute("kind") or ""):
        return None
    comps = reachable(module, inst.called_computations)
    marked = any(
        i.opcode == "custom-call" and target in (i.attribute("custom_call_target") or "")
        for c in comps
        for i in c
    )
    if not marked:
        return None
    for c in comps:
        for i in c:
            if i.opcode in _rt15_KINDS:
                return i.opcode
    return None


def _rt15_parse_groups(text, n, fortran=False, empty_all=False):
    text = text.strip()
    if text.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
        axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m.group(1).split(",")]
        names = [a for a, _ in axes]
        chosen = [x.strip("' ") for x in m.group(2).split(",") if x.strip("' ")]
        arr = np.arange(math.prod(s for _, s in axes)).reshape(
            [s for _, s in axes], order="F" if fortran else "C"
        )
        order = [k for k, a in enumerate(names) if a not in chosen] + [
            names.index(a) for a in chosen
        ]
        if empty_all and not chosen:
            return [arr.reshape(-1).tolist()]
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


def _rt15_device_groups(hlo_text, fortran=False, permutes=False, empty_all=False):
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))  # noqa: F841


_rt15_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt15_channel_in(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt15_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


def _rt15_windows(hlo_text):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    windows = []
    for j, inst in enumerate(entry):
        done = None
        if _rt15_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt15_channel_in(module, inst)
            for other in entry[j + 1 :]:
                if _rt15_tpu_collective(module, other, "AsyncCollectiveDone") is not None and (
                    _rt15_channel_in(module, other) == ch
                ):
                    done = other
                    break
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            want = inst.opcode[: -len("-start")] + "-done"
            for other in entry[j + 1 :]:
                if other.opcode == want and inst.name in other.operands:
                    done = other
                    break
        else:
            continue
        if done is None:
            continue
        windows.append((inst.name, entry[j + 1 : pos[done.name]]))
    return windows


_rt15_MOVERS = {
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
    *_rt15_KINDS,
}


# ---------------------------------------------------------------- wrong answers, round 15


def _rt15_flops(m, k, n, data, model, global_dims=False):
    r, c = m // data, n // model
    rows, cols = (m, n) if global_dims else (r, c)
    if k == 1:
        dot = r * c
    elif rows >= 2 and cols >= 2:
        dot = 2 * r * c * k
    else:
        dot = r * c * k + r * c * (k - 1)
    return dot + 2 * r * c


@wrong(
    "predict_layer_flops",
    why="Clause 'when a device's output block has two or more rows and two or more columns': "
    "tests the global m and n instead of the per-device block; m=2,k=8,n=8,data=2,model=2 "
    "(one-row blocks) gives 2*1*4*8+8=72 instead of 32+28+8=68",
)
def _rt15_predict_layer_flops_global_shape_branch(
    m: int, k: int, n: int, data: int, model: int
) -> int:
    return _rt15_flops(m, k, n, data, model, global_dims=True)


def _rt15_padded(shape_text, pred_bits=8):
    shape = Shape(shape_text)
    bits = pred_bits if shape.dtype == "pred" else _rt15_BITS[shape.dtype]
    dims = list(shape.dims)
    m = re.search(r":\s*T\(([\d,]+)\)", shape_text)
    if m:
        tile = [int(v) for v in m.group(1).split(",")]
        mtm = [int(v) for v in re.search(r"\{([\d,]*)", shape_text).group(1).split(",") if v]
        for t, d in zip(reversed(tile), mtm):
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * bits // 8


@wrong(
    "padded_bytes",
    why="Clause 'pred: one byte': counts pred as one bit like a packed bool; "
    "pred[8,128]{1,0:T(8,128)} gives 128 instead of 1024",
)
def _rt15_padded_bytes_pred_one_bit(shape_text: str) -> int:
    return _rt15_padded(shape_text, pred_bits=1)


def _rt15_groups(text, n, plain_transpose=False):
    text = text.strip()
    if text.startswith("mesh"):
        return _rt15_parse_groups(text, n)
    if text.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        g, s = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = (
                arr.T if plain_transpose else arr.transpose([int(p) for p in m.group(4).split(",")])
            )
        return arr.reshape(g, s).tolist()
    return _rt15_parse_groups(text, n)


def _rt15_all_groups(hlo_text, plain_transpose=False):
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
            out[int(ch)] = _rt15_groups(rg, n, plain_transpose)
    return out


@wrong(
    "device_groups",
    why="Clause 'an iota list [G,S]<=[dims]T(perm)': applies the T as a plain reverse-all-axes "
    "transpose (arr.T), right for every 2-D T(1,0); [4,2]<=[2,2,2]T(0,2,1) should give "
    "{0,2},{1,3},{4,6},{5,7} but arr.T gives {0,4},{2,6},{1,5},{3,7}",
)
def _rt15_device_groups_iota_plain_T(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt15_all_groups(hlo_text, plain_transpose=True)


@wrong(
    "predict_allreduce_bytes",
    why="Clause 'Which array's shape is the all-reduce's result': sums the hidden activations "
    "[batch/data, hidden] rather than the output partial sums [batch/data, width]; "
    "batch=8,width=256,hidden=1024,data=2,model=2,itemsize=4 gives 16384 instead of 4096",
)
def _rt15_predict_allreduce_bytes_hidden_rows(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch // data * hidden * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="Clause 'the bytes each device receives' read as a ring all-reduce that each device "
    "receives the sum minus its own share: (model-1)/model of the block; batch=8,width=256,"
    "hidden=1024,data=2,model=2,itemsize=4 gives 2048 instead of 4096",
)
def _rt15_predict_allreduce_bytes_minus_own(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    block = batch // data * width * itemsize
    return block * (model - 1) // model


def _rt15_channel_any(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt15_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


@wrong(
    "overlapped_work",
    why="Clause 'The done of a TPU start is the kCustom fusion whose body holds AsyncCollectiveDone "
    "and the same collective': pairs the start with the first later ENTRY fusion holding a "
    "collective of the same channel_id, without the Done marker; in recorded/fsdp4_v5e.hlo the "
    "kOutput continuation fusion.9 also holds all-gather channel_id=8, so the window stops "
    "at fusion.9: ['copy-done'] instead of ['copy-done', 'fusion.9']",
)
def _rt15_overlapped_work_done_by_channel_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    out = {}
    for j, inst in enumerate(entry):
        end = None
        if _rt15_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt15_channel_any(module, inst)
            for t, other in enumerate(entry[j + 1 :], start=j + 1):
                if other.opcode == "fusion" and _rt15_channel_any(module, other) == ch:
                    end = t
                    break
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            want = inst.opcode[: -len("-start")] + "-done"
            for t, other in enumerate(entry[j + 1 :], start=j + 1):
                if other.opcode == want and inst.name in other.operands:
                    end = t
                    break
        else:
            continue
        if end is None:
            continue
        out[inst.name] = [i.name for i in entry[j + 1 : end] if i.opcode not in _rt15_NOWORK]
    return out


@wrong(
    "matmul_fusions",
    why="Clause 'For every ENTRY fusion whose called computations, nested ones included, hold a "
    "convolution': skips fusions whose bodies also hold a collective, taking them for async "
    "wrappers; in recorded/fsdp4_v5e.hlo fusion.9 holds convolution.14 (and a nested "
    "convolution fusion) next to a copy of all-gather channel 8, and is left out",
)
def _rt15_matmul_fusions_skip_collective_wrappers(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        ops = {i.opcode for c in comps for i in c}
        if "convolution" not in ops or ops & set(_rt15_KINDS):
            continue
        out[inst.name] = sorted(o for o in ops if o != "convolution" and o not in _rt15_MOVERS)
    return out


def _rt15_prefetch(hlo_text, print_order=False):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    params = {}
    for idx, i in enumerate(x for x in entry if x.opcode == "parameter"):
        number = idx if print_order else int(i.payload)
        params[i.name] = number
    out = {}
    for i in entry:
        if i.opcode not in ("copy-start", "copy") or not i.operands or i.operands[0] not in params:
            continue
        shape = Shape(i.shape) if isinstance(i.shape, str) else i.shape
        moved = shape.elements[0] if shape.is_tuple else shape
        if "S(1)" not in moved.text:
            continue
        if i.opcode == "copy":
            kind = "copy"
        elif i.attribute("cross_program_prefetch_index") is not None:
            kind = "cross-program prefetch"
        else:
            kind = "prefetch"
        out[params[i.operands[0]]] = kind
    return out


@wrong(
    "prefetched_parameters",
    why="Clause 'Use the number in parameter(N)': numbers the ENTRY parameters by the order their "
    "lines are printed, which matches N on most modules; a scheduled module may print them "
    "as parameter(0), parameter(4), parameter(3), ... (recorded/fsdp4_v6e.hlo order), so a "
    "copy of parameter(4) printed second is reported as 1",
)
def _rt15_prefetched_parameters_print_order(hlo_text: str) -> dict[int, str]:
    return _rt15_prefetch(hlo_text, print_order=True)


def _rt15_coll_bytes(hlo_text, exclude_own=False):
    module = parse_hlo(hlo_text)
    out = {}
    seen = set()
    for comp in module.computations:
        for i in comp:
            if i.opcode not in _rt15_KINDS:
                continue
            ch = i.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            b = _rt15_bytes_of(i.shape if isinstance(i.shape, str) else i.shape.text)
            if exclude_own and i.opcode == "all-gather":
                b -= sum(_rt15_bytes_of(s) for s in _rt15_operand_shapes(comp, i))
            out[i.opcode] = out.get(i.opcode, 0) + b
    return out


def _rt15_operand_shapes(comp, inst):
    by_name = {x.name: x for x in comp}
    res = []
    for o in inst.operands:
        s = by_name[o].shape
        res.append(s if isinstance(s, str) else s.text)
    return res


@wrong(
    "collective_bytes",
    why="Clause 'Bytes of data each device receives': for an all-gather subtracts the device's "
    "own shard (its operand), since it does not receive that; recorded/fsdp4_v5e.hlo's "
    "bf16[256,1024]->bf16[1024,1024] gathers count 1.5 MiB each instead of 2 MiB",
)
def _rt15_collective_bytes_minus_own_shard(hlo_text: str) -> dict[str, int]:
    return _rt15_coll_bytes(hlo_text, exclude_own=True)


@wrong(
    "async_collectives",
    why="Clause 'a custom-call with custom_call_target=\"AsyncCollectiveStart\"': tells a start "
    "from a done by its tuple result instead of the marker (a start hands back (operand, "
    "result, sync flags), a done the array); recorded/fsdp4_v5e.hlo's fusion.9 returns a tuple "
    "and holds a copy of all-gather channel 8 without any marker, and is reported as a start",
)
def _rt15_async_collectives_tuple_result(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        shape = Shape(inst.shape) if isinstance(inst.shape, str) else inst.shape
        if inst.opcode == "fusion" and shape.is_tuple:
            for c in reachable(module, inst.called_computations):
                hit = next((i.opcode for i in c if i.opcode in _rt15_KINDS), None)
                if hit:
                    out[inst.name] = hit
                    break
        elif inst.opcode.endswith("-start") and inst.opcode not in ("copy-start", "async-start"):
            out[inst.name] = inst.opcode[: -len("-start")]
    return out
