"""Red team, phase 16, round 18: plausible wrong answers written from the contract alone."""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_rt18_KERNEL_OPS = ("dot", "custom-call", "reduce", "reduce-window")
_rt18_CALL_RE = re.compile(r"(cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.aten\.\w+\.\w+)\(")


def _rt18_short(callee: str) -> str:
    if callee.startswith("cpp_fused_"):
        rest = callee[len("cpp_fused_") :]
        return "" if rest.isdigit() else re.sub(r"_\d+$", "", rest)
    if callee.startswith("extern_kernels."):
        return callee[len("extern_kernels.") :]
    return callee.split(".")[3]


def _rt18_call_body(code: str) -> list[str]:
    """Lines of `call`: from `def call` to the first line indented no deeper than it."""
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\s*def call\(", line))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


def _rt18_entry_kernels(module):
    return [
        i for i in module.entry.instructions if i.opcode == "fusion" or i.opcode in _rt18_KERNEL_OPS
    ]


def _rt18_called(instruction) -> list[str]:
    return re.findall(r"calls=%?([\w.\-]+)", instruction.attributes_text)


def _rt18_reach(module, name: str) -> list:
    seen, stack, found = set(), [name], []
    while stack:
        current = stack.pop()
        if current in seen or current not in module:
            continue
        seen.add(current)
        found.append(module[current])
        for ins in module[current].instructions:
            stack.extend(_rt18_called(ins))
    return found


def _rt18_inductor_census(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    return {
        "library": sum(c.kind != "fused" for c in calls),
        "fused": sum(c.kind == "fused" for c in calls),
    }


# ---- inductor_kernels ---------------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="Clause 'its name without the cpp_fused_ prefix and the _<n> number': strips trailing digits and underscores with rstrip('_0123456789'), which also eats an op's own digit; cpp_fused_expm1_0 gives 'expm' instead of 'expm1'.",
)
def _rt18_inductor_kernels_rstrip_digits(code: str) -> list[str]:
    names = []
    for call in read_inductor(code).calls:
        if call.kind == "fused":
            names.append(call.kernel[len("cpp_fused_") :].rstrip("_0123456789"))
        else:
            names.append(call.short_name)
    return names


@wrong(
    "inductor_kernels",
    why="Clause 'Every kernel statement of call counts, wherever it stands ... or in a block': walks only the top-level statements of call's body; recorded/mlp_gelu_marked.txt (call's body inside `with record_function`) gives [] instead of ['addmm', 'gelu', 'addmm'].",
)
def _rt18_inductor_kernels_top_level(code: str) -> list[str]:
    tree = ast.parse(code)
    call = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            call = node
            break
    names = []
    for statement in call.body if call else []:
        value = getattr(statement, "value", None)
        if isinstance(statement, ast.Expr | ast.Assign) and isinstance(value, ast.Call):
            callee = ast.unparse(value.func)
            if callee.startswith(("cpp_fused_", "extern_kernels.", "torch.ops.")):
                names.append(_rt18_short(callee))
    return names


@wrong(
    "inductor_kernels",
    why="Clause 'a comment that names a kernel is not a statement': scans call's lines with a regex anywhere in the line, so a comment such as `# cpp_fused_gelu_0(buf1) runs in place` above the call in mlp_gelu.txt adds a second 'gelu'.",
)
def _rt18_inductor_kernels_line_regex(code: str) -> list[str]:
    names = []
    for line in _rt18_call_body(code):
        match = _rt18_CALL_RE.search(line)
        if match:
            names.append(_rt18_short(match.group(1)))
    return names


@wrong(
    "inductor_kernels",
    why="Clause 'A kernel called twice appears twice': de-duplicates by callee (dict.fromkeys); train_mlp_gelu's backward graph calls extern_kernels.mm three times and gets one 'mm'.",
)
def _rt18_inductor_kernels_unique(code: str) -> list[str]:
    callees = dict.fromkeys(c.kernel for c in read_inductor(code).calls)
    return [_rt18_short(k) for k in callees]


# ---- kernel_census ------------------------------------------------------------------------


@wrong(
    "kernel_census",
    why="Clause 'whatever the custom call's target: a GEMM, a LAPACK factorization': counts a custom-call as library only when its target looks like a matmul; cholesky's LAPACK custom-call is dropped (xla library 1 instead of 2).",
)
def _rt18_kernel_census_gemm_targets(hlo_text: str, inductor_code: str) -> dict:
    module = parse_hlo(hlo_text)
    library = fused = 0
    for ins in module.entry.instructions:
        if ins.opcode == "dot":
            library += 1
        elif ins.opcode == "custom-call":
            target = ins.attribute("custom_call_target", "") or ""
            if re.search(r"matmul|gemm|dot|mm", target, re.I):
                library += 1
        elif ins.opcode == "fusion":
            if ins.attribute("kind") == "kCustom":
                library += 1
            else:
                fused += 1
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt18_inductor_census(inductor_code),
    }


