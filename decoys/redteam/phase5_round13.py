"""Red team, phase 5, round 13: plausible wrong answers (each wrong per the contract)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt13_inner(v):
    # nested jaxprs: closed (.jaxpr) or open (.eqns)
    if hasattr(v, "eqns"):
        return v
    if hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
        return v.jaxpr
    return None


def _rt13_one(eqn, n_out_fn=None):
    (lc, _rc), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    k = 1
    for d in lc:
        k *= int(lhs[d])
    n_out = 1
    for d in eqn.outvars[0].aval.shape:
        n_out *= int(d)
    if n_out_fn is not None:
        n_out = n_out_fn(n_out)
    return 2 * n_out * k


def _rt13_walk(jaxpr, seq_types=(tuple, list), n_out_fn=None, cond_twice=False, exact=False):
    j = _rt13_inner(jaxpr)
    total = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            total += _rt13_one(eqn, n_out_fn)
        if cond_twice and eqn.primitive.name == "cond":
            for br in eqn.params["branches"]:
                total += _rt13_walk(br, seq_types, n_out_fn, cond_twice, exact)
        for v in eqn.params.values():
            stack = [v]
            while stack:
                x = stack.pop()
                inner = _rt13_inner(x)
                if inner is not None:
                    total += _rt13_walk(inner, seq_types, n_out_fn, cond_twice, exact)
                elif (type(x) in seq_types) if exact else isinstance(x, (tuple, list)):
                    stack.extend(x)
    return total


@wrong(
    "dot_flops",
    why="'2 * (elements of the output)' and 'a dot that contracts every axis has a scalar output, "
    "one element': clamps the element count to at least 1 (max(1, size)) to make scalar outputs "
    "count, so a dot with an empty output, e.g. (0, 8) @ (8, 3), counts 2*1*8 = 16 instead of 0",
)
def _rt13_dot_flops_empty_output_counts_one(jaxpr) -> int:
    return int(_rt13_walk(jaxpr, n_out_fn=lambda n: max(1, n)))


@wrong(
    "dot_flops",
    why="'alone, in a tuple or a named tuple': recurses only into containers whose type is "
    "exactly tuple or list (type(v) in (tuple, list)), so custom_linear_solve's jaxprs, held "
    "in a named tuple, are never opened: a lax.custom_linear_solve with a matvec dot counts 0",
)
def _rt13_dot_flops_exact_tuple_type(jaxpr) -> int:
    return int(_rt13_walk(jaxpr, seq_types=(tuple, list), exact=True))


@wrong(
    "dot_flops",
    why="'count every dot_general equation once, wherever it sits': special-cases cond to add "
    "every branch, and the generic param walk opens `branches` again, so a dot inside "
    "lax.cond(p, lambda a: a @ a, lambda a: a, x) for (4, 4) x counts 256 instead of 128",
)
def _rt13_dot_flops_cond_branches_twice(jaxpr) -> int:
    return int(_rt13_walk(jaxpr, cond_twice=True))


@wrong(
    "jacobian_shapes",
    why="'a dict name -> shape tuple, one per name': takes the leaves with jax.tree_util "
    "(is_leaf=tuple), which orders them by sorted key, and zips them with the names in insertion "
    "order: {'w': (3,), 'b': (2,)} with out (4,) gives w->(4, 2), b->(4, 3)",
)
def _rt13_jacobian_shapes_sorted_leaves(out_shape: tuple, param_shapes: dict) -> dict:
    leaves = jax.tree_util.tree_leaves(param_shapes, is_leaf=lambda t: isinstance(t, tuple))
    return {name: tuple(out_shape) + tuple(s) for name, s in zip(param_shapes, leaves)}


@wrong(
    "jacobian_shapes",
    why="'one per name' (any shape valid): filters leaves with `if shape`, meant to drop "
    "'empty' ones, which drops scalar params (shape ()), a one-element leaf: {'s': (), 'w': (3,)} "
    "with out (2,) loses 's' (expected {'s': (2,), 'w': (2, 3)})",
)
def _rt13_jacobian_shapes_drop_scalar_leaf(out_shape: tuple, param_shapes: dict) -> dict:
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items() if s}


def _rt13_matvec(W, v):
    return W @ v


@wrong(
    "batched_matvec",
    why="'-> jax.Array': hands back the vmapped result as a NumPy array (np.asarray, e.g. to "
    "print it), a numpy.ndarray not a jax.Array, on any input, e.g. (None, 0) with W (3, 4)",
)
def _rt13_batched_matvec_numpy_result(W, vs, in_axes: tuple) -> jax.Array:
    out = jax.vmap(_rt13_matvec, in_axes=in_axes)(W, vs)
    return np.asarray(out)


@wrong(
    "jvp_tangent",
    why="'shaped and typed like f(x)': casts the tangent to jnp.result_type(f(x), v), thinking "
    "tangents promote with the direction; for f = lambda x: (2 * x).astype(jnp.bfloat16) and "
    "float32 x, v, J @ v comes back float32 instead of bfloat16",
)
def _rt13_jvp_tangent_promote_with_v(f, x, v) -> tuple:
    y, t = jax.jvp(f, (x,), (v,))
    return y, t.astype(jnp.result_type(y, v))


@wrong(
    "vjp_cotangent",
    why="'shaped and typed like x': casts ct @ J to jnp.result_type(x, ct); for bfloat16 x and "
    "f = lambda x: x.astype(jnp.float32) ** 2 (ct float32) the result is float32, not bfloat16",
)
def _rt13_vjp_cotangent_promote_with_ct(f, x, ct) -> jax.Array:
    _, pullback = jax.vjp(f, x)
    (g,) = pullback(ct)
    return g.astype(jnp.result_type(x, ct))


@wrong(
    "vmapped_shape",
    why="'in_axes counted from either end': normalizes W's negative axis against rank 2 (the rank "
    "matvec sees) instead of W's real rank 3, so w (5, 7, 9), in_axes (-1, None), v (7,) reads "
    "batch w_shape[1] = 7: (7, 5) instead of (9, 5)",
)
def _rt13_vmapped_shape_w_neg_against_example_rank(w_shape, v_shape, in_axes, out_axes) -> tuple:
    wa, va = in_axes
    if wa is not None:
        a = wa + 2 if wa < 0 else wa
        batch = w_shape[a]
        rest = [d for i, d in enumerate(w_shape) if i != (wa % len(w_shape))]
        m = rest[0]
    else:
        b = va + len(v_shape) if va < 0 else va
        batch = v_shape[b]
        m = w_shape[0]
    out = [m]
    pos = out_axes if out_axes >= 0 else out_axes + 2
    out.insert(pos, batch)
    return tuple(int(d) for d in out)


@wrong(
    "per_example_grads",
    why="'every leaf gets a leading batch axis (and keeps its dtype)': vmaps the gradient with "
    "out_axes=-1 then moves the axis with jnp.moveaxis(g, -1, 0) only for weight leaves (rank 3 once batched), "
    "so bias gradients (rank 1) come back (out, batch) not (batch, out) when the batch differs",
)
def _rt13_per_example_grads_moveaxis_rank2_only(params: dict, xs, ys) -> dict:
    def _loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    g = jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0), out_axes=-1)(params, xs, ys)
    return {k: (jnp.moveaxis(v, -1, 0) if v.ndim == 3 else v) for k, v in g.items()}
