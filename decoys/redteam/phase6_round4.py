"""Red-team wrong answers for phase 6, written from the contract only.

Round 4: each answer agrees with a correct one on the programs, banks and cases that
katas/phase6/programs.py lists (where that was possible), and is wrong on a valid input named in
its `why`.
"""

from __future__ import annotations

import functools
import re
import statistics
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from katas.phase6.kata import Timing
from xla_inspect.parse import parse_hlo


def _rt4_rt6_read(ca) -> dict[str, float]:
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt4_rt6_cost(f, *args) -> dict[str, float]:
    return _rt4_rt6_read(jax.jit(f).lower(*args).compile().cost_analysis())


# ---------------------------------------------------------------- task 1: cost_of


@wrong(
    "cost_of",
    why="'for the arguments exactly as given': abstracts every argument to "
    "ShapeDtypeStruct(np.shape, np.result_type), which turns a Python float into a strongly "
    "typed float32; agrees on COST_BANK (its scalar meets an int32 array, float32 either way) "
    "but wrong on cost_of(lambda s, x: x * s, 0.5, bf16[64,64]) (the product becomes f32: "
    "more bytes, a convert)",
)
def _rt4_cost_of_abstract_arguments(f, *args):
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.result_type(a)), args)
    return _rt4_rt6_cost(f, *specs)


_rt4_rt6_SHAPE_MEMO: dict = {}


@wrong(
    "cost_of",
    why="'compiled for args' (their dtype too): memoizes per (function, argument shapes) and "
    "ignores dtypes; right on any first call, wrong on cost_of(jnp.exp, f32[64,64]) after "
    "cost_of(jnp.exp, bf16[64,64]) (returns the bf16 bytes, half the f32 ones)",
)
def _rt4_cost_of_memo_by_shape(f, *args):
    key = (f, tuple(np.shape(leaf) for leaf in jax.tree.leaves(args)))
    if key not in _rt4_rt6_SHAPE_MEMO:
        _rt4_rt6_SHAPE_MEMO[key] = _rt4_rt6_cost(f, *args)
    return dict(_rt4_rt6_SHAPE_MEMO[key])


@wrong(
    "cost_of",
    why="'for the arguments exactly as given': makes Python-number arguments static "
    "(static_argnums) so they fold into the program as constants and are not read; wrong on "
    "COST_BANK 'int8 widened products, python scalar' and on cost_of(lambda s, x: x * s, 3.0, "
    "f32[64,64]) (bytes accessed lacks the scalar parameter's 4 bytes)",
)
def _rt4_cost_of_static_scalars(f, *args):
    static = tuple(i for i, a in enumerate(args) if isinstance(a, (int, float, complex, bool)))
    compiled = jax.jit(f, static_argnums=static).lower(*args).compile()
    return _rt4_rt6_read(compiled.cost_analysis())


# ---------------------------------------------------------------- task 2: fusion_traffic


def _rt4_rt6_op_by_op(steps, x) -> float:
    total, v = 0.0, x
    for step in steps:
        total += _rt4_rt6_cost(step, v)["bytes_accessed"]
        out = jax.eval_shape(step, v)
        v = jax.ShapeDtypeStruct(out.shape, out.dtype)
    return total


@wrong(
    "fusion_traffic",
    why="'one compiled program that applies all the steps IN ORDER': composes with "
    "functools.reduce(lambda f, g: lambda v: f(g(v)), steps), which applies the LAST step "
    "first; the banks' lists happen to cost the same bytes reversed, but on steps "
    "[astype(bf16), lambda v: v.astype(f32) * 2] with x f32[64,64] fused reads 4 and writes 4 "
    "bytes per element, the reversed program writes bf16 (2 bytes)",
)
def _rt4_fusion_traffic_reversed_composition(steps, x):
    fused = functools.reduce(lambda f, g: lambda v: f(g(v)), steps)
    return {
        "op_by_op": _rt4_rt6_op_by_op(steps, x),
        "fused": _rt4_rt6_cost(fused, x)["bytes_accessed"],
    }


