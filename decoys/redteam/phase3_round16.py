"""Red team, phase 3, round 16: a compile cache keyed by the function's code object (closures
ignored), argument leaves turned into NumPy arrays before measuring flops, a missing flops entry
read as NaN, nested fusions also walked as top-level fusions, line scanners that stop at a
computation's ROOT line (parameters and constants printed after it lost), rank-3 `.T` taken as a
no-op, dims printed as a Python list, half precision plus a Python int promoted to float32, and
the MLP's total reduced mod 2**64."""

from __future__ import annotations

from collections import Counter
from pathlib import Path  # noqa: F401

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

_rt16_code_cache: dict = {}


@wrong(
    "three_texts",
    why="Clause 'Every call compiles for the args it is given': caches the three texts by "
    "(f.__code__, each arg's shape and dtype) so that the ELEMENTWISE lambdas (same "
    "__qualname__, different code) stay apart; but closed_over(table) returns lambdas sharing one "
    "code object whose closed-over table differs: three_texts(closed_over(LONG_TABLE), x f32[12]) "
    "then three_texts(closed_over(2 * LONG_TABLE), x f32[12]) returns the first table's constants.",
)
def _rt16_three_texts_code_cache(f, *args) -> dict[str, str]:
    code = getattr(f, "__code__", None)
    leaves, tree = jax.tree_util.tree_flatten(args)
    key = (
        code if code is not None else id(f),
        str(tree),
        tuple((np.shape(a), str(jnp.result_type(a)), isinstance(a, (int, float))) for a in leaves),
    )
    if key in _rt16_code_cache:
        return dict(_rt16_code_cache[key])
    lowered = jax.jit(f).lower(*args)
    out = {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": lowered.compile().as_text(),
    }
    _rt16_code_cache[key] = dict(out)
    return out


@wrong(
    "flops",
    why="Clause 'jax.jit(f) compiled for `args`': normalises every argument leaf with np.asarray first "
    "('cost analysis wants arrays'); a Python float becomes a strong float64 array (canonicalised "
    "to float32), no longer weakly typed, so a half-precision program is promoted: "
    "scaled(x f16[4,5], 2.0) reports 60.0 flops instead of 41.0.",
)
def _rt16_flops_numpy_args(f, *args) -> float:
    arrays = jax.tree_util.tree_map(np.asarray, args)
    ca = jax.jit(f).lower(*arrays).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return float((ca or {}).get("flops", 0.0))


@wrong(
    "fusion_contents",
    why="Clause 'A fusion inside a fused computation ... counts under its own kind too': starts "
    "from every fusion instruction of every computation (fused ones included) AND recurses into "
    "nested fusions, so a nested fusion's computation counts twice under its own kind: on "
    "HAND_WRITTEN the kInput fusion inside %outer_body gives kInput {exponential: 2, reduce: 2, "
    "add: 2, ...} instead of 1 each.",
)
def _rt16_fusion_contents_nested_twice(hlo_text: str) -> dict[str, Counter]:
    module = parse_hlo(hlo_text)
    out: dict[str, Counter] = {}

    def walk(name: str, kinds: list[str]) -> None:
        for inst in module[name]:
            if inst.opcode != "parameter":
                for k in kinds:
                    out.setdefault(k, Counter())[inst.opcode] += 1
            inner = kinds + [inst.attribute("kind")] if inst.opcode == "fusion" else kinds
            for c in inst.called_computations:
                walk(c, inner)

    for comp in module:
        for inst in comp:
            if inst.opcode == "fusion":
                for c in inst.called_computations:
                    walk(c, [inst.attribute("kind")])
    return out


def _rt16_entry_lines_until_root(hlo_text: str) -> list[str]:
    lines = hlo_text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ENTRY"))
    body = []
    for ln in lines[start + 1 :]:
        s = ln.strip()
        if s == "}":
            break
        body.append(s)
        if s.startswith("ROOT "):
            break
    return body


def _rt16_split_shape(line: str) -> str:
    # text after " = " up to the opcode: balanced parentheses for tuples
    rhs = line.split(" = ", 1)[1]
    if rhs.startswith("("):
        depth = 0
        for i, ch in enumerate(rhs):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return rhs[: i + 1]
    return rhs.split(" ", 1)[0]


