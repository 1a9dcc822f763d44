"""Phase 9 tests, tasks 4 and 5 (device_param_shapes, param_shardings): the per-device shapes
of a compiled program's parameters and their sharding annotations, read from HLO (moved from
test_phase9_shardings.py).

Every task runs on several meshes and array shapes. Oracle (kata_harness.oracles.sharding):
``compiled.input_shardings`` for what each parameter holds.
"""

from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness.oracles import sharding as oracle
from katas.phase9 import drawn_programs
from katas.phase9.programs import (
    param_bank,
)
from xla_inspect.parse import parse_hlo

DEVICES = 8

pytestmark = pytest.mark.skipif(
    len(jax.devices()) < DEVICES,
    reason=f"needs {DEVICES} devices (the harness sets jax_num_cpu_devices={DEVICES} on CPU; "
    f"this backend has {len(jax.devices())})",
)


# ---- task 4: device_param_shapes and task 5: param_shardings ----------------------------------


def _first_difference(got: list, want: list) -> str:
    if len(got) != len(want):
        return f"{len(got)} entries for {len(want)} parameters"
    number = next(k for k, (g, w) in enumerate(zip(got, want, strict=True)) if g != w)
    return f"parameter({number}) is not what you give at index {number}"


def _kept(f, args, kept):
    """The kept arguments of a drawn function with their shardings, from its compiled form."""
    return oracle.kept_shardings(jax.jit(f).lower(*args).compile(), args, kept)


@cache
def _compiled_bank(index: int):
    _, f, args, _ = param_bank()[index]
    return jax.jit(f).lower(*args).compile()


def _kept_shardings(index: int):
    """compiled.input_shardings: None for an argument jit dropped; the rest, in argument order."""
    _, _, args, kept = param_bank()[index]
    return oracle.kept_shardings(_compiled_bank(index), args, kept)


@pytest.mark.task("device_param_shapes")
def test_entry_shapes_are_per_device(kata):
    for index, (name, f, args, _) in enumerate(param_bank()):
        got = kata.device_param_shapes(f, *args)
        assert isinstance(got, list), f"{name}: got a {type(got).__name__}"
        want = [tuple(s.shard_shape(a.shape)) for a, s in _kept_shardings(index)]
        with check:
            assert [tuple(s) for s in got] == want, (
                f"{name}: got {got}, parameter 0, 1, .. of the partitioned module hold {want}"
            )


@pytest.mark.task("device_param_shapes")
def test_shapes_in_parameter_order(kata):
    name, f, args, _ = param_bank()[3]
    got = kata.device_param_shapes(f, *args)
    printed = [
        int(i.payload)
        for i in parse_hlo(oracle.optimized_text(_compiled_bank(3))).entry
        if i.opcode == "parameter" and i.payload is not None
    ]
    with check:
        assert printed != sorted(printed), f"{name}: the module prints {printed} in order now"
    with check:
        assert got == [(2, 5), (6, 2), ()], (
            f"{name}: got {got}: list parameter(0), parameter(1), parameter(2) by number (the "
            "text prints them in schedule order); z is dropped, the scalar is ()"
        )


@pytest.mark.task("device_param_shapes")
def test_unused_argument_is_not_a_parameter(kata):
    name, f, args, kept = param_bank()[1]
    got = kata.device_param_shapes(f, *args)
    want = [tuple(a.sharding.shard_shape(a.shape)) for a in (args[k] for k in kept)]
    assert got == want, (
        f"got {got}, expected {want}: jit drops an unused argument from the compiled module "
        "(keep_unused=False); read the ENTRY parameters, do not derive them from the inputs"
    )


@pytest.mark.task("device_param_shapes")
def test_entry_shapes_of_a_fresh_many_argument_function(kata, fresh):
    """12 or 13 arguments drawn every run (names out of alphabetical order, ranks 0 to 3, bool
    and 8-bit types among others, one or two never read) on a drawn mesh: more than ten
    parameters, so parameter(10) comes after parameter(9)."""
    label, f, args, kept = drawn_programs.parameter_program(fresh)
    got = kata.device_param_shapes(f, *args)
    assert isinstance(got, list), f"{label}: got a {type(got).__name__}"
    want = [tuple(s.shard_shape(a.shape)) for a, s in _kept(f, args, kept)]
    got = [tuple(s) for s in got]
    if got != want:
        pytest.fail(f"{label}: {_first_difference(got, want)}; {fresh.where()}")


