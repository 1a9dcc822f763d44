"""Phase 6 reference: cost and memory, read from what XLA compiled."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax

from xla_inspect.parse import parse_hlo


@dataclass(frozen=True)
class Timing:
    eager_s: float
    jit_s: float
    repeats: int
    ratio: float


def cost_of(f, *args) -> dict[str, float]:
    # The compiled (optimized, fused) program's cost; XLA omits zero-valued keys.
    cost = jax.jit(f).lower(*args).compile().cost_analysis() or {}
    return {
        "flops": float(cost.get("flops", 0.0)),
        "transcendentals": float(cost.get("transcendentals", 0.0)),
        "bytes_accessed": float(cost.get("bytes accessed", 0.0)),
    }


def fusion_traffic(steps: Sequence[Callable], x) -> dict[str, float]:
    # Op by op, every step reads its input from memory and writes its output back; fused, the
    # intermediates stay in registers.
    total = 0.0
    value = x
    for step in steps:
        total += cost_of(step, value)["bytes_accessed"]
        value = jax.eval_shape(step, value)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": total, "fused": cost_of(fused, x)["bytes_accessed"]}


def memory_report(f, *args, donate_argnums: tuple[int, ...] = ()) -> dict[str, int]:
    # Buffer assignment's totals for the compiled executable.
    compiled = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile()
    stats = compiled.memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    return {
        "argument": int(stats.argument_size_in_bytes),
        "output": int(stats.output_size_in_bytes),
        "temp": int(stats.temp_size_in_bytes),
        "alias": int(stats.alias_size_in_bytes),
    }


def _shape_index(text: str) -> tuple[int, ...]:
    inner = text.strip()[1:-1].strip()
    return tuple(int(p) for p in inner.split(",")) if inner else ()


def aliased_parameters(hlo_text: str) -> dict[int, tuple[int, ...]]:
    # Donation shows up in the module header: {output index}: (parameter, {index}, may-alias).
    header = parse_hlo(hlo_text).attributes.get("input_output_alias")
    if not header:
        return {}
    aliases: dict[int, tuple[int, ...]] = {}
    body = header.strip()[1:-1]
    depth, start, pieces = 0, 0, []
    for i, ch in enumerate(body):
        depth += ch in "({"
        depth -= ch in ")}"
        if ch == "," and depth == 0:
            pieces.append(body[start:i])
            start = i + 1
    pieces.append(body[start:])
    for piece in pieces:
        if not piece.strip():
            continue
        output, _, target = piece.partition(":")
        parameter = int(target.strip().lstrip("(").split(",")[0])
        aliases[parameter] = _shape_index(output)
    return aliases


_NO_NEW_BUFFER = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _byte_size(shape) -> int:
    # Bytes per element from the dtype's bit width rounded up to a byte (c64: 64 bits, s4: 4
    # bits, one byte); pred is a byte. A layout that packs elements (E(4) anywhere in it, on any
    # dtype, pred too) stores them at that many bits, the buffer rounded up to a whole byte. A
    # tuple-shaped result (a multi-output fusion) owns one buffer per element.
    if shape.is_tuple:
        return sum(_byte_size(element) for element in shape.elements)
    packed = re.search(r"E\((\d+)\)", shape.layout or "")
    width = re.match(r"[a-z]+?(\d+)", shape.dtype)
    if packed:  # any dtype, pred too: n bits an element
        bits = int(packed.group(1))
    elif width is not None:
        bits = 8 * -(-int(width.group(1)) // 8)
    else:  # pred is one byte; a token holds no data
        bits = 8 if shape.dtype == "pred" else 0
    return -(-math.prod(shape.dims) * bits // 8)


def naive_temp_bytes(hlo_text: str) -> int:
    # What temp memory would be if no two intermediates of the entry ever shared a buffer: not
    # the arguments, not the outputs (the ROOT, or what a tuple ROOT gathers), not views.
    entry = parse_hlo(hlo_text).entry
    root = entry.root
    outputs = {root.name}
    if root.opcode == "tuple":
        outputs.update(root.operands)
    return sum(
        _byte_size(i.shape_info)
        for i in entry
        if i.name not in outputs and i.opcode not in _NO_NEW_BUFFER
    )


def eager_vs_jit(f, args: tuple, repeats: int) -> Timing:
    # One warm-up each (the jit one compiles), then block on every result so the clock measures
    # the work and not just the dispatch.
    jitted = jax.jit(f)
    f(*args).block_until_ready()
    jitted(*args).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        f(*args).block_until_ready()
    eager = (time.perf_counter() - start) / repeats
    start = time.perf_counter()
    for _ in range(repeats):
        jitted(*args).block_until_ready()
    compiled = (time.perf_counter() - start) / repeats
    return Timing(eager_s=eager, jit_s=compiled, repeats=repeats, ratio=eager / compiled)


def predict_chain_temp(rows: int, width: int, depth: int, itemsize: int) -> int:
    # Products 1..depth-1 are intermediates of x's size; none shares a buffer with its operand.
    # Buffer assignment puts product 1 in the output's allocation (free until product `depth`),
    # then fills it again every second product: with an odd depth the products alternate
    # between it and one temp buffer; with an even depth from 4 on the product before the output
    # needs a second temp buffer. Depth 2: product 1 is the output's operand, one temp buffer.
    # Depth 0 or 1: no intermediate at all.
    buffers = 0 if depth <= 1 else 1 if depth == 2 or depth % 2 == 1 else 2
    return buffers * rows * width * itemsize


def predict_bytes_accessed(program: str, x: jax.ShapeDtypeStruct) -> int:
    # A fused kernel reads each input once and writes each output once, at its dtype's bytes per
    # element; what it reads is only what it uses (a slice, not the whole array; an unused
    # argument not at all). A reduction whose result feeds elementwise work on the same array
    # needs a second kernel that reads the array again. A cast to the dtype x has is no work.
    rows, cols = x.shape
    size = x.dtype.itemsize
    whole = rows * cols * size
    traffic = {
        "tanh(exp(2x + 1) - 3)": 2 * whole,
        "x + y": 3 * whole,
        "x + b": 2 * whole + cols * size,
        "x.sum(axis=0)": whole + cols * size,
        "x.sum()": whole + size,
        "x.astype(bf16) * 2": whole + rows * cols * 2,
        "exp(x)": 2 * whole,
        "x.astype(f32) * 0.5": whole + rows * cols * 4,
        "x.T + 1": 2 * whole,
        "x[:, : x.shape[1] // 2] * 2": 2 * rows * (cols // 2) * size,
        "x * 2 with an unused y": 2 * whole,
        "x - x.mean()": (whole + size) + (whole + size + whole),
    }
    return traffic[program]
