"""Drawn inputs for phase 1's count_traces and make_power_jit tests: one drawn stream of calls
per situation the contract distinguishes, every run, whatever the seed, and drawn signatures.

What enters jit's cache key for g(x, n) is x's shape, its dtype once 64-bit NumPy types are
canonicalized to 32 bits, whether it is weakly typed (a Python int or float, not a bool), and the
static n, compared by == (two ints with one hash are two keys; two equal ints that are not one
object are one key); x's values never do, and the
cache keeps every key it has seen, not only the last. Each situation below is a stream built so
that one of those facts decides its count; the shapes, the dtypes, the values, the order and the
lengths inside it are drawn. A stream mixes the whole
domain (arrays, NumPy scalars and Python scalars of every dtype, several n), and two streams
pair the same arguments with the same static values in two ways (pairings).
"""

from __future__ import annotations

import random
import sys

import numpy as np

from katas.phase1.strata import NARROW, SIXTEEN_BIT_FLOATS, TWINS, Call


def _shape(rng: random.Random, ranks: tuple[int, int] = (0, 3)) -> tuple[int, ...]:
    return tuple(rng.randint(1, 4) for _ in range(rng.randint(*ranks)))


def _array(rng: random.Random, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of that shape and dtype with drawn values (0 and 1 for bools), in a drawn
    memory layout (LAYOUTS) a third of the time."""
    values = np.asarray(np.random.default_rng(rng.randrange(2**32)).integers(0, 5, size=shape))
    array = (values % 2 if dtype == np.bool_ else values).astype(dtype)
    return _laid_out(rng, array, rng.choice(LAYOUTS)) if rng.random() < 1 / 3 else array


# how a NumPy array of a given shape may sit in memory: its own C-ordered buffer, Fortran
# order, or a view (a transpose, every other element of a larger buffer, a reversed buffer)
LAYOUTS = ("C order", "Fortran order", "transposed view", "strided view", "reversed view")


def _laid_out(rng: random.Random, array: np.ndarray, layout: str) -> np.ndarray:
    """array's shape, dtype and values in that layout: a view or a copy whose strides differ
    (not C-contiguous once two axes are longer than 1, or one axis for the views)."""
    if array.ndim == 0 or layout == "C order":
        return np.array(array, order="C")  # np.ascontiguousarray would make a 0-d array 1-d
    if layout == "Fortran order":
        return np.asfortranarray(array)
    if layout == "transposed view":
        return np.ascontiguousarray(array.T).T
    axis = rng.choice([a for a in range(array.ndim) if array.shape[a] > 1] or [0])
    if layout == "strided view":
        wide = np.repeat(array, 2, axis=axis)  # every other element along axis is array
        every_other = [slice(None)] * array.ndim
        every_other[axis] = slice(None, None, 2)
        return wide[tuple(every_other)]
    flipped = np.ascontiguousarray(np.flip(array, axis))
    return np.flip(flipped, axis)  # a view of the reversed buffer, negative stride on axis


def _scalar(rng: random.Random, dtype: np.dtype):
    """A NumPy scalar of that dtype (np.float32(3.0), np.bool_(True), ...)."""
    return dtype.type(rng.randint(0, 1) if dtype == np.bool_ else rng.randint(0, 9))


def _with_repeat(rng: random.Random, xs: list) -> list:
    """xs (distinct keys) shuffled, a few of them again, and then one more that is not the call
    just before it: a cache that remembers only the last key counts that one again, jit does
    not."""
    order = list(range(len(xs)))
    rng.shuffle(order)
    order += rng.sample(order, rng.randint(0, len(xs) - 1))
    order.append(rng.choice([i for i in range(len(xs)) if i != order[-1]]))
    return [xs[i] for i in order]


def _calls(xs: list, n: int) -> list[Call]:
    return [(x, n) for x in xs]


def values_only(rng: random.Random) -> list[Call]:
    """One x of drawn kind, shape and dtype, called 2 to 5 times with other values: 1 trace."""
    kind = rng.choice(("array", "numpy scalar", "python float", "python int"))
    count, n = rng.randint(2, 5), rng.randint(0, 9)
    if kind == "python float":
        return [(v / 4, n) for v in rng.sample(range(-40, 40), count)]
    if kind == "python int":
        return [(v, n) for v in rng.sample(range(-100, 100), count)]
    dtype = rng.choice(NARROW + tuple(TWINS))
    if kind == "numpy scalar":
        return [(_scalar(rng, dtype), n) for _ in range(count)]
    shape = _shape(rng)
    return [(_array(rng, shape, dtype), n) for _ in range(count)]


def shapes(rng: random.Random) -> list[Call]:
    """One dtype, shapes of the same size arranged differently ((a, b), (b, a), (a*b,), and a
    size-0 or rank-0 one sometimes): the shape enters the key, not the size."""
    a, b = rng.sample(range(2, 6), 2)
    arranged = [(a, b), (b, a), (a * b,), (1, a * b), (a, 1, b)]
    picked = rng.sample(arranged, rng.randint(3, 5))
    if rng.random() < 0.5:
        picked.append(rng.choice([(), (0,), (a, 0)]))
    dtype = rng.choice(NARROW + tuple(TWINS))
    xs = [_array(rng, shape, dtype) for shape in picked]
    return _calls(_with_repeat(rng, xs), rng.randint(0, 9))


def unit_axes(rng: random.Random) -> list[Call]:
    """One dtype, shapes that differ only by axes of size 1: a rank-0 x (a NumPy scalar or a
    0-d array), (1,), and 1 to 3 of (1, 1), (k,), (1, k), (k, 1), (1, k, 1): each its own key
    (jit keys the shape as it is, not padded to a rank or squeezed)."""
    dtype = rng.choice(NARROW + tuple(TWINS))
    k = rng.randint(2, 5)
    scalar = rng.choice((_scalar(rng, dtype), _array(rng, (), dtype)))
    picked = rng.sample([(1, 1), (k,), (1, k), (k, 1), (1, k, 1)], rng.randint(1, 3))
    xs = [scalar, *(_array(rng, shape, dtype) for shape in [(1,), *picked])]
    return _calls(_with_repeat(rng, xs), rng.randint(0, 9))


def layouts(rng: random.Random) -> list[Call]:
    """One dtype, one or two shapes, each given C-ordered and in one to three other memory
    layouts (LAYOUTS; for a shape with one axis longer than 1, the views), in a drawn order: one
    key per shape, as the key holds x's abstract value (shape, dtype, weak type), not how its
    buffer is laid out."""
    dtype = rng.choice(NARROW + tuple(TWINS))
    picked = rng.sample([(2, 3), (3, 2), (4,), (2, 2, 3), (3, 1, 4), (5,)], rng.randint(1, 2))
    xs = []
    for shape in picked:
        array = _array(rng, shape, dtype)
        moving = LAYOUTS[1:] if sum(size > 1 for size in shape) > 1 else LAYOUTS[3:]
        others = rng.sample(moving, rng.randint(1, len(moving) - 1 or 1))
        xs += [_laid_out(rng, array, layout) for layout in ("C order", *others)]
    rng.shuffle(xs)
    return _calls(xs, rng.randint(0, 9))


def narrow_dtypes(rng: random.Random) -> list[Call]:
    """One shape, both 16-bit floats and 1 to 3 more dtypes that stay as they are: each its own
    key (no dtype is widened in 32-bit mode)."""
    shape = _shape(rng)
    others = [d for d in NARROW if d not in SIXTEEN_BIT_FLOATS]
    dtypes = [*SIXTEEN_BIT_FLOATS, *rng.sample(others, rng.randint(1, 3))]
    xs = [_array(rng, shape, d) for d in dtypes]
    return _calls(_with_repeat(rng, xs), rng.randint(0, 9))


def wide_arrays(rng: random.Random) -> list[Call]:
    """One shape, each of the four 64-bit NumPy types (uint64 and complex128 too) next to its
    32-bit twin, in a drawn order: a 64-bit array is looked up as its twin."""
    shape = _shape(rng, (1, 3))
    xs = [_array(rng, shape, d) for w in TWINS for d in (w, TWINS[w])]
    rng.shuffle(xs)
    return _calls(xs, rng.randint(0, 9))


def wide_scalars(rng: random.Random) -> list[Call]:
    """Python floats and np.float64 scalars (a subclass of Python's float) only: np.float64 is
    looked up as float32, not weak, so the two kinds are two keys."""
    xs: list = [v / 4 for v in rng.sample(range(-40, 40), rng.randint(1, 3))]
    xs += [np.float64(rng.randint(-40, 40) / 4) for _ in range(rng.randint(1, 3))]
    rng.shuffle(xs)
    return _calls(xs, rng.randint(0, 9))


def weak_scalars(rng: random.Random) -> list[Call]:
    """Two or more Python floats and ints (weak, other values each) among a NumPy scalar and a
    0-d array of their 32-bit dtype and a 64-bit NumPy scalar (not weak, and one key among the
    three: a scalar and a 0-d array are alike, a 64-bit one is looked up as 32-bit)."""
    xs: list = []
    for python, narrow, wide in ((float, np.float32, np.float64), (int, np.int32, np.int64)):
        xs += [python(v) for v in rng.sample(range(-9, 10), rng.randint(2, 3))]
        xs += [narrow(rng.randint(-9, 9)), np.array(rng.randint(-9, 9), narrow)]
        xs.append(wide(rng.randint(-9, 9)))
    rng.shuffle(xs)
    return _calls(xs, rng.randint(0, 9))


def bools(rng: random.Random) -> list[Call]:
    """Python bools next to np.bool_ scalars and 0-d bool arrays, no Python int (one key: a
    Python bool is bool[], not weak), and sometimes a bool array (a key of its own)."""
    xs: list = [rng.random() < 0.5 for _ in range(rng.randint(1, 3))]
    xs.append(rng.choice((np.bool_(rng.random() < 0.5), _array(rng, (), np.dtype(np.bool_)))))
    if rng.random() < 0.5:
        xs.append(_array(rng, _shape(rng, (1, 2)), np.dtype(np.bool_)))
    rng.shuffle(xs)
    return _calls(xs, rng.randint(0, 9))


def bools_and_ints(rng: random.Random) -> list[Call]:
    """Python bools next to Python ints (other values each), no NumPy bool: two keys, as a bool
    is bool[] and an int a weak int32[]. Kept apart from the NumPy bools above: with a Python int
    and a NumPy bool both present, taking a bool for an int swaps two keys and counts the same."""
    xs: list = [rng.random() < 0.5 for _ in range(rng.randint(1, 3))]
    xs += rng.sample(range(-9, 10), rng.randint(1, 3))
    rng.shuffle(xs)
    return _calls(xs, rng.randint(0, 9))


def _hash_twins(rng: random.Random) -> list[int]:
    """Two different Python ints with one hash: -1 and -2 (CPython gives both the hash -2), or
    m and m + p for a drawn m of either sign, p being the modulus CPython reduces an int's hash
    by. jit keeps a static value by ==, not by its hash: they are two keys."""
    modulus = sys.hash_info.modulus
    m = rng.randint(0, 9) * rng.choice((1, -1))
    twins = rng.choice(([-1, -2], [m, m + modulus if m >= 0 else m - modulus]))
    assert hash(twins[0]) == hash(twins[1]) and twins[0] != twins[1]
    return twins


def _fresh_int(n: int) -> int:
    """An int equal to n built anew: another object unless CPython caches it (-5 to 256)."""
    return int(str(n))


def static_values(rng: random.Random) -> list[Call]:
    """One x, 4 to 9 calls whose static n repeats, not always in a row: one key per distinct n.
    Two of the n are different ints with one hash (_hash_twins), one is beyond CPython's cache
    of small ints and comes twice or more, the others are small. Every call's n is an int built
    anew: equal n are equal, not the same object (jit compares them by ==, not by identity)."""
    x = _array(rng, _shape(rng), rng.choice(NARROW))
    twins = _hash_twins(rng)
    big = rng.choice((1, -1)) * rng.randint(257, 10**6)
    small = rng.sample([n for n in range(-2, 10) if n not in twins], rng.randint(0, 2))
    stream = _with_repeat(rng, [*twins, big, *small])
    if stream.count(big) < 2:  # the big n again, somewhere after its first call
        stream.insert(rng.randint(stream.index(big) + 1, len(stream)), big)
    return [(x, _fresh_int(n)) for n in stream]


def mixed(rng: random.Random) -> list[Call]:
    """6 to 12 calls from 4 to 6 drawn arguments of every kind (arrays and NumPy scalars of any
    dtype, Python bools, ints and floats), each with n drawn from two values."""
    pool: list = []
    for _ in range(rng.randint(4, 6)):
        kind = rng.choice(("array", "numpy scalar", "python"))
        dtype = rng.choice(NARROW + tuple(TWINS))
        if kind == "array":
            pool.append(_array(rng, _shape(rng, (0, 2)), dtype))
        elif kind == "numpy scalar":
            pool.append(_scalar(rng, dtype))
        else:
            pool.append(rng.choice((rng.random() < 0.5, rng.randint(-9, 9), rng.random() * 8)))
    ns = rng.sample(range(0, 5), 2)
    return [(rng.choice(pool), rng.choice(ns)) for _ in range(rng.randint(6, 12))]


SITUATIONS = {
    "new values, one shape and dtype": values_only,
    "shapes of one size, arranged differently": shapes,
    "shapes that differ only by axes of size 1": unit_axes,
    "arrays of one shape in other memory layouts": layouts,
    "16-bit floats among other narrow dtypes": narrow_dtypes,
    "64-bit NumPy arrays next to their 32-bit twins": wide_arrays,
    "Python floats and np.float64 scalars": wide_scalars,
    "Python ints and floats among NumPy scalars and 0-d arrays": weak_scalars,
    "Python bools among NumPy bools": bools,
    "Python bools next to Python ints": bools_and_ints,
    "static values repeated": static_values,
    "every kind of argument, two static values": mixed,
}


# make_power_jit's f: names a learner may expect for its static parameter, and for x
N_NAMES = ("n", "k", "p", "power", "exponent", "times", "degree", "count")
X_NAMES = ("x", "a", "base", "value", "arr")

# names f itself may have (its programs are named after it, jit_<name>)
F_NAMES = ("power", "pow_n", "raise_to", "nth_power", "repeated_product", "times_itself", "cube")

# a spelling of f's signature: x's name, n's name, the parameter list
Spelling = tuple[str, str, str]


def _defaulted(names: list[str]) -> str:
    return ", ".join(f"{name}=None" for name in names)


def power_spellings(rng: random.Random) -> list[Spelling]:
    """Two signatures for f(x, n), names drawn: n positional-only (jit refuses a static_argnames
    entry for it), then n called otherwise than "n" and followed by defaulted parameters, one of
    them called "n", keyword-only or not (a guess from the names picks that one)."""
    x, n = rng.choice(X_NAMES), rng.choice(N_NAMES)
    extras = rng.sample([m for m in N_NAMES if m != n], rng.randint(0, 2))
    only = f"{x}, {n}, /" + "".join(f", {m}=None" for m in extras)
    x_other, n_other = rng.choice(X_NAMES), rng.choice(N_NAMES[1:])
    extras = ["n", *rng.sample([m for m in N_NAMES[1:] if m != n_other], rng.randint(0, 1))]
    rng.shuffle(extras)
    star = "*, " if rng.random() < 0.5 else ""
    named = f"{x_other}, {n_other}, {star}{_defaulted(extras)}"
    return [(x, n, only), (x_other, n_other, named)]


def power_names(rng: random.Random) -> list[str]:
    """Three names drawn for f, all different: "power" (the contract's example) or others."""
    return rng.sample(F_NAMES, 3)


def pairings(rng: random.Random) -> tuple[list[Call], list[Call]]:
    """Two streams over the same 2 or 3 arguments (one dtype, shapes apart: one key each) and
    the same 2 or 3 static values: one pairs each argument with some of the values and each
    value with some argument (as few pairs as that takes), the other calls every argument with
    every value. Their arguments and values are alike, their counts differ: the key is the pair
    (x, n), so a count made from the arguments and the values taken apart is wrong on one."""
    dtype = rng.choice(NARROW + tuple(TWINS))
    shapes = rng.sample(
        [(), (2,), (3,), (4,), (2, 3), (3, 2), (1, 4), (2, 1, 2)], rng.randint(2, 3)
    )
    ns = rng.sample(range(-2, 10), rng.randint(2, 3))
    cover = []
    for i in range(max(len(shapes), len(ns))):
        cover.append((_array(rng, shapes[i % len(shapes)], dtype), ns[i % len(ns)]))
    cross = [(_array(rng, shape, dtype), n) for shape in shapes for n in ns]
    return _with_repeat(rng, cover), _with_repeat(rng, cross)


def count_traces_strata(rng: random.Random) -> dict[str, list[Call]]:
    """A stream of calls g(x, n) per situation (see the module docstring), the two pairings of
    arguments with static values, and the empty stream."""
    streams = {name: draw(rng) for name, draw in SITUATIONS.items()}
    cover, cross = pairings(rng)
    return {
        **streams,
        "arguments and static values, a few of their pairs": cover,
        "the same arguments and static values, every pair": cross,
        "no calls": [],
    }


def describe(x: object) -> str:
    """How a call's x reads in a failure message: its kind, dtype and shape, not its values."""
    if type(x) in (bool, int, float):
        return f"{x!r} (Python {type(x).__name__})"
    if isinstance(x, np.generic):
        return f"np.{x.dtype.name}({x.item()!r})"
    array = np.asarray(x)
    return f"{array.dtype.name}{list(array.shape)} array"
