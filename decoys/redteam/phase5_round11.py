"""Red team, phase 5, round 11: plausible wrong answers (each wrong per the contract)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt11_subjaxprs(v):
    if hasattr(v, "eqns") and hasattr(v, "invars"):
        yield v
    elif hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
        yield v.jaxpr
    elif isinstance(v, (tuple, list)):
        for e in v:
            yield from _rt11_subjaxprs(e)


def _rt11_eqns(jaxpr):
    j = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    for eqn in j.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in _rt11_subjaxprs(v):
                yield from _rt11_eqns(sub)


def _rt11_one_dot(eqn, complex_factor=1):
    (lc, rc), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval
    out = eqn.outvars[0].aval
    k = 1
    for d in lc:
        k *= int(lhs.shape[d])
    n = 1
    for s in out.shape:
        n *= int(s)
    f = 2 * n * k
    if complex_factor != 1 and jnp.issubdtype(lhs.dtype, jnp.complexfloating):
        f *= complex_factor
    return f


@wrong(
    "dot_flops",
    why="'a complex multiply-add counts 2 too': counts a complex dot at 4x (4 real multiplies per "
    "complex multiply), e.g. a (3,4)@(4,5) complex64 dot gives 480 instead of 120",
)
def _rt11_dot_flops_complex_real_mults(jaxpr) -> int:
    return sum(_rt11_one_dot(e, 4) for e in _rt11_eqns(jaxpr) if e.primitive.name == "dot_general")


@wrong(
    "dot_flops",
    why="'count every dot_general equation once, wherever it sits' (shard_map included): counts a "
    "shard_map body once per device of its mesh (global flops), e.g. an (8,8)@(8,8) dot in a "
    "shard_map (replicated specs) over a 2-device mesh gives 2048 instead of 1024",
)
def _rt11_dot_flops_shard_map_global(jaxpr) -> int:
    def walk(j, mult):
        j = j.jaxpr if hasattr(j, "jaxpr") and hasattr(j.jaxpr, "eqns") else j
        total = 0
        for eqn in j.eqns:
            if eqn.primitive.name == "dot_general":
                total += mult * _rt11_one_dot(eqn)
            m = mult
            if eqn.primitive.name == "shard_map" and "mesh" in eqn.params:
                m = mult * int(np.prod(list(eqn.params["mesh"].shape.values())))
            for v in eqn.params.values():
                for sub in _rt11_subjaxprs(v):
                    total += walk(sub, m)
        return total

    return walk(jaxpr, 1)


@wrong(
    "cheaper_jacobian_mode",
    why="'predict whichever Jacobian costs fewer dot flops': only picks jacrev when inputs exceed "
    "outputs by 2x (reverse mode 'has overhead'); f = A @ x with 6 inputs and 4 outputs: jacrev "
    "dots 192 flops, jacfwd 288, answer says jacfwd",
)
def _rt11_cheaper_mode_ratio_threshold(f, x) -> str:
    out = jax.eval_shape(f, x)
    n_in = int(np.size(x))
    n_out = int(np.prod(out.shape, dtype=np.int64))
    return "jacrev" if n_in > 2 * n_out else "jacfwd"


@wrong(
    "cheaper_jacobian_mode",
    why="'Inputs means every element of x: a (6, 5) x has 30': compares the largest axis of x and "
    "of f(x); x (6, 5) -> f(x) (8,) has 30 inputs > 8 outputs (jacrev) but 6 < 8 says jacfwd",
)
def _rt11_cheaper_mode_longest_axis(f, x) -> str:
    out = jax.eval_shape(f, x)
    n_in = max(np.shape(x), default=1)
    n_out = max(out.shape, default=1)
    return "jacfwd" if n_in < n_out else "jacrev"


@wrong(
    "vmapped_shape",
    why="'in_axes ... negative ones counted from the end': finds m by testing `ax == 0` on W's axis "
    "without normalizing; w (5, 3, 4), in_axes (-3, None), v (4,) -> (5, 3) expected, answers (5, 5)",
)
def _rt11_vmapped_shape_axis_zero_test(w_shape, v_shape, in_axes, out_axes) -> tuple:
    wa, va = in_axes
    if wa is not None:
        batch = w_shape[wa]
        m = w_shape[1] if wa == 0 else w_shape[0]
    else:
        batch = v_shape[va]
        m = w_shape[0]
    res = [m]
    pos = out_axes if out_axes >= 0 else len(res) + 1 + out_axes
    res.insert(pos, batch)
    return tuple(res)


@wrong(
    "vmapped_shape",
    why="'negative counts from the end' (of the batched output): normalizes out_axes against the rank "
    "of ONE example's output (1); out_axes=-1 with w (3, 4), v (7, 4), in_axes (None, 0) gives "
    "(7, 3) instead of (3, 7)",
)
def _rt11_vmapped_shape_out_axes_example_rank(w_shape, v_shape, in_axes, out_axes) -> tuple:
    wa, va = in_axes
    w = list(w_shape)
    if wa is not None:
        batch = w.pop(wa)
    else:
        batch = v_shape[va]
    example = [w[0]]
    pos = out_axes if out_axes >= 0 else len(example) + out_axes
    example.insert(pos, batch)
    return tuple(example)


@wrong(
    "jvp_tangent",
    why="'x of any shape ... shaped and typed like f(x)': promotes x and v with atleast_1d so "
    "'scalars work too'; x = 2.0 (rank 0), f = jnp.sin gives outputs of shape (1,) instead of ()",
)
def _rt11_jvp_tangent_atleast_1d(f, x, v) -> tuple:
    return jax.jvp(f, (jnp.atleast_1d(x),), (jnp.atleast_1d(v),))


@wrong(
    "vjp_cotangent",
    why="'return ct @ J ... an array shaped and typed like x': returns the tuple vjp_fn gives "
    "(one entry per primal) instead of its only entry; x (3,) gives a (1, 3)-shaped tuple",
)
def _rt11_vjp_cotangent_tuple(f, x, ct):
    _, vjp_fn = jax.vjp(f, x)
    return vjp_fn(ct)


@wrong(
    "directional_derivative",
    why="'J @ v': when J is square uses reverse mode, J.T @ v (vjp_fn(v)), 'same product for a "
    "square Jacobian'; f(x) = A @ x with A non-symmetric 3x3, v = e0 gives A[0] instead of A[:, 0]",
)
def _rt11_dd_vjp_when_square(f, x, v):
    y, vjp_fn = jax.vjp(f, x)
    if y.shape == x.shape:
        return vjp_fn(v.astype(y.dtype))[0]
    return jax.jvp(f, (x,), (v,))[1]


@wrong(
    "hessian_vector_product",
    why="'H @ v': takes H @ 1 with one jvp of the gradient (the row sums of H) and scales it "
    "elementwise by v, right only for separable g; g(x) = x0 * x1, x=(1,2), v=(1,0): H v = (0, 1), "
    "answers (1, 0)",
)
def _rt11_hvp_rowsum_times_v(g, x, v):
    _, hones = jax.jvp(jax.grad(g), (x,), (jnp.ones_like(x),))
    return hones * v


@wrong(
    "jacobian_shapes",
    why="'one number per pair of output and input elements': flattens the output axes into one "
    "axis of out-size (as a jacobian of a raveled f); out (2, 4), leaf (1, 5) gives (8, 1, 5) "
    "instead of (2, 4, 1, 5)",
)
def _rt11_jacobian_shapes_flat_output(out_shape, param_shapes) -> dict:
    n = int(np.prod(out_shape, dtype=np.int64)) if len(out_shape) else None
    pre = () if n is None else (n,)
    return {k: pre + tuple(s) for k, s in param_shapes.items()}


@wrong(
    "batched_matvec",
    why="'in the dtype one matvec gives (int8 stays int8)': widens the operands to int32 inside the "
    "mapped function 'so the products cannot overflow'; int8 W (3, 4) and vs (5, 4) give int32",
)
def _rt11_batched_matvec_widen_ints(W, vs, in_axes):
    def _mv(W_, v_):
        return W_ @ v_

    def one(w, v):
        if jnp.issubdtype(w.dtype, jnp.integer):
            return _mv(w.astype(jnp.int32), v.astype(jnp.int32))
        return _mv(w, v)

    return jax.vmap(one, in_axes=tuple(in_axes))(W, vs)


@wrong(
    "per_example_grads",
    why="'every leaf ... keeps its dtype': runs vmap(grad) with params promoted to float32 (per-example "
    "gradients are small, 'bf16 underflows') and returns them in float32; bfloat16 params give "
    "float32 leaves",
)
def _rt11_per_example_grads_f32_accumulate(params, xs, ys):
    def _el(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return jnp.mean((h - y) ** 2)

    p32 = jax.tree.map(lambda a: a.astype(jnp.float32), params)
    return jax.vmap(jax.grad(_el), in_axes=(None, 0, 0))(
        p32, xs.astype(jnp.float32), ys.astype(jnp.float32)
    )
