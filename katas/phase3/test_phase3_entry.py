"""Phase 3 tests, tasks 3-4 (entry_parameter_layouts, entry_root): ENTRY's parameter layouts
and its ROOT, read from a bank of texts (bank.py) that differ in what a shortcut gets wrong:
parameters used out of order, scalar, unused and tuple-shaped parameters, non-default layouts,
tuple roots, hand-written modules whose ENTRY is not the last computation or holds dead
instructions before its ROOT; each text also as
its metamorphic variants. Expected values come from XLA's own C++ parser (jaxlib), from
`jax.stages` (`input_formats`, `out_info`, `output_formats`; kata_harness.oracles.hlo_stages) or
from the program itself.
"""

import jax
import pytest
from pytest_check import check

from kata_harness.oracles import hlo_stages as oracle
from kata_harness.xla_facts import xla_facts
from katas.phase3 import bank
from katas.phase3.programs import mlp_args

# --- task 3: entry_parameter_layouts ---------------------------------------------------------

LAYOUT_BANK = [
    "mlp",
    "mlp:unoptimized",
    "matmul",
    "looped",
    "mixed",
    "mixed:unoptimized",
    "branches",
    "hand",
]


def _layouts(kata, key: str) -> list:
    got = kata.entry_parameter_layouts(bank.text(key))
    assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
    return got


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_as_xla_reads_them(kata):
    for key in LAYOUT_BANK:
        got = _layouts(kata, key)
        expected = [layout for _, layout in bank.xla(key).params]
        with check:
            assert got == expected, f"{key}: got {got}, expected {expected} (parameter(N) order)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_of_optimized_mlp(kata):
    expected = [oracle.default_layout(leaf.ndim) for leaf in jax.tree.leaves(mlp_args())]
    got = _layouts(kata, "mlp")
    assert got == expected, f"got {got}, expected {expected} (row-major: minor-to-major)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_by_number(kata):
    expected = [oracle.default_layout(leaf.ndim) for leaf in jax.tree.leaves(mlp_args())]
    got = _layouts(kata, "mlp:unoptimized")
    assert got == expected, f"got {got}, expected {expected}: order by parameter(N)"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_are_read_not_assumed(kata):
    """jax's own record of the layouts it asked for; an unused input has none (it was dropped)."""
    for name in ("matmul", "mixed"):
        _, compiled = bank.compiled(name)
        expected = oracle.input_layouts(compiled)
        got = _layouts(kata, name)
        with check:
            assert got == expected, f"{name}: got {got}, expected {expected}: read each layout"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_of_scalar_and_tuple_parameters(kata):
    got = _layouts(kata, "hand")
    expected = ["{}", "({0,1}, {})", "{0,1}", "{0}"]
    assert got == expected, f"got {got}, expected {expected} (scalar: {{}}; tuple: its elements')"


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_hold_under_renaming_and_reordering(kata):
    """The layouts are facts of the module: relabelled names and reordered computations change
    nothing (XLA's parser reads each variant; its reading is the expected answer)."""
    for what, text, variant in bank.forms(LAYOUT_BANK):
        expected = variant.rename([layout for _, layout in xla_facts(text).params])
        got = kata.entry_parameter_layouts(text)
        with check:
            assert got == expected, (
                f"{what}: got {got}, expected {expected}: read parameter(N) and each layout, "
                "not the printed names or the order of the text"
            )


# --- task 4: entry_root ----------------------------------------------------------------------

ROOT_BANK = [
    "mlp",
    "mlp:unoptimized",
    "value_and_total",
    "looped",
    "mixed",
    "branches",
    "attention:unoptimized",
    "hand",
    "hand_nested",
    "hand_constants",
]


def _root(kata, key: str) -> tuple:
    got = kata.entry_root(bank.text(key))
    assert isinstance(got, tuple) and len(got) == 2, f"expected (opcode, shape), got {got!r:.80}"
    return got


@pytest.mark.task("entry_root")
def test_root_as_xla_reads_it(kata):
    for key in ROOT_BANK:
        got = _root(kata, key)
        expected = bank.xla(key).root
        with check:
            assert got == expected, f"{key}: got {got}, expected {expected}"


@pytest.mark.task("entry_root")
def test_root_shape_is_the_programs_result(kata):
    """The result's shapes from jax.stages (out_info, output_formats), not from the text."""
    for name in ("value_and_total", "mixed", "branches"):
        _, compiled = bank.compiled(name)
        expected = oracle.result_root(compiled)
        got = _root(kata, name)
        with check:
            assert got == expected, f"{name}: got {got}, expected {expected}"


@pytest.mark.task("entry_root")
def test_root_of_unoptimized_mlp(kata):
    got = _root(kata, "mlp:unoptimized")
    assert got == ("add", "f32[8,4]{1,0}"), f"got {got}: the last bias add, with its layout"


@pytest.mark.task("entry_root")
def test_root_of_optimized_mlp(kata):
    bank.cpu_only("the MLP's last bias add is a kLoop fusion on XLA:CPU")
    got = _root(kata, "mlp")
    assert got == ("fusion", "f32[8,4]{1,0}"), f"got {got}: the fusion that holds the bias add"


@pytest.mark.task("entry_root")
def test_two_results_make_a_tuple_root(kata):
    shapes = [(2, 3), ()]
    expected = (
        "("
        + ", ".join(
            f"f32[{','.join(map(str, s))}]" + (oracle.default_layout(len(s)) if s else "")
            for s in shapes
        )
        + ")"
    )
    got = _root(kata, "value_and_total")
    assert got == ("tuple", expected), f"got {got}, expected ('tuple', {expected!r})"


@pytest.mark.task("entry_root")
def test_root_holds_under_renaming_and_reordering(kata):
    """The ROOT of ENTRY, as XLA's parser reads each variant: names and order say nothing."""
    for what, text, variant in bank.forms(ROOT_BANK):
        expected = variant.rename(xla_facts(text).root)
        got = kata.entry_root(text)
        with check:
            assert got == expected, f"{what}: got {got}, expected {expected}"
