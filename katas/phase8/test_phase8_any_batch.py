"""Phase 8 tests, task 5: an export for any batch size, run for several batches and functions
against NumPy, its batch dimension symbolic and its module checking its shapes.
"""

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.fresh import Fresh
from kata_harness.oracles import stablehlo as facts
from katas.phase8.export_cases import avals, close, deserialize, exported_blob, run
from katas.phase8.programs import (
    BF16,
    FEATURES,
    mlp,
    mlp_rest_specs,
    mlp_values,
    spec,
)
from xla_inspect.stablehlo import stablehlo_op_census

# ---- task 5: export_any_batch -----------------------------------------------------------------


@cache
def _any_batch_cases():
    return {
        "mlp": (
            mlp,
            FEATURES,
            mlp_rest_specs(),
            facts.np_mlp,
            lambda b, rng: mlp_values(b, int(rng.integers(99))),
        ),
        "linear6": (
            lambda x, w: x @ w,
            6,
            (spec((6, 3)),),
            lambda x, w: x @ w,
            lambda b, rng: (
                rng.normal(size=(b, 6)).astype(np.float32),
                rng.normal(size=(6, 3)).astype(np.float32),
            ),
        ),
        # one feature: x is still (b, 1), a column, not a vector
        "alone": (
            lambda x: (jnp.sin(x), x.sum(1)),
            1,
            (),
            lambda x: (np.sin(x), x.sum(1)),
            lambda b, rng: (rng.normal(size=(b, 1)).astype(np.float32),),
        ),
        "bf16_rest": (
            lambda x, s: x * s.astype(jnp.float32),
            5,
            (spec((5,), jnp.bfloat16),),
            lambda x, s: x * s.astype(np.float32),
            lambda b, rng: (
                rng.normal(size=(b, 5)).astype(np.float32),
                rng.normal(size=5).astype(BF16),
            ),
        ),
    }


BATCH_PER_CASE = {"mlp": 5, "linear6": 1, "alone": 7, "bf16_rest": 2}


def _export_any(kata, name: str):
    fn, features, rest, _, _ = _any_batch_cases()[name]
    return _exported(kata, name, fn, features, rest)


def _exported(kata, name: str, fn, features: int, rest: tuple):
    try:
        blob = kata.export_any_batch(fn, features, *rest)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (a wrong x spec makes f fail to trace)
        pytest.fail(
            f"{name}: exporting f(x, *rest) with x of shape (b, {features}) failed: {error!r:.300}"
        )
    return deserialize(blob, name)


@pytest.mark.task("export_any_batch")
def test_any_batch_runs_for_several_batches(kata, fresh: Fresh):
    """Batches from one to tens of thousands (a fresh large one each run): any batch b."""
    exported = _export_any(kata, "mlp")
    for batch in (1, 8, 33, fresh.randint(1025, 40_000)):
        values = mlp_values(batch, batch)
        got = run(exported, values, f"batch {batch}")
        with check:
            close(got, facts.np_mlp(*values), f"batch {batch}")


@pytest.mark.task("export_any_batch")
def test_any_batch_on_several_functions(kata):
    exports = {name: _export_any(kata, name) for name in _any_batch_cases()}
    rng = np.random.default_rng(11)
    for name, exported in exports.items():
        _, _, _, oracle, make = _any_batch_cases()[name]
        batch = BATCH_PER_CASE[name]  # one each: the mlp test runs several batch sizes
        values = make(batch, rng)
        got, want = run(exported, values, f"{name} batch {batch}"), oracle(*values)
        leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
        assert len(leaves) == len(want_leaves), (
            f"{name}: {len(leaves)} outputs, expected {len(want_leaves)}"
        )
        for n, (leaf, expected) in enumerate(zip(leaves, want_leaves, strict=True)):
            with check:
                close(leaf, expected, f"{name}, batch {batch}, output {n}")


@pytest.mark.task("export_any_batch")
def test_any_batch_is_symbolic_only_in_the_batch(kata):
    exports = {name: _export_any(kata, name) for name in _any_batch_cases()}
    for name, exported in exports.items():
        _, features, rest, _, _ = _any_batch_cases()[name]
        x = exported.in_avals[0]
        assert len(x.shape) == 2, f"{name}: x is {x.shape}, expected (batch, {features})"
        batch, width = x.shape
        with check:
            assert jax.export.is_symbolic_dim(batch), f"{name}: batch {batch!r} is not symbolic"
        with check:
            assert width == features and not jax.export.is_symbolic_dim(width), (
                f"{name}: the feature dimension is {width!r}, expected {features}"
            )
        with check:
            assert np.dtype(x.dtype) == np.float32, f"{name}: x is {x.dtype}, expected float32"
        with check:
            assert avals(exported.in_avals[1:]) == avals(rest), (
                f"{name}: other inputs {avals(exported.in_avals[1:])}, expected {avals(rest)}"
            )
        first_out = exported.out_avals[0].shape
        with check:
            assert str(first_out[0]) == str(batch), (
                f"{name}: output {first_out} should carry the same batch symbol as x ({batch})"
            )


