"""Phase 11 tests, reading collectives: the device groups each one runs over and the bytes each
kind moves.

Expected values come from XLA's own parser and NumPy (kata_harness.oracles.tpu_hlo), the mesh a
program was sharded over, and the programs' shapes; tests that compile for a TPU call
`require(...)` and skip, naming `uv sync --group tpu`, without it.
"""

from __future__ import annotations

import functools
import math
import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness import metamorphic, versions
from kata_harness.oracles import XlaRejected
from kata_harness.oracles import tpu_hlo as oracle
from kata_harness.targets import require
from katas.phase11 import texts
from katas.phase11.programs import (
    CROSS_REPLICA,
    FSDP_CASES,
    GROUP_SPELLINGS,
    HANDWRITTEN,
    RECORDINGS,
    collectives_module,
    fsdp_weight_bytes,
    group_module,
)
from katas.phase11.texts import FUSED_COLLECTIVES, V5E

# ---- device_groups ------------------------------------------------------------------------------


@pytest.mark.task("device_groups")
def test_device_groups_every_spelling(kata):
    """Each spelling in a module XLA's parser takes (a mesh naming no axis too: confirmed, as
    the one XLA never prints from a compile, and left out where the parser refuses it, as
    jaxlib 0.10.2's does): a crash on one is a wrong answer, named with its spelling."""
    for spelling in sorted(GROUP_SPELLINGS):
        text = group_module(GROUP_SPELLINGS[spelling])
        if spelling == "mesh no axis":
            try:
                oracle.xla_text(text)  # XLA's parser takes it at the locked jaxlib
            except XlaRejected:
                continue  # jaxlib 0.10.2's parser refuses it: no such module there
        got, crash = texts.attempt(kata.device_groups, text)
        assert crash is None, f"replica_groups={GROUP_SPELLINGS[spelling]}: raised {crash}"
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        expected = oracle.spelled_groups()[spelling]
        assert set(got) == {3}, f"one collective, channel_id=3; got channels {sorted(got)}"
        with check:
            assert sorted(got[3]) == sorted(expected), (
                f"{GROUP_SPELLINGS[spelling]} means {expected}, got {got[3]}"
            )


@pytest.mark.task("device_groups")
def test_device_groups_empty_means_every_device(kata):
    """`replica_groups={}` is one group of every device of the module, not no group."""
    for replicas, partitions in ((1, 4), (1, 8), (1, 2), (2, 4)):
        text = group_module("{}", partitions)
        if replicas > 1:
            text = text.replace("HloModule groups,", f"HloModule groups, replica_count={replicas},")
        devices = oracle.device_count(text)
        assert devices == replicas * partitions, f"XLA reads {devices} devices"
        got = kata.device_groups(text)
        assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
        with check:
            assert got == {3: [list(range(devices))]}, (
                f"replica_groups={{}} with replica_count={replicas}, num_partitions={partitions}: "
                f"one group of all {devices} devices, got {got}"
            )


@functools.cache
def _cross_replica_forms() -> tuple[tuple[str, str], ...]:
    """CROSS_REPLICA as written, renamed and reordered (each form confirmed by XLA's parser)."""
    found = [("cross_replica", CROSS_REPLICA)]
    found += [
        (f"cross_replica ({v.kind})", v.text) for v in metamorphic.variants(CROSS_REPLICA, 11)
    ]
    return tuple(found)


def _channels_with_groups(text: str) -> set[int]:
    """channel_ids of the instructions that take replica groups, read from XLA's parse; those
    printed without a channel_id are not in it."""
    found = set()
    for computation in oracle.xla_text(text).computations():
        for i in computation.instructions():
            line = i.to_string()
            channel = re.search(r"channel_id=(\d+)", line)
            if "replica_groups=" in line and channel is not None:
                found.add(int(channel.group(1)))
    return found


