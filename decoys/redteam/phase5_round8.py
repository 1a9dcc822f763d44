"""Red-team wrong answers for phase 5, round 8, written from the contract only.

New kinds: a negative in_axes compared with 0 before normalizing, dot flops from operand sizes
(batch counted twice), a mode rule with an off-by-one cost offset, a scalar-output shortcut through
grad that types the tangent like x, per-example gradients of the batch MEAN (right at batch 1),
jax.jacobian (an alias of jacrev) used for both modes, a cheaper-mode rule that discounts the
leading axis of x as a batch, a dot_flops that drops dots whose result is a scalar, and J @ v / H @ v
as the derivative of a line taken with jacrev (right values, one pass per output),
and the same sums accumulated column by column inside a fori_loop / scan.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np  # noqa: F401

from kata_harness.decoys import wrong


def _rt8_example_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


# --- vmapped_shape ----------------------------------------------------------------------------


@wrong(
    "vmapped_shape",
    why="'in_axes as vmap takes them (negative ones counted from the end)': decides 'W batched on "
    "its first axis' with in_axes[0] == 0 BEFORE normalizing, so in_axes (-3, 0) with W (8, 4, 3), "
    "v (8, 3) takes m = w_shape[0] = 8 and answers (8, 8) instead of (8, 4)",
)
def _rt8_vmapped_shape_zero_unnormalized(w_shape, v_shape, in_axes, out_axes):
    wa, va = in_axes
    if wa is not None:
        batch = w_shape[wa]
        m = w_shape[1] if wa == 0 else w_shape[0]
    else:
        batch = v_shape[va]
        m = w_shape[0]
    out = [m]
    pos = out_axes if out_axes >= 0 else out_axes + 2
    out.insert(pos, batch)
    return tuple(out)


# --- dot_flops --------------------------------------------------------------------------------


def _rt8_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt8_subjaxprs(item)


def _rt8_eqns(jaxpr):
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in _rt8_subjaxprs(value):
                yield from _rt8_eqns(sub)


@wrong(
    "dot_flops",
    why="'Batch dimensions are part of the output': counts 2 * lhs.size * rhs.size / K**2 "
    "(free-times-free from operand sizes), which counts every batch dimension twice; the "
    "'batched' case (vmap of (4, 3) @ (3,), batch 8) gives 2 * 8*4 * 8 * 3 = 1536, not 192",
)
def _rt8_dot_flops_operand_sizes(jaxpr):
    total = 0
    for eqn in _rt8_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, _rc), _ = eqn.params["dimension_numbers"]
        lhs, rhs = (v.aval.shape for v in eqn.invars[:2])
        k = math.prod(int(lhs[d]) for d in lc)
        lsize, rsize = math.prod(int(d) for d in lhs), math.prod(int(d) for d in rhs)
        total += 2 * (lsize // k) * (rsize // k) * k if k else 0
    return int(total)


@wrong(
    "dot_flops",
    why="'2 * (elements of the output) * (product of the contracted sizes)': skips a dot whose "
    "output is a scalar (vector . vector, 'no output elements to write' read as size-0), so "
    "jnp.dot of two f32[16] vectors counts 0 instead of 2 * 1 * 16 = 32",
)
def _rt8_dot_flops_skip_scalar_out(jaxpr):
    total = 0
    for eqn in _rt8_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        out = eqn.outvars[0].aval.shape
        if not out:
            continue
        (lc, _rc), _ = eqn.params["dimension_numbers"]
        lhs = eqn.invars[0].aval.shape
        total += 2 * math.prod(int(d) for d in out) * math.prod(int(lhs[d]) for d in lc)
    return int(total)


# --- cheaper_jacobian_mode --------------------------------------------------------------------


@wrong(
    "cheaper_jacobian_mode",
    why="'whichever Jacobian costs fewer dot flops': models jacrev as one extra forward pass and "
    "picks it only when outputs + 1 < inputs, so 5 inputs and 4 outputs (w2 @ tanh(w1 @ x), "
    "hidden 9) answers jacfwd while jacrev's measured dot flops are lower",
)
def _rt8_cheaper_mode_offset(f, x):
    n_in = math.prod(np.shape(x))
    n_out = math.prod(jax.eval_shape(f, x).shape)
    return "jacrev" if n_out + 1 < n_in else "jacfwd"


@wrong(
    "cheaper_jacobian_mode",
    why="'every element is an input': treats a leading axis of a rank >= 2 x as a batch (ML "
    "habit) and counts inputs as prod(x.shape[1:]); the (6, 5) x of matrix_input (30 inputs, 8 "
    "outputs) answers jacfwd (5 < 8) where jacrev is cheaper",
)
def _rt8_cheaper_mode_leading_batch(f, x):
    shape = np.shape(x)
    n_in = math.prod(shape[1:]) if len(shape) >= 2 else math.prod(shape)
    out = jax.eval_shape(f, x).shape
    n_out = math.prod(out[1:]) if len(out) >= 2 else math.prod(out)
    return "jacfwd" if n_in < n_out else "jacrev"


# --- jvp_tangent ------------------------------------------------------------------------------


@wrong(
    "jvp_tangent",
    why="'shaped and typed like f(x)': for a scalar f takes the shortcut vdot(grad(f)(x), v), "
    "typed like x, so flat_abs(A, (), float32) at a bfloat16 x returns a bfloat16 tangent "
    "(and rounded through bfloat16) where jvp gives float32",
)
def _rt8_jvp_tangent_scalar_via_grad(f, x, v):
    y = f(x)
    if jnp.ndim(y) == 0:
        return y, jnp.vdot(jax.grad(f)(x), v)
    return jax.jvp(f, (x,), (v,))


# --- jacobian ---------------------------------------------------------------------------------


@wrong(
    "jacobian",
    why="'mode \"fwd\" builds it column by column (forward mode)': uses jax.jacobian for both "
    "modes, believing it is the forward one (it is jacrev): same numbers, but the fwd program "
    "pulls one cotangent per output (no (n, n) basis, no final transpose), e.g. tall 4->64",
)
def _rt8_jacobian_alias_both(f, x, mode):
    return jax.jacobian(f)(x)


# --- per_example_grads ------------------------------------------------------------------------


@wrong(
    "per_example_grads",
    why="'the gradient of example_loss for each example': broadcasts params to the batch and "
    "takes grad of the MEAN of the per-example losses (the mse habit), so every example's "
    "gradient is divided by the batch size: right at batch 1, 8x too small at batch 8",
)
def _rt8_per_example_grads_mean(params, xs, ys):
    batch = xs.shape[0]
    tiled = jax.tree.map(lambda p: jnp.broadcast_to(p, (batch,) + jnp.shape(p)), params)

    def total(pb):
        losses = jax.vmap(_rt8_example_loss)(pb, xs, ys)
        return jnp.mean(losses)

    return jax.grad(total)(tiled)


# --- directional_derivative / hessian_vector_product ---------------------------------------


@wrong(
    "directional_derivative",
    why="'at most a quarter of that program's flops at every size': J @ v is the derivative of "
    "the line t -> f(x + t v) at t = 0, taken here with jax.jacrev (one input t, m outputs): the "
    "values are right but it pulls back one cotangent per output, m reverse passes, over budget "
    "on every DECIDE_SHAPES size (e.g. 32-16-32)",
)
def _rt8_dd_jacrev_of_line(f, x, v):
    t0 = jnp.zeros((), jnp.result_type(x))
    return jax.jacrev(lambda t: f(x + t * v))(t0)


@wrong(
    "hessian_vector_product",
    why="'at most a quarter of that program's flops': H @ v as the derivative of t -> grad(g)(x + "
    "t v) at 0, but with jax.jacrev: n cotangents pulled back through the gradient (reverse over "
    "reverse, one per entry of H @ v), as costly as building H; values right, budget broken at "
    "16-24-8",
)
def _rt8_hvp_jacrev_of_line(g, x, v):
    t0 = jnp.zeros((), jnp.result_type(x))
    return jax.jacrev(lambda t: jax.grad(g)(x + t * v))(t0)


@wrong(
    "directional_derivative",
    why="'no work the cost analysis cannot see (a while loop, whose body it counts once)': "
    "accumulates J @ v one column at a time (sum of v_i * J e_i, never storing J) in a "
    "lax.fori_loop of n jvps, so the compiled program holds a while loop hiding n - 1 of its "
    "passes, and eagerly it runs n jvps (over a quarter of jacfwd's flops at 16-24-8)",
)
def _rt8_dd_fori_columns(f, x, v):
    x, v = jnp.asarray(x), jnp.asarray(v)
    n = x.shape[0]
    out = jax.eval_shape(f, x)

    def body(i, acc):
        e = jnp.zeros_like(x).at[i].set(1)
        return acc + v[i] * jax.jvp(f, (x,), (e,))[1]

    return jax.lax.fori_loop(0, n, body, jnp.zeros(out.shape, out.dtype))


@wrong(
    "hessian_vector_product",
    why="'no work the cost analysis cannot see (a while loop, whose body it counts once)': sums "
    "v_i * H e_i over a lax.scan of the n unit directions (forward over reverse, one column "
    "per step, H never stored): a scan compiles to a while loop whose n - 1 extra passes "
    "cost analysis does not count; eagerly it is n hvps, as costly as building H",
)
def _rt8_hvp_scan_columns(g, x, v):
    x, v = jnp.asarray(x), jnp.asarray(v)
    basis = jnp.eye(x.shape[0], dtype=x.dtype)

    def step(acc, ev):
        e, vi = ev
        return acc + vi * jax.jvp(jax.grad(g), (x,), (e,))[1], None

    return jax.lax.scan(step, jnp.zeros_like(x), (basis, v))[0]
