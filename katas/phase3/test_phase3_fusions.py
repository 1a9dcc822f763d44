"""Phase 3 tests, tasks 5-6 (fusion_contents, constants): what each fusion runs and which
constants a module holds, read from a bank of texts (bank.py) with fusions in while and
conditional bodies (also named true_computation=/false_computation=), in a computation nothing
calls, a fusion nested in a fused computation, a multi-output fusion, a reducer shared by two
reduces, fusions nested three deep, a fused select-and-scatter (select=, scatter=), one fused
computation called by two fusions (hand_modules.py), constants of every element type (f8,
complex, tuple-shaped too) and one name in two computations, in optimized and unoptimized texts;
each text also as its metamorphic variants. Expected values come from XLA's own C++ parser (jaxlib,
kata_harness.xla_facts) or from the program itself.
"""

import math
from collections import Counter

import pytest
from pytest_check import check

from kata_harness.xla_facts import xla_facts
from katas.phase3 import bank
from katas.phase3.programs import TABLE
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

# --- task 5: fusion_contents -----------------------------------------------------------------

FUSION_BANK = [
    "mlp",
    "attention",
    "looped",
    "mixed",
    "branches",
    "hand",
    "hand_branches",
    "hand_nested",
    "hand_constants",
]


def _contents(kata, key: str) -> dict:
    return _contents_of(kata, bank.text(key))


def _contents_of(kata, text: str) -> dict:
    got = kata.fusion_contents(text)
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    for kind, counts in got.items():
        assert isinstance(counts, Counter), f"{kind}: expected a Counter, got {counts!r:.60}"
    return got


@pytest.mark.task("fusion_contents")
def test_fusion_contents_as_xla_calls_them(kata):
    """XLA's own reading of each module: every fusion in every computation (called or not), the
    computations its calls= names and what they call in turn (to_apply=), once per call."""
    for key in FUSION_BANK:
        expected = {kind: dict(counts) for kind, counts in bank.xla(key).fusions.items()}
        got = {kind: dict(+counts) for kind, counts in _contents(kata, key).items()}
        with check:
            assert sorted(got) == sorted(expected), f"{key}: kinds {sorted(got)}"
        for kind, want in expected.items():
            with check:
                assert got.get(kind) == want, f"{key} {kind}: got {got.get(kind)}, expected {want}"


@pytest.mark.task("fusion_contents")
def test_mlp_fusion_contents(kata):
    bank.cpu_only("XLA:CPU has only kLoop and kCustom fusions")
    contents = _contents(kata, "mlp")
    with check:
        assert set(contents) == {"kLoop", "kCustom"}, f"kinds {sorted(contents)}"
    with check:
        assert dict(contents.get("kCustom", {})) == {"dot": 2}, "each matmul is its own kCustom"
    loop = contents.get("kLoop", Counter())
    for opcode, count in (("maximum", 1), ("add", 2), ("dot", 0), ("parameter", 0)):
        with check:
            assert loop[opcode] == count, f"kLoop {opcode} x{loop[opcode]}, expected {count}"


@pytest.mark.task("fusion_contents")
def test_attention_fusion_contents(kata):
    bank.cpu_only("XLA:CPU has only kLoop and kCustom fusions")
    contents = _contents(kata, "attention")
    loop = contents.get("kLoop", Counter())
    with check:
        assert set(contents) <= {"kLoop", "kCustom"}, f"kinds {sorted(contents)}"
    with check:
        assert contents.get("kCustom", Counter())["dot"] == 2, "q@k.T and p@v"
    for opcode in ("exponential", "reduce"):
        with check:
            assert loop[opcode] >= 1, f"softmax's {opcode} belongs in a kLoop fusion"
    with check:
        assert sum(c["transpose"] for c in contents.values()) == 0, "k.T became a dot dimension"


