"""Red-team (round 2) wrong answers for phase 6, written from the contract only."""

from __future__ import annotations

import math
import re

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo

# --- predict_chain_temp ---------------------------------------------------------------------


@wrong(
    "predict_chain_temp",
    why="'Return what memory_analysis().temp_size_in_bytes ... will say': a parity rule (odd "
    "depth one buffer, even depth two) that forgets depth 2, where the first product goes to "
    "the output allocation and the second overwrites nothing; wrong on (128, 128, 2, 4): "
    "131072 predicted, XLA:CPU plans 65536",
)
def r2_chain_parity_without_depth_two(rows, width, depth, itemsize):
    size = rows * width * itemsize
    if depth <= 1:
        return 0
    return size if depth % 2 else 2 * size


@wrong(
    "predict_chain_temp",
    why="'which of them are alive at the same time': takes the README's depth-3 figure (one "
    "buffer) as the rule for every depth >= 2; wrong on (128, 128, 4, 4): 65536 predicted, "
    "131072 planned",
)
def r2_chain_always_one_buffer(rows, width, depth, itemsize):
    return rows * width * itemsize if depth >= 2 else 0


@wrong(
    "predict_chain_temp",
    why="'which allocation besides temp can hold one of them': output holds one product, every "
    "other intermediate gets its own temp buffer (depth - 2 of them); right at depths 1, 3 "
    "and 4, wrong on (128, 128, 2, 4) (0 vs 65536) and (128, 128, 5, 4) (196608 vs 65536)",
)
def r2_chain_depth_minus_two(rows, width, depth, itemsize):
    return max(depth - 2, 0) * rows * width * itemsize


@wrong(
    "predict_chain_temp",
    why="'both of a dtype whose elements take itemsize bytes': writes the float32 width in; "
    "right for itemsize 4, wrong on (128, 128, 3, 2) (65536 vs 32768)",
)
def r2_chain_float32_width(rows, width, depth, itemsize):
    if depth <= 1:
        return 0
    buffers = 2 if depth % 2 == 0 and depth >= 4 else 1
    return buffers * rows * width * 4


@wrong(
    "predict_chain_temp",
    why="'which products are intermediates': counts the single product of depth 1 as scratch; "
    "wrong on (128, 128, 1, 4) (65536 vs 0: it is written straight into the output)",
)
def r2_chain_depth_one_scratch(rows, width, depth, itemsize):
    size = rows * width * itemsize
    if depth <= 3:
        return size
    return size if depth % 2 else 2 * size


# --- predict_bytes_accessed -------------------------------------------------------------------


def _r2_true_bytes(x) -> dict:
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
    why="'which programs need more than one kernel': fuses the mean into one pass; wrong on "
    "'x - x.mean()' at every shape (524288 predicted at f32[256,256], two kernels move 786440)",
)
def r2_bytes_mean_one_pass(program, x):
    answer = _r2_true_bytes(x)
    rows, cols, size = x.shape[0], x.shape[1], x.dtype.itemsize
    answer["x - x.mean()"] = 2 * rows * cols * size
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="'what a fused kernel reads': counts the broadcast b as read at full size; wrong on "
    "'x + b' at every shape (786432 predicted at f32[256,256], 525312)",
)
def r2_bytes_broadcast_full(program, x):
    answer = _r2_true_bytes(x)
    rows, cols, size = x.shape[0], x.shape[1], x.dtype.itemsize
    answer["x + b"] = 3 * rows * cols * size
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="'a slice reads its part' (README): reads all of x for a column slice; wrong on "
    "'x[:, : x.shape[1] // 2] * 2' (393216 predicted at f32[256,256], 262144)",
)
def r2_bytes_slice_reads_all(program, x):
    answer = _r2_true_bytes(x)
    rows, cols, size = x.shape[0], x.shape[1], x.dtype.itemsize
    answer["x[:, : x.shape[1] // 2] * 2"] = rows * cols * size + rows * (cols // 2) * size
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="'what each dtype costs per element': writes the bf16 product at f32 width (the "
    "multiply by a Python 2 taken as promoting); wrong on 'x.astype(bf16) * 2' (524288 "
    "predicted at f32[256,256], 393216)",
)
def r2_bytes_bf16_written_as_f32(program, x):
    answer = _r2_true_bytes(x)
    rows, cols, size = x.shape[0], x.shape[1], x.dtype.itemsize
    answer["x.astype(bf16) * 2"] = rows * cols * size + rows * cols * 4
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="'an argument the program ignores is not even a parameter': counts the unused y; "
    "wrong on 'x * 2 with an unused y' (786432 predicted at f32[256,256], 524288)",
)
def r2_bytes_reads_unused(program, x):
    answer = _r2_true_bytes(x)
    rows, cols, size = x.shape[0], x.shape[1], x.dtype.itemsize
    answer["x * 2 with an unused y"] = 3 * rows * cols * size
    return answer[program]


