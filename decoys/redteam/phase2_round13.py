"""Red team, phase 2, round 13: wrappers that rename or re-trace, operand-position and
helper-function shortcuts, and flattening-order guesses."""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong


def _rt13_mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@wrong(
    "mlp_jaxpr",
    why="Clause 'the jaxpr of jax.jit(mlp) is mlp's jaxpr too; no other wrapper's is': batched x is traced through jax.vmap(mlp, in_axes=(None, 0)), a different jaxpr (batching rewrites the broadcast_in_dim params to np.int64 axes, and for rank-3 x maps only the first axis); differs on mlp_args() f32 8x16->32->4.",
)
def _rt13_mlp_jaxpr_vmapped_batch(params: dict, x):
    if np.ndim(x) >= 2:
        return jax.make_jaxpr(jax.vmap(_rt13_mlp, in_axes=(None, 0)))(params, x)
    return jax.make_jaxpr(_rt13_mlp)(params, x)


def _rt13_census_rules_opaque(jaxpr, counts):
    for eqn in jaxpr.jaxpr.eqns if hasattr(jaxpr, "jaxpr") else jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        if eqn.primitive.name.startswith("custom_"):
            continue  # custom rules keep functions (fwd/bwd, jvp) in params: not jaxprs, skip
        for val in eqn.params.values():
            for sub in val if isinstance(val, tuple) else (val,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    _rt13_census_rules_opaque(sub, counts)
    return counts


@wrong(
    "primitive_census",
    why="Clause 'call_jaxpr (custom_jvp_call, custom_vjp_call ...)' and 'Functions kept in params ... skip them': skips every custom_* equation's params wholesale instead of only the functions, so the call_jaxpr of custom_jvp_call/custom_vjp_call (and custom_vmap_call, custom_linear_solve) goes uncounted; differs on the census program 'custom_vjp, custom_jvp, remat, closed call' (sin, max and the relu jit missing).",
)
def _rt13_primitive_census_custom_opaque(jaxpr) -> Counter:
    return _rt13_census_rules_opaque(jaxpr, Counter())


def _rt13_io_name(aval):
    return (tuple(int(d) for d in aval.shape), np.dtype(aval.dtype).name)


@wrong(
    "io_avals",
    why="Clause 'One entry per input ..., in order, repeats kept': drops inputs that no equation and no output reads, as jit's lowering prunes them, so the IO program 'bf16, bool, uint8, zero-size, ...' loses its unused uint8[0,3] input, and lambda x, y: x * 2.0 loses y.",
)
def _rt13_io_avals_read_inputs_only(jaxpr):
    j = jaxpr.jaxpr
    read = set()
    for eqn in j.eqns:
        read.update(id(v) for v in eqn.invars)
    read.update(id(v) for v in j.outvars)
    ins = [_rt13_io_name(v.aval) for v in j.invars if id(v) in read]
    outs = [_rt13_io_name(v.aval) for v in j.outvars]
    return ins, outs


@wrong(
    "literal_operands",
    why="Clause 'operand order within an equation': assumes Python put the constant on the right (x * 2, x - 1) and skips operand 0, so `2.0 - x` (sub with the literal first) gives [] instead of [2.0].",
)
def _rt13_literal_operands_right_hand_only(jaxpr, primitive: str) -> list[float]:
    j = getattr(jaxpr, "jaxpr", jaxpr)
    out = []
    for eqn in j.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars[1:]:
            if isinstance(v, jax.extend.core.Literal):
                out.append(float(np.asarray(v.val).item()))
    return out


@wrong(
    "stablehlo_of",
    why="Clause 'the StableHLO text ... of jax.jit(f) lowered for args': lowers jax.jit(lambda *a: f(*a)) to accept any arguments, so the module is named @jit__lambda instead of @jit_f; differs for any def f, e.g. f(w, x) = sin(w) * 2.5 + x.",
)
def _rt13_stablehlo_of_lambda_wrapper(f, *args) -> str:
    return jax.jit(lambda *a: f(*a)).lower(*args).as_text()


@wrong(
    "stablehlo_of",
    why="Clause 'an argument f never reads is pruned along with the dead equations': lowers with donate_argnums for every array argument to save memory, which adds buffer-donor/aliasing attributes to @main's arguments; differs for f(w, x) = sin(w) * 2.5 + x with w a float32[3].",
)
def _rt13_stablehlo_of_donated(f, *args) -> str:
    donate = tuple(i for i, a in enumerate(args) if np.ndim(a) > 0)
    return jax.jit(f, donate_argnums=donate).lower(*args).as_text()


@wrong(
    "closure_consts",
    why="Clause 'each with its own dtype ... any shape': squeezes size-1 axes to give clean arrays, so a closed-over (1, 3) array comes back (3,); differs on lambda x: x + np.ones((1, 3), np.float32).",
)
def _rt13_closure_consts_squeezed(jaxpr) -> list[np.ndarray]:
    return [np.asarray(c).squeeze() for c in jaxpr.consts]


_RT13_ORDER_WEIGHTS_FIRST = ("w1", "w2", "b1", "b2")

_RT13_LATTICE_UP = {
    "bool": ["int"],
    "int": ["uint8", "int8", "float"],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["int64"],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": ["float"],
    "float": ["bfloat16", "float16"],
    "bfloat16": ["float32"],
    "float16": ["float32"],
    "float32": [],
}


def _rt13_above(k):
    seen, todo = {k}, [k]
    while todo:
        n = todo.pop()
        for m in _RT13_LATTICE_UP[n]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _rt13_join(a, b):
    common = _rt13_above(a) & _rt13_above(b)
    for c in common:
        if all(d in _rt13_above(c) for d in common):
            return {"int": "int32", "float": "float32", "int64": "int32"}.get(c, c)
    raise AssertionError


@wrong(
    "mlp_avals",
    why="Clause 'params is a dict ... in the order w1, b1, w2, b2' (and jax flattens dicts by sorted key): lists the weights before the biases (w1, w2, b1, b2), but jax's sorted order is b1, b2, w1, w2; differs on every case, e.g. (8, 16, 32, 4) float32/float32.",
)
def _rt13_mlp_avals_weights_first(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    shapes = {"w1": (in_dim, hidden), "b1": (hidden,), "w2": (hidden, out_dim), "b2": (out_dim,)}
    ins = [(shapes[k], param_dtype) for k in _RT13_ORDER_WEIGHTS_FIRST]
    ins.append(((batch, in_dim), x_dtype))
    h = _rt13_join(_rt13_join(x_dtype, param_dtype), "int")
    out = _rt13_join(h, param_dtype)
    return ins, [((batch, out_dim), out)]


@wrong(
    "unused_equations",
    why="Clause 'An effect is not a read: ... dead by this rule, and so is what only they read': reports the effectful equation itself as dead but still lets it mark its operands read (lowering keeps them), so for y = sin(x); jax.debug.print('{}', y); return x * 2.0 it answers ['debug_print'] instead of ['sin', 'debug_print'].",
)
def _rt13_unused_equations_effects_still_read(jaxpr) -> list[str]:
    j = getattr(jaxpr, "jaxpr", jaxpr)
    live = {id(v) for v in j.outvars}
    dead = []
    for eqn in reversed(j.eqns):
        is_live = any(id(v) in live for v in eqn.outvars)
        if not is_live:
            dead.append(eqn.primitive.name)
        if is_live or eqn.effects:
            live.update(id(v) for v in eqn.invars)
    return dead[::-1]


_RT13_CHAIN_UP = dict(
    _RT13_LATTICE_UP, float=["float16"], float16=["bfloat16"], bfloat16=["float32"]
)


def _rt13_chain_above(k):
    seen, todo = {k}, [k]
    while todo:
        n = todo.pop()
        for m in _RT13_CHAIN_UP[n]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


@wrong(
    "promoted_dtype",
    why="Clause 'Answer from JAX's promotion rules': orders the half floats by range (float16 below bfloat16, one chain), so bfloat16 + float16 (either order) answers 'bfloat16', but in JAX's lattice neither holds the other and they meet at 'float32'.",
)
def _rt13_promoted_dtype_half_floats_by_range(a: str, b: str) -> str:
    common = _rt13_chain_above(a) & _rt13_chain_above(b)
    for c in common:
        if all(d in _rt13_chain_above(c) for d in common):
            return {"int": "int32", "float": "float32", "int64": "int32"}.get(c, c)
    return "float32"
