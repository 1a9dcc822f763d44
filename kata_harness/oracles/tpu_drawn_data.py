"""Phase 11's drawn data: modules and shapes made from a ``random.Random`` for the reading tasks
device_groups, collective_bytes, padded_bytes and prefetched_parameters.

Every draw holds every situation the contracts allow: groups in the three spellings over up to
32 devices (numbers past 9), mesh axes listed in any order, ``{}`` with replicas and partitions;
collectives of every element type XLA's parser knows (sub-byte, fp8, c128, u64), scalars and
tuples, with and without channel_id, in called computations, while bodies and TPU async bodies,
over replica groups of every spelling and size (singletons too: each device still receives);
tiles of one to three sizes over any layout, empty dimensions too; parameters moved into S(1) by
every kind of copy, scalar ones untiled, cross-program prefetches of index 0 and 1, and copies
that are no ENTRY parameter's. The expected groups are built here with NumPy (the order a gather
concatenates: the listed axes major to minor, as XLA:CPU runs an all_gather over ('b', 'a'));
bytes, padding and moves come from XLA's parse (:mod:`.tpu_hlo`).
"""

from __future__ import annotations

import functools
import math
import random
import re

import numpy as np

from . import xla_accepts
from .tpu_drawn_schedule import Names

DTYPES = (
    "pred", "s2", "u2", "s4", "u4", "s8", "u8", "s16", "u16", "f16", "bf16", "s32", "u32", "f32",
    "s64", "u64", "f64", "c64", "c128", "f8e4m3fn", "f8e5m2", "f8e4m3b11fnuz", "f8e4m3fnuz",
    "f8e5m2fnuz", "f8e4m3", "f8e3m4", "f4e2m1fn", "f8e8m0fnu",
)  # fmt: skip
_SUB_BYTE = ("s2", "u2", "s4", "u4", "f4e2m1fn")
# libtpu 0.0.50.1 stops the whole process (SIGILL in ShrinkWindowForMultiPackedChunks) when it
# compiles a rank-1 s2 or u2 array: an answer that asks libtpu for the padding would take the run
# down with it, so those two types are drawn at rank 2 and up (s4 and f4e2m1fn keep rank 1)
_LEAST_RANK = {"s2": 2, "u2": 2}
_LATER = ("", "(2,1)", "(4,1)", "(8,1)", "(128)")
_FIRST = {1: ("T(128)", "T(256)", "T(1024)"), 2: ("T(8,128)", "T(4,128)", "T(2,128)", "T(16,128)")}
_FIRST[3] = ("T(2,8,128)", "T(4,8,128)", "T(3,2,128)")


@functools.cache
def known_dtypes() -> tuple[str, ...]:
    """The element types of DTYPES this XLA's parser accepts (all of them on jax 0.12)."""

    def module(d: str) -> str:
        return (
            f"HloModule t\n\nENTRY %e (p: {d}[2]) -> {d}[2] {{\n  ROOT %p = {d}[2] parameter(0)\n}}"
        )

    return tuple(d for d in DTYPES if xla_accepts(module(d)))


