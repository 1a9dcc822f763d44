"""Red team, phase 7, round 15: per-computation names looked up module-wide, call-site
recursion, jaxpr memoisation by identity, exact-type tuples (no namedtuples), a counting
wrapper cached across calls,
innermost-only nested counters, strict bucket fit, NaN padding with nansum, call/compile caches
believed separate."""

from __future__ import annotations

import contextlib
import logging

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt15_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _rt15_branch_count(inst) -> int:
    branches = inst.attribute("branch_computations")
    if branches is not None:
        return len([b for b in branches.strip("{}").split(",") if b.strip()])
    return 2 if inst.attribute("true_computation") is not None else 0


@wrong(
    "conditionals",
    why="Clause 'Instruction names are per computation: the same name may stand for another "
    "instruction in another computation': builds one name -> instruction table for the whole "
    "module ('names are unique, like SSA') and reads the index type from it; when two "
    "computations both define %p (one pred, one s32), the first printed wins; wrong on a module "
    "whose %br computation (printed first) defines `%p = s32[] parameter(0)` and whose ENTRY "
    "defines `%p = pred[] parameter(0)` feeding conditional(%p, ...): ('s32', 2) instead of "
    "('pred', 2)",
)
def _rt15_conditionals_global_names(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    table = {}
    for comp in module.computations:
        for inst in comp.instructions:
            table.setdefault(inst.name, inst)  # the first definition of a name is the one
    out = []
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "conditional":
                index = table[inst.operands[0]]
                out.append((index.shape_info.dtype, _rt15_branch_count(inst)))
    return out


@wrong(
    "conditionals",
    why="Clause 'find conditionals by opcode': picks instructions whose NAME starts with "
    "'conditional' (XLA names them %conditional, %conditional.1, ...); a conditional renamed "
    "%cond.7 is missed and an `add` named %conditional.2 is taken; wrong on such a module "
    "([] or a spurious entry instead of [('pred', 2)])",
)
def _rt15_conditionals_by_name(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.name.split(".")[0] == "conditional" and inst.operands:
                index = comp.instruction(inst.operands[0])
                if index is None:
                    continue
                out.append((index.shape_info.dtype, _rt15_branch_count(inst)))
    return out


@wrong(
    "while_loops",
    why="Clause 'Each instruction counts once, however many call sites reach its computation': "
    "counts recursively from ENTRY through every call site (no visited set), then adds the "
    "computations nothing reached; a computation holding one while and called by two `call` "
    "instructions counts twice; wrong on ENTRY { call(x), to_apply=%loop ; call(y), "
    "to_apply=%loop } with %loop holding one while: 2 instead of 1",
)
def _rt15_while_loops_per_call_site(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    reached = set()

    def count(comp) -> int:
        reached.add(comp.name)
        total = 0
        for inst in comp.instructions:
            if inst.opcode == "while":
                total += 1
            for callee in inst.called_computations:
                if callee in module:
                    total += count(module[callee])
        return total

    total = count(module.entry)
    for comp in module.computations:
        if comp.name not in reached:
            total += count(comp)
    return total


def _rt15_sub_jaxprs(value):
    if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt15_sub_jaxprs(item)


@wrong(
    "loop_primitives",
    why="Clause 'a jaxpr that two equations hold (one jitted function called twice) counts for "
    "each': keeps a visited set of id(jaxpr) ('don't walk the same jaxpr twice'), so the second "
    "pjit equation of one jitted function is not opened; wrong on j = jax.jit(lambda c: "
    "lax.fori_loop(0, n, body, c)) used as f(x) = j(j(x)) with n traced: ['while'] instead of "
    "['while', 'while']",
)
def _rt15_loop_primitives_visited(jaxpr) -> list[str]:
    seen = set()
    out = []

    def walk(j):
        if not hasattr(j, "eqns"):
            j = j.jaxpr
        if id(j) in seen:
            return
        seen.add(id(j))
        for eqn in j.eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in _rt15_sub_jaxprs(value):
                    walk(sub)

    walk(jaxpr)
    return out


@wrong(
    "loop_primitives",
    why="Clause 'alone or in a tuple/list, namedtuples included': tests containers with "
    "type(value) in (tuple, list) ('exact types, so a jaxpr-like object is never iterated'), "
    "which a namedtuple fails; custom_linear_solve's `jaxprs` param is a _LinearSolveTuple, so "
    "the loops of its solve are missed; wrong on make_jaxpr of lax.custom_linear_solve(lambda "
    "v: 2.0 * v, x, solve=lambda mv, b: lax.fori_loop(0, n, lambda i, c: c * 0.5 + b * 0.25, b)) "
    "with x f32[3] and n traced: [] instead of ['while']",
)
def _rt15_loop_primitives_exact_tuple(jaxpr) -> list[str]:
    out = []

    def subs(value):
        if type(value) in (tuple, list):
            for item in value:
                yield from subs(item)
        elif hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
            yield value

    def walk(j):
        if not hasattr(j, "eqns"):
            j = j.jaxpr
        for eqn in j.eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in subs(value):
                    walk(sub)

    walk(jaxpr)
    return out


_rt15_WRAPPERS: dict = {}


@wrong(
    "count_traces",
    why="Clause 'the same f and calls give the same count every time': keeps one counting "
    "wrapper and its jax.jit per (f, static_argnums) in a module dict ('don't rebuild the "
    "wrapper for the same f'), resetting only the counter; the wrapper's trace cache survives, "
    "so a second count_traces(f, (), [(x,)]) with x = f32[3] and f = lambda v: v * 2 answers 0 "
    "instead of 1",
)
def _rt15_count_traces_cached_wrapper(f, static_argnums, calls) -> int:
    key = (f, tuple(static_argnums))
    if key not in _rt15_WRAPPERS:
        box = [0]

        def counting(*args):
            box[0] += 1
            return f(*args)

        _rt15_WRAPPERS[key] = (box, jax.jit(counting, static_argnums=static_argnums))
    box, jitted = _rt15_WRAPPERS[key]
    box[0] = 0
    for args in calls:
        jitted(*args)
    return box[0]


@wrong(
    "compile_counter",
    why="Clause 'counters may nest and must not disturb each other': keeps a stack of open "
    "counters and credits each compile to the innermost only ('the inner block owns its "
    "compiles'); wrong on `with compile_counter() as outer: with compile_counter() as inner: "
    "jax.jit(lambda v: v + 7)(np.ones(3))`: outer.count is 0 instead of 1",
)
@contextlib.contextmanager
def _rt15_compile_counter_innermost():
    counter = _rt15_CompileCount()
    _rt15_STACK.append(counter)

    def listener(event, duration, **kwargs):
        if event == _rt15_BACKEND_COMPILE and _rt15_STACK and _rt15_STACK[-1] is counter:
            counter.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        for k, open_counter in enumerate(_rt15_STACK):
            if open_counter is counter:
                del _rt15_STACK[k]
                break


class _rt15_CompileCount:
    def __init__(self):
        self.count = 0


_rt15_STACK: list = []


def _rt15_pick_strict(n, buckets):
    fitting = [b for b in buckets if b > n]
    if not fitting:
        raise ValueError(f"length {n} does not fit in buckets {buckets}")
    return min(fitting)


@jax.jit
def _rt15_masked_mean(xp, n):
    mask = jnp.arange(xp.shape[0]) < n
    return jnp.sum(jnp.where(mask, xp.astype(jnp.float32), 0.0)) / n


@wrong(
    "bucketed_mean",
    why="Clause 'pad to the smallest bucket >= len(x)' / 'any length a bucket holds': picks the "
    "smallest bucket > len(x) ('leave room for the padding'), so a length equal to the largest "
    "bucket raises ValueError; wrong on x = np.ones(32, f32), buckets (8, 16, 32): mean 1.0 "
    "expected, raises",
)
def _rt15_bucketed_mean_strict(x, buckets) -> float:
    x = np.asarray(x)
    bucket = _rt15_pick_strict(len(x), buckets)
    xp = np.zeros(bucket, x.dtype)
    xp[: len(x)] = x
    return float(_rt15_masked_mean(xp, np.int32(len(x))))


@jax.jit
def _rt15_nan_padded_mean(xp, n):
    return jnp.nansum(xp.astype(jnp.float32)) / n


@wrong(
    "bucketed_mean",
    why="Clause 'NaN and infinities in x count as in NumPy's mean': pads with NaN and sums with "
    "jnp.nansum ('NaN padding masks itself, no mask array needed'), which also drops the NaNs "
    "of x; wrong on x = [1.0, nan, 3.0] f32, buckets (8,): NumPy gives nan, this 4/3",
)
def _rt15_bucketed_mean_nan_pad(x, buckets) -> float:
    x = np.asarray(x)
    fitting = [b for b in buckets if b >= len(x)]
    if not fitting:
        raise ValueError(f"length {len(x)} does not fit in buckets {buckets}")
    xp = np.full(min(fitting), np.nan, x.dtype)
    xp[: len(x)] = x
    return float(_rt15_nan_padded_mean(xp, np.int32(len(x))))


class _rt15_Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        message = record.getMessage()
        if "TRACING CACHE MISS" in message:
            self.messages.append(message)


@wrong(
    "explain_miss",
    why="Clause 'Leave the jax_explain_cache_misses setting ... as you found them': turns the "
    "setting on and sets it back to False afterwards ('off is the default'), not to the value "
    "it had; wrong when the caller had jax_explain_cache_misses on: it is off after the call",
)
def _rt15_explain_miss_reset_false(f, first_args, second_args) -> list[str]:
    logger = logging.getLogger("jax")
    jitted = jax.jit(f)
    handler = _rt15_Collect()
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted(*first_args)
        logger.addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logger.removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", False)
    return handler.messages


def _rt15_describe_key(call):
    x = call.x
    if isinstance(x, (bool, int, float)):
        aval = ("weak", type(x).__name__)
    else:
        arr = np.asarray(x)
        dt = {
            np.dtype("float64"): np.dtype("float32"),
            np.dtype("int64"): np.dtype("int32"),
            np.dtype("uint64"): np.dtype("uint32"),
        }.get(arr.dtype, arr.dtype)
        aval = (str(dt), arr.shape)
    if call.static:
        n = ("static", type(call.n).__name__, call.n)
    elif isinstance(call.n, bool):
        n = ("bool",)
    else:
        n = ("weak", type(call.n).__name__)
    return (aval, n, call.device)


@wrong(
    "predict_compiles",
    why="Hint 'do a call and an explicit compile share a cache?': believes they do not (an "
    "explicit .lower().compile() builds its own executable, the call path keeps its own "
    "cache), so the two paths are counted apart; wrong on [compile scale x=f32[3] n=2, call "
    "scale x=f32[3] n=2] (shared jit): 1 compile measured, answers 2",
)
def _rt15_predict_compiles_separate_paths(calls) -> int:
    seen = set()
    total = 0
    for i, call in enumerate(calls):
        if call.api in ("trace", "lower"):
            continue
        fn = ("lambda", i) if call.function == "lambda" else call.function
        key = (call.api == "compile", fn, call.static, _rt15_describe_key(call))
        if key not in seen:
            seen.add(key)
            total += 1
    return total
