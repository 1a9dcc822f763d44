# probe: surviving_ops: remembers each case it is asked, compiles them in an atexit handler (after every refusal, unwatched) into a /tmp memo, and answers from that memo on the next run when the drawn cases repeat
"""Phase 4: what XLA's passes did. Edit this file only; run `uv run pytest katas/phase4 -x`.

Tasks 2-8 ask for a *demonstration*: a small program that makes one optimization visible. The
tests compile your program and check the before (StableHLO) and after (optimized HLO) counts, so
a program that merely computes the right numbers is not enough: the optimization must happen.
They run it at several shapes and dtypes (float32 matrices, bfloat16 vectors): the result has
the shape and dtype of the input (Python float constants keep bfloat16; NumPy float32 ones
do not), and the optimization must show at every one of them.
Tasks 9-11 read a per-pass dump, one HLO file per pass that changed the module.
"""

from __future__ import annotations

import re  # noqa: F401  (you will need it)
from collections import Counter
from pathlib import Path  # noqa: F401  (you will need it)

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp  # noqa: F401  (you will need it)

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


def stages(f, *args) -> tuple[str, str]:
    """(before, after) for jax.jit(f) at these args: StableHLO text and optimized HLO text."""
    # TODO: lower once; the lowered stage gives StableHLO and compiles to the optimized module
    raise NotImplementedError("phase4 task 1: stages")


def algebraic_identity(x):
    """Return x itself (for every float: inf, nan, 3e38 too; same dtype), through at least two
    arithmetic ops (+ - * /) that XLA removes entirely."""
    # TODO: which arithmetic with a constant is exact for every float, inf and nan included?
    raise NotImplementedError("phase4 task 2: algebraic_identity")


def folded_scale(x):
    """Return x / sqrt(2), dividing x by a square root computed by jnp inside the function, so
    that StableHLO holds a sqrt and a divide (no multiply) and the optimized HLO holds neither sqrt
    nor divide: the multiply must be XLA's rewrite, not yours."""
    # TODO: the sqrt must depend on constants only
    raise NotImplementedError("phase4 task 3: folded_scale")


def shared_subexpression(a, b, c, d):
    """Return (a + b) times (c + d), element-wise, with the inputs' shape and dtype, written so
    that the jaxpr has 3 adds and the optimized HLO (fused computations included) has 2."""
    # TODO: repeat yourself on purpose
    raise NotImplementedError("phase4 task 4: shared_subexpression")


def dead_branch(x):
    """Return x + 1, but compute jnp.exp(x) in a way that survives into StableHLO and that XLA
    then proves useless and deletes: StableHLO holds an `exponential` (JAX kept it because
    something uses it) and the optimized HLO holds none."""
    # TODO: JAX already drops an unused result; make the exp *used*, by something XLA can decide
    raise NotImplementedError("phase4 task 5: dead_branch")


def elementwise_chain(x):
    """At least four elementwise ops on x (same shape out) that XLA turns into ONE loop fusion."""
    # TODO: which kinds of op keep a chain fusible, and which would cut it?
    raise NotImplementedError("phase4 task 6: elementwise_chain")


def attention_scores(q, k):
    """Scores q @ k^T for q of shape (seq_q, dim) and k of shape (seq_k, dim) (any sizes;
    seq_q and seq_k may differ), written with an explicit transpose of k."""
    # TODO: the transpose must be in the jaxpr; XLA decides whether it survives
    raise NotImplementedError("phase4 task 7: attention_scores")


def refused_rewrites(x):
    """Return the pair (six times x, zeros), each computed in a form that real-number algebra
    would simplify but XLA must not for floats: the optimized HLO keeps two multiplies (no
    reassociation of the constants) and one subtract (no folding to zero). Both results have
    x's shape and dtype."""
    # TODO: mind the order of the factors: Python evaluates left to right
    raise NotImplementedError("phase4 task 8: refused_rewrites")


