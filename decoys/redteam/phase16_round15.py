"""Red team, phase 16, round 15: line-keyed kernel tables, line-anchored regexes, a convolution
taken for a library call, the bias found by argument position, vector accumulators counted
instead of declarations, a computation found by a name prefix, view fallbacks dropped from a training graph, and a one-sided reading
of the 16 x 16 limit."""

from __future__ import annotations

import ast
import re

from kata_harness.decoys import wrong
from xla_inspect.inductor import fused_ops, read_inductor


def _rt15_call_node(code):
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    return None


def _rt15_name(callee):
    if callee.startswith("cpp_fused_"):
        return fused_ops(callee)
    if callee.startswith("extern_kernels."):
        return callee.split(".", 1)[1]
    if callee.startswith("torch.ops.aten."):
        return callee.split(".")[3]
    return None


def _rt15_dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _rt15_dotted(node.value)
        return f"{owner}.{node.attr}" if owner else None
    return None


_RT15_KERNEL_LINE = re.compile(
    r"^\s*(?:\w+\s*=\s*)?(cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.aten\.[\w.]+)\(", re.M
)


def _rt15_entry_lines(hlo_text):
    lines = hlo_text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("ENTRY"))
    out = []
    for l in lines[start + 1 :]:
        if l.strip() == "}":
            break
        out.append(l)
    return out


