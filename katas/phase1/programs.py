"""The programs phase 1's tests run, and what `katas show` compiles for each task.

The tests run the learner's MLP on `data()` (three shapes: the usual one, size 1, odd); the
absolute values run on inputs drawn fresh (strata.py). `katas show` compiles the MLP's calls at
the usual shape and abs_where on `ABS_INPUTS[0]`.
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np

from kata_harness.programs import Recipe

# (batch, in, hidden, out): the usual one, size-1 everywhere it can be, odd and non-square
SHAPES = ((8, 16, 32, 4), (1, 1, 3, 1), (7, 5, 9, 3))


KEYS = ("w1", "b1", "w2", "b2")


def data(
    seed: int = 0,
    shape=SHAPES[0],
    dtype: type | np.dtype = np.float32,
    order=KEYS,
    zero_rows: bool = False,
):
    """Params (inserted in `order`), x and y; the hidden layer has large values of both signs.

    zero_rows: a third of b1's entries are 0 and one or two rows of x are all zeros (padding
    rows), so those rows' hidden pre-activations are b1 exactly: 0 at those entries, where the
    relu's gradient is 0 (jax.nn.relu's; jnp.maximum(h, 0) gives 0.5 there, h >= 0 gives 1).
    """
    batch, n_in, hidden, out = shape
    rng = np.random.default_rng(seed)
    made = {
        "w1": rng.normal(size=(n_in, hidden)) * 2.0,
        "b1": rng.normal(size=(hidden,)) * 3.0,
        "w2": rng.normal(size=(hidden, out)) / 2,
        "b2": rng.normal(size=(out,)) * 2.0,
    }
    x = rng.normal(size=(batch, n_in))
    y = rng.normal(size=(batch, out))
    if zero_rows:
        made["b1"][rng.permutation(hidden)[: max(1, hidden // 3)]] = 0.0
        x[rng.permutation(batch)[: min(2, max(1, batch - 1))]] = 0.0
    params = {name: made[name].astype(dtype) for name in order}
    return params, x.astype(dtype), y.astype(dtype)


def counting_power(counter, name: str = "power"):
    """x**n by a Python loop over n, appending n to counter at each trace; the function is
    called `name` (its __name__ and __qualname__)."""

    def power(x, n):
        counter.append(n)
        result = x
        for _ in range(n - 1):
            result = result * x
        return result

    power.__name__ = power.__qualname__ = name
    return power


def spelled_power(counter, spelling: tuple[str, str, str], name: str = "power"):
    """counting_power under a drawn signature (katas/phase1/strata_traces.py power_spellings)
    and a drawn name: a real function whose parameters have the drawn names and kinds, for jit
    and the learner to read. The names come from the fixed lists there, so the source built
    here is always valid."""
    x, n, parameters = spelling
    scope = {"_power": counting_power(counter)}
    exec(f"def {name}({parameters}):\n    return _power({x}, {n})\n", scope)
    return scope[name]


def if_positive(x):
    if x > 0:
        return x
    return -x


ABS_INPUTS = (
    np.array([-2.0, 0.0, 3.0, -0.5], np.float32),
    np.arange(-7, 8, dtype=np.int32).reshape(3, 5),
    np.array([-1.5, 2.25, -1e-3], ml_dtypes.bfloat16),
    np.array(-4.0, np.float16),
    np.zeros((0, 3), np.float32),
)


SHOWN = {
    "init_params": Recipe(
        lambda m: (lambda key: m.init_params(key, *SHAPES[0][1:]), (jax.random.key(0),)),
        "init_params(key, 16, 32, 4)",
    ),
    "mlp_forward": Recipe(
        lambda m: (m.mlp_forward, data()[:2]), "mlp_forward(params, x) with x f32[8,16], hidden 32"
    ),
    "mse_loss": Recipe(lambda m: (m.mse_loss, data()), "mse_loss(params, x f32[8,16], y f32[8,4])"),
    "loss_and_grad": Recipe(
        lambda m: (m.loss_and_grad, data()), "loss_and_grad(params, x f32[8,16], y f32[8,4])"
    ),
    "make_power_jit": Recipe(
        lambda m: (m.make_power_jit(counting_power([])), (np.ones(3, np.float32), 3)),
        "make_power_jit(power)(x f32[3], n=3)",
    ),
    "abs_where": Recipe(lambda m: (m.abs_where, ABS_INPUTS[:1]), "abs_where(x f32[4])"),
    "abs_cond": Recipe(lambda m: (m.abs_cond, (np.float32(-2.5),)), "abs_cond(x f32[])"),
}
