"""Programs phase 9's tests draw fresh every run (the fixed banks are in programs.py):
shard_map bodies whose collectives sit in the places a module nests computations (lax.cond
branches, loop bodies and conditions, a branch inside a loop), for collective_census; functions
of many arguments (more than ten, names out of alphabetical order, ranks 0 to 3, boolean and
8-bit types, some never read), and of few arguments whose module nests computations of more
parameters than ENTRY (an argmax's reducer), for device_param_shapes and param_shardings; and
int32 rows whose total (or whose element-wise block sums) are beyond float32's exact integers,
for psum_total (and scatter_sum); for psum_total also 8- and 16-bit integers (and bools) whose
total their own dtype cannot hold, and float rows holding a NaN, an inf or infs of both signs.

Each draw takes a `random.Random` and returns a label, the function and its placed arguments;
nothing is compiled here.
"""

from __future__ import annotations

import inspect
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from katas.phase9.programs import mesh_of, small_ints

# Meshes with an axis "x" of 2, 4 or 8 positions, first, minor or in the middle.
MESHES = (
    (("x", 8),),
    (("x", 2), ("y", 4)),
    (("y", 2), ("x", 4)),
    (("data", 4), ("x", 2)),
    (("z", 2), ("x", 2), ("y", 2)),
)

# ---- collective_census: collectives where the module nests them ---------------------------------


def _ring(block, axis: str):
    n = jax.lax.axis_size(axis)
    return jax.lax.ppermute(block, axis, [(i, (i + 1) % n) for i in range(n)])


def _scattered(block, axis: str):
    part = jax.lax.psum_scatter(block, axis, scatter_dimension=0, tiled=True)
    return jnp.tile(part, (jax.lax.axis_size(axis), 1))


# Each keeps the block's shape (so it fits either branch of a cond and a loop's carry).
PRIMITIVES = {
    "psum": lambda b, axis: jax.lax.psum(b, axis),
    "pmax": lambda b, axis: jax.lax.pmax(b, axis),
    "pmin": lambda b, axis: jax.lax.pmin(b, axis),
    "pmean": lambda b, axis: jax.lax.pmean(b, axis),
    "all_gather": lambda b, axis: jax.lax.all_gather(b, axis).max(0),
    "ppermute": _ring,
    "psum_scatter": _scattered,
    "all_to_all": lambda b, axis: jax.lax.all_to_all(b, axis, 0, 0, tiled=True),
}
PLACES = ("body", "cond", "loop", "cond in loop", "loop condition")


def _placed_body(place: str, first, second):
    """A shard_map body applying `first` (and `second` in the other branch of a cond, or in the
    body of the while loop whose condition applies `first`)."""

    def branch(block):
        return jax.lax.cond(block.sum() > 0, first, second, block)

    def looped(step):
        return lambda block: jax.lax.fori_loop(0, 2, lambda _, c: step(c) * 0.5, block)

    def checked(carry):  # two steps; `first`'s sum (small ints halved) is never below -1e30
        step, block = carry
        return (step < 2) | (first(block).sum() < -1e30)

    def in_condition(block):
        carry = (jnp.int32(0), block)
        return jax.lax.while_loop(checked, lambda c: (c[0] + 1, second(c[1]) * 0.5), carry)[1]

    return {
        "body": first,
        "cond": branch,
        "loop": looped(first),
        "cond in loop": looped(branch),
        "loop condition": in_condition,
    }[place]


def census_program(rng: random.Random, place: str, first: str, second: str):
    """(label, function, (x,)): a shard_map over "x" of a drawn mesh whose body applies the
    collectives `first` and `second` (PRIMITIVES) at `place` (PLACES; `second` only in the
    other branch of a cond)."""
    axes = rng.choice(MESHES)
    mesh = mesh_of(axes)
    n = mesh.shape["x"]
    one, other = ((lambda b, name=name: PRIMITIVES[name](b, "x")) for name in (first, second))
    body = _placed_body(place, one, other)
    mapped = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    shape = (n * n * rng.randint(1, 2), rng.randint(1, 5))
    values = small_ints(shape, np.float32, rng.randrange(100))
    x = jax.device_put(values, NamedSharding(mesh, P("x")))
    used = {"body": first, "loop": first, "loop condition": f"{first} (body: {second})"}
    at = used.get(place, f"{first} / {second}")
    label = f"shard_map on mesh {dict(axes)}: {at} at {place}, x f32{list(shape)}"
    return label, mapped, (x,)


def draw_census_programs(rng: random.Random) -> list:
    """Every run: pmax and pmin in the two branches of a lax.cond (at top level or in a loop
    body), two drawn primitives in a while loop's condition and its body, then one program
    drawn from every primitive and place."""
    extremes = rng.sample(("pmax", "pmin"), 2)
    drawn = [census_program(rng, rng.choice(("cond", "cond in loop")), *extremes)]
    drawn.append(census_program(rng, "loop condition", *rng.sample(sorted(PRIMITIVES), 2)))
    first, second = rng.sample(sorted(PRIMITIVES), 2)
    drawn.append(census_program(rng, rng.choice(PLACES), first, second))
    return drawn


