"""Phase 4 tests, tasks 2-8 (the demonstrations): each optimization is checked on real compiler
output, before and after.

"Before" is StableHLO (what JAX hands to XLA), "after" the optimized HLO. Counts are by opcode
over every computation (fusion moves ops into fused computations; it does not delete them).
Each demonstration runs at several shapes and dtypes (a float32 vector, a matrix, bfloat16):
values are checked against NumPy, the IR at each input.
"""

from collections import Counter

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import versions
from kata_harness.oracles import rewrites as oracle
from katas.phase4.programs import BF16, ELEMENTWISE_INPUTS, cse_args, qk, uniform
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo
from xla_inspect.query import dots, opcode_counts
from xla_inspect.stablehlo import stablehlo_op_census

ARITHMETIC = ("add", "subtract", "multiply", "divide")
# StableHLO ops that are plumbing or constants, not work on data.
SHLO_PLUMBING = {
    "func.func",
    "func.return",
    "func.call",
    "stablehlo.constant",
    "stablehlo.broadcast_in_dim",
    "stablehlo.convert",
}


def _compile(f, *args):
    """(StableHLO census, optimized HLO text, outputs as NumPy) of one kata program, never cached.

    The outputs come from the compiled executable: no eager op-by-op compiles."""
    lowered = jax.jit(f).lower(*args)
    compiled = lowered.compile()
    out = jax.tree.map(np.asarray, compiled(*args))
    return stablehlo_op_census(lowered.as_text()), oracle.optimized_text(compiled), out


def _tolerance(x):
    return 1e-2 if x.dtype == BF16 else 1e-6


def _same_kind(what, out, x):
    """The output is one array of x's shape and dtype (asserted, so a wrong kind fails here)."""
    assert isinstance(out, np.ndarray), f"{what}: expected one array, got {type(out).__name__}"
    assert out.shape == x.shape and out.dtype == x.dtype, (
        f"{what}: got {out.dtype}{list(out.shape)}, expected {x.dtype}{list(x.shape)}"
    )


def _require_cpu(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact}")


# --- tasks 2-8: demonstrations -------------------------------------------------------------


@pytest.mark.task("algebraic_identity")
def test_algebraic_identity_disappears(kata):
    special = np.array(
        [
            [0.5, -0.0, np.inf, -np.inf, np.nan],
            [3e38, -3e38, 1e-30, -7.25, 1.0],
            [2.0, 0.1, -0.1, 65504.0, 1e-45],
        ],
        dtype=np.float32,
    )
    for what, x in {
        "f32[3,5] with inf, nan, -0, 3e38": special,
        "bf16[6]": uniform(6, 4, BF16),
    }.items():
        shlo, optimized, out = _compile(kata.algebraic_identity, x)
        _same_kind(what, out, x)
        hlo = oracle.counts(optimized)
        before = sum(shlo[f"stablehlo.{op}"] for op in ARITHMETIC)
        after = {op: hlo[op] for op in ARITHMETIC if hlo[op]}
        with check:
            np.testing.assert_array_equal(out, x, err_msg=f"{what}: not x itself")
        with check:
            assert before >= 2, f"{what}: StableHLO has {before} arithmetic ops, want at least 2"
        with check:
            assert not after, f"{what}: optimized HLO still computes {after}: not an identity"


