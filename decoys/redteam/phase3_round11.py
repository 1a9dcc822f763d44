"""Red-team wrong answers for phase 3, round 11, written from the contract only.

New kinds: a reshape rule generalised from "two rows" to "first dimension 2" (or to "merging is a
fusion"), a transpose believed
to be a relayout ({0,1}), an MLP formula fitted on square examples (in_dim == hidden), the
optimized text taken from the runtime executable (backend_config keys reordered), XLA_FLAGS set
alongside compiler options, paths returned as str, memory-space annotations stripped from layouts,
every fusion counted as a `fusion` of its own kind, transcendentals subtracted from flops.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_RT11_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt11_fmt(shape, dt, layout=None) -> str:
    shape = tuple(int(d) for d in shape)
    name = _RT11_DT.get(str(dt), str(dt))
    if not shape:
        return f"{name}[]"
    dims = ",".join(str(d) for d in shape)
    if layout is None:
        layout = tuple(reversed(range(len(shape))))
    return f"{name}[{dims}]{{{','.join(str(i) for i in layout)}}}"


def _rt11_predict(program, args, bug=None):
    """A predictor of the ENTRY ROOT that is right except for one wrong belief (`bug`)."""
    x = args[0]
    shape, dt = tuple(int(d) for d in x.shape), str(x.dtype)
    is_int = dt == "int32"
    if program in ("x * 2 + 1", "x + 1"):
        return ("fusion", _rt11_fmt(shape, dt))
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return ("fusion", _rt11_fmt(shape, "float32" if is_int else dt))
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bfloat16":
            return ("copy", _rt11_fmt(shape, dt))
        return ("fusion", _rt11_fmt(shape, "bfloat16"))
    if program == "x.sum(axis=1)":
        return ("fusion", _rt11_fmt(shape[:1] + shape[2:], dt))
    if program == "x.max()":
        return ("fusion", _rt11_fmt((), dt))
    if program == "x.T":
        if len(shape) == 1:
            return ("copy", _rt11_fmt(shape, dt))
        if bug == "relayout":
            # "a transpose is a layout change": same bytes, reversed minor-to-major
            return ("fusion", _rt11_fmt(shape[::-1], dt, layout=tuple(range(len(shape)))))
        return ("fusion", _rt11_fmt(shape[::-1], dt))
    if program == "x itself":
        return ("copy", _rt11_fmt(shape, dt))
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = 1
        for d in shape:
            n *= d
        new = (2, n // (2 * shape[-1]), shape[-1])
        if bug == "first_dim_two":
            special = shape[0] == 2
        else:
            special = len(shape) == 2 and shape[0] == 2
        return ("fusion" if special else "copy", _rt11_fmt(new, dt))
    if program == "(x * 2, x + 1)":
        s = _rt11_fmt(shape, dt)
        return ("tuple", f"({s}, {s})")
    if program == "(x, x.sum())":
        return ("tuple", f"({_rt11_fmt(shape, dt)}, {_rt11_fmt((), dt)})")
    if program == "(v, x)":
        v = args[1]
        return ("tuple", f"({_rt11_fmt(v.shape, v.dtype)}, {_rt11_fmt(x.shape, x.dtype)})")
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="generalises the README's 'a matrix of two rows reshaped to [2,1,n] is a fusion' to "
    "'any x whose first dimension is 2': for 'x.reshape(2, -1, x.shape[-1])' with x float32[2,3,4] "
    "(reshape to the very same shape, a bitcast) predicts ('fusion', 'f32[2,3,4]{2,1,0}'); "
    "compiled ROOT is ('copy', 'f32[2,3,4]{2,1,0}')",
)
def _rt11_predict_entry_root_reshape_first_dim_two(program, args):
    return _rt11_predict(program, args, bug="first_dim_two")


@wrong(
    "predict_entry_root",
    why="believes a transpose is done as a layout change ('a {0,1} inside a fusion is a transpose "
    "done as a layout change'), so the ROOT keeps the input's bytes in reversed minor-to-major: "
    "for 'x.T' with x float32[8,4] predicts ('fusion', 'f32[4,8]{0,1}'); compiled ROOT is "
    "('fusion', 'f32[4,8]{1,0}') (rank 3: {0,1,2} vs {2,1,0})",
)
def _rt11_predict_entry_root_transpose_relayout(program, args):
    return _rt11_predict(program, args, bug="relayout")


@wrong(
    "mlp_flops",
    why="formula fitted on the README's square examples (1024,1024,1024,2) and (1000,1000,1000,3) "
    "where in_dim == hidden: the second dot counted as 2*batch*in_dim*out_dim (and relu over "
    "batch*in_dim). Right whenever in_dim == hidden, wrong otherwise: (8,16,32,4) gives 9632, "
    "cost analysis 10784; (3,4097,4099,5) is also off",
)
def _rt11_mlp_flops_square_fit(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    first = 2 * batch * in_dim * hidden
    second = 2 * batch * in_dim * out_dim
    return first + second + batch * hidden + batch * in_dim + batch * out_dim


@wrong(
    "three_texts",
    why="'optimized ... as jax.stages prints it by default': takes the optimized text from "
    "compiled.runtime_executable().hlo_modules()[0].to_string(), the HLO XLA compiled but not "
    "jax.stages' print: on mlp(params, x f32[8,16]) the kCustom fusions' backend_config prints "
    'its keys in another order ({"outer_dimension_partitions":[],"fusion_config":...})',
)
def _rt11_three_texts_runtime_executable(f, *args) -> dict[str, str]:
    lowered = jax.jit(f).lower(*args)
    compiled = lowered.compile()
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": compiled.runtime_executable().hlo_modules()[0].to_string(),
    }


def _rt11_snapshot(directory: str) -> dict[str, int]:
    out = {}
    for name in os.listdir(directory):
        try:
            out[name] = os.stat(os.path.join(directory, name)).st_mtime_ns
        except FileNotFoundError:
            pass
    return out


def _rt11_dump(f, args, directory):
    os.makedirs(directory, exist_ok=True)
    before = _rt11_snapshot(directory)
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}
    )
    after = _rt11_snapshot(directory)
    changed = [n for n, t in after.items() if before.get(n) != t]
    b = next(n for n in changed if n.endswith(".before_optimizations.txt"))
    prefix = b.split(".")[0]
    a = next(
        n for n in changed if n.startswith(prefix + ".") and n.endswith("_after_optimizations.txt")
    )
    return b, a


@wrong(
    "dump_files",
    why="'Leave the XLA_FLAGS variable alone': belt and braces, it also appends "
    "--xla_dump_to=<directory> --xla_dump_hlo_as_text to os.environ['XLA_FLAGS'] before compiling "
    "and leaves it there (the files it returns are right); after dump_files(lambda x: x * 0.5, "
    "(ones(3),), d) XLA_FLAGS has changed",
)
def _rt11_dump_files_sets_xla_flags(f, args: tuple, directory: str) -> tuple[Path, Path]:
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = (flags + f" --xla_dump_to={directory} --xla_dump_hlo_as_text").strip()
    b, a = _rt11_dump(f, args, directory)
    return Path(directory) / b, Path(directory) / a


@wrong(
    "dump_files",
    why="returns tuple[str, str] (os.path.join) instead of tuple[Path, Path]: the right files, "
    "but Path(p) == str(p) is False and str has no .read_text(); wrong on every call, e.g. "
    "scale_and_shift with x f32[3]",
)
def _rt11_dump_files_str_paths(f, args: tuple, directory: str) -> tuple[Path, Path]:
    b, a = _rt11_dump(f, args, directory)
    return os.path.join(directory, b), os.path.join(directory, a)


def _rt11_split_top(inner: str) -> list[str]:
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


def _rt11_layout_no_memspace(shape: str) -> str:
    shape = re.sub(r"/\*.*?\*/", "", shape).strip()
    if shape.startswith("("):
        return (
            "(" + ", ".join(_rt11_layout_no_memspace(p) for p in _rt11_split_top(shape[1:-1])) + ")"
        )
    close = shape.find("]")
    rest = shape[close + 1 :].strip()
    if not rest.startswith("{"):
        return "{}"
    layout = rest[: rest.index("}") + 1]
    # "S(n) is where the buffer lives, not how it is laid out": dropped, tiles kept
    layout = re.sub(r"S\(\d+\)", "", layout).replace(":}", "}")
    return layout


@wrong(
    "entry_parameter_layouts",
    why="'a layout is all the text between its braces': keeps tiles but strips the memory-space "
    "annotation S(n) as 'not layout': for ENTRY '%p = f32[8,128]{1,0:T(8,128)S(1)} parameter(0)' "
    "answers '{1,0:T(8,128)}' instead of '{1,0:T(8,128)S(1)}'; '{0:S(1)}' becomes '{0}'",
)
def _rt11_entry_parameter_layouts_drop_memory_space(hlo_text: str) -> list[str]:
    module = parse_hlo(hlo_text)
    params = [i for i in module.entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(str(i.payload).strip()))
    return [_rt11_layout_no_memspace(i.shape) for i in params]


@wrong(
    "fusion_contents",
    why="generalises 'a fusion inside a fused computation is one more fusion' to every fusion: "
    "each fusion instruction also counts itself as a 'fusion' under its own kind; on "
    "mlp(params, x f32[8,16]) kLoop gets fusion: 2 and kCustom fusion: 2 that are not there",
)
def _rt11_fusion_contents_counts_itself(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    comps = {c.name.lstrip("%"): c for c in module}
    out: dict[str, Counter] = {}

    def count_comp(comp, kinds):
        for inst in comp:
            if inst.opcode == "parameter":
                continue
            for k in kinds:
                out.setdefault(k, Counter())[inst.opcode] += 1
            inner = kinds
            if inst.opcode == "fusion":
                own = inst.attribute("kind")
                inner = kinds + ((own,) if own not in kinds else ())
            for name in inst.called_computations:
                count_comp(comps[name.lstrip("%")], inner)

    for comp in module:
        for inst in comp:
            if inst.opcode != "fusion":
                continue
            # skip fusions that sit inside fused computations: they are reached through calls
            if any(
                inst2.opcode == "fusion"
                and comp.name.lstrip("%") in [n.lstrip("%") for n in inst2.called_computations]
                for c2 in module
                for inst2 in c2
            ):
                continue
            kind = inst.attribute("kind")
            out.setdefault(kind, Counter())["fusion"] += 1  # the bug
            for name in inst.called_computations:
                count_comp(comps[name.lstrip("%")], (kind,))
    return out


@wrong(
    "flops",
    why="misreads 'transcendentals are a separate count, not flops' as 'the flops entry includes "
    "them, subtract them': returns flops - transcendentals; wrong on any program with exp/tanh, "
    "e.g. jax.nn.softmax or lambda x: jnp.tanh(x) * 2 on f32[8] (reports 8 flops, this gives 0)",
)
def _rt11_flops_minus_transcendentals(f, *args) -> float:
    cost = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return float(cost.get("flops", 0.0)) - float(cost.get("transcendentals", 0.0))


@wrong(
    "predict_entry_root",
    why="believes only a reshape that splits a dimension is a free bitcast, while one that merges "
    "dimensions must move data (a fusion): for 'x.reshape(2, -1, x.shape[-1])' with x "
    "float32[4,3,5] (merges 4*3 into 2*6) predicts ('fusion', 'f32[2,6,5]{2,1,0}'); compiled ROOT "
    "is ('copy', 'f32[2,6,5]{2,1,0}')",
)
def _rt11_predict_entry_root_reshape_merge_fusion(program, args):
    op, shape = _rt11_predict(program, args)
    if program == "x.reshape(2, -1, x.shape[-1])" and len(args[0].shape) == 3:
        if int(args[0].shape[0]) != 2:
            return ("fusion", shape)
    return (op, shape)
