"""Phase 9 tests, task predict_shard_shape: what one device holds of an array placed with a
sharding, predicted from the shapes alone.

Fixed cases (programs.SHARD_SHAPE_CASES, REFUSED_SHARD_CASES) and cases drawn fresh every run:
shapes of rank 0 to 3, specs of None, one axis and tuples, meshes of one to three axes under any
names, and one placement of every kind jax refuses. Oracles (kata_harness.oracles.sharding): the
compiled ENTRY parameter and jax.device_put (None where jax refuses the placement).
"""

import contextlib
from functools import cache

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness.oracles import sharding as oracle
from kata_harness.predict import compiler_refused
from katas.phase9.programs import REFUSED_SHARD_CASES, SHARD_SHAPE_CASES, mesh_of

DEVICES = 8

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


# ---- predict_shard_shape -----------------------------------------------------------------------


@cache
def _compiled_shard_shape(number: int) -> tuple[int, ...] | None:
    """The ENTRY parameter's shape when jit receives the case's array, None if jax refuses it."""
    shape, spec, mesh_shape = SHARD_SHAPE_CASES[number]
    mesh = mesh_of(tuple(mesh_shape.items()))
    return oracle.compiled_shard_shape(shape, spec, mesh, f"case {number}")


def _shard_case(number: int) -> str:
    shape, spec, mesh_shape = SHARD_SHAPE_CASES[number]
    return f"f32{list(shape)} with {spec} on mesh {mesh_shape}"


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_matches_the_compiled_parameter(kata):
    for number, (shape, spec, mesh_shape) in enumerate(SHARD_SHAPE_CASES):
        predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        compiled = _compiled_shard_shape(number)
        with check:
            assert predicted == compiled, f"{_shard_case(number)}: you predicted {predicted}, " + (
                "jax refuses this placement (a dimension does not divide evenly)"
                if compiled is None
                else f"the compiled ENTRY parameter is {compiled}"
            )


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_none_where_device_put_refuses(kata):
    """Every dimension divides evenly, yet jax refuses: a spec longer than the shape, a mesh
    axis named twice, an axis the mesh does not have."""
    for shape, spec, mesh_shape in REFUSED_SHARD_CASES:
        case = f"f32{list(shape)} with {spec} on mesh {mesh_shape}"
        expected = oracle.device_put_shard_shape(shape, spec, mesh_of(tuple(mesh_shape.items())))
        assert expected is None, f"{case}: jax.device_put should refuse it, it placed {expected}"
        try:
            predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        except (KeyError, IndexError, ValueError) as error:
            predicted = f"{type(error).__name__}: {error}"
        with check:
            assert predicted == expected, (
                f"{case}: you predicted {predicted}; jax.device_put refuses this placement, "
                "the answer is None"
            )


FRESH_MESH_SIZES = ((8,), (2, 4), (4, 2), (2, 2, 2), (1, 8), (2, 1, 4))
FRESH_AXIS_NAMES = ("x", "y", "z", "data", "model")


def _fresh_entry(fresh, names: list[str]):
    """None, one axis or a tuple of two, taken from `names` (whatever is left)."""
    kind = fresh.choice(("none", "one", "two") if len(names) >= 2 else ("none", "one"))
    if kind == "none" or not names:
        return None
    if kind == "one":
        return names.pop(fresh.randrange(len(names)))
    return tuple(names.pop(fresh.randrange(len(names))) for _ in range(2))


def _fresh_empty_case(fresh) -> tuple[tuple[int, ...], P, dict[str, int]]:
    """An empty dimension (size 0, which every number of pieces divides) split over one axis of
    2 or more positions or a tuple of two, beside dimensions that divide: jax places it."""
    sizes = fresh.choice(FRESH_MESH_SIZES)
    mesh_shape = dict(zip(fresh.sample(FRESH_AXIS_NAMES, len(sizes)), sizes, strict=True))
    cutting = [name for name, size in mesh_shape.items() if size > 1]
    names = [name for name in mesh_shape if name not in cutting]
    entry = cutting.pop(fresh.randrange(len(cutting)))
    if cutting and fresh.random() < 0.5:
        entry = (entry, cutting.pop())
    names += cutting
    rank = fresh.randint(1, 3)
    at = fresh.randrange(rank)
    spec, shape = [], []
    for number in range(rank):
        other = None if number == at else _fresh_entry(fresh, names)
        axes = () if other is None else (other,) if isinstance(other, str) else other
        spec.append(entry if number == at else other)
        shape.append(0 if number == at else int(np.prod([mesh_shape[a] for a in axes])) * 2)
    return tuple(shape), P(*spec), mesh_shape