# ---- device_param_shapes, param_shardings: many arguments -------------------------------------

NAMES = (
    "x", "w", "b", "kernel", "scale", "bias", "mask", "ids", "tokens", "gamma", "beta", "mu",
    "sigma", "alpha", "state", "step", "h", "q", "k", "v",
)  # fmt: skip
DTYPES = ("float32", "bfloat16", "float16", "int32", "bool", "uint8", "int8")


def _array(rng: random.Random, shape, dtype: str) -> np.ndarray:
    values = small_ints(shape, np.int32, rng.randrange(1000))
    if dtype == "bool":
        return values > 0
    if dtype == "uint8":
        return np.abs(values).astype(np.uint8)
    return values.astype(jnp.dtype(dtype))


def _spec(rng: random.Random, shape, names: list[str], mesh) -> P:
    """A spec splitting some dimensions of `shape` over axes that divide them."""
    entries, free = [], list(names)
    for size in shape:
        fits = [a for a in free if size % mesh.shape[a] == 0]
        if fits and rng.random() < 0.6:
            entries.append(free.pop(free.index(rng.choice(fits))))
        else:
            entries.append(None)
    return P(*entries)


def parameter_program(rng: random.Random):
    """(label, function, args, kept): 12 or 13 arguments on a drawn mesh, named out of
    alphabetical order (argument 0 after argument 1), one or two of them never read.

    Argument 0 is the only one of rank 3, split over "x" along one dimension; among the read
    arguments after it: at least one bool, uint8 or int8; the third read one replicated and the
    last read one split over "x" (so the sharding annotations of parameters 2 and 10 differ)."""
    axes = rng.choice(MESHES)
    mesh = mesh_of(axes)
    n, names = mesh.shape["x"], [a for a, _ in axes]
    count = rng.randint(12, 13)
    arg_names = rng.sample(NAMES, count)
    if arg_names[0] < arg_names[1]:
        arg_names[0], arg_names[1] = arg_names[1], arg_names[0]
    unused = set(rng.sample(range(3, count - 1), count - 11))
    kept = [k for k in range(count) if k not in unused]
    narrow, narrow_at = rng.choice(("bool", "uint8", "int8")), rng.choice(kept[1:])
    args = []
    for k in range(count):
        if k == 0:
            dim = rng.randrange(3)
            shape = tuple(
                n * rng.randint(1, 3) if d == dim else rng.randint(2, 5) for d in range(3)
            )
            spec, dtype = P(*("x" if d == dim else None for d in range(3))), "float32"
        else:
            shape = tuple(n * rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
            dtype = narrow if k == narrow_at else rng.choice(DTYPES)
            spec = _spec(rng, shape, names, mesh)
            if k == kept[2]:
                spec = P()
            elif k == kept[-1]:
                shape, spec = shape or (n,), P("x")
        args.append(jax.device_put(_array(rng, shape, dtype), NamedSharding(mesh, spec)))

    def read_some(*given):
        return sum(jnp.sum(given[k].astype(jnp.float32)) for k in kept)

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    read_some.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, kind) for name in arg_names]
    )
    label = f"f({', '.join(arg_names)}) on mesh {dict(axes)}, {len(kept)} of them read"
    return label, read_some, tuple(args), tuple(kept)


def nested_parameter_program(rng: random.Random):
    """(label, function, args, kept): one to three arguments on a drawn mesh, one of them
    perhaps never read, whose compiled module nests computations with more parameters than
    ENTRY: an argmax of argument 0 (split over "x" along a drawn dimension) reduces with a
    computation of four scalar parameters (value, index, value, index), beside the fusions
    that call it. Its ENTRY has one or two parameters; the others are not the program's."""
    axes = rng.choice(MESHES)
    mesh = mesh_of(axes)
    n, names = mesh.shape["x"], [a for a, _ in axes]
    rank, axis = rng.randint(1, 3), rng.randrange(3)
    split = rng.randrange(rank)
    shape = tuple(n * rng.randint(1, 3) if d == split else rng.randint(2, 5) for d in range(rank))
    spec = P(*("x" if d == split else None for d in range(rank)))
    dtype = rng.choice(("float32", "bfloat16", "int32", "int8"))
    args = [jax.device_put(_array(rng, shape, dtype), NamedSharding(mesh, spec))]
    if rng.random() < 0.7:  # a second read argument, scaled
        other = tuple(n * rng.randint(1, 2) for _ in range(rng.randint(0, 2)))
        placed = NamedSharding(mesh, _spec(rng, other, names, mesh))
        args.append(jax.device_put(_array(rng, other, rng.choice(DTYPES[:4])), placed))
    kept = tuple(range(len(args)))
    if rng.random() < 0.5:  # one never read, at a drawn place
        at = rng.randint(1, len(args))
        args.insert(at, jax.device_put(_array(rng, (n,), "float32"), NamedSharding(mesh, P())))
        kept = tuple(k if k < at else k + 1 for k in kept)
    along = axis % rank

    def argmax_and_scale(*given):
        found = jnp.argmax(given[kept[0]], axis=along)
        return (found, given[kept[1]] * 2) if len(kept) > 1 else found

    label = (
        f"argmax along {along} of {dtype}{list(shape)} placed {spec} on mesh {dict(axes)}, "
        f"{len(args)} argument(s), {len(kept)} read"
    )
    return label, argmax_and_scale, tuple(args), kept


