"""Red-team wrong answers for phase 11, written from the contract only.

Round 3. Each answer is what a capable learner writes after making every recorded module, every
hand-written module and every drawn case of programs.py pass: it only goes wrong on an input the
contract allows that those banks never show (an async start in a loop body, two in-flight
collectives of one signature, fp8 / c128 element types, three-size tiles, scalar collectives,
device numbers past 9, an empty group with replicas *and* partitions, a matmul fusion in a while
body, a reduce inside a matmul fusion, slices and pads next to a convolution...).
"""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

# ----------------------------------------------------------------------------- shared helpers

_COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_SKIP_WORK = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_NOT_WORK = {
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call", *_COLLECTIVES,
}  # fmt: skip
_BITS = {
    "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128,
    "s2": 2, "u2": 2, "s1": 1, "u1": 1, "f8e4m3fn": 8, "f8e5m2": 8, "f8e4m3": 8, "f8e3m4": 8,
    "f8e4m3fnuz": 8, "f8e5m2fnuz": 8, "f8e4m3b11fnuz": 8, "f8e8m0fnu": 8, "f4e2m1fn": 4,
}  # fmt: skip


def _rt3_target(instruction) -> str:
    raw = instruction.attribute("custom_call_target") or ""
    return raw.strip('"')


def _rt3_body(module, instruction):
    called = instruction.attribute("calls")
    return module.computation(called) if called else None


def _rt3_holds(module, instruction, target: str) -> bool:
    body = _rt3_body(module, instruction)
    return body is not None and any(
        i.opcode == "custom-call" and _rt3_target(i) == target for i in body.instructions
    )


def _rt3_collective_in(computation):
    for i in computation.instructions:
        if i.opcode in _COLLECTIVES:
            return i
    return None


def _rt3_starts(module, *, every_computation=False, root_only=False, async_any_root=False):
    """{start name: (opcode, channel, computation)} -- the correct reading unless a flag says
    otherwise."""
    found = {}
    computations = module.computations if every_computation else (module.entry,)
    for computation in computations:
        for i in computation.instructions:
            if i.opcode == "fusion" and i.attribute("kind") == "kCustom":
                body = _rt3_body(module, i)
                if body is None:
                    continue
                if root_only:
                    marked = body.root.opcode == "custom-call" and (
                        _rt3_target(body.root) == "AsyncCollectiveStart"
                    )
                else:
                    marked = _rt3_holds(module, i, "AsyncCollectiveStart")
                coll = _rt3_collective_in(body)
                if marked and coll is not None:
                    found[i.name] = (coll.opcode, coll.attribute("channel_id"), computation)
            elif i.opcode == "async-start":
                body = _rt3_body(module, i)
                if body is None:
                    continue
                if async_any_root or body.root.opcode in _COLLECTIVES:
                    found[i.name] = (
                        body.root.opcode,
                        body.root.attribute("channel_id"),
                        computation,
                    )
            elif i.opcode.endswith("-start") and i.opcode != "copy-start":
                kind = i.opcode.removesuffix("-start")
                if kind in _COLLECTIVES:
                    found[i.name] = (kind, i.attribute("channel_id"), computation)
    return found


def _rt3_bits(dtype: str) -> float:
    return _BITS[dtype]


def _rt3_array_bytes(shape: Shape, bits_of=_rt3_bits) -> float:
    if shape.is_tuple:
        return sum(_rt3_array_bytes(e, bits_of) for e in shape.elements)
    if shape.dtype in (None, "token"):
        return 0
    return math.prod(shape.dims) * bits_of(shape.dtype) / 8


def _rt3_header_devices(module, *, replicas=True, partitions=True) -> int:
    n = 1
    if replicas:
        n *= int(module.attributes.get("replica_count", "1") or 1)
    if partitions:
        n *= int(module.attributes.get("num_partitions", "1") or 1)
    return n


