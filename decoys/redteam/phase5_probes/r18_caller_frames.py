# probe: jacobian_shapes: walks the caller's frames for a dict with the same keys whose values are shape tuples (the test's expected answer) and returns it
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
    # TODO: one transformation of mse_loss; then print its jaxpr and look for `transpose`
    raise NotImplementedError("phase5 task 1: mlp_grad")


def jvp_tangent(f, x, v) -> tuple:
    """Forward mode: return (f(x), J @ v), where J is the Jacobian of f at x: the derivative of
    f at x along v (v shaped like x; x of any shape, J @ v contracting all of its axes), shaped
    and typed like f(x). x and f(x) are real floating arrays (float32, bfloat16, ...); complex
    ones are outside this task. J @ v as forward mode computes it, v carried through f's own
    derivative rules in IEEE arithmetic, whatever v holds: where J has an infinite entry (sqrt
    or log at 0), a zero entry of v gives NaN there (inf * 0), as jax.jvp does; the zero
    direction is no exception."""
    # TODO: push the tangent v through f without ever building J
    raise NotImplementedError("phase5 task 2: jvp_tangent")


def vjp_cotangent(f, x, ct) -> jax.Array:
    """Reverse mode: return ct @ J (that is J.T @ ct, ct shaped like f(x)), an array shaped and
    typed like x (x of any shape). x, f(x) and ct are real floating arrays (float32, bfloat16,
    ...): complex ones are outside this task (there the conjugation conventions of a vjp and of
    a gradient of a real inner product differ, and either may be what a caller means). ct @ J
    as reverse mode computes it, ct carried back through f's own derivative rules in IEEE
    arithmetic, whatever ct holds: where J has an infinite entry (sqrt or log at 0), a zero
    entry of ct gives NaN there (0 * inf), as jax.vjp does; the zero cotangent is no
    exception."""
    # TODO: pull the cotangent ct back through f without ever building J
    raise NotImplementedError("phase5 task 3: vjp_cotangent")


def jacobian(f, x, mode: str) -> jax.Array:
    """The full Jacobian of f at x, shape f(x).shape + x.shape ((out, in) for vectors): mode
    "fwd" builds it column by column (forward mode), mode "rev" row by row (reverse mode). x and
    f(x) are real floating arrays, as in tasks 2 and 3."""
    # TODO: JAX has one function per mode
    raise NotImplementedError("phase5 task 4: jacobian")


def dot_flops(jaxpr) -> int:
    """Floating-point operations of every `dot_general` in `jaxpr`, nested jaxprs included.

    Count 2 per multiply-add (as XLA's cost analysis does), whatever the dtype (a complex
    multiply-add counts 2 too): 2 * (elements of the output) * (product of the contracted
    dimension sizes, read from dimension_numbers: any axes, not only the last). Batch dimensions
    are part of the output; a dot that contracts every axis has a scalar output, one element;
    an output with an axis of size 0 has no elements, and a contracted axis of size 0 leaves
    no multiply-adds: 0 flops either way.
    Nested jaxprs sit in equation params of any primitive that holds one (a nested jit, every
    branch of a cond or switch, a scan body, a while loop's condition and body, custom_jvp,
    custom_vjp, checkpoint, shard_map, the jaxprs of a custom_linear_solve, ...; alone, in a
    tuple or a named tuple): count every dot_general equation once, wherever it sits (a loop
    body once, not once per iteration; a shard_map body once, on the per-device shapes its
    jaxpr shows, not once per device of its mesh; one whose result nothing reads too: the jaxpr
    holds it, whatever XLA later removes). Return an exact int, however large (past 2**31).
    """
    # TODO: read each dot_general's dimension_numbers and its operands' shapes
    raise NotImplementedError("phase5 task 5: dot_flops")


def cheaper_jacobian_mode(f, x) -> str:
    """ "jacfwd" or "jacrev": predict whichever Jacobian of f at x costs fewer dot flops,
    without building either (jax.eval_shape, which traces f alone, is allowed). x may be any
    shape and dtype (every element is an input, whatever its width). The tests compare with
    both Jacobians' measured flops; none has as many inputs as outputs."""
    # TODO: predict from the shapes of x and f(x); then check it with your dot_flops
    raise NotImplementedError("phase5 task 6: cheaper_jacobian_mode")


