"""Phase 8 tests, task 1: an op census read through MLIR, on shipped programs and on programs
drawn afresh (katas/phase8/census_cases.py), against MLIR's own `Operation.walk`
(kata_harness.oracles.stablehlo) and xla_inspect's census.
"""

from collections import Counter
from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness.fresh import Fresh
from kata_harness.oracles import stablehlo as facts
from kata_harness.predict import calls_seen
from katas.phase8.census_cases import MORE_CENSUS_PROGRAMS, nested_program
from katas.phase8.programs import CENSUS_PROGRAMS, KEPT, RENAMED
from xla_inspect.stablehlo import stablehlo_op_census

PROGRAMS = CENSUS_PROGRAMS | MORE_CENSUS_PROGRAMS

# what the lesson's toolkit census runs through: the task is to write that walk
TOOLKIT_CENSUS = (
    "xla_inspect.stablehlo.iter_operations",
    "xla_inspect.stablehlo.stablehlo_op_census",
)


@cache
def _census_lowered(name: str):
    fn, specs = PROGRAMS[name]
    return jax.jit(fn).lower(*specs)


def _is_census(got) -> bool:
    return isinstance(got, Counter) and all(
        isinstance(k, str) and type(v) is int for k, v in got.items()
    )


def _first_difference(got: Counter, want: Counter) -> str:
    """The first op (by name) whose count differs: one op, not the table."""
    op = min(op for op in {*got, *want} if got[op] != want[op])
    return f"{op}: you counted {got[op]}, MLIR's walk finds {want[op]}"


@pytest.mark.task("op_census")
def test_census_matches_mlir_walk(kata):
    found = {name: kata.op_census(_census_lowered(name)) for name in PROGRAMS}
    for name, got in found.items():
        assert _is_census(got), f"{name}: expected a Counter of str -> int, got {got!r}"
    for name, got in found.items():
        want = facts.walk_census(_census_lowered(name))
        with check:
            assert +got == want, f"{name}: {_first_difference(got, want)}"


@pytest.mark.task("op_census")
def test_census_matches_library_on_nested_regions(kata):
    programs = [
        RENAMED["stablehlo.case"],
        KEPT["stablehlo.while"],
        KEPT["stablehlo.reduce"],
        RENAMED["stablehlo.dot_general"],
    ]
    for fn, specs in programs:
        lowered = jax.jit(fn).lower(*specs)
        got, want = kata.op_census(lowered), stablehlo_op_census(lowered)
        assert _is_census(got), f"expected a Counter of str -> int, got {got!r}"
        with check:
            assert +got == +want, f"{_first_difference(got, want)} (xla_inspect agrees with it)"


@pytest.mark.task("op_census")
def test_census_sees_ops_inside_regions(kata):
    census = kata.op_census(_census_lowered("case"))
    assert _is_census(census), f"expected a Counter of str -> int, got {census!r}"
    with check:
        assert census["stablehlo.case"] == 2, (
            f"a switch whose third branch holds a cond: 2 case ops, got {census['stablehlo.case']}"
        )
    with check:
        assert census["stablehlo.exponential"] == 1 and census["stablehlo.tanh"] == 1, (
            "the inner cond's branches live in regions of a region"
        )
    with check:
        assert census["builtin.module"] == 0, "the module is the container, not an op to count"
    with check:
        assert census["func.func"] >= 1 and census["func.return"] >= 1, dict(census)


@pytest.mark.task("op_census")
def test_census_counts_every_function(kata):
    census = kata.op_census(_census_lowered("nested_calls"))
    assert _is_census(census), f"expected a Counter of str -> int, got {census!r}"
    walked = facts.walk_census(_census_lowered("nested_calls"))
    with check:
        assert census["func.func"] == walked["func.func"] >= 2, (
            f"{census['func.func']} functions, the module defines {walked['func.func']}: nested "
            "jit calls become private functions reached by func.call"
        )
    with check:
        assert census["stablehlo.sine"] == walked["stablehlo.sine"], (
            "the sine lives in a private function, count it there"
        )
    with check:
        assert census["chlo.erf"] == 0 and census["func.call"] == walked["func.call"], dict(census)
    other = kata.op_census(_census_lowered("chlo_and_tuple_out"))
    assert _is_census(other), f"expected a Counter of str -> int, got {other!r}"
    with check:
        assert other["chlo.erf"] == 1, f"chlo ops are operations too: {dict(other)}"


FRESH_PROGRAMS = 3


@pytest.mark.task("op_census")
def test_census_on_fresh_nested_programs(kata, fresh: Fresh):
    """Programs drawn afresh, five to seven control-flow ops deep around an op with a body of its
    own, a nested jit between them, a sharding constraint around some: no depth, no list of
    region-holding ops and no list of dialects carries over."""
    for _ in range(FRESH_PROGRAMS):
        fn, specs, what = nested_program(fresh)
        lowered = jax.jit(fn).lower(*specs)
        got, want = kata.op_census(lowered), facts.walk_census(lowered)
        assert _is_census(got), f"{what}: expected a Counter of str -> int, got {got!r}"
        assert +got == want, f"{what}: {_first_difference(got, want)} ({fresh.where()})"


@pytest.mark.task("op_census")
def test_census_is_your_own_walk(kata):
    """The task is the walk the lesson's toolkit census does: calling that census (or its
    iterator) answers with the toolkit, not with a walk you wrote."""
    with calls_seen(TOOLKIT_CENSUS) as called:
        for name in ("case", "nested_calls"):
            kata.op_census(_census_lowered(name))
    assert not called, (
        f"op_census {called[0]}: write the walk over operation -> regions -> blocks -> "
        "operations yourself"
    )
