"""Phase 11 tests: facts of TPU HLO, checked against XLA's own parser, libtpu's cost and memory
analyses, NumPy arithmetic on the programs' shapes, and the mesh the program was sharded over.

Tests that read text run on the modules recorded in `recorded/` (no libtpu needed); tests that
compile for a TPU call `require(...)` and skip, naming `uv sync --group tpu`, without it.
"""

from __future__ import annotations

import functools
import math
import random
import re
import warnings
import zlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness import metamorphic, oracles, versions
from kata_harness.predict import compiler_refused
from kata_harness.targets import recorded, require
from katas.phase11.programs import (
    ALLREDUCE_CASES,
    AXES,
    CROSS_REPLICA,
    FSDP_CASES,
    GROUP_SPELLINGS,
    HANDWRITTEN,
    LAYER_CASES,
    MLP_HIDDEN,
    MLP_WIDTH,
    PADDING_CASES,
    RECORDINGS,
    SGD_SHAPES,
    collectives_module,
    doubled,
    fsdp_weight_bytes,
    fused_collectives_module,
    group_module,
    lower_dense_layer,
    lower_mlp,
    lower_sgd,
    sgd_step,
    tiled_shapes,
    two_layer_mlp,
)
from xla_inspect import parse_hlo
from xla_inspect.query import fusions, opcode_counts

PHASE = "phase11"
V5E = "tpu-v5e:2x2"


def _text(name: str) -> str:
    return recorded(PHASE, name)


def _any_text(name: str) -> str:
    """A recorded module, a hand-written one (programs.HANDWRITTEN), or the matmul fusions that
    hold every collective kind."""
    if name in HANDWRITTEN:
        return HANDWRITTEN[name]
    if name == FUSED_COLLECTIVES:
        return fused_collectives_module()
    return _text(name)


FUSED_COLLECTIVES = "fused_collectives"


@functools.cache
def _xla_text(text: str):
    """XLA's own parse of a module text."""
    return oracles.xla_parsed(text)


def _xla(name: str):
    """XLA's own parse of a recorded or hand-written module."""
    return _xla_text(_any_text(name))


def _entry_of(text: str) -> list:
    """The ENTRY computation's instructions in XLA's order (the schedule: the modules are
    printed with is_scheduled=true)."""
    entry_name = text.split("ENTRY %")[1].split(" ")[0]
    return next(c for c in _xla_text(text).computations() if c.name == entry_name).instructions()


def _xla_entry(name: str) -> list:
    return _entry_of(_any_text(name))


def _opcode(instruction) -> str:
    return str(instruction.opcode).removeprefix("HloOpcode.")


TEXTS = [*sorted(RECORDINGS), *HANDWRITTEN]


@functools.cache
def _variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The module with every name relabelled (%n17) and its computations reordered, each
    confirmed by XLA's parser; seeded by the module's name."""
    found = tuple(metamorphic.variants(_any_text(name), seed=zlib.crc32(name.encode())))
    assert any(v.kind == "renamed" for v in found), f"{name}: no renamed variant XLA accepts"
    return found


def _forms(name: str):
    """(what, text, variant): the module as printed (variant None), then each variant. An
    answer must follow the module's facts, not its names or the order of its computations."""
    yield name, _any_text(name), None
    for variant in _variants(name):
        seed = zlib.crc32(name.encode())
        yield f"{name} ({variant.kind}, seed {seed})", variant.text, variant


def _renamed(variant, expected):
    """expected with every name renamed as in the variant (keys and list items alike)."""
    return expected if variant is None else variant.rename(expected)


def _renamed_keys(variant, expected: dict) -> dict:
    """expected with its keys (instruction names) renamed; values kept (an opcode such as
    "all-gather" or a word such as "copy" may also be some instruction's name)."""
    return expected if variant is None else {variant.rename(k): v for k, v in expected.items()}


def _bits(shape) -> int:
    """Bits of one element of an XLA shape, from its NumPy dtype (ml_dtypes knows int4 is 4
    bits though NumPy stores it in a byte; pred is stored in a byte)."""
    import ml_dtypes

    dtype = np.dtype(shape.numpy_dtype())
    if dtype.kind == "b":
        return 8
    if dtype.kind in "iu" or dtype.name.startswith(("int", "uint")):
        return int(ml_dtypes.iinfo(dtype).bits)
    if dtype.kind == "f" or dtype.name.startswith(("float", "bfloat")):
        return int(ml_dtypes.finfo(dtype).bits)
    return dtype.itemsize * 8


# ---- async_collectives --------------------------------------------------------------------------


