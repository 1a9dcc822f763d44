"""Phase 10 tests, tasks 1-2: per-example losses and a jitted train step, against NumPy.

Several model sizes (odd widths, a batch of one, a batch of thousands drawn fresh) and
optimizers (sgd with momentum, adamw).
Oracles (kata_harness.oracles.training): NumPy (losses, gradients by hand, the optimizers'
update rules), the jaxpr and the optimized HLO of the learner's program, and the buffers JAX
deleted when it donated them.
"""

import warnings
from functools import cache

import jax
import numpy as np
import optax
import pytest
from pytest_check import check

from kata_harness.oracles import training as oracle
from katas.phase10 import drawn, drawn_data
from katas.phase10.programs import (
    data,
    device_params,
    mse,
    sized_data,
)
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo

TRAINING_CASES = [  # (optimizer, its NumPy rule, model size)
    ("adamw", optax.adamw(0.02, weight_decay=0.5), oracle.np_adamw(0.02, 0.5), "odd"),
    ("sgd with momentum", optax.sgd(0.1, momentum=0.9), oracle.np_sgd_momentum(0.1, 0.9), "wide"),
]


@cache
def _initial_state(index: int):
    """optimizer.init of a training case, kept as NumPy (each test gets fresh device buffers)."""
    _, optimizer, _, size = TRAINING_CASES[index]
    return jax.tree.map(np.asarray, optimizer.init(data(size, seed=2)[0]))


# ---- task 1: per_example_losses ---------------------------------------------------------------


@pytest.mark.task("per_example_losses")
def test_per_example_values(kata, fresh):
    """The odd model, a batch of one, and a model with one output whose targets are drawn fresh
    as y of shape (batch,), which the contract allows when out is 1 (row i of y is then the
    scalar y[i]; NumPy is given the same targets as (batch, 1)); the first failing case fails
    its checks."""
    cases = {}  # label: (params, x, y as given, the same targets as (batch, out) for NumPy)
    for size in ("odd", "one"):
        weights, inputs, y = data(size, seed=1)
        cases[f"{size} model"] = (weights, inputs, y, y)
    flat_label, params, x, flat, column = drawn.one_output_data(fresh, drawn.FEW_ROWS)
    cases[f"{flat_label} ({fresh.where()})"] = (params, x, flat, column)
    for build in (drawn_data.close_targets_at_large_magnitude, drawn_data.bfloat16_inputs):
        label, params, x, y = build(fresh)
        cases[f"{label} ({fresh.where()})"] = (params, x, y, y)
    for label, (weights, inputs, y, targets) in cases.items():
        got = jax.jit(kata.per_example_losses)(weights, inputs, y)
        assert hasattr(got, "shape"), f"{label}: got a {type(got).__name__}, expected an array"
        # example_loss's own dtype, as JAX's type promotion gives it for one row
        dtype = jax.eval_shape(mse, weights, inputs[0], targets[0]).dtype
        with check:
            assert got.dtype == dtype, (
                f"{label}: losses of dtype {got.dtype}, example_loss gives {dtype}"
            )
        got = np.asarray(got, np.float64)
        with check:
            assert got.shape == (len(inputs),), (
                f"{label}: shape {got.shape}, expected one loss per example"
            )
        if got.shape != (len(inputs),):
            continue
        want = oracle.np_example_losses(
            weights, np.asarray(inputs, np.float64), np.asarray(targets, np.float64)
        )
        worst = int(np.argmax(np.abs(got - want) - 1e-4 * np.abs(want)))
        with check:
            assert np.allclose(got, want, rtol=1e-4, atol=1e-6), (
                f"{label}: example {worst}'s loss is {got[worst]}, NumPy's {want[worst]}"
            )


