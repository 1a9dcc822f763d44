"""Phase 10 tests, tasks 3, 4, 6 and 7 on programs drawn fresh every run (katas/phase10/drawn.py):
fusions whose result is a tuple, donated arguments that are not adjacent or a single array
returned alone (next to an unread argument and a donation no output can reuse), transposes in a
lax.while_loop's body or condition and in custom_jvp/custom_vjp functions, at any depth, and
dots of every element type (integer ones too) in conditional branches.

Oracles (kata_harness.oracles.training): XLA's own parser's count of fusion instructions, the
parsed optimized HLO (tuple-shaped fusions, opcodes, every dot's dimension numbers and which of
them sit in a branch), JAX's flattening of the donated arguments and ``memory_analysis()``; the
jaxpr's transposes are known by construction.
"""

import warnings

import jax
import pytest
from pytest_check import check

from kata_harness.oracles import training as oracle
from katas.phase10 import drawn
from xla_inspect.parse import parse_hlo


def _compile(program, args, donate=(), unusable=False):
    """Compile; some donated buffer is not usable exactly when `unusable` says so."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(program, donate_argnums=donate).lower(*args).compile()
    warned = any("donated buffers were not usable" in str(w.message) for w in caught)
    assert warned == unusable, (
        "a donated buffer of the tests' own program no output can reuse"
        if unusable
        else "every donated buffer of the tests' own programs must be usable"
    )
    return compiled


@pytest.mark.task("fusion_count")
def test_fusions_with_several_outputs(kata, fresh):
    for dtype in sorted(drawn.DTYPES):
        label, program, args = drawn.multi_output_fusions(fresh, dtype)
        compiled = _compile(program, args)
        assert oracle.tuple_fusions(compiled) > 0, f"{label}: XLA fused no tuple-shaped kernel"
        got, want = kata.fusion_count(compiled), oracle.xla_fusion_count(compiled)
        with check:
            assert got == want, (
                f"{label} ({fresh.where()}): got {got}, XLA's parser finds {want} fusion "
                "instructions (a fusion with several outputs has a tuple shape, and is one fusion)"
            )


@pytest.mark.task("fusion_count")
def test_fusions_without_operands(kata, fresh):
    for dtype in sorted(drawn.DTYPES):
        label, program, args = drawn.operandless_fusions(fresh, dtype)
        compiled = _compile(program, args)
        assert any(
            i.opcode == "fusion" and not i.operands
            for c in parse_hlo(oracle.optimized_text(compiled))
            for i in c
        ), f"{label}: XLA fused no kernel without operands"
        got, want = kata.fusion_count(compiled), oracle.xla_fusion_count(compiled)
        with check:
            assert got == want, (
                f"{label} ({fresh.where()}): got {got}, XLA's parser finds {want} fusion "
                "instructions (a fusion that reads no operand, `fusion()`, is one too)"
            )


@pytest.mark.task("aliased_parameters")
def test_drawn_donations(kata, fresh):
    for label, program, args, donate, aliased, unused in (
        drawn.single_array_donation(fresh),
        drawn.scattered_donation(fresh),
        drawn.unusable_donation(fresh),
    ):
        compiled = _compile(program, args, donate, unusable=set(donate) != set(aliased))
        want = oracle.leaf_numbers(args, aliased, unused)
        assert oracle.parameter_bytes(compiled, tuple(want)) == oracle.aliased_bytes(compiled), (
            f"{label}: memory_analysis does not alias exactly the donated leaves"
        )
        got = kata.aliased_parameters(compiled)
        with check:
            assert got == want, (
                f"{label} ({fresh.where()}): got {got}, expected the HLO parameter numbers of "
                f"the {len(want)} donated leaves an output reuses, sorted as numbers (the "
                "header's alias list, whatever the output index says: `{}` is the whole "
                "output; jit numbers only the leaves it kept, and a donated buffer no output "
                "can take is not aliased)"
            )


@pytest.mark.task("transpose_counts")
def test_transposes_in_while_loops(kata, fresh):
    # Two programs whose places between them hold every place drawn.PLACES names, so each run
    # has a transpose in a while condition (the jaxpr's and, surviving, the optimized HLO's).
    for places in drawn.transpose_places(fresh):
        label, program, args, transposes = drawn.while_transposes(fresh, places)
        compiled = jax.jit(program).lower(*args).compile()
        if "while condition" in places:
            assert oracle.transposes_under(compiled, "condition") > 0, (
                f"{label}: XLA kept no transpose in a while loop's condition computation"
            )
        want = (transposes, oracle.opcodes(compiled)["transpose"])
        got = kata.transpose_counts(program, *args)
        assert isinstance(got, tuple) and len(got) == 2, f"got {got!r}, expected a pair"
        assert tuple(got) == want, (
            f"{label} ({fresh.where()}): got {tuple(got)}: a while_loop's body and condition "
            "and a custom_jvp or custom_vjp function's jaxpr are jaxprs too, at any depth, and "
            "a jitted function called twice holds its transposes twice (the "
            "pair counts the transpose equations of every inner jaxpr, once per equation that "
            "holds it, then the transpose "
            "opcodes of every computation of the optimized HLO: a while loop's condition and "
            "what it calls too)"
        )


@pytest.mark.task("absorbed_transposes")
def test_absorbed_transposes_any_dtype_any_branch(kata, fresh):
    for dtype in ("int32", fresh.choice(["float32", "bfloat16"])):
        label, program, args = drawn.branch_dots(fresh, dtype)
        compiled = _compile(program, args)
        plain = ("{1}", "{0}")
        assert any(d != plain for d in oracle.branch_dot_dims(compiled)), (
            f"{label}: XLA left no transposed dot in a branch"
        )
        got = kata.absorbed_transposes(compiled)
        want = sum(d != plain for d in oracle.dot_dims(compiled))
        with check:
            assert got == want, (
                f"{label} ({fresh.where()}): got {got}, the module has {want} dots contracting "
                "other dimensions than a plain a @ b (any element type, conditional branches "
                "included)"
            )