@wrong(
    "fusion_traffic",
    why="'the sum of bytes accessed over the steps': collects costs in a dict keyed by the "
    "step function, so a step listed twice is counted once; wrong on steps [jnp.exp, jnp.exp] "
    "(op_by_op half of the truth)",
)
def _rt4_fusion_traffic_dict_of_steps(steps, x):
    costs, v = {}, x
    for step in steps:
        costs[step] = _rt4_rt6_cost(step, v)["bytes_accessed"]
        out = jax.eval_shape(step, v)
        v = jax.ShapeDtypeStruct(out.shape, out.dtype)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {
        "op_by_op": float(sum(costs.values())),
        "fused": _rt4_rt6_cost(fused, x)["bytes_accessed"],
    }


@wrong(
    "fusion_traffic",
    why="'each step compiled as its own program': caches a step's cost by (its __name__, input "
    "shape, dtype) and every lambda is named '<lambda>'; the banks never put two lambdas on "
    "one input shape and dtype, but on steps [lambda v: v * 2.0, lambda v: v.sum(axis=0)] "
    "with x f32[64,64] the sum is charged the elementwise step's bytes",
)
def _rt4_fusion_traffic_cache_by_name(steps, x):
    cache: dict = {}
    total, v = 0.0, x
    for step in steps:
        key = (getattr(step, "__name__", repr(step)), tuple(v.shape), str(v.dtype))
        if key not in cache:
            cache[key] = _rt4_rt6_cost(step, v)["bytes_accessed"]
        total += cache[key]
        out = jax.eval_shape(step, v)
        v = jax.ShapeDtypeStruct(out.shape, out.dtype)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": total, "fused": _rt4_rt6_cost(fused, x)["bytes_accessed"]}


# ---------------------------------------------------------------- task 3: memory_report


def _rt4_rt6_memory(compiled) -> dict[str, int]:
    m = compiled.memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


@wrong(
    "memory_report",
    why="'jax.jit(f, donate_argnums=...)': donates only the first listed argument "
    "(donate_argnums[0], as if it took one int); the banks donate one argument each, wrong on "
    "memory_report(lambda a, b: (a + 1.0, b * 2.0), f32[8], f32[8], donate_argnums=(0, 1)) "
    "(alias 32 instead of 64)",
)
def _rt4_memory_report_first_donation_only(f, *args, donate_argnums=()):
    donate = donate_argnums[0] if donate_argnums else ()
    return _rt4_rt6_memory(jax.jit(f, donate_argnums=donate).lower(*args).compile())


@wrong(
    "memory_report",
    why="'donate_argnums=...' means those arguments only: donates every argument whenever one "
    "is donated; MEMORY_BANK cannot tell (no second donatable buffer fits a free output) but "
    "memory_report(lambda a, b: (a + b, a * b), f32[16], f32[16], donate_argnums=(0,)) gives "
    "alias 128 instead of 64",
)
def _rt4_memory_report_donate_all(f, *args, donate_argnums=()):
    donate = tuple(range(len(args))) if donate_argnums else ()
    return _rt4_rt6_memory(jax.jit(f, donate_argnums=donate).lower(*args).compile())


@wrong(
    "memory_report",
    why="'compiled for args' exactly as given: compiles for ShapeDtypeStruct(np.shape, "
    "np.result_type) of each leaf, so a Python float becomes strong float32; agrees on "
    "MEMORY_BANK (its scalar is an int with an int8->int32 array) but on "
    "memory_report(lambda s, x: x * s, 0.5, bf16[8,8]) the output is f32 (256 bytes, not 128)",
)
def _rt4_memory_report_abstract_arguments(f, *args, donate_argnums=()):
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.result_type(a)), args)
    return _rt4_rt6_memory(jax.jit(f, donate_argnums=donate_argnums).lower(*specs).compile())


