"""Red-team wrong answers for phase 16, written from the contract only.

Round 5: new kinds of mistakes (number widths, walk order, two calls in a row, kOutput fusions,
while bodies, custom-call GEMMs with a bias, scalars taken for a bias, reduce-precision, bare
ENTRY reduces, unvectorized kernels, profiled training graphs, limits the recordings lack,
grad-mode restoring).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from kata_harness.decoys import wrong
from xla_inspect.inductor import fused_ops, read_inductor, reduction_count
from xla_inspect.parse import parse_hlo

_rt5_KERNEL_OPCODES = {"fusion", "dot", "custom-call", "reduce", "reduce-window"}


# ---- shared helpers (mostly right; each decoy bends one thing) -----------------------------


def _rt5_short(call) -> str:
    return call.short_name


def _rt5_entry_kernels(hlo_text: str):
    module = parse_hlo(hlo_text)
    return module, [i for i in module.entry.instructions if i.opcode in _rt5_KERNEL_OPCODES]


def _rt5_fusion_kind(instruction) -> str:
    return instruction.attribute("kind", "") or ""


def _rt5_reach(module, names, follow_to_apply=False):
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        comp = module.computation(name)
        if comp is None:
            continue
        for inst in comp.instructions:
            for key in (
                "calls",
                "body",
                "condition",
                "branch_computations",
                "true_computation",
                "false_computation",
            ):
                value = inst.attribute(key)
                if value:
                    stack += [
                        v.strip().lstrip("%") for v in value.strip("{}").split(",") if v.strip()
                    ]
            if follow_to_apply and inst.attribute("to_apply"):
                stack.append(inst.attribute("to_apply").strip().lstrip("%"))
    return seen


def _rt5_called(inst) -> list[str]:
    value = inst.attribute("calls")
    if not value:
        return []
    return [v.strip().lstrip("%") for v in value.strip("{}").split(",") if v.strip()]


def _rt5_census_inductor(code: str) -> dict[str, int]:
    calls = read_inductor(code).calls
    return {
        "library": sum(c.kind in ("extern", "fallback") for c in calls),
        "fused": sum(c.kind == "fused" for c in calls),
    }


# ---- task 1: inductor_kernels --------------------------------------------------------------


@wrong(
    "inductor_kernels",
    why="a fused kernel's name loses its whole `_<n>` number, not one digit; wrong on a graph "
    "with ten or more fused kernels (cpp_fused_gelu_10 gives 'gelu_' instead of 'gelu', e.g. "
    "a deep MLP's backward graph)",
)
def _rt5_kernels_one_digit_number(code: str) -> list[str]:
    out = []
    for c in read_inductor(code).calls:
        if c.kind == "fused":
            rest = c.kernel[len("cpp_fused_") :]
            out.append(rest[:-2] if len(rest) > 1 else "")
        else:
            out.append(_rt5_short(c))
    return out


@wrong(
    "inductor_kernels",
    why="kernels in the order `call` runs them, not breadth-first: ast.walk yields every "
    "top-level call before the calls nested in an if/for/try block; wrong on a `call` whose "
    "body runs `cpp_fused_relu_0` inside `if` and then `extern_kernels.mm` at top level",
)
def _rt5_kernels_ast_walk_order(code: str) -> list[str]:
    tree = ast.parse(code)
    fn = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            fn = node
            break
    out = []
    if fn is None:
        return out
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            parts = []
            f = node.func
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                parts.append(f.id)
            name = ".".join(reversed(parts))
            if name.startswith("cpp_fused_"):
                out.append(fused_ops(name))
            elif name.startswith("extern_kernels."):
                out.append(name.split(".", 1)[1])
            elif name.startswith("torch.ops.") and name.count(".") >= 4:
                out.append(name.split(".")[3])
    return out


@wrong(
    "inductor_kernels",
    why="'a kernel called twice appears twice' also when the two calls are adjacent; this "
    "collapses back-to-back calls of the same kernel (taken for a duplicated line); wrong on "
    "a call running cpp_fused_relu_0(buf0); cpp_fused_relu_0(buf1) in a row",
)
def _rt5_kernels_collapse_repeats(code: str) -> list[str]:
    out: list[str] = []
    last = None
    for c in read_inductor(code).calls:
        if c.kernel == last:
            continue
        last = c.kernel
        out.append(_rt5_short(c))
    return out


# ---- task 2: kernel_census -----------------------------------------------------------------


@wrong(
    "kernel_census",
    why="'fused' counts every other ENTRY fusion, not only kLoop/kInput ones; wrong on an HLO "
    "whose ENTRY holds a kind=kOutput fusion (counted nowhere here)",
)
def _rt5_census_loop_input_only(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for inst in module.entry.instructions:
        if inst.opcode in ("dot", "custom-call"):
            lib += 1
        elif inst.opcode == "fusion":
            kind = _rt5_fusion_kind(inst)
            if kind == "kCustom":
                lib += 1
            elif kind in ("kLoop", "kInput"):
                fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt5_census_inductor(inductor_code),
    }


@wrong(
    "kernel_census",
    why="only ENTRY instructions count; this also counts the fusions and dots in the while "
    "body/condition and conditional branches ENTRY runs; wrong on xla_only's layer in a "
    "fori_loop and the two layers in a cond (ENTRY holds a while / conditional, counted 0)",
)
def _rt5_census_follows_control_flow(
    hlo_text: str, inductor_code: str
) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    fused_names = set()
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                fused_names.update(_rt5_called(inst))
    lib = fused = 0
    for comp in module.computations:
        if comp.name in fused_names:
            continue
        if not comp.is_entry and not any(
            inst.opcode in ("fusion", "dot", "custom-call") for inst in comp.instructions
        ):
            continue
        # skip reducers: they hold no kernels anyway
        for inst in comp.instructions:
            if inst.opcode in ("dot", "custom-call"):
                lib += 1
            elif inst.opcode == "fusion":
                if _rt5_fusion_kind(inst) == "kCustom":
                    lib += 1
                else:
                    fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt5_census_inductor(inductor_code),
    }


@wrong(
    "kernel_census",
    why="a custom-call is a library kernel whatever its target; this counts only GEMM targets "
    "(matmul/gemm/dot in the name) and files the rest (LAPACK potrf, a TopK...) under fused; "
    "wrong on cholesky's HLO (lapack potrf custom-call)",
)
def _rt5_census_gemm_targets_only(hlo_text: str, inductor_code: str) -> dict[str, dict[str, int]]:
    module = parse_hlo(hlo_text)
    lib = fused = 0
    for inst in module.entry.instructions:
        if inst.opcode == "dot":
            lib += 1
        elif inst.opcode == "custom-call":
            target = (inst.attribute("custom_call_target", "") or "").lower()
            if any(k in target for k in ("matmul", "gemm", "dot")):
                lib += 1
            else:
                fused += 1
        elif inst.opcode == "fusion":
            if _rt5_fusion_kind(inst) == "kCustom":
                lib += 1
            else:
                fused += 1
    return {
        "xla": {"library": lib, "fused": fused},
        "inductor": _rt5_census_inductor(inductor_code),
    }


# ---- task 3: bias_homes --------------------------------------------------------------------


def _rt5_inductor_bias_home_by(code: str, is_bias) -> str:
    graph = read_inductor(code)
    sizes = _rt5_input_sizes(code)
    bias = [name for name in graph.inputs if name in sizes and is_bias(sizes[name])]
    if len(bias) != 1:
        return "none"
    b = bias[0]
    for c in graph.calls:
        if b in c.arguments:
            return "library" if c.kind in ("extern", "fallback") else "fused"
    return "none"


def _rt5_input_sizes(code: str) -> dict[str, tuple]:
    sizes: dict[str, tuple] = {}
    for m in re.finditer(r"assert_size_stride_grouped\(\(([^)]*)\),\s*(\(.*?\)\)),", code):
        names = [n.strip() for n in m.group(1).split(",") if n.strip()]
        try:
            tuples = ast.literal_eval(m.group(2))
        except Exception:
            continue
        for n, s in zip(names, tuples):
            sizes[n] = s
    for m in re.finditer(r"assert_size_stride\((\w+),\s*(\([^)]*\))", code):
        try:
            sizes[m.group(1)] = ast.literal_eval(m.group(2))
        except Exception:
            pass
    return sizes


def _rt5_xla_bias_home_by(hlo_text: str, is_bias) -> str:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry.instructions
        if i.opcode == "parameter" and is_bias(i.shape_info.dims)
    ]
    if len(params) != 1:
        return "none"
    name = params[0].name
    for inst in module.entry.instructions:
        if name not in inst.operands or inst.opcode not in _rt5_KERNEL_OPCODES:
            continue
        if inst.opcode in ("dot", "custom-call"):
            return "library"
        comps = _rt5_reach(module, _rt5_called(inst))
        has_dot = any(
            i.opcode == "dot"
            for c in comps
            if module.computation(c)
            for i in module.computation(c).instructions
        )
        return "library" if has_dot else "fused"
    return "none"


@wrong(
    "bias_homes",
    why="the bias is the only rank-1 argument, found by shape; this answers by the GEMM's name "
    "(addmm/baddbmm means a bias in the library) and by an 'add' fusion on XLA; wrong on "
    "x @ w.T + c with c a 2-D [rows, out] array (no rank-1 argument: 'none', here 'library')",
)
def _rt5_bias_by_gemm_name(hlo_text: str, inductor_code: str) -> dict[str, str]:
    names = [_rt5_short(c) for c in read_inductor(inductor_code).calls]
    if any(n in ("addmm", "baddbmm", "_addmm_activation") for n in names):
        ind = "library"
    elif any("add" in n for n in names):
        ind = "fused"
    else:
        ind = "none"
    return {"xla": _rt5_xla_bias_home_by(hlo_text, lambda d: len(d) == 1), "inductor": ind}


@wrong(
    "bias_homes",
    why="the bias is the only argument of rank 1, not of rank <= 1; a scalar argument (f32[] / "
    "size ()) is taken for the bias; wrong on relu(s * (x @ w.T)) with a scalar s and no bias "
    "(answer 'none' for both, here 'fused')",
)
def _rt5_bias_scalar_counts_as_vector(hlo_text: str, inductor_code: str) -> dict[str, str]:
    return {
        "xla": _rt5_xla_bias_home_by(hlo_text, lambda d: len(d) <= 1),
        "inductor": _rt5_inductor_bias_home_by(inductor_code, lambda s: len(s) <= 1),
    }


@wrong(
    "bias_homes",
    why="XLA: the bias is in the library when it is an operand of a dot or custom-call "
    "instruction itself; this says 'library' only for a kCustom fusion and 'fused' for "
    "anything else; wrong on an HLO whose bias goes straight into a custom-call GEMM "
    "(oneDNN matmul with a bias operand)",
)
def _rt5_bias_kcustom_only(hlo_text: str, inductor_code: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    params = [
        i
        for i in module.entry.instructions
        if i.opcode == "parameter" and len(i.shape_info.dims) == 1
    ]
    xla = "none"
    if len(params) == 1:
        for inst in module.entry.instructions:
            if params[0].name in inst.operands and inst.opcode in _rt5_KERNEL_OPCODES:
                if inst.opcode == "fusion" and _rt5_fusion_kind(inst) == "kCustom":
                    xla = "library"
                else:
                    comps = _rt5_reach(module, _rt5_called(inst))
                    has_dot = any(
                        i.opcode == "dot"
                        for c in comps
                        if module.computation(c)
                        for i in module.computation(c).instructions
                    )
                    xla = "library" if has_dot else "fused"
                break
    return {
        "xla": xla,
        "inductor": _rt5_inductor_bias_home_by(inductor_code, lambda s: len(s) == 1),
    }


# ---- task 4: reductions_per_kernel ---------------------------------------------------------


def _rt5_inductor_reductions(code: str, count=reduction_count) -> list[int]:
    graph = read_inductor(code)
    return [count(graph.kernels.get(c.kernel, "")) if c.kind == "fused" else 0 for c in graph.calls]


def _rt5_xla_reductions(hlo_text: str, is_reduction, opcodes=_rt5_KERNEL_OPCODES) -> list[int]:
    module = parse_hlo(hlo_text)
    out = []
    for inst in module.entry.instructions:
        if inst.opcode not in opcodes:
            continue
        n = 1 if is_reduction(inst.opcode) else 0
        for name in _rt5_reach(module, _rt5_called(inst)):
            comp = module.computation(name)
            if comp is not None:
                n += sum(is_reduction(i.opcode) for i in comp.instructions)
        out.append(n)
    return out


@wrong(
    "reductions_per_kernel",
    why="only `reduce` and `reduce-window` count; this counts every opcode starting 'reduce' "
    "(reduce-precision too); wrong on a fusion holding a reduce-precision (bf16 rounding, "
    "e.g. an HLO compiled with a lower precision), 1 or more too many",
)
def _rt5_reductions_prefix_match(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt5_xla_reductions(hlo_text, lambda op: op.startswith("reduce")),
        "inductor": _rt5_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="each ENTRY kernel includes bare `reduce` and `reduce-window` instructions (1 each); "
    "this lists fusions, dots and custom-calls only; wrong on an HLO whose ENTRY holds a "
    "bare `reduce` or `reduce-window` instruction left out of any fusion (its 1 is missing and "
    "the list is one kernel short)",
)
def _rt5_reductions_skip_bare_reduce(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    return {
        "xla": _rt5_xla_reductions(
            hlo_text,
            lambda op: op in ("reduce", "reduce-window"),
            opcodes={"fusion", "dot", "custom-call"},
        ),
        "inductor": _rt5_inductor_reductions(inductor_code),
    }


@wrong(
    "reductions_per_kernel",
    why="one reduction per `<type> tmp_acc<N> = <init>;` declaration; this counts the vector "
    "copies `tmp_acc<N>_vec` instead, which only a vectorized loop declares; wrong on a kernel "
    "the C++ backend did not vectorize (a `double` or `int32_t` accumulator, a scalar loop)",
)
def _rt5_reductions_count_vec(hlo_text: str, inductor_code: str) -> dict[str, list[int]]:
    vec = re.compile(r"^\s*[\w:][\w:<>, ]*\s+tmp_acc\d+_vec\s*=", re.M)
    return {
        "xla": _rt5_xla_reductions(hlo_text, lambda op: op in ("reduce", "reduce-window")),
        "inductor": _rt5_inductor_reductions(inductor_code, lambda s: len(vec.findall(s))),
    }


# ---- task 5: train_graphs ------------------------------------------------------------------


def _rt5_top_level_kernel_count(code: str) -> int:
    tree = ast.parse(code)
    fn = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            fn = node
            break
    n = 0
    for st in fn.body if fn else []:
        value = getattr(st, "value", None)
        if isinstance(value, ast.Call):
            src = ast.unparse(value.func)
            if src.startswith(("cpp_fused_", "extern_kernels.", "torch.ops.")):
                n += 1
    return n


@wrong(
    "train_graphs",
    why="a kernel nested in a block of `call` counts; this counts only top-level statements; "
    "wrong on a training step compiled with profiler_mark_wrapper_call=True (every kernel "
    "inside `with record_function(...)`: 0 and 0)",
)
def _rt5_train_top_level_only(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    bi = next(i for i, g in enumerate(graphs) if g.is_backward)
    fi = 1 - bi if len(codes) == 2 else next(i for i, g in enumerate(graphs) if not g.is_backward)
    back = graphs[bi]
    return {
        "forward": _rt5_top_level_kernel_count(codes[fi]),
        "backward": _rt5_top_level_kernel_count(codes[bi]),
        "saved": sum(not n.startswith("tangents_") for n in back.inputs),
    }


@wrong(
    "train_graphs",
    why="saved = the backward's inputs other than tangents_<n>; this takes the forward's "
    "outputs minus the backward's tangents, assuming every user output gets a tangent; "
    "wrong on train_mlp_outputs (the argmax output is an integer tensor with no tangent: one "
    "too many)",
)
def _rt5_train_saved_from_forward_outputs(codes: list[str]) -> dict[str, int]:
    graphs = [read_inductor(c) for c in codes]
    back = next(g for g in graphs if g.is_backward)
    fwd = next(g for g in graphs if not g.is_backward)
    tangents = sum(n.startswith("tangents_") for n in back.inputs)
    return {
        "forward": len(fwd.calls),
        "backward": len(back.calls),
        "saved": len([o for o in fwd.outputs if o is not None]) - tangents,
    }


@wrong(
    "train_graphs",
    why="the texts come in any order and the backward is the one whose `call` takes "
    "tangents_<n>; this tells them apart by the `# AOT ID: ['N_backward']` header comment and "
    "else assumes [forward, backward]; wrong on the two texts passed backward first without "
    "that comment (a hand-written or header-stripped pair)",
)
def _rt5_train_by_aot_header(codes: list[str]) -> dict[str, int]:
    marked = [i for i, c in enumerate(codes) if re.search(r"AOT ID: \[.*_backward", c)]
    bi = marked[0] if marked else len(codes) - 1
    fi = 0 if bi != 0 else 1
    fwd, back = read_inductor(codes[fi]), read_inductor(codes[bi])
    return {
        "forward": len(fwd.calls),
        "backward": len(back.calls),
        "saved": sum(not n.startswith("tangents_") for n in back.inputs),
    }


# ---- task 6: predict_inductor_kernels ------------------------------------------------------


def _rt5_rows(shape):
    r = 1
    for d in shape[:-1]:
        r *= d
    return r


def _rt5_predict(input_shape, layers, decomposed, merge_after_library=True):
    rows = _rt5_rows(input_shape)
    width = input_shape[-1]
    seq: list[str] = []
    for out, bias, act in layers:
        if decomposed(rows, width, out, bias):
            seq.append("F")
        else:
            seq.append("L")
        if act != "none":
            seq.append("A")
        width = out
    library = seq.count("L")
    fused = 0
    prev = "L"
    for i, s in enumerate(seq):
        if s == "L":
            prev = "L"
            continue
        if prev == "L":
            fused += 1
        elif (
            not merge_after_library
            and s == "F"
            and seq[i - 1] == "A"
            and _rt5_after_lib(seq, i - 1)
        ):
            fused += 1
        prev = s
    return {"library": library, "fused": fused}


def _rt5_after_lib(seq, i):
    return i > 0 and seq[i - 1] == "L"


def _rt5_right_rule(rows, width, out, bias):
    if bias:
        return rows == 1 and (out == 1 or (width <= 16 and out <= 16))
    return (rows == 1 and out == 1) or (width == 1 and rows + out <= 32)


@wrong(
    "predict_inductor_kernels",
    why="a layer with a bias on one row is rewritten when the weight has one output OR is at "
    "most 16 x 16; this keeps only the 16 x 16 clause; wrong on x[1,24] -> "
    "[(1, True, 'none')] (a multiply-and-sum: library 0, fused 1; here addmm: library 1)",
)
def _rt5_predict_bias_drops_one_output(input_shape, layers):
    return _rt5_predict(
        input_shape,
        layers,
        lambda r, w, o, b: (
            (r == 1 and w <= 16 and o <= 16)
            if b
            else ((r == 1 and o == 1) or (w == 1 and r + o <= 32))
        ),
    )


@wrong(
    "predict_inductor_kernels",
    why="a layer without a bias is rewritten on one row with one output too; this keeps only "
    "the one-feature clause; wrong on x[1,24] -> [(1, False, 'none')] (library 0, fused 1; "
    "here mm: library 1, fused 0)",
)
def _rt5_predict_nobias_drops_one_row(input_shape, layers):
    return _rt5_predict(
        input_shape,
        layers,
        lambda r, w, o, b: (
            (r == 1 and (o == 1 or (w <= 16 and o <= 16))) if b else (w == 1 and r + o <= 32)
        ),
    )


@wrong(
    "predict_inductor_kernels",
    why="whatever runs between two library calls shares one fused kernel; this gives the "
    "activation after a GEMM its own in-place kernel and does not merge a following rewritten "
    "product into it; wrong on x[1,24] -> [(8, True, 'relu'), (8, True, 'none')] (addmm, then "
    "relu + the rewritten 8x8 product in one kernel: 1 and 1; here 1 and 2)",
)
def _rt5_predict_activation_after_gemm_alone(input_shape, layers):
    return _rt5_predict(input_shape, layers, _rt5_right_rule, merge_after_library=False)


# ---- task 7: inference_call ----------------------------------------------------------------


@wrong(
    "inference_call",
    why="grad mode must be what it was before the call; this switches it off and then back "
    "ON unconditionally; wrong when the caller is inside torch.no_grad() (grad mode left on)",
)
def _rt5_inference_restores_true(compiled: Any, x: Any) -> Any:
    import torch

    torch.set_grad_enabled(False)
    try:
        return compiled(x)
    finally:
        torch.set_grad_enabled(True)


@wrong(
    "inference_call",
    why="an inference graph has no primals inputs; turning the parameters' requires_grad off "
    "for the call leaves grad mode on, so an x that requires grad still gives a training "
    "graph (forward with primals, saved tensors); wrong when x.requires_grad is True",
)
def _rt5_inference_freeze_params(compiled: Any, x: Any) -> Any:
    params = [p for p in compiled.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        out = compiled(x)
    finally:
        for p in params:
            p.requires_grad_(True)
    return out.detach()


@wrong(
    "inference_call",
    why="the compiled module itself must run (not an eager run of the module it wraps, nor a "
    "module compiled afresh); this compiles the wrapped module again under no_grad: the "
    "values and graph look right but `compiled` never compiles an inference graph; wrong on "
    "any MLP (its own compile cache stays empty)",
)
def _rt5_inference_compile_afresh(compiled: Any, x: Any) -> Any:
    import torch

    inner = getattr(compiled, "_orig_mod", compiled)
    with torch.no_grad():
        return torch.compile(inner)(x)
