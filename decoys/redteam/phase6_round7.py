"""Red team, phase 6, round 7: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt7_timing(me, eager_s, jit_s, repeats):
    """The Timing of the module this answer was swapped into (else the stub's)."""
    import sys

    kw = dict(eager_s=eager_s, jit_s=jit_s, repeats=repeats, ratio=eager_s / jit_s)
    for mod in list(sys.modules.values()):
        try:
            if getattr(mod, "eager_vs_jit", None) is me and hasattr(mod, "Timing"):
                return mod.Timing(**kw)
        except Exception:  # noqa: BLE001
            continue
    from katas.phase6.kata import Timing

    return Timing(**kw)


def _rt7_compiled_cost(f, *args):
    ca = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


# ----------------------------------------------------------------------------------- cost_of


@wrong(
    "cost_of",
    why="'bytes_accessed' is XLA's 'bytes accessed' total; this reads it as 'bytes accessed0{}' "
    "(operand 0 read) + 'bytes accessedout{}' (output written), the per-operand keys printed "
    "next to it. Right on exp(x) and on the bf16 exp chain (one operand, one kernel), wrong on "
    "x + b with x f32[64,96], b f32[96] (49152, XLA says 49536) and on the f16 CSE tuple program "
    "(17288 vs 18568)",
)
def _rt7_cost_of_operand0_plus_out(f, *args):
    ca = _rt7_compiled_cost(f, *args)
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(
            ca.get("bytes accessed0{}", 0.0) + ca.get("bytes accessedout{}", 0.0)
        ),
    }


# ---------------------------------------------------------------------------- fusion_traffic


@wrong(
    "fusion_traffic",
    why="'op_by_op: the sum of bytes accessed over the steps, each compiled as its own program': "
    "this takes the README's 'Lowered.cost_analysis() describes the unfused program' as the op "
    "by op figure and reads the Lowered estimate of the whole chain; a step that holds several "
    "ops is one fused program op by op, and Lowered counts differently: wrong on STEP_BANK "
    "'bf16, several ops and a row sum in one step' and on UNARY_STEPS over f32[256,256]",
)
def _rt7_fusion_traffic_lowered_is_op_by_op(steps, x):
    def fused(v):
        for step in steps:
            v = step(v)
        return v

    lowered = jax.jit(fused).lower(x)
    lca = lowered.cost_analysis()
    if isinstance(lca, (list, tuple)):
        lca = lca[0]
    cca = lowered.compile().cost_analysis()
    if isinstance(cca, (list, tuple)):
        cca = cca[0]
    return {
        "op_by_op": float(dict(lca).get("bytes accessed", 0.0)),
        "fused": float(dict(cca).get("bytes accessed", 0.0)),
    }


# ----------------------------------------------------------------------------- memory_report


@wrong(
    "memory_report",
    why="'output ... exactly as XLA planned': reports output_size - alias_size ('the new bytes "
    "the outputs need, the donated part is already counted in argument'); equal to XLA's "
    "figure whenever nothing is aliased, wrong on every donation that is used: update(state, "
    "grad) f32[64,64] with state donated gives output 0, XLA plans 16384",
)
def _rt7_memory_report_output_net_of_alias(f, *args, donate_argnums=()):
    ma = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(ma.argument_size_in_bytes),
        "output": int(ma.output_size_in_bytes - ma.alias_size_in_bytes),
        "temp": int(ma.temp_size_in_bytes),
        "alias": int(ma.alias_size_in_bytes),
    }


# ------------------------------------------------------------------------ aliased_parameters

_RT7_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*([\w-]+)\s*\)")


def _rt7_header_alias(hlo_text):
    header = hlo_text.lstrip().splitlines()[0]
    at = header.find("input_output_alias=")
    if at < 0:
        return []
    depth, start = 0, header.index("{", at)
    for end in range(start, len(header)):
        depth += {"{": 1, "}": -1}.get(header[end], 0)
        if depth == 0:
            break
    body = header[start + 1 : end]
    out = []
    for m in _RT7_ENTRY.finditer(body):
        index = tuple(int(t) for t in m.group(1).replace(" ", "").split(",") if t)
        out.append((int(m.group(2)), index, m.group(3)))
    return out


@wrong(
    "aliased_parameters",
    why="'the kind may be may-alias or must-alias': keeps must-alias entries only ('may-alias "
    "means XLA may or may not reuse the buffer, only must-alias is a guarantee'); every jit "
    "donation is may-alias, so this returns {} for update(state, grad) with state donated "
    "(want {0: ()}) and drops {0}: (1, {}, may-alias) from HANDWRITTEN_ALIAS",
)
def _rt7_aliased_parameters_must_only(hlo_text):
    return {p: idx for p, idx, kind in _rt7_header_alias(hlo_text) if kind == "must-alias"}


