"""Red-team wrong answers for phase 5, round 6, written from the contract only."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt6_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


# ---------------------------------------------------------------- mlp_grad
@wrong(
    "mlp_grad",
    why="'same dtypes as params: bfloat16 params give a bfloat16 gradient': casts params to x's "
    "dtype first ('so the dots do not mix precisions'); right whenever params and x share a "
    "dtype, wrong for bfloat16 params with a float32 x (the gradient comes back float32)",
)
def _rt6_mlp_grad_params_to_x_dtype(params, x, y):
    p = jax.tree.map(lambda a: jnp.asarray(a).astype(jnp.asarray(x).dtype), params)
    return jax.grad(_rt6_mse_loss)(p, x, y)


# ---------------------------------------------------------------- jacobian
@wrong(
    "jacobian",
    why="'shape f(x).shape + x.shape', fwd built column by column: stacks the jvp columns "
    "(in, *out) and reshapes (not transposes) them to out + in; the numbers are scrambled for "
    "any non-trivial f (e.g. (3, 5) wide Jacobian), right only when f or x has one element",
)
def _rt6_jacobian_reshape_not_transpose(f, x, mode):
    if mode == "rev":
        return jax.jacrev(f)(x)
    x = jnp.asarray(x)
    basis = jnp.eye(x.size, dtype=x.dtype).reshape((x.size, *x.shape))
    cols = jax.vmap(lambda e: jax.jvp(f, (x,), (e,))[1])(basis)
    out_shape = cols.shape[1:]
    return cols.reshape(tuple(out_shape) + tuple(x.shape))


# ---------------------------------------------------------------- dot_flops
def _rt6_subjaxprs(value, exact=False):
    core = getattr(value, "jaxpr", None)
    if hasattr(value, "eqns"):
        yield value.jaxpr if hasattr(value, "consts") and core is not None else value
    elif (type(value) in (tuple, list)) if exact else isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt6_subjaxprs(item, exact)


def _rt6_dot(eqn):
    (lc, rc), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    out = eqn.outvars[0].aval.shape
    return 2 * math.prod(out) * math.prod(lhs[d] for d in lc)


def _rt6_eqns(jaxpr):
    return jaxpr.jaxpr.eqns if hasattr(jaxpr, "consts") else jaxpr.eqns


@wrong(
    "dot_flops",
    why="'count every dot_general equation once, wherever it sits': skips a nested jaxpr whose "
    "printed text it has already counted ('a loop body once'); wrong when two branches of a "
    "cond/switch are the same program text, e.g. lax.cond(p, lambda: a @ b, lambda: a @ b): "
    "two dots, counted as one",
)
def _rt6_dot_flops_dedupe_by_text(jaxpr):
    seen = set()

    def walk(j):
        total = 0
        for eqn in _rt6_eqns(j):
            if eqn.primitive.name == "dot_general":
                total += _rt6_dot(eqn)
            for v in eqn.params.values():
                for sub in _rt6_subjaxprs(v):
                    key = str(sub)
                    if key in seen:
                        continue
                    seen.add(key)
                    total += walk(sub)
        return total

    return int(walk(jaxpr))


@wrong(
    "dot_flops",
    why="'alone, in a tuple or a named tuple': opens params holding a jaxpr or a plain "
    "tuple/list of them (type(v) is tuple), not a named tuple; wrong on custom_linear_solve "
    "(its matvec and solve dots sit in a named tuple) -> counts 0 for lax.custom_linear_solve",
)
def _rt6_dot_flops_exact_tuple(jaxpr):
    def walk(j):
        total = 0
        for eqn in _rt6_eqns(j):
            if eqn.primitive.name == "dot_general":
                total += _rt6_dot(eqn)
            for v in eqn.params.values():
                for sub in _rt6_subjaxprs(v, exact=True):
                    total += walk(sub)
        return total

    return int(walk(jaxpr))


# ---------------------------------------------------------------- directional_derivative
@wrong(
    "directional_derivative",
    why="'every call is held to the budget ... called eagerly, every dot it executes is "
    "counted': the transpose trick (vjp of the vjp) instead of one jvp; compiled, XLA prunes it "
    "to a jvp's cost, but eagerly it runs forward, pullback and the pullback's transpose: "
    "1092 dot flops against a budget of 932 (a quarter of jacfwd(f)(x) @ v) on the 9-13-5 tanh "
    "pair",
)
def _rt6_dd_double_vjp(f, x, v):
    y, pullback = jax.vjp(f, x)
    u0 = jnp.zeros_like(y)
    _, pull_pull = jax.vjp(lambda u: pullback(u)[0], u0)
    return pull_pull(v)[0]


# ---------------------------------------------------------------- vmapped_shape
@wrong(
    "vmapped_shape",
    why="tests 'if in_axes[0]:' for 'W is mapped': axis 0 is falsy, so a W batched on axis 0 "
    "keeps its batch axis and m is read as the batch size; wrong on w (2, 4, 3), v (3, 2), "
    "in_axes (0, 1), out_axes 1: says (2, 2), vmap gives (4, 2)",
)
def _rt6_vmapped_shape_truthy_axis(w_shape, v_shape, in_axes, out_axes):
    wa, va = in_axes
    batch = w_shape[wa] if wa is not None else v_shape[va]
    rows = list(w_shape)
    if wa:
        del rows[wa]
    m = rows[0]
    out = [m]
    pos = out_axes if out_axes >= 0 else out_axes + 2
    out.insert(pos, batch)
    return tuple(out)


# ---------------------------------------------------------------- jacobian_shapes
@wrong(
    "jacobian_shapes",
    why="'one number per pair of output and input elements' read as ravel_pytree's view: each "
    "leaf flattened to one input axis, out_shape + (leaf size,); wrong on any leaf of rank != 1, "
    "e.g. out (3,), w (3, 2): says (3, 6), jacrev gives (3, 3, 2); a scalar leaf gives (..., 1)",
)
def _rt6_jacobian_shapes_raveled_leaf(out_shape, param_shapes):
    return {k: tuple(out_shape) + (math.prod(s),) for k, s in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="'a dict name -> shape tuple' for every leaf: skips leaves with no elements ('nothing to "
    "differentiate'); wrong on a zero-size leaf, e.g. out (2,), {'w': (0, 3), 'b': (3,)}: the "
    "'w' key is missing, jacrev gives (2, 0, 3)",
)
def _rt6_jacobian_shapes_skip_empty(out_shape, param_shapes):
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items() if math.prod(s) > 0}


# ---------------------------------------------------------------- cheaper_jacobian_mode
@wrong(
    "cheaper_jacobian_mode",
    why="'every element is an input': counts inputs as x.size but outputs as the number of "
    "output *rows* (f(x).shape[0], or 1 for a scalar); wrong on f: R^5 -> R^(2x8): 5 inputs, "
    "16 outputs, jacfwd is cheaper, this says jacrev (5 > 2)",
)
def _rt6_cheaper_mode_rows_out(f, x):
    out = jax.eval_shape(f, x)
    n_out = out.shape[0] if out.shape else 1
    return "jacfwd" if np.size(x) < n_out else "jacrev"


# ---------------------------------------------------------------- per_example_grads
@wrong(
    "per_example_grads",
    why="'the gradient of example_loss for each example': maps over xs but treats ys as shared "
    "(in_axes (None, 0, None)); example_loss then broadcasts (out,) against the whole (batch, "
    "out) ys, averaging over every target: wrong values for any batch > 1 with distinct ys",
)
def _rt6_per_example_shared_ys(params, xs, ys):
    def loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    return jax.vmap(jax.grad(loss), in_axes=(None, 0, None))(params, xs, ys)