@wrong(
    "kernel_census",
    why="Clause 'Other ENTRY instructions are not counted' / ENTRY only: counts every fusion instruction in the module text (regex ' fusion('), so fusions inside a while body (a layer in lax.fori_loop) or nested fusions are counted as kernels.",
)
def _rt18_kernel_census_all_fusions(hlo_text: str, inductor_code: str) -> dict:
    library = fused = 0
    for line in hlo_text.splitlines():
        if re.search(r"\sfusion\(", line):
            if "kind=kCustom" in line:
                library += 1
            else:
                fused += 1
    module = parse_hlo(hlo_text)
    library += sum(i.opcode in ("dot", "custom-call") for i in module.entry.instructions)
    return {
        "xla": {"library": library, "fused": fused},
        "inductor": _rt18_inductor_census(inductor_code),
    }


# ---- bias_homes ---------------------------------------------------------------------------


def _rt18_inductor_bias_name(code: str, size_re: str) -> str | None:
    graph = read_inductor(code)
    for match in re.finditer(r"assert_size_stride_grouped\(\(([^)]*)\), \((.*?)\), \(\(", code):
        names = [n.strip() for n in match.group(1).split(",") if n.strip()]
        sizes = re.findall(r"\([^()]*\)", match.group(2))
        for name, size in zip(names, sizes):
            if re.fullmatch(size_re, size) and name in graph.inputs:
                return name
    for match in re.finditer(r"assert_size_stride\((\w+), (\([^()]*\))", code):
        if re.fullmatch(size_re, match.group(2)) and match.group(1) in graph.inputs:
            return match.group(1)
    return None


def _rt18_inductor_home(code: str, bias: str | None) -> str:
    if bias is None:
        return "none"
    for call in read_inductor(code).calls:
        if call.kind != "fused" and bias in call.arguments:
            return "library"
    return "fused"


def _rt18_xla_home(hlo_text: str, strict_kcustom: bool) -> str:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry.instructions
        if i.opcode == "parameter" and re.fullmatch(r"\w+\[[^,\]]+\]", i.shape.split("{")[0])
    ]
    if not params:
        return "none"
    bias = params[0].name
    for ins in _rt18_entry_kernels(module):
        if bias not in ins.operands:
            continue
        if ins.opcode in ("dot", "custom-call"):
            return "library"
        if strict_kcustom:
            if ins.attribute("kind") == "kCustom":
                return "library"
        else:
            for comp in _rt18_reach(module, _rt18_called(ins)[0]) if _rt18_called(ins) else []:
                if any(i.opcode == "dot" for i in comp.instructions):
                    return "library"
    return "fused"


@wrong(
    "bias_homes",
    why="Clause 'XLA: ... the ENTRY kernel whose computation, or a computation it calls, holds the dot': takes 'library' to mean a kCustom fusion; dense_relu_row (the tiny dot fused into the loop fusion with the bias) gives xla 'fused' instead of 'library'.",
)
def _rt18_bias_homes_kcustom_only(hlo_text: str, inductor_code: str) -> dict:
    bias = _rt18_inductor_bias_name(inductor_code, r"\(\w+, \)")
    return {
        "xla": _rt18_xla_home(hlo_text, True),
        "inductor": _rt18_inductor_home(inductor_code, bias),
    }


@wrong(
    "bias_homes",
    why="Clause 'written as an integer (24, ) or, by a dynamic-shape compile, as a symbol (s1, )': recognises only integer sizes; dense_relu.txt with (24, ) spelled (s1, ) (a dynamic compile) gives inductor 'none' instead of 'library'.",
)
def _rt18_bias_homes_int_sizes(hlo_text: str, inductor_code: str) -> dict:
    bias = _rt18_inductor_bias_name(inductor_code, r"\(\d+, \)")
    return {
        "xla": _rt18_xla_home(hlo_text, False),
        "inductor": _rt18_inductor_home(inductor_code, bias),
    }


