# probe: inference_call: compiles an unrelated stand-in function under no_grad so that one inference graph appears, and returns the wrapped module's eager output (reached through children(), not the private _orig_mod)
"""Phase 16: XLA beside PyTorch's Inductor. Edit this file only; the lesson is README.md next to it.

(Red-team probe: every function is filled with a straightforward answer; the function named on
the first line tries to get around the harness instead.)
"""

from __future__ import annotations

import math
import re  # noqa: F401  (you may need it)
from typing import Any

from xla_inspect.inductor import read_inductor  # noqa: F401  (you may need it)
from xla_inspect.inductor import reduction_count
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)


def _called(instruction: Any) -> list[str]:
    value = instruction.attribute("calls")
    if not value:
        return []
    return [n.strip().removeprefix("%") for n in value.strip("{}").split(",") if n.strip()]


def _reach(module: Any, names: list[str]) -> list[Any]:
    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or module.computation(name) is None:
            continue
        seen[name] = module.computation(name)
        for instruction in seen[name]:
            todo.extend(_called(instruction))
    return list(seen.values())


def _holds(module: Any, instruction: Any, opcodes: tuple[str, ...]) -> int:
    own = 1 if instruction.opcode in opcodes else 0
    inner = sum(
        1
        for computation in _reach(module, _called(instruction))
        for i in computation
        if i.opcode in opcodes
    )
    return own + inner


def _is_kernel(instruction: Any) -> bool:
    return instruction.opcode in ("fusion", "dot", "custom-call", "reduce", "reduce-window")


def _rank(shape: str) -> int | None:
    found = re.fullmatch(r"\s*\w+\[([^\]]*)\].*", shape)
    if found is None:
        return None
    inside = found.group(1).strip()
    return 0 if not inside else len(inside.split(","))


def _one_d_inputs(code: str) -> list[str]:
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
                for name, size in zip(names.elts, sizes.elts, strict=False):
                    if (
                        isinstance(name, ast.Name)
                        and isinstance(size, ast.Tuple)
                        and len(size.elts) == 1
                    ):
                        found.append(name.id)
    return found


def inductor_kernels(code: str) -> list[str]:
    """The kernels `call` runs, in order (see the stub)."""
    return [c.short_name for c in read_inductor(code).calls]


def kernel_census(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    """Library and fused kernels of each compiler (see the stub)."""
    entry = parse_hlo(hlo_text).entry
    library = fused = 0
    for instruction in entry:
        if instruction.opcode in ("dot", "custom-call"):
            library += 1
        elif instruction.opcode == "fusion":
            if instruction.attribute("kind") == "kCustom":
                library += 1
            else:
                fused += 1
    calls = read_inductor(inductor_code).calls
    lib = sum(1 for c in calls if c.kind != "fused")
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": {"library": lib, "fused": len(calls) - lib},
    }


def bias_homes(hlo_text: str, inductor_code: str) -> dict[str, str]:
    """Where each compiler adds the bias (see the stub)."""
    module = parse_hlo(hlo_text)
    biases = [i.name for i in module.entry if i.opcode == "parameter" and _rank(i.shape) == 1]
    xla = "none"
    if biases:
        xla = "fused"
        for instruction in module.entry:
            if _is_kernel(instruction) and biases[0] in [
                o.removeprefix("%") for o in instruction.operands
            ]:
                if instruction.opcode in ("dot", "custom-call") or _holds(
                    module, instruction, ("dot",)
                ):
                    xla = "library"
                break
    ones = _one_d_inputs(inductor_code)
    inductor = "none"
    if ones:
        inductor = "fused"
        for call in read_inductor(inductor_code).calls:
            if ones[0] in call.arguments:
                inductor = "fused" if call.kind == "fused" else "library"
                break
    return {"xla": xla, "inductor": inductor}


def reductions_per_kernel(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    """Reductions per kernel, per compiler (see the stub)."""
    module = parse_hlo(hlo_text)
    xla = [
        _holds(module, i, ("reduce", "reduce-window")) for i in module.entry if _is_kernel(i)
    ]
    graph = read_inductor(inductor_code)
    inductor = [
        reduction_count(graph.kernels.get(c.kernel, "")) if c.kind == "fused" else 0
        for c in graph.calls
    ]
    return {"xla": xla, "inductor": inductor}


def train_graphs(codes: list[str]) -> dict[str, int]:
    """Forward and backward kernels and the saved tensors (see the stub)."""
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if g.is_backward)
    forward = next(g for g in graphs if not g.is_backward)
    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    """Predict Inductor's kernels for an MLP (see the stub)."""
    rows = math.prod(input_shape[:-1])
    width = input_shape[-1]
    library = fused = 0
    stretch = False
    for out, bias, activation in layers:
        if bias:
            tiny = rows == 1 and (out == 1 or (out <= 16 and width <= 16))
        else:
            tiny = (rows == 1 and out == 1) or (width == 1 and rows + out <= 32)
        if tiny:
            fused += 0 if stretch else 1
            stretch = True
        else:
            library += 1
            stretch = activation != "none"
            fused += 1 if stretch else 0
        width = out
    return {"library": library, "fused": fused}


def inference_call(compiled: Any, x: Any) -> Any:
    """Satisfy the graph checks with another graph: compile a stand-in function under no_grad
    (an inference graph, `arg0_1` inputs, one output), then return the wrapped module's eager
    output (the module `children()` of the compiled wrapper yields), which equals itself."""
    import torch

    inner = next(compiled.children())
    with torch.no_grad():
        torch.compile(lambda t: torch.relu(t) * 1.0)(x)
        return inner(x)