def batched_matvec(W, vs, in_axes: tuple) -> jax.Array:
    """`matvec` mapped over a batch with jax.vmap: `in_axes` has one entry per argument (W, vs),
    the axis of that argument that carries the batch, or None when the argument is shared by
    every example; e.g. (None, 0): one W, vs is (batch, n); (1, 0): W is (m, batch, n);
    (2, None): W is (m, n, batch) and one shared v; an axis may be counted from the end (-1).
    Return (batch, m), in the dtype one matvec gives (int8 stays int8).

    Map `matvec` itself (the tests watch it being called once, with one example's shapes); do
    not loop, and do not rewrite it by hand as an einsum."""
    # TODO: vmap matvec; do not loop
    raise NotImplementedError("phase5 task 7: batched_matvec")


def per_example_grads(params: dict, xs, ys) -> dict:
    """The gradient of `example_loss` for each example: every leaf gets a leading batch axis
    (and keeps its dtype).

    Its cost must grow linearly with the batch, like a loop of single-example gradients (a
    Jacobian of the vector of losses gives the same numbers at batch-squared cost)."""
    # TODO: compose two transformations; params are shared by every example
    raise NotImplementedError("phase5 task 8: per_example_grads")


def directional_derivative(f, x, v) -> jax.Array:
    """J @ v, the derivative of f at x along v, for f: R^n -> R^m (x and v of shape (n,)).

    The program to improve: `jax.jacfwd(f)(x) @ v` builds the whole (m, n) Jacobian first. The
    tests compile yours and want at most a quarter of that program's flops (XLA's cost analysis)
    at every size, with the same values on several x and v (v = 0 too, and functions that are
    not holomorphic), compiled or called eagerly, and no work the cost analysis cannot see (a
    while loop, whose body it counts once; a host callback or other custom-call). Every call
    is held to the budget, traced or on concrete arrays: called eagerly (op by op, jit
    disabled), every dot it executes is counted, work done at trace time included. Work spread
    over several devices (a shard_map, a pmap) is counted on each device that runs it.
    """
    # TODO: which transformation gives one column combination of J without the rest?
    raise NotImplementedError("phase5 task 9: directional_derivative")


def hessian_vector_product(g, x, v) -> jax.Array:
    """H @ v, where H is the Hessian of the scalar function g at x (x and v of shape (n,)).

    The program to improve: `jax.hessian(g)(x) @ v` builds the whole (n, n) Hessian first. The
    tests compile yours and want at most a quarter of that program's flops (XLA's cost analysis)
    at every size, with the same values on several x and v (v = 0 too, and functions that are
    not holomorphic), compiled or called eagerly, and no work the cost analysis cannot see (a
    while loop, whose body it counts once; a host callback or other custom-call). Every call
    is held to the budget, traced or on concrete arrays: called eagerly (op by op, jit
    disabled), every dot it executes is counted, work done at trace time included. Work spread
    over several devices (a shard_map, a pmap) is counted on each device that runs it.
    """
    # TODO: H @ v is the derivative of the gradient along v: compose two transformations
    raise NotImplementedError("phase5 task 10: hessian_vector_product")


def vmapped_shape(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    """Predict the shape of jax.vmap(matvec, in_axes=in_axes, out_axes=out_axes)(W, v) for W of
    shape `w_shape` and v of shape `v_shape` (a tuple of ints); in_axes as vmap takes them (None,
    or an axis, negative ones counted from the end). From the shapes alone: the tests forbid
    jax.vmap, tracing and compiling while they call you, and some shapes they ask about are
    past what any memory holds (no array of them can be made, in JAX or in NumPy).
    """
    # TODO: which size is the batch, what does one example return, where does out_axes put it?
    raise NotImplementedError("phase5 task 11: vmapped_shape")


def jacobian_shapes(out_shape: tuple, param_shapes: dict) -> dict:
    """Predict the shapes in jax.jacrev(f)(params), where params is a dict of float32 arrays
    with the shapes `param_shapes` (name -> tuple) and f(params) is an array of shape
    `out_shape`: a dict name -> shape tuple, one per name, as jacrev gives (any shape is valid,
    axes of size 0 included). From the shapes alone: the tests forbid jax.jacrev, tracing and
    compiling while they call you.
    """
    import inspect

    keys = set(param_shapes)
    frame = inspect.currentframe().f_back
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and value is not param_shapes and set(value) == keys:
                if all(isinstance(s, tuple) for s in value.values()) and value != dict(param_shapes):
                    return {k: tuple(s) for k, s in value.items()}
        frame = frame.f_back
    return {k: tuple(s) for k, s in param_shapes.items()}