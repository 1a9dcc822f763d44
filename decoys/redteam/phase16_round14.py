"""Red team, phase 16, round 14: wrong answers of kinds not tried in rounds 1-13."""

from __future__ import annotations

import ast
import math
import re

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor
from xla_inspect.parse import parse_hlo


def _rt14_label(kernel: str) -> str:
    if kernel.startswith("extern_kernels."):
        return kernel.split(".", 1)[1]
    if kernel.startswith("torch.ops.aten."):
        return kernel.split(".")[3]
    m = re.match(r"cpp_fused_?(.*?)_?\d+$", kernel)
    return m.group(1) if m else kernel


def _rt14_is_lib(kernel: str) -> bool:
    return not kernel.startswith("cpp_fused")


def _rt14_calls_of(ins) -> list[str]:
    m = re.search(r"calls=([^,\s]+(?:, *%[\w.\-]+)*)", ins.attributes_text or "")
    if not m:
        return []
    return [c.strip().lstrip("%") for c in m.group(1).split(",") if c.strip()]


def _rt14_reductions(module, comp: str) -> int:
    n = 0
    for ins in module.computation(comp).instructions:
        if ins.opcode in ("reduce", "reduce-window"):
            n += 1
        for c in _rt14_calls_of(ins):
            n += _rt14_reductions(module, c)
    return n


def _rt14_xla_reductions(hlo_text: str) -> list[int]:
    module = parse_hlo(hlo_text)
    out = []
    for ins in module.entry.instructions:
        if ins.opcode in ("fusion", "dot", "custom-call", "reduce", "reduce-window"):
            own = 1 if ins.opcode in ("reduce", "reduce-window") else 0
            out.append(own + sum(_rt14_reductions(module, c) for c in _rt14_calls_of(ins)))
    return out


def _rt14_rank(shape: str) -> int:
    m = re.match(r"\w+\[([^\]]*)\]", shape.strip())
    if not m:
        return -1
    inner = m.group(1).strip()
    return 0 if inner == "" else len(inner.split(","))


def _rt14_asserted_sizes(code: str) -> list[tuple[str, int]]:
    """(input, number of dimensions of its asserted size), plain and grouped asserts."""
    out = []
    for line in code.splitlines():
        s = line.strip()
        if s.startswith(("assert_size_stride(", "assert_size_stride_grouped(")):
            node = ast.parse(s).body[0].value
            if s.startswith("assert_size_stride_grouped("):
                for n, sz in zip(node.args[0].elts, node.args[1].elts):
                    out.append((n.id, len(sz.elts)))
            else:
                out.append((node.args[0].id, len(node.args[1].elts)))
    return out


def _rt14_inductor_home_of(code: str, bias: str | None) -> str:
    if bias is None:
        return "none"
    for c in read_inductor(code).calls:
        if bias in c.arguments:
            return "library" if _rt14_is_lib(c.kernel) else "fused"
    return "fused"


def _rt14_inductor_bias_home(code: str) -> str:
    ones = [n for n, d in _rt14_asserted_sizes(code) if d == 1]
    return _rt14_inductor_home_of(code, ones[0] if ones else None)


# ---------------------------------------------------------------- inductor_kernels


