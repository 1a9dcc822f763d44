"""Plausible wrong answers to phase 2; each must be caught by the tests it names.

Accepted variants are correct answers spelled differently from the reference: every test of
their task must pass on them.
"""

import re
from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import accepted, decoy
from katas.phase2.programs import aval_case_args


def _mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _avals(avals):
    return [(tuple(a.shape), str(a.dtype)) for a in avals]


# ------------------------------------------------------------------------------------ mlp_jaxpr


@decoy("mlp_jaxpr", caught_by=["test_mlp_jaxpr_computes_the_mlp"], why="traces an MLP without relu")
def jaxpr_without_relu(params, x):
    return jax.make_jaxpr(lambda p, v: (v @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])(params, x)


@decoy(
    "mlp_jaxpr",
    caught_by=["test_mlp_jaxpr_avals_follow_the_arguments"],
    why="closes over params instead of tracing them",
)
def jaxpr_params_closed(params, x):
    return jax.make_jaxpr(lambda v: _mlp(params, v))(x)


@decoy(
    "mlp_jaxpr",
    caught_by=["test_mlp_jaxpr_avals_follow_the_arguments"],
    why="traces with the example's shapes (8x16 -> 32 -> 4) whatever it is given",
)
def jaxpr_fixed_shapes(params, x):
    ones = {"w1": (16, 32), "b1": (32,), "w2": (32, 4), "b2": (4,)}
    return jax.make_jaxpr(_mlp)(
        {k: np.ones(s, np.float32) for k, s in ones.items()}, np.ones((8, 16), np.float32)
    )


@decoy(
    "mlp_jaxpr",
    caught_by=["test_mlp_jaxpr_avals_follow_the_arguments"],
    why="casts the arguments to float32 before tracing",
)
def jaxpr_float32(params, x):
    cast = {k: np.asarray(v, np.float32) for k, v in params.items()}
    return jax.make_jaxpr(_mlp)(cast, np.asarray(x, np.float32))


@decoy(
    "mlp_jaxpr",
    caught_by=["test_mlp_jaxpr_mixed_dtypes"],
    why="casts x to the params' dtype (right whenever they share one)",
)
def jaxpr_x_in_param_dtype(params, x):
    return jax.make_jaxpr(_mlp)(params, np.asarray(x).astype(np.asarray(params["w1"]).dtype))


@accepted("mlp_jaxpr", why="jax.jit(mlp).trace(...).jaxpr")
def jaxpr_from_trace(params, x):
    return jax.jit(_mlp).trace(params, x).jaxpr


@accepted("mlp_jaxpr", why="make_jaxpr of the jitted mlp (one jit equation holding the rest)")
def jaxpr_of_jit(params, x):
    return jax.make_jaxpr(jax.jit(_mlp))(params, x)


# ------------------------------------------------------------------------------ primitive_census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="counts only the top level",
)
def census_top_level(jaxpr):
    return Counter(eqn.primitive.name for eqn in jaxpr.eqns)


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="skips the nesting equation itself",
)
def census_without_nesting_eqn(jaxpr):
    census = Counter()
    for eqn in jaxpr.eqns:
        subs = [v for v in eqn.params.values() if hasattr(v, "eqns")]
        subs += [
            b for v in eqn.params.values() if isinstance(v, tuple) for b in v if hasattr(b, "eqns")
        ]
        if not subs:
            census[eqn.primitive.name] += 1
        for sub in subs:
            census += census_without_nesting_eqn(sub)
    return census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="recurses only into params named 'jaxpr' (misses branches, cond/body, call_jaxpr)",
)
def census_jaxpr_param_only(jaxpr):
    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        if "jaxpr" in eqn.params:
            census += census_jaxpr_param_only(eqn.params["jaxpr"])
    return census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="a table of the param names the docstring lists (misses custom_linear_solve's)",
)
def census_param_table(jaxpr):
    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        for key in ("jaxpr", "call_jaxpr", "cond_jaxpr", "body_jaxpr"):
            if key in eqn.params:
                census += census_param_table(eqn.params[key])
        for branch in eqn.params.get("branches", ()):
            census += census_param_table(branch)
    return census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="walks every jaxpr-valued param but not tuples of them (cond's branches)",
)
def census_no_tuples(jaxpr):
    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        for value in eqn.params.values():
            if hasattr(value, "eqns"):
                census += census_no_tuples(value)
    return census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="one level of nesting only: the jaxprs inside nested jaxprs are not walked",
)
def census_one_level(jaxpr):
    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "eqns"):
                    census.update(e.primitive.name for e in sub.eqns)
    return census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="remembers the jaxprs it visited, so a jitted function called twice counts once",
)
def census_visited_once(jaxpr, seen=None):
    seen = set() if seen is None else seen
    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "eqns") and id(sub) not in seen:
                    seen.add(id(sub))
                    census += census_visited_once(sub, seen)
    return census


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_counts_match_library"],
    why="counts primitive names in the printed jaxpr (a shared jaxpr is printed once)",
)
def census_from_text(jaxpr):
    return Counter(re.findall(r"= ([a-z_][a-z0-9_]*)\b", str(jaxpr)))


