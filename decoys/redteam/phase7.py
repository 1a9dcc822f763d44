"""Red-team wrong answers for phase 7, written from the contract only."""

import contextlib
import logging

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _branches(instruction):
    text = instruction.attribute("branch_computations")
    if text is None:
        return []
    return [b.strip().lstrip("%") for b in text.strip("{}").split(",") if b.strip()]


# ---- conditionals ------------------------------------------------------------------------------


@wrong(
    "conditionals",
    why="'one computation may serve several branches ... duplicates': counts distinct branch "
    "computations; SHARED_BRANCHES (branch_computations={double, double, negate}) gives "
    "('s32', 2) instead of ('s32', 3)",
)
def conditionals_distinct_branches(hlo_text):
    """Counts the set of branch computations, not the entries of branch_computations."""
    module = parse_hlo(hlo_text)
    out = []
    for computation in module:
        for instruction in computation:
            if instruction.opcode != "conditional":
                continue
            index = computation.instruction(instruction.operands[0])
            dtype = index.shape_info.dtype if index is not None else "s32"
            names = _branches(instruction)
            if not names:
                names = [
                    instruction.attribute("true_computation"),
                    instruction.attribute("false_computation"),
                ]
            out.append((dtype, len(set(names))))
    return out


@wrong(
    "conditionals",
    why="'the element type of its branch-index operand ... e.g. (\"pred\", 2)': reads only "
    "branch_computations=, so XLA's pred-indexed conditional (true_computation=/"
    "false_computation=, from IF_STABLEHLO) gives ('pred', 0) instead of ('pred', 2)",
)
def conditionals_branch_list_only(hlo_text):
    """Finds conditionals by opcode everywhere, but counts only branch_computations entries."""
    module = parse_hlo(hlo_text)
    out = []
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "conditional":
                index = computation.instruction(instruction.operands[0])
                out.append((index.shape_info.dtype, len(_branches(instruction))))
    return out


@wrong(
    "conditionals",
    why="'the element type of its branch-index operand ... read the index operand's type "
    "instead of assuming it': guesses pred for 2 branches, s32 otherwise; lax.cond (PROGRAMS"
    "['cond']) is an s32-indexed 2-branch conditional, this says ('pred', 2)",
)
def conditionals_pred_if_two_branches(hlo_text):
    """Guesses the index type from the branch count instead of reading the operand."""
    module = parse_hlo(hlo_text)
    out = []
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "conditional":
                names = _branches(instruction) or ["t", "f"]
                out.append(("pred" if len(names) == 2 else "s32", len(names)))
    return out


# ---- while_loops -------------------------------------------------------------------------------


@wrong(
    "while_loops",
    why="'in all its computations (loop bodies, ...)': looks in ENTRY and the computations "
    "ENTRY calls directly (the CPU small-call wrapper), not in loop bodies; PROGRAMS"
    "['nested_while'] optimized on CPU gives 1 instead of 2",
)
def while_loops_entry_and_wrappers(hlo_text):
    """Handles the xla_cpu_small_call hoisting one level deep, but never enters a while body."""
    module = parse_hlo(hlo_text)
    seen = [module.entry]
    for name in module.entry.calls:
        called = module.computation(name)
        if called is not None:
            seen.append(called)
    return sum(1 for c in seen for i in c if i.opcode == "while")


# ---- loop_primitives ---------------------------------------------------------------------------


def _sub_jaxprs(value):
    if hasattr(value, "eqns"):
        return [value]
    if hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        return [value.jaxpr]
    if isinstance(value, (tuple, list)):
        return [j for v in value for j in _sub_jaxprs(v)]
    return []


@wrong(
    "loop_primitives",
    why="'depth first ... a loop, then the loops inside it, then the next equation': walks "
    "breadth first; JAXPR_PROGRAMS['nested_then_sequential'] gives [while, while, scan] "
    "instead of [while, scan, while]",
)
def loop_primitives_breadth_first(jaxpr):
    """A queue instead of recursion: every top-level loop first, nested ones later."""
    queue = [jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr]
    out = []
    while queue:
        current = queue.pop(0)
        for eqn in current.eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            for value in eqn.params.values():
                queue.extend(_sub_jaxprs(value))
    return out


@wrong(
    "loop_primitives",
    why="'first the equation itself if it is a loop, then the loops inside': post-order "
    "(children first); JAXPR_PROGRAMS['while_holds_scan'] gives [scan, while] instead of "
    "[while, scan]",
)
def loop_primitives_children_first(jaxpr):
    """Recurses into params before recording the equation itself."""
    top = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    out = []
    for eqn in top.eqns:
        for value in eqn.params.values():
            for sub in _sub_jaxprs(value):
                out.extend(loop_primitives_children_first(sub))
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
    return out


