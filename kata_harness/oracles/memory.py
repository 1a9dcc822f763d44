"""Phase 6's oracles: XLA's cost and memory analyses of compiled programs (a list of steps
compiled one by one and as one program, a program with donated arguments, a matmul chain's temp
buffers, a program's bytes accessed), XLA's own parser's verdict on a module, and the bytes of
each ENTRY result of a module as XLA's parser prints its shape.

Each function takes a program and its arguments or a module's text, never the kata's answer.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping

import jax
import numpy as np

from xla_inspect.capture import capture

from . import xla_module


def step_bytes(steps, make) -> tuple[float, float]:
    """(op by op, fused) bytes accessed, each program's cost read from what XLA compiled."""
    value = make()
    op_by_op = 0.0
    for step in steps:
        op_by_op += capture(step, value).cost_analysis.get("bytes accessed", 0.0)
        value = np.asarray(jax.jit(step)(value))  # the real output, dtype and all

    def composed(v):
        for step in steps:
            v = step(v)
        return v

    return op_by_op, capture(composed, make()).cost_analysis.get("bytes accessed", 0.0)


def memory(fn, args: tuple, donate) -> Mapping[str, int]:
    """XLA's memory analysis of ``fn`` compiled at ``args`` with ``donate_argnums=donate``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        return capture(fn, *args, donate_argnums=donate).memory_analysis


def xla_parses(text: str) -> None:
    """XLA's own C++ parser accepts the text (where jaxlib has the private binding)."""
    try:
        # jaxlib ships no stub for its _hlo extension module
        from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]
    except ImportError:
        return
    if hasattr(_hlo, "hlo_module_from_text"):
        xla_module(text)


def temp_bytes(fn, *args) -> int:
    """The temp buffers XLA's buffer assignment gives ``fn`` compiled at ``args``, in bytes."""
    stats = jax.jit(fn).lower(*args).compile().memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    return int(stats.temp_size_in_bytes)


def bytes_accessed(fn, *args) -> float:
    """XLA's cost analysis of ``fn`` compiled at ``args``: its bytes accessed."""
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    assert isinstance(cost, dict), f"cost_analysis gave {cost!r:.80}"
    return float(cost.get("bytes accessed", 0.0))


def cost(fn, *args) -> dict[str, float]:
    """XLA's cost analysis of ``fn`` compiled at ``args`` exactly as given (a Python number
    stays weakly typed), keys as XLA spells them."""
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    assert isinstance(analysis, dict), f"cost_analysis gave {analysis!r:.80}"
    return {key: float(value) for key, value in analysis.items()}


_NOT_ARRAYS = {"TOKEN", "TUPLE", "OPAQUE_TYPE", "PRIMITIVE_TYPE_INVALID"}


def element_types() -> tuple[str, ...]:
    """The array element types this jaxlib's XLA knows, as HLO text spells them (``f8e5m2``),
    from its own ``PrimitiveType`` enum."""
    from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]  # no stub

    names = [n for n in dir(_hlo.PrimitiveType) if n.isupper() and n not in _NOT_ARRAYS]
    return tuple(sorted(n.lower() for n in names))


_TYPE = re.compile(r"(bf|s|u|f|c)(\d+)(e\w+)?")
_KIND = {"bf": "bfloat", "s": "int", "u": "uint", "f": "float", "c": "complex"}


def element_bytes(name: str) -> int:
    """Bytes of one unpacked element of XLA type ``name``: the item size of the NumPy dtype (from
    ml_dtypes, through JAX) that the type is (``s4`` is ``int4``, ``f8e4m3fn`` is
    ``float8_e4m3fn``)."""
    if name == "pred":
        return np.dtype(np.bool_).itemsize
    match = _TYPE.fullmatch(name)
    assert match is not None, f"not an XLA array type: {name}"
    kind, bits, rest = match.groups()
    return np.dtype(f"{_KIND[kind]}{bits}" + (f"_{rest}" if rest else "")).itemsize


_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,]*)\](\{[^}]*\})?")
_PACKED = re.compile(r"E\((\d+)\)")


def _shape_bytes(shape: str) -> int:
    """A printed shape's bytes: per array, elements times an element's bytes, or, where the
    layout packs elements (``{0:E(4)}``), their bits rounded up to whole bytes."""
    total = 0
    for name, dims, layout in _ARRAY.findall(shape):
        count = math.prod(int(d) for d in dims.split(",") if d)
        packed = _PACKED.search(layout or "")
        bits = int(packed.group(1)) if packed else 8 * element_bytes(name)
        total += -(-count * bits // 8)
    return total


def _entry(text: str):
    """XLA's parse of ``text``, its ENTRY computation and the match of ENTRY's header in XLA's
    canonical print."""
    module = xla_module(text)
    entry = re.search(r"^ENTRY %?([^\s(]+)", module.text, re.MULTILINE)
    assert entry is not None, "XLA printed no ENTRY computation"
    (computation,) = [c for c in module.computations if c.name == entry.group(1)]
    return module, computation, entry


def entry_result_bytes(text: str) -> dict[str, int]:
    """Each ENTRY instruction's result bytes, read from XLA's canonical print of it (every
    array of a tuple shape summed), by instruction name."""
    _, computation, _ = _entry(text)
    sizes = {}
    for instruction in computation.instructions:
        printed = instruction.printed.removeprefix("ROOT ").partition(" = ")[2]
        if printed.startswith("("):  # a tuple shape: up to its closing parenthesis
            depth, end = 0, 0
            while True:
                depth += (printed[end] == "(") - (printed[end] == ")")
                end += 1
                if depth == 0:
                    break
            shape = printed[:end]
        else:
            shape = printed.partition(" ")[0]
        sizes[instruction.name] = _shape_bytes(shape)
    return sizes


_VIEWS = {"kParameter", "kConstant", "kBitcast", "kTuple", "kGetTupleElement"}
_TUPLE_OPERANDS = re.compile(r"\btuple\(([^)]*)\)")


def entry_intermediate_bytes(text: str) -> int:
    """The bytes of the ENTRY results XLA's parser makes of ``text``, less those of parameters,
    constants and views (XLA's opcodes kParameter, kConstant, kBitcast, kTuple,
    kGetTupleElement) and of the outputs: the instruction XLA prints as ROOT and, when it is a
    tuple, the operands XLA prints for it. Opcodes come from XLA's enum, never from the text."""
    module, computation, entry = _entry(text)
    sizes = entry_result_bytes(text)
    body = module.text[entry.end() :].split("\n}", 1)[0]
    root = re.search(r"^\s*ROOT %?([^\s=]+) =", body, re.MULTILINE)
    assert root is not None, "XLA printed no ROOT in ENTRY"
    outputs: set[str] = set()
    for instruction in computation.instructions:
        if instruction.name == root.group(1):
            outputs.add(instruction.name)
            if instruction.opcode == "kTuple":
                operands = _TUPLE_OPERANDS.search(instruction.printed)
                assert operands is not None, f"XLA printed a tuple as {instruction.printed!r}"
                outputs |= {o.strip().lstrip("%") for o in operands.group(1).split(",") if o}
    return sum(
        sizes[i.name]
        for i in computation.instructions
        if i.opcode not in _VIEWS and i.name not in outputs
    )
