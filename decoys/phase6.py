"""Plausible wrong answers to phase 6; each must be caught by the tests it names."""

import math
import re
import time
from dataclasses import dataclass

import jax
import numpy as np

from kata_harness.decoys import accepted, decoy
from xla_inspect.parse import parse_hlo


@dataclass(frozen=True)
class Timing:
    eager_s: float
    jit_s: float
    repeats: int
    ratio: float


def _read(cost):
    return {
        "flops": float(cost.get("flops", 0.0)),
        "transcendentals": float(cost.get("transcendentals", 0.0)),
        "bytes_accessed": float(cost.get("bytes accessed", 0.0)),
    }


@decoy(
    "cost_of",
    caught_by=[
        "test_cost_of_reads_the_optimized_program",
        "test_cost_of_matches_compiled_cost_analysis_on_a_bank",
    ],
    why="reads the Lowered (unoptimized) estimate, which counts unfused intermediates",
)
def cost_before_fusion(f, *args):
    return _read(jax.jit(f).lower(*args).cost_analysis())


@decoy(
    "cost_of",
    caught_by=[
        "test_cost_of_reads_the_optimized_program",
        "test_cost_of_matches_compiled_cost_analysis_on_a_bank",
    ],
    why="flops counts the transcendentals too",
)
def cost_flops_with_transcendentals(f, *args):
    cost = _read(jax.jit(f).lower(*args).compile().cost_analysis())
    cost["flops"] += cost["transcendentals"]
    return cost


@decoy(
    "cost_of",
    caught_by=["test_cost_of_matches_compiled_cost_analysis_on_a_bank"],
    why="converts every argument to float32 first: bf16, f16 and int8 traffic doubles",
)
def cost_of_float32_args(f, *args):
    args = jax.tree.map(lambda a: np.asarray(a, np.float32), args)
    return _read(jax.jit(f).lower(*args).compile().cost_analysis())


@accepted("cost_of", why="trace, lower and compile as separate stages; keys filled by a loop")
def cost_through_trace(f, *args):
    cost = jax.jit(f).trace(*args).lower().compile().cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    names = {
        "flops": "flops",
        "transcendentals": "transcendentals",
        "bytes_accessed": "bytes accessed",
    }
    return {mine: float(cost[xla]) if xla in cost else 0.0 for mine, xla in names.items()}


def _cost(stage: jax.stages.Lowered | jax.stages.Compiled):
    cost = stage.cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    return cost


def _bytes(f, *args):
    return float(_cost(jax.jit(f).lower(*args).compile()).get("bytes accessed", 0.0))


@decoy(
    "fusion_traffic",
    caught_by=["test_fusion_traffic_on_a_bank_of_step_lists"],
    why="costs every step on the original input",
)
def traffic_no_chaining(steps, x):
    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": sum(_bytes(step, x) for step in steps), "fused": _bytes(fused, x)}


def _report(stats):
    return {
        "argument": stats.argument_size_in_bytes,
        "output": stats.output_size_in_bytes,
        "temp": stats.temp_size_in_bytes,
        "alias": stats.alias_size_in_bytes,
    }


@decoy(
    "memory_report",
    caught_by=[
        "test_donation_shows_as_alias_bytes",
        "test_memory_report_matches_memory_analysis_on_a_bank",
    ],
    why="forgets to pass donate_argnums to jax.jit",
)
def report_without_donation(f, *args, donate_argnums=()):
    return _report(jax.jit(f).lower(*args).compile().memory_analysis())


@decoy(
    "memory_report",
    caught_by=[
        "test_memory_report_sizes",
        "test_donation_shows_as_alias_bytes",
        "test_memory_report_matches_memory_analysis_on_a_bank",
    ],
    why="argument and output swapped",
)
def report_swapped(f, *args, donate_argnums=()):
    stats = _report(
        jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    )
    stats["argument"], stats["output"] = stats["output"], stats["argument"]
    return stats


