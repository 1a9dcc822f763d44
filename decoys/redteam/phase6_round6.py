"""Red-team wrong answers for phase 6, written from the contract only."""

from __future__ import annotations

import math
import re
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong
from katas.phase6.kata import Timing
from xla_inspect.parse import parse_hlo

# ----------------------------------------------------------------------------- helpers


def _rt6_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    return dict(ca or {})


def _rt6_cost(f, *args):
    ca = _rt6_ca(jax.jit(f).lower(*args).compile())
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


def _rt6_spec(a):
    return jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a))


# ----------------------------------------------------------------------------- cost_of


@wrong(
    "cost_of",
    why="reads the Lowered stage's cost_analysis (before fusion/CSE), not the compiled one; "
    "wrong on the bf16 exp chain (unfused bytes count every intermediate) and exp(v)+exp(v)",
)
def _rt6_cost_of_lowered(f, *args):
    ca = jax.jit(f).lower(*args).cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0] if ca else {}
    ca = dict(ca or {})
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(ca.get("bytes accessed", 0.0)),
    }


@wrong(
    "cost_of",
    why="folds transcendentals into flops ('a flop is a flop'); the contract wants XLA's flops "
    "as stated; wrong on any program with exp/tanh, e.g. the bf16 exp chain",
)
def _rt6_cost_of_flops_with_transcendentals(f, *args):
    c = _rt6_cost(f, *args)
    c["flops"] = c["flops"] + c["transcendentals"]
    return c


@wrong(
    "cost_of",
    why="casts every floating argument to float32 before compiling ('cost analysis in f32'); "
    "the contract says the args exactly as given (bf16 stays 2 bytes); wrong on bf16 / f16 args",
)
def _rt6_cost_of_upcast(f, *args):
    def up(a):
        if isinstance(a, (int, float)):
            return a
        arr = np.asarray(a)
        if np.issubdtype(arr.dtype, np.floating) or arr.dtype == jnp.bfloat16:
            return arr.astype(np.float32)
        return a

    return _rt6_cost(f, *[up(a) for a in args])


# ----------------------------------------------------------------------------- fusion_traffic


def _rt6_fused(steps):
    def run(v):
        for s in steps:
            v = s(v)
        return v

    return run


@wrong(
    "fusion_traffic",
    why="compiles every step for the ORIGINAL x instead of the previous step's output; wrong "
    "when a step changes the shape or dtype (astype(bf16) then exp; a row sum then exp)",
)
def _rt6_fusion_traffic_all_on_x(steps, x):
    total = 0.0
    for s in steps:
        total += _rt6_cost(s, x)["bytes_accessed"]
    return {"op_by_op": total, "fused": _rt6_cost(_rt6_fused(steps), x)["bytes_accessed"]}


@wrong(
    "fusion_traffic",
    why="tracks each step's output SHAPE with eval_shape but keeps x's dtype; the contract "
    "compiles each step for the previous output's shape and dtype both; wrong on "
    "[astype(bf16), exp] on f32 x (exp costed in f32)",
)
def _rt6_fusion_traffic_keeps_dtype(steps, x):
    total = 0.0
    cur = _rt6_spec(x)
    for s in steps:
        total += _rt6_cost(s, cur)["bytes_accessed"]
        out = jax.eval_shape(s, cur)
        cur = jax.ShapeDtypeStruct(out.shape, cur.dtype)
    return {"op_by_op": total, "fused": _rt6_cost(_rt6_fused(steps), x)["bytes_accessed"]}


@wrong(
    "fusion_traffic",
    why="op_by_op from the formula n * 2 * x.nbytes (the hint's sanity check) instead of "
    "measuring each step; wrong when a step reduces (row sum) or changes dtype",
)
def _rt6_fusion_traffic_formula(steps, x):
    nbytes = np.asarray(x).nbytes
    return {
        "op_by_op": float(len(steps) * 2 * nbytes),
        "fused": _rt6_cost(_rt6_fused(steps), x)["bytes_accessed"],
    }


