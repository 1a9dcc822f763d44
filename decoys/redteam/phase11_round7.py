"""Red-team wrong answers for phase 11, round 7, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt7_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt7_SKIP = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_rt7_MOVE = {
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
    *_rt7_KINDS,
}
_rt7_BITS = {
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


# ---------------------------------------------------------------- shared helpers


def _rt7_comps(module, inst):
    return reachable(module, inst.called_computations)


def _rt7_has_target(comps, target):
    return any(
        i.opcode == "custom-call" and f'custom_call_target="{target}"' in i.attributes_text
        for c in comps
        for i in c
    )


def _rt7_collective_in(comps):
    for c in comps:
        for i in c:
            if i.opcode in _rt7_KINDS:
                return i
    return None


def _rt7_is_tpu_fusion(inst):
    return inst.opcode == "fusion" and "kCustom" in (inst.attribute("kind") or "")


def _rt7_starts(module, is_start=None):
    """{start name: opcode}; is_start(module, inst, comps) decides a TPU start."""
    out = {}
    for inst in module.entry:
        if _rt7_is_tpu_fusion(inst):
            comps = _rt7_comps(module, inst)
            coll = _rt7_collective_in(comps)
            if coll is None:
                continue
            if is_start is None:
                ok = _rt7_has_target(comps, "AsyncCollectiveStart")
            else:
                ok = is_start(module, inst, comps)
            if ok:
                out[inst.name] = coll.opcode
        elif inst.opcode == "async-start":
            root = module.computation(inst.called_computations[0]).root
            if root.opcode in _rt7_KINDS:
                out[inst.name] = root.opcode
        elif inst.opcode.endswith("-start") and inst.opcode[: -len("-start")] in _rt7_KINDS:
            out[inst.name] = inst.opcode[: -len("-start")]
    return out


def _rt7_done_of(module, start):
    entry = module.entry
    names = [i.name for i in entry]
    s = entry[start]
    at = names.index(start)
    if s.opcode == "fusion":
        coll = _rt7_collective_in(_rt7_comps(module, s))
        for inst in entry.instructions[at + 1 :]:
            if inst.opcode == "fusion":
                comps = _rt7_comps(module, inst)
                if _rt7_has_target(comps, "AsyncCollectiveDone"):
                    c = _rt7_collective_in(comps)
                    if c is not None and c.attribute("channel_id") == coll.attribute("channel_id"):
                        return inst.name
        return None
    want = "async-done" if s.opcode == "async-start" else s.opcode[:-6] + "-done"
    for inst in entry.instructions[at + 1 :]:
        if inst.opcode == want and start in inst.operands:
            return inst.name
    return None


def _rt7_overlap(hlo_text, *, skip=_rt7_SKIP, keep_empty=True):
    module = parse_hlo(hlo_text)
    entry = module.entry
    names = [i.name for i in entry]
    out = {}
    for start in _rt7_starts(module):
        done = _rt7_done_of(module, start)
        if done is None:
            continue
        a, b = names.index(start), names.index(done)
        work = [i.name for i in entry.instructions[a + 1 : b] if i.opcode not in skip]
        if work or keep_empty:
            out[start] = work
    return out


def _rt7_groups(text, n_devices, *, perm_of=None):
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
            perm = [int(p) for p in m.group(4).split(",")]
            arr = perm_of(arr, perm) if perm_of else arr.transpose(perm)
        return arr.reshape(g, s).tolist()
    inner = text[1:-1].strip()
    if not inner:
        return [list(range(n_devices))]
    parts = re.findall(r"\{([^{}]*)\}", inner)
    return [[int(v) for v in p.split(",") if v.strip()] for p in parts]


def _rt7_device_groups(hlo_text, perm_of):
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
            out[int(ch)] = _rt7_groups(rg, n, perm_of=perm_of)
    return out


def _rt7_pad(d, t):
    return -(-d // t) * t


def _rt7_layer_dot(r, c, k):
    if k == 1:
        return r * c
    if r == 1 or c == 1:
        return r * c * k + r * c * (k - 1)
    return 2 * r * c * k


# ---------------------------------------------------------------- async_collectives


@wrong(
    "async_collectives",
    why="'a kind=kCustom fusion whose called computations hold it and a custom-call "
    "AsyncCollectiveStart': tells the TPU start from the done by its result being a tuple "
    "(start: in-flight buffers + sync flags; done: the array), never reading the marker; "
    "wrong on a done fusion of a combined collective (two weights gathered by one "
    "all-gather, done result `(bf16[1024,1024], bf16[1024,512])`): the done is reported as a "
    "start too",
)
def _rt7_async_collectives_tuple_result(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    return _rt7_starts(module, is_start=lambda mod, inst, comps: Shape(inst.shape).is_tuple)


# ---------------------------------------------------------------- overlapped_work


@wrong(
    "overlapped_work",
    why="'For every start of async_collectives': a start whose window holds no work is left "
    "out of the dict (built by appending, only keys that got a name) instead of mapping to "
    "[]; wrong on `all-gather-start` immediately followed by (or separated only by a "
    "get-tuple-element/bitcast from) its `all-gather-done`: {start: []} expected, key missing",
)
def _rt7_overlapped_work_nonempty_only(hlo_text: str) -> dict[str, list[str]]:
    return _rt7_overlap(hlo_text, keep_empty=False)


@wrong(
    "overlapped_work",
    why="'leaving out those that do no work: get-tuple-element, bitcast, tuple, parameter, "
    "constant' (exhaustive): also leaves out async plumbing (copy-start/copy-done and other "
    "collectives' starts and dones, TPU kCustom wrappers) as 'transfers, not compute'; wrong on "
    "recorded/fsdp4_v5e.hlo, whose gather window holds %copy-done (a DMA finishing) before "
    "%fusion.9",
)
def _rt7_overlapped_work_drops_async_plumbing(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    names = [i.name for i in entry]
    out = {}
    for start in _rt7_starts(module):
        done = _rt7_done_of(module, start)
        if done is None:
            continue
        a, b = names.index(start), names.index(done)
        work = []
        for i in entry.instructions[a + 1 : b]:
            if i.opcode in _rt7_SKIP:
                continue
            if i.opcode.endswith("-start") or i.opcode.endswith("-done"):
                continue
            if _rt7_is_tpu_fusion(i):
                comps = _rt7_comps(module, i)
                if _rt7_has_target(comps, "AsyncCollectiveStart") or _rt7_has_target(
                    comps, "AsyncCollectiveDone"
                ):
                    continue
            work.append(i.name)
        out[start] = work
    return out


# ---------------------------------------------------------------- matmul_fusions


@wrong(
    "matmul_fusions",
    why="'whose called computations, nested ones included': walks the computations with ONE "
    "visited set shared by all ENTRY fusions (to avoid re-walking), so a computation called "
    "by two fusions (a shared reducer such as a `max`/`add` region used by reduces in two "
    "matmul fusions, or a nested fusion computation reused) counts only for the first; wrong "
    "on two ENTRY convolution fusions whose reduce ops share one `maximum` reducer: the second "
    "fusion's list lacks 'maximum'",
)
def _rt7_matmul_fusions_shared_visited(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    visited: set[str] = set()
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        stack = list(inst.called_computations)
        ops: set[str] = set()
        has_conv = False
        while stack:
            name = stack.pop()
            if name in visited:
                continue
            visited.add(name)
            comp = module.computation(name)
            if comp is None:
                continue
            for i in comp:
                if i.opcode == "convolution":
                    has_conv = True
                elif i.opcode not in _rt7_MOVE:
                    ops.add(i.opcode)
                stack.extend(i.called_computations)
        if has_conv:
            out[inst.name] = sorted(ops)
    return out


@wrong(
    "matmul_fusions",
    why="'for every ENTRY fusion whose called computations hold a convolution': keeps only "
    "kind=kOutput fusions (README: a matmul sits 'inside a kind=kOutput fusion') and skips "
    "the kCustom async-collective fusions; wrong on an ENTRY kind=kCustom "
    "async_collective_fusion that threads the in-flight buffers through a convolution (the "
    "overlapped matmul of an FSDP layer): it must be listed",
)
def _rt7_matmul_fusions_koutput_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion" or (inst.attribute("kind") or "") != "kOutput":
            continue
        comps = _rt7_comps(module, inst)
        ops = {i.opcode for c in comps for i in c}
        if "convolution" in ops:
            out[inst.name] = sorted(o for o in ops if o != "convolution" and o not in _rt7_MOVE)
    return out


# ---------------------------------------------------------------- device_groups


@wrong(
    "device_groups",
    why="'[G,S]<=[dims]T(perm)': applies the inverse permutation (np.argsort(perm), 'axis i "
    "goes to position perm[i]') instead of transpose(perm); the same for every 2-D T(1,0) and "
    "any self-inverse perm, wrong on a 3-cycle: `[2,4]<=[2,2,2]T(1,2,0)` is [[0,4,1,5],"
    "[2,6,3,7]] (as HloSharding reads the same iota), this gives [[0,2,4,6],[1,3,5,7]]",
)
def _rt7_device_groups_inverse_perm(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt7_device_groups(hlo_text, lambda arr, perm: arr.transpose(np.argsort(perm)))


@wrong(
    "device_groups",
    why="'[G,S]<=[dims]T(perm)': transposes with NumPy's `.T` (reverse every axis), which is "
    "T(1,0) for the 2-D dims of the recordings; wrong on a 3-D perm that is not the reversal: "
    "`[4,2]<=[2,2,2]T(0,2,1)` is [[0,2],[1,3],[4,6],[5,7]], this gives [[0,4],[2,6],[1,5],[3,7]]",
)
def _rt7_device_groups_numpy_T(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt7_device_groups(hlo_text, lambda arr, perm: arr.T)


# ---------------------------------------------------------------- collective_bytes


@wrong(
    "collective_bytes",
    why="'Count every ... collective-permute ... once per channel_id': a collective-permute's "
    "bytes are charged only to the devices that appear as a target in source_target_pairs, "
    "averaged over the devices (result bytes x targets / devices); wrong on a shift that "
    "does not wrap, `collective-permute(f32[128,256]), source_target_pairs={{0,1},{1,2},{2,3}}` "
    "on 4 devices: 131072 bytes, this gives 98304",
)
def _rt7_collective_bytes_permute_average(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    seen = set()
    out: dict[str, int] = {}
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in _rt7_KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            b = _rt7_bytes_of(inst.shape)
            if inst.opcode == "collective-permute":
                pairs = re.findall(r"\{(\d+),(\d+)\}", inst.attribute("source_target_pairs") or "")
                targets = {int(t) for _, t in pairs}
                if pairs and n > 1:
                    b = b * len(targets) // max(n, len(targets))
            out[inst.opcode] = out.get(inst.opcode, 0) + b
    return out


def _rt7_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt7_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt7_BITS[shape.dtype] // 8


# ---------------------------------------------------------------- padded_bytes


@wrong(
    "padded_bytes",
    why="'The layout lists dimensions minor to major': when the layout is not the default "
    "descending one, reverses the dims (what {0,1} means for 2-D) instead of following "
    "minor_to_major; right on every 2-D layout, wrong on a 3-D permutation: "
    "`f32[3,5,129]{1,2,0:T(8,128)}` pads dim 1 (5) to 128 and dim 2 (129) to 136: 208896 "
    "bytes; this gives 528384",
)
def _rt7_padded_bytes_reverse_if_unsorted(shape_text: str) -> int:
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    m = re.search(r"T\(([\d,]+)\)", layout)
    if m and dims:
        tile = [int(t) for t in m.group(1).split(",")]
        m2m = list(shape.minor_to_major)
        order = list(range(len(dims)))  # major..minor
        if m2m != sorted(m2m, reverse=True):
            order = order[::-1]
        minor_first = order[::-1]
        for k, t in enumerate(reversed(tile)):
            if k < len(minor_first):
                dims[minor_first[k]] = _rt7_pad(dims[minor_first[k]], t)
    return math.prod(dims) * _rt7_BITS[shape.dtype] // 8


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="'Use the number in parameter(N)': numbers the parameters by the order ENTRY prints "
    "their `parameter` instructions (0, 1, 2, ... as in the recordings); wrong on a scheduled "
    "ENTRY that prints `%p = parameter(2)` before `parameter(0)` and copy-starts it into S(1): "
    "{2: 'prefetch'} expected, this gives {0: 'prefetch'}",
)
def _rt7_prefetched_parameters_print_order(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    ordinal = {}
    for inst in entry:
        if inst.opcode == "parameter":
            ordinal[inst.name] = len(ordinal)
    out = {}
    for inst in entry:
        if inst.opcode not in ("copy-start", "copy"):
            continue
        src = inst.operands[0] if inst.operands else None
        if src not in ordinal:
            continue
        shape = Shape(inst.shape)
        dest = shape.elements[0] if inst.opcode == "copy-start" else shape
        if "S(1)" not in (dest.layout or ""):
            continue
        if inst.opcode == "copy":
            kind = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            kind = "cross-program prefetch"
        else:
            kind = "prefetch"
        out[ordinal[src]] = kind
    return out


# ---------------------------------------------------------------- predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="'a multiply and a reduce over k when the block is a single row or a single column': "
    "tests the GLOBAL x and w (m == 1 or n == 1) instead of one device's output block; wrong "
    "on the README case m=2, k=8, n=8 on 2 x 2 (blocks of 1 x 4: 68 flops, this gives 72)",
)
def _rt7_predict_layer_flops_global_small(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif m == 1 or n == 1:
        dot = r * c * k + r * c * (k - 1)
    else:
        dot = 2 * r * c * k
    return dot + 2 * r * c


@wrong(
    "predict_layer_flops",
    why="'x split P('data', None), w split P(None, 'model')': takes the block as m/model rows "
    "by n/data columns (axes swapped); the count is symmetric for big blocks, wrong where "
    "only one side is a single row/column: m=4, k=8, n=16, data=4, model=2 (block 1 x 8: "
    "8*8 + 8*7 + 16 = 136; this gives 2 x 4: 128 + 16 = 144)",
)
def _rt7_predict_layer_flops_axes_swapped(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // model, n // data
    return _rt7_layer_dot(r, c, k) + 2 * r * c


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'what does each device hold after its second matmul, and what must be added up': "
    "sums the hidden activations (relu(x @ w1) block, [batch/data, hidden]) instead of the "
    "output [batch/data, width]; right whenever hidden == width, wrong on "
    "(512, 256, 1024, 2, 2, 2): 256*256*2 = 131072, this gives 524288",
)
def _rt7_predict_allreduce_bytes_hidden(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return (batch // data) * hidden * itemsize


# ---------------------------------------------------------------- collective_bytes (loops)


@wrong(
    "collective_bytes",
    why="'Count every ... collective ... of any computation once per channel_id': charges a "
    "collective inside a while body once per loop trip (trip count read off the condition's "
    "`compare(counter, constant(N)), direction=LT`), as 'what a device receives per step'; "
    "wrong on a while loop of 3 trips whose body all-reduces f32[64,32]: 8192 bytes, this "
    "gives 24576",
)
def _rt7_collective_bytes_loop_trips(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    trips: dict[str, int] = {}
    for comp in module.computations:
        for inst in comp:
            if inst.opcode != "while":
                continue
            body = inst.attribute("body")
            cond = inst.attribute("condition")
            count = 1
            cc = module.computation((cond or "").lstrip("%"))
            if cc is not None:
                for i in cc:
                    if i.opcode == "constant":
                        try:
                            count = max(count, int(i.payload))
                        except (TypeError, ValueError):
                            pass
            if body:
                for c in reachable(module, [body.lstrip("%")]):
                    trips[c.name] = trips.get(c.name, 1) * count
    seen = set()
    out: dict[str, int] = {}
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in _rt7_KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            b = _rt7_bytes_of(inst.shape) * trips.get(comp.name, 1)
            out[inst.opcode] = out.get(inst.opcode, 0) + b
    return out


# ---------------------------------------------------------------- gather_free_specs


@wrong(
    "gather_free_specs",
    why="'no all-gather ... argument bytes at most x's plus half of the replicated weights': "
    "Megatron for w1, and w2 split by rows over 'model' AND by columns over 'data' to save "
    "more memory (a quarter of w2 per device); each device then computes only half the "
    "output columns for its rows, so the output P('data', None) needs an all-gather (libtpu "
    "v5e 2x2: all-gather + all-reduce)",
)
def _rt7_gather_free_specs_w2_columns_over_data() -> tuple[P, P]:
    return P(None, "model"), P("model", "data")
