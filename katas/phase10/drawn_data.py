"""MLP data phase 10's tests draw fresh for tasks 1 and 2, each built so that what the contract
distinguishes is in it by construction: predictions of large magnitude whose targets lie close
to them (the loss is small next to prediction**2), exactly representable so that float32 gets the
true loss; a batch of bfloat16 inputs against float32 params; pre-activations exactly 0 (relu's
derivative there is 0); a NaN in one example's input or target.

Every builder takes the test's ``fresh`` generator (a random.Random) and returns
(label, params, x, y) as NumPy arrays, y of shape (batch, out).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from katas.phase10.drawn import FEW_ROWS, mlp_sizes
from katas.phase10.programs import sized_data


def close_targets_at_large_magnitude(rng):
    """Integer x (up to 128 in magnitude) and w1, b1; nonnegative integer w2 and b2 from 2**14 to
    2**16 plus an odd number of eighths, so every prediction is at least 2**14 with 20 or more
    significant bits, and exact in float32 whatever the summation order; each target is its
    prediction plus 1/8 to 1 (either sign), also exact: the true losses are 1/64 to 1."""
    features, hidden, out, batch = mlp_sizes(rng, FEW_ROWS)
    g = np.random.default_rng(rng.getrandbits(32))
    params = {
        "w1": g.integers(-4, 5, size=(features, hidden)).astype(np.float32),
        "b1": g.integers(-64, 65, size=hidden).astype(np.float32),
        "w2": g.integers(0, 5, size=(hidden, out)).astype(np.float32),
        "b2": (g.integers(2**14, 2**16, size=out) + g.choice([1, 3, 5, 7], size=out) / 8).astype(
            np.float32
        ),
    }
    x = g.integers(-128, 129, size=(batch, features)).astype(np.float32)
    pre = x.astype(np.float64) @ params["w1"] + params["b1"]
    predictions = np.maximum(pre, 0.0) @ params["w2"] + params["b2"]
    targets = (
        predictions
        + g.integers(1, 9, size=predictions.shape) * g.choice([-1, 1], size=predictions.shape) / 8
    )
    y = targets.astype(np.float32)
    assert np.array_equal(y, targets), "a target not exact in float32"
    label = (
        f"predictions of 2**14 to 2**20, targets 1/8 to 1 away: features {features}, hidden "
        f"{hidden}, out {out}, x f32[{batch},{features}] of integers up to 128"
    )
    return label, params, x, y


def bfloat16_inputs(rng):
    """float32 params; x in bfloat16, and y in bfloat16 or float32 (drawn)."""
    features, hidden, out, batch = mlp_sizes(rng, FEW_ROWS)
    params, x, y = sized_data(features, hidden, out, batch, seed=rng.getrandbits(32))
    x = x.astype(ml_dtypes.bfloat16)
    if rng.random() < 0.5:
        y = y.astype(ml_dtypes.bfloat16)
    label = (
        f"x bf16[{batch},{features}], y {y.dtype}[{batch},{out}], float32 params (hidden {hidden})"
    )
    return label, params, x, y


def exact_zero_preactivations(rng):
    """Integer x, w1 and b1 from -2 to 2, so that some pre-activations x @ w1 + b1 are exactly 0
    (drawn until one is), where relu's derivative is 0; w2, b2 and y drawn as usual."""
    while True:
        features, hidden, out, batch = mlp_sizes(rng, FEW_ROWS)
        params, _, y = sized_data(features, hidden, out, batch, seed=rng.getrandbits(32))
        g = np.random.default_rng(rng.getrandbits(32))
        params = {
            **params,
            "w1": g.integers(-2, 3, size=(features, hidden)).astype(np.float32),
            "b1": g.integers(-2, 3, size=hidden).astype(np.float32),
        }
        x = g.integers(-2, 3, size=(batch, features)).astype(np.float32)
        zeros = int(np.sum(x @ params["w1"] + params["b1"] == 0))
        if zeros:
            break
    label = (
        f"{zeros} pre-activation(s) exactly 0: integer x f32[{batch},{features}], w1 and b1, "
        f"hidden {hidden}, out {out}"
    )
    return label, params, x, y


def nan_in_one_example(rng):
    """One NaN, in x or in y (drawn), at a drawn row: that example's loss is NaN, so the mean
    and the update are too."""
    features, hidden, out, batch = mlp_sizes(rng, FEW_ROWS)
    params, x, y = sized_data(features, hidden, out, batch, seed=rng.getrandbits(32))
    row, where = rng.randrange(batch), rng.choice(["x", "y"])
    target = x if where == "x" else y
    column = rng.randrange(target.shape[1])
    target[row, column] = np.nan
    label = (
        f"{where}[{row}, {column}] is NaN: features {features}, hidden {hidden}, out {out}, "
        f"batch {batch}"
    )
    return label, params, x, y