@pytest.mark.task("device_groups")
def test_device_groups_leave_out_collectives_without_a_channel(kata):
    """Cross-replica collectives (two all-reduces and an all-gather, `{}` and explicit groups)
    carry no channel_id to key them by: left out, not keyed by a made-up channel, and no crash;
    the one all-reduce of channel 5, copied into a called computation, is the only entry."""
    for what, text in _cross_replica_forms():
        channels = _channels_with_groups(text)
        devices = oracle.device_count(text)
        got, crash = texts.attempt(kata.device_groups, text)
        with check:
            assert crash is None, f"{what}: raised {crash} on a module XLA parses"
        if crash is None:
            with check:
                assert got == {c: [list(range(devices))] for c in channels}, (
                    f"{what}: only channel {sorted(channels)} has a channel_id, one group of all "
                    f"{devices} devices; the three collectives without one have no key: got {got}"
                )


@pytest.mark.task("device_groups")
def test_device_groups_one_entry_per_channel(kata):
    for name in ("fsdp4_v5e", "fsdp6_v5e", "matmul_v5e", "handwritten", "handwritten_tpu"):
        channels = oracle.grouped_channels(texts.any_text(name))
        answers = []
        for what, text, _ in texts.forms(name):
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


@pytest.mark.task("device_groups")
def test_device_groups_match_the_mesh(kata):
    for shape, names, over in GROUP_CASES:
        text = _gather_text(shape, names, over)
        got = kata.device_groups(text)
        assert isinstance(got, dict) and len(got) == 1, f"one all-gather, got {got!r}"
        expected = oracle.mesh_groups(shape, names, over)
        with check:
            assert sorted(next(iter(got.values()))) == sorted(expected), (
                f"all_gather over {over} on mesh {dict(zip(names, shape, strict=True))}: groups "
                f"{expected}, got {next(iter(got.values()))}"
            )


# ---- collective_bytes ---------------------------------------------------------------------------


@pytest.mark.task("collective_bytes")
def test_collective_bytes_fsdp_gathers_every_weight(kata):
    for name in sorted(FSDP_CASES):
        got = kata.collective_bytes(texts.text(name))
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
    got = kata.collective_bytes(texts.text("mlp_grad_v5e"))
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    params = [(512, 1024), (1024,), (1024, 256), (256,)]
    expected = sum(math.prod(s) for s in params) * jnp.dtype(jnp.bfloat16).itemsize
    with check:
        assert got == {"all-reduce": expected}, (
            f"data-parallel gradients: one all-reduce of every bf16 gradient ({expected} bytes, "
            f"a tuple-shaped result counts all its elements), got {got}"
        )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("collective_bytes")
def test_collective_bytes_without_channel_ids(kata):
    """Cross-replica collectives carry no channel_id: each is a collective of its own."""
    got = kata.collective_bytes(CROSS_REPLICA)
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    expected = oracle.collective_bytes(CROSS_REPLICA)
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
        expected = oracle.collective_bytes(texts.any_text(name))
        for what, text, _ in texts.forms(name):
            got = kata.collective_bytes(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: XLA's shapes give {expected}, got {got}"


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("collective_bytes")
def test_collective_bytes_of_drawn_modules(kata, fresh):
    """A fresh module, stratified (programs.collectives_module): every kind three times, every
    element type from 4 to 128 bits once, odd shapes under tiled and plain layouts, each kind
    once without channel_id (one kind twice, alike: two collectives), collectives in a called
    computation and in a while body, one channel copied into two computations, and a scalar
    (a loss's all-reduce: one element)."""
    text = collectives_module(fresh)
    expected = oracle.collective_bytes(text)
    got = kata.collective_bytes(text)
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    names = expected.keys() | got.keys()
    wrong = sorted((k for k in names if got.get(k) != expected.get(k)), key=str)
    assert not wrong, (
        f"programs.collectives_module: {wrong[0]!r}: XLA's shapes give {expected.get(wrong[0])} "
        f"bytes (element count times the dtype's bit width, never the tiles), got "
        f"{got.get(wrong[0])}; {len(wrong)} of {len(expected)} differ ({fresh.where()})"
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