# ----------------------------------------------------------------------------- memory_report


def _rt6_mem(f, args, donate_argnums):
    m = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile().memory_analysis()
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


def _rt6_leaf_bytes(tree):
    return sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(tree))


@wrong(
    "memory_report",
    why="alias = nbytes of the donated arguments; the contract: a donated buffer no output can "
    "use is not aliased; wrong on v -> (v.sum(0), v[:3]*2, exp(v).max()) with v donated",
)
def _rt6_memory_report_alias_from_donation(f, *args, donate_argnums=()):
    r = _rt6_mem(f, args, donate_argnums)
    r["alias"] = int(sum(_rt6_leaf_bytes(args[i]) for i in donate_argnums))
    return r


@wrong(
    "memory_report",
    why="output = nbytes of the result leaves (jax.eval_shape), missing the tuple's pointer "
    "table XLA plans; wrong on any tuple output, e.g. the bf16 (s - 0.1*g, tanh(g@s.T))",
)
def _rt6_memory_report_output_from_shapes(f, *args, donate_argnums=()):
    r = _rt6_mem(f, args, donate_argnums)
    outs = jax.eval_shape(f, *args)
    r["output"] = int(
        sum(math.prod(o.shape) * jnp.dtype(o.dtype).itemsize for o in jax.tree.leaves(outs))
    )
    return r


@wrong(
    "memory_report",
    why="argument = np.asarray(leaf).nbytes summed over the arguments; a Python int scalar is "
    "8 bytes to NumPy but 4 to XLA (weakly typed int32); wrong on (3, int8[10,7])",
)
def _rt6_memory_report_argument_from_numpy(f, *args, donate_argnums=()):
    r = _rt6_mem(f, args, donate_argnums)
    r["argument"] = int(_rt6_leaf_bytes(args))
    return r


# ----------------------------------------------------------------------------- aliased_parameters

_rt6_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*([\w-]+)\s*\)")


def _rt6_alias_entries(text):
    attrs = parse_hlo(text).attributes
    raw = attrs.get("input_output_alias", "")
    out = []
    for m in _rt6_ENTRY.finditer(raw):
        idx = tuple(int(t) for t in m.group(1).replace(" ", "").split(",") if t)
        out.append((idx, int(m.group(2)), m.group(3)))
    return out


@wrong(
    "aliased_parameters",
    why="numbers parameters by the entry's position in the header list, not the number stated; "
    "wrong on the 'outputs rotated' program (c->0, a->1, b->2) and on donating only arg 1",
)
def _rt6_aliased_parameters_by_position(hlo_text):
    return {pos: idx for pos, (idx, _p, _k) in enumerate(_rt6_alias_entries(hlo_text))}


@wrong(
    "aliased_parameters",
    why="only matches entries of kind may-alias; the contract says the kind may be may-alias or "
    "must-alias; wrong on the hand-written header's {2}: (0, {1}, must-alias) entry",
)
def _rt6_aliased_parameters_may_only(hlo_text):
    return {p: idx for idx, p, kind in _rt6_alias_entries(hlo_text) if kind == "may-alias"}


_rt6_SINGLE = re.compile(r"\{(\d*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*[\w-]+\s*\)")


@wrong(
    "aliased_parameters",
    why="reads an output index as at most one number ({} or {k}); an output index inside a "
    "nested tuple output, e.g. {1, 0}: (2, {}, may-alias), is silently dropped; wrong on a "
    "module whose ROOT tuple holds a tuple",
)
def _rt6_aliased_parameters_flat_index(hlo_text):
    raw = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    res = {}
    for m in _rt6_SINGLE.finditer(raw):
        res[int(m.group(2))] = (int(m.group(1)),) if m.group(1) else ()
    return res


# ----------------------------------------------------------------------------- naive_temp_bytes

_rt6_SKIP = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element"}


def _rt6_bits(dtype):
    if dtype == "pred":
        return 8
    m = re.search(r"(\d+)", dtype)
    return int(m.group(1)) if m else 32


