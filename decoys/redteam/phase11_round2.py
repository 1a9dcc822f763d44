"""Red-team (round 2) wrong answers for phase 11, written from the contract only."""

import math
import re

from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_R2_WIDTH_BITS = {
    "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128,
    "f8e4m3fn": 8, "f8e5m2": 8,
}  # fmt: skip


@wrong(
    "async_collectives",
    why="'elsewhere the start is an op such as all-gather-start': only opcodes ending in -start "
    "count, so an async reduce-scatter/all-to-all (XLA's reduce-scatter-start sugar, parsed as "
    "async-start wrapping the collective) is missed; wrong on a module with "
    "reduce-scatter-start/all-to-all-start (answers {} instead of two entries)",
)
def r2_async_suffix_only(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found = {}
    kinds = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
    for ins in module.entry:
        if ins.opcode == "fusion" and ins.attribute("kind") == "kCustom":
            bodies = reachable(module, tuple(ins.called_computations))
            marks = [
                i
                for c in bodies
                for i in c
                if i.opcode == "custom-call"
                and "AsyncCollectiveStart" in (i.attribute("custom_call_target") or "")
            ]
            if marks:
                ops = [i.opcode for c in bodies for i in c if i.opcode in kinds]
                if ops:
                    found[ins.name] = ops[0]
        elif ins.opcode.endswith("-start") and ins.opcode.removesuffix("-start") in kinds:
            found[ins.name] = ins.opcode.removesuffix("-start")
    return found


@wrong(
    "overlapped_work",
    why="'the done of a TPU start is the kCustom fusion whose body holds AsyncCollectiveDone and "
    "the same collective (the same channel_id)': pairs a start with the first later done of the "
    "same collective opcode instead of the same channel_id; wrong when two collectives of one "
    "kind are in flight and finish in the other order (HANDWRITTEN_TPU with both pairs "
    "collective-permutes: start a gets done b's window)",
)
def r2_overlap_pair_by_opcode(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    kinds = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
    plumbing = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
    entry = list(module.entry)

    def tpu(ins, marker):
        if ins.opcode != "fusion" or ins.attribute("kind") != "kCustom":
            return None
        bodies = reachable(module, tuple(ins.called_computations))
        if not any(
            i.opcode == "custom-call" and marker in (i.attribute("custom_call_target") or "")
            for c in bodies
            for i in c
        ):
            return None
        ops = [i.opcode for c in bodies for i in c if i.opcode in kinds]
        return ops[0] if ops else None

    result = {}
    used = set()
    for k, ins in enumerate(entry):
        op = tpu(ins, "AsyncCollectiveStart")
        done_at = None
        if op is not None:
            for j in range(k + 1, len(entry)):
                if j not in used and tpu(entry[j], "AsyncCollectiveDone") == op:
                    done_at = j
                    break
        elif ins.opcode.endswith("-start") and ins.opcode != "copy-start":
            for j in range(k + 1, len(entry)):
                if ins.name in entry[j].operands and entry[j].opcode.endswith("-done"):
                    done_at = j
                    break
        else:
            continue
        if done_at is None:
            continue
        used.add(done_at)
        result[ins.name] = [i.name for i in entry[k + 1 : done_at] if i.opcode not in plumbing]
    return result


@wrong(
    "matmul_fusions",
    why="'whose called computations, nested ones included': looks into the called computation "
    "and the fusions it holds, one level deep only; wrong on an ENTRY fusion whose convolution "
    "sits two fusions down (kCustom overlap fusion -> kOutput fusion -> kOutput fusion holding the "
    "convolution) -> the fusion is missing",
)
def r2_matmul_one_level(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    skip = {
        "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy",
        "convert", "fusion", "tuple", "get-tuple-element", "custom-call", "convolution",
        "all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute",
    }  # fmt: skip
    found = {}
    for ins in module.entry:
        if ins.opcode != "fusion":
            continue
        comps = []
        for name in ins.called_computations:
            c = module.computation(name)
            if c is None:
                continue
            comps.append(c)
            for inner in c:
                if inner.opcode == "fusion":
                    comps += [
                        module.computation(n)
                        for n in inner.called_computations
                        if module.computation(n)
                    ]
        if any(i.opcode == "convolution" for c in comps for i in c):
            found[ins.name] = sorted({i.opcode for c in comps for i in c if i.opcode not in skip})
    return found


@wrong(
    "device_groups",
    why="'N being the module header's replica_count times its num_partitions': takes "
    "num_partitions, falling back to replica_count, instead of their product; wrong on "
    "replica_count=2, num_partitions=2 with replica_groups={} ([[0,1]] instead of [[0,1,2,3]])",
)
def r2_groups_partitions_or_replicas(hlo_text: str) -> dict[int, list[list[int]]]:
    import numpy as np

    module = parse_hlo(hlo_text)
    n = int(module.attributes.get("num_partitions") or module.attributes.get("replica_count") or 1)
    found = {}
    for c in module.computations:
        for ins in c:
            raw = ins.attribute("replica_groups")
            if raw is None:
                continue
            channel = ins.attribute("channel_id")
            key = int(channel) if channel else -1
            raw = raw.strip()
            if raw in ("{}", ""):
                groups = [list(range(n))]
            elif raw.startswith("mesh"):
                m = re.match(r"mesh\[(.*?)\]\s*\{(.*)\}", raw)
                axes = re.findall(r"'(\w+)'=(\d+)", m.group(1))
                names = [a for a, _ in axes]
                sizes = [int(s) for _, s in axes]
                chosen = re.findall(r"'(\w+)'", m.group(2))
                arr = np.arange(math.prod(sizes)).reshape(sizes)
                rest = [names.index(a) for a in names if a not in chosen]
                pick = [names.index(a) for a in chosen]
                size = math.prod(sizes[i] for i in pick)
                groups = arr.transpose(rest + pick).reshape(-1, size).tolist()
            elif raw.startswith("["):
                m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", raw)
                shape = [int(v) for v in m.group(1).split(",")]
                dims = [int(v) for v in m.group(2).split(",")]
                arr = np.arange(math.prod(dims)).reshape(dims)
                if m.group(3):
                    arr = arr.transpose([int(v) for v in m.group(3).split(",")])
                groups = arr.reshape(shape).tolist()
            else:
                groups = [
                    [int(v) for v in g.split(",") if v.strip()]
                    for g in re.findall(r"\{([\d,\s]*)\}", raw[1:-1])
                ]
            if key == -1:
                key = len(found) + 10_000
            found.setdefault(key, groups)
    return found


@wrong(
    "collective_bytes",
    why="'the width in bits, so an s4 element is half a byte': rounds each element up to whole "
    "bytes (numpy itemsize thinking); wrong on an s4/u4 collective (s4[64,16] all-reduce counts "
    "1024 bytes instead of 512)",
)
def r2_bytes_whole_byte_elements(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    kinds = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
    seen = set()
    out: dict[str, int] = {}

    def size(shape):
        if shape.is_tuple:
            return sum(size(e) for e in shape.elements)
        return math.prod(shape.dims) * math.ceil(_R2_WIDTH_BITS.get(shape.dtype, 32) / 8)

    for c in module.computations:
        for ins in c:
            if ins.opcode not in kinds:
                continue
            channel = ins.attribute("channel_id")
            if channel is not None:
                if channel in seen:
                    continue
                seen.add(channel)
            out[ins.opcode] = out.get(ins.opcode, 0) + size(ins.shape_info)
    return out


@wrong(
    "padded_bytes",
    why="'T(1024): the most minor only': pads the flattened element count to the 1-D tile "
    "instead of the most minor dimension; right on the 1-D cases f32[7] and bf16[2049], wrong on "
    "f32[5,3]{1,0:T(128)} (512 bytes instead of 2560)",
)
def r2_padded_flat_1d_tile(shape_text: str) -> int:
    shape = Shape(shape_text)
    bits = _R2_WIDTH_BITS.get(shape.dtype, 32)
    dims = list(shape.dims)
    layout = shape.layout or ""
    tiles = re.findall(r"T\(([\d,]+)\)", layout)
    if not tiles:
        return math.prod(dims) * bits // 8
    first = [int(v) for v in tiles[0].split(",")]
    order = list(shape.minor_to_major or range(len(dims) - 1, -1, -1))
    if len(first) == 1:
        total = math.prod(dims)
        return -(-total // first[0]) * first[0] * bits // 8
    for tile, dim in zip(reversed(first), order, strict=False):
        dims[dim] = -(-dims[dim] // tile) * tile
    return math.prod(dims) * bits // 8


@wrong(
    "prefetched_parameters",
    why="'whose result (for copy-start: the first tuple element) has S(1) in its layout': tests "
    "S(1) anywhere in the copy-start's tuple, so an eviction of an S(1) parameter back to "
    "default memory counts as a prefetch; wrong on copy-start((f32[..]{..}, f32[..]{..S(1)}, "
    "u32[]) of a parameter in S(1) (answers {0: 'prefetch'} instead of {})",
)
def r2_prefetch_s1_anywhere(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    found = {}
    for ins in entry:
        if ins.opcode not in ("copy-start", "copy") or not ins.operands:
            continue
        src = entry.instruction(ins.operands[0])
        if src is None or src.opcode != "parameter":
            continue
        if "S(1)" not in ins.shape:
            continue
        number = int(src.payload)
        if ins.opcode == "copy":
            found[number] = "copy"
        elif ins.attribute("cross_program_prefetch_index") is not None:
            found[number] = "cross-program prefetch"
        else:
            found[number] = "prefetch"
    return found


@wrong(
    "predict_layer_flops",
    why="'relu(x @ w + b)': counts relu as free (a select, not arithmetic), 2k+1 flops per "
    "output element instead of 2k+2; wrong on (96,200,72,2,2): 692928 instead of 694656",
)
def r2_flops_relu_free(m: int, k: int, n: int, data: int, model: int) -> int:
    return (m // data) * (n // model) * (2 * k + 1)


@wrong(
    "predict_layer_flops",
    why="'w [k, n] split P(None, 'model')': reads w as replicated (only x is split), each device "
    "computes m/data rows of the whole n; right when model=1 (64,128,512,4,1), wrong on "
    "(96,200,72,2,2): 1389312 instead of 694656",
)
def r2_flops_ignores_model_split(m: int, k: int, n: int, data: int, model: int) -> int:
    return (m // data) * n * (2 * k + 2)


@wrong(
    "predict_allreduce_bytes",
    why="'Bytes as collective_bytes counts them (the logical result on one device)': uses the "
    "ring all-reduce traffic 2(M-1)/M x bytes; equal on every 'model'=2 mesh and 0 on model=1, "
    "wrong on model=4: (64,128,256,f32,(1,4)) answers 49152 instead of 32768",
)
def r2_allreduce_ring_traffic(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    return 2 * (model - 1) * (batch // data) * width * itemsize // model


@wrong(
    "predict_allreduce_bytes",
    why="'0 when the program needs no all-reduce': always predicts the output block, even when "
    "'model' has one device and nothing is summed; wrong on (512,256,1024,bf16,(4,1)): 65536 "
    "instead of 0",
)
def r2_allreduce_always(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    return (batch // data) * width * itemsize


@wrong(
    "gather_free_specs",
    why="'argument bytes per device at most x's plus half of what the replicated weights take': "
    "replicating both weights removes every collective but takes the whole weights per device; "
    "on XLA:CPU 4 devices f32 2359296 argument bytes against a budget of 1310720",
)
def r2_specs_replicated() -> tuple[P, P]:
    return P(), P()


@wrong(
    "gather_free_specs",
    why="'no all-gather and no collective-permute anywhere': splits the hidden units over 'data' "
    "(the axis x's rows already use); XLA:CPU then all-gathers and permutes",
)
def r2_specs_hidden_over_data() -> tuple[P, P]:
    return P(None, "data"), P("data", None)


@wrong(
    "step_donation",
    why="'The caller evaluates on the batch after the step, so it must stay valid ... jax must "
    "donate no array of the batch': donates everything, batch included",
)
def r2_donate_all() -> tuple[int, ...]:
    return (0, 1, 2)


@wrong(
    "step_donation",
    why="'the aliased bytes equal the params and momentum bytes': donates only the params "
    "(momentum is state too); alias bytes are half what the budget asks",
)
def r2_donate_params_only() -> tuple[int, ...]:
    return (0,)