@wrong(
    "memory_report",
    why="'jax.jit(f, donate_argnums=...)' as planned: compiles with keep_unused=True, so an "
    "argument the program ignores still gets a parameter buffer; wrong on "
    "memory_report(lambda x, y: x * 2.0, f32[64,64], f32[64,64]) (argument 32768, XLA plans "
    "16384)",
)
def _rt4_memory_report_keep_unused(f, *args, donate_argnums=()):
    jitted = jax.jit(f, donate_argnums=donate_argnums, keep_unused=True)
    return _rt4_rt6_memory(jitted.lower(*args).compile())


# ---------------------------------------------------------------- task 4: aliased_parameters

_rt4_rt6_ENTRY = re.compile(
    r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*(?:,\s*[\w-]+\s*)?\)"
)


def _rt4_rt6_header(hlo_text: str) -> str:
    return parse_hlo(hlo_text).attributes.get("input_output_alias", "")


@wrong(
    "aliased_parameters",
    why="'output index {1}' is a shape index, possibly nested: reads it as one int with "
    r"r'\{(\d*)\}', which skips a nested output index; wrong on a header entry "
    "'{1, 0}: (2, {}, may-alias)' (a tuple nested in the output tuple: {2: (1, 0)} expected, "
    "the entry is dropped)",
)
def _rt4_aliased_parameters_flat_output_index(hlo_text):
    found = {}
    for out, param in re.findall(
        r"\{(\d*)\}: \((\d+), \{[\d, ]*\}, [\w-]+\)", _rt4_rt6_header(hlo_text)
    ):
        found[int(param)] = (int(out),) if out else ()
    return found


@wrong(
    "aliased_parameters",
    why="'use the numbers the header states': takes the parameter number as the one character "
    "after '(' ; right for parameters 0-9, wrong on a pytree with 10+ leaves whose entry reads "
    "'{0}: (12, {}, may-alias)' ({12: (0,)} expected, gives {1: (0,)})",
)
def _rt4_aliased_parameters_one_digit(hlo_text):
    found = {}
    text = _rt4_rt6_header(hlo_text)
    for m in re.finditer(r"\{([\d, ]*)\}: \(", text):
        out = tuple(int(i) for i in m.group(1).replace(" ", "").split(",") if i)
        found[int(text[m.end()])] = out
    return found


@wrong(
    "aliased_parameters",
    why="'the module HEADER carries input_output_alias': searches the whole text for "
    "'{out}: (param, {index}' entries, which also matches a custom-call's "
    "output_to_operand_aliasing; wrong on jax.jit(jnp.linalg.cholesky) compiled for f32[4,4] "
    "on CPU, no donation (lapack_spotrf_ffi carries {{0}: (0, {})}): {} expected, gives "
    "{0: (0,)}",
)
def _rt4_aliased_parameters_whole_text(hlo_text):
    found = {}
    for out, param in _rt4_rt6_ENTRY.findall(hlo_text):
        found[int(param)] = tuple(int(i) for i in out.replace(" ", "").split(",") if i)
    return found


# ---------------------------------------------------------------- task 5: naive_temp_bytes

_rt4_rt6_VIEWS = {"bitcast", "tuple", "get-tuple-element"}


def _rt4_rt6_bytes_per(dtype: str) -> float:
    if dtype == "pred":
        return 1
    digits = re.findall(r"\d+", dtype)
    return int(digits[0]) / 8 if digits else 1


def _rt4_rt6_size(shape, per=_rt4_rt6_bytes_per) -> float:
    if shape.is_tuple:
        return sum(_rt4_rt6_size(e, per) for e in shape.elements)
    return _rt4_rt6_math_prod(shape.dims) * per(shape.dtype)


def _rt4_rt6_math_prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _rt4_rt6_computation_bytes(
    comp, per=_rt4_rt6_bytes_per, skip=lambda i: False, root=None
) -> int:
    root = root if root is not None else comp.root
    outputs = {root.name}
    if root.opcode == "tuple":
        outputs |= set(root.operands)
    total = 0
    for ins in comp:
        if ins.opcode in ("parameter", "constant") or ins.opcode in _rt4_rt6_VIEWS:
            continue
        if ins.name in outputs or skip(ins):
            continue
        total += _rt4_rt6_size(ins.shape_info, per)
    return int(total)


