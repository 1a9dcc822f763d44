"""Red team, phase 6, round 14: packing per row, floored sub-byte widths, transposes taken for
views, output indices read digit by digit, only the first alias entry, a warm-up on strong-typed
copies of the arguments, blocking on the arguments, a float32-normalised input, host_* memory fields
and x64 enabled around the compile."""

from __future__ import annotations

import math
import re
import time

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt14_timing(me, eager_s, jit_s, repeats, ratio):
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


def _rt14_block(out):
    return jax.tree_util.tree_map(
        lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, out
    )


def _rt14_read(ca):
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    ca = dict(ca or {})
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt14_cost(f, *args):
    return _rt14_read(jax.jit(f).lower(*args).compile().cost_analysis())


def _rt14_bits(dtype):
    if dtype == "pred":
        return 8
    m = re.match(r"[a-z]+?(\d+)", dtype)
    return int(m.group(1)) if m else 0


def _rt14_size(shape, *, per_row=False, floor=False):
    if shape.is_tuple:
        return sum(_rt14_size(e, per_row=per_row, floor=floor) for e in shape.elements)
    dims = [d or 0 for d in shape.dims]
    count = math.prod(dims)
    bits = _rt14_bits(shape.dtype or "")
    packed = re.search(r"E\((\d+)\)", shape.layout or "")
    if packed:
        n = int(packed.group(1))
        if per_row and dims:
            rows = count // dims[-1] if dims[-1] else 0
            return rows * math.ceil(dims[-1] * n / 8)
        return math.ceil(count * n / 8)
    return count * (bits // 8 if floor else math.ceil(bits / 8))


def _rt14_naive(hlo_text, *, views=("bitcast", "tuple", "get-tuple-element"), **kw):
    entry = parse_hlo(hlo_text).entry
    instrs = list(entry.instructions)
    root = next(i for i in instrs if i.is_root)
    outputs = {root.name}
    if root.opcode == "tuple":
        outputs |= set(root.operands)
    total = 0
    for ins in instrs:
        if ins.name in outputs or ins.opcode in ("parameter", "constant") or ins.opcode in views:
            continue
        total += _rt14_size(ins.shape_info, **kw)
    return total


@wrong(
    "naive_temp_bytes",
    why="Clause 'the buffer rounded up to a whole byte: s4[9]{0:E(4)} 36 bits, 5 bytes': rounds "
    "each minor-dimension row up to a byte instead of the whole buffer, as if rows were byte "
    "aligned; an ENTRY `%n = s4[3,5]{1,0:E(4)} negate(%p)` of s4[3,5] gives 3*3 = 9, not "
    "ceil(60/8) = 8. Rank-1 packed shapes (the docstring's examples) agree.",
)
def _rt14_naive_temp_bytes_packed_per_row(hlo_text: str) -> int:
    return _rt14_naive(hlo_text, per_row=True)


@wrong(
    "naive_temp_bytes",
    why="Clause 's4: 4 bits, one byte': bytes per element as bits // 8 (floor), so an unpacked "
    "4-bit result (s4[9]{0}, no E(4) in the layout) or a u2 result counts 0 bytes instead of "
    "one a element; every >= 8-bit dtype agrees.",
)
def _rt14_naive_temp_bytes_floor_subbyte(hlo_text: str) -> int:
    return _rt14_naive(hlo_text, floor=True)


@wrong(
    "naive_temp_bytes",
    why="Clause 'only bitcast, tuple and get-tuple-element re-view a buffer; every other opcode "
    "counts': treats transpose as a view (a layout change, like a bitcast); NAIVE_COPIES' "
    "%t = f32[6,4] transpose(%x) (96 bytes) is dropped.",
)
def _rt14_naive_temp_bytes_transpose_is_view(hlo_text: str) -> int:
    return _rt14_naive(hlo_text, views=("bitcast", "tuple", "get-tuple-element", "transpose"))


_RT14_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*[\w-]+\s*\)")


def _rt14_header(hlo_text):
    return parse_hlo(hlo_text).attributes.get("input_output_alias", "") or ""


@wrong(
    "aliased_parameters",
    why="Clause 'output index {1} ... An array output's index is {} (give ())': the output index "
    "is read digit by digit (c for c in text if c.isdigit()), so `{10}: (0, {}, may-alias)` (a "
    "function with 11+ outputs, donated state at output 10) gives {0: (1, 0)}, not {0: (10,)}.",
)
def _rt14_aliased_parameters_output_digit_chars(hlo_text: str) -> dict[int, tuple[int, ...]]:
    return {
        int(p): tuple(int(c) for c in out if c.isdigit())
        for out, p in _RT14_ENTRY.findall(_rt14_header(hlo_text))
    }


