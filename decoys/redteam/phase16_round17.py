"""Red team, phase 16, round 17: wrong answers that read only part of what the contract names
(blocks one level into `call`, a defined kernel's name found as a substring of a statement,
ENTRY taken as the text from `ENTRY` to the end, computations walked two levels down for a dot
or a reduce, the first rank-1 `parameter(` line of the whole module), that rely on Inductor's
usual input names (`sN = primals_N`), count a fused kernel called twice once, leave out a lone
rewritten product that feeds a GEMM, and restore module modes in a way that undoes itself
(reversed order, direct children only)."""

from __future__ import annotations

import ast
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import fused_ops, read_inductor, reduction_count
from xla_inspect.parse import parse_hlo


def _rt17_label(callee: str) -> str:
    if callee.startswith("cpp_fused_"):
        return fused_ops(callee)
    if callee.startswith("extern_kernels."):
        return callee.split(".", 1)[1]
    return callee.split(".")[3]


def _rt17_call_def(code: str) -> ast.FunctionDef:
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise ValueError("no call")


def _rt17_dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _rt17_dotted(node.value)
        return f"{owner}.{node.attr}" if owner else None
    return None


def _rt17_kernel_of(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Expr | ast.Assign) and isinstance(statement.value, ast.Call):
        callee = _rt17_dotted(statement.value.func)
        if callee and callee.startswith(("cpp_fused_", "extern_kernels.", "torch.ops.aten.")):
            return callee
    return None


@wrong(
    "inductor_kernels",
    why=(
        "Clause 'Every kernel statement of call counts, wherever it stands ... or in a block': "
        "this looks into the blocks written directly in call's body (the profiler's `with "
        "record_function(...)`, an `if`, a `try`) but not into a block nested in one of them, "
        "so in recorded/mlp_gelu_marked.txt with `cpp_fused_gelu_0(buf1)` moved into an `if` "
        "inside the `with` it answers ['addmm', 'addmm'] instead of ['addmm', 'gelu', 'addmm']."
    ),
)
def _rt17_inductor_kernels_one_block_level(code: str) -> list[str]:
    found: list[str] = []
    for statement in _rt17_call_def(code).body:
        inner: list[ast.stmt] = [statement]
        for field in ("body", "orelse", "finalbody"):
            inner += getattr(statement, field, None) or []
        for handler in getattr(statement, "handlers", []):
            inner += handler.body
        for s in inner:
            callee = _rt17_kernel_of(s)
            if callee:
                found.append(_rt17_label(callee))
    return found


@wrong(
    "inductor_kernels",
    why=(
        "Clause 'one entry per call': this lists, for each statement of call, every fused kernel "
        "the module DEFINES whose name occurs in the statement's text (plus library calls and "
        "fallbacks), so with kernels cpp_fused_sum_10 and cpp_fused_sum_1 both defined, the "
        "statement `cpp_fused_sum_10(...)` also contains `cpp_fused_sum_1` and gives two entries: "
        "on recorded/train_mlp_gelu.txt's backward with cpp_fused_gelu_gelu_backward_sum_1 "
        "renamed cpp_fused_sum_10 and cpp_fused_sum_2 renamed cpp_fused_sum_1 it has 'sum' once "
        "too many."
    ),
)
def _rt17_inductor_kernels_defined_name_in_text(code: str) -> list[str]:
    defined = re.findall(r"^(cpp_fused_\w+)\s*=\s*async_compile", code, re.M)
    graph = read_inductor(code)
    lines = code.splitlines()
    found: list[str] = []
    for call in graph.calls:
        if call.kind != "fused":
            found.append(_rt17_label(call.kernel))
            continue
        text = lines[call.line - 1]
        for name in defined:
            if name in text:
                found.append(fused_ops(name))
    return found


