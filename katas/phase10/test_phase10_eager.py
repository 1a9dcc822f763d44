"""Phase 10 tests, task 1 called eagerly: per_example_losses on device arrays, outside any jit,
is the same one batched computation as when traced (a Python loop over the rows is not, even
when the loop runs only on eager calls, and neither is a loop over chunks of rows).

Fresh model sizes, with a batch of a few rows, then one of hundreds, then a highly divisible
batch of thousands (the ``fresh`` fixture; katas/phase10/drawn.py). Oracles
(kata_harness.oracles.training): NumPy's per-example losses, and the matmuls JAX executes
eagerly with jit disabled.
"""

import jax
import numpy as np
import pytest

from kata_harness.oracles import training as oracle
from katas.phase10 import drawn
from katas.phase10.programs import sized_data


def _not_one_eager_computation(kata, params, x, y, targets) -> list[str]:
    """What shows that per_example_losses, called eagerly on these arrays, is not one batched
    computation with the right values ([] when nothing does); targets are y as (batch, out)."""
    batch = x.shape[0]
    on_device = jax.device_put((params, x, y))
    with oracle.eager_matmuls() as matmuls:
        got = kata.per_example_losses(*on_device)
    if not hasattr(got, "shape"):
        return [f"got a {type(got).__name__}, not an array"]
    got = np.asarray(got)
    problems = []
    if got.shape != (batch,):
        problems.append(f"shape {got.shape}, expected one loss per example")
    else:
        want = oracle.np_example_losses(params, x, targets)
        if not np.allclose(got, want, rtol=1e-4, atol=1e-6):
            worst = int(np.argmax(np.abs(got - want) - 1e-4 * np.abs(want)))
            problems.append(f"example {worst}: loss {got[worst]}, NumPy's is {want[worst]}")
    over_the_batch = [shapes for shapes in matmuls if shapes and shapes[0][:1] == (batch,)]
    if len(matmuls) != 2 or len(over_the_batch) != 2:
        problems.append(
            f"{len(matmuls)} matmuls ran, {len(over_the_batch)} of them over the whole batch; "
            "one batched computation runs two, whether or not it is traced (a loop over the "
            "rows runs two per example, one over chunks of rows two per chunk)"
        )
    return problems


@pytest.mark.task("per_example_losses")
def test_per_example_called_eagerly_is_one_batched_computation(kata, fresh):
    """A batch of a few rows, then one of hundreds (an answer that splits the rows into chunks
    shows it only on a batch larger than a chunk), each with targets of shape (batch, out) and
    again with one output and targets of shape (batch,); then, with one output, a batch of
    thousands that every power of two up to 2,048, or every divisor of 2,000, or of 2,520
    divides, drawn (an answer that chunks only a batch its chunk size divides shows it only
    there; one such eager call per run, as each new batch size compiles every eager op anew;
    the traced test draws all three); the first failing case fails."""
    for batches in (drawn.FEW_ROWS, drawn.HUNDREDS_OF_ROWS):
        features, hidden, out, batch = drawn.mlp_sizes(fresh, batches)
        params, x, y = sized_data(features, hidden, out, batch, seed=fresh.getrandbits(32))
        cases = {
            f"features {features}, hidden {hidden}, out {out}, batch {batch}": (params, x, y, y)
        }
        flat_label, params, x, y, column = drawn.one_output_data(fresh, batches)
        cases[flat_label] = (params, x, y, column)
        for label, case in cases.items():
            problems = _not_one_eager_computation(kata, *case)
            assert not problems, (
                f"called eagerly (outside jit), {label} ({fresh.where()}): " + "; ".join(problems)
            )
    what, batch = fresh.choice(drawn.divisible_batches(fresh))
    label, params, x, y, column = drawn.one_output_data(fresh, (batch, batch))
    problems = _not_one_eager_computation(kata, params, x, y, column)
    assert not problems, (
        f"called eagerly (outside jit), {label}, {what} ({fresh.where()}): " + "; ".join(problems)
    )