def _fresh_shard_cases(fresh) -> list[tuple[tuple[int, ...], P, dict[str, int]]]:
    # First: a tuple entry over two axes of 2 and 4 positions, its dimension a multiple of each
    # (4 times an odd number) but not of their product, 8: jax refuses it.
    a, b = fresh.sample(FRESH_AXIS_NAMES, 2)
    mesh_shape = dict(fresh.sample([(a, 2), (b, 4)], 2))
    tricky = 4 * fresh.choice((1, 3, 5))
    entries = [None, (a, b) if fresh.random() < 0.5 else (b, a)]
    shape = [fresh.randint(1, 12), tricky]
    if fresh.random() < 0.5:
        entries.reverse()
        shape.reverse()
    cases = [(tuple(shape), P(*entries), mesh_shape), _fresh_empty_case(fresh)]
    for _ in range(5):
        sizes = fresh.choice(FRESH_MESH_SIZES)
        mesh_shape = dict(zip(fresh.sample(FRESH_AXIS_NAMES, len(sizes)), sizes, strict=True))
        rank = fresh.randint(0, 3)
        names = list(mesh_shape)
        spec = [_fresh_entry(fresh, names) for _ in range(fresh.randint(0, rank))]
        shape = []
        for number in range(rank):
            entry = spec[number] if number < len(spec) else None
            axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
            pieces = int(np.prod([mesh_shape[axis] for axis in axes]))
            # mostly a multiple of its pieces, sometimes anything (jax then refuses)
            shape.append(
                pieces * fresh.randint(1, 4) if fresh.random() < 0.75 else fresh.randint(1, 13)
            )
        cases.append((tuple(shape), P(*spec), mesh_shape))
    return [*cases, _fresh_long_name_case(fresh)]


def _fresh_long_name_case(fresh) -> tuple[tuple[int, ...], P, dict[str, int]]:
    """A spec entry that is one axis name longer than one letter ('data', 'model'; its letters
    are not axes), beside other entries, every dimension a multiple of its pieces: jax places
    it. A name is one axis, never a sequence of one-letter axes."""
    sizes = fresh.choice(FRESH_MESH_SIZES)
    long = fresh.choice([name for name in FRESH_AXIS_NAMES if len(name) > 1])
    names = [long, *fresh.sample([n for n in FRESH_AXIS_NAMES if n != long], len(sizes) - 1)]
    fresh.shuffle(names)
    mesh_shape = dict(zip(names, sizes, strict=True))
    rest = [name for name in names if name != long]
    rank = fresh.randint(1, 3)
    at = fresh.randrange(rank)
    spec, shape = [], []
    for number in range(rank):
        entry = long if number == at else _fresh_entry(fresh, rest)
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        spec.append(entry)
        shape.append(int(np.prod([mesh_shape[a] for a in axes])) * fresh.randint(1, 3))
    return tuple(shape), P(*spec), mesh_shape


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_on_fresh_cases(kata, fresh):
    """Shapes of rank 0 to 3, specs of None, one axis and two-axis tuples, meshes of 1 to 3
    axes under any names (every time: a dimension that each of its two axes divides but their
    product does not, an empty dimension split over axes, and an entry naming one axis whose
    name is longer than one letter); the expected shape is what one
    device holds after jax.device_put, None where jax refuses the placement."""
    for shape, spec, mesh_shape in _fresh_shard_cases(fresh):
        try:
            predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        except (KeyError, IndexError, ValueError) as error:
            predicted = f"{type(error).__name__}: {error}"
        placed = oracle.device_put_shard_shape(shape, spec, mesh_of(tuple(mesh_shape.items())))
        if predicted != placed:
            pytest.fail(
                f"f32{list(shape)} with {spec} on mesh {mesh_shape}: you predicted {predicted}, "
                + (
                    "jax.device_put refuses this placement (the answer is None)"
                    if placed is None
                    else f"one device holds {placed} after jax.device_put"
                )
                + f"; {fresh.where()}"
            )


# Every kind of placement jax refuses though each dimension divides by its axes' pieces.
REFUSALS = (
    "an axis the mesh lacks",
    "an axis the mesh lacks, in a tuple",
    "an axis in two entries",
    "an axis twice in one tuple",
    "an axis of size 1 named twice",
    "more entries than dimensions",
)