@wrong(
    "predict_bytes_accessed",
    why="'what a fused kernel reads and writes': materialises the transpose as its own pass; "
    "wrong on 'x.T + 1' (98304 predicted at f32[64,96], 49152)",
)
def r2_bytes_transpose_pass(program, x):
    answer = _r2_true_bytes(x)
    rows, cols, size = x.shape[0], x.shape[1], x.dtype.itemsize
    answer["x.T + 1"] = 4 * rows * cols * size
    return answer[program]


# --- aliased_parameters ---------------------------------------------------------------------

_R2_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*[\w-]+\s*\)")


def _r2_alias_text(hlo_text):
    return parse_hlo(hlo_text).attributes.get("input_output_alias", "")


@wrong(
    "aliased_parameters",
    why="'Use the numbers the header states, never an entry's position': keys by the entry's "
    "position in the list; wrong on rotate donated (0, 1, 2), whose header lists {0}: (2, ...) "
    "first (gives {0: (0,), ...}, should be {2: (0,), 0: (1,), 1: (2,)})",
)
def r2_alias_by_position(hlo_text):
    text = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    found = {}
    for position, match in enumerate(_R2_ENTRY.finditer(text)):
        index = tuple(int(p) for p in match.group(1).replace(" ", "").split(",") if p)
        found[position] = index
    return found


@wrong(
    "aliased_parameters",
    why="'the kind may be may-alias or must-alias': matches may-alias entries only; wrong on "
    "a header with {2}: (0, {1}, must-alias) (that entry is dropped)",
)
def r2_alias_may_only(hlo_text):
    text = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    found = {}
    for match in re.finditer(r"\{([\d,\s]*)\}\s*:\s*\((\d+),\s*\{[\d,\s]*\},\s*may-alias\)", text):
        index = tuple(int(p) for p in match.group(1).replace(" ", "").split(",") if p)
        found[int(match.group(2))] = index
    return found


@wrong(
    "aliased_parameters",
    why="'{parameter number: output shape index}': reads one digit for the parameter and the "
    "output index as digits only; wrong on a 13-parameter module whose header is "
    "{ {0, 1}: (12, {}, may-alias), {1}: (11, {}, may-alias) } (gives {1: (1,)}, should be "
    "{12: (0, 1), 11: (1,)})",
)
def r2_alias_single_digits(hlo_text):
    text = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    found = {}
    for match in re.finditer(r"\{(\d*)\}: \((\d)", text):
        found[int(match.group(2))] = (int(match.group(1)),) if match.group(1) else ()
    return found


@wrong(
    "aliased_parameters",
    why="'the second braces are an index *inside* parameter 3, not the output's': returns the "
    "parameter index as the output index; wrong on HANDWRITTEN_ALIAS's {2}: (0, {1}, "
    "must-alias) (gives 0: (1,), should be 0: (2,)) and on every {} parameter index",
)
def r2_alias_wrong_braces(hlo_text):
    text = parse_hlo(hlo_text).attributes.get("input_output_alias", "")
    found = {}
    for match in re.finditer(r"\{[\d,\s]*\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", text):
        index = tuple(int(p) for p in match.group(2).replace(" ", "").split(",") if p)
        found[int(match.group(1))] = index
    return found


# --- naive_temp_bytes -------------------------------------------------------------------------

_R2_VIEWS = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element"}
_R2_BITS = {"pred": 1, "s4": 4, "u4": 4}


def _r2_bits(dtype):
    if dtype in _R2_BITS:
        return _R2_BITS[dtype]
    return int(re.match(r"[a-z]+(\d+)", dtype).group(1))


def _r2_size(shape, bytes_of):
    if shape.is_tuple:
        return sum(_r2_size(e, bytes_of) for e in shape.elements)
    return math.prod(d or 0 for d in shape.dims) * bytes_of(shape.dtype)


def _r2_outputs(entry):
    root = entry.root
    return {root.name} | (set(root.operands) if root.opcode == "tuple" else set())


