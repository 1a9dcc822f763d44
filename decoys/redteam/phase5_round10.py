"""Red-team wrong answers for phase 5, round 10, written from the contract only.

New kinds: dot flops whose output size is rebuilt from the free dims (batch dims dropped), dot
flops reading the lhs shape at the rhs's contracting indices, a cheaper-mode rule that compares
ranks, a batched matvec that brings the batch forward by reshape, J @ v through a linearization
at the origin (J taken as constant), H @ v as the gradient with respect to the tangent, per-example
gradients in fixed chunks of 4 (remainder dropped), a vmapped shape that drops the mapped axis by
tuple slicing (a negative axis removes nothing), and Jacobian shapes that lose a scalar leaf to
tree flattening. (ct @ J as the gradient of Re<ct, f(x)>, exact on the real x and f(x) the
contract covers, was deleted as not wrong.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np  # noqa: F401

from kata_harness.decoys import wrong

# --- dot_flops -------------------------------------------------------------------------------


def _rt10_eqns(jaxpr):
    j = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in j.eqns:
        yield eqn
        for p in eqn.params.values():
            items = p if isinstance(p, (tuple, list)) else (p,)
            for q in items:
                if hasattr(q, "eqns") or hasattr(q, "jaxpr") and hasattr(q.jaxpr, "eqns"):
                    yield from _rt10_eqns(q)


@wrong(
    "dot_flops",
    why="'Batch dimensions are part of the output': rebuilds the output size as lhs free dims x rhs"
    " free dims (everything neither contracted nor batch), so every batch dimension is dropped;"
    " right on every dot without batch dims (incl. vmap with in_axes (None, 0)), wrong on"
    " vmap(matvec, in_axes=(0, 0)) of W (8, 4, 3), vs (8, 3) (24 instead of 192) and on"
    " einsum('bij,bjk->bik') of (8, 4, 3), (8, 3, 5) (120 instead of 960)",
)
def _rt10_dot_flops_batch_dropped(jaxpr):
    total = 0
    for eqn in _rt10_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        ls = eqn.invars[0].aval.shape
        rs = eqn.invars[1].aval.shape
        k = math.prod(int(ls[d]) for d in lc)
        lfree = math.prod(int(s) for d, s in enumerate(ls) if d not in lc and d not in lb)
        rfree = math.prod(int(s) for d, s in enumerate(rs) if d not in rc and d not in rb)
        total += 2 * lfree * rfree * k
    return total


@wrong(
    "dot_flops",
    why="'product of the contracted dimension sizes, read from dimension_numbers': indexes the lhs"
    " shape with the RHS's contracting indices (a mix-up of lc/rc); right whenever both sides"
    " contract the same axis number (x @ W.T-style, vector . vector), wrong on a plain (5, 3) @"
    " (3, 7) matmul (lc=(1,), rc=(0,): reads lhs.shape[0] = 5 instead of 3: 350, not 210)",
)
def _rt10_dot_flops_rhs_dims_on_lhs(jaxpr):
    total = 0
    for eqn in _rt10_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, rc), _ = eqn.params["dimension_numbers"]
        ls = eqn.invars[0].aval.shape
        k = math.prod(int(ls[d]) for d in rc)
        out = math.prod(int(s) for s in eqn.outvars[0].aval.shape)
        total += 2 * out * k
    return total


# --- cheaper_jacobian_mode -------------------------------------------------------------------


@wrong(
    "cheaper_jacobian_mode",
    why="'predict ... from the shapes of x and f(x)': compares the RANKS of x and f(x) ('more output"
    " axes -> more outputs -> jacfwd'), not their element counts; right for vector -> matrix and"
    " matrix -> scalar, wrong for x (64,) -> f(x) (2, 2) (4 outputs, 64 inputs: jacrev is cheaper,"
    " this says jacfwd) and for x (2, 2) -> f(x) (64,)",
)
def _rt10_cheaper_mode_rank(f, x):
    out = jax.eval_shape(f, x)
    return "jacfwd" if len(out.shape) > len(jnp.shape(x)) else "jacrev"


# --- batched_matvec --------------------------------------------------------------------------


@wrong(
    "batched_matvec",
    why="'in_axes (1, 0): W is (m, batch, n)': brings the batch axis to the front with reshape"
    " instead of moveaxis, then vmaps matvec over axis 0; right for in_axes (0, x) and (None, x)"
    " (nothing moved), wrong values for (1, 0) or (2, None) with m, batch > 1 (W (3, 4, 5) is"
    " reinterpreted, not transposed)",
)
def _rt10_batched_matvec_reshape(W, vs, in_axes):
    wa, va = in_axes

    def matvec(W_, v_):
        return W_ @ v_

    if wa is not None and wa % W.ndim != 0:
        ax = wa % W.ndim
        shape = list(W.shape)
        b = shape.pop(ax)
        W = W.reshape((b, *shape))
        wa = 0
    return jax.vmap(matvec, in_axes=(wa, va))(W, vs)


# --- directional_derivative ------------------------------------------------------------------


@wrong(
    "directional_derivative",
    why="'J @ v, the derivative of f AT x along v': linearizes f at the origin (J taken as constant,"
    " true of the A @ x example) and applies it to v; cheap and right for every linear f, wrong for"
    " f(x) = tanh(A @ x) at x != 0",
)
def _rt10_dd_linearize_at_origin(f, x, v):
    _, f_jvp = jax.linearize(f, jnp.zeros_like(x))
    return f_jvp(v)


# --- hessian_vector_product ------------------------------------------------------------------


@wrong(
    "hessian_vector_product",
    why="'H @ v is the derivative of the gradient along v': differentiates the directional"
    " derivative t -> jvp(g, x, t) with respect to the TANGENT t instead of the point x, which gives"
    " grad g(x) (linear in t), not H @ v; wrong on g = sum(x**3) (3x**2, not 6 x * v), and v = 0"
    " gives grad g(x) instead of 0",
)
def _rt10_hvp_grad_wrt_tangent(g, x, v):
    return jax.grad(lambda t: jax.jvp(g, (x,), (t,))[1])(v)


# --- per_example_grads -----------------------------------------------------------------------


@wrong(
    "per_example_grads",
    why="'every leaf gets a leading batch axis': vmaps grad(example_loss) over chunks of 4 examples"
    " in lax.map (memory-bounded, linear cost) with batch // 4 chunks, so a remainder is dropped;"
    " right at batch 4 and 8, wrong shape at batch 6 (leading axis 4) or 3 (leading axis 0)",
)
def _rt10_per_example_grads_chunks_of_4(params, xs, ys):
    def example_loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    chunk = 4
    n = xs.shape[0] // chunk
    xs_c = xs[: n * chunk].reshape((n, chunk) + xs.shape[1:])
    ys_c = ys[: n * chunk].reshape((n, chunk) + ys.shape[1:])
    per_chunk = jax.lax.map(
        lambda xy: jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xy[0], xy[1]),
        (xs_c, ys_c),
    )
    return jax.tree.map(lambda g: g.reshape((n * chunk,) + g.shape[2:]), per_chunk)


# --- vmapped_shape ---------------------------------------------------------------------------


@wrong(
    "vmapped_shape",
    why="'an axis may be counted from the end': removes the mapped axis with tuple slicing"
    " s[:a] + s[a+1:], which for a = -1 gives s[:-1] + s[0:] (the whole shape again); right for"
    " every non-negative in_axes, wrong for W (4, 3, 7), v (3,), in_axes (-1, None), out_axes 0:"
    " (7, 4, 3, 4, 3) instead of (7, 4)",
)
def _rt10_vmapped_shape_slice_remove(w_shape, v_shape, in_axes, out_axes):
    wa, va = in_axes
    batch = w_shape[wa] if wa is not None else v_shape[va]
    w1 = tuple(w_shape) if wa is None else tuple(w_shape[:wa]) + tuple(w_shape[wa + 1 :])
    v1 = tuple(v_shape) if va is None else tuple(v_shape[:va]) + tuple(v_shape[va + 1 :])
    del v1
    one = tuple(w1[:-1])  # one matvec: W (m, n) @ v (n,) -> (m,)
    pos = out_axes if out_axes >= 0 else len(one) + 1 + out_axes
    res = list(one)
    res.insert(pos, batch)
    return tuple(res)


# --- jacobian_shapes -------------------------------------------------------------------------


@wrong(
    "jacobian_shapes",
    why="'one per name, as jacrev gives': builds the result from jax.tree's flattened leaves of a"
    " dict of tuples, which flattens each shape tuple into its ints (a scalar () leaf vanishes),"
    " then zips names with the leaves' groups by order of NONEMPTY shapes: {'a': (), 'b': (3,)}"
    " with out (2,) gives {'b': (2, 3)} and drops 'a' (should be {'a': (2,), 'b': (2, 3)})",
)
def _rt10_jacobian_shapes_tree_leaves(out_shape, param_shapes):
    names = sorted(param_shapes)
    groups = [tuple(param_shapes[k]) for k in names]
    # what tree flattening keeps: a tuple with no ints has no leaves
    kept = [(k, s) for k, s in zip(names, groups) if jax.tree.leaves(s)]
    return {k: tuple(out_shape) + s for k, s in kept}