def _text_opcode(instruction) -> str:
    """XLA's enum name (kGetTupleElement) as the text prints it (get-tuple-element)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", _opcode(instruction).removeprefix("k")).lower()


def _xla_called(text: str, instruction) -> list:
    """The computations an instruction calls, nested calls included, found with XLA's parser."""
    by_name = {c.name: c for c in _xla_text(text).computations()}
    pending = re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", instruction.to_string())
    found, seen = [], set()
    while pending:
        current = pending.pop()
        if current in seen or current not in by_name:
            continue
        seen.add(current)
        found.append(by_name[current])
        for inner in by_name[current].instructions():
            pending.extend(re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", inner.to_string()))
    return found


_PLAIN_COLLECTIVES = {
    "kAllGather",
    "kAllReduce",
    "kReduceScatter",
    "kAllToAll",
    "kCollectivePermute",
}
_GENERIC_STARTS = {"kAllGatherStart", "kAllReduceStart", "kCollectivePermuteStart"}
_GENERIC_DONES = {"kAllGatherDone", "kAllReduceDone", "kCollectivePermuteDone"}


def _wraps(text: str, instruction, marker: str) -> bool:
    """A fusion whose bodies hold a custom-call with custom_call_target=marker."""
    return _opcode(instruction) == "kFusion" and any(
        _opcode(i) == "kCustomCall" and f'custom_call_target="{marker}"' in i.to_string()
        for c in _xla_called(text, instruction)
        for i in c.instructions()
    )


@functools.cache
def _xla_async_starts(text: str) -> dict[str, str]:
    """{start: collective} read with XLA's parser: ENTRY fusions whose bodies hold the
    AsyncCollectiveStart custom-call (the collective: the one in those bodies) and the generic
    collective *-start ops; names play no part."""
    found = {}
    for i in _entry_of(text):
        if _opcode(i) in _GENERIC_STARTS:
            found[i.name] = _text_opcode(i).removesuffix("-start")
        elif _opcode(i) == "kAsyncStart" and _opcode(i.async_wrapped_root()) in _PLAIN_COLLECTIVES:
            # the generic wrapper (async-start calls a computation whose root is the collective)
            found[i.name] = _text_opcode(i.async_wrapped_root())
        elif _wraps(text, i, "AsyncCollectiveStart"):
            inner = {
                _text_opcode(x)
                for c in _xla_called(text, i)
                for x in c.instructions()
                if _opcode(x) in _PLAIN_COLLECTIVES
            }
            assert len(inner) == 1, f"{i.name} wraps {inner}"
            found[i.name] = inner.pop()
    return found


@pytest.mark.task("async_collectives")
def test_async_collectives_counts_every_spelling(kata):
    """Every start, in both spellings, with the collective it runs, whatever it is named and
    whatever it wraps (the hand-written TPU module wraps an all-reduce and a permute)."""
    for name in TEXTS:
        expected = _xla_async_starts(_any_text(name))
        for what, text, variant in _forms(name):
            got = kata.async_collectives(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            want = _renamed_keys(variant, expected)
            with check:
                assert got == want, (
                    f"{what}: XLA reads the starts {want} (AsyncCollectiveStart fusions, named as "
                    f"you like, and collective *-start ops; copy-start is a DMA), got {got}"
                )


@pytest.mark.task("async_collectives")
def test_async_collectives_facts_per_target(kata):
    """What libtpu made async: v5e overlaps the last gathers of an FSDP stack, v6e keeps them
    all synchronous, a single matmul has nothing to overlap; a TPU start may wrap any
    collective."""
    got = {name: kata.async_collectives(_text(name)) for name in RECORDINGS}
    with check:
        assert sorted(got["fsdp6_v5e"].values()) == ["all-gather", "all-gather"], got["fsdp6_v5e"]
    with check:
        assert list(got["fsdp4_v5e"].values()) == ["all-gather"], got["fsdp4_v5e"]
    for name in ("fsdp4_v6e", "fsdp2_v5e", "matmul_v5e", "mlp_grad_v5e"):
        with check:
            assert got[name] == {}, f"{name}: no async collective, got {got[name]}"
    with check:
        assert set(got["mlp_rows_v5e"].values()) == {"collective-permute"}, got["mlp_rows_v5e"]
    tpu = kata.async_collectives(HANDWRITTEN["handwritten_tpu"])
    with check:
        assert tpu == {"launch.a": "all-reduce", "launch.b": "collective-permute"}, (
            f"handwritten_tpu: %launch.a wraps an all-reduce, %launch.b a collective-permute, "
            f"got {tpu}"
        )


# ---- overlapped_work ----------------------------------------------------------------------------


def _is_done(text: str, instruction) -> bool:
    return _opcode(instruction) in (*_GENERIC_DONES, "kAsyncDone") or _wraps(
        text, instruction, "AsyncCollectiveDone"
    )


def _depends_on(instruction, start: str) -> bool:
    seen, pending = set(), list(instruction.operands())
    while pending:
        current = pending.pop()
        if current.name == start:
            return True
        if current.name not in seen:
            seen.add(current.name)
            pending.extend(current.operands())
    return False


def _expected_between(text: str, start: str) -> list[str]:
    """ENTRY instructions after `start` and before the first collective done that consumes it,
    in XLA's order, without the views (tuple plumbing, bitcasts, parameters, constants)."""
    entry = _entry_of(text)
    names = [i.name for i in entry]
    at = names.index(start)
    done = next(
        k
        for k in range(at + 1, len(entry))
        if _is_done(text, entry[k]) and _depends_on(entry[k], start)
    )
    views = {"kGetTupleElement", "kBitcast", "kTuple", "kParameter", "kConstant"}
    return [i.name for i in entry[at + 1 : done] if _opcode(i) not in views]


@functools.cache
def _xla_overlaps(text: str) -> dict[str, list[str]]:
    return {start: _expected_between(text, start) for start in _xla_async_starts(text)}


@pytest.mark.task("overlapped_work")
def test_overlapped_work_in_schedule_order(kata):
    """Every start's window, under any names and computation order; in the hand-written TPU
    module the second pair finishes first and a parameter and a constant sit in the windows."""
    for name in TEXTS:
        expected = _xla_overlaps(_any_text(name))
        for what, text, variant in _forms(name):
            got = kata.overlapped_work(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            want = _renamed(variant, expected)
            with check:
                assert got == want, (
                    f"{what}: between each start and the done that consumes it XLA scheduled "
                    f"{want}, got {got}"
                )


@pytest.mark.task("overlapped_work")
def test_overlapped_work_hides_a_matmul(kata):
    """The point of an async gather: the next layer's matmul runs while the weight arrives."""
    for name in ("fsdp4_v5e", "fsdp6_v5e", "fsdp3_f32_v5e"):
        got = kata.overlapped_work(_text(name))
        assert isinstance(got, dict) and got, f"{name}: expected async collectives, got {got!r}"
        by_name = {f.name: f for f in fusions(parse_hlo(_text(name)))}
        for start, between in got.items():
            with check:
                assert any(by_name[n].opcodes["convolution"] for n in between if n in by_name), (
                    f"{name}: no fusion holding a convolution between {start} and its done: "
                    f"{between}"
                )


# ---- device_groups ------------------------------------------------------------------------------


def _spelled_groups() -> dict[str, list[list[int]]]:
    """The groups each spelling of GROUP_SPELLINGS means, built with NumPy."""
    eight = np.arange(8)
    return {
        "explicit": [[0, 3], [1, 2]],
        "iota": np.arange(4).reshape(2, 2).tolist(),
        "iota transposed": np.arange(4).reshape(2, 2).T.tolist(),
        "iota 3-d transposed": eight.reshape(2, 2, 2).transpose(2, 0, 1).reshape(4, 2).tolist(),
        # mesh a=2, b=4: varying b keeps a fixed (rows); varying a keeps b fixed (columns)
        "mesh minor axis": eight.reshape(2, 4).tolist(),
        "mesh major axis": eight.reshape(2, 4).T.tolist(),
        # mesh a=2, b=2, c=2 over a and c: one group per b, a major and c minor inside it
        "mesh both axes": [eight.reshape(2, 2, 2)[:, b, :].reshape(-1).tolist() for b in (0, 1)],
    }


@pytest.mark.task("device_groups")
def test_device_groups_every_spelling(kata):
    for spelling in sorted(GROUP_SPELLINGS):
        got = kata.device_groups(group_module(GROUP_SPELLINGS[spelling]))
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        expected = _spelled_groups()[spelling]
        assert set(got) == {3}, f"one collective, channel_id=3; got channels {sorted(got)}"
        with check:
            assert sorted(got[3]) == sorted(expected), (
                f"{GROUP_SPELLINGS[spelling]} means {expected}, got {got[3]}"
            )


def _xla_device_count(text: str) -> int:
    """replica_count times num_partitions, as XLA's parser prints the module header back."""
    header = oracles.xla_parsed(text).to_string().splitlines()[0]
    counts = dict(re.findall(r"\b(replica_count|num_partitions)=(\d+)", header))
    return int(counts.get("replica_count", 1)) * int(counts.get("num_partitions", 1))


@pytest.mark.task("device_groups")
def test_device_groups_empty_means_every_device(kata):
    """`replica_groups={}` is one group of every device of the module, not no group."""
    for replicas, partitions in ((1, 4), (1, 8), (1, 2), (2, 4)):
        text = group_module("{}", partitions)
        if replicas > 1:
            text = text.replace("HloModule groups,", f"HloModule groups, replica_count={replicas},")
        devices = _xla_device_count(text)
        assert devices == replicas * partitions, f"XLA reads {devices} devices"
        got = kata.device_groups(text)
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        with check:
            assert got == {3: [list(range(devices))]}, (
                f"replica_groups={{}} with replica_count={replicas}, num_partitions={partitions}: "
                f"one group of all {devices} devices, got {got}"
            )


_GROUPED = ("kAllGather", "kAllReduce", "kReduceScatter", "kAllToAll", "kAllGatherStart")


def _grouped_channels(name: str) -> set[int]:
    """channel_ids of the collectives that take replica groups (a collective-permute takes
    source-target pairs instead), in every computation, read with XLA's parser."""
    found = set()
    for computation in _xla(name).computations():
        for i in computation.instructions():
            if _opcode(i) in _GROUPED:
                channel = re.search(r"channel_id=(\d+)", i.to_string())
                assert channel is not None, i.to_string()[:200]
                found.add(int(channel.group(1)))
    return found


@pytest.mark.task("device_groups")
def test_device_groups_one_entry_per_channel(kata):
    for name in ("fsdp4_v5e", "fsdp6_v5e", "matmul_v5e", "handwritten", "handwritten_tpu"):
        channels = _grouped_channels(name)
        answers = []
        for what, text, _ in _forms(name):
            got = kata.device_groups(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            answers.append((what, got))
            with check:
                assert set(got) == channels, (
                    f"{what}: channels with replica groups {sorted(channels)}, got {sorted(got)}"
                )
            for channel, groups in got.items():
                flat = sorted(d for g in groups for d in g)
                with check:
                    assert flat == list(range(4)), (
                        f"{what} channel {channel}: every one of the 4 devices in exactly one "
                        f"group, got {groups}"
                    )
        for what, got in answers[1:]:
            with check:
                assert got == answers[0][1], (
                    f"{what}: names and computation order change no group: {answers[0][1]}, "
                    f"got {got}"
                )


# (mesh shape, axis names, axes the collective runs over)
GROUP_CASES = [
    ((2, 2), ("a", "b"), "a"),
    ((2, 2), ("a", "b"), "b"),
    ((2, 2), ("a", "b"), ("b", "a")),
    ((4,), ("a",), "a"),
    ((2, 2), ("b", "a"), "a"),
    ((1, 4), ("a", "b"), "b"),
]


@functools.cache
def _gather_text(shape, names, over) -> str:
    target = require(V5E)
    mesh = target.mesh(shape, names)
    gather = jax.shard_map(
        lambda x: jax.lax.all_gather(x * 2.0, over, tiled=True),
        mesh=mesh,
        in_specs=P(names),
        out_specs=P(names),
        check_vma=False,
    )
    x = target.place(jax.ShapeDtypeStruct((8 * math.prod(shape), 128), jnp.float32), mesh, names)
    text = jax.jit(gather).lower(x).compile().as_text()
    assert text is not None
    return text


def _mesh_groups(shape, names, over) -> list[list[int]]:
    """Devices (positions in the mesh) that gather together, in the order they concatenate."""
    over = (over,) if isinstance(over, str) else over
    ids = np.arange(math.prod(shape)).reshape(shape)
    axes = [names.index(a) for a in over]
    kept = [d for d in range(len(shape)) if d not in axes]
    return ids.transpose(kept + axes).reshape(-1, math.prod(shape[d] for d in axes)).tolist()


@pytest.mark.task("device_groups")
def test_device_groups_match_the_mesh(kata):
    for shape, names, over in GROUP_CASES:
        text = _gather_text(shape, names, over)
        got = kata.device_groups(text)
        assert isinstance(got, dict) and len(got) == 1, f"one all-gather, got {got!r}"
        expected = _mesh_groups(shape, names, over)
        with check:
            assert sorted(next(iter(got.values()))) == sorted(expected), (
                f"all_gather over {over} on mesh {dict(zip(names, shape, strict=True))}: groups "
                f"{expected}, got {next(iter(got.values()))}"
            )


# ---- collective_bytes ---------------------------------------------------------------------------


@pytest.mark.task("collective_bytes")
def test_collective_bytes_fsdp_gathers_every_weight(kata):
    for name in sorted(FSDP_CASES):
        got = kata.collective_bytes(_text(name))
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        layers, _, width, dtype, _, _ = FSDP_CASES[name]
        # Default precision on TPU multiplies in bf16: f32 weights are rounded before the gather.
        per_weight = fsdp_weight_bytes(name) * 2 // jnp.dtype(dtype).itemsize
        with check:
            assert got == {"all-gather": layers * per_weight}, (
                f"{name}: every device gathers {layers} whole weights of {per_weight} bytes (bf16 "
                f"[{width},{width}]; a collective copied into several async bodies counts once), "
                f"got {got}"
            )


@pytest.mark.task("collective_bytes")
def test_collective_bytes_gradient_all_reduce(kata):
    got = kata.collective_bytes(_text("mlp_grad_v5e"))
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    params = [(512, 1024), (1024,), (1024, 256), (256,)]
    expected = sum(math.prod(s) for s in params) * jnp.dtype(jnp.bfloat16).itemsize
    with check:
        assert got == {"all-reduce": expected}, (
            f"data-parallel gradients: one all-reduce of every bf16 gradient ({expected} bytes, "
            f"a tuple-shaped result counts all its elements), got {got}"
        )


def _logical_bytes(shape) -> int:
    """Element count times bit width of an XLA shape (a tuple: the sum of its elements)."""
    if shape.is_tuple():
        return sum(_logical_bytes(e) for e in shape.tuple_shapes())
    return int(np.prod(shape.dimensions(), dtype=np.int64)) * _bits(shape) // 8


@functools.cache
def _xla_collective_bytes(text: str) -> dict[str, int]:
    """Result bytes per opcode with XLA's parser: one collective per channel_id, and each one
    without a channel_id on its own."""
    seen: dict[object, tuple[str, int]] = {}
    for computation in _xla_text(text).computations():
        for i in computation.instructions():
            if _opcode(i) not in _PLAIN_COLLECTIVES:
                continue
            channel = re.search(r"channel_id=(\d+)", i.to_string())
            key = int(channel.group(1)) if channel else (computation.name, i.name)
            seen[key] = (_text_opcode(i), _logical_bytes(i.shape))
    totals: dict[str, int] = {}
    for opcode, size in seen.values():
        totals[opcode] = totals.get(opcode, 0) + size
    return totals


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("collective_bytes")
def test_collective_bytes_without_channel_ids(kata):
    """Cross-replica collectives carry no channel_id: each is a collective of its own."""
    got = kata.collective_bytes(CROSS_REPLICA)
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    expected = _xla_collective_bytes(CROSS_REPLICA)
    with check:
        assert got == expected, (
            f"two all-reduces and an all-gather without channel_id, one all-reduce (channel 5) "
            f"copied twice: XLA's shapes give {expected}, got {got}"
        )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("collective_bytes")
def test_collective_bytes_match_xla(kata):
    """The recordings and the hand-written modules (an s8 all-reduce, a permute copied into
    three bodies, every kind inside matmul fusions), under any names and computation order."""
    for name in [*sorted(RECORDINGS), *HANDWRITTEN, FUSED_COLLECTIVES]:
        expected = _xla_collective_bytes(_any_text(name))
        for what, text, _ in _forms(name):
            got = kata.collective_bytes(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: XLA's shapes give {expected}, got {got}"


DRAWN_SEEDS = range(16)


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("collective_bytes")
def test_collective_bytes_of_drawn_modules(kata):
    """Modules drawn from a seed (programs.collectives_module): every kind, element types from
    4 to 64 bits, odd shapes under tiled layouts, collectives without channel_id, in a called
    computation, in a while body, and one channel copied into two computations."""
    for seed in DRAWN_SEEDS:
        text = collectives_module(seed)
        expected = _xla_collective_bytes(text)
        got = kata.collective_bytes(text)
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"programs.collectives_module({seed}): XLA's shapes give {expected} (element "
                f"count times the dtype's bit width, never the tiles), got {got}"
            )


# (collective, dtype, global shape): the mesh is (2, 2) over ('a', 'b'), the array split four
# ways by rows; expected bytes per device from the block's shape.
SHARD_CASES = {
    "psum over a, bf16": (lambda x: jax.lax.psum(x, "a"), jnp.bfloat16, (64, 384), "all-reduce", 1),
    "all_gather over b, s32": (
        lambda x: jax.lax.all_gather(x, "b", tiled=True),
        jnp.int32,
        (64, 130),
        "all-gather",
        2,
    ),
    "psum_scatter over b, f32": (
        lambda x: jax.lax.psum_scatter(x, "b", tiled=True),
        jnp.float32,
        (64, 256),
        "reduce-scatter",
        0.5,
    ),
    "all_to_all over b, f32": (
        lambda x: jax.lax.all_to_all(x, "b", 0, 1, tiled=True),
        jnp.float32,
        (64, 256),
        "all-to-all",
        1,
    ),
}


@functools.cache
def _shard_text(case: str) -> str:
    target = require(V5E)
    f, dtype, shape, _, _ = SHARD_CASES[case]
    mesh = target.mesh((2, 2), ("a", "b"))
    program = jax.shard_map(
        f, mesh=mesh, in_specs=P(("a", "b")), out_specs=P(("a", "b")), check_vma=False
    )
    x = target.place(jax.ShapeDtypeStruct(shape, dtype), mesh, ("a", "b"))
    text = jax.jit(program).lower(x).compile().as_text()
    assert text is not None
    return text


@pytest.mark.task("collective_bytes")
def test_collective_bytes_of_shard_map_collectives(kata):
    for case in sorted(SHARD_CASES):
        text = _shard_text(case)
        got = kata.collective_bytes(text)
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        _, dtype, shape, opcode, factor = SHARD_CASES[case]
        block = shape[0] // 4 * shape[1] * jnp.dtype(dtype).itemsize
        with check:
            assert got == {opcode: int(block * factor)}, (
                f"{case}: one {opcode} whose result is {int(block * factor)} bytes on each device "
                f"(the block is {block} bytes; padded tiles are not data), got {got}"
            )


# ---- padded_bytes -------------------------------------------------------------------------------


@functools.cache
def _padding_compile(target_name: str, shape: tuple[int, ...], dtype) -> tuple[str, int]:
    """The ENTRY parameter's shape text and the argument bytes memory_analysis reports."""
    target = require(target_name)
    x = target.place(jax.ShapeDtypeStruct(shape, dtype))
    compiled = jax.jit(doubled).lower(x).compile()
    text = compiled.as_text()
    assert text is not None
    parameter = next(i for i in parse_hlo(text).entry if i.opcode == "parameter")
    stats = compiled.memory_analysis()
    assert stats is not None
    return parameter.shape, int(stats.argument_size_in_bytes)


@pytest.mark.task("padded_bytes")
def test_padded_bytes_match_memory_analysis(kata):
    for shape, dtype in PADDING_CASES:
        text, allocated = _padding_compile(V5E, shape, dtype)
        got = kata.padded_bytes(text)
        logical = math.prod(shape) * jnp.dtype(dtype).itemsize
        with check:
            assert got == allocated, (
                f"{text}: libtpu allocates {allocated} bytes for it (logical {logical}), got {got}"
            )


@pytest.mark.task("padded_bytes")
def test_padded_bytes_other_generations(kata):
    for target_name in ("tpu-v6e:2x2", "tpu-v5p:2x2x1"):
        for shape, dtype in PADDING_CASES[::2]:
            text, allocated = _padding_compile(target_name, shape, dtype)
            got = kata.padded_bytes(text)
            with check:
                assert got == allocated, f"{target_name} {text}: {allocated} bytes, got {got}"


def _xla_padded(shape) -> int:
    """Padded bytes from XLA's parse of a shape: dims rounded up to the first tile along the
    layout's most minor dimensions."""
    dims = list(shape.dimensions())
    layout = shape.layout()
    tiles = layout.tiling()
    if tiles:
        first = tiles[0]
        order = list(layout.minor_to_major())
        for dim, size in zip(order, reversed(first), strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    return int(np.prod(dims, dtype=np.int64)) * _bits(shape) // 8


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("padded_bytes")
def test_padded_bytes_of_recorded_parameters(kata):
    """Every ENTRY parameter of every recording (odd_shapes_v5e holds the padded ones)."""
    for name in sorted(RECORDINGS):
        for instruction in _xla_entry(name):
            if _opcode(instruction) != "kParameter":
                continue
            text = parse_hlo(_text(name)).entry[instruction.name].shape
            got = kata.padded_bytes(text)
            with check:
                assert got == _xla_padded(instruction.shape), (
                    f"{name} {text}: {_xla_padded(instruction.shape)} bytes, got {got}"
                )


def _xla_shapes(shapes: list[str]) -> list:
    """XLA's parse of each shape text, as the parameters of a module."""
    params = ", ".join(f"p{k}: {text.split('{')[0]}" for k, text in enumerate(shapes))
    body = "\n".join(f"  %p{k} = {text} parameter({k})" for k, text in enumerate(shapes))
    module = f"HloModule shapes\n\nENTRY %e ({params}) -> s32[] {{\n{body}\n"
    entry = _entry_of(module + "  ROOT %zero = s32[] constant(0)\n}\n")
    return [i.shape for i in entry if _opcode(i) == "kParameter"]


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("padded_bytes")
def test_padded_bytes_of_drawn_shapes(kata):
    """Shapes drawn from a seed (programs.tiled_shapes): element types from 4 to 128 bits
    (an s4 takes half a byte), 1 to 4 odd dimensions in any layout order, tiles of one or two
    sizes with later tiles that split them."""
    for seed in DRAWN_SEEDS:
        shapes = tiled_shapes(seed)
        for text, shape in zip(shapes, _xla_shapes(shapes), strict=True):
            got = kata.padded_bytes(text)
            with check:
                assert got == _xla_padded(shape), (
                    f"programs.tiled_shapes({seed}): {text} takes {_xla_padded(shape)} bytes "
                    f"({_bits(shape)} bits an element), got {got}"
                )


# ---- prefetched_parameters ----------------------------------------------------------------------


@functools.cache
def _xla_prefetches(text: str) -> dict[int, str]:
    """ENTRY parameters copied into memory space 1, read with XLA's parser."""
    found = {}
    for i in _entry_of(text):
        if _opcode(i) not in ("kCopyStart", "kCopy") or _opcode(i.operands()[0]) != "kParameter":
            continue
        result = i.shape.tuple_shapes()[0] if i.shape.is_tuple() else i.shape
        if "S(1)" not in result.layout().to_string():
            continue
        stated = re.search(r"parameter\((\d+)\)", i.operands()[0].to_string())
        assert stated is not None
        number = int(stated.group(1))
        if _opcode(i) == "kCopy":
            found[number] = "copy"
        elif "cross_program_prefetch_index" in i.to_string():
            found[number] = "cross-program prefetch"
        else:
            found[number] = "prefetch"
    return found


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("prefetched_parameters")
def test_prefetched_parameters(kata):
    """The recordings and hand-written moves (a parameter's number is not its name's; a copy
    that only changes the layout stays in the default memory), under any names."""
    for name in [*sorted(RECORDINGS), *HANDWRITTEN]:
        expected = _xla_prefetches(_any_text(name))
        for what, text, _ in _forms(name):
            got = kata.prefetched_parameters(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: {expected}, got {got}"


@pytest.mark.task("prefetched_parameters")
def test_prefetched_parameters_facts(kata):
    """One cross-program prefetch per program at most; a copy-start of a constant is no
    parameter's prefetch; a sharded matmul of two gathered operands prefetches nothing."""
    for name in RECORDINGS:
        got = kata.prefetched_parameters(_text(name))
        assert isinstance(got, dict)
        with check:
            assert list(got.values()).count("cross-program prefetch") <= 1, f"{name}: {got}"
    rows = kata.prefetched_parameters(_text("mlp_rows_v5e"))
    matmul = kata.prefetched_parameters(_text("matmul_v5e"))
    fsdp6 = kata.prefetched_parameters(_text("fsdp6_v5e"))
    assert isinstance(fsdp6, dict)
    with check:
        assert rows == {0: "cross-program prefetch"}, f"mlp_rows_v5e: {rows}"
    with check:
        assert matmul == {}, f"matmul_v5e: {matmul}"
    with check:
        assert list(fsdp6.values()).count("copy") == 2, f"fsdp6_v5e: two blocking copies, {fsdp6}"
    moved = kata.prefetched_parameters(HANDWRITTEN["handwritten_prefetch"])
    with check:
        assert moved == {0: "copy", 2: "cross-program prefetch", 3: "prefetch"}, (
            "handwritten_prefetch: %param.2 is parameter(0) copied into S(1), parameter(2) the "
            "cross-program prefetch, parameter(3) a prefetch; parameter(1) is only copied to "
            f"another layout in the default memory; got {moved}"
        )


# ---- predict_layer_flops ------------------------------------------------------------------------


@functools.cache
def _layer_flops(m, k, n, mesh_shape, target_name: str = V5E) -> float:
    target = require(target_name)
    cost = lower_dense_layer(target, m, k, n, mesh_shape).compile().cost_analysis()
    assert isinstance(cost, dict) and "flops" in cost
    return float(cost["flops"])


@pytest.mark.task("predict_layer_flops")
def test_predict_layer_flops_matches_libtpu(kata):
    for m, k, n, mesh_shape in LAYER_CASES:
        with compiler_refused("predict_layer_flops"):
            got = kata.predict_layer_flops(m, k, n, *mesh_shape)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        expected = _layer_flops(m, k, n, mesh_shape)
        with check:
            assert got == expected, (
                f"relu(x@w+b) [{m},{k}]x[{k},{n}] on a {mesh_shape} mesh: cost_analysis says "
                f"{expected:.0f} flops per device, predicted {got}"
            )


# Meshes of the 8 CPU devices the tests run with, (data, model).
CPU_MESHES = [(1, 1), (2, 2), (1, 4), (4, 1), (2, 4), (4, 2), (1, 8), (8, 1)]


def _drawn_layers(seed: int, count: int = 8) -> list[tuple[int, int, int, tuple[int, int]]]:
    """(m, k, n, mesh shape) drawn from `seed`: odd sizes that the mesh axes divide."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        data, model = rng.choice(CPU_MESHES)
        cases.append(
            (
                data * rng.randint(1, 40),
                rng.randint(1, 300),
                model * rng.randint(1, 40),
                (data, model),
            )
        )
    return cases


LAYER_SEED = 8


@pytest.mark.task("predict_layer_flops")
def test_predict_layer_flops_matches_cpu_cost_analysis(kata):
    """The same sharded layer compiled by XLA:CPU: its cost analysis counts flops per device
    as libtpu's does (2 per multiply-add of the device's block, one per element for the bias
    add and for the relu), so it runs without libtpu, on cases drawn from a seed."""
    cases = _drawn_layers(LAYER_SEED)
    measured = [_layer_flops(m, k, n, mesh_shape, "cpu") for m, k, n, mesh_shape in cases]
    for (m, k, n, mesh_shape), expected in zip(cases, measured, strict=True):
        with compiler_refused("predict_layer_flops"):
            got = kata.predict_layer_flops(m, k, n, *mesh_shape)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"seed {LAYER_SEED}, relu(x@w+b) [{m},{k}]x[{k},{n}] on a {mesh_shape} mesh: "
                f"XLA:CPU's cost_analysis says {expected:.0f} flops per device, predicted {got}"
            )


# ---- gather_free_specs --------------------------------------------------------------------------


@functools.cache
def _mlp_figures(
    w1_spec: P, w2_spec: P, batch: int, target_name: str = V5E
) -> tuple[dict[str, int], int]:
    """(collective opcodes -> count over every computation, argument bytes per device)."""
    target = require(target_name)
    compiled = lower_mlp(target, tuple(w1_spec), tuple(w2_spec), batch).compile()
    text = compiled.as_text()
    assert text is not None
    counts = opcode_counts(parse_hlo(text))
    stats = compiled.memory_analysis()
    assert stats is not None
    moved = {o: c for o, c in counts.items() if o.startswith(("all-", "collective-", "reduce-sc"))}
    return moved, int(stats.argument_size_in_bytes)


@functools.cache
def _x_bytes(batch: int, target_name: str = V5E) -> int:
    target = require(target_name)
    mesh = target.mesh((2, 2), AXES)
    x = target.place(jax.ShapeDtypeStruct((batch, MLP_WIDTH), jnp.bfloat16), mesh, "data", None)
    stats = jax.jit(doubled).lower(x).compile().memory_analysis()
    assert stats is not None
    return int(stats.argument_size_in_bytes)


def _check_budget(kata, target_name: str) -> None:
    for batch in (512, 128):
        specs = kata.gather_free_specs()
        assert isinstance(specs, tuple) and len(specs) == 2, f"two PartitionSpecs, got {specs!r}"
        moved, arguments = _mlp_figures(specs[0], specs[1], batch, target_name)
        _, replicated = _mlp_figures(P(), P(), batch, target_name)
        x_bytes = _x_bytes(batch, target_name)
        budget = x_bytes + (replicated - x_bytes) // 2
        with check:
            assert not any(o.startswith(("all-gather", "collective-permute")) for o in moved), (
                f"{target_name}: weights moved between devices: {moved} (a gather or a permute "
                "of a weight costs bandwidth every step)"
            )
        with check:
            assert arguments <= budget, (
                f"{target_name}: {arguments} argument bytes per device; replicated weights take "
                f"{replicated}, the budget is half the weights plus x: {budget}"
            )


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_budget(kata):
    _check_budget(kata, V5E)


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_budget_on_cpu(kata):
    """The same program partitioned by XLA:CPU over 4 CPU devices (the same SPMD partitioner;
    no tiles pad the arguments): the same budget, without libtpu."""
    _check_budget(kata, "cpu")


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_same_values_on_cpu(kata):
    specs = kata.gather_free_specs()
    assert isinstance(specs, tuple) and len(specs) == 2, f"two PartitionSpecs, got {specs!r}"
    mesh = jax.make_mesh(
        (2, 2), AXES, axis_types=(AxisType.Auto,) * 2, devices=jax.devices("cpu")[:4]
    )
    rng = np.random.default_rng(11)
    x = rng.normal(size=(16, MLP_WIDTH)).astype(np.float32)
    w1 = rng.normal(size=(MLP_WIDTH, MLP_HIDDEN)).astype(np.float32) / 16
    w2 = rng.normal(size=(MLP_HIDDEN, MLP_WIDTH)).astype(np.float32) / 32
    placed = [
        jax.device_put(a, NamedSharding(mesh, s))
        for a, s in ((x, P("data", None)), (w1, specs[0]), (w2, specs[1]))
    ]
    out = np.asarray(jax.jit(two_layer_mlp)(*placed))
    expected = np.maximum(x @ w1, 0) @ w2
    with check:
        np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)


# ---- step_donation ------------------------------------------------------------------------------


@functools.cache
def _sgd_memory(donate: tuple[int, ...]) -> tuple[int, int]:
    """(alias bytes, peak bytes) of sgd_step compiled for v5e with these donate_argnums."""
    target = require(V5E)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = lower_sgd(target, donate).compile().memory_analysis()
    assert stats is not None
    return int(stats.alias_size_in_bytes), int(stats.peak_memory_in_bytes)


def _donated(donate: tuple[int, ...]) -> dict[str, list[bool]]:
    """What jax donates for these donate_argnums (negative numbers count from the end):
    {argument: donated flag of each of its arrays}, read from the lowering's args_info."""
    f32 = jnp.float32
    state = {k: jax.ShapeDtypeStruct(s, f32) for k, s in SGD_SHAPES.items()}
    batch = (
        jax.ShapeDtypeStruct((16, SGD_SHAPES["w"][0]), f32),
        jax.ShapeDtypeStruct((16, SGD_SHAPES["v"][1]), f32),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lowered = jax.jit(sgd_step, donate_argnums=donate).lower(state, state, batch)
    arguments, _ = lowered.args_info
    return {
        name: [leaf.donated for leaf in jax.tree.leaves(info)]
        for name, info in zip(("params", "momentum", "batch"), arguments, strict=True)
    }


@pytest.mark.task("step_donation")
def test_step_donation_keeps_the_batch(kata):
    """The answer means what jax makes of it: -1 is the batch as much as 2 is."""
    donate = kata.step_donation()
    assert isinstance(donate, tuple), f"a tuple of argument numbers, got {donate!r}"
    donated = _donated(donate)
    with check:
        assert not any(donated["batch"]), (
            f"donate_argnums={donate} donates the batch ({donated}); the caller evaluates on it "
            "after the step: keep it"
        )
    with check:
        assert all(donated["params"]) and all(donated["momentum"]), (
            f"donate_argnums={donate}: jax donates {donated}; the state is params and momentum"
        )


@pytest.mark.task("step_donation")
def test_step_donation_peak_budget(kata):
    donate = kata.step_donation()
    assert isinstance(donate, tuple), f"a tuple of argument numbers, got {donate!r}"
    with check:
        assert not any(_donated(donate)["batch"]), (
            "the caller evaluates on the batch after the step: keep it"
        )
    alias, peak = _sgd_memory(donate)
    _, original = _sgd_memory(())
    state = sum(math.prod(s) for s in SGD_SHAPES.values()) * 4 * 2  # params and momentum, f32
    with check:
        assert alias == state, f"aliased {alias} bytes; params and momentum are {state}"
    with check:
        assert peak <= original - state, (
            f"peak {peak} bytes; without donation {original}, budget {original - state}"
        )


@pytest.mark.task("step_donation")
def test_step_donation_same_values(kata):
    donate = kata.step_donation()
    assert isinstance(donate, tuple), f"a tuple of argument numbers, got {donate!r}"
    rng = np.random.default_rng(5)

    def fresh():
        params = {k: rng.normal(size=s).astype(np.float32) / 8 for k, s in SGD_SHAPES.items()}
        momentum = {k: np.zeros(s, np.float32) for k, s in SGD_SHAPES.items()}
        batch = (
            rng.normal(size=(16, SGD_SHAPES["w"][0])).astype(np.float32),
            rng.normal(size=(16, SGD_SHAPES["v"][1])).astype(np.float32),
        )
        return params, momentum, batch

    params, momentum, batch = fresh()
    expected = jax.jit(sgd_step)(params, momentum, batch)
    placed = jax.device_put((params, momentum, batch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jax.jit(sgd_step, donate_argnums=donate)(*placed)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        with check:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


# ---- matmul_fusions -----------------------------------------------------------------------------


_MOVES_DATA = {
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
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
}


@functools.cache
def _xla_matmul_fusions(text: str) -> dict[str, list[str]]:
    found = {}
    for i in _entry_of(text):
        if _opcode(i) != "kFusion":
            continue
        opcodes = {_text_opcode(x) for c in _xla_called(text, i) for x in c.instructions()}
        if "convolution" in opcodes:
            found[i.name] = sorted(opcodes - _MOVES_DATA - {"convolution"})
    return found


@pytest.mark.task("matmul_fusions")
def test_matmul_fusions_match_xla(kata):
    """The recordings, the hand-written TPU module (an overlap fusion holding a permute next to
    its matmul) and matmul fusions holding each kind of collective, under any names."""
    for name in [*sorted(RECORDINGS), *HANDWRITTEN, FUSED_COLLECTIVES]:
        expected = _xla_matmul_fusions(_any_text(name))
        for what, text, variant in _forms(name):
            got = kata.matmul_fusions(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            want = _renamed_keys(variant, expected)
            with check:
                assert got == want, (
                    f"{what}: {want} (a collective in a matmul fusion moves data, whichever "
                    f"kind it is), got {got}"
                )


@pytest.mark.task("matmul_fusions")
def test_matmul_fusions_hold_the_epilogue(kata):
    """Every layer's relu is fused into its matmul; the bias gradients of the MLP are reduced
    inside the matmul fusions of the backward pass."""
    for name in FSDP_CASES:
        got = kata.matmul_fusions(_text(name))
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        with check:
            assert got and all(ops == ["maximum"] for ops in got.values()), (
                f"{name}: each matmul fusion holds the relu (maximum) and no other arithmetic, "
                f"got {got}"
            )
    grad = kata.matmul_fusions(_text("mlp_grad_v5e"))
    assert isinstance(grad, dict), f"expected a dict, got {type(grad).__name__}"
    with check:
        assert sum("reduce" in ops for ops in grad.values()) == 2, (
            f"two matmul fusions also reduce the bias gradients, got {grad}"
        )


# ---- predict_allreduce_bytes --------------------------------------------------------------------


@functools.cache
def _allreduce_bytes(batch, width, hidden, dtype, mesh_shape, target_name: str = V5E) -> int:
    """Bytes of the all-reduce results in the compiled program, read with XLA's parser."""
    target = require(target_name)
    split = (None, "model"), ("model", None)
    text = lower_mlp(target, *split, batch, width, hidden, dtype, mesh_shape).compile().as_text()
    assert text is not None
    return sum(
        _logical_bytes(i.shape)
        for computation in _xla_text(text).computations()
        for i in computation.instructions()
        if _opcode(i) == "kAllReduce"
    )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("predict_allreduce_bytes")
def test_predict_allreduce_bytes_matches_the_compiled_program(kata):
    for batch, width, hidden, dtype, mesh_shape in ALLREDUCE_CASES:
        itemsize = jnp.dtype(dtype).itemsize
        with compiler_refused("predict_allreduce_bytes"):
            got = kata.predict_allreduce_bytes(batch, width, hidden, *mesh_shape, itemsize)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        expected = _allreduce_bytes(batch, width, hidden, dtype, mesh_shape)
        with check:
            assert got == expected, (
                f"x [{batch},{width}], hidden {hidden}, {jnp.dtype(dtype).name}, mesh "
                f"{mesh_shape}: the compiled program all-reduces {expected} bytes per device, "
                f"predicted {got}"
            )


ALLREDUCE_SEED = 10


def _drawn_mlps(seed: int, count: int = 8) -> list[tuple[int, int, int, object, tuple[int, int]]]:
    """(batch, width, hidden, dtype, mesh shape) drawn from `seed`. f32 and f16 only: XLA:CPU
    sums bf16 partials in f32 (XLA:TPU in bf16: the libtpu test above)."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        data, model = rng.choice(CPU_MESHES)
        dtype = rng.choice((jnp.float32, jnp.float16))
        batch, width = data * rng.randint(1, 24), rng.randint(1, 200)
        cases.append((batch, width, model * rng.randint(1, 40), dtype, (data, model)))
    return cases


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("predict_allreduce_bytes")
def test_predict_allreduce_bytes_matches_cpu(kata):
    """The same split MLP partitioned by XLA:CPU over up to 8 CPU devices, on cases drawn from
    a seed: the bytes of its all-reduce, read with XLA's parser, without libtpu."""
    cases = _drawn_mlps(ALLREDUCE_SEED)
    measured = [_allreduce_bytes(*case, "cpu") for case in cases]
    for (batch, width, hidden, drawn, mesh_shape), expected in zip(cases, measured, strict=True):
        dtype: Any = drawn
        itemsize = jnp.dtype(dtype).itemsize
        with compiler_refused("predict_allreduce_bytes"):
            got = kata.predict_allreduce_bytes(batch, width, hidden, *mesh_shape, itemsize)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        with check:
            assert got == expected, (
                f"seed {ALLREDUCE_SEED}, x [{batch},{width}], hidden {hidden}, "
                f"{jnp.dtype(dtype).name}, mesh {mesh_shape}: XLA:CPU's program all-reduces "
                f"{expected} bytes per device, predicted {got}"
            )
