"""Red team, phase 1, round 12: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong

_rt12_calls = [0]


def _rt12_forward(params, x):
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def _rt12_mse(params, x, y):
    return jnp.mean(jnp.square(_rt12_forward(params, x) - jnp.asarray(y)))


@wrong(
    "init_params",
    why="'The same key must give the same params': folds a module-level call counter into the "
    "key so 'every call gets fresh randomness'; init_params(key(0), 16, 32, 4) called twice gives "
    "two different w1",
)
def _rt12_init_params_fresh_per_call(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    _rt12_calls[0] += 1
    k1, k2 = jax.random.split(jax.random.fold_in(key, _rt12_calls[0]))
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="'another key other params': seeds a NumPy generator from the key's FIRST word of key "
    "data, which is 0 for every jax.random.key(seed) with seed < 2**32; key(0) and key(1) give "
    "identical params (and the key is never split)",
)
def _rt12_init_params_seed_from_low_word(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    data = key if getattr(key, "dtype", None) == jnp.uint32 else jax.random.key_data(key)
    rng = np.random.default_rng(int(np.asarray(data).ravel()[0]))
    return {
        "w1": jnp.asarray(rng.standard_normal((in_dim, hidden)) / np.sqrt(in_dim), jnp.float32),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jnp.asarray(rng.standard_normal((hidden, out_dim)) / np.sqrt(hidden), jnp.float32),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="'relu(x @ w1 + b1) @ w2 + b2': applies the relu BEFORE adding b1 (relu(x @ w1) + b1), "
    "so negative biases leak through; wrong on data() where b1 has large negative entries",
)
def _rt12_mlp_forward_relu_before_bias(params: dict, x) -> jax.Array:
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"]) + params["b1"]
    return h @ params["w2"] + params["b2"]


@wrong(
    "mlp_forward",
    why="'No activation after the last layer': applies the relu to the output too ('every "
    "layer gets a relu'); negative regression outputs become 0 on data() (b2 ~ N(0, 4))",
)
def _rt12_mlp_forward_output_relu(params: dict, x) -> jax.Array:
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return jax.nn.relu(h @ params["w2"] + params["b2"])


@wrong(
    "mse_loss",
    why="'Mean squared error': uses the Huber (smooth-L1, delta 1) loss 'for robustness', equal "
    "to half the MSE for residuals below 1 and linear beyond; wrong on data() (residuals >> 1)",
)
def _rt12_mse_loss_huber(params: dict, x, y) -> jax.Array:
    r = _rt12_forward(params, x) - jnp.asarray(y)
    a = jnp.abs(r)
    return jnp.mean(jnp.where(a <= 1, 0.5 * r * r, a - 0.5))


@wrong(
    "loss_and_grad",
    why="'its gradient with respect to params': averages per-example gradients (vmap of grad) of "
    "the per-example SUM of squared errors over outputs, so grads are out_dim times too large; "
    "right only for out_dim 1, wrong on data() (out_dim 4); the loss itself is right",
)
def _rt12_loss_and_grad_per_example_vmap(params: dict, x, y):
    x = jnp.asarray(x)
    y = jnp.asarray(y)

    def one(p, xi, yi):
        return jnp.sum(jnp.square(_rt12_forward(p, xi[None]) - yi[None]))

    per = jax.vmap(jax.grad(one), in_axes=(None, 0, 0))(params, x, y)
    grads = jax.tree.map(lambda g: jnp.mean(g, axis=0).astype(g.dtype), per)
    return _rt12_mse(params, x, y), grads


@wrong(
    "abs_where",
    why="'An empty x ... the result's shape and dtype are checked': special-cases empty input "
    "with jnp.zeros(x.shape), whose dtype is float32 whatever x's; int32[0, 3] or bf16[0] "
    "come back float32",
)
def _rt12_abs_where_empty_default_float(x) -> jax.Array:
    x = jnp.asarray(x)
    if x.size == 0:
        return jnp.zeros(x.shape)
    return jnp.where(x < 0, -x, x)


@wrong(
    "abs_cond",
    why="'nothing is computed outside the cond but the predicate': 'makes sure x is a scalar' "
    "with jnp.ravel(x)[0], which puts a reshape and a squeeze of x before the cond; every "
    "scalar input shows it (abs_cond(f32 -2.5) jaxpr)",
)
def _rt12_abs_cond_ravel_first_element(x) -> jax.Array:
    x = jnp.ravel(x)[0]
    return lax.cond(x < 0, lambda v: -v, lambda v: v, x)


def _rt12_canon(x):
    if isinstance(x, bool):
        return (), "bool", True
    if isinstance(x, int):
        return (), "int32", True
    if isinstance(x, float):
        return (), "float32", True
    a = np.asarray(x)
    d = a.dtype
    table = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}
    return a.shape, table.get(d.name, d.name), False


@wrong(
    "count_traces",
    why="'one entry of jit's cache remembers x's shape': keys on the rank (ndim) only, as if jit "
    "were shape-polymorphic within a rank; [(f32[3], 2), (f32[4], 2)] gives 1, truly 2",
)
def _rt12_count_traces_rank_only(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        shape, dtype, weak = _rt12_canon(x)
        seen.add((len(shape), dtype, weak, n))
    return len(seen)


@wrong(
    "count_traces",
    why="'x is ... a NumPy scalar or a Python scalar': treats NumPy INTEGER scalars (np.int32(3), "
    "np.int64(3)) as weakly typed like Python ints (they are not: NumPy scalars carry their "
    "dtype); [(3, 2), (np.int32(3), 2)] gives 1, truly 2",
)
def _rt12_count_traces_numpy_int_scalar_weak(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        shape, dtype, weak = _rt12_canon(x)
        if isinstance(x, np.integer) and not isinstance(x, np.bool_):
            dtype, weak = "int32" if dtype.startswith("int") else dtype, True
        seen.add((shape, dtype, weak, n))
    return len(seen)
