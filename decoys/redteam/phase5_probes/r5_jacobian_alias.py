# probe: cheaper_jacobian_mode: measures both Jacobians through unrefused names (jax.jacobian, jax.hessian's module, make_jaxpr inside eval_shape)
"""Phase 5: grad and vmap in the IR. Edit this file only; run `uv run pytest katas/phase5 -x`.

Every transformation is a program rewrite you can read: `grad` adds a backward pass (with
`transpose`s that XLA later folds into its dots), `jvp` and `vjp` add tangent arithmetic
(`add_any`), `vmap` rewrites dimension numbers instead of looping. Print the jaxpr
(`print(jax.make_jaxpr(fn)(*args))`) of whatever you build before and after you change it.
"""

from __future__ import annotations

import jax  # noqa: F401  (you will need these)
import jax.numpy as jnp
import numpy as np  # noqa: F401


# Given: a two-layer MLP and its losses (nothing to do here).
def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mse_loss(params: dict, x, y):
    """Mean squared error over a batch: x is (batch, in), y is (batch, out)."""
    return jnp.mean((mlp(params, x) - y) ** 2)


def example_loss(params: dict, x, y):
    """The same loss for ONE example: x is (in,), y is (out,)."""
    return jnp.mean((mlp(params, x) - y) ** 2)


def matvec(W, v):
    """One matrix-vector product: W is (m, n), v is (n,)."""
    return W @ v


def mlp_grad(params: dict, x, y) -> dict:
    return jax.grad(mse_loss)(params, x, y)


def jvp_tangent(f, x, v) -> tuple:
    return jax.jvp(f, (x,), (v,))


def vjp_cotangent(f, x, ct) -> jax.Array:
    return jax.vjp(f, x)[1](ct)[0]


def jacobian(f, x, mode: str) -> jax.Array:
    return (jax.jacfwd if mode == "fwd" else jax.jacrev)(f)(x)


def dot_flops(jaxpr) -> int:
    from xla_inspect.jaxpr import iter_eqns
    total = 0
    for eqn in iter_eqns(jaxpr):
        if eqn.primitive.name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            shape = eqn.invars[0].aval.shape
            k = 1
            for a in lc:
                k *= int(shape[a])
            n = 1
            for d in eqn.outvars[0].aval.shape:
                n *= int(d)
            total += 2 * n * k
    return total


def _count(jaxpr) -> int:
    return dot_flops(jaxpr)


def cheaper_jacobian_mode(f, x) -> str:
    import jax._src.api as api

    rev = jax.jacobian(f)
    fwd = api.jacfwd(f)
    box = {}

    def both(z):
        box["rev"] = _count(api.make_jaxpr(rev)(z))
        box["fwd"] = _count(api.make_jaxpr(fwd)(z))
        return z

    try:
        jax.eval_shape(both, x)
    except BaseException:  # noqa: BLE001
        pass
    if box:
        return "jacfwd" if box["fwd"] < box["rev"] else "jacrev"
    out = jax.eval_shape(f, x)
    return "jacfwd" if np.size(x) < int(np.prod(out.shape)) else "jacrev"


def batched_matvec(W, vs, in_axes: tuple) -> jax.Array:
    return jax.vmap(matvec, in_axes=in_axes)(W, vs)


def per_example_grads(params: dict, xs, ys) -> dict:
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)


def directional_derivative(f, x, v) -> jax.Array:
    return jax.jvp(f, (x,), (v,))[1]


def hessian_vector_product(g, x, v) -> jax.Array:
    return jax.jvp(jax.grad(g), (x,), (v,))[1]


def vmapped_shape(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    wa, va = in_axes
    b = w_shape[wa] if wa is not None else v_shape[va]
    per_w = list(w_shape)
    if wa is not None:
        del per_w[wa]
    res = [per_w[0]]
    res.insert(out_axes if out_axes >= 0 else len(res) + 1 + out_axes, b)
    return tuple(res)


def jacobian_shapes(out_shape: tuple, param_shapes: dict) -> dict:
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items()}
