"""Phase 16, red-team round 12: plausible wrong answers (see earlier_rounds/decoys_api.py)."""

from __future__ import annotations

import ast
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count

# ---- helpers -------------------------------------------------------------------------------


def _rt12_call_fn(code: str) -> ast.FunctionDef:
    tree = ast.parse(code)
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            found = node
            break
    assert found is not None, "no call"
    return found


def _rt12_dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _rt12_entry_name(callee: str) -> str | None:
    if callee.startswith("cpp_fused_"):
        rest = callee[len("cpp_fused_") :]
        return "" if rest.isdigit() else re.sub(r"_\d+$", "", rest)
    if callee.startswith("extern_kernels."):
        return callee[len("extern_kernels.") :]
    if callee.startswith("torch.ops.aten."):
        return callee.split(".")[3]
    return None


def _rt12_hlo_comps(text: str) -> tuple[str, dict[str, list[str]]]:
    comps: dict[str, list[str]] = {}
    entry = ""
    current = None
    for line in text.splitlines():
        head = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$", line)
        if head and current is None:
            current = head.group(2)
            comps[current] = []
            if head.group(1):
                entry = current
            continue
        if current is not None:
            if line.strip() == "}":
                current = None
            elif line.strip():
                comps[current].append(line)
    return entry, comps


def _rt12_instr(line: str) -> dict[str, Any] | None:
    m = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$", line)
    if not m:
        return None
    name, rest = m.group(1), m.group(2)
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):  # noqa: B007
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        shape, rest = rest[: i + 1], rest[i + 1 :].lstrip()
    else:
        shape, _, rest = rest.partition(" ")
    om = re.match(r"([\w\-]+)\((.*)$", rest)
    if not om:
        return None
    opcode, tail = om.group(1), om.group(2)
    depth, i = 1, 0
    while i < len(tail) and depth:
        depth += tail[i] == "("
        depth -= tail[i] == ")"
        i += 1
    operands = re.findall(r"%([\w.\-]+)", re.sub(r"/\*.*?\*/", "", tail[: i - 1]))
    attrs = tail[i:]
    return {
        "name": name,
        "shape": shape,
        "opcode": opcode,
        "operands": operands,
        "attrs": attrs,
        "line": line,
    }


def _rt12_entry_instrs(text: str) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    entry, comps = _rt12_hlo_comps(text)
    instrs = [i for i in (_rt12_instr(l) for l in comps[entry]) if i]
    return instrs, comps


def _rt12_is_kernel(ins: dict[str, Any]) -> bool:
    return ins["opcode"] in ("fusion", "dot", "custom-call", "reduce", "reduce-window")


def _rt12_called(ins: dict[str, Any]) -> list[str]:
    return re.findall(r"calls=%?([\w.\-]+)", ins["attrs"])


def _rt12_comp_reductions(name: str, comps: dict[str, list[str]]) -> int:
    total = 0
    for line in comps.get(name, []):
        ins = _rt12_instr(line)
        if not ins:
            continue
        if ins["opcode"] in ("reduce", "reduce-window"):
            total += 1
        for sub in _rt12_called(ins):
            total += _rt12_comp_reductions(sub, comps)
    return total


def _rt12_xla_reductions(hlo_text: str) -> list[int]:
    instrs, comps = _rt12_entry_instrs(hlo_text)
    out = []
    for ins in instrs:
        if not _rt12_is_kernel(ins):
            continue
        n = 1 if ins["opcode"] in ("reduce", "reduce-window") else 0
        for sub in _rt12_called(ins):
            n += _rt12_comp_reductions(sub, comps)
        out.append(n)
    return out


def _rt12_inductor_reductions(inductor_code: str) -> list[int]:
    g = read_inductor(inductor_code)
    return [reduction_count(g.kernels[c.kernel]) if c.kind == "fused" else 0 for c in g.calls]


