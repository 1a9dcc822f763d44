"""Red team, phase 6, round 8: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt8_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


def _rt8_read(ca):
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt8_timing(me, eager_s, jit_s, repeats, ratio):
    """The Timing of the module this answer was swapped into (else the stub's)."""
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


# ----------------------------------------------------------------------------------- cost_of


@wrong(
    "cost_of",
    why="'for the arguments exactly as given': normalises every argument with np.asarray first "
    "('jit wants arrays'), which turns a Python scalar into a strongly typed float32 array; "
    "bf16 * that promotes to float32. f = lambda s, x: x * s with (2.0, bf16[64,64]): XLA says "
    "16392 bytes for the weak scalar, this says 24580",
)
def _rt8_cost_of_numpy_args(f, *args):
    arrays = [np.asarray(a) for a in args]
    return _rt8_read(_rt8_ca(jax.jit(f).lower(*arrays).compile()))


@wrong(
    "cost_of",
    why="'Return {...} AS FLOATS': casts every figure with int() ('flops are a count'); equal "
    "in value, but the contract's type is float: cost_of(jnp.exp, f32[256,256]) returns "
    "{'flops': 0, ...} with int values, not 0.0 / 65536.0 floats",
)
def _rt8_cost_of_int_counts(f, *args):
    ca = _rt8_ca(jax.jit(f).lower(*args).compile())
    return {
        "flops": int(ca.get("flops", 0)),
        "transcendentals": int(ca.get("transcendentals", 0)),
        "bytes_accessed": int(ca.get("bytes accessed", 0)),
    }


# ---------------------------------------------------------------------------- fusion_traffic


@wrong(
    "fusion_traffic",
    why="'fused: bytes accessed by one compiled program that applies all the steps' to x: "
    "compiles the fused chain as a closure over x (jax.jit(lambda: run(x))), so x is a "
    "constant of the program, not a parameter, and XLA does not count reading it: UNARY_STEPS "
    "on f32[256,256] gives fused 262148, XLA says 524288 for the program taking x",
)
def _rt8_fusion_traffic_closure_over_x(steps, x):
    def run(v):
        for step in steps:
            v = step(v)
        return v

    total, v = 0.0, x
    for step in steps:
        total += float(_rt8_ca(jax.jit(step).lower(v).compile()).get("bytes accessed", 0.0))
        v = jax.eval_shape(step, v)
    fused = float(_rt8_ca(jax.jit(lambda: run(x)).lower().compile()).get("bytes accessed", 0.0))
    return {"op_by_op": total, "fused": fused}


# ----------------------------------------------------------------------------- memory_report


@wrong(
    "memory_report",
    why="'temp ... exactly as XLA planned': reads temp as the scratch alive at the peak, "
    "peak_memory_in_bytes - argument - output + alias, instead of temp_size_in_bytes; XLA:CPU "
    "leaves the peak at 0, so this matches on elementwise updates (the shown update(state, "
    "grad): temp 0) and fails wherever a temp exists: matmul_chain(4) f32[128,128] gives 0, "
    "XLA plans 131072; the bf16 bank program with a tuple out gives 0, XLA 3072",
)
def _rt8_memory_report_temp_from_peak(f, *args, donate_argnums=()):
    ma = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    arg, out, alias = (
        int(ma.argument_size_in_bytes),
        int(ma.output_size_in_bytes),
        int(ma.alias_size_in_bytes),
    )
    return {
        "argument": arg,
        "output": out,
        "temp": max(int(ma.peak_memory_in_bytes) - arg - out + alias, 0),
        "alias": alias,
    }


# ------------------------------------------------------------------------ aliased_parameters

_RT8_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{\}\s*,\s*([\w-]+)\s*\)")


@wrong(
    "aliased_parameters",
    why="'the second braces are an index INSIDE parameter 3': the regex only matches entries "
    "whose parameter index is empty '(3, {}, ...)', so an output aliasing an element of a tuple "
    "parameter is dropped: HANDWRITTEN_ALIAS's '{2}: (0, {1}, must-alias)' is lost, "
    "{1: (0,)} instead of {1: (0,), 0: (2,)}",
)
def _rt8_aliased_parameters_flat_parameters_only(hlo_text):
    header = hlo_text.lstrip().splitlines()[0] if hlo_text.strip() else ""
    at = header.find("input_output_alias=")
    if at < 0:
        return {}
    out = {}
    for m in _RT8_ENTRY.finditer(header[at:]):
        out[int(m.group(2))] = tuple(int(t) for t in m.group(1).replace(" ", "").split(",") if t)
    return out


# -------------------------------------------------------------------------- naive_temp_bytes

_RT8_VIEWS = {"bitcast", "tuple", "get-tuple-element"}


def _rt8_bits(dtype):
    if dtype == "pred":
        return 8
    return int(re.match(r"[a-z]+(\d+)", dtype).group(1))


