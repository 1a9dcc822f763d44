"""Phase 8 tests, reading and predicting StableHLO: op counts read through MLIR, the HLO opcode
XLA converts each op to, which calls an exported function accepts and what a program lowers to.

Oracles (kata_harness.oracles.stablehlo): MLIR's own `Operation.walk` (and xla_inspect's census)
for op counts; XLA's StableHLO -> HLO conversion of tiny programs (JAX-lowered and hand-written
StableHLO, and every op of the dialect a tiny module instantiates) for op names; the exported
function itself, called, for what it accepts.
"""

from collections import Counter
from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness.fresh import Fresh
from kata_harness.oracles import stablehlo as facts
from kata_harness.predict import compiler_refused, predicted_entries
from katas.phase8.programs import (
    CENSUS_PROGRAMS,
    EXPORTED_CALLS,
    HAND_WRITTEN,
    KEPT,
    LOWERING_BANK,
    RENAMED,
    RESPELLED,
    column_sums,
    dialect_ops,
    probe_modules,
)
from xla_inspect.stablehlo import stablehlo_op_census


def _program(op: str):
    for bank in (RENAMED, RESPELLED, KEPT):
        if op in bank:
            return bank[op]
    raise KeyError(op)


@cache
def _lower(program):
    fn, specs = program
    return jax.jit(fn).lower(*specs)


def _lowered(op: str):
    return _lower(_program(op))


@cache
def _hlo_census(program) -> Counter:
    """Opcode census of XLA's own HLO conversion of a lowered program."""
    return facts.hlo_census(_lower(program))


@cache
def _hand_written(op: str) -> tuple[Counter, Counter]:
    return facts.hand_written_censuses(f"module {{{HAND_WRITTEN[op]}\n}}")


def _stablehlo_and_hlo(op: str) -> tuple[Counter, Counter]:
    """(op census of the StableHLO, opcode census of XLA's HLO conversion of it)."""
    if op in HAND_WRITTEN:
        return _hand_written(op)
    return _stablehlo_census(_program(op)), _hlo_census(_program(op))


@cache
def _stablehlo_census(program) -> Counter:
    return stablehlo_op_census(_lower(program))


def _check_mapping(kata, ops) -> None:
    found = {op: kata.hlo_opcode(op) for op in ops}
    for op, opcode in found.items():
        assert isinstance(opcode, str), f"{op}: expected a str, got {opcode!r}"
    for op, opcode in found.items():
        stablehlo, hlo = _stablehlo_and_hlo(op)
        want, got = stablehlo[op], hlo[opcode]
        with check:
            assert want > 0 and got == want, (
                f"{op} x{want} in StableHLO, but XLA's HLO has {opcode!r} x{got}: read the HLO "
                "opcodes"
            )


@cache
def _census_lowered(name: str):
    fn, specs = CENSUS_PROGRAMS[name]
    return jax.jit(fn).lower(*specs)


def _is_census(got) -> bool:
    return isinstance(got, Counter) and all(
        isinstance(k, str) and type(v) is int for k, v in got.items()
    )


# ---- task 1: op_census ------------------------------------------------------------------------


@pytest.mark.task("op_census")
def test_census_matches_mlir_walk(kata):
    found = {name: kata.op_census(_census_lowered(name)) for name in CENSUS_PROGRAMS}
    for name, got in found.items():
        assert _is_census(got), f"{name}: expected a Counter of str -> int, got {got!r}"
    for name, got in found.items():
        want = facts.walk_census(_census_lowered(name))
        with check:
            assert +got == want, f"{name}: got {dict(got)}, MLIR's walk finds {dict(want)}"


@pytest.mark.task("op_census")
def test_census_matches_library_on_nested_regions(kata):
    for op in ("stablehlo.case", "stablehlo.while", "stablehlo.reduce", "stablehlo.dot_general"):
        lowered = _lowered(op)
        got, want = kata.op_census(lowered), stablehlo_op_census(lowered)
        assert _is_census(got), f"expected a Counter of str -> int, got {got!r}"
        with check:
            assert +got == +want, f"{op} program: got {dict(got)}, expected {dict(want)}"


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


# ---- task 2: hlo_opcode -----------------------------------------------------------------------


@pytest.mark.task("hlo_opcode")
def test_renamed_ops(kata):
    _check_mapping(kata, RENAMED)


@pytest.mark.task("hlo_opcode")
def test_respelled_ops(kata):
    _check_mapping(kata, RESPELLED)


@pytest.mark.task("hlo_opcode")
def test_ops_that_keep_their_name(kata):
    _check_mapping(kata, KEPT)


@pytest.mark.task("hlo_opcode")
def test_ops_jax_does_not_emit(kata):
    _check_mapping(kata, HAND_WRITTEN)


