"""Red team, phase 11, round 18: plausible wrong answers written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt18_COLL = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")


def _rt18_target(inst):
    return (inst.attribute("custom_call_target") or "").strip('"')


def _rt18_channel(inst):
    value = inst.attribute("channel_id")
    return int(value) if value is not None else None


def _rt18_body(module, inst, nested=True):
    if nested:
        comps = reachable(module, tuple(inst.called_computations))
    else:
        comps = [module.computation(n) for n in inst.called_computations]
        comps = [c for c in comps if c is not None]
    return [j for c in comps for j in c.instructions]


def _rt18_async(hlo_text, nested=True, any_start=False):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode == "fusion":
            body = _rt18_body(module, inst, nested)
            if any(
                j.opcode == "custom-call" and _rt18_target(j) == "AsyncCollectiveStart"
                for j in body
            ):
                for j in body:
                    if j.opcode in _rt18_COLL:
                        out[inst.name] = j.opcode
                        break
        elif inst.opcode.endswith("-start"):
            base = inst.opcode[: -len("-start")]
            if any_start or base in _rt18_COLL:
                out[inst.name] = base
    return out


@wrong(
    "async_collectives",
    why="Clause 'An async copy-start moves memory, it is no collective': every X-start op is taken as collective X, so HANDWRITTEN_ASYNC also reports {'copy-start': 'copy'}.",
)
def _rt18_async_collectives_any_start(hlo_text: str) -> dict[str, str]:
    return _rt18_async(hlo_text, any_start=True)


@wrong(
    "async_collectives",
    why="Clause 'whose called computations, nested ones included, hold it': looks only in the computation the fusion calls directly; a kCustom start whose all-reduce sits in a fusion nested inside its body (HANDWRITTEN_TPU with %reduction.1 moved into a nested kLoop fusion) is missed.",
)
def _rt18_async_collectives_top_body(hlo_text: str) -> dict[str, str]:
    return _rt18_async(hlo_text, nested=False)


@wrong(
    "async_collectives",
    why="Clause 'Names say nothing: the tests rename every instruction': finds TPU starts by the fusion's name 'async-collective-start', so HANDWRITTEN_TPU (%launch.a, %launch.b) gives {} instead of two starts.",
)
def _rt18_async_collectives_by_name(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode == "fusion" and inst.name.startswith("async-collective-start"):
            for j in _rt18_body(module, inst):
                if j.opcode in _rt18_COLL:
                    out[inst.name] = j.opcode
                    break
        elif inst.opcode.endswith("-start") and inst.opcode[:-6] in _rt18_COLL:
            out[inst.name] = inst.opcode[:-6]
    return out


def _rt18_overlap(
    hlo_text,
    first_done=False,
    skip=("get-tuple-element", "bitcast", "tuple", "parameter", "constant"),
):
    module = parse_hlo(hlo_text)
    entry = list(module.entry.instructions)
    pos = {inst.name: k for k, inst in enumerate(entry)}
    result = {}
    for start in _rt18_async(hlo_text):
        s = entry[pos[start]]
        done = None
        if s.opcode == "fusion":
            channels = {_rt18_channel(j) for j in _rt18_body(module, s) if j.opcode in _rt18_COLL}
            for inst in entry[pos[start] + 1 :]:
                if inst.opcode != "fusion":
                    continue
                body = _rt18_body(module, inst)
                if not any(
                    j.opcode == "custom-call" and _rt18_target(j) == "AsyncCollectiveDone"
                    for j in body
                ):
                    continue
                if first_done or any(
                    j.opcode in _rt18_COLL and _rt18_channel(j) in channels for j in body
                ):
                    done = inst.name
                    break
        else:
            for inst in entry[pos[start] + 1 :]:
                if inst.opcode.endswith("-done") and (first_done or start in inst.operands):
                    done = inst.name
                    break
        if done is None:
            continue
        result[start] = [i.name for i in entry[pos[start] + 1 : pos[done]] if i.opcode not in skip]
    return result


@wrong(
    "overlapped_work",
    why="Clause 'the same channel_id' pairs a start with its done: takes the first AsyncCollectiveDone / -done after the start, so in HANDWRITTEN_TPU (start a, start b, done b, done a) %launch.a's window ends at %finish.b.",
)
def _rt18_overlapped_work_first_done(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, first_done=True)


@wrong(
    "overlapped_work",
    why="Clause 'leaving out ... parameter, constant': leaves out only the plumbing (get-tuple-element, bitcast, tuple), so HANDWRITTEN_TPU's windows also list %two, %x and %w scheduled inside them.",
)
def _rt18_overlapped_work_keeps_params(hlo_text: str) -> dict[str, list[str]]:
    return _rt18_overlap(hlo_text, skip=("get-tuple-element", "bitcast", "tuple"))


_rt18_MOVE = {
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call", *_rt18_COLL,
}  # fmt: skip


@wrong(
    "matmul_fusions",
    why="Clause 'called computations, nested ones included': reads only the computation the ENTRY fusion calls, so HANDWRITTEN_TPU's %overlap (its convolution in the nested %layer fusion) is missed: {} instead of {'overlap': ['tanh']}.",
)
def _rt18_matmul_fusions_top_only(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode != "fusion":
            continue
        ops = [j.opcode for j in _rt18_body(module, inst, nested=False)]
        if "convolution" in ops:
            out[inst.name] = sorted({o for o in ops if o != "convolution" and o not in _rt18_MOVE})
    return out


@wrong(
    "matmul_fusions",
    why="Clause 'opcodes that only move, view or wrap data: ... broadcast, ... convert, ... the collectives': leaves out only parameter/constant/bitcast/tuple/get-tuple-element/fusion/custom-call, so recorded/fsdp4_v5e.hlo's fusion.9 gives ['all-gather', 'broadcast', 'convert', 'maximum'] instead of ['maximum'].",
)
def _rt18_matmul_fusions_short_list(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    skip = {
        "parameter",
        "constant",
        "bitcast",
        "tuple",
        "get-tuple-element",
        "fusion",
        "custom-call",
    }
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode != "fusion":
            continue
        ops = [j.opcode for j in _rt18_body(module, inst)]
        if "convolution" in ops:
            out[inst.name] = sorted({o for o in ops if o != "convolution" and o not in skip})
    return out


def _rt18_groups(
    spec, total, transpose=True, mesh_order=False, mesh_none_all=False, empty_partitions=None
):
    spec = spec.strip()
    if spec.startswith("mesh"):
        found = re.match(r"mesh\[(.*?)\]\s*\{(.*)\}", spec)
        axes = [
            (a.strip().strip("'"), int(s))
            for a, s in (p.split("=") for p in found.group(1).split(","))
        ]
        names = [a for a, _ in axes]
        arr = np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])
        chosen = [x.strip().strip("'") for x in found.group(2).split(",") if x.strip()]
        if not chosen:
            return [list(range(arr.size))] if mesh_none_all else [[int(d)] for d in arr.ravel()]
        if mesh_order:
            chosen = [n for n in names if n in chosen]
        rest = [k for k, n in enumerate(names) if n not in chosen]
        arr = arr.transpose(rest + [names.index(c) for c in chosen])
        return arr.reshape(-1, math.prod(arr.shape[len(rest) :])).tolist()
    if spec.startswith("["):
        found = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
        shape = [int(v) for v in found.group(1).split(",")]
        dims = [int(v) for v in found.group(2).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if transpose and found.group(3):
            arr = arr.transpose([int(v) for v in found.group(3).split(",")])
        return arr.reshape(shape).tolist()
    inner = spec[1:-1].strip()
    if not inner:
        return [list(range(total))]
    return [[int(v) for v in g.split(",") if v.strip()] for g in re.findall(r"\{([^{}]*)\}", inner)]


def _rt18_device_groups(hlo_text, partitions_only=False, **kw):
    module = parse_hlo(hlo_text)
    replicas = int(module.attributes.get("replica_count", 1))
    partitions = int(module.attributes.get("num_partitions", 1))
    total = partitions if partitions_only else replicas * partitions
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            groups = inst.attribute("replica_groups")
            channel = _rt18_channel(inst)
            if groups is None or channel is None:
                continue
            out[channel] = _rt18_groups(groups, total, **kw)
    return out


@wrong(
    "device_groups",
    why="Clause '[G,S]<=[dims]T(perm)': reshapes iota to dims but skips the transpose, so '[2,2]<=[2,2]T(1,0)' gives [[0,1],[2,3]] instead of [[0,2],[1,3]].",
)
def _rt18_device_groups_no_transpose(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt18_device_groups(hlo_text, transpose=False)


@wrong(
    "device_groups",
    why="Clause 'in the order the braces list them, the first one major': takes the named axes in the mesh's own order, so mesh['a'=2,'b'=2] {'b','a'} gives [[0,1,2,3]] instead of [[0,2,1,3]].",
)
def _rt18_device_groups_mesh_order(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt18_device_groups(hlo_text, mesh_order=True)


@wrong(
    "device_groups",
    why="Clause 'naming none ... every device is alone': treats a mesh naming no axis like an empty replica_groups={}, so mesh['a'=2,'b'=4] {} gives one group of 8 instead of 8 singletons.",
)
def _rt18_device_groups_mesh_none_all(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt18_device_groups(hlo_text, mesh_none_all=True)


@wrong(
    "device_groups",
    why="Clause 'N being replica_count times num_partitions': an empty replica_groups={} spans num_partitions only, so a module with replica_count=2, num_partitions=2 and a channel all-reduce with replica_groups={} gives [[0,1]] instead of [[0,1,2,3]].",
)
def _rt18_device_groups_partitions_only(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt18_device_groups(hlo_text, partitions_only=True)


def _rt18_bits(dtype):
    return 8 if dtype == "pred" else int(re.search(r"\d+", dtype).group(0))


def _rt18_logical(shape, whole_bytes=False):
    if shape.is_tuple:
        return sum(_rt18_logical(e, whole_bytes) for e in shape.elements)
    bits = _rt18_bits(shape.dtype)
    if whole_bytes:
        return math.prod(shape.dims) * -(-bits // 8) * 8
    return math.prod(shape.dims) * bits


def _rt18_collective_bytes(hlo_text, entry_only=False, none_is_channel=False, size=None):
    module = parse_hlo(hlo_text)
    seen = set()
    out = {}
    comps = [module.entry] if entry_only else list(module.computations)
    for comp in comps:
        for inst in comp.instructions:
            if inst.opcode not in _rt18_COLL:
                continue
            channel = _rt18_channel(inst)
            if channel is not None or none_is_channel:
                if channel in seen:
                    continue
                seen.add(channel)
            bits = size(inst.shape_info) if size else _rt18_logical(inst.shape_info)
            out[inst.opcode] = out.get(inst.opcode, 0) + bits
    return {k: v // 8 for k, v in out.items()}


@wrong(
    "collective_bytes",
    why="Clause 'one without a channel_id is a collective of its own': dedupes on inst.attribute('channel_id') with None as a key, so CROSS_REPLICA's %ar.1 (second all-reduce without a channel) is dropped.",
)
def _rt18_collective_bytes_none_key(hlo_text: str) -> dict[str, int]:
    return _rt18_collective_bytes(hlo_text, none_is_channel=True)


@wrong(
    "collective_bytes",
    why="Clause 'in bits, so an s4 element is half a byte': rounds each element up to a whole byte, so an s4/u4 all-gather of collectives_module() counts twice its bytes.",
)
def _rt18_collective_bytes_whole_bytes(hlo_text: str) -> dict[str, int]:
    return _rt18_collective_bytes(hlo_text, size=lambda s: _rt18_logical(s, whole_bytes=True))


@wrong(
    "collective_bytes",
    why="Clause 'of any computation': reads ENTRY only, so the async all-gather of recorded/fsdp4_v5e.hlo (inside the kCustom bodies) is missed: 3 weights instead of 4.",
)
def _rt18_collective_bytes_entry_only(hlo_text: str) -> dict[str, int]:
    return _rt18_collective_bytes(hlo_text, entry_only=True)


def _rt18_padded(shape_text, honor_order=True, pad_unit=True, as_float=False):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    found = re.search(r"T\(([\d,]+)\)", layout)
    if found:
        tile = [int(v) for v in found.group(1).split(",")]
        order = list(shape.minor_to_major) if honor_order else list(range(len(dims) - 1, -1, -1))
        for k, size in enumerate(reversed(tile)):
            d = order[k]
            if dims[d] == 1 and not pad_unit:
                continue
            dims[d] = (
                int(math.ceil(dims[d] / size) * size) if as_float else -(-dims[d] // size) * size
            )
    bits = _rt18_bits(shape.dtype)
    if as_float:
        return int(math.prod(dims) * bits / 8)
    return math.prod(dims) * bits // 8


@wrong(
    "padded_bytes",
    why="Clause 'The layout lists dimensions minor to major': tiles the shape's last dimensions as printed, ignoring {0,1}, so f32[1000,300]{0,1:T(8,128)} pads 300->384 and 1000->1000 (1536000) instead of 1000->1024 and 300->304 (1245184).",
)
def _rt18_padded_bytes_logical_order(shape_text: str) -> int:
    return _rt18_padded(shape_text, honor_order=False)


@wrong(
    "padded_bytes",
    why="Clause 'a dimension of 1 too': leaves dimensions of 1 unpadded, so bf16[1,1000]{1,0:T(2,128)(2,1)} gives 2048 instead of 4096.",
)
def _rt18_padded_bytes_skip_unit(shape_text: str) -> int:
    return _rt18_padded(shape_text, pad_unit=False)


@wrong(
    "padded_bytes",
    why="Clause 'past 2**53 ... an exact int': rounds with math.ceil(d / t) * t and bytes with float division, so s8[9007199254740993]{0:T(1024)} gives 9007199254740992 instead of 9007199254742016.",
)
def _rt18_padded_bytes_float(shape_text: str) -> int:
    return _rt18_padded(shape_text, as_float=True)


def _rt18_prefetch(hlo_text, number_from_name=False, any_element=False):
    module = parse_hlo(hlo_text)
    entry = module.entry
    out = {}
    for inst in entry.instructions:
        if inst.opcode not in ("copy-start", "copy"):
            continue
        operand = entry.instruction(inst.operands[0])
        if operand is None or operand.opcode != "parameter":
            continue
        if inst.opcode == "copy-start":
            moved = inst.shape if any_element else inst.shape_info.elements[0].text
        else:
            moved = inst.shape
        if "S(1)" not in moved:
            continue
        if number_from_name:
            digits = re.findall(r"\d+", operand.name)
            number = int(digits[-1]) if digits else int(operand.payload)
        else:
            number = int(operand.payload)
        if inst.opcode == "copy":
            out[number] = "copy"
        elif "cross_program_prefetch_index" in inst.attributes_text:
            out[number] = "cross-program prefetch"
        else:
            out[number] = "prefetch"
    return out


@wrong(
    "prefetched_parameters",
    why="Clause 'Use the number in parameter(N)': reads the number from the operand's name, so HANDWRITTEN_PREFETCH's %param.2 = parameter(0) is reported as parameter 2.",
)
def _rt18_prefetched_parameters_name_number(hlo_text: str) -> dict[int, str]:
    return _rt18_prefetch(hlo_text, number_from_name=True)


@wrong(
    "prefetched_parameters",
    why="Clause 'for copy-start: the first tuple element': looks for S(1) anywhere in the copy-start's shape, so HANDWRITTEN_EVICTION's eviction of parameter(1) out of S(1) counts as a prefetch.",
)
def _rt18_prefetched_parameters_any_element(hlo_text: str) -> dict[int, str]:
    return _rt18_prefetch(hlo_text, any_element=True)


@wrong(
    "predict_layer_flops",
    why="Clause 'a multiply and a reduce over k when the block is a single row or a single column': always counts 2*k flops per output element, so (2, 8, 8) on 2x2 predicts 72 instead of 68.",
)
def _rt18_predict_layer_flops_always_matmul(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    return 2 * rows * cols * k + 2 * rows * cols


@wrong(
    "predict_layer_flops",
    why="Clause 'a single row or a single column': handles a one-row block but not a one-column block, so (64, 16, 4) on 1x4 (blocks 64x1) predicts 2176 instead of 2112.",
)
def _rt18_predict_layer_flops_rows_only(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    if k == 1:
        dot = rows * cols
    elif rows == 1:
        dot = rows * cols * (2 * k - 1)
    else:
        dot = 2 * rows * cols * k
    return dot + 2 * rows * cols


@wrong(
    "predict_layer_flops",
    why="Clause 'a multiply alone when k = 1': a k=1 dot with a 2-D block still counted as 2 flops per element, so (64, 1, 128) on 2x2 predicts 8192 instead of 6144.",
)
def _rt18_predict_layer_flops_no_k1(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    if rows == 1 or cols == 1:
        dot = rows * cols * (2 * k - 1)
    else:
        dot = 2 * rows * cols * k
    return dot + 2 * rows * cols


@wrong(
    "gather_free_specs",
    why="Clause 'no all-gather': splits w1 by rows and w2 by columns (the mirror of Megatron), so hidden units are not complete on a device: libtpu gathers (checked: all-gather in the compiled text).",
)
def _rt18_gather_free_specs_mirrored() -> tuple[P, P]:
    return P("model", None), P(None, "model")


@wrong(
    "gather_free_specs",
    why="Clause 'at most x's plus half of what the replicated weights take': replicated weights need no collective but take 1179648 argument bytes per device instead of 655360.",
)
def _rt18_gather_free_specs_replicated() -> tuple[P, P]:
    return P(), P()


@wrong(
    "gather_free_specs",
    why="Clause 'on a (data, model) mesh': splits the hidden units over 'data', the axis x's rows already use, so XLA gathers and permutes (checked: all-gather and collective-permute).",
)
def _rt18_gather_free_specs_data_axis() -> tuple[P, P]:
    return P(None, "data"), P("data", None)


@wrong(
    "predict_allreduce_bytes",
    why="Clause '0 when the program needs no all-reduce': with model = 1 there is nothing to sum, yet it predicts a full block: (512, 256, 1024) on 4x1 gives 65536 instead of 0.",
)
def _rt18_predict_allreduce_bytes_model_one(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    return batch // data * width * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="Clause 'the logical result on one device': the all-reduce sums the output block [batch/data, width], not the hidden activations; predicting batch/data * hidden/model gives (512,256,1024) on 2x2: 262144 instead of 131072.",
)
def _rt18_predict_allreduce_bytes_hidden(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch // data * hidden // model * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="Clause 'bytes each device receives': uses the whole output batch x width, ignoring that rows are split over 'data': (512,256,1024) on 2x2 gives 262144 instead of 131072.",
)
def _rt18_predict_allreduce_bytes_whole_batch(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch * width * itemsize


@wrong(
    "step_donation",
    why="Clause 'aliased bytes equal the params and momentum bytes': donates only params, aliasing 3145728 of 6291456 bytes.",
)
def _rt18_step_donation_params_only() -> tuple[int, ...]:
    return (0,)


@wrong(
    "step_donation",
    why="Clause 'jax must donate no array of the batch': donates everything, (0, 1, 2); the budget numbers match (batch not usable, not aliased) but the batch is donated.",
)
def _rt18_step_donation_everything() -> tuple[int, ...]:
    return (0, 1, 2)