@wrong(
    "bias_homes",
    why="Clause 'the bias is an argument of the library call': tests `bias in line` on the library call's text, a substring test; bias_after_relu.txt with the bias renamed x1 and x renamed x12 (names that are parts of one another) gives inductor 'library' instead of 'fused'.",
)
def _rt18_bias_homes_substring(hlo_text: str, inductor_code: str) -> dict:
    bias = _rt18_inductor_bias_name(inductor_code, r"\(\w+, \)")
    home = "none"
    if bias is not None:
        home = "fused"
        for line in _rt18_call_body(inductor_code):
            if re.search(r"extern_kernels\.|torch\.ops\.", line) and bias in line:
                home = "library"
    return {"xla": _rt18_xla_home(hlo_text, False), "inductor": home}


@wrong(
    "bias_homes",
    why="Clause 'the only ENTRY parameter of rank 1': finds the bias by the regex f32\\[\\d+\\], assuming float32; the int32 layer (bias s32[24]) gives xla 'none' instead of 'fused'.",
)
def _rt18_bias_homes_f32_only(hlo_text: str, inductor_code: str) -> dict:
    module = parse_hlo(hlo_text)
    xla = "none"
    for ins in module.entry.instructions:
        if ins.opcode == "parameter" and re.match(r"f32\[\d+\]", ins.shape):
            xla = _rt18_xla_home(hlo_text, False)
            break
    bias = _rt18_inductor_bias_name(inductor_code, r"\(\w+, \)")
    return {"xla": xla, "inductor": _rt18_inductor_home(inductor_code, bias)}


# ---- reductions_per_kernel ----------------------------------------------------------------


def _rt18_xla_reductions(hlo_text: str, nested: bool, shared_visit: bool) -> list[int]:
    module = parse_hlo(hlo_text)
    counts = []
    visited: set[str] = set()
    for ins in _rt18_entry_kernels(module):
        n = 1 if ins.opcode in ("reduce", "reduce-window") else 0
        for name in _rt18_called(ins):
            comps = _rt18_reach(module, name) if nested else [module[name]]
            for comp in comps:
                if shared_visit:
                    if comp.name in visited:
                        continue
                    visited.add(comp.name)
                n += sum(i.opcode in ("reduce", "reduce-window") for i in comp.instructions)
        counts.append(n)
    return counts


def _rt18_inductor_reductions(code: str, acc_re: str | None = None) -> list[int]:
    graph = read_inductor(code)
    out = []
    for call in graph.calls:
        if call.kind != "fused":
            out.append(0)
        elif acc_re is None:
            out.append(reduction_count(graph.kernels.get(call.kernel, "")))
        else:
            out.append(len(re.findall(acc_re, graph.kernels.get(call.kernel, ""), re.M)))
    return out


@wrong(
    "reductions_per_kernel",
    why="Clause 'a statement <type> tmp_acc<N> = <init>;': counts only `float tmp_acc<N> =`; row_stats.txt's argmax accumulator `IndexValue<float> tmp_acc1` is missed (inductor [2] instead of [3]), as are uint8_t/double/int32_t ones.",
)
def _rt18_reductions_float_acc(hlo_text: str, inductor_code: str) -> dict:
    return {
        "xla": _rt18_xla_reductions(hlo_text, True, False),
        "inductor": _rt18_inductor_reductions(inductor_code, r"^\s*float\s+tmp_acc\d+\s*="),
    }