def _rt17_inductor_counts(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    return {
        "library": sum(c.kind != "fused" for c in calls),
        "fused": sum(c.kind == "fused" for c in calls),
    }


@wrong(
    "kernel_census",
    why=(
        "Clause 'counts the ENTRY ... instructions': this takes the ENTRY computation as the "
        "text from `ENTRY` to the end of the module (XLA prints ENTRY last), so a computation "
        "nothing calls printed after ENTRY adds its fusions: the JAX twin of mlp_gelu with an "
        "uncalled computation holding one kLoop fusion appended gives xla fused 3 instead of 2."
    ),
)
def _rt17_kernel_census_entry_to_end(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    tail = hlo_text[hlo_text.index("ENTRY") :]
    library = fused = 0
    for line in tail.splitlines():
        m = re.search(r"\s(fusion|dot|custom-call)\(", line)
        if not m or " = " not in line:
            continue
        if m.group(1) == "fusion" and "kind=kCustom" not in line:
            fused += 1
        else:
            library += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt17_inductor_counts(inductor_code),
    }


def _rt17_reach(module: Any, name: str, seen: set[str]) -> list[Any]:
    if name in seen or name not in module:
        return []
    seen.add(name)
    comp = module[name]
    out = [comp]
    for instruction in comp:
        for callee in _rt17_calls(instruction):
            out += _rt17_reach(module, callee, seen)
    return out


def _rt17_calls(instruction: Any) -> list[str]:
    text = instruction.attribute("calls")
    return re.findall(r"%?([\w.\-]+)", text.strip("{}")) if text else []


def _rt17_inductor_bias(code: str) -> str | None:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "assert_size_stride" and isinstance(node.args[1], ast.Tuple):
                if len(node.args[1].elts) == 1 and isinstance(node.args[0], ast.Name):
                    return node.args[0].id
            elif node.func.id == "assert_size_stride_grouped":
                names, sizes = node.args[0], node.args[1]
                if isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple):
                    for n, s in zip(names.elts, sizes.elts, strict=False):
                        if (
                            isinstance(s, ast.Tuple)
                            and len(s.elts) == 1
                            and isinstance(n, ast.Name)
                        ):
                            return n.id
    return None


def _rt17_inductor_home(code: str) -> str:
    bias = _rt17_inductor_bias(code)
    if bias is None:
        return "none"
    for call in read_inductor(code).calls:
        if call.kind != "fused" and bias in call.arguments:
            return "library"
    return "fused"


@wrong(
    "bias_homes",
    why=(
        "Clause XLA 'library': the bias is an operand of the ENTRY kernel whose computation, or "
        "a computation it calls, holds the dot: this looks two levels down only (the kernel's "
        "computation and the computations its fusions call: 'a fusion nests at most one more'), "
        "so a dot three computations down is missed: the JAX twin of dense_relu_row (x[1,8], "
        "the dot, bias and relu in one loop fusion: 'library') with that fusion's computation "
        "wrapped in two more fusion computations gives 'fused'."
    ),
)
def _rt17_bias_homes_two_levels_deep(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry
        if i.opcode == "parameter" and not i.shape_info.is_tuple and len(i.shape_info.dims) == 1
    ]
    xla = "none"
    if params:
        bias = params[0].name
        xla = "fused"
        for i in module.entry:
            if bias not in i.operands:
                continue
            if i.opcode in ("dot", "custom-call"):
                xla = "library"
                break
            level = [c for c in _rt17_calls(i) if c in module]
            for _depth in range(2):
                below: list[str] = []
                for name in level:
                    for j in module[name]:
                        if j.opcode == "dot":
                            xla = "library"
                        below += [c for c in _rt17_calls(j) if c in module]
                level = below
    return {"xla": xla, "inductor": _rt17_inductor_home(inductor_code)}


