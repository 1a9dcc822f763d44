"""Red team, phase 16, round 8: plausible wrong answers (each changes one thing of a right one)."""

from __future__ import annotations

import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_RT8_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")


def _rt8_called(instruction: Any) -> list[str]:
    value = instruction.attribute("calls")
    if not value:
        return []
    return [n.strip().removeprefix("%") for n in value.strip("{}").split(",") if n.strip()]


def _rt8_reach(module: Any, names: list[str]) -> list[Any]:
    seen: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        computation = module.computation(name)
        if computation is None:
            continue
        seen[name] = computation
        for instruction in computation:
            todo.extend(_rt8_called(instruction))
    return list(seen.values())


def _rt8_xla_reductions(hlo_text: str, capped: bool = False) -> list[int]:
    module = parse_hlo(hlo_text)
    out = []
    for inst in module.entry:
        if inst.opcode not in _RT8_KERNEL_OPS:
            continue
        n = 1 if inst.opcode in ("reduce", "reduce-window") else 0
        n += sum(
            1
            for comp in _rt8_reach(module, _rt8_called(inst))
            for inner in comp
            if inner.opcode in ("reduce", "reduce-window")
        )
        out.append(min(n, 1) if capped else n)
    return out


def _rt8_inductor_reductions(code: str) -> list[int]:
    graph = read_inductor(code)
    sources = _rt8_sources(code)
    return [
        reduction_count(sources.get(c.kernel, "")) if c.kind == "fused" else 0 for c in graph.calls
    ]


def _rt8_sources(code: str) -> dict[str, str]:
    return dict(read_inductor(code).kernels)


def _rt8_kernel_count(code: str) -> int:
    return len(read_inductor(code).calls)


def _rt8_graph_inputs(code: str) -> tuple[str, ...]:
    return tuple(read_inductor(code).inputs)


# ---- inductor_kernels --------------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="'\"\" for cpp_fused_0, a kernel that fuses no named operator': cuts the prefix and then "
    "the number with rsplit('_', 1)[0], which finds no '_' in '0' and keeps it: answers '0' for "
    "cpp_fused_0 (the layout copy of recorded/train_conv_relu.txt's forward) instead of ''",
)
def _rt8_inductor_kernels_rsplit_number(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kind == "fused":
            out.append(c.kernel[len("cpp_fused_") :].rsplit("_", 1)[0])
        else:
            out.append(c.short_name)
    return out


@wrong(
    "inductor_kernels",
    why="'in the order it runs them': keeps the library calls where they are but lists the fused "
    "kernels in the order of their `_<n>` numbers (Inductor numbers them in graph order in every "
    "recording); wrong when a fused kernel with a higher number runs first, e.g. a call running "
    "cpp_fused_relu_1 then cpp_fused_gelu_0 gives ['gelu', 'relu'] instead of ['relu', 'gelu']",
)
def _rt8_inductor_kernels_fused_by_number(code: str) -> list[str]:
    calls = list(read_inductor(code).calls)
    fused = [c for c in calls if c.kind == "fused"]

    def number(c: Any) -> int:
        m = re.search(r"_(\d+)$", c.kernel)
        return int(m.group(1)) if m else 0

    fused_sorted = iter(sorted(fused, key=number))
    out = []
    for c in calls:
        if c.kind == "fused":
            k = next(fused_sorted).kernel
            out.append(re.sub(r"_?\d+$", "", k[len("cpp_fused_") :]) if k != "cpp_fused_0" else "")
        else:
            out.append(c.short_name)
    return out


# ---- kernel_census -----------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="'ENTRY instructions': takes the LAST computation printed in the text as ENTRY (XLA "
    "prints ENTRY last) instead of the one marked ENTRY; wrong on any module whose ENTRY is "
    "printed before a fused computation (a nested fusion moved further down), where it counts "
    "the fused computation's instructions (no fusions: library 0, fused 0 or the nested ones)",
)
def _rt8_kernel_census_last_computation(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    blocks = re.split(r"\n(?=(?:ENTRY )?%?[\w.\-]+ [^\n]*\{\s*\n)", hlo_text)
    body = blocks[-1] if blocks else hlo_text
    lib = fused = 0
    for line in body.splitlines():
        m = re.search(r"= (?:\([^()]*\)|[^ ]+) ([\w\-]+)\(", line)
        if not m:
            continue
        op = m.group(1)
        if op in ("dot", "custom-call"):
            lib += 1
        elif op == "fusion":
            if "kind=kCustom" in line:
                lib += 1
            else:
                fused += 1
    calls = read_inductor(inductor_code).calls
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": {
            "library": sum(1 for c in calls if c.kind != "fused"),
            "fused": sum(1 for c in calls if c.kind == "fused"),
        },
    }