def _refused_entries(fresh, refusal: str, mesh_shape: dict[str, int]) -> list:
    names = list(mesh_shape)
    unit = [n for n in names if mesh_shape[n] == 1]
    axis = unit[0] if refusal == REFUSALS[4] else fresh.choice(names)
    other = fresh.choice([n for n in names if n != axis])
    lacking = fresh.choice([n for n in (*FRESH_AXIS_NAMES, "w") if n not in mesh_shape])
    pair = fresh.sample([axis, lacking], 2)
    longer = [axis, *[None] * fresh.randint(0, 2)]
    fresh.shuffle(longer)
    return {
        REFUSALS[0]: [lacking],
        REFUSALS[1]: [tuple(pair)],
        REFUSALS[2]: fresh.choice(([axis, axis], [axis, (other, axis)], [(axis, other), axis])),
        REFUSALS[3]: [(axis, axis)],
        REFUSALS[4]: fresh.choice(([axis, axis], [(axis, axis)], [(other, axis), axis])),
        REFUSALS[5]: longer,
    }[refusal]


def _fresh_refused_case(
    fresh, refusal: str, empty: bool
) -> tuple[tuple[int, ...], P, dict[str, int]]:
    """A placement of kind `refusal` on a drawn mesh (one with an axis of size 1 for that
    kind), each dimension a multiple of the sizes its entry names (repeats counted); if
    `empty`, some of the dimensions that entries name (one at least, drawn) are 0."""
    sizes = fresh.choice(
        ((8, 1), (1, 8), (2, 1, 4), (4, 2, 1)) if refusal == REFUSALS[4] else FRESH_MESH_SIZES[:4]
    )
    mesh_shape = dict(zip(fresh.sample(FRESH_AXIS_NAMES, len(sizes)), sizes, strict=True))
    if len(sizes) == 1:
        mesh_shape[fresh.choice([n for n in FRESH_AXIS_NAMES if n not in mesh_shape])] = 1
    entries = _refused_entries(fresh, refusal, mesh_shape)
    if refusal == REFUSALS[5]:
        spec, shape = entries, [8 * fresh.randint(1, 2) for _ in entries[1:]]
    else:
        rank = fresh.randint(len(entries), 3)
        at = sorted(fresh.sample(range(rank), len(entries)))
        spec = [entries[at.index(d)] if d in at else None for d in range(rank)]
        shape = []
        for entry in spec:
            axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
            shape.append(int(np.prod([mesh_shape.get(a, 1) for a in axes])) * fresh.randint(1, 3))
    named = [d for d, entry in enumerate(spec[: len(shape)]) if entry is not None]
    if empty and named:
        for d in fresh.sample(named, fresh.randint(1, len(named))):
            shape[d] = 0
    return tuple(shape), P(*spec), mesh_shape


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_none_for_every_refusal(kata, fresh):
    """One placement of each kind jax refuses though every dimension divides, drawn every run
    (an axis the mesh lacks, alone or in a tuple; an axis named twice, in two entries or in one
    tuple, also one of size 1; more entries than dimensions), three kinds or more (drawn) with
    0-sized dimensions under their entries, which divide but do not make the spec valid: the
    answer is None."""
    empty = fresh.sample(REFUSALS, fresh.randint(3, len(REFUSALS)))
    for refusal in REFUSALS:
        shape, spec, mesh_shape = _fresh_refused_case(fresh, refusal, refusal in empty)
        case = f"f32{list(shape)} with {spec} on mesh {mesh_shape}"
        placed = oracle.device_put_shard_shape(shape, spec, mesh_of(tuple(mesh_shape.items())))
        assert placed is None, f"{case} ({refusal}): jax placed it as {placed}"
        try:
            predicted = kata.predict_shard_shape(shape, spec, dict(mesh_shape))
        except (KeyError, IndexError, ValueError) as error:
            predicted = f"{type(error).__name__}: {error}"
        if predicted is not None:
            pytest.fail(
                f"{case}: you predicted {predicted}; jax.device_put refuses this placement "
                f"(the answer is None); {fresh.where()}"
            )


@pytest.mark.task("predict_shard_shape")
def test_predict_shard_shape_does_not_compile(kata):
    for shape, spec, mesh_shape in [*SHARD_SHAPE_CASES, *REFUSED_SHARD_CASES]:
        with compiler_refused("predict_shard_shape", also=[(jax, "device_put")]):
            with contextlib.suppress(KeyError, IndexError, ValueError):  # wrong, not compiling
                kata.predict_shard_shape(shape, spec, dict(mesh_shape))