@decoy(
    "aliased_parameters",
    caught_by=[
        "test_donated_state_aliases_outputs",
        "test_aliases_read_parameter_numbers_and_output_indices",
        "test_aliases_of_a_handwritten_header",
    ],
    why="keys by output index instead of parameter number",
)
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


@decoy(
    "aliased_parameters",
    caught_by=[
        "test_donated_state_aliases_outputs",
        "test_aliases_read_parameter_numbers_and_output_indices",
        "test_aliases_of_a_handwritten_header",
    ],
    why="reads only the first alias",
)
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


@decoy(
    "naive_temp_bytes",
    caught_by=["test_naive_temp_counts_entry_intermediates"],
    why="counts the ROOT (the output) as an intermediate",
)
def naive_with_root(hlo_text):
    return sum(_size(i) for i in parse_hlo(hlo_text).entry if i.opcode != "parameter")


@decoy(
    "naive_temp_bytes",
    caught_by=["test_naive_temp_counts_entry_intermediates"],
    why="counts the parameters (the arguments) as intermediates",
)
def naive_with_parameters(hlo_text):
    return sum(_size(i) for i in parse_hlo(hlo_text).entry if not i.is_root)


@decoy(
    "eager_vs_jit",
    caught_by=["test_timing_runs_eager_and_jit"],
    why="'eager' also calls the jitted function",
)
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


@decoy(
    "eager_vs_jit",
    caught_by=["test_timing_blocks_on_every_result"],
    why="never blocks: times only the dispatch",
)
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


@decoy(
    "eager_vs_jit",
    caught_by=[
        "test_timing_is_a_sane_measurement",
        "test_timing_runs_eager_and_jit",
        "test_timing_reports_mean_seconds_per_call",
    ],
    why="a fixed number of repeats, and the ratio upside down",
)
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


@decoy(
    "fusion_traffic",
    caught_by=["test_fusion_traffic_on_a_bank_of_step_lists"],
    why="'fused' from the rule of thumb 2 * x.nbytes instead of costing the composition",
)
def traffic_fused_by_formula(steps, x):
    total, value = 0.0, x
    for step in steps:
        total += _bytes(step, value)
        value = jax.eval_shape(step, value)
    return {"op_by_op": total, "fused": 2.0 * x.nbytes}


@decoy(
    "naive_temp_bytes",
    caught_by=[
        "test_naive_temp_skips_views_and_fused_bodies",
        "test_naive_temp_of_handwritten_modules",
    ],
    why="counts a bitcast (a view of a buffer) as a new intermediate",
)
def naive_with_bitcasts(hlo_text):
    return sum(
        _size(i) for i in parse_hlo(hlo_text).entry if not i.is_root and i.opcode != "parameter"
    )


@decoy(
    "naive_temp_bytes",
    caught_by=[
        "test_naive_temp_skips_views_and_fused_bodies",
        "test_naive_temp_of_handwritten_modules",
    ],
    why="walks every computation: ops inside a fusion never get a buffer of their own",
)
def naive_all_computations(hlo_text):
    skip = {"parameter", "bitcast", "tuple", "get-tuple-element"}
    return sum(
        _size(i) for c in parse_hlo(hlo_text) for i in c if not i.is_root and i.opcode not in skip
    )


@decoy(
    "eager_vs_jit",
    caught_by=["test_timing_leaves_warm_ups_off_the_clock"],
    why="no jit warm-up: the first timed jitted call traces and compiles",
)
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


@decoy(
    "fusion_traffic",
    caught_by=["test_fusion_traffic_on_a_bank_of_step_lists"],
    why="advances the shape but keeps x's dtype: a step that casts is costed in the wrong dtype",
)
def traffic_keeps_dtype(steps, x):
    total, value = 0.0, jax.ShapeDtypeStruct(x.shape, x.dtype)
    for step in steps:
        total += _bytes(step, value)
        value = jax.ShapeDtypeStruct(jax.eval_shape(step, value).shape, x.dtype)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": total, "fused": _bytes(fused, x)}


