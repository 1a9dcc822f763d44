"""Red-team wrong answers for phase 11, round 14, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt14_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt14_BITS = {
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


def _rt14_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt14_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt14_BITS[shape.dtype] // 8


def _rt14_tpu_collective(module, inst, target):
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
            if i.opcode in _rt14_KINDS:
                return i.opcode
    return None


def _rt14_parse_groups(text, n, fortran=False, empty_all=False):
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


def _rt14_device_groups(hlo_text, fortran=False, permutes=False, empty_all=False):
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))  # noqa: F841


_rt14_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt14_channel_in(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt14_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


def _rt14_windows(hlo_text):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    windows = []
    for j, inst in enumerate(entry):
        done = None
        if _rt14_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt14_channel_in(module, inst)
            for other in entry[j + 1 :]:
                if _rt14_tpu_collective(module, other, "AsyncCollectiveDone") is not None and (
                    _rt14_channel_in(module, other) == ch
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


_rt14_MOVERS = {
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
    *_rt14_KINDS,
}


# ---------------------------------------------------------------- wrong answers, round 14


def _rt14_padded(shape_text, second_minor_adjacent=False):
    shape = Shape(shape_text)
    bits = _rt14_BITS[shape.dtype]
    dims = list(shape.dims)
    m = re.search(r":\s*T\(([\d,]+)\)", shape_text)
    if m:
        tile = [int(v) for v in m.group(1).split(",")]
        mtm = [int(v) for v in re.search(r"\{([\d,]*)", shape_text).group(1).split(",") if v]
        if second_minor_adjacent:
            # most minor from the layout, the next ones taken as the logical neighbours
            order = [(mtm[0] - j) % len(dims) for j in range(len(dims))]
        else:
            order = mtm
        for t, d in zip(reversed(tile), order):
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * bits // 8


@wrong(
    "padded_bytes",
    why="'the first tile covers as many of the most minor dimensions': reads "
    "the most minor dimension from the layout but takes the second-most-minor as its logical "
    "neighbour (index minor-1), right for every rank-2 layout; bf16[3,5,129]{2,0,1:T(4,128)(2,1)} "
    "pads dim 1 (5->8) instead of dim 0 (3->4): 3*8*256*2=12288 instead of 4*5*256*2=10240",
)
def _rt14_padded_bytes_adjacent_second_minor(shape_text: str) -> int:
    return _rt14_padded(shape_text, second_minor_adjacent=True)


@wrong(
    "predict_layer_flops",
    why="'a multiply and a reduce over k when the block is a single row or a "
    "single column': treats only a proper vector (1 x c or r x 1, the other side >= 2) as "
    "one and counts a 1 x 1 block as a matmul 2k; m=2,k=8,n=2 on 2x2: expects 8+7+2=17, gives 18",
)
def _rt14_predict_layer_flops_unit_block_matmul(
    m: int, k: int, n: int, data: int, model: int
) -> int:
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif (r == 1) != (c == 1):
        dot = r * c * k + r * c * (k - 1)
    else:
        dot = 2 * r * c * k
    return dot + 2 * r * c


@wrong(
    "device_groups",
    why="'[G,S]<=[dims]T(perm)': treats any T(...) as transposing the group "
    "matrix (arange(G*S).reshape(S,G).T), right for every 2-D [a,b]T(1,0) but not for more dims; "
    "[2,4]<=[2,2,2]T(1,0,2) is [[0,1,4,5],[2,3,6,7]], this gives [[0,2,4,6],[1,3,5,7]]",
)
def _rt14_device_groups_iota_transpose_groups(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    out = {}
    for comp in module.computations:
        for inst in comp:
            ch = inst.attribute("channel_id")
            rg = inst.attribute("replica_groups")
            if ch is None or rg is None or int(ch) in out:
                continue
            m = re.match(r"\s*\[(\d+),(\d+)\]<=\[([\d,]+)\]T\(", rg)
            if m:
                g, s = int(m.group(1)), int(m.group(2))
                out[int(ch)] = np.arange(g * s).reshape(s, g).T.tolist()
            else:
                out[int(ch)] = _rt14_parse_groups(rg, n)
    return out


def _rt14_starts(module):
    names = set()
    for inst in module.entry:
        if _rt14_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            names.add(inst.name)
        elif _rt14_tpu_collective(module, inst, "AsyncCollectiveDone") is not None:
            names.add(inst.name)
        elif inst.opcode.endswith(("-start", "-done")) and not inst.opcode.startswith("copy"):
            names.add(inst.name)
    return names


@wrong(
    "overlapped_work",
    why="'leaving out those that do no work: get-tuple-element, bitcast, tuple, "
    "parameter, constant' (only those): also leaves out the starts and dones of the other "
    "collectives, taking them for plumbing; in fsdp4_v5e the second all-gather's start fusion "
    "issued inside the first one's window disappears from it",
)
def _rt14_overlapped_work_drops_other_collectives(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    async_names = _rt14_starts(module)
    return {
        s: [i.name for i in between if i.opcode not in _rt14_NOWORK and i.name not in async_names]
        for s, between in _rt14_windows(hlo_text)
    }


@wrong(
    "overlapped_work",
    why="'leaving out those that do no work' (five opcodes only): also drops "
    "every custom-call, taking them for markers like AsyncCollectiveStart; a module whose window "
    "holds a real custom-call (a TopK, a Sharding-free cholesky, a host callback) loses it",
)
def _rt14_overlapped_work_drops_custom_calls(hlo_text: str) -> dict[str, list[str]]:
    return {
        s: [i.name for i in between if i.opcode not in _rt14_NOWORK | {"custom-call"}]
        for s, between in _rt14_windows(hlo_text)
    }


def _rt14_matmuls(hlo_text, holds, drop_bare=False):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        if not any(holds(i.opcode) for c in comps for i in c):
            continue
        ops = sorted(
            {
                i.opcode
                for c in comps
                for i in c
                if i.opcode != "convolution" and i.opcode not in _rt14_MOVERS
            }
        )
        if drop_bare and not ops:
            continue
        out[inst.name] = ops
    return out


@wrong(
    "matmul_fusions",
    why="'for every ENTRY fusion ... that holds a convolution': leaves out a "
    "matmul fusion with nothing else fused (a bare convolution, expected with []), reading the "
    "task as 'fusions that fused arithmetic into a matmul'",
)
def _rt14_matmul_fusions_drop_bare(hlo_text: str) -> dict[str, list[str]]:
    return _rt14_matmuls(hlo_text, lambda op: op == "convolution", drop_bare=True)


@wrong(
    "matmul_fusions",
    why="'hold a convolution': tests the opcode by the substring 'conv', which "
    "also matches 'convert'; a kLoop fusion holding a convert and a multiply (no convolution) "
    "is reported as a matmul fusion {name: ['multiply']}",
)
def _rt14_matmul_fusions_conv_substring(hlo_text: str) -> dict[str, list[str]]:
    return _rt14_matmuls(hlo_text, lambda op: "conv" in op)


@wrong(
    "gather_free_specs",
    why="'no all-gather ... argument bytes at most': splits w2's columns over "
    "'data' too to save memory (P('model','data')); each device then holds only the columns "
    "of its own data index for its rows, and the P('data', None) output needs an all-gather",
)
def _rt14_gather_free_specs_w2_cols_data() -> tuple[P, P]:
    return P(None, "model"), P("model", "data")


def _rt14_layout_dims(text):
    m = re.search(r"\{([\d,]*)", text)
    return m.group(1) if m else ""


@wrong(
    "prefetched_parameters",
    why="'every copy ... whose result has S(1) in its layout': skips a plain "
    "copy that also changes the dimension order, taking it for a transpose rather than a move; "
    "p = f32[8,128]{1,0:T(8,128)} parameter(0), c = f32[8,128]{0,1:T(8,128)S(1)} copy(p) "
    "expects {0: 'copy'}, gives {}",
)
def _rt14_prefetched_parameters_relayout_copy_skipped(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    params = {i.name: i for i in module.entry if i.opcode == "parameter"}
    out = {}
    for inst in module.entry:
        if inst.opcode not in ("copy", "copy-start") or not inst.operands:
            continue
        src = params.get(inst.operands[0])
        if src is None:
            continue
        shape = Shape(inst.shape)
        first = shape.elements[0].text if shape.is_tuple else shape.text
        if "S(1)" not in first:
            continue
        num = int(re.search(r"parameter\((\d+)\)", f"parameter({src.payload})").group(1))
        if inst.opcode == "copy":
            if _rt14_layout_dims(first) != _rt14_layout_dims(src.shape):
                continue
            out[num] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[num] = "cross-program prefetch"
        else:
            out[num] = "prefetch"
    return out


@wrong(
    "collective_bytes",
    why="'its bytes are those of its result on one device': leaves out a "
    "collective whose every replica group holds one device, reasoning that a device alone "
    "receives nothing; an all-reduce f32[16] with replica_groups={{0},{1},{2},{3}} (or "
    "replica_groups={} with no replica_count/num_partitions) expects {'all-reduce': 64}, gives {}",
)
def _rt14_collective_bytes_singleton_groups_free(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    out, seen = {}, set()
    for c in module.computations:
        for i in c:
            if i.opcode not in _rt14_KINDS:
                continue
            ch = i.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            rg = i.attribute("replica_groups")
            if rg is not None:
                try:
                    groups = _rt14_parse_groups(rg, n)
                except Exception:
                    groups = None
                if groups and all(len(g) == 1 for g in groups):
                    continue
            out[i.opcode] = out.get(i.opcode, 0) + _rt14_bytes_of(i.shape)
    return out
