"""Red-team wrong answers for phase 3, round 10, written from the contract only.

New kinds: multi-output fusion believed to be the ROOT, transposes believed to be copies, every
reshape believed free (copy), scalars believed returned in place, a lone vector reduction believed
unfused, the empty tuple treated as a layout-less scalar, reducer parameters counted, constants
looked for only along fusion calls= from ENTRY.
"""

from __future__ import annotations

from collections import Counter

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_RT10_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt10_fmt(shape, dt) -> str:
    shape = tuple(int(d) for d in shape)
    name = _RT10_DT.get(str(dt), str(dt))
    if not shape:
        return f"{name}[]"
    dims = ",".join(str(d) for d in shape)
    layout = ",".join(str(i) for i in reversed(range(len(shape))))
    return f"{name}[{dims}]{{{layout}}}"


def _rt10_predict(program, args, bug=None):
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
            return ("convert", _rt10_fmt(shape, out_dt))
        return ("fusion", _rt10_fmt(shape, out_dt))

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
            return ("copy", _rt10_fmt(shape, dt))
        return ("fusion", _rt10_fmt(shape, "bfloat16"))
    if program == "x.sum(axis=1)":
        return ("fusion", _rt10_fmt(shape[:1] + shape[2:], reduce_dt()))
    if program == "x.max()":
        return ("fusion", _rt10_fmt((), dt))
    if program == "x.T":
        if len(shape) == 1:
            return ("copy", _rt10_fmt(shape, dt))
        if bug == "mT" and len(shape) >= 3:
            return ("fusion", _rt10_fmt(shape[:-2] + (shape[-1], shape[-2]), dt))
        return ("fusion", _rt10_fmt(shape[::-1], dt))
    if program == "x itself":
        return ("copy", _rt10_fmt(shape, dt))
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = 1
        for d in shape:
            n *= d
        new = (2, n // (2 * shape[-1]), shape[-1])
        if len(shape) == 2 and shape[0] == 2:
            return ("fusion", _rt10_fmt(new, dt))
        return ("copy", _rt10_fmt(new, dt))
    if program == "(x * 2, x + 1)":
        s = _rt10_fmt(shape, dt)
        return ("tuple", f"({s}, {s})")
    if program == "(x, x.sum())":
        return ("tuple", f"({_rt10_fmt(shape, dt)}, {_rt10_fmt((), reduce_dt())})")
    if program == "(v, x)":
        v = args[1]
        first, second = (x, v) if bug == "arg_order" else (v, x)
        return (
            "tuple",
            f"({_rt10_fmt(first.shape, first.dtype)}, {_rt10_fmt(second.shape, second.dtype)})",
        )
    raise KeyError(program)


def _rt10_split_top(inner: str) -> list[str]:
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


def _rt10_layout(shape: str) -> str:
    import re

    shape = re.sub(r"/\*.*?\*/", "", shape).strip()
    if shape.startswith("("):
        return "(" + ", ".join(_rt10_layout(p) for p in _rt10_split_top(shape[1:-1])) + ")"
    close = shape.find("]")
    rest = shape[close + 1 :].strip()
    return rest if rest.startswith("{") else "{}"


@wrong(
    "predict_entry_root",
    why="believes XLA:CPU merges x*2 and x+1 into one multi-output fusion "
    "that is the ROOT: predicts ('fusion', '(f32[2,5]{1,0}, f32[2,5]{1,0})') for '(x * 2, x + 1)' "
    "with x float32[2,5]; compiled ROOT is a tuple",
)
def _rt10_predict_entry_root_multi_output_fusion(program, args):
    op, shape = _rt10_predict(program, args)
    if program == "(x * 2, x + 1)":
        return ("fusion", shape)
    return (op, shape)


@wrong(
    "predict_entry_root",
    why="believes a transpose of an input is just a relayout copy, like "
    "'x itself': predicts ('copy', 'f32[4,8]{1,0}') for 'x.T' with x float32[8,4]; compiled ROOT "
    "is ('fusion', 'f32[4,8]{1,0}')",
)
def _rt10_predict_entry_root_transpose_is_copy(program, args):
    op, shape = _rt10_predict(program, args)
    if program == "x.T":
        return ("copy", shape)
    return (op, shape)


@wrong(
    "predict_entry_root",
    why="believes every reshape is a free bitcast so the ROOT is always a "
    "copy: for 'x.reshape(2, -1, x.shape[-1])' with x float32[2,5] predicts copy f32[2,1,5]{2,1,0}; "
    "compiled ROOT is ('fusion', 'f32[2,1,5]{2,1,0}')",
)
def _rt10_predict_entry_root_reshape_always_copy(program, args):
    op, shape = _rt10_predict(program, args)
    if program == "x.reshape(2, -1, x.shape[-1])":
        return ("copy", shape)
    return (op, shape)


@wrong(
    "predict_entry_root",
    why="believes a scalar input is returned by value (no buffer to "
    "protect), so 'x itself' of rank 0 is ROOT parameter: predicts ('parameter', 'f32[]') for "
    "x float32[]; compiled ROOT is ('copy', 'f32[]')",
)
def _rt10_predict_entry_root_scalar_passthrough(program, args):
    op, shape = _rt10_predict(program, args)
    if program == "x itself" and len(args[0].shape) == 0:
        return ("parameter", shape)
    return (op, shape)


@wrong(
    "predict_entry_root",
    why="believes a lone full reduction of a vector stays a plain reduce "
    "(nothing to fuse): predicts ('reduce', 's32[]') for 'x.max()' with x int32[8]; compiled ROOT "
    "is ('fusion', 's32[]')",
)
def _rt10_predict_entry_root_vector_reduce_unfused(program, args):
    op, shape = _rt10_predict(program, args)
    if program == "x.max()" and len(args[0].shape) == 1:
        return ("reduce", shape)
    return (op, shape)


def _rt10_layout_empty_scalar(shape: str) -> str:
    import re

    shape = re.sub(r"/\*.*?\*/", "", shape).strip()
    if shape.startswith("("):
        parts = _rt10_split_top(shape[1:-1])
        if not parts:
            return "{}"  # "no elements, no layout": treated like a scalar
        return "(" + ", ".join(_rt10_layout_empty_scalar(p) for p in parts) + ")"
    close = shape.find("]")
    rest = shape[close + 1 :].strip()
    return rest if rest.startswith("{") else "{}"


@wrong(
    "entry_parameter_layouts",
    why="'the empty tuple () has no elements: \"()\"': treats an "
    "empty tuple like a scalar and answers '{}'. Wrong on an ENTRY with parameter "
    "'%p = () parameter(0)' (expected ['()']), and on nested ((), f32[2]{0}) -> '({}, {0})'",
)
def _rt10_entry_parameter_layouts_empty_tuple_scalar(hlo_text: str) -> list[str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(str(i.payload).strip()))
    return [_rt10_layout_empty_scalar(i.shape) for i in params]


@wrong(
    "fusion_contents",
    why="'count parameters nowhere': skips parameters of the fused "
    "computation itself but counts the reducer's parameters when following to_apply=; on "
    "attention(q,k,v) f32[8,16] the kLoop counter gets parameter: 2 per reduce call",
)
def _rt10_fusion_contents_reducer_params(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    comps = {c.name.lstrip("%"): c for c in module}
    out: dict[str, Counter] = {}

    def walk_called(comp, counter):
        for inst in comp:
            counter[inst.opcode] += 1  # parameters counted here
            for name in inst.called_computations:
                walk_called(comps[name.lstrip("%")], counter)

    for comp in module:
        for inst in comp:
            if inst.opcode != "fusion":
                continue
            kind = inst.attribute("kind")
            counter = out.setdefault(kind, Counter())
            for name in inst.called_computations:
                for sub in comps[name.lstrip("%")]:
                    if sub.opcode == "parameter":
                        continue
                    counter[sub.opcode] += 1
                    for n2 in sub.called_computations:
                        walk_called(comps[n2.lstrip("%")], counter)
    return out


@wrong(
    "constants",
    why="'constants live in ENTRY and inside fused computations': walks ENTRY and "
    "the computations fusions call (recursively) only, so loop conditions/bodies are missed: "
    "on jit(lambda x: fori_loop(0, 10, lambda i, c: c*1.5+i, x)) with x f32[3] it misses "
    "s32[] 10, s32[] 1 and f32[] 1.5",
)
def _rt10_constants_entry_and_fusion_calls(hlo_text: str) -> list[tuple[str, str]]:
    module = parse_hlo(hlo_text)
    comps = {c.name.lstrip("%"): c for c in module}
    out = []
    seen = set()

    def visit(comp):
        if comp.name in seen:
            return
        seen.add(comp.name)
        for inst in comp:
            if inst.opcode == "constant":
                out.append((inst.shape, str(inst.payload)))
            if inst.opcode == "fusion":
                for n in inst.called_computations:
                    visit(comps[n.lstrip("%")])

    visit(module.entry)
    return out


@wrong(
    "three_texts",
    why="'hlo ... as jax.stages prints it by default': takes the HLO from "
    "lowered.compiler_ir('hlo').as_hlo_text(), which elides large literals as {...}; "
    "lowered.as_text(dialect='hlo') prints them. Same text for small programs, wrong for "
    "jax.jit(lambda x: x * np.arange(40, dtype=np.float32)) with x f32[40]",
)
def _rt10_three_texts_compiler_ir_hlo(f, *args) -> dict[str, str]:
    lowered = jax.jit(f).lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.compiler_ir("hlo").as_hlo_text(),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "predict_entry_root",
    why="overgeneralises 'a scalar prints f32[] without braces' to "
    "'a vector has only one possible layout, so none is printed': predicts ('fusion', 'f32[3]') "
    "for 'jnp.sin(x)' with x float32[3]; compiled ROOT is ('fusion', 'f32[3]{0}')",
)
def _rt10_predict_entry_root_vector_no_layout(program, args):
    op, shape = _rt10_predict(program, args)
    import re

    # strip "{0}" after any rank-1 shape, also inside tuples
    shape = re.sub(r"(\w+\[\d+\])\{0\}", r"\1", shape)
    return (op, shape)


@wrong(
    "mlp_flops",
    why="believes broadcasting each bias to the batch is arithmetic too (one flop per "
    "element of the broadcast result), on top of the adds, relu and both dots; broadcast costs no "
    "flops. Wrong on every shape, e.g. (8, 16, 32, 4): cost analysis 10784, this gives 11072",
)
def _rt10_mlp_flops_broadcast_counted(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    dots = 2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim
    adds = batch * hidden + batch * out_dim
    relu = batch * hidden
    broadcasts = batch * hidden + batch * out_dim
    return dots + adds + relu + broadcasts
