"""The texts phase 3's tests share: the bank's programs compiled once per session (their
unoptimized and optimized HLO, and the hand-written module), XLA's reading of each, each as its
metamorphic variants (every name relabelled, computations reordered, each confirmed by XLA's
parser), jax.stages' own texts of the three_texts programs; and the checks the test files share
(the backend a fact needs, a returned text that must be HLO)."""

import zlib
from collections import Counter
from functools import cache

import jax
import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import hlo_stages as oracle
from kata_harness.xla_facts import XlaFacts, xla_facts
from katas.phase3.hand_modules import HAND_CONSTANTS, HAND_NESTED
from katas.phase3.programs import (
    HAND_BRANCHES,
    HAND_WRITTEN,
    THREE_TEXT_PROGRAMS,
    bank_program,
)
from xla_inspect.errors import HloParseError
from xla_inspect.normalize import RULES, normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts
from xla_inspect.stablehlo import StableHloError, stablehlo_op_census


@cache
def compiled(name: str):
    """(lowered, compiled) of a test-owned program, compiled once per session."""
    jitted, args = bank_program(name)
    lowered = jitted.lower(*args)
    return lowered, lowered.compile()


@cache
def hlo_texts(name: str) -> tuple[str, str]:
    """(unoptimized, optimized) HLO of a test-owned program."""
    lowered, compiled_program = compiled(name)
    return lowered.as_text(dialect="hlo"), compiled_program.as_text()


def text(key: str) -> str:
    """A text of the bank: "hand", "hand_branches", "hand_nested", "hand_constants" (the
    hand-written modules), "<program>" (optimized) or "<program>:unoptimized"."""
    if key == "hand":
        return HAND_WRITTEN
    if key == "hand_branches":
        return HAND_BRANCHES
    if key == "hand_nested":
        return HAND_NESTED
    if key == "hand_constants":
        return HAND_CONSTANTS
    name, _, stage = key.partition(":")
    return hlo_texts(name)[0 if stage == "unoptimized" else 1]


def cpu_only(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact} (running on {jax.default_backend()})")


@cache
def xla(key: str) -> XlaFacts:
    """XLA's reading of a bank text (kata_harness.xla_facts)."""
    return xla_facts(text(key))


@cache
def variants(key: str) -> tuple[metamorphic.HloVariant, ...]:
    """The bank text's variants XLA's parser accepts: every computation and instruction relabelled
    (%n17, %c3), the computations reordered, both; seeded by the key (the same every run)."""
    found = tuple(metamorphic.variants(text(key), seed=zlib.crc32(key.encode())))
    assert found, f"{key}: no metamorphic variant XLA accepts"
    return found


def forms(keys):
    """(what, text, variant) for each variant of each key: a reading answer is a function of the
    module, so it must not change (or change only by the renaming) from one form to another."""
    for key in keys:
        seed = zlib.crc32(key.encode())
        for variant in variants(key):
            yield f"{key} ({variant.kind}, variant seed {seed})", variant.text, variant


@cache
def stages(program: str):
    """jax.stages' own texts of a THREE_TEXT_PROGRAMS entry, read structurally."""
    return oracle.read_stages(printed(program))


@cache
def printed(program: str) -> tuple[str, str, str]:
    """jax.stages' default prints of a THREE_TEXT_PROGRAMS entry (see default_prints)."""
    return default_prints(*THREE_TEXT_PROGRAMS[program])


def default_prints(f, args: tuple) -> tuple[str, str, str]:
    """(StableHLO, unoptimized HLO, optimized HLO) as jax.stages prints them with its default
    options: the lowered stage's as_text() and as_text(dialect="hlo"), the compiled stage's
    as_text(); the texts three_texts returns (no debug locations; the compiled module as the
    compiled stage prints it, not as another printer of the executable's module would)."""
    return oracle.printed_stages(f, args)


