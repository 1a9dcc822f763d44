"""The cases of phase 7's two predict tasks: loop programs and calling patterns, as plain data.

A `LoopProgram` says which loops a program runs (kind, trip count, unroll, what a step does,
loops nested in each step) and how the whole is wrapped (vmap, a cond branch, grad); `build`
turns it into a function of x = f32[8] and a traced int n. A calling pattern is a list of
`Call`s, each saying which function is called, through which API, on which arguments and
devices; `run_calls` runs one. The tests draw new cases of both every run and compile or run
them; `LOOP_BANK` and `COMPILE_SCENARIOS` are the fixed cases they always include.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

LOOP_KINDS = ("fori", "fori_traced", "while", "scan", "map", "python_for", "cumsum")
STEPS = ("affine", "tanh")
WRAPS = ("none", "vmap", "cond", "grad")


@dataclass(frozen=True)
class Loop:
    """One loop, run on a carry c = f32[8] (a row of the batch under vmap).

    kind: "fori" lax.fori_loop(0, trips, ...); "fori_traced" lax.fori_loop(0, n, ...) with n a
    traced int (trips is then the value n has at run time); "while" lax.while_loop counting
    from 0 while the count is < trips; "scan" lax.scan over trips elements; "map" lax.map over
    trips rows built from c, summed afterwards; "python_for" a Python for over range(trips);
    "cumsum" jnp.cumsum(c), no loop primitive (trips, unroll, step and body unused).
    unroll: the unroll argument of "fori" and "scan" (an int >= 1, or True: everything
    unrolled; mind that True == 1 in Python); 1 elsewhere.
    step: what one step does after the nested loops ran: "affine" c * 1.01 + i, "tanh"
    tanh(c) * 1.5 + i (i the step number).
    body: loops run one after the other on the carry inside every step, before `step`.
    """

    kind: str
    trips: int
    unroll: int | bool = 1
    step: str = "affine"
    body: tuple[Loop, ...] = ()

    def describe(self) -> str:
        if self.kind == "cumsum":
            return "cumsum"
        unroll = "" if self.unroll == 1 and self.unroll is not True else f", unroll={self.unroll}"
        body = f", body [{'; '.join(b.describe() for b in self.body)}]" if self.body else ""
        return f"{self.kind}({self.trips}{unroll}, {self.step}{body})"


@dataclass(frozen=True)
class LoopProgram:
    """Loops run one after the other on x = f32[8]; `wrap` says what surrounds them: "none";
    "vmap" jax.vmap over a batch of 2 rows; "cond" one branch of lax.cond (the other returns
    x); "grad" jax.grad of the sum of the result (then no loop has a body, and every kind is
    "fori", "scan", "map", "python_for" or "cumsum": JAX differentiates those in reverse)."""

    loops: tuple[Loop, ...]
    wrap: str = "none"

    def describe(self) -> str:
        loops = "; ".join(loop.describe() for loop in self.loops)
        return f"[{loops}]" + ("" if self.wrap == "none" else f" under {self.wrap}")


def _step(kind: str, i, c):
    return c * 1.01 + i if kind == "affine" else jnp.tanh(c) * 1.5 + i


def _chain(loops: tuple[Loop, ...], c, n):
    for loop in loops:
        c = _run(loop, c, n)
    return c


def _run(loop: Loop, c, n):
    def one(i, v):
        return _step(loop.step, i, _chain(loop.body, v, n))

    if loop.kind == "fori":
        return lax.fori_loop(0, loop.trips, one, c, unroll=loop.unroll)
    if loop.kind == "fori_traced":
        return lax.fori_loop(0, n, one, c)
    if loop.kind == "while":

        def keep_going(state: tuple) -> bool:
            return state[0] < loop.trips

        def next_step(state: tuple) -> tuple:
            return state[0] + 1, one(state[0], state[1])

        return lax.while_loop(keep_going, next_step, (0, c))[1]
    if loop.kind == "scan":
        steps = jnp.arange(loop.trips, dtype=jnp.float32)
        return lax.scan(lambda v, i: (one(i, v), None), c, steps, unroll=loop.unroll)[0]
    if loop.kind == "map":
        rows = jnp.stack([c * (k + 1.0) for k in range(loop.trips)])
        return lax.map(lambda r: one(0, r), rows).sum(0)
    if loop.kind == "python_for":
        for i in range(loop.trips):
            c = one(i, c)
        return c
    if loop.kind == "cumsum":
        return jnp.cumsum(c)
    raise ValueError(f"unknown loop kind {loop.kind!r}; one of {LOOP_KINDS}")


def build(program: LoopProgram):
    """The function of (x: f32[8], n: a traced int32) that `program` describes."""

    def run(x, n):
        return _chain(program.loops, x, n)

    if program.wrap == "vmap":
        return lambda x, n: jax.vmap(lambda row: run(row, n))(jnp.stack([x, x * 2.0]))
    if program.wrap == "cond":
        return lambda x, n: lax.cond(x[0] > 0, lambda v: run(v, n), lambda v: v, x)
    if program.wrap == "grad":
        return lambda x, n: jax.grad(lambda v: run(v, n).sum())(x)
    return run


def loop_arguments(n: int = 3) -> tuple[np.ndarray, np.int32]:
    """(x, n) for a built program: NumPy values, so that making them compiles nothing."""
    return np.ones(8, np.float32), np.int32(n)


# The fixed loop programs every run includes (the programs the task started with).
LOOP_BANK = {
    "fori_loop(0, 5)": LoopProgram((Loop("fori", 5),)),
    "fori_loop(0, n), n traced": LoopProgram((Loop("fori_traced", 3),)),
    "fori_loop(0, 5, unroll=True)": LoopProgram((Loop("fori", 5, unroll=True),)),
    "fori_loop(0, 6, unroll=2)": LoopProgram((Loop("fori", 6, unroll=2),)),
    "fori_loop(0, 1)": LoopProgram((Loop("fori", 1),)),
    "while_loop counting to 7": LoopProgram((Loop("while", 7),)),
    "scan over 4 rows": LoopProgram((Loop("scan", 4),)),
    "fori_loop inside fori_loop": LoopProgram((Loop("fori", 3, body=(Loop("fori", 4),)),)),
    "Python for over range(5)": LoopProgram((Loop("python_for", 5),)),
    "lax.map over 3 rows": LoopProgram((Loop("map", 3),)),
    "vmap of a fori_loop": LoopProgram((Loop("fori", 5),), wrap="vmap"),
    "two fori_loops, one after the other": LoopProgram((Loop("fori", 3), Loop("fori", 4))),
    "fori_loop in one branch of a cond": LoopProgram((Loop("fori", 4),), wrap="cond"),
    "jnp.cumsum": LoopProgram((Loop("cumsum", 0),)),
    "grad of an affine fori_loop": LoopProgram((Loop("fori", 5),), wrap="grad"),
    "grad of a tanh fori_loop": LoopProgram((Loop("fori", 5, step="tanh"),), wrap="grad"),
}


# ---- calling patterns: what compiles ------------------------------------------------------------

APIS = ("call", "trace", "lower", "compile")
FUNCTIONS = ("scale", "shift", "count_up", "lambda")


def scale(x, n):
    return x * n


def shift(x, n):
    return x + n


def count_up(x, n):
    return lax.fori_loop(0, n, lambda i, c: c + i, x)


@dataclass(frozen=True)
class Call:
    """One step of a calling pattern, run after the ones before it in the same process.

    api: "call" jitted(x, n); "trace" jitted.trace(x, n); "lower" jitted.lower(x, n);
    "compile" jitted.lower(x, n).compile().
    function: "scale" (x * n), "shift" (x + n), "count_up" (lax.fori_loop(0, n, ...) over x),
    all defined once at module level; or "lambda": a new `lambda x, n: x * n` made at this step.
    jit: "shared" the pattern's one jax.jit wrapper of (function, static); "new" jax.jit
    applied to the function again at this step.
    static: whether n is static (static_argnums=1) rather than traced.
    x: a NumPy array (of any shape, 0-d included), a NumPy scalar or a Python scalar.
    n: a Python bool, int or float.
    device: x is committed to jax.devices()[device] with jax.device_put first; None leaves it
    as it is (uncommitted).
    """

    api: str = "call"
    function: str = "scale"
    jit: str = "shared"
    static: bool = False
    x: object = field(default_factory=lambda: np.ones(3, np.float32))
    n: object = 2
    device: int | None = None

    def describe(self) -> str:
        x = self.x
        if isinstance(x, np.ndarray):
            x = f"np.ndarray {x.dtype}{list(x.shape)}"
        elif isinstance(x, np.generic):
            x = f"np.{type(x).__name__}({x})"
        where = "" if self.device is None else f" committed to device {self.device}"
        how = "static" if self.static else "traced"
        return f"{self.api} {self.function} ({self.jit} jit) on x={x}{where}, n={self.n!r} {how}"


_FUNCTIONS = {"scale": scale, "shift": shift, "count_up": count_up}


def run_calls(calls: list[Call]) -> None:
    """Run a calling pattern (the caller clears JAX's caches first and counts compiles)."""
    wrappers = {}
    for call in calls:
        function = _FUNCTIONS.get(call.function) or (lambda x, n: x * n)
        static = (1,) if call.static else ()
        if call.jit == "shared" and call.function != "lambda":
            key = (call.function, call.static)
            jitted = wrappers.setdefault(key, jax.jit(function, static_argnums=static))
        else:
            jitted = jax.jit(function, static_argnums=static)
        x = call.x if call.device is None else jax.device_put(call.x, jax.devices()[call.device])
        if call.api == "call":
            jitted(x, call.n)
        elif call.api == "trace":
            jitted.trace(x, call.n)
        elif call.api == "lower":
            jitted.lower(x, call.n)
        else:
            jitted.lower(x, call.n).compile()


def _f32(size: int) -> np.ndarray:
    return np.ones(size, np.float32)  # NumPy: creating jnp arrays would compile eager ops


# The fixed calling patterns every run includes (the scenarios the task started with).
COMPILE_SCENARIOS = {
    "same shape twice": [Call(x=_f32(3)), Call(x=_f32(3) + 1)],
    "f32[3] then f32[4]": [Call(x=_f32(3)), Call(x=_f32(4))],
    "Python float 2.0 then np.float32(2.0)": [Call(x=2.0), Call(x=np.float32(2.0))],
    "Python int 3 then np.int32(3)": [Call(x=3), Call(x=np.int32(3))],
    "static argument 1, 1, 2": [Call(static=True, n=v) for v in (1, 1, 2)],
    "static argument 2, 2.0, True": [Call(static=True, n=v) for v in (2, 2.0, True)],
    "fori_loop bound 3 then 4, traced": [Call(function="count_up", n=v) for v in (3, 4)],
    "fori_loop bound 3 then 4, static": [
        Call(function="count_up", static=True, n=v) for v in (3, 4)
    ],
    "same shapes committed to 3 devices": [Call(device=d) for d in range(3)],
    "lower and compile twice by hand": [Call(api="compile"), Call(api="compile")],
    "lower only": [Call(api="lower")],
    "trace only": [Call(api="trace")],
    "a fresh lambda jitted on each of 3 calls": [Call(function="lambda")] * 3,
    "one function, jax.jit applied on each of 3 calls": [Call(jit="new")] * 3,
}


# ---- drawing fresh cases over the whole domain --------------------------------------------------


def _loop(rng: random.Random, kinds=LOOP_KINDS, depth: int = 0) -> Loop:
    kind = rng.choice(kinds)
    trips = rng.randint(1 if kind == "map" else 0, 5)
    unroll = rng.choice((1, 1, 2, 3, True)) if kind in ("fori", "scan") else 1
    body = tuple(_loop(rng, depth=depth - 1) for _ in range(rng.choice((0, 1, 1, 2)) * (depth > 0)))
    return Loop(kind, trips, unroll, rng.choice(STEPS), body if kind != "cumsum" else ())


def draw_loop_program(rng: random.Random) -> LoopProgram:
    """A program drawn over the whole domain (katas/phase7/strata.py draws one per situation)."""
    wrap = rng.choice(WRAPS)
    if wrap == "grad":
        kinds = ("fori", "scan", "map", "python_for", "cumsum")
        return LoopProgram(tuple(_loop(rng, kinds) for _ in range(rng.randint(1, 3))), wrap)
    return LoopProgram(tuple(_loop(rng, depth=2) for _ in range(rng.randint(1, 3))), wrap)


_ARRAYS = (
    ((3,), np.float32),
    ((4,), np.float32),
    ((3,), np.float16),
    ((3,), np.int32),
    ((2, 3), np.float32),
    ((3,), np.float64),
    ((6,), np.float32),  # the size of (2, 3)
    ((1, 3), np.float32),  # the size of (3,)
    ((), np.float32),  # 0-d: spelled apart from np.float32(2.0), typed alike
    ((), np.float64),
)
_SCALARS = (2.0, 3, True, np.float32(2.0), np.int32(3), np.float64(2.0))


def _x(rng: random.Random, arrays_only: bool = False):
    if arrays_only or rng.random() < 0.6:
        shape, dtype = rng.choice(_ARRAYS)
        return np.full(shape, rng.randint(1, 3), dtype)
    return rng.choice(_SCALARS)


def _call(rng: random.Random, **fixed) -> Call:
    function = fixed.pop("function", rng.choice(FUNCTIONS))
    static = fixed.pop("static", rng.random() < 0.4)
    device = fixed.pop("device", rng.choice((None, None, 0, 1, 2)))
    x = _x(rng, arrays_only=device is not None or function == "count_up")
    if function == "count_up":
        x = np.ones(3, rng.choice((np.float32, np.int32)))
        n = rng.randint(1, 3)
    else:
        n = rng.choice((1, 2, 2.0, True))
    settings = {"api": rng.choice(APIS), "jit": rng.choice(("shared", "new")), **fixed}
    return Call(function=function, static=static, x=x, n=n, device=device, **settings)


def draw_calls(rng: random.Random) -> list[Call]:
    """A calling pattern of 3 to 5 calls drawn over the whole domain (katas/phase7/strata.py
    draws one per respect of the cache key)."""
    return [_call(rng) for _ in range(rng.randint(3, 5))]