def _rt12_comp_has_dot(name: str, comps: dict[str, list[str]]) -> bool:
    for line in comps.get(name, []):
        ins = _rt12_instr(line)
        if not ins:
            continue
        if ins["opcode"] in ("dot", "custom-call"):
            return True
        if any(_rt12_comp_has_dot(sub, comps) for sub in _rt12_called(ins)):
            return True
    return False


def _rt12_xla_bias(hlo_text: str) -> str:
    instrs, comps = _rt12_entry_instrs(hlo_text)
    bias = [
        i["name"]
        for i in instrs
        if i["opcode"] == "parameter" and re.fullmatch(r"\w+\[[^\],]+\](\{.*\})?", i["shape"])
    ]
    if not bias:
        return "none"
    for ins in instrs:
        if bias[0] in ins["operands"] and _rt12_is_kernel(ins):
            if ins["opcode"] in ("dot", "custom-call"):
                return "library"
            if any(_rt12_comp_has_dot(sub, comps) for sub in _rt12_called(ins)):
                return "library"
            return "fused"
    return "fused"


def _rt12_asserted_sizes(code: str) -> dict[str, tuple]:
    """name -> asserted size tuple (items as text), from assert_size_stride(_grouped) calls."""
    sizes: dict[str, tuple] = {}
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "assert_size_stride" and len(node.args) >= 2:
            if isinstance(node.args[0], ast.Name) and isinstance(node.args[1], ast.Tuple):
                sizes[node.args[0].id] = tuple(ast.unparse(e) for e in node.args[1].elts)
        elif node.func.id == "assert_size_stride_grouped" and len(node.args) >= 2:
            names, shapes = node.args[0], node.args[1]
            if isinstance(names, ast.Tuple) and isinstance(shapes, ast.Tuple):
                for n, sh in zip(names.elts, shapes.elts):
                    if isinstance(n, ast.Name) and isinstance(sh, ast.Tuple):
                        sizes[n.id] = tuple(ast.unparse(e) for e in sh.elts)
    return sizes


def _rt12_inductor_bias_input(g: Any, code: str) -> str | None:
    sizes = _rt12_asserted_sizes(code)
    for name in g.inputs:
        if len(sizes.get(name, ())) == 1:
            return name
    return None


# ---- inductor_kernels ----------------------------------------------------------------------

_RT12_BLOCKS = (ast.If, ast.For, ast.Try, ast.With)


def _rt12_walk_no_while(body: list[ast.stmt], out: list[str]) -> None:
    for stmt in body:
        if isinstance(stmt, _RT12_BLOCKS):
            for field in ("body", "orelse", "finalbody"):
                _rt12_walk_no_while(getattr(stmt, field, []) or [], out)
            for handler in getattr(stmt, "handlers", []) or []:
                _rt12_walk_no_while(handler.body, out)
            continue
        value = getattr(stmt, "value", None)
        if isinstance(value, ast.Call):
            name = _rt12_entry_name(_rt12_dotted(value.func))
            if name is not None:
                out.append(name)


@wrong(
    "inductor_kernels",
    why="'a statement nested in a block of call counts too' (any block): this recurses into "
    "if/for/try/with blocks only (an explicit isinstance list) and never into a `while` block, "
    "so `while not done: cpp_fused_relu_0(buf0); done = True` inside call is dropped "
    "(answers ['addmm'] instead of ['addmm', 'relu'])",
)
def _rt12_inductor_kernels_no_while(code: str) -> list[str]:
    out: list[str] = []
    _rt12_walk_no_while(_rt12_call_fn(code).body, out)
    return out


_RT12_VIEW_OPS = {
    "view",
    "reshape",
    "_unsafe_view",
    "as_strided",
    "expand",
    "permute",
    "t",
    "transpose",
    "squeeze",
    "unsqueeze",
    "alias",
    "slice",
    "select",
    "unfold",
    "view_as_real",
    "view_as_complex",
    "diagonal",
}


