# probe: kernel_census: return a dict whose values are ints equal to anything
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

import re  # noqa: F401  (you may need it)
from typing import Any

from xla_inspect.inductor import read_inductor  # noqa: F401  (you may need it)
from xla_inspect.parse import parse_hlo  # noqa: F401  (you may need it)



def _calls(code):
    return read_inductor(code).calls


def inductor_kernels(code: str) -> list[str]:
    return [c.short_name for c in _calls(code)]


def _xla_entry(hlo_text):
    m = parse_hlo(hlo_text)
    return m, [i for i in m.entry.instructions
               if i.opcode in ("fusion", "dot", "custom-call", "reduce", "reduce-window")]


def _reach(m, names):
    seen, stack = set(), list(names)
    while stack:
        n = stack.pop()
        if n in seen or m.computation(n) is None:
            continue
        seen.add(n)
        for i in m.computation(n).instructions:
            v = i.attribute("calls")
            if v:
                stack += [x.strip().lstrip("%") for x in v.strip("{}").split(",") if x.strip()]
    return seen


def _called(i):
    v = i.attribute("calls")
    return [x.strip().lstrip("%") for x in v.strip("{}").split(",") if x.strip()] if v else []


def bias_homes(hlo_text: str, inductor_code: str) -> dict[str, str]:
    m, kernels = _xla_entry(hlo_text)
    params = [i for i in m.entry.instructions if i.opcode == "parameter" and len(i.shape_info.dims) == 1]
    xla = "none"
    if params:
        for i in kernels:
            if params[0].name in i.operands:
                if i.opcode in ("dot", "custom-call"):
                    xla = "library"
                else:
                    has = any(x.opcode == "dot" for c in _reach(m, _called(i)) for x in m.computation(c).instructions)
                    xla = "library" if has else "fused"
                break
    g = read_inductor(inductor_code)
    sizes = {}
    for mm in re.finditer(r"assert_size_stride_grouped\(\(([^)]*)\),\s*(\(.*?\)\)),", inductor_code):
        import ast
        names = [n.strip() for n in mm.group(1).split(",") if n.strip()]
        for n, s in zip(names, ast.literal_eval(mm.group(2))):
            sizes[n] = s
    bias = [n for n in g.inputs if len(sizes.get(n, (0, 0))) == 1]
    ind = "none"
    if bias:
        for c in g.calls:
            if bias[0] in c.arguments:
                ind = "fused" if c.kind == "fused" else "library"
                break
    return {"xla": xla, "inductor": ind}


def reductions_per_kernel(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    from xla_inspect.inductor import reduction_count
    m, kernels = _xla_entry(hlo_text)
    xla = []
    for i in kernels:
        n = int(i.opcode in ("reduce", "reduce-window"))
        for c in _reach(m, _called(i)):
            n += sum(x.opcode in ("reduce", "reduce-window") for x in m.computation(c).instructions)
        xla.append(n)
    g = read_inductor(inductor_code)
    return {"xla": xla, "inductor": [reduction_count(g.kernels.get(c.kernel, "")) if c.kind == "fused" else 0 for c in g.calls]}


def train_graphs(codes: list[str]) -> dict[str, int]:
    gs = [read_inductor(c) for c in codes]
    back = next(g for g in gs if g.is_backward)
    fwd = next(g for g in gs if not g.is_backward)
    return {"forward": len(fwd.calls), "backward": len(back.calls),
            "saved": sum(not n.startswith("tangents_") for n in back.inputs)}


def predict_inductor_kernels(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    rows = 1
    for d in input_shape[:-1]:
        rows *= d
    width = input_shape[-1]
    lib = fused = 0
    open_run = False
    for out, bias, act in layers:
        if bias:
            small = rows == 1 and (out == 1 or (width <= 16 and out <= 16))
        else:
            small = (rows == 1 and out == 1) or (width == 1 and rows + out <= 32)
        if small:
            if not open_run:
                fused += 1
                open_run = True
        else:
            lib += 1
            open_run = False
        if act != "none" and not open_run:
            fused += 1
            open_run = True
        width = out
    return {"library": lib, "fused": fused}


def inference_call(compiled: Any, x: Any) -> Any:
    import torch

    with torch.no_grad():
        return compiled(x)


class _Any(int):
    """An int that equals every value (and hashes like 0)."""

    def __eq__(self, other):  # noqa: D105
        return True

    def __ne__(self, other):  # noqa: D105
        return False

    __hash__ = int.__hash__


class _AnyDict(dict):
    def __missing__(self, key):
        return _AnyDict()

    def __eq__(self, other):  # noqa: D105
        return True

    def __ne__(self, other):  # noqa: D105
        return False

    def __getitem__(self, key):
        return dict.get(self, key, _Any(0))


def kernel_census(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    inner = {"library": _Any(0), "fused": _Any(0)}
    return _AnyDict({"xla": _AnyDict(inner), "inductor": _AnyDict(inner)})
