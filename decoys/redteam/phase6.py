"""Red-team wrong answers for phase 6, written from the contract only."""

import re
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- predict: predict_chain_temp --------------------------------------------------------------


@wrong(
    "predict_chain_temp",
    why="contract: temp of the compiled chain; README: 'temp does not grow with the chain, though "
    "it is not the same at every depth'; this says one buffer whenever there is an "
    "intermediate: depth 4, f32[128,128] -> 65536, XLA plans 131072",
)
def always_one_buffer(rows, width, depth, itemsize):
    return rows * width * itemsize if depth >= 2 else 0


@wrong(
    "predict_chain_temp",
    why="contract: which intermediates are alive at once; this says the output takes one "
    "intermediate and every other one stays alive: depth - 2 buffers: depth 3 -> 1 buffer "
    "(right), depth 2 -> 0 and depth 5 -> 3 buffers (XLA: 1 buffer each)",
)
def all_but_one_alive(rows, width, depth, itemsize):
    return max(depth - 2, 0) * rows * width * itemsize


@wrong(
    "predict_chain_temp",
    why="contract: parity rule over-generalised from the hint (odd depth 1 buffer, even depth 2): "
    "depth 2 -> 2 buffers, XLA plans 1 (the output holds nothing until p2, so p1 needs temp "
    "only); depth 1 -> 1 buffer, XLA 0",
)
def parity_from_depth_one(rows, width, depth, itemsize):
    buffers = 1 if depth % 2 else 2
    return buffers * rows * width * itemsize


# --- predict: predict_bytes_accessed ----------------------------------------------------------


def _rt_true_bytes(x) -> dict:
    """What a careful learner gets right, for this x (adapted when the cases became drawn: each
    answer below keeps its wrong idea, as a formula of x)."""
    rows, cols = x.shape
    size = x.dtype.itemsize
    whole, n = rows * cols * size, rows * cols
    return {
        "tanh(exp(2x + 1) - 3)": 2 * whole,
        "x + y": 3 * whole,
        "x + b": 2 * whole + cols * size,
        "x.sum(axis=0)": whole + cols * size,
        "x.sum()": whole + size,
        "x.astype(bf16) * 2": 2 * whole if x.dtype.name == "bfloat16" else whole + 2 * n,
        "exp(x)": 2 * whole,
        "x.astype(f32) * 0.5": 2 * whole if x.dtype.name == "float32" else whole + 4 * n,
        "x.T + 1": 2 * whole,
        "x[:, : x.shape[1] // 2] * 2": 2 * rows * (cols // 2) * size,
        "x * 2 with an unused y": 2 * whole,
        "x - x.mean()": 3 * whole + 2 * size,
    }


@wrong(
    "predict_bytes_accessed",
    why="contract: 'which programs need more than one kernel'; this fuses x - x.mean() into one "
    "read and one write: 524288 at f32[256,256], XLA says 786440 (a reduction kernel, then the "
    "subtract)",
)
def mean_in_one_kernel(program, x):
    answer = _rt_true_bytes(x)
    answer["x - x.mean()"] = 2 * x.shape[0] * x.shape[1] * x.dtype.itemsize
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="contract: a kernel reads only what it uses; this charges every argument in full: "
    "unused y -> 786432 at f32[256,256] (XLA 524288), x[:, :128] * 2 -> 393216 (XLA 262144)",
)
def every_argument_read_whole(program, x):
    answer = _rt_true_bytes(x)
    whole = x.shape[0] * x.shape[1] * x.dtype.itemsize
    answer["x * 2 with an unused y"] = 3 * whole
    answer["x[:, : x.shape[1] // 2] * 2"] = (
        whole + x.shape[0] * (x.shape[1] // 2) * x.dtype.itemsize
    )
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="contract: each element costs its dtype's width, outputs included; this prices outputs "
    "like the input, and a broadcast operand at the output's size: x.astype(bf16) * 2 -> 524288 "
    "at f32[256,256] (XLA 393216), x + b -> 786432 (XLA 525312), x.sum() -> 262144 (forgets "
    "the 4-byte output)",
)
def input_dtype_and_broadcast_size(program, x):
    answer = _rt_true_bytes(x)
    whole = x.shape[0] * x.shape[1] * x.dtype.itemsize
    answer["x.astype(bf16) * 2"] = 2 * whole
    answer["x + b"] = 3 * whole
    answer["x.sum()"] = whole
    return answer[program]


