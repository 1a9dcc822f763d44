# probe: inference_call: runs the compiled module with torch.compiler.set_stance('force_eager') under no_grad: eager values, so nothing is compiled at all (no graph whose primals_ inputs a test could find)
"""Phase 16: XLA beside PyTorch's Inductor. Edit this file only; the lesson is README.md next to it."""

from __future__ import annotations

import re  # noqa: F401
from typing import Any

from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_XLA_OPS = ("dot", "custom-call", "reduce", "reduce-window")


def _calls_of(inst: Any) -> list[str]:
    text = inst.attribute("calls")
    if not text:
        return []
    return [p.strip().lstrip("%") for p in text.strip("{}").split(",") if p.strip()]


def _reached(module: Any, names: list[str]) -> list[Any]:
    seen: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen.append(name)
        for inst in module[name]:
            todo.extend(_calls_of(inst))
    return [module[n] for n in seen]


def _xla_kernels(module: Any) -> list[Any]:
    return [i for i in module.entry if i.opcode == "fusion" or i.opcode in _XLA_OPS]


def inductor_kernels(code: str) -> list[str]:
    """The kernels `call` runs, in order (see the stub's contract)."""
    return [c.short_name for c in read_inductor(code).calls]


def kernel_census(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    """Library and fused kernels per compiler (see the stub's contract)."""
    library = fused = 0
    for inst in parse_hlo(hlo_text).entry:
        if inst.opcode in ("dot", "custom-call"):
            library += 1
        elif inst.opcode == "fusion":
            if inst.attribute("kind") == "kCustom":
                library += 1
            else:
                fused += 1
    calls = read_inductor(inductor_code).calls
    ind_fused = sum(1 for c in calls if c.kind == "fused")
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": {"library": len(calls) - ind_fused, "fused": ind_fused},
    }


def _rank1_inputs(code: str) -> list[str]:
    import ast

    found: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "assert_size_stride" and len(node.args) >= 2:
            name, size = node.args[0], node.args[1]
            if isinstance(name, ast.Name) and isinstance(size, ast.Tuple) and len(size.elts) == 1:
                found.append(name.id)
        elif node.func.id == "assert_size_stride_grouped" and len(node.args) >= 2:
            names, sizes = node.args[0], node.args[1]
            if isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple):
                for n, s in zip(names.elts, sizes.elts, strict=False):
                    if isinstance(n, ast.Name) and isinstance(s, ast.Tuple) and len(s.elts) == 1:
                        found.append(n.id)
    return found


def bias_homes(hlo_text: str, inductor_code: str) -> dict[str, str]:
    """Where each compiler adds the bias (see the stub's contract)."""
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter" and len(i.shape_info.dims) == 1]
    xla = "none"
    if params:
        xla = "fused"
        for inst in _xla_kernels(module):
            if params[0].name in inst.operands:
                holds = inst.opcode in ("dot", "custom-call") or any(
                    i.opcode == "dot" for c in _reached(module, _calls_of(inst)) for i in c
                )
                xla = "library" if holds else "fused"
                break
    rank1 = _rank1_inputs(inductor_code)
    inductor = "none"
    if rank1:
        inductor = "fused"
        for call in read_inductor(inductor_code).calls:
            if rank1[0] in call.arguments and call.kind != "fused":
                inductor = "library"
    return {"xla": xla, "inductor": inductor}


def reductions_per_kernel(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    """Reductions per kernel, per compiler (see the stub's contract)."""
    module = parse_hlo(hlo_text)
    xla = []
    for inst in _xla_kernels(module):
        n = 1 if inst.opcode in ("reduce", "reduce-window") else 0
        comps = _reached(module, _calls_of(inst))
        n += sum(1 for c in comps for i in c if i.opcode in ("reduce", "reduce-window"))
        xla.append(n)
    graph = read_inductor(inductor_code)
    inductor = [
        reduction_count(graph.kernels.get(c.kernel, "")) if c.kind == "fused" else 0
        for c in graph.calls
    ]
    return {"xla": xla, "inductor": inductor}


def train_graphs(codes: list[str]) -> dict[str, int]:
    """Forward and backward kernels, and the tensors saved between them."""
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if g.is_backward)
    forward = next(g for g in graphs if not g.is_backward)
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    """One GEMM per layer (addmm or mm), one fused kernel per activation."""
    return {"library": len(layers), "fused": sum(1 for _, _, act in layers if act != "none")}



def inference_call(compiled: Any, x: Any) -> Any:
    """The module's eager output: Inductor is told to stand aside."""
    import torch

    with torch.compiler.set_stance("force_eager"), torch.no_grad():
        return compiled(x)