@wrong(
    "loop_primitives",
    why="'alone or in a tuple/list: ... cond branches': recurses only into params that are "
    "a jaxpr themselves, not tuples; JAXPR_PROGRAMS['while_in_cond'] gives [] instead of "
    "['while']",
)
def loop_primitives_no_tuples(jaxpr):
    """Forgets that a cond's `branches` param is a tuple of closed jaxprs."""
    top = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    out = []
    for eqn in top.eqns:
        if eqn.primitive.name in ("scan", "while"):
            out.append(eqn.primitive.name)
        for value in eqn.params.values():
            if not isinstance(value, (tuple, list)):
                for sub in _sub_jaxprs(value):
                    out.extend(loop_primitives_no_tuples(sub))
    return out


# ---- count_traces ------------------------------------------------------------------------------


@wrong(
    "count_traces",
    why="'how many times JAX traced f': predicts from (shape, dtype, static value) keys, "
    "ignoring weak type and static-value type; calls [(2.0,), (np.float32(2.0),)] on "
    "f = lambda x: x * 2 trace twice, this says 1",
)
def count_traces_by_shape_key(f, static_argnums, calls):
    """Runs the calls, but counts distinct (shape, dtype) / static-value keys itself."""
    jitted = jax.jit(f, static_argnums=static_argnums)
    keys = set()
    for args in calls:
        jitted(*args)
        key = []
        for number, a in enumerate(args):
            if number in static_argnums:
                key.append(("static", a))  # 2 == 2.0 == True: one key here
            else:
                arr = np.asarray(a)
                key.append((arr.shape, str(jnp.asarray(arr).dtype)))
        keys.add(tuple(key))
    return len(keys)


# ---- compile_counter ---------------------------------------------------------------------------


@contextlib.contextmanager
def _rt_counting(counter, only_backend, unregister_in_finally):
    def listener(event, duration_secs, **_):
        if not only_backend or event == _BACKEND_COMPILE:
            counter.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    if unregister_in_finally:
        try:
            yield counter
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)
    else:
        yield counter
        jax.monitoring.unregister_event_duration_listener(listener)


@wrong(
    "compile_counter",
    why="'compiles after the block (also after a block that raised) must not change it': "
    "unregisters without try/finally; a block that raises leaves the listener registered, "
    "and a later jax.jit(lambda v: v + 1)(np.ones(3)) still increments c.count",
)
def compile_counter_no_finally():
    return _rt_counting(CompileCount(), only_backend=True, unregister_in_finally=False)


@wrong(
    "compile_counter",
    why="'Count only the BACKEND_COMPILE event': counts every duration event; one "
    "jax.jit(lambda v: v * 3)(np.ones(3)) inside the block gives count 3 instead of 1",
)
def compile_counter_every_event():
    return _rt_counting(CompileCount(), only_backend=False, unregister_in_finally=True)


# ---- bucketed_mean (decide) --------------------------------------------------------------------


@wrong(
    "bucketed_mean",
    why="'compiles once per bucket, not once per length': pads with jnp.pad on the device, an "
    "eager op that compiles once per input length; lengths 3, 4, 5 with buckets (8,) compile "
    "3 pad programs (+1 mean) instead of 1",
)
def bucketed_mean_device_pad(x, buckets):
    """Right value and masked mean, but the padding itself is an eager jnp op."""
    fits = sorted(b for b in buckets if b >= len(x))
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = jnp.pad(jnp.asarray(x), (0, fits[0] - len(x)))
    return float(_rt_masked_mean(padded, np.int32(len(x))))


@jax.jit
def _rt_masked_mean(padded, n):
    mask = jnp.arange(padded.shape[0]) < n
    return jnp.where(mask, padded.astype(jnp.float32), 0.0).sum() / n


@wrong(
    "bucketed_mean",
    why="'pad to the smallest bucket >= len(x) (buckets come in any order)': takes the first "
    "bucket in the given order that fits; buckets (64, 8, 16) and lengths 3, 10 both pad to 64: "
    "1 compile where the contract's padding costs 2, and f32[64] where f32[8] was asked",
)
def bucketed_mean_first_fit(x, buckets):
    """Assumes buckets are sorted ascending."""
    for bucket in buckets:
        if bucket >= len(x):
            padded = np.zeros(bucket, np.float32)
            padded[: len(x)] = x
            return float(_rt_masked_mean(padded, np.int32(len(x))))
    raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")


# ---- explain_miss ------------------------------------------------------------------------------


@wrong(
    "explain_miss",
    why="'the explanations logged by the *second* call': collects from before the first call, "
    "so it also returns the first call's 'never seen function' explanation; f32[3] then f32[4] "
    "gives 2 messages instead of 1",
)
def explain_miss_both_calls(f, first_args, second_args):
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            if "TRACING CACHE MISS" in record.getMessage().upper() or "cache miss" in (
                record.getMessage()
            ):
                records.append(record.getMessage())

    logger = logging.getLogger("jax")
    handler = Collect(level=logging.WARNING)
    logger.addHandler(handler)
    before = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted = jax.jit(f)
        jitted(*first_args)
        jitted(*second_args)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
        logger.removeHandler(handler)
    return records


# ---- predict_while_loops (predict) -------------------------------------------------------------

# The base rule each wrong answer below bends in one place. The red team wrote these answers as
# tables for the task's first contract (a fixed bank); when the task came to take one case at a
# time, each table was carried over as the same rule with the same one misconception.


