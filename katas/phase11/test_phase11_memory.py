"""Phase 11 tests, reading memory: the bytes a tiled parameter takes, the parameters moved into
fast memory, and the donation that keeps a step's peak within budget.

Expected values come from XLA's own parser (kata_harness.oracles.tpu_hlo), libtpu's memory
analysis and jax's own reading of donate_argnums; tests that compile for a TPU call
`require(...)` and skip, naming `uv sync --group tpu`, without it.
"""

from __future__ import annotations

import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import versions
from kata_harness.oracles import tpu_hlo as oracle
from kata_harness.targets import require
from katas.phase11 import texts
from katas.phase11.programs import (
    HANDWRITTEN,
    PADDING_CASES,
    RECORDINGS,
    SGD_SHAPES,
    UNIT_PADDING_CASES,
    doubled,
    lower_sgd,
    sgd_step,
)
from katas.phase11.strata import tiled_strata
from katas.phase11.texts import V5E
from xla_inspect import parse_hlo

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
    for shape, dtype in PADDING_CASES + UNIT_PADDING_CASES:
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


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("padded_bytes")
def test_padded_bytes_of_recorded_parameters(kata):
    """Every ENTRY parameter of every recording (odd_shapes_v5e holds the padded ones)."""
    for name in sorted(RECORDINGS):
        for instruction in oracle.entry_of(texts.any_text(name)):
            if oracle.opcode(instruction) != "kParameter":
                continue
            text = parse_hlo(texts.text(name)).entry[instruction.name].shape
            got = kata.padded_bytes(text)
            with check:
                assert got == oracle.padded_bytes(instruction.shape), (
                    f"{name} {text}: {oracle.padded_bytes(instruction.shape)} bytes, got {got}"
                )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("padded_bytes")
def test_padded_bytes_of_drawn_shapes(kata, fresh):
    """Fresh shapes, one per situation (strata.tiled_strata): every element type from 4 to 128
    bits (an s4 takes half a byte) under a tile, every first tile (1-D ones at rank 1 and
    above, three-size ones at rank 3 and 4), later tiles that split them, untiled shapes of
    every rank, dimensions of 1 and empty ones under a tile and outside it, dimensions in any
    layout order, a tiled dimension past 2**53; bytes from XLA's parse of each."""
    cases = tiled_strata(fresh)
    parsed = oracle.shapes(list(cases.values()))
    for (situation, text), shape in zip(cases.items(), parsed, strict=True):
        got = kata.padded_bytes(text)
        expected = oracle.padded_bytes(shape)
        assert got == expected, (
            f"{situation}: {text} takes {expected} bytes ({oracle.bits(shape)} bits an "
            f"element), got {got} ({fresh.where()})"
        )


# ---- prefetched_parameters ----------------------------------------------------------------------


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("prefetched_parameters")
def test_prefetched_parameters(kata):
    """The recordings and hand-written moves (a parameter's number is not its name's; a copy
    that only changes the layout stays in the default memory), under any names."""
    for name in [*sorted(RECORDINGS), *HANDWRITTEN]:
        expected = oracle.prefetches(texts.any_text(name))
        for what, text, _ in texts.forms(name):
            got = kata.prefetched_parameters(text)
            assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
            with check:
                assert got == expected, f"{what}: {expected}, got {got}"


@pytest.mark.task("prefetched_parameters")
def test_prefetched_parameters_facts(kata):
    """One cross-program prefetch per program at most; a copy-start of a constant is no
    parameter's prefetch; a sharded matmul of two gathered operands prefetches nothing."""
    for name in RECORDINGS:
        got = kata.prefetched_parameters(texts.text(name))
        assert isinstance(got, dict)
        with check:
            assert list(got.values()).count("cross-program prefetch") <= 1, f"{name}: {got}"
    rows = kata.prefetched_parameters(texts.text("mlp_rows_v5e"))
    matmul = kata.prefetched_parameters(texts.text("matmul_v5e"))
    fsdp6 = kata.prefetched_parameters(texts.text("fsdp6_v5e"))
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
    return oracle.donated(lowered, ("params", "momentum", "batch"))


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
def test_step_donation_same_values(kata, fresh):
    """Fresh parameters, momentum and batch (1 to 32 rows): the donated step computes what the
    undonated one does."""
    donate = kata.step_donation()
    assert isinstance(donate, tuple), f"a tuple of argument numbers, got {donate!r}"
    rng = np.random.default_rng(fresh.randint(0, 2**31))
    params, momentum = (
        {k: rng.normal(size=s).astype(np.float32) / 8 for k, s in SGD_SHAPES.items()}
        for _ in range(2)
    )
    rows = fresh.randint(1, 32)
    batch = (
        rng.normal(size=(rows, SGD_SHAPES["w"][0])).astype(np.float32),
        rng.normal(size=(rows, SGD_SHAPES["v"][1])).astype(np.float32),
    )
    expected = jax.jit(sgd_step)(params, momentum, batch)
    placed = jax.device_put((params, momentum, batch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jax.jit(sgd_step, donate_argnums=donate)(*placed)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
        with check:
            np.testing.assert_allclose(
                np.asarray(a), np.asarray(b), rtol=1e-6, err_msg=fresh.where()
            )
