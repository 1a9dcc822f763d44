"""Phase 7 tests, tasks conditionals, while_loops and loop_primitives: control flow read from
real jaxprs and HLO.

IR-reading tasks run on a bank of programs (bank.py: nested loops, a loop inside a cond branch,
switches with 3 and 5 branches, unrolled and partly unrolled fori_loops, whiles hidden behind CPU
calls, a pred-indexed conditional that XLA's own StableHLO->HLO conversion produces). The
expected counts come from XLA's C++ HloModule of the same compile (opcodes and operands), not
from text.
"""

from collections import Counter

import jax
import pytest
from pytest_check import check

from kata_harness import oracles, xla_counts
from kata_harness.oracles import control_flow as oracle
from katas.phase7 import bank
from katas.phase7.hlo_draws import draw_control_module
from katas.phase7.jaxpr_draws import chain, draw_pieces, listed
from katas.phase7.programs import CONDITIONAL_PROGRAMS, JAXPR_PROGRAMS, WHILE_PROGRAMS
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo


def _is_conditional_list(got) -> bool:
    return isinstance(got, list) and all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], int)
        for t in got
    )


@pytest.mark.task("conditionals")
def test_conditionals_match_xla(kata):
    found = {program: kata.conditionals(bank.hlo(program)) for program in CONDITIONAL_PROGRAMS}
    for program, got in found.items():
        assert _is_conditional_list(got), f"{program}: expected a list of (str, int), got {got!r}"
    for program, got in found.items():
        want = bank.xla_conditionals(program)
        with check:
            assert Counter(got) == want, (
                f"{program}: got {got}, XLA's module holds {dict(want)} as (index type, "
                "branches); look in every computation, read the index operand's type"
            )
    facts = {
        "cond": ([("s32", 2)], "the bool predicate is converted to an s32 branch index"),
        "switch3": ([("s32", 3)], "a switch over 3 functions"),
        "switch5": ([("s32", 5)], "a switch over 5 functions"),
        "cond_in_scan": ([("s32", 2)], "the cond lives in the loop body"),
        "no_control_flow": ([], "jnp.where is a select, not a conditional"),
        "shared_branches": ([("s32", 3)], "three branches, two of them one computation"),
    }
    for program, (want, why) in facts.items():
        with check:
            assert found[program] == want, f"{program}: {found[program]}, expected {want} ({why})"


@pytest.mark.task("conditionals")
def test_conditionals_in_module_order(kata):
    for program in ("switch_in_cond", "pred_if", "two_conds_and_switch", "sibling_calls"):
        got = kata.conditionals(bank.hlo(program))
        assert _is_conditional_list(got), f"expected a list of (str, int), got {got!r}"
        want = bank.xla_conditionals_in_text_order(program)
        with check:
            assert got == want, f"{program}: got {got}, in module order {want}"
    nested = kata.conditionals(bank.hlo("pred_if"))
    with check:
        assert nested == [("pred", 2), ("pred", 2)], (
            f"stablehlo.if becomes a conditional indexed by a pred: got {nested}"
        )


# a cond inside a while body, a switch inside a cond branch, the CPU's call wrappers, a pred index
METAMORPHIC_CONDITIONALS = (
    "cond",
    "switch5",
    "cond_in_scan",
    "cond_in_while",
    "switch_in_cond",
    "pred_if",
    "two_conds_and_switch",
    "shared_branches",
    "sibling_calls",
)


@pytest.mark.task("conditionals")
def test_conditionals_under_renaming_and_reordering(kata):
    """Each program's module with every computation and instruction under another name (%n17,
    %c3), and with its computations in another order XLA reads: the answer follows the text."""
    for program in METAMORPHIC_CONDITIONALS:
        for variant in bank.variants(program):
            got = kata.conditionals(variant.text)
            want = oracle.conditionals_of_text(variant.text)
            with check:
                assert got == variant.rename(want), (
                    f"{program}, {variant.kind}: got {got}, XLA's module of that text holds "
                    f"{want} in module order (computation by computation as this text lists "
                    "them); find conditionals by opcode, the index by its operand"
                )


