"""Red-team wrong answers for phase 3, written from the contract only.

Round 6: each answer agrees with a correct one on the bank's programs and the two hand-written
modules as far as we can tell, and is wrong on a valid input the bank may lack (named in `why`).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------- three_texts


def _rt6_texts(lowered):
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


_rt6_TT_CACHE: dict = {}


@wrong(
    "three_texts",
    why="every call compiles for the args it is given (dtype included); caches on (f, shapes) "
    "and ignores dtypes; wrong on value_and_total at f32[2,3] then at s32[2,3] (same shapes)",
)
def _rt6_three_texts_cache_ignores_dtype(f, *args) -> dict[str, str]:
    key = (id(f), tuple(np.shape(a) for a in jax.tree_util.tree_leaves(args)))
    if key not in _rt6_TT_CACHE:
        _rt6_TT_CACHE[key] = _rt6_texts(jax.jit(f).lower(*args))
    return dict(_rt6_TT_CACHE[key])


@wrong(
    "three_texts",
    why="the texts of jax.jit(f) for the args given; normalises leaves with np.asarray, so a "
    "Python scalar becomes a strong f32 and promotes a half array; wrong on scaled(x f16[4], 2.0)",
)
def _rt6_three_texts_numpy_args(f, *args) -> dict[str, str]:
    args = jax.tree_util.tree_map(np.asarray, args)
    return _rt6_texts(jax.jit(f).lower(*args))


@wrong(
    "three_texts",
    why="the texts of jax.jit(f), not jax.jit(f, keep_unused=True): keeps the unused input as "
    "an ENTRY parameter; wrong on doubled_ignoring(x, unused)",
)
def _rt6_three_texts_keep_unused(f, *args) -> dict[str, str]:
    return _rt6_texts(jax.jit(f, keep_unused=True).lower(*args))


# ---------------------------------------------------------------- dump_files

_rt6_BEFORE = "before_optimizations.txt"
_rt6_AFTER = "after_optimizations.txt"


def _rt6_compile_dumping(f, args, directory):
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(directory), "xla_dump_hlo_as_text": True}
    )


def _rt6_snapshot(directory):
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    return {p.name: p.stat().st_mtime_ns for p in d.iterdir() if p.is_file()}


def _rt6_prefix(name):
    return name.split(".", 1)[0]


@wrong(
    "dump_files",
    why="return the files this compile wrote even when their names already exist; takes only "
    "names that are new, else the highest-numbered match: wrong when the directory already holds "
    "this very compile's file names (XLA rewrites them) next to a higher-numbered other module",
)
def _rt6_dump_files_new_names_only(f, args: tuple, directory: str) -> tuple[Path, Path]:
    before = set(_rt6_snapshot(directory))
    _rt6_compile_dumping(f, args, directory)
    after = set(_rt6_snapshot(directory))
    new = sorted(after - before)
    pool = new if any(n.endswith(_rt6_BEFORE) for n in new) else sorted(after)
    b = [n for n in pool if n.endswith(_rt6_BEFORE)][-1]
    a = [n for n in pool if n.endswith(_rt6_AFTER) and _rt6_prefix(n) == _rt6_prefix(b)][-1]
    return Path(directory) / b, Path(directory) / a


@wrong(
    "dump_files",
    why="not the first or last match: picks the highest module number whose name holds "
    "jit_<f.__name__>; wrong when another process left higher-numbered files with the same names",
)
def _rt6_dump_files_highest_number(f, args: tuple, directory: str) -> tuple[Path, Path]:
    _rt6_compile_dumping(f, args, directory)
    tag = "jit_" + getattr(f, "__name__", "")
    names = sorted(p.name for p in Path(directory).iterdir() if tag in p.name)
    b = [n for n in names if n.endswith(_rt6_BEFORE)][-1]
    a = [n for n in names if n.endswith(_rt6_AFTER) and _rt6_prefix(n) == _rt6_prefix(b)][-1]
    return Path(directory) / b, Path(directory) / a


@wrong(
    "dump_files",
    why="the after-optimizations HLO file: matches '*after_optimizations*' and takes the first "
    "sorted, i.e. the -buffer-assignment (or -memory-usage-report) companion; wrong on any compile "
    "whose dump holds those companions (CPU, default options)",
)
def _rt6_dump_files_companion(f, args: tuple, directory: str) -> tuple[Path, Path]:
    old = _rt6_snapshot(directory)
    _rt6_compile_dumping(f, args, directory)
    now = _rt6_snapshot(directory)
    changed = sorted(n for n, t in now.items() if old.get(n) != t)
    b = next(n for n in changed if n.endswith(_rt6_BEFORE))
    a = next(n for n in changed if "after_optimizations" in n and _rt6_prefix(n) == _rt6_prefix(b))
    return Path(directory) / b, Path(directory) / a


# ---------------------------------------------------------------- entry_parameter_layouts


def _rt6_layout_text(shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_rt6_layout_text(e) for e in shape.elements) + ")"
    return shape.layout or "{}"


def _rt6_params(module):
    return [i for i in module.entry if i.opcode == "parameter"]


@wrong(
    "entry_parameter_layouts",
    why="parameter-number order (the N of parameter(N)); reads N from the digits of the name "
    "(Arg_3.4 -> 3), else line order; wrong on a module whose parameter names carry other "
    "numbers or none (p7 = parameter(0), or hand-written names declared out of order)",
)
def _rt6_layouts_number_from_name(hlo_text: str) -> list[str]:
    params = _rt6_params(parse_hlo(hlo_text))

    def number(pair):
        idx, inst = pair
        m = re.search(r"(\d+)", inst.name)
        return (int(m.group(1)) if m else idx, idx)

    return [_rt6_layout_text(i.shape_info) for _, i in sorted(enumerate(params), key=number)]


@wrong(
    "entry_parameter_layouts",
    why="a tuple's layout is its elements' in parentheses at every depth; flattens nested "
    "tuples one level; wrong on a parameter ((f32[2]{0}, s32[]), f32[3]{0})",
)
def _rt6_layouts_flat_tuples(hlo_text: str) -> list[str]:
    def flat(shape):
        out = []
        for e in shape.elements:
            out.extend(flat(e) if e.is_tuple else [e.layout or "{}"])
        return out

    params = sorted(_rt6_params(parse_hlo(hlo_text)), key=lambda i: int(i.payload))
    return [
        "(" + ", ".join(flat(i.shape_info)) + ")"
        if i.shape_info.is_tuple
        else (i.shape_info.layout or "{}")
        for i in params
    ]


@wrong(
    "entry_parameter_layouts",
    why="a layout is all the text between its braces, tiles and memory space too; rebuilds it "
    "from minor_to_major; wrong on f32[8,128]{1,0:T(8,128)} or {0:S(1)}",
)
def _rt6_layouts_from_minor_to_major(hlo_text: str) -> list[str]:
    def text(shape):
        if shape.is_tuple:
            return "(" + ", ".join(text(e) for e in shape.elements) + ")"
        order = shape.minor_to_major or ()
        return "{" + ",".join(str(d) for d in order) + "}"

    params = sorted(_rt6_params(parse_hlo(hlo_text)), key=lambda i: int(i.payload))
    return [text(i.shape_info) for i in params]


# ---------------------------------------------------------------- entry_root


@wrong(
    "entry_root",
    why="the shape exactly as the line prints it; rebuilds a tuple shape from its elements, so "
    "the /*index=5*/ comments XLA prints in tuples of 6+ elements vanish; wrong on a ROOT "
    "tuple with 6 or more results",
)
def _rt6_entry_root_rebuilt_tuple(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info

    def text(shape):
        if shape.is_tuple:
            return "(" + ", ".join(text(e) for e in shape.elements) + ")"
        return shape.text

    return root.opcode, text(s)


@wrong(
    "entry_root",
    why="the ROOT of ENTRY, whatever ENTRY is named; takes the computation named main* (as JAX "
    "names it), else the last computation; wrong on a module whose ENTRY is %compute and not last "
    "(HAND_WRITTEN-like), or whose fused computation main_fusion sorts before ENTRY %main.5",
)
def _rt6_entry_root_named_main(hlo_text: str) -> tuple[str, str]:
    module = parse_hlo(hlo_text)
    comps = list(module)
    named = [c for c in comps if c.name.lstrip("%").startswith("main")]
    comp = named[0] if named else comps[-1]
    r = comp.root
    return r.opcode, r.shape


@wrong(
    "entry_root",
    why="the shape as printed; rebuilds an array shape as dtype[dims]{layout} from dims, so a "
    "bounded dynamic dim <=4 prints as 4 and a scalar gets '{}' appended; wrong on a ROOT "
    "f32[] (x.max()) or f32[<=4]{0}",
)
def _rt6_entry_root_rebuilt_array(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info
    if s.is_tuple:
        return root.opcode, root.shape
    dims = ",".join(str(d) for d in s.dims)
    return root.opcode, f"{s.dtype}[{dims}]{s.layout or '{}'}"


# ---------------------------------------------------------------- fusion_contents


def _rt6_contents(module, name, follow, depth=0, limit=None):
    out = Counter()
    comp = module.computation(name.lstrip("%"))
    if comp is None or (limit is not None and depth > limit):
        return out
    for inst in comp:
        if inst.opcode == "parameter":
            continue
        out[inst.opcode] += 1
        for called in follow(inst):
            out += _rt6_contents(module, called, follow, depth + 1, limit)
    return out


def _rt6_fusion_contents(hlo_text, follow, limit=None, nested_own_kind=True):
    module = parse_hlo(hlo_text)
    fused = set()
    for comp in module:
        for inst in comp:
            if inst.opcode == "fusion":
                fused.update(c.lstrip("%") for c in inst.called_computations)
    result: dict[str, Counter] = defaultdict(Counter)
    for comp in module:
        if not nested_own_kind and comp.name.lstrip("%") in fused:
            continue
        for inst in comp:
            if inst.opcode == "fusion":
                kind = inst.attribute("kind", "")
                for called in inst.called_computations:
                    result[kind] += _rt6_contents(module, called, follow, 0, limit)
                result.setdefault(kind, Counter())
    return dict(result)


def _rt6_all_calls(inst):
    return inst.called_computations


def _rt6_calls_and_to_apply(inst):
    names = []
    for key in ("calls", "to_apply"):
        value = inst.attribute(key)
        if value:
            names += re.findall(r"%?([\w.\-]+)", value)
    return names


@wrong(
    "fusion_contents",
    why="count the computations called by whatever attribute names them (select=, scatter=); "
    "follows only calls= and to_apply=; wrong on a fusion holding a select-and-scatter "
    "(its select/scatter computations' ops go uncounted)",
)
def _rt6_fusion_contents_calls_and_to_apply(hlo_text: str) -> dict[str, Counter]:
    return _rt6_fusion_contents(hlo_text, _rt6_calls_and_to_apply)


@wrong(
    "fusion_contents",
    why="called computations count at any depth; recursion stops two calls below the fused "
    "computation (enough for fusion > nested fusion > reducer); wrong on kLoop > kLoop > "
    "kInput fusion > reduce > sum (the reducer three levels down is dropped)",
)
def _rt6_fusion_contents_depth_two(hlo_text: str) -> dict[str, Counter]:
    return _rt6_fusion_contents(hlo_text, _rt6_all_calls, limit=2)


@wrong(
    "fusion_contents",
    why="a fusion inside a fused computation counts under its own kind too; skips fusions that "
    "sit inside fused computations as roots of their own kind; wrong on HAND_WRITTEN-like "
    "nesting where the inner kind (kInput) occurs nowhere else",
)
def _rt6_fusion_contents_no_inner_kind(hlo_text: str) -> dict[str, Counter]:
    return _rt6_fusion_contents(hlo_text, _rt6_all_calls, nested_own_kind=False)


# ---------------------------------------------------------------- constants


def _rt6_constants(module):
    return [(i.shape, i.payload) for c in module for i in c if i.opcode == "constant"]


_rt6_CONST_LINE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*((?:pred|bf16|f16|f32|f64|s8|s16|s32|s64|u8|u16|u32|u64|"
    r"c64)\[[^\]]*\](?:\{[^}]*\})?)\s+constant\("
)


@wrong(
    "constants",
    why="every element type (f8e4m3fn, c128, s4, ...) and tuple-shaped constants; scans lines "
    "with a regex of the common element types only; wrong on a module with an f8e4m3fn, c128 "
    "or tuple-shaped constant",
)
def _rt6_constants_line_regex(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for line in hlo_text.splitlines():
        m = _rt6_CONST_LINE.match(line)
        if not m:
            continue
        start = m.end()
        depth, i = 1, start
        while i < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[i], 0)
            i += 1
        out.append((m.group(1), line[start : i - 1]))
    return out


@wrong(
    "constants",
    why="each instruction once, same name in two computations = two entries; dedupes by "
    "instruction name; wrong on a module where two computations each hold a %zero constant",
)
def _rt6_constants_by_name(hlo_text: str) -> list[tuple[str, str]]:
    seen = {}
    for c in parse_hlo(hlo_text):
        for i in c:
            if i.opcode == "constant":
                seen.setdefault(i.name, (i.shape, i.payload))
    return list(seen.values())


@wrong(
    "constants",
    why="each instruction once; walks the call graph from ENTRY and counts a callee's constants "
    "per call (plus uncalled computations once); wrong when two fusions call one fused "
    "computation holding a constant, or two reduces a reducer with a constant",
)
def _rt6_constants_per_call(hlo_text: str) -> list[tuple[str, str]]:
    module = parse_hlo(hlo_text)
    out = []
    reached = set()

    def walk(comp):
        reached.add(comp.name)
        for i in comp:
            if i.opcode == "constant":
                out.append((i.shape, i.payload))
            for called in i.called_computations:
                sub = module.computation(called.lstrip("%"))
                if sub is not None:
                    walk(sub)

    walk(module.entry)
    for comp in module:
        if comp.name not in reached:
            walk(comp)
    return out


# ---------------------------------------------------------------- flops


@wrong(
    "flops",
    why="the compiled module's cost analysis, after its passes; reads the lowered (unoptimized) "
    "stage's cost analysis; wrong on shared_sum (CSE removes the second a + b) and on programs "
    "where simplification drops work (x * 1, unused results)",
)
def _rt6_flops_lowered(f, *args) -> float:
    ca = jax.jit(f).lower(*args).cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return float((ca or {}).get("flops", 0.0))


@wrong(
    "flops",
    why="transcendentals are a separate count, not flops; adds them; wrong on looped "
    "(tanh and sin) or any program with exp/tanh",
)
def _rt6_flops_with_transcendentals(f, *args) -> float:
    ca = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return float(ca.get("flops", 0.0) + ca.get("transcendentals", 0.0))


_rt6_FLOPS_CACHE: dict = {}


@wrong(
    "flops",
    why="compiled for `args`: the same f at other shapes is another program; caches by the "
    "function object; wrong on value_and_total at (3,1) then at (1,4)",
)
def _rt6_flops_cached_by_function(f, *args) -> float:
    if f not in _rt6_FLOPS_CACHE:
        ca = jax.jit(f).lower(*args).compile().cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0]
        _rt6_FLOPS_CACHE[f] = float(ca.get("flops", 0.0))
    return _rt6_FLOPS_CACHE[f]


# ---------------------------------------------------------------- mlp_flops


@wrong(
    "mlp_flops",
    why="relu (a maximum) costs one flop per element of (batch, hidden); leaves it out; "
    "wrong on every shape, e.g. (2, 3, 5, 7): 224 instead of 234",
)
def _rt6_mlp_flops_no_relu(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + batch * hidden
        + 2 * batch * hidden * out_dim
        + batch * out_dim
    )


@wrong(
    "mlp_flops",
    why="the exact count past 2**24; rounds through float32 as cost analysis does; wrong on "
    "(batch=4097, in_dim=2049, hidden=3, out_dim=2) whose count is past 2**24 and odd-ish",
)
def _rt6_mlp_flops_float32(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    exact = (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden
        + 2 * batch * hidden * out_dim
        + batch * out_dim
    )
    return int(np.float32(exact))


@wrong(
    "mlp_flops",
    why="a Python int of any size; multiplies numpy int64 sizes, wrapping past 2**63; wrong on "
    "(2**21, 2**21, 2**21, 2) (count past 2**64)",
)
def _rt6_mlp_flops_int64(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    b, i, h, o = (np.int64(v) for v in (batch, in_dim, hidden, out_dim))
    with np.errstate(over="ignore"):
        total = np.int64(2) * b * i * h + np.int64(2) * b * h + np.int64(2) * b * h * o + b * o
    return int(total)


# ---------------------------------------------------------------- predict_entry_root

_rt6_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt6_fmt(shape, dt):
    shape = tuple(shape)
    layout = "{" + ",".join(str(d) for d in reversed(range(len(shape)))) + "}" if shape else ""
    return f"{dt}[{','.join(str(d) for d in shape)}]{layout}"


def _rt6_predict(program, args, bug=None):
    x = args[0]
    shape, dt = tuple(x.shape), _rt6_DT[str(np.dtype(x.dtype))]
    if program in ("x * 2 + 1", "x + 1"):
        return "fusion", _rt6_fmt(shape, dt)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        keep_int = bug == "tanh_int" and program == "jnp.tanh(x)"
        out = "f32" if dt == "s32" and not keep_int else dt
        return "fusion", _rt6_fmt(shape, out)
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bf16" and bug != "astype":
            return "copy", _rt6_fmt(shape, "bf16")
        return "fusion", _rt6_fmt(shape, "bf16")
    if program == "x.sum(axis=1)":
        return "fusion", _rt6_fmt(shape[:1] + shape[2:], dt)
    if program == "x.max()":
        return "fusion", _rt6_fmt((), dt)
    if program == "x.T":
        if len(shape) == 1 and bug != "vector_T":
            return "copy", _rt6_fmt(shape, dt)
        return "fusion", _rt6_fmt(shape[::-1], dt)
    if program == "x itself":
        return "copy", _rt6_fmt(shape, dt)
    if program == "x.reshape(2, -1, x.shape[-1])":
        if bug == "reshape":
            middle = shape[0] // 2
        else:
            middle = math.prod(shape[:-1]) // 2
        return "copy", _rt6_fmt((2, middle, shape[-1]), dt)
    if program == "(x * 2, x + 1)":
        return "tuple", f"({_rt6_fmt(shape, dt)}, {_rt6_fmt(shape, dt)})"
    if program == "(x, x.sum())":
        return "tuple", f"({_rt6_fmt(shape, dt)}, {_rt6_fmt((), dt)})"
    if program == "(v, x)":
        v = args[1]
        return (
            "tuple",
            f"({_rt6_fmt(v.shape, _rt6_DT[str(np.dtype(v.dtype))])}, {_rt6_fmt(shape, dt)})",
        )
    return "fusion", _rt6_fmt(shape, dt)


@wrong(
    "predict_entry_root",
    why="x.T of a vector is the vector itself, so XLA must copy the input: ROOT copy; predicts a "
    "transpose fusion; wrong on x.T with x f32[5] (copy f32[5]{0}, checked)",
)
def _rt6_predict_vector_transpose_fusion(program, args):
    return _rt6_predict(program, args, bug="vector_T")


@wrong(
    "predict_entry_root",
    why="a cast to the dtype x already has returns the input: ROOT copy; predicts a convert "
    "fusion always; wrong on x.astype(jnp.bfloat16) with x bf16[8,4] (copy, checked)",
)
def _rt6_predict_astype_always_fusion(program, args):
    return _rt6_predict(program, args, bug="astype")


@wrong(
    "predict_entry_root",
    why="x.reshape(2, -1, last) folds every leading dim; computes the middle dim as shape[0]//2; "
    "wrong on a rank-3 x f32[4,3,2] (f32[2,6,2] expected, predicts f32[2,2,2])",
)
def _rt6_predict_reshape_rank2_only(program, args):
    return _rt6_predict(program, args, bug="reshape")


@wrong(
    "predict_entry_root",
    why="jnp.tanh of an int32 array is float32; keeps s32 for tanh (handles only sin's "
    "promotion); wrong on jnp.tanh(x) with x s32[6]",
)
def _rt6_predict_tanh_keeps_int(program, args):
    return _rt6_predict(program, args, bug="tanh_int")