# functions whose rows depend on other rows of the batch: (JAX, NumPy oracle)
ROW_MIXING = {
    "column sums x.sum(0)": (lambda x: x.sum(0), lambda x: x.sum(0)),
    "centred x - x.mean(0)": (lambda x: x - x.mean(0), lambda x: x - x.mean(0)),
    "rows reversed x[::-1]": (lambda x: x[::-1], lambda x: x[::-1]),
    "running sum over the batch": (lambda x: jnp.cumsum(x, 0), lambda x: np.cumsum(x, 0)),
    "gram matrix x.T @ x": (lambda x: x.T @ x, lambda x: x.T @ x),
    "rows sorted per column": (lambda x: jnp.sort(x, axis=0), lambda x: np.sort(x, axis=0)),
}


@pytest.mark.task("export_any_batch")
def test_any_batch_function_sees_the_whole_batch(kata, fresh: Fresh):
    """f is exported as it is, for the whole batch at once: a function that mixes rows (a sum
    over the batch, rows reordered), alone or scaled by another argument, called at a batch
    other than the feature size."""
    name = fresh.choice(sorted(ROW_MIXING))
    mixing, np_mixing = ROW_MIXING[name]
    features, batch = fresh.randint(1, 6), fresh.randint(7, 40)
    x = np.random.default_rng(fresh.randrange(99)).normal(size=(batch, features))
    x = x.astype(np.float32)
    if fresh.random() < 0.5:
        fn, rest, values, oracle = mixing, (), (x,), np_mixing
    else:
        scale = np.linspace(0.5, 2.0, features, dtype=np.float32)
        fn, rest, values = (lambda x, s: mixing(x * s)), (spec((features,)),), (x, scale)
        name, oracle = f"{name} of x * s", (lambda x, s: np_mixing(x * s))
    what = f"f = {name}, features {features}, batch {batch} ({fresh.where()})"
    exported = _exported(kata, what, fn, features, rest)
    close(run(exported, values, what), oracle(*values), what)


@pytest.mark.task("export_any_batch")
def test_any_batch_for_another_feature_size(kata):
    exported = _export_any(kata, "linear6")
    with check:
        assert exported.in_avals[0].shape[1] == 6, (
            f"x spec {exported.in_avals[0].shape}: the feature size is the `features` argument"
        )
    rng = np.random.default_rng(5)
    x, weights = (
        rng.normal(size=(5, 6)).astype(np.float32),
        rng.normal(size=(6, 3)).astype(np.float32),
    )
    with check:
        close(run(exported, (x, weights), "batch 5"), x @ weights, "batch 5")


@pytest.mark.task("export_any_batch")
def test_symbolic_module_checks_its_shapes(kata):
    exported = _export_any(kata, "mlp")
    symbolic = stablehlo_op_census(exported.mlir_module())
    fixed = stablehlo_op_census(jax.export.deserialize(bytearray(exported_blob())).mlir_module())
    with check:
        assert symbolic["stablehlo.get_dimension_size"] >= 1, "the module reads b at run time"
    with check:
        assert fixed["stablehlo.get_dimension_size"] == 0, "a fixed-shape module never does"
    empty = (np.ones((0, FEATURES), np.float32), *mlp_values(1)[1:])
    with pytest.raises(ValueError, match="dimension variable"):
        exported.call(*empty)  # the module's shape assertion: b >= 1
    fn, features, rest, _, _ = _any_batch_cases()["mlp"]
    unconstrained = facts.unconstrained_batch_export(fn, features, rest)
    with check:
        assert facts.shape_assertions(exported) == facts.shape_assertions(unconstrained), (
            "the module checks more than b >= 1 at call time: the batch takes any size >= 1, "
            "with no constraint on the symbol"
        )


# other weights for mlp, x f32[b, 16] kept: (hidden size, outputs, dtype of both weights)
OTHER_WEIGHTS = [
    (hidden, out, dtype)
    for hidden in (5, 8)
    for out in (2, 4)
    for dtype in (jnp.float32, jnp.bfloat16, jnp.float16)
]


@pytest.mark.task("export_any_batch")
def test_one_function_exported_with_several_rest_specs(kata, fresh: Fresh):
    """The same function exported again with other specs for the other arguments (same
    feature size): each export is of its own specs."""
    first, second = fresh.sample(OTHER_WEIGHTS, 2)
    cases = [
        (spec((FEATURES, hidden), dtype), spec((hidden, out), dtype))
        for hidden, out, dtype in (first, second)
    ]
    exports = [deserialize(kata.export_any_batch(mlp, FEATURES, *rest), "mlp") for rest in cases]
    for n, (exported, rest) in enumerate(zip(exports, cases, strict=True)):
        assert avals(exported.in_avals[1:]) == avals(rest), (
            f"export {n + 1} of mlp with weights {avals(rest)}: its other inputs are "
            f"{avals(exported.in_avals[1:])} ({fresh.where()})"
        )
        assert exported.out_avals[0].shape[1] == rest[1].shape[1], (
            f"export {n + 1} of mlp with weights {avals(rest)}: output "
            f"{exported.out_avals[0].shape} ({fresh.where()})"
        )
