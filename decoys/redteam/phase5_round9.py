"""Red-team wrong answers for phase 5, round 9, written from the contract only.

New kinds: a jacfwd built by hand whose basis axis is moved with `.T` (reverses EVERY axis of a
rank-2+ output), a negative out_axes handed to list.insert (off by one from the end), dot flops
that multiply a scan body by its trip count or skip a while loop's condition, J @ v through a
materialized linearization, H @ v as the curvature along v times v, H @ v through jacfwd's
gradient (n forward passes), the primal slot of jvp(grad g) taken for the tangent, a cheaper-mode
rule that counts the outputs of a matrix-valued f by its rows times its rank, and a Jacobian-shape
rule that treats a scalar leaf as one element of shape (1,).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np  # noqa: F401

from kata_harness.decoys import wrong

# --- jacobian -------------------------------------------------------------------------------


@wrong(
    "jacobian",
    why="'shape f(x).shape + x.shape': mode 'fwd' pushes one basis tangent per input with vmap(jvp)"
    " (result (n,) + out) and moves the basis axis last with `.T`, which reverses EVERY axis: right"
    " for a vector output, wrong values for f: R^3 -> R^(2x4) (out axes come back swapped, then"
    " reshaped to (2, 4, 3) with scrambled entries)",
)
def _rt9_jacobian_fwd_basis_T(f, x, mode):
    if mode == "rev":
        return jax.jacrev(f)(x)
    out = jax.eval_shape(f, x)
    basis = jnp.eye(x.size, dtype=x.dtype).reshape((x.size,) + x.shape)
    cols = jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1])(basis)
    return cols.T.reshape(out.shape + x.shape)


# --- vmapped_shape --------------------------------------------------------------------------


def _rt9_batch(w_shape, v_shape, in_axes):
    wa, va = in_axes
    return w_shape[wa] if wa is not None else v_shape[va]


@wrong(
    "vmapped_shape",
    why="'vmap puts the batch axis where out_axes says (negative counts from the end)': inserts the"
    " batch with list.insert(out_axes, batch) into ONE example's output, so out_axes=-1 lands"
    " before the last axis: W (4, 3, 7), v (3,), in_axes (2, None), out_axes -1 gives (7, 4)"
    " instead of (4, 7) (right for 0, 1 and -2)",
)
def _rt9_vmapped_shape_insert_negative(w_shape, v_shape, in_axes, out_axes):
    wa, _ = in_axes
    batch = _rt9_batch(w_shape, v_shape, in_axes)
    w = list(w_shape)
    if wa is not None:
        del w[wa]
    out = [w[0]]
    out.insert(out_axes, batch)
    return tuple(out)


# --- dot_flops ------------------------------------------------------------------------------


def _rt9_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(getattr(value, "jaxpr", None), "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt9_subjaxprs(v)


def _rt9_dot(eqn):
    (lc, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    k = math.prod(int(lhs[d]) for d in lc)
    return 2 * math.prod(int(s) for s in eqn.outvars[0].aval.shape) * k


def _rt9_count(jaxpr, skip=(), times_length=False):
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            total += _rt9_dot(eqn)
        mult = (
            int(eqn.params.get("length", 1))
            if (times_length and eqn.primitive.name == "scan")
            else 1
        )
        for key, val in eqn.params.items():
            if key in skip:
                continue
            for sub in _rt9_subjaxprs(val):
                total += mult * _rt9_count(sub, skip, times_length)
    return total


@wrong(
    "dot_flops",
    why="'count every dot_general equation once, wherever it sits (a loop body once, not once per"
    " iteration)': multiplies a scan body's dots by the scan's `length` (the real work), so"
    " lax.scan(body with a (4,4)@(4,4) dot, length=3) gives 3*128 = 384 instead of 128",
)
def _rt9_dot_flops_scan_times_length(jaxpr):
    return _rt9_count(jaxpr, times_length=True)


@wrong(
    "dot_flops",
    why="'a while loop's condition and body': opens every param holding a jaxpr EXCEPT a while's"
    " `cond_jaxpr` (treated as loop bookkeeping), so while_loop(lambda c: sum(c @ b) < 10, lambda"
    " c: (c @ b) / 2, a) counts one dot instead of two",
)
def _rt9_dot_flops_skip_while_cond(jaxpr):
    return _rt9_count(jaxpr, skip=("cond_jaxpr",))


# --- cheaper_jacobian_mode ------------------------------------------------------------------


@wrong(
    "cheaper_jacobian_mode",
    why="'outputs likewise every element of f(x)': counts the outputs as rows * rank (treats each"
    " further axis as one more output vector, not a product): f: R^10 -> R^(4x4) has 16 outputs"
    " (jacfwd cheaper, 10 < 16) but this counts 4 * 2 = 8 < 10 and answers 'jacrev'; right for"
    " every vector or scalar output",
)
def _rt9_cheaper_mode_rows_times_rank(f, x):
    out = jax.eval_shape(f, x)
    n_out = out.shape[0] * out.ndim if out.ndim else 1
    return "jacfwd" if x.size < n_out else "jacrev"


# --- jacobian_shapes ------------------------------------------------------------------------


@wrong(
    "jacobian_shapes",
    why="'one number per pair of output and input elements': a scalar leaf () is counted as one"
    " element of shape (1,) (np.atleast_1d on each leaf shape), so out (2, 4) with a scalar leaf"
    " 'a' gives (2, 4, 1) instead of (2, 4); right for every leaf of rank >= 1",
)
def _rt9_jacobian_shapes_atleast_1d_leaf(out_shape, param_shapes):
    return {
        name: tuple(out_shape) + (tuple(shape) if len(shape) else (1,))
        for name, shape in param_shapes.items()
    }


# --- directional_derivative -----------------------------------------------------------------


@wrong(
    "directional_derivative",
    why="budget ('at most a quarter of jacfwd(f)(x) @ v's flops'): linearizes f, then materializes"
    " the linear map by vmapping it over the identity basis and multiplies by v: right values, but"
    " n tangent passes like jacfwd (f: R^16 -> R^8 with 24 hidden: about the original's flops)",
)
def _rt9_dd_linearize_materialize(f, x, v):
    _, f_lin = jax.linearize(f, x)
    J = jax.vmap(f_lin, out_axes=-1)(jnp.eye(x.shape[0], dtype=x.dtype))
    return J @ v


# --- hessian_vector_product -----------------------------------------------------------------


@wrong(
    "hessian_vector_product",
    why="'H @ v': returns the curvature along v (v^T H v, second derivative of t -> g(x + t v) at"
    " 0) times v, a vector parallel to v: equals H v only when v is an eigenvector of H (and for"
    " v = 0); for g = layer_energy(w1) on a random x, v it differs",
)
def _rt9_hvp_curvature_times_v(g, x, v):
    curv = jax.grad(jax.grad(lambda t: g(x + t * v)))(jnp.zeros((), x.dtype))
    return curv * v


@wrong(
    "hessian_vector_product",
    why="budget: H v = jvp of the gradient along v, but the gradient is taken with jax.jacfwd(g)"
    " (one tangent per input: n forward passes) so the program costs about the whole Hessian's"
    " flops (n = 32 inputs: far above a quarter of hessian(g)(x) @ v); values right",
)
def _rt9_hvp_jvp_of_jacfwd(g, x, v):
    return jax.jvp(jax.jacfwd(g), (x,), (v,))[1]


@wrong(
    "hessian_vector_product",
    why="'H @ v': takes slot [0] of jax.jvp(grad(g), (x,), (v,)) (the primal output, grad g(x))"
    " for the tangent: right only where grad g(x) happens to equal H v; for layer_energy at a"
    " random x it is the gradient, and for v = 0 it is not 0",
)
def _rt9_hvp_primal_slot(g, x, v):
    return jax.jvp(jax.grad(g), (x,), (v,))[0]