@decoy(
    "primitive_census",
    caught_by=["test_census_walks_nested_jaxprs", "test_census_on_fresh_nestings"],
    why="recurses only through the param names the docstring lists (misses linear_call's "
    "callee, custom_vmap_call's call)",
)
def census_documented_params(jaxpr):
    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        for key in ("jaxpr", "call_jaxpr", "branches", "cond_jaxpr", "body_jaxpr", "jaxprs"):
            value = eqn.params.get(key)
            for sub in value if isinstance(value, (tuple, list)) else [value]:
                if hasattr(sub, "eqns"):
                    census += census_documented_params(sub)
    return census


@accepted("primitive_census", why="an explicit stack instead of recursion, Counter.update")
def census_with_stack(jaxpr):
    census, stack = Counter(), [jaxpr]
    while stack:
        current = stack.pop()
        for eqn in current.eqns:
            census.update([eqn.primitive.name])
            for value in eqn.params.values():
                items = value if isinstance(value, (tuple, list)) else [value]
                stack.extend(item for item in items if hasattr(item, "eqns"))
    return census


@accepted("primitive_census", why="jax.extend.core.jaxprs_in_params finds the nested jaxprs")
def census_jaxprs_in_params(jaxpr):
    import jax.extend

    census = Counter()
    for eqn in jaxpr.eqns:
        census[eqn.primitive.name] += 1
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            census += census_jaxprs_in_params(sub)
    return census


# ------------------------------------------------------------------------------------- io_avals


@decoy(
    "io_avals",
    caught_by=["test_io_avals_on_varied_programs", "test_io_avals_read_dtypes"],
    why="inputs and outputs swapped",
)
def avals_swapped(jaxpr):
    return _avals(jaxpr.out_avals), _avals(jaxpr.in_avals)


@decoy(
    "io_avals",
    caught_by=["test_io_avals_on_varied_programs", "test_io_avals_read_dtypes"],
    why="writes 'float32' for every dtype because the MLP's are all float32",
)
def avals_dtype_assumed(jaxpr):
    def describe(avals):
        return [(tuple(a.shape), "float32") for a in avals]

    return describe(jaxpr.in_avals), describe(jaxpr.out_avals)


@decoy(
    "io_avals",
    caught_by=["test_io_avals_on_varied_programs"],
    why="counts the constvars as inputs too",
)
def avals_with_constvars(jaxpr):
    inner = jaxpr.jaxpr
    return (_avals(v.aval for v in [*inner.constvars, *inner.invars]), _avals(jaxpr.out_avals))


@decoy(
    "io_avals",
    caught_by=["test_io_avals_on_varied_programs"],
    why="reads the outputs off the last equation (misses inputs and literals returned as is)",
)
def avals_last_eqn(jaxpr):
    last = jaxpr.eqns[-1]
    return _avals(jaxpr.in_avals), _avals(v.aval for v in last.outvars)