def first_difference(got: str, want: str) -> str:
    """Where a returned text first departs from the expected one: the line number and the
    returned line only (the expected text is not shown)."""
    got_lines, want_lines = got.splitlines(), want.splitlines()
    for number, (line, expected) in enumerate(zip(got_lines, want_lines, strict=False), 1):
        if line != expected:
            return f"line {number} reads {line[:160]!r}"
    if len(got_lines) > len(want_lines):
        return f"extra line {len(want_lines) + 1}: {got_lines[len(want_lines)][:160]!r}"
    return f"ends after line {len(got_lines)}, expected more"


def hlo_module(printed: str, what: str):
    try:
        return parse_hlo(printed)
    except HloParseError as error:
        pytest.fail(f"{what}: expected HLO text, got text that is not: {error}", pytrace=False)


def stablehlo_census(text: str, what: str):
    try:
        return stablehlo_op_census(text)
    except StableHloError as error:
        pytest.fail(
            f"{what}: expected StableHLO (an MLIR module), got text that is not: {error}",
            pytrace=False,
        )


def check_stages(texts: dict, want: tuple, what: str, prints: tuple[str, str, str]) -> None:
    """three_texts' answer against jax.stages' own texts of the program (oracle.stages): the
    StableHLO ops, and per HLO text its module name, opcodes (parameters too) and result; each
    text as its stage prints it by default (`prints`, default_prints): the same program printed
    with debug locations, or its compiled module printed by another printer than the compiled
    stage's as_text, is another text."""
    census = stablehlo_census(texts["stablehlo"], f"{what} stablehlo")
    want_census, want_hlo, want_optimized = want
    with check:
        assert census == want_census, f"{what}: stablehlo ops {dict(census)} differ"
    for stage, default in zip(("stablehlo", "hlo"), prints[:2], strict=True):
        with check:
            assert texts[stage] == default, (
                f"{what} {stage}: not the lowered stage's default print of this program "
                f"(as_text with default options, no debug locations): "
                f"{first_difference(texts[stage], default)}"
            )
    check_compiled_print(texts["optimized"], prints[2], what)
    for stage, want_module in (("hlo", want_hlo), ("optimized", want_optimized)):
        got = hlo_module(texts[stage], f"{what} {stage}")
        with check:
            assert got.name == want_module.name, f"{what} {stage}: module {got.name}"
        with check:
            assert opcode_counts(got) == opcode_counts(want_module), (
                f"{what} {stage}: opcodes {dict(opcode_counts(got))} are another program's"
            )
        with check:
            assert got.entry.root.shape == want_module.entry.root.shape, (
                f"{what} {stage}: result {got.entry.root.shape} is another program's"
            )
        with check:
            assert (odd := _odd_constant(got, want_module)) is None, (
                f"{what} {stage}: constant {odd} is not printed as this stage prints it by "
                "default (print options are part of the text)"
            )


def check_compiled_print(got: str, want: str, what: str) -> None:
    """three_texts' optimized text against the compiled stage's default print of the program
    (as_text), line by line, the records of where Python called from aside (_frames_aside)."""
    got, want = _frames_aside(got), _frames_aside(want)
    with check:
        assert got == want, (
            f"{what} optimized: not the compiled stage's default print of this program (as_text; "
            "its stack-frame tables and metadata, which name the caller's frames, aside): "
            f"{first_difference(got, want)}"
        )


_FRAME_RULES = tuple(r for r in RULES if r.name in ("strip_stack_frame_tables", "strip_metadata"))


def _frames_aside(text: str) -> str:
    """An optimized HLO text without what records where Python called from (xla_inspect's
    normalize rules strip_stack_frame_tables and strip_metadata): two compiles of one program
    from two callers differ there and nowhere else."""
    return normalize_hlo(text, _FRAME_RULES)


def _constant_literals(module) -> Counter:
    return Counter((i.shape, i.payload) for c in module for i in c if i.opcode == "constant")


def _odd_constant(got, want) -> str | None:
    """One constant of the returned module that the stage's default print does not hold (its
    shape and the start of its literal), or None: shown alone, never the expected literals."""
    for shape, literal in _constant_literals(got) - _constant_literals(want):
        return f"{shape} ({str(literal)[:40]!r})"
    return None
