"""Programs phase 2's lowering tests draw fresh for every run (from a ``random.Random``), each
built so that its answer is known by construction (moved from strata.py, which keeps the
jaxpr-reading tasks' programs and the draws both use).

- dead_code_program: a drawn chain of equations, some dead, with four set pieces in every
  program (a value read twice by one equation, both dead; several results none of which is
  read; dead code inside a live jit; a dead chain four to six links long, spread out).
- closed_over: arrays closed over as NumPy arrays or jax Arrays, of any dtype, 0-d jax Arrays
  and a NumPy array with an axis of size 1 included, and an equal copy of one of them (another
  object, so another const).
- lowering_case: arrays and Python scalars as jit arguments, some of them never read, and
  products computed by a nested jit (a function of the module beside @main).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from katas.phase2.strata import DTYPE_NAMES, F32, drawn_array, drawn_shape

# ------------------------------------------------------------------------------ unused_equations

_UNARY = (jnp.sin, jnp.cos, jnp.exp, jnp.tanh, jnp.negative)


def _pair(a, b):
    return a + b, a * b


def _dead_inside(a):
    return (a * 2.0, a + 1.0)[1]  # the jit's mul is dead inside it, not at the top level


def _ignoring(wrapper: Callable, kept: int) -> Callable:
    """A jit or checkpoint whose body reads only argument `kept` of its operands: the equation
    still reads them all (its body is not top-level code)."""
    return wrapper(lambda *args: args[kept] * 2.0)


@dataclass(frozen=True)
class DeadCodeProgram:
    f: Callable
    dead_steps: list[int]  # the steps (one top-level equation each) nothing live reads
    steps: int


def _steps(rng: random.Random) -> list[tuple[str, int]]:
    """The kinds of the steps, each with its role: 4 to 7 free steps, and five set pieces at
    drawn places (roles 1-3: a value read twice by one equation, both dead; a jit with two
    results, neither read; a live jit with dead code inside; roles 5 and 6: a value read only by
    a live jit (5) or checkpoint (6) whose body ignores that operand, so live; role 4: a dead
    chain of 4 to 6 links, each reading only the one before, spread among the other steps)."""
    kinds = ("unary", "binary", "twice", "pair", "dead inside", "ignoring")
    steps = [(rng.choice(kinds), 0) for _ in range(rng.randint(4, 7))]
    pieces = ([("unary", 1), ("twice", 1)], [("pair", 2)], [("dead inside", 3)])
    ignoring = ([("unary", role), ("ignoring", role)] for role in (5, 6))
    for piece in (*pieces, *ignoring):
        at = rng.randint(0, len(steps))
        steps[at:at] = piece
    at = 0
    for _ in range(rng.randint(4, 6)):
        at = rng.randint(at, len(steps))
        steps.insert(at, (rng.choice(("unary", "twice")), 4))
        at += 1
    return steps


def dead_code_program(rng: random.Random) -> DeadCodeProgram:
    """Steps on f32[3] values (see _steps), each one top-level equation: a unary function, a
    product of two values or of one value with itself, a jit with two results, a jit with dead
    code inside, a jit or checkpoint of 2 to 3 operands whose body reads one (drawn); the
    outputs are 1 to 3 drawn values. Which steps are dead is worked out from the steps
    themselves: a live equation reads every operand it is given."""
    plan: list[tuple[str, list[int], int]] = []  # (kind, values read, first value written)
    free = [0]  # values the free steps and the outputs may read: value 0 is the argument
    count, outputs, twice_of, link, ignored = 1, [], 0, None, {5: 0, 6: 0}
    keeps: dict[int, int] = {}  # step -> the one operand an "ignoring" step's body reads
    wrappers: dict[int, Callable] = {}  # step -> an "ignoring" step's jit or checkpoint
    for kind, role in _steps(rng):
        if role == 1 and kind == "twice":
            read = [twice_of]  # the dead unary's value, and nothing else reads it
        elif kind == "ignoring":
            read = [rng.choice(free) for _ in range(rng.randint(2, 3))]
            kept = rng.randrange(len(read))
            if role in ignored:  # the unary's value, at another place than the body reads
                read[rng.choice([i for i in range(len(read)) if i != kept])] = ignored[role]
            keeps[len(plan)] = kept
            wrappers[len(plan)] = {5: jax.jit, 6: jax.checkpoint}.get(role) or rng.choice(
                (jax.jit, jax.checkpoint)
            )
        elif role == 4:
            read = [rng.choice(free) if link is None else link]  # the chain's link before
        elif kind in ("binary", "pair"):
            read = [rng.choice(free), rng.choice(free)]
        else:
            read = [rng.choice(free)]
        plan.append((kind, read, count))
        written = list(range(count, count + (2 if kind == "pair" else 1)))
        count += len(written)
        if role == 0:
            free += written
        elif role == 1 and kind == "unary":
            twice_of = written[0]
        elif role in ignored and kind == "unary":
            ignored[role] = written[0]
        elif role in (3, 5, 6):
            outputs += written
        elif role == 4:
            link = written[0]
    outputs += rng.sample(free, min(len(free), rng.randint(0, 2)))
    unary = [rng.choice(_UNARY) for _ in plan]

    def f(x):
        values = [x]
        for step, ((kind, read, _), fn) in enumerate(zip(plan, unary, strict=True)):
            if kind == "ignoring":
                body = _ignoring(wrappers[step], keeps[step])
                values.append(body(*(values[i] for i in read)))
            elif kind == "unary":
                values.append(fn(values[read[0]]))
            elif kind == "binary":
                values.append(values[read[0]] * values[read[1]])
            elif kind == "twice":
                values.append(values[read[0]] * values[read[0]])
            elif kind == "pair":
                values.extend(jax.jit(_pair)(values[read[0]], values[read[1]]))
            else:
                values.append(jax.jit(_dead_inside)(values[read[0]]))
        return tuple(values[i] for i in outputs)

    live = set(outputs)
    dead = []
    for step in range(len(plan) - 1, -1, -1):
        kind, read, first = plan[step]
        written = range(first, first + (2 if kind == "pair" else 1))
        if any(v in live for v in written):
            live.update(read)
        else:
            dead.append(step)
    return DeadCodeProgram(f, sorted(dead), len(plan))


# -------------------------------------------------------------------------------- closure_consts


def _with_unit_axis(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    at = rng.randint(0, len(shape))
    return (*shape[:at], 1, *shape[at:])


def closed_over(rng: random.Random) -> list:
    """4 to 6 arrays to close over, in a drawn order: a 0-d jax Array, a bfloat16 jax Array, a
    NumPy array (rank 1 or more: a 0-d one is inlined; one axis of size 1 at a drawn place,
    which the const keeps), up to two more of either kind (the dtypes and shapes drawn), and a
    copy of one of them drawn: another object of the same kind, dtype, shape and values (jax
    keeps one constvar per object, so it is a const of its own)."""
    arrays: list = [
        jax.device_put(drawn_array(rng, rng.choice(DTYPE_NAMES), ())),
        jax.device_put(drawn_array(rng, "bfloat16", drawn_shape(rng))),
        drawn_array(rng, rng.choice(DTYPE_NAMES), _with_unit_axis(rng, drawn_shape(rng))),
    ]
    for _ in range(rng.randint(0, 2)):
        name = rng.choice(DTYPE_NAMES)
        if rng.random() < 0.5:
            arrays.append(drawn_array(rng, name, drawn_shape(rng) or (rng.randint(1, 3),)))
        else:
            arrays.append(jax.device_put(drawn_array(rng, name, drawn_shape(rng))))
    original = rng.choice(arrays)
    values = np.array(original, copy=True)
    arrays.append(values if isinstance(original, np.ndarray) else jax.device_put(values))
    rng.shuffle(arrays)
    return arrays


def uses_all(arrays: list) -> Callable:
    """x + the sum of each array (as float32) times a weight of its own: running the jaxpr with
    the consts in another order gives another value."""

    def f(x):
        total = x
        for weight, array in enumerate(arrays, start=1):
            total = total + jnp.asarray(array).astype(F32).sum() * F32(weight * 10)
        return total

    return f


def uses_and_returns(rng: random.Random, arrays: list) -> Callable:
    """Like uses_all, but each array drawn to be summed, returned as it is (an output, a
    constvar no equation reads), or both, one at least returned only; f returns the total and
    then the returned arrays in a drawn order."""
    roles = [rng.choice(("summed", "returned", "both")) for _ in arrays]
    roles[rng.randrange(len(arrays))] = "returned"
    summed = [a for a, role in zip(arrays, roles, strict=True) if role != "returned"]
    returned = [a for a, role in zip(arrays, roles, strict=True) if role != "summed"]
    rng.shuffle(returned)
    total = uses_all(summed)

    def f(x):
        return (total(x), *returned)

    return f


# ---------------------------------------------------------------------------------- stablehlo_of

# dtypes that a strongly typed 32-bit scalar would widen (a weak Python scalar leaves them be)
_NARROW_NAMES = ("uint8", "uint16", "uint32", "int8", "int16", "bfloat16", "float16")


def _python_scalar(rng: random.Random, kind: str):
    return {"int": rng.randint(-9, 9), "float": rng.randint(-9, 9) / 4, "bool": True}[kind]


def lowering_case(rng: random.Random) -> tuple[Callable, list, list[int]]:
    """f, its arguments and the indices of those it reads: 3 to 6 arguments in a drawn order,
    an array of a dtype a strong 32-bit scalar would widen and a Python int (or float, beside a
    float array) that f reads, one argument f never reads, and up to three more arrays of drawn
    dtypes and shapes or Python scalars (int, float, bool), each read or not. f returns every
    array it reads times every Python scalar it reads, some of the products (one at least,
    drawn) computed by a nested jax.jit, one or two deep: lowered, a function of the module
    beside @main that @main calls."""
    narrow = rng.choice(_NARROW_NAMES)
    scalar = "float" if narrow in ("bfloat16", "float16") and rng.random() < 0.5 else "int"
    args: list = [drawn_array(rng, narrow, drawn_shape(rng)), _python_scalar(rng, scalar)]
    read = [True, True, False]
    args.append(rng.choice((drawn_array(rng, rng.choice(DTYPE_NAMES), drawn_shape(rng)), 2.5, 3)))
    for _ in range(rng.randint(0, 3)):
        if rng.random() < 0.5:
            args.append(drawn_array(rng, rng.choice(DTYPE_NAMES), drawn_shape(rng)))
        else:
            args.append(_python_scalar(rng, rng.choice(("int", "float", "bool"))))
        read.append(rng.random() < 0.5)
    order = rng.sample(range(len(args)), len(args))
    args, read = [args[k] for k in order], [read[k] for k in order]
    reads = [k for k, r in enumerate(read) if r]
    arrays = [k for k in reads if isinstance(args[k], np.ndarray)]
    scalars = [k for k in reads if not isinstance(args[k], np.ndarray)]

    pairs = [(a, s) for a in arrays for s in scalars]
    nested = set(rng.sample(range(len(pairs)), rng.randint(1, len(pairs))))
    multiply = jax.jit(lambda a, s: a * s)
    if rng.random() < 0.5:
        multiply = jax.jit(lambda a, s, inner=multiply: inner(a, s))

    def f(*values):
        return tuple(
            multiply(values[a], values[s]) if k in nested else values[a] * values[s]
            for k, (a, s) in enumerate(pairs)
        )

    return f, args, reads
