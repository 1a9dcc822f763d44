"""Plausible wrong answers to phase 7; each must be caught by the tests it names."""

import contextlib
import logging
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import accepted, decoy
from xla_inspect.jaxpr import iter_eqns
from xla_inspect.parse import parse_hlo


@decoy(
    "conditionals",
    caught_by=["test_conditionals_match_xla", "test_conditionals_in_module_order"],
    why="looks only in ENTRY",
)
def conditionals_entry_only(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return [
        (entry[i.operands[0]].shape_info.dtype, len(i.called_computations))
        for i in entry
        if i.opcode == "conditional"
    ]


@decoy(
    "conditionals",
    caught_by=["test_conditionals_match_xla"],
    why="counts the operands instead of the branches",
)
def conditionals_operand_count(hlo_text):
    return [
        (c[i.operands[0]].shape_info.dtype, len(i.operands))
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "conditional"
    ]


@decoy(
    "while_loops",
    caught_by=["test_while_loops_match_xla", "test_cpu_wraps_while_in_a_call"],
    why="looks only in ENTRY",
)
def whiles_in_entry(hlo_text):
    return sum(i.opcode == "while" for i in parse_hlo(hlo_text).entry)


@decoy(
    "while_loops",
    caught_by=["test_while_loops_match_xla"],
    why="answers 1 when any while exists, not how many",
)
def whiles_as_flag(hlo_text):
    return int(any(i.opcode == "while" for c in parse_hlo(hlo_text) for i in c))


@decoy("loop_primitives", caught_by=["test_loop_primitives_bank"], why="top level only")
def loops_top_level(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns if e.primitive.name in ("scan", "while")]


@decoy(
    "loop_primitives",
    caught_by=["test_static_bounds_scan_dynamic_bounds_while", "test_loop_primitives_bank"],
    why="names every loop 'while'",
)
def loops_all_while(jaxpr):
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            found.append("while")
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple) else (param,):
                if hasattr(sub, "eqns"):
                    found += loops_all_while(sub)
    return found


@decoy(
    "count_traces", caught_by=["test_one_trace_per_static_value"], why="counts calls, not traces"
)
def traces_are_calls(f, static_argnums, calls):
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return len(calls)


@decoy(
    "count_traces",
    caught_by=["test_new_shapes_trace_again"],
    why="predicts one trace per static value, ignoring shapes",
)
def traces_per_static_value(f, static_argnums, calls):
    return len({tuple(args[i] for i in static_argnums) for args in calls})


@dataclass
class CompileCount:
    count: int = 0


@contextlib.contextmanager
def _counting(counts_event):
    """Count the monitoring events for which counts_event(name) is true, inside the block."""
    counted = CompileCount()

    def listener(event, duration_secs, **kwargs):
        if counts_event(event):
            counted.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counted
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@decoy(
    "compile_counter",
    caught_by=["test_compile_counter_counts_backend_compiles"],
    why="counts every monitoring event (tracing and lowering too)",
)
def counter_all_events():
    return _counting(lambda event: True)