@pytest.mark.task("fusion_contents")
def test_fusions_inside_loop_and_branch_bodies(kata):
    bank.cpu_only("XLA:CPU keeps these fusions inside the while body and the branches")
    for key, opcodes in (("looped", ("sine", "tanh")), ("branches", ("sine", "cosine"))):
        module = parse_hlo(bank.text(key))
        assert opcode_counts(module, entry_only=True)[opcodes[0]] == 0, "test program changed"
        contents = _contents(kata, key)
        for opcode in opcodes:
            found = sum(c[opcode] for c in contents.values())
            with check:
                assert found == 1, (
                    f"{key}: {opcode} x{found}, expected 1: fusions live in every "
                    "computation, loop and branch bodies too"
                )


@pytest.mark.task("fusion_contents")
def test_nested_fusion_counts_for_both_kinds(kata):
    contents = _contents(kata, "hand")
    inner = {
        "exponential": 1,
        "constant": 1,
        "reduce": 1,
        "broadcast": 1,
        "multiply": 1,
        "add": 1,
    }  # the kInput fusion's computation plus its reducer's add
    outer = Counter(inner) + Counter(fusion=1, multiply=2, broadcast=2, constant=1)
    with check:
        assert dict(+contents.get("kInput", Counter())) == inner, (
            f"kInput: got {dict(contents.get('kInput', {}))}, expected {inner}"
        )
    with check:
        assert dict(+contents.get("kLoop", Counter())) == dict(outer), (
            f"kLoop: got {dict(contents.get('kLoop', {}))}, expected {dict(outer)}"
        )


@pytest.mark.task("fusion_contents")
def test_branches_multi_output_and_shared_reducer(kata):
    """The second hand-written module: branches named true_computation=/false_computation=, a
    computation nothing calls, a fusion returning a tuple, one reducer called by two reduces."""
    contents = {kind: dict(+counts) for kind, counts in _contents(kata, "hand_branches").items()}
    expected = {
        "kLoop": {
            "sine": 1,
            "cosine": 1,
            "negate": 1,
            "multiply": 1,
            "constant": 1,
            "broadcast": 1,
        },
        "kInput": {"reduce": 2, "add": 2, "multiply": 1, "constant": 1, "tuple": 1},
        "kOutput": {"subtract": 1, "constant": 1, "broadcast": 1},
    }
    for kind, why in (
        ("kLoop", "the fusions of both branches"),
        ("kInput", "two reduces each call the reducer, and the fused ROOT is a tuple"),
        ("kOutput", "a fusion in a computation nothing calls"),
    ):
        with check:
            assert contents.get(kind) == expected[kind], f"{kind}: {why}"


@pytest.mark.task("fusion_contents")
def test_fusion_contents_hold_under_renaming_and_reordering(kata):
    """Counts stay what they are in the printed module when every computation and instruction is
    relabelled and the computations are printed in another order XLA accepts: a fusion finds its
    computation, and a reduce its reducer, by the name it calls, not by position or by spelling."""
    for key in FUSION_BANK:
        want = {kind: dict(counts) for kind, counts in bank.xla(key).fusions.items()}
        for what, text, variant in bank.forms([key]):
            expected = variant.rename(want)
            got = {kind: dict(+counts) for kind, counts in _contents_of(kata, text).items()}
            with check:
                assert got == expected, f"{what}: got {got}, expected {expected}"


# --- task 6: constants -----------------------------------------------------------------------

CONSTANT_BANK = [
    "scale_and_shift",
    "scale_and_shift:unoptimized",
    "attention",
    "looped",
    "branches",
    "branches:unoptimized",
    "mixed",
    "rotate",
    "long_table",
    "long_table:unoptimized",
    "hand",
    "hand_branches",
    "hand_nested",
    "hand_constants",
]


def _constants(kata, key: str) -> list:
    return _constants_of(kata, bank.text(key))


