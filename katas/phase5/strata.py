"""Stratified draws for phase 5's two predict tasks that draw fresh cases: one drawn case per
situation the contract distinguishes, every run, whatever the seed.

Independent random shapes meet a situation only by chance (a multi-axis output whose leading axis
alone would flip the answer, a batch on the last axis of W under a negative out_axes); here each
situation is a stratum and only the values inside it are drawn.
"""

from __future__ import annotations

import itertools
import math
import random

# ---- cheaper_jacobian_mode: x of rank 1 to 3 (axes 1 to 4), f(x) of rank 0 to 3 (axes 1 to 5) --


def _shape(rng: random.Random, ranks: tuple[int, int], high: int) -> tuple[int, ...]:
    return tuple(rng.randint(1, high) for _ in range(rng.randint(*ranks)))


def _drawn(rng: random.Random, x_ranks, out_ranks, holds, near: bool | None = False):
    """x and f(x) shapes of those ranks, drawn until `holds(x, out)`: one side at least twice
    the other's size, or (`near`) larger by less than twice, or (`near` None) either."""
    while True:
        x, out = _shape(rng, x_ranks, 4), _shape(rng, out_ranks, 5)
        n_in, n_out = math.prod(x), math.prod(out)
        far = max(n_in, n_out) >= 2 * min(n_in, n_out)
        if n_in != n_out and (near is None or far != near) and holds(x, out):
            return x, out


def _wide(x, out):
    return math.prod(x) > math.prod(out)


def _tall(x, out):
    return math.prod(x) < math.prod(out)


F32, BF16 = "float32", "bfloat16"
LAYOUTS = ("w @ x", "x @ w")


def jacobian_mode_strata(rng: random.Random) -> dict[str, tuple[tuple, tuple, str, str, str]]:
    """(x shape, f(x) shape, x dtype, f(x) dtype, layout) per situation: a scalar output; more
    inputs than outputs though every axis of x alone is shorter than f(x); more outputs than
    inputs though every axis of f(x) alone is shorter than x (so an answer reading one axis
    instead of the size flips); the side with more elements having the smaller sum of axes, both
    ways (so an answer adding axes instead of multiplying them flips); one side larger by less
    than twice, both ways (so an answer that weighs a reverse pass against a forward one flips);
    dtypes of another width on either side, one side larger by less than twice (so an answer
    comparing bytes flips). Last, the layout of f's weight matrix (closed over by f): "w @ x", w
    of shape (outputs, inputs), or "x @ w", w of shape (inputs, outputs); the tall situations
    hold both, so neither the rows nor the columns of a matrix f closes over always give the
    output count (only f(x)'s shape does)."""
    strata = {
        "wide: f(x) a scalar": _drawn(rng, (1, 3), (0, 0), lambda x, out: math.prod(x) >= 2),
        "wide: x of rank >= 2, each axis of x shorter than f(x)'s size": _drawn(
            rng, (2, 3), (1, 3), lambda x, out: max(x) < math.prod(out) < math.prod(x)
        ),
        "tall: f(x) of rank >= 2, each axis of f(x) shorter than x's size": _drawn(
            rng, (1, 3), (2, 3), lambda x, out: max(out) < math.prod(x) < math.prod(out)
        ),
        "wide: x's axes sum to less than f(x)'s": _drawn(
            rng, (2, 3), (1, 2), lambda x, out: _wide(x, out) and sum(x) < sum(out), None
        ),
        "tall: f(x)'s axes sum to less than x's": _drawn(
            rng, (1, 3), (2, 3), lambda x, out: _tall(x, out) and sum(out) < sum(x), None
        ),
        "wide: fewer than twice as many inputs as outputs": _drawn(
            rng, (1, 3), (0, 3), _wide, True
        ),
        "tall: fewer than twice as many outputs as inputs": _drawn(
            rng, (1, 3), (0, 3), _tall, True
        ),
    }
    cases = {name: (*shapes, F32, F32) for name, shapes in strata.items()}
    wide, tall = _drawn(rng, (1, 3), (0, 3), _wide, True), _drawn(rng, (1, 3), (1, 3), _tall, True)
    cases["wide: a bfloat16 x, a float32 f(x) of more bytes"] = (*wide, BF16, F32)
    cases["tall: a float32 x, a bfloat16 f(x) of fewer bytes"] = (*tall, F32, BF16)
    tall_names = [name for name in cases if name.startswith("tall")]
    layouts = [*LAYOUTS, *(rng.choice(LAYOUTS) for _ in tall_names[len(LAYOUTS) :])]
    rng.shuffle(layouts)
    drawn = dict(zip(tall_names, layouts, strict=True))
    return {name: (*case, drawn.get(name) or rng.choice(LAYOUTS)) for name, case in cases.items()}


