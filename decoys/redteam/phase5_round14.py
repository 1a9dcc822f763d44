"""Red team, phase 5, round 14: plausible wrong answers (each wrong per the contract)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt14_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


@wrong(
    "mlp_grad",
    why="'same structure ... as params': uses jax.grad(mse_loss, argnums=(0,)) (copied from a "
    "multi-argument example) and returns its result, a 1-tuple (grads,) instead of the dict; any "
    "GRAD_CASES input gives a tuple whose only element is the right dict.",
)
def _rt14_mlp_grad_argnums_tuple(params: dict, x, y) -> dict:
    return jax.grad(_rt14_mse_loss, argnums=(0,))(params, x, y)


@wrong(
    "jvp_tangent",
    why="'(f(x), J @ v), the derivative of f at x along v': passes primals and tangents to "
    "jax.jvp swapped, jvp(f, (v,), (x,)): the derivative at v along x. Right for linear f only; "
    "sin_ax_norm with F_SHAPES (3, 5) gives f(v) and J(v) @ x.",
)
def _rt14_jvp_tangent_swapped_pair(f, x, v) -> tuple:
    return jax.jvp(f, (v,), (x,))


@wrong(
    "vjp_cotangent",
    why="'return ct @ J': pulls back through the loss-shaped scalar jnp.mean(f(x) * ct) (the loss "
    "template) with jax.grad, which divides ct @ J by f(x).size; for F_SHAPES (4, 4) the answer "
    "is a quarter of ct @ J (right only when f(x) has one element).",
)
def _rt14_vjp_cotangent_mean_pairing(f, x, ct) -> jax.Array:
    return jax.grad(lambda z: jnp.mean(f(z) * ct))(x)


@wrong(
    "dot_flops",
    why="'2 per multiply-add ... whatever the dtype': reads 'floating-point operations' literally "
    "and skips dot_generals whose operands are integers, so jnp.matmul of int8 (7, 9) @ (9,) "
    "counts 0 instead of 126.",
)
def _rt14_dot_flops_floating_only(jaxpr) -> int:
    def eqns(j):
        j = getattr(j, "jaxpr", j)
        for e in j.eqns:
            yield e
            for p in e.params.values():
                for q in p if isinstance(p, (tuple, list)) else (p,):
                    if hasattr(q, "eqns") or hasattr(getattr(q, "jaxpr", None), "eqns"):
                        yield from eqns(q)

    total = 0
    for e in eqns(jaxpr):
        if e.primitive.name != "dot_general":
            continue
        lhs = e.invars[0].aval
        if not (
            jnp.issubdtype(lhs.dtype, jnp.floating)
            or jnp.issubdtype(lhs.dtype, jnp.complexfloating)
        ):
            continue
        (lc, _), _ = e.params["dimension_numbers"]
        k = math.prod(int(lhs.shape[i]) for i in lc)
        out = math.prod(int(d) for d in e.outvars[0].aval.shape)
        total += 2 * out * k
    return int(total)


@wrong(
    "cheaper_jacobian_mode",
    why="'whichever Jacobian costs fewer dot flops': charges jacrev one extra pass for the forward "
    "sweep it records and picks jacrev only when outputs + 1 < inputs; x of shape (5,) with "
    "f(x) = A @ x, A (4, 5): jacrev costs 200 dot flops, jacfwd 240, this says jacfwd.",
)
def _rt14_cheaper_mode_forward_sweep(f, x) -> str:
    out = jax.eval_shape(f, x)
    n, m = math.prod(np.shape(x)), math.prod(out.shape)
    return "jacrev" if m + 1 < n else "jacfwd"


@wrong(
    "batched_matvec",
    why="'Return (batch, m)': reads the README's 'vmap leaves the batch where it found it' as an "
    "instruction and passes out_axes = v's in_axes (0 when v is shared); in_axes (None, 1) or "
    "(-2, -1) give (m, batch) instead of (batch, m).",
)
def _rt14_batched_matvec_out_axes_follow_v(W, vs, in_axes: tuple) -> jax.Array:
    def matvec(W, v):
        return W @ v

    out_axes = in_axes[1] if in_axes[1] is not None else 0
    return jax.vmap(matvec, in_axes=in_axes, out_axes=out_axes)(W, vs)


@wrong(
    "directional_derivative",
    why="'same values ... to float32 rounding': makes the jvp 'cheaper' by running it on bfloat16 "
    "x and v and casting back; the flops are the same and the values are off by ~1e-2 relative "
    "on every DECIDE_SHAPES point (e.g. 16-24-8, points(16)[0]).",
)
def _rt14_dd_bf16_compute(f, x, v) -> jax.Array:
    xb, vb = jnp.asarray(x).astype(jnp.bfloat16), jnp.asarray(v).astype(jnp.bfloat16)
    _, t = jax.jvp(lambda z: f(z.astype(jnp.float32)), (xb,), (vb,))
    return t.astype(jnp.asarray(x).dtype)


@wrong(
    "vmapped_shape",
    why="'which size is ... one example returns': takes m as w_shape[-2] (rows counted from the end "
    "'so a leading batch axis does not matter'); a trailing batch axis breaks it: W (4, 3, 7), "
    "v (3,), in_axes (2, None), out_axes -1 is (4, 7), this says (3, 7).",
)
def _rt14_vmapped_shape_rows_second_last(
    w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int
) -> tuple:
    wa, va = in_axes
    if wa is not None:
        b = w_shape[wa]
        m = w_shape[-2] if len(w_shape) == 3 else w_shape[0]
    else:
        b = v_shape[va]
        m = w_shape[-2]
    out = [m]
    pos = out_axes if out_axes >= 0 else out_axes + 2
    out.insert(pos, b)
    return tuple(out)


@wrong(
    "hessian_vector_product",
    why="'H @ v, where H is the Hessian of g at x': differentiates 1/2 v^T H(x) v with respect to "
    "x instead of v (the Taylor quadratic term), which gives third derivatives contracted with v "
    "twice; layer_energy at points(9)[0] gives a different vector (and 0 for a quadratic g).",
)
def _rt14_hvp_taylor_grad_wrt_x(g, x, v) -> jax.Array:
    def quad(z):
        return 0.5 * jax.jvp(lambda y: jax.jvp(g, (y,), (v,))[1], (z,), (v,))[1]

    return jax.grad(quad)(x)


@wrong(
    "jacobian_shapes",
    why="'one per name ... as jacrev gives': treats a params leaf of shape (1, k) as a row vector "
    "and drops its unit axis (thinking of w as the vector it parametrizes), so out (2, 4) with "
    "k (1, 5) gives (2, 4, 5) instead of (2, 4, 1, 5).",
)
def _rt14_jacobian_shapes_row_vector_leaf(out_shape: tuple, param_shapes: dict) -> dict:
    res = {}
    for name, s in param_shapes.items():
        s = tuple(s)
        if len(s) == 2 and s[0] == 1:
            s = s[1:]
        res[name] = tuple(out_shape) + s
    return res
