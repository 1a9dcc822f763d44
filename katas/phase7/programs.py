"""The programs phase 7's tests compile and trace, and what `katas show` compiles per task.

A bank of control-flow programs (`PROGRAMS`: conditionals, switches, loops nested in each other
and in branches), two modules XLA's own conversion or parser produces (`IF_STABLEHLO`,
`SHARED_BRANCHES`), a bank of jaxprs with the loops each holds (`JAXPR_PROGRAMS`), and the
functions whose traces and compiles the tests count. Every IR-reading task reads the IR of one
of these, so `katas show` shows one program of each bank. The cases of the two predict tasks
(loop programs, calling patterns) are in predict_programs.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from kata_harness.programs import given


def vec(n: int = 8, dtype: type | np.dtype = np.float32):
    return np.ones(n, dtype)  # NumPy: creating jnp arrays would compile eager ops


def body(i, c):
    return c * 2.0 + i


def fori(x, n):
    return lax.fori_loop(0, n, body, x)


def doubling_while(x):
    return lax.while_loop(lambda c: c.sum() < 100, lambda c: c * 2, x)


def switch(x, branches):
    return lax.switch(jnp.int32(x.sum()) % len(branches), branches, x)


def cond(x):
    return lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)


def cond_in_scan(x):
    def step(c, row):
        return c + lax.cond(row.sum() > 0, jnp.sin, jnp.cos, row), None

    return lax.scan(step, jnp.zeros(4), x.reshape(-1, 4))[0]


def switch_in_cond(x):  # the 3-way switch lives in a branch of the 2-way cond
    return lax.cond(x[0] > 0, lambda v: switch(v, [jnp.sin, jnp.cos, jnp.tanh]), jnp.exp, x)


def cond_in_while(x):  # traced bound: a real while whose body holds a conditional
    n = jnp.int32(x[0]) + 3
    return lax.fori_loop(0, n, lambda i, c: lax.cond(i % 2 == 0, jnp.sin, jnp.cos, c), x)


def two_conds_and_switch(x):
    y = cond(x) + cond(x * 3.0)
    return switch(y, [jnp.sin, jnp.cos, jnp.tanh, jnp.exp])


def nested_while(x):
    def outer(c):
        return lax.while_loop(lambda d: d.sum() < 50, lambda d: d + 1, c) * 2

    return lax.while_loop(lambda c: c.sum() < 1000, outer, x)


def three_deep(x):
    def middle(c):
        return nested_while(c) + 1.0

    return lax.while_loop(lambda c: c.sum() < 1e6, middle, x)


def while_in_cond(x):
    return lax.cond(x.sum() > 0, doubling_while, jnp.sin, x)


def two_loops(x):
    return (
        doubling_while(x)
        + lax.scan(lambda c, r: (c + r, None), jnp.zeros(4), x.reshape(-1, 4))[0].sum()
    )


PROGRAMS = {
    "cond": cond,
    "switch3": lambda x: switch(x, [jnp.sin, jnp.cos, jnp.tanh]),
    "switch5": lambda x: switch(x, [jnp.sin, jnp.cos, jnp.tanh, jnp.exp, jnp.negative]),
    "cond_in_scan": cond_in_scan,
    "switch_in_cond": switch_in_cond,
    "cond_in_while": cond_in_while,
    "two_conds_and_switch": two_conds_and_switch,
    "fori_loop": lambda x: fori(x, 5),
    "fori_unrolled": lambda x: lax.fori_loop(0, 4, body, x, unroll=True),
    "fori_unroll_2": lambda x: lax.fori_loop(0, 4, body, x, unroll=2),
    "while_loop": doubling_while,
    "scan": lambda x: lax.scan(lambda c, r: (c + r, None), jnp.zeros(4), x.reshape(-1, 4))[0],
    "nested_while": nested_while,
    "three_deep": three_deep,
    "while_in_cond": while_in_cond,
    "two_loops": two_loops,
    "no_control_flow": lambda x: jnp.where(x > 0, jnp.sin(x), jnp.cos(x)),
}


# A pred-indexed conditional, as XLA's own StableHLO -> HLO conversion writes stablehlo.if
# (JAX's lowering always emits stablehlo.case with an i32 index instead).
IF_STABLEHLO = """
func.func @main(%p: tensor<i1>, %q: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.if"(%p) ({
    %a = "stablehlo.if"(%q) ({
      %s = stablehlo.sine %x : tensor<4xf32>
      stablehlo.return %s : tensor<4xf32>
    }, {
      %c = stablehlo.cosine %x : tensor<4xf32>
      stablehlo.return %c : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    stablehlo.return %a : tensor<4xf32>
  }, {
    %b = stablehlo.exponential %x : tensor<4xf32>
    stablehlo.return %b : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


# A switch whose cases share one branch computation (valid HLO: XLA's parser reads it; a
# conditional has as many branches as branch_computations entries, repeats included).
SHARED_BRANCHES = """HloModule shared_branches

double {
  a = f32[4]{0} parameter(0)
  ROOT d = f32[4]{0} add(a, a)
}

negate {
  b = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(b)
}

ENTRY main {
  i = s32[] parameter(0)
  x = f32[4]{0} parameter(1)
  ROOT c = f32[4]{0} conditional(i, x, x, x), branch_computations={double, double, negate}
}
"""


# Conditionals in two sibling computations that ENTRY calls (a pred-indexed one in %first, a
# 3-way switch in %second), and one in a while body. Printed in XLA's form (% before every
# name) so that its computations can be renamed and put in another order.
SIBLING_CALLS = """HloModule sibling_calls

%twice (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %d = f32[4]{0} add(%a, %a)
}

%flip (b: f32[4]) -> f32[4] {
  %b = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%b)
}

%first (p: pred[], u: f32[4]) -> f32[4] {
  %p = pred[] parameter(0)
  %u = f32[4]{0} parameter(1)
  ROOT %c1 = f32[4]{0} conditional(%p, %u, %u), true_computation=%twice, false_computation=%flip
}

%second (k: s32[], v: f32[4]) -> f32[4] {
  %k = s32[] parameter(0)
  %v = f32[4]{0} parameter(1)
  ROOT %c2 = f32[4]{0} conditional(%k, %v, %v, %v), branch_computations={%flip, %twice, %flip}
}

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %three), direction=LT
}

%body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]{0}) parameter(0)
  %j = s32[] get-tuple-element(%t), index=0
  %w = f32[4]{0} get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  %r = f32[4]{0} conditional(%j, %w, %w), branch_computations={%twice, %flip}
  ROOT %out = (s32[], f32[4]{0}) tuple(%next, %r)
}

ENTRY %main (pp: pred[], kk: s32[], xx: f32[4]) -> f32[4] {
  %pp = pred[] parameter(0)
  %kk = s32[] parameter(1)
  %xx = f32[4]{0} parameter(2)
  %y = f32[4]{0} call(%pp, %xx), to_apply=%first
  %z = f32[4]{0} call(%kk, %y), to_apply=%second
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %z)
  %loop = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  ROOT %last = f32[4]{0} get-tuple-element(%loop), index=1
}
"""


# A while whose CONDITION holds a while (the condition counts down a copy of the counter in a
# loop of its own before comparing), and one more while in the outer body: three whiles, one
# reached only through condition=. Compiled programs never put a loop in a condition.
WHILE_IN_CONDITION = """HloModule while_in_condition

%dec_cond (a: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %zero = s32[] constant(0)
  ROOT %gt = pred[] compare(%a, %zero), direction=GT
}

%dec_body (b: s32[]) -> s32[] {
  %b = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %less = s32[] subtract(%b, %one)
}

%outer_cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %left = s32[] while(%i), condition=%dec_cond, body=%dec_body
  %five = s32[] constant(5)
  %steps = s32[] add(%left, %i)
  ROOT %lt = pred[] compare(%steps, %five), direction=LT
}

%outer_body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]{0}) parameter(0)
  %j = s32[] get-tuple-element(%t), index=0
  %w = f32[4]{0} get-tuple-element(%t), index=1
  %spin = s32[] while(%j), condition=%dec_cond, body=%dec_body
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  %bump = s32[] add(%next, %spin)
  %d = f32[4]{0} add(%w, %w)
  ROOT %out = (s32[], f32[4]{0}) tuple(%bump, %d)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %x)
  %loop = (s32[], f32[4]{0}) while(%init), condition=%outer_cond, body=%outer_body
  ROOT %last = f32[4]{0} get-tuple-element(%loop), index=1
}
"""


CONDITIONAL_PROGRAMS = (
    "cond",
    "switch3",
    "switch5",
    "cond_in_scan",
    "switch_in_cond",
    "cond_in_while",
    "two_conds_and_switch",
    "while_in_cond",
    "no_control_flow",
    "pred_if",
    "shared_branches",
)


WHILE_PROGRAMS = (
    "fori_loop",
    "fori_unrolled",
    "fori_unroll_2",
    "nested_while",
    "three_deep",
    "while_in_cond",
    "two_loops",
    "cond_in_while",
    "no_control_flow",
    "nested_while_unoptimized",
    "while_in_condition",
)


@jax.jit
def inner_jit(x):
    return lax.fori_loop(0, 3, lambda i, c: c + 1.0, x)


@jax.custom_jvp
def custom(x):
    return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)


custom.defjvp(lambda primals, tangents: (custom(primals[0]), tangents[0]))


def add_one_n_times(c, n):
    return lax.fori_loop(0, n, lambda i, d: d + 1.0, c)


JAXPR_PROGRAMS = {
    # name: (function of (x: float, n: int), expected loops depth first)
    "static_bounds": (lambda x, n: fori(x, 5), ["scan"]),
    "traced_bounds": (lambda x, n: fori(x, n), ["while"]),
    "while_holds_scan": (
        lambda x, n: lax.fori_loop(0, n, lambda i, c: fori(c, 3), x),
        ["while", "scan"],
    ),
    "while_in_cond": (
        lambda x, n: lax.cond(
            x > 0, lambda v: lax.while_loop(lambda c: c < 9.0, jnp.exp, v), lambda v: v, x
        ),
        ["while"],
    ),
    # a while holding a scan, then a second while: depth first is not breadth first
    "nested_then_sequential": (
        lambda x, n: add_one_n_times(lax.fori_loop(0, n, lambda i, c: fori(c, 2), x), n),
        ["while", "scan", "while"],
    ),
    "scan_holds_while": (
        lambda x, n: lax.scan(
            lambda c, _: (add_one_n_times(c, n), None), fori(x, n), None, length=2
        )[0],
        ["while", "scan", "while"],
    ),
    "inside_jit": (lambda x, n: inner_jit(x) + fori(x, n), ["scan", "while"]),
    "inside_checkpoint": (lambda x, n: jax.checkpoint(lambda v: fori(v, 3))(x), ["scan"]),
    "inside_custom_jvp": (lambda x, n: custom(x), ["while"]),
    "loop_in_while_cond": (
        lambda x, n: lax.while_loop(
            lambda c: fori(c, 2) < 50.0, lambda c: add_one_n_times(c, n), x
        ),
        ["while", "scan", "while"],
    ),
    "grad_of_scan": (lambda x, n: jax.grad(lambda v: fori(v, 3))(x), ["scan", "scan"]),
    "lax_map": (lambda x, n: lax.map(lambda r: r * 2, jnp.ones((3,)) * x).sum(), ["scan"]),
    "no_loops": (lambda x, n: jnp.sin(x) * n, []),
}


def powers(traces):
    def power(x, n):
        traces.append(n)
        for _ in range(int(n)):  # Python control flow: n must be static
            x = x * 2.0
        return x

    return power


def scaler(traces):
    def scale(x, s):
        traces.append(1)
        return x * s

    return scale


def doubler():
    return jax.jit(lambda v: v * 2.0)


def mul(x, y):
    return x * y


# bucketed_mean's buckets in the tests (beside ones drawn afresh each run)
BUCKETS = (8, 16, 32)
ODD_BUCKETS = (40, 5, 12)  # unsorted, not powers of two


SHOWN = {
    "conditionals": given(
        PROGRAMS["switch_in_cond"],
        (vec(),),
        "a 3-way switch in a branch of a 2-way cond, x f32[8]: two conditionals",
    ),
    "while_loops": given(
        PROGRAMS["nested_while"], (vec(),), "a while in the body of a while, x f32[8]"
    ),
    "loop_primitives": given(
        JAXPR_PROGRAMS["nested_then_sequential"][0],
        (1.0, 4),
        "a fori_loop with a traced bound holding a static one, then another: --stage jaxpr",
    ),
}
