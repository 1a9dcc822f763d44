"""Phase 9, inherited pmap code: what pmap hands each device, who talks to whom in a compiled
module, and the inherited training step moved to shard_map or jit.

Expected values come from katas/phase9/pmap_oracles.py (the compiled programs' own parameters,
the step in NumPy) and kata_harness.collectives (device groups computed from the mesh's grid,
never from the text, and the bytes of the compiled collectives).
"""

from __future__ import annotations

import contextlib
import zlib
from collections import Counter
from functools import cache

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import collectives, metamorphic, oracles
from kata_harness.predict import compiler_refused
from katas.phase9 import pmap_oracles as oracle
from katas.phase9.pmap_programs import (
    MIGRATE_CASES,
    groups_bank,
    inherited_step,
    migrate_arrays,
)
from katas.phase9.programs import NEEDS_VALUES, mesh_named, mesh_of

DEVICES = 8

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


# ---- predict_pmap_shapes ------------------------------------------------------------------------

# (global shapes, in_axes): mapped on dimension 0, 1 and the last; scalars and vectors whole;
# pmap over 8, 6, 4 and 1 devices.
PMAP_SHAPE_CASES = [
    ([(8, 2, 4), (4, 3)], [0, None]),
    ([(3, 8, 5), (2,)], [1, None]),
    ([(4,), (2, 4, 3), ()], [0, 1, None]),
    ([(5, 1)], [1]),
    ([(2, 3, 6), (6,), (7, 2)], [2, 0, None]),
    ([(8,)], [0]),
]


@cache
def _compiled_shapes(shapes: tuple, in_axes: tuple) -> list[tuple[int, ...]]:
    """The oracle once per case: the variants of a test (reference, stub, accepted) share it."""
    return oracle.pmap_entry_shapes(list(shapes), list(in_axes))


def _predicted(kata, shapes, in_axes):
    with compiler_refused("predict_pmap_shapes", also=[(jax, "pmap"), (jax, "device_put")]):
        return kata.predict_pmap_shapes([tuple(s) for s in shapes], list(in_axes))


@pytest.mark.task("predict_pmap_shapes")
def test_predict_pmap_shapes_matches_the_compiled_parameters(kata):
    for shapes, in_axes in PMAP_SHAPE_CASES:
        predicted = _predicted(kata, shapes, in_axes)
        compiled = _compiled_shapes(tuple(shapes), tuple(in_axes))
        with check:
            assert predicted == compiled, (
                f"pmap(in_axes={in_axes}) on f32 {shapes}: you predicted {predicted}, "
                f"the compiled ENTRY parameters are {compiled}"
            )


# What every run draws one case of: an unmapped argument as long as the mapped size along its
# first dimension; argument 0 unmapped (its first dimension at most half the mapped size); an
# argument mapped on a later dimension with an earlier one of the mapped size too.
PMAP_TRAPS = ("whole of mapped size", "whole first", "mapped later")


def _mapped(fresh, devices: int, trap: str) -> tuple[tuple[int, ...], int]:
    rank = fresh.randint(2, 3) if trap == "mapped later" else fresh.randint(1, 3)
    shape = [fresh.randint(1, 6) for _ in range(rank)]
    axis = fresh.randint(1, rank - 1) if trap == "mapped later" else fresh.randrange(rank)
    shape[axis] = devices
    if trap == "mapped later":
        shape[fresh.randrange(axis)] = devices
    return tuple(shape), axis


