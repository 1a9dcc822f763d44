"""Red-team wrong answers for phase 5, round 7, written from the contract only.

New kinds: ties between sizes (remove by value), predict answers that trace or compile through
jax.numpy / eval_shape, a shortcut for scalar outputs that changes the mode, one dtype for mixed
leaves, vmap of another function than matvec, dot flops read from the lowered StableHLO (what
runs, not what the jaxpr holds), complex dots counted in real flops, a shape-keyed cache that
closes over the first call's data, and a zero-direction guard whose extra work only runs eagerly.
"""

from __future__ import annotations

import math
import re

import jax
import jax.extend  # noqa: F401  (jaxpr_as_fun, jaxprs_in_params)
import jax.numpy as jnp
import numpy as np  # noqa: F401

from kata_harness.decoys import wrong


def _rt7_matvec(W, v):
    return W @ v


def _rt7_example_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def _rt7_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


# ---------------------------------------------------------------- vmapped_shape
@wrong(
    "vmapped_shape",
    why="'for W of shape w_shape' (any sizes): drops the batch axis from W by value "
    "(rows.remove(batch)) instead of by position, so when the batch size equals an earlier axis "
    "of W the wrong axis goes; wrong on w (3, 4, 3), v (4,), in_axes (2, None), out_axes 0: "
    "vmap gives (3, 3), this says (3, 4)",
)
def _rt7_vmapped_shape_remove_by_value(w_shape, v_shape, in_axes, out_axes):
    wa, va = in_axes
    batch = w_shape[wa] if wa is not None else v_shape[va]
    rows = list(w_shape)
    if wa is not None:
        rows.remove(batch)
    out = [rows[0]]
    out.insert(out_axes if out_axes >= 0 else out_axes + 2, batch)
    return tuple(out)


@wrong(
    "vmapped_shape",
    why="'From the shapes alone: the tests forbid jax.vmap, tracing and compiling while they "
    "call you': asks jax.eval_shape what ONE matvec returns (the hint's question), which traces "
    "matvec; the shape is right, but it traces inside a predict task on every input, e.g. "
    "((4, 3), (5, 3), (None, 0), 0)",
)
def _rt7_vmapped_shape_eval_one_example(w_shape, v_shape, in_axes, out_axes):
    wa, va = in_axes
    batch = w_shape[wa] if wa is not None else v_shape[va]
    w_one = [d for i, d in enumerate(w_shape) if wa is None or i != wa % len(w_shape)]
    v_one = [d for i, d in enumerate(v_shape) if va is None or i != va % len(v_shape)]
    one = jax.eval_shape(
        _rt7_matvec,
        jax.ShapeDtypeStruct(tuple(w_one), jnp.float32),
        jax.ShapeDtypeStruct(tuple(v_one), jnp.float32),
    ).shape
    out = list(one)
    out.insert(out_axes if out_axes >= 0 else out_axes + len(one) + 1, batch)
    return tuple(out)


# ---------------------------------------------------------------- jacobian_shapes
@wrong(
    "jacobian_shapes",
    why="'From the shapes alone: the tests forbid jax.jacrev, tracing and compiling': builds a "
    "placeholder with jnp.empty(out_shape + leaf) and reads its .shape; right shapes, but "
    "jnp.empty runs (and compiles, for every new shape) a JAX broadcast inside the predict "
    "task; wrong on any fresh case, e.g. ((3,), {'w': (3, 2), 'b': (2,)})",
)
def _rt7_jacobian_shapes_jnp_placeholder(out_shape, param_shapes):
    return {
        name: tuple(jnp.empty(tuple(out_shape) + tuple(shape), jnp.float32).shape)
        for name, shape in param_shapes.items()
    }


# ---------------------------------------------------------------- jacobian
@wrong(
    "jacobian",
    why="'mode \"fwd\" builds it column by column (forward mode)': shortcut for a scalar-valued "
    "f ('its Jacobian is its gradient'), jax.grad for both modes; same numbers and shape, but "
    "mode 'fwd' on a scalar f is built by reverse mode (no identity basis, no jvp); wrong on "
    "f = lambda x: jnp.sum(jnp.tanh(x) ** 2), x (5,), mode 'fwd'",
)
def _rt7_jacobian_scalar_is_grad(f, x, mode):
    out = jax.eval_shape(f, x)
    if out.shape == ():
        return jax.grad(f)(x)
    return jax.jacfwd(f)(x) if mode == "fwd" else jax.jacrev(f)(x)


# ---------------------------------------------------------------- mlp_grad
@wrong(
    "mlp_grad",
    why="'same structure and dtypes as params': casts the whole gradient to one dtype, the first "
    "leaf's (jax.tree.leaves order: b1); right whenever every leaf shares a dtype, wrong on "
    "mixed leaves, e.g. w1, w2 bfloat16 with b1, b2 float32: w1's gradient comes back float32",
)
def _rt7_mlp_grad_first_leaf_dtype(params, x, y):
    grads = jax.grad(_rt7_mse_loss)(params, x, y)
    dtype = jnp.asarray(jax.tree.leaves(params)[0]).dtype
    return jax.tree.map(lambda g: g.astype(dtype), grads)