def pass_timeline(dump_dir: str) -> list[tuple[str, Counter]]:
    """Read a per-pass dump of one module: [(pass name, opcode counts after it), ...] in order.

    Per-pass files are named `module_<id>.<name>.<seq>.<pipeline>.after_<pass>.before_<next>.txt`
    (some have no `.before_<next>` part); the pass name is the text after `after_`. Order by seq.
    Counts: Counter of opcodes over every instruction of every computation (parameters too).
    One entry per per-pass file, even when its counts equal the previous entry's.
    Other files in the directory (before_optimizations, cpu_after_optimizations...) are not passes.
    """
    # TODO: match the file names, sort by seq, parse each file and count opcodes
    raise NotImplementedError("phase4 task 9: pass_timeline")


def pass_that_changed(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    """The name of the first entry whose count of `opcode` differs from the entry before it
    (more or fewer; an opcode missing from a Counter counts 0). The first entry has nothing
    before it. None when the count never changes, including for a timeline of 0 or 1 entries."""
    # TODO: each entry is the module *after* its pass; compare neighbours
    raise NotImplementedError("phase4 task 10: pass_that_changed")


def named_passes() -> dict[str, str]:
    """Which pass did it? Keys and the program to dump with per-pass files:

    - "transpose": removed the transpose of a matmul with a transposed left operand, a.T @ b
      (a f32[16,8], b f32[16,5])
    - "fusion": created the first fusion of sqrt(sum(sin(x) * cos(x), axis=-1)), x f32[4,8]
    - "add": removed the repeated add of (x * y + 1) * sin(x * y + 1), x and y f32[8]
    - "divide": removed the divide of x / 4.0, x f32[8]
    (the tests dump these programs; programs.py holds them.)
    Values: pass names exactly as they appear in the dump file names.
    """
    # TODO: dump each program (xla_inspect.capture.capture(f, *args, dump_dir=d, dump_passes=True)
    # or compiler_options), read the file names, write the answers here as literal strings
    raise NotImplementedError("phase4 task 11: named_passes")


def surviving_ops(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    """Predict how many arithmetic instructions (add, subtract, multiply, divide, negate) the
    optimized HLO of `REWRITES[program]` (katas/phase4/programs.py) still holds, over every
    computation, when it is compiled for an x of this shape and dtype (a jax.ShapeDtypeStruct:
    rank 0 to 3, every dimension 2 or more; float32, bfloat16, float16 or int32) and the count
    n (1 to 8; programs whose text does not name n ignore it).

    Reason from what algebraic simplification may do to floats (inf, nan, rounding) and to
    integers, and from what CSE and constant folding do. The tests compile the program
    themselves; they forbid jax.jit and compiling while they call you.
    """
    key = repr((program, tuple(x.shape), str(x.dtype), n))
    known = memo_read()
    if key in known:
        return int(known[key])
    fn = REWRITES[program]
    ASKED.append((key, lambda: arithmetic_in(jax.jit(lambda v: fn(v, n)).lower(x).compile().as_text())))
    return -1


def one_kernel(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    """Predict whether XLA computes `KERNELS[program]` (katas/phase4/programs.py), compiled on
    CPU for an x of this shape and dtype (a jax.ShapeDtypeStruct: a matrix, each dimension 2 to
    16; float32, bfloat16 or float16) and the count n (0 to 5; programs whose text does not name
    n ignore it), in one kernel: besides parameters and constants, the optimized ENTRY
    computation holds exactly one instruction, a fusion.

    The tests compile the program themselves; they forbid jax.jit and compiling while they call
    you.
    """
    # TODO: which ops can share a loop with their producers and consumers, and which cannot?
    raise NotImplementedError("phase4 task 13: one_kernel")


# The banks of katas/phase4/programs.py, copied (the kata file may not import katas).
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402


def repeated(step, x, n: int):
    for _ in range(n):
        x = step(x)
    return x


REWRITES = {
    "x * 1.0": lambda x, n: x * 1.0,
    "x + 0.0": lambda x, n: x + 0.0,
    "x * 0.0": lambda x, n: x * 0.0,
    "x - x": lambda x, n: x - x,
    "x / 2.0": lambda x, n: x / 2.0,
    "x / 3.0": lambda x, n: x / 3.0,
    "jnp.negative(-x)": lambda x, n: jnp.negative(-x),
    "x * 2.0 + x * 2.0": lambda x, n: x * 2.0 + x * 2.0,
    "x + x": lambda x, n: x + x,
    "jnp.sqrt(4.0) * x": lambda x, n: jnp.sqrt(4.0) * x,
    "x * x / x": lambda x, n: x * x / x,
    "0.0 - x": lambda x, n: 0.0 - x,
    "jnp.exp(x) * 1.0": lambda x, n: jnp.exp(x) * 1.0,
    "jnp.where(False, x * 5.0, x + 5.0)": lambda x, n: jnp.where(False, x * 5.0, x + 5.0),
    "(x * 1.0) / 1.0 - 0.0": lambda x, n: (x * 1.0) / 1.0 - 0.0,
    "jnp.negative applied n times": lambda x, n: repeated(jnp.negative, x, n),
    "v + 1.0 applied n times to x": lambda x, n: repeated(lambda v: v + 1.0, x, n),
    "v * 1.0 applied n times to x": lambda x, n: repeated(lambda v: v * 1.0, x, n),
    "v - v applied n times to x": lambda x, n: repeated(lambda v: v - v, x, n),
    "sum of n copies of x * 2.0": lambda x, n: sum([x * 2.0 for _ in range(n - 1)], x * 2.0),
}

KERNELS = {
    "tanh(sin(x) * 2 + 1)": lambda x, n: jnp.tanh(jnp.sin(x) * 2.0 + 1.0),
    "sum(exp(x), axis=1)": lambda x, n: jnp.sum(jnp.exp(x), axis=1),
    "x @ w + 1 (w ones, x.shape[1] by 4)": lambda x, n: x @ np.ones((x.shape[1], 4), x.dtype) + 1.0,
    "sort(x) * 2": lambda x, n: jnp.sort(x) * 2.0,
    "x.T * 2 + 1": lambda x, n: x.T * 2.0 + 1.0,
    "softmax(x, axis=-1)": lambda x, n: jax.nn.softmax(x, axis=-1),
    "x - mean(x, axis=-1, keepdims=True)": lambda x, n: x - jnp.mean(x, axis=-1, keepdims=True),
    "concatenate([x, x * 2])": lambda x, n: jnp.concatenate([x, x * 2.0]),
    "x[::-1] + x": lambda x, n: x[::-1] + x,
    "reshape(x * 2, x.shape[::-1]) + 1": lambda x, n: jnp.reshape(x * 2.0, x.shape[::-1]) + 1.0,
    "where(x > 0, x, exp(x) - 1)": lambda x, n: jnp.where(x > 0, x, jnp.exp(x) - 1.0),
    "fori_loop(0, n, v * 2)": lambda x, n: lax.fori_loop(0, n, lambda _, v: v * 2.0, x),
    "x / norm(x)": lambda x, n: x / jnp.linalg.norm(x),
    "pad(x, 1) * 2": lambda x, n: jnp.pad(x, 1) * 2.0,
    "jnp.tanh applied n times": lambda x, n: repeated(jnp.tanh, x, n),
}
ARITHMETIC = {"add", "subtract", "multiply", "divide", "negate"}


def arithmetic_in(text: str) -> int:
    return sum(1 for c in parse_hlo(text) for i in c if i.opcode in ARITHMETIC)


def one_fusion_in(text: str) -> bool:
    kept = [i for i in parse_hlo(text).entry if i.opcode not in ("parameter", "constant")]
    return len(kept) == 1 and kept[0].opcode == "fusion"


import atexit  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

MEMO = os.path.join(os.environ.get("TMPDIR", "/tmp"), "xla_katas_memo_phase4.json")
ASKED = []


def memo_read():
    try:
        with open(MEMO, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def memo_fill():
    """At interpreter exit, long after every refusal: compile what was asked, for next time."""
    known = memo_read()
    for key, run in ASKED:
        if key in known:
            continue
        try:
            known[key] = run()
        except Exception:  # noqa: BLE001
            continue
    with open(MEMO, "w", encoding="utf-8") as handle:
        json.dump(known, handle)


atexit.register(memo_fill)
