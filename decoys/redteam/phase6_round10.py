"""Red team, phase 6, round 10: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt10_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


def _rt10_timing(me, eager_s, jit_s, repeats, ratio):
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


_RT10_BITS = {
    "pred": 8,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "s32": 32,
    "u32": 32,
    "s64": 64,
    "u64": 64,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
}


def _rt10_bits(dtype):
    d = str(dtype).lower()
    if d in _RT10_BITS:
        return _RT10_BITS[d]
    m = re.match(r"[a-z]+(\d+)", d)
    return int(m.group(1)) if m else 32


def _rt10_size(si):
    if getattr(si, "is_tuple", False):
        return sum(
            _rt10_size(e)
            for e in (getattr(si, "elements", None) or getattr(si, "tuple_shapes", ()) or ())
        )
    n = 1
    for d in si.dims or ():
        n *= int(d)
    bits = _rt10_bits(si.dtype)
    packed = "E(4)" in str(getattr(si, "layout", "") or "") or "E(4)" in str(si)
    if packed:
        return (n * bits + 7) // 8
    return n * ((bits + 7) // 8)


def _rt10_naive(hlo_text, skip):
    mod = parse_hlo(hlo_text)
    entry = mod.entry
    instrs = list(getattr(entry, "instructions", entry))
    root = next((i for i in instrs if getattr(i, "is_root", False)), instrs[-1])
    outs = {root.name}
    if root.opcode == "tuple":
        outs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in instrs:
        if ins.name.lstrip("%") in {o.lstrip("%") for o in outs}:
            continue
        if ins.opcode in ("bitcast", "tuple", "get-tuple-element"):
            continue
        if skip(ins):
            continue
        total += _rt10_size(ins.shape_info)
    return total


# ----------------------------------------------------------------------------------- cost_of


@wrong(
    "cost_of",
    why="'bytes_accessed ... read from the compiled program': sums the per-operand keys "
    "('bytes accessed0{}', ..., 'bytes accessedout{}') instead of the total 'bytes accessed'; "
    "for x - x.mean() on f32[64,96] the parts sum to 73740, XLA's total is 73736",
)
def _rt10_cost_of_sum_operand_parts(f, *args):
    ca = _rt10_ca(jax.jit(f).lower(*args).compile())
    parts = [v for k, v in ca.items() if k.startswith("bytes accessed") and k != "bytes accessed"]
    b = sum(parts) if parts else ca.get("bytes accessed", 0.0)
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(b),
    }


# ---------------------------------------------------------------------------- fusion_traffic


@wrong(
    "fusion_traffic",
    why="'op_by_op: the sum ... over the steps, each compiled as its own program': counts only "
    "each step's reads of its input (bytes accessed minus the output bytes it writes, thinking "
    "writes are free); for UNARY_STEPS on f32[256,256] gives 3*262144, want 6*262144",
)
def _rt10_fusion_traffic_reads_only(steps, x):
    total = 0.0
    v = x
    for step in steps:
        ca = _rt10_ca(jax.jit(step).lower(v).compile())
        out = jax.eval_shape(step, v)
        wrote = float(np.prod(out.shape, dtype=np.int64)) * np.dtype(out.dtype).itemsize
        total += float(ca.get("bytes accessed", 0.0)) - wrote
        v = jax.jit(step)(v)

    def fused(u):
        for s in steps:
            u = s(u)
        return u

    ca = _rt10_ca(jax.jit(fused).lower(x).compile())
    return {"op_by_op": total, "fused": float(ca.get("bytes accessed", 0.0))}


# ------------------------------------------------------------------------ aliased_parameters


@wrong(
    "aliased_parameters",
    why="'the second braces are an index inside parameter N': the regex requires them empty "
    "'(N, {}, kind)', so an entry aliasing an element of a tuple parameter is dropped; "
    "HANDWRITTEN_ALIAS gives {1: (0,)}, want {1: (0,), 0: (2,)}",
)
def _rt10_aliased_parameters_empty_param_index_only(hlo_text):
    first = hlo_text.split("\n", 1)[0]
    out = {}
    for o, p in re.findall(r"\{([\d,\s]*)\}\s*:\s*\((\d+),\s*\{\}\s*,", first):
        idx = tuple(int(t) for t in o.replace(" ", "").split(",") if t)
        out[int(p)] = idx
    return out


@wrong(
    "aliased_parameters",
    why="'Use the numbers the header states': reads the output index's first digit only "
    "(parameter numbers with \\d+); f(a, b, c, d) returning 10 small arrays, d * 2, a + 1 with "
    "d donated has header {10}: (1, {}, may-alias): gives {1: (1,)}, want {1: (10,)}",
)
def _rt10_aliased_parameters_first_digit_output(hlo_text):
    first = hlo_text.split("\n", 1)[0]
    out = {}
    for o, p in re.findall(r"\{(\d?)\d*\}\s*:\s*\((\d+),", first):
        out[int(p)] = (int(o),) if o else ()
    return out


# -------------------------------------------------------------------------- naive_temp_bytes


@wrong(
    "naive_temp_bytes",
    why="'except parameters (the arguments)': recognises parameters by JAX's names (Arg_*, "
    "param*) instead of the opcode; in NAIVE_TUPLE_ROOT the parameters %x and %y are "
    "counted (96 + 6 bytes too many)",
)
def _rt10_naive_temp_bytes_parameters_by_name(hlo_text):
    return _rt10_naive(
        hlo_text,
        lambda i: (
            i.name.lstrip("%").lower().startswith(("arg", "param", "p.")) or i.opcode == "constant"
        ),
    )


@wrong(
    "naive_temp_bytes",
    why="'constants (the opcode constant: literals, not intermediates)': skips only scalar "
    "constants, counting array constants as buffers; NAIVE_ODD_TYPES' %k = f64[5] constant "
    "adds 40 bytes",
)
def _rt10_naive_temp_bytes_array_constants_count(hlo_text):
    return _rt10_naive(
        hlo_text,
        lambda i: (
            i.opcode == "parameter"
            or (i.opcode == "constant" and not tuple(i.shape_info.dims or ()))
        ),
    )


# ----------------------------------------------------------------------------- eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="'MEAN seconds per timed call': times with perf_counter_ns and divides by 1e6, so "
    "eager_s and jit_s are in milliseconds (1000x the seconds); jnp.sin on f32[1000] reports "
    "~1e-2 instead of ~1e-5",
)
def _rt10_eager_vs_jit_milliseconds(f, args, repeats):
    def block(out):
        return jax.tree_util.tree_map(
            lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, out
        )

    g = jax.jit(f)
    block(f(*args))
    block(g(*args))
    t0 = time.perf_counter_ns()
    for _ in range(repeats):
        block(f(*args))
    eager = (time.perf_counter_ns() - t0) / 1e6 / repeats
    t0 = time.perf_counter_ns()
    for _ in range(repeats):
        block(g(*args))
    jit = (time.perf_counter_ns() - t0) / 1e6 / repeats
    return _rt10_timing(_rt10_eager_vs_jit_milliseconds, eager, jit, repeats, eager / jit)


# ------------------------------------------------------------------------ predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'x of shape (rows, width), w (width, width)': sizes each product as rows x rows "
    "(reads x @ w as a square Gram-like product); rows=64, width=16, depth=3, itemsize=4 gives "
    "16384, want 4096",
)
def _rt10_predict_chain_temp_rows_square(rows, width, depth, itemsize):
    if depth < 2:
        return 0
    buffers = 1 if (depth == 2 or depth % 2 == 1) else 2
    return buffers * rows * rows * itemsize


@wrong(
    "predict_chain_temp",
    why="'which allocation besides temp can hold one': uses the output allocation for p1 only "
    "when the depth is odd, so even depths need depth//2 buffers; depth 6 at 16x16 f32 "
    "gives 3072, XLA plans 2048",
)
def _rt10_predict_chain_temp_even_grows(rows, width, depth, itemsize):
    x = rows * width * itemsize
    if depth < 2:
        return 0
    if depth % 2 == 1:
        return x
    return (depth // 2) * x


# --------------------------------------------------------------------- predict_bytes_accessed


def _rt10_isz(dt):
    return int(np.dtype(dt).itemsize)


def _rt10_correct_bytes(program, x):
    r, c = (int(d) for d in x.shape)
    n = r * c
    it = _rt10_isz(x.dtype)
    if program in ("tanh(exp(2x + 1) - 3)", "exp(x)", "x.T + 1", "x * 2 with an unused y"):
        return 2 * n * it
    if program == "x + y":
        return 3 * n * it
    if program == "x + b":
        return 2 * n * it + c * it
    if program == "x.sum(axis=0)":
        return n * 4 + c * 4
    if program == "x.sum()":
        return n * 4 + 4
    if program == "x.astype(bf16) * 2":
        return n * it + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * it + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * r * (c // 2) * it
    if program == "x - x.mean()":
        return 3 * n * 4 + 8
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="'which programs need more than one kernel': models x - x.mean() as a two-stage "
    "reduction (rows to a column of partial sums, then to a scalar) with the partials written "
    "and re-read; f32[256,256] gives 786440 + 2*1024, XLA says 786440",
)
def _rt10_predict_bytes_accessed_mean_row_partials(program, x):
    b = _rt10_correct_bytes(program, x)
    if program == "x - x.mean()":
        b += 2 * int(x.shape[0]) * 4
    return b


@wrong(
    "predict_bytes_accessed",
    why="'a cast to the dtype x already has is no work': extends it to casts between dtypes "
    "of the same width (int32 -> f32, f16 -> bf16), modelling them as an in-place elementwise op "
    "counted once; int32 x of shape (64, 96) in x.astype(f32) * 0.5 gives 24576, XLA says "
    "49152 (reads 4 and writes 4 bytes an element)",
)
def _rt10_predict_bytes_accessed_same_width_cast_in_place(program, x):
    it = _rt10_isz(x.dtype)
    r, c = (int(d) for d in x.shape)
    if program == "x.astype(f32) * 0.5" and it == 4 and np.dtype(x.dtype) != np.float32:
        return r * c * it  # "reinterpret in place": counted once
    if program == "x.astype(bf16) * 2" and it == 2 and np.dtype(x.dtype) != np.dtype("bfloat16"):
        return r * c * it
    return _rt10_correct_bytes(program, x)


# ----------------------------------------------------------------------------- memory_report


@wrong(
    "memory_report",
    why="'jax.jit(f, donate_argnums=...)': reads donate_argnums as indices into the flattened "
    "argument leaves (compiles a flat wrapper of the leaves), so donating a pytree argument "
    "donates only its first leaf; MEMORY_BANK 'f16 pytree, first leaf donated' (p = {b: f16[5], "
    "w: f16[6,5]}, donate 0) gives alias 10, XLA plans 70 with p donated whole",
)
def _rt10_memory_report_argnums_as_leaves(f, *args, donate_argnums=()):
    leaves, tree = jax.tree_util.tree_flatten(args)

    def flat(*ls):
        return f(*jax.tree_util.tree_unflatten(tree, list(ls)))

    m = (
        jax.jit(flat, donate_argnums=tuple(donate_argnums))
        .lower(*leaves)
        .compile()
        .memory_analysis()
    )
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }
