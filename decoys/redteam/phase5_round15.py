"""Red team, phase 5, round 15: wrong answers that mislay an argument's role (primal vs tangent),
misread "count every dot once" as "count every distinct dot once", only recurse through tuples
that are all jaxprs, build per-example gradients from one-hot weighted batch losses, and change the data's precision before the
gradient (cast to the params' dtype, or averaging per-example gradients in bfloat16)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.extend import core as _rt15_jcore

from kata_harness.decoys import wrong


def _rt15_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def _rt15_example_loss(params, x, y):
    return _rt15_mse_loss(params, x, y)


def _rt15_eqns(jaxpr):
    return jaxpr.jaxpr.eqns if hasattr(jaxpr, "jaxpr") else jaxpr.eqns


def _rt15_dot(eqn):
    (lc, _rc), _batch = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    out = eqn.outvars[0].aval.shape
    return 2 * math.prod(out) * math.prod(lhs[a] for a in lc)


def _rt15_is_jaxpr(v):
    return isinstance(v, (_rt15_jcore.ClosedJaxpr, _rt15_jcore.Jaxpr))


# --- mlp_grad ------------------------------------------------------------------------------------


@wrong(
    "mlp_grad",
    why="Clause 'the gradient of mse_loss ... (bfloat16 params give a bfloat16 gradient)': casts x "
    "and y to the params' dtype first 'so the whole forward runs in one dtype', which rounds "
    "float32 data to bfloat16 before the loss; with bfloat16 params and float32 x, y (mlp_data's "
    "x, y with params cast to bfloat16) mse_loss itself promotes to float32, and the gradient "
    "differs (b2's by several bfloat16 ulps).",
)
def _rt15_mlp_grad_cast_data_to_params(params: dict, x, y) -> dict:
    dtype = jnp.result_type(*jax.tree.leaves(params))
    return jax.grad(_rt15_mse_loss)(params, jnp.asarray(x, dtype), jnp.asarray(y, dtype))


@wrong(
    "mlp_grad",
    why="Clause 'the gradient of mse_loss': the batch mean of per-example gradients (vmap(grad)), "
    "equal in exact arithmetic, but each per-example gradient is rounded to the leaf dtype and "
    "the mean is taken in that dtype; with bfloat16 params, x and y (mlp_ties(8, 0, (16, 32, 4), "
    "bfloat16)) it differs from grad(mse_loss) by bfloat16 rounding of every term.",
)
def _rt15_mlp_grad_mean_of_example_grads(params: dict, x, y) -> dict:
    per = jax.vmap(jax.grad(_rt15_example_loss), in_axes=(None, 0, 0))(params, x, y)
    return jax.tree.map(
        lambda g, p: jnp.mean(g, axis=0, dtype=p.dtype).astype(p.dtype), per, params
    )


# --- jvp_tangent ---------------------------------------------------------------------------------


@wrong(
    "jvp_tangent",
    why="Clause 'return (f(x), J @ v), J the Jacobian of f at x': primals and tangents handed to "
    "jax.jvp in the wrong order (jvp(f, (v,), (x,))), giving (f(v), J(v) @ x); identical for a "
    "linear f, wrong for sin_ax_norm's f at any x != v.",
)
def _rt15_jvp_tangent_primal_tangent_swapped(f, x, v) -> tuple:
    return jax.jvp(f, (v,), (x,))


# --- dot_flops -----------------------------------------------------------------------------------


@wrong(
    "dot_flops",
    why="Clause 'count every dot_general equation once, wherever it sits': read as 'count each "
    "distinct dot once', deduplicating dots by (operand shapes, dimension_numbers); in_while has "
    "the same c @ b in its condition and its body, counted once instead of twice (and two equal "
    "matmuls in one program, a @ b + c @ d with equal shapes, count half).",
)
def _rt15_dot_flops_distinct_signatures(jaxpr) -> int:
    seen = set()
    total = 0

    def walk(j):
        nonlocal total
        for eqn in _rt15_eqns(j):
            if eqn.primitive.name == "dot_general":
                key = (
                    tuple(v.aval.shape for v in eqn.invars),
                    str(eqn.params["dimension_numbers"]),
                )
                if key not in seen:
                    seen.add(key)
                    total += _rt15_dot(eqn)
            for v in eqn.params.values():
                if _rt15_is_jaxpr(v):
                    walk(v)
                elif isinstance(v, tuple):
                    for s in v:
                        if _rt15_is_jaxpr(s):
                            walk(s)

    walk(jaxpr)
    return total


@wrong(
    "dot_flops",
    why="Clause 'alone, in a tuple or a named tuple': treats a param as a tuple of jaxprs only when "
    "ALL its entries are jaxprs (to skip tuples of ints/specs); custom_linear_solve's jaxprs "
    "named tuple holds None for vecmat and transpose_solve, so in_linear_solve's two dots (matvec "
    "and solve) are never counted: 0 instead of 2 * 2 * 9 * 3 for 3x3 operands.",
)
def _rt15_dot_flops_all_jaxpr_tuples(jaxpr) -> int:
    total = 0
    for eqn in _rt15_eqns(jaxpr):
        if eqn.primitive.name == "dot_general":
            total += _rt15_dot(eqn)
        for v in eqn.params.values():
            if _rt15_is_jaxpr(v):
                total += _rt15_dot_flops_all_jaxpr_tuples(v)
            elif isinstance(v, tuple) and v and all(_rt15_is_jaxpr(s) for s in v):
                total += sum(_rt15_dot_flops_all_jaxpr_tuples(s) for s in v)
    return total


# --- directional_derivative / hessian_vector_product ---------------------------------------------


@wrong(
    "directional_derivative",
    why="Clause 'J @ v, the derivative of f at x along v': jax.jvp called with primal and tangent "
    "swapped (jvp(f, (v,), (x,))[1] = J(v) @ x); within budget and right for linear f, wrong for "
    "layer_map(tanh_pair(16, 24, 8)) at points(16)[0].",
)
def _rt15_dd_primal_tangent_swapped(f, x, v):
    return jax.jvp(f, (v,), (x,))[1]


@wrong(
    "hessian_vector_product",
    why="Clause 'H is the Hessian of g at x': forward-over-reverse with primal and tangent swapped "
    "(jvp(grad(g), (v,), (x,))[1] = H(v) @ x); equal for a quadratic g, wrong for "
    "layer_energy(w1) at points(n)[0] (H depends on the point).",
)
def _rt15_hvp_primal_tangent_swapped(g, x, v):
    return jax.jvp(jax.grad(g), (v,), (x,))[1]


@wrong(
    "hessian_vector_product",
    why="Clause 'H @ v, H the Hessian of g at x': the argument order of jax.grad's inner function "
    "mixed up: grad over y of <grad g(y), x> evaluated at y = v, i.e. H(v) @ x instead of H(x) @ v; "
    "cheap and equal for a quadratic g, wrong for layer_energy(tanh_pair(16, 24, 8)[0]) at "
    "points(16)[0].",
)
def _rt15_hvp_reverse_over_reverse_roles_swapped(g, x, v):
    return jax.grad(lambda y: jnp.vdot(jax.grad(g)(y), x))(v)


# --- per_example_grads ---------------------------------------------------------------------------


@wrong(
    "per_example_grads",
    why="Clause 'cost must grow linearly with the batch': per-example gradients by weighting the "
    "batch's losses with one-hot masks (vmap over the rows of eye(batch) of grad of the weighted "
    "batch loss): exact same numbers, but every mapped lane runs the whole batch's forward and "
    "backward, batch-squared flops (cost at batch 8 is about 4x batch 4).",
)
def _rt15_per_example_grads_one_hot_weights(params: dict, xs, ys) -> dict:
    batch = xs.shape[0]

    def weighted(p, w):
        h = jax.nn.relu(xs @ p["w1"] + p["b1"])
        err = (h @ p["w2"] + p["b2"] - ys) ** 2
        return jnp.sum(w * jnp.mean(err, axis=-1))

    eye = jnp.eye(batch, dtype=jnp.result_type(xs))
    grads = jax.vmap(jax.grad(weighted), in_axes=(None, 0))(params, eye)
    return jax.tree.map(lambda g, p: g.astype(jnp.asarray(p).dtype), grads, params)


@wrong(
    "mlp_grad",
    why="Clause 'same structure and dtypes as params': casts every gradient leaf to the params' "
    "common (promoted) dtype 'so the pytree is uniform'; with mixed params (w1, w2 bfloat16, b1, "
    "b2 float32) the weight gradients come back float32 instead of bfloat16.",
)
def _rt15_mlp_grad_common_dtype(params: dict, x, y) -> dict:
    common = jnp.result_type(*jax.tree.leaves(params))
    return jax.tree.map(lambda g: g.astype(common), jax.grad(_rt15_mse_loss)(params, x, y))
