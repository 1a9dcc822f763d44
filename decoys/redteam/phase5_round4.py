"""Red-team wrong answers for phase 5, written from the contract only.

Round 4: each answer agrees with a correct one on the inputs of programs.py (as far as we can
tell) and is wrong on a valid input those lack: another dtype, rank, scalar, nesting place,
extreme size, size outside the listed ones, or an eager call instead of a traced one.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from katas.phase5.kata import example_loss, matvec, mse_loss

# --- mlp_grad -------------------------------------------------------------------------------


@wrong(
    "mlp_grad",
    why="'same dtypes as params': computes in float32 and casts back only bfloat16 leaves; wrong "
    "on float16 params (returns a float32 gradient)",
)
def _rt4_mlp_grad_f32_then_only_bf16_back(params, x, y):
    up = {k: jnp.asarray(v).astype(jnp.float32) for k, v in params.items()}
    g = jax.grad(mse_loss)(up, jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))
    return {
        k: (v.astype(jnp.bfloat16) if jnp.asarray(params[k]).dtype == jnp.bfloat16 else v)
        for k, v in g.items()
    }


@wrong(
    "mlp_grad",
    why="'same structure as params': hand-written backprop that sums bias grads over the batch "
    "axis only; wrong on scalar biases (b1 or b2 of shape (), which mlp broadcasts) -> shape "
    "(hidden,) instead of ()",
)
def _rt4_mlp_grad_manual_backprop_vector_bias(params, x, y):
    w1, b1, w2, b2 = (jnp.asarray(params[k]) for k in ("w1", "b1", "w2", "b2"))
    x, y = jnp.asarray(x), jnp.asarray(y)
    pre = x @ w1 + b1
    h = jax.nn.relu(pre)
    out = h @ w2 + b2
    d_out = 2.0 * (out - y) / out.size
    d_out = d_out.astype(out.dtype)
    dw2 = h.T @ d_out
    db2 = jnp.sum(d_out, axis=0)
    dh = d_out @ w2.T
    dpre = jnp.where(pre > 0, dh, jnp.zeros_like(dh))
    dw1 = x.T @ dpre
    db1 = jnp.sum(dpre, axis=0)
    g = {"w1": dw1, "b1": db1, "w2": dw2, "b2": db2}
    return {k: g[k].astype(jnp.asarray(params[k]).dtype) for k in g}


@wrong(
    "mlp_grad",
    why="'same structure as params': rebuilds the dict from the four names mlp reads; wrong on a "
    "params dict with one more leaf (e.g. an unused 'scale'), whose zero gradient is dropped",
)
def _rt4_mlp_grad_four_names(params, x, y):
    names = ("w1", "b1", "w2", "b2")
    sub = {k: params[k] for k in names}
    g = jax.grad(lambda p: mse_loss(p, x, y))(sub)
    return {k: g[k] for k in names}


# --- jvp_tangent ------------------------------------------------------------------------------


@wrong(
    "jvp_tangent",
    why="'typed like f(x)': casts the tangent to x's dtype; wrong when f changes the dtype, e.g. "
    "x bfloat16 and f = lambda x: jnp.sin(x.astype(jnp.float32)) (tangent must be float32)",
)
def _rt4_jvp_tangent_cast_to_x(f, x, v):
    y, t = jax.jvp(f, (x,), (v,))
    return y, t.astype(jnp.asarray(x).dtype)


@wrong(
    "jvp_tangent",
    why="'shaped like f(x)': via the Jacobian reshaped to (out, in); wrong on a scalar-valued f "
    "(f = lambda x: jnp.sum(x ** 2)): returns shape (1,) instead of ()",
)
def _rt4_jvp_tangent_jac_matrix(f, x, v):
    x, v = jnp.asarray(x), jnp.asarray(v)
    J = jax.jacfwd(f)(x)
    y = f(x)
    J2 = J.reshape(-1, x.size)
    t = J2 @ v.reshape(-1)
    return y, t.reshape(-1, *jnp.shape(y)[1:]) if jnp.ndim(y) else t


@wrong(
    "jvp_tangent",
    why="'the derivative along v': takes the derivative along the unit vector and rescales by "
    "|v|; wrong (NaN) on v = 0",
)
def _rt4_jvp_tangent_unit_direction(f, x, v):
    v = jnp.asarray(v)
    n = jnp.sqrt(jnp.sum(v.astype(jnp.float32) ** 2)).astype(v.dtype)
    y, t = jax.jvp(f, (x,), (v / n,))
    return y, t * n


# --- vjp_cotangent ----------------------------------------------------------------------------


@wrong(
    "vjp_cotangent",
    why="'typed like x': casts ct @ J to ct's dtype; wrong when f changes the dtype (x bfloat16, "
    "f = lambda x: jnp.sin(x.astype(jnp.float32)), ct float32: answer must be bfloat16)",
)
def _rt4_vjp_cotangent_ct_dtype(f, x, ct):
    y, pull = jax.vjp(f, x)
    return pull(jnp.asarray(ct).astype(y.dtype))[0].astype(jnp.asarray(ct).dtype)


@wrong(
    "vjp_cotangent",
    why="'shaped like x (x of any shape)': promotes x with atleast_1d; wrong on a scalar x "
    "(f = lambda s: jnp.sin(s) * jnp.arange(3.0)): returns (1,) instead of ()",
)
def _rt4_vjp_cotangent_atleast_1d(f, x, ct):
    x1 = jnp.atleast_1d(jnp.asarray(x))
    _, pull = jax.vjp(lambda z: f(z.reshape(jnp.shape(x))), x1)
    return pull(ct)[0]


@wrong(
    "vjp_cotangent",
    why="'ct @ J' is linear in ct: normalises ct, pulls back, rescales; wrong (NaN) on ct = 0",
)
def _rt4_vjp_cotangent_unit_ct(f, x, ct):
    ct = jnp.asarray(ct)
    n = jnp.sqrt(jnp.sum(ct.astype(jnp.float32) ** 2)).astype(ct.dtype)
    _, pull = jax.vjp(f, x)
    return pull(ct / n)[0] * n


# --- jacobian ---------------------------------------------------------------------------------


@wrong(
    "jacobian",
    why="'shape f(x).shape + x.shape': forces a 2-D (out, in) matrix; wrong on a scalar-valued f "
    "(f = lambda x: jnp.sum(x ** 2), x (n,)): returns (1, n) instead of (n,)",
)
def _rt4_jacobian_atleast_2d(f, x, mode):
    J = (jax.jacfwd if mode == "fwd" else jax.jacrev)(f)(x)
    return jnp.atleast_2d(J)


@wrong(
    "jacobian",
    why="'mode fwd builds it column by column': picks the cheaper mode from the shapes instead of "
    "obeying mode; wrong on mode='fwd' for a wide f (64 inputs, 4 outputs), built with jacrev",
)
def _rt4_jacobian_cheaper_mode(f, x, mode):
    out = jax.eval_shape(f, x)
    n_in, n_out = int(np.prod(jnp.shape(x))), int(np.prod(out.shape))
    if n_in > 2 * n_out:
        return jax.jacrev(f)(x)
    if n_out > 2 * n_in:
        return jax.jacfwd(f)(x)
    return (jax.jacfwd if mode == "fwd" else jax.jacrev)(f)(x)


@wrong(
    "jacobian",
    why="'shape f(x).shape + x.shape': flattens to (out.size, *x.shape) when f returns a matrix; "
    "wrong on a rank-3 output (f = lambda x: jnp.ones((2, 3, 4)) * jnp.sum(x))",
)
def _rt4_jacobian_rank3_output_flattened(f, x, mode):
    J = (jax.jacfwd if mode == "fwd" else jax.jacrev)(f)(x)
    out_nd = J.ndim - jnp.ndim(x)
    if out_nd > 2:
        return J.reshape(-1, *jnp.shape(x))
    return J


# --- dot_flops --------------------------------------------------------------------------------


def _rt4_nested(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt4_nested(v)


def _rt4_eqns_of(j):
    return j.eqns if hasattr(j, "eqns") else j.jaxpr.eqns


def _rt4_walk(j, seen=None):
    for eqn in _rt4_eqns_of(j):
        yield eqn
        for value in eqn.params.values():
            for inner in _rt4_nested(value):
                if seen is not None:
                    if id(inner) in seen:
                        continue
                    seen.add(id(inner))
                yield from _rt4_walk(inner, seen)


def _rt4_dims(eqn):
    (lc, rc), _ = eqn.params["dimension_numbers"]
    lhs = tuple(eqn.invars[0].aval.shape)
    out = tuple(eqn.outvars[0].aval.shape)
    return lhs, lc, out


@wrong(
    "dot_flops",
    why="'an exact int, however large': multiplies sizes in numpy int64; wraps silently past "
    "2**63, e.g. ShapeDtypeStruct (2**21, 2**21) @ (2**21, 2**21) gives 0 instead of 2**64",
)
def _rt4_dot_flops_int64(jaxpr):
    total = np.int64(0)
    for eqn in _rt4_walk(jaxpr):
        if eqn.primitive.name == "dot_general":
            lhs, lc, out = _rt4_dims(eqn)
            with np.errstate(over="ignore"):
                k = np.prod(np.array([lhs[a] for a in lc], dtype=np.int64), dtype=np.int64)
                o = np.prod(np.array(out, dtype=np.int64), dtype=np.int64)
                total = total + np.int64(2) * o * k
    return int(total)


@wrong(
    "dot_flops",
    why="'an exact int, however large': accumulates in float and rounds at the end; inexact past "
    "2**53, e.g. (300007, 300007) @ (300007, 300007) from ShapeDtypeStructs",
)
def _rt4_dot_flops_float(jaxpr):
    total = 0.0
    for eqn in _rt4_walk(jaxpr):
        if eqn.primitive.name == "dot_general":
            lhs, lc, out = _rt4_dims(eqn)
            total += (
                2.0
                * float(np.prod(out, dtype=np.float64))
                * float(np.prod([lhs[a] for a in lc], dtype=np.float64))
            )
    return int(total)


@wrong(
    "dot_flops",
    why="'every dot_general, wherever it sits': visits each nested jaxpr object once; wrong when "
    "one jitted matmul is called twice (g = jax.jit(jnp.matmul); lambda a, b: g(a, b) + g(a, b)):"
    " both pjit equations share one cached jaxpr, so one dot is dropped",
)
def _rt4_dot_flops_seen_jaxprs(jaxpr):
    total = 0
    for eqn in _rt4_walk(jaxpr, seen=set()):
        if eqn.primitive.name == "dot_general":
            lhs, lc, out = _rt4_dims(eqn)
            total += 2 * math.prod(out) * math.prod(lhs[a] for a in lc)
    return total


# --- cheaper_jacobian_mode --------------------------------------------------------------------


@wrong(
    "cheaper_jacobian_mode",
    why="compares inputs with outputs behind a factor 2 ('clearly tall'); wrong on a mildly tall "
    "f, e.g. two_layer(5, 8, 7): 5 inputs < 7 outputs makes jacfwd cheaper, it says jacrev",
)
def _rt4_cheaper_mode_ratio_two(f, x):
    out = jax.eval_shape(f, x)
    n_in, n_out = math.prod(jnp.shape(x)), math.prod(out.shape)
    return "jacfwd" if 2 * n_in <= n_out else "jacrev"


@wrong(
    "cheaper_jacobian_mode",
    why="counts outputs as the output's last axis; wrong on a matrix output, e.g. outer_tanh(A) "
    "with A (3, 5), x (5,): 15 outputs > 5 inputs (jacfwd), it sees 5 vs 5 and says jacrev",
)
def _rt4_cheaper_mode_last_axis(f, x):
    out = jax.eval_shape(f, x)
    n_in = math.prod(jnp.shape(x))
    n_out = out.shape[-1] if out.shape else 1
    return "jacfwd" if n_in < n_out else "jacrev"


@wrong(
    "cheaper_jacobian_mode",
    why="'every element is an input': sums the axes instead of multiplying them; wrong on x of "
    "shape (2, 2, 2) (8 inputs) with 7 outputs: says jacfwd (6 < 7), jacrev is cheaper",
)
def _rt4_cheaper_mode_sum_of_axes(f, x):
    out = jax.eval_shape(f, x)
    return "jacfwd" if sum(jnp.shape(x)) < sum(out.shape or (1,)) else "jacrev"


# --- batched_matvec ---------------------------------------------------------------------------


@wrong(
    "batched_matvec",
    why="'in the dtype one matvec gives': casts the result to W's dtype; wrong on W int8 with vs "
    "float32 (matvec promotes to float32, this returns int8)",
)
def _rt4_batched_matvec_w_dtype(W, vs, in_axes):
    return jax.vmap(matvec, in_axes=tuple(in_axes))(W, vs).astype(jnp.asarray(W).dtype)


@wrong(
    "batched_matvec",
    why="'map matvec itself (called once)': shortcut W @ v for a batched W and a shared v; wrong "
    "on in_axes (0, None) (W (batch, m, n), v (n,)): matvec is never called",
)
def _rt4_batched_matvec_shortcut(W, vs, in_axes):
    if tuple(in_axes) == (0, None):
        return jnp.asarray(W) @ jnp.asarray(vs)
    return jax.vmap(matvec, in_axes=tuple(in_axes))(W, vs)


@wrong(
    "batched_matvec",
    why="'return (batch, m)': squeezes the result; wrong on a batch of 1 or m = 1 (e.g. (None, 0)"
    " with W (1, 3), vs (5, 3): returns (5,) instead of (5, 1))",
)
def _rt4_batched_matvec_squeezed(W, vs, in_axes):
    return jnp.squeeze(jax.vmap(matvec, in_axes=tuple(in_axes))(W, vs))


# --- per_example_grads ------------------------------------------------------------------------


@wrong(
    "per_example_grads",
    why="'cost must grow linearly with the batch': switches to the Jacobian of the loss vector "
    "above batch 8; wrong (batch-squared cost) at batch 16 or 32",
)
def _rt4_per_example_grads_jac_large_batch(params, xs, ys):
    if jnp.shape(xs)[0] > 8:
        losses = lambda p: jax.vmap(example_loss, in_axes=(None, 0, 0))(p, xs, ys)  # noqa: E731
        return jax.jacrev(losses)(params)
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)


@wrong(
    "per_example_grads",
    why="'keeps its dtype': casts every leaf to xs's dtype; wrong on bfloat16 params with "
    "float32 xs and ys (leaves must stay bfloat16)",
)
def _rt4_per_example_grads_xs_dtype(params, xs, ys):
    g = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)
    return jax.tree.map(lambda a: a.astype(jnp.asarray(xs).dtype), g)


@wrong(
    "per_example_grads",
    why="'every leaf gets a leading batch axis': squeezes stray axes; wrong on a batch of 1 (and "
    "on a size-1 leaf axis, e.g. 1 output: b2 (1,))",
)
def _rt4_per_example_grads_squeezed(params, xs, ys):
    g = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)
    return jax.tree.map(jnp.squeeze, g)


# --- directional_derivative -------------------------------------------------------------------


def _rt4_is_traced(a):
    return isinstance(a, jax.core.Tracer)


@wrong(
    "directional_derivative",
    why="'every call is held to the budget, traced or on concrete arrays': jvp only under "
    "tracing, jacfwd(f)(x) @ v when called eagerly on concrete arrays (full Jacobian)",
)
def _rt4_directional_derivative_eager_jacobian(f, x, v):
    if _rt4_is_traced(x) or _rt4_is_traced(v):
        return jax.jvp(f, (x,), (v,))[1]
    return jax.jacfwd(f)(x) @ v


@wrong(
    "directional_derivative",
    why="'at most a quarter of the flops at every size': uses jacrev(f)(x) @ v for 'large' n > 32;"
    " wrong at n = 64 (e.g. tanh_pair(64, 32, 64): jacrev costs about as much as jacfwd)",
)
def _rt4_directional_derivative_rev_for_large_n(f, x, v):
    if jnp.shape(x)[0] > 32:
        return jax.jacrev(f)(x) @ v
    return jax.jvp(f, (x,), (v,))[1]


@wrong(
    "directional_derivative",
    why="'J @ v, f: R^n -> R^m': shortcut zeros_like(x) for a concrete v = 0; wrong shape (n,) "
    "instead of (m,) when m != n (tanh_pair(16, 24, 8), v = 0)",
)
def _rt4_directional_derivative_zero_shortcut(f, x, v):
    if not _rt4_is_traced(v) and not np.any(np.asarray(v)):
        return jnp.zeros_like(x)
    return jax.jvp(f, (x,), (v,))[1]


# --- hessian_vector_product -------------------------------------------------------------------


@wrong(
    "hessian_vector_product",
    why="'every call is held to the budget, traced or on concrete arrays': forward-over-reverse "
    "only under tracing, jax.hessian(g)(x) @ v eagerly on concrete arrays",
)
def _rt4_hvp_eager_hessian(g, x, v):
    if _rt4_is_traced(x) or _rt4_is_traced(v):
        return jax.jvp(jax.grad(g), (x,), (v,))[1]
    return jax.hessian(g)(x) @ v


@wrong(
    "hessian_vector_product",
    why="'a quarter of the flops at every size': builds the Hessian with jacrev(grad) when n > 32;"
    " wrong at n = 64 (layer_energy of tanh_pair(64, 16, 1)[0])",
)
def _rt4_hvp_hessian_for_large_n(g, x, v):
    if jnp.shape(x)[0] > 32:
        return jax.jacrev(jax.grad(g))(x) @ v
    return jax.jvp(jax.grad(g), (x,), (v,))[1]


@wrong(
    "hessian_vector_product",
    why="'the same values': central difference of gradients with a fixed step (not scaled by |v|);"
    " wrong by far more than rounding on a large v (|v| ~ 100) or at abs_energy's kinks",
)
def _rt4_hvp_finite_difference(g, x, v):
    eps = 1e-3
    gr = jax.grad(g)
    return (gr(x + eps * v) - gr(x - eps * v)) / (2 * eps)


# --- vmapped_shape ----------------------------------------------------------------------------


@wrong(
    "vmapped_shape",
    why="'a negative out_axes counts from the end' (of the result, always rank 2): counts it from "
    "len(w_shape) - 1, right only when W carries the batch; wrong on ((4, 3), (5, 3), (None, 0), "
    "-1): is (4, 5), says (5, 4)",
)
def _rt4_vmapped_shape_rank_from_w(w_shape, v_shape, in_axes, out_axes):
    a, b = in_axes
    batch = w_shape[a] if a is not None else v_shape[b]
    w_one = list(w_shape)
    if a is not None:
        del w_one[a]
    res = [w_one[0]]
    pos = out_axes if out_axes >= 0 else (len(w_shape) - 1) + out_axes
    res.insert(pos, batch)
    return tuple(res)


@wrong(
    "vmapped_shape",
    why="'a negative out_axes counts from the end': treats any negative out_axes as 'last'; "
    "wrong on out_axes = -2 (((4, 3), (5, 3), (None, 0), -2) is (5, 4), it says (4, 5))",
)
def _rt4_vmapped_shape_negative_is_last(w_shape, v_shape, in_axes, out_axes):
    a, b = in_axes
    batch = w_shape[a] if a is not None else v_shape[b]
    if a is None:
        m = w_shape[0]
    else:
        w_one = list(w_shape)
        del w_one[a]
        m = w_one[0]
    pos = 1 if out_axes < 0 else out_axes
    res = [m]
    res.insert(pos, batch)
    return tuple(res)


@wrong(
    "vmapped_shape",
    why="'negative in_axes counted from the end': takes m as W's axis 1 only when in_axes[0] == 0;"
    " wrong on in_axes (-3, None) with W (5, 4, 3): says m = 5",
)
def _rt4_vmapped_shape_axis0_literal(w_shape, v_shape, in_axes, out_axes):
    a, b = in_axes
    batch = w_shape[a] if a is not None else v_shape[b]
    m = w_shape[1] if a == 0 else w_shape[0]
    res = [m]
    res.insert(out_axes % 2, batch)
    return tuple(res)


# --- jacobian_shapes --------------------------------------------------------------------------


@wrong(
    "jacobian_shapes",
    why="'one number per (output, input) pair': gives a scalar-by-scalar Jacobian shape (1,); "
    "wrong on a scalar output with a scalar leaf (((), {'a': ()}) is {'a': ()})",
)
def _rt4_jacobian_shapes_scalar_pair(out_shape, param_shapes):
    return {k: (tuple(out_shape) + tuple(s)) or (1,) for k, s in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="'f(params) has shape out_shape': drops size-1 output axes as if they were not outputs; "
    "wrong on out_shape (3, 1) or (1,) (((1,), {'z': (5,)}) is {'z': (1, 5)})",
)
def _rt4_jacobian_shapes_drop_unit_out(out_shape, param_shapes):
    out = tuple(d for d in out_shape if d != 1)
    return {k: out + tuple(s) for k, s in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="treats every leaf as a (rows, cols) matrix: folds a rank-3 leaf's trailing axes; wrong "
    "on ((2,), {'k': (3, 3, 4)}) (is (2, 3, 3, 4), says (2, 3, 12))",
)
def _rt4_jacobian_shapes_leaf_as_matrix(out_shape, param_shapes):
    res = {}
    for k, s in param_shapes.items():
        s = tuple(s)
        if len(s) > 2:
            s = (s[0], math.prod(s[1:]))
        res[k] = tuple(out_shape) + s
    return res