# -------------------------------------------------------------------------- naive_temp_bytes

_RT7_VIEWS = {"bitcast", "tuple", "get-tuple-element"}


def _rt7_bits(dtype):
    if dtype == "pred":
        return 8
    return int(re.match(r"[a-z]+(\d+)", dtype).group(1))


def _rt7_size(shape, *, pack_all=False, floor_packed=False):
    if shape.is_tuple:
        return sum(
            _rt7_size(s, pack_all=pack_all, floor_packed=floor_packed) for s in _rt7_elements(shape)
        )
    n = math.prod(shape.dims) if shape.dims else 1
    bits = _rt7_bits(shape.dtype)
    packed = "E(" in (shape.text or "") or (pack_all and bits < 8)
    if packed:
        return (n * bits) // 8 if floor_packed else -(-(n * bits) // 8)
    return n * -(-bits // 8)


def _rt7_elements(shape):
    # split the tuple text at depth one
    from xla_inspect.hlo.model import Shape

    text = shape.text.strip()[1:-1]
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return [Shape(text=p) for p in parts]


def _rt7_naive(computation, *, skip=lambda ins: False, **size_kw):
    root = computation.root
    outputs = {root.name}
    if root.opcode == "tuple":
        outputs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in computation.instructions:
        if ins.opcode in ("parameter", "constant") or ins.opcode in _RT7_VIEWS:
            continue
        if ins.name.lstrip("%") in outputs or skip(ins):
            continue
        total += _rt7_size(ins.shape_info, **size_kw)
    return total


@wrong(
    "naive_temp_bytes",
    why="'a result's size ... unless its LAYOUT packs the elements': packs every 4-bit type "
    "('XLA:CPU packs 4-bit types two to a byte', README) whatever its layout says; right on "
    "s4[9]{0:E(4)} (5), wrong on an ENTRY intermediate s4[9]{0} with no E(4), which the "
    "contract sizes at one byte an element (9, this says 5)",
)
def _rt7_naive_temp_bytes_pack_every_4bit(hlo_text):
    return _rt7_naive(parse_hlo(hlo_text).entry, pack_all=True)


@wrong(
    "naive_temp_bytes",
    why="'s4[9]{0:E(4)} stores 4 bits an element, 36 bits, ROUNDED UP to 5 bytes': floors the "
    "packed bit count (n * bits // 8, as for whole bytes); right on even element counts, wrong "
    "on s4[9]{0:E(4)} (4, want 5) or any odd-length packed intermediate, e.g. u4[129]{0:E(4)} "
    "(64, want 65)",
)
def _rt7_naive_temp_bytes_packed_floor(hlo_text):
    return _rt7_naive(parse_hlo(hlo_text).entry, floor_packed=True)


@wrong(
    "naive_temp_bytes",
    why="'constants (the OPCODE constant)': recognises constants by XLA's naming ('%constant.3') "
    "instead of the opcode, so a constant named otherwise counts; compiled HLO always names them "
    "constant.N, but NAIVE_ODD_TYPES's '%k = f64[5]{0} constant({1, 2, 3, 4, 5})' adds 40 bytes "
    "(392, want 352)",
)
def _rt7_naive_temp_bytes_constant_by_name(hlo_text):
    computation = parse_hlo(hlo_text).entry
    root = computation.root
    outputs = {root.name}
    if root.opcode == "tuple":
        outputs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in computation.instructions:
        if ins.opcode == "parameter" or ins.opcode in _RT7_VIEWS:
            continue
        if ins.name.lstrip("%").startswith("constant") or ins.name.lstrip("%") in outputs:
            continue
        total += _rt7_size(ins.shape_info)
    return total


@wrong(
    "naive_temp_bytes",
    why="'the ENTRY computation': takes the module's LAST computation as ENTRY (XLA prints "
    "ENTRY last, and so do the hand-written modules) instead of the one marked ENTRY; wrong on "
    "a module with a computation printed after ENTRY, e.g. NAIVE_TUPLE_ROOT followed by an "
    "uncalled '%unused (u: f32[8]) -> f32[8]' computation (exponential, log): 32, want 204",
)
def _rt7_naive_temp_bytes_last_computation(hlo_text):
    module = parse_hlo(hlo_text)
    comps = module.computations
    comps = list(comps.values()) if isinstance(comps, dict) else list(comps)
    return _rt7_naive(comps[-1])


# ------------------------------------------------------------------------------ eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="'Block on EVERY result': blocks on the first leaf of each result only "
    "(jax.tree.leaves(out)[0].block_until_ready(), since a tuple has no block_until_ready); "
    "for an f returning a tuple or dict the other arrays are left in flight, e.g. "
    "f = lambda x: (x @ x, jnp.exp(x)) with x f32[512,512]: exp(x) is never waited on",
)
def _rt7_eager_vs_jit_first_leaf_only(f, args, repeats):
    def block(out):
        leaves = jax.tree.leaves(out)
        if leaves and hasattr(leaves[0], "block_until_ready"):
            leaves[0].block_until_ready()

    jitted = jax.jit(f)
    block(f(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    block(jitted(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        block(jitted(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt7_timing(_rt7_eager_vs_jit_first_leaf_only, eager, jit, repeats)


@wrong(
    "eager_vs_jit",
    why="'MEAN seconds per TIMED call': divides each total by repeats + 1 (counting the warm-up "
    "call, which is run but not timed); every mean is low by a factor repeats / (repeats + 1): "
    "repeats=3 with timed calls of 1 s each gives 0.75 s, not 1 s",
)
def _rt7_eager_vs_jit_divide_by_all_calls(f, args, repeats):
    jitted = jax.jit(f)
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    eager = (time.perf_counter() - t0) / (repeats + 1)
    jax.block_until_ready(jitted(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(jitted(*args))
    jit = (time.perf_counter() - t0) / (repeats + 1)
    return _rt7_timing(_rt7_eager_vs_jit_divide_by_all_calls, eager, jit, repeats)


# ------------------------------------------------------------------------ predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'at most two intermediates are alive at once' without the parity: depth 1 -> 0, depth "
    "2 -> 1 buffer, depth >= 3 -> min(depth - 2, 2) buffers; right at depths 1-4 (the README's "
    "3 and the hint's 3 and 4), wrong at every odd depth >= 5: (16, 32, 5, 4) gives 4096, "
    "XLA plans 2048 (one buffer)",
)
def _rt7_predict_chain_temp_capped_at_two(rows, width, depth, itemsize):
    size = rows * width * itemsize
    if depth <= 1:
        return 0
    if depth == 2:
        return size
    return min(depth - 2, 2) * size


@wrong(
    "predict_chain_temp",
    why="'a dtype whose elements take itemsize bytes': caps the width at 4 ('JAX computes in 32 "
    "bits, float64 becomes float32'); right for itemsize 1, 2 and 4, wrong for an 8-byte dtype "
    "(float64 with x64 enabled): (16, 32, 3, 8) gives 2048, XLA plans 4096",
)
def _rt7_predict_chain_temp_width_capped(rows, width, depth, itemsize):
    size = rows * width * min(itemsize, 4)
    if depth <= 1:
        return 0
    if depth == 2 or depth % 2 == 1:
        return size
    return 2 * size


# -------------------------------------------------------------------- predict_bytes_accessed


def _rt7_bytes(program, x, *, sum0_per_row=False, mean_scalar_once=False):
    rows, cols = x.shape
    n = rows * cols
    w = np.dtype(x.dtype).itemsize
    if program == "tanh(exp(2x + 1) - 3)" or program == "exp(x)" or program == "x.T + 1":
        return 2 * n * w
    if program == "x * 2 with an unused y":
        return 2 * n * w
    if program == "x + y":
        return 3 * n * w
    if program == "x + b":
        return 2 * n * w + cols * w
    if program == "x.sum(axis=0)":
        return n * 4 + (rows if sum0_per_row else cols) * 4
    if program == "x.sum()":
        return n * 4 + 4
    if program == "x.astype(bf16) * 2":
        return n * w + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * w + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * rows * (cols // 2) * w
    if program == "x - x.mean()":
        return 3 * n * 4 + (4 if mean_scalar_once else 8)
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="'x.sum(axis=0)': reads 'sum over axis 0' as 'one sum per row' and writes x.shape[0] "
    "floats; the result has one element per COLUMN. Right on every square x, wrong on x "
    "f32[64,96] (24832, XLA says 24960) and f32[300,100] (121200 vs 120400)",
)
def _rt7_predict_bytes_accessed_sum_axis0_per_row(program, x):
    return _rt7_bytes(program, x, sum0_per_row=True)


@wrong(
    "predict_bytes_accessed",
    why="'which programs need more than one kernel': x - x.mean() is two kernels, the mean is "
    "written by the first (4 bytes) AND read back by the second (4 bytes); this counts the "
    "scalar once: 3 * x + 4, off by 4 at every shape, e.g. f32[64,96] gives 73732, XLA 73736",
)
def _rt7_predict_bytes_accessed_mean_scalar_once(program, x):
    return _rt7_bytes(program, x, mean_scalar_once=True)
