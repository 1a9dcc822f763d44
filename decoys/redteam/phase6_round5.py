"""Red-team wrong answers for phase 6, written from the contract only."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


@dataclass(frozen=True)
class _rt5_Timing:
    eager_s: float
    jit_s: float
    repeats: int
    ratio: float


def _rt5_timing_cls():
    try:
        from katas.phase6.kata import _rt5_Timing as T  # the learner's dataclass, if importable

        return T
    except Exception:  # noqa: BLE001
        return _rt5_Timing


def _rt5_read(ca) -> dict[str, float]:
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    ca = ca or {}
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt5_cost(f, *args):
    return _rt5_read(jax.jit(f).lower(*args).compile().cost_analysis())


def _rt5_spec(v):
    return jax.ShapeDtypeStruct(np.shape(v), v.dtype)


# ---------------------------------------------------------------- cost_of

_rt5_COST_CACHE: dict = {}


@wrong(
    "cost_of",
    why="caches the estimate per function only ('compile once'), so it is not the estimate for "
    "the args exactly as given; wrong on cost_of(chain, f32[256,256]) after "
    "cost_of(chain, bf16[48,40]) (returns the bf16 bytes)",
)
def _rt5_cost_of_cached_per_function(f, *args) -> dict[str, float]:
    key = getattr(f, "__code__", f)
    if key not in _rt5_COST_CACHE:
        _rt5_COST_CACHE[key] = _rt5_cost(f, *args)
    return dict(_rt5_COST_CACHE[key])


@wrong(
    "cost_of",
    why="abstracts args with np.result_type, so a Python scalar becomes a strong float32 (loses "
    "weak typing) and promotes bf16 work to f32; not 'the arguments exactly as given'; wrong on "
    "cost_of(lambda s, x: x * s, 2.0, bf16[48,40])",
)
def _rt5_cost_of_abstract_args(f, *args) -> dict[str, float]:
    specs = [
        jax.ShapeDtypeStruct(np.shape(a), jax.dtypes.canonicalize_dtype(np.result_type(a)))
        for a in args
    ]
    return _rt5_cost(f, *specs)


@wrong(
    "cost_of",
    why="reads flops and transcendentals from the Lowered stage (before CSE) and only bytes "
    "from the compiled one; wrong on exp(v) + exp(v) (2 transcendentals per element, not 1) and "
    "on the f16 '(a @ b) + (a @ b)' program",
)
def _rt5_cost_of_mixed_stages(f, *args) -> dict[str, float]:
    lowered = jax.jit(f).lower(*args)
    pre = _rt5_read(lowered.cost_analysis())
    post = _rt5_read(lowered.compile().cost_analysis())
    return {
        "flops": pre["flops"],
        "transcendentals": pre["transcendentals"],
        "bytes_accessed": post["bytes_accessed"],
    }


# ---------------------------------------------------------------- fusion_traffic


def _rt5_fused(steps):
    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return fused


@wrong(
    "fusion_traffic",
    why="each step after the second is compiled for eval_shape(previous step, x), i.e. the "
    "previous step applied to the ORIGINAL x, not fed the previous step's output; agrees on "
    "every 2-step list and on same-shape chains; wrong on steps [lambda v: v.sum(axis=1), "
    "jnp.exp, jnp.tanh] with x f32[40,24] (tanh costed on exp(x), (40,24), not on (40,))",
)
def _rt5_fusion_traffic_unchained_shapes(steps: Sequence[Callable], x) -> dict[str, float]:
    x_spec = _rt5_spec(x)
    inputs = [x_spec] + [jax.eval_shape(s, x_spec) for s in steps[:-1]]
    if len(steps) > 2:
        inputs = [x_spec, inputs[1]] + [jax.eval_shape(s, x_spec) for s in steps[1:-1]]
    total = sum(_rt5_cost(s, i)["bytes_accessed"] for s, i in zip(steps, inputs))
    return {"op_by_op": total, "fused": _rt5_cost(_rt5_fused(steps), x)["bytes_accessed"]}


@wrong(
    "fusion_traffic",
    why="builds the fused program with functools-style composition in the wrong order (last "
    "step innermost), so 'applies all the steps in order' is broken; agrees on elementwise "
    "same-dtype chains and on the banked [astype(bf16), exp]; wrong on steps "
    "[lambda v: v.astype(jnp.float32), lambda v: v.sum()] with x bf16[40,24] (writes bf16 "
    "scalar instead of f32)",
)
def _rt5_fusion_traffic_reversed_fused(steps: Sequence[Callable], x) -> dict[str, float]:
    total = 0.0
    cur = _rt5_spec(x)
    for s in steps:
        total += _rt5_cost(s, cur)["bytes_accessed"]
        cur = jax.eval_shape(s, cur)
    rev = list(steps)[::-1]
    try:
        fused = _rt5_cost(_rt5_fused(rev), x)["bytes_accessed"]
    except Exception:  # noqa: BLE001  (shape mismatch: fall back to the right order)
        fused = _rt5_cost(_rt5_fused(steps), x)["bytes_accessed"]
    return {"op_by_op": total, "fused": fused}


@wrong(
    "fusion_traffic",
    why="follows the shape from step to step but keeps x's dtype ('steps only reshape'), so a "
    "step is not compiled for the previous output's dtype; wrong on the 'dtype changes' list "
    "[astype(bf16), exp] on f32[33,20] (exp costed in f32)",
)
def _rt5_fusion_traffic_keeps_dtype(steps: Sequence[Callable], x) -> dict[str, float]:
    total = 0.0
    cur = _rt5_spec(x)
    for s in steps:
        total += _rt5_cost(s, cur)["bytes_accessed"]
        out = jax.eval_shape(s, cur)
        cur = jax.ShapeDtypeStruct(out.shape, x.dtype)
    return {"op_by_op": total, "fused": _rt5_cost(_rt5_fused(steps), x)["bytes_accessed"]}


# ---------------------------------------------------------------- memory_report

_rt5_MEM_CACHE: dict = {}


def _rt5_mem(f, args, donate):
    m = jax.jit(f, donate_argnums=donate).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


@wrong(
    "memory_report",
    why="caches the plan per (function, argument shapes) but leaves donate_argnums out of the "
    "key, so the plan is not for jax.jit(f, donate_argnums=...); wrong on memory_report(update, "
    "s, g, donate_argnums=(0,)) after memory_report(update, s, g) (alias 0 instead of 16384)",
)
def _rt5_memory_report_cache_ignores_donation(f, *args, donate_argnums: tuple[int, ...] = ()):
    leaves = jax.tree_util.tree_leaves(args)
    key = (getattr(f, "__code__", f), tuple((np.shape(v), str(np.result_type(v))) for v in leaves))
    if key not in _rt5_MEM_CACHE:
        _rt5_MEM_CACHE[key] = _rt5_mem(f, args, donate_argnums)
    return dict(_rt5_MEM_CACHE[key])


@wrong(
    "memory_report",
    why="alias = bytes of the donated arguments' leaves, not what XLA planned; wrong on the "
    "'donated buffer fits no output' program (v f32[20,12] donated, no output of that shape: "
    "alias must be 0, this says 960)",
)
def _rt5_memory_report_alias_from_donation(f, *args, donate_argnums: tuple[int, ...] = ()):
    rep = _rt5_mem(f, args, donate_argnums)
    rep["alias"] = int(
        sum(
            np.asarray(leaf).nbytes
            for i in donate_argnums
            for leaf in jax.tree_util.tree_leaves(args[i])
        )
    )
    return rep


@wrong(
    "memory_report",
    why="output = sum of the output leaves' nbytes from eval_shape, not XLA's planned size; "
    "misses the tuple output's pointer table; wrong on lambda g, s: (s - 0.1 * g, "
    "jnp.tanh(g @ s.T)) and on any dict/tuple output",
)
def _rt5_memory_report_output_from_shapes(f, *args, donate_argnums: tuple[int, ...] = ()):
    rep = _rt5_mem(f, args, donate_argnums)
    out = jax.eval_shape(f, *args)
    rep["output"] = int(
        sum(math.prod(o.shape) * np.dtype(o.dtype).itemsize for o in jax.tree_util.tree_leaves(out))
    )
    return rep


# ---------------------------------------------------------------- aliased_parameters


def _rt5_header(hlo_text):
    return parse_hlo(hlo_text).attributes.get("input_output_alias") or ""


@wrong(
    "aliased_parameters",
    why="matches single-digit numbers only (r'\\{(\\d?)\\}: \\((\\d),'), fine up to 9 "
    "parameters; wrong on a header entry '{0}: (12, {}, may-alias)' (a train state with 13+ "
    "leaves donated): drops it, returns {}",
)
def _rt5_aliased_parameters_single_digit(hlo_text: str) -> dict[int, tuple[int, ...]]:
    out = {}
    for o, p in re.findall(r"\{(\d?)\}: \((\d),", _rt5_header(hlo_text)):
        out[int(p)] = (int(o),) if o else ()
    return out


@wrong(
    "aliased_parameters",
    why="reads the output index as at most one number ({} or {k}); the output shape index is a "
    "path and may be nested; wrong on a header '{ {1,0}: (0, {}, may-alias) }' (returns "
    "{0: (1,)} instead of {0: (1, 0)})",
)
def _rt5_aliased_parameters_flat_output_index(hlo_text: str) -> dict[int, tuple[int, ...]]:
    out = {}
    for o, p in re.findall(r"\{(\d*)[\d,]*\}: \((\d+),", _rt5_header(hlo_text)):
        out[int(p)] = (int(o),) if o else ()
    return out


@wrong(
    "aliased_parameters",
    why="searches the whole module text, not the header, so custom calls' "
    "output_to_operand_aliasing={{0}: (0, {})} count as donation; wrong on the LAPACK "
    "'factor' program with nothing donated (must be {})",
)
def _rt5_aliased_parameters_whole_text(hlo_text: str) -> dict[int, tuple[int, ...]]:
    out = {}
    for o, p in re.findall(r"\{([\d,]*)\}\s*:\s*\((\d+),\s*\{[\d,]*\}", hlo_text):
        out[int(p)] = tuple(int(t) for t in o.split(",") if t)
    return out


# ---------------------------------------------------------------- naive_temp_bytes


def _rt5_bits(dtype: str) -> int:
    if dtype == "pred":
        return 8
    return int(re.search(r"\d+", dtype).group())


def _rt5_size(shape, nested=True, packed=True, scalars=True) -> int:
    if shape.is_tuple:
        total = 0
        for e in shape.elements:
            if e.is_tuple and not nested:
                continue
            total += _rt5_size(e, nested, packed, scalars)
        return total
    dims = shape.dims
    if not dims and not scalars:
        return 0
    n = math.prod(d or 0 for d in dims)
    bits = _rt5_bits(shape.dtype)
    m = re.search(r"E\((\d+)\)", shape.layout or "")
    if m and packed:
        return (n * int(m.group(1)) + 7) // 8
    return n * ((bits + 7) // 8)


_rt5_VIEWS = ("parameter", "constant", "bitcast", "tuple", "get-tuple-element")


def _rt5_naive(hlo_text, *, follow_root_views=False, **kw):
    entry = parse_hlo(hlo_text).entry
    root = entry.root
    skip = {root.name}
    if root.opcode == "tuple":
        skip.update(root.operands)
    if follow_root_views:
        frontier = [root.name]
        while frontier:
            ins = entry.instruction(frontier.pop())
            if ins is None:
                continue
            if ins.opcode in ("bitcast", "tuple", "get-tuple-element") or ins.name == root.name:
                for op in ins.operands:
                    if op not in skip or ins.opcode != "tuple":
                        skip.add(op)
                    frontier.append(op) if entry.instruction(op) is not None and entry.instruction(
                        op
                    ).opcode == "bitcast" else None
    total = 0
    for ins in entry:
        if ins.name in skip or ins.opcode in _rt5_VIEWS:
            continue
        total += _rt5_size(ins.shape_info, **kw)
    return total


@wrong(
    "naive_temp_bytes",
    why="treats what the ROOT re-views as an output too (follows ROOT bitcasts to their "
    "operand); the contract excludes only the ROOT and a ROOT tuple's operands; wrong on an "
    "ENTRY ending '%f = f32[64,256] fusion(...)  ROOT %r = f32[16384] bitcast(%f)' (drops %f)",
)
def _rt5_naive_temp_bytes_root_views(hlo_text: str) -> int:
    return _rt5_naive(hlo_text, follow_root_views=True)


@wrong(
    "naive_temp_bytes",
    why="a tuple-shaped result counts its array elements one level deep only; wrong on a while "
    "loop whose state is ((s32[], f32[8]), f32[4,4]) (the nested tuple's 36 bytes dropped)",
)
def _rt5_naive_temp_bytes_flat_tuples(hlo_text: str) -> int:
    return _rt5_naive(hlo_text, nested=False)


@wrong(
    "naive_temp_bytes",
    why="ignores packed layouts: s4[9]{0:E(4)} counted 9 bytes (one per element) instead of 5; "
    "wrong on any ENTRY with an s4/u4 intermediate laid out with E(4)",
)
def _rt5_naive_temp_bytes_ignores_packing(hlo_text: str) -> int:
    return _rt5_naive(hlo_text, packed=False)


@wrong(
    "naive_temp_bytes",
    why="skips scalar (rank-0) results as 'register values'; a scalar intermediate still gets a "
    "buffer; wrong on an ENTRY with '%s = f32[] reduce(...)' feeding a later op "
    "(e.g. x - x.mean() compiled unfused)",
)
def _rt5_naive_temp_bytes_skips_scalars(hlo_text: str) -> int:
    return _rt5_naive(hlo_text, scalars=False)


# ---------------------------------------------------------------- eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="blocks only on the last result of each timed loop (not on every result); with async "
    "dispatch the clock times queued work; breaks 'block on every result' for any f whose "
    "result's block_until_ready is observed per call",
)
def _rt5_eager_vs_jit_block_last(f, args: tuple, repeats: int):
    jf = jax.jit(f)
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    out = None
    for _ in range(repeats):
        out = f(*args)
    jax.block_until_ready(out)
    eager = (time.perf_counter() - t0) / repeats
    jax.block_until_ready(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        out = jf(*args)
    jax.block_until_ready(out)
    jit = (time.perf_counter() - t0) / repeats
    return _rt5_timing_cls()(eager, jit, repeats, eager / jit)


@wrong(
    "eager_vs_jit",
    why="no separate untimed warm-up: the first timed jit call (the compile) is inside the "
    "clock, so jit_s is not the mean of repeats warm calls; the call counts still match "
    "(repeats + 1 each); wrong on any f with repeats small (compile dominates jit_s)",
)
def _rt5_eager_vs_jit_timed_warmup(f, args: tuple, repeats: int):
    jf = jax.jit(f)
    t0 = time.perf_counter()
    for _ in range(repeats + 1):
        jax.block_until_ready(f(*args))
    eager = (time.perf_counter() - t0) / (repeats + 1)
    t0 = time.perf_counter()
    for _ in range(repeats + 1):
        jax.block_until_ready(jf(*args))
    jit = (time.perf_counter() - t0) / (repeats + 1)
    return _rt5_timing_cls()(eager, jit, repeats, eager / jit)


@wrong(
    "eager_vs_jit",
    why="reads the wall clock time.time() instead of time.perf_counter(); wrong against the "
    "contract's clock (a test that drives perf_counter sees no reads and a different mean)",
)
def _rt5_eager_vs_jit_wall_clock(f, args: tuple, repeats: int):
    jf = jax.jit(f)
    jax.block_until_ready(f(*args))
    t0 = time.time()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    eager = (time.time() - t0) / repeats
    jax.block_until_ready(jf(*args))
    t0 = time.time()
    for _ in range(repeats):
        jax.block_until_ready(jf(*args))
    jit = (time.time() - t0) / repeats
    jit = jit or 1e-9
    return _rt5_timing_cls()(eager, jit, repeats, eager / jit)


# ---------------------------------------------------------------- predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="a table read off compiling depths 1..5 (0, S, S, 2S, S) with S for anything deeper; "
    "wrong on depth 6 (and every even depth >= 6): temp is 2S",
)
def _rt5_predict_chain_temp_table(rows: int, width: int, depth: int, itemsize: int) -> int:
    s = rows * width * itemsize
    return {1: 0, 2: s, 3: s, 4: 2 * s, 5: s}.get(depth, s)


@wrong(
    "predict_chain_temp",
    why="sizes a product as width*width (w's shape) instead of rows*width; agrees on square "
    "chains; wrong on rows=16, width=64, depth=3, itemsize=4 (4096, not 16384)",
)
def _rt5_predict_chain_temp_square(rows: int, width: int, depth: int, itemsize: int) -> int:
    s = width * width * itemsize
    if depth <= 1:
        return 0
    return s if depth == 2 or depth % 2 else 2 * s


@wrong(
    "predict_chain_temp",
    why="even depth -> two temp buffers including depth 2, where the first product is the only "
    "intermediate (one buffer); wrong on depth 2 (says 2S, is S)",
)
def _rt5_predict_chain_temp_even_two(rows: int, width: int, depth: int, itemsize: int) -> int:
    s = rows * width * itemsize
    if depth <= 1:
        return 0
    return s if depth % 2 else 2 * s


# ---------------------------------------------------------------- predict_bytes_accessed


def _rt5_pba(program, x, *, b_len=None, astype_extra=False, mean_two=True, slice_full=False):
    r, c = x.shape
    n = r * c
    b = np.dtype(x.dtype).itemsize
    if program == "x + y":
        return 3 * n * b
    if program == "x + b":
        return 2 * n * b + (b_len(r, c) if b_len else c) * b
    if program == "x.sum(axis=0)":
        return n * b + c * b
    if program == "x.sum()":
        return n * b + b
    if program == "x.astype(bf16) * 2":
        extra = (
            2 * n * 2 if astype_extra and np.dtype(x.dtype) != np.dtype(jax.numpy.bfloat16) else 0
        )
        return n * b + n * 2 + extra
    if program == "x.astype(f32) * 0.5":
        return n * b + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return (n * b if slice_full else r * (c // 2) * b) + r * (c // 2) * b
    if program == "x - x.mean()":
        return (3 * n * b + 2 * b) if mean_two else 2 * n * b
    return 2 * n * b


@wrong(
    "predict_bytes_accessed",
    why="b's length taken as x.shape[0] (rows) instead of one element per column; agrees on the "
    "square banked case (256,256); wrong on 'x + b' with x f32[64,96] (64*4 vs 96*4 for b)",
)
def _rt5_predict_bytes_accessed_b_rows(program: str, x) -> int:
    return _rt5_pba(program, x, b_len=lambda r, c: r)


@wrong(
    "predict_bytes_accessed",
    why="thinks a dtype-changing astype is its own kernel (write the converted x, read it "
    "again) while a same-dtype astype is free; agrees on bf16 x; wrong on "
    "'x.astype(bf16) * 2' with x float32[256,256] or int8",
)
def _rt5_predict_bytes_accessed_convert_kernel(program: str, x) -> int:
    return _rt5_pba(program, x, astype_extra=True)


_rt5_ITEMSIZE = {"float32": 4, "bfloat16": 2, "int8": 1, "int32": 4}


@wrong(
    "predict_bytes_accessed",
    why="bytes per element from a dtype table written off the listed cases (float32, bfloat16, "
    "int8, int32) with 4 as the fallback; float16 is an allowed dtype of most programs and takes "
    "2; wrong on 'exp(x)' with x float16[64,96] (49152, not 24576)",
)
def _rt5_predict_bytes_accessed_dtype_table(program: str, x) -> int:
    class _X:
        shape = tuple(x.shape)
        dtype = np.dtype(
            {4: np.float32, 2: np.float16, 1: np.int8}[_rt5_ITEMSIZE.get(str(np.dtype(x.dtype)), 4)]
        )

    return _rt5_pba(program, _X)


@wrong(
    "predict_bytes_accessed",
    why="the slice kernel is taken to read all of x (only the kept columns are read); wrong "
    "on 'x[:, : x.shape[1] // 2] * 2' with x f32[256,256] (393216 vs 262144)",
)
def _rt5_predict_bytes_accessed_slice_reads_all(program: str, x) -> int:
    return _rt5_pba(program, x, slice_full=True)
