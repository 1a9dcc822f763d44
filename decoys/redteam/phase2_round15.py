"""Red team, phase 2, round 15: numpy-converted and precision-pinned MLP traces, a census
that counts what runs (scan length, while's extra cond, a checkpoint's recomputation),
result-less and ordered-effect liveness slips, a device-pinned lowering, a doubled-width
unsigned/signed rule, a weak-type-only literal filter and consts copied into flat buffers."""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt15_mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt15_nested(value):
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_rt15_nested(v))
        return out
    if hasattr(value, "eqns"):
        return [value]
    inner = getattr(value, "jaxpr", None)
    if inner is not None and hasattr(inner, "eqns"):
        return [inner]
    return []


def _rt15_eqns(jaxpr):
    return jaxpr.eqns if hasattr(jaxpr, "eqns") else jaxpr.jaxpr.eqns


def _rt15_is_literal(v):
    return isinstance(v, jax.extend.core.Literal)


@wrong(
    "mlp_jaxpr",
    why="Clause 'the jaxpr's avals follow the arguments of each call, weak types too': converts "
    "every leaf with np.asarray first (to trace host arrays, not device ones), which turns a "
    "weakly typed x into a plain float32 NumPy array; for x = jnp.full((8, 16), 1.0) with "
    "mlp_args() params the x input aval is f32[8,16] instead of ~f32[8,16].",
)
def _rt15_mlp_jaxpr_numpy_leaves(params: dict, x):
    params = {k: np.asarray(v) for k, v in params.items()}
    return jax.make_jaxpr(_rt15_mlp)(params, np.asarray(x))


@wrong(
    "mlp_jaxpr",
    why="Clause 'Return the (closed) jaxpr of mlp for these arguments' (the jaxpr mlp gives): "
    "traces under jax.default_matmul_precision('float32') so the matmuls are 'exact', which "
    "records precision=(HIGHEST, HIGHEST) in both dot_general equations instead of None; "
    "differs on mlp_args() (f32 8x16->32->4): the equations' params differ.",
)
def _rt15_mlp_jaxpr_pinned_precision(params: dict, x):
    with jax.default_matmul_precision("float32"):
        return jax.make_jaxpr(_rt15_mlp)(params, x)


def _rt15_census_runs(jaxpr, counts):
    for eqn in _rt15_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
        for value in eqn.params.values():
            for sub in _rt15_nested(value):
                for _ in range(int(times)):
                    _rt15_census_runs(sub, counts)
    return counts


@wrong(
    "primitive_census",
    why="Clause 'Count per equation' (each nested jaxpr's contents once per nesting equation): "
    "counts a scan body once per iteration (length times, what runs); for "
    "lax.scan(lambda c, a: (c + jnp.sin(a), None), x[0], x) with x f32[4] it gives sin 4, "
    "add 4 instead of sin 1, add 1.",
)
def _rt15_primitive_census_scan_length(jaxpr) -> Counter:
    return _rt15_census_runs(jaxpr, Counter())


def _rt15_census_while(jaxpr, counts):
    for eqn in _rt15_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        for key, value in eqn.params.items():
            for sub in _rt15_nested(value):
                _rt15_census_while(sub, counts)
                if key == "cond_jaxpr":  # the condition runs once more than the body
                    _rt15_census_while(sub, counts)
    return counts


@wrong(
    "primitive_census",
    why="Clause 'Count per equation ... the nesting equation itself counts too (plus what each "
    "nested jaxpr contains)': counts while's cond_jaxpr twice (the test runs once more than "
    "the body); for lax.while_loop(lambda c: c < 10.0, lambda c: c + 1.0, x) it gives lt 2 "
    "instead of lt 1.",
)
def _rt15_primitive_census_while_cond_twice(jaxpr) -> Counter:
    return _rt15_census_while(jaxpr, Counter())


@wrong(
    "unused_equations",
    why="Clause 'An effect is not a read: a jax.debug.print or jax.debug.callback (they have no "
    "results) ... are dead': skips equations with no results (nothing there to be unused), so "
    "for def h(x): jax.debug.print('{}', jnp.cos(x)); return x it answers ['cos'] instead of "
    "['cos', 'debug_print'].",
)
def _rt15_unused_equations_skip_resultless(jaxpr) -> list[str]:
    j = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    read = {v for v in j.outvars if not _rt15_is_literal(v)}
    dead = []
    for eqn in reversed(j.eqns):
        if not eqn.outvars:
            continue  # no results: nothing to be unused
        if any(v in read for v in eqn.outvars):
            read.update(v for v in eqn.invars if not _rt15_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "unused_equations",
    why="Clause 'An effect is not a read ... dead by this rule, ordered or not': keeps equations "
    "with an ordered effect alive (their order must be kept, as lowering does) and lets them "
    "read their operands; for def h(x): jax.debug.print('{}', jnp.cos(x), ordered=True); "
    "return x it answers [] instead of ['cos', 'debug_print'].",
)
def _rt15_unused_equations_ordered_kept(jaxpr) -> list[str]:
    j = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    read = {v for v in j.outvars if not _rt15_is_literal(v)}
    dead = []
    for eqn in reversed(j.eqns):
        ordered = bool(eqn.params.get("ordered", False))
        if ordered or any(v in read for v in eqn.outvars):
            read.update(v for v in eqn.invars if not _rt15_is_literal(v))
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


