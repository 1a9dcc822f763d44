"""Red-team wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import logging
import re

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt5_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


try:  # the contract's own dataclass, so only the counting is wrong
    from katas.phase7.kata import CompileCount
except Exception:  # pragma: no cover

    class CompileCount:
        def __init__(self, count: int = 0):
            self.count = count


# ---------------------------------------------------------------- helpers (not answers)


def _rt5_n_branches(ins) -> int:
    bc = ins.attribute("branch_computations")
    if bc is not None:
        return len(re.findall(r"[\w.\-]+", bc.strip("{}")))
    return 2


def _rt5_dtype(shape: str) -> str:
    return re.match(r"\s*\(?\s*([a-z0-9]+)", shape).group(1)


# ---------------------------------------------------------------- conditionals


@wrong(
    "conditionals",
    why="index operand looked up in one module-wide name table (last wins); "
    "names are per computation: wrong when a conditional in a called computation (listed "
    "before ENTRY) takes `p = s32[] parameter(0)` as index and ENTRY also has `p = pred[]`",
)
def _rt5_conditionals_global_names(hlo_text: str) -> list[tuple[str, int]]:
    m = parse_hlo(hlo_text)
    table = {}
    for comp in m.computations:
        for ins in comp.instructions:
            table[ins.name] = ins
    out = []
    for comp in m.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                out.append((_rt5_dtype(table[ins.operands[0]].shape), _rt5_n_branches(ins)))
    return out


@wrong(
    "conditionals",
    why="one entry per instruction NAME (dict keyed by name), not per "
    "instruction; wrong on a module whose two computations each hold a conditional named "
    "`conditional` (e.g. two called computations, each with its own `conditional.1`)",
)
def _rt5_conditionals_dedupe_names(hlo_text: str) -> list[tuple[str, int]]:
    m = parse_hlo(hlo_text)
    seen = {}
    for comp in m.computations:
        for ins in comp.instructions:
            if ins.opcode == "conditional" and ins.name not in seen:
                seen[ins.name] = (_rt5_dtype(comp[ins.operands[0]].shape), _rt5_n_branches(ins))
    return list(seen.values())


@wrong(
    "conditionals",
    why="walks the call graph from ENTRY (ENTRY first, then callees depth "
    "first) instead of module text order, and skips computations nothing calls; wrong on "
    "any module with an uncalled computation holding a conditional, and on module order when "
    "ENTRY (listed last) and a branch both hold conditionals",
)
def _rt5_conditionals_from_entry(hlo_text: str) -> list[tuple[str, int]]:
    m = parse_hlo(hlo_text)
    out, seen = [], set()

    def visit(comp):
        if comp.name in seen:
            return
        seen.add(comp.name)
        for ins in comp.instructions:
            if ins.opcode == "conditional":
                out.append((_rt5_dtype(comp[ins.operands[0]].shape), _rt5_n_branches(ins)))
        for ins in comp.instructions:
            for callee in ins.called_computations:
                c = m.computation(callee)
                if c is not None:
                    visit(c)
            for key in ("true_computation", "false_computation"):
                v = ins.attribute(key)
                if v and m.computation(v.strip()) is not None:
                    visit(m.computation(v.strip()))

    visit(m.entry)
    return out


# ---------------------------------------------------------------- while_loops


@wrong(
    "while_loops",
    why="counts distinct instruction names with opcode while; names repeat "
    "across computations: wrong on a module where two computations each hold `while.1`",
)
def _rt5_while_loops_name_set(hlo_text: str) -> int:
    m = parse_hlo(hlo_text)
    return len(
        {ins.name for comp in m.computations for ins in comp.instructions if ins.opcode == "while"}
    )


@wrong(
    "while_loops",
    why="walks the call graph from ENTRY only (calls/to_apply/body/condition/"
    "branches), so skips computations nothing calls; the contract counts those too: wrong "
    "on a module with an uncalled computation holding a while (e.g. a leftover while body "
    "in unoptimized HLO), counts 0 for it",
)
def _rt5_while_loops_reachable(hlo_text: str) -> int:
    m = parse_hlo(hlo_text)
    seen, n = set(), 0
    stack = [m.entry]
    while stack:
        comp = stack.pop()
        if comp.name in seen:
            continue
        seen.add(comp.name)
        for ins in comp.instructions:
            if ins.opcode == "while":
                n += 1
            for callee in ins.called_computations:
                c = m.computation(callee)
                if c is not None:
                    stack.append(c)
            cond = ins.attribute("condition")
            if cond and m.computation(cond.strip()) is not None:
                stack.append(m.computation(cond.strip()))
    return n


@wrong(
    "while_loops",
    why="counts once per call site (recurses into each callee every time it "
    "is called); wrong when one computation holding a while is called from two places "
    "(two `call`s to it, or shared by two conditional branches)",
)
def _rt5_while_loops_per_call_site(hlo_text: str) -> int:
    m = parse_hlo(hlo_text)
    called = set()
    for comp in m.computations:
        for ins in comp.instructions:
            called.update(ins.called_computations)
            for key in ("true_computation", "false_computation", "condition"):
                v = ins.attribute(key)
                if v:
                    called.add(v.strip())

    def count(comp, depth=0):
        if depth > 50:
            return 0
        n = 0
        for ins in comp.instructions:
            if ins.opcode == "while":
                n += 1
            names = list(ins.called_computations)
            for key in ("true_computation", "false_computation", "condition"):
                v = ins.attribute(key)
                if v and v.strip() not in names:
                    names.append(v.strip())
            for callee in names:
                c = m.computation(callee)
                if c is not None:
                    n += count(c, depth + 1)
        return n

    total = count(m.entry)
    for comp in m.computations:  # uncalled roots too
        if comp.name not in called and not comp.is_entry:
            total += count(comp)
    return total


# ---------------------------------------------------------------- loop_primitives


def _rt5_sub_jaxprs(v, exact_tuple=False, lists=True):
    from jax.extend import core as jcore

    if isinstance(v, jcore.ClosedJaxpr):
        yield v.jaxpr
    elif isinstance(v, jcore.Jaxpr):
        yield v
    elif (type(v) is tuple if exact_tuple else isinstance(v, tuple)) or (
        lists and isinstance(v, list)
    ):
        for e in v:
            yield from _rt5_sub_jaxprs(v=e, exact_tuple=exact_tuple, lists=lists)


def _rt5_walk(jaxpr, out, order="pre", sort_params=False, exact_tuple=False):
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        is_loop = eqn.primitive.name in ("scan", "while")
        if is_loop and order == "pre":
            out.append(eqn.primitive.name)
        items = sorted(eqn.params.items()) if sort_params else eqn.params.items()
        for _, v in items:
            for sub in _rt5_sub_jaxprs(v, exact_tuple=exact_tuple):
                _rt5_walk(sub, out, order, sort_params, exact_tuple)
        if is_loop and order == "post":
            out.append(eqn.primitive.name)
    return out


@wrong(
    "loop_primitives",
    why="post-order: appends a loop after the loops of its body; order is "
    "the equation first: wrong on a scan whose body holds a while_loop (gives "
    "['while', 'scan'])",
)
def _rt5_loop_primitives_postorder(jaxpr) -> list[str]:
    return _rt5_walk(jaxpr, [], order="post")


@wrong(
    "loop_primitives",
    why="visits params sorted by name instead of the order the params "
    "list them; a while lists cond_jaxpr before body_jaxpr: wrong on a while_loop whose cond "
    "holds a scan and whose body holds a while (gives while, while, scan)",
)
def _rt5_loop_primitives_sorted_params(jaxpr) -> list[str]:
    return _rt5_walk(jaxpr, [], sort_params=True)


@wrong(
    "loop_primitives",
    why="recurses into plain tuples/lists only (type(v) is tuple), not "
    "namedtuples; custom_linear_solve keeps its jaxprs in a namedtuple: wrong on "
    "lax.custom_linear_solve whose matvec or solve holds a fori_loop(0, n)",
)
def _rt5_loop_primitives_no_namedtuple(jaxpr) -> list[str]:
    return _rt5_walk(jaxpr, [], exact_tuple=True)


# ---------------------------------------------------------------- count_traces


@wrong(
    "count_traces",
    why="counts XLA backend compiles via jax.monitoring instead of traces; "
    "wrong when the same arguments are committed to different devices (one trace, several "
    "compiles), e.g. calls with x put on jax.devices()[0], [1], [2]",
)
def _rt5_count_traces_compiles(f, static_argnums, calls) -> int:
    n = [0]

    def listener(event, duration, **kw):
        if event == _rt5_BACKEND_COMPILE:
            n[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        jitted = jax.jit(f, static_argnums=static_argnums)
        for args in calls:
            jitted(*args)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return n[0]


@wrong(
    "count_traces",
    why="predicts traces from distinct (static values, shape, dtype) keys "
    "without weak types; a Python scalar is weakly typed: wrong on calls (1.0,) then "
    "(np.float32(1.0),) (2 traces, counted 1)",
)
def _rt5_count_traces_keys(f, static_argnums, calls) -> int:
    jitted = jax.jit(f, static_argnums=static_argnums)
    keys = set()
    for args in calls:
        jitted(*args)
        key = []
        for i, a in enumerate(args):
            if i in static_argnums:
                key.append(("s", a))
            else:
                arr = np.asarray(a)
                dt = jax.dtypes.canonicalize_dtype(arr.dtype)
                key.append((arr.shape, str(dt)))
        keys.add(tuple(key))
    return len(keys)


@wrong(
    "count_traces",
    why="counts the wrapper's compiled-cache entries (_cache_size) which are "
    "per device placement and per C++ fast-path signature, not traces; wrong on args "
    "committed to 3 devices (1 trace)",
)
def _rt5_count_traces_cache_size(f, static_argnums, calls) -> int:
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return jitted._cache_size()


# ---------------------------------------------------------------- compile_counter


@wrong(
    "compile_counter",
    why="unregisters only on normal exit (no try/finally): after a block "
    "that raised, later compiles still change c.count",
)
@contextlib.contextmanager
def _rt5_compile_counter_no_finally():
    c = CompileCount()

    def listener(event, duration, **kw):
        if event == _rt5_BACKEND_COMPILE:
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield c
    jax.monitoring.unregister_event_duration_listener(listener)


@wrong(
    "compile_counter",
    why="removes listeners with jax._src.monitoring.clear_event_listeners() "
    "on exit: disturbs everyone else's listeners; wrong on nested counters (outer stops "
    "counting once the inner block exits)",
)
@contextlib.contextmanager
def _rt5_compile_counter_clear_all():
    from jax._src import monitoring

    c = CompileCount()

    def listener(event, duration, **kw):
        if event == _rt5_BACKEND_COMPILE:
            c.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        monitoring.clear_event_listeners()


@wrong(
    "compile_counter",
    why="counts into a buffer and copies to c.count only when the block "
    "exits; c.count must be up to date at any point inside the block: wrong on reading "
    "c.count right after a compile inside the block",
)
@contextlib.contextmanager
def _rt5_compile_counter_late():
    c = CompileCount()
    seen = [0]

    def listener(event, duration, **kw):
        if event == _rt5_BACKEND_COMPILE:
            seen[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield c
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        c.count = seen[0]


# ---------------------------------------------------------------- bucketed_mean


@jax.jit
def _rt5_masked_mean(padded, n):
    mask = jnp.arange(padded.shape[0]) < n
    return jnp.sum(jnp.where(mask, padded, 0)) / n


def _rt5_pad(x, size):
    out = np.zeros(size, x.dtype)
    out[: len(x)] = x
    return out


@wrong(
    "bucketed_mean",
    why="off by one: picks the smallest bucket > len(x), not >=; wrong on "
    "len(x) equal to the largest bucket, e.g. 16 values with buckets (8, 16): raises "
    "ValueError",
)
def _rt5_bucketed_mean_strict(x, buckets) -> float:
    fits = [b for b in buckets if b > len(x)]
    if not fits:
        raise ValueError("too long")
    return float(_rt5_masked_mean(_rt5_pad(np.asarray(x), min(fits)), np.int32(len(x))))


@wrong(
    "bucketed_mean",
    why="checks the length against buckets[-1] (assumes sorted buckets); "
    "buckets come in any order: wrong on buckets (64, 16) and 30 values (raises ValueError)",
)
def _rt5_bucketed_mean_last_bucket(x, buckets) -> float:
    if len(x) > buckets[-1]:
        raise ValueError("too long")
    size = min(b for b in buckets if b >= len(x))
    return float(_rt5_masked_mean(_rt5_pad(np.asarray(x), size), np.int32(len(x))))


@wrong(
    "bucketed_mean",
    why="divides by max(len, 1) to dodge 0/0; NumPy's mean of an empty "
    "array is NaN: wrong on x = np.zeros(0, float32) (returns 0.0)",
)
def _rt5_bucketed_mean_empty_zero(x, buckets) -> float:
    x = np.asarray(x)
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError("too long")
    return float(_rt5_masked_mean(_rt5_pad(x, min(fits)), np.int32(max(len(x), 1))))


@wrong(
    "bucketed_mean",
    why="pads with NaN and takes jnp.nanmean so the padding drops out; "
    "NaN in x must count as in NumPy's mean: wrong on x = [1, nan, 3] (float32), buckets "
    "(4,): NumPy gives nan, this gives 2.0",
)
def _rt5_bucketed_mean_nan_pad(x, buckets) -> float:
    x = np.asarray(x)
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError("too long")
    padded = np.full(min(fits), np.nan, x.dtype)
    padded[: len(x)] = x
    return float(_rt5_nan_mean(padded))


@jax.jit
def _rt5_nan_mean(padded):
    return jnp.nanmean(padded)


# ---------------------------------------------------------------- explain_miss


def _rt5_collect(f, first_args, second_args, keep_first=False, restore=True, only_first=False):
    logger = logging.getLogger("jax")
    records = []

    class H(logging.Handler):
        def emit(self, record):
            records.append(record)

    h = H(level=logging.DEBUG)
    old_level = logger.level
    old = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    logger.addHandler(h)
    logger.setLevel(logging.DEBUG)
    try:
        g = jax.jit(f)
        g(*first_args)
        if not keep_first:
            records.clear()
        g(*second_args)
    finally:
        logger.removeHandler(h)
        logger.setLevel(old_level)
        jax.config.update("jax_explain_cache_misses", old if restore else False)
    msgs = [r.getMessage() for r in records if "TRACING CACHE MISS" in r.getMessage()]
    return msgs[:1] if only_first else msgs


@wrong(
    "explain_miss",
    why="sets jax_explain_cache_misses back to False instead of the value it "
    "found; wrong when the setting was already True before the call",
)
def _rt5_explain_miss_reset_false(f, first_args, second_args) -> list[str]:
    return _rt5_collect(f, first_args, second_args, restore=False)


@wrong(
    "explain_miss",
    why="keeps only the first explanation of the second call; jitted "
    "functions f calls miss too, each its own message: wrong when f calls an inner jax.jit "
    "function and the shape changes (2 messages)",
)
def _rt5_explain_miss_first_only(f, first_args, second_args) -> list[str]:
    return _rt5_collect(f, first_args, second_args, only_first=True)


@wrong(
    "explain_miss",
    why="collects records from both calls (handler on before the first "
    "call): the first call's own miss explanation leaks in; wrong whenever the first call "
    "logs a miss explanation, e.g. f = jnp.sin on f32[3] then f32[4]",
)
def _rt5_explain_miss_both_calls(f, first_args, second_args) -> list[str]:
    return _rt5_collect(f, first_args, second_args, keep_first=True)


# ---------------------------------------------------------------- predict_while_loops


def _rt5_copies_after_unroll(trips, unroll):
    """(loop kept?, copies of the step in the program)."""
    if unroll is True:
        return False, trips
    u = max(1, int(unroll))
    outer = trips // u
    rem = trips % u
    if outer <= 1:
        return False, trips
    return True, u + rem


def _rt5_count(loops, wrap, variant=None):
    total = 0
    for loop in loops:
        total += _rt5_one(loop, variant)
    return total


def _rt5_one(loop, variant=None):
    body = sum(_rt5_one(b, variant) for b in loop.body)
    k = loop.kind
    if k == "cumsum":
        return 0
    if k == "python_for":
        return loop.trips * body
    if k == "fori_traced":
        return 1 + body
    if k == "while":
        if loop.trips <= 1:
            return body * loop.trips
        return 1 + body
    if k == "map":
        if loop.trips <= 1 and variant != "map_always":
            return body * loop.trips
        return 1 + body
    # fori / scan
    kept, copies = _rt5_copies_after_unroll(loop.trips, loop.unroll)
    if variant == "no_remainder" and kept:
        copies = int(loop.unroll)
    return (1 if kept else 0) + copies * body


def _rt5_grad_count(loops, variant=None):
    # forward loop of an affine step is dead unless a later loop needs residuals
    total = 0
    later_needs = False
    for loop in reversed(loops):
        n = _rt5_one(loop)
        if n == 0:
            continue
        needs_fwd = loop.step == "tanh" or (later_needs and variant != "local")
        total += n * (2 if needs_fwd else 1)
        if loop.step == "tanh" or loop.kind != "cumsum":
            later_needs = later_needs or loop.step == "tanh"
    return total


@wrong(
    "predict_while_loops",
    why="ignores the remainder copies a scan/fori with unroll=u puts "
    "after the loop (trips % u steps); wrong on fori(5, unroll=2, body [fori_traced]): the "
    "remainder step holds one more inner while",
)
def _rt5_predict_while_loops_no_remainder(program) -> int:
    if program.wrap == "grad":
        return _rt5_grad_count(program.loops)
    return _rt5_count(program.loops, program.wrap, variant="no_remainder")


@wrong(
    "predict_while_loops",
    why="grad: decides per loop (tanh keeps its forward loop, affine "
    "drops it) without looking at later loops; an affine loop followed by a tanh loop must "
    "still run forward: wrong on grad of [fori(3, affine); fori(4, tanh)]",
)
def _rt5_predict_while_loops_local_grad(program) -> int:
    if program.wrap == "grad":
        return _rt5_grad_count(program.loops, variant="local")
    return _rt5_count(program.loops, program.wrap)


@wrong(
    "predict_while_loops",
    why="treats the one-trip deletion as a fori/scan rule only: a "
    "lax.map over 1 row is a scan of length 1 whose while XLA deletes; wrong on [map(1)]",
)
def _rt5_predict_while_loops_map_always(program) -> int:
    if program.wrap == "grad":
        return _rt5_grad_count(program.loops)
    return _rt5_count(program.loops, program.wrap, variant="map_always")


# ---------------------------------------------------------------- predict_compiles


def _rt5_aval_key(v, variant=None):
    if isinstance(v, np.ndarray):
        dt = np.dtype(v.dtype)
        if variant != "raw_dtype":
            dt = {
                np.dtype("float64"): np.dtype("float32"),
                np.dtype("int64"): np.dtype("int32"),
            }.get(dt, dt)
        return ("arr", v.shape, str(dt), False)
    if isinstance(v, np.generic):
        dt = np.dtype(type(v))
        if variant != "raw_dtype":
            dt = {
                np.dtype("float64"): np.dtype("float32"),
                np.dtype("int64"): np.dtype("int32"),
            }.get(dt, dt)
        return ("arr", (), str(dt), False)
    if isinstance(v, bool):
        return ("arr", (), "bool", False)
    if isinstance(v, int):
        return ("arr", (), "int32", True)
    return ("arr", (), "float32", True)


def _rt5_predict_compiles(calls, variant=None) -> int:
    seen = set()
    n = 0
    for i, call in enumerate(calls):
        if call.api in ("trace", "lower"):
            continue
        fn = ("lambda", i) if call.function == "lambda" else call.function
        if call.static:
            nkey = ("static", call.n)
        elif variant == "untyped_n":
            nkey = ("traced scalar",)
        else:
            nkey = _rt5_aval_key(call.n, variant)
        dev = call.device
        if variant == "device_zero_same":
            dev = 0 if dev is None else dev
        key = (fn, call.static, _rt5_aval_key(call.x, variant), nkey, dev)
        if call.api == "compile" and variant == "compile_separate":
            n += 1
            continue
        if key in seen:
            continue
        seen.add(key)
        n += 1
    return n


@wrong(
    "predict_compiles",
    why="keys on the NumPy dtype as given; with 32-bit defaults a float64 "
    "array becomes f32 like a float32 one: wrong on [call x=f32[3], call x=f64[3]] (1 "
    "compile, says 2)",
)
def _rt5_predict_compiles_raw_dtype(calls) -> int:
    return _rt5_predict_compiles(calls, variant="raw_dtype")


@wrong(
    "predict_compiles",
    why="assumes an uncommitted x lands on device 0 and so shares the key "
    "of x committed to device 0; committedness is part of the key: wrong on [call "
    "uncommitted, call committed to device 0] (2 compiles, says 1)",
)
def _rt5_predict_compiles_device_zero_same(calls) -> int:
    return _rt5_predict_compiles(calls, variant="device_zero_same")


@wrong(
    "predict_compiles",
    why="thinks lower().compile() never shares the call cache (always a "
    "fresh compile); wrong on [call, compile] of the same wrapper and args (1 compile, says 2)",
)
def _rt5_predict_compiles_compile_separate(calls) -> int:
    return _rt5_predict_compiles(calls, variant="compile_separate")


@wrong(
    "predict_compiles",
    why="keys a traced n by 'scalar' only, ignoring its type; a traced "
    "Python int and float are weak i32 vs weak f32: wrong on [call n=2, call n=2.0] traced "
    "(2 compiles, says 1)",
)
def _rt5_predict_compiles_untyped_n(calls) -> int:
    return _rt5_predict_compiles(calls, variant="untyped_n")
