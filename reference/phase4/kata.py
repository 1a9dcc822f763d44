"""Phase 4 reference: what XLA's passes did."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp

from xla_inspect.parse import parse_hlo

_PASS_FILE = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def stages(f, *args) -> tuple[str, str]:
    # Before: StableHLO, what JAX hands over. After: the HLO XLA compiled. (Unoptimized HLO is
    # already simplified by the StableHLO -> HLO conversion, so it is a poor "before".)
    lowered = jax.jit(f).lower(*args)
    optimized = lowered.compile().as_text()
    assert optimized is not None, "this backend does not print its executable"
    return lowered.as_text(), optimized


def algebraic_identity(x) -> jax.Array:
    # Three ops in StableHLO, none in optimized HLO: x*1, -0 and /1 are identities. (x + 0.0 is
    # not: -0.0 + 0.0 is +0.0. XLA deletes it all the same, so only an eager call shows it.)
    return (x * 1.0 - 0.0) / 1.0


def folded_scale(x) -> jax.Array:
    # jnp.sqrt(2.0) is staged into the graph; XLA folds it and turns the divide into a multiply.
    return x / jnp.sqrt(2.0)


def shared_subexpression(a, b, c, d) -> jax.Array:
    # a+b written twice: 3 adds in the jaxpr, CSE leaves 2. The maximum of a value and itself
    # is that value (NaN too); (a+b)*c + (a+b)*d would not be (a+b)*(c+d) for floats: the
    # partial products may overflow or cancel where the product does not.
    return jnp.maximum(a + b, a + b) * (c + d)


def dead_branch(x) -> jax.Array:
    # The predicate is a constant: simplification picks x+1, the exp has no user left.
    return jnp.where(True, x + 1.0, jnp.exp(x))


def elementwise_chain(x) -> jax.Array:
    # Four elementwise ops, no reduction or data movement between them: one loop fusion.
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0)


def attention_scores(q, k) -> jax.Array:
    # The explicit transpose becomes rhs_contracting_dims={1} of the dot.
    return q @ k.T


def refused_rewrites(x) -> tuple[jax.Array, jax.Array]:
    # Float math is not associative and x-x is NaN for inf: XLA keeps both forms.
    return x * 2.0 * 3.0, x - x


def _opcode_counts(path: Path) -> Counter:
    return Counter(i.opcode for c in parse_hlo(path.read_text()) for i in c)


def pass_timeline(dump_dir: str) -> list[tuple[str, Counter]]:
    # One file per pass that changed the module (plus pipeline starts), ordered by sequence number.
    found = []
    for path in Path(dump_dir).iterdir():
        match = _PASS_FILE.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    return [(name, _opcode_counts(path)) for _, name, path in sorted(found)]


def pass_that_changed(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    # A file is the module *after* its pass: compare each entry with the one before it.
    for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False):
        if before[opcode] != after[opcode]:
            return name
    return None


def named_passes() -> dict[str, str]:
    # Read off per-pass dumps of the four programs (file names: after_<pass>).
    return {
        "transpose": "transpose-folding",
        "fusion": "fusion",
        "add": "cse",
        "divide": "algsimp",
    }


def surviving_ops(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    # Identities (x*1, x/1, a double negation, and x+0, which XLA deletes though -0.0 + 0.0 is
    # +0.0) vanish; x*0 and x-x are not (nan, inf); dividing by a constant becomes a multiply;
    # CSE shares x*2.0; constants fold; 0-x stays a subtract. On integers x - x is exactly 0
    # and folds (a float literal makes the rest of these programs float32, so nothing else
    # changes). Shapes change nothing.
    integer = jnp.issubdtype(x.dtype, jnp.integer)
    counts = {
        "x * 1.0": 0,
        "x + 0.0": 0,
        "x * 0.0": 1,
        "x - x": 0 if integer else 1,
        "x / 2.0": 1,
        "x / 3.0": 1,
        "jnp.negative(-x)": 0,
        "x * 2.0 + x * 2.0": 2,
        "x + x": 1,
        "jnp.sqrt(4.0) * x": 1,
        "x * x / x": 2,
        "0.0 - x": 1,
        "jnp.exp(x) * 1.0": 0,
        "jnp.where(False, x * 5.0, x + 5.0)": 1,
        "(x * 1.0) / 1.0 - 0.0": 0,
        "jnp.negative applied n times": n % 2,
        "v + 1.0 applied n times to x": n,
        "v * 1.0 applied n times to x": 0,
        "v - v applied n times to x": 0 if integer else n,
        "sum of n copies of x * 2.0": n,
    }
    return counts[program]


def one_kernel(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    # Elementwise ops, transposes, reshapes, reversals, pads, concatenates and a reduction at the
    # end share one loop; a reduction feeding a broadcast consumer, a dot, a sort and a loop do
    # not. A loop of one trip is unrolled into its body; zero trips (or zero tanh) return x,
    # which XLA copies. Neither the dtype nor the (small) shape changes a verdict.
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    separate = {
        "x @ w + 1 (w ones, x.shape[1] by 4)",
        "sort(x) * 2",
        "softmax(x, axis=-1)",
        "x - mean(x, axis=-1, keepdims=True)",
        "x / norm(x)",
    }
    return program not in separate