def _constants_of(kata, text: str) -> list:
    got = kata.constants(text)
    assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
    for item in got:
        assert isinstance(item, tuple) and len(item) == 2, f"expected (shape, literal): {item!r}"
    return got


@pytest.mark.task("constants")
def test_constants_as_xla_counts_them(kata):
    for key in CONSTANT_BANK:
        shapes = Counter(shape for shape, _ in _constants(kata, key))
        expected = bank.xla(key).constants
        with check:
            assert shapes == expected, (
                f"{key}: constants by shape {dict(shapes)}, expected "
                f"{dict(expected)} (every computation, each once)"
            )


@pytest.mark.task("constants")
def test_constant_literals_as_xla_prints_them(kata):
    """Each constant's literal as XLA prints it (a complex literal has parentheses of its own),
    names with or without %, equal constants in one computation each counted."""
    for key in CONSTANT_BANK:
        found = Counter(_constants(kata, key))
        expected = bank.xla(key).literals
        extra, missing = found - expected, expected - found
        with check:
            assert not extra and not missing, (
                f"{key}: {sum(extra.values())} of your constants are not the module's "
                f"(e.g. {next(iter(extra), None)}), {sum(missing.values())} of its are missing"
            )


@pytest.mark.task("constants")
def test_constants_inside_and_outside_fusions(kata):
    found = _constants(kata, "scale_and_shift")
    table = (f"f32[{TABLE.size}]{{0}}", "{" + ", ".join(f"{v:g}" for v in TABLE) + "}")
    with check:
        assert ("f32[]", "0.5") in found, f"the scalar 0.5 (in a fused computation): {found}"
    with check:
        assert table in found, f"the closed-over array {table}: {found}"


@pytest.mark.task("constants")
def test_attention_scale_is_folded(kata):
    literals = [literal for _, literal in _constants(kata, "attention")]
    scale = 1 / math.sqrt(16)
    with check:
        assert f"{scale:g}" in literals, f"dividing by sqrt(16) became a multiply: {literals}"
    with check:
        assert "-inf" in literals, f"the max-reduce starts from -inf: {literals}"


@pytest.mark.task("constants")
def test_constants_of_every_dtype_and_computation(kata):
    found = Counter(_constants(kata, "branches"))
    for constant in (
        ("s32[]", "7"),
        ("s32[]", "2"),
        ("f32[]", "1.5"),
        ("f32[]", "3"),
        ("f32[]", "-1"),
    ):
        with check:
            assert found[constant] == 1, f"{constant} (branch, int or bf16 code) x{found[constant]}"
    hand = Counter(_constants(kata, "hand"))
    expected = Counter(
        {
            ("f32[]", "0"): 1,
            ("f32[]", "0.5"): 1,
            ("f32[2]{0}", "{1, -2}"): 1,
            ("s32[]", "4"): 2,
            ("pred[]", "true"): 1,
            ("f16[]", "0.25"): 1,
            ("s32[2,2]{1,0}", "{ { 1, 2 }, { 3, 4 } }"): 1,
        }
    )
    with check:
        assert hand == expected, f"hand-written module: got {dict(hand)}, expected {dict(expected)}"


@pytest.mark.task("constants")
def test_constants_hold_under_renaming_and_reordering(kata):
    """XLA's count of constants by shape in each variant, and the same literals as the printed
    module gives: relabelling and reordering the computations move no constant."""
    for key in CONSTANT_BANK:
        printed = Counter(_constants(kata, key))
        for what, text, _ in bank.forms([key]):
            found = Counter(_constants_of(kata, text))
            expected = xla_facts(text).constants
            shapes = Counter(shape for shape, _ in found.elements())
            with check:
                assert shapes == expected, (
                    f"{what}: constants by shape {dict(shapes)}, expected {dict(expected)}"
                )
            with check:
                assert found == printed, (
                    f"{what}: {sorted(found.elements())} differ from the printed module's "
                    f"{sorted(printed.elements())}: the same constants under other names"
                )