def _fresh_pmap_case(fresh, trap: str):
    """One to four arguments over 2 to 8 devices, with the case `trap` (PMAP_TRAPS)."""
    devices = fresh.choice((2, 3, 4, 5, 8))
    shapes, in_axes = [], []
    if trap == "whole of mapped size":
        shapes.append((devices, *(fresh.randint(1, 6) for _ in range(fresh.randint(0, 2)))))
        in_axes.append(None)
    for number in range(fresh.randint(1, 3)):
        if number == 0 or fresh.random() < 0.6:
            shape, axis = _mapped(fresh, devices, trap if number == 0 else "")
            shapes.append(shape)
            in_axes.append(axis)
        else:
            shapes.append(tuple(fresh.randint(1, 6) for _ in range(fresh.randint(0, 3))))
            in_axes.append(None)
    order = fresh.sample(range(len(shapes)), len(shapes))
    shapes, in_axes = [shapes[i] for i in order], [in_axes[i] for i in order]
    if trap == "whole first":
        rest = [fresh.randint(1, 6) for _ in range(fresh.randint(0, 1))]
        shapes.insert(0, fresh.choice(((), (fresh.randint(1, devices // 2), *rest))))
        in_axes.insert(0, None)
    return shapes, in_axes


@pytest.mark.task("predict_pmap_shapes")
def test_predict_pmap_shapes_on_fresh_cases(kata, fresh):
    """One to five arguments of rank 0 to 3, mapped on any dimension over 2 to 8 devices or
    whole, in any order; every run one case of each PMAP_TRAPS: an unmapped argument as long as
    the mapped size along its first dimension, argument 0 unmapped, an argument mapped on a
    later dimension with an earlier one of the mapped size. The answer is what pmap's compiled
    program receives."""
    for trap in PMAP_TRAPS:
        shapes, in_axes = _fresh_pmap_case(fresh, trap)
        predicted = _predicted(kata, shapes, in_axes)
        compiled = _compiled_shapes(tuple(shapes), tuple(in_axes))
        if predicted != compiled:
            pytest.fail(
                f"pmap(in_axes={in_axes}) on f32 {shapes}: you predicted {predicted}, the "
                f"compiled ENTRY parameters are {compiled}; {fresh.where()}"
            )


@pytest.mark.task("predict_pmap_shapes")
def test_predict_pmap_shapes_does_not_compile(kata):
    for shapes, in_axes in PMAP_SHAPE_CASES:
        with contextlib.suppress(IndexError, ValueError, TypeError):  # wrong, not compiling
            _predicted(kata, shapes, in_axes)


# ---- collective_groups --------------------------------------------------------------------------

# Each bank program's collectives work over one set of devices: (mesh sizes, the mesh
# dimensions a group spans), from the program's construction, not from its text.
BANK_DEVICES = {
    "pmap over 8 devices": ((8,), (0,)),
    "pmap over 4 devices": ((4,), (0,)),
    "pmap without collectives": ((8,), (0,)),
    "shard_map over y, 2x4": ((2, 4), (1,)),
    "shard_map over x, 4x2": ((4, 2), (0,)),
    "shard_map over both, 2x4": ((2, 4), (0, 1)),
    "shard_map over the middle axis, 2x2x2": ((2, 2, 2), (1,)),
    "shard_map over x in a loop, (y, x) 2x4": ((2, 4), (1,)),
    "jit step, batch over x, (y, x) 2x4": ((2, 4), (1,)),
    "inherited pmap step over 8 devices": ((8,), (0,)),
}
AXIS_NAMES = ("x", "y", "batch", "data", "i", "model_2")
ODD_NAMES = ("data-parallel", "model.0", "tp-2", "a.b-c")  # not word characters: XLA reads them


@cache
def _bank_texts() -> dict[str, str]:
    texts = {}
    for name, function, args in groups_bank():
        program = function if hasattr(function, "lower") else jax.jit(function)
        texts[name] = oracle.compiled_text(program.lower(*args).compile())
    return texts


def _expected(name: str, text: str) -> Counter:
    sizes, kept = BANK_DEVICES[name]
    groups = collectives.mesh_groups(sizes, kept)
    return Counter({(op, groups): n for op, n in oracle.opcode_counts(text).items()})


def _check_groups(kata, label: str, text: str, expected: Counter) -> str | None:
    try:
        got = kata.collective_groups(text)
    except NotImplementedError:
        raise
    except Exception as error:  # a wrong answer: one that cannot read XLA's spelling
        return f"{label}: collective_groups raised {type(error).__name__} on this module"
    assert isinstance(got, Counter), f"{label}: expected a Counter, got {type(got).__name__}"
    if got == expected:
        return None
    differing = sorted(set(got) | set(expected), key=repr)
    first = next(k for k in differing if got.get(k, 0) != expected.get(k, 0))
    opcode = first[0] if isinstance(first, tuple) and first else first
    return (
        f"{label}: {sum(expected.values())} grouped collectives expected, you counted "
        f"{sum(got.values())}; the first key that differs is an {opcode!r} "
        f"(counted {got.get(first, 0)}, expected {expected.get(first, 0)})"
    )


@pytest.mark.task("collective_groups")
def test_collective_groups_of_compiled_programs(kata):
    """pmap over 8 and 4 devices (a ppermute left out), a pmap without collectives, shard_map
    over one axis, both, the middle axis of a 2x2x2 mesh, and in a loop body, the partitioner's
    all-reduce, as this JAX prints them."""
    for name, text in _bank_texts().items():
        problem = _check_groups(kata, name, text, _expected(name, text))
        with check:
            assert problem is None, problem


SPELLINGS = (
    "listed",
    "listed out of order",
    "iota",
    "mesh",
    "mesh with device_ids",
    "empty",
    "none",
)


def _out_of_order(fresh, groups) -> str:
    """The listed spelling with the groups in a drawn order, none sorted, and the members of
    each group in a drawn order, the first of more than one member not ascending (XLA reads any
    order; the answer sorts them)."""
    groups = [list(g) for g in groups]
    while len(groups) > 1 and groups == sorted(groups):
        fresh.shuffle(groups)
    for group in groups:
        fresh.shuffle(group)
    wide = next((g for g in groups if len(g) > 1), None)
    if wide is not None and wide == sorted(wide):
        wide.reverse()
    return collectives.listed(tuple(tuple(g) for g in groups))


def _spellings(fresh, name: str) -> list[tuple[str, str | None]]:
    """(label, replica_groups value or None for none) for the bank program `name`."""
    sizes, kept = BANK_DEVICES[name]
    names = [*fresh.sample(AXIS_NAMES, len(sizes) - 1), fresh.choice(ODD_NAMES)]
    fresh.shuffle(names)
    perm = list(range(len(sizes)))
    while len(sizes) > 1 and perm == sorted(perm):  # device_ids with a transpose
        perm = fresh.sample(range(len(sizes)), len(sizes))
    permuted, _ = collectives.permuted_mesh(sizes, kept, names, perm)
    found: list[tuple[str, str | None]] = [
        ("listed", collectives.listed(collectives.mesh_groups(sizes, kept))),
        ("listed out of order", _out_of_order(fresh, collectives.mesh_groups(sizes, kept))),
        ("iota", collectives.iota(sizes, kept)),
        ("mesh", collectives.mesh_spelling(sizes, kept, names)),
        ("mesh with device_ids", permuted),
    ]
    if len(collectives.mesh_groups(sizes, kept)) == 1:  # one group of every device of the module
        found += [("empty", "{}"), ("none", None)]
    return found


@pytest.mark.task("collective_groups")
def test_collective_groups_in_every_spelling(kata, fresh):
    """Every program's groups written in each spelling XLA prints (listed, also with its groups
    and their members in a drawn order, iota, mesh with fresh axis names, one of them not word
    characters such as 'data-parallel', mesh with device_ids, and {} or none for one group of
    all devices), where this jaxlib's parser reads the text; every wrong spelling is
    reported."""
    problems, exercised = [], set()
    for name, text in _bank_texts().items():
        if not collectives.count_groups(text):
            continue
        for label, spelling in _spellings(fresh, name):
            variant = collectives.respelled(text, spelling)
            if not oracles.xla_accepts(variant):
                continue  # a spelling this jaxlib's parser does not read
            problem = _check_groups(
                kata, f"{name}, replica_groups {label}", variant, _expected(name, text)
            )
            problems += [problem] if problem else []
            exercised.add(label)
    missing = set(SPELLINGS) - exercised
    assert not missing, f"this jaxlib's parser read no module spelled {sorted(missing)}"
    assert not problems, "\n".join([*problems, fresh.where()])


@pytest.mark.task("collective_groups")
def test_collective_groups_of_renamed_and_reordered_modules(kata):
    for name, text in _bank_texts().items():
        expected = _expected(name, text)
        for variant in metamorphic.variants(text, seed=zlib.crc32(name.encode())):
            problem = _check_groups(kata, f"{name} ({variant.kind})", variant.text, expected)
            with check:
                assert problem is None, problem


# ---- migrated_step ------------------------------------------------------------------------------


def _migrate(kata, mesh, w, x, y):
    """The learner's step compiled as the contract says, and what it returns on the batch."""
    placed = (put_on(mesh, w), put_on(mesh, x, "x"), put_on(mesh, y, "x"))
    step = jax.jit(lambda w, x, y: kata.migrated_step(w, x, y, mesh))
    try:
        compiled = step.lower(*placed).compile()
    except NEEDS_VALUES as error:
        pytest.fail(
            f"mesh {dict(mesh.shape)}, w f32{list(w.shape)}, x f32{list(x.shape)}: "
            f"migrated_step under jax.jit asked for the values of its inputs "
            f"({type(error).__name__}): it read them on the host; the step must run on the "
            "devices"
        )
    return compiled(*placed), compiled


def put_on(mesh, value, *spec):
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))
    return jax.device_put(value, sharding)


@cache
def _inherited_bytes(w_shape, x_shape, y_shape, blocks: int) -> int:
    w = np.zeros(w_shape, np.float32)
    x = np.zeros((blocks, x_shape[0] // blocks, x_shape[1]), np.float32)
    y = np.zeros((blocks, y_shape[0] // blocks, y_shape[1]), np.float32)
    lowered = inherited_step.lower(w, x, y)
    return collectives.collective_bytes(oracle.compiled_text(lowered.compile()))


def _check_step(case: str, result, mesh, w, x, y) -> None:
    assert isinstance(result, tuple) and len(result) == 2, (
        f"{case}: expected (new w, loss), got {type(result).__name__}"
    )
    new_w, loss = result
    for label, value, shape in (("new w", new_w, w.shape), ("loss", loss, ())):
        assert isinstance(value, jax.Array), f"{case}: {label} is a {type(value).__name__}"
        assert value.shape == shape, f"{case}: {label} has shape {value.shape}, expected {shape}"
        assert value.sharding.is_fully_replicated, f"{case}: {label} is not replicated"
    want_w, want_loss = oracle.least_squares_step(w, x, y)
    for label, got, want in (("new w", new_w, want_w), ("loss", loss, want_loss)):
        assert np.allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5), (
            f"{case}: {label} differs from the inherited pmap step on {mesh.shape['x']} blocks "
            f"(largest difference {np.max(np.abs(np.asarray(got) - want)):.3g})"
        )


def _check_bytes(case: str, compiled, w, x, y, n: int) -> None:
    moved = collectives.collective_bytes(oracle.compiled_text(compiled))
    budget = _inherited_bytes(w.shape, x.shape, y.shape, n)
    assert moved <= budget, (
        f"{case}: the collectives move {moved} bytes per device, the inherited pmap step's {budget}"
    )


@pytest.mark.task("migrated_step")
def test_migrated_step_gives_the_inherited_values(kata):
    """Called as a user calls it, outside jit: a placement written after shard_map (a
    device_put) is dropped under jax.jit and counts only here. The jitted step's values are
    checked on every mesh by the two tests below, on the programs they compile anyway; an
    eager shard_map runs op by op (seconds), so this call runs once, on the (4, 2) mesh whose
    axes both divide w's dimensions (a split of w is possible along either)."""
    number = next(i for i, (name, *_) in enumerate(MIGRATE_CASES) if name == "4x2")
    mesh = mesh_named("4x2")
    w, x, y = migrate_arrays(number)
    placed = (put_on(mesh, w), put_on(mesh, x, "x"), put_on(mesh, y, "x"))
    case = f"mesh {dict(mesh.shape)}, x f32{list(x.shape)}, called outside jit"
    _check_step(case, kata.migrated_step(*placed, mesh), mesh, w, x, y)


@pytest.mark.task("migrated_step")
def test_migrated_step_moves_no_more_bytes(kata):
    """The bytes of the jitted step, and the values and placement of what it returns."""
    for number, (mesh_name, *_) in enumerate(MIGRATE_CASES):
        mesh = mesh_named(mesh_name)
        w, x, y = migrate_arrays(number, seed=1)
        result, compiled = _migrate(kata, mesh, w, x, y)
        case = f"mesh {dict(mesh.shape)}, x f32{list(x.shape)}"
        with check:
            _check_bytes(case, compiled, w, x, y, mesh.shape["x"])
        with check:
            _check_step(f"{case}, under jax.jit", result, mesh, w, x, y)


FRESH_MESHES = (
    (("x", 2), ("y", 4)),
    (("y", 4), ("x", 2)),
    (("z", 2), ("x", 4)),
    (("x", 4), ("z", 2)),
    (("y", 2), ("x", 2), ("z", 2)),
    (("x", 8),),
)


@pytest.mark.task("migrated_step")
def test_migrated_step_on_fresh_meshes_and_batches(kata, fresh):
    """Meshes where "x" is major, minor or in the middle, of 2, 4 or 8 positions; batches,
    features and outputs drawn for this run; the values and the bytes of both tests above."""
    for axes in fresh.sample(FRESH_MESHES, 2):
        mesh = mesh_of(axes)
        n = mesh.shape["x"]
        rng = np.random.default_rng(fresh.randrange(2**32))
        batch, features, outputs = n * fresh.randint(1, 3), fresh.randint(1, 6), fresh.randint(1, 4)
        w = rng.normal(size=(features, outputs)).astype(np.float32)
        x = rng.normal(size=(batch, features)).astype(np.float32)
        y = rng.normal(size=(batch, outputs)).astype(np.float32)
        case = f"mesh {dict(axes)}, x f32[{batch},{features}], y f32[{batch},{outputs}]"
        result, compiled = _migrate(kata, mesh, w, x, y)
        try:
            _check_step(case, result, mesh, w, x, y)
            _check_bytes(case, compiled, w, x, y, n)
        except AssertionError as failed:
            pytest.fail(f"{failed}; {fresh.where()}")