@decoy(
    "io_avals",
    caught_by=["test_io_avals_on_varied_programs"],
    why="a set of avals: repeats dropped, order lost",
)
def avals_as_set(jaxpr):
    return sorted(set(_avals(jaxpr.in_avals))), sorted(set(_avals(jaxpr.out_avals)))


@accepted("io_avals", why="through the open jaxpr's variables and np.dtype(...).name")
def avals_from_vars(jaxpr):
    def describe(variables):
        return [
            (tuple(int(d) for d in v.aval.shape), np.dtype(v.aval.dtype).name) for v in variables
        ]

    return describe(jaxpr.jaxpr.invars), describe(jaxpr.jaxpr.outvars)


# ------------------------------------------------------------------------------ literal_operands


@decoy(
    "literal_operands",
    caught_by=["test_literals_are_per_primitive"],
    why="literals of every primitive",
)
def literals_everywhere(jaxpr, primitive):
    return [float(np.asarray(v.val)) for e in jaxpr.eqns for v in e.invars if hasattr(v, "val")]


@decoy(
    "literal_operands",
    caught_by=["test_literals_are_per_primitive"],
    why="assumes the literal is the last operand (x * 2), misses 2.0 - x",
)
def literals_last_operand(jaxpr, primitive):
    return [
        float(np.asarray(e.invars[-1].val))
        for e in jaxpr.eqns
        if e.primitive.name == primitive and hasattr(e.invars[-1], "val")
    ]


@decoy(
    "literal_operands",
    caught_by=["test_python_folds_leading_constants"],
    why="a sorted set: repeats dropped, order lost",
)
def literals_sorted_set(jaxpr, primitive):
    return sorted(
        {
            float(np.asarray(v.val))
            for e in jaxpr.eqns
            if e.primitive.name == primitive
            for v in e.invars
            if hasattr(v, "val")
        }
    )


@decoy(
    "literal_operands",
    caught_by=["test_literals_only_at_top_level"],
    why="walks nested jaxprs too (the task asks for top-level equations)",
)
def literals_recursive(jaxpr, primitive):
    found = []
    for e in jaxpr.eqns:
        if e.primitive.name == primitive:
            found += [float(np.asarray(v.val)) for v in e.invars if hasattr(v, "val")]
        for value in e.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "eqns"):
                    found += literals_recursive(sub, primitive)
    return found


@decoy(
    "literal_operands",
    caught_by=["test_literals_of_other_dtypes", "test_literals_only_at_top_level"],
    why="reads the printed jaxpr with a regex for f32 literals",
)
def literals_from_text(jaxpr, primitive):
    found = []
    for line in str(jaxpr).splitlines():
        if re.search(rf"= {primitive}\b", line):
            found += [float(v) for v in re.findall(r"(-?[\d.]+):f32\[\]", line)]
    return found


@accepted("literal_operands", why="isinstance(v, Literal) and float(v.val)")
def literals_by_type(jaxpr, primitive):
    from jax.extend.core import Literal

    return [
        float(v.val)
        for e in jaxpr.eqns
        if e.primitive.name == primitive
        for v in e.invars
        if isinstance(v, Literal)
    ]