def tiled_shape(rng: random.Random, dtype: str, rank: int, tile_rank: int, space: str = "") -> str:
    """An array shape of `rank` odd dimensions (a fifth of them 1, one in 15 empty) in a drawn
    layout order, tiled over `tile_rank` of them (0: no tile), maybe with a memory space."""
    dims = [rng.choices((1, 0, rng.randint(2, 150)), (3, 1, 11))[0] for _ in range(rank)]
    order = list(range(rank))
    rng.shuffle(order)
    if dtype in _SUB_BYTE and not tile_rank and rank:
        dims[order[-1]] = -(-dims[order[-1]] // 8) * 8  # whole bytes
    layout = ",".join(map(str, order))
    if tile_rank:
        layout += f":{rng.choice(_FIRST[tile_rank])}{rng.choice(_LATER)}{space}"
    elif space:
        layout += f":{space}"
    return f"{dtype}[{','.join(map(str, dims))}]{{{layout}}}"


def padded_shapes(rng: random.Random) -> list[str]:
    """Every known element type, tiled over one, two and three dimensions and untiled, in any
    layout order, some with a memory space."""
    shapes = []
    for dtype in known_dtypes():
        for tile_rank in rng.sample((0, 1, 2, 3), 2):
            rank = rng.randint(max(tile_rank, 1, _LEAST_RANK.get(dtype, 1)), 4)
            space = rng.choice(("", "", "S(1)"))
            shapes.append(tiled_shape(rng, dtype, rank, tile_rank, space))
    rng.shuffle(shapes)
    return shapes


# ---- device groups ------------------------------------------------------------------------------


def _spelling(rng: random.Random, how: str, devices: int) -> tuple[str, list[list[int]]]:
    """(replica_groups text, the groups it means) over `devices` devices."""
    if how == "explicit":
        size = rng.choice([s for s in (2, 4, 8) if devices % s == 0])
        ids = rng.sample(range(devices), devices)
        groups = [ids[k : k + size] for k in range(0, devices, size)]
        text = ",".join("{" + ",".join(map(str, g)) + "}" for g in groups)
        return "{" + text + "}", groups
    sizes = _factors(rng, devices)
    ids = np.arange(devices).reshape(sizes)
    if how == "iota":
        perm = rng.sample(range(len(sizes)), len(sizes))
        size = math.prod(sizes[p] for p in perm[rng.randint(1, len(perm) - 1) :])
        groups = ids.transpose(perm).reshape(-1, size).tolist()
        head = f"[{devices // size},{size}]<="
        if perm == sorted(perm):  # XLA prints an untransposed iota over one dimension
            return f"{head}[{devices}]", groups
        return f"{head}[{','.join(map(str, sizes))}]T({','.join(map(str, perm))})", groups
    names = rng.sample(["x", "y", "data", "model", "a", "b", "pipe", "expert"], len(sizes))
    over = rng.sample(range(len(sizes)), rng.randint(1 + (how == "mesh reordered"), len(sizes)))
    if how == "mesh reordered" and over == sorted(over):  # not in the mesh's order
        over.reverse()
    kept = [d for d in range(len(sizes)) if d not in over]
    groups = ids.transpose(kept + over).reshape(-1, math.prod(sizes[d] for d in over)).tolist()
    axes = ",".join(f"'{n}'={s}" for n, s in zip(names, sizes, strict=True))
    return f"mesh[{axes}] {{{','.join(repr(names[d]) for d in over)}}}", groups


def _factors(rng: random.Random, devices: int) -> list[int]:
    """`devices` as a product of 2 or 3 factors above 1."""
    while True:
        first = rng.choice([f for f in (2, 3, 4, 8) if devices % f == 0])
        rest = devices // first
        if rest > 1 and rng.random() < 0.5:
            second = rng.choice([f for f in (2, 3, 4) if rest % f == 0 and rest // f > 1] or [rest])
            if rest // second > 1:
                return [first, second, rest // second]
        if rest > 1:
            return [first, rest]


def groups_module(rng: random.Random) -> tuple[str, dict[int, list[list[int]]]]:
    """A module whose collectives use every spelling over 12 to 32 devices, in ENTRY and in
    called computations, some channels copied into two computations, plus a permute (no
    replica groups); and the groups each channel means."""
    name = Names(rng)
    replicas, partitions = rng.choice([(2, 6), (4, 4), (2, 12), (4, 8), (2, 8), (2, 16)])
    devices = replicas * partitions
    hows = ["explicit", "iota", "mesh", "mesh reordered", "empty"]
    hows += rng.choices(["explicit", "iota", "mesh"], k=3)
    rng.shuffle(hows)
    channels = rng.sample(range(1, 300), len(hows) + 1)
    expected, entry, computations, outputs = {}, [], [], []
    for k, how in enumerate(hows):
        if how == "empty":
            text, groups = "{}", [list(range(devices))]
        else:
            text, groups = _spelling(rng, how, devices)
        size = len(groups[0])
        kind = rng.choice(("all-reduce", "all-gather", "reduce-scatter", "all-to-all"))
        shape_in, shape_out, extra = {
            "all-reduce": (f"f32[{size}]", f"f32[{size}]", ", to_apply=%plus"),
            "all-gather": ("f32[3]", f"f32[{3 * size}]", ", dimensions={0}"),
            "reduce-scatter": (f"f32[{3 * size}]", "f32[3]", ", dimensions={0}, to_apply=%plus"),
            "all-to-all": (f"f32[{size}]", f"f32[{size}]", ", dimensions={0}"),
        }[kind]
        if kind != "all-to-all":  # all-to-all takes no use_global_device_ids
            extra = ", use_global_device_ids=true" + extra
        expected[channels[k]] = groups
        op = f"{shape_out}{{0}} {kind}(%OPERAND), channel_id={channels[k]}, "
        op += f"replica_groups={text}{extra}"
        arg = name()
        entry.append(f"%{arg} = {shape_in}{{0}} parameter({k})")
        place = ("entry", "call", "copied")[k % 3]
        if place in ("call", "copied"):
            inner, holder = name(), name()
            computations.append(
                f"%{holder} ({inner}: {shape_in}) -> {shape_out} {{\n  %{inner} = {shape_in}{{0}} "
                f"parameter(0)\n  ROOT %{name()} = {op.replace('%OPERAND', '%' + inner)}\n}}\n"
            )
            out = name()
            entry.append(f"%{out} = {shape_out}{{0}} call(%{arg}), to_apply=%{holder}")
            outputs.append((out, shape_out))
        if place in ("entry", "copied"):
            out = name()
            entry.append(f"%{out} = {op.replace('%OPERAND', '%' + arg)}")
            outputs.append((out, shape_out))
    given, out = name(), name()
    entry += [
        f"%{given} = f32[3]{{0}} parameter({len(hows)})",
        f"%{out} = f32[3]{{0}} collective-permute(%{given}), channel_id={channels[-1]}, "
        "source_target_pairs={{0,1},{1,0}}",
    ]
    outputs.append((out, "f32[3]"))
    results = ", ".join(f"{s}{{0}}" for _, s in outputs)
    params = ", ".join(
        f"p{k}: {line.split(' = ')[1].split('{')[0]}"
        for k, line in enumerate(e for e in entry if "parameter(" in e)
    )
    text = (
        f"HloModule drawn_groups, replica_count={replicas}, num_partitions={partitions}\n\n"
        "%plus (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        "  %b = f32[] parameter(1)\n  ROOT %ab = f32[] add(%a, %b)\n}\n\n"
        + "\n".join(computations)
        + f"\nENTRY %{name()} ({params}) -> ({', '.join(s for _, s in outputs)}) {{\n"
        + "\n".join(f"  {line}" for line in entry)
        + f"\n  ROOT %{name()} = ({results}) tuple({', '.join('%' + o for o, _ in outputs)})\n}}\n"
    )
    return text, expected


# ---- collective bytes ---------------------------------------------------------------------------

_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_SAME_SHAPE = ("all-reduce", "all-to-all", "collective-permute")


def _array(dtype: str, dims: list[int], rng: random.Random) -> str:
    if not dims:
        return f"{dtype}[]"
    order = ",".join(str(d) for d in reversed(range(len(dims))))
    tile = {0: "", 1: ":T(256)", 2: ":T(8,128)", 3: ":T(8,128)"}[len(dims)]
    return f"{dtype}[{','.join(map(str, dims))}]{{{order}{rng.choice(('', tile))}}}"


# Replica groups over the module's four devices, every spelling XLA prints, as (text, size of a
# group): one group of all, pairs, singletons (each device its own group: it still receives its
# result), in braces, as an iota or as `{}` (every device in one group).
GROUPINGS = (
    ("{{0,1,2,3}}", 4),
    ("{{3,1,0,2}}", 4),
    ("{}", 4),
    ("[1,4]<=[4]", 4),
    ("{{0,1},{2,3}}", 2),
    ("{{0,2},{1,3}}", 2),
    ("[2,2]<=[4]", 2),
    ("[2,2]<=[2,2]T(1,0)", 2),
    ("{{0},{1},{2},{3}}", 1),
    ("{{2},{0},{3},{1}}", 1),
    ("[4,1]<=[4]", 1),
)


def _op(
    kind: str,
    dtype: str,
    dims: list[int],
    channel: int | None,
    rng: random.Random,
    grouping: tuple[str, int],
):
    """(operand shape, result shape, text of the collective on %OPERAND); ``grouping`` gives
    the replica groups and their size (an all-gather's result is that many times its operand,
    a reduce-scatter's that many times smaller)."""
    groups, size = grouping
    result = list(dims)
    if kind == "all-gather":
        result[0] *= size
    elif kind == "reduce-scatter":
        result[0] //= size
    operand, shape = _array(dtype, dims, rng), _array(dtype, result, rng)
    attrs = "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"
    if kind != "collective-permute":
        attrs = f"replica_groups={groups}"
        attrs += (
            ", dimensions={0}" if kind in ("all-gather", "reduce-scatter", "all-to-all") else ""
        )
        attrs += f", to_apply=%sum.{dtype}" if kind in ("all-reduce", "reduce-scatter") else ""
    named = f"channel_id={channel}, " if channel is not None else ""
    return operand, shape, f"{shape} {kind}(%OPERAND), {named}{attrs}"


def bytes_module(rng: random.Random) -> str:
    """Collectives of every known element type (one each, of drawn kinds and shapes), scalar
    ones, a tuple-shaped all-reduce, some without channel_id; in ENTRY, called computations
    and while bodies, and channels held by two computations (as a TPU async start's and done's
    bodies hold one); their replica groups in every spelling of GROUPINGS (groups of four,
    pairs and singletons; braces, iotas and `{}`) at least once."""
    name, dtypes = Names(rng), list(known_dtypes())
    cases = [
        (
            rng.choice(_KINDS),
            d,
            [16 * rng.randint(1, 5), *rng.sample(range(1, 99), rng.randint(0, 2))],
        )
        for d in dtypes
    ]  # noqa: E501
    cases += [(k, rng.choice(dtypes), []) for k in ("all-reduce", "collective-permute")]
    rng.shuffle(cases)
    places = ["call", "while", "async", "copied", "no channel"]
    places += rng.choices(["entry", "call", "no channel"], k=len(cases) - len(places))
    computations, entry, outputs = [], [], []
    channels = iter(rng.sample(range(1, 500), len(cases)))
    # every spelling of the replica groups once, in a drawn order, then drawn ones
    groupings = iter(
        [*rng.sample(GROUPINGS, len(GROUPINGS)), *rng.choices(GROUPINGS, k=len(cases))]
    )
    for k, ((kind, dtype, dims), place) in enumerate(zip(cases, places, strict=True)):
        if place == "while" and kind not in _SAME_SHAPE:
            kind = rng.choice(_SAME_SHAPE)
        channel = None if place == "no channel" else next(channels)
        grouping = next(groupings) if kind != "collective-permute" else ("", 1)
        operand, shape, op = _op(kind, dtype, dims, channel, rng, grouping)
        arg, out = name(), name()
        entry.append(f"%{arg} = {operand} parameter({k})")
        if place in ("entry", "no channel", "copied"):
            entry.append(f"%{out} = {op.replace('%OPERAND', '%' + arg)}")
            outputs.append((out, shape))
        bodies = {"call": 1, "copied": 1, "async": 2, "while": 1}.get(place, 0)
        for _ in range(bodies):
            inner, holder, result = name(), name(), name()
            computations.append(
                f"%{holder} ({inner}: {operand.split('{')[0]}) -> {shape.split('{')[0]} {{\n"
                f"  %{inner} = {operand} parameter(0)\n"
                f"  ROOT %{result} = {op.replace('%OPERAND', '%' + inner)}\n}}\n"
            )
            call = name()
            if place == "while":
                cond = name()
                computations.append(
                    f"%{cond} ({name()}: {operand.split('{')[0]}) -> pred[] {{\n"
                    f"  %{name()} = {operand} parameter(0)\n"
                    f"  ROOT %{name()} = pred[] constant(false)\n}}\n"
                )
                entry.append(f"%{call} = {shape} while(%{arg}), condition=%{cond}, body=%{holder}")
            else:  # a call; an async wrapper's start and done bodies both hold the collective
                entry.append(f"%{call} = {shape} call(%{arg}), to_apply=%{holder}")
            outputs.append((call, shape))
    pair = [rng.choice(dtypes)] * 2  # a tuple-shaped all-reduce of two arrays
    shapes = [_array(d, [8 * rng.randint(1, 5)], rng) for d in pair]
    given = [name() for _ in pair]
    entry += [
        f"%{g} = {s} parameter({len(cases) + j})"
        for j, (g, s) in enumerate(zip(given, shapes, strict=True))
    ]
    tupled = name()
    entry.append(
        f"%{tupled} = ({', '.join(shapes)}) all-reduce({', '.join('%' + g for g in given)}), "
        f"channel_id={500 + rng.randint(0, 99)}, replica_groups={next(groupings)[0]}, "
        f"to_apply=%sum.{pair[0]}"
    )
    outputs.append((tupled, f"({', '.join(shapes)})"))
    reducers = "".join(
        f"%sum.{d} (a: {d}[], b: {d}[]) -> {d}[] {{\n  %a = {d}[] parameter(0)\n"
        f"  %b = {d}[] parameter(1)\n"
        f"  ROOT %r = {d}[] {'or' if d == 'pred' else 'add'}(%a, %b)\n}}\n\n"
        for d in dtypes
    )
    params = ", ".join(
        f"p{k}: {_bare(line.split(' = ')[1].split(' ')[0])}"
        for k, line in enumerate(e for e in entry if "parameter(" in e)
    )
    return (
        "HloModule drawn_bytes, num_partitions=4\n\n"
        + reducers
        + "\n".join(computations)
        + f"\nENTRY %{name()} ({params}) -> ({', '.join(_bare(s) for _, s in outputs)}) {{\n"
        + "\n".join(f"  {line}" for line in entry)
        + f"\n  ROOT %{name()} = ({', '.join(s for _, s in outputs)}) "
        + f"tuple({', '.join('%' + o for o, _ in outputs)})\n}}\n"
    )


def _bare(shape: str) -> str:
    """A shape without its layouts (a tuple's too), as a signature writes it."""
    return re.sub(r"\{[^{}]*\}", "", shape)
