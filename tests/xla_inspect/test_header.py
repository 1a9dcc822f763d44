"""check_module_attributes agrees with XLA's parser on the `HloModule name, key=value` header.

Every rule is a pair of lists in header_cases.py: header attributes XLA accepts and ones it
rejects, several spellings each, run through jaxlib's `_hlo.hlo_module_from_text` (in a helper
process, so a header that aborts XLA fails one case, not the run) and through the checker on
the attributes as the reader keeps them. Real headers (the corpus, the recordings, the
snapshots of jax 0.10-0.12) must all pass.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kata_harness import oracles, versions
from xla_inspect.hlo.header import MODULE_ATTRIBUTES
from xla_inspect.hlo.lexical import split_attributes
from xla_inspect.hlo.reader import check_module_attributes
from xla_inspect.parse import parse_hlo

from .header_cases import ACCEPTED, BODY, HALFWAY, LAYOUT, REJECTED, XLA_ABORTS

pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def _variants(count: int) -> list[str]:
    """`count` seeded variants (`key=value`) of the real headers' attributes and a few more:
    whitespace put between characters, or one or two characters deleted, inserted or replaced
    with a token of the header grammar. Output indices are not mutated (the body has two)."""
    paths = [*HERE.glob("corpus/*.hlo"), *ROOT.glob("katas/phase1[12]/recorded/*.hlo")]
    values: dict[str, set[str]] = {
        "buffer_donor": {"{ (0, {}), (1, {0}) }"},
        "debug_attributes": {'{ {"x" {0}}: ({op_id=1, partitioned=true}, {log_mode=default}) }'},
        "origin_recovery_table": {'{ {"a" {1}}: {"b" {}} {"c"}: {"d"} }'},
        "backend_config": {'{"a": {"b": "}"}}'},
    }
    for path in sorted(paths):
        # (the whole module: its output indices are of its own result, not BODY's)
        for key, value in parse_hlo(path.read_text()).attributes.items():
            if len(value) < 2000 and key != "input_output_alias":
                values.setdefault(key, set()).add(value)
    tokens = [*"{}()[],:=-> 0123456789aefstxTSLEDM#*<?", "true", "f32", "s32", "{}", "may-alias"]
    rng = random.Random(13)
    found: list[str] = []
    while len(found) < count:
        key = rng.choice(sorted(values))
        value = rng.choice(sorted(values[key]))
        chars = list(value)
        spaces = rng.random() < 0.5
        for _ in range(rng.randint(1, 3 if spaces else 2)):
            at = rng.randrange(len(chars) + 1)
            roll = rng.random()
            if spaces:
                chars.insert(at, rng.choice([" ", "  ", "\n"]))
            elif roll < 0.4 and at < len(chars):
                del chars[at]
            elif roll < 0.7 or at == len(chars):
                chars.insert(at, rng.choice(tokens))
            else:
                chars[at] = rng.choice(tokens)
        case = f"{key}={''.join(chars)}"
        # one attribute still, and no '(' without its parameter number (XLA's verdict on that
        # is by chance: test_an_alias_without_a_parameter_number_is_refused)
        if [k for k, _ in split_attributes(case)] == [key] and not re.search(r"\(\s*,", case):
            found.append(case)
    return found


VARIANTS = _variants(150)


def _xla_verdicts(texts: list[str]) -> list[str]:
    """XLA's verdict on each text ('accepted', 'rejected <message>' or 'aborted'), each read
    by the parser in a helper process (kata_harness.xla_child), where an abort is a verdict."""
    verdicts = []
    for verdict in oracles.xla_verdicts(texts):
        if verdict.kind == "rejected":
            verdicts.append("rejected " + verdict.message.replace("\n", " ")[:2000])
        else:
            verdicts.append("accepted" if verdict.kind == "accepted" else "aborted")
    return verdicts


@pytest.fixture(scope="module")
def xla() -> dict[str, str]:
    """XLA's verdict on every case, keyed by the header's attribute text; '' holds its verdict
    on an unknown attribute, whose message lists the attributes it allows."""
    # (not XLA_ABORTS: after each, the helper's parser is imported again in a new process)
    rejected = [case for case in REJECTED if case not in XLA_ABORTS]
    cases = ["bogus=1", *ACCEPTED, *rejected, *(LAYOUT + value for value in HALFWAY), *VARIANTS]
    verdicts = _xla_verdicts([f"HloModule m, {case}{BODY}" for case in cases])
    return {("" if case == "bogus=1" else case): v for case, v in zip(cases, verdicts, strict=True)}


def _xla_names(xla: dict[str, str]) -> set[str]:
    listed = re.search(r"Allowed attributes: (\w+(?:, \w+)*)", xla[""])
    assert listed is not None, xla[""]
    return set(listed.group(1).split(", "))


def _ours(case: str) -> tuple[str, str] | None:
    """The checker's verdict on the attributes `case` lists (`k=v, k2=v2`)."""
    return check_module_attributes(dict(split_attributes(case)))