@wrong(
    "naive_temp_bytes",
    why="'the ENTRY computation's intermediates; called computations get no buffers': sums "
    "every computation no instruction reaches through calls= or to_apply= (taking those as "
    "the top level), so a while loop's body and condition count; same as ENTRY on every "
    "hand-written and compiled module of programs.py, wrong on jax.jit(lambda x, n: "
    "lax.fori_loop(0, n, lambda i, v: jnp.sin(v) @ v, x)) for f32[8,8], s32 (body's sine, "
    "and dot results add 512 bytes: 1036 instead of 524)",
)
def _rt4_naive_temp_bytes_top_levels(hlo_text):
    module = parse_hlo(hlo_text)
    called = set()
    for comp in module:
        for ins in comp:
            for key in ("calls", "to_apply"):
                value = ins.attribute(key)
                if value:
                    called |= {n.strip().lstrip("%") for n in value.strip("{}").split(",")}
    return sum(_rt4_rt6_computation_bytes(c) for c in module if c.name.lstrip("%") not in called)


_rt4_rt6_WIDTHS = {
    "pred": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8,
}  # fmt: skip


@wrong(
    "naive_temp_bytes",
    why="'bytes per element read from the dtype's bit width': a table of the dtypes the "
    "contract and programs.py name, 4 bytes for any other; wrong on an ENTRY intermediate of "
    "c128 (16 bytes) or f8e5m2 (1 byte), e.g. %z = c128[5]{0} convert(%a) (80 bytes, gives 20)",
)
def _rt4_naive_temp_bytes_width_table(hlo_text):
    return _rt4_rt6_computation_bytes(
        parse_hlo(hlo_text).entry, per=lambda d: _rt4_rt6_WIDTHS.get(d, 4)
    )


@wrong(
    "naive_temp_bytes",
    why="'except ... the ROOT': takes the ROOT to be ENTRY's last instruction (XLA prints it "
    "last) instead of the one marked ROOT; wrong on a hand-written ENTRY whose ROOT line comes "
    "before another instruction: 'ROOT %m = f32[8]{0} add(%x, %x)' then "
    "'%dead = f32[16]{0} negate(%y)' (64 expected: %dead counts; gives 32: %m counted)",
)
def _rt4_naive_temp_bytes_root_is_last(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return _rt4_rt6_computation_bytes(entry, root=list(entry)[-1])


@wrong(
    "naive_temp_bytes",
    why="'constants (literals)' only: also skips iota as a literal; wrong on an ENTRY with "
    "'%i = s32[64]{0} iota(), iota_dimension=0' feeding another op (256 bytes missing)",
)
def _rt4_naive_temp_bytes_iota_literal(hlo_text):
    return _rt4_rt6_computation_bytes(parse_hlo(hlo_text).entry, skip=lambda i: i.opcode == "iota")


@wrong(
    "naive_temp_bytes",
    why="'instructions that only re-view a buffer (bitcast, tuple, get-tuple-element)': "
    "matches opcode.startswith('bitcast'), so bitcast-convert (which writes a new buffer) is "
    "skipped too; wrong on '%u = s32[8]{0} bitcast-convert(%f)' in ENTRY (32 bytes missing)",
)
def _rt4_naive_temp_bytes_bitcast_prefix(hlo_text):
    return _rt4_rt6_computation_bytes(
        parse_hlo(hlo_text).entry, skip=lambda i: i.opcode.startswith("bitcast")
    )


# ---------------------------------------------------------------- task 6: eager_vs_jit


def _rt4_rt6_block(out):
    return jax.block_until_ready(out)


def _rt4_rt6_per_call(fn, args, repeats):
    _rt4_rt6_block(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        _rt4_rt6_block(fn(*args))
        times.append(time.perf_counter() - start)
    return times


@wrong(
    "eager_vs_jit",
    why="'MEAN seconds per timed call': reports the median of the per-call times (robust to "
    "outliers); wrong whenever timed calls differ, e.g. a perf_counter that advances 1, 1, "
    "4 s over three calls (mean 2, median 1)",
)
def _rt4_eager_vs_jit_median(f, args, repeats):
    eager = statistics.median(_rt4_rt6_per_call(f, args, repeats))
    jit = statistics.median(_rt4_rt6_per_call(jax.jit(f), args, repeats))
    return Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)


@wrong(
    "eager_vs_jit",
    why="'MEAN seconds per timed call': reports the best (min) call, the timeit habit; wrong "
    "whenever timed calls differ (per-call times 1, 1, 4 s: mean 2, min 1)",
)
def _rt4_eager_vs_jit_best_of(f, args, repeats):
    eager = min(_rt4_rt6_per_call(f, args, repeats))
    jit = min(_rt4_rt6_per_call(jax.jit(f), args, repeats))
    return Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)


