"""Red-team wrong answers for phase 3, round 9, written from the contract only.

New kinds of mistakes: half-precision reductions reported in their accumulation dtype, NumPy/torch
`.mT` habits for `.T`, tuple results in argument order, "XLA:CPU has no half arithmetic" so the
ROOT is a convert, parameter numbers sorted as strings, ENTRY found as "the uncalled computation",
XLA's `/*index=N*/` comments cleaned away, fusions found by reachability from ENTRY, literals
normalised, and StableHLO printed with debug locations.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_RT9_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt9_fmt(shape, dt) -> str:
    shape = tuple(int(d) for d in shape)
    name = _RT9_DT.get(str(dt), str(dt))
    if not shape:
        return f"{name}[]"
    dims = ",".join(str(d) for d in shape)
    layout = ",".join(str(i) for i in reversed(range(len(shape))))
    return f"{name}[{dims}]{{{layout}}}"


def _rt9_predict(program, args, bug=None):
    """A predictor of the ENTRY ROOT that is right except for one wrong belief (`bug`)."""
    x = args[0]
    shape, dt = tuple(x.shape), str(x.dtype)
    is_int = dt == "int32"
    is_half = dt in ("bfloat16", "float16")

    def elementwise(out_dt):
        if (
            bug == "half_convert"
            and str(out_dt) in ("bfloat16", "float16")
            and program != ("x.astype(jnp.bfloat16)")
        ):
            # "CPU computes halves in f32, then converts back": the ROOT is the convert
            return ("convert", _rt9_fmt(shape, out_dt))
        return ("fusion", _rt9_fmt(shape, out_dt))

    def reduce_dt():
        if bug == "half_sum_f32" and is_half:
            return "float32"
        return dt

    if program in ("x * 2 + 1", "x + 1"):
        return elementwise(dt)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return elementwise("float32" if is_int else dt)
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bfloat16":
            return ("copy", _rt9_fmt(shape, dt))
        return ("fusion", _rt9_fmt(shape, "bfloat16"))
    if program == "x.sum(axis=1)":
        return ("fusion", _rt9_fmt(shape[:1] + shape[2:], reduce_dt()))
    if program == "x.max()":
        return ("fusion", _rt9_fmt((), dt))
    if program == "x.T":
        if len(shape) == 1:
            return ("copy", _rt9_fmt(shape, dt))
        if bug == "mT" and len(shape) >= 3:
            return ("fusion", _rt9_fmt(shape[:-2] + (shape[-1], shape[-2]), dt))
        return ("fusion", _rt9_fmt(shape[::-1], dt))
    if program == "x itself":
        return ("copy", _rt9_fmt(shape, dt))
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = 1
        for d in shape:
            n *= d
        new = (2, n // (2 * shape[-1]), shape[-1])
        if len(shape) == 2 and shape[0] == 2:
            return ("fusion", _rt9_fmt(new, dt))
        return ("copy", _rt9_fmt(new, dt))
    if program == "(x * 2, x + 1)":
        s = _rt9_fmt(shape, dt)
        return ("tuple", f"({s}, {s})")
    if program == "(x, x.sum())":
        return ("tuple", f"({_rt9_fmt(shape, dt)}, {_rt9_fmt((), reduce_dt())})")
    if program == "(v, x)":
        v = args[1]
        first, second = (x, v) if bug == "arg_order" else (v, x)
        return (
            "tuple",
            f"({_rt9_fmt(first.shape, first.dtype)}, {_rt9_fmt(second.shape, second.dtype)})",
        )
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="'the result's dtype is jnp's': believes a half-precision reduction keeps its float32 "
    "accumulator, so sum/max... of bf16/f16 is reported f32; jnp converts back to the input "
    "dtype. Wrong on 'x.sum(axis=1)' with x bfloat16[2,3,4] (compiled: fusion bf16[2,4]{1,0}) "
    "and '(x, x.sum())' with x bfloat16[8,4] (tuple (bf16[8,4]{1,0}, bf16[]))",
)
def _rt9_predict_entry_root_half_sum_f32(program, args):
    return _rt9_predict(program, args, bug="half_sum_f32")


@wrong(
    "predict_entry_root",
    why="'x.T' of a rank-3 array: a torch/`.mT` habit swaps only the last two axes; jnp's .T "
    "reverses all axes. Wrong on 'x.T' with x float32[2,3,4] (compiled: fusion f32[4,3,2]{2,1,0}, "
    "this predicts f32[2,4,3]{2,1,0}); right on every rank-1 and rank-2 case",
)
def _rt9_predict_entry_root_mT_transpose(program, args):
    return _rt9_predict(program, args, bug="mT")


@wrong(
    "predict_entry_root",
    why="'(v, x)' is `lambda x, v: (v, x)`: lists the tuple's elements in argument order "
    "(x then v), as if the program returned its inputs as given. Wrong whenever x and v differ, "
    "e.g. x float32[2,3], v int32[4] (compiled: tuple (s32[4]{0}, f32[2,3]{1,0}))",
)
def _rt9_predict_entry_root_pair_arg_order(program, args):
    return _rt9_predict(program, args, bug="arg_order")


@wrong(
    "predict_entry_root",
    why="'a lone element-wise op ... is a loop fusion too': believes XLA:CPU has no half-precision "
    "arithmetic, computes in f32 and ends in a `convert` back to bf16/f16, so predicts ROOT "
    "convert. Wrong on 'x + 1' with x bfloat16[4,3] (compiled: fusion bf16[4,3]{1,0})",
)
def _rt9_predict_entry_root_half_convert(program, args):
    return _rt9_predict(program, args, bug="half_convert")


def _rt9_split_top(inner: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _rt9_layout(shape: str) -> str:
    import re

    shape = re.sub(r"/\*.*?\*/", "", shape).strip()
    if shape.startswith("("):
        return "(" + ", ".join(_rt9_layout(p) for p in _rt9_split_top(shape[1:-1])) + ")"
    close = shape.find("]")
    rest = shape[close + 1 :].strip()
    return rest if rest.startswith("{") else "{}"


@wrong(
    "entry_parameter_layouts",
    why="'in parameter-number order': sorts ENTRY's parameters by the payload text of "
    "parameter(N), i.e. as strings, so parameter(10) sorts before parameter(2). Right up to ten "
    "parameters; wrong on jax.jit(lambda *a: sum(x for x in a[:10]) + a[10].sum()) of ten f32[] "
    "then one f32[2,2]: expected ten '{}' then '{1,0}', this puts '{1,0}' third",
)
def _rt9_entry_parameter_layouts_string_sort(hlo_text: str) -> list[str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter"]
    params.sort(key=lambda i: str(i.payload).strip())
    return [_rt9_layout(i.shape) for i in params]


@wrong(
    "entry_root",
    why="'ENTRY need not be the last computation': finds ENTRY from the call graph as the "
    "computation no instruction calls, taking the last such one (JAX prints ENTRY last); a "
    "module may hold computations nothing calls: on HAND_BRANCHES this returns %orphan's ROOT "
    "(fusion, s32[2]{0}) instead of (tuple, (f32[4]{0}, c64[], f32[]))",
)
def _rt9_entry_root_last_uncalled(hlo_text: str) -> tuple[str, str]:
    module = parse_hlo(hlo_text)
    called = set()
    for comp in module:
        for inst in comp:
            called.update(c.lstrip("%") for c in inst.called_computations)
    roots = [c for c in module if c.name.lstrip("%") not in called]
    comp = roots[-1] if roots else module.entry
    root = next(i for i in comp if i.is_root)
    return (root.opcode, root.shape)


@wrong(
    "entry_root",
    why="'the shape exactly as the instruction line prints it': tidies the shape by removing "
    "/* ... */ comments as noise; a tuple of six or more results carries /*index=5*/. Wrong on "
    "jax.jit(lambda *a: tuple(x + 1 for x in a)) of seven f32[2]: the line prints "
    "'(f32[2]{0}, ..., /*index=5*/f32[2]{0}, f32[2]{0})'",
)
def _rt9_entry_root_strip_comments(hlo_text: str) -> tuple[str, str]:
    import re

    module = parse_hlo(hlo_text)
    root = next(i for i in module.entry if i.is_root)
    return (root.opcode, re.sub(r"/\*.*?\*/", "", root.shape))


def _rt9_count(comps, name, out):
    for inst in comps[name.lstrip("%")]:
        if inst.opcode == "parameter":
            continue
        out[inst.opcode] += 1
        for callee in inst.called_computations:
            _rt9_count(comps, callee, out)


@wrong(
    "fusion_contents",
    why="'fusions can sit in any computation': finds fusions by walking the call graph from "
    "ENTRY (through whiles, conditionals' branches, fused computations), which reaches every "
    "computation that can run but skips computations nothing calls; wrong on HAND_BRANCHES, "
    "whose uncalled %orphan holds a kOutput fusion (kOutput: subtract 1, broadcast 1, constant 1 "
    "missing)",
)
def _rt9_fusion_contents_reachable(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    comps = {c.name.lstrip("%"): c for c in module}
    seen, todo = set(), [module.entry.name.lstrip("%")]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for inst in comps[name]:
            todo.extend(c.lstrip("%") for c in inst.called_computations)
    result: dict[str, Counter] = {}
    for name in sorted(seen):
        for inst in comps[name]:
            if inst.opcode != "fusion":
                continue
            kind = str(inst.attribute("kind")).strip()
            counts = result.setdefault(kind, Counter())
            for callee in inst.called_computations:
                _rt9_count(comps, callee, counts)
    return result


@wrong(
    "constants",
    why="'the literal as written between the parentheses': normalises literals by removing the "
    "spaces next to braces so that nested array literals compare; XLA prints "
    "'{ { 1, 2 }, { 3, 4 } }'. Wrong on HAND_WRITTEN's %grid (returns '{{1, 2}, {3, 4}}')",
)
def _rt9_constants_normalised(hlo_text: str) -> list[tuple[str, str]]:
    import re

    out = []
    for comp in parse_hlo(hlo_text):
        for inst in comp:
            if inst.opcode == "constant":
                lit = re.sub(r"\{\s+", "{", str(inst.payload))
                lit = re.sub(r"\s+\}", "}", lit)
                out.append((inst.shape, lit))
    return out


@wrong(
    "three_texts",
    why="'\"stablehlo\": the lowered stage as text': asks for debug_info=True to see source "
    "locations, which adds loc(...) attributes and #loc lines; not the StableHLO text of "
    "jax.jit(f). Wrong on value_and_total(x f32[3,1]) (stablehlo text differs from as_text())",
)
def _rt9_three_texts_debug_info(f, *args) -> dict[str, str]:
    lowered = jax.jit(f).lower(*args)
    return {
        "stablehlo": lowered.as_text(debug_info=True),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "mlp_flops",
    why="'Does broadcasting a bias to (batch, hidden) cost flops?' answered 'no' and taken one "
    "step further: the bias add costs one flop per bias element (hidden, out_dim), not per "
    "element of the (batch, hidden)/(batch, out_dim) result; wrong at (2, 3, 5, 7): XLA reports "
    "234 (60 + 10 + 10 + 140 + 14), this gives 222",
)
def _rt9_mlp_flops_bias_once(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + hidden
        + batch * hidden
        + 2 * batch * hidden * out_dim
        + out_dim
    )


@wrong(
    "dump_files",
    why="'return the files XLA wrote for this compile ..., not the first or last match': "
    "identifies the after-optimizations file by its bytes (== compiled.as_text()) and takes the "
    "highest-numbered match, then the before file of that prefix; a dump of the same function at "
    "the same shape by another process with higher module numbers has the very same bytes, so "
    "this returns that process's module_NNNN files, not the ones this compile wrote",
)
def _rt9_dump_files_by_content(f, args: tuple, directory: str) -> tuple[Path, Path]:
    d = Path(directory)
    compiled = (
        jax.jit(f)
        .lower(*args)
        .compile(compiler_options={"xla_dump_to": str(d), "xla_dump_hlo_as_text": True})
    )
    text = compiled.as_text()
    afters = sorted(
        (p for p in d.iterdir() if p.name.endswith("_after_optimizations.txt")),
        key=lambda p: p.name,
        reverse=True,
    )
    after = next((p for p in afters if p.read_text() == text), afters[0])
    prefix = after.name.split(".")[0] + "."
    before = next(
        p
        for p in d.iterdir()
        if p.name.startswith(prefix) and p.name.endswith(".before_optimizations.txt")
    )
    return before, after