WHILE_FACTS = {
    "fori_loop": (1, "one loop"),
    "fori_unrolled": (0, "unroll=True leaves no loop at all"),
    "fori_unroll_2": (1, "unroll=2 keeps one loop with a two-step body"),
    "nested_while": (2, "a while in the body of a while"),
    "three_deep": (3, "three whiles, each in the body of the one outside"),
    "while_in_cond": (1, "the while sits in a conditional branch"),
    "two_loops": (2, "a while and a scan one after the other"),
    "nested_while_unoptimized": (2, "no CPU call wrappers: a while in a loop body"),
    "while_in_condition": (
        3,
        "hand-written: one while in ENTRY, one in its body, one in its CONDITION (follow "
        "condition= as well as body=)",
    ),
}


@pytest.mark.task("while_loops")
def test_while_loops_match_xla(kata):
    found = {program: kata.while_loops(bank.hlo(program)) for program in WHILE_PROGRAMS}
    for program, got in found.items():
        assert type(got) is int, f"{program}: expected an int, got {got!r}"
    for program, got in found.items():
        want = xla_counts.module_opcode_count(bank.compiled(program)[1], "while")
        with check:
            assert got == want, f"{program}: {got} while loops, XLA's module holds {want}"
    for program, (want, why) in WHILE_FACTS.items():
        with check:
            assert found[program] == want, f"{program}: {found[program]}, expected {want} ({why})"


@pytest.mark.task("while_loops")
def test_while_loops_under_renaming_and_reordering(kata):
    for program in (*WHILE_PROGRAMS, "sibling_calls"):
        for variant in bank.variants(program):
            got = kata.while_loops(variant.text)
            want = xla_counts.module_opcode_count(oracles.xla_parsed(variant.text), "while")
            with check:
                assert got == want, (
                    f"{program}, {variant.kind} (every computation and instruction under "
                    f"another name, or the computations in another order): {got} while loops, "
                    f"XLA's module of that text holds {want}"
                )


@pytest.mark.task("while_loops")
def test_cpu_wraps_while_in_a_call(kata):
    counted = kata.while_loops(bank.hlo("fori_loop"))
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: the CPU backend wraps while in a call (xla_cpu_small_call)")
    entry = parse_hlo(bank.hlo("fori_loop")).entry
    opcodes = [i.opcode for i in entry]
    with check:
        assert "while" not in opcodes and "call" in opcodes, f"ENTRY opcodes {opcodes}"
    with check:
        assert counted == 1, f"{counted}: the while is one call away from ENTRY"


def _drawn_modules(fresh, count: int = 2) -> list[str]:
    """Modules drawn afresh (hlo_draws: a computation nothing calls, conditionals in a while's
    condition, a while in a pred-indexed branch, a computation called from two sites, names
    repeated across computations, a while nothing reads), each accepted by XLA's parser. One
    of them prints the computation nothing calls after ENTRY (ENTRY among the computations, not
    last), the others in a drawn order."""
    places = [True, *(fresh.random() < 0.5 for _ in range(count - 1))]
    fresh.shuffle(places)
    drawn = [draw_control_module(fresh, after) for after in places]
    for text in drawn:
        assert oracles.xla_accepts(text), f"XLA's parser refuses a drawn module; {fresh.where()}"
    return drawn


@pytest.mark.task("conditionals")
def test_conditionals_in_every_place_of_a_drawn_module(kata, fresh):
    for text in _drawn_modules(fresh):
        got = kata.conditionals(text)
        assert _is_conditional_list(got), f"expected a list of (str, int), got {got!r}"
        want = oracle.conditionals_of_text(text)
        if got != want:
            pytest.fail(
                f"a drawn module: got {len(got)} conditionals {got}, XLA's module of that text "
                "holds another list. Every computation counts (one nothing calls, a while's "
                "condition, a pred-indexed branch), in the order the text prints them, and "
                "inside each every instruction in the order printed (one nothing reads too, "
                "whatever order the instructions reading them take); an "
                "instruction name may repeat in another computation, so look the index up in "
                f"the conditional's own computation; {fresh.where()}"
            )