# ------------------------------------------------------------------------------ unused_equations


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_propagates_backwards"],
    why="only looks one step back",
)
def unused_one_step(jaxpr):
    inner = jaxpr.jaxpr
    read = {id(v) for e in inner.eqns for v in e.invars} | {id(v) for v in inner.outvars}
    return [e.primitive.name for e in inner.eqns if not any(id(v) in read for v in e.outvars)]


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_stays_in_jaxpr"],
    why="dead = not an output of the jaxpr (ignores what other equations read)",
)
def unused_not_outputs(jaxpr):
    outs = {id(v) for v in jaxpr.jaxpr.outvars}
    return [e.primitive.name for e in jaxpr.eqns if not any(id(v) in outs for v in e.outvars)]


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_propagates_backwards"],
    why="two backward passes instead of a fixed point",
)
def unused_two_passes(jaxpr):
    eqns, dead = jaxpr.eqns, set()
    for _ in range(2):
        read = {id(v) for i, e in enumerate(eqns) if i not in dead for v in e.invars}
        read |= {id(v) for v in jaxpr.jaxpr.outvars}
        dead |= {i for i, e in enumerate(eqns) if not any(id(v) in read for v in e.outvars)}
    return [eqns[i].primitive.name for i in sorted(dead)]


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_on_varied_programs"],
    why="an equation is dead as soon as one of its results is unused",
)
def unused_any_output(jaxpr):
    inner = jaxpr.jaxpr
    used = {id(v) for v in inner.outvars}
    dead = []
    for eqn in reversed(inner.eqns):
        if not all(id(v) in used for v in eqn.outvars):
            dead.append(eqn.primitive.name)
            if not any(id(v) in used for v in eqn.outvars):
                continue
        used.update(id(v) for v in eqn.invars if not hasattr(v, "val"))
    return dead[::-1]


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_propagates_backwards", "test_dead_code_on_varied_programs"],
    why="a sorted set of names: order lost, repeats dropped",
)
def unused_sorted_set(jaxpr):
    inner = jaxpr.jaxpr
    used, dead = {id(v) for v in inner.outvars}, set()
    for eqn in reversed(inner.eqns):
        if not any(id(v) in used for v in eqn.outvars):
            dead.add(eqn.primitive.name)
            continue
        used.update(id(v) for v in eqn.invars)
    return sorted(dead)


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_with_effects"],
    why="an equation with effects (debug_print, io_callback) is live, as jax's dce_jaxpr keeps it",
)
def unused_effects_live(jaxpr):
    inner = jaxpr.jaxpr
    used = {id(v) for v in inner.outvars}
    dead = []
    for eqn in reversed(inner.eqns):
        if not eqn.effects and not any(id(v) in used for v in eqn.outvars):
            dead.append(eqn.primitive.name)
            continue
        used.update(id(v) for v in eqn.invars if not hasattr(v, "val"))
    return dead[::-1]


@decoy(
    "unused_equations",
    caught_by=["test_dead_code_with_effects"],
    why="an equation with no results (a debug print) is taken as live, and so what it reads",
)
def unused_resultless_live(jaxpr):
    inner = jaxpr.jaxpr
    used = {id(v) for v in inner.outvars}
    dead = []
    for eqn in reversed(inner.eqns):
        if eqn.outvars and not any(id(v) in used for v in eqn.outvars):
            dead.append(eqn.primitive.name)
            continue
        used.update(id(v) for v in eqn.invars if not hasattr(v, "val"))
    return dead[::-1]


@accepted("unused_equations", why="forward passes until nothing changes, variables in a set")
def unused_fixed_point(jaxpr):
    inner = jaxpr.jaxpr
    live = [True] * len(inner.eqns)
    changed = True
    while changed:
        read = set(inner.outvars) | {
            v
            for e, alive in zip(inner.eqns, live, strict=True)
            if alive
            for v in e.invars
            if not hasattr(v, "val")
        }
        new = [any(v in read for v in e.outvars) for e in inner.eqns]
        changed, live = new != live, new
    return [e.primitive.name for e, alive in zip(inner.eqns, live, strict=True) if not alive]


# ---------------------------------------------------------------------------------- stablehlo_of


@decoy(
    "stablehlo_of",
    caught_by=["test_lowering_drops_dead_code", "test_lowering_keeps_argument_types"],
    why="returns HLO, not StableHLO",
)
def stablehlo_is_hlo(f, *args):
    return jax.jit(f).lower(*args).as_text(dialect="hlo")


