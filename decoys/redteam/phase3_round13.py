"""Red-team wrong answers for phase 3, round 13, written from the contract only."""

from __future__ import annotations

import re
from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt13_live(comp):
    """Names of the instructions of `comp` the ROOT depends on (dead code left out)."""
    by_name = {i.name: i for i in comp}
    root = next(i for i in comp if i.is_root)
    live, todo = set(), [root.name]
    while todo:
        n = todo.pop()
        if n in live or n not in by_name:
            continue
        live.add(n)
        todo.extend(by_name[n].operands)
    return live


def _rt13_layout(info) -> str:
    if info.is_tuple:
        return "(" + ", ".join(_rt13_layout(e) for e in info.elements) + ")"
    lay = info.layout
    if lay is None or lay == "":
        return "{}"
    return lay if str(lay).startswith("{") else "{" + str(lay) + "}"


def _rt13_param_number(instr) -> int:
    return int(str(instr.payload).strip())


@wrong(
    "three_texts",
    why="'each as jax.stages prints it by default': tidies each text with .strip() (drops the "
    "trailing newline the printers end with); the texts differ from the stages' prints on "
    "every program, e.g. value_and_total at (3, 1)",
)
def _rt13_three_texts_stripped(f, *args) -> dict[str, str]:
    lowered = jax.jit(f).lower(*args)
    return {
        "stablehlo": lowered.as_text().strip(),
        "hlo": lowered.as_text(dialect="hlo").strip(),
        "optimized": lowered.compile().as_text().strip(),
    }


@wrong(
    "entry_parameter_layouts",
    why="'the layouts of the ENTRY computation's parameters': believes a parameter only dead code "
    "reads is no input (jit drops unused inputs), so keeps only parameters the ROOT depends on; "
    "on HAND_WRITTEN parameter 2 (f16[4,2]{0,1}, read only by the dead negate) is left out",
)
def _rt13_entry_parameter_layouts_live_only(hlo_text: str) -> list[str]:
    entry = parse_hlo(hlo_text).entry
    live = _rt13_live(entry)
    params = [i for i in entry if i.opcode == "parameter" and i.name in live]
    params.sort(key=_rt13_param_number)
    return [_rt13_layout(p.shape_info) for p in params]


