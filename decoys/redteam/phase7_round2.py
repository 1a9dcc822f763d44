"""Red-team (round 2) wrong answers for phase 7, written from the contract only."""

from __future__ import annotations

import contextlib
import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_R2_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"

# The base rule each wrong answer below bends in one place. The red team wrote these answers as
# tables for the task's first contract (a fixed bank); when the task came to take one case at a
# time, each table was carried over as the same rule with the same one misconception.


def _r2_abstract(value, weak=True):
    if isinstance(value, bool):
        return ((), "bool", False)
    if isinstance(value, int):
        return ((), "int32", weak)
    if isinstance(value, float):
        return ((), "float32", weak)
    name = {"float64": "float32", "int64": "int32"}.get(np.dtype(value.dtype).name)
    return (np.shape(value), name or np.dtype(value.dtype).name, False)


def _r2_compiles(
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
            n = _r2_abstract(call.n)
        seen.add((function, call.static, _r2_abstract(x, weak), call.device if devices else 0, n))
    return count + len(seen)


def _r2_kept_and_copies(loop, min_trips=2):
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


def _r2_whiles(program, *, min_trips=2, grad_keeps_forward=False, rows=1, cumsum=0) -> int:
    def count(loop):
        if loop.kind == "cumsum":
            return cumsum
        kept, copies = _r2_kept_and_copies(loop, min_trips)
        return kept + copies * sum(count(inner) for inner in loop.body)

    if program.wrap != "grad":
        return (rows if program.wrap == "vmap" else 1) * sum(count(lp) for lp in program.loops)
    total = 0
    for number, loop in enumerate(program.loops):
        kept, _ = _r2_kept_and_copies(loop, min_trips)
        later = program.loops[number:]
        needed = grad_keeps_forward or any(m.step == "tanh" and m.kind != "cumsum" for m in later)
        total += kept * (1 + needed)
    return total


# ---------------------------------------------------------------- predict_while_loops


@wrong(
    "predict_while_loops",
    why="'what grad does to a loop': believes a gradient always keeps the forward loop next to "
    "the backward one; wrong on 'grad of an affine fori_loop' (2, XLA keeps 1: the affine "
    "derivative never reads the forward values, the forward loop is dead code)",
)
def r2_grad_always_two_loops(program) -> int:
    return _r2_whiles(program, grad_keeps_forward=True)


@wrong(
    "predict_while_loops",
    why="'a loop that runs at most once is replaced by its body': counts every fori_loop with "
    "static bounds as one while; wrong on 'fori_loop(0, 1)' (1, XLA keeps 0)",
)
def r2_trip_count_one_still_loops(program) -> int:
    return _r2_whiles(program, min_trips=1)


@wrong(
    "predict_while_loops",
    why="'what vmap does to a loop': one loop per batch row; wrong on 'vmap of a fori_loop' "
    "(2 for the 2 stacked rows, XLA keeps 1 loop over batched rows)",
)
def r2_vmap_one_loop_per_row(program) -> int:
    return _r2_whiles(program, rows=2)


# ---------------------------------------------------------------- predict_compiles


@wrong(
    "predict_compiles",
    why="'static values by type and equality (2, 2.0 and True are three keys)': reasons that "
    "2 == 2.0 == True hash alike, so one dict key; wrong on 'static argument 2, 2.0, True' "
    "(1, JAX compiles 3)",
)
def r2_static_values_hash_equal(calls) -> int:
    return _r2_compiles(calls, static_by_type=False)


@wrong(
    "predict_compiles",
    why="'the same abstract types on three devices trace once and compile three times': "
    "conflates traces with compiles; wrong on 'same shapes committed to 3 devices' (1, XLA "
    "compiles 3)",
)
def r2_devices_share_one_compile(calls) -> int:
    return _r2_compiles(calls, devices=False)


@wrong(
    "predict_compiles",
    why="'a Python 2.0 is weak, np.float32(2.0) is not' applied to floats only: thinks a "
    "Python int is int32 like np.int32; wrong on 'Python int 3 then np.int32(3)' (1, JAX "
    "compiles 2: weak_type differs)",
)
def r2_int_weak_type_ignored(calls) -> int:
    return _r2_compiles(calls, int_weak=False)


@wrong(
    "predict_compiles",
    why="'which calls hit a cache': believes an explicit .lower().compile() always compiles; "
    "wrong on 'lower and compile twice by hand' (2, the second compile hits the cache: 1)",
)
def r2_aot_never_cached(calls) -> int:
    return _r2_compiles(calls, aot_cached=False)


# ---------------------------------------------------------------- bucketed_mean


@wrong(
    "bucketed_mean",
    why="'compiles once per bucket, not once per length': pads on the device with jnp.pad, "
    "an eager op that compiles once per input length; wrong on lengths 3, 5, 6 with buckets "
    "(8,) (4 compiles instead of 1)",
)
def r2_pad_on_device(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    size = min(fits)
    padded = jnp.pad(jnp.asarray(x), (0, size - len(x)))
    return float(_r2_masked_mean(padded, jnp.int32(len(x))))


@functools.partial(jax.jit)
def _r2_masked_mean(padded, n):
    mask = jnp.arange(padded.shape[0]) < n
    return jnp.where(mask, padded, 0).astype(jnp.float32).sum() / n


@wrong(
    "bucketed_mean",
    why="'pad to the smallest bucket >= len(x) (buckets come in any order)': takes the first "
    "bucket that fits in the given order; wrong on buckets (16, 4, 8) with len 3 then 5 (pads "
    "both to 16: one shape where the contract compiles for 4 and 8)",
)
def r2_first_fitting_bucket(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    size = next((b for b in buckets if b >= len(x)), None)
    if size is None:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(size, dtype=x.dtype)
    padded[: len(x)] = x
    return float(_r2_masked_mean(padded, np.int32(len(x))))


@wrong(
    "bucketed_mean",
    why="'pass the true length as an array, not a static value': masks with a static length, "
    "so every new length in a known bucket compiles again; wrong on lengths 5, 6, 7 with "
    "buckets (8,) (3 compiles, contract 1)",
)
def r2_static_length(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    if not fits:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(min(fits), dtype=x.dtype)
    padded[: len(x)] = x
    return float(_r2_static_mean(padded, len(x)))


@functools.partial(jax.jit, static_argnums=1)
def _r2_static_mean(padded, n):
    return padded[:n].astype(jnp.float32).sum() / n


@wrong(
    "bucketed_mean",
    why="'Raise ValueError when x is longer than every bucket': falls back to x's own length; "
    "wrong on len 9 with buckets (4, 8) (returns the mean instead of raising)",
)
def r2_no_error_when_too_long(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    fits = [b for b in buckets if b >= len(x)]
    size = min(fits) if fits else len(x)
    padded = np.zeros(size, dtype=x.dtype)
    padded[: len(x)] = x
    return float(_r2_masked_mean(padded, np.int32(len(x))))


# ---------------------------------------------------------------- conditionals


@wrong(
    "conditionals",
    why="'list them in module order (the order the text lists computations)': walks the call "
    "graph from ENTRY depth first instead; wrong on switch_in_cond ([('s32', 2), ('s32', 3)] "
    "instead of [('s32', 3), ('s32', 2)]: the branch computation is printed before ENTRY)",
)
def r2_conditionals_from_entry(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    found: list[tuple[str, int]] = []
    seen: set[str] = set()

    def visit(computation):
        if computation is None or computation.name in seen:
            return
        seen.add(computation.name)
        for instruction in computation.instructions:
            if instruction.opcode == "conditional":
                index = computation.instruction(instruction.operands[0])
                dtype = index.shape_info.dtype if index is not None else "s32"
                found.append((str(dtype), len(instruction.called_computations)))
            for name in instruction.called_computations:
                visit(module.computation(name.lstrip("%")))

    visit(module.entry)
    return found


@wrong(
    "conditionals",
    why="'Conditionals hide in branches of other conditionals and in loop bodies': looks in "
    "ENTRY and in branch computations only; wrong on cond_in_scan and cond_in_while ([] "
    "instead of [('s32', 2)]: the conditional sits in a while body)",
)
def r2_conditionals_entry_and_branches(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    keep = {module.entry.name}
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode == "conditional":
                keep |= {n.lstrip("%") for n in instruction.called_computations}
    found = []
    for computation in module.computations:
        if computation.name not in keep:
            continue
        for instruction in computation.instructions:
            if instruction.opcode == "conditional":
                index = computation.instruction(instruction.operands[0])
                found.append((str(index.shape_info.dtype), len(instruction.called_computations)))
    return found


@wrong(
    "conditionals",
    why="'A branch is an entry of branch_computations: one computation may serve several "
    "branches': counts distinct branch computations; wrong on SHARED_BRANCHES ([('s32', 2)] "
    "instead of [('s32', 3)])",
)
def r2_distinct_branches(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    found = []
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode == "conditional":
                index = computation.instruction(instruction.operands[0])
                found.append(
                    (str(index.shape_info.dtype), len(set(instruction.called_computations)))
                )
    return found


# ---------------------------------------------------------------- while_loops


@wrong(
    "while_loops",
    why="'in all its computations (loop bodies, ...)': looks in ENTRY and the computations ENTRY "
    "calls (the CPU small-call wrappers), not in loop bodies; wrong on nested_while (1, the "
    "module holds 2) and three_deep (1 instead of 3)",
)
def r2_while_entry_and_calls(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    places = [module.entry] + [
        module.computation(name.lstrip("%"))
        for instruction in module.entry.instructions
        if instruction.opcode == "call"
        for name in instruction.called_computations
    ]
    return sum(
        instruction.opcode == "while"
        for computation in places
        if computation is not None
        for instruction in computation.instructions
    )


@wrong(
    "while_loops",
    why="'in all its computations': follows body=, to_apply= and branches from ENTRY but not "
    "condition=; wrong on a while_loop whose cond_fun runs a while_loop (counts 1, the module "
    "holds 2), e.g. while_loop(lambda c: while_loop(lambda d: d.sum() < 50, lambda d: d + 1, "
    "c).sum() < 1000, lambda c: c * 2, x) on f32[8]",
)
def r2_while_skips_conditions(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    count = 0
    seen: set[str] = set()

    def visit(computation):
        nonlocal count
        if computation is None or computation.name in seen:
            return
        seen.add(computation.name)
        for instruction in computation.instructions:
            if instruction.opcode == "while":
                count += 1
                body = instruction.attribute("body")
                visit(module.computation(body.lstrip("%")) if body else None)
                continue
            for name in instruction.called_computations:
                visit(module.computation(name.lstrip("%")))

    visit(module.entry)
    return count


# ---------------------------------------------------------------- loop_primitives


def _r2_inner(value):
    """The jaxprs held by one param value (alone or in a tuple/list)."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    for item in values:
        if hasattr(item, "eqns"):
            yield item
        elif hasattr(item, "jaxpr") and hasattr(item.jaxpr, "eqns"):
            yield item.jaxpr


@wrong(
    "loop_primitives",
    why="'depth first ... then the next equation': lists the loops of one level before the "
    "loops nested in them (breadth first); wrong on nested_then_sequential (['while', "
    "'while', 'scan'] instead of ['while', 'scan', 'while'])",
)
def r2_breadth_first(jaxpr) -> list[str]:
    level = [getattr(jaxpr, "jaxpr", jaxpr)]
    found = []
    while level:
        following = []
        for current in level:
            for eqn in current.eqns:
                if eqn.primitive.name in ("scan", "while"):
                    found.append(eqn.primitive.name)
                for value in eqn.params.values():
                    following.extend(_r2_inner(value))
        level = following
    return found


@wrong(
    "loop_primitives",
    why="'then the loops inside the jaxprs of its params (in the order the params list them)': "
    "visits a while's body before its condition; wrong on loop_in_while_cond (['while', "
    "'while', 'scan'] instead of ['while', 'scan', 'while'])",
)
def r2_body_before_cond(jaxpr) -> list[str]:
    found = []
    order = ("body_jaxpr", "jaxpr", "call_jaxpr", "branches", "cond_jaxpr")

    def walk(current):
        for eqn in current.eqns:
            if eqn.primitive.name in ("scan", "while"):
                found.append(eqn.primitive.name)
            keys = sorted(eqn.params, key=lambda k: order.index(k) if k in order else len(order))
            for key in keys:
                for inner in _r2_inner(eqn.params[key]):
                    walk(inner)

    walk(getattr(jaxpr, "jaxpr", jaxpr))
    return found


@wrong(
    "loop_primitives",
    why="'every jaxpr nested in equation params (... custom_jvp, ...)': recurses only into the "
    "params it knows by name (jaxpr, body_jaxpr, cond_jaxpr, branches), not into a custom_jvp's "
    "call_jaxpr; wrong on inside_custom_jvp ([] instead of ['while'])",
)
def r2_known_param_names(jaxpr) -> list[str]:
    found = []

    def walk(current):
        for eqn in current.eqns:
            if eqn.primitive.name in ("scan", "while"):
                found.append(eqn.primitive.name)
            for key in ("cond_jaxpr", "body_jaxpr", "jaxpr", "branches"):
                if key in eqn.params:
                    for inner in _r2_inner(eqn.params[key]):
                        walk(inner)

    walk(getattr(jaxpr, "jaxpr", jaxpr))
    return found


# ---------------------------------------------------------------- count_traces


@wrong(
    "count_traces",
    why="'how many times JAX traced f': counts distinct (argument types, static values) keys "
    "in a Python set, where 2, 2.0 and True collapse and weak types are ignored; wrong on a "
    "static argument taking 2, 2.0, True (2 instead of 3 traces: 2 == 2.0)",
)
def r2_trace_keys_by_hash(f, static_argnums, calls) -> int:
    jitted = jax.jit(f, static_argnums=static_argnums)
    keys = set()
    for args in calls:
        jitted(*args)
        keys.add(
            tuple(
                a if i in static_argnums else (np.shape(a), str(np.asarray(a).dtype))
                for i, a in enumerate(args)
            )
        )
    return len(keys)


# ---------------------------------------------------------------- compile_counter


@wrong(
    "compile_counter",
    why="'compiles after the block (also after a block that raised) must not change it': "
    "unregisters after a normal exit only; wrong when the block raises, a jit compiled after "
    "it still increments c.count",
)
def r2_counter_leaks_on_raise():
    count = CompileCount()  # noqa: F821  (the module's own dataclass)

    def listener(event, duration_secs, **_):
        if event == _R2_BACKEND_COMPILE:
            count.count += 1

    @contextlib.contextmanager
    def counting():
        jax.monitoring.register_event_duration_secs_listener(listener)
        yield count
        jax.monitoring.unregister_event_duration_listener(listener)

    return counting()


@wrong(
    "compile_counter",
    why="'Count only the BACKEND_COMPILE event': counts every /jax/core/compile/ event (traces "
    "and lowerings too); wrong on one jit call (3 instead of 1)",
)
def r2_counter_all_compile_events():
    count = CompileCount()  # noqa: F821

    def listener(event, duration_secs, **_):
        if "/compile/" in event:
            count.count += 1

    @contextlib.contextmanager
    def counting():
        jax.monitoring.register_event_duration_secs_listener(listener)
        try:
            yield count
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)

    return counting()


# ---------------------------------------------------------------- explain_miss


@wrong(
    "explain_miss",
    why="'logged by the *second* call': collects from before the first call, so the first "
    "call's 'never seen function' record is included; wrong on f(f32[3]) then f(f32[3]) (one "
    "message instead of [])",
)
def r2_explain_both_calls(f, first_args, second_args) -> list[str]:
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            if "TRACING CACHE MISS" in record.getMessage():
                records.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    logger = logging.getLogger("jax")
    before = jax.config.jax_explain_cache_misses
    logger.addHandler(handler)
    try:
        with jax.explain_cache_misses(True):
            jitted = jax.jit(f)
            jitted(*first_args)
            jitted(*second_args)
    finally:
        logger.removeHandler(handler)
        jax.config.update("jax_explain_cache_misses", before)
    return records
