"""Red team, phase 6, round 17: plausible wrong answers written from the contract only."""

from __future__ import annotations

import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt17_cost(f, *args):
    c = jax.jit(f).lower(*args).compile().cost_analysis()
    return {
        "flops": float(c.get("flops", 0.0)),
        "transcendentals": float(c.get("transcendentals", 0.0)),
        "bytes_accessed": float(c.get("bytes accessed", 0.0)),
    }


@wrong(
    "cost_of",
    why="Clause 'read from the *compiled* program': reads Lowered.cost_analysis (unfused), so the chain tanh(exp(2v+1)-3) on f32[256,256] reports every intermediate's traffic (and exp(a)+exp(a) two exps).",
)
def _rt17_cost_of_lowered(f, *args) -> dict[str, float]:
    c = jax.jit(f).lower(*args).cost_analysis()
    return {
        "flops": float(c.get("flops", 0.0)),
        "transcendentals": float(c.get("transcendentals", 0.0)),
        "bytes_accessed": float(c.get("bytes accessed", 0.0)),
    }


@wrong(
    "cost_of",
    why="Clause 'for the arguments exactly as given (bf16 stays 2 bytes)': normalizes every array argument to float32 first, so the bf16 exp chain on bf16[48,40] reports twice the bytes.",
)
def _rt17_cost_of_as_float32(f, *args) -> dict[str, float]:
    fixed = tuple(np.asarray(a, np.float32) if hasattr(a, "dtype") else a for a in args)
    return _rt17_cost(f, *fixed)


@wrong(
    "fusion_traffic",
    why="Clause 'each compiled as its own program and fed the previous step's output': costs every step on the original x, so on STEP_BANK 'dtype changes' (f32[33,20] -> bf16 -> exp) exp is costed on f32 and op_by_op is too large.",
)
def _rt17_fusion_traffic_all_on_x(steps, x) -> dict[str, float]:
    total = sum(_rt17_cost(s, x)["bytes_accessed"] for s in steps)

    def fused(v):
        for s in steps:
            v = s(v)
        return v

    return {"op_by_op": total, "fused": _rt17_cost(fused, x)["bytes_accessed"]}


@wrong(
    "fusion_traffic",
    why="Clause 'each step's program is compiled for the previous step's output, shape and dtype both': tracks the shape with eval_shape but keeps x's dtype, so 'dtype changes' (f32 -> bf16, then exp) costs exp on f32[33,20] instead of bf16.",
)
def _rt17_fusion_traffic_keep_dtype(steps, x) -> dict[str, float]:
    dtype = np.asarray(x).dtype
    v = jax.ShapeDtypeStruct(np.shape(x), dtype)
    total = 0.0
    for s in steps:
        total += _rt17_cost(s, v)["bytes_accessed"]
        v = jax.ShapeDtypeStruct(jax.eval_shape(s, v).shape, dtype)

    def fused(v):
        for s in steps:
            v = s(v)
        return v

    return {"op_by_op": total, "fused": _rt17_cost(fused, x)["bytes_accessed"]}


@wrong(
    "memory_report",
    why="Clause 'a donated buffer that no output can use is not aliased': alias is the nbytes of every donated argument, so MEMORY_BANK 'tuple output, donated buffer fits no output' (f32[20,12] donated, no f32[20,12] output) reports 960 instead of 0.",
)
def _rt17_memory_report_alias_from_donation(
    f, *args, donate_argnums: tuple[int, ...] = ()
) -> dict[str, int]:
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    alias = 0
    for i in donate_argnums:
        alias += sum(int(np.asarray(leaf).nbytes) for leaf in jax.tree_util.tree_leaves(args[i]))
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": alias,
    }


@wrong(
    "memory_report",
    why="Clause 'not from the arrays' nbytes: a tuple output also holds a small table of pointers': output is the sum of the output leaves' nbytes, so the 3-output tuple of MEMORY_BANK misses the pointer table.",
)
def _rt17_memory_report_output_nbytes(
    f, *args, donate_argnums: tuple[int, ...] = ()
) -> dict[str, int]:
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    outs = jax.eval_shape(f, *args)
    out_bytes = sum(
        int(np.prod(o.shape, dtype=np.int64)) * np.dtype(o.dtype).itemsize
        for o in jax.tree_util.tree_leaves(outs)
    )
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": out_bytes,
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


