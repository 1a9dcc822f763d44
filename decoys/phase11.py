"""Plausible wrong answers for phase 11, and correct answers spelled differently."""

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import accepted, decoy
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_VIEWS = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _targets_of(module, instruction) -> set[str]:
    return {
        (i.attribute("custom_call_target") or "").strip('"')
        for c in reachable(module, instruction.called_computations)
        for i in c
        if i.opcode == "custom-call"
    }


def _inner(module, instruction):
    return next(
        i
        for c in reachable(module, instruction.called_computations)
        for i in c
        if i.opcode in COLLECTIVES
    )


def _is_start(module, i) -> bool:
    if i.opcode == "fusion":
        return "AsyncCollectiveStart" in _targets_of(module, i)
    if i.opcode == "async-start":
        return any(
            True
            for c in reachable(module, i.called_computations)
            for x in c
            if x.opcode in COLLECTIVES
        )
    return i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in COLLECTIVES


def _collective_of(module, i) -> str:
    if i.opcode in ("fusion", "async-start"):
        return _inner(module, i).opcode
    return i.opcode.removesuffix("-start")


def _done_of(module, start):
    entry = module.entry
    if start.opcode == "fusion":
        channel = _inner(module, start).attribute("channel_id")
        return next(
            d
            for d in entry
            if d.opcode == "fusion"
            and "AsyncCollectiveDone" in _targets_of(module, d)
            and _inner(module, d).attribute("channel_id") == channel
        )
    done = start.opcode.removesuffix("-start") + "-done"  # async-start: async-done
    return next(d for d in entry if d.opcode == done and start.name in d.operands)


# ---- task 1: async_collectives -------------------------------------------------------------------


@decoy(
    "async_collectives",
    caught_by=[
        "test_async_collectives_counts_every_spelling",
        "test_async_collectives_facts_per_target",
    ],
    why="every ENTRY op named like a start, copy-start included: a DMA is no collective",
)
def starts_by_name(hlo_text):
    module = parse_hlo(hlo_text)
    found = {}
    for i in module.entry:
        if "start" in i.name:
            found[i.name] = (
                _collective_of(module, i) if _is_start(module, i) else i.opcode.split("-")[0]
            )
    return found


@decoy(
    "async_collectives",
    caught_by=[
        "test_async_collectives_counts_every_spelling",
        "test_async_collectives_facts_per_target",
    ],
    why="names the wrapper (fusion, all-gather-start) instead of the collective it runs",
)
def wrapper_opcode(hlo_text):
    module = parse_hlo(hlo_text)
    return {i.name: i.opcode for i in module.entry if _is_start(module, i)}


@decoy(
    "async_collectives",
    caught_by=[
        "test_async_collectives_counts_every_spelling",
        "test_async_collectives_facts_per_target",
    ],
    why="knows only the X-start spelling and misses TPU's kCustom async-collective fusions",
)
def generic_spelling_only(hlo_text):
    return {
        i.name: i.opcode.removesuffix("-start")
        for i in parse_hlo(hlo_text).entry
        if i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in COLLECTIVES
    }


@decoy(
    "async_collectives",
    caught_by=["test_async_collectives_of_drawn_schedules"],
    why="reads only the ROOT of the fused computation: a start body that holds the marker and "
    "ends in a tuple of its elements is missed (the contract says the body holds it)",
)
def starts_from_fused_root(hlo_text):
    module = parse_hlo(hlo_text)
    found = {}
    for i in module.entry:
        called = module.computation((i.attribute("calls") or "").removeprefix("%"))
        if i.opcode == "fusion" and called is not None:
            root = called.root
            if root.opcode == "custom-call" and "AsyncCollectiveStart" in root.attributes_text:
                found[i.name] = called[root.operands[0]].opcode
        elif i.opcode == "async-start" and called is not None:
            if called.root.opcode in COLLECTIVES:
                found[i.name] = called.root.opcode
        elif i.opcode.endswith("-start") and i.opcode[: -len("-start")] in COLLECTIVES:
            found[i.name] = i.opcode[: -len("-start")]
    return found


@decoy(
    "async_collectives",
    caught_by=[
        "test_async_collectives_counts_every_spelling",
        "test_async_collectives_facts_per_target",
    ],
    why="finds the TPU start by its printed name (async-collective-start*), not by the "
    "AsyncCollectiveStart custom-call its body holds",
)
def tpu_starts_by_printed_name(hlo_text):
    module = parse_hlo(hlo_text)
    return {
        i.name: _collective_of(module, i)
        for i in module.entry
        if _is_start(module, i)
        and (i.opcode != "fusion" or i.name.startswith("async-collective-start"))
    }


@decoy(
    "async_collectives",
    caught_by=[
        "test_async_collectives_counts_every_spelling",
        "test_async_collectives_facts_per_target",
    ],
    why="takes every TPU async fusion for an all-gather (all the FSDP recordings show) instead "
    "of reading the collective it wraps",
)
def tpu_starts_are_gathers(hlo_text):
    module = parse_hlo(hlo_text)
    return {
        i.name: "all-gather" if i.opcode == "fusion" else _collective_of(module, i)
        for i in module.entry
        if _is_start(module, i)
    }


# ---- task 2: overlapped_work ---------------------------------------------------------------------


def _between(hlo_text, keep, pick_done):
    module = parse_hlo(hlo_text)
    entry = list(module.entry)
    names = [i.name for i in entry]
    found = {}
    for start in entry:
        if not _is_start(module, start):
            continue
        done = pick_done(module, start)
        lo, hi = names.index(start.name), names.index(done.name)
        found[start.name] = [i.name for i in entry[lo + 1 : hi] if keep(i)]
    return found


@decoy(
    "overlapped_work",
    caught_by=["test_overlapped_work_in_schedule_order"],
    why="keeps the get-tuple-element and bitcast lines, which do no work",
)
def overlap_with_views(hlo_text):
    return _between(hlo_text, lambda i: True, _done_of)


def _first_done_after(module, start):
    names = [i.name for i in module.entry]
    later = list(module.entry)[names.index(start.name) + 1 :]
    return next(
        d
        for d in later
        if d.opcode.endswith("-done")
        or (d.opcode == "fusion" and "AsyncCollectiveDone" in _targets_of(module, d))
    )


@decoy(
    "overlapped_work",
    caught_by=["test_overlapped_work_in_schedule_order"],
    why="stops at the first done after the start, which may be another pair's or a copy-done",
)
def overlap_until_first_done(hlo_text):
    return _between(hlo_text, lambda i: i.opcode not in _VIEWS, _first_done_after)


@decoy(
    "overlapped_work",
    caught_by=["test_overlapped_work_in_schedule_order", "test_overlapped_work_hides_a_matmul"],
    why="lists only the collectives and copies between start and done, not the compute",
)
def overlap_only_data_movement(hlo_text):
    return _between(
        hlo_text,
        lambda i: i.opcode in COLLECTIVES or i.opcode.startswith("copy"),
        _done_of,
    )


def _nth_done(module, start):
    """The done at the start's position among the dones: right while pairs never cross."""
    entry = list(module.entry)
    starts = [i for i in entry if _is_start(module, i)]
    dones = [
        d
        for d in entry
        if (d.opcode.endswith("-done") and d.opcode.removesuffix("-done") in COLLECTIVES)
        or (d.opcode == "fusion" and "AsyncCollectiveDone" in _targets_of(module, d))
    ]
    return dones[[s.name for s in starts].index(start.name)]


@decoy(
    "overlapped_work",
    caught_by=["test_overlapped_work_in_schedule_order"],
    why="pairs the n-th start with the n-th done; wrong once a later pair finishes first",
)
def overlap_nth_start_nth_done(hlo_text):
    return _between(hlo_text, lambda i: i.opcode not in _VIEWS, _nth_done)


@decoy(
    "overlapped_work",
    caught_by=["test_overlapped_work_in_schedule_order"],
    why="leaves out the tuple plumbing only, keeping parameters and constants, which do no work",
)
def overlap_keeps_parameters_and_constants(hlo_text):
    plumbing = {"get-tuple-element", "bitcast", "tuple"}
    return _between(hlo_text, lambda i: i.opcode not in plumbing, _done_of)


# ---- task 3: device_groups -----------------------------------------------------------------------

