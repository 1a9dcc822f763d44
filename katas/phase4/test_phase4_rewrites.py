"""Phase 4 tests, tasks 2-8 (the demonstrations): each optimization is checked on real compiler
output, before and after.

"Before" is StableHLO (what JAX hands to XLA), "after" the optimized HLO. Counts are by opcode
over every computation (fusion moves ops into fused computations; it does not delete them).
Each demonstration runs at several shapes and dtypes (float32, bfloat16 and float16; a scalar,
a vector, matrices with a dimension of 1): values are checked against NumPy, the IR at each input.
A demonstration that raises on one of them fails here, naming the input.
"""

from collections import Counter

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import versions
from kata_harness.oracles import rewrites as oracle
from katas.phase4.programs import (
    BF16,
    CSE_INPUTS,
    CSE_PLANTED,
    CSE_ZERO_ROOM,
    ELEMENTWISE_INPUTS,
    IDENTITY_INPUTS,
    SCORE_CASES,
    qk,
)
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


def _compile(what, f, *args):
    """(StableHLO census, optimized HLO text, outputs as NumPy) of one kata program, never cached.

    The outputs come from the compiled executable: no eager op-by-op compiles. A program that
    raises on a valid input is a wrong answer (the stub's NotImplementedError passes through)."""
    try:
        lowered = jax.jit(f).lower(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (any exception: every input here is valid)
        crash = f"{type(error).__name__}: {str(error)[:160]}"
    else:
        compiled = lowered.compile()
        out = jax.tree.map(np.asarray, compiled(*args))
        return stablehlo_op_census(lowered.as_text()), oracle.optimized_text(compiled), out
    pytest.fail(f"{what}: tracing raised {crash} on a valid input", pytrace=False)


def _tolerance(x):
    return {BF16: 1e-2, np.float16: 2e-3}.get(x.dtype.type, 1e-6)


def _same_kind(what, out, x):
    """The output is one array of x's shape and dtype (asserted, so a wrong kind fails here)."""
    assert isinstance(out, np.ndarray), f"{what}: expected one array, got {type(out).__name__}"
    assert out.shape == x.shape and out.dtype == x.dtype, (
        f"{what}: got {out.dtype}{list(out.shape)}, expected {x.dtype}{list(x.shape)}"
    )


def _is_x(what, out, x, subnormals=True):
    """`out` is x itself: x's shape and dtype, nan where x is nan, elsewhere the same value with
    the same sign (a zero's sign included). Without `subnormals`, x's subnormal elements are
    left out (XLA's CPU code flushes them to zero in any op it runs)."""
    _same_kind(what, out, x)
    wide, got = x.astype(np.float32), out.astype(np.float32)
    nan = np.isnan(wide)
    skip = nan.copy()
    if not subnormals:
        skip |= (wide != 0) & (np.abs(wide) < float(jnp.finfo(x.dtype).tiny))
    assert np.array_equal(np.isnan(got) & ~skip | nan, nan), f"{what}: a nan where x has none"
    assert np.isnan(got[nan]).all(), f"{what}: a nan of x is gone"
    same = (got[~skip] == wide[~skip]) & (np.signbit(got[~skip]) == np.signbit(wide[~skip]))
    assert same.all(), (
        f"{what}: not x itself at {int((~same).sum())} element(s) (the sign of a zero counts)"
    )


def _require_cpu(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact}")


# --- tasks 2-8: demonstrations -------------------------------------------------------------


def _traced_op_by_op(f, *args) -> list[np.ndarray]:
    """The outputs of the program jit traces from f at args, run op by op (jit disabled, nested
    jits too: each op compiles on its own, nothing simplified): what f computes eagerly when it
    runs the same ops whether or not its input is a tracer."""
    closed = jax.make_jaxpr(f)(*args)
    with jax.disable_jit():
        out = jax.extend.core.jaxpr_as_fun(closed)(*map(jnp.asarray, args))
    return [np.asarray(value) for value in out]


@pytest.mark.task("algebraic_identity")
def test_algebraic_identity_disappears(kata):
    """Compiled at every input; called eagerly (op by op, as written: jit disabled, nothing
    simplified) at the first, a float32 matrix with a -0.0 (each op compiles on its own then);
    and at every input, the program jit traces, run op by op: the arithmetic XLA removes must
    be an identity eagerly too, not only where the function sees a tracer."""
    for index, (what, x) in enumerate(IDENTITY_INPUTS.items()):
        shlo, optimized, out = _compile(what, kata.algebraic_identity, x)
        if index == 0:
            with jax.disable_jit():
                eager = np.asarray(kata.algebraic_identity(jnp.asarray(x)))
            with check:
                _is_x(f"{what}, called eagerly", eager, x, subnormals=False)
        with check:
            traced = _traced_op_by_op(kata.algebraic_identity, x)
            assert len(traced) == 1, f"{what}: the traced program returns {len(traced)} arrays"
            _is_x(f"{what}, its traced program run op by op", traced[0], x, subnormals=False)
        hlo = oracle.counts(optimized)
        before = sum(shlo[f"stablehlo.{op}"] for op in ARITHMETIC)
        after = {op: hlo[op] for op in ARITHMETIC if hlo[op]}
        with check:
            _is_x(f"{what}, compiled", out, x)
        with check:
            assert before >= 2, f"{what}: StableHLO has {before} arithmetic ops, want at least 2"
        with check:
            assert not after, f"{what}: optimized HLO still computes {after}: not an identity"


@pytest.mark.task("folded_scale")
def test_folded_scale_becomes_a_multiply(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        shlo, optimized, out = _compile(what, kata.folded_scale, x)
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


def _check_product(what, got, args) -> None:
    """`got` is (a + b) * (c + d) rounded to a's dtype: inf and the sign of a zero included."""
    a, b, c, d = args
    wide = [v.astype(np.float64) for v in args]
    with np.errstate(over="ignore"):  # a + b beyond the dtype's range is inf there
        want = ((wide[0] + wide[1]) * (wide[2] + wide[3])).astype(a.dtype).astype(np.float64)
    got = got.astype(np.float64)
    tolerance = 4 * _tolerance(a)
    with check:
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=what)
    flipped = np.flatnonzero((want == 0) & (np.signbit(got) != np.signbit(want)))
    with check:
        assert not flipped.size, (
            f"{what}: at a, b, c, d = {[float(v.flat[flipped[0]]) for v in (a, b, c, d)]} "
            f"got {got.flat[flipped[0]]!r}, expected (a + b) * (c + d) = "
            f"{want.flat[flipped[0]]!r} (the sign of a zero counts)"
        )


def _signed_zeros(args, fresh):
    """a, b, c, d (copies) with, at drawn places after the planted elements, zeros of either
    sign in every role: c = d = -0.0 (c + d is -0.0) and a = b = -0.0, each beside a nonzero
    sum of a drawn sign; all four -0.0; c, d zeros of opposite signs (c + d is +0.0); a, b
    zeros of opposite signs (a + b is +0.0). An input without room for them is left as is."""
    a = args[0]
    if a.size < CSE_PLANTED + CSE_ZERO_ROOM:
        return args
    out = [v.copy() for v in args]

    def nonzero():
        sign = fresh.choice((1.0, -1.0))
        return sign * fresh.uniform(0.25, 1.0), sign * fresh.uniform(0.25, 1.0)

    zeros = fresh.sample(((-0.0, 0.0), (0.0, -0.0)), 2)
    cases = (
        (*nonzero(), -0.0, -0.0),
        (-0.0, -0.0, *nonzero()),
        (-0.0, -0.0, -0.0, -0.0),
        (*nonzero(), *zeros[0]),
        (*zeros[1], *nonzero()),
    )
    places = fresh.sample(range(CSE_PLANTED, a.size), len(cases))
    for place, values in zip(places, cases, strict=True):
        for array, value in zip(out, values, strict=True):
            array.flat[place] = value
    return tuple(out)


@pytest.mark.task("shared_subexpression")
def test_cse_removes_the_repeated_add(kata, fresh):
    """Signed inputs with a + b == 0, negative sums, a sum whose square overflows, a sum that
    overflows to inf itself, a zero product of negative sign, a + b == -0.0 and (drawn places)
    zeros of either sign as a, b, c or d: the product rounded to the dtype, inf and the sign of
    a zero included; compiled and, at every input, the program jit traces run op by op (nothing
    simplified): the value may not hang on a rewrite XLA makes that IEEE arithmetic does not
    (x + 0.0 is +0.0 where x is -0.0, so 0.0 + c is not c)."""
    for what, args in CSE_INPUTS.items():
        args = _signed_zeros(args, fresh)
        a, b, c, d = args
        jaxpr_adds = primitive_census(jax.make_jaxpr(kata.shared_subexpression)(a, b, c, d))["add"]
        _, optimized, out = _compile(what, kata.shared_subexpression, a, b, c, d)
        _same_kind(what, out, a)
        hlo_adds = oracle.counts(optimized)["add"]
        _check_product(f"{what}, compiled ({fresh.where()})", out, args)
        traced = _traced_op_by_op(kata.shared_subexpression, *args)
        assert len(traced) == 1, f"{what}: the traced program returns {len(traced)} arrays"
        _same_kind(f"{what}, its traced program run op by op", traced[0], a)
        _check_product(
            f"{what}, its traced program run op by op ({fresh.where()})", traced[0], args
        )
        with check:
            assert jaxpr_adds == 3, f"{what}: jaxpr add x{jaxpr_adds}, want 3 (a+b written twice)"
        with check:
            assert hlo_adds == 2, f"{what}: optimized add x{hlo_adds}, want 2"


@pytest.mark.task("dead_branch")
def test_dead_exp_survives_lowering_then_dies(kata):
    for what, x in ELEMENTWISE_INPUTS.items():
        jaxpr = primitive_census(jax.make_jaxpr(kata.dead_branch)(x))
        shlo, optimized, out = _compile(what, kata.dead_branch, x)
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
        shlo, optimized, out = _compile(what, kata.elementwise_chain, x)
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
    for q_shape, k_shape, dtype in SCORE_CASES:
        q, k = qk(q_shape, k_shape, dtype=dtype)
        what = f"q {q.dtype}{list(q_shape)}, k {k.dtype}{list(k_shape)}"
        transposed = oracle.transposed_inputs(jax.make_jaxpr(kata.attention_scores)(q, k))
        _, optimized, out = _compile(what, kata.attention_scores, q, k)
        want = (q.shape[0], k.shape[0])
        assert isinstance(out, np.ndarray) and out.shape == want and out.dtype == q.dtype, (
            f"{what}: got {getattr(out, 'dtype', type(out).__name__)}"
            f"{list(getattr(out, 'shape', ()))}, expected {q.dtype}{list(want)}"
        )
        tolerance = 4 * _tolerance(q) if dtype != np.float32 else 1e-5
        with check:
            np.testing.assert_allclose(
                out.astype(np.float32),
                q.astype(np.float32) @ k.astype(np.float32).T,
                rtol=tolerance,
                atol=tolerance * 4,
                err_msg=what,
            )
        with check:
            assert 1 in transposed, (
                f"{what}: the jaxpr never transposes k itself (transposed inputs: "
                f"{sorted(transposed)}; 0 is q, 1 is k)"
            )
        if min(*q_shape, k_shape[0]) < 2:
            continue  # a matrix-vector product: XLA lays it out otherwise (programs.SCORE_CASES)
        module = parse_hlo(optimized)
        transposes = opcode_counts(module)["transpose"]
        contracting = [d.rhs_contracting_dims for d in dots(module)]
        with check:
            assert transposes == 0, f"{what}: optimized transpose x{transposes}, want 0"
        if jax.default_backend() == "cpu":  # GPU and TPU lower dots to library calls
            with check:
                assert contracting == [(1,)], (
                    f"{what}: rhs_contracting_dims {contracting}: want one dot contracting "
                    "k's dim 1 in place"
                )


def _near_the_edges(x: np.ndarray, fresh) -> np.ndarray:
    """x with its last two elements (of two or more) set where six times x is finite but a larger
    factor would overflow: 0.985 of a sixth of the dtype's largest value, and a value drawn
    between a twelfth and that; and (of four or more) an element at a drawn place among the
    others set between the dtype's smallest normal value and 1.9 times that, where a factor
    below 1 would leave the normal range (XLA's CPU code flushes subnormal results to zero);
    each of a drawn sign."""
    if x.size < 2:
        return x
    finfo = jnp.finfo(x.dtype)
    sixth, tiny = float(finfo.max) / 6, float(finfo.tiny)
    x = x.copy()
    planted = [(-2, 0.985 * sixth), (-1, fresh.uniform(sixth / 2, 0.985 * sixth))]
    if x.size >= 4:
        planted.append((fresh.randrange(x.size - 2), fresh.uniform(tiny, 1.9 * tiny)))
    for index, value in planted:
        x.flat[index] = fresh.choice((1.0, -1.0)) * value
    return x


@pytest.mark.task("refused_rewrites")
def test_xla_keeps_float_rewrites_it_may_not_do(kata, fresh):
    """At each input, two elements near a sixth of the dtype's largest value (six times them is
    finite, drawn afresh) besides the ones whose six times is inf, and one just above the
    smallest normal value (six times it is exact too; compared without an absolute tolerance)."""
    for what, x in ELEMENTWISE_INPUTS.items():
        x = _near_the_edges(x, fresh)
        _, optimized, out = _compile(what, kata.refused_rewrites, x)
        assert isinstance(out, tuple) and len(out) == 2, f"{what}: expected two results"
        scaled, zero = out
        _same_kind(f"{what} x*6", scaled, x)
        _same_kind(f"{what} x-x", zero, x)
        hlo = oracle.counts(optimized)
        with np.errstate(over="ignore"):  # six times the largest values is inf in x's dtype
            want = (x.astype(np.float64) * 6).astype(x.dtype).astype(np.float32)
        wide = x.astype(np.float32)
        subnormal = (wide != 0) & (np.abs(wide) < float(jnp.finfo(x.dtype).tiny))
        close = np.isclose(scaled.astype(np.float32), want, rtol=_tolerance(x), atol=0.0)
        wrong = np.flatnonzero(~close & ~subnormal)
        with check:
            assert not wrong.size, (
                f"{what}: at x = {float(x.flat[wrong[0]])!r} the first result is "
                f"{float(scaled.flat[wrong[0]])!r}, six times x is {float(want.flat[wrong[0]])!r} "
                f"in {x.dtype} ({fresh.where()})"
            )
        with check:
            np.testing.assert_array_equal(zero, np.zeros_like(x), err_msg=what)
        # before jax 0.12 only bf16 keeps both (a gate, listed in the run's header)
        gate = "f32-constant-multiplies-kept" if x.dtype != BF16 else None
        if gate is None or versions.checked(gate):
            with check, versions.fact(gate):
                assert hlo["multiply"] == 2, (
                    f"{what}: optimized multiply x{hlo['multiply']}, want 2 (no reassociation)"
                )
        with check:
            assert hlo["subtract"] == 1, f"{what}: optimized subtract x{hlo['subtract']}, want 1"