@wrong(
    "aliased_parameters",
    why="Clause 'never an entry's position': numbers parameters by the entry's position in the list, so 'second argument, array output' ({ {}: (1, {}, may-alias) }) gives {0: ()} instead of {1: ()}.",
)
def _rt17_aliased_parameters_position(hlo_text: str) -> dict[int, tuple[int, ...]]:
    text = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    out = {}
    for pos, m in enumerate(re.finditer(r"\{([\d,\s]*)\}\s*:\s*\(", text)):
        out[pos] = tuple(int(t) for t in m.group(1).split(",") if t.strip())
    return out


@wrong(
    "aliased_parameters",
    why="Clause 'the kind may be may-alias or must-alias' and parameter index inside braces: the regex only accepts '(N, {}, may-alias)', so HANDWRITTEN_ALIAS's '{2}: (0, {1}, must-alias)' is dropped ({1: (0,)} instead of {1: (0,), 0: (2,)}).",
)
def _rt17_aliased_parameters_may_only(hlo_text: str) -> dict[int, tuple[int, ...]]:
    out = {}
    for m in re.finditer(r"\{([\d,\s]*)\}: \((\d+), \{\}, may-alias\)", hlo_text.splitlines()[0]):
        out[int(m.group(2))] = tuple(int(t) for t in m.group(1).split(",") if t.strip())
    return out