@wrong(
    "stablehlo_of",
    why="Clause 'exactly those [attributes] jit's default lowering sets (... giving shardings "
    "adds others)': pins every argument to the first device with in_shardings="
    "SingleDeviceSharding, which adds an sdy.mesh and sdy.sharding argument attributes; differs "
    "for f = lambda w, s: w * s, w f32[3], s = 2.5.",
)
def _rt15_stablehlo_of_pinned_device(f, *args) -> str:
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return jax.jit(f, in_shardings=sharding).lower(*args).as_text()


_rt15_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "int8": 8, "int16": 16, "int32": 32}
_rt15_FLOATS = ("bfloat16", "float16", "float32")


def _rt15_promote(a: str, b: str) -> str:
    if a == b:
        return "int32" if a == "int" else ("float32" if a == "float" else a)
    for p, q in ((a, b), (b, a)):
        if p == "bool":
            return _rt15_promote("int", q) if q == "int" else ("float32" if q == "float" else q)
    if {a, b} == {"int", "float"}:
        return "float32"
    for p, q in ((a, b), (b, a)):
        if p == "float":
            return q if q in _rt15_FLOATS else "float32"
        if p == "int":
            return q
    if a in _rt15_FLOATS and b in _rt15_FLOATS:
        return "float32"
    if a in _rt15_FLOATS:
        return a
    if b in _rt15_FLOATS:
        return b
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if _rt15_BITS[a] >= _rt15_BITS[b] else b
    # unsigned with signed: a signed int twice as wide as the wider of the two
    return f"int{min(32, 2 * max(_rt15_BITS[a], _rt15_BITS[b]))}"


@wrong(
    "promoted_dtype",
    why="Clause 'where do a and b meet in JAX's type promotion lattice': an unsigned meets a "
    "signed at the lowest signed node above both (u8 -> i16, so u8 + i16 is int16); this "
    "doubles the wider width instead, so promoted_dtype('uint8', 'int16') gives 'int32' "
    "instead of 'int16' (other pairs agree).",
)
def _rt15_promoted_dtype_double_wider(a: str, b: str) -> str:
    return _rt15_promote(a, b)


@wrong(
    "literal_operands",
    why="Clause 'whatever the literal's dtype ... an int8 3 gives 3.0, True gives 1.0': keeps "
    "only weakly typed literals (the constants Python folded, as Python scalars are weak), "
    "so NumPy-typed literals are dropped: for lambda x: x * np.int8(3) on x int8[3] and 'mul' "
    "it answers [] instead of [3.0].",
)
def _rt15_literal_operands_weak_only(jaxpr, primitive: str) -> list[float]:
    out = []
    for eqn in _rt15_eqns(jaxpr):
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if _rt15_is_literal(v) and getattr(v.aval, "weak_type", False):
                out.append(float(np.asarray(v.val).astype(np.float64)))
    return out


def _rt15_census_remat(jaxpr, counts):
    for eqn in _rt15_eqns(jaxpr):
        counts[eqn.primitive.name] += 1
        # a checkpointed body runs again on the backward pass: count its recomputation too
        times = 2 if eqn.primitive.name.startswith(("remat", "checkpoint")) else 1
        for value in eqn.params.values():
            for sub in _rt15_nested(value):
                for _ in range(times):
                    _rt15_census_remat(sub, counts)
    return counts


@wrong(
    "primitive_census",
    why="Clause 'Count per equation ... one cond plus what each of its branches contains' (a "
    "nested jaxpr counts once per nesting equation): counts a checkpoint's body twice (it is "
    "recomputed on the backward pass); for jax.checkpoint(lambda v: jnp.sin(v) * 2.0) on x "
    "f32[3] it gives sin 2, mul 2 instead of sin 1, mul 1.",
)
def _rt15_primitive_census_remat_recomputed(jaxpr) -> Counter:
    return _rt15_census_remat(jaxpr, Counter())


@wrong(
    "closure_consts",
    why="Clause 'Plain NumPy arrays (np.ndarray), each with its own dtype ... and any shape': "
    "copies each const into a plain buffer with np.frombuffer(np.asarray(c).tobytes(), dtype), "
    "which keeps dtype and values but flattens the shape (a 0-d const becomes shape (1,)); for "
    "lambda x: x + TABLE (programs.TABLE, f32[2,3]) it returns one f32[6] array, not f32[2,3].",
)
def _rt15_closure_consts_plain_buffer(jaxpr) -> list[np.ndarray]:
    out = []
    for c in jaxpr.consts:
        a = np.asarray(c)
        out.append(np.frombuffer(a.tobytes(), dtype=a.dtype).copy())
    return out