@wrong(
    "kernel_census",
    why="XLA 'library' counts every ENTRY dot and custom-call, 'fused' every other ENTRY "
    "fusion, whatever its result shape: this reads each ENTRY line with a regex that expects "
    "one array shape `%x = f32[..]{..} op(`, so an instruction with a tuple result "
    "`(f32[..], s32[..]) fusion(` is never counted: the multi-output fusion of row_stats' twin "
    "(argmax + var/mean) and cholesky's tuple-shaped LAPACK custom-call are missed",
)
def _rt8_kernel_census_simple_shape_regex(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    entry = hlo_text[hlo_text.index("ENTRY") :]
    entry = entry[: entry.index("\n}") if "\n}" in entry else len(entry)]
    lib = fused = 0
    for m in re.finditer(r"%[\w.\-]+ = \w+\[[^\]]*\](?:\{[^}]*\})? ([\w\-]+)\(([^\n]*)", entry):
        op, rest = m.group(1), m.group(2)
        if op in ("dot", "custom-call"):
            lib += 1
        elif op == "fusion":
            if "kind=kCustom" in rest:
                lib += 1
            else:
                fused += 1
    calls = read_inductor(inductor_code).calls
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": {
            "library": sum(1 for c in calls if c.kind != "fused"),
            "fused": sum(1 for c in calls if c.kind == "fused"),
        },
    }


# ---- reductions_per_kernel ---------------------------------------------------------------


@wrong(
    "reductions_per_kernel",
    why="XLA: a kernel's count is its reduce/reduce-window instructions plus those its calls= "
    "reaches, not whether it has one: answers min(n, 1) per ENTRY kernel (XLA:CPU ends a "
    "fusion at each reduction, so it is 0/1 on every twin), wrong on a kernel holding two "
    "reductions (a multi-output fusion of two sibling reduces, or a fusion calling one nested "
    "fusion with a reduce-window and a reduce)",
)
def _rt8_reductions_xla_has_reduce(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt8_xla_reductions(hlo_text, capped=True),
        "inductor": _rt8_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="Inductor: one count per accumulator of the kernel each call runs; this looks a call's "
    "C++ up by its fused OPS name (cpp_fused_sum_1 and cpp_fused_sum_10 both 'sum'), taking the "
    "first kernel defined with those ops, so two kernels fusing the same operators with "
    "different reduction counts get the count of whichever is defined first",
)
def _rt8_reductions_by_ops_name(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    sources = _rt8_sources(inductor_code)
    by_ops: dict[str, int] = {}
    for name, src in sources.items():
        by_ops.setdefault(re.sub(r"_\d+$", "", name), reduction_count(src))
    out = []
    for c in read_inductor(inductor_code).calls:
        out.append(by_ops.get(re.sub(r"_\d+$", "", c.kernel), 0) if c.kind == "fused" else 0)
    return {"xla": _rt8_xla_reductions(hlo_text), "inductor": out}


# ---- train_graphs ------------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="'the backward graph is the one whose call takes tangents_<n> inputs': takes the graph "
    "that runs MORE kernels as the backward (true of train_mlp_gelu, 4 vs 6); wrong on a step "
    "whose backward runs fewer kernels than its forward (a forward with a LayerNorm+softmax "
    "and a loss reduction, or a forward with several outputs), swapping forward/backward and "
    "computing 'saved' on the forward",
)
def _rt8_train_graphs_bigger_is_backward(codes: list[str]) -> dict[str, int]:
    a, b = codes[0], codes[1]
    fwd, bwd = (a, b) if _rt8_kernel_count(a) <= _rt8_kernel_count(b) else (b, a)
    saved = [n for n in _rt8_graph_inputs(bwd) if not n.startswith("tangents_")]
    return {
        "forward": _rt8_kernel_count(fwd),
        "backward": _rt8_kernel_count(bwd),
        "saved": len(saved),
    }


