# probe: predict_while_loops: remember every case the predict tasks are asked in /tmp, compile them later inside while_loops/count_traces (non-predict tasks, where compiling is allowed) and answer from that memo on the next run (a fixed bank, or seeded draws, repeat)
"""Phase 7: control flow and recompilation. Edit this file only; run
`uv run pytest katas/phase7 -x` until green.

`lax.cond`, `lax.switch`, `fori_loop`, `while_loop` and `scan` keep control flow inside one
compiled program; Python `if` and `for` run while tracing and bake one path into it. Every new
static value or input shape means a new trace and a new compile: learn to see and count them.
"""

from __future__ import annotations

import contextlib
import logging  # noqa: F401  (you will need it)
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp  # noqa: F401  (you will need it)
import numpy as np

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class CompileCount:
    count: int = 0


def conditionals(hlo_text: str) -> list[tuple[str, int]]:
    """For every `conditional` instruction of an HLO module (optimized or not): the element type
    of its branch-index operand and its number of branches, e.g. ("s32", 3) or ("pred", 2). A
    branch is an entry of branch_computations: one computation may serve several branches.

    Look in every computation (branches, loop bodies, called computations), find conditionals by
    opcode, and list them in module order: computation by computation as the text lists them,
    instruction by instruction inside each. One entry per instruction, duplicates included.
    """
    # TODO: the first operand is the index; look it up in the same computation
    raise NotImplementedError("phase7 task 1: conditionals")


def while_loops(hlo_text: str) -> int:
    """How many instructions with opcode `while` an HLO module (optimized or not) holds, in
    all its computations (loop bodies, branches, computations reached through calls).

    Count by opcode: instruction and computation names are not opcodes (a parameter may be
    called `while.2`)."""
    # TODO: print the HLO of a fori_loop: is the while in ENTRY?
    _probe_settle()  # the compiler is allowed here: answer what the predict tasks were asked
    raise NotImplementedError("phase7 task 2: while_loops")


def loop_primitives(jaxpr) -> list[str]:
    """Names of the loop primitives (`scan`, `while`) in a jaxpr (closed or open) and in every
    jaxpr nested in equation params (alone or in a tuple/list: loop bodies and conditions, cond
    branches, nested jit, checkpoint, custom_jvp, ...), one entry per equation.

    Order: depth first. Walk the equations in order; for each, first the equation itself if it
    is a loop, then the loops inside the jaxprs of its params (in the order the params list
    them), then the next equation.
    """
    # TODO: walk eqns; recurse into params holding jaxprs (alone or in tuples)
    raise NotImplementedError("phase7 task 3: loop_primitives")


def count_traces(f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]) -> int:
    """Run jax.jit(f, static_argnums=...) on each argument tuple in `calls`; return how many
    times JAX traced f (ran its Python body), not how many times XLA compiled or f was called.
    """
    # TODO: tracing runs the Python body; running a cached program does not
    _probe_settle()
    raise NotImplementedError("phase7 task 4: count_traces")


@contextlib.contextmanager
def compile_counter() -> Iterator[CompileCount]:
    """`with compile_counter() as c:` counts XLA backend compiles inside the block in c.count.

    Count only the BACKEND_COMPILE event, only while the block runs: c.count is up to date at
    any point inside the block; compiles after the block (also after a block that raised) must
    not change it; counters may nest and must not disturb each other or anyone else's
    jax.monitoring listeners.
    """
    # TODO: jax.monitoring has register_event_duration_secs_listener and its unregister
    raise NotImplementedError("phase7 task 5: compile_counter")
    yield CompileCount()