@decoy(
    "compile_counter", caught_by=["test_compile_counter_stops_at_exit"], why="never stops listening"
)
@contextlib.contextmanager
def counter_never_stops():
    counted = CompileCount()

    def listener(event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counted.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield counted


@jax.jit
def _mean_all(padded, length):
    return jnp.sum(padded) / padded.shape[0]


def _pad(x, buckets):
    size = min((b for b in buckets if b >= len(x)), default=None)
    if size is None:
        raise ValueError("too long")
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return padded


@decoy("bucketed_mean", caught_by=["test_bucketed_mean_is_correct"], why="averages the padding too")
def mean_unmasked(x, buckets):
    return float(_mean_all(_pad(x, buckets), len(x)))


@decoy(
    "bucketed_mean",
    caught_by=["test_bucketed_mean_other_dtypes"],
    why="pads and sums in x's own dtype: a float16 sum past 65504 is inf, a bfloat16 one rounds",
)
def mean_summed_in_input_dtype(x, buckets):
    size = min((b for b in buckets if b >= len(x)), default=None)
    if size is None:
        raise ValueError("too long")
    padded = np.zeros(size, x.dtype)
    padded[: len(x)] = x
    return float(_summed_in_dtype(padded, np.int32(len(x))))


@jax.jit
def _summed_in_dtype(padded, length):
    kept = jnp.where(jnp.arange(padded.shape[0]) < length, padded, jnp.zeros((), padded.dtype))
    return jnp.sum(kept).astype(jnp.float32) / length


@decoy(
    "bucketed_mean",
    caught_by=["test_bucketing_bounds_compiles"],
    why="the length is a static argument: one compile per length",
)
def mean_static_length(x, buckets):
    return float(_masked_static(_pad(x, buckets), len(x)))


def _masked_static_impl(padded, length):
    return jnp.sum(padded[:length]) / length


_masked_static = jax.jit(_masked_static_impl, static_argnums=1)


@decoy(
    "bucketed_mean",
    caught_by=["test_bucketing_bounds_compiles"],
    why="pads with jnp.pad eagerly: an eager pad compiles per length",
)
def mean_eager_pad(x, buckets):
    size = min((b for b in buckets if b >= len(x)), default=None)
    if size is None:
        raise ValueError("too long")
    padded = jnp.pad(jnp.asarray(x), (0, size - len(x)))
    return float(_masked(padded, len(x)))


@jax.jit
def _masked(padded, length):
    return jnp.sum(jnp.where(jnp.arange(padded.shape[0]) < length, padded, 0.0)) / length


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _second_call_messages(f, first_args, second_args):
    """jit f, call it twice, return what jax logged during the second call."""
    jitted = jax.jit(f)
    jitted(*first_args)
    handler = _Collect()
    logging.getLogger("jax").addHandler(handler)
    try:
        jitted(*second_args)
    finally:
        logging.getLogger("jax").removeHandler(handler)
    return handler.messages


@decoy(
    "explain_miss",
    caught_by=["test_no_miss_no_explanation"],
    why="collects the first call's 'never seen function' too",
)
def explain_both_calls(f, first_args, second_args):
    handler = _Collect()
    logging.getLogger("jax").addHandler(handler)
    try:
        with jax.explain_cache_misses(True):
            jitted = jax.jit(f)
            jitted(*first_args)
            jitted(*second_args)
    finally:
        logging.getLogger("jax").removeHandler(handler)
    return handler.messages


@decoy(
    "explain_miss",
    caught_by=["test_no_miss_no_explanation"],
    why="turns explanations on and leaves them on",
)
def explain_leaves_flag_on(f, first_args, second_args):
    jax.config.update("jax_explain_cache_misses", True)
    return _second_call_messages(f, first_args, second_args)


@decoy(
    "explain_miss",
    caught_by=["test_explains_a_shape_miss", "test_explains_a_weak_type_miss"],
    why="never turns explanations on",
)
def explain_not_enabled(f, first_args, second_args):
    return _second_call_messages(f, first_args, second_args)


@decoy(
    "compile_counter",
    caught_by=["test_compile_counter_counts_backend_compiles"],
    why="listens for the tracing event: a compile of an already-lowered program is missed",
)
def counter_traces():
    return _counting(lambda event: event == "/jax/core/compile/jaxpr_trace_duration")


@decoy(
    "bucketed_mean",
    caught_by=["test_bucketing_bounds_compiles"],
    why="pads every input to the largest bucket: one compile, wasted work on short inputs",
)
def mean_largest_bucket(x, buckets):
    if len(x) > max(buckets):
        raise ValueError("too long")
    padded = np.zeros(max(buckets), np.float32)
    padded[: len(x)] = x
    return float(_masked(padded, len(x)))


@decoy(
    "explain_miss",
    caught_by=["test_no_miss_no_explanation"],
    why="switches explanations off afterwards instead of restoring the previous setting",
)
def explain_resets_to_false(f, first_args, second_args):
    jax.config.update("jax_explain_cache_misses", True)
    try:
        messages = _second_call_messages(f, first_args, second_args)
    finally:
        jax.config.update("jax_explain_cache_misses", False)
    return [m for m in messages if "CACHE MISS" in m]


# ---- decoys by category: names instead of opcodes, order and structure, related quantities ----


@decoy(
    "conditionals",
    caught_by=["test_conditionals_match_xla", "test_conditionals_in_module_order"],
    why="hard-codes the index type 's32' (stablehlo.if gives a pred index)",
)
def conditionals_always_s32(hlo_text):
    return [
        ("s32", len(i.called_computations))
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "conditional"
    ]


@decoy(
    "conditionals",
    caught_by=["test_conditionals_in_module_order"],
    why="sorts the results instead of keeping module order",
)
def conditionals_sorted(hlo_text):
    return sorted(
        (c[i.operands[0]].shape_info.dtype, len(i.called_computations))
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "conditional"
    )


@decoy(
    "conditionals",
    caught_by=["test_conditionals_match_xla", "test_conditionals_in_module_order"],
    why="deduplicates: two conds of the same kind are reported once",
)
def conditionals_unique(hlo_text):
    found = []
    for c in parse_hlo(hlo_text):
        for i in c:
            if i.opcode != "conditional":
                continue
            item = (c[i.operands[0]].shape_info.dtype, len(i.called_computations))
            if item not in found:
                found.append(item)
    return found


@decoy(
    "conditionals",
    caught_by=["test_conditionals_match_xla", "test_conditionals_in_module_order"],
    why="walks ENTRY and the computations it calls through to_apply, not branch bodies",
)
def conditionals_through_calls_only(hlo_text):
    module = parse_hlo(hlo_text)
    found, todo, seen = [], [module.entry.name], set()
    while todo:
        c = module[todo.pop(0)]
        if c.name in seen:
            continue
        seen.add(c.name)
        for i in c:
            if i.opcode == "conditional":
                found.append((c[i.operands[0]].shape_info.dtype, len(i.called_computations)))
            if i.opcode in ("call", "while"):
                todo.extend(i.called_computations)
    return found


@decoy(
    "while_loops",
    caught_by=["test_while_loops_match_xla"],
    why="counts instructions whose NAME mentions while (parameters are named while.N)",
)
def whiles_by_name(hlo_text):
    return sum("while" in i.name for c in parse_hlo(hlo_text) for i in c)


@decoy(
    "while_loops",
    caught_by=["test_while_loops_match_xla"],
    why="counts computations named like the CPU backend's while wrappers",
)
def whiles_by_wrapper_name(hlo_text):
    return sum(
        c.name.endswith("_computation") and c.name.startswith("while") for c in parse_hlo(hlo_text)
    )


@decoy(
    "while_loops",
    caught_by=["test_while_loops_match_xla"],
    why="looks in ENTRY and the computations ENTRY calls, one level deep",
)
def whiles_one_call_deep(hlo_text):
    module = parse_hlo(hlo_text)
    computations = [module.entry] + [module[n] for i in module.entry for n in i.called_computations]
    return sum(i.opcode == "while" for c in computations for i in c)


@decoy(
    "while_loops",
    caught_by=["test_while_loops_match_xla", "test_while_loops_under_renaming_and_reordering"],
    why="walks from ENTRY through called computations but follows only body= of a while, never "
    "condition=: misses a while inside a while's condition (while_in_condition)",
)
def whiles_bodies_not_conditions(hlo_text):
    module = parse_hlo(hlo_text)
    count, seen, todo = 0, set(), [module.entry.name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for i in module[name]:
            if i.opcode == "while":
                count += 1
                todo.append((i.attribute("body") or "").lstrip("%"))
            else:
                todo.extend(i.called_computations)
    return count


@decoy(
    "loop_primitives",
    caught_by=["test_loop_primitives_bank"],
    why="breadth first: the loops of a level before those nested in them",
)
def loops_breadth_first(jaxpr):
    found, level = [], [jaxpr]
    while level:
        following = []
        for j in level:
            for eqn in j.eqns:
                if eqn.primitive.name in ("scan", "while"):
                    found.append(eqn.primitive.name)
                for param in eqn.params.values():
                    for sub in param if isinstance(param, (tuple, list)) else (param,):
                        if hasattr(sub, "eqns"):
                            following.append(sub)
        level = following
    return found


@decoy(
    "loop_primitives",
    caught_by=["test_loop_primitives_bank"],
    why="inner loops before the loop that holds them (post-order)",
)
def loops_post_order(jaxpr):
    found = []
    for eqn in jaxpr.eqns:
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(sub, "eqns"):
                    found += loops_post_order(sub)
        if eqn.primitive.name in ("scan", "while"):
            found.append(eqn.primitive.name)
    return found


@decoy(
    "loop_primitives",
    caught_by=["test_loop_primitives_bank", "test_loop_counts_match_the_primitive_census"],
    why="recurses only into the params it knows (jaxpr, body_jaxpr, branches)",
)
def loops_known_params(jaxpr):
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while"):
            found.append(eqn.primitive.name)
        for key in ("jaxpr", "body_jaxpr", "branches"):
            param = eqn.params.get(key)
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if hasattr(sub, "eqns"):
                    found += loops_known_params(sub)
    return found


@decoy(
    "loop_primitives",
    caught_by=["test_loop_primitives_bank", "test_loop_counts_match_the_primitive_census"],
    why="reports each kind of loop once",
)
def loops_unique(jaxpr):
    found = []
    for name in (e.primitive.name for e in iter_eqns(jaxpr)):
        if name in ("scan", "while") and name not in found:
            found.append(name)
    return found


@decoy(
    "count_traces",
    caught_by=["test_traces_are_not_compiles"],
    why="counts backend compiles, not traces",
)
def traces_as_compiles(f, static_argnums, calls):
    jitted = jax.jit(f, static_argnums=static_argnums)
    with _counting(lambda event: event == "/jax/core/compile/backend_compile_duration") as c:
        for args in calls:
            jitted(*args)
    return c.count


@decoy(
    "count_traces",
    caught_by=["test_traces_are_not_compiles"],
    why="reads the jit cache size, which also keys on devices",
)
def traces_cache_size(f, static_argnums, calls):
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    # The C++ jit object has _cache_size; the JitWrapped protocol in JAX's types omits it.
    return jitted._cache_size()  # pyright: ignore[reportAttributeAccessIssue]


@decoy(
    "count_traces",
    caught_by=["test_static_values_that_hash_alike"],
    why="predicts traces from the hashes of the static values and the shapes",
)
def traces_by_hash(f, static_argnums, calls):
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return len(
        {
            tuple(hash(a) if i in static_argnums else np.shape(a) for i, a in enumerate(args))
            for args in calls
        }
    )


@decoy(
    "count_traces",
    caught_by=["test_dynamic_arguments_trace_per_type"],
    why="predicts traces from static values and shapes, ignoring types and weak types",
)
def traces_by_value_and_shape(f, static_argnums, calls):
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return len(
        {
            tuple(a if i in static_argnums else np.shape(a) for i, a in enumerate(args))
            for args in calls
        }
    )


@decoy(
    "compile_counter",
    caught_by=["test_tracing_and_lowering_are_not_compiles"],
    why="matches every event whose name mentions compile (/jax/core/compile/...)",
)
def counter_compile_substring():
    return _counting(lambda event: "compile" in event)


@decoy(
    "compile_counter",
    caught_by=["test_tracing_and_lowering_are_not_compiles"],
    why="counts lowerings to MLIR: lower() without compile counts, a pre-lowered compile not",
)
def counter_lowerings():
    return _counting(lambda event: event == "/jax/core/compile/jaxpr_to_mlir_module_duration")


class _SharedCount:
    count = 0  # one count for every counter


@decoy(
    "compile_counter",
    caught_by=["test_nested_counters_and_live_counts"],
    why="every counter shares one class-level count",
)
@contextlib.contextmanager
def counter_shared():
    counted = _SharedCount()
    _SharedCount.count = 0

    def listener(event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            _SharedCount.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counted
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@decoy(
    "compile_counter",
    caught_by=["test_nested_counters_and_live_counts"],
    why="clears every event listener on exit, other people's too",
)
@contextlib.contextmanager
def counter_clears_all():
    counted = CompileCount()

    def listener(event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counted.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counted
    finally:
        jax.monitoring.clear_event_listeners()


@decoy(
    "compile_counter",
    caught_by=["test_counter_stops_when_the_block_raises"],
    why="unregisters after the yield without a finally: an exception leaves it listening",
)
@contextlib.contextmanager
def counter_no_finally():
    counted = CompileCount()

    def listener(event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counted.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield counted
    jax.monitoring.unregister_event_duration_listener(listener)


@decoy(
    "compile_counter",
    caught_by=["test_nested_counters_and_live_counts"],
    why="fills in the count only when the block exits",
)
@contextlib.contextmanager
def counter_at_exit():
    counted = CompileCount()
    events = []

    def listener(event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counted
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        counted.count = len(events)


@decoy(
    "bucketed_mean",
    caught_by=["test_smallest_bucket_of_an_unsorted_tuple"],
    why="takes the first bucket that fits in the order given, not the smallest",
)
def mean_first_fit(x, buckets):
    size = next((b for b in buckets if b >= len(x)), None)
    if size is None:
        raise ValueError("too long")
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return float(_masked(padded, len(x)))


@decoy(
    "bucketed_mean",
    caught_by=["test_smallest_bucket_of_an_unsorted_tuple"],
    why="needs a bucket strictly larger than the length",
)
def mean_strictly_larger(x, buckets):
    size = min((b for b in buckets if b > len(x)), default=max(buckets))
    if len(x) > max(buckets):
        raise ValueError("too long")
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return float(_masked(padded, len(x)))


@decoy(
    "bucketed_mean",
    caught_by=["test_smallest_bucket_of_an_unsorted_tuple"],
    why="pads to the next power of two whatever the buckets say",
)
def mean_power_of_two(x, buckets):
    if len(x) > max(buckets):
        raise ValueError("too long")
    size = 1 << max(len(x) - 1, 0).bit_length()
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return float(_masked(padded, len(x)))


@decoy(
    "bucketed_mean",
    caught_by=["test_smallest_bucket_of_an_unsorted_tuple"],
    why="treats the last bucket as the largest",
)
def mean_last_is_largest(x, buckets):
    if len(x) > buckets[-1]:
        raise ValueError("too long")
    return float(_masked(_pad(x, buckets), len(x)))


@decoy(
    "explain_miss",
    caught_by=["test_only_explanations_are_returned"],
    why="returns every jax log record of the second call, not only the explanations",
)
def explain_unfiltered(f, first_args, second_args):
    with jax.explain_cache_misses(True):
        return _second_call_messages(f, first_args, second_args)


@decoy(
    "explain_miss",
    caught_by=["test_explains_a_dtype_miss", "test_explains_a_pytree_miss"],
    why="keeps only the first line of each explanation (the argument is further down)",
)
def explain_first_lines(f, first_args, second_args):
    with jax.explain_cache_misses(True):
        messages = _second_call_messages(f, first_args, second_args)
    return [m.splitlines()[0] for m in messages if "CACHE MISS" in m]


# ---- accepted variants: correct answers spelled differently -----------------------------------


@decoy(
    "conditionals",
    caught_by=["test_conditionals_under_renaming_and_reordering"],
    why="orders computations by a post-order walk from ENTRY (the order XLA prints), not as "
    "the text lists them",
)
def conditionals_post_order(hlo_text):
    module = parse_hlo(hlo_text)
    by_name = {c.name: c for c in module}
    order: list[str] = []

    def visit(name):
        if name in order or name not in by_name:
            return
        order.append(name)  # mark; moved to the end once its callees are placed
        for i in by_name[name]:
            for called in i.called_computations:
                visit(called)
        order.remove(name)
        order.append(name)

    visit(module.entry.name)
    return [
        (by_name[c][i.operands[0]].shape_info.dtype, len(i.called_computations))
        for c in order
        for i in by_name[c]
        if i.opcode == "conditional"
    ]


@accepted("conditionals", why="branch count as operands minus the index operand")
def conditionals_operands_minus_one(hlo_text):
    return [
        (c[i.operands[0]].shape_info.dtype, len(i.operands) - 1)
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "conditional"
    ]


@accepted("while_loops", why="a Counter of opcodes over every computation")
def whiles_by_census(hlo_text):
    from collections import Counter

    return Counter(i.opcode for c in parse_hlo(hlo_text) for i in c)["while"]


@accepted("loop_primitives", why="filters xla_inspect's depth-first iter_eqns")
def loops_via_iter_eqns(jaxpr):
    return [e.primitive.name for e in iter_eqns(jaxpr) if e.primitive.name in ("scan", "while")]


@accepted("loop_primitives", why="an explicit stack instead of recursion")
def loops_with_a_stack(jaxpr):
    found, stack = [], [iter(jaxpr.eqns)]
    while stack:
        eqn = next(stack[-1], None)
        if eqn is None:
            stack.pop()
            continue
        if eqn.primitive.name in ("scan", "while"):
            found.append(eqn.primitive.name)
        subs = [
            s
            for p in eqn.params.values()
            for s in (p if isinstance(p, (tuple, list)) else (p,))
            if hasattr(s, "eqns")
        ]
        for sub in reversed(subs):
            stack.append(iter(sub.eqns))
    return found


@accepted("count_traces", why="counts with a list the wrapper appends to")
def traces_with_a_list(f, static_argnums, calls):
    seen = []

    def wrapper(*args):
        seen.append(args)
        return f(*args)

    jitted = jax.jit(wrapper, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return len(seen)


class _CounterCM:
    def __enter__(self):
        self.counted = CompileCount()
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self.counted

    def _listen(self, event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            self.counted.count += 1

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._listen)
        return False


@accepted("compile_counter", why="a class-based context manager instead of a generator")
def counter_class_based():
    return _CounterCM()


@jax.jit
def _sum_over(padded, length):
    return jnp.sum(padded) / length


@jax.jit
def _nonzero_mean(padded):
    return jnp.sum(padded) / jnp.count_nonzero(padded)


@decoy(
    "bucketed_mean",
    caught_by=["test_bucketed_mean_on_fresh_buckets_and_lengths"],
    why="pads with zeros and divides by the count of nonzero elements: zeros in x are dropped",
)
def mean_over_nonzero(x, buckets):
    size = min((b for b in buckets if b >= len(x)), default=None)
    if size is None:
        raise ValueError(f"length {len(x)} exceeds every bucket {buckets}")
    padded = np.zeros(size, np.float32)
    padded[: len(x)] = x
    return float(_nonzero_mean(padded))


@accepted("bucketed_mean", why="zero padding needs no mask: sum / true length")
def mean_zero_padding(x, buckets):
    return float(_sum_over(_pad(x, buckets), len(x)))


class _CollectMisses(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        if record.getMessage().startswith("TRACING CACHE MISS"):
            self.messages.append(record.getMessage())


@accepted("explain_miss", why="sets and restores the config flag by hand; handler on the root")
def explain_root_handler(f, first_args, second_args):
    before = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        jitted = jax.jit(f)
        jitted(*first_args)
        handler = _CollectMisses()
        logging.getLogger().addHandler(handler)
        try:
            jitted(*second_args)
        finally:
            logging.getLogger().removeHandler(handler)
    finally:
        jax.config.update("jax_explain_cache_misses", before)
    return handler.messages


@decoy(
    "conditionals",
    caught_by=["test_conditionals_match_xla"],
    why="counts distinct branch computations: a switch whose cases share one undercounts",
)
def conditionals_distinct_branches(hlo_text):
    return [
        (c[i.operands[0]].shape_info.dtype, len(set(i.called_computations)))
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "conditional"
    ]


# ---- predict_while_loops -------------------------------------------------------------------------
# Each decoy is a whole rule with one misconception (or a table), asked one program at a time.

_OLD_WHILES = {  # the task's first fixed table, by the programs' descriptions
    "[fori(5, affine)]": 1,
    "[fori_traced(3, affine)]": 1,
    "[fori(5, unroll=True, affine)]": 0,
    "[fori(6, unroll=2, affine)]": 1,
    "[fori(1, affine)]": 0,
    "[while(7, affine)]": 1,
    "[scan(4, affine)]": 1,
    "[fori(3, affine, body [fori(4, affine)])]": 2,
    "[python_for(5, affine)]": 0,
    "[map(3, affine)]": 1,
    "[fori(5, affine)] under vmap": 1,
    "[fori(3, affine); fori(4, affine)]": 2,
    "[fori(4, affine)] under cond": 1,
    "[cumsum]": 0,
    "[fori(5, affine)] under grad": 1,
    "[fori(5, tanh)] under grad": 2,
}


def _kept_and_copies(loop, full_unroll_rule=True):
    if loop.kind == "cumsum":
        return 0, 0
    if loop.kind == "fori_traced":
        return 1, 1
    if loop.kind == "python_for":
        return 0, loop.trips
    unroll = loop.trips if loop.unroll is True else loop.unroll
    trips, remainder = divmod(loop.trips, unroll) if unroll else (0, loop.trips)
    if full_unroll_rule and unroll != 1 and trips == 1 and remainder == 0:
        trips, remainder = 0, loop.trips
    return int(trips >= 2), (unroll if trips else 0) + remainder


def _whiles(loop) -> int:
    kept, copies = _kept_and_copies(loop)
    return kept + copies * sum(_whiles(inner) for inner in loop.body)


def _grad_whiles(loops, forward_needed) -> int:
    total = 0
    for number, loop in enumerate(loops):
        kept, _ = _kept_and_copies(loop)
        total += kept * (1 + forward_needed(loops, number))
    return total


def _tanh_from(loops, number) -> bool:
    return any(m.step == "tanh" and m.kind != "cumsum" for m in loops[number:])


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_on_fresh_programs"],
    why="memorised the old table: right on the fixed programs, 1 for anything else",
)
def whiles_memorised_table(program):
    return _OLD_WHILES.get(program.describe(), 1)


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_on_fresh_programs"],
    why="right on the old cases only: a loop in a body counts once, however many copies of the "
    "body an unroll or a Python for makes",
)
def whiles_body_counted_once(program):
    def count(loop):
        kept, copies = _kept_and_copies(loop)
        return kept + (copies > 0) * sum(count(inner) for inner in loop.body)

    if program.wrap == "grad":
        return _grad_whiles(program.loops, _tanh_from)
    return sum(count(loop) for loop in program.loops)


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_on_fresh_programs"],
    why="right on the old cases only: a loop survives whenever it has 2 trips or more and is not "
    "unrolled with True, whatever a numeric unroll leaves of it",
)
def whiles_numeric_unroll_keeps_the_loop(program):
    def count(loop):
        kept, copies = _kept_and_copies(loop)
        if loop.kind in ("fori", "scan", "while", "map") and loop.unroll is not True:
            kept = int(loop.trips >= 2)
        return kept + copies * sum(count(inner) for inner in loop.body)

    if program.wrap == "grad":
        return _grad_whiles(program.loops, _tanh_from)
    return sum(count(loop) for loop in program.loops)


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_on_fresh_programs"],
    why="right on the old cases only: under grad a forward loop stays only when its own step is "
    "tanh, though a later tanh loop needs its output too",
)
def whiles_grad_own_step_only(program):
    if program.wrap == "grad":
        return _grad_whiles(program.loops, lambda loops, n: loops[n].step == "tanh")
    return sum(_whiles(loop) for loop in program.loops)


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_on_the_bank"],
    why="every loop the source shows is a while, Python for included, whatever it unrolls to",
)
def whiles_from_the_source(program):
    def count(loop):
        return (loop.kind != "cumsum") + sum(count(inner) for inner in loop.body)

    return sum(count(loop) * (2 if program.wrap == "grad" else 1) for loop in program.loops)


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_on_the_bank"],
    why="vmap runs the loop once per row: two rows, two loops",
)
def whiles_vmap_per_row(program):
    rows = 2 if program.wrap == "vmap" else 1
    if program.wrap == "grad":
        return _grad_whiles(program.loops, _tanh_from)
    return rows * sum(_whiles(loop) for loop in program.loops)


@decoy(
    "predict_while_loops",
    caught_by=["test_predict_while_loops_does_not_compile"],
    why="measures instead of predicting: builds and compiles the program it is given",
)
def whiles_measured(program):
    from katas.phase7.predict_programs import build, loop_arguments

    text = jax.jit(build(program)).lower(*loop_arguments()).compile().as_text()
    return sum(i.opcode == "while" for c in parse_hlo(str(text)) for i in c)


@accepted("predict_while_loops", why="the same rule, counting the steps one by one")
def whiles_step_by_step(program):
    def count(loop):
        if loop.kind == "cumsum":
            return 0
        if loop.kind == "fori_traced":
            return 1 + sum(count(inner) for inner in loop.body)
        steps = loop.trips
        unroll = 1 if loop.kind in ("while", "map", "python_for") else loop.unroll
        unroll = max(steps, 1) if unroll is True or loop.kind == "python_for" else unroll
        looped = 0 if unroll >= steps and unroll > 1 else steps // unroll
        inline = steps - looped * unroll + (unroll if looped else 0)
        return (looped > 1) + inline * sum(count(inner) for inner in loop.body)

    if program.wrap == "grad":
        loops = program.loops
        return sum((count(loop) > 0) * (1 + _tanh_from(loops, n)) for n, loop in enumerate(loops))
    return sum(count(loop) for loop in program.loops)


# ---- predict_compiles ----------------------------------------------------------------------------

_OLD_COMPILES = {  # the task's first fixed table, by the calls' descriptions
    "same shape twice": 1,
    "f32[3] then f32[4]": 2,
    "Python float 2.0 then np.float32(2.0)": 2,
    "Python int 3 then np.int32(3)": 2,
    "static argument 1, 1, 2": 2,
    "static argument 2, 2.0, True": 3,
    "fori_loop bound 3 then 4, traced": 1,
    "fori_loop bound 3 then 4, static": 2,
    "same shapes committed to 3 devices": 3,
    "lower and compile twice by hand": 1,
    "lower only": 0,
    "trace only": 0,
    "a fresh lambda jitted on each of 3 calls": 3,
    "one function, jax.jit applied on each of 3 calls": 1,
}


def _abstract(value, narrow=True):
    if isinstance(value, bool):
        return ((), "bool", False)
    if isinstance(value, int):
        return ((), "int32", True)
    if isinstance(value, float):
        return ((), "float32", True)
    name = np.dtype(value.dtype).name
    if narrow:
        name = {"float64": "float32", "int64": "int32"}.get(name, name)
    return (np.shape(value), name, False)


def _compiles(calls, key, compiling=("call", "compile")) -> int:
    seen = set()
    for number, call in enumerate(calls):
        if call.api in compiling:
            seen.add(key(number, call))
    return len(seen)


def _key(number, call, device=None, narrow=True, n_key=None):
    function = (call.function, number) if call.function == "lambda" else call.function
    n = (type(call.n), call.n) if call.static else _abstract(call.n)
    if n_key is not None:
        n = n_key(call)
    where = call.device if device is None else device(call)
    return (function, call.static, _abstract(call.x, narrow), where, n)


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_fresh_patterns"],
    why="memorised the old table: recognises the fixed scenarios, one compile per call otherwise",
)
def compiles_memorised_table(calls):
    from katas.phase7.predict_programs import COMPILE_SCENARIOS

    for name, scenario in COMPILE_SCENARIOS.items():
        if [c.describe() for c in scenario] == [c.describe() for c in calls]:
            return _OLD_COMPILES[name]
    return sum(c.api == "call" for c in calls)


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_fresh_patterns"],
    why="right on the old cases only: an uncommitted array sits on device 0, so it shares the "
    "compile of one committed there",
)
def compiles_uncommitted_is_device_0(calls):
    return _compiles(calls, lambda n, c: _key(n, c, device=lambda c: c.device or 0))


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_fresh_patterns"],
    why="right on the old cases only: lower().compile() and a call keep separate caches",
)
def compiles_aot_cache_apart(calls):
    return _compiles(calls, lambda n, c: (c.api, *_key(n, c)))


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_the_bank"],
    why="a compile is a trace: the same types on three devices compile once",
)
def compiles_are_traces(calls):
    return _compiles(calls, lambda n, c: _key(n, c, device=lambda c: None))


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_the_bank"],
    why="static values that compare equal (2 == 2.0 == True) share one cache entry",
)
def compiles_static_by_equality(calls):
    return _compiles(
        calls, lambda n, c: _key(n, c, n_key=lambda c: c.n if c.static else _abstract(c.n))
    )


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_the_bank"],
    why="the cache lives in the jax.jit wrapper: wrapping the same function again recompiles",
)
def compiles_per_wrapper(calls):
    return _compiles(calls, lambda n, c: (n if c.jit == "new" else "shared", *_key(n, c)))


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_on_the_bank"],
    why="weak types ignored: a Python scalar and a NumPy scalar of the same dtype share a compile",
)
def compiles_without_weak_types(calls):
    def key(n, c):
        function, static, (shape, dtype, _), where, n_key = _key(n, c)
        return function, static, shape, dtype, where, n_key

    return _compiles(calls, key)


@decoy(
    "predict_compiles",
    caught_by=["test_predict_compiles_does_not_compile"],
    why="measures instead of predicting: runs the calls with a listener",
)
def compiles_measured(calls):
    from katas.phase7.predict_programs import run_calls

    events: list[float] = []

    def listener(event, duration_secs, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        jax.clear_caches()
        run_calls(calls)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return len(events)


@accepted("predict_compiles", why="the same rule, keyed by a string per call")
def compiles_keyed_by_text(calls):
    keys = set()
    for number, call in enumerate(calls):
        if call.api in ("trace", "lower"):
            continue
        x = call.x
        dtype = str(np.asarray(x).dtype).replace("64", "32")
        weak = type(x) in (int, float)
        n = f"{type(call.n).__name__}={call.n!r}" if call.static else repr(_abstract(call.n))
        name = f"lambda#{number}" if call.function == "lambda" else call.function
        keys.add(f"{name}|{call.static}|{np.shape(x)}|{dtype}|{weak}|{call.device}|{n}")
    return len(keys)
