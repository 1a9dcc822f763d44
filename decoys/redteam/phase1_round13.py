"""Red team, phase 1, round 13: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong


def _rt13_forward(params, x):
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def _rt13_keep_rows(x):
    # rows of x that are not all zeros ("padding rows" in the learner's mind)
    x = jnp.asarray(x)
    return jnp.any(x != 0, axis=1, keepdims=True)


@wrong(
    "init_params",
    why="'all float32': biases built with np.zeros((hidden,)) are float64 NumPy arrays, not "
    "float32 (init_params(key(0), 16, 32, 4)['b1'].dtype is float64); weights are right",
)
def _rt13_init_params_numpy_zero_biases(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim),
        "b1": np.zeros((hidden,)),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden),
        "b2": np.zeros((out_dim,)),
    }


@wrong(
    "init_params",
    why="'give each layer its own subkey ... a key is used once': splits key, draws w1 from k1, "
    "then derives w2's key by splitting k1 again (k1 is drawn from AND split); values look fine",
)
def _rt13_init_params_chain_from_used_subkey(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, _unused = jax.random.split(key)
    w1 = jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim)
    _, k2 = jax.random.split(k1)
    w2 = jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden)
    return {
        "w1": w1,
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2,
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="'A pure function of params and x': stashes the hidden activations into the caller's "
    "params dict (params['h'] = h, 'for inspection'); an eager call on data() adds a key 'h' to "
    "the learner's dict, so params no longer has the 4 keys and its pytree changes",
)
def _rt13_mlp_forward_stashes_hidden(params: dict, x) -> jax.Array:
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    params["h"] = h
    return h @ params["w2"] + params["b2"]


@wrong(
    "mse_loss",
    why="'The mean runs over every element (batch * out_dim)': drops all-zero rows of x as "
    "padding (programs.py calls them padding rows) and averages over the remaining rows only; "
    "data(zero_rows=True) gives a different loss",
)
def _rt13_mse_loss_masks_padding_rows(params: dict, x, y) -> jax.Array:
    pred = _rt13_forward(params, x)
    keep = _rt13_keep_rows(x).astype(pred.dtype)
    sq = jnp.square(pred - jnp.asarray(y)) * keep
    n = jnp.maximum(jnp.sum(keep), 1) * pred.shape[1]
    return (jnp.sum(sq) / n).astype(pred.dtype)


@wrong(
    "loss_and_grad",
    why="'mse_loss and its gradient': value_and_grad of a loss that stops the gradient through "
    "the all-zero (padding) rows of x and averages over the others; loss and grads differ from "
    "mse_loss on data(zero_rows=True)",
)
def _rt13_loss_and_grad_masked_padding(params: dict, x, y):
    def loss(p):
        pred = _rt13_forward(p, x)
        keep = _rt13_keep_rows(x).astype(pred.dtype)
        sq = jnp.square(pred - jnp.asarray(y)) * keep
        n = jnp.maximum(jnp.sum(keep), 1) * pred.shape[1]
        return (jnp.sum(sq) / n).astype(pred.dtype)

    return jax.value_and_grad(loss)(params)


@wrong(
    "abs_where",
    why="'exact for every value of the dtype' for unsigned ints: casts uint to the signed type "
    "of the same width 'so it can be negated', selects, casts back; uint8 200 -> int8 -56 -> 56, "
    "so abs_where(np.uint8([200])) gives 56 instead of 200",
)
def _rt13_abs_where_unsigned_via_signed(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        s = x.astype(jnp.dtype(f"int{8 * x.dtype.itemsize}"))
        return jnp.where(s < 0, -s, s).astype(x.dtype)
    return jnp.where(x < 0, -x, x)


@wrong(
    "abs_where",
    why="'the select decides: it picks x or -x per element': the select picks a sign (+1/-1) "
    "and a multiply applies it (x * where(x < 0, -1, 1)); values match, but the select picks "
    "a constant, not x or -x, for f32[3] input",
)
def _rt13_abs_where_select_the_sign(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return jnp.where(x < 0, -x, x)
    one = jnp.ones((), x.dtype)
    return x * jnp.where(x < 0, -one, one)


@wrong(
    "abs_cond",
    why="'the predicate compares x in its own dtype': compares against a typed zero made with "
    "jnp.zeros(()) (default float32); for bf16 x (and int32 x) the comparison converts x to "
    "float32 first; values are right",
)
def _rt13_abs_cond_default_zero(x) -> jax.Array:
    return lax.cond(x < jnp.zeros(()), lambda v: -v, lambda v: v, x)


_RT13_CANON = {"<f8": "<f4", "<i8": "<i4", "<u8": "<i4", "<c16": "<c8"}


@wrong(
    "count_traces",
    why="'JAX runs with its default 32-bit types': canonicalizes uint64 to int32 like int64 "
    "(it is uint32); [(np.zeros(3, np.uint64), 1), (np.zeros(3, np.int64), 1)] is 2 traces, "
    "this says 1",
)
def _rt13_count_traces_uint64_as_int32(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        if isinstance(x, bool):
            key = ((), "|b1", False)
        elif isinstance(x, int):
            key = ((), "<i4", True)
        elif isinstance(x, float):
            key = ((), "<f4", True)
        else:
            a = np.asarray(x)
            s = a.dtype.str
            key = (a.shape, _RT13_CANON.get(s, s), False)
        seen.add((key, n))
    return len(seen)


@wrong(
    "count_traces",
    why="'what one entry remembers about x' is its dtype, a fact, but this keys on dtype.str, a "
    "name: ml_dtypes' 1-byte floats share '<V1' (float8_e4m3fn and float8_e4m3fnuz arrays of "
    "shape (3,) are 2 traces, this says 1)",
)
def _rt13_count_traces_dtype_str_key(calls: list[tuple]) -> int:
    canon = {"<f8": "<f4", "<i8": "<i4", "<u8": "<u4", "<c16": "<c8"}
    seen = set()
    for x, n in calls:
        if isinstance(x, bool):
            key = ((), "|b1", False)
        elif isinstance(x, int):
            key = ((), "<i4", True)
        elif isinstance(x, float):
            key = ((), "<f4", True)
        else:
            a = np.asarray(x)
            s = a.dtype.str
            key = (a.shape, canon.get(s, s), False)
        seen.add((key, n))
    return len(seen)


@wrong(
    "abs_cond",
    why="'nothing is computed outside the cond but the predicate, and the predicate compares x': "
    "uses lax.switch on jnp.sign(x) + 1 (branches -v, v, v), so a sign, a conversion and an add "
    "run outside the switch, no comparison at all; for f32 x=-2.0 the value (2.0) is right",
)
def _rt13_abs_cond_switch_on_sign(x) -> jax.Array:
    index = jnp.sign(x).astype(jnp.int32) + 1
    return lax.switch(index, [lambda v: -v, lambda v: v, lambda v: v], x)
