"""Stratified draws for phase 7's two predict tasks: one drawn case per situation the contract
allows, every run, whatever the seed.

Independent random cases meet a situation only by chance (a loop of 0 trips with a loop in its
body, a remainder left by an unroll around a nested loop, a float64 array next to a float32 one);
here each situation is a stratum and only the values inside it are drawn: the kinds, trip counts,
unrolls, steps, wraps and nested loops of a loop program, and for a calling pattern the pair of
calls that differ in exactly one respect of jit's cache key (the rest of the call drawn).
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np

from katas.phase7.predict_programs import Call, Loop, LoopProgram

# ---- loop programs ------------------------------------------------------------------------------

_KEPT = ("fori", "fori_traced", "while", "scan")  # loop primitives that stay loops at >= 2 trips


def _step(rng: random.Random) -> str:
    return rng.choice(("affine", "tanh"))


def _kept(rng: random.Random) -> Loop:
    """A loop XLA keeps: a loop primitive of 2 or 3 trips, not unrolled."""
    return Loop(rng.choice(_KEPT), rng.randint(2, 3), step=_step(rng))


def _body(rng: random.Random, nested: bool) -> tuple[Loop, ...]:
    return (_kept(rng),) if nested else ()


def _unrolled(rng: random.Random, full: int, remainder: bool, nested: bool) -> Loop:
    """A fori or scan whose unroll u leaves `full` trips of u steps, then 1 to u - 1 more steps
    when `remainder` (u >= 2)."""
    unroll = rng.randint(2, 3)
    rest = rng.randint(1, unroll - 1) if remainder else 0
    kind = rng.choice(("fori", "scan"))
    return Loop(kind, unroll * full + rest, unroll, _step(rng), _body(rng, nested))


def _short(rng: random.Random, kind: str, trips: int, nested: bool) -> Loop:
    unroll = rng.choice((1, 2, True)) if kind in ("fori", "scan") else 1
    return Loop(kind, trips, unroll, _step(rng), _body(rng, nested))


def _grad_tail(rng: random.Random) -> Loop:
    """A tanh step that XLA does not keep as a loop: unrolled, a Python for, or one trip."""
    choice = rng.choice(("unroll_true", "python_for", "one_trip", "map_of_one"))
    if choice == "unroll_true":
        return Loop(rng.choice(("fori", "scan")), rng.randint(2, 4), True, "tanh")
    if choice == "python_for":
        return Loop("python_for", rng.randint(1, 3), step="tanh")
    if choice == "one_trip":
        return Loop(rng.choice(("fori", "scan")), 1, step="tanh")
    return Loop("map", 1, step="tanh")


def _situations(rng: random.Random) -> dict[str, Loop | tuple[Loop, ...]]:
    """Every situation outside grad, as the loop (or loops) that meet it."""
    return {
        "static fori/scan of 0 trips, a loop in its body": _short(
            rng, rng.choice(("fori", "scan")), 0, True
        ),
        "static fori/scan of 1 trip, a loop in its body": _short(
            rng, rng.choice(("fori", "scan")), 1, True
        ),
        "unroll leaving >= 2 trips and a remainder, a loop in the body": _unrolled(
            rng, 2, True, True
        ),
        "unroll leaving >= 2 trips and no remainder": _unrolled(
            rng, rng.randint(2, 3), False, False
        ),
        "unroll leaving 1 trip and a remainder, a loop in the body": _unrolled(rng, 1, True, True),
        "unroll leaving 1 trip and a remainder, no body": _unrolled(rng, 1, True, False),
        "unroll larger than the trips (no full trip of u steps), a loop in the body": Loop(
            rng.choice(("fori", "scan")),
            (trips := rng.randint(1, 3)),
            trips + rng.randint(1, 2),
            _step(rng),
            _body(rng, True),
        ),
        "unroll=True over >= 2 trips, a loop in the body": Loop(
            rng.choice(("fori", "scan")), rng.randint(2, 3), True, _step(rng), _body(rng, True)
        ),
        "while_loop of 0 trips, a loop in its body": _short(rng, "while", 0, True),
        "while_loop of 1 trip": _short(rng, "while", 1, rng.random() < 0.5),
        "while_loop of >= 2 trips, a loop in its body": _short(
            rng, "while", rng.randint(2, 4), True
        ),
        "lax.map of 1 row, a loop in its body": _short(rng, "map", 1, True),
        "lax.map of >= 2 rows": _short(rng, "map", rng.randint(2, 3), rng.random() < 0.5),
        "traced-bound fori_loop, n = 0, a loop in its body": _short(rng, "fori_traced", 0, True),
        "traced-bound fori_loop, n = 1": _short(rng, "fori_traced", 1, False),
        "Python for of 0 or 1 steps with a loop in its body, then cumsum": (
            _short(rng, "python_for", rng.randint(0, 1), True),
            Loop("cumsum", 0),
        ),
        "Python for of >= 2 steps with a loop in its body": _short(
            rng, "python_for", rng.randint(2, 3), True
        ),
    }


def loop_strata(rng: random.Random) -> dict[str, LoopProgram]:
    """One drawn program per situation; the wraps none, vmap and cond spread over them, and
    three grad situations (an affine loop before a tanh step kept or not kept as a loop, and a
    tanh loop before an affine one)."""
    situations = _situations(rng)
    wraps = [("none", "vmap", "cond")[k % 3] for k in range(len(situations))]
    rng.shuffle(wraps)
    programs = {
        name: LoopProgram(loops if isinstance(loops, tuple) else (loops,), wrap)
        for (name, loops), wrap in zip(situations.items(), wraps, strict=True)
    }
    affine = Loop(rng.choice(("fori", "scan")), rng.randint(2, 4), step="affine")
    tanh = Loop(rng.choice(("fori", "scan", "map")), rng.randint(2, 4), step="tanh")
    programs["grad: an affine loop, then a tanh step that is no loop"] = LoopProgram(
        (affine, _grad_tail(rng)), "grad"
    )
    programs["grad: an affine loop, then a tanh loop"] = LoopProgram((affine, tanh), "grad")
    programs["grad: a tanh loop, then an affine loop"] = LoopProgram((tanh, affine), "grad")
    return programs


# ---- calling patterns ---------------------------------------------------------------------------


def _array(rng: random.Random, dtype, shape=None) -> np.ndarray:
    shape = rng.choice(((3,), (4,), (2, 3))) if shape is None else shape
    return np.full(shape, rng.randint(1, 3), dtype)


_ONE_SIZE = (  # shapes grouped by element count, 0-d and 1-element arrays included
    ((), (1,), (1, 1)),
    ((4,), (2, 2), (1, 4), (4, 1)),
    ((6,), (2, 3), (3, 2), (1, 6)),
    ((8,), (2, 4), (4, 2), (2, 2, 2)),
)


def _shapes_of_one_size(rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 arrays whose shapes differ and whose sizes agree."""
    first, second = rng.sample(rng.choice(_ONE_SIZE), 2)
    return _array(rng, np.float32, first), _array(rng, np.float32, second)