# ---------------------------------------------------------------- batched_matvec
@wrong(
    "batched_matvec",
    why="'Map matvec itself (the tests watch it being called once, with one example's shapes)': "
    "vmaps jnp.dot, 'the same function as matvec'; same numbers and dtypes (int8 stays int8), "
    "but matvec is never called; wrong on every in_axes, e.g. (None, 0) with W (4, 3), vs (8, 3)",
)
def _rt7_batched_matvec_vmap_dot(W, vs, in_axes):
    return jax.vmap(jnp.dot, in_axes=tuple(in_axes))(W, vs)


# ---------------------------------------------------------------- dot_flops
_RT7_DOT = re.compile(
    r"stablehlo\.dot_general.*?contracting_dims = \[([\d, ]*)\] x \[[\d, ]*\].*?:\s*"
    r"\(tensor<([^>]*)>,\s*tensor<[^>]*>\)\s*->\s*tensor<([^>]*)>"
)


def _rt7_dims(text):
    return [int(p) for p in text.split("x")[:-1]]


@wrong(
    "dot_flops",
    why="'every dot_general in jaxpr, nested jaxprs included': lowers the jaxpr (jaxpr_as_fun, "
    "jit.lower) and counts the stablehlo.dot_general ops of the text; the lowering keeps only "
    "what runs: custom_linear_solve's matvec dot is not lowered (in_linear_solve: 54 not 108), "
    "a jitted matmul called twice is one private func (g = jax.jit(jnp.matmul); "
    "g(a, b) + g(a, b): half), and an unused dot is gone",
)
def _rt7_dot_flops_lowered_text(jaxpr):
    fn = jax.extend.core.jaxpr_as_fun(jaxpr)
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in jaxpr.invars]
    text = jax.jit(fn).lower(*avals).as_text()
    total = 0
    for m in _RT7_DOT.finditer(text):
        lc = [int(c) for c in m.group(1).split(",") if c.strip()]
        lhs, out = _rt7_dims(m.group(2)), _rt7_dims(m.group(3))
        total += 2 * math.prod(out) * math.prod(lhs[c] for c in lc)
    return int(total)


def _rt7_walk(j):
    for eqn in j.eqns:
        yield eqn
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from _rt7_walk(sub)


@wrong(
    "dot_flops",
    why="'Count 2 per multiply-add (as XLA's cost analysis does)': counts a complex "
    "multiply-add in real floating-point operations (4 multiplies + 4 adds = 8); right on every "
    "real and integer dot, wrong on a complex64 (8, 16) @ (16, 32) matmul: 32768 instead of "
    "8192 (XLA's cost analysis also says 8192)",
)
def _rt7_dot_flops_complex_real_ops(jaxpr):
    total = 0
    for eqn in _rt7_walk(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, _), _ = eqn.params["dimension_numbers"]
        lhs = eqn.invars[0].aval.shape
        per_mac = 8 if jnp.issubdtype(eqn.invars[0].aval.dtype, jnp.complexfloating) else 2
        total += per_mac * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[c] for c in lc)
    return int(total)


# ---------------------------------------------------------------- per_example_grads
_rt7_compiled: dict = {}


@wrong(
    "per_example_grads",
    why="'the gradient of example_loss for each example': compiles once per (shapes, dtypes) "
    "and caches a jitted closure over the FIRST call's xs and ys; every later call with the same "
    "shapes gets the old examples' gradients; wrong on a second call, e.g. mlp_data(8) then "
    "mlp_ties(8, 1, (16, 32, 4)) (same shapes, other data)",
)
def _rt7_per_example_grads_shape_cache(params, xs, ys):
    key = (
        jax.tree.structure(params),
        tuple((jnp.shape(a), jnp.asarray(a).dtype) for a in jax.tree.leaves(params)),
        jnp.shape(xs),
        jnp.shape(ys),
        jnp.asarray(xs).dtype,
    )
    if key not in _rt7_compiled:
        xs0, ys0 = xs, ys
        grads = jax.vmap(jax.grad(_rt7_example_loss), in_axes=(None, 0, 0))
        _rt7_compiled[key] = jax.jit(lambda p: grads(p, xs0, ys0))
    return _rt7_compiled[key](params)


# ---------------------------------------------------------------- directional_derivative
@wrong(
    "directional_derivative",
    why="'every call is held to the budget ... called eagerly, every dot it executes is "
    "counted': a guard for v = 0 that returns zeros shaped like f(x) evaluates f(x) beside the "
    "jvp; compiled, XLA drops it (only its shape is used), eagerly it runs: 364 + 728 = 1092 "
    "dot flops against a budget of 932 (a quarter of jacfwd(f)(x) @ v's 3730) on the 9-13-5 "
    "tanh pair",
)
def _rt7_dd_zero_guard(f, x, v):
    y = f(x)
    tangent = jax.jvp(f, (x,), (v,))[1]
    return jnp.where(jnp.any(v != 0), tangent, jnp.zeros_like(y))
