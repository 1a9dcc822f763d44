"""Red team, phase 5, round 18: blind wrong answers (from README, stub, tasks.toml, programs.py)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt18_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


@wrong("mlp_grad", why="Clause 'bfloat16 params give a bfloat16 gradient': upcasts params to float32 for accuracy and returns the float32 gradient; on mlp_ties(..., dtype=bfloat16) every leaf is float32, not bfloat16.")
def _rt18_mlp_grad_upcast(params: dict, x, y) -> dict:
    p32 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    return jax.grad(_rt18_mse_loss)(p32, jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))


@wrong("mlp_grad", why="Clause 'relu's derivative at 0 being jax.nn.relu's': hand-written backprop with mask (pre >= 0), i.e. derivative 1 at 0; on mlp_ties (pre-activations exactly 0) the w1/b1/w2 gradients differ from jax.grad's.")
def _rt18_mlp_grad_handwritten_ge(params: dict, x, y) -> dict:
    pre = x @ params["w1"] + params["b1"]
    h = jnp.maximum(pre, 0)
    out = h @ params["w2"] + params["b2"]
    g_out = (2.0 / out.size) * (out - y)
    g_out = g_out.astype(out.dtype)
    g_w2 = h.T @ g_out
    g_b2 = jnp.sum(g_out, axis=0)
    g_h = g_out @ params["w2"].T
    g_pre = jnp.where(pre >= 0, g_h, jnp.zeros_like(g_h))
    g_w1 = x.T @ g_pre
    g_b1 = jnp.sum(g_pre, axis=0)
    return {"w1": g_w1, "b1": g_b1, "w2": g_w2, "b2": g_b2}


@wrong("jvp_tangent", why="Clause 'whatever v holds: ... the zero direction is no exception': shortcut returns zeros for v == 0; for f = jnp.sqrt at x = [0., 1.], v = 0, jax.jvp gives [nan, 0.] but this gives [0., 0.].")
def _rt18_jvp_tangent_zero_shortcut(f, x, v) -> tuple:
    y = f(x)
    if not np.any(np.asarray(v)):
        return y, jnp.zeros_like(y)
    return jax.jvp(f, (x,), (v,))


@wrong("jvp_tangent", why="Clause 'J @ v as forward mode computes it ... (inf * 0)': builds J with jacfwd then contracts with v; for f = jnp.sqrt at x = [0., 1.], v = [1., 0.] jax.jvp gives [inf, 0.] but J has a NaN entry (0*inf in column 1), so sum gives [nan, 0.].")
def _rt18_jvp_tangent_via_jacfwd(f, x, v) -> tuple:
    y = f(x)
    J = jax.jacfwd(f)(x)
    t = jnp.tensordot(J, v, axes=x.ndim)
    return y, t.astype(y.dtype)


@wrong("vjp_cotangent", why="Clause 'ct carried back through f's own derivative rules ... (0 * inf), as jax.vjp does': contracts ct with the jacrev Jacobian; for f = jnp.sqrt at x = [0., 1.], ct = [1., 0.] jax.vjp gives [inf, 0.] but row 1 of J holds 0*inf = NaN, so this gives [nan, 0.].")
def _rt18_vjp_cotangent_via_jacrev(f, x, ct) -> jax.Array:
    J = jax.jacrev(f)(x)
    y = jnp.tensordot(ct, J, axes=ct.ndim)
    return y.astype(x.dtype)


@wrong("vjp_cotangent", why="Clause 'whatever ct holds ... the zero cotangent is no exception': shortcut returns zeros for ct == 0; for f = jnp.log at x = [0., 2.], ct = 0 jax.vjp gives [nan, 0.], this [0., 0.].")
def _rt18_vjp_cotangent_zero_shortcut(f, x, ct) -> jax.Array:
    if not np.any(np.asarray(ct)):
        return jnp.zeros_like(x)
    _, pull = jax.vjp(f, x)
    return pull(ct)[0]


@wrong("jacobian", why="Clause 'mode \"fwd\" builds it column by column (forward mode), mode \"rev\" row by row': modes swapped (reads 'fwd' as rows first); same values, but the fwd program is jacrev's (no identity-basis jvp, no final transpose).")
def _rt18_jacobian_modes_swapped(f, x, mode: str) -> jax.Array:
    return (jax.jacrev if mode == "fwd" else jax.jacfwd)(f)(x)


@wrong("jacobian", why="Clause 'shape f(x).shape + x.shape': flattens x and f(x) to vectors and returns the (out, in) matrix; for matrix_input() (x of shape (6, 5)) it gives (8, 30), not (8, 6, 5).")
def _rt18_jacobian_flattened(f, x, mode: str) -> jax.Array:
    shape = x.shape
    g = lambda z: jnp.ravel(f(z.reshape(shape)))  # noqa: E731
    jac = jax.jacfwd if mode == "fwd" else jax.jacrev
    return jac(g)(jnp.ravel(x))


def _rt18_subjaxprs(v):
    if hasattr(v, "eqns"):
        yield v
    elif hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
        yield v.jaxpr
    elif isinstance(v, (tuple, list)):
        for u in v:
            yield from _rt18_subjaxprs(u)


@wrong("dot_flops", why="Clause 'contracted dimension sizes, read from dimension_numbers: any axes, not only the last': uses lhs.shape[-1] as K; for programs.general (lhs (3,2,5), contracting axis 0) it gives 2*70*5=700, not 420.")
def _rt18_dot_flops_last_axis(jaxpr) -> int:
    j = jaxpr if hasattr(jaxpr, "eqns") else jaxpr.jaxpr
    total = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            out = eqn.outvars[0].aval.shape
            k = eqn.invars[0].aval.shape[-1] if eqn.invars[0].aval.shape else 1
            total += 2 * math.prod(out) * k
        for v in eqn.params.values():
            for sub in _rt18_subjaxprs(v):
                total += _rt18_dot_flops_last_axis(sub)
    return int(total)


_rt18_KNOWN = ("jaxpr", "call_jaxpr", "branches", "body_jaxpr", "cond_jaxpr", "fun_jaxpr")


@wrong("dot_flops", why="Clause 'Open whatever params hold a jaxpr rather than a list of primitives you know' / 'the jaxprs of a custom_linear_solve ... in a named tuple': recurses only into the param names it knows (jaxpr, call_jaxpr, branches, body_jaxpr, cond_jaxpr, fun_jaxpr); on programs.in_linear_solve (param 'jaxprs') the matvec and solve dots are missed.")
def _rt18_dot_flops_known_params(jaxpr) -> int:
    j = jaxpr if hasattr(jaxpr, "eqns") else jaxpr.jaxpr
    total = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            (lc, rc), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[a] for a in lc)
        for name in _rt18_KNOWN:
            if name in eqn.params:
                for sub in _rt18_subjaxprs(eqn.params[name]):
                    total += _rt18_dot_flops_known_params(sub)
    return int(total)


@wrong("dot_flops", why="Clause 'Return an exact int, however large (past 2**31)': multiplies sizes with np.prod(dtype=np.int32); the 4096^3 matmul case (2*4096^3 = 2**37) wraps to 0.")
def _rt18_dot_flops_int32(jaxpr) -> int:
    j = jaxpr if hasattr(jaxpr, "eqns") else jaxpr.jaxpr
    total = np.int32(0)
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            (lc, rc), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            out = np.prod(eqn.outvars[0].aval.shape, dtype=np.int32)
            k = np.prod([lhs[a] for a in lc], dtype=np.int32)
            with np.errstate(over="ignore"):
                total = np.int32(total + np.int32(2) * out * k)
        for v in eqn.params.values():
            for sub in _rt18_subjaxprs(v):
                with np.errstate(over="ignore"):
                    total = np.int32(total + _rt18_dot_flops_int32(sub))
    return int(total)


@wrong("dot_flops", why="Clause 'a shard_map body once, on the per-device shapes its jaxpr shows, not once per device of its mesh': multiplies a shard_map body's flops by its mesh size to get 'the whole program's work'; on programs.in_shard_map (mesh of 4 under 8 CPU devices) it counts 4x the body.")
def _rt18_dot_flops_shard_total(jaxpr) -> int:
    j = jaxpr if hasattr(jaxpr, "eqns") else jaxpr.jaxpr
    total = 0
    for eqn in j.eqns:
        if eqn.primitive.name == "dot_general":
            (lc, rc), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += 2 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[a] for a in lc)
        times = 1
        if eqn.primitive.name == "shard_map" and "mesh" in eqn.params:
            times = int(getattr(eqn.params["mesh"], "size", 1))
        for v in eqn.params.values():
            for sub in _rt18_subjaxprs(v):
                total += times * _rt18_dot_flops_shard_total(sub)
    return int(total)


@wrong("cheaper_jacobian_mode", why="Clause 'every element of x counts' / 'a (6, 5) x has 30': compares x.shape[0] with the output's leading size; for programs.matrix_input() (x (6,5): 30 inputs, 8 outputs) it says jacfwd (6 < 8) but jacrev is cheaper.")
def _rt18_cheaper_mode_leading_axis(f, x) -> str:
    out = jax.eval_shape(f, x)
    n_in = x.shape[0] if x.ndim else 1
    n_out = out.shape[0] if out.ndim else 1
    return "jacfwd" if n_in < n_out else "jacrev"


@wrong("cheaper_jacobian_mode", why="Clause 'every element is an input, whatever its width': compares bytes (nbytes) not elements; for bfloat16 x of shape (10,) and float32 f(x) of shape (6,) (20 vs 24 bytes) it says jacfwd, but 10 inputs > 6 outputs makes jacrev cheaper.")
def _rt18_cheaper_mode_bytes(f, x) -> str:
    out = jax.eval_shape(f, x)
    x_bytes = math.prod(x.shape) * jnp.dtype(x.dtype).itemsize
    o_bytes = math.prod(out.shape) * jnp.dtype(out.dtype).itemsize
    return "jacfwd" if x_bytes < o_bytes else "jacrev"


@wrong("batched_matvec", why="Clause 'Return (batch, m)': reads the README's 'a transpose of the (m, batch) result' as something left to do and transposes when W is shared; for in_axes (None, 0) (W (4, 3), vs (8, 3)) it returns (4, 8), not (8, 4).")
def _rt18_batched_matvec_transpose_shared(W, vs, in_axes: tuple) -> jax.Array:
    out = jax.vmap(_rt18_matvec_proxy, in_axes=in_axes)(W, vs)
    return out.T if in_axes[0] is None else out


def _rt18_matvec_proxy(W, v):
    import sys

    for mod in list(sys.modules.values()):
        bm = getattr(mod, "batched_matvec", None)
        if getattr(bm, "__name__", "").startswith("_rt18_batched_matvec") and callable(
            getattr(mod, "matvec", None)
        ):
            return mod.matvec(W, v)
    kata = sys.modules.get("katas.phase5.kata")
    mv = getattr(kata, "matvec", None) if kata is not None else None
    return mv(W, v) if mv is not None else W @ v


@wrong("batched_matvec", why="Clause 'in the dtype one matvec gives (int8 stays int8)': casts to float32 before mapping so the matmul is 'safe'; matvec_case((None, 0), int8) returns float32, not int8.")
def _rt18_batched_matvec_float(W, vs, in_axes: tuple) -> jax.Array:
    W = jnp.asarray(W, jnp.float32)
    vs = jnp.asarray(vs, jnp.float32)
    return jax.vmap(_rt18_matvec_proxy, in_axes=in_axes)(W, vs)


def _rt18_example_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


@wrong("per_example_grads", why="Clause 'Its cost must grow linearly with the batch': jacrev of the vector of per-example losses; same numbers, but flops go from batch 4 to 8 roughly x4 (batch-squared), e.g. on mlp_data(4) vs mlp_data(8).")
def _rt18_per_example_grads_jacrev(params: dict, xs, ys) -> dict:
    losses = lambda p: jax.vmap(_rt18_example_loss, in_axes=(None, 0, 0))(p, xs, ys)  # noqa: E731
    return jax.jacrev(losses)(params)


@wrong("directional_derivative", why="Clause 'J @ v': uses the vjp (J.T @ v) by confusing the two modes; for the square case 32-16-32 (m == n, J not symmetric) the result differs from J @ v.")
def _rt18_directional_derivative_vjp(f, x, v) -> jax.Array:
    _, pull = jax.vjp(f, x)
    return pull(v)[0]


@wrong("directional_derivative", why="Clause 'same values ... (v = 0 too, functions that are not holomorphic)': central finite difference with eps=1e-3 in float32; on layer_map(tanh_pair(16,24,8)) at points(16) its error (about 1e-4 absolute) is far above float32 rounding.")
def _rt18_directional_derivative_fd(f, x, v) -> jax.Array:
    eps = 1e-3
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


@wrong("hessian_vector_product", why="Clause 'H @ v ... the same values': finite difference of gradients, (grad g(x+eps v) - grad g(x-eps v)) / 2eps, within budget but with float32 rounding error about 2e-4 on layer_energy(tanh_pair(16,24,8)[0]).")
def _rt18_hvp_fd(g, x, v) -> jax.Array:
    eps = 1e-3
    gg = jax.grad(g)
    return (gg(x + eps * v) - gg(x - eps * v)) / (2 * eps)


@wrong("hessian_vector_product", why="Clause 'H is the Hessian of g': Gauss-Newton-like shortcut grad(g)(x) * (grad(g)(x) @ v) (outer product of gradients times v); for layer_energy at points(16) it differs from H @ v.")
def _rt18_hvp_outer_grad(g, x, v) -> jax.Array:
    gx = jax.grad(g)(x)
    return gx * jnp.dot(gx, v)


def _rt18_batch_and_m(w_shape, v_shape, in_axes):
    wa, va = in_axes
    if wa is not None:
        wa = wa % len(w_shape)
        batch = w_shape[wa]
        rest = tuple(s for i, s in enumerate(w_shape) if i != wa)
    else:
        va = va % len(v_shape)
        batch = v_shape[va]
        rest = tuple(w_shape)
    return batch, rest[0]


@wrong("vmapped_shape", why="Clause 'What does a negative out_axes count from?': inserts the batch at len(one_result) + out_axes, like indexing the unbatched result; for ((4, 3, 7), (3,), (2, None), -1) it returns (7, 4), vmap gives (4, 7).")
def _rt18_vmapped_shape_neg_out(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    batch, m = _rt18_batch_and_m(w_shape, v_shape, in_axes)
    one = [m]
    pos = out_axes if out_axes >= 0 else len(one) + out_axes
    one.insert(pos, batch)
    return tuple(one)


@wrong("vmapped_shape", why="Clause 'What shape does matvec return for one example?': takes m = w_shape[0] without removing W's batch axis; for ((2, 4, 3), (3, 2), (0, 1), 1) it returns (2, 2), vmap gives (4, 2).")
def _rt18_vmapped_shape_m_first(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    batch, _ = _rt18_batch_and_m(w_shape, v_shape, in_axes)
    one = [w_shape[0]]
    pos = out_axes if out_axes >= 0 else len(one) + 1 + out_axes
    one.insert(pos, batch)
    return tuple(one)


@wrong("jacobian_shapes", why="Clause 'a leaf with no elements is still a key': skips leaves of size 0 as 'nothing to differentiate'; for ((3,), {'w': (0, 2), 'b': (2,)}) the key 'w' (shape (3, 0, 2)) is missing.")
def _rt18_jacobian_shapes_skip_empty(out_shape: tuple, param_shapes: dict) -> dict:
    return {k: tuple(out_shape) + tuple(s) for k, s in param_shapes.items() if math.prod(s) > 0}


@wrong("jacobian_shapes", why="Clause 'an output of shape (1,)... size-1 axes': squeezes size-1 output axes (treats (1,) output as a scalar); for ((1,), {'z': (5,)}) it returns (5,), jacrev gives (1, 5).")
def _rt18_jacobian_shapes_squeeze(out_shape: tuple, param_shapes: dict) -> dict:
    out = tuple(d for d in out_shape if d != 1)
    return {k: out + tuple(s) for k, s in param_shapes.items()}
