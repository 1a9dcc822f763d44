"""Phase 10 tests, task 1 called eagerly: per_example_losses on device arrays, outside any jit,
is the same one batched computation as when traced (a Python loop over the rows is not, even
when the loop runs only on eager calls).

Fresh model sizes and batches (the ``fresh`` fixture). Oracles (kata_harness.oracles.training):
NumPy's per-example losses, and the matmuls JAX executes eagerly with jit disabled.
"""

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import training as oracle
from katas.phase10.programs import sized_data


def _drawn_case(fresh):
    """(sizes, params, x, y): fresh widths and a batch of at least two."""
    sizes = (fresh.randint(2, 9), fresh.randint(2, 12), fresh.randint(1, 5), fresh.randint(2, 9))
    return (sizes, *sized_data(*sizes, seed=fresh.getrandbits(32)))


@pytest.mark.task("per_example_losses")
def test_per_example_called_eagerly_is_one_batched_computation(kata, fresh):
    (features, hidden, out, batch), params, x, y = _drawn_case(fresh)
    where = f"features {features}, hidden {hidden}, out {out}, batch {batch} ({fresh.where()})"
    on_device = jax.device_put((params, x, y))
    with oracle.eager_matmuls() as matmuls:
        got = kata.per_example_losses(*on_device)
    assert hasattr(got, "shape"), f"called eagerly: got a {type(got).__name__}, not an array"
    got = np.asarray(got)
    with check:
        assert got.shape == (batch,), f"called eagerly, {where}: shape {got.shape}"
    with check:
        np.testing.assert_allclose(
            got,
            oracle.np_example_losses(params, x, y),
            rtol=1e-4,
            atol=1e-6,
            err_msg=f"called eagerly, {where}",
        )
    over_the_batch = [shapes for shapes in matmuls if shapes and shapes[0][:1] == (batch,)]
    with check:
        assert len(matmuls) == 2 and len(over_the_batch) == 2, (
            f"called eagerly (outside jit), {where}: {len(matmuls)} matmuls ran, "
            f"{len(over_the_batch)} of them over the whole batch; one batched computation runs "
            "two, whether or not it is traced (a loop over the rows runs two per example)"
        )
