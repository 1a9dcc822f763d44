"""Red-team wrong answers for phase 5, written from the contract only."""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong
from xla_inspect.jaxpr import iter_eqns  # noqa: F401  (a correct answer would use it)

# --- predict: vmapped_shape -------------------------------------------------------------------


def _batch_size(w_shape, v_shape, in_axes):
    w_axis, v_axis = in_axes
    if w_axis is not None:
        return w_shape[w_axis]
    return v_shape[v_axis]


@wrong(
    "vmapped_shape",
    why="contract: 'negative counts from the end'; list.insert(-1, b) puts the batch BEFORE the "
    "last axis: W (4,3,7), v (3,), in_axes (2, None), out_axes -1 -> (7, 4), want (4, 7)",
)
def insert_negative_out_axis(w_shape, v_shape, in_axes, out_axes):
    w_axis, _ = in_axes
    m = [d for i, d in enumerate(w_shape) if i != w_axis][0]
    out = [m]
    out.insert(out_axes, _batch_size(w_shape, v_shape, in_axes))
    return tuple(out)


@wrong(
    "vmapped_shape",
    why="contract: one example's W is W without its mapped axis; this takes m = w_shape[0] "
    "even when the batch sits on axis 0: W (2,4,3), v (3,2), in_axes (0, 1), out_axes 1 -> "
    "(2, 2), want (4, 2)",
)
def m_is_first_axis(w_shape, v_shape, in_axes, out_axes):
    m = w_shape[0]
    out = [m]
    axis = out_axes if out_axes >= 0 else len(out) + 1 + out_axes
    out.insert(axis, _batch_size(w_shape, v_shape, in_axes))
    return tuple(out)


# --- predict: jacobian_shapes ----------------------------------------------------------------


@wrong(
    "jacobian_shapes",
    why="contract: a leaf holds one number per pair of output and input elements, arranged as "
    "out_shape + leaf shape; this gives the flat (outputs, inputs) matrix: out (2,4), k (1,5) -> "
    "(8, 5), want (2, 4, 1, 5); scalar out, b (2,) -> (1, 2), want (2,)",
)
def flat_jacobian_matrix(out_shape, param_shapes):
    outs = math.prod(out_shape)
    return {name: (outs, math.prod(shape)) for name, shape in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="contract: jacrev(f)(params) leaf shape is out_shape + leaf shape; this puts the input "
    "axes first ('reverse mode = transposed'): out (3,), w (3,2) -> (3, 2, 3), want (3, 3, 2) "
    "(right only for a scalar output or (5,) vs (5,))",
)
def input_axes_first(out_shape, param_shapes):
    return {name: tuple(shape) + tuple(out_shape) for name, shape in param_shapes.items()}


# --- dot_flops --------------------------------------------------------------------------------


def _shape(atom):
    return tuple(atom.aval.shape)


@wrong(
    "dot_flops",
    why="contract: 'nested jaxprs included'; this counts the top-level equations only, so a dot "
    "inside lax.cond / scan / custom_jvp / checkpoint counts 0 (lax.cond(p, a@b, 2a@b): 0)",
)
def top_level_only(jaxpr):
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in inner.eqns:
        if eqn.primitive.name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            lhs = _shape(eqn.invars[0])
            k = math.prod(lhs[d] for d in lc)
            total += 2 * math.prod(_shape(eqn.outvars[0])) * k
    return total


@wrong(
    "dot_flops",
    why="contract: contracted sizes 'read from dimension_numbers: any axes, not only the last'; "
    "this uses the lhs's last axis: dot_general contracting lhs axis 0 (K=3) of (3,2,5) -> "
    "K=5; einsum 'ijk,jkl->il' contracts 12, counted as 4",
)
def last_axis_contracted(jaxpr):
    total = 0
    for eqn in iter_eqns(jaxpr):
        if eqn.primitive.name == "dot_general":
            lhs = _shape(eqn.invars[0])
            k = lhs[-1] if lhs else 1
            total += 2 * math.prod(_shape(eqn.outvars[0])) * k
    return int(total)


# --- cheaper_jacobian_mode --------------------------------------------------------------------


