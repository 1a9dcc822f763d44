"""Red team, phase 6, round 12: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt12_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


def _rt12_cost(ca):
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt12_strong(a):
    # "normalise every argument to an array so the cache key is stable"
    if isinstance(a, (bool, int, float, complex)):
        return np.asarray(a)
    return a


def _rt12_timing(me, eager_s, jit_s, repeats, ratio):
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


def _rt12_block(out):
    return jax.tree_util.tree_map(
        lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, out
    )


# ----------------------------------------------------------------------------------- cost_of


@wrong(
    "cost_of",
    why="'for the arguments exactly as given': turns Python scalars into NumPy arrays first "
    "(np.asarray(2.0) is float64, canonicalised to a *strong* float32), so a weakly typed "
    "scalar now promotes the other operand; cost_of(lambda s, x: x * s, 2.0, bf16[64,64]) "
    "gives bytes_accessed 24580 (an f32 output) and flops 8192, XLA says 16392 and 12290 "
    "for the arguments as given (bf16 output)",
)
def _rt12_cost_of_scalars_strong(f, *args):
    args = tuple(_rt12_strong(a) for a in args)
    return _rt12_cost(_rt12_ca(jax.jit(f).lower(*args).compile()))


# ---------------------------------------------------------------------------- fusion_traffic


@wrong(
    "fusion_traffic",
    why="'op_by_op: ... each compiled as its own program': costs each step from its Lowered "
    "stage (no compile per step, 'each step is one program anyway'), so a step holding several "
    "ops counts its intermediates as memory traffic; STEP_BANK 'bf16, several ops and a row "
    "sum in one step' (sum(v*2+1, axis=1) on bf16[40,24]) is over-counted",
)
def _rt12_fusion_traffic_step_lowered(steps, x):
    total = 0.0
    v = x
    for step in steps:
        ca = jax.jit(step).lower(v).cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0]
        total += float((ca or {}).get("bytes accessed", 0.0))
        v = jax.eval_shape(step, v)

    def fused(u):
        for s in steps:
            u = s(u)
        return u

    ca = _rt12_ca(jax.jit(fused).lower(x).compile())
    return {"op_by_op": total, "fused": float(ca.get("bytes accessed", 0.0))}


# ----------------------------------------------------------------------------- memory_report


@wrong(
    "memory_report",
    why="'compiled for args': converts Python scalars to NumPy arrays (strong float32/int32), "
    "so a weak scalar promotes the array it multiplies; memory_report(lambda s, x: x * s, 2.0, "
    "bf16[24,8]) plans an f32[24,8] output (768 bytes) where XLA plans bf16 (384)",
)
def _rt12_memory_report_scalars_strong(f, *args, donate_argnums=()):
    args = tuple(_rt12_strong(a) for a in args)
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


# -------------------------------------------------------------------------- naive_temp_bytes

_RT12_BITS = {"pred": 8}


def _rt12_bits(dtype):
    import re

    d = str(dtype).lower()
    if d in _RT12_BITS:
        return _RT12_BITS[d]
    m = re.match(r"[a-z]+(\d+)", d)
    return int(m.group(1)) if m else 32


def _rt12_size(si):
    if si.is_tuple:
        return sum(_rt12_size(e) for e in (si.elements or ()))
    n = math.prod(int(d) for d in (si.dims or ()))
    import re

    lay = str(getattr(si, "layout", "") or "")
    m = re.search(r"E\((\d+)\)", lay)
    if m:
        return (n * int(m.group(1)) + 7) // 8
    return n * ((_rt12_bits(si.dtype) + 7) // 8)


def _rt12_naive(hlo_text, skip=lambda ins, instrs: False, views=()):
    entry = parse_hlo(hlo_text).entry
    instrs = list(entry.instructions)
    root = next(i for i in instrs if i.is_root)
    outs = {root.name.lstrip("%")}
    if root.opcode == "tuple":
        outs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in instrs:
        if ins.name.lstrip("%") in outs:
            continue
        if ins.opcode in ("parameter", "constant", "bitcast", "tuple", "get-tuple-element", *views):
            continue
        if skip(ins, instrs):
            continue
        total += _rt12_size(ins.shape_info)
    return total


@wrong(
    "naive_temp_bytes",
    why="'only re-view a buffer (the opcodes bitcast, tuple, get-tuple-element)': also treats "
    "copy as a view ('a copy just re-lays the same data'); NAIVE_COPIES' two copies "
    "(f32[6,4]{0,1} 96 bytes, s16[6,4]{0,1} 48 bytes) each write a new buffer and are left out",
)
def _rt12_naive_temp_bytes_copy_is_view(hlo_text):
    return _rt12_naive(hlo_text, views=("copy",))


def _rt12_consumed(ins, instrs):
    name = ins.name.lstrip("%")
    for other in instrs:
        if any(str(o).lstrip("%") == name for o in other.operands):
            return False
    return True


@wrong(
    "naive_temp_bytes",
    why="'Sum the result sizes of the ENTRY instructions': counts an instruction only if some "
    "other instruction reads it ('an intermediate is a value passed on'), so a dead ENTRY "
    "instruction (an extra `%d = f32[8]{0} negate(%x)` nobody reads) is left out; valid "
    "HLO, 32 bytes missing",
)
def _rt12_naive_temp_bytes_consumed_only(hlo_text):
    return _rt12_naive(hlo_text, skip=_rt12_consumed)


@wrong(
    "naive_temp_bytes",
    why="'a while loop whose state nests a tuple ... holds every array inside it': skips "
    "while results ('the loop state is updated in place in the parameter's buffer'); an ENTRY "
    "`%w = ((s32[], f32[8]), f32[4,4]) while(%init)` in a hand-written ENTRY, not at the ROOT, "
    "loses its 4+32+64 bytes (164 -> 64)",
)
def _rt12_naive_temp_bytes_while_in_place(hlo_text):
    return _rt12_naive(hlo_text, views=("while",))


# ----------------------------------------------------------------------------- eager_vs_jit


def _rt12_wait(out):
    # "results that can be waited on have block_until_ready; anything else is already done"
    getattr(out, "block_until_ready", lambda: out)()
    return out


@wrong(
    "eager_vs_jit",
    why="'Block on every result with .block_until_ready()': calls block_until_ready only on a "
    "result that has the method, so a function returning a tuple or dict of arrays is never "
    "waited for and both loops time dispatch only; eager_vs_jit(lambda v: (v @ v, v.sum()), "
    "(f32[1024,1024],), 5) reports the queueing time, not the matmuls",
)
def _rt12_eager_vs_jit_container_unblocked(f, args, repeats):
    g = jax.jit(f)
    _rt12_wait(f(*args))
    _rt12_wait(g(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt12_wait(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt12_wait(g(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt12_timing(_rt12_eager_vs_jit_container_unblocked, eager, jit, repeats, eager / jit)


# --------------------------------------------------------------------- predict_bytes_accessed


def _rt12_bytes(program, x, half_transcendental_f32=False, align=False):
    r, c = (int(d) for d in x.shape)
    n = r * c
    it = int(np.dtype(x.dtype).itemsize)

    def A(b):  # one array's bytes; "XLA:CPU aligns each buffer to 64 bytes"
        return -(-b // 64) * 64 if align else b

    out_it = it
    if half_transcendental_f32 and it == 2 and program in ("tanh(exp(2x + 1) - 3)", "exp(x)"):
        out_it = 4  # "XLA:CPU computes bf16/f16 exp in f32, so the kernel writes f32"
    if program in ("tanh(exp(2x + 1) - 3)", "exp(x)", "x.T + 1", "x * 2 with an unused y"):
        return A(n * it) + A(n * out_it)
    if program == "x + y":
        return 3 * A(n * it)
    if program == "x + b":
        return 2 * A(n * it) + A(c * it)
    if program == "x.sum(axis=0)":
        return A(n * 4) + A(c * 4)
    if program == "x.sum()":
        return A(n * 4) + 4
    if program == "x.astype(bf16) * 2":
        return A(n * it) + A(n * 2)
    if program == "x.astype(f32) * 0.5":
        return A(n * it) + A(n * 4)
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * A(r * (c // 2) * it)
    if program == "x - x.mean()":
        return 3 * A(n * 4) + 8
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="'each element costs its dtype's width': believes XLA:CPU upcasts bf16/f16 "
    "transcendentals to f32 and so writes the result at 4 bytes; exp(x) on bf16[64,96] gives "
    "36864, XLA says 24576 (the upcast stays in registers, the output is bf16); right on f32",
)
def _rt12_predict_bytes_accessed_half_transcendental_f32(program, x):
    return _rt12_bytes(program, x, half_transcendental_f32=True)


@wrong(
    "predict_bytes_accessed",
    why="'every array is read or written at its own width': rounds every array up to XLA:CPU's "
    "64-byte buffer alignment (borrowed from predict_chain_temp); right on every BYTES_CASES "
    "shape, but bfloat16 x + b with x[100,300]... b is 600 bytes -> 640, and bf16 "
    "x[:, :50]*2 on x[100,100] (10000 bytes) -> 10048 each way",
)
def _rt12_predict_bytes_accessed_aligned_buffers(program, x):
    return _rt12_bytes(program, x, align=True)


# ------------------------------------------------------------------------ aliased_parameters


@wrong(
    "aliased_parameters",
    why="'An array output's index is {} (give ())': falls back to output 0 when the braces "
    "are empty ('{} is the first/only output'), so an array output aliased to a parameter "
    "gives 0 instead of (); ALIAS_BANK 'second argument, array output' gives {1: 0}, want "
    "{1: ()}",
)
def _rt12_aliased_parameters_empty_as_zero(hlo_text):
    import re

    first = hlo_text.split("\n", 1)[0]
    m = re.search(r"input_output_alias=\{(.*?\))\s*\}", first)
    raw = m.group(1) if m else ""
    out = {}
    for o, p in re.findall(r"\{([\d,\s]*)\}\s*:\s*\((\d+)\s*,", raw):
        idx = tuple(int(t) for t in o.replace(" ", "").split(",") if t)
        out[int(p)] = idx or 0
    return out


# ------------------------------------------------------------------------ predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'both of a dtype whose elements take itemsize bytes (... up to complex64)': right "
    "parity rule (0 below depth 2, one x-sized buffer at depth 2 and odd depths, two at even "
    "depths >= 4), but believes XLA:CPU splits a complex64 dot into real and imaginary f32 "
    "planes and keeps both planes of the last product in temp; itemsize=8 rows=4 width=16 "
    "depth=3 gives 1024, XLA plans 512 (complex dots stay whole); right for itemsize 1, 2, 4",
)
def _rt12_predict_chain_temp_complex_planes(rows, width, depth, itemsize):
    x = rows * width * itemsize
    if depth < 2:
        t = 0
    elif depth == 2 or depth % 2 == 1:
        t = x
    else:
        t = 2 * x
    if itemsize == 8 and depth >= 1:
        t += 2 * rows * width * 4  # real and imaginary f32 planes of a product
    return t
