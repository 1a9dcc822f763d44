"""Red-team wrong answers for phase 11, round 9, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt9_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt9_BITS = {
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


def _rt9_bytes_of(shape_text, first_only=False):
    shape = Shape(shape_text)
    if shape.is_tuple:
        elems = shape.elements[:1] if first_only else shape.elements
        return sum(_rt9_bytes_of(e.text) for e in elems)
    return math.prod(shape.dims) * _rt9_BITS[shape.dtype] // 8


# ---------------------------------------------------------------- predict_layer_flops


def _rt9_layer(m, k, n, data, model, *, k1_first=True, col_mv=True):
    rows, cols = m // data, n // model
    block = rows * cols
    epilogue = 2 * block
    if k1_first and k == 1:
        return block + epilogue
    if rows == 1 or (col_mv and cols == 1):
        if k == 1:
            return block + epilogue
        return block * (k + (k - 1)) + epilogue
    return block * 2 * k + epilogue


@wrong(
    "predict_layer_flops",
    why="'a multiply alone when k = 1': checks the block shape first and only looks at k = 1 "
    "inside the one-row/one-column branch, so a k = 1 dot with a block of 2+ rows and 2+ "
    "columns is counted as a matmul (2 flops per element); wrong on m=64,k=1,n=128,data=2,"
    "model=2: 8192 instead of 6144 (32x64 block: multiply 2048 + bias 2048 + relu 2048)",
)
def _rt9_predict_layer_flops_k1_only_for_vectors(
    m: int, k: int, n: int, data: int, model: int
) -> int:
    return _rt9_layer(m, k, n, data, model, k1_first=False)


@wrong(
    "predict_layer_flops",
    why="'a multiply and a reduce over k when the block is a single row or a single column': "
    "only recognises the single-row case (the README's x [2,8] example), a single-column "
    "block is counted as a matmul; wrong on m=8,k=8,n=2,data=2,model=2 (4x1 block): "
    "4*2*8+8 = 72 instead of 4*(8+7)+8 = 68",
)
def _rt9_predict_layer_flops_row_only_mv(m: int, k: int, n: int, data: int, model: int) -> int:
    return _rt9_layer(m, k, n, data, model, col_mv=False)


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'all arrays of itemsize-byte elements ... bytes as collective_bytes counts them': "
    "assumes the partial sums are accumulated and all-reduced in f32 (the README's 'f32 "
    "matmul rounds to bf16' read backwards), so 2-byte dtypes are charged 4 bytes; wrong on "
    "batch=8,width=16,hidden=32,data=2,model=2,itemsize=2: 4*16*4=256 instead of 128",
)
def _rt9_predict_allreduce_bytes_f32_accumulate(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return (batch // data) * width * max(itemsize, 4)


@wrong(
    "predict_allreduce_bytes",
    why="'the bytes each device receives from the all-reduce (the logical result on one "
    "device)': reasons like a reduce-scatter ('each device ends with its share of the sum'), "
    "dividing the output block by model; wrong on batch=8,width=16,hidden=32,data=2,model=2,"
    "itemsize=4: 4*8*4=128 instead of 4*16*4=256",
)
def _rt9_predict_allreduce_bytes_scatter_share(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return (batch // data) * (width // model) * itemsize


# ---------------------------------------------------------------- padded_bytes


def _rt9_padded(shape_text, *, packed_rows=False, skip_ones=False):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    tiles = re.findall(r"\(([\d,]+)\)", layout.split("S(")[0])
    if tiles and dims:
        tile = [int(t) for t in tiles[0].split(",")]
        if packed_rows and len(tiles) > 1 and len(tile) >= 2:
            sub = [int(t) for t in tiles[1].split(",")]
            if len(sub) == 2:
                tile[-2] *= sub[0]
        m2m = list(shape.minor_to_major)
        for k, t in enumerate(reversed(tile)):
            if k < len(m2m):
                d = dims[m2m[k]]
                if skip_ones and d == 1:
                    continue
                dims[m2m[k]] = -(-d // t) * t
    return math.prod(dims) * _rt9_BITS[shape.dtype] // 8


@wrong(
    "padded_bytes",
    why="'later tiles such as (2,1) split the first one without adding padding': reads (2,1) "
    "as packing pairs of rows, so a bf16 T(8,128)(2,1) pads the second-minor dimension to 16; "
    "wrong on bf16[3,5,129]{2,0,1:T(4,128)(2,1)}: pads dim 0 to 8 (not 4): 5*8*256*2=20480 "
    "instead of 10240",
)
def _rt9_padded_bytes_packed_rows(shape_text: str) -> int:
    return _rt9_padded(shape_text, packed_rows=True)


@wrong(
    "padded_bytes",
    why="'each of them, a dimension of 1 too, is padded': leaves dimensions of size 1 "
    "unpadded (a size-1 dimension 'is squeezed'); wrong on bf16[1,1000]{1,0:T(2,128)(2,1)}: "
    "1*1024*2 = 2048 instead of 2*1024*2 = 4096",
)
def _rt9_padded_bytes_unit_dims_free(shape_text: str) -> int:
    return _rt9_padded(shape_text, skip_ones=True)


# ---------------------------------------------------------------- collective_bytes


def _rt9_collective_bytes(hlo_text, *, fusion_only=False, first_only=False):
    module = parse_hlo(hlo_text)
    comps = list(module.computations)
    if fusion_only:
        keep = {module.entry.name}
        todo = [module.entry]
        while todo:
            c = todo.pop()
            for inst in c:
                if inst.opcode == "fusion":
                    for name in inst.called_computations:
                        if name not in keep:
                            keep.add(name)
                            todo.append(module.computation(name))
        comps = [c for c in comps if c.name in keep]
    out = {}
    seen = set()
    for comp in comps:
        for inst in comp:
            if inst.opcode not in _rt9_KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            out[inst.opcode] = out.get(inst.opcode, 0) + _rt9_bytes_of(
                inst.shape, first_only=first_only
            )
    return out


@wrong(
    "collective_bytes",
    why="'any computation': walks ENTRY and what its fusions call (where the TPU async "
    "wrappers put the collectives), so a collective in a while body, a call or a conditional "
    "branch is missed; wrong on a module whose while body holds `ar = f32[128] all-reduce(p), "
    "channel_id=3, to_apply=add`: {'all-reduce': 512} expected, {} given",
)
def _rt9_collective_bytes_fusion_bodies_only(hlo_text: str) -> dict[str, int]:
    return _rt9_collective_bytes(hlo_text, fusion_only=True)


@wrong(
    "collective_bytes",
    why="'a tuple result: the sum of its elements': a combined (tuple-shaped) all-reduce or "
    "all-to-all is charged its first element only ('the operands are the same shape'); wrong "
    "on `ar = (f32[256], f32[64,64]) all-reduce(a, b), channel_id=1`: 1024+16384 expected, "
    "1024 given",
)
def _rt9_collective_bytes_tuple_first(hlo_text: str) -> dict[str, int]:
    return _rt9_collective_bytes(hlo_text, first_only=True)


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="'Use the number in parameter(N)': numbers the ENTRY parameters by the order they are "
    "printed (0, 1, 2, ...), which is the schedule order, not the parameter number; wrong on "
    "an ENTRY printing `%b = ... parameter(1)` before `%a = ... parameter(0)` with %a "
    "copy-started into S(1): {0: 'prefetch'} expected, {1: 'prefetch'} given",
)
def _rt9_prefetched_parameters_print_order(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    numbers = {}
    for inst in entry:
        if inst.opcode == "parameter":
            numbers[inst.name] = len(numbers)
    out = {}
    for inst in entry:
        if inst.opcode not in ("copy-start", "copy") or not inst.operands:
            continue
        src = inst.operands[0]
        if src not in numbers:
            continue
        shape = Shape(inst.shape)
        dest = shape.elements[0] if shape.is_tuple else shape
        if "S(1)" not in (dest.layout or ""):
            continue
        if inst.opcode == "copy":
            out[numbers[src]] = "copy"
        elif "cross_program_prefetch_index" in inst.attributes_text:
            out[numbers[src]] = "cross-program prefetch"
        else:
            out[numbers[src]] = "prefetch"
    return out


# ---------------------------------------------------------------- decide tasks


@wrong(
    "step_donation",
    why="'the aliased bytes equal the params and momentum bytes': donates the momentum only "
    "(reasoning the params are still read by the loss inside the step, so they must not be "
    "given away); aliased bytes are the momentum's alone and the peak does not drop by the "
    "params' bytes",
)
def _rt9_step_donation_momentum_only() -> tuple[int, ...]:
    return (1,)


@wrong(
    "gather_free_specs",
    why="'no all-gather ... output P('data', None)': Megatron split for w1, but w2 split over "
    "both axes (hidden over 'model', width over 'data', 'to save more memory'); the output's "
    "columns then lie on 'data' while its rows must be on 'data' too, so the partitioner has "
    "to move data to give P('data', None): XLA:CPU over 4 devices (x f32[512,256]) compiles "
    "an all-gather next to the all-reduce (checked), which the budget forbids",
)
def _rt9_gather_free_specs_w2_over_both() -> tuple[P, P]:
    return P(None, "model"), P("model", "data")


# ---------------------------------------------------------------- reading tasks, structure

_rt9_SKIP = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_rt9_MOVE = {
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
    *_rt9_KINDS,
}


def _rt9_has_target(comps, target):
    return any(
        i.opcode == "custom-call" and f'"{target}"' in i.attributes_text for c in comps for i in c
    )


def _rt9_collective_in(comps):
    for c in comps:
        for i in c:
            if i.opcode in _rt9_KINDS:
                return i
    return None


def _rt9_starts_and_dones(module):
    entry = module.entry
    insts = list(entry)
    out = {}
    for at, inst in enumerate(insts):
        if inst.opcode == "fusion" and "kCustom" in (inst.attribute("kind") or ""):
            comps = reachable(module, inst.called_computations)
            coll = _rt9_collective_in(comps)
            if coll is None or not _rt9_has_target(comps, "AsyncCollectiveStart"):
                continue
            for later in insts[at + 1 :]:
                if later.opcode != "fusion":
                    continue
                lc = reachable(module, later.called_computations)
                c2 = _rt9_collective_in(lc)
                if (
                    c2 is not None
                    and _rt9_has_target(lc, "AsyncCollectiveDone")
                    and c2.attribute("channel_id") == coll.attribute("channel_id")
                ):
                    out[inst.name] = later.name
                    break
        elif inst.opcode.endswith("-start") and inst.opcode[:-6] in _rt9_KINDS:
            want = inst.opcode[:-6] + "-done"
            for later in insts[at + 1 :]:
                if later.opcode == want and inst.name in later.operands:
                    out[inst.name] = later.name
                    break
    return out


def _rt9_overlap(hlo_text, *, sort=False):
    module = parse_hlo(hlo_text)
    names = [i.name for i in module.entry]
    insts = list(module.entry)
    out = {}
    for start, done in _rt9_starts_and_dones(module).items():
        a, b = names.index(start), names.index(done)
        work = [i.name for i in insts[a + 1 : b] if i.opcode not in _rt9_SKIP]
        out[start] = sorted(work) if sort else work
    return out


@wrong(
    "overlapped_work",
    why="'in the order the module prints them': returns each list sorted by name (to be "
    "'deterministic'); with the tests' renamed instructions %n9 and %n10 between a start and "
    "its done (printed n9 then n10), it gives ['n10', 'n9'] instead of ['n9', 'n10']",
)
def _rt9_overlapped_work_sorted_names(hlo_text: str) -> dict[str, list[str]]:
    return _rt9_overlap(hlo_text, sort=True)


@wrong(
    "matmul_fusions",
    why="'For every ENTRY fusion whose called computations ... hold a convolution': keeps only "
    "kind=kOutput fusions (where the README says the matmul and its epilogue sit), so a "
    "convolution in a kLoop fusion or in a kCustom async_collective_fusion that threads an "
    "in-flight gather through the matmul is left out; wrong on an ENTRY "
    "`fusion(...), kind=kCustom, calls=%c` whose %c holds convolution + add",
)
def _rt9_matmul_fusions_koutput_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion" or "kOutput" not in (inst.attribute("kind") or ""):
            continue
        comps = reachable(module, inst.called_computations)
        ops = [i.opcode for c in comps for i in c]
        if "convolution" not in ops:
            continue
        out[inst.name] = sorted({o for o in ops if o != "convolution" and o not in _rt9_MOVE})
    return out


def _rt9_group_text(text, n):
    text = text.strip()
    if text.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
        axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m.group(1).split(",")]
        names = [a for a, _ in axes]
        chosen = [x.strip("' ") for x in m.group(2).split(",") if x.strip("' ")]
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
            arr = arr.T  # "T" is a transpose
        return arr.reshape(g, s).tolist()
    inner = text[1:-1].strip()
    if not inner:
        return [list(range(n))]
    return [[int(v) for v in p.split(",") if v.strip()] for p in re.findall(r"\{([^{}]*)\}", inner)]


@wrong(
    "device_groups",
    why="'an iota list [G,S]<=[dims]T(perm)': applies T(...) as numpy's .T (reverse every "
    "axis), right for the 2-D T(1,0) of every recording, wrong for a 3-D permutation; wrong on "
    "replica_groups=[4,2]<=[2,2,2]T(0,2,1): expects [[0,2],[1,3],[4,6],[5,7]], gives "
    "[[0,4],[2,6],[1,5],[3,7]]",
)
def _rt9_device_groups_numpy_T(hlo_text: str) -> dict[int, list[list[int]]]:
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
            out[int(ch)] = _rt9_group_text(rg, n)
    return out
