"""Red-team wrong answers for phase 3, written from the contract only."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------- three_texts

_rt5_TT_CACHE: dict = {}


def _rt5_texts(jitted, args):
    lowered = jitted.lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


@wrong(
    "three_texts",
    why="every call compiles for its own f: caching by __qualname__ and arg "
    "shapes returns x + 1's texts for x * x + x; wrong on ELEMENTWISE[0] then ELEMENTWISE[1] at one shape",
)
def _rt5_three_texts_qualname_cache(f, *args) -> dict[str, str]:
    key = (
        getattr(f, "__qualname__", repr(f)),
        tuple((np.shape(a), str(np.asarray(a).dtype)) for a in jax.tree_util.tree_leaves(args)),
    )
    if key not in _rt5_TT_CACHE:
        _rt5_TT_CACHE[key] = _rt5_texts(jax.jit(f), args)
    return _rt5_TT_CACHE[key]


@wrong(
    "three_texts",
    why="texts of jax.jit(f) for the args given: converting each arg to a "
    "concrete array drops weak typing, so scaled(x f16, 2.0) becomes an f32 program; wrong on scaled(f16[4], 2.0)",
)
def _rt5_three_texts_strong_args(f, *args) -> dict[str, str]:
    args = jax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a)), args)
    return _rt5_texts(jax.jit(f), args)


@wrong(
    "three_texts",
    why="texts of jax.jit(f), not jax.jit(f, keep_unused=True): the unused "
    "input stays a parameter; wrong on doubled_ignoring(x, unused)",
)
def _rt5_three_texts_keep_unused(f, *args) -> dict[str, str]:
    return _rt5_texts(jax.jit(f, keep_unused=True), args)


# ---------------------------------------------------------------- dump_files

_rt5_DUMP_OPTS = lambda d: {"xla_dump_to": str(d), "xla_dump_hlo_as_text": True}  # noqa: E731


def _rt5_matches(directory, kind):
    return sorted(
        p
        for p in Path(directory).glob("module_*.txt")
        if p.name.endswith(kind + ".txt")
        and ("before_optimizations" in p.name or "after_optimizations" in p.name)
        and p.name.count(".") >= 2
        and kind in p.name
    )


def _rt5_prefix(p: Path) -> str:
    return p.name.split(".")[0]


def _rt5_pair_for(prefix, directory):
    d = Path(directory)
    before = [p for p in d.glob(prefix + ".*before_optimizations.txt")]
    after = [p for p in d.glob(prefix + ".*after_optimizations.txt")]
    return sorted(before)[0], sorted(after)[0]


def _rt5_compile_dump(f, args, directory):
    jax.jit(f).lower(*args).compile(compiler_options=_rt5_DUMP_OPTS(directory))


@wrong(
    "dump_files",
    why="return the files this compile wrote, not the last match: taking the "
    "highest module number is wrong when another process left higher-numbered dumps in the directory",
)
def _rt5_dump_files_highest_number(f, args: tuple, directory: str) -> tuple[Path, Path]:
    _rt5_compile_dump(f, args, directory)
    befores = sorted(Path(directory).glob("module_*before_optimizations.txt"))
    return _rt5_pair_for(_rt5_prefix(befores[-1]), directory)


@wrong(
    "dump_files",
    why="XLA rewrites files of the very names this compile writes: a set "
    "difference of names finds nothing then and the fallback takes the first match; wrong when "
    "the directory already holds this module number's names from another process",
)
def _rt5_dump_files_new_names(f, args: tuple, directory: str) -> tuple[Path, Path]:
    before_set = set(Path(directory).glob("*"))
    _rt5_compile_dump(f, args, directory)
    new = sorted(
        p for p in Path(directory).glob("module_*before_optimizations.txt") if p not in before_set
    )
    if not new:
        new = sorted(Path(directory).glob("module_*before_optimizations.txt"))
    return _rt5_pair_for(_rt5_prefix(new[0]), directory)


@wrong(
    "dump_files",
    why="the same function at other shapes dumps under the same jit_<name>: "
    "matching by function name and taking the first is wrong when f was dumped earlier at another shape",
)
def _rt5_dump_files_by_name(f, args: tuple, directory: str) -> tuple[Path, Path]:
    _rt5_compile_dump(f, args, directory)
    name = getattr(f, "__name__", "")
    befores = sorted(
        p
        for p in Path(directory).glob("module_*before_optimizations.txt")
        if f"jit_{name}." in p.name
    )
    if not befores:
        befores = sorted(Path(directory).glob("module_*before_optimizations.txt"))
    return _rt5_pair_for(_rt5_prefix(befores[0]), directory)


# ---------------------------------------------------------------- entry_parameter_layouts


def _rt5_layout_of(shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_rt5_layout_of(e) for e in shape.elements) + ")"
    lay = shape.layout
    return lay if lay is not None else "{}"


def _rt5_entry_params(hlo_text):
    return [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]


@wrong(
    "entry_parameter_layouts",
    why="parameter-number order: sorting the N as text puts "
    "parameter(10) before parameter(2); wrong on any ENTRY with 11 or more parameters",
)
def _rt5_epl_text_sort(hlo_text: str) -> list[str]:
    params = sorted(_rt5_entry_params(hlo_text), key=lambda i: str(i.payload).strip())
    return [_rt5_layout_of(i.shape_info) for i in params]


@wrong(
    "entry_parameter_layouts",
    why="a layout is all the text between its braces, tiles too: "
    "rebuilding it from minor_to_major drops ':T(8,128)'; wrong on a parameter f32[8,128]{1,0:T(8,128)}",
)
def _rt5_epl_no_tiles(hlo_text: str) -> list[str]:
    def lay(s):
        if s.is_tuple:
            return "(" + ", ".join(lay(e) for e in s.elements) + ")"
        m2m = s.minor_to_major
        return "{" + ",".join(str(d) for d in (m2m or ())) + "}"

    params = sorted(_rt5_entry_params(hlo_text), key=lambda i: int(str(i.payload).strip()))
    return [lay(i.shape_info) for i in params]


@wrong(
    "entry_parameter_layouts",
    why="a tuple's layouts at every depth: handling one level "
    "prints a nested tuple element as '{}'; wrong on a parameter ((f32[2]{0}, s32[]), f32[3]{0})",
)
def _rt5_epl_one_level_tuple(hlo_text: str) -> list[str]:
    def lay(s):
        if s.is_tuple:
            return (
                "("
                + ", ".join((e.layout or "{}") if not e.is_tuple else "{}" for e in s.elements)
                + ")"
            )
        return s.layout or "{}"

    params = sorted(_rt5_entry_params(hlo_text), key=lambda i: int(str(i.payload).strip()))
    return [lay(i.shape_info) for i in params]


# ---------------------------------------------------------------- entry_root


@wrong(
    "entry_root",
    why="the shape exactly as the line prints it: rebuilding a tuple from its "
    "elements one level deep flattens a nested tuple; wrong on a ROOT ((f32[2]{0}, s32[]), f32[])",
)
def _rt5_entry_root_flat_tuple(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info
    if s.is_tuple:
        parts = []
        for e in s.elements:
            parts.extend(e.elements if e.is_tuple else (e,))
        return root.opcode, "(" + ", ".join(p.text for p in parts) + ")"
    return root.opcode, root.shape


@wrong(
    "entry_root",
    why="ROOT is the marked instruction, not the first one nothing uses: "
    "wrong on an ENTRY with a dead instruction line before its ROOT",
)
def _rt5_entry_root_first_sink(hlo_text: str) -> tuple[str, str]:
    entry = parse_hlo(hlo_text).entry
    used = {o.lstrip("%") for i in entry for o in i.operands}
    for i in entry:
        if i.name.lstrip("%") not in used and i.opcode != "parameter":
            return i.opcode, i.shape
    return entry.root.opcode, entry.root.shape


@wrong(
    "entry_root",
    why="the shape as printed: rebuilding dtype[dims]{layout} from parsed dims "
    "loses bounded-dynamic '<=8' dims; wrong on a ROOT f32[<=8]{0}",
)
def _rt5_entry_root_rebuilt(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root

    def txt(s):
        if s.is_tuple:
            return "(" + ", ".join(txt(e) for e in s.elements) + ")"
        dims = ",".join(str(d) for d in s.dims)
        return f"{s.dtype}[{dims}]" + (s.layout or "")

    try:
        return root.opcode, txt(root.shape_info)
    except Exception:
        return root.opcode, root.shape


# ---------------------------------------------------------------- fusion_contents


def _rt5_count_comp(
    module, name, counter, kind_counts, kind, follow_fusions=True, depth=0, max_depth=None
):
    comp = module[name]
    for ins in comp:
        if ins.opcode == "parameter":
            continue
        counter[ins.opcode] += 1
        for called in ins.called_computations:
            if ins.opcode == "fusion" and max_depth is not None and depth >= max_depth:
                continue
            _rt5_count_comp(
                module, called, counter, kind_counts, kind, follow_fusions, depth + 1, max_depth
            )


@wrong(
    "fusion_contents",
    why="summed over those fusions: walking from ENTRY with a visited set "
    "counts a fused computation once even when two fusions call it; wrong on a module whose two "
    "kLoop fusions share one calls= computation",
)
def _rt5_fusion_contents_visited(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}
    seen = set()
    for comp in module:
        for ins in comp:
            if ins.opcode != "fusion":
                continue
            kind = ins.attribute("kind")
            out.setdefault(kind, Counter())
            for called in ins.called_computations:
                if called in seen:
                    continue
                seen.add(called)
                _rt5_count_comp(module, called, out[kind], out, kind)
    return out


@wrong(
    "fusion_contents",
    why="a nested fusion's computations count for the outer kind as well, "
    "at every depth: following fusions only one level down misses a fusion inside a fusion inside "
    "a fusion; wrong on three nested fusion levels",
)
def _rt5_fusion_contents_one_level(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}
    for comp in module:
        for ins in comp:
            if ins.opcode != "fusion":
                continue
            kind = ins.attribute("kind")
            c = out.setdefault(kind, Counter())
            for called in ins.called_computations:
                _rt5_count_comp(module, called, c, out, kind, max_depth=1)
    return out


@wrong(
    "fusion_contents",
    why="count the computations a fused computation calls: following only "
    "to_apply=/calls= misses select=/scatter= of a fused select-and-scatter (and branch_computations=); "
    "wrong on a fusion holding a select-and-scatter",
)
def _rt5_fusion_contents_to_apply_only(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(name, c):
        for ins in module[name]:
            if ins.opcode == "parameter":
                continue
            c[ins.opcode] += 1
            for key in ("to_apply", "calls"):
                v = ins.attribute(key)
                if v:
                    walk(v.lstrip("%"), c) if v.lstrip("%") in module else walk(v, c)

    for comp in module:
        for ins in comp:
            if ins.opcode == "fusion":
                c = out.setdefault(ins.attribute("kind"), Counter())
                for called in ins.called_computations:
                    walk(called, c)
    return out


# ---------------------------------------------------------------- constants


@wrong(
    "constants",
    why="each instruction once, not each name: deduplicating by instruction name "
    "drops a constant whose name repeats in another computation; wrong on two fused computations each with %zero",
)
def _rt5_constants_by_name(hlo_text: str) -> list[tuple[str, str]]:
    out = {}
    for comp in parse_hlo(hlo_text):
        for ins in comp:
            if ins.opcode == "constant" and ins.name not in out:
                out[ins.name] = (ins.shape, ins.payload)
    return list(out.values())


@wrong(
    "constants",
    why="every dtype: a dtype regex of pred/f/s/u/bf16 + digits skips f8e4m3fn, "
    "c64 and tuple-shaped constants; wrong on an f8e4m3fn[] constant",
)
def _rt5_constants_known_dtypes(hlo_text: str) -> list[tuple[str, str]]:
    pat = re.compile(r"^(pred|bf16|[fsuc]\d+)\[")
    return [
        (i.shape, i.payload)
        for c in parse_hlo(hlo_text)
        for i in c
        if i.opcode == "constant" and pat.match(i.shape)
    ]


_rt5_CONST_RE = re.compile(r"^\s*(?:ROOT\s+)?%?\S+\s*=\s*(\S+)\s+constant\((.*?)\)(?=,|\s*$)")


@wrong(
    "constants",
    why="the literal as written between the parentheses: a lazy regex stops at "
    "the first ')' before a comma, cutting c64[2] {(1, 2), (3, 4)}; also misses tuple-shaped constants",
)
def _rt5_constants_regex(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for line in hlo_text.splitlines():
        m = _rt5_CONST_RE.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


# ---------------------------------------------------------------- flops


def _rt5_ca(compiled_or_lowered):
    ca = compiled_or_lowered.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return ca or {}


@wrong(
    "flops",
    why="the compiled module after its passes: the lowered stage's cost analysis "
    "counts (a + b) twice in shared_sum; wrong on shared_sum",
)
def _rt5_flops_lowered(f, *args) -> float:
    return float(_rt5_ca(jax.jit(f).lower(*args)).get("flops", 0.0))


@wrong(
    "flops", why="transcendentals are a separate count: adding them is wrong on looped (tanh, sin)"
)
def _rt5_flops_plus_transcendentals(f, *args) -> float:
    ca = _rt5_ca(jax.jit(f).lower(*args).compile())
    return float(ca.get("flops", 0.0)) + float(ca.get("transcendentals", 0.0))


_rt5_FL_CACHE: dict = {}


@wrong(
    "flops",
    why="every call compiles its own f: a cache keyed by __qualname__ and shapes "
    "returns x + 1's flops for x * x + x; wrong on ELEMENTWISE lambdas at one shape",
)
def _rt5_flops_qualname_cache(f, *args) -> float:
    key = (
        getattr(f, "__qualname__", repr(f)),
        tuple((np.shape(a), str(np.asarray(a).dtype)) for a in jax.tree_util.tree_leaves(args)),
    )
    if key not in _rt5_FL_CACHE:
        _rt5_FL_CACHE[key] = float(_rt5_ca(jax.jit(f).lower(*args).compile()).get("flops", 0.0))
    return _rt5_FL_CACHE[key]


# ---------------------------------------------------------------- mlp_flops


@wrong(
    "mlp_flops",
    why="the second bias add costs batch*out_dim, not batch*hidden; wrong whenever "
    "hidden != out_dim, e.g. (2, 3, 5, 7): 230 instead of 234",
)
def _rt5_mlp_flops_b2_hidden(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden
        + 2 * batch * hidden * out_dim
        + batch * hidden
    )


@wrong(
    "mlp_flops",
    why="exact count as a Python int: computing in numpy int64 then float32 "
    "round-trip rounds counts the contract says to return exactly; wrong on (3, 4097, 4099, 5): 100909200 instead of 100909197",
)
def _rt5_mlp_flops_float32(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    n = (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden
        + 2 * batch * hidden * out_dim
        + batch * out_dim
    )
    return int(np.float32(n))


@wrong(
    "mlp_flops",
    why="relu is a max per element and costs batch*hidden flops: leaving it out "
    "is wrong on every shape, e.g. (2, 3, 5, 7): 224 instead of 234",
)
def _rt5_mlp_flops_no_relu(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + batch * hidden
        + 2 * batch * hidden * out_dim
        + batch * out_dim
    )


# ---------------------------------------------------------------- predict_entry_root

_rt5_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt5_arr(dt, shape):
    r = len(shape)
    dims = ",".join(str(d) for d in shape)
    lay = "{" + ",".join(str(d) for d in reversed(range(r))) + "}" if r else ""
    return f"{dt}[{dims}]{lay}"


def _rt5_predict(program, args, sin_int_float=True, vector_t_copy=True, same_dtype_cast_copy=True):
    x = args[0]
    dt = _rt5_DT[str(np.dtype(x.dtype))]
    shp = tuple(x.shape)
    if program == "x itself":
        return "copy", _rt5_arr(dt, shp)
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = math.prod(shp)
        return "copy", _rt5_arr(dt, (2, n // (2 * shp[-1]), shp[-1]))
    if program == "x.T":
        if len(shp) == 1 and vector_t_copy:
            return "copy", _rt5_arr(dt, shp)
        return "fusion", _rt5_arr(dt, tuple(reversed(shp)))
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        odt = "f32" if (dt == "s32" and sin_int_float) else dt
        return "fusion", _rt5_arr(odt, shp)
    if program in ("x * 2 + 1", "x + 1"):
        return "fusion", _rt5_arr(dt, shp)
    if program == "x.astype(jnp.bfloat16)":
        if dt == "bf16" and same_dtype_cast_copy:
            return "copy", _rt5_arr(dt, shp)
        return "fusion", _rt5_arr("bf16", shp)
    if program == "x.sum(axis=1)":
        return "fusion", _rt5_arr(dt, shp[:1] + shp[2:])
    if program == "x.max()":
        return "fusion", f"{dt}[]"
    if program == "(x * 2, x + 1)":
        return "tuple", f"({_rt5_arr(dt, shp)}, {_rt5_arr(dt, shp)})"
    if program == "(x, x.sum())":
        return "tuple", f"({_rt5_arr(dt, shp)}, {dt}[])"
    if program == "(v, x)":
        v = args[1]
        vdt = _rt5_DT[str(np.dtype(v.dtype))]
        return "tuple", f"({_rt5_arr(vdt, tuple(v.shape))}, {_rt5_arr(dt, shp)})"
    return "fusion", _rt5_arr(dt, shp)


@wrong(
    "predict_entry_root",
    why="jnp.sin of int32 is float32: keeping s32 is wrong on "
    "jnp.sin(x) with x int32[3] (ROOT fusion f32[3]{0})",
)
def _rt5_per_sin_keeps_int(program: str, args: tuple) -> tuple[str, str]:
    return _rt5_predict(program, args, sin_int_float=False)


@wrong(
    "predict_entry_root",
    why="x.T of a vector is x itself, so XLA must copy the input: a "
    "transpose fusion is wrong on x.T with x f32[3] (ROOT copy f32[3]{0})",
)
def _rt5_per_vector_transpose(program: str, args: tuple) -> tuple[str, str]:
    return _rt5_predict(program, args, vector_t_copy=False)


@wrong(
    "predict_entry_root",
    why="a cast to the dtype x already has returns the input, a copy: "
    "a convert fusion is wrong on x.astype(jnp.bfloat16) with x bf16[3] (ROOT copy bf16[3]{0})",
)
def _rt5_per_cast_always_fusion(program: str, args: tuple) -> tuple[str, str]:
    return _rt5_predict(program, args, same_dtype_cast_copy=False)