def _nested_parameters(module) -> str | None:
    """A computation other than ENTRY with more parameters than ENTRY, as "name (count)"."""

    def count(computation):
        return sum(i.opcode == "parameter" for i in computation)

    entry = count(module.entry)
    wider = [c for c in module.computations if not c.is_entry and count(c) > entry]
    return f"{wider[0].name} ({count(wider[0])})" if wider else None


@pytest.mark.task("device_param_shapes")
def test_entry_shapes_beside_wider_called_computations(kata, fresh):
    """One to three arguments drawn every run (one perhaps never read), whose module also holds
    computations with more parameters than ENTRY (an argmax's reducer takes four): only ENTRY's
    parameters are what one device receives."""
    label, f, args, kept = drawn_programs.nested_parameter_program(fresh)
    got = kata.device_param_shapes(f, *args)
    assert isinstance(got, list), f"{label}: got a {type(got).__name__}"
    compiled = jax.jit(f).lower(*args).compile()
    with check:
        assert _nested_parameters(parse_hlo(oracle.optimized_text(compiled))), (
            f"{label}: no computation of the compiled module has more parameters than ENTRY now"
        )
    want = [tuple(s.shard_shape(a.shape)) for a, s in oracle.kept_shardings(compiled, args, kept)]
    got = [tuple(s) for s in got]
    if got != want:
        pytest.fail(
            f"{label}: {_first_difference(got, want)} (ENTRY's parameters only, not those of "
            f"the computations it calls); {fresh.where()}"
        )


@pytest.mark.task("param_shardings")
def test_annotations_beside_wider_called_computations(kata, fresh):
    """The drawn function of the test above: its unoptimized module also holds the argmax's
    reducer, whose four parameters have no annotation and are not ENTRY's."""
    label, f, args, kept = drawn_programs.nested_parameter_program(fresh)
    got = kata.param_shardings(f, *args)
    assert isinstance(got, list), f"{label}: got a {type(got).__name__}"
    lowered = jax.jit(f).lower(*args)
    with check:
        assert _nested_parameters(parse_hlo(lowered.as_text(dialect="hlo"))), (
            f"{label}: no computation of the lowered module has more parameters than ENTRY now"
        )
    kept_args = oracle.kept_shardings(lowered.compile(), args, kept)
    want = [str(s._to_xla_hlo_sharding(a.ndim)) for a, s in kept_args]
    if got != want:
        pytest.fail(
            f"{label}: {_first_difference(got, want)} (ENTRY's parameters only, not those of "
            f"the computations it calls); {fresh.where()}"
        )


@pytest.mark.task("param_shardings")
def test_annotations_of_a_fresh_many_argument_function(kata, fresh):
    """The drawn function of the test above: sharding annotations by parameter number."""
    label, f, args, kept = drawn_programs.parameter_program(fresh)
    got = kata.param_shardings(f, *args)
    assert isinstance(got, list), f"{label}: got a {type(got).__name__}"
    want = [str(s._to_xla_hlo_sharding(a.ndim)) for a, s in _kept(f, args, kept)]
    if got != want:
        pytest.fail(f"{label}: {_first_difference(got, want)}; {fresh.where()}")


@pytest.mark.task("param_shardings")
def test_sharding_annotations(kata):
    for index, (name, f, args, _) in enumerate(param_bank()):
        got = kata.param_shardings(f, *args)
        assert isinstance(got, list), f"{name}: got a {type(got).__name__}"
        # XLA's own printer of each kept argument's input sharding.
        want = [str(s._to_xla_hlo_sharding(a.ndim)) for a, s in _kept_shardings(index)]
        with check:
            assert got == want, f"{name}: got {got}, expected {want}"


@pytest.mark.task("param_shardings")
def test_annotations_in_parameter_order(kata):
    _, f, args, _ = param_bank()[0]
    got_1d = kata.param_shardings(f, *args)
    with check:
        assert got_1d == ["{devices=[8,1]<=[8]}", "{replicated}", "{devices=[1,8]<=[8]}"], (
            f"1-D mesh: got {got_1d}"
        )
    name, f, args, _ = param_bank()[3]
    got = kata.param_shardings(f, *args)
    printed = [
        int(i.payload)
        for i in parse_hlo(jax.jit(f).lower(*args).as_text(dialect="hlo")).entry
        if i.opcode == "parameter" and i.payload is not None
    ]
    with check:
        assert printed != sorted(printed), f"{name}: the module prints {printed} in order now"
    with check:
        assert got == [
            "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
            "{devices=[1,8]<=[4,2]T(1,0)}",
            "{replicated}",
        ], (
            f"{name}: got {got}: by parameter number, not in the order the text prints them; "
            "the unused argument is not a parameter"
        )
