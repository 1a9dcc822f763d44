"""Red-team wrong answers for phase 11, round 11, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P  # noqa: F401

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt11_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt11_BITS = {
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


def _rt11_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt11_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt11_BITS[shape.dtype] // 8


def _rt11_tpu_collective(module, inst, target):
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
            if i.opcode in _rt11_KINDS:
                return i.opcode
    return None


# ---------------------------------------------------------------- async_collectives


@wrong(
    "async_collectives",
    why="'elsewhere the start is an op such as all-gather-start': cuts '-start' off every ENTRY "
    "opcode ending in it except copy-start, so the generic wrapper `async-start` calling a "
    "reduce-scatter (programs.HANDWRITTEN_ASYNC_WRAPPED) is reported as 'async' instead of "
    "'reduce-scatter' (and the all-to-all one as 'async' too)",
)
def _rt11_async_collectives_suffix_strip(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        kind = _rt11_tpu_collective(module, inst, "AsyncCollectiveStart")
        if kind is not None:
            out[inst.name] = kind
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            out[inst.name] = inst.opcode[: -len("-start")]
    return out


# ---------------------------------------------------------------- device_groups


def _rt11_parse_groups(text, n, fortran=False):
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


def _rt11_device_groups(hlo_text, fortran=False, permutes=False):
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
                out[int(ch)] = _rt11_parse_groups(rg, n, fortran)
            elif permutes and inst.attribute("source_target_pairs") is not None:
                pairs = inst.attribute("source_target_pairs")
                out[int(ch)] = [
                    [int(v) for v in p.split(",") if v.strip()]
                    for p in re.findall(r"\{([^{}]*)\}", pairs.strip()[1:-1])
                ]
    return out


@wrong(
    "device_groups",
    why="'for every collective with a replica_groups attribute': also reports the "
    "collective-permutes, whose source_target_pairs say which devices talk too, as groups of "
    "pairs; HANDWRITTEN_ASYNC's collective-permute-start (channel 9, no replica_groups) must "
    "have no key, gives 9: [[0,1],[1,0],[2,3],[3,2]]",
)
def _rt11_device_groups_permute_pairs(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt11_device_groups(hlo_text, permutes=True)


@wrong(
    "device_groups",
    why="'lay the numbers out over the mesh': lays them out column-major (first axis fastest, "
    "np.reshape order='F'), as Fortran/TPU-coordinate intuition suggests; "
    "mesh['a'=2,'b'=2] {'b'} expects [[0,1],[2,3]], gives [[0,2],[1,3]]; explicit and iota "
    "spellings stay right",
)
def _rt11_device_groups_mesh_column_major(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt11_device_groups(hlo_text, fortran=True)


# ---------------------------------------------------------------- matmul_fusions

_rt11_SHORT_MOVERS = {
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
}


@wrong(
    "matmul_fusions",
    why="'leaving out ... custom-call and the collectives': the mover list stops at the "
    "data-layout ops and forgets custom-call and the collectives; an async_collective_fusion "
    "that threads an in-flight all-gather through a convolution gets the collective in its "
    "list: recorded/fsdp4_v5e.hlo's fusion.9 expects ['maximum'], gives ['all-gather', "
    "'maximum']; HANDWRITTEN_TPU's overlap fusion gets 'collective-permute' next to 'tanh'",
)
def _rt11_matmul_fusions_short_movers(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        ops = {i.opcode for c in comps for i in c}
        if "convolution" not in ops:
            continue
        out[inst.name] = sorted(
            o for o in ops if o != "convolution" and o not in _rt11_SHORT_MOVERS
        )
    return out


# ---------------------------------------------------------------- padded_bytes


@wrong(
    "padded_bytes",
    why="'the first tile covers as many of the most minor dimensions' (minor in LAYOUT order): "
    "applies the tile to the last logical dimensions, ignoring minor_to_major; right for "
    "{1,0:...}, wrong for bf16[3,129]{0,1:T(8,128)(2,1)}: expects 136*128*2=34816, "
    "gives 8*256*2=4096",
)
def _rt11_padded_bytes_logical_order(shape_text: str) -> int:
    shape = Shape(shape_text)
    bits = _rt11_BITS[shape.dtype]
    dims = list(shape.dims)
    layout = shape.layout or ""
    m = re.search(r":\s*T\(([\d,]+)\)", layout)
    if not m:
        return math.prod(dims) * bits // 8
    tile = [int(v) for v in m.group(1).split(",")]
    for j, t in enumerate(reversed(tile)):
        d = len(dims) - 1 - j
        if d >= 0:
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * bits // 8


# ---------------------------------------------------------------- collective_bytes


@wrong(
    "collective_bytes",
    why="'the generic async ops (all-gather-start, ...) count for nothing here': folds "
    "all-gather-start / all-reduce-start / collective-permute-start into their collective, "
    "counting the start's result (the last array of its tuple that is no u32 flag); "
    "HANDWRITTEN_ASYNC expects {'all-reduce': 4096}, gives also all-gather 2048 and "
    "collective-permute 4096",
)
def _rt11_collective_bytes_generic_starts(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    out = {}
    seen = set()
    for comp in module.computations:
        for inst in comp:
            op = inst.opcode
            shape = Shape(str(inst.shape))
            if op in _rt11_KINDS:
                size = _rt11_bytes_of(shape.text)
            elif op.endswith("-start") and op[: -len("-start")] in _rt11_KINDS:
                op = op[: -len("-start")]
                if shape.is_tuple:
                    arrays = [e for e in shape.elements if not e.text.startswith("u32[]")]
                    size = _rt11_bytes_of(arrays[-1].text)
                else:
                    size = _rt11_bytes_of(shape.text)
            else:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            out[op] = out.get(op, 0) + size
    return out


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="'for copy-start: the first tuple element': reads the copy-start's tuple like an "
    "async collective's (operand, result, context) and takes element 1 as the moved buffer; "
    "libtpu prints (destination, source, u32[]), so in recorded/fsdp4_v5e.hlo the "
    "cross-program prefetch and both prefetches (copy-start of %param, %param.2, %param.3) "
    "are missed: only the plain copy of parameter 4 is found",
)
def _rt11_prefetched_parameters_second_element(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    params = {
        inst.name: int(re.search(r"\d+", str(inst.payload)).group(0))
        for inst in module.entry
        if inst.opcode == "parameter"
    }
    out = {}
    for inst in module.entry:
        if inst.opcode not in ("copy-start", "copy") or not inst.operands:
            continue
        src = inst.operands[0]
        if src not in params:
            continue
        shape = Shape(str(inst.shape))
        if shape.is_tuple:
            els = shape.elements
            dest = els[1] if len(els) > 1 else els[0]
        else:
            dest = shape
        if "S(1)" not in dest.text:
            continue
        if inst.opcode == "copy":
            out[params[src]] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[params[src]] = "cross-program prefetch"
        else:
            out[params[src]] = "prefetch"
    return out


# ---------------------------------------------------------------- predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="'a matmul when a device's output block has two or more rows and two or more "
    "columns': off by one at the edge, takes 'more than two' (a 2-row block 'is a pair of "
    "vectors'); m=4,k=8,n=4 on a 2 x 2 mesh (block 2x2) expects 4*16+8=72, gives "
    "4*15+8=68",
)
def _rt11_predict_layer_flops_strict_two(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    block = rows * cols
    if k == 1:
        dot = block
    elif rows > 2 and cols > 2:
        dot = block * 2 * k
    else:
        dot = block * (2 * k - 1)
    return dot + 2 * block


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'the bytes each device receives ... the logical result on one device': takes the "
    "all-reduce's result as the whole output [batch, width], forgetting that x's rows (and so "
    "the output's) are split over 'data'; batch=8,width=16,hidden=32,data=2,model=2,"
    "itemsize=4 expects 4*16*4=256, gives 512",
)
def _rt11_predict_allreduce_bytes_global_output(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch * width * itemsize


# ---------------------------------------------------------------- overlapped_work

_rt11_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt11_channel_in(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c:
            if i.opcode in _rt11_KINDS and i.attribute("channel_id") is not None:
                return i.attribute("channel_id")
    return None


def _rt11_windows(hlo_text):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    pos = {inst.name: j for j, inst in enumerate(entry)}
    windows = []
    for j, inst in enumerate(entry):
        done = None
        if _rt11_tpu_collective(module, inst, "AsyncCollectiveStart") is not None:
            ch = _rt11_channel_in(module, inst)
            for other in entry[j + 1 :]:
                if _rt11_tpu_collective(module, other, "AsyncCollectiveDone") is not None and (
                    _rt11_channel_in(module, other) == ch
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


@wrong(
    "overlapped_work",
    why="'for every start: the names of the ENTRY instructions strictly between the start "
    "and its done': attributes each instruction to ONE collective only (the earliest start "
    "whose window holds it, 'work can hide only one transfer'); when windows nest or overlap "
    "(HANDWRITTEN_ASYNC_WRAPPED: start 1, start 2, start 3, sq, done 2, neg, done 1) the later "
    "starts lose what the first one already claimed: go.2 expects [go.3, sq], gives []",
)
def _rt11_overlapped_work_claimed_once(hlo_text: str) -> dict[str, list[str]]:
    claimed = set()
    out = {}
    for name, between in _rt11_windows(hlo_text):
        names = [i.name for i in between if i.opcode not in _rt11_NOWORK and i.name not in claimed]
        claimed.update(names)
        out[name] = names
    return out


# ---------------------------------------------------------------- gather_free_specs


@wrong(
    "gather_free_specs",
    why="'no all-gather ... anywhere in the compiled program': Megatron's column split of w1 "
    "over 'model', plus w1's rows over 'data' 'to line up with x, which is split over data' "
    "(w1 P('data','model'), w2 P('model', None)); the contracting dimension of x @ w1 is then "
    "split over 'data' while x's rows are: checked on 4 CPU devices, the program all-gathers "
    "(all-gather + all-reduce), not only the one all-reduce",
)
def _rt11_gather_free_specs_w1_rows_follow_x() -> tuple[P, P]:
    return P("data", "model"), P("model", None)
