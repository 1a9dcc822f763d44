"""Programs phase 2's tests draw fresh for every run (from a ``random.Random``), each built so
that its answer is known by construction, not read from the jaxpr.

- io_program: arguments of every dtype and kind (ml_dtypes' float8 and int4 types, arrays of
  any rank, zero-size ones, Python scalars), outputs that are inputs, closed-over arrays,
  literals of any dtype or computed values (maybe by one jit call, the jaxpr's only
  equation), one of them twice, in a drawn order.
- literal_program: literals of a drawn dtype at its edges (int32 beyond 2**24, uint32 beyond
  2**31) and a zero, next to primitives whose names contain one another (or, xor; add,
  scatter-add) or begin with one another (add, add_any; atan, atan2), two of them in one
  equation (a clamp's bounds), beside a closed-over 0-d jax Array (a constvar, not a literal).

The programs of unused_equations, closure_consts and stablehlo_of are in strata_lowering.py,
the census's nestings in nestings.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.interpreters import ad

DTYPE_NAMES = (
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "int8",
    "int16",
    "int32",
    "bfloat16",
    "float16",
    "float32",
)
F32 = np.float32


def dtype_of(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)


def drawn_shape(rng: random.Random) -> tuple[int, ...]:
    """Rank 0 to 3, sizes 1 to 4, and a zero-size dimension now and then."""
    shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 3))]
    if shape and rng.random() < 0.2:
        shape[rng.randrange(len(shape))] = 0
    return tuple(shape)


def drawn_array(rng: random.Random, name: str, shape: tuple[int, ...]) -> np.ndarray:
    values = np.random.default_rng(rng.randrange(2**32)).integers(0, 3, size=shape)
    return values.astype(dtype_of(name))


# ------------------------------------------------------------------------------------- io_avals


# ml_dtypes' types beside bfloat16: NumPy names each one, jax takes them as they are
EXTENSION_NAMES = ("float8_e4m3fn", "float8_e5m2", "int4", "uint4")
# a literal output's first dtype: none that a Python scalar gives (bool, int32, float32)
_LITERAL_NAMES = ("uint8", "uint16", "uint32", "int8", "int16", "bfloat16", "float16")


def io_program(rng: random.Random, featured: str, jitted: bool = False) -> tuple[Callable, tuple]:
    """f(*args) and args: 3 to 5 arguments (arrays of drawn dtypes and shapes, one of them of
    dtype `featured`, Python ints and floats), returning a drawn mix of arguments as they are,
    closed-over arrays as they are (constvars), literals (a 0-d NumPy value of a dtype no
    Python scalar gives, maybe a Python scalar or another 0-d value: inlined), values computed
    from the arguments, and one argument or closed-over array a second time, in a drawn
    order. With `jitted`, the computed values come out of one jax.jit call given only the
    arguments they read, so f's jaxpr is one jit equation whose own avals are not f's.
    Without it, a dead jit call comes last: it reads every argument and gives as many int16
    (7, 1) results as f has outputs, none of them returned, so the jaxpr's last equation has
    the outputs' count but not their avals (the outputs are the jaxpr's outvars, wherever the
    equations computing them stand)."""
    names = DTYPE_NAMES + EXTENSION_NAMES
    args: list = []
    for _ in range(rng.randint(2, 4)):
        kind = rng.choice(("array", "array", "array", "python int", "python float"))
        if kind == "python int":
            args.append(rng.randint(-9, 9))
        elif kind == "python float":
            args.append(rng.randint(-9, 9) / 4)
        else:
            args.append(drawn_array(rng, rng.choice(names), drawn_shape(rng)))
    args.insert(rng.randint(0, len(args)), drawn_array(rng, featured, drawn_shape(rng)))
    closed = [
        drawn_array(rng, rng.choice(names), drawn_shape(rng) or (2,))
        for _ in range(rng.randint(1, 2))
    ]
    literals: list = [drawn_array(rng, rng.choice(_LITERAL_NAMES + EXTENSION_NAMES), ())]
    if rng.random() < 0.5:
        literals.append(rng.choice((True, rng.randint(-9, 9), 2.5, drawn_array(rng, featured, ()))))
    picks: list[tuple[str, int]] = [("arg", i) for i in rng.sample(range(len(args)), 2)]
    picks += [("closed", i) for i in range(len(closed))]
    picks.append(rng.choice(picks))  # returned twice: the same variable twice in the outputs
    picks += [("literal", i) for i in range(len(literals))]
    picks += [("computed", rng.randrange(len(args))) for _ in range(rng.randint(1, 2))]
    rng.shuffle(picks)
    read = sorted({index for kind, index in picks if kind == "computed"})

    def computed(*values):  # one value per argument read, in `read` order
        return [jnp.asarray(v).astype(jnp.float16).sum() for v in values]

    def dead(*values):  # as many results as f has outputs, none of them returned
        base = sum(jnp.asarray(v).astype(jnp.int16).sum() for v in values)
        return tuple(jnp.full((7, 1), base + k, jnp.int16) for k in range(len(picks)))

    def f(*values):
        sums = (jax.jit(computed) if jitted else computed)(*(values[i] for i in read))
        outputs = []
        for kind, index in picks:
            if kind == "arg":
                outputs.append(values[index])
            elif kind == "closed":
                outputs.append(closed[index])
            elif kind == "literal":
                outputs.append(literals[index])
            else:
                outputs.append(sums[read.index(index)])
        if not jitted:
            jax.jit(dead)(*values)  # traced last, left dead
        return tuple(outputs)

    return f, tuple(args)


# ------------------------------------------------------------------------------ literal_operands

_EDGES = {
    "uint8": (200, 255),
    "uint16": (40000, 65535),
    "uint32": (2**31 + 7, 4_000_000_001),
    "int8": (-128, 127),
    "int16": (-32768, 30001),
    "int32": (2**24 + 1, -(2**31) + 3),
    "bfloat16": (-1.5, 3.0e38),
    "float16": (0.1, -65504.0),
    "float32": (16777217.0, -1.0e-30),
}


@dataclass(frozen=True)
class LiteralProgram:
    f: Callable
    arg: np.ndarray
    expected: dict[str, list[float]]  # primitive asked -> the literal operands it has
    dtype: str


LITERAL_DTYPES = tuple(_EDGES)


def literal_program(rng: random.Random, name: str) -> LiteralProgram:
    """A program on an array of dtype `name` (one of LITERAL_DTYPES) with literals at that
    dtype's edges (as 0-d NumPy scalars: inlined), in a drawn order, beside primitives whose
    names contain the asked one: `or` beside `xor` for integers, `add` beside `scatter-add` for
    floats; beside primitives whose names begin with the asked one (see _prefixed): `add` beside
    `add_any`, and for floats `atan` beside `atan2`; a `mul` by a zero literal and by a
    closed-over 0-d jax Array (a constvar), in a drawn order; then two clamps in a drawn order,
    two literal bounds each (two edges, or one value twice)."""
    dtype = dtype_of(name)
    a, b = (dtype.type(v) for v in rng.sample(_EDGES[name], 2))
    c = dtype.type(rng.randint(1, 9))
    arg = np.ones((3,), dtype)
    # two more `mul` operands in a drawn order: a zero literal (a value, though falsy) and a
    # closed-over 0-d jax Array (a constvar, though it looks like a folded scalar)
    factors = [("literal", dtype.type(0)), ("constvar", jax.device_put(np.asarray(c, dtype)))]
    rng.shuffle(factors)

    def scaled(v):
        for _, factor in factors:
            v = v * factor
        return v

    scaled_by = [0.0 for kind, _ in factors if kind == "literal"]
    # two clamps, each with two literal operands (bounds around the value), in a drawn order:
    # the edges in their drawn order, and one small value as both bounds
    bounds = [(a, b), (c, c)]
    rng.shuffle(bounds)

    def clamped(v):
        for low, high in bounds:
            v = lax.clamp(low, v, high)
        return v

    clamps = [float(bound) for pair in bounds for bound in pair]
    prefixed, after = _prefixed(rng, dtype, (*_EDGES[name], int(c)))
    if dtype.kind in "iu":
        first, second = ("or", "xor") if rng.random() < 0.5 else ("xor", "or")
        ops = {"or": jnp.bitwise_or, "xor": jnp.bitwise_xor}

        def f(v):
            return clamped(scaled(ops[second](ops[first](prefixed(v + a), b), c) * a))

        expected = {"add": [float(a)], first: [float(b)], second: [float(c)]}
        expected["mul"] = [float(a), *scaled_by]
        return LiteralProgram(f, arg, {**expected, **after, "clamp": clamps}, name)

    def g(v):
        return clamped(scaled((prefixed(v.at[1].add(c)) + a) * b) + v.at[0].add(b))

    expected = {
        "add": [float(a)],
        "mul": [float(b), *scaled_by],
        "scatter-add": [float(c), float(b)],
    }
    return LiteralProgram(g, arg, {**expected, **after, "clamp": clamps}, name)


def _prefixed(rng: random.Random, dtype: np.dtype, values: tuple) -> tuple[Callable, dict]:
    """A step (array in, array of its shape and dtype out) holding primitives whose names begin
    with a name the program asks about: an `add_any` (what jax.grad sums cotangents with) of a
    0-d piece and a literal, and for floats an `atan2` with a literal beside an `atan` with none,
    in a drawn order; with the literals each of them has."""
    spare = dtype.type(rng.choice(values))
    pieces = ["add_any"] + (["atan"] if dtype.kind not in "iu" else [])
    rng.shuffle(pieces)

    def step(v):
        for piece in pieces:
            if piece == "add_any":
                v = v + ad.add_jaxvals_p.bind(v[0], spare)  # `add`, `mul`: no literal here
            else:
                v = jnp.arctan2(v, spare) * jnp.arctan(v)
        return v

    expected = {"add_any": [float(spare)]}
    if "atan" in pieces:
        expected |= {"atan": [], "atan2": [float(spare)]}
    return step, expected
