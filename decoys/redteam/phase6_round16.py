"""Red team, phase 6, round 16: a misspelled cost key, late-binding step closures, step costs
memoized per function, donation kept only for matching array arguments, nested output indices cut to one number,
bit width from the last number of a dtype name, tile padding, tuple outputs matched by shape,
a jit wrapper rebuilt per timed call, a chain temp that never shrinks, and slices read in
whole cache lines."""

from __future__ import annotations

import math
import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt16_Timing(**kw):
    import sys

    for mod in list(sys.modules.values()):
        try:
            if getattr(
                mod, "eager_vs_jit", None
            ) is _rt16_eager_vs_jit_wrapper_per_call and hasattr(mod, "Timing"):
                return mod.Timing(**kw)
        except Exception:  # noqa: BLE001
            continue
    from katas.phase6.kata import Timing

    return Timing(**kw)


def _rt16_ca(f, *args):
    ca = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


@wrong(
    "cost_of",
    why="Clause 'A key XLA leaves out counts as 0.0': reads the key as 'transcendental' (singular), "
    "which XLA never writes, so transcendentals is always 0.0; chain (tanh(exp(...))) on "
    "f32[256,256] gives 0.0 instead of 131072.0.",
)
def _rt16_cost_of_singular_key(f, *args) -> dict[str, float]:
    ca = _rt16_ca(f, *args)
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendental", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt16_bytes(f, *args):
    return float(_rt16_ca(f, *args).get("bytes accessed", 0.0))


@wrong(
    "fusion_traffic",
    why="Clause 'each compiled as its own program and fed the previous step's output': builds "
    "`[lambda v: step(v) for step in steps]` first, a late-binding closure, so every program "
    "runs the LAST step; STEP_BANK 'dtype changes' [astype bf16, exp] on f32[33,20] gives "
    "op_by_op 2*exp on f32 (10560) instead of 3960+2640 = 6600 (and fused likewise wrong).",
)
def _rt16_fusion_traffic_late_binding(steps, x) -> dict[str, float]:
    progs = [lambda v: step(v) for step in steps]  # noqa: B023
    total = 0.0
    v = jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
    for p in progs:
        total += _rt16_bytes(p, v)
        v = jax.eval_shape(p, v)

    def fused(u):
        for p in progs:
            u = p(u)
        return u

    return {"op_by_op": total, "fused": _rt16_bytes(fused, x)}


@wrong(
    "fusion_traffic",
    why="Clause 'each step's program is compiled for the previous step's output, shape and dtype "
    "both': memoizes the cost per step function (id(step)) to avoid recompiling a repeated step, "
    "so [h, h] with h = lambda v: v[: v.shape[0] // 2] * 2 on f32[256] counts the second h at "
    "the first's size: op_by_op 2*1024 = 2048 instead of 1024+512 = 1536.",
)
def _rt16_fusion_traffic_memo_per_step(steps, x) -> dict[str, float]:
    memo = {}
    total = 0.0
    v = jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
    for step in steps:
        if id(step) not in memo:
            memo[id(step)] = _rt16_bytes(step, v)
        total += memo[id(step)]
        v = jax.eval_shape(step, v)

    def fused(u):
        for step in steps:
            u = step(u)
        return u

    return {"op_by_op": total, "fused": _rt16_bytes(fused, x)}


@wrong(
    "memory_report",
    why="Clause 'a donated buffer that no output can use is not aliased': to silence the warning "
    "it donates only arguments that are arrays (have .shape) matching an output's shape and dtype, "
    "so a donated pytree argument is dropped: MEMORY_BANK 'f16 pytree, first leaf donated' "
    "gives alias 0 instead of the bytes of p['w'] and p['b'].",
)
def _rt16_memory_report_donate_matching_arrays(
    f, *args, donate_argnums: tuple[int, ...] = ()
) -> dict[str, int]:
    outs = jax.tree.leaves(jax.eval_shape(f, *args))
    sigs = {(tuple(o.shape), np.dtype(o.dtype)) for o in outs}
    keep = tuple(
        i
        for i in donate_argnums
        if hasattr(args[i], "shape")
        and (tuple(np.shape(args[i])), np.asarray(args[i]).dtype) in sigs
    )
    m = jax.jit(f, donate_argnums=keep).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


@wrong(
    "aliased_parameters",
    why="Clause '{parameter number: output shape index}': reads the output index as one number "
    "(`\\{(\\d*)\\}`), so a nested output index is dropped: header "
    "'input_output_alias={ {1, 0}: (2, {}, may-alias) }' gives {} instead of {2: (1, 0)}.",
)
def _rt16_aliased_parameters_flat_output(hlo_text: str) -> dict[int, tuple[int, ...]]:
    first = hlo_text.split("\n", 1)[0]
    m = re.search(r"input_output_alias=\{(.*?)\}\s*(,\s*\w+=|$)", first)
    body = m.group(1) if m else ""
    out = {}
    for o, p in re.findall(r"\{(\d*)\}\s*:\s*\((\d+)\s*,", body):
        out[int(p)] = (int(o),) if o else ()
    return out


def _rt16_bits(dtype, last=False):
    if dtype == "pred":
        return 8
    nums = re.findall(r"\d+", dtype or "")
    if not nums:
        return 0
    return int(nums[-1] if last else nums[0])


