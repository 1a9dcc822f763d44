"""Red team, phase 16, round 13: wrong answers of kinds not tried in rounds 1-12."""

from __future__ import annotations

import ast
import re

from kata_harness.decoys import wrong
from xla_inspect.inductor import read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_RT13_KERNEL_OPS = ("fusion", "dot", "custom-call", "reduce", "reduce-window")


def _rt13_rank(shape: str) -> int:
    m = re.match(r"\w+\[([^\]]*)\]", shape.strip())
    if not m:
        return -1
    inner = m.group(1).strip()
    return 0 if inner == "" else len(inner.split(","))


def _rt13_reaches(module, comp_name: str, pred, seen=None) -> bool:
    seen = set() if seen is None else seen
    if comp_name in seen:
        return False
    seen.add(comp_name)
    comp = module.computation(comp_name)
    for ins in comp.instructions:
        if pred(ins):
            return True
        calls = ins.attributes.get("calls") if hasattr(ins.attributes, "get") else None  # noqa: F841
        for c in _rt13_calls(ins):
            if _rt13_reaches(module, c, pred, seen):
                return True
    return False


def _rt13_calls(ins) -> list[str]:
    m = re.search(r"calls=([^,\s]+(?:, *%[\w.\-]+)*)", ins.attributes_text or "")
    if not m:
        return []
    return [c.strip().lstrip("%") for c in m.group(1).split(",") if c.strip()]


def _rt13_count_reductions(module, comp_name: str) -> int:
    comp = module.computation(comp_name)
    n = 0
    for ins in comp.instructions:
        if ins.opcode in ("reduce", "reduce-window"):
            n += 1
        for c in _rt13_calls(ins):
            n += _rt13_count_reductions(module, c)
    return n


def _rt13_inductor_reductions(code: str) -> list[int]:
    g = read_inductor(code)
    return [reduction_count(g.kernels[c.kernel]) if c.kind == "fused" else 0 for c in g.calls]


def _rt13_inductor_bias(code: str) -> str | None:
    """The input whose asserted size has one dimension (plain or grouped assert)."""
    for line in code.splitlines():
        s = line.strip()
        if s.startswith("assert_size_stride_grouped("):
            node = ast.parse(s).body[0].value
            names, sizes = node.args[0], node.args[1]
            for n, sz in zip(names.elts, sizes.elts):
                if isinstance(sz, ast.Tuple) and len(sz.elts) == 1:
                    return n.id
        elif s.startswith("assert_size_stride("):
            node = ast.parse(s).body[0].value
            sz = node.args[1]
            if isinstance(sz, ast.Tuple) and len(sz.elts) == 1:
                return node.args[0].id
    return None


def _rt13_inductor_home(code: str, is_library) -> str:
    bias = _rt13_inductor_bias(code)
    if bias is None:
        return "none"
    for c in read_inductor(code).calls:
        if bias in c.arguments:
            return "library" if is_library(c) else "fused"
    return "fused"


def _rt13_xla_home(hlo_text: str) -> str:
    module = parse_hlo(hlo_text)
    entry = module.entry
    params = [i for i in entry.instructions if i.opcode == "parameter" and _rt13_rank(i.shape) == 1]
    if not params:
        return "none"
    bias = params[0].name
    for ins in entry.instructions:
        if bias not in ins.operands:
            continue
        if ins.opcode in ("dot", "custom-call"):
            return "library"
        if ins.opcode == "fusion":
            if any(_rt13_reaches(module, c, lambda i: i.opcode == "dot") for c in _rt13_calls(ins)):
                return "library"
            return "fused"
    return "fused"


# ---------------------------------------------------------------- reductions_per_kernel