@wrong(
    "eager_vs_jit",
    why="'Block on EVERY result with .block_until_ready()': blocks only the last result of "
    "each timed loop (the others are left in flight); wrong on any f whose results are "
    "checked for blocking, e.g. repeats=3: 1 of 3 timed results blocked per kind",
)
def _rt4_eager_vs_jit_block_last(f, args, repeats):
    def timed(fn):
        _rt4_rt6_block(fn(*args))
        start = time.perf_counter()
        out = None
        for _ in range(repeats):
            out = fn(*args)
        _rt4_rt6_block(out)
        return (time.perf_counter() - start) / repeats

    eager, jit = timed(f), timed(jax.jit(f))
    return Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)


# ---------------------------------------------------------------- task 7: predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'chains of ANY depth': a table of buffers per depth read off depths 1-6 (0, 1, 1, 2, "
    "1, 2) with 1 for any other depth; wrong on depth 8, f32[128,128] (XLA plans 2 buffers, "
    "131072 bytes; gives 65536)",
)
def _rt4_predict_chain_temp_depth_table(rows, width, depth, itemsize):
    buffers = {1: 0, 2: 1, 3: 1, 4: 2, 5: 1, 6: 2}.get(depth, 1)
    return buffers * rows * width * itemsize


@wrong(
    "predict_chain_temp",
    why="'which allocation besides temp can hold one': output takes the first product only "
    "when the chain is long enough; applies the parity rule to depth 2 too (even -> 2 "
    "buffers), but at depth 2 the single intermediate cannot go to the output (its operand) "
    "and temp holds 1 buffer; wrong on depth 2, f32[64,64] (16384 expected, gives 32768)",
)
def _rt4_predict_chain_temp_parity_from_two(rows, width, depth, itemsize):
    if depth <= 1:
        return 0
    return (1 if depth % 2 else 2) * rows * width * itemsize


@wrong(
    "predict_chain_temp",
    why="'x of shape (rows, width)': the products are (rows, width), but sizes the buffer "
    "from w (width x width); right on square chains, wrong on rows=16, width=64, depth 3, "
    "f32 (4096 expected, gives 16384)",
)
def _rt4_predict_chain_temp_w_sized(rows, width, depth, itemsize):
    buffers = 0 if depth <= 1 else 1 if depth == 2 or depth % 2 else 2
    return buffers * width * width * itemsize


@wrong(
    "predict_chain_temp",
    why="'a chain of depth 1 has no intermediate': answers at least one buffer "
    "(max(1, ...)) because 'temp is never empty'; wrong on depth 1 (0 expected), e.g. "
    "rows=64, width=64, f32 gives 16384",
)
def _rt4_predict_chain_temp_never_empty(rows, width, depth, itemsize):
    buffers = 1 if depth <= 3 or depth % 2 else 2
    return buffers * rows * width * itemsize


