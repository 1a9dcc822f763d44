# probe: vmapped_shape: runs jax.vmap in a child Python process, out of the refusal's sight
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


def cheaper_jacobian_mode(f, x) -> str:
    out = jax.eval_shape(f, x)
    n_out = 1
    for d in out.shape:
        n_out *= d
    return "jacfwd" if np.size(x) < n_out else "jacrev"


def batched_matvec(W, vs, in_axes: tuple) -> jax.Array:
    return jax.vmap(matvec, in_axes=in_axes)(W, vs)


def per_example_grads(params: dict, xs, ys) -> dict:
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)


def directional_derivative(f, x, v) -> jax.Array:
    return jax.jvp(f, (x,), (v,))[1]


def hessian_vector_product(g, x, v) -> jax.Array:
    return jax.jvp(jax.grad(g), (x,), (v,))[1]


def vmapped_shape(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, jax, jax.numpy as jnp\n"
        "w, v, ia, oa = json.loads(sys.argv[1])\n"
        "s = jax.eval_shape(jax.vmap(lambda W, u: W @ u, in_axes=tuple(ia), out_axes=oa),"
        " jax.ShapeDtypeStruct(tuple(w), jnp.float32), jax.ShapeDtypeStruct(tuple(v), jnp.float32))\n"
        "print(json.dumps(list(s.shape)))\n"
    )
    arg = json.dumps([list(w_shape), list(v_shape), list(in_axes), out_axes])
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True, env=env)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def jacobian_shapes(out_shape: tuple, param_shapes: dict) -> dict:
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items()}