@wrong(
    "train_graphs",
    why="'saved' = the backward's inputs other than tangents_<n>: counts only the saved inputs a "
    "backward KERNEL reads (names among its calls' arguments); a saved tensor the backward only "
    "views, returns as is or reads through reinterpret_tensor is left out, so saved is too small",
)
def _rt8_train_graphs_saved_read_by_kernels(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bwd = next(g for g in graphs if any(n.startswith("tangents_") for n in g.inputs))
    fwd = next(g for g in graphs if g is not bwd)
    read = {a for c in bwd.calls for a in c.arguments}
    saved = [n for n in bwd.inputs if not n.startswith("tangents_") and n in read]
    return {"forward": len(fwd.calls), "backward": len(bwd.calls), "saved": len(saved)}


# ---- predict_inductor_kernels ------------------------------------------------------------


def _rt8_tiny(rows: int, fin: int, out: int, bias: bool, variant: str = "") -> bool:
    if bias:
        if variant == "bias_one_output":
            return out == 1 or (rows == 1 and fin <= 16 and out <= 16)
        return rows == 1 and (out == 1 or (fin <= 16 and out <= 16))
    if rows == 1 and out == 1:
        return True
    if variant == "strict32":
        return fin == 1 and rows >= 2 and out >= 2 and rows + out < 32
    if variant == "no_min":
        return fin == 1 and rows + out <= 32
    return fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32


def _rt8_predict(input_shape, layers, variant: str = "") -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    fin = input_shape[-1]
    library = fused = 0
    open_stretch = False
    for out, bias, act in layers:
        if _rt8_tiny(rows, fin, out, bias, variant):
            if variant == "act_only":
                pass  # a rewritten product is not counted as work of its own
            else:
                open_stretch = True
        else:
            if open_stretch:
                fused += 1
            open_stretch = False
            library += 1
        if act != "none":
            open_stretch = True
        fin = out
    if open_stretch:
        fused += 1
    return {"library": library, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="a layer with a bias is rewritten 'when the input has one row AND the weight has one "
    "output or is at most 16 x 16'; this reads it as '(one row and at most 16 x 16) or one "
    "output', rewriting a biased one-output layer on many rows: x[8,24] -> linear(24->1, bias) "
    "is an addmm (1 library, 0 fused), this answers 0 library 1 fused",
)
def _rt8_predict_bias_one_output_any_rows(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt8_predict(input_shape, layers, "bias_one_output")


@wrong(
    "predict_inductor_kernels",
    why="no-bias one-feature rule needs at least two rows and at least two outputs; this drops "
    "both conditions (one feature and rows+outputs <= 32): x[1,1] -> linear(1->6, no bias) "
    "stays mm (README), this answers 0 library 1 fused",
)
def _rt8_predict_no_min_rows(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt8_predict(input_shape, layers, "no_min")


@wrong(
    "predict_inductor_kernels",
    why="a rewritten (tiny) product is a multiply and a sum Inductor FUSES: it is work of its "
    "own; this counts fused kernels only for activations, so x[1,8] -> linear(8->8, bias, "
    "'none') answers 0 library 0 fused instead of 0 library 1 fused",
)
def _rt8_predict_activation_only(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt8_predict(input_shape, layers, "act_only")


# ---- inference_call ----------------------------------------------------------------------


@wrong(
    "inference_call",
    why="'called so that Inductor compiles one inference graph': warms the compiled module up "
    "with a plain call first (grad enabled, parameters requiring grad: AOTAutograd compiles a "
    "forward with primals_<n> inputs and a backward), then calls it under no_grad; a training "
    "graph is compiled too",
)
def _rt8_inference_call_warmup(compiled: Any, x: Any) -> Any:
    import torch

    compiled(x)
    with torch.no_grad():
        return compiled(x)


@wrong(
    "inference_call",
    why="the parameters require grad, so no_grad is needed whatever x is; this enters no_grad "
    "only when x.requires_grad (thinking the input is what makes a training graph): on a plain "
    "x the call compiles a forward with primals_<n> inputs that saves tensors",
)
def _rt8_inference_call_only_if_x_grad(compiled: Any, x: Any) -> Any:
    import torch

    if getattr(x, "requires_grad", False):
        with torch.no_grad():
            return compiled(x)
    return compiled(x).detach()


# ---- bias_homes --------------------------------------------------------------------------


def _rt8_dims(shape: str) -> list[int] | None:
    found = re.fullmatch(r"\s*\w+\[([^\]]*)\].*", shape)
    if found is None:
        return None
    inside = found.group(1).strip()
    return [] if not inside else [int(d) for d in inside.split(",")]


def _rt8_holds_dot(module: Any, inst: Any) -> bool:
    if inst.opcode in ("dot", "custom-call"):
        return True
    return any(i.opcode == "dot" for comp in _rt8_reach(module, _rt8_called(inst)) for i in comp)


def _rt8_xla_bias_home(hlo_text: str, min_size: int = 1) -> str:
    module = parse_hlo(hlo_text)
    entry = module.entry
    biases = []
    for i in entry:
        if i.opcode != "parameter":
            continue
        dims = _rt8_dims(i.shape)
        if dims is not None and len(dims) == 1 and dims[0] >= min_size:
            biases.append(i.name)
    if not biases:
        return "none"
    bias = biases[0]
    for inst in entry:
        if inst.opcode not in _RT8_KERNEL_OPS:
            continue
        if bias in [o.removeprefix("%") for o in inst.operands]:
            return "library" if _rt8_holds_dot(module, inst) else "fused"
    return "fused"


def _rt8_inductor_rank1(code: str, min_size: int = 1) -> str | None:
    import ast

    def size_ok(size: Any) -> bool:
        if not (isinstance(size, ast.Tuple) and len(size.elts) == 1):
            return False
        first = size.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, int):
            return first.value >= min_size
        return True

    for node in ast.walk(ast.parse(code)):
        if (
            not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name))
            or len(node.args) < 2
        ):
            continue
        if node.func.id == "assert_size_stride":
            name, size = node.args[0], node.args[1]
            if isinstance(name, ast.Name) and size_ok(size):
                return name.id
        elif node.func.id == "assert_size_stride_grouped":
            names, sizes = node.args[0], node.args[1]
            if isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple):
                for name, size in zip(names.elts, sizes.elts):
                    if isinstance(name, ast.Name) and size_ok(size):
                        return name.id
    return None