# --- reading HLO: aliased_parameters -----------------------------------------------------------

_ENTRY = re.compile(r"\{([\d,\s]*)\}:\s*\((\d+),\s*\{([\d,\s]*)\},\s*([\w-]+)\)")


def _alias_entries(hlo_text):
    header = hlo_text.partition("\n")[0]
    return _ENTRY.findall(header)


def _index(text):
    return tuple(int(p) for p in text.replace(" ", "").split(",") if p)


@wrong(
    "aliased_parameters",
    why="contract: 'use the numbers the header states, never an entry's position'; this numbers "
    "parameters by position: '{ {0}: (1, {}, may-alias), {2}: (0, {1}, must-alias) }' -> "
    "{0: (0,), 1: (2,)}, want {1: (0,), 0: (2,)}",
)
def parameter_by_position(hlo_text):
    return {i: _index(out) for i, (out, _, _, _) in enumerate(_alias_entries(hlo_text))}


@wrong(
    "aliased_parameters",
    why="contract: the second braces are an index inside the parameter and the kind may be "
    "must-alias; this regex wants '{}, may-alias' and drops '{2}: (0, {1}, must-alias)': "
    "-> {1: (0,)}, want {1: (0,), 0: (2,)}",
)
def only_plain_may_alias(hlo_text):
    header = hlo_text.partition("\n")[0]
    found = re.findall(r"\{([\d,]*)\}:\s*\((\d+),\s*\{\},\s*may-alias\)", header)
    return {int(param): _index(out) for out, param in found}


# --- reading HLO: naive_temp_bytes ---------------------------------------------------------------

_SKIP = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element"}
_TABLE = {"f32": 4, "bf16": 2, "f16": 2, "s8": 1, "u8": 1, "s32": 4, "pred": 1, "f64": 8, "s64": 8}


def _table_bytes(shape):
    if shape.is_tuple:
        return sum(_table_bytes(e) for e in shape.elements)
    n = 1
    for d in shape.dims:
        n *= d
    return n * _TABLE.get(shape.dtype, 4)


def _bits_bytes(shape):
    if shape.is_tuple:
        return sum(_bits_bytes(e) for e in shape.elements)
    n = 1
    for d in shape.dims:
        n *= d
    if shape.dtype == "pred":
        return n
    return n * int(re.search(r"\d+", shape.dtype).group()) // 8


def _outputs(entry):
    root = entry.root
    names = {root.name}
    if root.opcode == "tuple":
        names |= set(root.operands)
    return names


@wrong(
    "naive_temp_bytes",
    why="contract: bytes per element 'read from the dtype's bit width'; this uses a table of the "
    "common dtypes and 4 bytes for the rest: c64 -> 4 (8), f8e4m3fn -> 4 (1), u16 -> 4 (2); "
    "the hand-written odd_types module gives 389, want 352",
)
def dtype_table_default_four(hlo_text):
    entry = parse_hlo(hlo_text).entry
    outputs = _outputs(entry)
    return sum(
        _table_bytes(i.shape_info) for i in entry if i.opcode not in _SKIP and i.name not in outputs
    )


@wrong(
    "naive_temp_bytes",
    why="contract: 'when the ROOT is a tuple, the instructions it gathers' are outputs; this "
    "excludes only the ROOT itself: tuple_root module -> 332 (counts %m and %s), want 204",
)
def only_root_is_output(hlo_text):
    entry = parse_hlo(hlo_text).entry
    return sum(_bits_bytes(i.shape_info) for i in entry if i.opcode not in _SKIP and not i.is_root)