@wrong(
    "reductions_per_kernel",
    why="Clause 'plus those of every computation its calls= reaches': looks only in the computation an ENTRY fusion calls directly; layernorm_softmax's HLO with each fused computation moved one nested fusion down gives all zeros.",
)
def _rt18_reductions_no_nesting(hlo_text: str, inductor_code: str) -> dict:
    return {
        "xla": _rt18_xla_reductions(hlo_text, False, False),
        "inductor": _rt18_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="Clause 'each kernel on its own: two fusions calling one computation both count its reductions': keeps one visited set across kernels, so the second of two ENTRY fusions calling one reducing computation gets 0 (layernorm_softmax's HLO with a reduce fusion copied beside itself).",
)
def _rt18_reductions_shared_visited(hlo_text: str, inductor_code: str) -> dict:
    return {
        "xla": _rt18_xla_reductions(hlo_text, True, True),
        "inductor": _rt18_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="Clause 'one per accumulator its C++ source declares': counts the distinct tmp_acc names declared (a set); each of layernorm_softmax.txt's loop nests declares tmp_acc0 (and tmp_acc0_vec) again, so the kernel gives 2 instead of 4.",
)
def _rt18_reductions_acc_names(hlo_text: str, inductor_code: str) -> dict:
    graph = read_inductor(inductor_code)
    out = []
    for call in graph.calls:
        source = graph.kernels.get(call.kernel, "") if call.kind == "fused" else ""
        declared = re.findall(r"^\s*[\w:<>, ]+?\s+(tmp_acc\w*)\s*=", source, re.M)
        out.append(len(set(declared)))
    return {"xla": _rt18_xla_reductions(hlo_text, True, False), "inductor": out}


# ---- train_graphs -------------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="Clause 'in any order': takes codes[0] as the forward and codes[1] as the backward (the order run_and_get_code returns); train_mlp_gelu's texts reversed give forward 6, backward 4, saved counted on the forward.",
)
def _rt18_train_graphs_positional(codes: list[str]) -> dict:
    forward, backward = read_inductor(codes[0]), read_inductor(codes[1])
    return {
        "forward": len(forward.calls),
        "backward": len(backward.calls),
        "saved": sum(not n.startswith("tangents_") for n in backward.inputs),
    }


@wrong(
    "train_graphs",
    why="Clause 'each counts once, whether or not call asserts its size': counts the backward inputs named in assert_size_stride calls; train_mlp_gelu_dynamic gives saved 5 instead of 8 (s77, s7, s27 are bound, never asserted).",
)
def _rt18_train_graphs_asserted(codes: list[str]) -> dict:
    graphs = [read_inductor(c) for c in codes]
    backward_index = next(i for i, g in enumerate(graphs) if g.is_backward)
    backward, forward = graphs[backward_index], graphs[1 - backward_index]
    text = codes[backward_index]
    asserted = set()
    for match in re.finditer(r"assert_size_stride\((\w+),", text):
        asserted.add(match.group(1))
    for match in re.finditer(r"assert_size_stride_grouped\(\(([^)]*)\)", text):
        asserted.update(n.strip() for n in match.group(1).split(",") if n.strip())
    saved = [n for n in backward.inputs if n in asserted and not n.startswith("tangents_")]
    return {"forward": len(forward.calls), "backward": len(backward.calls), "saved": len(saved)}


@wrong(
    "train_graphs",
    why="Clause 'the backward's inputs other than the gradients': counts the forward's outputs minus the loss; train_mlp_outputs' forward also returns h and the argmax to the user, giving 10 instead of 8.",
)
def _rt18_train_graphs_forward_outputs(codes: list[str]) -> dict:
    graphs = [read_inductor(c) for c in codes]
    backward = next(g for g in graphs if g.is_backward)
    forward = next(g for g in graphs if not g.is_backward)
    return {
        "forward": len(forward.calls),
        "backward": len(backward.calls),
        "saved": len(forward.outputs) - 1,
    }


# ---- predict_inductor_kernels -------------------------------------------------------------


def _rt18_predict(input_shape, layers, rows_of, tiny) -> dict[str, int]:
    rows = rows_of(input_shape)
    width = input_shape[-1]
    library = fused = 0
    pending = False
    for out, bias, activation in layers:
        if tiny(rows, width, out, bias):
            pending = True
        else:
            if pending:
                fused += 1
                pending = False
            library += 1
        if activation != "none":
            pending = True
        width = out
    if pending:
        fused += 1
    return {"library": library, "fused": fused}


def _rt18_tiny_ok(rows, fin, out, bias):
    if bias:
        return rows == 1 and (out == 1 or (fin <= 16 and out <= 16))
    return (rows == 1 and out == 1) or (fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32)