def _rt8_inductor_bias_home(code: str, bias: str | None, substring: bool = False) -> str:
    if bias is None:
        return "none"
    lines = code.splitlines()
    for c in read_inductor(code).calls:
        if substring:
            text = lines[c.line - 1] if 0 < c.line <= len(lines) else ""
            hit = bias in text
        else:
            hit = bias in c.arguments
        if hit:
            return "fused" if c.kind == "fused" else "library"
    return "fused"


@wrong(
    "bias_homes",
    why="the bias is the only rank-1 argument, whatever its size; this takes a one-element "
    "argument (size (1, ) / f32[1]) for a scalar stored as a tensor and skips it: a layer with "
    "one output, linear(48->1) with a bias on x[16,48], answers 'none' for both compilers "
    "instead of 'library' (addmm) / 'fused' (XLA's loop fusion after the kCustom dot)",
)
def _rt8_bias_homes_one_element_is_scalar(hlo_text: str, inductor_code: str) -> dict[str, str]:
    return {
        "xla": _rt8_xla_bias_home(hlo_text, min_size=2),
        "inductor": _rt8_inductor_bias_home(
            inductor_code, _rt8_inductor_rank1(inductor_code, min_size=2)
        ),
    }


@wrong(
    "bias_homes",
    why="Inductor 'library' when the bias is an ARGUMENT of the library call or fallback; this "
    "tests whether the bias's name occurs in the text of each kernel call's line, so a bias "
    "whose name is part of another argument's (bias `arg1_1` beside `arg1_10`, or a renamed "
    "bias `b` on the line `extern_kernels.mm(buf0, ...)`) is found in a GEMM that never reads "
    "it: bias_after_relu with its inputs renamed answers 'library' instead of 'fused'",
)
def _rt8_bias_homes_name_in_line(hlo_text: str, inductor_code: str) -> dict[str, str]:
    return {
        "xla": _rt8_xla_bias_home(hlo_text),
        "inductor": _rt8_inductor_bias_home(
            inductor_code, _rt8_inductor_rank1(inductor_code), substring=True
        ),
    }