@wrong(
    "naive_temp_bytes",
    why="'pred: 1 byte': divides bit widths by 8 with floor, so pred takes 0 bytes; wrong on "
    "NAIVE_ODD_TYPES (its pred[5] compare counts 0, should be 5)",
)
def r2_naive_pred_floor(hlo_text):
    entry = parse_hlo(hlo_text).entry
    outputs = _r2_outputs(entry)
    total = 0
    for instruction in entry:
        if instruction.opcode in _R2_VIEWS or instruction.name in outputs:
            continue
        total += _r2_size(instruction.shape_info, lambda dt: _r2_bits(dt) // 8)
    return total


@wrong(
    "naive_temp_bytes",
    why="'the ROOT and, when the ROOT is a tuple, the instructions it gathers': excludes the "
    "ROOT only; wrong on NAIVE_TUPLE_ROOT (m bf16[8,6] and s f32[8] counted: +128 bytes)",
)
def r2_naive_root_only(hlo_text):
    entry = parse_hlo(hlo_text).entry
    total = 0
    for instruction in entry:
        if instruction.opcode in _R2_VIEWS or instruction.is_root:
            continue
        total += _r2_size(instruction.shape_info, lambda dt: max(1, _r2_bits(dt) // 8))
    return total


@wrong(
    "naive_temp_bytes",
    why="'instructions that only re-view a buffer (bitcast, tuple, get-tuple-element)': also "
    "skips copy, reshape and transpose as 'views'; wrong on an ENTRY holding a copy or a "
    "transpose, e.g. jax.jit(lambda x: (x.T @ x).T * 2) or a while loop's copies",
)
def r2_naive_copies_are_views(hlo_text):
    entry = parse_hlo(hlo_text).entry
    outputs = _r2_outputs(entry)
    skip = _R2_VIEWS | {"copy", "reshape", "transpose"}
    total = 0
    for instruction in entry:
        if instruction.opcode in skip or instruction.name in outputs:
            continue
        total += _r2_size(instruction.shape_info, lambda dt: max(1, _r2_bits(dt) // 8))
    return total


@wrong(
    "naive_temp_bytes",
    why="'a tuple-shaped result (a multi-output fusion) counts the sizes of its elements': "
    "reads dims/dtype of the tuple shape itself (no dtype: 0 bytes); wrong on NAIVE_ODD_TYPES "
    "(the (f64[5], c64[5], u16[3,7]) fusion counts 0, should be 40+40+42)",
)
def r2_naive_tuple_zero(hlo_text):
    entry = parse_hlo(hlo_text).entry
    outputs = _r2_outputs(entry)
    total = 0
    for instruction in entry:
        if instruction.opcode in _R2_VIEWS or instruction.name in outputs:
            continue
        shape = instruction.shape_info
        if shape.dtype is None:
            continue
        total += math.prod(shape.dims) * max(1, _r2_bits(shape.dtype) // 8)
    return total


@wrong(
    "naive_temp_bytes",
    why="'Instructions inside called computations (fusion bodies, reducers) get no buffers': "
    "walks every computation; wrong on NAIVE_TUPLE_ROOT (the widen/row_sum/add_f32 bodies "
    "add their results)",
)
def r2_naive_all_computations(hlo_text):
    module = parse_hlo(hlo_text)
    outputs = _r2_outputs(module.entry)
    total = 0
    for computation in module:
        for instruction in computation:
            if (
                instruction.opcode in _R2_VIEWS
                or instruction.is_root
                or instruction.name in outputs
            ):
                continue
            total += _r2_size(instruction.shape_info, lambda dt: max(1, _r2_bits(dt) // 8))
    return total


# --- reading the compiler's reports ---------------------------------------------------------


@wrong(
    "fusion_traffic",
    why="'each step's program is compiled for the previous step's output, shape and dtype "
    "both': follows the shape with eval_shape but keeps x's dtype; wrong on STEP_BANK "
    "'dtype changes' (exp is costed on f32 instead of bf16)",
)
def r2_traffic_keeps_dtype(steps, x):
    op_by_op = 0.0
    current = jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
    for step in steps:
        compiled = jax.jit(step).lower(current).compile()
        op_by_op += float((compiled.cost_analysis() or {}).get("bytes accessed", 0.0))
        out = jax.eval_shape(step, current)
        current = jax.ShapeDtypeStruct(out.shape, np.asarray(x).dtype)

    def fused(v):
        for step in steps:
            v = step(v)
        return v

    compiled = jax.jit(fused).lower(x).compile()
    return {
        "op_by_op": op_by_op,
        "fused": float((compiled.cost_analysis() or {}).get("bytes accessed", 0.0)),
    }


@wrong(
    "cost_of",
    why="'read from the *compiled* program (after fusion and CSE)': reads Lowered.cost_analysis; "
    "wrong on the bf16 exp chain (every intermediate counted as traffic) and on exp(a)+exp(a) "
    "(two transcendentals per element)",
)
def r2_cost_lowered(f, *args):
    cost = jax.jit(f).lower(*args).cost_analysis() or {}
    return {
        "flops": float(cost.get("flops", 0.0)),
        "transcendentals": float(cost.get("transcendentals", 0.0)),
        "bytes_accessed": float(cost.get("bytes accessed", 0.0)),
    }


@wrong(
    "memory_report",
    why="'exactly as XLA planned them (not from the arrays' nbytes: a tuple output also holds a "
    "small table of pointers, and a donated buffer that no output can use is not aliased)': "
    "argument/output from nbytes and alias = donated nbytes; wrong on MEMORY_BANK 'tuple "
    "output, donated buffer fits no output' (alias 960 predicted, 0 planned)",
)
def r2_memory_from_nbytes(f, *args, donate_argnums=()):
    jitted = jax.jit(f, donate_argnums=donate_argnums)
    stats = jitted.lower(*args).compile().memory_analysis()
    leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    outs = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
    donated = [
        leaf
        for i, a in enumerate(args)
        if i in donate_argnums
        for leaf in jax.tree_util.tree_leaves(a)
    ]
    return {
        "argument": int(sum(leaf.nbytes for leaf in leaves)),
        "output": int(sum(math.prod(o.shape) * np.dtype(o.dtype).itemsize for o in outs)),
        "temp": int(stats.temp_size_in_bytes),
        "alias": int(sum(np.asarray(leaf).nbytes for leaf in donated)),
    }