@decoy(
    "fusion_traffic",
    caught_by=["test_fusion_traffic_on_a_bank_of_step_lists"],
    why="op by op from the Lowered (unfused) estimate of the whole chain",
)
def traffic_op_by_op_from_lowered(steps, x):
    def fused(v):
        for step in steps:
            v = step(v)
        return v

    lowered = jax.jit(fused).lower(x)
    return {
        "op_by_op": float(_cost(lowered).get("bytes accessed", 0.0)),
        "fused": float(_cost(lowered.compile()).get("bytes accessed", 0.0)),
    }


@accepted("fusion_traffic", why="advances by running each step for real instead of eval_shape")
def traffic_by_running_steps(steps, x):
    total, value = 0.0, x
    for step in steps:
        total += _bytes(step, value)
        value = jax.jit(step)(value)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": total, "fused": _bytes(fused, x)}


@decoy(
    "memory_report",
    caught_by=["test_memory_report_matches_memory_analysis_on_a_bank"],
    why="argument, output and alias sizes by formula from the arrays (nbytes), temp from XLA",
)
def report_by_formula(f, *args, donate_argnums=()):
    jitted = jax.jit(f, donate_argnums=donate_argnums)
    stats = jitted.lower(*args).compile().memory_analysis()
    assert stats is not None, "this backend has no memory analysis"

    def nbytes(tree):
        return sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(tree))

    out = jax.eval_shape(f, *args)
    return {
        "argument": nbytes(args),
        "output": sum(math.prod(o.shape) * o.dtype.itemsize for o in jax.tree.leaves(out)),
        "temp": int(stats.temp_size_in_bytes),
        "alias": sum(nbytes(args[i]) for i in donate_argnums),
    }


@accepted("memory_report", why="fields read by name in a loop, through jit(...).trace")
def report_through_trace(f, *args, donate_argnums=()):
    stats = (
        jax.jit(f, donate_argnums=donate_argnums).trace(*args).lower().compile().memory_analysis()
    )
    return {
        key: int(getattr(stats, f"{key}_size_in_bytes"))
        for key in ("argument", "output", "temp", "alias")
    }