@wrong(
    "reductions_per_kernel",
    why=(
        "XLA kernels are ENTRY instructions whose OPCODE is fusion/dot/custom-call/reduce/"
        "reduce-window; this greps each ENTRY line for those words, so the metadata "
        '(op_name="jit(f)/reduce") of a get-tuple-element or bitcast makes it a kernel: on the '
        "JAX twin of jnp.argmax(x, 1), the ENTRY `%reduce.1 = s32[8] get-tuple-element(...), "
        "metadata={op_name=\"jit(<lambda>)/reduce\"}` adds a spurious 0 entry to 'xla'"
    ),
)
def _rt13_reductions_line_grep(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    lines = hlo_text.splitlines()
    out = []
    for ins in module.entry.instructions:
        line = lines[ins.line_no - 1] if 0 < ins.line_no <= len(lines) else ""
        rhs = line.split("=", 1)[1] if "=" in line else line
        if any(
            re.search(r"(?<![\w-])" + re.escape(op) + r"(?![\w-])", rhs) for op in _RT13_KERNEL_OPS
        ):
            own = 1 if ins.opcode in ("reduce", "reduce-window") else 0
            out.append(own + sum(_rt13_count_reductions(module, c) for c in _rt13_calls(ins)))
    return {"xla": out, "inductor": _rt13_inductor_reductions(inductor_code)}


@wrong(
    "reductions_per_kernel",
    why=(
        "XLA: one entry per ENTRY kernel 'in ENTRY order' (the order the ENTRY lists them); this "
        "lists them in dependency order, a post-order walk of the operands from ROOT (what "
        "'the order they run' means to a scheduler): on the JAX twin of row_stats "
        "(var, mean, argmax of x[...]) ENTRY order gives [1, 1, 1, 0, 0, 1, 1] but this gives "
        "[1, 1, 0, 1, 1, 0, 1] (the argmax fusion, first in ENTRY, comes last from ROOT)"
    ),
)
def _rt13_reductions_dependency_order(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    module = parse_hlo(hlo_text)
    entry = module.entry
    by = {i.name: i for i in entry.instructions}
    seen: set[str] = set()
    order: list[str] = []
    stack = [(entry.root.name, False)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if n in seen or n not in by:
            continue
        seen.add(n)
        stack.append((n, True))
        for o in reversed(by[n].operands):
            if o not in seen:
                stack.append((o, False))
    for i in entry.instructions:  # anything ROOT does not reach, at the end
        if i.name not in seen:
            order.append(i.name)
    xla = []
    for n in order:
        ins = by[n]
        if ins.opcode in _RT13_KERNEL_OPS:
            own = 1 if ins.opcode in ("reduce", "reduce-window") else 0
            xla.append(own + sum(_rt13_count_reductions(module, c) for c in _rt13_calls(ins)))
    return {"xla": xla, "inductor": _rt13_inductor_reductions(inductor_code)}


# ---------------------------------------------------------------- kernel_census


@wrong(
    "kernel_census",
    why=(
        "'Other ENTRY instructions are not counted': only fusion, dot, custom-call (and "
        "reduce/reduce-window, not in either key) are kernels; this counts as 'fused' every "
        "ENTRY instruction that calls a computation (fusion, but also sort, while, "
        "conditional, call, scatter, map), taking 'calls a computation' for 'is compiled code': "
        "on the twin of jnp.sort(x @ w) the ENTRY `sort(...), to_apply=` adds one to xla.fused"
    ),
)
def _rt13_census_calls_a_computation(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for ins in module.entry.instructions:
        if ins.opcode in ("dot", "custom-call"):
            lib += 1
        elif ins.opcode == "fusion" and "kind=kCustom" in (ins.attributes_text or ""):
            lib += 1
        elif ins.opcode in ("reduce", "reduce-window", "all-reduce"):
            continue
        elif re.search(
            r"\b(calls|to_apply|body|condition|branch_computations|true_computation)=",
            ins.attributes_text or "",
        ):
            fused += 1
    g = read_inductor(inductor_code)
    ilib = sum(1 for c in g.calls if c.kind in ("extern", "fallback"))
    ifus = sum(1 for c in g.calls if c.kind == "fused")
    return {"xla": {"library": lib, "fused": fused}, "inductor": {"library": ilib, "fused": ifus}}


@wrong(
    "kernel_census",
    why=(
        "XLA 'library' counts ENTRY dot/custom-call and the fusions of kind=kCustom; 'fused' "
        "EVERY other ENTRY fusion; this goes by content instead of kind: any ENTRY fusion whose "
        "computations hold a `dot` is a library GEMM. On the JAX twin of dense_relu_row "
        "(x[1,8], w[8,8], b[8]) XLA:CPU puts the dot in a kind=kOutput `dot_add_fusion`: "
        "correct xla = {library 0, fused 3}, this says {library 1, fused 2}"
    ),
)
def _rt13_census_dot_inside_is_library(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for ins in module.entry.instructions:
        if ins.opcode in ("dot", "custom-call"):
            lib += 1
        elif ins.opcode == "fusion":
            kcustom = "kind=kCustom" in (ins.attributes_text or "")
            holds_dot = any(
                _rt13_reaches(module, c, lambda i: i.opcode in ("dot", "custom-call"))
                for c in _rt13_calls(ins)
            )
            if kcustom or holds_dot:
                lib += 1
            else:
                fused += 1
    g = read_inductor(inductor_code)
    ilib = sum(1 for c in g.calls if c.kind in ("extern", "fallback"))
    ifus = sum(1 for c in g.calls if c.kind == "fused")
    return {"xla": {"library": lib, "fused": fused}, "inductor": {"library": ilib, "fused": ifus}}


# ---------------------------------------------------------------- bias_homes


@wrong(
    "bias_homes",
    why=(
        "Inductor 'library' only when the bias is an argument of a LIBRARY CALL or FALLBACK; "
        "this also answers 'library' when the fused C++ kernel reading it is named after addmm "
        "(a tiny product Inductor rewrote and fused, `cpp_fused_addmm_relu_t_0`): on "
        "dense_relu on x[1,8], w[8,8], b[8] (recorded/dense_relu_row.txt) it says "
        "inductor='library' where the bias sits in a fused kernel ('fused')"
    ),
)
def _rt13_bias_addmm_named_fusion(hlo_text: str, inductor_code: str) -> dict[str, str]:
    def is_lib(c) -> bool:
        if c.kind in ("extern", "fallback"):
            return True
        return bool(re.search(r"(^|_)(addmm|mm|linear)(_|$)", c.kernel[len("cpp_fused") :]))

    return {"xla": _rt13_xla_home(hlo_text), "inductor": _rt13_inductor_home(inductor_code, is_lib)}


@wrong(
    "bias_homes",
    why=(
        "the bias is the only rank-1 argument, a dynamic compile writing its size as a SYMBOL "
        "`(s1, )`; this reads sizes with a regex for integers only (`\\((\\d+), \\)`), so on "
        "a dynamic-shape (mark_dynamic / dynamic=True) compile of dense_relu it finds no bias "
        "and answers inductor='none' instead of 'library'"
    ),
)
def _rt13_bias_integer_sizes_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    bias = None
    for line in inductor_code.splitlines():
        s = line.strip()
        m = re.match(r"assert_size_stride\((\w+), \((\d+), \)", s)
        if m:
            bias = m.group(1)
            break
        if s.startswith("assert_size_stride_grouped("):
            node = ast.parse(s).body[0].value
            for n, sz in zip(node.args[0].elts, node.args[1].elts):
                if (
                    isinstance(sz, ast.Tuple)
                    and len(sz.elts) == 1
                    and isinstance(sz.elts[0], ast.Constant)
                ):
                    bias = n.id
                    break
            if bias:
                break
    if bias is None:
        ind = "none"
    else:
        ind = "fused"
        for c in read_inductor(inductor_code).calls:
            if bias in c.arguments:
                ind = "library" if c.kind in ("extern", "fallback") else "fused"
                break
    return {"xla": _rt13_xla_home(hlo_text), "inductor": ind}


# ---------------------------------------------------------------- inductor_kernels


@wrong(
    "inductor_kernels",
    why=(
        "a library call `extern_kernels.<name>(...)` is named `<name>` exactly; this names "
        "every library call and fallback after the ATen op in the comment Inductor writes "
        "above it (`# ... Original ATen: [aten.t, aten.addmm]` -> its last op), falling back "
        "to the callee only with no comment: a comment lists the ops of the whole node, so on "
        "recorded/mlp_s.txt `extern_kernels.addmm` under `Original ATen: [aten.addmm, aten.t]` "
        "comes out 't', on recorded/dense_linear.txt (`[aten.permute, aten.add]`) 'add' and on "
        "recorded/cholesky.txt 'add', all instead of 'addmm'"
    ),
)
def _rt13_kernels_named_from_comment(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kind == "fused":
            name = c.kernel[len("cpp_fused_") :] if c.kernel.startswith("cpp_fused_") else ""
            name = re.sub(r"_?\d+$", "", name)
            out.append(name)
        elif c.aten:
            out.append(c.aten[-1].split(".")[-1])
        elif c.kind == "extern":
            out.append(c.kernel.split(".")[-1])
        else:
            out.append(c.kernel.split(".")[-2])
    return out


# ---------------------------------------------------------------- predict_inductor_kernels


def _rt13_predict(input_shape, layers, rows_of) -> dict[str, int]:
    rows = rows_of(input_shape)
    fin = input_shape[-1]
    lib = fused = 0
    pending = False
    for out, bias, act in layers:
        if bias:
            tiny = rows == 1 and (out == 1 or (out <= 16 and fin <= 16))
        else:
            tiny = (rows == 1 and out == 1) or (
                fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32
            )
        if tiny:
            pending = True
        else:
            if pending:
                fused += 1
                pending = False
            lib += 1
        if act != "none":
            pending = True
        fin = out
    if pending:
        fused += 1
    return {"library": lib, "fused": fused}


@wrong(
    "predict_inductor_kernels",
    why=(
        "a linear layer's rows are all leading dimensions multiplied; this takes the LAST "
        "leading dimension (input_shape[-2], the 'sequence' axis of a [batch, seq, feat] "
        "input) as the rows: x[3,1,8] -> [(8, True, 'relu')] is 3 rows (addmm + relu: "
        "library 1, fused 1) but this sees one row and rewrites the product (library 0)"
    ),
)
def _rt13_predict_rows_last_leading(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt13_predict(input_shape, layers, lambda s: s[-2])


@wrong(
    "predict_inductor_kernels",
    why=(
        "every tiny-product rule reads the layer's own weight [out, in]; this takes the "
        "16 x 16 bound of a biased one-row layer as a bound on the OUTPUT only (in_features "
        "unchecked, 'a small layer'): x[1,64] -> [(8, True, 'relu')] (weight 8 x 64) stays "
        "addmm + relu (library 1, fused 1) but this rewrites it (library 0, fused 1)"
    ),
)
def _rt13_predict_bias_bound_on_outputs(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    rows = 1
    for d in input_shape[:-1]:
        rows *= d
    fin = input_shape[-1]
    lib = fused = 0
    pending = False
    for out, bias, act in layers:
        if bias:
            tiny = rows == 1 and out <= 16
        else:
            tiny = (rows == 1 and out == 1) or (
                fin == 1 and rows >= 2 and out >= 2 and rows + out <= 32
            )
        if tiny:
            pending = True
        else:
            if pending:
                fused += 1
                pending = False
            lib += 1
        if act != "none":
            pending = True
        fin = out
    if pending:
        fused += 1
    return {"library": lib, "fused": fused}


# ---------------------------------------------------------------- train_graphs


@wrong(
    "train_graphs",
    why=(
        "'saved' = the backward's inputs other than tangents_<n>; this counts the backward "
        "inputs named in its assert_size_stride lines (minus tangents), missing inputs "
        "Inductor does not assert (size symbols and inputs only passed on): for "
        "gelu(x @ w.t() + b).pow(2).mean() compiled with dynamic=True on x[12,8], w[6,8], b[6] "
        "the backward takes (primals_1, primals_4, primals_2, primals_5, primals_6, mm, "
        "tangents_1): saved 6, this says 3 (only mm, primals_5, primals_6 are asserted)"
    ),
)
def _rt13_train_saved_from_asserts(codes: list[str]) -> dict[str, int]:
    graphs = [(c, read_inductor(c)) for c in codes]
    fwd = bwd = None
    for c, g in graphs:
        if any(n.startswith("tangents_") for n in g.inputs):
            bwd = (c, g)
        else:
            fwd = (c, g)
    if bwd is None or fwd is None:
        fwd, bwd = graphs[0], graphs[-1]
    asserted = set()
    for line in bwd[0].splitlines():
        s = line.strip()
        if s.startswith("assert_size_stride_grouped("):
            node = ast.parse(s).body[0].value
            asserted.update(n.id for n in node.args[0].elts if isinstance(n, ast.Name))
        elif s.startswith("assert_size_stride("):
            node = ast.parse(s).body[0].value
            if isinstance(node.args[0], ast.Name):
                asserted.add(node.args[0].id)
    saved = sum(1 for n in asserted if not n.startswith("tangents_"))
    return {"forward": len(fwd[1].calls), "backward": len(bwd[1].calls), "saved": saved}