@pytest.mark.task("folded_scale")
def test_folded_scale_becomes_a_multiply(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        shlo, optimized, out = _compile(kata.folded_scale, x)
        _same_kind(what, out, x)
        hlo = oracle.counts(optimized)
        want = (x.astype(np.float64) / np.sqrt(2.0)).astype(np.float32)
        with check:
            np.testing.assert_allclose(
                out.astype(np.float32), want, rtol=_tolerance(x), err_msg=what
            )
        with check:
            assert shlo["stablehlo.sqrt"] >= 1, f"{what}: no stablehlo.sqrt: Python folded it"
        with check:
            assert shlo["stablehlo.divide"] >= 1 and shlo["stablehlo.multiply"] == 0, (
                f"{what} before: divide x{shlo['stablehlo.divide']}, multiply "
                f"x{shlo['stablehlo.multiply']}; want a divide and no multiply"
            )
        with check:
            assert hlo["sqrt"] == 0 and hlo["divide"] == 0, (
                f"{what} optimized: sqrt x{hlo['sqrt']}, divide x{hlo['divide']}; want none"
            )
        with check:
            assert hlo["multiply"] == 1, f"{what} optimized: multiply x{hlo['multiply']}, want 1"


@pytest.mark.task("shared_subexpression")
def test_cse_removes_the_repeated_add(kata):
    for shape in (8, (3, 4)):
        a, b, c, d = cse_args(shape)
        jaxpr_adds = primitive_census(jax.make_jaxpr(kata.shared_subexpression)(a, b, c, d))["add"]
        _, optimized, out = _compile(kata.shared_subexpression, a, b, c, d)
        _same_kind(f"shape {shape}", out, a)
        hlo_adds = oracle.counts(optimized)["add"]
        with check:
            np.testing.assert_allclose(out, (a + b) * c + (a + b) * d, rtol=1e-6)
        with check:
            assert jaxpr_adds == 3, f"{shape}: jaxpr add x{jaxpr_adds}, want 3 (a+b written twice)"
        with check:
            assert hlo_adds == 2, f"{shape}: optimized add x{hlo_adds}, want 2"


@pytest.mark.task("dead_branch")
def test_dead_exp_survives_lowering_then_dies(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        jaxpr = primitive_census(jax.make_jaxpr(kata.dead_branch)(x))
        shlo, optimized, out = _compile(kata.dead_branch, x)
        _same_kind(what, out, x)
        hlo = oracle.counts(optimized)
        with check:
            np.testing.assert_allclose(
                out.astype(np.float32), x.astype(np.float32) + 1, rtol=_tolerance(x), err_msg=what
            )
        with check:
            assert shlo["stablehlo.exponential"] >= 1, (
                f"{what}: no stablehlo.exponential: JAX dropped the exp before XLA saw it"
            )
        with check:
            assert jaxpr["select_n"] + jaxpr["cond"] >= 1, (
                f"{what}: no select or cond in the jaxpr: the exp must be one side of a choice"
            )
        with check:
            assert hlo["exponential"] == 0, f"{what}: optimized exponential x{hlo['exponential']}"


@pytest.mark.task("elementwise_chain")
def test_chain_is_one_loop_fusion(kata):
    from xla_inspect import hlo_facts  # the API users assert with in their own CI

    _require_cpu("fusion decisions and kinds are the CPU backend's")
    for what, x in ELEMENTWISE_INPUTS.items():
        shlo, optimized, out = _compile(kata.elementwise_chain, x)
        _same_kind(what, out, x)
        work = sum(n for op, n in shlo.items() if op not in SHLO_PLUMBING)
        facts = hlo_facts(optimized)
        entry_ops = opcode_counts(facts.module, entry_only=True)
        del entry_ops["parameter"]
        found = facts.fusions()
        fused = sum((f.opcodes for f in found), Counter())
        for plumbing in ("parameter", "constant", "broadcast", "convert"):
            del fused[plumbing]
        with check:
            assert work >= 4, f"{what}: StableHLO has {work} ops doing work, want at least 4"
        with check:
            assert entry_ops == Counter(fusion=1), (
                f"{what}: ENTRY computes {dict(entry_ops)}, want one fusion"
            )
        with check:
            assert found == 1 and facts.fusions(kind="kLoop") == 1, (
                f"{what}: fusions {[f.kind for f in found]}, want one kind=kLoop fusion"
            )
        with check:
            assert sum(fused.values()) >= 4, f"{what}: the fusion holds {dict(fused)}, want 4+"


@pytest.mark.task("attention_scores")
def test_transpose_folds_into_the_dot(kata):
    for q_shape, k_shape in (((8, 16), (8, 16)), ((5, 3), (7, 3)), ((2, 6), (9, 6))):
        what = f"q{list(q_shape)} k{list(k_shape)}"
        q, k = qk(q_shape, k_shape)
        jaxpr_transposes = primitive_census(jax.make_jaxpr(kata.attention_scores)(q, k))[
            "transpose"
        ]
        _, optimized, out = _compile(kata.attention_scores, q, k)
        assert isinstance(out, np.ndarray) and out.shape == (q.shape[0], k.shape[0]), (
            f"{what}: got shape {getattr(out, 'shape', out)}, expected {(q.shape[0], k.shape[0])}"
        )
        module = parse_hlo(optimized)
        transposes = opcode_counts(module)["transpose"]
        contracting = [d.rhs_contracting_dims for d in dots(module)]
        with check:
            np.testing.assert_allclose(out, q @ k.T, rtol=1e-5, atol=1e-5, err_msg=what)
        with check:
            assert jaxpr_transposes >= 1, f"{what}: jaxpr has no transpose: nothing to fold"
        with check:
            assert transposes == 0, f"{what}: optimized transpose x{transposes}, want 0"
        if jax.default_backend() == "cpu":  # GPU and TPU lower dots to library calls
            with check:
                assert contracting == [(1,)], (
                    f"{what}: rhs_contracting_dims {contracting}: want one dot contracting "
                    "k's dim 1 in place"
                )


@pytest.mark.task("refused_rewrites")
def test_xla_keeps_float_rewrites_it_may_not_do(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        _, optimized, out = _compile(kata.refused_rewrites, x)
        assert isinstance(out, tuple) and len(out) == 2, f"{what}: expected two results"
        scaled, zero = out
        _same_kind(f"{what} x*6", scaled, x)
        _same_kind(f"{what} x-x", zero, x)
        hlo = oracle.counts(optimized)
        with check:
            np.testing.assert_allclose(
                scaled.astype(np.float32),
                x.astype(np.float32) * 6,
                rtol=_tolerance(x),
                err_msg=what,
            )
        with check:
            np.testing.assert_array_equal(zero, np.zeros_like(x), err_msg=what)
        # before jax 0.12 only bf16 keeps both (a gate, listed in the run's header)
        gate = "f32-constant-multiplies-kept" if x.dtype == np.float32 else None
        if gate is None or versions.checked(gate):
            with check, versions.fact(gate):
                assert hlo["multiply"] == 2, (
                    f"{what}: optimized multiply x{hlo['multiply']}, want 2 (no reassociation)"
                )
        with check:
            assert hlo["subtract"] == 1, f"{what}: optimized subtract x{hlo['subtract']}, want 1"
