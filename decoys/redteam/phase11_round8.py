"""Red-team wrong answers for phase 11, round 8, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt8_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt8_SKIP = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_rt8_MOVE = {
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
    *_rt8_KINDS,
}
_rt8_BITS = {
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


def _rt8_comps(module, inst):
    return reachable(module, inst.called_computations)


def _rt8_has_target(comps, target):
    return any(
        i.opcode == "custom-call" and f'custom_call_target="{target}"' in i.attributes_text
        for c in comps
        for i in c
    )


def _rt8_collective_in(comps):
    for c in comps:
        for i in c:
            if i.opcode in _rt8_KINDS:
                return i
    return None


def _rt8_is_tpu_fusion(inst):
    return inst.opcode == "fusion" and "kCustom" in (inst.attribute("kind") or "")


def _rt8_starts(module, is_start=None):
    """{start name: opcode}; is_start(module, inst, comps) decides a TPU start."""
    out = {}
    for inst in module.entry:
        if _rt8_is_tpu_fusion(inst):
            comps = _rt8_comps(module, inst)
            coll = _rt8_collective_in(comps)
            if coll is None:
                continue
            if is_start is None:
                ok = _rt8_has_target(comps, "AsyncCollectiveStart")
            else:
                ok = is_start(module, inst, comps)
            if ok:
                out[inst.name] = coll.opcode
        elif inst.opcode == "async-start":
            root = module.computation(inst.called_computations[0]).root
            if root.opcode in _rt8_KINDS:
                out[inst.name] = root.opcode
        elif inst.opcode.endswith("-start") and inst.opcode[: -len("-start")] in _rt8_KINDS:
            out[inst.name] = inst.opcode[: -len("-start")]
    return out


def _rt8_done_of(module, start):
    entry = module.entry
    names = [i.name for i in entry]
    s = entry[start]
    at = names.index(start)
    if s.opcode == "fusion":
        coll = _rt8_collective_in(_rt8_comps(module, s))
        for inst in entry.instructions[at + 1 :]:
            if inst.opcode == "fusion":
                comps = _rt8_comps(module, inst)
                if _rt8_has_target(comps, "AsyncCollectiveDone"):
                    c = _rt8_collective_in(comps)
                    if c is not None and c.attribute("channel_id") == coll.attribute("channel_id"):
                        return inst.name
        return None
    want = "async-done" if s.opcode == "async-start" else s.opcode[:-6] + "-done"
    for inst in entry.instructions[at + 1 :]:
        if inst.opcode == want and start in inst.operands:
            return inst.name
    return None


def _rt8_overlap(hlo_text, *, skip=_rt8_SKIP, keep_empty=True):
    module = parse_hlo(hlo_text)
    entry = module.entry
    names = [i.name for i in entry]
    out = {}
    for start in _rt8_starts(module):
        done = _rt8_done_of(module, start)
        if done is None:
            continue
        a, b = names.index(start), names.index(done)
        work = [i.name for i in entry.instructions[a + 1 : b] if i.opcode not in skip]
        if work or keep_empty:
            out[start] = work
    return out


def _rt8_groups(text, n_devices, *, perm_of=None):
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


def _rt8_device_groups(hlo_text, perm_of):
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
            out[int(ch)] = _rt8_groups(rg, n, perm_of=perm_of)
    return out


def _rt8_pad(d, t):
    return -(-d // t) * t


def _rt8_layer_dot(r, c, k):
    if k == 1:
        return r * c
    if r == 1 or c == 1:
        return r * c * k + r * c * (k - 1)
    return 2 * r * c * k


def _rt8_bytes_of(shape_text):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt8_bytes_of(e.text) for e in shape.elements)
    return math.prod(shape.dims) * _rt8_BITS[shape.dtype] // 8


# ---------------------------------------------------------------- async_collectives


def _rt8_not_done(module, inst, comps):
    # a kCustom fusion holding a collective is a start unless it is the done
    return not _rt8_has_target(comps, "AsyncCollectiveDone")


@wrong(
    "async_collectives",
    why="'a kind=kCustom fusion whose called computations hold it and a custom-call "
    "AsyncCollectiveStart': takes every kCustom fusion holding a collective that is not the "
    "done (no AsyncCollectiveDone marker) for a start, never looking for the start marker; "
    "right on the recordings (the overlap fusion there is kOutput), wrong when the fusion "
    "that threads the in-flight buffers through compute is kind=kCustom and holds its copy "
    "of the all-gather (same channel_id) with no marker: it is reported as a second start",
)
def _rt8_async_collectives_not_done(hlo_text: str) -> dict[str, str]:
    return _rt8_starts(parse_hlo(hlo_text), is_start=_rt8_not_done)


# ---------------------------------------------------------------- overlapped_work


@wrong(
    "overlapped_work",
    why="'the ENTRY instructions strictly between the start and its done': slices "
    "entry[start+1 : done+1] for the generic X-start/X-done spelling (the done 'still waits "
    "for the transfer'), so the done itself is listed; right on every TPU recording (TPU "
    "fusions are handled strictly), wrong on `ags = all-gather-start(p0); m = multiply(a,b); "
    "agd = all-gather-done(ags)`: gives [m, agd] instead of [m]",
)
def _rt8_overlapped_work_generic_inclusive(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    names = [i.name for i in entry]
    out = {}
    for start in _rt8_starts(module):
        done = _rt8_done_of(module, start)
        if done is None:
            continue
        a, b = names.index(start), names.index(done)
        if entry[start].opcode != "fusion":
            b += 1
        out[start] = [i.name for i in entry.instructions[a + 1 : b] if i.opcode not in _rt8_SKIP]
    return out


# ---------------------------------------------------------------- matmul_fusions


@wrong(
    "matmul_fusions",
    why="'XLA:TPU prints a dot as a convolution ... hold a convolution': recognises a matmul "
    "by the README's `dim_labels=bf_io->bf` only, so a convolution with other labels (a "
    "transposed operand, x.T @ dy in a gradient: `fb_io->bf`, w stored transposed: "
    "`bf_oi->bf`, or a batched dot `0bf_0io->0bf`) is neither a matmul nor filtered out; "
    "wrong on an ENTRY fusion holding `convolution(...), dim_labels=fb_io->bf` and an add: "
    "missing from the dict",
)
def _rt8_matmul_fusions_bf_io_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        insts = [i for c in _rt8_comps(module, inst) for i in c]
        if not any(
            i.opcode == "convolution" and "dim_labels=bf_io->bf" in i.attributes_text for i in insts
        ):
            continue
        out[inst.name] = sorted(
            {i.opcode for i in insts if i.opcode != "convolution" and i.opcode not in _rt8_MOVE}
        )
    return out


# ---------------------------------------------------------------- device_groups


@wrong(
    "device_groups",
    why="'for every collective with a replica_groups attribute, in any computation': reads "
    "only the five collective opcodes (all-gather, all-reduce, reduce-scatter, all-to-all, "
    "collective-permute), so the generic async spelling is skipped; right on every TPU "
    "recording (TPU wraps plain all-gathers), wrong on `ags = all-gather-start(p), "
    "channel_id=3, replica_groups={{0,1},{2,3}}` (or all-reduce-start, collective-broadcast): "
    "channel 3 is missing",
)
def _rt8_device_groups_five_opcodes(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    attrs = module.attributes
    n = int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))
    out = {}
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in _rt8_KINDS:
                continue
            rg = inst.attribute("replica_groups")
            ch = inst.attribute("channel_id")
            if rg is None or ch is None or int(ch) in out:
                continue
            out[int(ch)] = _rt8_groups(rg, n)
    return out


# ---------------------------------------------------------------- collective_bytes


def _rt8_collective_bytes(hlo_text, *, all_keys=False, rs_operand=False):
    module = parse_hlo(hlo_text)
    shapes = {}
    for comp in module.computations:
        for inst in comp:
            shapes[(comp.name, inst.name)] = inst.shape
    out = {k: 0 for k in _rt8_KINDS} if all_keys else {}
    seen = set()
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in _rt8_KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            text = inst.shape
            if rs_operand and inst.opcode == "reduce-scatter":
                text = shapes[(comp.name, inst.operands[0])]
            out[inst.opcode] = out.get(inst.opcode, 0) + _rt8_bytes_of(text)
    return out


@wrong(
    "collective_bytes",
    why="'Opcodes with no collective are left out': starts from {kind: 0 for each of the "
    "five kinds} and adds, so absent kinds stay as zeros; wrong on recorded/fsdp4_v5e.hlo "
    "(only all-gathers): returns all-reduce/reduce-scatter/all-to-all/collective-permute: 0 "
    "too",
)
def _rt8_collective_bytes_zero_keys(hlo_text: str) -> dict[str, int]:
    return _rt8_collective_bytes(hlo_text, all_keys=True)


@wrong(
    "collective_bytes",
    why="'Its bytes are those of its result on one device': a reduce-scatter is charged its "
    "operand (every device 'receives the others' slices to sum', the whole array) instead of "
    "the slice it ends with; wrong on `rs = f32[16] reduce-scatter(f32[64] p), "
    "replica_groups={{0,1,2,3}}, dimensions={0}`: 256 bytes instead of 64",
)
def _rt8_collective_bytes_reduce_scatter_operand(hlo_text: str) -> dict[str, int]:
    return _rt8_collective_bytes(hlo_text, rs_operand=True)


# ---------------------------------------------------------------- padded_bytes


def _rt8_padded(shape_text, bits, pad):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    m = re.search(r"T\(([\d,]+)\)", layout)
    if m and dims:
        tile = [int(t) for t in m.group(1).split(",")]
        m2m = list(shape.minor_to_major)
        for k, t in enumerate(reversed(tile)):
            if k < len(m2m):
                dims[m2m[k]] = pad(dims[m2m[k]], t)
    return math.prod(dims) * bits(shape.dtype) // 8


@wrong(
    "padded_bytes",
    why="'Bytes per element from the dtype's bit width (... pred: one byte)': a pred is "
    "charged one bit (a boolean is a bit; jnp packs masks), width table otherwise right; "
    "wrong on `pred[9,130]{1,0:T(8,128)(4,1)}`: 16*256 = 4096 bytes, this gives 512",
)
def _rt8_padded_bytes_pred_bit(shape_text: str) -> int:
    return _rt8_padded(
        shape_text, lambda d: 1 if d == "pred" else _rt8_BITS[d], lambda d, t: -(-d // t) * t
    )


@wrong(
    "padded_bytes",
    why="'each of them is padded up to a multiple of its tile size' (bytes, an int): rounds "
    "up with math.ceil(d / t) * t in floats; right on every realistic shape, wrong once a "
    "dimension passes 2**53: `s8[9007199254740993]{0:T(1024)}` is 2**43 + 1 tiles, "
    "9007199254741016 bytes; this gives 9007199254740992",
)
def _rt8_padded_bytes_float_ceil(shape_text: str) -> int:
    return _rt8_padded(shape_text, lambda d: _rt8_BITS[d], lambda d, t: math.ceil(d / t) * t)


# ---------------------------------------------------------------- predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="'a reduce of k values takes k - 1 adds': counts the reduce as k adds (starting from "
    "its init value 0), so a single-row or single-column block costs 2k + 2 per element, "
    "the same as a matmul; wrong on the README's own (2, 8, 8, 2, 2): block 1 x 4, 72 "
    "instead of 68",
)
def _rt8_predict_layer_flops_reduce_k_adds(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // data, n // model
    e = r * c
    if k == 1:
        dot = e
    elif r == 1 or c == 1:
        dot = e * k + e * k
    else:
        dot = 2 * e * k
    return dot + 2 * e


# ---------------------------------------------------------------- predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'the bytes each device receives ... (the logical result on one device)': counts the "
    "partial sums it receives from each of the other model - 1 devices of its group, "
    "(model - 1) blocks of [batch/data, width], instead of the one summed block the "
    "all-reduce returns; equal on every model = 2 mesh and 0 on model = 1, wrong on "
    "(512, 256, 1024, 1, 4, 4): 1572864 instead of 524288",
)
def _rt8_predict_allreduce_bytes_per_peer(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    return (model - 1) * (batch // data) * width * itemsize


# ---------------------------------------------------------------- step_donation


@wrong(
    "step_donation",
    why="'the aliased bytes equal the params and momentum bytes': donates the momentum only "
    "(params are 'read by the caller to evaluate'), so params' bytes are not aliased and "
    "the peak stays above the undonated peak minus params+momentum; wrong on the stated "
    "sgd_step: (1,)",
)
def _rt8_step_donation_momentum_only() -> tuple[int, ...]:
    return (1,)


# ---------------------------------------------------------------- prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="'Use the number in parameter(N)': reads N with the pattern parameter\\((\\d)\\) (one "
    "digit, every recording has fewer than ten parameters), so a parameter numbered 10 or "
    "more is never matched and left out; wrong on an ENTRY with `%p = f32[512,256]{1,0} "
    "parameter(12)` copy-started into `{1,0:T(8,128)S(1)}`: {12: 'prefetch'} expected, {} given",
)
def _rt8_prefetched_parameters_one_digit(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    lines = hlo_text.splitlines()
    numbers = {}
    for inst in entry:
        if inst.opcode == "parameter":
            hit = re.search(r"parameter\((\d)\)", lines[inst.line_no - 1])
            if hit:
                numbers[inst.name] = int(hit.group(1))
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