@pytest.mark.task("while_loops")
def test_while_loops_in_every_place_of_a_drawn_module(kata, fresh):
    for text in _drawn_modules(fresh):
        got = kata.while_loops(text)
        assert type(got) is int, f"expected an int, got {got!r}"
        want = xla_counts.module_opcode_count(oracles.xla_parsed(text), "while")
        if got != want:
            pytest.fail(
                f"a drawn module: {got} while instructions, XLA's module of that text holds "
                f"{want}. Count instructions, once each, in every computation (one nothing "
                "calls, true_computation= and false_computation= branches, one called from two "
                "sites counts once; a while whose result nothing reads is still an instruction "
                "of the text); names repeat across computations, and two computations may hold "
                f"the very same while line: two instructions; {fresh.where()}"
            )


# ---- loop_primitives: a bank of jaxprs, expected lists read off each program ------------------


@pytest.mark.task("loop_primitives")
def test_loop_primitives_bank(kata):
    found = {program: kata.loop_primitives(bank.jaxpr(program)) for program in JAXPR_PROGRAMS}
    for program, got in found.items():
        assert isinstance(got, list) and all(isinstance(n, str) for n in got), (
            f"{program}: expected a list of str, got {got!r}"
        )
    for program, got in found.items():
        want = JAXPR_PROGRAMS[program][1]
        with check:
            assert got == want, (
                f"{program}: got {got}, expected {want} (depth first: each "
                "loop, then the loops in its body, then the next equation)"
            )


@pytest.mark.task("loop_primitives")
def test_loop_counts_match_the_primitive_census(kata):
    for program in JAXPR_PROGRAMS:
        got = kata.loop_primitives(bank.jaxpr(program))
        assert isinstance(got, list), f"{program}: expected a list, got {got!r}"
        census = primitive_census(bank.jaxpr(program))
        want = {name: census[name] for name in ("scan", "while") if census[name]}
        with check:
            assert dict(Counter(got)) == want, (
                f"{program}: {dict(Counter(got))}, the jaxpr holds {want} (nested ones too)"
            )


@pytest.mark.task("loop_primitives")
def test_static_bounds_scan_dynamic_bounds_while(kata):
    static = kata.loop_primitives(bank.jaxpr("static_bounds"))
    dynamic = kata.loop_primitives(bank.jaxpr("traced_bounds"))
    with check:
        assert static == ["scan"], f"fori_loop(0, 5): {static}; a known trip count is a scan"
    with check:
        assert dynamic == ["while"], f"fori_loop(0, n) with traced n: {dynamic}"


@pytest.mark.task("loop_primitives")
def test_open_and_closed_jaxprs_alike(kata):
    for program in ("nested_then_sequential", "inside_custom_jvp", "while_in_cond"):
        closed = bank.jaxpr(program)
        from_closed = kata.loop_primitives(closed)
        from_open = kata.loop_primitives(closed.jaxpr)
        with check:
            assert from_open == from_closed == JAXPR_PROGRAMS[program][1], (
                f"{program}: closed jaxpr {from_closed}, its .jaxpr {from_open}"
            )


@pytest.mark.task("loop_primitives")
def test_loop_primitives_of_drawn_chains(kata, fresh):
    """Pieces (jaxpr_draws: custom_vjp, custom_linear_solve's namedtuple of jaxprs, one jitted
    function called twice, a switch and a cond whose branches hold different loops (the switch
    listing one function twice: one jaxpr object, two branches), a cumsum-like
    primitive that is no loop, ...) run one after the other in a drawn order, closed and open,
    and with every tuple of jaxprs in the params rebuilt as a list (the contract names both)."""
    pieces = draw_pieces(fresh)
    names = [name for name, _ in pieces]
    run, want = chain(pieces)
    closed = jax.make_jaxpr(run)(1.0, 4)
    census = primitive_census(closed)
    assert dict(Counter(want)) == {n: census[n] for n in ("scan", "while") if census[n]}
    forms = (("closed", closed), ("open", closed.jaxpr), ("listed", listed(closed)))
    for form, jaxpr in forms:
        got = kata.loop_primitives(jaxpr)
        assert isinstance(got, list), f"expected a list, got {got!r}"
        if got != want:
            pytest.fail(
                f"{form} jaxpr of {' then '.join(names)}: got {got}, expected {want} (every "
                "equation's params, each jaxpr as often as an equation holds it, the same "
                "object in two branches of one equation twice, alone or in a "
                f"tuple or list: 'listed' holds its tuples of jaxprs as lists); {fresh.where()}"
            )
