# probe: predict_inductor_kernels: reads the answer from katas/phase16/recorded/ and from the Inductor cache in the checkout (.cache/inductor, where live compiles land) instead of predicting; textbook guess otherwise
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


def _root() -> Any:
    from pathlib import Path

    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "katas" / "phase16" / "recorded").is_dir():
            return parent
    return here.parent


def _mlp_shapes(input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]) -> list:
    shapes = [tuple(input_shape)]
    width = input_shape[-1]
    for out, bias, _ in layers:
        shapes.append((out, width))
        if bias:
            shapes.append((out,))
        width = out
    return shapes


def _count(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    fused = sum(1 for c in calls if c.kind == "fused")
    return {"library": len(calls) - fused, "fused": fused}


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    """Look the answer up instead of predicting it: the recorded MLPs (their `# program:` line
    names shape and layers) and every module Inductor wrote into its cache in the checkout
    (.cache/inductor, where the tests' live compiles land), matched by the asserted sizes of
    `call`'s inputs; only when nothing matches, a textbook guess (one GEMM per layer, one kernel
    per activation)."""
    import ast

    root = _root()
    wanted = sorted(_mlp_shapes(input_shape, layers))
    header = re.compile(r"# program: MLP on x(\[[^\]]*\]), layers \(out_features, bias, activation\) (.*)")
    rows1 = math.prod(input_shape[:-1]) == 1
    near = None
    for path in sorted((root / "katas" / "phase16" / "recorded").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        found = header.search(text)
        if not found:
            continue
        shape = tuple(ast.literal_eval(found.group(1)))
        recorded = [tuple(layer) for layer in ast.literal_eval(found.group(2))]
        if recorded != [tuple(layer) for layer in layers] or shape[-1] != input_shape[-1]:
            continue
        code = text.split("# ---- graph 1 of 1\n", 1)[-1]
        if shape == tuple(input_shape):
            return _count(code)
        if (math.prod(shape[:-1]) == 1) == rows1:
            near = _count(code)
    for path in (root / ".cache" / "inductor").rglob("*.py"):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "def call" not in text or "primals_" in text:
            continue
        sizes = []
        for found in re.finditer(r"assert_size_stride(?:_grouped)?\((.*)\)\s*$", text, re.M):
            try:
                parts = ast.literal_eval("(" + found.group(1).split(")", 1)[1].lstrip(", ") + ")")
            except (ValueError, SyntaxError):
                continue
            sizes.extend(parts[0] if parts and isinstance(parts[0][0], tuple) else parts[:1])
        if sorted(tuple(s) for s in sizes) == wanted:
            return _count(text)
    if near is not None:
        return near
    fused = sum(1 for _, _, activation in layers if activation != "none")
    return {"library": len(layers), "fused": fused}


def inference_call(compiled: Any, x: Any) -> Any:
    """`compiled(x)` compiled as an inference graph (see the stub)."""
    import torch

    with torch.no_grad():
        return compiled(x)
