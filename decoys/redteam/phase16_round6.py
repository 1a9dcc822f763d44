"""Red-team wrong answers for phase 16, written from the contract only.

Round 6: each answer agrees with a correct one on the recorded texts and the float32 twins
where it can, and is wrong on a valid input the recordings lack (named in `why`).
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor
from xla_inspect.parse import parse_hlo

_rt6_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")
_rt6_ACC = re.compile(r"^[ \t]*[\w:]+(?:<[^;=\n]*>)?[ \t]+tmp_acc\d+[ \t]*=", re.M)


# ---- shared (correct) helpers -----------------------------------------------------------------


def _rt6_calls(inst) -> list[str]:
    m = re.search(r"\bcalls=(\{[^}]*\}|%?[\w.\-]+)", inst.attributes_text)
    return re.findall(r"%?([\w.\-]+)", m.group(1)) if m else []


def _rt6_entry_kernels(module):
    return [i for i in module.entry.instructions if i.opcode in _rt6_KERNEL_OPS]


def _rt6_reach(module, names: list[str]) -> list:
    seen: list = []
    todo = list(names)
    while todo:
        comp = module.computation(todo.pop(0))
        if comp is None or comp in seen:
            continue
        seen.append(comp)
        for inst in comp.instructions:
            todo += _rt6_calls(inst)
    return seen


def _rt6_short(call) -> str:
    return call.short_name


def _rt6_rank1_inputs(code: str) -> list[str]:
    """Inputs whose assert_size_stride size has one dimension."""
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


# ---- task 1: inductor_kernels -----------------------------------------------------------------


def _rt6_call_def(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item
    return None


def _rt6_name_of(callee: str) -> str | None:
    if callee.startswith("cpp_fused_"):
        rest = callee.removeprefix("cpp_fused_")
        return "" if rest.isdigit() else re.sub(r"_\d+$", "", rest)
    if callee.startswith("extern_kernels."):
        return callee.removeprefix("extern_kernels.")
    if callee.startswith("torch.ops.aten."):
        return callee.split(".")[3]
    return None


def _rt6_dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _rt6_dotted(node.value)
        return f"{owner}.{node.attr}" if owner else None
    return None


@wrong(
    "inductor_kernels",
    why="'in the order it runs them': walks call with ast.walk (breadth first), so a kernel "
    "call nested in an if/for/try block is listed after every top-level call; wrong on a "
    "call body `if True: cpp_fused_relu_0(buf0)` followed by a top-level extern_kernels.mm "
    "(gives ['mm','relu'], runs relu first); right on every recording (all calls at one depth, "
    "also the `with record_function` ones)",
)
def _rt6_inductor_kernels_bfs(code: str) -> list[str]:
    call = _rt6_call_def(ast.parse(code))
    out: list[str] = []
    for node in ast.walk(call):
        if isinstance(node, ast.Call):
            callee = _rt6_dotted(node.func)
            name = _rt6_name_of(callee) if callee else None
            if name is not None:
                out.append(name)
    return out


@wrong(
    "inductor_kernels",
    why="'a statement nested in a block of call counts too': recurses into body and except "
    "handlers but not `orelse`/`finalbody`, so a kernel in an `else:` branch or a `finally:` "
    "is dropped; wrong on `if flag: cpp_fused_relu_0(b)\\nelse: cpp_fused_gelu_1(b)` "
    "(misses 'gelu')",
)
def _rt6_inductor_kernels_no_else(code: str) -> list[str]:
    call = _rt6_call_def(ast.parse(code))

    def walk(body):
        for st in body:
            yield st
            if isinstance(st, ast.FunctionDef | ast.ClassDef):
                continue
            yield from walk(
                getattr(st, "body", []) if isinstance(getattr(st, "body", []), list) else []
            )
            for h in getattr(st, "handlers", []):
                yield from walk(h.body)

    out: list[str] = []
    for st in walk(call.body):
        if isinstance(st, ast.Expr | ast.Assign) and isinstance(st.value, ast.Call):
            callee = _rt6_dotted(st.value.func)
            name = _rt6_name_of(callee) if callee else None
            if name is not None:
                out.append(name)
    return out


@wrong(
    "inductor_kernels",
    why="fused name = ops without `cpp_fused_` and `_<n>`: strips digits, '_', then digits "
    "again from the right, which also eats a trailing digit of the last op; wrong on "
    "`cpp_fused_atan2_0` (gives 'atan' not 'atan2') and `cpp_fused_expm1_0` ('expm'); right "
    "on every recording, whose op names end in a letter",
)
def _rt6_inductor_kernels_rstrip(code: str) -> list[str]:
    out: list[str] = []
    for c in read_inductor(code).calls:
        if c.kind == "fused":
            out.append(
                c.kernel.removeprefix("cpp_fused_")
                .rstrip("0123456789")
                .rstrip("_")
                .rstrip("0123456789")
            )
        else:
            out.append(c.short_name)
    return out


# ---- task 2: kernel_census --------------------------------------------------------------------


def _rt6_inductor_census(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    return {
        "library": sum(c.kind != "fused" for c in calls),
        "fused": sum(c.kind == "fused" for c in calls),
    }


@wrong(
    "kernel_census",
    why="XLA counts 'ENTRY' instructions: counts fusion/dot/custom-call lines of the whole "
    "module, so fusions inside a while body (a layer in a fori_loop) or a nested fusion "
    "inside a fused computation are counted too; wrong on xla_only's fori_loop layer and on "
    "any module with a fusion moved one nested fusion further down",
)
def _rt6_kernel_census_whole_module(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for comp in module.computations:
        for i in comp.instructions:
            if i.opcode in ("dot", "custom-call") and (comp.is_entry or "fused" not in comp.name):
                lib += 1
            elif i.opcode == "fusion":
                if "kind=kCustom" in i.attributes_text:
                    lib += 1
                else:
                    fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt6_inductor_census(inductor_code),
    }


@wrong(
    "kernel_census",
    why="XLA 'library' = ENTRY dot and custom-call and kCustom fusions: reads the ENTRY with a "
    "line regex that wants an array shape before the opcode (`= f32[..]{..} fusion(`), so a "
    "multi-output fusion or a custom-call with a tuple shape `(f32[8,8], s32[])` is missed; "
    "wrong on cholesky (LAPACK custom-call returning a tuple) and on any multi-output loop "
    "fusion (row_stats' var/mean/argmax)",
)
def _rt6_kernel_census_array_shapes_only(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    lib = fused = 0
    in_entry = False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY"):
            in_entry = True
            continue
        if in_entry and line.startswith("}"):
            break
        if not in_entry:
            continue
        m = re.search(r"= [a-z0-9]+\[[^\]]*\](?:\{[^}]*\})? ([\w-]+)\(", line)
        if not m:
            continue
        op = m.group(1)
        if op in ("dot", "custom-call") or (op == "fusion" and "kind=kCustom" in line):
            lib += 1
        elif op == "fusion":
            fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt6_inductor_census(inductor_code),
    }


@wrong(
    "kernel_census",
    why="XLA 'library' = ENTRY dot AND custom-call AND kCustom fusions: counts kCustom fusions "
    "and custom-calls only ('on CPU the GEMM is always a kCustom fusion'), so a bare ENTRY "
    "`dot` counts nowhere; wrong on xla_only's int32 layer, whose product is a bare ENTRY dot "
    "(library 0 instead of 1); right on every float32 twin",
)
def _rt6_kernel_census_no_bare_dot(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for i in module.entry.instructions:
        if i.opcode == "custom-call" or (
            i.opcode == "fusion" and "kind=kCustom" in i.attributes_text
        ):
            lib += 1
        elif i.opcode == "fusion":
            fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt6_inductor_census(inductor_code),
    }


# ---- task 3: bias_homes -----------------------------------------------------------------------


def _rt6_inductor_bias_home(code: str) -> str:
    rank1 = _rt6_rank1_inputs(code)
    if not rank1:
        return "none"
    bias = rank1[0]
    for c in read_inductor(code).calls:
        if bias in c.arguments:
            return "library" if c.kind != "fused" else "fused"
    return "fused"


def _rt6_xla_bias_home(hlo_text: str, param_pattern: str = r"^[a-z0-9]+\[\d+\]") -> str:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry.instructions
        if i.opcode == "parameter" and re.match(param_pattern, i.shape)
    ]
    if not params:
        return "none"
    bias = params[0].name
    for i in module.entry.instructions:
        if bias not in [o.lstrip("%") for o in i.operands]:
            continue
        if i.opcode in ("dot", "custom-call"):
            return "library"
        if i.opcode == "fusion":
            held = any(
                x.opcode == "dot" for c in _rt6_reach(module, _rt6_calls(i)) for x in c.instructions
            )
            return "library" if held else "fused"
    return "fused"


@wrong(
    "bias_homes",
    why="the bias is the only rank-1 ENTRY parameter: matches the parameter's shape with "
    "`f32[<n>]` only, so in a bfloat16/float16 (or float64) twin there is 'no bias'; wrong "
    "on jax_hlo('dense_relu', jnp.bfloat16) (xla 'none' instead of 'fused')",
)
def _rt6_bias_homes_f32_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    return {
        "xla": _rt6_xla_bias_home(hlo_text, r"^f32\[\d+\]"),
        "inductor": _rt6_inductor_bias_home(inductor_code),
    }


@wrong(
    "bias_homes",
    why="XLA 'library' when the consumer's computation 'or a computation it calls' holds the "
    "dot: looks only in the fusion's own calls= computation, not deeper; wrong on "
    "dense_relu_row (x[1,8]: XLA fuses dot, bias and relu into one kernel, 'library') with "
    "its fused computation moved one nested fusion further down (says 'fused')",
)
def _rt6_bias_homes_shallow(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry.instructions
        if i.opcode == "parameter" and re.match(r"^[a-z0-9]+\[\d+\]", i.shape)
    ]
    xla = "none"
    if params:
        bias = params[0].name
        xla = "fused"
        for i in module.entry.instructions:
            if bias not in [o.lstrip("%") for o in i.operands]:
                continue
            if i.opcode in ("dot", "custom-call"):
                xla = "library"
            elif i.opcode == "fusion":
                comps = [module.computation(n) for n in _rt6_calls(i)]
                held = any(x.opcode == "dot" for c in comps if c for x in c.instructions)
                xla = "library" if held else "fused"
            break
    return {"xla": xla, "inductor": _rt6_inductor_bias_home(inductor_code)}


@wrong(
    "bias_homes",
    why="Inductor 'library' when the bias is an argument of the library call: checks only "
    "extern_kernels.* calls and reads every other kernel that takes the bias as 'fused', so a "
    "bias handed to an ATen fallback (torch.ops.aten._addmm_activation.default(b, x, w.T)) "
    "is reported 'fused'; wrong on addmm_gelu",
)
def _rt6_bias_homes_extern_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    rank1 = _rt6_rank1_inputs(inductor_code)
    ind = "none"
    if rank1:
        ind = "fused"
        for c in read_inductor(inductor_code).calls:
            if rank1[0] in c.arguments:
                ind = "library" if c.kind == "extern" else "fused"
                break
    return {"xla": _rt6_xla_bias_home(hlo_text), "inductor": ind}


# ---- task 4: reductions_per_kernel ------------------------------------------------------------


def _rt6_inductor_reductions(code: str, pattern: re.Pattern[str] = _rt6_ACC) -> list[int]:
    g = read_inductor(code)
    return [
        len(pattern.findall(g.kernels.get(c.kernel, ""))) if c.kind == "fused" else 0
        for c in g.calls
    ]


def _rt6_xla_reductions(hlo_text: str, *, deep: bool = True, bare: bool = True) -> list[int]:
    module = parse_hlo(hlo_text)
    out: list[int] = []
    for i in _rt6_entry_kernels(module):
        if i.opcode in ("reduce", "reduce-window"):
            if bare:
                out.append(1)
            continue
        names = _rt6_calls(i)
        comps = _rt6_reach(module, names) if deep else [module.computation(n) for n in names]
        out.append(
            sum(x.opcode in ("reduce", "reduce-window") for c in comps if c for x in c.instructions)
        )
    return out


@wrong(
    "reductions_per_kernel",
    why="'each ENTRY kernel' includes a bare ENTRY reduce/reduce-window (1 each): lists only "
    "ENTRY fusions and dots/custom-calls, skipping bare reduce opcodes; wrong on an int32 "
    "or a variadic argmax reduce XLA leaves unfused in ENTRY (one entry short)",
)
def _rt6_reductions_per_kernel_fusions_only(
    hlo_text: str, inductor_code: str
) -> dict[str, list[int]]:
    return {
        "xla": _rt6_xla_reductions(hlo_text, bare=False),
        "inductor": _rt6_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="'plus those of every computation its calls= reaches': counts the fusion's own "
    "computation only; wrong when a reduce sits one nested fusion further down (0 instead of 1)",
)
def _rt6_reductions_per_kernel_shallow(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt6_xla_reductions(hlo_text, deep=False),
        "inductor": _rt6_inductor_reductions(inductor_code),
    }


_rt6_BUILTIN_ACC = re.compile(
    r"^[ \t]*(?:float|double|half|bfloat16|int\d*_t|int|long|bool|Welford<\w+>|IndexValue<\w+>)"
    r"[ \t]+tmp_acc\d+[ \t]*=",
    re.M,
)


@wrong(
    "reductions_per_kernel",
    why="'one per accumulator <type> tmp_acc<N> = <init>', whatever the type: accepts only a "
    "list of known types (float, double, intN_t, bool, Welford<T>, IndexValue<T>); wrong on "
    "a kernel declaring `uint8_t tmp_acc0 = 0;` (a max over a uint8 tensor), "
    "or `c10::BFloat16 tmp_acc0 = 0;` (0 instead of 1)",
)
def _rt6_reductions_per_kernel_known_types(
    hlo_text: str, inductor_code: str
) -> dict[str, list[int]]:
    return {
        "xla": _rt6_xla_reductions(hlo_text),
        "inductor": _rt6_inductor_reductions(inductor_code, _rt6_BUILTIN_ACC),
    }


# ---- task 5: train_graphs ---------------------------------------------------------------------


def _rt6_count(g) -> int:
    return len(g.calls)


@wrong(
    "train_graphs",
    why="'saved' = backward inputs other than tangents_<n>: subtracts one tangent, assuming "
    "the loss is the only differentiable output; wrong on train_mlp_outputs (the hidden "
    "layer h is a second output, tangents_2) and on any loss returning two float tensors",
)
def _rt6_train_graphs_one_tangent(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bwd = next(g for g in graphs if g.is_backward)
    fwd = next(g for g in graphs if not g.is_backward)
    return {"forward": _rt6_count(fwd), "backward": _rt6_count(bwd), "saved": len(bwd.inputs) - 1}


@wrong(
    "train_graphs",
    why="kernels = statements of call that run one, a kernel called twice counting twice: "
    "counts the fused kernels the module defines (plus every library call), not the fused "
    "calls; wrong on a graph that calls one cpp_fused kernel twice (or inside a `for` block) "
    "or defines one it never calls",
)
def _rt6_train_graphs_distinct(codes: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    saved = 0
    for code in codes:
        g = read_inductor(code)
        n = len(g.kernels) + sum(c.kind != "fused" for c in g.calls)
        if g.is_backward:
            out["backward"] = n
            saved = sum(not i.startswith("tangents_") for i in g.inputs)
        else:
            out["forward"] = n
    out["saved"] = saved
    return out


@wrong(
    "train_graphs",
    why="'saved' counted from the forward side: forward outputs minus the compiled function's "
    "own outputs, taken as one (the loss); wrong on train_mlp_outputs / train_relu_outputs, "
    "whose function returns (loss, h[, argmax]): those extra outputs are not saved tensors",
)
def _rt6_train_graphs_forward_outputs(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bwd = next(g for g in graphs if g.is_backward)
    fwd = next(g for g in graphs if not g.is_backward)
    return {"forward": _rt6_count(fwd), "backward": _rt6_count(bwd), "saved": len(fwd.outputs) - 1}


# ---- task 6: predict_inductor_kernels ---------------------------------------------------------


def _rt6_decomposed(rows: int, width: int, out: int, bias: bool) -> bool:
    if bias:
        return rows == 1 and (out == 1 or (out <= 16 and width <= 16))
    return (rows == 1 and out == 1) or (width == 1 and rows >= 2 and out >= 2 and rows + out <= 32)


def _rt6_predict(
    rows: int, width: int, layers, decomposed=_rt6_decomposed, first_width: int | None = None
):
    lib = fused = 0
    pending = False
    for out, bias, act in layers:
        w = first_width if first_width is not None else width
        if decomposed(rows, w, out, bias):
            pending = True
        else:
            if pending:
                fused += 1
            pending = False
            lib += 1
        if act != "none":
            pending = True
        width = out
    if pending:
        fused += 1
    return {"library": lib, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="tiny-product rules: checks the one-feature rule (no bias) first whenever the input "
    "has one feature, even with a bias; wrong on x[1,1] -> (6, True, 'none'): one row and a "
    "weight within 16 x 16 with a bias is rewritten (library 0, fused 1), this says addmm",
)
def _rt6_predict_feature_rule_first(input_shape, layers):
    rows = math.prod(input_shape[:-1])

    def decomposed(rows, width, out, bias):
        if width == 1:
            return rows >= 2 and out >= 2 and rows + out <= 32 and not bias
        return _rt6_decomposed(rows, width, out, bias)

    return _rt6_predict(rows, input_shape[-1], layers, decomposed)


@wrong(
    "predict_inductor_kernels",
    why="rows = every dimension but the last (a linear layer flattens them): reads the input "
    "as (batch, [sequence,] features) and multiplies the first two dimensions only; wrong on "
    "a rank-4 input x[1,1,2,8] -> (8, True, 'relu') (2 rows: addmm + relu = library 1, "
    "fused 1; this sees one row and says rewritten: library 0, fused 1); right on every "
    "rank-2 and rank-3 case",
)
def _rt6_predict_rows_batch_seq(input_shape, layers):
    rows = input_shape[0] * (input_shape[1] if len(input_shape) > 2 else 1)
    return _rt6_predict(rows, input_shape[-1], layers)


@wrong(
    "predict_inductor_kernels",
    why="'the input has one feature' is the layer's input (the previous layer's output), "
    "not the MLP's: checks the feature rule against input_shape[-1] for every layer; wrong "
    "on mlp_o, x[8,24] -> (1,F,none) -> (4,F,none) (second layer rewritten: fused 1)",
)
def _rt6_predict_mlp_input_features(input_shape, layers):
    rows = math.prod(input_shape[:-1])
    return _rt6_predict(rows, input_shape[-1], layers, first_width=input_shape[-1])


# ---- task 7: inference_call -------------------------------------------------------------------


@wrong(
    "inference_call",
    why="'grad mode is what it was before the call (which may come from inside "
    "torch.no_grad())': turns grad back on after the call; wrong when the caller already "
    "runs inside torch.no_grad() (grad mode left enabled)",
)
def _rt6_inference_call_reenable(compiled: Any, x: Any) -> Any:
    import torch

    torch.set_grad_enabled(False)
    try:
        return compiled(x)
    finally:
        torch.set_grad_enabled(True)


@wrong(
    "inference_call",
    why="'the module stays in the mode it was in (train or eval)': calls compiled.eval() to "
    "get an inference graph and leaves it in eval mode; wrong on any module in train mode "
    "(training stays False afterwards)",
)
def _rt6_inference_call_eval(compiled: Any, x: Any) -> Any:
    import torch

    compiled.eval()
    with torch.no_grad():
        return compiled(x)


@wrong(
    "inference_call",
    why="'parameters still require grad afterwards': switches requires_grad off on every "
    "parameter so AOTAutograd sees no differentiable input, and never switches it back; wrong "
    "on every call (params no longer require grad)",
)
def _rt6_inference_call_freeze(compiled: Any, x: Any) -> Any:
    for p in compiled.parameters():
        p.requires_grad_(False)
    return compiled(x.detach())


@wrong(
    "inference_call",
    why="'run by the compiled module itself (not an eager run of the module it wraps)': "
    "calls compiled._orig_mod under no_grad; same values, but Inductor compiles nothing",
)
def _rt6_inference_call_orig(compiled: Any, x: Any) -> Any:
    import torch

    with torch.no_grad():
        return getattr(compiled, "_orig_mod", compiled)(x)


_rt6_LINE_KERNEL = re.compile(
    r"^[ \t]+(?:(?:\w+ = )?(?:cpp_fused_\w*\(|extern_kernels\.\w+\()|\w+ = torch\.ops\.aten\.\w+\.\w+\()",
    re.M,
)


@wrong(
    "train_graphs",
    why="a kernel is any statement of call calling a fallback torch.ops.aten.<op>.<overload>: "
    "counts kernel lines by a regex that wants a fallback assigned (`bufN = torch.ops...`) and "
    "every call at the start of its line; wrong on a backward running an in-place fallback as "
    "a bare statement (`torch.ops.aten.index_put_.default(buf3, ...)`) or a one-line block "
    "`if c: cpp_fused_relu_0(buf1)` (one kernel short)",
)
def _rt6_train_graphs_line_regex(codes: list[str]) -> dict[str, int]:
    out = {"forward": 0, "backward": 0, "saved": 0}
    for code in codes:
        g = read_inductor(code)
        body = code[code.index("def call") :]
        body = body[: body.find("\ndef ", 1)] if "\ndef " in body[1:] else body
        n = len(_rt6_LINE_KERNEL.findall(body))
        if g.is_backward:
            out["backward"] = n
            out["saved"] = sum(not i.startswith("tangents_") for i in g.inputs)
        else:
            out["forward"] = n
    return out
