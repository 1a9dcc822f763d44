"""Red-team wrong answers for phase 11, round 10, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt10_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt10_BITS = {
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
_rt10_MOVE = {
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
    *_rt10_KINDS,
}


def _rt10_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt10_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt10_BITS[shape.dtype] // 8


# ---------------------------------------------------------------- predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="'relu(x @ w + b)': counts relu as free (a select/max, 'no arithmetic'), so the "
    "epilogue is 1 flop per element instead of 2; on m=k=n=8, 2 x 2 mesh (block 4x4, k=8) "
    "expects 16*(16+2)=288, gives 272",
)
def _rt10_predict_layer_flops_relu_free(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    block = rows * cols
    if k == 1:
        dot = block
    elif rows == 1 or cols == 1:
        dot = block * (2 * k - 1)
    else:
        dot = block * 2 * k
    return dot + block


@wrong(
    "predict_layer_flops",
    why="'a multiply and a reduce over k when the block is a single row or a single column': "
    "treats a 1x1 block (both single row and column) as a matmul would be a dot of two "
    "vectors, i.e. k multiplies + k adds (a fused multiply-add reduce); on m=2,k=8,n=2 over a "
    "2 x 2 mesh expects 8+7+2=17, gives 8+8+2=18",
)
def _rt10_predict_layer_flops_scalar_block_fma(
    m: int, k: int, n: int, data: int, model: int
) -> int:
    rows, cols = m // data, n // model
    block = rows * cols
    if k == 1:
        dot = block
    elif rows == 1 and cols == 1:
        dot = 2 * k
    elif rows == 1 or cols == 1:
        dot = block * (2 * k - 1)
    else:
        dot = block * 2 * k
    return dot + 2 * block


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'0 when the program needs no all-reduce': believes any multi-device mesh all-reduces "
    "and only a single device needs none; with model=1 (hidden not split) there is no partial "
    "sum: batch=8,width=16,hidden=32,data=2,model=1,itemsize=4 expects 0, gives 4*16*4=256",
)
def _rt10_predict_allreduce_bytes_any_mesh(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if data * model == 1:
        return 0
    return (batch // data) * width * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="'bytes as collective_bytes counts them (the logical result on one device)': counts "
    "what a ring all-reduce's reduce-scatter phase receives, (model-1)/model of the output "
    "block; batch=8,width=16,hidden=32,data=2,model=2,itemsize=4 expects 4*16*4=256, gives 128",
)
def _rt10_predict_allreduce_bytes_received_share(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return (batch // data) * width * itemsize * (model - 1) // model


# ---------------------------------------------------------------- gather_free_specs


@wrong(
    "gather_free_specs",
    why="'argument bytes per device at most x's plus half of what the replicated weights "
    "take': splits only w2 (the weight after relu) and keeps w1 whole; no gather, but each "
    "device holds all of w1 and half of w2 = 3/4 of the replicated weights, over budget",
)
def _rt10_gather_free_specs_w1_replicated() -> tuple[P, P]:
    return P(None, None), P("model", None)


# ---------------------------------------------------------------- step_donation


@wrong(
    "step_donation",
    why="'the aliased bytes equal the params and momentum bytes': donates nothing (caution: "
    "'the batch must stay valid' read as 'donation is unsafe'); alias_size_in_bytes is 0, "
    "not params+momentum bytes, and the peak does not drop",
)
def _rt10_step_donation_none() -> tuple[int, ...]:
    return ()


# ---------------------------------------------------------------- padded_bytes


def _rt10_padded_last_tile(shape_text):
    shape = Shape(shape_text)
    m = re.search(r"\{([\d,]*)(?::(.*?))?\}", shape_text[shape_text.index("]") :])
    bits = _rt10_BITS[shape.dtype]
    dims = list(shape.dims)
    if not m or not m.group(2):
        return math.prod(dims) * bits // 8
    mtm = [int(v) for v in m.group(1).split(",") if v != ""]
    tiles = re.findall(r"\(([\d,]+)\)", m.group(2))
    if not tiles:
        return math.prod(dims) * bits // 8
    tile = [int(v) for v in tiles[-1].split(",")]
    padded = dims[:]
    for j, t in enumerate(reversed(tile)):
        if j < len(mtm):
            d = mtm[j]
            padded[d] = -(-padded[d] // t) * t
    return math.prod(padded) * bits // 8


@wrong(
    "padded_bytes",
    why="'the first tile covers ... later tiles split the first one without adding padding': "
    "pads by the LAST tile listed (the innermost one); right when there is a single tile, "
    "wrong on bf16[3,5]{1,0:T(8,128)(2,1)}: expects 8*128*2=2048, gives 4*5*2=40",
)
def _rt10_padded_bytes_last_tile(shape_text: str) -> int:
    return _rt10_padded_last_tile(shape_text)


# ---------------------------------------------------------------- matmul_fusions


@wrong(
    "matmul_fusions",
    why="'sorted distinct opcodes': keeps them distinct in the order they are first met in the "
    "text (dict.fromkeys) and forgets to sort; a fusion of convolution, add, maximum lists "
    "['add','maximum'] only by luck: with maximum before add (relu fused before an add, or "
    "computations reordered) gives ['maximum','add']",
)
def _rt10_matmul_fusions_first_seen(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        ops = [i.opcode for c in comps for i in c]
        if "convolution" not in ops:
            continue
        out[inst.name] = list(
            dict.fromkeys(o for o in ops if o != "convolution" and o not in _rt10_MOVE)
        )
    return out


# ---------------------------------------------------------------- device_groups


def _rt10_groups(text, n):
    text = text.strip()
    if text.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
        axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m.group(1).split(",")]
        names = [a for a, _ in axes]
        chosen = [x.strip("' ") for x in m.group(2).split(",") if x.strip("' ")]
        chosen = chosen[:1]  # one named axis per collective
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
    why="'a group is the devices along the named axes': reads only the first axis in the "
    "braces, as if a collective ran over one mesh axis; mesh['a'=2,'b'=2] {'a','b'} (an "
    "all-gather over both axes) expects [[0,2,1,3]], gives [[0,2],[1,3]]",
)
def _rt10_device_groups_first_named_axis(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    out = {}
    for comp in module.computations:
        for inst in comp:
            rg = inst.attribute("replica_groups")
            ch = inst.attribute("channel_id")
            if rg is None or ch is None or int(ch) in out:
                continue
            out[int(ch)] = _rt10_groups(rg, n)
    return out


# ---------------------------------------------------------------- collective_bytes


@wrong(
    "collective_bytes",
    why="'its bytes are those of its result on one device': counts what a device contributes "
    "(the operand) for every kind, reading 'receives' as 'exchanges'; the gather of a "
    "bf16[256,1024] shard to bf16[1024,1024] over 4 devices expects 2 MiB, gives 512 KiB",
)
def _rt10_collective_bytes_operand(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    shapes = {}
    for comp in module.computations:
        for inst in comp:
            shapes[(comp.name, inst.name)] = str(inst.shape)
    out = {}
    seen = set()
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in _rt10_KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            total = 0
            for op in inst.operands:
                text = shapes.get((comp.name, op))
                total += _rt10_bytes_of(text) if text else _rt10_bytes_of(str(inst.shape))
            out[inst.opcode] = out.get(inst.opcode, 0) + total
    return out


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="'a copy-start with a cross_program_prefetch_index is the cross-program prefetch': "
    "takes instead the first copy-start ENTRY prints as it (it 'starts before the program "
    "runs'); right on recordings where libtpu prints it first, wrong on a module with no "
    "cross-program prefetch (its first prefetch is reported as 'cross-program prefetch') or "
    "with the computations' lines reordered",
)
def _rt10_prefetched_parameters_first_copy_start(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    params = {
        inst.name: int(re.search(r"\d+", str(inst.payload)).group(0))
        for inst in module.entry
        if inst.opcode == "parameter"
    }
    out = {}
    first = True
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
        num = params[src]
        if inst.opcode == "copy":
            out[num] = "copy"
        elif first:
            out[num] = "cross-program prefetch"
            first = False
        else:
            out[num] = "prefetch"
    return out


# ---------------------------------------------------------------- overlapped_work

_rt10_NOWORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt10_is_tpu(module, inst, target):
    if inst.opcode != "fusion" or "kCustom" not in (inst.attribute("kind") or ""):
        return False
    comps = reachable(module, inst.called_computations)
    return any(
        i.opcode == "custom-call" and target in (i.attribute("custom_call_target") or "")
        for c in comps
        for i in c
    )


@wrong(
    "overlapped_work",
    why="'the done of a TPU start is the kCustom fusion whose body holds AsyncCollectiveDone "
    "and the same channel_id': follows the data instead, taking as done the first ENTRY "
    "instruction that consumes the start's tuple (through get-tuple-element); when an "
    "async_collective_fusion threads the in-flight buffers (recorded/fsdp4_v5e.hlo) it stops "
    "there and leaves that fusion out: expects [copy-done, fusion.9], gives [copy-done]",
)
def _rt10_overlapped_work_first_consumer(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    out = {}
    for pos, inst in enumerate(entry):
        generic = inst.opcode.endswith("-start") and inst.opcode[:-6] in _rt10_KINDS
        if not (generic or _rt10_is_tpu(module, inst, "AsyncCollectiveStart")):
            continue
        derived = {inst.name}
        end = len(entry)
        for j in range(pos + 1, len(entry)):
            other = entry[j]
            if not any(op in derived for op in other.operands):
                continue
            if other.opcode == "get-tuple-element":
                derived.add(other.name)
                continue
            end = j
            break
        out[inst.name] = [e.name for e in entry[pos + 1 : end] if e.opcode not in _rt10_NOWORK]
    return out