def _not_one_batched_program(kata, params, x, y) -> list[str]:
    """What shows that per_example_losses on this batch is not one batched program ([] when
    nothing does). The jaxpr is read first; a program whose jaxpr already repeats the matmuls or
    loops is not compiled (a loop over thousands of rows would take long to)."""
    census = primitive_census(jax.make_jaxpr(kata.per_example_losses)(params, x, y))
    problems = []
    if census["dot_general"] != 2:
        problems.append(
            f"{census['dot_general']} dot_generals in the jaxpr: vmap batches the two matmuls, "
            "a loop over the examples or over chunks of them repeats them"
        )
    loops = {p: n for p, n in census.items() if p in ("scan", "while", "fori_loop")}
    if loops:
        problems.append(f"{loops} in the jaxpr: lax.map and scan run the examples in turn")
    if problems:
        return problems
    compiled = jax.jit(kata.per_example_losses).lower(params, x, y).compile()
    module = parse_hlo(oracle.optimized_text(compiled))
    dots = sorted(i.shape_info.dims for c in module for i in c if i.opcode == "dot")
    batch, hidden, out = x.shape[0], params["w1"].shape[1], params["w2"].shape[1]
    if dots != sorted([(batch, hidden), (batch, out)]):
        problems.append(
            f"optimized HLO dots {dots}: expected two matmuls over the whole batch of {batch}"
        )
    if any(i.opcode == "while" for c in module for i in c):
        problems.append("the optimized HLO has a while loop: the examples run one at a time")
    return problems


@pytest.mark.task("per_example_losses")
def test_per_example_is_one_batched_program(kata, fresh):
    """A batch of five, then one of thousands of rows drawn fresh, another of thousands with
    one output whose targets are y of shape (batch,), and batches of thousands that every
    power of two up to 2,048, every divisor of 2,000 and every divisor of 2,520 divides (an
    answer that splits the rows into chunks shows it only on a batch larger than a chunk, and,
    if it chunks only a batch its chunk size divides, only on such a batch); the first failing
    case fails."""
    features, hidden, out, batch = drawn.mlp_sizes(fresh, drawn.THOUSANDS_OF_ROWS)
    cases = {
        "the odd model (x f32[5,3])": data("odd"),
        f"features {features}, hidden {hidden}, out {out}, batch {batch} ({fresh.where()})": (
            sized_data(features, hidden, out, batch, seed=fresh.getrandbits(32))
        ),
    }
    flat_label, params, x, y, _ = drawn.one_output_data(fresh, drawn.THOUSANDS_OF_ROWS)
    cases[f"{flat_label} ({fresh.where()})"] = (params, x, y)
    for what, batch in drawn.divisible_batches(fresh):
        features, hidden, out, _ = drawn.mlp_sizes(fresh, (batch, batch))
        label = f"features {features}, hidden {hidden}, out {out}, batch {batch}, {what}"
        cases[f"{label} ({fresh.where()})"] = sized_data(
            features, hidden, out, batch, seed=fresh.getrandbits(32)
        )
    for label, (params, x, y) in cases.items():
        problems = _not_one_batched_program(kata, params, x, y)
        assert not problems, f"{label}: " + "; ".join(problems)


# ---- task 2: make_train_step ------------------------------------------------------------------