def _scalar_and_0d(rng: random.Random, value: float) -> tuple[np.generic, np.ndarray]:
    """A NumPy scalar and a 0-d NumPy array that JAX reads as one type (float64 and int64
    arrive as float32 and int32), drawn in either dtype each."""
    kind = rng.choice(((np.float32, np.float64), (np.int32, np.int64)))
    scalar = rng.choice(kind)(value)
    return scalar, np.array(value, rng.choice(kind))


def _x_pairs(rng: random.Random) -> dict[str, tuple[object, object]]:
    shape = rng.choice(((3,), (4,), (2, 3)))
    value = float(rng.randint(1, 3))
    return {
        "x: float32 array vs float64 array": (
            _array(rng, np.float32, shape),
            _array(rng, np.float64, shape),
        ),
        "x: float32 array vs float16 array": (
            _array(rng, np.float32, shape),
            _array(rng, np.float16, shape),
        ),
        "x: two shapes of one dtype": (
            _array(rng, np.float32, (3,)),
            _array(rng, np.float32, rng.choice(((4,), (2, 3)))),
        ),
        "x: np.float32 scalar vs np.float64 scalar": (np.float32(value), np.float64(value)),
        "x: Python float vs np.float32 scalar": (value, np.float32(value)),
        "x: Python int vs Python bool": (int(value), True),
        "x: Python int vs np.int32 scalar": (int(value), np.int32(value)),
        # one key, two spellings: a NumPy scalar and a 0-d NumPy array are both a strong
        # scalar of their (canonical, 32-bit) dtype
        "x: a NumPy scalar vs a 0-d NumPy array": _scalar_and_0d(rng, value),
        # two keys, one value: a Python scalar is weak, a 0-d array of its dtype is not
        "x: a Python scalar vs a 0-d NumPy array": rng.choice(
            (
                (value, np.array(value, np.float32)),
                (int(value), np.array(int(value), np.int32)),
            )
        ),
        # two keys, one size: the key holds the shape, not the element count
        "x: two shapes of one size": _shapes_of_one_size(rng),
        # a Python scalar is traced like an array (weak-typed), not baked in like a static value
        "x: two values of a Python float or int": rng.choice(
            ((value, value + 1.0), (int(value), int(value) + 1))
        ),
    }