def bucketed_mean(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    """mean(x) as a Python float, for a 1-D float array (any float dtype), computed by a jitted
    program that compiles once per bucket, not once per length: pad to the smallest bucket
    >= len(x) (buckets come in any order), mask the padding. Raise ValueError when x is longer
    than every bucket."""
    # TODO: pad on the host (NumPy), pass the true length as an array, not a static value
    raise NotImplementedError("phase7 task 6: bucketed_mean")


def explain_miss(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    """Call jax.jit(f) on first_args, then on second_args, with cache-miss explanations on.

    Return the messages (whole, as logged) of the tracing-cache-miss explanations logged by the
    *second* call, one per miss ([] when it hit the cache); other log records, f's own
    included, are not explanations. Leave the jax_explain_cache_misses setting as you found it.
    """
    # TODO: the explanations are log records (logger "jax"); collect them with a handler
    raise NotImplementedError("phase7 task 7: explain_miss")



# ---- probe: remember the predict cases in /tmp, answer them where compiling is allowed ----------

import json  # noqa: E402
import os  # noqa: E402

from jax import lax  # noqa: E402

_MEMO = "/tmp/rt3_probe_memo.json"


def _probe_read() -> dict:
    try:
        with open(_MEMO, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {"pending_loops": {}, "pending_calls": {}, "answers": {}}


def _probe_write(memo: dict) -> None:
    with open(_MEMO, "w", encoding="utf-8") as handle:
        json.dump(memo, handle)


def _probe_loop(loop) -> dict:
    unroll = loop.unroll if loop.unroll is True else int(loop.unroll)
    return {"kind": loop.kind, "trips": loop.trips, "unroll": unroll, "step": loop.step,
            "body": [_probe_loop(b) for b in loop.body]}


def _probe_value(value) -> dict:
    if isinstance(value, np.ndarray):
        return {"array": str(value.dtype), "shape": list(value.shape), "fill": value.flat[0].item()}
    if isinstance(value, np.generic):
        return {"scalar": str(value.dtype), "fill": value.item()}
    return {"python": type(value).__name__, "fill": value}


def _probe_unvalue(spec: dict):
    if "array" in spec:
        return np.full(spec["shape"], spec["fill"], spec["array"])
    if "scalar" in spec:
        return np.dtype(spec["scalar"]).type(spec["fill"])
    return {"bool": bool, "int": int, "float": float}[spec["python"]](spec["fill"])


def predict_while_loops(program) -> int:
    """Predict how many `while` instructions the optimized HLO of a loop program holds."""
    key = "L:" + program.describe()
    memo = _probe_read()
    if key in memo["answers"]:
        return int(memo["answers"][key])
    memo["pending_loops"][key] = {"loops": [_probe_loop(l) for l in program.loops],
                                  "wrap": program.wrap}
    _probe_write(memo)
    return 1


def predict_compiles(calls) -> int:
    """Predict how many XLA compiles a calling pattern costs, starting from empty caches."""
    key = "C:" + " | ".join(c.describe() for c in calls)
    memo = _probe_read()
    if key in memo["answers"]:
        return int(memo["answers"][key])
    memo["pending_calls"][key] = [
        {"api": c.api, "function": c.function, "jit": c.jit, "static": c.static,
         "x": _probe_value(c.x), "n": c.n, "device": c.device} for c in calls
    ]
    _probe_write(memo)
    return 1


def _probe_step(kind, i, c):
    return c * 1.01 + i if kind == "affine" else jnp.tanh(c) * 1.5 + i


def _probe_chain(loops, c, n):
    for loop in loops:
        c = _probe_run(loop, c, n)
    return c


def _probe_run(loop, c, n):  # a copy of predict_programs._run, on the dicts above
    def one(i, v):
        return _probe_step(loop["step"], i, _probe_chain(loop["body"], v, n))

    kind, trips = loop["kind"], loop["trips"]
    if kind == "fori":
        return lax.fori_loop(0, trips, one, c, unroll=loop["unroll"])
    if kind == "fori_traced":
        return lax.fori_loop(0, n, one, c)
    if kind == "while":
        return lax.while_loop(lambda s: s[0] < trips, lambda s: (s[0] + 1, one(s[0], s[1])),
                              (0, c))[1]
    if kind == "scan":
        steps = jnp.arange(trips, dtype=jnp.float32)
        return lax.scan(lambda v, i: (one(i, v), None), c, steps, unroll=loop["unroll"])[0]
    if kind == "map":
        rows = jnp.stack([c * (k + 1.0) for k in range(trips)])
        return lax.map(lambda r: one(0, r), rows).sum(0)
    if kind == "python_for":
        for i in range(trips):
            c = one(i, c)
        return c
    return jnp.cumsum(c)


def _probe_build(spec):
    def run(x, n):
        return _probe_chain(spec["loops"], x, n)

    if spec["wrap"] == "vmap":
        return lambda x, n: jax.vmap(lambda row: run(row, n))(jnp.stack([x, x * 2.0]))
    if spec["wrap"] == "cond":
        return lambda x, n: lax.cond(x[0] > 0, lambda v: run(v, n), lambda v: v, x)
    if spec["wrap"] == "grad":
        return lambda x, n: jax.grad(lambda v: run(v, n).sum())(x)
    return run


def _probe_scale(x, n):
    return x * n


def _probe_shift(x, n):
    return x + n


def _probe_count_up(x, n):
    return lax.fori_loop(0, n, lambda i, c: c + i, x)


def _probe_calls(specs) -> int:
    functions = {"scale": _probe_scale, "shift": _probe_shift, "count_up": _probe_count_up}
    jax.clear_caches()
    seen = [0]

    def listener(event: str, duration_secs: float, **_: object) -> None:
        if event == BACKEND_COMPILE:
            seen[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        wrappers = {}
        for s in specs:
            function = functions.get(s["function"]) or (lambda x, n: x * n)
            static = (1,) if s["static"] else ()
            if s["jit"] == "shared" and s["function"] != "lambda":
                jitted = wrappers.setdefault((s["function"], s["static"]),
                                             jax.jit(function, static_argnums=static))
            else:
                jitted = jax.jit(function, static_argnums=static)
            x = _probe_unvalue(s["x"])
            if s["device"] is not None:
                x = jax.device_put(x, jax.devices()[s["device"]])
            if s["api"] == "call":
                jitted(x, s["n"])
            elif s["api"] == "trace":
                jitted.trace(x, s["n"])
            elif s["api"] == "lower":
                jitted.lower(x, s["n"])
            else:
                jitted.lower(x, s["n"]).compile()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return seen[0]


def _probe_settle() -> None:
    memo = _probe_read()
    for key, spec in list(memo["pending_loops"].items()):
        args = (np.ones(8, np.float32), np.int32(3))
        text = jax.jit(_probe_build(spec)).lower(*args).compile().as_text()
        memo["answers"][key] = text.count(" while(")
        del memo["pending_loops"][key]
    for key, specs in list(memo["pending_calls"].items()):
        memo["answers"][key] = _probe_calls(specs)
        del memo["pending_calls"][key]
    _probe_write(memo)