@wrong(
    "aliased_parameters",
    why="Clause 'input_output_alias={ {1}: (3, {}, may-alias), ... }': takes re.search (the first "
    "entry only), as when one argument is donated; ALIAS_BANK 'outputs rotated' (three entries) "
    "gives one pair instead of {0: (1,), 1: (2,), 2: (0,)}.",
)
def _rt14_aliased_parameters_first_entry_only(hlo_text: str) -> dict[int, tuple[int, ...]]:
    m = _RT14_ENTRY.search(_rt14_header(hlo_text))
    if not m:
        return {}
    return {int(m.group(2)): tuple(int(t) for t in m.group(1).split(",") if t.strip())}


@wrong(
    "eager_vs_jit",
    why="Clause 'One warm-up call of each (not timed)': warms both up on np.asarray copies of "
    "the arguments (so host-to-device copies are not timed), but times the original args; a "
    "Python scalar argument (f(x, 2.0)) is weakly typed as given and a strong float32 after np.asarray (float64, canonicalised), "
    "so the first timed jit call traces and compiles again inside the clock.",
)
def _rt14_eager_vs_jit_device_warmup(f, args: tuple, repeats: int):
    jitted = jax.jit(f)
    warm = tuple(jax.tree_util.tree_map(np.asarray, a) for a in args)
    _rt14_block(f(*warm))
    _rt14_block(jitted(*warm))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt14_block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt14_block(jitted(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt14_timing(_rt14_eager_vs_jit_device_warmup, eager, jit, repeats, eager / jit)


@wrong(
    "eager_vs_jit",
    why="Clause 'Block on every result with .block_until_ready()': calls "
    "jax.block_until_ready(args) (the inputs) after each call instead of the result, so both "
    "clocks measure dispatch only; the last result is never waited for in either loop.",
)
def _rt14_eager_vs_jit_block_args(f, args: tuple, repeats: int):
    jitted = jax.jit(f)
    _rt14_block(f(*args))
    _rt14_block(jitted(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        f(*args)
        jax.block_until_ready(args)
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        jitted(*args)
        jax.block_until_ready(args)
    jit = (time.perf_counter() - t0) / repeats
    return _rt14_timing(_rt14_eager_vs_jit_block_args, eager, jit, repeats, eager / jit)


@wrong(
    "fusion_traffic",
    why="Clause 'compiled for the previous step's output, shape and dtype both': normalises x "
    "with jnp.asarray(x, jnp.float32) before the first step (and the fused program), so a bf16 "
    "x (STEP_BANK 'bf16, several ops and a row sum in one step') is costed at 4 bytes an element.",
)
def _rt14_fusion_traffic_input_as_f32(steps, x) -> dict[str, float]:
    x = jnp.asarray(x, jnp.float32)
    total = 0.0
    v = x
    for step in steps:
        total += _rt14_cost(step, v)["bytes_accessed"]
        v = jax.eval_shape(step, v)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": total, "fused": _rt14_cost(fused, x)["bytes_accessed"]}


@wrong(
    "memory_report",
    why="Clause 'exactly as XLA planned them': on XLA:CPU the device is the host, so it reads the "
    "host_argument/host_output/host_temp/host_alias _size_in_bytes fields, which XLA:CPU leaves "
    "at 0; `update` with f32[64,64] state donated gives all zeros instead of 32768/16384/0/16384.",
)
def _rt14_memory_report_host_fields(f, *args, donate_argnums: tuple[int, ...] = ()):
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.host_argument_size_in_bytes),
        "output": int(m.host_output_size_in_bytes),
        "temp": int(m.host_temp_size_in_bytes),
        "alias": int(m.host_alias_size_in_bytes),
    }


@wrong(
    "cost_of",
    why="Clause 'for the arguments exactly as given': compiles inside enable_x64() so Python "
    "scalars 'stay exact'; COST_BANK 'int8 widened products, python scalar' then promotes "
    "int32 * weak 3.0 to float64, and bytes_accessed counts an f64 output (and f64 scalar).",
)
def _rt14_cost_of_x64_scalars(f, *args) -> dict[str, float]:
    with jax.enable_x64(True):
        return _rt14_cost(f, *args)


@wrong(
    "predict_chain_temp",
    why="Clause 'both of a dtype whose elements take itemsize bytes': assumes XLA:CPU runs "
    "2-byte matmuls in float32 (it upcasts half-precision dots) and sizes each intermediate at 4 "
    "bytes an element; a bf16 chain rows=width=64, depth 3, itemsize 2 plans 8192 temp bytes, "
    "this says 16384. Other itemsizes agree.",
)
def _rt14_predict_chain_temp_half_upcast(rows: int, width: int, depth: int, itemsize: int) -> int:
    if depth < 2:
        return 0
    size = rows * width * (4 if itemsize == 2 else itemsize)
    return size if depth % 2 == 1 or depth == 2 else 2 * size