def _rt15_opcode(line):
    m = re.match(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$", line)
    if not m:
        return None
    rest = m.group(1)
    depth = 0
    for i, ch in enumerate(rest):  # skip the shape (maybe a tuple)
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            mm = re.match(r"\s*([\w\-]+)\(", rest[i:])
            return mm.group(1) if mm else None
    return None


@wrong(
    "kernel_census",
    why=(
        "XLA 'library' counts ENTRY dot and custom-call instructions and kCustom fusions; 'Other "
        "ENTRY instructions are not counted': this also counts a bare ENTRY `convolution` as a "
        "library call (XLA:CPU hands it to Eigen, as Inductor hands its convolution to "
        "extern_kernels.convolution); wrong on the JAX twin of conv_relu, whose ENTRY "
        "`%convolution = ... convolution(...)` gives xla library 1 instead of 0"
    ),
)
def _rt15_kernel_census_conv_library(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    lib = fused = 0
    for line in _rt15_entry_lines(hlo_text):
        op = _rt15_opcode(line)
        if op == "fusion":
            if "kind=kCustom" in line:
                lib += 1
            else:
                fused += 1
        elif op in ("dot", "custom-call", "convolution"):
            lib += 1
    g = read_inductor(inductor_code)
    ilib = sum(1 for c in g.calls if c.kind != "fused")
    ifused = sum(1 for c in g.calls if c.kind == "fused")
    return {"xla": {"library": lib, "fused": fused}, "inductor": {"library": ilib, "fused": ifused}}


def _rt15_asserted_sizes(code):
    """(input, size elements as ast nodes) for each assert of `call`."""
    call = _rt15_call_node(code)
    found = []
    for node in ast.walk(call):
        if not isinstance(node, ast.Call):
            continue
        callee = _rt15_dotted(node.func)
        if callee == "assert_size_stride" and len(node.args) >= 2:
            if isinstance(node.args[0], ast.Name) and isinstance(node.args[1], ast.Tuple):
                found.append((node.args[0].id, node.args[1].elts))
        elif callee == "assert_size_stride_grouped" and len(node.args) >= 2:
            names, sizes = node.args[0], node.args[1]
            if isinstance(names, ast.Tuple) and isinstance(sizes, ast.Tuple):
                for n, sz in zip(names.elts, sizes.elts):
                    if isinstance(n, ast.Name) and isinstance(sz, ast.Tuple):
                        found.append((n.id, sz.elts))
    return found


def _rt15_inductor_bias(code):
    for name, elts in _rt15_asserted_sizes(code):
        if len(elts) == 1:
            return name
    return None


def _rt15_xla_bias_home(hlo_text):
    lines = _rt15_entry_lines(hlo_text)
    bias = None
    for l in lines:
        m = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\w+\[(\w+)\]\{0\}\s+parameter", l)
        if m:
            bias = m.group(1)
    if bias is None:
        return "none"
    comps = {}
    cur = None
    for l in hlo_text.splitlines():
        m = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", l)
        if m and not l.startswith(" "):
            cur = m.group(1)
            comps[cur] = []
        elif cur is not None:
            comps[cur].append(l)

    def holds_dot(name, seen=()):
        for l in comps.get(name, []):
            if _rt15_opcode(l) == "dot":
                return True
            for c in re.findall(r"calls=%?([\w.\-]+)", l):
                if c not in seen and holds_dot(c, seen + (c,)):
                    return True
        return False

    for l in lines:
        op = _rt15_opcode(l)
        if op is None or not re.search(r"[(,]\s*%?" + re.escape(bias) + r"\s*[,)]", l):
            continue
        if op in ("dot", "custom-call"):
            return "library"
        if op == "fusion":
            c = re.search(r"calls=%?([\w.\-]+)", l).group(1)
            return "library" if holds_dot(c) else "fused"
    return "fused"


@wrong(
    "bias_homes",
    why=(
        "Inductor 'library' when the bias is AN argument of the library call or fallback: this "
        "checks only the call's FIRST argument (addmm's `input` slot, where the bias always sits "
        "in addmm / baddbmm / _addmm_activation), so a fallback that takes the bias elsewhere is "
        "'fused'; wrong on recorded/dense_relu.txt with its addmm written as the fallback "
        "`buf0 = torch.ops.aten.linear.default(arg0_1, arg1_1, arg2_1)` (bias last): "
        "inductor 'fused' instead of 'library'"
    ),
)
def _rt15_bias_homes_first_arg(hlo_text: str, inductor_code: str) -> dict[str, str]:
    xla = _rt15_xla_bias_home(hlo_text)
    bias = _rt15_inductor_bias(inductor_code)
    if bias is None:
        ind = "none"
    else:
        ind = "fused"
        for c in read_inductor(inductor_code).calls:
            if c.kind != "fused" and c.arguments and c.arguments[0] == bias:
                ind = "library"
                break
    return {"xla": xla, "inductor": ind}


@wrong(
    "bias_homes",
    why=(
        "Inductor: the bias is the input whose asserted size has one dimension, an integer OR a "
        "symbol (`(s1, )`); this accepts a one-dimensional size only when its element is an integer literal, so a "
        "dynamic-shape compile's bias `(s1, )` is not found and the answer is 'none'; wrong on "
        "recorded/dense_relu.txt with its sizes written as symbols (`(s0, )` for the bias): "
        "inductor 'none' instead of 'library'"
    ),
)
def _rt15_bias_homes_integer_size(hlo_text: str, inductor_code: str) -> dict[str, str]:
    xla = _rt15_xla_bias_home(hlo_text)
    bias = None
    for name, elts in _rt15_asserted_sizes(inductor_code):
        if len(elts) == 1 and isinstance(elts[0], ast.Constant) and isinstance(elts[0].value, int):
            bias = name
    if bias is None:
        return {"xla": xla, "inductor": "none"}
    for c in read_inductor(inductor_code).calls:
        if bias in c.arguments:
            return {"xla": xla, "inductor": "library" if c.kind != "fused" else "fused"}
    return {"xla": xla, "inductor": "fused"}


def _rt15_xla_reductions(hlo_text):
    comps = {}
    cur = None
    for l in hlo_text.splitlines():
        m = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", l)
        if m and not l.startswith(" "):
            cur = m.group(1)
            comps[cur] = []
        elif cur is not None:
            comps[cur].append(l)

    def count(name):
        n = 0
        for l in comps.get(name, []):
            if _rt15_opcode(l) in ("reduce", "reduce-window"):
                n += 1
            for c in re.findall(r"calls=%?([\w.\-]+)", l):
                n += count(c)
        return n

    out = []
    for l in _rt15_entry_lines(hlo_text):
        op = _rt15_opcode(l)
        if op == "fusion":
            out.append(count(re.search(r"calls=%?([\w.\-]+)", l).group(1)))
        elif op in ("reduce", "reduce-window"):
            out.append(1)
        elif op in ("dot", "custom-call"):
            out.append(0)
    return out


@wrong(
    "reductions_per_kernel",
    why=(
        "Inductor: one reduction per accumulator DECLARED (`<type> tmp_acc<N> = <init>;`); this "
        "counts the vector accumulators `tmp_accN_vec` instead (every reduction of the "
        "recordings is vectorised, so the numbers agree there), so a reduction Inductor does "
        "not vectorise (a `double tmp_acc0 = 0;` or an `int32_t` one with no `_vec` beside it) "
        "counts 0; wrong on recorded/layernorm_softmax.txt with its kernel's "
        "`at::vec::Vectorized<float> tmp_acc0_vec = ...` lines removed (0 instead of 4)"
    ),
)
def _rt15_reductions_vec_accumulators(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    g = read_inductor(inductor_code)
    ind = []
    for c in g.calls:
        if c.kind != "fused":
            ind.append(0)
        else:
            src = g.kernels.get(c.kernel, "")
            ind.append(
                len(re.findall(r"^\s*[A-Za-z_][\w:<>, ]*[>\w]\s+tmp_acc\d+_vec\s*=", src, re.M))
            )
    return {"xla": _rt15_xla_reductions(hlo_text), "inductor": ind}


@wrong(
    "reductions_per_kernel",
    why=(
        "XLA: each ENTRY kernel counts the reductions of the computation its calls= NAMES: this "
        "finds a computation's body by searching the text for the first header line that "
        "STARTS with `%<name>` (no delimiter after the name), so `calls=%fused_computation.1` "
        "reads the body of `%fused_computation.10` when that one is printed first; wrong on "
        "the JAX twin of layernorm_softmax with `%fused_computation` renamed "
        "`%fused_computation.10` (header and caller): reduce_divide_fusion counts 0 instead of 1"
    ),
)
def _rt15_reductions_prefix_lookup(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    def body(name):
        start = hlo_text.find("\n%" + name)
        if start < 0:
            start = hlo_text.find("\n" + name)
        if start < 0:
            return []
        end = hlo_text.find("\n}", start)
        return hlo_text[start + 1 : end].splitlines()[1:]

    def count(name, depth=0):
        n = 0
        for l in body(name):
            if _rt15_opcode(l) in ("reduce", "reduce-window"):
                n += 1
            if depth < 20:
                for c in re.findall(r"calls=%?([\w.\-]+)", l):
                    n += count(c, depth + 1)
        return n

    xla = []
    for l in _rt15_entry_lines(hlo_text):
        op = _rt15_opcode(l)
        if op == "fusion":
            xla.append(count(re.search(r"calls=%?([\w.\-]+)", l).group(1)))
        elif op in ("reduce", "reduce-window"):
            xla.append(1)
        elif op in ("dot", "custom-call"):
            xla.append(0)
    g = read_inductor(inductor_code)
    ind = [
        0
        if c.kind != "fused"
        else len(re.findall(r"^\s*[\w:<>]+\s+tmp_acc\d+\s*=", g.kernels.get(c.kernel, ""), re.M))
        for c in g.calls
    ]
    return {"xla": xla, "inductor": ind}


_RT15_VIEW_OPS = {
    "view",
    "reshape",
    "_unsafe_view",
    "as_strided",
    "permute",
    "t",
    "expand",
    "squeeze",
    "unsqueeze",
    "alias",
    "transpose",
    "slice",
    "select",
}


@wrong(
    "train_graphs",
    why=(
        "'forward'/'backward' count every kernel statement, a fallback whatever it computes "
        "(the README: also one that views a tensor, `torch.ops.aten.view.dtype`): this drops "
        "fallbacks whose ATen op is a view (view, reshape, permute...) as the stub drops "
        "`reinterpret_tensor` views; wrong on recorded/train_mlp_gelu.txt with a bare "
        "`buf99 = torch.ops.aten.view.dtype(tangents_1, torch.int32)` statement added to the "
        "backward's call (backward 6 instead of 7)"
    ),
)
def _rt15_train_graphs_view_fallbacks(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bw = next(g for g in graphs if g.is_backward)
    fw = next(g for g in graphs if not g.is_backward)

    def n(g):
        return sum(
            1
            for c in g.calls
            if not (c.kind == "fallback" and c.kernel.split(".")[3] in _RT15_VIEW_OPS)
        )

    saved = sum(1 for i in bw.inputs if not i.startswith("tangents_"))
    return {"forward": n(fw), "backward": n(bw), "saved": saved}


def _rt15_predict(input_shape, layers, biased_tiny):
    rows = 1
    for d in input_shape[:-1]:
        rows *= d
    feat = input_shape[-1]
    lib = fused = 0
    pending = False
    for out, bias, act in layers:
        if bias:
            tiny = biased_tiny(rows, feat, out)
        else:
            tiny = (rows == 1 and out == 1) or (
                feat == 1 and rows >= 2 and out >= 2 and rows + out <= 32
            )
        if tiny:
            pending = True
        else:
            if pending:
                fused += 1
            lib += 1
            pending = False
        if act != "none":
            pending = True
        feat = out
    if pending:
        fused += 1
    return {"library": lib, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why=(
        "a biased layer on one row is rewritten when the weight has one output or 'is at most "
        "16 x 16' (BOTH sides): this checks only the input side, in_features <= 16 (the loop "
        "the rewrite unrolls), so a wide-output layer on a short input is predicted rewritten; "
        "wrong on x[1,8] -> [(32, True, 'relu')] (weight 32 x 8: addmm + relu, library 1, "
        "fused 1; predicted library 0, fused 1)"
    ),
)
def _rt15_predict_inductor_kernels_input_side(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt15_predict(
        input_shape, layers, lambda rows, feat, out: rows == 1 and (out == 1 or feat <= 16)
    )


@wrong(
    "predict_inductor_kernels",
    why=(
        "a biased layer on one row is rewritten when the weight has one output or is at most "
        "16 x 16 -- the weight, not the input: this also demands the INPUT be a plain matrix "
        "(len(input_shape) == 2) before calling it one row, reading 'every leading dimension "
        "1' as 'the leading dimension is 1'; wrong on x[1,1,8] -> [(8, True, 'gelu')] (one "
        "row: rewritten, library 0, fused 1; predicted addmm + gelu, library 1, fused 1)"
    ),
)
def _rt15_predict_inductor_kernels_matrix_only(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    if len(input_shape) != 2:
        return _rt15_predict(input_shape, layers, lambda rows, feat, out: False)
    return _rt15_predict(
        input_shape,
        layers,
        lambda rows, feat, out: rows == 1 and (out == 1 or (feat <= 16 and out <= 16)),
    )
