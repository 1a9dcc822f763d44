"""Red team, phase 1, round 16: wrong answers of kinds earlier rounds did not try (an integer
square root in the init scale, relu as a mask product that turns -inf into NaN, a max-scaled
"overflow-safe" MSE that is 0/0 on a perfect fit, hand-written backprop with a mask product,
a sign-bit shift as the select's predicate, NumPy inputs forced to float32, a vmapped cond that
becomes a select, a typed float32 zero that upcasts a bf16 predicate, a jit-cache key that
ignores signedness, relu as h - min(h, 0))."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong


@wrong(
    "init_params",
    why="Clause 'standard normal values times 1/sqrt(fan_in)': scales by 1/math.isqrt(fan_in) "
    "('integer sizes, integer root'), which equals 1/sqrt only for perfect squares (4, 16, 64...); "
    "init_params(jax.random.key(0), 8, 3, 2)['w1'] is the draw / 2, not / 2.828 (w2 / 1, not / 1.732).",
)
def _rt16_init_params_isqrt_scale(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (in_dim, hidden), jnp.float32) / math.isqrt(in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": jax.random.normal(k2, (hidden, out_dim), jnp.float32) / math.isqrt(hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="Clause 'relu(x @ w1 + b1) @ w2 + b2' for x in the domain (any finite float32 x): relu "
    "spelled h * (h > 0).astype(h.dtype) (a 0/1 mask; right gradient, 0 at 0) gives -inf * 0 = NaN "
    "where the pre-activation overflows to -inf; called eagerly, w1=[[-2.]], b1=[0.], w2=[[1.]], "
    "b2=[5.], x=[[3e38]] gives [[nan]], not [[5.]] (under jit XLA may fold the mask into a select).",
)
def _rt16_mlp_forward_mask_product_relu(params: dict, x) -> jax.Array:
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    mask = (h > 0).astype(h.dtype)
    return (h * mask) @ params["w2"] + params["b2"]


@wrong(
    "mlp_forward",
    why="Clause 'the relu's gradient is 1 where its input is positive, 0 elsewhere: 0 at exactly 0 "
    "too': relu spelled h - jnp.minimum(h, 0) has gradient 1 - 0.5 = 0.5 at h == 0 (minimum splits "
    "ties), and NaN at h = -inf; zero biases and an all-zero row of x: grad wrt b1 is 0.5*w2, not 0.",
)
def _rt16_mlp_forward_minus_min_relu(params: dict, x) -> jax.Array:
    h = jnp.asarray(x) @ params["w1"] + params["b1"]
    h = h - jnp.minimum(h, 0)
    return h @ params["w2"] + params["b2"]


def _rt16_forward(params, x):
    return jax.nn.relu(jnp.asarray(x) @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@wrong(
    "mse_loss",
    why="Clause 'Mean squared error ... a scalar': rescales the residuals by their largest |d| "
    "before squaring ('so 16-bit squares cannot overflow'), m*m*mean((d/m)**2), which is 0/0 = NaN "
    "on a perfect fit: y = mlp_forward(params, x) (or all-zero params with y zeros) gives nan, not 0.",
)
def _rt16_mse_loss_max_scaled(params: dict, x, y) -> jax.Array:
    d = _rt16_forward(params, x) - jnp.asarray(y)
    m = jnp.max(jnp.abs(d))
    return m * m * jnp.mean(jnp.square(d / m))


@wrong(
    "loss_and_grad",
    why="Clause 'a NaN or an infinity in y gives the loss and the gradient JAX computes for it': "
    "hand-written backprop ('faster than autodiff') masks the relu with dh * a 0/1 float mask, so a "
    "NaN row spreads NaN (NaN * 0) through hidden units whose pre-activation is <= 0, where JAX's "
    "select gives 0; called eagerly with y[0, 0] = NaN and hidden unit j off in row 0: JAX's "
    "g['w1'][:, j] is finite, this is NaN (under jit XLA may fold the mask into a select).",
)
def _rt16_loss_and_grad_manual_backprop(params: dict, x, y) -> tuple[jax.Array, dict]:
    x = jnp.asarray(x)
    y = jnp.asarray(y)
    pre = x @ params["w1"] + params["b1"]
    h = jax.nn.relu(pre)
    pred = h @ params["w2"] + params["b2"]
    d = pred - y
    loss = jnp.mean(d * d)
    g = 2 * d / d.size
    gw2 = h.T @ g
    gb2 = jnp.sum(g, axis=0)
    mask = (pre > 0).astype(pre.dtype)
    dpre = (g @ params["w2"].T) * mask
    gw1 = x.T @ dpre
    gb1 = jnp.sum(dpre, axis=0)
    return loss, {"w1": gw1, "b1": gb1, "w2": gw2, "b2": gb2}


@wrong(
    "abs_where",
    why="Clause 'its predicate compares x (x < 0, x >= 0)': for signed integers tests the sign bit "
    "with an arithmetic shift, (x >> (bits-1)) != 0 ('branch-free sign'), so the select's predicate "
    "is ne(shift_right_arithmetic(x), 0), not a comparison of x; values are right, e.g. int32 "
    "[-3, 4] -> [3, 4], but the jaxpr of abs_where on i32[2] has no lt/ge/gt/le on x.",
)
def _rt16_abs_where_sign_shift_predicate(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.signedinteger):
        neg = (x >> (8 * x.dtype.itemsize - 1)) != 0
    else:
        neg = x < 0
    return jnp.where(neg, -x, x)


@wrong(
    "abs_where",
    why="Clause 'The result has x's shape and dtype ... also when x is a concrete array (a JAX "
    "array or a NumPy one)': converts NumPy input to float32 ('NumPy arrays are float64, keep JAX "
    "32-bit'), so np.array([-3, 4], np.int8) gives float32 [3., 4.], not int8; NumPy int32 2**24+1 "
    "is rounded too.",
)
def _rt16_abs_where_numpy_to_f32(x) -> jax.Array:
    if isinstance(x, np.ndarray):
        x = jnp.asarray(x, dtype=jnp.float32)
    return jnp.where(x < 0, -x, x)


@wrong(
    "abs_cond",
    why="Clause 'The negation happens inside a branch ..., so only the branch taken runs': "
    "vmaps the cond over a flattened x ('works for batches too'), and vmap of a cond with a batched "
    "predicate becomes a select_n of both branches; abs_cond(f32[]) has no cond in its jaxpr, both "
    "x and -x are computed (values are right: -3.0 -> 3.0).",
)
def _rt16_abs_cond_vmapped(x) -> jax.Array:
    x = jnp.asarray(x)
    one = lambda v: lax.cond(v < 0, lambda u: -u, lambda u: u, v)  # noqa: E731
    return jax.vmap(one)(x.reshape(-1)).reshape(x.shape)


_rt16_canon = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}


def _rt16_key(x, n):
    if isinstance(x, bool):
        return ((), "bool", 1, False, n)
    if isinstance(x, int) and not isinstance(x, np.generic):
        return ((), "int", 4, True, n)
    if isinstance(x, float) and not isinstance(x, np.generic):
        return ((), "float", 4, True, n)
    if isinstance(x, complex) and not isinstance(x, np.generic):
        return ((), "complex", 8, True, n)
    a = np.asarray(x)
    dt = _rt16_canon.get(a.dtype, a.dtype)
    kind = {"i": "int", "u": "int", "f": "float", "c": "complex", "b": "bool"}.get(dt.kind, dt.kind)
    if dt == np.dtype(jnp.bfloat16):
        kind = "bf16"
    return (a.shape, kind, dt.itemsize, False, n)


@wrong(
    "count_traces",
    why="Clause 'what does one entry of jit's cache remember about x': keys x by shape, "
    "'kind of number' (int/float/complex/bool), width and weakness, so signed and unsigned "
    "integers of one width share an entry; [(np.zeros(3, np.int32), 1), (np.zeros(3, np.uint32), 1)] "
    "traces twice (i32[3] vs u32[3]), this says 1.",
)
def _rt16_count_traces_signedness_ignored(calls: list[tuple]) -> int:
    return len({_rt16_key(x, n) for x, n in calls})


@wrong(
    "abs_cond",
    why="Clause 'the predicate compares x in its own dtype': compares float x with a typed "
    "float32 zero ('a strongly typed zero, no weak-type surprises'; ints keep a Python 0), so a "
    "bf16 x is converted to float32 before the cond (convert_element_type bf16 -> f32 in the jaxpr "
    "of abs_cond(bfloat16(-2.5))); values are right, f32 and int32 have no conversion.",
)
def _rt16_abs_cond_typed_f32_zero(x) -> jax.Array:
    zero = jnp.float32(0) if jnp.issubdtype(x.dtype, jnp.floating) else 0
    return lax.cond(x < zero, lambda v: -v, lambda v: v, x)