_IOTA = re.compile(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH = re.compile(r"mesh\[([^\]]*)\]\s*\{([^}]*)\}")


def _ints(text):
    return [int(t) for t in text.split(",") if t.strip()]


def _groups_with(spelling, use_transpose=True, complement=False, mesh_order=False):
    spelling = spelling.strip()
    iota = _IOTA.fullmatch(spelling)
    if iota:
        ids = np.arange(math.prod(_ints(iota.group(2)))).reshape(_ints(iota.group(2)))
        if iota.group(3) and use_transpose:
            ids = ids.transpose(_ints(iota.group(3)))
        return ids.reshape(_ints(iota.group(1))).tolist()
    mesh = _MESH.fullmatch(spelling)
    if mesh:
        axes = [
            (a.split("=")[0].strip(" '"), int(a.split("=")[1])) for a in mesh.group(1).split(",")
        ]
        names = [n for n, _ in axes]
        over = [names.index(a.strip(" '")) for a in mesh.group(2).split(",")]
        if mesh_order:
            over = sorted(over)
        if complement:
            over = [d for d in range(len(axes)) if d not in over]
        kept = [d for d in range(len(axes)) if d not in over]
        ids = np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])
        size = math.prod(axes[d][1] for d in over)
        return ids.transpose(kept + over).reshape(-1, size).tolist()
    return [_ints(g) for g in re.findall(r"\{([\d,]*)\}", spelling[1:-1])]


def _all_groups(hlo_text, **how):
    found = {}
    for c in parse_hlo(hlo_text):
        for i in c:
            groups, channel = i.attribute("replica_groups"), i.attribute("channel_id")
            if groups is not None and channel is not None:
                found[int(channel)] = _groups_with(groups, **how)
    return found


@decoy(
    "device_groups",
    caught_by=["test_device_groups_every_spelling"],
    why="reads [G,S]<=[dims]T(perm) without the transpose",
)
def iota_without_transpose(hlo_text):
    return _all_groups(hlo_text, use_transpose=False)


@decoy(
    "device_groups",
    caught_by=["test_device_groups_every_spelling", "test_device_groups_match_the_mesh"],
    why="groups the devices that share the named axes' coordinate instead of those along them",
)
def mesh_complement(hlo_text):
    return _all_groups(hlo_text, complement=True)


@decoy(
    "device_groups",
    caught_by=["test_device_groups_match_the_mesh"],
    why="orders a group by the mesh's axis order, not the order the collective lists the axes",
)
def mesh_axis_order(hlo_text):
    return _all_groups(hlo_text, mesh_order=True)


@decoy(
    "device_groups",
    caught_by=["test_device_groups_empty_means_every_device"],
    why="reads replica_groups={} as no group at all: XLA means one group of every device",
)
def empty_groups_as_none(hlo_text):
    return _all_groups(hlo_text)


@decoy(
    "device_groups",
    caught_by=["test_device_groups_empty_means_every_device"],
    why="reads replica_groups={} as every partition, forgetting the header's replica_count",
)
def empty_groups_partitions_only(hlo_text):
    found = _all_groups(hlo_text)
    partitions = int(parse_hlo(hlo_text).attributes.get("num_partitions", "1"))
    return {c: g if g else [list(range(partitions))] for c, g in found.items()}


_CHANNELLESS = "test_device_groups_leave_out_collectives_without_a_channel"


@decoy(
    "device_groups",
    caught_by=[_CHANNELLESS],
    why="keys a collective printed without channel_id under channel 0 (`channel_id or 0`): the "
    "cross-replica ones get a channel that no instruction has",
)
def groups_channelless_as_zero(hlo_text):
    found = {}
    devices = int(parse_hlo(hlo_text).attributes.get("replica_count", "1")) * int(
        parse_hlo(hlo_text).attributes.get("num_partitions", "1")
    )
    for c in parse_hlo(hlo_text):
        for i in c:
            groups = i.attribute("replica_groups")
            if groups is not None:
                read = _groups_with(groups)
                found[int(i.attribute("channel_id") or 0)] = read or [list(range(devices))]
    return found


