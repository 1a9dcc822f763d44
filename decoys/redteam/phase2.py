"""Red-team wrong answers for phase 2, written from the contract only."""

from collections import Counter

import numpy as np

from kata_harness.decoys import wrong

# ---- helpers a learner would write -------------------------------------------------------


def _rt_inner(value):
    """The open jaxpr inside a param value, if it is one (open or closed form)."""
    if hasattr(value, "eqns"):
        return value
    inner = getattr(value, "jaxpr", None)
    if inner is not None and hasattr(inner, "eqns"):
        return inner
    return None


def _rt_open(jaxpr):
    return jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr


# ---- primitive_census --------------------------------------------------------------------


@wrong(
    "primitive_census",
    why="'at any depth ... branches (a tuple), cond_jaxpr and body_jaxpr (while), jaxprs': "
    "recurses only into params named jaxpr and call_jaxpr; on lax.cond(x > 0, sin, cos, x) "
    "gives {cond: 1} without sin and cos",
)
def rt_census_only_jaxpr_params(jaxpr):
    counts = Counter()
    for eqn in _rt_open(jaxpr).eqns:
        counts[eqn.primitive.name] += 1
        for key in ("jaxpr", "call_jaxpr"):
            inner = _rt_inner(eqn.params.get(key))
            if inner is not None:
                counts += rt_census_only_jaxpr_params(inner)
    return counts


@wrong(
    "primitive_census",
    why="'count per equation: a jitted function called twice ... its contents count twice': "
    "memoizes visited jaxprs by id; on shared(x) + shared(x + 1) gives sin 1, mul 1 (truth 2, 2)",
)
def rt_census_visits_each_jaxpr_once(jaxpr):
    counts, seen = Counter(), set()

    def walk(open_jaxpr):
        if id(open_jaxpr) in seen:
            return
        seen.add(id(open_jaxpr))
        for eqn in open_jaxpr.eqns:
            counts[eqn.primitive.name] += 1
            for value in eqn.params.values():
                for item in value if isinstance(value, tuple) else (value,):
                    inner = _rt_inner(item)
                    if inner is not None:
                        walk(inner)

    walk(_rt_open(jaxpr))
    return counts


@wrong(
    "primitive_census",
    why="'the nesting equation itself counts too (one cond plus ...)': counts only leaf "
    "equations; on jit in jit in jit gives no jit (truth jit: 3)",
)
def rt_census_skips_nesting_eqns(jaxpr):
    counts = Counter()
    for eqn in _rt_open(jaxpr).eqns:
        nested = False
        for value in eqn.params.values():
            for item in value if isinstance(value, tuple) else (value,):
                inner = _rt_inner(item)
                if inner is not None:
                    nested = True
                    counts += rt_census_skips_nesting_eqns(inner)
        if not nested:
            counts[eqn.primitive.name] += 1
    return counts


@wrong(
    "primitive_census",
    why="'jaxprs (custom_linear_solve: a named tuple of four)': recurses into params whose "
    "type is exactly tuple (cond's branches), so a named tuple is skipped; on "
    "custom_linear_solve(v * 2, b, r / 2) misses its mul and div",
)
def rt_census_plain_tuples_only(jaxpr):
    counts = Counter()
    for eqn in _rt_open(jaxpr).eqns:
        counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            items = value if type(value) is tuple else (value,)
            for item in items:
                inner = _rt_inner(item)
                if inner is not None:
                    counts += rt_census_plain_tuples_only(inner)
    return counts


# ---- io_avals, literal_operands, unused_equations ----------------------------------------


@wrong(
    "io_avals",
    why="'one entry per input (not the constvars)': lists the constvars' avals before the "
    "inputs; on a function closing over an array it has one input too many",
)
def rt_io_avals_with_constvars(jaxpr):
    inner = _rt_open(jaxpr)

    def entry(aval):
        return (tuple(int(d) for d in aval.shape), np.dtype(aval.dtype).name)

    inputs = [entry(v.aval) for v in list(inner.constvars) + list(inner.invars)]
    outputs = [entry(v.aval) for v in inner.outvars]
    return inputs, outputs


@wrong(
    "literal_operands",
    why="'only top-level equations (not those of nested jaxprs)': also collects literals of "
    "equations of that primitive inside nested jaxprs (jit, cond, scan)",
)
def rt_literals_recursive(jaxpr, primitive):
    found = []
    for eqn in _rt_open(jaxpr).eqns:
        if eqn.primitive.name == primitive:
            found += [float(np.asarray(v.val)) for v in eqn.invars if hasattr(v, "val")]
        for value in eqn.params.values():
            for item in value if isinstance(value, tuple) else (value,):
                inner = _rt_inner(item)
                if inner is not None:
                    found += rt_literals_recursive(inner, primitive)
    return found


@wrong(
    "literal_operands",
    why="'only operands count (not params such as integer_pow's y)': adds the y of "
    "integer_pow as if it were a literal; on x ** 2 gives [2.0], truth []",
)
def rt_literals_with_pow_param(jaxpr, primitive):
    found = []
    for eqn in _rt_open(jaxpr).eqns:
        if eqn.primitive.name != primitive:
            continue
        found += [float(np.asarray(v.val)) for v in eqn.invars if hasattr(v, "val")]
        if isinstance(eqn.params.get("y"), int):
            found.append(float(eqn.params["y"]))
    return found


