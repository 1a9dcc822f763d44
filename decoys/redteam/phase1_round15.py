"""Red team, phase 1, round 15: wrong answers of kinds earlier rounds did not try (a draw made
exact by standardising it, a draw made in bf16, mixed-precision matmuls and loss, NaN-sanitised
gradients, abs inside a cond branch, a module-level trace cache that is never reset)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from kata_harness.decoys import wrong


@wrong(
    "init_params",
    why="Clause 'standard normal values times 1/sqrt(fan_in)': standardises each draw by its own "
    "sample std ('so the scale is exactly 1/sqrt(fan_in), not just in expectation'), so the values "
    "are not the normal draw any more; on a 1x1 weight the sample std is 0 and the weight is infinite: "
    "init_params(jax.random.key(0), 1, 1, 1)['w1'] is [[inf]]; at 512x512 max |z| is 4.97, not the draw's.",
)
def _rt15_init_params_standardised_draw(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    z1 = jax.random.normal(k1, (in_dim, hidden))
    z2 = jax.random.normal(k2, (hidden, out_dim))
    return {
        "w1": z1 / jnp.std(z1) / jnp.sqrt(in_dim),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": z2 / jnp.std(z2) / jnp.sqrt(hidden),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "init_params",
    why="Clause 'standard normal values ... all float32': draws the normals in bfloat16 ('the model "
    "trains in bf16 later, half the RNG work') and casts to float32; dtype and scale look right, but "
    "a bf16 normal has only 128 distinct values and no |z| beyond 2.89: "
    "init_params(key(0), 512, 512, 512)['w1'] * sqrt(512) has max |z| 2.89 (a float32 draw: ~4.6).",
)
def _rt15_init_params_bf16_draw(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    k1, k2 = jax.random.split(key)
    w1 = jax.random.normal(k1, (in_dim, hidden), dtype=jnp.bfloat16).astype(jnp.float32)
    w2 = jax.random.normal(k2, (hidden, out_dim), dtype=jnp.bfloat16).astype(jnp.float32)
    return {
        "w1": w1 / jnp.sqrt(jnp.float32(in_dim)),
        "b1": jnp.zeros((hidden,), jnp.float32),
        "w2": w2 / jnp.sqrt(jnp.float32(hidden)),
        "b2": jnp.zeros((out_dim,), jnp.float32),
    }


@wrong(
    "mlp_forward",
    why="Clause 'relu(x @ w1 + b1) @ w2 + b2': mixed-precision habit, the matmuls take bf16 "
    "operands and accumulate in f32 (preferred_element_type), the result cast back to the inputs' "
    "dtype; dtypes are right, but f32 programs.data() outputs are off by up to 3.6% relative "
    "(8% on shape (7, 5, 9, 3)), f16 loses mantissa bits too.",
)
def _rt15_mlp_forward_bf16_matmul_operands(params: dict, x) -> jax.Array:
    dtype = jnp.result_type(x)

    def mm(a, b):
        return jnp.matmul(
            jnp.asarray(a).astype(jnp.bfloat16),
            jnp.asarray(b).astype(jnp.bfloat16),
            preferred_element_type=jnp.float32,
        )

    h = jax.nn.relu(mm(x, params["w1"]) + jnp.asarray(params["b1"]).astype(jnp.float32))
    out = mm(h, params["w2"]) + jnp.asarray(params["b2"]).astype(jnp.float32)
    return out.astype(dtype)


@wrong(
    "mse_loss",
    why="Clause 'Mean squared error between mlp_forward(params, x) and y' (f32 to float32's "
    "precision): computes the residuals and their mean in bfloat16 'for speed' and casts the loss "
    "back to the inputs' dtype; dtype right, but f32 data() gives 268.0 (truly 267.69), and "
    "y = mlp_forward(params, x) + 1e-3 gives 7.6e-6 (truly 1.0e-6).",
)
def _rt15_mse_loss_bf16_residuals(params: dict, x, y) -> jax.Array:
    pred = jnp.matmul(jnp.asarray(x), params["w1"]) + params["b1"]
    pred = jnp.matmul(jax.nn.relu(pred), params["w2"]) + params["b2"]
    dtype = pred.dtype
    r = pred.astype(jnp.bfloat16) - jnp.asarray(y).astype(jnp.bfloat16)
    return jnp.mean(r * r).astype(dtype)


@wrong(
    "loss_and_grad",
    why="Clause 'mse_loss and its gradient with respect to params': sanitises the gradients with "
    "jnp.nan_to_num ('never let a NaN gradient reach the optimizer'); with a NaN target "
    "(data() with y[0, 0] = nan) the loss is NaN but every NaN gradient entry comes back 0.0 "
    "(and an inf one as float max), not the gradient.",
)
def _rt15_loss_and_grad_nan_to_num(params: dict, x, y) -> tuple[jax.Array, dict]:
    def loss_fn(p):
        h = jax.nn.relu(jnp.matmul(jnp.asarray(x), p["w1"]) + p["b1"])
        pred = jnp.matmul(h, p["w2"]) + p["b2"]
        return jnp.mean(jnp.square(pred - y))

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return loss, jax.tree.map(jnp.nan_to_num, grads)


@wrong(
    "loss_and_grad",
    why="Clause 'grads has the same structure as params (same keys, shapes and dtypes)': freezes "
    "the biases' gradients at zero ('biases start at 0 and are not trained in this kata'), "
    "lax.stop_gradient on b1 and b2; loss and weight grads are right, but grads['b2'] on data() "
    "is 0 where mse's gradient is 2*mean residual per output.",
)
def _rt15_loss_and_grad_frozen_biases(params: dict, x, y) -> tuple[jax.Array, dict]:
    def loss_fn(p):
        b1 = lax.stop_gradient(p["b1"])
        b2 = lax.stop_gradient(p["b2"])
        h = jax.nn.relu(jnp.matmul(jnp.asarray(x), p["w1"]) + b1)
        pred = jnp.matmul(h, p["w2"]) + b2
        return jnp.mean(jnp.square(pred - y))

    return jax.value_and_grad(loss_fn)(params)


@wrong(
    "make_power_jit",
    why="Clause 'the programs it lowers are named after f: jit_power for a function called "
    "power': renames f before jitting so profiles say what it is (f.__name__ += '_static_n'); "
    "traces are right, but make_power_jit(power).lower(x, 3) names its module jit_power_static_n, "
    "and the caller's own f is renamed.",
)
def _rt15_make_power_jit_renamed_for_profiles(f):
    if not f.__name__.endswith("_static_n"):
        f.__name__ = f.__name__ + "_static_n"
        f.__qualname__ = f.__qualname__ + "_static_n"
    return jax.jit(f, static_argnums=1)


@wrong(
    "abs_cond",
    why="Clause 'one branch gives x, the other -x': the negative branch is jnp.abs ('that branch "
    "makes it positive'); values equal |x| for every scalar, but the branch computes abs, not a "
    "negation: swapping the branches gives x for abs_cond(np.float32(2.5)) instead of -2.5, and "
    "the jaxpr of abs_cond(np.float32(-2.5)) has abs inside the cond, no neg.",
)
def _rt15_abs_cond_abs_in_branch(x) -> jax.Array:
    return lax.cond(x < 0, jnp.abs, lambda v: v, x)


@wrong(
    "abs_where",
    why="Clause 'the select decides: it picks x or -x per element' for an unsigned dtype: for "
    "unsigned ints (|x| is x) the predicate is the constant False ('nothing is ever negative'), "
    "jnp.where(False, -x, x); a select_n is in the jaxpr but it is decided by no comparison of x: "
    "abs_where(np.array([1, 200], np.uint8)) has no lt/ge of x, only a broadcast constant.",
)
def _rt15_abs_where_unsigned_constant_predicate(x) -> jax.Array:
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return jnp.where(jnp.zeros(x.shape, bool), -x, x)
    return jnp.where(x < 0, -x, x)


_rt15_seen: set = set()


@wrong(
    "count_traces",
    why="Clause 'starting from an empty cache': simulates jit's cache with a module-level set "
    "that is never cleared, so a second count_traces call counts only signatures the first "
    "call did not see: count_traces([(np.ones(3, np.float32), 1)]) answers 1, then 0 the "
    "second time (truly 1 each time).",
)
def _rt15_count_traces_global_cache(calls: list[tuple]) -> int:
    import numpy as np

    before = len(_rt15_seen)
    for x, n in calls:
        weak = type(x) in (int, float)
        dt = np.asarray(x).dtype
        if dt == np.float64:
            dt = np.dtype(np.float32)
        elif dt == np.int64:
            dt = np.dtype(np.int32)
        elif dt == np.uint64:
            dt = np.dtype(np.uint32)
        elif dt == np.complex128:
            dt = np.dtype(np.complex64)
        _rt15_seen.add((np.shape(x), dt, weak, n))
    return len(_rt15_seen) - before
