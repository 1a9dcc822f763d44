"""Red team, phase 16, round 7: wrong answers of kinds the earlier rounds did not write.

Each one shares a correct base (the `_rt7_*` helpers below) and changes one rule:
a kernel regex that needs an operator in the name, a fallback that must be `.default`,
a kCustom fusion recognised by its instruction name, the bias found by its parameter name or
by the `get_args()` benchmark block, a kernel's C++ found by a prefix search, the backward told apart by its `None` gradients,
"at most 16 x 16" read as an area, and two inference_call shortcuts (only in train mode, only
on the first call).
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from kata_harness.decoys import wrong

_RT7_FUSED = "cpp_fused_"
_RT7_EXTERN = "extern_kernels."
_RT7_FALLBACK = "torch.ops.aten."


# ---- shared helpers: a faithful reading of `call` -------------------------------------------


def _rt7_dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _rt7_dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _rt7_find_call(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item
    return None


def _rt7_is_kernel(name: str) -> bool:
    return (
        name.startswith(_RT7_FUSED)
        or name.startswith(_RT7_EXTERN)
        or name.startswith(_RT7_FALLBACK)
    )


def _rt7_statement_calls(stmt: ast.stmt) -> list[ast.Call]:
    """The kernel call one simple statement makes (expression or assignment)."""
    value = None
    if isinstance(stmt, ast.Expr):
        value = stmt.value
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        value = stmt.value
    if isinstance(value, ast.Call):
        name = _rt7_dotted(value.func)
        if name is not None and _rt7_is_kernel(name):
            return [value]
    return []


def _rt7_walk(body: list[ast.stmt], out: list[ast.Call]) -> None:
    for stmt in body:
        out.extend(_rt7_statement_calls(stmt))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "handlers", "orelse", "finalbody"):
            child = getattr(stmt, field, None)
            if not child:
                continue
            for item in child:
                if isinstance(item, ast.ExceptHandler):
                    _rt7_walk(item.body, out)
            _rt7_walk([c for c in child if isinstance(c, ast.stmt)], out)


def _rt7_kernel_calls(code: str) -> list[ast.Call]:
    tree = ast.parse(code)
    fn = _rt7_find_call(tree)
    out: list[ast.Call] = []
    if fn is not None:
        _rt7_walk(fn.body, out)
    return out


def _rt7_label(name: str) -> str:
    if name.startswith(_RT7_EXTERN):
        return name[len(_RT7_EXTERN) :]
    if name.startswith(_RT7_FALLBACK):
        return name[len(_RT7_FALLBACK) :].split(".")[0]
    rest = name[len(_RT7_FUSED) :]
    return re.sub(r"_?\d+$", "", rest) if rest[:1].isdigit() is False else ""


def _rt7_call_inputs(code: str) -> list[str]:
    tree = ast.parse(code)
    fn = _rt7_find_call(tree)
    if fn is None:
        return []
    for stmt in ast.walk(fn):
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id == "args"
        ):
            target = stmt.targets[0]
            if isinstance(target, (ast.Tuple, ast.List)):
                return [e.id for e in target.elts if isinstance(e, ast.Name)]
            if isinstance(target, ast.Name):
                return [target.id]
    return []


def _rt7_asserted_sizes(code: str) -> dict[str, tuple]:
    """name -> asserted size, from assert_size_stride and assert_size_stride_grouped."""
    tree = ast.parse(code)
    fn = _rt7_find_call(tree)
    sizes: dict[str, tuple] = {}
    if fn is None:
        return sizes
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        name = _rt7_dotted(node.func)
        try:
            if name == "assert_size_stride":
                sizes[node.args[0].id] = ast.literal_eval(node.args[1])  # type: ignore[attr-defined]
            elif name == "assert_size_stride_grouped":
                names = [e.id for e in node.args[0].elts]  # type: ignore[attr-defined]
                for n, s in zip(names, ast.literal_eval(node.args[1])):
                    sizes[n] = s
        except (AttributeError, ValueError, IndexError):
            continue
    return sizes


def _rt7_arg_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# ---- HLO helpers ----------------------------------------------------------------------------

_RT7_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_RT7_OPCODE = re.compile(
    r"^(?:\([^=]*?\)|[a-z0-9]+\[[^\]]*\](?:\{[^}]*\})?|token\[\]|[a-z0-9]+\[\])\s+([a-z\-]+)\("
)


def _rt7_computations(hlo: str) -> tuple[dict[str, list[str]], str | None]:
    comps: dict[str, list[str]] = {}
    entry = None
    current = None
    for line in hlo.splitlines():
        head = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->.*\{\s*$", line)
        if head and not line.startswith(" "):
            current = head.group(2)
            comps[current] = []
            if head.group(1):
                entry = current
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is not None and line.strip():
            comps[current].append(line)
    return comps, entry


def _rt7_instr(line: str) -> tuple[str, str, str] | None:
    m = _RT7_INSTR.match(line)
    if not m:
        return None
    rest = m.group(2)
    op = _RT7_OPCODE.match(rest)
    if not op:
        return None
    return m.group(1), op.group(1), rest


# ---- inductor_kernels -----------------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="'`\"\"` for `cpp_fused_0`, a kernel that fuses no named operator': reads each fused "
    "kernel with the regex `cpp_fused_(\\w+)_(\\d+)`, which needs an operator between prefix "
    "and number, so a bare `cpp_fused_0(...)` call is skipped altogether; wrong on "
    "recorded/train_conv_relu.txt's forward (the layout copy cpp_fused_0 before the "
    "convolution: ['convolution', 'mean_pow_relu_sub'] instead of ['', 'convolution', ...])",
)
def _rt7_inductor_kernels_needs_an_op(code: str) -> list[str]:
    out: list[str] = []
    for call in _rt7_kernel_calls(code):
        name = _rt7_dotted(call.func) or ""
        if name.startswith(_RT7_FUSED):
            m = re.fullmatch(r"cpp_fused_(\w+)_(\d+)", name)
            if m is None:
                continue
            out.append(m.group(1))
        else:
            out.append(_rt7_label(name))
    return out


# ---- kernel_census --------------------------------------------------------------------------


def _rt7_inductor_census(code: str, fallback_ok) -> dict[str, int]:
    library = fused = 0
    for call in _rt7_kernel_calls(code):
        name = _rt7_dotted(call.func) or ""
        if name.startswith(_RT7_FUSED):
            fused += 1
        elif name.startswith(_RT7_EXTERN):
            library += 1
        elif fallback_ok(name):
            library += 1
    return {"library": library, "fused": fused}


def _rt7_xla_census(hlo: str, is_library_fusion) -> dict[str, int]:
    comps, entry = _rt7_computations(hlo)
    library = fused = 0
    for line in comps.get(entry or "", []):
        parsed = _rt7_instr(line)
        if parsed is None:
            continue
        name, opcode, rest = parsed
        if opcode in ("dot", "custom-call"):
            library += 1
        elif opcode == "fusion":
            if is_library_fusion(name, rest):
                library += 1
            else:
                fused += 1
    return {"library": library, "fused": fused}


@wrong(
    "kernel_census",
    why="XLA 'library' counts the ENTRY fusions of kind=kCustom: this recognises them by the "
    "instruction's NAME (`ynn_fusion`, or a name holding gemm/dot/matmul/custom/onednn) rather "
    "than by `kind=kCustom`; wrong on the JAX twin of dense_relu with its `%ynn_fusion` "
    "renamed `%fusion.7` (same module, library 0 and fused 2 instead of 1 and 1), and on a "
    "kLoop fusion XLA names after a dot it follows (`%dot_add_fusion`: counted as library)",
)
def _rt7_kernel_census_library_by_name(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    def by_name(name: str, _rest: str) -> bool:
        return bool(re.search(r"ynn|gemm|dot|matmul|custom|onednn|xnn", name, re.IGNORECASE))

    return {
        "xla": _rt7_xla_census(hlo_text, by_name),
        "inductor": _rt7_inductor_census(inductor_code, lambda n: n.startswith(_RT7_FALLBACK)),
    }


@wrong(
    "kernel_census",
    why="Inductor 'library' counts every fallback `torch.ops.aten.<op>.<overload>(...)`: this "
    "matches fallbacks only with the `.default` overload (as `_addmm_activation.default` in "
    "recorded/addmm_gelu.txt), so `torch.ops.aten.index.Tensor(...)` or any other overload "
    "is counted nowhere; wrong on a graph calling `buf2 = torch.ops.aten.index.Tensor(buf1, "
    "[rows])` (handwritten_train's forward: library 1 instead of 2)",
)
def _rt7_kernel_census_default_overload_only(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    def kcustom(_name: str, rest: str) -> bool:
        return "kind=kCustom" in rest

    return {
        "xla": _rt7_xla_census(hlo_text, kcustom),
        "inductor": _rt7_inductor_census(
            inductor_code, lambda n: n.startswith(_RT7_FALLBACK) and n.endswith(".default")
        ),
    }


# ---- bias_homes -----------------------------------------------------------------------------


def _rt7_inductor_bias_home(code: str, bias: str | None) -> str:
    if bias is None:
        return "none"
    for call in _rt7_kernel_calls(code):
        name = _rt7_dotted(call.func) or ""
        if bias in _rt7_arg_names(call):
            return "fused" if name.startswith(_RT7_FUSED) else "library"
    return "fused"


def _rt7_inductor_bias_by_assert(code: str) -> str | None:
    ones = [n for n, s in _rt7_asserted_sizes(code).items() if len(s) == 1]
    return ones[0] if len(ones) == 1 else None


def _rt7_xla_bias_home(hlo: str, bias: str | None) -> str:
    if bias is None:
        return "none"
    comps, entry = _rt7_computations(hlo)

    def holds_dot(comp: str, seen: set[str]) -> bool:
        if comp in seen or comp not in comps:
            return False
        seen.add(comp)
        for line in comps[comp]:
            parsed = _rt7_instr(line)
            if parsed and parsed[1] == "dot":
                return True
            for callee in re.findall(r"calls=%?([\w.\-]+)", line):
                if holds_dot(callee, seen):
                    return True
        return False

    for line in comps.get(entry or "", []):
        parsed = _rt7_instr(line)
        if parsed is None or parsed[1] == "parameter":
            continue
        operands = re.findall(r"%([\w.\-]+)", parsed[2].split(")")[0])
        if bias not in operands:
            continue
        if parsed[1] in ("dot", "custom-call"):
            return "library"
        if parsed[1] == "fusion":
            callee = re.search(r"calls=%?([\w.\-]+)", parsed[2])
            if callee and holds_dot(callee.group(1), set()):
                return "library"
            return "fused"
    return "fused"


def _rt7_xla_bias_by_rank(hlo: str) -> str | None:
    comps, entry = _rt7_computations(hlo)
    found = []
    for line in comps.get(entry or "", []):
        parsed = _rt7_instr(line)
        if parsed and parsed[1] == "parameter":
            shape = re.match(r"[a-z0-9]+\[([^\]]*)\]", parsed[2])
            if shape and shape.group(1) and "," not in shape.group(1):
                found.append(parsed[0])
    return found[0] if len(found) == 1 else None


@wrong(
    "bias_homes",
    why="the bias is the only rank-1 ENTRY parameter: this finds it by NAME, the parameter "
    'JAX calls `b` (`%b.1 = f32[24]{0} parameter(2), metadata={op_name="b"}` in every twin '
    "of programs.py), and answers 'none' when no parameter is so named; wrong on the same "
    "dense layer written `def f(x, w, bias): return jax.nn.relu(x @ w.T + bias)` "
    "(xla 'none' instead of 'fused'), or any HLO whose parameters are renamed",
)
def _rt7_bias_homes_param_named_b(hlo_text: str, inductor_code: str) -> dict[str, str]:
    comps, entry = _rt7_computations(hlo_text)
    bias = None
    for line in comps.get(entry or "", []):
        parsed = _rt7_instr(line)
        if parsed and parsed[1] == "parameter":
            if re.fullmatch(r"b(\.\d+)?", parsed[0]) or 'op_name="b"' in parsed[2]:
                bias = parsed[0]
    return {
        "xla": _rt7_xla_bias_home(hlo_text, bias),
        "inductor": _rt7_inductor_bias_home(
            inductor_code, _rt7_inductor_bias_by_assert(inductor_code)
        ),
    }


@wrong(
    "bias_homes",
    why="in `call`, the bias is the only input whose `assert_size_stride` size has one "
    "dimension: this reads the sizes from the `get_args()` benchmark block at the foot of the "
    "module (`arg2_1 = rand_strided((24, ), ...)`, tidier than the grouped asserts) and "
    "answers 'none' when there is none; wrong on any module without `get_args` (a text "
    "written by hand, or with its benchmark harness cut: inductor 'none' instead of "
    "'library' for recorded/dense_relu.txt so cut)",
)
def _rt7_bias_homes_sizes_from_get_args(hlo_text: str, inductor_code: str) -> dict[str, str]:
    ones = re.findall(r"(\w+)\s*=\s*rand_strided\(\((\d+),\s*\)", inductor_code)
    names = sorted({n for n, _ in ones})
    bias = names[0] if len(names) == 1 else None
    return {
        "xla": _rt7_xla_bias_home(hlo_text, _rt7_xla_bias_by_rank(hlo_text)),
        "inductor": _rt7_inductor_bias_home(inductor_code, bias),
    }


# ---- reductions_per_kernel ------------------------------------------------------------------

_RT7_ACC = re.compile(r"^\s*[A-Za-z_][\w:<>, ]*?\s+tmp_acc\d+\s*=\s*[^;]+;", re.MULTILINE)


def _rt7_xla_reductions(hlo: str) -> list[int]:
    comps, entry = _rt7_computations(hlo)

    def count(comp: str, seen: set[str]) -> int:
        if comp in seen or comp not in comps:
            return 0
        seen.add(comp)
        total = 0
        for line in comps[comp]:
            parsed = _rt7_instr(line)
            if parsed is None:
                continue
            if parsed[1] in ("reduce", "reduce-window"):
                total += 1
            for callee in re.findall(r"calls=%?([\w.\-]+)", parsed[2]):
                total += count(callee, seen)
        return total

    out = []
    for line in comps.get(entry or "", []):
        parsed = _rt7_instr(line)
        if parsed is None:
            continue
        opcode = parsed[1]
        if opcode in ("reduce", "reduce-window"):
            out.append(1)
        elif opcode in ("dot", "custom-call"):
            out.append(0)
        elif opcode == "fusion":
            callee = re.search(r"calls=%?([\w.\-]+)", parsed[2])
            out.append(count(callee.group(1), set()) if callee else 0)
    return out


@wrong(
    "reductions_per_kernel",
    why="Inductor: one count per accumulator of the kernel's OWN C++ source: this finds the "
    "source with `code.find(name)`, the first place the kernel's name occurs, which for "
    "`cpp_fused_sum_1` is the definition of `cpp_fused_sum_10` when that one comes first "
    "(kernel names are prefixes of each other from ten kernels on, and definitions may come "
    "in any order); wrong on a backward graph with kernels _1 and _10 defined in that "
    "order, _10 with no reduction and _1 with one (0 given for _1)",
)
def _rt7_reductions_per_kernel_prefix_lookup(
    hlo_text: str, inductor_code: str
) -> dict[str, list[int]]:
    counts: list[int] = []
    for call in _rt7_kernel_calls(inductor_code):
        name = _rt7_dotted(call.func) or ""
        if not name.startswith(_RT7_FUSED):
            counts.append(0)
            continue
        at = inductor_code.find(name)
        start = inductor_code.find("r'''", at)
        end = inductor_code.find("'''", start + 4)
        source = inductor_code[start:end] if start >= 0 else ""
        counts.append(len(_RT7_ACC.findall(source)))
    return {"xla": _rt7_xla_reductions(hlo_text), "inductor": counts}


# ---- train_graphs ---------------------------------------------------------------------------


def _rt7_count_kernels(code: str) -> int:
    return len(_rt7_kernel_calls(code))


@wrong(
    "train_graphs",
    why="'the backward graph is the one whose call takes tangents_<n> inputs': this tells "
    "the backward by its return tuple holding `None` (no gradient for the data inputs x, "
    "y), else takes the texts in compile order; wrong on recorded/train_every_input.txt "
    "(every input requires grad, no None returned) passed backward first: "
    "{forward 3, backward 2, saved 2} instead of {forward 2, backward 3, saved 3}",
)
def _rt7_train_graphs_backward_by_none(codes: list[str]) -> dict[str, int]:
    def returns_none(code: str) -> bool:
        tree = ast.parse(code)
        fn = _rt7_find_call(tree)
        if fn is None:
            return False
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, (ast.Tuple, ast.List)):
                if any(isinstance(e, ast.Constant) and e.value is None for e in node.value.elts):
                    return True
        return False

    marked = [c for c in codes if returns_none(c)]
    backward = marked[0] if marked else codes[-1]
    forward = next((c for c in codes if c is not backward), codes[0])
    saved = sum(1 for n in _rt7_call_inputs(backward) if not n.startswith("tangents_"))
    return {
        "forward": _rt7_count_kernels(forward),
        "backward": _rt7_count_kernels(backward),
        "saved": saved,
    }


# ---- predict_inductor_kernels ---------------------------------------------------------------


def _rt7_predict(input_shape, layers, small_weight) -> dict[str, int]:
    rows = math.prod(input_shape[:-1])
    width = input_shape[-1]
    library = fused = 0
    pending = False
    for out, bias, activation in layers:
        if bias:
            rewritten = rows == 1 and (out == 1 or small_weight(out, width))
        else:
            rewritten = (rows == 1 and out == 1) or (
                width == 1 and rows >= 2 and out >= 2 and rows + out <= 32
            )
        if rewritten:
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


@wrong(
    "predict_inductor_kernels",
    why="a layer with a bias on one row is rewritten when its weight 'is at most 16 x 16' "
    "(each side at most 16): this reads it as an AREA, out * in <= 256; wrong on "
    "x[1,32] -> [(8, True, 'relu')] (weight 8 x 32, area 256: predicted library 0, fused 1; "
    "Inductor keeps addmm + relu: library 1, fused 1) and x[1,64] -> [(4, True, 'none')] "
    "(library 0/fused 1 instead of 1/0); right on every square weight of the recordings",
)
def _rt7_predict_weight_area(
    input_shape: tuple[int, ...], layers: list[tuple[int, bool, str]]
) -> dict[str, int]:
    return _rt7_predict(input_shape, layers, lambda out, width: out * width <= 256)


# ---- inference_call -------------------------------------------------------------------------


@wrong(
    "inference_call",
    why="the graph must be an inference one whatever mode the module is in: this turns grad "
    "off only when `compiled.training` is True, taking an eval() module for one that already "
    "compiles for inference; but eval() leaves the parameters requiring grad, so on a "
    "module in eval mode (grad enabled) Inductor compiles AOTAutograd's forward graph "
    "(primals_<n> inputs, saved tensors) instead",
)
def _rt7_inference_call_only_in_train_mode(compiled: Any, x: Any) -> Any:
    import torch

    if compiled.training:
        with torch.no_grad():
            return compiled(x)
    return compiled(x)


_RT7_WARMED: set[int] = set()


@wrong(
    "inference_call",
    why="every call must compile/run an inference graph: this runs the compiled module under "
    "no_grad only the FIRST time it sees it (by id), as if the inference graph were then "
    "cached for good; Dynamo guards on grad mode, so a second call with grad enabled "
    "recompiles a training forward (primals_<n>, saved tensors) and its output requires "
    "grad; wrong on any module called twice",
)
def _rt7_inference_call_first_call_only(compiled: Any, x: Any) -> Any:
    import torch

    key = id(compiled)
    if key not in _RT7_WARMED:
        _RT7_WARMED.add(key)
        with torch.no_grad():
            return compiled(x)
    return compiled(x)