def _rt3_groups(text: str, devices: int, *, digit_chars=False) -> list[list[int]]:
    text = text.strip()
    if text.startswith("mesh"):
        head, _, named = text.partition("]")
        axes = re.findall(r"'([^']+)'=(\d+)", head)
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        wanted = re.findall(r"'([^']+)'", named)
        grid = np.arange(math.prod(sizes)).reshape(sizes)
        rest = [k for k, a in enumerate(names) if a not in wanted]
        order = rest + [names.index(a) for a in wanted]
        size = math.prod(sizes[names.index(a)] for a in wanted)
        return grid.transpose(order).reshape(-1, size).tolist()
    if text.startswith("["):
        found = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        g, s = int(found.group(1)), int(found.group(2))
        dims = [int(d) for d in found.group(3).split(",")]
        grid = np.arange(math.prod(dims)).reshape(dims)
        if found.group(4):
            grid = grid.transpose([int(p) for p in found.group(4).split(",")])
        return grid.reshape(g, s).tolist()
    inner = text[1:-1].strip()
    if not inner:
        return [list(range(devices))]
    groups = re.findall(r"\{([^{}]*)\}", inner)
    if digit_chars:  # one character per device number
        return [[int(c) for c in g if c.isdigit()] for g in groups]
    return [[int(d) for d in g.split(",") if d.strip()] for g in groups]


# ------------------------------------------------------------------------- async_collectives