# Fresh ops: the contract covers any op of the dialect, so each run draws its own from every op
# the dialect registers that a tiny module instantiates (programs.probe_modules): so many of each
# situation (renamed, one word or several; spelled by the rule, two words or three and more; one
# word kept), one of them an op no other test names where the situation has one.
FRESH_STRATA = {
    "renamed, one word": 1,
    "renamed, several words": 1,
    "two words, by the rule": 7,
    "three words or more, by the rule": 8,
    "one word, kept": 7,
}


@cache
def _fresh_bank() -> dict[str, str]:
    """op -> the opcode of XLA's conversion of it, for every dialect op some module instantiates
    (MLIR parses and verifies the module first, with the op in it once)."""
    return facts.converted_ops(dialect_ops(), probe_modules)


def _situation(op: str, opcode: str) -> str:
    name = op.removeprefix("stablehlo.")
    words = name.count("_") + 1
    if opcode != name.replace("_", "-"):
        return "renamed, one word" if words == 1 else "renamed, several words"
    if words == 1:
        return "one word, kept"
    return "two words, by the rule" if words == 2 else "three words or more, by the rule"


def _fresh_ops(fresh: Fresh) -> list[tuple[str, str]]:
    """(op, its situation), FRESH_STRATA[situation] of each, shuffled."""
    named = {*RENAMED, *RESPELLED, *KEPT, *HAND_WRITTEN}
    pools = {situation: [] for situation in FRESH_STRATA}
    for op, opcode in sorted(_fresh_bank().items()):
        pools[_situation(op, opcode)].append(op)
    drawn = []
    for situation, count in FRESH_STRATA.items():
        pool = pools[situation]
        assert len(pool) >= count, f"the dialect gave {len(pool)} ops {situation} XLA converts"
        unnamed = [op for op in pool if op not in named]
        first = [fresh.choice(unnamed)] if unnamed else []
        rest = fresh.sample([op for op in pool if op not in first], count - len(first))
        drawn += [(op, situation) for op in first + rest]
    fresh.shuffle(drawn)
    return drawn


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_on_fresh_ops_of_the_dialect(kata, fresh):
    """Ops drawn from the whole dialect, each converted by XLA here: a table of the ops met while
    practising does not carry over."""
    bank = _fresh_bank()
    for op, situation in _fresh_ops(fresh):
        got = kata.hlo_opcode(op)
        assert got == bank[op], (
            f"{op} ({situation}): you said {got!r}, XLA converts it to {bank[op]!r} "
            f"({fresh.where()})"
        )


# ---- predictions: hlo_opcode and predict_accepts answer without compiling ----------------------


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_is_predicted_from_the_name(kata):
    ops = [*RENAMED, *RESPELLED, *list(KEPT)[:3], *HAND_WRITTEN]
    with compiler_refused("hlo_opcode", also=[(jax.export, "export"), (jax.export, "deserialize")]):
        for op in ops:
            kata.hlo_opcode(op)


@cache
def _accepts(name: str) -> bool:
    symbolic, dtype, shape = EXPORTED_CALLS[name]
    return facts.exported_call_runs(column_sums, symbolic, dtype, shape)


@pytest.mark.task("predict_accepts")
def test_predict_accepts_matches_the_exported_calls(kata):
    predicted = predicted_entries("predict_accepts", kata.predict_accepts(), EXPORTED_CALLS)
    for name, runs in predicted.items():
        with check:
            assert type(runs) is bool, f"{name}: expected a bool, got {runs!r}"
        with check:
            assert runs == _accepts(name), (
                f"{name}: you predicted {'it runs' if runs else 'a rejection'}, the exported "
                f"function {'ran' if _accepts(name) else 'rejected the call'}"
            )


@pytest.mark.task("predict_accepts")
def test_predict_accepts_does_not_export(kata):
    with compiler_refused(
        "predict_accepts", also=[(jax.export, "export"), (jax.export, "deserialize")]
    ):
        kata.predict_accepts()


# ---- predict_lowering -------------------------------------------------------------------------


@cache
def _lowered_census(name: str) -> dict[str, int]:
    """stablehlo.* ops of the bank program's lowered module, counted by xla_inspect's walk."""
    fn, specs = LOWERING_BANK[name]
    return facts.stablehlo_ops(jax.jit(fn).lower(*specs))


@pytest.mark.task("predict_lowering")
def test_predict_lowering_matches_the_lowered_modules(kata):
    predicted = predicted_entries("predict_lowering", kata.predict_lowering(), LOWERING_BANK)
    for name, census in predicted.items():
        assert isinstance(census, dict), f"{name}: expected a dict, got {census!r}"
        with check:
            assert dict(census) == _lowered_census(name), (
                f"{name}: you predicted {dict(sorted(census.items()))}, the lowered module "
                f"has {dict(sorted(_lowered_census(name).items()))}"
            )


@pytest.mark.task("predict_lowering")
def test_predict_lowering_does_not_lower(kata):
    with compiler_refused("predict_lowering"):
        kata.predict_lowering()