@wrong(
    "predict_inductor_kernels",
    why="Clause 'one row (every leading dimension 1)' / 'a linear layer flattens them': takes the rows as input_shape[0]; mlp_l x[1,5,12] -> linear(8)+relu (5 rows) is predicted as a rewritten product: library 0, fused 1 instead of library 1, fused 1.",
)
def _rt18_predict_first_dim(input_shape: tuple, layers: list) -> dict:
    return _rt18_predict(input_shape, layers, lambda s: s[0], _rt18_tiny_ok)


@wrong(
    "predict_inductor_kernels",
    why="Clause 'at most 16 x 16' and 'rows plus outputs are at most 32': uses strict < at both limits; mlp_m x[1,16]->16 with bias and mlp_n x[12,1]->20 are predicted as GEMMs (library 1) instead of one fused kernel.",
)
def _rt18_predict_strict_limits(input_shape: tuple, layers: list) -> dict:
    def tiny(rows, fin, out, bias):
        if bias:
            return rows == 1 and (out == 1 or (fin < 16 and out < 16))
        return (rows == 1 and out == 1) or (fin == 1 and rows >= 2 and out >= 2 and rows + out < 32)

    return _rt18_predict(input_shape, layers, lambda s: math.prod(s[:-1]), tiny)


@wrong(
    "predict_inductor_kernels",
    why="Clause 'Whatever runs between two library calls ... shares one fused kernel': counts one fused kernel per activation and per rewritten product; mlp_k x[1,8] (two rewritten layers, relu, gelu) gives fused 4 instead of 1.",
)
def _rt18_predict_per_op(input_shape: tuple, layers: list) -> dict:
    rows = math.prod(input_shape[:-1])
    width = input_shape[-1]
    library = fused = 0
    for out, bias, activation in layers:
        if _rt18_tiny_ok(rows, width, out, bias):
            fused += 1
        else:
            library += 1
        if activation != "none":
            fused += 1
        width = out
    return {"library": library, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="Clause 'one without a bias when ... the input has one feature and at least two rows': applies the one-feature rule to the MLP's input only, not to a later layer whose input (the previous layer's output) has one feature; mlp_o x[8,24]->1->4 gives library 2, fused 0 instead of 1, 1.",
)
def _rt18_predict_input_features_only(input_shape: tuple, layers: list) -> dict:
    rows = math.prod(input_shape[:-1])
    features = input_shape[-1]
    library = fused = 0
    pending = False
    for out, bias, activation in layers:
        if _rt18_tiny_ok(rows, features, out, bias):
            pending = True
        else:
            if pending:
                fused += 1
                pending = False
            library += 1
        if activation != "none":
            pending = True
    if pending:
        fused += 1
    return {"library": library, "fused": fused}


# ---- inference_call -----------------------------------------------------------------------


@wrong(
    "inference_call",
    why="Clause 'grad mode is what it was before the call (which may come from inside torch.no_grad())': turns grad off, calls, then turns it back on with set_grad_enabled(True); called inside torch.no_grad() it leaves grad mode enabled.",
)
def _rt18_inference_call_reenable(compiled: Any, x: Any) -> Any:
    import torch

    torch.set_grad_enabled(False)
    out = compiled(x)
    torch.set_grad_enabled(True)
    return out


@wrong(
    "inference_call",
    why="Clause 'the module stays in the mode it was in (train or eval)': calls compiled.eval() before the no_grad call to 'make it inference'; a module in train mode comes back in eval mode.",
)
def _rt18_inference_call_eval(compiled: Any, x: Any) -> Any:
    import torch

    compiled.eval()
    with torch.no_grad():
        return compiled(x)


@wrong(
    "inference_call",
    why="Clause 'Does detaching x alone help while the parameters still require grad?': detaches x only; the parameters require grad, so Inductor compiles a training forward (primals_<n> inputs, saved tensors returned).",
)
def _rt18_inference_call_detach(compiled: Any, x: Any) -> Any:
    return compiled(x.detach())


@wrong(
    "inference_call",
    why="Clause 'the module's parameters still require grad afterwards': switches requires_grad off on every parameter and restores only those of the top-level module's direct parameters (recurse=False), so a Sequential MLP's layer weights stay requires_grad=False.",
)
def _rt18_inference_call_freeze(compiled: Any, x: Any) -> Any:
    module = getattr(compiled, "_orig_mod", compiled)
    for p in module.parameters():
        p.requires_grad_(False)
    out = compiled(x)
    for p in module.parameters(recurse=False):
        p.requires_grad_(True)
    return out