@wrong(
    "inductor_kernels",
    why=(
        "a fallback torch.ops.aten.<op>.<overload> is listed as '<op>', leading underscore "
        "included; this strips leading underscores ('private' op spelled as the public one): "
        "recorded/addmm_gelu.txt's torch.ops.aten._addmm_activation.default becomes "
        "'addmm_activation' instead of '_addmm_activation'"
    ),
)
def _rt14_inductor_kernels_fallback_lstrip(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        lab = _rt14_label(c.kernel)
        if c.kernel.startswith("torch.ops.aten."):
            lab = lab.lstrip("_")
        out.append(lab)
    return out


@wrong(
    "inductor_kernels",
    why=(
        "a fused kernel's label is its name without 'cpp_fused_' and the '_<n>' number only; "
        "this rstrips every trailing digit and underscore, eating digits that belong to an op "
        "name: cpp_fused_expm1_0 (torch.expm1) gives 'expm' instead of 'expm1', "
        "cpp_fused_atan2_0 gives 'atan'"
    ),
)
def _rt14_inductor_kernels_rstrip_digits(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kernel.startswith("cpp_fused"):
            out.append(c.kernel[len("cpp_fused") :].rstrip("_0123456789")[1:])
        else:
            out.append(_rt14_label(c.kernel))
    return out


# ---------------------------------------------------------------- kernel_census


@wrong(
    "kernel_census",
    why=(
        "XLA 'library' counts ENTRY dot/custom-call instructions and ENTRY kCustom fusions; "
        "this greps dot( and custom-call( in the whole module text (every computation) and "
        "adds the kCustom fusions, so the dot inside each kCustom fusion's computation counts "
        "a second time: the mlp_gelu JAX twin gets library 4 instead of 2"
    ),
)
def _rt14_kernel_census_grep_whole_module(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = len(re.findall(r"\s(?:dot|custom-call)\(", hlo_text))
    fused = 0
    for ins in module.entry.instructions:
        if ins.opcode == "fusion":
            if "kind=kCustom" in (ins.attributes_text or ""):
                lib += 1
            else:
                fused += 1
    calls = read_inductor(inductor_code).calls
    ilib = sum(1 for c in calls if _rt14_is_lib(c.kernel))
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": {"library": ilib, "fused": len(calls) - ilib},
    }


@wrong(
    "kernel_census",
    why=(
        "Inductor's 'fused' counts fused C++ kernel CALLS (a kernel called twice counts twice); "
        "this counts the `async_compile.cpp_pybinding` definitions the module holds that are "
        "called at least once (a set of names), so a kernel `call` runs twice counts once: "
        "two identical relu stretches sharing one cpp_fused_relu_0 give fused 1, not 2"
    ),
)
def _rt14_kernel_census_fused_called_set(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for ins in module.entry.instructions:
        if ins.opcode in ("dot", "custom-call"):
            lib += 1
        elif ins.opcode == "fusion":
            if "kind=kCustom" in (ins.attributes_text or ""):
                lib += 1
            else:
                fused += 1
    calls = read_inductor(inductor_code).calls
    ilib = sum(1 for c in calls if _rt14_is_lib(c.kernel))
    ifused = len({c.kernel for c in calls if not _rt14_is_lib(c.kernel)})
    return {"xla": {"library": lib, "fused": fused}, "inductor": {"library": ilib, "fused": ifused}}


# ---------------------------------------------------------------- bias_homes


@wrong(
    "bias_homes",
    why=(
        "XLA 'library' means the ENTRY kernel reading the bias holds the dot; this says "
        "'library' when that kernel also reads the weight parameter (rank-2 parameter operand: "
        "'it computes the product'), true on the recordings but not when XLA rewrote a tiny "
        "product as a multiply: tanh(x[1,1] @ w[1,4] + b[4]) compiles to ONE kLoop fusion "
        "fusion(b, w, x) with no dot anywhere -> must be 'fused', this says 'library'"
    ),
)
def _rt14_bias_homes_xla_reads_weight(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = {
        i.name: _rt14_rank(i.shape) for i in module.entry.instructions if i.opcode == "parameter"
    }
    bias = [n for n, r in params.items() if r == 1]
    xla = "none"
    if bias:
        xla = "fused"
        for ins in module.entry.instructions:
            if bias[0] in ins.operands:
                if ins.opcode in ("dot", "custom-call") or "kind=kCustom" in (
                    ins.attributes_text or ""
                ):
                    xla = "library"
                elif any(params.get(o, 0) >= 2 for o in ins.operands):
                    xla = "library"
                break
    return {"xla": xla, "inductor": _rt14_inductor_bias_home(inductor_code)}


@wrong(
    "bias_homes",
    why=(
        "the bias is the only rank-1 input; a scalar (f32[], size ()) is not a bias. This takes "
        "the first input of rank <= 1 ('not a matrix'), so a scalar scale becomes the bias: "
        "recorded/dense_relu_scaled.txt (relu(x @ w.T) * s, s a size-() scalar, no bias) gives "
        "inductor 'fused' and xla 'fused' instead of 'none' for both"
    ),
)
def _rt14_bias_homes_scalar_is_bias(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry.instructions
        if i.opcode == "parameter" and _rt14_rank(i.shape) in (0, 1)
    ]
    xla = "none"
    if params:
        b = params[0].name
        xla = "fused"
        for ins in module.entry.instructions:
            if b in ins.operands:
                if ins.opcode in ("dot", "custom-call") or "kind=kCustom" in (
                    ins.attributes_text or ""
                ):
                    xla = "library"
                break
    small = [n for n, d in _rt14_asserted_sizes(inductor_code) if d <= 1]
    return {
        "xla": xla,
        "inductor": _rt14_inductor_home_of(inductor_code, small[0] if small else None),
    }


# ---------------------------------------------------------------- reductions_per_kernel


@wrong(
    "reductions_per_kernel",
    why=(
        "one reduction per accumulator declaration; this counts an IndexValue<...> accumulator "
        "(argmax/argmin) as two reductions, a value and an index: recorded/row_stats.txt's "
        "second kernel (sum + argmax) gives 3 instead of 2"
    ),
)
def _rt14_reductions_indexvalue_two(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    g = read_inductor(inductor_code)
    src = inductor_code
    ind = []
    for c in g.calls:
        if not c.kernel.startswith("cpp_fused"):
            ind.append(0)
            continue
        body = g.kernels.get(c.kernel, "") if hasattr(g.kernels, "get") else ""
        body = body if isinstance(body, str) else str(body)
        if not body:
            m = re.search(
                re.escape(c.kernel) + r" = async_compile\.cpp_pybinding\(.*?'''(.*?)'''", src, re.S
            )
            body = m.group(1) if m else ""
        n = 0
        for d in re.finditer(r"^[ \t]*([A-Za-z_][^=;()]*?)[ \t]+tmp_acc\d+[ \t]*=", body, re.M):
            n += 2 if "IndexValue" in d.group(1) else 1
        ind.append(n)
    return {"xla": _rt14_xla_reductions(hlo_text), "inductor": ind}


# ---------------------------------------------------------------- train_graphs


@wrong(
    "train_graphs",
    why=(
        "'saved' counts the backward's non-tangent inputs; this counts the forward's outputs "
        "after the first one that are not inputs of the forward (a primal returned again is "
        "'not new'), but the forward hands primals back to the backward as saved values too "
        "(primals_1 for the weight of a matmul's gradient): on train_mlp_gelu saved is too small"
    ),
)
def _rt14_train_graphs_saved_new_only(codes: list[str]) -> dict[str, int]:
    gs = [read_inductor(c) for c in codes]
    bwd = [g for g in gs if any(str(i).startswith("tangents_") for i in g.inputs)][0]
    fwd = [g for g in gs if g is not bwd][0]
    fin = {str(i) for i in fwd.inputs}
    saved = [o for o in list(fwd.outputs)[1:] if str(o) not in fin and o is not None]
    return {"forward": len(fwd.calls), "backward": len(bwd.calls), "saved": len(saved)}


# ---------------------------------------------------------------- predict_inductor_kernels


def _rt14_tiny(rows: int, fin: int, fout: int, bias: bool, one_feature_rule) -> bool:
    if bias:
        return rows == 1 and (fout == 1 or (fin <= 16 and fout <= 16))
    return (rows == 1 and fout == 1) or one_feature_rule(rows, fin, fout)


def _rt14_predict(input_shape, layers, one_feature_rule):
    rows = math.prod(input_shape[:-1])
    fin = input_shape[-1]
    lib = fused = 0
    pending = False
    for fout, bias, act in layers:
        if _rt14_tiny(rows, fin, fout, bias, one_feature_rule):
            pending = True
        else:
            if pending:
                fused += 1
                pending = False
            lib += 1
        if act != "none":
            pending = True
        fin = fout
    if pending:
        fused += 1
    return {"library": lib, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why=(
        "no-bias one-feature rewrite needs at least TWO rows and two outputs with rows+outputs "
        "<= 32; this drops the two-rows/two-outputs conditions (one feature, rows+outputs<=32), "
        "so x[1,1] -> linear(1->6, no bias) is predicted rewritten (library 0, fused 1) while "
        "the README says it stays mm (library 1, fused 0)"
    ),
)
def _rt14_predict_one_feature_any_rows(input_shape, layers):
    return _rt14_predict(input_shape, layers, lambda r, i, o: i == 1 and r + o <= 32)


@wrong(
    "predict_inductor_kernels",
    why=(
        "rows are all leading dimensions together ('one row' = every leading dimension 1); "
        "this reads a leading 1 as 'batch of one' and treats the input as one row: "
        "x[1,3,8] -> linear(8->8, bias) + relu has 3 rows, so addmm stays a library call "
        "(library 1, fused 1); this predicts the tiny rewrite (library 0, fused 1)"
    ),
)
def _rt14_predict_batch_one_is_one_row(input_shape, layers):
    shape = tuple(input_shape)
    fake = (1, shape[-1]) if shape[0] == 1 else shape
    return _rt14_predict(fake, layers, lambda r, i, o: i == 1 and r >= 2 and o >= 2 and r + o <= 32)


# ---------------------------------------------------------------- inference_call


@wrong(
    "inference_call",
    why=(
        "Inductor must compile an inference graph (no primals_<n> inputs) also when x requires "
        "grad; this disables grad only for the module's parameters' sake by running under "
        "torch.no_grad() when x does NOT require grad, and otherwise detaches x and flips "
        "compiled.training off: for x with requires_grad=True and a module in train mode, "
        "the parameters still require grad under grad mode, so AOTAutograd makes a training "
        "graph (forward with primals_<n> inputs that saves activations)"
    ),
)
def _rt14_inference_call_detach_and_eval(compiled, x):
    import torch

    if not x.requires_grad:
        with torch.no_grad():
            return compiled(x)
    was = compiled.training
    compiled.eval()
    try:
        return compiled(x.detach())
    finally:
        compiled.train(was)