def _rt8_size(shape, *, table=0):
    if shape.is_tuple:
        return table * len(shape.elements) + sum(_rt8_size(s, table=table) for s in shape.elements)
    n = math.prod(shape.dims) if shape.dims else 1
    bits = _rt8_bits(shape.dtype)
    if "E(" in (shape.text or ""):
        return -(-(n * bits) // 8)
    return n * -(-bits // 8)


def _rt8_naive(hlo_text, *, views=_RT8_VIEWS, table=0):
    entry = parse_hlo(hlo_text).entry
    root = next(i for i in entry.instructions if i.is_root)
    outputs = {root.name.lstrip("%")}
    if root.opcode == "tuple":
        outputs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in entry.instructions:
        if ins.opcode in ("parameter", "constant") or ins.opcode in views:
            continue
        if ins.name.lstrip("%") in outputs:
            continue
        total += _rt8_size(ins.shape_info, table=table)
    return total


@wrong(
    "naive_temp_bytes",
    why="'a tuple-shaped result counts the sizes of its elements': adds the 8-byte pointer per "
    "element that memory_report's docstring says a tuple holds ('a tuple output also holds a "
    "small table of pointers'); right on every ENTRY without a tuple-shaped intermediate, wrong "
    "on NAIVE_ODD_TYPES (its 3-element multi-output fusion: +24 bytes)",
)
def _rt8_naive_temp_bytes_tuple_pointer_table(hlo_text):
    return _rt8_naive(hlo_text, table=8)


@wrong(
    "naive_temp_bytes",
    why="'only bitcast, tuple, get-tuple-element re-view a buffer': also treats broadcast as a "
    "view ('a broadcast is a stride-0 view, it copies nothing'); in ENTRY a broadcast writes a "
    "full buffer: NAIVE_TUPLE_ROOT's %bc bf16[8,6] (96 bytes) is dropped",
)
def _rt8_naive_temp_bytes_broadcast_is_view(hlo_text):
    return _rt8_naive(hlo_text, views=_RT8_VIEWS | {"broadcast"})


# ------------------------------------------------------------------------------ eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="'ratio = eager_s / jit_s': reports the speed-up as jit_s / eager_s ('fraction of the "
    "eager time jit takes'); eager_s and jit_s are right, ratio is their reciprocal: eager "
    "2 ms, jit 0.5 ms gives 0.25, want 4",
)
def _rt8_eager_vs_jit_ratio_inverted(f, args, repeats):
    jitted = jax.jit(f)
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    jax.block_until_ready(jitted(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(jitted(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt8_timing(_rt8_eager_vs_jit_ratio_inverted, eager, jit, repeats, jit / eager)


# ------------------------------------------------------------------------ predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'elements take itemsize bytes (1, 2, 4 or 8)': sizes each product at max(itemsize, 4) "
    "('integer and half-precision dots accumulate in 32 bits, the products are kept wide'); "
    "right for 4- and 8-byte dtypes, wrong for int8 and bf16: (64, 64, 3, 1) gives 16384, "
    "XLA plans 4096; (64, 64, 4, 2) gives 32768, XLA 16384",
)
def _rt8_predict_chain_temp_wide_accumulator(rows, width, depth, itemsize):
    size = rows * width * max(itemsize, 4)
    if depth <= 1:
        return 0
    if depth == 2 or depth % 2 == 1:
        return size
    return 2 * size


# -------------------------------------------------------------------- predict_bytes_accessed


def _rt8_bytes(program, x, *, sum0_transposed=False):
    rows, cols = x.shape
    n = rows * cols
    w = np.dtype(x.dtype).itemsize
    if program in ("tanh(exp(2x + 1) - 3)", "exp(x)", "x.T + 1", "x * 2 with an unused y"):
        return 2 * n * w
    if program == "x + y":
        return 3 * n * w
    if program == "x + b":
        return 2 * n * w + cols * w
    if program == "x.sum(axis=0)":
        if sum0_transposed:
            return 3 * n * 4 + cols * 4
        return n * 4 + cols * 4
    if program == "x.sum()":
        return n * 4 + 4
    if program == "x.astype(bf16) * 2":
        return n * w + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * w + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * rows * (cols // 2) * w
    if program == "x - x.mean()":
        return 3 * n * 4 + 8
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="'which programs need more than one kernel': takes x.sum(axis=0) (a reduction over the "
    "major, strided axis) as two kernels, a transpose copy (read x, write x) and then a row "
    "reduction (read the copy, write one float per column); XLA:CPU reduces columns in one "
    "kernel: f32[64,96] gives 74112, XLA says 24960",
)
def _rt8_predict_bytes_accessed_sum0_transpose_first(program, x):
    return _rt8_bytes(program, x, sum0_transposed=True)


@wrong(
    "predict_bytes_accessed",
    why="'every dimension is one of BYTES_DIMS' (up to 300 by 300): takes x.sum() over more "
    "than 65536 elements as a tree reduction, one partial per row written and read back "
    "before the total ('a big reduction needs a second pass', the README's mean rule carried "
    "over); XLA:CPU sums any bank shape in one kernel: f32[300,300] gives 362404, XLA 360004",
)
def _rt8_predict_bytes_accessed_big_sum_two_pass(program, x):
    rows, cols = x.shape
    if program == "x.sum()" and rows * cols > 65536:
        return rows * cols * 4 + 2 * rows * 4 + 4
    return _rt8_bytes(program, x)
