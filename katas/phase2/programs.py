"""The programs phase 2's tests trace, and what `katas show` compiles for each task.

Most tasks read a jaxpr the tests make from a bank of small programs here (nested jaxprs,
literals, dead code, closed-over constants); `katas show` shows one program of each bank.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap
from jax.extend.core.primitives import closed_call_p

from kata_harness import versions
from kata_harness.programs import Recipe, given

F32 = np.float32


def mlp_args(shape=(8, 16, 32, 4), dtype=F32, seed=0):
    batch, n_in, hidden, out = shape
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(n_in, hidden)),
        "b1": rng.normal(size=(hidden,)),
        "w2": rng.normal(size=(hidden, out)),
        "b2": rng.normal(size=(out,)),
    }
    params = {k: v.astype(dtype) for k, v in params.items()}
    return params, rng.normal(size=(batch, n_in)).astype(dtype)


MLP_CASES = {  # (batch, in, hidden, out), dtype
    "f32 8x16->32->4": ((8, 16, 32, 4), F32),
    "f32 size-1": ((1, 1, 3, 1), F32),
    "bf16 odd": ((7, 5, 9, 3), ml_dtypes.bfloat16),
}


def relu_sum(v):
    return jax.nn.relu(v).sum()


@jax.custom_vjp
def sin_vjp(x):
    return jnp.sin(x)


sin_vjp.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda cos, g: (g * cos,))


@custom_vmap
def vmap_rule_exp(x):
    return jnp.exp(x) * 3.0


@vmap_rule_exp.def_vmap
def _vmap_rule_exp_rule(axis_size, in_batched, x):
    return jnp.exp(x) * 3.0, in_batched[0]


TABLE = np.arange(6.0, dtype=F32).reshape(2, 3)


# The kinds promoted_dtype is asked about: 0-d NumPy arrays of a dtype, or Python scalars.
KINDS = (
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "int8",
    "int16",
    "int32",
    "bfloat16",
    "float16",
    "float32",
    "int",
    "float",
)


def kind_value(kind: str):
    """An argument of the kind: a Python 3 or 2.5, or a 0-d NumPy array of that dtype."""
    if kind == "int":
        return 3
    if kind == "float":
        return 2.5
    return np.ones((), ml_dtypes.bfloat16 if kind == "bfloat16" else kind)


AVAL_CASES = {  # (batch, in, hidden, out), param dtype, x dtype
    "f32 8x16->32->4": ((8, 16, 32, 4), "float32", "float32"),
    "bf16 size-1": ((1, 1, 3, 1), "bfloat16", "bfloat16"),
    "bf16 params, f32 x": ((7, 5, 9, 3), "bfloat16", "float32"),
    "f16 params, bf16 x": ((2, 3, 4, 5), "float16", "bfloat16"),
    "f32 params, int32 x": ((3, 6, 2, 7), "float32", "int32"),
    "square 4x4->4->4": ((4, 4, 4, 4), "float32", "float16"),
}


DTYPES = KINDS[:10]  # the ten dtype kinds (not the Python scalars): mlp_avals' whole domain


SHAPE_EDGES = ("batch 1", "in 1", "hidden 1", "out 1", "every size distinct")


def fresh_mlp_shape(rng, edge: str) -> tuple[int, int, int, int]:
    """(batch, in, hidden, out) drawn from a random.Random in the shape situation `edge` (one of
    SHAPE_EDGES): that size 1 and the others distinct from each other, widths 2 to 9, batch 2
    to 6; or all four distinct."""
    sizes = {"batch": rng.randint(2, 6)}
    sizes.update(zip(("in", "hidden", "out"), rng.sample(range(2, 10), 3), strict=True))
    while len(set(sizes.values())) < 4:
        sizes["batch"] = rng.randint(2, 6)
    if edge != SHAPE_EDGES[-1]:
        sizes[edge.removesuffix(" 1")] = 1
    return (sizes["batch"], sizes["in"], sizes["hidden"], sizes["out"])


def shape_edges(rng, count: int) -> list[str]:
    """`count` shape situations, each of SHAPE_EDGES as often as the others, in a drawn order."""
    edges = [SHAPE_EDGES[k % len(SHAPE_EDGES)] for k in range(count)]
    rng.shuffle(edges)
    return edges


def mlp_calls(rng, shape, group: int, x_dtype: str, other_dtype: str) -> list[tuple]:
    """mlp_jaxpr's calls for one x dtype and one shape, as (params, x, what changed): one per
    params dtype (drawn order), x of rank 1, 2 or 3 by the group; then three calls that each
    change one thing from the call before (x's dtype to `other_dtype`, x's leading shape, the
    params' widths); then one with x weakly typed (and b1 too in even groups)."""
    lead = ((), (shape[0],), (2, shape[0]))[group % 3]  # x's rank: 1, 2, 3 in turn
    calls = []
    for param_dtype in rng.sample(DTYPES, len(DTYPES)):
        params, x = aval_case_args(shape, param_dtype, x_dtype)
        calls.append((params, np.ones((*lead, shape[1]), x.dtype), ""))
    params, x, _ = calls[-1]
    x = x.astype(aval_case_args(shape, param_dtype, other_dtype)[1].dtype)  # same shape
    calls.append((params, x, "after the same call with only x's dtype changed"))
    x = np.ones((*((7,) if len(lead) != 1 else ()), shape[1]), x.dtype)  # another rank
    calls.append((params, x, "after the same call with only x's leading shape changed"))
    wider = (shape[0], shape[1], shape[2] + 1, shape[3] + 1)
    params = aval_case_args(wider, str(params["w1"].dtype), x_dtype)[0]
    calls.append((params, x, "after the same call with only the params' widths changed"))
    # a Python float or int, which jnp makes a weakly typed array (jnp.matmul refuses a weak
    # int32 against 8- or 16-bit integer params: a float then)
    narrow = params["w1"].dtype.kind in "iu" and params["w1"].dtype.itemsize < 4
    weak = 1.0 if narrow else rng.choice((1.0, 1))
    x = jnp.full(x.shape, weak)
    if group % 2 == 0:
        params = {**params, "b1": jnp.full(params["b1"].shape, weak)}
    calls.append((params, x, f"with x weakly typed (~{x.dtype}){' and b1' * (group % 2 == 0)}"))
    return calls


def aval_case_args(shape, param_dtype: str, x_dtype: str):
    """params (inserted as w1, b1, w2, b2) and x for one AVAL_CASES entry."""
    batch, n_in, hidden, out = shape
    named = {"bfloat16": ml_dtypes.bfloat16}
    params = {
        "w1": np.ones((n_in, hidden), named.get(param_dtype, param_dtype)),
        "b1": np.ones((hidden,), named.get(param_dtype, param_dtype)),
        "w2": np.ones((hidden, out), named.get(param_dtype, param_dtype)),
        "b2": np.ones((out,), named.get(param_dtype, param_dtype)),
    }
    return params, np.ones((batch, n_in), named.get(x_dtype, x_dtype))


@functools.cache
def census_programs():
    """Programs and facts written out by hand: (jaxpr, {primitive: count})."""
    xs, one = np.arange(4.0, dtype=F32), F32(1.0)
    shared = jax.jit(lambda v: jnp.sin(v) * 3.0)
    inner = jax.make_jaxpr(lambda v: jnp.tanh(v) - 1.0)(one)
    # one branch runs, but each one's equations are in the program: the census adds them up
    # and a function listed twice is traced once: two branches hold one jaxpr object
    double = jax.jit(lambda v: jnp.sin(v) * 2.0)
    shared_branches = [double, jnp.sin, lambda v: jnp.exp(jnp.sin(v) * v), double]

    def nested_jit(x):
        return jax.jit(lambda a: jax.jit(lambda b: jnp.exp(b) * 2.0)(a) + 1.0)(x)

    def cond_in_scan(v):
        def step(c, x):
            return c + lax.cond(x > 1.0, jnp.sin, jnp.cos, x), None

        return lax.scan(step, F32(0.0), v)[0]

    def switch_and_while(x):
        y = lax.switch(np.int32(2), [jnp.exp, jnp.log1p, lambda v: v * TABLE[0, 1]], x)
        return lax.while_loop(lambda c: c < TABLE.sum(), lambda c: jnp.sqrt(c) + c * 2.0, y)

    def calls(x):
        a = sin_vjp(x) + relu_sum(x)
        b = jax.checkpoint(lambda v: jnp.tanh(v) * 2.0)(x).sum()
        if not versions.holds("closed-call-binds-a-jaxpr"):  # a gate, listed in the header
            return a + b
        return a + b + closed_call_p.bind(x.sum(), call_jaxpr=inner)[0]

    def linear_solve(b):
        return lax.custom_linear_solve(
            lambda v: v * 2.0, b, solve=lambda m, r: r / 2.0, symmetric=True
        )

    def other_params(x):
        # jaxprs under param names the docstring does not list: linear_call's `callee`,
        # custom_vmap_call's `call`
        lin = jax.custom_derivatives.linear_call(
            lambda c, v: jnp.sin(v) * c, lambda c, t: jnp.cos(t) * c, 2.0, x
        )
        return lin + vmap_rule_exp(x)

    calls_facts = {"custom_vjp_call": 1, "sin": 1, "custom_jvp_call": 1, "max": 1, "remat2": 1}
    calls_facts["tanh"] = 1  # the remat's
    if versions.holds("closed-call-binds-a-jaxpr"):
        calls_facts.update(tanh=2, eval_jaxpr=1, sub=1)  # the closed call's inner jaxpr
    return {
        "custom_linear_solve (jaxprs in a named tuple)": (
            jax.make_jaxpr(linear_solve)(xs),
            {"custom_linear_solve": 1, "mul": 2, "div": 2},
        ),
        "cond (2 branches)": (
            jax.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(one),
            {"cond": 1, "sin": 1, "cos": 1},
        ),
        "switch, its branches sharing primitives, one listed twice": (
            jax.make_jaxpr(lambda x: lax.switch(np.int32(1), shared_branches, x))(one),
            {"cond": 1, "jit": 2, "sin": 4, "mul": 3, "exp": 1},
        ),
        "jit in jit in jit": (
            jax.make_jaxpr(lambda x: jax.jit(nested_jit)(x))(one),
            {"jit": 3, "exp": 1, "mul": 1, "add": 1},
        ),
        "one jit called twice": (
            jax.make_jaxpr(lambda x: shared(x) + shared(x + 1.0))(one),
            {"jit": 2, "sin": 2, "mul": 2, "add": 2},
        ),
        "cond in scan body": (
            jax.make_jaxpr(cond_in_scan)(xs),
            {"scan": 1, "cond": 1, "sin": 1, "cos": 1, "gt": 1},
        ),
        "switch (3) then while": (
            jax.make_jaxpr(switch_and_while)(one),
            {"cond": 1, "exp": 1, "log1p": 1, "while": 1, "lt": 1, "sqrt": 1},
        ),
        "linear_call (callee), custom_vmap (call)": (
            jax.make_jaxpr(other_params)(one),
            {"linear_call": 1, "sin": 1, "custom_vmap_call": 1, "exp": 1, "mul": 2, "add": 1},
        ),
        "custom_vjp, custom_jvp, remat, closed call": (
            jax.make_jaxpr(calls)(xs),
            calls_facts,
        ),
    }


def passthrough(x, y, flag):
    return {"b": (x * 2).astype(jnp.int32), "a": flag}, x, 1.0


def closes_over(x):
    return x + TABLE[0], x.astype(jnp.float16) * np.float16(2)


def output_then_dead(x):
    y = x + 1
    jnp.sin(x).astype(jnp.int32)  # traced after the output's equation, left dead
    return y


IO_PROGRAMS = {  # name: (function, args)
    "mlp": (lambda p, x: jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"], mlp_args()),
    "lookup (f32 table, i32 index)": (
        lambda t, i: (t[i] > 0, i + 1),
        (np.arange(6.0, dtype=F32).reshape(2, 3), np.int32(1)),
    ),
    "bf16, bool, uint8, zero-size, a dict out, an input out, a literal out": (
        passthrough,
        (np.ones((1, 5), ml_dtypes.bfloat16), np.zeros((0, 3), np.uint8), np.array([True, False])),
    ),
    "same avals twice, a closed-over array": (
        lambda a, b: closes_over(a) + (a - b,),
        (np.ones(3, F32), np.zeros(3, F32)),
    ),
    "an output computed before a dead int32 equation": (
        output_then_dead,
        (np.array([0.5, -1.0, 2.0], F32),),
    ),
}


def dead_mul(x):
    y = x * 2  # noqa: F841  (dead on purpose)
    return x + 1


def dead_chain(x):
    a = jnp.sin(x)
    b = a * 2.0
    c = jnp.cos(b)  # noqa: F841  (sin feeds mul feeds cos: all three dead)
    return x + 1


def dead_twice_and_read_by_output(x):
    y = jnp.sin(x)
    z = y * 2.0  # noqa: F841
    w = x * 3.0  # noqa: F841
    return y - 1.0


def dead_inside_only(x):
    pair = jax.jit(lambda v: (jnp.exp(v), jnp.log(v)))(x)  # one output used: the jit is live
    looped = lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0, jnp.sin(c[1])), (0, x, x)
    )
    return pair[0] + looped[1]


ONE = F32(1.0)


def mixed(w, i, h):
    return jnp.sin(w) @ w.T + i, h * 2


MIXED_ARGS = (np.ones((2, 3), ml_dtypes.bfloat16), np.int32(4), np.ones(5, np.float16))


INTS = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)


HALVES = np.full((2, 3), 0.5, ml_dtypes.bfloat16)


def two_consts(x):
    return x * HALVES + INTS


def scan_consts(xs):
    return lax.scan(lambda c, v: (c + v * TABLE[1], c), np.zeros(3, F32), xs)[0]


SHOWN = {
    "mlp_jaxpr": Recipe(
        lambda m: (m.mlp, mlp_args()),
        "the phase's mlp(params, x f32[8,16]), the program this task traces",
        given=True,
    ),
    "unused_equations": given(
        dead_chain, (ONE,), "sin(x) feeds x * 2 feeds an unused cos; the result is x + 1"
    ),
    "stablehlo_of": given(
        mixed, MIXED_ARGS, "(sin(w) @ w.T + i, h * 2) with w bf16[2,3], i s32[], h f16[5]"
    ),
    "closure_consts": given(
        two_consts, (np.ones((2, 3), F32),), "x * HALVES + INTS: two closed-over arrays"
    ),
}