@wrong(
    "unused_equations",
    why="'an equation read only by dead equations is dead too (a chain sin -> mul -> unused cos "
    "is three dead equations)': one pass, marks only equations no other equation or output "
    "reads; on dead_chain gives ['cos'], truth ['sin', 'mul', 'cos']",
)
def rt_unused_single_pass(jaxpr):
    inner = _rt_open(jaxpr)
    read = {id(v) for v in inner.outvars}
    for eqn in inner.eqns:
        read |= {id(v) for v in eqn.invars if not hasattr(v, "val")}
    return [eqn.primitive.name for eqn in inner.eqns if not any(id(v) in read for v in eqn.outvars)]


@wrong(
    "unused_equations",
    why="'an equation with several results is live when any of them is read': looks only at "
    "the first result; in dead_inside_only the while_loop's second result is read, its first "
    "is not, and it is called dead (truth: nothing dead)",
)
def rt_unused_first_result_only(jaxpr):
    inner = _rt_open(jaxpr)
    live = {id(v) for v in inner.outvars}
    dead = []
    for eqn in reversed(inner.eqns):
        if id(eqn.outvars[0]) in live:
            live |= {id(v) for v in eqn.invars if not hasattr(v, "val")}
        else:
            dead.append(eqn.primitive.name)
    return dead[::-1]


# ---- promoted_dtype (predict) ------------------------------------------------------------

_RT_PY = {"int": "int32", "float": "float32"}


@wrong(
    "promoted_dtype",
    why="'answer from JAX's promotion rules' (its lattice, not NumPy's): uses NumPy's "
    "np.promote_types (ml_dtypes for bf16) and renames 64-bit to 32-bit, with Python scalars "
    "as weak; right on uint8 + int8 and bfloat16 + float16, but int32 + bfloat16 gives "
    "float32 (JAX: bfloat16), int16 + float16 float32 (JAX: float16): 16 of 144 pairs wrong",
)
def rt_promoted_numpy_lattice(a, b):
    import ml_dtypes

    def as_dtype(kind):
        return np.dtype(ml_dtypes.bfloat16) if kind == "bfloat16" else np.dtype(kind)

    if a in _RT_PY and b in _RT_PY:
        return "float32" if "float" in (a, b) else "int32"
    if a in _RT_PY or b in _RT_PY:
        python, array = (a, b) if a in _RT_PY else (b, a)
        array_dtype = as_dtype(array)
        if python == "float" and array_dtype.kind in "biu":
            return "float32"
        if python == "int" and array_dtype.kind == "b":
            return "int32"
        return array_dtype.name
    try:
        result = np.promote_types(as_dtype(a), as_dtype(b))
    except TypeError:
        return "float32"
    name = result.name
    return {"float64": "float32", "int64": "int32", "uint64": "uint32"}.get(name, name)


@wrong(
    "promoted_dtype",
    why="a Python int is weak (it gives way to the array's dtype): treats Python int as a "
    "strong int32 and Python float as strong float32; on ('uint8', 'int') says int32, "
    "truth uint8; on ('bfloat16', 'float') says float32, truth bfloat16",
)
def rt_promoted_python_scalars_strong(a, b):
    a, b = _RT_PY.get(a, a), _RT_PY.get(b, b)
    up = _RT_UP

    def above(kind):
        found, todo = {kind}, [kind]
        while todo:
            for parent in up.get(todo.pop(), ()):
                if parent not in found:
                    found.add(parent)
                    todo.append(parent)
        return found

    common = above(a) & above(b)
    lowest = [k for k in common if not any(k != o and k in above(o) for o in common)]
    return {"int64": "int32", "uint64": "uint32", "float64": "float32"}.get(lowest[0], lowest[0])


# JAX's lattice on strong dtypes (a kind -> the kinds just above it)
_RT_UP = {
    "bool": ("uint8", "int8"),
    "uint8": ("uint16", "int16"),
    "uint16": ("uint32", "int32"),
    "uint32": ("uint64", "int64"),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "uint64": ("bfloat16", "float16"),
    "int64": ("bfloat16", "float16"),
    "bfloat16": ("float32",),
    "float16": ("float32",),
    "float32": ("float64",),
}


# ---- mlp_avals (predict) -----------------------------------------------------------------


@wrong(
    "mlp_avals",
    why="'in which order does jax flatten a dict' (sorted keys b1, b2, w1, w2): lists the "
    "params in insertion order w1, b1, w2, b2; wrong on every case",
)
def rt_mlp_avals_insertion_order(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    inputs = [
        ((in_dim, hidden), param_dtype),
        ((hidden,), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((out_dim,), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    return inputs, [
        ((batch, out_dim), promoted_dtype(param_dtype, x_dtype))
    ]  # the module's correct one


@wrong(
    "mlp_avals",
    why="'What dtype comes out of mixed inputs?': gives the output the params' dtype; on "
    "bf16 params with f32 x says bfloat16, truth float32",
)
def rt_mlp_avals_output_param_dtype(batch, in_dim, hidden, out_dim, param_dtype, x_dtype):
    inputs = [
        ((hidden,), param_dtype),
        ((out_dim,), param_dtype),
        ((in_dim, hidden), param_dtype),
        ((hidden, out_dim), param_dtype),
        ((batch, in_dim), x_dtype),
    ]
    return inputs, [((batch, out_dim), param_dtype)]