# ---- psum_total: an int32 total float32 cannot hold ---------------------------------------------


def int_total_case(rng: random.Random):
    """(label, mesh, NumPy x, x row-sharded over "x"): int32 rows on a drawn mesh whose total is
    odd and above 2**24, so only an integer sum gets it exactly (no int32 overflow either)."""
    axes = rng.choice(MESHES)
    mesh = mesh_of(axes)
    shape = (mesh.shape["x"] * rng.randint(1, 3), rng.randint(1, 6))
    high = (1 << 31) // (shape[0] * shape[1] + 1)  # the total stays below 2**31
    values = np.random.default_rng(rng.randrange(1 << 32)).integers(high // 2, high, shape)
    values = values.astype(np.int32)
    values.flat[rng.randrange(values.size)] += 1 - int(values.sum()) % 2
    label = f"{dict(axes)}, x int32{list(shape)} of large values"
    return label, mesh, values, jax.device_put(values, NamedSharding(mesh, P("x")))


def int_scatter_case(rng: random.Random):
    """(label, mesh, NumPy x, x row-sharded over "x"): int32 rows on a drawn mesh, n * n * k of
    them, for scatter_sum; every element-wise sum of the n blocks is above 2**24 (no int32
    overflow) and the first one is odd, so only an integer sum gets it exactly."""
    axes = rng.choice(MESHES)
    mesh = mesh_of(axes)
    n = mesh.shape["x"]
    rows = n * n * rng.randint(1, 2)
    shape = (rows, rng.randint(1, 5))
    high = (1 << 31) // (n + 1)  # a sum of n values stays below 2**31
    values = np.random.default_rng(rng.randrange(1 << 32)).integers(high // 2, high, shape)
    values = values.astype(np.int32)
    values[0, 0] += 1 - int(values[:: rows // n, 0].sum()) % 2
    label = f"{dict(axes)}, x int32{list(shape)} of large values"
    return label, mesh, values, jax.device_put(values, NamedSharding(mesh, P("x")))


# ---- psum_total: narrow integers past their own range; NaN and inf -----------------------------

# each 8- or 16-bit type with its largest value less 3 (a second x adds up to 3 to each element)
NARROW = ((np.int8, 124), (np.uint8, 252), (np.int16, 32764), (np.uint16, 65532), (np.bool_, 1))


def _placed(axes, values: np.ndarray, about: str):
    mesh = mesh_of(axes)
    label = f"{dict(axes)}, x {values.dtype}{list(values.shape)} {about}"
    return label, mesh, values, jax.device_put(values, NamedSharding(mesh, P("x")))


def narrow_total_case(rng: random.Random):
    """(label, mesh, NumPy x, x row-sharded over "x"): 8- or 16-bit integers (or bools) on a
    drawn mesh, each at least half its dtype's largest value less 3 (a second x adds up to 3),
    so many that the total is above 2**16: no 8- or 16-bit sum holds it (nor bool), jnp.sum's
    int32 or uint32 does."""
    dtype, top = rng.choice(NARROW)
    axes = rng.choice(MESHES)
    n = dict(axes)["x"]
    cols = rng.randint(1, 16)
    need = (1 << 16) // max(1, top // 2) + 2  # elements, each >= top // 2, to pass 2**16
    rows = n * (-(-need // (n * cols)) + rng.randint(0, 2))
    draw = np.random.default_rng(rng.randrange(1 << 32))
    values = draw.integers(max(1, top // 2), top + 1, (rows, cols))
    if dtype is np.bool_:  # all True but a drawn number of elements: still more than 2**16
        values.flat[rng.sample(range(values.size), rng.randint(0, values.size - need))] = 0
    return _placed(axes, values.astype(dtype), "whose total its own dtype cannot hold")


def nonfinite_cases(rng: random.Random):
    """Two (label, mesh, NumPy x, x row-sharded over "x") of small integers in a drawn float
    dtype on drawn meshes: one x holds a NaN at a drawn place (and, every other draw, an inf
    elsewhere), so its total is NaN; the other holds infs only, of one drawn sign (total that
    inf) or of both (NaN)."""
    cases = []
    for kind in ("nan", rng.choice(("inf", "-inf", "inf and -inf"))):
        if kind == "nan" and rng.random() < 0.5:
            kind = rng.choice(("nan and inf", "nan and -inf"))
        axes = rng.choice(MESHES)
        dtype = rng.choice((np.float32, np.float16, jnp.bfloat16))
        shape = (dict(axes)["x"] * rng.randint(1, 3), rng.randint(1, 6))
        values = small_ints(shape, dtype, rng.randrange(1 << 32))
        marks = kind.split(" and ")
        for place, mark in zip(rng.sample(range(values.size), len(marks)), marks, strict=True):
            values.flat[place] = float(mark)
        cases.append(_placed(axes, values, f"holding {kind}"))
    return cases
