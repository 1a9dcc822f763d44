"""Plausible wrong answers to phase 6; each must be caught by the tests it names."""

import math
import time
from dataclasses import dataclass

import jax

from kata_harness.decoys import decoy
from xla_inspect.parse import parse_hlo


@dataclass(frozen=True)
class Timing:
    eager_s: float
    jit_s: float
    repeats: int
    ratio: float


def _read(cost):
    return {"flops": float(cost.get("flops", 0.0)),
            "transcendentals": float(cost.get("transcendentals", 0.0)),
            "bytes_accessed": float(cost.get("bytes accessed", 0.0))}


@decoy("cost_of", caught_by=["test_cost_of_reads_the_optimized_program"],
       why="reads the Lowered (unoptimized) estimate, which counts unfused intermediates")
def cost_before_fusion(f, *args):
    return _read(jax.jit(f).lower(*args).cost_analysis())


@decoy("cost_of", caught_by=["test_cost_of_mlp_counts_every_flop",
                             "test_cost_of_reads_the_optimized_program"],
       why="indexes the keys directly: a zero-valued key is absent")
def cost_indexed(f, *args):
    cost = jax.jit(f).lower(*args).compile().cost_analysis()
    return {"flops": cost["flops"], "transcendentals": cost["transcendentals"],
            "bytes_accessed": cost["bytes accessed"]}


def _bytes(f, *args):
    return float(jax.jit(f).lower(*args).compile().cost_analysis().get("bytes accessed", 0.0))


@decoy("fusion_traffic", caught_by=["test_fusion_cuts_memory_traffic"],
       why="'fused' sums the steps again")
def traffic_fused_is_sum(steps, x):
    total, value = 0.0, x
    for step in steps:
        total += _bytes(step, value)
        value = jax.eval_shape(step, value)
    return {"op_by_op": total, "fused": total}


@decoy("fusion_traffic", caught_by=["test_op_by_op_follows_each_steps_shape"],
       why="costs every step on the original input")
def traffic_no_chaining(steps, x):
    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": sum(_bytes(step, x) for step in steps), "fused": _bytes(fused, x)}


def _report(stats):
    return {"argument": stats.argument_size_in_bytes, "output": stats.output_size_in_bytes,
            "temp": stats.temp_size_in_bytes, "alias": stats.alias_size_in_bytes}


@decoy("memory_report", caught_by=["test_donation_shows_as_alias_bytes"],
       why="forgets to pass donate_argnums to jax.jit")
def report_without_donation(f, *args, donate_argnums=()):
    return _report(jax.jit(f).lower(*args).compile().memory_analysis())


@decoy("memory_report",
       caught_by=["test_memory_report_sizes", "test_donation_shows_as_alias_bytes"],
       why="argument and output swapped")
def report_swapped(f, *args, donate_argnums=()):
    stats = _report(jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile()
                    .memory_analysis())
    stats["argument"], stats["output"] = stats["output"], stats["argument"]
    return stats


@decoy("aliased_parameters", caught_by=["test_donated_state_aliases_outputs"],
       why="keys by output index instead of parameter number")
def aliases_by_output(hlo_text):
    header = parse_hlo(hlo_text).attributes.get("input_output_alias")
    if not header:
        return {}
    pieces = header.strip()[1:-1].split("),")
    found = {}
    for piece in pieces:
        output, _, target = piece.partition(":")
        index = output.strip()[1:-1]
        found[int(index) if index else 0] = (int(target.strip().lstrip("(").split(",")[0]),)
    return found


@decoy("aliased_parameters", caught_by=["test_donated_state_aliases_outputs"],
       why="reads only the first alias")
def aliases_first_only(hlo_text):
    header = parse_hlo(hlo_text).attributes.get("input_output_alias")
    if not header:
        return {}
    output, _, target = header.strip()[1:-1].partition(":")
    index = output.strip()[1:-1]
    parameter = int(target.strip().lstrip("(").split(",")[0])
    return {parameter: tuple(int(i) for i in index.split(",")) if index else ()}


_SIZES = {"f32": 4, "s32": 4, "pred": 1}


def _size(instruction):
    shape = instruction.shape_info
    return math.prod(shape.dims) * _SIZES.get(shape.dtype, 4) if shape.dtype else 0