def _step(step, name: str, number: int, args: tuple):
    """One call of the learner's step; an exception it raises on these valid inputs fails."""
    try:
        return step(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (optax and jax raise several types)
        first = str(error).splitlines()[0] if str(error) else ""
        raise AssertionError(
            f"{name}, step {number}: your step raised {type(error).__name__} ({first:.200}): "
            "every optax optimizer must work, including those whose update reads the params"
        ) from error


def _check_two_steps(kata, index: int, case=None) -> tuple[list[str], list]:
    """Two steps against NumPy; returns JAX's donation warnings and the first call's inputs.

    ``case`` is (label, params, x, y, the same targets as (batch, out) for NumPy); without it,
    the training case's own model and targets of shape (batch, out)."""
    name, optimizer, (np_init, np_update), size = TRAINING_CASES[index]
    if case is None:
        params, x, y = data(size, seed=2)
        targets, initial = y, _initial_state(index)
    else:
        label, params, x, y, targets = case
        name, initial = f"{name}, {label}", optimizer.init(params)
    step = kata.make_train_step(optimizer)
    assert hasattr(step, "lower"), "make_train_step must return a jitted function"
    current = device_params(params)
    state = jax.device_put(initial)
    first_inputs = jax.tree.leaves((current, state))
    want, want_state = {k: v.astype(np.float64) for k, v in params.items()}, np_init(params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in (1, 2):
            current, state, loss = _step(step, name, number, (current, state, x, y))
            with check:
                assert np.shape(loss) == (), f"{name}: loss shape {np.shape(loss)}, a scalar"
            with check:
                assert float(loss) == pytest.approx(
                    oracle.np_example_losses(want, x, targets).mean(), rel=1e-4, nan_ok=True
                ), (
                    f"{name}, step {number}: loss {float(loss)}: the mean per-example loss of "
                    "the params passed in, before the update"
                )
            updates, want_state = np_update(
                oracle.np_grads(want, x, targets), want_state, number, want
            )
            want = {k: want[k] + updates[k] for k in want}
            for key in want:
                with check:
                    np.testing.assert_allclose(
                        np.asarray(current[key]),
                        want[key],
                        rtol=2e-4,
                        atol=2e-5,
                        err_msg=f"{name}, {key} after step {number}: the optimizer's update "
                        "of the mean loss's gradient (and its state carried to the next step)",
                    )
    return [str(w.message).splitlines()[0] for w in caught], first_inputs


@pytest.mark.task("make_train_step")
def test_momentum_steps_match_numpy(kata):
    _check_two_steps(kata, 1)


@pytest.mark.task("make_train_step")
def test_one_output_steps_with_flat_targets(kata, fresh):
    """A model with one output whose targets are y of shape (batch,), as the contract allows
    (row i's target is the scalar y[i]), on a batch of a few rows drawn fresh, trained two steps
    by a drawn optimizer; NumPy gets the same targets as (batch, 1)."""
    index = fresh.randrange(len(TRAINING_CASES))
    label, params, x, y, column = drawn.one_output_data(fresh, drawn.FEW_ROWS)
    _check_two_steps(kata, index, (f"{label} ({fresh.where()})", params, x, y, column))


@pytest.mark.task("make_train_step")
def test_adamw_steps_match_numpy_and_donate(kata):
    """AdamW's state (an int32 count and two moments per parameter) is donated too; its
    weight decay needs the params passed to optimizer.update."""
    warned, old = _check_two_steps(kata, 0)
    deleted = sum(leaf.is_deleted() for leaf in old)
    with check:
        assert deleted == len(old), (
            f"{deleted} of {len(old)} params and adam state buffers were donated: donate "
            "params and opt_state"
        )
    unusable = [w for w in warned if "donated buffers were not usable" in w]
    with check:
        assert not unusable, (
            f"JAX warned: {unusable}: donate only what an output can reuse (params and "
            "optimizer state), not the batch"
        )


@pytest.mark.task("make_train_step")
def test_steps_at_exact_zero_and_through_a_nan(kata, fresh):
    """Pre-activations exactly 0, where relu's derivative is 0 (sgd with momentum, whose update
    shows any change of the gradient); then a NaN in one example's input or target, with a drawn
    optimizer: that example's loss is NaN, so the mean loss is NaN and the update carries it
    where NumPy's does (relu's derivative stays a select: 0 where the pre-activation is not > 0)."""
    label, params, x, y = drawn_data.exact_zero_preactivations(fresh)
    _check_two_steps(kata, 1, (f"{label} ({fresh.where()})", params, x, y, y))
    label, params, x, y = drawn_data.nan_in_one_example(fresh)
    index = fresh.randrange(len(TRAINING_CASES))
    _check_two_steps(kata, index, (f"{label} ({fresh.where()})", params, x, y, y))
