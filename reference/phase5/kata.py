"""Phase 5 reference: grad and vmap in the IR."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mse_loss(params: dict, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


def example_loss(params: dict, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


def matvec(W, v):
    return W @ v


def mlp_grad(params: dict, x, y) -> dict:
    # grad appends the transposed (backward) program; its `transpose`s fold into dots in XLA.
    return jax.grad(mse_loss)(params, x, y)


def jvp_tangent(f, x, v) -> tuple:
    # jvp evaluates f and J @ v in one forward pass; product rules sum tangents with add_any.
    y, tangent = jax.jvp(f, (x,), (v,))
    return y, tangent


def vjp_cotangent(f, x, ct) -> jax.Array:
    # vjp records the forward pass, then runs its transpose on ct: dots with swapped dims.
    _, pullback = jax.vjp(f, x)
    (x_bar,) = pullback(ct)
    return x_bar


def jacobian(f, x, mode: str) -> jax.Array:
    # jacfwd = vmap(jvp) over the input basis; jacrev = vmap(vjp) over the output basis.
    if mode == "fwd":
        return jax.jacfwd(f)(x)
    if mode == "rev":
        return jax.jacrev(f)(x)
    raise ValueError(f"mode must be 'fwd' or 'rev', got {mode!r}")


def _all_eqns(jaxpr):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    for eqn in inner.eqns:
        yield eqn
        for value in eqn.params.values():
            subs = value if isinstance(value, (tuple, list)) else (value,)
            for sub in subs:
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    yield from _all_eqns(sub)


def dot_flops(jaxpr) -> int:
    # Output elements already include batch and free dims; each needs K multiply-adds.
    total = 0
    for eqn in _all_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lhs_contracting, _), _ = eqn.params["dimension_numbers"]
        lhs_shape = eqn.invars[0].aval.shape
        contracted = int(np.prod([lhs_shape[d] for d in lhs_contracting], dtype=np.int64))
        total += 2 * contracted * int(np.prod(eqn.outvars[0].aval.shape, dtype=np.int64))
    return total


def cheaper_jacobian_mode(f, x) -> str:
    # Forward mode pushes one tangent per input, reverse pulls one cotangent per output: the
    # smaller count wins, whatever the shapes (every element is one input or output).
    outputs = jax.eval_shape(f, x)
    return "jacfwd" if np.size(x) < np.prod(outputs.shape) else "jacrev"


def batched_matvec(W, vs, in_axes: tuple) -> jax.Array:
    # vmap adds a batch dimension to dot_general's dimension numbers: one matmul, no loop.
    return jax.vmap(matvec, in_axes=in_axes)(W, vs)


def per_example_grads(params: dict, xs, ys) -> dict:
    # vmap(grad): params shared (None), one gradient per example, computed as batched dots.
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)


def directional_derivative(f, x, v) -> jax.Array:
    # One jvp pushes the single tangent v: about the cost of one more forward pass.
    return jax.jvp(f, (x,), (v,))[1]


def hessian_vector_product(g, x, v) -> jax.Array:
    # Forward-over-reverse: the jvp of grad(g) along v, never the whole Hessian.
    return jax.jvp(jax.grad(g), (x,), (v,))[1]


def vmapped_shape(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    # One example gives matvec's (m,); vmap inserts the batch axis where out_axes says.
    w_axis, v_axis = in_axes
    batch = w_shape[w_axis] if w_axis is not None else v_shape[v_axis]
    per_example = list(w_shape)
    if w_axis is not None:
        del per_example[w_axis]  # an axis counted from the end too, as vmap takes it
    out = [per_example[0]]
    out.insert(out_axes % (len(out) + 1), batch)
    return tuple(out)


def jacobian_shapes(out_shape: tuple, param_shapes: dict) -> dict:
    # One entry per (output element, input element): the output's shape, then the leaf's.
    return {name: tuple(out_shape) + tuple(shape) for name, shape in param_shapes.items()}