def _rt_abstract(value, weak=True):
    if isinstance(value, bool):
        return ((), "bool", False)
    if isinstance(value, int):
        return ((), "int32", weak)
    if isinstance(value, float):
        return ((), "float32", weak)
    name = {"float64": "float32", "int64": "int32"}.get(np.dtype(value.dtype).name)
    return (np.shape(value), name or np.dtype(value.dtype).name, False)


def _rt_compiles(
    calls, *, devices=True, static_by_type=True, int_weak=True, aot_cached=True, wrapper_owns=False
) -> int:
    seen, count = set(), 0
    for number, call in enumerate(calls):
        if call.api in ("trace", "lower"):
            continue
        if call.api == "compile" and not aot_cached:
            count += 1
            continue
        function = (call.function, number) if call.function == "lambda" else call.function
        if wrapper_owns and call.jit == "new":
            function = (call.function, number)
        x = call.x
        weak = int_weak or not isinstance(x, int)
        if call.static:
            n = (type(call.n), call.n) if static_by_type else ("value", call.n)
        else:
            n = _rt_abstract(call.n)
        seen.add((function, call.static, _rt_abstract(x, weak), call.device if devices else 0, n))
    return count + len(seen)


def _rt_kept_and_copies(loop, min_trips=2):
    if loop.kind == "cumsum":
        return 0, 0
    if loop.kind == "fori_traced":
        return 1, 1
    if loop.kind == "python_for":
        return 0, loop.trips
    unroll = loop.trips if loop.unroll is True else loop.unroll
    trips, remainder = divmod(loop.trips, unroll) if unroll else (0, loop.trips)
    if unroll != 1 and trips == 1 and remainder == 0:
        trips, remainder = 0, loop.trips
    return int(trips >= min_trips), (unroll if trips else 0) + remainder


def _rt_whiles(program, *, min_trips=2, grad_keeps_forward=False, rows=1, cumsum=0) -> int:
    def count(loop):
        if loop.kind == "cumsum":
            return cumsum
        kept, copies = _rt_kept_and_copies(loop, min_trips)
        return kept + copies * sum(count(inner) for inner in loop.body)

    if program.wrap != "grad":
        return (rows if program.wrap == "vmap" else 1) * sum(count(lp) for lp in program.loops)
    total = 0
    for number, loop in enumerate(program.loops):
        kept, _ = _rt_kept_and_copies(loop, min_trips)
        later = program.loops[number:]
        needed = grad_keeps_forward or any(m.step == "tanh" and m.kind != "cumsum" for m in later)
        total += kept * (1 + needed)
    return total


@wrong(
    "predict_while_loops",
    why="'what ... trip counts ... do to a loop': every primitive loop survives; "
    "'fori_loop(0, 1)' is 0 (the while-loop simplifier inlines a loop that runs once), this "
    "says 1",
)
def predict_whiles_trip_count_ignored(program):
    return _rt_whiles(program, min_trips=1)


@wrong(
    "predict_while_loops",
    why="'what grad does to a loop': forward loop plus backward loop for every grad; "
    "'grad of an affine fori_loop' is 1 (the forward values are dead: the derivative of an "
    "affine step does not read them), this says 2",
)
def predict_whiles_grad_always_two(program):
    return _rt_whiles(program, grad_keeps_forward=True)


@wrong(
    "predict_while_loops",
    why="'what vmap ... do to a loop': one loop per batch row; 'vmap of a fori_loop' over 2 "
    "rows is 1 while, this says 2; and jnp.cumsum as a scan (1) where it is 0",
)
def predict_whiles_vmap_per_row(program):
    return _rt_whiles(program, rows=2, cumsum=1)


# ---- predict_compiles (predict) ----------------------------------------------------------------


@wrong(
    "predict_compiles",
    why="'a trace is one run ... a compile is one XLA compile': equates compiles with traces; "
    "'same shapes committed to 3 devices' (8 CPU devices) compiles 3 times, this says 1",
)
def predict_compiles_one_per_trace(calls):
    return _rt_compiles(calls, devices=False)


@wrong(
    "predict_compiles",
    why="'which calls hit a cache': thinks .lower().compile() bypasses the compilation cache; "
    "'lower and compile twice by hand' compiles once, this says 2",
)
def predict_compiles_aot_uncached(calls):
    return _rt_compiles(calls, aot_cached=False)


@wrong(
    "predict_compiles",
    why="'Is the cache attached to the jax.jit wrapper object or to the function': thinks the "
    "wrapper owns it; 'one function, jax.jit applied on each of 3 calls' compiles once, this "
    "says 3",
)
def predict_compiles_cache_on_wrapper(calls):
    return _rt_compiles(calls, wrapper_owns=True)


@wrong(
    "predict_compiles",
    why="'static values by type and equality (2, 2.0 and True are three keys)': keys static "
    "values by hash/equality only; 'static argument 2, 2.0, True' is 3 compiles, this says 1",
)
def predict_compiles_static_by_equality(calls):
    return _rt_compiles(calls, static_by_type=False)