# ---------------------------------------------------------------- task 8: predict_bytes_accessed


def _rt4_rt6_width(dtype) -> int:
    return int(np.dtype(dtype).itemsize)


def _rt4_rt6_bytes(program, rows, cols, s, f32=4, half_cols=None):
    n = rows * cols
    half = cols // 2 if half_cols is None else half_cols
    table = {
        "tanh(exp(2x + 1) - 3)": 2 * n * s,
        "x + y": 3 * n * s,
        "x + b": 2 * n * s + cols * s,
        "x.sum(axis=0)": n * f32 + cols * f32,
        "x.sum()": n * f32 + f32,
        "x.astype(bf16) * 2": n * s + 2 * n,
        "exp(x)": 2 * n * s,
        "x.astype(f32) * 0.5": n * s + n * f32,
        "x.T + 1": 2 * n * s,
        "x[:, : x.shape[1] // 2] * 2": 2 * rows * half * s,
        "x * 2 with an unused y": 2 * n * s,
        "x - x.mean()": 3 * n * f32 + 2 * f32,
    }
    return int(table[program])


@wrong(
    "predict_bytes_accessed",
    why="'b has one element per COLUMN of x' and the slice keeps half the columns: uses "
    "x.shape[0] for b's length and for the kept half (x.sum(axis=0) is right); every listed "
    "case of these is square, wrong on 'x + b' with x f32[64,96] (49536 expected, gives "
    "49408) and the slice at f32[64,96]",
)
def _rt4_predict_bytes_accessed_rows_for_columns(program, x):
    rows, cols = x.shape
    s = _rt4_rt6_width(x.dtype)
    if program == "x + b":
        return 2 * rows * cols * s + rows * s
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * (rows // 2) * cols * s
    return _rt4_rt6_bytes(program, rows, cols, s)


@wrong(
    "predict_bytes_accessed",
    why="'every array is read or written at its own width': takes float16 at 4 bytes "
    "(XLA:CPU computes f16 in f32); no listed case is float16, wrong on 'exp(x)' with x "
    "f16[64,96] (24576 expected, gives 49152)",
)
def _rt4_predict_bytes_accessed_f16_as_f32(program, x):
    rows, cols = x.shape
    s = 4 if str(np.dtype(x.dtype)) == "float16" else _rt4_rt6_width(x.dtype)
    return _rt4_rt6_bytes(program, rows, cols, s)


_rt4_rt6_CASES = {
    ("tanh(exp(2x + 1) - 3)", (256, 256), "float32"): 524288,
    ("x + y", (64, 96), "float32"): 73728,
    ("x + b", (256, 256), "float32"): 525312,
    ("x.sum(axis=0)", (64, 96), "float32"): 24960,
    ("x.sum()", (256, 256), "float32"): 262148,
    ("x.astype(bf16) * 2", (256, 256), "float32"): 393216,
    ("exp(x)", (64, 96), "bfloat16"): 24576,
    ("x.astype(f32) * 0.5", (256, 256), "int8"): 327680,
    ("x.T + 1", (64, 96), "float32"): 49152,
    ("x[:, : x.shape[1] // 2] * 2", (256, 256), "float32"): 262144,
    ("x * 2 with an unused y", (256, 256), "float32"): 524288,
    ("x - x.mean()", (256, 256), "float32"): 786440,
}


@wrong(
    "predict_bytes_accessed",
    why="'at ANY shape and dtype of their domain': the twelve BYTES_CASES worked out by hand, "
    "and 'read x once, write once' (2 * x bytes) for anything else; wrong on 'x + y' with x "
    "f32[128,128] (196608 expected, gives 131072)",
)
def _rt4_predict_bytes_accessed_case_table(program, x):
    key = (program, tuple(x.shape), str(np.dtype(x.dtype)))
    if key in _rt4_rt6_CASES:
        return _rt4_rt6_CASES[key]
    return 2 * int(np.prod(x.shape)) * _rt4_rt6_width(x.dtype)