def _rt16_layout_of(shape: str) -> str:
    shape = shape.strip()
    if shape.startswith("("):
        inner = shape[1:-1].strip()
        if not inner:
            return "()"
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch in "({["
            depth -= ch in ")}]"
            cur += ch
        parts.append(cur)
        return "(" + ", ".join(_rt16_layout_of(p) for p in parts) + ")"
    i = shape.find("{")
    return shape[i:] if i >= 0 else "{}"


@wrong(
    "entry_parameter_layouts",
    why="Clause 'the ENTRY computation's parameters': a line scanner that reads ENTRY's lines "
    "from its header down to the ROOT line (ROOT taken as the block's end); on HAND_WRITTEN the "
    "parameter(2) %w printed after the ROOT is lost: ['{}', '({0,1}, {})', '{0}'] instead of "
    "['{}', '({0,1}, {})', '{0,1}', '{0}'].",
)
def _rt16_entry_parameter_layouts_until_root(hlo_text: str) -> list[str]:
    found = []
    for ln in _rt16_entry_lines_until_root(hlo_text):
        rest = ln[5:] if ln.startswith("ROOT ") else ln
        if " parameter(" not in rest:
            continue
        shape = _rt16_split_shape(rest)
        n = int(rest.split(" parameter(", 1)[1].split(")", 1)[0])
        found.append((n, _rt16_layout_of(shape)))
    return [lay for _, lay in sorted(found)]


_rt16_AFTER_ROOT = """HloModule after_root, entry_computation_layout={(f32[3]{0})->f32[3]{0}}

ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3]{0} parameter(0)
  %two = f32[] constant(2)
  %twos = f32[3]{0} broadcast(%two), dimensions={}
  ROOT %y = f32[3]{0} multiply(%x, %twos)
  %dead = f32[3]{0} constant({7, 8, 9})
}
"""


@wrong(
    "constants",
    why="Clause 'every constant instruction in the module ... each instruction once': walks every "
    "computation but stops reading a computation at its ROOT line (taken as its last line), so a "
    "constant printed after the ROOT is lost: on a module whose ENTRY is '%x = parameter(0), "
    "%two = constant(2), ..., ROOT %y = multiply, %dead = f32[3]{0} constant({7, 8, 9})' it "
    "answers [('f32[]', '2')] without ('f32[3]{0}', '{7, 8, 9}').",
)
def _rt16_constants_until_root(hlo_text: str) -> list[tuple[str, str]]:
    module = parse_hlo(hlo_text)
    out = []
    for comp in module:
        for inst in comp:
            if inst.opcode == "constant":
                out.append((inst.shape, inst.payload))
            if inst.is_root:
                break
    return out


def _rt16_dt(dtype) -> str:
    return {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}[
        jnp.dtype(dtype).name
    ]


def _rt16_shape(dt: str, shape, dims_fmt=None) -> str:
    shape = tuple(shape)
    if not shape:
        return f"{dt}[]"
    dims = dims_fmt(shape) if dims_fmt else ",".join(map(str, shape))
    lay = ",".join(str(i) for i in reversed(range(len(shape))))
    return f"{dt}[{dims}]{{{lay}}}"


