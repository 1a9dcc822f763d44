"""Red-team wrong answers for phase 7, written from the contract only.

Round 4: every answer agrees with a correct one on the programs and patterns of programs.py and
predict_programs.py's banks, and goes wrong on a valid input they lack (named in `why`).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import jax
import jax.extend.core as jcore
import jax.numpy as jnp
import numpy as np
from jax._src import monitoring as _monitoring

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt4_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class _rt4_CompileCount:
    count: int = 0


# ---- shared helpers (not answers) -------------------------------------------------------------


def _rt4_dtype_of(shape_text: str) -> str:
    return re.match(r"\s*([a-z0-9]+)", shape_text).group(1)


def _rt4_cond_entry(comp, ins, lookup) -> tuple[str, int]:
    index = lookup(ins.operands[0])
    return _rt4_dtype_of(index.shape), len(ins.called_computations)


def _rt4_reachable(module, attrs=None) -> set[str]:
    """Names of the computations reachable from ENTRY (through `attrs` only, when given)."""
    seen: set[str] = set()
    todo = [module.entry.name]
    while todo:
        name = todo.pop()
        if name in seen or name not in module:
            continue
        seen.add(name)
        for ins in module[name]:
            if attrs is None:
                todo.extend(ins.called_computations)
                continue
            for key in attrs:
                value = ins.attribute(key)
                if value:
                    todo.extend(v.strip().lstrip("%") for v in value.strip("{}").split(","))
    return seen


def _rt4_is_jaxpr(value) -> bool:
    return isinstance(value, (jcore.Jaxpr, jcore.ClosedJaxpr))


def _rt4_open(jaxpr):
    return jaxpr.jaxpr if isinstance(jaxpr, jcore.ClosedJaxpr) else jaxpr


def _rt4_loops_walk(
    jaxpr, out, *, seen=None, holds=lambda v: isinstance(v, (tuple, list)), primitives=None
) -> list[str]:
    for eqn in _rt4_open(jaxpr).eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        if primitives is not None and eqn.primitive.name not in primitives:
            continue
        for value in eqn.params.values():
            inner = [value] if _rt4_is_jaxpr(value) else (list(value) if holds(value) else [])
            for sub in inner:
                if not _rt4_is_jaxpr(sub):
                    continue
                if seen is not None:
                    if id(_rt4_open(sub)) in seen:
                        continue
                    seen.add(id(_rt4_open(sub)))
                _rt4_loops_walk(sub, out, seen=seen, holds=holds, primitives=primitives)
    return out


def _rt4_scalar_aval(value):
    """(shape, dtype, weak) of a leaf as JAX would see it (default 32-bit types)."""
    if isinstance(value, jax.Array):
        return (tuple(value.shape), str(value.dtype), bool(value.aval.weak_type))
    if isinstance(value, (np.generic, np.ndarray)):
        return (value.shape, str(jax.dtypes.canonicalize_dtype(value.dtype)), False)
    if isinstance(value, bool):
        return ((), "bool", False)
    if isinstance(value, int):
        return ((), "int32", True)
    if isinstance(value, float):
        return ((), "float32", True)
    if isinstance(value, complex):
        return ((), "complex64", True)
    array = np.asarray(value)
    return (array.shape, str(jax.dtypes.canonicalize_dtype(array.dtype)), False)


class _rt4_Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _rt4_explain(f, first_args, second_args, keep):
    logger = logging.getLogger("jax")
    before = jax.config.jax_explain_cache_misses
    handler = _rt4_Collect()
    jitted = jax.jit(f)
    try:
        jax.config.update("jax_explain_cache_misses", True)
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
    return keep(handler.records)


def _rt4_is_miss(record) -> bool:
    return record.getMessage().startswith("TRACING CACHE MISS")


# ---- task 1: conditionals ---------------------------------------------------------------------


@wrong(
    "conditionals",
    why="'every computation ... as the text lists them': walks only computations reachable "
    "from ENTRY; wrong on a valid module holding a computation nothing calls (XLA's parser keeps "
    "it) with a conditional in it, e.g. SHARED_BRANCHES plus `spare { j = s32[] parameter(0) "
    "y = f32[4] parameter(1) ROOT c2 = f32[4] conditional(j, y, y), "
    "branch_computations={double, negate} }`: misses ('s32', 2)",
)
def _rt4_conditionals_reachable_only(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    live = _rt4_reachable(module)
    return [
        _rt4_cond_entry(comp, ins, comp.instruction)
        for comp in module
        if comp.name in live
        for ins in comp
        if ins.opcode == "conditional"
    ]


@wrong(
    "conditionals",
    why="'look in every computation': skips computations used as a while's condition= "
    "(believed to only compute a pred); wrong on a module whose while condition picks its "
    "predicate with a conditional, e.g. SIBLING_CALLS with %cond's ROOT computed by "
    "`conditional(%lt, %lt, %lt), true_computation=%keep, false_computation=%keep` (%keep "
    "returns its pred parameter): drops that ('pred', 2) entry",
)
def _rt4_conditionals_skip_conditions(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    conditions = {
        ins.attribute("condition", "").lstrip("%")
        for comp in module
        for ins in comp
        if ins.opcode == "while"
    }
    return [
        _rt4_cond_entry(comp, ins, comp.instruction)
        for comp in module
        if comp.name not in conditions
        for ins in comp
        if ins.opcode == "conditional"
    ]


@wrong(
    "conditionals",
    why="'the index ... look it up in the same computation': looks the index operand up in one "
    "module-wide name table (last definition wins); instruction names may repeat across "
    "computations (WHILE_IN_CONDITION repeats %zero, %one); wrong on SIBLING_CALLS with %second's "
    "index renamed %p (s32): %first's pred conditional reads ('s32', 2)",
)
def _rt4_conditionals_global_names(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    table = {ins.name: ins for comp in module for ins in comp}
    return [
        _rt4_cond_entry(comp, ins, table.get)
        for comp in module
        for ins in comp
        if ins.opcode == "conditional"
    ]


# ---- task 2: while_loops ----------------------------------------------------------------------


@wrong(
    "while_loops",
    why="counts `while` instructions, not loops per call site: walks from ENTRY and counts a "
    "computation's whiles once per instruction that calls it; wrong on a module whose ENTRY "
    "`call`s one computation holding a while twice (two calls, to_apply=%hoisted): 2 for 1 "
    "instruction (also misses computations nothing calls)",
)
def _rt4_while_loops_per_call_site(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)

    def count(name: str, depth: int = 0) -> int:
        if name not in module or depth > 64:
            return 0
        total = 0
        for ins in module[name]:
            total += ins.opcode == "while"
            total += sum(count(c, depth + 1) for c in ins.called_computations)
        return total

    return count(module.entry.name)


@wrong(
    "while_loops",
    why="'all its computations (... branches ...)': follows to_apply/body/condition/"
    "branch_computations/calls from ENTRY but not true_computation=/false_computation=, the "
    "form of a pred-indexed conditional (XLA's stablehlo.if); wrong on an ENTRY whose ROOT is "
    "`conditional(%pp, %x, %x), true_computation=%hoisted, false_computation=%other` with a "
    "while in %hoisted: 0 for 1",
)
def _rt4_while_loops_no_pred_branches(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    live = _rt4_reachable(module, ("to_apply", "body", "condition", "branch_computations", "calls"))
    return sum(ins.opcode == "while" for comp in module if comp.name in live for ins in comp)


@wrong(
    "while_loops",
    why="'how many instructions': counts distinct while names module-wide; names repeat across "
    "computations (WHILE_IN_CONDITION repeats %zero and %one); wrong on WHILE_IN_CONDITION with "
    "%spin renamed %left (a second while of that name in %outer_body): 2 for 3",
)
def _rt4_while_loops_distinct_names(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return len({ins.name for comp in module for ins in comp if ins.opcode == "while"})


# ---- task 3: loop_primitives ------------------------------------------------------------------


@wrong(
    "loop_primitives",
    why="'one entry per equation' in a depth-first walk: remembers jaxprs already walked (by id) "
    "and skips them; JAX's trace cache hands two calls of one jitted function the same jaxpr "
    "object; wrong on `lambda x, n: inner_jit(x) + inner_jit(x * 2)`: ['scan'] for "
    "['scan', 'scan']",
)
def _rt4_loop_primitives_memoized(jaxpr) -> list[str]:
    return _rt4_loops_walk(jaxpr, [], seen=set())


@wrong(
    "loop_primitives",
    why="'alone or in a tuple/list': accepts only exact tuple/list types, not a tuple subclass; "
    "custom_linear_solve keeps its jaxprs in a namedtuple (_LinearSolveTuple); wrong on "
    "lax.custom_linear_solve(matvec=fori_loop(0, 3, ...), b, solve=while_loop(...)): [] for "
    "['scan', 'while']",
)
def _rt4_loop_primitives_exact_tuple(jaxpr) -> list[str]:
    return _rt4_loops_walk(jaxpr, [], holds=lambda v: type(v) in (tuple, list))


_rt4_KNOWN_HOLDERS = {
    "scan",
    "while",
    "cond",
    "pjit",
    "jit",
    "closed_call",
    "core_call",
    "checkpoint",
    "remat",
    "remat2",
    "custom_jvp_call",
}


@wrong(
    "loop_primitives",
    why="'every jaxpr nested in equation params': looks inside the primitives the lesson lists "
    "(loops, cond, jit, checkpoint, custom_jvp) only; wrong on a jax.custom_vjp function whose "
    "primal runs fori_loop(0, 3, ...) (custom_vjp_call's call_jaxpr): [] for ['scan']",
)
def _rt4_loop_primitives_known_holders(jaxpr) -> list[str]:
    return _rt4_loops_walk(jaxpr, [], primitives=_rt4_KNOWN_HOLDERS)


# ---- task 4: count_traces ---------------------------------------------------------------------


def _rt4_counting(f, box):
    def counted(*args):
        box[0] += 1
        return f(*args)

    return counted


@wrong(
    "count_traces",
    why="'how many times JAX traced f': counts the tracing-cache-miss explanations logged "
    "during the calls, which JAX also logs for f's inner jitted functions; wrong on "
    "f = lambda x: g(x) + 1 with g = jax.jit(lambda v: v * 2) made fresh, calls "
    "[(np.ones(3, np.float32),)]: 2 for 1",
)
def _rt4_count_traces_miss_logs(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    handler = _rt4_Collect()
    logger = logging.getLogger("jax")
    before = jax.config.jax_explain_cache_misses
    jitted = jax.jit(lambda *a: f(*a), static_argnums=static_argnums)
    logger.addHandler(handler)
    try:
        jax.config.update("jax_explain_cache_misses", True)
        for args in calls:
            jitted(*args)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
        logger.removeHandler(handler)
    return sum(_rt4_is_miss(r) for r in handler.records)


@wrong(
    "count_traces",
    why="predicts traces from a hand-made cache key of flattened leaves (shape, dtype, weak "
    "type; static values by type and value) and forgets the pytree structure; wrong on "
    "f=lambda t: t[0] + t[1], calls [((x, x),), ([x, x],)] with x=np.ones(3, np.float32): 1 for 2",
)
def _rt4_count_traces_leaf_keys(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    keys = set()
    for args in calls:
        statics = {i % len(args) for i in static_argnums} if args else set()
        key = []
        for i, arg in enumerate(args):
            if i in statics:
                key.append(("static", type(arg), arg))
            else:
                key.extend(_rt4_scalar_aval(leaf) for leaf in jax.tree_util.tree_leaves(arg))
        keys.add(tuple(key))
        jax.jit(f, static_argnums=static_argnums)(*args)
    return len(keys)


@wrong(
    "count_traces",
    why="'not how many times XLA compiled': reads the jitted wrapper's _cache_size(), the "
    "dispatch cache that also keys on where arguments are committed; wrong on calls of one "
    "f32[3] array committed to devices 0, 1 and 2: 3 for 1",
)
def _rt4_count_traces_cache_size(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    jitted = jax.jit(lambda *a: f(*a), static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return int(jitted._cache_size())


# ---- task 5: compile_counter ------------------------------------------------------------------


def _rt4_listeners() -> list:
    getter = getattr(_monitoring, "get_event_duration_listeners", None)
    return list(getter() if getter else _monitoring._event_duration_secs_listeners)


_rt4_STACK: list[_rt4_CompileCount] = []


def _rt4_top_listener(event: str, duration: float, **_) -> None:
    if event == _rt4_BACKEND_COMPILE and _rt4_STACK:
        _rt4_STACK[-1].count += 1


@wrong(
    "compile_counter",
    why="'counters may nest and must not disturb each other': only the innermost open counter "
    "counts; wrong on `with compile_counter() as outer: with compile_counter() as inner: "
    "jax.jit(lambda v: v + 1)(np.ones(5))`: outer.count 0 for 1",
)
@contextlib.contextmanager
def _rt4_compile_counter_innermost() -> Iterator[_rt4_CompileCount]:
    counter = _rt4_CompileCount()
    if not _rt4_STACK:
        jax.monitoring.register_event_duration_secs_listener(_rt4_top_listener)
    _rt4_STACK.append(counter)
    try:
        yield counter
    finally:
        _rt4_STACK.remove(counter)
        if not _rt4_STACK:
            jax.monitoring.unregister_event_duration_listener(_rt4_top_listener)


_rt4_OPEN: list[_rt4_CompileCount] = []


def _rt4_all_listener(event: str, duration: float, **_) -> None:
    if event == _rt4_BACKEND_COMPILE:
        for counter in _rt4_OPEN:
            counter.count += 1


@wrong(
    "compile_counter",
    why="'counters may nest': one shared listener, unregistered by whichever counter exits "
    "first; wrong on `with compile_counter() as outer: (with compile_counter(): pass); "
    "jax.jit(lambda v: v * 3)(np.ones(6))`: outer.count 0 for 1",
)
@contextlib.contextmanager
def _rt4_compile_counter_shared_listener() -> Iterator[_rt4_CompileCount]:
    counter = _rt4_CompileCount()
    if _rt4_all_listener not in _rt4_listeners():
        jax.monitoring.register_event_duration_secs_listener(_rt4_all_listener)
    _rt4_OPEN.append(counter)
    try:
        yield counter
    finally:
        _rt4_OPEN.remove(counter)
        if _rt4_all_listener in _rt4_listeners():
            jax.monitoring.unregister_event_duration_listener(_rt4_all_listener)


@wrong(
    "compile_counter",
    why="'must not disturb anyone else's listeners; compiles after the block must not change "
    "it': removes the last registered duration listener on exit, assuming it is its own; wrong on "
    "a block that registers a listener of its own and keeps it: that one is removed, the "
    "counter's stays and counts compiles after the block",
)
@contextlib.contextmanager
def _rt4_compile_counter_pop_last() -> Iterator[_rt4_CompileCount]:
    counter = _rt4_CompileCount()

    def listener(event: str, duration: float, **_) -> None:
        if event == _rt4_BACKEND_COMPILE:
            counter.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counter
    finally:
        listeners = _rt4_listeners()
        if listeners:
            jax.monitoring.unregister_event_duration_listener(listeners[-1])


# ---- task 6: bucketed_mean --------------------------------------------------------------------


@jax.jit
def _rt4_masked_mean(padded, length):
    mask = jnp.arange(padded.shape[0]) < length
    return jnp.sum(jnp.where(mask, padded.astype(jnp.float32), 0.0)) / length


def _rt4_pad(x: np.ndarray, size: int, value=0.0) -> np.ndarray:
    out = np.full(size, value, dtype=x.dtype)
    out[: len(x)] = x
    return out


def _rt4_smallest(n: int, buckets) -> int:
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    return min(fits)


@wrong(
    "bucketed_mean",
    why="'for a 1-D float array (any float dtype)': passes the true length as an array of x's "
    "dtype; float16 cannot hold 70000 (inf); wrong on np.ones(70000, np.float16), buckets "
    "(131072,): 0.0 for 1.0",
)
def _rt4_bucketed_mean_length_in_x_dtype(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    x = np.asarray(x)
    size = _rt4_smallest(len(x), buckets)
    length = np.asarray(len(x), dtype=x.dtype)
    return float(_rt4_masked_mean(_rt4_pad(x, size), length))


@wrong(
    "bucketed_mean",
    why="'the smallest bucket >= len(x)': uses > (a bucket must leave room); wrong on a length "
    "equal to the largest bucket, e.g. np.ones(8, np.float32), buckets (4, 8): raises "
    "ValueError instead of returning 1.0",
)
def _rt4_bucketed_mean_strict_fit(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    x = np.asarray(x)
    fits = [b for b in buckets if b > len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} does not fit in buckets {buckets}")
    size = min(fits)
    return float(_rt4_masked_mean(_rt4_pad(x, size), np.int32(len(x))))


@jax.jit
def _rt4_nan_mean(padded):
    return jnp.nanmean(padded.astype(jnp.float32))


@wrong(
    "bucketed_mean",
    why="'mean(x)': masks by padding with NaN and taking nanmean, which also drops x's own NaNs; "
    "wrong on np.array([1.0, np.nan], np.float32), buckets (4,): 1.0 for nan",
)
def _rt4_bucketed_mean_nan_padding(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    x = np.asarray(x)
    size = _rt4_smallest(len(x), buckets)
    return float(_rt4_nan_mean(_rt4_pad(x, size, np.nan)))


# ---- task 7: explain_miss ---------------------------------------------------------------------


@wrong(
    "explain_miss",
    why="'one per miss': keeps only the first explanation, as if a call missed once; wrong on "
    "f calling a user jax.jit function g of its argument (f = lambda x: g(x) + 1), first "
    "(f32[3],), second (f32[4],): both f and g miss, 1 message for 2",
)
def _rt4_explain_miss_first_only(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    return _rt4_explain(
        f, first_args, second_args, lambda rs: [r.getMessage() for r in rs if _rt4_is_miss(r)][:1]
    )


@wrong(
    "explain_miss",
    why="'other log records, f's own included, are not explanations': keeps every WARNING the "
    "'jax' logger tree saw during the second call; wrong on f that calls "
    "logging.getLogger('jax').warning('f ran') while it traces, args f32[3] then f32[4]: 2 "
    "messages for 1",
)
def _rt4_explain_miss_all_warnings(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    return _rt4_explain(
        f,
        first_args,
        second_args,
        lambda rs: [r.getMessage() for r in rs if r.levelno >= logging.WARNING],
    )


@wrong(
    "explain_miss",
    why="'the messages (whole, as logged)': drops the first line ('TRACING CACHE MISS at "
    "file:line (caller):') as location noise and returns the explanation below it; wrong on "
    "any miss, e.g. jnp.sin on f32[3] then f32[4]",
)
def _rt4_explain_miss_without_location(
    f: Callable, first_args: tuple, second_args: tuple
) -> list[str]:
    return _rt4_explain(
        f,
        first_args,
        second_args,
        lambda rs: [r.getMessage().partition("\n")[2] for r in rs if _rt4_is_miss(r)],
    )


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt4_whiles(loop, *, remainder_bodies=True, inline_on_total=False, while_always=False) -> int:
    inner = sum(
        _rt4_whiles(
            b,
            remainder_bodies=remainder_bodies,
            inline_on_total=inline_on_total,
            while_always=while_always,
        )
        for b in loop.body
    )
    kind, trips = loop.kind, loop.trips
    if kind == "cumsum":
        return 0
    if kind == "python_for":
        return trips * inner
    if kind == "fori_traced":
        return 1 + inner
    if kind == "while":
        if while_always or trips >= 2:
            return 1 + inner
        return trips * inner
    if kind == "map":
        unroll = 1
    else:
        unroll = trips if loop.unroll is True else int(loop.unroll)
    if trips == 0:
        return 0
    unroll = max(1, min(unroll, trips))
    full, rest = divmod(trips, unroll)
    survives = (trips >= 2 and unroll < trips) if inline_on_total else full >= 2
    if not survives:
        return trips * inner
    return 1 + unroll * inner + (rest * inner if remainder_bodies else 0)


def _rt4_survives(loop) -> bool:
    if loop.kind not in ("fori", "scan", "map") or loop.trips == 0:
        return False
    unroll = 1 if loop.kind == "map" else (loop.trips if loop.unroll is True else int(loop.unroll))
    return loop.trips // max(1, unroll) >= 2


def _rt4_predict(program, chain_needs=True, **options) -> int:
    if program.wrap != "grad":
        return sum(_rt4_whiles(loop, **options) for loop in program.loops)
    loops = program.loops
    total = 0
    for k, loop in enumerate(loops):
        if not _rt4_survives(loop):
            continue
        later_tanh = any(
            later.step == "tanh" and later.kind != "cumsum" and later.trips > 0
            for later in loops[k + 1 :]
        )
        keep_forward = loop.step == "tanh" or (chain_needs and later_tanh)
        total += 1 + keep_forward
    return total


@wrong(
    "predict_while_loops",
    why="'every copy of a step carries the loops written inside it': forgets the loops in the "
    "trips % unroll steps unrolled after the loop; wrong on [fori(5, unroll=2, body "
    "[while(3)])]: 3 for 4 (compiled: 4)",
)
def _rt4_predict_while_loops_no_remainder_bodies(program) -> int:
    return _rt4_predict(program, remainder_bodies=False)


@wrong(
    "predict_while_loops",
    why="'a later tanh loop needs its input': decides each forward loop's survival under grad "
    "from its own step only; wrong on [fori(3, affine); fori(3, tanh)] under grad: 3 for 4 "
    "(compiled: 4)",
)
def _rt4_predict_while_loops_grad_alone(program) -> int:
    return _rt4_predict(program, chain_needs=False)


@wrong(
    "predict_while_loops",
    why="'a loop of 0 or 1 trip is inlined': decides survival from the step count (>= 2 and not "
    "fully unrolled) instead of the trip count length // unroll; wrong on [scan(4, unroll=3)]: "
    "1 for 0 (compiled: 0)",
)
def _rt4_predict_while_loops_inline_on_steps(program) -> int:
    return _rt4_predict(program, inline_on_total=True)


@wrong(
    "predict_while_loops",
    why="'a loop that runs at most once is replaced by its body': believes XLA cannot know a "
    "while_loop's trip count, so every while survives; wrong on [while(1); while(0)]: 2 for 0 "
    "(compiled: 0)",
)
def _rt4_predict_while_loops_while_always(program) -> int:
    return _rt4_predict(program, while_always=True)


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt4_x_key(x, *, f64_scalar_weak=False, bool_is_int=False):
    if isinstance(x, (np.generic, np.ndarray)) and not (f64_scalar_weak and isinstance(x, float)):
        return (x.shape, str(jax.dtypes.canonicalize_dtype(x.dtype)), False)
    if isinstance(x, bool):
        return ((), "int32", True) if bool_is_int else ((), "bool", False)
    if isinstance(x, int):
        return ((), "int32", True)
    if isinstance(x, float):
        return ((), "float32", True)
    array = np.asarray(x)
    return (array.shape, str(jax.dtypes.canonicalize_dtype(array.dtype)), False)


def _rt4_compiles(
    calls, *, f64_scalar_weak=False, bool_is_int=False, device_zero_default=False
) -> int:
    seen = set()
    count = 0
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        function = ("lambda", step) if call.function == "lambda" else call.function
        if call.static:
            n_key = ("static", type(call.n), call.n)
        else:
            n_key = ("traced",) + _rt4_x_key(call.n, bool_is_int=bool_is_int)
        device = call.device
        if device_zero_default and device is None:
            device = 0
        x_key = _rt4_x_key(call.x, f64_scalar_weak=f64_scalar_weak, bool_is_int=bool_is_int)
        key = (function, call.static, n_key, x_key, device)
        if key not in seen:
            seen.add(key)
            count += 1
    return count


@wrong(
    "predict_compiles",
    why="'a NumPy float64 scalar is a strong float32, not the weak one a Python float is': "
    "tests isinstance(x, float) before NumPy types, and np.float64 subclasses float, so "
    "np.float64(2.0) is taken for a weak 2.0; wrong on [call x=np.float32(2.0), call x=np.float64(2.0)]: "
    "2 for 1",
)
def _rt4_predict_compiles_f64_scalar_weak(calls) -> int:
    return _rt4_compiles(calls, f64_scalar_weak=True)


@wrong(
    "predict_compiles",
    why="cache keyed on dtype: a Python bool is a bool, not a weak int32 (isinstance(True, int) "
    "trap); wrong on [call scale x=3, call scale x=True] (or traced n=2 then n=True): 1 for 2",
)
def _rt4_predict_compiles_bool_as_int(calls) -> int:
    return _rt4_compiles(calls, bool_is_int=True)


@wrong(
    "predict_compiles",
    why="'the same array uncommitted, committed to device 0 and committed to device 1 are three "
    "compiles': takes uncommitted as device 0 (the default device); wrong on [call x=f32[3], "
    "call x=f32[3] committed to device 0]: 1 for 2",
)
def _rt4_predict_compiles_uncommitted_is_device0(calls) -> int:
    return _rt4_compiles(calls, device_zero_default=True)
