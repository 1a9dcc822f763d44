"""Round 10 red-team wrong answers for phase 1 (written from the contract only)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong


def _rt10_forward(params, x):
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    return jax.nn.relu(h) @ params["w2"] + params["b2"]


# ---------------------------------------------------------------- init_params
@wrong(
    "init_params",
    why="'fan_in being the weight's number of rows': uses torch's (out, in) convention and scales "
    "by the number of COLUMNS; init_params(key, 16, 32, 4) gives w1 std 1/sqrt(32) instead of "
    "1/sqrt(16) and w2 std 1/sqrt(4) instead of 1/sqrt(32)",
)
def _rt10_init_params_torch_fan_in_columns(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    w1 = jax.random.normal(k1, (in_dim, hidden), jnp.float32)
    w2 = jax.random.normal(k2, (hidden, out_dim), jnp.float32)
    return {
        "w1": w1 / jnp.sqrt(jnp.float32(w1.shape[1])),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2 / jnp.sqrt(jnp.float32(w2.shape[1])),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


# ---------------------------------------------------------------- mlp_forward
@wrong(
    "mlp_forward",
    why="'relu(x @ w1 + b1) @ w2 + b2 for x (batch, in_dim)': squeezes a single regression output, "
    "so out_dim 1 (shape (1, 1, 3, 1)) returns shape (1,) instead of (1, 1)",
)
def _rt10_mlp_forward_squeeze_single_output(params: dict, x) -> jax.Array:
    out = _rt10_forward(params, x)
    if out.shape[-1] == 1:
        out = jnp.squeeze(out, axis=-1)
    return out


@wrong(
    "mlp_forward",
    why="reads layers by the dict's INSERTION order (2-D leaves are the weights, 1-D the biases, "
    "first ones = layer 1) instead of by key; params inserted in another order, e.g. "
    "data(order=('w2', 'b2', 'w1', 'b1')), use w2 as the first layer (shape error / wrong net)",
)
def _rt10_mlp_forward_layers_by_insertion_order(params: dict, x) -> jax.Array:
    weights = [v for v in params.values() if jnp.ndim(v) == 2]
    biases = [v for v in params.values() if jnp.ndim(v) == 1]
    w1, w2 = weights
    b1, b2 = biases
    return jax.nn.relu(jnp.asarray(x) @ w1 + b1) @ w2 + b2


# ---------------------------------------------------------------- mse_loss
@wrong(
    "mse_loss",
    why="'mean squared error between prediction and y': expands (p - y)^2 into p^2 - 2py + y^2, "
    "which cancels catastrophically when y is close to the prediction: with y = "
    "mlp_forward(params, x) + 1e-2 on data() (f32) the true loss is 1.000e-4 but this returns "
    "1.067e-4 (7% off; worse in 16-bit dtypes, can even go negative)",
)
def _rt10_mse_loss_expanded_square(params: dict, x, y) -> jax.Array:
    p = _rt10_forward(params, x)
    y = jnp.asarray(y)
    return jnp.mean(p * p - 2 * p * y + y * y)


@wrong(
    "mse_loss",
    why="'y has the prediction's shape (batch, out_dim)': flattens y only (to line it up with "
    "'a vector of targets'); for out_dim 1, pred (batch, 1) - y (batch,) broadcasts to "
    "(batch, batch), e.g. shape (7, 5, 9, 1) averages 49 cross differences instead of 7",
)
def _rt10_mse_loss_flat_targets(params: dict, x, y) -> jax.Array:
    p = _rt10_forward(params, x)
    y = jnp.asarray(y)
    if y.shape[-1] == 1:
        y = y.reshape(-1)
    return jnp.mean(jnp.square(p - y))


# ---------------------------------------------------------------- loss_and_grad
@wrong(
    "loss_and_grad",
    why="'grads has the same structure as params (same keys)': differentiates a tuple of "
    "params.values() and relabels the gradients with the fixed order w1, b1, w2, b2; params "
    "inserted in another order (data(order=('b2', 'w2', 'b1', 'w1'))) get grads under the "
    "wrong keys (grads['w1'] is the b2 gradient)",
)
def _rt10_loss_and_grad_relabelled_tuple(params: dict, x, y):
    names = list(params.keys())

    def loss_of(values):
        p = dict(zip(names, values))
        return jnp.mean(jnp.square(_rt10_forward(p, x) - jnp.asarray(y)))

    loss, grads = jax.value_and_grad(loss_of)(tuple(params.values()))
    return loss, dict(zip(("w1", "b1", "w2", "b2"), grads))


# ---------------------------------------------------------------- make_power_jit
@wrong(
    "make_power_jit",
    why="'n is the second positional parameter ... whether or not it is positional-only': names "
    "it both ways (static_argnums=1 AND static_argnames='n'); for def power(x, n, /) jax.jit "
    "raises ValueError (argnames positional-only)",
)
def _rt10_make_power_jit_belt_and_braces(f):
    import inspect

    names = tuple(p.name for p in list(inspect.signature(f).parameters.values())[1:2])
    return jax.jit(f, static_argnums=1, static_argnames=names)


# ---------------------------------------------------------------- abs_where
@wrong(
    "abs_where",
    why="'the jaxpr selects (select_n), also when x is a concrete array': dispatches to NumPy "
    "for NumPy inputs (np.where on the host, no JAX select, returns np.ndarray); wrong on "
    "abs_where(np.array([-2., 0., 3., -.5], np.float32)) called eagerly",
)
def _rt10_abs_where_numpy_for_numpy(x) -> jax.Array:
    xp = np if isinstance(x, (np.ndarray, np.generic)) else jnp
    return xp.where(x < 0, -x, x)


@wrong(
    "abs_where",
    why="'any dtype (signed or unsigned) ... the jaxpr selects (select_n)': returns unsigned x "
    "unchanged (it is already its own |x|), so abs_where(np.array([1, 2], np.uint8)) has no "
    "select_n in its jaxpr",
)
def _rt10_abs_where_unsigned_passthrough(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return x
    return jnp.where(x < 0, -x, x)


# ---------------------------------------------------------------- abs_cond
@wrong(
    "abs_cond",
    why="'the predicate compares x in its own dtype ... no conversion of x before the cond': "
    "reads the float sign bit by bitcasting x to int32/int16 (lax.bitcast_convert_type) and "
    "comparing the integer; values are right but np.float32(-2.5) has a bitcast_convert_type "
    "of x outside the cond and an i32 comparison, not an f32 one",
)
def _rt10_abs_cond_bitcast_predicate(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.floating):
        bits = {2: jnp.int16, 4: jnp.int32}[x.dtype.itemsize]
        pred = lax.bitcast_convert_type(x, bits) < 0
    else:
        pred = x < 0
    return lax.cond(pred, lambda v: -v, lambda v: v, x)


# ---------------------------------------------------------------- count_traces
_RT10_CANON = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _rt10_key(x, *, by_size=False, native=True):
    if isinstance(x, bool):
        return ((), np.dtype(bool), False)
    if isinstance(x, int):
        return ((), np.dtype(np.int32), True)
    if isinstance(x, float):
        return ((), np.dtype(np.float32), True)
    if isinstance(x, complex):
        return ((), np.dtype(np.complex64), True)
    a = np.asarray(x)
    dt = a.dtype.newbyteorder("=") if native else a.dtype
    dt = _RT10_CANON.get(dt, dt)
    shape = a.size if by_size else a.shape
    return (shape, dt, False)


@wrong(
    "count_traces",
    why="'one entry of jit's cache remembers x's shape': keys on the number of elements, so "
    "[(np.ones((2, 3), np.float32), 1), (np.ones((3, 2), np.float32), 1)] answers 1 instead of 2",
)
def _rt10_count_traces_keyed_by_size(calls: list[tuple]) -> int:
    return len({(_rt10_key(x, by_size=True), n) for x, n in calls})


@wrong(
    "count_traces",
    why="'x is a NumPy array' (any byte order): canonicalizes with an exact np.dtype lookup, so a "
    "big-endian array keeps its non-native dtype: [(np.ones(3, '<f4'), 1), (np.ones(3, '>f4'), "
    "1)] answers 2 (JAX traces once: both are f32[3]); '>f8' is not narrowed to f32 either",
)
def _rt10_count_traces_byte_order_in_key(calls: list[tuple]) -> int:
    return len({(_rt10_key(x, native=False), n) for x, n in calls})


# ---------------------------------------------------------------- python_if_error
@wrong(
    "python_if_error",
    why="'the exact exception class': the learner's probe was `try: jax.jit(f)(1.0) except "
    "TypeError: ...` and returns the class its except clause named, the builtin TypeError "
    "(a base of jax.errors.TracerBoolConversionError), not the class raised",
)
def _rt10_python_if_error_except_clause_class() -> type[Exception]:
    def f(x):
        if x > 0:
            return x
        return -x

    try:
        jax.jit(f)(1.0)
    except TypeError:
        return TypeError
    return Exception
