"""Red team, phase 7, round 14: wrong answers written from the contract only."""

from __future__ import annotations

import logging
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt14_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


# ---- task 1: conditionals --------------------------------------------------------------------


def _rt14_branch_list(ins) -> list:
    b = ins.attribute("branch_computations")
    if b is None:
        return [ins.attribute("true_computation"), ins.attribute("false_computation")]
    if isinstance(b, (list, tuple)):
        return list(b)
    return [s for s in str(b).strip("{}").split(",") if s.strip()]


@wrong(
    "conditionals",
    why="Clause 'the element type of its branch-index operand': infers the type from the "
    "branch count ('cond has two branches and a pred, switch has an s32 index') instead of "
    "reading the operand; wrong on the optimized HLO of lax.switch(i, [f, g], x) with i an "
    "int32 argument: ('s32', 2), answers ('pred', 2)",
)
def _rt14_conditionals_pred_iff_two(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                n = len(_rt14_branch_list(ins))
                out.append(("pred" if n == 2 else "s32", n))
    return out


# ---- task 2: while_loops ---------------------------------------------------------------------


@wrong(
    "while_loops",
    why="Clause 'computations nothing calls': stops at ENTRY ('XLA prints ENTRY last, after "
    "everything it calls'), so an uncalled computation listed after ENTRY is never read; wrong "
    "on a module whose ENTRY holds one while and an uncalled %dead computation printed after "
    "ENTRY holds another: 2, answers 1",
)
def _rt14_while_loops_stop_at_entry(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = 0
    for comp in module.computations:
        total += sum(1 for ins in comp.instructions if ins.opcode == "while")
        if getattr(comp, "is_entry", False):
            break
    return total


# ---- task 3: loop_primitives -----------------------------------------------------------------


def _rt14_subjaxprs(value):
    if hasattr(value, "eqns") or (hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns")):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt14_subjaxprs(v)


def _rt14_walk_outer(jaxpr, out: list[str]) -> None:
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and not hasattr(jaxpr, "eqns") else jaxpr
    for eqn in inner.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
            continue  # "a loop's body is part of the loop": never opened
        for value in eqn.params.values():
            for sub in _rt14_subjaxprs(value):
                _rt14_walk_outer(sub, out)


@wrong(
    "loop_primitives",
    why="Clause 'then the loops inside the jaxprs of its params': once an equation is a loop "
    "it is not opened ('the loop is counted, its body is part of it'), so loops nested in "
    "loop bodies go missing; wrong on make_jaxpr of fori_loop(0, n, lambda i, c: "
    "fori_loop(0, n, body, c), x): ['while', 'while'], answers ['while']",
)
def _rt14_loop_primitives_outer_loops_only(jaxpr) -> list[str]:
    out: list[str] = []
    _rt14_walk_outer(jaxpr, out)
    return out


# ---- task 6: bucketed_mean -------------------------------------------------------------------


@jax.jit
def _rt14_masked_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n.astype(jnp.int32)
    s = jnp.sum(jnp.where(mask, xp.astype(jnp.float32), 0.0))
    return s / n.astype(jnp.float32)


@wrong(
    "bucketed_mean",
    why="Clause 'any length a bucket holds': passes the true length as np.uint8 ('a small "
    "array for the length, buckets are small'), which wraps at 256, so only the first "
    "len % 256 values are averaged; wrong on x = np.arange(300, dtype=f32), buckets (512,): "
    "149.5, answers 21.5 (mean of the first 44)",
)
def _rt14_bucketed_mean_uint8_length(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    fits = sorted(b for b in buckets if b >= n)
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    b = fits[0]
    xp = np.zeros(b, dtype=np.float32)
    xp[:n] = x
    return float(_rt14_masked_mean(xp, np.asarray(n).astype(np.uint8)))


@jax.jit
def _rt14_sum_over_n(xp, n):
    # padding is zeros, so no mask needed: the sum of the padding is 0
    return jnp.sum(xp) / n


@wrong(
    "bucketed_mean",
    why="Clause 'mask the padding': skips the mask ('the padding is zeros, adding zeros "
    "changes nothing') and pads with np.pad in x's own dtype and sums there ('any float "
    "dtype': keep it); a float16 x sums in float16 and overflows where NumPy's mean "
    "accumulates in float32; wrong on "
    "x = np.full(1000, 100, np.float16), buckets (1024,): 100.0, answers inf",
)
def _rt14_bucketed_mean_unmasked_native(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    b = min(fits)
    xp = np.pad(np.asarray(x), (0, b - n))
    return float(_rt14_sum_over_n(xp, np.asarray(n, dtype=xp.dtype)))


# ---- task 8: predict_while_loops -------------------------------------------------------------


def _rt14_unroll(loop) -> int:
    if loop.unroll is True:
        return max(1, loop.trips)
    return max(1, int(loop.unroll))


def _rt14_count(loops, *, cse=False) -> int:
    total = 0
    for loop in loops:
        inner = _rt14_count(loop.body, cse=cse)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += (1 if (cse and trips) else trips) * inner
        elif kind in ("fori", "scan"):
            if trips == 0:
                continue
            u = min(_rt14_unroll(loop), trips)
            full, rest = divmod(trips, u)
            copies = u + rest
            if cse:
                copies = 1  # "identical copies of a loop are CSE'd into one"
            if full >= 2:
                total += 1 + copies * inner
            else:
                total += (1 if cse else trips) * inner
        elif kind == "fori_traced":
            total += 1 + inner
        elif kind in ("while", "map"):
            if trips >= 2:
                total += 1 + inner
            else:
                total += (1 if (cse and trips) else trips) * inner
    return total


def _rt14_survives(loop) -> bool:
    if loop.kind in ("fori", "scan"):
        u = min(_rt14_unroll(loop), max(loop.trips, 1))
        return loop.trips > 0 and loop.trips // u >= 2
    if loop.kind == "map":
        return loop.trips >= 2
    return False


def _rt14_grad(loops) -> int:
    total = 0
    for k, loop in enumerate(loops):
        if not _rt14_survives(loop):
            continue
        later_tanh = any(l.step == "tanh" and l.kind != "cumsum" for l in loops[k + 1 :])
        total += 1 + (1 if (loop.step == "tanh" or later_tanh) else 0)
    return total


@wrong(
    "predict_while_loops",
    why="Unrolling or a Python for copies the step, and every copy holds its own while; this "
    "assumes XLA CSEs identical while loops into one ('same body, same operands shape, same "
    "loop'), so the copies of an inner loop count once; wrong on [python_for trips=3 "
    "body=[fori_traced trips=4]] wrap none: 3 whiles, answers 1",
)
def _rt14_predict_while_loops_cse_copies(program) -> int:
    if program.wrap == "grad":
        return _rt14_grad(program.loops)
    return _rt14_count(program.loops, cse=True)


# ---- task 9: predict_compiles ----------------------------------------------------------------


def _rt14_aval(v, *, ignore_weak=False):
    if isinstance(v, np.ndarray):
        dt = {"float64": "float32", "int64": "int32", "complex128": "complex64"}.get(
            str(v.dtype), str(v.dtype)
        )
        return ("arr", dt, v.shape, False)
    if isinstance(v, np.generic):
        dt = {"float64": "float32", "int64": "int32"}.get(str(v.dtype), str(v.dtype))
        return ("arr", dt, (), False)
    if isinstance(v, bool):
        return ("py", "bool", (), False)
    if isinstance(v, int):
        return ("arr", "int32", (), True) if ignore_weak else ("py", "int32", (), True)
    if isinstance(v, float):
        return ("arr", "float32", (), False) if ignore_weak else ("py", "float32", (), True)
    return ("py", type(v).__name__, (), False)


def _rt14_compiles(calls, **kw) -> int:
    seen = set()
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        if call.static:
            n = ("static", type(call.n), call.n)
        else:
            n = _rt14_aval(call.n, **kw)
        seen.add((fn, call.static, _rt14_aval(call.x, **kw), n, call.device))
    return len(seen)


@wrong(
    "predict_compiles",
    why="The cache key holds weak_type: a Python float x is a weak f32[], np.float32(1.0) a "
    "strong one, two avals and two compiles; this keys only dtype and shape ('2.0 becomes an "
    "f32 scalar either way'); wrong on [call scale x=1.0, call scale x=np.float32(1.0)] same "
    "n: 2 compiles, answers 1",
)
def _rt14_predict_compiles_weak_type_ignored(calls) -> int:
    return _rt14_compiles(calls, ignore_weak=True)


@wrong(
    "predict_compiles",
    why="Only a call runs a program, so only a call compiles ('lower().compile() builds an "
    "object you may never run'); wrong on [compile scale x=f32[8]]: 1 compile, answers 0",
)
def _rt14_predict_compiles_calls_only(calls) -> int:
    return _rt14_compiles([c for c in calls if c.api == "call"])


# ---- task 4: count_traces --------------------------------------------------------------------


@wrong(
    "count_traces",
    why="Clause 'how many times JAX traced f': jits f itself and counts the "
    "/jax/core/compile/jaxpr_trace_duration events ('the trace event, not the compile one'); "
    "JAX's trace cache is keyed on f, not on the jit wrapper, so calls already traced by an "
    "earlier jax.jit(f) are not traced again; wrong on count_traces(f, (1,), calls) run a "
    "second time with the same f(x, k)=x*k and calls [(f32[3], 2), (f32[3], 3), (f32[4], 2)]: "
    "3, answers 0",
)
def _rt14_count_traces_trace_events(f: Callable, static_argnums: tuple[int, ...], calls) -> int:
    seen = [0]

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/jaxpr_trace_duration":
            seen[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        jitted = jax.jit(f, static_argnums=static_argnums)
        for args in calls:
            jax.block_until_ready(jitted(*args))
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return seen[0]


# ---- task 7: explain_miss --------------------------------------------------------------------


class _rt14_Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@wrong(
    "explain_miss",
    why="Clause 'jitted functions f calls can miss too while f traces, each miss its own "
    "message': keeps only the misses whose message says 'for <f.__name__> defined' ('the "
    "misses of jax.jit(f)'), dropping those of inner jits; wrong on g = jax.jit(lambda y: y*3), "
    "f(x) = g(x)+1, first (f32[3],), second (f32[4],): 2 messages (f and <lambda>), answers 1",
)
def _rt14_explain_miss_only_named_f(f: Callable, first_args: tuple, second_args: tuple):
    jitted = jax.jit(f)
    logger = logging.getLogger("jax")
    handler = _rt14_Collect()
    old = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", old)
    name = getattr(f, "__name__", "")
    return [
        m
        for m in handler.messages
        if m.startswith("TRACING CACHE MISS") and f"for {name} defined" in m
    ]
