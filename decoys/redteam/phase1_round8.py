"""Phase 1, red-team round 8: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

_RT8_NARROW = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _rt8_aval(x):
    if type(x) is bool:
        return ((), "bool", False)
    if type(x) is int:
        return ((), "int32", True)
    if type(x) is float:
        return ((), "float32", True)
    a = np.asarray(x)
    return (tuple(a.shape), str(_RT8_NARROW.get(a.dtype, a.dtype)), False)


def _rt8_forward(params, x):
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    h = jax.nn.relu(h)
    return jnp.matmul(h, params["w2"]) + params["b2"]


@wrong(
    "count_traces",
    why="'An argument's entry in jit's cache is its abstract value' (weak int32[] and weak "
    "float32[] differ by dtype): keys every Python number as one 'weak scalar' kind, thinking a "
    "weak type has no dtype at all; wrong on [(1, 0), (1.0, 0)]: 2 traces, predicts 1",
)
def _rt8_count_traces_weak_scalars_merged(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        k = _rt8_aval(x)
        if k[2]:
            k = ((), "weak", True)
        seen.add((k, n))
    return len(seen)


@wrong(
    "count_traces",
    why="'its abstract value, not its data': keys a NumPy array also by its memory layout "
    "(C-contiguous or not, as 'the buffer jit is handed'); wrong on "
    "[(np.ones((3, 4), np.float32).T, 0), (np.ones((4, 3), np.float32), 0)]: 1 trace, predicts 2",
)
def _rt8_count_traces_layout_in_key(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        layout = bool(x.flags["C_CONTIGUOUS"]) if isinstance(x, np.ndarray) else True
        seen.add((_rt8_aval(x), layout, n))
    return len(seen)


@wrong(
    "predict_traces",
    why="jit traces once per abstract signature: believes the first call traces twice (once to "
    "get shapes, once to lower), so every count is one higher; wrong on same_shape_twice "
    "(1, predicts 2) and every other scenario",
)
def _rt8_predict_traces_first_call_double() -> dict[str, int]:
    return {
        "same_shape_twice": 2,
        "new_shape": 3,
        "new_dtype": 3,
        "static_values_1_1_2": 3,
        "python_floats_1_and_2": 2,
    }


@wrong(
    "mlp_forward",
    why="'the relu's gradient is ... 0 at exactly 0 too': relu spelled jnp.clip(h, 0), which "
    "is max(h, 0) inside, gradient 0.5 at a tie; wrong on jax.grad at zero bias and an all-zero "
    "row of x (data(zero_rows=True)): d/db1 gets 0.5*w2-row terms where it must be 0",
)
def _rt8_mlp_forward_clip_relu(params: dict, x) -> jax.Array:
    h = jnp.matmul(x, params["w1"]) + params["b1"]
    h = jnp.clip(h, 0)
    return jnp.matmul(h, params["w2"]) + params["b2"]


@wrong(
    "mse_loss",
    why="'Mean squared error between mlp_forward(params, x) and y' over every element: squeezes "
    "y 'to a vector of targets', so for out_dim 1 and batch > 1 the (batch, 1) prediction minus "
    "the (batch,) target broadcasts to (batch, batch); wrong on shape (4, 5, 9, 1) (batch 1 and "
    "out > 1 hide it: both shapes in programs.SHAPES with out 1 have batch 1)",
)
def _rt8_mse_loss_squeezed_target(params: dict, x, y) -> jax.Array:
    pred = _rt8_forward(params, x)
    y = jnp.squeeze(jnp.asarray(y))
    return jnp.mean(jnp.square(pred - y))


@wrong(
    "loss_and_grad",
    why="'(loss, grads): mse_loss and its gradient': squeezes y as above before "
    "value_and_grad, so for out_dim 1 and batch > 1 both loss and grads are of the (batch, batch) "
    "broadcast; wrong on shape (4, 5, 9, 1)",
)
def _rt8_loss_and_grad_squeezed_target(params: dict, x, y) -> tuple[jax.Array, dict]:
    y = jnp.squeeze(jnp.asarray(y))

    def loss(p):
        return jnp.mean(jnp.square(_rt8_forward(p, x) - y))

    return jax.value_and_grad(loss)(params)


@wrong(
    "make_power_jit",
    why="'Return jax.jit of f ... for the f you are given': jits a lambda that forwards to f "
    "'so any parameter naming works'; traces right, but the returned jit wraps the lambda, not f "
    "(its __wrapped__ / __name__ / lowered module name are the lambda's); wrong for every f",
)
def _rt8_make_power_jit_forwarding_lambda(f):
    return jax.jit(lambda x, n: f(x, n), static_argnums=1)


@wrong(
    "abs_where",
    why="'exact for every value of the dtype': handles zero as its own case (so -0.0 gives "
    "+0.0) with where(x > 0, x, where(x < 0, -x, 0)); a NaN falls through both tests to 0; "
    "wrong on np.array([np.nan, -1.0], np.float32): gives [0, 1], |NaN| is NaN",
)
def _rt8_abs_where_zero_case_eats_nan(x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.where(x > 0, x, jnp.where(x < 0, -x, jnp.zeros_like(x)))


@wrong(
    "abs_where",
    why="'the result has x's shape': promotes x with jnp.atleast_1d 'so scalars work', a 0-d "
    "input comes back with shape (1,); wrong on np.array(-4.0, np.float16)",
)
def _rt8_abs_where_atleast_1d(x) -> jax.Array:
    x = jnp.atleast_1d(x)
    return jnp.where(x < 0, -x, x)


@wrong(
    "abs_cond",
    why="'the predicate compares x in its own dtype': predicate jnp.signbit(x), which for a "
    "float x bitcasts it to an integer (bitcast_convert_type f32->i32, bf16->i16) and shifts; "
    "no comparison in x's dtype at all (values right, IR wrong); wrong on f32 and bf16 scalars",
)
def _rt8_abs_cond_signbit_predicate(x) -> jax.Array:
    return lax.cond(jnp.signbit(x), lambda v: -v, lambda v: v, x)


@wrong(
    "abs_cond",
    why="'exact for every value of it' and 'one branch gives x, the other -x': a nested cond "
    "sends zero to its own branch (to get +0.0 for -0.0), so a NaN scalar falls to zeros_like; "
    "wrong on np.float32(np.nan): gives 0.0",
)
def _rt8_abs_cond_zero_branch_eats_nan(x) -> jax.Array:
    return lax.cond(
        x > 0,
        lambda v: v,
        lambda v: lax.cond(v < 0, lambda u: -u, jnp.zeros_like, v),
        x,
    )
