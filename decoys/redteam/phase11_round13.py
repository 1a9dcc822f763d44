"""Red-team wrong answers for phase 11, round 13, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt13_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt13_BITS = {
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


def _rt13_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt13_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt13_BITS[shape.dtype] // 8


def _rt13_tpu_collective(module, inst, target):
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
            if i.opcode in _rt13_KINDS:
                return i.opcode
    return None


def _rt13_parse_groups(text, n, fortran=False, empty_all=False):
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


def _rt13_device_groups(hlo_text, fortran=False, permutes=False, empty_all=False):
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    out = {}
    for comp in module.computations:
        for inst in comp:
            ch = inst.attribute("channel_id")
            if ch is None or int(ch) in out:
                continue
            rg = inst.attribute("replica_groups")
            if rg is not None:
                out[int(ch)] = _rt13_parse_groups(rg, n, fortran, empty_all)
            elif permutes and inst.attribute("source_target_pairs") is not None:
                pairs = inst.attribute("source_target_pairs")
                out[int(ch)] = [
                    [int(v) for v in p.split(",") if v.strip()]
                    for p in re.findall(r"\{([^{}]*)\}", pairs.strip()[1:-1])
                ]
    return out


_rt13_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt13_channel_in(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt13_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


def _rt13_windows(hlo_text):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    windows = []
    for j, inst in enumerate(entry):
        done = None
        if _rt13_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt13_channel_in(module, inst)
            for other in entry[j + 1 :]:
                if _rt13_tpu_collective(module, other, "AsyncCollectiveDone") is not None and (
                    _rt13_channel_in(module, other) == ch
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


# ---------------------------------------------------------------- wrong answers, round 13


@wrong(
    "padded_bytes",
    why="'each [tiled dim] is padded up to a multiple of its tile size': pads the "
    "total element count to a multiple of the tile's product instead; f32[3,129]{1,0:T(8,128)} "
    "is 8*256*4=8192 bytes, this gives 1024*4=4096",
)
def _rt13_padded_bytes_pad_total(shape_text: str) -> int:
    shape = Shape(shape_text)
    bits = _rt13_BITS[shape.dtype]
    n = math.prod(shape.dims)
    m = re.search(r"T\(([\d,]+)\)", shape_text)
    if m:
        t = math.prod(int(v) for v in m.group(1).split(","))
        n = -(-n // t) * t
    return n * bits // 8


@wrong(
    "device_groups",
    why="'naming none, mesh[...] {}, every device is alone': returns no groups "
    "at all ([]) for an empty axis set; mesh['a'=2,'b'=2] {} expects [[0],[1],[2],[3]]",
)
def _rt13_device_groups_mesh_none_empty(hlo_text: str) -> dict[int, list[list[int]]]:
    out = _rt13_device_groups(hlo_text)
    module = parse_hlo(hlo_text)
    for comp in module.computations:
        for inst in comp:
            rg = inst.attribute("replica_groups")
            ch = inst.attribute("channel_id")
            if rg and ch is not None and re.match(r"\s*mesh\[.*\]\s*\{\s*\}", rg):
                out[int(ch)] = []
    return out


def _rt13_count(module, comps, tuple_first=False):
    out, seen = {}, set()
    for c in comps:
        for i in c:
            if i.opcode not in _rt13_KINDS:
                continue
            ch = i.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            shape = Shape(i.shape)
            if tuple_first and shape.is_tuple:
                b = _rt13_bytes_of(shape.elements[0].text)
            else:
                b = _rt13_bytes_of(shape.text)
            out[i.opcode] = out.get(i.opcode, 0) + b
    return out


@wrong(
    "collective_bytes",
    why="'any computation': walks ENTRY and what ENTRY fusions call (the TPU "
    "wrappers) only, missing collectives in while bodies, called computations and the body of a "
    "generic async-start; an all-reduce inside a scan loop body is left out",
)
def _rt13_collective_bytes_fusion_bodies_only(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    comps = [module.entry]
    for inst in module.entry:
        if inst.opcode == "fusion":
            comps.extend(reachable(module, inst.called_computations))
    return _rt13_count(module, comps)


@wrong(
    "collective_bytes",
    why="'a tuple result: the sum of its elements': counts only the first "
    "element of a tuple-shaped collective; a combined all-reduce (f32[256,1024], f32[1024,256]) "
    "of mlp_grad_v5e counts half",
)
def _rt13_collective_bytes_tuple_first(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    return _rt13_count(module, module.computations, tuple_first=True)


_rt13_MOVERS = {
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
    *_rt13_KINDS,
}


@wrong(
    "matmul_fusions",
    why="'the other work in those computations, nested ones included': takes "
    "only the computation that holds the convolution; a kOutput fusion whose bias add/relu sit in "
    "an outer computation around a nested convolution fusion loses them, and a reduce's to_apply "
    "add is dropped",
)
def _rt13_matmul_fusions_conv_computation_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        holding = [c for c in comps if any(i.opcode == "convolution" for i in c)]
        if not holding:
            continue
        out[inst.name] = sorted(
            {
                i.opcode
                for c in holding
                for i in c
                if i.opcode != "convolution" and i.opcode not in _rt13_MOVERS
            }
        )
    return out


@wrong(
    "overlapped_work",
    why="'in the order the module prints them': sorts the names instead; with "
    "renamed instructions %n9, %n10 between a start and its done this gives ['n10', 'n9']",
)
def _rt13_overlapped_work_sorted_names(hlo_text: str) -> dict[str, list[str]]:
    return {
        s: sorted(i.name for i in between if i.opcode not in _rt13_NOWORK)
        for s, between in _rt13_windows(hlo_text)
    }


@wrong(
    "overlapped_work",
    why="'strictly between the start and its done': includes the done itself "
    "(an off-by-one at the window's end); every start of fsdp4_v5e gets its done fusion appended",
)
def _rt13_overlapped_work_done_inclusive(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    out = {}
    for s, between in _rt13_windows(hlo_text):
        end = pos[between[-1].name] + 1 if between else pos[s] + 1
        names = [i.name for i in between if i.opcode not in _rt13_NOWORK]
        if end < len(entry):
            names.append(entry[end].name)
        out[s] = names
    return out


@wrong(
    "prefetched_parameters",
    why="'every copy-start or copy in ENTRY': only looks at copy-start, "
    'so a parameter moved into S(1) by a plain `copy` ("copy") is left out',
)
def _rt13_prefetched_parameters_copy_start_only(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    params = {i.name: int(i.payload) for i in module.entry if i.opcode == "parameter"}
    out = {}
    for inst in module.entry:
        if inst.opcode != "copy-start" or not inst.operands or inst.operands[0] not in params:
            continue
        shape = Shape(inst.shape)
        first = shape.elements[0].text if shape.is_tuple else shape.text
        if "S(1)" not in first:
            continue
        kind = (
            "cross-program prefetch"
            if inst.attribute("cross_program_prefetch_index") is not None
            else "prefetch"
        )
        out[params[inst.operands[0]]] = kind
    return out


@wrong(
    "step_donation",
    why="'the aliased bytes equal the params and momentum bytes': donates only "
    "the momentum (thinking params must stay valid for evaluation); alias bytes are momentum's only",
)
def _rt13_step_donation_momentum_only() -> tuple[int, ...]:
    return (1,)


@wrong(
    "predict_layer_flops",
    why="'a multiply alone when k = 1': for k = 1 counts the dot of a "
    "matmul block as 2*rows*cols (a multiply-add per element) instead of rows*cols; m=4,k=1,n=4 "
    "on 2x2: block 2x2, expects 4+4+4=12, gives 16",
)
def _rt13_predict_layer_flops_k1_fma(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // data, n // model
    if r >= 2 and c >= 2:
        dot = 2 * r * c * k
    elif k == 1:
        dot = r * c
    else:
        dot = r * c * k + r * c * (k - 1)
    return dot + 2 * r * c


@wrong(
    "async_collectives",
    why="'whose called computations ... hold it': for a TPU start reports the "
    "first collective printed anywhere in the module instead of the one its own fusion calls; a "
    "module with an async reduce-scatter printed before an async all-gather labels both "
    "'reduce-scatter' (right on the all-gather-only recordings)",
)
def _rt13_async_collectives_module_first_collective(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    first = next(
        (i.opcode for c in module.computations for i in c if i.opcode in _rt13_KINDS), None
    )
    out = {}
    for inst in module.entry:
        if _rt13_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            out[inst.name] = first
        elif inst.opcode.endswith("-start") and inst.opcode[: -len("-start")] in _rt13_KINDS:
            out[inst.name] = inst.opcode[: -len("-start")]
    return out