@wrong(
    "inductor_kernels",
    why="a fallback `torch.ops.aten.<op>.<overload>(...)` is a kernel whatever its op; this "
    "drops fallbacks to view-like ATen ops (view, as_strided, permute, expand, ...) reading "
    "'views (reinterpret_tensor) are not kernels' as 'view ops are not kernels'; wrong on a "
    "call holding `buf1 = torch.ops.aten.view.dtype(buf0, torch.int32)` or "
    "`torch.ops.aten.as_strided.default(...)` after an addmm (answers ['addmm'])",
)
def _rt12_inductor_kernels_view_fallback_skipped(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kind == "fallback" and c.short_name in _RT12_VIEW_OPS:
            continue
        out.append(c.short_name)
    return out


# ---- kernel_census -------------------------------------------------------------------------

_RT12_LAYOUT = {
    "parameter",
    "copy",
    "transpose",
    "bitcast",
    "reshape",
    "broadcast",
    "constant",
    "slice",
    "concatenate",
    "pad",
    "tuple",
    "get-tuple-element",
}


def _rt12_layout_only(comp: str, comps: dict[str, list[str]]) -> bool:
    ops = [i["opcode"] for i in (_rt12_instr(l) for l in comps.get(comp, [])) if i]
    return bool(ops) and all(op in _RT12_LAYOUT for op in ops)


@wrong(
    "kernel_census",
    why="'fused' counts EVERY other ENTRY fusion and every fused C++ kernel call; this drops "
    "layout copies as 'not real work': an XLA fusion whose computation only copies/transposes/"
    "broadcasts and Inductor's `cpp_fused_0` (the layout copy before a convolution's training "
    "step); wrong on conv_relu (its twin's HLO has three ENTRY fusions, two only "
    "transpose+copy: answers xla fused 1, not 3) and on train_conv_relu's forward (inductor "
    "fused 1, not 2)",
)
def _rt12_kernel_census_layout_copies_skipped(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    instrs, comps = _rt12_entry_instrs(hlo_text)
    xla = {"library": 0, "fused": 0}
    for ins in instrs:
        if ins["opcode"] in ("dot", "custom-call"):
            xla["library"] += 1
        elif ins["opcode"] == "fusion":
            if "kind=kCustom" in ins["attrs"]:
                xla["library"] += 1
            elif not all(_rt12_layout_only(c, comps) for c in _rt12_called(ins)):
                xla["fused"] += 1
    ind = {"library": 0, "fused": 0}
    for c in read_inductor(inductor_code).calls:
        if c.kind == "fused":
            if c.short_name != "":
                ind["fused"] += 1
        else:
            ind["library"] += 1
    return {"xla": xla, "inductor": ind}


@wrong(
    "kernel_census",
    why="one count per ENTRY fusion instruction; this counts the DISTINCT computations the "
    "ENTRY fusions call (a set of calls= targets), so two ENTRY fusions calling one fused "
    "computation (XLA reuses identical ones; an HLO with `%f1 = fusion(%x), calls=%add_one` "
    "and `%f2 = fusion(%f1), calls=%add_one`) count once: 'fused' 1 instead of 2",
)
def _rt12_kernel_census_distinct_computations(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    instrs, _ = _rt12_entry_instrs(hlo_text)
    lib, fused = 0, set()
    lib_comps = set()
    for ins in instrs:
        if ins["opcode"] in ("dot", "custom-call"):
            lib += 1
        elif ins["opcode"] == "fusion":
            key = tuple(_rt12_called(ins)) or (ins["name"],)
            if "kind=kCustom" in ins["attrs"]:
                lib_comps.add(key)
            else:
                fused.add(key)
    ind = {"library": 0, "fused": 0}
    for c in read_inductor(inductor_code).calls:
        ind["fused" if c.kind == "fused" else "library"] += 1
    return {"xla": {"library": lib + len(lib_comps), "fused": len(fused)}, "inductor": ind}


# ---- bias_homes ----------------------------------------------------------------------------

_RT12_GEMMS = {"addmm", "mm", "bmm", "baddbmm", "linear", "matmul", "_addmm_activation"}


@wrong(
    "bias_homes",
    why="Inductor 'library' = the bias is an argument of the LIBRARY call or fallback; this "
    "decides by names: the kernel reading the bias counts as the GEMM when its name (or the "
    "origin comment above it) names addmm/mm, so a one-row layer whose tiny product Inductor "
    "rewrote into `cpp_fused_addmm_relu_t_0(buf1, x, w, b)` (recorded/dense_relu_row.txt, "
    "x[1,8]) answers 'library' where the bias is added in a fused kernel ('fused')",
)
def _rt12_bias_homes_by_kernel_name(hlo_text: str, inductor_code: str) -> dict[str, str]:
    g = read_inductor(inductor_code)
    bias = _rt12_inductor_bias_input(g, inductor_code)
    if bias is None:
        ind = "none"
    else:
        ind = "fused"
        for c in g.calls:
            if bias in c.arguments:
                ops = set(c.short_name.split("_")) | {a.split(".")[-1] for a in c.aten}
                if c.kind != "fused" or ops & _RT12_GEMMS:
                    ind = "library"
                break
    return {"xla": _rt12_xla_bias(hlo_text), "inductor": ind}


# ---- reductions_per_kernel -----------------------------------------------------------------

_RT12_REDUCING_OPS = {
    "sum": 1,
    "amax": 1,
    "amin": 1,
    "mean": 1,
    "prod": 1,
    "argmax": 1,
    "argmin": 1,
    "max": 1,
    "min": 1,
    "var": 1,
    "std": 1,
    "logsumexp": 2,
    "_softmax": 2,
    "_log_softmax": 2,
    "native_layer_norm": 2,
    "var_mean": 1,
    "norm": 1,
    "any": 1,
    "all": 1,
}


def _rt12_reductions_from_name(ops: str) -> int:
    n = 0
    rest = ops
    for op in sorted(_RT12_REDUCING_OPS, key=len, reverse=True):
        pattern = r"(?:^|_)" + re.escape(op.lstrip("_")) + r"(?=_|$)"
        if op.startswith("_"):
            pattern = r"(?:^|_)_" + re.escape(op.lstrip("_")) + r"(?=_|$)"
        found = re.findall(pattern, rest)
        if found:
            n += _RT12_REDUCING_OPS[op] * len(found)
            rest = re.sub(pattern, "", rest)
    return n


@wrong(
    "reductions_per_kernel",
    why="Inductor: one reduction per accumulator its C++ DECLARES; this reads the reductions off "
    "the kernel's NAME (sum/amax/mean 1 each, _softmax and native_layer_norm 2 each), right on "
    "cpp_fused__softmax_native_layer_norm_0 (4) but wrong on HANDWRITTEN's "
    "cpp_fused_add_relu_3 (2 accumulators, no reducing op in its name: answers 0) and "
    "cpp_fused_sum_4 (a Welford and an int32 count: 2, answers 1)",
)
def _rt12_reductions_per_kernel_inductor_by_name(
    hlo_text: str, inductor_code: str
) -> dict[str, list[int]]:
    g = read_inductor(inductor_code)
    ind = [_rt12_reductions_from_name(c.short_name) if c.kind == "fused" else 0 for c in g.calls]
    return {"xla": _rt12_xla_reductions(hlo_text), "inductor": ind}


@wrong(
    "reductions_per_kernel",
    why="XLA: a kernel's reduce/reduce-window instructions and those its calls= reaches; this "
    "reads them off the instruction's NAME ('reduce' in `%wrapped_reduce`, "
    "`%wrapped_reduce-window.1`, `%reduce_divide_fusion`), so the layernorm_softmax twin's "
    "`%add_rsqrt_fusion` (it finishes the variance's reduce) counts 0 and a renamed fusion "
    "`%fusion.3` holding a reduce counts 0",
)
def _rt12_reductions_per_kernel_xla_by_name(
    hlo_text: str, inductor_code: str
) -> dict[str, list[int]]:
    instrs, _ = _rt12_entry_instrs(hlo_text)
    xla = []
    for ins in instrs:
        if _rt12_is_kernel(ins):
            n = len(re.findall(r"reduce", ins["name"]))
            if ins["opcode"] in ("reduce", "reduce-window"):
                n = max(n, 1)
            xla.append(n)
    return {"xla": xla, "inductor": _rt12_inductor_reductions(inductor_code)}


# ---- train_graphs --------------------------------------------------------------------------


@wrong(
    "train_graphs",
    why="'saved' = the backward's inputs other than the tangents_<n>; this tells the gradients "
    "by their asserted SIZE (the loss's gradient is a scalar `()`), so a second output's "
    "gradient `tangents_2` of size (16, 24) (HANDWRITTEN_TRAIN_TWO_OUTPUTS, train_mlp_outputs) "
    "counts as saved: 4 instead of 3; and a saved scalar counts as a gradient",
)
def _rt12_train_graphs_tangents_by_scalar_size(codes: list[str]) -> dict[str, int]:
    graphs = [(read_inductor(c), c) for c in codes]
    bw = next(i for i, (g, _) in enumerate(graphs) if g.is_backward)
    fw = 1 - bw if len(graphs) == 2 else 0
    g_bw, code_bw = graphs[bw]
    scalars = {n for n, size in _rt12_asserted_sizes(code_bw).items() if size == ()}
    grads = [n for n in g_bw.inputs if n in scalars]
    return {
        "forward": len(graphs[fw][0].calls),
        "backward": len(g_bw.calls),
        "saved": len(g_bw.inputs) - len(grads),
    }


# ---- predict_inductor_kernels --------------------------------------------------------------


def _rt12_predict(input_shape, layers, rows_of, epilogue=False):
    rows = rows_of(input_shape)
    feat = input_shape[-1]
    library, fused, pending = 0, 0, False
    for out, bias, act in layers:
        if bias:
            tiny = rows == 1 and (out == 1 or (out <= 16 and feat <= 16))
        else:
            tiny = (rows == 1 and out == 1) or (
                feat == 1 and rows >= 2 and out >= 2 and rows + out <= 32
            )
        if tiny:
            pending = True
            if act != "none":
                pending = True
        else:
            if pending:
                fused += 1
            pending = False
            library += 1
            if act != "none" and not epilogue:
                pending = True
        feat = out
    if pending:
        fused += 1
    return {"library": library, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why="a linear layer's rows are ALL the leading dimensions multiplied; this takes the matrix "
    "rows as input_shape[-2] (the dimension just before the features), right on every 2-D "
    "input and on (1, 5, 12) but wrong on x[5,1,12] -> [(8, True, 'relu')]: 5 rows, so addmm "
    "+ relu (library 1, fused 1); this sees one row and a weight within 16 x 16 (library 0, "
    "fused 1)",
)
def _rt12_predict_rows_from_penultimate(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt12_predict(input_shape, layers, lambda s: s[-2])


@wrong(
    "predict_inductor_kernels",
    why="'the activation cannot go into the library call: it becomes a fused C++ kernel of its "
    "own'; this believes Inductor's CPU backend folds relu/gelu/tanh/sigmoid into the GEMM as "
    "an mkldnn linear-pointwise epilogue (true only with freezing on), so a GEMM's activation "
    "costs nothing: mlp_a x[8,24] -> (32, relu), (16, none) answers library 2, fused 0 "
    "(Inductor: 2 and 1)",
)
def _rt12_predict_activation_in_gemm_epilogue(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    def rows_of(s):
        n = 1
        for d in s[:-1]:
            n *= d
        return n

    return _rt12_predict(input_shape, layers, rows_of, epilogue=True)
