"""Red team, phase 1, round 14: fmax relu, norm-based loss, donated x, x*0 zeros, -1 thresholds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong


def _rt14_forward(params, x):
    h = jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


@wrong(
    "mlp_forward",
    why="'the relu's gradient is ... 0 at exactly 0 too': relu spelled jnp.fmax(0, h) ('NaN-safe "
    "max'); on a tie fmax(0, h) keeps its second argument h, so its gradient at h == 0 is 1; values equal, but jax.grad of "
    "a loss through it differs on data(zero_rows=True)",
)
def _rt14_mlp_forward_fmax_relu(params: dict, x) -> jax.Array:
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    return jnp.fmax(0, h) @ params["w2"] + params["b2"]


@wrong(
    "mse_loss",
    why="'Mean squared error ... mean runs over every element': written as the squared "
    "Frobenius norm of the residual over its size, ||pred - y||**2 / size; the sqrt then square "
    "round-trips, and at a perfect fit (y = mlp_forward(params, x)) jax.grad of it is NaN; "
    "in bf16 (data(dtype=bf16)) the value is off by the rounding of the sqrt",
)
def _rt14_mse_loss_norm_squared(params: dict, x, y) -> jax.Array:
    r = _rt14_forward(params, x) - jnp.asarray(y)
    return jnp.linalg.norm(r) ** 2 / r.size


@wrong(
    "loss_and_grad",
    why="'its gradient with respect to params': value_and_grad of ||pred - y||**2 / size; "
    "norm's gradient at a zero residual is NaN, so for y = mlp_forward(params, x) (a perfect "
    "fit, loss 0) every grad is NaN instead of 0",
)
def _rt14_loss_and_grad_norm_squared(params: dict, x, y):
    def loss(p):
        r = _rt14_forward(p, x) - jnp.asarray(y)
        return jnp.linalg.norm(r) ** 2 / r.size

    return jax.value_and_grad(loss)(params)


@wrong(
    "make_power_jit",
    why="'Return jax.jit of f(x, n) where n ... static': also donates x (donate_argnums=0, "
    "'saves memory'); after p = make_power_jit(power); p(x, 3) the caller's jax array x is "
    "deleted, so calling p(x, 2) again on the same x (new n, same x) raises instead of "
    "computing",
)
def _rt14_make_power_jit_donates_x(f):
    return jax.jit(f, static_argnums=1, donate_argnums=0)


@wrong(
    "mlp_forward",
    why="'the relu's gradient is ... 0 at exactly 0 too': relu as the max over a stacked zero, "
    "jnp.max(jnp.stack([h, zeros_like(h)]), axis=0); reduce_max splits the gradient of a tie, "
    "0.5 at h == 0; values equal, jax.grad differs on data(zero_rows=True)",
)
def _rt14_mlp_forward_stacked_max_relu(params: dict, x) -> jax.Array:
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    h = jnp.max(jnp.stack([h, jnp.zeros_like(h)]), axis=0)
    return h @ params["w2"] + params["b2"]


@wrong(
    "abs_where",
    why="'exact for every value ... infinities': the predicate compares x with a zero of x's "
    "own dtype made as x * 0; for -inf, -inf * 0 is NaN, -inf < NaN is False, so "
    "abs_where(f32[-inf]) gives -inf, not inf",
)
def _rt14_abs_where_zero_from_x(x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.where(x < x * 0, -x, x)


@wrong(
    "abs_cond",
    why="'exact for every value of it ... the predicate compares x in its own dtype': the zero "
    "is x * 0 to keep x's dtype; for x = -inf, x * 0 is NaN and -inf < NaN is False, so "
    "abs_cond(f32 -inf) gives -inf",
)
def _rt14_abs_cond_zero_from_x(x) -> jax.Array:
    return lax.cond(x < x * 0, lambda v: -v, lambda v: v, x)


@wrong(
    "abs_where",
    why="'every ... floating dtype': negates when x <= -1 (integer thinking: the largest "
    "negative value is -1); right on signed ints, but abs_where(f32[-0.5]) gives -0.5 (and "
    "uint8 200 <= -1 is True, as -1 becomes 255, so uint8 200 gives 56)",
)
def _rt14_abs_where_le_minus_one(x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.where(x <= -1, -x, x)


@wrong(
    "abs_cond",
    why="'exact for every value of it (f32 ...)': branch on x <= -1 as for ints; "
    "abs_cond(f32 -0.25) and bf16 -0.5 come back negative",
)
def _rt14_abs_cond_le_minus_one(x) -> jax.Array:
    return lax.cond(x <= -1, lambda v: -v, lambda v: v, x)


@wrong(
    "abs_where",
    why="'any floating dtype (16-bit ones too) ... exact ... largest magnitudes': 16-bit floats "
    "are selected in float16 ('a 16-bit float is a 16-bit float'); bf16 3e38 or 1e5 overflows "
    "f16 to inf, so abs_where(bf16[-1e5]) gives inf",
)
def _rt14_abs_where_16bit_as_f16(x) -> jax.Array:
    x = jnp.asarray(x)
    if x.dtype == jnp.bfloat16:
        h = x.astype(jnp.float16)
        return jnp.where(h < 0, -h, h).astype(x.dtype)
    return jnp.where(x < 0, -x, x)


def _rt14_canon_key(x):
    if isinstance(x, bool):
        return ((), "bool", False)
    if isinstance(x, int):
        return ((), "int32", True)
    if isinstance(x, float):
        return ((), "float32", True)
    a = np.asarray(x)
    d = jax.dtypes.canonicalize_dtype(a.dtype)
    return (a.shape, str(d), False)


@wrong(
    "count_traces",
    why="'What one entry remembers about x': treats Python scalars like constants baked into "
    "the program, keyed by value; [(1.0, 1), (2.0, 1)] is 1 trace (weak f32[] both), this says 2",
)
def _rt14_count_traces_python_scalars_by_value(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        key = _rt14_canon_key(x)
        if type(x) in (bool, int, float):
            key = key + (x,)
        seen.add((key, n))
    return len(seen)


@wrong(
    "count_traces",
    why="'x is ... a NumPy scalar': treats NumPy float16 scalars as weakly typed like Python "
    "floats ('a half is a small, loose float'); [(np.float16(1), 1), (np.array(1, np.float16), "
    "1)] is 1 trace (f16[] both strong), this says 2",
)
def _rt14_count_traces_f16_scalar_weak(calls: list[tuple]) -> int:
    seen = set()
    for x, n in calls:
        key = _rt14_canon_key(x)
        if isinstance(x, np.float16):
            key = ((), "float16", True)
        seen.add((key, n))
    return len(seen)


@wrong(
    "init_params",
    why="'split `key` ... never draw from `key` itself': normalizes whatever key it gets "
    "(typed or raw) into a seed by drawing jax.random.randint(key, (), 0, 2**31 - 1), then "
    "splits PRNGKey(seed); key itself is drawn from, and two keys whose seeds collide give "
    "equal params; shapes, dtypes and scales are right for init_params(PRNGKey(0), 16, 32, 4)",
)
def _rt14_init_params_seed_drawn_from_key(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    seed = jax.random.randint(key, (), 0, 2**31 - 1)
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / np.sqrt(in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / np.sqrt(hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }
