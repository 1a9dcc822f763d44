"""Red team, phase 6, round 15: packing read only right after the colon, opt-barrier taken for a
view, tuple elements sized without their layouts, packing at the dtype's width, scalar literals
counted as reads, casts ignored in traffic, and a chain temp extrapolated as depth // 2."""

from __future__ import annotations

import math
import re

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt15_views = ("bitcast", "tuple", "get-tuple-element")


def _rt15_bits(dtype):
    if dtype == "pred":
        return 8
    m = re.match(r"[a-z]+?(\d+)", dtype or "")
    return int(m.group(1)) if m else 0


def _rt15_size(shape, *, packed_re=r"E\((\d+)\)", tuple_layouts=True, dtype_width=False):
    if shape.is_tuple:
        out = 0
        for e in shape.elements:
            if not tuple_layouts and not e.is_tuple:
                out += math.prod(d or 0 for d in e.dims) * math.ceil(_rt15_bits(e.dtype) / 8)
            else:
                out += _rt15_size(
                    e, packed_re=packed_re, tuple_layouts=tuple_layouts, dtype_width=dtype_width
                )
        return out
    count = math.prod(d or 0 for d in shape.dims)
    bits = _rt15_bits(shape.dtype)
    m = re.search(packed_re, shape.layout or "")
    if m:
        n = bits if dtype_width else int(m.group(1))
        return math.ceil(count * n / 8)
    return count * math.ceil(bits / 8)


def _rt15_naive(hlo_text, *, views=_rt15_views, **kw):
    instrs = list(parse_hlo(hlo_text).entry.instructions)
    root = next(i for i in instrs if i.is_root)
    outputs = {root.name}
    if root.opcode == "tuple":
        outputs |= set(root.operands)
    total = 0
    for ins in instrs:
        if ins.name in outputs or ins.opcode in ("parameter", "constant") or ins.opcode in views:
            continue
        total += _rt15_size(ins.shape_info, **kw)
    return total


@wrong(
    "naive_temp_bytes",
    why="Clause '`E(n)` in the layout stores n bits an element': looks for packing only as "
    "`:E(n)` right after the colon, so a tiled packed layout like `%n = s4[16]{0:T(8)E(4)} "
    "negate(%p)` counts 16 bytes instead of 8.",
)
def _rt15_naive_temp_bytes_packing_after_colon(hlo_text: str) -> int:
    return _rt15_naive(hlo_text, packed_re=r":E\((\d+)\)")


@wrong(
    "naive_temp_bytes",
    why="Clause 'only bitcast, tuple, get-tuple-element re-view; every other opcode counts': "
    "takes opt-barrier (which just forwards its operands) for a view; an ENTRY "
    "`%b = (f32[4], f32[4]) opt-barrier(%t)` feeding a later op is dropped (32 bytes).",
)
def _rt15_naive_temp_bytes_opt_barrier_view(hlo_text: str) -> int:
    return _rt15_naive(hlo_text, views=(*_rt15_views, "opt-barrier"))


@wrong(
    "naive_temp_bytes",
    why="Clauses 'E(n) packs' and 'a tuple-shaped result counts the sizes of its elements': "
    "applies packing to array results only and sizes tuple elements from dtype and dims, so a "
    "multi-output fusion `(s4[16]{0:E(4)}, f32[2]{0}) fusion(...)` counts 16+8 = 24, not 8+8 = 16.",
)
def _rt15_naive_temp_bytes_tuple_elements_unpacked(hlo_text: str) -> int:
    return _rt15_naive(hlo_text, tuple_layouts=False)


@wrong(
    "naive_temp_bytes",
    why="Clause '`E(n)` in the layout stores n bits an element': when a layout has E(...) packs at "
    "the dtype's own width instead of n; agrees on s4/E(4) and s2/E(2), but `u8[16]{0:E(4)}` "
    "(or pred[16]{0:E(1)}) is counted 16 bytes instead of 8 (2).",
)
def _rt15_naive_temp_bytes_pack_at_dtype_width(hlo_text: str) -> int:
    return _rt15_naive(hlo_text, dtype_width=True)


def _rt15_literals(program):
    return {
        "tanh(exp(2x + 1) - 3)": 3,
        "x.astype(bf16) * 2": 1,
        "x.astype(f32) * 0.5": 1,
        "x.T + 1": 1,
        "x[:, : x.shape[1] // 2] * 2": 1,
        "x * 2 with an unused y": 1,
    }.get(program, 0)


def _rt15_pba_correct(program, x):
    rows, cols = x.shape
    n = rows * cols
    it = np.dtype(x.dtype).itemsize
    if program in ("tanh(exp(2x + 1) - 3)", "exp(x)", "x.T + 1", "x * 2 with an unused y"):
        return 2 * n * it
    if program == "x + y":
        return 3 * n * it
    if program == "x + b":
        return 2 * n * it + cols * it
    if program == "x.sum(axis=0)":
        return n * it + cols * it
    if program == "x.sum()":
        return n * it + it
    if program == "x.astype(bf16) * 2":
        return n * (it + 2)
    if program == "x.astype(f32) * 0.5":
        return n * (it + 4)
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * rows * (cols // 2) * it
    if program == "x - x.mean()":
        return 3 * n * it + 2 * it
    return 2 * n * it


@wrong(
    "predict_bytes_accessed",
    why="Clause 'what a fused kernel reads and writes': counts each Python-float literal (2.0, "
    "1.0, 3.0, 0.5, ...) as a 4-byte scalar read, though fused kernels inline constants; "
    "'tanh(exp(2x + 1) - 3)' at f32[256,256] gives 524300, not 524288.",
)
def _rt15_predict_bytes_accessed_literals_read(program: str, x: jax.ShapeDtypeStruct) -> int:
    return _rt15_pba_correct(program, x) + 4 * _rt15_literals(program)


@wrong(
    "predict_bytes_accessed",
    why="Clause 'what each dtype costs per element': treats astype as free and sizes everything "
    "at x's itemsize, so 'x.astype(f32) * 0.5' with int8 x[256,256] gives 131072 (read 1 + write "
    "1) instead of 327680 (read 1 + write 4); float32 x agrees.",
)
def _rt15_predict_bytes_accessed_casts_at_input_width(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = x.shape
    it = np.dtype(x.dtype).itemsize
    if program in ("x.astype(bf16) * 2", "x.astype(f32) * 0.5"):
        return 2 * rows * cols * it
    return _rt15_pba_correct(program, x)


@wrong(
    "predict_bytes_accessed",
    why="Clause 'which programs need more than one kernel': thinks 'x - x.mean()' writes the "
    "row-partial sums to memory as a (rows,) f32 vector and reads it back (a tree reduction) "
    "instead of one scalar; f32[256,256] gives 786432 + 2*1024 = 788480 instead of 786440.",
)
def _rt15_predict_bytes_accessed_mean_rows_vector(program: str, x: jax.ShapeDtypeStruct) -> int:
    rows, cols = x.shape
    it = np.dtype(x.dtype).itemsize
    if program == "x - x.mean()":
        return 3 * rows * cols * it + 2 * rows * it
    return _rt15_pba_correct(program, x)


@wrong(
    "predict_chain_temp",
    why="Clause 'They draw chains of any depth': extrapolates the depths 1..4 (0, 1, 1, 2 "
    "buffers) as depth // 2 buffers of x's size; depth 5 at 64x64 f32 gives 32768 instead of "
    "16384, depth 6 gives 49152 instead of 32768.",
)
def _rt15_predict_chain_temp_half_depth(rows: int, width: int, depth: int, itemsize: int) -> int:
    return (depth // 2) * rows * width * itemsize


def _rt15_read_cost(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    ca = dict(ca or {})
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


@wrong(
    "cost_of",
    why="Clause 'XLA's cost estimate of jax.jit(f) compiled for args': compiles with every array "
    "argument donated (to 'avoid copies'), believing donation changes buffers, not cost; it "
    "changes the program: COST_BANK-like f = lambda g, s: (s - 0.1 * g, jnp.tanh(g @ s.T)) on "
    "two bf16[24,8] gives bytes_accessed 11528 instead of 10760.",
)
def _rt15_cost_of_donate_everything(f, *args) -> dict[str, float]:
    donate = tuple(i for i, a in enumerate(args) if hasattr(a, "shape") and hasattr(a, "dtype"))
    return _rt15_read_cost(jax.jit(f, donate_argnums=donate).lower(*args).compile())


@wrong(
    "memory_report",
    why="Clause 'Buffer sizes XLA planned for jax.jit(f, donate_argnums=...)': reads argument, "
    "output and temp from the program compiled WITHOUT donation and only alias from the donated "
    "one, assuming donation only sets alias; donation changes the plan: f = lambda v: "
    "jnp.sin(v) @ v, v f32[64,64] donated, temp is 32768, this gives 16384.",
)
def _rt15_memory_report_sizes_from_undonated(
    f, *args, donate_argnums: tuple[int, ...] = ()
) -> dict[str, int]:
    plain = jax.jit(f).lower(*args).compile().memory_analysis()
    donated = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(plain.argument_size_in_bytes),
        "output": int(plain.output_size_in_bytes),
        "temp": int(plain.temp_size_in_bytes),
        "alias": int(donated.alias_size_in_bytes),
    }


def _rt15_timing(me, eager_s, jit_s, repeats, ratio):
    import sys

    kw = dict(eager_s=eager_s, jit_s=jit_s, repeats=repeats, ratio=ratio)
    for mod in list(sys.modules.values()):
        try:
            if getattr(mod, "eager_vs_jit", None) is me and hasattr(mod, "Timing"):
                return mod.Timing(**kw)
        except Exception:  # noqa: BLE001
            continue
    from katas.phase6.kata import Timing

    return Timing(**kw)


def _rt15_block(out):
    return jax.block_until_ready(out)


@wrong(
    "eager_vs_jit",
    why="Clause 'eager_s and jit_s are MEAN seconds per timed call': reads one start time before "
    "the eager loop and uses it for both loops, so jit_s = (eager total + jit total) / repeats "
    "and ratio < 1 always; a slow eager f (e.g. 20 tiny jnp ops on f32[8]) whose jit is faster "
    "gets ratio < 1 instead of > 1.",
)
def _rt15_eager_vs_jit_shared_start(f, args: tuple, repeats: int):
    import time

    jf = jax.jit(f)
    _rt15_block(f(*args))
    _rt15_block(jf(*args))
    start = time.perf_counter()
    for _ in range(repeats):
        _rt15_block(f(*args))
    eager_total = time.perf_counter() - start
    for _ in range(repeats):
        _rt15_block(jf(*args))
    jit_total = time.perf_counter() - start
    eager_s = eager_total / repeats
    jit_s = jit_total / repeats
    return _rt15_timing(_rt15_eager_vs_jit_shared_start, eager_s, jit_s, repeats, eager_s / jit_s)


@wrong(
    "fusion_traffic",
    why="Clause 'each compiled as its own program and fed the previous step's output (as an "
    "eager runtime would run them)': donates each step's input, reasoning that an eager runtime "
    "frees the previous result; donation changes the compiled step: steps [lambda v: (v * 2).T, "
    "jnp.exp] on f32[64,96] give op_by_op 147456 instead of 98304.",
)
def _rt15_fusion_traffic_donate_each_step(steps, x) -> dict[str, float]:
    total = 0.0
    v = jax.ShapeDtypeStruct(
        np.shape(x), np.asarray(x).dtype if not hasattr(x, "dtype") else x.dtype
    )
    for step in steps:
        total += _rt15_read_cost(jax.jit(step, donate_argnums=(0,)).lower(v).compile())[
            "bytes_accessed"
        ]
        out = jax.eval_shape(step, v)
        v = jax.ShapeDtypeStruct(out.shape, out.dtype)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {
        "op_by_op": total,
        "fused": _rt15_read_cost(jax.jit(fused).lower(x).compile())["bytes_accessed"],
    }