def _rt6_size(shape, *, packed=True, depth=None):
    if shape.is_tuple:
        if depth == 0:
            return 0
        return sum(
            _rt6_size(e, packed=packed, depth=None if depth is None else depth - 1)
            for e in shape.elements
        )
    n = math.prod(shape.dims) if shape.dims else 1
    bits = _rt6_bits(shape.dtype)
    pk = re.search(r"E\((\d+)\)", shape.layout or "")
    if packed and pk:
        return (n * int(pk.group(1)) + 7) // 8
    return n * ((bits + 7) // 8)


def _rt6_naive(hlo_text, *, root_last=False, packed=True, depth=None, skip=_rt6_SKIP):
    entry = parse_hlo(hlo_text).entry
    instrs = list(entry.instructions)
    root = instrs[-1] if root_last else entry.root
    outs = {root.name}
    if root.opcode == "tuple":
        outs |= {getattr(o, "name", o) for o in root.operands}
        outs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in instrs:
        if ins.name in outs or ins.opcode in skip:
            continue
        total += _rt6_size(ins.shape_info, packed=packed, depth=depth)
    return total


@wrong(
    "naive_temp_bytes",
    why="takes the ROOT to be the last ENTRY line; the contract: the ROOT is the instruction "
    "marked ROOT wherever its line is; wrong on an ENTRY whose ROOT line comes before others",
)
def _rt6_naive_temp_bytes_root_last(hlo_text):
    return _rt6_naive(hlo_text, root_last=True)


@wrong(
    "naive_temp_bytes",
    why="ignores the packed layout E(4): every s4/u4 element a whole byte; wrong on "
    "s4[9]{0:E(4)} (5 bytes, not 9)",
)
def _rt6_naive_temp_bytes_unpacked(hlo_text):
    return _rt6_naive(hlo_text, packed=False)


@wrong(
    "naive_temp_bytes",
    why="flattens a tuple-shaped result only one level (an element that is itself a tuple "
    "counts 0); the contract counts nested tuples at any depth; wrong on a while loop whose "
    "state is ((f32[4], s32[]), f32[8])",
)
def _rt6_naive_temp_bytes_one_level(hlo_text):
    return _rt6_naive(hlo_text, depth=1)


# ----------------------------------------------------------------------------- eager_vs_jit


def _rt6_block(out):
    for leaf in jax.tree.leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return out


def _rt6_timing(fn_name, **kw):
    """Build the Timing of the module this answer was swapped into (else the stub's)."""
    me = globals()[f"_rt6_{fn_name}"]
    for mod in list(sys.modules.values()):
        try:
            if getattr(mod, "eager_vs_jit", None) is me and hasattr(mod, "Timing"):
                return mod.Timing(**kw)
        except Exception:  # noqa: BLE001
            continue
    return Timing(**kw)


@wrong(
    "eager_vs_jit",
    why="no eager warm-up (only the jit one): f runs eagerly `repeats` times, not 1 + repeats, "
    "and the first eager call's op compiles are timed; wrong for any f, e.g. tracked(calls)",
)
def _rt6_eager_vs_jit_no_eager_warmup(f, args, repeats):
    jf = jax.jit(f)
    _rt6_block(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt6_block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt6_block(jf(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt6_timing(
        "eager_vs_jit_no_eager_warmup", eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit
    )


@wrong(
    "eager_vs_jit",
    why="eager_s is the mean but jit_s is the TOTAL over the timed loop (divides only one); "
    "the contract: both are mean seconds per timed call; wrong for any repeats > 1",
)
def _rt6_eager_vs_jit_jit_total(f, args, repeats):
    jf = jax.jit(f)
    _rt6_block(f(*args))
    _rt6_block(jf(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt6_block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt6_block(jf(*args))
    jit = time.perf_counter() - t0
    return _rt6_timing(
        "eager_vs_jit_jit_total", eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit
    )


@wrong(
    "eager_vs_jit",
    why="no jit warm-up: the first timed jit call traces and compiles, so jit_s includes the "
    "compile and the ratio is off; the contract wants one untimed warm-up of each; wrong for "
    "any f (e.g. a jitted matmul whose compile dwarfs its run)",
)
def _rt6_eager_vs_jit_no_jit_warmup(f, args, repeats):
    _rt6_block(f(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt6_block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    jf = jax.jit(f)
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt6_block(jf(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt6_timing(
        "eager_vs_jit_no_jit_warmup", eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit
    )


# ----------------------------------------------------------------------------- predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="every product but the last is an intermediate and gets its own temp buffer "
    "((depth-1) * rows*width*itemsize); XLA reuses buffers and parks one in the output; "
    "wrong at depth 3 (f32 16x32: 2048, not 4096)",
)
def _rt6_predict_chain_temp_no_reuse(rows, width, depth, itemsize):
    return max(depth - 1, 0) * rows * width * itemsize


@wrong(
    "predict_chain_temp",
    why="one temp buffer whenever there is an intermediate (reuse, ping-pong ignored); wrong at "
    "depth 4 (f32 16x32: 4096, not 2048)",
)
def _rt6_predict_chain_temp_one_buffer(rows, width, depth, itemsize):
    return rows * width * itemsize if depth >= 2 else 0


@wrong(
    "predict_chain_temp",
    why="parity rule shifted by one (even depth -> two buffers from depth 2 on); depth 2 has "
    "one intermediate only, 1 buffer; wrong at depth 2 (f32 16x32: 2048, not 4096)",
)
def _rt6_predict_chain_temp_parity_off_by_one(rows, width, depth, itemsize):
    if depth < 2:
        return 0
    return (2 if depth % 2 == 0 else 1) * rows * width * itemsize


# ----------------------------------------------------------------------------- predict_bytes_accessed


def _rt6_isz(dtype, table=None):
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if table is not None:
        return table.get(name, 4)
    return jnp.dtype(dtype).itemsize


def _rt6_predict(program, x, *, isz=None, b_len=None, slice_full=False):
    isz = isz or _rt6_isz
    r, c = x.shape
    n = r * c
    e = isz(x.dtype)
    if program == "tanh(exp(2x + 1) - 3)" or program == "exp(x)" or program == "x.T + 1":
        return 2 * n * e
    if program == "x + y":
        return 3 * n * e
    if program == "x + b":
        blen = c if b_len is None else b_len(r, c)
        return 2 * n * e + blen * e
    if program == "x.sum(axis=0)":
        return n * e + c * e
    if program == "x.sum()":
        return n * e + e
    if program == "x.astype(bf16) * 2":
        return n * e + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * e + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        half = r * (c // 2)
        return (n if slice_full else half) * e + half * e
    if program == "x * 2 with an unused y":
        return 2 * n * e
    if program == "x - x.mean()":
        return 3 * n * e + 2 * e
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="bytes per element from a table {float32:4, bfloat16:2, int8:1, int32:4} that forgot "
    "float16 (defaults to 4); wrong on every program with a float16 x, e.g. exp(x) f16[64,96]",
)
def _rt6_predict_bytes_accessed_no_f16(program, x):
    table = {"float32": 4, "bfloat16": 2, "int8": 1, "int32": 4}
    return int(_rt6_predict(program, x, isz=lambda d: _rt6_isz(d, table)))


@wrong(
    "predict_bytes_accessed",
    why="b taken with one element per ROW (x.shape[0]); the contract: one per column; the "
    "listed case is square 256x256, wrong on x + b with x f32[64,300]",
)
def _rt6_predict_bytes_accessed_b_rows(program, x):
    return int(_rt6_predict(program, x, b_len=lambda r, c: r))


@wrong(
    "predict_bytes_accessed",
    why="the slice program reads all of x (the kernel 'loads x' then slices); a fused kernel "
    "reads only the kept columns; wrong on x[:, :c//2]*2 with x f32[256,256]",
)
def _rt6_predict_bytes_accessed_slice_reads_all(program, x):
    return int(_rt6_predict(program, x, slice_full=True))