def _skip_unless_xla_lists(case: str, xla: dict[str, str]) -> None:
    missing = sorted({key for key, _ in split_attributes(case)} - _xla_names(xla))
    if missing and case not in REJECTED:  # a rejected case stays rejected
        pytest.skip(f"this jaxlib's parser lists no module attribute {', '.join(missing)}")


def test_names_are_what_xla_lists(xla: dict[str, str]) -> None:
    ours = check_module_attributes({"bogus": "1"})
    assert ours is not None
    listed = set(ours[1].removeprefix("a module attribute: ").split(", "))
    assert _xla_names(xla) <= listed
    if versions.checked("xla-module-attribute-list"):  # older parsers know fewer
        with versions.fact("xla-module-attribute-list"):
            assert listed == _xla_names(xla)


@pytest.mark.parametrize("case", ACCEPTED)
def test_accepted_by_both(case: str, xla: dict[str, str]) -> None:
    _skip_unless_xla_lists(case, xla)
    assert xla[case] == "accepted"
    assert _ours(case) is None


def _assert_ours_rejects(case: str) -> None:
    problem = _ours(case)
    assert problem is not None
    key, expected = problem
    assert case.startswith(f"{key}=") or f", {key}=" in case
    assert expected and "\n" not in expected


@pytest.mark.parametrize("case", [case for case in REJECTED if case not in XLA_ABORTS])
def test_rejected_by_both(case: str, xla: dict[str, str]) -> None:
    assert xla[case].startswith("rejected") or xla[case] == "aborted"
    _assert_ours_rejects(case)


@pytest.mark.parametrize("case", XLA_ABORTS)
def test_rejected_by_the_reader_where_xla_aborts(case: str) -> None:
    """What XLA aborts on (checked once in CI by the battery below) the reader rejects."""
    _assert_ours_rejects(case)


@pytest.mark.battery  # each abort starts the helper's parser process again: CI runs it once
def test_xla_aborts_or_rejects_where_the_reader_rejects() -> None:
    verdicts = _xla_verdicts([f"HloModule m, {case}{BODY}" for case in XLA_ABORTS])
    assert all(v.startswith("rejected") or v == "aborted" for v in verdicts), verdicts


@pytest.mark.parametrize("case", VARIANTS)
def test_variants_of_real_headers_as_xla_reads_them(case: str, xla: dict[str, str]) -> None:
    _skip_unless_xla_lists(case, xla)
    assert (_ours(case) is None) == (xla[case] == "accepted")


def test_variants_hold_both_verdicts(xla: dict[str, str]) -> None:
    accepted = sum(xla[case] == "accepted" for case in VARIANTS)
    assert 20 <= accepted <= len(VARIANTS) - 20


@pytest.mark.parametrize("value", HALFWAY)
def test_layouts_read_halfway_as_xla_reads_them(value: str, xla: dict[str, str]) -> None:
    accepted = xla[LAYOUT + value] == "accepted"
    assert (check_module_attributes({"entry_computation_layout": value}) is None) == accepted


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("entry_computaton_layout", "entry_computation_layout"),
        ("is_schedulde", "is_scheduled"),
        ("input_output_aliases", "input_output_alias"),
        ("num_partition", "num_partitions"),
        ("frontend_attribute", "frontend_attributes"),
    ],
)
def test_misspelt_name_gets_a_suggestion(name: str, suggestion: str) -> None:
    problem = check_module_attributes({"is_scheduled": "true", name: "{}"})
    assert problem is not None
    assert problem[0] == name
    assert f"did you mean '{suggestion}'" in problem[1]
    assert "alias_passthrough_params" in problem[1] and "replica_count" in problem[1]


def test_unknown_name_lists_the_alternatives() -> None:
    problem = check_module_attributes({"calls": "main"})
    assert problem is not None and problem[0] == "calls"
    assert "did you mean" not in problem[1]
    assert "entry_computation_layout" in problem[1] and "input_output_alias" in problem[1]