@wrong(
    "bias_homes",
    why=(
        "Clause XLA: the bias is 'the only ENTRY parameter of rank 1': this takes the first "
        "`parameter(` line of rank 1 anywhere in the module text; fused computations are printed "
        "before ENTRY and their parameters (`%param_1.2 = f32[8]{0} parameter(1)`) are rank 1 "
        "too, so it picks a fused computation's parameter, which no ENTRY kernel reads, and "
        "answers 'fused': wrong on the JAX twin of dense_relu_row, where the ENTRY bias goes "
        "into the loop fusion that holds the dot ('library')."
    ),
)
def _rt17_bias_homes_first_rank1_line(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    found = re.search(r"%?([\w.\-]+) = \w+\[\d+\]\{0\} parameter\(", hlo_text)
    xla = "none"
    if found:
        bias = found.group(1)
        xla = "fused"
        for i in module.entry:
            if bias in i.operands:
                comps: list[Any] = []
                for callee in _rt17_calls(i):
                    comps += _rt17_reach(module, callee, set())
                if i.opcode in ("dot", "custom-call") or any(
                    j.opcode == "dot" for c in comps for j in c
                ):
                    xla = "library"
    return {"xla": xla, "inductor": _rt17_inductor_home(inductor_code)}


_rt17_kernel_ops = {"dot", "custom-call", "reduce", "reduce-window"}


def _rt17_xla_reductions(hlo_text: str) -> list[int]:
    module = parse_hlo(hlo_text)
    counts: list[int] = []
    for i in module.entry:
        if i.opcode != "fusion" and i.opcode not in _rt17_kernel_ops:
            continue
        n = 1 if i.opcode in ("reduce", "reduce-window") else 0
        seen: set[str] = set()
        for callee in _rt17_calls(i):
            for comp in _rt17_reach(module, callee, seen):
                n += sum(j.opcode in ("reduce", "reduce-window") for j in comp)
        counts.append(n)
    return counts


@wrong(
    "reductions_per_kernel",
    why=(
        "Clause Inductor 'each kernel call runs, in order' (a kernel called twice appears "
        "twice): this counts a fused kernel's accumulators once, the first time call runs it, "
        "and skips its later calls ('its reductions are already counted'), library calls and "
        "fallbacks kept as 0 each: recorded/layernorm_softmax.txt with its "
        "cpp_fused__softmax_native_layer_norm_0 call repeated gives [4] instead of [4, 4]."
    ),
)
def _rt17_reductions_fused_counted_once(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    graph = read_inductor(inductor_code)
    counted: set[str] = set()
    inductor: list[int] = []
    for call in graph.calls:
        if call.kind != "fused":
            inductor.append(0)
        elif call.kernel not in counted:
            counted.add(call.kernel)
            inductor.append(reduction_count(graph.kernels[call.kernel]))
    return {"xla": _rt17_xla_reductions(hlo_text), "inductor": inductor}


@wrong(
    "train_graphs",
    why=(
        "Clause 'saved': the saved tensors AND the size symbols 'an input such as primals_1 "
        "that call binds as s77 = primals_1', whatever the inputs are called: this counts the "
        "backward's asserted non-tangent inputs plus the lines matching `sN = primals_N`, so "
        "when the inputs are named otherwise (recorded/train_mlp_gelu_dynamic.txt with "
        "`primals_` renamed `inp_`) the three symbols are lost: saved 5 instead of 8."
    ),
)
def _rt17_train_graphs_symbols_by_primals_name(codes: list[str]) -> dict[str, int]:
    graphs = [(code, read_inductor(code)) for code in codes]
    bw_code, bw = next((c, g) for c, g in graphs if g.is_backward)
    _, fw = next((c, g) for c, g in graphs if not g.is_backward)
    asserted: set[str] = set()
    for node in ast.walk(ast.parse(bw_code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "assert_size_stride" and isinstance(node.args[0], ast.Name):
                asserted.add(node.args[0].id)
            elif node.func.id == "assert_size_stride_grouped" and isinstance(
                node.args[0], ast.Tuple
            ):
                asserted |= {n.id for n in node.args[0].elts if isinstance(n, ast.Name)}
    tensors = [n for n in bw.inputs if n in asserted and not n.startswith("tangents_")]
    symbols = re.findall(r"^\s*s\d+ = primals_\d+\s*$", bw_code, re.M)
    return {
        "forward": len(fw.calls),
        "backward": len(bw.calls),
        "saved": len(tensors) + len(symbols),
    }


def _rt17_tiny(rows: int, fin: int, out: int, bias: bool) -> bool:
    if bias:
        return rows == 1 and (out == 1 or (out <= 16 and fin <= 16))
    return (rows == 1 and out == 1) or (fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32)


@wrong(
    "predict_inductor_kernels",
    why=(
        "Clause 'for any such MLP' (README: whatever runs between two library calls shares one "
        "fused kernel, rewritten products included): this opens a fused kernel only for an "
        "activation or for the work left at the end (something must write the output), taking "
        "a rewritten product with no activation that feeds the next GEMM to be read by that "
        "GEMM; x[1,8] -> linear(8->1, bias, 'none') -> linear(1->20, no bias, 'relu') is "
        "[product][mm][relu]: fused 2, library 1; this answers fused 1."
    ),
)
def _rt17_predict_lone_product_feeds_gemm(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    rows = 1
    for d in input_shape[:-1]:
        rows *= d
    fin = input_shape[-1]
    library = fused = 0
    open_activation = False  # an activation (or trailing work) waiting for its kernel
    open_product = False
    for out, bias, activation in layers:
        if _rt17_tiny(rows, fin, out, bias):
            open_product = True
        else:
            if open_activation:
                fused += 1
            open_activation = open_product = False
            library += 1
        if activation != "none":
            open_activation = True
        fin = out
    if open_activation or open_product:
        fused += 1
    return {"library": library, "fused": fused}


@wrong(
    "inference_call",
    why=(
        "Clause 'the module stays in the mode it was in ... and so does each of its "
        "submodules': this records every module's mode, calls in eval() mode under no_grad, "
        "then restores the modes in REVERSE order (children before parents, as a stack "
        "unwinds); Module.train(flag) is recursive, so the root's restore overwrites the "
        "children: a train-mode Sequential holding a Dropout in eval mode comes back with the "
        "Dropout in train mode."
    ),
)
def _rt17_inference_call_restore_reversed(compiled: Any, x: Any) -> Any:
    import torch

    saved = [(m, m.training) for m in compiled.modules()]
    compiled.eval()
    try:
        with torch.no_grad():
            return compiled(x)
    finally:
        for module, flag in reversed(saved):
            module.train(flag)


@wrong(
    "inference_call",
    why=(
        "Clause 'so does each of its submodules': this switches the module to eval() for the "
        "inference call under no_grad and restores the mode of the module and of its direct "
        "children (children()), not of every descendant: a Sequential(Linear, Sequential("
        "Dropout, Linear)) in train mode whose inner Dropout alone is in eval mode comes back "
        "with that Dropout in train mode (the inner Sequential's train(True) is recursive)."
    ),
)
def _rt17_inference_call_children_only(compiled: Any, x: Any) -> Any:
    import torch

    root = getattr(compiled, "_orig_mod", compiled)
    saved = [(root, root.training)] + [(m, m.training) for m in root.children()]
    compiled.eval()
    try:
        with torch.no_grad():
            return compiled(x)
    finally:
        for module, flag in saved:
            module.train(flag)


@wrong(
    "reductions_per_kernel",
    why=(
        "Clause XLA 'plus those of every computation its calls= reaches': this walks two levels "
        "only, the fusion's own computation and the computations ITS fusions call ('XLA nests a "
        "fusion inside a fusion at most once'), so a reduce three computations down is lost: the "
        "JAX twin of layernorm_softmax with its first ENTRY fusion's computation wrapped in two "
        "more fusion computations (ENTRY fusion -> wrap2 -> wrap1 -> the reduce) gives 0 for "
        "that kernel instead of 1."
    ),
)
def _rt17_reductions_two_levels_deep(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    xla: list[int] = []
    for i in module.entry:
        if i.opcode != "fusion" and i.opcode not in _rt17_kernel_ops:
            continue
        n = 1 if i.opcode in ("reduce", "reduce-window") else 0
        level = [c for c in _rt17_calls(i) if c in module]
        for _depth in range(2):
            below: list[str] = []
            for name in level:
                for j in module[name]:
                    n += j.opcode in ("reduce", "reduce-window")
                    below += [c for c in _rt17_calls(j) if c in module]
            level = below
        xla.append(n)
    graph = read_inductor(inductor_code)
    inductor = [
        reduction_count(graph.kernels[c.kernel]) if c.kind == "fused" else 0 for c in graph.calls
    ]
    return {"xla": xla, "inductor": inductor}
