"""Red team, phase 6, round 9: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt9_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


def _rt9_cost(f, *args):
    ca = _rt9_ca(jax.jit(f).lower(*args).compile())
    return float(ca.get("bytes accessed", 0.0))


def _rt9_timing(me, eager_s, jit_s, repeats, ratio):
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
    why="'A key XLA leaves out counts as 0.0': reads each key with dict.get and no default, so a "
    "key XLA omits comes back as None; jnp.exp on f32[64,64] has no 'flops' key: gives "
    "flops=None, want 0.0 (an MLP: transcendentals=None)",
)
def _rt9_cost_of_missing_as_none(f, *args):
    ca = _rt9_ca(jax.jit(f).lower(*args).compile())
    g = ca.get("flops")
    t = ca.get("transcendentals")
    b = ca.get("bytes accessed")
    return {
        "flops": None if g is None else float(g),
        "transcendentals": None if t is None else float(t),
        "bytes_accessed": None if b is None else float(b),
    }


# ---------------------------------------------------------------------------- fusion_traffic


@wrong(
    "fusion_traffic",
    why="'op_by_op: each step compiled as its own program fed the previous step's output': "
    "compiles the growing prefix steps[:i+1] on x instead (each prefix is fused, so its "
    "intermediates never reach memory); equal on same-shape same-dtype unary chains, wrong "
    "when a step changes the dtype: [astype(bf16), exp] on f32[33,20] gives "
    "(4+2)+(4+2) bytes/elem, want (4+2)+(2+2)",
)
def _rt9_fusion_traffic_prefix_programs(steps, x):
    steps = list(steps)

    def upto(k):
        def run(v):
            for s in steps[:k]:
                v = s(v)
            return v

        return run

    op = sum(_rt9_cost(upto(k + 1), x) for k in range(len(steps)))
    return {"op_by_op": float(op), "fused": _rt9_cost(upto(len(steps)), x)}


# ----------------------------------------------------------------------------- memory_report


@wrong(
    "memory_report",
    why="'argument: exactly as XLA planned': subtracts the aliased bytes from the argument size "
    "('a donated argument is the output, not an extra buffer'); update(state, grad) f32[64,64] "
    "with state donated: gives argument 16384, XLA plans 32768",
)
def _rt9_memory_report_argument_net_of_alias(f, *args, donate_argnums=()):
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes) - int(m.alias_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


# ------------------------------------------------------------------------ aliased_parameters


_RT9_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}\s*,\s*[\w-]+\s*\)")


@wrong(
    "aliased_parameters",
    why="'the second braces are an index inside parameter N, not the output's': takes the "
    "index from the second braces; HANDWRITTEN_ALIAS '{0}: (1, {}, may-alias), {2}: (0, {1}, "
    "must-alias)' gives {1: (), 0: (1,)}, want {1: (0,), 0: (2,)}; every JAX tuple output "
    "(train_step, loss_first) comes back as ()",
)
def _rt9_aliased_parameters_inner_index(hlo_text):
    header = hlo_text.splitlines()[0] if hlo_text else ""
    m = re.search(r"input_output_alias=\{(.*?)\}\s*,\s*entry_computation_layout", header)
    body = m.group(1) if m else ""
    out = {}
    for _o, p, inner in _RT9_ENTRY.findall(body):
        out[int(p)] = tuple(int(t) for t in inner.replace(" ", "").split(",") if t)
    return out


# --------------------------------------------------------------------------- naive_temp_bytes

_RT9_VIEWS = {"bitcast", "tuple", "get-tuple-element"}


def _rt9_bits(dtype, pred_bits):
    if dtype == "pred":
        return pred_bits
    return int(re.match(r"[a-z]+(\d+)", dtype).group(1))


def _rt9_size(shape, pred_bits=8):
    if shape.is_tuple:
        return sum(_rt9_size(s, pred_bits) for s in shape.elements)
    n = math.prod(shape.dims) if shape.dims else 1
    bits = _rt9_bits(shape.dtype, pred_bits)
    if "E(" in (shape.text or "") or shape.dtype == "pred" and pred_bits == 1:
        return -(-(n * bits) // 8)
    return n * -(-bits // 8)


def _rt9_naive(hlo_text, *, views=_RT9_VIEWS, pred_bits=8, root_operands=False):
    entry = parse_hlo(hlo_text).entry
    root = next(i for i in entry.instructions if i.is_root)
    outputs = {root.name.lstrip("%")}
    if root.opcode == "tuple" or root_operands:
        outputs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in entry.instructions:
        if ins.opcode in ("parameter", "constant") or ins.opcode in views:
            continue
        if ins.name.lstrip("%") in outputs:
            continue
        total += _rt9_size(ins.shape_info, pred_bits)
    return total


@wrong(
    "naive_temp_bytes",
    why="'pred: 1 byte': packs pred as 1 bit an element ('its bit width is 1, round the array up "
    "to bytes', as for s4); NAIVE_ODD_TYPES' %lt pred[5] counts 1 byte, want 5",
)
def _rt9_naive_temp_bytes_pred_as_bits(hlo_text):
    return _rt9_naive(hlo_text, pred_bits=1)


@wrong(
    "naive_temp_bytes",
    why="'only bitcast, tuple and get-tuple-element re-view a buffer': also skips reshape "
    "('a reshape moves no data', as the README says of bitcast); NAIVE_COPIES' %r f32[24] and "
    "%yr s16[24] (96+48 bytes) are dropped",
)
def _rt9_naive_temp_bytes_reshape_is_view(hlo_text):
    return _rt9_naive(hlo_text, views=_RT9_VIEWS | {"reshape"})


@wrong(
    "naive_temp_bytes",
    why="'the ROOT and, when the ROOT is a tuple, what it gathers': excludes the ROOT's operands "
    "whatever its opcode ('what the ROOT consumes is output'); NAIVE_COPIES' ROOT add(%r, %yf) "
    "drops %r (96) and %yf (96); the chain x@w@w@w drops the second product",
)
def _rt9_naive_temp_bytes_root_operands(hlo_text):
    return _rt9_naive(hlo_text, root_operands=True)


# ------------------------------------------------------------------------------ eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="'repeats: timed calls of each kind': reports the timed calls of both kinds together, "
    "2 * repeats; eager_vs_jit(f, args, 5) gives repeats=10, want 5",
)
def _rt9_eager_vs_jit_repeats_total(f, args, repeats):
    jf = jax.jit(f)
    jax.block_until_ready(f(*args))
    jax.block_until_ready(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    e = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(jf(*args))
    j = (time.perf_counter() - t0) / repeats
    return _rt9_timing(_rt9_eager_vs_jit_repeats_total, e, j, 2 * repeats, e / j)


# ------------------------------------------------------------------------ predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'which allocation besides temp can hold one of them': puts the first product in the "
    "output allocation at depth 2 as well, though the second product reads it while writing "
    "the output; depth 2 f32[128,128] gives 0, XLA plans 65536 (one buffer)",
)
def _rt9_predict_chain_temp_depth2_in_output(rows, width, depth, itemsize):
    buf = rows * width * itemsize
    if depth <= 2:
        return 0
    return buf if depth % 2 else 2 * buf


@wrong(
    "predict_chain_temp",
    why="'Make the chain longer and temp does not grow': fits the two depths the hint names (3: "
    "one buffer, 4: two) with a line, depth-2 buffers from depth 3 on; depth 5 f32[128,128] "
    "gives 196608, XLA plans 65536",
)
def _rt9_predict_chain_temp_linear_from_3_and_4(rows, width, depth, itemsize):
    buf = rows * width * itemsize
    if depth <= 1:
        return 0
    if depth == 2:
        return buf
    return (depth - 2) * buf


# -------------------------------------------------------------------- predict_bytes_accessed


def _rt9_pba(
    program, x, *, transpose_copy=False, b_materialized=False, read_unused=False, scalar_free=False
):
    r, c = x.shape
    n = r * c
    s = np.dtype(x.dtype).itemsize
    sc = 0 if scalar_free else 4
    if program == "tanh(exp(2x + 1) - 3)" or program == "exp(x)":
        return 2 * n * s
    if program == "x + y":
        return 3 * n * s
    if program == "x + b":
        return (3 * n * s) if b_materialized else (2 * n * s + c * s)
    if program == "x.sum(axis=0)":
        return n * s + c * 4
    if program == "x.sum()":
        return n * s + sc
    if program == "x.astype(bf16) * 2":
        return n * s + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * s + n * 4
    if program == "x.T + 1":
        return (4 * n * s) if transpose_copy else 2 * n * s
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * r * (c // 2) * s
    if program == "x * 2 with an unused y":
        return (3 * n * s) if read_unused else 2 * n * s
    if program == "x - x.mean()":
        return n * s + sc + n * s + sc + n * s
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="'work from what a fused kernel reads and writes': takes x.T as its own copy kernel "
    "(read x, write x.T) before the +1 kernel; 'x.T + 1' f32[64,96] gives 98304, XLA says "
    "49152 (the transpose fuses into the add)",
)
def _rt9_predict_bytes_accessed_transpose_copy(program, x):
    return _rt9_pba(program, x, transpose_copy=True)


@wrong(
    "predict_bytes_accessed",
    why="'b, a vector with one element per column': reads b as the broadcast it becomes, a full "
    "x-sized array; 'x + b' f32[300,100] gives 360000, XLA says 240400",
)
def _rt9_predict_bytes_accessed_b_materialized(program, x):
    return _rt9_pba(program, x, b_materialized=True)


@wrong(
    "predict_bytes_accessed",
    why="'an argument the program ignores is not even a parameter': counts y as read because it "
    "is passed; 'x * 2 with an unused y' f32[256,256] gives 786432, XLA says 524288",
)
def _rt9_predict_bytes_accessed_reads_unused(program, x):
    return _rt9_pba(program, x, read_unused=True)


@wrong(
    "predict_bytes_accessed",
    why="'every array is read or written at its own width': treats a scalar result as living in "
    "a register (0 bytes); 'x.sum()' f32[256,256] gives 262144, XLA says 262148; 'x - x.mean()' "
    "f32[64,96] gives 73728, XLA says 73736",
)
def _rt9_predict_bytes_accessed_scalar_free(program, x):
    return _rt9_pba(program, x, scalar_free=True)


# ------------------------------------------------------------------------------- more, round 9


@wrong(
    "aliased_parameters",
    why="'the second braces are an index inside parameter N': only matches entries whose "
    "parameter index is {} ('JAX flattens arguments, the inner index is always empty'), so an "
    "entry aliasing into a tuple parameter is dropped; HANDWRITTEN_ALIAS gives {1: (0,)}, want "
    "{1: (0,), 0: (2,)}",
)
def _rt9_aliased_parameters_array_params_only(hlo_text):
    header = hlo_text.splitlines()[0] if hlo_text else ""
    out = {}
    for o, p in re.findall(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{\}\s*,\s*[\w-]+\s*\)", header):
        out[int(p)] = tuple(int(t) for t in o.replace(" ", "").split(",") if t)
    return out


@wrong(
    "predict_chain_temp",
    why="'a buffer whose value is dead is reused': also lets a product take x's argument buffer "
    "once the first product has read x (arguments are not donated, so XLA never reuses them); "
    "one buffer less than XLA: depth 3 f32[128,128] gives 0, XLA plans 65536",
)
def _rt9_predict_chain_temp_reuses_argument_x(rows, width, depth, itemsize):
    buf = rows * width * itemsize
    if depth <= 1:
        return 0
    live = 1 if depth == 2 or depth % 2 else 2
    return max(live - 1, 0) * buf


@wrong(
    "predict_bytes_accessed",
    why="'every array is read or written at its own width (an int8 x cast to float32 reads 1 "
    "byte)': reads a cast's input at the cast's target width ('the convert loads it as f32'); "
    "'x.astype(f32) * 0.5' int8[128,200] gives 204800, XLA says 128000",
)
def _rt9_predict_bytes_accessed_cast_reads_at_target(program, x):
    r, c = x.shape
    n = r * c
    if program == "x.astype(bf16) * 2":
        return n * 2 + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * 4 + n * 4
    return _rt9_pba(program, x)
