"""Phase 16 reference solutions."""

from __future__ import annotations

import ast
import math
from typing import Any

from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.model import HloInstruction, HloModule
from xla_inspect.parse import parse_hlo

_XLA_KERNEL_OPCODES = {"dot", "custom-call", "reduce", "reduce-window"}
_XLA_LIBRARY_OPCODES = {"dot", "custom-call"}


def _xla_kernels(module: HloModule) -> list[HloInstruction]:
    entry = module.entry.instructions
    return [i for i in entry if i.opcode == "fusion" or i.opcode in _XLA_KERNEL_OPCODES]


def _reached(module: HloModule, instruction: HloInstruction) -> list[HloInstruction]:
    """The instruction and every instruction of the computations its calls= reach (not the
    reducers a reduce names with to_apply=, which only combine two values)."""
    found = [instruction]
    names = _calls(instruction)
    seen: set[str] = set()
    while names:
        name = names.pop()
        if name in seen:
            continue
        seen.add(name)
        for inner in module[name].instructions:
            found.append(inner)
            names.extend(_calls(inner))
    return found


def _calls(instruction: HloInstruction) -> list[str]:
    value = instruction.attribute("calls")
    return [n.strip().lstrip("%") for n in value.strip("{}").split(",")] if value else []


def inductor_kernels(code: str) -> list[str]:
    # call()'s kernel statements in order; a fused kernel is named by the ops it fuses
    return [c.short_name for c in read_inductor(code).calls]


def kernel_census(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    # a library GEMM: a bare dot/custom-call or a kCustom fusion (XLA), an extern call (Inductor)
    xla = {"library": 0, "fused": 0}
    for i in parse_hlo(hlo_text).entry.instructions:
        if i.opcode in _XLA_LIBRARY_OPCODES or (
            i.opcode == "fusion" and i.attributes.get("kind") == "kCustom"
        ):
            xla["library"] += 1
        elif i.opcode == "fusion":
            xla["fused"] += 1
    calls = read_inductor(inductor_code).calls
    fused = sum(c.kind == "fused" for c in calls)
    return {"xla": xla, "inductor": {"library": len(calls) - fused, "fused": fused}}


def _asserted_sizes(code: str) -> dict[str, int]:
    """Each input's number of dimensions, as call()'s assert_size_stride lines state its size
    (each dimension a literal, `24`, or a symbolic size of a dynamic-shape compile, `s1`)."""

    def rank(size: ast.expr) -> int:
        assert isinstance(size, ast.Tuple), ast.unparse(size)
        return len(size.elts)

    ranks: dict[str, int] = {}
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "assert_size_stride" and isinstance(node.args[0], ast.Name):
            ranks[node.args[0].id] = rank(node.args[1])
        elif node.func.id == "assert_size_stride_grouped":
            names, sizes = node.args[0], node.args[1]
            assert isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple)
            for name, size in zip(names.elts, sizes.elts, strict=True):
                assert isinstance(name, ast.Name)
                ranks[name.id] = rank(size)
    return ranks


def bias_homes(hlo_text: str, inductor_code: str) -> dict[str, str]:
    # follow the rank-1 argument to the kernel that reads it; does that kernel hold the product?
    module = parse_hlo(hlo_text)
    homes: dict[str, str] = {"xla": "none", "inductor": "none"}
    bias = [
        p
        for p in module.entry.instructions
        if p.opcode == "parameter" and len(p.shape_info.dims) == 1
    ]
    if bias:
        for kernel in _xla_kernels(module):
            if bias[0].name in kernel.operands:
                holds_dot = any(i.opcode in _XLA_LIBRARY_OPCODES for i in _reached(module, kernel))
                homes["xla"] = "library" if holds_dot else "fused"
                break
    graph = read_inductor(inductor_code)
    sizes = _asserted_sizes(inductor_code)
    name = next((n for n in graph.inputs if sizes.get(n) == 1), None)
    if name is not None:
        call = next(c for c in graph.calls if name in c.arguments)
        homes["inductor"] = "fused" if call.kind == "fused" else "library"
    return homes


def reductions_per_kernel(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    # XLA ends a fusion at a reduction; Inductor runs several reduction loops in one kernel
    module = parse_hlo(hlo_text)
    xla = [
        sum(i.opcode in ("reduce", "reduce-window") for i in _reached(module, kernel))
        for kernel in _xla_kernels(module)
    ]
    graph = read_inductor(inductor_code)
    inductor = [reduction_count(graph.kernels.get(c.kernel, "")) for c in graph.calls]
    return {"xla": xla, "inductor": inductor}


def train_graphs(codes: list[str]) -> dict[str, int]:
    # AOTAutograd: the backward takes the saved tensors (and, compiled with dynamic shapes,
    # the saved size symbols) and the output gradients (tangents)
    graphs = [read_inductor(code) for code in codes]
    forward = next(g for g in graphs if not g.is_backward)
    backward = next(g for g in graphs if g.is_backward)
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


def _decomposed(rows: int, width: int, out: int, bias: bool) -> bool:
    """Whether Inductor turns the layer's product into a fused multiply-and-sum instead of
    calling the BLAS (torch/_inductor/decomposition.py: addmm and mm on CPU)."""
    if bias:  # addmm: one row, and one output or a weight no larger than 16 x 16
        return rows == 1 and (out == 1 or (width <= 16 and out <= 16))
    # mm: one input feature and few elements (a broadcast multiply), or one row and one output
    one_feature = width == 1 and rows != 1 and out != 1 and rows + out <= 32
    return one_feature or (rows == 1 and out == 1)


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    # a GEMM handed to the BLAS is one library call (the bias rides in addmm); everything else
    # between two library calls (activations, tiny products Inductor decomposes) is one kernel
    rows = math.prod(input_shape[:-1])
    width = input_shape[-1]
    library = fused = 0
    pending = False  # work since the last library call, waiting for its fused kernel
    for out, bias, activation in layers:
        if _decomposed(rows, width, out, bias):
            pending = True
        else:
            fused += pending
            library += 1
            pending = False
        pending = pending or activation != "none"
        width = out
    return {"library": library, "fused": fused + pending}


def inference_call(compiled: Any, x: Any) -> Any:
    # no_grad: nothing will be differentiated, so AOTAutograd makes one inference graph
    import torch  # pyright: ignore[reportMissingImports]  (the torch group)

    with torch.no_grad():
        return compiled(x)