@wrong(
    "async_collectives",
    why="'in the ENTRY computation': also reports starts found in every other computation; "
    "wrong on a module whose while body (a pipelined loop) holds an all-gather-start / "
    "all-gather-done pair: that start is not in ENTRY",
)
def _rt3_async_collectives_every_computation(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    return {n: v[0] for n, v in _rt3_starts(module, every_computation=True).items()}


@wrong(
    "async_collectives",
    why="'the collectives XLA made asynchronous': takes the root opcode of any async-start "
    "without checking it is a collective; wrong on an async-start wrapping a fusion or "
    "custom-call (async compute, e.g. an exponential), which it reports as {start: "
    "'exponential'} instead of leaving out",
)
def _rt3_async_collectives_any_async_root(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    return {n: v[0] for n, v in _rt3_starts(module, async_any_root=True).items()}


@wrong(
    "async_collectives",
    why="'whose called computation holds it and a custom-call AsyncCollectiveStart': demands "
    "that custom-call be the ROOT of the called computation (as in every recording); wrong on "
    "a kCustom start whose body ends in a tuple of the custom-call's elements ({} instead of "
    "{start: kind})",
)
def _rt3_async_collectives_root_marker(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    return {n: v[0] for n, v in _rt3_starts(module, root_only=True).items()}


# --------------------------------------------------------------------------- overlapped_work


def _rt3_signature(instruction) -> tuple:
    return (
        instruction.opcode,
        Shape(instruction.shape).dims,
        Shape(instruction.shape).dtype,
        instruction.attribute("replica_groups"),
        instruction.attribute("source_target_pairs"),
    )


def _rt3_overlap(hlo_text: str, *, by_signature=False, skip=_SKIP_WORK) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    order = [i.name for i in entry.instructions]
    position = {n: k for k, n in enumerate(order)}
    starts = _rt3_starts(module)
    result = {}
    for name, (_, channel, _) in starts.items():
        start = entry[name]
        done = None
        after = entry.instructions[position[name] + 1 :]
        if start.opcode == "fusion":
            start_coll = _rt3_collective_in(_rt3_body(module, start))
            for i in after:
                if i.opcode == "fusion" and _rt3_holds(module, i, "AsyncCollectiveDone"):
                    coll = _rt3_collective_in(_rt3_body(module, i))
                    if coll is None:
                        continue
                    if by_signature:
                        if _rt3_signature(coll) == _rt3_signature(start_coll):
                            done = i
                            break
                    elif coll.attribute("channel_id") == channel:
                        done = i
                        break
        else:
            for i in after:
                if name in i.operands and i.opcode.endswith("-done"):
                    done = i
                    break
        if done is None:
            result[name] = []
            continue
        window = entry.instructions[position[name] + 1 : position[done.name]]
        result[name] = [i.name for i in window if i.opcode not in skip]
    return result


@wrong(
    "overlapped_work",
    why="'the same collective (the same channel_id)': pairs a TPU start with the first later "
    "done whose collective has the same opcode, shape, dtype and groups; wrong when two "
    "gathers of equal weights over one mesh axis are in flight and finish in the other order "
    "(start p, start q, done q, done p): p gets q's shorter window",
)
def _rt3_overlapped_work_same_signature(hlo_text: str) -> dict[str, list[str]]:
    return _rt3_overlap(hlo_text, by_signature=True)


@wrong(
    "overlapped_work",
    why="'leaving out those that do no work: get-tuple-element, bitcast, tuple, parameter, "
    "constant': also leaves out the 'views' copy, reshape, transpose and slice (keeping "
    "broadcast, which it saw counted); wrong on a window that holds a plain copy into S(1) or "
    "a transpose, which move data on TPU",
)
def _rt3_overlapped_work_views_too(hlo_text: str) -> dict[str, list[str]]:
    return _rt3_overlap(hlo_text, skip=_SKIP_WORK | {"copy", "reshape", "transpose", "slice"})


@wrong(
    "overlapped_work",
    why="'leaving out those that do no work: get-tuple-element, bitcast, tuple, parameter, "
    "constant': also leaves out opt-barrier, after-all, add-dependency and domain as more "
    "'tuple plumbing'; wrong on a window holding the opt-barrier of a rematerialised layer",
)
def _rt3_overlapped_work_barriers_too(hlo_text: str) -> dict[str, list[str]]:
    return _rt3_overlap(
        hlo_text, skip=_SKIP_WORK | {"opt-barrier", "after-all", "add-dependency", "domain"}
    )


# ---------------------------------------------------------------------------- matmul_fusions


def _rt3_matmuls(hlo_text: str, *, computations=None, follow=None, skip=_NOT_WORK):
    module = parse_hlo(hlo_text)
    result = {}
    for computation in computations(module) if computations else (module.entry,):
        for i in computation.instructions:
            if i.opcode != "fusion":
                continue
            called = (i.attribute("calls") or "").removeprefix("%")
            if not called:
                continue
            reached = follow(module, called) if follow else reachable(module, (called,))
            opcodes = {x.opcode for c in reached for x in c.instructions}
            if "convolution" in opcodes:
                result[i.name] = sorted(opcodes - skip - {"convolution"})
    return result


def _rt3_fusion_calls_only(module, root: str):
    """Follow calls= of nested fusions and to_apply= of reduce only (not of reduce-window,
    map, sort, scatter, select-and-scatter...)."""
    found, pending = {}, [root]
    while pending:
        name = pending.pop()
        computation = module.computation(name)
        if computation is None or computation.name in found:
            continue
        found[computation.name] = computation
        for i in computation.instructions:
            if i.opcode == "fusion" and i.attribute("calls"):
                pending.append(i.attribute("calls").removeprefix("%"))
            if i.opcode == "reduce" and i.attribute("to_apply"):
                pending.append(i.attribute("to_apply").removeprefix("%"))
    return list(found.values())


@wrong(
    "matmul_fusions",
    why="'called computations, nested ones included': follows the calls= of nested fusions and "
    "the to_apply= of reduce (seen in the gradient recording) but no other called computation; "
    "wrong on a convolution fusion holding a reduce-window (max pooling) or a map, whose "
    "maximum / body ops are missing",
)
def _rt3_matmul_fusions_no_reducers(hlo_text: str) -> dict[str, list[str]]:
    return _rt3_matmuls(hlo_text, follow=_rt3_fusion_calls_only)


@wrong(
    "matmul_fusions",
    why="'leaving out ... the opcodes that only move, view or wrap data' lists exactly which; "
    "this also drops slice, dynamic-update-slice, pad, concatenate, gather, iota and reverse "
    "('they only move data'; dynamic-slice kept, a recording counts it); wrong on a convolution fusion that pads or slices its "
    "operand, which must list 'pad' / 'slice'",
)
def _rt3_matmul_fusions_more_movers(hlo_text: str) -> dict[str, list[str]]:
    movers = {  # dynamic-slice stays: a recording counts it
        "slice", "dynamic-update-slice", "pad", "concatenate", "gather", "iota", "reverse",
    }  # fmt: skip
    return _rt3_matmuls(hlo_text, skip=_NOT_WORK | movers)


def _rt3_not_fused(module):
    fused = set()
    for c in module.computations:
        for i in c.instructions:
            if i.opcode == "fusion" and i.attribute("calls"):
                fused |= {
                    x.name for x in reachable(module, (i.attribute("calls").removeprefix("%"),))
                }
    return [c for c in module.computations if c.name not in fused]


@wrong(
    "matmul_fusions",
    why="'For every ENTRY fusion': takes the fusions of every computation that is not itself "
    "fused (ENTRY, while bodies, called computations, reducers); wrong on a scan-style module "
    "whose while body holds the matmul fusion: that fusion is no ENTRY fusion",
)
def _rt3_matmul_fusions_unfused_computations(hlo_text: str) -> dict[str, list[str]]:
    return _rt3_matmuls(hlo_text, computations=_rt3_not_fused)


# ----------------------------------------------------------------------------- device_groups


def _rt3_device_groups(hlo_text: str, *, digit_chars=False, replicas=True, partitions=True):
    module = parse_hlo(hlo_text)
    devices = _rt3_header_devices(module, replicas=replicas, partitions=partitions)
    result = {}
    for computation in module.computations:
        for i in computation.instructions:
            groups = i.attribute("replica_groups")
            channel = i.attribute("channel_id")
            if groups is None or channel is None:
                continue
            result[int(channel)] = _rt3_groups(groups, devices, digit_chars=digit_chars)
    return result


@wrong(
    "device_groups",
    why="'explicit {{0,1},{2,3}}': reads a group one character at a time (every banked module "
    "has at most 8 devices); wrong on {{0,8},{1,9},...,{7,15}} or any group with a device "
    "number from 10: {{3,11}} reads as [3,1,1]",
)
def _rt3_device_groups_single_digits(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt3_device_groups(hlo_text, digit_chars=True)


@wrong(
    "device_groups",
    why="'N being the module header's replica_count times its num_partitions': uses "
    "num_partitions alone (cross-replica ops have no channel_id, so replicas 'cannot' matter "
    "here); wrong on replica_count=2, num_partitions=4 with a channel_id'd all-reduce over "
    "replica_groups={}: one group of 8, not 4",
)
def _rt3_device_groups_partitions_only(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt3_device_groups(hlo_text, replicas=False)


@wrong(
    "device_groups",
    why="'Give each group's devices in the order the spelling lists them (the order a gather "
    "concatenates)': for mesh axes lays the named axes out in the MESH's order, not the order "
    "the braces list them (every banked spelling lists them in mesh order); wrong on "
    "mesh['a'=2,'b'=4] {'b','a'}: the gather runs b-major, [[0,4,1,5,2,6,3,7]], and this "
    "answers [[0,1,2,3,4,5,6,7]]",
)
def _rt3_device_groups_mesh_order(hlo_text: str) -> dict[int, list[list[int]]]:
    answer = _rt3_device_groups(hlo_text)
    module = parse_hlo(hlo_text)
    for computation in module.computations:
        for i in computation.instructions:
            groups = (i.attribute("replica_groups") or "").strip()
            if not groups.startswith("mesh") or i.attribute("channel_id") is None:
                continue
            head, _, named = groups.partition("]")
            axes = re.findall(r"'([^']+)'=(\d+)", head)
            names = [a for a, _ in axes]
            wanted = sorted(re.findall(r"'([^']+)'", named), key=names.index)
            text = head + "] {" + ",".join(f"'{a}'" for a in wanted) + "}"
            answer[int(i.attribute("channel_id"))] = _rt3_groups(text, 1)
    return answer


# -------------------------------------------------------------------------- collective_bytes


def _rt3_bytes(hlo_text: str, *, bits_of=_rt3_bits, skip_scalars=False) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    seen = set()
    total: dict[str, float] = {}
    for computation in module.computations:
        for i in computation.instructions:
            if i.opcode not in _COLLECTIVES:
                continue
            channel = i.attribute("channel_id")
            if channel is not None:
                if channel in seen:
                    continue
                seen.add(channel)
            shape = Shape(i.shape)
            if skip_scalars and not shape.is_tuple and shape.dims == ():
                continue
            total[i.opcode] = total.get(i.opcode, 0) + _rt3_array_bytes(shape, bits_of)
    return {k: int(v) for k, v in total.items()}


def _rt3_digit_bits(dtype: str) -> int:
    return 8 if dtype == "pred" else int("".join(c for c in dtype if c.isdigit()))


@wrong(
    "collective_bytes",
    why="'the width in bits': reads the width from the digits of the type's name, right for "
    "every banked type pred..c64 and c128; wrong on the fp8 types TPUs gather: "
    "f8e4m3fn[64,128] reads as 843 bits a value",
)
def _rt3_collective_bytes_name_digits(hlo_text: str) -> dict[str, int]:
    return _rt3_bytes(hlo_text, bits_of=_rt3_digit_bits)


@wrong(
    "collective_bytes",
    why="'element count times the dtype's width': a width table written from the banked "
    "types (pred..c64), anything else counted as 4 bytes; wrong on c128[8,4] (512 bytes, the "
    "README's '4-bit to 16-byte'), on u64 and on the f8 types",
)
def _rt3_collective_bytes_table(hlo_text: str) -> dict[str, int]:
    table = {
        "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16,
        "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "f64": 64, "c64": 64,
    }  # fmt: skip
    return _rt3_bytes(hlo_text, bits_of=lambda d: table.get(d, 32))


@wrong(
    "collective_bytes",
    why="'element count times the dtype's width': a shape reader that needs at least one "
    "dimension skips scalar collectives; wrong on the f32[] all-reduce of a loss or a "
    "gradient norm (4 bytes missing)",
)
def _rt3_collective_bytes_no_scalars(hlo_text: str) -> dict[str, int]:
    return _rt3_bytes(hlo_text, skip_scalars=True)


# ------------------------------------------------------------------------------ padded_bytes


def _rt3_padded(shape_text: str, *, bits_of=_rt3_bits, max_tile=3) -> int:
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout
    count = math.prod(dims)
    if layout and ":" in layout:
        tiles = re.match(r"T\(([\d,]+)\)", layout[1:-1].partition(":")[2])
        if tiles:
            sizes = [int(t) for t in tiles.group(1).split(",")][-max_tile:]
            order = shape.minor_to_major
            for size, dim in zip(reversed(sizes), order, strict=False):
                dims[dim] = -(-dims[dim] // size) * size
            count = math.prod(dims)
    return int(math.ceil(count * bits_of(shape.dtype) / 8))


@wrong(
    "padded_bytes",
    why="'the first tile covers as many of the most minor dimensions as it has sizes': pads "
    "at most the two most minor dimensions (every banked tile has one or two sizes); wrong on "
    "f32[3,5,129]{2,1,0:T(2,8,128)}: the major 3 pads to 4",
)
def _rt3_padded_bytes_two_sizes(shape_text: str) -> int:
    return _rt3_padded(shape_text, max_tile=2)


@wrong(
    "padded_bytes",
    why="'Bytes per element from the dtype's bit width': the width from the digits of the "
    "type's name; wrong on f8e4m3fn[9,130]{1,0:T(8,128)(4,1)} and f8e5m2 (843 / 852 bits)",
)
def _rt3_padded_bytes_name_digits(shape_text: str) -> int:
    return _rt3_padded(shape_text, bits_of=_rt3_digit_bits)


@wrong(
    "padded_bytes",
    why="'Bytes per element from the dtype's bit width': a width table of the banked types "
    "(pred..c64), 4 bytes for any other; wrong on c128[3,5]{1,0:T(8,128)} (16-byte elements: "
    "16384 bytes, not 4096), u64 and the f8 types",
)
def _rt3_padded_bytes_table(shape_text: str) -> int:
    table = {
        "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16,
        "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "f64": 64, "c64": 64,
    }  # fmt: skip
    return _rt3_padded(shape_text, bits_of=lambda d: table.get(d, 32))


# --------------------------------------------------------------------- prefetched_parameters


def _rt3_prefetched(hlo_text: str, *, every_computation=False, first_is_cross=False):
    module = parse_hlo(hlo_text)
    result = {}
    first_copy_start = True
    for computation in module.computations if every_computation else (module.entry,):
        for i in computation.instructions:
            if i.opcode not in ("copy-start", "copy") or not i.operands:
                continue
            operand = computation.instruction(i.operands[0])
            shape = Shape(i.shape)
            moved = shape.elements[0] if (i.opcode == "copy-start" and shape.is_tuple) else shape
            was_first = first_copy_start and i.opcode == "copy-start"
            if i.opcode == "copy-start":
                first_copy_start = False
            if operand is None or operand.opcode != "parameter":
                continue
            if "S(1)" not in (moved.layout or ""):
                continue
            if i.opcode == "copy":
                how = "copy"
            elif first_is_cross:
                how = "cross-program prefetch" if was_first else "prefetch"
            elif i.attribute("cross_program_prefetch_index") is not None:
                how = "cross-program prefetch"
            else:
                how = "prefetch"
            result[int(operand.payload)] = how
    return result


@wrong(
    "prefetched_parameters",
    why="'ENTRY parameters ... every copy-start or copy in ENTRY': scans every computation; "
    "wrong on a while body whose parameter(0) (the loop state) memory-space assignment "
    "prefetches into S(1): reported as ENTRY parameter 0",
)
def _rt3_prefetched_parameters_every_computation(hlo_text: str) -> dict[int, str]:
    return _rt3_prefetched(hlo_text, every_computation=True)


@wrong(
    "prefetched_parameters",
    why="'a copy-start with a cross_program_prefetch_index is the cross-program prefetch': "
    "looks for the text cross_program_prefetch_index=0 (the one index every banked module "
    "prints); wrong on a module whose cross-program prefetch carries index 1 (a second "
    "prefetch slot): called a plain 'prefetch'",
)
def _rt3_prefetched_parameters_index_zero(hlo_text: str) -> dict[int, str]:
    answer = _rt3_prefetched(hlo_text)
    module = parse_hlo(hlo_text)
    for i in module.entry.instructions:
        if i.opcode != "copy-start" or not i.operands:
            continue
        operand = module.entry.instruction(i.operands[0])
        if operand is None or operand.opcode != "parameter":
            continue
        number = int(operand.payload)
        if answer.get(number) == "cross-program prefetch" and (
            "cross_program_prefetch_index=0" not in i.attributes_text
        ):
            answer[number] = "prefetch"
    return answer


@wrong(
    "prefetched_parameters",
    why="'whose result has S(1) in its layout': looks for ')S(1)' (a memory space printed "
    "after the tiles, as in every banked module); wrong on a scalar parameter (a learning "
    "rate) prefetched into f32[]{:S(1)}, which has no tile: left out",
)
def _rt3_prefetched_parameters_after_tiles(hlo_text: str) -> dict[int, str]:
    answer = _rt3_prefetched(hlo_text)
    module = parse_hlo(hlo_text)
    for i in module.entry.instructions:
        if i.opcode not in ("copy-start", "copy") or not i.operands:
            continue
        operand = module.entry.instruction(i.operands[0])
        if operand is None or operand.opcode != "parameter":
            continue
        shape = Shape(i.shape)
        moved = shape.elements[0] if shape.is_tuple else shape
        if ")S(1)" not in (moved.layout or ""):
            answer.pop(int(operand.payload), None)
    return answer


# ----------------------------------------------------------------------- predict_layer_flops

_LAYER_TABLE = {  # the banked LAYER_CASES, answered right
    (512, 256, 384, 2, 2): 25264128,
    (96, 200, 72, 2, 2): 694656,
    (64, 128, 512, 4, 1): 2113536,
    (40, 24, 1024, 1, 4): 512000,
    (8, 8, 8, 1, 1): 1152,
}


@wrong(
    "predict_layer_flops",
    why="'flops per device libtpu's cost_analysis gives': the banked cases from a table, other "
    "sizes by the textbook 2*m*k*n/devices (no bias add, no relu); wrong on m=k=n=128 over "
    "2x2: 1048576, not 1056768",
)
def _rt3_predict_layer_flops_table(m: int, k: int, n: int, data: int, model: int) -> int:
    found = _LAYER_TABLE.get((m, k, n, data, model))
    return found if found is not None else 2 * m * k * n // (data * model)


@wrong(
    "predict_layer_flops",
    why="'2 flops per multiply-add ... elementwise one flop per element': the textbook 2k-1 "
    "flops per dot output (k multiplies, k-1 adds) plus bias and relu; wrong on every case, "
    "e.g. 512,256,384 over 2x2: 25214976, not 25264128",
)
def _rt3_predict_layer_flops_2k_minus_1(m: int, k: int, n: int, data: int, model: int) -> int:
    rows, cols = m // data, n // model
    return rows * cols * (2 * k - 1) + 2 * rows * cols


@wrong(
    "predict_layer_flops",
    why="'the flops per device': the epilogue (bias add, relu) counted on the whole output "
    "because b is 'replicated over data'; right when data == 1 (2 of the 5 banked cases), "
    "wrong on 64,128,512 over 4x1: 2162688, not 2113536",
)
def _rt3_predict_layer_flops_epilogue_per_model(
    m: int, k: int, n: int, data: int, model: int
) -> int:
    rows, cols = m // data, n // model
    return 2 * rows * cols * k + 2 * m * cols


# ----------------------------------------------------------------------- gather_free_specs


@wrong(
    "gather_free_specs",
    why="'no all-gather ... argument bytes at most x's plus half the replicated weights': "
    "splits the hidden units over 'data', the axis x's rows already use; each device then "
    "holds half the hidden units of only its own rows and the program gathers w1/w2 halves",
)
def _rt3_gather_free_specs_data_axis() -> tuple[P, P]:
    return P(None, "data"), P("data", None)


@wrong(
    "gather_free_specs",
    why="'no all-gather and no collective-permute': column-parallel for both weights (the "
    "Megatron first half, twice); w2 split by columns needs the hidden activations gathered",
)
def _rt3_gather_free_specs_both_columns() -> tuple[P, P]:
    return P(None, "model"), P(None, "model")


@wrong(
    "gather_free_specs",
    why="'argument bytes per device at most x's plus half of the replicated weights': w1 split "
    "by columns but w2 left replicated (no gather, but w2 whole: x + W/2 + W > x + W)",
)
def _rt3_gather_free_specs_w2_replicated() -> tuple[P, P]:
    return P(None, "model"), P(None, None)


# ------------------------------------------------------------------ predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'the bytes each device receives ... (the logical result on one device)': the ring "
    "all-reduce traffic 2*(model-1)/model of the block (equal to it when model is 2); wrong "
    "on 64,128,256 f32 over 1x4: 49152, not 32768",
)
def _rt3_predict_allreduce_bytes_ring(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    block = batch // data * width * itemsize
    return 2 * (model - 1) * block // model


@wrong(
    "predict_allreduce_bytes",
    why="'on a data x model mesh': takes the rows per device as batch // (4 // model), i.e. a "
    "4-device mesh as in every banked case; wrong on the 8-device meshes the CPU check uses, "
    "e.g. 512,256,1024 f32 over 2x4: 524288, not 262144",
)
def _rt3_predict_allreduce_bytes_four_devices(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch // max(1, 4 // model) * width * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="'0 when the program needs no all-reduce': treats a one-device 'data' axis as the "
    "no-collective case too (data == 1 'means nothing is split'); wrong on 64,128,256 f32 over "
    "1x4: answers 0, not 32768",
)
def _rt3_predict_allreduce_bytes_data_one(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1 or data == 1:
        return 0
    return batch // data * width * itemsize


# ------------------------------------------------------------------------------ step_donation


@wrong(
    "step_donation",
    why="'the aliased bytes equal the params and momentum bytes': donates the params only; "
    "momentum's buffers are not aliased, the peak stays high",
)
def _rt3_step_donation_params_only() -> tuple[int, ...]:
    return (0,)


@wrong(
    "step_donation",
    why="'jax must donate no array of the batch': donates the last two arguments, counting "
    "from the end the wrong way (-2 is momentum, -1 the batch)",
)
def _rt3_step_donation_last_two() -> tuple[int, ...]:
    return (-2, -1)


@wrong(
    "step_donation",
    why="'The caller evaluates on the batch after the step': donates every argument since "
    "'the batch cannot be aliased anyway' (no output has x's shape); jax still marks the "
    "batch donated",
)
def _rt3_step_donation_everything() -> tuple[int, ...]:
    return (0, 1, 2)
