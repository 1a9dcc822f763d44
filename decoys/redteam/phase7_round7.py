"""Red-team round 7 wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_RT7_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class _rt7_CompileCount:
    count: int = 0


def _rt7_branches(ins) -> int:
    if ins.attribute("branch_computations") is not None:
        return len(ins.called_computations)
    return 2


# ---- task 1: conditionals ---------------------------------------------------------------------


@wrong(
    "conditionals",
    why="order is module order (computations as the text lists them); this walks the call graph "
    "depth first from ENTRY (pre-order: a conditional before those in its branches), then "
    "appends computations nothing reached; wrong on optimized switch_in_cond: the text lists "
    "the branch holding the 3-way switch before ENTRY, so the answer is [('s32',3),('s32',2)], "
    "this gives [('s32',2),('s32',3)]",
)
def _rt7_conditionals_call_graph_order(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in module:
            return
        order.append(name)
        for ins in module[name].instructions:
            for callee in ins.called_computations:
                visit(callee)

    visit(module.entry.name)
    for comp in module.computations:
        if comp.name not in order:
            order.append(comp.name)
    out = []
    for name in order:
        comp = module[name]
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                out.append((index.shape_info.dtype, _rt7_branches(ins)))
    return out


# ---- task 2: while_loops ----------------------------------------------------------------------


@wrong(
    "while_loops",
    why="counts instructions with opcode while, each once; this counts distinct loop bodies "
    "(`body=` computations), assuming every loop has a body of its own; wrong on "
    "WHILE_IN_CONDITION, whose two inner whiles share %dec_cond/%dec_body: answers 2, not 3",
)
def _rt7_while_loops_distinct_bodies(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    bodies = set()
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "while":
                bodies.add(tuple(ins.called_computations))
    return len(bodies)


# ---- task 3: loop_primitives ------------------------------------------------------------------


def _rt7_closed_in(value):
    if type(value).__name__ == "ClosedJaxpr":
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _rt7_closed_in(v)


def _rt7_walk_closed(jaxpr, out):
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in _rt7_closed_in(value):
                _rt7_walk_closed(sub, out)


@wrong(
    "loop_primitives",
    why="nested jaxprs may be open (checkpoint's `jaxpr`, and on jax 0.12 a while's "
    "cond_jaxpr/body_jaxpr are open Jaxprs); this recurses only into ClosedJaxpr params; wrong "
    "on inside_checkpoint (['scan'] expected, answers []) and nested_then_sequential "
    "(['while', 'scan', 'while'] expected, answers ['while', 'while'])",
)
def _rt7_loop_primitives_closed_only(jaxpr) -> list[str]:
    out: list[str] = []
    top = jaxpr.jaxpr if hasattr(jaxpr, "consts") else jaxpr
    _rt7_walk_closed(top, out)
    return out


# ---- task 4: count_traces ---------------------------------------------------------------------


@wrong(
    "count_traces",
    why="jit's cache keys on the function object; this wraps f in a counting closure defined "
    "inside the loop, a new function per call, so every call traces and it returns len(calls) "
    "instead of the traces of one jax.jit(f); wrong on power with static n, calls "
    "[(x, 2), (x, 2), (x, 3)]: 2 traces, answers 3",
)
def _rt7_count_traces_wrapper_per_call(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    box = [0]
    for args in calls:

        def counted(*a):
            box[0] += 1
            return f(*a)

        jax.block_until_ready(jax.jit(counted, static_argnums=static_argnums)(*args))
    return box[0]


# ---- task 5: compile_counter ------------------------------------------------------------------


@wrong(
    "compile_counter",
    why="a block that raises must still raise (the counter only stops counting); this "
    "catches the block's exception to make sure it unregisters, and swallows it: `with "
    "compile_counter(): raise ValueError` completes silently",
)
@contextlib.contextmanager
def _rt7_compile_counter_swallows() -> Iterator[_rt7_CompileCount]:
    counter = _rt7_CompileCount()

    def listener(event: str, duration: float, **_: object) -> None:
        if event == _RT7_BACKEND_COMPILE:
            counter.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counter
    except Exception:
        pass
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


# ---- task 6: bucketed_mean --------------------------------------------------------------------


def _rt7_pick(n: int, buckets) -> int:
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    return min(fits)


@wrong(
    "bucketed_mean",
    why="must compile once per bucket; this pads and masks correctly but builds `jax.jit(lambda "
    "...)` inside the function, a new function object each call, so every call compiles; "
    "wrong on lengths 3, 5, 7 with buckets (8,): 3 compiles, not 1",
)
def _rt7_bucketed_mean_jit_per_call(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    size = _rt7_pick(len(x), buckets)
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    mean = jax.jit(lambda p, n: jnp.where(jnp.arange(p.shape[0]) < n, p, 0.0).sum() / n)
    return float(mean(padded, np.int32(len(x))))


@jax.jit
def _rt7_nonzero_mean(padded):
    mask = padded != 0
    return jnp.where(mask, padded, 0.0).sum() / mask.sum()


@wrong(
    "bucketed_mean",
    why="mask the padding, i.e. positions >= len(x); this masks by value (zero means padding), "
    "dropping real zeros of x; wrong on x=[0., 2.] with buckets (4,): mean 1.0, answers 2.0",
)
def _rt7_bucketed_mean_mask_zeros(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    size = _rt7_pick(len(x), buckets)
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return float(_rt7_nonzero_mean(padded))


# ---- task 7: explain_miss ---------------------------------------------------------------------


class _rt7_Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@wrong(
    "explain_miss",
    why="one message per miss, whole as logged (several lines long); this splits each "
    "explanation into its lines and returns them flat; wrong on f=sin, first (f32[3],), "
    "second (f32[4],): one multi-line message expected, returns several strings",
)
def _rt7_explain_miss_lines(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    before = jax.config.jax_explain_cache_misses
    logger = logging.getLogger("jax")
    handler = _rt7_Collect()
    jitted = jax.jit(f)
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
    out = []
    for r in handler.records:
        msg = r.getMessage()
        if "cache miss" in msg.lower() or "never seen" in msg:
            out.extend(line for line in msg.splitlines() if line.strip())
    return out


@wrong(
    "explain_miss",
    why="one message per miss, and jitted functions f calls miss too while f traces, each with "
    "its own message; this keeps only the first explanation the second call logs (one call, "
    "one miss); wrong on f(x) = g(x) + 1 with g = jax.jit(jnp.sin), first (f32[3],), second "
    "(f32[4],): two messages (f and g), returns one",
)
def _rt7_explain_miss_one_per_call(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    before = jax.config.jax_explain_cache_misses
    logger = logging.getLogger("jax")
    handler = _rt7_Collect()
    jitted = jax.jit(f)
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
    msgs = [r.getMessage() for r in handler.records if "cache miss" in r.getMessage().lower()]
    return msgs[:1]


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt7_unroll(loop) -> int:
    return loop.trips if loop.unroll is True else int(loop.unroll)


def _rt7_count(loops) -> int:
    total = 0
    for loop in loops:
        inner = _rt7_count(loop.body)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan"):
            u = max(1, min(_rt7_unroll(loop), trips)) if trips else 1
            full = trips // u if trips else 0
            rest = trips % u if trips else 0
            if full >= 2:
                total += 1 + (u + rest) * inner
            else:
                total += trips * inner
        elif kind == "fori_traced":
            total += 1 + inner
        elif kind in ("while", "map"):
            if trips >= 2:
                total += 1 + inner
            else:
                total += trips * inner
    return total


def _rt7_survives(loop) -> bool:
    if loop.kind in ("fori", "scan"):
        u = _rt7_unroll(loop)
        return loop.trips > 0 and loop.trips // max(1, min(u, loop.trips)) >= 2
    if loop.kind == "map":
        return loop.trips >= 2
    return False


def _rt7_grad(loops) -> int:
    total = 0
    for k, loop in enumerate(loops):
        if not _rt7_survives(loop):
            continue
        later_tanh = any(l.step == "tanh" and l.kind != "cumsum" for l in loops[k + 1 :])
        total += 1 + (1 if (loop.step == "tanh" or later_tanh) else 0)
    return total


@wrong(
    "predict_while_loops",
    why="under wrap='cond' the loops run in one branch of one conditional, so the program holds "
    "them once; this assumes lax.cond traces (and keeps) the loops in both branches and "
    "doubles them; wrong on [fori(5)] with wrap='cond': 1 while, answers 2",
)
def _rt7_predict_while_loops_cond_doubles(program) -> int:
    if program.wrap == "grad":
        return _rt7_grad(program.loops)
    n = _rt7_count(program.loops)
    return 2 * n if program.wrap == "cond" else n


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt7_aval(v):
    if isinstance(v, np.ndarray):
        dt = {
            "float64": "float32",
            "int64": "int32",
            "uint64": "uint32",
            "complex128": "complex64",
        }.get(str(v.dtype), str(v.dtype))
        return (dt, v.shape, False)
    if isinstance(v, np.generic):
        dt = {"float64": "float32", "int64": "int32"}.get(str(v.dtype), str(v.dtype))
        return (dt, (), False)
    if isinstance(v, bool):
        return ("bool", (), False)
    if isinstance(v, (int, float)):
        # bug: a weak Python scalar adapts to its use, so its type "does not matter"
        return ("weak", (), True)
    return (type(v).__name__, (), False)


@wrong(
    "predict_compiles",
    why="the cache keys on each argument's dtype and weak type: a Python 2 is a weak int32, a "
    "Python 2.0 a weak float32, two keys; this keys every Python number as one 'weak scalar' "
    "type; wrong on [call scale x=2, call scale x=2.0] (or n traced 2 then 2.0): 2 compiles, "
    "answers 1",
)
def _rt7_predict_compiles_weak_scalars_one_type(calls) -> int:
    seen = set()
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        n = ("static", type(call.n), call.n) if call.static else _rt7_aval(call.n)
        seen.add((fn, call.static, _rt7_aval(call.x), n, call.device))
    return len(seen)


# ---- more: conditionals, bucketed_mean --------------------------------------------------------


@wrong(
    "conditionals",
    why="the element type of the branch-index operand itself; this follows the index through "
    "`convert` to the value it was converted from (to report what the user wrote: a cond's "
    "bool), so lax.cond reads as pred; wrong on the unoptimized HLO of PROGRAMS['cond'] "
    "(`jax.jit(cond).lower(x).as_text(dialect='hlo')`): the index is s32 "
    "`convert(pred)`, answer [('s32', 2)], this gives [('pred', 2)]",
)
def _rt7_conditionals_through_convert(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                while index.opcode == "convert":
                    index = comp.instruction(index.operands[0])
                out.append((index.shape_info.dtype, _rt7_branches(ins)))
    return out


@jax.jit
def _rt7_masked_mean(padded, n):
    keep = jnp.arange(padded.shape[0]) < n
    return jnp.where(keep, padded, 0.0).sum() / n


@wrong(
    "bucketed_mean",
    why="must return mean(x) as a Python float; this returns the jitted program's 0-d "
    "jax.Array as it comes (numerically right, but not a float: isinstance(r, float) is False, "
    "type(r) is an ArrayImpl); wrong on x=[1., 2., 3.] with buckets (4, 8)",
)
def _rt7_bucketed_mean_returns_array(x: np.ndarray, buckets: tuple[int, ...]):
    size = _rt7_pick(len(x), buckets)
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return _rt7_masked_mean(padded, np.int32(len(x)))


@wrong(
    "while_loops",
    why="count instructions by opcode; this scans the text with a regex for `= SHAPE while(` "
    "where SHAPE has no spaces, so a while whose shape is a tuple `(s32[], f32[8]{0})` (a "
    "fori_loop/scan: counter plus carry) is missed, while a while_loop over one f32[8] carry "
    "matches; wrong on the optimized HLO of PROGRAMS['fori_loop'] (1 while, answers 0), "
    "PROGRAMS['two_loops'] (2, answers 1) and WHILE_IN_CONDITION (3, answers 2)",
)
def _rt7_while_loops_regex_shape(hlo_text: str) -> int:
    import re

    return len(re.findall(r"=\s*[^\s(]+\s+while\(", hlo_text))
