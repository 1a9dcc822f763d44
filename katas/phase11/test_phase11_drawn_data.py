"""Phase 11 tests on modules and shapes drawn afresh for every run (the ``fresh`` fixture):
device groups, collective bytes, padded bytes and the parameters moved into S(1).

Every draw holds every situation the contracts allow (kata_harness/oracles/tpu_drawn_data.py
and tpu_drawn_memory.py list them: device numbers past 9, mesh axes listed out of the mesh's
order, `{}` over replicas and partitions, every element type XLA's parser knows, scalars,
three-size tiles, untiled scalars in S(1), cross-program prefetch indices 0 and 1, moves in
loop bodies). Expected groups are built with NumPy by the drawing code; bytes, padding and
moves come from XLA's own parse (kata_harness.oracles.tpu_hlo). A failure names the drawn case
and its seed, never the expected answer.
"""

from __future__ import annotations

import pytest
from pytest_check import check

from kata_harness import versions
from kata_harness.messages import mismatch
from kata_harness.oracles import tpu_hlo as oracle
from kata_harness.oracles import xla_accepts
from kata_harness.oracles.tpu_drawn_data import bytes_module, groups_module, padded_shapes
from kata_harness.oracles.tpu_drawn_memory import prefetch_module
from katas.phase11.texts import attempt

DRAWS = 3  # modules per test and run; each holds every situation


@pytest.mark.task("device_groups")
def test_device_groups_of_drawn_modules(kata, fresh):
    """Every spelling over 12 to 32 devices; groups in any order, each group's devices in the
    order the spelling lists them."""
    for draw in range(DRAWS):
        text, want = groups_module(fresh)
        assert xla_accepts(text), f"drawn module {draw} ({fresh.where()}): XLA rejects it"
        got = kata.device_groups(text)
        if isinstance(got, dict):
            got = {k: sorted(v) if isinstance(v, list) else v for k, v in got.items()}
        with check:
            assert got == {k: sorted(v) for k, v in want.items()}, (
                f"drawn module {draw} ({fresh.where()}): {mismatch(got, want)} (groups compared "
                "in any order, each group's devices in the spelling's order)"
            )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("collective_bytes")
def test_collective_bytes_of_fresh_modules(kata, fresh):
    """Every element type XLA's parser knows (fp8, c128, u64, 2-bit), scalar and tuple-shaped
    collectives, with and without channel_id, in loop bodies and copied bodies, over replica
    groups of every spelling and size (one device per group too: it still receives a result)."""
    for draw in range(DRAWS):
        text = bytes_module(fresh)
        got, crash = attempt(kata.collective_bytes, text)
        with check:
            assert crash is None, (
                f"drawn module {draw} ({fresh.where()}): raised {crash} on a module XLA parses"
            )
        if crash is None:
            want = oracle.collective_bytes(text)
            with check:
                assert got == want, f"drawn module {draw} ({fresh.where()}): {mismatch(got, want)}"


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("padded_bytes")
def test_padded_bytes_of_fresh_shapes(kata, fresh):
    """Every element type, first tiles over one, two or three dimensions, untiled shapes and
    shapes in S(1), empty dimensions, any layout order; an answer that raises on one shape is
    still judged on the others."""
    shapes = padded_shapes(fresh)
    wrong = []
    for text, shape in zip(shapes, oracle.shapes(shapes), strict=True):
        got, crash = attempt(kata.padded_bytes, text)
        if crash is not None:
            wrong.append((text, f"nothing: it raised {crash}"))
        elif got != oracle.padded_bytes(shape):
            wrong.append((text, repr(got)))
    with check:
        assert not wrong, (
            f"{len(wrong)} of {len(shapes)} drawn shapes ({fresh.where()}), e.g. {wrong[0][0]}: "
            f"you gave {wrong[0][1]}"
            if wrong
            else ""
        )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("prefetched_parameters")
def test_prefetched_parameters_of_fresh_modules(kata, fresh):
    """Every kind of move into and out of S(1), untiled scalars, cross-program prefetch
    indices 0 and 1, a bitcast parameter, a constant, a loop body's own prefetch."""
    for draw in range(DRAWS):
        text = prefetch_module(fresh)
        got = kata.prefetched_parameters(text)
        want = oracle.prefetches(text)
        with check:
            assert got == want, f"drawn module {draw} ({fresh.where()}): {mismatch(got, want)}"
