"""Red-team wrong answers for phase 11, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_BITS = {
    "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64,
}  # fmt: skip


def _rt_targets(module, instruction) -> list[str]:
    """custom_call_targets reachable from a fusion (unquoted)."""
    comps = reachable(module, instruction.called_computations)
    return [
        i.attribute("custom_call_target", "").strip('"')
        for c in comps
        for i in c.instructions
        if i.opcode == "custom-call"
    ]


def _rt_collective_in(module, instruction):
    for c in reachable(module, instruction.called_computations):
        for i in c.instructions:
            if i.opcode in _COLLECTIVES:
                return i
    return None


# --- async_collectives -----------------------------------------------------------------------


@wrong(
    "async_collectives",
    why="identifies the TPU start by its printed name (`async-collective-start...`) instead of the "
    "kCustom fusion whose body holds custom_call_target=AsyncCollectiveStart; wrong on a module "
    "whose start fusion is named %launch.a (custom-call AsyncCollectiveStart around an all-reduce): "
    "returns {} for it instead of {'launch.a': 'all-reduce', ...}",
)
def starts_found_by_name(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found: dict[str, str] = {}
    for i in module.entry.instructions:
        if i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in _COLLECTIVES:
            found[i.name] = i.opcode.removesuffix("-start")
        elif i.opcode == "fusion" and i.name.startswith("async-collective-start"):
            inner = _rt_collective_in(module, i)
            if inner is not None:
                found[i.name] = inner.opcode
    return found


@wrong(
    "async_collectives",
    why="every TPU async-collective fusion is taken for an all-gather (the only kind in the FSDP "
    "recordings) instead of reading the collective in its body; wrong on a kCustom "
    "AsyncCollectiveStart fusion wrapping an all-reduce: says 'all-gather'",
)
def tpu_starts_are_all_gathers(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found: dict[str, str] = {}
    for i in module.entry.instructions:
        if i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in _COLLECTIVES:
            found[i.name] = i.opcode.removesuffix("-start")
        elif i.opcode == "fusion" and "AsyncCollectiveStart" in _rt_targets(module, i):
            found[i.name] = "all-gather"
    return found


# --- overlapped_work -------------------------------------------------------------------------

_RT_QUIET = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}


def _rt_starts_and_dones(module):
    starts, dones = [], []
    for i in module.entry.instructions:
        if i.opcode.endswith("-start") and i.opcode.removesuffix("-start") in _COLLECTIVES:
            starts.append(i)
        elif i.opcode.endswith("-done") and i.opcode.removesuffix("-done") in _COLLECTIVES:
            dones.append(i)
        elif i.opcode == "fusion":
            targets = _rt_targets(module, i)
            if "AsyncCollectiveStart" in targets:
                starts.append(i)
            elif "AsyncCollectiveDone" in targets:
                dones.append(i)
    return starts, dones


@wrong(
    "overlapped_work",
    why="pairs the n-th start with the n-th done in ENTRY order instead of by channel_id / operand; "
    "right while pairs do not cross (every recording, the handwritten module), wrong on "
    "start A, start B, done B, done A: A's window is cut at done B",
)
def nth_start_pairs_nth_done(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry.instructions)
    position = {i.name: k for k, i in enumerate(entry)}
    starts, dones = _rt_starts_and_dones(module)
    found = {}
    for start, done in zip(starts, dones):
        between = entry[position[start.name] + 1 : position[done.name]]
        found[start.name] = [i.name for i in between if i.opcode not in _RT_QUIET]
    return found


@wrong(
    "overlapped_work",
    why="leaves out only the tuple plumbing (get-tuple-element, bitcast, tuple) and keeps "
    "constants and parameters, which do no work; right on the recordings (their constants and "
    "parameters are printed before any start), wrong on a module with a `constant` scheduled "
    "between a start and its done",
)
def keeps_constants_in_window(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry.instructions)
    position = {i.name: k for k, i in enumerate(entry)}
    starts, dones = _rt_starts_and_dones(module)
    found = {}
    for start in starts:
        if start.opcode == "fusion":
            channel = _rt_collective_in(module, start).attribute("channel_id")
            done = next(
                d
                for d in dones
                if d.opcode == "fusion"
                and _rt_collective_in(module, d).attribute("channel_id") == channel
            )
        else:
            done = next(d for d in dones if start.name in d.operands)
        between = entry[position[start.name] + 1 : position[done.name]]
        found[start.name] = [
            i.name for i in between if i.opcode not in {"get-tuple-element", "bitcast", "tuple"}
        ]
    return found


# --- matmul_fusions --------------------------------------------------------------------------

_RT_MOVES = {
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call",
}  # fmt: skip


@wrong(
    "matmul_fusions",
    why="also drops slice/dynamic-slice/pad/concatenate as 'moving data', which the contract's "
    "list does not name; wrong on recorded/mlp_rows_v5e.hlo: fusion gives ['maximum'] instead of "
    "['dynamic-slice', 'maximum']",
)
def slices_count_as_moves(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    skip = _RT_MOVES | set(_COLLECTIVES) | {
        "slice", "dynamic-slice", "dynamic-update-slice", "pad", "concatenate", "convolution",
    }  # fmt: skip
    found = {}
    for i in module.entry.instructions:
        if i.opcode != "fusion":
            continue
        ops = {x.opcode for c in reachable(module, i.called_computations) for x in c.instructions}
        if "convolution" in ops:
            found[i.name] = sorted(ops - skip)
    return found


@wrong(
    "matmul_fusions",
    why="'the collectives' taken to be the all-gather of the FSDP recordings: all-reduce, "
    "collective-permute, reduce-scatter, all-to-all are reported as fused work; wrong on a "
    "kOutput fusion holding a collective-permute next to its convolution and a tanh: gives "
    "['collective-permute', 'tanh'] instead of ['tanh']",
)
def only_all_gather_is_a_collective(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    skip = _RT_MOVES | {"all-gather", "convolution"}
    found = {}
    for i in module.entry.instructions:
        if i.opcode != "fusion":
            continue
        ops = {x.opcode for c in reachable(module, i.called_computations) for x in c.instructions}
        if "convolution" in ops:
            found[i.name] = sorted(ops - skip)
    return found


# --- device_groups ---------------------------------------------------------------------------


def _rt_groups(spec: str, *, square_iota: bool) -> list[list[int]]:
    spec = spec.strip()
    if spec.startswith("{"):
        return [
            [int(x) for x in g.split(",") if x.strip()]
            for g in re.findall(r"\{([\d,\s]*)\}", spec[1:-1])
        ]
    iota = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
    if iota:
        g, s = int(iota[1]), int(iota[2])
        dims = [int(d) for d in iota[3].split(",")]
        perm = [int(p) for p in iota[4].split(",")] if iota[4] else None
        if square_iota and perm is not None and len(perm) == 2:
            # the learner's reading: lay the numbers out as [G, S] and transpose that
            return np.arange(g * s).reshape(g, s).T.reshape(g, s).tolist()
        a = np.arange(math.prod(dims)).reshape(dims)
        if perm is not None:
            a = a.transpose(perm)
        return a.reshape(g, s).tolist()
    mesh = re.fullmatch(r"mesh\[(.*)\]\s*\{(.*)\}", spec)
    if mesh is None:
        return []
    named = re.findall(r"'(\w+)'=(\d+)", mesh[1])
    axes = [n for n, _ in named]
    sizes = [int(s) for _, s in named]
    chosen = re.findall(r"'(\w+)'", mesh[2])
    a = np.arange(math.prod(sizes)).reshape(sizes)
    sel = [axes.index(n) for n in chosen]
    rest = [k for k in range(len(axes)) if k not in sel]
    a = a.transpose(rest + sel)
    return a.reshape(-1, math.prod(sizes[k] for k in sel)).tolist()


@wrong(
    "device_groups",
    why="reads `[G,S]<=[d0,d1]T(1,0)` as arange(G*S).reshape(G,S).T, ignoring the bracketed dims "
    "(equal to [G,S] in every 2-D example); wrong on `[2,4]<=[4,2]T(1,0)`: gives "
    "[[0,4,1,5],[2,6,3,7]] instead of [[0,2,4,6],[1,3,5,7]]",
)
def iota_transposed_in_group_shape(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    found: dict[int, list[list[int]]] = {}
    for c in module.computations:
        for i in c.instructions:
            groups, channel = i.attribute("replica_groups"), i.attribute("channel_id")
            if groups and channel:
                found[int(channel)] = _rt_groups(groups, square_iota=True)
    return found


@wrong(
    "device_groups",
    why="'in any computation' read as ENTRY only; wrong on recorded/fsdp4_v5e.hlo, whose fourth "
    "all-gather (channel_id=8) lives only inside the async wrapper and fused computations: "
    "channel 8 is missing",
)
def groups_of_entry_only(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    found: dict[int, list[list[int]]] = {}
    for i in module.entry.instructions:
        groups, channel = i.attribute("replica_groups"), i.attribute("channel_id")
        if groups and channel:
            found[int(channel)] = _rt_groups(groups, square_iota=False)
    return found


# --- collective_bytes ------------------------------------------------------------------------


def _rt_tiled_bytes(shape: Shape) -> int:
    if shape.is_tuple:
        return sum(_rt_tiled_bytes(e) for e in shape.elements)
    dims = list(shape.dims)
    tile = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if tile:
        sizes = [int(t) for t in tile[1].split(",")]
        for k, t in enumerate(list(reversed(sizes))[: len(dims)]):
            d = shape.minor_to_major[k]
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * _BITS.get(shape.dtype or "", 32) // 8


@wrong(
    "collective_bytes",
    why="counts the padded tiled buffer instead of the logical bytes ('never the padded tiles'); "
    "every recorded collective is a multiple of its tiles so it agrees there, wrong on an "
    "all-reduce of f32[100,300]{1,0:T(8,128)}: 104*384*4 = 159744 instead of 120000",
)
def padded_collective_bytes(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    found: dict[str, int] = {}
    seen = set()
    for c in module.computations:
        for i in c.instructions:
            if i.opcode not in _COLLECTIVES:
                continue
            key = i.attribute("channel_id") or (c.name, i.name)
            if key in seen:
                continue
            seen.add(key)
            found[i.opcode] = found.get(i.opcode, 0) + _rt_tiled_bytes(Shape(i.shape))
    return found


@wrong(
    "collective_bytes",
    why="bytes per element from a table of the floating types seen in the recordings "
    "(f32 4, bf16/f16 2, anything else 4) instead of the dtype's bit width; wrong on an "
    "all-gather with result s8[128,16]: 8192 instead of 2048",
)
def float_width_table(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    width = {"f32": 4, "bf16": 2, "f16": 2}

    def size(shape: Shape) -> int:
        if shape.is_tuple:
            return sum(size(e) for e in shape.elements)
        return math.prod(shape.dims) * width.get(shape.dtype or "", 4)

    found: dict[str, int] = {}
    seen = set()
    for c in module.computations:
        for i in c.instructions:
            if i.opcode not in _COLLECTIVES:
                continue
            key = i.attribute("channel_id") or (c.name, i.name)
            if key in seen:
                continue
            seen.add(key)
            found[i.opcode] = found.get(i.opcode, 0) + size(Shape(i.shape))
    return found


# --- padded_bytes ----------------------------------------------------------------------------


@wrong(
    "padded_bytes",
    why="bytes per element as max(1, bits // 8): a sub-byte type is charged a whole byte "
    "('bytes per element from the dtype's bit width'); right for every PADDING_CASES dtype, "
    "wrong on s4[9,130]{1,0:T(8,128)(8,1)}: 16*256 = 4096 instead of 2048",
)
def sub_byte_types_take_a_byte(shape_text: str) -> int:
    shape = Shape(shape_text)
    dims = list(shape.dims)
    tile = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if tile:
        sizes = [int(t) for t in tile[1].split(",")]
        for k, t in enumerate(list(reversed(sizes))[: len(dims)]):
            d = shape.minor_to_major[k]
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * max(1, _BITS.get(shape.dtype or "", 32) // 8)


@wrong(
    "padded_bytes",
    why="a 1-D array is padded to a multiple of 128 whatever its tile says (T(128) of f32[7] is "
    "the example that reads that way); wrong on bf16[2049]{0:T(1024)(128)(2,1)}: 2176*2 = 4352 "
    "instead of 3072*2 = 6144",
)
def one_d_always_128(shape_text: str) -> int:
    shape = Shape(shape_text)
    dims = list(shape.dims)
    tile = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if tile:
        sizes = [int(t) for t in tile[1].split(",")]
        if len(dims) == 1:
            sizes = [128]
        for k, t in enumerate(list(reversed(sizes))[: len(dims)]):
            d = shape.minor_to_major[k]
            dims[d] = -(-dims[d] // t) * t
    return math.prod(dims) * _BITS.get(shape.dtype or "", 32) // 8


# --- prefetched_parameters -------------------------------------------------------------------


def _rt_param_moves(module):
    entry = module.entry
    for i in entry.instructions:
        if i.opcode not in ("copy-start", "copy"):
            continue
        source = entry.instruction(i.operands[0]) if i.operands else None
        if source is not None and source.opcode == "parameter":
            yield i, source


@wrong(
    "prefetched_parameters",
    why="the first copy-start of ENTRY is taken for the cross-program prefetch instead of "
    "reading cross_program_prefetch_index; right on every FSDP/MLP recording (their first "
    "copy-start carries it), wrong on recorded/odd_shapes_v5e.hlo: parameter 0 is a plain "
    "'prefetch' there, not the cross-program one",
)
def first_copy_start_is_cross_program(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    found: dict[int, str] = {}
    first = True
    for i, source in _rt_param_moves(module):
        shape = Shape(i.shape)
        moved = shape.elements[0] if shape.is_tuple else shape
        if "S(1)" not in (moved.layout or ""):
            continue
        if i.opcode == "copy":
            found[int(source.payload)] = "copy"
        else:
            found[int(source.payload)] = "cross-program prefetch" if first else "prefetch"
            first = False
    return found


@wrong(
    "prefetched_parameters",
    why="checks S(1) only for copy-start: every plain `copy` of a parameter is reported as a "
    "'copy' into S(1), even one that only changes its layout in HBM; wrong on ENTRY "
    "`%wt = f32[128,128]{0,1:T(8,128)} copy(%w)` with %w parameter(1): reports {1: 'copy'}",
)
def every_parameter_copy_goes_to_s1(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    found: dict[int, str] = {}
    for i, source in _rt_param_moves(module):
        if i.opcode == "copy":
            found[int(source.payload)] = "copy"
            continue
        moved = Shape(i.shape).elements[0]
        if "S(1)" in (moved.layout or ""):
            found[int(source.payload)] = (
                "cross-program prefetch"
                if i.attribute("cross_program_prefetch_index") is not None
                else "prefetch"
            )
    return found


# --- predict / decide ------------------------------------------------------------------------


@wrong(
    "predict_layer_flops",
    why="counts only the matmul block (2*k per output element) and leaves out the bias add and "
    "the relu, one flop per element each ('elementwise ops one flop per element'); wrong on "
    "(8, 8, 8, 1, 1): 1024 instead of 8*8*(2*8+2) = 1152 (12% low)",
)
def matmul_flops_only(m: int, k: int, n: int, data: int, model: int) -> int:
    return 2 * (m // data) * k * (n // model)


@wrong(
    "predict_layer_flops",
    why="splits the contraction too (k / model, as if w were split by rows) while the contract "
    "splits w by columns, so each device contracts all of k; wrong on (512, 256, 384, 2, 2): "
    "256*192*(2*128+2) instead of 256*192*(2*256+2)",
)
def contraction_split_over_model(m: int, k: int, n: int, data: int, model: int) -> int:
    return (m // data) * (n // model) * (2 * (k // model) + 2)


@wrong(
    "predict_allreduce_bytes",
    why="assumes the partial outputs are summed in bf16 like the gathered f32 weights of the "
    "README (min(itemsize, 2)) instead of `itemsize`-byte elements; wrong on f32 "
    "(96, 200, 400, 2, 2, 4): 48*200*2 = 19200 instead of 38400",
)
def allreduce_in_bf16(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return (batch // data) * width * min(itemsize, 2)


@wrong(
    "predict_allreduce_bytes",
    why="counts the all-reduce as the bytes a device sends, its share of the output "
    "(a reduce-scatter's result) instead of the whole [batch/data, width] partial sum it "
    "receives; wrong on (512, 256, 1024, 2, 2, 2): 256*128*2 = 65536 instead of 131072",
)
def allreduce_counts_a_shard(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return (batch // data) * (width // model) * itemsize


@wrong(
    "gather_free_specs",
    why="splits w1 by columns but keeps w2 replicated (no collective at all), so each device "
    "holds half of w1 and all of w2: 3/4 of the replicated weights, over the budget of x plus half",
)
def w2_left_replicated() -> tuple[P, P]:
    return P(None, "model"), P(None, None)


@wrong(
    "step_donation",
    why="donates the batch too ('the caller evaluates on the batch after the step, so it must "
    "stay valid'); no output has the batch's shape, so it buys nothing and deletes it: (0, 1, 2)",
)
def donate_everything() -> tuple[int, ...]:
    return (0, 1, 2)
