"""Red-team wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from katas.phase7.kata import BACKEND_COMPILE, CompileCount
from xla_inspect.parse import parse_hlo

# ---- task 1: conditionals ---------------------------------------------------------------------


def _rt6_branches(ins) -> int:
    if ins.attribute("branch_computations") is not None:
        return len(ins.called_computations)
    return 2


@wrong(
    "conditionals",
    why="names are per computation, but this looks the index up in one module-wide name table "
    "(the last computation defining a name wins); wrong on a module where %k is the pred index "
    "of a conditional in one computation and a later computation also defines an s32 %k",
)
def _rt6_conditionals_global_names(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    table = {}
    for comp in module.computations:
        for ins in comp.instructions:
            table[ins.name] = ins
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = table[ins.operands[0]]
                out.append((index.shape_info.dtype, _rt6_branches(ins)))
    return out


def _rt6_reachable(module) -> set[str]:
    seen: set[str] = set()
    todo = [module.entry.name]
    while todo:
        name = todo.pop()
        if name in seen or name not in module:
            continue
        seen.add(name)
        for ins in module[name].instructions:
            todo.extend(ins.called_computations)
    return seen


@wrong(
    "conditionals",
    why="must look in computations nothing calls too, but this walks only computations reachable "
    "from ENTRY (kept in text order); wrong on SHARED_BRANCHES plus an uncalled computation "
    "`dead` holding its own conditional (XLA's parser keeps it): misses that entry",
)
def _rt6_conditionals_reachable_only(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    live = _rt6_reachable(module)
    out = []
    for comp in module.computations:
        if comp.name not in live:
            continue
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                index = comp.instruction(ins.operands[0])
                out.append((index.shape_info.dtype, _rt6_branches(ins)))
    return out


@wrong(
    "conditionals",
    why="one entry per instruction, duplicates included, and names repeat across computations; "
    "this skips a conditional whose name was already seen; wrong on a module whose two "
    "computations each hold `%c = conditional(...)` (hand-written HLO): lists one instead of two",
)
def _rt6_conditionals_dedupe_names(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    seen: set[str] = set()
    out = []
    for comp in module.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional" and ins.name not in seen:
                seen.add(ins.name)
                index = comp.instruction(ins.operands[0])
                out.append((index.shape_info.dtype, _rt6_branches(ins)))
    return out


# ---- task 2: while_loops ----------------------------------------------------------------------


@wrong(
    "while_loops",
    why="must count computations nothing calls too; this counts only computations reachable "
    "from ENTRY; wrong on WHILE_IN_CONDITION plus an uncalled computation holding a while "
    "(answers 3, not 4)",
)
def _rt6_while_loops_reachable_only(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    live = _rt6_reachable(module)
    return sum(
        1
        for comp in module.computations
        if comp.name in live
        for ins in comp.instructions
        if ins.opcode == "while"
    )


@wrong(
    "while_loops",
    why="names may repeat across computations; this counts distinct instruction names; wrong "
    "on a hand-written module where two computations each hold `%loop = ... while(...)` "
    "(answers 1, not 2)",
)
def _rt6_while_loops_distinct_names(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    return len(
        {
            ins.name
            for comp in module.computations
            for ins in comp.instructions
            if ins.opcode == "while"
        }
    )


@wrong(
    "while_loops",
    why="each instruction counts once however many call sites reach its computation; this "
    "walks calls from ENTRY counting per visit; wrong on a module where ENTRY calls one "
    "computation holding a while twice (two `call`s to_apply=%same): answers 2, not 1",
)
def _rt6_while_loops_per_call_site(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)

    def walk(name: str, depth: int = 0) -> int:
        if name not in module or depth > 50:
            return 0
        total = 0
        for ins in module[name].instructions:
            if ins.opcode == "while":
                total += 1
            for called in ins.called_computations:
                total += walk(called, depth + 1)
        return total

    reached = _rt6_reachable(module)
    extra = sum(
        1
        for comp in module.computations
        if comp.name not in reached
        for ins in comp.instructions
        if ins.opcode == "while"
    )
    return walk(module.entry.name) + extra


# ---- task 3: loop_primitives ------------------------------------------------------------------

_rt6_LOOPS = ("scan", "while")


def _rt6_jaxprs_in(value, namedtuples: bool = True):
    from jax.extend import core as jcore

    if isinstance(value, jcore.ClosedJaxpr):
        return [value.jaxpr]
    if isinstance(value, jcore.Jaxpr):
        return [value]
    if namedtuples and isinstance(value, (tuple, list)):
        return [j for v in value for j in _rt6_jaxprs_in(v)]
    if not namedtuples and type(value) in (tuple, list):
        return [j for v in value for j in _rt6_jaxprs_in(v, False)]
    return []


def _rt6_open(jaxpr):
    from jax.extend import core as jcore

    return jaxpr.jaxpr if isinstance(jaxpr, jcore.ClosedJaxpr) else jaxpr


@wrong(
    "loop_primitives",
    why="jaxprs nested in namedtuples count (custom_linear_solve's `jaxprs`); this recurses "
    "only into plain tuple/list; wrong on lax.custom_linear_solve whose solve runs a "
    "while_loop: answers [] instead of ['while']",
)
def _rt6_loop_primitives_no_namedtuple(jaxpr) -> list[str]:
    out: list[str] = []

    def walk(j):
        for eqn in _rt6_open(j).eqns:
            if eqn.primitive.name in _rt6_LOOPS:
                out.append(eqn.primitive.name)
            for v in eqn.params.values():
                for sub in _rt6_jaxprs_in(v, namedtuples=False):
                    walk(sub)

    walk(jaxpr)
    return out


@wrong(
    "loop_primitives",
    why="a jaxpr that two equations hold counts for each; this visits each jaxpr object once; "
    "wrong on lambda x, n: inner_jit(x) + inner_jit(x) (programs.inner_jit): answers "
    "['scan'] instead of ['scan', 'scan']",
)
def _rt6_loop_primitives_visit_once(jaxpr) -> list[str]:
    out: list[str] = []
    seen: set[int] = set()

    def walk(j):
        for eqn in _rt6_open(j).eqns:
            if eqn.primitive.name in _rt6_LOOPS:
                out.append(eqn.primitive.name)
            for v in eqn.params.values():
                for sub in _rt6_jaxprs_in(v):
                    if id(sub) in seen:
                        continue
                    seen.add(id(sub))
                    walk(sub)

    walk(jaxpr)
    return out


@wrong(
    "loop_primitives",
    why="params are walked in the order they list them (cond's `branches` are false, true); "
    "this visits the true branch first as lax.cond(p, true_fn, false_fn) is written; wrong on "
    "lax.cond(x > 0, lambda v: fori(v, n), lambda v: fori(v, 3), x): answers "
    "['while', 'scan'] instead of ['scan', 'while']",
)
def _rt6_loop_primitives_true_branch_first(jaxpr) -> list[str]:
    out: list[str] = []

    def walk(j):
        for eqn in _rt6_open(j).eqns:
            if eqn.primitive.name in _rt6_LOOPS:
                out.append(eqn.primitive.name)
            for key, v in eqn.params.items():
                subs = _rt6_jaxprs_in(v)
                if key == "branches":
                    subs = subs[::-1]
                for sub in subs:
                    walk(sub)

    walk(jaxpr)
    return out


# ---- task 4: count_traces ---------------------------------------------------------------------


def _rt6_static_key(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


@wrong(
    "count_traces",
    why="the trace cache keys on weak type too; this keys on canonical shape and dtype only; "
    "wrong on f=scale with calls [(2.0, 3), (np.float32(2.0), 3)]: JAX traces twice, "
    "answers 1",
)
def _rt6_count_traces_no_weak_type(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    keys = set()
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
        key = []
        for i, a in enumerate(args):
            if i in static_argnums:
                key.append(("static", type(a), _rt6_static_key(a)))
            else:
                dt = jax.dtypes.canonicalize_dtype(np.result_type(a))
                key.append((np.shape(a), str(dt)))
        keys.add(tuple(key))
    return len(keys)


@wrong(
    "count_traces",
    why="traces, not compiles or cached executables: this counts growth of the jitted "
    "function's C++ dispatch cache; wrong on the same f32[3] array committed to devices "
    "0, 1, 2 (one trace, three cache entries): answers 3",
)
def _rt6_count_traces_cache_size(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    jitted = jax.jit(lambda *a: f(*a), static_argnums=static_argnums)
    count = 0
    size = jitted._cache_size()
    for args in calls:
        jitted(*args)
        now = jitted._cache_size()
        if now > size:
            count += now - size
        size = now
    return count


@wrong(
    "count_traces",
    why="JAX runs with 32-bit defaults, so a float64 array traces as float32; this keys on the "
    "NumPy dtype as given; wrong on scale with [(f32[3] array, 2), (f64[3] array, 2)]: one "
    "trace, answers 2",
)
def _rt6_count_traces_raw_dtype(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    keys = set()
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
        key = []
        for i, a in enumerate(args):
            if i in static_argnums:
                key.append(("static", type(a), _rt6_static_key(a)))
            else:
                weak = type(a) in (int, float, complex)
                key.append((np.shape(a), str(np.asarray(a).dtype), weak))
        keys.add(tuple(key))
    return len(keys)


# ---- task 5: compile_counter ------------------------------------------------------------------

_rt6_ACTIVE: list[CompileCount] = []
_rt6_HOOKED: list[bool] = []


def _rt6_innermost(event: str, duration: float, **_: object) -> None:
    if event == BACKEND_COMPILE and _rt6_ACTIVE:
        _rt6_ACTIVE[-1].count += 1


@wrong(
    "compile_counter",
    why="counters may nest and must not disturb each other; one shared listener credits only "
    "the innermost open counter; wrong on `with compile_counter() as a: with compile_counter() "
    "as b: jit(f)(x)`: a.count stays 0, should be 1",
)
@contextlib.contextmanager
def _rt6_compile_counter_innermost() -> Iterator[CompileCount]:
    if not _rt6_HOOKED:
        jax.monitoring.register_event_duration_secs_listener(_rt6_innermost)
        _rt6_HOOKED.append(True)
    counter = CompileCount()
    _rt6_ACTIVE.append(counter)
    try:
        yield counter
    finally:
        _rt6_ACTIVE.remove(counter)


@wrong(
    "compile_counter",
    why="remove only your listener; this unregisters by popping the LAST registered duration "
    "listener; wrong when someone registers a listener inside the block: theirs is removed, "
    "ours stays and compiles after the block still change c.count",
)
@contextlib.contextmanager
def _rt6_compile_counter_pop_last() -> Iterator[CompileCount]:
    from jax._src import monitoring

    counter = CompileCount()

    def listen(event: str, duration: float, **_: object) -> None:
        if event == BACKEND_COMPILE:
            counter.count += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield counter
    finally:
        monitoring._event_duration_secs_listeners.pop()


@wrong(
    "compile_counter",
    why="c.count must be up to date at any point inside the block; this tallies events in a "
    "list and writes c.count only on exit; wrong on `with compile_counter() as c: jit(f)(x); "
    "assert c.count == 1` (0 inside the block)",
)
@contextlib.contextmanager
def _rt6_compile_counter_on_exit() -> Iterator[CompileCount]:
    counter = CompileCount()
    seen: list[str] = []

    def listen(event: str, duration: float, **_: object) -> None:
        if event == BACKEND_COMPILE:
            seen.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
        counter.count = len(seen)


# ---- task 6: bucketed_mean --------------------------------------------------------------------


def _rt6_bucket(n: int, buckets: tuple[int, ...], strict: bool = False) -> int:
    fits = [b for b in buckets if (b > n if strict else b >= n)]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    return min(fits)


@jax.jit
def _rt6_masked_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    total = jnp.sum(jnp.where(mask, xp.astype(jnp.float32), 0.0))
    return total / n


@jax.jit
def _rt6_nan_mean(xp):
    return jnp.nanmean(xp.astype(jnp.float32))


@wrong(
    "bucketed_mean",
    why="NaN in x counts as in NumPy's mean (result NaN); this pads with NaN and takes "
    "nanmean, so NaN in x is dropped too; wrong on x=[1.0, nan, 3.0] f32, buckets (4,): "
    "answers 2.0, not nan",
)
def _rt6_bucketed_mean_nan_pad(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    size = _rt6_bucket(len(x), buckets)
    padded = np.full(size, np.nan, np.float32)
    padded[: len(x)] = x
    return float(_rt6_nan_mean(padded))


@jax.jit
def _rt6_native_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    total = jnp.sum(jnp.where(mask, xp, jnp.zeros((), xp.dtype)))
    return total / n.astype(xp.dtype)


@wrong(
    "bucketed_mean",
    why="any float dtype, as NumPy's mean (which accumulates float16 in float32); this sums in "
    "x's own dtype; wrong on float16 x=[60000, 60000, 60000], buckets (4,): the float16 sum "
    "overflows to inf, NumPy gives 60000.0",
)
def _rt6_bucketed_mean_native_dtype(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    size = _rt6_bucket(len(x), buckets)
    padded = np.zeros(size, x.dtype)
    padded[: len(x)] = x
    return float(_rt6_native_mean(padded, np.int32(len(x))))


@wrong(
    "bucketed_mean",
    why="pad to the smallest bucket >= len(x); this picks the smallest bucket > len(x); wrong "
    "on len(x) equal to the largest bucket, e.g. x f32[8], buckets (4, 8): raises ValueError "
    "instead of returning the mean",
)
def _rt6_bucketed_mean_strict(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    size = _rt6_bucket(len(x), buckets, strict=True)
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return float(_rt6_masked_mean(padded, np.int32(len(x))))


# ---- task 7: explain_miss ---------------------------------------------------------------------


class _rt6_Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _rt6_explain(f, first_args, second_args, keep, restore=True):
    logger = logging.getLogger("jax")
    before = jax.config.jax_explain_cache_misses
    jitted = jax.jit(f)
    handler = _rt6_Collect()
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", before if restore else False)
    return keep(handler.records)


@wrong(
    "explain_miss",
    why="other log records, f's own included, are not explanations; this returns every WARNING "
    "record of the 'jax' logger during the second call; wrong on an f that does "
    "logging.getLogger('jax.user').warning('tracing') in its body, called on f32[3] then "
    "f32[4]: two messages instead of one",
)
def _rt6_explain_miss_all_warnings(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    return _rt6_explain(
        f,
        first_args,
        second_args,
        lambda rs: [r.getMessage() for r in rs if r.levelno >= logging.WARNING],
    )


@wrong(
    "explain_miss",
    why="one message per miss, and jitted functions f calls miss too while f traces; this keeps "
    "only the first explanation; wrong on f calling a jitted g on its argument, called on "
    "f32[3] then f32[4]: returns one message instead of two",
)
def _rt6_explain_miss_first_only(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    return _rt6_explain(
        f,
        first_args,
        second_args,
        lambda rs: [r.getMessage() for r in rs if "TRACING CACHE MISS" in r.getMessage()][:1],
    )


@wrong(
    "explain_miss",
    why="leave jax_explain_cache_misses as you found it; this turns it off at the end; wrong "
    "when the setting was already True before the call (it is False afterwards)",
)
def _rt6_explain_miss_turns_off(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    return _rt6_explain(
        f,
        first_args,
        second_args,
        lambda rs: [r.getMessage() for r in rs if "TRACING CACHE MISS" in r.getMessage()],
        restore=False,
    )


# ---- task 8: predict_while_loops --------------------------------------------------------------


def _rt6_unroll(loop) -> int:
    return loop.trips if loop.unroll is True else int(loop.unroll)


def _rt6_count(loops, *, remainder=True, trips_inline_all=False) -> int:
    total = 0
    for loop in loops:
        inner = _rt6_count(loop.body, remainder=remainder, trips_inline_all=trips_inline_all)
        kind, trips = loop.kind, loop.trips
        if kind == "cumsum":
            continue
        if kind == "python_for":
            total += trips * inner
        elif kind in ("fori", "scan"):
            u = max(1, min(_rt6_unroll(loop), trips)) if trips else 1
            full = trips // u if trips else 0
            rest = trips % u if trips else 0
            if full >= 2:
                total += 1 + (u + (rest if remainder else 0)) * inner
            else:
                total += trips * inner
        elif kind == "fori_traced":
            if trips_inline_all and trips <= 1:
                total += trips * inner
            else:
                total += 1 + inner
        elif kind in ("while", "map"):
            if trips >= 2:
                total += 1 + inner
            else:
                total += trips * inner
    return total


def _rt6_survives(loop) -> bool:
    if loop.kind in ("fori", "scan"):
        u = _rt6_unroll(loop)
        return loop.trips > 0 and loop.trips // max(1, min(u, loop.trips)) >= 2
    if loop.kind == "map":
        return loop.trips >= 2
    return False


def _rt6_grad(loops, own_step_only=False) -> int:
    total = 0
    for k, loop in enumerate(loops):
        if not _rt6_survives(loop):
            continue
        later_tanh = any(
            later.step == "tanh" and later.kind != "cumsum" for later in loops[k + 1 :]
        )
        forward = loop.step == "tanh" or (later_tanh and not own_step_only)
        total += 1 + (1 if forward else 0)
    return total


def _rt6_predict(program, **kw) -> int:
    if program.wrap == "grad":
        return _rt6_grad(program.loops, kw.get("own_step_only", False))
    kw.pop("own_step_only", None)
    return _rt6_count(program.loops, **kw)


@wrong(
    "predict_while_loops",
    why="scan with unroll=u keeps the length % u remaining steps unrolled after the loop, each "
    "carrying its nested loops; this forgets them; wrong on [fori(5, unroll=2, body "
    "[fori_traced(3)])]: 4 whiles (1 + 3 copies), answers 3",
)
def _rt6_predict_while_loops_no_remainder(program) -> int:
    return _rt6_predict(program, remainder=False)


@wrong(
    "predict_while_loops",
    why="only a loop whose trip count XLA knows can be inlined: fori_traced's bound n is traced; "
    "this applies the 0-or-1-trip rule to it using `trips`; wrong on [fori_traced(1)]: one "
    "while survives, answers 0",
)
def _rt6_predict_while_loops_inline_traced(program) -> int:
    return _rt6_predict(program, trips_inline_all=True)


@wrong(
    "predict_while_loops",
    why="under grad a forward loop also survives when a later tanh loop needs its output as "
    "input; this keeps a forward loop only for its own tanh step; wrong on "
    "[fori(5, affine); fori(5, tanh)] under grad: 4 whiles, answers 3",
)
def _rt6_predict_while_loops_grad_own_step(program) -> int:
    return _rt6_predict(program, own_step_only=True)


# ---- task 9: predict_compiles -----------------------------------------------------------------


def _rt6_aval(v, *, f64_weak=False, bool_as_int=False, raw_f64=False):
    if isinstance(v, np.ndarray):
        dt = str(v.dtype)
        if not raw_f64:
            dt = {
                "float64": "float32",
                "int64": "int32",
                "uint64": "uint32",
                "complex128": "complex64",
            }.get(dt, dt)
        return (dt, v.shape, False)
    if isinstance(v, np.generic):
        dt = {"float64": "float32", "int64": "int32"}.get(str(v.dtype), str(v.dtype))
        weak = f64_weak and isinstance(v, np.float64)
        return (dt, (), weak)
    if isinstance(v, bool):
        return ("int32", (), True) if bool_as_int else ("bool", (), False)
    if isinstance(v, int):
        return ("int32", (), True)
    if isinstance(v, float):
        return ("float32", (), True)
    return (type(v).__name__, (), False)


def _rt6_compiles(
    calls, *, f64_weak=False, none_is_zero=False, bool_as_int=False, raw_f64=False
) -> int:
    seen = set()
    count = 0
    for step, call in enumerate(calls):
        if call.api not in ("call", "compile"):
            continue
        fn = ("lambda", step) if call.function == "lambda" else call.function
        x = _rt6_aval(call.x, f64_weak=f64_weak, bool_as_int=bool_as_int, raw_f64=raw_f64)
        if call.static:
            n = ("static", type(call.n), call.n)
        else:
            n = _rt6_aval(call.n, bool_as_int=bool_as_int)
        device = call.device
        if none_is_zero and device is None:
            device = 0
        key = (fn, call.static, x, n, device)
        if key not in seen:
            seen.add(key)
            count += 1
    return count


@wrong(
    "predict_compiles",
    why="a NumPy float64 scalar is a strong float32, not the weak type a Python float is; this "
    "treats it as weak; wrong on [call scale x=2.0, call scale x=np.float64(2.0)]: 2 "
    "compiles, answers 1",
)
def _rt6_predict_compiles_f64_scalar_weak(calls) -> int:
    return _rt6_compiles(calls, f64_weak=True)


@wrong(
    "predict_compiles",
    why="uncommitted and committed to device 0 are different keys; this treats an uncommitted "
    "x as device 0; wrong on [call scale x=f32[3], call scale x=f32[3] committed to device 0]: "
    "2 compiles, answers 1",
)
def _rt6_predict_compiles_uncommitted_is_device0(calls) -> int:
    return _rt6_compiles(calls, none_is_zero=True)


@wrong(
    "predict_compiles",
    why="a traced Python bool n is a bool, not a weak int like 2; this gives bools the int "
    "type; wrong on [call scale n=2 traced, call scale n=True traced] (same x): 2 compiles, "
    "answers 1",
)
def _rt6_predict_compiles_bool_is_int(calls) -> int:
    return _rt6_compiles(calls, bool_as_int=True)


@wrong(
    "predict_compiles",
    why="with 32-bit defaults a float64 array arrives as float32; this keys on float64; wrong "
    "on [call scale x=f32[3], call scale x=f64[3]]: 1 compile, answers 2",
)
def _rt6_predict_compiles_f64_array_distinct(calls) -> int:
    return _rt6_compiles(calls, raw_f64=True)
