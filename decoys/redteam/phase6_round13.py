"""Red team, phase 6, round 13: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import time
import warnings

import jax
import numpy as np

from kata_harness.decoys import wrong


def _rt13_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


def _rt13_timing(me, eager_s, jit_s, repeats, ratio):
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


def _rt13_block(out):
    return jax.tree_util.tree_map(
        lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, out
    )


def _rt13_chain_buffers(depth):
    if depth <= 1:
        return 0
    if depth == 2 or depth % 2 == 1:
        return 1
    return 2


def _rt13_bytes(program, x):
    rows, cols = x.shape
    n = rows * cols
    isz = np.dtype(x.dtype).itemsize
    if program == "tanh(exp(2x + 1) - 3)" or program == "exp(x)" or program == "x.T + 1":
        return 2 * n * isz
    if program == "x + y":
        return 3 * n * isz
    if program == "x + b":
        return 2 * n * isz + cols * isz
    if program == "x.sum(axis=0)":
        return n * 4 + cols * 4
    if program == "x.sum()":
        return n * 4 + 4
    if program == "x.astype(bf16) * 2":
        return n * isz + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * isz + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * rows * (cols // 2) * isz
    if program == "x * 2 with an unused y":
        return 2 * n * isz
    if program == "x - x.mean()":
        return n * 4 + 4 + n * 4 + 4 + n * 4
    raise KeyError(program)


# ---------------------------------------------------------------- predict_bytes_accessed


@wrong(
    "predict_bytes_accessed",
    why="'each element costs its dtype's width': believes a Python float literal (2.0, 1.0) "
    "is float32 and promotes a bf16/f16 x, so the kernel writes 4 bytes an element: "
    "'x.T + 1' with bf16 x of shape (64, 96) says 6144*2 + 6144*4 = 36864, XLA says 24576 "
    "(weakly typed scalars keep bf16); right on every float32 case",
)
def _rt13_predict_bytes_accessed_float_literal_promotes(program: str, x) -> int:
    literal = {
        "tanh(exp(2x + 1) - 3)",
        "x.T + 1",
        "x[:, : x.shape[1] // 2] * 2",
        "x * 2 with an unused y",
    }
    isz = np.dtype(x.dtype).itemsize
    if program in literal and isz == 2:
        rows, cols = x.shape
        n = rows * (cols // 2) if program.startswith("x[") else rows * cols
        return n * 2 + n * 4
    return _rt13_bytes(program, x)


@wrong(
    "predict_bytes_accessed",
    why="'each element costs its dtype's width; x.T + 1 is one kernel': believes a square "
    "transpose is a layout swap but a rectangular one needs a copy kernel first (read+write "
    "x, then read+write again): for 'x.T + 1' with f32 x of shape (64, 300) it says 307200, "
    "XLA says 153600 (2 * x.nbytes at every shape); right on square shapes only",
)
def _rt13_predict_bytes_accessed_rect_transpose_copy(program: str, x) -> int:
    rows, cols = x.shape
    if program == "x.T + 1" and rows != cols:
        return 2 * _rt13_bytes(program, x)
    return _rt13_bytes(program, x)


@wrong(
    "predict_bytes_accessed",
    why="'x - x.mean()' takes two kernels: counts the reduction (reads x, writes a scalar) "
    "but thinks the second kernel recomputes nothing and only writes the output, not "
    "re-reading x ('x is still in cache'): (256, 256) f32 gives 524296, XLA says 786440 "
    "(x read twice: 3*n*4 + 8)",
)
def _rt13_predict_bytes_accessed_mean_single_read(program: str, x) -> int:
    if program == "x - x.mean()":
        n = math.prod(x.shape)
        return n * 4 + 4 + 4 + n * 4
    return _rt13_bytes(program, x)


@wrong(
    "predict_bytes_accessed",
    why="'a cast to the dtype x already has is no work' applied to the whole program: for "
    "'x.astype(bf16) * 2' with bf16 x, and 'x.astype(f32) * 0.5' with f32 x, thinks "
    "XLA folds the multiply into the argument and answers... no: treats the same-dtype cast "
    "as still free but the scale by a Python int as an int32 promotion (reads 2, writes 4) "
    "for integer x: 'x.astype(bf16) * 2' with int8 x (256,256) says n*1 + n*4 = 327680, XLA "
    "n*1 + n*2 = 196608",
)
def _rt13_predict_bytes_accessed_int_scale_promotes(program: str, x) -> int:
    if program == "x.astype(bf16) * 2" and np.dtype(x.dtype).kind in "iu":
        n = math.prod(x.shape)
        return n * np.dtype(x.dtype).itemsize + n * 4
    return _rt13_bytes(program, x)


# ------------------------------------------------------------------- predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'XLA:CPU aligns each temp buffer to 64 bytes': adds a 64-byte gap between temp "
    "buffers although the contract's shapes leave no padding: at even depth >= 4 (two "
    "buffers) it says 2*size + 64, e.g. (64, 64, 4, 4) -> 32832, XLA 32768",
)
def _rt13_predict_chain_temp_alignment_gap(rows: int, width: int, depth: int, itemsize: int) -> int:
    n = _rt13_chain_buffers(depth)
    size = rows * width * itemsize
    return n * size + max(0, n - 1) * 64


# ------------------------------------------------------------------------------ cost_of


@wrong(
    "cost_of",
    why="'bytes_accessed' read as reads only: adds the output's bytes ('bytes accessedout{}') "
    "to 'bytes accessed', believing the total key leaves the writes out; XLA's 'bytes "
    "accessed' already holds reads and writes: chain(v) on f32[256,256] gives 786432, XLA "
    "says 524288",
)
def _rt13_cost_of_reads_plus_output(f, *args):
    ca = _rt13_ca(jax.jit(f).lower(*args).compile())
    out = sum(v for k, v in ca.items() if k.startswith("bytes accessedout"))
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)) + float(out),
    }


# ------------------------------------------------------------------------- eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="'Block on every result': blocks only the jitted results, believing eager ops run "
    "synchronously; eager dispatch is asynchronous too, so eager_s measures dispatch only "
    "(f = a long chain of matmuls: eager_s far below the real per-call time)",
)
def _rt13_eager_vs_jit_eager_unblocked(f, args: tuple, repeats: int):
    jf = jax.jit(f)
    _rt13_block(f(*args))
    _rt13_block(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        f(*args)
    eager_s = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt13_block(jf(*args))
    jit_s = (time.perf_counter() - t0) / repeats
    return _rt13_timing(
        _rt13_eager_vs_jit_eager_unblocked, eager_s, jit_s, repeats, eager_s / jit_s
    )


# ------------------------------------------------------------------------ memory_report


@wrong(
    "memory_report",
    why="'a donated buffer that no output can use is not aliased': reads alias as 'all "
    "donated bytes, or 0 when jax warns Some donated buffers were not usable': with two "
    "arguments donated, one usable and one not (lambda a, b: a * 2.0, f32[8] and f32[3], "
    "donate (0, 1)) it says alias 0, XLA plans 32",
)
def _rt13_memory_report_alias_all_or_nothing(f, *args, donate_argnums=()):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile()
    m = compiled.memory_analysis()
    unusable = any("donated buffers were not usable" in str(w.message) for w in caught)
    donated = sum(
        int(np.asarray(leaf).nbytes)
        for i in donate_argnums
        for leaf in jax.tree_util.tree_leaves(args[i])
    )
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": 0 if unusable else donated,
    }


# ---------------------------------------------------------------------- naive_temp_bytes

_RT13_BITS = {"pred": 8, "token": 0}


def _rt13_elem_bits(dtype: str) -> int:
    if dtype in _RT13_BITS:
        return _RT13_BITS[dtype]
    import re

    m = re.match(r"[a-z]+(\d+)", dtype)
    return int(m.group(1)) if m else 8


def _rt13_shape_bytes(shape_text: str) -> int:
    import re

    total = 0
    for dt, dims, layout in re.findall(r"([a-z]+\d*[a-z0-9]*)\[([\d,]*)\](\{[^}]*\})?", shape_text):
        n = math.prod(int(d) for d in dims.split(",") if d) if dims else 1
        m = re.search(r"E\((\d+)\)", layout or "")
        bits = int(m.group(1)) if m else max(8, math.ceil(_rt13_elem_bits(dt) / 8) * 8)
        total += math.ceil(n * bits / 8)
    return total


def _rt13_naive(hlo_text, extra_views=()):
    import re

    lines = hlo_text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.lstrip().startswith("ENTRY"))
    body = []
    for l in lines[start + 1 :]:
        if l.strip() == "}":
            break
        body.append(l)
    pat = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([a-z][\w\-]*)\((.*)$")
    parsed = []
    for l in body:
        m = pat.match(l)
        if m:
            parsed.append((bool(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5)))
    outputs = set()
    for is_root, name, shape, op, rest in parsed:  # noqa: B007
        if is_root:
            outputs.add(name)
            if op == "tuple":
                args = rest.split(")")[0]
                outputs |= {a.strip().lstrip("%") for a in args.split(",")}
    skip = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element", *extra_views}
    return sum(
        _rt13_shape_bytes(shape)
        for is_root, name, shape, op, rest in parsed
        if name not in outputs and op not in skip
    )


@wrong(
    "naive_temp_bytes",
    why="'only bitcast, tuple and get-tuple-element re-view a buffer': also skips custom-call "
    "('a library call writes into its operand, output_to_operand_aliasing'), so an ENTRY "
    "custom-call intermediate is dropped: factor(a, b) of programs.py compiled on CPU (LAPACK "
    "potrf/geqrf custom calls in ENTRY whose results feed later ops) is under-counted",
)
def _rt13_naive_temp_bytes_custom_call_in_place(hlo_text: str) -> int:
    return _rt13_naive(hlo_text, extra_views=("custom-call",))


@wrong(
    "naive_temp_bytes",
    why="'only bitcast, tuple and get-tuple-element re-view a buffer': also skips "
    "dynamic-update-slice and scatter ('they update their operand in place'), but the "
    "contract counts every other ENTRY result: ENTRY with %u = f32[8] dynamic-update-slice("
    "%a, %p, %i), %s = f32[4] slice(%u), %t = f32[4] negate(%s), %c = f32[8] concatenate(%t, "
    "%t), ROOT negate(%c) gives 64, the contract 96",
)
def _rt13_naive_temp_bytes_dus_in_place(hlo_text: str) -> int:
    return _rt13_naive(hlo_text, extra_views=("dynamic-update-slice", "scatter"))


@wrong(
    "naive_temp_bytes",
    why="NumPy intuition 'basic slicing is a view': skips slice (and dynamic-slice) as a "
    "re-view like bitcast, but in HLO a slice writes a new buffer and the contract lists only "
    "bitcast, tuple and get-tuple-element: ENTRY %s = f32[4] slice(f32[8] %x), slice={[0:4]}, "
    "ROOT negate(%s) gives 0, the contract 16",
)
def _rt13_naive_temp_bytes_slice_is_view(hlo_text: str) -> int:
    return _rt13_naive(hlo_text, extra_views=("slice", "dynamic-slice"))
