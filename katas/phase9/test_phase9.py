"""Phase 9 tests, tasks predict_collectives and place_weights: a prediction and a decision
checked on the compiled, partitioned program.

Each runs on several meshes and shapes, fixed and drawn fresh. Oracles
(kata_harness.oracles.sharding): XLA's own module for the collectives a compiled case holds, the
bytes its collectives move; NumPy for values. Tasks 1-5 are in test_phase9_shardings.py, the
shard_map collectives (tasks 6-9) in test_phase9_shard_map.py, predict_shard_shape in
test_phase9_shard_shape.py, the inherited pmap code in test_phase9_pmap.py.
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness.oracles import sharding as oracle
from kata_harness.predict import compiler_refused
from katas.phase9 import collective_programs
from katas.phase9.collective_programs import PREDICT_BANK, ShardedOp
from katas.phase9.programs import (
    PLACEMENT_CASES,
    first_placement,
    mesh_named,
    mesh_of,
    placement_arrays,
    run_placed,
)

DEVICES = 8

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


# ---- predict_collectives -----------------------------------------------------------------------
# One case at a time (the harness refuses the compiler around every call), compiled here: the
# fixed cases the task started with, and cases drawn fresh every run: one of each structural
# situation the contract allows (op family x where x is split x how the result is placed), so no
# trap depends on the seed, and one from the whole domain. The expected counts come from XLA's
# own module.


def _predicted_collectives(kata, case) -> dict[str, int]:
    predicted = kata.predict_collectives(case)
    assert isinstance(predicted, dict), f"expected a dict, got {predicted!r}"
    assert all(type(v) is int and v > 0 for v in predicted.values()), (
        f"expected positive int counts (leave out opcodes that do not occur), got {predicted!r}"
    )
    return dict(predicted)


@cache
def _compiled_collectives(case: ShardedOp) -> dict[str, int]:
    return oracle.xla_collective_counts(collective_programs.compiled(case))


@pytest.mark.task("predict_collectives")
def test_predict_collectives_on_the_bank(kata):
    for name, case in PREDICT_BANK.items():
        predicted = _predicted_collectives(kata, case)
        if predicted != _compiled_collectives(case):
            pytest.fail(
                f"{name} ({case.describe()}): you predicted {predicted}; the partitioned module "
                "holds other collectives (what does one device hold, and what must move?)"
            )


@pytest.mark.task("predict_collectives")
def test_predict_collectives_on_fresh_cases(kata, fresh):
    """One case drawn for every situation of collective_programs.SITUATIONS (elementwise with a
    moved split, reductions and reversals along x's split dimension, across it and with x split
    on both, matmul with its contracted dimension split, each with the result left free and
    replicated; a result moved; a transpose split on both dimensions, a dimension split by a
    tuple of axes, an axis of size 1 named), over meshes of one to three axes under any axis
    names, then one case from the whole domain."""
    cases = [collective_programs.draw_situation(fresh, s) for s in collective_programs.SITUATIONS]
    for case in [*cases, collective_programs.draw_case(fresh)]:
        predicted = _predicted_collectives(kata, case)
        compiled = _compiled_collectives(case)
        if predicted != compiled:
            pytest.fail(
                f"{case.describe()}: you predicted {predicted}, the partitioned module holds "
                f"{compiled}; {fresh.where()}"
            )


@pytest.mark.task("predict_collectives")
def test_predict_collectives_does_not_compile(kata):
    for name in ("softmax over axis 0, x row-split", "x + y, x row-split, y column-split"):
        with compiler_refused("predict_collectives"):
            kata.predict_collectives(PREDICT_BANK[name])


# ---- place_weights: a decision under a memory budget and a communication budget ----------------


@cache
def _first_placement_bytes(number: int) -> int:
    mesh = mesh_named(PLACEMENT_CASES[number][0])
    x, w1, w2 = placement_arrays(number)
    return oracle.collective_bytes(run_placed(mesh, x, *first_placement(w1, w2, mesh)))


def _placed(kata, number: int):
    mesh = mesh_named(PLACEMENT_CASES[number][0])
    x, w1, w2 = placement_arrays(number)
    placed = kata.place_weights(w1, w2, mesh)
    assert isinstance(placed, tuple) and len(placed) == 2, f"expected (w1, w2), got {placed!r:.80}"
    for name, got, given in zip(("w1", "w2"), placed, (w1, w2), strict=True):
        assert isinstance(got, jax.Array), f"{name}: expected a jax.Array, got {type(got).__name__}"
        assert (got.shape, got.dtype) == (given.shape, given.dtype), (
            f"{name}: {got.dtype}{list(got.shape)}, given {given.dtype}{list(given.shape)}"
        )
    return mesh, x, (w1, w2), placed


@pytest.mark.task("place_weights")
def test_place_weights_keeps_values_and_splits_them(kata):
    for number, case in enumerate(PLACEMENT_CASES):
        mesh, _, given, placed = _placed(kata, number)
        n = mesh.shape["x"]
        for name, want, got in zip(("w1", "w2"), given, placed, strict=True):
            with check:
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{case} {name}")
            largest = max(shard.data.size for shard in got.addressable_shards)
            with check:
                assert largest * n <= want.size, (
                    f"{case} {name}: a device holds {largest} of {want.size} elements, budget "
                    f"{want.size // n} (1/{n}: mesh axis x has {n} positions)"
                )


@pytest.mark.task("place_weights")
def test_place_weights_halves_collective_bytes(kata):
    for number, case in enumerate(PLACEMENT_CASES):
        mesh, x, _, placed = _placed(kata, number)
        moved = oracle.collective_bytes(run_placed(mesh, x, *placed))
        first = _first_placement_bytes(number)
        with check:
            assert moved * 2 <= first, (
                f"{case}: collectives move {moved} bytes, budget {first // 2} (half of "
                f"{first}, the first placement's)"
            )


DTYPES = ("float32", "bfloat16", "float16")

# Meshes over the 8 devices with an axis "x" of 2, 4 or 8 positions, first, minor or in the
# middle, beside axes of other names. The first one drawn has "x" after a shorter axis.
FRESH_PLACEMENT_MESHES = (
    (("y", 2), ("x", 4)),
    (("model", 1), ("x", 8)),
    (("y", 4), ("x", 2)),
    (("z", 2), ("x", 2), ("y", 2)),
    (("x", 8),),
    (("x", 2), ("y", 4)),
    (("x", 4), ("data", 2)),
)


def _fresh_placement(fresh, axes, dtype: str):
    """x, w1, w2 of `dtype` for a two-layer case on `axes`, shaped like the listed cases: features a
    multiple of x's n positions and at least 2n and 8, hidden a multiple of the 8 devices, out
    at most hidden / 4 (where the first placement moves at least twice what is needed; with
    fewer features or a wide out, XLA finds a cheap plan for it too)."""
    n = dict(axes)["x"]
    least = max(2, 8 // n)
    batch, features = fresh.randint(1, 8), n * fresh.randint(least, least + 2)
    hidden = 8 * fresh.randint(2, 6)
    out = fresh.randint(1, hidden // 4)
    rng = np.random.default_rng(fresh.randrange(2**32))
    return tuple(
        (rng.normal(size=shape) / scale).astype(jnp.dtype(dtype))
        for shape, scale in (((batch, features), 1), ((features, hidden), 4), ((hidden, out), 8))
    )


@pytest.mark.task("place_weights")
def test_place_weights_on_fresh_meshes_and_shapes(kata, fresh):
    """Meshes whose axis "x" comes after a shorter one (one drawn every time), 3-D meshes,
    other shapes, weights in float32, bfloat16 or float16 (one 16-bit case every time): values
    and dtypes kept, at most 1/n of each weight per device, at most half the first placement's
    collective bytes (both measured on the compiled program), the right result."""
    drawn = [(FRESH_PLACEMENT_MESHES[fresh.randrange(2)], fresh.choice(DTYPES[1:]))]
    drawn += [(axes, fresh.choice(DTYPES)) for axes in fresh.sample(FRESH_PLACEMENT_MESHES, 2)]
    for axes, dtype in drawn:
        mesh = mesh_of(axes)
        n = mesh.shape["x"]
        x, w1, w2 = _fresh_placement(fresh, axes, dtype)
        case = (
            f"mesh {dict(axes)}, {dtype} x {list(x.shape)}, w1 {list(w1.shape)}, "
            f"w2 {list(w2.shape)}; {fresh.where()}"
        )
        try:
            placed = kata.place_weights(w1, w2, mesh)
        except ValueError as refused:  # jax refuses a split that does not divide evenly
            pytest.fail(f"{case}: place_weights raised {type(refused).__name__}: {refused}")
        assert isinstance(placed, tuple) and len(placed) == 2, (
            f"{case}: expected (w1, w2), got {placed!r:.80}"
        )
        for name, got, want in zip(("w1", "w2"), placed, (w1, w2), strict=True):
            assert isinstance(got, jax.Array), f"{case}: {name} is a {type(got).__name__}"
            if (got.shape, got.dtype) != (want.shape, want.dtype) or not np.array_equal(
                np.asarray(got), want
            ):
                pytest.fail(f"{case}: {name} placed with other values, shape or dtype")
            largest = max(shard.data.size for shard in got.addressable_shards)
            if largest * n > want.size:
                pytest.fail(
                    f"{case}: a device holds {largest} of the {want.size} elements of {name}, "
                    f"budget 1/{n} (mesh axis x has {n} positions)"
                )
        lowered = run_placed(mesh, x, *placed)
        moved = oracle.collective_bytes(lowered)
        first = oracle.collective_bytes(run_placed(mesh, x, *first_placement(w1, w2, mesh)))
        if moved * 2 > first:
            pytest.fail(
                f"{case}: collectives move {moved} bytes, budget half of the first "
                f"placement's {first}"
            )
        result = lowered.compile()(jax.device_put(x, NamedSharding(mesh, P())), *placed)
        x32, w1_32, w2_32 = (np.asarray(a, np.float32) for a in (x, w1, w2))
        close = 1e-4 if dtype == "float32" else 2e-2  # 16-bit products and sums round
        want = np.maximum(x32 @ w1_32, 0) @ w2_32
        if not np.allclose(np.asarray(result, np.float32), want, rtol=close, atol=close):
            pytest.fail(f"{case}: two_layer on the placed weights gives other numbers")


@pytest.mark.task("place_weights")
def test_place_weights_computes_two_layer(kata):
    for number, case in enumerate(PLACEMENT_CASES):
        mesh, x, (w1, w2), placed = _placed(kata, number)
        program = run_placed(mesh, x, *placed).compile()
        rng = np.random.default_rng(number + 10)
        replicated = NamedSharding(mesh, P())
        for trial in range(3):
            inputs = rng.normal(size=x.shape).astype(np.float32) * (trial + 1)
            got = np.asarray(program(jax.device_put(inputs, replicated), *placed))
            want = np.maximum(inputs @ w1, 0) @ w2
            with check:
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{case}")
