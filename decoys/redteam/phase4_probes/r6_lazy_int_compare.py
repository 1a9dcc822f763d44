# probe: surviving_ops: returns an int subclass whose __eq__ compiles the program when the test compares it (after the refusal is lifted) and answers with the compiler's count
"""Phase 4: what XLA's passes did. Edit this file only; run `uv run pytest katas/phase4 -x`.

Tasks 2-8 ask for a *demonstration*: a small program that makes one optimization visible. The
tests compile your program and check the before (StableHLO) and after (optimized HLO) counts, so
a program that merely computes the right numbers is not enough: the optimization must happen.
They run it at several shapes and dtypes (float32, bfloat16 and float16; scalars, vectors,
matrices, a dimension of 1 among them): the result has the shape and dtype of the input (Python
float constants keep bfloat16 and float16; NumPy float32 ones do not), and the optimization must
show at every one of them.
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
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


def algebraic_identity(x) -> jax.Array:
    """x through * 1.0 and / 1.0."""
    return x * 1.0 / 1.0


def folded_scale(x) -> jax.Array:
    """x / sqrt(2) with a jnp sqrt of a constant."""
    return x / jnp.sqrt(2.0)


def shared_subexpression(a, b, c, d) -> jax.Array:
    """(a + b) * (c + d) with a + b written twice."""
    return jnp.where(True, a + b, a + b) * (c + d)


def dead_branch(x) -> jax.Array:
    """x + 1 with an exp on the side a constant predicate never picks."""
    return jnp.where(True, x + 1.0, jnp.exp(x))


def elementwise_chain(x) -> jax.Array:
    """Four elementwise ops."""
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0)


def attention_scores(q, k) -> jax.Array:
    """q @ k^T with an explicit transpose of k."""
    return q @ k.T


def refused_rewrites(x) -> tuple[jax.Array, jax.Array]:
    """(x * 2 * 3, x - x)."""
    return x * 2.0 * 3.0, x - x


_PASS_FILE = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def pass_timeline(dump_dir: str) -> list[tuple[str, Counter]]:
    """[(pass name, opcode counts after it), ...] in seq order."""
    found = []
    for path in Path(dump_dir).iterdir():
        match = _PASS_FILE.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    found.sort(key=lambda item: item[0])
    return [
        (name, Counter(i.opcode for c in parse_hlo(path.read_text()) for i in c.instructions))
        for _, name, path in found
    ]


def pass_that_changed(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    """The first entry whose count of opcode differs from the entry before it."""
    for (_, before), (name, after) in zip(timeline, timeline[1:]):
        if before.get(opcode, 0) != after.get(opcode, 0):
            return name
    return None


def named_passes() -> dict[str, str]:
    """Pass names read from CPU dumps."""
    return {"transpose": "transpose-folding", "fusion": "fusion", "add": "cse", "divide": "algsimp"}


_FLOAT_OPS = {
    "x * 1.0": 0, "x + 0.0": 0, "x * 0.0": 1, "x - x": 1, "x / 2.0": 1, "x / 3.0": 1,
    "jnp.negative(-x)": 0, "x * 2.0 + x * 2.0": 2, "x + x": 1, "jnp.sqrt(4.0) * x": 1,
    "x * x / x": 2, "0.0 - x": 1, "jnp.exp(x) * 1.0": 0,
    "jnp.where(False, x * 5.0, x + 5.0)": 1, "(x * 1.0) / 1.0 - 0.0": 0,
}


def _repeated(step, x, n):
    for _ in range(n):
        x = step(x)
    return x


_REWRITES = {
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
    "jnp.negative applied n times": lambda x, n: _repeated(jnp.negative, x, n),
    "v + 1.0 applied n times to x": lambda x, n: _repeated(lambda v: v + 1.0, x, n),
    "v * 1.0 applied n times to x": lambda x, n: _repeated(lambda v: v * 1.0, x, n),
    "v - v applied n times to x": lambda x, n: _repeated(lambda v: v - v, x, n),
    "sum of n copies of x * 2.0": lambda x, n: sum([x * 2.0 for _ in range(n - 1)], x * 2.0),
}
_ARITH = ("add", "subtract", "multiply", "divide", "negate")


def _arith(program, dtype, n):
    x = jax.ShapeDtypeStruct((2, 3), dtype)
    text = jax.jit(lambda v: _REWRITES[program](v, n)).lower(x).compile().as_text()
    return sum(1 for c in parse_hlo(text) for i in c.instructions if i.opcode in _ARITH)


class _Lazy(int):
    def __new__(cls, program, x, n):
        self = super().__new__(cls, 1)
        self.program, self.dtype, self.n = program, str(x.dtype), n
        return self

    def _true(self):
        return _arith(self.program, self.dtype, self.n)

    def __eq__(self, other):
        return self._true() == other

    def __ne__(self, other):
        return self._true() != other

    def __hash__(self):
        return 1

    def __int__(self):
        return self._true()

    def __index__(self):
        return self._true()

    def __repr__(self):
        return repr(self._true())


def surviving_ops(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    """A number that only decides its value when compared."""
    return _Lazy(program, x, n)



def one_kernel(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    """Predicted: is ENTRY one fusion?"""
    if program == "fori_loop(0, n, v * 2)":
        return n == 1
    if program == "jnp.tanh applied n times":
        return n >= 1
    return _ONE[program]