def _n_pairs(rng: random.Random) -> dict[str, tuple[bool, object, object]]:
    """(static, first n, second n)."""
    one = rng.choice((0, 1))
    k = rng.randint(1, 3)
    return {
        "static n: int vs the equal bool": (True, one, bool(one)),
        "static n: int vs the equal float": (True, k, float(k)),
        "traced n: int vs float": (False, k, float(rng.randint(1, 3))),
        "traced n: int vs bool": (False, k, rng.choice((True, False))),
    }


def _base(rng: random.Random) -> Call:
    return Call(
        function=rng.choice(("scale", "shift")),
        static=rng.random() < 0.5,
        x=_array(rng, rng.choice((np.float32, np.int32))),
        n=rng.choice((1, 2, 2.0, True)),
    )


def _pairs(rng: random.Random) -> dict[str, tuple[Call, Call]]:
    pairs = {}
    for name, (x1, x2) in _x_pairs(rng).items():
        base = _base(rng)
        pairs[name] = (replace(base, x=x1), replace(base, x=x2))
    for name, (static, n1, n2) in _n_pairs(rng).items():
        base = replace(_base(rng), static=static)
        pairs[name] = (replace(base, n=n1), replace(base, n=n2))
    base = _base(rng)
    other = rng.choice((1, 2))
    pairs["device: uncommitted vs committed to device 0"] = (base, replace(base, device=0))
    pairs["device: committed to device 0 vs another"] = (
        replace(base, device=0),
        replace(base, device=other),
    )
    quiet = rng.choice(("trace", "lower"))
    pairs["api: trace or lower, then call"] = (replace(base, api=quiet), base)
    pairs["api: lower and compile by hand, then call"] = (replace(base, api="compile"), base)
    pairs["jit: the shared wrapper vs jax.jit applied again"] = (base, replace(base, jit="new"))
    lam = replace(base, function="lambda", jit="new")
    pairs["lambda: trace or lower vs call"] = (replace(lam, api=quiet), lam)
    bound = Call(function="count_up", x=_array(rng, rng.choice((np.float32, np.int32))))
    k = rng.randint(1, 3)
    pairs["fori_loop bound traced, two values"] = (replace(bound, n=k), replace(bound, n=k + 1))
    return pairs


def call_strata(rng: random.Random) -> dict[str, list[Call]]:
    """One drawn calling pattern per respect of jit's cache key (and per API, wrapper and
    device situation): two calls that differ in exactly that respect, in a drawn order, the
    first sometimes repeated; and, every run, one pair of different keys called A, B, A (the
    cache holds every key it has seen, not only the last)."""
    patterns = {}
    pairs = _pairs(rng)
    for name, (first, second) in pairs.items():
        calls = [first, second] if rng.random() < 0.5 else [second, first]
        if rng.random() < 0.3:
            calls.insert(rng.randint(0, 2), calls[0])
        patterns[name] = calls
    name = rng.choice(_TWO_KEYS)
    first, second = pairs[name] if rng.random() < 0.5 else pairs[name][::-1]
    patterns[f"back to the first key after another ({name})"] = [first, second, first]
    return patterns


_TWO_KEYS = (  # pairs whose two calls always differ in jit's key
    "x: two shapes of one dtype",
    "x: two shapes of one size",
    "x: float32 array vs float16 array",
    "x: a Python scalar vs a 0-d NumPy array",
    "static n: int vs the equal float",
    "device: committed to device 0 vs another",
)