def _rt16_size(shape, last=False, tiles=False):
    if shape.is_tuple:
        return sum(_rt16_size(e, last, tiles) for e in shape.elements)
    dims = [d or 0 for d in shape.dims]
    layout = shape.layout or ""
    if tiles:
        t = re.search(r"T\(([\d,]+)\)", layout)
        if t:
            tile = [int(v) for v in t.group(1).split(",")]
            for k in range(1, min(len(tile), len(dims)) + 1):
                dims[-k] = -(-dims[-k] // tile[-k]) * tile[-k]
    count = math.prod(dims)
    m = re.search(r"E\((\d+)\)", layout)
    if m:
        return math.ceil(count * int(m.group(1)) / 8)
    return count * math.ceil(_rt16_bits(shape.dtype, last) / 8)


def _rt16_naive(hlo_text, last=False, tiles=False, by_shape=False):
    instrs = list(parse_hlo(hlo_text).entry.instructions)
    root = next(i for i in instrs if i.is_root)
    outs = {root.name}
    out_shapes = set()
    if root.opcode == "tuple":
        outs |= set(root.operands)
        byname = {i.name: i for i in instrs}
        out_shapes = {str(byname[o].shape) for o in root.operands if o in byname}
    total = 0
    for ins in instrs:
        if ins.name in outs or ins.opcode in (
            "parameter",
            "constant",
            "bitcast",
            "tuple",
            "get-tuple-element",
        ):
            continue
        if by_shape and str(ins.shape) in out_shapes:
            continue
        total += _rt16_size(ins.shape_info, last, tiles)
    return total


@wrong(
    "naive_temp_bytes",
    why="Clause 'read from the dtype's bit width': takes the LAST number in the dtype name; right "
    "for f32, bf16, s8, c64, f8e4m3fn (3 -> 1 byte), f8e5m2 (2 -> 1 byte), but f8e4m3b11fnuz "
    "reads 11 bits -> 2 bytes: `%n = f8e4m3b11fnuz[16]{0} negate(%p)` counts 32, not 16.",
)
def _rt16_naive_temp_bytes_last_number_bits(hlo_text: str) -> int:
    return _rt16_naive(hlo_text, last=True)


@wrong(
    "naive_temp_bytes",
    why="Clause 'A result's size is its element count times the bytes per element ... unless its "
    "layout packs': pads dims up to the layout's tile T(...) (TPU habit); "
    "`%n = f32[3,5]{1,0:T(8,128)} negate(%p)` counts 8*128*4 = 4096 instead of 60.",
)
def _rt16_naive_temp_bytes_tile_padding(hlo_text: str) -> int:
    return _rt16_naive(hlo_text, tiles=True)


@wrong(
    "naive_temp_bytes",
    why="Clause 'when the ROOT is a tuple, the instructions it gathers': recognises outputs by "
    "their shape instead of their name, so every intermediate shaped like an output is skipped; "
    "tuple_chain (a, b@w with b an f32[128,128] intermediate) gives 0 instead of 65536.",
)
def _rt16_naive_temp_bytes_outputs_by_shape(hlo_text: str) -> int:
    return _rt16_naive(hlo_text, by_shape=True)


@wrong(
    "eager_vs_jit",
    why="Clause 'jit_s ... MEAN seconds per timed call of the compiled function': writes "
    "`jax.jit(f)(*args)` inside the timed loop, so each timed call builds a new jit wrapper and "
    "goes through the slow cache lookup, measuring wrapper construction, not the compiled call; "
    "for jnp.sin(x)*2 on f32[8] jit_s is several times the true per-call time.",
)
def _rt16_eager_vs_jit_wrapper_per_call(f, args: tuple, repeats: int):
    jax.block_until_ready(f(*args))
    jax.block_until_ready(jax.jit(f)(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(jax.jit(f)(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt16_Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)


@wrong(
    "predict_chain_temp",
    why="Clause 'Make the chain longer and temp does not grow ... not the same at every depth': "
    "believes temp can never shrink as the chain grows (0,0,1,1,2 then 2 forever); at depth 5 "
    "f32 64x64 XLA plans 16384 (one buffer, odd depth) but this says 32768.",
)
def _rt16_predict_chain_temp_monotone(rows: int, width: int, depth: int, itemsize: int) -> int:
    buffers = [0, 0, 1, 1][depth] if depth < 4 else 2
    return buffers * rows * width * itemsize


def _rt16_pba(program, x):
    rows, cols = x.shape
    n = rows * cols
    it = np.dtype(x.dtype).itemsize
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
    why="Clause 'a slice reads its part': rounds each row's read of the slice up to whole 64-byte "
    "cache lines; 'x[:, : x.shape[1] // 2] * 2' f32[64,100] reads 50*4=200 -> 256 bytes a row: "
    "64*256 + 12800 = 29184 instead of 25600 (agrees when half a row is a multiple of 64 bytes).",
)
def _rt16_predict_bytes_accessed_cache_lines(program: str, x: jax.ShapeDtypeStruct) -> int:
    if program == "x[:, : x.shape[1] // 2] * 2":
        rows, cols = x.shape
        it = np.dtype(x.dtype).itemsize
        row = (cols // 2) * it
        return rows * (-(-row // 64) * 64) + rows * row
    return _rt16_pba(program, x)