def _alias_entries(hlo_text):
    """(output index text, parameter, parameter index text) per header entry, in text order."""
    header = parse_hlo(hlo_text).attributes.get("input_output_alias") or ""
    return re.findall(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", header)


def _index(text):
    return tuple(int(p) for p in text.split(",") if p.strip())


@decoy(
    "aliased_parameters",
    caught_by=["test_aliases_of_fresh_headers"],
    why="reads an output index of at most two numbers (a regex for {a} and {a, b}): an output "
    "nested two tuples deep, {0, 0, 1}, loses its last number",
)
def aliases_two_deep_at_most(hlo_text):
    header = parse_hlo(hlo_text).attributes.get("input_output_alias") or ""
    found = re.findall(r"\{(\d*)(?:,\s*(\d+))?[^{}]*\}\s*:\s*\(\s*(\d+)", header)
    return {int(p): tuple(int(i) for i in (a, b) if i) for a, b, p in found}


@decoy(
    "aliased_parameters",
    caught_by=[
        "test_aliases_read_parameter_numbers_and_output_indices",
        "test_aliases_of_a_handwritten_header",
    ],
    why="output index from the entry's position in the header, not from the {...} it states",
)
def aliases_by_position(hlo_text):
    entries = _alias_entries(hlo_text)
    if len(entries) == 1 and not _index(entries[0][0]):
        return {int(entries[0][1]): ()}
    return {int(param): (i,) for i, (_, param, _) in enumerate(entries)}


@decoy(
    "aliased_parameters",
    caught_by=[
        "test_donated_state_aliases_outputs",
        "test_aliases_read_parameter_numbers_and_output_indices",
        "test_aliases_of_a_handwritten_header",
    ],
    why="range(count): parameters numbered 0.. in header order instead of as stated",
)
def aliases_range_of_count(hlo_text):
    entries = _alias_entries(hlo_text)
    return {i: _index(out) for i, (out, _, _) in enumerate(entries)}


@decoy(
    "aliased_parameters",
    caught_by=[
        "test_donated_state_aliases_outputs",
        "test_aliases_read_parameter_numbers_and_output_indices",
        "test_aliases_of_a_handwritten_header",
    ],
    why="gives the parameter index (the {} inside the parentheses) as the output index",
)
def aliases_parameter_index(hlo_text):
    return {int(param): _index(param_index) for _, param, param_index in _alias_entries(hlo_text)}


@accepted("aliased_parameters", why="a regular expression over the header instead of a split")
def aliases_by_regex(hlo_text):
    return {int(param): _index(out) for out, param, _ in _alias_entries(hlo_text)}


def _entry(hlo_text):
    return parse_hlo(hlo_text).entry


def _outputs(entry):
    root = entry.root
    return {root.name, *(root.operands if root.opcode == "tuple" else ())}


_VIEWS = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element"}


def _sum_sizes(hlo_text, size, skip=_VIEWS, outputs=_outputs):
    entry = _entry(hlo_text)
    excluded = outputs(entry)
    return sum(size(i.shape_info) for i in entry if i.name not in excluded and i.opcode not in skip)


def _table_size(table):
    def size(shape):
        if shape.is_tuple:
            return sum(size(e) for e in shape.elements)
        return math.prod(shape.dims) * table.get(shape.dtype, 4)

    return size


_COMMON = {
    "f32": 4,
    "s32": 4,
    "u32": 4,
    "f64": 8,
    "s64": 8,
    "f16": 2,
    "bf16": 2,
    "s8": 1,
    "u8": 1,
    "pred": 1,
}


@decoy(
    "naive_temp_bytes",
    caught_by=[
        "test_naive_temp_of_handwritten_modules",
        "test_naive_temp_of_compiled_tuple_and_bf16_programs",
    ],
    why="4 bytes per element whatever the dtype",
)
def naive_f32_only(hlo_text):
    return _sum_sizes(hlo_text, _table_size({}))


@decoy(
    "naive_temp_bytes",
    caught_by=["test_naive_temp_of_handwritten_modules"],
    why="a table of the common dtypes (4 bytes for anything else): u16, c64, f8 are wrong",
)
def naive_dtype_table(hlo_text):
    return _sum_sizes(hlo_text, _table_size(_COMMON))


@decoy(
    "naive_temp_bytes",
    caught_by=[
        "test_naive_temp_of_handwritten_modules",
        "test_naive_temp_of_compiled_tuple_and_bf16_programs",
    ],
    why="skips only the ROOT: the arrays a tuple ROOT gathers are outputs, not temps",
)
def naive_counts_root_tuple_operands(hlo_text):
    return _sum_sizes(
        hlo_text,
        _table_size(_COMMON | {"u16": 2, "c64": 8, "f8e4m3fn": 1}),
        outputs=lambda entry: {entry.root.name},
    )


@decoy(
    "naive_temp_bytes",
    caught_by=["test_naive_temp_of_handwritten_modules"],
    why="a tuple-shaped result (multi-output fusion) counted as 0 bytes, and constants counted",
)
def naive_arrays_only(hlo_text):
    table = _COMMON | {"u16": 2, "c64": 8, "f8e4m3fn": 1}

    def size(shape):
        return 0 if shape.is_tuple else math.prod(shape.dims) * table[shape.dtype]

    return _sum_sizes(hlo_text, size, skip=_VIEWS - {"constant"})


_KINDS = {"bf": "bfloat", "s": "int", "u": "uint", "f": "float", "c": "complex"}


@decoy(
    "naive_temp_bytes",
    caught_by=["test_naive_temp_under_renaming_and_reordering"],
    why="finds ENTRY by its printed name (main, main.12) instead of the ENTRY keyword",
)
def naive_entry_named_main(hlo_text):
    module = parse_hlo(hlo_text)
    named = [c for c in module if c.name.split(".")[0] == "main"]
    entry = named[0] if named else list(module)[0]  # else the first one printed
    excluded = _outputs(entry)
    return sum(
        _table_size(_COMMON | {"c64": 8, "u16": 2, "s64": 8, "f8e4m3fn": 1, "s16": 2})(i.shape_info)
        for i in entry
        if i.name not in excluded and i.opcode not in _VIEWS
    )


@accepted(
    "naive_temp_bytes",
    why="bytes per element from NumPy/ml_dtypes itemsize (f8e5m2 is float8_e5m2), bits from "
    "a packing layout's E(n)",
)
def naive_by_itemsize(hlo_text):
    import ml_dtypes

    def itemsize(dtype):
        if dtype == "pred":
            return 1
        match = re.fullmatch(r"(bf|[sufc])(\d+)(e\w+)?", dtype)
        assert match is not None, f"not an XLA array type: {dtype}"
        kind, bits, rest = match.groups()
        name = _KINDS[kind] + bits + (f"_{rest}" if rest else "")
        return np.dtype(getattr(ml_dtypes, name, None) or name).itemsize

    def size(shape):
        if shape.is_tuple:
            return sum(size(e) for e in shape.elements)
        packed = re.search(r":.*E\((\d+)\)", shape.layout or "")
        if packed:
            return (math.prod(shape.dims) * int(packed.group(1)) + 7) // 8
        return math.prod(shape.dims) * itemsize(shape.dtype)

    return _sum_sizes(hlo_text, size)


@decoy(
    "eager_vs_jit",
    caught_by=["test_timing_reports_mean_seconds_per_call"],
    why="total seconds of the timed loop, not the mean per call",
)
def timing_totals(f, args, repeats):
    jitted = jax.jit(f)
    f(*args).block_until_ready()
    jitted(*args).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        f(*args).block_until_ready()
    eager = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        jitted(*args).block_until_ready()
    compiled = time.perf_counter() - start
    return Timing(eager, compiled, repeats, eager / compiled)


@accepted("eager_vs_jit", why="jax.block_until_ready, each call timed on its own and summed")
def timing_per_call(f, args, repeats):
    jitted = jax.jit(f)
    jax.block_until_ready(f(*args))
    jax.block_until_ready(jitted(*args))
    totals = {}
    for name, fn in (("eager", f), ("jit", jitted)):
        total = 0.0
        for _ in range(repeats):
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            total += time.perf_counter() - start
        totals[name] = total / repeats
    return Timing(totals["eager"], totals["jit"], repeats, totals["eager"] / totals["jit"])


@decoy(
    "predict_chain_temp",
    caught_by=["test_predict_chain_temp_matches_buffer_assignment"],
    why="no reuse at all: every product before the last gets a temp buffer of its own",
)
def chain_temp_without_reuse(rows, width, depth, itemsize):
    return (depth - 1) * rows * width * itemsize


@decoy(
    "predict_chain_temp",
    caught_by=["test_predict_chain_temp_matches_buffer_assignment"],
    why="two live products at a time, all in temp: forgets the output's allocation",
)
def chain_temp_two_live(rows, width, depth, itemsize):
    return min(depth - 1, 2) * rows * width * itemsize


@decoy(
    "predict_chain_temp",
    caught_by=["test_predict_chain_temp_matches_buffer_assignment"],
    why="the optimal two-colouring (one temp buffer from depth 2 on), not what XLA plans",
)
def chain_temp_optimal(rows, width, depth, itemsize):
    return min(depth - 1, 1) * rows * width * itemsize


@decoy(
    "predict_chain_temp",
    caught_by=["test_predict_chain_temp_does_not_compile"],
    why="measures instead of predicting: compiles the chain and reads memory_analysis",
)
def chain_temp_measured(rows, width, depth, itemsize):
    dtype = {2: np.int16, 4: np.float32}[itemsize]
    x, w = np.ones((rows, width), dtype), np.ones((width, width), dtype)

    def chain(x, w):
        for _ in range(depth):
            x = x @ w
        return x

    stats = jax.jit(chain).lower(x, w).compile().memory_analysis()
    return int(getattr(stats, "temp_size_in_bytes", 0))


_LISTED_DEPTHS = {1: 0, 2: 1, 3: 1, 4: 2, 5: 1, 6: 2, 7: 1}


@decoy(
    "predict_chain_temp",
    caught_by=["test_predict_chain_temp_on_fresh_chains"],
    why="a table of temp buffers per depth read off the listed depths 1 to 7, one beyond them",
)
def chain_temp_listed_depths(rows, width, depth, itemsize):
    return _LISTED_DEPTHS.get(depth, 1) * rows * width * itemsize


@accepted("predict_chain_temp", why="simulates the placement product by product")
def chain_temp_simulated(rows, width, depth, itemsize):
    # The output's allocation may hold a product that dies before the output is written (not
    # the last product's operand); a product never goes where its operand lives.
    holder: dict[str, int] = {}  # buffer -> the product it holds
    temps = 0
    for k in range(1, depth):
        if k <= depth - 2 and holder.get("out", -9) < k - 1:
            holder["out"] = k
            continue
        free = [t for t in range(temps) if holder.get(f"t{t}") != k - 1]
        if not free:
            free, temps = [temps], temps + 1
        holder[f"t{free[0]}"] = k
    return temps * rows * width * itemsize


_B_LISTED = "test_predict_bytes_accessed_of_the_listed_cases"
_B_FRESH = "test_predict_bytes_accessed_on_fresh_cases"


def _traffic(program, x, *, width=None, casts_free=True, second_pass=True, reads_used=True):
    """Bytes by the rule, a clause switched off (or a fixed width) by a wrong answer below."""
    rows, cols = x.shape
    size = width or x.dtype.itemsize
    whole, n = rows * cols * size, rows * cols

    def cast(to_size, to_name):
        same = casts_free and x.dtype.name == to_name
        return 2 * whole if same else whole + n * (width or to_size)

    traffic = {
        "tanh(exp(2x + 1) - 3)": 2 * whole,
        "x + y": 3 * whole,
        "x + b": 2 * whole + cols * size,
        "x.sum(axis=0)": whole + cols * size,
        "x.sum()": whole + size,
        "x.astype(bf16) * 2": cast(2, "bfloat16"),
        "exp(x)": 2 * whole,
        "x.astype(f32) * 0.5": cast(4, "float32"),
        "x.T + 1": 2 * whole,
        "x[:, : x.shape[1] // 2] * 2": (2 if reads_used else 3) * rows * (cols // 2) * size,
        "x * 2 with an unused y": (2 if reads_used else 3) * whole,
        "x - x.mean()": 3 * whole + 2 * size if second_pass else 2 * whole,
    }
    return traffic[program]


@accepted("predict_bytes_accessed", why="computed per program from element counts and widths")
def bytes_from_elements(program, x):
    return _traffic(program, x)


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_LISTED, _B_FRESH],
    why="op by op: every intermediate goes to memory and comes back",
)
def bytes_unfused(program, x):
    rows, cols = x.shape
    if program == "tanh(exp(2x + 1) - 3)":
        return 5 * 2 * rows * cols * x.dtype.itemsize
    return _traffic(program, x)


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_LISTED, _B_FRESH],
    why="every argument is read whole, used or not, sliced or not",
)
def bytes_whole_arguments(program, x):
    return _traffic(program, x, reads_used=False)


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_LISTED, _B_FRESH],
    why="everything fuses into one kernel: the mean is subtracted in the same pass",
)
def bytes_one_kernel_always(program, x):
    return _traffic(program, x, second_pass=False)


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_LISTED, _B_FRESH],
    why="four bytes per element whatever the dtype",
)
def bytes_four_per_element(program, x):
    return _traffic(program, x, width=4)


