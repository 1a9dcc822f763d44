"""Red-team wrong answers for phase 3, written from the contract only.

Round 4: each answer agrees with a correct one on the bank's programs and on the hand-written
module (as far as the contract lets us see them) and is wrong on a valid input the examples lack.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --------------------------------------------------------------------------- shared helpers


def _rt4_leaves_key(args, with_dtype: bool = True):
    leaves = jax.tree_util.tree_leaves(args)
    if with_dtype:
        return tuple((np.shape(a), str(jnp.result_type(a))) for a in leaves)
    return tuple(np.shape(a) for a in leaves)


def _rt4_texts(jitted, args) -> dict[str, str]:
    lowered = jitted.lower(*args)
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }


_rt4_DUMP_OPTIONS = {"xla_dump_to": None, "xla_dump_hlo_as_text": True}
_rt4_MODULE = re.compile(
    r"^(module_(\d+))\.(.+?)\.(before_optimizations|cpu_after_optimizations)\.txt$"
)


def _rt4_dump(f, args, directory):
    lowered = jax.jit(f).lower(*args)
    module_name = lowered.as_text(dialect="hlo").split("\n", 1)[0].split()[1].rstrip(",")
    options = dict(_rt4_DUMP_OPTIONS, xla_dump_to=str(directory))
    return lowered, module_name, options


def _rt4_list(directory) -> set[str]:
    return set(os.listdir(directory)) if os.path.isdir(directory) else set()


def _rt4_layout(shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_rt4_layout(e) for e in shape.elements) + ")"
    return shape.layout or "{}"


# ------------------------------------------------------------------------------ three_texts

_rt4_QUALNAME_CACHE: dict = {}


@wrong(
    "three_texts",
    why="'every call compiles for the args it is given': caches the texts by (f.__qualname__, "
    "leaf shapes and dtypes), so two different lambdas (or two functions made by one factory) "
    "share a key; wrong on three_texts(lambda x: x + 1, f32[3]) followed by "
    "three_texts(lambda x: x * 2, f32[3]): the second returns the first's texts",
)
def _rt4_three_texts_cached_by_qualname(f, *args) -> dict[str, str]:
    key = (getattr(f, "__qualname__", repr(f)), _rt4_leaves_key(args))
    if key not in _rt4_QUALNAME_CACHE:
        _rt4_QUALNAME_CACHE[key] = _rt4_texts(jax.jit(f), args)
    return dict(_rt4_QUALNAME_CACHE[key])


_rt4_SHAPE_CACHE: dict = {}


@wrong(
    "three_texts",
    why="'the same f at other shapes is another program' holds for other dtypes too: caches by "
    "(f, leaf shapes) without dtypes; wrong on value_and_total at f32[2,3] then at s32[2,3] "
    "(the second call returns the f32 texts)",
)
def _rt4_three_texts_cached_by_shape(f, *args) -> dict[str, str]:
    key = (f, _rt4_leaves_key(args, with_dtype=False))
    if key not in _rt4_SHAPE_CACHE:
        _rt4_SHAPE_CACHE[key] = _rt4_texts(jax.jit(f), args)
    return dict(_rt4_SHAPE_CACHE[key])


@wrong(
    "three_texts",
    why="the texts are those of jax.jit(f), which drops unused inputs; jit(keep_unused=True) "
    "keeps a parameter for each; wrong on mixed(s, v, m, unused, t) with mixed_args() (every "
    "text gains a parameter for `unused`; same texts whenever every input is used)",
)
def _rt4_three_texts_keep_unused(f, *args) -> dict[str, str]:
    return _rt4_texts(jax.jit(f, keep_unused=True), args)


# ------------------------------------------------------------------------------- dump_files


def _rt4_pair_for(directory, prefix_filter) -> tuple[Path, Path]:
    best: dict[str, dict[str, str]] = {}
    for name in os.listdir(directory):
        m = _rt4_MODULE.match(name)
        if m and prefix_filter(m):
            best.setdefault(m.group(1), {})[m.group(4)] = name
    prefix = max((p for p, d in best.items() if len(d) == 2), key=lambda p: int(p[7:]))
    d = best[prefix]
    return (
        Path(directory) / d["before_optimizations"],
        Path(directory) / d["cpu_after_optimizations"],
    )


@wrong(
    "dump_files",
    why="'return the files this compile wrote': finds them as names absent before the compile, "
    "and when none is new falls back to the highest-numbered dump of the same module; wrong "
    "when the directory already holds an earlier process's dump with this compile's very names "
    "(same module number and function: XLA overwrites them, nothing is new) plus a "
    "higher-numbered dump of that function, e.g. a second process that compiled "
    "scale_and_shift at f32[3] and f32[5] writing into the same directory",
)
def _rt4_dump_files_new_names(f, args: tuple, directory: str) -> tuple[Path, Path]:
    before = _rt4_list(directory)
    lowered, module_name, options = _rt4_dump(f, args, directory)
    lowered.compile(compiler_options=options)
    new = sorted(_rt4_list(directory) - before)
    b = [n for n in new if n.endswith(".before_optimizations.txt")]
    a = [n for n in new if n.endswith(".cpu_after_optimizations.txt")]
    if b and a:
        return Path(directory) / b[0], Path(directory) / a[0]
    return _rt4_pair_for(directory, lambda m: m.group(3) == module_name)


@wrong(
    "dump_files",
    why="the module in the file names is XLA's (jit_<name> with name sanitized), not "
    "f.__name__: takes the module number from the new files and spells the names from "
    "f.__name__; wrong on a lambda (XLA writes module_NNNN.jit__lambda.*, the answer returns "
    "module_NNNN.jit_<lambda>.*, files that do not exist)",
)
def _rt4_dump_files_named_from_function(f, args: tuple, directory: str) -> tuple[Path, Path]:
    before = _rt4_list(directory)
    lowered, _module_name, options = _rt4_dump(f, args, directory)
    lowered.compile(compiler_options=options)
    new = sorted(_rt4_list(directory) - before)
    numbers = [_rt4_MODULE.match(n).group(1) for n in new if _rt4_MODULE.match(n)]
    if not numbers:
        return _rt4_pair_for(directory, lambda m: True)
    number = numbers[0]
    name = "jit_" + getattr(f, "__name__", "fn")
    return (
        Path(directory) / f"{number}.{name}.before_optimizations.txt",
        Path(directory) / f"{number}.{name}.cpu_after_optimizations.txt",
    )


@wrong(
    "dump_files",
    why="'not the first or last match': takes the highest module number among the dumps of "
    "this module name (read from the lowered text, so lambdas work); wrong when another "
    "process dumped the same function (same jit_<name>) with a higher module number into the "
    "directory; right when the higher-numbered dumps are of other functions",
)
def _rt4_dump_files_highest_of_same_name(f, args: tuple, directory: str) -> tuple[Path, Path]:
    lowered, module_name, options = _rt4_dump(f, args, directory)
    lowered.compile(compiler_options=options)
    return _rt4_pair_for(directory, lambda m: m.group(3) == module_name)


# ------------------------------------------------------------------ entry_parameter_layouts


def _rt4_entry_parameters(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return [i for i in entry if i.opcode == "parameter"]


@wrong(
    "entry_parameter_layouts",
    why="'a tuple-shaped parameter's layout is its elements' layouts in parentheses' applies "
    "at every depth: handles one level of tuple and gives '{}' to an element that is itself a "
    "tuple; wrong on a parameter ((f32[2]{0}, s32[]), f32[3]{0}) (right: '(({0}, {}), {0})', "
    "answers '({}, {0})')",
)
def _rt4_entry_parameter_layouts_flat_tuples(hlo_text: str) -> list[str]:
    params = sorted(_rt4_entry_parameters(hlo_text), key=lambda i: int(i.payload))
    out = []
    for p in params:
        s = p.shape_info
        if s.is_tuple:
            out.append("(" + ", ".join(e.layout or "{}" for e in s.elements) + ")")
        else:
            out.append(s.layout or "{}")
    return out


@wrong(
    "entry_parameter_layouts",
    why="'in parameter-number order': sorts by the text of N, so parameter(10) comes before "
    "parameter(2); wrong on any ENTRY with 11 or more parameters and unequal layouts (e.g. "
    "jit of a function of 11 inputs, the last one a scalar); right up to 10 parameters",
)
def _rt4_entry_parameter_layouts_text_sorted(hlo_text: str) -> list[str]:
    params = sorted(_rt4_entry_parameters(hlo_text), key=lambda i: i.payload.strip())
    return [_rt4_layout(p.shape_info) for p in params]


@wrong(
    "entry_parameter_layouts",
    why="'read each layout from the text': rebuilds it from the minor-to-major numbers and "
    "drops what follows ':' (tiles, element size, memory space); wrong on a parameter "
    "f32[8,128]{1,0:T(8,128)} (a TPU module's text: the layout is '{1,0:T(8,128)}', answers "
    "'{1,0}')",
)
def _rt4_entry_parameter_layouts_rebuilt(hlo_text: str) -> list[str]:
    def rebuilt(shape):
        if shape.is_tuple:
            return "(" + ", ".join(rebuilt(e) for e in shape.elements) + ")"
        order = shape.minor_to_major or ()
        return "{" + ",".join(str(d) for d in order) + "}"

    params = sorted(_rt4_entry_parameters(hlo_text), key=lambda i: int(i.payload))
    return [rebuilt(p.shape_info) for p in params]


# ------------------------------------------------------------------------------ entry_root


@wrong(
    "entry_root",
    why="'the shape exactly as the instruction line prints it': rebuilds a tuple shape from "
    "its elements, dropping the /*index=5*/ comment XLA prints in tuples of 6 or more; wrong "
    "on jit(lambda x: tuple(x + i for i in range(7))) at f32[4,5]",
)
def _rt4_entry_root_rejoined_tuple(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info
    if s.is_tuple:
        return root.opcode, "(" + ", ".join(e.text for e in s.elements) + ")"
    return root.opcode, root.shape


@wrong(
    "entry_root",
    why="'the shape exactly as the instruction line prints it': rebuilds an array shape from "
    "dtype, dims and layout, so a bounded dynamic dimension f32[<=4]{0} prints as f32[4]{0}; "
    "wrong on a module whose ROOT is f32[<=4]{0} (e.g. a hand-written or exported dynamic "
    "shape module)",
)
def _rt4_entry_root_rebuilt_dims(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info
    if s.is_tuple:
        return root.opcode, root.shape
    dims = ",".join(str(d) for d in s.dims)
    return root.opcode, f"{s.dtype}[{dims}]{s.layout or ''}"


@wrong(
    "entry_root",
    why="'no braces on a scalar' (the shape as the line prints it): gives a lone scalar ROOT "
    "the '{}' layout of entry_parameter_layouts; tuple ROOTs are copied as printed, so the "
    "bank's ROOTs are right; wrong on jit(lambda x: x.sum()) at f32[8,4] (ROOT fusion f32[], "
    "answers 'f32[]{}')",
)
def _rt4_entry_root_scalar_braces(hlo_text: str) -> tuple[str, str]:
    root = parse_hlo(hlo_text).entry.root
    s = root.shape_info
    if s.is_tuple or s.layout is not None:
        return root.opcode, root.shape
    return root.opcode, root.shape + "{}"


# -------------------------------------------------------------------------- fusion_contents


@wrong(
    "fusion_contents",
    why="'count the computations a fused computation calls in turn' once per call: walks each "
    "fusion with a visited set (against cycles), so a reducer called by two reduces of one "
    "fused computation is counted once; wrong on a kLoop fused computation holding two "
    "reduces that both name to_apply=%sum (what XLA's computation deduplication leaves, e.g. "
    "GPU sibling reductions): its add counts twice, the answer counts it once; right "
    "whenever every reduce has its own reducer, as in everything JAX:CPU emits",
)
def _rt4_fusion_contents_seen_once(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(name, counter, seen):
        if name in seen:
            return
        seen.add(name)
        for i in module[name]:
            if i.opcode == "parameter":
                continue
            counter[i.opcode] += 1
            for callee in i.called_computations:
                walk(callee, counter, seen)

    for comp in module:
        for i in comp:
            if i.opcode == "fusion":
                counter = out.setdefault(i.attribute("kind"), Counter())
                seen: set = set()
                for callee in i.called_computations:
                    walk(callee, counter, seen)
    return out


_rt4_PLUMBING = {"parameter", "tuple", "get-tuple-element"}


@wrong(
    "fusion_contents",
    why="'count parameters nowhere' excludes parameters only: also skips tuple and "
    "get-tuple-element as plumbing; wrong on a multi-output fusion (a fused computation whose "
    "ROOT is a tuple, as XLA:GPU prints for sibling reductions, or a hand-written kLoop "
    "fusion returning (f32[2], f32[2]))",
)
def _rt4_fusion_contents_no_plumbing(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(name, counter):
        for i in module[name]:
            if i.opcode in _rt4_PLUMBING:
                continue
            counter[i.opcode] += 1
            for callee in i.called_computations:
                walk(callee, counter)

    for comp in module:
        for i in comp:
            if i.opcode == "fusion":
                counter = out.setdefault(i.attribute("kind"), Counter())
                for callee in i.called_computations:
                    walk(callee, counter)
    return out


_rt4_FOLLOWED = ("calls", "to_apply", "body", "condition", "branch_computations")


@wrong(
    "fusion_contents",
    why="'fusions can sit in any computation': walks the call graph from ENTRY through calls=, "
    "to_apply=, body=, condition= and branch_computations= (what JAX prints), so a conditional "
    "printed with true_computation=/false_computation= (a pred selector) hides its branches' "
    "fusions, and so does a computation nothing calls; wrong on a module whose conditional "
    "uses true_computation=%t, false_computation=%f with a kLoop fusion in each",
)
def _rt4_fusion_contents_from_entry(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def callees(i):
        names = []
        for key in _rt4_FOLLOWED:
            value = i.attribute(key)
            if value:
                names += re.findall(r"%?([^\s,{}%]+)", value)
        return names

    def count(name, counter):
        for i in module[name]:
            if i.opcode == "parameter":
                continue
            counter[i.opcode] += 1
            for callee in callees(i):
                count(callee, counter)

    todo, visited = [module.entry.name], set()
    while todo:
        name = todo.pop()
        if name in visited:
            continue
        visited.add(name)
        for i in module[name]:
            if i.opcode == "fusion":
                counter = out.setdefault(i.attribute("kind"), Counter())
                for callee in callees(i):
                    count(callee, counter)
            todo.extend(callees(i))
    return out


# ---------------------------------------------------------------------------------- constants

_rt4_CONSTANT_LAZY = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\S+)\s+constant\((.*?)\)", re.MULTILINE
)


@wrong(
    "constants",
    why="'the literal as written between the parentheses': a lazy regex stops at the first ')', "
    "which is right for every real literal except a complex one, whose literal has parentheses "
    "of its own; wrong on jit(lambda x: x * (1 + 2j)) at f32[4,5] (c64[] constant((1, 2)): "
    "answers '(1, 2')",
)
def _rt4_constants_lazy_regex(hlo_text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _rt4_CONSTANT_LAZY.finditer(hlo_text)]


@wrong(
    "constants",
    why="'two constants with the same value are two entries': keeps a set per computation "
    "(the hand-written module's two 4s are in different computations, so it passes there); "
    "wrong on a computation holding two equal constants, e.g. unoptimized HLO or a "
    "hand-written ENTRY with %c1 = f32[] constant(2) and %c2 = f32[] constant(2)",
)
def _rt4_constants_unique_per_computation(hlo_text: str) -> list[tuple[str, str]]:
    out = []
    for comp in parse_hlo(hlo_text):
        out.extend(dict.fromkeys((i.shape, i.payload) for i in comp if i.opcode == "constant"))
    return out


_rt4_PERCENT_CONSTANT = re.compile(r"^\s*(?:ROOT\s+)?%[\w.\-]+ = (\S+|\(.*?\)) constant\(", re.M)


def _rt4_balanced_literal(text: str, start: int) -> str:
    depth = 1
    for at in range(start, len(text)):
        ch = text[at]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[start:at]
    return text[start:]


@wrong(
    "constants",
    why="'every computation, every dtype': scans lines of the form '%name = shape constant(' "
    "and reads the literal to its matching parenthesis, so names printed without '%' are "
    "missed; wrong on unoptimized HLO (lowered.as_text(dialect='hlo') prints 'constant.1 = "
    "f32[] constant(2)') e.g. three_texts(scale_and_shift, f32[3])['hlo']: answers []",
)
def _rt4_constants_percent_names(hlo_text: str) -> list[tuple[str, str]]:
    return [
        (m.group(1), _rt4_balanced_literal(hlo_text, m.end()))
        for m in _rt4_PERCENT_CONSTANT.finditer(hlo_text)
    ]


# -------------------------------------------------------------------------------------- flops

_rt4_FLOPS_BY_SHAPE: dict = {}


@wrong(
    "flops",
    why="'compiled for `args`': caches by (f, leaf shapes) without dtypes; wrong on "
    "f = lambda x: jnp.sin(x) * 2 (one function object) at f32[4,5] (20.0 flops) then at "
    "s32[4,5] (40.0: the convert to float counts), answering 20.0 twice",
)
def _rt4_flops_cached_without_dtype(f, *args) -> float:
    key = (f, _rt4_leaves_key(args, with_dtype=False))
    if key not in _rt4_FLOPS_BY_SHAPE:
        cost = jax.jit(f).lower(*args).compile().cost_analysis()
        _rt4_FLOPS_BY_SHAPE[key] = float(cost.get("flops", 0.0))
    return _rt4_FLOPS_BY_SHAPE[key]


@wrong(
    "flops",
    why="'jax.jit(f) compiled for `args`': lowers for ShapeDtypeStructs of the args, which "
    "loses Python scalars' weak type; wrong on f(x, s) = x * s with x bf16[4,5] and s = 2.0 "
    "(weak: bf16 multiply, 62.0 flops on CPU; strong f32: 40.0)",
)
def _rt4_flops_from_abstract_args(f, *args) -> float:
    specs = jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a)), args
    )
    cost = jax.jit(f).lower(*specs).compile().cost_analysis()
    return float(cost.get("flops", 0.0))


_rt4_FLOPS_BY_NAME: dict = {}


@wrong(
    "flops",
    why="caches by (f.__qualname__, leaf shapes and dtypes): two different lambdas at one "
    "shape share an entry; wrong on flops(lambda x: x + 1, f32[8]) (8.0) followed by "
    "flops(lambda x: x * x + x, f32[8]) (16.0), answering 8.0",
)
def _rt4_flops_cached_by_qualname(f, *args) -> float:
    key = (getattr(f, "__qualname__", repr(f)), _rt4_leaves_key(args))
    if key not in _rt4_FLOPS_BY_NAME:
        cost = jax.jit(f).lower(*args).compile().cost_analysis()
        _rt4_FLOPS_BY_NAME[key] = float(cost.get("flops", 0.0))
    return _rt4_FLOPS_BY_NAME[key]


# ---------------------------------------------------------------------------------- mlp_flops


@wrong(
    "mlp_flops",
    why="right formula (2bih + 2bho + 2bh + bo) in numpy int32, which wraps past 2**31; wrong "
    "on batch=in_dim=hidden=1024, out_dim=2 (about 2.15e9 flops: answers a negative number); "
    "right on every shape below ~1000 per side",
)
def _rt4_mlp_flops_int32(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    b, i, h, o = np.array((batch, in_dim, hidden, out_dim), dtype=np.int32)
    with np.errstate(over="ignore"):
        total = np.int32(2) * b * i * h + np.int32(2) * b * h * o + np.int32(2) * b * h + b * o
    return int(total)


@wrong(
    "mlp_flops",
    why="hard-codes the example's out_dim (4) in the second bias add (b2 is added to "
    "(batch, out_dim)); wrong on any out_dim other than 4, e.g. (8, 16, 32, 10)",
)
def _rt4_mlp_flops_example_out_dim(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim + 2 * batch * hidden + batch * 4
    )


@wrong(
    "mlp_flops",
    why="relu is a compare, not arithmetic (believed free): leaves out the b*h maximum; wrong "
    "on every shape, e.g. (8, 16, 32, 4): 10528 instead of 10784",
)
def _rt4_mlp_flops_free_relu(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    return (
        2 * batch * in_dim * hidden
        + 2 * batch * hidden * out_dim
        + batch * hidden
        + batch * out_dim
    )


# ------------------------------------------------------------------------- predict_entry_root

_rt4_XLA = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt4_fmt(shape, dtype) -> str:
    name = _rt4_XLA[np.dtype(dtype).name]
    dims = ",".join(str(d) for d in shape)
    if not shape:
        return f"{name}[]"
    layout = "{" + ",".join(str(d) for d in reversed(range(len(shape)))) + "}"
    return f"{name}[{dims}]{layout}"


def _rt4_is_float(dtype) -> bool:
    return jnp.issubdtype(dtype, jnp.floating)


def _rt4_predict(program, args, *, is_float=_rt4_is_float, reshape_fused=None, pair_dtype=None):
    x = args[0]
    shape, dtype = tuple(x.shape), np.dtype(x.dtype)
    f32 = np.dtype("float32")
    bf16 = np.dtype(jnp.bfloat16)
    if program == "x * 2 + 1" or program == "x + 1":
        return ("fusion", _rt4_fmt(shape, dtype))
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return ("fusion", _rt4_fmt(shape, dtype if is_float(dtype) else f32))
    if program == "x.astype(jnp.bfloat16)":
        return ("copy" if dtype == bf16 else "fusion", _rt4_fmt(shape, bf16))
    if program == "x.sum(axis=1)":
        return ("fusion", _rt4_fmt(shape[:1] + shape[2:], dtype))
    if program == "x.max()":
        return ("fusion", _rt4_fmt((), dtype))
    if program == "x.T":
        return ("copy" if len(shape) == 1 else "fusion", _rt4_fmt(shape[::-1], dtype))
    if program == "x itself":
        return ("copy", _rt4_fmt(shape, dtype))
    if program == "x.reshape(2, -1, x.shape[-1])":
        new = (2, int(np.prod(shape[:-1])) // 2, shape[-1])
        fused = reshape_fused(shape, new) if reshape_fused else new[1] == 1
        return ("fusion" if fused else "copy", _rt4_fmt(new, dtype))
    if program == "(x * 2, x + 1)":
        return ("tuple", f"({_rt4_fmt(shape, dtype)}, {_rt4_fmt(shape, dtype)})")
    if program == "(x, x.sum())":
        return ("tuple", f"({_rt4_fmt(shape, dtype)}, {_rt4_fmt((), dtype)})")
    if program == "(v, x)":
        v = args[1]
        vdtype = pair_dtype if pair_dtype is not None else np.dtype(v.dtype)
        return ("tuple", f"({_rt4_fmt(tuple(v.shape), vdtype)}, {_rt4_fmt(shape, dtype)})")
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="the README's exception (a [2,1,n] result's copy fuses with the bitcast) is keyed on "
    "'x has 2 rows' instead of 'the reshaped middle dimension is 1'; wrong on "
    "x.reshape(2, -1, x.shape[-1]) with a 3-D x of first dimension 2, e.g. f32[2,3,4] "
    "(reshape to itself: ROOT copy f32[2,3,4]{2,1,0}; answers fusion); right on every 2-D x",
)
def _rt4_predict_entry_root_two_rows(program, args):
    return _rt4_predict(program, args, reshape_fused=lambda shape, new: shape[0] == 2)


@wrong(
    "predict_entry_root",
    why="'the result's dtype is jnp's': decides 'is x a float' with np.issubdtype(dtype, "
    "np.floating), which is False for ml_dtypes' bfloat16, so sin/tanh of bfloat16 is "
    "predicted float32; wrong on jnp.sin(x) with x bf16[3] (ROOT fusion bf16[3]{0}); right on "
    "float32, float16 and int32",
)
def _rt4_predict_entry_root_numpy_float_test(program, args):
    return _rt4_predict(program, args, is_float=lambda d: np.issubdtype(d, np.floating))


@wrong(
    "predict_entry_root",
    why="'every argument float32, bfloat16, float16 or int32' (each its own): gives both "
    "results of (v, x) the dtype of the first argument; wrong on (v, x) with x f32[8,4] and "
    "v s32[3] (ROOT tuple (s32[3]{0}, f32[8,4]{1,0})); right whenever both dtypes agree",
)
def _rt4_predict_entry_root_one_dtype(program, args):
    return _rt4_predict(program, args, pair_dtype=np.dtype(args[0].dtype))
