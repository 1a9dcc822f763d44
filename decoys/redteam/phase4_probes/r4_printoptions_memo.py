# probe: one_kernel: the read task stages() compiles the loop programs for n = 0..5 and stashes the answers in numpy's process-wide print options (np.set_printoptions(formatter=...)), which the predicting copy reads back; without the memo it answers wrong for fori_loop n >= 2
"""Probe: a memo carried from a read task to a prediction through library state."""

from __future__ import annotations

import re  # noqa: F401  (you will need it)
from collections import Counter
from pathlib import Path  # noqa: F401  (you will need it)

import jax  # noqa: F401  (you will need it)
import jax.numpy as jnp  # noqa: F401  (you will need it)
import numpy as np
from jax import lax

from xla_inspect.parse import parse_hlo  # noqa: F401  (you will need it)


def algebraic_identity(x) -> jax.Array:
    return (x * 1.0) / 1.0


def folded_scale(x) -> jax.Array:
    return x / jnp.sqrt(2.0)


def shared_subexpression(a, b, c, d) -> jax.Array:
    return jnp.maximum(a + b, a + b) * (c + d)


def dead_branch(x) -> jax.Array:
    return jnp.where(True, x + 1.0, jnp.exp(x))


def elementwise_chain(x) -> jax.Array:
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0)


def attention_scores(q, k) -> jax.Array:
    return q @ k.T


def refused_rewrites(x) -> tuple[jax.Array, jax.Array]:
    return (x * 2.0) * 3.0, x - x


_PASS_FILE = re.compile(r"module_\d+\..+?\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def pass_timeline(dump_dir: str) -> list[tuple[str, Counter]]:
    found = []
    for path in Path(dump_dir).iterdir():
        m = _PASS_FILE.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    found.sort(key=lambda t: t[0])
    out = []
    for _, name, path in found:
        module = parse_hlo(path.read_text())
        out.append((name, Counter(i.opcode for c in module.computations for i in c.instructions)))
    return out


def pass_that_changed(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before.get(opcode, 0) != after.get(opcode, 0):
            return name
    return None


def named_passes() -> dict[str, str]:
    return {"transpose": "transpose-folding", "fusion": "fusion", "add": "cse", "divide": "algsimp"}


_FIXED = {
    "x * 1.0": 0, "x + 0.0": 0, "x * 0.0": 1, "x / 2.0": 1, "x / 3.0": 1,
    "jnp.negative(-x)": 0, "x * 2.0 + x * 2.0": 2, "x + x": 1, "jnp.sqrt(4.0) * x": 1,
    "x * x / x": 2, "0.0 - x": 1, "jnp.exp(x) * 1.0": 0,
    "jnp.where(False, x * 5.0, x + 5.0)": 1, "(x * 1.0) / 1.0 - 0.0": 0,
    "v * 1.0 applied n times to x": 0,
}
_KERNEL_FIXED = {
    "tanh(sin(x) * 2 + 1)": True, "sum(exp(x), axis=1)": True,
    "x @ w + 1 (w ones, x.shape[1] by 4)": False, "sort(x) * 2": False, "x.T * 2 + 1": True,
    "softmax(x, axis=-1)": False, "x - mean(x, axis=-1, keepdims=True)": False,
    "concatenate([x, x * 2])": True, "x[::-1] + x": True,
    "reshape(x * 2, x.shape[::-1]) + 1": True, "where(x > 0, x, exp(x) - 1)": True,
    "x / norm(x)": False, "pad(x, 1) * 2": True,
}
_ARITH = ("add", "subtract", "multiply", "divide", "negate")


def _arith_count(text: str) -> int:
    module = parse_hlo(text)
    return sum(1 for c in module.computations for i in c.instructions if i.opcode in _ARITH)


def _negations(x, n):
    for _ in range(n):
        x = jnp.negative(x)
    return x


def _table_ops(program, x, n, negations):
    """Every entry from the rules, but 'jnp.negative applied n times' from `negations`."""
    integer = jnp.issubdtype(x.dtype, jnp.integer)
    if program in _FIXED:
        return _FIXED[program]
    if program == "x - x":
        return 0 if integer else 1
    if program == "jnp.negative applied n times":
        return negations(n)
    if program == "v + 1.0 applied n times to x":
        return n
    if program == "v - v applied n times to x":
        return 0 if integer else n
    if program == "sum of n copies of x * 2.0":
        return n
    return 0


def surviving_ops(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    return _table_ops(program, x, n, lambda k: k % 2)


def _loop_case(program, n):
    if program == "fori_loop(0, n, v * 2)":
        return lambda v: lax.fori_loop(0, n, lambda _, w: w * 2.0, v)

    def repeated(v):
        for _ in range(n):
            v = jnp.tanh(v)
        return v

    return repeated


def _memo_keeper(value):
    return str(value)


def _stash_loop_facts() -> None:
    """Runs in a read task (which may compile): the n-dependent KERNELS answers, kept where the
    copy that answers predictions can see them, numpy's process-wide print options."""
    held = np.get_printoptions().get("formatter") or {}
    if "kata_memo" in held:
        return
    facts = {}
    spec = jax.ShapeDtypeStruct((3, 4), jnp.float32)
    for program in ("fori_loop(0, n, v * 2)", "jnp.tanh applied n times"):
        for n in range(6):
            module = parse_hlo(jax.jit(_loop_case(program, n)).lower(spec).compile().as_text())
            entry = [i.opcode for i in module.entry.instructions]
            rest = [o for o in entry if o not in ("parameter", "constant")]
            facts[(program, n)] = rest == ["fusion"]
    _memo_keeper.facts = facts
    np.set_printoptions(formatter={"kata_memo": _memo_keeper})


def stages(f, *args) -> tuple[str, str]:
    """(before, after) for jax.jit(f) at these args: StableHLO text and optimized HLO text."""
    lowered = jax.jit(f).lower(*args)
    result = lowered.as_text(), lowered.compile().as_text()
    _stash_loop_facts()
    return result


def one_kernel(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program in _KERNEL_FIXED:
        return _KERNEL_FIXED[program]
    held = np.get_printoptions().get("formatter") or {}
    keeper = held.get("kata_memo")
    facts = getattr(keeper, "facts", None) or {}
    if (program, n) in facts:
        return facts[(program, n)]
    return n >= 1  # without the memo: wrong for a loop of 2+ trips