@decoy(
    "predict_bytes_accessed",
    caught_by=["test_predict_bytes_accessed_does_not_compile"],
    why="measures instead of predicting: compiles the program for arguments of x's shape",
)
def bytes_measured(program, x):
    from katas.phase6.programs import BYTES_BANK, bytes_arguments

    fn, _, _ = BYTES_BANK[program]
    arguments = bytes_arguments(program, tuple(x.shape), x.dtype.name)
    cost = jax.jit(fn).lower(*arguments).compile().cost_analysis() or {}
    return int(cost.get("bytes accessed", 0))


_OLD_BYTES = {  # the listed cases' answers, one per program
    "tanh(exp(2x + 1) - 3)": 2 * 256 * 256 * 4,
    "x + y": 3 * 64 * 96 * 4,
    "x + b": 2 * 256 * 256 * 4 + 256 * 4,
    "x.sum(axis=0)": 64 * 96 * 4 + 96 * 4,
    "x.sum()": 256 * 256 * 4 + 4,
    "x.astype(bf16) * 2": 256 * 256 * 6,
    "exp(x)": 2 * 64 * 96 * 2,
    "x.astype(f32) * 0.5": 256 * 256 * 5,
    "x.T + 1": 2 * 64 * 96 * 4,
    "x[:, : x.shape[1] // 2] * 2": 2 * 256 * 128 * 4,
    "x * 2 with an unused y": 2 * 256 * 256 * 4,
    "x - x.mean()": 3 * 256 * 256 * 4 + 8,
}


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_FRESH],
    why="memorised the table of the listed cases: one answer per program, whatever x is",
)
def bytes_memorised_table(program, x):
    return _OLD_BYTES[program]


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_FRESH],
    why="right on the listed cases, where no cast is to the dtype x has: a cast always writes a "
    "new array, so x.astype(f32) of a float32 x counts a read and a write of 4 + 4 bytes, "
    "and x.astype(bf16) of a bf16 x 2 + 2, on top of the multiply's own",
)
def bytes_casts_always_cost(program, x):
    if program in ("x.astype(bf16) * 2", "x.astype(f32) * 0.5"):
        out = {"x.astype(bf16) * 2": 2, "x.astype(f32) * 0.5": 4}[program]
        return _traffic(program, x) + (x.dtype.itemsize + out) * x.shape[0] * x.shape[1] * (
            x.dtype.itemsize == out
        )
    return _traffic(program, x)


