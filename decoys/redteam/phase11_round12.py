"""Red-team wrong answers for phase 11, round 12, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt12_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt12_BITS = {
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


def _rt12_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt12_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt12_BITS[shape.dtype] // 8


def _rt12_tpu_collective(module, inst, target):
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
            if i.opcode in _rt12_KINDS:
                return i.opcode
    return None


def _rt12_parse_groups(text, n, fortran=False, empty_all=False):
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


def _rt12_device_groups(hlo_text, fortran=False, permutes=False, empty_all=False):
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
                out[int(ch)] = _rt12_parse_groups(rg, n, fortran, empty_all)
            elif permutes and inst.attribute("source_target_pairs") is not None:
                pairs = inst.attribute("source_target_pairs")
                out[int(ch)] = [
                    [int(v) for v in p.split(",") if v.strip()]
                    for p in re.findall(r"\{([^{}]*)\}", pairs.strip()[1:-1])
                ]
    return out


_rt12_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt12_channel_in(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt12_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


def _rt12_windows(hlo_text):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    windows = []
    for j, inst in enumerate(entry):
        done = None
        if _rt12_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt12_channel_in(module, inst)
            for other in entry[j + 1 :]:
                if _rt12_tpu_collective(module, other, "AsyncCollectiveDone") is not None and (
                    _rt12_channel_in(module, other) == ch
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


# ---------------------------------------------------------------- wrong answers, round 12


@wrong(
    "matmul_fusions",
    why="'sorted distinct opcodes': sorts the opcodes of the other work but keeps one entry "
    "per instruction, not per opcode; recorded/fsdp4_v5e.hlo's fusion.9 (relu threaded "
    "through an async_collective_fusion) expects ['maximum'], gives ['maximum', 'maximum']; "
    "mlp_grad_v5e's fusion.18 gives ['add', 'add', ...]",
)
def _rt12_matmul_fusions_duplicates_kept(hlo_text: str) -> dict[str, list[str]]:
    movers = {
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
        *_rt12_KINDS,
    }
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        ops = [i.opcode for c in comps for i in c]
        if "convolution" not in ops:
            continue
        out[inst.name] = sorted(
            o
            for o in ops
            if o != "convolution"
            and o not in movers
            and not o.endswith("-start")
            and not o.endswith("-done")
        )
    return out


@wrong(
    "overlapped_work",
    why="'the ENTRY instructions strictly between ... leaving out those that do no work: "
    "get-tuple-element, bitcast, tuple, parameter, constant': keeps only fusions ('on TPU all "
    "compute is fused'), dropping unfused work such as the multiply/negate/add, custom-calls "
    "and other async starts between a start and its done; HANDWRITTEN_ASYNC_WRAPPED's go.1 "
    "expects ['go.2', 'go.3', 'sq', 'end.2', 'neg'], gives []",
)
def _rt12_overlapped_work_fusions_only(hlo_text: str) -> dict[str, list[str]]:
    return {
        name: [i.name for i in between if i.opcode == "fusion"]
        for name, between in _rt12_windows(hlo_text)
    }


@wrong(
    "padded_bytes",
    why="'later tiles such as (2,1) split the first one without adding padding': multiplies "
    "the tiles into one (T(8,128)(2,1) read as a 16x128 tile of packed pairs) and pads to "
    "that; bf16[3,5,129]{2,0,1:T(4,128)(2,1)} expects 5*4*256*2=10240, gives 5*8*256*2=20480 "
    "(and bf16[1,1000]{1,0:T(2,128)(2,1)} gives 8192 instead of 4096)",
)
def _rt12_padded_bytes_tiles_multiplied(shape_text: str) -> int:
    shape = Shape(shape_text)
    bits = _rt12_BITS[shape.dtype]
    dims = list(shape.dims)
    layout = shape.layout or ""
    if ":" not in layout:
        return math.prod(dims) * bits // 8
    m2m = [int(v) for v in layout.split(":")[0].strip("{} ").split(",") if v.strip()]
    tiles = [
        [int(v) for v in t.split(",")]
        for t in re.findall(r"\(([\d,]+)\)", layout.split(":")[1])
        if not re.search(r"S\(" + re.escape(t) + r"\)", layout)
    ]
    if not tiles:
        return math.prod(dims) * bits // 8
    tile = list(tiles[0])
    for extra in tiles[1:]:
        for j in range(1, min(len(extra), len(tile)) + 1):
            tile[-j] *= extra[-j]
    for j, t in enumerate(reversed(tile)):
        if j < len(m2m):
            d = m2m[j]
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * bits // 8


@wrong(
    "predict_layer_flops",
    why="'b [n] split P('model')': counts the bias add once per element of the device's bias "
    "slice (n/model adds, 'the bias is a vector') instead of once per element of the broadcast "
    "output block; m=8,k=8,n=8 on 2 x 2 (block 4x4): expects 16*16+2*16=288, gives "
    "16*16+16+4=276",
)
def _rt12_predict_layer_flops_bias_per_column(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    block = rows * cols
    if k == 1:
        dot = block
    elif rows >= 2 and cols >= 2:
        dot = 2 * k * block
    else:
        dot = (2 * k - 1) * block
    return dot + block + cols


@wrong(
    "predict_layer_flops",
    why="'a matmul when the block has two or more rows and columns': folds the bias into the "
    "matmul's accumulator ('the bias initialises the sum, as a GEMM's beta does') and counts "
    "only the relu on top; m=8,k=8,n=8 on 2 x 2: expects 288, gives 256+16=272",
)
def _rt12_predict_layer_flops_bias_in_accumulator(
    m: int, k: int, n: int, data: int, model: int
) -> int:
    rows, cols = m // data, n // model
    block = rows * cols
    if k == 1:
        return 2 * block + block
    if rows >= 2 and cols >= 2:
        return 2 * k * block + block
    return 2 * k * block + block


@wrong(
    "prefetched_parameters",
    why="'Use the number in parameter(N)': takes the number from the parameter's NAME "
    "(%param.3 -> 3, %p2 -> 2, 'names are param_N'); the tests rename every instruction "
    "(%n17), so after renaming the moved parameter(0) is reported as 17",
)
def _rt12_prefetched_parameters_number_from_name(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    params = {}
    for inst in module.entry:
        if inst.opcode == "parameter":
            digits = re.findall(r"\d+", inst.name)
            params[inst.name] = int(digits[-1]) if digits else 0
    out = {}
    for inst in module.entry:
        if inst.opcode not in ("copy-start", "copy") or not inst.operands:
            continue
        src = inst.operands[0]
        if src not in params:
            continue
        shape = Shape(str(inst.shape))
        dest = shape.elements[0] if shape.is_tuple else shape
        if "S(1)" not in dest.text:
            continue
        if inst.opcode == "copy":
            out[params[src]] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[params[src]] = "cross-program prefetch"
        else:
            out[params[src]] = "prefetch"
    return out


@wrong(
    "device_groups",
    why="'a group is the devices along the named axes': a mesh spelling naming no axis, "
    "mesh['a'=2,'b'=2] {}, is read like replica_groups={} (one group of every device, "
    "[[0,1,2,3]]) although along no axis every device is alone: [[0],[1],[2],[3]]",
)
def _rt12_device_groups_mesh_no_axes_all(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt12_device_groups(hlo_text, empty_all=True)


@wrong(
    "collective_bytes",
    why="'once per channel_id (the TPU async wrappers copy one collective into several "
    "bodies)': remembers channels per computation only (the seen-set is reset for each "
    "computation), so the all-gather that recorded/fsdp4_v5e.hlo copies into its "
    "async-collective-start body and the async_collective_fusion is counted two or three times",
)
def _rt12_collective_bytes_seen_per_computation(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations:
        seen = set()
        for inst in comp:
            if inst.opcode not in _rt12_KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            out[inst.opcode] = out.get(inst.opcode, 0) + _rt12_bytes_of(str(inst.shape))
    return out


@wrong(
    "async_collectives",
    why="'elsewhere the start is an op such as all-gather-start or collective-permute-start': "
    "knows only the three generic -start opcodes HLO has for collectives and skips the "
    "generic `async-start` wrapper whose called computation holds a reduce-scatter or "
    "all-to-all (HANDWRITTEN_ASYNC_WRAPPED): those starts are missing",
)
def _rt12_async_collectives_three_generic_starts(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    generic = {
        "all-gather-start": "all-gather",
        "all-reduce-start": "all-reduce",
        "collective-permute-start": "collective-permute",
    }
    for inst in module.entry:
        kind = _rt12_tpu_collective(module, inst, "AsyncCollectiveStart")
        if kind is not None:
            out[inst.name] = kind
        elif inst.opcode in generic:
            out[inst.name] = generic[inst.opcode]
    return out


@wrong(
    "gather_free_specs",
    why="'argument bytes per device at most x's plus half of the replicated weights' and 'no "
    "all-gather': splits w1's columns over 'model' and, to save more memory, w2's rows over "
    "both axes (P(None,'model'), P(('model','data'), None)); w2's row blocks no longer match "
    "the hidden units each device computed, so the partitioner gathers: on 4 CPU devices the "
    "program holds an all-gather next to the all-reduce",
)
def _rt12_gather_free_specs_w2_rows_over_both() -> tuple[P, P]:
    return P(None, "model"), P(("model", "data"), None)