def _rt16_predict(program, args, *, t3_noop=False, dims_fmt=None, half_plus_int_f32=False):
    x = args[0]
    shape = tuple(x.shape)
    dt = _rt16_dt(x.dtype)
    S = lambda d, s: _rt16_shape(d, s, dims_fmt)  # noqa: E731
    is_int = jnp.issubdtype(x.dtype, jnp.integer)
    if program == "x * 2 + 1":
        return "fusion", S(dt, shape)
    if program == "x + 1":
        if half_plus_int_f32 and dt in ("bf16", "f16"):
            return "fusion", S("f32", shape)
        return "fusion", S(dt, shape)
    if program in ("jnp.sin(x)", "jnp.tanh(x)"):
        return "fusion", S("f32" if is_int else dt, shape)
    if program == "x.astype(jnp.bfloat16)":
        return ("copy" if dt == "bf16" else "fusion"), S("bf16", shape)
    if program == "x.sum(axis=1)":
        return "fusion", S(dt, shape[:1] + shape[2:])
    if program == "x.max()":
        return "fusion", S(dt, ())
    if program == "x.T":
        if len(shape) == 1 or (t3_noop and len(shape) == 3):
            return "copy", S(dt, shape)
        return "fusion", S(dt, shape[::-1])
    if program == "x itself":
        return "copy", S(dt, shape)
    if program == "x.reshape(2, -1, x.shape[-1])":
        n = int(np.prod(shape))
        return "copy", S(dt, (2, n // (2 * shape[-1]), shape[-1]))
    if program == "(x * 2, x + 1)":
        s = S(dt, shape)
        return "tuple", f"({s}, {s})"
    if program == "(x, x.sum())":
        return "tuple", f"({S(dt, shape)}, {S(dt, ())})"
    if program == "(v, x)":
        v = args[1]
        return "tuple", f"({S(_rt16_dt(v.dtype), tuple(v.shape))}, {S(dt, shape)})"
    raise KeyError(program)


@wrong(
    "predict_entry_root",
    why="Clause 'what entry_root would read' for 'x.T' (ranks 1, 2, 3): treats .T as the matrix "
    "transpose only, a copy for a vector and a no-op on a rank-3 array (as for a vector); numpy's "
    ".T reverses all axes: x f32[2,3,4] gives ('copy', 'f32[2,3,4]{2,1,0}') instead of "
    "('fusion', 'f32[4,3,2]{2,1,0}').",
)
def _rt16_predict_entry_root_t_rank3_noop(program: str, args: tuple) -> tuple[str, str]:
    return _rt16_predict(program, args, t3_noop=True)


@wrong(
    "predict_entry_root",
    why="Clause 'in entry_root's format': writes the dims as Python prints a list "
    "(f'{dt}{list(shape)}'), right for scalars and vectors ('f32[]', 'f32[4]{0}') but with a "
    "space for rank 2 and more: 'x + 1' with x f32[8,4] gives 'f32[8, 4]{1,0}', XLA prints "
    "'f32[8,4]{1,0}'.",
)
def _rt16_predict_entry_root_list_dims(program: str, args: tuple) -> tuple[str, str]:
    return _rt16_predict(program, args, dims_fmt=lambda s: str(list(s))[1:-1])


@wrong(
    "predict_entry_root",
    why="Clause 'float32, bfloat16, float16 or int32' for 'x + 1': believes a half-precision array "
    "plus the Python int 1 is promoted to float32 (as float16 + int32 would be); jnp keeps the "
    "weakly typed 1 in x's dtype: x bfloat16[4,3] gives ('fusion', 'f32[4,3]{1,0}') instead of "
    "('fusion', 'bf16[4,3]{1,0}'). Right on every float32 and int32 input.",
)
def _rt16_predict_entry_root_half_plus_int_f32(program: str, args: tuple) -> tuple[str, str]:
    return _rt16_predict(program, args, half_plus_int_f32=True)


@wrong(
    "flops",
    why="Clause 'a program without arithmetic has no \"flops\" entry at all: that is 0.0 flops': "
    "reads a missing entry as 'not measured' and returns NaN rather than inventing a count; "
    "jax.jit(lambda x: x.T) at x f32[3,4] (cost analysis has only byte counts) gives nan, not 0.0.",
)
def _rt16_flops_missing_is_nan(f, *args) -> float:
    ca = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return float((ca or {}).get("flops", float("nan")))


@wrong(
    "mlp_flops",
    why="Clause 'Return the exact count (a Python int, any size) ... past 2**63': believes XLA's "
    "counter is an unsigned 64-bit total (flops are never negative) and reduces the sum mod "
    "2**64; each dot below 2**63 as the tests keep it, but the sum can pass 2**64: "
    "(2**60 - 1, 2, 2, 2) has dots of 8*(2**60 - 1) each and an exact total of 22*(2**60 - 1), "
    "this returns that minus 2**64.",
)
def _rt16_mlp_flops_uint64_total(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    total = 2 * batch * in_dim * hidden + 2 * batch * hidden + 2 * batch * hidden * out_dim
    total += batch * out_dim
    return total % (1 << 64)
