"""Red-team wrong answers for phase 5, written from the contract only.

Round 3: every answer below agrees with a correct one on the examples in programs.py (or on most
of them) and is wrong on a valid input named in its `why`: relu ties, another dtype, another
rank, a size-1 axis, a while condition, a cond's other branch, int32 overflow, negative axes,
the zero vector, non-holomorphic functions, a loop hidden behind lax.map, an extra call.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.decoys import wrong
from katas.phase5.kata import example_loss, matvec, mse_loss

# --- task 1: mlp_grad ---------------------------------------------------------------------


@wrong(
    "mlp_grad",
    why="the gradient of mse_loss (jax.nn.relu, whose derivative at 0 is 0) is replaced by the "
    "gradient of a rewritten loss with jnp.maximum(h, 0), whose derivative at a tie is 0.5; "
    "wrong on x = 0 with b1 = 0 (every pre-activation exactly 0: w1 and b1 get half a gradient)",
)
def _rt3_grad_of_maximum_relu(params, x, y):
    def loss(p):
        h = jnp.maximum(x @ p["w1"] + p["b1"], 0.0)
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    return jax.grad(loss)(params)


@wrong(
    "mlp_grad",
    why="hand-written backprop with the relu mask (pre >= 0) instead of JAX's relu derivative "
    "(0 at 0); equal wherever no pre-activation is exactly 0, wrong on x = 0, b1 = 0 (or any "
    "column of x @ w1 + b1 hitting 0 exactly, e.g. integer-valued data)",
)
def _rt3_handwritten_backprop_ge(params, x, y):
    pre = x @ params["w1"] + params["b1"]
    a = jnp.maximum(pre, 0.0)
    out = a @ params["w2"] + params["b2"]
    d = 2.0 * (out - y) / out.size
    da = d @ params["w2"].T
    dpre = da * (pre >= 0).astype(da.dtype)
    return {
        "w1": x.T @ dpre,
        "b1": dpre.sum(0),
        "w2": a.T @ d,
        "b2": d.sum(0),
    }


@wrong(
    "mlp_grad",
    why="upcasts params, x and y to float32 'for accuracy': the gradient of mse_loss at bfloat16 "
    "(or float16) params is a bfloat16 dict computed in bfloat16; this returns float32 leaves "
    "with other values; wrong on bfloat16 params",
)
def _rt3_grad_in_float32(params, x, y):
    up = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    return jax.grad(mse_loss)(up, jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))


# --- task 2: jvp_tangent ------------------------------------------------------------------

_rt3_H = 1e-20


@wrong(
    "jvp_tangent",
    why="complex-step derivative Im(f(x + i h v)) / h: exact to float32 rounding for an analytic "
    "f such as sin_ax_norm or tanh layers, but J @ v is wrong for a non-holomorphic f: "
    "f = jnp.abs (gives 0), f = lambda x: jnp.real(x * jnp.conj(x)), relu/jnp.maximum",
)
def _rt3_complex_step_jvp(f, x, v):
    z = jnp.asarray(x, jnp.complex64) + 1j * _rt3_H * jnp.asarray(v, jnp.complex64)
    fz = f(z)
    return jnp.real(fz).astype(jnp.result_type(x)), (jnp.imag(fz) / _rt3_H).astype(
        jnp.result_type(x)
    )


@wrong(
    "jvp_tangent",
    why="builds J with jacfwd and multiplies with `@`: right for a vector x, but for a matrix x "
    "J has shape out + x.shape and `J @ v` is a batched matmul, not the contraction over x's "
    "axes; wrong on x of shape (3, 3) (f = lambda X: jnp.sin(X).sum(0))",
)
def _rt3_jacobian_matmul_tangent(f, x, v):
    return f(x), jax.jacfwd(f)(x) @ v


@wrong(
    "jvp_tangent",
    why="casts x and v to float32 before jvp: f(x) and J @ v for a bfloat16 (or float16) x come "
    "back float32 with other values; wrong on a bfloat16 x",
)
def _rt3_jvp_in_float32(f, x, v):
    return jax.jvp(f, (jnp.asarray(x, jnp.float32),), (jnp.asarray(v, jnp.float32),))


# --- task 3: vjp_cotangent ----------------------------------------------------------------


@wrong(
    "vjp_cotangent",
    why="J.T @ ct taken literally from the docstring with jacrev: right for a vector x, but for a "
    "matrix x, J.T reverses every axis and the result is ct @ J transposed (shape x.shape[::-1]); "
    "wrong on x of shape (2, 3), or any square non-symmetric result, e.g. x of shape (3, 3)",
)
def _rt3_jacrev_transpose_matmul(f, x, ct):
    return jax.jacrev(f)(x).T @ ct


@wrong(
    "vjp_cotangent",
    why="turns the vjp function's 1-tuple into an array with jnp.asarray and squeezes the extra "
    "axis away: also squeezes x's own size-1 axes, so the result is not shaped like x; wrong on x "
    "of shape (1,) or (4, 1)",
)
def _rt3_squeezed_vjp(f, x, ct):
    _, pull = jax.vjp(f, x)
    return jnp.squeeze(jnp.asarray(pull(ct)))


@wrong(
    "vjp_cotangent",
    why="evaluates the vjp at x cast to float32: the cotangent for a bfloat16 (or float16) x "
    "comes back float32, computed at another precision; wrong on a bfloat16 x",
)
def _rt3_vjp_in_float32(f, x, ct):
    y, pull = jax.vjp(f, jnp.asarray(x, jnp.float32))
    return pull(jnp.asarray(ct, y.dtype))[0]


# --- task 4: jacobian ---------------------------------------------------------------------


@wrong(
    "jacobian",
    why="the modes swapped (fwd -> jacrev, rev -> jacfwd): same numbers, but 'fwd' is built row "
    "by row with one vjp per output and 'rev' column by column; wrong for every f (e.g. the tall "
    "4 -> 64 network: mode 'rev' pushes 4 tangents, no (64, 64) cotangent basis)",
)
def _rt3_modes_swapped(f, x, mode):
    return jax.jacrev(f)(x) if mode == "fwd" else jax.jacfwd(f)(x)


@wrong(
    "jacobian",
    why="ignores mode and picks the cheaper one from the shapes: right whenever the asked mode "
    "is the cheaper one; wrong on mode 'rev' for a tall f (4 inputs, 64 outputs) and mode 'fwd' "
    "for a wide one (64 -> 4)",
)
def _rt3_cheaper_mode_always(f, x, mode):
    out = jax.eval_shape(f, x)
    return jax.jacfwd(f)(x) if np.size(x) <= math.prod(out.shape) else jax.jacrev(f)(x)


@wrong(
    "jacobian",
    why="hand-made forward mode: vmap of jvp over the identity basis, then `.T` to put the input "
    "axis last: right for a vector or scalar output, but `.T` also reverses the output's axes; "
    "wrong on an f with a matrix output, e.g. f = lambda x: jnp.outer(x, x[:2]) (shape (n, 2, n) "
    "comes back (2, n, n))",
)
def _rt3_eye_vmap_transpose(f, x, mode):
    if mode == "rev":
        return jax.jacrev(f)(x)
    basis = jnp.eye(x.size, dtype=x.dtype)
    return jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1])(basis).T


# --- task 5: dot_flops --------------------------------------------------------------------


def _rt3_eqns(jaxpr):
    eqns = getattr(jaxpr, "eqns", None)
    if eqns is None:
        eqns = getattr(getattr(jaxpr, "jaxpr", None), "eqns", None)
    return eqns


def _rt3_nested(value):
    if _rt3_eqns(value) is not None:
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if _rt3_eqns(v) is not None]
    return []


def _rt3_dot_terms(eqn):
    """(output shape, contracted sizes) of a dot_general equation."""
    (lc, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    return tuple(eqn.outvars[0].aval.shape), tuple(lhs[i] for i in lc)


def _rt3_one_dot(eqn):
    out, k = _rt3_dot_terms(eqn)
    return 2 * math.prod(out) * math.prod(k)


@wrong(
    "dot_flops",
    why="a cond runs one branch, so this counts the costlier branch (max), not both: the contract "
    "counts every dot_general once wherever it sits, both branches of a cond; wrong on in_cond "
    "(a @ b in both branches: 2x the dot, not 1x), right on every program without a cond",
)
def _rt3_cond_max_branch(jaxpr):
    def walk(j):
        total = 0
        for eqn in _rt3_eqns(j):
            if eqn.primitive.name == "dot_general":
                total += _rt3_one_dot(eqn)
            if eqn.primitive.name == "cond":
                total += max(walk(b) for b in eqn.params["branches"])
                continue
            for value in eqn.params.values():
                for inner in _rt3_nested(value):
                    total += walk(inner)
        return total

    return int(walk(jaxpr))


_rt3_KNOWN = ("jaxpr", "branches", "body_jaxpr", "call_jaxpr", "fun_jaxpr")


@wrong(
    "dot_flops",
    why="recurses only into the nested-jaxpr params it knows (jit/scan/checkpoint 'jaxpr', cond "
    "'branches', while 'body_jaxpr', custom_jvp 'call_jaxpr'): misses a while loop's "
    "cond_jaxpr; wrong on lax.while_loop(lambda c: jnp.sum(c @ b) < 10.0, lambda c: c + 1, a), "
    "whose only dot sits in the condition",
)
def _rt3_known_param_names(jaxpr):
    def walk(j):
        total = 0
        for eqn in _rt3_eqns(j):
            if eqn.primitive.name == "dot_general":
                total += _rt3_one_dot(eqn)
            for key in _rt3_KNOWN:
                for inner in _rt3_nested(eqn.params.get(key)):
                    total += walk(inner)
        return total

    return int(walk(jaxpr))


@wrong(
    "dot_flops",
    why="multiplies the sizes in jnp (int32 under JAX's default x32): exact on every small bank, "
    "wraps around once a count passes 2**31; wrong on a (4096, 4096) @ (4096, 4096) matmul "
    "(2 * 4096**3 flops, traced with ShapeDtypeStructs, nothing allocated)",
)
def _rt3_int32_product(jaxpr):
    total = 0
    for j_eqn in _rt3_all(jaxpr):
        if j_eqn.primitive.name == "dot_general":
            out, k = _rt3_dot_terms(j_eqn)
            total += int(2 * jnp.prod(jnp.array((*out, *k, 1), jnp.int32)))
    return int(total)


def _rt3_all(jaxpr):
    for eqn in _rt3_eqns(jaxpr):
        yield eqn
        for value in eqn.params.values():
            for inner in _rt3_nested(value):
                yield from _rt3_all(inner)


# --- task 6: cheaper_jacobian_mode --------------------------------------------------------


@wrong(
    "cheaper_jacobian_mode",
    why="assumes one reverse pass costs about twice a forward pass, so takes jacrev only when "
    "inputs > 2 * outputs: both Jacobians of a tanh layer pair cost (sizes) x the same passes, "
    "so with 5 < inputs <= 10 against 5 outputs jacrev is cheaper; wrong on x of 9 (or 7) "
    "inputs and 5 outputs (13 -> 5 in the bank passes since 13 > 10)",
)
def _rt3_reverse_costs_twice(f, x):
    outputs = math.prod(jax.eval_shape(f, x).shape)
    return "jacrev" if np.size(x) > 2 * outputs else "jacfwd"


@wrong(
    "cheaper_jacobian_mode",
    why="counts every element of x but only the leading axis of f(x) (1 for a scalar): right "
    "for vector and scalar outputs; wrong on an output of rank 2 or 3, e.g. x of 10 inputs and "
    "f(x) of shape (2, 8) (16 outputs: jacfwd, not jacrev)",
)
def _rt3_outputs_leading_axis(f, x):
    out = jax.eval_shape(f, x).shape
    outputs = out[0] if out else 1
    return "jacfwd" if np.size(x) < outputs else "jacrev"


@wrong(
    "cheaper_jacobian_mode",
    why="compares bytes (x.nbytes against the output's bytes) instead of element counts: equal "
    "whenever x and f(x) share a dtype; wrong on a bfloat16 x of 10 elements with a float32 "
    "output of 6 (20 < 24 bytes says jacfwd; 10 inputs > 6 outputs: jacrev)",
)
def _rt3_compares_bytes(f, x):
    out = jax.eval_shape(f, x)
    out_bytes = math.prod(out.shape) * np.dtype(out.dtype).itemsize
    x_bytes = np.size(x) * np.dtype(jnp.result_type(x)).itemsize
    return "jacfwd" if x_bytes < out_bytes else "jacrev"


# --- task 7: batched_matvec ---------------------------------------------------------------


def _rt3_to_front(a, axis):
    return a if axis is None else jnp.moveaxis(a, axis, 0)


@wrong(
    "batched_matvec",
    why="lax.map with batch_size = half the batch: matvec is traced once with one example's "
    "shapes and the values are right, but it is a 2-trip loop (scan/while) of vmapped halves, "
    "which the contract forbids; wrong on every even batch >= 2 (e.g. (None, 0) with 8 vs)",
)
def _rt3_lax_map_halves(W, vs, in_axes):
    wa, va = in_axes
    Wf, vf = _rt3_to_front(W, wa), _rt3_to_front(vs, va)
    batch = (Wf if wa is not None else vf).shape[0]
    if wa is None:
        return lax.map(lambda v: matvec(W, v), vf, batch_size=max(1, batch // 2))
    if va is None:
        return lax.map(lambda w: matvec(w, vs), Wf, batch_size=max(1, batch // 2))
    return lax.map(lambda wv: matvec(*wv), (Wf, vf), batch_size=max(1, batch // 2))


@wrong(
    "batched_matvec",
    why="casts W and vs to float32 before vmap: the dtype of matvec's result is lost; wrong on "
    "int8 (or int32) W and vs, where W @ v stays integer (int8 wraps: 100 * 2 + 100 * 2 is -112 "
    "in int8), and on bfloat16 inputs",
)
def _rt3_vmap_in_float32(W, vs, in_axes):
    return jax.vmap(matvec, in_axes=in_axes)(
        jnp.asarray(W, jnp.float32), jnp.asarray(vs, jnp.float32)
    )


@wrong(
    "batched_matvec",
    why="vmap, plus a self-check that calls matvec again on the first example to confirm the "
    "output width: the values are right, but matvec is called twice (once eagerly on "
    "example 0), where the contract says it is mapped and called once; wrong on every input",
)
def _rt3_vmap_with_self_check(W, vs, in_axes):
    out = jax.vmap(matvec, in_axes=in_axes)(W, vs)
    wa, va = in_axes
    w0 = W if wa is None else jnp.take(W, 0, axis=wa)
    v0 = vs if va is None else jnp.take(vs, 0, axis=va)
    if matvec(w0, v0).shape[0] != out.shape[1]:
        raise ValueError("batched_matvec: unexpected output width")
    return out


# --- task 8: per_example_grads ------------------------------------------------------------


@wrong(
    "per_example_grads",
    why="vmap(grad) of a rewritten example loss with jnp.maximum(h, 0) (derivative 0.5 at a tie) "
    "instead of example_loss's jax.nn.relu (0 at 0); wrong on an example x = 0 with b1 = 0",
)
def _rt3_vmap_grad_maximum_relu(params, xs, ys):
    def loss(p, x, y):
        h = jnp.maximum(x @ p["w1"] + p["b1"], 0.0)
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)


@wrong(
    "per_example_grads",
    why="hand-written per-example backprop with batched outer products (linear cost) and the "
    "relu mask (pre >= 0): gives 1, not JAX's 0, as relu's derivative at 0; wrong on an example "
    "whose pre-activation is exactly 0 (x = 0, b1 = 0)",
)
def _rt3_einsum_backprop_ge(params, xs, ys):
    pre = xs @ params["w1"] + params["b1"]
    a = jnp.maximum(pre, 0.0)
    out = a @ params["w2"] + params["b2"]
    d = 2.0 * (out - ys) / out.shape[-1]
    dpre = (d @ params["w2"].T) * (pre >= 0).astype(d.dtype)
    return {
        "w1": jnp.einsum("bi,bh->bih", xs, dpre),
        "b1": dpre,
        "w2": jnp.einsum("bh,bo->bho", a, d),
        "b2": d,
    }


@wrong(
    "per_example_grads",
    why="computes in float32 whatever the params' dtype: per-example gradients of bfloat16 "
    "params come back float32 with other values; wrong on bfloat16 params",
)
def _rt3_per_example_in_float32(params, xs, ys):
    up = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(
        up, jnp.asarray(xs, jnp.float32), jnp.asarray(ys, jnp.float32)
    )


# --- task 9: directional_derivative -------------------------------------------------------


@wrong(
    "directional_derivative",
    why="jvp along the unit vector v / |v|, scaled back by |v| ('directional derivatives use "
    "unit directions'): the same numbers and flops for every v != 0, NaN for v = 0, where "
    "J @ 0 = 0; wrong on v = 0",
)
def _rt3_unit_direction_jvp(f, x, v):
    norm = jnp.linalg.norm(v)
    return jax.jvp(f, (x,), (v / norm,))[1] * norm


@wrong(
    "directional_derivative",
    why="complex step Im(f(x + i h v)) / h with h = 1e-20: one complex forward pass, equal to "
    "J @ v to float32 rounding for analytic f like the tanh layer pair, but not J @ v for a "
    "non-holomorphic f: f = lambda x: jnp.abs(x) * 2 (gives 0), relu, jnp.maximum, conj",
)
def _rt3_complex_step_direction(f, x, v):
    z = jnp.asarray(x, jnp.complex64) + 1j * _rt3_H * jnp.asarray(v, jnp.complex64)
    return (jnp.imag(f(z)) / _rt3_H).astype(jnp.result_type(x))


_rt3_LINEARIZED: dict = {}  # (id(f), shape) -> (f, linear map): "linearize once, reuse it"


@wrong(
    "directional_derivative",
    why="memoizes jax.linearize(f, x) per function (traced calls take plain jvp, so the compiled "
    "cost is jvp's): the linear map is J at the FIRST x it saw, so J @ v at any later x of the "
    "same f comes out as J(x0) @ v; wrong on the second of two points (x0, v), (x1, v) with one f",
)
def _rt3_memoized_linearization(f, x, v):
    if isinstance(x, jax.core.Tracer) or isinstance(v, jax.core.Tracer):
        return jax.jvp(f, (x,), (v,))[1]
    key = (id(f), np.shape(x))
    if key not in _rt3_LINEARIZED:
        _rt3_LINEARIZED[key] = (f, jax.linearize(f, x)[1])
    return _rt3_LINEARIZED[key][1](v)


# --- task 10: hessian_vector_product ------------------------------------------------------


@wrong(
    "hessian_vector_product",
    why="forward over forward: jacfwd of x -> (grad g(x) . v) computed with jvp: H @ v by "
    "value, but jacfwd pushes n tangents through a jvp, about 2/3 of building the Hessian; over "
    "a quarter of jax.hessian(g)(x) @ v at every size (e.g. n = 16)",
)
def _rt3_jacfwd_of_jvp(g, x, v):
    return jax.jacfwd(lambda y: jax.jvp(g, (y,), (v,))[1])(x)


@wrong(
    "hessian_vector_product",
    why="complex step on the holomorphic gradient, Im(grad g(x + i h v)) / h: equal to H @ v to "
    "float32 rounding for an analytic g like layer_energy, wrong for a non-holomorphic g, e.g. "
    "g = lambda x: jnp.sum(jnp.abs(x) ** 3) (abs of a complex number is not analytic)",
)
def _rt3_complex_step_hvp(g, x, v):
    z = jnp.asarray(x, jnp.complex64) + 1j * _rt3_H * jnp.asarray(v, jnp.complex64)
    grad = jax.grad(lambda u: g(u).astype(jnp.complex64), holomorphic=True)(z)
    return (jnp.imag(grad) / _rt3_H).astype(jnp.result_type(x))


@wrong(
    "hessian_vector_product",
    why="forward-over-reverse along the unit vector v / |v|, scaled back: the same numbers and "
    "flops for every v != 0, NaN for v = 0 (H @ 0 = 0); wrong on v = 0",
)
def _rt3_unit_direction_hvp(g, x, v):
    norm = jnp.linalg.norm(v)
    return jax.jvp(jax.grad(g), (x,), (v / norm,))[1] * norm


# --- task 11: vmapped_shape ---------------------------------------------------------------


def _rt3_batch(w_shape, v_shape, in_axes):
    wa, va = in_axes
    return w_shape[wa] if wa is not None else v_shape[va]


def _rt3_rows(w_shape, wa):
    w = list(w_shape)
    if wa is not None:
        del w[wa]
    return w[0]


@wrong(
    "vmapped_shape",
    why="out_axes 0 gives (batch, m) and anything else (m, batch): right for 0, 1 and -1, wrong "
    "for out_axes = -2 (counts from the end of a rank-2 result: the batch comes first), e.g. "
    "((4, 3), (5, 3), (None, 0), -2) is (5, 4), not (4, 5)",
)
def _rt3_out_axes_nonzero_last(w_shape, v_shape, in_axes, out_axes):
    b, m = _rt3_batch(w_shape, v_shape, in_axes), _rt3_rows(w_shape, in_axes[0])
    return (b, m) if out_axes == 0 else (m, b)


@wrong(
    "vmapped_shape",
    why="the batch size is W's mapped axis, or else v's leading axis: right whenever a shared W "
    "comes with v batched on axis 0 (every example with W shared); wrong on in_axes (None, 1), "
    "e.g. ((4, 3), (3, 7), (None, 1), 0) is (7, 4), not (3, 4)",
)
def _rt3_batch_from_v_leading(w_shape, v_shape, in_axes, out_axes):
    wa, _ = in_axes
    b = w_shape[wa] if wa is not None else v_shape[0]
    m = _rt3_rows(w_shape, wa)
    return (b, m) if out_axes % 2 == 0 else (m, b)


@wrong(
    "vmapped_shape",
    why="W's rows are w_shape[1] when W is batched on axis 0, else w_shape[0]: right for every "
    "non-negative in_axes, wrong for a negative one (vmap accepts in_axes counted from the end): "
    "((6, 4, 3), (6, 3), (-3, 0), 0) is (6, 4), not (6, 6)",
)
def _rt3_rows_by_axis_zero(w_shape, v_shape, in_axes, out_axes):
    wa, _ = in_axes
    b = _rt3_batch(w_shape, v_shape, in_axes)
    m = w_shape[1] if wa == 0 else w_shape[0]
    return (b, m) if out_axes % 2 == 0 else (m, b)


# --- task 12: jacobian_shapes -------------------------------------------------------------


@wrong(
    "jacobian_shapes",
    why="drops size-1 output axes ('a single output is a gradient'): right for every output "
    "without a 1 in its shape; wrong on out_shape (1,) or (1, 3), e.g. (1, 3) with w (3, 2) is "
    "(1, 3, 3, 2), not (3, 3, 2)",
)
def _rt3_squeeze_unit_outputs(out_shape, param_shapes):
    out = tuple(d for d in out_shape if d != 1)
    return {name: out + tuple(shape) for name, shape in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="returns each shape as a list (out + param dims): the contract asks for shape tuples, "
    "and a list never equals the tuple jax.eval_shape reports; wrong on every input",
)
def _rt3_shapes_as_lists(out_shape, param_shapes):
    return {name: [*out_shape, *shape] for name, shape in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="a Jacobian 'has at least one axis': an empty shape becomes (1,); right unless both the "
    "output and a leaf are scalars; wrong on out_shape () with a scalar leaf, e.g. "
    "((), {'a': ()}) is {'a': ()}, not {'a': (1,)}",
)
def _rt3_never_empty(out_shape, param_shapes):
    return {name: (tuple(out_shape) + tuple(shape)) or (1,) for name, shape in param_shapes.items()}