@decoy("naive_temp_bytes", caught_by=["test_naive_temp_counts_entry_intermediates"],
       why="counts the ROOT (the output) as an intermediate")
def naive_with_root(hlo_text):
    return sum(_size(i) for i in parse_hlo(hlo_text).entry if i.opcode != "parameter")


@decoy("naive_temp_bytes", caught_by=["test_naive_temp_counts_entry_intermediates"],
       why="counts the parameters (the arguments) as intermediates")
def naive_with_parameters(hlo_text):
    return sum(_size(i) for i in parse_hlo(hlo_text).entry if not i.is_root)


@decoy("eager_vs_jit", caught_by=["test_timing_runs_eager_and_jit"],
       why="'eager' also calls the jitted function")
def timing_both_jitted(f, args, repeats):
    jitted = jax.jit(f)
    jitted(*args).block_until_ready()
    times = []
    for _ in range(2):
        start = time.perf_counter()
        for _ in range(repeats):
            jitted(*args).block_until_ready()
        times.append((time.perf_counter() - start) / repeats)
    return Timing(times[0], times[1], repeats, times[0] / times[1])


@decoy("eager_vs_jit", caught_by=["test_timing_blocks_on_every_result"],
       why="never blocks: times only the dispatch")
def timing_unblocked(f, args, repeats):
    jitted = jax.jit(f)
    f(*args)
    jitted(*args)
    start = time.perf_counter()
    for _ in range(repeats):
        f(*args)
    eager = (time.perf_counter() - start) / repeats
    start = time.perf_counter()
    for _ in range(repeats):
        jitted(*args)
    compiled = (time.perf_counter() - start) / repeats
    return Timing(eager, compiled, repeats, eager / compiled)


@decoy("eager_vs_jit", caught_by=["test_timing_is_a_sane_measurement",
                                  "test_timing_runs_eager_and_jit"],
       why="a fixed number of repeats, and the ratio upside down")
def timing_fixed_repeats(f, args, repeats):
    jitted = jax.jit(f)
    f(*args).block_until_ready()
    jitted(*args).block_until_ready()
    start = time.perf_counter()
    for _ in range(10):
        f(*args).block_until_ready()
    eager = (time.perf_counter() - start) / 10
    start = time.perf_counter()
    for _ in range(10):
        jitted(*args).block_until_ready()
    compiled = (time.perf_counter() - start) / 10
    return Timing(eager, compiled, 10, compiled / eager)


@decoy("fusion_traffic", caught_by=["test_op_by_op_follows_each_steps_shape"],
       why="'fused' from the rule of thumb 2 * x.nbytes instead of costing the composition")
def traffic_fused_by_formula(steps, x):
    total, value = 0.0, x
    for step in steps:
        total += _bytes(step, value)
        value = jax.eval_shape(step, value)
    return {"op_by_op": total, "fused": 2.0 * x.nbytes}


@decoy("naive_temp_bytes", caught_by=["test_naive_temp_skips_views_and_fused_bodies"],
       why="counts a bitcast (a view of a buffer) as a new intermediate")
def naive_with_bitcasts(hlo_text):
    return sum(_size(i) for i in parse_hlo(hlo_text).entry
               if not i.is_root and i.opcode != "parameter")


@decoy("naive_temp_bytes", caught_by=["test_naive_temp_skips_views_and_fused_bodies"],
       why="walks every computation: ops inside a fusion never get a buffer of their own")
def naive_all_computations(hlo_text):
    skip = {"parameter", "bitcast", "tuple", "get-tuple-element"}
    return sum(_size(i) for c in parse_hlo(hlo_text) for i in c
               if not i.is_root and i.opcode not in skip)


@decoy("eager_vs_jit", caught_by=["test_timing_leaves_warm_ups_off_the_clock"],
       why="no jit warm-up: the first timed jitted call traces and compiles")
def timing_compile_on_the_clock(f, args, repeats):
    jitted = jax.jit(f)
    f(*args).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        f(*args).block_until_ready()
    eager = (time.perf_counter() - start) / repeats
    start = time.perf_counter()
    for _ in range(repeats + 1):
        jitted(*args).block_until_ready()
    compiled = (time.perf_counter() - start) / (repeats + 1)
    return Timing(eager, compiled, repeats, eager / compiled)
