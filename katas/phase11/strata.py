"""Stratified draws for phase 11's two predict tasks, checked against XLA:CPU over up to 8 CPU
devices, and for the tiled shapes padded_bytes reads: one drawn case per situation the contract
distinguishes, every run, whatever the seed.

Independent random cases meet a situation only by chance (a mesh whose 'model' axis has one
device, a block of one row, a hidden layer of one unit per device); here each situation is a
stratum and only the values inside it are drawn: the mesh within the situation (any
data x model of at most 8 devices), the sizes (multiples of the mesh axes that split them) and
the dtype. The first stratum is the general one, where most wrong answers already differ.
"""

from __future__ import annotations

import random

import jax.numpy as jnp

from katas.phase11.programs import COLLECTIVE_DTYPES, FIRST_TILES, LATER_TILES, THREE_SIZE_TILES

CPU_DEVICES = 8
_BOTH_UNEQUAL = ((2, 3), (3, 2), (2, 4), (4, 2))
_BOTH = ((2, 2), *_BOTH_UNEQUAL)


def _axis(rng: random.Random) -> int:
    """The size of a mesh axis that splits something, the other axis of one device."""
    return rng.randint(2, CPU_DEVICES)


def _distinct(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return rng.sample(range(low, high + 1), count)


def huge_factor(rng: random.Random) -> int:
    """An odd factor near 2**55: a size scaled by it is past 2**53 (where a float loses
    integers) and a count or byte total past 2**63 (where int64 wraps), while a device's share
    of a size (at most 40 times it) stays below 2**63."""
    return rng.randint(2**55, 2**56) | 1


# ---- predict_layer_flops: relu(x @ w + b), x [m, k] P('data', None), w [k, n] P(None, 'model') --

LayerCase = tuple[int, int, int, tuple[int, int]]


def _layer(mesh: tuple[int, int], rows: int, k: int, cols: int) -> LayerCase:
    return mesh[0] * rows, k, mesh[1] * cols, mesh


def layer_strata(rng: random.Random) -> dict[str, LayerCase]:
    """(m, k, n, (data, model)) per situation XLA:CPU counts as libtpu does (blocks of two or
    more rows and columns, k >= 2): both axes split (data != model, so an answer that swaps
    them differs), one device, rows split over 'data' only, columns split over 'model' only,
    both split with the smallest contraction, k = 2, and both split with the smallest block
    libtpu compiles as a matmul, two rows by two columns (an answer whose matmul needs more than
    two rows or more than two columns differs only there). Block sides and k distinct, so that
    an answer taking one for another differs.

    The smaller dots are left to libtpu (tpu_layer_strata): XLA:CPU counts a block of one row
    or column as a matmul (libtpu as a multiply and a reduce) and rewrites a dot with k = 1 or
    a 1x1 block otherwise (measured: [3,1]x[1,3] on (3, 1) gives 9, not 12; [2,5]x[5,3] on
    (2, 3) gives 11, not 12).
    """
    rows, cols = _distinct(rng, 2, 2, 40)
    row_rows, row_k, row_cols = _distinct(rng, 3, 2, 40)
    col_rows, col_k, col_cols = _distinct(rng, 3, 2, 40)
    short_rows, short_cols = _distinct(rng, 2, 3, 40)
    return {
        "data and model both split, data != model": _layer(
            rng.choice(_BOTH_UNEQUAL), rows, rng.randint(41, 300), cols
        ),
        "one device": _layer((1, 1), *_distinct(rng, 3, 2, 40)),
        "rows over data only": _layer((_axis(rng), 1), row_rows, row_k, row_cols),
        "columns over model only": _layer((1, _axis(rng)), col_rows, col_k, col_cols),
        "both split, k = 2": _layer(rng.choice(_BOTH), short_rows, 2, short_cols),
        "both split, a block of two rows and two columns": _layer(
            rng.choice(_BOTH), 2, rng.randint(3, 300), 2
        ),
    }


TPU_DEVICES = 4  # the compile-only v5e topology the predict tests use


def tpu_layer_strata(rng: random.Random) -> dict[str, LayerCase]:
    """(m, k, n, (data, model)) per situation of the small dots libtpu compiles otherwise than
    a matmul, on meshes of at most TPU_DEVICES devices: one row per device (columns split or
    not), one column per device, a 1x1 block, k = 1 on blocks of two or more rows and columns,
    k = 1 on a single row, and the smallest reduce, k = 2, on a single row or column."""

    def mesh() -> tuple[int, int]:
        return rng.choice(((2, 2), (4, 1), (1, 4), (2, 1), (1, 2), (1, 1)))

    return {
        "one row per device": _layer(mesh(), 1, rng.randint(2, 300), rng.randint(2, 64)),
        "one column per device": _layer(mesh(), rng.randint(2, 64), rng.randint(2, 300), 1),
        "one element per device": _layer(mesh(), 1, rng.randint(2, 300), 1),
        "k = 1": _layer(mesh(), rng.randint(2, 64), 1, rng.randint(2, 64)),
        "k = 1, one row per device": _layer(mesh(), 1, 1, rng.randint(2, 64)),
        "k = 2, one row or one column per device": _layer(
            mesh(), *rng.choice(((1, 2, rng.randint(2, 64)), (rng.randint(2, 64), 2, 1)))
        ),
    }


# ---- predict_allreduce_bytes: relu(x @ w1) @ w2, w1 by columns and w2 by rows over 'model' -----

MlpCase = tuple[int, int, int, object, tuple[int, int]]


def mlp_strata(rng: random.Random) -> dict[str, MlpCase]:
    """(batch, width, hidden, dtype, (data, model)) per situation: both axes split, 'model' of
    3 or more devices, in f32 (every size distinct from the others, so an answer that sums the
    hidden activations, the whole batch, a device's share of the output, bf16, or a ring's
    traffic, equal to the result on 2 devices, differs); a 'model' axis of one device
    (nothing to sum), on one device and with rows over 'data'; columns over 'model' only; both
    split with one hidden unit per device; both split with one row of x per device. f32 and f16
    only: XLA:CPU sums bf16 partials in f32 (XLA:TPU in bf16: the libtpu test)."""

    def case(mesh, rows: int, width: int, units: int, dtype) -> MlpCase:
        return mesh[0] * rows, width, mesh[1] * units, dtype, mesh

    def dtype() -> object:
        return rng.choice((jnp.float32, jnp.float16))

    rows, width, units = _distinct(rng, 3, 2, 24)
    return {
        "data and model both split, model of 3 or more, f32": case(
            rng.choice(((2, 3), (2, 4))), rows, rng.randint(25, 200), units, jnp.float32
        ),
        "model of one device, rows over data": case(
            (_axis(rng), 1), rng.randint(1, 24), rng.randint(1, 200), rng.randint(1, 40), dtype()
        ),
        "one device": case(
            (1, 1), rng.randint(1, 24), rng.randint(1, 200), rng.randint(1, 40), dtype()
        ),
        "columns over model only, f16": case(
            (1, _axis(rng)),
            rng.randint(2, 24),
            rng.randint(1, 200),
            rng.randint(1, 40),
            jnp.float16,
        ),
        "both split, one hidden unit per device": case(
            rng.choice(_BOTH), rng.randint(2, 24), rng.randint(2, 200), 1, dtype()
        ),
        "both split, one row per device": case(
            rng.choice(_BOTH), 1, rng.randint(2, 200), rng.randint(2, 40), dtype()
        ),
    }


# ---- padded_bytes: array shapes under TPU-style tiled layouts --------------------------------


def _shape(
    rng: random.Random,
    dtype: str,
    rank: int,
    tile: str,
    ones: tuple[int, ...] = (),
    sizes: tuple[tuple[int, int], ...] = (),
) -> str:
    """A shape text of drawn sizes in a drawn layout order; `ones`: places in minor-to-major
    order (0: the most minor dimension) whose dimension is 1; `sizes`: (place, size) pairs
    setting other places."""
    order = list(range(rank))
    rng.shuffle(order)
    dims = [rng.randint(2 if ones else 1, 300) for _ in range(rank)]
    for place, size in (*((p, 1) for p in ones), *sizes):
        dims[order[place]] = size
    if dtype in ("s4", "u4") and not tile:
        dims[-1] += dims[-1] % 2  # whole bytes
    layout = ",".join(str(d) for d in order) + (f":{tile}" if tile else "")
    return f"{dtype}[{','.join(map(str, dims))}]{{{layout}}}"


def _unit_dimensions(rng: random.Random) -> dict[str, str]:
    """A dimension of 1 under each size of a first tile (the tile pads it like any other) and
    one outside it (nothing pads it), at a drawn rank, tile and dtype."""
    one_d = rng.choice([t for t in FIRST_TILES if "," not in t])
    two_d = [rng.choice([t for t in FIRST_TILES if "," in t]) for _ in range(3)]
    places = {
        f"first tile {one_d}, the most minor dimension 1": (one_d, rng.randint(1, 4), (0,)),
        f"first tile {two_d[0]}, the most minor dimension 1": (two_d[0], rng.randint(2, 4), (0,)),
        f"first tile {two_d[1]}, the second most minor 1": (two_d[1], rng.randint(2, 4), (1,)),
        f"first tile {two_d[2]}, both tiled dimensions 1": (two_d[2], rng.randint(2, 4), (0, 1)),
        f"first tile {one_d}, a dimension of 1 the tile leaves": (one_d, rng.randint(2, 4), (-1,)),
    }
    return {
        f"{dtype}, rank {rank}, {place}": _shape(
            rng, dtype, rank, tile + rng.choice(LATER_TILES), ones
        )
        for (place, (tile, rank, ones)), dtype in zip(
            places.items(), rng.sample(COLLECTIVE_DTYPES, len(places)), strict=True
        )
    }


def _corner_tiles(rng: random.Random) -> dict[str, str]:
    """A first tile of three sizes (it pads the three most minor dimensions; the third one's
    size drawn off its multiples), and an empty dimension (0 elements, 0 bytes: rounding 0 up
    to a multiple of a tile size leaves 0) under a first tile and outside it."""
    three = rng.choice(THREE_SIZE_TILES)
    step = int(three[2:].split(",")[0])
    rank = rng.randint(3, 4)
    third = rng.randint(0, 40) * step + rng.randint(1, step - 1)
    two_d = rng.choice([t for t in FIRST_TILES if "," in t])
    one_d = rng.choice([t for t in FIRST_TILES if "," not in t])
    cases = {
        f"first tile {three}, rank {rank}": (three, rank, ((2, third),)),
        f"first tile {two_d}, an empty tiled dimension": (two_d, 2, ((rng.randint(0, 1), 0),)),
        f"first tile {one_d}, an empty dimension the tile leaves": (one_d, 3, ((2, 0),)),
    }
    return {
        f"{dtype}, {place}": _shape(rng, dtype, rank, tile + rng.choice(LATER_TILES), (), sizes)
        for (place, (tile, rank, sizes)), dtype in zip(
            cases.items(), rng.sample(COLLECTIVE_DTYPES, len(cases)), strict=True
        )
    }


def _past_float(rng: random.Random) -> dict[str, str]:
    """A tiled most minor dimension past 2**53 (where a float stops holding every integer): q
    whole tiles, q in [2**52, 2**53), and a remainder of under half a tile; XLA's parser takes
    dimensions up to int64's. Its padded size, q + 1 tiles, is exact in integers; a float
    quotient d / t rounds to q and loses the partial tile."""
    first = rng.choice(FIRST_TILES)
    size = int(first[2:-1].split(",")[-1])  # the tile size along the most minor dimension
    rank = rng.randint(first.count(",") + 1, 3)
    dim = rng.randrange(2**52, 2**53 - 1) * size + rng.randint(1, size // 2 - 1)
    dtype = rng.choice(COLLECTIVE_DTYPES)
    text = _shape(rng, dtype, rank, first + rng.choice(LATER_TILES), (), ((0, dim),))
    return {f"{dtype}, rank {rank}, first tile {first}, a tiled dimension past 2**53": text}


def tiled_strata(rng: random.Random) -> dict[str, str]:
    """Shape texts per situation: every element type (4-bit to 16-byte) under a tiled layout
    (programs.COLLECTIVE_DTYPES, in a drawn order); every 1-D first tile at rank 1 and at rank
    2 to 4 (it covers the most minor dimension only); every 2-D first tile twice, at ranks 2 to
    4; the later tiles that split a first one spread over them (each three times); and one
    untiled shape of each rank 1 to 4, one of them of a 4-bit type. Sizes 1 to 300, any
    minor-to-major order; dimensions of 1 under every size of a first tile and outside it; a
    first tile of three sizes; an empty dimension under a tile and outside it; and one tiled
    shape of two dimensions of 2**31 to 2**34 (XLA's parser takes it; its size in bits, an
    exact integer, is past 2**63, where int64 wraps), and one whose tiled most minor dimension
    is past 2**53 (rounded up to its tile exactly, not through a float)."""
    one_d = [t for t in FIRST_TILES if "," not in t]
    two_d = [t for t in FIRST_TILES if "," in t]
    ranks_2d = [2, 3, 4, rng.randint(2, 4)] * 2
    rng.shuffle(ranks_2d)
    placed = [(t, 1) for t in one_d] + [(t, rng.randint(2, 4)) for t in one_d]
    placed += list(zip(two_d * 2, ranks_2d, strict=True))
    spare = rng.choice(FIRST_TILES)
    placed.append((spare, rng.randint(1 if "," not in spare else 2, 4)))
    dtypes = list(COLLECTIVE_DTYPES)
    rng.shuffle(dtypes)
    later = list(LATER_TILES) * 3
    rng.shuffle(later)
    cases = {
        f"{dtype}, rank {rank}, first tile {first}": _shape(rng, dtype, rank, first + then)
        for dtype, (first, rank), then in zip(dtypes, placed, later, strict=True)
    }
    huge = rng.choice([t for t in FIRST_TILES if "," in t]) + rng.choice(LATER_TILES)
    dims = [rng.randint(2**31, 2**34) for _ in range(2)]
    dtype = rng.choice(COLLECTIVE_DTYPES)
    cases[f"{dtype}, rank 2, past 2**63 bits"] = f"{dtype}[{dims[0]},{dims[1]}]{{1,0:{huge}}}"
    cases |= _past_float(rng)
    cases |= _unit_dimensions(rng)
    cases |= _corner_tiles(rng)
    sub_byte = rng.randrange(4)
    for rank in range(1, 5):
        dtype = rng.choice(("s4", "u4")) if rank - 1 == sub_byte else rng.choice(COLLECTIVE_DTYPES)
        cases[f"{dtype}, rank {rank}, untiled"] = _shape(rng, dtype, rank, "")
    return cases
