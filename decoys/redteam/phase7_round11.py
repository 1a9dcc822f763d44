"""Red-team round 11 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import monitoring as _monitoring

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt11_branches(ins) -> int:
    if ins.attribute("branch_computations") is not None:
        return len(ins.called_computations)
    return 2


def _rt11_all_conditionals(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                out.append((index.shape_info.dtype, _rt11_branches(ins)))
    return out


# ---- task 1: conditionals ---------------------------------------------------------------------


@wrong(
    "conditionals",
    why="'one entry per instruction ... instruction by instruction inside each': takes the "
    "first conditional of each computation (next(...), 'a computation branches once'); wrong "
    "on PROGRAMS['two_conds_and_switch'] optimized: its ENTRY holds three conditionals "
    "(two conds, one 4-way switch), answers only the first of them",
)
def _rt11_conditionals_first_per_computation(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        ins = next((i for i in comp.instructions if i.opcode == "conditional"), None)
        if ins is not None:
            index = comp.instruction(ins.operands[0])
            out.append((index.shape_info.dtype, _rt11_branches(ins)))
    return out


@wrong(
    "conditionals",
    why="'list them in module order': sorts the (dtype, branches) pairs to get a stable, "
    "canonical answer, losing module order; wrong on SIBLING_CALLS: module order is "
    "[('pred',2), ('s32',3), ('s32',2)], answers [('pred',2), ('s32',2), ('s32',3)]",
)
def _rt11_conditionals_sorted(hlo_text: str) -> list[tuple[str, int]]:
    return sorted(_rt11_all_conditionals(hlo_text))


# ---- task 3: loop_primitives ------------------------------------------------------------------


@wrong(
    "loop_primitives",
    why="'names ... of the loop primitives ... one entry per equation, depth first': reads them "
    "off the printed jaxpr with a regex for `scan[` / `while[`; the printer lists params "
    "alphabetically (body_jaxpr before cond_jaxpr) and prints a jaxpr shared by two jit "
    "equations once (`let`); wrong on JAXPR_PROGRAMS['loop_in_while_cond']: expects "
    "['while','scan','while'], answers ['while','while','scan']",
)
def _rt11_loop_primitives_from_text(jaxpr) -> list[str]:
    return re.findall(r"\b(scan|while)\[", str(jaxpr))


# ---- task 4: count_traces ---------------------------------------------------------------------


@wrong(
    "count_traces",
    why="'how many times JAX traced f' on the calls as given: normalizes every non-static "
    "argument with np.asarray first ('feed jit arrays'), which turns a weak Python 2.0 into a "
    "strong array and a list into an array, so keys that differed now collide; wrong on "
    "f = programs.scaler(t), static_argnums=(), calls [(ones(3,f32), 2.0), (ones(3,f32), "
    "np.float32(2.0))]: 2 traces (weak vs strong), answers 1",
)
def _rt11_count_traces_asarray_args(f: Callable, static_argnums: tuple[int, ...], calls) -> int:
    count = [0]

    def counted(*args):
        count[0] += 1
        return f(*args)

    jitted = jax.jit(counted, static_argnums=static_argnums)
    for args in calls:
        args = tuple(a if i in static_argnums else np.asarray(a) for i, a in enumerate(args))
        jitted(*args)
    return count[0]


# ---- task 6: bucketed_mean --------------------------------------------------------------------


@jax.jit
def _rt11_mul_masked_mean(xp, mask, n):
    return jnp.sum(xp * mask) / n


@wrong(
    "bucketed_mean",
    why="'NaN and infinities in x count as in NumPy's mean ... mask the padding': pads with "
    "np.resize (which fills by repeating x) and masks by multiplying with a 0/1 mask; a "
    "repeated inf times 0 is NaN; wrong on x = [1.0, inf] (f32), buckets (4,): NumPy's mean is "
    "inf, answers nan",
)
def _rt11_bucketed_mean_resize_times_mask(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    x = np.asarray(x)
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    b = min(fits)
    xp = np.resize(x, b) if len(x) else np.zeros(b, x.dtype)
    mask = (np.arange(b) < len(x)).astype(np.float32)  # built on the host, a bucket-shaped input
    return float(_rt11_mul_masked_mean(xp.astype(np.float32), mask, np.float32(len(x))))


# ---- task 7: explain_miss ---------------------------------------------------------------------


class _RT11Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@wrong(
    "explain_miss",
    why="'one per miss ... jitted functions f calls can miss too': drops the 'never seen "
    "function' explanations, taking them for first-call noise (only key changes count as "
    "misses); wrong on f(x) = jax.jit(lambda v: v * 2)(x) + 1 (a new lambda every trace), "
    "first f32[3], second f32[4]: two messages (f's key change and the lambda never seen), "
    "answers only f's",
)
def _rt11_explain_miss_drop_never_seen(
    f: Callable, first_args: tuple, second_args: tuple
) -> list[str]:
    handler = _RT11Collect()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    jitted = jax.jit(f)
    try:
        with jax.explain_cache_misses(True):
            jitted(*first_args)
            handler.records.clear()
            jitted(*second_args)
    finally:
        logger.removeHandler(handler)
    msgs = [r.getMessage() for r in handler.records]
    return [
        m for m in msgs if m.startswith("TRACING CACHE MISS") and "never seen function" not in m
    ]


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt11_unroll(loop) -> int:
    return loop.trips if loop.unroll is True else int(loop.unroll)


def _rt11_count(loops, map_is_loop: bool = True) -> int:
    total = 0
    for loop in loops:
        inner = _rt11_count(loop.body, map_is_loop)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "map" and not map_is_loop:
            # the learner's mistake: lax.map vectorizes like vmap, the body runs once batched
            total += inner
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan", "map"):
            if trips == 0:
                continue
            u = max(1, min(_rt11_unroll(loop), trips)) if kind != "map" else 1
            full, rest = divmod(trips, u)
            total += (1 + u * inner) if full >= 2 else full * u * inner
            total += rest * inner
        elif kind == "fori_traced":
            total += 1 + inner
        elif kind == "while":
            total += (1 + inner) if trips >= 2 else trips * inner
    return total


@wrong(
    "predict_while_loops",
    why="'what the loop primitives become': takes lax.map for a vectorizing map (like vmap: "
    "one batched body, no loop) instead of a scan over its rows, so a map leaves no while; "
    "wrong on [map trips=4] wrap none: one while, answers 0",
)
def _rt11_predict_while_loops_map_vectorizes(program) -> int:
    return _rt11_count(program.loops, map_is_loop=False)


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt11_canon(dt) -> str:
    dt = np.dtype(dt)
    return {
        "float64": "float32",
        "int64": "int32",
        "uint64": "uint32",
        "complex128": "complex64",
    }.get(dt.name, dt.name)


def _rt11_aval(v, by_value: bool = False):
    if isinstance(v, np.ndarray):
        return (_rt11_canon(v.dtype), v.shape, False)
    if isinstance(v, np.generic):
        return (_rt11_canon(v.dtype), (), False)
    if isinstance(v, bool):
        return ("bool", (), False) + ((v,) if by_value else ())
    if isinstance(v, int):
        return ("int32", (), True) + ((v,) if by_value else ())
    if isinstance(v, float):
        return ("float32", (), True) + ((v,) if by_value else ())
    return (type(v).__name__, (), False)


def _rt11_keys(calls, by_value: bool = False):
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        n = ("static", type(call.n), call.n) if call.static else _rt11_aval(call.n)
        yield (fn, call.static, _rt11_aval(call.x, by_value), n, call.device)


@wrong(
    "predict_compiles",
    why="'what a cache is keyed on': models the cache as holding only the most recent program "
    "('jit recompiles when the arguments change'), so returning to an earlier key compiles "
    "again; wrong on [call scale x=f32[4] n=2, call scale x=f32[8] n=2, call scale x=f32[4] "
    "n=2] (n traced): 2 compiles, answers 3",
)
def _rt11_predict_compiles_cache_of_one(calls) -> int:
    count, last = 0, {}
    for key in _rt11_keys(calls):
        if last.get(key[0]) != key:
            count += 1
            last[key[0]] = key
    return count


@wrong(
    "predict_compiles",
    why="'the trace cache keys on each argument's shape, dtype and weak type': believes a "
    "Python scalar x is baked into the program as a constant (like a static value), so each "
    "new Python value compiles; wrong on [call scale x=2.0 n=2, call scale x=3.0 n=2] (same "
    "wrapper, n traced): 1 compile (weak f32[] both times), answers 2",
)
def _rt11_predict_compiles_python_scalar_by_value(calls) -> int:
    return len(set(_rt11_keys(calls, by_value=True)))


# ---- task 2: while_loops ----------------------------------------------------------------------


@wrong(
    "while_loops",
    why="'how many instructions with opcode while ... (optimized or not)': skips a while whose "
    "result no instruction reads and that is not ROOT, applying the README's 'a loop whose "
    "results nothing reads is dead code' to the text; wrong on WHILE_IN_CONDITION with its "
    "ENTRY replaced by one that runs `%spin = s32[] while(%i), condition=%dec_cond, "
    "body=%dec_body` and returns add(%i, %i): three while instructions, answers 2",
)
def _rt11_while_loops_skip_unread(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    total = 0
    for comp in module.computations:
        used = {op for ins in comp.instructions for op in ins.operands}
        root = comp.instructions[-1].name if comp.instructions else None
        for ins in comp.instructions:
            if ins.opcode == "while" and (ins.name in used or ins.name == root):
                total += 1
    return total


# ---- task 5: compile_counter ------------------------------------------------------------------


class _RT11Count:
    def __init__(self):
        self.count = 0


@wrong(
    "compile_counter",
    why="'counts XLA backend compiles inside the block ... only while the block runs': counts "
    "only the compiles of the thread that opened the block (a thread-id filter meant to keep "
    "other counters' work out); wrong on: with compile_counter() as c: a threading.Thread "
    "runs jax.jit(lambda v: v + 1)(ones(3)) and is joined: 1 compile, answers 0",
)
@contextlib.contextmanager
def _rt11_compile_counter_this_thread_only() -> Iterator[_RT11Count]:
    c = _RT11Count()
    owner = threading.get_ident()

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration" and (
            threading.get_ident() == owner
        ):
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        _monitoring.unregister_event_duration_listener(listener)