@decoy(
    "device_groups",
    caught_by=[_CHANNELLESS],
    why="reads int(channel_id) of every instruction with replica_groups: a cross-replica "
    "collective, printed without one, makes it raise",
)
def groups_crash_without_channel(hlo_text):
    found = {}
    devices = int(parse_hlo(hlo_text).attributes.get("replica_count", "1")) * int(
        parse_hlo(hlo_text).attributes.get("num_partitions", "1")
    )
    for c in parse_hlo(hlo_text):
        for i in c:
            groups = i.attribute("replica_groups")
            if groups is not None:
                channel = int(i.attribute("channel_id"))  # type: ignore[arg-type]
                found[channel] = _groups_with(groups) or [list(range(devices))]
    return found


# ---- task 4: collective_bytes --------------------------------------------------------------------


def _bits(dtype):
    width = re.search(r"\d+", dtype or "")
    return int(width.group()) if width else 8


def _logical(shape):
    if shape.is_tuple:
        return sum(_logical(e) for e in shape.elements)
    return math.prod(d or 0 for d in shape.dims) * _bits(shape.dtype) // 8


def _padded(shape):
    if shape.is_tuple:
        return sum(_padded(e) for e in shape.elements)
    dims = [d or 0 for d in shape.dims]
    tile = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if tile and shape.minor_to_major:
        for dim, size in zip(shape.minor_to_major, reversed(_ints(tile.group(1))), strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    return math.prod(dims) * _bits(shape.dtype) // 8


def _sum_apart(hlo_text, size_of):
    """Bytes per opcode, once per channel_id and each channelless collective on its own."""
    seen = {}
    for c in parse_hlo(hlo_text):
        for i in c:
            if i.opcode in COLLECTIVES:
                channel = i.attribute("channel_id")
                seen[channel if channel is not None else (c.name, i.name)] = (
                    i.opcode,
                    size_of(i.shape_info),
                )
    totals = {}
    for opcode, size in seen.values():
        totals[opcode] = totals.get(opcode, 0) + size
    return totals


def _sum_bytes(hlo_text, size_of, once=True):
    module = parse_hlo(hlo_text)
    seen = {}
    for k, (c, i) in enumerate((comp, i) for comp in module for i in comp):
        if i.opcode in COLLECTIVES:
            key = int(i.attribute("channel_id", "-1")) if once else k
            seen[key] = (i.opcode, size_of(module, c, i))
    totals = {}
    for opcode, size in seen.values():
        totals[opcode] = totals.get(opcode, 0) + size
    return totals


@decoy(
    "collective_bytes",
    caught_by=["test_collective_bytes_fsdp_gathers_every_weight"],
    why="counts each copy of an async collective (start, overlap and done bodies) again",
)
def bytes_every_copy(hlo_text):
    return _sum_bytes(hlo_text, lambda m, c, i: _logical(i.shape_info), once=False)


@decoy(
    "collective_bytes",
    caught_by=["test_collective_bytes_without_channel_ids"],
    why="keys every collective by its channel_id, so all those without one count as one",
)
def bytes_channelless_merged(hlo_text):
    return _sum_bytes(hlo_text, lambda m, c, i: _logical(i.shape_info))


@decoy(
    "collective_bytes",
    caught_by=[
        "test_collective_bytes_of_shard_map_collectives",
        "test_collective_bytes_of_drawn_modules",
    ],
    why="counts the padded tiles of the result's TPU layout",
)
def bytes_padded(hlo_text):
    return _sum_bytes(hlo_text, lambda m, c, i: _padded(i.shape_info))


@decoy(
    "collective_bytes",
    caught_by=[
        "test_collective_bytes_fsdp_gathers_every_weight",
        "test_collective_bytes_of_shard_map_collectives",
    ],
    why="counts the operand each device sends, not the result it receives",
)
def bytes_of_operands(hlo_text):
    def operand_bytes(module, c, i):
        return sum(_logical(c[name].shape_info) for name in i.operands)

    return _sum_bytes(hlo_text, operand_bytes)


@decoy(
    "collective_bytes",
    caught_by=["test_collective_bytes_match_xla", "test_collective_bytes_of_drawn_modules"],
    why="bytes per element from a table of the float types the recordings show (f32 4, bf16 "
    "and f16 2, anything else 4) instead of the dtype's bit width",
)
def bytes_from_a_float_table(hlo_text):
    widths = {"f32": 4, "bf16": 2, "f16": 2}

    def size(shape):
        if shape.is_tuple:
            return sum(size(e) for e in shape.elements)
        return math.prod(d or 0 for d in shape.dims) * widths.get(shape.dtype or "", 4)

    return _sum_apart(hlo_text, size)


@decoy(
    "collective_bytes",
    caught_by=["test_collective_bytes_of_drawn_modules"],
    why="charges a sub-byte type (s4, u4) a whole byte an element",
)
def bytes_sub_byte_a_byte(hlo_text):
    def size(shape):
        if shape.is_tuple:
            return sum(size(e) for e in shape.elements)
        return math.prod(d or 0 for d in shape.dims) * max(1, _bits(shape.dtype) // 8)

    return _sum_apart(hlo_text, size)


# ---- task 5: padded_bytes ------------------------------------------------------------------------


@decoy(
    "padded_bytes",
    caught_by=[
        "test_padded_bytes_match_memory_analysis",
        "test_padded_bytes_other_generations",
        "test_padded_bytes_of_recorded_parameters",
    ],
    why="the logical size: elements times bytes, as if nothing were padded",
)
def logical_bytes(shape_text):
    return _logical(Shape(shape_text))


@decoy(
    "padded_bytes",
    caught_by=["test_padded_bytes_match_memory_analysis", "test_padded_bytes_other_generations"],
    why="pads the last dimensions of the shape, ignoring the layout's minor-to-major order",
)
def pad_in_shape_order(shape_text):
    shape = Shape(shape_text)
    dims = [d or 0 for d in shape.dims]
    tile = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if tile:
        sizes = _ints(tile.group(1))
        for offset, size in enumerate(reversed(sizes)):
            dim = len(dims) - 1 - offset
            dims[dim] = -(-dims[dim] // size) * size
    return math.prod(dims) * _bits(shape.dtype) // 8


@decoy(
    "padded_bytes",
    caught_by=["test_padded_bytes_match_memory_analysis", "test_padded_bytes_other_generations"],
    why="multiplies the tiles: (2,1) after T(8,128) taken as 16 rows for a 2-byte type",
)
def pad_with_every_tile(shape_text):
    shape = Shape(shape_text)
    dims = [d or 0 for d in shape.dims]
    tiles = [_ints(t) for t in re.findall(r"\(([\d,]+)\)", (shape.layout or "").partition(":")[2])]
    if tiles and shape.minor_to_major:
        sizes = list(tiles[0])
        for later in tiles[1:]:
            for k in range(1, min(len(later), len(sizes)) + 1):
                sizes[-k] *= later[-k]
        for dim, size in zip(shape.minor_to_major, reversed(sizes), strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    return math.prod(dims) * _bits(shape.dtype) // 8


@decoy(
    "padded_bytes",
    caught_by=["test_padded_bytes_of_drawn_shapes"],
    why="charges a sub-byte type (s4, u4) a whole byte an element",
)
def pad_sub_byte_a_byte(shape_text):
    shape = Shape(shape_text)
    dims = [d or 0 for d in shape.dims]
    tile = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if tile and shape.minor_to_major:
        for dim, size in zip(shape.minor_to_major, reversed(_ints(tile.group(1))), strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    return math.prod(dims) * max(1, _bits(shape.dtype) // 8)


# ---- task 6: prefetched_parameters ---------------------------------------------------------------


def _moves(hlo_text, classify, include_copies=True):
    entry = parse_hlo(hlo_text).entry
    numbers = {i.name: int(i.payload or 0) for i in entry if i.opcode == "parameter"}
    kinds = ("copy-start", "copy") if include_copies else ("copy-start",)
    found = {}
    for i in entry:
        if i.opcode in kinds and i.operands and i.operands[0] in numbers:
            moved = i.shape_info.elements[0] if i.shape_info.is_tuple else i.shape_info
            if "S(1)" in (moved.layout or ""):
                found[numbers[i.operands[0]]] = classify(i)
    return found


def _right_kind(i):
    if i.opcode == "copy":
        return "copy"
    if i.attribute("cross_program_prefetch_index") is not None:
        return "cross-program prefetch"
    return "prefetch"


@decoy(
    "prefetched_parameters",
    caught_by=["test_prefetched_parameters", "test_prefetched_parameters_facts"],
    why="calls every copy-start a prefetch, missing the cross-program one",
)
def every_start_a_prefetch(hlo_text):
    return _moves(hlo_text, lambda i: "copy" if i.opcode == "copy" else "prefetch")


@decoy(
    "prefetched_parameters",
    caught_by=["test_prefetched_parameters", "test_prefetched_parameters_facts"],
    why="only the async copy-starts: a blocking copy into S(1) moves a parameter too",
)
def async_copies_only(hlo_text):
    return _moves(hlo_text, _right_kind, include_copies=False)


@decoy(
    "prefetched_parameters",
    caught_by=["test_prefetched_parameters"],
    why="takes any copy of a parameter, also one whose result stays in the default memory",
)
def any_copy_of_a_parameter(hlo_text):
    entry = parse_hlo(hlo_text).entry
    numbers = {i.name: int(i.payload or 0) for i in entry if i.opcode == "parameter"}
    return {
        numbers[i.operands[0]]: _right_kind(i)
        for i in entry
        if i.opcode in ("copy-start", "copy", "convert") and i.operands[0] in numbers
    }


@decoy(
    "prefetched_parameters",
    caught_by=["test_prefetched_parameters", "test_prefetched_parameters_facts"],
    why="counts every plain copy of a parameter as a copy into S(1), also one that only "
    "changes its layout in the default memory",
)
def every_parameter_copy(hlo_text):
    entry = parse_hlo(hlo_text).entry
    numbers = {i.name: int(i.payload or 0) for i in entry if i.opcode == "parameter"}
    found = _moves(hlo_text, _right_kind)
    for i in entry:
        if i.opcode == "copy" and i.operands[0] in numbers:
            found[numbers[i.operands[0]]] = "copy"
    return found


@decoy(
    "prefetched_parameters",
    caught_by=["test_prefetched_parameters", "test_prefetched_parameters_facts"],
    why="reads the parameter's number from its name (param.3), not from parameter(N)",
)
def number_from_the_name(hlo_text):
    entry = parse_hlo(hlo_text).entry
    parameters = {i.name: i for i in entry if i.opcode == "parameter"}
    found = {}
    for i in entry:
        if i.opcode not in ("copy-start", "copy") or not i.operands:
            continue
        source = parameters.get(i.operands[0])
        if source is None:
            continue
        moved = i.shape_info.elements[0] if i.shape_info.is_tuple else i.shape_info
        if "S(1)" in (moved.layout or ""):
            digits = re.findall(r"\d+", source.name)
            found[int(digits[-1]) if digits else 0] = _right_kind(i)
    return found


# ---- task 7: predict_layer_flops -----------------------------------------------------------------


@decoy(
    "predict_layer_flops",
    caught_by=[
        "test_predict_layer_flops_matches_libtpu",
        "test_predict_layer_flops_matches_cpu_cost_analysis",
    ],
    why="counts the matmul only, not the bias add and the relu",
)
def matmul_flops_only(m, k, n, data, model):
    return 2 * (m // data) * k * (n // model)


@decoy(
    "predict_layer_flops",
    caught_by=[
        "test_predict_layer_flops_matches_libtpu",
        "test_predict_layer_flops_matches_cpu_cost_analysis",
    ],
    why="the whole program's flops: cost_analysis on a sharded program is per device",
)
def global_flops(m, k, n, data, model):
    return 2 * m * k * n + 2 * m * n


@decoy(
    "predict_layer_flops",
    caught_by=[
        "test_predict_layer_flops_matches_libtpu",
        "test_predict_layer_flops_matches_cpu_cost_analysis",
    ],
    why="splits k across 'model' too, though each device holds whole columns of w",
)
def k_split_too(m, k, n, data, model):
    rows, cols = m // data, n // model
    return 2 * rows * (k // model) * cols + 2 * rows * cols


# ---- task 8: gather_free_specs -------------------------------------------------------------------


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_budget", "test_gather_free_specs_budget_on_cpu"],
    why="w1 by rows and w2 by columns: both contractions need the whole weight, so XLA gathers",
)
def specs_swapped():
    return P("model", None), P(None, "model")


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_budget", "test_gather_free_specs_budget_on_cpu"],
    why="replicated weights: no collective at all, but every device holds both whole weights",
)
def specs_replicated():
    return P(), P()


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_budget", "test_gather_free_specs_budget_on_cpu"],
    why="FSDP-style rows over 'data': XLA moves the weights between devices every step",
)
def specs_fsdp_rows():
    return P("data", None), P("data", None)


@decoy(
    "gather_free_specs",
    caught_by=["test_gather_free_specs_budget", "test_gather_free_specs_budget_on_cpu"],
    why="w1 by columns, w2 left whole: no collective moves a weight, but each device holds "
    "half of w1 and all of w2, over the budget",
)
def specs_w2_replicated():
    return P(None, "model"), P(None, None)


@accepted("gather_free_specs", why="the same splits with the axis written as a one-axis tuple")
def specs_as_tuples():
    return P(None, ("model",)), P(("model",), None)


# ---- task 9: step_donation -----------------------------------------------------------------------


@decoy(
    "step_donation",
    caught_by=["test_step_donation_peak_budget"],
    why="donates the parameters only; the momentum keeps a second copy alive",
)
def donate_params_only():
    return (0,)


@decoy(
    "step_donation",
    caught_by=["test_step_donation_peak_budget"],
    why="donates the batch too: no output can use its buffer, and the caller loses it",
)
def donate_everything():
    return (0, 1, 2)


@decoy(
    "step_donation",
    caught_by=["test_step_donation_peak_budget"],
    why="no donation: old and new state live side by side at the peak",
)
def donate_nothing():
    return ()


@decoy(
    "step_donation",
    caught_by=["test_step_donation_keeps_the_batch", "test_step_donation_peak_budget"],
    why="donates the batch as -1: jax counts it from the end, the caller loses it all the same",
)
def donate_batch_from_the_end():
    return (0, 1, -1)


# ---- task 10: matmul_fusions ---------------------------------------------------------------------

_PLUMBING = {
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
    *COLLECTIVES,
}


def _fused_opcodes(hlo_text, matmul="convolution", skip=frozenset(_PLUMBING), where=None):
    module = parse_hlo(hlo_text)
    found = {}
    for i in module.entry:
        if i.opcode != "fusion" or (where is not None and not where(i)):
            continue
        opcodes = {x.opcode for c in reachable(module, i.called_computations) for x in c}
        if matmul in opcodes:
            found[i.name] = sorted(opcodes - skip - {matmul})
    return found


@decoy(
    "matmul_fusions",
    caught_by=["test_matmul_fusions_match_xla", "test_matmul_fusions_hold_the_epilogue"],
    why="looks for dot, which XLA:TPU prints as convolution",
)
def fusions_with_dots(hlo_text):
    return _fused_opcodes(hlo_text, matmul="dot")


@decoy(
    "matmul_fusions",
    caught_by=["test_matmul_fusions_match_xla", "test_matmul_fusions_hold_the_epilogue"],
    why="counts the converts and broadcasts of bf16 arithmetic as fused work",
)
def fusions_with_converts(hlo_text):
    return _fused_opcodes(hlo_text, skip=frozenset(_PLUMBING - {"convert", "broadcast"}))


@decoy(
    "matmul_fusions",
    caught_by=["test_matmul_fusions_match_xla"],
    why="takes the all-gather for the only collective, so a permute or an all-reduce inside a "
    "matmul fusion is reported as fused work",
)
def fusions_gather_only(hlo_text):
    return _fused_opcodes(hlo_text, skip=frozenset(_PLUMBING - set(COLLECTIVES) | {"all-gather"}))


@decoy(
    "matmul_fusions",
    caught_by=["test_matmul_fusions_match_xla", "test_matmul_fusions_hold_the_epilogue"],
    why="trusts fusion names: only fusions called convolution_*, not fusion.9 or fusion.18",
)
def fusions_by_name(hlo_text):
    return _fused_opcodes(hlo_text, where=lambda i: i.name.startswith("convolution"))


# ---- task 11: predict_allreduce_bytes ------------------------------------------------------------


@decoy(
    "predict_allreduce_bytes",
    caught_by=[
        "test_predict_allreduce_bytes_matches_the_compiled_program",
        "test_predict_allreduce_bytes_matches_cpu",
    ],
    why="the hidden activations are what is split, so takes them for what is summed",
)
def allreduce_of_hidden(batch, width, hidden, data, model, itemsize):
    return 0 if model == 1 else batch // data * hidden // model * itemsize


@decoy(
    "predict_allreduce_bytes",
    caught_by=[
        "test_predict_allreduce_bytes_matches_the_compiled_program",
        "test_predict_allreduce_bytes_matches_cpu",
    ],
    why="forgets that a 'model' axis of one device leaves nothing to sum",
)
def allreduce_always(batch, width, hidden, data, model, itemsize):
    return batch // data * width * itemsize


@decoy(
    "predict_allreduce_bytes",
    caught_by=[
        "test_predict_allreduce_bytes_matches_the_compiled_program",
        "test_predict_allreduce_bytes_matches_cpu",
    ],
    why="the whole batch's output: x is split over 'data' before the all-reduce",
)
def allreduce_whole_batch(batch, width, hidden, data, model, itemsize):
    return 0 if model == 1 else batch * width * itemsize


@decoy(
    "predict_allreduce_bytes",
    caught_by=[
        "test_predict_allreduce_bytes_matches_the_compiled_program",
        "test_predict_allreduce_bytes_matches_cpu",
    ],
    why="counts a device's share of the output (what a reduce-scatter leaves) instead of the "
    "whole partial sum an all-reduce gives every device",
)
def allreduce_of_a_shard(batch, width, hidden, data, model, itemsize):
    return 0 if model == 1 else batch // data * (width // model) * itemsize


@decoy(
    "predict_allreduce_bytes",
    caught_by=[
        "test_predict_allreduce_bytes_matches_the_compiled_program",
        "test_predict_allreduce_bytes_matches_cpu",
    ],
    why="sums in bf16 whatever the dtype (as the f32 weights of the FSDP stack are gathered)",
)
def allreduce_in_bf16(batch, width, hidden, data, model, itemsize):
    return 0 if model == 1 else batch // data * width * min(itemsize, 2)


@decoy(
    "async_collectives",
    caught_by=["test_async_collectives_counts_every_spelling"],
    why="knows the TPU fusions and the <collective>-start ops but not the generic async-start "
    "wrapper, the only async spelling of a reduce-scatter or an all-to-all "
    "(handwritten_async_wrapped)",
)
def starts_without_async_wrapper(hlo_text):
    module = parse_hlo(hlo_text)
    return {
        i.name: _collective_of(module, i)
        for i in module.entry
        if i.opcode != "async-start" and _is_start(module, i)
    }


def _done_of_same_kind(module, start):
    """The first later done of the same collective opcode, whatever its channel."""
    if start.opcode != "fusion":
        return _done_of(module, start)
    names = [i.name for i in module.entry]
    kind = _inner(module, start).opcode
    return next(
        d
        for d in list(module.entry)[names.index(start.name) + 1 :]
        if d.opcode == "fusion"
        and "AsyncCollectiveDone" in _targets_of(module, d)
        and _inner(module, d).opcode == kind
    )


@decoy(
    "overlapped_work",
    caught_by=["test_overlapped_work_in_schedule_order"],
    why="pairs a TPU start with the first later done of the same collective, not the same "
    "channel_id: two permutes finishing in the other order swap windows "
    "(handwritten_tpu_same_kind)",
)
def overlap_pairs_by_collective_kind(hlo_text):
    return _between(hlo_text, lambda i: i.opcode not in _VIEWS, _done_of_same_kind)


@decoy(
    "prefetched_parameters",
    caught_by=["test_prefetched_parameters"],
    why="looks for S(1) anywhere in the copy-start's tuple, so a copy out of S(1) (an eviction, "
    "S(1) only in the source) counts as a prefetch (handwritten_eviction)",
)
def prefetch_s1_in_source_too(hlo_text):
    entry = parse_hlo(hlo_text).entry
    numbers = {i.name: int(i.payload or 0) for i in entry if i.opcode == "parameter"}
    return {
        numbers[i.operands[0]]: _right_kind(i)
        for i in entry
        if i.opcode in ("copy-start", "copy") and i.operands[0] in numbers and "S(1)" in i.shape
    }
