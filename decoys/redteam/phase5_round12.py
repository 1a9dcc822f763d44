"""Red team, phase 5, round 12: plausible wrong answers (each wrong per the contract)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from kata_harness.decoys import wrong


def _rt12_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def _rt12_example_loss(params, x, y):
    return _rt12_mse_loss(params, x, y)


@wrong(
    "mlp_grad",
    why="'same structure and dtypes as params': rebuilds the gradient as a plain dict comprehension "
    "to cast each leaf to its param's dtype; for params given as a collections.OrderedDict (a "
    "dict, keys w1, b1, w2, b2) the result is a plain dict, another pytree structure "
    "(jax.tree.structure differs, tree_map(params, grads) raises)",
)
def _rt12_mlp_grad_plain_dict(params: dict, x, y) -> dict:
    grads = jax.grad(_rt12_mse_loss)(params, x, y)
    return {k: jnp.asarray(g).astype(jnp.asarray(params[k]).dtype) for k, g in grads.items()}


def _rt12_sub(v):
    # only closed jaxprs (they have .consts): pjit, cond branches, scan, while, custom_jvp/vjp
    if hasattr(v, "consts") and hasattr(v, "jaxpr"):
        yield v.jaxpr
    elif isinstance(v, (tuple, list)):
        for e in v:
            yield from _rt12_sub(e)


def _rt12_walk(j, sub):
    j = j.jaxpr if hasattr(j, "consts") else j
    for eqn in j.eqns:
        yield eqn
        for v in eqn.params.values():
            for s in sub(v):
                yield from _rt12_walk(s, sub)


def _rt12_sub_all(v):
    if hasattr(v, "eqns") and hasattr(v, "invars"):
        yield v
    elif hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
        yield v.jaxpr
    elif isinstance(v, (tuple, list)):
        for e in v:
            yield from _rt12_sub_all(e)


def _rt12_prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


@wrong(
    "dot_flops",
    why="'Batch dimensions are part of the output': counts output elements as (lhs non-contracted "
    "dims) x (rhs non-contracted dims), so batch dims are counted twice; right for every "
    "unbatched dot, wrong for jax.vmap(jnp.matmul) on (8,4,3),(8,3): 2*8*4*8*3 = 1536, not 192",
)
def _rt12_dot_flops_batch_twice(jaxpr) -> int:
    total = 0
    for eqn in _rt12_walk(jaxpr, _rt12_sub_all):
        if eqn.primitive.name == "dot_general":
            (lc, rc), _ = eqn.params["dimension_numbers"]
            ls, rs = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
            k = _rt12_prod(ls[d] for d in lc)
            lfree = _rt12_prod(s for i, s in enumerate(ls) if i not in lc)
            rfree = _rt12_prod(s for i, s in enumerate(rs) if i not in rc)
            total += 2 * lfree * rfree * k
    return total


@wrong(
    "vmapped_shape",
    why="'in_axes ... negative ones counted from the end': normalises every negative axis with "
    "v's rank (copy-paste), so a negative W axis is counted from the end of the wrong shape: "
    "w (4,6,3), v (3,6), in_axes (-2,-1), out_axes 0 gives (6,6) instead of (6,4) (W's axis -2 taken as axis 0, so m is read as 6)",
)
def _rt12_vmapped_shape_norm_with_v_rank(
    w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int
) -> tuple:
    rank = len(v_shape)
    wa, va = in_axes
    wa = wa % rank if wa is not None and wa < 0 else wa
    va = va % rank if va is not None and va < 0 else va
    if va is not None:
        batch = v_shape[va]
    else:
        batch = w_shape[wa]
    w = list(w_shape)
    if wa is not None:
        del w[wa]
    m = w[0]
    out = [m]
    pos = out_axes if out_axes >= 0 else out_axes + 2
    out.insert(pos, batch)
    return tuple(out)


@wrong(
    "hessian_vector_product",
    why="'H @ v, where H is the Hessian of g': uses the Gauss-Newton / Fisher approximation "
    "H ~ grad(g) grad(g)^T, so returns grad(g)(x) * (grad(g)(x) . v); cheap, but wrong for any g "
    "with curvature, e.g. g = sum(sin(x) * x) at x = 0: H = 2I, so H @ v = 2v, while this gives 0",
)
def _rt12_hvp_gauss_newton(g, x, v) -> jax.Array:
    gx = jax.grad(g)(x)
    return gx * jnp.dot(gx, v)


@wrong(
    "directional_derivative",
    why="'J @ v, the derivative of f at x along v': the textbook directional derivative grad . v "
    "taken of the summed outputs (one vjp with a ones cotangent, then a dot with v) and spread "
    "evenly over the m outputs: right only when every entry of J @ v is equal (v = 0); for "
    "f(x) = w2 @ tanh(w1 @ x) on 16-24-8 and random x, v the entries differ",
)
def _rt12_dd_summed_gradient(f, x, v) -> jax.Array:
    y, pullback = jax.vjp(f, x)
    total = jnp.dot(pullback(jnp.ones_like(y))[0], v)  # 1^T J v
    return jnp.full_like(y, total / y.shape[0])


@wrong(
    "per_example_grads",
    why="'The gradient of example_loss for each example': divides each per-example gradient by "
    "the batch size so that they sum to mse_loss's gradient (the contributions to the mean); "
    "wrong by a factor of B on every batch but 1, e.g. B = 8 gives 1/8 of each gradient",
)
def _rt12_per_example_grads_share_of_mean(params: dict, xs, ys) -> dict:
    g = jax.vmap(jax.grad(_rt12_example_loss), in_axes=(None, 0, 0))(params, xs, ys)
    b = xs.shape[0]
    return jax.tree.map(lambda a: (a / b).astype(a.dtype), g)


@wrong(
    "cheaper_jacobian_mode",
    why="'every element is an input' / 'outputs likewise every element': measures each side as "
    "its longest axis plus its rank (len(shape) + max(shape)) instead of its element count: "
    "right for vectors, wrong for an x of (6, 5) (30 inputs) and 8 outputs: 2 + 6 = 8 <= "
    "1 + 8 = 9 -> jacfwd, but 30 inputs > 8 outputs makes jacrev cheaper",
)
def _rt12_cheaper_mode_max_plus_rank(f, x) -> str:
    out = jax.eval_shape(f, x)

    def width(shape):
        return len(shape) + (max(shape) if shape else 1)

    return "jacfwd" if width(tuple(x.shape)) <= width(tuple(out.shape)) else "jacrev"


@wrong(
    "vjp_cotangent",
    why="'ct @ J (that is J.T @ ct)': builds the pullback with jax.linear_transpose of the "
    "jvp at x, but transposes the jvp at the zero point f'(0) (linearised once, reused for "
    "every x, with the primal moved to the origin): for sin(A x) * |x|^2 the Jacobian at 0 is "
    "0, so it returns zeros for any ct instead of J(x).T @ ct",
)
def _rt12_vjp_cotangent_linearize_at_zero(f, x, ct) -> jax.Array:
    zero = jnp.zeros_like(x)
    _, lin = jax.linearize(f, zero)
    t = jax.linear_transpose(lin, zero)
    return t(ct)[0]


@wrong(
    "jvp_tangent",
    why="'(f(x), J @ v)': pushes the tangent through f with jax.jvp but returns the primal "
    "output of f evaluated at x + v (the 'next point' a line search would take) instead of f(x): "
    "right tangent, wrong first element for every nonzero v",
)
def _rt12_jvp_tangent_primal_at_step(f, x, v) -> tuple:
    _, t = jax.jvp(f, (x,), (v,))
    return f(x + v), t


@wrong(
    "jacobian_shapes",
    why="'one per name ... axes of size 0 included': when out_shape has no elements (an axis of "
    "size 0) every leaf is given out_shape alone ('an empty Jacobian has no input axes left'); "
    "out_shape (0, 3) with w (3, 2) gives (0, 3) instead of (0, 3, 3, 2)",
)
def _rt12_jacobian_shapes_empty_output(out_shape: tuple, param_shapes: dict) -> dict:
    if 0 in tuple(out_shape):
        return {k: tuple(out_shape) for k in param_shapes}
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items()}