def _rt17_split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        if ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _rt17_array_bytes(t, packed_re=r"E\((\d+)\)", floor_bits=False):
    m = re.match(r"\s*([a-z0-9]+)\[([^\]]*)\](\{[^}]*\})?", t)
    dt, dims, lay = m.group(1), m.group(2), m.group(3) or ""
    n = 1
    for d in dims.split(","):
        d = d.strip().lstrip("<=")
        if d:
            n *= int(d)
    e = re.search(packed_re, lay) if packed_re else None
    if e:
        return (n * int(e.group(1)) + 7) // 8
    bits = 8 if dt == "pred" else int(re.search(r"(\d+)", dt).group(1))
    if floor_bits:
        return n * max(bits // 8, 0)
    return n * ((bits + 7) // 8)


def _rt17_shape_bytes(t, **kw):
    t = t.strip()
    if t.startswith("("):
        return sum(_rt17_shape_bytes(p, **kw) for p in _rt17_split_top(t[1:-1]))
    return _rt17_array_bytes(t, **kw)


_rt17_VIEWS = ("parameter", "constant", "bitcast", "tuple", "get-tuple-element")


def _rt17_naive(hlo_text, root_last=False, gather_outputs=True, **kw):
    entry = parse_hlo(hlo_text).entry
    if root_last:
        root = entry.instructions[-1]
    else:
        root = next(i for i in entry.instructions if i.is_root)
    outs = {root.name}
    if gather_outputs and root.opcode == "tuple":
        outs |= set(root.operands)
    return sum(
        _rt17_shape_bytes(i.shape, **kw)
        for i in entry.instructions
        if i.opcode not in _rt17_VIEWS and i.name not in outs
    )


@wrong(
    "naive_temp_bytes",
    why="Clause 'when the ROOT is a tuple, the instructions it gathers (those are the outputs)': excludes only the ROOT itself, so NAIVE_TUPLE_ROOT counts %m (bf16[8,6], 96 bytes) and %s as temp.",
)
def _rt17_naive_temp_bytes_root_only(hlo_text: str) -> int:
    return _rt17_naive(hlo_text, gather_outputs=False)


@wrong(
    "naive_temp_bytes",
    why="Clause 'The ROOT is the instruction marked ROOT, wherever its line is': takes the last ENTRY line as the ROOT; a module whose ROOT tuple is not last (an extra add after it) counts the real outputs as temp and skips the last line.",
)
def _rt17_naive_temp_bytes_last_line_root(hlo_text: str) -> int:
    return _rt17_naive(hlo_text, root_last=True)


@wrong(
    "naive_temp_bytes",
    why="Clause 'wherever E(n) stands in the layout (after a tile ...)': only recognizes E(n) as the layout's first item after ':', so s4[9]{0:T(3)E(4)S(1)} counts 9 bytes instead of 5.",
)
def _rt17_naive_temp_bytes_e_first(hlo_text: str) -> int:
    return _rt17_naive(hlo_text, packed_re=r":E\((\d+)\)")


@wrong(
    "naive_temp_bytes",
    why="Clause 'bit width rounded up to a whole byte (s4: 4 bits, one byte)': bytes = bits // 8, so an unpacked s4[9]{0} (or u4) intermediate counts 0 instead of 9.",
)
def _rt17_naive_temp_bytes_floor_bits(hlo_text: str) -> int:
    return _rt17_naive(hlo_text, floor_bits=True)


def _rt17_block(r):
    for leaf in jax.tree_util.tree_leaves(r):
        leaf.block_until_ready()


@wrong(
    "eager_vs_jit",
    why="Clause 'One warm-up call of each (not timed)': no warm-up, so the first timed jit call includes tracing and compilation (f traced inside the timed loop; eager f called repeats times, not repeats + 1) and jit_s is inflated.",
)
def _rt17_eager_vs_jit_no_warmup(f, args: tuple, repeats: int):
    from katas.phase6.kata import Timing

    jf = jax.jit(f)
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt17_block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt17_block(jf(*args))
    jit = (time.perf_counter() - t0) / repeats
    return Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)


@wrong(
    "eager_vs_jit",
    why="Clause 'eager_s and jit_s are MEAN seconds per timed call': returns the total seconds of the timed loops (ratio still right), e.g. repeats=5 gives 5x the mean.",
)
def _rt17_eager_vs_jit_total(f, args: tuple, repeats: int):
    from katas.phase6.kata import Timing

    jf = jax.jit(f)
    _rt17_block(f(*args))
    _rt17_block(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt17_block(f(*args))
    eager = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt17_block(jf(*args))
    jit = time.perf_counter() - t0
    return Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)


@wrong(
    "predict_chain_temp",
    why="Clause 'not the same at every depth': README's 'temp holds only one buffer of x's size' taken for every depth >= 2, so depth 4 (f32[128,128]) predicts 65536 where XLA plans 131072.",
)
def _rt17_predict_chain_temp_one_buffer(rows: int, width: int, depth: int, itemsize: int) -> int:
    return rows * width * itemsize if depth >= 2 else 0


@wrong(
    "predict_chain_temp",
    why="Clause 'depth ... any': parity rule (odd depth one buffer, even two) without the depth-2 case, so depth 2 predicts 2 buffers where XLA plans 1 (f32[128,128]: 131072 vs 65536).",
)
def _rt17_predict_chain_temp_parity(rows: int, width: int, depth: int, itemsize: int) -> int:
    if depth < 2:
        return 0
    return rows * width * itemsize * (1 if depth % 2 else 2)


@wrong(
    "predict_chain_temp",
    why="Clause 'x of shape (rows, width), w of shape (width, width)': sizes a product as width x width (w's size), right on square chains, wrong on x (16, 64) depth 3: 16384 vs 4096.",
)
def _rt17_predict_chain_temp_square(rows: int, width: int, depth: int, itemsize: int) -> int:
    if depth < 2:
        return 0
    n = 1 if depth == 2 or depth % 2 else 2
    return n * width * width * itemsize


def _rt17_bytes(program, x, slice_reads_all=False, mean_one_kernel=False, sum_axis_rows=False):
    r, c = x.shape
    n = r * c
    s = np.dtype(x.dtype).itemsize
    if program in ("tanh(exp(2x + 1) - 3)", "exp(x)", "x.T + 1", "x * 2 with an unused y"):
        return 2 * n * s
    if program == "x + y":
        return 3 * n * s
    if program == "x + b":
        return 2 * n * s + c * s
    if program == "x.sum(axis=0)":
        return n * s + (r if sum_axis_rows else c) * 4
    if program == "x.sum()":
        return n * s + 4
    if program == "x.astype(bf16) * 2":
        return n * s + 2 * n
    if program == "x.astype(f32) * 0.5":
        return n * s + 4 * n
    if program == "x[:, : x.shape[1] // 2] * 2":
        half = r * (c // 2) * s
        return (n * s + half) if slice_reads_all else 2 * half
    if program == "x - x.mean()":
        return 2 * n * s if mean_one_kernel else 3 * n * s + 8
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="Clause 'a slice reads its part': the slice program is taken to read all of x, so 'x[:, : x.shape[1] // 2] * 2' at f32[256,256] predicts 393216 instead of 262144.",
)
def _rt17_predict_bytes_slice_reads_all(program: str, x) -> int:
    return _rt17_bytes(program, x, slice_reads_all=True)


@wrong(
    "predict_bytes_accessed",
    why="Clause 'a value that needs a whole reduction ... starts a second pass': x - x.mean() predicted as one fused kernel (read x, write out), 2*4*n, where XLA reads x twice: f32[256,256] 524288 vs 786440.",
)
def _rt17_predict_bytes_mean_fused(program: str, x) -> int:
    return _rt17_bytes(program, x, mean_one_kernel=True)


@wrong(
    "predict_bytes_accessed",
    why="Clause 'x.sum(axis=0)': writes one float per row instead of per column, equal on square x, wrong on f32[64,96] (24832 vs 24960).",
)
def _rt17_predict_bytes_sum_axis_rows(program: str, x) -> int:
    return _rt17_bytes(program, x, sum_axis_rows=True)
