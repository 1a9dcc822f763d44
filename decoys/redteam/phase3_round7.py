"""Red-team wrong answers for phase 3, round 7, written from the contract only.

Each answer is right on the recordings' shapes as far as we can tell and wrong on a valid input
named in its `why`.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# ---------------------------------------------------------------- shared helpers

_RT7_DT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _rt7_fmt(shape, dt, layout=None) -> str:
    shape = tuple(shape)
    name = _RT7_DT[str(dt)]
    dims = ",".join(str(d) for d in shape)
    if not shape:
        return f"{name}[]"
    if layout is None:
        layout = ",".join(str(i) for i in reversed(range(len(shape))))
    return f"{name}[{dims}]{{{layout}}}"


def _rt7_dtname(dt) -> str:
    return str(jax.numpy.dtype(dt))


def _rt7_predict(program, args, bug=None):
    """A predictor of the ENTRY ROOT; `bug` switches on one wrong belief."""
    x = args[0]
    shape, dt = tuple(x.shape), _rt7_dtname(x.dtype)
    fmt = _rt7_fmt
    if program in ("x * 2 + 1", "x + 1"):
        return "fusion", fmt(shape, dt)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return "fusion", fmt(shape, "float32" if dt == "int32" else dt)
    if program == "x.astype(jnp.bfloat16)":
        same = dt == "bfloat16" or (bug == "half_same" and dt == "float16")
        return ("copy" if same else "fusion"), fmt(shape, "bfloat16")
    if program == "x.sum(axis=1)":
        out = shape[:-1] if bug == "sum_last" else shape[:1] + shape[2:]
        return "fusion", fmt(out, dt)
    if program == "x.max()":
        return "fusion", fmt((), dt)
    if program == "x.T":
        if len(shape) == 1:
            return "copy", fmt(shape, dt)
        return "fusion", fmt(shape[::-1], dt)
    if program == "x itself":
        return "copy", fmt(shape, dt)
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = 1
        for d in shape[:-1]:
            n *= d
        out = (2, n // 2, shape[-1])
        if out[1] == 1:
            return "fusion", fmt(out, dt, "2,0,1" if bug == "own_layout" else None)
        return "copy", fmt(out, dt)
    sep = "," if bug == "tuple_no_space" else ", "
    if program == "(x * 2, x + 1)":
        return "tuple", "(" + sep.join([fmt(shape, dt), fmt(shape, dt)]) + ")"
    if program == "(x, x.sum())":
        return "tuple", "(" + sep.join([fmt(shape, dt), fmt((), dt)]) + ")"
    if program == "(v, x)":
        v = args[1]
        return "tuple", "(" + sep.join([fmt(v.shape, _rt7_dtname(v.dtype)), fmt(shape, dt)]) + ")"
    raise KeyError(program)


# ---------------------------------------------------------------- predict_entry_root


@wrong(
    "predict_entry_root",
    why="x.sum(axis=1) removes axis 1, not the last axis: shape[:-1] is right on every matrix "
    "(the recordings) but wrong on rank 3: x f32[2,3,4] gives f32[2,4]{1,0}, this says "
    "f32[2,3]{1,0}",
)
def _rt7_predict_entry_root_sum_drops_last_axis(program, args):
    return _rt7_predict(program, args, bug="sum_last")


@wrong(
    "predict_entry_root",
    why="README: the [2,1,n] reshape's size-1 dim gets layout {2,0,1} but the copy back to "
    "row-major fuses, so the ROOT fusion is row-major; this prints the inner layout: x f32[2,5] "
    "gives ('fusion', 'f32[2,1,5]{2,1,0}'), this says {2,0,1}",
)
def _rt7_predict_entry_root_reshape_inner_layout(program, args):
    return _rt7_predict(program, args, bug="own_layout")


@wrong(
    "predict_entry_root",
    why="entry_root's format copies the tuple shape as printed, with ', ' between elements; "
    "joins them with ',': (x * 2, x + 1) with x f32[2,5] gives "
    "'(f32[2,5]{1,0}, f32[2,5]{1,0})', this says '(f32[2,5]{1,0},f32[2,5]{1,0})'",
)
def _rt7_predict_entry_root_tuple_no_space(program, args):
    return _rt7_predict(program, args, bug="tuple_no_space")


@wrong(
    "predict_entry_root",
    why="only a cast to the dtype x already has returns the input; takes float16 -> bfloat16 as "
    "a same-width reinterpretation (copy): x f16[3,4] gives ('fusion', 'bf16[3,4]{1,0}'), this "
    "says ('copy', ...)",
)
def _rt7_predict_entry_root_half_cast_copy(program, args):
    return _rt7_predict(program, args, bug="half_same")


# ---------------------------------------------------------------- mlp_flops


@wrong(
    "mlp_flops",
    why="exact count as a Python int of any size: computes in Python floats (float64) and "
    "converts at the end, exact only below 2**53; wrong on (2**20+1, 2**20+3, 2**20+5, 3) "
    "whose 2*b*i*h term is near 2**61",
)
def _rt7_mlp_flops_float64(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    b, i, h, o = float(batch), float(in_dim), float(hidden), float(out_dim)
    return int(2.0 * b * i * h + 2.0 * b * h + 2.0 * b * h * o + b * o)


@wrong(
    "mlp_flops",
    why="README: an (MxK)@(KxN) matmul costs exactly 2*M*N*K; counts K multiplies and K-1 adds "
    "per output, M*N*(2K-1): on (8, 16, 32, 4) XLA says 10784, this says 10496",
)
def _rt7_mlp_flops_2k_minus_1(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    b, i, h, o = batch, in_dim, hidden, out_dim
    return b * h * (2 * i - 1) + b * h + b * h + b * o * (2 * h - 1) + b * o


@wrong(
    "mlp_flops",
    why="relu is one maximum per element (one flop); counts it as compare + select (two): on "
    "(8, 16, 32, 4) XLA says 10784, this says 11040",
)
def _rt7_mlp_flops_relu_two(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    b, i, h, o = batch, in_dim, hidden, out_dim
    return 2 * b * i * h + b * h + 2 * b * h + 2 * b * h * o + b * o


# ---------------------------------------------------------------- entry_parameter_layouts


def _rt7_split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _rt7_layout_of_shape_text(s: str, sep: str = ", ") -> str:
    s = s.strip()
    if s.startswith("("):
        return (
            "(" + sep.join(_rt7_layout_of_shape_text(p, sep) for p in _rt7_split_top(s[1:-1])) + ")"
        )
    m = re.search(r"\](\{.*\})$", s)
    return m.group(1) if m else "{}"


@wrong(
    "entry_parameter_layouts",
    why="the layouts of ENTRY's parameter instructions: reads the module header's "
    "entry_computation_layout instead, which a module need not carry: on HAND_BRANCHES "
    "(header 'HloModule hand_branches') it gives [] instead of ['{1,0}', '{}']",
)
def _rt7_entry_parameter_layouts_from_header(hlo_text: str) -> list[str]:
    first = hlo_text.lstrip().splitlines()[0]
    key = "entry_computation_layout={("
    at = first.find(key)
    if at < 0:
        return []
    start = at + len(key) - 1
    depth = 0
    for j in range(start, len(first)):
        if first[j] == "(":
            depth += 1
        elif first[j] == ")":
            depth -= 1
            if depth == 0:
                break
    inputs = first[start + 1 : j]
    return [_rt7_layout_of_shape_text(p) for p in _rt7_split_top(inputs)]


@wrong(
    "entry_parameter_layouts",
    why="a tuple's layout prints as its elements' layouts in parentheses, '({0,1}, {})' with a "
    "space; joins them with ',': on HAND_WRITTEN parameter 1 (f32[2,3]{0,1}, s32[]) gives "
    "'({0,1},{})'",
)
def _rt7_entry_parameter_layouts_tuple_no_space(hlo_text: str) -> list[str]:
    params = [i for i in parse_hlo(hlo_text).entry if i.opcode == "parameter"]
    params.sort(key=lambda i: int(str(i.payload).strip()))
    return [_rt7_layout_of_shape_text(str(i.shape), sep=",") for i in params]


# ---------------------------------------------------------------- fusion_contents


def _rt7_count(module, name, counts, skip):
    comp = module[name] if not hasattr(module, "computation") else module.computation(name)
    for inst in comp:
        if inst.opcode == "parameter" or inst.opcode in skip:
            continue
        counts[inst.opcode] += 1
        for callee in inst.called_computations:
            _rt7_count(module, callee, counts, skip)


def _rt7_fusion_contents(hlo_text, skip=()):
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}
    for comp in module:
        for inst in comp:
            if inst.opcode != "fusion":
                continue
            kind = inst.attribute("kind")
            c = out.setdefault(kind, Counter())
            for callee in inst.called_computations:
                _rt7_count(module, callee, c, skip)
    return out


@wrong(
    "fusion_contents",
    why="a Counter of the opcodes in the fused computations (only parameters are left out); "
    "skips constants as 'data, not ops': on scale_and_shift's kLoop fusion (x * 0.5 + table) "
    "the constant 0.5 inside the fused computation is missing",
)
def _rt7_fusion_contents_skip_constants(hlo_text: str) -> dict[str, Counter]:
    return _rt7_fusion_contents(hlo_text, skip=("constant",))


# ---------------------------------------------------------------- flops


@wrong(
    "flops",
    why="'a program without arithmetic has no \"flops\" entry at all: that is 0.0 flops': "
    "uses cost_analysis().get('flops'), which is None for lambda x: x.T on f32[3,4]",
)
def _rt7_flops_get_none(f, *args) -> float:
    return jax.jit(f).lower(*args).compile().cost_analysis().get("flops")


# ---------------------------------------------------------------- dump_files


def _rt7_snapshot(directory):
    d = Path(directory)
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()} if d.exists() else {}


@wrong(
    "dump_files",
    why="'an earlier process may have left files with this compile's very names: XLA rewrites "
    "them': finds this compile's files as new names or changed contents, so a file an earlier "
    "process wrote for the identical module (same name, same bytes) is missed and it falls back "
    "to the highest module number, another process's dump",
)
def _rt7_dump_files_changed_content(f, args: tuple, directory: str) -> tuple[Path, Path]:
    before = _rt7_snapshot(directory)
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": directory, "xla_dump_hlo_as_text": True}
    )
    after = _rt7_snapshot(directory)
    changed = [n for n, b in after.items() if before.get(n) != b]

    def pick(names):
        bef = [n for n in names if n.endswith(".before_optimizations.txt")]
        return max(bef, key=lambda n: int(re.match(r"module_(\d+)", n).group(1)))

    pool = [n for n in changed if n.endswith(".before_optimizations.txt")]
    first = pick(pool) if pool else pick(list(after))
    prefix = first[: -len(".before_optimizations.txt")]
    opt = [
        n for n in after if n.startswith(prefix + ".") and n.endswith("_after_optimizations.txt")
    ]
    d = Path(directory)
    return d / first, d / sorted(opt, key=len)[0]


@wrong(
    "dump_files",
    why="'dumping HLO text into `directory`': to dodge other compiles' files it dumps into a "
    "fresh subdirectory of `directory` and returns those files, which are not in `directory` "
    "(directory.iterdir() never lists them)",
)
def _rt7_dump_files_private_subdir(f, args: tuple, directory: str) -> tuple[Path, Path]:
    import uuid

    sub = Path(directory) / f"rt7_{uuid.uuid4().hex[:8]}"
    sub.mkdir(parents=True)
    jax.jit(f).lower(*args).compile(
        compiler_options={"xla_dump_to": str(sub), "xla_dump_hlo_as_text": True}
    )
    before = next(p for p in sub.iterdir() if p.name.endswith(".before_optimizations.txt"))
    after = next(p for p in sub.iterdir() if p.name.endswith("_after_optimizations.txt"))
    return before, after


def _rt7_backend_kind(inst):
    kind = inst.attribute("kind")
    cfg = inst.attribute("backend_config") or ""
    m = re.search(r'"fusion_config":\{"kind":"([^"]+)"', str(cfg))
    return m.group(1) if (kind == "kCustom" and m) else kind


@wrong(
    "fusion_contents",
    why="keys are the fusions' kind= (kLoop, kCustom); keys a custom fusion by its "
    "backend_config kind instead: on the MLP or attention the matmuls' Counter sits under "
    "'__ynn_fusion', not 'kCustom'",
)
def _rt7_fusion_contents_backend_kind(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}
    for comp in module:
        for inst in comp:
            if inst.opcode != "fusion":
                continue
            c = out.setdefault(_rt7_backend_kind(inst), Counter())
            for callee in inst.called_computations:
                _rt7_count(module, callee, c, ())
    return out