@pytest.mark.parametrize(
    ("attributes", "key", "says"),
    [
        ({"is_scheduled": "ttrue"}, "is_scheduled", "true or false"),
        ({"replica_count": "4.0"}, "replica_count", "integer"),
        (
            {"entry_computation_layout": "{(f32[2,3]{1})->f32[2,3]{1,0}}"},
            "entry_computation_layout",
            "a layout listing 2 dimensions for [2,3], not 1",
        ),
        (
            {"entry_computation_layout": "{(f23[2,3]{1,0})->f32[2,3]{1,0}}"},
            "entry_computation_layout",
            "a shape such as f32[2,3]{1,0}",
        ),
        ({"input_output_alias": "{ {0}: (0, {}, maybe) }"}, "input_output_alias", "must-alias"),
        ({"frontend_attributes": "{a=b}"}, "frontend_attributes", "JSON dict"),
    ],
)
def test_value_problem_names_what_was_expected(
    attributes: dict[str, str], key: str, says: str
) -> None:
    problem = check_module_attributes({"num_partitions": "1", **attributes})
    assert problem is not None
    assert problem[0] == key and says in problem[1]


REAL = sorted(
    [*HERE.glob("corpus/*.hlo"), *ROOT.glob("katas/phase1[12]/recorded/*.hlo")]
    + [
        p
        for p in ROOT.glob("snapshots/*/*/katas/*/*/*.txt")
        if p.read_text().startswith("HloModule")
    ]
)


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_real_header_passes(path: Path) -> None:
    attributes = parse_hlo(path.read_text()).attributes
    assert attributes
    assert check_module_attributes(attributes) is None


BANK = sorted((HERE / "fixtures" / "bank").glob("*valid_header_*.hlo"))


@pytest.mark.parametrize("path", BANK, ids=lambda p: p.name)
def test_bank_header_fixtures_say_what_xla_says(path: Path) -> None:
    """The header fixtures of the bank (test_oracle checks the reader's whole verdict on them):
    the checker's verdict on the header alone is the one the file name states."""
    lines = path.read_text().splitlines(keepends=True)
    header = "".join(line for line in lines if not line.startswith("//")).partition("\n\n")[0]
    assert header.startswith("HloModule ") and "/*" not in header and "//" not in header
    problem = _ours(header.partition(",")[2])
    assert (problem is None) == path.name.startswith("valid_")


def test_bank_has_header_fixtures_of_both_kinds() -> None:
    names = [p.name for p in BANK]
    assert sum(n.startswith("valid_") for n in names) >= 4
    assert sum(n.startswith("invalid_") for n in names) >= 8


@pytest.mark.parametrize("value", ["{ {0}: (, {}) }", "{ {0}: (0, {}), {1}: (, {0}) }"])
def test_an_alias_without_a_parameter_number_is_refused(value: str) -> None:
    """XLA's parser reads on without the number and aliases whatever its unset int holds (it
    accepts or rejects by chance), so this verdict is not XLA's: the checker refuses it."""
    problem = check_module_attributes({"input_output_alias": value})
    assert problem is not None and "a parameter number" in problem[1]
    donor = value.replace("{0}: ", "").replace("{1}: ", "")
    problem = check_module_attributes({"buffer_donor": donor})
    assert problem is not None and "a parameter number" in problem[1]


_PIECES = [*'{}()[],:=->" 0123456789aefsuxTSLEDMPC#*<?~+_.\\', "true", "f32", "s32", "token"]
_PIECES += ["b(", "may-alias", "op_id=", "log_mode=", "HloModule m", "ENTRY"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(sorted(MODULE_ATTRIBUTES)),
    value=st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
)
def test_any_value_gets_a_verdict(name: str, value: str) -> None:
    """Never an exception: None or (the name, one line)."""
    problem = check_module_attributes({name: value})
    assert problem is None or (problem[0] == name and "\n" not in problem[1])


def test_a_long_entry_layout_is_read_to_its_end() -> None:
    """An entry layout of 20,000 parameters (0.5 MB) is read through, and a wrong layout at its
    end is found (the reader moves a cursor; it never copies the rest of the text)."""
    shapes = ", ".join(f"f32[{i % 7 + 1},{i % 5 + 1}]{{1,0:T(8,128)}}" for i in range(20_000))
    value = f"{{({shapes})->(f32[2]{{0}}, s32[])}}"
    assert check_module_attributes({"entry_computation_layout": value}) is None
    broken = value[:-2] + ", f32[2]{1,0})}"
    problem = check_module_attributes({"entry_computation_layout": broken})
    assert problem is not None and "a layout listing 1 dimension for [2], not 2" in problem[1]
