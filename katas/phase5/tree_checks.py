"""Checks the drawn mlp_grad, per_example_grads, jvp and vjp tests share: values against a
float64 oracle at the precision of the dtypes involved, and a gradient tree against params'
structure, dtypes and shapes.
"""

import jax
import numpy as np
from pytest_check import check

from katas.phase5.strata_grads import BF16, F16


def close(got, want, dtypes, what: str) -> None:
    """Values against a float64 oracle at the precision of the narrowest of ``dtypes``: bfloat16
    keeps 8 bits of mantissa and float16 11, so there the scale is the largest expected value
    (in float32 a hundredth of it, past 10). Infinities and NaNs where the oracle has them, of
    the same sign (assert_allclose compares those exactly)."""
    want = np.asarray(want, np.float64)
    got = np.asarray(got, np.float64).reshape(-1)
    assert got.size == want.size, f"{what}: {got.size} values, expected {want.size}"
    narrow = {np.dtype(d) for d in dtypes}
    tolerance = 3e-2 if BF16 in narrow else 1e-2 if F16 in narrow else 1e-4
    largest = float(np.abs(want[np.isfinite(want)]).max(initial=0.0))
    scale = max(1.0, largest) if tolerance > 1e-4 else max(1e-1, largest / 100)
    np.testing.assert_allclose(
        got.reshape(want.shape), want, rtol=tolerance, atol=tolerance * scale, err_msg=what
    )


def check_tree(got, params, expected, situation: str, batch: int | None = None) -> None:
    """``got`` has params' keys and structure (the same mapping type, an OrderedDict's key
    order), each leaf params' dtype and the expected shape and values."""
    assert isinstance(got, dict) and set(got) == set(params), (
        f"{situation}: keys {sorted(got) if isinstance(got, dict) else type(got).__name__}, "
        f"expected params' {sorted(params)}"
    )
    assert jax.tree.structure(got) == jax.tree.structure(params), (
        f"{situation}: the result is a {type(got).__name__} with keys {list(got)}, params a "
        f"{type(params).__name__} with keys {list(params)}: another pytree structure "
        f"({jax.tree.structure(got)} against {jax.tree.structure(params)})"
    )
    for name, value in expected.items():
        leaf, dtype = got[name], np.asarray(params[name]).dtype
        shape = np.shape(params[name]) if batch is None else (batch, *np.shape(params[name]))
        with check:
            assert (tuple(np.shape(leaf)), str(leaf.dtype)) == (shape, str(dtype)), (
                f"{situation}: {name} is {leaf.dtype}{list(np.shape(leaf))}, the leaf is "
                f"{dtype}{list(np.shape(params[name]))}"
            )
        with check:
            dtypes = [dtype, *(np.asarray(a).dtype for a in jax.tree.leaves(params))]
            close(leaf, value, dtypes, f"{situation}: d loss / d {name}")


def wide(tree):
    """Every leaf of ``tree`` in float64 (the oracle's inputs)."""
    return jax.tree.map(lambda a: np.asarray(a).astype(np.float64), tree)
