"""Red-team wrong answers for phase 16, written from the contract only.

Round 3: answers that read the generated code a little differently from the contract (other
kernel-name spellings, other library calls, comments, nested statements), that key XLA's side on
fusion kinds or opcode prefixes, that get the tiny-product rules almost right, and inference
calls that return the right values but leave something changed or run another compiled object.
Every function is named `_rt3_...`; helpers too.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

# ---- shared helpers (correct on their own; each answer changes one thing) ------------------

_RT3_CALLS = re.compile(r"calls=(%?[\w.\-]+)")


def _rt3_short(call: Any) -> str:
    return call.short_name


def _rt3_entry(hlo_text: str) -> tuple[Any, Any]:
    module = parse_hlo(hlo_text)
    return module, module.entry


def _rt3_is_kernel(instruction: Any) -> bool:
    return instruction.opcode in ("fusion", "dot", "custom-call", "reduce", "reduce-window")


def _rt3_called(instruction: Any) -> list[str]:
    """The computations `calls=` names (not `to_apply=`)."""
    value = instruction.attribute("calls")
    if not value:
        return []
    return [n.strip().removeprefix("%") for n in value.strip("{}").split(",") if n.strip()]


def _rt3_reach(module: Any, names: list[str]) -> list[Any]:
    """Every computation reachable through `calls=` from `names`."""
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
            todo.extend(_rt3_called(instruction))
    return list(seen.values())


def _rt3_holds(module: Any, instruction: Any, opcodes: tuple[str, ...]) -> int:
    own = 1 if instruction.opcode in opcodes else 0
    return own + sum(
        1
        for computation in _rt3_reach(module, _rt3_called(instruction))
        for inner in computation
        if inner.opcode in opcodes
    )


def _rt3_census_xla(hlo_text: str) -> dict[str, int]:
    _, entry = _rt3_entry(hlo_text)
    library = fused = 0
    for instruction in entry:
        if instruction.opcode in ("dot", "custom-call"):
            library += 1
        elif instruction.opcode == "fusion":
            if instruction.attribute("kind") == "kCustom":
                library += 1
            else:
                fused += 1
    return {"library": library, "fused": fused}


def _rt3_census_inductor(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    fused = sum(1 for c in calls if c.kind == "fused")
    return {"library": len(calls) - fused, "fused": fused}


def _rt3_rank(shape: str) -> int | None:
    found = re.fullmatch(r"\s*\w+\[([^\]]*)\].*", shape)
    if found is None:
        return None
    inside = found.group(1).strip()
    return 0 if not inside else len(inside.split(","))


def _rt3_xla_bias_home(hlo_text: str) -> str:
    module, entry = _rt3_entry(hlo_text)
    biases = [i.name for i in entry if i.opcode == "parameter" and _rt3_rank(i.shape) == 1]
    if not biases:
        return "none"
    bias = biases[0]
    for instruction in entry:
        if not _rt3_is_kernel(instruction):
            continue
        if bias not in [o.removeprefix("%") for o in instruction.operands]:
            continue
        if instruction.opcode in ("dot", "custom-call"):
            return "library"
        if _rt3_holds(module, instruction, ("dot",)):
            return "library"
        return "fused"
    return "fused"


def _rt3_inductor_one_d_inputs(code: str) -> list[str]:
    """Inputs of `call` whose asserted size has one dimension (both assert spellings)."""
    tree = ast.parse(code)
    found: list[str] = []
    for node in ast.walk(tree):
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


def _rt3_inductor_bias_home(code: str, bias: str | None) -> str:
    if bias is None:
        return "none"
    for call in read_inductor(code).calls:
        if bias in call.arguments:
            return "fused" if call.kind == "fused" else "library"
    return "fused"


def _rt3_graphs(codes: list[str]) -> tuple[Any, Any]:
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if g.is_backward)
    forward = next(g for g in graphs if not g.is_backward)
    return forward, backward


# ---- task 1: inductor_kernels ---------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="a fused kernel is named without its `_<n>` number, however many digits it has; this "
    "cuts two characters (every recorded kernel is numbered 0-3); wrong on a module whose "
    "kernels reach `cpp_fused_relu_10` (answers 'relu_' for it)",
)
def _rt3_inductor_kernels_one_digit(code: str) -> list[str]:
    out: list[str] = []
    for call in read_inductor(code).calls:
        if call.kind == "fused":
            out.append(call.kernel[len("cpp_fused_") : -2])
        else:
            out.append(call.short_name)
    return out


@wrong(
    "inductor_kernels",
    why="every `extern_kernels.<name>(...)` is a kernel, not only the GEMMs; this keeps only "
    "names ending in 'mm' (addmm, mm, bmm, baddbmm); wrong on a conv2d module, whose "
    "`extern_kernels.convolution(...)` it drops",
)
def _rt3_inductor_kernels_gemm_only(code: str) -> list[str]:
    out: list[str] = []
    for call in read_inductor(code).calls:
        if call.kind == "extern" and not call.short_name.endswith("mm"):
            continue
        out.append(call.short_name)
    return out


_RT3_KERNEL_LINE = re.compile(
    r"(cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.aten\.\w+\.\w+)\s*\("
)


@wrong(
    "inductor_kernels",
    why="a kernel is a *statement* of `call`; this scans the lines of `call`'s body with a "
    "regex, comments included; wrong on a module with a commented-out or documented call in "
    "`call` (`# cpp_fused_relu_0(buf1) writes in place`), which it counts",
)
def _rt3_inductor_kernels_lines(code: str) -> list[str]:
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\s*def call\(", line))
    indent = len(lines[start]) - len(lines[start].lstrip())
    out: list[str] = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        found = _RT3_KERNEL_LINE.search(line)
        if not found:
            continue
        name = found.group(1)
        if name.startswith("cpp_fused_"):
            out.append(re.sub(r"_\d+$", "", name.removeprefix("cpp_fused_")))
        elif name.startswith("extern_kernels."):
            out.append(name.removeprefix("extern_kernels."))
        else:
            out.append(name.split(".")[3])
    return out


@wrong(
    "inductor_kernels",
    why="the kernels are every statement of `call` that runs one, also those nested in a block; "
    "this (as read_inductor does) looks only at `call`'s direct statements; wrong on a module "
    "generated with torch._inductor.config.profiler_mark_wrapper_call, whose whole body sits "
    "in `with record_function(...):` (answers [])",
)
def _rt3_inductor_kernels_flat_body(code: str) -> list[str]:
    # (fixer: read_inductor now reads nested statements too, so this answer walks `call`'s
    # direct statements itself, as read_inductor used to)
    tree = ast.parse(code)
    call = next(
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "call"
    )
    out: list[str] = []
    for statement in call.body:
        if isinstance(statement, ast.Expr | ast.Assign) and isinstance(statement.value, ast.Call):
            name = ast.unparse(statement.value.func)
            if name.startswith("cpp_fused_"):
                out.append(re.sub(r"_\d+$", "", name.removeprefix("cpp_fused_")))
            elif name.startswith("extern_kernels."):
                out.append(name.removeprefix("extern_kernels."))
            elif name.startswith("torch.ops.aten."):
                out.append(name.split(".")[3])
    return out


# ---- task 2: kernel_census ------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="XLA library = ENTRY dot/custom-call and kCustom fusions; every other fusion is fused; "
    "this calls any fusion holding a dot a library kernel; wrong on the JAX twin of "
    "relu(x @ w.T + b) on x[1,8], w[8,8], whose dot sits in a kOutput fusion with the bias "
    "(answers library 1, fused 2 for XLA; right: library 0, fused 3)",
)
def _rt3_census_dot_means_library(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    module, entry = _rt3_entry(hlo_text)
    library = fused = 0
    for instruction in entry:
        if instruction.opcode in ("dot", "custom-call"):
            library += 1
        elif instruction.opcode == "fusion":
            if _rt3_holds(module, instruction, ("dot",)):
                library += 1
            else:
                fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt3_census_inductor(inductor_code),
    }


@wrong(
    "kernel_census",
    why="'Other ENTRY instructions are not counted': this counts a bare ENTRY reduce or "
    "reduce-window (a kernel in the module docstring's sense) as fused; wrong on HLO whose "
    "ENTRY holds an unfused `reduce` (as XLA prints a lone reduction that fuses with nothing "
    "when it does not wrap it)",
)
def _rt3_census_bare_reduce_fused(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    _, entry = _rt3_entry(hlo_text)
    xla = _rt3_census_xla(hlo_text)
    xla["fused"] += sum(1 for i in entry if i.opcode in ("reduce", "reduce-window"))
    return {"xla": xla, "inductor": _rt3_census_inductor(inductor_code)}


@wrong(
    "kernel_census",
    why="every ENTRY custom-call is a library kernel; this counts only GEMM custom-calls "
    "(target naming matmul/gemm/dot), reading 'a matrix product handed to a library' as the "
    "definition; wrong on the JAX twin of torch.linalg.cholesky(x @ x.T + 64 I) on x[8,8], "
    "whose `lapack_spotrf_ffi` custom-call it drops (library 1 instead of 2)",
)
def _rt3_census_gemm_custom_calls(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    _, entry = _rt3_entry(hlo_text)
    xla = _rt3_census_xla(hlo_text)
    for instruction in entry:
        if instruction.opcode == "custom-call":
            target = instruction.attribute("custom_call_target") or ""
            if not re.search(r"matmul|gemm|dot|mm", target, re.I):
                xla["library"] -= 1
    return {"xla": xla, "inductor": _rt3_census_inductor(inductor_code)}


@wrong(
    "kernel_census",
    why="Inductor 'fused' counts the fused kernel *calls*; this counts the `cpp_fused_` "
    "kernels the module defines; wrong on a module that calls one kernel twice "
    "(recorded/mlp_d.txt's `cpp_fused__unsafe_view_gelu_0`) or defines one it never calls",
)
def _rt3_census_defined(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    graph = read_inductor(inductor_code)
    library = sum(1 for c in graph.calls if c.kind != "fused")
    return {
        "xla": _rt3_census_xla(hlo_text),
        "inductor": {"library": library, "fused": len(graph.kernels)},
    }


# ---- task 3: bias_homes ---------------------------------------------------------------------


@wrong(
    "bias_homes",
    why="XLA 'library' = the bias is an operand of the ENTRY kernel holding the dot, whatever "
    "its kind; this answers library only for a kCustom fusion or a dot/custom-call; wrong on "
    "the JAX twin of relu(x @ w.T + b) on x[1,8], w[8,8], where XLA:CPU puts dot and bias "
    "add in one kOutput fusion (answers 'fused')",
)
def _rt3_bias_kcustom_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    _, entry = _rt3_entry(hlo_text)
    biases = [i.name for i in entry if i.opcode == "parameter" and _rt3_rank(i.shape) == 1]
    xla = "none"
    if biases:
        xla = "fused"
        for instruction in entry:
            if biases[0] in [o.removeprefix("%") for o in instruction.operands]:
                if instruction.opcode in ("dot", "custom-call") or (
                    instruction.opcode == "fusion" and instruction.attribute("kind") == "kCustom"
                ):
                    xla = "library"
                break
    ones = _rt3_inductor_one_d_inputs(inductor_code)
    return {
        "xla": xla,
        "inductor": _rt3_inductor_bias_home(inductor_code, ones[0] if ones else None),
    }


@wrong(
    "bias_homes",
    why="Inductor 'library' = the bias is an argument of a library call or fallback; this also "
    "answers library when the fused kernel taking the bias has the product in its name "
    "(`addmm`/`mm`); wrong on relu(linear(x, w, b)) with x[1,8], w[8,8]: Inductor rewrites the "
    "tiny product into `cpp_fused_addmm_relu_t_0(..., b)` (answers 'library', right 'fused')",
)
def _rt3_bias_product_named_kernel(hlo_text: str, inductor_code: str) -> dict[str, str]:
    ones = _rt3_inductor_one_d_inputs(inductor_code)
    inductor = "none"
    if ones:
        inductor = "fused"
        for call in read_inductor(inductor_code).calls:
            if ones[0] in call.arguments:
                if call.kind != "fused" or re.search(r"(^|_)(addmm|mm)(_|$)", call.short_name):
                    inductor = "library"
                else:
                    inductor = "fused"
                break
    return {"xla": _rt3_xla_bias_home(hlo_text), "inductor": inductor}


@wrong(
    "bias_homes",
    why="the bias is the input whose asserted size has one dimension; this takes the last "
    "input of `call` as the bias whenever some input is 1-D (every recorded layer lists it "
    "last); wrong on relu(x @ w.T) + b in a module whose `call` unpacks `b, x, w = args` "
    "(renamed or hand-written, as HANDWRITTEN_HLO's dense_library_call orders its parameters): "
    "it follows w into `mm` and answers 'library' for Inductor, right 'fused'",
)
def _rt3_bias_last_input(hlo_text: str, inductor_code: str) -> dict[str, str]:
    graph = read_inductor(inductor_code)
    bias = graph.inputs[-1] if _rt3_inductor_one_d_inputs(inductor_code) else None
    return {
        "xla": _rt3_xla_bias_home(hlo_text),
        "inductor": _rt3_inductor_bias_home(inductor_code, bias),
    }


@wrong(
    "bias_homes",
    why="the bias is the only rank-1 ENTRY parameter, whatever its element type; this finds it "
    "with the pattern `f32[<n>]`; wrong on the same dense layer in bfloat16 or float64 "
    "(`bf16[24]`, `f64[24]`): answers 'none' for XLA",
)
def _rt3_bias_f32_pattern(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module, entry = _rt3_entry(hlo_text)
    biases = [
        i.name
        for i in entry
        if i.opcode == "parameter" and re.fullmatch(r"f32\[\d+\](\{0\})?", i.shape.strip())
    ]
    xla = "none"
    if biases:
        xla = "fused"
        for instruction in entry:
            if _rt3_is_kernel(instruction) and biases[0] in [
                o.removeprefix("%") for o in instruction.operands
            ]:
                if instruction.opcode in ("dot", "custom-call") or _rt3_holds(
                    module, instruction, ("dot",)
                ):
                    xla = "library"
                break
    ones = _rt3_inductor_one_d_inputs(inductor_code)
    return {
        "xla": xla,
        "inductor": _rt3_inductor_bias_home(inductor_code, ones[0] if ones else None),
    }


# ---- task 4: reductions_per_kernel ----------------------------------------------------------


def _rt3_inductor_reductions(code: str, pattern: re.Pattern[str] | None = None) -> list[int]:
    graph = read_inductor(code)
    out: list[int] = []
    for call in graph.calls:
        if call.kind != "fused":
            out.append(0)
            continue
        source = graph.kernels.get(call.kernel, "")
        out.append(len(pattern.findall(source)) if pattern else reduction_count(source))
    return out


def _rt3_xla_reductions(hlo_text: str, opcodes=("reduce", "reduce-window"), cap=None) -> list[int]:
    module, entry = _rt3_entry(hlo_text)
    out: list[int] = []
    for instruction in entry:
        if not _rt3_is_kernel(instruction):
            continue
        if opcodes == "prefix":
            own = 1 if instruction.opcode.startswith("reduce") else 0
            count = own + sum(
                1
                for computation in _rt3_reach(module, _rt3_called(instruction))
                for inner in computation
                if inner.opcode.startswith("reduce")
            )
        else:
            count = _rt3_holds(module, instruction, opcodes)
        out.append(min(count, cap) if cap is not None else count)
    return out


@wrong(
    "reductions_per_kernel",
    why="XLA: a kernel's count is its reduce and reduce-window instructions, however many; "
    "this reads '(1 or 0 ...)' as the whole answer and caps each kernel at 1; wrong on a "
    "fusion holding two reductions (a multi-output fusion computing a row's sum and sum of "
    "squares, XLA's classic sibling fusion)",
)
def _rt3_reductions_capped(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt3_xla_reductions(hlo_text, cap=1),
        "inductor": _rt3_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="XLA: only `reduce` and `reduce-window` count; this counts every opcode starting with "
    "'reduce', so `reduce-precision` (and `reduce-scatter`) too; wrong on the JAX twin of "
    "lax.reduce_precision(x, 5, 10).sum(-1) on x[32,64], whose wrapped reduce-precision "
    "fusion it gives 1 instead of 0",
)
def _rt3_reductions_opcode_prefix(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt3_xla_reductions(hlo_text, opcodes="prefix"),
        "inductor": _rt3_inductor_reductions(inductor_code),
    }


_RT3_SCALAR_ACC = re.compile(
    r"^\s*(?:float|double|bool|int|int32_t|int64_t|long)\s+tmp_acc\d+\s*=", re.M
)


@wrong(
    "reductions_per_kernel",
    why="Inductor: one reduction per accumulator `<type> tmp_acc<N> = <init>;`, whatever the "
    "type; this matches the scalar C++ types only (float, double, bool, int...); wrong on "
    "argmax (`IndexValue<float> tmp_acc0 = ...`) and Welford variance "
    "(`Welford<float> tmp_acc0 = Welford<float>();`) kernels, which it gives 0",
)
def _rt3_reductions_scalar_types(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt3_xla_reductions(hlo_text),
        "inductor": _rt3_inductor_reductions(inductor_code, _RT3_SCALAR_ACC),
    }


@wrong(
    "reductions_per_kernel",
    why="XLA: one entry per ENTRY kernel, bare dot/custom-call/reduce included (0 for a dot); "
    "this lists the fusions only; wrong on the JAX twin of cholesky(x @ x.T + 64 I), whose "
    "ENTRY `lapack_spotrf_ffi` custom-call gets no entry (3 entries instead of 4)",
)
def _rt3_reductions_fusions_only(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module, entry = _rt3_entry(hlo_text)
    xla = [
        _rt3_holds(module, i, ("reduce", "reduce-window")) for i in entry if i.opcode == "fusion"
    ]
    return {"xla": xla, "inductor": _rt3_inductor_reductions(inductor_code)}


# ---- task 5: train_graphs -------------------------------------------------------------------


def _rt3_count(graph: Any) -> int:
    return len(graph.calls)


@wrong(
    "train_graphs",
    why="saved = the backward's inputs other than *all* `tangents_<n>`; this subtracts one "
    "(a single loss gradient); wrong on a compiled function returning (loss, h) with h "
    "differentiable, whose backward takes tangents_1 and tangents_2 (one too many saved)",
)
def _rt3_train_minus_one(codes: list[str]) -> dict[str, int]:
    forward, backward = _rt3_graphs(codes)
    return {
        "forward": _rt3_count(forward),
        "backward": _rt3_count(backward),
        "saved": len(backward.inputs) - 1,
    }


@wrong(
    "train_graphs",
    why="saved = the backward's non-tangent inputs; this counts the forward's outputs after "
    "the first (loss, then what it keeps); wrong on a compiled function returning "
    "(loss, x.argmax()): the forward returns two user outputs, the backward takes one "
    "tangent (one too many saved)",
)
def _rt3_train_forward_outputs(codes: list[str]) -> dict[str, int]:
    forward, backward = _rt3_graphs(codes)
    return {
        "forward": _rt3_count(forward),
        "backward": _rt3_count(backward),
        "saved": len(forward.outputs) - 1,
    }


@wrong(
    "train_graphs",
    why="a kernel called twice counts twice; this counts each fused kernel once per graph "
    "(distinct `cpp_fused_` names, plus every library call); wrong on the MSE training step "
    "of x[8,24] -> linear(32)+gelu -> linear(32)+gelu -> linear(16), whose forward calls "
    "`cpp_fused_gelu_0` twice (torch 2.15: forward 6 kernels, this answers 5)",
)
def _rt3_train_distinct_fused(codes: list[str]) -> dict[str, int]:
    forward, backward = _rt3_graphs(codes)

    def count(graph: Any) -> int:
        fused = {c.kernel for c in graph.calls if c.kind == "fused"}
        return len(fused) + sum(1 for c in graph.calls if c.kind != "fused")

    saved = [n for n in backward.inputs if not n.startswith("tangents_")]
    return {"forward": count(forward), "backward": count(backward), "saved": len(saved)}


# ---- task 6: predict_inductor_kernels -------------------------------------------------------


def _rt3_predict(
    input_shape: tuple[int, ...],
    layers: list[tuple[int, bool, str]],
    *,
    rows_of=lambda shape: math.prod(shape[:-1]),
    width_fixed: bool = False,
    le16=lambda v: v <= 16,
    le32=lambda v: v <= 32,
    same_rule: bool = False,
    merge: bool = True,
) -> dict[str, int]:
    rows = rows_of(input_shape)
    width = input_shape[-1]
    library = fused = 0
    open_stretch = False
    for out, bias, activation in layers:
        one_feature = (input_shape[-1] if width_fixed else width) == 1
        bias_rule = rows == 1 and (out == 1 or (le16(out) and le16(width)))
        mm_rule = (rows == 1 and out == 1) or (one_feature and le32(rows + out))
        if same_rule:
            tiny = bias_rule or mm_rule
        else:
            tiny = bias_rule if bias else mm_rule
        if tiny:
            if not open_stretch or not merge:
                fused += 1
            open_stretch = True
        else:
            library += 1
            open_stretch = False
            if activation != "none":
                fused += 1
                open_stretch = True
        width = out
    return {"library": library, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="a linear layer's rows are every leading dimension multiplied; this takes the first "
    "one; wrong on x[1,5,12] with [(8, True, 'relu')]: 5 rows make it addmm + relu "
    "(library 1, fused 1), this sees one row and rewrites it (library 0, fused 1)",
)
def _rt3_predict_first_dim_rows(input_shape, layers):
    return _rt3_predict(input_shape, layers, rows_of=lambda shape: shape[0])


@wrong(
    "predict_inductor_kernels",
    why="'the input has one feature' means the layer's input, the previous layer's output; "
    "this reads it as the MLP's input x (its last dimension) for every layer; wrong on x[8,24] with [(1, False, 'none'), "
    "(4, False, 'none')]: the second layer has one feature and 8 + 4 <= 32, so it is "
    "rewritten (library 1, fused 1); this answers library 2, fused 0",
)
def _rt3_predict_width_fixed(input_shape, layers):
    return _rt3_predict(input_shape, layers, width_fixed=True)


@wrong(
    "predict_inductor_kernels",
    why="the limits are inclusive (weight at most 16 x 16, rows plus outputs at most 32); "
    "this uses strict < 16 and < 32; wrong on x[1,16] with [(16, True, 'none')]: rewritten "
    "(library 0, fused 1), this answers library 1, fused 0",
)
def _rt3_predict_strict_limits(input_shape, layers):
    return _rt3_predict(input_shape, layers, le16=lambda v: v < 16, le32=lambda v: v < 32)


@wrong(
    "predict_inductor_kernels",
    why="a layer with a bias and one without follow different rules (addmm: one row and "
    "a weight of one output or at most 16 x 16; mm: one row and one output, or one feature "
    "and rows + outputs <= 32); this rewrites a layer when either holds; wrong on x[1,8] "
    "with [(8, False, 'relu')]: mm + relu (library 1, fused 1), this answers library 0, "
    "fused 1",
)
def _rt3_predict_either_rule(input_shape, layers):
    return _rt3_predict(input_shape, layers, same_rule=True)


@wrong(
    "predict_inductor_kernels",
    why="whatever runs between two library calls shares one fused kernel, rewritten products "
    "included; this gives each rewritten layer its own kernel; wrong on the README's x[1,8] "
    "with [(8, True, 'relu'), (8, True, 'gelu')]: one kernel (library 0, fused 1), this "
    "answers fused 2",
)
def _rt3_predict_no_merge(input_shape, layers):
    return _rt3_predict(input_shape, layers, merge=False)


# ---- task 7: inference_call -----------------------------------------------------------------


@wrong(
    "inference_call",
    why="'the caller's module is left as it was'; this switches it to eval mode (harmless for "
    "an MLP's values, so it looks safe) and never switches back: `compiled.training` is False "
    "afterwards, and a later training call compiles for eval; wrong on any MLP in train mode",
)
def _rt3_inference_eval_mode(compiled: Any, x: Any) -> Any:
    import torch

    compiled.eval()
    with torch.no_grad():
        return compiled(x)


@wrong(
    "inference_call",
    why="the call leaves the caller as it was; this turns autograd off with "
    "`torch.set_grad_enabled(False)` and back on with `set_grad_enabled(True)` afterwards, "
    "whatever it was before: called from inside `torch.no_grad()` or `torch.inference_mode()` "
    "(a caller already in inference) it leaves gradients switched on for the caller's next "
    "lines; wrong on any call made with grad mode off",
)
def _rt3_inference_grad_toggle(compiled: Any, x: Any) -> Any:
    import torch

    torch.set_grad_enabled(False)
    out = compiled(x)
    torch.set_grad_enabled(True)
    return out


@wrong(
    "inference_call",
    why="the inference graph must be run by the compiled module itself; this compiles the "
    "wrapped module afresh (`torch.compile(next(compiled.children()))`) and runs that new object "
    "under no_grad: right values, an inference graph, but not the caller's compiled module "
    "(its cache stays empty; its own options, backend or mode are ignored)",
)
def _rt3_inference_fresh_compile(compiled: Any, x: Any) -> Any:
    import torch

    inner = next(compiled.children())  # the module torch.compile wrapped (public spelling)
    with torch.no_grad():
        return torch.compile(inner)(x)


@wrong(
    "inference_call",
    why="the graph must keep nothing for a backward pass whatever x is; this switches the "
    "parameters' requires_grad off for the call (and back on after), leaving grad mode on: "
    "right while x does not require grad, but on an x with requires_grad=True (a float32 "
    "tensor, as the contract allows) AOTAutograd still traces a training graph with "
    "`primals_<n>` inputs and saved tensors",
)
def _rt3_inference_params_off(compiled: Any, x: Any) -> Any:
    params = [p for p in compiled.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        return compiled(x)
    finally:
        for p in params:
            p.requires_grad_(True)
