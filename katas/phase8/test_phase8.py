"""Phase 8 tests, reading and predicting StableHLO: the HLO opcode XLA converts each op to and
what a program lowers to (the op census is in test_phase8_census.py, which calls an exported
function accepts in test_phase8_accepts.py).

Oracles (kata_harness.oracles.stablehlo): xla_inspect's census for the ops of a program; XLA's
StableHLO -> HLO conversion of tiny programs (JAX-lowered and hand-written StableHLO, and every op
of the dialect a tiny module instantiates) for op names.
"""

import re
from collections import Counter
from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness.oracles import stablehlo as facts
from kata_harness.predict import compiler_refused, predicted_entries
from katas.phase8.programs import (
    HAND_WRITTEN,
    KEPT,
    LOWERING_BANK,
    RENAMED,
    RESPELLED,
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


# Every op of the dialect: the contract covers any op, so the test asks for each one the dialect
# registers that a tiny module instantiates (programs.probe_modules), in an order drawn afresh:
# a table of the ops met while practising, or a belief about one family of ops (collectives,
# linear algebra, batch norms), does not carry over. So many of each situation must be there
# (renamed, one word or several; spelled by the rule, two words or three and more; one word kept).
SITUATIONS = {
    "renamed, one word": 1,
    "renamed, several words": 1,
    "two words, by the rule": 7,
    "three words or more, by the rule": 8,
    "one word, kept": 7,
}


@cache
def _dialect_bank() -> dict[str, str]:
    """op -> the opcode of XLA's conversion of it, for every dialect op some module instantiates
    (MLIR parses and verifies the module first, with the op in it once)."""
    return facts.converted_ops(dialect_ops(), probe_modules)


def _situation(op: str, opcode: str) -> str:
    name = op.removeprefix("stablehlo.")
    words = len(re.split(r"[_-]", name))  # one op's name is written with hyphens already
    if opcode != name.replace("_", "-"):
        return "renamed, one word" if words == 1 else "renamed, several words"
    if words == 1:
        return "one word, kept"
    return "two words, by the rule" if words == 2 else "three words or more, by the rule"


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_on_every_op_of_the_dialect(kata, fresh):
    """Every op of the dialect XLA converts here, asked in a fresh order."""
    bank = _dialect_bank()
    found = Counter(_situation(op, opcode) for op, opcode in bank.items())
    for situation, count in SITUATIONS.items():
        assert found[situation] >= count, (
            f"the dialect gave {found[situation]} ops {situation} that XLA converts"
        )
    # a name the dialect writes with hyphens (cross-replica-sum) is asked too: no spelling
    # rule covers it
    unasked = [op for op in dialect_ops() if "-" in op and op not in bank]
    assert not unasked, f"no probe module converts {unasked}"
    ops = sorted(bank)
    fresh.shuffle(ops)
    for op in ops:
        got = kata.hlo_opcode(op)
        assert got == bank[op], (
            f"{op} ({_situation(op, bank[op])}): you said {got!r}, XLA converts it to "
            f"{bank[op]!r} ({fresh.where()})"
        )


# ---- predictions: hlo_opcode answers without compiling ---------------------------------------


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_is_predicted_from_the_name(kata):
    ops = [*RENAMED, *RESPELLED, *list(KEPT)[:3], *HAND_WRITTEN]
    with compiler_refused("hlo_opcode", also=[(jax.export, "export"), (jax.export, "deserialize")]):
        for op in ops:
            kata.hlo_opcode(op)


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
