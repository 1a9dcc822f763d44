"""Red-team (round 6) wrong answers for phase 2, written from the contract only.

Kinds of mistakes not tried by earlier rounds: closing over an argument instead of tracing it,
counting primitives in the printed text, Counter's `|` taken for `+`, Python truthiness on a
literal's value, closed-over 0-d arrays taken for literals, float literals rounded to float32's
printed precision, one name per unread result instead of per equation, the unoptimized HLO
dialect instead of StableHLO, literals taken for closure constants, a trace cache that
forgets x's dtype, and a jaxpr that is one jit equation read as the jitted function's own.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np

from kata_harness.decoys import wrong


def _rt6_mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt6_open(jaxpr):
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    return inner if hasattr(inner, "eqns") else jaxpr


def _rt6_sub(value):
    """Jaxprs held by one param value (a jaxpr, or a tuple / named tuple of them)."""
    if hasattr(value, "eqns"):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if hasattr(v, "eqns")]
    return []


# ----------------------------------------------------------------------------- mlp_jaxpr


@wrong(
    "mlp_jaxpr",
    why="'params and x are traced as inputs (four params leaves, then x; nothing closed over)': "
    "this traces x only and closes over params (make_jaxpr(lambda x: mlp(params, x))), so the "
    "four weights become constvars and the jaxpr has one input; wrong on every input, e.g. "
    "mlp_args() (in_avals [f32[8,16]] instead of b1, b2, w1, w2, x; consts has four arrays)",
)
def _rt6_mlp_jaxpr_closes_over_params(params: dict, x):
    return jax.make_jaxpr(lambda inputs: _rt6_mlp(params, inputs))(x)


_rt6_TRACES: dict = {}


@wrong(
    "mlp_jaxpr",
    why="'the jaxpr's avals follow the arguments of each call' (x keeps its dtype when it differs "
    "from the params'): a trace cache keyed on each param's shape and dtype and on x's shape, but "
    "not x's dtype, hands back a stale jaxpr; wrong on mlp_jaxpr(bf16 params, x bf16[7,5]) then "
    "mlp_jaxpr(the same bf16 params, x f32[7,5]) (x's aval and the output say bfloat16, "
    "truth float32), or f32 params with x f32 then x int32",
)
def _rt6_mlp_jaxpr_cache_ignores_x_dtype(params: dict, x):
    key = tuple((k, np.shape(v), str(np.asarray(v).dtype)) for k, v in sorted(params.items()))
    key += (np.shape(x),)
    if key not in _rt6_TRACES:
        _rt6_TRACES[key] = jax.make_jaxpr(_rt6_mlp)(params, x)
    return _rt6_TRACES[key]


# ----------------------------------------------------------------------------- primitive_census

_rt6_EQN_LINE = r"(?:^|\s)= ([A-Za-z_][\w\-]*)"  # an equation line: `outs = name`


@wrong(
    "primitive_census",
    why="'Count per equation: a jitted function called twice ... its contents count twice': this "
    "counts equation lines in the printed jaxpr (`... = name`), and jax 0.12's printer prints a "
    "shared jaxpr once, as a `let lambda = {...} in` binding; on "
    "shared(x) + shared(x + 1.0) (shared = jax.jit(sin * 3)) it gives sin 1, mul 1 (truth 2, 2); "
    "on the switch listing one jit twice, jit 1 (truth 2)",
)
def _rt6_census_printed_text(jaxpr) -> Counter:
    import re

    return Counter(re.findall(_rt6_EQN_LINE, str(jaxpr)))


@wrong(
    "primitive_census",
    why="'collections.Counter adds with +': this merges each nested jaxpr's counts with `|=`, "
    "which keeps the larger count (a union), not the sum; on shared(x) + shared(x + 1.0) "
    "(one jit called twice) it gives sin 1, mul 1 (truth 2, 2), and on cond(p, sin, "
    "lambda v: sin(v) * 2, x) sin 1 (truth 2)",
)
def _rt6_census_counter_union(jaxpr) -> Counter:
    counts = Counter()
    for eqn in _rt6_open(jaxpr).eqns:
        counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            for sub in _rt6_sub(value):
                counts |= _rt6_census_counter_union(sub)
    return counts


# ----------------------------------------------------------------------------- literal_operands


@wrong(
    "literal_operands",
    why="'every ... literal operand ... repeats kept' (True gives 1.0, so False gives 0.0): this "
    "keeps a literal only when `getattr(v, 'val', None)` is truthy, which drops every zero and "
    "False literal; on make_jaxpr(lambda v: jnp.maximum(v, 0.0))(f32[3]) with 'max' gives [] "
    "(truth [0.0]); on lax.clamp(0.0, x, 6.0) gives [6.0] "
    "(truth [0.0, 6.0]); on b & False gives []",
)
def _rt6_literal_operands_truthy(jaxpr, primitive: str) -> list:
    found = []
    for eqn in _rt6_open(jaxpr).eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            val = getattr(v, "val", None)
            if val:
                found.append(float(np.asarray(val)))
    return found


@wrong(
    "literal_operands",
    why="'only literals (a closed-over array is a constvar, not a literal)': this also reports "
    "operands that are 0-d constvars (a closed-over scalar jax Array looks like a folded "
    "constant) with their values; on make_jaxpr(lambda v: v * c)(f32[3]) with "
    "c = jnp.float32(2.0) and 'mul' gives [2.0] (truth [])",
)
def _rt6_literal_operands_scalar_consts(jaxpr, primitive: str) -> list:
    inner = _rt6_open(jaxpr)
    consts = {id(var): val for var, val in zip(inner.constvars, getattr(jaxpr, "consts", ()))}
    found = []
    for eqn in inner.eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if hasattr(v, "val"):
                found.append(float(np.asarray(v.val)))
            elif id(v) in consts and np.ndim(consts[id(v)]) == 0:
                found.append(float(np.asarray(consts[id(v)])))
    return found


@wrong(
    "literal_operands",
    why="'as floats ... exactly': a float literal is cleaned of its float32 'noise' by keeping "
    "7 significant digits (ints and bools stay exact); on x * 0.1 for f32 x with 'mul' gives "
    "[0.1] (truth 0.10000000149011612), on x + finfo(float32).max gives 3.402823e+38 (truth "
    "3.4028234663852886e+38), on a bf16 literal 0.1 gives 0.1001 (truth 0.10009765625)",
)
def _rt6_literal_operands_seven_digits(jaxpr, primitive: str) -> list:
    found = []
    for eqn in _rt6_open(jaxpr).eqns:
        if eqn.primitive.name != primitive:
            continue
        for v in eqn.invars:
            if not hasattr(v, "val"):
                continue
            value = np.asarray(v.val)
            exact = float(value)
            if value.dtype.kind in "biu":
                found.append(exact)
            else:
                found.append(float(f"{exact:.7g}"))
    return found


# ----------------------------------------------------------------------------- unused_equations


@wrong(
    "unused_equations",
    why="'Primitive names of top-level equations ... An equation with several results is ... "
    "dead when none is' (one name per equation): liveness is right, but the answer lists the "
    "producer of every unread variable, so a dead equation with two results is named twice; on "
    "v, i = lax.top_k(x, 2) (both unused); return x + 1 gives ['top_k', 'top_k'] (truth "
    "['top_k']); likewise an unused jax.jit returning a pair",
)
def _rt6_unused_name_per_result(jaxpr) -> list:
    inner = _rt6_open(jaxpr)
    live = {id(v) for v in inner.outvars if not hasattr(v, "val")}
    dead_eqns = set()
    for eqn in reversed(inner.eqns):
        if any(id(v) in live for v in eqn.outvars):
            live |= {id(v) for v in eqn.invars if not hasattr(v, "val")}
        else:
            dead_eqns.add(id(eqn))
    names = []
    for eqn in inner.eqns:
        if id(eqn) in dead_eqns:
            names += [eqn.primitive.name for _ in eqn.outvars]
    return names


# ----------------------------------------------------------------------------- stablehlo_of


@wrong(
    "stablehlo_of",
    why="'The StableHLO text (MLIR, parseable) ... Not the optimized HLO': this lowers with "
    "jit and asks the lowered stage for dialect='hlo', the unoptimized HLO text (HloModule ..., "
    "ENTRY ...), which is not MLIR; on programs.mixed with MIXED_ARGS the text does not parse "
    "and has no @main",
)
def _rt6_stablehlo_hlo_dialect(f, *args) -> str:
    return jax.jit(f).lower(*args).as_text(dialect="hlo")


# ----------------------------------------------------------------------------- closure_consts


@wrong(
    "closure_consts",
    why="'The values of the jaxpr's constvars ... Python scalars and 0-d NumPy arrays are inlined "
    "as literals, so they are not consts': this returns the constvars' values and then every "
    "top-level literal operand as a 0-d array of its dtype (all the constants the function "
    "closed over); on make_jaxpr(lambda x: x * HALVES + 1.0)(bf16[2,3]) it returns [HALVES, "
    "1.0] (truth [HALVES]); running the jaxpr with them fails",
)
def _rt6_closure_consts_with_literals(jaxpr) -> list:
    values = [np.asarray(c) for c in getattr(jaxpr, "consts", ())]
    for eqn in _rt6_open(jaxpr).eqns:
        for v in eqn.invars:
            if hasattr(v, "val"):
                values.append(np.asarray(v.val, dtype=v.aval.dtype))
    return values


# ----------------------------------------------------------------------------- io_avals


@wrong(
    "io_avals",
    why="'One entry per input ... and per output, in order, repeats kept' of *this* jaxpr: a "
    "jaxpr that is one jit equation is taken for the jitted function's own jaxpr (as mlp_jaxpr "
    "says of jax.jit(mlp)) and its inner avals are read; wrong when the outer function has an "
    "argument the jit does not take or returns its result twice: make_jaxpr(lambda x, n: "
    "(jax.jit(jnp.sin)(x),) * 2)(f32[3], i32[]) gives inputs [f32[3]] and one output (truth "
    "inputs f32[3], int32[] and two outputs)",
)
def _rt6_io_avals_unwraps_single_jit(jaxpr):
    def entry(aval):
        return (tuple(int(d) for d in aval.shape), np.dtype(aval.dtype).name)

    inner = _rt6_open(jaxpr)
    if len(inner.eqns) == 1 and inner.eqns[0].primitive.name == "jit":
        jaxpr = inner.eqns[0].params["jaxpr"]
    return [entry(a) for a in jaxpr.in_avals], [entry(a) for a in jaxpr.out_avals]
