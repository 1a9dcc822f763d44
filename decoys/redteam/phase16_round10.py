"""Red team, phase 16, round 10: plausible wrong answers, each one mistake away from a right one."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_RT10_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")
_RT10_REDUCTIONS = ("reduce", "reduce-window")


def _rt10_called(instruction: Any) -> list[str]:
    value = instruction.attribute("calls")
    if not value:
        return []
    return [n.strip().removeprefix("%") for n in value.strip("{}").split(",") if n.strip()]


def _rt10_reach(module: Any, names: list[str]) -> list[Any]:
    seen: dict = {}
    found = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        computation = module.computation(name)
        if computation is None:
            continue
        seen[name] = computation
        found.append(computation)
        for instruction in computation:
            todo.extend(_rt10_called(instruction))
    return found


def _rt10_label(c: Any) -> str:
    if c.kind == "fused":
        rest = c.kernel[len("cpp_fused_") :]
        return "" if rest.isdigit() else re.sub(r"_\d+$", "", rest)
    return c.short_name


def _rt10_xla_reductions(hlo_text: str, per_inst=None) -> list[int]:
    module = parse_hlo(hlo_text)
    per_inst = per_inst or (lambda inst: 1)
    out = []
    for inst in module.entry:
        if inst.opcode not in _RT10_KERNEL_OPS:
            continue
        n = per_inst(inst) if inst.opcode in _RT10_REDUCTIONS else 0
        n += sum(
            per_inst(inner)
            for comp in _rt10_reach(module, _rt10_called(inst))
            for inner in comp
            if inner.opcode in _RT10_REDUCTIONS
        )
        out.append(n)
    return out


def _rt10_inductor_reductions(code: str, fallback=lambda c: 0) -> list[int]:
    graph = read_inductor(code)
    sources = dict(graph.kernels)
    return [
        reduction_count(sources.get(c.kernel, ""))
        if c.kind == "fused"
        else (fallback(c) if c.kind == "fallback" else 0)
        for c in graph.calls
    ]


def _rt10_xla_bias_home(hlo_text: str) -> str:
    module = parse_hlo(hlo_text)
    entry = module.entry
    bias = None
    for i in entry:
        if i.opcode == "parameter":
            m = re.fullmatch(r"\s*\w+\[([^\]]*)\].*", i.shape)
            if m and m.group(1).strip() and "," not in m.group(1):
                bias = i.name
                break
    if bias is None:
        return "none"
    for inst in entry:
        if inst.opcode not in _RT10_KERNEL_OPS:
            continue
        if bias in [o.removeprefix("%") for o in inst.operands]:
            if inst.opcode in ("dot", "custom-call"):
                return "library"
            return (
                "library"
                if any(
                    i.opcode == "dot" for c in _rt10_reach(module, _rt10_called(inst)) for i in c
                )
                else "fused"
            )
    return "fused"


def _rt10_predict(input_shape, layers, tiny) -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    fin = input_shape[-1]
    library = fused = 0
    open_stretch = False
    for out, bias, act in layers:
        if tiny(rows, fin, out, bias):
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


# ---- inductor_kernels --------------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="'in the order it runs them, one entry per call': this tallies the calls per kernel in "
    "a dict (first-seen order) and then lists each kernel as many times as it was called, so "
    "the repeats of a kernel called twice are put next to each other; wrong on "
    "handwritten.HANDWRITTEN (bmm, add_relu, baddbmm, add_relu, _addmm_activation: this "
    "gives bmm, add_relu, add_relu, baddbmm, _addmm_activation)",
)
def _rt10_inductor_kernels_tally_in_dict(code: str) -> list[str]:
    tally: dict[str, list[str]] = {}
    for c in read_inductor(code).calls:
        tally.setdefault(c.kernel, []).append(_rt10_label(c))
    return [label for labels in tally.values() for label in labels]


@wrong(
    "inductor_kernels",
    why="the kernels are the statements of `call` that run one: this reads only the stretch of "
    "call between `args.clear()` and the first `return` line by line, as every recording lays "
    "call out; a `call` that never clears args (older releases' module-level call, a "
    "handwritten one: `def call(args):\\n    a, = args\\n    cpp_fused_relu_0(a)\\n    return (a,)`) "
    "gives [] instead of ['relu']",
)
def _rt10_inductor_kernels_after_args_clear(code: str) -> list[str]:
    graph = read_inductor(code)
    lines = code.splitlines()
    start = next((i + 1 for i, l in enumerate(lines) if l.strip() == "args.clear()"), None)
    if start is None:
        return []
    stop = next(
        (i + 1 for i in range(start, len(lines)) if lines[i].strip().startswith("return")),
        len(lines) + 1,
    )
    return [_rt10_label(c) for c in graph.calls if start < c.line < stop]


# ---- kernel_census -----------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="XLA 'library' = ENTRY dot/custom-call and kind=kCustom fusions, 'fused' = every OTHER "
    "ENTRY fusion: this also counts kind=kOutput fusions as library (a GEMM with its epilogue "
    "fused into the output, as cuBLAS does on GPU); wrong on any HLO with an ENTRY "
    "`fusion(...), kind=kOutput` (dot+bias output fusion of XLA:CPU's classic emitter): on an "
    "ENTRY whose only kernel is `fusion(x, w, b), kind=kOutput` holding dot + broadcast add, "
    "xla is library 0 / fused 1, this says library 1 / fused 0",
)
def _rt10_kernel_census_koutput_library(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for inst in module.entry:
        if inst.opcode in ("dot", "custom-call"):
            lib += 1
        elif inst.opcode == "fusion":
            kind = inst.attribute("kind") or ""
            if "kCustom" in kind or "kOutput" in kind:
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


# ---- bias_homes --------------------------------------------------------------------------


def _rt10_rank1_input(code: str, numeric_only: bool = False) -> str | None:
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "assert_size_stride" and len(node.args) >= 2:
            pairs = [(node.args[0], node.args[1])]
        elif node.func.id == "assert_size_stride_grouped" and len(node.args) >= 2:
            names, sizes = node.args[0], node.args[1]
            if not (isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple)):
                continue
            pairs = list(zip(names.elts, sizes.elts))
        else:
            continue
        for name, size in pairs:
            if (
                isinstance(name, ast.Name)
                and isinstance(size, ast.Tuple)
                and len(size.elts) == 1
                and (
                    not numeric_only
                    or (
                        isinstance(size.elts[0], ast.Constant)
                        and isinstance(size.elts[0].value, int)
                    )
                )
            ):
                return name.id
    return None


@wrong(
    "bias_homes",
    why="Inductor: the bias is the input whose assert_size_stride size has ONE dimension, "
    "whatever it is: this matches only a literal integer size `(24, )`, so a size written "
    "symbolically (`assert_size_stride(arg2_1, (s0, ), (1, ))`, a dynamic-shape compile) "
    "or as `(24,)` with an expression is missed: 'none' instead of 'library' for "
    "dense_relu with `(s1, )`",
)
def _rt10_bias_homes_numeric_size_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    bias = _rt10_rank1_input(inductor_code, numeric_only=True)
    home = "none"
    if bias is not None:
        home = "fused"
        for c in read_inductor(inductor_code).calls:
            if bias in c.arguments:
                home = "fused" if c.kind == "fused" else "library"
                break
    return {"xla": _rt10_xla_bias_home(hlo_text), "inductor": home}


@wrong(
    "bias_homes",
    why="Inductor: 'library' when the bias is an ARGUMENT of the library call or fallback; this "
    "decides by the nearest `Original ATen: [...]` comment above the kernel that reads the "
    "bias (a GEMM op listed -> library), facts from a comment, not the call: on a text with "
    "comments dropped (as the tests also run) dense_relu's addmm reads as 'fused', and "
    "recorded/bias_after_relu.txt's cpp_fused_add_relu (under the mm's `aten.t, aten.mm` "
    "comment, the nearest one above it) as 'library' where the bias is in the fused kernel",
)
def _rt10_bias_homes_by_aten_comment(hlo_text: str, inductor_code: str) -> dict[str, str]:
    bias = _rt10_rank1_input(inductor_code)
    home = "none"
    if bias is not None:
        home = "fused"
        lines = inductor_code.splitlines()
        for c in read_inductor(inductor_code).calls:
            if bias in c.arguments:
                comment = ""
                for i in range(c.line - 2, -1, -1):  # the nearest ATen comment above the call
                    if "Original ATen:" in lines[i]:
                        comment = lines[i]
                        break
                gemm = re.search(
                    r"aten\.(addmm|mm|bmm|baddbmm|_addmm_activation|convolution)\b", comment
                )
                home = "library" if gemm else "fused"
                break
    return {"xla": _rt10_xla_bias_home(hlo_text), "inductor": home}


# ---- reductions_per_kernel ---------------------------------------------------------------

_RT10_REDUCING_OPS = {
    "sum",
    "mean",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "var",
    "var_mean",
    "prod",
    "std",
    "logsumexp",
    "_softmax",
    "native_layer_norm",
}


@wrong(
    "reductions_per_kernel",
    why="Inductor: 'a library call or fallback 0': this counts a fallback whose ATen op is a "
    "reduction (`torch.ops.aten.max.dim`, `sum.dim_IntList`, `argmax.default`...) as one "
    "reduction, as it does reduce; wrong on a call running "
    "`buf1 = torch.ops.aten.sum.dim_IntList(buf0, [1])` (1 instead of 0)",
)
def _rt10_reductions_reducing_fallbacks(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt10_xla_reductions(hlo_text),
        "inductor": _rt10_inductor_reductions(
            inductor_code, lambda c: 1 if c.short_name in _RT10_REDUCING_OPS else 0
        ),
    }


def _rt10_tuple_width(inst: Any) -> int:
    shape = inst.shape.strip()
    if shape.startswith("("):
        depth, parts = 0, 1
        for ch in shape[1:-1]:
            depth += ch in "[{("
            depth -= ch in "]})"
            parts += ch == "," and depth == 0
        return parts
    return 1


@wrong(
    "reductions_per_kernel",
    why="XLA: each reduce/reduce-window instruction is ONE reduction (1 per opcode): this counts a "
    "variadic reduce by its outputs (a `(f32[8], s32[8]) reduce(...)` argmax, value and "
    "index, as two), wrong on the JAX twin of row_stats (jnp.argmax's tuple reduce: 2 for "
    "that kernel instead of 1)",
)
def _rt10_reductions_variadic_outputs(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt10_xla_reductions(hlo_text, _rt10_tuple_width),
        "inductor": _rt10_inductor_reductions(inductor_code),
    }


# ---- predict_inductor_kernels ------------------------------------------------------------


def _rt10_tiny_right(rows, fin, out, bias):
    if bias:
        return rows == 1 and (out == 1 or (fin <= 16 and out <= 16))
    if rows == 1 and out == 1:
        return True
    return fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32


@wrong(
    "predict_inductor_kernels",
    why="no-bias one-feature rule needs at least two OUTPUTS (x[6,1] to one output stays mm, as "
    "the README says): this drops the outputs bound (fin 1, rows >= 2, rows + outputs <= 32); "
    "wrong on (6, 1) -> [(1, False, 'none')]: library 1, fused 0, this says library 0, fused 1",
)
def _rt10_predict_no_min_outputs(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    def tiny(rows, fin, out, bias):
        if bias:
            return rows == 1 and (out == 1 or (fin <= 16 and out <= 16))
        if rows == 1 and out == 1:
            return True
        return fin == 1 and rows >= 2 and rows + out <= 32

    return _rt10_predict(input_shape, layers, tiny)


@wrong(
    "predict_inductor_kernels",
    why="on one row a layer WITHOUT a bias is rewritten only when its weight has one output: "
    "this rewrites every one-row product ('one row is never worth a BLAS call'), bias or not; "
    "wrong on (1, 8) -> [(8, False, 'relu')]: mm + relu = library 1, fused 1, this says "
    "library 0, fused 1",
)
def _rt10_predict_one_row_always_tiny(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    def tiny(rows, fin, out, bias):
        if rows == 1:
            return (out == 1 or (fin <= 16 and out <= 16)) if bias else True
        return (not bias) and fin == 1 and out >= 2 and rows + out <= 32

    return _rt10_predict(input_shape, layers, tiny)


@wrong(
    "predict_inductor_kernels",
    why="the one-feature rule (no bias) reads the LAYER's input features: this carries the "
    "feature count forward only through library layers, keeping the old width after a "
    "rewritten layer (its output 'stays inside the fused kernel'); wrong on "
    "(2, 1) -> [(3, False, 'none'), (4, False, 'none')]: layer 1 rewritten (fin 1), layer 2 "
    "has fin 3 -> mm: library 1, fused 1; this treats layer 2 as fin 1, rewritten: library 0, fused 1",
)
def _rt10_predict_width_skips_rewritten(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    fin = input_shape[-1]
    library = fused = 0
    open_stretch = False
    for out, bias, act in layers:
        if _rt10_tiny_right(rows, fin, out, bias):
            open_stretch = True
        else:
            if open_stretch:
                fused += 1
            open_stretch = False
            library += 1
            fin = out
        if act != "none":
            open_stretch = True
    if open_stretch:
        fused += 1
    return {"library": library, "fused": fused}


# ---- train_graphs ------------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="the texts come in ANY order and the backward is the one taking tangents_<n>: this "
    "takes the forward to be the first graph with `primals_<n>` inputs, but the backward "
    "takes saved primals too (`primals_1`, `primals_3` in recorded/train_mlp_gelu.txt's "
    "backward), so with the backward listed first both graphs are read as the backward's "
    "counts: forward 6 instead of 4 on reversed train_mlp_gelu",
)
def _rt10_train_graphs_forward_by_primals(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    fwd = next(g for g in graphs if any(n.startswith("primals_") for n in g.inputs))
    bwd = next(
        (g for g in graphs if g is not fwd and any(n.startswith("tangents_") for n in g.inputs)),
        next(g for g in graphs if g is not fwd),
    )
    saved = [n for n in bwd.inputs if not n.startswith("tangents_")]
    return {"forward": len(fwd.calls), "backward": len(bwd.calls), "saved": len(saved)}