@wrong(
    "cheaper_jacobian_mode",
    why="contract: 'every element is an input'; this compares x.shape[0] with f(x).shape[0]: "
    "x (6,5) (30 inputs) -> R^8 answers jacfwd (6 < 8), want jacrev (30 > 8)",
)
def leading_axes(f, x):
    out = jax.eval_shape(f, x)
    n_in = x.shape[0] if x.ndim else 1
    n_out = out.shape[0] if out.shape else 1
    return "jacfwd" if n_in < n_out else "jacrev"


# --- decide: directional_derivative / hessian_vector_product ----------------------------------


@wrong(
    "directional_derivative",
    why="contract: the compiled program must do at most a quarter of the flops; this still builds "
    "the whole Jacobian, one jvp per basis vector inside lax.map: the while body is costed once, "
    "so cost_analysis reports ~2.8k flops at 16-24-8 (real work n times that, ~45k)",
)
def jacobian_columns_in_a_loop(f, x, v):
    basis = jnp.eye(x.shape[0], dtype=x.dtype)
    columns = lax.map(lambda e: jax.jvp(f, (x,), (e,))[1], basis)
    return columns.T @ v


@wrong(
    "directional_derivative",
    why="contract: the compiled program is the one measured; this hides jacfwd(f)(x) @ v in a "
    "host callback, which XLA's cost analysis cannot see (flops -1 at every size)",
)
def jacobian_on_the_host(f, x, v):
    out = jax.eval_shape(f, x)

    def host(xx, vv):
        return np.asarray(jax.jacfwd(f)(jnp.asarray(xx)) @ jnp.asarray(vv), dtype=out.dtype)

    return jax.pure_callback(host, jax.ShapeDtypeStruct(out.shape, out.dtype), x, v)


@wrong(
    "hessian_vector_product",
    why="contract: at most a quarter of the flops of building H; this builds H column by column "
    "(jvp of grad per basis vector) in lax.map, costed once per loop body: reported 3.7k flops "
    "at n=16, really 16x that",
)
def hessian_columns_in_a_loop(g, x, v):
    grad_g = jax.grad(g)
    basis = jnp.eye(x.shape[0], dtype=x.dtype)
    columns = lax.map(lambda e: jax.jvp(grad_g, (x,), (e,))[1], basis)
    return columns @ v


@wrong(
    "hessian_vector_product",
    why="contract: H @ v to float32 rounding; a central difference of grad(g) along v meets the "
    "flops budget but is off by ~1e-3 relative at eps=1e-3 in float32",
)
def finite_difference_of_grad(g, x, v):
    eps = 1e-3
    grad_g = jax.grad(g)
    return (grad_g(x + eps * v) - grad_g(x - eps * v)) / (2 * eps)


# --- per_example_grads / batched_matvec ---------------------------------------------------------


@wrong(
    "per_example_grads",
    why="contract: cost must grow linearly with the batch; jacrev of the vector of per-example "
    "losses gives the same numbers at batch-squared cost (batch 8 vs 4: 4x the flops, not 2x)",
)
def jacobian_of_loss_vector(params, xs, ys):
    def losses(p):
        return jax.vmap(lambda x, y: example_loss(p, x, y))(xs, ys)

    return jax.jacrev(losses)(params)


@wrong(
    "per_example_grads",
    why="contract/README: the optimized HLO has a few batch-wide dots and no while; lax.map of "
    "grad runs B single-example backward passes in a while loop",
)
def grads_in_a_loop(params, xs, ys):
    return lax.map(lambda xy: jax.grad(example_loss)(params, xy[0], xy[1]), (xs, ys))


@wrong(
    "batched_matvec",
    why="contract: hand in_axes to vmap as given (vmap leaves the batch where it found it, no "
    "transpose for (1, 0)); this moves every batch axis to 0 by hand first, adding a transpose "
    "of W for in_axes (1, 0) and (2, None)",
)
def batch_moved_to_front(W, vs, in_axes):
    w_axis, v_axis = in_axes
    if w_axis is not None:
        W = jnp.moveaxis(W, w_axis, 0)
        w_axis = 0
    if v_axis is not None:
        vs = jnp.moveaxis(vs, v_axis, 0)
        v_axis = 0
    return jax.vmap(matvec, in_axes=(w_axis, v_axis))(W, vs)