# ---- vmapped_shape: W (m, n), v (n,), the batch on any axis of one or both -----------------------

_IN_AXES = (
    *((w, None) for w in range(3)),
    *((None, v) for v in range(2)),
    *((w, v) for w in range(3) for v in range(2)),
)
_OUT_AXES = (0, 1, -1, -2)


def _mapped_shapes(in_axes, batch: int, m: int, n: int, from_end: bool):
    """W and v shaped for ``in_axes`` (the batch inserted at each mapped axis), and in_axes
    counted from the end when ``from_end``."""
    shapes = [
        tuple(example if axis is None else [*example[:axis], batch, *example[axis:]])
        for example, axis in zip(([m, n], [n]), in_axes, strict=True)
    ]
    if from_end:  # the same axes counted from the end, as vmap also takes them
        in_axes = tuple(
            None if axis is None else axis - len(shape)
            for axis, shape in zip(in_axes, shapes, strict=True)
        )
    return shapes[0], shapes[1], in_axes


def vmap_strata(rng: random.Random) -> dict[str, tuple[tuple, tuple, tuple, int]]:
    """(W shape, v shape, in_axes, out_axes) for every in_axes the contract allows (the batch on
    each axis of W, of v, or of both; None for the shared one) with every out_axes 0, 1, -1 and
    -2 (a rule that holds for a batched W only fails on a shared one); half of them counted from
    the end; the batch (2 to 9), m and n drawn distinct, so that an answer that takes one for
    another differs, and m or n of size 1 in every third case. Then, for every in_axes, the
    batch the size of m, and the size of n (the other drawn distinct), out_axes drawn: sizes
    are any ints, so the batch axis is found by its position, never by its size. And one case
    whose W no host could hold (m and n past 2**24): the shapes alone answer it."""
    cases = {}
    for k, (in_axes, out) in enumerate(itertools.product(_IN_AXES, _OUT_AXES)):
        batch = rng.randint(2, 9)
        m, n = rng.sample([d for d in range(1 if k % 3 else 2, 10) if d != batch], 2)
        if k % 3 == 0:
            m, n = (1, n) if rng.random() < 0.5 else (m, 1)
        w, v, axes = _mapped_shapes(in_axes, batch, m, n, (k + k // 4) % 2 == 1)
        cases[f"in_axes {axes}, out_axes {out}"] = (w, v, axes, out)
    for in_axes, same in itertools.product(_IN_AXES, ("m", "n")):
        batch, other = rng.sample(range(2, 10), 2)
        m, n = (batch, other) if same == "m" else (other, batch)
        w, v, axes = _mapped_shapes(in_axes, batch, m, n, rng.random() < 0.5)
        out = rng.choice(_OUT_AXES)
        cases[f"in_axes {axes}, out_axes {out}, the batch the size of {same}"] = (w, v, axes, out)
    # m and n past 2**24: W alone is past 2**50 bytes, more than any host addresses
    batch, m, n = rng.randint(2, 2**10), rng.randint(2**24, 2**25), rng.randint(2**24, 2**25)
    w, v, axes = _mapped_shapes(rng.choice(_IN_AXES), batch, m, n, rng.random() < 0.5)
    out = rng.choice(_OUT_AXES)
    cases[f"in_axes {axes}, out_axes {out}, shapes past what any memory holds"] = (w, v, axes, out)
    return cases


# (W dtype, v dtype): matvec promotes (int8 with float32 gives float32), or keeps one dtype
_DTYPE_PAIRS = (
    ("float32", "float32"),
    ("int8", "float32"),
    ("int8", "int8"),
    ("bfloat16", "bfloat16"),
    ("float32", "bfloat16"),
    ("bfloat16", "int8"),
)


def matvec_strata(rng: random.Random) -> dict[str, tuple[tuple, tuple, tuple, str, str]]:
    """(W shape, vs shape, in_axes, W dtype, vs dtype) for every in_axes the contract allows,
    half counted from the end; a batch of one and m of one each in a few of them; W and vs of
    one dtype or two (every pair of _DTYPE_PAIRS at least once)."""
    pairs = [_DTYPE_PAIRS[k % len(_DTYPE_PAIRS)] for k in range(len(_IN_AXES))]
    rng.shuffle(pairs)
    cases = {}
    for k, (in_axes, (w_dtype, v_dtype)) in enumerate(zip(_IN_AXES, pairs, strict=True)):
        batch = 1 if k % 4 == 1 else rng.randint(2, 6)
        m = 1 if k % 4 == 2 else rng.randint(2, 6)
        w, v, axes = _mapped_shapes(in_axes, batch, m, rng.randint(1, 6), k % 2 == 1)
        name = f"in_axes {axes}, W {w_dtype}{list(w)}, vs {v_dtype}{list(v)}"
        cases[name] = (w, v, axes, w_dtype, v_dtype)
    return cases


# ---- jacobian_shapes: f(x) of rank 0 to 3, leaves of rank 0 to 3, axes of size 1 or 0 -------


def jacobian_shape_strata(rng: random.Random) -> dict[str, tuple[tuple, dict[str, tuple]]]:
    """(f(params) shape, {name: leaf shape}) per situation: a scalar output with a scalar leaf;
    an output of one element that is not a scalar, (1,); an output with size-1 axes; a rank-3
    output; a leaf with no elements (a size-0 axis, still a key of jacrev's dict); an output
    with no elements; names drawn fresh, leaves of rank 0 to 3 (one with a size-1 axis), sizes
    1 to 5 (0 where a situation says so)."""

    def leaves() -> dict[str, tuple]:
        names = rng.sample(["w", "b", "k", "a", "z", "scale", "bias", "emb"], rng.randint(2, 4))
        shapes = [_shape(rng, (0, 3), 5) for _ in names]
        shapes[0] = (*_shape(rng, (0, 2), 5), 1)
        rng.shuffle(shapes)
        return dict(zip(names, shapes, strict=True))

    scalar = leaves()
    scalar[rng.choice(list(scalar))] = ()
    unit = [*_shape(rng, (0, 2), 5), 1]
    rng.shuffle(unit)
    empty_leaf = leaves()
    name = rng.choice(list(empty_leaf))
    empty_leaf[name] = _with_zero(rng, empty_leaf[name] or (1,))
    return {
        "a scalar output, a scalar leaf": ((), scalar),
        "an output of shape (1,), not a scalar": ((1,), leaves()),
        "an output with a size-1 axis": (tuple(unit), leaves()),
        "an output of rank 3": (_shape(rng, (3, 3), 4), leaves()),
        "a leaf with no elements": (_shape(rng, (0, 2), 4), empty_leaf),
        "an output with no elements": (_with_zero(rng, _shape(rng, (1, 3), 4)), leaves()),
    }


def _with_zero(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with one axis, drawn, of size 0: the array holds no elements."""
    axis = rng.randrange(len(shape))
    return (*shape[:axis], 0, *shape[axis + 1 :])
