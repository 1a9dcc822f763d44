"""Plausible wrong answers to phase 7; each must be caught by the tests it names."""

import contextlib
import logging
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import decoy
from xla_inspect.jaxpr import iter_eqns
from xla_inspect.parse import parse_hlo

try:
    from kata_harness.decoys import accepted
except ImportError:  # the harness has not landed accepted variants yet: keep them as plain code
    def accepted(replaces, *, why):
        return lambda function: function


@decoy("conditionals", caught_by=["test_conditionals_match_xla", "test_conditionals_in_module_order"],
       why="looks only in ENTRY")
def conditionals_entry_only(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return [(entry.instruction(i.operands[0]).shape_info.dtype, len(i.called_computations))
            for i in entry if i.opcode == "conditional"]


@decoy("conditionals", caught_by=["test_conditionals_match_xla",
                                  "test_cond_and_switch_become_s32_conditionals"],
       why="counts the operands instead of the branches")
def conditionals_operand_count(hlo_text):
    return [(c.instruction(i.operands[0]).shape_info.dtype, len(i.operands))
            for c in parse_hlo(hlo_text) for i in c if i.opcode == "conditional"]


@decoy("while_loops", caught_by=["test_while_loops_match_xla",
                                 "test_loops_nested_unrolled_and_hidden",
                                 "test_cpu_wraps_while_in_a_call"],
       why="looks only in ENTRY")
def whiles_in_entry(hlo_text):
    return sum(i.opcode == "while" for i in parse_hlo(hlo_text).entry)


@decoy("while_loops", caught_by=["test_while_loops_match_xla",
                                 "test_loops_nested_unrolled_and_hidden"],
       why="answers 1 when any while exists, not how many")
def whiles_as_flag(hlo_text):
    return int(any(i.opcode == "while" for c in parse_hlo(hlo_text) for i in c))


@decoy("loop_primitives", caught_by=["test_loop_primitives_bank"], why="top level only")
def loops_top_level(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns if e.primitive.name in ("scan", "while")]


@decoy("loop_primitives", caught_by=["test_static_bounds_scan_dynamic_bounds_while",
                                    "test_loop_primitives_bank"],
       why="names every loop 'while'")
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


@decoy("count_traces", caught_by=["test_one_trace_per_static_value",
                                  "test_new_shapes_trace_again"],
       why="counts calls, not traces")
def traces_are_calls(f, static_argnums, calls):
    jitted = jax.jit(f, static_argnums=static_argnums)
    for args in calls:
        jitted(*args)
    return len(calls)


@decoy("count_traces", caught_by=["test_new_shapes_trace_again"],
       why="predicts one trace per static value, ignoring shapes")
def traces_per_static_value(f, static_argnums, calls):
    return len({tuple(args[i] for i in static_argnums) for args in calls})


@dataclass
class CompileCount:
    count: int = 0


@contextlib.contextmanager
def _counting(counts_event):
    """Count the monitoring events for which counts_event(name) is true, inside the block."""
    counted = CompileCount()

    def listener(event, duration, **kwargs):
        if counts_event(event):
            counted.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counted
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@decoy("compile_counter", caught_by=["test_compile_counter_counts_backend_compiles"],
       why="counts every monitoring event (tracing and lowering too)")
def counter_all_events():
    return _counting(lambda event: True)


@decoy("compile_counter", caught_by=["test_compile_counter_stops_at_exit"],
       why="never stops listening")
@contextlib.contextmanager
def counter_never_stops():
    counted = CompileCount()

    def listener(event, duration, **kwargs):
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


@decoy("bucketed_mean", caught_by=["test_bucketed_mean_is_correct"],
       why="averages the padding too")
def mean_unmasked(x, buckets):
    return float(_mean_all(_pad(x, buckets), len(x)))


@decoy("bucketed_mean", caught_by=["test_bucketing_bounds_compiles"],
       why="the length is a static argument: one compile per length")
def mean_static_length(x, buckets):
    return float(_masked_static(_pad(x, buckets), len(x)))


def _masked_static_impl(padded, length):
    return jnp.sum(padded[:length]) / length


_masked_static = jax.jit(_masked_static_impl, static_argnums=1)


@decoy("bucketed_mean", caught_by=["test_bucketing_bounds_compiles"],
       why="pads with jnp.pad eagerly: an eager pad compiles per length")
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


@decoy("explain_miss", caught_by=["test_no_miss_no_explanation"],
       why="collects the first call's 'never seen function' too")
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


@decoy("explain_miss", caught_by=["test_no_miss_no_explanation"],
       why="turns explanations on and leaves them on")
def explain_leaves_flag_on(f, first_args, second_args):
    jax.config.update("jax_explain_cache_misses", True)
    return _second_call_messages(f, first_args, second_args)


@decoy("explain_miss", caught_by=["test_explains_a_shape_miss", "test_explains_a_dtype_miss",
                                 "test_explains_a_weak_type_miss", "test_explains_a_pytree_miss"],
       why="never turns explanations on")
def explain_not_enabled(f, first_args, second_args):
    return _second_call_messages(f, first_args, second_args)


@decoy("compile_counter", caught_by=["test_compile_counter_counts_backend_compiles"],
       why="listens for the tracing event: a compile of an already-lowered program is missed")
def counter_traces():
    return _counting(lambda event: event == "/jax/core/compile/jaxpr_trace_duration")


@decoy("bucketed_mean", caught_by=["test_bucketing_bounds_compiles"],
       why="pads every input to the largest bucket: one compile, wasted work on short inputs")
def mean_largest_bucket(x, buckets):
    if len(x) > max(buckets):
        raise ValueError("too long")
    padded = np.zeros(max(buckets), np.float32)
    padded[: len(x)] = x
    return float(_masked(padded, len(x)))


@decoy("explain_miss", caught_by=["test_no_miss_no_explanation"],
       why="switches explanations off afterwards instead of restoring the previous setting")
def explain_resets_to_false(f, first_args, second_args):
    jax.config.update("jax_explain_cache_misses", True)
    try:
        messages = _second_call_messages(f, first_args, second_args)
    finally:
        jax.config.update("jax_explain_cache_misses", False)
    return [m for m in messages if "CACHE MISS" in m]
