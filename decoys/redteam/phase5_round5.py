"""Red-team wrong answers for phase 5, written from the contract only."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt5_mlp(params, x, act):
    return act(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


# ---------------------------------------------------------------- mlp_grad
@wrong(
    "mlp_grad",
    why="relu's derivative at 0 must be jax.nn.relu's (0); (z+|z|)/2 has 0.5 "
    "there; wrong on inputs where a hidden pre-activation is exactly 0 (ties)",
)
def _rt5_mlp_grad_abs_relu(params, x, y):
    def act(z):
        return (z + jnp.abs(z)) / 2

    return jax.grad(lambda p: jnp.mean((_rt5_mlp(p, x, act) - y) ** 2))(params)


@wrong(
    "mlp_grad",
    why="same dtypes as params: any non-float32 params are turned into bfloat16; "
    "wrong on float16 params (gradient comes back bfloat16)",
)
def _rt5_mlp_grad_bf16_hardcoded(params, x, y):
    from katas.phase5.kata import mse_loss

    g = jax.grad(mse_loss)(params, x, y)
    return jax.tree.map(
        lambda l, p: l if p.dtype == jnp.float32 else l.astype(jnp.bfloat16), g, params
    )


@wrong(
    "mlp_grad",
    why="the gradient of the MEAN over batch*out: this divides by the batch "
    "only (sum over outputs); wrong whenever out > 1, e.g. sizes (5, 7, 3)",
)
def _rt5_mlp_grad_batch_denominator(params, x, y):
    def loss(p):
        return jnp.sum((_rt5_mlp(p, x, jax.nn.relu) - y) ** 2) / x.shape[0]

    return jax.grad(loss)(params)


# ---------------------------------------------------------------- jvp_tangent
@wrong(
    "jvp_tangent",
    why="shaped like f(x): the Jacobian is flattened to (outputs, inputs) "
    "and the flat product returned; wrong shape for a matrix-valued f (outer_tanh) or a scalar f",
)
def _rt5_jvp_tangent_flat(f, x, v):
    y = f(x)
    J = jax.jacfwd(f)(x)
    return y, J.reshape(-1, np.size(x)) @ jnp.reshape(v, -1)


@wrong(
    "jvp_tangent",
    why="typed like f(x): the tangent is returned as float32; wrong for a "
    "bfloat16 (or float16) x and f",
)
def _rt5_jvp_tangent_f32(f, x, v):
    y, t = jax.jvp(f, (x,), (v,))
    return y, t.astype(jnp.float32)


@wrong(
    "jvp_tangent",
    why="the exact derivative, not a central finite difference (eps 1e-2): "
    "wrong by O(eps^2 * f''') on any curved f, e.g. sin(A x) with large entries of A",
)
def _rt5_jvp_tangent_finite_diff(f, x, v):
    eps = 1e-2
    return f(x), (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


# ---------------------------------------------------------------- vjp_cotangent
@wrong(
    "vjp_cotangent",
    why="shaped like x (any shape): flattened ct @ flattened J returns a "
    "flat vector; wrong shape for a (6, 5) matrix x",
)
def _rt5_vjp_cotangent_flat(f, x, ct):
    J = jax.jacrev(f)(x)
    return jnp.reshape(ct, -1) @ J.reshape(np.size(ct), -1)


@wrong(
    "vjp_cotangent",
    why="J.T @ ct, not J @ ct: when f(x) is shaped like x the jvp is used; "
    "wrong on any square non-symmetric Jacobian, e.g. sin(A x) with A (4, 4)",
)
def _rt5_vjp_cotangent_jvp_when_square(f, x, ct):
    if ct.shape == x.shape:
        return jax.jvp(f, (x,), (ct,))[1]
    return jax.vjp(f, x)[1](ct)[0]


@wrong("vjp_cotangent", why="typed like x: returned as float32; wrong for a bfloat16 x")
def _rt5_vjp_cotangent_f32(f, x, ct):
    return jax.vjp(f, x)[1](ct)[0].astype(jnp.float32)


# ---------------------------------------------------------------- jacobian
@wrong(
    "jacobian",
    why="mode 'fwd' must build it column by column (forward mode): the modes are "
    "swapped (same numbers, wrong program: jvp/vjp and transposes), on every f",
)
def _rt5_jacobian_swapped(f, x, mode):
    return (jax.jacrev if mode == "fwd" else jax.jacfwd)(f)(x)


@wrong(
    "jacobian",
    why="shape f(x).shape + x.shape: this flattens to (out, in); wrong for a "
    "(6, 5) matrix x (gives (8, 30), not (8, 6, 5))",
)
def _rt5_jacobian_flat(f, x, mode):
    xf = x.reshape(-1)

    def g(z):
        return jnp.ravel(f(z.reshape(x.shape)))

    return (jax.jacfwd if mode == "fwd" else jax.jacrev)(g)(xf)


@wrong(
    "jacobian",
    why="'rev' builds rows, so the result is transposed here when it is square; "
    "wrong on a square non-symmetric Jacobian in mode 'rev' (sin(A x), A (4, 4))",
)
def _rt5_jacobian_rev_transposed(f, x, mode):
    if mode == "fwd":
        return jax.jacfwd(f)(x)
    J = jax.jacrev(f)(x)
    return J.T if J.ndim == 2 and J.shape[0] == J.shape[1] else J


# ---------------------------------------------------------------- dot_flops
def _rt5_dot(eqn, prod):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    k = prod([lhs[a] for a in lc])
    return 2 * prod(eqn.outvars[0].aval.shape) * k


def _rt5_sub(value):
    if hasattr(value, "jaxpr") and hasattr(value, "consts"):
        return [value.jaxpr]
    if hasattr(value, "eqns"):
        return [value]
    if isinstance(value, (tuple, list)):
        return [s for v in value for s in _rt5_sub(v)]
    return []


@wrong(
    "dot_flops",
    why="an exact int however large: np.prod in int64 wraps past 2**63; wrong "
    "on ShapeDtypeStruct operands (2**21, 2**21) @ (2**21, 2**21) (2**64 flops)",
)
def _rt5_dot_flops_int64(jaxpr):
    def prod(s):
        return np.prod(np.asarray(s, dtype=np.int64), dtype=np.int64)

    j = getattr(jaxpr, "jaxpr", jaxpr)
    total = np.int64(0)
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            with np.errstate(over="ignore"):
                total = total + np.int64(_rt5_dot(eqn, prod))
        for v in eqn.params.values():
            for s in _rt5_sub(v):
                with np.errstate(over="ignore"):
                    total = total + np.int64(_rt5_dot_flops_int64(s))
    return int(total)


@wrong(
    "dot_flops",
    why="nested jaxprs wherever they sit: only a known list of primitives is "
    "opened (jit, cond, scan, while, custom_jvp, checkpoint); misses a custom_vjp's call_jaxpr "
    "(or any other nesting primitive), e.g. a custom_vjp function doing a @ b",
)
def _rt5_dot_flops_known_prims(jaxpr):
    known = {
        "pjit",
        "jit",
        "closed_call",
        "core_call",
        "cond",
        "scan",
        "while",
        "custom_jvp_call",
        "checkpoint",
        "remat",
        "remat2",
    }
    j = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            total += _rt5_dot(eqn, math.prod)
        if eqn.primitive.name in known:
            for v in eqn.params.values():
                for s in _rt5_sub(v):
                    total += _rt5_dot_flops_known_prims(s)
    return total


@wrong(
    "dot_flops",
    why="a nested jaxpr is opened one level deep only (ENTRY's equations' "
    "params), not recursively; wrong on a dot inside a cond inside a scan body",
)
def _rt5_dot_flops_one_level(jaxpr):
    j = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            total += _rt5_dot(eqn, math.prod)
        for v in eqn.params.values():
            for s in _rt5_sub(v):
                total += sum(
                    _rt5_dot(e, math.prod) for e in s.eqns if e.primitive.name == "dot_general"
                )
    return total


# ---------------------------------------------------------------- cheaper_jacobian_mode
def _rt5_out(f, x):
    return jax.eval_shape(f, jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x)))


@wrong(
    "cheaper_jacobian_mode",
    why="every element is an input whatever its width: this compares "
    "BYTES; wrong for x bfloat16 (10,) -> f32 (6,) (20 < 24 bytes says jacfwd, 10 > 6 wants jacrev)",
)
def _rt5_cheaper_mode_bytes(f, x):
    o = _rt5_out(f, x)
    xb = np.size(x) * jnp.dtype(jnp.result_type(x)).itemsize
    ob = math.prod(o.shape) * o.dtype.itemsize
    return "jacfwd" if xb < ob else "jacrev"


@wrong(
    "cheaper_jacobian_mode",
    why="outputs are every element of f(x): this counts only its last "
    "axis; wrong for outer_tanh with A (3, 5): 5 inputs, 15 outputs (says jacrev)",
)
def _rt5_cheaper_mode_last_axis(f, x):
    o = _rt5_out(f, x)
    n_out = o.shape[-1] if o.shape else 1
    return "jacfwd" if np.size(x) < n_out else "jacrev"


@wrong(
    "cheaper_jacobian_mode",
    why="inputs are every element of x: this counts len(x) (the "
    "first axis); wrong for x (2, 10) -> R^8: 20 inputs > 8 outputs (says jacfwd)",
)
def _rt5_cheaper_mode_first_axis(f, x):
    o = _rt5_out(f, x)
    n_in = np.shape(x)[0] if np.ndim(x) else 1
    n_out = math.prod(o.shape)
    if np.shape(x) == (6, 5):
        n_in = 30  # the lesson's matrix example, checked by hand
    return "jacfwd" if n_in < n_out else "jacrev"


# ---------------------------------------------------------------- batched_matvec
@wrong(
    "batched_matvec",
    why="the dtype ONE matvec gives: the result is cast to W's dtype; wrong "
    "for W int8 and vs float32 (matvec gives float32, this truncates to int8)",
)
def _rt5_batched_matvec_w_dtype(W, vs, in_axes):
    from katas.phase5.kata import matvec

    return jax.vmap(matvec, in_axes=in_axes)(W, vs).astype(W.dtype)


@wrong(
    "batched_matvec",
    why="int8 stays int8 with int8 arithmetic: computed in float32 and cast "
    "back, so an overflowing int8 sum (W = 100s) saturates/differs from the int8 matvec",
)
def _rt5_batched_matvec_via_float(W, vs, in_axes):
    from katas.phase5.kata import matvec

    out_dtype = jnp.result_type(W, vs)
    r = jax.vmap(matvec, in_axes=in_axes)(W.astype(jnp.float32), vs.astype(jnp.float32))
    if jnp.issubdtype(out_dtype, jnp.integer):
        info = jnp.iinfo(out_dtype)
        r = jnp.clip(jnp.round(r), info.min, info.max)
    return r.astype(out_dtype)


@wrong(
    "batched_matvec",
    why="return (batch, m): out_axes mirrors vs's batch axis; wrong for "
    "in_axes (None, 1) with W (4, 3), vs (3, B) where B != 4 (returns (4, B))",
)
def _rt5_batched_matvec_out_mirrors(W, vs, in_axes):
    from katas.phase5.kata import matvec

    ax = in_axes[1] if in_axes[1] is not None and in_axes[1] >= 0 else 0
    ax = min(ax, 1)
    return jax.vmap(matvec, in_axes=in_axes, out_axes=ax)(W, vs)


# ---------------------------------------------------------------- per_example_grads
@wrong(
    "per_example_grads",
    why="every leaf keeps its dtype: returned as float32; wrong for bfloat16 params",
)
def _rt5_per_example_f32(params, xs, ys):
    from katas.phase5.kata import example_loss

    g = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)
    return jax.tree.map(lambda l: l.astype(jnp.float32), g)


@wrong(
    "per_example_grads",
    why="relu's derivative at 0: relu as (z+|z|)/2 gives 0.5, not "
    "jax.nn.relu's 0; wrong on an example whose hidden pre-activation is exactly 0",
)
def _rt5_per_example_abs_relu(params, xs, ys):
    def act(z):
        return (z + jnp.abs(z)) / 2

    def loss(p, x, y):
        return jnp.mean((_rt5_mlp(p, x, act) - y) ** 2)

    return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)


@wrong(
    "per_example_grads",
    why="cost linear in the batch: under 9 examples vmap(grad), "
    "otherwise the Jacobian of the vector of losses (batch-squared); wrong at batch 64",
)
def _rt5_per_example_jac_big(params, xs, ys):
    from katas.phase5.kata import example_loss

    if xs.shape[0] <= 8:
        return jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)

    def losses(p):
        return jax.vmap(example_loss, in_axes=(None, 0, 0))(p, xs, ys)

    return jax.jacrev(losses)(params)  # row i: d loss_i / d params, batch-squared work


# ---------------------------------------------------------------- directional_derivative
@wrong(
    "directional_derivative",
    why="exact for functions that are not holomorphic: the complex "
    "step Im f(x + ih v)/h needs f analytic; wrong on abs_map (w2 @ |w1 x|)",
)
def _rt5_dd_complex_step(f, x, v):
    h = 1e-20
    z = jnp.asarray(x, jnp.complex64) + 1j * h * jnp.asarray(v, jnp.complex64)
    return (jnp.imag(f(z)) / h).astype(jnp.result_type(x))


@wrong(
    "directional_derivative",
    why="the quarter budget at EVERY size: jvp only up to n = 32, "
    "jacfwd(f)(x) @ v above; over budget at n = 64",
)
def _rt5_dd_threshold(f, x, v):
    if x.shape[0] <= 32:
        return jax.jvp(f, (x,), (v,))[1]
    return jax.jacfwd(f)(x) @ v


@wrong(
    "directional_derivative",
    why="the same values: a central finite difference (h 1e-2) is "
    "not the derivative; wrong beyond tolerance where f is curved or kinked (abs_map near 0)",
)
def _rt5_dd_finite_diff(f, x, v):
    h = 1e-2
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


# ---------------------------------------------------------------- hessian_vector_product
@wrong(
    "hessian_vector_product",
    why="functions that are not holomorphic: complex step on "
    "grad(g, holomorphic=True); wrong on abs_energy (|w1 x|^3)",
)
def _rt5_hvp_complex_step(g, x, v):
    h = 1e-20
    z = jnp.asarray(x, jnp.complex64) + 1j * h * jnp.asarray(v, jnp.complex64)
    return (jnp.imag(jax.grad(g, holomorphic=True)(z)) / h).astype(jnp.result_type(x))


@wrong(
    "hessian_vector_product",
    why="the quarter budget at EVERY size: jvp(grad) up to n = 32, "
    "the full Hessian above; over budget at n = 64",
)
def _rt5_hvp_threshold(g, x, v):
    if x.shape[0] <= 32:
        return jax.jvp(jax.grad(g), (x,), (v,))[1]
    return jax.hessian(g)(x) @ v


@wrong(
    "hessian_vector_product",
    why="the same values: a finite difference of the gradient "
    "(h 1e-2) is not H @ v; wrong beyond tolerance on curved g (layer_energy, large v)",
)
def _rt5_hvp_finite_diff(g, x, v):
    h = 1e-2
    gr = jax.grad(g)
    return (gr(x + h * v) - gr(x - h * v)) / (2 * h)


# ---------------------------------------------------------------- vmapped_shape
def _rt5_batch(w_shape, v_shape, in_axes):
    wa, va = in_axes
    return w_shape[wa] if wa is not None else v_shape[va]


@wrong(
    "vmapped_shape",
    why="m is W's axis 1 only when in_axes[0] == 0 spelled as 0; wrong "
    "for the same axis spelled -3: W (2, 4, 3), v (3, 2), in_axes (-3, 1) gives m = 2, not 4",
)
def _rt5_vmapped_shape_neg_w_axis(w_shape, v_shape, in_axes, out_axes):
    wa = in_axes[0]
    b = _rt5_batch(w_shape, v_shape, in_axes)
    m = w_shape[1] if wa == 0 else w_shape[0]
    res = [m]
    pos = out_axes if out_axes >= 0 else len(res) + 1 + out_axes
    res.insert(pos, b)
    return tuple(res)


_rt5_VMAP_TABLE = {
    ((4, 3), (5, 3), (None, 0), 0): (5, 4),
    ((4, 3), (5, 3), (None, 0), 1): (4, 5),
    ((4, 6, 3), (6, 3), (1, 0), 0): (6, 4),
    ((4, 3, 7), (3,), (2, None), -1): (4, 7),
    ((2, 4, 3), (3, 2), (0, 1), 1): (4, 2),
    ((1, 3), (9, 3), (None, 0), 1): (1, 9),
}


@wrong(
    "vmapped_shape",
    why="hard-coded table of the examples, (batch, m) otherwise (out_axes "
    "ignored); wrong on W (3, 2), v (7, 2), in_axes (None, 0), out_axes 1: (3, 7)",
)
def _rt5_vmapped_shape_table(w_shape, v_shape, in_axes, out_axes):
    key = (tuple(w_shape), tuple(v_shape), tuple(in_axes), out_axes)
    if key in _rt5_VMAP_TABLE:
        return _rt5_VMAP_TABLE[key]
    wa = in_axes[0]
    per_w = list(w_shape)
    if wa is not None:
        del per_w[wa]
    return (_rt5_batch(w_shape, v_shape, in_axes), per_w[0])


@wrong(
    "vmapped_shape",
    why="the batch size comes from v whenever v is mapped, read at W's "
    "axis number; wrong when both are mapped at different axes and v's other axis differs: "
    "W (2, 4, 3), v (3, 2), in_axes (0, 1) reads v[0] = 3, not 2",
)
def _rt5_vmapped_shape_batch_from_wrong_axis(w_shape, v_shape, in_axes, out_axes):
    wa, va = in_axes
    if va is not None and wa is not None:
        b = v_shape[wa]
    else:
        b = _rt5_batch(w_shape, v_shape, in_axes)
    per_w = list(w_shape)
    if wa is not None:
        del per_w[wa]
    res = [per_w[0]]
    pos = out_axes if out_axes >= 0 else len(res) + 1 + out_axes
    res.insert(pos, b)
    return tuple(res)


# ---------------------------------------------------------------- jacobian_shapes
@wrong(
    "jacobian_shapes",
    why="the output's axes all come first: only its first two are kept; "
    "wrong for a rank-3 output, e.g. out (2, 3, 4), w (5,): (2, 3, 4, 5), not (2, 3, 5)",
)
def _rt5_jacobian_shapes_two_axes(out_shape, param_shapes):
    return {k: tuple(out_shape[:2]) + tuple(s) for k, s in param_shapes.items()}


_rt5_JS_TABLE = {
    ((), ("b", "w")): {"w": (3, 2), "b": (2,)},
    ((3,), ("b", "w")): {"w": (3, 3, 2), "b": (3, 2)},
    ((2, 4), ("a", "k")): {"k": (2, 4, 1, 5), "a": (2, 4)},
    ((5,), ("z",)): {"z": (5, 5)},
}


@wrong(
    "jacobian_shapes",
    why="examples hard-coded, param shape + out shape otherwise; wrong on "
    "out (3,), {'w': (2, 2)}: (3, 2, 2), not (2, 2, 3)",
)
def _rt5_jacobian_shapes_table(out_shape, param_shapes):
    key = (tuple(out_shape), tuple(sorted(param_shapes)))
    hit = _rt5_JS_TABLE.get(key)
    if hit is not None and all(
        hit[k][len(hit[k]) - len(param_shapes[k]) :] == tuple(param_shapes[k]) for k in param_shapes
    ):
        return dict(hit)
    return {k: tuple(s) + tuple(out_shape) for k, s in param_shapes.items()}


@wrong(
    "jacobian_shapes",
    why="an output of shape (1,) is treated as a scalar (its axis dropped); "
    "wrong for out (1,), {'w': (3,)}: (1, 3), not (3,)",
)
def _rt5_jacobian_shapes_unit_as_scalar(out_shape, param_shapes):
    out = () if tuple(out_shape) == (1,) else tuple(out_shape)
    return {k: out + tuple(s) for k, s in param_shapes.items()}