@decoy(
    "stablehlo_of",
    caught_by=["test_lowering_drops_dead_code", "test_lowering_keeps_argument_types"],
    why="the optimized HLO of the compiled program",
)
def stablehlo_compiled(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


@decoy(
    "stablehlo_of",
    caught_by=["test_lowering_drops_dead_code", "test_lowering_keeps_argument_types"],
    why="the printed jaxpr",
)
def stablehlo_jaxpr_text(f, *args):
    return str(jax.make_jaxpr(f)(*args))


@decoy(
    "stablehlo_of",
    caught_by=["test_lowering_keeps_argument_types"],
    why="casts every argument to float32 first",
)
def stablehlo_float32(f, *args):
    return jax.jit(f).lower(*(np.asarray(a, np.float32) for a in args)).as_text()


@accepted("stablehlo_of", why="the MLIR module of compiler_ir('stablehlo'), printed")
def stablehlo_compiler_ir(f, *args):
    return str(jax.jit(f).trace(*args).lower().compiler_ir("stablehlo"))


# -------------------------------------------------------------------------------- closure_consts


@decoy("closure_consts", caught_by=["test_closed_over_array_is_a_const"], why="always empty")
def consts_empty(jaxpr):
    return []


@decoy(
    "closure_consts",
    caught_by=["test_consts_in_constvar_order"],
    why="only the first const (the examples close over one array)",
)
def consts_first_only(jaxpr):
    return [np.asarray(c) for c in jaxpr.consts[:1]]


@decoy(
    "closure_consts",
    caught_by=["test_consts_in_constvar_order"],
    why="converts every const to float32",
)
def consts_float32(jaxpr):
    return [np.asarray(c, np.float32) for c in jaxpr.consts]


@decoy(
    "closure_consts",
    caught_by=["test_closed_over_scalar_is_a_literal"],
    why="collects the literals and the nested jaxprs' consts as well",
)
def consts_and_literals(jaxpr):
    found = [np.asarray(c) for c in jaxpr.consts]
    for e in jaxpr.eqns:
        found += [np.asarray(v.val) for v in e.invars if hasattr(v, "val")]
        for value in e.params.values():
            if hasattr(value, "consts"):
                found += [np.asarray(c) for c in value.consts]
    return found


@decoy(
    "closure_consts",
    caught_by=["test_closed_over_array_is_a_const", "test_consts_in_constvar_order"],
    why="returns the stored values as they are, not as NumPy arrays",
)
def consts_raw(jaxpr):
    return list(jaxpr.consts)


@accepted("closure_consts", why="np.array copies via map")
def consts_copied(jaxpr):
    return list(map(np.array, jaxpr.consts))


# ------------------------------------------------------------------------------- promoted_dtype

_LATTICE = {
    "bool": ("int",),
    "int": ("uint8", "int8"),
    "uint8": ("uint16", "int16"),
    "uint16": ("uint32", "int32"),
    "uint32": ("int64",),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "int64": ("float",),
    "float": ("bfloat16", "float16"),
    "bfloat16": ("float32",),
    "float16": ("float32",),
    "float32": (),
}


def _join(a: str, b: str, lattice: dict) -> str:
    def above(kind):
        found, todo = {kind}, [kind]
        while todo:
            for parent in lattice[todo.pop()]:
                if parent not in found:
                    found.add(parent)
                    todo.append(parent)
        return found

    common = above(a) & above(b)
    return next(kind for kind in common if common <= above(kind))


@decoy(
    "promoted_dtype",
    caught_by=["test_promoted_dtype_matches_the_jaxpr", "test_promoted_dtype_weak_python_scalars"],
    why="no weak types: a Python int is an int32 and a Python float a float32",
)
def promoted_strong_scalars(a: str, b: str):
    strong = {"int": "int32", "float": "float32"}
    least = _join(strong.get(a, a), strong.get(b, b), _LATTICE)
    return {"int64": "int32"}.get(least, least)


@decoy(
    "promoted_dtype",
    caught_by=["test_promoted_dtype_matches_the_jaxpr"],
    why="an integer array and a bfloat16 or float16 array meet at float32",
)
def promoted_ints_to_float32(a, b):
    least = _join(a, b, {**_LATTICE, "int64": ("float32",)})
    return {"int": "int32", "float": "float32"}.get(least, least)


@decoy(
    "promoted_dtype",
    caught_by=["test_promoted_dtype_matches_the_jaxpr"],
    why="forgets that 32-bit mode turns the int64 of uint32 + int32 into int32",
)
def promoted_int64(a, b):
    least = _join(a, b, _LATTICE)
    return {"int": "int32", "float": "float32"}.get(least, least)


@decoy(
    "promoted_dtype",
    caught_by=["test_promoted_dtype_matches_the_jaxpr", "test_promoted_dtype_weak_python_scalars"],
    why="asks jnp.result_type instead of predicting",
)
def promoted_asked(a, b):
    import jax.numpy as jnp

    python = {"int": int, "float": float}
    return jnp.result_type(python.get(a, a), python.get(b, b)).name


# ------------------------------------------------------------------------------------ mlp_avals


@decoy(
    "mlp_avals",
    caught_by=["test_mlp_avals_match_the_jaxpr"],
    why="inputs in the dict's insertion order (w1, b1, w2, b2), not jax's sorted-key order",
)
def avals_insertion_order(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    shapes = [(in_dim, hidden), (hidden,), (hidden, out_dim), (out_dim,), (batch, in_dim)]
    dtypes = [param_dtype] * 4 + [x_dtype]
    out = _join(param_dtype, x_dtype, _LATTICE)
    return list(zip(shapes, dtypes, strict=True)), [((batch, out_dim), out)]


@decoy(
    "mlp_avals",
    caught_by=["test_mlp_avals_match_the_jaxpr"],
    why="the output keeps x's dtype",
)
def avals_output_like_x(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    shapes = {"b1": (hidden,), "b2": (out_dim,), "w1": (in_dim, hidden), "w2": (hidden, out_dim)}
    inputs = [(shapes[k], param_dtype) for k in sorted(shapes)] + [((batch, in_dim), x_dtype)]
    return inputs, [((batch, out_dim), x_dtype)]


@decoy(
    "mlp_avals",
    caught_by=["test_mlp_avals_match_the_jaxpr"],
    why="traces mlp with jax.make_jaxpr instead of predicting",
)
def avals_traced(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    args = aval_case_args((batch, in_dim, hidden, out_dim), param_dtype, x_dtype)
    jaxpr = jax.make_jaxpr(_mlp)(*args)
    return _avals(jaxpr.in_avals), _avals(jaxpr.out_avals)


def _sorted_inputs(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    shapes = {"b1": (hidden,), "b2": (out_dim,), "w1": (in_dim, hidden), "w2": (hidden, out_dim)}
    return [(shapes[k], param_dtype) for k in sorted(shapes)] + [((batch, in_dim), x_dtype)]


@decoy(
    "mlp_avals",
    caught_by=["test_mlp_avals_every_dtype_pair"],
    why="the shared dtype, or float32 whenever params and x differ (right on the six listed mixes)",
)
def avals_mixed_is_float32(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    out = param_dtype if param_dtype == x_dtype else "float32"
    inputs = _sorted_inputs(batch, in_dim, hidden, out_dim, param_dtype, x_dtype)
    return inputs, [((batch, out_dim), out)]


@decoy(
    "mlp_avals",
    caught_by=["test_mlp_avals_every_dtype_pair"],
    why="the join of the two dtypes alone: forgets relu's weak Python 0 (bool + bool is int32)",
)
def avals_join_without_relu(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    out = _join(param_dtype, x_dtype, _LATTICE)
    inputs = _sorted_inputs(batch, in_dim, hidden, out_dim, param_dtype, x_dtype)
    return inputs, [((batch, out_dim), {"int64": "int32"}.get(out, out))]


@accepted("mlp_avals", why="x first in a list built backwards, then reversed; keys listed sorted")
def avals_reversed(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    out = _join(param_dtype, x_dtype, _LATTICE)
    backwards = [
        ((batch, in_dim), x_dtype),
        ((hidden, out_dim), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((out_dim,), param_dtype),
        ((hidden,), param_dtype),
    ]
    out = _join(out, "int", _LATTICE)  # relu's max(v, 0): bool + bool becomes int32
    return backwards[::-1], [((batch, out_dim), {"int64": "int32", "int": "int32"}.get(out, out))]
