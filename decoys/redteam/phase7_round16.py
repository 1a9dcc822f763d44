"""Red team, phase 7, round 16: a ROOT-first post-order walk of each computation, textual
de-duplication of cloned whiles, sub-jaxprs of one equation de-duplicated by id, static
arguments keyed by repr, a debug.callback counted as a trace, a compile listener registered
once for the process, compiles counted as distinct function names, np.resize padding masked by
multiplication, a mask built in x's float16 dtype, and explanations collected from the jit
module's logger."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt16_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _rt16_branches(inst) -> int:
    branches = inst.attribute("branch_computations")
    if branches is not None:
        return len([b for b in branches.strip("{}").split(",") if b.strip()])
    return 2 if inst.attribute("true_computation") is not None else 0


def _rt16_postorder(comp) -> list:
    """XLA's post order: operands first, from ROOT."""
    seen: set[str] = set()
    order = []

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        inst = comp.instruction(name)
        if inst is None:
            return
        for operand in inst.operands:
            visit(operand)
        order.append(inst)

    visit(comp.root.name)
    return order


@wrong(
    "conditionals",
    why="Clause 'list them in module order ... instruction by instruction inside each' and "
    "'one entry per instruction': rebuilds each computation's instruction order as XLA's "
    "post-order from ROOT (operands first, depth first), believing that is the order the text "
    "prints; a conditional nothing reads is never reached and two independent conditionals come "
    "in ROOT's operand order; wrong on ENTRY { c1 = conditional(k pred, ...) true/false; c2 = "
    "conditional(i s32, ...) branch_computations={b0, b1, b0}; dead = conditional(i, x) "
    "branch_computations={b1}; ROOT t = tuple(c2, c1) }: [('s32', 3), ('pred', 2)] instead of "
    "[('pred', 2), ('s32', 3), ('s32', 1)]",
)
def _rt16_conditionals_root_postorder(hlo_text: str) -> list[tuple[str, int]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module.computations:
        for inst in _rt16_postorder(comp):
            if inst.opcode == "conditional":
                index = comp.instruction(inst.operands[0])
                out.append((index.shape_info.dtype, _rt16_branches(inst)))
    return out


@wrong(
    "while_loops",
    why="Clause 'Each instruction counts once ... names may repeat across computations': "
    "de-duplicates whiles by their text (name, shape, operands, attributes), reasoning that XLA "
    "clones a computation per call site (%f and %f.clone) and a clone's while is the same loop; "
    "two different computations that each hold `%w = (s32[], f32[]) while(%t), condition=%c, "
    "body=%b` are two instructions; wrong on a module whose ENTRY calls %first and %second, each "
    "holding that same while line: 1 instead of 2",
)
def _rt16_while_loops_dedupe_text(hlo_text: str) -> int:
    module = parse_hlo(hlo_text)
    seen = set()
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "while":
                seen.add((inst.name, inst.shape, tuple(inst.operands), inst.attributes_text))
    return len(seen)


def _rt16_jaxprs_of(value):
    if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt16_jaxprs_of(item)


@wrong(
    "loop_primitives",
    why="Clause 'then the loops inside the jaxprs of its params (in the order the params list "
    "them)' and 'a jaxpr that ... counts for each': gathers the sub-jaxprs of ONE equation into "
    "a dict keyed by id ('a branch shared by several switch cases is one computation, walk it "
    "once'), so a jaxpr that one equation lists twice counts once; JAX hands both branches the "
    "same jaxpr object when they are the same function; wrong on make_jaxpr of lax.switch(n, "
    "[g, lambda v: v, g], x) with g = lambda v: lax.fori_loop(0, 3, lambda i, c: c * 0.5 + i, v) "
    "and x f32[3]: ['scan', 'scan'] expected, answers ['scan']",
)
def _rt16_loop_primitives_dedupe_in_eqn(jaxpr) -> list[str]:
    out: list[str] = []

    def walk(j) -> None:
        if not hasattr(j, "eqns"):
            j = j.jaxpr
        for eqn in j.eqns:
            if eqn.primitive.name in ("scan", "while"):
                out.append(eqn.primitive.name)
            subs = {}
            for value in eqn.params.values():
                for sub in _rt16_jaxprs_of(value):
                    subs.setdefault(id(sub), sub)
            for sub in subs.values():
                walk(sub)

    walk(jaxpr)
    return out


class _rt16_ReprStatic:
    """Hashable holder for static arguments (NumPy arrays are not hashable)."""

    def __init__(self, value) -> None:
        self.value = value

    def __hash__(self) -> int:
        return hash((type(self.value).__name__, repr(self.value)))

    def __eq__(self, other) -> bool:
        return isinstance(other, _rt16_ReprStatic) and (
            type(self.value).__name__,
            repr(self.value),
        ) == (type(other.value).__name__, repr(other.value))


@wrong(
    "count_traces",
    why="Clause 'how many times JAX traced f' for the calls as given: wraps every static "
    "argument in a holder hashed and compared by (type name, repr) ('static arguments must be "
    "hashable, arrays are not; and 2, 2.0, True are different keys'), so equal static values "
    "of one type with different reprs become different keys: 0.0 == -0.0 (same hash), JAX "
    "traces once; wrong on f(x, k) = x * k, static_argnums=(1,), calls [(f32[3], 0.0), "
    "(f32[3], -0.0)]: 1 trace, answers 2",
)
def _rt16_count_traces_repr_static(f: Callable, static_argnums: tuple[int, ...], calls) -> int:
    box = [0]

    def counting(*args):
        box[0] += 1
        args = [a.value if isinstance(a, _rt16_ReprStatic) else a for a in args]
        return f(*args)

    jitted = jax.jit(counting, static_argnums=static_argnums)
    for args in calls:
        statics = {i % len(args) for i in static_argnums}
        held = [_rt16_ReprStatic(a) if i in statics else a for i, a in enumerate(args)]
        jitted(*held)
    return box[0]


@wrong(
    "count_traces",
    why="Clause 'how many times JAX traced f (ran its Python body), not how many times ... f was "
    "called': counts with jax.debug.callback inside the traced wrapper ('a plain Python side "
    "effect is unreliable under jit; a debug callback is the supported way'), which fires on "
    "every run of the compiled program, not per trace; wrong on f = lambda v: v * 2, "
    "static_argnums=(), calls [(f32[3],), (f32[3],)]: 1 trace, answers 2",
)
def _rt16_count_traces_debug_callback(
    f: Callable, static_argnums: tuple[int, ...], calls: Sequence[tuple]
) -> int:
    box = [0]

    def bump() -> None:
        box[0] += 1

    def counting(*args):
        jax.debug.callback(bump)
        return f(*args)

    jitted = jax.jit(counting, static_argnums=static_argnums)
    for args in calls:
        jax.block_until_ready(jitted(*args))
    jax.effects_barrier()
    return box[0]


class _rt16_Count:
    def __init__(self) -> None:
        self.count = 0


class _rt16_Open:
    counters: list = []
    registered = False


def _rt16_shared_listener(event: str, duration: float, **kwargs) -> None:
    if event == _rt16_BACKEND_COMPILE:
        for counter in list(_rt16_Open.counters):
            counter.count += 1


@wrong(
    "compile_counter",
    why="Clause 'counts XLA backend compiles inside the block' and 'must not disturb ... "
    "anyone else's listeners': registers one process-wide listener the first time a counter "
    "opens and never again ('registering per block churns JAX's listener list'), counters just "
    "join a list; once anyone clears JAX's listeners (jax._src.monitoring."
    "clear_event_listeners(), as test fixtures do) no counter counts again; wrong on: open and "
    "close one counter, clear_event_listeners(), then `with compile_counter() as c: "
    "jax.jit(lambda v: v + 1)(f32[3])`: c.count 0 instead of 1",
)
@contextlib.contextmanager
def _rt16_compile_counter_register_once() -> Iterator:
    if not _rt16_Open.registered:
        jax.monitoring.register_event_duration_secs_listener(_rt16_shared_listener)
        _rt16_Open.registered = True
    c = _rt16_Count()
    _rt16_Open.counters.append(c)
    try:
        yield c
    finally:
        _rt16_Open.counters.remove(c)


def _rt16_masked_mean_mul(xp, mask, n):
    return jnp.sum(xp * mask) / n


_rt16_mean_mul = jax.jit(_rt16_masked_mean_mul)


@wrong(
    "bucketed_mean",
    why="Clause 'NaN and infinities in x count as in NumPy's mean ... mask the padding': pads "
    "with np.resize (which fills the bucket with repeated copies of x) and masks by multiplying "
    "with a 0/1 mask built on the host and passed in ('masked entries become 0'); a padded "
    "copy of an infinity times 0 is NaN; "
    "wrong on x = f32[1.0, inf], buckets (4,): inf, answers nan",
)
def _rt16_bucketed_mean_resize_multiply(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    b = min(fits)
    xp = np.resize(x, b) if n else np.zeros(b, x.dtype)
    mask = (np.arange(b) < n).astype(x.dtype)  # built on the host: same shape per bucket
    return float(_rt16_mean_mul(xp, mask, np.int32(n)))


def _rt16_masked_mean_own_dtype(xp, n):
    positions = jnp.arange(xp.shape[0], dtype=xp.dtype)  # same dtype as x: no promotion
    kept = jnp.where(positions < n.astype(xp.dtype), xp, jnp.zeros((), xp.dtype))
    return jnp.sum(kept) / n


_rt16_mean_own = jax.jit(_rt16_masked_mean_own_dtype)


@wrong(
    "bucketed_mean",
    why="Clause 'for a 1-D float array (any float dtype, any length a bucket holds)': builds "
    "the position iota and the length in x's own dtype ('keep everything in x.dtype'); float16 "
    "holds integers exactly only up to 2048, so position 2051 rounds to 2052 and the last real "
    "element of a length-2052 float16 x is masked out; wrong on x = float16 zeros of length "
    "2052 with x[2051] = 1000, buckets (4096,): ~0.487, answers 0.0",
)
def _rt16_bucketed_mean_own_dtype_iota(x: np.ndarray, buckets: tuple[int, ...]) -> float:
    n = len(x)
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} exceeds every bucket {buckets}")
    b = min(fits)
    xp = np.zeros(b, x.dtype)
    xp[:n] = x
    return float(_rt16_mean_own(xp, np.int32(n)))


class _rt16_Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("TRACING CACHE MISS"):
            self.messages.append(message)


@wrong(
    "explain_miss",
    why="Clause 'Return the messages ... of the tracing-cache-miss explanations logged by the "
    "second call': listens on the logger of the jit implementation, 'jax._src.pjit' ('jit "
    "explains its own cache'), but JAX logs the explanations from "
    "jax._src.interpreters.partial_eval, a sibling logger, so nothing is collected; wrong on "
    "f = lambda v: v * 2 with f32[3] then f32[4]: one explanation, answers []",
)
def _rt16_explain_miss_pjit_logger(f: Callable, first_args: tuple, second_args: tuple) -> list[str]:
    before = jax.config.jax_explain_cache_misses
    logger = logging.getLogger("jax._src.pjit")
    handler = _rt16_Collect()
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
    return handler.messages


@wrong(
    "compile_counter",
    why="Clause 'counts XLA backend compiles inside the block': counts the distinct fun_name "
    "values the BACKEND_COMPILE events carry ('how many functions had to compile'), so a "
    "function compiled for two shapes counts once; wrong on: with compile_counter() as c: "
    "j = jax.jit(lambda v: v * 3); j(f32[3]); j(f32[4]): 2 compiles, c.count 1",
)
@contextlib.contextmanager
def _rt16_compile_counter_distinct_names() -> Iterator:
    counter = _rt16_Count()
    names: set = set()

    def listener(event: str, duration: float, **kwargs) -> None:
        if event == _rt16_BACKEND_COMPILE:
            names.add(kwargs.get("fun_name"))
            counter.count = len(names)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counter
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