@wrong(
    "constants",
    why="'every constant instruction in the module': skips constants in dead code (nothing the "
    "ROOT depends on reads them, 'XLA will delete them'); on HAND_WRITTEN %spare's pred[] true, "
    "s32[2,2] grid and f16[] 0.25 are missing",
)
def _rt13_constants_live_only(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for comp in parse_hlo(hlo_text):
        live = _rt13_live(comp)
        for i in comp:
            if i.opcode == "constant" and i.name in live:
                out.append((i.shape, i.payload))
    return out


@wrong(
    "constants",
    why="'the literal as written between the parentheses': treats an elided literal {...} as "
    "unreadable and leaves that constant out; the compiled long_table program's 12-element "
    "table prints constant({...}) and is missing",
)
def _rt13_constants_skip_elided(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for comp in parse_hlo(hlo_text):
        for i in comp:
            if i.opcode == "constant" and "..." not in str(i.payload):
                out.append((i.shape, i.payload))
    return out


def _rt13_mlp(b, i, h, o):
    return 2 * b * i * h + 2 * b * h * o + 2 * b * h + b * o


@wrong(
    "mlp_flops",
    why="the second bias b2 is added to the (batch, out_dim) result; this counts it over "
    "(batch, in_dim) (x's shape, the 'other end' of the MLP); right whenever in_dim == out_dim, "
    "wrong on (8, 16, 32, 4): 10880 instead of 10784",
)
def _rt13_mlp_flops_b2_on_in_dim(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden * out_dim
        + 2 * batch * hidden
        + batch * in_dim
    )


_RT13_XLA = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt13_fmt(shape, dt) -> str:
    name = _RT13_XLA[str(np.dtype(dt))]
    dims = ",".join(str(d) for d in shape)
    if not shape:
        return f"{name}[]"
    return f"{name}[{dims}]{{{','.join(str(k) for k in reversed(range(len(shape))))}}}"


def _rt13_predict(program, args, reshape_rule):
    x = args[0]
    shape, dt = tuple(x.shape), str(np.dtype(x.dtype))
    if program in ("x * 2 + 1", "x + 1"):
        return "fusion", _rt13_fmt(shape, dt)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return "fusion", _rt13_fmt(shape, "float32" if dt == "int32" else dt)
    if program == "x.astype(jnp.bfloat16)":
        return ("copy" if dt == "bfloat16" else "fusion"), _rt13_fmt(shape, "bfloat16")
    if program == "x.sum(axis=1)":
        return "fusion", _rt13_fmt(shape[:1] + shape[2:], dt)
    if program == "x.max()":
        return "fusion", _rt13_fmt((), dt)
    if program == "x.T":
        if len(shape) == 1:
            return "copy", _rt13_fmt(shape, dt)
        return "fusion", _rt13_fmt(shape[::-1], dt)
    if program == "x itself":
        return "copy", _rt13_fmt(shape, dt)
    if program == "x.reshape(2, -1, x.shape[-1])":
        size = int(np.prod(shape))
        new = (2, size // (2 * shape[-1]), shape[-1])
        return reshape_rule(shape, new), _rt13_fmt(new, dt)
    if program == "(x * 2, x + 1)":
        s = _rt13_fmt(shape, dt)
        return "tuple", f"({s}, {s})"
    if program == "(x, x.sum())":
        return "tuple", f"({_rt13_fmt(shape, dt)}, {_rt13_fmt((), dt)})"
    if program == "(v, x)":
        v = args[1]
        return "tuple", f"({_rt13_fmt(tuple(v.shape), v.dtype)}, {_rt13_fmt(shape, dt)})"
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="'a result that is an input, or a reshape of one, is a copy' read as 'the same shape is "
    "the input, a new shape moves data': any reshape that changes the shape predicted a "
    "fusion; wrong on x.reshape(2, -1, x.shape[-1]) with x f32[4,3] (free bitcast: ROOT "
    "('copy', 'f32[2,2,3]{2,1,0}')) and with x f32[4,3,2] (copy f32[2,6,2]{2,1,0})",
)
def _rt13_predict_entry_root_reshape_by_shape(program: str, args: tuple) -> tuple[str, str]:
    return _rt13_predict(
        program, args, lambda old, new: "copy" if tuple(old) == tuple(new) else "fusion"
    )


@wrong(
    "predict_entry_root",
    why="'the result's dtype is jnp's': believes jnp computes transcendentals of half-precision "
    "inputs in float32 and returns float32 (as it does for int32); wrong on jnp.sin(x) / "
    "jnp.tanh(x) with x bf16[3] or f16[2,3] (ROOT ('fusion', 'bf16[3]{0}'), not f32[3]{0})",
)
def _rt13_predict_entry_root_half_transcendental_f32(program: str, args: tuple) -> tuple[str, str]:
    op, shape = _rt13_predict(program, args, lambda old, new: "fusion" if new[1] == 1 else "copy")
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return op, _rt13_fmt(tuple(args[0].shape), "float32")
    return op, shape


@wrong(
    "fusion_contents",
    why="'a fusion inside a fused computation ... the computations it calls count for the outer "
    "kind as well, and it counts under its own kind too': avoids 'double counting' when the "
    "nested fusion has the same kind as the outer one (counts its computation once); wrong on "
    "a kLoop fusion whose fused computation holds a kLoop fusion (its ops must count twice "
    "under kLoop); right on HAND_WRITTEN (kInput inside kLoop)",
)
def _rt13_fusion_contents_same_kind_once(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    comps = {c.name: c for c in module}
    out: dict[str, Counter] = {}

    def count(cname: str, kinds: tuple) -> None:
        for i in comps[cname]:
            if i.opcode == "parameter":
                continue
            for k in kinds:
                out.setdefault(k, Counter())[i.opcode] += 1
            for sub in i.called_computations:
                if i.opcode == "fusion":
                    inner = i.attribute("kind")
                    count(sub, tuple(dict.fromkeys(kinds + (inner,))))
                else:
                    count(sub, kinds)

    for comp in module:
        if any(
            i.opcode == "fusion" and comp.name in i.called_computations for c in module for i in c
        ):
            continue  # a fused computation: reached from its caller
        for i in comp:
            if i.opcode == "fusion":
                for sub in i.called_computations:
                    count(sub, (i.attribute("kind"),))
    return out


def _rt13_default_layouts(shape: str) -> str:
    def fix(m):
        dims = m.group(2)
        if not dims:
            return f"{m.group(1)}[]"
        rank = dims.count(",") + 1
        return f"{m.group(1)}[{dims}]{{{','.join(str(k) for k in reversed(range(rank)))}}}"

    return re.sub(r"(\w+)\[([^\]]*)\](\{[^}]*\})?", fix, shape)


@wrong(
    "entry_root",
    why="'the shape exactly as the instruction line prints it': takes dtype and dims from the "
    "ROOT and writes the row-major layout for each array (layout implied by the rank); right on "
    "every row-major result, wrong on a ROOT f32[2,3]{0,1} (e.g. ENTRY ROOT %t = f32[2,3]{0,1} "
    "transpose(...), or a tuple holding one)",
)
def _rt13_entry_root_default_layout(hlo_text: str) -> tuple[str, str]:
    entry = parse_hlo(hlo_text).entry
    root = next(i for i in entry if i.is_root)
    return root.opcode, _rt13_default_layouts(root.shape)


@wrong(
    "predict_entry_root",
    why="'the result's dtype is jnp's': reads the README's 'the max-reduce starts from -inf' as "
    "'a max reduction is carried in a float', so x.max() of an int32 array is predicted f32[]; "
    "jnp keeps int32 (its init is INT_MIN): wrong on x.max() with x int32[8,4] (ROOT "
    "('fusion', 's32[]'))",
)
def _rt13_predict_entry_root_int_max_float(program: str, args: tuple) -> tuple[str, str]:
    op, shape = _rt13_predict(program, args, lambda old, new: "fusion" if new[1] == 1 else "copy")
    if program == "x.max()" and str(np.dtype(args[0].dtype)) == "int32":
        return op, "f32[]"
    return op, shape