@decoy(
    "predict_bytes_accessed",
    caught_by=[_B_FRESH],
    why="right on the listed cases, which are all float32 but two: reads x at 4 bytes an "
    "element and writes the dtype the program names (the listed bf16 and int8 cases "
    "hard-coded)",
)
def bytes_float32_inputs(program, x):
    listed = {("exp(x)", "bfloat16"), ("x.astype(f32) * 0.5", "int8")}
    if (program, x.dtype.name) in listed:
        return _traffic(program, x)
    rows, cols = x.shape
    casts = {"x.astype(bf16) * 2": 2, "x.astype(f32) * 0.5": 4}
    if program in casts:
        return rows * cols * (4 + casts[program])
    return _traffic(program, x, width=4)


@decoy(
    "naive_temp_bytes",
    caught_by=[
        "test_naive_temp_of_handwritten_modules",
        "test_naive_temp_under_renaming_and_reordering",
    ],
    why="treats copy, transpose and reshape as views too: each writes a new buffer (only "
    "bitcast, tuple and get-tuple-element re-view one); wrong on NAIVE_COPIES",
)
def naive_layout_ops_as_views(hlo_text):
    return _sum_sizes(
        hlo_text,
        _table_size(_COMMON | {"u16": 2, "s16": 2, "c64": 8, "f8e4m3fn": 1}),
        skip=_VIEWS | {"copy", "transpose", "reshape"},
    )


@decoy(
    "aliased_parameters",
    caught_by=["test_aliases_of_fresh_headers"],
    why="reads one digit of the parameter number and a one-number output index: every listed "
    "module has fewer than ten parameters and flat outputs",
)
def aliases_single_digit(hlo_text):
    text = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    found = {}
    for match in re.finditer(r"\{(\d*)\}: \((\d)", text):
        found[int(match.group(2))] = (int(match.group(1)),) if match.group(1) else ()
    return found