@wrong(
    "naive_temp_bytes",
    why="contract: 'a tuple-shaped result (a multi-output fusion) counts the sizes of its "
    "elements'; this skips results without a dtype: odd_types module -> 230, want 352",
)
def tuple_results_free(hlo_text):
    entry = parse_hlo(hlo_text).entry
    outputs = _outputs(entry)
    return sum(
        _bits_bytes(i.shape_info)
        for i in entry
        if i.opcode not in _SKIP and i.name not in outputs and not i.shape_info.is_tuple
    )


# --- cost_of / fusion_traffic / memory_report ----------------------------------------------------


def _compiled_costs(f, *args):
    costs = jax.jit(f).lower(*args).compile().cost_analysis()
    return {
        "flops": float(costs.get("flops", 0.0)),
        "transcendentals": float(costs.get("transcendentals", 0.0)),
        "bytes_accessed": float(costs.get("bytes accessed", 0.0)),
    }


@wrong(
    "cost_of",
    why="contract: read from the *compiled* program (after fusion and CSE); this reads "
    "Lowered.cost_analysis: 'exp(v) + exp(v)' counts two exps, and the bf16 exp chain's bytes "
    "count every intermediate",
)
def lowered_estimate(f, *args):
    costs = jax.jit(f).lower(*args).cost_analysis()
    return {
        "flops": float(costs.get("flops", 0.0)),
        "transcendentals": float(costs.get("transcendentals", 0.0)),
        "bytes_accessed": float(costs.get("bytes accessed", 0.0)),
    }


@wrong(
    "fusion_traffic",
    why="contract: each step compiled for the previous step's output, shape and dtype both; this "
    "costs every step on the original x: 'dtype changes' (f32[33,20] -> bf16 -> exp) costs exp "
    "on f32 (5280 bytes instead of 2640)",
)
def every_step_on_x(steps, x):
    op_by_op = sum(_compiled_costs(step, x)["bytes_accessed"] for step in steps)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    return {"op_by_op": op_by_op, "fused": _compiled_costs(fused, x)["bytes_accessed"]}


@wrong(
    "memory_report",
    why="contract: 'exactly as XLA planned them (not from the arrays' nbytes: a tuple output "
    "also holds a small table of pointers, and a donated buffer no output can use is not "
    "aliased)'; this sums nbytes: tuple outputs lack the pointer table, and v f32[20,12] donated "
    "to (sum, v[:3]*2, max) reports alias 960",
)
def sizes_from_nbytes(f, *args, donate_argnums=()):
    compiled = jax.jit(f, donate_argnums=donate_argnums).lower(*args).compile()
    leaves = jax.tree.leaves(args)
    out = jax.tree.leaves(jax.eval_shape(f, *args))

    def nbytes(leaf):
        return (
            int(np.asarray(leaf).nbytes)
            if not hasattr(leaf, "dtype")
            else int(np.prod(np.shape(leaf)) * np.dtype(leaf.dtype).itemsize)
        )

    donated = jax.tree.leaves([args[i] for i in donate_argnums])
    return {
        "argument": sum(nbytes(leaf) for leaf in leaves),
        "output": sum(nbytes(o) for o in out),
        "temp": int(compiled.memory_analysis().temp_size_in_bytes),
        "alias": sum(nbytes(leaf) for leaf in donated),
    }


@wrong(
    "eager_vs_jit",
    why="contract: 'one warm-up call of each (not timed)'; this times from the first call, so the "
    "jit figure includes tracing and compiling, and f runs `repeats` times per kind, not "
    "repeats + 1",
)
def no_warm_up(f, args, repeats):
    jitted = jax.jit(f)
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(f(*args))
    eager = (time.perf_counter() - start) / repeats
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(jitted(*args))
    jit = (time.perf_counter() - start) / repeats
    return Timing(eager_s=eager, jit_s=jit, repeats=repeats, ratio=eager / jit)
